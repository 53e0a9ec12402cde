/*
 * bin/chaos end to end: a short outage scenario through a direct setup and
 * a gateway setup, with a kill and a restart, checked by its result files
 * and exit status; streams that stall, in the summary, report and gate; a
 * bad scenario; a setup that crashes; Ctrl-C in the
 * middle of a run, after which no child of it is left; a runner killed
 * with SIGKILL, whose children (and a setup's own children) die within a
 * second and leave no file growing; a child that explains its failure on
 * stderr when its log cannot be written; files that cannot be written
 * (a file size limit, /dev/full) failing with exit 1, the file named and
 * left as .tmp; a run that starts after seconds of work in the loop.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/tmpdir.h"
#include "tests/support/lgharness.h"

static char dir[256];
static char scenario[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos, .init = setup, .fini = lg_cleanup);

/*
 * The primary hangs from 1 s to 2 s and is killed at 2.5 s, restarted at
 * 3 s; the secondary is killed at 3.5 s for good (its log is finished by
 * the runner); 20 req/s for 4 s. phases: healthy [0,1), outage [1,2),
 * after [2,4).
 */
static const char outage[] =
	"{\"name\":\"short-hang\",\"description\":\"test\",\"duration_s\":4,"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30,"
	"\"faults\":[{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2}]},"
	"{\"name\":\"secondary\",\"ttft_ms\":40}],"
	"\"actions\":[{\"at_s\":2.5,\"do\":\"kill\",\"provider\":\"primary\"},"
	"{\"at_s\":3,\"do\":\"restart\",\"provider\":\"primary\"},"
	"{\"at_s\":3.5,\"do\":\"kill\",\"provider\":\"secondary\"}],"
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":1},"
	"{\"name\":\"outage\",\"from_s\":1,\"to_s\":2},"
	"{\"name\":\"after\",\"from_s\":2,\"to_s\":4}],"
	"\"load\":{\"rate\":20,\"timeout_ms\":1500},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
	"{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{\"request_deadline_ms\":1400,"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":200},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000}},"
	"\"breaker\":{\"consecutive_failures\":2,\"cooldown_ms\":300,\"cooldown_jitter\":0,"
	"\"cooldown_multiplier\":1,\"half_open_probes\":1},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}}],"
	/* One bound that holds, one that cannot (a hanging primary answers nothing). */
	"\"expect\":[{\"setup\":\"gw\",\"phase\":\"outage\",\"error_rate_max\":0},"
	"{\"setup\":\"direct\",\"phase\":\"outage\",\"answered_min\":0.5}]}";

/* The one stamp directory under DIR/results/NAME, into out. */
static void stamp_dir(const char *name, char *out, size_t len)
{
	char parent[500];
	int n;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	n = tmpdir_only_entry(parent, out, len);
	cr_assert_eq(n, 1, "%d stamp dirs under %s", n, parent);
}

/*
 * Writes text as DIR/FILE, runs `chaos run` on it into DIR/results within
 * timeout_s, asserts that it exited 0 and puts the stamp of scenario NAME
 * in stamp (len bytes).
 */
static void run_scenario(const char *file, const char *text, const char *name, int timeout_s,
			 char *stamp, size_t len)
{
	char out[600];
	char err[8192];
	int rc;

	write_file(dir, file, text, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), timeout_s);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	stamp_dir(name, stamp, len);
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

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* STAMP/report.md into md. */
static void read_report(const char *stamp, struct buf *md)
{
	char path[1000];
	char chunk[4096];
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/report.md", stamp);
	fp = fopen(path, "r");
	cr_assert_not_null(fp, "no report.md");
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(md, chunk, n);
	fclose(fp);
}

/* chaos report STAMP recomputes the stamp summary top from the per-request files. */
static void assert_report_reproduces(const char *stamp, const cJSON *top)
{
	const char *argv[] = { "chaos", "report", stamp, NULL };
	char path[1000];
	char err[8192];
	cJSON *again;
	int rc;

	rc = run_program(argv, err, sizeof(err), 30);
	cr_assert_eq(rc, 0, "chaos report exited %d: %s", rc, err);
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	again = read_json(path);
	cr_assert(cJSON_Compare(top, again, true),
		  "chaos report computed another stamp summary than the run did");
	cJSON_Delete(again);
}

static double phase_num(const cJSON *sum, const char *phase, const char *key)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(sum, "phases"), phase);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

Test(chaos, short_outage_end_to_end, .timeout = 90)
{
	static const char *const files[] = { "requests.csv", "requests.jsonl", "summary.json",
					     "loadgen-summary.json", "mock-primary.csv",
					     "mock-secondary.csv", "mockprov-primary.log", NULL };
	char out[600];
	char stamp[800];
	char path[1000];
	char err[8192];
	cJSON *top;
	cJSON *direct;
	cJSON *gw;
	struct csv_table t;
	int rc;
	int i;

	write_file(dir, "short-hang.json", outage, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 80);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	cr_assert(strstr(err, "kill primary") && strstr(err, "restart primary") &&
		  strstr(err, "kill secondary"), "%s", err);
	stamp_dir("short-hang", stamp, sizeof(stamp));
	for (i = 0; files[i]; i++) {
		snprintf(path, sizeof(path), "%s/direct/run-1/%s", stamp, files[i]);
		cr_assert(exists(path), "missing %s", path);
		snprintf(path, sizeof(path), "%s/gw/run-1/%s", stamp, files[i]);
		cr_assert(exists(path), "missing %s", path);
	}
	snprintf(path, sizeof(path), "%s/gw/run-1/events.jsonl", stamp);
	cr_assert(exists(path), "the gateway setup has no events file");
	snprintf(path, sizeof(path), "%s/direct/run-1.tmp", stamp);
	cr_assert_not(exists(path), "a .tmp run dir is left behind");

	/* 80 requests per setup, by the schedule; the restart continued the mock log. */
	snprintf(path, sizeof(path), "%s/direct/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.nrows - 1, 80, "direct: %zu requests", t.nrows - 1);
	csv_free(&t);

	snprintf(path, sizeof(path), "%s/direct/run-1/summary.json", stamp);
	direct = read_json(path);
	snprintf(path, sizeof(path), "%s/gw/run-1/summary.json", stamp);
	gw = read_json(path);
	/* Straight at a hanging primary, the outage's requests all fail; through the gateway none. */
	cr_assert_float_eq(phase_num(direct, "healthy", "answered_share"), 1, 1e-9);
	cr_assert_float_eq(phase_num(direct, "outage", "answered_share"), 0, 1e-9,
			   "direct, outage: %g", phase_num(direct, "outage", "answered_share"));
	cr_assert_float_eq(phase_num(gw, "outage", "answered_share"), 1, 1e-9,
			   "gateway, outage: %g", phase_num(gw, "outage", "answered_share"));
	cr_assert_gt(phase_num(gw, "outage", "fallback_share"), 0.5);
	cr_assert(phase_num(gw, "outage", "time_to_open_ms") <= 1000,
		  "the breaker opened %g ms into the outage", phase_num(gw, "outage", "time_to_open_ms"));
	cJSON_Delete(direct);
	cJSON_Delete(gw);

	snprintf(path, sizeof(path), "%s/scenario.json", stamp);
	cr_assert(exists(path), "the scenario was not kept with its results");
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(
				   cJSON_GetObjectItemCaseSensitive(top, "setups"), "direct"));
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(
				   cJSON_GetObjectItemCaseSensitive(top, "setups"), "gw"));

	/* report.md has a row per setup and phase, and the breaker's transitions. */
	{
		struct buf md = { 0 };

		read_report(stamp, &md);
		cr_assert(strstr(md.data, "| direct | healthy "), "%s", md.data);
		cr_assert(strstr(md.data, "| gw     | outage "), "%s", md.data);
		cr_assert(strstr(md.data, "## Breaker transitions"), "%s", md.data);
		cr_assert(strstr(md.data, "| gw | 1 | "), "%s", md.data);
		cr_assert(strstr(md.data, "| primary | mock-small | closed → open |"), "%s", md.data);
		buf_free(&md);
	}

	/* The plots are drawn, and the gate gives its verdicts both ways. */
	{
		static const char *const pngs[] = { "answered", "latency", "breakers", "phases" };
		const char *argv[] = { "chaos", "gate", stamp, NULL };
		char gate_out[600];
		struct lg_proc g;

		for (i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/plots/%s.png", stamp, pngs[i]);
			cr_assert(exists(path), "no %s", path);
		}
		cr_assert_eq(lg_spawn(&g, argv), 0);
		rc = lg_wait(&g, 30);
		cr_assert_eq(rc, 1, "chaos gate exited %d:\n%s%s", rc, g.out, g.err);
		cr_assert(strstr(g.out, "PASS  expect  gw"), "%s", g.out);
		cr_assert(strstr(g.out, "FAIL  expect  direct"), "%s", g.out);
		cr_assert(strstr(g.out, "2 checks, 1 failed"), "%s", g.out);
		snprintf(gate_out, sizeof(gate_out), "%s/baseline.json", dir);
		{
			const char *save[] = { "chaos", "gate", stamp, "--save-baseline", gate_out,
					       NULL };

			rc = run_program(save, err, sizeof(err), 30);
			cr_assert_eq(rc, 1, "the expect bound still breaks: %d %s", rc, err);
			cr_assert(exists(gate_out), "no baseline saved");
		}
	}

	/* chaos report recomputes the same summaries from the per-request files. */
	assert_report_reproduces(stamp, top);
	cJSON_Delete(top);
}

/*
 * Streams straight at a primary that stalls after 2 tokens from 0.9 s to
 * 2.1 s (the phases keep 100 ms from its edges, so a request sent a little
 * late still lands where its phase says): loadgen gets the scenario's stall_timeout_ms (300 ms), every stream
 * of the stall phase is a silent break, the report gets its Streams table,
 * the gate judges the streams' bounds, and chaos report computes the same.
 */
static const char stalls[] =
	"{\"name\":\"short-stall\",\"duration_s\":3,"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30,\"token_ms\":10,"
	"\"output_tokens\":5,\"faults\":[{\"kind\":\"stall\",\"after_tokens\":2,"
	"\"from_s\":0.9,\"to_s\":2.1}]}],"
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":0.8},"
	"{\"name\":\"stall\",\"from_s\":1,\"to_s\":2},"
	"{\"name\":\"after\",\"from_s\":2.2,\"to_s\":3}],"
	"\"load\":{\"rate\":20,\"stream\":1,\"timeout_ms\":1500,\"stall_timeout_ms\":300},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"}],"
	"\"expect\":[{\"setup\":\"direct\",\"phase\":\"healthy\",\"silent_breaks_max\":0,"
	"\"ttft_p95_ms_max\":500},"
	"{\"setup\":\"direct\",\"phase\":\"stall\",\"silent_breaks_max\":0}]}";

/* Whether a line of the gate's table starts with start and holds has (widths vary). */
static bool gate_line(const char *table, const char *start, const char *has)
{
	const char *p = table;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strncmp(line, start, strlen(start)) == 0 && strstr(line, has))
			return true;
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

/*
 * Classes, prices and the new bounds end to end, at time scale 0.5: an
 * 8 s timeline (4 s of wall time) where alpha answers 503 from 2 s to 4 s;
 * a mix of interactive and batch streams over two tenants and three
 * features; a direct and a client-retry setup, priced by "prices".
 */
static const char classes[] =
	"{\"name\":\"classes-cost\",\"duration_s\":8,"
	"\"providers\":[{\"name\":\"alpha\",\"ttft_ms\":60,\"output_tokens\":16,"
	"\"faults\":[{\"kind\":\"status\",\"status\":503,\"from_s\":2,\"to_s\":4}]}],"
	"\"prices\":{\"alpha\":{\"input\":0.15,\"output\":0.6}},"
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":2},"
	"{\"name\":\"outage\",\"from_s\":2,\"to_s\":4},"
	"{\"name\":\"after\",\"from_s\":4,\"to_s\":8}],"
	"\"load\":{\"timeout_ms\":3000,\"mix\":{\"streams\":["
	"{\"name\":\"chat\",\"rate\":6,\"tenant\":\"acme\",\"feature\":\"chat\"},"
	"{\"name\":\"search\",\"rate\":4,\"tenant\":\"globex\",\"feature\":\"search\"},"
	"{\"name\":\"nightly\",\"rate\":4,\"class\":\"batch\",\"tenant\":\"acme\","
	"\"feature\":\"summaries\"}]}},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"alpha\"},"
	"{\"name\":\"retry\",\"kind\":\"client_retry\",\"provider\":\"alpha\",\"retries\":2}],"
	"\"expect\":["
	"{\"setup\":\"direct\",\"phase\":\"outage\",\"answered_max\":0.05},"
	"{\"setup\":\"direct\",\"phase\":\"outage\",\"window_s\":1,\"window_answered_min\":0.5},"
	"{\"setup\":\"direct\",\"phase\":\"healthy\",\"class\":\"interactive\",\"window_s\":1,"
	"\"window_answered_min\":1},"
	"{\"setup\":\"direct\",\"phase\":\"healthy\",\"class\":\"batch\",\"answered_min\":1},"
	"{\"setup\":\"retry\",\"phase\":\"healthy\",\"relative_to\":\"direct\","
	"\"latency_p99_ratio_max\":3,\"cost_overhead_max\":0.05},"
	"{\"setup\":\"retry\",\"phase\":\"outage\",\"extra_requests_max\":0},"
	"{\"setup\":\"direct\",\"phase\":\"healthy\",\"extra_requests_max\":0}]}";

/* The number at setups.SETUP.phases.PHASE[.classes.CLS].KEY[.SUB].mean of a stamp summary. */
static double stamp_num(const cJSON *top, const char *setup_name, const char *phase,
			const char *cls, const char *key, const char *sub)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(top, "setups"), setup_name),
			"phases"), phase);

	if (cls)
		v = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(v, "classes"), cls);
	v = cJSON_GetObjectItemCaseSensitive(v, key);
	if (sub)
		v = cJSON_GetObjectItemCaseSensitive(v, sub);
	v = cJSON_GetObjectItemCaseSensitive(v, "mean");
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

Test(chaos, classes_prices_and_relative_bounds, .timeout = 90)
{
	char out[600];
	char stamp[800];
	char path[1000];
	char err[8192];
	struct lg_proc g;
	cJSON *top;
	double cost;
	double ok;
	int rc;

	write_file(dir, "classes-cost.json", classes, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--time-scale",
				       "0.5", "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 80);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	stamp_dir("classes-cost", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);

	/* A direct setup is priced from its tokens; per answered request too. */
	cost = stamp_num(top, "direct", "healthy", NULL, "cost_usd", "total");
	ok = stamp_num(top, "direct", "healthy", NULL, "ok", NULL);
	cr_assert(cost > 0, "direct, healthy: no cost (%g)", cost);
	cr_assert_float_eq(stamp_num(top, "direct", "healthy", NULL, "cost_per_answered", NULL),
			   cost / ok, 1e-12);
	/* 14 req/s × 2 s, the batch stream's 4/s apart. */
	cr_assert_float_eq(stamp_num(top, "direct", "healthy", NULL, "requests", NULL), 28, 0);
	cr_assert_float_eq(stamp_num(top, "direct", "healthy", "batch", "requests", NULL), 8, 0);
	cr_assert_float_eq(stamp_num(top, "direct", "healthy", "interactive", "requests", NULL),
			   20, 0);
	/* One upstream request per client request, straight; the retries add more. */
	cr_assert_float_eq(stamp_num(top, "direct", "healthy", NULL, "extra_requests", NULL), 0, 0);
	cr_assert_gt(stamp_num(top, "retry", "outage", NULL, "extra_requests", NULL), 0.5);

	/* The gate: every new bound, both ways. */
	{
		const char *argv[] = { "chaos", "gate", stamp, NULL };

		cr_assert_eq(lg_spawn(&g, argv), 0);
		rc = lg_wait(&g, 30);
		cr_assert_eq(rc, 1, "chaos gate exited %d:\n%s%s", rc, g.out, g.err);
		cr_assert(gate_line(g.out, "PASS  expect  direct", "answered_share"), "%s", g.out);
		cr_assert(gate_line(g.out, "FAIL  expect  direct", "worst 0.5 s window 1"),
			  "%s", g.out);
		cr_assert(gate_line(g.out, "PASS  expect  direct  healthy", "window_answered_share"),
			  "%s", g.out);
		cr_assert(gate_line(g.out, "PASS  expect  retry   healthy", "vs direct"), "%s",
			  g.out);
		cr_assert(gate_line(g.out, "PASS  expect  retry   healthy", "cost_overhead"), "%s",
			  g.out);
		cr_assert(gate_line(g.out, "FAIL  expect  retry   outage", "extra_requests"), "%s",
			  g.out);
		cr_assert(gate_line(g.out, "PASS  expect  direct  healthy", "extra_requests"), "%s",
			  g.out);
		cr_assert(strstr(g.out, "8 checks, 2 failed"), "%s", g.out);
	}

	/* report.md's cost tables; chaos report recomputes the same summary. */
	{
		struct buf md = { 0 };

		read_report(stamp, &md);
		cr_assert(strstr(md.data, "## Cost"), "%s", md.data);
		cr_assert(strstr(md.data, "| retry | "), "%s", md.data);
		cr_assert(strstr(md.data, "### Cost by tenant (USD)\n\n| setup | acme | globex |"),
			  "%s", md.data);
		cr_assert(strstr(md.data, "| setup | chat | search | summaries |"), "%s", md.data);
		buf_free(&md);
	}
	assert_report_reproduces(stamp, top);
	cJSON_Delete(top);
}

/*
 * A detection study in 3 s: the primary hangs from 1 s to 2 s under 50
 * req/s; "passive" opens its breaker on 3 failures in a row (200 ms
 * attempts), "active" on 2 failed GET /models checks (every 100 ms, 100
 * ms timeout; its breaker's own rules off). The checks' phase against the
 * fault is drawn from the seed (the gateway's --t0): seed 2 puts it 78 ms
 * from the worst case, so active finds the hang at about 278 ms, after
 * passive's 240 (chaos sim says so to the millisecond).
 */
static const char detection[] =
	"{\"name\":\"detect\",\"duration_s\":3,\"seed\":2,"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":20,\"token_ms\":0,"
	"\"faults\":[{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2}]},"
	"{\"name\":\"secondary\",\"ttft_ms\":20,\"token_ms\":0}],"
	"\"phases\":[{\"name\":\"before\",\"from_s\":0,\"to_s\":1},"
	"{\"name\":\"fault\",\"from_s\":1,\"to_s\":2},{\"name\":\"after\",\"from_s\":2,\"to_s\":3}],"
	"\"detection\":{\"fault_phase\":\"fault\",\"recovery_phase\":\"after\"},"
	"\"load\":{\"rate\":50,\"timeout_ms\":2000},"
	"\"setups\":["
	"{\"name\":\"passive\",\"kind\":\"gateway\",\"config\":{"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":200},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\"}},"
	"\"breaker\":{\"consecutive_failures\":3,\"failure_ratio\":0,\"cooldown_ms\":300,"
	"\"cooldown_jitter\":0,\"half_open_probes\":1},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}},"
	"{\"name\":\"active\",\"kind\":\"gateway\",\"config\":{"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":200,"
	"\"health_check\":{\"interval_ms\":100,\"unhealthy_interval_ms\":100,"
	"\"timeout_ms\":100,\"fall\":2,\"rise\":2}},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\"}},"
	"\"breaker\":{\"consecutive_failures\":0,\"failure_ratio\":0,\"half_open_probes\":1},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}}]}";

/* The cells of the report.md table row that starts with "| NAME " into cells (up to n). */
static size_t md_row(const char *md, const char *name, char cells[][64], size_t n)
{
	char start[80];
	const char *p;
	size_t k = 0;

	snprintf(start, sizeof(start), "\n| %s ", name);
	p = strstr(md, "## Detection");
	cr_assert_not_null(p, "report.md has no Detection section");
	p = strstr(p, start);
	cr_assert_not_null(p, "no Detection row for %s", name);
	p += 2;
	while (*p && *p != '\n' && k < n) {
		size_t len = strcspn(p, "|\n");
		const char *a = p;
		const char *b = p + len;

		while (a < b && *a == ' ')
			a++;
		while (b > a && b[-1] == ' ')
			b--;
		snprintf(cells[k++], 64, "%.*s", (int)(b - a), a);
		p += len;
		if (*p == '|')
			p++;
		if (*p == '\n' || !*p)
			break;
	}
	return k;
}

Test(chaos, a_detection_study_reports_measured_beside_predicted, .timeout = 90)
{
	char stamp[800];
	char path[1000];
	char cells[10][64];
	struct buf md = { 0 };
	cJSON *top;
	double t;

	run_scenario("detect.json", detection, "detect", 80, stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);

	/* passive: 200 ms + 2 × 20 ms; the checks nowhere */
	t = stamp_num(top, "passive", "fault", NULL, "time_to_open_ms", NULL);
	cr_assert(t >= 200 && t < 600, "passive opened after %g ms", t);
	cr_assert_geq(stamp_num(top, "passive", "fault", NULL, "exposed", "requests"), 3);
	cr_assert_eq(stamp_num(top, "passive", "fault", NULL, "check_rate_per_s", NULL), 0);
	cr_assert(!isnan(stamp_num(top, "passive", "after", NULL, "time_to_close_ms", NULL)),
		  "the passive breaker never closed after the fault");
	/* active: 50 + (100 + 100) + 100 = 350 ms on average, at most 400 + noise */
	t = stamp_num(top, "active", "fault", NULL, "time_to_open_ms", NULL);
	cr_assert(t >= 200 && t < 800, "active opened after %g ms", t);
	cr_assert_gt(stamp_num(top, "active", "before", NULL, "check_rate_per_s", NULL), 5,
		     "checks every 100 ms are not logged as such");
	cr_assert_eq(stamp_num(top, "active", "before", NULL, "duplicate_work", "attempts"), 0,
		     "checks counted as duplicate work");
	cr_assert_gt(stamp_num(top, "active", "fault", NULL, "exposed", "requests"),
		     stamp_num(top, "passive", "fault", NULL, "exposed", "requests"));

	read_report(stamp, &md);
	cr_assert_eq(md_row(md.data, "passive", cells, 10), 9, "passive row");
	cr_assert_str_eq(cells[2], "240", "passive predicted %s", cells[2]);
	cr_assert_eq(md_row(md.data, "active", cells, 10), 9, "active row");
	cr_assert_str_eq(cells[2], "350", "active predicted %s", cells[2]);
	buf_free(&md);
	assert_report_reproduces(stamp, top);
	cJSON_Delete(top);
}

Test(chaos, streams_stalled_straight_at_the_primary, .timeout = 60)
{
	char out[600];
	char stamp[800];
	char path[1000];
	char err[8192];
	cJSON *top;
	cJSON *run;
	struct csv_table t;
	size_t i;
	size_t nstall = 0;
	int rc;

	write_file(dir, "short-stall.json", stalls, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };
		struct lg_proc p;

		cr_assert_eq(lg_spawn(&p, argv), 0);
		rc = lg_wait(&p, 50);
		cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, p.err);
		cr_assert(strstr(p.out, "\nstreams:\n"), "no streams table on the terminal:\n%s",
			  p.out);
	}
	stamp_dir("short-stall", stamp, sizeof(stamp));

	/* loadgen was given the stall timeout: the stall phase's streams stalled at 300 ms */
	snprintf(path, sizeof(path), "%s/direct/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");

		if (sched < 1000 || sched >= 2000)
			continue;
		nstall++;
		cr_assert_str_eq(csv_get(&t, i, "outcome"), "stalled", "row %zu: %s", i,
				 csv_get(&t, i, "error"));
		cr_assert_str_eq(csv_get(&t, i, "error"), "stream silent for 300 ms after 2 tokens");
	}
	csv_free(&t);
	cr_assert_eq(nstall, 20);

	snprintf(path, sizeof(path), "%s/direct/run-1/summary.json", stamp);
	run = read_json(path);
	cr_assert_float_eq(phase_num(run, "healthy", "streams"), 16, 1e-9);
	cr_assert_float_eq(phase_num(run, "healthy", "stalls"), 0, 1e-9);
	cr_assert_float_eq(phase_num(run, "healthy", "silent_breaks"), 0, 1e-9);
	cr_assert_float_eq(phase_num(run, "stall", "streams"), 20, 1e-9);
	cr_assert_float_eq(phase_num(run, "stall", "stalls"), 20, 1e-9);
	cr_assert_float_eq(phase_num(run, "stall", "silent_breaks"), 20, 1e-9);
	cr_assert_float_eq(phase_num(run, "stall", "error_events"), 0, 1e-9);
	cr_assert_geq(phase_num(run, "stall", "max_gap_ms"), 300);
	cr_assert_lt(phase_num(run, "stall", "max_gap_ms"), 600);
	cr_assert_lt(phase_num(run, "healthy", "max_gap_ms"), 100);
	cJSON_Delete(run);

	/* report.md: the Streams table, the stall phase's row among its rows */
	{
		struct buf md = { 0 };

		read_report(stamp, &md);
		cr_assert(strstr(md.data, "## Streams"), "%s", md.data);
		cr_assert(strstr(md.data, "| silent breaks |"), "%s", md.data);
		cr_assert(strstr(md.data, "| direct | stall   |      20 |     20 |"), "%s", md.data);
		buf_free(&md);
	}

	/* the gate: the healthy phase's bounds hold, the stall's breaks */
	{
		const char *argv[] = { "chaos", "gate", stamp, NULL };
		struct lg_proc g;

		cr_assert_eq(lg_spawn(&g, argv), 0);
		rc = lg_wait(&g, 30);
		cr_assert_eq(rc, 1, "chaos gate exited %d:\n%s%s", rc, g.out, g.err);
		cr_assert(gate_line(g.out, "PASS  expect  direct  healthy  silent_breaks", " 0  <=  0"),
			  "%s", g.out);
		cr_assert(gate_line(g.out, "PASS  expect  direct  healthy  ttft_ms.p95", "<=  500"),
			  "%s", g.out);
		cr_assert(gate_line(g.out, "FAIL  expect  direct  stall    silent_breaks", " 20  <=  0"),
			  "%s", g.out);
		cr_assert(strstr(g.out, "3 checks, 1 failed"), "%s", g.out);
	}

	/* chaos report recomputes the same */
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);
	{
		const char *argv[] = { "chaos", "report", stamp, NULL };
		cJSON *again;

		rc = run_program(argv, err, sizeof(err), 30);
		cr_assert_eq(rc, 0, "chaos report exited %d: %s", rc, err);
		again = read_json(path);
		cr_assert(cJSON_Compare(top, again, true),
			  "chaos report computed another stamp summary than the run did");
		cJSON_Delete(again);
	}
	cJSON_Delete(top);
}

Test(chaos, bad_scenario_exits_2_naming_the_key, .timeout = 20)
{
	static const char bad[] =
		"{\"duration_s\":4,\"providers\":[{\"name\":\"p\"}],\"load\":{\"rate\":5},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"nobody\"}]}";
	char err[4096];
	char out[600];
	int rc;

	write_file(dir, "bad.json", bad, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 15);
	}
	cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
	cr_assert(strstr(err, scenario), "the file is not named: %s", err);
	cr_assert(strstr(err, "setups[0].provider"), "the key is not named: %s", err);
	cr_assert_not(exists(out), "results were started for a bad scenario");
}

/*
 * A gateway setup whose config the gateway would refuse fails at chaos
 * run's start, exit 2, naming the file, the setup and the key, before a
 * process starts or a results folder is made; chaos list says the same.
 */
Test(chaos, a_bad_gateway_config_fails_before_anything_starts, .timeout = 20)
{
	static const char bad[] =
		"{\"name\":\"badgw\",\"duration_s\":2,\"providers\":[{\"name\":\"p\"}],"
		"\"load\":{\"rate\":5},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"},"
		"{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		"\"providers\":{\"p\":{\"base_url\":\"{upstream.p}\"}},"
		"\"breaker\":{\"consecutive_failurs\":3},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}}]}";
	char err[4096];
	char out[600];
	char want[800];
	int rc;

	write_file(dir, "badgw.json", bad, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	snprintf(want, sizeof(want), "%s: setups[1] \"gw\": config.breaker.consecutive_failurs: "
		 "unknown key", scenario);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 15);
	}
	cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
	cr_assert(strstr(err, want), "expected \"%s\" in: %s", want, err);
	/* The results folder is made before any process starts: none did. */
	cr_assert_not(exists(out), "results were started for a bad scenario");
	{
		const char *argv[] = { "chaos", "list", dir, NULL };

		rc = run_program(argv, err, sizeof(err), 15);
	}
	cr_assert_eq(rc, 2, "chaos list: exit %d: %s", rc, err);
	cr_assert(strstr(err, want), "chaos list: %s", err);
}

Test(chaos, a_crashing_setup_fails_the_run_with_its_log, .timeout = 40)
{
	/*
	 * The setup exits 2 at start, saying why on stderr. (Not the gateway:
	 * a config it would refuse is refused at the scenario's load now.)
	 */
	static const char crash[] =
		"{\"name\":\"crash\",\"duration_s\":2,\"providers\":[{\"name\":\"p\"}],"
		"\"load\":{\"rate\":5},"
		"\"setups\":[{\"name\":\"gw\",\"kind\":\"external\",\"command\":[\"/bin/sh\","
		"\"-c\",\"echo 'gw.json: colour: unknown key' >&2; exit 2\"],"
		"\"ready_url\":\"http://{listen}/healthz\",\"target\":\"http://{listen}/v1\"}]}";
	char err[8192];
	char out[600];
	char stamp[800];
	char path[1000];
	int rc;

	write_file(dir, "crash.json", crash, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 35);
	}
	cr_assert_eq(rc, 1, "exit %d: %s", rc, err);
	cr_assert(strstr(err, "gw / run 1 failed"), "%s", err);
	cr_assert(strstr(err, "exited with status 2"), "%s", err);
	cr_assert(strstr(err, "colour: unknown key"), "the gateway's log tail is not shown: %s", err);
	stamp_dir("crash", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/gw/run-1", stamp);
	cr_assert_not(exists(path), "a failed run was renamed as complete");
	snprintf(path, sizeof(path), "%s/gw/run-1.tmp", stamp);
	cr_assert(exists(path), "the failed run's files are gone");
}

/*
 * How many processes have d in their command line (the children of a run;
 * their guards, `chaos _guard PROGRAM…`, left out).
 */
static int processes_under(const char *d)
{
	struct dirent *e;
	DIR *proc = opendir("/proc");
	int n = 0;

	cr_assert_not_null(proc);
	while ((e = readdir(proc))) {
		char path[300];
		char cmd[4096];
		size_t len;
		size_t i;
		FILE *fp;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		len = fread(cmd, 1, sizeof(cmd) - 1, fp);
		fclose(fp);
		for (i = 0; i < len; i++) {
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		}
		cmd[len] = '\0';
		if (strstr(cmd, d) && !strstr(cmd, "chaos run") && !strstr(cmd, "chaos _guard"))
			n++;
	}
	closedir(proc);
	return n;
}

/*
 * A run's summary is work inside the runner's event loop: one that takes
 * seconds (issue 21: a setup that had recorded 700,000 requests) left
 * libuv's cached time seconds behind, and the next run's start deadline,
 * counted from it, had passed before the run began — "could not start by
 * t0". Here the first run's summary is held up for 3 s (more than
 * CHAOS_LEAD_MS) by a slow read, with no hook in the runner: a FIFO named
 * like a provider's log in the run's directory, which the summary opens
 * and reads (as it reads every mock-NAME.csv there) and which this test
 * answers, with a log's header, 3 s after the runner opened it. The
 * second run must start and complete.
 */
Test(chaos, a_run_starts_after_seconds_in_the_summary, .timeout = 60)
{
	static const char two[] =
		"{\"name\":\"slowsum\",\"duration_s\":1,\"providers\":[{\"name\":\"p\","
		"\"ttft_ms\":20}],\"load\":{\"rate\":20,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"a\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
	static const char header[] =
		"t_ms,request_id,streaming,fault,status,ttft_ms,dur_ms,tokens_out,outcome,kind\n";
	struct lg_proc p;
	char out[600];
	char parent[700];
	char stamp[800];
	char fifo[1000];
	char path[1000];
	double t;
	int fd = -1;
	int rc;

	write_file(dir, "slowsum.json", two, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--repeat", "2",
				       NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
	}
	/* The run's directory is made before its start line is written. */
	cr_assert(lg_await_stderr(&p, "run 1 of 2", 10000), "no start line: %s", p.err);
	snprintf(parent, sizeof(parent), "%s/slowsum", out);
	cr_assert_eq(tmpdir_only_entry(parent, stamp, sizeof(stamp)), 1);
	snprintf(fifo, sizeof(fifo), "%s/a/run-1.tmp/mock-slowdisk.csv", stamp);
	cr_assert_eq(mkfifo(fifo, 0644), 0, "mkfifo %s: %s", fifo, strerror(errno));
	/*
	 * A writer's non-blocking open succeeds once a reader has the FIFO
	 * open (or waits in open for a writer): the runner's summary of run 1.
	 * Polled: nothing else says when the runner reaches it.
	 */
	for (t = now_ms(); fd < 0 && now_ms() - t < 30000;) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK);
		if (fd < 0) {
			cr_assert_eq(errno, ENXIO, "open %s: %s", fifo, strerror(errno));
			usleep(10000);
		}
	}
	cr_assert_geq(fd, 0, "the runner never read %s: %s", fifo, p.err);
	/* The runner's loop is inside run 1's summary now: hold it there 3 s. */
	usleep(3000 * 1000);
	cr_assert_eq(write(fd, header, sizeof(header) - 1), (ssize_t)(sizeof(header) - 1));
	close(fd);
	rc = lg_wait(&p, 40);
	cr_assert_eq(rc, 0, "chaos run exited %d after a 3 s summary:\n%s", rc, p.err);
	cr_assert_null(strstr(p.err, "by t0"), "%s", p.err);
	snprintf(path, sizeof(path), "%s/a/run-2/requests.csv", stamp);
	cr_assert(exists(path), "no %s", path);
}

Test(chaos, ctrl_c_leaves_no_child, .timeout = 60)
{
	static const char longer[] =
		"{\"name\":\"long\",\"duration_s\":30,"
		"\"providers\":[{\"name\":\"p\",\"ttft_ms\":20},{\"name\":\"q\",\"ttft_ms\":20}],"
		"\"load\":{\"concurrency\":4,\"timeout_ms\":1000},"
		"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		"\"providers\":{\"p\":{\"base_url\":\"{upstream.p}\"},\"q\":{\"base_url\":\"{upstream.q}\"}},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"},"
		"{\"provider\":\"q\",\"model\":\"m\"}]}}}}]}";
	struct lg_proc p;
	char out[600];
	char stamp[800];
	char path[1000];
	double t;
	int rc;

	write_file(dir, "long.json", longer, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
	}
	cr_assert(lg_await_stderr(&p, "run 1 of 1", 10000), "no start line: %s", p.err);
	/* Wait until the run's four children are there: two mockprovs, the gateway, loadgen. */
	for (t = now_ms(); processes_under(dir) < 4 && now_ms() - t < 10000;)
		usleep(20000);	/* polling /proc: no event says a grandchild has started */
	cr_assert_eq(processes_under(dir), 4, "the run's children did not all start");
	kill(p.pid, SIGINT);
	rc = lg_wait(&p, 20);
	cr_assert_eq(rc, 130, "exit %d after SIGINT: %s", rc, p.err);
	cr_assert(strstr(p.err, "stopped by SIGINT"), "%s", p.err);
	cr_assert_eq(processes_under(dir), 0, "children outlived the runner");
	stamp_dir("long", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/gw/run-1", stamp);
	cr_assert_not(exists(path), "an interrupted run was renamed as complete");
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	cr_assert_not(exists(path), "an interrupted scenario has a summary");
}

/*
 * A scenario of one provider "p" (20 ms), 20 req/s for duration_s, and one
 * external setup running script with /bin/sh: the "gateway" is a mockprov
 * on {port}, whose config the script writes. Returns the scenario's path.
 */
static const char *external_scenario(const char *name, double duration_s, const char *script)
{
	char prog[300];
	char full[2048];
	cJSON *root = cJSON_CreateObject();
	cJSON *provs = cJSON_AddArrayToObject(root, "providers");
	cJSON *p = cJSON_CreateObject();
	cJSON *load = cJSON_AddObjectToObject(root, "load");
	cJSON *setups = cJSON_AddArrayToObject(root, "setups");
	cJSON *st = cJSON_CreateObject();
	cJSON *cmd = cJSON_AddArrayToObject(st, "command");
	char *text;

	bin_path("mockprov", prog, sizeof(prog));
	snprintf(full, sizeof(full),
		 "printf '{\"providers\":[{\"name\":\"x\",\"listen\":\"127.0.0.1:%%s\"}]}' {port} "
		 "> %s/x.json; %s", dir, script);
	/* The script names mockprov as MOCKPROV and the config as CONFIG. */
	cJSON_AddStringToObject(root, "name", name);
	cJSON_AddNumberToObject(root, "duration_s", duration_s);
	cJSON_AddStringToObject(p, "name", "p");
	cJSON_AddNumberToObject(p, "ttft_ms", 20);
	cJSON_AddItemToArray(provs, p);
	cJSON_AddNumberToObject(load, "rate", 20);
	cJSON_AddNumberToObject(load, "timeout_ms", 500);
	cJSON_AddStringToObject(st, "name", "ext");
	cJSON_AddStringToObject(st, "kind", "external");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	{
		struct buf b = { 0 };
		const char *s;
		char config[600];

		snprintf(config, sizeof(config), "%s/x.json --log-dir %s", dir, dir);
		for (s = full; *s; s++) {
			if (strncmp(s, "MOCKPROV", 8) == 0) {
				buf_puts(&b, prog);
				s += 7;
			} else if (strncmp(s, "CONFIG", 6) == 0) {
				buf_puts(&b, config);
				s += 5;
			} else {
				buf_append(&b, s, 1);
			}
		}
		cJSON_AddItemToArray(cmd, cJSON_CreateString(b.data));
		buf_free(&b);
	}
	cJSON_AddStringToObject(st, "ready_url", "http://{listen}/healthz");
	cJSON_AddStringToObject(st, "target", "http://{listen}/v1");
	cJSON_AddItemToArray(setups, st);
	text = cJSON_Print(root);
	write_file(dir, "ext.json", text, scenario, sizeof(scenario));
	free(text);
	cJSON_Delete(root);
	return scenario;
}

/* How many processes have needle in their command line. */
static int processes_with(const char *needle)
{
	return processes_under(needle);
}

Test(chaos, a_setups_descendants_are_stopped_too, .timeout = 60)
{
	char out[600];
	char err[8192];
	char script[256];
	char sleep_cmd[64];
	int rc;

	/*
	 * The wrapper starts a sleep that ignores SIGTERM, then becomes the
	 * "gateway". Its duration is this process's own, so a run of the same
	 * test elsewhere on the machine (another checkout's make test) is not
	 * counted: processes are looked for machine-wide.
	 */
	snprintf(sleep_cmd, sizeof(sleep_cmd), "sleep 299.%06d", (int)(getpid() % 1000000));
	snprintf(script, sizeof(script), "(trap '' TERM; exec %s) & exec MOCKPROV --config CONFIG",
		 sleep_cmd);
	external_scenario("descendants", 1.5, script);
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(processes_with(sleep_cmd), 0,
		     "the setup's sleep outlived the run:\n%s", err);
	cr_assert_eq(rc, 1, "a group that needed SIGKILL did not fail the run: %d\n%s", rc, err);
	cr_assert(strstr(err, "the setup did not stop within 5000 ms of SIGTERM"), "%s", err);
}

Test(chaos, an_unclean_stop_fails_the_run, .timeout = 60)
{
	char out[600];
	char err[8192];
	int rc;

	external_scenario("unclean", 1.5,
			  "MOCKPROV --config CONFIG & trap 'exit 3' TERM; wait");
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 1, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "exited with status 3 after SIGTERM"), "%s", err);
}

Test(chaos, a_kill_after_a_restart_still_waiting_wins, .timeout = 60)
{
	/*
	 * kill, restart, kill at the same time: the provider ends down. The
	 * old bug (the restart, waiting for the first kill's exit, brought it
	 * back after the second kill) showed when the three actions ran in one
	 * loop pass, which is usual but not certain.
	 */
	static const char race[] =
		"{\"name\":\"race\",\"duration_s\":2.5,\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		"\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"provider\":\"p\"},"
		"{\"at_s\":1,\"do\":\"restart\",\"provider\":\"p\"},"
		"{\"at_s\":1,\"do\":\"kill\",\"provider\":\"p\"}],"
		"\"load\":{\"rate\":20,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
	char stamp[800];
	char path[1000];
	struct csv_table t;
	size_t i;
	size_t late = 0;

	run_scenario("race.json", race, "race", 50, stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		if (lg_num(&t, i, "sched_ms") < 1300)
			continue;
		late++;
		cr_assert_str_eq(csv_get(&t, i, "outcome"), "refused",
				 "a request at %s ms was answered: the provider came back",
				 csv_get(&t, i, "sched_ms"));
	}
	cr_assert_gt(late, 10);
	csv_free(&t);
	snprintf(path, sizeof(path), "%s/d/run-1/mock-p.csv", stamp);
	cr_assert(exists(path), "the killed provider's log was not finished");
}

Test(chaos, an_action_never_runs_before_its_time, .timeout = 60)
{
	/*
	 * Three kills, the later two after a restart: a restart forks a
	 * mock, so the loop's cached time lags when the next kill is armed,
	 * and a timer from the clock fired early (measured 0.5 to 7 ms
	 * before; in CI a kill at 3000 ms opened a breaker at 2999, counted
	 * in the phase before the outage). The requests sent in the 100 ms
	 * before a kill (the provider answers in 100 ms) are in flight at
	 * it: each that failed must have failed at the kill's time or after.
	 * A restart has 1 s to listen again (ASan is slow to start).
	 */
	static const double kills[] = { 600, 2200, 3800 };
	struct buf sc = { 0 };
	char stamp[800];
	char path[1000];
	struct csv_table t;
	size_t k;
	size_t i;

	buf_printf(&sc, "{\"name\":\"early\",\"duration_s\":4.2,"
		   "\"providers\":[{\"name\":\"p\",\"ttft_ms\":100}],\"actions\":[");
	for (k = 0; k < sizeof(kills) / sizeof(kills[0]); k++) {
		buf_printf(&sc, "%s{\"at_s\":%g,\"do\":\"kill\",\"provider\":\"p\"}",
			   k ? "," : "", kills[k] / 1000);
		if (k + 1 < sizeof(kills) / sizeof(kills[0]))
			buf_printf(&sc, ",{\"at_s\":%g,\"do\":\"restart\",\"provider\":\"p\"}",
				   (kills[k] + 600) / 1000);
	}
	buf_printf(&sc, "],\"load\":{\"concurrency\":20,\"timeout_ms\":2000},"
		   "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}");
	cr_assert(sc.data);
	run_scenario("early.json", sc.data, "early", 50, stamp, sizeof(stamp));
	buf_free(&sc);
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	for (k = 0; k < sizeof(kills) / sizeof(kills[0]); k++) {
		double first = INFINITY;

		for (i = 1; i < t.nrows; i++) {
			double start = lg_num(&t, i, "start_ms");

			if (strcmp(csv_get(&t, i, "outcome"), "ok") != 0 &&
			    start >= kills[k] - 100 && start < kills[k])
				first = fmin(first, lg_num(&t, i, "end_ms"));
		}
		cr_assert(isfinite(first), "no request in flight broke at the kill at %g ms", kills[k]);
		cr_assert_geq(first, kills[k], "a request broke at %.3f ms, before the kill at %g ms",
			      first, kills[k]);
	}
	csv_free(&t);
}

/* When request id arrived at the provider (mock log t_ms, first row); NAN when it never did. */
static double mock_arrival(const struct csv_table *m, const char *id)
{
	size_t i;

	for (i = 1; i < m->nrows; i++) {
		if (strcmp(csv_get(m, i, "request_id"), id) == 0)
			return atof(csv_get(m, i, "t_ms"));
	}
	return NAN;
}

Test(chaos, a_restart_listens_at_its_time, .timeout = 60)
{
	/*
	 * A restart's process is started ahead (once the kill's has exited)
	 * and listens at the restart's time: not a boot later (24-59 ms when
	 * it was started at that time), and not before. The first restart
	 * comes 200 ms after its kill, less than the lead: that process starts
	 * on the kill's exit. Requests go every millisecond.
	 */
	static const double kill_ms[] = { 500, 1500 };
	static const double restart_ms[] = { 700, 2300 };
	static const char text[] =
		"{\"name\":\"relisten\",\"duration_s\":3,\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		"\"actions\":[{\"at_s\":0.5,\"do\":\"kill\",\"provider\":\"p\"},"
		"{\"at_s\":0.7,\"do\":\"restart\",\"provider\":\"p\"},"
		"{\"at_s\":1.5,\"do\":\"kill\",\"provider\":\"p\"},"
		"{\"at_s\":2.3,\"do\":\"restart\",\"provider\":\"p\"}],"
		"\"load\":{\"rate\":1000,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
	char stamp[800];
	char path[1000];
	struct csv_table t;
	struct csv_table m;
	size_t k;
	size_t i;

	run_scenario("relisten.json", text, "relisten", 50, stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	snprintf(path, sizeof(path), "%s/d/run-1/mock-p.csv", stamp);
	cr_assert_eq(csv_read(path, &m), 0);
	for (k = 0; k < 2; k++) {
		double last_refused = -1;
		size_t down = 0;

		for (i = 1; i < t.nrows; i++) {
			double start = lg_num(&t, i, "start_ms");
			bool ok = strcmp(csv_get(&t, i, "outcome"), "ok") == 0;

			if (start >= kill_ms[k] + 5 && start < restart_ms[k] - 0.5) {
				/*
				 * One sent just before the restart may still be answered
				 * when its client connects late (a loaded machine, a
				 * sanitizer build): the provider's log says when it arrived,
				 * which must not be before the restart.
				 */
				double arrived = ok ? mock_arrival(&m, csv_get(&t, i, "id")) : NAN;

				cr_assert(!ok || arrived >= restart_ms[k] - 0.5,
					  "a request sent at %.3f ms arrived at %.3f ms: the provider "
					  "listened before its restart at %g ms", start, arrived,
					  restart_ms[k]);
				down += !ok;
			}
			if (!ok && start >= restart_ms[k] && start < restart_ms[k] + 500)
				last_refused = fmax(last_refused, start);
		}
		cr_assert_gt(down, 100);
		cr_assert_lt(last_refused, restart_ms[k] + 15, "a request sent at %.3f ms was "
			     "refused: the restart at %g ms listened late", last_refused,
			     restart_ms[k]);
	}
	csv_free(&t);
	csv_free(&m);
}

Test(chaos, progress_line_on_a_terminal, .timeout = 60)
{
	static const char quick[] =
		"{\"name\":\"quick\",\"duration_s\":2.5,\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		"\"load\":{\"rate\":20,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
	struct lg_proc p;
	char out[600];
	int rc;

	write_file(dir, "quick.json", quick, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		cr_assert_eq(lg_spawn_tty(&p, argv), 0);
	}
	cr_assert(lg_await_stderr(&p, "quick / d / run 1  t=", 15000), "no progress line: %s", p.err);
	rc = lg_wait(&p, 30);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, p.err);
	cr_assert(strstr(p.err, "requests ") && strstr(p.err, "errors 0"), "%s", p.err);
	cr_assert(strstr(p.err, "\r\033[K"), "the line is not redrawn in place: %s", p.err);
}

/*
 * --time-scale ci runs a scenario at its ci.time_scale, and scripts/suite.sh
 * runs each scenario so, finding its baseline by the scale the stamp says
 * it ran at: none there, the gate alone (exit 0); NAME-0.5.json there, it
 * is used (an unreadable one fails the suite, named).
 */
Test(chaos, time_scale_ci_and_the_suite, .timeout = 60)
{
	static const char tiny[] =
		"{\"name\":\"tiny\",\"duration_s\":2,"
		"\"ci\":{\"time_scale\":0.5,\"why\":\"a test\"},"
		"\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		"\"load\":{\"rate\":10,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}],"
		"\"expect\":[{\"setup\":\"d\",\"phase\":\"*\",\"error_rate_max\":0}]}";
	static const char *const suite[] = { "/bin/sh", "-c", "scripts/suite.sh >&2", NULL };
	char scn_dir[400];
	char base_dir[500];
	char out[600];
	char err[16384];
	char stamp[800];
	char path[1000];
	char junk[1000];
	cJSON *top;
	int rc;

	snprintf(scn_dir, sizeof(scn_dir), "%s/scn", dir);
	cr_assert_eq(mkdir(scn_dir, 0755), 0);
	write_file(scn_dir, "tiny.json", tiny, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	cr_assert_eq(setenv("SCENARIOS", "tiny", 1), 0);
	cr_assert_eq(setenv("SCENARIO_DIR", scn_dir, 1), 0);
	cr_assert_eq(setenv("OUT", out, 1), 0);
	unsetenv("SCALE");
	unsetenv("BASELINE_DIR");
	rc = run_program(suite, err, sizeof(err), 40);
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "(time scale 0.5)"), "%s", err);
	/* The real run, simulated, and the two compared. */
	cr_assert(strstr(err, "== chaos compare"), "%s", err);
	cr_assert(strstr(err, "checks, "), "%s", err);
	stamp_dir("tiny", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(top, "time_scale")->valuedouble, 0.5,
			   0);
	cJSON_Delete(top);

	snprintf(base_dir, sizeof(base_dir), "%s/baselines", scn_dir);
	cr_assert_eq(mkdir(base_dir, 0755), 0);
	write_file(base_dir, "tiny-1.json", "not the one for this scale", junk, sizeof(junk));
	write_file(base_dir, "tiny-0.5.json", "not a baseline", junk, sizeof(junk));
	rc = run_program(suite, err, sizeof(err), 40);
	cr_assert_eq(rc, 1, "the baseline for 0.5 was not used: exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "tiny-0.5.json"), "%s", err);
	cr_assert_not(strstr(err, "tiny-1.json"), "%s", err);
}

/* A bad ci block fails --time-scale ci at once (exit 2, the key named); a bad scale is a usage error. */
Test(chaos, time_scale_ci_refusals, .timeout = 20)
{
	char err[4096];
	char out[600];
	int rc;

	write_file(dir, "badci.json", "{\"duration_s\":2,\"ci\":{\"time_scale\":20,\"why\":\"w\"},"
		   "\"providers\":[{\"name\":\"p\"}],\"load\":{\"rate\":5},"
		   "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}",
		   scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--time-scale", "ci",
				       NULL };

		rc = run_program(argv, err, sizeof(err), 15);
	}
	cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
	cr_assert(strstr(err, scenario) && strstr(err, "ci.time_scale: expected a number above 0 "
						     "and at most 10, got 20"), "%s", err);
	cr_assert_not(exists(out));
	{
		const char *argv[] = { "chaos", "run", scenario, "--time-scale", "CI", NULL };

		rc = run_program(argv, err, sizeof(err), 15);
	}
	cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
	cr_assert(strstr(err, "--time-scale: expected a number above 0 and at most 100, or ci, "
			 "got \"CI\""), "%s", err);
}

Test(chaos, repeat_and_one_setup, .timeout = 60)
{
	static const char two[] =
		"{\"name\":\"two\",\"duration_s\":1.5,\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		"\"load\":{\"rate\":20,\"timeout_ms\":500},"
		"\"setups\":[{\"name\":\"a\",\"kind\":\"direct\",\"provider\":\"p\"},"
		"{\"name\":\"b\",\"kind\":\"client_retry\",\"provider\":\"p\"}]}";
	char out[600];
	char err[8192];
	char stamp[800];
	char path[1000];
	const cJSON *req;
	cJSON *top;
	int rc;

	write_file(dir, "two.json", two, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--repeat", "2",
				       "--setup", "b", "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	stamp_dir("two", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/b/run-1/requests.csv", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/b/run-2/requests.csv", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/a", stamp);
	cr_assert_not(exists(path), "--setup b ran setup a too");
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);
	req = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(top, "setups"), "b"), "totals"),
		"requests");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(req, "n")->valueint, 2,
		     "the combined figure is not over 2 runs");
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(req, "mean")->valuedouble, 30, 1e-9,
			   "20 req/s for 1.5 s, each run");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(
			       cJSON_GetObjectItemCaseSensitive(top, "setups"), "a"));
	cJSON_Delete(top);
}

Test(chaos, an_external_gateway_slow_to_start, .timeout = 60)
{
	char out[600];
	char err[8192];
	char stamp[800];
	char path[1000];
	struct csv_table t;
	int rc;

	/* 3 s before it listens: longer than the 2 s lead the runner gives its own programs. */
	external_scenario("slow-start", 1.5, "sleep 3; exec MOCKPROV --config CONFIG");
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	stamp_dir("slow-start", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/ext/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.nrows - 1, 30, "%zu requests", t.nrows - 1);
	cr_assert_eq(lg_count(&t, "outcome", "ok"), 30, "the load did not wait for the gateway");
	csv_free(&t);
}

/* ---- a runner that dies ---- */

/* Whether pid is a live process (a zombie, dead but not yet reaped, is not). */
static bool alive(pid_t pid)
{
	char path[64];
	char stat[512];
	char *paren;
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return false;
	n = fread(stat, 1, sizeof(stat) - 1, fp);
	fclose(fp);
	stat[n] = '\0';
	paren = strrchr(stat, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/*
 * The live processes, but not skip, with needle in their command line
 * (at its start, with at_start), into pids (at most max).
 */
static int live_pids(const char *needle, bool at_start, pid_t skip, pid_t *pids, int max)
{
	struct dirent *e;
	DIR *proc = opendir("/proc");
	int n = 0;

	cr_assert_not_null(proc);
	while ((e = readdir(proc)) && n < max) {
		char path[300];
		char cmd[4096];
		pid_t pid;
		size_t len;
		size_t i;
		FILE *fp;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		pid = (pid_t)strtol(e->d_name, NULL, 10);
		if (pid == skip || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		len = fread(cmd, 1, sizeof(cmd) - 1, fp);
		fclose(fp);
		for (i = 0; i < len; i++) {
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		}
		cmd[len] = '\0';
		if ((at_start ? strncmp(cmd, needle, strlen(needle)) == 0 : !!strstr(cmd, needle)) &&
		    alive(pid))
			pids[n++] = pid;
	}
	closedir(proc);
	return n;
}

/* Every regular file under d with its size, a line each, onto out (for telling whether one grows). */
static void file_sizes(const char *d, struct buf *out)
{
	struct dirent *e;
	DIR *dp = opendir(d);

	cr_assert_not_null(dp, "no %s", d);
	while ((e = readdir(dp))) {
		char path[1200];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			file_sizes(path, out);
		else if (S_ISREG(st.st_mode))
			buf_printf(out, "%s %lld\n", path, (long long)st.st_size);
	}
	closedir(dp);
}

/*
 * The runner p has started the children of its run — want processes with
 * dir in their command line besides their guards, and also_pid (not 0)
 * alive — and loadgen is recording; SIGKILL it. Then every one of them is
 * gone within 2 s (each is killed here if not, so none outlives the
 * test), the stamp has a run-1.tmp and no summary, and no file of the
 * stamp grows afterwards.
 */
static void kill_runner_and_check(struct lg_proc *p, const char *name, const char *setup_name,
				  int want, pid_t also_pid)
{
	pid_t pids[64];
	char stamp[800];
	char path[1000];
	struct buf before = { 0 };
	struct buf after = { 0 };
	struct stat st;
	double t;
	int n;
	int i;
	int left;

	cr_assert(lg_await_stderr(p, "run 1 of 1", 15000), "no start line: %s", p->err);
	stamp_dir(name, stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/%s/run-1.tmp/requests.csv.tmp", stamp, setup_name);
	/* Polling /proc and the file: no event says a grandchild has started or written. */
	for (t = now_ms(); now_ms() - t < 15000; usleep(20000)) {
		if (processes_under(dir) >= want && (also_pid == 0 || alive(also_pid)) &&
		    stat(path, &st) == 0 && st.st_size > 0)
			break;
	}
	cr_assert_geq(processes_under(dir), want, "the run's children did not all start: %s",
		      p->err);
	cr_assert(stat(path, &st) == 0 && st.st_size > 0, "loadgen is not recording");
	n = live_pids(dir, false, p->pid, pids, 60);
	if (also_pid)
		pids[n++] = also_pid;

	kill(p->pid, SIGKILL);
	cr_assert_eq(lg_wait(p, 10), 128 + SIGKILL);
	t = now_ms();
	do {
		for (left = 0, i = 0; i < n; i++)
			left += alive(pids[i]);
		if (left)
			usleep(10000);	/* polling other processes' deaths: nothing to wait on */
	} while (left && now_ms() - t < 2000);
	for (i = 0; left && i < n; i++)
		kill(pids[i], SIGKILL);	/* the old runner's orphans: not left running */
	cr_assert_eq(left, 0, "%d of the run's %d processes outlived the runner by 2 s", left, n);

	snprintf(path, sizeof(path), "%s/%s/run-1.tmp", stamp, setup_name);
	cr_assert(exists(path), "the run's files are not left as run-1.tmp");
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	cr_assert_not(exists(path), "a killed runner's stamp has a summary");
	/* No event tells that nothing happens: watch the files for a while. */
	file_sizes(stamp, &before);
	usleep(300000);
	file_sizes(stamp, &after);
	cr_assert_str_eq(after.data, before.data, "a file of the stamp still grows");
	buf_free(&before);
	buf_free(&after);
}

Test(chaos, a_killed_runner_takes_its_children, .timeout = 60)
{
	static const char longer[] =
		"{\"name\":\"orphans\",\"duration_s\":30,"
		"\"providers\":[{\"name\":\"p\",\"ttft_ms\":20},{\"name\":\"q\",\"ttft_ms\":20}],"
		"\"load\":{\"concurrency\":4,\"timeout_ms\":1000},"
		"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		"\"providers\":{\"p\":{\"base_url\":\"{upstream.p}\"},\"q\":{\"base_url\":\"{upstream.q}\"}},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"},"
		"{\"provider\":\"q\",\"model\":\"m\"}]}}}}]}";
	struct lg_proc p;
	char out[600];

	write_file(dir, "orphans.json", longer, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
	}
	/* Two mockprovs, the gateway, loadgen. */
	kill_runner_and_check(&p, "orphans", "gw", 4, 0);
}

Test(chaos, a_killed_runner_takes_a_setups_own_children, .timeout = 60)
{
	struct lg_proc p;
	char out[600];
	char script[256];
	char sleep_cmd[64];
	pid_t sleeper[2];
	double t;

	/* The external setup's sh leaves a sleep of its own (its duration: this test's mark). */
	snprintf(sleep_cmd, sizeof(sleep_cmd), "sleep 298.%06d", (int)(getpid() % 1000000));
	snprintf(script, sizeof(script), "%s & exec MOCKPROV --config CONFIG", sleep_cmd);
	external_scenario("orphans-ext", 30, script);
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
	}
	/* The sleep itself: the setup's sh and its guard have the command in theirs too. */
	for (t = now_ms(); live_pids(sleep_cmd, true, 0, sleeper, 2) < 1 && now_ms() - t < 15000;)
		usleep(20000);	/* polling /proc: no event says a grandchild has started */
	cr_assert_eq(live_pids(sleep_cmd, true, 0, sleeper, 2), 1, "the setup's sleep did not start");
	/* The provider's mockprov, the setup's, loadgen; and the sleep. */
	kill_runner_and_check(&p, "orphans-ext", "ext", 3, sleeper[0]);
}

/* ---- files that cannot be written ---- */

/*
 * lg_spawn with the child's file size limit at limit bytes, so that a
 * write past it fails as on a full disk (the runner ignores SIGXFSZ
 * itself; its children get it back at its default).
 */
static void spawn_limited(struct lg_proc *p, const char *const argv[], rlim_t limit)
{
	struct rlimit old;
	struct rlimit lim;
	int rc;

	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = limit;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	rc = lg_spawn(p, argv);
	setrlimit(RLIMIT_FSIZE, &old);
	cr_assert_eq(rc, 0);
}

Test(chaos, a_child_explains_itself_when_its_log_cannot_be_written, .timeout = 60)
{
	struct lg_proc p;
	char out[600];
	int rc;

	/*
	 * The setup writes 20 KB of stderr, then why it gives up: its log,
	 * under a 16 KiB file size limit, cannot take the end, so only the
	 * runner's memory of its stderr can say why.
	 */
	external_scenario("last-words", 1.5,
			  "i=0; while [ $i -lt 2000 ]; do echo filler line $i >&2; i=$((i+1)); "
			  "done; echo 'FATAL: cannot bind port 1: a test' >&2; exit 3");
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		spawn_limited(&p, argv, 16384);
	}
	rc = lg_wait(&p, 50);
	cr_assert_eq(rc, 1, "exit %d:\n%s", rc, p.err);
	cr_assert(strstr(p.err, "setup (external.log) exited with status 3"), "%s", p.err);
	cr_assert(strstr(p.err, "filler line 1999\nFATAL: cannot bind port 1: a test"),
		  "the setup's last stderr lines are not in the error:\n%s", p.err);
	cr_assert(strstr(p.err, "external.log could not be written: File too large"), "%s",
		  p.err);
}

/* A run of 5 requests in 1 s straight at one provider, named name. */
static void tiny_scenario(const char *name)
{
	char text[512];
	char file[128];

	snprintf(text, sizeof(text),
		 "{\"name\":\"%s\",\"duration_s\":1,\"providers\":[{\"name\":\"p\",\"ttft_ms\":20}],"
		 "\"load\":{\"rate\":5,\"timeout_ms\":500},"
		 "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}", name);
	snprintf(file, sizeof(file), "%s.json", name);
	write_file(dir, file, text, scenario, sizeof(scenario));
}

/* DIR/TOP and then "/d0123456789" over and over, to at least len bytes. */
static void long_path(char *out, size_t cap, const char *top, size_t len)
{
	size_t n = (size_t)snprintf(out, cap, "%s/%s", dir, top);

	while (n < len && n + 13 < cap)
		n += (size_t)snprintf(out + n, cap - n, "/d0123456789");
}

/*
 * --out longer than any fixed buffer the runner had (1,024 bytes for the
 * stamp, 1,200 for a run): the run works, every file where it belongs. One
 * too long for the system is refused at once, exit 2, --out named, with
 * nothing made.
 */
Test(chaos, a_long_out_path_works_and_a_too_long_one_is_refused, .timeout = 60)
{
	char out[5000];
	char path[5400];
	char stamp[5200];
	char err[16384];
	struct dirent *e;
	DIR *d;
	int n = 0;
	int rc;

	tiny_scenario("longpath");
	long_path(out, sizeof(out), "x", 1100);
	cr_assert_gt(strlen(out), 1100);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 40);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	snprintf(path, sizeof(path), "%s/longpath", out);
	d = opendir(path);
	cr_assert_not_null(d, "no %s", path);
	for (e = readdir(d); e; e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(stamp, sizeof(stamp), "%.5000s/%.100s", path, e->d_name);
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 1, "%d stamps", n);
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/scenario.json", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/d/run-1/mock-p.csv", stamp);
	cr_assert(exists(path), "no %s", path);
	snprintf(path, sizeof(path), "%s/d/run-1/summary.json", stamp);
	cr_assert(exists(path), "no %s", path);

	long_path(out, sizeof(out), "y", 4100);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 20);
	}
	cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "chaos: --out: ") && strstr(err, "is too long") &&
		  strstr(err, "/d0123456789/d0123456789"), "%s", err);
	snprintf(path, sizeof(path), "%s/y", dir);
	cr_assert_not(exists(path), "the refused run made its folders");
}

/*
 * A stamp under a path longer than the fixed buffers report and plot had
 * (1,200 bytes): chaos run draws its plots there, and chaos report and
 * chaos plot work on it, every file where it belongs. A stamp path too
 * long for the system is a clear error, exit 2, naming why.
 */
Test(chaos, report_and_plot_under_a_long_stamp_path, .timeout = 60)
{
	char out[5000];
	char path[5400];
	char stamp[5200];
	char err[16384];
	struct dirent *e;
	DIR *d;
	int rc;

	tiny_scenario("longstamp");
	long_path(out, sizeof(out), "z", 1301);
	cr_assert_gt(strlen(out), 1300);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 40);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	cr_assert_null(strstr(err, "no plots"), "%s", err);
	snprintf(path, sizeof(path), "%s/longstamp", out);
	d = opendir(path);
	cr_assert_not_null(d, "no %s", path);
	stamp[0] = '\0';
	for (e = readdir(d); e; e = readdir(d)) {
		if (e->d_name[0] != '.')
			snprintf(stamp, sizeof(stamp), "%.5000s/%.100s", path, e->d_name);
	}
	closedir(d);
	cr_assert(stamp[0], "no stamp under %s", path);
	snprintf(path, sizeof(path), "%s/plots/latency.png", stamp);
	cr_assert(exists(path), "chaos run drew no %s", path);

	snprintf(path, sizeof(path), "%s/report.md", stamp);
	cr_assert_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/d/run-1/summary.json", stamp);
	cr_assert_eq(unlink(path), 0);
	{
		const char *argv[] = { "chaos", "report", stamp, NULL };

		rc = run_program(argv, err, sizeof(err), 20);
	}
	cr_assert_eq(rc, 0, "chaos report: exit %d:\n%s", rc, err);
	cr_assert(exists(path), "chaos report did not rewrite %s", path);
	snprintf(path, sizeof(path), "%s/report.md", stamp);
	cr_assert(exists(path), "chaos report did not write %s", path);

	snprintf(path, sizeof(path), "%s/plots/latency.png", stamp);
	cr_assert_eq(unlink(path), 0);
	{
		const char *argv[] = { "chaos", "plot", stamp, NULL };

		rc = run_program(argv, err, sizeof(err), 30);
	}
	cr_assert_eq(rc, 0, "chaos plot: exit %d:\n%s", rc, err);
	cr_assert(exists(path), "chaos plot did not draw %s", path);

	long_path(out, sizeof(out), "z", 4200);
	{
		const char *argv[] = { "chaos", "report", out, NULL };

		rc = run_program(argv, err, sizeof(err), 20);
	}
	cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "is too long") && strstr(err, "/d0123456789/d0123456789"),
		  "%s", err);
	{
		const char *argv[] = { "chaos", "plot", out, NULL };

		rc = run_program(argv, err, sizeof(err), 20);
	}
	cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "too long") && strstr(err, "/d0123456789/d0123456789"), "%s", err);
}

/* chaos run of the scenario under a file size limit: exit 1. */
static void run_limited(rlim_t limit, struct lg_proc *p)
{
	char out[600];
	int rc;

	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		spawn_limited(p, argv, limit);
	}
	rc = lg_wait(p, 50);
	cr_assert_eq(rc, 1, "exit %d:\n%s", rc, p->err);
}

/* The run-1 summary.json or the stamp's under a file size limit: exit 1, the .tmp named and kept. */
Test(chaos, files_too_large_fail_the_run_and_keep_their_tmp_names, .timeout = 60)
{
	struct lg_proc p;
	char stamp[800];
	char path[1000];

	/*
	 * 4 KiB: more than any file of the children (under 2 KB) and the
	 * scenario's copy, less than the run's summary.json (about 15 KB).
	 */
	tiny_scenario("tiny4k");
	run_limited(4096, &p);
	stamp_dir("tiny4k", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "cannot write %s/d/run-1.tmp/summary.json.tmp: File too large",
		 stamp);
	cr_assert(strstr(p.err, path), "no \"%s\" in:\n%s", path, p.err);
	snprintf(path, sizeof(path), "%s/d/run-1.tmp/summary.json.tmp", stamp);
	cr_assert(exists(path), "the .tmp is not kept");
	snprintf(path, sizeof(path), "%s/d/run-1.tmp/summary.json", stamp);
	cr_assert_not(exists(path), "a summary.json that could not be written has its final name");
	snprintf(path, sizeof(path), "%s/d/run-1", stamp);
	cr_assert_not(exists(path), "the run was renamed as complete");

	/* 32 KiB: the run's summary (about 15 KB) fits, the stamp's (about 60 KB) does not. */
	tiny_scenario("tiny32k");
	run_limited(32768, &p);
	stamp_dir("tiny32k", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "chaos: cannot write %s/summary.json.tmp: File too large",
		 stamp);
	cr_assert(strstr(p.err, path), "no \"%s\" in:\n%s", path, p.err);
	snprintf(path, sizeof(path), "%s/summary.json.tmp", stamp);
	cr_assert(exists(path), "the .tmp is not kept");
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	cr_assert_not(exists(path), "a summary.json that could not be written has its final name");
	snprintf(path, sizeof(path), "%s/report.md", stamp);
	cr_assert_not(exists(path), "a report was written without its summary");
	snprintf(path, sizeof(path), "%s/d/run-1/summary.json", stamp);
	cr_assert(exists(path), "the run itself completed");
}

/* The whole file at path, or NULL (the caller frees it). */
static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	struct buf b = { 0 };
	char chunk[4096];
	size_t n;

	if (!fp)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	return b.data ? buf_steal(&b) : strdup("");
}

/*
 * Runs argv (a chaos command) with FILE.tmp a link to /dev/full (a write
 * there fails with ENOSPC, a real full disk): it exits 1 naming FILE.tmp
 * and the error, the link is still there, and each of the keep files
 * (final names, NULL-terminated) is as it was.
 */
static void full_disk_at(const char *const argv[], const char *file, const char *const keep[])
{
	char tmp[1100];
	char want[1200];
	char err[8192];
	char *before[8];
	struct stat st;
	int rc;
	int i;

	for (i = 0; keep[i]; i++)
		before[i] = slurp(keep[i]);
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	cr_assert_eq(symlink("/dev/full", tmp), 0, "%s: %s", tmp, strerror(errno));
	rc = run_program(argv, err, sizeof(err), 30);
	cr_assert_eq(rc, 1, "%s %s with %s full: exit %d:\n%s", argv[1], argv[2], tmp, rc, err);
	snprintf(want, sizeof(want), "cannot write %s: No space left on device", tmp);
	cr_assert(strstr(err, want), "no \"%s\" in:\n%s", want, err);
	cr_assert_eq(lstat(tmp, &st), 0, "%s is not kept", tmp);
	for (i = 0; keep[i]; i++) {
		char *now = slurp(keep[i]);

		if (before[i])
			cr_assert(now && strcmp(now, before[i]) == 0, "%s changed", keep[i]);
		else
			cr_assert_null(now, "%s was made", keep[i]);
		free(now);
		free(before[i]);
	}
	unlink(tmp);
}

Test(chaos, report_gate_and_plot_on_a_full_disk, .timeout = 90)
{
	char out[600];
	char stamp[800];
	char run_sum[1000];
	char sum[1000];
	char md[1000];
	char base[1000];
	char dat[1000];
	char err[8192];
	int rc;

	tiny_scenario("full");
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	stamp_dir("full", stamp, sizeof(stamp));
	snprintf(run_sum, sizeof(run_sum), "%s/d/run-1/summary.json", stamp);
	snprintf(sum, sizeof(sum), "%s/summary.json", stamp);
	snprintf(md, sizeof(md), "%s/report.md", stamp);
	snprintf(base, sizeof(base), "%s/baseline.json", dir);
	snprintf(dat, sizeof(dat), "%s/plots/data/answered-d.dat", stamp);
	{
		const char *report[] = { "chaos", "report", stamp, NULL };
		const char *gate[] = { "chaos", "gate", stamp, "--save-baseline", base, NULL };
		const char *plot[] = { "chaos", "plot", stamp, NULL };
		const char *const keep[] = { run_sum, sum, md, base, dat, NULL };

		/* What chaos report writes (the stamp's summary in its own key order). */
		rc = run_program(report, err, sizeof(err), 30);
		cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
		/* It writes each run's summary, the stamp's, then report.md. */
		full_disk_at(report, run_sum, keep);
		full_disk_at(report, sum, keep);
		full_disk_at(report, md, keep);
		full_disk_at(gate, base, keep);
		full_disk_at(plot, dat, keep);
	}
}

/*
 * The failover traps from real files, 2 s at 20 req/s asking for JSON
 * (response_format json_object): provider a answers half its requests
 * with prose (bad_content), b every one well. "checked" fails a's prose
 * over to b (the contract is checked); "alone" has a alone and answers a
 * static text when a's answer breaks the contract and nothing else can.
 */
static const char traps[] =
	"{\"name\":\"traps\",\"duration_s\":2,"
	"\"providers\":[{\"name\":\"a\",\"ttft_ms\":20,\"token_ms\":0,"
	"\"faults\":[{\"kind\":\"bad_content\",\"violation\":\"prose\",\"probability\":0.5,"
	"\"from_s\":0,\"to_s\":2}]},{\"name\":\"b\",\"ttft_ms\":20,\"token_ms\":0}],"
	"\"load\":{\"timeout_ms\":1500,\"mix\":{\"streams\":[{\"name\":\"ask\",\"rate\":20,"
	"\"response_format\":{\"type\":\"json_object\"}}]}},"
	"\"setups\":[{\"name\":\"checked\",\"kind\":\"gateway\",\"config\":{"
	"\"providers\":{\"a\":{\"base_url\":\"{upstream.a}\"},\"b\":{\"base_url\":\"{upstream.b}\"}},"
	"\"breaker\":{\"enabled\":false},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"m\"},"
	"{\"provider\":\"b\",\"model\":\"m\"}]}}}},"
	"{\"name\":\"alone\",\"kind\":\"gateway\",\"config\":{"
	"\"providers\":{\"a\":{\"base_url\":\"{upstream.a}\"}},\"breaker\":{\"enabled\":false},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"m\"}],"
	"\"degraded\":{\"mode\":\"static\",\"content\":\"{}\"}}}}}],"
	"\"expect\":[{\"setup\":\"checked\",\"phase\":\"all\",\"broken_answers_max\":0,"
	"\"contract_violations_min\":5},"
	"{\"setup\":\"alone\",\"phase\":\"all\",\"degraded_min\":5,\"answered_min\":1}]}";

Test(chaos, the_failover_traps_from_real_files, .timeout = 60)
{
	char out[600];
	char stamp[800];
	char path[1000];
	char err[8192];
	struct lg_proc g;
	struct buf md = { 0 };
	const cJSON *ev;
	cJSON *top;
	cJSON *run;
	double violations;
	int rc;

	write_file(dir, "traps.json", traps, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 40);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	stamp_dir("traps", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	top = read_json(path);

	/* Every broken answer of a's was caught, and logged by the gateway. */
	violations = stamp_num(top, "checked", "all", NULL, "contract", "violations");
	cr_assert_geq(violations, 5, "40 requests, half of a's broken: %g", violations);
	cr_assert_float_eq(stamp_num(top, "checked", "all", NULL, "contract", "caught"),
			   violations, 0);
	cr_assert_float_eq(stamp_num(top, "checked", "all", NULL, "contract",
				     "gateway_violations"), violations, 0);
	cr_assert_float_eq(stamp_num(top, "checked", "all", NULL, "contract", "reached_clients"),
			   0, 0);
	cr_assert_float_eq(stamp_num(top, "checked", "all", NULL, "answered_share", NULL), 1, 0);
	/* The violation lines are no breaker changes. */
	snprintf(path, sizeof(path), "%s/checked/run-1/summary.json", stamp);
	run = read_json(path);
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(run, "breaker_transitions"))
		cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(ev, "from"));
	cJSON_Delete(run);
	/* Alone, a's broken answers became static ones: answered, no provider's, never billed. */
	cr_assert_geq(stamp_num(top, "alone", "all", NULL, "degraded", "static"), 5);
	cr_assert_float_eq(stamp_num(top, "alone", "all", NULL, "answered_share", NULL), 1, 0);
	cr_assert_float_eq(stamp_num(top, "alone", "all", NULL, "fallback_share", NULL), 0, 0);
	cr_assert_float_eq(stamp_num(top, "alone", "all", NULL, "contract", "reached_clients"), 0,
			   0);
	{
		const char *argv[] = { "chaos", "gate", stamp, NULL };

		cr_assert_eq(lg_spawn(&g, argv), 0);
		rc = lg_wait(&g, 30);
		cr_assert_eq(rc, 0, "chaos gate exited %d:\n%s%s", rc, g.out, g.err);
		cr_assert(strstr(g.out, "4 checks, 0 failed"), "%s", g.out);
	}
	read_report(stamp, &md);
	cr_assert(strstr(md.data, "## Contracts"), "%s", md.data);
	cr_assert(strstr(md.data, "## Degraded answers"), "%s", md.data);
	cr_assert(strstr(md.data, "## Breaker opens"), "%s", md.data);
	buf_free(&md);
	assert_report_reproduces(stamp, top);
	cJSON_Delete(top);
}
