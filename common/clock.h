/*
 * clock: the monotonic clock every measurement uses, and the shared t0 time
 * base (DESIGN.md): t0 is a Unix epoch time in milliseconds that the runner
 * passes to every program with --t0, and every time in an output is in
 * milliseconds relative to it.
 */
#ifndef FAULTLINE_CLOCK_H
#define FAULTLINE_CLOCK_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t clock_mono_ns(void);

/* Milliseconds since the Unix epoch, from CLOCK_REALTIME. */
int64_t clock_unix_ms(void);

/* Nanoseconds since the Unix epoch, from CLOCK_REALTIME. */
int64_t clock_unix_ns(void);

/*
 * A t0 time base: maps monotonic readings to milliseconds since t0. The
 * mapping between the two clocks is sampled once, so a wall-clock step during
 * a run does not bend the measurements.
 */
struct timebase {
	int64_t t0_unix_ms;
	int64_t unix_minus_mono_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
};

/* Sets up the time base for t0 (Unix epoch ms). */
void timebase_init(struct timebase *tb, int64_t t0_unix_ms);

/* Milliseconds since t0 at the monotonic time mono_ns (negative before t0). */
double timebase_rel_ms(const struct timebase *tb, uint64_t mono_ns);

/* Milliseconds since t0 now. */
double timebase_now_ms(const struct timebase *tb);

/*
 * The monotonic time (ns) at which it will be rel_ms after t0. Returns 0 for
 * a time before the monotonic epoch.
 */
uint64_t timebase_mono_at(const struct timebase *tb, double rel_ms);

/*
 * The t0 (Unix epoch ms) that puts a process starting now on tb's time
 * base: tb's t0 moved by however far the wall clock has stepped since tb
 * was set up (a time sync mid-run). A child that maps its monotonic clock
 * through the wall clock at its start, given this t0, counts the same
 * milliseconds since t0 as the ones started before the step. *step_ms (may
 * be NULL) gets the step.
 */
int64_t timebase_child_t0(const struct timebase *tb, int64_t *step_ms);

#endif
