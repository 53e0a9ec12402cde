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

#include "common/buf.h"
#include "common/cfg.h"
#include "common/records.h"
#include "gateway/bill.h"
#include "gateway/gateway.h"
#include "runner/scenario.h"
#include "sim/world.h"

struct sim_greq;

/* One upstream attempt (gateway/leg.c's struct leg). */
struct sim_leg {
	struct sim_greq *g;
	unsigned slot;
	struct sim_call call;
	struct sim_timer watchdog;
	bool out;			/* its call is in flight */
	bool cut;			/* the watchdog ended it */
	struct call_head head;
	bool got_head;
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
	double cost_usd;
	bool billed;
	int64_t est_tokens_in;
};

static void act(struct sim_greq *g, const struct policy_action *a);

/* ---- the answer ---- */

/* Ends g: off the policy's books, its timers stopped, freed. */
static void greq_finish(struct sim_greq *g)
{
	struct sim_gw *gw = g->gw;

	policy_finish(&gw->env, &g->pol);
	policy_state_free(&g->pol);
	evq_stop(gw->q, &g->timer);
	evq_stop(gw->q, &g->htimer);
	list_remove(&gw->reqs, &g->link);
	if (g->c)
		g->c->server_data = NULL;
	free(g);
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
		bill(g, g->pol.legs[l->slot].t, g->est_tokens_in, 0);
}

/* Answers the client and ends g (respond.c's respond_retry). */
static void respond(struct sim_greq *g, int status, const struct gw_target *answered,
		    double retry_after_s, const struct call_tail *tail)
{
	struct sim_call *c = g->c;
	struct call_head h = call_head_plain(status);

	h.retry_after_ms = retry_after_s > 0 ? round(retry_after_s) * 1000 : -1;
	h.attempts = g->pol.attempts_before + g->pol.budget.attempts;
	h.hedged = g->pol.hedges ? 1 : 0;
	h.provider = answered ? answered->prov->name : NULL;
	h.cost_usd = answered || g->billed ? g->cost_usd : NAN;
	g->c = NULL;
	greq_finish(g);
	call_head(c, &h);
	call_end(c, tail);
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
	struct sim_gw *gw = g->gw;
	double now = gw->q->now;

	if (!l->out)
		return;
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
	r = (struct policy_result){
		.ms = now - g->pol.legs[l->slot].start_ms,
		.up = {
			.curl_code = curl_code,
			.cut = l->cut,
			.connected = l->tail.how != CALL_REFUSED || l->cut,
			.status = l->got_head ? l->head.status : 0,
		},
		.retry_after_ms = l->got_head ? l->head.retry_after_ms : -1,
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
	l->got_head = true;
}

static void on_leg_tokens(struct sim_call *c, int total)
{
	(void)c;
	(void)total;
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
	l->got_head = false;
	l->head = call_head_plain(0);
	l->tail = call_tail_plain(CALL_DONE);
	l->message[0] = '\0';
	l->call = (struct sim_call){
		.id = cc->id,
		.stream = false,
		.prompt_tokens = cc->prompt_tokens,
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

/* The gateway's own error answer (respond_error): its status, type, code and Retry-After. */
static void respond_own(struct sim_greq *g, const struct policy_action *a)
{
	struct call_tail tail = call_tail_plain(CALL_DONE);

	tail.message = a->code ? a->code : a->type;
	respond(g, a->status, NULL, a->retry_after_s, &tail);
}

/* Carries out what the policy said (proxy_act). */
static void act(struct sim_greq *g, const struct policy_action *a)
{
	switch (a->kind) {
	case POLICY_START:
		leg_start(g, a);
		if (a->hedge_after_ms >= 0 && evq_after(g->gw->q, &g->htimer, ceil(a->hedge_after_ms)))
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
		/* Batch requests are refused when the gateway is set up (gw_start). */
	case POLICY_PASS:
	case POLICY_NONE:
		break;
	}
}

/* ---- the server ---- */

static bool on_request(struct sim_server *s, struct sim_call *c)
{
	struct sim_gw *gw = (struct sim_gw *)s;
	struct gw_route *route = router_find(&gw->router, c->model ? c->model : "");
	struct sim_greq *g;
	struct policy_action a;
	unsigned nlegs;

	if (c->stream) {
		gw->err = ENOTSUP;
		return false;
	}
	if (!route) {
		/* proxy_chat's 404 model_not_found, straight away. */
		struct call_head h = call_head_plain(404);
		struct call_tail t = call_tail_plain(CALL_DONE);

		h.attempts = 0;
		h.hedged = 0;
		t.message = "model_not_found";
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
	g->est_tokens_in = c->prompt_tokens;
	c->server_data = g;
	list_push_front(&gw->reqs, &g->link);
	a = policy_arrive(&gw->env, &g->pol, route, NULL, false, false, false, nlegs,
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
	evq_stop(g->gw->q, &g->timer);
	evq_stop(g->gw->q, &g->htimer);
	for (i = 0; i < g->nlegs; i++)
		leg_cancel(&g->legs[i], false);
	greq_finish(g);
}

static const struct call_server_ops gw_ops = {
	.request = on_request,
	.cancel = on_cancel,
};

/* The router's listener: one events.jsonl line per breaker change. */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg)
{
	struct sim_gw *gw = arg;
	struct buf line = { 0 };

	if (!gw->events || gw->err)
		return;
	if (event_line(&line, (double)SIM_T0_UNIX_MS + gw->q->now, t->prov->name, t->model,
		       event_state_name(router_event_state(chg->from)),
		       event_state_name(router_event_state(chg->to)), chg->reason))
		gw->err = ENOMEM;
	else if (fwrite(line.data, 1, line.len, gw->events) != line.len)
		gw->err = errno ? errno : EIO;
	buf_free(&line);
}

int gw_start(struct sim_gw *g, const struct scenario *sc, const struct sc_setup *st,
	     struct evq *q, const struct sim_net *net, struct sim_server **servers,
	     const char *dir, char *err)
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
	text = scenario_gateway_config(sc, st, "127.0.0.1:1", url_ptrs, err);
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

		if (p->health.enabled) {
			snprintf(err, CFG_ERR_LEN, "setup %s: provider %s's health checks are not "
				 "simulated yet", st->name, p->name);
			goto out;
		}
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
	rc = 0;
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

	if (g->err == ENOTSUP) {
		snprintf(err, CFG_ERR_LEN, "streaming requests through the gateway are not simulated "
			 "yet");
		rc = -ENOTSUP;
	} else if (g->err) {
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
	if (g->events)
		fclose(g->events);
	free(g->events_path);
	if (g->router_ready)
		router_free(&g->router);
	free(g->upstream);
	free(g->pstats);
	gw_config_free(&g->cfg);
}
