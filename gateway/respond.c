/*
 * respond: writing a chat request's answer and ending the request; the
 * gateway's error bodies.
 */
#include "gateway/respond.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numfmt.h"
#include "common/clock.h"
#include "common/log.h"
#include "gateway/bill.h"
#include "gateway/contract.h"
#include "gateway/degraded.h"
#include "gateway/errmsg.h"
#include "gateway/gateway.h"
#include "gateway/greq.h"

static const char oom_body[] = "{\"error\":{\"message\":\"Out of memory.\","
			       "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
static const char no_transfer_body[] = "{\"error\":{\"message\":\"Could not start an "
				       "upstream transfer.\",\"type\":\"server_error\","
				       "\"param\":null,\"code\":null}}";

size_t respond_headers(const struct greq *g, struct http_kv *h, char *attempts)
{
	numfmt_int(attempts, (long long)g->pol.attempts_before + g->pol.budget.attempts);
	h[0] = (struct http_kv){ "x-request-id", g->id };
	h[1] = (struct http_kv){ "x-faultline-attempts", attempts };
	h[2] = (struct http_kv){ "x-faultline-hedged", g->pol.hedges ? "1" : "0" };
	return 3;
}

/*
 * respond(), with Retry-After: retry_after_s seconds when > 0, and
 * x-faultline-degraded: degraded when not NULL.
 */
static void respond_full(struct greq *g, int status, const char *ctype, const char *body,
			 size_t len, const struct gw_target *answered, double retry_after_s,
			 const char *degraded)
{
	struct http_exchange *ex = g->ex;
	struct http_kv h[8];
	char retry_after[16];
	char attempts[NUMFMT_LEN];
	char cost[NUMFMT_LEN];
	size_t n = 0;

	h[n++] = (struct http_kv){ "Content-Type", ctype };
	if (retry_after_s > 0) {
		snprintf(retry_after, sizeof(retry_after), "%.0f", retry_after_s);
		h[n++] = (struct http_kv){ "Retry-After", retry_after };
	}
	n += respond_headers(g, h + n, attempts);
	if (degraded)
		h[n++] = (struct http_kv){ "x-faultline-degraded", degraded };
	if (answered)
		h[n++] = (struct http_kv){ "x-faultline-provider", answered->prov->name };
	if (answered || g->bill.billed) {
		bill_cost_text(g, cost, sizeof(cost));
		h[n++] = (struct http_kv){ "x-faultline-cost-usd", cost };
	}
	/* The connection's next request may reuse ex as soon as this answer ends. */
	g->ex = NULL;
	if (ex)
		http_respond(ex, status, h, n, body, len);
	greq_finish(g, status);
}

void respond(struct greq *g, int status, const char *ctype, const char *body, size_t len,
	     const struct gw_target *answered)
{
	respond_full(g, status, ctype, body, len, answered, 0, NULL);
}

void respond_oom(struct greq *g)
{
	respond(g, 500, "application/json", oom_body, sizeof(oom_body) - 1, NULL);
}

void respond_no_transfer(struct greq *g)
{
	respond(g, 500, "application/json", no_transfer_body, sizeof(no_transfer_body) - 1, NULL);
}

void respond_refuse(struct gateway *gw, struct http_exchange *ex, struct gw_route *route,
		    const char *id, int status, const char *msg, const char *param,
		    const char *code)
{
	const struct http_kv h[] = {
		{ "x-request-id", id },
		{ "x-faultline-attempts", "0" },
		{ "x-faultline-hedged", "0" },
	};

	status_counts_add(route ? &route->requests : &gw->unrouted, status);
	http_respond_error(ex, status, msg, "invalid_request_error", param, code, h, 3);
}

/* Sends a cJSON body (NULL when printing it failed: a 500), with a's status and Retry-After. */
static void respond_json(struct greq *g, const struct policy_action *a, const char *text)
{
	if (text)
		respond_full(g, a->status, "application/json", text, strlen(text), NULL,
			     a->retry_after_s, NULL);
	else
		respond_oom(g);
}

/* An error body of the gateway's own: OpenAI's four fields. */
static void respond_own_error(struct greq *g, const struct policy_action *a, const char *msg)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	char *text;

	cJSON_AddStringToObject(err, "message", msg);
	cJSON_AddStringToObject(err, "type", a->type);
	cJSON_AddNullToObject(err, "param");
	cJSON_AddStringToObject(err, "code", a->code);
	text = cJSON_PrintUnformatted(root);
	respond_json(g, a, text);
	free(text);
	cJSON_Delete(root);
}

/* No attempt succeeded: OpenAI's four fields, and every attempt under error.attempts. */
static void respond_final(struct greq *g, const struct policy_action *a)
{
	const struct policy_state *st = &g->pol;
	struct buf msg = { 0 };
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	cJSON *list;
	char *text = NULL;
	size_t i;

	if (errmsg_write(&msg, a, st, g->gw->cfg, g->route->alias->name, NULL) ||
	    (g->left_out[0] && buf_printf(&msg, " %s", g->left_out))) {
		cJSON_Delete(root);
		buf_free(&msg);
		respond_oom(g);
		return;
	}
	cJSON_AddStringToObject(err, "message", msg.data ? msg.data : "");
	cJSON_AddStringToObject(err, "type", a->type);
	cJSON_AddNullToObject(err, "param");
	cJSON_AddStringToObject(err, "code", a->code);
	list = cJSON_AddArrayToObject(err, "attempts");
	for (i = 0; i < st->nnotes && list; i++) {
		const struct policy_note *n = &st->notes[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "provider", n->t->prov->name);
		cJSON_AddStringToObject(o, "model", n->t->model);
		cJSON_AddStringToObject(o, "outcome", n->outcome);
		if (n->status)
			cJSON_AddNumberToObject(o, "status", (double)n->status);
		else
			cJSON_AddNullToObject(o, "status");
		if (isnan(n->ms))
			cJSON_AddNullToObject(o, "ms");
		else
			cJSON_AddNumberToObject(o, "ms", round(n->ms * 1000) / 1000);
		cJSON_AddItemToArray(list, o);
	}
	text = cJSON_PrintUnformatted(root);
	log_debug("request %s: %d %s", g->id, a->status, msg.data ? msg.data : "");
	respond_json(g, a, text);
	free(text);
	cJSON_Delete(root);
	buf_free(&msg);
}

/* Whether the static answer in out honours the request's contract (none: yes). */
static bool static_honours(const struct greq *g, const struct buf *out)
{
	char why[192];
	cJSON *root;
	bool ok;

	if (!g->contract)
		return true;
	root = cJSON_ParseWithLength(out->data, out->len);
	ok = root && contract_check(g->contract, root, why, sizeof(why));
	if (!ok)
		log_debug("request %s: the static degraded answer breaks its contract (%s): the "
			  "error instead", g->id, why);
	cJSON_Delete(root);
	return ok;
}

/*
 * Nothing healthy could answer: the alias's degraded answer, when it has
 * one — its static content, or its cache's fresh answer to the same
 * request — as a 200 marked x-faultline-degraded. False when it has none
 * (mode error, a cache miss, no memory): the error goes out instead.
 */
static bool respond_degraded(struct greq *g)
{
	struct degraded_route *dr = &g->gw->degraded.routes[g->route - g->gw->router.routes];
	const char *model = g->route->alias->name;
	double unix_s = (double)clock_unix_ms() / 1000;
	enum req_degraded kind;
	struct buf out = { 0 };
	const char *cached;
	size_t len = 0;
	int rc;

	if (dr->cfg->mode == GW_DEGRADED_STATIC) {
		kind = DEGRADED_STATIC;
		rc = degraded_completion(&out, g->id, model, dr->cfg->content, g->pol.stream,
					 unix_s);
		if (!rc && !static_honours(g, &out))
			rc = -EINVAL;	/* the error, not an answer that breaks the contract */
	} else if (dr->cfg->mode == GW_DEGRADED_CACHE && g->ckey.len) {
		kind = DEGRADED_CACHE;
		cached = answer_cache_get(&dr->cache, g->ckey.data, g->ckey.len, gw_now_ms(), &len);
		if (!cached) {
			dr->cache_misses++;
			return false;
		}
		rc = g->pol.stream ? degraded_restream(&out, cached, len, g->id, model, unix_s)
				   : buf_append(&out, cached, len);
	} else {
		return false;
	}
	if (rc) {
		buf_free(&out);
		return false;
	}
	dr->answers[kind]++;
	log_debug("request %s: nothing healthy answered; a degraded answer (%s)", g->id,
		  req_degraded_name(kind));
	respond_full(g, 200, g->pol.stream ? "text/event-stream" : "application/json", out.data,
		     out.len, NULL, 0, req_degraded_name(kind));
	buf_free(&out);
	return true;
}

void respond_error(struct greq *g, const struct policy_action *a, const char *why)
{
	struct buf msg = { 0 };

	if (a->error == POLICY_ERR_FINAL) {
		if (!respond_degraded(g))
			respond_final(g, a);
		return;
	}
	if (errmsg_write(&msg, a, &g->pol, g->gw->cfg, g->route ? g->route->alias->name : "", why))
		respond_oom(g);
	else
		respond_own_error(g, a, msg.data);
	buf_free(&msg);
}
