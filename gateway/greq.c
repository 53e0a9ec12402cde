/*
 * greq: a chat request's life — made, moved from state to state (each
 * change logged at debug level), finished, and freed once its timers
 * have closed.
 */
#include "gateway/greq.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gateway/contract.h"
#include "gateway/leg.h"
#include "gateway/queue.h"
#include "gateway/stream.h"

/* Finished requests' memory kept, per number of legs: enough for a busy loop's churn. */
#define GREQ_POOL_MAX 256

static const char *const state_names[] = { "routing", "attempt", "backoff", "queued", "done" };

struct greq *greq_new(struct gateway *gw, struct http_exchange *ex, struct gw_route *route,
		      unsigned nlegs)
{
	size_t size = sizeof(struct greq) + nlegs * sizeof(struct leg);
	struct list *pool = nlegs <= GW_GREQ_POOL_LEGS ? &gw->greq_pool[nlegs - 1] : NULL;
	struct greq *g;
	unsigned i;

	if (pool && !list_empty(pool)) {
		g = list_entry(list_pop_front(pool), struct greq, link);
		memset(g, 0, size);
	} else {
		g = calloc(1, size);
	}
	if (!g)
		return NULL;
	g->gw = gw;
	g->ex = ex;
	g->route = route;
	g->nlegs = nlegs;
	uv_timer_init(gw->loop, &g->timer);
	g->timer.data = g;
	list_node_init(&g->stream.dirty);
	for (i = 0; i < nlegs; i++) {
		g->legs[i].g = g;
		g->legs[i].slot = i;
		g->legs[i].p = &g->pol.legs[i];
		relay_init(&g->legs[i].relay);
	}
	list_push_front(&gw->reqs, &g->link);
	gw->in_flight++;
	return g;
}

void greq_set_state(struct greq *g, enum greq_state to)
{
	if (log_enabled(LOG_DEBUG))
		log_debug("request %s: %s -> %s", g->id, state_names[g->state], state_names[to]);
	g->state = to;
}

void greq_htimer_stop(struct greq *g)
{
	if (g->htimer_ready)
		uv_timer_stop(&g->htimer);
}

/* Keeps g's memory for the next request of as many legs, up to GREQ_POOL_MAX; frees it past. */
static void greq_pool_put(struct greq *g)
{
	struct list *pool;

	if (g->nlegs > GW_GREQ_POOL_LEGS || g->gw->greq_pool[g->nlegs - 1].len >= GREQ_POOL_MAX) {
		free(g);
		return;
	}
	pool = &g->gw->greq_pool[g->nlegs - 1];
	list_node_init(&g->link);
	list_push_front(pool, &g->link);
}

void greq_pool_free(struct gateway *gw)
{
	size_t i;

	for (i = 0; i < GW_GREQ_POOL_LEGS; i++) {
		while (!list_empty(&gw->greq_pool[i]))
			free(list_entry(list_pop_front(&gw->greq_pool[i]), struct greq, link));
	}
}

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
	policy_state_free(&g->pol);
	contract_free(g->own_contract);
	cJSON_Delete(g->root);
	buf_free(&g->anth_body);
	buf_free(&g->ckey);
	greq_pool_put(g);
}

void greq_finish(struct greq *g, int status)
{
	struct gateway *gw = g->gw;
	size_t i;

	status_counts_add(g->route ? &g->route->requests : &gw->unrouted, status);
	stream_unmark(g);
	if (policy_queued(&g->pol))
		greq_set_state(g, GREQ_ROUTING);	/* off the queue */
	if (policy_finish(&gw->pol, &g->pol))
		queue_kick(gw);			/* a drain slot is free */
	for (i = 0; i < g->nlegs; i++) {
		leg_cancel(&g->legs[i], true);	/* a loser whose cancel was still due */
		leg_put(&g->legs[i]);
	}
	list_remove(&gw->reqs, &g->link);
	gw->in_flight--;
	greq_set_state(g, GREQ_DONE);
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
