/*
 * metrics: the gateway's counters — answers by status, upstream attempts by
 * outcome, the upstream latency histogram — kept where they are counted
 * (a route, a provider) and rendered by admin as Prometheus text.
 */
#ifndef FAULTLINE_GATEWAY_METRICS_H
#define FAULTLINE_GATEWAY_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/attempt.h"
#include "common/buf.h"

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
	GW_NOUTCOMES = GW_OUT_FAILURE + ATTEMPT_NFAILURES - 1,
};

/* Upper bounds of the latency histogram's buckets, in seconds (+Inf after). */
#define LATENCY_BUCKETS 12
extern const double metrics_latency_bounds[LATENCY_BUCKETS];

/* A histogram over metrics_latency_bounds. */
struct latency_hist {
	uint64_t n[LATENCY_BUCKETS + 1];	/* per bucket, not cumulative */
	uint64_t count;
	double sum_s;
};

/* Why a committed stream broke other than by a stall. */
enum stream_trunc {
	TRUNC_TRUNCATED,
	TRUNC_ERROR_EVENT,
	TRUNC_RESET,
	TRUNC_INVALID,
	TRUNC_KINDS,
};

struct provider_stats {
	uint64_t outcomes[GW_NOUTCOMES];
	struct latency_hist latency;	/* attempts' durations */
	struct latency_hist ttft;	/* streaming attempts' time to first content */
	uint64_t stalls;		/* committed streams ended by the stall timer */
	uint64_t health_checks[2];	/* active health checks: [0] failed, [1] passed */
	bool unhealthy;			/* its active health checks say it is down */
	bool check_slow;		/* ... and the last check failed by running out of time */
	double dup_usd;			/* the cost of answers discarded (hedges that lost, cut attempts) */
	uint64_t truncations[TRUNC_KINDS];
};

/* Tenant and feature labels longer than this are cut. */
#define COST_LABEL_MAX 64

/* Distinct provider × tenant × feature rows kept; more go to the "other" row. */
#define COST_ROWS 128

/* The provider of the overflow row. */
#define COST_OTHER SIZE_MAX

/* Money and tokens spent on one provider for one tenant and feature. */
struct cost_row {
	size_t provider;		/* config index; COST_OTHER for the overflow row */
	char tenant[COST_LABEL_MAX + 1];
	char feature[COST_LABEL_MAX + 1];
	double usd;
	uint64_t tokens_in;
	uint64_t tokens_out;
};

struct cost_table {
	struct cost_row row[COST_ROWS];
	size_t used;			/* row[COST_ROWS - 1] is "other" once the rest are used */
};

/*
 * Adds an answer's tokens and cost to the row of (provider, tenant,
 * feature); when COST_ROWS − 1 rows are taken, a new combination goes to
 * the last row, whose provider is COST_OTHER (labelled "other", as its
 * tenant and feature are).
 */
void cost_table_add(struct cost_table *t, size_t provider, const char *tenant,
		    const char *feature, int64_t tokens_in, int64_t tokens_out, double usd);

/* Counts one answer with this status. */
void status_counts_add(struct status_counts *c, int status);

/* The outcome of a failure kind (ATTEMPT_FAIL_NONE is not one: success). */
enum gw_outcome metrics_failure_outcome(enum attempt_failure f);

/* The label of an outcome: "success", "pass_through", "cancelled", a failure name. */
const char *metrics_outcome_name(enum gw_outcome o);

/* Counts one attempt that ended so after latency_ms. */
void provider_stats_attempt(struct provider_stats *s, enum gw_outcome o, double latency_ms);

/* Adds one observation of ms to h. */
void latency_hist_add(struct latency_hist *h, double ms);

/* Counts the break of a committed stream (a failure kind from attempt_classify_stream). */
void provider_stats_stream_break(struct provider_stats *s, enum attempt_failure f);

/* The label of a truncation kind: "truncated", "error_event", "reset", "invalid_body". */
const char *metrics_trunc_name(enum stream_trunc k);

/*
 * Appends s as a Prometheus label value, quotes included, escaping '\',
 * '"' and newlines. Returns 0 or -ENOMEM.
 */
int metrics_label(struct buf *b, const char *s);

#endif
