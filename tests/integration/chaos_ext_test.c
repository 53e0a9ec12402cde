/*
 * bin/chaos with another gateway and no wrapper script: an external setup
 * whose command is bin/gateway itself, its config a setup file written
 * from placeholders (its port, the provider's URL, timeouts as {ms:N}),
 * the client key it demands a setup header; the providers up before it
 * starts (its first health check answered 200 before t0); one not ready
 * by t0 failing with its ready_url and ready_ms named. Then setups added
 * from a file (--add-setup) and a setup run again into an existing stamp
 * (--stamp), the other setups' results kept, and what each refuses.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/lgharness.h"
#include "tests/support/tmpdir.h"

static char dir[256];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos_ext, .init = setup, .fini = lg_cleanup);

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* PATH's JSON; the test fails when it is not there or not JSON. */
static cJSON *read_json(const char *path)
{
	char *text = tmpdir_read("/", path);
	cJSON *root;

	cr_assert_not_null(text, "no %s", path);
	root = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(root, "%s is not JSON", path);
	return root;
}

/* The one stamp directory under DIR/results/NAME, into out. */
static void stamp_dir(const char *name, char *out, size_t len)
{
	char parent[600];
	int n;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	n = tmpdir_only_entry(parent, out, len);
	cr_assert_eq(n, 1, "%d stamp dirs under %s", n, parent);
}

/* Runs `chaos ARGS…` (NULL-terminated) within timeout_s; its stderr into err. */
static int chaos(const char *const *args, char *err, size_t errlen, double timeout_s)
{
	const char *argv[24] = { "chaos" };
	size_t n = 1;

	while (*args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	return run_program(argv, err, errlen, timeout_s);
}

/* ---- another gateway, from its config file ---- */

/* The client key bin/gateway demands: FL_EXT_KEY's value, which the setup's header carries. */
#define CLIENT_KEY_AT_HALF "fl-500-0123456789abcdef"

/*
 * One provider p (20 ms) and one external setup: bin/gateway with a config
 * the runner writes from setups[].files, on {listen}, its provider at
 * {upstream.p}, its timeout and health-check interval as {ms:N}, and
 * client keys: loadgen's requests pass only with the setup's
 * Authorization header, whose key holds {ms:1000}. 20 req/s for 2 s.
 */
static void write_gateway_scenario(char *path, size_t len)
{
	char gateway[300];
	cJSON *root = cJSON_CreateObject();
	cJSON *provs = cJSON_AddArrayToObject(root, "providers");
	cJSON *p = cJSON_CreateObject();
	cJSON *load = cJSON_AddObjectToObject(root, "load");
	cJSON *st = cJSON_CreateObject();
	cJSON *cmd;
	char *text;

	bin_path("gateway", gateway, sizeof(gateway));
	cJSON_AddStringToObject(root, "name", "ext-gw");
	cJSON_AddNumberToObject(root, "duration_s", 2);
	cJSON_AddStringToObject(p, "name", "p");
	cJSON_AddNumberToObject(p, "ttft_ms", 20);
	cJSON_AddItemToArray(provs, p);
	cJSON_AddNumberToObject(load, "rate", 20);
	cJSON_AddNumberToObject(load, "timeout_ms", 1000);
	cJSON_AddStringToObject(st, "name", "ext");
	cJSON_AddStringToObject(st, "kind", "external");
	cJSON_AddNumberToObject(st, "ready_ms", 1500);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "files"), "gw.json",
		"{\"listen\": \"{listen}\", \"auth\": {\"keys_env\": [\"FL_EXT_KEY\"]},\n"
		" \"providers\": {\"p\": {\"base_url\": \"{upstream.p}\", \"timeout_ms\": {ms:1000},\n"
		"   \"health_check\": {\"interval_ms\": {ms:400}}}},\n"
		" \"models\": {\"chat\": {\"targets\": [{\"provider\": \"p\", \"model\": \"mock-small\"}]}}}\n");
	cmd = cJSON_AddArrayToObject(st, "command");
	cJSON_AddItemToArray(cmd, cJSON_CreateString(gateway));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("--config"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("{dir}/gw.json"));
	cJSON_AddStringToObject(st, "ready_url", "http://{listen}/healthz");
	cJSON_AddStringToObject(st, "target", "http://{listen}/v1");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "headers"), "Authorization",
				"Bearer fl-{ms:1000}-0123456789abcdef");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "setups"), st);
	text = cJSON_Print(root);
	write_file(dir, "ext-gw.json", text, path, len);
	free(text);
	cJSON_Delete(root);
}

Test(chaos_ext, another_gateway_from_its_config_file, .timeout = 90)
{
	char scen[400];
	char out[600];
	char err[16384];
	char stamp[800];
	char path[1000];
	struct csv_table t;
	const cJSON *p;
	cJSON *cfg;
	size_t checks = 0;
	size_t i;
	int rc;

	write_gateway_scenario(scen, sizeof(scen));
	snprintf(out, sizeof(out), "%s/results", dir);
	cr_assert_eq(setenv("FL_EXT_KEY", CLIENT_KEY_AT_HALF, 1), 0);
	{
		const char *args[] = { "run", scen, "--out", out, "--time-scale", "0.5", NULL };

		rc = chaos(args, err, sizeof(err), 80);
	}
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	stamp_dir("ext-gw", stamp, sizeof(stamp));

	/* The config file, written whole into the run's folder with its placeholders filled. */
	snprintf(path, sizeof(path), "%s/ext/run-1/gw.json", stamp);
	cfg = read_json(path);
	cr_assert(strncmp(cJSON_GetObjectItem(cfg, "listen")->valuestring, "127.0.0.1:", 10) == 0);
	p = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "providers"), "p");
	cr_assert(strncmp(cJSON_GetObjectItem(p, "base_url")->valuestring, "http://127.0.0.1:",
			  17) == 0, "%s", cJSON_GetObjectItem(p, "base_url")->valuestring);
	cr_assert_float_eq(cJSON_GetObjectItem(p, "timeout_ms")->valuedouble, 500, 0,
			   "{ms:1000} at --time-scale 0.5");
	cr_assert_float_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "health_check"),
					       "interval_ms")->valuedouble, 200, 0);
	cJSON_Delete(cfg);
	snprintf(path, sizeof(path), "%s/ext/run-1/gw.json.tmp", stamp);
	cr_assert_not(exists(path), "the config was left half-written");

	/* Every request answered: the gateway took the setup's header, key and all. */
	snprintf(path, sizeof(path), "%s/ext/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.nrows - 1, 40, "%zu requests", t.nrows - 1);
	cr_assert_eq(lg_count(&t, "outcome", "ok"), 40, "%zu of 40 answered",
		     lg_count(&t, "outcome", "ok"));
	csv_free(&t);

	/*
	 * The provider was up before the gateway started: its first health
	 * check (at the gateway's start, no --t0) found it, before t0.
	 */
	snprintf(path, sizeof(path), "%s/ext/run-1/mock-p.csv", stamp);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		if (strcmp(csv_get(&t, i, "request_id"), "health-check-p-1") != 0)
			continue;
		checks++;
		cr_assert_str_eq(csv_get(&t, i, "status"), "200", "the first check failed");
		cr_assert_lt(lg_num(&t, i, "t_ms"), 0, "the first check came after t0");
	}
	cr_assert_eq(checks, 1, "the provider never saw the gateway's first health check");
	csv_free(&t);
}

Test(chaos_ext, not_ready_by_t0_names_ready_url_and_ready_ms, .timeout = 40)
{
	static const char late[] =
		"{\"name\":\"late\",\"duration_s\":2,\"providers\":[{\"name\":\"p\"}],"
		"\"load\":{\"rate\":5},"
		"\"setups\":[{\"name\":\"ext\",\"kind\":\"external\",\"ready_ms\":300,"
		"\"command\":[\"/bin/sh\",\"-c\",\"echo still-booting >&2; exec sleep 30\"],"
		"\"ready_url\":\"http://{listen}/health\",\"target\":\"http://{listen}/v1\"}]}";
	char scen[400];
	char out[600];
	char err[16384];
	char stamp[800];
	char path[1000];
	int rc;

	write_file(dir, "late.json", late, scen, sizeof(scen));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *args[] = { "run", scen, "--out", out, NULL };

		rc = chaos(args, err, sizeof(err), 35);
	}
	cr_assert_eq(rc, 1, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "ready_url http://127.0.0.1:"), "%s", err);
	cr_assert(strstr(err, "/health"), "%s", err);
	cr_assert(strstr(err, "ready_ms") && strstr(err, "300 ms"), "%s", err);
	cr_assert(strstr(err, "still-booting"), "the setup's stderr tail is not shown: %s", err);
	stamp_dir("late", stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/ext/run-1.tmp/requests.csv.tmp", stamp);
	cr_assert_not(exists(path), "loadgen started without the setup");
}
