/*
 * gather: two workers' /metrics texts made one — counters, histogram
 * buckets and amount gauges summed, the state gauges the answering
 * worker's (the shared link's the lowest), a series only one worker has
 * kept, decimals kept, the per-worker request counts and the
 * supervisor's lines added — and their /admin/breakers documents made
 * one. Every state gauge the gateway writes is in the table.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/gather.h"

static const char w1[] =
	"# HELP faultline_requests_total Chat completion requests answered.\n"
	"# TYPE faultline_requests_total counter\n"
	"faultline_requests_total{alias=\"chat\",status=\"200\"} 7\n"
	"faultline_requests_total{alias=\"chat\",status=\"502\"} 1\n"
	"# HELP faultline_requests_in_flight In flight.\n"
	"# TYPE faultline_requests_in_flight gauge\n"
	"faultline_requests_in_flight 2\n"
	"# HELP faultline_breaker_state State.\n"
	"# TYPE faultline_breaker_state gauge\n"
	"faultline_breaker_state{provider=\"p\",model=\"m\"} 1\n"
	"# HELP faultline_shared_state_up Up.\n"
	"# TYPE faultline_shared_state_up gauge\n"
	"faultline_shared_state_up 1\n"
	"# HELP faultline_upstream_latency_seconds Latency.\n"
	"# TYPE faultline_upstream_latency_seconds histogram\n"
	"faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"0.005\"} 3\n"
	"faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"+Inf\"} 8\n"
	"faultline_upstream_latency_seconds_sum{provider=\"p\"} 0.250000\n"
	"faultline_upstream_latency_seconds_count{provider=\"p\"} 8\n"
	"# HELP faultline_cost_usd_total Spend.\n"
	"# TYPE faultline_cost_usd_total counter\n"
	"faultline_cost_usd_total{provider=\"p\",tenant=\"a b\",feature=\"\"} 0.000001500\n";

static const char w2[] =
	"# HELP faultline_requests_total Chat completion requests answered.\n"
	"# TYPE faultline_requests_total counter\n"
	"faultline_requests_total{alias=\"chat\",status=\"200\"} 5\n"
	"faultline_requests_total{alias=\"chat\",status=\"502\"} 0\n"
	"# HELP faultline_requests_in_flight In flight.\n"
	"# TYPE faultline_requests_in_flight gauge\n"
	"faultline_requests_in_flight 1\n"
	"# HELP faultline_breaker_state State.\n"
	"# TYPE faultline_breaker_state gauge\n"
	"faultline_breaker_state{provider=\"p\",model=\"m\"} 2\n"
	"# HELP faultline_shared_state_up Up.\n"
	"# TYPE faultline_shared_state_up gauge\n"
	"faultline_shared_state_up 0\n"
	"# HELP faultline_upstream_latency_seconds Latency.\n"
	"# TYPE faultline_upstream_latency_seconds histogram\n"
	"faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"0.005\"} 1\n"
	"faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"+Inf\"} 5\n"
	"faultline_upstream_latency_seconds_sum{provider=\"p\"} 0.125000\n"
	"faultline_upstream_latency_seconds_count{provider=\"p\"} 5\n"
	"# HELP faultline_cost_usd_total Spend.\n"
	"# TYPE faultline_cost_usd_total counter\n"
	"faultline_cost_usd_total{provider=\"p\",tenant=\"a b\",feature=\"\"} 0.000002500\n"
	"faultline_cost_usd_total{provider=\"p\",tenant=\"c\",feature=\"\"} 0.5\n";

/* The line of key (name and labels) in text: its value as written, or NULL. */
static const char *value_of(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *p;

	for (p = text; (p = strstr(p, key)) != NULL; p++) {
		if ((p == text || p[-1] == '\n') && p[klen] == ' ') {
			size_t n = strcspn(p + klen + 1, "\n");

			snprintf(out, len, "%.*s", (int)n, p + klen + 1);
			return out;
		}
	}
	return NULL;
}

static void expect(const char *text, const char *key, const char *want)
{
	char v[64];

	cr_assert_not_null(value_of(text, key, v, sizeof(v)), "no %s in\n%s", key, text);
	cr_assert_str_eq(v, want, "%s: %s, expected %s", key, v, want);
}

Test(gather, metrics_are_summed_and_states_are_the_answering_workers, .timeout = 10)
{
	struct gather_part parts[2] = { { 2, w1 }, { 1, w2 } };
	const char *sup = "# TYPE faultline_workers gauge\nfaultline_workers 2\n";
	struct buf out = { 0 };

	cr_assert_eq(gather_metrics(&out, parts, 2, sup), 0);
	expect(out.data, "faultline_requests_total{alias=\"chat\",status=\"200\"}", "12");
	expect(out.data, "faultline_requests_total{alias=\"chat\",status=\"502\"}", "1");
	expect(out.data, "faultline_requests_in_flight", "3");
	expect(out.data, "faultline_breaker_state{provider=\"p\",model=\"m\"}", "1");
	expect(out.data, "faultline_shared_state_up", "0");
	expect(out.data, "faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"0.005\"}",
	       "4");
	expect(out.data, "faultline_upstream_latency_seconds_bucket{provider=\"p\",le=\"+Inf\"}",
	       "13");
	expect(out.data, "faultline_upstream_latency_seconds_sum{provider=\"p\"}", "0.375000");
	expect(out.data, "faultline_cost_usd_total{provider=\"p\",tenant=\"a b\",feature=\"\"}",
	       "0.000004000");
	/* Only worker 1 has it: as it wrote it. */
	expect(out.data, "faultline_cost_usd_total{provider=\"p\",tenant=\"c\",feature=\"\"}",
	       "0.5");
	expect(out.data, "faultline_worker_requests_total{worker=\"2\"}", "8");
	expect(out.data, "faultline_worker_requests_total{worker=\"1\"}", "5");
	expect(out.data, "faultline_workers", "2");
	/* Each family once, with its HELP and TYPE. */
	cr_assert_eq(strstr(strstr(out.data, "# TYPE faultline_requests_total counter") + 1,
			    "# TYPE faultline_requests_total counter"), NULL);
	cr_assert_not_null(strstr(out.data, "# HELP faultline_breaker_state State.\n"
					    "# TYPE faultline_breaker_state gauge\n"));
	buf_free(&out);
}

Test(gather, one_worker_alone_is_itself, .timeout = 10)
{
	struct gather_part parts[1] = { { 1, w1 } };
	struct buf out = { 0 };

	cr_assert_eq(gather_metrics(&out, parts, 1, NULL), 0);
	cr_assert_eq(strncmp(out.data, w1, strlen(w1)), 0, "got\n%s", out.data);
	expect(out.data, "faultline_worker_requests_total{worker=\"1\"}", "8");
	buf_free(&out);
}

Test(gather, every_state_gauge_the_gateway_writes_is_known, .timeout = 10)
{
	size_t i;

	for (i = 0; gather_state_gauges[i]; i++)
		cr_assert_eq(strncmp(gather_state_gauges[i], "faultline_", 10), 0);
	cr_assert_eq(i, 3);
}

static const char b1[] =
	"{\"breakers\":[{\"provider\":\"p\",\"model\":\"m\",\"state\":\"open\","
	"\"consecutive_failures\":3,\"probes_in_flight\":0,\"probes_succeeded\":0,"
	"\"totals\":{\"requests\":10,\"failures\":3,\"slow\":0,\"late\":0,\"rejected\":2},"
	"\"window\":{\"requests\":4,\"failures\":3,\"slow\":0,\"late\":0}},"
	"{\"provider\":\"q\",\"model\":\"m\",\"state\":\"closed\",\"consecutive_failures\":0,"
	"\"probes_in_flight\":1,\"probes_succeeded\":0,"
	"\"totals\":{\"requests\":1,\"failures\":0,\"slow\":0,\"late\":0,\"rejected\":0},"
	"\"window\":{\"requests\":1,\"failures\":0,\"slow\":0,\"late\":0}}]}";

static const char b2[] =
	"{\"breakers\":[{\"provider\":\"q\",\"model\":\"m\",\"state\":\"closed\","
	"\"consecutive_failures\":1,\"probes_in_flight\":2,\"probes_succeeded\":1,"
	"\"totals\":{\"requests\":5,\"failures\":1,\"slow\":1,\"late\":0,\"rejected\":0},"
	"\"window\":{\"requests\":5,\"failures\":1,\"slow\":1,\"late\":0}},"
	"{\"provider\":\"p\",\"model\":\"m\",\"state\":\"open\",\"consecutive_failures\":0,"
	"\"probes_in_flight\":0,\"probes_succeeded\":0,"
	"\"totals\":{\"requests\":6,\"failures\":0,\"slow\":0,\"late\":0,\"rejected\":4},"
	"\"window\":{\"requests\":0,\"failures\":0,\"slow\":0,\"late\":0}}]}";

static double num(const cJSON *o, const char *path1, const char *path2)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, path1);

	if (path2)
		v = cJSON_GetObjectItemCaseSensitive(v, path2);
	cr_assert(cJSON_IsNumber(v), "%s.%s is not a number", path1, path2 ? path2 : "");
	return v->valuedouble;
}

Test(gather, breakers_are_summed_by_target_with_each_workers_view, .timeout = 10)
{
	struct gather_part parts[3] = { { 1, b1 }, { 2, b2 }, { 3, "not json" } };
	struct buf out = { 0 };
	cJSON *doc;
	const cJSON *p;
	const cJSON *q;
	const cJSON *views;

	cr_assert_eq(gather_breakers(&out, parts, 3), 0);
	doc = cJSON_Parse(out.data);
	cr_assert_not_null(doc, "%s", out.data);
	cr_assert_eq(num(doc, "workers", NULL), 2, "the part that is no document is left out");
	p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "breakers"), 0);
	q = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "breakers"), 1);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "provider")->valuestring, "p");
	cr_assert_eq(num(p, "totals", "requests"), 16);
	cr_assert_eq(num(p, "totals", "rejected"), 6);
	cr_assert_eq(num(p, "window", "failures"), 3);
	cr_assert_eq(num(p, "consecutive_failures", NULL), 3, "the answering worker's");
	cr_assert_eq(num(q, "probes_in_flight", NULL), 3);
	cr_assert_eq(num(q, "totals", "slow"), 1);
	views = cJSON_GetObjectItemCaseSensitive(p, "workers");
	cr_assert_eq(cJSON_GetArraySize(views), 2);
	cr_assert_eq(num(cJSON_GetArrayItem(views, 1), "worker", NULL), 2);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(views, 1),
							  "state")->valuestring, "open");
	cJSON_Delete(doc);
	buf_free(&out);
	parts[0].text = "[]";
	cr_assert_eq(gather_breakers(&out, parts, 1), -EINVAL);
	buf_free(&out);
}
