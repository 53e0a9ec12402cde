/*
 * hedge: latency percentiles and the hedge delay.
 */
#include "gateway/hedge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void lat_ring_add(struct lat_ring *r, double ms)
{
	r->v[r->next] = ms;
	r->next = (r->next + 1) % LAT_RING_SIZE;
	if (r->n < LAT_RING_SIZE)
		r->n++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return (x > y) - (x < y);
}

double lat_ring_percentile(const struct lat_ring *r, double pct)
{
	double v[LAT_RING_SIZE];
	double rank;
	size_t k;

	if (r->n == 0)
		return NAN;
	/* The ring's first n slots are the ones in use, whatever next is. */
	memcpy(v, r->v, r->n * sizeof(v[0]));
	qsort(v, r->n, sizeof(v[0]), cmp_double);
	/*
	 * pct/100 is inexact in binary (55/100 × 100 is 55.000000000000007),
	 * so a whole rank would round up a place without the 1e-9 taken off,
	 * far less than any real fraction of a rank among 256.
	 */
	rank = ceil(pct / 100 * r->n - 1e-9);
	k = rank < 1 ? 0 : (size_t)rank - 1;
	return v[k < r->n ? k : r->n - 1];
}

double hedge_delay_ms(const struct gw_hedge *h, const struct lat_ring *r)
{
	double p;

	if (!isnan(h->after_ms))
		return h->after_ms;
	if (!r || r->n < h->min_samples)
		return h->max_after_ms;
	p = lat_ring_percentile(r, h->percentile);
	return fmin(h->max_after_ms, fmax(h->min_after_ms, p));
}
