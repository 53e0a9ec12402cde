/*
 * mock: a mock provider in virtual time (mock.h). The shape follows
 * mockprov/provider.c's: decide the request's faults and plan its timing
 * on arrival, answer at once (hang, status, rate limit, reset) or at the
 * plan's times (a whole answer, or a stream token by token), and log one
 * row when the request ends, however it ends.
 */
#include "sim/mock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/records.h"
#include "mockprov/timing.h"

/* Estimated answer sizes, for a reset fault's byte budget. */
#define STATUS_LINE_BYTES 17	/* "HTTP/1.1 200 OK\r\n": the client has the status */
#define HEAD_BYTES 160
#define WHOLE_BYTES 330
#define BYTES_PER_TOKEN 8
#define SSE_BYTES_PER_TOKEN 150

/* One request at the mock. */
struct sim_mreq {
	struct sim_mock *m;
	struct sim_call *c;
	struct list_node link;
	struct sim_timer timer;
	double t_ms;			/* arrival */
	bool models;
	bool stream;
	struct fault_decision fd;
	struct fault decider;
	enum fault_kind act;		/* FAULT_NKINDS: none */
	struct timing_plan plan;
	int cut;			/* stall/truncate/error_event: tokens before it; -1 */
	int next_token;
	int reset_token;		/* a stream's reset: after this many tokens; -1 */
	bool fired;
	int status;
	double ttft_ms;			/* after arrival; NAN: none sent */
	int tokens_out;
	int64_t prompt_tokens;
	bool busy;			/* in a client callback: freed after it, not in it */
	bool over;			/* finished (logged, off the list) */
};

static struct sim_mreq *mreq_of(struct sim_timer *t)
{
	return (struct sim_mreq *)((char *)t - offsetof(struct sim_mreq, timer));
}

/* ---- the log ---- */

static void log_row(struct sim_mreq *r, const char *extra, enum mock_outcome outcome)
{
	struct sim_mock *m = r->m;
	char fault[128];
	struct mock_record rec;

	if (m->log_err || !m->log.fp)
		return;
	snprintf(fault, sizeof(fault), "%s%s%s", r->fd.applied,
		 extra && r->fd.applied[0] ? "+" : "", extra ? extra : "");
	rec = (struct mock_record){
		.t_ms = r->t_ms,
		.request_id = r->c->id,
		.streaming = r->stream,
		.fault = fault,
		.status = r->status,
		.ttft_ms = r->ttft_ms,
		.dur_ms = m->q->now - r->t_ms,
		.tokens_out = r->models ? 0 : r->tokens_out,
		.outcome = outcome,
		.kind = r->models ? MOCK_KIND_MODELS : MOCK_KIND_CHAT,
	};
	if (mock_record_row(&m->row, &rec))
		m->log_err = ENOMEM;
	else if (recfile_write(&m->log, m->row.b.data, m->row.b.len))
		m->log_err = errno ? errno : EIO;
}

/* Ends r: its row (unless the process died with it), off the list, freed. */
static void mreq_finish(struct sim_mreq *r, enum mock_outcome outcome, const char *extra,
			bool logged)
{
	if (r->over)
		return;
	r->over = true;
	if (logged)
		log_row(r, extra, outcome);
	evq_stop(r->m->q, &r->timer);
	list_remove(&r->m->inflight, &r->link);
	r->c->server_data = NULL;
	if (!r->busy)
		free(r);
}

/* ---- answers ---- */

static struct call_tail tail_usage(const struct sim_mreq *r, enum call_end how)
{
	struct call_tail t = call_tail_plain(how);

	t.tokens_in = r->prompt_tokens;
	t.tokens_out = r->tokens_out;
	return t;
}

/* Answers r with an error of status (Retry-After retry_s when ≥ 0) and ends it. */
static void answer_error(struct sim_mreq *r, int status, double retry_s, const char *message)
{
	struct sim_call *c = r->c;
	struct call_head h = call_head_plain(status);
	struct call_tail t = call_tail_plain(CALL_DONE);

	r->fired = true;
	r->status = status;
	h.retry_after_ms = retry_s >= 0 ? ceil(retry_s) * 1000 : -1;
	t.message = message;
	mreq_finish(r, MOCK_FAULTED, NULL, true);
	call_head(c, &h);
	call_end(c, &t);
}

/* Resets r's connection (after its head h, unless NULL): the client sees it break. */
static void answer_reset(struct sim_mreq *r, enum mock_outcome outcome, const char *extra,
			 const struct call_head *h)
{
	struct sim_call *c = r->c;
	struct call_tail t = call_tail_plain(CALL_RESET);

	mreq_finish(r, outcome, extra, true);
	if (h)
		call_head(c, h);
	call_end(c, &t);
}

/* The whole (non-streaming) answer is due: mockprov's answer_whole. */
static void on_whole(struct sim_timer *tm)
{
	struct sim_mreq *r = mreq_of(tm);
	struct sim_call *c = r->c;
	double at = r->m->q->now - r->t_ms;
	struct call_head h = call_head_plain(200);
	struct call_tail t;

	if (r->models) {
		t = call_tail_plain(CALL_DONE);
		t.body_valid = r->act != FAULT_MALFORMED;
		r->fired = r->act == FAULT_MALFORMED;
		r->status = 200;
		mreq_finish(r, r->fired ? MOCK_FAULTED : MOCK_COMPLETED, NULL, true);
		call_head(c, &h);
		call_end(c, &t);
		return;
	}
	r->tokens_out = r->plan.tokens;
	switch (r->act) {
	case FAULT_STALL:
	case FAULT_TRUNCATE:
		r->fired = true;
		r->tokens_out = r->cut;
		r->status = 200;
		if (r->cut > 0)
			r->ttft_ms = at;
		if (r->act == FAULT_STALL) {
			/* Part of the body, then silence until the client leaves. */
			call_head(c, &h);
			return;
		}
		t = call_tail_plain(CALL_CUT);	/* no whole body: no usage */
		mreq_finish(r, MOCK_FAULTED, NULL, true);
		call_head(c, &h);
		call_end(c, &t);
		return;
	case FAULT_ERROR_EVENT:
		r->tokens_out = r->cut;
		answer_error(r, 500, -1, "The server had an error while processing your request.");
		return;
	case FAULT_RESET:
		/* The byte budget ran out within the answer (answer_at_once armed this). */
		r->fired = true;
		r->status = r->decider.after_bytes >= STATUS_LINE_BYTES ? 200 : 0;
		answer_reset(r, MOCK_FAULTED, NULL, r->status ? &h : NULL);
		return;
	default:
		break;
	}
	r->fired = r->fired || r->act == FAULT_MALFORMED;
	r->status = 200;
	r->ttft_ms = at;
	/* A malformed body is half an object: no usage a client could read. */
	t = r->act == FAULT_MALFORMED ? call_tail_plain(CALL_DONE) : tail_usage(r, CALL_DONE);
	t.body_valid = r->act != FAULT_MALFORMED;
	mreq_finish(r, r->fired ? MOCK_FAULTED : MOCK_COMPLETED, NULL, true);
	call_head(c, &h);
	call_end(c, &t);
}

/*
 * Arms r's timer for a planned time, ms_after_arrival, which fires as the
 * machine's timers do (call_timer_fire) — unless it is due already, which
 * mockprov answers at once (due_now), without a timer (a model listing, a
 * zero ttft).
 */
static void arm(struct sim_mreq *r, double ms_after_arrival, sim_timer_fn fn)
{
	struct sim_mock *m = r->m;
	double due = r->t_ms + ms_after_arrival;
	double at = ms_after_arrival > 0 ? call_timer_fire(&m->clock, due) : due;

	r->timer.fn = fn;
	if (evq_at(m->q, &r->timer, at))
		r->m->log_err = ENOMEM;	/* the run fails on it at the end */
}

/* The stream's next token is due: mockprov's stream_step. */
static void on_token(struct sim_timer *tm)
{
	struct sim_mreq *r = mreq_of(tm);
	struct sim_call *c = r->c;
	int k = r->next_token;
	int sent = k;
	struct call_tail t;

	if (r->act == FAULT_MALFORMED) {
		r->fired = true;
		t = call_tail_plain(CALL_DONE);
		t.bad_frame = true;
		t.saw_done = true;
		r->tokens_out = 0;
		mreq_finish(r, MOCK_FAULTED, NULL, true);
		call_end(c, &t);
		return;
	}
	if (r->reset_token >= 0 && k >= r->reset_token) {
		/* The budget ends within this token's bytes: the connection breaks. */
		r->fired = true;
		answer_reset(r, MOCK_FAULTED, NULL, NULL);
		return;
	}
	if (k != r->cut)
		sent = k + 1;
	if (sent > 0 && k == 0)
		r->ttft_ms = r->m->q->now - r->t_ms;
	r->next_token = sent;
	r->tokens_out = sent;
	if (sent != k) {
		r->busy = true;
		call_tokens(c, sent);
		r->busy = false;
		if (r->over) {
			free(r);	/* the client left as the token came */
			return;
		}
	}
	if (sent == r->cut) {
		r->fired = true;
		if (r->act == FAULT_STALL)
			return;		/* silent until the client leaves */
		t = call_tail_plain(CALL_CUT);	/* ended before its usage chunk */
		if (r->act == FAULT_ERROR_EVENT) {
			t.error_event = true;
			t.message = "The server had an error while processing your request.";
		}
		mreq_finish(r, MOCK_FAULTED, NULL, true);
		call_end(c, &t);
		return;
	}
	if (sent == r->plan.tokens) {
		t = tail_usage(r, CALL_DONE);
		t.saw_done = true;
		mreq_finish(r, r->fired ? MOCK_FAULTED : MOCK_COMPLETED, NULL, true);
		call_end(c, &t);
		return;
	}
	arm(r, timing_token_at(&r->plan, r->next_token), on_token);
}

/*
 * A deciding fault that answers at once (down, reset at byte 0, hang,
 * status, 429), or a reset armed for later: mockprov's answer_at_once.
 * Returns true when r needs nothing more now.
 */
static bool answer_at_once(struct sim_mreq *r)
{
	const struct fault *f = &r->decider;

	switch (r->act) {
	case FAULT_DOWN:
	case FAULT_RESET:
		if (r->act == FAULT_RESET && f->after_bytes > 0) {
			double per = r->stream ? SSE_BYTES_PER_TOKEN : BYTES_PER_TOKEN;
			double body = r->stream ? 0 : WHOLE_BYTES + per * r->plan.tokens;

			if (r->stream && f->after_bytes > HEAD_BYTES) {
				/* The whole tokens that fit in the budget after the head. */
				r->reset_token = (int)floor((double)(f->after_bytes - HEAD_BYTES) / per);
				return false;
			}
			if (!r->stream && f->after_bytes >= HEAD_BYTES + body)
				r->act = FAULT_NKINDS;	/* the budget outlasts the answer */
			if (!r->stream)
				return false;
			/* A stream whose head does not fit: it breaks at once. */
			r->fired = true;
			answer_reset(r, MOCK_FAULTED, NULL, NULL);
			return true;
		}
		r->fired = true;
		answer_reset(r, MOCK_FAULTED, NULL, NULL);
		return true;
	case FAULT_HANG:
		r->fired = true;
		return true;	/* read, never answered; the client's leaving logs it */
	case FAULT_STATUS:
		answer_error(r, (int)f->status, f->retry_after_s,
			     f->status >= 500 ? "The server is overloaded or not ready yet."
					      : "The request was rejected by the provider.");
		return true;
	case FAULT_RATE_LIMIT:
		answer_error(r, 429, r->fd.retry_after_s,
			     "Rate limit reached for requests. Please try again later.");
		return true;
	default:
		return false;
	}
}

/* ---- the server ---- */

static bool on_request(struct sim_server *s, struct sim_call *c)
{
	struct sim_mock *m = (struct sim_mock *)s;
	double now = m->q->now;
	struct sim_mreq *r;
	int tokens = 0;

	if (m->killed || !m->listening)
		return false;
	r = calloc(1, sizeof(*r));
	if (!r) {
		m->log_err = ENOMEM;
		return false;
	}
	r->m = m;
	r->c = c;
	r->t_ms = now;
	r->models = c->models;
	r->stream = !c->models && c->stream;
	r->act = FAULT_NKINDS;
	r->cut = -1;
	r->reset_token = -1;
	r->ttft_ms = NAN;
	r->prompt_tokens = timing_prompt_tokens_of(c->prompt_chars);
	c->server_data = r;
	list_push_front(&m->inflight, &r->link);
	if (r->models) {
		fault_decide(m->faults, m->cfg->nfaults, now, -1, &m->rng_models, &r->fd);
	} else {
		m->requests++;
		tokens = (int)m->cfg->output_tokens;
		if (c->max_tokens > 0 && c->max_tokens < tokens)
			tokens = (int)c->max_tokens;
		fault_decide(m->faults, m->cfg->nfaults, now, (double)(r->prompt_tokens + tokens),
			     &m->rng_faults, &r->fd);
	}
	if (r->fd.decider) {
		r->decider = *r->fd.decider;
		r->act = r->decider.kind;
	}
	r->fd.decider = NULL;
	r->fd.rate = NULL;
	if (r->models) {
		r->plan.ttft_ms = r->fd.add_ms;
		r->plan.tokens = 1;
		if (!answer_at_once(r))
			arm(r, r->plan.ttft_ms, on_whole);
		return true;
	}
	timing_plan(&m->cfg->timing, &r->fd, tokens, &m->rng_jitter, &r->plan);
	if (r->act == FAULT_STALL || r->act == FAULT_TRUNCATE || r->act == FAULT_ERROR_EVENT)
		r->cut = (int)fmin((double)r->decider.after_tokens, tokens);
	if (answer_at_once(r))
		return true;
	if (r->stream) {
		struct call_head h = call_head_plain(200);

		h.sse = true;
		r->status = 200;
		r->busy = true;
		call_head(c, &h);
		r->busy = false;
		if (r->over)
			free(r);
		else
			arm(r, timing_token_at(&r->plan, 0), on_token);
	} else {
		arm(r, timing_done_at(&r->plan), on_whole);
	}
	return true;
}

/* The client left (mockprov's on_abort for a client's close). */
static void on_cancel(struct sim_server *s, struct sim_call *c)
{
	struct sim_mreq *r = c->server_data;

	(void)s;
	if (!r)
		return;
	if (!r->stream && r->status == 0 && !r->models && !r->fired)
		r->tokens_out = timing_tokens_by(&r->plan, r->m->q->now - r->t_ms);
	mreq_finish(r, r->fired ? MOCK_FAULTED : MOCK_CLIENT_ABORTED, NULL, true);
}

static const struct call_server_ops mock_ops = {
	.request = on_request,
	.cancel = on_cancel,
};

/* Resets every call in flight (extra: the row's added fault; logged: whether rows are written). */
static void reset_all(struct sim_mock *m, const char *extra, bool logged)
{
	while (!list_empty(&m->inflight)) {
		struct sim_mreq *r = list_entry(m->inflight.head.next, struct sim_mreq, link);
		struct sim_call *c = r->c;
		struct call_tail t = call_tail_plain(CALL_RESET);

		bool fired = r->fired;

		if (!r->stream && r->status == 0 && !r->models && !r->fired)
			r->tokens_out = timing_tokens_by(&r->plan, m->q->now - r->t_ms);
		r->fired = true;
		/* As mockprov's on_abort: the label only on a request no fault had fired on. */
		mreq_finish(r, MOCK_FAULTED, fired ? NULL : extra, logged);
		call_end(c, &t);
	}
}

/* Arms the edge timer for the first down-window edge after `after`, as late as a timer is. */
static void arm_edge(struct sim_mock *m, double after)
{
	double next = fault_next_edge(m->faults, m->cfg->nfaults, after, FAULT_DOWN);

	if (isinf(next))
		return;
	m->edge_at = next;
	if (evq_at(m->q, &m->edge, call_timer_fire(&m->clock, next)))
		m->log_err = ENOMEM;
}

/*
 * A down window's edge (mockprov's apply_down): at its start the listener
 * closes and the calls in flight break; at its end it opens again.
 */
static void on_edge(struct sim_timer *t)
{
	struct sim_mock *m = (struct sim_mock *)((char *)t - offsetof(struct sim_mock, edge));
	bool down = fault_down_at(m->faults, m->cfg->nfaults, m->edge_at);

	if (down && m->listening) {
		m->listening = false;
		reset_all(m, "down", true);
	} else if (!down) {
		m->listening = true;
	}
	arm_edge(m, m->edge_at);
}

/* The process's state from its start: the random streams and the faults' budgets. */
static int boot(struct sim_mock *m, char *err)
{
	const struct provider_cfg *cfg = m->cfg;
	char *path = buf_aprintf("%s/" REC_MOCK_FILE_FMT, m->dir, cfg->name);
	bool resumed = false;
	int rc;

	/* mockprov's streams for its provider 0: each runs alone in its process. */
	rng_seed_stream(&m->rng_faults, m->seed, 1);
	rng_seed_stream(&m->rng_jitter, m->seed, 2);
	rng_seed_stream(&m->rng_models, m->seed, 3);
	if (cfg->nfaults)
		memcpy(m->faults, cfg->faults, cfg->nfaults * sizeof(*m->faults));
	m->killed = false;
	if (!path) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = m->log.fp ? 0 : recfile_open(&m->log, path, true, &resumed);
	if (rc) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot create %s.tmp: %s", cfg->name, path,
			 strerror(-rc));
		free(path);
		return rc;
	}
	free(path);
	if (!resumed && !m->row.b.len && (row_header(&m->row, mock_columns, MOCK_NCOLS) ||
					  recfile_write(&m->log, m->row.b.data, m->row.b.len))) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot write %s", cfg->name, m->log.tmp);
		return -EIO;
	}
	m->edge.fn = on_edge;
	m->listening = !fault_down_at(m->faults, m->cfg->nfaults, m->q->now);
	arm_edge(m, m->q->now);
	return 0;
}

int mock_start(struct sim_mock *m, struct evq *q, const struct provider_cfg *cfg,
	       uint64_t seed, const struct sim_clock *clock, const char *dir, char *err)
{
	memset(m, 0, sizeof(*m));
	m->srv.ops = &mock_ops;
	m->q = q;
	m->cfg = cfg;
	m->seed = seed;
	m->clock = *clock;
	list_init(&m->inflight);
	m->faults = calloc(cfg->nfaults ? cfg->nfaults : 1, sizeof(*m->faults));
	m->dir = strdup(dir);
	if (!m->faults || !m->dir) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	return boot(m, err);
}

void mock_kill(struct sim_mock *m)
{
	evq_stop(m->q, &m->boot);	/* a kill before the restart listened: it never will */
	if (m->killed)
		return;
	reset_all(m, NULL, false);
	evq_stop(m->q, &m->edge);
	m->killed = true;
}

/* A restarted process is listening: its state anew. */
static void on_boot(struct sim_timer *t)
{
	struct sim_mock *m = (struct sim_mock *)((char *)t - offsetof(struct sim_mock, boot));
	char err[CFG_ERR_LEN];

	if (boot(m, err))
		m->log_err = m->log_err ? m->log_err : EIO;
}

int mock_restart(struct sim_mock *m, double after_ms, char *err)
{
	if (!m->killed || evq_armed(&m->boot))
		return 0;
	m->boot.fn = on_boot;
	if (evq_after(m->q, &m->boot, after_ms)) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int mock_finish(struct sim_mock *m, char *err)
{
	int rc;

	if (!m->killed)
		reset_all(m, "shutdown", true);
	evq_stop(m->q, &m->edge);
	evq_stop(m->q, &m->boot);
	if (!m->log.fp)
		return 0;
	if (m->log_err) {
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot write %s: %s", m->cfg->name,
			 m->log.tmp, strerror(m->log_err));
		recfile_close_short(&m->log);
		return -m->log_err;
	}
	rc = recfile_commit(&m->log);
	if (rc)
		snprintf(err, CFG_ERR_LEN, "provider %s: cannot finish %s: %s", m->cfg->name,
			 m->log.path ? m->log.path : "its log", strerror(-rc));
	return rc;
}

void mock_free(struct sim_mock *m)
{
	while (!list_empty(&m->inflight)) {
		struct sim_mreq *r = list_entry(m->inflight.head.next, struct sim_mreq, link);

		mreq_finish(r, MOCK_FAULTED, NULL, false);
	}
	if (m->log.fp)
		recfile_abandon(&m->log);
	row_free(&m->row);
	free(m->faults);
	m->faults = NULL;
	free(m->dir);
	m->dir = NULL;
}
