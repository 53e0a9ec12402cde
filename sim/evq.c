/*
 * evq: a binary min-heap of embedded timers (evq.h). Each timer keeps its
 * heap index, so stopping one is O(log n) like arming it.
 */
#include "sim/evq.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static bool before(const struct sim_timer *a, const struct sim_timer *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void place(struct evq *q, size_t i, struct sim_timer *t)
{
	q->heap[i] = t;
	t->slot = i + 1;
}

static void sift_up(struct evq *q, size_t i)
{
	struct sim_timer *t = q->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!before(t, q->heap[parent]))
			break;
		place(q, i, q->heap[parent]);
		i = parent;
	}
	place(q, i, t);
}

static void sift_down(struct evq *q, size_t i)
{
	struct sim_timer *t = q->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(q->heap[c + 1], q->heap[c]))
			c++;
		if (!before(q->heap[c], t))
			break;
		place(q, i, q->heap[c]);
		i = c;
	}
	place(q, i, t);
}

void evq_init(struct evq *q)
{
	*q = (struct evq){ 0 };
}

void evq_free(struct evq *q)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		q->heap[i]->slot = 0;
	free(q->heap);
	*q = (struct evq){ 0 };
}

bool evq_armed(const struct sim_timer *t)
{
	return t->slot != 0;
}

void evq_stop(struct evq *q, struct sim_timer *t)
{
	size_t i;
	struct sim_timer *last;

	if (!t->slot)
		return;
	i = t->slot - 1;
	t->slot = 0;
	last = q->heap[--q->n];
	if (i == q->n)
		return;
	place(q, i, last);
	if (i > 0 && before(last, q->heap[(i - 1) / 2]))
		sift_up(q, i);
	else
		sift_down(q, i);
}

int evq_at(struct evq *q, struct sim_timer *t, double at)
{
	evq_stop(q, t);
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 256;
		struct sim_timer **h = realloc(q->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	t->at = at > q->now ? at : q->now;
	t->seq = q->seq++;
	place(q, q->n++, t);
	sift_up(q, q->n - 1);
	return 0;
}

int evq_after(struct evq *q, struct sim_timer *t, double delay)
{
	return evq_at(q, t, q->now + (delay > 0 ? delay : 0));
}

double evq_next_at(const struct evq *q)
{
	return q->n ? q->heap[0]->at : INFINITY;
}

uint64_t evq_run(struct evq *q, double until)
{
	uint64_t n = 0;

	while (q->n && q->heap[0]->at <= until) {
		struct sim_timer *t = q->heap[0];

		evq_stop(q, t);
		q->now = t->at;
		n++;
		t->fn(t);
	}
	q->fired += n;
	return n;
}
