/*
 * proxy: the life of one chat completion request, reading straight down:
 * proxy_chat (validate, find the route) → next_target (the first target
 * whose breaker admits it) → attempt_start (the upstream transfer and its
 * watchdog, capped at min(provider timeout, deadline left)) → on_header /
 * on_body → attempt_end (curl finished, or the watchdog cut it: classify,
 * record with the breaker) → answer, or a same-target retry after a wait
 * (on_backoff), or the next target → finish. A client that leaves ends it
 * in on_client_abort. Every answer goes out through respond(), every end
 * through finish().
 */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attempt.h"
#include "backoff.h"
#include "clock.h"
#include "gateway.h"
#include "json.h"
#include "log.h"
#include "relay.h"

/* An upstream answer larger than this is not a chat completion we relay. */
#define MAX_UPSTREAM_BODY (16u << 20)

static const char oom_body[] = "{\"error\":{\"message\":\"Out of memory.\","
			       "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
static char accept_json[] = "Accept: application/json";
static char accept_sse[] = "Accept: text/event-stream";
static const char no_transfer_body[] = "{\"error\":{\"message\":\"Could not start an "
				       "upstream transfer.\",\"type\":\"server_error\","
				       "\"param\":null,\"code\":null}}";

/*
 * A watchdog cut holds against the provider unless the deadline left the
 * attempt less than this share of the provider's timeout_ms (a deadline
 * remainder is always a little under a timeout of the same length).
 */
#define CAPPED_SHARE 0.9

/* x-request-id and idempotency-key values longer than this are not taken. */
#define MAX_ID_LEN 128

/* A committed stream with more than this queued for its client pauses its upstream. */
#define STREAM_QUEUE_HIGH (64u * 1024)

/* Events held back before the commit past this: not a stream worth waiting on. */
#define STREAM_HELD_MAX (1u << 20)

enum greq_state {
	GREQ_ROUTING,		/* choosing a target */
	GREQ_ATTEMPT,		/* a transfer is with curl */
	GREQ_BACKOFF,		/* waiting to retry the same target */
	GREQ_DONE,		/* finished; the timer is closing */
};

static const char *const state_names[] = { "routing", "attempt", "backoff", "done" };

/* One attempt or skipped target, for the error body and the log. */
struct note {
	const struct gw_target *t;
	const char *outcome;		/* a failure name, "breaker_open", "cancelled"… */
	long status;			/* 0: none */
	double ms;			/* the attempt's duration; NAN for a skip */
};

struct greq {
	uv_timer_t timer;		/* the attempt's watchdog, or the retry wait */
	struct gateway *gw;
	struct http_exchange *ex;	/* NULL once answered or the client left */
	struct greq *prev;
	struct greq *next;
	enum greq_state state;
	char id[MAX_ID_LEN + 1];
	char only[MAX_ID_LEN + 1];	/* x-faultline-provider; "" for any */
	char tenant[COST_LABEL_MAX + 1];	/* x-faultline-tenant; "" when not given */
	char feature[COST_LABEL_MAX + 1];	/* x-faultline-feature */
	struct gw_route *route;

	/* The client's body, and where its model value is (end 0: re-print root). */
	const char *body;
	size_t body_len;
	size_t model_at;
	size_t model_end;
	cJSON *root;			/* kept only when the body must be re-printed */
	struct buf up_body;		/* the upstream body for up_model */
	const char *up_model;

	/* The budget and where the chain is. */
	struct attempt_budget budget;
	size_t pos;			/* the route's target being tried */
	struct gw_target *cur;
	unsigned retries_here;		/* same-target retries of cur */
	uint64_t probe;			/* cur's half-open ticket; 0: none */
	bool forced;			/* the every-target-open fallback was used */
	bool deadline_hit;		/* an attempt was cut by the deadline, or none fit */
	bool reached;			/* some upstream answered or timed out */
	bool no_reroute;		/* x-faultline-no-reroute: side effects, one delivery at most */
	char retry_after[16];		/* Retry-After of an error answer; "" for none */
	bool delivered;			/* an attempt connected: the upstream may have acted on it */
	unsigned skipped;

	/* The current attempt. */
	CURL *easy;
	double start_ms;
	bool capped;			/* the deadline left it < CAPPED_SHARE of timeout_ms */
	bool cut;			/* the watchdog ended it */
	bool too_big;
	long status;
	double retry_after_ms;		/* from Retry-After; -1: none */
	char ctype[128];
	struct buf resp;
	int64_t tokens_in;
	int64_t tokens_out;
	char errbuf[CURL_ERROR_SIZE];

	/* Upstream headers: these nodes, then the gateway's base list. */
	struct curl_slist h_id;
	struct curl_slist h_idem;
	struct curl_slist h_auth;
	struct curl_slist h_accept;
	char id_line[MAX_ID_LEN + 32];
	char idem_line[MAX_ID_LEN + 32];

	struct note *notes;
	size_t nnotes;
	size_t capnotes;

	/* Streaming ("stream": true). */
	bool stream;
	bool sse;			/* the current answer is a 2xx event stream */
	bool committed;			/* the client has its headers: no failover now */
	bool paused;			/* the transfer waits for a slow client */
	bool settle;			/* the relay saw [DONE] or a break: end the client */
	bool stalled;			/* the stall timer ended the transfer */
	bool client_gone;		/* a write to the client failed */
	bool ended;			/* the client's stream has ended */
	bool dirty;			/* on gw->dirty: relayed events wait for the flush */
	struct greq *dirty_prev;
	struct greq *dirty_next;
	double commit_ms;
	double last_event_ms;		/* the last upstream event (or the resume) */
	double stuck_since_ms;		/* paused, and the client took nothing since */
	size_t stuck_queued;		/* what was queued for it then */
	int64_t est_tokens_in;		/* the messages' text / 4: cost without usage */
	struct relay relay;
};

static void next_target(struct greq *g);
static void attempt_start(struct greq *g, struct gw_target *t);
static void attempt_end(struct greq *g, CURLcode code);
static void finish_error(struct greq *g);
static void stream_over(struct greq *g, CURLcode code);
static void stream_unmark(struct greq *g);

static void set_state(struct greq *g, enum greq_state to)
{
	if (log_enabled(LOG_DEBUG))
		log_debug("request %s: %s -> %s", g->id, state_names[g->state], state_names[to]);
	g->state = to;
}

/* Drops t's note of being skipped as open (it is about to be tried anyway). */
static void note_unskip(struct greq *g, const struct gw_target *t)
{
	size_t i;

	for (i = 0; i < g->nnotes; i++) {
		if (g->notes[i].t == t && strcmp(g->notes[i].outcome, "breaker_open") == 0) {
			memmove(&g->notes[i], &g->notes[i + 1], (g->nnotes - i - 1) * sizeof(*g->notes));
			g->nnotes--;
			return;
		}
	}
}

static void note_add(struct greq *g, const struct gw_target *t, const char *outcome, long status,
		     double ms)
{
	struct note *n;

	if (g->nnotes == g->capnotes) {
		size_t cap = g->capnotes ? g->capnotes * 2 : 4;

		n = realloc(g->notes, cap * sizeof(*n));
		if (!n)
			return;		/* the error body lists fewer; nothing else depends on it */
		g->notes = n;
		g->capnotes = cap;
	}
	g->notes[g->nnotes++] = (struct note){ t, outcome, status, ms };
}

/* ---- breakers ---- */

static enum breaker_verdict admit(struct greq *g, struct gw_target *t)
{
	struct breaker_change chg;
	enum breaker_verdict v;

	v = breaker_admit(&t->br, gw_now_ms(), &g->probe, &chg);
	gateway_breaker_changed(g->gw, t, &chg);
	return v;
}

static void record(struct greq *g, bool success, double latency_ms)
{
	struct breaker_change chg;

	breaker_record(&g->cur->br, gw_now_ms(), success, latency_ms, g->probe,
		       &g->gw->rng_breaker, &chg);
	g->probe = 0;
	gateway_breaker_changed(g->gw, g->cur, &chg);
}

static void release_probe(struct greq *g)
{
	if (g->probe && g->cur)
		breaker_release_probe(&g->cur->br, g->probe);
	g->probe = 0;
}

/* ---- the end ---- */

static void on_timer_closed(uv_handle_t *h)
{
	struct greq *g = h->data;

	buf_free(&g->up_body);
	buf_free(&g->resp);
	relay_free(&g->relay);
	cJSON_Delete(g->root);
	free(g->notes);
	free(g);
}

/* Counts the answer, unlinks the request and frees it once its timer has closed. */
static void finish(struct greq *g, int status)
{
	struct gateway *gw = g->gw;

	status_counts_add(g->route ? &g->route->requests : &gw->unrouted, status);
	stream_unmark(g);
	if (g->easy) {
		gateway_easy_put(gw, g->easy);
		g->easy = NULL;
	}
	if (g->prev)
		g->prev->next = g->next;
	else
		gw->reqs = g->next;
	if (g->next)
		g->next->prev = g->prev;
	gw->in_flight--;
	set_state(g, GREQ_DONE);
	uv_close((uv_handle_t *)&g->timer, on_timer_closed);
}

/*
 * The cost of the tokens counted for the answer from t, as
 * x-faultline-cost-usd's value; it is added to the spend by provider,
 * tenant and feature.
 */
static void cost_text(const struct greq *g, const struct gw_target *t, char *out, size_t len)
{
	const struct gw_provider *p = t->prov;
	double usd = (double)g->tokens_in / 1000 * p->price_in_per_1k +
		     (double)g->tokens_out / 1000 * p->price_out_per_1k;

	cost_table_add(g->gw->costs, t->provider, g->tenant, g->feature, g->tokens_in,
		       g->tokens_out, usd);
	snprintf(out, len, "%.9f", usd);
}

/*
 * Puts the headers every chat answer carries into h — x-request-id,
 * x-faultline-attempts (written into attempts, 16 bytes) and -hedged — and
 * returns how many.
 */
static size_t answer_headers(const struct greq *g, struct http_kv *h, char *attempts)
{
	snprintf(attempts, 16, "%u", g->budget.attempts);
	h[0] = (struct http_kv){ "x-request-id", g->id };
	h[1] = (struct http_kv){ "x-faultline-attempts", attempts };
	h[2] = (struct http_kv){ "x-faultline-hedged", "0" };
	return 3;
}

/*
 * Sends an answer with the gateway's headers (x-faultline-provider and
 * cost only when an upstream answered) and ends the request.
 */
static void respond(struct greq *g, int status, const char *ctype, const char *body, size_t len,
		    const struct gw_target *answered)
{
	struct http_exchange *ex = g->ex;
	struct http_kv h[8];
	char attempts[16];
	char cost[32];
	size_t n = 0;

	h[n++] = (struct http_kv){ "Content-Type", ctype };
	if (g->retry_after[0])
		h[n++] = (struct http_kv){ "Retry-After", g->retry_after };
	n += answer_headers(g, h + n, attempts);
	if (answered) {
		cost_text(g, answered, cost, sizeof(cost));
		h[n++] = (struct http_kv){ "x-faultline-provider", answered->prov->name };
		h[n++] = (struct http_kv){ "x-faultline-cost-usd", cost };
	}
	/* The connection's next request may reuse ex as soon as this answer ends. */
	g->ex = NULL;
	if (ex)
		http_respond(ex, status, h, n, body, len);
	finish(g, status);
}

/*
 * The client's error for a request refused before any attempt, with the
 * headers every chat answer has; counted under its alias when known.
 */
static void refuse(struct gateway *gw, struct http_exchange *ex, struct gw_route *route,
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

/* Writes "P/M: outcome (HTTP s, N ms)" for a note. */
static void note_text(struct buf *b, const struct note *n)
{
	buf_printf(b, "%s/%s: %s", n->t->prov->name, n->t->model, n->outcome);
	if (n->status && !isnan(n->ms))
		buf_printf(b, " (HTTP %ld, %.0f ms)", n->status, n->ms);
	else if (!isnan(n->ms))
		buf_printf(b, " (%.0f ms)", n->ms);
}

/*
 * When every target of the request was skipped as open: the seconds until
 * the first of them goes half-open (at least 1), as Retry-After's value.
 */
static void open_retry_after(struct greq *g)
{
	const struct gw_route *rt = g->route;
	const char *only = g->only[0] ? g->only : NULL;
	double now = gw_now_ms();
	double soonest = INFINITY;
	size_t i;

	if (g->budget.attempts)
		return;
	for (i = 0; i < rt->ntargets; i++) {
		const struct gw_target *t = rt->targets[i];

		if (!router_target_allowed(t, only))
			continue;
		if (t->br.state != BREAKER_OPEN)
			return;		/* skipped for another reason: no promise to make */
		soonest = fmin(soonest, t->br.open_until_ms - now);
	}
	if (isfinite(soonest))
		snprintf(g->retry_after, sizeof(g->retry_after), "%.0f",
			 fmax(1, ceil(soonest / 1000)));
}

/* The error body: OpenAI's four fields, and every attempt under error.attempts. */
static void finish_error(struct greq *g)
{
	struct attempt_final fin = attempt_final_answer(g->deadline_hit, !g->reached);
	struct buf msg = { 0 };
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	cJSON *list;
	char *text = NULL;
	size_t i;

	if (fin.status == 503)
		open_retry_after(g);
	if (fin.status == 504)
		buf_printf(&msg, "The request deadline (%.0f ms) ran out", g->gw->cfg->deadline_ms);
	else if (fin.status == 503)
		buf_printf(&msg, "No provider of model '%s' is available", g->route->alias->name);
	else
		buf_printf(&msg, "Every upstream attempt for model '%s' failed",
			   g->route->alias->name);
	buf_printf(&msg, " after %u attempt%s", g->budget.attempts,
		   g->budget.attempts == 1 ? "" : "s");
	for (i = 0; i < g->nnotes; i++) {
		buf_puts(&msg, i ? "; " : ": ");
		note_text(&msg, &g->notes[i]);
	}
	buf_puts(&msg, ".");
	cJSON_AddStringToObject(err, "message", msg.data ? msg.data : "");
	cJSON_AddStringToObject(err, "type", fin.type);
	cJSON_AddNullToObject(err, "param");
	cJSON_AddStringToObject(err, "code", fin.code);
	list = cJSON_AddArrayToObject(err, "attempts");
	for (i = 0; i < g->nnotes && list; i++) {
		const struct note *n = &g->notes[i];
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
	log_debug("request %s: %d %s", g->id, fin.status, msg.data ? msg.data : "");
	if (text)
		respond(g, fin.status, "application/json", text, strlen(text), NULL);
	else
		respond(g, 500, "application/json", oom_body, sizeof(oom_body) - 1, NULL);
	free(text);
	cJSON_Delete(root);
	buf_free(&msg);
}

/* ---- an attempt ---- */

/* CURLOPT_HEADERFUNCTION: the headers an answer or a retry needs. */
static size_t on_header(char *line, size_t size, size_t n, void *userp)
{
	struct greq *g = userp;
	size_t len = size * n;
	struct curl_uv_header h;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		g->ctype[0] = '\0';
		g->retry_after_ms = -1;
		g->sse = false;
	} else if (g->stream && (line[0] == '\r' || line[0] == '\n')) {
		long status = 0;

		/* The end of a response's headers: is it the stream asked for? */
		curl_easy_getinfo(g->easy, CURLINFO_RESPONSE_CODE, &status);
		g->sse = status >= 200 && status <= 299 &&
			 strncasecmp(g->ctype, "text/event-stream", 17) == 0;
	} else if (!curl_uv_header_split(line, len, &h)) {
		return len;
	} else if (curl_uv_header_is(&h, "content-type")) {
		snprintf(g->ctype, sizeof(g->ctype), "%.*s", (int)sizeof(g->ctype) - 1, h.value);
	} else if (curl_uv_header_is(&h, "retry-after")) {
		g->retry_after_ms = backoff_parse_retry_after(h.value, clock_unix_ms());
	}
	return len;
}

static size_t on_stream_body(struct greq *g, char *data, size_t len);

/* CURLOPT_WRITEFUNCTION: the answer's body, up to MAX_UPSTREAM_BODY; or an event stream. */
static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
	struct greq *g = userp;
	size_t len = size * n;

	if (g->sse)
		return on_stream_body(g, data, len);
	if (g->resp.len + len > MAX_UPSTREAM_BODY || buf_append(&g->resp, data, len)) {
		g->too_big = true;
		return 0;
	}
	return len;
}

/* The upstream body for target t: the client's with t's model in place. */
static int build_body(struct greq *g, const struct gw_target *t)
{
	cJSON *model;
	char *text;
	int rc = 0;

	if (g->up_model == t->model)
		return 0;
	buf_reset(&g->up_body);
	g->up_model = NULL;
	if (g->model_end) {
		rc |= buf_append(&g->up_body, g->body, g->model_at);
		rc |= json_escape(&g->up_body, t->model);
		rc |= buf_append(&g->up_body, g->body + g->model_end, g->body_len - g->model_end);
	} else {
		/* A key spelt with escapes: the body is re-printed, one model member. */
		while (cJSON_GetObjectItemCaseSensitive(g->root, "model"))
			cJSON_DeleteItemFromObjectCaseSensitive(g->root, "model");
		model = cJSON_AddStringToObject(g->root, "model", t->model);
		if (!model)
			return -ENOMEM;
		text = cJSON_PrintUnformatted(g->root);
		rc = text ? buf_puts(&g->up_body, text) : -ENOMEM;
		free(text);
	}
	if (rc)
		return -ENOMEM;
	g->up_model = t->model;
	return 0;
}

/* ---- streaming: the commit point, relaying, the end of a stream ---- */

/* Writes the relay's re-framed events to the client. */
static void stream_write(struct greq *g)
{
	struct relay *r = &g->relay;

	if (g->ex && r->out.len && http_stream_write(g->ex, r->out.data, r->out.len)) {
		g->ex = NULL;	/* the exchange has ended: the client is gone */
		g->client_gone = true;
	}
	buf_reset(&r->out);
}

/* Takes g off the list of streams waiting for the flush. */
static void stream_unmark(struct greq *g)
{
	if (!g->dirty)
		return;
	if (g->dirty_prev)
		g->dirty_prev->dirty_next = g->dirty_next;
	else
		g->gw->dirty = g->dirty_next;
	if (g->dirty_next)
		g->dirty_next->dirty_prev = g->dirty_prev;
	g->dirty = false;
	g->dirty_prev = g->dirty_next = NULL;
}

/*
 * Leaves g's relayed events for the flush at the end of this loop
 * iteration, so the events of every upstream read in it (libcurl hands
 * over one HTTP chunk at a time) go to the client in one write.
 */
static void stream_mark(struct greq *g)
{
	struct gateway *gw = g->gw;

	if (g->dirty)
		return;
	g->dirty = true;
	g->dirty_prev = NULL;
	g->dirty_next = gw->dirty;
	if (gw->dirty)
		gw->dirty->dirty_prev = g;
	gw->dirty = g;
	if (!uv_is_active((uv_handle_t *)&gw->flush))
		uv_check_start(&gw->flush, proxy_flush);
}

/* Writes out what stream_mark left, now, before anything else goes to the client. */
static void stream_flush(struct greq *g)
{
	stream_unmark(g);
	stream_write(g);
}

void proxy_flush(uv_check_t *h)
{
	struct gateway *gw = h->data;
	struct greq *g;

	while ((g = gw->dirty)) {
		stream_flush(g);
		if (g->client_gone && !g->ended)
			proxy_cancel(g);	/* outside libcurl: its transfer can go now */
	}
	uv_check_stop(h);
}

/*
 * While the upstream is paused for a slow client: whether the client has
 * taken nothing for idle_timeout_ms (a reader that stopped, as the server
 * judges a keep-alive connection's).
 */
static bool client_stuck(struct greq *g, double now)
{
	size_t queued = g->ex ? http_exchange_queued(g->ex) : 0;

	if (!g->ex || queued < g->stuck_queued || g->stuck_since_ms == 0) {
		g->stuck_since_ms = now;	/* it took some: count again */
		g->stuck_queued = queued;
		return false;
	}
	return now - g->stuck_since_ms >= g->gw->cfg->idle_timeout_ms;
}

/*
 * After the commit: no event for stall_timeout_ms, unless the gateway
 * paused the upstream — then a client that takes nothing for
 * idle_timeout_ms is given up, as one that left.
 */
static void on_stall(uv_timer_t *t)
{
	struct greq *g = t->data;
	struct gateway *gw = g->gw;
	double stall = gw->cfg->stall_timeout_ms;
	double now = gw_now_ms();
	double left = g->last_event_ms + stall - now;

	if (g->paused && client_stuck(g, now)) {
		log_debug("request %s: the client took nothing for %.0f ms", g->id,
			  gw->cfg->idle_timeout_ms);
		http_exchange_close(g->ex, true);
		g->ex = NULL;
		proxy_cancel(g);
		return;
	}
	if (g->paused || left >= 1) {
		uv_timer_start(&g->timer, on_stall,
			       (uint64_t)ceil(g->paused ? fmin(stall, gw->cfg->idle_timeout_ms) : left),
			       0);
		return;
	}
	curl_uv_remove(&g->gw->cu, g->easy);
	g->stalled = true;
	stream_over(g, CURLE_OK);
}

/*
 * The first content: the client gets its headers and the events held back
 * until now; the attempt's timer becomes the stall timer.
 */
static void stream_commit(struct greq *g)
{
	struct gateway *gw = g->gw;
	struct http_kv h[8];
	char attempts[16];
	size_t n = 0;

	h[n++] = (struct http_kv){ "Content-Type", "text/event-stream" };
	h[n++] = (struct http_kv){ "Cache-Control", "no-cache" };
	n += answer_headers(g, h + n, attempts);
	h[n++] = (struct http_kv){ "x-faultline-provider", g->cur->prov->name };
	if (http_stream_chunked(g->ex))
		h[n++] = (struct http_kv){ "Trailer", "x-faultline-cost-usd" };
	g->committed = true;
	g->commit_ms = g->last_event_ms = gw_now_ms();
	gw->streams_in_flight++;
	latency_hist_add(&gw->pstats[g->cur->provider].ttft, g->commit_ms - g->start_ms);
	log_debug("request %s: stream committed to %s/%s after %.1f ms", g->id, g->cur->prov->name,
		  g->cur->model, g->commit_ms - g->start_ms);
	uv_timer_start(&g->timer, on_stall, (uint64_t)ceil(gw->cfg->stall_timeout_ms), 0);
	if (http_stream_begin(g->ex, 200, h, n)) {
		g->ex = NULL;
		g->client_gone = true;
	}
	stream_write(g);
}

/* The relay saw the end, and curl did not end the transfer at once: take it back. */
static void on_settle(uv_timer_t *t)
{
	struct greq *g = t->data;

	curl_uv_remove(&g->gw->cu, g->easy);
	stream_over(g, CURLE_OK);
}

/*
 * CURLOPT_WRITEFUNCTION of a 2xx event stream. Before the commit, events
 * are held back until one has content; a break ends the transfer for
 * attempt_end to fail over. After it, events go to the client as they
 * come. The client's stream is never ended from here (ending an exchange
 * may start the connection's next request, and no transfer may be added
 * from inside a libcurl callback): [DONE] or a break sets settle, and
 * attempt_end — or on_settle, should the transfer linger — ends it.
 */
static size_t on_stream_body(struct greq *g, char *data, size_t len)
{
	struct relay *r = &g->relay;
	uint64_t events = r->events;

	if (g->settle)
		return len;	/* past [DONE]: not read */
	if (g->committed && g->ex && r->out.len >= STREAM_QUEUE_HIGH)
		stream_flush(g);	/* a batch this big goes now, not at the flush */
	if (g->client_gone)
		return 0;
	if (g->committed && g->ex && http_exchange_queued(g->ex) > STREAM_QUEUE_HIGH) {
		g->paused = true;	/* on_client_drain resumes it */
		g->stuck_since_ms = 0;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (relay_feed(r, data, len)) {
		g->too_big = true;	/* out of memory: the answer cannot be relayed */
		return 0;
	}
	if (r->events != events)
		g->last_event_ms = gw_now_ms();
	if (!g->committed) {
		if (r->brk != RELAY_OK)
			return 0;
		if (!r->content && r->out.len > STREAM_HELD_MAX) {
			g->too_big = true;	/* endless empty events: invalid_body */
			return 0;
		}
		if (!r->content)
			return len;
		stream_commit(g);
	} else if (r->out.len) {
		stream_mark(g);
	}
	if (g->client_gone)
		return 0;
	if (relay_over(r)) {
		g->settle = true;
		uv_timer_start(&g->timer, on_settle, 0, 0);
		return r->done ? len : 0;
	}
	return len;
}

/* The client took everything queued: a paused upstream goes on. */
static void on_client_drain(struct http_exchange *ex, void *data)
{
	struct greq *g = data;

	(void)ex;
	if (!g->paused || g->state != GREQ_ATTEMPT || g->ended)
		return;
	g->paused = false;
	g->last_event_ms = gw_now_ms();
	curl_easy_pause(g->easy, CURLPAUSE_CONT);
}

/* The tokens of a stream: its usage, else its content chunks and the prompt's estimate. */
static void stream_tokens(struct greq *g)
{
	const struct relay *r = &g->relay;

	if (r->has_usage) {
		g->tokens_in = r->tokens_in;
		g->tokens_out = r->tokens_out;
	} else {
		g->tokens_in = g->est_tokens_in;
		g->tokens_out = (int64_t)r->content_chunks;
	}
}

/*
 * Ends the client's committed stream: after [DONE] (f is ATTEMPT_FAIL_NONE)
 * with the cost trailer, else with an error event saying why. The
 * target's breaker and counters take the attempt's result.
 */
static void stream_end(struct greq *g, enum attempt_failure f)
{
	struct gateway *gw = g->gw;
	struct provider_stats *ps = &gw->pstats[g->cur->provider];
	struct http_exchange *ex = g->ex;
	double now = gw_now_ms();
	struct buf ev = { 0 };
	struct buf msg = { 0 };
	char cost[32];
	const struct http_kv tr = { "x-faultline-cost-usd", cost };

	stream_flush(g);	/* the events before the end, first */
	ex = g->ex;
	g->ended = true;
	g->ex = NULL;
	gw->streams_in_flight--;
	stream_tokens(g);
	provider_stats_attempt(ps, f == ATTEMPT_FAIL_NONE ? GW_OUT_SUCCESS
							  : metrics_failure_outcome(f),
			       now - g->start_ms);
	record(g, f == ATTEMPT_FAIL_NONE, g->commit_ms - g->start_ms);
	if (f == ATTEMPT_FAIL_NONE) {
		cost_text(g, g->cur, cost, sizeof(cost));
		log_debug("request %s: stream from %s/%s complete", g->id, g->cur->prov->name,
			  g->cur->model);
		if (ex)
			http_stream_end_trailers(ex, &tr, 1);
		return;
	}
	provider_stats_stream_break(ps, f);
	if (f == ATTEMPT_FAIL_STALL)
		buf_printf(&msg, "The upstream stream from %s went silent for %.0f ms.",
			   g->cur->prov->name, gw->cfg->stall_timeout_ms);
	else if (f == ATTEMPT_FAIL_ERROR_EVENT)
		buf_printf(&msg, "The upstream stream from %s sent an error: %s", g->cur->prov->name,
			   g->relay.message[0] ? g->relay.message : "(no message)");
	else if (f == ATTEMPT_FAIL_TRUNCATED)
		buf_printf(&msg, "The upstream stream from %s ended without [DONE].",
			   g->cur->prov->name);
	else if (f == ATTEMPT_FAIL_INVALID_BODY)
		buf_printf(&msg, "The upstream stream from %s sent an event that is not JSON.",
			   g->cur->prov->name);
	else
		buf_printf(&msg, "The upstream stream from %s broke off (%s).", g->cur->prov->name,
			   g->errbuf[0] ? g->errbuf : attempt_failure_name(f));
	log_debug("request %s: %s", g->id, msg.data ? msg.data : "");
	/* The tokens that came were made, and billed: the trailer says so here too. */
	cost_text(g, g->cur, cost, sizeof(cost));
	if (relay_error_event(&ev, attempt_stream_code(f), msg.data ? msg.data : "") == 0 && ex &&
	    http_stream_write(ex, ev.data, ev.len) == 0)
		http_stream_end_trailers(ex, &tr, 1);
	else if (ex)
		http_exchange_close(ex, true);
	buf_free(&ev);
	buf_free(&msg);
}

/*
 * A committed stream's transfer is over: curl ended it, or the gateway
 * took it back (a stall, on_settle). Ends the client's stream if that is
 * still to do, then the request.
 */
static void stream_over(struct greq *g, CURLcode code)
{
	const struct relay *r = &g->relay;
	struct stream_facts s = {
		.sse = true,
		.committed = true,
		.done = r->done,
		.error_event = r->brk == RELAY_ERROR_EVENT,
		.invalid = r->brk == RELAY_INVALID || g->too_big,
		.stalled = g->stalled,
	};
	struct upstream_facts f = { .curl_code = (int)code };
	struct attempt_class c;

	uv_timer_stop(&g->timer);
	if (g->ended) {
		finish(g, 200);
		return;
	}
	if (g->client_gone) {
		/* A write to the client failed: it left, as in proxy_cancel. */
		g->ended = true;
		g->gw->streams_in_flight--;
		provider_stats_attempt(&g->gw->pstats[g->cur->provider], GW_OUT_CANCELLED,
				       gw_now_ms() - g->start_ms);
		release_probe(g);
		finish(g, 499);
		return;
	}
	c = attempt_classify_stream(&f, &s);
	stream_end(g, c.failure);
	finish(g, 200);
}

static void on_watchdog(uv_timer_t *t)
{
	struct greq *g = t->data;

	curl_uv_remove(&g->gw->cu, g->easy);
	g->cut = true;
	attempt_end(g, CURLE_OPERATION_TIMEDOUT);
}

static void attempt_start(struct greq *g, struct gw_target *t)
{
	struct gateway *gw = g->gw;
	const struct gw_provider *p = t->prov;
	double now = gw_now_ms();
	/* A stream's cap holds until its first content: the commit point. */
	double cap = g->stream ? fmin(p->timeout_ms, gw->cfg->first_token_timeout_ms) : p->timeout_ms;
	double timeout = attempt_timeout_ms(&g->budget, cap, now);
	struct curl_slist *head = gw->base_headers;
	CURL *e;

	g->cur = t;
	if (build_body(g, t) || (!g->easy && !(g->easy = gateway_easy_get(gw)))) {
		release_probe(g);
		respond(g, 500, "application/json", oom_body, sizeof(oom_body) - 1, NULL);
		return;
	}
	e = g->easy;
	g->budget.attempts++;
	g->start_ms = now;
	g->capped = timeout < CAPPED_SHARE * cap;
	g->cut = false;
	g->sse = false;
	g->paused = false;
	g->settle = false;
	g->stalled = false;
	relay_reset(&g->relay);
	g->too_big = false;
	g->status = 0;
	g->retry_after_ms = -1;
	g->ctype[0] = '\0';
	g->errbuf[0] = '\0';
	buf_reset(&g->resp);

	g->h_accept = (struct curl_slist){ g->stream ? accept_sse : accept_json, head };
	head = &g->h_accept;
	if (p->auth_header) {
		g->h_auth = (struct curl_slist){ p->auth_header, head };
		head = &g->h_auth;
	}
	if (g->idem_line[0]) {
		g->h_idem = (struct curl_slist){ g->idem_line, head };
		head = &g->h_idem;
	}
	g->h_id = (struct curl_slist){ g->id_line, head };

	curl_easy_setopt(e, CURLOPT_URL, p->chat_url);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, g->up_body.data);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)g->up_body.len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, &g->h_id);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)fmax(1, ceil(fmin(p->connect_timeout_ms, timeout))));
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, g);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, g->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, g);
	if (curl_uv_add(&gw->cu, e)) {
		/* The gateway's own trouble: not the provider's, not retried. */
		g->budget.attempts--;
		release_probe(g);
		respond(g, 500, "application/json", no_transfer_body, sizeof(no_transfer_body) - 1,
			NULL);
		return;
	}
	log_debug("request %s: attempt %u to %s/%s, %.0f ms", g->id, g->budget.attempts, p->name,
		  t->model, timeout);
	set_state(g, GREQ_ATTEMPT);
	uv_timer_start(&g->timer, on_watchdog, (uint64_t)fmax(1, ceil(timeout)), 0);
}

void proxy_on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct greq *g = NULL;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&g);
	uv_timer_stop(&g->timer);
	attempt_end(g, result);
}

/* A 2xx body: a chat completion (an object with a non-empty choices array), and its usage. */
static bool check_completion(struct greq *g)
{
	cJSON *root = json_parse_whole(g->resp.data ? g->resp.data : "", g->resp.len);
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	bool ok = cJSON_IsObject(root) && cJSON_IsArray(choices) && cJSON_GetArraySize(choices) > 0;

	g->tokens_in = g->tokens_out = 0;
	if (ok)
		relay_usage_tokens(cJSON_GetObjectItemCaseSensitive(root, "usage"), &g->tokens_in,
				   &g->tokens_out);
	cJSON_Delete(root);
	return ok;
}

static void on_backoff(uv_timer_t *t)
{
	struct greq *g = t->data;

	if (!attempt_may_start(&g->budget, gw_now_ms())) {
		g->deadline_hit |= attempt_deadline_gone(&g->budget, gw_now_ms());
		finish_error(g);
		return;
	}
	if (admit(g, g->cur) == BREAKER_REJECT) {
		note_add(g, g->cur, "breaker_open", 0, NAN);
		g->skipped++;
		g->pos++;
		next_target(g);
		return;
	}
	attempt_start(g, g->cur);
}

/* After a failed attempt: a same-target retry when one is allowed and fits, else the next target. */
static void after_failure(struct greq *g)
{
	const struct gw_retry *rt = &g->route->alias->retry;
	const struct backoff bo = { rt->base_ms, rt->cap_ms };
	double now = gw_now_ms();
	double wait = 0;

	if (g->deadline_hit || attempt_deadline_gone(&g->budget, now)) {
		g->deadline_hit = true;
		finish_error(g);
		return;
	}
	if (g->no_reroute && g->delivered) {
		/* It may have been acted on: not sent again, here or elsewhere. */
		log_debug("request %s: no reroute after a delivered attempt", g->id);
		finish_error(g);
		return;
	}
	if (g->retries_here < rt->max_retries &&
	    attempt_retry_delay(&g->budget, &bo, g->retries_here, g->retry_after_ms, now,
				rt->min_attempt_ms, &g->gw->rng_retry, &wait)) {
		g->retries_here++;
		log_debug("request %s: retrying %s/%s in %.0f ms", g->id, g->cur->prov->name,
			  g->cur->model, wait);
		set_state(g, GREQ_BACKOFF);
		uv_timer_start(&g->timer, on_backoff, (uint64_t)ceil(wait), 0);
		return;
	}
	g->pos++;
	next_target(g);
}

static void attempt_end(struct greq *g, CURLcode code)
{
	struct gateway *gw = g->gw;
	double now = gw_now_ms();
	double ms = now - g->start_ms;
	struct upstream_facts f = { .curl_code = code, .cut = g->cut };
	struct stream_facts sf = {
		.sse = g->sse,
		.error_event = g->relay.brk == RELAY_ERROR_EVENT,
		.invalid = g->relay.brk == RELAY_INVALID,
	};
	curl_off_t connect_us = 0;
	struct attempt_class c;
	enum gw_outcome out;
	const char *ctype;

	if (g->committed) {
		stream_over(g, code);
		return;
	}
	curl_easy_getinfo(g->easy, CURLINFO_RESPONSE_CODE, &f.status);
	curl_easy_getinfo(g->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	f.connected = connect_us > 0;
	g->delivered |= f.connected;
	if (!g->stream && f.curl_code == CURLE_OK && f.status >= 200 && f.status <= 299)
		f.body_valid = check_completion(g);
	g->status = f.status;
	c = g->stream ? attempt_classify_stream(&f, &sf) : attempt_classify(&f);
	if (g->too_big && !g->cut)	/* an answer too large to relay, whatever its status */
		c = (struct attempt_class){ ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY };
	out = c.verdict == ATTEMPT_SUCCESS ? GW_OUT_SUCCESS
	    : c.verdict == ATTEMPT_PASS_THROUGH ? GW_OUT_PASS_THROUGH
					       : metrics_failure_outcome(c.failure);
	provider_stats_attempt(&gw->pstats[g->cur->provider], out, ms);
	log_debug("request %s: %s/%s %s%s%s (HTTP %ld) in %.1f ms", g->id, g->cur->prov->name,
		  g->cur->model, metrics_outcome_name(out), g->errbuf[0] ? ": " : "", g->errbuf,
		  f.status, ms);
	if (g->cut && g->capped) {
		/* The deadline's cut, not the provider's timeout: not held against it. */
		g->deadline_hit = true;
		g->reached = true;
		release_probe(g);
	} else {
		record(g, !attempt_counts_as_failure(c), ms);
	}
	if (c.verdict != ATTEMPT_FAILOVER) {
		ctype = g->ctype[0] ? g->ctype : "application/json";
		respond(g, (int)f.status, ctype, g->resp.data ? g->resp.data : "", g->resp.len,
			g->cur);
		return;
	}
	if (!attempt_failure_is_unavailable(c.failure))
		g->reached = true;
	note_add(g, g->cur, attempt_failure_name(c.failure), f.status, ms);
	after_failure(g);
}

/* ---- routing ---- */

static void next_target(struct greq *g)
{
	const struct gw_route *rt = g->route;
	const char *only = g->only[0] ? g->only : NULL;
	struct gw_target *t;

	set_state(g, GREQ_ROUTING);
	g->retries_here = 0;
	for (; g->pos < rt->ntargets; g->pos++) {
		t = rt->targets[g->pos];
		if (!router_target_allowed(t, only))
			continue;
		if (!attempt_may_start(&g->budget, gw_now_ms())) {
			g->deadline_hit |= attempt_deadline_gone(&g->budget, gw_now_ms());
			finish_error(g);
			return;
		}
		g->cur = t;
		if (admit(g, t) == BREAKER_REJECT) {
			note_add(g, t, "breaker_open", 0, NAN);
			g->skipped++;
			continue;
		}
		attempt_start(g, t);
		return;
	}
	if (!g->budget.attempts && g->skipped && !g->forced &&
	    g->gw->cfg->when_all_open == GW_ALL_OPEN_LEAST_RECENTLY_FAILED) {
		/* Every target is open: the one that failed longest ago, anyway. */
		g->forced = true;
		t = router_least_recently_failed(rt, only);
		note_unskip(g, t);
		log_debug("request %s: every target open; trying %s/%s", g->id, t->prov->name,
			  t->model);
		attempt_start(g, t);
		return;
	}
	finish_error(g);
}

/* ---- the client ---- */

static void on_client_abort(struct http_exchange *ex, void *data, enum http_abort_reason why)
{
	struct greq *g = data;

	(void)ex;
	(void)why;
	g->ex = NULL;
	proxy_cancel(g);
}

/*
 * A committed stream the gateway itself cuts (it is stopping): the client
 * is told so, and its chunked answer ended, before the connection closes.
 */
static void stream_cut(struct http_exchange *ex)
{
	bool chunked = http_stream_chunked(ex);
	struct buf ev = { 0 };

	if (relay_error_event(&ev, "gateway_stopping", "The gateway is stopping.") == 0 &&
	    http_stream_write(ex, ev.data, ev.len) == 0 && chunked)
		http_write_raw(ex, "0\r\n\r\n", 5);	/* the last chunk, then the close */
	buf_free(&ev);
}

void proxy_cancel(struct greq *g)
{
	struct gateway *gw = g->gw;
	struct http_exchange *ex = g->ex;

	if (g->state == GREQ_DONE)
		return;
	uv_timer_stop(&g->timer);
	if (g->state == GREQ_ATTEMPT) {
		curl_uv_remove(&gw->cu, g->easy);
		if (!g->ended)
			provider_stats_attempt(&gw->pstats[g->cur->provider], GW_OUT_CANCELLED,
					       gw_now_ms() - g->start_ms);
	}
	release_probe(g);
	log_debug("request %s: cancelled", g->id);
	g->ex = NULL;
	if (g->committed && !g->ended) {
		gw->streams_in_flight--;
		if (ex)
			stream_cut(ex);
	}
	if (ex)
		http_exchange_close(ex, false);
	/* 499 is for a client that left first; a stream the gateway cut had its 200. */
	finish(g, g->ended || (g->committed && ex) ? 200 : 499);
}

/* A printable value of 1–MAX_ID_LEN characters. */
static bool id_ok(const char *v)
{
	size_t i;

	for (i = 0; v[i]; i++) {
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f || i >= MAX_ID_LEN)
			return false;
	}
	return i > 0;
}

/*
 * Checks the body (one JSON object with a model string, a non-empty
 * messages array, and stream a boolean if given); on a bad one answers 400 and returns
 * NULL, else returns the parsed body.
 */
static cJSON *check_request(struct gateway *gw, struct http_exchange *ex,
			    const struct http_request *req, const char *id)
{
	cJSON *root = json_parse_whole(req->body, req->body_len);
	const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const char *msg = NULL;
	const char *param = NULL;
	const char *code = NULL;

	if (!cJSON_IsObject(root)) {
		msg = "The body of the request is not a JSON object.";
	} else if (!cJSON_IsString(model) || !model->valuestring[0]) {
		msg = "You must provide a model parameter.";
		param = "model";
	} else if (!cJSON_IsArray(messages) || cJSON_GetArraySize(messages) == 0) {
		msg = "You must provide a non-empty messages array.";
		param = "messages";
	} else if (cJSON_GetObjectItemCaseSensitive(root, "stream") &&
		   !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(root, "stream"))) {
		msg = "The stream parameter must be a boolean.";
		param = "stream";
		code = "invalid_type";
	}
	if (!msg)
		return root;
	refuse(gw, ex, NULL, id, 400, msg, param, code);
	cJSON_Delete(root);
	return NULL;
}

/* The prompt's tokens estimated as its messages' text in bytes / 4, rounded up. */
static int64_t estimate_prompt_tokens(const cJSON *root)
{
	const cJSON *msg;
	const cJSON *part;
	size_t bytes = 0;

	cJSON_ArrayForEach(msg, cJSON_GetObjectItemCaseSensitive(root, "messages")) {
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");

		if (cJSON_IsString(content))
			bytes += strlen(content->valuestring);
		if (!cJSON_IsArray(content))
			continue;
		cJSON_ArrayForEach(part, content) {
			const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");

			if (cJSON_IsString(text))
				bytes += strlen(text->valuestring);
		}
	}
	return (int64_t)((bytes + 3) / 4);
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
	char id[MAX_ID_LEN + 1];
	struct gw_route *route;
	struct greq *g;
	cJSON *root;
	char msg[256];
	char name[160];
	int rc;

	if (rid && id_ok(rid))
		snprintf(id, sizeof(id), "%s", rid);
	else
		snprintf(id, sizeof(id), "%s%llu", gw->id_prefix, (unsigned long long)++gw->next_id);
	root = check_request(gw, ex, req, id);
	if (!root)
		return;
	route = router_find(&gw->router, json_get_string(root, "model"));
	if (!route) {
		json_copy_cut(name, sizeof(name), json_get_string(root, "model"), 128);
		snprintf(msg, sizeof(msg), "The model '%s' does not exist.", name);
		refuse(gw, ex, NULL, id, 404, msg, "model", "model_not_found");
		goto out_free_root;
	}
	if (only && (!id_ok(only) || !router_route_allows(route, only))) {
		json_copy_cut(name, sizeof(name), only, 64);
		snprintf(msg, sizeof(msg), "Provider '%s' (x-faultline-provider) serves no target "
			 "of model '%s'.", name, route->alias->name);
		refuse(gw, ex, route, id, 400, msg, NULL, "unknown_provider");
		goto out_free_root;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		status_counts_add(&route->requests, 500);
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		goto out_free_root;
	}
	rc = json_member_span(req->body, req->body_len, "model", &g->model_at, &g->model_end);
	if (rc == -EEXIST) {
		free(g);
		refuse(gw, ex, route, id, 400, "The model parameter is given more than once.",
		       "model", NULL);
		goto out_free_root;
	}
	if (rc) {
		g->model_end = 0;	/* re-print the parsed body */
		g->root = root;
		root = NULL;
	}
	g->gw = gw;
	g->ex = ex;
	g->route = route;
	g->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root ? root : g->root, "stream"));
	if (g->stream)
		g->est_tokens_in = estimate_prompt_tokens(root ? root : g->root);
	relay_init(&g->relay);
	g->body = req->body;
	g->body_len = req->body_len;
	snprintf(g->id, sizeof(g->id), "%s", id);
	snprintf(g->id_line, sizeof(g->id_line), "x-request-id: %s", g->id);
	if (idem && id_ok(idem))
		snprintf(g->idem_line, sizeof(g->idem_line), "Idempotency-Key: %s", idem);
	if (only)
		snprintf(g->only, sizeof(g->only), "%s", only);
	if (tenant && id_ok(tenant))
		json_copy_cut(g->tenant, sizeof(g->tenant), tenant, COST_LABEL_MAX);
	if (feature && id_ok(feature))
		json_copy_cut(g->feature, sizeof(g->feature), feature, COST_LABEL_MAX);
	g->no_reroute = no_reroute && (strcmp(no_reroute, "1") == 0 ||
				       strcasecmp(no_reroute, "true") == 0);
	g->budget = (struct attempt_budget){
		.deadline_ms = (double)req->recv_ns / 1e6 + gw->cfg->deadline_ms,
		.max_attempts = route->alias->max_attempts,
	};
	uv_timer_init(gw->loop, &g->timer);
	g->timer.data = g;
	g->next = gw->reqs;
	if (gw->reqs)
		gw->reqs->prev = g;
	gw->reqs = g;
	gw->in_flight++;
	http_exchange_set_data(ex, g, on_client_abort, g->stream ? on_client_drain : NULL);
	next_target(g);
out_free_root:
	cJSON_Delete(root);
}
