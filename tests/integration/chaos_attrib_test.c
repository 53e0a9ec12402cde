/*
 * Attribution without cooperation through bin/chaos: our own gateway run
 * as an `external` setup whose response_headers name headers that do not
 * exist, so the provider, attempts and cost columns stay empty — as with
 * a gateway that sends none of ours — beside the same gateway as a
 * `gateway` setup, whose headers say who answered. The primary hangs for
 * the outage; the fallback share, the upstream requests per request and
 * the primary's stop_ms of the external setup come from the providers'
 * logs alone, joined on the request id, and must agree with the header
 * figures. Then the providers' logs lose their request ids and `chaos
 * report` joins them again by timing: the same figures, within the
 * timing join's error, and report.md says the join was by timing.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/lgharness.h"
#include "tests/support/tmpdir.h"

static char dir[256];
static char scenario[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos_attrib, .init = setup, .fini = lg_cleanup);

/*
 * The gateway's config, with the runner's placeholders for the
 * providers: the primary's attempts time out at 200 ms; two failures
 * open its breaker for 1.8 s (longer than the stop gap, 1 s, plus a
 * timeout: the probe comes after a silence).
 */
#define GW_CONFIG \
	"{\"request_deadline_ms\":1400," \
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":200}," \
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000}}," \
	"\"breaker\":{\"consecutive_failures\":2,\"cooldown_ms\":1800,\"cooldown_jitter\":0," \
	"\"cooldown_multiplier\":1,\"half_open_probes\":1}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"}," \
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}"

/*
 * The scenario: the primary hangs in [1 s, 3 s); 20 req/s for 4 s;
 * phases healthy [0,1), outage [1,3), after [3,4); the gateway as a
 * gateway setup ("gw") and as an external one ("ext") whose command
 * writes the config (placeholders expanded by the runner) and starts it.
 */
static void write_scenario(void)
{
	char gw[300];
	struct buf cmd = { 0 };
	cJSON *root;
	char *text;
	char json[4096];

	bin_path("gateway", gw, sizeof(gw));
	cr_assert_eq(buf_printf(&cmd, "printf '%%s\\n' '%s' > %s/ext-gateway.json && exec %s "
				"--config %s/ext-gateway.json --listen {listen} --log-level warn",
				GW_CONFIG, dir, gw, dir), 0);
	snprintf(json, sizeof(json),
		 "{\"name\":\"attrib\",\"duration_s\":4,"
		 "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":20,"
		 "\"faults\":[{\"kind\":\"hang\",\"from_s\":1,\"to_s\":3}]},"
		 "{\"name\":\"secondary\",\"ttft_ms\":20}],"
		 "\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":1},"
		 "{\"name\":\"outage\",\"from_s\":1,\"to_s\":3},"
		 "{\"name\":\"after\",\"from_s\":3,\"to_s\":4}],"
		 "\"load\":{\"rate\":20,\"timeout_ms\":1500},"
		 "\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":%s},"
		 "{\"name\":\"ext\",\"kind\":\"external\",\"command\":[\"/bin/sh\",\"-c\",\"\"],"
		 "\"ready_url\":\"http://{listen}/healthz\",\"target\":\"http://{listen}/v1\","
		 "\"response_headers\":{\"provider\":\"x-hidden-provider\","
		 "\"attempts\":\"x-hidden-attempts\",\"hedged\":\"x-hidden-hedged\","
		 "\"cost_usd\":\"x-hidden-cost\",\"degraded\":\"x-hidden-degraded\"}}]}",
		 GW_CONFIG);
	root = cJSON_Parse(json);
	cr_assert_not_null(root, "the test's scenario is not JSON");
	/* The command's string, set as a JSON string (its quotes escaped). */
	cJSON_ReplaceItemInArray(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(root, "setups"), 1), "command"), 2,
		cJSON_CreateString(cmd.data));
	text = cJSON_Print(root);
	write_file(dir, "attrib.json", text, scenario, sizeof(scenario));
	free(text);
	cJSON_Delete(root);
	buf_free(&cmd);
}


/* setups.SETUP.phases.PHASE.KEY[.SUB] of a stamp summary: its mean, NAN when null. */
static double fig(const cJSON *top, const char *setup_name, const char *phase, const char *key,
		  const char *sub)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(top, "setups"), setup_name), "phases"), phase);

	v = cJSON_GetObjectItem(v, key);
	if (sub)
		v = cJSON_GetObjectItem(v, sub);
	v = cJSON_GetObjectItem(v, "mean");
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* setups.SETUP.phases.PHASE.KEY as a string ("" when it is none). */
static const char *fig_str(const cJSON *top, const char *setup_name, const char *phase,
			   const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(top, "setups"), setup_name), "phases"),
		phase), key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The stamp's summary.json, read again. */
static cJSON *stamp_summary(const char *stamp)
{
	char *text = tmpdir_read(stamp, "summary.json");
	cJSON *root;

	cr_assert_not_null(text, "no %s/summary.json", stamp);
	root = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(root, "%s/summary.json is not JSON", stamp);
	return root;
}

/*
 * Rewrites RUN/mock-NAME.csv with every user request's request_id
 * emptied (health checks keep theirs): a gateway that forwards no id.
 */
static void drop_ids(const char *run, const char *name)
{
	char file[64];
	char *text;
	struct buf out = { 0 };
	const char *line;

	snprintf(file, sizeof(file), "mock-%s.csv", name);
	text = tmpdir_read(run, file);
	cr_assert_not_null(text, "no %s/%s", run, file);
	for (line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		const char *c1 = memchr(line, ',', len);
		const char *c2 = c1 ? memchr(c1 + 1, ',', len - (size_t)(c1 + 1 - line)) : NULL;

		cr_assert_not_null(c2, "%s: a line without two commas", file);
		if (line == text || strncmp(c1 + 1, "health-check-", 13) == 0) {
			buf_append(&out, line, len);
		} else {
			buf_append(&out, line, (size_t)(c1 + 1 - line));
			buf_append(&out, c2, len - (size_t)(c2 - line));
		}
		line += len;
	}
	cr_assert_eq(tmpdir_write(run, file, out.data, out.len), 0);
	buf_free(&out);
	free(text);
}

Test(chaos_attrib, an_external_gateway_without_our_headers, .timeout = 120)
{
	char out[600];
	char err[8192];
	char parent[700];
	char stamp[900];
	char run[1000];
	char *md;
	cJSON *top;
	double gw_fallback, ext_fallback, ext_stop, ext_apr;
	int rc;

	write_scenario();
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 90);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	snprintf(parent, sizeof(parent), "%s/attrib", out);
	cr_assert_eq(tmpdir_only_entry(parent, stamp, sizeof(stamp)), 1);
	top = stamp_summary(stamp);

	/* The gateway setup: who answered from its headers. */
	gw_fallback = fig(top, "gw", "outage", "fallback_share", NULL);
	cr_assert_str_eq(fig_str(top, "gw", "outage", "fallback_source"), "provider_header");
	cr_assert_str_eq(fig_str(top, "gw", "outage", "upstream_source"),
			 "mock_log+gateway_attempts");
	cr_assert_gt(gw_fallback, 0.8, "gw: fallback share %g in the outage", gw_fallback);

	/* The external one: no header came back, so the mock logs said who answered. */
	ext_fallback = fig(top, "ext", "outage", "fallback_share", NULL);
	cr_assert_str_eq(fig_str(top, "ext", "outage", "fallback_source"), "mock_log");
	cr_assert_str_eq(fig_str(top, "ext", "outage", "upstream_source"), "mock_log");
	cr_assert_float_eq(fig(top, "ext", "outage", "attribution", "none"), 0, 0);
	cr_assert_float_eq(fig(top, "ext", "outage", "attribution", "provider_header"), 0, 0);
	cr_assert_gt(fig(top, "ext", "outage", "join", "by_id"), 0);
	cr_assert_float_eq(fig(top, "ext", "outage", "join", "by_timing"), 0, 0);
	cr_assert_float_eq(fig(top, "ext", "outage", "join", "unjoined"), 0, 0);
	cr_assert(fabs(ext_fallback - gw_fallback) <= 0.1, "fallback: ext %g, gw %g",
		  ext_fallback, gw_fallback);
	cr_assert_float_eq(fig(top, "ext", "healthy", "fallback_share", NULL), 0, 0);
	ext_apr = fig(top, "ext", "outage", "attempts_per_request", NULL);
	cr_assert(fabs(ext_apr - fig(top, "gw", "outage", "attempts_per_request", NULL)) <= 0.2,
		  "upstream per request: ext %g, gw %g", ext_apr,
		  fig(top, "gw", "outage", "attempts_per_request", NULL));

	/*
	 * The primary stopped getting requests once the breaker opened (two
	 * 200 ms timeouts in), and not before the outage; no breaker events
	 * for the external setup, but its stop_ms is there.
	 */
	ext_stop = fig(top, "ext", "outage", "stop_ms", NULL);
	cr_assert(ext_stop >= 0 && ext_stop < 700, "ext: stop_ms %g", ext_stop);
	cr_assert(isnan(fig(top, "ext", "outage", "time_to_open_ms", NULL)));
	cr_assert(isnan(fig(top, "ext", "healthy", "stop_ms", NULL)), "ext stopped while healthy");
	cr_assert(isnan(fig(top, "gw", "healthy", "stop_ms", NULL)), "gw stopped while healthy");
	/* (an attempt sent as the breaker opened may arrive just after it) */
	cr_assert(fig(top, "gw", "outage", "stop_ms", NULL) <=
		  fig(top, "gw", "outage", "time_to_open_ms", NULL) + 50,
		  "gw: stop %g after the opening %g", fig(top, "gw", "outage", "stop_ms", NULL),
		  fig(top, "gw", "outage", "time_to_open_ms", NULL));
	cr_assert_gt(fig(top, "ext", "outage", "primary_requests", NULL), 0);
	cJSON_Delete(top);
	md = tmpdir_read(stamp, "report.md");
	cr_assert_not_null(md);
	cr_assert(strstr(md, "## Attribution"), "%s", md);
	cr_assert(strstr(md, "| ext | outage | "), "%s", md);
	cr_assert(strstr(md, "| mock log | "), "%s", md);
	cr_assert(strstr(md, "| stop ms |"), "no stop ms column: %s", md);
	cr_assert_null(strstr(md, "- **ext**, outage:"), "a join note with every row joined by id: %s", md);
	free(md);

	/* No request ids in the providers' logs: chaos report joins them by timing. */
	snprintf(run, sizeof(run), "%s/ext/run-1", stamp);
	drop_ids(run, "primary");
	drop_ids(run, "secondary");
	{
		const char *argv[] = { "chaos", "report", stamp, NULL };

		rc = run_program(argv, err, sizeof(err), 30);
	}
	cr_assert_eq(rc, 0, "chaos report exited %d:\n%s", rc, err);
	top = stamp_summary(stamp);
	cr_assert_float_eq(fig(top, "ext", "outage", "join", "by_id"), 0, 0);
	cr_assert_gt(fig(top, "ext", "outage", "join", "by_timing"), 0);
	cr_assert(fig(top, "ext", "outage", "join", "unjoined") <=
		  0.05 * fig(top, "ext", "outage", "join", "by_timing"),
		  "%g rows not joined by timing",
		  fig(top, "ext", "outage", "join", "unjoined"));
	cr_assert_str_eq(fig_str(top, "ext", "outage", "fallback_source"), "mock_log");
	/* every answer's row lies inside its request's time: each ok request finds one */
	cr_assert_float_eq(fig(top, "ext", "outage", "attribution", "none"), 0, 0);
	cr_assert(fabs(fig(top, "ext", "outage", "fallback_share", NULL) - ext_fallback) <= 0.1,
		  "fallback by timing %g, by id %g",
		  fig(top, "ext", "outage", "fallback_share", NULL), ext_fallback);
	cr_assert(fabs(fig(top, "ext", "outage", "attempts_per_request", NULL) - ext_apr) <= 0.15,
		  "upstream per request by timing %g, by id %g",
		  fig(top, "ext", "outage", "attempts_per_request", NULL), ext_apr);
	cr_assert_float_eq(fig(top, "ext", "outage", "stop_ms", NULL), ext_stop, 1e-9);
	cJSON_Delete(top);
	md = tmpdir_read(stamp, "report.md");
	cr_assert_not_null(md);
	cr_assert(strstr(md, "- **ext**, outage: 0 by id, "), "no join note: %s", md);
	free(md);
}
