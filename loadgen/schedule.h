/*
 * schedule: when each request of an open-loop run is meant to be sent, and
 * which request stream it belongs to. Pure policy: arrivals come from the
 * rates, the arrival kind and a seeded random state, never from a clock, so
 * the same seed gives the same schedule and tests need no waiting.
 *
 * Two shapes: one source per request stream, each with its own rate (a mix
 * whose streams give rates), or one source at the run's rate whose requests
 * are shared out among the streams by weight (a mix whose streams give
 * shares, or no mix at all).
 */
#ifndef FAULTLINE_SCHEDULE_H
#define FAULTLINE_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

enum arrival {
	ARRIVAL_CONSTANT,	/* evenly spaced: the k-th at k / rate */
	ARRIVAL_POISSON,	/* exponential gaps with mean 1 / rate */
};

struct sched_source {
	double rate_per_s;
	enum arrival arrival;
	int stream;		/* the stream it feeds; -1: picked by weight */
	uint64_t k;		/* arrivals issued from this source */
	double next_ms;		/* its next arrival, ms after the start */
	double phase_ms;	/* constant arrivals: when its first is */
	struct rng rng;		/* its own random stream (Poisson gaps) */
};

struct sched {
	struct sched_source *src;
	size_t nsrc;
	double *weights;	/* per stream, for picking; NULL: stream 0 */
	size_t nweights;
	double weight_sum;
	struct rng pick;	/* the random stream for picking */
	double end_ms;		/* arrivals at or after this are not issued */
	uint64_t max_requests;	/* 0: no limit */
	uint64_t issued;
};

/*
 * One source per stream: stream i at rates[i] (> 0, finite) with
 * arrivals[i]; a constant source i of n starts i/n of its period after 0,
 * so the streams interleave. Arrivals fall in [0, duration_ms) (duration ≥ 0; INFINITY:
 * until the cap). sched_pick then picks by rate. Source i draws from random
 * stream i + 1 of seed, the picking from stream 0. Returns 0, -EINVAL or
 * -ENOMEM; on error s is left empty (sched_free is safe).
 */
int sched_init_rates(struct sched *s, const double *rates, const enum arrival *arrivals,
		     size_t n, double duration_ms, uint64_t seed);

/*
 * One source at rate (> 0) whose arrivals go to stream i with probability
 * weights[i] / sum (weights ≥ 0 and finite, sum > 0); a stream of weight 0
 * is never picked. Returns 0, -EINVAL or -ENOMEM; on error s is left empty.
 */
int sched_init_shared(struct sched *s, double rate, enum arrival arrival,
		      const double *weights, size_t n, double duration_ms, uint64_t seed);

/*
 * loadgen's schedule for a run: a mix whose streams give rates, open loop,
 * gets a source per stream (each stream's arrival, or `arrival` where it
 * gives none); otherwise one source at rate (1 for a closed loop, which
 * only picks streams) shared out by the streams' weights. max_requests > 0
 * caps it. Returns 0, -EINVAL or -ENOMEM.
 */
struct mix;
int sched_init_load(struct sched *s, const struct mix *mix, double rate, enum arrival arrival,
		    int64_t concurrency, double duration_ms, uint64_t seed, int64_t max_requests);

/* Caps the number of arrivals issued (0: no cap). */
void sched_set_max(struct sched *s, uint64_t max_requests);

/*
 * The earliest arrival not yet issued: its time (ms after the start) in
 * *at_ms and its stream in *stream; the schedule moves past it. Ties go to
 * the lower source. Returns false when the schedule is over (the next
 * arrival would be at or after the end, or the cap is reached).
 */
bool sched_next(struct sched *s, double *at_ms, int *stream);

/* The time of the next arrival sched_next would issue, or INFINITY. */
double sched_peek(const struct sched *s);

/*
 * A stream picked by weight, for closed-loop clients (which have no
 * arrival times). Uses the picking random stream.
 */
int sched_pick(struct sched *s);

/*
 * Closed loop with a ramp-up (JMeter's): client k of n (from 0) sends its
 * first request k * ramp_up_ms / n after the start, then each next one when
 * answered. `started` clients have begun and `busy` of them wait for an
 * answer. Returns now_ms when a client may send now (*started grows when it
 * is a new one), the time the next client begins when every begun one is
 * busy, or INFINITY when all n are (an answer frees one).
 */
double sched_closed_next(int64_t n, double ramp_up_ms, int64_t *started, uint64_t busy,
			 double now_ms);

/*
 * Closed loop, --error-think: when a client whose request ended at now_ms
 * may send its next one. After a request that was not ok (any outcome but
 * ok, judged once its retries are spent: a retried attempt waits its
 * backoff instead), the client thinks think_ms first — so a target that
 * fails at once (a refused connection, an instant 503) is not asked again
 * in a tight loop — but never past the end of the sending window
 * (duration_ms), after which it sends nothing anyway. Returns now_ms after
 * an ok request, with think_ms 0, or when now_ms is at or past the end.
 * The end of the think is the client's next request's intended send time:
 * the think is the client's choice, not the server's delay, so it is in
 * no latency.
 */
double sched_closed_free_at(double think_ms, bool ok, double now_ms, double duration_ms);

/* Frees the schedule's memory. */
void sched_free(struct sched *s);

#endif
