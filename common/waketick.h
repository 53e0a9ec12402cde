/*
 * waketick: a loop that never sleeps long, so its timers fire on time.
 *
 * Linux ends an epoll_wait of T ms up to T/1000 late (T/200 in a niced
 * process), at most 100 ms: the kernel's slack for poll-style timeouts
 * (select_estimate_accuracy). libuv sleeps until its next timer, so an
 * idle process's timer 15 s away fires about 15 ms late: a kill action
 * at 15 s landed at 15.017–15.022 s, and a mock provider's 10 s down
 * window reopened 10.7–13.5 ms late. A repeating WAKETICK_MS timer bounds
 * every sleep, and so that slack, to WAKETICK_MS / 1000 (20 µs; 100 µs
 * niced) or the thread's timer slack (50 µs by default), whichever is
 * larger. It is unreferenced: it never keeps a loop running.
 */
#ifndef FAULTLINE_WAKETICK_H
#define FAULTLINE_WAKETICK_H

#include <uv.h>

#define WAKETICK_MS 20

/* Initialises and starts t on loop; close it with uv_close like any timer. Returns 0 or a libuv error. */
int waketick_start(uv_loop_t *loop, uv_timer_t *t);

#endif
