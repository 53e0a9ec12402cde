/*
 * bin/gateway's client keys and where it may listen: with auth.keys_env,
 * every endpoint but /healthz answers a request without one of the keys
 * with an OpenAI-style 401 (WWW-Authenticate: Bearer), counts it in
 * faultline_auth_failures_total, and sends nothing upstream; the right key
 * gets the provider's answer. A listen address that is not loopback is
 * refused (exit 2) without --allow-remote, and with it but no client keys;
 * with both the gateway serves (bound to 0.0.0.0, spoken to on 127.0.0.1).
 *
 * Configs are written with single quotes (gw_template turns them into
 * JSON); @NAME@ stands for mock provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define FAST "'ttft_ms':20,'jitter_ms':0,'token_ms':0,'output_tokens':8"
#define CHAT "/v1/chat/completions"

/* The client keys, and near misses. */
#define KEY1 "fl-client-key-one-7f3a9c2e51d04b68"
#define KEY2 "fl-client-key-two-0b6e4d2c9a7f1835"
#define WRONG "fl-client-key-one-7f3a9c2e51d04b69"

static const char *const key_env[] = { "FL_GWAUTH_KEY1=" KEY1, "FL_GWAUTH_KEY2=" KEY2, NULL };

#define MOCK "{'providers':[{'name':'primary','listen':'127.0.0.1:0'," FAST "}]}"
#define PROVIDERS "'providers':{'primary':{'base_url':'@primary@'}}," \
	"'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}"
#define AUTH "'auth':{'keys_env':['FL_GWAUTH_KEY1','FL_GWAUTH_KEY2']}"

/* ---- fixtures ---- */

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_auth, .fini = teardown);

/* ---- helpers ---- */

/*
 * A request to http://HOST:PORT + path (method NULL: POST of a chat body
 * for "chat"), with "Authorization: " auth unless auth is NULL. Asserted
 * to get an answer; held until teardown.
 */
static struct http_result *call(const char *hostport, const char *method, const char *path,
				const char *auth)
{
	struct http_result *r = gw_held_result(&held);
	char hauth[256];
	const char *hdrs[] = { hauth, NULL };
	char body[256];
	char url[256];
	struct http_opts o = { .method = method, .timeout_ms = 5000 };

	snprintf(hauth, sizeof(hauth), "Authorization: %s", auth ? auth : "");
	o.headers = auth ? hdrs : NULL;
	if (!method)
		o.body = gw_chat_body("chat", body, sizeof(body));
	snprintf(url, sizeof(url), "http://%s%s", hostport, path);
	cr_assert_eq(http_do(url, &o, r), 0);
	cr_assert_eq(r->code, CURLE_OK, "%s %s: curl %d %s", method ? method : "POST", path,
		     r->code, r->errbuf);
	return r;
}

/*
 * Asserts a 401 as OpenAI gives it — {"error":{"message","type":
 * "invalid_request_error","param":null,"code":"invalid_api_key"}} — with
 * WWW-Authenticate: Bearer …, error="invalid_token" when invalid; and that
 * neither key, nor the wrong one, is in the answer.
 */
static void expect_401(const struct http_result *r, const char *what, bool invalid)
{
	static const char *const secrets[] = { KEY1, KEY2, WRONG };
	const cJSON *e;
	cJSON *doc;
	char v[256];
	size_t i;

	cr_assert_eq(r->status, 401, "%s: %ld %s", what, r->status, r->body);
	doc = gw_held_doc(&held, gw_error_doc(r->body));
	cr_assert_not_null(doc, "%s: not an OpenAI-style error: %s", what, r->body);
	e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(e, "type"), "invalid_request_error", "%s: %s", what, r->body);
	cr_assert_str_eq(gw_json_str(e, "code"), "invalid_api_key", "%s: %s", what, r->body);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "param")), "%s: %s", what,
		  r->body);
	cr_assert(strstr(gw_json_str(e, "message"), "API key"), "%s: %s", what, r->body);
	cr_assert_not_null(http_header(r, "www-authenticate", v, sizeof(v)),
			   "%s: no WWW-Authenticate", what);
	cr_assert(strncmp(v, "Bearer", 6) == 0, "%s: WWW-Authenticate: %s", what, v);
	cr_assert_eq(strstr(v, "error=\"invalid_token\"") != NULL, invalid,
		     "%s: WWW-Authenticate: %s", what, v);
	for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		cr_assert_null(strstr(r->body, secrets[i]), "%s: a key in the body: %s", what,
			       r->body);
		cr_assert_null(strstr(r->headers, secrets[i]), "%s: a key in the headers: %s",
			       what, r->headers);
	}
}

/* ---- on loopback, with client keys ---- */

/*
 * A chat request without a key, with another scheme, or with a wrong key
 * gets a 401 and never reaches the provider; either configured key gets
 * the provider's answer. /v1/models, /admin/breakers, /metrics and an
 * unknown path need a key too; /healthz does not. /metrics counts the
 * refusals by reason, and the chat ones among the answers (status 401).
 */
Test(gateway_auth, loopback_with_keys_needs_one, .timeout = 30)
{
	static const char *const guarded[] = { "/v1/models", "/models", "/admin/breakers",
					       "/metrics", "/v1/nothing" };
	struct http_result *r;
	const char *text;
	char what[128];
	size_t i;
	const struct gw_opts o = { .env = key_env };

	gw_mock_start_template(&mock, MOCK);
	gw_start_template(&gw, "{" PROVIDERS "," AUTH "}", &mock, &o);

	/* Chat: 3 missing, 2 invalid. */
	expect_401(call(gw.addr, NULL, CHAT, NULL), "chat, no Authorization", false);
	expect_401(call(gw.addr, NULL, CHAT, "Basic Zm9vOmJhcg=="), "chat, Basic", false);
	expect_401(call(gw.addr, NULL, CHAT, "Bearer "), "chat, Bearer without a key", false);
	expect_401(call(gw.addr, NULL, CHAT, "Bearer " WRONG), "chat, a wrong key", true);
	expect_401(call(gw.addr, NULL, CHAT, "Bearer " KEY1 KEY2), "chat, both keys", true);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0,
		     "a refused request reached the provider");

	r = call(gw.addr, NULL, CHAT, "Bearer " KEY1);
	gw_expect_answer(r, "chat, the first key", "primary", 1);
	r = call(gw.addr, NULL, CHAT, "bearer " KEY2);
	gw_expect_answer(r, "chat, the second key, the scheme in lower case", "primary", 1);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 2);

	/* The other endpoints: 5 missing, 5 invalid; then answered with a key. */
	for (i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++) {
		snprintf(what, sizeof(what), "GET %s, no key", guarded[i]);
		expect_401(call(gw.addr, "GET", guarded[i], NULL), what, false);
		snprintf(what, sizeof(what), "GET %s, a wrong key", guarded[i]);
		expect_401(call(gw.addr, "GET", guarded[i], "Bearer " WRONG), what, true);
		r = call(gw.addr, "GET", guarded[i], "Bearer " KEY2);
		cr_assert_eq(r->status, strcmp(guarded[i], "/v1/nothing") ? 200 : 404,
			     "GET %s with a key: %ld %s", guarded[i], r->status, r->body);
	}
	r = call(gw.addr, "GET", "/healthz", NULL);
	cr_assert_eq(r->status, 200, "/healthz without a key: %ld %s", r->status, r->body);
	r = call(gw.addr, "GET", "/v1/healthz", "Bearer " WRONG);
	cr_assert_eq(r->status, 200, "/v1/healthz with a wrong key: %ld %s", r->status, r->body);

	r = call(gw.addr, "GET", "/metrics", "Bearer " KEY1);
	cr_assert_eq(r->status, 200, "%ld %s", r->status, r->body);
	text = r->body;
	cr_assert(strstr(text, "# TYPE faultline_auth_failures_total counter"), "%s", text);
	cr_assert_eq(gw_metric(text, "faultline_auth_failures_total", "reason=missing"), 8,
		     "missing: %g", gw_metric(text, "faultline_auth_failures_total",
					      "reason=missing"));
	cr_assert_eq(gw_metric(text, "faultline_auth_failures_total", "reason=invalid"), 7,
		     "invalid: %g", gw_metric(text, "faultline_auth_failures_total",
					      "reason=invalid"));
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=,status=401"), 5,
		     "chat answers 401: %g", gw_metric(text, "faultline_requests_total",
						       "alias=,status=401"));
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 2);
}

/* Without auth nothing is asked for, and the refusal counters are there, at 0. */
Test(gateway_auth, loopback_without_keys_asks_for_none, .timeout = 20)
{
	struct http_result *r;

	gw_mock_start_template(&mock, MOCK);
	gw_start_template(&gw, "{" PROVIDERS "}", &mock, NULL);
	gw_expect_answer(call(gw.addr, NULL, CHAT, NULL), "chat, no key", "primary", 1);
	gw_expect_answer(call(gw.addr, NULL, CHAT, "Bearer " WRONG), "chat, any key", "primary",
			 1);
	r = call(gw.addr, "GET", "/metrics", NULL);
	cr_assert_eq(r->status, 200, "%ld %s", r->status, r->body);
	cr_assert_eq(gw_metric(r->body, "faultline_auth_failures_total", "reason=missing"), 0,
		     "%s", r->body);
	cr_assert_eq(gw_metric(r->body, "faultline_auth_failures_total", "reason=invalid"), 0,
		     "%s", r->body);
}

/* ---- listening beyond loopback ---- */

#define ANY_PROVIDERS "'providers':{'p':{'base_url':'http://127.0.0.1:9/v1'}}," \
	"'models':{'chat':{'targets':[{'provider':'p','model':'m'}]}}"

/*
 * A refusal to start on the template tmpl: exit 2 within 5 s, stderr
 * holding each of needles (NULL-ended) and saying why, and no key.
 */
static void expect_refused(const char *what, const char *tmpl, const char *const *args,
			   const char *const *env, const char *const *needles)
{
	char cfg[1024];
	char path[256];
	char err[4096];
	size_t i;
	int rc;

	cr_assert_not_null(gw_template(cfg, sizeof(cfg), tmpl, NULL));
	rc = gw_run(cfg, args, env, path, sizeof(path), err, sizeof(err), 5000);
	cr_assert_eq(rc, 2, "%s: exit %d; stderr:\n%s", what, rc, err);
	for (i = 0; needles[i]; i++)
		cr_assert(strstr(err, needles[i]), "%s: no \"%s\" in:\n%s", what, needles[i], err);
	cr_assert(strstr(err, "would spend the providers' keys"), "%s: no why in:\n%s", what, err);
	cr_assert_null(strstr(err, KEY1), "%s: a key in:\n%s", what, err);
}

/* Not loopback without --allow-remote: refused, naming the flag or the file's key. */
Test(gateway_auth, remote_listen_needs_allow_remote, .timeout = 30)
{
	static const char *const flag_any[] = { "--listen", "0.0.0.0:0", NULL };
	static const char *const flag_v6[] = { "--listen", "[::]:0", NULL };
	static const char *const flag_says[] = {
		"gateway: --listen: expected a loopback address", "without --allow-remote",
		"\"0.0.0.0:0\"", NULL,
	};
	static const char *const file_says[] = {
		"gateway.json: listen: expected a loopback address", "without --allow-remote", NULL,
	};
	static const char *const v6_says[] = { "--listen: expected a loopback", "\"[::]:0\"",
					       NULL };

	expect_refused("--listen 0.0.0.0:0", "{" ANY_PROVIDERS "}", flag_any, NULL, flag_says);
	expect_refused("--listen [::]:0", "{" ANY_PROVIDERS "}", flag_v6, NULL, v6_says);
	expect_refused("--listen 0.0.0.0:0, with client keys",
		       "{" ANY_PROVIDERS ",'auth':{'keys_env':['FL_GWAUTH_KEY1']}}", flag_any,
		       key_env, flag_says);
	expect_refused("listen 0.0.0.0:0 in the config",
		       "{'listen':'0.0.0.0:0'," ANY_PROVIDERS "}", NULL, NULL, file_says);
}

/* --allow-remote and a listen that is not loopback, but no client keys: refused. */
Test(gateway_auth, remote_listen_needs_client_keys, .timeout = 30)
{
	static const char *const flag_any[] = { "--listen", "0.0.0.0:0", "--allow-remote", NULL };
	static const char *const remote[] = { "--allow-remote", NULL };
	static const char *const flag_says[] = {
		"gateway.json: auth.keys_env: missing", "0.0.0.0:0, from --listen", NULL,
	};
	static const char *const file_says[] = {
		"gateway.json: auth.keys_env: missing", "[::]:0, from listen", NULL,
	};
	static const char *const unset_says[] = {
		"gateway.json: auth.keys_env[0]:", "FL_GWAUTH_UNSET is not set", NULL,
	};
	static const char *const unset_env[] = { "FL_GWAUTH_UNSET", NULL };
	char cfg[1024];
	char path[256];
	char err[4096];
	int rc;

	expect_refused("--listen 0.0.0.0:0 --allow-remote", "{" ANY_PROVIDERS "}", flag_any, NULL,
		       flag_says);
	expect_refused("listen [::]:0 in the config, --allow-remote",
		       "{'listen':'[::]:0'," ANY_PROVIDERS "}", remote, NULL, file_says);
	/* A variable that is not set is refused at load, wherever it listens. */
	cr_assert_not_null(gw_template(cfg, sizeof(cfg), "{" ANY_PROVIDERS
				       ",'auth':{'keys_env':['FL_GWAUTH_UNSET']}}", NULL));
	rc = gw_run(cfg, flag_any, unset_env, path, sizeof(path), err, sizeof(err), 5000);
	cr_assert_eq(rc, 2, "an unset key variable: exit %d; stderr:\n%s", rc, err);
	cr_assert(strstr(err, unset_says[0]) && strstr(err, unset_says[1]), "%s", err);
}

/*
 * --allow-remote and client keys: it serves on 0.0.0.0 (spoken to here on
 * 127.0.0.1 only), asking for a key as on loopback.
 */
Test(gateway_auth, remote_listen_with_allow_remote_and_keys_serves, .timeout = 30)
{
	static const char *const args[] = { "--allow-remote", NULL };
	const struct gw_opts o = { .env = key_env, .args = args, .listen = "0.0.0.0:0" };
	char local[64];
	const char *port;
	struct http_result *r;

	gw_mock_start_template(&mock, MOCK);
	gw_start_template(&gw, "{" PROVIDERS "," AUTH "}", &mock, &o);
	cr_assert(strncmp(gw.addr, "0.0.0.0:", 8) == 0, "listening %s", gw.addr);
	port = gw.addr + 8;
	snprintf(local, sizeof(local), "127.0.0.1:%.8s", port);
	expect_401(call(local, NULL, CHAT, NULL), "chat, no key", false);
	expect_401(call(local, NULL, CHAT, "Bearer " WRONG), "chat, a wrong key", true);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0);
	r = call(local, NULL, CHAT, "Bearer " KEY1);
	gw_expect_answer(r, "chat, a key", "primary", 1);
	r = call(local, "GET", "/healthz", NULL);
	cr_assert_eq(r->status, 200);
	cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0);
}
