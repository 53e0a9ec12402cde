/*
 * provider: serving one mock provider.
 *
 * A chat completion's life (or a Messages request's, in the anthropic
 * dialect): on_completion (parse, decide faults, plan the timing) → either
 * an immediate answer (status, 429, reset, down), nothing at all (hang),
 * or the content (make_content: the words, or a document for the
 * request's output contract, or a bad_content's) and timer steps: on_token
 * for streams (one SSE event per token, at ttft + k × token_ms after
 * arrival), on_whole for plain JSON (at the last token's time). A model
 * listing (GET …/models) is answered like a one-token plain answer with no
 * body to parse. Every request ends in req_finish, which writes its log
 * row — whether it completed, the client left (on_abort) or the server
 * closed it. What the bytes look like is the provider's dialect's
 * (mockprov/wire.h); when they go out is decided here.
 */
#include "mockprov/provider.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/log.h"
#include "common/opt.h"
#include "common/records.h"
#include "mockprov/contract.h"
#include "mockprov/timing.h"
#include "mockprov/wire.h"

/* Stream output queued for a slow reader before the stream waits for it. */
#define STREAM_QUEUE_MAX (64 * 1024)

enum req_kind { REQ_CHAT, REQ_MODELS };

struct mreq {
	uv_timer_t timer;		/* first: the handle's memory is the request's */
	struct provider *p;
	struct http_exchange *ex;	/* NULL once the exchange has ended */
	struct list_node link;		/* on p->inflight until finished */
	enum req_kind kind;
	uint64_t arrive_ns;
	double t_ms;
	char *request_id;		/* x-request-id, or NULL */
	char id[48];			/* chatcmpl-mock-…, msg_mock-… */
	struct buf model;		/* the model to echo, as a JSON string */
	struct wire_answer ans;		/* what the dialect's writers read */
	cJSON *rf;			/* the request's response_format until the content is made */
	struct buf text;		/* the content, when not the provider's words as they are */
	size_t *off;			/* with text: token k's piece is text[off[k] … off[k+1]) */
	bool timer_open;		/* the timer handle exists (schedule() made it) */
	bool streaming;
	struct fault_decision fd;	/* its fault pointers are cleared: see decide() */
	struct fault decider;		/* a copy of the deciding fault */
	enum fault_kind act;		/* the decider's kind, or FAULT_NKINDS */
	int cut;			/* stall/truncate/error_event: tokens before */
	struct timing_plan plan;
	int next_token;			/* streaming: tokens sent */
	bool paused;			/* streaming: waiting for the client to read */
	int status;
	double ttft_ms;			/* NaN until a token was sent */
	int tokens_out;
	bool fired;			/* the deciding fault took effect */
	bool ended;
};

static void req_finish(struct mreq *m, enum mock_outcome outcome, const char *extra_fault);
static void schedule(struct mreq *m, double ms_after_arrival, uv_timer_cb cb);

/* ---- helpers ---- */

static double ms_since(uint64_t from_ns)
{
	return (double)(clock_mono_ns() - from_ns) / 1e6;
}

static bool path_is(const char *path, const char *suffix)
{
	/* Both /v1/… and the bare /… are accepted, as base URLs differ. */
	if (strncmp(path, "/v1", 3) == 0)
		path += 3;
	return strcmp(path, suffix) == 0;
}

/*
 * The headers every answer carries — who answered, the request id — plus
 * the dialect's rate_limit ones while such a window is open. At most 8.
 */
static size_t base_headers(const struct mreq *m, struct http_kv *h,
			   char bufs[][WIRE_HDR_LEN])
{
	const struct fault_decision *d = &m->fd;
	const struct timebase *tb = &m->p->env->tb;
	size_t n = 0;

	h[n++] = (struct http_kv){ "x-mock-provider", m->p->cfg->name };
	if (m->request_id)
		h[n++] = (struct http_kv){ "x-request-id", m->request_id };
	if (d->rate_rpm > 0 || d->rate_tpm > 0)
		n += m->p->wire->rate_headers(d, (double)tb->t0_unix_ms + timebase_now_ms(tb),
					      h + n, bufs);
	return n;
}

/* Sends a whole JSON answer, which ends the exchange; returns http_respond's result. */
static int send_json(struct mreq *m, int status, const struct buf *body)
{
	struct http_kv h[10];
	char bufs[WIRE_RATE_HEADERS][WIRE_HDR_LEN];
	size_t n = base_headers(m, h, bufs);
	struct http_exchange *ex = m->ex;
	int rc;

	h[n++] = (struct http_kv){ "Content-Type", "application/json" };
	m->ex = NULL;
	rc = http_respond(ex, status, h, n, body->data, body->len);
	if (!rc)
		m->status = status;
	return rc;
}

/*
 * Sends e in the provider's dialect (and retry-after when given), which
 * ends the exchange, and frees e. Returns http_respond's result.
 */
static int send_error(struct mreq *m, struct wire_error *e, const char *retry_after)
{
	struct http_kv h[11];
	char bufs[WIRE_RATE_HEADERS][WIRE_HDR_LEN];
	struct buf body = { 0 };
	struct http_exchange *ex = m->ex;
	size_t n = 1;
	int rc;

	h[0] = (struct http_kv){ "Content-Type", "application/json" };
	n += base_headers(m, h + 1, bufs);
	if (retry_after)
		h[n++] = (struct http_kv){ "retry-after", retry_after };
	m->p->wire->error_body(&body, e);
	m->ex = NULL;
	rc = http_respond(ex, e->status, h, n, body.data, body.len);
	if (!rc)
		m->status = e->status;
	buf_free(&body);
	wire_error_free(e);
	return rc;
}

/* Sends the dialect's error for situation s (status: a `status` fault's). */
static int send_situation(struct mreq *m, enum wire_situation s, int status,
			  const char *retry_after)
{
	struct wire_error e = { 0 };

	m->p->wire->error_for(s, status, &e);
	return send_error(m, &e, retry_after);
}

/* ---- log ---- */

/*
 * The request log could not be written (err: an errno): say so once, naming
 * the file, and write no more of it. A log with rows missing must not pass
 * for a whole one, so provider_stop leaves it under its .tmp name.
 */
static void log_failed(struct provider *p, int err)
{
	if (p->log_err)
		return;
	p->log_err = err ? err : EIO;
	log_error("%s: cannot write the request log %s: %s; it keeps that name, incomplete, "
		  "and mockprov will exit with status 1", p->cfg->name, p->log.tmp,
		  strerror(p->log_err));
}

/* Closes a log that could not be written whole, leaving it as NAME.tmp. */
static void log_row(struct provider *p, const struct mreq *m, const char *fault,
		    enum mock_outcome outcome)
{
	const struct mock_record rec = {
		.t_ms = m->t_ms,
		.request_id = m->request_id,
		.streaming = m->streaming,
		.fault = fault,
		.status = m->status,
		.ttft_ms = m->ttft_ms,
		.dur_ms = ms_since(m->arrive_ns),
		.tokens_out = m->kind == REQ_MODELS ? 0 : m->tokens_out,
		.outcome = outcome,
		.kind = m->kind == REQ_MODELS ? MOCK_KIND_MODELS : MOCK_KIND_CHAT,
	};
	struct row *r = &p->row;
	int rc;

	if (p->log_err || !p->log.fp)
		return;
	/* The row's columns are common/records.h's mock_columns. */
	if (mock_record_row(r, &rec)) {
		log_failed(p, ENOMEM);
		return;
	}
	/* recfile_write says -EIO for a short fwrite: the write's errno
	 * (ENOSPC, EFBIG…) tells the user more. */
	errno = 0;
	rc = recfile_write(&p->log, r->b.data, r->b.len);
	if (rc)
		log_failed(p, errno ? errno : -rc);
}

void provider_flush_log(struct provider *p)
{
	int rc;

	if (!p->log.fp || p->log_err)
		return;
	rc = recfile_flush(&p->log);
	if (rc)
		log_failed(p, -rc);
}

/* ---- request life ---- */

static void req_free(struct mreq *m)
{
	buf_free(&m->model);
	buf_free(&m->ans.prefix);
	cJSON_Delete(m->rf);
	buf_free(&m->text);
	free(m->off);
	free(m->request_id);
	free(m);
}

static void on_req_closed(uv_handle_t *h)
{
	req_free(h->data);
}

/*
 * Ends a request: writes its log row (chat completions and model listings;
 * the kind column tells them apart), counts a chat completion's outcome,
 * unlinks it and releases it. The exchange must already have ended.
 */
static void req_finish(struct mreq *m, enum mock_outcome outcome, const char *extra_fault)
{
	struct provider *p = m->p;
	char fault[128];

	if (m->ended)
		return;
	m->ended = true;
	snprintf(fault, sizeof(fault), "%s%s%s", m->fd.applied,
		 extra_fault && m->fd.applied[0] ? "+" : "", extra_fault ? extra_fault : "");
	log_row(p, m, fault, outcome);
	if (m->kind == REQ_CHAT) {
		if (outcome == MOCK_COMPLETED)
			p->n_completed++;
		else if (outcome == MOCK_CLIENT_ABORTED)
			p->n_aborted++;
		else
			p->n_faulted++;
	}
	list_remove(&p->inflight, &m->link);
	/* Most plain answers never needed a timer: free them at once. */
	if (m->timer_open)
		uv_close((uv_handle_t *)&m->timer, on_req_closed);
	else
		req_free(m);
}

/* The exchange ended because of a write (reset budget reached, peer gone). */
static void req_write_failed(struct mreq *m, int rc)
{
	m->ex = NULL;
	if (rc == -ECONNRESET && m->act == FAULT_RESET) {
		m->fired = true;
		req_finish(m, MOCK_FAULTED, NULL);
	} else {
		req_finish(m, m->fired ? MOCK_FAULTED : MOCK_CLIENT_ABORTED, NULL);
	}
}

static void on_abort(struct http_exchange *ex, void *data, enum http_abort_reason why)
{
	struct mreq *m = data;
	const char *extra = NULL;

	(void)ex;
	m->ex = NULL;
	/* A plain answer on its way had generated tokens by now; a hang none. */
	if (!m->streaming && m->status == 0 && m->kind == REQ_CHAT && !m->fired)
		m->tokens_out = timing_tokens_by(&m->plan, ms_since(m->arrive_ns));
	if (why == HTTP_ABORT_SERVER && !m->fired) {
		extra = m->p->going_down ? "down" : "shutdown";
		m->fired = true;
	}
	req_finish(m, m->fired ? MOCK_FAULTED : MOCK_CLIENT_ABORTED, extra);
}

/* Starts the request's timer so cb runs ms_after_arrival after it came. */
static void schedule(struct mreq *m, double ms_after_arrival, uv_timer_cb cb)
{
	uv_loop_t *loop = m->p->env->loop;
	double due_ms = (double)m->arrive_ns / 1e6 + ms_after_arrival;
	double delay;

	if (!m->timer_open) {
		uv_timer_init(loop, &m->timer);
		m->timer.data = m;
		m->timer_open = true;
	}
	/* uv_now() is the loop's cached time: measure the delay from it, so a
	 * timer armed late in an iteration does not fire early. */
	delay = ceil(due_ms - (double)uv_now(loop));
	uv_timer_start(&m->timer, cb, delay > 0 ? (uint64_t)delay : 0, 0);
}

/* True when an answer due ms_after_arrival is due already. */
static bool due_now(const struct mreq *m, double ms_after_arrival)
{
	return ms_after_arrival <= 0 ||
	       (double)clock_mono_ns() >= (double)m->arrive_ns + ms_after_arrival * 1e6;
}

/* ---- answers ---- */

/*
 * Points m's answer at its content — the request's own (escaped) or the
 * provider's words — once the content is made and the plan is known.
 */
static void describe_answer(struct mreq *m)
{
	const struct provider *p = m->p;
	struct wire_answer *a = &m->ans;

	a->id = m->id;
	a->model = &m->model;
	a->tokens = m->plan.tokens;
	a->escape = m->off != NULL;
	a->text = m->off ? m->text.data : p->content.data;
	a->off = m->off ? m->off : p->token_off;
}

/* Headers with the Content-Length of the whole body, but only its first cut_at bytes. */
static int send_partial(struct mreq *m, const struct buf *body, size_t cut_at)
{
	struct http_kv h[10];
	char bufs[WIRE_RATE_HEADERS][WIRE_HDR_LEN];
	size_t n = base_headers(m, h, bufs);
	int rc;

	h[n++] = (struct http_kv){ "Content-Type", "application/json" };
	rc = http_respond_head(m->ex, 200, h, n, body->len);
	if (rc)
		return rc;
	m->status = 200;
	return cut_at ? http_write_raw(m->ex, body->data, cut_at) : 0;
}

/* A plain (non-streaming) answer is due. */
static void answer_whole(struct mreq *m)
{
	struct buf body = { 0 };
	size_t cut_at = 0;
	int rc;

	if (m->kind == REQ_MODELS) {
		m->p->wire->models(&body, m->p->cfg->model);
		if (m->act == FAULT_MALFORMED) {
			m->fired = true;
			body.len /= 2;
		}
		rc = send_json(m, 200, &body);
		req_finish(m, m->fired || rc ? MOCK_FAULTED : MOCK_COMPLETED, NULL);
		goto out;
	}
	m->ans.created = (long long)time(NULL);
	m->p->wire->whole(&body, &m->ans, m->cut > 0 ? m->cut : 0, &cut_at);
	/* The tokens exist now, whatever reaches the client. */
	m->tokens_out = m->plan.tokens;
	switch (m->act) {
	case FAULT_STALL:
	case FAULT_TRUNCATE:
		m->fired = true;
		m->tokens_out = m->cut;
		rc = send_partial(m, &body, cut_at);
		if (rc) {
			req_write_failed(m, rc);
			goto out;
		}
		if (m->cut > 0)
			m->ttft_ms = ms_since(m->arrive_ns);
		if (m->act == FAULT_STALL)
			goto out;	/* silence until the client leaves */
		http_exchange_close(m->ex, false);
		m->ex = NULL;
		req_finish(m, MOCK_FAULTED, NULL);
		goto out;
	case FAULT_ERROR_EVENT:
		m->fired = true;
		m->tokens_out = m->cut;	/* generated before the error */
		send_situation(m, WIRE_ERR_ERROR_EVENT, 500, NULL);
		req_finish(m, MOCK_FAULTED, NULL);
		goto out;
	case FAULT_MALFORMED:
		m->fired = true;
		body.len /= 2;	/* any proper prefix of an object is invalid JSON */
		break;
	case FAULT_BAD_CONTENT:
		m->fired = true;	/* a 200 whose content breaks the contract */
		break;
	case FAULT_RESET:
		/* Head and body apart, so the row knows whether the status went
		 * out whole before the cut. */
		rc = send_partial(m, &body, body.len);
		if (!rc)
			rc = http_stream_end(m->ex);
		if (rc) {
			req_write_failed(m, rc);
			goto out;
		}
		m->ttft_ms = ms_since(m->arrive_ns);
		m->ex = NULL;
		req_finish(m, MOCK_COMPLETED, NULL);	/* the budget outlasted the answer */
		goto out;
	default:
		break;
	}
	rc = send_json(m, 200, &body);
	if (rc) {
		req_write_failed(m, rc);
		goto out;
	}
	m->ttft_ms = ms_since(m->arrive_ns);
	req_finish(m, m->fired ? MOCK_FAULTED : MOCK_COMPLETED, NULL);
out:
	buf_free(&body);
}

static void on_whole(uv_timer_t *t)
{
	answer_whole(t->data);
}

/* Sends the plain answer at its time: at once when it is due already. */
static void schedule_whole(struct mreq *m, double ms_after_arrival)
{
	if (due_now(m, ms_after_arrival))
		answer_whole(m);
	else
		schedule(m, ms_after_arrival, on_whole);
}

/* Records that the stream's first `sent` tokens have been written. */
static void note_sent(struct mreq *m, int sent)
{
	if (m->next_token == 0 && sent > 0)
		m->ttft_ms = ms_since(m->arrive_ns);
	m->next_token = sent;
	m->tokens_out = sent;
}

/*
 * Writes out (ending with token `sent`), then ends the stream, and the
 * request with outcome.
 */
static void stream_finish(struct mreq *m, const struct buf *out, int sent,
			  enum mock_outcome outcome)
{
	int rc = out->len ? http_stream_write(m->ex, out->data, out->len) : 0;

	if (!rc) {
		note_sent(m, sent);
		rc = http_stream_end(m->ex);
	}
	if (rc) {
		req_write_failed(m, rc);	/* e.g. a reset budget cut the end */
		return;
	}
	m->ex = NULL;
	req_finish(m, outcome, NULL);
}

static void on_token(uv_timer_t *t);

/*
 * The stream's next step, at its token's time, in one write: the next token
 * and whatever follows it at once — the finish and [DONE] after the last
 * one, or the fault (stall, truncate, error_event) after m->cut of them. A
 * token counts as sent once its bytes were written.
 */
static void stream_step(struct mreq *m)
{
	struct buf out = { 0 };
	int k = m->next_token;
	int sent = k;
	int rc;

	if (m->act == FAULT_MALFORMED) {
		m->fired = true;
		m->p->wire->stream_malformed(&out, &m->ans);
		stream_finish(m, &out, 0, MOCK_FAULTED);
		goto out;
	}
	if (k != m->cut) {
		m->p->wire->stream_token(&out, &m->ans, k);
		sent = k + 1;
		if (m->act == FAULT_BAD_CONTENT)
			m->fired = true;
	}
	if (sent == m->cut) {
		m->fired = true;
		if (m->act == FAULT_ERROR_EVENT)
			m->p->wire->stream_error(&out);
		if (m->act != FAULT_STALL) {
			/* truncate and error_event end cleanly, without [DONE] */
			stream_finish(m, &out, sent, MOCK_FAULTED);
			goto out;
		}
	} else if (sent == m->plan.tokens) {
		m->p->wire->stream_finish(&out, &m->ans);
		stream_finish(m, &out, sent, m->fired ? MOCK_FAULTED : MOCK_COMPLETED);
		goto out;
	}
	rc = out.len ? http_stream_write(m->ex, out.data, out.len) : 0;
	if (rc) {
		req_write_failed(m, rc);
		goto out;
	}
	note_sent(m, sent);
	if (sent == m->cut)
		goto out;	/* a stall: silent until the client leaves */
	/* A client that reads slower than tokens come holds the stream back,
	 * as TCP would hold back a real server: on_drain resumes it. */
	if (http_exchange_queued(m->ex) > STREAM_QUEUE_MAX) {
		m->paused = true;
		goto out;
	}
	schedule(m, timing_token_at(&m->plan, m->next_token), on_token);
out:
	buf_free(&out);
}

static void on_token(uv_timer_t *t)
{
	stream_step(t->data);
}

/* The client took the queued stream: go on (the next token is due already). */
static void on_drain(struct http_exchange *ex, void *data)
{
	struct mreq *m = data;

	(void)ex;
	if (!m->paused)
		return;
	m->paused = false;
	schedule(m, timing_token_at(&m->plan, m->next_token), on_token);
}

/*
 * Starts an SSE answer: headers now, with whatever the dialect sends
 * before the first token (Anthropic's message_start…); tokens on the timer.
 */
static void start_stream(struct mreq *m)
{
	struct http_kv h[10];
	char bufs[WIRE_RATE_HEADERS][WIRE_HDR_LEN];
	size_t n = base_headers(m, h, bufs);
	struct buf head = { 0 };
	int rc;

	h[n++] = (struct http_kv){ "Content-Type", "text/event-stream" };
	h[n++] = (struct http_kv){ "Cache-Control", "no-cache" };
	m->ans.created = (long long)time(NULL);
	m->p->wire->stream_begin(&head, &m->ans);
	rc = http_stream_begin(m->ex, 200, h, n);
	if (!rc)
		m->status = 200;
	if (!rc && head.len)
		rc = http_stream_write(m->ex, head.data, head.len);
	buf_free(&head);
	if (rc) {
		req_write_failed(m, rc);
		return;
	}
	schedule(m, timing_token_at(&m->plan, 0), on_token);
}

/* ---- requests ---- */

static struct mreq *req_new(struct provider *p, struct http_exchange *ex,
			    const struct http_request *req, enum req_kind kind)
{
	struct mreq *m = calloc(1, sizeof(*m));
	const char *rid;

	if (!m)
		return NULL;
	m->p = p;
	m->ex = ex;
	m->kind = kind;
	m->arrive_ns = req->recv_ns;
	m->t_ms = timebase_rel_ms(&p->env->tb, req->recv_ns);
	m->ttft_ms = NAN;
	m->act = FAULT_NKINDS;
	m->cut = -1;
	rid = http_request_header(req, "x-request-id");
	if (rid)
		m->request_id = strdup(rid);	/* NULL if out of memory: not echoed */
	snprintf(m->id, sizeof(m->id), "%s%s-%llu", p->wire->id_prefix, p->cfg->name,
		 (unsigned long long)++p->seq);
	list_push_front(&p->inflight, &m->link);
	if (kind == REQ_CHAT)
		p->n_requests++;
	http_exchange_set_data(ex, m, on_abort, on_drain);
	return m;
}

/*
 * Reads the request's headers and body into m in the provider's dialect.
 * Returns 0 when it is acceptable, else answers the dialect's error (400,
 * 401, 404), which ends the exchange, and returns -1.
 */
static int parse_request(struct mreq *m, const struct http_request *req, int *max_tokens)
{
	const struct provider *p = m->p;
	struct wire_request r = { 0 };
	struct wire_error e = { 0 };
	int rc;

	rc = p->wire->check_headers(req, &e);
	if (!rc)
		rc = p->wire->parse(req->body, req->body_len,
				    p->cfg->strict_model ? p->cfg->model : NULL, &r, &e);
	if (rc) {
		send_error(m, &e, NULL);
		buf_free(&r.model);
		cJSON_Delete(r.rf);
		return -1;
	}
	m->model = r.model;
	m->rf = r.rf;
	m->streaming = r.streaming;
	m->ans.include_usage = r.include_usage;
	m->ans.prompt_tokens = r.prompt_tokens;
	*max_tokens = r.max_tokens;
	return 0;
}

/*
 * Decides the request's faults. The decision's pointers into p->faults are
 * copied and cleared: an admin injection may move the list while the
 * request waits for its timer.
 */
static void decide(struct mreq *m, double token_cost)
{
	struct provider *p = m->p;
	/* Model listings draw from their own stream, so a health checker's
	 * polling does not change which chat requests are faulted. */
	struct rng *rng = m->kind == REQ_MODELS ? &p->rng_models : &p->rng_faults;

	fault_decide(p->faults, p->nfaults, m->t_ms, token_cost, rng, &m->fd);
	if (m->fd.decider) {
		m->decider = *m->fd.decider;
		m->act = m->decider.kind;
	}
	m->fd.decider = NULL;
	m->fd.rate = NULL;
}

/*
 * Splits the n-token content text into n pieces of about equal length, each
 * cut between UTF-8 sequences: how a document that does not hold the
 * words is streamed.
 */
static void split_even(const struct buf *text, int n, size_t *off)
{
	size_t at;
	int k;

	off[0] = 0;
	for (k = 1; k < n; k++) {
		at = text->len * (size_t)k / (size_t)n;
		if (at < off[k - 1])
			at = off[k - 1];
		while (at < text->len && ((unsigned char)text->data[at] & 0xC0) == 0x80)
			at++;
		off[k] = at;
	}
	off[n] = text->len;
}

/*
 * Makes the answer's content when it is not the provider's words as they
 * are: a document for the request's response_format, or a bad_content
 * fault's. The words are the answer's tokens; when the content holds them
 * (contract_content's text_at), token k's piece is its word, the text
 * before the words going with the first token and the text after them with
 * the last, so a stream's chunks follow the timing model and usage counts
 * the words alone; else the content is cut into even pieces. Out of
 * memory, the answer is the words (said in the log).
 */
static void make_content(struct mreq *m)
{
	const struct provider *p = m->p;
	enum contract_violation v = m->act == FAULT_BAD_CONTENT
					    ? (enum contract_violation)m->decider.violation
					    : VIOLATION_NONE;
	int n = m->plan.tokens;
	struct contract c;
	size_t at;
	int k;

	contract_read(m->rf, &c);
	if (c.kind == CONTRACT_NONE && v == VIOLATION_NONE)
		goto out;
	m->off = calloc((size_t)n + 1, sizeof(*m->off));
	if (!m->off || contract_content(&c, v, p->content.data, p->token_off[n], &m->text, &at)) {
		log_warn("%s: out of memory making an answer's content; it is the words alone",
			 p->cfg->name);
		free(m->off);
		m->off = NULL;
		buf_free(&m->text);
		goto out;
	}
	if (at == SIZE_MAX) {
		split_even(&m->text, n, m->off);
		goto out;
	}
	m->off[0] = 0;
	for (k = 1; k < n; k++)
		m->off[k] = at + p->token_off[k];
	m->off[n] = m->text.len;
out:
	cJSON_Delete(m->rf);
	m->rf = NULL;
}

/*
 * Applies a deciding fault that answers at once (down, reset at byte 0,
 * hang, status, 429), or arms a later reset. Returns true when the request
 * needs nothing more now.
 */
static bool answer_at_once(struct mreq *m)
{
	const struct fault *f = &m->decider;
	char retry[32];

	switch (m->act) {
	case FAULT_DOWN:
	case FAULT_RESET:
		if (m->act == FAULT_RESET && f->after_bytes > 0) {
			http_exchange_set_reset_after(m->ex, (size_t)f->after_bytes);
			return false;
		}
		m->fired = true;
		http_exchange_close(m->ex, true);
		m->ex = NULL;
		req_finish(m, MOCK_FAULTED, NULL);
		return true;
	case FAULT_HANG:
		m->fired = true;
		return true;	/* read, never answered; on_abort logs it */
	case FAULT_STATUS:
		m->fired = true;
		if (f->retry_after_s >= 0)
			snprintf(retry, sizeof(retry), "%.0f", ceil(f->retry_after_s));
		send_situation(m, WIRE_ERR_STATUS, (int)f->status,
			       f->retry_after_s >= 0 ? retry : NULL);
		req_finish(m, MOCK_FAULTED, NULL);
		return true;
	case FAULT_RATE_LIMIT:
		m->fired = true;
		snprintf(retry, sizeof(retry), "%.0f", m->fd.retry_after_s);
		send_situation(m, WIRE_ERR_RATE_LIMIT, 429, retry);
		req_finish(m, MOCK_FAULTED, NULL);
		return true;
	default:
		return false;
	}
}

static void on_completion(struct provider *p, struct http_exchange *ex,
			  const struct http_request *req)
{
	struct mreq *m = req_new(p, ex, req, REQ_CHAT);
	int max_tokens;
	int tokens;

	if (!m) {
		http_exchange_close(ex, true);
		return;
	}
	if (parse_request(m, req, &max_tokens)) {
		req_finish(m, MOCK_COMPLETED, NULL);
		return;
	}
	tokens = (int)p->cfg->output_tokens;
	if (max_tokens > 0 && max_tokens < tokens) {
		tokens = max_tokens;
		m->ans.capped = true;
	}
	decide(m, m->ans.prompt_tokens + tokens);
	timing_plan(&p->cfg->timing, &m->fd, tokens, &p->rng_jitter, &m->plan);
	if (m->act == FAULT_STALL || m->act == FAULT_TRUNCATE || m->act == FAULT_ERROR_EVENT)
		m->cut = (int)fmin((double)m->decider.after_tokens, tokens);
	if (answer_at_once(m))
		return;
	make_content(m);
	describe_answer(m);
	if (m->streaming)
		start_stream(m);
	else
		schedule_whole(m, timing_done_at(&m->plan));
}

static void on_models(struct provider *p, struct http_exchange *ex,
		      const struct http_request *req)
{
	struct mreq *m = req_new(p, ex, req, REQ_MODELS);
	struct wire_error e = { 0 };
	int rc;

	if (!m) {
		http_exchange_close(ex, true);
		return;
	}
	rc = p->wire->check_headers(req, &e);
	if (rc) {
		send_error(m, &e, NULL);
		req_finish(m, MOCK_COMPLETED, NULL);
		return;
	}
	decide(m, -1);
	m->plan.ttft_ms = m->fd.add_ms;
	m->plan.tokens = 1;
	if (!answer_at_once(m))
		schedule_whole(m, m->plan.ttft_ms);
}

/*
 * An error of the provider's own (404, 405), in its dialect; allow names
 * the methods for 405.
 */
static void respond_error(const struct provider *p, struct http_exchange *ex,
			  enum wire_situation s, const char *allow)
{
	const struct http_kv h[] = {
		{ "Content-Type", "application/json" },
		{ "x-mock-provider", p->cfg->name },
		{ "Allow", allow },
	};
	struct wire_error e = { 0 };
	struct buf body = { 0 };

	p->wire->error_for(s, 0, &e);
	p->wire->error_body(&body, &e);
	http_respond(ex, e.status, h, allow ? 3 : 2, body.data, body.len);
	buf_free(&body);
	wire_error_free(&e);
}

static void on_request(struct http_exchange *ex, void *data)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	struct provider *p = data;
	const struct http_request *req = http_exchange_request(ex);
	bool post = strcmp(req->method, "POST") == 0;
	bool get = strcmp(req->method, "GET") == 0;
	const struct http_kv health[] = {
		{ "Content-Type", "application/json" },
		{ "x-mock-provider", p->cfg->name },
	};

	if (path_is(req->path, p->wire->answer_path)) {
		if (post)
			on_completion(p, ex, req);
		else
			respond_error(p, ex, WIRE_ERR_METHOD_ANSWER, "POST");
	} else if (path_is(req->path, "/models")) {
		if (get)
			on_models(p, ex, req);
		else
			respond_error(p, ex, WIRE_ERR_METHOD_MODELS, "GET");
	} else if (strcmp(req->path, "/healthz") == 0) {
		http_respond(ex, 200, health, 2, ok, sizeof(ok) - 1);
	} else {
		respond_error(p, ex, WIRE_ERR_NOT_FOUND, NULL);
	}
}

/* ---- the fault timeline ---- */

static void apply_down(struct provider *p);

static void on_edge(uv_timer_t *t)
{
	apply_down(t->data);
}

/*
 * Opens or closes the listener for the `down` windows at this moment and
 * arms the timer for the next edge.
 */
static void apply_down(struct provider *p)
{
	double now = timebase_now_ms(&p->env->tb);
	bool down = fault_down_at(p->faults, p->nfaults, now);
	double next;
	double delay;
	int rc;

	if (p->env->stopping)
		return;
	if (down && http_server_is_listening(p->srv)) {
		log_info("%s: down (listener closed) at t=%.3f ms", p->cfg->name, now);
		http_server_unlisten(p->srv);
		p->going_down = true;
		http_server_close_conns(p->srv, false);
		p->going_down = false;
	} else if (!down && !http_server_is_listening(p->srv)) {
		rc = http_server_relisten(p->srv);
		if (rc) {
			/* Say it once; retry from 50 ms, backing off to 1 s. */
			if (!p->relisten_delay_ms)
				log_error("%s: cannot listen again on %s: %s; retrying",
					  p->cfg->name, p->addr_text, uv_strerror(rc));
			p->relisten_delay_ms = p->relisten_delay_ms ? p->relisten_delay_ms * 2 : 50;
			if (p->relisten_delay_ms > 1000)
				p->relisten_delay_ms = 1000;
			uv_timer_start(&p->edge_timer, on_edge, p->relisten_delay_ms, 0);
			return;
		}
		p->relisten_delay_ms = 0;
		log_info("%s: up (listening) at t=%.3f ms", p->cfg->name, now);
	}
	next = fault_next_edge(p->faults, p->nfaults, now, FAULT_DOWN);
	if (isinf(next)) {
		uv_timer_stop(&p->edge_timer);
		return;
	}
	/* As in schedule(): from the loop's cached time, rounded up, so the
	 * edge is never applied early; on_edge re-checks the real clock. */
	delay = ceil((double)timebase_mono_at(&p->env->tb, next) / 1e6 -
		     (double)uv_now(p->env->loop));
	uv_timer_start(&p->edge_timer, on_edge, delay > 0 ? (uint64_t)delay : 0, 0);
}

void provider_prune_faults(struct provider *p)
{
	size_t n = fault_prune_expired(p->faults, p->nfaults, timebase_now_ms(&p->env->tb));

	if (n == p->nfaults)
		return;
	log_debug("%s: dropped %zu expired injected fault(s)", p->cfg->name, p->nfaults - n);
	p->nfaults = n;
	apply_down(p);
}

int provider_inject(struct provider *p, const struct fault *f)
{
	struct fault *nf;

	/* The list holds the live faults and one more: expired injections
	 * do not pile up however many come. */
	provider_prune_faults(p);
	nf = realloc(p->faults, (p->nfaults + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	memmove(nf + 1, nf, p->nfaults * sizeof(*nf));
	nf[0] = *f;
	nf[0].injected = true;
	p->faults = nf;
	p->nfaults++;
	apply_down(p);
	return 0;
}

void provider_clear_faults(struct provider *p)
{
	p->nfaults = 0;
	apply_down(p);
}

void provider_state_json(const struct provider *p, cJSON *obj)
{
	double now = timebase_now_ms(&p->env->tb);
	cJSON *faults = cJSON_AddArrayToObject(obj, "faults");
	size_t i;

	cJSON_AddStringToObject(obj, "name", p->cfg->name);
	cJSON_AddStringToObject(obj, "listen", p->addr_text);
	cJSON_AddStringToObject(obj, "model", p->cfg->model);
	cJSON_AddStringToObject(obj, "dialect", p->wire->name);
	if (p->cfg->group)
		cJSON_AddStringToObject(obj, "group", p->cfg->group);
	cJSON_AddBoolToObject(obj, "listening", http_server_is_listening(p->srv));
	cJSON_AddNumberToObject(obj, "connections", http_server_conn_count(p->srv));
	cJSON_AddNumberToObject(obj, "in_flight", (double)p->inflight.len);
	cJSON_AddNumberToObject(obj, "requests", (double)p->n_requests);
	cJSON_AddNumberToObject(obj, "completed", (double)p->n_completed);
	cJSON_AddNumberToObject(obj, "client_aborted", (double)p->n_aborted);
	cJSON_AddNumberToObject(obj, "faulted", (double)p->n_faulted);
	for (i = 0; i < p->nfaults; i++) {
		cJSON *f = cJSON_CreateObject();

		fault_to_json(&p->faults[i], now, f);
		cJSON_AddItemToArray(faults, f);
	}
}

/* ---- start and stop ---- */

/* Builds the answer text once: every answer is a prefix of it. */
static int build_content(struct provider *p)
{
	int n = (int)p->cfg->output_tokens;
	char text[32];
	int k;

	p->token_off = calloc((size_t)n + 1, sizeof(*p->token_off));
	if (!p->token_off)
		return -ENOMEM;
	for (k = 0; k < n; k++) {
		p->token_off[k] = p->content.len;
		if (buf_append(&p->content, text, timing_token_text(k, text, sizeof(text))))
			return -ENOMEM;
	}
	p->token_off[n] = p->content.len;
	return 0;
}

int provider_start(struct provider *p, struct mock_env *env,
		   const struct provider_cfg *cfg, size_t index, char *err)
{
	struct buf path = { 0 };
	bool resumed;
	int rc;

	memset(p, 0, sizeof(*p));
	list_init(&p->inflight);
	p->cfg = cfg;
	p->wire = wire_of(cfg->dialect);
	p->env = env;
	/* One stream per purpose, so jitter or model listings do not shift
	 * which chat requests a probability picks. */
	rng_seed_stream(&p->rng_faults, env->seed, 3 * index + 1);
	rng_seed_stream(&p->rng_jitter, env->seed, 3 * index + 2);
	rng_seed_stream(&p->rng_models, env->seed, 3 * index + 3);
	p->faults = calloc(cfg->nfaults ? cfg->nfaults : 1, sizeof(*p->faults));
	if (!p->faults) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	if (cfg->nfaults)
		memcpy(p->faults, cfg->faults, cfg->nfaults * sizeof(*p->faults));
	p->nfaults = cfg->nfaults;
	p->srv = http_server_new(env->loop, &env->http, on_request, p);
	if (!p->srv || build_content(p)) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = http_server_listen(p->srv, (const struct sockaddr *)&cfg->addr);
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot listen on %s: %s",
			 cfg->name, cfg->listen, uv_strerror(rc));
		return rc;
	}
	opt_format_addr(http_server_addr(p->srv), p->addr_text, sizeof(p->addr_text));
	buf_printf(&path, "%s/" REC_MOCK_FILE_FMT, env->log_dir, cfg->name);
	/* A restart after a kill (the runner's crash) continues the log. */
	rc = recfile_open(&p->log, path.data, true, &resumed);
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot create %s.tmp: %s",
			 cfg->name, path.data, strerror(-rc));
		buf_free(&path);
		return rc;
	}
	buf_free(&path);
	if (!resumed && (row_header(&p->row, mock_columns, MOCK_NCOLS) ||
			 recfile_write(&p->log, p->row.b.data, p->row.b.len))) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot write %s", cfg->name, p->log.tmp);
		return -EIO;
	}
	uv_timer_init(env->loop, &p->edge_timer);
	p->edge_timer.data = p;
	p->edge_timer_open = true;
	apply_down(p);
	return 0;
}

struct stop_wait {
	int pending;
	void (*done)(void *arg);
	void *arg;
};

static void stop_step(void *arg)
{
	struct stop_wait *w = arg;

	if (--w->pending)
		return;
	if (w->done)
		w->done(w->arg);
	free(w);
}

static void on_edge_closed(uv_handle_t *h)
{
	stop_step(h->data);
}

int provider_stop(struct provider *p, bool keep_log, void (*done)(void *arg), void *arg)
{
	struct stop_wait *w = calloc(1, sizeof(*w));
	int rc = 0;

	if (!w)
		return -ENOMEM;
	w->done = done;
	w->arg = arg;
	w->pending = 1;
	if (p->srv) {
		w->pending++;
		/* Aborts open requests, which writes their rows. */
		http_server_free(p->srv, stop_step, w);
		p->srv = NULL;
	}
	/* The rows of the requests just aborted are written: hand them over
	 * before judging whether the log is whole. */
	if (keep_log)
		provider_flush_log(p);
	if (p->log.fp && !keep_log) {
		recfile_abandon(&p->log);
	} else if (p->log.fp && p->log_err) {
		recfile_close_short(&p->log);
		rc = -p->log_err;
	} else if (p->log.fp) {
		rc = recfile_commit(&p->log);
		if (rc)
			log_error("%s: cannot finish the request log %s/" REC_MOCK_FILE_FMT ": %s",
				  p->cfg->name, p->env->log_dir, p->cfg->name, strerror(-rc));
	}
	row_free(&p->row);
	buf_free(&p->content);
	free(p->token_off);
	p->token_off = NULL;
	if (p->edge_timer_open) {
		w->pending++;
		p->edge_timer.data = w;
		uv_close((uv_handle_t *)&p->edge_timer, on_edge_closed);
		p->edge_timer_open = false;
	}
	free(p->faults);
	p->faults = NULL;
	p->nfaults = 0;
	stop_step(w);
	return rc;
}
