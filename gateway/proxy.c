/*
 * proxy: the life of one chat completion request, reading straight down —
 * the shell around the policy (policy.c), which makes every decision:
 * proxy_chat (validate, find the route) → policy_arrive → proxy_act
 * carries out what it says (an attempt: leg_start; a backoff: on_backoff;
 * the queue; an answer) → a leg ends (proxy_leg_end: the facts go to
 * policy_on_result, whose answer is carried out in turn) → respond →
 * greq_finish. A hedge timer (on_hedge) asks policy_hedge_fired; the
 * first success wins and the other legs are cancelled. A client that
 * leaves ends it in proxy_cancel. The transfers are leg.c's, a stream's
 * relay stream.c's, the answers respond.c's, the queue's timer queue.c's.
 */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/numfmt.h"
#include "gateway/anthropic.h"
#include "gateway/bill.h"
#include "gateway/contract.h"
#include "gateway/degraded.h"
#include "gateway/errmsg.h"
#include "gateway/gateway.h"
#include "gateway/greq.h"
#include "gateway/leg.h"
#include "gateway/proxy.h"
#include "gateway/queue.h"
#include "gateway/respond.h"
#include "gateway/stream.h"

static void on_hedge(uv_timer_t *t);
static void on_backoff(uv_timer_t *t);

/* Arms the hedge timer after a leg started: the next hedge in delay_ms. */
static void hedge_arm(struct greq *g, double delay_ms)
{
	if (!g->htimer_ready) {
		uv_timer_init(g->gw->loop, &g->htimer);
		g->htimer.data = g;
		g->htimer_ready = true;
	}
	uv_timer_start(&g->htimer, on_hedge, (uint64_t)ceil(delay_ms), 0);
}

void proxy_act(struct greq *g, const struct policy_action *a, const char *why)
{
	if (a->why)
		log_debug("request %s: %s", g->id, a->why);
	if (a->rerouted)
		greq_set_state(g, GREQ_ROUTING);
	if (a->wake_queue)
		proxy_queue_wake(g->gw);	/* a probe slot is free again */
	switch (a->kind) {
	case POLICY_START:
		if (a->forced)
			log_debug("request %s: every target open; trying %s/%s", g->id,
				  a->t->prov->name, a->t->model);
		if (leg_start(g, a) == 0 && a->hedge_after_ms >= 0)
			hedge_arm(g, a->hedge_after_ms);
		break;
	case POLICY_BACKOFF:
		log_debug("request %s: retrying %s/%s in %.0f ms", g->id, a->t->prov->name,
			  a->t->model, a->delay_ms);
		greq_set_state(g, GREQ_BACKOFF);
		uv_timer_start(&g->timer, on_backoff, (uint64_t)ceil(a->delay_ms), 0);
		break;
	case POLICY_QUEUE:
		greq_set_state(g, GREQ_QUEUED);
		log_debug("request %s: queued (batch), %zu waiting", g->id, g->route->waiting.len);
		queue_kick(g->gw);
		break;
	case POLICY_ANSWER:
		respond_error(g, a, why);
		break;
	case POLICY_PASS:	/* proxy_leg_end's own: it holds the answer */
	case POLICY_NONE:
		break;
	}
}

static void on_backoff(uv_timer_t *t)
{
	struct greq *g = t->data;
	struct policy_action a = policy_backoff_fired(&g->gw->pol, &g->pol, gw_now_ms());

	proxy_act(g, &a, NULL);
}

/* The hedge delay passed and no leg has answered: one more, where the policy says. */
static void on_hedge(uv_timer_t *t)
{
	struct greq *g = t->data;
	struct policy_action a;

	if (g->state != GREQ_ATTEMPT)
		return;
	a = policy_hedge_fired(&g->gw->pol, &g->pol, gw_now_ms());
	proxy_act(g, &a, NULL);
}

/* Cancels every leg but keep (NULL: all) that is still in flight, as losers. */
static void cancel_others(struct greq *g, const struct leg *keep)
{
	size_t i;

	greq_htimer_stop(g);
	for (i = 0; i < g->nlegs; i++) {
		if (&g->legs[i] != keep)
			leg_cancel(&g->legs[i], true);
	}
}

/*
 * Leg l's answer, a chat completion, broke the request's contract: billed
 * in full (the provider did the work: its usage), told to the log and the
 * events file; the policy then treats it as a failed attempt.
 */
static void contract_broken(struct greq *g, struct leg *l, int64_t tin, int64_t tout)
{
	const struct gw_target *t = l->p->t;

	g->violations++;
	bill_tokens(g, l, tin, tout, true);
	log_info("request %s: %s/%s broke its output contract: %s", g->id, t->prov->name, t->model,
		 l->contract_why);
	gateway_event_contract(g->gw, t->prov->name, t->model, g->id, l->contract_why);
}

void proxy_leg_end(struct leg *l, CURLcode code)
{
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	struct gw_target *t = l->p->t;
	double now = gw_now_ms();
	struct policy_result r;
	struct policy_action a;
	struct attempt_class c;
	enum gw_outcome out;
	const char *why;
	int64_t tin;
	int64_t tout;

	leg_off(l);
	if (g->pol.committed && l == g->stream.win) {
		stream_over(g, code);
		return;
	}
	if (l->doomed) {
		/* A loser that ended on its own before on_doomed took it back. */
		uv_timer_stop(&l->timer);
		leg_cancelled(l, true);
		return;
	}
	why = leg_result(l, code, now, &r, &tin, &tout);
	if (r.local) {
		/* The gateway's own failure: counted, not held against the provider. */
		if (r.over_budget) {
			provider_stats_attempt(&gw->pstats[t->provider], GW_OUT_CANCELLED, r.ms);
			bill_discarded(g, l, false);
		}
		gateway_overloaded(gw, why, t->prov->name);
		a = policy_on_result(&gw->pol, &g->pol, l->slot, &r, (struct attempt_class){ 0 },
				     now);
		if (a.kind == POLICY_ANSWER)
			greq_htimer_stop(g);
		proxy_act(g, &a, why);
		return;
	}
	c = policy_classify(&g->pol, &r);
	out = c.verdict == ATTEMPT_SUCCESS ? GW_OUT_SUCCESS
	    : c.verdict == ATTEMPT_PASS_THROUGH ? GW_OUT_PASS_THROUGH
					       : metrics_failure_outcome(c.failure);
	provider_stats_attempt(&gw->pstats[t->provider], out, r.ms);
	log_debug("request %s: %s/%s %s%s%s (HTTP %ld) in %.1f ms", g->id, t->prov->name,
		  t->model, metrics_outcome_name(out), l->errbuf[0] ? ": " : "", l->errbuf,
		  r.up.status, r.ms);
	if (c.failure == ATTEMPT_FAIL_CONTRACT)
		contract_broken(g, l, tin, tout);
	else if (c.verdict == ATTEMPT_FAILOVER)
		bill_discarded(g, l, l->cut);	/* now: the policy may start the next attempt in l */
	a = policy_on_result(&gw->pol, &g->pol, l->slot, &r, c, now);
	if (a.kind == POLICY_PASS) {
		/* The answer: every other leg lost. */
		if (a.wake_queue)
			proxy_queue_wake(gw);
		cancel_others(g, l);
		bill_tokens(g, l, tin, tout, false);
		if (c.verdict == ATTEMPT_SUCCESS && g->ckey.len)
			degraded_store(&gw->degraded, (size_t)(g->route - gw->router.routes), &g->ckey,
				       l->resp.data ? l->resp.data : "", l->resp.len, now);
		respond(g, (int)r.up.status, l->ctype[0] ? l->ctype : "application/json",
			l->resp.data ? l->resp.data : "", l->resp.len, t);
		return;
	}
	if (!g->pol.nactive)
		greq_htimer_stop(g);
	proxy_act(g, &a, NULL);
}

void proxy_on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct leg *l = NULL;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&l);
	uv_timer_stop(&l->timer);
	proxy_leg_end(l, result);
}

static void on_client_abort(struct http_exchange *ex, void *data, enum http_abort_reason why)
{
	struct greq *g = data;

	(void)ex;
	(void)why;
	g->ex = NULL;
	proxy_cancel(g);
}

void proxy_cancel(struct greq *g)
{
	struct gateway *gw = g->gw;
	struct http_exchange *ex = g->ex;
	size_t i;

	if (g->state == GREQ_DONE)
		return;
	uv_timer_stop(&g->timer);
	greq_htimer_stop(g);
	if (g->state == GREQ_QUEUED)
		policy_queue_left(&gw->pol, &g->pol);
	for (i = 0; i < g->nlegs; i++) {
		struct leg *l = &g->legs[i];

		if (!l->p->active)
			continue;
		if (g->stream.ended && l == g->stream.win) {
			/* Its client's stream is over: only the transfer is left to take back. */
			uv_timer_stop(&l->timer);
			curl_uv_remove(&gw->cu, l->easy);
			leg_off(l);
			policy_release(&g->pol, l->slot);
			continue;
		}
		leg_cancel(l, l->doomed);
	}
	log_debug("request %s: cancelled", g->id);
	g->ex = NULL;
	if (g->pol.committed && !g->stream.ended) {
		gw->streams_in_flight--;
		if (ex)
			stream_cut(ex);
	}
	if (ex)
		http_exchange_close(ex, false);
	/* 499 is for a client that left first; a stream the gateway cut had its 200. */
	greq_finish(g, g->stream.ended || (g->pol.committed && ex) ? 200 : 499);
}

void proxy_cancel_all(struct gateway *gw)
{
	while (!list_empty(&gw->reqs))
		proxy_cancel(list_entry(list_first(&gw->reqs), struct greq, link));
}

/* A printable value of 1–GREQ_MAX_ID_LEN characters. */
static bool id_ok(const char *v)
{
	size_t i;

	for (i = 0; v[i]; i++) {
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f ||
		    i >= GREQ_MAX_ID_LEN)
			return false;
	}
	return i > 0;
}

/* The members of a request's body the gateway reads, in check_request's m[]. */
enum { REQ_MODEL, REQ_MESSAGES, REQ_STREAM, REQ_STREAM_OPTIONS, REQ_RESPONSE_FORMAT, REQ_N };

/*
 * Writes "Name: value" into line, which has room for a name and a value
 * of up to GREQ_MAX_ID_LEN characters (id_ok's).
 */
static void header_line(char *line, const char *name, const char *value)
{
	size_t n = strlen(name);

	memcpy(line, name, n);
	memcpy(line + n, value, strlen(value) + 1);
}

/*
 * Checks the body (one JSON object with one model member, a string
 * without NUL, a non-empty messages array, and stream a boolean if given)
 * and finds its members (REQ_*) in m, where they lie: no tree is built.
 * On a bad one answers 400 and returns false.
 */
static bool check_request(struct gateway *gw, struct http_exchange *ex,
			  const struct http_request *req, const char *id, struct json_member *m)
{
	static const char *const keys[REQ_N] = {
		[REQ_MODEL] = "model",
		[REQ_MESSAGES] = "messages",
		[REQ_STREAM] = "stream",
		[REQ_STREAM_OPTIONS] = "stream_options",
		[REQ_RESPONSE_FORMAT] = "response_format",
	};
	const struct json_span body = { req->body, req->body_len };
	enum json_type stream;
	const char *msg = NULL;
	const char *param = NULL;
	const char *code = NULL;
	size_t i;

	for (i = 0; i < REQ_N; i++)
		m[i].key = keys[i];
	if (json_check_members(body.p, body.len, NULL, m, REQ_N) ||
	    json_type_of(body) != JSON_OBJECT) {
		msg = "The body of the request is not a JSON object.";
	} else if (m[REQ_MODEL].count > 1) {
		msg = "The model parameter is given more than once.";
		param = "model";
	} else if (!json_string_nonempty(m[REQ_MODEL].v)) {
		msg = "You must provide a model parameter.";
		param = "model";
	} else if (json_string_has_nul(m[REQ_MODEL].v.p, m[REQ_MODEL].v.len)) {
		/* cJSON would cut it there: "chat\u0000evil" must not route as "chat". */
		msg = "The model parameter must not contain a NUL character.";
		param = "model";
	} else if (json_type_of(m[REQ_MESSAGES].v) != JSON_ARRAY ||
		   !json_has_items(m[REQ_MESSAGES].v)) {
		msg = "You must provide a non-empty messages array.";
		param = "messages";
	} else {
		stream = json_type_of(m[REQ_STREAM].v);
		if (stream != JSON_NONE && stream != JSON_TRUE && stream != JSON_FALSE) {
			msg = "The stream parameter must be a boolean.";
			param = "stream";
			code = "invalid_type";
		}
	}
	if (!msg)
		return true;
	respond_refuse(gw, ex, NULL, id, 400, msg, param, code);
	return false;
}

/* The prompt's tokens estimated as its messages' text in bytes / 4, rounded up. */
static int64_t estimate_prompt_tokens(struct json_span messages)
{
	struct json_member content = { "content", { NULL, 0 }, 0 };
	struct json_member text = { "text", { NULL, 0 }, 0 };
	size_t at = 0;
	size_t pat;
	size_t bytes = 0;

	/* Each text's length as cJSON reads it: up to a \u0000. */
	while (json_next_members(messages, &at, &content, 1)) {
		if (json_type_of(content.v) == JSON_STRING)
			bytes += json_string_strlen(content.v);
		if (json_type_of(content.v) != JSON_ARRAY)
			continue;
		pat = 0;
		while (json_next_members(content.v, &pat, &text, 1))
			bytes += json_string_strlen(text.v);
	}
	return bill_prompt_estimate(bytes);
}

/*
 * The request's response_format (rf_text, as written), when its alias
 * checks contracts: read into *own (NULL for "text"), *stated when it gave
 * one. Returns 0, or -1 when it was answered: 400 naming what the gateway
 * cannot check (an unknown type, a JSON Schema keyword outside the
 * subset), or 500.
 */
static int request_contract(struct gateway *gw, struct http_exchange *ex,
			    struct gw_route *route, const char *id, struct json_span rf_text,
			    struct contract **own, bool *stated)
{
	enum json_type t = json_type_of(rf_text);
	cJSON *rf;
	char why[320];
	char msg[400];
	int rc = -ENOMEM;

	*own = NULL;
	*stated = t != JSON_NONE && t != JSON_NULL;
	if (!route->alias->contract.enforce || !*stated)
		return 0;
	/* Only the response_format is parsed into a tree, for the schema compiler. */
	rf = json_parse_span(rf_text);
	if (rf)
		rc = contract_from_response_format(rf, own, why, sizeof(why));
	cJSON_Delete(rf);
	if (rc == -ENOMEM) {
		status_counts_add(&route->requests, 500);
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		return -1;
	}
	if (rc) {
		snprintf(msg, sizeof(msg), "Invalid response_format: %s.", why);
		respond_refuse(gw, ex, route, id, 400, msg, "response_format",
			       "invalid_response_format");
		return -1;
	}
	return 0;
}

/* The first Anthropic target the request may reach (filter f), or NULL. */
static const struct gw_target *anthropic_target(const struct gw_route *route,
						const struct target_filter *f)
{
	size_t i;

	for (i = 0; i < route->ntargets; i++) {
		const struct gw_target *t = route->targets[i];

		if (t->prov->dialect == GW_DIALECT_ANTHROPIC && router_target_allowed(t, f))
			return t;
	}
	return NULL;
}

/*
 * A request that may go to an Anthropic target is translated on arrival,
 * for t, into *body (the legs to t copy it). One that cannot be — or holds
 * \u0000 in a string, which cJSON's reading would cut — leaves every
 * Anthropic target out of its plan (f->no_anthropic, the reason in
 * left_out, LEFT_OUT_LEN bytes, for its final error), so a fail-over never
 * meets a request its fallback cannot take; when no target is left, it is
 * refused with a 400 naming what cannot be sent, before any attempt.
 * Returns 0, or -1 when it was answered.
 */
#define LEFT_OUT_LEN 400
_Static_assert(sizeof(((struct greq *)0)->left_out) == LEFT_OUT_LEN, "greq's left_out");
_Static_assert(sizeof(((struct gateway *)0)->id_prefix) + 20 <= GREQ_MAX_ID_LEN,
	       "a generated request id fits");
static int translate_on_arrival(struct gateway *gw, struct http_exchange *ex,
				struct gw_route *route, const char *id, const cJSON *root,
				const struct gw_target *t, const char *add_rf,
				struct target_filter *f, struct buf *body, char *left_out)
{
	const struct anth_req_opts o = { t->model, t->prov->default_max_tokens, add_rf };
	struct anth_refusal why = { { 0 }, NULL };
	const struct http_request *req = http_exchange_request(ex);
	char msg[480];
	int rc;

	if (json_string_has_nul(req->body, req->body_len)) {
		snprintf(why.message, sizeof(why.message), "A \\u0000 in the request cannot be "
			 "translated for an Anthropic target");
		rc = -EINVAL;
	} else {
		rc = anth_request(root, &o, body, &why);
	}
	if (rc)
		buf_free(body);
	if (rc == -ENOMEM) {
		status_counts_add(&route->requests, 500);
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		return -1;
	}
	if (!rc)
		return 0;
	f->no_anthropic = true;
	if (router_route_allows(route, f)) {
		snprintf(left_out, LEFT_OUT_LEN, "Its Anthropic targets were left out: %s.",
			 why.message);
		log_debug("request %s: Anthropic targets left out: %s", id, why.message);
		return 0;
	}
	snprintf(msg, sizeof(msg), "%s (provider %s of model '%s' speaks Anthropic's Messages "
		 "API).", why.message, t->prov->name, route->alias->name);
	respond_refuse(gw, ex, route, id, 400, msg, why.param, "unsupported_for_provider");
	return -1;
}

void proxy_chat(struct gateway *gw, struct http_exchange *ex)
{
	const struct http_request *req = http_exchange_request(ex);
	const char *only = http_request_header(req, "x-faultline-provider");
	const char *rid = http_request_header(req, "x-request-id");
	const char *idem = http_request_header(req, "idempotency-key");
	const char *no_reroute = http_request_header(req, "x-faultline-no-reroute");
	const char *tenant = http_request_header(req, "x-faultline-tenant");
	const char *feature = http_request_header(req, "x-faultline-feature");
	const char *klass = http_request_header(req, "x-faultline-class");
	char id[GREQ_MAX_ID_LEN + 1];
	struct gw_route *route;
	struct greq *g;
	struct json_member m[REQ_N];
	struct buf model = { 0 };
	cJSON *root = NULL;
	char msg[256];
	char name[160];
	struct policy_action a;
	const struct gw_target *anth;
	struct target_filter filter = { only, false };
	char left_out[LEFT_OUT_LEN] = "";
	struct buf anth_body = { 0 };
	const char *add_rf = NULL;
	struct contract *own = NULL;
	bool stated = false;
	unsigned nlegs;
	bool stream;
	bool cache;
	size_t len;

	if (rid && id_ok(rid)) {
		memcpy(id, rid, strlen(rid) + 1);
	} else {
		len = strlen(gw->id_prefix);
		memcpy(id, gw->id_prefix, len);
		numfmt_int(id + len, (long long)++gw->next_id);
	}
	if (!check_request(gw, ex, req, id, m))
		return;
	if (json_unescape(&model, m[REQ_MODEL].v.p, m[REQ_MODEL].v.len)) {
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		goto out_free_root;
	}
	route = router_find(&gw->router, model.data);
	if (!route) {
		errmsg_unknown_model(msg, sizeof(msg), model.data);
		respond_refuse(gw, ex, NULL, id, 404, msg, "model", "model_not_found");
		goto out_free_root;
	}
	if (only && (!id_ok(only) || !router_route_allows(route, &filter))) {
		json_copy_cut(name, sizeof(name), only, 64);
		snprintf(msg, sizeof(msg), "Provider '%s' (x-faultline-provider) serves no target "
			 "of model '%s'.", name, route->alias->name);
		respond_refuse(gw, ex, route, id, 400, msg, NULL, "unknown_provider");
		goto out_free_root;
	}
	if (klass && strcasecmp(klass, "interactive") && strcasecmp(klass, "batch")) {
		json_copy_cut(name, sizeof(name), klass, 64);
		snprintf(msg, sizeof(msg), "Unknown request class '%s' (x-faultline-class): expected "
			 "interactive or batch.", name);
		respond_refuse(gw, ex, route, id, 400, msg, NULL, "unknown_class");
		goto out_free_root;
	}
	if (request_contract(gw, ex, route, id, m[REQ_RESPONSE_FORMAT].v, &own, &stated))
		goto out_free_root;
	if (route->alias->contract.enforce && m[REQ_RESPONSE_FORMAT].count == 0)
		add_rf = route->alias->contract.dflt_json;
	anth = anthropic_target(route, &filter);
	/*
	 * The cache key is built from cJSON's reading, which cuts a string at
	 * \u0000: such a request is not cached (two would share a key).
	 */
	cache = gw->degraded.routes[route - gw->router.routes].has_cache &&
		!json_string_has_nul(req->body, req->body_len);
	/* The body is parsed into a tree only for what reads one: a translation, a cache key. */
	if (anth || cache) {
		root = json_parse_whole(req->body, req->body_len);
		if (!root) {
			contract_free(own);
			status_counts_add(&route->requests, 500);
			http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL,
					   NULL, 0);
			goto out_free_root;
		}
	}
	if (anth && translate_on_arrival(gw, ex, route, id, root, anth, add_rf, &filter,
					 &anth_body, left_out)) {
		contract_free(own);
		goto out_free_root;
	}
	if (filter.no_anthropic)
		anth = NULL;
	nlegs = route->alias->hedge.enabled ? 1 + route->alias->hedge.max : 1;
	g = greq_new(gw, ex, route, nlegs);
	if (!g) {
		contract_free(own);
		buf_free(&anth_body);
		status_counts_add(&route->requests, 500);
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		goto out_free_root;
	}
	/*
	 * Upstream, the model's bytes are replaced in place: never a re-printed
	 * body, which would turn 1e400 into null and round large integers.
	 */
	g->body = (struct greq_body){ req->body, req->body_len,
				      (size_t)(m[REQ_MODEL].v.p - req->body),
				      (size_t)(m[REQ_MODEL].v.p - req->body) + m[REQ_MODEL].v.len };
	g->bill.est_tokens_in = estimate_prompt_tokens(m[REQ_MESSAGES].v);
	/* Copies, not printf: each value's length was checked (id_ok, LEFT_OUT_LEN). */
	memcpy(g->id, id, strlen(id) + 1);
	header_line(g->id_line, "x-request-id: ", g->id);
	if (idem && id_ok(idem))
		header_line(g->idem_line, "Idempotency-Key: ", idem);
	if (only)
		memcpy(g->only, only, strlen(only) + 1);
	filter.only = g->only[0] ? g->only : NULL;
	memcpy(g->left_out, left_out, strlen(left_out) + 1);
	if (tenant && id_ok(tenant))
		json_copy_cut(g->bill.tenant, sizeof(g->bill.tenant), tenant, COST_LABEL_MAX);
	if (feature && id_ok(feature))
		json_copy_cut(g->bill.feature, sizeof(g->bill.feature), feature, COST_LABEL_MAX);
	stream = json_type_of(m[REQ_STREAM].v) == JSON_TRUE;
	/* A stream's content is relayed as it comes: it cannot be held to a contract. */
	g->own_contract = own;
	if (route->alias->contract.enforce && !stream)
		g->contract = stated ? own : route->alias->contract.dflt;
	/* The providers are told the default contract they are held to (a stream's too). */
	g->add_rf = add_rf;
	g->include_usage = json_type_of(json_get(m[REQ_STREAM_OPTIONS].v, "include_usage")) ==
			   JSON_TRUE;
	if (cache && degraded_key(root, &g->ckey))
		buf_free(&g->ckey);	/* no memory for a key: no cache for this one */
	http_exchange_set_data(ex, g, on_client_abort, stream ? stream_on_client_drain : NULL);
	a = policy_arrive(&gw->pol, &g->pol, route, &filter,
			  klass && strcasecmp(klass, "batch") == 0, stream,
			  no_reroute && (strcmp(no_reroute, "1") == 0 ||
					 strcasecmp(no_reroute, "true") == 0),
			  nlegs, (double)req->recv_ns / 1e6 + gw->cfg->deadline_ms, gw_now_ms());
	if (anth) {
		g->root = root;	/* each Anthropic leg translates it, or copies anth_body */
		root = NULL;
		g->anth_body = anth_body;
		g->anth_for = anth;
	}
	proxy_act(g, &a, NULL);
out_free_root:
	cJSON_Delete(root);
	buf_free(&model);
}

/* ---- the client ---- */
