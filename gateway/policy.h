/*
 * policy: every decision a chat request goes through, and nothing else —
 * which target of its alias's chain next (the breakers', the attempt
 * budget's and the deadline's say), whether a failed attempt holds against
 * its target's breaker, whether to retry the same target after a backoff
 * or move on, when to hedge and on which target, when to give up and with
 * which answer, and the batch queue's admission, drain and expiry.
 *
 * Pure: the time is the caller's `now` (milliseconds, the breakers'
 * clock), the randomness the caller's RNGs; nothing here reads a clock,
 * does I/O, logs, or touches libcurl or libuv. A breaker that changes
 * state is told to the router (router_breaker_changed), whose registered
 * listeners do what the shell wants done with it.
 *
 * The API is plain structs in, one action out: each event function
 * (policy_arrive, policy_on_result, policy_backoff_fired,
 * policy_hedge_fired, policy_drain_next…) updates the request's struct
 * policy_state and returns a struct policy_action by value, which the
 * caller carries out — the gateway with curl_uv and http_server
 * (proxy.c), a simulator with virtual time — and then feeds the next
 * event back. One action per event is enough: starting an attempt carries
 * its hedge delay, answering with an attempt's result carries "cancel the
 * other legs". Nothing allocates on the way but a request's notes (the
 * attempts its error body lists), which grow by doubling.
 *
 * Driving it (the gateway's proxy.c does exactly this; a simulator does
 * the same with virtual time):
 *   policy_arrive → act on the action;
 *   POLICY_START: start the transfer, then policy_started (or, when it
 *     cannot start, policy_start_failed); arm the hedge timer when
 *     hedge_after_ms ≥ 0, and on it call policy_hedge_fired;
 *   a transfer ends: policy_leg_off, policy_classify, policy_on_result;
 *   POLICY_PASS: answer with that leg, and for every other leg in flight
 *     policy_leg_off + policy_on_cancelled(lost = true);
 *   POLICY_BACKOFF: after delay_ms, policy_backoff_fired;
 *   POLICY_QUEUE: wait; on the queue's timer (policy_queue_next_wake) or
 *     a breaker change, policy_drain_begin + policy_drain_next for each
 *     route, acting on each request it gives back;
 *   a stream's first content: policy_on_commit (the other legs are then
 *     cancelled as lost); its watch timer asks policy_stream_watch; its
 *     end, policy_stream_failure then policy_on_stream_end;
 *   the client leaves: policy_queue_left when queued, policy_release or
 *     policy_on_cancelled(lost = false) for each leg out;
 *   and at the very end, always, policy_finish and policy_state_free.
 */
#ifndef FAULTLINE_GATEWAY_POLICY_H
#define FAULTLINE_GATEWAY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/list.h"
#include "common/rng.h"
#include "gateway/attempt.h"
#include "gateway/config.h"
#include "gateway/metrics.h"
#include "gateway/router.h"

/*
 * A watchdog cut holds against the provider unless the deadline left the
 * attempt less than this share of the provider's timeout_ms (a deadline
 * remainder is always a little under a timeout of the same length).
 */
#define POLICY_CAPPED_SHARE 0.9

/*
 * A batch request sent back to the queue because its attempts reached no
 * upstream waits for a breaker change, or this long, before it goes again.
 */
#define POLICY_REQUEUE_WAIT_MS 1000

/* Legs a request may have in flight: its attempt and its hedges. */
#define POLICY_MAX_LEGS (1 + GW_MAX_HEDGES)

/* What the policy reads and moves besides the request: shared by every request. */
struct policy_env {
	struct router *router;		/* the chains, breakers and their listeners, the queues */
	const struct gw_config *cfg;	/* deadline, when_all_open, stream caps, batch */
	const struct provider_stats *pstats;	/* by provider: health, for when all are open */
	struct rng *rng_retry;		/* backoff jitter */
	struct rng *rng_breaker;	/* cooldown jitter */
	bool stopping;			/* draining: no batch request is queued */
};

/* One attempt or skipped target, for the error body and the log. */
struct policy_note {
	const struct gw_target *t;
	const char *outcome;		/* a failure name, "breaker_open"… */
	long status;			/* 0: none */
	double ms;			/* the attempt's duration; NAN for a skip */
};

/* One leg slot: an attempt in flight (or the last one that used the slot). */
struct policy_leg {
	struct gw_target *t;
	uint64_t probe;			/* t's half-open ticket; 0: none */
	double start_ms;
	bool active;			/* its transfer is out (policy_started) */
	bool hedge;			/* started as a hedge */
	bool capped;			/* the deadline left it < POLICY_CAPPED_SHARE of its cap */
};

/* Where one request stands: everything the policy decides from, and nothing more. */
struct policy_state {
	struct gw_route *route;
	struct target_filter filter;	/* the targets it may use (x-faultline-provider…) */
	bool batch;			/* deferrable: may wait in the queue */
	bool stream;			/* "stream": true: first_token_timeout_ms caps attempts */
	bool no_reroute;		/* one delivery at most */

	struct attempt_budget budget;
	size_t pos;			/* the next chain position to consider */
	struct gw_target *cur;		/* the target of the last attempt started or failed */
	unsigned retries_here;		/* same-target retries of cur */
	double retry_after_ms;		/* the last failure's Retry-After; -1: none */
	uint32_t forced;		/* chain positions tried because every target was open */
	uint32_t hedged_at;		/* chain positions tried as hedges */
	unsigned skipped;		/* targets passed over as open */
	unsigned hedges;		/* hedges started */
	bool deadline_hit;		/* an attempt was cut by the deadline, or none fit */
	bool reached;			/* some upstream answered or timed out */
	bool delivered;			/* an attempt connected: it may have been acted on */
	bool committed;			/* a stream's client has its headers: no failover now */

	unsigned nlegs;			/* slots: 1, or 1 + hedge.max */
	unsigned nactive;		/* legs in flight */
	struct policy_leg legs[POLICY_MAX_LEGS];

	struct policy_note *notes;
	size_t nnotes;
	size_t capnotes;

	/* The batch queue. */
	struct list_node qlink;		/* on route->queue while waiting */
	bool from_queue;		/* holds one of its route's drain slots */
	bool dequeued_once;		/* counted as dequeued, its wait in the histogram */
	bool requeued;			/* back in the queue after refusals */
	double queued_ms;		/* when it first joined the queue; 0: never */
	double requeue_ms;
	uint64_t requeue_gen;		/* router breaker_gen then */
	unsigned attempts_before;	/* attempts made before its last dequeue */
};

/* What the caller does next. */
enum policy_act {
	POLICY_NONE,		/* nothing now: a leg in flight will answer, or a hedge found no target */
	POLICY_START,		/* start an attempt on t in leg slot `slot` */
	POLICY_BACKOFF,		/* wait delay_ms, then policy_backoff_fired */
	POLICY_QUEUE,		/* it joined its route's queue: wait for policy_drain_next */
	POLICY_PASS,		/* answer with leg `slot`'s answer; cancel every other leg as lost */
	POLICY_ANSWER,		/* answer with an error of the gateway's own: status, error */
};

/* Which error body POLICY_ANSWER means. */
enum policy_error {
	POLICY_ERR_FINAL,		/* no attempt succeeded: attempt_final_answer's, attempts listed */
	POLICY_ERR_OVERLOADED,		/* 503 gateway_overloaded: the gateway's own resources */
	POLICY_ERR_QUEUE_FULL,		/* 429 batch_queue_full */
	POLICY_ERR_QUEUE_TIMEOUT,	/* 503 batch_queue_timeout */
	POLICY_ERR_STOPPING,		/* 503 gateway_stopping */
};

struct policy_action {
	enum policy_act kind;
	bool rerouted;			/* it went back to choosing a target on the way */
	bool wake_queue;		/* a probe slot is free again: drain the queues */
	const char *why;		/* a note for the log ("no budget for a retry"), or NULL */
	/* POLICY_START (t also for POLICY_BACKOFF) and POLICY_PASS (slot). */
	struct gw_target *t;
	unsigned slot;
	bool hedge;
	bool forced;			/* every target was open: tried anyway */
	double timeout_ms;		/* the attempt's watchdog */
	double connect_timeout_ms;
	double hedge_after_ms;		/* start the hedge timer this long after it starts; < 0: none */
	/* POLICY_BACKOFF */
	double delay_ms;
	/* POLICY_ANSWER */
	enum policy_error error;
	int status;
	const char *type;		/* error.type */
	const char *code;		/* error.code */
	double retry_after_s;		/* Retry-After in seconds; 0: none */
};

/*
 * What the caller saw of one attempt that ended on its own or by its
 * watchdog (not cancelled): the facts attempt_classify reads, and the
 * gateway's own reasons.
 */
struct policy_result {
	double ms;			/* its duration */
	struct upstream_facts up;
	struct stream_facts sf;		/* a stream's, before its commit */
	bool too_big;			/* an answer too large (or too empty) to relay */
	bool local;			/* the gateway's own failure: no socket, or over_budget */
	bool over_budget;		/* local: the answer would pass upstream_body_budget_bytes */
	double retry_after_ms;		/* its Retry-After; -1: none */
};

/*
 * A request arrived for route: sets st up (f: the targets it may use, NULL
 * for any; nlegs: 1, or 1 + hedge.max when its alias hedges; deadline_ms: absolute,
 * on the policy's clock), drops its ratio into the alias's budget and
 * chooses where it goes first.
 */
struct policy_action policy_arrive(const struct policy_env *env, struct policy_state *st,
				   struct gw_route *route, const struct target_filter *f, bool batch,
				   bool stream, bool no_reroute, unsigned nlegs,
				   double deadline_ms, double now);

/* Frees what st holds (its notes). */
void policy_state_free(struct policy_state *st);

/*
 * The transfer of a POLICY_START action's leg went out: it is in flight.
 */
void policy_started(struct policy_state *st, unsigned slot);

/*
 * The transfer of a POLICY_START action's leg could not be started (the
 * gateway's own trouble): it is not counted as an attempt and its probe
 * goes back. True when no other leg is in flight (the caller answers).
 */
bool policy_start_failed(struct policy_state *st, unsigned slot);

/* Leg slot's transfer is no longer with the caller (before its result is given). */
void policy_leg_off(struct policy_state *st, unsigned slot);

/* How one attempt's result reads (pure; the caller counts it before policy_on_result). */
struct attempt_class policy_classify(const struct policy_state *st,
				     const struct policy_result *r);

/*
 * Leg slot (off, policy_leg_off) ended with result r, classified c: the
 * breaker takes it unless the deadline, not the provider, cut it; then
 * the answer (POLICY_PASS), the gateway's own 503 for a local failure, a
 * wait for the other legs (POLICY_NONE), a retry of the same target
 * (POLICY_BACKOFF), the next target, the queue, or the final error.
 */
struct policy_action policy_on_result(const struct policy_env *env, struct policy_state *st,
				      unsigned slot, const struct policy_result *r,
				      struct attempt_class c, double now);

/*
 * Leg slot (off) was cancelled. A loser (lost: another leg won) is held
 * against its breaker as slow when it was past the slow or latency
 * budget, and counted as a cancelled hedge; any other just gives its
 * probe back.
 */
void policy_on_cancelled(const struct policy_env *env, struct policy_state *st, unsigned slot,
			 bool lost, double now);

/*
 * Leg slot's stream had its first content at now: the request is
 * committed to it (no failover, no more hedges). Returns whether the leg
 * was a hedge (it won).
 */
bool policy_on_commit(const struct policy_env *env, struct policy_state *st, unsigned slot,
		      double now);

/*
 * The committed stream of leg slot (off) ended with failure f
 * (ATTEMPT_FAIL_NONE: [DONE]); ttft_ms was its time to first content.
 * Its breaker takes the result. Returns true when a probe slot is free
 * again (the caller drains the queues).
 */
bool policy_on_stream_end(const struct policy_env *env, struct policy_state *st, unsigned slot,
			  enum attempt_failure f, double ttft_ms, double now);

/*
 * What ended a committed stream whose transfer is over: curl's code and
 * what the relay saw (s). ATTEMPT_FAIL_NONE when it completed.
 */
enum attempt_failure policy_stream_failure(int curl_code, const struct stream_facts *s);

/* What a committed stream's watch timer finds (policy_stream_watch). */
enum policy_watch {
	POLICY_WATCH_AGAIN,		/* nothing yet: look again in *again_ms */
	POLICY_WATCH_STALLED,		/* no event for stall_timeout_ms: ATTEMPT_FAIL_STALL */
	POLICY_WATCH_CLIENT_STUCK,	/* paused for a client that took nothing for
					 * idle_timeout_ms: given up, as one that left */
};

/*
 * A committed stream's watch at now: its last upstream event (or resume)
 * at last_event_ms; paused when its upstream waits for a slow client,
 * which has taken nothing since stuck_since_ms (< 0: it just took some).
 */
enum policy_watch policy_stream_watch(const struct gw_config *cfg, double last_event_ms,
				      bool paused, double stuck_since_ms, double now,
				      double *again_ms);

/* Leg slot (off) ended with no result to give (its client left): its probe goes back. */
void policy_release(struct policy_state *st, unsigned slot);

/* The backoff of a POLICY_BACKOFF action ran out: the retry, or the next target. */
struct policy_action policy_backoff_fired(const struct policy_env *env, struct policy_state *st,
					  double now);

/* The hedge timer fired: a hedge on the next target that admits one, or POLICY_NONE. */
struct policy_action policy_hedge_fired(const struct policy_env *env, struct policy_state *st,
					double now);

/* ---- the batch queue ---- */

/*
 * The request is over: off its route's queue and out of its drain slot.
 * Returns true when a drain slot was freed (the queue may move).
 */
bool policy_finish(const struct policy_env *env, struct policy_state *st);

/* Whether st is waiting in its route's queue. */
bool policy_queued(const struct policy_state *st);

/* A queued request's client left: counted (policy_finish takes it off the queue). */
void policy_queue_left(const struct policy_env *env, struct policy_state *st);

/* Batch requests waiting in every route's queue. */
size_t policy_queue_total(const struct policy_env *env);

/* Where one pass over a route's queue is (policy_drain_begin). */
struct policy_drain {
	size_t left;			/* dequeues still allowed this pass */
};

/* Starts a pass over rt's queue: each request waiting now goes at most once. */
void policy_drain_begin(const struct gw_route *rt, struct policy_drain *d);

/*
 * The next request of the pass that expires (it waited max_wait_ms: off
 * the queue, *act the 503 batch_queue_timeout) or goes (off the queue,
 * from the start of its chain with a fresh deadline: *act where), or NULL
 * when the pass is over. *dequeued says which. Only the head is looked
 * at: the queue is oldest first, and one that goes and comes back (to
 * the head) was not old enough to expire at this now either.
 */
struct policy_state *policy_drain_next(const struct policy_env *env, struct gw_route *rt,
				       struct policy_drain *d, double now,
				       struct policy_action *act, bool *dequeued);

/*
 * The gateway is stopping: the head of rt's queue, taken off and counted
 * expired, with *act its 503 gateway_stopping; NULL when it is empty.
 */
struct policy_state *policy_queue_take(const struct policy_env *env, struct gw_route *rt,
				       struct policy_action *act);

/*
 * When a queue may next change at now: the oldest request's expiry, a
 * requeued request's wait, a cooldown's end, or now when one may go;
 * INFINITY when nothing is due.
 */
double policy_queue_next_wake(const struct policy_env *env, double now);

#endif
