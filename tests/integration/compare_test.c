/*
 * bin/chaos compare end to end: a short deterministic scenario (constant
 * arrivals, no jitter, a fault window and breaker cooldown away from the
 * request grid) run twice by bin/chaos run; the two stamps agree within
 * compare's bounds (exit 0, --json written), and once one stamp's
 * summary.json has its answered share moved by 2 percentage points,
 * compare exits 1 naming that row.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/lgharness.h"

static char dir[256];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos_compare, .init = setup, .fini = lg_cleanup);

/*
 * Every event 25 ms from any other, so that no order is left to chance:
 * requests go every 50 ms; both providers answer in 425 ms (ends at
 * x.x25 s, between sends: the primary's answers to requests sent before
 * the fault each break the run of failures); the primary answers 503 at
 * once from 1.025 s to 2 s. The last answer from before the fault comes at
 * 1.425 s, so the breaker (2 consecutive failures) opens on the 503s of
 * 1.45 s and 1.5 s: time to open about 500 ms, 10 duplicate attempts; it
 * half-opens 525 ms later, after the fault, and the probe of 2.05 s
 * closes it.
 */
static const char scenario_json[] =
	"{\"name\":\"cmp-short\",\"description\":\"compare test\",\"duration_s\":4,"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":425,"
	"\"faults\":[{\"kind\":\"status\",\"status\":503,\"from_s\":1.025,\"to_s\":2}]},"
	"{\"name\":\"secondary\",\"ttft_ms\":425}],"
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":1},"
	"{\"name\":\"outage\",\"from_s\":1,\"to_s\":2},"
	"{\"name\":\"after\",\"from_s\":2,\"to_s\":4}],"
	"\"load\":{\"rate\":20,\"timeout_ms\":2000},"
	"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{\"request_deadline_ms\":1800,"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":1000},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000}},"
	"\"breaker\":{\"consecutive_failures\":2,\"cooldown_ms\":525,\"cooldown_jitter\":0,"
	"\"cooldown_multiplier\":1,\"half_open_probes\":1},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}}]}";

/* The stamps under DIR/results/NAME, sorted by name, into a and b. */
static void two_stamps(const char *name, char *a, char *b, size_t len)
{
	char parent[400];
	struct dirent **list;
	int n;
	int i;
	int k = 0;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	n = scandir(parent, &list, NULL, alphasort);
	cr_assert_geq(n, 0, "no %s", parent);
	for (i = 0; i < n; i++) {
		if (list[i]->d_name[0] != '.') {
			cr_assert_lt(k, 2, "more than two stamps under %s", parent);
			snprintf(k ? b : a, len, "%s/%.100s", parent, list[i]->d_name);
			k++;
		}
		free(list[i]);
	}
	free(list);
	cr_assert_eq(k, 2, "%d stamps under %s", k, parent);
}

/* Moves setups.SETUP.phases.PHASE.answered_share.mean of STAMP/summary.json by delta. */
static void edit_answered(const char *stamp, const char *setup_name, const char *phase,
			  double delta)
{
	char path[700];
	struct buf b = { 0 };
	cJSON *root;
	cJSON *mean;
	char *text;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	fp = fopen(path, "r");
	cr_assert_not_null(fp, "no %s", path);
	{
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
			cr_assert_eq(buf_append(&b, chunk, n), 0);
	}
	fclose(fp);
	root = cJSON_Parse(b.data);
	buf_free(&b);
	cr_assert_not_null(root, "%s is not JSON", path);
	mean = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(root, "setups"), setup_name), "phases"),
		phase), "answered_share"), "mean");
	cr_assert(cJSON_IsNumber(mean), "%s: no %s/%s answered_share", path, setup_name, phase);
	cJSON_SetNumberValue(mean, mean->valuedouble + delta);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	cr_assert_eq(fputs(text, fp) >= 0 && fclose(fp) == 0, 1, "cannot write %s", path);
	free(text);
}

/* The line of out holding every one of the words, in order, or NULL. */
static const char *line_with(const char *out, const char *const *words)
{
	const char *line = out;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		const char *p = line;
		size_t i;

		for (i = 0; words[i] && p; i++) {
			p = strstr(p, words[i]);
			if (p && end && p > end)
				p = NULL;
			if (p)
				p += strlen(words[i]);
		}
		if (p)
			return line;
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

Test(chaos_compare, two_real_runs_agree_and_an_edited_one_does_not, .timeout = 120)
{
	static const char *const fail_row[] = { "gw ", " outage ", " answered_share ", " FAIL",
						NULL };
	static const char *const open_row[] = { "gw ", " outage ", " time_to_open_ms ", " PASS",
						NULL };
	static const char *const bt_row[] = { "gw ", " breaker_transitions ", " 3 ", " 3 ",
					      " PASS", NULL };
	char scenario[400];
	char out[400];
	char real[600];
	char sim[600];
	char json[600];
	char err[8192];
	struct stat st;
	struct lg_proc p;
	int rc;
	int i;

	write_file(dir, "cmp-short.json", scenario_json, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	for (i = 0; i < 2; i++) {
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 50);
		cr_assert_eq(rc, 0, "chaos run %d exited %d:\n%s", i + 1, rc, err);
	}
	two_stamps("cmp-short", real, sim, sizeof(real));

	/* Two runs of the scenario agree: exit 0, every row PASS, the rows as JSON. */
	snprintf(json, sizeof(json), "%s/compare.json", dir);
	{
		const char *argv[] = { "chaos", "compare", real, sim, "--json", json, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
		rc = lg_wait(&p, 30);
	}
	cr_assert_eq(rc, 0, "chaos compare exited %d:\n%s%s", rc, p.out, p.err);
	cr_expect(strstr(p.out, "is not marked \"simulated\": true"), "%s", p.out);
	cr_expect(strstr(p.out, " 0 failed\n"), "%s", p.out);
	cr_expect(line_with(p.out, open_row), "the breaker opened in both:\n%s", p.out);
	cr_expect(line_with(p.out, bt_row), "closed->open->half_open->closed in both:\n%s", p.out);
	cr_expect_eq(stat(json, &st), 0, "no %s", json);

	/* One stamp's answered share in the outage moved by 2 points: exit 1, that row. */
	edit_answered(sim, "gw", "outage", -0.02);
	{
		const char *argv[] = { "chaos", "compare", real, sim, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
		rc = lg_wait(&p, 30);
	}
	cr_assert_eq(rc, 1, "chaos compare exited %d:\n%s%s", rc, p.out, p.err);
	cr_expect(line_with(p.out, fail_row), "no failed answered_share row:\n%s", p.out);
	cr_expect(strstr(p.out, " 1 failed\n"), "%s", p.out);
}
