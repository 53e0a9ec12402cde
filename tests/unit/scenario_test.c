/*
 * scenario files: a full scenario fills every field, a minimal one takes
 * every default, each kind of mistake is refused naming the file, the key
 * path and what was expected (providers through mockprov's own loader),
 * time scaling follows its one rule, and the configs and command lines of
 * a run come out with their placeholders replaced.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mockprov/config.h"
#include "runner/loadcfg.h"
#include "runner/scenario.h"

static char err[CFG_ERR_LEN];
static char file[160];

/* Writes json to DIR/name in a fresh temporary directory, loads it, removes it. */
static int load_named(const char *json, const char *name, double scale, struct scenario *sc)
{
	char dir[64];
	FILE *fp;
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/fl-scn-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/%s", dir, name);
	fp = fopen(file, "w");
	cr_assert_not_null(fp);
	cr_assert_eq(fputs(json, fp) >= 0, true);
	cr_assert_eq(fclose(fp), 0);
	err[0] = '\0';
	rc = scenario_load(file, scale, sc, err);
	unlink(file);
	rmdir(dir);
	return rc;
}

static int load_scaled(const char *json, double scale, struct scenario *sc)
{
	return load_named(json, "scn.json", scale, sc);
}

static int load(const char *json, struct scenario *sc)
{
	return load_scaled(json, 1, sc);
}

/* ---- a full scenario ---- */

static const char full[] =
	"{\"name\":\"outage-hang\","
	" \"description\":\"The primary hangs for 30 s; a healthy secondary.\","
	" \"duration_s\":60, \"seed\":7,"
	" \"providers\":["
	"  {\"name\":\"primary\",\"ttft_ms\":200,\"output_tokens\":16,"
	"   \"faults\":[{\"kind\":\"hang\",\"from_s\":15,\"to_s\":45},"
	"              {\"kind\":\"rate_limit\",\"rpm\":600,\"from_s\":50,\"to_s\":55}]},"
	"  {\"name\":\"secondary\",\"listen\":\"127.0.0.1:9002\",\"ttft_ms\":200,"
	"   \"output_tokens\":16}],"
	" \"actions\":[{\"at_s\":45,\"do\":\"restart\",\"provider\":\"primary\"},"
	"             {\"at_s\":15,\"do\":\"kill\",\"provider\":\"primary\"}],"
	" \"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":15},"
	"            {\"name\":\"outage\",\"from_s\":15,\"to_s\":45},"
	"            {\"name\":\"recovered\",\"from_s\":45,\"to_s\":60}],"
	" \"load\":{\"rate\":10,\"arrival\":\"poisson\",\"stream\":0.25,\"timeout_ms\":30000,"
	"          \"stall_timeout_ms\":5000,\"model\":\"chat\",\"prompt_tokens\":32,\"max_tokens\":8,"
	"          \"mix\":{\"streams\":[{\"name\":\"s\",\"share\":1,\"tenant\":\"acme\"}]}},"
	" \"setups\":["
	"  {\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
	"  {\"name\":\"client-retry\",\"kind\":\"client_retry\",\"provider\":\"secondary\","
	"   \"retries\":3,\"retry_backoff_ms\":250},"
	"  {\"name\":\"breaker-on\",\"kind\":\"gateway\","
	"   \"config\":{\"request_deadline_ms\":5000,"
	"    \"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":1000},"
	"                 \"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000}},"
	"    \"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"},"
	"                                    {\"provider\":\"secondary\",\"model\":\"mock-small\"}]}},"
	"    \"breaker\":{\"cooldown_ms\":2000,\"half_open_probes\":2}}},"
	"  {\"name\":\"other-gw\",\"kind\":\"external\","
	"   \"command\":[\"/usr/bin/othergw\",\"--port\",\"{port}\",\"--upstream\","
	"                \"{upstream.primary}\"],"
	"   \"ready_url\":\"http://{listen}/health\",\"target\":\"http://{listen}/v1\","
	"   \"response_headers\":{\"provider\":\"x-other-provider\"}}],"
	" \"expect\":["
	"  {\"setup\":\"breaker-*\",\"phase\":\"outage\",\"error_rate_max\":0,"
	"   \"latency_p50_ms_max\":230,\"time_to_open_ms_max\":2000},"
	"  {\"setup\":\"*\",\"phase\":\"*\",\"answered_min\":0.5,\"latency_p95_ms_max\":900,"
	"   \"latency_p99_ms_max\":1000,\"time_to_primary_ms_max\":3000,"
	"   \"fallback_share_max\":0.9,\"fallback_share_min\":0.1},"
	"  {\"setup\":\"breaker-on\",\"phase\":\"outage\",\"silent_breaks_max\":0,"
	"   \"stalls_max\":2,\"max_gap_ms_max\":1100,\"ttft_p95_ms_max\":400}]}";

Test(scenario, full_scenario_every_field, .timeout = 10)
{
	struct scenario sc;
	const struct sc_setup *st;
	const struct sc_expect *e;
	const cJSON *p;

	cr_assert_eq(load(full, &sc), 0, "%s", err);
	cr_assert_str_eq(sc.name, "outage-hang");
	cr_assert_str_eq(sc.description, "The primary hangs for 30 s; a healthy secondary.");
	cr_assert_str_eq(sc.path, file);
	cr_assert_float_eq(sc.scale, 1, 0);
	cr_assert_float_eq(sc.duration_ms, 60000, 0);
	cr_assert_eq(sc.seed, 7);

	cr_assert_eq(sc.nproviders, 2);
	cr_assert_str_eq(sc.provider_names[0], "primary");
	cr_assert_str_eq(sc.provider_names[1], "secondary");
	cr_assert(cJSON_IsArray(sc.providers));
	cr_assert_eq(cJSON_GetArraySize(sc.providers), 2);
	p = cJSON_GetArrayItem(sc.providers, 0);
	cr_assert_null(cJSON_GetObjectItem(p, "listen"), "kept as written: no listen added");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "faults")), 2);
	cr_assert_eq(scenario_provider_index(&sc, "secondary"), 1);
	cr_assert_eq(scenario_provider_index(&sc, "nope"), -1);

	cr_assert_eq(sc.nactions, 2);
	cr_assert_eq(sc.actions[0].kind, SC_KILL, "sorted by time");
	cr_assert_float_eq(sc.actions[0].at_ms, 15000, 0);
	cr_assert_eq(sc.actions[0].provider, 0);
	cr_assert_eq(sc.actions[1].kind, SC_RESTART);
	cr_assert_float_eq(sc.actions[1].at_ms, 45000, 0);

	cr_assert_eq(sc.nphases, 3);
	cr_assert_str_eq(sc.phases[1].name, "outage");
	cr_assert_float_eq(sc.phases[1].from_ms, 15000, 0);
	cr_assert_float_eq(sc.phases[1].to_ms, 45000, 0);
	cr_assert_str_eq(sc.phases[2].name, "recovered");
	cr_assert_float_eq(sc.phases[2].to_ms, 60000, 0);

	cr_assert_float_eq(sc.load.rate, 10, 0);
	cr_assert_eq(sc.load.concurrency, 0);
	cr_assert_eq(sc.load.arrival, SC_ARRIVAL_POISSON);
	cr_assert_float_eq(sc.load.stream_p, 0.25, 0);
	cr_assert_float_eq(sc.load.timeout_ms, 30000, 0);
	cr_assert_float_eq(sc.load.stall_timeout_ms, 5000, 0);
	cr_assert_str_eq(sc.load.model, "chat");
	cr_assert_eq(sc.load.prompt_tokens, 32);
	cr_assert_eq(sc.load.max_tokens, 8);
	cr_assert(cJSON_IsObject(sc.load.mix));
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(sc.load.mix,
			 "streams"), 0), "tenant")->valuestring, "acme");

	cr_assert_eq(sc.nsetups, 4);
	st = &sc.setups[0];
	cr_assert_str_eq(st->name, "direct");
	cr_assert_eq(st->kind, SC_DIRECT);
	cr_assert_eq(st->provider, 0);
	cr_assert_null(st->config);
	cr_assert_null(st->command);
	st = &sc.setups[1];
	cr_assert_eq(st->kind, SC_CLIENT_RETRY);
	cr_assert_eq(st->provider, 1);
	cr_assert_eq(st->retries, 3);
	cr_assert_float_eq(st->retry_backoff_ms, 250, 0);
	st = &sc.setups[2];
	cr_assert_eq(st->kind, SC_GATEWAY);
	cr_assert(cJSON_IsObject(st->config));
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(st->config,
			 "providers"), "primary"), "base_url")->valuestring, "{upstream.primary}",
			 "placeholders kept until a run");
	st = &sc.setups[3];
	cr_assert_eq(st->kind, SC_EXTERNAL);
	cr_assert_eq(st->ncommand, 5);
	cr_assert_str_eq(st->command[0], "/usr/bin/othergw");
	cr_assert_str_eq(st->command[2], "{port}");
	cr_assert_str_eq(st->command[4], "{upstream.primary}");
	cr_assert_null(st->command[5], "NULL-terminated");
	cr_assert_str_eq(st->ready_url, "http://{listen}/health");
	cr_assert_str_eq(st->target, "http://{listen}/v1");
	cr_assert_str_eq(cJSON_GetObjectItem(st->response_headers, "provider")->valuestring,
			 "x-other-provider");

	cr_assert_eq(sc.nexpects, 3);
	e = &sc.expects[0];
	cr_assert_str_eq(e->setup, "breaker-*");
	cr_assert_str_eq(e->phase, "outage");
	cr_assert_float_eq(e->error_rate_max, 0, 0);
	cr_assert_float_eq(e->latency_p50_ms_max, 230, 0);
	cr_assert_float_eq(e->time_to_open_ms_max, 2000, 0);
	cr_assert(isnan(e->answered_min), "not given: NAN");
	cr_assert(isnan(e->latency_p95_ms_max));
	cr_assert(isnan(e->latency_p99_ms_max));
	cr_assert(isnan(e->time_to_primary_ms_max));
	cr_assert(isnan(e->fallback_share_max));
	cr_assert(isnan(e->fallback_share_min));
	cr_assert(isnan(e->silent_breaks_max));
	cr_assert(isnan(e->stalls_max));
	cr_assert(isnan(e->max_gap_ms_max));
	cr_assert(isnan(e->ttft_p95_ms_max));
	e = &sc.expects[1];
	cr_assert_float_eq(e->answered_min, 0.5, 0);
	cr_assert_float_eq(e->latency_p95_ms_max, 900, 0);
	cr_assert_float_eq(e->latency_p99_ms_max, 1000, 0);
	cr_assert_float_eq(e->time_to_primary_ms_max, 3000, 0);
	cr_assert_float_eq(e->fallback_share_max, 0.9, 0);
	cr_assert_float_eq(e->fallback_share_min, 0.1, 0);
	cr_assert(isnan(e->error_rate_max));
	/* the streams' bounds */
	e = &sc.expects[2];
	cr_assert_str_eq(e->setup, "breaker-on");
	cr_assert_float_eq(e->silent_breaks_max, 0, 0);
	cr_assert_float_eq(e->stalls_max, 2, 0);
	cr_assert_float_eq(e->max_gap_ms_max, 1100, 0);
	cr_assert_float_eq(e->ttft_p95_ms_max, 400, 0);
	cr_assert(isnan(e->error_rate_max));
	cr_assert(isnan(e->latency_p95_ms_max));

	scenario_free(&sc);
	cr_assert_null(sc.name);
	cr_assert_eq(sc.nsetups, 0);
	scenario_free(&sc);	/* harmless again */
}

#define DUR "\"duration_s\":60"
#define PROV "\"providers\":[{\"name\":\"a\"},{\"name\":\"b\"}]"
#define LOAD "\"load\":{\"rate\":10}"
#define SETUP "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\"}]"
#define BASE DUR "," PROV "," LOAD "," SETUP
#define NOSETUP DUR "," PROV "," LOAD

Test(scenario, minimal_takes_every_default, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load_named("{" BASE "}", "my-scn.v2.json", 1, &sc), 0, "%s", err);
	cr_assert_str_eq(sc.name, "my-scn.v2", "the file's base name without .json");
	cr_assert_str_eq(sc.description, "");
	cr_assert_eq(sc.seed, 1);
	cr_assert_eq(sc.nactions, 0);
	cr_assert_null(sc.actions);
	cr_assert_eq(sc.nphases, 1);
	cr_assert_str_eq(sc.phases[0].name, "all");
	cr_assert_float_eq(sc.phases[0].from_ms, 0, 0);
	cr_assert_float_eq(sc.phases[0].to_ms, 60000, 0);
	cr_assert_eq(sc.nexpects, 0);
	cr_assert_float_eq(sc.load.rate, 10, 0);
	cr_assert_eq(sc.load.arrival, SC_ARRIVAL_CONSTANT);
	cr_assert_float_eq(sc.load.stream_p, 0, 0);
	cr_assert_float_eq(sc.load.timeout_ms, 30000, 0);
	cr_assert(isnan(sc.load.stall_timeout_ms), "not given: loadgen's own default");
	cr_assert_str_eq(sc.load.model, "chat");
	cr_assert_eq(sc.load.prompt_tokens, 16);
	cr_assert_eq(sc.load.max_tokens, 16);
	cr_assert_null(sc.load.mix);
	cr_assert_eq(sc.nsetups, 1);
	scenario_free(&sc);

	cr_assert_eq(load("{" NOSETUP ",\"setups\":[{\"name\":\"r\",\"kind\":\"client_retry\","
			  "\"provider\":\"b\"}],\"actions\":[],\"expect\":[]}", &sc), 0, "%s", err);
	cr_assert_eq(sc.setups[0].retries, 2);
	cr_assert_float_eq(sc.setups[0].retry_backoff_ms, 100, 0);
	cr_assert_eq(sc.setups[0].provider, 1);
	cr_assert_str_eq(sc.name, "scn");
	scenario_free(&sc);
}

/*
 * "ci" gives the scale CI runs the scenario at and why; 1 without it.
 * It is never scaled itself, and scenario_ci_scale reads it alone.
 */
Test(scenario, ci_time_scale, .timeout = 10)
{
	static const char with_ci[] = "{" BASE ",\"ci\":{\"time_scale\":0.25,"
				      "\"why\":\"its stall bound needs the room\"}}";
	struct scenario sc;
	char path[200];
	FILE *fp;
	double s = 0;

	cr_assert_eq(load("{" BASE "}", &sc), 0, "%s", err);
	cr_assert_float_eq(sc.ci_scale, 1, 0);
	cr_assert_null(sc.ci_why);
	scenario_free(&sc);
	cr_assert_eq(load_scaled(with_ci, 0.5, &sc), 0, "%s", err);
	cr_assert_float_eq(sc.ci_scale, 0.25, 0, "not scaled by the scale it was loaded at");
	cr_assert_float_eq(sc.scale, 0.5, 0);
	cr_assert_str_eq(sc.ci_why, "its stall bound needs the room");
	scenario_free(&sc);

	snprintf(path, sizeof(path), "/tmp/fl-scn-ci-%d.json", (int)getpid());
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs(with_ci, fp);
	fclose(fp);
	cr_assert_eq(scenario_ci_scale(path, &s, err), 0, "%s", err);
	cr_assert_float_eq(s, 0.25, 0);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("{" BASE "}", fp);
	fclose(fp);
	s = 0;
	cr_assert_eq(scenario_ci_scale(path, &s, err), 0, "%s", err);
	cr_assert_float_eq(s, 1, 0, "no ci block: 1");
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("{" BASE ",\"ci\":{\"time_scale\":11,\"why\":\"w\"}}", fp);
	fclose(fp);
	cr_assert_eq(scenario_ci_scale(path, &s, err), -EINVAL);
	cr_assert(strstr(err, path) && strstr(err, ": ci.time_scale: expected a number above 0 "
					      "and at most 10, got 11"), "%s", err);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("[1]", fp);
	fclose(fp);
	cr_assert_eq(scenario_ci_scale(path, &s, err), -EINVAL);
	cr_assert(strstr(err, path) && strstr(err, "expected an object"), "%s", err);
	unlink(path);
	cr_assert_eq(scenario_ci_scale(path, &s, err), -EINVAL);
	cr_assert(strstr(err, path), "%s", err);
}

Test(scenario, prices_and_the_new_expectations, .timeout = 10)
{
	static const char json[] =
		"{" DUR "," PROV "," LOAD ","
		" \"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\"},"
		"            {\"name\":\"g\",\"kind\":\"client_retry\",\"provider\":\"b\"}],"
		" \"prices\":{\"b\":{\"input\":0.15,\"output\":0.6},\"a\":{\"output\":2}},"
		" \"expect\":[{\"setup\":\"g\",\"phase\":\"*\",\"class\":\"batch\","
		"              \"answered_max\":0.5,\"window_s\":5,\"window_answered_min\":0.99},"
		"             {\"setup\":\"g\",\"phase\":\"all\",\"relative_to\":\"d\","
		"              \"latency_p99_ratio_max\":0.333,\"cost_overhead_max\":0.1,"
		"              \"extra_requests_max\":0.15},"
		"             {\"setup\":\"*\",\"phase\":\"*\",\"window_s\":2,"
		"              \"window_answered_min\":0.5},"
		"             {\"setup\":\"*\",\"phase\":\"*\",\"window_s\":5,"
		"              \"window_answered_min\":0.5}]}";
	struct scenario sc;
	double w[4];

	cr_assert_eq(load_scaled(json, 0.5, &sc), 0, "%s", err);
	cr_assert(sc.prices[0].set && sc.prices[1].set);
	cr_assert_float_eq(sc.prices[0].input, 0, 0, "a price not given is 0");
	cr_assert_float_eq(sc.prices[0].output, 2, 0, "prices are not scaled");
	cr_assert_float_eq(sc.prices[1].input, 0.15, 0);
	cr_assert_float_eq(sc.prices[1].output, 0.6, 0);
	cr_assert_str_eq(sc.expects[0].cls, "batch");
	cr_assert_null(sc.expects[0].relative_to);
	cr_assert_float_eq(sc.expects[0].answered_max, 0.5, 0);
	cr_assert_float_eq(sc.expects[0].window_ms, 2500, 1e-9, "window_s is a duration: scaled");
	cr_assert_float_eq(sc.expects[0].window_answered_min, 0.99, 0, "a share: not scaled");
	cr_assert_null(sc.expects[1].cls);
	cr_assert(isnan(sc.expects[1].window_ms));
	cr_assert_str_eq(sc.expects[1].relative_to, "d");
	cr_assert_float_eq(sc.expects[1].latency_p99_ratio_max, 0.333, 0);
	cr_assert_float_eq(sc.expects[1].cost_overhead_max, 0.1, 0);
	cr_assert_float_eq(sc.expects[1].extra_requests_max, 0.15, 0);
	cr_assert_eq(scenario_windows(&sc, w, 4), 2, "each window length once");
	cr_assert_float_eq(w[0], 2500, 1e-9);
	cr_assert_float_eq(w[1], 1000, 1e-9);
	cr_assert_eq(scenario_windows(&sc, w, 1), 1, "at most max");
	scenario_free(&sc);

	cr_assert_eq(load("{" BASE "}", &sc), 0, "%s", err);
	cr_assert_not(sc.prices[0].set || sc.prices[1].set, "no prices: none set");
	cr_assert_eq(scenario_windows(&sc, w, 4), 0);
	scenario_free(&sc);
}

/*
 * An expectation's "when": kept when the scenario's values, as written
 * (unscaled), are those given (one of a list), left out otherwise.
 */
Test(scenario, expectations_apply_when_the_scenario_has_the_values, .timeout = 10)
{
	static const char json[] =
		"{" DUR "," PROV ","
		" \"load\":{\"concurrency\":2,\"timeout_ms\":1000,\"model\":\"m\"},"
		" \"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\"}],"
		" \"expect\":[{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.1,"
		"              \"when\":{\"load.timeout_ms\":1000}},"
		"             {\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.2,"
		"              \"when\":{\"load.timeout_ms\":2000}},"
		"             {\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.3,"
		"              \"when\":{\"load.timeout_ms\":[500,1000],\"load.model\":\"m\","
		"                        \"setups.d.provider\":[\"a\",\"b\"]}},"
		"             {\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.4,"
		"              \"when\":{\"load.timeout_ms\":1000,\"load.model\":\"n\"}},"
		"             {\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.5}]}";
	struct scenario sc;

	cr_assert_eq(load_scaled(json, 0.2, &sc), 0, "%s", err);
	cr_assert_eq(sc.nexpects, 3, "the entries whose when holds, and the one without");
	cr_expect_float_eq(sc.expects[0].answered_min, 0.1, 0, "1000 as written, not as scaled");
	cr_expect_float_eq(sc.expects[1].answered_min, 0.3, 0, "one of a list, every path");
	cr_expect_float_eq(sc.expects[2].answered_min, 0.5, 0);
	scenario_free(&sc);
}

Test(scenario, closed_loop_and_rate_mix, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" DUR "," PROV ",\"load\":{\"concurrency\":10}," SETUP "}", &sc), 0,
		     "%s", err);
	cr_assert_eq(sc.load.concurrency, 10);
	cr_assert_float_eq(sc.load.rate, 0, 0);
	scenario_free(&sc);
	/* The mix's streams give the rates: neither rate nor concurrency. */
	cr_assert_eq(load("{" DUR "," PROV ",\"load\":{\"arrival\":\"poisson\",\"mix\":{\"streams\":"
			  "[{\"name\":\"s\",\"rate\":4}]}}," SETUP "}", &sc), 0, "%s", err);
	cr_assert_eq(sc.load.concurrency, 0);
	cr_assert_float_eq(sc.load.rate, 0, 0);
	cr_assert_eq(sc.load.arrival, SC_ARRIVAL_POISSON);
	scenario_free(&sc);
}

/*
 * load.error_think_ms reaches loadgen's --error-think, scaled: 10 ms when
 * absent (scaled too), 0 to turn it off, none for an open loop.
 */
Test(scenario, error_think_reaches_loadgen, .timeout = 10)
{
	static const struct {
		const char *load;
		double scale;
		double want;
	} cases[] = {
		{ "{\"concurrency\":10}", 1, 10 },
		{ "{\"concurrency\":10}", 0.2, 2 },
		{ "{\"concurrency\":10,\"error_think_ms\":250}", 0.2, 50 },
		{ "{\"concurrency\":10,\"error_think_ms\":0}", 1, 0 },
		{ "{\"rate\":10}", 1, 0 },
	};
	struct scenario sc;
	struct lg_config cfg;
	char doc[512];
	char id[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(doc, sizeof(doc), "{" DUR "," PROV ",\"load\":%s," SETUP "}", cases[i].load);
		cr_assert_eq(load_scaled(doc, cases[i].scale, &sc), 0, "%s", err);
		cr_assert_float_eq(sc.load.error_think_ms, cases[i].want, 1e-9, "case %zu", i);
		cr_assert_eq(loadcfg_of(&sc, &sc.setups[0], 1, &cfg, id, sizeof(id), err), 0, "%s",
			     err);
		cr_assert_float_eq(cfg.error_think_ms, cases[i].want, 1e-9, "case %zu", i);
		mix_free(&cfg.mix);
		scenario_free(&sc);
	}
}

/* loadgen's settings of run k: the ramp-up (scaled) and, for a mix's rate streams, the arrival. */
Test(scenario, ramp_up_and_arrival_reach_loadgen, .timeout = 10)
{
	struct scenario sc;
	struct lg_config cfg;
	char id[64];

	cr_assert_eq(load_scaled("{" DUR "," PROV ",\"load\":{\"concurrency\":10,"
				 "\"ramp_up_ms\":200}," SETUP "}", 0.5, &sc), 0, "%s", err);
	cr_assert_float_eq(sc.load.ramp_up_ms, 100, 1e-9);
	cr_assert_eq(loadcfg_of(&sc, &sc.setups[0], 1, &cfg, id, sizeof(id), err), 0, "%s", err);
	cr_assert_eq(cfg.concurrency, 10);
	cr_assert_float_eq(cfg.ramp_up_ms, 100, 1e-9);
	mix_free(&cfg.mix);
	scenario_free(&sc);
	/* Streams that give rates and say no arrival follow load.arrival. */
	cr_assert_eq(load("{" DUR "," PROV ",\"load\":{\"arrival\":\"poisson\",\"mix\":{\"streams\":"
			  "[{\"name\":\"s\",\"rate\":4}]}}," SETUP "}", &sc), 0, "%s", err);
	cr_assert_eq(loadcfg_of(&sc, &sc.setups[0], 1, &cfg, id, sizeof(id), err), 0, "%s", err);
	cr_assert_eq(cfg.arrival, ARRIVAL_POISSON);
	cr_assert_float_eq(cfg.rate, 4, 1e-9, "the streams' sum");
	mix_free(&cfg.mix);
	scenario_free(&sc);
}

Test(scenario, actions_sort_stably, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" BASE ",\"actions\":["
			  "{\"at_s\":30,\"do\":\"restart\",\"provider\":\"b\"},"
			  "{\"at_s\":10,\"do\":\"kill\",\"provider\":\"a\"},"
			  "{\"at_s\":10,\"do\":\"restart\",\"provider\":\"a\"},"
			  "{\"at_s\":20,\"do\":\"kill\",\"provider\":\"b\"},"
			  "{\"at_s\":60,\"do\":\"kill\",\"provider\":\"a\"}]}", &sc), 0, "%s", err);
	cr_assert_eq(sc.nactions, 5);
	cr_assert_eq(sc.actions[0].kind, SC_KILL);
	cr_assert_eq(sc.actions[0].provider, 0);
	cr_assert_eq(sc.actions[1].kind, SC_RESTART, "same time: file order");
	cr_assert_eq(sc.actions[1].provider, 0);
	cr_assert_float_eq(sc.actions[2].at_ms, 20000, 0);
	cr_assert_eq(sc.actions[2].provider, 1);
	cr_assert_eq(sc.actions[3].kind, SC_RESTART);
	cr_assert_float_eq(sc.actions[4].at_ms, 60000, 0, "at the very end is allowed");
	scenario_free(&sc);
}

/* ---- refusals ---- */

struct bad_case {
	const char *json;
	const char *says;
};

#define GW(cfg) "\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"config\":" cfg "}]"
#define GW_PROVIDERS "\"providers\":{\"p\":{\"base_url\":\"{upstream.a}\"}}"
#define GW_MODELS "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}"
#define EXT(rest) "\"setups\":[{\"name\":\"x\",\"kind\":\"external\"" rest "}]"
#define EXT_OK ",\"command\":[\"gw\",\"{port}\"],\"ready_url\":\"http://{listen}/\"," \
	"\"target\":\"http://{listen}/v1\""
#define EXPECT(e) "{" BASE ",\"expect\":[" e "]}"
#define PHASES2 "\"phases\":[{\"name\":\"f\",\"from_s\":0,\"to_s\":30}," \
	"{\"name\":\"r\",\"from_s\":30,\"to_s\":60}]"

static const struct bad_case bad_cases[] = {
	/* top level */
	{ "[1]", ": (top level): expected an object, got an array" },
	{ "{" BASE ",\"colour\":1}", ": colour: unknown key" },
	{ "{" BASE ",\"seed\":1,\"seed\":2}", ": seed: given twice" },
	{ "{" PROV "," LOAD "," SETUP "}", ": duration_s: missing (required)" },
	{ "{\"duration_s\":0," PROV "," LOAD "," SETUP "}",
	  ": duration_s: expected a number above 0 and at most 86400, got 0" },
	{ "{\"duration_s\":86401," PROV "," LOAD "," SETUP "}",
	  ": duration_s: expected a number above 0 and at most 86400, got 86401" },
	{ "{\"duration_s\":\"60s\"," PROV "," LOAD "," SETUP "}",
	  ": duration_s: expected a number above 0 and at most 86400, got the string \"60s\"" },
	{ "{" DUR "," LOAD "," SETUP "}", ": providers: missing (required)" },
	{ "{" NOSETUP "}", ": setups: missing (required)" },
	{ "{" DUR "," PROV "," SETUP "}", ": load: missing (required)" },
	{ "{" BASE ",\"name\":\"a b\"}", ": name: expected a name of 1-64 letters" },
	{ "{" BASE ",\"name\":\"..\"}", ": name: expected a name of 1-64 letters" },
	{ "{" BASE ",\"name\":\"x123456789x123456789x123456789x123456789x123456789x123456789xxxxx\"}",
	  ": name: expected a name of 1-64 letters" },
	{ "{" BASE ",\"name\":\"\"}", ": name: expected a non-empty string" },
	{ "{" BASE ",\"seed\":1.5}", ": seed: expected a whole number from 0" },
	{ "{" BASE ",\"seed\":-1}", ": seed: expected a whole number from 0" },
	{ "{" BASE ",\"description\":3}", ": description: expected a string, got 3" },
	/* providers: the scenario's shape, mockprov's own checks */
	{ "{" DUR ",\"providers\":[]," LOAD "," SETUP "}",
	  ": providers: expected a non-empty array of providers" },
	{ "{" DUR ",\"providers\":{\"a\":{}}," LOAD "," SETUP "}",
	  ": providers: expected a non-empty array of providers" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\"},3]," LOAD "," SETUP "}",
	  ": providers[1]: expected an object, got 3" },
	{ "{" DUR ",\"providers\":[{\"ttft_ms\":1}]," LOAD "," SETUP "}",
	  ": providers[0].name: missing (required)" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\"},{\"name\":\"a\"}]," LOAD "," SETUP "}",
	  ": providers[1].name: expected a name no other provider has, got \"a\"" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a/b\"}]," LOAD "," SETUP "}",
	  ": providers[0].name: expected a name usable in a file name" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"colour\":1}]," LOAD "," SETUP "}",
	  ": providers[0].colour: unknown key" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"ttft_ms\":-1}]," LOAD "," SETUP "}",
	  ": providers[0].ttft_ms: expected a number from 0 to 600000, got -1" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"listen\":\"nowhere\"}]," LOAD "," SETUP "}",
	  ": providers[0].listen: expected HOST:PORT" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"listen\":\"0.0.0.0:9001\"}]," LOAD "," SETUP "}",
	  ": providers[0].listen: expected a loopback address" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:9001\"},"
	  "{\"name\":\"b\",\"listen\":\"127.0.0.1:9001\"}]," LOAD "," SETUP "}",
	  ": providers[1].listen: expected a port no other provider uses" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"faults\":[{\"kind\":\"flood\",\"from_s\":0,"
	  "\"to_s\":1}]}]," LOAD "," SETUP "}", ": providers[0].faults[0].kind: expected one of" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"faults\":[{\"kind\":\"hang\",\"from_s\":0,"
	  "\"to_s\":1,\"add_ms\":5}]}]," LOAD "," SETUP "}",
	  ": providers[0].faults[0].add_ms: not a key of a \"hang\" fault" },
	{ "{" DUR ",\"providers\":[{\"name\":\"a\",\"faults\":[{\"kind\":\"hang\",\"from_s\":5,"
	  "\"to_s\":5}]}]," LOAD "," SETUP "}",
	  ": providers[0].faults[0].to_s: expected a time after from_s (5), got 5" },
	/* actions */
	{ "{" BASE ",\"actions\":{}}", ": actions: expected an array of actions" },
	{ "{" BASE ",\"actions\":[{\"do\":\"kill\",\"provider\":\"a\"}]}",
	  ": actions[0].at_s: missing (required)" },
	{ "{" BASE ",\"actions\":[{\"at_s\":61,\"do\":\"kill\",\"provider\":\"a\"}]}",
	  ": actions[0].at_s: expected a number from 0 to 60, got 61" },
	{ "{" BASE ",\"actions\":[{\"at_s\":-1,\"do\":\"kill\",\"provider\":\"a\"}]}",
	  ": actions[0].at_s: expected a number from 0 to 60, got -1" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"pause\",\"provider\":\"a\"}]}",
	  ": actions[0].do: expected one of kill, restart, got the string \"pause\"" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"provider\":\"c\"}]}",
	  ": actions[0].provider: expected the name of a provider (a, b), got \"c\"" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"provider\":\"a\",\"signal\":9}]}",
	  ": actions[0].signal: unknown key" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"restart\",\"provider\":\"a\"}]}",
	  ": actions[0].do: expected a \"restart\" only after a \"kill\" of \"a\"" },
	/* listed after the kill, but earlier in time */
	{ "{" BASE ",\"actions\":[{\"at_s\":30,\"do\":\"kill\",\"provider\":\"a\"},"
	  "{\"at_s\":10,\"do\":\"restart\",\"provider\":\"a\"}]}",
	  ": actions[1].do: expected a \"restart\" only after a \"kill\" of \"a\", got a restart at "
	  "10 s" },
	{ "{" BASE ",\"actions\":[{\"at_s\":20,\"do\":\"kill\",\"provider\":\"a\"},"
	  "{\"at_s\":5,\"do\":\"kill\",\"provider\":\"b\"},"
	  "{\"at_s\":10,\"do\":\"kill\",\"provider\":\"a\"}]}",
	  ": actions[0].do: expected a \"restart\" of \"a\" between two kills, got a second \"kill\" "
	  "at 20 s (actions[2] killed it)" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"provider\":\"a\"},"
	  "{\"at_s\":2,\"do\":\"restart\",\"provider\":\"a\"},"
	  "{\"at_s\":3,\"do\":\"restart\",\"provider\":\"a\"}]}",
	  ": actions[2].do: expected a \"restart\" only after a \"kill\"" },
	/* phases */
	{ "{" BASE ",\"phases\":[]}", ": phases: expected a non-empty array of phases" },
	{ "{" BASE ",\"phases\":[{\"from_s\":0,\"to_s\":1}]}", ": phases[0].name: missing (required)" },
	{ "{" BASE ",\"phases\":[{\"name\":\"a b\",\"from_s\":0,\"to_s\":1}]}",
	  ": phases[0].name: expected a name of 1-64" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":0,\"to_s\":1},"
	  "{\"name\":\"p\",\"from_s\":1,\"to_s\":2}]}",
	  ": phases[1].name: expected a name no other phase has, got \"p\" (also phases[0])" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":10,\"to_s\":10}]}",
	  ": phases[0].to_s: expected a time after from_s (10), got 10" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":10,\"to_s\":70}]}",
	  ": phases[0].to_s: expected a number from 0 to 60, got 70" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":-1,\"to_s\":7}]}",
	  ": phases[0].from_s: expected a number from 0 to 60, got -1" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":0,\"to_s\":20},"
	  "{\"name\":\"q\",\"from_s\":15,\"to_s\":30}]}",
	  ": phases[1].from_s: expected a window that overlaps no other phase, got 15-30 s, "
	  "which overlaps phases[0] \"p\" (0-20 s)" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":10,\"to_s\":20},"
	  "{\"name\":\"q\",\"from_s\":5,\"to_s\":15}]}", ": phases[1].to_s: expected a window that" },
	{ "{" BASE ",\"phases\":[{\"name\":\"p\",\"from_s\":10,\"to_s\":20},"
	  "{\"name\":\"q\",\"from_s\":0,\"to_s\":60}]}", ": phases[1].to_s: expected a window that" },
	/* load */
	{ "{" DUR "," PROV ",\"load\":[]," SETUP "}", ": load: expected an object, got an array" },
	{ "{" DUR "," PROV ",\"load\":{}," SETUP "}",
	  ": load: expected rate (requests per second, open loop) or concurrency (clients, closed "
	  "loop), got neither" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":1,\"concurrency\":2}," SETUP "}",
	  ": load.concurrency: expected rate (open loop) or concurrency (closed loop), got both" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":0}," SETUP "}",
	  ": load.rate: expected a number above 0 and at most 100000, got 0" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":100001}," SETUP "}",
	  ": load.rate: expected a number above 0 and at most 100000, got 100001" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":5,\"ramp_up_ms\":100}," SETUP "}",
	  ": load.ramp_up_ms: expected ramp_up_ms only with a closed loop (concurrency), got it "
	  "with an open loop" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2,\"ramp_up_ms\":60000}," SETUP "}",
	  ": load.ramp_up_ms: expected less than the duration (60000 ms): the clients begin "
	  "within the run, got 60000" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2,\"ramp_up_ms\":-1}," SETUP "}",
	  ": load.ramp_up_ms: expected a number from 0 to 3600000, got -1" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":5,\"error_think_ms\":10}," SETUP "}",
	  ": load.error_think_ms: expected error_think_ms only with a closed loop (concurrency), "
	  "got it with an open loop" },
	{ "{" DUR "," PROV ",\"load\":{\"mix\":{\"streams\":[{\"name\":\"s\",\"rate\":4}]},"
	  "\"error_think_ms\":0}," SETUP "}",
	  ": load.error_think_ms: expected error_think_ms only with a closed loop" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2,\"error_think_ms\":60001}," SETUP "}",
	  ": load.error_think_ms: expected a number from 0 to 60000, got 60001" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2,\"error_think_ms\":\"10ms\"}," SETUP "}",
	  ": load.error_think_ms: expected a number from 0 to 60000, got the string \"10ms\"" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":0}," SETUP "}",
	  ": load.concurrency: expected a whole number from 1 to 10000, got 0" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2.5}," SETUP "}",
	  ": load.concurrency: expected a whole number from 1 to 10000, got 2.5" },
	{ "{" DUR "," PROV ",\"load\":{\"concurrency\":2,\"arrival\":\"poisson\"}," SETUP "}",
	  ": load.arrival: expected arrival only with an open loop (rate), got it with concurrency" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"arrival\":\"burst\"}," SETUP "}",
	  ": load.arrival: expected one of constant, poisson, got the string \"burst\"" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"stream\":1.5}," SETUP "}",
	  ": load.stream: expected a number from 0 to 1, got 1.5" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"stall_timeout_ms\":0}," SETUP "}",
	  ": load.stall_timeout_ms: expected a number from 1 to 3600000, got 0" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"stall_timeout_ms\":\"5s\"}," SETUP "}",
	  ": load.stall_timeout_ms: expected a number from 1 to 3600000, got the string \"5s\"" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"timeout_ms\":0}," SETUP "}",
	  ": load.timeout_ms: expected a number from 1 to 3600000, got 0" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"model\":\"\"}," SETUP "}",
	  ": load.model: expected a non-empty string" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"prompt_tokens\":0}," SETUP "}",
	  ": load.prompt_tokens: expected a whole number from 1 to 1000000, got 0" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"max_tokens\":1000001}," SETUP "}",
	  ": load.max_tokens: expected a whole number from 1 to 1000000" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":[]}," SETUP "}",
	  ": load.mix: expected an object (a loadgen mix file's contents), got an array" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":{\"streams\":[{\"name\":\"s\",\"rate\":1}]}},"
	  SETUP "}", ": load.rate: expected no rate when the mix's streams give rates" },
	{ "{" DUR "," PROV ",\"load\":{\"mix\":{\"streams\":[{\"name\":\"s\",\"share\":1}]}},"
	  SETUP "}", ": load: expected rate (requests per second, open loop) or concurrency" },
	/* load.mix through loadgen's own reader, as loadgen will take it. */
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":{\"streams\":[{\"name\":\"s\","
	  "\"share\":1,\"colour\":1}]}}," SETUP "}", ": load.mix.streams[0].colour: unknown key" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":{\"streams\":[{\"name\":\"s\","
	  "\"share\":1,\"headers\":{\"host\":\"x\"}}]}}," SETUP "}", ": load.mix.streams[0].headers" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":{\"response_headers\":{\"colour\":"
	  "\"x-c\"}}}," SETUP "}", ": load.mix.response_headers.colour: unknown key" },
	{ "{" DUR "," PROV ",\"load\":{\"rate\":2,\"duration_s\":5}," SETUP "}",
	  ": load.duration_s: unknown key" },
	/* setups */
	{ "{" NOSETUP ",\"setups\":[]}", ": setups: expected a non-empty array of setups, got an "
	  "empty array" },
	{ "{" NOSETUP ",\"setups\":[\"direct\"]}",
	  ": setups[0]: expected a setup object, got the string \"direct\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"provider\":\"a\"}]}",
	  ": setups[0].kind: missing (required): one of direct, client_retry, gateway, external" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"proxy\"}]}",
	  ": setups[0].kind: expected one of direct, client_retry, gateway, external, got the "
	  "string \"proxy\"" },
	{ "{" NOSETUP ",\"setups\":[{\"kind\":\"direct\",\"provider\":\"a\"}]}",
	  ": setups[0].name: missing (required)" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d/e\",\"kind\":\"direct\",\"provider\":\"a\"}]}",
	  ": setups[0].name: expected a name of 1-64 letters" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\"},"
	  "{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"b\"}]}",
	  ": setups[1].name: expected a name no other setup has, got \"d\" (also setups[0])" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\"}]}",
	  ": setups[0].provider: missing (required)" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"z\"}]}",
	  ": setups[0].provider: expected the name of a provider (a, b), got \"z\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"retries\":2}]}",
	  ": setups[0].retries: unknown key for a setup of kind \"direct\", which takes: name, kind, "
	  "headers, provider" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"provider\":\"b\"}]}", ": setups[0].provider: given twice" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"r\",\"kind\":\"client_retry\",\"provider\":\"a\","
	  "\"retries\":0}]}", ": setups[0].retries: expected a whole number from 1 to 100, got 0" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"r\",\"kind\":\"client_retry\",\"provider\":\"a\","
	  "\"retries\":101}]}", ": setups[0].retries: expected a whole number from 1 to 100" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"r\",\"kind\":\"client_retry\",\"provider\":\"a\","
	  "\"retry_backoff_ms\":-1}]}",
	  ": setups[0].retry_backoff_ms: expected a number from 0 to 600000, got -1" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\"}]}",
	  ": setups[0].config: missing (required)" },
	{ "{" NOSETUP "," GW("\"gateway.json\"") "}",
	  ": setups[0].config: expected an object (a bin/gateway config), got the string" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"config\":{},"
	  "\"provider\":\"a\"}]}",
	  ": setups[0].provider: unknown key for a setup of kind \"gateway\", which takes: name, kind, "
	  "headers, config" },
	{ "{" NOSETUP "," GW("{\"listen\":\"127.0.0.1:8080\"," GW_PROVIDERS "," GW_MODELS "}") "}",
	  ": setups[0].config.listen: expected no listen (the runner picks the gateway's port), "
	  "got the string \"127.0.0.1:8080\"" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"{upstream.c}\"}}," GW_MODELS "}")
	  "}", ": setups[0].config.providers.p.base_url: expected {upstream.NAME} with NAME a "
	  "provider of the scenario (a, b), got \"{upstream.c}\"" },
	{ "{" NOSETUP "," GW("{" GW_PROVIDERS ",\"models\":{\"chat\":{\"targets\":[{\"provider\":"
			     "\"p\",\"model\":\"{port}\"}]}}}") "}",
	  ": setups[0].config.models.chat.targets[0].model: expected only {upstream.NAME} "
	  "placeholders in a gateway config (the runner sets its listen), got \"{port}\"" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"http://{upstream.a\"}},"
			     GW_MODELS "}") "}",
	  ": setups[0].config.providers.p.base_url: expected {upstream.NAME} closed by '}', got "
	  "\"http://{upstream.a\"" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"{upstrem.a}\"}}," GW_MODELS "}")
	  "}", ": setups[0].config.providers.p.base_url: expected only the placeholders "
	  "{upstream.NAME} (the runner sets the gateway's listen), got \"{upstrem.a}\"" },
	/* The gateway's own loader, on the config as the run would give it. */
	{ "{" NOSETUP "," GW("{" GW_PROVIDERS ",\"breaker\":{\"consecutive_failurs\":3}," GW_MODELS
			     "}") "}",
	  ": setups[0] \"g\": config.breaker.consecutive_failurs: unknown key" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"{upstream.a}\",\"timeout_ms\":0}},"
			     GW_MODELS "}") "}",
	  ": setups[0] \"g\": config.providers.p.timeout_ms: expected a number from 1 to 3600000, "
	  "got 0" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"http://10.1.2.3/v1\"}},"
			     GW_MODELS "}") "}",
	  ": setups[0] \"g\": config.providers.p.base_url: " },
	{ "{" NOSETUP "," GW("{" GW_PROVIDERS ",\"models\":{\"chat\":{\"targets\":[{\"provider\":"
			     "\"q\",\"model\":\"m\"}]}}}") "}",
	  ": setups[0] \"g\": config.models.chat.targets[0].provider: " },
	{ "{" NOSETUP "," GW("{" GW_PROVIDERS "}") "}",
	  ": setups[0] \"g\": config.models: missing (required)" },
	{ "{" NOSETUP "," GW("{}") "}", ": setups[0] \"g\": config.providers: missing (required)" },
	{ "{" NOSETUP "," EXT(",\"ready_url\":\"http://{listen}/\",\"target\":\"http://x/v1\"") "}",
	  ": setups[0].command: missing (required)" },
	{ "{" NOSETUP "," EXT(",\"command\":[],\"ready_url\":\"u\",\"target\":\"t\"") "}",
	  ": setups[0].command: expected a non-empty array of strings (the program and its "
	  "arguments), got an empty array" },
	{ "{" NOSETUP "," EXT(",\"command\":\"gw --port 1\",\"ready_url\":\"u\",\"target\":\"t\"")
	  "}", ": setups[0].command: expected a non-empty array of strings" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"\"],\"ready_url\":\"u\",\"target\":\"t\"") "}",
	  ": setups[0].command[0]: expected a non-empty string, got the string \"\"" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\",2],\"ready_url\":\"u\",\"target\":\"t\"") "}",
	  ": setups[0].command[1]: expected a string, got 2" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\",\"--listen={lisen}\"],\"ready_url\":\"u\","
			      "\"target\":\"t\"") "}",
	  ": setups[0].command[1]: expected only the placeholders {port}, {listen}, {dir}, "
	  "{ms:N}, {upstream.NAME} and {hostport.NAME}, got \"{lisen}\"" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\"],\"target\":\"t\"") "}",
	  ": setups[0].ready_url: missing (required)" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\"],\"ready_url\":\"u\"") "}",
	  ": setups[0].target: missing (required)" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\"],\"ready_url\":\"http://{upstream.q}/\","
			      "\"target\":\"t\"") "}",
	  ": setups[0].ready_url: expected {upstream.NAME} with NAME a provider of the scenario "
	  "(a, b), got \"{upstream.q}\"" },
	{ "{" NOSETUP "," EXT(",\"command\":[\"gw\"],\"ready_url\":\"u\",\"target\":\"{upstream.}\"")
	  "}", ": setups[0].target: expected {upstream.NAME} with NAME a provider" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"response_headers\":[\"x\"]") "}",
	  ": setups[0].response_headers: expected an object of header names" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"response_headers\":{\"model\":\"x-model\"}") "}",
	  ": setups[0].response_headers.model: unknown key; expected one of provider, attempts, "
	  "hedged, cost_usd, degraded" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"response_headers\":{\"provider\":1}") "}",
	  ": setups[0].response_headers.provider: expected a header name (a non-empty string), "
	  "got 1" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"response_headers\":{\"hedged\":\"a\",\"hedged\":\"b\"}")
	  "}", ": setups[0].response_headers.hedged: given twice" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"provider\":\"a\"") "}",
	  ": setups[0].provider: unknown key for a setup of kind \"external\", which takes: name, kind, "
	  "headers, command, ready_url, target, response_headers, files, ready_ms" },
	/* an external setup's files and ready time, any setup's headers, the placeholders */
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"requests.csv\":\"x\"}") "}",
	  ": setups[0].files.requests.csv: expected a plain file name of 1-128 bytes" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"mock-a.csv\":\"x\"}") "}",
	  ": setups[0].files.mock-a.csv: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"external.log\":\"x\"}") "}",
	  ": setups[0].files.external.log: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"summary.json\":\"x\"}") "}",
	  ": setups[0].files.summary.json: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"conf/a.cfg\":\"x\"}") "}",
	  ": setups[0].files.conf/a.cfg: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"..\":\"x\"}") "}",
	  ": setups[0].files...: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"a.cfg.tmp\":\"x\"}") "}",
	  ": setups[0].files.a.cfg.tmp: expected a plain file name" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"a.cfg\":1}") "}",
	  ": setups[0].files.a.cfg: expected a string, got 1" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":[\"a.cfg\"]") "}",
	  ": setups[0].files: expected an object of at most 64 files (name: text), got an array" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"a.cfg\":\"timeout {ms:1s}\"}") "}",
	  ": setups[0].files.a.cfg: expected {ms:N} with N a number of milliseconds from 0 to "
	  "1000000000 (digits, maybe a fraction: {ms:1500}), got \"{ms:1s}\"" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"a.cfg\":\"server {hostport.q}\"}") "}",
	  ": setups[0].files.a.cfg: expected {hostport.NAME} with NAME a provider of the scenario "
	  "(a, b), got \"{hostport.q}\"" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"files\":{\"a.cfg\":\"{folder}\"}") "}",
	  ": setups[0].files.a.cfg: expected only the placeholders {port}, {listen}, {dir}, "
	  "{ms:N}, {upstream.NAME} and {hostport.NAME}, got \"{folder}\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"x\",\"kind\":\"external\","
	  "\"command\":[\"gw\",\"--timeout={ms:-5}\"],\"ready_url\":\"u\",\"target\":\"t\"}]}",
	  ": setups[0].command[1]: expected {ms:N} with N a number of milliseconds" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"x\",\"kind\":\"external\","
	  "\"command\":[\"gw\"],\"ready_url\":\"http://{listen}/{ms:x}\",\"target\":\"t\"}]}",
	  ": setups[0].ready_url: expected {ms:N} with N a number of milliseconds" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"ready_ms\":0") "}",
	  ": setups[0].ready_ms: expected a number from 1 to 120000, got 0" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"ready_ms\":120001") "}",
	  ": setups[0].ready_ms: expected a number from 1 to 120000, got 120001" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"ready_ms\":100}]}", ": setups[0].ready_ms: unknown key for a setup of kind \"direct\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"files\":{\"a\":\"b\"}}]}", ": setups[0].files: unknown key for a setup of kind \"direct\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"headers\":{\"x-request-id\":\"b\"}}]}",
	  ": setups[0].headers.x-request-id: expected a header loadgen does not set itself "
	  "(content-type, content-length, host, accept, expect, x-request-id, x-faultline-class, "
	  "x-faultline-tenant, x-faultline-feature)" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"Content-Type\":\"text/plain\"}") "}",
	  ": setups[0].headers.Content-Type: expected a header loadgen does not set itself" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"x team\":\"a\"}") "}",
	  ": setups[0].headers.x team: expected a header name made of letters, digits" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"x-a\":\"1\",\"X-A\":\"2\"}") "}",
	  ": setups[0].headers.X-A: given twice (header names ignore case); expected each once" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"x-a\":\"a\\nb\"}") "}",
	  ": setups[0].headers.x-a: expected a header value without control characters" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"x-a\":true}") "}",
	  ": setups[0].headers.x-a: expected a string, got true" },
	{ "{" NOSETUP "," EXT(EXT_OK ",\"headers\":{\"x-a\":\"{ms:1.5.2}\"}") "}",
	  ": setups[0].headers.x-a: expected {ms:N} with N a number of milliseconds" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"headers\":{\"x-port\":\"{port}\"}}]}",
	  ": setups[0].headers.x-port: expected only the placeholders {dir}, {ms:N}, "
	  "{upstream.NAME} and {hostport.NAME} ({port} and {listen} only in an external setup), "
	  "got \"{port}\"" },
	{ "{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"{upstream.a}\","
	  "\"timeout_ms\":\"{ms:100}\"}}," GW_MODELS "}") "}",
	  ": setups[0].config.providers.p.timeout_ms: expected only the placeholders "
	  "{upstream.NAME} (the runner sets the gateway's listen), got \"{ms:100}\"" },
	/* expectations */
	{ "{" BASE ",\"expect\":{}}", ": expect: expected an array of expectations" },
	{ EXPECT("{\"phase\":\"*\",\"error_rate_max\":0}"), ": expect[0].setup: missing (required)" },
	{ EXPECT("{\"setup\":\"d\",\"error_rate_max\":0}"), ": expect[0].phase: missing (required)" },
	{ EXPECT("{\"setup\":\"gw-*\",\"phase\":\"*\",\"error_rate_max\":0}"),
	  ": expect[0].setup: expected a setup name or a glob matching one (d), got \"gw-*\", "
	  "which matches none" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"outage\",\"error_rate_max\":0}"),
	  ": expect[0].phase: expected a phase name (all) or \"*\", got \"outage\"" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\"}"),
	  ": expect[0]: expected at least one bound (error_rate_max, answered_min" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"error_rate_max\":1.5}"),
	  ": expect[0].error_rate_max: expected a number from 0 to 1, got 1.5" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":-0.1}"),
	  ": expect[0].answered_min: expected a number from 0 to 1, got -0.10000000000000001" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"latency_p99_ms_max\":-1}"),
	  ": expect[0].latency_p99_ms_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"time_to_open_ms_max\":\"1s\"}"),
	  ": expect[0].time_to_open_ms_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"p99_ms\":1}"), ": expect[0].p99_ms: unknown key" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"silent_breaks_max\":-1}"),
	  ": expect[0].silent_breaks_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"stalls_max\":null}"),
	  ": expect[0].stalls_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"max_gap_ms_max\":-0.5}"),
	  ": expect[0].max_gap_ms_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"ttft_p95_ms_max\":\"1s\"}"),
	  ": expect[0].ttft_p95_ms_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"ttft_p99_ms_max\":1}"),
	  ": expect[0].ttft_p99_ms_max: unknown key" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"fallback_share_min\":0.5,"
		 "\"fallback_share_max\":0.2}"),
	  ": expect[0].fallback_share_min: expected at most fallback_share_max (0.2), got 0.5" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"opens_min\":3,\"opens_max\":2}"),
	  ": expect[0].opens_min: expected at most opens_max (2), got 3" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"opens_max\":-1}"),
	  ": expect[0].opens_max: expected a number from 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"time_to_primary_ms_min\":900,"
		 "\"time_to_primary_ms_max\":800}"),
	  ": expect[0].time_to_primary_ms_min: expected at most time_to_primary_ms_max (800), "
	  "got 900" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"error_rate_max\":0},"
		 "{\"setup\":\"d\",\"phase\":\"*\",\"error_rate_max\":0,\"error_rate_max\":1}"),
	  ": expect[1].error_rate_max: given twice" },
	/* filters and the bounds that go with them */
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"class\":\"bulk\",\"answered_min\":1}"),
	  ": expect[0].class: expected \"interactive\" or \"batch\", got \"bulk\"" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"class\":\"batch\"}"),
	  ": expect[0]: expected at least one bound" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_max\":1.5}"),
	  ": expect[0].answered_max: expected a number from 0 to 1, got 1.5" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":0.9,\"answered_max\":0.5}"),
	  ": expect[0].answered_min: expected at most answered_max (0.5), got 0.9" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"window_s\":5}"),
	  ": expect[0].window_answered_min: expected window_s and window_answered_min together" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"window_answered_min\":0.99}"),
	  ": expect[0].window_s: expected window_s and window_answered_min together" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"window_s\":0,\"window_answered_min\":1}"),
	  ": expect[0].window_s: expected a number above 0 and at most duration_s (60), got 0" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"window_s\":61,\"window_answered_min\":1}"),
	  ": expect[0].window_s: expected a number above 0 and at most duration_s (60), got 61" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"latency_p99_ratio_max\":0.5}"),
	  ": expect[0].relative_to: missing: latency_p99_ratio_max, cost_overhead_max and "
	  "timeout_paid_ratio_max compare" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"relative_to\":\"d\",\"answered_min\":1}"),
	  ": expect[0].relative_to: expected it only with latency_p99_ratio_max, "
	  "cost_overhead_max or timeout_paid_ratio_max" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"relative_to\":\"e\","
		 "\"cost_overhead_max\":0.1}"),
	  ": expect[0].relative_to: expected the name of a setup (d), got \"e\"" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"relative_to\":\"d\","
		 "\"cost_overhead_max\":-2}"),
	  ": expect[0].cost_overhead_max: expected a number from -1 to 1000000, got -2" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"extra_requests_max\":\"0.1\"}"),
	  ": expect[0].extra_requests_max: expected a number" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,\"when\":[1]}"),
	  ": expect[0].when: expected an object {PATH: value or [values]}" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,\"when\":{}}"),
	  ": expect[0].when: expected an object {PATH: value or [values]}" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,"
		 "\"when\":{\"load.nope\":1}}"),
	  ": expect[0].when.load.nope: expected the path of a value the scenario states: "
	  "load.nope: no such key" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,"
		 "\"when\":{\"load\":1}}"),
	  ": expect[0].when.load: expected the path of a number, string or boolean, got one of "
	  "an object" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,"
		 "\"when\":{\"setups.d.provider\":1}}"),
	  ": expect[0].when.setups.d.provider: expected a value of the kind the scenario has "
	  "there, got 1" },
	{ EXPECT("{\"setup\":\"d\",\"phase\":\"*\",\"answered_min\":1,"
		 "\"when\":{\"setups.d.provider\":[]}}"),
	  ": expect[0].when.setups.d.provider: expected at least one value" },
	/* prices */
	/* ci */
	{ "{" BASE ",\"ci\":0.2}", ": ci: expected an object {\"time_scale\": S, \"why\": \"…\"}, "
	  "got 0.2" },
	{ "{" BASE ",\"ci\":{\"why\":\"w\"}}", ": ci.time_scale: missing (required)" },
	{ "{" BASE ",\"ci\":{\"time_scale\":0.2}}", ": ci.why: missing (required)" },
	{ "{" BASE ",\"ci\":{\"time_scale\":0.2,\"why\":\"\"}}",
	  ": ci.why: expected a non-empty string" },
	{ "{" BASE ",\"ci\":{\"time_scale\":0,\"why\":\"w\"}}",
	  ": ci.time_scale: expected a number above 0 and at most 10, got 0" },
	{ "{" BASE ",\"ci\":{\"time_scale\":10.5,\"why\":\"w\"}}",
	  ": ci.time_scale: expected a number above 0 and at most 10, got 10.5" },
	{ "{" BASE ",\"ci\":{\"time_scale\":\"0.2\",\"why\":\"w\"}}",
	  ": ci.time_scale: expected a number above 0 and at most 10, got the string" },
	{ "{" BASE ",\"ci\":{\"time_scale\":0.2,\"why\":\"w\",\"scale\":1}}",
	  ": ci.scale: unknown key" },
	{ "{" BASE ",\"prices\":[1]}", ": prices: expected an object of providers' prices" },
	{ "{" BASE ",\"prices\":{\"c\":{\"input\":1}}}",
	  ": prices.c: expected the name of a provider (a, b), got \"c\"" },
	{ "{" BASE ",\"prices\":{\"a\":1}}", ": prices.a: expected an object {\"input\", \"output\"}" },
	{ "{" BASE ",\"prices\":{\"a\":{\"input\":1001}}}",
	  ": prices.a.input: expected a number from 0 to 1000, got 1001" },
	{ "{" BASE ",\"prices\":{\"a\":{\"output\":-1}}}",
	  ": prices.a.output: expected a number from 0 to 1000, got -1" },
	{ "{" BASE ",\"prices\":{\"a\":{\"in\":1}}}", ": prices.a.in: unknown key" },
	{ "{" BASE ",\"prices\":{\"a\":{},\"a\":{}}}", ": prices.a: given twice" },
	/* detection */
	{ "{" BASE "," PHASES2 ",\"detection\":1}",
	  ": detection: expected an object {\"fault_phase\": \"…\", \"recovery_phase\": \"…\"}, "
	  "got 1" },
	{ "{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"f\"}}",
	  ": detection.recovery_phase: missing (required)" },
	{ "{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"f\",\"recovery_phase\":\"r\","
	  "\"method\":\"x\"}}", ": detection.method: unknown key" },
	{ "{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"x\",\"recovery_phase\":\"r\"}}",
	  ": detection.fault_phase: expected one of the phases (f, r), got \"x\"" },
	{ "{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"f\",\"recovery_phase\":2}}",
	  ": detection.recovery_phase: expected a non-empty string, got 2" },
	{ "{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"r\",\"recovery_phase\":\"f\"}}",
	  ": detection.recovery_phase: expected a phase that starts at or after the fault phase "
	  "\"r\" ends, got \"f\"" },
};

Test(scenario, detection_names_its_phases, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" BASE "," PHASES2 "}", &sc), 0, "%s", err);
	cr_assert_not(sc.detection.set, "no detection block: no study");
	scenario_free(&sc);
	cr_assert_eq(load("{" BASE "," PHASES2 ",\"detection\":{\"fault_phase\":\"f\","
			  "\"recovery_phase\":\"r\"}}", &sc), 0, "%s", err);
	cr_assert(sc.detection.set);
	cr_assert_eq(sc.detection.fault_phase, 0);
	cr_assert_eq(sc.detection.recovery_phase, 1);
	scenario_free(&sc);
}

Test(scenario_bad, refused_naming_file_and_key, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct scenario sc;

		cr_assert_eq(load(bc->json, &sc), -EINVAL, "case %zu accepted: %s", i, bc->json);
		cr_assert(strncmp(err, file, strlen(file)) == 0, "case %zu names the file: %s", i,
			  err);
		cr_assert(strstr(err, bc->says), "case %zu: expected \"%s\" in \"%s\"", i, bc->says,
			  err);
		cr_assert_null(sc.name, "nothing kept after a refusal");
		cr_assert_null(sc.providers);
		cr_assert_null(sc.setups);
		cr_assert_eq(sc.nsetups, 0);
	}
}

/*
 * A gateway setup's config is checked as bin/gateway would check it at the
 * run's start: the message names the setup by index and name, and the key
 * under config; {upstream.NAME} stands for a loopback URL meanwhile.
 */
Test(scenario_bad, gateway_config_checked_by_the_gateways_loader, .timeout = 10)
{
	static const char good[] = "\"half_open_probes\":2";
	char json[sizeof(full) + 16];
	const char *at = strstr(full, good);
	struct scenario sc;

	cr_assert_not_null(at);
	snprintf(json, sizeof(json), "%.*s\"half_open_probs\":2%s", (int)(at - full), full,
		 at + strlen(good));
	cr_assert_eq(load(json, &sc), -EINVAL);
	cr_assert(strncmp(err, file, strlen(file)) == 0, "%s", err);
	cr_assert(strstr(err, ": setups[2] \"breaker-on\": config.breaker.half_open_probs: "
			 "unknown key"), "%s", err);
	cr_assert_null(sc.setups);
	/* Scaled values are the ones checked, and the message says so. */
	cr_assert_eq(load_scaled("{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":"
				 "\"{upstream.a}\",\"timeout_ms\":5}}," GW_MODELS "}") "}", 0.1, &sc),
		     -EINVAL);
	cr_assert(strstr(err, ": setups[0] \"g\": config.providers.p.timeout_ms: expected a number "
			 "from 1 to 3600000, got 0.5"), "%s", err);
	cr_assert(strstr(err, "(times as scaled by the time scale 0.1)"), "%s", err);
	cr_assert_eq(load_scaled("{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":"
				 "\"{upstream.a}\",\"timeout_ms\":5}}," GW_MODELS "}") "}", 1, &sc),
		     0, "%s", err);
	scenario_free(&sc);
}

Test(scenario_bad, file_problems, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(scenario_load("/nonexistent/fl-scn.json", 1, &sc, err), -EINVAL);
	cr_assert(strstr(err, "/nonexistent/fl-scn.json: cannot open"), "%s", err);
	cr_assert_eq(load("{\"duration_s\":", &sc), -EINVAL);
	cr_assert(strstr(err, file) && strstr(err, "invalid JSON"), "%s", err);
	cr_assert_eq(load("{" BASE "} {}", &sc), -EINVAL, "text after the value");
	cr_assert(strstr(err, "invalid JSON"), "%s", err);
	cr_assert_eq(load_named("{" BASE "}", "bad name.json", 1, &sc), -EINVAL);
	cr_assert(strstr(err, ": name: missing, and the file's base name \"bad name\" is not a "
			 "name of 1-64"), "%s", err);
}

Test(scenario_bad, time_scale_bounds, .timeout = 10)
{
	static const double bad[] = { 0, -1, 100.5, NAN, INFINITY };
	struct scenario sc;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load_scaled("{" BASE "}", bad[i], &sc), -EINVAL, "scale %g", bad[i]);
		cr_assert(strstr(err, ": time scale: expected a number above 0 and at most 100"),
			  "%s", err);
	}
	cr_assert_eq(load_scaled("{" BASE "}", 100, &sc), 0, "%s", err);
	scenario_free(&sc);
	/* The quoted values are the scaled ones, and the message says so. */
	cr_assert_eq(load_scaled("{" DUR "," PROV ",\"load\":{\"rate\":1,\"timeout_ms\":100},"
				 SETUP "}", 0.001, &sc), -EINVAL);
	cr_assert(strstr(err, ": load.timeout_ms: expected a number from 1 to 3600000, got 0.1"),
		  "%s", err);
	cr_assert(strstr(err, "(times as scaled by the time scale 0.001)"), "%s", err);
}

/* ---- time scaling ---- */

static double num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	cr_assert(cJSON_IsNumber(v), "%s is a number", key);
	return v->valuedouble;
}

Test(scenario_scale, one_rule_over_the_tree, .timeout = 10)
{
	static const char json[] =
		"{\"duration_s\":60,\"seed\":3,\"x_ms\":[10,20,{\"a_s\":1,\"n\":5}],"
		" \"load\":{\"rate\":10,\"concurrency\":4,\"timeout_ms\":1000,\"stream\":0.5,"
		"          \"prompt_tokens\":16,\"max_tokens\":32,"
		"          \"mix\":{\"streams\":[{\"rate\":2,\"share\":3}]}},"
		" \"p\":{\"ttft_ms\":200,\"output_tokens\":16,\"faults\":[{\"from_s\":15,\"to_s\":45,"
		"       \"probability\":0.5,\"retry_after_s\":2,\"status\":503,\"rpm\":60,\"tpm\":600,"
		"       \"after_tokens\":3,\"after_bytes\":100}]},"
		" \"g\":{\"request_deadline_ms\":5000,\"max_body_bytes\":4096,"
		"       \"breaker\":{\"cooldown_ms\":5000,\"consecutive_failures\":5,"
		"                  \"half_open_probes\":3,\"cooldown_multiplier\":2},"
		"       \"models\":{\"c\":{\"max_attempts\":3}},"
		"       \"budget\":{\"ratio\":0.2,\"min_per_second\":1,\"burst\":10}},"
		" \"e\":{\"latency_p50_ms_max\":230,\"time_to_open_ms_max\":2000,\"x_s_min\":4,"
		"       \"error_rate_max\":0.5,\"fallback_share_min\":0.25,\"retries\":2,"
		"       \"silent_breaks_max\":3,\"stalls_max\":4,\"max_gap_ms_max\":1100,"
		"       \"ttft_p95_ms_max\":400,\"stall_timeout_ms\":5000,\"window_s\":5,"
		"       \"window_answered_min\":0.99,\"answered_max\":0.5,"
		"       \"latency_p99_ratio_max\":0.333,\"cost_overhead_max\":0.1,"
		"       \"extra_requests_max\":0.15},"
		" \"odd\":{\"ms\":1,\"s\":1,\"items\":1,\"x_ms_maximum\":1,\"rates\":1,"
		"         \"per_second\":1,\"x_per_seconds\":1,\"x_per_second\":1,"
		"         \"timeout_ms\":\"100\",\"nested_ms\":{\"v\":7}}}";
	cJSON *root = cJSON_Parse(json);
	const cJSON *load;
	const cJSON *f;
	const cJSON *x;
	const cJSON *o;

	cr_assert_not_null(root);
	cr_assert_eq(scenario_scale(root, 0.1), 0);
	cr_assert_float_eq(num(root, "duration_s"), 6, 1e-9);
	cr_assert_float_eq(num(root, "seed"), 3, 0);
	x = cJSON_GetObjectItem(root, "x_ms");
	cr_assert_float_eq(cJSON_GetArrayItem(x, 0)->valuedouble, 1, 1e-9, "array members: its key");
	cr_assert_float_eq(cJSON_GetArrayItem(x, 1)->valuedouble, 2, 1e-9);
	cr_assert_float_eq(num(cJSON_GetArrayItem(x, 2), "a_s"), 0.1, 1e-9);
	cr_assert_float_eq(num(cJSON_GetArrayItem(x, 2), "n"), 5, 0, "objects' members: their own");
	load = cJSON_GetObjectItem(root, "load");
	cr_assert_float_eq(num(load, "rate"), 100, 1e-9, "rates are divided");
	cr_assert_float_eq(num(load, "concurrency"), 4, 0);
	cr_assert_float_eq(num(load, "timeout_ms"), 100, 1e-9);
	cr_assert_float_eq(num(load, "stream"), 0.5, 0);
	cr_assert_float_eq(num(load, "prompt_tokens"), 16, 0);
	cr_assert_float_eq(num(load, "max_tokens"), 32, 0);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(load, "mix"), "streams"), 0);
	cr_assert_float_eq(num(f, "rate"), 20, 1e-9);
	cr_assert_float_eq(num(f, "share"), 3, 0);
	o = cJSON_GetObjectItem(root, "p");
	cr_assert_float_eq(num(o, "ttft_ms"), 20, 1e-9);
	cr_assert_float_eq(num(o, "output_tokens"), 16, 0);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "faults"), 0);
	cr_assert_float_eq(num(f, "from_s"), 1.5, 1e-9);
	cr_assert_float_eq(num(f, "to_s"), 4.5, 1e-9);
	cr_assert_float_eq(num(f, "retry_after_s"), 0.2, 1e-9);
	cr_assert_float_eq(num(f, "probability"), 0.5, 0);
	cr_assert_float_eq(num(f, "status"), 503, 0);
	cr_assert_float_eq(num(f, "rpm"), 600, 1e-9);
	cr_assert_float_eq(num(f, "tpm"), 6000, 1e-9);
	cr_assert_float_eq(num(f, "after_tokens"), 3, 0);
	cr_assert_float_eq(num(f, "after_bytes"), 100, 0);
	o = cJSON_GetObjectItem(root, "g");
	cr_assert_float_eq(num(o, "request_deadline_ms"), 500, 1e-9);
	cr_assert_float_eq(num(o, "max_body_bytes"), 4096, 0);
	f = cJSON_GetObjectItem(o, "breaker");
	cr_assert_float_eq(num(f, "cooldown_ms"), 500, 1e-9);
	cr_assert_float_eq(num(f, "consecutive_failures"), 5, 0);
	cr_assert_float_eq(num(f, "half_open_probes"), 3, 0);
	cr_assert_float_eq(num(f, "cooldown_multiplier"), 2, 0);
	cr_assert_float_eq(num(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "models"), "c"),
			       "max_attempts"), 3, 0);
	f = cJSON_GetObjectItem(o, "budget");
	cr_assert_float_eq(num(f, "min_per_second"), 10, 1e-9, "…_per_second is a rate: divided");
	cr_assert_float_eq(num(f, "ratio"), 0.2, 0);
	cr_assert_float_eq(num(f, "burst"), 10, 0);
	o = cJSON_GetObjectItem(root, "e");
	cr_assert_float_eq(num(o, "latency_p50_ms_max"), 23, 1e-9, "…_ms_max scales");
	cr_assert_float_eq(num(o, "time_to_open_ms_max"), 200, 1e-9);
	cr_assert_float_eq(num(o, "x_s_min"), 0.4, 1e-9, "…_s_min scales");
	cr_assert_float_eq(num(o, "error_rate_max"), 0.5, 0);
	cr_assert_float_eq(num(o, "fallback_share_min"), 0.25, 0);
	cr_assert_float_eq(num(o, "retries"), 2, 0);
	cr_assert_float_eq(num(o, "silent_breaks_max"), 3, 0, "a count bound stays");
	cr_assert_float_eq(num(o, "stalls_max"), 4, 0);
	cr_assert_float_eq(num(o, "max_gap_ms_max"), 110, 1e-9, "…_ms_max scales");
	cr_assert_float_eq(num(o, "ttft_p95_ms_max"), 40, 1e-9);
	cr_assert_float_eq(num(o, "stall_timeout_ms"), 500, 1e-9);
	cr_assert_float_eq(num(o, "window_s"), 0.5, 1e-9, "a window is a duration");
	cr_assert_float_eq(num(o, "window_answered_min"), 0.99, 0, "shares and ratios stay");
	cr_assert_float_eq(num(o, "answered_max"), 0.5, 0);
	cr_assert_float_eq(num(o, "latency_p99_ratio_max"), 0.333, 0);
	cr_assert_float_eq(num(o, "cost_overhead_max"), 0.1, 0);
	cr_assert_float_eq(num(o, "extra_requests_max"), 0.15, 0);
	o = cJSON_GetObjectItem(root, "odd");
	cr_assert_float_eq(num(o, "ms"), 1, 0, "no underscore: not a duration");
	cr_assert_float_eq(num(o, "s"), 1, 0);
	cr_assert_float_eq(num(o, "items"), 1, 0);
	cr_assert_float_eq(num(o, "x_ms_maximum"), 1, 0);
	cr_assert_float_eq(num(o, "rates"), 1, 0);
	cr_assert_float_eq(num(o, "per_second"), 1, 0, "no underscore: not a rate");
	cr_assert_float_eq(num(o, "x_per_second"), 10, 1e-9, "ends in _per_second");
	cr_assert_float_eq(num(o, "x_per_seconds"), 1, 0);
	cr_assert_str_eq(cJSON_GetObjectItem(o, "timeout_ms")->valuestring, "100", "strings stay");
	cr_assert_float_eq(num(cJSON_GetObjectItem(o, "nested_ms"), "v"), 7, 0,
			   "an object's key does not reach its members");
	cJSON_Delete(root);
}

Test(scenario_scale, results_stay_doubles_and_bad_factors_change_nothing, .timeout = 10)
{
	cJSON *root = cJSON_Parse("{\"t_ms\":3,\"rate\":3}");
	static const double bad[] = { 0, -2, NAN, INFINITY };
	size_t i;

	cr_assert_not_null(root);
	cr_assert_eq(scenario_scale(root, 0.5), 0);
	cr_assert_float_eq(num(root, "t_ms"), 1.5, 0, "not rounded to a whole number");
	cr_assert_float_eq(num(root, "rate"), 6, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(scenario_scale(root, bad[i]), -EINVAL);
		cr_assert_float_eq(num(root, "t_ms"), 1.5, 0);
	}
	cr_assert_eq(scenario_scale(root, 4), 0, "above 1 slows down");
	cr_assert_float_eq(num(root, "t_ms"), 6, 0);
	cr_assert_float_eq(num(root, "rate"), 1.5, 0);
	cJSON_Delete(root);
	cr_assert_eq(scenario_scale(NULL, 2), 0);
}

Test(scenario_scale, load_scales_every_part, .timeout = 10)
{
	struct scenario sc;
	const cJSON *cfg;
	const cJSON *f;

	cr_assert_eq(load_scaled(full, 0.1, &sc), 0, "%s", err);
	cr_assert_float_eq(sc.scale, 0.1, 0);
	cr_assert_float_eq(sc.duration_ms, 6000, 1e-6);
	cr_assert_eq(sc.seed, 7);
	cr_assert_float_eq(sc.actions[0].at_ms, 1500, 1e-6);
	cr_assert_float_eq(sc.actions[1].at_ms, 4500, 1e-6);
	cr_assert_float_eq(sc.phases[1].from_ms, 1500, 1e-6);
	cr_assert_float_eq(sc.phases[1].to_ms, 4500, 1e-6);
	cr_assert_float_eq(sc.phases[2].to_ms, sc.duration_ms, 0, "edges meet exactly");
	cr_assert_float_eq(sc.phases[0].to_ms, sc.phases[1].from_ms, 0);
	cr_assert_float_eq(sc.load.rate, 100, 1e-9, "the same requests per phase");
	cr_assert_float_eq(sc.load.timeout_ms, 3000, 1e-6);
	cr_assert_float_eq(sc.load.stall_timeout_ms, 500, 1e-6);
	cr_assert_eq(sc.load.max_tokens, 8);
	cr_assert_float_eq(sc.setups[1].retry_backoff_ms, 25, 1e-9);
	cr_assert_eq(sc.setups[1].retries, 3);
	cfg = sc.setups[2].config;
	cr_assert_float_eq(num(cfg, "request_deadline_ms"), 500, 1e-9);
	cr_assert_float_eq(num(cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "providers"), "primary"),
			       "timeout_ms"), 100, 1e-9);
	cr_assert_float_eq(num(cJSON_GetObjectItem(cfg, "breaker"), "cooldown_ms"), 200, 1e-9);
	cr_assert_float_eq(num(cJSON_GetObjectItem(cfg, "breaker"), "half_open_probes"), 2, 0);
	cr_assert_float_eq(sc.expects[0].latency_p50_ms_max, 23, 1e-9);
	cr_assert_float_eq(sc.expects[0].time_to_open_ms_max, 200, 1e-9);
	cr_assert_float_eq(sc.expects[1].time_to_primary_ms_max, 300, 1e-9);
	cr_assert_float_eq(sc.expects[1].answered_min, 0.5, 0);
	cr_assert_float_eq(sc.expects[1].fallback_share_max, 0.9, 0);
	cr_assert_float_eq(sc.expects[2].max_gap_ms_max, 110, 1e-9);
	cr_assert_float_eq(sc.expects[2].ttft_p95_ms_max, 40, 1e-9);
	cr_assert_float_eq(sc.expects[2].silent_breaks_max, 0, 0, "counts do not scale");
	cr_assert_float_eq(sc.expects[2].stalls_max, 2, 0);
	f = cJSON_GetArrayItem(sc.providers, 0);
	cr_assert_float_eq(num(f, "ttft_ms"), 20, 1e-9);
	cr_assert_float_eq(num(f, "output_tokens"), 16, 0);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "faults"), 1);
	cr_assert_float_eq(num(f, "from_s"), 5, 1e-9);
	cr_assert_float_eq(num(f, "rpm"), 6000, 1e-9);
	scenario_free(&sc);
}

/* ---- the configs of a run ---- */

Test(scenario_run, mock_config, .timeout = 10)
{
	static const char json[] =
		"{" DUR ",\"providers\":[{\"name\":\"a\",\"ttft_ms\":100,\"faults\":[{\"kind\":\"down\","
		"\"from_s\":1,\"to_s\":2}]},{\"name\":\"b\",\"listen\":\"127.0.0.1:9005\"},"
		"{\"name\":\"c\",\"listen\":\"[::1]:0\"}]," LOAD "," SETUP "}";
	static const int ports[] = { 4001, 0, 4003 };
	struct mock_config mc;
	struct scenario sc;
	cJSON *root;
	const cJSON *arr;
	char *s;

	cr_assert_eq(load_scaled(json, 0.5, &sc), 0, "%s", err);
	s = scenario_mock_config(&sc, NULL);
	cr_assert_not_null(s);
	root = cJSON_Parse(s);
	cr_assert_not_null(root, "%s", s);
	arr = cJSON_GetObjectItem(root, "providers");
	cr_assert_eq(cJSON_GetArraySize(arr), 3);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "listen")->valuestring,
			 "127.0.0.1:0");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "listen")->valuestring,
			 "127.0.0.1:9005", "as given");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2), "listen")->valuestring,
			 "[::1]:0");
	cr_assert_eq(mock_config_from_json(root, "mock.json", &mc, err), 0, "mockprov takes it: %s",
		     err);
	cr_assert_eq(mc.nproviders, 3);
	cr_assert_float_eq(mc.providers[0].timing.ttft_ms, 50, 1e-9, "scaled");
	cr_assert_float_eq(mc.providers[0].faults[0].from_ms, 500, 1e-9);
	mock_config_free(&mc);
	cJSON_Delete(root);
	free(s);

	s = scenario_mock_config(&sc, ports);
	cr_assert_not_null(s);
	root = cJSON_Parse(s);
	arr = cJSON_GetObjectItem(root, "providers");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "listen")->valuestring,
			 "127.0.0.1:4001", "the port of the first start");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "listen")->valuestring,
			 "127.0.0.1:9005", "0: unchanged");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2), "listen")->valuestring,
			 "[::1]:4003", "its host kept");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetArrayItem(arr, 0)), 4, "name, ttft_ms, faults, listen");
	cJSON_Delete(root);
	free(s);
	cr_assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(sc.providers, 0), "listen"),
		       "the scenario's own copy is untouched");
	scenario_free(&sc);
}

/*
 * A scenario's "groups" are mockprov's: checked by its loader (errors
 * naming groups.NAME…), scaled with the rest, and handed to mockprov with
 * the providers.
 */
#define GROUPED "\"providers\":[{\"name\":\"a\",\"group\":\"eu\"},{\"name\":\"b\",\"group\":\"eu\"}," \
	"{\"name\":\"c\"}],\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"down\",\"from_s\":10," \
	"\"to_s\":20}]}}"

Test(scenario_run, groups_go_to_mockprov_scaled, .timeout = 10)
{
	struct mock_config mc;
	struct scenario sc;
	cJSON *root;
	char *s;

	cr_assert_eq(load_scaled("{" DUR "," GROUPED "," LOAD "," SETUP "}", 0.5, &sc), 0, "%s",
		     err);
	cr_assert_not_null(sc.groups);
	s = scenario_mock_config(&sc, NULL);
	cr_assert_not_null(s);
	root = cJSON_Parse(s);
	cr_assert_not_null(cJSON_GetObjectItem(root, "groups"), "%s", s);
	cr_assert_eq(mock_config_from_json(root, "mock.json", &mc, err), 0, "%s", err);
	cr_assert_eq(mc.providers[0].nfaults, 1);
	cr_assert_eq(mc.providers[1].nfaults, 1);
	cr_assert_eq(mc.providers[2].nfaults, 0);
	cr_assert_float_eq(mc.providers[1].faults[0].from_ms, 5000, 1e-9, "scaled");
	cr_assert_float_eq(mc.providers[1].faults[0].to_ms, 10000, 1e-9);
	mock_config_free(&mc);
	cJSON_Delete(root);
	free(s);
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), 0, "chaos sim takes groups: %s", err);
	scenario_free(&sc);
	cr_assert_eq(load("{" BASE "}", &sc), 0, "%s", err);
	cr_assert_null(sc.groups);
	s = scenario_mock_config(&sc, NULL);
	cr_assert_null(strstr(s, "groups"), "none: %s", s);
	free(s);
	scenario_free(&sc);
}

Test(scenario_run, bad_groups_name_the_key, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" DUR "," GROUPED ",\"groups\":{\"us\":{\"faults\":[]}}," LOAD ","
			  SETUP "}", &sc), -EINVAL);
	cr_assert(strstr(err, "scn.json: groups: given twice"), "%s", err);
	cr_assert_eq(load("{" DUR "," PROV ",\"groups\":{\"us\":{\"faults\":[]}}," LOAD ","
			  SETUP "}", &sc), -EINVAL);
	cr_assert(strstr(err, "scn.json: groups.us: no provider is in this group"), "%s", err);
	cr_assert_eq(load("{" DUR "," PROV ",\"groups\":{\"us\":{\"faults\":[{\"kind\":\"down\","
			  "\"from_s\":5}]}}," LOAD "," SETUP "}", &sc), -EINVAL);
	cr_assert(strstr(err, "scn.json: groups.us.faults[0].to_s: missing (required)"), "%s",
		  err);
	cr_assert_eq(load("{" DUR "," PROV ",\"groups\":7," LOAD "," SETUP "}", &sc), -EINVAL);
	cr_assert(strstr(err, "scn.json: groups: expected an object of groups"), "%s", err);
}

Test(scenario_run, sim_refuses_bad_content, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" DUR ",\"providers\":[{\"name\":\"a\",\"faults\":[{\"kind\":\"hang\","
			  "\"from_s\":1,\"to_s\":2},{\"kind\":\"bad_content\",\"from_s\":1,\"to_s\":2}]},"
			  "{\"name\":\"b\"}]," LOAD "," SETUP "}", &sc), 0, "%s", err);
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), -EINVAL);
	cr_assert(strstr(err, "scn.json: providers[0].faults[1].kind: chaos sim does not simulate "
			 "answers' content yet"), "%s", err);
	scenario_free(&sc);
	cr_assert_eq(load("{" DUR "," GROUPED ",\"groups\":{\"eu\":{\"faults\":[{\"kind\":"
			  "\"bad_content\",\"violation\":\"wrong_type\",\"from_s\":1,\"to_s\":2}]}}," LOAD
			  "," SETUP "}", &sc), -EINVAL, "groups given twice");
	cr_assert_eq(load("{" DUR ",\"providers\":[{\"name\":\"a\",\"group\":\"eu\"},"
			  "{\"name\":\"b\"}],\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"bad_content\","
			  "\"violation\":\"wrong_type\",\"from_s\":1,\"to_s\":2}]}}," LOAD "," SETUP "}",
			  &sc), 0, "%s", err);
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), -EINVAL);
	cr_assert(strstr(err, "scn.json: groups.eu.faults[0].kind: chaos sim does not simulate"),
		  "%s", err);
	scenario_free(&sc);
}

static const char *const urls[] = { "http://127.0.0.1:40001/v1", "http://127.0.0.1:40002/v1" };
static const char *const hostports[] = { "127.0.0.1:40001", "127.0.0.1:40002" };
static const struct sc_expand_vals vals = { 45001, urls, hostports, "/r/run-1.tmp" };

Test(scenario_run, gateway_config, .timeout = 10)
{
	struct scenario sc;
	cJSON *root;
	const cJSON *prov;
	char *s;

	cr_assert_eq(load(full, &sc), 0, "%s", err);
	s = scenario_gateway_config(&sc, &sc.setups[2], "127.0.0.1:45000", urls, NULL, NULL,
				    err);
	cr_assert_not_null(s, "%s", err);
	root = cJSON_Parse(s);
	cr_assert_not_null(root, "%s", s);
	cr_assert_str_eq(cJSON_GetObjectItem(root, "listen")->valuestring, "127.0.0.1:45000");
	prov = cJSON_GetObjectItem(root, "providers");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(prov, "primary"),
					     "base_url")->valuestring, urls[0]);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(prov, "secondary"),
					     "base_url")->valuestring, urls[1]);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(root, "models"), "chat"), "targets"), 1),
		"model")->valuestring, "mock-small", "other strings unchanged");
	cr_assert_float_eq(num(root, "request_deadline_ms"), 5000, 0);
	cJSON_Delete(root);
	free(s);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		sc.setups[2].config, "providers"), "primary"), "base_url")->valuestring,
		"{upstream.primary}", "the setup keeps its template");

	err[0] = '\0';
	cr_assert_null(scenario_gateway_config(&sc, &sc.setups[0], "127.0.0.1:1", urls, NULL, NULL,
					       err));
	cr_assert(strstr(err, ": setups[0].config: expected a gateway setup"), "%s", err);
	scenario_free(&sc);
}

Test(scenario_run, gateway_config_many_placeholders, .timeout = 10)
{
	struct scenario sc;
	cJSON *root;
	char *s;

	cr_assert_eq(load("{" NOSETUP "," GW("{" GW_PROVIDERS "," GW_MODELS "}") "}", &sc), 0,
		     "%s", err);
	/*
	 * Strings in every corner of the tree, "note" among them: not a config
	 * the gateway (and so scenario_load) would take, so it is set by hand.
	 */
	cJSON_Delete(sc.setups[0].config);
	sc.setups[0].config = cJSON_Parse("{\"providers\":{\"p\":{\"base_url\":\"{upstream.b}\","
			  "\"api_key_env\":\"K_{X}\"}},\"note\":[\"{upstream.a} and {upstream.b}!\","
			  "\"{\\\"a\\\":1}\",{\"deep\":\"<{upstream.a}>\"}]," GW_MODELS "}");
	cr_assert_not_null(sc.setups[0].config);
	s = scenario_gateway_config(&sc, &sc.setups[0], "127.0.0.1:9", urls, NULL, NULL, err);
	cr_assert_not_null(s, "%s", err);
	root = cJSON_Parse(s);
	cr_assert_not_null(root);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root,
			 "providers"), "p"), "base_url")->valuestring, urls[1]);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root,
			 "providers"), "p"), "api_key_env")->valuestring, "K_{X}",
			 "not lower case: not a placeholder, kept");
	cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "note"), 0)->valuestring,
			 "http://127.0.0.1:40001/v1 and http://127.0.0.1:40002/v1!");
	cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "note"), 1)->valuestring,
			 "{\"a\":1}");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "note"),
			 2), "deep")->valuestring, "<http://127.0.0.1:40001/v1>");
	cJSON_Delete(root);
	free(s);
	scenario_free(&sc);
}

Test(scenario_run, expand_templates, .timeout = 10)
{
	static const struct {
		const char *tmpl;
		const char *want;	/* NULL: refused */
	} cases[] = {
		{ "{port}", "45001" },
		{ "--listen={listen}", "--listen=127.0.0.1:45001" },
		{ "http://{listen}/health", "http://127.0.0.1:45001/health" },
		{ "{upstream.primary},{upstream.secondary}",
		  "http://127.0.0.1:40001/v1,http://127.0.0.1:40002/v1" },
		{ "plain", "plain" },
		{ "", "" },
		{ "{\"json\":{}}", "{\"json\":{}}" },
		{ "{ port }", "{ port }" },
		{ "{Port}", "{Port}" },
		{ "{}", "{}" },
		{ "trailing {", "trailing {" },
		{ "{{port}}", "{45001}" },
		{ "echo ${dir} ${lisen} $HOME", "echo ${dir} ${lisen} $HOME" },
		{ "${port}{port}", "${port}45001" },
		{ "{upstream.nope}", NULL },
		{ "{upstream.primary", NULL },
		{ "{lisen}", NULL },
		{ "server p {hostport.secondary} check", "server p 127.0.0.1:40002 check" },
		{ "{hostport.nope}", NULL },
		{ "{hostport.primary", NULL },
		{ "-f {dir}/haproxy.cfg", "-f /r/run-1.tmp/haproxy.cfg" },
		{ "timeout {ms:1000}ms", "timeout 1000ms" },
		{ "{ms:0}", "0" },
		{ "{ms:0.4}", "1" },
		{ "{ms:2.5}", "3" },
		{ "{ms:1000000000}", "1000000000" },
		{ "{ms:}", NULL },
		{ "{ms:-1}", NULL },
		{ "{ms:1e3}", NULL },
		{ "{ms:1.}", NULL },
		{ "{ms:.5}", NULL },
		{ "{ms:10 }", NULL },
		{ "{ms:1000000001}", NULL },
		{ "{ms:5", NULL },
		{ "{ms}", NULL },
	};
	struct scenario sc;
	size_t i;

	cr_assert_eq(load(full, &sc), 0, "%s", err);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s;

		errno = 0;
		s = scenario_expand(&sc, cases[i].tmpl, &vals);
		if (cases[i].want) {
			cr_assert_not_null(s, "%s", cases[i].tmpl);
			cr_assert_str_eq(s, cases[i].want, "%s", cases[i].tmpl);
		} else {
			cr_assert_null(s, "%s gave %s", cases[i].tmpl, s);
			cr_assert_eq(errno, EINVAL);
		}
		free(s);
	}
	errno = 0;
	{
		const struct sc_expand_vals none = { 1, NULL, NULL, NULL };

		cr_assert_null(scenario_expand(&sc, "{upstream.primary}", &none), "no URLs given");
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_null(scenario_expand(&sc, "{hostport.primary}", &none), "no addresses");
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_null(scenario_expand(&sc, "{dir}", &none), "no folder given");
		cr_assert_eq(errno, EINVAL);
	}
	/* The external setup's own templates, as the runner will expand them. */
	for (i = 0; i < sc.setups[3].ncommand; i++) {
		char *s = scenario_expand(&sc, sc.setups[3].command[i], &vals);

		cr_assert_not_null(s);
		if (i == 2)
			cr_assert_str_eq(s, "45001");
		if (i == 4)
			cr_assert_str_eq(s, urls[0]);
		free(s);
	}
	scenario_free(&sc);
}

/* ---- headers, files, ready_ms and --add-setup files ---- */

/*
 * An external setup with a config file, headers and ready_ms; a direct
 * setup with a header of its own; a mix whose stream sets a header the
 * direct setup sets too.
 */
static const char ext_full[] =
	"{" DUR "," PROV ","
	" \"load\":{\"rate\":10,\"mix\":{\"streams\":[{\"name\":\"s\",\"share\":1,"
	"  \"headers\":{\"x-team\":\"data\",\"Authorization\":\"Bearer mix\"}}]}},"
	" \"setups\":["
	"  {\"name\":\"hap\",\"kind\":\"external\","
	"   \"command\":[\"haproxy\",\"-f\",\"{dir}/haproxy.cfg\",\"-db\"],"
	"   \"ready_url\":\"http://{listen}/health\",\"target\":\"http://{listen}/v1\","
	"   \"ready_ms\":8000,"
	"   \"headers\":{\"x-timeout\":\"{ms:1000}\",\"x-up\":\"{hostport.b}\"},"
	"   \"files\":{\"haproxy.cfg\":\"listen l\\n  bind {listen}\\n  timeout server {ms:1000}\\n"
	"  server a {hostport.a}\\n\",\"notes.txt\":\"{\\\"a\\\": 1}\"}},"
	"  {\"name\":\"plain\",\"kind\":\"external\",\"command\":[\"gw\"],"
	"   \"ready_url\":\"http://{listen}/\",\"target\":\"http://{listen}/v1\"},"
	"  {\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	"   \"headers\":{\"authorization\":\"Bearer {upstream.a}\"}}]}";

Test(scenario_run, headers_files_and_ready_ms, .timeout = 10)
{
	struct scenario sc;
	const struct sc_setup *hap;
	char *s;
	cJSON *mix;
	const cJSON *h;
	bool oom;

	cr_assert_eq(load_scaled(ext_full, 0.1, &sc), 0, "%s", err);
	hap = &sc.setups[0];
	cr_assert_float_eq(hap->ready_ms, 8000, 0, "ready_ms is not scaled: %g", hap->ready_ms);
	cr_assert_float_eq(sc.setups[1].ready_ms, SC_READY_MS_DEFAULT, 0);
	cr_assert_eq(hap->nfiles, 2);
	cr_assert_str_eq(hap->file_names[0], "haproxy.cfg");
	cr_assert_str_eq(hap->file_names[1], "notes.txt");
	cr_assert_eq(hap->nheaders, 2);
	cr_assert_str_eq(hap->header_names[0], "x-timeout");
	cr_assert_eq(sc.setups[2].nheaders, 1, "any kind takes headers");

	/* {ms:N} shrinks with the timeline; the other placeholders are the run's. */
	s = scenario_expand(&sc, hap->file_texts[0], &vals);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, "listen l\n  bind 127.0.0.1:45001\n  timeout server 100\n"
			 "  server a 127.0.0.1:40001\n");
	free(s);
	s = scenario_expand(&sc, hap->file_texts[1], &vals);
	cr_assert_str_eq(s, "{\"a\": 1}", "JSON braces are text");
	free(s);
	s = scenario_expand(&sc, "{ms:4}", &vals);
	cr_assert_str_eq(s, "1", "0.4 ms rounds up to 1: %s", s);
	free(s);
	s = scenario_expand(&sc, hap->command[2], &vals);
	cr_assert_str_eq(s, "/r/run-1.tmp/haproxy.cfg");
	free(s);
	s = scenario_expand(&sc, hap->header_values[1], &vals);
	cr_assert_str_eq(s, "127.0.0.1:40002");
	free(s);

	/* The setup's header wins over the mix stream's (any case); the others stay. */
	mix = scenario_loadgen_mix(&sc, &sc.setups[2], &oom);
	cr_assert_not_null(mix);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(mix, "streams"), 0),
				"headers");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(h, "Authorization"));
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(h, "x-team")->valuestring, "data");
	cJSON_Delete(mix);
	mix = scenario_loadgen_mix(&sc, &sc.setups[1], &oom);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(mix, "streams"), 0),
				"headers");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(h, "Authorization")->valuestring,
			 "Bearer mix", "a setup without the header keeps the mix's");
	cJSON_Delete(mix);
	scenario_free(&sc);
}

/* Writes text to a new file in dir (made by the caller); its path into out. */
static void put_file(const char *d, const char *name, const char *text, char *out, size_t len)
{
	FILE *fp;

	snprintf(out, len, "%s/%s", d, name);
	fp = fopen(out, "w");
	cr_assert_not_null(fp);
	cr_assert(fputs(text, fp) >= 0);
	cr_assert_eq(fclose(fp), 0);
}

Test(scenario_run, add_setups_from_a_file, .timeout = 10)
{
	static const char gw[] =
		"[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		"\"providers\":{\"p\":{\"base_url\":\"{upstream.a}\",\"timeout_ms\":1000}},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}},"
		" {\"name\":\"ext\",\"kind\":\"external\",\"command\":[\"x\",\"{ms:500}\"],"
		"  \"ready_url\":\"http://{listen}/\",\"target\":\"http://{listen}/v1\"}]";
	static const struct {
		const char *text;
		const char *says;
	} bad[] = {
		{ "{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"b\"}",
		  "add.json: setups[0].name: expected a name no other setup has, got \"d\" (also "
		  "setups[0] of " },
		{ "[{\"name\":\"e\",\"kind\":\"direct\",\"provider\":\"b\"},"
		  "{\"name\":\"e\",\"kind\":\"direct\",\"provider\":\"b\"}]",
		  "add.json: setups[1].name: expected a name no other setup has, got \"e\" (also "
		  "setups[0])" },
		{ "{\"name\":\"gw\",\"kind\":\"direct\",\"provider\":\"b\"}",
		  "add.json: setups[0].name: expected a name no other setup has, got \"gw\" (also "
		  "setups[0] of an earlier --add-setup file)" },
		{ "[{\"name\":\"e\",\"kind\":\"direct\",\"provider\":\"b\"},"
		  "{\"name\":\"f\",\"kind\":\"direct\",\"provider\":\"b\","
		  "\"headers\":{\"x-request-id\":\"1\"}}]",
		  "add.json: setups[1].headers.x-request-id: expected a header loadgen does not set" },
		{ "{\"name\":\"e\",\"kind\":\"direct\",\"provider\":\"zz\"}",
		  "add.json: setups[0].provider: " },
		{ "[]", "add.json: (top level): expected a setup object or a non-empty array of "
		  "setups, got an array" },
		{ "\"x\"", "add.json: (top level): expected a setup object or a non-empty array" },
		{ "{\"name\":", "add.json" },
	};
	char d[64];
	char scen[128];
	char add[128];
	struct scenario sc;
	const cJSON *cfg;
	size_t i;

	snprintf(d, sizeof(d), "/tmp/fl-scn-add-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	put_file(d, "scn.json", "{" BASE "}", scen, sizeof(scen));
	put_file(d, "gw.json", gw, add, sizeof(add));
	cr_assert_eq(scenario_load(scen, 0.5, &sc, err), 0, "%s", err);
	cr_assert_eq(scenario_add_setups(&sc, add, err), 0, "%s", err);
	cr_assert_eq(sc.nsetups, 3);
	cr_assert_eq(sc.nadded, 2);
	cr_assert_str_eq(sc.setups[1].name, "gw");
	cr_assert_str_eq(sc.setups[2].name, "ext");
	cfg = cJSON_GetObjectItem(cJSON_GetObjectItem(sc.setups[1].config, "providers"), "p");
	cr_assert_float_eq(cJSON_GetObjectItem(cfg, "timeout_ms")->valuedouble, 500, 1e-9,
			   "the file is scaled as the scenario is");
	cr_assert_eq(cJSON_GetArraySize(sc.added), 2);
	cfg = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(sc.added, 0), "config"), "providers"), "p");
	cr_assert_float_eq(cJSON_GetObjectItem(cfg, "timeout_ms")->valuedouble, 1000, 0,
			   "kept as written for scenario.json");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *want = malloc(strlen(d) + strlen(bad[i].says) + 2);

		put_file(d, "add.json", bad[i].text, add, sizeof(add));
		err[0] = '\0';
		cr_assert_neq(scenario_add_setups(&sc, add, err), 0, "case %zu was taken", i);
		sprintf(want, "%s/%s", d, bad[i].says);
		cr_assert(strstr(err, want), "case %zu: expected \"%s\" in \"%s\"", i, want, err);
		free(want);
		cr_assert_eq(sc.nsetups, 3, "case %zu left setups behind", i);
		cr_assert_eq(sc.nadded, 2);
		cr_assert_eq(cJSON_GetArraySize(sc.added), 2);
	}
	scenario_free(&sc);
	unlink(add);
	snprintf(add, sizeof(add), "%s/gw.json", d);
	unlink(add);
	unlink(scen);
	rmdir(d);
}

Test(scenario_run, phase_at_edges, .timeout = 10)
{
	static const struct {
		double t_ms;
		int want;
	} cases[] = {
		{ -0.001, -1 }, { 0, 0 }, { 14999.999, 0 }, { 15000, 1 }, { 44999, 1 },
		{ 45000, -1 }, { 49999.9, -1 }, { 50000, 2 }, { 59999.999, 2 }, { 60000, -1 },
	};
	struct scenario sc;
	size_t i;

	cr_assert_eq(load("{" BASE ",\"phases\":[{\"name\":\"late\",\"from_s\":50,\"to_s\":60},"
			  "{\"name\":\"early\",\"from_s\":0,\"to_s\":15},"
			  "{\"name\":\"mid\",\"from_s\":15,\"to_s\":45}]}", &sc), 0, "%s", err);
	cr_assert_str_eq(sc.phases[0].name, "late", "file order kept");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static const int order[] = { 1, 2, 0 };	/* early, mid, late by index */
		int want = cases[i].want < 0 ? -1 : order[cases[i].want];

		cr_assert_eq(scenario_phase_at(&sc, cases[i].t_ms), want, "t=%g", cases[i].t_ms);
	}
	scenario_free(&sc);
}

/* ---- mockprov's loader from a parsed root ---- */

Test(scenario_mockprov, config_from_json_names_the_given_file, .timeout = 10)
{
	cJSON *root = cJSON_Parse("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\","
				  "\"faults\":[{\"kind\":\"slow\",\"from_s\":0,\"to_s\":1}]}]}");
	cJSON *good = cJSON_Parse("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\","
				  "\"strict_model\":true}]}");
	struct mock_config mc;
	char *before;
	char *after;

	cr_assert_not_null(root);
	before = cJSON_PrintUnformatted(root);
	cr_assert_eq(mock_config_from_json(root, "scn.json", &mc, err), -EINVAL);
	cr_assert_str_eq(err, "scn.json: providers[0].faults[0].add_ms: missing (required)");
	cr_assert_null(mc.providers);
	after = cJSON_PrintUnformatted(root);
	cr_assert_str_eq(before, after, "the root is only read");
	cr_assert_eq(mock_config_from_json(good, "scn.json", &mc, err), 0, "%s", err);
	cr_assert_eq(mc.nproviders, 1);
	cr_assert(mc.providers[0].strict_model);
	cr_assert_str_eq(mc.providers[0].model, "mock-small");
	mock_config_free(&mc);
	cr_assert_eq(mock_config_from_json(cJSON_GetObjectItem(good, "providers"), "f", &mc, err),
		     -EINVAL);
	cr_assert(strstr(err, "f: (top level): expected an object"), "%s", err);
	cJSON_free(before);
	cJSON_free(after);
	cJSON_Delete(root);
	cJSON_Delete(good);
}

/*
 * A gateway setup whose provider key and client keys come from variables
 * this machine does not have still loads: the scenario may be reloaded to
 * report or gate results made where they were set (the gateway itself
 * refuses to start without them). A malformed variable name does not.
 */
Test(scenario, gateway_keys_from_unset_variables_load, .timeout = 10)
{
	struct scenario sc;

	unsetenv("FL_SCN_SURELY_UNSET_KEY");
	unsetenv("FL_SCN_SURELY_UNSET_CLIENT");
	cr_assert_eq(load("{" NOSETUP "," GW("{\"providers\":{\"p\":{\"base_url\":\"{upstream.a}\","
					 "\"api_key_env\":\"FL_SCN_SURELY_UNSET_KEY\"}},"
					 "\"auth\":{\"keys_env\":[\"FL_SCN_SURELY_UNSET_CLIENT\"]},"
					 GW_MODELS "}") "}", &sc), 0, "%s", err);
	scenario_free(&sc);
	cr_assert_eq(load("{" NOSETUP "," GW("{" GW_PROVIDERS ",\"auth\":{\"keys_env\":[\"1X\"]},"
					 GW_MODELS "}") "}", &sc), -EINVAL);
	cr_assert(strstr(err, ": setups[0] \"g\": config.auth.keys_env[0]: expected an "
			      "environment variable's name"), "%s", err);
}

/*
 * A load.mix that names no streams (only response header names) loads:
 * the runner gives loadgen its one stream, and the check does the same.
 */
Test(scenario, mix_without_streams_loads, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load("{" DUR "," PROV ",\"load\":{\"rate\":2,\"mix\":{\"response_headers\":"
			  "{\"provider\":\"x-p\"}}}," SETUP "}", &sc), 0, "%s", err);
	cr_assert(cJSON_IsObject(sc.load.mix));
	scenario_free(&sc);
}

/* ---- gateway replicas and shared state ---- */

#define GWCFG "{" GW_PROVIDERS "," GW_MODELS "}"
#define REP_SETUPS "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\"}," \
	"{\"name\":\"loc\",\"kind\":\"gateway\",\"replicas\":3,\"config\":" GWCFG "}," \
	"{\"name\":\"sh\",\"kind\":\"gateway\",\"replicas\":2,\"shared_state\":\"redis\"," \
	"\"config\":" GWCFG "}]"
#define REP(rest) "{" NOSETUP "," REP_SETUPS rest "}"

Test(scenario, replicas_shared_state_and_their_actions, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load(REP(",\"actions\":[{\"at_s\":30,\"do\":\"kill\",\"redis\":true},"
			      "{\"at_s\":20,\"do\":\"kill\",\"replica\":3},"
			      "{\"at_s\":25,\"do\":\"restart\",\"replica\":3},"
			      "{\"at_s\":35,\"do\":\"restart\",\"redis\":true},"
			      "{\"at_s\":40,\"do\":\"kill\",\"provider\":\"b\"}]"), &sc), 0, "%s", err);
	cr_assert_eq(sc.setups[0].replicas, 1);
	cr_assert_not(scenario_setup_replicated(&sc.setups[0]));
	cr_assert_eq(sc.setups[1].replicas, 3);
	cr_assert_not(sc.setups[1].shared_redis, "local is the default");
	cr_assert(scenario_setup_replicated(&sc.setups[1]));
	cr_assert_eq(sc.setups[2].replicas, 2);
	cr_assert(sc.setups[2].shared_redis);
	cr_assert_eq(sc.nactions, 5);
	cr_assert_eq(sc.actions[0].target, SC_TARGET_REPLICA, "sorted by time");
	cr_assert_eq(sc.actions[0].replica, 3);
	cr_assert_eq(sc.actions[2].target, SC_TARGET_REDIS);
	cr_assert_eq(sc.actions[4].target, SC_TARGET_PROVIDER);
	cr_assert_eq(sc.actions[4].provider, 1);
	/* Replica 3 is the local setup's alone; Redis the shared one's. */
	cr_assert(scenario_action_applies(&sc.actions[0], &sc.setups[1]));
	cr_assert_not(scenario_action_applies(&sc.actions[0], &sc.setups[2]));
	cr_assert_not(scenario_action_applies(&sc.actions[0], &sc.setups[0]));
	cr_assert(scenario_action_applies(&sc.actions[2], &sc.setups[2]));
	cr_assert_not(scenario_action_applies(&sc.actions[2], &sc.setups[1]));
	cr_assert(scenario_action_applies(&sc.actions[4], &sc.setups[0]));
	/* chaos sim refuses what it cannot simulate, naming the key. */
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), -EINVAL);
	cr_assert(strstr(err, ": setups[1] \"loc\".replicas: chaos sim does not simulate gateway "
			 "replicas yet"), "%s", err);
	cr_assert_eq(scenario_sim_check(&sc, "d", err), 0, "%s", err);
	scenario_free(&sc);
	cr_assert_eq(load("{" NOSETUP ",\"setups\":[{\"name\":\"sh\",\"kind\":\"gateway\","
			  "\"shared_state\":\"redis\",\"config\":" GWCFG "}]}", &sc), 0, "%s", err);
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), -EINVAL);
	cr_assert(strstr(err, ".shared_state: chaos sim does not simulate Redis yet"), "%s", err);
	scenario_free(&sc);
	cr_assert_eq(load("{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\","
			  "\"config\":" GWCFG "}],\"actions\":[{\"at_s\":1,\"do\":\"kill\","
			  "\"replica\":1}]}", &sc), 0, "%s", err);
	cr_assert(scenario_action_applies(&sc.actions[0], &sc.setups[0]),
		  "a plain gateway's replica 1 is its gateway");
	cr_assert_eq(scenario_sim_check(&sc, NULL, err), -EINVAL);
	cr_assert(strstr(err, "actions[].replica: chaos sim does not simulate kills and restarts"),
		  "%s", err);
	scenario_free(&sc);
}

Test(scenario, redis_gateway_config_gets_the_runs_shared_state, .timeout = 10)
{
	const char *u[] = { "http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1" };
	struct scenario sc;
	cJSON *root;
	const cJSON *ss;
	char *s;

	cr_assert_eq(load("{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\","
			  "\"provider\":\"a\"},{\"name\":\"loc\",\"kind\":\"gateway\",\"replicas\":3,"
			  "\"config\":" GWCFG "},{\"name\":\"sh\",\"kind\":\"gateway\",\"replicas\":2,"
			  "\"shared_state\":\"redis\",\"config\":{" GW_PROVIDERS "," GW_MODELS ","
			  "\"shared_state\":{\"reconnect_max_ms\":1000}}}]}", &sc), 0, "%s", err);
	s = scenario_gateway_config(&sc, &sc.setups[2], "127.0.0.1:0", u,
				    "redis://127.0.0.1:6390/0", "faultline:run-1:", err);
	cr_assert_not_null(s, "%s", err);
	root = cJSON_Parse(s);
	ss = cJSON_GetObjectItem(root, "shared_state");
	cr_assert_str_eq(cJSON_GetObjectItem(ss, "backend")->valuestring, "redis");
	cr_assert_str_eq(cJSON_GetObjectItem(ss, "url")->valuestring, "redis://127.0.0.1:6390/0");
	cr_assert_str_eq(cJSON_GetObjectItem(ss, "key_prefix")->valuestring, "faultline:run-1:");
	cr_assert_float_eq(cJSON_GetObjectItem(ss, "reconnect_max_ms")->valuedouble, 1000, 0,
			   "the setup's tuning keys stay");
	cJSON_Delete(root);
	free(s);
	s = scenario_gateway_config(&sc, &sc.setups[1], "127.0.0.1:0", u, NULL, NULL, err);
	cr_assert_not_null(s, "%s", err);
	root = cJSON_Parse(s);
	cr_assert_null(cJSON_GetObjectItem(root, "shared_state"), "local: the gateway's default");
	cJSON_Delete(root);
	free(s);
	scenario_free(&sc);
}

static const struct bad_case replica_cases[] = {
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"replicas\":0,"
	  "\"config\":" GWCFG "}]}", ": setups[0].replicas: expected a whole number from 1 to 16, "
	  "got 0" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"replicas\":17,"
	  "\"config\":" GWCFG "}]}", ": setups[0].replicas: expected a whole number from 1 to 16" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"shared_state\":\"etcd\","
	  "\"config\":" GWCFG "}]}", ": setups[0].shared_state: expected one of local, redis" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"a\","
	  "\"replicas\":2}]}", ": setups[0].replicas: unknown key for a setup of kind \"direct\"" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"config\":{"
	  GW_PROVIDERS "," GW_MODELS ",\"shared_state\":{\"backend\":\"redis\"}}}]}",
	  ": setups[0].config.shared_state: expected no shared_state" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"shared_state\":\"redis\","
	  "\"config\":{" GW_PROVIDERS "," GW_MODELS ",\"shared_state\":{\"url\":\"redis://127.0.0.1:1/0\"}}}]}",
	  ": setups[0].config.shared_state.url: expected none: the runner writes backend, url and "
	  "key_prefix" },
	{ "{" NOSETUP ",\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"shared_state\":\"redis\","
	  "\"config\":{" GW_PROVIDERS "," GW_MODELS ",\"shared_state\":{\"reconnect_ms\":0}}}]}",
	  ": setups[0] \"g\": config.shared_state.reconnect_ms: expected" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"replica\":4}]"),
	  ": actions[0].replica: expected a replica some gateway setup has (1 to its "
	  "\"replicas\"), got 4" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"replica\":0}]"),
	  ": actions[0].replica: expected a whole number from 1 to 16, got 0" },
	{ "{" BASE ",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":true}]}",
	  ": actions[0].redis: expected a setup with \"shared_state\": \"redis\"" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":false}]"),
	  ": actions[0].redis: expected true" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":1}]"),
	  ": actions[0].redis: expected true or false" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"replica\":1,\"provider\":\"a\"}]"),
	  ": actions[0].replica: expected exactly one of \"provider\"" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\"}]"),
	  ": actions[0].provider: expected exactly one of \"provider\"" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"restart\",\"replica\":2}]"),
	  ": actions[0].do: expected a \"restart\" only after a \"kill\" of replica 2" },
	{ REP(",\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":true},"
	      "{\"at_s\":2,\"do\":\"kill\",\"redis\":true}]"),
	  ": actions[1].do: expected a \"restart\" of Redis between two kills" },
	{ REP(",\"expect\":[{\"setup\":\"d\",\"phase\":\"*\",\"probe_overlaps_max\":0}]"),
	  ": expect[0].probe_overlaps_max: expected it only on gateway setups with replicas above "
	  "1 or shared_state \"redis\"" },
	{ REP(",\"expect\":[{\"setup\":\"sh\",\"phase\":\"*\",\"relative_to\":\"d\","
	      "\"timeout_paid_ratio_max\":0.5}]"),
	  ": expect[0].timeout_paid_ratio_max: expected it only on gateway setups" },
	{ REP(",\"expect\":[{\"setup\":\"sh\",\"phase\":\"*\",\"timeout_paid_ratio_max\":0.5}]"),
	  ": expect[0].relative_to: missing: latency_p99_ratio_max, cost_overhead_max and "
	  "timeout_paid_ratio_max" },
};

Test(scenario_bad, replicas_and_their_actions_refused_naming_the_key, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(replica_cases) / sizeof(replica_cases[0]); i++) {
		const struct bad_case *bc = &replica_cases[i];
		struct scenario sc;

		cr_assert_eq(load(bc->json, &sc), -EINVAL, "case %zu accepted: %s", i, bc->json);
		cr_assert(strncmp(err, file, strlen(file)) == 0, "case %zu names the file: %s", i,
			  err);
		cr_assert(strstr(err, bc->says), "case %zu: expected \"%s\" in \"%s\"", i, bc->says,
			  err);
	}
}

Test(scenario, replica_bounds_load_on_replicated_setups, .timeout = 10)
{
	struct scenario sc;

	cr_assert_eq(load(REP(",\"expect\":[{\"setup\":\"sh\",\"phase\":\"*\",\"relative_to\":"
			      "\"loc\",\"timeout_paid_ratio_max\":0.5,\"timeout_paid_max\":40,"
			      "\"replica_open_spread_ms_max\":100,\"probe_overlaps_max\":0}]"), &sc),
		     0, "%s", err);
	cr_assert_float_eq(sc.expects[0].timeout_paid_ratio_max, 0.5, 0);
	cr_assert_float_eq(sc.expects[0].timeout_paid_max, 40, 0);
	cr_assert_float_eq(sc.expects[0].replica_open_spread_ms_max, 100, 0);
	cr_assert_float_eq(sc.expects[0].probe_overlaps_max, 0, 0);
	scenario_free(&sc);
	cr_assert_eq(load_scaled(REP(",\"expect\":[{\"setup\":\"sh\",\"phase\":\"*\","
				     "\"timeout_paid_max\":40,\"replica_open_spread_ms_max\":100}]"),
				 0.5, &sc), 0, "%s", err);
	cr_assert_float_eq(sc.expects[0].timeout_paid_max, 40, 0, "a count: not scaled");
	cr_assert_float_eq(sc.expects[0].replica_open_spread_ms_max, 50, 1e-9, "a time: scaled");
	scenario_free(&sc);
}
