/*
 * runner attrib: attribution without cooperation, from hand-written
 * requests.csv and mock-NAME.csv with the answers worked out by hand —
 * the provider of each answer by the id join and by the timing join when
 * the gateway forwards no request id, the rows no request can take
 * counted, the primary's stop_ms with and without a gap, and refused
 * attempts added to the upstream figures with their source, and what
 * report.md says of them.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/figures.h"
#include "runner/report.h"
#include "runner/rundata.h"
#include "runner/scenario.h"
#include "runner/stats.h"
#include "tests/support/tmpdir.h"
#include "tests/support/jassert.h"

#define T0 1764620000000LL

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "attrib"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(attrib, .init = setup, .fini = teardown, .timeout = 10);

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir,
		     name);
}

/*
 * One requests.csv row: what the attribution reads (NULL: empty). sched
 * is also the start unless start is given; latency is end − sched.
 */
struct rq {
	const char *id, *sched, *start, *end, *outcome, *provider, *attempts, *retries, *degraded;
};

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* Writes DIR/requests.csv with loadgen's columns, in loadgen's order. */
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
		double sched = atof(r->sched);
		char lat[32] = "";

		if (r->end)
			snprintf(lat, sizeof(lat), "%g", atof(r->end) - sched);
		fprintf(fp, "%s,default,interactive,,,0,%s,%s,,%s,%s,%s,%s,%s,,%s,%s,0,%s,16,16,,,%s\n",
			or_empty(r->id), r->sched, r->start ? r->start : r->sched, or_empty(r->end),
			lat, lat, strcmp(r->outcome, "ok") == 0 ? "200" : "",
			r->outcome, or_empty(r->provider), or_empty(r->attempts),
			or_empty(r->retries), or_empty(r->degraded));
	}
	cr_assert_eq(fclose(fp), 0);
}

#define MOCK_HEADER \
	"t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome,kind\n"

/* stats_compute over DIR with the caller's attempts source and stop gap. */
static cJSON *compute_with(const struct stats_phase *ph, size_t nph, double duration_ms,
			   enum stats_attempts attempts, double gap_ms)
{
	struct stats_input in = {
		.run_dir = dir, .phases = ph, .nphases = nph, .duration_ms = duration_ms,
		.window_ms = duration_ms, .primary = "primary", .t0_unix_ms = T0,
		.attempts = attempts, .stop_gap_ms = gap_ms,
	};
	cJSON *out = NULL;
	int rc = stats_compute(&in, &out, err);

	cr_assert_eq(rc, 0, "stats_compute: %d: %s", rc, err);
	cr_assert_not_null(out);
	return out;
}

static const struct stats_phase whole[] = { { "all", 0, 5000 } };

/*
 * No provider column (another gateway's answers): the id join finds who
 * answered — r1 failed over to the secondary, r2 the primary's.
 */
Test(attrib, the_id_join_names_the_provider_that_answered)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "400", .outcome = "ok" },
		{ .id = "g-2", .sched = "10", .end = "300", .outcome = "ok" },
	};
	cJSON *s;

	write_requests(rows, 2);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,g-1,0,status,503,,1,0,faulted,chat\n"
		   "10.5,g-2,0,,200,200,250,16,completed,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER
		   "2,g-1,0,,200,200,300,16,completed,chat\n");
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.all.fallback_share", 0.5);
	expect_str(s, "phases.all.fallback_source", "mock_log");
	expect_num(s, "phases.all.attribution.mock_log", 2);
	expect_num(s, "phases.all.attribution.provider_header", 0);
	expect_num(s, "phases.all.attribution.none", 0);
	expect_num(s, "phases.all.join.by_id", 3);
	expect_num(s, "phases.all.join.by_timing", 0);
	expect_num(s, "phases.all.join.unjoined", 0);
	expect_num(s, "phases.all.upstream_requests", 3);
	expect_num(s, "phases.all.attempts_per_request", 1.5);
	expect_num(s, "phases.all.duplicate_share", 1.0 / 3);	/* the 503 */
	expect_num(s, "phases.all.time_to_primary_ms", 300);
	cJSON_Delete(s);
}

/*
 * A provider column is authoritative: r1 says secondary though a 200
 * with its id is in the primary's log (the answer the gateway dropped).
 */
Test(attrib, the_provider_column_wins_over_the_mock_logs)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "400", .outcome = "ok", .provider = "secondary" },
		{ .id = "g-2", .sched = "10", .end = "300", .outcome = "ok" },
	};
	cJSON *s;

	write_requests(rows, 2);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,g-1,0,,200,200,100,16,completed,chat\n"
		   "10.5,g-2,0,,200,200,250,16,completed,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER "200,g-1,0,,200,200,100,16,completed,chat\n");
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.all.fallback_share", 0.5);
	expect_str(s, "phases.all.fallback_source", "provider_header+mock_log");
	expect_num(s, "phases.all.attribution.provider_header", 1);
	expect_num(s, "phases.all.attribution.mock_log", 1);
	cJSON_Delete(s);
}

/*
 * No request id reaches the providers (a gateway that does not forward
 * it): q1 is answered by the primary at once; q2's first attempt hangs at
 * the primary until the gateway's 1000 ms timeout and the secondary
 * answers; q3 hangs at the primary, gets a 503 from the secondary and
 * times out at the client. The timing join puts every row with its
 * request: q1's answer ends first, q2's answer is the secondary's row
 * ending just before q2 ends, and the hung rows go to the requests whose
 * rows they do not overlap.
 */
Test(attrib, the_timing_join_when_no_id_is_forwarded)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "300", .outcome = "ok" },
		{ .id = "g-2", .sched = "10", .end = "1250", .outcome = "ok" },
		{ .id = "g-3", .sched = "20", .end = "2000", .outcome = "timeout" },
	};
	cJSON *s;

	write_requests(rows, 3);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,,0,,200,200,250,16,completed,chat\n"
		   "10.5,,0,hang,0,,1000,0,faulted,chat\n"
		   "20.5,,0,hang,0,,1000,0,faulted,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER
		   "1011,,0,,200,200,200,16,completed,chat\n"
		   "1021,,0,status,503,,1,0,faulted,chat\n");
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.all.join.by_id", 0);
	expect_num(s, "phases.all.join.by_timing", 5);
	expect_num(s, "phases.all.join.unjoined", 0);
	expect_num(s, "phases.all.fallback_share", 0.5);
	expect_str(s, "phases.all.fallback_source", "mock_log");
	expect_num(s, "phases.all.attribution.mock_log", 2);
	expect_num(s, "phases.all.upstream_requests", 5);
	expect_num(s, "phases.all.attempts_per_request", 5.0 / 3);
	/* q2's hung attempt and q3's two were discarded; the answers were not */
	expect_num(s, "phases.all.duplicate_share", 3.0 / 5);
	expect_num(s, "phases.all.duplicate_work.attempts", 3);
	/* the primary's rows before the breaker: q1's answer, q2's and q3's hangs */
	expect_num(s, "phases.all.exposed.requests", 3);
	expect_num(s, "phases.all.exposed.failed", 1);
	cJSON_Delete(s);
}

/*
 * Answers by timing take the row inside the request that arrived first:
 * g-1 (0–100 ms) could take either answer, g-2 (98–101 ms) only the
 * secondary's, which arrived after g-2 was sent. Taking the row ending
 * last would give g-1 the secondary's and leave g-2 with none.
 */
Test(attrib, the_timing_join_answers_every_request_it_can)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "100", .outcome = "ok" },
		{ .id = "g-2", .sched = "98", .end = "101", .outcome = "ok" },
	};
	cJSON *s;

	write_requests(rows, 2);
	write_file("mock-primary.csv", MOCK_HEADER "1,,0,,200,20,96,16,completed,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER "98.5,,0,,200,0.2,0.5,16,completed,chat\n");
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.all.attribution.mock_log", 2);
	expect_num(s, "phases.all.attribution.none", 0);
	expect_num(s, "phases.all.fallback_share", 0.5);
	expect_num(s, "phases.all.time_to_primary_ms", 100);	/* g-1's, the first by sched */
	expect_num(s, "phases.all.duplicate_share", 0);
	cJSON_Delete(s);
}

/*
 * Rows no request can take: one arriving when no request was open, one
 * carrying an id of loadgen's form that requests.csv lacks (a request
 * unfinished when loadgen stopped: unrecorded, never joined by timing),
 * one with a foreign id joined by timing; health checks count nowhere.
 */
Test(attrib, rows_no_request_can_take_are_counted)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "300", .outcome = "ok" },
		{ .id = "g-2", .sched = "100", .end = "400", .outcome = "ok" },
	};
	static const struct stats_phase ph[] = { { "a", 0, 1000 }, { "b", 1000, 5000 } };
	cJSON *s;

	write_requests(rows, 2);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,g-1,0,,200,200,250,16,completed,chat\n"
		   "100.5,uuid-7f3a,0,,200,200,250,16,completed,chat\n"
		   "150,g-9,0,,200,200,100,16,completed,chat\n"
		   "200,health-check-primary-1,0,,200,1,1,0,completed,chat\n"
		   "300,,0,,200,1,1,0,completed,models\n"
		   "2000,,0,,200,200,250,16,completed,chat\n");
	s = compute_with(ph, 2, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.a.join.by_id", 1);
	expect_num(s, "phases.a.join.by_timing", 1);
	expect_num(s, "phases.a.join.unrecorded", 1);
	expect_num(s, "phases.a.join.unjoined", 0);
	expect_num(s, "phases.b.join.unjoined", 1);
	expect_num(s, "totals.join.by_id", 1);
	expect_num(s, "totals.join.by_timing", 1);
	expect_num(s, "totals.join.unrecorded", 1);
	expect_num(s, "totals.join.unjoined", 1);
	expect_num(s, "phases.a.attribution.mock_log", 2);
	expect_num(s, "phases.a.upstream_requests", 2);
	cJSON_Delete(s);
}

/*
 * stop_ms with a 100 ms gap: healthy traffic every 50 ms never stops;
 * in the outage the primary gets three requests and then only a probe
 * 600 ms later: it stopped 100 ms in; in a phase where it gets nothing it
 * stopped at once; a phase whose rows run on into the next never stopped;
 * the silence after a phase's last row counts to the next row after it.
 */
Test(attrib, stop_ms_with_and_without_a_gap)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "10", .outcome = "ok" },
	};
	static const struct stats_phase ph[] = {
		{ "healthy", 0, 1000 }, { "outage", 1000, 2000 }, { "down", 2000, 3000 },
		{ "back", 3000, 4000 }, { "last", 4000, 5000 },
	};
	struct { char text[8192]; size_t len; } b = { .len = 0 };
	cJSON *s;
	int t;

	write_requests(rows, 1);
	b.len += (size_t)snprintf(b.text + b.len, sizeof(b.text) - b.len, MOCK_HEADER);
	for (t = 0; t < 1000; t += 50)		/* healthy: every 50 ms */
		b.len += (size_t)snprintf(b.text + b.len, sizeof(b.text) - b.len,
					  "%d.5,x%d,0,,200,1,1,1,completed,chat\n", t, t);
	b.len += (size_t)snprintf(b.text + b.len, sizeof(b.text) - b.len,
				  "1000.5,,0,hang,0,,5,0,faulted,chat\n"
				  "1050,,0,hang,0,,5,0,faulted,chat\n"
				  "1100.5,,0,hang,0,,5,0,faulted,chat\n"
				  "1150,health-check-primary-1,0,,200,1,1,0,completed,chat\n"
				  "1700.5,,0,hang,0,,5,0,faulted,chat\n");
	for (t = 3050; t < 4000; t += 50)	/* back, and on into last */
		b.len += (size_t)snprintf(b.text + b.len, sizeof(b.text) - b.len,
					  "%d,,0,,200,1,1,1,completed,chat\n", t);
	b.len += (size_t)snprintf(b.text + b.len, sizeof(b.text) - b.len,
				  "4020,,0,,200,1,1,1,completed,chat\n"
				  "4040,,0,,200,1,1,1,completed,chat\n");
	write_file("mock-primary.csv", b.text);
	s = compute_with(ph, 5, 5000, STATS_ATTEMPTS_NONE, 100);
	expect_num(s, "phases.healthy.stop_ms", NAN);
	expect_num(s, "phases.healthy.primary_requests", 20);
	expect_num(s, "phases.outage.stop_ms", 100.5);	/* the last before the gap: 1100.5 */
	expect_num(s, "phases.outage.primary_requests", 4);	/* the check is none */
	expect_num(s, "phases.down.stop_ms", 0);
	expect_num(s, "phases.down.primary_requests", 0);
	expect_num(s, "phases.back.stop_ms", NAN);	/* 3950 → 4020 is under the gap */
	expect_num(s, "phases.back.primary_requests", 19);
	expect_num(s, "phases.last.stop_ms", 40);	/* 4040, then silence to the end */
	expect_num(s, "phases.last.primary_requests", 2);
	/* over the run: the first gap is the outage's */
	expect_num(s, "totals.stop_ms", 1100.5);
	/* the same with the default gap (1000 ms): only the silence at the end */
	cJSON_Delete(s);
	s = compute_with(ph, 5, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.outage.stop_ms", 700.5);	/* 1700.5, then nothing until 3050 */
	expect_num(s, "phases.down.stop_ms", 0);	/* 2000 → 3050 */
	expect_num(s, "phases.last.stop_ms", NAN);	/* 4040 → 5000 is under 1000 */
	cJSON_Delete(s);
}

/*
 * A refused connection leaves no row: a direct setup's refused attempts
 * are loadgen's sends (1 + retries) less the rows logged; a gateway's are
 * its attempts column less them; with neither known, the rows alone.
 */
Test(attrib, refused_attempts_join_the_upstream_figures)
{
	static const struct rq rows[] = {
		/* refused outright; refused twice, then answered; answered at once */
		{ .id = "g-1", .sched = "0", .end = "1", .outcome = "refused", .retries = "0",
		  .attempts = "3" },
		{ .id = "g-2", .sched = "10", .end = "300", .outcome = "ok", .retries = "2",
		  .attempts = "1" },
		{ .id = "g-3", .sched = "20", .end = "300", .outcome = "ok", .retries = "0",
		  .attempts = "1" },
	};
	cJSON *s;

	write_requests(rows, 3);
	write_file("mock-primary.csv", MOCK_HEADER
		   "100,g-2,0,,200,200,150,16,completed,chat\n"
		   "20.5,g-3,0,,200,200,250,16,completed,chat\n");
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_LOADGEN, 0);
	expect_num(s, "phases.all.upstream_logged", 2);
	expect_num(s, "phases.all.upstream_refused", 3);	/* g-1's 1, g-2's 2 */
	expect_num(s, "phases.all.upstream_requests", 5);
	expect_num(s, "phases.all.attempts_per_request", 5.0 / 3);
	expect_num(s, "phases.all.extra_requests", 5.0 / 3 - 1);
	expect_num(s, "phases.all.duplicate_share", 0);		/* over the rows logged */
	expect_str(s, "phases.all.upstream_source", "mock_log+loadgen_refused");
	cJSON_Delete(s);
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_COLUMN, 0);
	expect_num(s, "phases.all.upstream_refused", 3);	/* g-1's 3 attempts */
	expect_num(s, "phases.all.upstream_requests", 5);
	expect_str(s, "phases.all.upstream_source", "mock_log+gateway_attempts");
	cJSON_Delete(s);
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_NONE, 0);
	expect_num(s, "phases.all.upstream_refused", 0);
	expect_num(s, "phases.all.upstream_requests", 2);
	expect_str(s, "phases.all.upstream_source", "mock_log");
	cJSON_Delete(s);
}

/* A gateway whose answers carry no attempts: its refusals cannot be counted. */
Test(attrib, no_attempts_column_no_refusals)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "1", .outcome = "http_error" },
	};
	cJSON *s;

	write_requests(rows, 1);
	write_file("mock-primary.csv", MOCK_HEADER);
	s = compute_with(whole, 1, 5000, STATS_ATTEMPTS_COLUMN, 0);
	expect_num(s, "phases.all.upstream_refused", 0);
	expect_str(s, "phases.all.upstream_source", "mock_log");
	expect_num(s, "phases.all.stop_ms", 0);
	cJSON_Delete(s);
}

/* The join is undone and done again: summarising the same rows twice gives one summary. */
Test(attrib, summarising_twice_joins_the_same)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "300", .outcome = "ok" },
		{ .id = "g-2", .sched = "10", .end = "1250", .outcome = "ok" },
	};
	struct stats_input in = {
		.run_dir = dir, .phases = whole, .nphases = 1, .duration_ms = 5000,
		.primary = "primary", .t0_unix_ms = T0,
	};
	struct rundata d;
	cJSON *a = NULL, *b = NULL;
	char *ta, *tb;

	write_requests(rows, 2);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,,0,,200,200,250,16,completed,chat\n"
		   "10.5,,0,hang,0,,1000,0,faulted,chat\n");
	write_file("mock-secondary.csv", MOCK_HEADER "1011,,0,,200,200,200,16,completed,chat\n");
	cr_assert_eq(rundata_load(&d, dir, T0, err), 0, "%s", err);
	cr_assert_eq(figures_summary(&d, &in, &a), 0);
	cr_assert_eq(figures_summary(&d, &in, &b), 0);
	ta = cJSON_PrintUnformatted(a);
	tb = cJSON_PrintUnformatted(b);
	cr_assert_str_eq(ta, tb);
	expect_num(a, "phases.all.join.by_timing", 3);
	expect_num(a, "phases.all.fallback_share", 0.5);
	free(ta);
	free(tb);
	cJSON_Delete(a);
	cJSON_Delete(b);
	rundata_free(&d);
}

/*
 * Closed-loop clients stuck on a hung primary arrive in bursts one
 * timeout apart (here every 240 ms, each held 200 ms): the arrivals have
 * gaps over 100 ms, but a request in progress is traffic, so it never
 * stopped until the bursts end; a row that arrived before the phase and
 * is still in progress holds its start too.
 */
Test(attrib, stop_ms_counts_requests_in_progress)
{
	static const struct rq rows[] = {
		{ .id = "g-1", .sched = "0", .end = "10", .outcome = "ok" },
	};
	static const struct stats_phase ph[] = { { "held", 0, 2000 }, { "after", 2000, 3000 } };
	cJSON *s;

	write_requests(rows, 1);
	write_file("mock-primary.csv", MOCK_HEADER
		   "0.5,,0,hang,0,,200,0,faulted,chat\n"
		   "1,,0,hang,0,,200,0,faulted,chat\n"
		   "240.5,,0,hang,0,,200,0,faulted,chat\n"
		   "241,,0,hang,0,,200,0,faulted,chat\n"
		   "480.5,,0,hang,0,,200,0,faulted,chat\n"
		   "720.5,,0,hang,0,,200,0,faulted,chat\n"
		   "960.5,,0,hang,0,,200,0,faulted,chat\n"
		   "1950,,0,hang,0,,1000,0,faulted,chat\n"
		   "2900,,0,hang,0,,5,0,faulted,chat\n");
	s = compute_with(ph, 2, 3000, STATS_ATTEMPTS_NONE, 100);
	expect_num(s, "phases.held.stop_ms", 960.5);
	expect_num(s, "phases.held.primary_requests", 8);
	/* 1950's request is in progress until 2950: 2900 came during it */
	expect_num(s, "phases.after.stop_ms", NAN);
	cJSON_Delete(s);
}

/*
 * report.md from a combined summary: under the phase table, a note for
 * the setup × phase joined by timing that says a join was impossible for
 * some rows (none for the one joined by id); the Attribution row with
 * each figure's source in words; the stop ms column.
 */
Test(attrib, the_report_says_how_rows_were_joined)
{
	static const char scn[] =
		"{\"name\":\"at\",\"duration_s\":20,"
		"\"providers\":[{\"name\":\"primary\"},{\"name\":\"secondary\"}],"
		"\"phases\":[{\"name\":\"outage\",\"from_s\":0,\"to_s\":20}],"
		"\"load\":{\"concurrency\":2},"
		"\"setups\":[{\"name\":\"ext\",\"kind\":\"direct\",\"provider\":\"primary\"},"
		"{\"name\":\"own\",\"kind\":\"direct\",\"provider\":\"primary\"}]}";
	static const char *const runs[] = {
		"{\"phases\":{\"outage\":{\"requests\":40,\"fallback_share\":0.75,"
		"\"fallback_source\":\"mock_log\",\"attempts_per_request\":1.25,"
		"\"upstream_refused\":3,\"upstream_source\":\"mock_log+loadgen_refused\","
		"\"duplicate_share\":0.2,\"primary_requests\":12,\"stop_ms\":150.4,"
		"\"time_to_open_ms\":null,"
		"\"join\":{\"by_id\":0,\"by_timing\":48,\"unrecorded\":0,\"unjoined\":2}}}}",
		"{\"phases\":{\"outage\":{\"requests\":40,\"fallback_share\":0.5,"
		"\"fallback_source\":\"provider_header\",\"attempts_per_request\":1,"
		"\"upstream_refused\":0,\"upstream_source\":\"mock_log+gateway_attempts\","
		"\"duplicate_share\":0,\"primary_requests\":20,\"stop_ms\":null,"
		"\"time_to_open_ms\":90,"
		"\"join\":{\"by_id\":40,\"by_timing\":0,\"unrecorded\":1,\"unjoined\":0}}}}",
	};
	static const char *const names[] = { "ext", "own" };
	struct scenario sc;
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	char path[128];
	char *md;
	size_t k;

	write_file("at.json", scn);
	snprintf(path, sizeof(path), "%s/at.json", dir);
	cr_assert_eq(scenario_load(path, 1, &sc, err), 0, "%s", err);
	for (k = 0; k < 2; k++) {
		cJSON *run = cJSON_Parse(runs[k]);

		cr_assert_not_null(run, "%s", runs[k]);
		cJSON_AddItemToObject(setups, names[k], stats_combine(&run, 1));
		cJSON_Delete(run);
	}
	cJSON_AddNumberToObject(sum, "repeat", 1);
	cr_assert_eq(report_write(dir, &sc, sum, err), 0, "%s", err);
	md = tmpdir_read(dir, "report.md");
	cr_assert_not_null(md);
	cr_expect(strstr(md, "- **ext**, outage: 0 by id, 48 by timing, 2 not at all (a join "
			 "was impossible") != NULL, "%s", md);
	cr_expect(strstr(md, "- **own**, outage:") == NULL, "a note for a join by id: %s", md);
	cr_expect(strstr(md, "| ext | outage | 75.0% | mock log | 1.250 | 3 | mock log + loadgen "
			 "refused | 20.0% | 12 | 150 | — | 0 / 48 / 2 |\n") != NULL, "%s", md);
	cr_expect(strstr(md, "| own | outage | 50.0% | provider header | 1.000 | 0 | mock log + "
			 "gateway attempts | 0.0% | 20 | — | 90 | 40 / 0 / 0 |\n") != NULL, "%s", md);
	cr_expect(strstr(md, "| stop ms |") != NULL, "%s", md);
	free(md);
	cJSON_Delete(sum);
	scenario_free(&sc);
}
