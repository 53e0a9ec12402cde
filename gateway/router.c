/*
 * router: building the target and route tables, and the choices over them.
 */
#include "gateway/router.h"

#include <stdio.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The target for (provider, model), added when new. */
static struct gw_target *target_for(struct router *r, const struct gw_config *cfg,
				    const struct gw_target_ref *ref, double now_ms)
{
	struct gw_target *t;
	size_t i;

	for (i = 0; i < r->ntargets; i++) {
		t = &r->targets[i];
		if (t->provider == ref->provider && strcmp(t->model, ref->model) == 0)
			return t;
	}
	t = &r->targets[r->ntargets++];
	memset(t, 0, sizeof(*t));
	t->provider = ref->provider;
	t->prov = &cfg->providers[ref->provider];
	t->model = ref->model;
	breaker_init(&t->br, &t->prov->breaker, now_ms);
	return t;
}

int router_init(struct router *r, const struct gw_config *cfg, double now_ms)
{
	size_t most = 0;
	size_t i;
	size_t j;

	memset(r, 0, sizeof(*r));
	list_init(&r->listeners);
	for (i = 0; i < cfg->naliases; i++)
		most += cfg->aliases[i].ntargets;
	r->targets = calloc(most ? most : 1, sizeof(*r->targets));
	r->routes = calloc(cfg->naliases ? cfg->naliases : 1, sizeof(*r->routes));
	if (!r->targets || !r->routes)
		goto out_nomem;
	for (i = 0; i < cfg->naliases; i++) {
		const struct gw_alias *a = &cfg->aliases[i];
		struct gw_route *rt = &r->routes[i];

		rt->alias = a;
		list_init(&rt->waiting);
		rt->targets = calloc(a->ntargets, sizeof(*rt->targets));
		if (!rt->targets)
			goto out_nomem;
		r->nroutes = i + 1;
		for (j = 0; j < a->ntargets; j++)
			rt->targets[j] = target_for(r, cfg, &a->targets[j], now_ms);
		rt->ntargets = a->ntargets;
		budget_init(&rt->budget, &a->budget, now_ms);
	}
	return 0;

out_nomem:
	router_free(r);
	return -ENOMEM;
}

void router_listen(struct router *r, struct router_listener *l)
{
	list_push_back(&r->listeners, &l->link);
}

void router_breaker_changed(struct router *r, struct gw_target *t,
			    const struct breaker_change *chg)
{
	router_breaker_changed_from(r, t, chg, NULL);
}

void router_breaker_changed_from(struct router *r, struct gw_target *t,
				 const struct breaker_change *chg,
				 const struct change_origin *origin)
{
	struct list_node *n;

	if (!chg->changed)
		return;
	t->transitions[chg->from][chg->to]++;
	if (!origin)
		t->own_transitions[chg->from][chg->to]++;
	r->breaker_gen++;
	for (n = list_first(&r->listeners); n; n = list_next(&r->listeners, n)) {
		struct router_listener *l = list_entry(n, struct router_listener, link);

		l->on_change(l->arg, t, chg, origin);
	}
}

void router_free(struct router *r)
{
	size_t i;

	for (i = 0; i < r->nroutes; i++)
		free(r->routes[i].targets);
	free(r->routes);
	free(r->targets);
	memset(r, 0, sizeof(*r));
}

struct gw_route *router_find(const struct router *r, const char *alias)
{
	size_t i;

	for (i = 0; i < r->nroutes; i++) {
		if (strcmp(r->routes[i].alias->name, alias) == 0)
			return &r->routes[i];
	}
	return NULL;
}

bool router_target_allowed(const struct gw_target *t, const struct target_filter *f)
{
	return !f || ((!f->only || strcmp(t->prov->name, f->only) == 0) &&
		      (!f->no_anthropic || t->prov->dialect != GW_DIALECT_ANTHROPIC));
}

bool router_route_allows(const struct gw_route *rt, const struct target_filter *f)
{
	size_t i;

	for (i = 0; i < rt->ntargets; i++) {
		if (router_target_allowed(rt->targets[i], f))
			return true;
	}
	return false;
}

struct gw_target *router_least_recently_failed(const struct gw_route *rt,
					       const struct target_filter *f,
					       const struct provider_stats *pstats,
					       uint32_t tried, size_t *pos)
{
	struct gw_target *best = NULL;
	size_t i;

	for (i = 0; i < rt->ntargets; i++) {
		struct gw_target *t = rt->targets[i];
		const struct provider_stats *ps = pstats ? &pstats[t->provider] : NULL;

		if (!router_target_allowed(t, f) || (tried & (1u << i)) || t->failed_slow ||
		    (ps && ps->unhealthy && ps->check_slow))
			continue;
		if (!best || t->br.last_failure_ms < best->br.last_failure_ms) {
			best = t;
			*pos = i;
		}
	}
	return best;
}

bool router_route_may_admit(const struct gw_route *rt, const struct target_filter *f,
			    double now_ms, bool batch)
{
	size_t i;

	for (i = 0; i < rt->ntargets; i++) {
		const struct breaker *b = &rt->targets[i]->br;

		if (!router_target_allowed(rt->targets[i], f) || !breaker_would_admit(b, now_ms))
			continue;
		if (!batch || !b->cfg.enabled || b->state != BREAKER_HALF_OPEN ||
		    b->probes_in_flight == 0)
			return true;
	}
	return false;
}

double router_route_next_open_end(const struct gw_route *rt, const struct target_filter *f)
{
	double soonest = INFINITY;
	size_t i;

	for (i = 0; i < rt->ntargets; i++) {
		const struct gw_target *t = rt->targets[i];

		if (router_target_allowed(t, f) && t->br.cfg.enabled &&
		    t->br.state == BREAKER_OPEN)
			soonest = fmin(soonest, t->br.open_until_ms);
	}
	return soonest;
}

enum event_state router_event_state(enum breaker_state s)
{
	switch (s) {
	case BREAKER_OPEN:
		return EVENT_OPEN;
	case BREAKER_HALF_OPEN:
		return EVENT_HALF_OPEN;
	case BREAKER_CLOSED:
	default:
		return EVENT_CLOSED;
	}
}

bool router_provider_suspect(const struct router *r, size_t provider)
{
	size_t i;

	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i].provider == provider && r->targets[i].br.state != BREAKER_CLOSED)
			return true;
	return false;
}

void router_apply_health(struct router *r, size_t provider, enum health_change ch, bool ok,
			 unsigned n, bool healthy, double now, struct rng *rng)
{
	struct breaker_change chg;
	char reason[96];
	size_t i;

	if (ok ? ch != HEALTH_UP : healthy)
		return;
	snprintf(reason, sizeof(reason), "health check %s %u time%s", ok ? "passed" : "failed", n,
		 n == 1 ? "" : "s");
	for (i = 0; i < r->ntargets; i++) {
		struct gw_target *t = &r->targets[i];

		if (t->provider != provider)
			continue;
		if (ok)
			breaker_wake(&t->br, now, reason, &chg);
		else
			breaker_trip(&t->br, now, reason, rng, &chg);
		router_breaker_changed(r, t, &chg);
	}
}
