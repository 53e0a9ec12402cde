/*
 * gw: the gateway in virtual time (gw.h). The request's life follows
 * gateway/proxy.c's: policy_arrive → act (an attempt: a leg's call and
 * watchdog; a backoff: a timer; an answer) → a leg ends: its facts
 * (leg.c's leg_result) → policy_classify → policy_on_result → act again;
 * the first success wins and the other legs are cancelled as losers; a
 * client that leaves cancels them all.
 */
#include "sim/gw.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/records.h"
#include "gateway/bill.h"
#include "gateway/errmsg.h"
#include "gateway/gateway.h"
#include "runner/scenario.h"
#include "sim/world.h"

struct sim_greq;

/* One provider's active health check (gateway/probe.c's struct probe). */
struct sim_probe {
	struct sim_gw *gw;
	size_t provider;
	const struct health_config *cfg;
	struct health st;
	struct sim_timer timer;		/* the next check, or the check's timeout */
	struct sim_call call;
	int status;			/* the check's answer's; 0: none yet */
	double due_ms;			/* the current (or next) check's due time */
	char id[160];
	unsigned long long seq;
	const char *model;		/* a completion check's */
};

/* One upstream attempt (gateway/leg.c's struct leg). */
struct sim_leg {
	struct sim_greq *g;
	unsigned slot;
	struct sim_call call;
	struct sim_timer watchdog;
	bool out;			/* its call is in flight */
	bool cut;			/* the watchdog ended it */
	bool sse;			/* a 2xx event stream, for a streaming request */
	bool stalled;			/* the stall watch ended it, after the commit */
	int tokens;			/* a stream's content tokens so far */
	struct call_head head;
	struct call_tail tail;
	char message[256];
};

/* One chat request (gateway/greq.h's struct greq). */
struct sim_greq {
	struct sim_gw *gw;
	struct sim_call *c;		/* the client's */
	struct list_node link;
	struct policy_state pol;
	struct sim_leg legs[POLICY_MAX_LEGS];
	unsigned nlegs;
	struct sim_timer timer;		/* a backoff */
	struct sim_timer htimer;	/* the hedge delay */
	struct sim_timer stall;		/* a committed stream's stall watch */
	struct sim_leg *win;		/* the leg a stream committed to */
	double commit_ms;
	double last_event_ms;
	double cost_usd;
	bool billed;
	int64_t est_tokens_in;
};

static void act(struct sim_greq *g, const struct policy_action *a);
static void queue_kick(struct sim_gw *gw);
static void queue_wake(struct sim_gw *gw);
static void stream_commit(struct sim_greq *g, struct sim_leg *l);
static void stream_over(struct sim_greq *g, int curl_code);

/* ---- the answer ---- */

/* Ends g: off the policy's books, its timers stopped, freed. */
static void greq_finish(struct sim_greq *g)
{
	struct sim_gw *gw = g->gw;
	bool freed = policy_finish(&gw->env, &g->pol);

	policy_state_free(&g->pol);
	evq_stop(gw->q, &g->timer);
	evq_stop(gw->q, &g->htimer);
	evq_stop(gw->q, &g->stall);
	list_remove(&gw->reqs, &g->link);
	if (g->c)
		g->c->server_data = NULL;
	free(g);
	if (freed)
		queue_kick(gw);			/* a drain slot is free */
}

static void bill(struct sim_greq *g, const struct gw_target *t, int64_t in, int64_t out)
{
	g->cost_usd += bill_price(t->prov, in, out);
	g->billed = true;
}

/* A thrown-away attempt's bill (bill_discarded's rule): stopped when it was cut or cancelled. */
static void bill_thrown_away(struct sim_greq *g, const struct sim_leg *l, bool stopped)
{
	bool connected = l->tail.how != CALL_REFUSED;

	if (bill_discard_charged(l->head.status, stopped, connected))
		bill(g, g->pol.legs[l->slot].t, g->est_tokens_in, l->tokens);
}

/*
 * Answers the client and ends g (respond.c's respond_retry). The tail's
 * message may live in g: it is copied before g is freed.
 */
static void respond(struct sim_greq *g, int status, const struct gw_target *answered,
		    double retry_after_s, const struct call_tail *tail)
{
	struct sim_call *c = g->c;
	struct call_head h = call_head_plain(status);
	struct call_tail t = *tail;
	char msg[512];

	if (tail->message) {
		snprintf(msg, sizeof(msg), "%s", tail->message);
		t.message = msg;
	}
	/* Retry-After as "%.0f" writes it: to the nearest, ties to even. */
	h.retry_after_ms = retry_after_s > 0 ? nearbyint(retry_after_s) * 1000 : -1;
	h.attempts = g->pol.attempts_before + g->pol.budget.attempts;
	h.hedged = g->pol.hedges ? 1 : 0;
	h.provider = answered ? answered->prov->name : NULL;
	h.cost_usd = answered || g->billed ? g->cost_usd : NAN;
	g->c = NULL;
	greq_finish(g);
	call_head(c, &h);
	call_end(c, &t);
}

/* ---- legs ---- */

static struct sim_leg *leg_of_call(struct sim_call *c)
{
	return c->owner;
}

/* Takes back a leg in flight: cancelled (a loser when lost), as leg_cancel does. */
static void leg_cancel(struct sim_leg *l, bool lost)
{
	struct sim_greq *g = l->g;
	struct sim_gw *gw;
	double now;

	if (!l->out)
		return;		/* never started (l->g unset), or over */
	gw = g->gw;
	now = gw->q->now;
	l->out = false;
	evq_stop(gw->q, &l->watchdog);
	call_cancel(&l->call);
	policy_leg_off(&g->pol, l->slot);
	provider_stats_attempt(&gw->pstats[g->pol.legs[l->slot].t->provider], GW_OUT_CANCELLED,
			       now - g->pol.legs[l->slot].start_ms);
	bill_thrown_away(g, l, true);
	policy_on_cancelled(&gw->env, &g->pol, l->slot, lost, now);
}

static void cancel_others(struct sim_greq *g, const struct sim_leg *keep)
{
	unsigned i;

	evq_stop(g->gw->q, &g->htimer);
	for (i = 0; i < g->nlegs; i++) {
		if (&g->legs[i] != keep)
			leg_cancel(&g->legs[i], true);
	}
}

/* ---- a committed stream (gateway/stream.c) ---- */

/*
 * Ends the client's committed stream (stream_end): after [DONE] with the
 * cost trailer, else with an error event saying why; the target's
 * breaker and counters take the attempt's result. Then the request ends.
 */
static void stream_end(struct sim_greq *g, enum attempt_failure f)
{
	struct sim_gw *gw = g->gw;
	struct sim_leg *l = g->win;
	struct gw_target *t = g->pol.legs[l->slot].t;
	double now = gw->q->now;
	struct sim_call *c = g->c;
	struct call_tail tail;
	struct buf msg = { 0 };

	if (l->tail.tokens_in >= 0 && f == ATTEMPT_FAIL_NONE)
		bill(g, t, l->tail.tokens_in, l->tail.tokens_out);
	else
		bill(g, t, g->est_tokens_in, l->tokens);
	provider_stats_attempt(&gw->pstats[t->provider], f == ATTEMPT_FAIL_NONE ? GW_OUT_SUCCESS
			       : metrics_failure_outcome(f), now - g->pol.legs[l->slot].start_ms);
	if (policy_on_stream_end(&gw->env, &g->pol, l->slot, f, g->commit_ms -
				 g->pol.legs[l->slot].start_ms, now))
		queue_wake(gw);		/* a probe slot is free again */
	if (f == ATTEMPT_FAIL_NONE) {
		tail = call_tail_plain(CALL_DONE);
		tail.saw_done = true;
		tail.tokens_in = l->tail.tokens_in;
		tail.tokens_out = l->tail.tokens_out;
	} else {
		tail = call_tail_plain(CALL_CUT);
		tail.error_event = true;
		tail.stall_event = f == ATTEMPT_FAIL_STALL;
		if (attempt_stream_message(&msg, f, t->prov->name, gw->cfg.stall_timeout_ms,
					   l->message, ""))
			gw->err = ENOMEM;
		tail.message = msg.data;
	}
	tail.cost_usd = g->cost_usd;
	g->c = NULL;
	greq_finish(g);
	call_end(c, &tail);
	buf_free(&msg);
}

/* The committed stream's transfer is over (stream_over): its end, then the request's. */
static void stream_over(struct sim_greq *g, int curl_code)
{
	struct sim_leg *l = g->win;
	struct stream_facts s = {
		.sse = true,
		.committed = true,
		.done = l->tail.saw_done,
		.error_event = l->tail.error_event,
		.invalid = l->tail.bad_frame,
		.stalled = l->stalled,
	};

	evq_stop(g->gw->q, &g->stall);
	stream_end(g, policy_stream_failure(curl_code, &s));
}

/* The stall watch (gateway/stream.c's on_stall): no event for stall_timeout_ms ends it. */
static void on_stall(struct sim_timer *tm)
{
	struct sim_greq *g = (struct sim_greq *)((char *)tm - offsetof(struct sim_greq, stall));
	struct sim_gw *gw = g->gw;
	struct sim_leg *l = g->win;
	double again = 0;

	switch (policy_stream_watch(&gw->cfg, g->last_event_ms, false, -1, gw->q->now, &again)) {
	case POLICY_WATCH_AGAIN:
		if (evq_after(gw->q, &g->stall, again))
			gw->err = ENOMEM;
		return;
	case POLICY_WATCH_STALLED:
	case POLICY_WATCH_CLIENT_STUCK:	/* never: the simulated client takes every event */
		call_cancel(&l->call);
		l->out = false;
		policy_leg_off(&g->pol, l->slot);
		l->stalled = true;
		stream_over(g, CURLE_OK);
		return;
	}
}

/*
 * The first content (stream_commit): the client gets its headers, the
 * leg's watchdog becomes the stall watch, every other leg is cancelled.
 */
static void stream_commit(struct sim_greq *g, struct sim_leg *l)
{
	struct sim_gw *gw = g->gw;
	struct call_head h = call_head_plain(200);

	g->win = l;
	evq_stop(gw->q, &g->htimer);
	evq_stop(gw->q, &l->watchdog);
	cancel_others(g, l);
	g->commit_ms = g->last_event_ms = gw->q->now;
	policy_on_commit(&gw->env, &g->pol, l->slot, g->commit_ms);
	h.sse = true;
	h.attempts = g->pol.attempts_before + g->pol.budget.attempts;
	h.hedged = g->pol.hedges ? 1 : 0;
	h.provider = g->pol.legs[l->slot].t->prov->name;
	g->stall.fn = on_stall;
	if (evq_after(gw->q, &g->stall, gw->cfg.stall_timeout_ms))
		gw->err = ENOMEM;
	call_head(g->c, &h);
	call_tokens(g->c, l->tokens);
}

/* A leg's attempt ended (proxy_leg_end, with leg_result's facts). */
static void leg_end(struct sim_leg *l, int curl_code)
{
	struct sim_greq *g = l->g;
	struct sim_gw *gw = g->gw;
	struct gw_target *t = g->pol.legs[l->slot].t;
	double now = gw->q->now;
	struct policy_result r;
	struct policy_action a;
	struct attempt_class cls;
	enum gw_outcome out;

	l->out = false;
	evq_stop(gw->q, &l->watchdog);
	policy_leg_off(&g->pol, l->slot);
	if (g->win == l) {
		stream_over(g, curl_code);
		return;
	}
	r = (struct policy_result){
		.ms = now - g->pol.legs[l->slot].start_ms,
		.up = {
			.curl_code = curl_code,
			.cut = l->cut,
			.connected = l->tail.how != CALL_REFUSED || l->cut,
			.status = l->head.status,
		},
		.sf = {
			.sse = l->sse,
			.error_event = l->tail.error_event,
			.invalid = l->tail.bad_frame,
		},
		.retry_after_ms = l->head.retry_after_ms,
	};
	if (curl_code == CURLE_OK && r.up.status >= 200 && r.up.status <= 299)
		r.up.body_valid = l->tail.body_valid;
	cls = policy_classify(&g->pol, &r);
	out = cls.verdict == ATTEMPT_SUCCESS ? GW_OUT_SUCCESS
	    : cls.verdict == ATTEMPT_PASS_THROUGH ? GW_OUT_PASS_THROUGH
						 : metrics_failure_outcome(cls.failure);
	provider_stats_attempt(&gw->pstats[t->provider], out, r.ms);
	if (cls.verdict == ATTEMPT_FAILOVER)
		bill_thrown_away(g, l, l->cut);
	a = policy_on_result(&gw->env, &g->pol, l->slot, &r, cls, now);
	if (a.kind == POLICY_PASS) {
		struct call_tail tail = l->tail;

		if (a.wake_queue)
			queue_wake(gw);
		cancel_others(g, l);
		if (r.up.body_valid)
			bill(g, t, l->tail.tokens_in, l->tail.tokens_out);
		tail.message = l->message[0] ? l->message : NULL;
		respond(g, (int)r.up.status, t, 0, &tail);
		return;
	}
	if (!g->pol.nactive)
		evq_stop(gw->q, &g->htimer);
	act(g, &a);
}

static void on_leg_watchdog(struct sim_timer *tm)
{
	struct sim_leg *l = (struct sim_leg *)((char *)tm - offsetof(struct sim_leg, watchdog));

	call_cancel(&l->call);
	l->cut = true;
	leg_end(l, CURLE_OPERATION_TIMEDOUT);
}

static void on_leg_head(struct sim_call *c, const struct call_head *h)
{
	struct sim_leg *l = leg_of_call(c);

	l->head = *h;
	l->sse = l->g->pol.stream && h->sse && h->status >= 200 && h->status <= 299;
}

static void on_leg_tokens(struct sim_call *c, int total)
{
	struct sim_leg *l = leg_of_call(c);
	struct sim_greq *g = l->g;

	l->tokens = total;
	if (g->win == l) {
		g->last_event_ms = g->gw->q->now;
		call_tokens(g->c, total);
	} else if (!g->pol.committed && l->sse && total > 0) {
		stream_commit(g, l);
	}
}

static void on_leg_end(struct sim_call *c, const struct call_tail *t)
{
	struct sim_leg *l = leg_of_call(c);
	int code = CURLE_OK;

	l->tail = *t;
	snprintf(l->message, sizeof(l->message), "%s", t->message ? t->message : "");
	l->tail.message = NULL;
	if (t->how == CALL_REFUSED)
		code = CURLE_COULDNT_CONNECT;
	else if (t->how == CALL_RESET)
		code = CURLE_RECV_ERROR;
	else if (t->how == CALL_CUT)
		code = CURLE_PARTIAL_FILE;
	leg_end(l, code);
}

static const struct call_client_ops leg_ops = {
	.head = on_leg_head,
	.tokens = on_leg_tokens,
	.end = on_leg_end,
};

/* Starts a POLICY_START action's attempt (leg_start). */
static void leg_start(struct sim_greq *g, const struct policy_action *a)
{
	struct sim_gw *gw = g->gw;
	struct sim_leg *l = &g->legs[a->slot];
	const struct sim_call *cc = g->c;

	l->g = g;
	l->slot = a->slot;
	l->cut = false;
	l->sse = false;
	l->stalled = false;
	l->tokens = 0;
	l->head = call_head_plain(0);
	l->tail = call_tail_plain(CALL_DONE);
	l->message[0] = '\0';
	l->call = (struct sim_call){
		.id = cc->id,
		.model = g->pol.legs[a->slot].t->model,
		.stream = g->pol.stream,
		.prompt_chars = cc->prompt_chars,
		.max_tokens = cc->max_tokens,
		.client = &leg_ops,
		.owner = l,
	};
	policy_started(&g->pol, a->slot);
	l->out = true;
	l->watchdog.fn = on_leg_watchdog;
	if (evq_after(gw->q, &l->watchdog, fmax(1, ceil(a->timeout_ms))) ||
	    call_send(&l->call, gw->q, gw->net, gw->upstream[a->t->provider]))
		gw->err = ENOMEM;
}

/* ---- the policy's actions ---- */

static void on_backoff(struct sim_timer *t)
{
	struct sim_greq *g = (struct sim_greq *)((char *)t - offsetof(struct sim_greq, timer));
	struct policy_action a = policy_backoff_fired(&g->gw->env, &g->pol, g->gw->q->now);

	act(g, &a);
}

static void on_hedge(struct sim_timer *t)
{
	struct sim_greq *g = (struct sim_greq *)((char *)t - offsetof(struct sim_greq, htimer));
	struct policy_action a;

	if (!g->pol.nactive)
		return;
	a = policy_hedge_fired(&g->gw->env, &g->pol, g->gw->q->now);
	act(g, &a);
}

/* The gateway's own error answer (respond_error): its status, message and Retry-After. */
static void respond_own(struct sim_greq *g, const struct policy_action *a)
{
	struct call_tail tail = call_tail_plain(CALL_DONE);
	struct buf msg = { 0 };

	if (errmsg_write(&msg, a, &g->pol, &g->gw->cfg, g->pol.route->alias->name, NULL))
		g->gw->err = ENOMEM;
	tail.message = msg.data ? msg.data : "";
	respond(g, a->status, NULL, a->retry_after_s, &tail);
	buf_free(&msg);
}

/* Carries out what the policy said (proxy_act). */
static void act(struct sim_greq *g, const struct policy_action *a)
{
	if (a->wake_queue)
		queue_wake(g->gw);	/* a probe slot is free again */
	switch (a->kind) {
	case POLICY_START:
		leg_start(g, a);
		/*
		 * The hedge timer fires as late as a timer does on the machine:
		 * the percentile it is set to is of attempts that were as late
		 * (a real gateway hedges far fewer than 5% of requests at p95).
		 */
		if (a->hedge_after_ms >= 0 &&
		    evq_at(g->gw->q, &g->htimer,
			   call_timer_fire(&g->gw->clock, g->gw->q->now + ceil(a->hedge_after_ms))))
			g->gw->err = ENOMEM;
		break;
	case POLICY_BACKOFF:
		if (evq_after(g->gw->q, &g->timer, ceil(a->delay_ms)))
			g->gw->err = ENOMEM;
		break;
	case POLICY_ANSWER:
		evq_stop(g->gw->q, &g->htimer);
		respond_own(g, a);
		break;
	case POLICY_QUEUE:
		queue_kick(g->gw);
		break;
	case POLICY_PASS:
	case POLICY_NONE:
		break;
	}
}

/* ---- the batch queue (gateway/queue.c) ---- */

/* Expires the route's old requests, then sends on what its targets and concurrency allow. */
static void drain_route(struct sim_gw *gw, struct gw_route *rt, double now)
{
	struct policy_drain d;
	struct policy_action a;
	struct policy_state *st;
	bool dequeued;

	policy_drain_begin(rt, &d);
	while ((st = policy_drain_next(&gw->env, rt, &d, now, &a, &dequeued)))
		act(list_entry(st, struct sim_greq, pol), &a);
}

static void on_queue_timer(struct sim_timer *t)
{
	struct sim_gw *gw = (struct sim_gw *)((char *)t - offsetof(struct sim_gw, qtimer));
	size_t i;

	gw->qfired_ms = gw->q->now;
	for (i = 0; i < gw->router.nroutes; i++) {
		if (!list_empty(&gw->router.routes[i].waiting))
			drain_route(gw, &gw->router.routes[i], gw->q->now);
	}
	queue_kick(gw);
}

static void queue_kick(struct sim_gw *gw)
{
	double next;

	if (!policy_queue_total(&gw->env)) {
		evq_stop(gw->q, &gw->qtimer);
		return;
	}
	next = policy_queue_next_wake(&gw->env, gw->q->now);
	if (!isfinite(next))
		return;
	/*
	 * As queue.c arms it: whole milliseconds, rounded up. A wake-up due
	 * now when the timer already ran at this instant goes a millisecond
	 * on, as the real loop's next turn does: the same instant again would
	 * find the same queue.
	 */
	next = gw->q->now + ceil(fmax(0, next - gw->q->now));
	if (next <= gw->qfired_ms)
		next = gw->qfired_ms + 1;
	if (evq_at(gw->q, &gw->qtimer, next))
		gw->err = ENOMEM;
}

static void queue_wake(struct sim_gw *gw)
{
	double at = gw->q->now > gw->qfired_ms ? gw->q->now : gw->qfired_ms + 1;

	if (policy_queue_total(&gw->env) && evq_at(gw->q, &gw->qtimer, at))
		gw->err = ENOMEM;
}

/* The router's listener: a breaker that closed or went half-open may take a queued request. */
static void on_breaker_wake(void *arg, struct gw_target *t, const struct breaker_change *chg,
			     const struct change_origin *origin)
{
	(void)t;
	(void)origin;
	if (chg->to != BREAKER_OPEN)
		queue_wake(arg);
}

/* ---- health checks (gateway/probe.c) ---- */

static void probe_again(struct sim_probe *p);

/* A check ended (probe_on_done): ok when it answered a 2xx in time. */
static void probe_done(struct sim_probe *p, bool ok, bool timed_out)
{
	struct sim_gw *gw = p->gw;
	enum health_change ch;

	gw->pstats[p->provider].health_checks[ok]++;
	ch = health_result(&p->st, p->cfg, ok);
	gw->pstats[p->provider].unhealthy = !p->st.healthy;
	gw->pstats[p->provider].check_slow = timed_out;
	router_apply_health(&gw->router, p->provider, ch, ok, ok ? p->st.passes : p->st.fails,
			    p->st.healthy, gw->q->now, &gw->rng_breaker);
	probe_again(p);
}

static void on_probe_head(struct sim_call *c, const struct call_head *h)
{
	struct sim_probe *p = c->owner;

	p->status = h->status;
}

static void on_probe_tokens(struct sim_call *c, int total)
{
	(void)c;
	(void)total;
}

static void on_probe_end(struct sim_call *c, const struct call_tail *t)
{
	struct sim_probe *p = c->owner;

	evq_stop(p->gw->q, &p->timer);
	probe_done(p, t->how == CALL_DONE && p->status >= 200 && p->status <= 299, false);
}

static const struct call_client_ops probe_ops = {
	.head = on_probe_head,
	.tokens = on_probe_tokens,
	.end = on_probe_end,
};

static void on_probe_timer(struct sim_timer *tm);

/* The check's timeout (CURLOPT_TIMEOUT_MS): it failed, slow. */
static void on_probe_timeout(struct sim_timer *tm)
{
	struct sim_probe *p = (struct sim_probe *)((char *)tm - offsetof(struct sim_probe, timer));

	call_cancel(&p->call);
	probe_done(p, false, true);
}

/* The next check: on the grid of the last one's due time (probe.c's probe_again). */
static void probe_again(struct sim_probe *p)
{
	p->due_ms = health_next_due(&p->st, p->cfg, p->due_ms, p->gw->q->now);
	p->timer.fn = on_probe_timer;
	if (evq_at(p->gw->q, &p->timer, p->due_ms))
		p->gw->err = ENOMEM;
}

/* A check is due: GET /models, or a 1-token completion, within timeout_ms. */
static void on_probe_timer(struct sim_timer *tm)
{
	struct sim_probe *p = (struct sim_probe *)((char *)tm - offsetof(struct sim_probe, timer));
	struct sim_gw *gw = p->gw;

	snprintf(p->id, sizeof(p->id), REC_CHECK_ID_PREFIX "%s-%llu",
		 gw->cfg.providers[p->provider].name, ++p->seq);
	p->call = (struct sim_call){
		.id = p->id,
		.models = p->cfg->request != HEALTH_COMPLETION,
		.model = p->model,
		.prompt_chars = 4,		/* "ping" */
		.max_tokens = p->cfg->request == HEALTH_COMPLETION ? 1 : -1,
		.client = &probe_ops,
		.owner = p,
	};
	p->status = 0;
	p->timer.fn = on_probe_timeout;
	if (evq_after(gw->q, &p->timer, fmax(1, ceil(p->cfg->timeout_ms))) ||
	    call_send(&p->call, gw->q, gw->net, gw->upstream[p->provider]))
		gw->err = ENOMEM;
}

/* The router's listener: probe.c's on_breaker_change — suspect, the next check pulled in. */
static void on_breaker_pace(void *arg, struct gw_target *t, const struct breaker_change *chg,
			    const struct change_origin *origin)
{
	struct sim_gw *gw = arg;
	struct sim_probe *p = &gw->probes[t->provider];
	double due;

	(void)chg;
	(void)origin;
	if (!p->gw)
		return;		/* no health_check */
	due = health_suspect(&p->st, router_provider_suspect(&gw->router, p->provider), p->due_ms,
			     gw->q->now);
	if (due != p->due_ms && p->timer.fn != on_probe_timeout) {
		p->due_ms = due;
		if (evq_at(gw->q, &p->timer, p->due_ms))
			gw->err = ENOMEM;
	}
}

/* Every provider with a health_check: its first check at once (probe_start_all). */
static int probes_start(struct sim_gw *gw)
{
	size_t i;
	size_t j;

	gw->probes = calloc(gw->cfg.nproviders ? gw->cfg.nproviders : 1, sizeof(*gw->probes));
	if (!gw->probes)
		return -ENOMEM;
	gw->nprobes = gw->cfg.nproviders;
	for (i = 0; i < gw->cfg.nproviders; i++) {
		struct sim_probe *p = &gw->probes[i];

		if (!gw->cfg.providers[i].health.enabled)
			continue;
		p->gw = gw;
		p->provider = i;
		p->cfg = &gw->cfg.providers[i].health;
		health_init(&p->st);
		for (j = 0; j < gw->router.ntargets && !p->model; j++)
			if (gw->router.targets[j].provider == i)
				p->model = gw->router.targets[j].model;
		/* As a real run's gateway (--t0): t0 + a phase drawn from the seed. */
		p->due_ms = gw->q->now + rng_uniform(&gw->rng_health) * p->cfg->interval_ms;
		p->timer.fn = on_probe_timer;
		if (evq_at(gw->q, &p->timer, p->due_ms))
			return -ENOMEM;
	}
	gw->probe_pace.on_change = on_breaker_pace;
	gw->probe_pace.arg = gw;
	router_listen(&gw->router, &gw->probe_pace);
	return 0;
}

/* ---- the server ---- */

static bool on_request(struct sim_server *s, struct sim_call *c)
{
	struct sim_gw *gw = (struct sim_gw *)s;
	struct gw_route *route = router_find(&gw->router, c->model ? c->model : "");
	struct sim_greq *g;
	struct policy_action a;
	unsigned nlegs;

	if (!route) {
		/* proxy_chat's 404 model_not_found, straight away. */
		struct call_head h = call_head_plain(404);
		struct call_tail t = call_tail_plain(CALL_DONE);
		char msg[256];

		errmsg_unknown_model(msg, sizeof(msg), c->model ? c->model : "");
		h.attempts = 0;
		h.hedged = 0;
		t.message = msg;
		call_head(c, &h);
		call_end(c, &t);
		return true;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		gw->err = ENOMEM;
		return false;
	}
	nlegs = route->alias->hedge.enabled ? 1 + route->alias->hedge.max : 1;
	g->gw = gw;
	g->c = c;
	g->nlegs = nlegs;
	g->timer.fn = on_backoff;
	g->htimer.fn = on_hedge;
	g->est_tokens_in = bill_prompt_estimate(c->prompt_chars);
	c->server_data = g;
	list_push_front(&gw->reqs, &g->link);
	a = policy_arrive(&gw->env, &g->pol, route, NULL,
			  c->klass && strcasecmp(c->klass, "batch") == 0, c->stream, false, nlegs,
			  gw->q->now + gw->cfg.deadline_ms, gw->q->now);
	act(g, &a);
	return true;
}

/* The client left (proxy_cancel). */
static void on_cancel(struct sim_server *s, struct sim_call *c)
{
	struct sim_greq *g = c->server_data;
	unsigned i;

	(void)s;
	if (!g)
		return;
	g->c = NULL;
	g->win = NULL;
	if (policy_queued(&g->pol))
		policy_queue_left(&g->gw->env, &g->pol);
	evq_stop(g->gw->q, &g->timer);
	evq_stop(g->gw->q, &g->htimer);
	evq_stop(g->gw->q, &g->stall);
	for (i = 0; i < g->nlegs; i++)
		leg_cancel(&g->legs[i], false);
	greq_finish(g);
}

static const struct call_server_ops gw_ops = {
	.request = on_request,
	.cancel = on_cancel,
};

/* The router's listener: one events.jsonl line per breaker change. */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
			       const struct change_origin *origin)
{
	struct sim_gw *gw = arg;
	struct buf line = { 0 };

	(void)origin;	/* a simulated gateway is one replica */
	if (!gw->events || gw->err)
		return;
	if (event_line(&line, (double)SIM_T0_UNIX_MS + gw->q->now, t->prov->name, t->model,
		       event_state_name(router_event_state(chg->from)),
		       event_state_name(router_event_state(chg->to)), chg->reason, NULL))
		gw->err = ENOMEM;
	else if (fwrite(line.data, 1, line.len, gw->events) != line.len)
		gw->err = errno ? errno : EIO;
	buf_free(&line);
}

int gw_start(struct sim_gw *g, const struct scenario *sc, const struct sc_setup *st,
	     struct evq *q, const struct sim_net *net, const struct sim_clock *clock,
	     struct sim_server **servers, const char *dir, char *err)
{
	char (*urls)[48] = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*urls));
	const char **url_ptrs = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*url_ptrs));
	char *text = NULL;
	cJSON *root = NULL;
	size_t i;
	size_t j;
	int rc = -ENOMEM;

	memset(g, 0, sizeof(*g));
	g->srv.ops = &gw_ops;
	g->srv.handle_ms = sc->sim.gateway_ms;
	g->q = q;
	g->net = net;
	list_init(&g->reqs);
	snprintf(err, CFG_ERR_LEN, "out of memory");
	if (!urls || !url_ptrs)
		goto out;
	/* Each provider a URL of its own, for the config's {upstream.NAME}. */
	for (i = 0; i < sc->nproviders; i++) {
		snprintf(urls[i], sizeof(urls[i]), "http://127.0.0.1:%zu/v1", 20000 + i);
		url_ptrs[i] = urls[i];
	}
	text = scenario_gateway_config(sc, st, "127.0.0.1:1", url_ptrs, NULL, NULL,
				       err);
	root = text ? cJSON_Parse(text) : NULL;
	if (!root)
		goto out;
	rc = gw_config_read_json(root, sc->path, &g->cfg, err);
	if (rc)
		goto out;
	rc = -ENOTSUP;
	g->upstream = calloc(g->cfg.nproviders ? g->cfg.nproviders : 1, sizeof(*g->upstream));
	g->pstats = calloc(g->cfg.nproviders ? g->cfg.nproviders : 1, sizeof(*g->pstats));
	if (!g->upstream || !g->pstats) {
		rc = -ENOMEM;
		snprintf(err, CFG_ERR_LEN, "out of memory");
		goto out;
	}
	for (i = 0; i < g->cfg.nproviders; i++) {
		const struct gw_provider *p = &g->cfg.providers[i];

		for (j = 0; j < sc->nproviders && strcmp(p->base_url, urls[j]); j++)
			;
		if (j == sc->nproviders) {
			snprintf(err, CFG_ERR_LEN, "setup %s: provider %s's base_url %s is none of "
				 "the scenario's providers ({upstream.NAME}): not simulated", st->name,
				 p->name, p->base_url);
			goto out;
		}
		g->upstream[i] = servers[j];
	}
	rc = -ENOMEM;
	snprintf(err, CFG_ERR_LEN, "out of memory");
	if (router_init(&g->router, &g->cfg, q->now))
		goto out;
	g->router_ready = true;
	rng_seed_stream(&g->rng_retry, sc->seed, GW_RNG_RETRY);
	rng_seed_stream(&g->rng_breaker, sc->seed, GW_RNG_BREAKER);
	rng_seed_stream(&g->rng_health, sc->seed, GW_RNG_HEALTH);
	g->clock = *clock;
	g->env = (struct policy_env){
		.router = &g->router,
		.cfg = &g->cfg,
		.pstats = g->pstats,
		.rng_retry = &g->rng_retry,
		.rng_breaker = &g->rng_breaker,
	};
	g->events_log.on_change = on_breaker_change;
	g->events_log.arg = g;
	router_listen(&g->router, &g->events_log);
	g->queue_wake.on_change = on_breaker_wake;
	g->queue_wake.arg = g;
	router_listen(&g->router, &g->queue_wake);
	g->qtimer.fn = on_queue_timer;
	g->qfired_ms = -1;
	g->events_path = buf_aprintf("%s/" REC_EVENTS, dir);
	text = text ? (free(text), NULL) : NULL;
	text = g->events_path ? buf_aprintf("%s" REC_TMP_SUFFIX, g->events_path) : NULL;
	if (!text)
		goto out;
	g->events = fopen(text, "w");
	if (!g->events) {
		rc = -errno;
		snprintf(err, CFG_ERR_LEN, "cannot create %s: %s", text, strerror(-rc));
		goto out;
	}
	rc = probes_start(g);
	if (rc)
		snprintf(err, CFG_ERR_LEN, "out of memory");
out:
	cJSON_Delete(root);
	free(text);
	free(url_ptrs);
	free(urls);
	return rc;
}

int gw_finish(struct sim_gw *g, char *err)
{
	char *tmp = g->events_path ? buf_aprintf("%s" REC_TMP_SUFFIX, g->events_path) : NULL;
	int rc = 0;

	if (g->err) {
		snprintf(err, CFG_ERR_LEN, "the gateway's events: %s", strerror(g->err));
		rc = -g->err;
	} else if (!tmp) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		rc = -ENOMEM;
	} else if (g->events && fclose(g->events)) {
		rc = -errno;
		snprintf(err, CFG_ERR_LEN, "cannot write %s: %s", tmp, strerror(-rc));
	} else if (rename(tmp, g->events_path)) {
		rc = -errno;
		snprintf(err, CFG_ERR_LEN, "cannot rename %s: %s", tmp, strerror(-rc));
	}
	if (!rc)
		g->events = NULL;
	free(tmp);
	return rc;
}

void gw_free(struct sim_gw *g)
{
	while (!list_empty(&g->reqs)) {
		struct sim_greq *r = list_entry(g->reqs.head.next, struct sim_greq, link);

		on_cancel(&g->srv, r->c ? r->c : &(struct sim_call){ .server_data = r });
	}
	for (size_t i = 0; g->probes && i < g->nprobes; i++) {
		if (!g->probes[i].gw)
			continue;
		evq_stop(g->q, &g->probes[i].timer);
		call_cancel(&g->probes[i].call);
	}
	free(g->probes);
	evq_stop(g->q, &g->qtimer);
	if (g->events)
		fclose(g->events);
	free(g->events_path);
	if (g->router_ready)
		router_free(&g->router);
	free(g->upstream);
	free(g->pstats);
	gw_config_free(&g->cfg);
}
