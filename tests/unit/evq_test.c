/*
 * evq: the simulator's clock — events in time order, ties in arming order,
 * a stopped timer never fires, re-arming moves it, time never goes back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>

#include "sim/evq.h"

struct probe {
	struct sim_timer t;
	int id;
	int *log;
	size_t *n;
	struct evq *q;
	double *when;
};

static void on_fire(struct sim_timer *t)
{
	struct probe *p = (struct probe *)((char *)t - offsetof(struct probe, t));

	p->when[*p->n] = p->q->now;
	p->log[(*p->n)++] = p->id;
}

Test(evq, time_order_then_arming_order)
{
	struct evq q;
	struct probe p[6];
	int log[6];
	double when[6];
	size_t n = 0;
	static const double at[] = { 30, 10, 20, 10, 5, 20 };
	static const int want[] = { 4, 1, 3, 2, 5, 0 };
	size_t i;

	evq_init(&q);
	for (i = 0; i < 6; i++) {
		p[i] = (struct probe){ .t.fn = on_fire, .id = (int)i, .log = log, .n = &n, .q = &q,
				       .when = when };
		cr_assert_eq(evq_at(&q, &p[i].t, at[i]), 0);
	}
	cr_assert_eq(evq_next_at(&q), 5);
	cr_assert_eq(evq_run(&q, INFINITY), 6);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(log[i], want[i], "event %zu was %d, not %d", i, log[i], want[i]);
		cr_assert_eq(when[i], at[want[i]]);
	}
	cr_assert(isinf(evq_next_at(&q)));
	evq_free(&q);
}

Test(evq, stop_rearm_and_until)
{
	struct evq q;
	struct probe p[3];
	int log[3];
	double when[3];
	size_t n = 0;
	size_t i;

	evq_init(&q);
	for (i = 0; i < 3; i++) {
		p[i] = (struct probe){ .t.fn = on_fire, .id = (int)i, .log = log, .n = &n, .q = &q,
				       .when = when };
		evq_at(&q, &p[i].t, 10.0 * (double)(i + 1));
	}
	evq_stop(&q, &p[0].t);
	cr_assert(!evq_armed(&p[0].t));
	evq_stop(&q, &p[0].t);			/* twice: nothing */
	evq_at(&q, &p[2].t, 15);		/* re-armed earlier */
	cr_assert_eq(evq_run(&q, 16), 1, "only the event at 15 is due by 16");
	cr_assert_eq(log[0], 2);
	cr_assert_eq(q.now, 15);
	evq_after(&q, &p[0].t, -5);		/* the past: now */
	cr_assert_eq(evq_next_at(&q), 15);
	evq_run(&q, INFINITY);
	cr_assert_eq(n, 3);
	cr_assert_eq(log[1], 0);
	cr_assert_eq(log[2], 1);
	cr_assert_eq(when[2], 20);
	evq_free(&q);
}
