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

/* ---- --add-setup, and --stamp: one setup run again into a stamp ---- */

/* Two direct setups a and b on one provider, 10 req/s for 1 s. */
static const char two[] =
	"{\"name\":\"two\",\"duration_s\":1,\"providers\":[{\"name\":\"p\",\"ttft_ms\":10}],"
	"\"load\":{\"rate\":10},"
	"\"setups\":[{\"name\":\"a\",\"kind\":\"direct\",\"provider\":\"p\"},"
	"{\"name\":\"b\",\"kind\":\"direct\",\"provider\":\"p\"}]}";

/* STAMP/REL's whole text (the test fails when it cannot be read); the caller frees it. */
static char *stamp_file(const char *stamp, const char *rel)
{
	char *text = tmpdir_read(stamp, rel);

	cr_assert_not_null(text, "no %s/%s", stamp, rel);
	return text;
}

/* The names of STAMP/scenario.json's setups, joined with ',', into out. */
static void scenario_setups(const char *stamp, char *out, size_t len)
{
	char path[1000];
	cJSON *root;
	const cJSON *st;
	size_t used = 0;

	snprintf(path, sizeof(path), "%s/scenario.json", stamp);
	root = read_json(path);
	out[0] = '\0';
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(root, "setups")) {
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "",
					 cJSON_GetObjectItem(st, "name")->valuestring);
	}
	cJSON_Delete(root);
}

/* The names of STAMP/summary.json's setups, joined with ',', into out. */
static void summary_setups(const char *stamp, char *out, size_t len)
{
	char path[1000];
	cJSON *root;
	const cJSON *st;
	size_t used = 0;

	snprintf(path, sizeof(path), "%s/summary.json", stamp);
	root = read_json(path);
	out[0] = '\0';
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(root, "setups"))
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", st->string);
	cJSON_Delete(root);
}

Test(chaos_ext, add_setups_and_run_one_again_into_the_stamp, .timeout = 150)
{
	char scen[400];
	char add_c[400];
	char add_d[400];
	char broken[400];
	char out[600];
	char err[16384];
	char stamp[800];
	char path[1000];
	char names[256];
	char *a_before;
	char *b_before;
	char *text;
	int rc;

	write_file(dir, "two.json", two, scen, sizeof(scen));
	write_file(dir, "c.json", "[{\"name\":\"c\",\"kind\":\"client_retry\",\"provider\":\"p\","
		   "\"retries\":1,\"headers\":{\"x-who\":\"c at {hostport.p}\"}}]",
		   add_c, sizeof(add_c));
	write_file(dir, "d.json", "{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}", add_d,
		   sizeof(add_d));
	/* A "c" that cannot start: its runs fail, and the stamp's c must stay. */
	write_file(dir, "c-broken.json", "{\"name\":\"c\",\"kind\":\"external\",\"command\":"
		   "[\"/bin/sh\",\"-c\",\"echo no-such-gateway >&2; exit 3\"],"
		   "\"ready_url\":\"http://{listen}/\",\"target\":\"http://{listen}/v1\"}",
		   broken, sizeof(broken));
	snprintf(out, sizeof(out), "%s/results", dir);

	/* A new stamp with a setup added from a file: run, kept in scenario.json, summarised. */
	{
		const char *args[] = { "run", scen, "--out", out, "--add-setup", add_c, "--quiet",
				       NULL };

		rc = chaos(args, err, sizeof(err), 60);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	stamp_dir("two", stamp, sizeof(stamp));
	scenario_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c");
	summary_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c");
	a_before = stamp_file(stamp, "a/run-1/loadgen-summary.json");
	b_before = stamp_file(stamp, "b/run-1/loadgen-summary.json");

	/* a again: its folder replaced; b's and c's results stay, and the report has all three. */
	{
		const char *args[] = { "run", scen, "--stamp", stamp, "--setup", "a", "--quiet", NULL };

		rc = chaos(args, err, sizeof(err), 60);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	text = stamp_file(stamp, "a/run-1/loadgen-summary.json");
	cr_assert_str_neq(text, a_before, "a was not run again");
	free(text);
	text = stamp_file(stamp, "b/run-1/loadgen-summary.json");
	cr_assert_str_eq(text, b_before, "b's results changed");
	free(text);
	snprintf(path, sizeof(path), "%s/a.new~", stamp);
	cr_assert_not(exists(path), "the new runs' folder is left");
	scenario_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c", "the stamp's added setup was dropped");
	summary_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c");
	text = stamp_file(stamp, "report.md");
	cr_assert(strstr(text, "| c "), "%s", text);
	free(text);

	/* A setup that fails leaves the stamp's as it was, its attempt aside. */
	{
		const char *args[] = { "run", scen, "--stamp", stamp, "--add-setup", broken,
				       "--quiet", NULL };

		rc = chaos(args, err, sizeof(err), 60);
	}
	cr_assert_eq(rc, 1, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "no-such-gateway"), "%s", err);
	cr_assert(strstr(err, "0 of 1 runs completed"), "%s", err);
	snprintf(path, sizeof(path), "%s/c/run-1/requests.csv", stamp);
	cr_assert(exists(path), "the old c is gone");
	snprintf(path, sizeof(path), "%s/c.new~/run-1.tmp", stamp);
	cr_assert(exists(path), "the failed attempt is not kept aside");
	text = stamp_file(stamp, "scenario.json");
	cr_assert(strstr(text, "client_retry") && !strstr(text, "no-such-gateway"),
		  "scenario.json says c is what did not run:\n%s", text);
	free(text);

	/* A setup added to the stamp: only it runs; the others stay. */
	{
		const char *args[] = { "run", scen, "--stamp", stamp, "--add-setup", add_d,
				       "--quiet", NULL };

		rc = chaos(args, err, sizeof(err), 60);
	}
	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
	cr_assert_null(strstr(err, "/ a /"), "a ran again: %s", err);
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", stamp);
	cr_assert(exists(path));
	snprintf(path, sizeof(path), "%s/c.new~", stamp);
	cr_assert(exists(path), "another setup's leftover was touched");
	scenario_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c,d");
	summary_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c,d");
	text = stamp_file(stamp, "b/run-1/loadgen-summary.json");
	cr_assert_str_eq(text, b_before, "b's results changed");
	free(text);
	free(a_before);
	free(b_before);

	/* A setup only the stamp has (an earlier --add-setup's): --setup runs it again from there. */
	{
		const char *args[] = { "run", scen, "--stamp", stamp, "--setup", "d", "--quiet",
				       NULL };
		char *d_before = stamp_file(stamp, "d/run-1/loadgen-summary.json");

		rc = chaos(args, err, sizeof(err), 60);
		cr_assert_eq(rc, 0, "exit %d:\n%s", rc, err);
		text = stamp_file(stamp, "d/run-1/loadgen-summary.json");
		cr_assert_str_neq(text, d_before, "d was not run again");
		free(text);
		free(d_before);
	}
	scenario_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c,d");

	/* What --stamp and --add-setup refuse: exit 2, before any process starts. */
	{
		static const char other[] =
			"{\"name\":\"other\",\"duration_s\":1,\"providers\":[{\"name\":\"p\"}],"
			"\"load\":{\"rate\":10},"
			"\"setups\":[{\"name\":\"a\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
		static const char edited[] =
			"{\"name\":\"two\",\"duration_s\":2,\"providers\":[{\"name\":\"p\",\"ttft_ms\":10}],"
			"\"load\":{\"rate\":10},"
			"\"setups\":[{\"name\":\"a\",\"kind\":\"direct\",\"provider\":\"p\"}]}";
		char other_path[400];
		char edited_path[400];
		char bad[400];
		char dup[400];
		char files[400];
		char nothing[700];
		const struct {
			const char *args[10];
			const char *says;
		} refused[] = {
			{ { "run", scen, "--stamp", stamp, "--setup", "a", "--time-scale", "0.5" },
			  "ran at time scale 1, this run's is 0.5" },
			{ { "run", other_path, "--stamp", stamp },
			  "holds the results of scenario \"two\", not \"other\"" },
			{ { "run", edited_path, "--stamp", stamp, "--setup", "a" },
			  "ran another version of two: its scenario.json's duration_s differs" },
			{ { "run", scen, "--stamp", stamp, "--setup", "zz" }, "has no setup called \"zz\"" },
			{ { "run", scen, "--stamp", out }, "is not a results stamp" },
			{ { "run", scen, "--stamp", nothing }, "No such file or directory" },
			{ { "run", scen, "--stamp", stamp, "--out", out },
			  "--stamp and --out" },
			{ { "run", scen, "--add-setup", bad }, "bad.json: setups[1].headers.x-request-id: "
			  "expected a header loadgen does not set itself" },
			{ { "run", scen, "--add-setup", dup }, "dup.json: setups[0].name: expected a name "
			  "no other setup has, got \"b\" (also setups[1] of " },
			{ { "run", scen, "--add-setup", files }, "files.json: setups[0].files.summary.json: "
			  "expected a plain file name" },
			{ { "run", scen, "--stamp", stamp, "--add-setup", add_d, "--add-setup", add_d },
			  "d.json: setups[0].name: expected a name no other setup has, got \"d\" (also "
			  "setups[0] of an earlier --add-setup file)" },
		};
		size_t i;

		write_file(dir, "other.json", other, other_path, sizeof(other_path));
		write_file(dir, "edited.json", edited, edited_path, sizeof(edited_path));
		write_file(dir, "bad.json", "[{\"name\":\"e\",\"kind\":\"direct\",\"provider\":\"p\"},"
			   "{\"name\":\"f\",\"kind\":\"direct\",\"provider\":\"p\",\"headers\":"
			   "{\"x-request-id\":\"1\"}}]", bad, sizeof(bad));
		write_file(dir, "dup.json", "{\"name\":\"b\",\"kind\":\"direct\",\"provider\":\"p\"}",
			   dup, sizeof(dup));
		write_file(dir, "files.json", "{\"name\":\"x\",\"kind\":\"external\",\"command\":"
			   "[\"gw\"],\"ready_url\":\"http://{listen}/\",\"target\":\"http://{listen}/v1\","
			   "\"files\":{\"summary.json\":\"{}\"}}", files, sizeof(files));
		snprintf(nothing, sizeof(nothing), "%s/nothing", dir);
		for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			rc = chaos(refused[i].args, err, sizeof(err), 20);
			cr_assert_eq(rc, 2, "case %zu: exit %d:\n%s", i, rc, err);
			cr_assert(strstr(err, refused[i].says), "case %zu: expected \"%s\" in:\n%s", i,
				  refused[i].says, err);
		}
	}
	summary_setups(stamp, names, sizeof(names));
	cr_assert_str_eq(names, "a,b,c,d", "a refused run touched the stamp");
}
