/*
 * sweep: a sweep folder's sweep.json read back (and refused when it does
 * not hold what it should), and sweep.csv written from the points'
 * summaries — columns, number format, RFC 4180 quoting, empty cells for
 * figures that are null or absent, rows only for points with a summary.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/sweep.h"
#include "runner/sweep_verdict.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static char err[CFG_ERR_LEN];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "sweep"), 0);
	err[0] = '\0';
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(sweep, .init = setup, .fini = teardown, .timeout = 10);

static void put(const char *name, const char *text)
{
	cr_assert_eq(tmpdir_write(dir, name, text, strlen(text)), 0, "cannot write %s", name);
}

#define SCENARIO(objective) \
	"{\"name\":\"s\",\"duration_s\":10,\"providers\":[{\"name\":\"p\",\"ttft_ms\":10}]," \
	"\"phases\":[{\"name\":\"calm\",\"from_s\":0,\"to_s\":5}," \
	"{\"name\":\"storm\",\"from_s\":5,\"to_s\":10}]," \
	"\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]," \
	"\"load\":{\"model\":\"m\",\"rate\":5}" objective "}"

static const char scenario[] = SCENARIO("");

/* sweep.json with the given points array. */
static void put_plan(const char *points)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"scenario\":\"s\",\"scenario_file\":\"s.json\",\"time_scale\":0.5,\"repeat\":2,"
		 "\"setup\":null,\"vary\":[{\"path\":\"load.rate\",\"values\":[5,0.1]},"
		 "{\"path\":\"load.model\",\"values\":[\"a,\\\"b\\\"\"]}],\"points\":%s}", points);
	put("sweep.json", text);
}

static const char good_points[] =
	"[{\"index\":1,\"dir\":\"p001-rate=5,model=a__b_\",\"status\":\"done\"},"
	"{\"index\":2,\"dir\":\"p002-rate=0.1,model=a__b_\",\"status\":\"pending\"}]";

static char *slurp(const char *name)
{
	char *text = tmpdir_read(dir, name);

	cr_assert_not_null(text, "no %s/%s", dir, name);
	return text;
}

Test(sweep, csv_from_the_points_summaries)
{
	struct sweep s;
	char *csv;
	const char *want_head =
		"point,dir,load.rate,load.model,setup,phase,runs,answered_share,answered_share_sd,"
		"latency_p50_ms,latency_p50_ms_sd,latency_p95_ms,latency_p95_ms_sd,latency_p99_ms,"
		"latency_p99_ms_sd,attempts_per_request,attempts_per_request_sd,duplicate_share,"
		"duplicate_share_sd,cost_per_answered_usd,cost_per_answered_usd_sd,time_to_open_ms,"
		"time_to_open_ms_sd,time_to_primary_ms,time_to_primary_ms_sd,fallback_share,"
		"fallback_share_sd,time_to_close_ms,time_to_close_ms_sd,exposed_requests,"
		"exposed_requests_sd,check_rate_per_s,check_rate_per_s_sd,objective,broken\n";
	const char *want_rows =
		"1,\"p001-rate=5,model=a__b_\",5,\"a,\"\"b\"\"\",\"gw \"\"x\"\"\",calm,2,0.95,0.1,"
		",,123.5,0,,,,,,,,,,,,,,,,,7,1,,,,\n"
		"1,\"p001-rate=5,model=a__b_\",5,\"a,\"\"b\"\"\",\"gw \"\"x\"\"\",storm,2,0,0"
		",,,,,,,,,,,,,,,,,,,,,,,,,,\n";

	put("scenario.json", scenario);
	put_plan(good_points);
	cr_assert_eq(tmpdir_mkdir(dir, "p001-rate=5,model=a__b_"), 0);
	put("p001-rate=5,model=a__b_/summary.json",
	    "{\"scenario\":\"s\",\"setups\":{\"gw \\\"x\\\"\":{\"runs\":2,\"phases\":{"
	    "\"calm\":{\"answered_share\":{\"mean\":0.95,\"stddev\":0.1},"
	    "\"latency_ms\":{\"p95\":{\"mean\":123.5,\"stddev\":0}},\"time_to_open_ms\":null,"
	    "\"exposed\":{\"requests\":{\"mean\":7,\"stddev\":1}}},"
	    "\"storm\":{\"answered_share\":{\"mean\":0,\"stddev\":0}}}}}}");
	/* not done (pending, or failed): its summary, of the runs that completed, is left out */
	cr_assert_eq(tmpdir_mkdir(dir, "p002-rate=0.1,model=a__b_"), 0);
	put("p002-rate=0.1,model=a__b_/summary.json",
	    "{\"scenario\":\"s\",\"setups\":{\"d\":{\"runs\":1,\"phases\":{"
	    "\"calm\":{\"answered_share\":{\"mean\":0.5,\"stddev\":0}}}}}}");
	cr_assert_eq(sweep_load(&s, dir, err), 0, "%s", err);
	cr_expect_eq(s.plan.npoints, 2);
	cr_expect_eq(s.repeat, 2);
	cr_expect_eq(s.scale, 0.5);
	cr_expect_eq(s.status[0], SWEEP_DONE);
	cr_expect_eq(s.status[1], SWEEP_PENDING);
	cr_assert_eq(sweep_csv_write(&s, err), 0, "%s", err);
	csv = slurp("sweep.csv");
	cr_expect_eq(strncmp(csv, want_head, strlen(want_head)), 0, "header:\n%s", csv);
	cr_expect_str_eq(csv + strlen(want_head), want_rows);
	free(csv);
	sweep_free(&s);
}

/*
 * With an objective: the rows of its phase say whether they meet it and
 * which bound they break; the best point of each setup is the cheapest
 * that meets it (ties by p95); the knee is at the objective's exchange
 * rate (0.1 / (1 − 0.9) = 1).
 */
Test(sweep, verdicts_best_point_and_knee)
{
	static const char plan[] =
		"{\"scenario\":\"s\",\"scenario_file\":\"s.json\",\"time_scale\":1,\"repeat\":1,"
		"\"setup\":null,\"vary\":[{\"path\":\"load.rate\",\"values\":[1,2,3]}],"
		"\"points\":[{\"index\":1,\"dir\":\"p001-rate=1\",\"values\":{\"load.rate\":1},"
		"\"status\":\"done\"},"
		"{\"index\":2,\"dir\":\"p002-rate=2\",\"values\":{\"load.rate\":2},"
		"\"status\":\"done\"},"
		"{\"index\":3,\"dir\":\"p003-rate=3\",\"values\":{\"load.rate\":3},"
		"\"status\":\"done\"}]}";
	/* answered, duplicate share, cost, p95 of "calm" per point */
	static const double fig[3][4] = {
		{ 0.80, 0.00, 0.001, 100 },	/* fails answered_min: the cheapest */
		{ 0.95, 0.05, 0.003, 300 },	/* meets */
		{ 0.99, 0.20, 0.002, 200 },	/* fails duplicate_share_max: the knee is before it */
	};
	struct sweep s;
	char text[1024];
	char name[64];
	char *csv;
	char *out = NULL;
	size_t len = 0;
	FILE *fp;
	size_t i;

	put("scenario.json", SCENARIO(",\"objective\":{\"answered_min\":0.9,"
				      "\"duplicate_share_max\":0.1,\"phase\":\"calm\"}"));
	put("sweep.json", plan);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "p%03zu-rate=%zu", i + 1, i + 1);
		cr_assert_eq(tmpdir_mkdir(dir, name), 0);
		snprintf(text, sizeof(text),
			 "{\"scenario\":\"s\",\"setups\":{\"d\":{\"runs\":1,\"phases\":{\"calm\":{"
			 "\"answered_share\":{\"mean\":%g},\"duplicate_share\":{\"mean\":%g},"
			 "\"cost_per_answered\":{\"mean\":%g},\"latency_ms\":{\"p95\":{\"mean\":%g}}},"
			 "\"storm\":{\"answered_share\":{\"mean\":0}}}}}}",
			 fig[i][0], fig[i][1], fig[i][2], fig[i][3]);
		snprintf(name, sizeof(name), "p%03zu-rate=%zu/summary.json", i + 1, i + 1);
		put(name, text);
	}
	cr_assert_eq(sweep_load(&s, dir, err), 0, "%s", err);
	cr_assert_eq(sweep_csv_write(&s, err), 0, "%s", err);
	csv = slurp("sweep.csv");
	cr_expect(strstr(csv, ",calm,1,0.8,,") && strstr(csv, ",fails,answered_min 0.8<0.9\n"),
		  "%s", csv);
	cr_expect(strstr(csv, ",meets,\n"), "%s", csv);
	cr_expect(strstr(csv, ",fails,duplicate_share_max 0.2>0.1\n"), "%s", csv);
	cr_expect(strstr(csv, ",storm,1,0,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"),
		  "storm is not the objective's phase: no verdict\n%s", csv);
	free(csv);

	fp = open_memstream(&out, &len);
	cr_assert_eq(sweep_conclude(&s, NULL, fp, err), 0, "%s", err);
	fclose(fp);
	cr_expect(strstr(out, "best: d: rate=2 (p002-rate=2: cost per answered 0.003 USD, p95 300"
			      " ms)"), "%s", out);
	cr_expect(strstr(out, "knee: d / calm at rate=2 (answered 95.0%, duplicate 5.0%)"), "%s",
		  out);
	cr_assert_not_null(s.best);
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(s.best, 0), "point")->valueint, 2);
	free(out);
	sweep_free(&s);
}

/* sweep_load must refuse, with want in its message. */
static void refused(const char *want)
{
	struct sweep s;

	cr_expect_neq(sweep_load(&s, dir, err), 0, "accepted; wanted \"%s\"", want);
	cr_expect(strstr(err, want), "\"%s\" lacks \"%s\"", err, want);
	sweep_free(&s);
}

Test(sweep, a_sweep_json_that_does_not_hold_what_it_should_is_refused)
{
	put("scenario.json", scenario);
	refused("sweep.json");			/* none */
	put("sweep.json", "{\"scenario\":");
	refused("sweep.json");
	put_plan("[]");
	refused("points: expected the 2 points of its vary, got 0");
	put_plan("[{\"dir\":\"p001-rate=5,model=a__b_\",\"status\":\"done\"},"
		 "{\"dir\":\"p002-x\",\"status\":\"done\"}]");
	refused("points[1].dir: expected \"p002-rate=0.1,model=a__b_\"");
	put_plan("[{\"dir\":\"p001-rate=5,model=a__b_\",\"status\":\"done\"},"
		 "{\"dir\":\"p002-rate=0.1,model=a__b_\",\"status\":\"half\"}]");
	refused("points[1].status: expected pending, done or failed");
	put("sweep.json", "{\"scenario\":\"s\",\"scenario_file\":\"s.json\",\"time_scale\":0,"
	    "\"repeat\":1,\"vary\":[],\"points\":[]}");
	refused("time_scale: expected a number above 0");
	put("sweep.json", "{\"scenario\":\"s\",\"scenario_file\":\"s.json\",\"time_scale\":1,"
	    "\"repeat\":1,\"vary\":[{\"path\":\"load.nope.x\",\"values\":[1]}],\"points\":[]}");
	refused("vary: --vary load.nope.x: no such value in the scenario");
	put("sweep.json", "{\"scenario\":\"s\",\"scenario_file\":\"s.json\",\"time_scale\":1,"
	    "\"repeat\":1,\"vary\":[{\"path\":\"load.rate\",\"values\":[\"fast\"]}],\"points\":[]}");
	refused("a value of another type");
}
