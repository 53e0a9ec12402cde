/*
 * run: the load engine. Each request in progress holds a slot: its easy
 * handle, a timer (the watchdog while an attempt runs, the backoff between
 * attempts) and what its answer has shown so far. A request's life reads
 * down this file: dispatch → attempt_start → on_send (libcurl sends it; more
 * than once when it re-sends it by itself) → on_header / on_body (SSE
 * events for streams) → attempt_end (curl finished, or the watchdog cut it)
 * → a retry after a backoff, or finish → the slot goes back and the
 * schedule is pumped for the next arrival. In a closed loop a client whose
 * request was not ok first thinks for --error-think (think_start →
 * on_think_due) before its slot goes back.
 */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/hist.h"
#include "common/log.h"
#include "common/records.h"
#include "loadgen/body.h"
#include "loadgen/outcome.h"
#include "loadgen/record.h"
#include "common/rng.h"
#include "loadgen/run.h"
#include "common/sse.h"
#include "common/waketick.h"
#include "loadgen/arena.h"

/* A non-streaming answer larger than this is cut off as invalid. */
#define MAX_BODY (16u << 20)

/*
 * After "data: [DONE]" a server normally ends the response at once; one
 * that holds the connection open is not waited for longer than this (the
 * request ends ok, at the [DONE]); a trailer (x-faultline-cost-usd) that
 * comes later than this is not read.
 */
#define DONE_GRACE_MS 100

/* The header each request's id goes in (the slot keeps it whole). */
#define ID_HEADER "x-request-id: "

/* Random streams of the run (the schedule's sources use 1, 2, 3…). */

struct run;

/* Where a slot's request is; every change goes through set_state. */
enum req_state {
	REQ_FREE,		/* no request */
	REQ_SENDING,		/* an attempt is with libcurl */
	REQ_BACKOFF,		/* waiting to retry */
	REQ_DONE,		/* finished, being recorded */
	REQ_THINK,		/* closed loop: its client waits --error-think after an error */
};

static const char *const state_names[] = { "free", "sending", "backoff", "done", "think" };

/* A request in progress (one per slot; reused). */
struct req {
	uv_timer_t timer;		/* watchdog, the wait before a retry, or a think */
	CURL *easy;
	struct run *run;
	enum req_state state;

	/* The request. */
	const char *id;			/* its x-request-id: --id-prefix and a number, in id_header */
	size_t stream;
	bool streaming;
	bool own_body;			/* sends body_out, not its stream's shared body */
	bool body_failed;		/* body could not be built (out of memory) */
	struct buf body_out;		/* its own body (a stream asking several questions) */
	size_t target;			/* index into cfg->targets and run->target_urls */
	int retries;			/* loadgen's own and libcurl's re-sends */
	int resends;			/* of them, libcurl's re-sends */
	uint64_t sched_ns;
	uint64_t start_ns;		/* first attempt sent */
	uint64_t free_ns;		/* closed loop, free: when its client's think ended
					 * (its next request's sched_ns); 0: free now */

	/* The current attempt. */
	uint64_t attempt_ns;
	int sends;			/* times libcurl sent it (on_send); 0: never connected */
	uint64_t resend_ns;		/* when libcurl last sent it again; 0: it did not */
	enum outcome resent_outcome;	/* what a re-send past --retries got */
	uint64_t retry_ns;		/* in backoff: when the retry is due */
	uint64_t first_token_ns;	/* 0: none yet */
	uint64_t last_byte_ns;		/* when body bytes last came */
	uint64_t last_event_ns;		/* when the last SSE event came (comments do not count) */
	uint64_t done_ns;		/* when "data: [DONE]" came; 0: not yet */
	double max_gap_ms;
	enum cut cut;
	bool add_failed;		/* curl_uv_add refused this attempt */
	long status;
	bool sse_type;			/* content-type text/event-stream */
	bool saw_done;
	bool error_event;
	bool stall_event;		/* the first error event's code was "stream_stalled" */
	bool bad_frame;
	bool body_valid;
	int64_t content_chunks;
	int64_t tokens_in;
	int64_t tokens_out;
	char provider[128];
	int64_t attempts;
	int hedged;
	double cost_usd;
	char degraded[32];		/* the degraded header's value; "" when absent */
	double retry_after_ms;
	char detail[256];		/* error event or error body message */
	struct buf body;
	struct sse_parser sse;
	char errbuf[CURL_ERROR_SIZE];

	/* What the easy handle was last given (set again only when it changes). */
	const CURLU *easy_url;
	const char *easy_body;

	/* Headers: this request's x-request-id, then the stream's shared list. */
	struct curl_slist id_node;
	char id_header[96];		/* "x-request-id: ", --id-prefix (40 at most), the number */
	size_t id_number_at;		/* where the number goes in id_header */
};

/* What each stream sends, built once. */
struct stream_tpl {
	struct body_tpl body[2];	/* [streaming] */
	struct curl_slist *headers[2];
};

struct run {
	const struct lg_config *cfg;
	uv_loop_t loop;
	struct curl_uv cu;
	struct timebase tb;
	struct sched sched;
	struct rng rng_stream;		/* which requests stream */
	struct rng rng_retry;		/* backoff jitter */
	uv_timer_t sched_timer;		/* wakes the schedule (no timerfd) */
	uv_poll_t sched_poll;		/* wakes the schedule on timerfd */
	int tfd;			/* timerfd, or -1 */
	uint64_t armed_ns;		/* when the timerfd is set to fire; 0: not set */
	uv_timer_t tick;		/* flush and progress, once a second */
	uv_timer_t waketick;		/* bounds the kernel's timer slack (waketick.h) */
	uv_signal_t sigint;
	uv_signal_t sigterm;
	struct stream_tpl *tpl;
	CURLU **target_urls;		/* each target parsed once (CURLOPT_CURLU) */
	uint64_t *stream_sent;		/* requests each stream has begun (its next k) */
	const char **stream_names;
	struct req **slots;
	size_t nslots;			/* allocated */
	size_t maxslots;
	struct req **idle;		/* free slots, a stack */
	size_t nidle;
	size_t in_flight;
	size_t thinking;		/* closed loop: clients in --error-think (not in flight) */
	int64_t clients;		/* closed loop: clients begun (--ramp-up) */
	uint64_t next_n;
	size_t next_target;
	uint64_t started_in_window;
	uint64_t unfinished;
	uint64_t sent_last_tick;
	uint64_t sent;
	bool sched_over;
	bool ended;
	int signal;			/* that stopped the run; 0: none */
	uint64_t stop_ns;		/* when it did */
	bool starved;			/* due requests are waiting for a free slot */
	bool starved_warned;
	uint64_t delayed;		/* requests sent late for want of a slot */
	bool write_failed;
	char write_err[256];
	struct recorder rec;
	struct arena arena;		/* every answer's and event's parse */
	uint64_t header_lens;		/* bit n: on_header reads a header whose name is n long */
	bool progress_drawn;
};

static void pump(struct run *run);
static void attempt_start(struct req *q);
static void attempt_end(struct req *q, CURLcode code);
static void watch_silence(struct req *q);
static void on_watchdog(uv_timer_t *t);

static double rel_ms(const struct run *run, uint64_t ns)
{
	return timebase_rel_ms(&run->tb, ns);
}

static void set_state(struct req *q, enum req_state to)
{
	if (log_enabled(LOG_DEBUG))
		log_debug("request %s: %s -> %s", q->id, state_names[q->state], state_names[to]);
	q->state = to;
}

/* ---- sending ---- */

/*
 * CURLOPT_PREREQFUNCTION: libcurl is about to send the request on a
 * connection, new or reused. Within one transfer it does so again, on a new
 * connection and by itself, when a reused keep-alive connection broke
 * before any answer — after the provider may have read the request. Each
 * send is a delivery, so each one after the first counts as a retry (see
 * attempt_end). Found on libcurl 7.88.1: called twice for a request reset
 * on a reused connection and re-sent (CURLINFO_NUM_CONNECTS is then 1, as
 * for a request on a new connection alone: it cannot tell them apart);
 * once for one reset on a new connection (not re-sent); never when the
 * connection could not be made.
 */
static int on_send(void *userp, char *remote_ip, char *local_ip, int remote_port,
		   int local_port)
{
	struct req *q = userp;

	(void)remote_ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	if (q->sends++)
		q->resend_ns = clock_mono_ns();
	return CURL_PREREQFUNC_OK;
}

/* ---- response headers and body ---- */

/* The response headers on_header reads. */
static const char *wanted_header(const struct mix *mix, size_t i)
{
	const char *const names[] = { mix->hdr_provider, mix->hdr_attempts, mix->hdr_hedged,
				      mix->hdr_cost, mix->hdr_degraded, "retry-after",
				      "content-type", NULL };

	return names[i];
}

/* Notes the lengths of the header names on_header reads (all are under 64). */
static void note_wanted_headers(struct run *run)
{
	const char *name;
	size_t len;
	size_t i;

	run->header_lens = 0;
	for (i = 0; (name = wanted_header(&run->cfg->mix, i)); i++) {
		len = strlen(name);
		run->header_lens |= len < 64 ? (uint64_t)1 << len : ~(uint64_t)0;
	}
}

/* Whether a header whose name is len bytes long may be one on_header reads. */
static bool header_wanted(const struct run *run, size_t len)
{
	return len >= 64 ? run->header_lens == ~(uint64_t)0 : (run->header_lens >> len) & 1;
}

/*
 * CURLOPT_HEADERFUNCTION: notes the headers a record or a retry needs.
 * libcurl also hands over a chunked answer's trailer here, after the body;
 * its lines count as headers do (a gateway sends a stream's cost as a
 * trailer, once the stream is over). Only a status line starts afresh.
 */
static size_t on_header(char *line, size_t size, size_t n, void *userp)
{
	struct req *q = userp;
	const struct mix *mix = &q->run->cfg->mix;
	size_t len = size * n;
	struct curl_uv_header h;
	const char *v = h.value;
	const char *colon;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* A new response (after a 100 Continue): forget the last one's. */
		q->provider[0] = '\0';
		q->attempts = -1;
		q->hedged = -1;
		q->cost_usd = NAN;
		q->degraded[0] = '\0';
		q->retry_after_ms = -1;
		q->sse_type = false;
		return len;
	}
	/* Most lines are none of these: told by their name's length alone. */
	colon = memchr(line, ':', len);
	if (!colon || !header_wanted(q->run, (size_t)(colon - line)))
		return len;
	if (!curl_uv_header_split(line, len, &h))
		return len;
	if (curl_uv_header_is(&h, mix->hdr_provider)) {
		snprintf(q->provider, sizeof(q->provider), "%.*s", (int)sizeof(q->provider) - 1, v);
	} else if (curl_uv_header_is(&h, mix->hdr_attempts)) {
		q->attempts = strtoll(v, NULL, 10);
	} else if (curl_uv_header_is(&h, mix->hdr_hedged)) {
		q->hedged = strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0;
	} else if (curl_uv_header_is(&h, mix->hdr_cost)) {
		char *end;
		double c = strtod(v, &end);

		if (end != v)
			q->cost_usd = c;
	} else if (curl_uv_header_is(&h, mix->hdr_degraded)) {
		snprintf(q->degraded, sizeof(q->degraded), "%.*s", (int)sizeof(q->degraded) - 1, v);
	} else if (curl_uv_header_is(&h, "retry-after")) {
		q->retry_after_ms = backoff_parse_retry_after(v, clock_unix_ms());
	} else if (curl_uv_header_is(&h, "content-type")) {
		q->sse_type = strncasecmp(v, "text/event-stream", 17) == 0;
	}
	return len;
}

static void copy_detail(struct req *q, const char *prefix, const char *msg)
{
	snprintf(q->detail, sizeof(q->detail), "%s%s", prefix, msg ? msg : "");
}

/* The usage object of an answer or a stream's last chunk. */
static void note_usage(struct req *q, const cJSON *root)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	const cJSON *v;

	if (!cJSON_IsObject(usage))
		return;
	v = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
	if (cJSON_IsNumber(v))
		q->tokens_in = (int64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
	if (cJSON_IsNumber(v))
		q->tokens_out = (int64_t)v->valuedouble;
}

/* The message of an OpenAI-style error object, or NULL. */
static const char *error_message(const cJSON *root)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *m;

	if (cJSON_IsString(e))
		return e->valuestring;
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	return cJSON_IsString(m) ? m->valuestring : NULL;
}

/* Whether an error object's code says the stream stalled (a gateway's watchdog). */
static bool is_stall_error(const cJSON *root)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");

	return cJSON_IsString(code) && strcmp(code->valuestring, "stream_stalled") == 0;
}

/* One SSE event of a streamed answer. */
static int on_event(void *ctx, const struct sse_event *ev)
{
	struct req *q = ctx;
	uint64_t now = q->last_byte_ns;
	const cJSON *choices;
	const cJSON *delta;
	const cJSON *content;
	cJSON *root;
	double gap;

	if (q->saw_done)
		return 0;	/* an SDK stops reading at [DONE]; so does loadgen */
	if (q->last_event_ns) {
		gap = (double)(now - q->last_event_ns) / 1e6;
		if (isnan(q->max_gap_ms) || gap > q->max_gap_ms)
			q->max_gap_ms = gap;
	} else {
		q->max_gap_ms = 0;
	}
	q->last_event_ns = now;
	if (strcmp(ev->data, "[DONE]") == 0) {
		q->saw_done = true;
		q->done_ns = now;
		uv_timer_start(&q->timer, on_watchdog, DONE_GRACE_MS, 0);
		return 0;
	}
	root = arena_parse(&q->run->arena, ev->data, ev->data_len);
	if (!root) {
		if (!q->bad_frame)
			copy_detail(q, "", OUTCOME_BAD_FRAME);
		q->bad_frame = true;
		goto out;
	}
	if (strcmp(ev->event, "error") == 0 ||
	    cJSON_GetObjectItemCaseSensitive(root, "error")) {
		if (!q->error_event) {
			copy_detail(q, REQ_ERROR_EVENT_PREFIX ": ", error_message(root));
			q->stall_event = is_stall_error(root);
		}
		q->error_event = true;
		goto out;
	}
	note_usage(q, root);
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	delta = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(choices, 0), "delta");
	content = cJSON_GetObjectItemCaseSensitive(delta, "content");
	if (cJSON_IsString(content) && content->valuestring[0]) {
		q->content_chunks++;
		if (!q->first_token_ns) {
			q->first_token_ns = now;
			watch_silence(q);
		}
	}
out:
	arena_reset(&q->run->arena);
	return 0;
}

/* CURLOPT_WRITEFUNCTION: the answer's body as it arrives. */
static size_t on_body(char *data, size_t size, size_t n, void *userp)
{
	struct req *q = userp;
	size_t len = size * n;
	int rc;

	q->last_byte_ns = clock_mono_ns();
	if (q->streaming && q->status == 0)
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
	if (q->streaming && q->status >= 200 && q->status <= 299) {
		rc = sse_feed(&q->sse, data, len);
		if (rc < 0) {
			if (!q->bad_frame)
				copy_detail(q, "bad SSE frame: ", "line too long");
			q->bad_frame = true;
			return 0;
		}
		return len;
	}
	if (q->body.len + len > MAX_BODY)
		return 0;
	if (buf_append(&q->body, data, len))
		return 0;
	return len;
}

/* Checks a non-streaming answer: a chat completion, with its usage. */
static void check_body(struct req *q)
{
	cJSON *root = arena_parse(&q->run->arena, q->body.data ? q->body.data : "", q->body.len);
	const cJSON *choices;

	if (q->status < 200 || q->status > 299) {
		if (root && error_message(root))
			copy_detail(q, "", error_message(root));
		goto out;
	}
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	q->body_valid = cJSON_IsArray(choices) && cJSON_GetArraySize(choices) > 0;
	if (q->body_valid)
		note_usage(q, root);
out:
	arena_reset(&q->run->arena);
}

/* ---- the life of a request ---- */

static void on_watchdog(uv_timer_t *t)
{
	struct req *q = t->data;
	const struct lg_config *cfg = q->run->cfg;
	uint64_t now = clock_mono_ns();
	double elapsed = (double)(now - q->attempt_ns) / 1e6;
	double wait_ms = 0;
	double silent;

	if (q->add_failed) {
		attempt_end(q, CURLE_FAILED_INIT);
		return;
	}
	if (q->saw_done) {
		/* The answer was whole at [DONE]; the server just kept the line. */
	} else if (q->streaming && q->first_token_ns) {
		silent = (double)(now - q->last_event_ns) / 1e6;
		if (elapsed >= cfg->max_time_ms)
			q->cut = CUT_MAX_TIME;
		else if (silent >= cfg->stall_timeout_ms)
			q->cut = CUT_STALL;
		else	/* events came since the timer was set */
			wait_ms = fmin(cfg->stall_timeout_ms - silent, cfg->max_time_ms - elapsed);
	} else if (elapsed >= cfg->timeout_ms) {
		q->cut = CUT_TIMEOUT;
	} else {
		/* libuv counts whole milliseconds of a cached clock: never cut early. */
		wait_ms = cfg->timeout_ms - elapsed;
	}
	if (wait_ms > 0) {
		uv_timer_start(&q->timer, on_watchdog, (uint64_t)ceil(wait_ms), 0);
		return;
	}
	if (curl_uv_remove(&q->run->cu, q->easy))
		log_warn("request %s: libcurl would not let go of it", q->id);
	attempt_end(q, CURLE_OK);
}

/*
 * Called for the first token of a stream: from now on, watch for silence
 * (and for --max-time, whichever comes first).
 */
static void watch_silence(struct req *q)
{
	const struct lg_config *cfg = q->run->cfg;
	double elapsed = (double)(clock_mono_ns() - q->attempt_ns) / 1e6;

	uv_timer_start(&q->timer, on_watchdog,
		       (uint64_t)ceil(fmax(0, fmin(cfg->stall_timeout_ms,
						   cfg->max_time_ms - elapsed))), 0);
}

static void on_retry_due(uv_timer_t *t)
{
	struct req *q = t->data;
	uint64_t now = clock_mono_ns();

	if (now < q->retry_ns) {
		/* As for the watchdog: libuv's timer may fire a little early. */
		uv_timer_start(&q->timer, on_retry_due, (q->retry_ns - now + 999999) / 1000000, 0);
		return;
	}
	attempt_start(q);
}

/* Sends (again) the request q holds. */
static void attempt_start(struct req *q)
{
	struct run *run = q->run;
	const struct lg_config *cfg = run->cfg;
	struct stream_tpl *tpl = &run->tpl[q->stream];
	const struct body_tpl *shared = &tpl->body[q->streaming];
	const char *body = q->own_body ? q->body_out.data : shared->whole;
	size_t body_len = q->own_body ? q->body_out.len : shared->len;

	q->attempt_ns = clock_mono_ns();
	if (q->retries == 0)
		q->start_ns = q->attempt_ns;
	q->sends = 0;
	q->resend_ns = 0;
	q->first_token_ns = 0;
	q->last_byte_ns = q->attempt_ns;
	q->last_event_ns = 0;
	q->done_ns = 0;
	q->max_gap_ms = NAN;
	q->cut = CUT_NONE;
	q->add_failed = false;
	q->status = 0;
	q->sse_type = false;
	q->saw_done = false;
	q->error_event = false;
	q->stall_event = false;
	q->bad_frame = false;
	q->body_valid = false;
	q->content_chunks = 0;
	q->tokens_in = -1;
	q->tokens_out = -1;
	q->provider[0] = '\0';
	q->attempts = -1;
	q->hedged = -1;
	q->cost_usd = NAN;
	q->degraded[0] = '\0';
	q->retry_after_ms = -1;
	q->detail[0] = '\0';
	q->errbuf[0] = '\0';
	buf_reset(&q->body);
	sse_reset(&q->sse);

	q->id_node.next = tpl->headers[q->streaming];
	/*
	 * Only what changed. The target goes as a parsed URL: given a string,
	 * libcurl parses it and prints it back for every request (a fifth of
	 * its work for a small one); the string is set too, as what libcurl
	 * reports the URL as.
	 */
	if (q->easy_url != run->target_urls[q->target]) {
		curl_easy_setopt(q->easy, CURLOPT_URL, cfg->targets[q->target]);
		curl_easy_setopt(q->easy, CURLOPT_CURLU, run->target_urls[q->target]);
		q->easy_url = run->target_urls[q->target];
	}
	/* A body of its own is set every time: the same buffer holds each request's. */
	if (q->own_body || q->easy_body != body) {
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)body_len);
		q->easy_body = q->own_body ? NULL : body;
	}
	curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, &q->id_node);
	if (q->body_failed || curl_uv_add(&run->cu, q->easy)) {
		/* Ended from the loop, not from here: no recursion through pump(). */
		snprintf(q->errbuf, sizeof(q->errbuf), q->body_failed ?
			 "out of memory building the request body" : "libcurl refused the request");
		set_state(q, REQ_SENDING);
		q->add_failed = true;
		uv_timer_start(&q->timer, on_watchdog, 0, 0);
		return;
	}
	set_state(q, REQ_SENDING);
	uv_timer_start(&q->timer, on_watchdog, (uint64_t)ceil(cfg->timeout_ms), 0);
}

/* The error column for an attempt that did not end well. */
static void describe_attempt(struct req *q, enum outcome o, CURLcode code, char *out,
			     size_t len)
{
	const struct lg_config *cfg = q->run->cfg;
	const struct outcome_words w = {
		.o = o,
		.cut = q->cut,
		.streaming = q->streaming,
		.timeout_ms = cfg->timeout_ms,
		.stall_timeout_ms = cfg->stall_timeout_ms,
		.max_time_ms = cfg->max_time_ms,
		.content_chunks = q->content_chunks,
		.status = q->status,
		.detail = q->detail,
		.transport = code == CURLE_OK ? NULL :
			     q->errbuf[0] ? q->errbuf : curl_easy_strerror(code),
	};

	outcome_describe(&w, out, len);
}

/*
 * The error column of a request: its last attempt's, or, when libcurl's
 * re-send took it past --retries, that and what the re-send got.
 */
static void describe(struct req *q, enum outcome o, CURLcode code, char *out, size_t len)
{
	const struct lg_config *cfg = q->run->cfg;
	char got[384];

	if (q->retries <= cfg->retries) {
		describe_attempt(q, o, code, out, len);
		return;
	}
	if (q->resent_outcome == OUT_OK)
		snprintf(got, sizeof(got), "HTTP %ld", q->status);
	else
		describe_attempt(q, q->resent_outcome, code, got, sizeof(got));
	snprintf(out, len, "the reused connection broke before any answer; libcurl sent it again "
		 "on a new connection, past --retries %lld: %s%s%s", (long long)cfg->retries,
		 outcome_name(q->resent_outcome), got[0] ? ", " : "", got);
}

static void release(struct req *q);

static void on_think_due(uv_timer_t *t)
{
	struct req *q = t->data;
	struct run *run = q->run;
	uint64_t now = clock_mono_ns();

	if (now < q->free_ns) {
		/* As for the watchdog: libuv's timer may fire a little early. */
		uv_timer_start(&q->timer, on_think_due, (q->free_ns - now + 999999) / 1000000, 0);
		return;
	}
	/* The client is free: its next request is meant for free_ns (dispatch). */
	run->thinking--;
	set_state(q, REQ_FREE);
	run->idle[run->nidle++] = q;
	pump(run);
}

/*
 * Closed loop: the client of q, whose request ended at end_ns (ok or not),
 * thinks before its next request when sched_closed_free_at says so — q
 * leaves the requests in flight and holds its slot until the think is
 * over. Returns whether it thinks (when not, the caller releases q).
 */
static bool think_start(struct req *q, bool ok, uint64_t end_ns)
{
	struct run *run = q->run;
	const struct lg_config *cfg = run->cfg;
	uint64_t now = clock_mono_ns();
	double free_ms;

	if (cfg->concurrency <= 0 || run->signal)
		return false;
	free_ms = sched_closed_free_at(cfg->error_think_ms, ok, rel_ms(run, end_ns),
				       cfg->duration_ms);
	q->free_ns = timebase_mono_at(&run->tb, free_ms);
	if (q->free_ns <= now)
		return false;
	set_state(q, REQ_THINK);
	run->in_flight--;
	run->thinking++;
	uv_timer_start(&q->timer, on_think_due, (q->free_ns - now + 999999) / 1000000, 0);
	return true;
}

/* Records the request q held and frees its slot. */
static void finish(struct req *q, enum outcome o, CURLcode code, uint64_t end_ns)
{
	struct run *run = q->run;
	struct mix_stream *ms = &run->cfg->mix.streams[q->stream];
	char error[512];
	struct record rec;
	double gap_end;
	int rc;

	describe(q, o, code, error, sizeof(error));
	if (q->streaming && q->last_event_ns && end_ns > q->last_event_ns) {
		/* The silence at the end counts too (a stall's is the largest). */
		gap_end = (double)(end_ns - q->last_event_ns) / 1e6;
		if (gap_end > q->max_gap_ms)
			q->max_gap_ms = gap_end;
	}
	rec = (struct record){
		.id = q->id,
		.stream = q->stream,
		.class_name = ms->class_name,
		.tenant = ms->tenant,
		.feature = ms->feature,
		.streaming = q->streaming,
		.sched_ms = rel_ms(run, q->sched_ns),
		.start_ms = rel_ms(run, q->start_ns),
		.ttft_ms = q->first_token_ns ? (double)(q->first_token_ns -
							(q->resend_ns ? q->resend_ns :
							 q->attempt_ns)) / 1e6 : NAN,
		.end_ms = rel_ms(run, end_ns),
		.status = q->status,
		.outcome = o,
		.error = error,
		.provider = q->provider[0] ? q->provider : NULL,
		.attempts = q->attempts,
		.hedged = q->hedged,
		.retries = q->retries,
		.resends = q->resends,
		.tokens_in = q->tokens_in,
		.tokens_out = q->tokens_out >= 0 ? q->tokens_out :
			      q->streaming && q->content_chunks ? q->content_chunks : -1,
		.max_gap_ms = q->streaming ? q->max_gap_ms : NAN,
		.cost_usd = q->cost_usd,
		.degraded = q->degraded[0] ? q->degraded : NULL,
	};
	rc = recorder_add(&run->rec, &rec);
	if (rc && !run->write_failed) {
		run->write_failed = true;
		snprintf(run->write_err, sizeof(run->write_err), "cannot write a record: %s",
			 strerror(-rc));
	}
	if (!think_start(q, o == OUT_OK, end_ns))
		release(q);
	pump(run);
}

/* An attempt is over: retry it, or finish the request. */
static void attempt_end(struct req *q, CURLcode code)
{
	struct run *run = q->run;
	const struct lg_config *cfg = run->cfg;
	uint64_t end_ns = q->done_ns ? q->done_ns : clock_mono_ns();
	struct attempt_facts f;
	enum outcome o;
	double delay;

	set_state(q, REQ_DONE);
	uv_timer_stop(&q->timer);
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
	if (q->streaming && q->status >= 200 && q->status <= 299 && code == CURLE_OK &&
	    q->cut == CUT_NONE && sse_pending(&q->sse) && !q->saw_done)
		copy_detail(q, "", "stream ended mid-event, without [DONE]");
	if (!q->streaming && code == CURLE_OK && q->cut == CUT_NONE)
		check_body(q);
	else if (q->streaming && (q->status < 200 || q->status > 299))
		check_body(q);
	f = (struct attempt_facts){
		.curl_code = code,
		.status = q->status,
		.streaming = q->streaming,
		.cut = q->cut,
		.body_valid = q->body_valid,
		.sse = q->sse_type,
		.saw_done = q->saw_done,
		.error_event = q->error_event,
		.stall_event = q->stall_event,
		.bad_frame = q->bad_frame,
		.content_seen = q->first_token_ns != 0,
	};
	o = outcome_classify(&f);
	if (q->sends > 1) {
		/* libcurl sent it again by itself (on_send): those are retries too. */
		q->retries += q->sends - 1;
		q->resends += q->sends - 1;
	}
	q->resent_outcome = o;
	o = outcome_within_retries(o, q->retries, cfg->retries);
	if (o != OUT_OK && !q->add_failed && outcome_retryable(o, q->status, f.content_seen) &&
	    q->retries < cfg->retries &&
	    !run->signal) {
		delay = backoff_delay_after_ms(&cfg->backoff, (unsigned)q->retries,
					       q->retry_after_ms, &run->rng_retry);
		q->retries++;
		set_state(q, REQ_BACKOFF);
		q->retry_ns = end_ns + (uint64_t)(delay * 1e6);
		uv_timer_start(&q->timer, on_retry_due, (uint64_t)ceil(delay), 0);
		return;
	}
	finish(q, o, code, end_ns);
}

/* ---- slots ---- */

static void on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct req *q;

	(void)cu;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&q);
	attempt_end(q, result);
}

static struct req *new_slot(struct run *run)
{
	struct req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->easy = curl_easy_init();
	if (!q->easy) {
		free(q);
		return NULL;
	}
	q->run = run;
	uv_timer_init(&run->loop, &q->timer);
	q->timer.data = q;
	sse_init(&q->sse, on_event, q);
	q->id_node.data = q->id_header;
	snprintf(q->id_header, sizeof(q->id_header), "%s%s", ID_HEADER, run->cfg->id_prefix);
	q->id = q->id_header + strlen(ID_HEADER);
	q->id_number_at = strlen(q->id_header);
	curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
	curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(q->easy, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_PREREQFUNCTION, on_send);
	curl_easy_setopt(q->easy, CURLOPT_PREREQDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_ERRORBUFFER, q->errbuf);
	curl_easy_setopt(q->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(q->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(q->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	/*
	 * The targets are named on the command line: no proxy from the
	 * environment (NOPROXY spares libcurl reading it for every request).
	 */
	curl_easy_setopt(q->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(q->easy, CURLOPT_NOPROXY, "*");
	run->slots[run->nslots++] = q;
	return q;
}

/* Writes n in decimal at out, NUL-terminated (21 bytes at most). */
static void put_number(char *out, uint64_t n)
{
	char tmp[20];
	size_t len = 0;

	do {
		tmp[len++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (len)
		*out++ = tmp[--len];
	*out = '\0';
}

/* A free slot, or NULL when --connections are all in use. */
static struct req *get_slot(struct run *run)
{
	if (run->nidle)
		return run->idle[--run->nidle];
	if (run->nslots < run->maxslots)
		return new_slot(run);
	return NULL;
}

static void release(struct req *q)
{
	struct run *run = q->run;

	set_state(q, REQ_FREE);
	q->free_ns = 0;
	run->in_flight--;
	run->idle[run->nidle++] = q;
}

/*
 * Starts a new request in slot q, meant to be sent at sched_ns: the
 * stream's k-th (from 0), which decides its question when the stream asks
 * several (body.h); its retries send the same body.
 */
static void dispatch(struct run *run, struct req *q, uint64_t sched_ns, size_t stream)
{
	const struct lg_config *cfg = run->cfg;
	const struct mix_stream *ms = &cfg->mix.streams[stream];
	uint64_t n = ++run->next_n;
	uint64_t k = run->stream_sent[stream]++;

	run->in_flight++;
	q->stream = stream;
	q->streaming = mix_draw_stream(ms, &run->rng_stream);
	q->target = run->next_target++ % cfg->ntargets;
	q->retries = 0;
	q->resends = 0;
	q->sched_ns = sched_ns;
	q->free_ns = 0;
	put_number(q->id_header + q->id_number_at, n);
	q->own_body = body_varies(ms->prompts);
	q->body_failed = q->own_body && body_build(&run->tpl[stream].body[q->streaming],
						   ms->prompts, k, q->id, &q->body_out) != 0;
	run->sent++;
	if (timebase_now_ms(&run->tb) < cfg->duration_ms)
		run->started_in_window++;
	attempt_start(q);
}

/* ---- the schedule ---- */

static void maybe_end(struct run *run);

static void on_sched_timer(uv_timer_t *t)
{
	pump(t->data);
}

static void on_sched_poll(uv_poll_t *p, int status, int events)
{
	struct run *run = p->data;
	uint64_t expirations;

	(void)status;
	(void)events;
	if (read(run->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return;
	run->armed_ns = 0;
	pump(run);
}

/*
 * Wakes the schedule at the monotonic time at_ns. A timerfd wakes within
 * tens of microseconds; libuv's timers count whole milliseconds, which would
 * add up to a millisecond of send lag to every request.
 */
static void arm_sched(struct run *run, uint64_t at_ns)
{
	struct itimerspec its = { 0 };
	uint64_t now = clock_mono_ns();

	if (run->tfd >= 0) {
		if (at_ns <= now)
			at_ns = now + 1;
		if (at_ns == run->armed_ns)
			return;
		run->armed_ns = at_ns;
		its.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
		its.it_value.tv_nsec = (long)(at_ns % 1000000000u);
		if (timerfd_settime(run->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
			return;
	}
	uv_timer_start(&run->sched_timer, on_sched_timer,
		       at_ns > now ? (at_ns - now + 999999) / 1000000 : 0, 0);
}

/* Starts every request that is due and a slot is free for. */
static void pump(struct run *run)
{
	const struct lg_config *cfg = run->cfg;
	double now_ms;
	double at;
	int stream;
	struct req *q;

	while (!run->sched_over && !run->signal && !run->ended) {
		now_ms = timebase_now_ms(&run->tb);
		if (cfg->concurrency > 0) {
			if (now_ms < 0) {
				arm_sched(run, timebase_mono_at(&run->tb, 0));
				break;
			}
			if (now_ms >= cfg->duration_ms ||
			    (cfg->max_requests && run->next_n >= (uint64_t)cfg->max_requests)) {
				run->sched_over = true;
				break;
			}
			at = sched_closed_next(cfg->concurrency, cfg->ramp_up_ms, &run->clients,
					       run->in_flight + run->thinking, now_ms);
			if (at > now_ms) {
				if (!isinf(at))
					arm_sched(run, timebase_mono_at(&run->tb, at));
				break;
			}
			q = get_slot(run);
			if (!q)
				break;
			/* When the client was free: now, or when its think ended. */
			dispatch(run, q, q->free_ns ? q->free_ns : clock_mono_ns(),
				 (size_t)sched_pick(&run->sched));
			continue;
		}
		at = sched_peek(&run->sched);
		if (isinf(at)) {
			run->sched_over = true;
			break;
		}
		if (at > now_ms) {
			run->starved = false;
			arm_sched(run, timebase_mono_at(&run->tb, at));
			break;
		}
		q = get_slot(run);
		if (!q) {
			/* finish() pumps again when a slot frees. */
			if (!run->starved_warned) {
				fprintf(stderr, "loadgen: warning: all %zu --connections are busy at "
					"%.1f s; requests now wait in loadgen (their wait counts in "
					"latency_ms and send_lag_ms)\n", run->maxslots, now_ms / 1000.0);
				run->starved_warned = true;
			}
			run->starved = true;
			break;
		}
		if (!sched_next(&run->sched, &at, &stream)) {
			run->idle[run->nidle++] = q;
			run->sched_over = true;
			break;
		}
		if (run->starved)
			run->delayed++;
		dispatch(run, q, timebase_mono_at(&run->tb, at), (size_t)stream);
	}
	maybe_end(run);
}

/* ---- progress, signals, the end ---- */

static void draw_progress(struct run *run, bool last)
{
	const struct recorder *r = &run->rec;
	double now_s = timebase_now_ms(&run->tb) / 1000.0;
	uint64_t errors = r->requests - r->outcomes[OUT_OK];
	double p99 = hist_percentile_ms(r->corrected, 99);

	if (now_s < 0)
		now_s = 0;
	fprintf(stderr, "\r\033[Kloadgen %6.1f/%gs  sent %llu (%llu/s)  in flight %zu  done %llu"
		"  errors %llu (%.1f%%)  p99 %s%.1f ms",
		now_s, run->cfg->duration_ms / 1000.0, (unsigned long long)run->sent,
		(unsigned long long)(run->sent - run->sent_last_tick), run->in_flight,
		(unsigned long long)r->requests, (unsigned long long)errors,
		r->requests ? 100.0 * (double)errors / (double)r->requests : 0.0,
		isnan(p99) ? "-" : "", isnan(p99) ? 0.0 : p99);
	if (last)
		fputc('\n', stderr);
	fflush(stderr);
	run->progress_drawn = true;
}

static void on_tick(uv_timer_t *t)
{
	struct run *run = t->data;
	int rc = recorder_flush(&run->rec);

	if (rc && !run->write_failed) {
		run->write_failed = true;
		snprintf(run->write_err, sizeof(run->write_err), "cannot write records: %s",
			 strerror(-rc));
	}
	if (run->cfg->progress)
		draw_progress(run, false);
	run->sent_last_tick = run->sent;
}

/* Stops every request in progress without recording it. */
static void cancel_all(struct run *run)
{
	size_t i;
	struct req *q;

	for (i = 0; i < run->nslots; i++) {
		q = run->slots[i];
		if (q->state == REQ_FREE)
			continue;
		if (q->state == REQ_THINK) {
			/* No request: nothing unfinished. */
			uv_timer_stop(&q->timer);
			run->thinking--;
			set_state(q, REQ_FREE);
			run->idle[run->nidle++] = q;
			continue;
		}
		if (q->state == REQ_SENDING && !q->add_failed)
			curl_uv_remove(&run->cu, q->easy);
		uv_timer_stop(&q->timer);
		run->unfinished++;
		release(q);
	}
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct run *run = s->data;

	if (run->signal)
		return;
	run->signal = signum;
	run->stop_ns = clock_mono_ns();
	cancel_all(run);
	maybe_end(run);
}

static void on_closed_noop(uv_handle_t *h)
{
	(void)h;
}

static void on_curl_closed(struct curl_uv *cu)
{
	(void)cu;
}

/* Ends the run once nothing is left to send or wait for. */
static void maybe_end(struct run *run)
{
	size_t i;

	if (run->ended || run->in_flight || !(run->sched_over || run->signal))
		return;
	run->ended = true;
	if (run->cfg->progress && run->progress_drawn)
		draw_progress(run, true);
	for (i = 0; i < run->nslots; i++)
		uv_close((uv_handle_t *)&run->slots[i]->timer, on_closed_noop);
	uv_close((uv_handle_t *)&run->sched_timer, on_closed_noop);
	if (run->tfd >= 0) {
		uv_poll_stop(&run->sched_poll);
		uv_close((uv_handle_t *)&run->sched_poll, on_closed_noop);
	}
	uv_close((uv_handle_t *)&run->tick, on_closed_noop);
	uv_close((uv_handle_t *)&run->waketick, on_closed_noop);
	uv_close((uv_handle_t *)&run->sigint, on_closed_noop);
	uv_close((uv_handle_t *)&run->sigterm, on_closed_noop);
	curl_uv_close(&run->cu, on_curl_closed);
}

/* ---- setting up and tearing down ---- */

/* Parses each target once, for CURLOPT_CURLU. Returns 0, -ENOMEM or -EINVAL. */
static int parse_targets(struct run *run)
{
	const struct lg_config *cfg = run->cfg;
	size_t i;

	run->target_urls = calloc(cfg->ntargets, sizeof(*run->target_urls));
	if (!run->target_urls)
		return -ENOMEM;
	for (i = 0; i < cfg->ntargets; i++) {
		run->target_urls[i] = curl_url();
		if (!run->target_urls[i])
			return -ENOMEM;
		if (curl_url_set(run->target_urls[i], CURLUPART_URL, cfg->targets[i], 0))
			return -EINVAL;
	}
	return 0;
}

/* Builds each stream's bodies and header lists. Returns 0 or -ENOMEM. */
static int build_templates(struct run *run)
{
	const struct lg_config *cfg = run->cfg;
	const struct mix *mix = &cfg->mix;
	struct curl_slist *h;
	char line[512];
	size_t i;
	size_t j;
	int s;

	run->tpl = calloc(mix->n, sizeof(*run->tpl));
	run->stream_sent = calloc(mix->n, sizeof(*run->stream_sent));
	run->stream_names = calloc(mix->n, sizeof(*run->stream_names));
	if (!run->tpl || !run->stream_sent || !run->stream_names)
		return -ENOMEM;
	for (i = 0; i < mix->n; i++) {
		const struct mix_stream *ms = &mix->streams[i];

		run->stream_names[i] = ms->name;
		for (s = 0; s < 2; s++) {
			if (body_tpl_init(&run->tpl[i].body[s], ms, s))
				return -ENOMEM;
			h = curl_slist_append(NULL, "Content-Type: application/json");
			h = h ? curl_slist_append(h, s ? "Accept: text/event-stream" :
						  "Accept: application/json") : NULL;
			/* No "Expect: 100-continue" round trip for large prompts. */
			h = h ? curl_slist_append(h, "Expect:") : NULL;
			snprintf(line, sizeof(line), "x-faultline-class: %s", ms->class_name);
			h = h ? curl_slist_append(h, line) : NULL;
			if (h && ms->tenant[0]) {
				snprintf(line, sizeof(line), "x-faultline-tenant: %s", ms->tenant);
				h = curl_slist_append(h, line);
			}
			if (h && ms->feature[0]) {
				snprintf(line, sizeof(line), "x-faultline-feature: %s", ms->feature);
				h = curl_slist_append(h, line);
			}
			for (j = 0; h && j < ms->nheaders; j++)
				h = curl_slist_append(h, ms->headers[j]);
			for (j = 0; h && j < cfg->nheaders; j++)
				h = curl_slist_append(h, cfg->headers[j]);
			if (!h)
				return -ENOMEM;
			run->tpl[i].headers[s] = h;
		}
	}
	return 0;
}

static void free_run(struct run *run)
{
	size_t i;

	for (i = 0; i < run->nslots; i++) {
		curl_easy_cleanup(run->slots[i]->easy);
		buf_free(&run->slots[i]->body);
		buf_free(&run->slots[i]->body_out);
		sse_free_parser(&run->slots[i]->sse);
		free(run->slots[i]);
	}
	free(run->slots);
	free(run->idle);
	for (i = 0; run->tpl && i < run->cfg->mix.n; i++) {
		body_tpl_free(&run->tpl[i].body[0]);
		body_tpl_free(&run->tpl[i].body[1]);
		/* The lists were built with curl_slist_append (their first node, too). */
		curl_slist_free_all(run->tpl[i].headers[0]);
		curl_slist_free_all(run->tpl[i].headers[1]);
	}
	free(run->tpl);
	for (i = 0; run->target_urls && i < run->cfg->ntargets; i++)
		curl_url_cleanup(run->target_urls[i]);
	free(run->target_urls);
	free(run->stream_sent);
	free(run->stream_names);
	sched_free(&run->sched);
	recorder_free(&run->rec);
	arena_free(&run->arena);
}

int run_load(const struct lg_config *cfg)
{
	struct run *run = calloc(1, sizeof(*run));
	struct run_info info;
	char err[512];
	int status = 0;
	int rc;

	if (!run) {
		fprintf(stderr, "loadgen: out of memory\n");
		return 1;
	}
	run->cfg = cfg;
	arena_init(&run->arena);
	note_wanted_headers(run);
	timebase_init(&run->tb, cfg->t0_unix_ms);
	rng_seed_stream(&run->rng_stream, cfg->seed, LG_RNG_STREAMING);
	rng_seed_stream(&run->rng_retry, cfg->seed, LG_RNG_RETRY);
	run->maxslots = (size_t)(cfg->concurrency > 0 ? cfg->concurrency : cfg->connections);
	run->slots = calloc(run->maxslots, sizeof(*run->slots));
	run->idle = calloc(run->maxslots, sizeof(*run->idle));
	rc = run->slots && run->idle ? 0 : -ENOMEM;
	if (!rc)
		rc = build_templates(run);
	if (!rc)
		rc = parse_targets(run);
	if (!rc)
		rc = sched_init_load(&run->sched, &cfg->mix, cfg->rate, cfg->arrival, cfg->concurrency,
				     cfg->duration_ms, cfg->seed, cfg->max_requests);
	if (rc) {
		fprintf(stderr, "loadgen: cannot set up the run: %s\n", strerror(-rc));
		free_run(run);
		free(run);
		return 1;
	}
	rc = recorder_open(&run->rec, cfg->out_dir, run->stream_names, cfg->mix.n, err,
			   sizeof(err));
	if (rc) {
		fprintf(stderr, "loadgen: %s\n", err);
		free_run(run);
		free(run);
		return 1;
	}
	rc = uv_loop_init(&run->loop);
	if (rc == 0) {
		rc = curl_uv_init(&run->cu, &run->loop, on_done);
		if (rc)
			uv_loop_close(&run->loop);
	}
	if (rc) {
		fprintf(stderr, "loadgen: cannot start the event loop: %s\n", uv_strerror(rc));
		recorder_abandon(&run->rec);
		free_run(run);
		free(run);
		return 1;
	}
	run->cu.data = run;
	if (cfg->concurrency == 0)
		curl_multi_setopt(run->cu.multi, CURLMOPT_MAXCONNECTS, (long)run->maxslots);
	uv_timer_init(&run->loop, &run->sched_timer);
	run->sched_timer.data = run;
	run->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (run->tfd >= 0 && uv_poll_init(&run->loop, &run->sched_poll, run->tfd) == 0) {
		run->sched_poll.data = run;
		uv_poll_start(&run->sched_poll, UV_READABLE, on_sched_poll);
	} else if (run->tfd >= 0) {
		close(run->tfd);
		run->tfd = -1;
	}
	uv_timer_init(&run->loop, &run->tick);
	run->tick.data = run;
	uv_timer_start(&run->tick, on_tick, 1000, 1000);
	waketick_start(&run->loop, &run->waketick);
	uv_signal_init(&run->loop, &run->sigint);
	run->sigint.data = run;
	uv_signal_start(&run->sigint, on_signal, SIGINT);
	uv_signal_init(&run->loop, &run->sigterm);
	run->sigterm.data = run;
	uv_signal_start(&run->sigterm, on_signal, SIGTERM);

	pump(run);
	uv_run(&run->loop, UV_RUN_DEFAULT);
	uv_loop_close(&run->loop);
	if (run->tfd >= 0)
		close(run->tfd);

	run_info_of(cfg, &info);
	info.started_in_window = run->started_in_window;
	info.unfinished = run->unfinished;
	info.interrupted = run->signal != 0;
	info.elapsed_ms = run->signal ? rel_ms(run, run->stop_ns) : timebase_now_ms(&run->tb);
	if (run->signal)
		info.window_ms = fmin(cfg->duration_ms, fmax(0, rel_ms(run, run->stop_ns)));
	info.connections = cfg->concurrency > 0 ? 0 : (int64_t)run->maxslots;
	info.delayed_by_connections = run->delayed;
	if (run->write_failed) {
		fprintf(stderr, "loadgen: %s; the records are left as requests.csv.tmp and "
			"requests.jsonl.tmp\n", run->write_err);
		recorder_keep_short(&run->rec);
		status = 1;
	} else if (recorder_finish(&run->rec, &info, err, sizeof(err))) {
		fprintf(stderr, "loadgen: %s\n", err);
		status = 1;
	} else if (run->signal) {
		fprintf(stderr, "loadgen: stopped by %s; %llu requests in flight not recorded\n",
			strsignal(run->signal), (unsigned long long)run->unfinished);
		status = 128 + run->signal;
	}
	free_run(run);
	free(run);
	return status;
}
