/*
 * runner stats: hand-made result files with answers worked out by hand —
 * phase and window membership at the edges, nearest-rank percentiles,
 * fallback share, time to open and to the primary, duplicate work joined
 * on request ids, cost by tenant and feature, the streams' figures (TTFT,
 * stalls, truncations, error events, silent breaks, largest gap), RFC 4180
 * reading, every kind
 * of malformed file refused naming the file and line, and stats_combine's
 * mean, stddev, min and max over repeats.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/stats.h"
#include "common/cfg.h"
#include "tests/support/tmpdir.h"
#include "tests/support/jassert.h"

#define T0 1764620000000LL

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "stats"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(stats, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(stats_bad, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(stats_combine, .timeout = 10);

/* Writes len bytes (0: strlen) of text to DIR/name. */
static void write_file_len(const char *name, const char *text, size_t len)
{
	cr_assert_eq(tmpdir_write(dir, name, text, len ? len : strlen(text)), 0,
		     "cannot write %s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
	write_file_len(name, text, 0);
}

/* One requests.csv row: the fields stats reads (NULL: empty; streaming NULL: 0). */
struct rq {
	const char *id, *sched, *end, *lat, *status, *outcome, *provider, *tenant, *feature,
		*cost;
	const char *streaming, *ttft, *error, *gap;
	const char *cls, *tin, *tout;	/* NULL: interactive, 16, 16 */
};

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* Writes DIR/requests.csv with loadgen's 23 columns, in loadgen's order. */
static void write_requests(const struct rq *rows, size_t n)
{
	char path[400];
	FILE *fp;
	size_t i;

	snprintf(path, sizeof(path), "%s/requests.csv", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("id,stream_name,class,tenant,feature,streaming,sched_ms,start_ms,ttft_ms,end_ms,"
	      "latency_ms,service_ms,status,outcome,error,provider,attempts,hedged,retries,"
	      "tokens_in,tokens_out,max_gap_ms,cost_usd,degraded\n", fp);
	for (i = 0; i < n; i++) {
		const struct rq *r = &rows[i];

		fprintf(fp, "%s,default,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,\"%s\",%s,1,0,0,"
			"%s,%s,%s,%s,\n",
			or_empty(r->id), r->cls ? r->cls : "interactive", or_empty(r->tenant),
			or_empty(r->feature),
			r->streaming ? r->streaming : "0", r->sched, r->sched, or_empty(r->ttft),
			or_empty(r->end), or_empty(r->lat), or_empty(r->lat), or_empty(r->status),
			r->outcome, or_empty(r->error), or_empty(r->provider),
			r->tin ? r->tin : "16", r->tout ? r->tout : "16", or_empty(r->gap),
			or_empty(r->cost));
	}
	cr_assert_eq(fclose(fp), 0);
}

#define MOCK_HEADER "t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome\n"
#define MOCK_HEADER_KIND \
	"t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome,kind\n"

/* stats_compute over DIR, asserting success. */
static cJSON *compute(const struct stats_phase *ph, size_t nph, double duration_ms,
		      double window_ms)
{
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = nph, .duration_ms = duration_ms,
		.window_ms = window_ms, .primary = "primary", .t0_unix_ms = T0,
	};
	cJSON *out = NULL;
	int rc = stats_compute(&in, &out, err);

	cr_assert_eq(rc, 0, "stats_compute: %d: %s", rc, err);
	cr_assert_not_null(out);
	return out;
}

/* Asserts that object path has exactly the keys of keys (NULL-terminated), in order. */
static void expect_keys(const cJSON *root, const char *path, const char *const *keys)
{
	const cJSON *o = jget(root, path);
	const cJSON *m;
	size_t i = 0;

	cJSON_ArrayForEach(m, o) {
		cr_assert_not_null(keys[i], "%s: unexpected key \"%s\"", path, m->string);
		cr_assert_str_eq(m->string, keys[i], "%s: key %zu", path, i);
		i++;
	}
	cr_assert_null(keys[i], "%s: key \"%s\" missing", path, keys[i]);
}

static const struct stats_phase three[] = {
	{ "healthy", 0, 1000 },
	{ "outage", 1000, 2000 },
	{ "recovered", 2000, 3000 },
};

Test(stats, phase_by_sched_ms_from_inclusive_to_exclusive)
{
	static const struct rq rows[] = {
		{ .id = "f", .sched = "2999", .outcome = "ok", .status = "200", .lat = "5" },
		{ .id = "a", .sched = "0", .outcome = "ok", .status = "200", .lat = "5" },
		{ .id = "b", .sched = "999.999", .outcome = "timeout", .lat = "900" },
		{ .id = "c", .sched = "1000", .outcome = "ok", .status = "200", .lat = "5" },
		{ .id = "d", .sched = "1999.999", .outcome = "http_error", .status = "503" },
		{ .id = "e", .sched = "2000", .outcome = "refused" },
		{ .id = "g", .sched = "500", .outcome = "http_error", .status = "503" },
	};
	static const char *const healthy_status[] = { "200", "503", "none", NULL };
	static const char *const outage_status[] = { "200", "503", NULL };
	static const char *const outcome_keys[] = { "ok", "http_error", "timeout", "refused",
		"reset", "truncated", "stalled", "invalid", NULL };
	cJSON *s;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute(three, 3, 3000, 1000);
	expect_num(s, "phases.healthy.from_ms", 0);
	expect_num(s, "phases.healthy.to_ms", 1000);
	expect_num(s, "phases.healthy.requests", 3);
	expect_num(s, "phases.healthy.ok", 1);
	expect_num(s, "phases.healthy.answered_share", 1.0 / 3);
	expect_num(s, "phases.healthy.error_rate", 2.0 / 3);
	expect_keys(s, "phases.healthy.outcomes", outcome_keys);
	expect_num(s, "phases.healthy.outcomes.ok", 1);
	expect_num(s, "phases.healthy.outcomes.timeout", 1);
	expect_num(s, "phases.healthy.outcomes.http_error", 1);
	expect_num(s, "phases.healthy.outcomes.refused", 0);
	expect_keys(s, "phases.healthy.status", healthy_status);
	expect_num(s, "phases.healthy.status.none", 1);
	expect_num(s, "phases.healthy.throughput_per_s", 1);

	expect_num(s, "phases.outage.requests", 2);
	expect_num(s, "phases.outage.ok", 1);
	expect_keys(s, "phases.outage.status", outage_status);
	expect_num(s, "phases.outage.outcomes.http_error", 1);

	expect_num(s, "phases.recovered.requests", 2);
	expect_num(s, "phases.recovered.outcomes.refused", 1);
	expect_num(s, "phases.recovered.outcomes.ok", 1);

	/* the windows, 1000 ms here, are the same ranges */
	cr_assert_eq(cJSON_GetArraySize(jget(s, "windows")), 3);
	expect_num(s, "windows.0.requests", 3);
	expect_num(s, "windows.1.requests", 2);
	expect_num(s, "windows.2.requests", 2);
	expect_num(s, "windows.2.from_ms", 2000);
	expect_num(s, "windows.2.to_ms", 3000);

	expect_num(s, "totals.requests", 7);
	expect_num(s, "totals.ok", 3);
	expect_num(s, "totals.throughput_per_s", 1);
	expect_num(s, "duration_ms", 3000);
	expect_num(s, "window_ms", 1000);
	expect_num(s, "t0_unix_ms", (double)T0);
	cr_assert_str_eq(jget(s, "primary")->valuestring, "primary");
	cr_assert_str_eq(jget(s, "files.requests")->valuestring, "requests.csv");
	cr_assert_eq(cJSON_GetArraySize(jget(s, "files.mock")), 0);
	cr_assert(cJSON_IsNull(jget(s, "files.events")));
	cJSON_Delete(s);
}

Test(stats, latency_percentiles_are_exact_nearest_rank)
{
	static const struct stats_phase ph[] = {
		{ "p", 0, 10000 }, { "empty", 10000, 20000 }, { "one", 20000, 30000 },
	};
	struct rq rows[24];
	char sched[22][16], lat[22][16];
	int i;
	cJSON *s;

	/* ok latencies 1..20 in a scrambled order, a timeout, an ok without latency */
	for (i = 0; i < 20; i++) {
		snprintf(sched[i], sizeof(sched[i]), "%d", i * 100);
		snprintf(lat[i], sizeof(lat[i]), "%d", (i * 7) % 20 + 1);
		rows[i] = (struct rq){ .sched = sched[i], .lat = lat[i], .outcome = "ok",
				       .status = "200" };
	}
	rows[20] = (struct rq){ .sched = "5000", .lat = "1000", .outcome = "timeout" };
	rows[21] = (struct rq){ .sched = "6000", .outcome = "ok", .status = "200" };
	rows[22] = (struct rq){ .sched = "25000", .lat = "42.5", .outcome = "ok", .status = "200" };
	write_requests(rows, 23);
	s = compute(ph, 3, 30000, 0);

	expect_num(s, "phases.p.requests", 22);
	expect_num(s, "phases.p.ok", 21);
	expect_num(s, "phases.p.latency_ms.count", 20);
	expect_num(s, "phases.p.latency_ms.mean", 10.5);
	expect_num(s, "phases.p.latency_ms.p50", 10);	/* rank ceil(10) */
	expect_num(s, "phases.p.latency_ms.p95", 19);	/* rank ceil(19) */
	expect_num(s, "phases.p.latency_ms.p99", 20);	/* rank ceil(19.8) */
	expect_num(s, "phases.p.latency_ms.max", 20);
	expect_num(s, "phases.p.latency_all_ms.count", 21);
	expect_num(s, "phases.p.latency_all_ms.mean", 1210.0 / 21);
	expect_num(s, "phases.p.latency_all_ms.p50", 11);	/* rank ceil(10.5) */
	expect_num(s, "phases.p.latency_all_ms.p95", 20);	/* rank ceil(19.95) */
	expect_num(s, "phases.p.latency_all_ms.p99", 1000);	/* rank ceil(20.79) */
	expect_num(s, "phases.p.latency_all_ms.max", 1000);
	expect_num(s, "phases.p.throughput_per_s", 2.1);

	/* no requests: shares and latencies are null, counts 0 */
	expect_num(s, "phases.empty.requests", 0);
	expect_num(s, "phases.empty.answered_share", NAN);
	expect_num(s, "phases.empty.error_rate", NAN);
	expect_num(s, "phases.empty.fallback_share", NAN);
	expect_num(s, "phases.empty.fallback_answers", 0);
	expect_num(s, "phases.empty.throughput_per_s", 0);
	expect_num(s, "phases.empty.latency_ms.count", 0);
	expect_num(s, "phases.empty.latency_ms.mean", NAN);
	expect_num(s, "phases.empty.latency_ms.p50", NAN);
	expect_num(s, "phases.empty.latency_ms.p99", NAN);
	expect_num(s, "phases.empty.latency_ms.max", NAN);
	expect_num(s, "phases.empty.time_to_primary_ms", NAN);
	expect_num(s, "phases.empty.time_to_open_ms", NAN);
	expect_num(s, "phases.empty.opens", 0);
	expect_num(s, "phases.empty.cost_usd.total", NAN);

	/* one value is every percentile */
	expect_num(s, "phases.one.latency_ms.p50", 42.5);
	expect_num(s, "phases.one.latency_ms.p95", 42.5);
	expect_num(s, "phases.one.latency_ms.p99", 42.5);
	expect_num(s, "phases.one.latency_ms.mean", 42.5);

	/* window_ms 0 is 5000: six windows over 30 s */
	expect_num(s, "window_ms", 5000);
	cr_assert_eq(cJSON_GetArraySize(jget(s, "windows")), 6);
	expect_num(s, "windows.0.latency_ms.count", 20);	/* sched 0..1900 */
	expect_num(s, "windows.1.requests", 2);
	cJSON_Delete(s);
}

Test(stats, fallback_share_and_time_to_primary)
{
	static const struct rq rows[] = {
		/* outage [1000, 2000) */
		{ .id = "1", .sched = "1000", .end = "1100", .outcome = "ok", .provider = "secondary" },
		{ .id = "2", .sched = "1200", .end = "1500", .outcome = "ok" },	/* primary (empty) */
		{ .id = "3", .sched = "1050", .end = "1300", .outcome = "timeout", .provider = "primary" },
		{ .id = "4", .sched = "1100", .end = "1600", .outcome = "ok", .provider = "primary" },
		{ .id = "5", .sched = "1090", .outcome = "ok", .provider = "primary" },	/* no end_ms */
		/* recovered: only the secondary answers */
		{ .id = "6", .sched = "2500", .end = "2600", .outcome = "ok", .provider = "secondary" },
		/* healthy: direct-style rows with no provider column */
		{ .id = "7", .sched = "10", .end = "210", .outcome = "ok" },
	};
	cJSON *s;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute(three, 3, 3000, 1000);
	expect_num(s, "phases.outage.ok", 4);
	expect_num(s, "phases.outage.fallback_share", 0.25);
	expect_num(s, "phases.outage.fallback_answers", 1);	/* the count behind the share */
	/* first primary ok by sched_ms is id 4 (1100; id 5 has no end), not id 2 which ended first */
	expect_num(s, "phases.outage.time_to_primary_ms", 600);
	expect_num(s, "phases.recovered.fallback_share", 1);
	expect_num(s, "phases.recovered.time_to_primary_ms", NAN);
	expect_num(s, "phases.healthy.fallback_share", 0);
	expect_num(s, "phases.healthy.fallback_answers", 0);
	expect_num(s, "phases.healthy.time_to_primary_ms", 210);
	expect_num(s, "totals.fallback_share", 2.0 / 6);
	expect_num(s, "totals.fallback_answers", 2);
	expect_num(s, "totals.time_to_primary_ms", 210);	/* from t0 */
	cJSON_Delete(s);
}

Test(stats, breaker_events_time_to_open_and_transitions)
{
	char events[1024];
	cJSON *s;
	const cJSON *bt;

	write_requests(NULL, 0);
	snprintf(events, sizeof(events),
		 "{\"t_unix_ms\":%lld,\"provider\":\"secondary\",\"model\":\"mock-small\","
		 "\"from\":\"closed\",\"to\":\"open\",\"reason\":\"5 consecutive failures\"}\n"
		 "\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":\"mock-small\","
		 "\"from\":\"closed\",\"to\":\"open\",\"reason\":\"x\"}\r\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":null,"
		 "\"from\":\"half_open\",\"to\":\"open\",\"reason\":\"probe failed\"}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"open\","
		 "\"to\":\"half_open\",\"extra\":1}\n",
		 T0 + 500, T0 + 1250, T0 + 1400, T0 + 1300);
	write_file("events.jsonl", events);
	s = compute(three, 3, 3000, 1000);
	expect_num(s, "phases.healthy.opens", 1);
	expect_num(s, "phases.healthy.time_to_open_ms", 500);
	expect_num(s, "phases.outage.opens", 2);
	expect_num(s, "phases.outage.time_to_open_ms", 250);
	expect_num(s, "phases.recovered.opens", 0);
	expect_num(s, "phases.recovered.time_to_open_ms", NAN);
	expect_num(s, "totals.opens", 3);
	expect_num(s, "totals.time_to_open_ms", 500);
	expect_num(s, "windows.1.time_to_open_ms", 250);
	cr_assert_str_eq(jget(s, "files.events")->valuestring, "events.jsonl");

	bt = jget(s, "breaker_transitions");
	cr_assert_eq(cJSON_GetArraySize(bt), 4);
	expect_num(s, "breaker_transitions.0.t_ms", 500);
	expect_num(s, "breaker_transitions.1.t_ms", 1250);
	expect_num(s, "breaker_transitions.2.t_ms", 1300);	/* sorted by time */
	expect_num(s, "breaker_transitions.3.t_ms", 1400);
	cr_assert_str_eq(jget(s, "breaker_transitions.0.provider")->valuestring, "secondary");
	cr_assert_str_eq(jget(s, "breaker_transitions.0.reason")->valuestring,
			 "5 consecutive failures");
	cr_assert_str_eq(jget(s, "breaker_transitions.2.from")->valuestring, "open");
	cr_assert_str_eq(jget(s, "breaker_transitions.2.to")->valuestring, "half_open");
	cr_assert(cJSON_IsNull(jget(s, "breaker_transitions.2.model")));
	cr_assert(cJSON_IsNull(jget(s, "breaker_transitions.2.reason")));
	cr_assert(cJSON_IsNull(jget(s, "breaker_transitions.3.model")));
	cJSON_Delete(s);

	/* no events file: no transitions, nothing opens */
	tmpdir_empty(dir);
	write_requests(NULL, 0);
	s = compute(three, 3, 3000, 1000);
	cr_assert(cJSON_IsNull(jget(s, "files.events")));
	cr_assert_eq(cJSON_GetArraySize(jget(s, "breaker_transitions")), 0);
	expect_num(s, "phases.outage.opens", 0);
	expect_num(s, "phases.outage.time_to_open_ms", NAN);
	cJSON_Delete(s);
}

Test(stats, duplicate_work_joins_mock_rows_on_request_ids)
{
	static const struct stats_phase ph[] = { { "a", 0, 1000 }, { "b", 1000, 2000 } };
	static const struct rq rows[] = {
		{ .id = "r1", .sched = "10", .outcome = "ok", .provider = "secondary" },
		{ .id = "r2", .sched = "20", .outcome = "ok" },
		{ .id = "r3", .sched = "30", .outcome = "timeout" },
		{ .id = "r4", .sched = "40", .outcome = "ok", .provider = "primary" },
	};
	cJSON *s;

	write_requests(rows, 4);
	/* columns in mockprov's order; every kind of row */
	write_file("mock-primary.csv", MOCK_HEADER
		   "10.5,r1,0,status,503,,0.2,0,faulted\n"	/* failed over: counts, 0 tokens */
		   "20.5,r2,0,,200,200,200,16,completed\n"	/* the answer */
		   "30.5,r3,0,hang,0,,1000,5,client_aborted\n"	/* counts, 5 */
		   "39,r4,0,status,503,,0.1,,faulted\n"		/* same provider answered: not */
		   "40.5,r4,0,,200,200,200,16,completed\n"	/* the answer */
		   "50,rX,0,,200,200,200,7,completed\n"		/* unknown request: counts, 7 */
		   "60,,0,,200,200,200,3,completed\n");		/* no id: counts, 3 */
	write_file("mock-secondary.csv", MOCK_HEADER
		   "11,r1,0,,200,200,200,16,completed\n"	/* the answer */
		   "1500,r2,1,,200,100,150,4,client_aborted\n"	/* a hedge's loser: counts, 4 */
		   "1600,r4,0,,200,200,200,16,completed\n");	/* r4 came from primary: counts, 16 */
	write_file("mock-notes.txt", "not a log\n");
	s = compute(ph, 2, 2000, 1000);
	expect_num(s, "phases.a.duplicate_work.attempts", 4);
	expect_num(s, "phases.a.duplicate_work.tokens", 15);
	expect_num(s, "phases.b.duplicate_work.attempts", 2);	/* by the mock row's t_ms */
	expect_num(s, "phases.b.duplicate_work.tokens", 20);
	expect_num(s, "totals.duplicate_work.attempts", 6);
	expect_num(s, "totals.duplicate_work.tokens", 35);
	/* by request: r1 2 rows (1 discarded), r2 2 (1), r3 1 (1), r4 3 (1) */
	expect_num(s, "phases.a.upstream_requests", 8);
	expect_num(s, "phases.a.attempts_per_request", 2);
	expect_num(s, "phases.a.duplicate_share", 0.5);
	cr_assert(cJSON_IsNull(jget(s, "phases.b.duplicate_share")));
	cr_assert(cJSON_IsNull(jget(s, "phases.b.attempts_per_request")));
	cr_assert_eq(cJSON_GetArraySize(jget(s, "files.mock")), 2);
	cr_assert_str_eq(jget(s, "files.mock.0")->valuestring, "mock-primary.csv");
	cr_assert_str_eq(jget(s, "files.mock.1")->valuestring, "mock-secondary.csv");
	cJSON_Delete(s);
}

Test(stats, time_to_close_after_the_first_close_in_the_range)
{
	static const struct stats_phase ph[] = { { "fault", 1000, 3000 }, { "after", 3000, 6000 } };
	char events[1024];
	cJSON *s;

	write_requests(NULL, 0);
	snprintf(events, sizeof(events),
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"closed\",\"to\":\"open\"}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"open\",\"to\":\"half_open\"}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"half_open\",\"to\":\"closed\"}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"half_open\",\"to\":\"closed\"}\n",
		 T0 + 1200, T0 + 3100, T0 + 3900, T0 + 5000);
	write_file("events.jsonl", events);
	s = compute(ph, 2, 6000, 1000);
	expect_num(s, "phases.fault.time_to_open_ms", 200);
	expect_num(s, "phases.fault.time_to_close_ms", NAN);
	expect_num(s, "phases.after.time_to_open_ms", NAN);
	expect_num(s, "phases.after.time_to_close_ms", 900);	/* the first one */
	expect_num(s, "totals.time_to_close_ms", 3900);
	cJSON_Delete(s);
}

/*
 * A gateway of three workers writes each change of its breakers three
 * times: the line of the worker that made it and, from the two others
 * that followed it, a remote line naming that worker (peer_worker). The
 * figures count the change once; a remote line from another gateway (no
 * peer_worker) is a change of this one and counts.
 */
Test(stats, a_workers_gateway_change_counts_once)
{
	static const struct stats_phase ph[] = { { "fault", 1000, 3000 }, { "after", 3000, 6000 } };
	char events[2048];
	cJSON *s;

	write_requests(NULL, 0);
	snprintf(events, sizeof(events),
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"closed\","
		 "\"to\":\"open\",\"reason\":\"3 consecutive failures\",\"replica\":\"gateway.w2\","
		 "\"origin\":\"local\",\"worker\":2}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"closed\","
		 "\"to\":\"open\",\"reason\":\"gateway.w2: 3 consecutive failures\",\"replica\":"
		 "\"gateway.w1\",\"origin\":\"remote\",\"peer\":\"gateway.w2\",\"via\":\"hub\","
		 "\"worker\":1,\"peer_worker\":2}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"closed\","
		 "\"to\":\"open\",\"reason\":\"gateway.w2: 3 consecutive failures\",\"replica\":"
		 "\"gateway.w3\",\"origin\":\"remote\",\"peer\":\"gateway.w2\",\"via\":\"hub\","
		 "\"worker\":3,\"peer_worker\":2}\n"
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"open\","
		 "\"to\":\"closed\",\"reason\":\"r2: 1 probe succeeded\",\"replica\":\"gateway.w1\","
		 "\"origin\":\"remote\",\"peer\":\"r2\",\"via\":\"pubsub\",\"worker\":1}\n",
		 T0 + 1200, T0 + 1201, T0 + 1202, T0 + 3500);
	write_file("events.jsonl", events);
	s = compute(ph, 2, 6000, 1000);
	expect_num(s, "phases.fault.opens", 1);
	expect_num(s, "phases.fault.transitions", 1);
	expect_num(s, "phases.fault.time_to_open_ms", 200);
	expect_num(s, "phases.after.transitions", 1);
	expect_num(s, "totals.opens", 1);
	expect_num(s, "totals.transitions", 2);
	cr_assert_eq(cJSON_GetArraySize(jget(s, "breaker_transitions")), 2);
	cJSON_Delete(s);
}

Test(stats, exposed_requests_reached_the_primary_before_the_breaker_opened)
{
	static const struct stats_phase ph[] = { { "before", 0, 1000 }, { "fault", 1000, 3000 } };
	static const struct rq rows[] = {
		{ .id = "r1", .sched = "500", .outcome = "ok", .provider = "primary" },
		{ .id = "r2", .sched = "1010", .outcome = "ok", .provider = "secondary" },
		{ .id = "r3", .sched = "1100", .outcome = "timeout" },
		{ .id = "r4", .sched = "1200", .outcome = "ok", .provider = "secondary" },
		{ .id = "r5", .sched = "1500", .outcome = "ok", .provider = "secondary" },
	};
	char events[256];
	cJSON *s;

	write_requests(rows, 5);
	write_file("mock-primary.csv", MOCK_HEADER_KIND
		   "500,r1,0,,200,200,200,16,completed,chat\n"
		   "1010,r2,0,hang,0,,1000,0,client_aborted,chat\n"	/* exposed, answered */
		   "1100,r3,0,hang,0,,1000,0,client_aborted,chat\n"	/* exposed, failed */
		   "1150,r3,0,hang,0,,1000,0,client_aborted,chat\n"	/* the same request again */
		   "1180,,0,hang,0,,1000,0,client_aborted,models\n"	/* a check: not exposed */
		   "1190,health-check-primary-7,0,hang,0,,1000,0,client_aborted,chat\n"
		   "1300,r4,0,hang,0,,1000,0,client_aborted,chat\n"	/* after the open */
		   "1400,,0,,200,,5,0,completed,models\n");
	write_file("mock-secondary.csv", MOCK_HEADER_KIND
		   "1011,r2,0,,200,200,200,16,completed,chat\n"	/* not the primary's */
		   "1200,r4,0,,200,200,200,16,completed,chat\n"
		   "1500,r5,0,,200,200,200,16,completed,chat\n"
		   "1600,,0,,200,,5,0,completed,models\n");
	snprintf(events, sizeof(events),
		 "{\"t_unix_ms\":%lld,\"provider\":\"primary\",\"from\":\"closed\",\"to\":\"open\"}\n",
		 T0 + 1250);
	write_file("events.jsonl", events);
	s = compute(ph, 2, 3000, 1000);
	expect_num(s, "phases.fault.time_to_open_ms", 250);
	expect_num(s, "phases.fault.exposed.requests", 2);
	expect_num(s, "phases.fault.exposed.failed", 1);
	/* no open in the range: the whole range */
	expect_num(s, "phases.before.exposed.requests", 1);
	expect_num(s, "phases.before.exposed.failed", 0);
	/* checks: 3 at the primary (models, models, a chat check), 1 at the secondary */
	expect_num(s, "phases.fault.checks.requests", 4);
	expect_num(s, "phases.fault.checks.per_s", 2);
	expect_num(s, "phases.fault.checks.by_provider.primary", 3);
	expect_num(s, "phases.fault.checks.by_provider.secondary", 1);
	expect_num(s, "phases.fault.check_rate_per_s", 1.5);
	expect_num(s, "phases.before.checks.requests", 0);
	expect_num(s, "phases.before.checks.by_provider.primary", 0);
	expect_num(s, "phases.before.check_rate_per_s", 0);
	/* checks are neither upstream requests nor duplicate work: r2's hang
	 * row, r3's two, r4's hang row and nothing else; upstream: those and
	 * the secondary's three */
	expect_num(s, "phases.fault.upstream_requests", 7);
	expect_num(s, "phases.fault.duplicate_work.attempts", 4);
	expect_num(s, "totals.duplicate_work.attempts", 4);
	expect_num(s, "phases.fault.classes.interactive.exposed.requests", 2);
	cJSON_Delete(s);
}

Test(stats, a_mock_log_without_the_kind_column_is_all_chat)
{
	static const struct stats_phase ph[] = { { "all", 0, 2000 } };
	static const struct rq rows[] = {
		{ .id = "r1", .sched = "10", .outcome = "ok", .provider = "primary" },
	};
	cJSON *s;

	write_requests(rows, 1);
	write_file("mock-primary.csv", MOCK_HEADER
		   "10,r1,0,,200,200,200,16,completed\n"
		   "20,health-check-primary-1,0,,200,200,200,1,completed\n"
		   "30,,0,,200,200,200,1,completed\n");
	s = compute(ph, 1, 2000, 1000);
	expect_num(s, "phases.all.checks.requests", 1);	/* by its id alone */
	expect_num(s, "phases.all.duplicate_work.attempts", 1);	/* the row with no id */
	expect_num(s, "phases.all.exposed.requests", 1);
	cJSON_Delete(s);
}

Test(stats_bad, an_unknown_kind_names_the_column)
{
	static const struct stats_phase ph[] = { { "all", 0, 2000 } };
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = 1, .duration_ms = 2000,
		.primary = "primary", .t0_unix_ms = T0,
	};
	cJSON *out = NULL;

	write_requests(NULL, 0);
	write_file("mock-primary.csv", MOCK_HEADER_KIND "10,,0,,200,,1,0,completed,embeddings\n");
	cr_assert_eq(stats_compute(&in, &out, err), -EINVAL);
	cr_assert(strstr(err, "mock-primary.csv:2") && strstr(err, "column kind") &&
		  strstr(err, "chat, models or nothing"), "%s", err);
}

Test(stats, duplicate_work_counts_mock_rows_past_the_last_window_in_totals)
{
	static const struct stats_phase ph[] = { { "all", 0, 1000 } };
	static const struct rq rows[] = {
		{ .id = "r1", .sched = "990", .outcome = "ok", .provider = "secondary" },
	};
	cJSON *s;

	write_requests(rows, 1);
	write_file("mock-primary.csv", MOCK_HEADER "995,r1,0,hang,0,,10,2,client_aborted\n");
	write_file("mock-secondary.csv", MOCK_HEADER "1005,r1,0,,200,1,1,16,completed\n"
		   "1010,r1,0,,200,1,1,9,client_aborted\n");
	s = compute(ph, 1, 1000, 500);
	expect_num(s, "phases.all.duplicate_work.attempts", 1);
	expect_num(s, "totals.duplicate_work.attempts", 2);
	expect_num(s, "totals.duplicate_work.tokens", 11);
	cJSON_Delete(s);
}

Test(stats, cost_by_tenant_and_feature)
{
	static const struct stats_phase ph[] = { { "a", 0, 1000 }, { "b", 1000, 2000 } };
	static const struct rq rows[] = {
		{ .sched = "40", .outcome = "ok", .tenant = "", .feature = "", .cost = "0.25" },
		{ .sched = "10", .outcome = "ok", .tenant = "acme", .feature = "search", .cost = "0.01" },
		{ .sched = "20", .outcome = "ok", .tenant = "acme", .feature = "chat", .cost = "0.02" },
		{ .sched = "30", .outcome = "http_error", .tenant = "globex", .feature = "search",
		  .cost = "0.5" },
		{ .sched = "50", .outcome = "ok", .tenant = "acme", .feature = "search" },
		{ .sched = "60", .outcome = "ok", .tenant = "initech", .feature = "x" },
		{ .sched = "1500", .outcome = "ok", .tenant = "acme", .feature = "search" },
	};
	static const char *const tenants[] = { "acme", "globex", "", NULL };
	static const char *const features[] = { "search", "chat", "", NULL };
	static const char *const none[] = { NULL };
	cJSON *s;
	const cJSON *t;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute(ph, 2, 2000, 1000);
	expect_num(s, "phases.a.cost_usd.total", 0.78);
	expect_keys(s, "phases.a.cost_usd.by_tenant", tenants);
	expect_num(s, "phases.a.cost_usd.by_tenant.acme", 0.03);
	expect_num(s, "phases.a.cost_usd.by_tenant.globex", 0.5);
	t = cJSON_GetObjectItemCaseSensitive(jget(s, "phases.a.cost_usd.by_tenant"), "");
	cr_assert(cJSON_IsNumber(t));
	cr_assert_float_eq(t->valuedouble, 0.25, 1e-12);
	expect_keys(s, "phases.a.cost_usd.by_feature", features);
	expect_num(s, "phases.a.cost_usd.by_feature.search", 0.51);
	expect_num(s, "phases.a.cost_usd.by_feature.chat", 0.02);
	/* no cost at all: null total, empty maps */
	expect_num(s, "phases.b.cost_usd.total", NAN);
	expect_keys(s, "phases.b.cost_usd.by_tenant", none);
	expect_keys(s, "phases.b.cost_usd.by_feature", none);
	expect_num(s, "totals.cost_usd.total", 0.78);
	cJSON_Delete(s);
}

static cJSON *compute_in(struct stats_input *in)
{
	cJSON *out = NULL;
	int rc;

	in->run_dir = dir;
	in->primary = "primary";
	in->t0_unix_ms = T0;
	rc = stats_compute(in, &out, err);
	cr_assert_eq(rc, 0, "stats_compute: %d: %s", rc, err);
	return out;
}

Test(stats, rows_without_a_cost_are_priced_from_their_tokens)
{
	static const struct stats_phase ph[] = { { "a", 0, 1000 } };
	static const struct stats_price prices[] = {
		{ "primary", 0.15, 0.6 }, { "secondary", 1, 2 },
	};
	static const struct rq rows[] = {
		/* no provider column: the caller's provider (primary) */
		{ .sched = "10", .outcome = "ok", .tenant = "t1", .feature = "f1", .tin = "100",
		  .tout = "50" },
		/* a failure with no tokens costs 0 */
		{ .sched = "20", .outcome = "http_error", .tenant = "t2", .feature = "f1", .tin = "",
		  .tout = "" },
		/* its provider's price */
		{ .sched = "30", .outcome = "ok", .provider = "secondary", .tenant = "t1",
		  .feature = "f2", .tin = "1000", .tout = "1000" },
		/* a cost given is kept */
		{ .sched = "40", .outcome = "ok", .provider = "secondary", .tenant = "t1",
		  .feature = "f2", .cost = "0.5" },
		/* no price for it: no cost */
		{ .sched = "50", .outcome = "ok", .provider = "third", .tenant = "t3",
		  .feature = "f3" },
	};
	struct stats_input in = { .phases = ph, .nphases = 1, .duration_ms = 1000,
				  .window_ms = 1000, .prices = prices, .nprices = 2,
				  .provider = "primary" };
	static const char *const tenants[] = { "t1", "t2", NULL };
	double first = (100 * 0.15 + 50 * 0.6) / 1000;
	cJSON *s;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute_in(&in);
	expect_num(s, "phases.a.cost_usd.total", first + 0 + 3 + 0.5);
	expect_num(s, "phases.a.cost_usd.by_tenant.t1", first + 3 + 0.5);
	expect_num(s, "phases.a.cost_usd.by_tenant.t2", 0);
	expect_keys(s, "phases.a.cost_usd.by_tenant", tenants);
	expect_num(s, "phases.a.cost_usd.by_feature.f2", 3.5);
	expect_num(s, "phases.a.cost_per_answered", (first + 3.5) / 4);
	cJSON_Delete(s);

	/* A gateway setup (no caller's provider): a row with no provider gets no price. */
	in.provider = NULL;
	s = compute_in(&in);
	expect_num(s, "phases.a.cost_usd.total", 3.5);
	expect_num(s, "phases.a.cost_per_answered", 3.5 / 4);
	cJSON_Delete(s);
	/* No prices at all: as before, only the costs given. */
	in.nprices = 0;
	s = compute_in(&in);
	expect_num(s, "phases.a.cost_usd.total", 0.5);
	cJSON_Delete(s);
}

Test(stats, classes_extra_requests_and_answered_windows)
{
	static const struct stats_phase ph[] = { { "p", 500, 3500 } };
	static const double windows[] = { 1000, 3000 };
	static const struct rq rows[] = {
		{ .id = "1", .sched = "100", .outcome = "ok" },		/* before the phase */
		{ .id = "2", .sched = "600", .outcome = "timeout" },	/* [0,1000): not whole */
		{ .id = "3", .sched = "1000", .outcome = "ok", .cls = "batch" },
		{ .id = "4", .sched = "1200", .outcome = "ok" },
		{ .id = "5", .sched = "1900", .outcome = "timeout" },
		{ .id = "6", .sched = "2000", .outcome = "ok", .cls = "batch" },
		{ .id = "7", .sched = "2500", .outcome = "ok" },
		/* [3000, 4000) is not wholly inside the phase */
		{ .id = "8", .sched = "3100", .outcome = "timeout", .cls = "batch" },
	};
	struct stats_input in = { .phases = ph, .nphases = 1, .duration_ms = 4000,
				  .window_ms = 1000, .windows = windows, .nwindows = 2 };
	cJSON *s;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	/* 2 upstream attempts for 3, one for 4 and 7, none for 5, one without a request. */
	write_file("mock-primary.csv", MOCK_HEADER
		   "1000,3,0,,0,,1,5,client_aborted\n"
		   "1001,3,0,,200,40,41,16,completed\n"
		   "1201,4,0,,200,40,41,16,completed\n"
		   "2501,7,0,,200,40,41,16,completed\n"
		   "2600,x,0,,200,40,41,16,completed\n");
	s = compute_in(&in);
	expect_num(s, "phases.p.requests", 7);
	expect_num(s, "phases.p.upstream_requests", 4);
	expect_num(s, "phases.p.extra_requests", 4.0 / 7 - 1);
	expect_num(s, "phases.p.answered_windows.1000.windows", 2);
	expect_num(s, "phases.p.answered_windows.1000.worst_share", 2.0 / 3);
	expect_num(s, "phases.p.answered_windows.1000.worst_from_ms", 1000);
	expect_num(s, "phases.p.answered_windows.3000.windows", 0);
	expect_num(s, "phases.p.answered_windows.3000.worst_share", NAN);
	expect_num(s, "phases.p.answered_windows.3000.worst_from_ms", NAN);
	/* the classes alone */
	expect_num(s, "phases.p.classes.interactive.requests", 4);
	expect_num(s, "phases.p.classes.interactive.ok", 2);
	expect_num(s, "phases.p.classes.interactive.upstream_requests", 2);
	expect_num(s, "phases.p.classes.interactive.answered_windows.1000.worst_share", 0.5);
	expect_num(s, "phases.p.classes.batch.requests", 3);
	expect_num(s, "phases.p.classes.batch.upstream_requests", 2);
	expect_num(s, "phases.p.classes.batch.extra_requests", 2.0 / 3 - 1);
	expect_num(s, "phases.p.classes.batch.answered_windows.1000.windows", 2);
	expect_num(s, "phases.p.classes.batch.answered_windows.1000.worst_share", 1);
	expect_num(s, "phases.p.classes.batch.answered_windows.1000.worst_from_ms", 1000);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(jget(s, "phases.p.classes.batch"),
							"classes"), "one level of classes");
	/* the abandoned attempt of 3 is batch's duplicate; the one of no request, neither's */
	expect_num(s, "phases.p.duplicate_work.attempts", 2);
	expect_num(s, "phases.p.classes.batch.duplicate_work.attempts", 1);
	expect_num(s, "phases.p.classes.interactive.duplicate_work.attempts", 0);
	/* windows and totals have classes too, not answered windows */
	expect_num(s, "windows.1.classes.batch.requests", 1);
	expect_num(s, "totals.classes.interactive.requests", 5);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(jget(s, "windows.1"), "answered_windows"));
	cJSON_Delete(s);
}

Test(stats, windows_cover_the_duration)
{
	static const struct rq rows[] = {
		{ .sched = "0", .outcome = "ok" },
		{ .sched = "4999.999", .outcome = "ok" },
		{ .sched = "5000", .outcome = "timeout" },
		{ .sched = "11999", .outcome = "ok" },
		{ .sched = "12000", .outcome = "ok" },	/* past the duration: totals only */
	};
	cJSON *s;

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute(NULL, 0, 12000, 0);
	cr_assert_eq(cJSON_GetArraySize(jget(s, "phases")), 0);
	cr_assert_eq(cJSON_GetArraySize(jget(s, "windows")), 3);
	expect_num(s, "windows.0.from_ms", 0);
	expect_num(s, "windows.0.to_ms", 5000);
	expect_num(s, "windows.0.requests", 2);
	expect_num(s, "windows.0.throughput_per_s", 0.4);
	expect_num(s, "windows.1.requests", 1);
	expect_num(s, "windows.1.error_rate", 1);
	expect_num(s, "windows.2.from_ms", 10000);
	expect_num(s, "windows.2.to_ms", 12000);	/* cut at the duration */
	expect_num(s, "windows.2.requests", 1);
	expect_num(s, "windows.2.throughput_per_s", 0.5);
	expect_num(s, "totals.requests", 5);
	expect_num(s, "totals.throughput_per_s", 4.0 / 12);
	cJSON_Delete(s);

	/* a window length that divides the duration leaves no empty window */
	s = compute(NULL, 0, 12000, 4000);
	cr_assert_eq(cJSON_GetArraySize(jget(s, "windows")), 3);
	expect_num(s, "windows.2.from_ms", 8000);
	expect_num(s, "windows.2.to_ms", 12000);
	cJSON_Delete(s);
}

/*
 * Stream figures over the rows with streaming 1: TTFT percentiles over the
 * ok ones, stalls and truncations by outcome, error events by the error's
 * words, silent breaks (stalled or truncated with no error event), the
 * largest gap; plain requests count in none of them.
 */
Test(stats, stream_figures_over_streaming_rows)
{
	static const struct rq rows[] = {
		/* healthy: three ok streams, one that timed out, a plain answer */
		{ .id = "s1", .sched = "10", .outcome = "ok", .streaming = "1", .ttft = "100",
		  .gap = "20" },
		{ .id = "s2", .sched = "20", .outcome = "ok", .streaming = "1", .ttft = "300",
		  .gap = "25" },
		{ .id = "s3", .sched = "30", .outcome = "ok", .streaming = "1", .ttft = "200",
		  .gap = "30" },
		{ .id = "s4", .sched = "40", .outcome = "timeout", .streaming = "1",
		  .error = "no first token within 1000 ms" },
		{ .id = "p1", .sched = "50", .outcome = "ok", .ttft = "5", .gap = "9999" },
		/* outage: every way a stream breaks */
		{ .id = "s5", .sched = "1000", .outcome = "stalled", .streaming = "1", .ttft = "90",
		  .error = "stream silent for 500 ms after 3 tokens", .gap = "500" },
		{ .id = "s6", .sched = "1100", .outcome = "stalled", .streaming = "1", .ttft = "95",
		  .error = "error event: upstream silent", .gap = "1000" },
		{ .id = "s7", .sched = "1200", .outcome = "truncated", .streaming = "1",
		  .error = "stream ended without [DONE] after 2 tokens", .gap = "40" },
		{ .id = "s8", .sched = "1300", .outcome = "truncated", .streaming = "1",
		  .error = "error event: boom, twice", .gap = "45" },
		{ .id = "s9", .sched = "1400", .outcome = "http_error", .status = "503",
		  .streaming = "1", .error = "HTTP 503: busy" },
		{ .id = "p2", .sched = "1500", .outcome = "truncated", .error = "short body" },
		/* recovered: plain requests only */
		{ .id = "p3", .sched = "2500", .outcome = "ok" },
	};
	static const char *const ttft_keys[] = { "count", "mean", "p50", "p95", "p99", "max",
						 NULL };
	cJSON *s;
	cJSON *c;
	cJSON *runs[2];

	write_requests(rows, sizeof(rows) / sizeof(rows[0]));
	s = compute(three, 3, 3000, 1000);
	expect_num(s, "phases.healthy.streams", 4);
	expect_keys(s, "phases.healthy.ttft_ms", ttft_keys);
	expect_num(s, "phases.healthy.ttft_ms.count", 3);
	expect_num(s, "phases.healthy.ttft_ms.mean", 200);
	expect_num(s, "phases.healthy.ttft_ms.p50", 200);	/* rank ceil(1.5) */
	expect_num(s, "phases.healthy.ttft_ms.p95", 300);	/* rank ceil(2.85) */
	expect_num(s, "phases.healthy.ttft_ms.p99", 300);
	expect_num(s, "phases.healthy.stalls", 0);
	expect_num(s, "phases.healthy.truncations", 0);
	expect_num(s, "phases.healthy.error_events", 0);
	expect_num(s, "phases.healthy.silent_breaks", 0);
	expect_num(s, "phases.healthy.max_gap_ms", 30);	/* not the plain row's */

	expect_num(s, "phases.outage.streams", 5);
	expect_num(s, "phases.outage.ttft_ms.count", 0);	/* no ok stream */
	expect_num(s, "phases.outage.ttft_ms.p50", NAN);
	expect_num(s, "phases.outage.ttft_ms.p95", NAN);
	expect_num(s, "phases.outage.stalls", 2);
	expect_num(s, "phases.outage.truncations", 2);	/* not the plain p2 */
	expect_num(s, "phases.outage.error_events", 2);
	expect_num(s, "phases.outage.silent_breaks", 2);	/* s5 and s7 */
	expect_num(s, "phases.outage.max_gap_ms", 1000);

	expect_num(s, "phases.recovered.streams", 0);
	expect_num(s, "phases.recovered.ttft_ms.count", 0);
	expect_num(s, "phases.recovered.stalls", 0);
	expect_num(s, "phases.recovered.silent_breaks", 0);
	expect_num(s, "phases.recovered.max_gap_ms", NAN);

	expect_num(s, "windows.1.silent_breaks", 2);	/* the same ranges */
	expect_num(s, "windows.0.ttft_ms.p95", 300);
	expect_num(s, "totals.streams", 9);
	expect_num(s, "totals.ttft_ms.count", 3);
	expect_num(s, "totals.error_events", 2);
	expect_num(s, "totals.max_gap_ms", 1000);

	/* combined like every other figure; a null stays out */
	runs[0] = runs[1] = s;
	c = stats_combine(runs, 2);
	cr_assert_not_null(c);
	expect_num(c, "phases.outage.silent_breaks.mean", 2);
	expect_num(c, "phases.outage.silent_breaks.max", 2);
	expect_num(c, "phases.healthy.ttft_ms.p95.max", 300);
	cr_assert(cJSON_IsNull(jget(c, "phases.outage.ttft_ms.p95")));
	expect_num(c, "phases.outage.max_gap_ms.max", 1000);
	cr_assert(cJSON_IsNull(jget(c, "phases.recovered.max_gap_ms")));
	expect_num(c, "phases.recovered.streams.mean", 0);
	cJSON_Delete(c);
	cJSON_Delete(s);
}

Test(stats, csv_by_header_name_with_rfc4180_quoting)
{
	cJSON *s;
	const cJSON *t;

	/* another column order, an extra column, CRLF, quotes, a newline in a
	 * field and no newline at the end */
	write_file("requests.csv",
		   "outcome,extra,cost_usd,feature,tenant,provider,status,latency_ms,end_ms,sched_ms,id\r\n"
		   "ok,x,0.5,\"f,1\",\"a,\"\"b\"\"\",secondary,200,12.5,112.5,100,\"r\"\"1\"\r\n"
		   "http_error,\"multi\r\nline\",,,,,503,3,203,200,r2\r\n"
		   "ok,,,,,\"\",200,7,307,300,r3");
	write_file("mock-secondary.csv",
		   "outcome,tokens_out,request_id,t_ms\n"
		   "completed,16,\"r\"\"1\",100.5\n"
		   "client_aborted,2,r3,300.5\n");
	s = compute(NULL, 0, 1000, 1000);
	expect_num(s, "totals.requests", 3);
	expect_num(s, "totals.ok", 2);
	expect_num(s, "totals.fallback_share", 0.5);
	expect_num(s, "totals.latency_ms.max", 12.5);
	expect_num(s, "totals.status.503", 1);
	expect_num(s, "totals.time_to_primary_ms", 307);
	/* r"1 joined: its answer is not duplicate work; r3 was answered by the primary */
	expect_num(s, "totals.duplicate_work.attempts", 1);
	expect_num(s, "totals.duplicate_work.tokens", 2);
	t = cJSON_GetObjectItemCaseSensitive(jget(s, "totals.cost_usd.by_tenant"), "a,\"b\"");
	cr_assert(cJSON_IsNumber(t), "tenant a,\"b\" not read back");
	t = cJSON_GetObjectItemCaseSensitive(jget(s, "totals.cost_usd.by_feature"), "f,1");
	cr_assert(cJSON_IsNumber(t), "feature f,1 not read back");
	/* no streaming column: no streams */
	expect_num(s, "totals.streams", 0);
	expect_num(s, "totals.stalls", 0);
	expect_num(s, "totals.ttft_ms.count", 0);
	expect_num(s, "totals.max_gap_ms", NAN);
	cJSON_Delete(s);
}

Test(stats, same_files_same_summary_and_combined_with_itself)
{
	static const struct rq rows[] = {
		{ .id = "1", .sched = "100", .end = "300", .lat = "200", .outcome = "ok",
		  .status = "200", .tenant = "t", .cost = "0.1" },
		{ .id = "2", .sched = "1100", .end = "1500", .lat = "400", .outcome = "ok",
		  .provider = "secondary", .status = "200" },
		{ .id = "3", .sched = "1200", .lat = "1000", .outcome = "timeout" },
	};
	cJSON *a;
	cJSON *b;
	cJSON *runs[2];
	cJSON *c;
	char *pa;
	char *pb;

	write_requests(rows, 3);
	write_file("mock-primary.csv", MOCK_HEADER "1100.5,2,0,hang,0,,900,0,client_aborted\n");
	a = compute(three, 3, 3000, 1000);
	b = compute(three, 3, 3000, 1000);
	pa = cJSON_PrintUnformatted(a);
	pb = cJSON_PrintUnformatted(b);
	cr_assert_str_eq(pa, pb);
	free(pa);
	free(pb);

	runs[0] = a;
	runs[1] = b;
	c = stats_combine(runs, 2);
	cr_assert_not_null(c);
	expect_num(c, "runs", 2);
	expect_num(c, "phases.outage.requests.mean", 2);
	expect_num(c, "phases.outage.requests.stddev", 0);
	expect_num(c, "phases.outage.requests.n", 2);
	expect_num(c, "phases.outage.fallback_share.mean", 1);
	expect_num(c, "phases.outage.from_ms", 1000);
	expect_num(c, "phases.outage.duplicate_work.attempts.mean", 1);
	expect_num(c, "phases.healthy.latency_ms.p50.mean", 200);
	expect_num(c, "phases.healthy.cost_usd.by_tenant.t.mean", 0.1);
	cr_assert(cJSON_IsNull(jget(c, "phases.outage.time_to_primary_ms")));
	expect_num(c, "windows.1.latency_all_ms.max.max", 1000);
	expect_num(c, "totals.requests.mean", 3);
	cr_assert_eq(cJSON_GetArraySize(jget(c, "breaker_transitions")), 2);
	cJSON_Delete(c);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* ---- malformed input ---- */

struct bad_case {
	const char *what;		/* the case, for messages */
	const char *requests;		/* requests.csv; NULL: none written */
	size_t requests_len;		/* 0: strlen */
	const char *mock;		/* mock-primary.csv, or NULL */
	const char *events;		/* events.jsonl, or NULL */
	const char *extra;		/* another (empty) file to create, or NULL */
	int rc;
	const char *where;		/* the start of err after "DIR/" */
	const char *says;		/* a part of err */
};

#define REQ_HEADER "id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature,cost_usd\n"
#define REQ_OK "r1,10,20,10,200,ok,,,,\n"
#define REQ_HEADER_S "id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature," \
	"cost_usd,streaming,ttft_ms,error,max_gap_ms\n"

static const struct bad_case bad_cases[] = {
	{ "missing column", "id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature\n",
	  0, NULL, NULL, NULL, -EINVAL, "requests.csv:1: ", "no column \"cost_usd\"" },
	{ "column twice", "id,sched_ms,end_ms,latency_ms,status,outcome,provider,tenant,feature,"
	  "cost_usd,id\n", 0, NULL, NULL, NULL, -EINVAL, "requests.csv:1: ",
	  "column \"id\" appears twice" },
	{ "empty file", "", 0, NULL, NULL, NULL, -EINVAL, "requests.csv: ", "empty file" },
	{ "bad number", REQ_HEADER REQ_OK "r2,12x,20,10,200,ok,,,,\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:3: ", "column sched_ms: expected a number, got \"12x\"" },
	{ "no sched_ms", REQ_HEADER "r2,,20,10,200,ok,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column sched_ms: expected a number (it is required)" },
	{ "nan latency", REQ_HEADER "r2,1,20,nan,200,ok,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column latency_ms" },
	{ "hex cost", REQ_HEADER "r2,1,20,1,200,ok,,,,0x10\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column cost_usd" },
	{ "status too big", REQ_HEADER "r2,1,20,1,2000,ok,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column status" },
	{ "status not whole", REQ_HEADER "r2,1,20,1,200.5,ok,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column status" },
	{ "unknown outcome", REQ_HEADER REQ_OK "r2,1,20,1,200,fine,,,,\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:3: ", "column outcome: expected ok, http_error" },
	{ "no outcome", REQ_HEADER "r2,1,20,1,200,,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "column outcome" },
	{ "short row", REQ_HEADER REQ_OK "r2,1,20,1,200,ok,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:3: ", "expected 10 fields as in the header, got 9" },
	{ "long row", REQ_HEADER "r2,1,20,1,200,ok,,,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "got 11" },
	{ "empty line", REQ_HEADER REQ_OK "\n" REQ_OK, 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:3: ", "an empty line" },
	{ "unterminated quote", REQ_HEADER REQ_OK "r2,1,20,1,200,ok,\"abc,,,\n", 0, NULL, NULL,
	  NULL, -EINVAL, "requests.csv:3: ", "a quoted field is not closed" },
	{ "quote inside", REQ_HEADER "r2,1,20,1,200,ok,ab\"c,,,\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:2: ", "a quote inside unquoted field 7" },
	{ "text after quote", REQ_HEADER "r2,1,20,1,200,ok,\"ab\"c,,,\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:2: ", "text after the closing quote of field 7" },
	{ "stray CR", REQ_HEADER "r2,1,20,1,200,ok,a\rb,,,\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:2: ", "a carriage return not followed by a newline" },
	{ "NUL byte", REQ_HEADER "r2,1,20,1,200,ok,a\0b,,,\n", sizeof(REQ_HEADER) + 23, NULL,
	  NULL, NULL, -EINVAL, "requests.csv:2: ", "a NUL byte" },
	{ "line after a quoted newline", REQ_HEADER "r1,1,2,1,200,ok,\"two\nlines\",,,\n"
	  "r2,x,2,1,200,ok,,,,\n", 0, NULL, NULL, NULL, -EINVAL, "requests.csv:4: ",
	  "column sched_ms" },
	{ "id twice", REQ_HEADER REQ_OK "r2,1,20,1,200,ok,,,,\n" REQ_OK, 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:4: ", "request id \"r1\" already on line 2" },
	{ "streaming without ttft_ms", "id,sched_ms,end_ms,latency_ms,status,outcome,provider,"
	  "tenant,feature,cost_usd,streaming,error,max_gap_ms\n", 0, NULL, NULL, NULL, -EINVAL,
	  "requests.csv:1: ", "no column \"ttft_ms\" in the header (it goes with \"streaming\")" },
	{ "streaming not 0 or 1", REQ_HEADER_S "r1,10,20,10,200,ok,,,,,1,5,,3\n"
	  "r2,10,20,10,200,ok,,,,,yes,5,,3\n", 0, NULL, NULL, NULL, -EINVAL, "requests.csv:3: ",
	  "column streaming: expected 0 or 1, got \"yes\"" },
	{ "streaming empty", REQ_HEADER_S "r1,10,20,10,200,ok,,,,,,5,,3\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:2: ", "column streaming: expected 0 or 1" },
	{ "bad ttft_ms", REQ_HEADER_S "r1,10,20,10,200,ok,,,,,1,5ms,,3\n", 0, NULL, NULL, NULL,
	  -EINVAL, "requests.csv:2: ", "column ttft_ms: expected a number or nothing" },
	{ "bad max_gap_ms", REQ_HEADER_S "r1,10,20,10,200,ok,,,,,1,5,,inf\n", 0, NULL, NULL,
	  NULL, -EINVAL, "requests.csv:2: ", "column max_gap_ms" },
	{ "no requests.csv", NULL, 0, NULL, NULL, NULL, -ENOENT, "requests.csv: ",
	  "no such file" },
	{ "unfinished requests", REQ_HEADER, 0, NULL, NULL, "requests.csv.tmp", -EINVAL,
	  "requests.csv.tmp: ", "an unfinished result file" },
	{ "unfinished mock", REQ_HEADER, 0, NULL, NULL, "mock-primary.csv.tmp", -EINVAL,
	  "mock-primary.csv.tmp: ", "an unfinished result file" },
	{ "mock without t_ms", REQ_HEADER, 0, "request_id,tokens_out,outcome\n", NULL, NULL,
	  -EINVAL, "mock-primary.csv:1: ", "no column \"t_ms\"" },
	{ "mock outcome", REQ_HEADER, 0, MOCK_HEADER "1,r1,0,,200,1,1,16,completed\n"
	  "2,r2,0,,200,1,1,16,done\n", NULL, NULL, -EINVAL, "mock-primary.csv:3: ",
	  "column outcome: expected completed, client_aborted or faulted" },
	{ "mock tokens", REQ_HEADER, 0, MOCK_HEADER "1,r1,0,,200,1,1,-1,completed\n", NULL,
	  NULL, -EINVAL, "mock-primary.csv:2: ", "column tokens_out" },
	{ "mock no t_ms", REQ_HEADER, 0, MOCK_HEADER ",r1,0,,200,1,1,1,completed\n", NULL,
	  NULL, -EINVAL, "mock-primary.csv:2: ", "column t_ms" },
	{ "events bad JSON", REQ_HEADER, 0, NULL,
	  "{\"t_unix_ms\":1,\"provider\":\"p\",\"from\":\"closed\",\"to\":\"open\"}\n{\"t_unix_ms\":\n",
	  NULL, -EINVAL, "events.jsonl:2: ", "not valid JSON" },
	{ "events not an object", REQ_HEADER, 0, NULL, "[1]\n", NULL, -EINVAL,
	  "events.jsonl:1: ", "expected a JSON object" },
	{ "events no to", REQ_HEADER, 0, NULL,
	  "{\"t_unix_ms\":1,\"provider\":\"p\",\"from\":\"closed\"}\n", NULL, -EINVAL,
	  "events.jsonl:1: ", "\"to\": expected a string" },
	{ "events time", REQ_HEADER, 0, NULL,
	  "\n{\"t_unix_ms\":\"1\",\"provider\":\"p\",\"from\":\"a\",\"to\":\"b\"}\n", NULL,
	  -EINVAL, "events.jsonl:2: ", "\"t_unix_ms\": expected a number" },
	{ "events model", REQ_HEADER, 0, NULL,
	  "{\"t_unix_ms\":1,\"provider\":\"p\",\"model\":5,\"from\":\"a\",\"to\":\"b\"}\n", NULL,
	  -EINVAL, "events.jsonl:1: ", "\"model\": expected a string or null" },
	{ "events trailing text", REQ_HEADER, 0, NULL,
	  "{\"t_unix_ms\":1,\"provider\":\"p\",\"from\":\"a\",\"to\":\"b\"} x\n", NULL,
	  -EINVAL, "events.jsonl:1: ", "not valid JSON" },
};

Test(stats_bad, malformed_files_name_the_file_and_line)
{
	static const struct stats_phase ph[] = { { "all", 0, 1000 } };
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct stats_input in = {
			.run_dir = dir, .phases = ph, .nphases = 1, .duration_ms = 1000,
			.primary = "primary", .t0_unix_ms = 0,
		};
		cJSON *out = (cJSON *)&in;	/* must be set to NULL */
		char where[400];
		int rc;

		tmpdir_empty(dir);
		if (c->requests)
			write_file_len("requests.csv", c->requests, c->requests_len);
		if (c->mock)
			write_file("mock-primary.csv", c->mock);
		if (c->events)
			write_file("events.jsonl", c->events);
		if (c->extra)
			write_file(c->extra, "");
		err[0] = '\0';
		rc = stats_compute(&in, &out, err);
		cr_assert_eq(rc, c->rc, "%s: rc %d, err \"%s\"", c->what, rc, err);
		cr_assert_null(out, "%s: out not NULL", c->what);
		snprintf(where, sizeof(where), "%s/%s", dir, c->where);
		cr_assert_eq(strncmp(err, where, strlen(where)), 0, "%s: err \"%s\" does not start with \"%s\"",
			     c->what, err, where);
		cr_assert_not_null(strstr(err, c->says), "%s: err \"%s\" does not say \"%s\"",
				   c->what, err, c->says);
	}
}

Test(stats_bad, bad_input_is_refused)
{
	static const struct stats_phase twice[] = { { "a", 0, 10 }, { "a", 10, 20 } };
	static const struct stats_phase backwards[] = { { "a", 10, 10 } };
	static const struct stats_phase unnamed[] = { { NULL, 0, 10 } };
	static const struct {
		const char *what;
		const struct stats_phase *phases;
		size_t nphases;
		double duration_ms, window_ms;
		const char *primary;
		const char *says;
	} cases[] = {
		{ "zero duration", NULL, 0, 0, 0, "primary", "duration_ms" },
		{ "NaN duration", NULL, 0, NAN, 0, "primary", "duration_ms" },
		{ "NaN window", NULL, 0, 1000, NAN, "primary", "duration_ms" },
		{ "too many windows", NULL, 0, 1e9, 1, "primary", "windows" },
		{ "no primary", NULL, 0, 1000, 0, NULL, "primary" },
		{ "phase twice", twice, 2, 1000, 0, "primary", "phase \"a\" given twice" },
		{ "empty phase", backwards, 1, 1000, 0, "primary", "phase 0" },
		{ "unnamed phase", unnamed, 1, 1000, 0, "primary", "phase 0" },
	};
	size_t i;

	write_requests(NULL, 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stats_input in = {
			.run_dir = dir, .phases = cases[i].phases, .nphases = cases[i].nphases,
			.duration_ms = cases[i].duration_ms, .window_ms = cases[i].window_ms,
			.primary = cases[i].primary,
		};
		cJSON *out = NULL;
		int rc = stats_compute(&in, &out, err);

		cr_assert_eq(rc, -EINVAL, "%s: rc %d", cases[i].what, rc);
		cr_assert_null(out);
		cr_assert_eq(strncmp(err, "stats: ", 7), 0, "%s: %s", cases[i].what, err);
		cr_assert_not_null(strstr(err, cases[i].says), "%s: %s", cases[i].what, err);
	}
	{
		struct stats_input in = { .run_dir = "/nonexistent/fl-stats", .duration_ms = 1000,
					  .primary = "primary" };
		cJSON *out = NULL;

		cr_assert_eq(stats_compute(&in, &out, err), -ENOENT);
		cr_assert_not_null(strstr(err, "/nonexistent/fl-stats: "), "%s", err);
	}
}

/* ---- stats_combine ---- */

static cJSON *parse(const char *json)
{
	cJSON *v = cJSON_Parse(json);

	cr_assert_not_null(v, "bad test JSON: %s", json);
	return v;
}

Test(stats_combine, mean_stddev_min_max_over_runs)
{
	cJSON *runs[3];
	char *before[3];
	cJSON *c;
	int i;
	static const char *const status_keys[] = { "200", "503", "none", NULL };

	runs[0] = parse("{\"primary\":\"primary\",\"t0_unix_ms\":1,\"duration_ms\":3000,"
			"\"window_ms\":1000,\"phases\":{\"outage\":{\"from_ms\":1000,\"to_ms\":2000,"
			"\"requests\":10,\"error_rate\":0.1,\"time_to_open_ms\":null,"
			"\"time_to_primary_ms\":null,\"status\":{\"200\":9,\"503\":1},"
			"\"latency_ms\":{\"p50\":100}}},"
			"\"windows\":[{\"from_ms\":0,\"to_ms\":1000,\"ok\":1},"
			"{\"from_ms\":1000,\"to_ms\":2000,\"ok\":2}],"
			"\"totals\":{\"requests\":10},"
			"\"breaker_transitions\":[{\"t_ms\":1,\"to\":\"open\"}]}");
	runs[1] = parse("{\"primary\":\"primary\",\"t0_unix_ms\":2,\"duration_ms\":3000,"
			"\"window_ms\":1000,\"phases\":{\"outage\":{\"from_ms\":1000,\"to_ms\":2000,"
			"\"requests\":20,\"error_rate\":0.3,\"time_to_open_ms\":250,"
			"\"time_to_primary_ms\":null,\"status\":{\"200\":20},"
			"\"latency_ms\":{\"p50\":200}}},"
			"\"windows\":[{\"from_ms\":0,\"to_ms\":1000,\"ok\":5}],"
			"\"totals\":{\"requests\":20},\"breaker_transitions\":[]}");
	runs[2] = parse("{\"primary\":\"primary\",\"t0_unix_ms\":3,\"duration_ms\":3000,"
			"\"window_ms\":1000,\"phases\":{\"outage\":{\"from_ms\":1000,\"to_ms\":2000,"
			"\"requests\":30,\"error_rate\":0.2,\"time_to_open_ms\":350,"
			"\"time_to_primary_ms\":null,\"status\":{\"200\":25,\"none\":5},"
			"\"latency_ms\":{\"p50\":300}}},"
			"\"windows\":[{\"from_ms\":0,\"to_ms\":1000,\"ok\":3},"
			"{\"from_ms\":1000,\"to_ms\":2000,\"ok\":4}],"
			"\"totals\":{\"requests\":30},\"breaker_transitions\":[{\"t_ms\":2},{\"t_ms\":3}]}");
	for (i = 0; i < 3; i++)
		before[i] = cJSON_PrintUnformatted(runs[i]);
	c = stats_combine(runs, 3);
	cr_assert_not_null(c);

	expect_num(c, "runs", 3);
	cr_assert_str_eq(jget(c, "primary")->valuestring, "primary");
	expect_num(c, "duration_ms", 3000);
	expect_num(c, "window_ms", 1000);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(c, "t0_unix_ms"));
	expect_num(c, "phases.outage.from_ms", 1000);	/* copied, not combined */
	expect_num(c, "phases.outage.to_ms", 2000);
	expect_num(c, "phases.outage.requests.mean", 20);
	expect_num(c, "phases.outage.requests.stddev", 10);
	expect_num(c, "phases.outage.requests.min", 10);
	expect_num(c, "phases.outage.requests.max", 30);
	expect_num(c, "phases.outage.requests.n", 3);
	expect_num(c, "phases.outage.error_rate.mean", 0.2);
	expect_num(c, "phases.outage.error_rate.stddev", 0.1);
	/* a null is left out */
	expect_num(c, "phases.outage.time_to_open_ms.n", 2);
	expect_num(c, "phases.outage.time_to_open_ms.mean", 300);
	expect_num(c, "phases.outage.time_to_open_ms.stddev", sqrt(5000));
	expect_num(c, "phases.outage.time_to_open_ms.min", 250);
	expect_num(c, "phases.outage.time_to_open_ms.max", 350);
	cr_assert(cJSON_IsNull(jget(c, "phases.outage.time_to_primary_ms")));
	/* an absent map key is 0 */
	expect_keys(c, "phases.outage.status", status_keys);
	expect_num(c, "phases.outage.status.503.mean", 1.0 / 3);
	expect_num(c, "phases.outage.status.503.min", 0);
	expect_num(c, "phases.outage.status.503.n", 3);
	expect_num(c, "phases.outage.status.none.mean", 5.0 / 3);
	expect_num(c, "phases.outage.latency_ms.p50.mean", 200);
	/* windows by index, as many as the shortest run has */
	cr_assert_eq(cJSON_GetArraySize(jget(c, "windows")), 1);
	expect_num(c, "windows.0.ok.mean", 3);
	expect_num(c, "windows.0.ok.stddev", 2);
	expect_num(c, "windows.0.to_ms", 1000);
	expect_num(c, "totals.requests.mean", 20);
	/* transitions: one list per run */
	cr_assert_eq(cJSON_GetArraySize(jget(c, "breaker_transitions")), 3);
	cr_assert_eq(cJSON_GetArraySize(jget(c, "breaker_transitions.0")), 1);
	cr_assert_eq(cJSON_GetArraySize(jget(c, "breaker_transitions.1")), 0);
	cr_assert_eq(cJSON_GetArraySize(jget(c, "breaker_transitions.2")), 2);
	cJSON_Delete(c);

	/* the runs are left as they were */
	for (i = 0; i < 3; i++) {
		char *after = cJSON_PrintUnformatted(runs[i]);

		cr_assert_str_eq(after, before[i]);
		free(after);
		free(before[i]);
	}

	/* one run: stddev 0 */
	c = stats_combine(runs, 1);
	cr_assert_not_null(c);
	expect_num(c, "runs", 1);
	expect_num(c, "phases.outage.requests.mean", 10);
	expect_num(c, "phases.outage.requests.stddev", 0);
	expect_num(c, "phases.outage.requests.n", 1);
	cr_assert(cJSON_IsNull(jget(c, "phases.outage.time_to_open_ms")));
	cJSON_Delete(c);
	for (i = 0; i < 3; i++)
		cJSON_Delete(runs[i]);
}

Test(stats_combine, folds_the_detection_figures_nested_maps_included)
{
	cJSON *runs[2];
	cJSON *c;

	runs[0] = parse("{\"primary\":\"primary\",\"duration_ms\":3000,\"window_ms\":1000,"
			"\"phases\":{\"fault\":{\"from_ms\":0,\"to_ms\":3000,"
			"\"time_to_close_ms\":null,\"exposed\":{\"requests\":4,\"failed\":1},"
			"\"checks\":{\"requests\":6,\"per_s\":2,\"by_provider\":{\"primary\":3,"
			"\"secondary\":3}},\"check_rate_per_s\":1}},\"windows\":[],\"totals\":{},"
			"\"breaker_transitions\":[]}");
	runs[1] = parse("{\"primary\":\"primary\",\"duration_ms\":3000,\"window_ms\":1000,"
			"\"phases\":{\"fault\":{\"from_ms\":0,\"to_ms\":3000,"
			"\"time_to_close_ms\":700,\"exposed\":{\"requests\":2,\"failed\":3},"
			"\"checks\":{\"requests\":4,\"per_s\":1,\"by_provider\":{\"primary\":1}},"
			"\"check_rate_per_s\":0.5}},\"windows\":[],\"totals\":{},"
			"\"breaker_transitions\":[]}");
	c = stats_combine(runs, 2);
	cr_assert_not_null(c);
	expect_num(c, "phases.fault.time_to_close_ms.mean", 700);
	expect_num(c, "phases.fault.time_to_close_ms.n", 1);
	expect_num(c, "phases.fault.exposed.requests.mean", 3);
	expect_num(c, "phases.fault.exposed.failed.max", 3);
	expect_num(c, "phases.fault.checks.per_s.mean", 1.5);
	expect_num(c, "phases.fault.checks.by_provider.primary.mean", 2);
	expect_num(c, "phases.fault.checks.by_provider.secondary.mean", 1.5);	/* absent: 0 */
	expect_num(c, "phases.fault.check_rate_per_s.min", 0.5);
	cJSON_Delete(c);
	cJSON_Delete(runs[0]);
	cJSON_Delete(runs[1]);
}

Test(stats_combine, refuses_no_runs_and_non_objects)
{
	cJSON *runs[2];

	cr_assert_null(stats_combine(NULL, 0));
	runs[0] = parse("{\"phases\":{}}");
	runs[1] = parse("[1]");
	cr_assert_null(stats_combine(runs, 2));
	cJSON_Delete(runs[0]);
	cJSON_Delete(runs[1]);
}
