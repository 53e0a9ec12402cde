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

static const char scenario[] =
	"{\"name\":\"s\",\"load\":{\"model\":\"m\",\"rate\":5}}";

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
	char path[256];
	FILE *fp;
	char *text = calloc(1, 65536);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "r");
	cr_assert_not_null(fp, "no %s", path);
	fread(text, 1, 65535, fp);
	fclose(fp);
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
		"exposed_requests_sd,check_rate_per_s,check_rate_per_s_sd\n";
	const char *want_rows =
		"1,\"p001-rate=5,model=a__b_\",5,\"a,\"\"b\"\"\",\"gw \"\"x\"\"\",calm,2,0.95,0.1,"
		",,123.5,0,,,,,,,,,,,,,,,,,7,1,,\n"
		"1,\"p001-rate=5,model=a__b_\",5,\"a,\"\"b\"\"\",\"gw \"\"x\"\"\",storm,2,0,0"
		",,,,,,,,,,,,,,,,,,,,,,,,\n";

	put("scenario.json", scenario);
	put_plan(good_points);
	cr_assert_eq(tmpdir_mkdir(dir, "p001-rate=5,model=a__b_"), 0);
	put("p001-rate=5,model=a__b_/summary.json",
	    "{\"scenario\":\"s\",\"setups\":{\"gw \\\"x\\\"\":{\"runs\":2,\"phases\":{"
	    "\"calm\":{\"answered_share\":{\"mean\":0.95,\"stddev\":0.1},"
	    "\"latency_ms\":{\"p95\":{\"mean\":123.5,\"stddev\":0}},\"time_to_open_ms\":null,"
	    "\"exposed\":{\"requests\":{\"mean\":7,\"stddev\":1}}},"
	    "\"storm\":{\"answered_share\":{\"mean\":0,\"stddev\":0}}}}}}");
	cr_assert_eq(tmpdir_mkdir(dir, "p002-rate=0.1,model=a__b_"), 0);	/* partial: no summary */
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
