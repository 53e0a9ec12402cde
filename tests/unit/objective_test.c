/*
 * A scenario's objective: loaded strictly (bounds, phase, at least one
 * bound, scaled p95), judged on the runs' means with the bounds each
 * setup breaks, every phase with "*", the best of several candidates
 * (cheapest, ties by p95), the knee's exchange rate, the report naming
 * the best setup, and chaos gate --objective judging the worst run (lines
 * marked "objective").
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/gate.h"
#include "runner/objective.h"
#include "runner/report.h"
#include "runner/stats.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "objective"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(objective, .init = setup, .fini = teardown, .timeout = 10);

/* Writes DIR/name: a scenario with phases steady [0,10) and outage [10,20) and objective. */
static void write_scenario(const char *name, const char *objective)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"name\":\"ob\",\"duration_s\":20,"
		 " \"providers\":[{\"name\":\"primary\",\"ttft_ms\":200}],"
		 " \"phases\":[{\"name\":\"steady\",\"from_s\":0,\"to_s\":10},"
		 "            {\"name\":\"outage\",\"from_s\":10,\"to_s\":20}],"
		 " \"load\":{\"concurrency\":2},"
		 " \"setups\":[{\"name\":\"gw-a\",\"kind\":\"direct\",\"provider\":\"primary\"},"
		 "            {\"name\":\"gw-b\",\"kind\":\"direct\",\"provider\":\"primary\"}]"
		 "%s%s}",
		 objective ? ", \"objective\":" : "", objective ? objective : "");
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0);
}

static int load(const char *objective, double scale, struct scenario *sc)
{
	char path[128];

	write_scenario("scn.json", objective);
	snprintf(path, sizeof(path), "%s/scn.json", dir);
	return scenario_load(path, scale, sc, err);
}

Test(objective, loads_its_bounds_scaled_and_defaults_to_every_phase)
{
	struct scenario sc;

	cr_assert_eq(load("{\"answered_min\":0.98,\"p95_ms_max\":4000,"
			  "\"duplicate_share_max\":0.05,\"cost_per_answered_usd_max\":0.004}",
			  0.5, &sc), 0, "%s", err);
	cr_assert(sc.objective.given);
	cr_assert_str_eq(sc.objective.phase, "*");
	cr_assert_float_eq(sc.objective.answered_min, 0.98, 0);
	cr_assert_float_eq(sc.objective.p95_ms_max, 2000, 0, "p95 is a duration: scaled");
	cr_assert_float_eq(sc.objective.duplicate_share_max, 0.05, 0);
	cr_assert_float_eq(sc.objective.cost_per_answered_usd_max, 0.004, 0);
	cr_assert_float_eq(objective_exchange(&sc.objective), 2.5, 1e-12);
	scenario_free(&sc);
	cr_assert_eq(load(NULL, 1, &sc), 0, "%s", err);
	cr_assert_not(sc.objective.given);
	cr_assert_float_eq(objective_exchange(&sc.objective), 1, 0);
	scenario_free(&sc);
}

Test(objective, bad_objectives_name_the_key)
{
	static const struct {
		const char *obj;
		const char *msg;
	} cases[] = {
		{ "[1]", "objective: expected an object" },
		{ "{}", "objective: expected at least one bound" },
		{ "{\"phase\":\"outage\"}", "objective: expected at least one bound" },
		{ "{\"answered_min\":1.5}", "objective.answered_min: expected" },
		{ "{\"answered_min\":\"0.9\"}", "objective.answered_min: expected a number" },
		{ "{\"p95_ms_max\":-1}", "objective.p95_ms_max: expected" },
		{ "{\"answered_min\":0.9,\"phase\":\"recovery\"}",
		  "objective.phase: expected a phase name (steady, outage) or \"*\", got \"recovery\"" },
		{ "{\"answered_min\":0.9,\"p99_ms_max\":5}", "objective.p99_ms_max" },
	};
	struct scenario sc;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_neq(load(cases[i].obj, 1, &sc), 0, "case %zu loaded", i);
		cr_expect(strstr(err, cases[i].msg) != NULL, "case %zu: %s", i, err);
		cr_expect(strstr(err, "scn.json") != NULL, "case %zu names the file: %s", i, err);
	}
}

/* A combined phase: each figure {mean: v}, through stats_combine like chaos run. */
static cJSON *phase_fig(double ans, double p95, double dup, double cost)
{
	char text[512];
	cJSON *run;
	cJSON *c;

	snprintf(text, sizeof(text),
		 "{\"phases\":{\"p\":{\"answered_share\":%s,\"latency_ms\":{\"p95\":%s},"
		 "\"duplicate_share\":%s,\"cost_per_answered\":%s}}}",
		 isnan(ans) ? "null" : "0", isnan(p95) ? "null" : "0", isnan(dup) ? "null" : "0",
		 isnan(cost) ? "null" : "0");
	run = cJSON_Parse(text);
	cr_assert_not_null(run);
	c = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "phases"), "p");
	if (!isnan(ans))
		cJSON_SetNumberHelper(cJSON_GetObjectItem(c, "answered_share"), ans);
	if (!isnan(p95))
		cJSON_SetNumberHelper(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "latency_ms"), "p95"),
				      p95);
	if (!isnan(dup))
		cJSON_SetNumberHelper(cJSON_GetObjectItem(c, "duplicate_share"), dup);
	if (!isnan(cost))
		cJSON_SetNumberHelper(cJSON_GetObjectItem(c, "cost_per_answered"), cost);
	c = stats_combine(&run, 1);
	cJSON_Delete(run);
	cr_assert_not_null(c);
	return c;
}

Test(objective, judges_means_and_says_which_bound_breaks)
{
	struct sc_objective o = { .given = true, .phase = "p", .answered_min = 0.98,
				  .p95_ms_max = 4000, .duplicate_share_max = 0.05,
				  .cost_per_answered_usd_max = 0.004 };
	struct objective_verdict v;
	cJSON *c;

	c = phase_fig(0.98, 4000, 0.05, 0.004);	/* every bound at its edge */
	objective_judge(&o, cJSON_GetObjectItem(cJSON_GetObjectItem(c, "phases"), "p"), &v);
	cr_expect(v.meets, "at the edges: %s", v.broken);
	cr_expect_str_eq(v.broken, "");
	objective_judge_setup(&o, c, &v);
	cr_expect(v.meets, "%s", v.broken);
	cJSON_Delete(c);

	c = phase_fig(0.91, 5210, 0.01, NAN);
	objective_judge_setup(&o, c, &v);
	cr_expect_not(v.meets);
	cr_expect_str_eq(v.broken, "answered_min 0.91<0.98; p95_ms_max 5210>4000; "
			 "cost_per_answered_usd_max: no value");
	o.phase = "outage";
	objective_judge_setup(&o, c, &v);
	cr_expect_not(v.meets);
	cr_expect_str_eq(v.broken, "outage: no such phase in the run");
	o.phase = "*";
	o.cost_per_answered_usd_max = NAN;
	o.p95_ms_max = NAN;
	objective_judge_setup(&o, c, &v);
	cr_expect_str_eq(v.broken, "p: answered_min 0.91<0.98");
	cJSON_Delete(c);
}

Test(objective, the_best_is_the_cheapest_that_meets_it_ties_by_p95)
{
	const struct objective_candidate c[] = {
		{ false, 0.001, 100 },	/* cheapest, but fails */
		{ true, 0.003, 900 },
		{ true, 0.002, 800 },
		{ true, 0.002 * (1 + 1e-12), 700 },	/* the same cost, lower p95 */
		{ true, NAN, 10 },	/* no cost: taken as the highest */
	};

	cr_expect_eq(objective_best(c, 5), 3);
	cr_expect_eq(objective_best(c, 3), 2);
	cr_expect_eq(objective_best(c, 1), -1, "none meets it");
	cr_expect_eq(objective_best(&c[4], 1), 0);
}

/* A combined summary of setups gw-a and gw-b, each one run of the given outage figures. */
static cJSON *two_setups(const char *a_outage, const char *b_outage)
{
	const char *const outage[] = { a_outage, b_outage };
	const char *const names[] = { "gw-a", "gw-b" };
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	char text[512];
	size_t k;

	for (k = 0; k < 2; k++) {
		cJSON *run;

		snprintf(text, sizeof(text), "{\"phases\":{\"outage\":%s}}", outage[k]);
		run = cJSON_Parse(text);
		cr_assert_not_null(run, "%s", text);
		cJSON_AddItemToObject(setups, names[k], stats_combine(&run, 1));
		cJSON_Delete(run);
	}
	return sum;
}

/* The report's objective section, markdown or not, into a string (the caller frees it). */
static char *report_text(const struct scenario *sc, const cJSON *sum, bool markdown)
{
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);

	cr_assert_not_null(fp);
	report_table(fp, sc, sum, markdown);
	fclose(fp);
	return out;
}

/*
 * The report names the best setup against the objective, as the sweep
 * names its best point (objective_best: the cheapest that meets it, ties
 * by p95), with the figures it won on — or says that none meets it.
 */
Test(objective, the_report_names_the_best_setup)
{
	static const char *const meets_dear =
		"{\"answered_share\":1,\"latency_ms\":{\"p95\":300},\"cost_per_answered\":0.004}";
	static const char *const meets_cheap =
		"{\"answered_share\":0.995,\"latency_ms\":{\"p95\":900},"
		"\"cost_per_answered\":0.002}";
	static const char *const fails_cheap =
		"{\"answered_share\":0.9,\"latency_ms\":{\"p95\":100},\"cost_per_answered\":0.001}";
	struct scenario sc;
	cJSON *sum;
	char *out;

	cr_assert_eq(load("{\"answered_min\":0.99,\"p95_ms_max\":1000,\"phase\":\"outage\"}",
			  1, &sc), 0, "%s", err);

	sum = two_setups(meets_dear, meets_cheap);
	out = report_text(&sc, sum, true);
	cr_expect(strstr(out, "- **gw-a**: meets it\n- **gw-b**: meets it\n") != NULL, "%s", out);
	cr_expect(strstr(out, "\nBest against the objective: **gw-b** — the cheapest of the 2 "
			 "setups that meet it, ties by p95: cost per answered 0.002 USD, p95 900 ms "
			 "in phase outage.\n") != NULL, "%s", out);
	free(out);
	out = report_text(&sc, sum, false);
	cr_expect(strstr(out, "  best: gw-b (the cheapest of the 2 setups that meet it, ties by "
			 "p95; cost per answered 0.002 USD, p95 900 ms in phase outage)\n") != NULL,
		  "%s", out);
	free(out);
	cJSON_Delete(sum);

	sum = two_setups(meets_dear, fails_cheap);
	out = report_text(&sc, sum, true);
	cr_expect(strstr(out, "- **gw-b**: fails — answered_min 0.9<0.99\n") != NULL, "%s", out);
	cr_expect(strstr(out, "Best against the objective: **gw-a** — the only setup that meets "
			 "it: cost per answered 0.004 USD, p95 300 ms in phase outage.\n") != NULL,
		  "%s", out);
	free(out);
	out = report_text(&sc, sum, false);
	cr_expect(strstr(out, "  best: gw-a (the only setup that meets it; cost per answered "
			 "0.004 USD, p95 300 ms in phase outage)\n") != NULL, "%s", out);
	free(out);
	cJSON_Delete(sum);

	sum = two_setups(fails_cheap, fails_cheap);
	out = report_text(&sc, sum, true);
	cr_expect(strstr(out, "Best against the objective: **none** — no setup meets it.\n") != NULL,
		  "%s", out);
	free(out);
	out = report_text(&sc, sum, false);
	cr_expect(strstr(out, "  best: none meets it\n") != NULL, "%s", out);
	free(out);
	cJSON_Delete(sum);
	scenario_free(&sc);
}

/* chaos gate --objective: the worst of two runs breaks answered_min; the other setup holds. */
Test(objective, gate_judges_the_objective_on_the_worst_run)
{
	static const char *const a[] = {
		"{\"phases\":{\"steady\":{\"answered_share\":1,\"latency_ms\":{\"p95\":100}},"
		"\"outage\":{\"answered_share\":0.99,\"latency_ms\":{\"p95\":100},"
		"\"duplicate_share\":0.05,\"cost_per_answered\":0.003}}}",
		"{\"phases\":{\"steady\":{\"answered_share\":1,\"latency_ms\":{\"p95\":100}},"
		"\"outage\":{\"answered_share\":0.95,\"latency_ms\":{\"p95\":100},"
		"\"duplicate_share\":0.1,\"cost_per_answered\":0.004}}}",
	};
	static const char *const b[] = {
		"{\"phases\":{\"steady\":{\"answered_share\":1,\"latency_ms\":{\"p95\":100}},"
		"\"outage\":{\"answered_share\":0.99,\"latency_ms\":{\"p95\":100},"
		"\"duplicate_share\":0.2,\"cost_per_answered\":null}}}",
	};
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	cJSON *runs[2];
	char *text;
	char *out = NULL;
	size_t len = 0;
	FILE *fp;
	size_t k;

	cJSON_AddStringToObject(sum, "scenario", "ob");
	cJSON_AddNumberToObject(sum, "time_scale", 1);
	cJSON_AddNumberToObject(sum, "repeat", 2);
	for (k = 0; k < 2; k++)
		runs[k] = cJSON_Parse(a[k]);
	cJSON_AddItemToObject(setups, "gw-a", stats_combine(runs, 2));
	for (k = 0; k < 2; k++)
		cJSON_Delete(runs[k]);
	runs[0] = cJSON_Parse(b[0]);
	cJSON_AddItemToObject(setups, "gw-b", stats_combine(runs, 1));
	cJSON_Delete(runs[0]);
	text = cJSON_Print(sum);
	cJSON_Delete(sum);
	cr_assert_eq(tmpdir_write(dir, "summary.json", text, strlen(text)), 0);
	free(text);
	write_scenario("scenario.json", "{\"answered_min\":0.98,\"duplicate_share_max\":0.1,"
		       "\"cost_per_answered_usd_max\":0.004,\"phase\":\"outage\"}");

	fp = open_memstream(&out, &len);
	cr_assert_eq(gate_command(dir, NULL, NULL, "gw-*", fp), 1, "gw-a's worst run breaks it");
	fclose(fp);
	/* answered share, duplicate share (both at the bound in the worst run), cost */
	cr_expect(strstr(out, "FAIL  objective  gw-a  outage  answered_share") != NULL, "%s", out);
	cr_expect(strstr(out, "PASS  objective  gw-a  outage  duplicate_share") != NULL, "%s", out);
	cr_expect(strstr(out, "PASS  objective  gw-a  outage  cost_per_answered") != NULL, "%s",
		  out);
	cr_expect(strstr(out, "PASS  objective  gw-b  outage  answered_share") != NULL, "%s", out);
	cr_expect(strstr(out, "FAIL  objective  gw-b  outage  duplicate_share") != NULL, "%s", out);
	cr_expect(strstr(out, "FAIL  objective  gw-b  outage  cost_per_answered") != NULL, "%s",
		  out);
	cr_expect(strstr(out, "6 checks, 3 failed") != NULL, "%s", out);
	free(out);

	fp = open_memstream(&out, &len);
	cr_assert_eq(gate_command(dir, NULL, NULL, "gw-a", fp), 1);
	fclose(fp);
	free(out);
	fp = open_memstream(&out, &len);
	cr_assert_eq(gate_command(dir, NULL, NULL, NULL, fp), 0, "no expect, no objective asked");
	fclose(fp);
	free(out);

	write_scenario("scenario.json", NULL);
	fp = open_memstream(&out, &len);
	cr_assert_eq(gate_command(dir, NULL, NULL, "*", fp), 2, "no objective to gate on");
	fclose(fp);
	free(out);
}
