/*
 * Provider groups and bad_content through bin/chaos: a scenario's "groups"
 * reach every member's mockprov process (each given the group it is in),
 * so both members of a region go down in its window while a provider
 * outside answers — in a real run and in chaos sim; a bad_content window
 * shows in the provider's log; chaos sim refuses bad_content, and a bad
 * "groups" exits 2 naming the key, before anything starts.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/harness.h"
#include "tests/support/lgharness.h"
#include "tests/support/tmpdir.h"

static char dir[256];
static char scenario[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos_groups, .init = setup, .fini = lg_cleanup);

/* eu1 and eu2 are in region eu, down in [1 s, 2 s); us is in none. */
#define PROVIDERS(us_faults) \
	"\"providers\":[{\"name\":\"eu1\",\"ttft_ms\":10,\"group\":\"eu\"}," \
	"{\"name\":\"eu2\",\"ttft_ms\":10,\"group\":\"eu\"}," \
	"{\"name\":\"us\",\"ttft_ms\":10,\"faults\":[" us_faults "]}]," \
	"\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"down\",\"from_s\":1,\"to_s\":2}]}}"
#define REST \
	"\"load\":{\"rate\":20,\"timeout_ms\":500}," \
	"\"setups\":[{\"name\":\"eu\",\"kind\":\"direct\",\"provider\":\"eu2\"}," \
	"{\"name\":\"us\",\"kind\":\"direct\",\"provider\":\"us\"}]"

static const char region[] =
	"{\"name\":\"region\",\"duration_s\":3,"
	PROVIDERS("{\"kind\":\"bad_content\",\"violation\":\"missing_key\",\"from_s\":2,\"to_s\":3}")
	"," REST "}";

static const char region_sim[] =
	"{\"name\":\"region-sim\",\"duration_s\":3," PROVIDERS("") "," REST "}";

/* Runs `chaos CMD FILE --out DIR/results --quiet`; its exit status, stderr into err. */
static int chaos(const char *cmd, const char *file, const char *text, char *err, size_t len)
{
	char out[600];

	write_file(dir, file, text, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", cmd, scenario, "--out", out, "--quiet", NULL };

		return run_program(argv, err, len, 50);
	}
}

/* The one stamp of scenario name, into out. */
static void stamp_dir(const char *name, char *out, size_t len)
{
	char parent[500];
	int n;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	n = tmpdir_only_entry(parent, out, len);
	cr_assert_eq(n, 1, "%d stamp dirs under %s", n, parent);
}

/*
 * A direct setup's requests: refused while its provider's group is down
 * (away from the edges), ok elsewhere; every one ok when down_from < 0.
 */
static void check_requests(const char *stamp, const char *setup, double down_from,
			   double down_to)
{
	struct csv_table t;
	char path[1000];
	size_t refused = 0;
	size_t i;

	snprintf(path, sizeof(path), "%s/%s/run-1/requests.csv", stamp, setup);
	cr_assert_eq(csv_read(path, &t), 0, "no %s", path);
	cr_assert_geq(t.nrows, 50, "%zu rows in %s", t.nrows, path);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");
		const char *outcome = csv_get(&t, i, "outcome");

		if (down_from >= 0 && sched > down_from + 100 && sched < down_to - 100) {
			cr_assert_str_eq(outcome, "refused", "%s row %zu at %.0f ms", setup, i, sched);
			refused++;
		} else if (down_from < 0 || sched < down_from - 100 || sched > down_to + 100) {
			cr_assert_str_eq(outcome, "ok", "%s row %zu at %.0f ms: %s", setup, i, sched,
					 csv_get(&t, i, "error"));
		}
	}
	if (down_from >= 0)
		cr_assert_geq(refused, 10, "%s: %zu refused", setup, refused);
	csv_free(&t);
}

/* Whether the file at path holds needle. */
static bool file_has(const char *path, const char *needle)
{
	FILE *fp = fopen(path, "r");
	char text[8192];
	size_t n;

	cr_assert_not_null(fp, "no %s", path);
	n = fread(text, 1, sizeof(text) - 1, fp);
	fclose(fp);
	text[n] = '\0';
	return strstr(text, needle) != NULL;
}

Test(chaos_groups, a_regions_members_go_down_together, .timeout = 90)
{
	struct csv_table t;
	char stamp[800];
	char path[1000];
	char err[8192];
	size_t faulted = 0;
	size_t i;
	int rc;

	rc = chaos("run", "region.json", region, err, sizeof(err));
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	stamp_dir("region", stamp, sizeof(stamp));
	check_requests(stamp, "eu", 1000, 2000);
	check_requests(stamp, "us", -1, -1);

	/* Each process was given its own group, and only a member one. */
	snprintf(path, sizeof(path), "%s/eu/run-1/mockprov-eu1.json", stamp);
	cr_assert(file_has(path, "\"groups\""), "%s lacks the group", path);
	snprintf(path, sizeof(path), "%s/eu/run-1/mockprov-us.json", stamp);
	cr_assert_not(file_has(path, "\"groups\""), "%s was given a group", path);

	/* eu1 was asked nothing; us's answers in [2 s, 3 s) were bad_content. */
	snprintf(path, sizeof(path), "%s/us/run-1/mock-us.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0, "no %s", path);
	for (i = 1; i < t.nrows; i++) {
		double at = lg_num(&t, i, "t_ms");
		const char *fault = csv_get(&t, i, "fault");

		if (at >= 2050 && at < 2950) {
			cr_assert_str_eq(fault, "bad_content", "row %zu at %.0f ms", i, at);
			cr_assert_str_eq(csv_get(&t, i, "outcome"), "faulted");
			cr_assert_str_eq(csv_get(&t, i, "status"), "200");
			faulted++;
		} else if (at < 1950) {
			cr_assert_str_eq(fault, "", "row %zu at %.0f ms", i, at);
		}
	}
	cr_assert_geq(faulted, 10);
	csv_free(&t);
}

Test(chaos_groups, simulated_too, .timeout = 60)
{
	char stamp[800];
	char err[8192];
	int rc;

	rc = chaos("sim", "region-sim.json", region_sim, err, sizeof(err));
	cr_assert_eq(rc, 0, "chaos sim exited %d:\n%s", rc, err);
	stamp_dir("region-sim", stamp, sizeof(stamp));
	check_requests(stamp, "eu", 1000, 2000);
	check_requests(stamp, "us", -1, -1);

	/* bad_content is not simulated: refused, the key named. */
	rc = chaos("sim", "region.json", region, err, sizeof(err));
	cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
	cr_assert(strstr(err, "providers[2].faults[0].kind: chaos sim does not simulate"), "%s",
		  err);
}

Test(chaos_groups, bad_groups_exit_2_naming_the_key, .timeout = 30)
{
	static const struct { const char *json; const char *key; } cases[] = {
		{ "{\"name\":\"bad\",\"duration_s\":3," PROVIDERS("") ",\"groups\":{}," REST "}",
		  "groups: given twice" },
		{ "{\"name\":\"bad\",\"duration_s\":3,\"providers\":[{\"name\":\"p\"}],"
		  "\"groups\":{\"eu\":{\"faults\":[]}},\"load\":{\"rate\":5},\"setups\":[{\"name\":"
		  "\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}", "groups.eu: no provider is in" },
		{ "{\"name\":\"bad\",\"duration_s\":3,\"providers\":[{\"name\":\"p\",\"group\":\"eu\"}],"
		  "\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"down\",\"from_s\":2}]}},\"load\":"
		  "{\"rate\":5},\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}",
		  "groups.eu.faults[0].to_s: missing" },
		{ "{\"name\":\"bad\",\"duration_s\":3,\"providers\":[{\"name\":\"p\",\"group\":\"e u\"}],"
		  "\"load\":{\"rate\":5},\"setups\":[{\"name\":\"d\",\"kind\":\"direct\","
		  "\"provider\":\"p\"}]}", "providers[0].group: expected a group's name" },
	};
	char results[600];
	char err[4096];
	struct stat st;
	size_t i;
	int rc;

	snprintf(results, sizeof(results), "%s/results", dir);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = chaos("run", "bad.json", cases[i].json, err, sizeof(err));
		cr_expect_eq(rc, 2, "[%zu] exit %d: %s", i, rc, err);
		cr_expect(strstr(err, scenario) && strstr(err, cases[i].key),
			  "[%zu] the file and %s are not named: %s", i, cases[i].key, err);
	}
	cr_assert_neq(stat(results, &st), 0, "results were started for a bad scenario");
}
