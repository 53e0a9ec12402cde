/*
 * mockprov's HTTP surface as a client sees it: bad requests get an
 * OpenAI-style 4xx, max_tokens, usage and prompt tokens behave like the real
 * API, strict_model rejects other models, and the admin API reports state,
 * validates and injects faults, and clears them per provider.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/support/harness.h"
#include "common/opt.h"
#include "tests/support/rawhttp.h"

/* p echoes any model; s only serves its own. */
static const char config[] =
	"{\"providers\":["
	"{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"model\":\"mock-small\","
	"\"ttft_ms\":5,\"token_ms\":1,\"output_tokens\":6},"
	"{\"name\":\"s\",\"listen\":\"127.0.0.1:0\",\"model\":\"mock-strict\","
	"\"strict_model\":true,\"ttft_ms\":5,\"token_ms\":1,\"output_tokens\":4}]}";

/* The output of p: the first six words of the mock's text. */
#define P_TEXT "Lorem ipsum dolor sit amet consectetur"

/* The mock a test started; teardown stops it even after a failed assert. */
static struct mock_proc mock;

static void teardown(void)
{
	mock_cleanup(&mock);
}

static void start(void)
{
	cr_assert_eq(mock_start(&mock, config, 0), 0, "mockprov did not start");
}

/* ---- requests ---- */

/* Ends the test when no answer came (freeing r first, so nothing leaks). */
static void expect_transfer(struct http_result *r, const char *method, const char *url)
{
	char why[CURL_ERROR_SIZE];

	if (r->code == CURLE_OK)
		return;
	snprintf(why, sizeof(why), "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->code));
	http_result_free(r);
	cr_assert_fail("%s %s: %s", method, url, why);
}

/* POSTs body to a provider's path; headers may be NULL. */
static void post(const char *prov, const char *path, const char *body,
		 const char *const *headers, struct http_result *r)
{
	struct http_opts o = { .body = body, .headers = headers };
	char url[160];

	mock_url(&mock, prov, path, url, sizeof(url));
	cr_assert_eq(http_do(url, &o, r), 0);
	expect_transfer(r, "POST", url);
}

/* Any method on a provider's path, without a body. */
static void request(const char *prov, const char *method, const char *path,
		    struct http_result *r)
{
	struct http_opts o = { .method = method };
	char url[160];

	mock_url(&mock, prov, path, url, sizeof(url));
	cr_assert_eq(http_do(url, &o, r), 0);
	expect_transfer(r, method, url);
}

/* A request to the admin API; body may be NULL. */
static void admin(const char *method, const char *path, const char *body,
		  struct http_result *r)
{
	struct http_opts o = { .method = method, .body = body };
	char url[160];

	cr_assert(mock.admin_addr[0], "mockprov printed no admin address");
	snprintf(url, sizeof(url), "http://%s%s", mock.admin_addr, path);
	cr_assert_eq(http_do(url, &o, r), 0);
	expect_transfer(r, method, url);
}

/* A chat request body: one user message, then `extra` members (",…" or ""). */
static const char *chat_req(const char *model, const char *content, const char *extra,
			    char *out, size_t len)
{
	snprintf(out, len, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		 "\"content\":\"%s\"}]%s}", model, content, extra);
	return out;
}

/* ---- reading answers ---- */

static cJSON *body_json(const struct http_result *r)
{
	cJSON *root = cJSON_Parse(r->body);

	cr_assert_not_null(root, "the body is not JSON: %s", r->body);
	return root;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static double num(const cJSON *obj, const char *key)
{
	const cJSON *v = get(obj, key);

	cr_assert(cJSON_IsNumber(v), "\"%s\" is not a number", key);
	return v->valuedouble;
}

static const char *str(const cJSON *obj, const char *key)
{
	const cJSON *v = get(obj, key);

	cr_assert(cJSON_IsString(v), "\"%s\" is not a string", key);
	return v->valuestring;
}

/*
 * Checks an OpenAI-style error: the status, a JSON content type, and
 * {"error":{"message":"…","type":"invalid_request_error","param":param,…}}
 * (param NULL: null; code NULL: not checked). `what` names the case.
 */
static void expect_error(const struct http_result *r, long status, const char *type,
			 const char *param, const char *code, const char *what)
{
	char ct[128];
	cJSON *root;
	const cJSON *e;
	const cJSON *v;

	cr_expect_eq(r->status, status, "[%s] status %ld, body %s", what, r->status, r->body);
	cr_expect(http_header(r, "content-type", ct, sizeof(ct)) &&
		  strncmp(ct, "application/json", 16) == 0, "[%s] content type", what);
	root = cJSON_Parse(r->body);
	cr_assert_not_null(root, "[%s] the body is not JSON: %s", what, r->body);
	e = get(root, "error");
	cr_expect(cJSON_IsObject(e), "[%s] no error object: %s", what, r->body);
	v = get(e, "message");
	cr_expect(cJSON_IsString(v) && v->valuestring[0], "[%s] no message: %s", what, r->body);
	v = get(e, "type");
	cr_expect(cJSON_IsString(v) && strcmp(v->valuestring, type) == 0,
		  "[%s] type is not %s: %s", what, type, r->body);
	v = get(e, "param");
	if (param)
		cr_expect(cJSON_IsString(v) && strcmp(v->valuestring, param) == 0,
			  "[%s] param is not \"%s\": %s", what, param, r->body);
	else
		cr_expect(cJSON_IsNull(v), "[%s] param is not null: %s", what, r->body);
	if (code) {
		v = get(e, "code");
		cr_expect(cJSON_IsString(v) && strcmp(v->valuestring, code) == 0,
			  "[%s] code is not \"%s\": %s", what, code, r->body);
	}
	cJSON_Delete(root);
}

/* A non-streaming answer, read. */
struct answer {
	char content[512];
	char finish[32];
	char model[64];
	int prompt_tokens;
	int completion_tokens;
};

static void read_answer(const struct http_result *r, struct answer *a)
{
	cJSON *root = body_json(r);
	const cJSON *c = cJSON_GetArrayItem(get(root, "choices"), 0);
	const cJSON *u = get(root, "usage");

	memset(a, 0, sizeof(*a));
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert_not_null(c, "no choices: %s", r->body);
	snprintf(a->content, sizeof(a->content), "%s", str(get(c, "message"), "content"));
	snprintf(a->finish, sizeof(a->finish), "%s", str(c, "finish_reason"));
	snprintf(a->model, sizeof(a->model), "%s", str(root, "model"));
	a->prompt_tokens = (int)num(u, "prompt_tokens");
	a->completion_tokens = (int)num(u, "completion_tokens");
	cr_expect_eq(num(u, "total_tokens"), a->prompt_tokens + a->completion_tokens);
	cJSON_Delete(root);
}

/* A streamed answer, read. */
struct stream {
	char content[512];		/* the deltas' contents concatenated */
	int content_chunks;
	char finish[32];		/* the last non-null finish_reason */
	char model[64];
	int usage_chunks;
	bool usage_choices_empty;	/* the usage chunk had "choices": [] */
	int prompt_tokens;
	int completion_tokens;
	bool done_last;			/* [DONE] ends it */
	bool usage_before_done;		/* the usage chunk is the one before [DONE] */
};

static void read_stream(const struct http_result *r, struct stream *s)
{
	char **ev;
	size_t nerr;
	size_t n = sse_parse(r->body, &ev, &nerr);
	size_t i;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_expect_eq(nerr, 0, "error events: %s", r->body);
	for (i = 0; i < n; i++) {
		cJSON *chunk;
		const cJSON *c;
		const cJSON *u;
		const cJSON *v;

		if (strcmp(ev[i], "[DONE]") == 0) {
			s->done_last = i + 1 == n;
			continue;
		}
		chunk = cJSON_Parse(ev[i]);
		cr_assert_not_null(chunk, "chunk %zu is not JSON: %s", i, ev[i]);
		snprintf(s->model, sizeof(s->model), "%s", str(chunk, "model"));
		u = get(chunk, "usage");
		if (cJSON_IsObject(u)) {
			s->usage_chunks++;
			s->usage_choices_empty = cJSON_IsArray(get(chunk, "choices")) &&
						 cJSON_GetArraySize(get(chunk, "choices")) == 0;
			s->prompt_tokens = (int)num(u, "prompt_tokens");
			s->completion_tokens = (int)num(u, "completion_tokens");
			s->usage_before_done = i + 2 == n && strcmp(ev[n - 1], "[DONE]") == 0;
		}
		c = cJSON_GetArrayItem(get(chunk, "choices"), 0);
		v = get(get(c, "delta"), "content");
		if (cJSON_IsString(v)) {
			size_t used = strlen(s->content);

			snprintf(s->content + used, sizeof(s->content) - used, "%s", v->valuestring);
			s->content_chunks++;
		}
		v = get(c, "finish_reason");
		if (cJSON_IsString(v))
			snprintf(s->finish, sizeof(s->finish), "%s", v->valuestring);
		cJSON_Delete(chunk);
	}
	sse_free(ev, n);
}

/* ---- admin state ---- */

static cJSON *get_state(void)
{
	struct http_result r;
	cJSON *root;

	admin("GET", "/state", NULL, &r);
	cr_assert_eq(r.status, 200, "GET /state: %ld %s", r.status, r.body);
	root = body_json(&r);
	http_result_free(&r);
	return root;
}

static const cJSON *state_provider(const cJSON *state, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, get(state, "providers")) {
		const cJSON *n = get(p, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return p;
	}
	cr_assert_fail("provider %s is not in /state", name);
	return NULL;
}

/* Whether /state says the provider's listener is open. */
static bool state_listening(const char *name)
{
	cJSON *st = get_state();
	bool v = cJSON_IsTrue(get(state_provider(st, name), "listening"));

	cJSON_Delete(st);
	return v;
}

static int state_nfaults(const char *name)
{
	cJSON *st = get_state();
	int n = cJSON_GetArraySize(get(state_provider(st, name), "faults"));

	cJSON_Delete(st);
	return n;
}

/* Connects to HOST:PORT once. Returns 0 or the errno of connect(). */
static int try_connect(const char *hostport)
{
	struct sockaddr_storage a;
	int fd;
	int rc = 0;

	cr_assert_eq(opt_parse_hostport(hostport, &a), 0, "address %s", hostport);
	fd = socket(a.ss_family, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		rc = errno;
	close(fd);
	return rc;
}

/* ---- bad requests ---- */

struct bad_request {
	const char *name;
	const char *body;
	const char *param;	/* NULL: "param": null */
};

static const struct bad_request bad_requests[] = {
	{ "body not JSON", "this is not json", NULL },
	{ "empty body", "", NULL },
	{ "JSON array, not an object", "[1,2,3]", NULL },
	{ "JSON string, not an object", "\"hello\"", NULL },
	{ "missing model", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "model" },
	{ "model not a string",
	  "{\"model\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "model" },
	{ "empty model", "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
	  "model" },
	{ "missing messages", "{\"model\":\"mock-small\"}", "messages" },
	{ "messages not an array", "{\"model\":\"mock-small\",\"messages\":\"hi\"}", "messages" },
	{ "empty messages", "{\"model\":\"mock-small\",\"messages\":[]}", "messages" },
	{ "stream a string",
	  "{\"model\":\"m\",\"stream\":\"yes\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "stream" },
	{ "stream a number",
	  "{\"model\":\"m\",\"stream\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "stream" },
	{ "stream null",
	  "{\"model\":\"m\",\"stream\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "stream" },
	{ "trailing garbage after the object",
	  "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}garbage",
	  NULL },
	{ "two objects in a row",
	  "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
	  "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"y\"}]}",
	  NULL },
	{ "max_tokens 0",
	  "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "max_tokens" },
	{ "max_tokens 1.5",
	  "{\"model\":\"m\",\"max_tokens\":1.5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "max_tokens" },
	{ "max_tokens negative",
	  "{\"model\":\"m\",\"max_tokens\":-4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "max_tokens" },
	{ "max_tokens a string",
	  "{\"model\":\"m\",\"max_tokens\":\"8\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	  "max_tokens" },
};
#define NBAD (sizeof(bad_requests) / sizeof(bad_requests[0]))

Test(mockprov_api, bad_requests_get_400_and_are_logged, .timeout = 30, .fini = teardown)
{
	const char *hdrs[] = { "x-request-id: bad", NULL };
	struct http_result r;
	struct csv_table log;
	size_t i;

	start();
	for (i = 0; i < NBAD; i++) {
		post("p", "/v1/chat/completions", bad_requests[i].body, hdrs, &r);
		expect_error(&r, 400, "invalid_request_error", bad_requests[i].param, NULL,
			     bad_requests[i].name);
		http_result_free(&r);
	}
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0);
	cr_assert_eq(mock_log(&mock, "p", &log), 0);
	cr_assert_eq(log.nrows, NBAD + 1, "%zu rows for %zu bad requests", log.nrows - 1, NBAD);
	for (i = 1; i < log.nrows; i++) {
		cr_expect_str_eq(csv_get(&log, i, "status"), "400", "row %zu", i);
		cr_expect_str_eq(csv_get(&log, i, "request_id"), "bad", "row %zu", i);
		cr_expect_str_eq(csv_get(&log, i, "tokens_out"), "0", "row %zu", i);
	}
	csv_free(&log);
}

/*
 * A raw NUL byte in the body — after the object, between its members
 * (where cJSON takes it for white space) or inside a string (where it
 * would cut the string short) — is not JSON: 400, as for any bad body.
 * The bodies go out on a plain socket, as a C string cannot carry them.
 */
Test(mockprov_api, nul_byte_in_the_body_gets_400, .timeout = 20, .fini = teardown)
{
	static const struct {
		const char *name;
		const char *body;
		size_t len;
	} cases[] = {
#define RAW(name, lit) { name, lit, sizeof(lit) - 1 }
		RAW("NUL after the object",
		    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\0"),
		RAW("NUL between members",
		    "{\"model\":\"m\",\0\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
		RAW("NUL inside a string",
		    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\0y\"}]}"),
#undef RAW
	};
	struct raw_http c;
	char head[256];
	char ct[64];
	const cJSON *e;
	cJSON *root;
	size_t i;
	int n;

	start();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = snprintf(head, sizeof(head), "POST /v1/chat/completions HTTP/1.1\r\n"
			     "Host: x\r\nContent-Type: application/json\r\n"
			     "Content-Length: %zu\r\n\r\n", cases[i].len);
		cr_assert_eq(raw_open(&c, mock_addr(&mock, "p"), 0), 0);
		cr_assert_eq(raw_send(&c, head, (size_t)n), 0);
		cr_assert_eq(raw_send(&c, cases[i].body, cases[i].len), 0);
		cr_assert_eq(raw_read(&c, NULL, NULL, 5000), 0, "[%s] no whole answer: %s",
			     cases[i].name, raw_tail(&c, 300));
		cr_expect_eq(c.status, 400, "[%s] status %d: %s", cases[i].name, c.status,
			     raw_tail(&c, 300));
		cr_expect(raw_header(&c, "content-type", ct, sizeof(ct)) &&
			  strncmp(ct, "application/json", 16) == 0, "[%s] content type",
			  cases[i].name);
		root = cJSON_Parse(c.body.data ? c.body.data : "");
		e = get(root, "error");
		cr_expect(cJSON_IsString(get(e, "type")) &&
			  strcmp(get(e, "type")->valuestring, "invalid_request_error") == 0,
			  "[%s] not an OpenAI-style error: %s", cases[i].name, raw_tail(&c, 300));
		cJSON_Delete(root);
		raw_free(&c);
	}
}

/* The error must name the parameter the client sent, not its older alias. */
Test(mockprov_api, bad_max_completion_tokens_is_named, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	char body[256];

	start();
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_completion_tokens\":0", body, sizeof(body)),
	     NULL, &r);
	expect_error(&r, 400, "invalid_request_error", "max_completion_tokens", NULL,
		     "max_completion_tokens 0");
	http_result_free(&r);
}

Test(mockprov_api, unknown_path_404_and_wrong_method_405, .timeout = 20, .fini = teardown)
{
	static const struct {
		const char *method;
		const char *path;
		long status;
	} cases[] = {
		{ "GET", "/nope", 404 },
		{ "POST", "/v1/completions", 404 },
		{ "POST", "/v1/chat/completions/extra", 404 },
		{ "GET", "/v2/models", 404 },
		{ "GET", "/v1/chat/completions", 405 },
		{ "PUT", "/chat/completions", 405 },
		{ "POST", "/v1/models", 405 },
		{ "DELETE", "/models", 405 },
	};
	struct http_result r;
	char what[96];
	size_t i;

	start();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(what, sizeof(what), "%s %s", cases[i].method, cases[i].path);
		request("p", cases[i].method, cases[i].path, &r);
		expect_error(&r, cases[i].status, "invalid_request_error", NULL, NULL, what);
		http_result_free(&r);
	}
}

/* RFC 9110 §15.5.6: a 405 MUST carry an Allow header with the methods served. */
Test(mockprov_api, method_not_allowed_says_allow, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	char v[64];

	start();
	request("p", "GET", "/v1/chat/completions", &r);
	cr_expect_eq(r.status, 405);
	cr_expect(http_header(&r, "allow", v, sizeof(v)) && strstr(v, "POST"),
		  "no Allow: POST header in: %s", r.headers);
	http_result_free(&r);
	request("p", "POST", "/v1/models", &r);
	cr_expect_eq(r.status, 405);
	cr_expect(http_header(&r, "allow", v, sizeof(v)) && strstr(v, "GET"),
		  "no Allow: GET header in: %s", r.headers);
	http_result_free(&r);
}

/* ---- answers ---- */

Test(mockprov_api, max_tokens_caps_the_answer, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	struct answer a;
	struct stream s;
	char body[256];

	start();
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_tokens\":3", body, sizeof(body)), NULL, &r);
	read_answer(&r, &a);
	cr_expect_eq(a.completion_tokens, 3);
	cr_expect_str_eq(a.finish, "length");
	cr_expect_str_eq(a.content, "Lorem ipsum dolor");
	http_result_free(&r);

	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_tokens\":3,\"stream\":true,"
		      "\"stream_options\":{\"include_usage\":true}", body, sizeof(body)), NULL, &r);
	read_stream(&r, &s);
	cr_expect_eq(s.content_chunks, 3);
	cr_expect_str_eq(s.content, "Lorem ipsum dolor");
	cr_expect_str_eq(s.finish, "length");
	cr_expect_eq(s.completion_tokens, 3);
	http_result_free(&r);

	/* max_completion_tokens is the newer name of the same cap. */
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_completion_tokens\":2", body, sizeof(body)),
	     NULL, &r);
	read_answer(&r, &a);
	cr_expect_eq(a.completion_tokens, 2);
	cr_expect_str_eq(a.finish, "length");
	http_result_free(&r);

	/* A cap at or above output_tokens changes nothing. */
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_tokens\":6", body, sizeof(body)), NULL, &r);
	read_answer(&r, &a);
	cr_expect_eq(a.completion_tokens, 6);
	cr_expect_str_eq(a.finish, "stop");
	http_result_free(&r);
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"max_tokens\":1000", body, sizeof(body)), NULL, &r);
	read_answer(&r, &a);
	cr_expect_eq(a.completion_tokens, 6);
	cr_expect_str_eq(a.finish, "stop");
	http_result_free(&r);
}

Test(mockprov_api, include_usage_decides_the_usage_chunk, .timeout = 20, .fini = teardown)
{
	static const char *const extras[] = {
		",\"stream\":true",
		",\"stream\":true,\"stream_options\":{\"include_usage\":false}",
		",\"stream\":true,\"stream_options\":{}",
	};
	struct http_result r;
	struct stream s;
	char body[256];
	size_t i;

	start();
	for (i = 0; i < sizeof(extras) / sizeof(extras[0]); i++) {
		post("p", "/v1/chat/completions",
		     chat_req("mock-small", "hi", extras[i], body, sizeof(body)), NULL, &r);
		read_stream(&r, &s);
		cr_expect_eq(s.usage_chunks, 0, "usage sent for %s: %s", extras[i], r.body);
		cr_expect(s.done_last, "no [DONE] at the end: %s", r.body);
		cr_expect_str_eq(s.content, P_TEXT);
		http_result_free(&r);
	}

	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "abcdefgh", ",\"stream\":true,"
		      "\"stream_options\":{\"include_usage\":true}", body, sizeof(body)), NULL, &r);
	read_stream(&r, &s);
	cr_expect_eq(s.usage_chunks, 1, "%s", r.body);
	cr_expect(s.usage_choices_empty, "the usage chunk has choices: %s", r.body);
	cr_expect(s.usage_before_done, "the usage chunk is not just before [DONE]: %s", r.body);
	cr_expect(s.done_last, "%s", r.body);
	cr_expect_eq(s.prompt_tokens, 2);
	cr_expect_eq(s.completion_tokens, 6);
	http_result_free(&r);
}

Test(mockprov_api, prompt_tokens_are_chars_over_4_rounded_up, .timeout = 20, .fini = teardown)
{
	static const int lengths[] = { 1, 3, 4, 5, 8, 9, 101, 400 };
	struct http_result r;
	struct answer a;
	char content[512];
	char body[1024];
	size_t i;

	start();
	for (i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		int n = lengths[i];

		memset(content, 'a', (size_t)n);
		content[n] = '\0';
		post("p", "/v1/chat/completions", chat_req("mock-small", content, "", body,
							   sizeof(body)), NULL, &r);
		read_answer(&r, &a);
		cr_expect_eq(a.prompt_tokens, (n + 3) / 4, "%d chars gave %d prompt tokens", n,
			     a.prompt_tokens);
		http_result_free(&r);
	}
	/* Characters are counted over all messages: 5 + 5 is 3 tokens, not 2 + 2. */
	post("p", "/v1/chat/completions",
	     "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"abcde\"},"
	     "{\"role\":\"user\",\"content\":\"fghij\"}]}", NULL, &r);
	read_answer(&r, &a);
	cr_expect_eq(a.prompt_tokens, 3);
	http_result_free(&r);
}

Test(mockprov_api, stream_deltas_add_up_to_the_json_answer, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	struct answer a;
	struct stream s;
	char body[256];

	start();
	post("p", "/v1/chat/completions", chat_req("mock-small", "hi", "", body, sizeof(body)),
	     NULL, &r);
	read_answer(&r, &a);
	http_result_free(&r);
	post("p", "/v1/chat/completions",
	     chat_req("mock-small", "hi", ",\"stream\":true", body, sizeof(body)), NULL, &r);
	read_stream(&r, &s);
	http_result_free(&r);

	cr_expect_str_eq(s.content, a.content);
	cr_expect_str_eq(a.content, P_TEXT);
	cr_expect_eq(s.content_chunks, a.completion_tokens);
	cr_expect_str_eq(s.finish, "stop");
	cr_expect_str_eq(a.finish, "stop");
}

Test(mockprov_api, strict_model_rejects_other_models, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	struct answer a;
	struct stream s;
	char body[256];

	start();
	post("s", "/v1/chat/completions", chat_req("gpt-4o", "hi", "", body, sizeof(body)),
	     NULL, &r);
	expect_error(&r, 404, "invalid_request_error", NULL, "model_not_found", "strict");
	cr_expect(strstr(r.body, "gpt-4o"), "the message does not name the model: %s", r.body);
	http_result_free(&r);

	post("s", "/v1/chat/completions", chat_req("mock-strict", "hi", "", body, sizeof(body)),
	     NULL, &r);
	read_answer(&r, &a);
	cr_expect_str_eq(a.model, "mock-strict");
	http_result_free(&r);

	/* Not strict (the default): whatever model was asked for is echoed. */
	post("p", "/v1/chat/completions", chat_req("gpt-4o", "hi", "", body, sizeof(body)),
	     NULL, &r);
	read_answer(&r, &a);
	cr_expect_str_eq(a.model, "gpt-4o");
	http_result_free(&r);
	post("p", "/v1/chat/completions",
	     chat_req("claude-x", "hi", ",\"stream\":true", body, sizeof(body)), NULL, &r);
	read_stream(&r, &s);
	cr_expect_str_eq(s.model, "claude-x");
	http_result_free(&r);
}

Test(mockprov_api, both_paths_and_healthz, .timeout = 20, .fini = teardown)
{
	static const char *const paths[] = { "/v1/chat/completions", "/chat/completions" };
	struct http_result r;
	struct answer a;
	char body[256];
	cJSON *root;
	size_t i;

	start();
	for (i = 0; i < 2; i++) {
		post("p", paths[i], chat_req("mock-small", "hi", "", body, sizeof(body)), NULL, &r);
		read_answer(&r, &a);
		cr_expect_str_eq(a.content, P_TEXT, "on %s", paths[i]);
		http_result_free(&r);
	}
	request("p", "GET", "/healthz", &r);
	cr_expect_eq(r.status, 200);
	root = body_json(&r);
	cr_expect_str_eq(str(root, "status"), "ok");
	cJSON_Delete(root);
	http_result_free(&r);
}

/* ---- request ids ---- */

Test(mockprov_api, request_id_is_echoed_and_logged, .timeout = 20, .fini = teardown)
{
	static const char *const ids[] = { "req-42", "", "with,comma \"and quotes\"" };
	struct http_result r;
	struct csv_table log;
	char hdr[160];
	char v[160];
	char body[256];
	size_t i;

	start();
	for (i = 0; i < 3; i++) {
		const char *hdrs[] = { hdr, NULL };
		bool has = ids[i][0] != '\0';

		snprintf(hdr, sizeof(hdr), "x-request-id: %s", ids[i]);
		post("p", "/v1/chat/completions",
		     chat_req("mock-small", "hi", i == 2 ? ",\"stream\":true" : "", body,
			      sizeof(body)), has ? hdrs : NULL, &r);
		cr_expect_eq(r.status, 200);
		if (has)
			cr_expect(http_header(&r, "x-request-id", v, sizeof(v)) &&
				  strcmp(v, ids[i]) == 0, "x-request-id not echoed: %s", r.headers);
		else
			cr_expect_null(http_header(&r, "x-request-id", v, sizeof(v)),
				       "an x-request-id came back unasked: %s", v);
		http_result_free(&r);
	}
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0);
	cr_assert_eq(mock_log(&mock, "p", &log), 0);
	cr_assert_eq(log.nrows, 4, "rows: %zu", log.nrows);
	for (i = 0; i < 3; i++)
		cr_expect_str_eq(csv_get(&log, i + 1, "request_id"), ids[i], "row %zu", i + 1);
	csv_free(&log);
}

/* Ids from tracing systems can be long; a truncated echo breaks correlation. */
Test(mockprov_api, long_request_id_is_echoed_whole, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	struct csv_table log;
	char id[201];
	char hdr[240];
	char v[256] = "";
	char body[256];
	const char *hdrs[] = { hdr, NULL };

	memset(id, 'r', 200);
	id[200] = '\0';
	snprintf(hdr, sizeof(hdr), "x-request-id: %s", id);
	start();
	post("p", "/v1/chat/completions", chat_req("mock-small", "hi", "", body, sizeof(body)),
	     hdrs, &r);
	cr_expect_eq(r.status, 200);
	cr_expect(http_header(&r, "x-request-id", v, sizeof(v)), "no x-request-id");
	cr_expect_eq(strlen(v), 200, "x-request-id came back with %zu of 200 chars", strlen(v));
	http_result_free(&r);
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0);
	cr_assert_eq(mock_log(&mock, "p", &log), 0);
	cr_assert_eq(log.nrows, 2);
	cr_expect_eq(strlen(csv_get(&log, 1, "request_id")), 200,
		     "the log holds %zu of 200 chars", strlen(csv_get(&log, 1, "request_id")));
	csv_free(&log);
}

/* ---- admin API ---- */

Test(mockprov_api, admin_state_counts_requests, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	char body[256];
	cJSON *st;
	const cJSON *p;
	const cJSON *s;
	int i;

	start();
	for (i = 0; i < 3; i++) {
		post("p", "/v1/chat/completions",
		     chat_req("mock-small", "hi", i == 2 ? ",\"stream\":true" : "", body,
			      sizeof(body)), NULL, &r);
		cr_expect_eq(r.status, 200);
		http_result_free(&r);
	}
	admin("POST", "/faults", "{\"provider\":\"p\",\"kind\":\"status\",\"status\":500,"
	      "\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_result_free(&r);
	for (i = 0; i < 2; i++) {
		post("p", "/v1/chat/completions", chat_req("mock-small", "hi", "", body,
							   sizeof(body)), NULL, &r);
		expect_error(&r, 500, "server_error", NULL, NULL, "injected status");
		http_result_free(&r);
	}

	st = get_state();
	cr_expect_eq(cJSON_GetArraySize(get(st, "providers")), 2);
	p = state_provider(st, "p");
	s = state_provider(st, "s");
	cr_expect_str_eq(str(p, "listen"), mock_addr(&mock, "p"));
	cr_expect_str_eq(str(s, "listen"), mock_addr(&mock, "s"));
	cr_expect(cJSON_IsTrue(get(p, "listening")));
	cr_expect(cJSON_IsTrue(get(s, "listening")));
	cr_expect_eq(num(p, "requests"), 5);
	cr_expect_eq(num(p, "completed"), 3);
	cr_expect_eq(num(p, "faulted"), 2);
	cr_expect_eq(num(p, "client_aborted"), 0);
	cr_expect_eq(num(p, "in_flight"), 0);
	cr_expect_eq(cJSON_GetArraySize(get(p, "faults")), 1);
	cr_expect_eq(num(s, "requests"), 0);
	cr_expect_eq(num(s, "completed"), 0);
	cr_expect_eq(num(s, "faulted"), 0);
	cr_expect_eq(cJSON_GetArraySize(get(s, "faults")), 0);
	cJSON_Delete(st);
}

Test(mockprov_api, admin_rejects_bad_faults, .timeout = 20, .fini = teardown)
{
	static const struct {
		const char *name;
		const char *body;
		long status;
		const char *mention;	/* the message must hold this */
	} cases[] = {
		{ "unknown provider", "{\"provider\":\"nope\",\"kind\":\"down\",\"duration_s\":1}",
		  404, "provider" },
		{ "missing provider", "{\"kind\":\"down\",\"duration_s\":1}", 400, "provider" },
		{ "body not JSON", "down for a bit", 400, "JSON" },
		{ "trailing bytes after the object",
		  "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":1} and more", 400, "JSON" },
		{ "bad kind", "{\"provider\":\"p\",\"kind\":\"explode\",\"duration_s\":1}", 400,
		  "kind" },
		{ "missing kind", "{\"provider\":\"p\",\"duration_s\":1}", 400, "kind" },
		{ "duration_s missing", "{\"provider\":\"p\",\"kind\":\"down\"}", 400, "duration_s" },
		{ "duration_s 0", "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":0}", 400,
		  "duration_s" },
		{ "duration_s negative", "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":-2}",
		  400, "duration_s" },
		{ "duration_s a string",
		  "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":\"5\"}", 400, "duration_s" },
		{ "from_s given",
		  "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":1,\"from_s\":0}", 400,
		  "from_s" },
		{ "to_s given",
		  "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":1,\"to_s\":9}", 400, "to_s" },
		{ "status out of range",
		  "{\"provider\":\"p\",\"kind\":\"status\",\"status\":200,\"duration_s\":1}", 400,
		  "status" },
		{ "probability on down",
		  "{\"provider\":\"p\",\"kind\":\"down\",\"probability\":0.5,\"duration_s\":1}", 400,
		  "probability" },
	};
	struct http_result r;
	size_t i;

	start();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		admin("POST", "/faults", cases[i].body, &r);
		expect_error(&r, cases[i].status, "invalid_request_error", NULL, NULL,
			     cases[i].name);
		cr_expect(strstr(r.body, cases[i].mention), "[%s] the message does not name %s: %s",
			  cases[i].name, cases[i].mention, r.body);
		http_result_free(&r);
	}
	/* Nothing was injected, and the provider still listens. */
	cr_expect_eq(state_nfaults("p"), 0);
	cr_expect_eq(state_nfaults("s"), 0);
	cr_expect(state_listening("p"));
}

Test(mockprov_api, admin_down_refuses_then_accepts, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	struct http_opts o = { .fresh_connection = true, .timeout_ms = 2000 };
	char url[160];
	char body[256];
	const char *addr;
	double injected;
	double end;
	int rc;
	cJSON *root;

	start();
	addr = mock_addr(&mock, "p");
	cr_assert_not_null(addr);
	cr_assert_eq(try_connect(addr), 0, "p does not accept before the fault");

	injected = now_ms();
	admin("POST", "/faults", "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":0.3}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	root = body_json(&r);
	cr_expect_str_eq(str(root, "provider"), "p");
	cr_expect_str_eq(str(get(root, "fault"), "kind"), "down");
	cJSON_Delete(root);
	http_result_free(&r);

	/* The listener closes before the admin answers: refused at once. */
	rc = try_connect(addr);
	cr_expect_eq(rc, ECONNREFUSED, "connect: %s", strerror(rc));
	mock_url(&mock, "p", "/v1/chat/completions", url, sizeof(url));
	o.body = chat_req("mock-small", "hi", "", body, sizeof(body));
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_expect_eq(r.code, CURLE_COULDNT_CONNECT, "curl: %s", r.errbuf);
	cr_expect_eq(r.os_errno, ECONNREFUSED, "errno %ld", r.os_errno);
	http_result_free(&r);
	cr_expect(!state_listening("p"), "/state says p listens while down");
	cr_expect(state_listening("s"), "s went down too");

	/* The window ends 0.3 s after injection: wait for the listener. */
	end = now_ms() + 5000;
	while ((rc = try_connect(addr)) == ECONNREFUSED && now_ms() < end)
		usleep(5000);	/* no event tells a client that a port reopened */
	cr_assert_eq(rc, 0, "p still refuses after 5 s: %s", strerror(rc));
	cr_expect(now_ms() - injected >= 290, "p came back after %.0f ms of a 300 ms window",
		  now_ms() - injected);
	cr_expect(state_listening("p"));
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_expect_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);
}

Test(mockprov_api, admin_delete_clears_one_provider, .timeout = 20, .fini = teardown)
{
	struct http_result r;
	char body[256];
	cJSON *root;

	start();
	admin("POST", "/faults", "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_result_free(&r);
	admin("POST", "/faults", "{\"provider\":\"s\",\"kind\":\"status\",\"status\":503,"
	      "\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_result_free(&r);
	cr_expect_eq(try_connect(mock_addr(&mock, "p")), ECONNREFUSED);

	admin("DELETE", "/faults?provider=nope", NULL, &r);
	expect_error(&r, 404, "invalid_request_error", NULL, NULL, "DELETE unknown provider");
	http_result_free(&r);
	cr_expect_eq(state_nfaults("p"), 1);
	cr_expect_eq(state_nfaults("s"), 1);

	admin("DELETE", "/faults?provider=p", NULL, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	root = body_json(&r);
	cr_expect_eq(num(root, "cleared"), 1);
	cJSON_Delete(root);
	http_result_free(&r);

	/* p is back at once and answers; s still fails. */
	cr_expect_eq(state_nfaults("p"), 0);
	cr_expect_eq(state_nfaults("s"), 1);
	cr_expect(state_listening("p"));
	post("p", "/v1/chat/completions", chat_req("mock-small", "hi", "", body, sizeof(body)),
	     NULL, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);
	post("s", "/v1/chat/completions", chat_req("mock-strict", "hi", "", body, sizeof(body)),
	     NULL, &r);
	cr_expect_eq(r.status, 503, "%s", r.body);
	http_result_free(&r);

	/* Without a query every provider is cleared. */
	admin("DELETE", "/faults", NULL, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);
	post("s", "/v1/chat/completions", chat_req("mock-strict", "hi", "", body, sizeof(body)),
	     NULL, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);
}

/*
 * One look at /state for provider p: how many injected faults it lists,
 * and how many of those had expired by the state's own time, *t_ms
 * (there must be none); *others counts the others.
 */
static int injected_listed(int *expired, int *others, double *t_ms)
{
	cJSON *st = get_state();
	const cJSON *f;
	int n = 0;

	*t_ms = num(st, "t_ms");
	*expired = 0;
	*others = 0;
	cJSON_ArrayForEach(f, get(state_provider(st, "p"), "faults")) {
		if (!cJSON_IsTrue(get(f, "injected"))) {
			(*others)++;
			continue;
		}
		n++;
		if (num(f, "to_s") * 1000 <= *t_ms)
			(*expired)++;
	}
	cJSON_Delete(st);
	return n;
}

/*
 * Injected faults whose window has ended are dropped: /state never lists
 * one, and after many short injections the list holds only the live ones
 * (a long one injected first stays, and so does the config's own fault,
 * though its window is long past).
 */
Test(mockprov_api, admin_expired_injections_are_pruned, .timeout = 40, .fini = teardown)
{
	static const char cfg[] =
		"{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"ttft_ms\":1,"
		"\"faults\":[{\"kind\":\"slow\",\"add_ms\":1,\"from_s\":-10,\"to_s\":-5}]}]}";
	enum { ROUNDS = 4, PER_ROUND = 40 };
	struct http_result r;
	cJSON *root;
	double last_to_s;
	double t_ms;
	double end;
	int expired;
	int cfg_faults;
	int round;
	int n;
	int i;

	cr_assert_eq(mock_start(&mock, cfg, 0), 0, "mockprov did not start");
	admin("POST", "/faults", "{\"provider\":\"p\",\"kind\":\"slow\",\"add_ms\":2,"
	      "\"duration_s\":600}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	http_result_free(&r);
	for (round = 0; round < ROUNDS; round++) {
		last_to_s = 0;
		for (i = 0; i < PER_ROUND; i++) {
			admin("POST", "/faults", "{\"provider\":\"p\",\"kind\":\"slow\","
			      "\"add_ms\":1,\"duration_s\":0.2}", &r);
			cr_assert_eq(r.status, 201, "%s", r.body);
			root = body_json(&r);
			last_to_s = num(get(root, "fault"), "to_s");
			cJSON_Delete(root);
			http_result_free(&r);
		}
		/* At most this round's and the long one: earlier rounds are gone. */
		n = injected_listed(&expired, &cfg_faults, &t_ms);
		cr_expect_eq(expired, 0, "round %d: %d expired faults listed", round, expired);
		cr_expect_leq(n, PER_ROUND + 1, "round %d: %d injected faults listed", round, n);
		cr_expect_eq(cfg_faults, 1, "round %d: the config's fault is not listed", round);
		/* The round's windows end 0.2 s after each injection: wait for it
		 * on the state's clock, with a deadline. */
		end = now_ms() + 5000;
		do {
			n = injected_listed(&expired, &cfg_faults, &t_ms);
			cr_assert_eq(expired, 0, "round %d: %d expired faults listed", round,
				     expired);
			if (n == 1)
				break;
			usleep(10000);	/* a window's end sends no event to wait on */
		} while (now_ms() < end);
		cr_assert_eq(n, 1, "round %d: %d injected faults listed 5 s after the last "
			     "window (ending at %.3f s) closed", round, n, last_to_s);
		cr_expect_geq(t_ms, last_to_s * 1000, "round %d: faults dropped at %.3f s, "
			      "before the last window ended at %.3f s", round, t_ms / 1000,
			      last_to_s);
		cr_expect_eq(cfg_faults, 1, "round %d: the config's fault was dropped", round);
	}
}

Test(mockprov_api, admin_unknown_path_404, .timeout = 20, .fini = teardown)
{
	static const char *const reqs[][2] = {
		{ "GET", "/nope" },
		{ "GET", "/v1/chat/completions" },
		{ "GET", "/" },
		{ "GET", "/state/extra" },
	};
	struct http_result r;
	char what[64];
	size_t i;

	start();
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		snprintf(what, sizeof(what), "%s %s", reqs[i][0], reqs[i][1]);
		admin(reqs[i][0], reqs[i][1], NULL, &r);
		expect_error(&r, 404, "invalid_request_error", NULL, NULL, what);
		http_result_free(&r);
	}
	admin("DELETE", "/faults?bogus=1", NULL, &r);
	expect_error(&r, 400, "invalid_request_error", NULL, NULL, "DELETE bad query");
	http_result_free(&r);
}
