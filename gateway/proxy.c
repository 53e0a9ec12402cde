/*
 * proxy: the life of one chat completion request, reading straight down:
 * proxy_chat (validate, find the route) → next_target (the first target
 * whose breaker admits it) → leg_start (an upstream transfer and its
 * watchdog, capped at min(provider timeout, deadline left)) → on_header /
 * on_body → leg_end (curl finished, or the watchdog cut it: classify,
 * record with the breaker) → answer, or a same-target retry after a wait
 * (on_backoff), or the next target → finish. A request may have several
 * legs in flight: on_hedge starts another on the next target when the
 * first is slow, the first success wins and the others are cancelled
 * (leg_cancel). A batch request that no target can take waits in its
 * route's queue (enqueue → drain_route). A client that leaves ends it in
 * on_client_abort. Every answer goes out through respond(), every end
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

#include "gateway/attempt.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "gateway/gateway.h"
#include "gateway/hedge.h"
#include "common/json.h"
#include "common/log.h"
#include "gateway/relay.h"

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

/*
 * A batch request sent back to the queue because its attempts reached no
 * upstream waits for a breaker change, or this long, before it goes again.
 */
#define REQUEUE_WAIT_MS 1000

enum greq_state {
	GREQ_ROUTING,		/* choosing a target */
	GREQ_ATTEMPT,		/* transfers are with curl */
	GREQ_BACKOFF,		/* waiting to retry the same target */
	GREQ_QUEUED,		/* a batch request waiting for a target */
	GREQ_DONE,		/* finished; the timers are closing */
};

static const char *const state_names[] = { "routing", "attempt", "backoff", "queued", "done" };

/* One attempt or skipped target, for the error body and the log. */
struct note {
	const struct gw_target *t;
	const char *outcome;		/* a failure name, "breaker_open", "cancelled"… */
	long status;			/* 0: none */
	double ms;			/* the attempt's duration; NAN for a skip */
};

/* One upstream attempt: its transfer, watchdog and what came back. */
struct leg {
	uv_timer_t timer;		/* the watchdog; after the commit, the stall timer */
	struct greq *g;
	struct gw_target *t;
	bool timer_ready;		/* timer initialised (a leg's first start) */
	bool active;			/* its transfer is with curl */
	bool hedge;			/* started as a hedge */
	bool doomed;			/* lost to another leg: taken back at once */
	uint64_t probe;			/* t's half-open ticket; 0: none */
	CURL *easy;
	struct curl_uv_note note;	/* what curl_uv saw of its transfer */
	double start_ms;
	bool capped;			/* the deadline left it < CAPPED_SHARE of timeout_ms */
	bool cut;			/* the watchdog ended it */
	bool too_big;			/* past max_upstream_body_bytes */
	bool over_budget;		/* past upstream_body_budget_bytes: the gateway's failure */
	size_t held;			/* its bytes counted in gw->body_bytes */
	bool sse;			/* the answer is a 2xx event stream */
	bool paused;			/* the transfer waits for a slow client */
	bool settle;			/* the relay saw [DONE] or a break: end the client */
	bool stalled;			/* the stall timer ended the transfer */
	unsigned sends;			/* times libcurl was about to send the request (on_prereq) */
	long status;
	double retry_after_ms;		/* from Retry-After; -1: none */
	char ctype[128];
	struct buf resp;
	struct buf up_body;		/* the upstream body for up_model */
	const char *up_model;
	char errbuf[CURL_ERROR_SIZE];
	/* Upstream headers: these nodes, then the gateway's base list. */
	struct curl_slist h_id;
	struct curl_slist h_idem;
	struct curl_slist h_auth;
	struct curl_slist h_accept;
	struct relay relay;
};

struct greq {
	uv_timer_t timer;		/* the retry wait */
	uv_timer_t htimer;		/* the next hedge (initialised when first armed) */
	bool htimer_ready;
	unsigned open_handles;		/* timers not yet closed */
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

	/* The client's body, and where its model value is. */
	const char *body;
	size_t body_len;
	size_t model_at;
	size_t model_end;
	int64_t est_tokens_in;		/* the messages' text / 4: cost without usage */

	/* The budget and where the chain is. */
	struct attempt_budget budget;
	size_t pos;			/* the next target of the chain to consider */
	struct gw_target *cur;		/* the target of the last leg started or failed */
	unsigned retries_here;		/* same-target retries of cur */
	double retry_after_ms;		/* the last failure's Retry-After; -1: none */
	uint32_t forced;		/* chain positions tried because every target was open */
	uint32_t hedged_at;		/* chain positions tried as hedges */
	bool deadline_hit;		/* an attempt was cut by the deadline, or none fit */
	bool reached;			/* some upstream answered or timed out */
	bool no_reroute;		/* x-faultline-no-reroute: side effects, one delivery at most */
	char retry_after[16];		/* Retry-After of an error answer; "" for none */
	bool delivered;			/* an attempt connected: the upstream may have acted on it */
	unsigned skipped;
	char id_line[MAX_ID_LEN + 32];
	char idem_line[MAX_ID_LEN + 32];

	/* Hedging, and the legs (at the end). */
	unsigned nactive;		/* legs with curl */
	unsigned hedges;		/* hedges started */
	struct leg *win;		/* the leg whose stream was committed */

	/* The batch class and its queue. */
	bool batch;
	bool from_queue;		/* counted in its route's qrunning */
	struct greq *qprev;
	struct greq *qnext;
	double queued_ms;		/* when it first joined the queue; 0: never */
	unsigned attempts_before;	/* attempts made before its last dequeue */
	bool dequeued_once;		/* counted as dequeued, its wait in the histogram */
	bool requeued;			/* back in the queue after refusals */
	uint64_t requeue_gen;		/* gw->breaker_gen then */
	double requeue_ms;

	/* What it cost: every billed attempt. */
	double cost_usd;
	bool billed;

	struct note *notes;
	size_t nnotes;
	size_t capnotes;

	/* Streaming ("stream": true). */
	bool stream;
	bool committed;			/* the client has its headers: no failover now */
	bool client_gone;		/* a write to the client failed */
	bool ended;			/* the client's stream has ended */
	bool dirty;			/* on gw->dirty: relayed events wait for the flush */
	struct greq *dirty_prev;
	struct greq *dirty_next;
	double commit_ms;
	double last_event_ms;		/* the last upstream event (or the resume) */
	double stuck_since_ms;		/* paused, and the client took nothing since */
	size_t stuck_queued;		/* what was queued for it then */

	/* One leg, or 1 + hedge.max for an alias that hedges. */
	unsigned nlegs;
	struct leg legs[];
};

static void next_target(struct greq *g);
static void leg_start(struct greq *g, struct gw_target *t, bool hedge, uint64_t probe);
static void leg_end(struct leg *l, CURLcode code);
static void finish_error(struct greq *g);
static void stream_over(struct greq *g, CURLcode code);
static void stream_unmark(struct greq *g);
static void queue_kick(struct gateway *gw);

/* Stops the hedge timer, if it was ever set up. */
static void htimer_stop(struct greq *g)
{
	if (g->htimer_ready)
		uv_timer_stop(&g->htimer);
}

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

static enum breaker_verdict admit(struct greq *g, struct gw_target *t, uint64_t *probe)
{
	struct breaker_change chg;
	enum breaker_verdict v;

	v = breaker_admit(&t->br, gw_now_ms(), probe, &chg);
	router_breaker_changed(&g->gw->router, t, &chg);
	return v;
}

static void record(struct leg *l, bool success, double latency_ms)
{
	struct breaker_change chg;

	breaker_record(&l->t->br, gw_now_ms(), success, latency_ms, l->probe,
		       &l->g->gw->rng_breaker, &chg);
	l->probe = 0;
	router_breaker_changed(&l->g->gw->router, l->t, &chg);
	if (l->t->br.state == BREAKER_HALF_OPEN)
		proxy_queue_wake(l->g->gw);	/* a probe slot is free again */
}

static void release_probe(struct leg *l)
{
	if (l->probe)
		breaker_release_probe(&l->t->br, l->probe);
	l->probe = 0;
}

/* ---- cost ---- */

/*
 * Bills tokens of an attempt on l's provider: added to the request's cost
 * and to the spend by provider, tenant and feature (and to the duplicate
 * spend when the answer was discarded).
 */
static void bill(struct greq *g, const struct leg *l, int64_t in, int64_t out, bool discarded)
{
	const struct gw_provider *p = l->t->prov;
	double usd = (double)in / 1000 * p->price_in_per_1k + (double)out / 1000 * p->price_out_per_1k;

	cost_table_add(g->gw->costs, l->t->provider, g->tenant, g->feature, in, out, usd);
	g->cost_usd += usd;
	g->billed = true;
	if (discarded)
		g->gw->pstats[l->t->provider].dup_usd += usd;
}

/*
 * An attempt whose answer is thrown away: billed as the prompt's estimate
 * and the content it sent, when the upstream took it on — it connected and
 * answered a 2xx, or had answered nothing yet when the gateway stopped
 * waiting (cut by its timeout, or cancelled: working on it, as far as
 * anyone knows). An error status, or a reset or transfer error before any
 * status, costs nothing.
 */
static void bill_discarded(struct greq *g, const struct leg *l, bool stopped)
{
	curl_off_t connect_us = 0;
	curl_off_t pre_us = 0;
	long status = 0;

	curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status ? status < 200 || status > 299 : !stopped)
		return;
	curl_easy_getinfo(l->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(l->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	if (connect_us <= 0 && pre_us <= 0)
		return;
	bill(g, l, g->est_tokens_in, (int64_t)l->relay.content_chunks, true);
}

/* The request's cost as x-faultline-cost-usd's value. */
static void cost_text(const struct greq *g, char *out, size_t len)
{
	snprintf(out, len, "%.9f", g->cost_usd);
}

/* ---- the batch queue ---- */

static void queue_unlink(struct greq *g)
{
	struct gw_route *rt = g->route;

	if (g->state != GREQ_QUEUED)
		return;
	if (g->qprev)
		g->qprev->qnext = g->qnext;
	else
		rt->qhead = g->qnext;
	if (g->qnext)
		g->qnext->qprev = g->qprev;
	else
		rt->qtail = g->qprev;
	g->qprev = g->qnext = NULL;
	rt->qdepth--;
	g->gw->queued--;
	set_state(g, GREQ_ROUTING);	/* off the queue: never unlinked twice */
}

/* A dequeued request no longer holds one of its route's drain slots. */
static void queue_release(struct greq *g)
{
	if (!g->from_queue)
		return;
	g->from_queue = false;
	g->route->qrunning--;
	queue_kick(g->gw);
}

static void leg_cancel(struct leg *l, bool lost);

/* ---- the end ---- */

static void on_handle_closed(uv_handle_t *h)
{
	struct greq *g = h->data;
	size_t i;

	if (--g->open_handles)
		return;
	for (i = 0; i < g->nlegs; i++) {
		buf_free(&g->legs[i].up_body);
		buf_free(&g->legs[i].resp);
		relay_free(&g->legs[i].relay);
	}
	free(g->notes);
	free(g);
}

/* Gives a leg's easy handle back once its transfer is over. */
static void leg_put(struct leg *l)
{
	if (l->easy) {
		gateway_easy_put(l->g->gw, l->easy);
		l->easy = NULL;
	}
}

/* Counts the answer, unlinks the request and frees it once its timers have closed. */
static void finish(struct greq *g, int status)
{
	struct gateway *gw = g->gw;
	size_t i;

	status_counts_add(g->route ? &g->route->requests : &gw->unrouted, status);
	stream_unmark(g);
	queue_unlink(g);
	queue_release(g);
	for (i = 0; i < g->nlegs; i++) {
		leg_cancel(&g->legs[i], true);	/* a loser whose cancel was still due */
		leg_put(&g->legs[i]);
	}
	if (g->prev)
		g->prev->next = g->next;
	else
		gw->reqs = g->next;
	if (g->next)
		g->next->prev = g->prev;
	gw->in_flight--;
	set_state(g, GREQ_DONE);
	/* Timers are set up as they are first needed: most requests never hedge. */
	g->open_handles = 1 + g->htimer_ready;
	for (i = 0; i < g->nlegs; i++)
		g->open_handles += g->legs[i].timer_ready;
	uv_close((uv_handle_t *)&g->timer, on_handle_closed);
	if (g->htimer_ready)
		uv_close((uv_handle_t *)&g->htimer, on_handle_closed);
	for (i = 0; i < g->nlegs; i++) {
		if (!g->legs[i].timer_ready)
			continue;
		g->legs[i].timer.data = g;	/* on_handle_closed counts on g */
		uv_close((uv_handle_t *)&g->legs[i].timer, on_handle_closed);
	}
}

/*
 * Puts the headers every chat answer carries into h — x-request-id,
 * x-faultline-attempts (written into attempts, 16 bytes) and -hedged — and
 * returns how many.
 */
static size_t answer_headers(const struct greq *g, struct http_kv *h, char *attempts)
{
	snprintf(attempts, 16, "%u", g->attempts_before + g->budget.attempts);
	h[0] = (struct http_kv){ "x-request-id", g->id };
	h[1] = (struct http_kv){ "x-faultline-attempts", attempts };
	h[2] = (struct http_kv){ "x-faultline-hedged", g->hedges ? "1" : "0" };
	return 3;
}

/*
 * Sends an answer with the gateway's headers (x-faultline-provider only
 * when an upstream answered, the cost when some attempt was billed) and
 * ends the request.
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
	if (answered)
		h[n++] = (struct http_kv){ "x-faultline-provider", answered->prov->name };
	if (answered || g->billed) {
		cost_text(g, cost, sizeof(cost));
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

/* Retry-After's value for the first of the route's open targets to go half-open (≥ 1 s). */
static void retry_after_open_end(struct greq *g)
{
	double end = router_route_next_open_end(g->route, g->only[0] ? g->only : NULL);
	double s = isfinite(end) ? ceil((end - gw_now_ms()) / 1000) : 1;

	snprintf(g->retry_after, sizeof(g->retry_after), "%.0f", fmax(1, s));
}

/*
 * When every target of the request was skipped as open: the seconds until
 * the first of them goes half-open (at least 1), as Retry-After's value.
 */
static void open_retry_after(struct greq *g)
{
	const struct gw_route *rt = g->route;
	const char *only = g->only[0] ? g->only : NULL;
	size_t i;

	if (g->budget.attempts)
		return;
	for (i = 0; i < rt->ntargets; i++) {
		const struct gw_target *t = rt->targets[i];

		if (router_target_allowed(t, only) && t->br.state != BREAKER_OPEN)
			return;		/* skipped for another reason: no promise to make */
	}
	retry_after_open_end(g);
}

/* An error body of the gateway's own: OpenAI's four fields. */
static void respond_own_error(struct greq *g, int status, const char *type, const char *code,
			      const char *msg)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");
	char *text;

	cJSON_AddStringToObject(err, "message", msg);
	cJSON_AddStringToObject(err, "type", type);
	cJSON_AddNullToObject(err, "param");
	cJSON_AddStringToObject(err, "code", code);
	text = cJSON_PrintUnformatted(root);
	if (text)
		respond(g, status, "application/json", text, strlen(text), NULL);
	else
		respond(g, 500, "application/json", oom_body, sizeof(oom_body) - 1, NULL);
	free(text);
	cJSON_Delete(root);
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

/*
 * CURLOPT_PREREQFUNCTION: libcurl is about to send the request on a
 * connection it opened or reused. It is called a second time when libcurl
 * would send the request again on its own (a reused connection broke
 * before any answer): that delivery would be hidden from the gateway's
 * attempts, breakers and max_attempts, so it is refused here, before a
 * byte of it goes out, and the attempt ends as a reset of the first one.
 * Every delivery is then an attempt the gateway chose (leg_end).
 */
static int on_prereq(void *userp, char *ip, char *local_ip, int port, int local_port)
{
	struct leg *l = userp;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	return ++l->sends > 1 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

/* CURLOPT_HEADERFUNCTION: the headers an answer or a retry needs. */
static size_t on_header(char *line, size_t size, size_t n, void *userp)
{
	struct leg *l = userp;
	size_t len = size * n;
	struct curl_uv_header h;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		l->ctype[0] = '\0';
		l->retry_after_ms = -1;
		l->sse = false;
	} else if (l->g->stream && (line[0] == '\r' || line[0] == '\n')) {
		long status = 0;

		/* The end of a response's headers: is it the stream asked for? */
		curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
		l->sse = status >= 200 && status <= 299 &&
			 strncasecmp(l->ctype, "text/event-stream", 17) == 0;
	} else if (!curl_uv_header_split(line, len, &h)) {
		return len;
	} else if (curl_uv_header_is(&h, "content-type")) {
		snprintf(l->ctype, sizeof(l->ctype), "%.*s", (int)sizeof(l->ctype) - 1, h.value);
	} else if (curl_uv_header_is(&h, "retry-after")) {
		l->retry_after_ms = backoff_parse_retry_after(h.value, clock_unix_ms());
	} else if (curl_uv_header_is(&h, "content-length") &&
		   strtod(h.value, NULL) > (double)l->g->gw->cfg->max_upstream_body_bytes) {
		l->too_big = true;	/* not worth reading: stop before the body */
		return 0;
	}
	return len;
}

static size_t on_stream_body(struct leg *l, char *data, size_t len);

/*
 * Counts what l holds of its upstream answer (the body, or the events not
 * yet written) in the gateway's buffered bytes. Returns false when that
 * takes them past upstream_body_budget_bytes.
 */
static bool hold(struct leg *l)
{
	struct gateway *gw = l->g->gw;
	size_t now = l->resp.len + l->relay.out.len;

	gw->body_bytes = gw->body_bytes - l->held + now;
	l->held = now;
	return gw->body_bytes <= gw->cfg->upstream_body_budget_bytes;
}

/* The leg's transfer is off curl: it holds nothing against the budget any more. */
static void leg_off(struct leg *l)
{
	l->active = false;
	l->g->nactive--;
	l->g->gw->body_bytes -= l->held;
	l->held = 0;
}

/*
 * CURLOPT_WRITEFUNCTION: the answer's body, up to max_upstream_body_bytes
 * and while the gateway's buffered answers stay within their budget; or
 * an event stream. Past either, the transfer stops at once.
 */
static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
	struct leg *l = userp;
	const struct gw_config *cfg = l->g->gw->cfg;
	size_t len = size * n;

	if (l->doomed)
		return 0;	/* another leg won: nothing more of this one */
	if (l->sse)
		return on_stream_body(l, data, len);
	if (l->resp.len + len > cfg->max_upstream_body_bytes || buf_append(&l->resp, data, len)) {
		l->too_big = true;
		return 0;
	}
	if (!hold(l)) {
		l->over_budget = true;
		return 0;
	}
	return len;
}

/* The upstream body for l's target: the client's with its model in place. */
static int build_body(struct greq *g, struct leg *l)
{
	const struct gw_target *t = l->t;
	int rc = 0;

	if (l->up_model == t->model)
		return 0;
	buf_reset(&l->up_body);
	l->up_model = NULL;
	rc |= buf_append(&l->up_body, g->body, g->model_at);
	rc |= json_escape(&l->up_body, t->model);
	rc |= buf_append(&l->up_body, g->body + g->model_end, g->body_len - g->model_end);
	if (rc)
		return -ENOMEM;
	l->up_model = t->model;
	return 0;
}

/* ---- streaming: the commit point, relaying, the end of a stream ---- */

/* Writes the winning leg's re-framed events to the client. */
static void stream_write(struct greq *g)
{
	struct relay *r = &g->win->relay;

	if (g->ex && r->out.len && http_stream_write(g->ex, r->out.data, r->out.len)) {
		g->ex = NULL;	/* the exchange has ended: the client is gone */
		g->client_gone = true;
	}
	buf_reset(&r->out);
	if (g->win->active)
		hold(g->win);	/* written: no longer held against the budget */
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
	struct leg *l = t->data;
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	double stall = gw->cfg->stall_timeout_ms;
	double now = gw_now_ms();
	double left = g->last_event_ms + stall - now;

	if (l->paused && client_stuck(g, now)) {
		log_debug("request %s: the client took nothing for %.0f ms", g->id,
			  gw->cfg->idle_timeout_ms);
		http_exchange_close(g->ex, true);
		g->ex = NULL;
		proxy_cancel(g);
		return;
	}
	if (l->paused || left >= 1) {
		uv_timer_start(&l->timer, on_stall,
			       (uint64_t)ceil(l->paused ? fmin(stall, gw->cfg->idle_timeout_ms) : left),
			       0);
		return;
	}
	curl_uv_remove(&gw->cu, l->easy);
	leg_off(l);
	l->stalled = true;
	stream_over(g, CURLE_OK);
}

/* A leg that lost: taken back now that no libcurl callback is running. */
static void on_doomed(uv_timer_t *t);

/*
 * The first content: the client gets its headers and the events held back
 * until now; the leg's timer becomes the stall timer, and every other leg
 * is cancelled (at the next loop turn: this runs inside libcurl).
 */
static void stream_commit(struct greq *g, struct leg *l)
{
	struct gateway *gw = g->gw;
	struct http_kv h[8];
	char attempts[16];
	size_t n = 0;
	size_t i;

	g->win = l;
	htimer_stop(g);
	for (i = 0; i < g->nlegs; i++) {
		struct leg *o = &g->legs[i];

		if (o != l && o->active && !o->doomed) {
			o->doomed = true;
			uv_timer_start(&o->timer, on_doomed, 0, 0);
		}
	}
	if (l->hedge)
		g->route->hedges[HEDGE_WON]++;
	h[n++] = (struct http_kv){ "Content-Type", "text/event-stream" };
	h[n++] = (struct http_kv){ "Cache-Control", "no-cache" };
	n += answer_headers(g, h + n, attempts);
	h[n++] = (struct http_kv){ "x-faultline-provider", l->t->prov->name };
	if (http_stream_chunked(g->ex))
		h[n++] = (struct http_kv){ "Trailer", "x-faultline-cost-usd" };
	g->committed = true;
	g->commit_ms = g->last_event_ms = gw_now_ms();
	gw->streams_in_flight++;
	latency_hist_add(&gw->pstats[l->t->provider].ttft, g->commit_ms - l->start_ms);
	lat_ring_add(&l->t->lat, g->commit_ms - l->start_ms);
	log_debug("request %s: stream committed to %s/%s after %.1f ms", g->id, l->t->prov->name,
		  l->t->model, g->commit_ms - l->start_ms);
	uv_timer_start(&l->timer, on_stall, (uint64_t)ceil(gw->cfg->stall_timeout_ms), 0);
	if (http_stream_begin(g->ex, 200, h, n)) {
		g->ex = NULL;
		g->client_gone = true;
	}
	stream_write(g);
}

/* The relay saw the end, and curl did not end the transfer at once: take it back. */
static void on_settle(uv_timer_t *t)
{
	struct leg *l = t->data;

	curl_uv_remove(&l->g->gw->cu, l->easy);
	leg_off(l);
	stream_over(l->g, CURLE_OK);
}

/*
 * CURLOPT_WRITEFUNCTION of a 2xx event stream. Before the commit, events
 * are held back until one has content; a break ends the transfer for
 * leg_end to fail over. After it, events go to the client as they
 * come. The client's stream is never ended from here (ending an exchange
 * may start the connection's next request, and no transfer may be added
 * from inside a libcurl callback): [DONE] or a break sets settle, and
 * leg_end — or on_settle, should the transfer linger — ends it.
 */
static size_t on_stream_body(struct leg *l, char *data, size_t len)
{
	struct greq *g = l->g;
	struct relay *r = &l->relay;
	uint64_t events = r->events;

	if (l->settle)
		return len;	/* past [DONE]: not read */
	if (g->committed && g->ex && r->out.len >= STREAM_QUEUE_HIGH)
		stream_flush(g);	/* a batch this big goes now, not at the flush */
	if (g->client_gone)
		return 0;
	if (g->committed && g->ex && http_exchange_queued(g->ex) > STREAM_QUEUE_HIGH) {
		l->paused = true;	/* on_client_drain resumes it */
		g->stuck_since_ms = 0;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (relay_feed(r, data, len)) {
		l->too_big = true;	/* out of memory: the answer cannot be relayed */
		return 0;
	}
	if (!hold(l) && !g->committed) {
		l->over_budget = true;	/* after the commit, the client's pace bounds it */
		return 0;
	}
	if (r->events != events && g->committed)
		g->last_event_ms = gw_now_ms();
	if (!g->committed) {
		if (r->brk != RELAY_OK)
			return 0;
		if (!r->content && r->out.len > STREAM_HELD_MAX) {
			l->too_big = true;	/* endless empty events: invalid_body */
			return 0;
		}
		if (!r->content)
			return len;
		stream_commit(g, l);
	} else if (r->out.len) {
		stream_mark(g);
	}
	if (g->client_gone)
		return 0;
	if (relay_over(r)) {
		l->settle = true;
		uv_timer_start(&l->timer, on_settle, 0, 0);
		return r->done ? len : 0;
	}
	return len;
}

/* The client took everything queued: a paused upstream goes on. */
static void on_client_drain(struct http_exchange *ex, void *data)
{
	struct greq *g = data;
	struct leg *l = g->win;

	(void)ex;
	if (!l || !l->paused || !l->active || g->ended)
		return;
	l->paused = false;
	g->last_event_ms = gw_now_ms();
	curl_easy_pause(l->easy, CURLPAUSE_CONT);
}

/*
 * Ends the client's committed stream: after [DONE] (f is ATTEMPT_FAIL_NONE)
 * with the cost trailer, else with an error event saying why. The
 * target's breaker and counters take the attempt's result.
 */
static void stream_end(struct greq *g, enum attempt_failure f)
{
	struct gateway *gw = g->gw;
	struct leg *l = g->win;
	const struct relay *r = &l->relay;
	struct provider_stats *ps = &gw->pstats[l->t->provider];
	struct http_exchange *ex;
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
	/* Its usage, else its content chunks and the prompt's estimate. */
	if (r->has_usage)
		bill(g, l, r->tokens_in, r->tokens_out, false);
	else
		bill(g, l, g->est_tokens_in, (int64_t)r->content_chunks, false);
	cost_text(g, cost, sizeof(cost));
	provider_stats_attempt(ps, f == ATTEMPT_FAIL_NONE ? GW_OUT_SUCCESS
							  : metrics_failure_outcome(f),
			       now - l->start_ms);
	record(l, f == ATTEMPT_FAIL_NONE, g->commit_ms - l->start_ms);
	if (f == ATTEMPT_FAIL_NONE) {
		l->t->failed_slow = false;
		log_debug("request %s: stream from %s/%s complete", g->id, l->t->prov->name,
			  l->t->model);
		if (ex)
			http_stream_end_trailers(ex, &tr, 1);
		return;
	}
	provider_stats_stream_break(ps, f);
	if (f == ATTEMPT_FAIL_STALL)
		buf_printf(&msg, "The upstream stream from %s went silent for %.0f ms.",
			   l->t->prov->name, gw->cfg->stall_timeout_ms);
	else if (f == ATTEMPT_FAIL_ERROR_EVENT)
		buf_printf(&msg, "The upstream stream from %s sent an error: %s", l->t->prov->name,
			   r->message[0] ? r->message : "(no message)");
	else if (f == ATTEMPT_FAIL_TRUNCATED)
		buf_printf(&msg, "The upstream stream from %s ended without [DONE].",
			   l->t->prov->name);
	else if (f == ATTEMPT_FAIL_INVALID_BODY)
		buf_printf(&msg, "The upstream stream from %s sent an event that is not JSON.",
			   l->t->prov->name);
	else
		buf_printf(&msg, "The upstream stream from %s broke off (%s).", l->t->prov->name,
			   l->errbuf[0] ? l->errbuf : attempt_failure_name(f));
	log_debug("request %s: %s", g->id, msg.data ? msg.data : "");
	/* The tokens that came were made, and billed: the trailer says so here too. */
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
	struct leg *l = g->win;
	const struct relay *r = &l->relay;
	struct stream_facts s = {
		.sse = true,
		.committed = true,
		.done = r->done,
		.error_event = r->brk == RELAY_ERROR_EVENT,
		.invalid = r->brk == RELAY_INVALID || l->too_big,
		.stalled = l->stalled,
	};
	struct upstream_facts f = { .curl_code = (int)code };
	struct attempt_class c;

	uv_timer_stop(&l->timer);
	if (g->ended) {
		finish(g, 200);
		return;
	}
	if (g->client_gone) {
		/* A write to the client failed: it left, as in proxy_cancel. */
		g->ended = true;
		g->gw->streams_in_flight--;
		bill(g, l, r->has_usage ? r->tokens_in : g->est_tokens_in,
		     r->has_usage ? r->tokens_out : (int64_t)r->content_chunks, false);
		provider_stats_attempt(&g->gw->pstats[l->t->provider], GW_OUT_CANCELLED,
				       gw_now_ms() - l->start_ms);
		release_probe(l);
		finish(g, 499);
		return;
	}
	c = attempt_classify_stream(&f, &s);
	stream_end(g, c.failure);
	finish(g, 200);
}

/* ---- legs ---- */

static void on_watchdog(uv_timer_t *t)
{
	struct leg *l = t->data;

	curl_uv_remove(&l->g->gw->cu, l->easy);
	l->cut = true;
	leg_end(l, CURLE_OPERATION_TIMEDOUT);
}

static void on_hedge(uv_timer_t *t);

/* Arms the hedge timer after a leg started, when another hedge may follow. */
static void hedge_arm(struct greq *g, const struct leg *l)
{
	const struct gw_hedge *h = &g->route->alias->hedge;

	if (!h->enabled || g->no_reroute || g->committed || g->hedges >= h->max)
		return;
	if (!g->htimer_ready) {
		uv_timer_init(g->gw->loop, &g->htimer);
		g->htimer.data = g;
		g->htimer_ready = true;
	}
	uv_timer_start(&g->htimer, on_hedge, (uint64_t)ceil(hedge_delay_ms(h, &l->t->lat)), 0);
}

/* A leg slot whose transfer is over. */
static struct leg *leg_free_slot(struct greq *g)
{
	size_t i;

	for (i = 0; i < g->nlegs; i++) {
		if (!g->legs[i].active)
			return &g->legs[i];
	}
	return NULL;
}

/* Starts an attempt on t in a free leg, holding the half-open probe admit() gave (0: none). */
static void leg_start(struct greq *g, struct gw_target *t, bool hedge, uint64_t probe)
{
	struct gateway *gw = g->gw;
	const struct gw_provider *p = t->prov;
	double now = gw_now_ms();
	/* A stream's cap holds until its first content: the commit point. */
	double cap = g->stream ? fmin(p->timeout_ms, gw->cfg->first_token_timeout_ms) : p->timeout_ms;
	double timeout = attempt_timeout_ms(&g->budget, cap, now);
	struct curl_slist *head = gw->base_headers;
	struct leg *l = leg_free_slot(g);
	CURL *e;

	if (!l) {
		/* Not reached: a hedge starts only while a slot is free. */
		if (probe)
			breaker_release_probe(&t->br, probe);
		return;
	}
	if (!l->timer_ready) {
		uv_timer_init(gw->loop, &l->timer);
		l->timer.data = l;
		l->timer_ready = true;
	}
	l->t = t;
	l->probe = probe;
	l->hedge = hedge;
	l->doomed = false;
	g->cur = t;
	if (build_body(g, l) || (!l->easy && !(l->easy = gateway_easy_get(gw)))) {
		release_probe(l);
		if (!g->nactive)
			respond(g, 500, "application/json", oom_body, sizeof(oom_body) - 1, NULL);
		return;
	}
	e = l->easy;
	g->budget.attempts++;
	l->start_ms = now;
	l->capped = timeout < CAPPED_SHARE * cap;
	l->cut = false;
	l->sse = false;
	l->paused = false;
	l->settle = false;
	l->stalled = false;
	l->sends = 0;
	relay_reset(&l->relay);
	l->too_big = false;
	l->over_budget = false;
	l->status = 0;
	l->retry_after_ms = -1;
	l->ctype[0] = '\0';
	l->errbuf[0] = '\0';
	buf_reset(&l->resp);

	l->h_accept = (struct curl_slist){ g->stream ? accept_sse : accept_json, head };
	head = &l->h_accept;
	if (p->auth_header) {
		l->h_auth = (struct curl_slist){ p->auth_header, head };
		head = &l->h_auth;
	}
	if (g->idem_line[0]) {
		l->h_idem = (struct curl_slist){ g->idem_line, head };
		head = &l->h_idem;
	}
	l->h_id = (struct curl_slist){ g->id_line, head };

	curl_easy_setopt(e, CURLOPT_URL, p->chat_url);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, l->up_body.data);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)l->up_body.len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, &l->h_id);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)fmax(1, ceil(fmin(p->connect_timeout_ms, timeout))));
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, l);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, l);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, l->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, l);
	curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(e, CURLOPT_PREREQDATA, l);
	/*
	 * A request that must be delivered at most once never goes on a reused
	 * connection: one the provider closed while idle breaks at the first
	 * send, which could not be told from a delivery it acted on.
	 */
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, g->no_reroute ? 1L : 0L);
	if (curl_uv_add_noted(&gw->cu, e, &l->note)) {
		/* The gateway's own trouble: not the provider's, not retried. */
		g->budget.attempts--;
		release_probe(l);
		if (!g->nactive)
			respond(g, 500, "application/json", no_transfer_body,
				sizeof(no_transfer_body) - 1, NULL);
		return;
	}
	l->active = true;
	g->nactive++;
	log_debug("request %s: %s %u to %s/%s, %.0f ms", g->id, hedge ? "hedge" : "attempt",
		  g->budget.attempts, p->name, t->model, timeout);
	set_state(g, GREQ_ATTEMPT);
	uv_timer_start(&l->timer, on_watchdog, (uint64_t)fmax(1, ceil(timeout)), 0);
	hedge_arm(g, l);
}

/*
 * Counts a leg whose transfer is over without a result of its own:
 * cancelled. A loser (another leg won) is billed for what it had cost, and
 * one already past its breaker's slow or latency budget is counted slow;
 * the leg of a request that ended otherwise just gives its probe back.
 */
static void leg_cancelled(struct leg *l, bool lost)
{
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	double now = gw_now_ms();
	struct breaker_change chg;

	provider_stats_attempt(&gw->pstats[l->t->provider], GW_OUT_CANCELLED, now - l->start_ms);
	bill_discarded(g, l, true);	/* the upstream was working on it */
	if (!lost) {
		release_probe(l);
		return;
	}
	g->route->hedges[HEDGE_CANCELLED]++;
	breaker_record_slow(&l->t->br, now, now - l->start_ms, l->probe, &gw->rng_breaker, &chg);
	l->probe = 0;
	router_breaker_changed(&gw->router, l->t, &chg);
	log_debug("request %s: %s/%s cancelled after %.1f ms, another attempt won", g->id,
		  l->t->prov->name, l->t->model, now - l->start_ms);
}

/* Takes back a leg still in flight (outside libcurl's callbacks), as leg_cancelled says. */
static void leg_cancel(struct leg *l, bool lost)
{
	if (!l->active)
		return;
	uv_timer_stop(&l->timer);
	curl_uv_remove(&l->g->gw->cu, l->easy);
	leg_off(l);
	leg_cancelled(l, lost);
}

static void on_doomed(uv_timer_t *t)
{
	struct leg *l = t->data;

	leg_cancel(l, true);
}

/* Cancels every leg but keep (NULL: all) that is still in flight, as losers. */
static void cancel_others(struct greq *g, const struct leg *keep)
{
	size_t i;

	htimer_stop(g);
	for (i = 0; i < g->nlegs; i++) {
		if (&g->legs[i] != keep)
			leg_cancel(&g->legs[i], true);
	}
}

/* The hedge delay passed and no leg has answered: one more, on the next target that admits. */
static void on_hedge(uv_timer_t *t)
{
	struct greq *g = t->data;
	const struct gw_route *rt = g->route;
	const char *only = g->only[0] ? g->only : NULL;
	double now = gw_now_ms();
	uint64_t probe = 0;
	size_t i;
	size_t k;

	if (g->state != GREQ_ATTEMPT || g->committed || !g->nactive || !leg_free_slot(g) ||
	    !attempt_may_start(&g->budget, now))
		return;
	for (i = g->pos; i < rt->ntargets; i++) {
		struct gw_target *c = rt->targets[i];
		bool busy = false;

		if (!router_target_allowed(c, only))
			continue;
		for (k = 0; k < g->nlegs; k++)
			busy |= g->legs[k].active && g->legs[k].t == c;
		if (busy || !breaker_would_admit(&c->br, now))
			continue;
		if (!budget_take(&g->route->budget, &rt->alias->budget, now)) {
			g->route->exhausted[1]++;
			log_debug("request %s: no budget for a hedge", g->id);
			return;
		}
		if (admit(g, c, &probe) == BREAKER_REJECT)
			continue;
		g->hedged_at |= 1u << i;	/* next_target passes it over: it was tried */
		g->hedges++;
		g->route->hedges[HEDGE_STARTED]++;
		leg_start(g, c, true, probe);
		return;
	}
}

static void on_backoff(uv_timer_t *t)
{
	struct greq *g = t->data;
	uint64_t probe = 0;

	if (!attempt_may_start(&g->budget, gw_now_ms())) {
		g->deadline_hit |= attempt_deadline_gone(&g->budget, gw_now_ms());
		finish_error(g);
		return;
	}
	if (admit(g, g->cur, &probe) == BREAKER_REJECT) {
		note_add(g, g->cur, "breaker_open", 0, NAN);
		g->skipped++;
		next_target(g);
		return;
	}
	leg_start(g, g->cur, false, probe);
}

/*
 * After the last leg in flight failed: a same-target retry when one is
 * allowed, the budget has a token and the wait fits, else the next target.
 */
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
				rt->min_attempt_ms, &g->gw->rng_retry, &wait) &&
	    breaker_would_admit(&g->cur->br, now + wait)) {
		if (budget_take(&g->route->budget, &g->route->alias->budget, now)) {
			g->retries_here++;
			log_debug("request %s: retrying %s/%s in %.0f ms", g->id, g->cur->prov->name,
				  g->cur->model, wait);
			set_state(g, GREQ_BACKOFF);
			uv_timer_start(&g->timer, on_backoff, (uint64_t)ceil(wait), 0);
			return;
		}
		g->route->exhausted[0]++;
		log_debug("request %s: no budget for a retry", g->id);
	}
	next_target(g);
}

/* A 2xx body: a chat completion (an object with a non-empty choices array), and its usage. */
static bool check_completion(struct leg *l, int64_t *in, int64_t *out)
{
	cJSON *root = json_parse_whole(l->resp.data ? l->resp.data : "", l->resp.len);
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	bool ok = cJSON_IsObject(root) && cJSON_IsArray(choices) && cJSON_GetArraySize(choices) > 0;

	*in = *out = 0;
	if (ok)
		relay_usage_tokens(cJSON_GetObjectItemCaseSensitive(root, "usage"), in, out);
	cJSON_Delete(root);
	return ok;
}

/*
 * The errno of an attempt that failed for want of the gateway's own
 * resources — no socket (out of descriptors or memory), no buffer for the
 * connect — or 0 when the failure, if any, is the upstream's (a missing
 * local port, EADDRNOTAVAIL, may be the destination's: it fails over).
 */
static int local_errno(const struct leg *l, CURLcode code)
{
	long os = 0;

	if (code != CURLE_COULDNT_CONNECT)
		return 0;
	if (l->note.socket_errno)
		return l->note.socket_errno;
	curl_easy_getinfo(l->easy, CURLINFO_OS_ERRNO, &os);
	return os == ENOBUFS || os == ENOMEM ? (int)os : 0;
}

/*
 * An attempt the gateway itself could not carry: it never left (no socket,
 * local_errno: then it is no attempt at all), or its answer would have
 * taken the buffered answers past upstream_body_budget_bytes (then the
 * upstream did answer: billed as a discarded answer, counted cancelled).
 * Neither is held against the provider, and every other target would fail
 * the same way, so the client gets a 503 gateway_overloaded at once
 * (unless a leg is still in flight).
 */
static void leg_local_failure(struct leg *l, const char *why)
{
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	char msg[192];

	if (l->over_budget) {
		provider_stats_attempt(&gw->pstats[l->t->provider], GW_OUT_CANCELLED,
				       gw_now_ms() - l->start_ms);
		bill_discarded(g, l, false);
		g->delivered = true;
	} else {
		g->budget.attempts--;
	}
	release_probe(l);
	gateway_overloaded(gw, why, l->t->prov->name);
	if (g->nactive)
		return;
	htimer_stop(g);
	snprintf(g->retry_after, sizeof(g->retry_after), "1");
	snprintf(msg, sizeof(msg), "The gateway is out of resources (%s); retry shortly.", why);
	respond_own_error(g, 503, "service_unavailable", "gateway_overloaded", msg);
}

/* A leg's transfer ended: curl finished it or its watchdog cut it. */
static void leg_end(struct leg *l, CURLcode code)
{
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	double now = gw_now_ms();
	double ms = now - l->start_ms;
	struct upstream_facts f = { .curl_code = code, .cut = l->cut };
	struct stream_facts sf = {
		.sse = l->sse,
		.error_event = l->relay.brk == RELAY_ERROR_EVENT,
		.invalid = l->relay.brk == RELAY_INVALID,
	};
	curl_off_t connect_us = 0;
	curl_off_t pre_us = 0;
	int64_t tin = 0;
	int64_t tout = 0;
	struct attempt_class c;
	enum gw_outcome out;
	const char *ctype;
	int err;

	leg_off(l);
	if (g->committed && l == g->win) {
		stream_over(g, code);
		return;
	}
	if (l->doomed) {
		/* A loser that ended on its own before on_doomed took it back. */
		uv_timer_stop(&l->timer);
		leg_cancelled(l, true);
		return;
	}
	if (l->sends > 1 || (l->sends && code == CURLE_COULDNT_CONNECT)) {
		/*
		 * It went out once and its connection broke before any answer;
		 * libcurl's own replay was refused (on_prereq), or could not
		 * connect: a reset of the one delivery.
		 */
		log_debug("request %s: %s/%s: the connection broke after the request was sent; "
			  "not sent again by libcurl", g->id, l->t->prov->name, l->t->model);
		code = CURLE_RECV_ERROR;
		f.curl_code = code;
	}
	err = local_errno(l, code);
	if (err || (l->over_budget && !l->cut)) {
		leg_local_failure(l, err ? strerror(err) : "upstream_body_budget_bytes reached");
		return;
	}
	curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &f.status);
	curl_easy_getinfo(l->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(l->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	f.connected = connect_us > 0 || pre_us > 0;
	g->delivered |= f.connected;
	if (!g->stream && f.curl_code == CURLE_OK && f.status >= 200 && f.status <= 299)
		f.body_valid = check_completion(l, &tin, &tout);
	l->status = f.status;
	c = g->stream ? attempt_classify_stream(&f, &sf) : attempt_classify(&f);
	if (l->too_big && !l->cut)	/* an answer too large to relay, whatever its status */
		c = (struct attempt_class){ ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY };
	out = c.verdict == ATTEMPT_SUCCESS ? GW_OUT_SUCCESS
	    : c.verdict == ATTEMPT_PASS_THROUGH ? GW_OUT_PASS_THROUGH
					       : metrics_failure_outcome(c.failure);
	provider_stats_attempt(&gw->pstats[l->t->provider], out, ms);
	log_debug("request %s: %s/%s %s%s%s (HTTP %ld) in %.1f ms", g->id, l->t->prov->name,
		  l->t->model, metrics_outcome_name(out), l->errbuf[0] ? ": " : "", l->errbuf,
		  f.status, ms);
	if (l->cut && l->capped) {
		/* The deadline's cut, not the provider's timeout: not held against it. */
		g->deadline_hit = true;
		g->reached = true;
		release_probe(l);
	} else {
		record(l, !attempt_counts_as_failure(c), ms);
	}
	if (c.verdict != ATTEMPT_FAILOVER) {
		/* The answer: every other leg lost. */
		cancel_others(g, l);
		if (c.verdict == ATTEMPT_SUCCESS)
			lat_ring_add(&l->t->lat, ms);
		l->t->failed_slow = false;
		if (l->hedge && c.verdict == ATTEMPT_SUCCESS)
			g->route->hedges[HEDGE_WON]++;
		bill(g, l, tin, tout, false);
		ctype = l->ctype[0] ? l->ctype : "application/json";
		respond(g, (int)f.status, ctype, l->resp.data ? l->resp.data : "", l->resp.len,
			l->t);
		return;
	}
	bill_discarded(g, l, l->cut);
	if (!attempt_failure_is_unavailable(c.failure))
		g->reached = true;
	note_add(g, l->t, attempt_failure_name(c.failure), f.status, ms);
	if (!(l->cut && l->capped))
		l->t->failed_slow = l->cut || c.failure == ATTEMPT_FAIL_CONNECT_TIMEOUT ||
				    c.failure == ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT;
	if (g->cur != l->t)
		g->retries_here = 0;	/* a hedge's target failed last: its own retries */
	g->cur = l->t;
	g->retry_after_ms = l->retry_after_ms;
	if (g->nactive)
		return;		/* a hedge is still going: it may yet answer */
	htimer_stop(g);
	after_failure(g);
}

void proxy_on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct leg *l = NULL;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&l);
	uv_timer_stop(&l->timer);
	leg_end(l, result);
}

/* ---- the batch queue ---- */

/* A batch request the stopping gateway will not send: 503, retry in a second. */
static void respond_stopping(struct greq *g)
{
	snprintf(g->retry_after, sizeof(g->retry_after), "1");
	respond_own_error(g, 503, "service_unavailable", "gateway_stopping",
			  "The gateway is stopping; the batch request was not sent.");
}

/*
 * Puts a batch request that no target could take into its route's queue
 * (back at the head when it had been dequeued: it is older than the rest);
 * a full queue answers 429. Returns false when it was answered instead.
 */
static bool enqueue(struct greq *g)
{
	struct gw_route *rt = g->route;
	const struct gw_batch *bq = &g->gw->cfg->batch;
	bool again = g->queued_ms > 0;
	char msg[160];

	if (g->gw->stopping) {
		respond_stopping(g);
		return false;
	}
	if (!again && rt->qdepth >= bq->queue_max) {
		rt->queue[QUEUE_FULL]++;
		retry_after_open_end(g);
		snprintf(msg, sizeof(msg), "The batch queue of model '%s' is full (%u requests).",
			 rt->alias->name, bq->queue_max);
		respond_own_error(g, 429, "rate_limit_error", "batch_queue_full", msg);
		return false;
	}
	queue_release(g);
	if (!again) {
		g->queued_ms = gw_now_ms();
		rt->queue[QUEUE_QUEUED]++;
	}
	g->requeued = again || g->attempts_before + g->budget.attempts > 0;
	g->requeue_gen = g->gw->router.breaker_gen;
	g->requeue_ms = gw_now_ms();
	g->qprev = g->qnext = NULL;
	if (again) {
		g->qnext = rt->qhead;
		if (rt->qhead)
			rt->qhead->qprev = g;
		else
			rt->qtail = g;
		rt->qhead = g;
	} else {
		g->qprev = rt->qtail;
		if (rt->qtail)
			rt->qtail->qnext = g;
		else
			rt->qhead = g;
		rt->qtail = g;
	}
	rt->qdepth++;
	g->gw->queued++;
	set_state(g, GREQ_QUEUED);
	log_debug("request %s: queued (batch), %zu waiting", g->id, rt->qdepth);
	queue_kick(g->gw);
	return true;
}

/* Answers a queued request that waited max_wait_ms. */
static void queue_expire(struct greq *g)
{
	char msg[160];

	queue_unlink(g);
	g->route->queue[QUEUE_EXPIRED]++;
	retry_after_open_end(g);
	snprintf(msg, sizeof(msg), "No provider of model '%s' took the batch request within "
		 "%.0f ms.", g->route->alias->name, g->gw->cfg->batch.max_wait_ms);
	respond_own_error(g, 503, "service_unavailable", "batch_queue_timeout", msg);
}

/* Sends a queued request on again from the start of its chain, with a fresh deadline. */
static void dequeue(struct greq *g)
{
	struct gw_route *rt = g->route;
	double now = gw_now_ms();

	queue_unlink(g);
	if (!g->dequeued_once) {
		g->dequeued_once = true;
		rt->queue[QUEUE_DEQUEUED]++;
		latency_hist_add(&rt->qwait, now - g->queued_ms);
	}
	g->from_queue = true;
	rt->qrunning++;
	g->pos = 0;
	g->skipped = 0;
	g->nnotes = 0;
	g->forced = 0;
	g->hedged_at = 0;
	g->deadline_hit = false;
	g->retry_after[0] = '\0';
	g->budget.deadline_ms = now + g->gw->cfg->deadline_ms;
	g->attempts_before += g->budget.attempts;
	g->budget.attempts = 0;
	log_debug("request %s: dequeued after %.0f ms", g->id, now - g->queued_ms);
	next_target(g);
}

/*
 * Whether a queued request may go again: one sent back by refusals waits
 * for a breaker change, or REQUEUE_WAIT_MS, so that targets that refused it
 * are not hammered while their breakers still stand closed.
 */
static bool queue_ready(const struct greq *g, double now)
{
	return !g->requeued || g->requeue_gen != g->gw->router.breaker_gen ||
	       now >= g->requeue_ms + REQUEUE_WAIT_MS;
}

/* Expires the route's old requests, then sends on what its targets and concurrency allow. */
static void drain_route(struct gw_route *rt, double now, double max_wait)
{
	const struct gw_batch *bq;
	size_t n = rt->qdepth;
	struct greq *g;

	while ((g = rt->qhead) && now - g->queued_ms >= max_wait)
		queue_expire(g);
	if (!rt->qhead)
		return;
	bq = &rt->qhead->gw->cfg->batch;
	/* Each request at most once a round: one that finds no target comes back to the head. */
	while (n-- && (g = rt->qhead) && rt->qrunning < bq->concurrency && queue_ready(g, now) &&
	       router_route_may_admit(rt, g->only[0] ? g->only : NULL, now, true))
		dequeue(g);
}

static void on_queue_timer(uv_timer_t *t)
{
	struct gateway *gw = t->data;
	double now = gw_now_ms();
	size_t i;

	for (i = 0; i < gw->router.nroutes; i++) {
		if (gw->router.routes[i].qhead)
			drain_route(&gw->router.routes[i], now, gw->cfg->batch.max_wait_ms);
	}
	queue_kick(gw);
}

/*
 * Arms the queue timer for the next thing that can change a queue: the
 * oldest request's expiry, or a cooldown running out (a breaker change
 * drains at once, through proxy_queue_wake).
 */
static void queue_kick(struct gateway *gw)
{
	double now = gw_now_ms();
	double next = INFINITY;
	size_t i;

	if (!gw->queued) {
		uv_timer_stop(&gw->qtimer);
		return;
	}
	for (i = 0; i < gw->router.nroutes; i++) {
		const struct gw_route *rt = &gw->router.routes[i];
		const struct greq *g = rt->qhead;

		if (!g)
			continue;
		next = fmin(next, g->queued_ms + gw->cfg->batch.max_wait_ms);
		if (rt->qrunning >= gw->cfg->batch.concurrency)
			continue;	/* a request finishing drains it */
		if (!queue_ready(g, now))
			next = fmin(next, g->requeue_ms + REQUEUE_WAIT_MS);
		else if (router_route_may_admit(rt, g->only[0] ? g->only : NULL, now, true))
			next = now;
		else
			next = fmin(next, router_route_next_open_end(rt, g->only[0] ? g->only : NULL));
	}
	if (isfinite(next))
		uv_timer_start(&gw->qtimer, on_queue_timer, (uint64_t)ceil(fmax(0, next - now)), 0);
}

void proxy_queue_stop(struct gateway *gw)
{
	size_t i;
	struct greq *g;

	for (i = 0; i < gw->router.nroutes; i++) {
		while ((g = gw->router.routes[i].qhead)) {
			queue_unlink(g);
			g->route->queue[QUEUE_EXPIRED]++;
			respond_stopping(g);
		}
	}
	uv_timer_stop(&gw->qtimer);
}

void proxy_queue_wake(struct gateway *gw)
{
	if (gw->queued)
		uv_timer_start(&gw->qtimer, on_queue_timer, 0, 0);
}

/* The router's listener: a breaker that closed or went half-open may take a queued request. */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg)
{
	(void)t;
	if (chg->to != BREAKER_OPEN)
		proxy_queue_wake(arg);
}

void proxy_queue_listen(struct gateway *gw)
{
	gw->queue_wake.on_change = on_breaker_change;
	gw->queue_wake.arg = gw;
	router_listen(&gw->router, &gw->queue_wake);
}

/* ---- routing ---- */

static void next_target(struct greq *g)
{
	const struct gw_route *rt = g->route;
	const char *only = g->only[0] ? g->only : NULL;
	uint64_t probe = 0;
	struct gw_target *t;
	uint32_t passed;
	size_t at = 0;

	set_state(g, GREQ_ROUTING);
	g->retries_here = 0;
	for (; g->pos < rt->ntargets; g->pos++) {
		t = rt->targets[g->pos];
		if (!router_target_allowed(t, only) || (g->hedged_at & (1u << g->pos)))
			continue;
		if (!attempt_may_start(&g->budget, gw_now_ms())) {
			g->deadline_hit |= attempt_deadline_gone(&g->budget, gw_now_ms());
			finish_error(g);
			return;
		}
		g->cur = t;
		if ((g->batch && t->br.cfg.enabled && t->br.state == BREAKER_HALF_OPEN &&
		     t->br.probes_in_flight > 0) || admit(g, t, &probe) == BREAKER_REJECT) {
			/* Open; or half-open with a probe out, and this is deferrable work. */
			note_add(g, t, "breaker_open", 0, NAN);
			g->skipped++;
			continue;
		}
		g->pos++;
		leg_start(g, t, false, probe);
		return;
	}
	if (g->batch && g->gw->cfg->batch.queue_max > 0 && !g->reached && !g->deadline_hit) {
		/* Deferrable: it waits for a target rather than failing. */
		enqueue(g);
		return;
	}
	t = NULL;
	if (g->skipped && (g->forced || !g->budget.attempts) &&
	    g->gw->cfg->when_all_open == GW_ALL_OPEN_LEAST_RECENTLY_FAILED &&
	    attempt_may_start(&g->budget, gw_now_ms())) {
		/* Half-open ones with their probes out are not open: not tried past their limit. */
		passed = g->forced;
		while ((t = router_least_recently_failed(rt, only, g->gw->pstats, passed, &at)) &&
		       t->br.state != BREAKER_OPEN)
			passed |= 1u << at;
	}
	if (t) {
		/* Every target is open: each that fails fast, oldest failure first, anyway. */
		g->forced |= 1u << at;
		note_unskip(g, t);
		log_debug("request %s: every target open; trying %s/%s", g->id, t->prov->name,
			  t->model);
		leg_start(g, t, false, 0);
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
	size_t i;

	if (g->state == GREQ_DONE)
		return;
	uv_timer_stop(&g->timer);
	htimer_stop(g);
	if (g->state == GREQ_QUEUED)
		g->route->queue[QUEUE_LEFT]++;
	for (i = 0; i < g->nlegs; i++) {
		struct leg *l = &g->legs[i];

		if (!l->active)
			continue;
		if (g->ended && l == g->win) {
			/* Its client's stream is over: only the transfer is left to take back. */
			uv_timer_stop(&l->timer);
			curl_uv_remove(&gw->cu, l->easy);
			leg_off(l);
			release_probe(l);
			continue;
		}
		leg_cancel(l, l->doomed);
	}
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
 * Checks the body (one JSON object with one model member, a string
 * without NUL, a non-empty messages array, and stream a boolean if given);
 * on a bad one answers 400 and returns NULL, else returns the parsed body
 * and where the model value's bytes are, [*model_at, *model_end).
 */
static cJSON *check_request(struct gateway *gw, struct http_exchange *ex,
			    const struct http_request *req, const char *id, size_t *model_at,
			    size_t *model_end)
{
	cJSON *root = json_parse_whole(req->body, req->body_len);
	const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const char *msg = NULL;
	const char *param = NULL;
	const char *code = NULL;
	int rc = -EINVAL;

	if (cJSON_IsObject(root))
		rc = json_member_span(req->body, req->body_len, "model", model_at, model_end);
	if (!cJSON_IsObject(root)) {
		msg = "The body of the request is not a JSON object.";
	} else if (rc == -EEXIST) {
		msg = "The model parameter is given more than once.";
		param = "model";
	} else if (rc || !cJSON_IsString(model) || !model->valuestring[0]) {
		msg = "You must provide a model parameter.";
		param = "model";
	} else if (json_string_has_nul(req->body + *model_at, *model_end - *model_at)) {
		/* cJSON would cut it there: "chat\u0000evil" must not route as "chat". */
		msg = "The model parameter must not contain a NUL character.";
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
	const char *klass = http_request_header(req, "x-faultline-class");
	char id[MAX_ID_LEN + 1];
	struct gw_route *route;
	struct greq *g;
	cJSON *root;
	char msg[256];
	char name[160];
	unsigned nlegs;
	size_t model_at = 0;
	size_t model_end = 0;
	size_t i;

	if (rid && id_ok(rid))
		snprintf(id, sizeof(id), "%s", rid);
	else
		snprintf(id, sizeof(id), "%s%llu", gw->id_prefix, (unsigned long long)++gw->next_id);
	root = check_request(gw, ex, req, id, &model_at, &model_end);
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
	if (klass && strcasecmp(klass, "interactive") && strcasecmp(klass, "batch")) {
		json_copy_cut(name, sizeof(name), klass, 64);
		snprintf(msg, sizeof(msg), "Unknown request class '%s' (x-faultline-class): expected "
			 "interactive or batch.", name);
		refuse(gw, ex, route, id, 400, msg, NULL, "unknown_class");
		goto out_free_root;
	}
	nlegs = route->alias->hedge.enabled ? 1 + route->alias->hedge.max : 1;
	g = calloc(1, sizeof(*g) + nlegs * sizeof(g->legs[0]));
	if (!g) {
		status_counts_add(&route->requests, 500);
		http_respond_error(ex, 500, "Out of memory.", "server_error", NULL, NULL, NULL, 0);
		goto out_free_root;
	}
	/*
	 * Upstream, the model's bytes are replaced in place: never a re-printed
	 * body, which would turn 1e400 into null and round large integers.
	 */
	g->model_at = model_at;
	g->model_end = model_end;
	g->gw = gw;
	g->ex = ex;
	g->route = route;
	g->nlegs = nlegs;
	g->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "stream"));
	g->est_tokens_in = estimate_prompt_tokens(root);
	g->batch = klass && strcasecmp(klass, "batch") == 0;
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
	for (i = 0; i < g->nlegs; i++) {
		g->legs[i].g = g;
		relay_init(&g->legs[i].relay);
	}
	g->retry_after_ms = -1;
	budget_deposit(&route->budget, &route->alias->budget, gw_now_ms());
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
