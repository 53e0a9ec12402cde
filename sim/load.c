/*
 * load: loadgen in virtual time (load.h). The life of a request follows
 * loadgen/run.c's: dispatch (id, stream, whether it streams), attempt
 * (the call and its watchdog), the attempt's end (facts → outcome →
 * retry after a backoff, or the record), a closed loop's client's think
 * after an error, and the slot back to the pump.
 */
#include "sim/load.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/backoff.h"
#include "loadgen/outcome.h"

struct sim_lreq {
	struct sim_load *l;
	struct sim_call call;
	struct sim_timer timer;		/* the watchdog, the retry's wait, or a think */
	char id[96];
	size_t stream;
	bool streaming;
	double sched_ms;
	double start_ms;
	double free_ms;			/* closed loop, free: when its client's think
					 * ended (its next sched_ms); NAN: free now */
	double attempt_ms;
	double first_token_ms;		/* NAN: none yet */
	double last_event_ms;
	double max_gap_ms;
	int64_t retries;
	enum cut cut;
	int curl_code;
	struct call_head head;
	char provider[64];
	struct call_tail tail;
	char detail[256];
	int64_t content_chunks;
};

static void pump(struct sim_load *l);
static void attempt_start(struct sim_lreq *r);

/* ---- the attempt ---- */

static struct sim_lreq *lreq_of_timer(struct sim_timer *t)
{
	return (struct sim_lreq *)((char *)t - offsetof(struct sim_lreq, timer));
}

static void arm(struct sim_lreq *r, double delay)
{
	if (evq_after(r->l->q, &r->timer, delay))
		r->l->write_err = ENOMEM;
}

/* The client's think is over (loadgen's on_think_due): its slot is free. */
static void on_think_due(struct sim_timer *t)
{
	struct sim_lreq *r = lreq_of_timer(t);
	struct sim_load *l = r->l;

	l->thinking--;
	l->idle[l->nidle++] = r;
	pump(l);
}

/* Records r and frees its slot (loadgen's finish). */
static void finish(struct sim_lreq *r, enum outcome o)
{
	struct sim_load *l = r->l;
	const struct lg_config *cfg = l->cfg;
	const struct mix_stream *ms = &cfg->mix.streams[r->stream];
	double now = l->q->now;
	char error[512];
	struct record rec;
	const struct outcome_words w = {
		.o = o,
		.cut = r->cut,
		.streaming = r->streaming,
		.timeout_ms = cfg->timeout_ms,
		.stall_timeout_ms = cfg->stall_timeout_ms,
		.max_time_ms = cfg->max_time_ms,
		.content_chunks = r->content_chunks,
		.status = r->head.status,
		.detail = r->detail,
		.transport = r->curl_code ? curl_easy_strerror((CURLcode)r->curl_code) : NULL,
	};
	int rc;

	outcome_describe(&w, error, sizeof(error));
	if (r->streaming && !isnan(r->first_token_ms) && now - r->last_event_ms > r->max_gap_ms)
		r->max_gap_ms = now - r->last_event_ms;
	rec = (struct record){
		.id = r->id,
		.stream = r->stream,
		.class_name = ms->class_name,
		.tenant = ms->tenant,
		.feature = ms->feature,
		.streaming = r->streaming,
		.sched_ms = r->sched_ms,
		.start_ms = r->start_ms,
		.ttft_ms = isnan(r->first_token_ms) ? NAN : r->first_token_ms - r->attempt_ms,
		.end_ms = now,
		.status = r->head.status,
		.outcome = o,
		.error = error,
		.provider = r->provider[0] ? r->provider : NULL,
		.attempts = r->head.attempts,
		.hedged = r->head.hedged,
		.retries = (int)r->retries,
		.tokens_in = r->tail.tokens_in,
		.tokens_out = r->tail.tokens_out >= 0 ? r->tail.tokens_out :
			      r->streaming && r->content_chunks ? r->content_chunks : -1,
		.max_gap_ms = r->streaming ? r->max_gap_ms : NAN,
		.cost_usd = !isnan(r->tail.cost_usd) ? r->tail.cost_usd : r->head.cost_usd,
	};
	rc = recorder_add(&l->rec, &rec);
	if (rc && !l->write_err)
		l->write_err = -rc;
	l->in_flight--;
	/* loadgen's think_start: the same rule, on the virtual clock. */
	r->free_ms = cfg->concurrency > 0 ?
		     sched_closed_free_at(cfg->error_think_ms, o == OUT_OK, now, cfg->duration_ms) :
		     now;
	if (r->free_ms > now) {
		l->thinking++;
		r->timer.fn = on_think_due;
		if (evq_at(l->q, &r->timer, r->free_ms))
			l->write_err = ENOMEM;
	} else {
		r->free_ms = NAN;
		l->idle[l->nidle++] = r;
	}
	pump(l);
}

static void on_retry_due(struct sim_timer *t)
{
	attempt_start(lreq_of_timer(t));
}

/* The attempt is over (loadgen's attempt_end): retry it, or record the request. */
static void attempt_end(struct sim_lreq *r)
{
	struct sim_load *l = r->l;
	const struct lg_config *cfg = l->cfg;
	struct attempt_facts f = {
		.curl_code = r->curl_code,
		.status = r->head.status,
		.streaming = r->streaming,
		.cut = r->cut,
		.body_valid = r->tail.body_valid,
		.sse = r->head.sse,
		.saw_done = r->tail.saw_done,
		.error_event = r->tail.error_event,
		.stall_event = r->tail.stall_event,
		.bad_frame = r->tail.bad_frame,
		.content_seen = !isnan(r->first_token_ms),
	};
	enum outcome o;
	double delay;

	evq_stop(l->q, &r->timer);
	o = outcome_classify(&f);
	if (o != OUT_OK && outcome_retryable(o, r->head.status, f.content_seen) &&
	    r->retries < cfg->retries) {
		delay = backoff_delay_after_ms(&cfg->backoff, (unsigned)r->retries,
					       r->head.retry_after_ms, &l->rng_retry);
		r->retries++;
		r->timer.fn = on_retry_due;
		arm(r, delay);
		return;
	}
	finish(r, o);
}

/*
 * The attempt's watchdog (loadgen's on_watchdog), on absolute times: the
 * clock stops exactly at the time it was armed for, so "now ≥ due" holds
 * when it fires (a difference of doubles could fall a hair short and
 * re-arm it at the same instant for ever).
 */
static void on_watchdog(struct sim_timer *t)
{
	struct sim_lreq *r = lreq_of_timer(t);
	const struct lg_config *cfg = r->l->cfg;
	double now = r->l->q->now;
	double max_at = r->attempt_ms + cfg->max_time_ms;

	if (r->tail.saw_done) {
		/* whole at [DONE] */
	} else if (r->streaming && !isnan(r->first_token_ms)) {
		double stall_at = r->last_event_ms + cfg->stall_timeout_ms;

		if (now >= max_at) {
			r->cut = CUT_MAX_TIME;
		} else if (now >= stall_at) {
			r->cut = CUT_STALL;
		} else {
			evq_at(r->l->q, &r->timer, fmin(stall_at, max_at));
			return;
		}
	} else if (now >= r->attempt_ms + cfg->timeout_ms) {
		r->cut = CUT_TIMEOUT;
	} else {
		evq_at(r->l->q, &r->timer, r->attempt_ms + cfg->timeout_ms);
		return;
	}
	call_cancel(&r->call);
	attempt_end(r);
}

static struct sim_lreq *lreq_of_call(struct sim_call *c)
{
	return c->owner;
}

static void on_head(struct sim_call *c, const struct call_head *h)
{
	struct sim_lreq *r = lreq_of_call(c);

	r->head = *h;
	snprintf(r->provider, sizeof(r->provider), "%s", h->provider ? h->provider : "");
	r->head.provider = NULL;
	if (r->head.retry_after_ms < 0 || r->head.status < 400)
		r->head.retry_after_ms = -1;
}

static void on_tokens(struct sim_call *c, int total)
{
	struct sim_lreq *r = lreq_of_call(c);
	const struct lg_config *cfg = r->l->cfg;
	double now = r->l->q->now;

	if (isnan(r->first_token_ms)) {
		r->first_token_ms = now;
		r->max_gap_ms = 0;
		/* From now on the watchdog looks for silence (and --max-time). */
		r->timer.fn = on_watchdog;
		if (evq_at(r->l->q, &r->timer, fmin(now + cfg->stall_timeout_ms,
						    r->attempt_ms + cfg->max_time_ms)))
			r->l->write_err = ENOMEM;
	} else if (now - r->last_event_ms > r->max_gap_ms) {
		r->max_gap_ms = now - r->last_event_ms;
	}
	r->last_event_ms = now;
	r->content_chunks = total;
}

static void on_end(struct sim_call *c, const struct call_tail *t)
{
	struct sim_lreq *r = lreq_of_call(c);

	r->tail = *t;
	/* loadgen's words for what the server said: an error event's message is prefixed. */
	if (t->bad_frame)
		snprintf(r->detail, sizeof(r->detail), "%s", OUTCOME_BAD_FRAME);
	else
		snprintf(r->detail, sizeof(r->detail), "%s%s",
			 t->error_event ? REQ_ERROR_EVENT_PREFIX ": " : "", t->message ? t->message : "");
	r->tail.message = NULL;
	switch (t->how) {
	case CALL_DONE:
		r->curl_code = CURLE_OK;
		break;
	case CALL_REFUSED:
		r->curl_code = CURLE_COULDNT_CONNECT;
		break;
	case CALL_RESET:
		r->curl_code = CURLE_RECV_ERROR;
		break;
	case CALL_CUT:
		/* A stream closed early is whole to curl; a body short of its length is not. */
		r->curl_code = r->head.sse ? CURLE_OK : CURLE_PARTIAL_FILE;
		break;
	}
	if (r->streaming && !r->head.sse && t->how == CALL_DONE)
		r->tail.body_valid = false;
	attempt_end(r);
}

static const struct call_client_ops load_ops = {
	.head = on_head,
	.tokens = on_tokens,
	.end = on_end,
};

/* Sends (again) the request r holds (loadgen's attempt_start). */
static void attempt_start(struct sim_lreq *r)
{
	struct sim_load *l = r->l;
	const struct mix_stream *ms = &l->cfg->mix.streams[r->stream];

	r->attempt_ms = l->q->now;
	if (r->retries == 0)
		r->start_ms = r->attempt_ms;
	r->first_token_ms = NAN;
	r->last_event_ms = r->attempt_ms;
	r->max_gap_ms = NAN;
	r->cut = CUT_NONE;
	r->curl_code = 0;
	r->head = call_head_plain(0);
	r->provider[0] = '\0';
	r->tail = call_tail_plain(CALL_DONE);
	r->detail[0] = '\0';
	r->content_chunks = 0;
	r->call = (struct sim_call){
		.id = r->id,
		.model = ms->model,
		.klass = ms->class_name,
		.stream = r->streaming,
		.prompt_chars = mix_prompt_len(ms->prompt_tokens),
		.max_tokens = ms->max_tokens,
		.client = &load_ops,
		.owner = r,
	};
	r->timer.fn = on_watchdog;
	if (evq_at(l->q, &r->timer, r->attempt_ms + l->cfg->timeout_ms))
		l->write_err = ENOMEM;
	if (call_send(&r->call, l->q, l->net, l->target))
		l->write_err = ENOMEM;
}

/* ---- slots and the schedule ---- */

static struct sim_lreq *get_slot(struct sim_load *l)
{
	struct sim_lreq *r;

	if (l->nidle)
		return l->idle[--l->nidle];
	if (l->nslots == l->maxslots)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		l->write_err = ENOMEM;
		return NULL;
	}
	r->l = l;
	r->free_ms = NAN;
	l->slots[l->nslots++] = r;
	return r;
}

static void dispatch(struct sim_load *l, struct sim_lreq *r, double sched_ms, size_t stream)
{
	const struct lg_config *cfg = l->cfg;
	uint64_t n = ++l->next_n;

	l->in_flight++;
	r->stream = stream;
	r->streaming = mix_draw_stream(&cfg->mix.streams[stream], &l->rng_stream);
	r->retries = 0;
	r->sched_ms = sched_ms;
	r->free_ms = NAN;
	snprintf(r->id, sizeof(r->id), "%s%llu", cfg->id_prefix ? cfg->id_prefix : "",
		 (unsigned long long)n);
	if (l->q->now < cfg->duration_ms)
		l->started_in_window++;
	attempt_start(r);
}

static void on_next(struct sim_timer *t)
{
	pump((struct sim_load *)((char *)t - offsetof(struct sim_load, next)));
}

/* Starts every request that is due and a slot is free for (loadgen's pump). */
static void pump(struct sim_load *l)
{
	const struct lg_config *cfg = l->cfg;
	struct sim_lreq *r;
	double at;
	int stream;

	while (!l->over && !l->write_err) {
		double now = l->q->now;

		if (cfg->concurrency > 0) {
			if (now >= cfg->duration_ms ||
			    (cfg->max_requests && l->next_n >= (uint64_t)cfg->max_requests)) {
				l->over = true;
				break;
			}
			at = sched_closed_next(cfg->concurrency, cfg->ramp_up_ms, &l->clients,
					       l->in_flight + l->thinking, now);
			if (at > now) {
				if (!isinf(at) && evq_at(l->q, &l->next, at))
					l->write_err = ENOMEM;
				break;
			}
			r = get_slot(l);
			if (!r)
				break;
			/* When the client was free: now, or when its think ended. */
			dispatch(l, r, isnan(r->free_ms) ? now : r->free_ms,
				 (size_t)sched_pick(&l->sched));
			continue;
		}
		at = sched_peek(&l->sched);
		if (isinf(at)) {
			l->over = true;
			break;
		}
		if (at > now) {
			l->starved = false;
			if (evq_at(l->q, &l->next, at))
				l->write_err = ENOMEM;
			break;
		}
		r = get_slot(l);
		if (!r) {
			l->starved = true;	/* finish() pumps again when a slot frees */
			break;
		}
		if (!sched_next(&l->sched, &at, &stream)) {
			l->idle[l->nidle++] = r;
			l->over = true;
			break;
		}
		if (l->starved)
			l->delayed++;
		dispatch(l, r, at, (size_t)stream);
	}
}

int load_start(struct sim_load *l, const struct lg_config *cfg, struct evq *q,
	       const struct sim_net *net, struct sim_server *target, char *err, size_t errlen)
{
	size_t i;
	int rc;

	memset(l, 0, sizeof(*l));
	l->cfg = cfg;
	l->q = q;
	l->net = net;
	l->target = target;
	l->next.fn = on_next;
	rng_seed_stream(&l->rng_stream, cfg->seed, LG_RNG_STREAMING);
	rng_seed_stream(&l->rng_retry, cfg->seed, LG_RNG_RETRY);
	l->maxslots = (size_t)(cfg->concurrency > 0 ? cfg->concurrency : cfg->connections);
	l->idle = calloc(l->maxslots ? l->maxslots : 1, sizeof(*l->idle));
	l->slots = calloc(l->maxslots ? l->maxslots : 1, sizeof(*l->slots));
	l->stream_names = calloc(cfg->mix.n ? cfg->mix.n : 1, sizeof(*l->stream_names));
	if (!l->idle || !l->slots || !l->stream_names) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < cfg->mix.n; i++)
		l->stream_names[i] = cfg->mix.streams[i].name;
	rc = sched_init_load(&l->sched, &cfg->mix, cfg->rate, cfg->arrival, cfg->concurrency,
			     cfg->duration_ms, cfg->seed, cfg->max_requests);
	if (rc) {
		snprintf(err, errlen, "cannot set up the schedule: %s", strerror(-rc));
		return rc;
	}
	rc = recorder_open(&l->rec, cfg->out_dir, l->stream_names, cfg->mix.n, err, errlen);
	if (rc)
		return rc;
	pump(l);
	return 0;
}

bool load_done(const struct sim_load *l)
{
	return (l->over && l->in_flight == 0) || l->write_err;
}

int load_finish(struct sim_load *l, char *err, size_t errlen)
{
	const struct lg_config *cfg = l->cfg;
	struct run_info info;

	run_info_of(cfg, &info);
	info.started_in_window = l->started_in_window;
	info.elapsed_ms = l->q->now;
	info.connections = cfg->concurrency > 0 ? 0 : (int64_t)l->maxslots;
	info.delayed_by_connections = l->delayed;
	if (l->write_err) {
		snprintf(err, errlen, "cannot write a record: %s", strerror(l->write_err));
		recorder_keep_short(&l->rec);
		return -l->write_err;
	}
	return recorder_finish(&l->rec, &info, err, errlen);
}

void load_free(struct sim_load *l)
{
	size_t i;

	if (l->q)
		evq_stop(l->q, &l->next);
	for (i = 0; i < l->nslots; i++) {
		call_cancel(&l->slots[i]->call);
		evq_stop(l->q, &l->slots[i]->timer);
		free(l->slots[i]);
	}
	free(l->slots);
	l->slots = NULL;
	l->nslots = 0;
	free(l->idle);
	l->idle = NULL;
	free(l->stream_names);
	l->stream_names = NULL;
	sched_free(&l->sched);
	recorder_free(&l->rec);
}
