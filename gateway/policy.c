/*
 * policy: the decisions of a chat request, from its arrival to its answer
 * (see policy.h). Reads straight down: arrival → route (the next target
 * whose breaker admits it, or the queue, or every target open, or the
 * final error) → start (the attempt's timeout and hedge delay) → result
 * (breaker, answer or after_failure: same-target retry, next target) →
 * hedges → the batch queue.
 */
#include "gateway/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/budget.h"
#include "gateway/hedge.h"

static struct policy_action route(const struct policy_env *env, struct policy_state *st,
				  double now);

/* ---- notes ---- */

static void note_add(struct policy_state *st, const struct gw_target *t, const char *outcome,
		     long status, double ms)
{
	struct policy_note *n;

	if (st->nnotes == st->capnotes) {
		size_t cap = st->capnotes ? st->capnotes * 2 : 4;

		n = realloc(st->notes, cap * sizeof(*n));
		if (!n)
			return;		/* the error body lists fewer; nothing else depends on it */
		st->notes = n;
		st->capnotes = cap;
	}
	st->notes[st->nnotes++] = (struct policy_note){ t, outcome, status, ms };
}

/* Drops t's note of being skipped as open (it is about to be tried anyway). */
static void note_unskip(struct policy_state *st, const struct gw_target *t)
{
	size_t i;

	for (i = 0; i < st->nnotes; i++) {
		if (st->notes[i].t == t && strcmp(st->notes[i].outcome, "breaker_open") == 0) {
			memmove(&st->notes[i], &st->notes[i + 1],
				(st->nnotes - i - 1) * sizeof(*st->notes));
			st->nnotes--;
			return;
		}
	}
}

void policy_state_free(struct policy_state *st)
{
	free(st->notes);
	st->notes = NULL;
	st->nnotes = st->capnotes = 0;
}

/* ---- breakers ---- */

static enum breaker_verdict admit(const struct policy_env *env, struct gw_target *t, double now,
				  uint64_t *probe)
{
	struct breaker_change chg;
	enum breaker_verdict v;

	v = breaker_admit(&t->br, now, probe, &chg);
	router_breaker_changed(env->router, t, &chg);
	return v;
}

/*
 * Gives an attempt's result to its target's breaker. Returns true when the
 * breaker is half-open after it: a probe slot is free again, and a queued
 * request may take it.
 */
static bool record(const struct policy_env *env, struct policy_leg *l, bool success,
		   double latency_ms, double now)
{
	struct breaker_change chg;

	breaker_record(&l->t->br, now, success, latency_ms, l->probe, env->rng_breaker, &chg);
	l->probe = 0;
	router_breaker_changed(env->router, l->t, &chg);
	return l->t->br.state == BREAKER_HALF_OPEN;
}

static void release_probe(struct policy_leg *l)
{
	if (l->probe)
		breaker_release_probe(&l->t->br, l->probe);
	l->probe = 0;
}

/* ---- answers ---- */

/* Retry-After, in seconds, for the first of the route's open targets to go half-open (≥ 1). */
static double open_end_s(const struct policy_state *st, double now)
{
	double end = router_route_next_open_end(st->route, &st->filter);
	double s = isfinite(end) ? ceil((end - now) / 1000) : 1;

	return fmax(1, s);
}

/*
 * When every target of the request was skipped as open: the seconds until
 * the first of them goes half-open; 0 (no Retry-After) otherwise.
 */
static double open_retry_after(const struct policy_state *st, double now)
{
	const struct gw_route *rt = st->route;
	size_t i;

	if (st->budget.attempts)
		return 0;
	for (i = 0; i < rt->ntargets; i++) {
		const struct gw_target *t = rt->targets[i];

		if (router_target_allowed(t, &st->filter) && t->br.state != BREAKER_OPEN)
			return 0;	/* skipped for another reason: no promise to make */
	}
	return open_end_s(st, now);
}

static struct policy_action answer(enum policy_error e, int status, const char *type,
				   const char *code, double retry_after_s)
{
	return (struct policy_action){
		.kind = POLICY_ANSWER,
		.error = e,
		.status = status,
		.type = type,
		.code = code,
		.retry_after_s = retry_after_s,
	};
}

/* No attempt succeeded: 504, 503 (with Retry-After when every target is open) or 502. */
static struct policy_action answer_final(struct policy_state *st, double now)
{
	struct attempt_final fin = attempt_final_answer(st->deadline_hit, !st->reached);

	return answer(POLICY_ERR_FINAL, fin.status, fin.type, fin.code,
		      fin.status == 503 ? open_retry_after(st, now) : 0);
}

/* ---- starting an attempt ---- */

/* A leg slot whose transfer is over. */
static int free_slot(const struct policy_state *st)
{
	unsigned i;

	for (i = 0; i < st->nlegs; i++) {
		if (!st->legs[i].active)
			return (int)i;
	}
	return -1;
}

/*
 * An attempt on t (holding the half-open probe admit gave; 0: none): its
 * leg slot, its timeout — the provider's, or first_token_timeout_ms for a
 * stream until its commit, within the deadline left — and when to hedge.
 */
static struct policy_action start(const struct policy_env *env, struct policy_state *st,
				  struct gw_target *t, bool hedge, uint64_t probe, double now)
{
	const struct gw_provider *p = t->prov;
	const struct gw_hedge *h = &st->route->alias->hedge;
	double cap = st->stream ? fmin(p->timeout_ms, env->cfg->first_token_timeout_ms)
				: p->timeout_ms;
	double timeout = attempt_timeout_ms(&st->budget, cap, now);
	int slot = free_slot(st);
	struct policy_leg *l;

	st->cur = t;
	if (slot < 0) {
		/* Not reached: a hedge starts only while a slot is free. */
		if (probe)
			breaker_release_probe(&t->br, probe);
		return (struct policy_action){ .kind = POLICY_NONE };
	}
	l = &st->legs[slot];
	*l = (struct policy_leg){
		.t = t, .probe = probe, .start_ms = now, .hedge = hedge,
		.capped = timeout < POLICY_CAPPED_SHARE * cap,
	};
	st->budget.attempts++;
	return (struct policy_action){
		.kind = POLICY_START,
		.t = t,
		.slot = (unsigned)slot,
		.hedge = hedge,
		.timeout_ms = timeout,
		.connect_timeout_ms = fmax(1, ceil(fmin(p->connect_timeout_ms, timeout))),
		.hedge_after_ms = h->enabled && !st->no_reroute && !st->committed &&
					  st->hedges < h->max
				  ? hedge_delay_ms(h, &t->lat) : -1,
	};
}

void policy_started(struct policy_state *st, unsigned slot)
{
	st->legs[slot].active = true;
	st->nactive++;
}

bool policy_start_failed(struct policy_state *st, unsigned slot)
{
	st->budget.attempts--;
	release_probe(&st->legs[slot]);
	return st->nactive == 0;
}

void policy_leg_off(struct policy_state *st, unsigned slot)
{
	if (!st->legs[slot].active)
		return;
	st->legs[slot].active = false;
	st->nactive--;
}

/* ---- the batch queue: admission ---- */

/* Takes st out of its drain slot; true when it held one. */
static bool queue_release(const struct policy_env *env, struct policy_state *st)
{
	(void)env;
	if (!st->from_queue)
		return false;
	st->from_queue = false;
	st->route->qrunning--;
	return true;
}

static void queue_unlink(const struct policy_env *env, struct policy_state *st)
{
	if (!list_linked(&st->qlink))
		return;
	list_remove(&st->route->waiting, &st->qlink);
	env->router->queued--;
}

/*
 * Puts st back into rt's queue in the order of when each request first
 * joined it, so that the queue stays oldest first: its head is what
 * expires first and goes first. One that comes back from the head in a
 * drain goes back to the head; one whose attempts ran while others came
 * back goes behind those older than it.
 */
static void queue_reinsert(struct gw_route *rt, struct policy_state *st)
{
	struct list_node *n = list_first(&rt->waiting);

	while (n && list_entry(n, struct policy_state, qlink)->queued_ms < st->queued_ms)
		n = list_next(&rt->waiting, n);
	if (n)
		list_insert_before(&rt->waiting, n, &st->qlink);
	else
		list_push_back(&rt->waiting, &st->qlink);
}

/*
 * Puts a batch request that no target could take into its route's queue
 * (among the others by when it first joined, when it had been dequeued:
 * queue_reinsert); a full queue answers 429, a stopping gateway 503.
 */
static struct policy_action enqueue(const struct policy_env *env, struct policy_state *st,
				    double now)
{
	struct gw_route *rt = st->route;
	bool again = st->queued_ms > 0;

	if (env->stopping)
		return answer(POLICY_ERR_STOPPING, 503, "service_unavailable", "gateway_stopping", 1);
	if (!again && rt->waiting.len >= env->cfg->batch.queue_max) {
		rt->queue[QUEUE_FULL]++;
		return answer(POLICY_ERR_QUEUE_FULL, 429, "rate_limit_error", "batch_queue_full",
			      open_end_s(st, now));
	}
	queue_release(env, st);
	if (!again) {
		st->queued_ms = now;
		rt->queue[QUEUE_QUEUED]++;
	}
	st->requeued = again || st->attempts_before + st->budget.attempts > 0;
	st->requeue_gen = env->router->breaker_gen;
	st->requeue_ms = now;
	if (again)
		queue_reinsert(rt, st);
	else
		list_push_back(&rt->waiting, &st->qlink);
	env->router->queued++;
	return (struct policy_action){ .kind = POLICY_QUEUE };
}

/* ---- routing ---- */

/*
 * The next target of the chain whose breaker admits the request; past the
 * chain's end, the queue (a batch request no upstream has seen), or with
 * every target open and when_all_open so, the one whose last failure is
 * oldest; else the final error.
 */
static struct policy_action route(const struct policy_env *env, struct policy_state *st,
				  double now)
{
	const struct gw_route *rt = st->route;
	struct policy_action a;
	uint64_t probe = 0;
	struct gw_target *t;
	uint32_t passed;
	size_t at = 0;

	st->retries_here = 0;
	for (; st->pos < rt->ntargets; st->pos++) {
		t = rt->targets[st->pos];
		if (!router_target_allowed(t, &st->filter) || (st->hedged_at & (1u << st->pos)))
			continue;
		if (!attempt_may_start(&st->budget, now)) {
			st->deadline_hit |= attempt_deadline_gone(&st->budget, now);
			return answer_final(st, now);
		}
		st->cur = t;
		if ((st->batch && t->br.cfg.enabled && t->br.state == BREAKER_HALF_OPEN &&
		     t->br.probes_in_flight > 0) || admit(env, t, now, &probe) == BREAKER_REJECT) {
			/* Open; or half-open with a probe out, and this is deferrable work. */
			note_add(st, t, "breaker_open", 0, NAN);
			st->skipped++;
			continue;
		}
		st->pos++;
		return start(env, st, t, false, probe, now);
	}
	if (st->batch && env->cfg->batch.queue_max > 0 && !st->reached && !st->deadline_hit)
		return enqueue(env, st, now);	/* deferrable: it waits for a target */
	t = NULL;
	if (st->skipped && (st->forced || !st->budget.attempts) &&
	    env->cfg->when_all_open == GW_ALL_OPEN_LEAST_RECENTLY_FAILED &&
	    attempt_may_start(&st->budget, now)) {
		/* Half-open ones with their probes out are not open: not tried past their limit. */
		passed = st->forced;
		for (;;) {
			t = router_least_recently_failed(rt, &st->filter, env->pstats, passed, &at);
			if (!t || t->br.state == BREAKER_OPEN)
				break;
			passed |= 1u << at;
		}
	}
	if (!t)
		return answer_final(st, now);
	/* Every target is open: each that fails fast, oldest failure first, anyway. */
	st->forced |= 1u << at;
	note_unskip(st, t);
	a = start(env, st, t, false, 0, now);
	a.forced = true;
	return a;
}

struct policy_action policy_arrive(const struct policy_env *env, struct policy_state *st,
				   struct gw_route *rt, const struct target_filter *f, bool batch,
				   bool stream, bool no_reroute, unsigned nlegs,
				   double deadline_ms, double now)
{
	struct policy_action a;

	memset(st, 0, sizeof(*st));
	st->route = rt;
	if (f)
		st->filter = *f;
	st->batch = batch;
	st->stream = stream;
	st->no_reroute = no_reroute;
	st->nlegs = nlegs < POLICY_MAX_LEGS ? nlegs : POLICY_MAX_LEGS;
	st->budget = (struct attempt_budget){
		.deadline_ms = deadline_ms,
		.max_attempts = rt->alias->max_attempts,
	};
	st->retry_after_ms = -1;
	list_node_init(&st->qlink);
	budget_deposit(&rt->budget, &rt->alias->budget, now);
	a = route(env, st, now);
	a.rerouted = true;
	return a;
}

/* ---- after an attempt ---- */

/*
 * After the last leg in flight failed: a same-target retry when one is
 * allowed, the budget has a token and the wait fits, else the next target.
 */
static struct policy_action after_failure(const struct policy_env *env, struct policy_state *st,
					  double now)
{
	const struct gw_retry *rt = &st->route->alias->retry;
	const struct backoff bo = { rt->base_ms, rt->cap_ms };
	struct policy_action a;
	const char *why = NULL;
	double wait = 0;

	if (st->deadline_hit || attempt_deadline_gone(&st->budget, now)) {
		st->deadline_hit = true;
		return answer_final(st, now);
	}
	if (st->no_reroute && st->delivered) {
		/* It may have been acted on: not sent again, here or elsewhere. */
		a = answer_final(st, now);
		a.why = "no reroute after a delivered attempt";
		return a;
	}
	if (st->retries_here < rt->max_retries &&
	    attempt_retry_delay(&st->budget, &bo, st->retries_here, st->retry_after_ms, now,
				rt->min_attempt_ms, env->rng_retry, &wait) &&
	    breaker_would_admit(&st->cur->br, now + wait)) {
		if (budget_take(&st->route->budget, &st->route->alias->budget, now)) {
			st->retries_here++;
			return (struct policy_action){
				.kind = POLICY_BACKOFF, .t = st->cur, .delay_ms = wait,
			};
		}
		st->route->exhausted[0]++;
		why = "no budget for a retry";
	}
	a = route(env, st, now);
	a.rerouted = true;
	if (why && !a.why)
		a.why = why;
	return a;
}

struct attempt_class policy_classify(const struct policy_state *st,
				     const struct policy_result *r)
{
	struct attempt_class c = st->stream ? attempt_classify_stream(&r->up, &r->sf)
					    : attempt_classify(&r->up);

	if (r->too_big && !r->up.cut)	/* an answer too large to relay, whatever its status */
		c = (struct attempt_class){ ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY };
	return c;
}

/*
 * An attempt the gateway itself could not carry: it never left (then it
 * is no attempt at all), or its answer would have taken the buffered
 * answers past their budget (then the upstream did answer). Neither is
 * held against the provider, and every other target would fail the same
 * way: the client gets a 503 gateway_overloaded unless a leg is in flight.
 */
static struct policy_action local_failure(struct policy_state *st, struct policy_leg *l,
					  const struct policy_result *r)
{
	if (r->over_budget)
		st->delivered = true;
	else
		st->budget.attempts--;
	release_probe(l);
	if (st->nactive)
		return (struct policy_action){ .kind = POLICY_NONE };
	return answer(POLICY_ERR_OVERLOADED, 503, "service_unavailable", "gateway_overloaded", 1);
}

/*
 * Whether result c holds against its target's breaker: every failure
 * does, but a contract violation only when its alias says so
 * (contract.counts_as_failure): the provider answered, just not to the
 * contract, and another request might ask for none.
 */
static bool holds_against(const struct policy_state *st, struct attempt_class c)
{
	if (c.verdict == ATTEMPT_FAILOVER && c.failure == ATTEMPT_FAIL_CONTRACT)
		return st->route->alias->contract.counts_as_failure;
	return attempt_counts_as_failure(c);
}

struct policy_action policy_on_result(const struct policy_env *env, struct policy_state *st,
				      unsigned slot, const struct policy_result *r,
				      struct attempt_class c, double now)
{
	struct policy_leg *l = &st->legs[slot];
	bool deadline_cut = r->up.cut && l->capped;
	bool wake = false;
	struct policy_action a;

	if (r->local)
		return local_failure(st, l, r);
	st->delivered |= r->up.connected;
	if (deadline_cut) {
		/* The deadline's cut, not the provider's timeout: not held against it. */
		st->deadline_hit = true;
		st->reached = true;
		release_probe(l);
	} else {
		wake = record(env, l, !holds_against(st, c), r->ms, now);
	}
	if (c.verdict != ATTEMPT_FAILOVER) {
		/* The answer: every other leg lost. */
		if (c.verdict == ATTEMPT_SUCCESS)
			lat_ring_add(&l->t->lat, r->ms);
		l->t->failed_slow = false;
		if (l->hedge && c.verdict == ATTEMPT_SUCCESS)
			st->route->hedges[HEDGE_WON]++;
		return (struct policy_action){
			.kind = POLICY_PASS, .t = l->t, .slot = slot, .wake_queue = wake,
		};
	}
	if (!attempt_failure_is_unavailable(c.failure))
		st->reached = true;
	note_add(st, l->t, attempt_failure_name(c.failure), r->up.status, r->ms);
	if (!deadline_cut)
		l->t->failed_slow = r->up.cut || c.failure == ATTEMPT_FAIL_CONNECT_TIMEOUT ||
				    c.failure == ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT;
	if (st->cur != l->t)
		st->retries_here = 0;	/* a hedge's target failed last: its own retries */
	st->cur = l->t;
	st->retry_after_ms = r->retry_after_ms;
	if (st->nactive)
		a = (struct policy_action){ .kind = POLICY_NONE };	/* a hedge may yet answer */
	else
		a = after_failure(env, st, now);
	a.wake_queue = wake;
	return a;
}

void policy_on_cancelled(const struct policy_env *env, struct policy_state *st, unsigned slot,
			 bool lost, double now)
{
	struct policy_leg *l = &st->legs[slot];
	struct breaker_change chg;

	if (!lost) {
		release_probe(l);
		return;
	}
	st->route->hedges[HEDGE_CANCELLED]++;
	breaker_record_slow(&l->t->br, now, now - l->start_ms, l->probe, env->rng_breaker, &chg);
	l->probe = 0;
	router_breaker_changed(env->router, l->t, &chg);
}

bool policy_on_commit(const struct policy_env *env, struct policy_state *st, unsigned slot,
		      double now)
{
	struct policy_leg *l = &st->legs[slot];

	(void)env;
	st->committed = true;
	lat_ring_add(&l->t->lat, now - l->start_ms);
	if (l->hedge)
		st->route->hedges[HEDGE_WON]++;
	return l->hedge;
}

bool policy_on_stream_end(const struct policy_env *env, struct policy_state *st, unsigned slot,
			  enum attempt_failure f, double ttft_ms, double now)
{
	struct policy_leg *l = &st->legs[slot];
	bool wake = record(env, l, f == ATTEMPT_FAIL_NONE, ttft_ms, now);

	if (f == ATTEMPT_FAIL_NONE)
		l->t->failed_slow = false;
	return wake;
}

enum attempt_failure policy_stream_failure(int curl_code, const struct stream_facts *s)
{
	struct upstream_facts f = { .curl_code = curl_code };

	return attempt_classify_stream(&f, s).failure;
}

enum policy_watch policy_stream_watch(const struct gw_config *cfg, double last_event_ms,
				      bool paused, double stuck_since_ms, double now,
				      double *again_ms)
{
	double stall = cfg->stall_timeout_ms;
	double left = last_event_ms + stall - now;

	if (paused && stuck_since_ms >= 0 && now - stuck_since_ms >= cfg->idle_timeout_ms)
		return POLICY_WATCH_CLIENT_STUCK;
	if (paused || left >= 1) {
		*again_ms = paused ? fmin(stall, cfg->idle_timeout_ms) : left;
		return POLICY_WATCH_AGAIN;
	}
	return POLICY_WATCH_STALLED;
}

void policy_release(struct policy_state *st, unsigned slot)
{
	release_probe(&st->legs[slot]);
}

/* ---- timers ---- */

struct policy_action policy_backoff_fired(const struct policy_env *env, struct policy_state *st,
					  double now)
{
	struct policy_action a;
	uint64_t probe = 0;

	if (!attempt_may_start(&st->budget, now)) {
		st->deadline_hit |= attempt_deadline_gone(&st->budget, now);
		return answer_final(st, now);
	}
	if (admit(env, st->cur, now, &probe) == BREAKER_REJECT) {
		note_add(st, st->cur, "breaker_open", 0, NAN);
		st->skipped++;
		a = route(env, st, now);
		a.rerouted = true;
		return a;
	}
	return start(env, st, st->cur, false, probe, now);
}

struct policy_action policy_hedge_fired(const struct policy_env *env, struct policy_state *st,
					double now)
{
	const struct policy_action none = { .kind = POLICY_NONE };
	struct gw_route *rt = st->route;
	uint64_t probe = 0;
	size_t i;
	unsigned k;

	if (st->committed || !st->nactive || free_slot(st) < 0 ||
	    !attempt_may_start(&st->budget, now))
		return none;
	for (i = st->pos; i < rt->ntargets; i++) {
		struct gw_target *c = rt->targets[i];
		bool busy = false;

		if (!router_target_allowed(c, &st->filter))
			continue;
		for (k = 0; k < st->nlegs; k++)
			busy |= st->legs[k].active && st->legs[k].t == c;
		if (busy || !breaker_would_admit(&c->br, now))
			continue;
		if (!budget_take(&rt->budget, &rt->alias->budget, now)) {
			struct policy_action a = none;

			rt->exhausted[1]++;
			a.why = "no budget for a hedge";
			return a;
		}
		if (admit(env, c, now, &probe) == BREAKER_REJECT)
			continue;
		st->hedged_at |= 1u << i;	/* route passes it over: it was tried */
		st->hedges++;
		rt->hedges[HEDGE_STARTED]++;
		return start(env, st, c, true, probe, now);
	}
	return none;
}

/* ---- the batch queue ---- */

bool policy_queued(const struct policy_state *st)
{
	return list_linked(&st->qlink);
}

bool policy_finish(const struct policy_env *env, struct policy_state *st)
{
	queue_unlink(env, st);
	return queue_release(env, st);
}

void policy_queue_left(const struct policy_env *env, struct policy_state *st)
{
	(void)env;
	if (policy_queued(st))
		st->route->queue[QUEUE_LEFT]++;
}

size_t policy_queue_total(const struct policy_env *env)
{
	return env->router->queued;
}

static struct policy_state *queue_head(const struct gw_route *rt)
{
	struct list_node *n = list_first(&rt->waiting);

	return n ? list_entry(n, struct policy_state, qlink) : NULL;
}

/*
 * Whether a queued request may go again: one sent back by refusals waits
 * for a breaker change, or POLICY_REQUEUE_WAIT_MS, so that targets that
 * refused it are not hammered while their breakers still stand closed.
 */
static bool queue_ready(const struct policy_env *env, const struct policy_state *st, double now)
{
	return !st->requeued || st->requeue_gen != env->router->breaker_gen ||
	       now >= st->requeue_ms + POLICY_REQUEUE_WAIT_MS;
}

void policy_drain_begin(const struct gw_route *rt, struct policy_drain *d)
{
	d->left = rt->waiting.len;
}

/* Sends a queued request on again from the start of its chain, with a fresh deadline. */
static struct policy_action dequeue(const struct policy_env *env, struct policy_state *st,
				    double now)
{
	struct gw_route *rt = st->route;
	struct policy_action a;

	queue_unlink(env, st);
	if (!st->dequeued_once) {
		st->dequeued_once = true;
		rt->queue[QUEUE_DEQUEUED]++;
		latency_hist_add(&rt->qwait, now - st->queued_ms);
	}
	st->from_queue = true;
	rt->qrunning++;
	st->pos = 0;
	st->skipped = 0;
	st->nnotes = 0;
	st->forced = 0;
	st->hedged_at = 0;
	st->deadline_hit = false;
	st->budget.deadline_ms = now + env->cfg->deadline_ms;
	st->attempts_before += st->budget.attempts;
	st->budget.attempts = 0;
	a = route(env, st, now);
	a.rerouted = true;
	return a;
}

struct policy_state *policy_drain_next(const struct policy_env *env, struct gw_route *rt,
				       struct policy_drain *d, double now,
				       struct policy_action *act, bool *dequeued)
{
	const struct gw_batch *bq = &env->cfg->batch;
	struct policy_state *st = queue_head(rt);

	if (st && now >= st->queued_ms + bq->max_wait_ms) {
		queue_unlink(env, st);
		rt->queue[QUEUE_EXPIRED]++;
		*act = answer(POLICY_ERR_QUEUE_TIMEOUT, 503, "service_unavailable",
			      "batch_queue_timeout", open_end_s(st, now));
		*dequeued = false;
		return st;
	}
	/* Each request at most once a pass: one that finds no target comes back to the head. */
	if (!st || !d->left || rt->qrunning >= bq->concurrency || !queue_ready(env, st, now) ||
	    !router_route_may_admit(rt, &st->filter, now, true))
		return NULL;
	d->left--;
	*act = dequeue(env, st, now);
	*dequeued = true;
	return st;
}

struct policy_state *policy_queue_take(const struct policy_env *env, struct gw_route *rt,
				       struct policy_action *act)
{
	struct policy_state *st = queue_head(rt);

	if (!st)
		return NULL;
	queue_unlink(env, st);
	rt->queue[QUEUE_EXPIRED]++;
	*act = answer(POLICY_ERR_STOPPING, 503, "service_unavailable", "gateway_stopping", 1);
	return st;
}

double policy_queue_next_wake(const struct policy_env *env, double now)
{
	const struct router *r = env->router;
	const struct gw_batch *bq = &env->cfg->batch;
	double next = INFINITY;
	size_t i;

	for (i = 0; i < r->nroutes; i++) {
		const struct gw_route *rt = &r->routes[i];
		const struct policy_state *st = queue_head(rt);

		if (!st)
			continue;
		next = fmin(next, st->queued_ms + bq->max_wait_ms);
		if (rt->qrunning >= bq->concurrency)
			continue;	/* a request finishing drains it */
		if (!queue_ready(env, st, now))
			next = fmin(next, st->requeue_ms + POLICY_REQUEUE_WAIT_MS);
		else if (router_route_may_admit(rt, &st->filter, now, true))
			next = now;
		else
			next = fmin(next, router_route_next_open_end(rt, &st->filter));
	}
	return next;
}
