/*
 * stamp: a results stamp's layout — paths of its files and runs, the first
 * completed run of a setup, the time scale it ran at — and loading its
 * summary and scenario, with the summary's head checked and errors that
 * name the file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cfg.h"
#include "tests/support/tmpdir.h"
#include "runner/stamp.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "stamp"), 0);
	err[0] = '\0';
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(stamp, .init = setup, .fini = teardown, .timeout = 10);

static void write_file(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s/%s", dir, name);
}

static void make_dir(const char *name)
{
	cr_assert_eq(tmpdir_mkdir(dir, name), 0, "mkdir %s/%s: %s", dir, name, strerror(errno));
}

static const char scenario_json[] =
	"{\"name\": \"stamp-t\", \"duration_s\": 20,\n"
	" \"providers\": [{\"name\": \"primary\", \"ttft_ms\": 20}],\n"
	" \"phases\": [{\"name\": \"all\", \"from_s\": 0, \"to_s\": 20}],\n"
	" \"load\": {\"concurrency\": 1},\n"
	" \"setups\": [{\"name\": \"direct\", \"kind\": \"direct\", \"provider\": \"primary\"}]}\n";

static const char summary_json[] =
	"{\"scenario\": \"stamp-t\", \"time_scale\": 0.5, \"repeat\": 3,\n"
	" \"setups\": {\"direct\": {\"windows\": []}}}\n";

Test(stamp, paths_of_files_and_runs, .timeout = 5)
{
	char out[64];

	cr_assert_eq(stamp_path(out, sizeof(out), "R/s", "summary.json"), 0);
	cr_assert_str_eq(out, "R/s/summary.json");
	cr_assert_eq(stamp_run_dir(out, sizeof(out), "R/s", "direct", 2), 0);
	cr_assert_str_eq(out, "R/s/direct/run-2");
	cr_assert_eq(stamp_path(out, 8, "R/s", "summary.json"), -ENAMETOOLONG);
	cr_assert_eq(stamp_run_dir(out, 8, "R/s", "direct", 2), -ENAMETOOLONG);
}

/* The allocating forms are never cut, however long the stamp's path. */
Test(stamp, paths_of_any_length, .timeout = 5)
{
	char longdir[3000];
	char want[3100];
	char *p;

	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	p = stamp_path_alloc(longdir, "summary.json");
	cr_assert_not_null(p);
	snprintf(want, sizeof(want), "%s/summary.json", longdir);
	cr_assert_str_eq(p, want);
	free(p);
	p = stamp_run_dir_alloc(longdir, "direct", 2);
	cr_assert_not_null(p);
	snprintf(want, sizeof(want), "%s/direct/run-2", longdir);
	cr_assert_str_eq(p, want);
	free(p);
}

Test(stamp, loads_the_summary_and_the_scenario_at_its_time_scale, .timeout = 10)
{
	struct stamp s;

	write_file("summary.json", summary_json);
	write_file("scenario.json", scenario_json);
	cr_assert_eq(stamp_load(&s, dir, err), 0, "%s", err);
	cr_assert_str_eq(s.name, "stamp-t");
	cr_assert_float_eq(s.scale, 0.5, 1e-12);
	cr_assert_not_null(s.sc);
	cr_assert_float_eq(s.sc->duration_ms, 10000, 1e-9, "the scenario is scaled");
	cr_assert_str_eq(s.setups->child->string, "direct");
	stamp_free(&s);
}

Test(stamp, a_missing_summary_is_named, .timeout = 10)
{
	struct stamp s;
	char want[200];

	cr_assert_eq(stamp_load(&s, dir, err), -ENOENT);
	snprintf(want, sizeof(want), "%s/summary.json: No such file or directory (not a finished "
		 "chaos run's stamp directory?)", dir);
	cr_assert_str_eq(err, want);
	stamp_free(&s);
}

Test(stamp, a_missing_scenario_is_named, .timeout = 10)
{
	struct stamp s;
	char want[200];

	write_file("summary.json", summary_json);
	cr_assert_eq(stamp_load(&s, dir, err), -ENOENT);
	snprintf(want, sizeof(want), "%s/scenario.json: No such file or directory", dir);
	cr_assert_str_eq(err, want);
	stamp_free(&s);
}

Test(stamp, the_summary_head_is_checked, .timeout = 10)
{
	static const struct { const char *json; const char *what; } bad[] = {
		{ "{\"time_scale\": 1, \"setups\": {\"a\": {\"windows\": []}}}",
		  "scenario: expected a string" },
		{ "{\"scenario\": \"x\", \"time_scale\": 0, \"setups\": {\"a\": {\"windows\": []}}}",
		  "time_scale: expected a number in (0, 100]" },
		{ "{\"scenario\": \"x\", \"time_scale\": 1, \"setups\": {}}",
		  "setups: expected an object with a setup" },
		{ "{\"scenario\": \"x\", \"time_scale\": 1, \"setups\": {\"a\": {}}}",
		  "setups.a.windows: expected an array" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *summary = cJSON_Parse(bad[i].json);
		struct stamp s;
		char want[200];

		cr_assert_not_null(summary);
		write_file("summary.json", bad[i].json);
		cr_assert_eq(stamp_load(&s, dir, err), -EINVAL, "%s", bad[i].json);
		snprintf(want, sizeof(want), "%s/summary.json: %s", dir, bad[i].what);
		cr_assert_str_eq(err, want);
		stamp_free(&s);
		cr_assert_eq(stamp_use(&s, dir, summary, NULL, err), -EINVAL);
		cr_assert_str_eq(err, want);
		stamp_free(&s);
		cJSON_Delete(summary);
	}
}

Test(stamp, use_lends_what_the_caller_has, .timeout = 10)
{
	cJSON *summary = cJSON_Parse(summary_json);
	struct scenario sc = { 0 };
	struct stamp s;

	cr_assert_not_null(summary);
	cr_assert_eq(stamp_use(&s, dir, summary, &sc, err), 0, "%s", err);
	cr_assert_eq(s.summary, summary);
	cr_assert_eq(s.sc, &sc);
	cr_assert_float_eq(s.scale, 0.5, 1e-12);
	stamp_free(&s);
	cJSON_Delete(summary);	/* still the caller's: stamp_free left it */
}

Test(stamp, the_first_completed_run, .timeout = 10)
{
	cJSON *summary = cJSON_Parse(summary_json);
	char *run;
	char want[200];
	struct stamp s;

	cr_assert_not_null(summary);
	cr_assert_eq(stamp_use(&s, dir, summary, NULL, err), 0, "%s", err);
	make_dir("direct");
	cr_assert_eq(stamp_first_run(&s, "direct", &run), 0, "no run yet");
	cr_assert_null(run);
	make_dir("direct/run-2");
	make_dir("direct/run-3");
	cr_assert_eq(stamp_first_run(&s, "direct", &run), 2);
	snprintf(want, sizeof(want), "%s/direct/run-2", dir);
	cr_assert_str_eq(run, want);
	free(run);
	stamp_free(&s);
	cJSON_Delete(summary);
}

Test(stamp, the_time_scale_from_the_summary_or_a_first_run, .timeout = 10)
{
	struct scenario probe = { 0 };
	struct sc_setup setups[1] = { { .name = (char *)"direct" } };

	probe.setups = setups;
	probe.nsetups = 1;
	cr_assert(isnan(stamp_scale(dir, &probe)));
	make_dir("direct");
	make_dir("direct/run-1");
	write_file("direct/run-1/summary.json", "{\"time_scale\": 0.25}");
	cr_assert_float_eq(stamp_scale(dir, &probe), 0.25, 1e-12);
	write_file("summary.json", summary_json);
	cr_assert_float_eq(stamp_scale(dir, &probe), 0.5, 1e-12);
}
