/*
 * stream: the relay of a streaming request ("stream": true) to its client —
 * the commit point (the first content: the client gets its headers, every
 * other leg is cancelled), the events relayed as they come and written
 * once per loop turn (the flush), a slow client's back-pressure (the
 * upstream paused, a client that takes nothing given up), the stall
 * timer, and the end of the client's stream with the cost trailer or an
 * error event.
 */
#include "gateway/stream.h"

#include <math.h>
#include <strings.h>

#include "common/numfmt.h"
#include "common/log.h"
#include "gateway/bill.h"
#include "gateway/greq.h"
#include "gateway/leg.h"
#include "gateway/respond.h"

/* A committed stream with more than this queued for its client pauses its upstream. */
#define STREAM_QUEUE_HIGH (64u * 1024)

/* Events held back before the commit past this: not a stream worth waiting on. */
#define STREAM_HELD_MAX (1u << 20)

/* Writes the winning leg's re-framed events to the client. */
static void stream_write(struct greq *g)
{
	struct relay *r = &g->stream.win->relay;

	if (g->ex && r->out.len && http_stream_write(g->ex, r->out.data, r->out.len)) {
		g->ex = NULL;	/* the exchange has ended: the client is gone */
		g->stream.client_gone = true;
	}
	buf_reset(&r->out);
	if (g->stream.win->p->active)
		leg_hold(g->stream.win);	/* written: no longer held against the budget */
}

/* Takes g off the list of streams waiting for the flush. */
void stream_unmark(struct greq *g)
{
	list_remove(&g->gw->dirty, &g->stream.dirty);
}

/*
 * Leaves g's relayed events for the flush at the end of this loop
 * iteration, so the events of every upstream read in it (libcurl hands
 * over one HTTP chunk at a time) go to the client in one write.
 */
static void stream_mark(struct greq *g)
{
	struct gateway *gw = g->gw;

	if (list_linked(&g->stream.dirty))
		return;
	list_push_front(&gw->dirty, &g->stream.dirty);
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

	while (!list_empty(&gw->dirty)) {
		struct greq *g = list_entry(list_first(&gw->dirty), struct greq, stream.dirty);

		stream_flush(g);
		if (g->stream.client_gone && !g->stream.ended)
			proxy_cancel(g);	/* outside libcurl: its transfer can go now */
	}
	uv_check_stop(h);
}

/*
 * While the upstream is paused for a slow client: since when the client
 * has taken nothing, or -1 when it took some since the last look (the
 * count starts again).
 */
static double client_idle_since(struct greq *g, double now)
{
	size_t queued = g->ex ? http_exchange_queued(g->ex) : 0;

	if (!g->ex || queued < g->stream.stuck_queued || g->stream.stuck_since_ms == 0) {
		g->stream.stuck_since_ms = now;	/* it took some: count again */
		g->stream.stuck_queued = queued;
		return -1;
	}
	return g->stream.stuck_since_ms;
}

/*
 * After the commit: no event for stall_timeout_ms, unless the gateway
 * paused the upstream — then a client that takes nothing for
 * idle_timeout_ms is given up, as one that left (policy_stream_watch).
 */
static void on_stall(uv_timer_t *t)
{
	struct leg *l = t->data;
	struct greq *g = l->g;
	struct gateway *gw = g->gw;
	double now = gw_now_ms();
	double since = l->paused ? client_idle_since(g, now) : -1;
	double again = 0;

	switch (policy_stream_watch(gw->cfg, g->stream.last_event_ms, l->paused, since, now,
				    &again)) {
	case POLICY_WATCH_CLIENT_STUCK:
		log_debug("request %s: the client took nothing for %.0f ms", g->id,
			  gw->cfg->idle_timeout_ms);
		http_exchange_close(g->ex, true);
		g->ex = NULL;
		proxy_cancel(g);
		break;
	case POLICY_WATCH_AGAIN:
		uv_timer_start(&l->timer, on_stall, (uint64_t)ceil(again), 0);
		break;
	case POLICY_WATCH_STALLED:
		curl_uv_remove(&gw->cu, l->easy);
		leg_off(l);
		l->stalled = true;
		stream_over(g, CURLE_OK);
		break;
	}
}

/*
 * The first content: the client gets its headers and the events held back
 * until now; the leg's timer becomes the stall timer, and every other leg
 * is cancelled (at the next loop turn: this runs inside libcurl).
 */
static void stream_commit(struct greq *g, struct leg *l)
{
	struct gateway *gw = g->gw;
	struct http_kv h[8];
	char attempts[NUMFMT_LEN];
	size_t n = 0;
	size_t i;

	g->stream.win = l;
	greq_htimer_stop(g);
	for (i = 0; i < g->nlegs; i++) {
		struct leg *o = &g->legs[i];

		if (o != l && o->p->active && !o->doomed)
			leg_doom(o);
	}
	h[n++] = (struct http_kv){ "Content-Type", "text/event-stream" };
	h[n++] = (struct http_kv){ "Cache-Control", "no-cache" };
	n += respond_headers(g, h + n, attempts);
	h[n++] = (struct http_kv){ "x-faultline-provider", l->p->t->prov->name };
	if (http_stream_chunked(g->ex))
		h[n++] = (struct http_kv){ "Trailer", "x-faultline-cost-usd" };
	g->stream.commit_ms = g->stream.last_event_ms = gw_now_ms();
	policy_on_commit(&gw->pol, &g->pol, l->slot, g->stream.commit_ms);
	gw->streams_in_flight++;
	latency_hist_add(&gw->pstats[l->p->t->provider].ttft, g->stream.commit_ms - l->p->start_ms);
	log_debug("request %s: stream committed to %s/%s after %.1f ms", g->id, l->p->t->prov->name,
		  l->p->t->model, g->stream.commit_ms - l->p->start_ms);
	uv_timer_start(&l->timer, on_stall, (uint64_t)ceil(gw->cfg->stall_timeout_ms), 0);
	if (http_stream_begin(g->ex, 200, h, n)) {
		g->ex = NULL;
		g->stream.client_gone = true;
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
size_t stream_on_body(struct leg *l, char *data, size_t len)
{
	struct greq *g = l->g;
	struct relay *r = &l->relay;
	uint64_t events = r->events;

	if (l->settle)
		return len;	/* past [DONE]: not read */
	if (g->pol.committed && g->ex && r->out.len >= STREAM_QUEUE_HIGH)
		stream_flush(g);	/* a batch this big goes now, not at the flush */
	if (g->stream.client_gone)
		return 0;
	if (g->pol.committed && g->ex && http_exchange_queued(g->ex) > STREAM_QUEUE_HIGH) {
		l->paused = true;	/* on_client_drain resumes it */
		g->stream.stuck_since_ms = 0;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (relay_feed(r, data, len)) {
		l->too_big = true;	/* out of memory: the answer cannot be relayed */
		return 0;
	}
	if (!leg_hold(l) && !g->pol.committed) {
		l->over_budget = true;	/* after the commit, the client's pace bounds it */
		return 0;
	}
	if (r->events != events && g->pol.committed)
		g->stream.last_event_ms = gw_now_ms();
	if (!g->pol.committed) {
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
	if (g->stream.client_gone)
		return 0;
	if (relay_over(r)) {
		l->settle = true;
		uv_timer_start(&l->timer, on_settle, 0, 0);
		return r->done ? len : 0;
	}
	return len;
}

/* The client took everything queued: a paused upstream goes on. */
void stream_on_client_drain(struct http_exchange *ex, void *data)
{
	struct greq *g = data;
	struct leg *l = g->stream.win;

	(void)ex;
	if (!l || !l->paused || !l->p->active || g->stream.ended)
		return;
	l->paused = false;
	g->stream.last_event_ms = gw_now_ms();
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
	struct leg *l = g->stream.win;
	const struct relay *r = &l->relay;
	struct provider_stats *ps = &gw->pstats[l->p->t->provider];
	struct http_exchange *ex;
	double now = gw_now_ms();
	struct buf ev = { 0 };
	struct buf msg = { 0 };
	char cost[NUMFMT_LEN];
	const struct http_kv tr = { "x-faultline-cost-usd", cost };

	stream_flush(g);	/* the events before the end, first */
	ex = g->ex;
	g->stream.ended = true;
	g->ex = NULL;
	gw->streams_in_flight--;
	/* Its usage, else its content chunks and the prompt's estimate. */
	if (r->has_usage)
		bill_tokens(g, l, r->tokens_in, r->tokens_out, false);
	else
		bill_tokens(g, l, g->bill.est_tokens_in, (int64_t)r->content_chunks, false);
	bill_cost_text(g, cost, sizeof(cost));
	provider_stats_attempt(ps, f == ATTEMPT_FAIL_NONE ? GW_OUT_SUCCESS
							  : metrics_failure_outcome(f),
			       now - l->p->start_ms);
	if (policy_on_stream_end(&gw->pol, &g->pol, l->slot, f, g->stream.commit_ms - l->p->start_ms,
				 now))
		proxy_queue_wake(gw);	/* a probe slot is free again */
	if (f == ATTEMPT_FAIL_NONE) {
		log_debug("request %s: stream from %s/%s complete", g->id, l->p->t->prov->name,
			  l->p->t->model);
		if (ex)
			http_stream_end_trailers(ex, &tr, 1);
		return;
	}
	provider_stats_stream_break(ps, f);
	attempt_stream_message(&msg, f, l->p->t->prov->name, gw->cfg->stall_timeout_ms, r->message,
			       l->errbuf);
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
void stream_over(struct greq *g, CURLcode code)
{
	struct leg *l = g->stream.win;
	const struct relay *r = &l->relay;
	struct stream_facts s = {
		.sse = true,
		.committed = true,
		.done = r->done,
		.error_event = r->brk == RELAY_ERROR_EVENT,
		.invalid = r->brk == RELAY_INVALID || l->too_big,
		.stalled = l->stalled,
	};

	uv_timer_stop(&l->timer);
	if (g->stream.ended) {
		greq_finish(g, 200);
		return;
	}
	if (g->stream.client_gone) {
		/* A write to the client failed: it left, as in proxy_cancel. */
		g->stream.ended = true;
		g->gw->streams_in_flight--;
		bill_tokens(g, l, r->has_usage ? r->tokens_in : g->bill.est_tokens_in,
			    r->has_usage ? r->tokens_out : (int64_t)r->content_chunks, false);
		provider_stats_attempt(&g->gw->pstats[l->p->t->provider], GW_OUT_CANCELLED,
				       gw_now_ms() - l->p->start_ms);
		policy_release(&g->pol, l->slot);
		greq_finish(g, 499);
		return;
	}
	stream_end(g, policy_stream_failure((int)code, &s));
	greq_finish(g, 200);
}

/*
 * A committed stream the gateway itself cuts (it is stopping): the client
 * is told so, and its chunked answer ended, before the connection closes.
 */
void stream_cut(struct http_exchange *ex)
{
	bool chunked = http_stream_chunked(ex);
	struct buf ev = { 0 };

	if (relay_error_event(&ev, "gateway_stopping", "The gateway is stopping.") == 0 &&
	    http_stream_write(ex, ev.data, ev.len) == 0 && chunked)
		http_write_raw(ex, "0\r\n\r\n", 5);	/* the last chunk, then the close */
	buf_free(&ev);
}
