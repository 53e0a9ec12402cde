/*
 * chaos compare: two hand-made stamps (summary.json and scenario.json
 * written by the test) — every bound holds just inside it and breaks just
 * outside (answered share's percentage point, p50's 10 ms floor against
 * p95's 5%, the millisecond floors scaled at 0.2, attempts and duplicate
 * attempts' 5%, time to open's 50 ms), a figure with a value in one stamp
 * only, breaker transitions that differ, setups and phases one stamp
 * lacks, --setup; and the command's exit status, table, note line, JSON
 * file and unusable input (exit 2, the path named).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cfg.h"
#include "common/json.h"
#include "runner/compare.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "compare"), 0);
	cr_assert_eq(tmpdir_mkdir(dir, "real"), 0);
	cr_assert_eq(tmpdir_mkdir(dir, "sim"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(compare, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(compare_command, .init = setup, .fini = teardown, .timeout = 10);

/* ---- stamps ---- */

/* One phase's means; NAN is null (no value). */
struct ph {
	double ans, p50, p95, apr, dup, tto;
};

/* A gateway setup's outage: the breaker opened 500 ms in. */
static const struct ph base = { 0.95, 100, 400, 1.2, 20, 500 };

/* A combined figure {mean, stddev, min, max, n} of one run, or null. */
static cJSON *cfig(double v)
{
	cJSON *f;

	if (isnan(v))
		return cJSON_CreateNull();
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "mean", v);
	cJSON_AddNumberToObject(f, "stddev", 0);
	cJSON_AddNumberToObject(f, "min", v);
	cJSON_AddNumberToObject(f, "max", v);
	cJSON_AddNumberToObject(f, "n", 1);
	return f;
}

static cJSON *phase(const struct ph *v)
{
	cJSON *p = cJSON_CreateObject();
	cJSON *lat = cJSON_CreateObject();
	cJSON *dup = cJSON_CreateObject();

	cJSON_AddNumberToObject(p, "from_ms", 15000);
	cJSON_AddNumberToObject(p, "to_ms", 45000);
	cJSON_AddItemToObject(p, "requests", cfig(100));
	cJSON_AddItemToObject(p, "answered_share", cfig(v->ans));
	cJSON_AddItemToObject(lat, "p50", cfig(v->p50));
	cJSON_AddItemToObject(lat, "p95", cfig(v->p95));
	cJSON_AddItemToObject(lat, "p99", cfig(v->p95 * 2));	/* not compared */
	cJSON_AddItemToObject(p, "latency_ms", lat);
	cJSON_AddItemToObject(p, "attempts_per_request", cfig(v->apr));
	cJSON_AddItemToObject(dup, "attempts", cfig(v->dup));
	cJSON_AddItemToObject(dup, "tokens", cfig(v->dup * 10));
	cJSON_AddItemToObject(p, "duplicate_work", dup);
	cJSON_AddItemToObject(p, "time_to_open_ms", cfig(v->tto));
	return p;
}

/* A healthy phase: no breaker opening (time_to_open_ms null in both). */
static const struct ph healthy = { 1, 90, 120, 1, 0, NAN };

/* The usual sequence: open, probe, close. */
static const char seq3[] =
	"[[{\"t_ms\":15500,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"closed\","
	"\"to\":\"open\",\"reason\":\"x\"},"
	"{\"t_ms\":16500,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"open\","
	"\"to\":\"half_open\",\"reason\":null},"
	"{\"t_ms\":16600,\"provider\":\"primary\",\"model\":\"m\",\"from\":\"half_open\","
	"\"to\":\"closed\",\"reason\":null}]]";

/*
 * A combined summary: setups "direct" (no events) and "gw" (transitions
 * given as their JSON text), each with phases healthy and outage (gw's
 * outage o).
 */
static cJSON *summary(const char *name, double scale, const struct ph *o,
		      const char *transitions)
{
	cJSON *sum = cJSON_CreateObject();
	cJSON *setups = cJSON_AddObjectToObject(sum, "setups");
	const char *names[] = { "direct", "gw" };
	size_t i;

	cJSON_AddStringToObject(sum, "scenario", name);
	cJSON_AddNumberToObject(sum, "time_scale", scale);
	cJSON_AddNumberToObject(sum, "repeat", 1);
	for (i = 0; i < 2; i++) {
		cJSON *st = cJSON_AddObjectToObject(setups, names[i]);
		cJSON *phases = cJSON_AddObjectToObject(st, "phases");

		cJSON_AddNumberToObject(st, "runs", 1);
		cJSON_AddItemToObject(phases, "healthy", phase(&healthy));
		cJSON_AddItemToObject(phases, "outage", phase(i ? o : &base));
		cJSON_AddItemToObject(st, "windows", cJSON_CreateArray());
		cJSON_AddItemToObject(st, "breaker_transitions",
				      cJSON_Parse(i ? transitions : "[[]]"));
	}
	return sum;
}

/* Compares two summaries in memory (stamp_use); 0 or the error, rows in r. */
static int evaluate(const cJSON *real, const cJSON *sim, const char *only,
		    struct compare_result *r)
{
	struct stamp a;
	struct stamp b;
	int rc;

	cr_assert_eq(stamp_use(&a, "real", real, NULL, err), 0, "%s", err);
	cr_assert_eq(stamp_use(&b, "sim", sim, NULL, err), 0, "%s", err);
	rc = compare_evaluate(&a, &b, only, r, err);
	stamp_free(&a);
	stamp_free(&b);
	return rc;
}

/* The row of setup/phase/figure, or NULL. */
static const struct compare_row *row(const struct compare_result *r, const char *setup,
				     const char *ph, const char *figure)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct compare_row *w = &r->rows[i];

		if (!strcmp(w->setup, setup) && !strcmp(w->phase, ph) && !strcmp(w->figure, figure))
			return w;
	}
	return NULL;
}

/* Compares base with o at scale; the verdict on gw/outage/figure. */
static bool verdict(const struct ph *o, double scale, const char *figure)
{
	cJSON *real = summary("ct", scale, &base, seq3);
	cJSON *sim = summary("ct", scale, o, seq3);
	struct compare_result r;
	const struct compare_row *w;
	bool pass;

	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	w = row(&r, "gw", "outage", figure);
	cr_assert_not_null(w, "no row for %s", figure);
	pass = w->pass;
	cr_expect_eq(r.failed, pass ? 0 : 1, "%s: %zu failed", figure, r.failed);
	compare_result_free(&r);
	cJSON_Delete(real);
	cJSON_Delete(sim);
	return pass;
}

/* verdict's row, with the real outage o and the sim's the same but its duplicate attempts dup. */
static bool verdict_vs(const struct ph *o, double dup, const char *figure)
{
	cJSON *real = summary("ct", 1, o, seq3);
	struct ph so = *o;
	cJSON *sim;
	struct compare_result r;
	const struct compare_row *w;
	bool pass;

	so.dup = dup;
	sim = summary("ct", 1, &so, seq3);
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	w = row(&r, "gw", "outage", figure);
	cr_assert_not_null(w, "no row for %s", figure);
	pass = w->pass;
	compare_result_free(&r);
	cJSON_Delete(real);
	cJSON_Delete(sim);
	return pass;
}

/* ---- the bounds ---- */

Test(compare, the_same_stamp_passes_every_check)
{
	cJSON *s = summary("ct", 1, &base, seq3);
	struct compare_result r;
	const struct compare_row *w;

	cr_assert_eq(evaluate(s, s, NULL, &r), 0, "%s", err);
	/* direct: 2 phases × 6 figures − the healthy time to open, no transitions;
	 * gw the same and its transitions. */
	cr_expect_eq(r.n, 11 + 11 + 1, "%zu rows", r.n);
	cr_expect_eq(r.failed, 0);
	cr_expect_null(row(&r, "direct", "healthy", "time_to_open_ms"), "null in both: skipped");
	cr_expect_null(row(&r, "direct", "-", "breaker_transitions"), "no event in both: skipped");
	w = row(&r, "gw", "outage", "latency_ms.p95");
	cr_assert_not_null(w);
	cr_expect_eq(w->real, 400);
	cr_expect_eq(w->diff, 0);
	cr_expect_eq(w->allowed, 20);
	w = row(&r, "gw", "-", "breaker_transitions");
	cr_assert_not_null(w);
	cr_expect(w->pass && w->real == 3 && w->sim == 3);
	compare_result_free(&r);
	cJSON_Delete(s);
}

Test(compare, answered_share_within_one_percentage_point)
{
	struct ph o = base;

	o.ans = 0.9401;
	cr_expect(verdict(&o, 1, "answered_share"));
	o.ans = 0.9599;
	cr_expect(verdict(&o, 1, "answered_share"));
	o.ans = 0.9399;
	cr_expect_not(verdict(&o, 1, "answered_share"));
	o.ans = 0.9601;
	cr_expect_not(verdict(&o, 1, "answered_share"));
}

/* p50 100 ms: 5% is 5 ms, so the 10 ms floor is the bound; p95 400 ms: 5% (20 ms) is. */
Test(compare, latency_5_percent_or_10_ms_whichever_is_larger)
{
	struct ph o = base;

	o.p50 = 109.9;
	cr_expect(verdict(&o, 1, "latency_ms.p50"));
	o.p50 = 90.1;
	cr_expect(verdict(&o, 1, "latency_ms.p50"));
	o.p50 = 110.1;
	cr_expect_not(verdict(&o, 1, "latency_ms.p50"));
	o.p50 = 100;
	o.p95 = 419.9;
	cr_expect(verdict(&o, 1, "latency_ms.p95"));
	o.p95 = 420.1;
	cr_expect_not(verdict(&o, 1, "latency_ms.p95"));
	o.p95 = 379.9;
	cr_expect_not(verdict(&o, 1, "latency_ms.p95"));
}

/* At time scale 0.2 the floors are 2 ms and 10 ms: p50 100 ms now has 5 ms. */
Test(compare, millisecond_floors_scale_with_the_stamps)
{
	struct ph o = base;
	struct ph r20 = base;
	cJSON *real;
	cJSON *sim;
	struct compare_result r;
	const struct compare_row *w;

	o.p50 = 105.1;	/* past 5%, inside 10 ms: passes at scale 1 */
	cr_expect(verdict(&o, 1, "latency_ms.p50"));
	cr_expect_not(verdict(&o, 0.2, "latency_ms.p50"));
	o.p50 = 104.9;
	cr_expect(verdict(&o, 0.2, "latency_ms.p50"));

	/* p50 20 ms at scale 0.2: 5% is 1 ms, the scaled floor 2 ms. */
	r20.p50 = 20;
	o = r20;
	real = summary("ct", 0.2, &r20, seq3);
	o.p50 = 21.9;
	sim = summary("ct", 0.2, &o, seq3);
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	w = row(&r, "gw", "outage", "latency_ms.p50");
	cr_assert_not_null(w);
	cr_expect(w->pass);
	cr_expect_float_eq(w->allowed, 2, 1e-12);
	cr_expect_str_eq(w->note, "10 ms x 0.2");
	compare_result_free(&r);
	cJSON_Delete(sim);
	o.p50 = 22.1;
	sim = summary("ct", 0.2, &o, seq3);
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	cr_expect_not(row(&r, "gw", "outage", "latency_ms.p50")->pass);
	compare_result_free(&r);
	cJSON_Delete(sim);
	cJSON_Delete(real);

	/* Time to open 500 ms: 50 ms at scale 1, 25 ms (5%) at 0.2 (floor 10 ms). */
	o = base;
	o.tto = 549;
	cr_expect(verdict(&o, 1, "time_to_open_ms"));
	o.tto = 551;
	cr_expect_not(verdict(&o, 1, "time_to_open_ms"));
	o.tto = 524;
	cr_expect(verdict(&o, 0.2, "time_to_open_ms"));
	o.tto = 526;
	cr_expect_not(verdict(&o, 0.2, "time_to_open_ms"));
}

Test(compare, attempts_and_duplicate_attempts_within_5_percent)
{
	struct ph o = base;

	o.apr = 1.259;
	cr_expect(verdict(&o, 1, "attempts_per_request"));
	o.apr = 1.261;
	cr_expect_not(verdict(&o, 1, "attempts_per_request"));
	o.apr = base.apr;
	o.dup = 21;
	cr_expect(verdict(&o, 1, "duplicate_work.attempts"));
	o.dup = 18.9;
	cr_expect_not(verdict(&o, 1, "duplicate_work.attempts"));
}

/* The real breaker opened and the sim's never did, and the other way round. */
Test(compare, a_figure_in_one_stamp_only_fails)
{
	cJSON *real = summary("ct", 1, &base, seq3);
	struct ph o = base;
	cJSON *sim;
	struct compare_result r;
	const struct compare_row *w;

	o.tto = NAN;
	sim = summary("ct", 1, &o, seq3);
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	w = row(&r, "gw", "outage", "time_to_open_ms");
	cr_assert_not_null(w);
	cr_expect_not(w->pass);
	cr_expect(isnan(w->sim) && isnan(w->diff));
	cr_expect_str_eq(w->note, "no value in the sim");
	compare_result_free(&r);
	cr_assert_eq(evaluate(sim, real, NULL, &r), 0, "%s", err);
	cr_expect_str_eq(row(&r, "gw", "outage", "time_to_open_ms")->note,
			 "no value in the real run");
	cr_expect_eq(r.failed, 1);
	compare_result_free(&r);
	cJSON_Delete(sim);
	cJSON_Delete(real);
}

Test(compare, breaker_transitions_the_same_sequence)
{
	/* Other times, models and reasons: the same sequence. */
	static const char later[] =
		"[[{\"t_ms\":15900,\"provider\":\"primary\",\"model\":null,\"from\":\"closed\","
		"\"to\":\"open\"},"
		"{\"t_ms\":17500,\"provider\":\"primary\",\"from\":\"open\",\"to\":\"half_open\"},"
		"{\"t_ms\":17600,\"provider\":\"primary\",\"from\":\"half_open\",\"to\":\"closed\","
		"\"reason\":\"y\"}], [{\"t_ms\":1,\"provider\":\"other\",\"from\":\"a\",\"to\":\"b\"}]]";
	static const char other[] =
		"[[{\"t_ms\":15500,\"provider\":\"primary\",\"from\":\"closed\",\"to\":\"open\"},"
		"{\"t_ms\":16500,\"provider\":\"primary\",\"from\":\"open\",\"to\":\"closed\"}]]";
	static const char shorter[] =
		"[[{\"t_ms\":15500,\"provider\":\"primary\",\"from\":\"closed\",\"to\":\"open\"},"
		"{\"t_ms\":16500,\"provider\":\"primary\",\"from\":\"open\",\"to\":\"half_open\"}]]";
	static const char none[] = "[[]]";
	static const struct {
		const char *sim;
		bool pass;
		const char *note;
	} cases[] = {
		{ later, true, "run 1: same sequence" },
		{ other, false, "run 1, event 2: real primary open->half_open, "
				"sim primary open->closed" },
		{ shorter, false, "run 1, event 3: real primary half_open->closed, sim nothing" },
		{ none, false, "run 1, event 1: real primary closed->open, sim nothing" },
	};
	cJSON *real = summary("ct", 1, &base, seq3);
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *sim = summary("ct", 1, &base, cases[i].sim);
		struct compare_result r;
		const struct compare_row *w;

		cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
		w = row(&r, "gw", "-", "breaker_transitions");
		cr_assert_not_null(w, "case %zu", i);
		cr_expect_eq(w->pass, cases[i].pass, "case %zu", i);
		cr_expect_str_eq(w->note, cases[i].note, "case %zu", i);
		cr_expect_eq(r.failed, cases[i].pass ? 0 : 1, "case %zu", i);
		compare_result_free(&r);
		cJSON_Delete(sim);
	}
	cJSON_Delete(real);
}

Test(compare, setups_and_phases_in_one_stamp_only)
{
	cJSON *real = summary("ct", 1, &base, seq3);
	cJSON *sim = summary("ct", 1, &base, seq3);
	cJSON *gw = cJSON_GetObjectItem(cJSON_GetObjectItem(sim, "setups"), "gw");
	struct compare_result r;
	const struct compare_row *w;

	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(gw, "phases"), "healthy");
	cJSON_AddItemToObject(cJSON_GetObjectItem(gw, "phases"), "after", phase(&healthy));
	cJSON_AddItemToObject(cJSON_GetObjectItem(sim, "setups"), "extra",
			      cJSON_Duplicate(gw, 1));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(sim, "setups"), "direct");
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	w = row(&r, "direct", "-", "-");
	cr_assert_not_null(w);
	cr_expect_str_eq(w->note, "setup missing in the sim");
	w = row(&r, "extra", "-", "-");
	cr_assert_not_null(w);
	cr_expect_str_eq(w->note, "setup missing in the real run");
	cr_expect_str_eq(row(&r, "gw", "healthy", "-")->note, "phase missing in the sim");
	cr_expect_str_eq(row(&r, "gw", "after", "-")->note, "phase missing in the real run");
	cr_expect_eq(r.failed, 4);
	cr_expect(row(&r, "gw", "outage", "answered_share")->pass);
	compare_result_free(&r);

	/* --setup gw: that setup alone; one in neither stamp is unusable. */
	cr_assert_eq(evaluate(real, sim, "gw", &r), 0, "%s", err);
	cr_expect_null(row(&r, "direct", "-", "-"));
	cr_expect_null(row(&r, "extra", "-", "-"));
	cr_expect_eq(r.failed, 2);
	compare_result_free(&r);
	cr_expect_eq(evaluate(real, sim, "direct", &r), 0, "%s", err);
	cr_expect_eq(r.n, 1);
	compare_result_free(&r);
	cr_expect_eq(evaluate(real, sim, "nope", &r), -EINVAL);
	cr_expect(strstr(err, "--setup") && strstr(err, "\"nope\""), "%s", err);
	cJSON_Delete(sim);
	cJSON_Delete(real);
}

Test(compare, another_scenario_scale_or_shape_is_unusable)
{
	cJSON *real = summary("ct", 0.2, &base, seq3);
	cJSON *sim = summary("other", 0.2, &base, seq3);
	struct compare_result r;

	cr_expect_eq(evaluate(real, sim, NULL, &r), -EINVAL);
	cr_expect(strstr(err, "scenario") && strstr(err, "\"ct\"") && strstr(err, "\"other\""),
		  "%s", err);
	cJSON_Delete(sim);
	sim = summary("ct", 1, &base, seq3);
	cr_expect_eq(evaluate(real, sim, NULL, &r), -EINVAL);
	cr_expect(strstr(err, "time_scale") && strstr(err, "0.2") && strstr(err, "got 1"), "%s",
		  err);
	cJSON_Delete(sim);
	sim = summary("ct", 0.2, &base, seq3);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(sim, "setups"), "gw"), "phases"),
		"outage"), "latency_ms"), "p50", cJSON_CreateString("fast"));
	cr_expect_eq(evaluate(real, sim, NULL, &r), -EINVAL);
	cr_expect(strstr(err, "setups.gw.phases.outage.latency_ms.p50"), "%s", err);
	cr_expect_eq(r.n, 0);
	cJSON_Delete(sim);
	sim = summary("ct", 0.2, &base, "[[{\"provider\":\"primary\"}]]");
	cr_expect_eq(evaluate(real, sim, NULL, &r), -EINVAL);
	cr_expect(strstr(err, "breaker_transitions[0]") && strstr(err, "from and to"), "%s", err);
	cJSON_Delete(sim);
	cJSON_Delete(real);
}

/* ---- the command ---- */

static void write_json(const char *name, const cJSON *root)
{
	char *text = cJSON_Print(root);

	cr_assert_not_null(text);
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0);
	free(text);
}

/* DIR/side/scenario.json: a scenario called name with the summary's setups and phases. */
static void write_scenario(const char *side, const char *name)
{
	char text[2048];
	char path[64];

	snprintf(text, sizeof(text),
		 "{\"name\":\"%s\",\"duration_s\":60,"
		 " \"providers\":[{\"name\":\"primary\",\"ttft_ms\":200}],"
		 " \"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":15},"
		 "            {\"name\":\"outage\",\"from_s\":15,\"to_s\":45}],"
		 " \"load\":{\"concurrency\":2},"
		 " \"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
		 "            {\"name\":\"gw\",\"kind\":\"direct\",\"provider\":\"primary\"}]}",
		 name);
	snprintf(path, sizeof(path), "%s/scenario.json", side);
	cr_assert_eq(tmpdir_write(dir, path, text, strlen(text)), 0);
}

/* DIR/side/ as a stamp: its summary (taken over) and scenario.json. */
static void write_stamp(const char *side, cJSON *sum, bool simulated)
{
	char path[64];

	if (simulated)
		cJSON_AddTrueToObject(sum, "simulated");
	snprintf(path, sizeof(path), "%s/summary.json", side);
	write_json(path, sum);
	write_scenario(side, json_get_string(sum, "scenario"));
	cJSON_Delete(sum);
}

/* compare_command on DIR/real and DIR/sim; stdout and stderr in out and errtext. */
static int command(const char *only, const char *json, char **out, char **errtext)
{
	char real[128];
	char sim[128];
	char json_path[128];
	char err_path[128];
	size_t len = 0;
	FILE *fp;
	int saved_fd;
	int fd;
	int status;

	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(sim, sizeof(sim), "%s/sim", dir);
	snprintf(json_path, sizeof(json_path), "%s/%s", dir, json ? json : "");
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
	status = compare_command(real, sim, only, json ? json_path : NULL, fp);
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	cr_assert_eq(fclose(fp), 0);
	*errtext = tmpdir_read(dir, "stderr.txt");
	unlink(err_path);
	return status;
}

/* text with every run of blanks made one blank (the columns' widths depend on the rows). */
static char *squeeze(const char *text)
{
	char *out = malloc(strlen(text) + 1);
	size_t n = 0;

	cr_assert_not_null(out);
	for (; *text; text++) {
		if (*text == ' ' && n && out[n - 1] == ' ')
			continue;
		out[n++] = *text;
	}
	out[n] = '\0';
	return out;
}

Test(compare_command, exit_0_and_the_table)
{
	char *flat;
	char *out;
	char *errtext;

	write_stamp("real", summary("ct", 1, &base, seq3), false);
	write_stamp("sim", summary("ct", 1, &base, seq3), true);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 0, "%s%s", out, errtext);
	flat = squeeze(out);
	cr_expect(strncmp(flat, "setup phase figure real sim diff allowed verdict note\n", 54) == 0,
		  "%s", out);
	cr_expect(strstr(flat, "\ngw outage latency_ms.p95 400 400 0 20 PASS 5% of real\n"), "%s",
		  out);
	cr_expect(strstr(flat, "\ngw - breaker_transitions 3 3 - - PASS run 1: same sequence\n"),
		  "%s", out);
	cr_expect(strstr(out, "\n23 checks, 0 failed\n"), "%s", out);
	free(flat);
	/* Columns aligned: every row's verdict starts where the header's "verdict" does. */
	{
		const char *line = out;
		long col = strstr(out, "verdict") - out;

		while ((line = strchr(line, '\n')) && strstr(++line, "  PASS  ")) {
			const char *v = strstr(line, "  PASS  ");

			if (strchr(line, '\n') < v)
				break;
			cr_expect_eq(v + 2 - line, col, "%s", out);
		}
	}
	cr_expect_null(strstr(out, "note:"), "the sim is marked simulated: %s", out);
	cr_expect_str_eq(errtext, "");
	free(out);
	free(errtext);
}

Test(compare_command, exit_1_json_rows_and_the_note_for_two_real_stamps)
{
	struct ph o = base;
	char *flat;
	char *out;
	char *errtext;
	char *json;
	cJSON *doc;
	cJSON *rows;
	const cJSON *w;
	size_t failed = 0;

	o.ans = 0.93;
	write_stamp("real", summary("ct", 1, &base, seq3), false);
	write_stamp("sim", summary("ct", 1, &o, seq3), false);
	cr_expect_eq(command(NULL, "cmp.json", &out, &errtext), 1, "%s%s", out, errtext);
	cr_expect(strstr(out, "note: ") && strstr(out, "/sim/summary.json is not marked "
						  "\"simulated\": true"), "%s", out);
	flat = squeeze(out);
	cr_expect(strstr(flat, "\ngw outage answered_share 0.95 0.93 -0.02 0.01 FAIL 1 pp\n"), "%s",
		  out);
	free(flat);
	cr_expect(strstr(out, "\n23 checks, 1 failed\n"), "%s", out);
	json = tmpdir_read(dir, "cmp.json");
	cr_assert_not_null(json, "no cmp.json");
	cr_expect_null(tmpdir_read(dir, "cmp.json.tmp"), "cmp.json.tmp left behind");
	doc = cJSON_Parse(json);
	cr_assert_not_null(doc);
	cr_expect_str_eq(json_get_string(doc, "scenario"), "ct");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "simulated")));
	cr_expect_eq(cJSON_GetObjectItem(doc, "checks")->valuedouble, 23);
	cr_expect_eq(cJSON_GetObjectItem(doc, "failed")->valuedouble, 1);
	rows = cJSON_GetObjectItem(doc, "rows");
	cr_assert_eq(cJSON_GetArraySize(rows), 23);
	cJSON_ArrayForEach(w, rows) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(w, "pass")))
			continue;
		failed++;
		cr_expect_str_eq(json_get_string(w, "setup"), "gw");
		cr_expect_str_eq(json_get_string(w, "phase"), "outage");
		cr_expect_str_eq(json_get_string(w, "figure"), "answered_share");
		cr_expect_float_eq(cJSON_GetObjectItem(w, "diff")->valuedouble, -0.02, 1e-12);
		cr_expect_eq(cJSON_GetObjectItem(w, "allowed")->valuedouble, 0.01);
	}
	cr_expect_eq(failed, 1);
	w = cJSON_GetArrayItem(rows, 22);
	cr_expect_str_eq(json_get_string(w, "figure"), "breaker_transitions");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(w, "diff")));
	cJSON_Delete(doc);
	free(json);
	free(out);
	free(errtext);
}

/* Unusable input: exit 2, nothing on out, the path and the trouble on stderr. */
Test(compare_command, exit_2_for_unusable_input)
{
	char *out;
	char *errtext;
	char want[256];
	cJSON *s;

	/* No sim stamp. */
	write_stamp("real", summary("ct", 0.2, &base, seq3), false);
	cr_expect_eq(command(NULL, "cmp.json", &out, &errtext), 2);
	snprintf(want, sizeof(want), "chaos compare: %s/sim/summary.json: No such file", dir);
	cr_expect(strncmp(errtext, want, strlen(want)) == 0, "%s", errtext);
	cr_expect_str_eq(out, "");
	cr_expect_null(tmpdir_read(dir, "cmp.json"), "a JSON file for unusable input");
	free(out);
	free(errtext);

	/* A summary that is not JSON. */
	cr_assert_eq(tmpdir_write(dir, "sim/summary.json", "{\"scenario\":", 12), 0);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "sim/summary.json"), "%s", errtext);
	free(out);
	free(errtext);

	/* Another scenario (its summary and scenario.json). */
	write_stamp("sim", summary("other", 0.2, &base, seq3), true);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "/sim/summary.json: scenario: expected the real run's scenario "
			 "\"ct\""), "%s", errtext);
	free(out);
	free(errtext);

	/* The same name in the summary, another in scenario.json. */
	s = summary("ct", 0.2, &base, seq3);
	cJSON_AddTrueToObject(s, "simulated");
	write_json("sim/summary.json", s);
	cJSON_Delete(s);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "/sim: scenario.json: expected the real run's scenario \"ct\", "
			 "got \"other\""), "%s", errtext);
	free(out);
	free(errtext);

	/* Another time scale. */
	write_stamp("sim", summary("ct", 0.1, &base, seq3), true);
	cr_expect_eq(command(NULL, NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "/sim/summary.json: time_scale: expected the real run's time "
			 "scale 0.2"), "%s", errtext);
	cr_expect(strstr(errtext, "got 0.1"), "%s", errtext);
	free(out);
	free(errtext);

	/* --setup naming no setup of either. */
	write_stamp("sim", summary("ct", 0.2, &base, seq3), true);
	cr_expect_eq(command("gateway", NULL, &out, &errtext), 2);
	cr_expect(strstr(errtext, "--setup: expected a setup called \"gateway\""), "%s", errtext);
	free(out);
	free(errtext);
	cr_expect_eq(command("gw", NULL, &out, &errtext), 0, "%s%s", out, errtext);
	cr_expect(strstr(out, "\n12 checks, 0 failed\n"), "%s", out);
	free(out);
	free(errtext);
}

/* A JSON file that cannot be written: exit 1, said on stderr, the table printed. */
Test(compare_command, json_not_written_exits_1)
{
	char *out;
	char *errtext;

	write_stamp("real", summary("ct", 1, &base, seq3), false);
	write_stamp("sim", summary("ct", 1, &base, seq3), true);
	cr_expect_eq(command(NULL, "no/such/dir/cmp.json", &out, &errtext), 1);
	cr_expect(strstr(errtext, "chaos compare: ") && strstr(errtext, "cmp.json.tmp"), "%s",
		  errtext);
	cr_expect(strstr(out, "23 checks, 0 failed"), "%s", out);
	free(out);
	free(errtext);
}

/*
 * A phase the real run answered none of, the sim a handful at its edge:
 * their percentiles are not held against each other (fewer than 20
 * answers on a side), the answered share still is.
 */
Test(compare, latency_needs_twenty_answers_a_side)
{
	cJSON *real = summary("ct", 1, &base, seq3);
	cJSON *sim = summary("ct", 1, &base, seq3);
	cJSON *rout = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(real, "setups"),
						 "gw"), "phases"), "outage");
	cJSON *sout = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sim, "setups"),
						 "gw"), "phases"), "outage");
	struct compare_result r;

	/* Real: no answer (percentiles null); sim: 10 answers, 201 ms. */
	cJSON_ReplaceItemInObject(rout, "latency_ms", cJSON_Parse("{\"count\":{\"mean\":0},"
		"\"p50\":null,\"p95\":null}"));
	cJSON_ReplaceItemInObject(sout, "latency_ms", cJSON_Parse("{\"count\":{\"mean\":10},"
		"\"p50\":{\"mean\":201},\"p95\":{\"mean\":201}}"));
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	cr_expect_null(row(&r, "gw", "outage", "latency_ms.p50"));
	cr_expect_null(row(&r, "gw", "outage", "latency_ms.p95"));
	cr_expect_not_null(row(&r, "gw", "outage", "answered_share"));
	cr_expect_eq(r.failed, 0);
	compare_result_free(&r);
	/* With 20 a side they are compared again, and 201 against 400 fails. */
	cJSON_ReplaceItemInObject(rout, "latency_ms", cJSON_Parse("{\"count\":{\"mean\":20},"
		"\"p50\":{\"mean\":100},\"p95\":{\"mean\":400}}"));
	cJSON_ReplaceItemInObject(sout, "latency_ms", cJSON_Parse("{\"count\":{\"mean\":20},"
		"\"p50\":{\"mean\":201},\"p95\":{\"mean\":201}}"));
	cr_assert_eq(evaluate(real, sim, NULL, &r), 0, "%s", err);
	cr_expect_not(row(&r, "gw", "outage", "latency_ms.p95")->pass);
	compare_result_free(&r);
	cJSON_Delete(real);
	cJSON_Delete(sim);
}

/*
 * Counts of attempts come no closer than one: under 20 attempts, 5% is
 * less, so the allowance is one attempt (for attempts per request, one
 * over the phase's requests).
 */
Test(compare, one_attempt_is_the_finest_a_count_allows)
{
	struct ph o = base;

	o.dup = 4;
	cr_expect(verdict_vs(&o, 3, "duplicate_work.attempts"));
	cr_expect_not(verdict_vs(&o, 2, "duplicate_work.attempts"));
	o.dup = 100;
	cr_expect_not(verdict_vs(&o, 94, "duplicate_work.attempts"), "5% of 100 is the bound");
}
