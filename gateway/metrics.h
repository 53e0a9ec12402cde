/*
 * metrics: the gateway's counters — answers by status, upstream attempts by
 * outcome, the upstream latency histogram — kept where they are counted
 * (a route, a provider) and rendered by admin as Prometheus text.
 */
#ifndef FAULTLINE_GATEWAY_METRICS_H
#define FAULTLINE_GATEWAY_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "attempt.h"
#include "buf.h"

/* Distinct statuses kept apart per route; more fall into "other". */
#define STATUS_SLOTS 24

struct status_counts {
	int status[STATUS_SLOTS];
	uint64_t n[STATUS_SLOTS];
	size_t used;
	uint64_t other;
};

/* How an upstream attempt ended, for faultline_attempts_total. */
enum gw_outcome {
	GW_OUT_SUCCESS,
	GW_OUT_PASS_THROUGH,
	GW_OUT_CANCELLED,		/* the client left, or the gateway stopped */
	GW_OUT_FAILURE,			/* + (attempt_failure − 1) for each failure kind */
	GW_NOUTCOMES = GW_OUT_FAILURE + ATTEMPT_FAIL_TRANSPORT,
};

/* Upper bounds of the latency histogram's buckets, in seconds (+Inf after). */
#define LATENCY_BUCKETS 12
extern const double metrics_latency_bounds[LATENCY_BUCKETS];

struct provider_stats {
	uint64_t outcomes[GW_NOUTCOMES];
	uint64_t latency[LATENCY_BUCKETS + 1];	/* per bucket, not cumulative */
	uint64_t latency_count;
	double latency_sum_s;
};

/* Counts one answer with this status. */
void status_counts_add(struct status_counts *c, int status);

/* The outcome of a failure kind (ATTEMPT_FAIL_NONE is not one: success). */
enum gw_outcome metrics_failure_outcome(enum attempt_failure f);

/* The label of an outcome: "success", "pass_through", "cancelled", a failure name. */
const char *metrics_outcome_name(enum gw_outcome o);

/* Counts one attempt that ended so after latency_ms. */
void provider_stats_attempt(struct provider_stats *s, enum gw_outcome o, double latency_ms);

/*
 * Appends s as a Prometheus label value, quotes included, escaping '\',
 * '"' and newlines. Returns 0 or -ENOMEM.
 */
int metrics_label(struct buf *b, const char *s);

#endif
