/*
 * metrics: counting answers and attempts.
 */
#include "gateway/metrics.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const double metrics_latency_bounds[LATENCY_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};

void status_counts_add(struct status_counts *c, int status)
{
	size_t i;

	for (i = 0; i < c->used; i++) {
		if (c->status[i] == status) {
			c->n[i]++;
			return;
		}
	}
	if (c->used == STATUS_SLOTS) {
		c->other++;
		return;
	}
	c->status[c->used] = status;
	c->n[c->used++] = 1;
}

enum gw_outcome metrics_failure_outcome(enum attempt_failure f)
{
	if (f == ATTEMPT_FAIL_NONE)
		return GW_OUT_SUCCESS;
	return (enum gw_outcome)(GW_OUT_FAILURE + (int)f - 1);
}

const char *metrics_outcome_name(enum gw_outcome o)
{
	switch (o) {
	case GW_OUT_SUCCESS:
		return "success";
	case GW_OUT_PASS_THROUGH:
		return "pass_through";
	case GW_OUT_CANCELLED:
		return "cancelled";
	default:
		return attempt_failure_name((enum attempt_failure)(o - GW_OUT_FAILURE + 1));
	}
}

void latency_hist_add(struct latency_hist *h, double ms)
{
	double sec = ms > 0 ? ms / 1000 : 0;
	size_t i;

	for (i = 0; i < LATENCY_BUCKETS && sec > metrics_latency_bounds[i]; i++)
		;
	h->n[i]++;
	h->count++;
	h->sum_s += sec;
}

void provider_stats_attempt(struct provider_stats *s, enum gw_outcome o, double latency_ms)
{
	if ((unsigned)o < GW_NOUTCOMES)
		s->outcomes[o]++;
	latency_hist_add(&s->latency, latency_ms);
}

void provider_stats_stream_break(struct provider_stats *s, enum attempt_failure f)
{
	switch (f) {
	case ATTEMPT_FAIL_STALL:
		s->stalls++;
		break;
	case ATTEMPT_FAIL_TRUNCATED:
		s->truncations[TRUNC_TRUNCATED]++;
		break;
	case ATTEMPT_FAIL_ERROR_EVENT:
		s->truncations[TRUNC_ERROR_EVENT]++;
		break;
	case ATTEMPT_FAIL_INVALID_BODY:
		s->truncations[TRUNC_INVALID]++;
		break;
	default:
		s->truncations[TRUNC_RESET]++;
		break;
	}
}

const char *metrics_trunc_name(enum stream_trunc k)
{
	static const char *const names[TRUNC_KINDS] = {
		"truncated", "error_event", "reset", "invalid_body",
	};

	return (unsigned)k < TRUNC_KINDS ? names[k] : "unknown";
}

int metrics_label(struct buf *b, const char *s)
{
	int rc = buf_puts(b, "\"");

	for (; *s && !rc; s++) {
		if (*s == '\\')
			rc = buf_puts(b, "\\\\");
		else if (*s == '"')
			rc = buf_puts(b, "\\\"");
		else if (*s == '\n')
			rc = buf_puts(b, "\\n");
		else
			rc = buf_append(b, s, 1);
	}
	return rc ? rc : buf_puts(b, "\"");
}

void cost_table_add(struct cost_table *t, size_t provider, const char *tenant,
		    const char *feature, int64_t tokens_in, int64_t tokens_out, double usd)
{
	struct cost_row *r = NULL;
	size_t i;

	for (i = 0; i < t->used; i++) {
		if (t->row[i].provider == provider && strcmp(t->row[i].tenant, tenant) == 0 &&
		    strcmp(t->row[i].feature, feature) == 0) {
			r = &t->row[i];
			break;
		}
	}
	if (!r && t->used < COST_ROWS - 1) {
		r = &t->row[t->used++];
		r->provider = provider;
		snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
		snprintf(r->feature, sizeof(r->feature), "%s", feature);
	}
	if (!r) {
		/* Past the table: one row for the rest, whatever their provider. */
		r = &t->row[COST_ROWS - 1];
		if (t->used < COST_ROWS) {
			t->used = COST_ROWS;
			r->provider = COST_OTHER;
			snprintf(r->tenant, sizeof(r->tenant), "other");
			snprintf(r->feature, sizeof(r->feature), "other");
		}
	}
	r->usd += usd;
	r->tokens_in += tokens_in > 0 ? (uint64_t)tokens_in : 0;
	r->tokens_out += tokens_out > 0 ? (uint64_t)tokens_out : 0;
}
