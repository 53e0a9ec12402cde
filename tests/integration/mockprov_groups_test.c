/*
 * mockprov's provider groups as clients see them: a group's down window
 * closes every member together, on the shared t0, while a provider
 * outside the group keeps answering; a group's faults show in the members'
 * logs under their kind and in GET /state with the group's name; their
 * probabilities are drawn per member; --check-config names a bad group.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"

#define TIMING "\"ttft_ms\":2,\"output_tokens\":4"

static struct mock_proc mock;

static void teardown(void)
{
	mock_cleanup(&mock);
}

TestSuite(mockprov_groups, .fini = teardown);

/* Unix epoch ms with sub-millisecond precision. */
static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits until t0 + at_ms (Unix ms): a point of the fault timeline, not a process. */
static void wait_until(int64_t t0, double at_ms)
{
	double left = (double)t0 + at_ms - unix_now();

	if (left > 0)
		usleep((useconds_t)(left * 1000));
}

/* One chat completion to prov on a fresh connection: its status, or 0 when refused. */
static long ask(const char *prov, CURLcode *code)
{
	char url[160];
	char body[256];
	struct http_opts o = {
		.body = chat_body(false, body, sizeof(body)),
		.timeout_ms = 3000,
		.fresh_connection = true,
	};
	struct http_result r;
	long status;

	mock_url(&mock, prov, "/v1/chat/completions", url, sizeof(url));
	cr_assert_eq(http_do(url, &o, &r), 0);
	if (code)
		*code = r.code;
	status = r.status;
	http_result_free(&r);
	return status;
}

static void assert_refused(const char *prov, const char *when)
{
	CURLcode code;
	long status = ask(prov, &code);

	cr_assert_eq(code, CURLE_COULDNT_CONNECT, "[%s] %s answered %ld (curl %d)", when, prov,
		     status, code);
}

static void assert_answers(const char *prov, const char *when)
{
	CURLcode code;
	long status = ask(prov, &code);

	cr_assert_eq(status, 200, "[%s] %s: status %ld (curl %d)", when, prov, status, code);
}

/* GET /state, parsed. */
static cJSON *state(void)
{
	struct http_opts o = { .timeout_ms = 3000 };
	struct http_result r;
	char url[160];
	cJSON *root;

	snprintf(url, sizeof(url), "http://%s/state", mock.admin_addr);
	cr_assert_eq(http_do(url, &o, &r), 0);
	root = cJSON_Parse(r.body);
	cr_assert_not_null(root, "%s", r.body);
	http_result_free(&r);
	return root;
}

static const cJSON *provider_state(const cJSON *st, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(st, "providers")) {
		if (strcmp(cJSON_GetObjectItem(p, "name")->valuestring, name) == 0)
			return p;
	}
	cr_assert_fail("no %s in the state", name);
	return NULL;
}

/*
 * a and b are in eu, whose down window is [1.5 s, 3 s) after t0; c is in
 * no group; d is in "us", a group no entry declares (a label).
 */
Test(mockprov_groups, a_groups_down_window_closes_every_member, .timeout = 30)
{
	static const char config[] =
		"{\"providers\":["
		"{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"," TIMING "},"
		"{\"name\":\"b\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"," TIMING "},"
		"{\"name\":\"c\",\"listen\":\"127.0.0.1:0\"," TIMING "},"
		"{\"name\":\"d\",\"listen\":\"127.0.0.1:0\",\"group\":\"us\"," TIMING "}],"
		"\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"down\",\"from_s\":1.5,\"to_s\":3}]}}}";
	int64_t t0 = unix_ms();
	const cJSON *p;
	const cJSON *f;
	cJSON *st;

	cr_assert_eq(mock_start(&mock, config, t0), 0, "mockprov did not start");
	if (unix_now() < (double)t0 + 1200) {	/* a slow start has no time before the window */
		assert_answers("a", "before");
		assert_answers("b", "before");
	}
	wait_until(t0, 2250);
	assert_refused("a", "in the window");
	assert_refused("b", "in the window");
	assert_answers("c", "in the window");
	assert_answers("d", "in the window");
	st = state();
	p = provider_state(st, "a");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(p, "listening")));
	cr_assert_str_eq(cJSON_GetObjectItem(p, "group")->valuestring, "eu");
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "faults"), 0);
	cr_assert_str_eq(cJSON_GetObjectItem(f, "kind")->valuestring, "down");
	cr_assert_str_eq(cJSON_GetObjectItem(f, "group")->valuestring, "eu");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(f, "active")));
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(provider_state(st, "b"), "listening")));
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(provider_state(st, "c"), "listening")));
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(provider_state(st, "d"), "faults")), 0,
		     "an undeclared group has no faults");
	cJSON_Delete(st);
	wait_until(t0, 3500);
	assert_answers("a", "after");
	assert_answers("b", "after");
	assert_answers("c", "after");
}

/*
 * A group's faults come after a member's own and log under their kind; a
 * probability is drawn for each member apart (their requests in the same
 * order meet different draws); the provider outside answers normally.
 */
Test(mockprov_groups, faults_in_the_log_and_draws_per_member, .timeout = 40)
{
	static const char config[] =
		"{\"providers\":["
		"{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"," TIMING ","
		"\"faults\":[{\"kind\":\"slow\",\"add_ms\":1,\"from_s\":-1000,\"to_s\":1000}]},"
		"{\"name\":\"b\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"," TIMING "},"
		"{\"name\":\"c\",\"listen\":\"127.0.0.1:0\"," TIMING "}],"
		"\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"status\",\"status\":503,"
		"\"probability\":0.5,\"from_s\":-1000,\"to_s\":1000}]}}}";
	char pattern[2][41];
	struct csv_table t;
	int faulted[2] = { 0, 0 };
	int i;
	int k;

	cr_assert_eq(mock_start(&mock, config, 0), 0, "mockprov did not start");
	for (i = 0; i < 40; i++) {
		for (k = 0; k < 2; k++) {
			long status = ask(k ? "b" : "a", NULL);

			cr_assert(status == 200 || status == 503, "status %ld", status);
			pattern[k][i] = status == 503 ? 'x' : '.';
			faulted[k] += status == 503;
		}
		cr_assert_eq(ask("c", NULL), 200);
	}
	pattern[0][40] = pattern[1][40] = '\0';
	for (k = 0; k < 2; k++)
		cr_assert(faulted[k] >= 8 && faulted[k] <= 32, "%s: %d of 40 faulted (%s)",
			  k ? "b" : "a", faulted[k], pattern[k]);
	cr_assert_str_neq(pattern[0], pattern[1], "the members drew alike: %s", pattern[0]);
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0);

	cr_assert_eq(mock_log(&mock, "a", &t), 0);
	cr_assert_eq(t.nrows, 41);
	for (i = 1; i < (int)t.nrows; i++) {
		bool hit = pattern[0][i - 1] == 'x';

		cr_assert_str_eq(csv_get(&t, (size_t)i, "fault"), hit ? "slow+status" : "slow",
				 "row %d: its own fault first, then the group's", i);
		cr_assert_str_eq(csv_get(&t, (size_t)i, "outcome"), hit ? "faulted" : "completed");
	}
	csv_free(&t);
	cr_assert_eq(mock_log(&mock, "b", &t), 0);
	for (i = 1; i < (int)t.nrows; i++)
		cr_assert_str_eq(csv_get(&t, (size_t)i, "fault"),
				 pattern[1][i - 1] == 'x' ? "status" : "", "row %d", i);
	csv_free(&t);
	cr_assert_eq(mock_log(&mock, "c", &t), 0);
	cr_assert_eq(t.nrows, 41);
	for (i = 1; i < (int)t.nrows; i++) {
		cr_assert_str_eq(csv_get(&t, (size_t)i, "fault"), "");
		cr_assert_str_eq(csv_get(&t, (size_t)i, "outcome"), "completed");
	}
	csv_free(&t);
}

/* --check-config: a group with no member, or a bad fault of a group, exits 2 naming the key. */
Test(mockprov_groups, check_config_names_the_group_key, .timeout = 20)
{
	static const struct { const char *json; const char *key; } cases[] = {
		{ "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\"}],"
		  "\"groups\":{\"eu\":{\"faults\":[]}}}", "groups.eu: no provider is in this group" },
		{ "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"}],"
		  "\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"down\",\"from_s\":1,\"to_s\":2,"
		  "\"probability\":0.5}]}}}", "groups.eu.faults[0].probability: not supported" },
		{ "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"}],"
		  "\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"bad_content\",\"violation\":\"odd\","
		  "\"from_s\":1,\"to_s\":2}]}}}", "groups.eu.faults[0].violation: expected one of" },
	};
	char dir[] = "/tmp/faultline-groups-XXXXXX";
	char path[300];
	char err[4096];
	size_t i;
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = { "mockprov", "--check-config", path, NULL };

		write_file(dir, "groups.json", cases[i].json, path, sizeof(path));
		rc = run_program(argv, err, sizeof(err), 10);
		cr_expect_eq(rc, 2, "[%zu] exit %d: %s", i, rc, err);
		cr_expect(strstr(err, path) && strstr(err, cases[i].key),
			  "[%zu] the file and %s are not named: %s", i, cases[i].key, err);
		unlink(path);
	}
	rmdir(dir);
}
