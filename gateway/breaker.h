/*
 * breaker: the circuit breaker of one target (provider + upstream model).
 * Closed, it admits everything and opens on N consecutive failures, on a
 * failure ratio over a time-bucketed window, or on a share of slow calls;
 * open, it rejects without network cost until a jittered cooldown (growing
 * on repeated trips, up to a cap) is over; half-open, it admits K probes,
 * which close it if all succeed and reopen it if one fails. Pure policy:
 * every call takes the time and, where it draws, the random state as
 * arguments; nothing reads a clock or does I/O, and memory is fixed.
 */
#ifndef FAULTLINE_BREAKER_H
#define FAULTLINE_BREAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

/* The window is split into at most this many buckets. */
#define BREAKER_MAX_BUCKETS 60

/* Room for a state change's reason, its terminating NUL included. */
#define BREAKER_REASON_LEN 128

enum breaker_state {
	BREAKER_CLOSED,
	BREAKER_OPEN,
	BREAKER_HALF_OPEN,
};

/* What breaker_admit decided for one request. */
enum breaker_verdict {
	BREAKER_REJECT,		/* skip this target: it is open */
	BREAKER_ADMIT,		/* send it as an ordinary request */
	BREAKER_ADMIT_PROBE,	/* send it as a half-open probe (a slot is held) */
};

/*
 * One breaker's settings, all set by the caller (breaker_config_default()
 * gives a starting point; breaker_config_check() says whether they make
 * sense). Times are milliseconds.
 */
struct breaker_config {
	bool enabled;			/* false: always admit, never change state, still count */
	unsigned consecutive_failures;	/* N: open after N failures in a row; 0: rule off */
	double failure_ratio;		/* R in (0, 1]: open when failures / requests ≥ R
					 * over the window; 0: rule off */
	double window_ms;		/* W: the span the ratio rules look back over */
	unsigned buckets;		/* the window is split into this many time buckets
					 * (1 … BREAKER_MAX_BUCKETS); counts age out a whole
					 * bucket at a time */
	unsigned min_requests;		/* M: the ratio rules need at least M results in
					 * the window (0 counts as 1) */
	double slow_ms;			/* a call taking longer than this is slow; 0: rule off */
	double slow_ratio;		/* open when slow / requests ≥ this over the window;
					 * 0: rule off */
	double latency_budget_ms;	/* B: open when the window's latency_percentile
					 * latency is over B, i.e. more than
					 * 1 − percentile/100 of its results took longer
					 * than B; 0: rule off */
	double latency_percentile;	/* in [50, 99.9] */
	double cooldown_ms;		/* how long the first trip keeps it open */
	double cooldown_multiplier;	/* each further trip in a row multiplies it (≥ 1) */
	double cooldown_max_ms;		/* no cooldown is longer */
	double cooldown_jitter;		/* j in [0, 1): the cooldown c is drawn uniformly
					 * in [c × (1 − j), c × (1 + j)), then capped */
	unsigned half_open_probes;	/* K: probes in flight at once while half-open,
					 * and successes needed to close (≥ 1) */
};

/* Counts over the whole life of a breaker, or over its window. */
struct breaker_counts {
	uint64_t requests;	/* results recorded */
	uint64_t failures;	/* of which failed */
	uint64_t slow;		/* of which took longer than slow_ms */
	uint64_t late;		/* of which took longer than latency_budget_ms */
	uint64_t rejected;	/* admissions refused (totals only; 0 in a window) */
};

/* One time bucket of the window: the results recorded in it. */
struct breaker_bucket {
	int64_t index;		/* which bucket of time (floor(now / width)) */
	uint64_t requests;
	uint64_t failures;
	uint64_t slow;
	uint64_t late;
};

/*
 * Filled by a call that changed the state, so the caller writes one event
 * line, log line and metric per change; changed is false otherwise.
 */
struct breaker_change {
	bool changed;
	enum breaker_state from;
	enum breaker_state to;
	char reason[BREAKER_REASON_LEN];	/* "5 consecutive failures", "probe failed", … */
};

/*
 * One target's breaker. The caller owns the memory; the fields are public
 * for reading (by /admin, metrics and the router) and are changed only
 * through the functions below.
 */
struct breaker {
	struct breaker_config cfg;	/* a copy of the caller's config */
	enum breaker_state state;
	double since_ms;		/* when it entered the current state */
	uint64_t changes;		/* state changes since breaker_init */
	double open_until_ms;		/* open: when the cooldown is over */
	double cooldown_ms;		/* the cooldown drawn at the last trip */
	unsigned trips;			/* trips since it last closed (opens and reopens) */
	uint64_t consecutive_failures;	/* failures in a row, any state; reset by a
					 * success and by closing */
	double last_failure_ms;		/* the latest failure's time; -INFINITY: none */
	struct breaker_counts totals;	/* since breaker_init */
	uint64_t round;			/* half-open periods entered so far; the
					 * current one's number is its probes' ticket */
	unsigned probes_in_flight;	/* half-open: slots held by unresolved probes */
	unsigned probes_succeeded;	/* half-open: probes that succeeded this round */
	int64_t latest_bucket;		/* the latest bucket index seen */
	double gate_ms;			/* > 0: the probe gate (breaker_gate) is on */
	struct breaker_bucket bucket[BREAKER_MAX_BUCKETS];
};

/*
 * The defaults: enabled, 5 consecutive failures, failure ratio 0.5 over
 * 10 s in 10 buckets with at least 20 requests, slow-call rule off (slow_ms
 * 0, slow_ratio 0.5 once slow_ms is set), cooldown 5 s × 2 per trip up to
 * 60 s with 20 % jitter, 3 half-open probes.
 */
struct breaker_config breaker_config_default(void);

/*
 * Checks a config for the loader. Returns 0, or -EINVAL with a message in
 * err (when errlen > 0) that names the first bad field and what it expects,
 * e.g. "failure_ratio: expected 0 (off) or a number in (0, 1], got 1.5".
 * Bounds: ratios 0 or in (0, 1]; buckets 1 … BREAKER_MAX_BUCKETS; window_ms
 * from 1 ms per bucket to one hour; slow_ms finite ≥ 0; cooldown_ms finite
 * > 0; cooldown_multiplier finite ≥ 1; cooldown_max_ms finite ≥
 * cooldown_ms; cooldown_jitter in [0, 1); half_open_probes ≥ 1.
 */
int breaker_config_check(const struct breaker_config *cfg, char *err, size_t errlen);

/*
 * Starts b closed at now_ms with a copy of cfg (which should have passed
 * breaker_config_check(); buckets is clamped to 1 … BREAKER_MAX_BUCKETS
 * whatever it holds, so memory stays in bounds).
 */
void breaker_init(struct breaker *b, const struct breaker_config *cfg, double now_ms);

/*
 * Decides whether a request may go to this target at now_ms. Closed or
 * disabled: BREAKER_ADMIT. Open before open_until_ms: BREAKER_REJECT (counted
 * in totals.rejected). Open at or after open_until_ms: it goes half-open (a
 * change, reason "cooldown 5000 ms over") and this request is its first
 * probe. Half-open: BREAKER_ADMIT_PROBE while fewer than K probes of this
 * round are in flight or have succeeded (the probe holds a slot until its
 * result is recorded or the slot is released), else BREAKER_REJECT.
 * *probe (probe must not be NULL) is set to the probe's ticket (non-zero)
 * on BREAKER_ADMIT_PROBE and to 0 otherwise; pass it back to breaker_record() or
 * breaker_release_probe(). chg may be NULL.
 */
enum breaker_verdict breaker_admit(struct breaker *b, double now_ms, uint64_t *probe,
				   struct breaker_change *chg);

/*
 * Records one finished request: success or failure, and its latency (slow
 * when above slow_ms). probe is the ticket breaker_admit gave (0 for an
 * ordinary request). Every result counts in totals, the window, the
 * consecutive count and last_failure_ms, whatever the state. Then:
 *   closed: opens when a rule holds (N consecutive failures first, then the
 *     failure ratio, then the slow share);
 *   half-open, a probe of the current round: a failure reopens it (reason
 *     "probe failed") with the next, longer cooldown; the K-th success closes
 *     it (reason "3 probes succeeded");
 *   anything else — open, disabled, an ordinary request that finishes while
 *   half-open (it was admitted before the breaker opened), or a probe of an
 *   earlier round — changes no state: only probes decide a half-open breaker.
 * Opening draws once from r when cooldown_jitter > 0 (r is not read
 * otherwise and may then be NULL). chg may be NULL.
 */
void breaker_record(struct breaker *b, double now_ms, bool success, double latency_ms,
		    uint64_t probe, struct rng *r, struct breaker_change *chg);

/*
 * An attempt that was cancelled before it ended (another attempt of its
 * request won) after latency_ms: it says nothing of success, but one that
 * had already run past slow_ms or latency_budget_ms is known to be that
 * slow, and is counted so (as a result that did not fail, leaving the
 * consecutive count alone), which may open a closed breaker. Anything
 * quicker is not counted. The probe's slot, if any, is given back.
 */
void breaker_record_slow(struct breaker *b, double now_ms, double latency_ms, uint64_t probe,
			 struct rng *r, struct breaker_change *chg);

/*
 * Gives back the slot of a probe that was admitted but never sent (the
 * request was cancelled or went elsewhere). A ticket of another round, or
 * 0, is ignored.
 */
void breaker_release_probe(struct breaker *b, uint64_t probe);

/*
 * The counts of the window ending at now_ms (results in the last `buckets`
 * buckets, the current one included); rejected is 0. Time never runs
 * backwards for the window: a now_ms (here or in breaker_record) before the
 * latest result's bucket is taken as that bucket.
 */
struct breaker_counts breaker_window(const struct breaker *b, double now_ms);

/*
 * Whether breaker_admit at now_ms would admit a request (as an ordinary
 * request or a probe), without changing anything.
 */
bool breaker_would_admit(const struct breaker *b, double now_ms);

/* "closed", "open" or "half_open" (the events file's names); "unknown" else. */
const char *breaker_state_name(enum breaker_state s);

/*
 * Opens b now, for the next cooldown (a trip like any other), whatever its
 * state — unless it is disabled or open already: an outside verdict (an
 * active health check) that the target is down. reason is the change's.
 */
void breaker_trip(struct breaker *b, double now_ms, const char *reason, struct rng *r,
		  struct breaker_change *chg);

/*
 * An open b goes half-open now, before its cooldown is over (a health
 * check saw the target back): its probes decide, as after a cooldown.
 * Nothing happens when it is not open, or disabled.
 */
void breaker_wake(struct breaker *b, double now_ms, const char *reason,
		  struct breaker_change *chg);

/*
 * The probe gate, for replicas that share their breakers (gateway/fleet.h):
 * while gate_ms > 0, an open breaker whose cooldown is over does not go
 * half-open by itself — breaker_admit holds it open gate_ms longer and
 * rejects, as if the cooldown had been that much longer — so that only
 * the replica given the probe (breaker_wake) probes. 0 turns it off: the
 * breaker goes half-open after its cooldown on its own again.
 */
void breaker_gate(struct breaker *b, double gate_ms);

/*
 * Another replica's open (gateway/fleet.h), made there at at_ms (on this
 * breaker's clock) and ending at until_ms: a closed or half-open b opens
 * now until then (a trip: trips grows, cooldown_ms is the time left), its
 * state dated at_ms (at most now_ms), so that a later change of a third
 * replica is not taken for an older one; an open b stays open at least
 * that long (no change). Nothing when disabled or until_ms ≤ now_ms.
 */
void breaker_open_until(struct breaker *b, double now_ms, double at_ms, double until_ms,
			const char *reason, struct breaker_change *chg);

/*
 * Another replica's close, made there at at_ms: an open or half-open b
 * closes now, as after its own probes (trips, the consecutive count and
 * the window start again), its state dated at_ms (at most now_ms).
 * Nothing when disabled or closed.
 */
void breaker_close_now(struct breaker *b, double now_ms, double at_ms, const char *reason,
		       struct breaker_change *chg);

#endif
