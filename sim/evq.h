/*
 * evq: the simulator's clock and its pending events — a binary min-heap
 * of timers ordered by (time, arming order), so that two events due at the
 * same virtual millisecond always run in the order they were armed and a
 * run is the same every time. A timer is embedded in its owner (as a
 * uv_timer_t is), armed at most once at a time, and can be stopped before
 * it fires. Nothing here reads a clock: time moves only when evq_run takes
 * the next event.
 */
#ifndef FAULTLINE_SIM_EVQ_H
#define FAULTLINE_SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evq;
struct sim_timer;

typedef void (*sim_timer_fn)(struct sim_timer *t);

/* One pending event; embed it, set fn, and arm it with evq_at / evq_after. */
struct sim_timer {
	sim_timer_fn fn;
	double at;			/* virtual ms */
	uint64_t seq;			/* arming order: ties run first-armed first */
	size_t slot;			/* index in the heap + 1; 0: not armed */
};

struct evq {
	double now;			/* virtual ms since t0 */
	uint64_t seq;
	uint64_t fired;			/* events run, for the speed figure */
	struct sim_timer **heap;
	size_t n;
	size_t cap;
};

/* An empty queue at time 0. */
void evq_init(struct evq *q);

/* Frees the heap (the timers are their owners'). */
void evq_free(struct evq *q);

/*
 * Arms t (stopping it first if armed) to fire at `at` (not before now: an
 * earlier time fires at now). Returns 0 or -ENOMEM.
 */
int evq_at(struct evq *q, struct sim_timer *t, double at);

/* Arms t to fire delay ms from now (negative: now). Returns 0 or -ENOMEM. */
int evq_after(struct evq *q, struct sim_timer *t, double delay);

/* Disarms t; nothing when it is not armed. */
void evq_stop(struct evq *q, struct sim_timer *t);

/* Whether t is armed. */
bool evq_armed(const struct sim_timer *t);

/* The time of the next event, or INFINITY when none is pending. */
double evq_next_at(const struct evq *q);

/*
 * Runs events in order until none is left or the next is past until (ms);
 * time stops at the last event run. Returns the number run.
 */
uint64_t evq_run(struct evq *q, double until);

#endif
