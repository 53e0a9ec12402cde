/*
 * bin/gateway's streaming ("stream": true) as a client sees it, against
 * real mock providers on loopback (README, gateway, "Streaming"): a clean
 * relay with the headers sent at the commit; failing over before the
 * first content (no first token in time, a cut, an error event, a reset,
 * a 5xx, a broken frame) into one clean stream from the secondary; the
 * upstream's own 4xx handed back; after the commit, every break (a stall,
 * a cut, an error event, a reset) ending in an SSE error event and the
 * end of the chunked answer, never a clean close; a client that leaves
 * cancelling its upstream; 500 streams at once; a slow reader holding the
 * upstream back instead of the gateway buffering it; the cost trailer;
 * a stream longer than the attempt's timeouts; a drain; and the official
 * openai SDK (node) as the client.
 *
 * Where bytes or timing matter the client is tests/support/rawhttp (a
 * plain socket, which reads only when told to). mockprov's content is a
 * fixed word sequence (README, mockprov, "Timing model and token counts"),
 * so each content chunk can be checked as token k; the healthy test also
 * checks it against mockprov asked directly.
 *
 * Configs are written with single quotes (gw_template turns them into
 * JSON); @NAME@ stands for mock provider NAME's base_url.
 */
#define _GNU_SOURCE	/* strcasestr */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/nodeclient.h"
#include "tests/support/rawhttp.h"
#include "tests/support/scriptstub.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define CHAT_PATH "/v1/chat/completions"
/* A request's one message: 14 bytes, so 4 prompt tokens (README, mockprov). */
#define MESSAGE "[{\"role\":\"user\",\"content\":\"Say something.\"}]"
#define PROMPT_TOKENS 4
/* The text mockprov's error_event sends (its README names the code). */
#define MOCK_ERROR_MESSAGE "The server had an error while processing your request."
/* An Anthropic-dialect provider's error event's message (docs/mockprov.md). */
#define MOCK_OVERLOADED_MESSAGE "Overloaded"

/* ---- fixtures: what a test started or read, undone by teardown ---- */

static struct mock_proc mock;
static struct gw_proc gw;

#define MAX_HELD 64
static struct raw_http *conns[MAX_HELD];
static size_t nconns;
static struct gw_held held;
static struct script_stub stubs[8];
static size_t nstubs;

static void teardown(void)
{
	size_t i;

	gw_cleanup();
	mock_cleanup(&mock);
	for (i = 0; i < nstubs; i++)
		script_stub_stop(&stubs[i]);
	for (i = 0; i < nconns; i++) {
		raw_free(conns[i]);
		free(conns[i]);
	}
	gw_held_free(&held);
	nconns = nstubs = 0;
}

TestSuite(gateway_stream, .fini = teardown);

/* ---- starting things ---- */

static void start_mock(const char *tmpl)
{
	gw_mock_start_template(&mock, tmpl);
}

static void start_gw(const char *tmpl)
{
	gw_start_template(&gw, tmpl, &mock, NULL);
}

/* ---- requests ---- */

/* A streaming request body for model; with include_usage, stream_options asks for usage. */
static const char *stream_body(const char *model, bool include_usage, char *out, size_t len)
{
	snprintf(out, len, "{\"model\":\"%s\",\"stream\":true,%s\"messages\":" MESSAGE "}", model,
		 include_usage ? "\"stream_options\":{\"include_usage\":true}," : "");
	return out;
}

/* A new connection to addr (held until teardown), rcvbuf as raw_open takes it. */
static struct raw_http *open_conn(const char *addr, int rcvbuf)
{
	struct raw_http *c = calloc(1, sizeof(*c));

	cr_assert_not_null(c);
	cr_assert_lt(nconns, MAX_HELD);
	cr_assert_eq(raw_open(c, addr, rcvbuf), 0, "cannot connect to %s", addr);
	conns[nconns++] = c;
	return c;
}

/*
 * Sends a streaming chat request for model to addr on a raw connection
 * (HTTP/1.minor), with x-request-id rid. Returns the connection, nothing
 * read yet.
 */
static struct raw_http *send_stream(const char *addr, const char *model, const char *rid,
				    bool include_usage, int minor, int rcvbuf)
{
	char body[512];
	char hrid[160];
	const char *hdrs[] = { hrid, NULL };
	struct raw_http *c = open_conn(addr, rcvbuf);

	snprintf(hrid, sizeof(hrid), "x-request-id: %s", rid);
	cr_assert_eq(raw_post(c, CHAT_PATH, minor, hdrs,
			      stream_body(model, include_usage, body, sizeof(body))), 0,
		     "%s: cannot send the request", rid);
	return c;
}

/* send_stream to the gateway for alias "chat", over HTTP/1.1, read to its end. */
static struct raw_http *gw_stream(const char *alias, const char *rid, bool include_usage,
				  double timeout_ms)
{
	struct raw_http *c = send_stream(gw.addr, alias, rid, include_usage, 1, 0);

	raw_read(c, NULL, NULL, timeout_ms);
	return c;
}

/* A response header, or "(absent)". */
static const char *hdr(const struct raw_http *c, const char *name, char *out, size_t len)
{
	const char *v = raw_header(c, name, out, len);

	return v ? v : "(absent)";
}

static double hdr_num(const struct raw_http *c, const char *name)
{
	char v[64];
	char *end;
	double d;

	if (!raw_header(c, name, v, sizeof(v)))
		return NAN;
	d = strtod(v, &end);
	return end == v || *end ? NAN : d;
}

/* ---- what a stream held ---- */

/* mockprov's fixed words: token k is words[k % 20], after a space but for k = 0. */
static const char *const words[] = {
	"Lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
	"elit", "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore",
	"et", "dolore", "magna", "aliqua", "enim",
};

static const char *token_text(size_t k, char *out, size_t len)
{
	snprintf(out, len, "%s%s", k ? " " : "", words[k % (sizeof(words) / sizeof(words[0]))]);
	return out;
}

/* What the events of one stream were, as a client reads them. */
struct stream_view {
	size_t nevents;
	size_t ncontent;		/* chunks with non-empty delta.content */
	long bad_token;			/* the first content chunk that is not token k; -1 */
	char bad_text[128];		/* its text */
	double last_content_ms;		/* arrival of the last content chunk */
	long finish_at;			/* event index of the first finish_reason; -1 */
	char finish_reason[16];
	long usage_at;			/* event index of the (last) chunk with a usage object; -1 */
	double prompt_tokens, completion_tokens;	/* of that usage */
	long done_at;			/* event index of data: [DONE]; -1 */
	size_t ndone;
	long error_at;			/* event index of the first "event: error"; -1 */
	size_t nerrors;
	double error_ms;
	char error_data[1024];		/* its data */
	long invalid_at;		/* the first data that is not JSON (not [DONE]); -1 */
	long role_only;			/* chunks whose delta is only a role */
};

/* Reads a chunk's delta: its content (NULL when none) and whether it has only a role. */
static void note_chunk(struct stream_view *v, const cJSON *doc, size_t i, double at)
{
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
	const cJSON *choice = cJSON_GetArrayItem(choices, 0);
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(choice, "delta");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(delta, "content");
	const cJSON *finish = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");

	if (cJSON_IsString(content) && content->valuestring[0]) {
		char want[64];

		if (v->bad_token < 0 &&
		    strcmp(content->valuestring, token_text(v->ncontent, want, sizeof(want)))) {
			v->bad_token = (long)v->ncontent;
			snprintf(v->bad_text, sizeof(v->bad_text), "%s", content->valuestring);
		}
		v->ncontent++;
		v->last_content_ms = at;
	} else if (cJSON_IsObject(delta) && cJSON_GetArraySize(delta) == 1 &&
		   cJSON_GetObjectItemCaseSensitive(delta, "role")) {
		v->role_only++;
	}
	if (cJSON_IsString(finish) && v->finish_at < 0) {
		v->finish_at = (long)i;
		snprintf(v->finish_reason, sizeof(v->finish_reason), "%s", finish->valuestring);
	}
	if (cJSON_IsObject(usage)) {
		v->usage_at = (long)i;
		v->prompt_tokens = gw_json_num(usage, "prompt_tokens");
		v->completion_tokens = gw_json_num(usage, "completion_tokens");
	}
}

static void view_events(const struct sse_reader *r, struct stream_view *v)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->bad_token = v->finish_at = v->usage_at = v->done_at = v->error_at = v->invalid_at = -1;
	v->nevents = r->nev;
	for (i = 0; i < r->nev; i++) {
		const struct sse_event *e = &r->ev[i];
		cJSON *doc;

		if (e->event && strcmp(e->event, "error") == 0) {
			if (v->error_at < 0) {
				v->error_at = (long)i;
				v->error_ms = e->at_ms;
				snprintf(v->error_data, sizeof(v->error_data), "%s", e->data);
			}
			v->nerrors++;
			continue;
		}
		if (strcmp(e->data, "[DONE]") == 0) {
			if (v->done_at < 0)
				v->done_at = (long)i;
			v->ndone++;
			continue;
		}
		doc = cJSON_Parse(e->data);
		if (!cJSON_IsObject(doc)) {
			if (v->invalid_at < 0)
				v->invalid_at = (long)i;
		} else {
			note_chunk(v, doc, i, e->at_ms);
		}
		cJSON_Delete(doc);
	}
}

/* A whole SSE body (libcurl's) into a view. */
static void view_body(const char *body, size_t len, struct stream_view *v)
{
	struct sse_reader r = { 0 };

	sse_reader_feed(&r, body, len, 0);
	view_events(&r, v);
	sse_reader_free(&r);
}

/*
 * Asserts a clean stream: 200, text/event-stream, chunked and complete
 * (the last chunk arrived), ntokens content chunks each the token it
 * should be, a finish_reason after the last, data: [DONE] once and last,
 * no error event, nothing that is not JSON.
 */
static void expect_clean_view(const struct stream_view *v, const char *what, size_t ntokens,
			      const char *bytes)
{
	cr_assert_eq(v->nerrors, 0, "%s: an error event in a stream that should be clean: %s;"
		     " bytes:\n%s", what, v->error_data, bytes);
	cr_assert_eq(v->invalid_at, -1, "%s: event %ld is not JSON; bytes:\n%s", what,
		     v->invalid_at, bytes);
	cr_assert_eq(v->ncontent, ntokens, "%s: %zu content chunks, expected %zu; bytes:\n%s",
		     what, v->ncontent, ntokens, bytes);
	cr_assert_eq(v->bad_token, -1, "%s: content chunk %ld is \"%s\", not mockprov's token;"
		     " bytes:\n%s", what, v->bad_token, v->bad_text, bytes);
	cr_assert_geq(v->finish_at, 0, "%s: no finish_reason; bytes:\n%s", what, bytes);
	cr_assert_eq(v->ndone, 1, "%s: data: [DONE] %zu times; bytes:\n%s", what, v->ndone,
		     bytes);
	cr_assert_eq(v->done_at, (long)v->nevents - 1, "%s: [DONE] is event %ld of %zu; bytes:\n%s",
		     what, v->done_at, v->nevents, bytes);
}

static void expect_clean(const struct raw_http *c, const char *what, size_t ntokens)
{
	struct stream_view v;
	char ct[128];

	cr_assert_eq(c->status, 200, "%s: status %d; bytes:\n%s", what, c->status,
		     raw_tail(c, 4000));
	cr_assert(strstr(hdr(c, "content-type", ct, sizeof(ct)), "text/event-stream"),
		  "%s: content-type %s", what, ct);
	cr_assert(c->chunked, "%s: not chunked; headers:\n%s", what, c->head);
	cr_assert_eq(c->state, RAW_DONE, "%s: the answer did not end well (state %d%s%s, eof %d,"
		     " errno %d); bytes:\n%s", what, c->state, c->bad ? ": " : "",
		     c->bad ? c->bad : "", c->eof, c->err, raw_tail(c, 4000));
	view_events(&c->sse, &v);
	expect_clean_view(&v, what, ntokens, raw_tail(c, 4000));
}

/*
 * Asserts a stream broken after its commit: 200, chunked and ended by the
 * last chunk (not a reset or a bare close), content chunks that are the
 * first tokens in order (exactly ntokens of them unless ntokens < 0, then
 * at least one), no [DONE], and an error event last whose data is
 * {"error":{"message":…,"type":"server_error","param":null,"code":code}}.
 * Returns the error's message (a static copy).
 */
static const char *expect_broken(const struct raw_http *c, const char *what, long ntokens,
				 const char *code, struct stream_view *v)
{
	static char message[512];
	const cJSON *err;
	const cJSON *param;
	cJSON *doc;

	cr_assert_eq(c->status, 200, "%s: status %d; bytes:\n%s", what, c->status,
		     raw_tail(c, 4000));
	cr_assert(c->chunked, "%s: not chunked; headers:\n%s", what, c->head);
	cr_assert_eq(c->state, RAW_DONE, "%s: the chunked answer did not end with its last chunk"
		     " (state %d%s%s, eof %d, errno %d); bytes:\n%s", what, c->state,
		     c->bad ? ": " : "", c->bad ? c->bad : "", c->eof, c->err, raw_tail(c, 4000));
	view_events(&c->sse, v);
	cr_assert_eq(v->ndone, 0, "%s: a broken stream sent [DONE]; bytes:\n%s", what,
		     raw_tail(c, 4000));
	cr_assert_eq(v->bad_token, -1, "%s: content chunk %ld is \"%s\", not mockprov's token;"
		     " bytes:\n%s", what, v->bad_token, v->bad_text, raw_tail(c, 4000));
	if (ntokens >= 0)
		cr_assert_eq(v->ncontent, (size_t)ntokens, "%s: %zu content chunks, expected %ld;"
			     " bytes:\n%s", what, v->ncontent, ntokens, raw_tail(c, 4000));
	else
		cr_assert_geq(v->ncontent, 1, "%s: no content before the break: it was not after"
			      " the commit; bytes:\n%s", what, raw_tail(c, 4000));
	cr_assert_eq(v->nerrors, 1, "%s: %zu error events, expected 1; bytes:\n%s", what,
		     v->nerrors, raw_tail(c, 4000));
	cr_assert_eq(v->error_at, (long)v->nevents - 1, "%s: the error event is not the last;"
		     " bytes:\n%s", what, raw_tail(c, 4000));
	doc = gw_held_doc(&held, gw_error_doc(v->error_data));
	cr_assert_not_null(doc, "%s: the error event's data is not an OpenAI error: %s", what,
			   v->error_data);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "type"), "server_error", "%s: %s", what, v->error_data);
	cr_assert(gw_json_str(err, "code") && strcmp(gw_json_str(err, "code"), code) == 0,
		  "%s: error.code in %s, expected %s", what, v->error_data, code);
	param = cJSON_GetObjectItemCaseSensitive(err, "param");
	cr_assert(cJSON_IsNull(param), "%s: error.param is not null in %s", what, v->error_data);
	snprintf(message, sizeof(message), "%s", gw_json_str(err, "message"));
	return message;
}

/* ---- what the gateway and the mock expose ---- */

static const char *metrics(void)
{
	return gw_metrics_held(&gw, &held);
}

static double metric(const char *name, const char *labels)
{
	return gw_metric(metrics(), name, labels);
}

/* A breaker's totals.KEY (requests, failures…), asserting the breaker exists. */
static double breaker_total(const char *prov, const char *key)
{
	const cJSON *b = gw_breaker_must(gw_breakers_held(&gw, &held), prov, "mock-small");

	return gw_json_num(cJSON_GetObjectItemCaseSensitive(b, "totals"), key);
}

/* Polls until neither of the gateway's in-flight gauges is above 0. */
static void expect_gateway_idle(const char *what)
{
	double req = gw_metric_wait(&gw, "faultline_requests_in_flight", "", 0, 3000);
	double str = gw_metric_wait(&gw, "faultline_streams_in_flight", "", 0, 3000);

	cr_assert_eq(req, 0, "%s: faultline_requests_in_flight stays %g", what, req);
	cr_assert_eq(str, 0, "%s: faultline_streams_in_flight stays %g", what, str);
}

/* ---- a clean stream ---- */

#define HEALTHY_TOKENS 8

/*
 * A healthy primary's stream is relayed whole: 200 with text/event-stream,
 * Cache-Control: no-cache, the x-faultline-* headers, the client's
 * x-request-id and Trailer: x-faultline-cost-usd; every chunk mockprov
 * sends (the same content, chunk for chunk, as the same request sent to
 * mockprov directly), its finish and [DONE], then the last chunk. The
 * attempt is a success, the stream's TTFT is in its histogram, both
 * in-flight gauges return to 0; mockprov logs the request completed and
 * the secondary is never asked.
 */
Test(gateway_stream, healthy_stream_relayed, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	struct stream_view direct_view;
	struct stream_view gw_view;
	struct raw_http *direct;
	struct raw_http *c;
	const struct csv_table *log;
	size_t row;
	size_t i;
	size_t k;
	char v[128];
	char labels[128];

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':5,"
		   "'output_tokens':8},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,'output_tokens':8}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':2000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':2000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	direct = send_stream(mock_addr(&mock, "primary"), "mock-small", "direct-1", false, 1, 0);
	raw_read(direct, NULL, NULL, 5000);
	expect_clean(direct, "mockprov directly", HEALTHY_TOKENS);

	c = gw_stream("chat", "healthy-1", false, 5000);
	expect_clean(c, "through the gateway", HEALTHY_TOKENS);
	cr_assert(strstr(hdr(c, "cache-control", v, sizeof(v)), "no-cache"), "cache-control %s", v);
	cr_assert_str_eq(hdr(c, "x-faultline-provider", v, sizeof(v)), "primary");
	cr_assert_eq(hdr_num(c, "x-faultline-attempts"), 1, "x-faultline-attempts %s",
		     hdr(c, "x-faultline-attempts", v, sizeof(v)));
	cr_assert_str_eq(hdr(c, "x-faultline-hedged", v, sizeof(v)), "0");
	cr_assert_str_eq(hdr(c, "x-request-id", v, sizeof(v)), "healthy-1");
	cr_assert(strcasestr(hdr(c, "trailer", v, sizeof(v)), "x-faultline-cost-usd"),
		  "Trailer: %s", v);
	cr_assert_null(raw_header(c, "x-mock-provider", v, sizeof(v)),
		       "the upstream's x-mock-provider was relayed");

	/* The same content, chunk for chunk, as mockprov's own stream. */
	view_events(&direct->sse, &direct_view);
	view_events(&c->sse, &gw_view);
	cr_assert_eq(gw_view.nevents, direct_view.nevents, "%zu events through the gateway, %zu"
		     " from mockprov; gateway bytes:\n%s", gw_view.nevents, direct_view.nevents,
		     raw_tail(c, 4000));
	for (i = k = 0; i < c->sse.nev; i++) {
		cJSON *a = gw_held_doc(&held, cJSON_Parse(direct->sse.ev[i].data));
		cJSON *b = gw_held_doc(&held, cJSON_Parse(c->sse.ev[i].data));
		const cJSON *ca = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "choices"), 0),
			"delta"), "content");
		const cJSON *cb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(b, "choices"), 0),
			"delta"), "content");

		if (!a) {
			cr_assert_str_eq(c->sse.ev[i].data, direct->sse.ev[i].data);
			continue;
		}
		cr_assert_eq(cJSON_IsString(ca), cJSON_IsString(cb), "event %zu: %s vs %s", i,
			     direct->sse.ev[i].data, c->sse.ev[i].data);
		if (cJSON_IsString(ca)) {
			cr_assert_str_eq(cb->valuestring, ca->valuestring, "event %zu", i);
			k++;
		}
	}
	cr_assert_eq(k, HEALTHY_TOKENS);
	cr_assert_eq(c->sse.comments + c->sse.ids, 0, "comments or ids relayed");

	expect_gateway_idle("after a clean stream");
	cr_assert_eq(metric("faultline_attempts_total", "provider=primary,outcome=success"), 1);
	cr_assert_eq(metric("faultline_requests_total", "alias=chat,status=200"), 1);
	snprintf(labels, sizeof(labels), "provider=primary");
	cr_assert_eq(metric("faultline_stream_ttft_seconds_count", labels), 1,
		     "faultline_stream_ttft_seconds_count{%s}; metrics:\n%s", labels, metrics());
	cr_assert_eq(breaker_total("primary", "failures"), 0);

	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "healthy-1");
	cr_assert_str_eq(csv_get(log, row, "streaming"), "1");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "completed");
	cr_assert_eq(gw_mock_rows(&held, &mock, "secondary")->nrows, 1, "the secondary was asked");
}

/* ---- before the commit ---- */

#define FIRST_TOKEN_MS 400

/*
 * A primary that sends its headers and then nothing (stall after 0
 * tokens): the client sees nothing until the secondary's first token,
 * about first_token_timeout_ms later, then one clean stream from the
 * secondary (every token, the finish, [DONE], no error event) with
 * x-faultline-provider secondary and 2 attempts. The primary's attempt
 * ends first_token_timeout, held against its breaker.
 */
Test(gateway_stream, no_first_token_fails_over, .timeout = 20)
{
	struct raw_http *c;
	char v[128];

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,'output_tokens':8,"
		   "'faults':[{'kind':'stall','after_tokens':0," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':2,"
		   "'output_tokens':8}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}},"
		 "'stream':{'first_token_timeout_ms':400,'stall_timeout_ms':1000}}");

	c = gw_stream("chat", "nofirst-1", false, 5000);
	expect_clean(c, "primary silent after its headers", 8);
	cr_assert_str_eq(hdr(c, "x-faultline-provider", v, sizeof(v)), "secondary");
	cr_assert_eq(hdr_num(c, "x-faultline-attempts"), 2);
	cr_assert_geq(c->first_byte_ms, FIRST_TOKEN_MS, "the first byte came after %.0f ms, before"
		      " first_token_timeout_ms %d", c->first_byte_ms, FIRST_TOKEN_MS);
	cr_assert_lt(c->first_byte_ms, FIRST_TOKEN_MS + 600, "the first byte came after %.0f ms"
		     " (first_token_timeout_ms %d, the secondary's ttft 20 ms)", c->first_byte_ms,
		     FIRST_TOKEN_MS);
	cr_assert_eq(metric("faultline_attempts_total", "provider=primary,outcome=first_token_timeout"),
		     1, "metrics:\n%s", metrics());
	cr_assert_eq(breaker_total("primary", "failures"), 1);
	expect_gateway_idle("after a failover");
}

/* A failure before the first content, which the gateway fails over on. */
struct precommit_case {
	const char *name;		/* the mock provider and the alias */
	const char *fault;
	const char *outcome;		/* its attempt's outcome label */
};

static const struct precommit_case precommits[] = {
	{ "truncate0", "{'kind':'truncate','after_tokens':0," ALWAYS "}", "truncated" },
	{ "error0", "{'kind':'error_event','after_tokens':0," ALWAYS "}", "error_event" },
	{ "reset0", "{'kind':'reset','after_bytes':0," ALWAYS "}", "reset" },
	{ "s503", "{'kind':'status','status':503," ALWAYS "}", "http_5xx" },
	{ "s429", "{'kind':'status','status':429," ALWAYS "}", "http_429" },
	{ "s529", "{'kind':'status','status':529," ALWAYS "}", "http_5xx" },
	{ "malformed", "{'kind':'malformed'," ALWAYS "}", "invalid_body" },
	{ "down", "{'kind':'down'," ALWAYS "}", "refused" },
};
#define NPRECOMMITS (sizeof(precommits) / sizeof(precommits[0]))

/*
 * The faulty providers' fields in a fallback fixture: an Anthropic
 * provider's (mockprov's dialect, the gateway's dialect and key) when
 * anthropic, else an OpenAI one's. The key's variable is set here.
 */
#define ANTH_MOCK "'dialect':'anthropic',"
#define ANTH_GW ",'dialect':'anthropic','api_key_env':'FAULTLINE_TEST_ANTH_KEY'"

static void dialect_fields(bool anthropic, const char *mock_fields, const char *gw_fields,
			   char *mock_out, size_t mlen, char *gw_out, size_t glen)
{
	cr_assert_eq(setenv("FAULTLINE_TEST_ANTH_KEY", "test-key", 1), 0);
	snprintf(mock_out, mlen, "%s%s", anthropic ? ANTH_MOCK : "", mock_fields);
	snprintf(gw_out, glen, "%s%s", gw_fields, anthropic ? ANTH_GW : "");
}

/*
 * Every failure before the first content fails over: a stream cut before
 * its first token, an error event as its first event, a reset at once, a
 * 503, a 429, a 529, a broken first frame, a refused connection. Each
 * client gets one clean stream from the secondary (x-faultline-provider
 * secondary, 2 attempts) without waiting for any timeout, and the failed
 * attempt shows under its outcome in faultline_attempts_total. The faulty
 * providers speak OpenAI's dialect, or (anthropic) Anthropic's, each
 * fault in that dialect's shape, and the secondary OpenAI's.
 */
static void failures_before_first_token(bool anthropic)
{
	struct gw_fallback cfg;
	char rid[64];
	char labels[128];
	char mf[128];
	char gf[160];
	const char *text;
	size_t i;

	dialect_fields(anthropic, "'ttft_ms':20,'output_tokens':6", ",'timeout_ms':4000", mf,
		       sizeof(mf), gf, sizeof(gf));
	gw_fallback_begin(&cfg, "'ttft_ms':20,'output_tokens':6",
			  "'request_deadline_ms':8000,'stream':{'first_token_timeout_ms':3000},",
			  "");
	for (i = 0; i < NPRECOMMITS; i++)
		gw_fallback_add(&cfg, precommits[i].name, mf, precommits[i].fault, gf);
	cr_assert_eq(gw_fallback_end(&cfg, ""), 0, "the configs do not fit");
	start_mock(cfg.mock);
	start_gw(cfg.gw);

	for (i = 0; i < NPRECOMMITS; i++) {
		struct raw_http *c;
		char v[128];

		snprintf(rid, sizeof(rid), "pre-%s", precommits[i].name);
		c = gw_stream(precommits[i].name, rid, false, 6000);
		expect_clean(c, rid, 6);
		cr_assert_str_eq(hdr(c, "x-faultline-provider", v, sizeof(v)), "secondary", "%s", rid);
		cr_assert_eq(hdr_num(c, "x-faultline-attempts"), 2, "%s: attempts %s", rid,
			     hdr(c, "x-faultline-attempts", v, sizeof(v)));
		cr_assert_lt(c->end_ms, 1500, "%s: the stream ended after %.0f ms: a timeout was"
			     " waited for", rid, c->end_ms);
	}
	text = metrics();
	for (i = 0; i < NPRECOMMITS; i++) {
		snprintf(labels, sizeof(labels), "provider=%s,outcome=%s", precommits[i].name,
			 precommits[i].outcome);
		cr_assert_eq(gw_metric(text, "faultline_attempts_total", labels), 1,
			     "faultline_attempts_total{%s} is %g; metrics:\n%s", labels,
			     gw_metric(text, "faultline_attempts_total", labels), text);
	}
	expect_gateway_idle("after the failovers");
}

Test(gateway_stream, failures_before_first_token_fail_over, .timeout = 30)
{
	failures_before_first_token(false);
}

/* The same failures of an Anthropic provider, in its own shapes, fail over the same way. */
Test(gateway_stream, anthropic_failures_before_first_token_fail_over, .timeout = 30)
{
	failures_before_first_token(true);
}

/*
 * An upstream 400 or 422 to a streaming request is handed back as it is:
 * its status, content type and body bytes (the same as mockprov answers
 * directly), x-faultline-provider the primary, 1 attempt; the secondary is
 * never asked and the breaker holds nothing against the primary.
 */
Test(gateway_stream, upstream_4xx_handed_back, .timeout = 20)
{
	static const int statuses[] = { 400, 422 };
	size_t i;

	start_mock("{'providers':["
		   "{'name':'s400','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'faults':[{'kind':'status','status':400," ALWAYS "}]},"
		   "{'name':'s422','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'faults':[{'kind':'status','status':422," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20}]}");
	start_gw("{'providers':{'s400':{'base_url':'@s400@'},'s422':{'base_url':'@s422@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'s400':{'targets':[{'provider':'s400','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]},"
		 "'s422':{'targets':[{'provider':'s422','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		char name[16];
		char rid[32];
		char v[128];
		char dv[128];
		struct raw_http *direct;
		struct raw_http *c;

		snprintf(name, sizeof(name), "s%d", statuses[i]);
		snprintf(rid, sizeof(rid), "4xx-%d", statuses[i]);
		direct = send_stream(mock_addr(&mock, name), "mock-small", rid, false, 1, 0);
		raw_read(direct, NULL, NULL, 3000);
		cr_assert_eq(direct->status, statuses[i]);
		c = gw_stream(name, rid, false, 5000);
		cr_assert_eq(c->status, statuses[i], "%s: status %d; bytes:\n%s", rid, c->status,
			     raw_tail(c, 4000));
		cr_assert_eq(c->state, RAW_DONE, "%s: the answer did not end well; bytes:\n%s", rid,
			     raw_tail(c, 4000));
		cr_assert_eq(c->body.len, direct->body.len, "%s: body\n%s\nnot the upstream's\n%s",
			     rid, c->body.data, direct->body.data);
		cr_assert_eq(memcmp(c->body.data, direct->body.data, c->body.len), 0,
			     "%s: body\n%s\nnot the upstream's\n%s", rid, c->body.data,
			     direct->body.data);
		cr_assert_str_eq(hdr(c, "content-type", v, sizeof(v)),
				 hdr(direct, "content-type", dv, sizeof(dv)));
		cr_assert_str_eq(hdr(c, "x-faultline-provider", v, sizeof(v)), name);
		cr_assert_eq(hdr_num(c, "x-faultline-attempts"), 1);
		cr_assert_eq(breaker_total(name, "failures"), 0, "%s: held against the provider",
			     rid);
	}
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "the secondary was asked after a 4xx");
}

/*
 * A stream that fails on every target before its first content gets the
 * gateway's plain JSON error, not an event stream: 502 upstream_error
 * with both attempts listed when both answer 503, and 504
 * deadline_exceeded when the first token cannot come within the request's
 * deadline (first_token_timeout_ms and timeout_ms both longer).
 */
Test(gateway_stream, failing_before_commit_gets_json_error, .timeout = 20)
{
	struct raw_http *c;
	const cJSON *err;
	cJSON *doc;
	char ct[128];

	start_mock("{'providers':["
		   "{'name':'a','listen':'127.0.0.1:0','faults':[{'kind':'status','status':503,"
		   ALWAYS "}]},"
		   "{'name':'b','listen':'127.0.0.1:0','faults':[{'kind':'status','status':503,"
		   ALWAYS "}]},"
		   "{'name':'slow','listen':'127.0.0.1:0','ttft_ms':3000}]}");
	start_gw("{'request_deadline_ms':500,'stream':{'first_token_timeout_ms':2000},"
		 "'providers':{'a':{'base_url':'@a@','timeout_ms':2000},"
		 "'b':{'base_url':'@b@','timeout_ms':2000},"
		 "'slow':{'base_url':'@slow@','timeout_ms':2000}},"
		 "'models':{'both':{'targets':[{'provider':'a','model':'mock-small'},"
		 "{'provider':'b','model':'mock-small'}]},"
		 "'slow':{'targets':[{'provider':'slow','model':'mock-small'}]}}}");

	c = gw_stream("both", "allfail-1", false, 5000);
	cr_assert_eq(c->status, 502, "status %d; bytes:\n%s", c->status, raw_tail(c, 4000));
	cr_assert(strstr(hdr(c, "content-type", ct, sizeof(ct)), "application/json"),
		  "content-type %s", ct);
	doc = gw_held_doc(&held, gw_error_doc(c->body.data));
	cr_assert_not_null(doc, "not an OpenAI error: %s", c->body.data);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "code"), "upstream_error", "%s", c->body.data);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(err, "attempts")), 2,
		     "%s", c->body.data);
	cr_assert_eq(hdr_num(c, "x-faultline-attempts"), 2);

	c = gw_stream("slow", "deadline-1", false, 5000);
	cr_assert_eq(c->status, 504, "status %d; bytes:\n%s", c->status, raw_tail(c, 4000));
	doc = gw_held_doc(&held, gw_error_doc(c->body.data));
	cr_assert_not_null(doc, "not an OpenAI error: %s", c->body.data);
	cr_assert_str_eq(gw_json_str(cJSON_GetObjectItemCaseSensitive(doc, "error"), "code"),
			 "deadline_exceeded", "%s", c->body.data);
	cr_assert(c->end_ms >= 450 && c->end_ms < 1200, "the 504 came after %.0f ms (deadline"
		  " 500 ms)", c->end_ms);
	expect_gateway_idle("after the errors");
}

/* ---- after the commit ---- */

#define STALL_MS 400

/*
 * A primary that stalls after 3 tokens: the client gets exactly those 3
 * content chunks, then — stall_timeout_ms after the 3rd, within 100 ms —
 * an error event with code stream_stalled, no [DONE], and the end of the
 * chunked answer. There is no failover after the commit (the secondary is
 * never asked); the attempt ends "stall", the stall is counted in
 * faultline_stream_stalls_total and against the primary's breaker, and the
 * gateway lets go of the upstream connection.
 */
Test(gateway_stream, stall_after_commit_ends_with_error_event, .timeout = 20)
{
	struct stream_view v;
	struct raw_http *c;
	char cost[64];
	double gap;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':30,"
		   "'output_tokens':16,'faults':[{'kind':'stall','after_tokens':3," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,'output_tokens':8}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000,"
		 "'price_per_1k':{'input':1,'output':2}},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}},"
		 "'stream':{'first_token_timeout_ms':1000,'stall_timeout_ms':400}}");

	c = gw_stream("chat", "stall-1", false, 5000);
	expect_broken(c, "stall after 3 tokens", 3, "stream_stalled", &v);
	/* The 3 tokens that came were made and billed: the trailer says so. */
	cr_assert_not_null(raw_trailer(c, "x-faultline-cost-usd", cost, sizeof(cost)),
			   "no cost trailer after the error event:\n%s", raw_tail(c, 2000));
	cr_assert_float_eq(strtod(cost, NULL), (PROMPT_TOKENS * 1.0 + 3 * 2.0) / 1000, 1e-9,
			   "cost %s", cost);
	gap = v.error_ms - v.last_content_ms;
	cr_assert_geq(gap, STALL_MS - 25, "the error event came %.0f ms after the 3rd token, before"
		      " stall_timeout_ms %d", gap, STALL_MS);
	cr_assert_leq(gap, STALL_MS + 100, "the error event came %.0f ms after the 3rd token"
		      " (stall_timeout_ms %d)", gap, STALL_MS);
	cr_assert_leq(c->end_ms - v.error_ms, 100, "the answer ended %.0f ms after its error event",
		      c->end_ms - v.error_ms);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "failed over after the commit");
	cr_assert_eq(metric("faultline_stream_stalls_total", "provider=primary"), 1,
		     "metrics:\n%s", metrics());
	cr_assert_eq(metric("faultline_attempts_total", "provider=primary,outcome=stall"), 1,
		     "metrics:\n%s", metrics());
	cr_assert_eq(breaker_total("primary", "failures"), 1);
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 2000),
		  "the gateway kept the stalled upstream connection open");
	expect_gateway_idle("after a stall");
}

/* A break after the commit. */
struct break_case {
	const char *name;		/* the mock provider and the alias */
	const char *fault;
	long tokens;			/* content chunks before the break; -1: at least one */
	const char *code;		/* of the error event */
	const char *reason;		/* faultline_stream_truncations_total's label */
	const char *anthropic_fault;	/* an Anthropic provider's, when not fault */
};

static const struct break_case breaks[] = {
	{ "truncate", "{'kind':'truncate','after_tokens':3," ALWAYS "}", 3, "stream_truncated",
	  "truncated", NULL },
	{ "errorev", "{'kind':'error_event','after_tokens':3," ALWAYS "}", 3, "stream_error_event",
	  "error_event", NULL },
	/*
	 * Past the headers (~150 bytes) and the first chunk (~210): in the 2nd
	 * or 3rd. Anthropic's stream has ~600 bytes before its first text
	 * delta (message_start, content_block_start, ping) and ~110 per delta.
	 */
	{ "reset", "{'kind':'reset','after_bytes':700," ALWAYS "}", -1, "stream_reset", "reset",
	  "{'kind':'reset','after_bytes':1000," ALWAYS "}" },
};
#define NBREAKS (sizeof(breaks) / sizeof(breaks[0]))
#define BREAK_REPEATS 5

/*
 * A stream cut after the commit — a clean end without [DONE], an upstream
 * error event, a TCP reset — reaches the client as an error event
 * (stream_truncated, stream_error_event quoting the upstream's message,
 * stream_reset) and the end of the chunked answer, every time (5 times
 * each); the tokens before it are intact. No failover (the secondary is
 * never asked); each break is counted under its reason, as its attempt's
 * outcome, and against the breaker. The providers speak OpenAI's dialect,
 * or (anthropic) Anthropic's: the same breaks, translated.
 */
static void breaks_after_commit(bool anthropic)
{
	struct gw_fallback cfg;
	char labels[128];
	char mf[128];
	char gf[160];
	const char *text;
	size_t i;
	int k;

	dialect_fields(anthropic, "'ttft_ms':20,'token_ms':20,'output_tokens':16",
		       ",'timeout_ms':3000", mf, sizeof(mf), gf, sizeof(gf));
	gw_fallback_begin(&cfg, "'ttft_ms':20,'output_tokens':6",
			  "'request_deadline_ms':5000,'breaker':{'enabled':false},"
			  "'stream':{'first_token_timeout_ms':1000,'stall_timeout_ms':2000},", "");
	for (i = 0; i < NBREAKS; i++)
		gw_fallback_add(&cfg, breaks[i].name, mf,
				anthropic && breaks[i].anthropic_fault ? breaks[i].anthropic_fault
								       : breaks[i].fault, gf);
	cr_assert_eq(gw_fallback_end(&cfg, ""), 0, "the configs do not fit");
	start_mock(cfg.mock);
	start_gw(cfg.gw);

	for (i = 0; i < NBREAKS; i++) {
		for (k = 0; k < BREAK_REPEATS; k++) {
			struct stream_view v;
			struct raw_http *c;
			const char *msg;
			char rid[64];

			snprintf(rid, sizeof(rid), "break-%s-%d", breaks[i].name, k);
			c = gw_stream(breaks[i].name, rid, false, 5000);
			msg = expect_broken(c, rid, breaks[i].tokens, breaks[i].code, &v);
			cr_assert_lt(v.ncontent, 16, "%s: every token came: no break", rid);
			if (strcmp(breaks[i].code, "stream_error_event") == 0)
				cr_assert(strstr(msg, anthropic ? MOCK_OVERLOADED_MESSAGE
								: MOCK_ERROR_MESSAGE),
					  "%s: the upstream's message is not quoted in \"%s\"", rid,
					  msg);
			/* Each ends with its own request. */
			raw_close(c);
		}
	}
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "failed over after the commit");
	text = metrics();
	for (i = 0; i < NBREAKS; i++) {
		snprintf(labels, sizeof(labels), "provider=%s,reason=%s", breaks[i].name,
			 breaks[i].reason);
		cr_assert_eq(gw_metric(text, "faultline_stream_truncations_total", labels),
			     BREAK_REPEATS, "faultline_stream_truncations_total{%s} is %g;"
			     " metrics:\n%s", labels,
			     gw_metric(text, "faultline_stream_truncations_total", labels), text);
		snprintf(labels, sizeof(labels), "provider=%s,outcome=%s", breaks[i].name,
			 breaks[i].reason);
		cr_assert_eq(gw_metric(text, "faultline_attempts_total", labels), BREAK_REPEATS,
			     "faultline_attempts_total{%s} is %g", labels,
			     gw_metric(text, "faultline_attempts_total", labels));
		cr_assert_eq(breaker_total(breaks[i].name, "failures"), BREAK_REPEATS, "%s",
			     breaks[i].name);
	}
	expect_gateway_idle("after the breaks");
}

Test(gateway_stream, breaks_after_commit_end_with_error_event, .timeout = 40)
{
	breaks_after_commit(false);
}

/* An Anthropic provider's breaks after the commit, translated, end the same way. */
Test(gateway_stream, anthropic_breaks_after_commit_end_with_error_event, .timeout = 40)
{
	breaks_after_commit(true);
}

/*
 * After the commit only the stall timeout bounds a stream: one that lasts
 * 1.6 s (40 tokens 40 ms apart) through a provider whose timeout_ms is
 * 500, under a 900 ms request deadline, arrives whole.
 */
Test(gateway_stream, stream_outlives_attempt_timeout_and_deadline, .timeout = 20)
{
	struct raw_http *c;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'token_ms':40,'output_tokens':40}]}");
	start_gw("{'request_deadline_ms':900,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':500}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}},"
		 "'stream':{'first_token_timeout_ms':400,'stall_timeout_ms':300}}");
	c = gw_stream("chat", "long-1", false, 8000);
	expect_clean(c, "a 1.6 s stream", 40);
	cr_assert_geq(c->end_ms, 1500, "the stream took %.0f ms", c->end_ms);
}

/* ---- what mockprov does not send: a scripted upstream ---- */

#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
#define CHUNK(delta, finish) \
	"data: {\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion.chunk\",\"created\":1," \
	"\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" \
	finish "}]}\n\n"
#define ROLE_CHUNK CHUNK("{\"role\":\"assistant\"}", "null")
#define TOKEN_CHUNK(text) CHUNK("{\"content\":\"" text "\"}", "null")
#define FINISH_CHUNK CHUNK("{}", "\"stop\"")
#define ERROR_CHUNK "data: {\"error\":{\"message\":\"upstream boom\",\"type\":\"server_error\"}}\n\n"

/*
 * Starts a scripted upstream (stopped at teardown); hold_open: it does not
 * close after its script, so what the gateway does comes from the bytes
 * alone.
 */
static struct script_stub *start_stub(const struct script_step *steps, size_t n, bool hold_open)
{
	struct script_stub *st;

	cr_assert_lt(nstubs, sizeof(stubs) / sizeof(stubs[0]));
	st = &stubs[nstubs++];
	cr_assert_eq(script_stub_start(st, steps, n, hold_open), 0, "the scripted upstream did not start");
	return st;
}

/*
 * Until the first content the gateway sends nothing: an upstream that
 * sends a comment, then a role-only first chunk, then 300 ms later its
 * first content reaches the client as one stream whose first byte comes
 * after those 300 ms; the held-back role chunk is in it, the comments and
 * id: lines are not.
 */
Test(gateway_stream, held_back_until_content_comments_and_ids_dropped, .timeout = 20)
{
	static const struct script_step steps[] = {
		{ 0, SSE_HEAD }, { 0, ": hello\n\n" }, { 0, "id: 1\n" ROLE_CHUNK },
		{ 300, "id: 2\n" TOKEN_CHUNK("Lorem") }, { 20, ": ping\n\n" },
		{ 0, TOKEN_CHUNK(" ipsum") }, { 0, FINISH_CHUNK }, { 0, "data: [DONE]\n\n" },
	};
	struct script_stub *st = start_stub(steps, sizeof(steps) / sizeof(steps[0]), false);
	struct stream_view v;
	struct raw_http *c;
	char cfg[1024];

	snprintf(cfg, sizeof(cfg), "{'providers':{'stub':{'base_url':'http://%s/v1'}},"
		 "'models':{'chat':{'targets':[{'provider':'stub','model':'m'}]}}}", st->addr);
	start_gw(cfg);
	c = gw_stream("chat", "held-1", false, 5000);
	expect_clean(c, "a scripted stream", 2);
	/*
	 * 299: the stub's 300 ms is a libuv timer, counted from the loop's
	 * cached time, which may be up to a millisecond behind the clock.
	 */
	cr_assert_geq(c->first_byte_ms, 299, "the first byte came after %.1f ms, before the first"
		      " content (300 ms)", c->first_byte_ms);
	view_events(&c->sse, &v);
	cr_assert_eq(v.role_only, 1, "the role-only chunk held back was not sent; bytes:\n%s",
		     raw_tail(c, 4000));
	cr_assert_eq(c->sse.comments, 0, "comments relayed; bytes:\n%s", raw_tail(c, 4000));
	cr_assert_eq(c->sse.ids, 0, "id: lines relayed; bytes:\n%s", raw_tail(c, 4000));
}

/* A scripted failure before the first content. */
struct stub_precommit {
	const char *name;
	struct script_step steps[4];
	size_t nsteps;
	bool hold_open;
	const char *outcome;
};

static const struct stub_precommit stub_precommits[] = {
	{ "rolecut", { { 0, SSE_HEAD }, { 0, ROLE_CHUNK } }, 2, false, "truncated" },
	{ "errchunk", { { 0, SSE_HEAD }, { 0, ROLE_CHUNK }, { 0, ERROR_CHUNK } }, 3, true,
	  "error_event" },
	{ "notsse", { { 0, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		     "Connection: close\r\n\r\n{\"choices\":[]}" } }, 1, false, "invalid_body" },
	{ "rolestall", { { 0, SSE_HEAD }, { 0, ROLE_CHUNK } }, 2, true, "first_token_timeout" },
	{ "pings", { { 0, SSE_HEAD }, { 150, ": ping\n\n" }, { 150, ": ping\n\n" },
		     { 150, ": ping\n\n" } }, 4, true, "first_token_timeout" },
};
#define NSTUB_PRECOMMITS (sizeof(stub_precommits) / sizeof(stub_precommits[0]))

/*
 * Before the first content these fail over too: a role-only chunk and
 * then the end, a role-only chunk and then an {"error":…} chunk, a 2xx
 * that is not text/event-stream; and, at first_token_timeout_ms (300),
 * a role-only chunk and then silence, or comments every 150 ms and no
 * content (events that carry nothing do not hold the cap off). The
 * client gets the secondary's stream alone — nothing of the failed
 * attempt (no role-only chunk) — and the attempts are counted as
 * truncated, error_event, invalid_body and first_token_timeout.
 */
Test(gateway_stream, scripted_failures_before_content_fail_over, .timeout = 20)
{
	char gcfg[4096];
	char labels[128];
	size_t used;
	size_t i;

	start_mock("{'providers':[{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'output_tokens':6}]}");
	used = (size_t)snprintf(gcfg, sizeof(gcfg), "{'stream':{'first_token_timeout_ms':300},"
				"'providers':{'secondary':{'base_url':'@secondary@'}");
	for (i = 0; i < NSTUB_PRECOMMITS; i++) {
		struct script_stub *st = start_stub(stub_precommits[i].steps,
						    stub_precommits[i].nsteps,
						    stub_precommits[i].hold_open);

		used += (size_t)snprintf(gcfg + used, sizeof(gcfg) - used,
					 ",'%s':{'base_url':'http://%s/v1'}", stub_precommits[i].name,
					 st->addr);
	}
	used += (size_t)snprintf(gcfg + used, sizeof(gcfg) - used, "},'models':{");
	for (i = 0; i < NSTUB_PRECOMMITS; i++)
		used += (size_t)snprintf(gcfg + used, sizeof(gcfg) - used,
					 "%s'%s':{'targets':[{'provider':'%s','model':'m'},"
					 "{'provider':'secondary','model':'mock-small'}]}", i ? "," : "",
					 stub_precommits[i].name, stub_precommits[i].name);
	snprintf(gcfg + used, sizeof(gcfg) - used, "}}");
	start_gw(gcfg);

	for (i = 0; i < NSTUB_PRECOMMITS; i++) {
		struct stream_view v;
		struct raw_http *c;
		char rid[64];
		char val[64];

		snprintf(rid, sizeof(rid), "stubpre-%s", stub_precommits[i].name);
		c = gw_stream(stub_precommits[i].name, rid, false, 5000);
		expect_clean(c, rid, 6);
		cr_assert_str_eq(hdr(c, "x-faultline-provider", val, sizeof(val)), "secondary", "%s",
				 rid);
		if (strcmp(stub_precommits[i].outcome, "first_token_timeout") == 0)
			cr_assert(c->first_byte_ms >= 300 && c->first_byte_ms < 900, "%s: the first"
				  " byte came after %.0f ms (first_token_timeout_ms 300)", rid,
				  c->first_byte_ms);
		view_events(&c->sse, &v);
		cr_assert_eq(v.role_only, 0, "%s: the failed attempt's role chunk reached the client;"
			     " bytes:\n%s", rid, raw_tail(c, 4000));
		cr_assert_null(strstr(c->body.data, "chatcmpl-stub"), "%s: the failed attempt's"
			       " events reached the client; bytes:\n%s", rid, raw_tail(c, 4000));
		snprintf(labels, sizeof(labels), "provider=%s,outcome=%s", stub_precommits[i].name,
			 stub_precommits[i].outcome);
		cr_assert_eq(metric("faultline_attempts_total", labels), 1,
			     "faultline_attempts_total{%s}; metrics:\n%s", labels, metrics());
	}
}

/*
 * After the commit, an {"error":…} chunk ends the stream with
 * stream_error_event quoting the upstream's message, and a data: line that
 * is not JSON with stream_invalid — at once, the upstream keeping its
 * connection open after either; each counted under its reason.
 */
Test(gateway_stream, scripted_breaks_after_commit, .timeout = 20)
{
	static const struct script_step errchunk[] = {
		{ 0, SSE_HEAD }, { 0, TOKEN_CHUNK("Lorem") }, { 20, ERROR_CHUNK },
	};
	static const struct script_step invalid[] = {
		{ 0, SSE_HEAD }, { 0, TOKEN_CHUNK("Lorem") }, { 20, "data: {\"choices\":[\n\n" },
	};
	struct script_stub *a = start_stub(errchunk, sizeof(errchunk) / sizeof(errchunk[0]), true);
	struct script_stub *b = start_stub(invalid, sizeof(invalid) / sizeof(invalid[0]), true);
	struct stream_view v;
	struct raw_http *c;
	const char *msg;
	char cfg[2048];

	snprintf(cfg, sizeof(cfg), "{'providers':{'errchunk':{'base_url':'http://%s/v1'},"
		 "'invalid':{'base_url':'http://%s/v1'}},"
		 "'models':{'errchunk':{'targets':[{'provider':'errchunk','model':'m'}]},"
		 "'invalid':{'targets':[{'provider':'invalid','model':'m'}]}}}", a->addr, b->addr);
	start_gw(cfg);

	c = gw_stream("errchunk", "stub-errchunk", false, 5000);
	msg = expect_broken(c, "an error chunk after the commit", 1, "stream_error_event", &v);
	cr_assert_lt(v.error_ms - v.last_content_ms, 500, "the error event came %.0f ms after"
		     " the error chunk", v.error_ms - v.last_content_ms);
	cr_assert(strstr(msg, "upstream boom"), "the upstream's message is not quoted in \"%s\"",
		  msg);
	c = gw_stream("invalid", "stub-invalid", false, 5000);
	expect_broken(c, "a data line that is not JSON after the commit", 1, "stream_invalid", &v);
	cr_assert_lt(v.error_ms - v.last_content_ms, 500, "the error event came %.0f ms after"
		     " the broken line", v.error_ms - v.last_content_ms);
	cr_assert_eq(metric("faultline_stream_truncations_total",
			    "provider=errchunk,reason=error_event"), 1, "metrics:\n%s", metrics());
	cr_assert_eq(metric("faultline_stream_truncations_total",
			    "provider=invalid,reason=invalid_body"), 1, "metrics:\n%s", metrics());
	expect_gateway_idle("after the scripted breaks");
}

/* A chat chunk whose content is n 'x's, and a data: line of n bytes in all (heap; held). */
static char *big_chunk(size_t n)
{
	static const char head[] = "data: {\"id\":\"chatcmpl-stub\",\"object\":"
		"\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
		"\"delta\":{\"content\":\"";
	static const char tail[] = "\"},\"finish_reason\":null}]}\n\n";
	char *p = malloc(sizeof(head) + n + sizeof(tail));

	cr_assert_not_null(p);
	memcpy(p, head, sizeof(head) - 1);
	memset(p + sizeof(head) - 1, 'x', n);
	memcpy(p + sizeof(head) - 1 + n, tail, sizeof(tail));
	return p;
}

static char *big_one;
static char *huge_one;

static void free_big(void)
{
	teardown();
	free(big_one);
	free(huge_one);
	big_one = huge_one = NULL;
}

/*
 * The relay's framing: events split across writes, with CRLF line ends,
 * arrive whole; one event of 300,000 bytes (over the 64 KiB that pauses
 * the upstream) goes through intact; a first data: line over 1 MiB is
 * invalid_body, failed over to the secondary.
 */
Test(gateway_stream, scripted_framing, .timeout = 30, .fini = free_big)
{
	static const struct script_step split[] = {
		{ 0, SSE_HEAD },
		{ 0, "data: {\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion.chunk\"," },
		{ 30, "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":" },
		{ 30, "{\"content\":\"Lorem\"},\"finish_reason\":null}]}\r" },
		{ 30, "\n\r\n" },
		{ 0, "data: {\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion.chunk\","
		      "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":"
		      "{\"content\":\" ipsum\"},\"finish_reason\":null}]}\r\n\r\n" },
		{ 0, "data: {\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion.chunk\","
		      "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},"
		      "\"finish_reason\":\"stop\"}]}\r\n\r\n" },
		{ 20, "data: [DONE]\r\n\r\n" },
	};
	static struct script_step big[] = {
		{ 0, SSE_HEAD }, { 0, NULL }, { 0, FINISH_CHUNK }, { 0, "data: [DONE]\n\n" },
	};
	static struct script_step huge[] = { { 0, SSE_HEAD }, { 0, NULL } };
	struct script_stub *a = start_stub(split, sizeof(split) / sizeof(split[0]), false);
	struct script_stub *b;
	struct script_stub *h;
	const cJSON *content;
	struct stream_view v;
	struct raw_http *c;
	char gcfg[2048];
	char val[64];

	big_one = big_chunk(300000);
	huge_one = big_chunk(1200000);
	big[1].bytes = big_one;
	huge[1].bytes = huge_one;
	b = start_stub(big, sizeof(big) / sizeof(big[0]), false);
	h = start_stub(huge, sizeof(huge) / sizeof(huge[0]), true);
	start_mock("{'providers':[{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'output_tokens':6}]}");
	snprintf(gcfg, sizeof(gcfg), "{'providers':{'split':{'base_url':'http://%s/v1'},"
		 "'big':{'base_url':'http://%s/v1'},'huge':{'base_url':'http://%s/v1'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'split':{'targets':[{'provider':'split','model':'m'}]},"
		 "'big':{'targets':[{'provider':'big','model':'m'}]},"
		 "'huge':{'targets':[{'provider':'huge','model':'m'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}", a->addr, b->addr, h->addr);
	start_gw(gcfg);

	c = gw_stream("split", "framing-split", false, 5000);
	expect_clean(c, "events split across writes, CRLF line ends", 2);

	c = gw_stream("big", "framing-big", false, 10000);
	cr_assert_eq(c->status, 200);
	cr_assert_eq(c->state, RAW_DONE, "the big event's stream did not end well; bytes:\n%s",
		     raw_tail(c, 2000));
	view_events(&c->sse, &v);
	cr_assert(v.nevents == 3 && v.nerrors == 0 && v.done_at == 2, "%zu events, %zu errors;"
		  " the end:\n%s", v.nevents, v.nerrors, raw_tail(c, 2000));
	content = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
			gw_held_doc(&held, cJSON_Parse(c->sse.ev[0].data)), "choices"), 0),
		"delta"), "content");
	cr_assert(cJSON_IsString(content) && strlen(content->valuestring) == 300000 &&
		  strspn(content->valuestring, "x") == 300000, "the 300,000-byte content is not"
		  " intact");

	c = gw_stream("huge", "framing-huge", false, 10000);
	expect_clean(c, "after a 1.2 MB first line", 6);
	cr_assert_str_eq(hdr(c, "x-faultline-provider", val, sizeof(val)), "secondary");
	cr_assert_eq(metric("faultline_attempts_total", "provider=huge,outcome=invalid_body"), 1,
		     "metrics:\n%s", metrics());
}

/* ---- the client ---- */

/*
 * A client that leaves mid-stream (after 3 tokens of a 10 s stream)
 * cancels the upstream transfer at once: mockprov sees its connection
 * close (in_flight 0 soon after, the request logged client_aborted, ended
 * long before its 10 s), both of the gateway's in-flight gauges return to
 * 0, the request is counted as 499, and nothing is held against the
 * provider.
 */
Test(gateway_stream, client_leaving_cancels_upstream, .timeout = 20)
{
	static const char *const provs[] = { "primary", NULL };
	const struct csv_table *log;
	struct raw_http *c;
	size_t three = 3;
	double left_at;
	size_t row;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'token_ms':50,'output_tokens':200}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}");

	c = send_stream(gw.addr, "chat", "leave-1", false, 1, 0);
	cr_assert_eq(raw_read(c, raw_has_events, &three, 5000), 0,
		     "3 events did not arrive; bytes:\n%s", raw_tail(c, 4000));
	cr_assert_eq(c->status, 200);
	raw_close(c);
	left_at = now_ms();
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 1000),
		  "mockprov's request still open 1 s after the client left");
	cr_assert_lt(now_ms() - left_at, 1000);
	expect_gateway_idle("after the client left");
	cr_assert_eq(gw_metric_wait(&gw, "faultline_requests_total", "alias=chat,status=499", 1,
				    2000), 1, "metrics:\n%s", metrics());
	cr_assert_eq(breaker_total("primary", "failures"), 0, "the client's leaving was held"
		     " against the provider");

	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "leave-1");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "client_aborted");
	cr_assert_lt(strtod(csv_get(log, row, "dur_ms"), NULL), 3000,
		     "mockprov's request lasted %s ms", csv_get(log, row, "dur_ms"));
}

/*
 * A client that leaves before the first content (the upstream's first
 * token is 3 s away) cancels the upstream at once too: mockprov logs
 * client_aborted, the in-flight gauges return to 0, the request counts as
 * 499, and neither the provider's breaker nor the next target hears of it.
 */
Test(gateway_stream, client_leaving_before_commit_cancels_upstream, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *log;
	struct raw_http *c;
	size_t row;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':3000},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20}]}");
	start_gw("{'stream':{'first_token_timeout_ms':5000},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':8000},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	c = send_stream(gw.addr, "chat", "leave-early", false, 1, 0);
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 1, 3000),
		  "the request did not reach the primary");
	cr_assert_eq(c->first_byte_ms, -1);
	raw_close(c);
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 1000),
		  "mockprov's request still open 1 s after the client left");
	expect_gateway_idle("after the client left before the commit");
	cr_assert_eq(gw_metric_wait(&gw, "faultline_requests_total", "alias=chat,status=499", 1,
				    2000), 1, "metrics:\n%s", metrics());
	cr_assert_eq(breaker_total("primary", "failures"), 0);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "failed over for a client that had left");
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "leave-early");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "client_aborted");
}

/*
 * A stream's chunked end and trailer leave the connection clean: the
 * client sends its next request on the same keep-alive connection and
 * gets its stream, then a plain answer on it after that.
 */
Test(gateway_stream, keep_alive_after_stream, .timeout = 20)
{
	struct raw_http *next = calloc(1, sizeof(*next));
	struct raw_http *third = calloc(1, sizeof(*third));
	const char *hdrs[] = { "x-request-id: keep-2", NULL };
	const char *hdrs3[] = { "x-request-id: keep-3", NULL };
	struct raw_http *c;
	char body[512];

	cr_assert(next && third);
	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'output_tokens':5}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@',"
		 "'price_per_1k':{'input':1,'output':1}}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}");

	c = gw_stream("chat", "keep-1", true, 5000);
	expect_clean(c, "the first stream", 5);
	cr_assert_eq(raw_next(c, next), 0, "bytes after the first answer, or it did not end:\n%s",
		     raw_tail(c, 4000));
	conns[nconns++] = next;
	cr_assert_eq(raw_post(next, CHAT_PATH, 1, hdrs, stream_body("chat", false, body,
								    sizeof(body))), 0);
	raw_read(next, NULL, NULL, 5000);
	expect_clean(next, "a second stream on the same connection", 5);
	cr_assert_eq(raw_next(next, third), 0, "bytes after the second answer:\n%s",
		     raw_tail(next, 4000));
	conns[nconns++] = third;
	cr_assert_eq(raw_post(third, CHAT_PATH, 1, hdrs3, "{\"model\":\"chat\",\"messages\":"
			      MESSAGE "}"), 0);
	raw_read(third, NULL, NULL, 5000);
	cr_assert_eq(third->status, 200, "a plain request after two streams: %d; bytes:\n%s",
		     third->status, raw_tail(third, 4000));
	cr_assert_eq(third->state, RAW_DONE);
	cr_assert_not_null(strstr(third->body.data, "chat.completion"), "%s", third->body.data);
}

/* One of many concurrent streams, through libcurl's multi interface. */
struct multi_stream {
	CURL *h;
	struct curl_slist *hdrs;
	struct buf body;
	struct buf head;
	char rid[32];
	long status;
	CURLcode code;
	bool done;
};

static size_t multi_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct multi_stream *s = arg;

	buf_append(&s->body, data, size * nmemb);
	return size * nmemb;
}

static size_t multi_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct multi_stream *s = arg;

	buf_append(&s->head, data, size * nmemb);
	return size * nmemb;
}

#define NCONCURRENT 500
#define CONCURRENT_TOKENS 40

/*
 * 500 streams at once through the gateway (libcurl multi, one connection
 * each): every one is a clean 200 stream with all 40 tokens intact and in
 * order, the finish and [DONE]. mockprov's log shows them all completed
 * and, by their times, all 500 open at once.
 */
/*
 * Sends n streaming requests for alias through the gateway at once (one
 * connection each, x-request-id PREFIX-i) and runs them to their ends
 * within timeout_ms. Returns how many ended; each one's body, headers,
 * status and curl result are in streams[i].
 */
static size_t run_streams(struct multi_stream *streams, size_t n, const char *alias,
			  const char *prefix, double timeout_ms)
{
	char url[128];
	char body[512];
	CURLM *multi;
	double end;
	int running = 0;
	size_t ndone = 0;
	size_t i;

	gw_url(&gw, CHAT_PATH, url, sizeof(url));
	stream_body(alias, false, body, sizeof(body));
	multi = curl_multi_init();
	cr_assert_not_null(multi);
	for (i = 0; i < n; i++) {
		struct multi_stream *s = &streams[i];
		char h[64];

		memset(s, 0, sizeof(*s));
		snprintf(s->rid, sizeof(s->rid), "%s-%zu", prefix, i);
		snprintf(h, sizeof(h), "x-request-id: %s", s->rid);
		s->hdrs = curl_slist_append(s->hdrs, "Content-Type: application/json");
		s->hdrs = curl_slist_append(s->hdrs, "Expect:");
		s->hdrs = curl_slist_append(s->hdrs, h);
		s->h = curl_easy_init();
		cr_assert_not_null(s->h);
		curl_easy_setopt(s->h, CURLOPT_URL, url);
		curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
		curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
		curl_easy_setopt(s->h, CURLOPT_COPYPOSTFIELDS, body);
		curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, multi_on_body);
		curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
		curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, multi_on_header);
		curl_easy_setopt(s->h, CURLOPT_HEADERDATA, s);
		curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
		curl_easy_setopt(s->h, CURLOPT_FRESH_CONNECT, 1L);
		curl_multi_add_handle(multi, s->h);
	}
	end = now_ms() + timeout_ms + 5000;
	do {
		CURLMsg *msg;
		int left;

		curl_multi_perform(multi, &running);
		while ((msg = curl_multi_info_read(multi, &left))) {
			struct multi_stream *s = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			s->code = msg->data.result;
			curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
			s->done = true;
			ndone++;
		}
		if (running)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	} while (running && now_ms() < end);
	for (i = 0; i < n; i++) {
		curl_multi_remove_handle(multi, streams[i].h);
		curl_easy_cleanup(streams[i].h);
		curl_slist_free_all(streams[i].hdrs);
		streams[i].h = NULL;
		streams[i].hdrs = NULL;
	}
	curl_multi_cleanup(multi);
	return ndone;
}

static void free_streams(struct multi_stream *streams, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		buf_free(&streams[i].body);
		buf_free(&streams[i].head);
	}
}

Test(gateway_stream, five_hundred_concurrent_streams, .timeout = 60)
{
	static const char *const provs[] = { "primary", NULL };
	static struct multi_stream streams[NCONCURRENT];
	const struct csv_table *log;
	size_t ndone;
	size_t i;
	size_t j;
	size_t most = 0;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':50,"
		   "'token_ms':50,'output_tokens':40}]}");
	start_gw("{'request_deadline_ms':20000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':20000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}},"
		 "'stream':{'first_token_timeout_ms':15000,'stall_timeout_ms':10000}}");

	ndone = run_streams(streams, NCONCURRENT, "chat", "many", 30000);
	for (i = 0; i < NCONCURRENT; i++) {
		struct multi_stream *s = &streams[i];
		struct stream_view v;

		cr_assert(s->done, "%s did not end within 30 s", s->rid);
		cr_assert_eq(s->code, CURLE_OK, "%s: curl %d (%s)", s->rid, s->code,
			     curl_easy_strerror(s->code));
		cr_assert_eq(s->status, 200, "%s: status %ld, body %s", s->rid, s->status,
			     s->body.data);
		cr_assert(s->head.data && strcasestr(s->head.data, "x-request-id: many-"),
			  "%s: headers %s", s->rid, s->head.data);
		view_body(s->body.data ? s->body.data : "", s->body.len, &v);
		expect_clean_view(&v, s->rid, CONCURRENT_TOKENS, s->body.data);
	}
	cr_assert_eq(ndone, NCONCURRENT);
	free_streams(streams, NCONCURRENT);
	expect_gateway_idle("after 500 streams");

	/* All completed, and by mockprov's clock all open at once. */
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	cr_assert_eq(log->nrows - 1, NCONCURRENT, "mockprov saw %zu requests", log->nrows - 1);
	for (i = 1; i < log->nrows; i++) {
		double t = strtod(csv_get(log, i, "t_ms"), NULL);
		size_t open = 0;

		cr_assert_str_eq(csv_get(log, i, "outcome"), "completed", "row %zu", i);
		for (j = 1; j < log->nrows; j++) {
			double tj = strtod(csv_get(log, j, "t_ms"), NULL);
			double dj = strtod(csv_get(log, j, "dur_ms"), NULL);

			if (tj <= t && t < tj + dj)
				open++;
		}
		if (open > most)
			most = open;
	}
	cr_assert_eq(most, NCONCURRENT, "at most %zu of the streams were open at once", most);
}

#define NFAULTED 300

/*
 * 300 streams at once through a primary that fails a share of them, by
 * seeded probability, in each way mockprov can (silent before the first
 * token, an error event or a cut before it; a cut or a reset after it):
 * every client stream is either a clean stream with all its tokens
 * (from the primary, or from the secondary after a failover) or ends with
 * an error event and the end of the chunked answer — none is cut short
 * without one, and no client transfer fails. The breaks each client saw
 * add up to the gateway's truncation counts.
 */
Test(gateway_stream, streams_under_faults_never_end_silently, .timeout = 60)
{
	static struct multi_stream streams[NFAULTED];
	size_t clean = 0;
	size_t truncated = 0;
	size_t reset = 0;
	size_t from_secondary = 0;
	const char *text;
	size_t i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':30,'token_ms':20,"
		   "'output_tokens':20,'faults':["
		   "{'kind':'stall','after_tokens':0,'probability':0.15," ALWAYS "},"
		   "{'kind':'error_event','after_tokens':0,'probability':0.15," ALWAYS "},"
		   "{'kind':'truncate','after_tokens':0,'probability':0.15," ALWAYS "},"
		   "{'kind':'truncate','after_tokens':5,'probability':0.15," ALWAYS "},"
		   "{'kind':'reset','after_bytes':1200,'probability':0.15," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':30,'token_ms':20,"
		   "'output_tokens':20}]}");
	start_gw("{'request_deadline_ms':20000,'breaker':{'enabled':false},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':10000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':10000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}},"
		 "'stream':{'first_token_timeout_ms':500,'stall_timeout_ms':2000}}");

	cr_assert_eq(run_streams(streams, NFAULTED, "chat", "faulted", 30000), NFAULTED);
	for (i = 0; i < NFAULTED; i++) {
		struct multi_stream *s = &streams[i];
		const char *body = s->body.data ? s->body.data : "";
		struct stream_view v;

		cr_assert_eq(s->code, CURLE_OK, "%s: curl %d (%s); body:\n%s", s->rid, s->code,
			     curl_easy_strerror(s->code), body);
		cr_assert_eq(s->status, 200, "%s: status %ld, body %s", s->rid, s->status, body);
		view_body(body, s->body.len, &v);
		cr_assert_eq(v.bad_token, -1, "%s: content chunk %ld is \"%s\"; body:\n%s", s->rid,
			     v.bad_token, v.bad_text, body);
		if (v.nerrors == 0) {
			expect_clean_view(&v, s->rid, 20, body);
			clean++;
			if (strcasestr(s->head.data, "x-faultline-provider: secondary"))
				from_secondary++;
			continue;
		}
		/* Broken after the commit: an error event, last, and no [DONE]. */
		cr_assert_eq(v.nerrors, 1, "%s: %zu error events; body:\n%s", s->rid, v.nerrors,
			     body);
		cr_assert_eq(v.error_at, (long)v.nevents - 1, "%s: events after the error;"
			     " body:\n%s", s->rid, body);
		cr_assert_eq(v.ndone, 0, "%s: [DONE] and an error event; body:\n%s", s->rid, body);
		cr_assert_geq(v.ncontent, 1, "%s: an error event before any content; body:\n%s",
			      s->rid, body);
		if (strstr(v.error_data, "\"stream_truncated\""))
			truncated++;
		else if (strstr(v.error_data, "\"stream_reset\""))
			reset++;
		else
			cr_assert_fail("%s: error event %s", s->rid, v.error_data);
	}
	free_streams(streams, NFAULTED);
	cr_assert_eq(clean + truncated + reset, NFAULTED);
	cr_assert_gt(from_secondary, 0, "no failover happened: the faults did not apply");
	cr_assert_gt(truncated + reset, 0, "no stream broke: the faults did not apply");
	expect_gateway_idle("after the faulted streams");
	text = metrics();
	cr_assert_eq(gw_metric_sum(text, "faultline_stream_truncations_total",
				   "provider=primary,reason=truncated", NULL), truncated,
		     "%zu clients saw stream_truncated; metrics:\n%s", truncated, text);
	cr_assert_eq(gw_metric_sum(text, "faultline_stream_truncations_total",
				   "provider=primary,reason=reset", NULL), reset,
		     "%zu clients saw stream_reset; metrics:\n%s", reset, text);
}

/*
 * A slow reader that leaves while its stream is held back (the upstream
 * paused) cancels the upstream as any other: mockprov's request ends
 * client_aborted and the gateway's gauges return to 0.
 */
Test(gateway_stream, slow_reader_leaving_cancels_upstream, .timeout = 30)
{
	static const char *const provs[] = { "primary", NULL };
	const struct csv_table *log;
	struct raw_http *c;
	size_t one = 1;
	size_t row;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'token_ms':0,'output_tokens':100000}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}},"
		 "'stream':{'stall_timeout_ms':5000}}");
	c = send_stream(gw.addr, "chat", "slow-leave", false, 1, 16384);
	cr_assert_eq(raw_read(c, raw_has_events, &one, 5000), 0, "the stream did not start");
	/* Held back: mockprov is still sending, its queue full. */
	cr_assert(gw_metric_wait(&gw, "faultline_streams_in_flight", "", 1, 2000) == 1);
	cr_assert_eq(gw_mock_state(&mock, "primary", "in_flight"), 1);
	raw_close(c);
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 2000),
		  "mockprov's request still open 2 s after the slow client left");
	expect_gateway_idle("after a paused client left");
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "slow-leave");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "client_aborted");
}

/*
 * A client that stops reading for good: while the upstream is paused for
 * it, the gateway gives it up once it has taken nothing for
 * idle_timeout_ms — its connection reset, the upstream cancelled, counted
 * as a client that left — so it cannot hold a stream (and a drain) open
 * forever.
 */
Test(gateway_stream, stuck_reader_is_given_up_after_idle_timeout, .timeout = 30)
{
	static const char *const provs[] = { "primary", NULL };
	const struct csv_table *log;
	struct raw_http *c;
	size_t one = 1;
	size_t row;
	double t0;
	double waited;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'token_ms':0,'output_tokens':100000}]}");
	start_gw("{'idle_timeout_ms':800,'providers':{'primary':{'base_url':'@primary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}},"
		 "'stream':{'stall_timeout_ms':300}}");
	c = send_stream(gw.addr, "chat", "stuck", false, 1, 16384);
	cr_assert_eq(raw_read(c, raw_has_events, &one, 5000), 0, "the stream did not start");
	t0 = now_ms();
	cr_assert(gw_metric_wait(&gw, "faultline_streams_in_flight", "", 1, 2000) == 1);
	/* Not a stall (300 ms), and not given up before 800 ms without progress. */
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 5000),
		  "mockprov's request still open 5 s after the client stopped reading");
	waited = now_ms() - t0;
	cr_assert_geq(waited, 700, "given up after %.0f ms, before idle_timeout_ms", waited);
	expect_gateway_idle("after a stuck client was given up");
	cr_assert_eq(metric("faultline_requests_total", "alias=chat,status=499"), 1);
	cr_assert_eq(metric("faultline_stream_stalls_total", "provider=primary"), 0,
		     "a client's silence is no stall of the provider's");
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "stuck");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "client_aborted");
}

#define SLOW_TOKENS 100000
#define SLOW_PAUSE_MS 1500
#define RSS_BOUND_KB (8 * 1024)

/*
 * A client that reads nothing for 1.5 s of a big, fast stream (100,000
 * tokens at once, over 30 MB with a long model name in every chunk): the
 * gateway holds the upstream back instead of reading it into memory — its
 * RSS grows by under 8 MB, and mockprov has not finished sending — and
 * the pause is not taken for a stall (stall_timeout_ms is 500). Then the
 * client reads the rest: every token in order, the finish and [DONE].
 */
Test(gateway_stream, slow_reader_holds_upstream_back, .timeout = 60)
{
	char model[300];
	char gcfg[2048];
	struct raw_http *warm;
	struct raw_http *c;
	size_t one = 1;
	char cfg[4096];
	char asan_env[1024];
	const char *env[] = { asan_env, NULL };
	const struct gw_opts o = { .env = env };
	const char *asan;
	long base_kb;
	long most_kb;
	size_t warm_len;
	double until;

	memset(model, 'm', 250);
	model[250] = '\0';
	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'token_ms':0,'output_tokens':100000}]}");
	snprintf(gcfg, sizeof(gcfg), "{'request_deadline_ms':10000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':10000}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'%s'}]}},"
		 "'stream':{'first_token_timeout_ms':5000,'stall_timeout_ms':500}}", model);
	/*
	 * Under ASan (make asan) freed memory sits in a quarantine, so RSS
	 * would count what the gateway freed as well: without one, its RSS is
	 * what it holds.
	 */
	asan = getenv("ASAN_OPTIONS");
	snprintf(asan_env, sizeof(asan_env), "ASAN_OPTIONS=%s%squarantine_size_mb=0:"
		 "thread_local_quarantine_size_kb=0", asan ? asan : "", asan && *asan ? ":" : "");
	cr_assert_not_null(gw_template(cfg, sizeof(cfg), gcfg, &mock));
	cr_assert_eq(gw_start(&gw, cfg, &o), 0, "the gateway did not start on %s", cfg);

	/* One stream read at full speed first, so the baseline has the allocator warm. */
	warm = gw_stream("chat", "warm-1", false, 30000);
	expect_clean(warm, "a fast reader", SLOW_TOKENS);
	cr_assert_gt(warm->body.len, 30u << 20, "the stream is only %zu bytes", warm->body.len);
	expect_gateway_idle("after the warm-up");
	warm_len = warm->body.len;
	raw_free(warm);
	base_kb = gw_rss_kb(&gw);
	cr_assert_gt(base_kb, 0, "no VmRSS for the gateway");

	c = send_stream(gw.addr, "chat", "slow-1", false, 1, 16384);
	cr_assert_eq(raw_read(c, raw_has_events, &one, 5000), 0, "the stream did not start");
	most_kb = base_kb;
	until = now_ms() + SLOW_PAUSE_MS;
	while (now_ms() < until) {
		long kb = gw_rss_kb(&gw);

		if (kb > most_kb)
			most_kb = kb;
		usleep(20000);	/* sampling RSS while the client does not read: the test's point */
	}
	cr_assert_lt(most_kb - base_kb, RSS_BOUND_KB, "the gateway's RSS grew by %ld KiB while"
		     " the client read nothing of a %zu-byte stream (from %ld KiB)",
		     most_kb - base_kb, warm_len, base_kb);
	cr_assert_eq(gw_mock_state(&mock, "primary", "in_flight"), 1,
		     "mockprov finished sending to a gateway whose client read nothing");

	cr_assert_eq(raw_read(c, NULL, NULL, 30000), 0, "the rest of the stream did not come;"
		     " bytes:\n%s", raw_tail(c, 4000));
	expect_clean(c, "a slow reader", SLOW_TOKENS);
	cr_assert_eq(metric("faultline_stream_stalls_total", "provider=primary"), 0,
		     "the paused stream was taken for a stall");
	expect_gateway_idle("after the slow reader");
}

/* ---- cost ---- */

/* The cost at 0.15 and 0.6 USD per 1k input and output tokens. */
static double cost_of(double in, double out)
{
	return in * 0.15 / 1000 + out * 0.6 / 1000;
}

/*
 * The cost goes out as the chunked trailer x-faultline-cost-usd, after
 * [DONE] (announced by Trailer:): with stream_options.include_usage the
 * usage chunk is passed through (after the finish, before [DONE]) and the
 * cost is its usage × the price; without it, the same from the content
 * chunks and the request's text (14 bytes: 4 tokens). An HTTP/1.0 client
 * gets the stream close-delimited, whole, without a trailer.
 */
Test(gateway_stream, cost_trailer_after_done, .timeout = 20)
{
	struct stream_view v;
	struct raw_http *c;
	char val[64];
	double cost;
	double want;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,"
		   "'output_tokens':8}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@',"
		 "'price_per_1k':{'input':0.15,'output':0.6}}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}");

	/* With usage. */
	c = gw_stream("chat", "cost-usage", true, 5000);
	expect_clean(c, "with include_usage", 8);
	view_events(&c->sse, &v);
	cr_assert_gt(v.usage_at, v.finish_at, "no usage chunk after the finish; bytes:\n%s",
		     raw_tail(c, 4000));
	cr_assert_lt(v.usage_at, v.done_at);
	cr_assert(v.prompt_tokens == PROMPT_TOKENS && v.completion_tokens == 8,
		  "usage %g/%g", v.prompt_tokens, v.completion_tokens);
	cr_assert_not_null(raw_trailer(c, "x-faultline-cost-usd", val, sizeof(val)),
			   "no x-faultline-cost-usd trailer; the end of the answer:\n%s",
			   raw_tail(c, 600));
	cr_assert_null(raw_header(c, "x-faultline-cost-usd", val, sizeof(val)),
		       "the cost came as a header, before the stream");
	raw_trailer(c, "x-faultline-cost-usd", val, sizeof(val));
	cost = strtod(val, NULL);
	want = cost_of(v.prompt_tokens, v.completion_tokens);
	cr_assert(fabs(cost - want) <= 1e-9 + want * 1e-4, "x-faultline-cost-usd %s, expected %.9f",
		  val, want);
	/* The trailer is the last thing: right after the data: [DONE] chunk. */
	cr_assert_eq(c->sse.ev[c->sse.nev - 1].body_off, c->body.len);

	/* Without usage: counted from the chunks and the request. */
	c = gw_stream("chat", "cost-count", false, 5000);
	expect_clean(c, "without include_usage", 8);
	view_events(&c->sse, &v);
	cr_assert_eq(v.usage_at, -1, "a usage chunk nobody asked for");
	cr_assert_not_null(raw_trailer(c, "x-faultline-cost-usd", val, sizeof(val)),
			   "no x-faultline-cost-usd trailer; the end of the answer:\n%s",
			   raw_tail(c, 600));
	cost = strtod(val, NULL);
	want = cost_of(PROMPT_TOKENS, 8);
	cr_assert(fabs(cost - want) <= 1e-9 + want * 1e-4, "x-faultline-cost-usd %s, expected %.9f",
		  val, want);

	/* HTTP/1.0: close-delimited, no trailer. */
	c = send_stream(gw.addr, "chat", "cost-http10", true, 0, 0);
	cr_assert_eq(raw_read(c, NULL, NULL, 5000), 0, "the HTTP/1.0 answer did not end; bytes:\n%s",
		     raw_tail(c, 4000));
	cr_assert_eq(c->status, 200, "status %d; bytes:\n%s", c->status, raw_tail(c, 4000));
	cr_assert(!c->chunked, "chunked to an HTTP/1.0 client");
	cr_assert(c->eof, "the close-delimited answer did not end with a close");
	view_events(&c->sse, &v);
	expect_clean_view(&v, "HTTP/1.0", 8, raw_tail(c, 4000));
	cr_assert_null(c->trailer);
	expect_gateway_idle("after the cost requests");
}

/* ---- a drain ---- */

/*
 * SIGTERM while a stream is being relayed lets it finish (every token,
 * [DONE]); a second SIGTERM cuts a stream still going with an error event
 * gateway_stopping and the end of the chunked answer, and the gateway
 * exits 0.
 */
Test(gateway_stream, sigterm_drains_then_cuts_streams, .timeout = 30)
{
	struct stream_view v;
	struct raw_http *shortc;
	struct raw_http *longc;
	size_t two = 2;

	start_mock("{'providers':["
		   "{'name':'short','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':50,"
		   "'output_tokens':12},"
		   "{'name':'long','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':50,"
		   "'output_tokens':400}]}");
	start_gw("{'request_deadline_ms':10000,"
		 "'providers':{'short':{'base_url':'@short@'},'long':{'base_url':'@long@'}},"
		 "'models':{'short':{'targets':[{'provider':'short','model':'mock-small'}]},"
		 "'long':{'targets':[{'provider':'long','model':'mock-small'}]}}}");

	shortc = send_stream(gw.addr, "short", "drain-short", false, 1, 0);
	longc = send_stream(gw.addr, "long", "drain-long", false, 1, 0);
	cr_assert_eq(raw_read(shortc, raw_has_events, &two, 5000), 0);
	cr_assert_eq(raw_read(longc, raw_has_events, &two, 5000), 0);
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	raw_read(shortc, NULL, NULL, 5000);
	expect_clean(shortc, "a stream during the drain", 12);

	cr_assert_eq(raw_read(longc, raw_has_events, &(size_t){ 30 }, 5000), 0,
		     "the long stream stopped during the drain; bytes:\n%s", raw_tail(longc, 2000));
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	raw_read(longc, NULL, NULL, 5000);
	expect_broken(longc, "a stream cut by the second SIGTERM", -1, "gateway_stopping", &v);
	cr_assert_eq(gw_wait(&gw, 5000), 0, "the gateway did not exit 0 after the second SIGTERM");
}

/* ---- a real client: the openai SDK ---- */

/*
 * Runs tests/node/openai_client.mjs against base_url and model (stream_only:
 * no non-streaming request), within timeout_ms; its stdout into out, stderr
 * into err. Returns its exit status (-1: killed at the timeout). Asserts
 * node and the installed openai package are there: the test fails, not
 * skips, without them.
 */
static int run_openai_client(const char *base_url, const char *model, bool stream_only,
			     char *out, size_t outlen, char *err, size_t errlen, double timeout_ms)
{
	const char *args[] = { "tests/node/openai_client.mjs", base_url, model,
			       stream_only ? "--stream-only" : NULL, NULL };

	cr_assert_null(node_unavailable("openai"), "%s", node_unavailable("openai"));
	return node_run(args, out, outlen, err, errlen, timeout_ms);
}

/* The script's JSON output, held; asserts it is an object. */
static cJSON *client_doc(const char *out, const char *err)
{
	cJSON *doc = gw_held_doc(&held, cJSON_Parse(out));

	cr_assert(cJSON_IsObject(doc), "openai_client.mjs printed no JSON object:\n%s\nstderr:\n%s",
		  out, err);
	return doc;
}

/*
 * The openai npm package, a real client: a chat completion and a stream
 * (its chunks' delta content joined) give the same content through the
 * gateway as from mockprov directly, and it is not empty. When the primary
 * stalls after 3 tokens, the SDK's stream iteration throws on the
 * gateway's error event (code stream_stalled) after those 3 tokens; the
 * script reports it and exits 1, so the break is never a silent success.
 */
Test(gateway_stream, openai_sdk_client, .timeout = 60)
{
	static char out[65536];
	static char err[65536];
	char base[160];
	const char *direct_ns;
	const char *direct_s;
	const char *gw_ns;
	const cJSON *serr;
	cJSON *doc;
	int rc;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':5,"
		   "'output_tokens':12},"
		   "{'name':'stalls','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':20,"
		   "'output_tokens':12,'faults':[{'kind':'stall','after_tokens':3," ALWAYS "}]},"
		   "{'name':'dead','listen':'127.0.0.1:0','faults':[{'kind':'down'," ALWAYS "}]}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},'stalls':{'base_url':'@stalls@'},"
		 "'dead':{'base_url':'@dead@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]},"
		 "'stalls':{'targets':[{'provider':'stalls','model':'mock-small'}]},"
		 "'degraded':{'targets':[{'provider':'dead','model':'mock-small'}],"
		 "'degraded':{'mode':'static','content':'Busy, back soon.'}}},"
		 "'stream':{'stall_timeout_ms':400}}");

	/* mockprov directly. */
	snprintf(base, sizeof(base), "http://%s/v1", mock_addr(&mock, "primary"));
	rc = run_openai_client(base, "mock-small", false, out, sizeof(out), err, sizeof(err), 20000);
	cr_assert_eq(rc, 0, "openai_client.mjs against mockprov exited %d:\n%s\nstderr:\n%s", rc,
		     out, err);
	doc = client_doc(out, err);
	direct_ns = gw_json_str(doc, "nonstream");
	direct_s = gw_json_str(doc, "stream");
	cr_assert(direct_ns && direct_s && direct_ns[0], "%s", out);
	cr_assert_str_eq(direct_s, direct_ns, "mockprov's stream and answer differ: %s", out);

	/* Through the gateway. */
	snprintf(base, sizeof(base), "http://%s/v1", gw.addr);
	rc = run_openai_client(base, "chat", false, out, sizeof(out), err, sizeof(err), 20000);
	cr_assert_eq(rc, 0, "openai_client.mjs through the gateway exited %d:\n%s\nstderr:\n%s", rc,
		     out, err);
	doc = client_doc(out, err);
	gw_ns = gw_json_str(doc, "nonstream");
	cr_assert(gw_ns && gw_ns[0], "no content through the gateway: %s", out);
	cr_assert_str_eq(gw_ns, direct_ns, "the gateway's answer is not mockprov's");
	cr_assert(gw_json_str(doc, "stream"), "%s", out);
	cr_assert_str_eq(gw_json_str(doc, "stream"), direct_s, "the gateway's stream is not"
			 " mockprov's");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "stream_error")), "%s", out);

	/* A stall after 3 tokens: the SDK throws. */
	rc = run_openai_client(base, "stalls", true, out, sizeof(out), err, sizeof(err), 20000);
	doc = client_doc(out, err);
	serr = cJSON_GetObjectItemCaseSensitive(doc, "stream_error");
	cr_assert(cJSON_IsObject(serr), "the SDK's stream ended without an error (exit %d): %s\n"
		  "stderr:\n%s", rc, out, err);
	cr_assert(gw_json_str(serr, "code") && strcmp(gw_json_str(serr, "code"), "stream_stalled") == 0,
		  "the SDK's error: %s", out);
	cr_assert_str_eq(gw_json_str(doc, "stream"), "Lorem ipsum dolor",
			 "the content before the error: %s", out);
	cr_assert_eq(rc, 1, "openai_client.mjs exited %d after a stream error: %s", rc, out);

	/* A degraded answer, both ways: well-formed enough for the SDK, its content the alias's. */
	rc = run_openai_client(base, "degraded", false, out, sizeof(out), err, sizeof(err), 20000);
	cr_assert_eq(rc, 0, "openai_client.mjs on a degraded answer exited %d:\n%s\nstderr:\n%s",
		     rc, out, err);
	doc = client_doc(out, err);
	cr_assert_str_eq(gw_json_str(doc, "nonstream"), "Busy, back soon.", "%s", out);
	cr_assert_str_eq(gw_json_str(doc, "stream"), "Busy, back soon.", "%s", out);
}
