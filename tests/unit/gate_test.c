/*
 * chaos gate: every expect bound holds and breaks (the streams' too),
 * judged on the worst of the repeats; figures with no value fail; setup globs and "*" phases;
 * a baseline compared at the edges of its tolerances, with setups or
 * phases missing and of another scenario or scale; and the command's exit
 * status, table and --save-baseline round trip. Summaries are built the
 * way chaos run builds them: per-run figures folded by stats_combine.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/gate.h"
#include "tests/support/tmpdir.h"
#include "runner/stats.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "gate"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(gate, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(gate_baseline, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(gate_command, .init = setup, .fini = teardown, .timeout = 10);

/* ---- files ---- */

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir, name);
}

/* The whole of DIR/name (malloc'ed), or NULL when there is no such file. */
static char *read_file(const char *name)
{
	return tmpdir_read(dir, name);
}

static void write_json(const char *name, const cJSON *root)
{
	char *text = cJSON_Print(root);

	cr_assert_not_null(text);
	write_file(name, text);
	free(text);
}

/* ---- scenarios ---- */

/* Three setups, phases healthy [0,15) and outage [15,45); expect is the array's text. */
static void write_scenario(const char *name, const char *expect)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "{\"name\":\"gt\",\"duration_s\":60,"
		 " \"providers\":[{\"name\":\"primary\",\"ttft_ms\":200}],"
		 " \"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":15},"
		 "            {\"name\":\"outage\",\"from_s\":15,\"to_s\":45}],"
		 " \"load\":{\"concurrency\":2},"
		 " \"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
		 "            {\"name\":\"breaker-on\",\"kind\":\"direct\",\"provider\":\"primary\"},"
		 "            {\"name\":\"breaker-off\",\"kind\":\"direct\",\"provider\":\"primary\"}],"
		 " \"expect\":%s}",
		 expect);
	write_file(name, text);
}

static void load_scenario(const char *expect, double scale, struct scenario *sc)
{
	char path[400];

	write_scenario("scn.json", expect);
	snprintf(path, sizeof(path), "%s/scn.json", dir);
	cr_assert_eq(scenario_load(path, scale, sc, err), 0, "%s", err);
}

/* ---- summaries ---- */

/* One run's figures for a phase; NAN is null (no value). */
struct pv {
	double er, ans, p50, p95, p99, tto, ttp, fb;
	double silent, stalls, gap, ttft95;	/* the streams' */
	double opens;			/* 0: 1 when tto has a value, else 0 */
};

/* Healthy figures every bound below holds for. */
static const struct pv good = { 0, 1, 200, 210, 220, 500, 100, 0, 0, 0, 60, 250, 0 };

/* Sets member k of v, in the struct's order (er = 0 … fb = 7 … ttft95 = 11, opens = 12). */
static void set_field(struct pv *v, size_t k, double x)
{
	double *fields[] = { &v->er, &v->ans, &v->p50, &v->p95, &v->p99, &v->tto, &v->ttp,
			     &v->fb, &v->silent, &v->stalls, &v->gap, &v->ttft95, &v->opens };

	cr_assert_lt(k, sizeof(fields) / sizeof(fields[0]));
	*fields[k] = x;
}

static cJSON *num(double v)
{
	return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

/* A phase's FIGURES as stats_compute writes them (the members gate reads, and some more). */
static cJSON *figures(const struct pv *v)
{
	cJSON *f = cJSON_CreateObject();
	cJSON *lat = cJSON_CreateObject();
	cJSON *ttft = cJSON_CreateObject();

	cJSON_AddNumberToObject(f, "from_ms", 15000);
	cJSON_AddNumberToObject(f, "to_ms", 45000);
	cJSON_AddNumberToObject(f, "requests", 100);
	cJSON_AddItemToObject(f, "answered_share", num(v->ans));
	cJSON_AddItemToObject(f, "error_rate", num(v->er));
	cJSON_AddItemToObject(lat, "count", cJSON_CreateNumber(isnan(v->p50) ? 0 : 100));
	cJSON_AddItemToObject(lat, "mean", num(v->p50));
	cJSON_AddItemToObject(lat, "p50", num(v->p50));
	cJSON_AddItemToObject(lat, "p95", num(v->p95));
	cJSON_AddItemToObject(lat, "p99", num(v->p99));
	cJSON_AddItemToObject(lat, "max", num(v->p99));
	cJSON_AddItemToObject(f, "latency_ms", lat);
	cJSON_AddItemToObject(f, "fallback_share", num(v->fb));
	cJSON_AddItemToObject(f, "time_to_primary_ms", num(v->ttp));
	cJSON_AddNumberToObject(f, "opens", v->opens > 0 ? v->opens : isnan(v->tto) ? 0 : 1);
	cJSON_AddItemToObject(f, "time_to_open_ms", num(v->tto));
	cJSON_AddNumberToObject(f, "streams", 50);
	cJSON_AddItemToObject(ttft, "count", cJSON_CreateNumber(isnan(v->ttft95) ? 0 : 40));
	cJSON_AddItemToObject(ttft, "mean", num(v->ttft95));
	cJSON_AddItemToObject(ttft, "p50", num(v->ttft95));
	cJSON_AddItemToObject(ttft, "p95", num(v->ttft95));
	cJSON_AddItemToObject(ttft, "p99", num(v->ttft95));
	cJSON_AddItemToObject(ttft, "max", num(v->ttft95));
	cJSON_AddItemToObject(f, "ttft_ms", ttft);
	cJSON_AddNumberToObject(f, "stalls", v->stalls);
	cJSON_AddNumberToObject(f, "truncations", 0);
	cJSON_AddNumberToObject(f, "error_events", v->stalls - v->silent > 0 ?
				v->stalls - v->silent : 0);
	cJSON_AddNumberToObject(f, "silent_breaks", v->silent);
	cJSON_AddItemToObject(f, "max_gap_ms", num(v->gap));
	return f;
}

static cJSON *summary_new(const char *scenario, double scale)
{
	cJSON *s = cJSON_CreateObject();

	cJSON_AddStringToObject(s, "scenario", scenario);
	cJSON_AddNumberToObject(s, "time_scale", scale);
	cJSON_AddNumberToObject(s, "repeat", 1);
	cJSON_AddItemToObject(s, "setups", cJSON_CreateObject());
	return s;
}

/*
 * Adds setup name with nruns runs over nphases phases: v[k * nphases + i]
 * is run k's figures for phases[i]; combined by stats_combine.
 */
static void add_setup(cJSON *sum, const char *name, size_t nruns, const char *const *phases,
		      size_t nphases, const struct pv *v)
{
	cJSON *runs[8];
	cJSON *c;
	size_t k;
	size_t i;

	cr_assert_leq(nruns, 8);
	for (k = 0; k < nruns; k++) {
		cJSON *ph = cJSON_CreateObject();

		runs[k] = cJSON_CreateObject();
		cJSON_AddStringToObject(runs[k], "primary", "primary");
		for (i = 0; i < nphases; i++)
			cJSON_AddItemToObject(ph, phases[i], figures(&v[k * nphases + i]));
		cJSON_AddItemToObject(runs[k], "phases", ph);
	}
	c = stats_combine(runs, nruns);
	cr_assert_not_null(c);
	for (k = 0; k < nruns; k++)
		cJSON_Delete(runs[k]);
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(sum, "setups"), name, c);
}

static const char *const outage_only[] = { "outage" };
static const char *const both_phases[] = { "healthy", "outage" };

/* A summary of one setup with one run of the outage phase. */
static cJSON *summary_one(const char *setup_name, const struct pv *v)
{
	cJSON *s = summary_new("gt", 1);

	add_setup(s, setup_name, 1, outage_only, 1, v);
	return s;
}

static const struct gate_check *find(const struct gate_result *r, const char *source,
				     const char *setup_name, const char *phase, const char *figure)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct gate_check *c = &r->checks[i];

		if (strcmp(c->source, source) == 0 && strcmp(c->setup, setup_name) == 0 &&
		    strcmp(c->phase, phase) == 0 && strcmp(c->figure, figure) == 0)
			return c;
	}
	return NULL;
}

static size_t count_failed(const struct gate_result *r)
{
	size_t i;
	size_t n = 0;

	for (i = 0; i < r->n; i++)
		n += !r->checks[i].pass;
	return n;
}

/* ---- expectations ---- */

/* Each bound kind at its edge (holds) and just past it (breaks). */
Test(gate, every_bound_both_ways, .timeout = 10)
{
	static const struct {
		const char *bound;	/* key:value */
		const char *figure;
		enum gate_op op;
		double limit;
		size_t field;		/* which member of struct pv to set */
		double value;
		bool pass;
	} rows[] = {
		{ "\"error_rate_max\":0.1", "error_rate", GATE_LE, 0.1, 0, 0.1, true },
		{ "\"error_rate_max\":0.1", "error_rate", GATE_LE, 0.1, 0, 0.11, false },
		{ "\"error_rate_max\":0", "error_rate", GATE_LE, 0, 0, 0, true },
		{ "\"error_rate_max\":0", "error_rate", GATE_LE, 0, 0, 0.01, false },
		{ "\"answered_min\":0.9", "answered_share", GATE_GE, 0.9, 1, 0.9, true },
		{ "\"answered_min\":0.9", "answered_share", GATE_GE, 0.9, 1, 0.89, false },
		{ "\"latency_p50_ms_max\":230", "latency_ms.p50", GATE_LE, 230, 2, 230, true },
		{ "\"latency_p50_ms_max\":230", "latency_ms.p50", GATE_LE, 230, 2, 230.5, false },
		{ "\"latency_p95_ms_max\":300", "latency_ms.p95", GATE_LE, 300, 3, 299, true },
		{ "\"latency_p95_ms_max\":300", "latency_ms.p95", GATE_LE, 300, 3, 301, false },
		{ "\"latency_p99_ms_max\":400", "latency_ms.p99", GATE_LE, 400, 4, 400, true },
		{ "\"latency_p99_ms_max\":400", "latency_ms.p99", GATE_LE, 400, 4, 400.001, false },
		{ "\"time_to_open_ms_max\":2000", "time_to_open_ms", GATE_LE, 2000, 5, 1999, true },
		{ "\"time_to_open_ms_max\":2000", "time_to_open_ms", GATE_LE, 2000, 5, 2001, false },
		{ "\"time_to_primary_ms_max\":800", "time_to_primary_ms", GATE_LE, 800, 6, 800,
		  true },
		{ "\"time_to_primary_ms_max\":800", "time_to_primary_ms", GATE_LE, 800, 6, 900,
		  false },
		{ "\"time_to_primary_ms_min\":800", "time_to_primary_ms", GATE_GE, 800, 6, 800,
		  true },
		{ "\"time_to_primary_ms_min\":800", "time_to_primary_ms", GATE_GE, 800, 6, 700,
		  false },
		{ "\"opens_min\":3", "opens", GATE_GE, 3, 12, 3, true },
		{ "\"opens_min\":3", "opens", GATE_GE, 3, 12, 2, false },
		{ "\"opens_max\":2", "opens", GATE_LE, 2, 12, 2, true },
		{ "\"opens_max\":2", "opens", GATE_LE, 2, 12, 3, false },
		{ "\"fallback_share_max\":0.5", "fallback_share", GATE_LE, 0.5, 7, 0.5, true },
		{ "\"fallback_share_max\":0.5", "fallback_share", GATE_LE, 0.5, 7, 0.6, false },
		{ "\"fallback_share_min\":0.2", "fallback_share", GATE_GE, 0.2, 7, 0.2, true },
		{ "\"fallback_share_min\":0.2", "fallback_share", GATE_GE, 0.2, 7, 0.1, false },
		{ "\"silent_breaks_max\":0", "silent_breaks", GATE_LE, 0, 8, 0, true },
		{ "\"silent_breaks_max\":0", "silent_breaks", GATE_LE, 0, 8, 1, false },
		{ "\"stalls_max\":2", "stalls", GATE_LE, 2, 9, 2, true },
		{ "\"stalls_max\":2", "stalls", GATE_LE, 2, 9, 3, false },
		{ "\"max_gap_ms_max\":1100", "max_gap_ms", GATE_LE, 1100, 10, 1100, true },
		{ "\"max_gap_ms_max\":1100", "max_gap_ms", GATE_LE, 1100, 10, 1100.5, false },
		{ "\"ttft_p95_ms_max\":400", "ttft_ms.p95", GATE_LE, 400, 11, 399, true },
		{ "\"ttft_p95_ms_max\":400", "ttft_ms.p95", GATE_LE, 400, 11, 401, false },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct scenario sc;
		struct gate_result r;
		struct pv v = good;
		char expect[256];
		cJSON *sum;
		const struct gate_check *c;

		set_field(&v, rows[i].field, rows[i].value);
		snprintf(expect, sizeof(expect), "[{\"setup\":\"direct\",\"phase\":\"outage\",%s}]",
			 rows[i].bound);
		load_scenario(expect, 1, &sc);
		sum = summary_one("direct", &v);
		cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "row %zu: %s", i, err);
		cr_assert_eq(r.n, 1, "row %zu", i);
		c = &r.checks[0];
		cr_expect_str_eq(c->source, "expect");
		cr_expect_str_eq(c->setup, "direct");
		cr_expect_str_eq(c->phase, "outage");
		cr_expect_str_eq(c->figure, rows[i].figure, "row %zu", i);
		cr_expect_eq(c->op, rows[i].op, "row %zu", i);
		cr_expect_float_eq(c->bound, rows[i].limit, 1e-12, "row %zu", i);
		cr_expect_float_eq(c->value, rows[i].value, 1e-12, "row %zu", i);
		cr_expect_eq(c->pass, rows[i].pass, "row %zu: %s %g", i, rows[i].bound,
			     rows[i].value);
		cr_expect_eq(r.failed, rows[i].pass ? 0 : 1, "row %zu", i);
		gate_result_free(&r);
		cJSON_Delete(sum);
		scenario_free(&sc);
	}
}

/* One entry with several bounds gives a check per bound, in the table's order. */
Test(gate, one_check_per_bound, .timeout = 10)
{
	struct scenario sc;
	struct gate_result r;
	cJSON *sum = summary_one("direct", &good);

	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"error_rate_max\":0,"
		      "\"latency_p99_ms_max\":100,\"answered_min\":1}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 3);
	cr_expect_str_eq(r.checks[0].figure, "error_rate");
	cr_expect_str_eq(r.checks[1].figure, "answered_share");
	cr_expect_str_eq(r.checks[2].figure, "latency_ms.p99");
	cr_expect(r.checks[0].pass && r.checks[1].pass && !r.checks[2].pass);
	cr_expect_eq(r.failed, 1);
	gate_result_free(&r);
	gate_result_free(&r);	/* harmless */
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* With repeats a _max bound meets the largest run, a _min bound the smallest. */
Test(gate, worst_run_is_judged, .timeout = 10)
{
	struct pv runs[3] = { good, good, good };
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = summary_new("gt", 1);

	runs[0].p50 = 100;
	runs[1].p50 = 250;	/* the mean (166.7) would hold */
	runs[2].p50 = 150;
	runs[0].ans = 0.95;
	runs[1].ans = 0.99;
	runs[2].ans = 0.85;
	add_setup(sum, "direct", 3, outage_only, 1, runs);
	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"latency_p50_ms_max\":200,"
		      "\"answered_min\":0.9},"
		      " {\"setup\":\"direct\",\"phase\":\"outage\",\"latency_p50_ms_max\":250,"
		      "\"answered_min\":0.85}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 4);
	c = &r.checks[0];
	cr_expect_str_eq(c->figure, "answered_share");
	cr_expect_float_eq(c->value, 0.85, 1e-12);
	cr_expect_not(c->pass);
	c = &r.checks[1];
	cr_expect_str_eq(c->figure, "latency_ms.p50");
	cr_expect_float_eq(c->value, 250, 1e-12);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "worst of 3 runs");
	cr_expect(r.checks[2].pass && r.checks[3].pass);
	cr_expect_str_eq(r.checks[3].note, "worst of 3 runs");
	cr_expect_eq(r.failed, 2);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* A figure with no value fails its bound: a breaker that never opened, no ok request. */
Test(gate, null_values_fail, .timeout = 10)
{
	struct pv never = good;
	struct pv runs[3] = { good, good, good };
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = summary_new("gt", 1);

	never.tto = NAN;
	never.p50 = never.p95 = never.p99 = NAN;
	never.fb = never.ttp = NAN;
	add_setup(sum, "breaker-off", 1, outage_only, 1, &never);
	runs[1].tto = NAN;	/* one of three runs never opened */
	add_setup(sum, "breaker-on", 3, outage_only, 1, runs);
	load_scenario("[{\"setup\":\"breaker-*\",\"phase\":\"outage\",\"time_to_open_ms_max\":5000,"
		      "\"latency_p95_ms_max\":1000,\"fallback_share_min\":0,"
		      "\"time_to_primary_ms_max\":1000}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 8);
	c = find(&r, "expect", "breaker-off", "outage", "time_to_open_ms");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect(isnan(c->value));
	cr_expect_str_eq(c->note, "no value");
	c = find(&r, "expect", "breaker-off", "outage", "latency_ms.p95");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no value");
	c = find(&r, "expect", "breaker-off", "outage", "fallback_share");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	c = find(&r, "expect", "breaker-off", "outage", "time_to_primary_ms");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	c = find(&r, "expect", "breaker-on", "outage", "time_to_open_ms");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no value in 1 of 3 runs");
	cr_expect_float_eq(c->value, 500, 1e-12);
	c = find(&r, "expect", "breaker-on", "outage", "latency_ms.p95");
	cr_assert_not_null(c);
	cr_expect(c->pass);
	cr_expect_eq(r.failed, 5);
	cr_expect_eq(count_failed(&r), r.failed);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/*
 * The streams' bounds follow the same rules: the worst run is judged, a
 * gap or TTFT with no value fails (no stream, no ok stream), counts are
 * never null; _ms_max bounds scale with the run, count bounds do not.
 */
Test(gate, stream_bounds_worst_run_no_value_and_scale, .timeout = 10)
{
	struct pv runs[3] = { good, good, good };
	struct pv quiet = good;
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = summary_new("gt", 0.2);

	runs[1].silent = 2;	/* the mean (0.67) would hold */
	runs[2].gap = 230;	/* over 1100 × 0.2 */
	runs[0].ttft95 = NAN;	/* one run without an ok stream */
	add_setup(sum, "breaker-on", 3, outage_only, 1, runs);
	quiet.gap = NAN;
	quiet.ttft95 = NAN;
	add_setup(sum, "breaker-off", 1, outage_only, 1, &quiet);
	load_scenario("[{\"setup\":\"breaker-*\",\"phase\":\"outage\",\"silent_breaks_max\":1,"
		      "\"stalls_max\":0,\"max_gap_ms_max\":1100,\"ttft_p95_ms_max\":2000}]", 0.2, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 8);
	c = find(&r, "expect", "breaker-on", "outage", "silent_breaks");
	cr_assert_not_null(c);
	cr_expect_float_eq(c->bound, 1, 0, "a count is not scaled");
	cr_expect_float_eq(c->value, 2, 0);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "worst of 3 runs");
	c = find(&r, "expect", "breaker-on", "outage", "stalls");
	cr_assert_not_null(c);
	cr_expect(c->pass);
	c = find(&r, "expect", "breaker-on", "outage", "max_gap_ms");
	cr_assert_not_null(c);
	cr_expect_float_eq(c->bound, 220, 1e-9, "1100 ms × 0.2");
	cr_expect_float_eq(c->value, 230, 0);
	cr_expect_not(c->pass);
	c = find(&r, "expect", "breaker-on", "outage", "ttft_ms.p95");
	cr_assert_not_null(c);
	cr_expect_float_eq(c->bound, 400, 1e-9);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no value in 1 of 3 runs");
	c = find(&r, "expect", "breaker-off", "outage", "max_gap_ms");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect(isnan(c->value));
	cr_expect_str_eq(c->note, "no value");
	c = find(&r, "expect", "breaker-off", "outage", "ttft_ms.p95");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no value");
	c = find(&r, "expect", "breaker-off", "outage", "silent_breaks");
	cr_assert_not_null(c);
	cr_expect(c->pass);
	cr_expect_eq(r.failed, 5);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* Globs pick setups, "*" every phase; a glob matching no setup of the run fails once. */
Test(gate, setup_globs_and_every_phase, .timeout = 10)
{
	struct pv v[2] = { good, good };
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = summary_new("gt", 1);

	v[1].er = 0.5;	/* outage */
	add_setup(sum, "direct", 1, both_phases, 2, v);
	add_setup(sum, "breaker-on", 1, both_phases, 2, v);
	add_setup(sum, "breaker-off", 1, both_phases, 2, v);
	load_scenario("[{\"setup\":\"breaker-*\",\"phase\":\"*\",\"error_rate_max\":0.1},"
		      " {\"setup\":\"di?ect\",\"phase\":\"healthy\",\"error_rate_max\":0.1},"
		      " {\"setup\":\"[bd]*\",\"phase\":\"outage\",\"error_rate_max\":0.5}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 4 + 1 + 3);
	cr_expect_str_eq(r.checks[0].setup, "breaker-on");
	cr_expect_str_eq(r.checks[0].phase, "healthy");
	cr_expect(r.checks[0].pass);
	cr_expect_str_eq(r.checks[1].setup, "breaker-on");
	cr_expect_str_eq(r.checks[1].phase, "outage");
	cr_expect_not(r.checks[1].pass);
	cr_expect_str_eq(r.checks[2].setup, "breaker-off");
	cr_expect_str_eq(r.checks[3].phase, "outage");
	cr_expect_not(r.checks[3].pass);
	cr_expect_str_eq(r.checks[4].setup, "direct");
	cr_expect_str_eq(r.checks[4].phase, "healthy");
	cr_expect(r.checks[4].pass);
	c = find(&r, "expect", "direct", "outage", "error_rate");
	cr_assert_not_null(c);
	cr_expect(c->pass);	/* 0.5 ≤ 0.5 */
	cr_expect_eq(r.failed, 2);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* A run without the setup (chaos run --setup, or every run of it failed) fails. */
Test(gate, setup_or_phase_missing_in_the_run, .timeout = 10)
{
	struct scenario sc;
	struct gate_result r;
	cJSON *sum = summary_one("direct", &good);	/* no healthy phase either */

	load_scenario("[{\"setup\":\"breaker-*\",\"phase\":\"outage\",\"error_rate_max\":0},"
		      " {\"setup\":\"direct\",\"phase\":\"*\",\"error_rate_max\":0},"
		      " {\"setup\":\"direct\",\"phase\":\"healthy\",\"error_rate_max\":0}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 4);
	cr_expect_str_eq(r.checks[0].setup, "breaker-*");
	cr_expect_str_eq(r.checks[0].phase, "outage");
	cr_expect_str_eq(r.checks[0].figure, "-");
	cr_expect_str_eq(r.checks[0].note, "no such setup in the run");
	cr_expect_not(r.checks[0].pass);
	cr_expect_str_eq(r.checks[1].phase, "healthy");
	cr_expect_str_eq(r.checks[1].note, "no such phase in the run");
	cr_expect_not(r.checks[1].pass);
	cr_expect_str_eq(r.checks[2].phase, "outage");
	cr_expect(r.checks[2].pass);
	cr_expect_str_eq(r.checks[3].note, "no such phase in the run");
	cr_expect_eq(r.failed, 3);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* Bounds are scaled like the run; a scenario at another scale than the summary is refused. */
Test(gate, bounds_scaled_like_the_run, .timeout = 10)
{
	struct pv v = good;
	struct scenario sc;
	struct gate_result r;
	cJSON *sum = summary_new("gt", 0.1);

	v.p50 = 23;
	add_setup(sum, "direct", 1, outage_only, 1, &v);
	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"latency_p50_ms_max\":230}]",
		      0.1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 1);
	cr_expect_float_eq(r.checks[0].bound, 23, 1e-9);
	cr_expect(r.checks[0].pass, "23 against 230 × 0.1");
	gate_result_free(&r);
	scenario_free(&sc);

	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"latency_p50_ms_max\":230}]",
		      1, &sc);
	cr_expect_eq(gate_evaluate(&sc, sum, NULL, &r, err), -EINVAL);
	cr_expect(strstr(err, "summary: time_scale:") != NULL, "%s", err);
	cr_expect_eq(r.n, 0);
	cr_expect_null(r.checks);
	scenario_free(&sc);
	cJSON_Delete(sum);
}

/* A summary of the wrong shape is refused, naming the key. */
/* Adds setup name from its runs' JSON texts ({"phases": {…}}), combined. */
static void add_setup_json(cJSON *sum, const char *name, const char *const *texts, size_t n)
{
	cJSON *runs[4];
	cJSON *c;
	size_t k;

	cr_assert_leq(n, 4);
	for (k = 0; k < n; k++) {
		runs[k] = cJSON_Parse(texts[k]);
		cr_assert_not_null(runs[k], "bad test JSON: %s", texts[k]);
	}
	c = stats_combine(runs, n);
	cr_assert_not_null(c);
	for (k = 0; k < n; k++)
		cJSON_Delete(runs[k]);
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(sum, "setups"), name, c);
}

/* The class filter, answered_max, windows, ratios against another setup, extra requests. */
Test(gate, classes_windows_and_relative_bounds, .timeout = 10)
{
	static const char *const direct[] = {
		"{\"phases\":{\"outage\":{\"answered_share\":0.3,\"latency_ms\":{\"p99\":400},"
		"\"cost_per_answered\":0.01,\"extra_requests\":0,"
		"\"classes\":{\"interactive\":{\"answered_share\":0.25,\"latency_ms\":{\"p99\":500},"
		"\"cost_per_answered\":0.02}}}}}",
	};
	static const char *const gw[] = {
		"{\"phases\":{\"outage\":{\"answered_share\":0.99,\"latency_ms\":{\"p99\":100},"
		"\"cost_per_answered\":0.0105,\"extra_requests\":0.1,"
		"\"answered_windows\":{\"5000\":{\"windows\":6,\"worst_share\":0.98,"
		"\"worst_from_ms\":20000},\"1000\":{\"windows\":0,\"worst_share\":null,"
		"\"worst_from_ms\":null}},"
		"\"classes\":{\"interactive\":{\"answered_share\":0.98,\"latency_ms\":{\"p99\":150},"
		"\"cost_per_answered\":0.023,\"answered_windows\":{\"5000\":{\"windows\":6,"
		"\"worst_share\":0.995,\"worst_from_ms\":15000}}},"
		"\"batch\":{\"answered_share\":1}}}}}",
	};
	struct scenario sc;
	struct gate_result r;
	const struct gate_check *c;
	cJSON *sum = summary_new("gt", 1);

	add_setup_json(sum, "direct", direct, 1);
	add_setup_json(sum, "breaker-on", gw, 1);
	load_scenario("[{\"setup\":\"breaker-on\",\"phase\":\"outage\",\"class\":\"batch\","
		      "\"answered_min\":1},"
		      " {\"setup\":\"direct\",\"phase\":\"outage\",\"class\":\"batch\","
		      "\"answered_min\":1},"
		      " {\"setup\":\"direct\",\"phase\":\"outage\",\"answered_max\":0.3},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"answered_max\":0.5},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"window_s\":5,"
		      "\"window_answered_min\":0.99},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"class\":\"interactive\","
		      "\"window_s\":5,\"window_answered_min\":0.99},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"window_s\":1,"
		      "\"window_answered_min\":0.99},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"window_s\":2,"
		      "\"window_answered_min\":0.99},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"relative_to\":\"direct\","
		      "\"latency_p99_ratio_max\":0.25,\"cost_overhead_max\":0.049,"
		      "\"extra_requests_max\":0.1},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"class\":\"interactive\","
		      "\"relative_to\":\"direct\",\"latency_p99_ratio_max\":0.3,"
		      "\"cost_overhead_max\":0.15},"
		      " {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"relative_to\":\"breaker-off\","
		      "\"cost_overhead_max\":0.1}]", 1, &sc);
	cr_assert_eq(gate_evaluate(&sc, sum, NULL, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 14, "%zu checks", r.n);
	c = &r.checks[0];
	cr_expect(c->pass && c->value == 1, "batch alone: %g", c->value);
	c = &r.checks[1];
	cr_expect_str_eq(c->figure, "-");
	cr_expect_str_eq(c->note, "no batch request in the run");
	cr_expect_not(c->pass);
	c = &r.checks[2];
	cr_expect(c->pass && c->op == GATE_LE && c->value == 0.3, "answered_max at its edge");
	c = &r.checks[3];
	cr_expect_not(c->pass, "the gateway answered more than half");
	c = &r.checks[4];
	cr_expect_str_eq(c->figure, "window_answered_share");
	cr_expect_float_eq(c->value, 0.98, 1e-12);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "worst 5 s window 20-25 s of 6");
	c = &r.checks[5];
	cr_expect(c->pass && c->value == 0.995, "interactive alone: %g", c->value);
	cr_expect_str_eq(c->note, "worst 5 s window 15-20 s of 6");
	c = &r.checks[6];
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no 1 s window of the phase had a request");
	c = &r.checks[7];
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "no 2 s windows in the summary");
	c = &r.checks[8];
	cr_expect_str_eq(c->figure, "extra_requests");
	cr_expect(c->pass, "extra requests at the edge");
	c = find(&r, "expect", "breaker-on", "outage", "latency_p99_ratio");
	cr_assert_not_null(c);
	cr_expect(c->pass && c->value == 0.25, "100 / 400: %g", c->value);
	cr_expect_str_eq(c->note, "vs direct: 100 / 400");
	c = &r.checks[10];
	cr_expect_str_eq(c->figure, "cost_overhead");
	cr_expect_float_eq(c->value, 0.05, 1e-12);
	cr_expect_not(c->pass);
	c = &r.checks[11];
	cr_expect_float_eq(c->value, 0.3, 1e-12, "interactive: 150 / 500");
	cr_expect(c->pass);
	c = &r.checks[12];
	cr_expect_float_eq(c->value, 0.15, 1e-12, "interactive: 0.023 / 0.02 - 1");
	cr_expect(c->pass);
	c = &r.checks[13];
	cr_expect_str_eq(c->figure, "cost_overhead");
	cr_expect_str_eq(c->note, "vs breaker-off: not in the run");
	cr_expect_not(c->pass);
	cr_expect_eq(r.failed, 7, "%zu failed", r.failed);
	gate_result_free(&r);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

Test(gate, bad_summary_shapes, .timeout = 10)
{
	static const struct {
		const char *json;
		const char *says;
	} rows[] = {
		{ "[]", "summary: (top level): expected an object" },
		{ "{\"time_scale\":1,\"setups\":{}}", "summary: scenario: expected" },
		{ "{\"scenario\":\"gt\",\"setups\":{}}", "summary: time_scale: expected a number" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":[]}",
		  "summary: setups: expected an object" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":{\"direct\":{\"phases\":{}}}}",
		  "summary: setups.direct.runs: expected a number" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":{\"direct\":{\"runs\":1}}}",
		  "summary: setups.direct.phases: expected an object" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":{\"direct\":{\"runs\":1,"
		  "\"phases\":{\"outage\":{}}}}}",
		  "summary: setups.direct.phases.outage.error_rate: expected a combined figure" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":{\"direct\":{\"runs\":1,"
		  "\"phases\":{\"outage\":{\"error_rate\":{\"mean\":0,\"min\":0,\"n\":1}}}}}}",
		  "summary: setups.direct.phases.outage.error_rate.max: expected a number" },
		{ "{\"scenario\":\"gt\",\"time_scale\":1,\"setups\":{\"direct\":{\"runs\":1,"
		  "\"phases\":{\"outage\":7}}}}",
		  "summary: setups.direct.phases.outage: expected a phase's combined figures" },
	};
	struct scenario sc;
	size_t i;

	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"error_rate_max\":0}]", 1,
		      &sc);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gate_result r;
		cJSON *sum = cJSON_Parse(rows[i].json);

		cr_assert_not_null(sum, "row %zu", i);
		err[0] = '\0';
		cr_expect_eq(gate_evaluate(&sc, sum, NULL, &r, err), -EINVAL, "row %zu", i);
		cr_expect(strstr(err, rows[i].says) != NULL, "row %zu: %s", i, err);
		cr_expect_eq(r.n, 0);
		cJSON_Delete(sum);
	}
	scenario_free(&sc);
}

/* ---- the baseline ---- */

/* The baseline's figures: 5% errors, p50 100 ms, opened after 1 s, 50% fallback. */
static const struct pv base_v = { 0.02, 0.98, 100, 200, 400, 1000, 300, 0.5, 0, 0, 60, 250, 0 };

static struct scenario no_expects;

static void load_no_expects(void)
{
	load_scenario("[]", 1, &no_expects);
}

/* The run's verdict on one figure when the run has v and the baseline base_v. */
static const struct gate_check *judge_against(const struct pv *v, const cJSON *tolerances,
					      const char *figure, struct gate_result *r)
{
	cJSON *base = summary_one("direct", &base_v);
	cJSON *run = summary_one("direct", v);
	const struct gate_check *c;

	if (tolerances)
		cJSON_AddItemToObject(base, "tolerances", cJSON_Duplicate(tolerances, 1));
	cr_assert_eq(gate_evaluate(&no_expects, run, base, r, err), 0, "%s", err);
	cr_assert_eq(r->n, 7, "one check per figure");
	c = find(r, "baseline", "direct", "outage", figure);
	cr_assert_not_null(c, "%s", figure);
	cJSON_Delete(base);
	cJSON_Delete(run);
	return c;
}

/* Each figure at the edge of the default tolerances and just past it, both ways. */
Test(gate_baseline, default_tolerance_edges, .timeout = 10)
{
	static const struct {
		const char *figure;
		size_t field;
		double value;
		bool pass;
	} rows[] = {
		{ "error_rate", 0, 0.03, true },	/* 0.02 + 0.01 */
		{ "error_rate", 0, 0.0301, false },
		{ "error_rate", 0, 0, true },		/* better */
		{ "answered_share", 1, 0.97, true },	/* 0.98 − 0.01 */
		{ "answered_share", 1, 0.9699, false },
		{ "answered_share", 1, 1, true },
		{ "latency_ms.p50", 2, 130, true },	/* 100 × 1.25 + 5 */
		{ "latency_ms.p50", 2, 130.01, false },
		{ "latency_ms.p50", 2, 10, true },
		{ "latency_ms.p95", 3, 255, true },	/* 200 × 1.25 + 5 */
		{ "latency_ms.p95", 3, 255.5, false },
		{ "latency_ms.p99", 4, 505, true },	/* 400 × 1.25 + 5 */
		{ "latency_ms.p99", 4, 506, false },
		{ "time_to_open_ms", 5, 1255, true },	/* 1000 × 1.25 + 5 */
		{ "time_to_open_ms", 5, 1256, false },
		{ "fallback_share", 7, 0.55, true },	/* 0.5 ± 0.05 */
		{ "fallback_share", 7, 0.45, true },
		{ "fallback_share", 7, 0.5501, false },
		{ "fallback_share", 7, 0.4499, false },
	};
	size_t i;

	load_no_expects();
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gate_result r;
		struct pv v = base_v;
		const struct gate_check *c;

		set_field(&v, rows[i].field, rows[i].value);
		c = judge_against(&v, NULL, rows[i].figure, &r);
		cr_expect_eq(c->pass, rows[i].pass, "row %zu: %s %g (%s)", i, rows[i].figure,
			     rows[i].value, c->note);
		cr_expect_float_eq(c->value, rows[i].value, 1e-12, "row %zu", i);
		cr_expect_eq(r.failed, rows[i].pass ? 0 : 1, "row %zu: only that figure", i);
		gate_result_free(&r);
	}
	scenario_free(&no_expects);
}

/* Tolerances the baseline states replace the defaults, key by key. */
Test(gate_baseline, stated_tolerances, .timeout = 10)
{
	static const struct {
		const char *figure;
		size_t field;
		double value;
		bool pass;
	} rows[] = {
		{ "latency_ms.p50", 2, 150, true },	/* 100 × 1.5 + 0 */
		{ "latency_ms.p50", 2, 150.1, false },
		{ "error_rate", 0, 0.12, true },	/* 0.02 + 0.1 */
		{ "error_rate", 0, 0.121, false },
		{ "answered_share", 1, 0.97, true },	/* default 0.01 kept */
		{ "answered_share", 1, 0.969, false },
		{ "fallback_share", 7, 0.5, true },	/* 0.5 ± 0 */
		{ "fallback_share", 7, 0.51, false },
	};
	cJSON *tol = cJSON_Parse("{\"relative\":0.5,\"floor_ms\":0,"
				 "\"absolute\":{\"error_rate\":0.1,\"fallback_share\":0}}");
	size_t i;

	cr_assert_not_null(tol);
	load_no_expects();
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gate_result r;
		struct pv v = base_v;
		const struct gate_check *c;

		set_field(&v, rows[i].field, rows[i].value);
		c = judge_against(&v, tol, rows[i].figure, &r);
		cr_expect_eq(c->pass, rows[i].pass, "row %zu: %s %g (%s)", i, rows[i].figure,
			     rows[i].value, c->note);
		gate_result_free(&r);
	}
	cJSON_Delete(tol);
	scenario_free(&no_expects);
}

/* The run's mean is compared, not its worst run. */
Test(gate_baseline, run_mean_is_compared, .timeout = 10)
{
	struct pv runs[2] = { base_v, base_v };
	struct gate_result r;
	const struct gate_check *c;
	cJSON *base = summary_one("direct", &base_v);
	cJSON *run = summary_new("gt", 1);

	runs[0].p50 = 100;
	runs[1].p50 = 160;	/* mean 130: at the edge */
	add_setup(run, "direct", 2, outage_only, 1, runs);
	load_no_expects();
	cr_assert_eq(gate_evaluate(&no_expects, run, base, &r, err), 0, "%s", err);
	c = find(&r, "baseline", "direct", "outage", "latency_ms.p50");
	cr_assert_not_null(c);
	cr_expect_float_eq(c->value, 130, 1e-12);
	cr_expect_float_eq(c->bound, 130, 1e-12);
	cr_expect(c->pass);
	cr_expect_eq(r.failed, 0);
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);
	scenario_free(&no_expects);
}

/* The streams' figures are left to expect bounds: a baseline never compares them. */
Test(gate_baseline, stream_figures_are_not_compared, .timeout = 10)
{
	struct pv v = base_v;
	struct gate_result r;
	size_t i;
	cJSON *base = summary_one("direct", &base_v);
	cJSON *run;

	v.silent = 40;
	v.stalls = 50;
	v.gap = 1e6;
	v.ttft95 = 1e6;
	run = summary_one("direct", &v);
	load_no_expects();
	cr_assert_eq(gate_evaluate(&no_expects, run, base, &r, err), 0, "%s", err);
	cr_expect_eq(r.n, 7);
	cr_expect_eq(r.failed, 0);
	for (i = 0; i < r.n; i++) {
		cr_expect_null(strstr(r.checks[i].figure, "ttft"), "%s", r.checks[i].figure);
		cr_expect_neq(strcmp(r.checks[i].figure, "max_gap_ms"), 0);
		cr_expect_neq(strcmp(r.checks[i].figure, "silent_breaks"), 0);
		cr_expect_neq(strcmp(r.checks[i].figure, "stalls"), 0);
	}
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);
	scenario_free(&no_expects);
}

/* No value in the baseline: not compared; none in the run while the baseline has one: fails. */
Test(gate_baseline, null_values, .timeout = 10)
{
	struct pv b = base_v;
	struct pv v = base_v;
	struct pv runs[2] = { base_v, base_v };
	struct gate_result r;
	const struct gate_check *c;
	cJSON *base;
	cJSON *run;

	load_no_expects();
	b.tto = NAN;		/* the baseline's breaker never opened */
	b.p99 = NAN;
	v.tto = 700;
	v.p50 = NAN;		/* the run has no latency at all */
	v.p95 = NAN;
	v.p99 = NAN;
	base = summary_one("direct", &b);
	run = summary_one("direct", &v);
	cr_assert_eq(gate_evaluate(&no_expects, run, base, &r, err), 0, "%s", err);
	cr_expect_eq(r.n, 5, "no time_to_open_ms or p99 check");
	cr_expect_null(find(&r, "baseline", "direct", "outage", "time_to_open_ms"));
	cr_expect_null(find(&r, "baseline", "direct", "outage", "latency_ms.p99"));
	c = find(&r, "baseline", "direct", "outage", "latency_ms.p50");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect(isnan(c->value));
	cr_expect(strncmp(c->note, "no value; baseline 100", 22) == 0, "%s", c->note);
	cr_expect_eq(r.failed, 2);
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);

	/* Every baseline run opened; one of the run's two did not. */
	runs[1].tto = NAN;
	base = summary_one("direct", &base_v);
	run = summary_new("gt", 1);
	add_setup(run, "direct", 2, outage_only, 1, runs);
	cr_assert_eq(gate_evaluate(&no_expects, run, base, &r, err), 0, "%s", err);
	c = find(&r, "baseline", "direct", "outage", "time_to_open_ms");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect(strncmp(c->note, "no value in 1 of 2 runs", 23) == 0, "%s", c->note);
	cr_expect_eq(r.failed, 1);
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);
	scenario_free(&no_expects);
}

/* A setup or phase of the baseline the run lacks fails; the run's extra ones are not compared. */
Test(gate_baseline, setup_or_phase_missing, .timeout = 10)
{
	struct pv v[2] = { base_v, base_v };
	struct gate_result r;
	const struct gate_check *c;
	cJSON *base = summary_new("gt", 1);
	cJSON *run = summary_new("gt", 1);

	add_setup(base, "direct", 1, both_phases, 2, v);
	add_setup(base, "breaker-on", 1, outage_only, 1, v);
	add_setup(run, "direct", 1, outage_only, 1, v);
	add_setup(run, "breaker-off", 1, outage_only, 1, v);
	load_no_expects();
	cr_assert_eq(gate_evaluate(&no_expects, run, base, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 1 + 7 + 1);
	c = find(&r, "baseline", "direct", "healthy", "-");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "phase missing in the run");
	c = find(&r, "baseline", "breaker-on", "-", "-");
	cr_assert_not_null(c);
	cr_expect_not(c->pass);
	cr_expect_str_eq(c->note, "setup missing in the run");
	cr_expect_eq(r.failed, 2);
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);
	scenario_free(&no_expects);
}

/* Expectation checks come first, then the baseline's. */
Test(gate_baseline, with_expectations, .timeout = 10)
{
	struct scenario sc;
	struct gate_result r;
	cJSON *base = summary_one("direct", &base_v);
	cJSON *run = summary_one("direct", &base_v);

	load_scenario("[{\"setup\":\"direct\",\"phase\":\"outage\",\"error_rate_max\":0.01}]", 1,
		      &sc);
	cr_assert_eq(gate_evaluate(&sc, run, base, &r, err), 0, "%s", err);
	cr_assert_eq(r.n, 8);
	cr_expect_str_eq(r.checks[0].source, "expect");
	cr_expect_not(r.checks[0].pass);
	cr_expect_str_eq(r.checks[1].source, "baseline");
	cr_expect_eq(r.failed, 1);
	gate_result_free(&r);
	cJSON_Delete(base);
	cJSON_Delete(run);
	scenario_free(&sc);
}

/* A baseline of another scenario or scale, or of the wrong shape, is unusable input. */
Test(gate_baseline, unusable_baselines, .timeout = 10)
{
	static const struct {
		const char *edit;	/* JSON merged into a good baseline's top level */
		const char *says;
	} rows[] = {
		{ "{\"scenario\":\"other\"}", "baseline: scenario: expected the run's scenario \"gt\"" },
		{ "{\"time_scale\":0.1}", "baseline: time_scale: expected the run's time scale 1" },
		{ "{\"scenario\":3}", "baseline: scenario: expected the scenario's name" },
		{ "{\"time_scale\":\"1\"}", "baseline: time_scale: expected a number" },
		{ "{\"setups\":null}", "baseline: setups: expected an object" },
		{ "{\"tolerances\":[]}", "baseline: tolerances: expected an object" },
		{ "{\"tolerances\":{\"relative\":-1}}",
		  "baseline: tolerances.relative: expected a number from 0 to 100" },
		{ "{\"tolerances\":{\"floor\":5}}", "baseline: tolerances.floor: unknown key" },
		{ "{\"tolerances\":{\"absolute\":{\"error_rate\":2}}}",
		  "baseline: tolerances.absolute.error_rate: expected a number from 0 to 1" },
		{ "{\"tolerances\":{\"absolute\":{\"latency\":2}}}",
		  "baseline: tolerances.absolute.latency: unknown key" },
		{ "{\"setups\":{\"direct\":{\"runs\":1,\"phases\":{\"outage\":"
		  "{\"error_rate\":0.5}}}}}",
		  "baseline: setups.direct.phases.outage.error_rate: expected a combined figure" },
		{ "{\"setups\":{\"direct\":{\"runs\":1,\"phases\":{\"outage\":"
		  "{\"error_rate\":null,\"answered_share\":null,\"latency_ms\":3}}}}}",
		  "baseline: setups.direct.phases.outage.latency_ms: expected an object of "
		  "percentiles" },
		{ "{\"setups\":{\"direct\":{\"runs\":0,\"phases\":{}}}}",
		  "baseline: setups.direct.runs: expected a whole number of runs" },
	};
	cJSON *run = summary_one("direct", &base_v);
	size_t i;

	load_no_expects();
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gate_result r;
		cJSON *base = summary_one("direct", &base_v);
		cJSON *edit = cJSON_Parse(rows[i].edit);
		cJSON *m;

		cr_assert_not_null(edit, "row %zu", i);
		cJSON_ArrayForEach(m, edit) {
			cJSON_DeleteItemFromObjectCaseSensitive(base, m->string);
			cJSON_AddItemToObject(base, m->string, cJSON_Duplicate(m, 1));
		}
		err[0] = '\0';
		cr_expect_eq(gate_evaluate(&no_expects, run, base, &r, err), -EINVAL, "row %zu",
			     i);
		cr_expect(strstr(err, rows[i].says) != NULL, "row %zu: %s", i, err);
		cr_expect_eq(r.n, 0, "row %zu", i);
		cJSON_Delete(edit);
		cJSON_Delete(base);
	}
	cJSON_Delete(run);
	scenario_free(&no_expects);
}

/* ---- the table ---- */

/* A known result prints a line per check and the count. */
Test(gate, print_table, .timeout = 10)
{
	struct gate_check checks[] = {
		{ .source = "expect", .setup = "breaker-on", .phase = "outage",
		  .figure = "latency_ms.p50", .op = GATE_LE, .bound = 230, .value = 210.5,
		  .pass = true, .note = "worst of 3 runs" },
		{ .source = "baseline", .setup = "direct", .phase = "healthy",
		  .figure = "fallback_share", .op = GATE_NEAR, .bound = 0.5, .tolerance = 0.05,
		  .value = 0.7, .pass = false, .note = "baseline 0.5 +- 0.05" },
		{ .source = "expect", .setup = "breaker-*", .phase = "outage", .figure = "-",
		  .op = GATE_LE, .bound = NAN, .value = NAN, .pass = false,
		  .note = "no such setup in the run" },
	};
	struct gate_result r = { .checks = checks, .n = 3, .failed = 2 };
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	char *line;
	char *save;
	int n = 0;

	cr_assert_not_null(fp);
	gate_print(fp, &r);
	cr_assert_eq(fclose(fp), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
		cr_expect_neq(line[strlen(line) - 1], ' ', "no trailing blank: \"%s\"", line);
		switch (n) {
		case 0:
			cr_expect(strncmp(line, "PASS  expect  ", 14) == 0, "%s", line);
			cr_expect(strstr(line, "breaker-on") && strstr(line, "outage") &&
				  strstr(line, "latency_ms.p50") && strstr(line, "210.5  <=") &&
				  strstr(line, "230") && strstr(line, "worst of 3 runs"), "%s", line);
			break;
		case 1:
			cr_expect(strncmp(line, "FAIL  baseline", 14) == 0, "%s", line);
			cr_expect(strstr(line, "0.7  within  0.5+-0.05") != NULL, "%s", line);
			break;
		case 2:
			cr_expect(strncmp(line, "FAIL  expect  ", 14) == 0, "%s", line);
			cr_expect(strstr(line, "breaker-*") && strstr(line, "no such setup in the run"),
				  "%s", line);
			break;
		case 3:
			cr_expect_str_eq(line, "3 checks, 2 failed");
			break;
		}
	}
	cr_expect_eq(n, 4);
	free(text);

	/* Nothing to check: the count alone. */
	r.n = 0;
	r.failed = 0;
	text = NULL;
	fp = open_memstream(&text, &len);
	cr_assert_not_null(fp);
	gate_print(fp, &r);
	cr_assert_eq(fclose(fp), 0);
	cr_expect_str_eq(text, "0 checks, 0 failed\n");
	free(text);
}

/* ---- the command ---- */

static const char holds_expect[] =
	"[{\"setup\":\"breaker-*\",\"phase\":\"outage\",\"error_rate_max\":0,"
	"\"latency_p50_ms_max\":230,\"time_to_open_ms_max\":2000}]";

/* A stamp directory (DIR itself): its summary.json and scenario.json. */
static void write_stamp(const struct pv *outage, double scale, const char *expect)
{
	struct pv v[2] = { good, *outage };
	cJSON *sum = summary_new("gt", scale);

	add_setup(sum, "breaker-on", 1, both_phases, 2, v);
	add_setup(sum, "direct", 1, both_phases, 2, v);
	write_json("summary.json", sum);
	cJSON_Delete(sum);
	write_scenario("scenario.json", expect);
}

/* Runs gate_command on DIR; its stdout and stderr in out and errtext (malloc'ed). */
static int command(const char *baseline, const char *save, char **out, char **errtext)
{
	char base_path[400];
	char save_path[400];
	char err_path[400];
	size_t len = 0;
	FILE *fp;
	int saved_fd;
	int fd;
	int status;

	snprintf(base_path, sizeof(base_path), "%s/%s", dir, baseline ? baseline : "");
	snprintf(save_path, sizeof(save_path), "%s/%s", dir, save ? save : "");
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", dir);
	*out = NULL;
	fp = open_memstream(out, &len);
	cr_assert_not_null(fp);
	fflush(stderr);
	saved_fd = dup(2);
	fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(saved_fd, 0);
	cr_assert_geq(fd, 0);
	dup2(fd, 2);
	close(fd);
	status = gate_command(dir, baseline ? base_path : NULL, save ? save_path : NULL, NULL, fp);
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	cr_assert_eq(fclose(fp), 0);
	*errtext = read_file("stderr.txt");
	unlink(err_path);
	return status;
}

static const char *last_line(const char *text)
{
	static char line[256];
	size_t n = strlen(text);
	size_t start;

	while (n && text[n - 1] == '\n')
		n--;
	for (start = n; start && text[start - 1] != '\n'; start--)
		;
	snprintf(line, sizeof(line), "%.*s", (int)(n - start), text + start);
	return line;
}

Test(gate_command, exit_0_when_every_check_holds, .timeout = 10)
{
	struct pv o = good;
	char *out;
	char *errtext;

	o.p50 = 229;
	write_stamp(&o, 1, holds_expect);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 0, "%s%s", out, errtext);
	cr_expect_str_eq(last_line(out), "3 checks, 0 failed", "%s", out);
	cr_expect(strstr(out, "PASS  expect") != NULL, "%s", out);
	cr_expect(strstr(out, "FAIL") == NULL, "%s", out);
	cr_expect_str_eq(errtext, "");
	free(out);
	free(errtext);
}

Test(gate_command, exit_1_when_a_check_breaks, .timeout = 10)
{
	struct pv o = good;
	char *out;
	char *errtext;

	o.tto = NAN;	/* the breaker never opened */
	write_stamp(&o, 1, holds_expect);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 1, "%s%s", out, errtext);
	cr_expect_str_eq(last_line(out), "3 checks, 1 failed", "%s", out);
	cr_expect(strstr(out, "FAIL  expect  breaker-on  outage  time_to_open_ms") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "no value") != NULL, "%s", out);
	free(out);
	free(errtext);
}

/* The summary's time scale scales the scenario's bounds. */
Test(gate_command, bounds_at_the_summarys_scale, .timeout = 10)
{
	struct pv o = good;
	char *out;
	char *errtext;

	o.p50 = 23;
	o.tto = 150;
	write_stamp(&o, 0.1, holds_expect);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 0, "%s%s", out, errtext);
	free(out);
	free(errtext);
	o.p50 = 24;	/* over 230 × 0.1 */
	write_stamp(&o, 0.1, holds_expect);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 1, "%s%s", out, errtext);
	free(out);
	free(errtext);
}

/* Unusable input: exit 2, nothing on out, the file and the trouble on stderr. */
Test(gate_command, exit_2_for_unusable_input, .timeout = 10)
{
	char *out;
	char *errtext;
	char want[512];
	cJSON *other;

	/* No summary.json. */
	write_scenario("scenario.json", holds_expect);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	snprintf(want, sizeof(want), "chaos gate: %s/summary.json: cannot open", dir);
	cr_expect(strncmp(errtext, want, strlen(want)) == 0, "%s", errtext);
	cr_expect_str_eq(out, "");
	free(out);
	free(errtext);

	/* A summary that is not JSON. */
	write_file("summary.json", "{\"scenario\":");
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "summary.json") != NULL, "%s", errtext);
	free(out);
	free(errtext);

	/* A summary without a time scale. */
	write_file("summary.json", "{\"scenario\":\"gt\",\"setups\":{}}");
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	snprintf(want, sizeof(want), "%s/summary.json: time_scale: expected a number", dir);
	cr_expect(strstr(errtext, want) != NULL, "%s", errtext);
	free(out);
	free(errtext);

	/* A bad scenario.json. */
	write_stamp(&good, 1, "[{\"setup\":\"nobody\",\"phase\":\"outage\",\"error_rate_max\":0}]");
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	snprintf(want, sizeof(want), "%s/scenario.json: expect[0].setup:", dir);
	cr_expect(strstr(errtext, want) != NULL, "%s", errtext);
	free(out);
	free(errtext);

	/* No scenario.json. */
	write_stamp(&good, 1, holds_expect);
	snprintf(want, sizeof(want), "%s/scenario.json", dir);
	unlink(want);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "scenario.json: cannot open") != NULL, "%s", errtext);
	free(out);
	free(errtext);

	/* A missing baseline file; one of another scenario. */
	write_stamp(&good, 1, holds_expect);
	cr_expect_eq(command("nothere.json", NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "nothere.json: cannot open") != NULL, "%s", errtext);
	free(out);
	free(errtext);
	other = summary_one("direct", &good);
	cJSON_ReplaceItemInObjectCaseSensitive(other, "scenario", cJSON_CreateString("other"));
	write_json("other.json", other);
	cJSON_Delete(other);
	cr_expect_eq(command("other.json", "saved.json", &out, &errtext), 2);
	snprintf(want, sizeof(want), "chaos gate: %s/other.json: scenario: expected the run's "
		 "scenario \"gt\", got \"other\"", dir);
	cr_expect(strncmp(errtext, want, strlen(want)) == 0, "%s", errtext);
	cr_expect_str_eq(out, "");
	free(out);
	free(errtext);
	out = read_file("saved.json");
	cr_expect_null(out, "nothing saved from unusable input");
	free(out);
}

/* --save-baseline writes the summary with its tolerances; gating against it holds. */
Test(gate_command, save_baseline_round_trip, .timeout = 10)
{
	struct pv o = good;
	char *out;
	char *errtext;
	char *text;
	cJSON *saved;
	cJSON *tol;

	write_stamp(&o, 0.1, "[]");
	cr_expect_eq(command(NULL, "base.json", &out, &errtext), 0, "%s%s", out, errtext);
	cr_expect(strstr(out, "baseline saved: ") != NULL, "%s", out);
	cr_expect_str_eq(last_line(out), "0 checks, 0 failed");
	free(out);
	free(errtext);
	text = read_file("base.json.tmp");
	cr_expect_null(text, "no .tmp left");
	free(text);
	text = read_file("base.json");
	cr_assert_not_null(text);
	saved = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(saved);
	tol = cJSON_GetObjectItemCaseSensitive(saved, "tolerances");
	cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(tol, "relative")->valuedouble, 0.25,
			   1e-12);
	cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(tol, "floor_ms")->valuedouble, 5,
			   1e-12);
	tol = cJSON_GetObjectItemCaseSensitive(tol, "absolute");
	cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(tol, "error_rate")->valuedouble, 0.01,
			   1e-12);
	cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(tol, "answered_share")->valuedouble,
			   0.01, 1e-12);
	cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(tol, "fallback_share")->valuedouble,
			   0.05, 1e-12);
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(saved, "scenario")->valuestring, "gt");
	cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(saved, "setups"));
	cJSON_Delete(saved);

	/* The same run against it: every figure holds. */
	cr_expect_eq(command("base.json", NULL, &out, &errtext), 0, "%s%s", out, errtext);
	cr_expect_str_eq(last_line(out), "28 checks, 0 failed", "%s", out);
	cr_expect(strstr(out, "PASS  baseline") != NULL, "%s", out);
	free(out);
	free(errtext);

	/* A slower run regresses past it; saving over it again accepts the new figures. */
	o.p95 = 300;	/* 210 × 1.25 + 5 = 267.5 */
	write_stamp(&o, 0.1, "[]");
	cr_expect_eq(command("base.json", NULL, &out, &errtext), 1, "%s%s", out, errtext);
	cr_expect_str_eq(last_line(out), "28 checks, 2 failed", "%s", out);
	cr_expect(strstr(out, "FAIL  baseline  breaker-on  outage   latency_ms.p95") != NULL,
		  "%s", out);
	free(out);
	free(errtext);
	cr_expect_eq(command("base.json", "base.json", &out, &errtext), 1, "%s%s", out, errtext);
	free(out);
	free(errtext);
	cr_expect_eq(command("base.json", NULL, &out, &errtext), 0, "%s%s", out, errtext);
	free(out);
	free(errtext);

	/* A baseline that cannot be written: exit 1, the file and the error named. */
	cr_expect_eq(command(NULL, "no/such/dir.json", &out, &errtext), 1);
	cr_expect(strstr(errtext, "/no/such/dir.json.tmp: No such file or directory")
		  != NULL, "%s", errtext);
	free(out);
	free(errtext);
}

/* A baseline saved at another time scale is unusable for this run. */
Test(gate_command, baseline_of_another_scale, .timeout = 10)
{
	char *out;
	char *errtext;

	write_stamp(&good, 1, "[]");
	cr_expect_eq(command(NULL, "base.json", &out, &errtext), 0, "%s%s", out, errtext);
	free(out);
	free(errtext);
	write_stamp(&good, 0.1, "[]");
	cr_expect_eq(command("base.json", NULL, &out, &errtext), 2, "%s%s", out, errtext);
	cr_expect(strstr(errtext, "base.json: time_scale: expected the run's time scale 0.1") !=
		  NULL, "%s", errtext);
	free(out);
	free(errtext);
}
