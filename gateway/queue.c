/*
 * queue: draining the batch queues on their timer, and their wake-ups.
 * Which request expires, which goes and where is the policy's
 * (policy_drain_next); this carries it out.
 */
#include "gateway/queue.h"

#include <math.h>

#include "common/log.h"
#include "gateway/greq.h"
#include "gateway/proxy.h"
#include "gateway/respond.h"

/* Expires the route's old requests, then sends on what its targets and concurrency allow. */
static void drain_route(struct gateway *gw, struct gw_route *rt, double now)
{
	struct policy_drain d;
	struct policy_action a;
	struct policy_state *st;
	bool dequeued;

	policy_drain_begin(rt, &d);
	for (;;) {
		struct greq *g;

		st = policy_drain_next(&gw->pol, rt, &d, now, &a, &dequeued);
		if (!st)
			break;
		g = list_entry(st, struct greq, pol);
		greq_set_state(g, GREQ_ROUTING);	/* off the queue */
		if (dequeued)
			log_debug("request %s: dequeued after %.0f ms", g->id,
				  now - g->pol.queued_ms);
		proxy_act(g, &a, NULL);
	}
}

static void on_queue_timer(uv_timer_t *t)
{
	struct gateway *gw = t->data;
	double now = gw_now_ms();
	size_t i;

	for (i = 0; i < gw->router.nroutes; i++) {
		if (!list_empty(&gw->router.routes[i].waiting))
			drain_route(gw, &gw->router.routes[i], now);
	}
	queue_kick(gw);
}

void queue_kick(struct gateway *gw)
{
	double now = gw_now_ms();
	double next;

	if (!policy_queue_total(&gw->pol)) {
		uv_timer_stop(&gw->qtimer);
		return;
	}
	next = policy_queue_next_wake(&gw->pol, now);
	if (isfinite(next))
		uv_timer_start(&gw->qtimer, on_queue_timer, (uint64_t)ceil(fmax(0, next - now)), 0);
}

void proxy_queue_stop(struct gateway *gw)
{
	struct policy_action a;
	struct policy_state *st;
	size_t i;

	for (i = 0; i < gw->router.nroutes; i++) {
		for (;;) {
			struct greq *g;

			st = policy_queue_take(&gw->pol, &gw->router.routes[i], &a);
			if (!st)
				break;
			g = list_entry(st, struct greq, pol);
			greq_set_state(g, GREQ_ROUTING);	/* off the queue */
			respond_error(g, &a, NULL);
		}
	}
	uv_timer_stop(&gw->qtimer);
}

void proxy_queue_wake(struct gateway *gw)
{
	if (policy_queue_total(&gw->pol))
		uv_timer_start(&gw->qtimer, on_queue_timer, 0, 0);
}

/* The router's listener: a breaker that closed or went half-open may take a queued request. */
static void on_breaker_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
			       const struct change_origin *origin)
{
	(void)t;
	(void)origin;
	if (chg->to != BREAKER_OPEN)
		proxy_queue_wake(arg);
}

void proxy_queue_listen(struct gateway *gw)
{
	gw->queue_wake.on_change = on_breaker_change;
	gw->queue_wake.arg = gw;
	router_listen(&gw->router, &gw->queue_wake);
}
