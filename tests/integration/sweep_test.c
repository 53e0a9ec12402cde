/*
 * bin/chaos sweep end to end: a small real sweep whose sweep.csv figures
 * are computed again here from one point's requests.csv and mock-*.csv;
 * the sweep folder's files, chaos report and chaos gate over it; bad
 * --vary arguments and points the loader refuses, refused before anything
 * runs; a sweep stopped by SIGTERM and resumed, running only the points
 * not done.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/lgharness.h"

static char dir[256];
static char scenario[400];
static char out[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
	snprintf(out, sizeof(out), "%s/results", dir);
}

TestSuite(sweep, .init = setup, .fini = lg_cleanup);

/*
 * Two providers behind a gateway, priced, the primary health-checked every
 * 200 ms; the primary answers 503 from 1 s to 2 s; 20 req/s for 3 s. Phases: healthy [0,1), outage [1,2), after
 * [2,3). One bound that holds and one that cannot.
 */
static const char base[] =
	"{\"name\":\"sw\",\"duration_s\":3,"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30,"
	"\"faults\":[{\"kind\":\"status\",\"status\":503,\"from_s\":1,\"to_s\":2}]},"
	"{\"name\":\"secondary\",\"ttft_ms\":40}],"
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":1},"
	"{\"name\":\"outage\",\"from_s\":1,\"to_s\":2},{\"name\":\"after\",\"from_s\":2,\"to_s\":3}],"
	"\"load\":{\"rate\":20,\"timeout_ms\":1500},"
	"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{\"request_deadline_ms\":1400,"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":300,"
	"\"health_check\":{\"interval_ms\":200,\"unhealthy_interval_ms\":100,\"timeout_ms\":100},"
	"\"price_per_1k\":{\"input\":0.5,\"output\":1.5}},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000,"
	"\"price_per_1k\":{\"input\":2,\"output\":4}}},"
	"\"breaker\":{\"cooldown_ms\":300},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}}],"
	"\"expect\":[{\"setup\":\"gw\",\"phase\":\"healthy\",\"answered_min\":0.5},"
	"{\"setup\":\"gw\",\"phase\":\"outage\",\"latency_p50_ms_max\":1}]}";

#define CF "setups.gw.config.breaker.consecutive_failures"

/* The one sweep folder under OUT/sw, into path; false when there is none. */
static bool sweep_dir(char *path, size_t len)
{
	char parent[600];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(parent, sizeof(parent), "%s/sw", out);
	d = opendir(parent);
	if (!d)
		return false;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		cr_assert(strstr(e->d_name, "-sweep"), "%s is not a sweep folder", e->d_name);
		snprintf(path, len, "%.500s/%.100s", parent, e->d_name);
		n++;
	}
	closedir(d);
	cr_assert_leq(n, 1, "%d sweep folders", n);
	return n == 1;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static cJSON *read_json(const char *path)
{
	FILE *fp = fopen(path, "r");
	struct buf b = { 0 };
	char chunk[4096];
	size_t n;
	cJSON *root;

	cr_assert_not_null(fp, "no %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	root = cJSON_Parse(b.data ? b.data : "");
	buf_free(&b);
	cr_assert_not_null(root, "%s is not JSON", path);
	return root;
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	struct buf b = { 0 };
	char chunk[4096];
	size_t n;

	cr_assert_not_null(fp, "no %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	return buf_steal(&b);
}

/* ---- the figures again, from one point's files ---- */

/* A phase's figures as this test computes them. */
struct figs {
	double answered, p50, p95, p99, attempts, duplicate, fallback, cost;
	double to_open, to_close, to_primary, exposed, check_rate;
};

/* The first breaker event to `to` in [from, to_ms) of run_dir/events.jsonl, from from; NAN: none. */
static double first_event(const char *run_dir, double t0, const char *to, double from,
			  double to_ms)
{
	char path[1200];
	char *text;
	char *line;
	char *nl;
	double first = NAN;

	snprintf(path, sizeof(path), "%.900s/events.jsonl", run_dir);
	text = slurp(path);
	for (line = text; *line; line = nl + 1) {
		cJSON *e;
		double t;

		nl = strchr(line, '\n');
		cr_assert_not_null(nl, "%s: a line without its newline", path);
		*nl = '\0';
		e = cJSON_Parse(line);

		cr_assert_not_null(e, "%s: %s", path, line);
		t = cJSON_GetObjectItem(e, "t_unix_ms")->valuedouble - t0;
		if (t >= from && t < to_ms && isnan(first) &&
		    strcmp(cJSON_GetObjectItem(e, "to")->valuestring, to) == 0)
			first = t - from;
		cJSON_Delete(e);
	}
	free(text);
	return first;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the value at rank ceil(p/100 × n), from 1, of v sorted. */
static double nearest_rank(const double *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100 * (double)n);

	return n ? v[rank ? rank - 1 : 0] : NAN;
}

/*
 * The figures of the requests scheduled in [from, to): from requests.csv
 * and the mock-NAME.csv rows whose request_id is one of theirs. A mock
 * row is duplicate work when its outcome is client_aborted or its request
 * is not an ok one answered by that provider.
 */
static struct figs recompute(const char *run_dir, double from, double to)
{
	static const char *const providers[] = { "primary", "secondary" };
	struct csv_table req;
	struct csv_table mock;
	struct figs f;
	double *lat;
	double cost = 0;
	size_t nreq = 0, ok = 0, fallback = 0, rows = 0, dup = 0, nlat = 0;
	size_t i;
	size_t k;
	char path[1200];

	cr_assert_eq(lg_requests(run_dir, &req), 0, "no %s/requests.csv", run_dir);
	lat = calloc(req.nrows, sizeof(*lat));
	for (i = 1; i < req.nrows; i++) {
		double sched = lg_num(&req, i, "sched_ms");
		bool is_ok = strcmp(csv_get(&req, i, "outcome"), "ok") == 0;
		const char *prov = csv_get(&req, i, "provider");

		if (!(sched >= from && sched < to))
			continue;
		nreq++;
		if (!isnan(lg_num(&req, i, "cost_usd")))
			cost += lg_num(&req, i, "cost_usd");
		if (!is_ok)
			continue;
		ok++;
		lat[nlat++] = lg_num(&req, i, "latency_ms");
		if (*prov && strcmp(prov, "primary") != 0)
			fallback++;
	}
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	for (k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%.900s/mock-%s.csv", run_dir, providers[k]);
		cr_assert_eq(csv_read(path, &mock), 0, "no %s", path);
		for (i = 1; i < mock.nrows; i++) {
			size_t r = lg_find(&req, "id", csv_get(&mock, i, "request_id"));
			double sched;
			const char *prov;
			bool answered;

			if (!r)
				continue;
			sched = lg_num(&req, r, "sched_ms");
			if (!(sched >= from && sched < to))
				continue;
			rows++;
			prov = csv_get(&req, r, "provider");
			answered = strcmp(csv_get(&req, r, "outcome"), "ok") == 0 &&
				   strcmp(*prov ? prov : "primary", providers[k]) == 0;
			if (strcmp(csv_get(&mock, i, "outcome"), "client_aborted") == 0 || !answered)
				dup++;
		}
		csv_free(&mock);
	}
	f.answered = (double)ok / (double)nreq;
	f.p50 = nearest_rank(lat, nlat, 50);
	f.p95 = nearest_rank(lat, nlat, 95);
	f.p99 = nearest_rank(lat, nlat, 99);
	f.attempts = (double)rows / (double)nreq;
	f.duplicate = rows ? (double)dup / (double)rows : NAN;
	f.fallback = ok ? (double)fallback / (double)ok : NAN;
	f.cost = ok ? cost / (double)ok : NAN;
	free(lat);

	/* The breaker's first opening and closing in the range (t0: loadgen's). */
	{
		cJSON *lg;
		double t0;

		snprintf(path, sizeof(path), "%.900s/loadgen-summary.json", run_dir);
		lg = read_json(path);
		t0 = cJSON_GetObjectItem(lg, "t0_unix_ms")->valuedouble;
		cJSON_Delete(lg);
		f.to_open = first_event(run_dir, t0, "open", from, to);
		f.to_close = first_event(run_dir, t0, "closed", from, to);
	}
	/* The primary's first answer: the first ok one by sched_ms, from the range's start. */
	{
		double best = INFINITY;

		f.to_primary = NAN;
		for (i = 1; i < req.nrows; i++) {
			double sched = lg_num(&req, i, "sched_ms");
			const char *prov = csv_get(&req, i, "provider");

			if (sched >= from && sched < to && sched < best &&
			    strcmp(csv_get(&req, i, "outcome"), "ok") == 0 &&
			    (!*prov || strcmp(prov, "primary") == 0)) {
				best = sched;
				f.to_primary = lg_num(&req, i, "end_ms") - from;
			}
		}
	}
	/*
	 * The primary's log: requests that reached it from the range's start to
	 * the breaker's opening (the whole range when it did not open), and its
	 * health checks (model listings) per second of the range.
	 */
	{
		double until = isnan(f.to_open) ? to : from + f.to_open;
		struct buf seen = { 0 };
		size_t checks = 0;
		size_t exposed = 0;

		snprintf(path, sizeof(path), "%.900s/mock-primary.csv", run_dir);
		cr_assert_eq(csv_read(path, &mock), 0, "no %s", path);
		for (i = 1; i < mock.nrows; i++) {
			double t = lg_num(&mock, i, "t_ms");
			const char *id = csv_get(&mock, i, "request_id");
			char key[80];

			if (!(t >= from && t < to))
				continue;
			if (strcmp(csv_get(&mock, i, "kind"), "models") == 0 ||
			    strncmp(id, "health-check-", 13) == 0) {
				checks++;
				continue;
			}
			snprintf(key, sizeof(key), "|%.70s|", id);
			if (t < until && lg_find(&req, "id", id) &&
			    !(seen.data && strstr(seen.data, key))) {
				exposed++;
				cr_assert_eq(buf_puts(&seen, key), 0);
			}
		}
		csv_free(&mock);
		buf_free(&seen);
		f.exposed = (double)exposed;
		f.check_rate = (double)checks / ((to - from) / 1000);
	}
	csv_free(&req);
	return f;
}

/* sweep.csv's cell (row, col) against the value computed here. */
static void expect_cell(const struct csv_table *t, size_t row, const char *col, double want)
{
	double got = lg_num(t, row, col);

	cr_expect((isnan(got) && isnan(want)) || fabs(got - want) <= 1e-9 * fmax(1, fabs(want)),
		  "sweep.csv row %zu %s: %.17g, the files give %.17g", row, col, got, want);
}

Test(sweep, figures_recompute_from_the_point_files, .timeout = 120)
{
	static const char *const phases[] = { "healthy", "outage", "after" };
	static const char *const columns[] = {
		"point", "dir", CF, "setup", "phase", "runs", "answered_share", "answered_share_sd",
		"latency_p50_ms", "latency_p50_ms_sd", "latency_p95_ms", "latency_p95_ms_sd",
		"latency_p99_ms", "latency_p99_ms_sd", "attempts_per_request",
		"attempts_per_request_sd", "duplicate_share", "duplicate_share_sd",
		"cost_per_answered_usd", "cost_per_answered_usd_sd", "time_to_open_ms",
		"time_to_open_ms_sd", "time_to_primary_ms", "time_to_primary_ms_sd",
		"fallback_share", "fallback_share_sd", "time_to_close_ms", "time_to_close_ms_sd",
		"exposed_requests", "exposed_requests_sd", "check_rate_per_s", "check_rate_per_s_sd",
		"objective", "broken",
	};
	const char *argv[] = { "chaos", "sweep", scenario, "--vary", CF "=1,4", "--out", out, NULL };
	struct lg_proc p;
	struct csv_table t;
	char sw[700];
	char path[1000];
	char *before;
	char *after;
	cJSON *plan;
	size_t i;
	size_t row;
	int rc;

	write_file(dir, "sw.json", base, scenario, sizeof(scenario));
	cr_assert_eq(lg_spawn(&p, argv), 0);
	rc = lg_wait(&p, 100);
	cr_assert_eq(rc, 0, "chaos sweep exited %d: %s", rc, p.err);
	cr_assert(sweep_dir(sw, sizeof(sw)));
	cr_expect(strstr(p.out, "consecutive_failures=4"), "no table on stdout: %s", p.out);
	cr_expect(strstr(p.err, "point 2 of 2 (consecutive_failures=4)"), "%s", p.err);

	/* The folder: the base scenario, the plan, and each point a whole stamp. */
	snprintf(path, sizeof(path), "%s/scenario.json", sw);
	cr_expect(exists(path));
	snprintf(path, sizeof(path), "%s/p001-consecutive_failures=1/gw/run-1/requests.csv", sw);
	cr_expect(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/p002-consecutive_failures=4/summary.json", sw);
	cr_expect(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/sweep.json", sw);
	plan = read_json(path);
	cr_expect_eq(lg_json_num(plan, "repeat"), 1);
	cr_expect_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "points"), 1)->child->next
			 ->valuestring, "p002-consecutive_failures=4");
	cJSON_Delete(plan);
	before = slurp(path);
	cr_expect(strstr(before, "\"status\":\t\"done\"") && !strstr(before, "pending"),
		  "sweep.json: points not done: %s", before);
	free(before);
	{
		/* The point's scenario is the base with its value put in. */
		snprintf(path, sizeof(path), "%s/p002-consecutive_failures=4/scenario.json", sw);
		plan = read_json(path);
		cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "setups"), 0), "config"),
			"breaker"), "consecutive_failures")->valuedouble, 4);
		cJSON_Delete(plan);
	}

	/* sweep.csv: its columns in order, a row per point × setup × phase. */
	snprintf(path, sizeof(path), "%s/sweep.csv", sw);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.ncols, sizeof(columns) / sizeof(columns[0]));
	for (i = 0; i < t.ncols; i++)
		cr_expect_str_eq(t.rows[0][i], columns[i], "column %zu", i);
	cr_assert_eq(t.nrows, 1 + 2 * 3, "%zu rows", t.nrows);
	for (row = 1; row < t.nrows; row++) {
		cr_expect_str_eq(csv_get(&t, row, "point"), row <= 3 ? "1" : "2");
		cr_expect_str_eq(csv_get(&t, row, CF), row <= 3 ? "1" : "4");
		cr_expect_str_eq(csv_get(&t, row, "setup"), "gw");
		cr_expect_str_eq(csv_get(&t, row, "phase"), phases[(row - 1) % 3]);
		cr_expect_str_eq(csv_get(&t, row, "runs"), "1");
	}

	/* Point 1's figures, again from its files. */
	snprintf(path, sizeof(path), "%s/p001-consecutive_failures=1/gw/run-1", sw);
	for (i = 0; i < 3; i++) {
		struct figs f = recompute(path, 1000.0 * (double)i, 1000.0 * (double)(i + 1));

		row = i + 1;
		expect_cell(&t, row, "answered_share", f.answered);
		expect_cell(&t, row, "latency_p50_ms", f.p50);
		expect_cell(&t, row, "latency_p95_ms", f.p95);
		expect_cell(&t, row, "latency_p99_ms", f.p99);
		expect_cell(&t, row, "attempts_per_request", f.attempts);
		expect_cell(&t, row, "duplicate_share", f.duplicate);
		expect_cell(&t, row, "fallback_share", f.fallback);
		expect_cell(&t, row, "cost_per_answered_usd", f.cost);
		expect_cell(&t, row, "time_to_open_ms", f.to_open);
		expect_cell(&t, row, "time_to_close_ms", f.to_close);
		expect_cell(&t, row, "time_to_primary_ms", f.to_primary);
		expect_cell(&t, row, "exposed_requests", f.exposed);
		expect_cell(&t, row, "check_rate_per_s", f.check_rate);
		cr_expect_str_eq(csv_get(&t, row, "answered_share_sd"), "0", "one run: sd 0");
	}
	/* The outage made duplicate work and sent some to the secondary. */
	cr_expect_gt(lg_num(&t, 2, "attempts_per_request"), 1);
	cr_expect(!isnan(lg_num(&t, 2, "time_to_open_ms")), "the breaker opened in the outage");
	cr_expect_gt(lg_num(&t, 1, "check_rate_per_s"), 0, "the checks were logged and counted");
	cr_expect_gt(lg_num(&t, 2, "fallback_share"), 0);
	cr_expect_gt(lg_num(&t, 1, "cost_per_answered_usd"), 0);
	csv_free(&t);

	/* chaos report recomputes every point and writes the same sweep.csv. */
	snprintf(path, sizeof(path), "%s/sweep.csv", sw);
	before = slurp(path);
	{
		const char *rep[] = { "chaos", "report", sw, NULL };
		char err[4096];

		rc = run_program(rep, err, sizeof(err), 60);
		cr_expect_eq(rc, 0, "chaos report over the sweep exited %d: %s", rc, err);
	}
	after = slurp(path);
	cr_expect_str_eq(after, before, "chaos report computed another sweep.csv");
	free(before);
	free(after);

	/* chaos gate: every point against its own expect block, lines prefixed. */
	{
		const char *gate[] = { "chaos", "gate", sw, NULL };
		const char *gate_bl[] = { "chaos", "gate", sw, "--baseline", scenario, NULL };
		struct lg_proc g;

		cr_assert_eq(lg_spawn(&g, gate), 0);
		rc = lg_wait(&g, 30);
		cr_expect_eq(rc, 1, "a broken bound: exit %d: %s %s", rc, g.out, g.err);
		cr_expect(strstr(g.out, "p001-consecutive_failures=1: PASS"), "%s", g.out);
		cr_expect(strstr(g.out, "p002-consecutive_failures=4: FAIL"), "%s", g.out);
		cr_assert_eq(lg_spawn(&g, gate_bl), 0);
		rc = lg_wait(&g, 30);
		cr_expect_eq(rc, 2, "--baseline on a sweep: exit %d", rc);
		cr_expect(strstr(g.err, "is a sweep"), "%s", g.err);
	}
}

/* chaos sweep ARGS… must exit 2 with want on stderr, and make no results folder. */
static void refused(const char *const args[], const char *want)
{
	const char *argv[16] = { "chaos", "sweep", scenario };
	char err[4096];
	size_t n = 3;
	int rc;

	for (; *args; args++)
		argv[n++] = *args;
	argv[n++] = "--out";
	argv[n++] = out;
	argv[n] = NULL;
	rc = run_program(argv, err, sizeof(err), 20);
	cr_expect_eq(rc, 2, "%s: exit %d: %s", want, rc, err);
	cr_expect(strstr(err, want), "\"%s\" not in: %s", want, err);
	cr_expect_not(exists(out), "a refused sweep made %s", out);
}

Test(sweep, bad_vary_is_refused_before_anything_runs, .timeout = 30)
{
	write_file(dir, "sw.json", base, scenario, sizeof(scenario));
	refused((const char *[]){ "--vary", "setups.gwy.config.x=1", NULL },
		"--vary setups.gwy.config.x: no such value in the scenario: setups.gwy: no setup "
		"named \"gwy\" (setups: gw)");
	refused((const char *[]){ "--vary", "setups.gw.config.providers.primary.timeout_ms=300,x",
				  NULL },
		"--vary setups.gw.config.providers.primary.timeout_ms: expected a number");
	refused((const char *[]){ "--vary", "load.rate=9..1/1", NULL },
		"--vary load.rate: expected FROM ≤ TO and STEP above 0");
	refused((const char *[]){ "--vary", "load.rate=", NULL },
		"--vary load.rate: expected a list V1,V2,… or a range");
	refused((const char *[]){ "--vary", "load.rate=1,2", "--vary", "load.rate=3", NULL },
		"--vary load.rate: given twice");
	/* Values the scenario loader refuses, for the point that has them. */
	refused((const char *[]){ "--vary", "setups.gw.config.providers.primary.timeout_ms=300,-5",
				  NULL },
		"point 2 (timeout_ms=-5): ");
	refused((const char *[]){ "--vary", CF "=1,2", "--vary",
				  "setups.gw.config.breaker.colldown_ms=1,2", NULL },
		"colldown_ms");
	refused((const char *[]){ "--vary", CF "=1", "--jobs", "2", NULL }, "--jobs: expected 1");
	refused((const char *[]){ NULL }, "at least one --vary");
}

/* A file's modification time in ns. */
static long long mtime_ns(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "no %s", path);
	return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* How many times needle is in text. */
static int count(const char *text, const char *needle)
{
	int n = 0;

	for (; (text = strstr(text, needle)) != NULL; text++)
		n++;
	return n;
}

/* Reads the child's stderr until needle is there n times, or timeout_ms. */
static bool await_count(struct lg_proc *p, const char *needle, int n, double timeout_ms)
{
	double start = now_ms();

	while (count(p->err, needle) < n && now_ms() - start < timeout_ms)
		lg_await_stderr(p, "\x01 never written", 50);
	return count(p->err, needle) >= n;
}

Test(sweep, a_sweep_stopped_by_sigterm_resumes_with_the_points_not_done, .timeout = 120)
{
	const char *argv[] = { "chaos", "sweep", scenario, "--vary", CF "=1,2,3", "--time-scale",
			       "0.5", "--out", out, NULL };
	struct lg_proc p;
	struct csv_table t;
	char sw[700];
	char path[1000];
	char *text;
	long long first;
	int rc;

	write_file(dir, "sw.json", base, scenario, sizeof(scenario));
	cr_assert_eq(lg_spawn(&p, argv), 0);
	/* Point 2's run has begun: point 1 is done. */
	cr_assert(lg_await_stderr(&p, "point 2 of 3", 60000), "%s", p.err);
	cr_assert(await_count(&p, "run 1 of 1: 1.5 s", 2, 20000), "%s", p.err);
	kill(p.pid, SIGTERM);
	rc = lg_wait(&p, 30);
	cr_assert_eq(rc, 143, "exit %d after SIGTERM: %s", rc, p.err);
	cr_expect(strstr(p.err, "chaos sweep --resume"), "%s", p.err);
	cr_assert(sweep_dir(sw, sizeof(sw)));
	snprintf(path, sizeof(path), "%s/sweep.json", sw);
	text = slurp(path);
	cr_expect(strstr(text, "\"dir\":\t\"p001-consecutive_failures=1\",") &&
		  strstr(text, "\"status\":\t\"done\"") && strstr(text, "\"status\":\t\"pending\""),
		  "%s", text);
	free(text);
	/* sweep.csv holds point 1 alone: a true partial table. */
	snprintf(path, sizeof(path), "%s/sweep.csv", sw);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_expect_eq(t.nrows, 1 + 3);
	csv_free(&t);
	snprintf(path, sizeof(path), "%s/p001-consecutive_failures=1/summary.json", sw);
	first = mtime_ns(path);
	snprintf(path, sizeof(path), "%s/p002-consecutive_failures=2/summary.json", sw);
	cr_expect_not(exists(path), "the stopped point has a summary");

	{
		const char *resume[] = { "chaos", "sweep", "--resume", sw, NULL };

		cr_assert_eq(lg_spawn(&p, resume), 0);
		rc = lg_wait(&p, 90);
		cr_assert_eq(rc, 0, "resume exited %d: %s", rc, p.err);
	}
	cr_expect_not(strstr(p.err, "point 1 of 3"), "point 1 ran again: %s", p.err);
	cr_expect(strstr(p.err, "point 2 of 3") && strstr(p.err, "point 3 of 3"), "%s", p.err);
	snprintf(path, sizeof(path), "%s/p001-consecutive_failures=1/summary.json", sw);
	cr_expect_eq(mtime_ns(path), first, "point 1's files were written again");
	snprintf(path, sizeof(path), "%s/p002-consecutive_failures=2.partial-1", sw);
	cr_expect(exists(path), "the partial point was not moved aside");
	snprintf(path, sizeof(path), "%s/p003-consecutive_failures=3/summary.json", sw);
	cr_expect(exists(path));
	snprintf(path, sizeof(path), "%s/sweep.json", sw);
	text = slurp(path);
	cr_expect_not(strstr(text, "pending"), "%s", text);
	free(text);
	snprintf(path, sizeof(path), "%s/sweep.csv", sw);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_expect_eq(t.nrows, 1 + 3 * 3);
	csv_free(&t);

	/* A sweep.json that cannot be read is refused. */
	{
		const char *resume[] = { "chaos", "sweep", "--resume", sw, NULL };
		char err[4096];

		snprintf(path, sizeof(path), "%s/sweep.json", sw);
		write_file(sw, "sweep.json", "{\"scenario\":", path, sizeof(path));
		rc = run_program(resume, err, sizeof(err), 20);
		cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
		cr_expect(strstr(err, "sweep.json"), "%s", err);
	}
}

/* A TCP socket listening on 127.0.0.1, its port in *port: a port taken. */
/*
 * A signal that comes once a point's results are whole — while its plots
 * are drawn (a gnuplot script made to pause) — stops the sweep there: the
 * point is done, the next one never starts, and the exit status says the
 * signal. (It was lost once: the point's run had stopped listening, and
 * the sweep went on and exited 0.)
 */
Test(sweep, a_signal_while_a_point_finishes_stops_the_sweep, .timeout = 90)
{
	const char *argv[] = { "chaos", "sweep", scenario, "--vary", CF "=1,2", "--time-scale",
			       "0.5", "--out", out, NULL };
	struct lg_proc p;
	char plots[600];
	char path[1000];
	char sw[700];
	char *text;
	struct dirent *e;
	DIR *d;
	int rc;
	int i;

	/* The plots' scripts, answered.gp pausing 3 s first. */
	snprintf(plots, sizeof(plots), "%s/plots", dir);
	cr_assert_eq(mkdir(plots, 0755), 0);
	d = opendir("plots");
	cr_assert_not_null(d, "run from the repository's root");
	while ((e = readdir(d))) {
		char src[600];
		char *body;

		if (!strstr(e->d_name, ".gp"))
			continue;
		snprintf(src, sizeof(src), "plots/%.200s", e->d_name);
		body = slurp(src);
		text = buf_aprintf("%s%s", strcmp(e->d_name, "answered.gp") == 0 ? "pause 3\n" : "",
				   body);
		write_file(plots, e->d_name, text, path, sizeof(path));
		free(text);
		free(body);
	}
	closedir(d);
	setenv("FAULTLINE_PLOTS", plots, 1);
	write_file(dir, "sw.json", base, scenario, sizeof(scenario));
	rc = lg_spawn(&p, argv);
	unsetenv("FAULTLINE_PLOTS");
	cr_assert_eq(rc, 0);
	/* Point 1's summary is written before its plots: then it is finishing. */
	cr_assert(lg_await_stderr(&p, "point 1 of 2", 30000), "%s", p.err);
	for (i = 0; i < 3000 && !sweep_dir(sw, sizeof(sw)); i++)
		usleep(10000);
	snprintf(path, sizeof(path), "%s/p001-consecutive_failures=1/summary.json", sw);
	for (i = 0; i < 3000 && !exists(path); i++)
		usleep(10000);
	cr_assert(exists(path), "point 1 never finished: %s", p.err);
	kill(p.pid, SIGINT);
	rc = lg_wait(&p, 30);
	cr_expect_eq(rc, 130, "exit %d after SIGINT while point 1 finished: %s", rc, p.err);
	cr_expect_not(strstr(p.err, "point 2 of 2"), "point 2 started: %s", p.err);
	snprintf(path, sizeof(path), "%s/sweep.json", sw);
	text = slurp(path);
	cr_expect(strstr(text, "\"status\":\t\"done\"") && strstr(text, "\"status\":\t\"pending\""),
		  "point 1 done, point 2 pending: %s", text);
	free(text);
}

static int hold_port(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

Test(sweep, a_failed_point_is_marked_and_the_sweep_goes_on, .timeout = 90)
{
	char vary[128];
	const char *argv[] = { "chaos", "sweep", scenario, "--vary", vary, "--time-scale", "0.5",
			       "--out", out, "--quiet", NULL };
	struct lg_proc p;
	struct csv_table t;
	char sw[700];
	char path[1000];
	char *text;
	int port;
	int fd = hold_port(&port);
	int rc;

	/* Point 1's secondary cannot listen where it is told: its run fails. */
	snprintf(vary, sizeof(vary), "providers.secondary.listen=127.0.0.1:%d,127.0.0.1:0", port);
	write_file(dir, "sw.json", base, scenario, sizeof(scenario));
	cr_assert_eq(lg_spawn(&p, argv), 0);
	rc = lg_wait(&p, 80);
	close(fd);
	cr_assert_eq(rc, 1, "a failed point: exit %d: %s", rc, p.err);
	cr_expect(strstr(p.err, "run 1 failed"), "%s", p.err);
	cr_assert(sweep_dir(sw, sizeof(sw)));
	snprintf(path, sizeof(path), "%s/sweep.json", sw);
	text = slurp(path);
	cr_expect(strstr(text, "\"status\":\t\"failed\"") && strstr(text, "\"status\":\t\"done\""),
		  "%s", text);
	free(text);
	snprintf(path, sizeof(path), "%s/p002-listen=127.0.0.1_0/summary.json", sw);
	cr_expect(exists(path), "the point after the failed one did not run: no %s", path);
	snprintf(path, sizeof(path), "%s/sweep.csv", sw);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_expect_eq(t.nrows, 1 + 3, "rows for the point with a summary alone");
	cr_expect_str_eq(csv_get(&t, 1, "providers.secondary.listen"), "127.0.0.1:0");
	csv_free(&t);
	cr_expect(strstr(p.out, "(failed)"), "%s", p.out);
}
