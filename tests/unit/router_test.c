/*
 * Unit tests for gateway/router.c's breaker-change listeners: every state
 * change is counted once and told to every listener, in the order they
 * registered; a result that changes nothing is told to nobody.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/router.h"

/* Which listener heard which change, in order. */
struct heard {
	char who[8];
	enum breaker_state to[8];
	unsigned n;
};

static void on_first(void *arg, struct gw_target *t, const struct breaker_change *chg,
		     const struct change_origin *origin)
{
	(void)origin;
	struct heard *h = arg;

	(void)t;
	h->who[h->n] = '1';
	h->to[h->n++] = chg->to;
}

static void on_second(void *arg, struct gw_target *t, const struct breaker_change *chg,
		     const struct change_origin *origin)
{
	(void)origin;
	struct heard *h = arg;

	(void)t;
	h->who[h->n] = '2';
	h->to[h->n++] = chg->to;
}

Test(router, listeners_hear_each_change_in_order, .timeout = 10)
{
	struct gw_provider prov = { .name = "p", .breaker = breaker_config_default() };
	struct gw_target_ref ref = { .provider = 0, .model = "m" };
	struct gw_alias alias = { .name = "chat", .targets = &ref, .ntargets = 1 };
	struct gw_config cfg = { .providers = &prov, .nproviders = 1, .aliases = &alias,
				 .naliases = 1 };
	struct router r;
	struct router_listener l1 = { .on_change = on_first };
	struct router_listener l2 = { .on_change = on_second };
	struct heard h = { 0 };
	struct breaker_change chg;
	struct gw_target *t;
	struct rng rng;

	cr_assert_eq(router_init(&r, &cfg, 0), 0);
	l1.arg = l2.arg = &h;
	router_listen(&r, &l1);
	router_listen(&r, &l2);
	t = r.routes[0].targets[0];
	rng_seed(&rng, 1);
	breaker_trip(&t->br, 10, "test", &rng, &chg);
	router_breaker_changed(&r, t, &chg);
	cr_assert_eq(h.n, 2);
	cr_assert_eq(memcmp(h.who, "12", 2), 0, "in the order registered");
	cr_assert_eq(h.to[0], BREAKER_OPEN);
	cr_assert_eq(r.breaker_gen, 1);
	cr_assert_eq(t->transitions[BREAKER_CLOSED][BREAKER_OPEN], 1);
	/* Tripping an open breaker again changes nothing: nobody is told. */
	breaker_trip(&t->br, 20, "test", &rng, &chg);
	router_breaker_changed(&r, t, &chg);
	cr_assert_eq(h.n, 2);
	cr_assert_eq(r.breaker_gen, 1);
	breaker_wake(&t->br, 30, "test", &chg);
	router_breaker_changed(&r, t, &chg);
	cr_assert_eq(h.n, 4);
	cr_assert_eq(h.to[3], BREAKER_HALF_OPEN);
	cr_assert_eq(r.breaker_gen, 2);
	cr_assert_eq(t->transitions[BREAKER_OPEN][BREAKER_HALF_OPEN], 1);
	router_free(&r);
}
