/*
 * hist: a log-linear latency histogram in whole microseconds. Bucket i < 128
 * holds the value i; above that, values whose top bit is bit msb fall into
 * octave shift = msb - 7, split into 128 buckets of width 2^shift.
 */
#include "common/hist.h"

#include <math.h>
#include <string.h>

/* The largest value with a bucket of its own; anything above counts as it. */
#define HIST_TOP_US ((UINT64_C(1) << (HIST_MAX_SHIFT + HIST_SUB_BITS + 1)) - 1)

static size_t bucket_index(uint64_t us)
{
	unsigned msb;
	unsigned shift;

	if (us < HIST_SUB)
		return (size_t)us;
	msb = 63u - (unsigned)__builtin_clzll(us);
	shift = msb - HIST_SUB_BITS;
	return HIST_SUB + (size_t)shift * HIST_SUB + (size_t)((us >> shift) - HIST_SUB);
}

/*
 * The value that stands for bucket i: the middle of the whole microseconds
 * it holds, so the error is below half a bucket width, 1/256 of the value.
 */
static double bucket_middle_us(size_t i)
{
	size_t shift;
	uint64_t lo;
	uint64_t width;

	if (i < HIST_SUB)
		return (double)i;
	shift = (i - HIST_SUB) / HIST_SUB;
	lo = (uint64_t)(HIST_SUB + (i - HIST_SUB) % HIST_SUB) << shift;
	width = UINT64_C(1) << shift;
	return (double)lo + (double)(width - 1) / 2.0;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_us = UINT64_MAX;
}

void hist_record_ms(struct hist *h, double ms)
{
	double us = ms * 1000.0 + 0.5;
	uint64_t v;

	/* NaN and negatives fail the first test; +inf and huge values the second. */
	if (!(us >= 1.0))
		v = 0;
	else if (us >= (double)HIST_TOP_US)
		v = HIST_TOP_US;
	else
		v = (uint64_t)us;

	h->buckets[bucket_index(v)]++;
	h->count++;
	h->sum_us += (double)v;
	if (v < h->min_us)
		h->min_us = v;
	if (v > h->max_us)
		h->max_us = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	size_t i;

	if (src->count == 0)
		return;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum_us += src->sum_us;
	if (src->min_us < dst->min_us)
		dst->min_us = src->min_us;
	if (src->max_us > dst->max_us)
		dst->max_us = src->max_us;
}

/*
 * ceil(p/100 × count) limited to [1, count]. p × count / 100 keeps the
 * product exact more often than p / 100 × count, and the small allowance
 * stops a product such as 99.9 × 1000 landing a hair above the integer it
 * stands for and taking the next rank.
 */
static uint64_t nearest_rank(uint64_t count, double p)
{
	double x = p * (double)count / 100.0;
	double rank = ceil(x - x * 1e-12);

	if (!(rank >= 1.0))
		return 1;
	if (rank >= (double)count)
		return count;
	return (uint64_t)rank;
}

double hist_percentile_ms(const struct hist *h, double p)
{
	uint64_t rank;
	uint64_t seen = 0;
	double us;
	size_t i;

	if (h->count == 0 || isnan(p))
		return NAN;
	rank = nearest_rank(h->count, p);
	for (i = 0; i < HIST_BUCKETS - 1; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	us = bucket_middle_us(i);
	if (us < (double)h->min_us)
		us = (double)h->min_us;
	if (us > (double)h->max_us)
		us = (double)h->max_us;
	return us / 1000.0;
}

double hist_max_ms(const struct hist *h)
{
	return h->count ? (double)h->max_us / 1000.0 : NAN;
}

double hist_min_ms(const struct hist *h)
{
	return h->count ? (double)h->min_us / 1000.0 : NAN;
}

double hist_mean_ms(const struct hist *h)
{
	return h->count ? h->sum_us / (double)h->count / 1000.0 : NAN;
}
