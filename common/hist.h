/*
 * hist: a log-linear latency histogram. Values are whole microseconds; below
 * 128 µs each value has its own bucket, above it every power of two is split
 * into 128 equal buckets, so a reported percentile is within 0.4% of the
 * value it stands for (1% is the promise). Fixed size, no allocation after
 * hist_init, cheap to record into on a hot path.
 */
#ifndef FAULTLINE_HIST_H
#define FAULTLINE_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS 7				/* 128 buckets per octave */
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_MAX_SHIFT 34			/* values below 2^42 µs (50 days) */
#define HIST_BUCKETS (HIST_SUB + (HIST_MAX_SHIFT + 1) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t min_us;	/* exact; UINT64_MAX while empty */
	uint64_t max_us;	/* exact */
	double sum_us;		/* for the mean */
	uint64_t buckets[HIST_BUCKETS];
};

/* Empties the histogram. */
void hist_init(struct hist *h);

/*
 * Records one value in milliseconds (rounded to the microsecond; negative
 * values and NaN count as 0, values past the top, 2^42 - 1 µs, count as the
 * top in every respect, min, max and mean included). No loops, no allocation.
 */
void hist_record_ms(struct hist *h, double ms);

/* Adds every value of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * The p-th percentile (0 < p ≤ 100) in milliseconds by nearest rank: the
 * value v such that ceil(p/100 × count) values are ≤ v, reported as the
 * middle of its bucket and clamped to [min, max]. A rank below 1 counts as
 * 1 and one past count as count; NaN when empty or when p is NaN.
 */
double hist_percentile_ms(const struct hist *h, double p);

/* The largest value (exact), the smallest, the mean; NaN when empty. */
double hist_max_ms(const struct hist *h);
double hist_min_ms(const struct hist *h);
double hist_mean_ms(const struct hist *h);

#endif
