/*
 * gateway metrics: answers counted by status (with an overflow slot),
 * attempts by outcome with a latency histogram whose buckets hold what
 * Prometheus's `le` says, outcome names, and label escaping.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gateway/metrics.h"

Test(gwmetrics, status_counts_and_overflow, .timeout = 10)
{
	struct status_counts c = { 0 };
	int s;

	status_counts_add(&c, 200);
	status_counts_add(&c, 200);
	status_counts_add(&c, 503);
	cr_assert_eq(c.used, 2);
	cr_assert_eq(c.status[0], 200);
	cr_assert_eq(c.n[0], 2);
	cr_assert_eq(c.status[1], 503);
	cr_assert_eq(c.n[1], 1);
	for (s = 100; c.used < STATUS_SLOTS; s++)
		status_counts_add(&c, s);
	cr_assert_eq(c.other, 0);
	status_counts_add(&c, 999);
	status_counts_add(&c, 998);
	cr_assert_eq(c.other, 2, "past the slots: other");
	status_counts_add(&c, 200);
	cr_assert_eq(c.n[0], 3, "known statuses still count in their slot");
}

Test(gwmetrics, outcome_names, .timeout = 10)
{
	cr_assert_str_eq(metrics_outcome_name(GW_OUT_SUCCESS), "success");
	cr_assert_str_eq(metrics_outcome_name(GW_OUT_PASS_THROUGH), "pass_through");
	cr_assert_str_eq(metrics_outcome_name(GW_OUT_CANCELLED), "cancelled");
	cr_assert_str_eq(metrics_outcome_name(metrics_failure_outcome(ATTEMPT_FAIL_REFUSED)),
			 "refused");
	cr_assert_str_eq(metrics_outcome_name(metrics_failure_outcome(ATTEMPT_FAIL_TRANSPORT)),
			 "transport");
	cr_assert_str_eq(metrics_outcome_name(metrics_failure_outcome(ATTEMPT_FAIL_STALL)),
			 "stall");
	cr_assert_eq(metrics_failure_outcome(ATTEMPT_NFAILURES - 1), GW_NOUTCOMES - 1,
		     "the last failure is the last outcome");
	cr_assert_eq(metrics_failure_outcome(ATTEMPT_FAIL_NONE), GW_OUT_SUCCESS);
}

Test(gwmetrics, stream_breaks_by_kind, .timeout = 10)
{
	struct provider_stats s = { 0 };

	provider_stats_stream_break(&s, ATTEMPT_FAIL_STALL);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_STALL);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_TRUNCATED);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_ERROR_EVENT);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_INVALID_BODY);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_RESET);
	provider_stats_stream_break(&s, ATTEMPT_FAIL_TRANSPORT);
	cr_assert_eq(s.stalls, 2);
	cr_assert_eq(s.truncations[TRUNC_TRUNCATED], 1);
	cr_assert_eq(s.truncations[TRUNC_ERROR_EVENT], 1);
	cr_assert_eq(s.truncations[TRUNC_INVALID], 1);
	cr_assert_eq(s.truncations[TRUNC_RESET], 2, "any transfer error is a reset");
	cr_assert_str_eq(metrics_trunc_name(TRUNC_TRUNCATED), "truncated");
	cr_assert_str_eq(metrics_trunc_name(TRUNC_ERROR_EVENT), "error_event");
	cr_assert_str_eq(metrics_trunc_name(TRUNC_RESET), "reset");
	cr_assert_str_eq(metrics_trunc_name(TRUNC_INVALID), "invalid_body");
	cr_assert_str_eq(metrics_trunc_name(TRUNC_KINDS), "unknown");
}

Test(gwmetrics, latency_buckets_by_le, .timeout = 10)
{
	struct provider_stats s = { 0 };

	provider_stats_attempt(&s, GW_OUT_SUCCESS, 5);		/* exactly 0.005 s: le="0.005" */
	provider_stats_attempt(&s, GW_OUT_SUCCESS, 5.001);	/* just over: the next */
	provider_stats_attempt(&s, metrics_failure_outcome(ATTEMPT_FAIL_TIMEOUT), 1000);
	provider_stats_attempt(&s, GW_OUT_CANCELLED, 60000);	/* past 30 s: +Inf */
	cr_assert_eq(s.latency.n[0], 1);
	cr_assert_eq(s.latency.n[1], 1);
	cr_assert_eq(s.latency.n[7], 1, "1 s is le=\"1\"");
	cr_assert_eq(s.latency.n[LATENCY_BUCKETS], 1);
	cr_assert_eq(s.latency.count, 4);
	cr_assert_float_eq(s.latency.sum_s, 0.005 + 0.005001 + 1 + 60, 1e-9);
	cr_assert_eq(s.outcomes[GW_OUT_SUCCESS], 2);
	cr_assert_eq(s.outcomes[GW_OUT_CANCELLED], 1);
	cr_assert_eq(s.outcomes[metrics_failure_outcome(ATTEMPT_FAIL_TIMEOUT)], 1);
}

Test(gwmetrics, label_escaping, .timeout = 10)
{
	struct buf b = { 0 };

	cr_assert_eq(metrics_label(&b, "a\"b\\c\nd"), 0);
	cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\nd\"");
	buf_free(&b);
}

Test(gwmetrics, cost_rows_by_provider_tenant_feature, .timeout = 10)
{
	static struct cost_table t;
	char name[16];
	size_t i;

	cost_table_add(&t, 0, "acme", "chat", 10, 20, 0.5);
	cost_table_add(&t, 0, "acme", "chat", 1, 2, 0.25);
	cost_table_add(&t, 1, "acme", "chat", 3, 4, 1);
	cost_table_add(&t, 0, "", "", 5, -1, 0);
	cr_assert_eq(t.used, 3);
	cr_assert_float_eq(t.row[0].usd, 0.75, 1e-12);
	cr_assert_eq(t.row[0].tokens_in, 11);
	cr_assert_eq(t.row[0].tokens_out, 22);
	cr_assert_eq(t.row[1].provider, 1);
	cr_assert_eq(t.row[2].tokens_out, 0, "a negative count adds nothing");
	/* Fill the table: new combinations then share the overflow row. */
	for (i = t.used; i < COST_ROWS + 10; i++) {
		snprintf(name, sizeof(name), "t%zu", i);
		cost_table_add(&t, 0, name, "f", 1, 1, 1);
	}
	cr_assert_eq(t.used, COST_ROWS);
	cr_assert_eq(t.row[COST_ROWS - 1].provider, COST_OTHER);
	cr_assert_str_eq(t.row[COST_ROWS - 1].tenant, "other");
	cr_assert_float_eq(t.row[COST_ROWS - 1].usd, 11, 1e-9, "%g", t.row[COST_ROWS - 1].usd);
	cost_table_add(&t, 0, "acme", "chat", 0, 0, 1);
	cr_assert_float_eq(t.row[0].usd, 1.75, 1e-12, "a known row still counts alone");
}
