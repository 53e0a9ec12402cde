/*
 * bin/gateway's routing past plain failover, as a client sees it against
 * real mock providers on loopback (README, gateway: "Hedging", "Retry and
 * hedge budget", "Request classes", "Cost", and the breaker's latency
 * budget): a slow first attempt hedged on the next target after a fixed
 * or a learned delay, the loser cancelled at once and not held against
 * its provider; no hedge for a fast answer or a no-reroute request; a
 * hedge that fails leaving the first attempt to answer; streams hedged
 * before their commit; the budget capping hedges and same-target retries;
 * batch requests waiting in their alias's queue while every target is
 * open (full, expired, left, drained one at a time); a breaker opened by
 * latency alone; and the discarded attempts' cost.
 *
 * Each test checks the providers' logs (who was asked, when, and how the
 * request ended there) and /metrics too. Configs are written with single
 * quotes (gw_template turns them into JSON); @NAME@ stands for mock
 * provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
/* Timing of a fast healthy mock provider: its answer 20 ms after the request. */
#define FAST "'ttft_ms':20,'jitter_ms':0,'token_ms':0,'output_tokens':8"
#define FAST_MS 20
/* gw_chat_body's one message, "Say something.": 14 bytes, so 4 prompt tokens. */
#define PROMPT_TOKENS 4
/* A chain of the primary, then the secondary. */
#define CHAIN "'targets':[{'provider':'primary','model':'mock-small'}," \
	"{'provider':'secondary','model':'mock-small'}]"
/* Slack for the scheduling of three processes on a loaded machine. */
#define SLACK_MS 250

/* ---- fixtures: what a test started or read, undone by teardown ---- */

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;

#define MAX_BG 8
static struct gw_bg bgs[MAX_BG];
static size_t nbgs;

static void teardown(void)
{
	size_t i;

	for (i = 0; i < nbgs; i++) {
		gw_bg_join(&bgs[i]);
		http_result_free(&bgs[i].r);
	}
	nbgs = 0;
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_route, .fini = teardown);

/* ---- helpers ---- */

static void start_mock(const char *tmpl)
{
	gw_mock_start_template(&mock, tmpl);
}

static void start_gw(const char *tmpl)
{
	gw_start_template(&gw, tmpl, &mock, NULL);
}

static struct http_result *chat(const char *alias, const char *rid, const char *extra,
				double timeout_ms)
{
	return gw_chat_held(&gw, &held, alias, rid, extra, timeout_ms);
}

/* A request for alias on a thread of its own, joined by teardown at the latest. */
static struct gw_bg *chat_bg(const char *alias, const char *rid, const char *extra,
			     double timeout_ms)
{
	cr_assert_lt(nbgs, MAX_BG);
	gw_bg_start(&bgs[nbgs], &gw, alias, rid, extra, timeout_ms);
	return &bgs[nbgs++];
}

static const char *metrics(void)
{
	return gw_metrics_held(&gw, &held);
}

/*
 * The lines of /metrics that start with prefix (the samples a failure
 * message shows, rather than the whole text), in a buffer of its own.
 */
static const char *metric_lines(const char *prefix)
{
	static char out[8192];
	const char *p = metrics();
	size_t n = 0;

	out[0] = '\0';
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);

		if (strncmp(p, prefix, strlen(prefix)) == 0 && n + len < sizeof(out)) {
			memcpy(out + n, p, len);
			n += len;
			out[n] = '\0';
		}
		p += len;
	}
	return out;
}

/* A sample of /metrics, 0 when absent (a counter never incremented). */
static double metric0(const char *name, const char *labels)
{
	double v = gw_metric(metrics(), name, labels);

	return isnan(v) ? 0 : v;
}

/* Waits (up to 2 s) for faultline_hedges_total{alias,event} to be want, and asserts it. */
static void expect_hedges(const char *alias, const char *event, double want)
{
	char labels[128];
	double v;

	snprintf(labels, sizeof(labels), "alias=%s,event=%s", alias, event);
	v = gw_metric_wait(&gw, "faultline_hedges_total", labels, want, want ? 2000 : 0);
	if (isnan(v) && want == 0)
		v = 0;
	cr_assert_eq(v, want, "faultline_hedges_total{%s} %g, expected %g; metrics:\n%s", labels,
		     v, want, metric_lines("faultline_hedges_total"));
}

/* Asserts x-faultline-hedged: want. */
static void expect_hedged(const struct http_result *r, const char *what, int want)
{
	char v[32];
	char w[8];

	snprintf(w, sizeof(w), "%d", want);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-hedged", v, sizeof(v)), w,
			 "%s: x-faultline-hedged %s, expected %s", what, v, w);
}

/* Asserts a 200 from prov after attempts attempts, hedged or not. */
static void expect_routed(const struct http_result *r, const char *what, const char *prov,
			  int attempts, int hedged)
{
	gw_expect_answer(r, what, prov, attempts);
	expect_hedged(r, what, hedged);
}

/* Asserts the client's wait was within [lo, hi] ms. */
static void expect_took(const struct http_result *r, const char *what, double lo, double hi)
{
	cr_assert(r->total_ms >= lo && r->total_ms <= hi,
		  "%s: answered after %.0f ms, expected %.0f–%.0f ms", what, r->total_ms, lo, hi);
}

/* Injects a fault into mockprov (a JSON object written with single quotes). */
static void inject(const char *tmpl)
{
	char fault[512];

	cr_assert_not_null(gw_template(fault, sizeof(fault), tmpl, NULL));
	cr_assert_eq(gw_mock_inject(&mock, fault), 201, "mockprov refused the fault %s", fault);
}

/* Asserts that a target's breaker held nothing against it: closed, no failure. */
static void expect_no_failure(const char *prov)
{
	const cJSON *b = gw_breaker_must(gw_breakers_held(&gw, &held), prov, "mock-small");
	const cJSON *totals = cJSON_GetObjectItemCaseSensitive(b, "totals");
	const cJSON *window = cJSON_GetObjectItemCaseSensitive(b, "window");

	cr_assert_str_eq(gw_json_str(b, "state"), "closed", "%s's breaker", prov);
	cr_assert_eq(gw_json_num(b, "consecutive_failures"), 0, "%s: %s", prov,
		     cJSON_PrintUnformatted(b));
	cr_assert_eq(gw_json_num(totals, "failures"), 0, "%s: %s", prov, cJSON_PrintUnformatted(b));
	cr_assert_eq(gw_json_num(window, "failures"), 0, "%s: %s", prov, cJSON_PrintUnformatted(b));
}

/* The only row of rid in mock-PROV.csv, which gw_mock_settle completed. */
static size_t row_of(const struct csv_table *t, const char *prov, const char *rid)
{
	return gw_row_of(t, prov, rid);
}

/* Asserts that the loser's request was cancelled: client_aborted, within lasted ms. */
static void expect_aborted(const struct csv_table *t, const char *prov, const char *rid,
			   double lasted)
{
	size_t row = row_of(t, prov, rid);

	cr_assert_str_eq(csv_get(t, row, "outcome"), "client_aborted", "%s at %s", rid, prov);
	cr_assert_lt(gw_row_num(t, row, "dur_ms"), lasted,
		     "%s at %s lasted %s ms: not cancelled at once", rid, prov,
		     csv_get(t, row, "dur_ms"));
}

/* Asserts that rid reached hedge_prov [lo, hi] ms after first_prov (the hedge delay). */
static void expect_hedge_delay(const struct csv_table *first, const struct csv_table *hedge,
			       const char *first_prov, const char *hedge_prov, const char *rid,
			       double lo, double hi)
{
	double t1 = gw_row_num(first, row_of(first, first_prov, rid), "t_ms");
	double t2 = gw_row_num(hedge, row_of(hedge, hedge_prov, rid), "t_ms");

	cr_assert(t2 - t1 >= lo && t2 - t1 <= hi,
		  "%s reached %s %.1f ms after %s, expected %.0f–%.0f ms", rid, hedge_prov,
		  t2 - t1, first_prov, lo, hi);
}

/* ---- hedging ---- */

/*
 * A primary 1.5 s slow, hedged after 100 ms: the secondary (20 ms) answers
 * at about 120 ms with x-faultline-hedged 1 and two attempts; the primary's
 * request, which reached it at once, is closed as soon as the secondary
 * wins (client_aborted, long before its answer was due), counted as
 * cancelled and not held against its breaker; the secondary got the
 * request 100 ms after the primary.
 */
Test(gateway_route, fixed_hedge_answers_from_the_secondary, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *plog;
	const struct csv_table *slog;
	const char *text;
	struct http_result *r;
	size_t row;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':1500," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100}}}}");

	r = chat("chat", "hedge-1", NULL, 5000);
	expect_routed(r, "hedged", "secondary", 2, 1);
	expect_took(r, "hedged", 100 + FAST_MS - 5, 100 + FAST_MS + SLACK_MS);

	expect_hedges("chat", "started", 1);
	expect_hedges("chat", "won", 1);
	expect_hedges("chat", "cancelled", 1);
	cr_assert(gw_metric_wait(&gw, "faultline_attempts_total", "provider=primary,outcome=cancelled",
				 1, 2000) == 1, "the loser is not counted cancelled: metrics:\n%s",
		  metric_lines("faultline_attempts_total"));
	text = metrics();
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=secondary,outcome=success"),
		     1, "metrics:\n%s", metric_lines("faultline_attempts_total"));
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 1);
	expect_no_failure("primary");

	gw_mock_settle(&mock, provs);
	plog = gw_mock_rows(&held, &mock, "primary");
	slog = gw_mock_rows(&held, &mock, "secondary");
	/* Its answer was due 1520 ms after it arrived; the hedge won at about 120. */
	expect_aborted(plog, "primary", "hedge-1", 100 + FAST_MS + SLACK_MS);
	row = row_of(slog, "secondary", "hedge-1");
	cr_assert_str_eq(csv_get(slog, row, "outcome"), "completed");
	cr_assert_eq(gw_row_num(slog, row, "status"), 200);
	expect_hedge_delay(plog, slog, "primary", "secondary", "hedge-1", 95, 100 + SLACK_MS);
}

/*
 * A primary that answers (20 ms) well before after_ms (300) is never
 * hedged: hedged 0, one attempt, no hedge counted, and the secondary never
 * sees a request.
 */
Test(gateway_route, no_hedge_before_the_delay, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	char rid[32];
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':300}}}}");
	for (i = 0; i < 3; i++) {
		struct http_result *r;

		snprintf(rid, sizeof(rid), "fast-%d", i);
		r = chat("chat", rid, NULL, 5000);
		expect_routed(r, rid, "primary", 1, 0);
		expect_took(r, rid, 0, 300);
	}
	expect_hedges("chat", "started", 0);
	expect_hedges("chat", "cancelled", 0);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0);
	gw_mock_settle(&mock, provs);
	cr_assert_eq(gw_mock_rows(&held, &mock, "secondary")->nrows, 1,
		     "the secondary's log has rows");
	cr_assert_eq(gw_mock_rows(&held, &mock, "primary")->nrows, 4);
}

/*
 * The first attempt may still win: a primary answering at 250 ms, hedged
 * after 100 ms on a secondary that needs 1000 ms, answers itself
 * (hedged 1, attempts 2, provider primary, at about 250 ms); the hedge is
 * the one cancelled (client_aborted at the secondary, within about 150 ms
 * of reaching it), and no hedge is counted as won.
 */
Test(gateway_route, the_first_attempt_can_still_win, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *plog;
	const struct csv_table *slog;
	struct http_result *r;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':250,'output_tokens':4},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':1000,'output_tokens':4}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100}}}}");
	r = chat("chat", "first-wins", NULL, 5000);
	expect_routed(r, "the first attempt wins", "primary", 2, 1);
	expect_took(r, "the first attempt wins", 245, 250 + SLACK_MS);
	expect_hedges("chat", "started", 1);
	expect_hedges("chat", "cancelled", 1);
	expect_hedges("chat", "won", 0);
	cr_assert_eq(gw_metric_wait(&gw, "faultline_attempts_total",
				    "provider=secondary,outcome=cancelled", 1, 2000), 1,
		     "the hedge is not counted cancelled: metrics:\n%s",
		     metric_lines("faultline_attempts_total"));
	expect_no_failure("secondary");
	gw_mock_settle(&mock, provs);
	plog = gw_mock_rows(&held, &mock, "primary");
	slog = gw_mock_rows(&held, &mock, "secondary");
	cr_assert_str_eq(csv_get(plog, row_of(plog, "primary", "first-wins"), "outcome"),
			 "completed");
	expect_aborted(slog, "secondary", "first-wins", 150 + SLACK_MS);
	expect_hedge_delay(plog, slog, "primary", "secondary", "first-wins", 95, 100 + SLACK_MS);
}

/*
 * A stream whose first token is late at the primary (1.5 s) is hedged
 * after 100 ms, before anything went to the client: the client gets one
 * clean stream from the secondary — every token in order, one [DONE], no
 * error event — with x-faultline-hedged 1; the primary's streaming
 * request is closed at once, before any token.
 */
Test(gateway_route, streams_are_hedged_before_their_commit, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *plog;
	struct http_result *r = gw_held_result(&held);
	const char *hdrs[] = { "x-request-id: stream-hedge", NULL };
	struct http_opts o = {
		.body = "{\"model\":\"chat\",\"stream\":true,\"messages\":"
			"[{\"role\":\"user\",\"content\":\"Say something.\"}]}",
		.headers = hdrs,
		.timeout_ms = 5000,
	};
	char **events = NULL;
	size_t nerr = 0;
	size_t nev;
	size_t ncontent = 0;
	size_t ndone = 0;
	char url[128];
	char v[128];
	size_t i;
	size_t row;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':1500," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':10,"
		   "'output_tokens':4}]}");
	start_gw("{'stream':{'first_token_timeout_ms':3000},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100}}}}");
	cr_assert_eq(http_do(gw_url(&gw, "/v1/chat/completions", url, sizeof(url)), &o, r), 0);
	expect_routed(r, "hedged stream", "secondary", 2, 1);
	cr_assert(strstr(gw_header_str(r, "content-type", v, sizeof(v)), "text/event-stream"),
		  "content-type %s", v);
	/* The hedge at 100 ms, then the secondary's 20 ms and 3 × 10 ms of tokens. */
	expect_took(r, "hedged stream", 100 + 20 + 30 - 5, 100 + 50 + SLACK_MS);
	nev = sse_parse(r->body, &events, &nerr);
	for (i = 0; i < nev; i++) {
		cJSON *doc;
		const cJSON *content;

		if (strcmp(events[i], "[DONE]") == 0) {
			ndone++;
			cr_assert_eq(i, nev - 1, "[DONE] is not the last event:\n%s", r->body);
			continue;
		}
		doc = gw_held_doc(&held, cJSON_Parse(events[i]));
		cr_assert_not_null(doc, "event %zu is not JSON: %s", i, events[i]);
		content = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "choices"), 0),
			"delta"), "content");
		if (cJSON_IsString(content) && content->valuestring[0])
			ncontent++;
	}
	sse_free(events, nev);
	cr_assert_eq(nerr, 0, "error events in:\n%s", r->body);
	cr_assert_eq(ndone, 1, "[DONE] %zu times in:\n%s", ndone, r->body);
	cr_assert_eq(ncontent, 4, "%zu content chunks, not the secondary's 4:\n%s", ncontent,
		     r->body);
	expect_hedges("chat", "started", 1);
	expect_hedges("chat", "won", 1);
	expect_hedges("chat", "cancelled", 1);
	expect_no_failure("primary");
	gw_mock_settle(&mock, provs);
	plog = gw_mock_rows(&held, &mock, "primary");
	expect_aborted(plog, "primary", "stream-hedge", 100 + 50 + SLACK_MS);
	row = row_of(plog, "primary", "stream-hedge");
	cr_assert_eq(gw_row_num(plog, row, "streaming"), 1);
	cr_assert_eq(gw_row_num(plog, row, "tokens_out"), 0);
}

/*
 * Without after_ms the delay is learned: before min_samples (5) successes
 * it is max_after_ms (600), so a slow primary is hedged at about 600 ms;
 * once five 100 ms answers have been seen it is their p95 (about 100 ms),
 * so the same slow primary is hedged at about 100 ms — not at
 * max_after_ms, and no sooner than its own latency (min_after_ms 10 is
 * not used either).
 */
Test(gateway_route, adaptive_hedge_uses_the_learned_percentile, .timeout = 30)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *plog;
	const struct csv_table *slog;
	struct http_result *r;
	char rid[32];
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':100,'jitter_ms':0,"
		   "'output_tokens':4},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'min_samples':5,'min_after_ms':10,"
		 "'max_after_ms':600,'percentile':95}}}}");

	/* Cold: no successes seen, so max_after_ms. */
	inject("{'provider':'primary','kind':'slow','add_ms':1500,'duration_s':30}");
	r = chat("chat", "cold", NULL, 5000);
	expect_routed(r, "cold", "secondary", 2, 1);
	expect_took(r, "cold", 600 + FAST_MS - 5, 600 + FAST_MS + SLACK_MS);
	cr_assert_eq(gw_mock_clear(&mock, "primary"), 200);
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 2000),
		  "the cold loser was not cancelled");

	/* Warm-up: five 100 ms successes, each under max_after_ms, so not hedged. */
	for (i = 0; i < 5; i++) {
		snprintf(rid, sizeof(rid), "warm-%d", i);
		r = chat("chat", rid, NULL, 5000);
		expect_routed(r, rid, "primary", 1, 0);
	}

	/* Warm: the p95 of those, about 100 ms. */
	inject("{'provider':'primary','kind':'slow','add_ms':1500,'duration_s':30}");
	r = chat("chat", "warm", NULL, 5000);
	expect_routed(r, "warm", "secondary", 2, 1);
	expect_took(r, "warm", 100 + FAST_MS - 5, 100 + FAST_MS + SLACK_MS);
	expect_hedges("chat", "started", 2);
	expect_hedges("chat", "won", 2);

	cr_assert_eq(gw_mock_clear(&mock, NULL), 200);
	gw_mock_settle(&mock, provs);
	plog = gw_mock_rows(&held, &mock, "primary");
	slog = gw_mock_rows(&held, &mock, "secondary");
	expect_hedge_delay(plog, slog, "primary", "secondary", "cold", 595, 600 + SLACK_MS);
	expect_hedge_delay(plog, slog, "primary", "secondary", "warm", 95, 100 + SLACK_MS);
	cr_assert_eq(slog->nrows, 3, "the secondary saw %zu requests, not the two hedges",
		     slog->nrows - 1);
}

/*
 * A hedge that fails (the secondary's 503, at once) does not end the
 * request: the primary's slow answer (620 ms) still comes back, 200 from
 * the primary after two attempts, hedged 1; nothing was cancelled and no
 * hedge won.
 */
Test(gateway_route, a_failed_hedge_leaves_the_first_attempt_going, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *slog;
	struct http_result *r;
	const char *text;
	size_t row;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':600," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'status','status':503," ALWAYS "}]}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100}}}}");
	r = chat("chat", "hedge-503", NULL, 5000);
	expect_routed(r, "a failed hedge", "primary", 2, 1);
	expect_took(r, "a failed hedge", 600 + FAST_MS - 5, 600 + FAST_MS + SLACK_MS);
	expect_hedges("chat", "started", 1);
	expect_hedges("chat", "won", 0);
	expect_hedges("chat", "cancelled", 0);
	text = metrics();
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=secondary,outcome=http_5xx"),
		     1, "metrics:\n%s", metric_lines("faultline_attempts_total"));
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=primary,outcome=success"),
		     1, "metrics:\n%s", metric_lines("faultline_attempts_total"));
	gw_mock_settle(&mock, provs);
	slog = gw_mock_rows(&held, &mock, "secondary");
	row = row_of(slog, "secondary", "hedge-503");
	cr_assert_eq(gw_row_num(slog, row, "status"), 503);
	cr_assert_eq(slog->nrows, 2, "the secondary was asked %zu times", slog->nrows - 1);
}

/*
 * A no-reroute request is never hedged, however slow its first attempt:
 * the slow primary answers it (hedged 0, one attempt) and the secondary
 * never sees it; the same request without the header is hedged, so the
 * alias does hedge.
 */
Test(gateway_route, no_reroute_is_never_hedged, .timeout = 20)
{
	struct http_result *r;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':600," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100}}}}");
	r = chat("chat", "nr-slow", "x-faultline-no-reroute: 1", 5000);
	expect_routed(r, "no reroute", "primary", 1, 0);
	expect_took(r, "no reroute", 600 + FAST_MS - 5, 600 + FAST_MS + SLACK_MS);
	expect_hedges("chat", "started", 0);
	cr_assert_eq(metric0("faultline_budget_exhausted_total", "alias=chat,kind=hedge"), 0,
		     "a no-reroute request drew on the hedge budget");
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "a no-reroute request reached the secondary");

	r = chat("chat", "rr-slow", NULL, 5000);
	expect_routed(r, "without the header", "secondary", 2, 1);
	expect_hedges("chat", "started", 1);
}

/* ---- the budget ---- */

/*
 * A budget of 2 tokens that never refill (ratio 0, min_per_second 0,
 * burst 2): of five requests to a slow primary only the first two are
 * hedged (the secondary answers them at once); the other three wait for
 * the primary (hedged 0, one attempt, 620 ms), each counted in
 * faultline_budget_exhausted_total{kind="hedge"}.
 */
Test(gateway_route, the_budget_caps_hedges, .timeout = 20)
{
	char rid[32];
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':600," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000}},"
		 "'models':{'chat':{" CHAIN ",'hedge':{'after_ms':100},"
		 "'budget':{'ratio':0,'min_per_second':0,'burst':2}}}}");
	for (i = 0; i < 5; i++) {
		struct http_result *r;

		snprintf(rid, sizeof(rid), "budget-%d", i);
		r = chat("chat", rid, NULL, 5000);
		if (i < 2) {
			expect_routed(r, rid, "secondary", 2, 1);
		} else {
			expect_routed(r, rid, "primary", 1, 0);
			expect_took(r, rid, 600 + FAST_MS - 5, 600 + FAST_MS + SLACK_MS);
		}
	}
	expect_hedges("chat", "started", 2);
	cr_assert_eq(gw_metric(metrics(), "faultline_budget_exhausted_total",
			       "alias=chat,kind=hedge"), 3, "metrics:\n%s",
		     metric_lines("faultline_budget_exhausted_total"));
	cr_assert_eq(metric0("faultline_budget_exhausted_total", "alias=chat,kind=retry"), 0);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 2);
}

/*
 * Same-target retries draw on the budget too: with max_retries 3 against
 * a provider that always answers 503, and a budget of one token, the first
 * request makes one retry (two attempts in the provider's log) and the
 * second none (one attempt); both end 502, and each retry refused for
 * want of a token (one per request, which then has no target left) is
 * counted in faultline_budget_exhausted_total{kind="retry"}.
 */
Test(gateway_route, the_budget_caps_retries, .timeout = 20)
{
	static const char *const provs[] = { "fails", NULL };
	const struct csv_table *log;
	struct http_result *r;
	cJSON *doc;
	size_t rows[8];

	start_mock("{'providers':[{'name':'fails','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'status','status':503," ALWAYS "}]}]}");
	start_gw("{'breaker':{'enabled':false},"
		 "'providers':{'fails':{'base_url':'@fails@','timeout_ms':1000}},"
		 "'models':{'r':{'targets':[{'provider':'fails','model':'mock-small'}],"
		 "'max_attempts':8,'retry':{'max_retries':3,'base_ms':1,'cap_ms':5},"
		 "'budget':{'ratio':0,'min_per_second':0,'burst':1}}}}");
	r = chat("r", "retry-1", NULL, 5000);
	doc = gw_expect_error(&held, r, "one retry", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 2, "retry-1: %s", r->body);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			     cJSON_GetObjectItemCaseSensitive(doc, "error"), "attempts")), 2,
		     "retry-1: %s", r->body);
	r = chat("r", "retry-2", NULL, 5000);
	gw_expect_error(&held, r, "no retry", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1, "retry-2: %s", r->body);
	cr_assert_eq(gw_metric(metrics(), "faultline_budget_exhausted_total", "alias=r,kind=retry"),
		     2, "one retry refused per request; metrics:\n%s",
		     metric_lines("faultline_budget_exhausted_total"));
	cr_assert_eq(metric0("faultline_budget_exhausted_total", "alias=r,kind=hedge"), 0);
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "fails");
	cr_assert_eq(gw_rows_of(log, "retry-1", rows, 8), 2,
		     "retry-1 reached the provider %zu times", gw_rows_of(log, "retry-1", rows, 8));
	cr_assert_eq(gw_rows_of(log, "retry-2", rows, 8), 1,
		     "retry-2 reached the provider %zu times", gw_rows_of(log, "retry-2", rows, 8));
}

/* ---- request classes ---- */

/*
 * Starts both providers healthy, with health checks every 100 ms (fall 1,
 * rise 1) and fail_fast, classes being the gateway's "classes" object;
 * then takes both down and waits until the checks have opened both
 * breakers. mock_fields are the providers' mockprov timing.
 */
static void start_all_open(const char *mock_fields, const char *classes)
{
	static const char *const st[] = { "provider=primary,model=mock-small",
					  "provider=secondary,model=mock-small" };
	char cfg[2048];
	double v;
	int i;

	snprintf(cfg, sizeof(cfg), "{'providers':["
		 "{'name':'primary','listen':'127.0.0.1:0',%s},"
		 "{'name':'secondary','listen':'127.0.0.1:0',%s}]}", mock_fields, mock_fields);
	start_mock(cfg);
	snprintf(cfg, sizeof(cfg), "{'request_deadline_ms':3000,"
		 "'breaker':{'when_all_open':'fail_fast','cooldown_ms':5000,'cooldown_jitter':0},"
		 "'classes':%s,"
		 "'providers':{"
		 "'primary':{'base_url':'@primary@','timeout_ms':2000,"
		 "'health_check':{'interval_ms':100,'unhealthy_interval_ms':100,'timeout_ms':300,"
		 "'fall':1,'rise':1}},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':2000,"
		 "'health_check':{'interval_ms':100,'unhealthy_interval_ms':100,'timeout_ms':300,"
		 "'fall':1,'rise':1}}},"
		 "'models':{'chat':{" CHAIN "}}}", classes);
	start_gw(cfg);
	inject("{'provider':'primary','kind':'down','duration_s':30}");
	inject("{'provider':'secondary','kind':'down','duration_s':30}");
	for (i = 0; i < 2; i++) {
		v = gw_metric_wait(&gw, "faultline_breaker_state", st[i], 1, 2000);
		cr_assert_eq(v, 1, "%s: the checks did not open the breaker (state %g)", st[i], v);
	}
}

/* Asserts Retry-After: a whole number of seconds in [1, max]. */
static void expect_retry_after(const struct http_result *r, const char *what, double max)
{
	char v[32];
	double s = gw_header_num(r, "retry-after");

	cr_assert(s >= 1 && s <= max && s == floor(s), "%s: Retry-After %s, expected 1–%g s",
		  what, gw_header_str(r, "retry-after", v, sizeof(v)), max);
}

/*
 * Asserts a batch queue's refusal: status, and an OpenAI-style error with
 * error.type and error.code. (README's error.attempts is for requests
 * whose attempts ran out; a refused or expired queue entry made none.)
 */
static void expect_refusal(const struct http_result *r, const char *what, long status,
			   const char *type, const char *code)
{
	const cJSON *err;
	cJSON *doc;

	cr_assert_eq(r->code, CURLE_OK, "%s: curl %d %s", what, r->code, r->errbuf);
	cr_assert_eq(r->status, status, "%s: status %ld (expected %ld), body %s", what,
		     r->status, status, r->body);
	doc = gw_held_doc(&held, gw_error_doc(r->body));
	cr_assert_not_null(doc, "%s: not an OpenAI-style error: %s", what, r->body);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "type"), type, "%s: error.type in %s", what, r->body);
	cr_assert_str_eq(gw_json_str(err, "code") ? gw_json_str(err, "code") : "(null)", code,
			 "%s: error.code in %s", what, r->body);
}

/* Waits (up to 2 s) for faultline_batch_queue_depth{alias="chat"} to be want. */
static void expect_depth(double want)
{
	double v = gw_metric_wait(&gw, "faultline_batch_queue_depth", "alias=chat", want, 2000);

	cr_assert_eq(v, want, "batch queue depth %g, expected %g; metrics:\n%s", v, want,
		     metric_lines("faultline_batch_queue"));
}

/* Waits (up to 2 s) for faultline_batch_queue_total{alias="chat",result} to be want. */
static void expect_queue_total(const char *result, double want)
{
	char labels[96];
	double v;

	snprintf(labels, sizeof(labels), "alias=chat,result=%s", result);
	v = gw_metric_wait(&gw, "faultline_batch_queue_total", labels, want, want ? 2000 : 0);
	if (isnan(v) && want == 0)
		v = 0;
	cr_assert_eq(v, want, "faultline_batch_queue_total{%s} %g, expected %g; metrics:\n%s",
		     labels, v, want, metric_lines("faultline_batch_queue"));
}

/*
 * With every target open, a batch request waits in the queue (in flight,
 * depth 1, no provider asked) while an interactive one gets the fail_fast
 * 503 all_providers_unavailable at once, with Retry-After and no attempt;
 * once the providers are back the health checks wake a breaker and the
 * queued request is answered 200, counted queued and dequeued, its wait in
 * the histogram.
 */
Test(gateway_route, batch_waits_while_every_target_is_open, .timeout = 30)
{
	struct gw_bg *b;
	struct http_result *r;
	char v[64];
	double cleared;
	double n;

	start_all_open(FAST, "{'batch':{'queue_max':10,'max_wait_ms':10000,'concurrency':4}}");
	b = chat_bg("chat", "batch-1", "x-faultline-class: batch", 10000);
	expect_depth(1);
	expect_queue_total("queued", 1);
	cr_assert_eq(gw_metric(metrics(), "faultline_requests_in_flight", ""), 1);

	r = chat("chat", "inter-1", "x-faultline-class: interactive", 5000);
	gw_expect_error(&held, r, "interactive, every target open", 503, "service_unavailable",
			"all_providers_unavailable");
	expect_took(r, "interactive, every target open", 0, 300);
	expect_retry_after(r, "interactive, every target open", 5);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 0, "attempts %s",
		     gw_header_str(r, "x-faultline-attempts", v, sizeof(v)));
	r = chat("chat", "inter-2", NULL, 5000);
	gw_expect_error(&held, r, "no class, every target open", 503, "service_unavailable",
			"all_providers_unavailable");

	expect_depth(1);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0);

	cr_assert_eq(gw_mock_clear(&mock, NULL), 200);
	cleared = now_ms();
	gw_bg_join(b);
	cr_assert_eq(b->rc, 0);
	cr_assert_eq(b->r.status, 200, "the queued request: %ld %s (curl %d %s)", b->r.status,
		     b->r.body, b->r.code, b->r.errbuf);
	cr_assert(strcmp(gw_header_str(&b->r, "x-faultline-provider", v, sizeof(v)), "primary") ==
		  0 || strcmp(v, "secondary") == 0, "answered by %s", v);
	cr_assert_eq(gw_header_num(&b->r, "x-faultline-attempts"), 1);
	cr_assert_lt(now_ms() - cleared, 1500, "answered %.0f ms after the providers came back",
		     now_ms() - cleared);
	expect_depth(0);
	expect_queue_total("dequeued", 1);
	n = gw_metric(metrics(), "faultline_batch_queue_wait_seconds_count", "alias=chat");
	cr_assert_eq(n, 1, "wait histogram count %g; metrics:\n%s", n,
		     metric_lines("faultline_batch_queue"));
	cr_assert_eq(gw_metric(metrics(), "faultline_requests_total", "alias=chat,status=200"), 1);
	cr_assert_eq(gw_metric(metrics(), "faultline_requests_total", "alias=chat,status=503"), 2);
}

/*
 * queue_max 1: with one batch request waiting, the next gets 429
 * rate_limit_error / batch_queue_full at once, with Retry-After; then the
 * waiting client leaves (its own timeout): the queue is empty again, the
 * request counted as left and answered 499 in /metrics.
 */
Test(gateway_route, batch_queue_full_and_a_client_leaving, .timeout = 30)
{
	struct gw_bg *b;
	struct http_result *r;

	start_all_open(FAST, "{'batch':{'queue_max':1,'max_wait_ms':10000}}");
	b = chat_bg("chat", "batch-leaves", "x-faultline-class: batch", 1000);
	expect_depth(1);
	r = chat("chat", "batch-full", "x-faultline-class: batch", 5000);
	expect_refusal(r, "queue full", 429, "rate_limit_error", "batch_queue_full");
	expect_took(r, "queue full", 0, 300);
	expect_retry_after(r, "queue full", 5);
	expect_queue_total("full", 1);
	expect_depth(1);

	gw_bg_join(b);
	cr_assert_eq(b->r.code, CURLE_OPERATION_TIMEDOUT, "the leaving client: curl %d, status %ld",
		     b->r.code, b->r.status);
	expect_depth(0);
	expect_queue_total("left", 1);
	cr_assert_eq(gw_metric_wait(&gw, "faultline_requests_total", "alias=chat,status=499", 1,
				    2000), 1, "metrics:\n%s", metric_lines("faultline_requests_total"));
	cr_assert_eq(gw_metric(metrics(), "faultline_requests_in_flight", ""), 0);
	expect_queue_total("dequeued", 0);
}

/*
 * max_wait_ms 300: a batch request that waited that long with every
 * target still open gets 503 service_unavailable / batch_queue_timeout
 * (at about 300 ms, with Retry-After), counted as expired.
 */
Test(gateway_route, batch_wait_past_max_wait_is_503, .timeout = 30)
{
	struct http_result *r;

	start_all_open(FAST, "{'batch':{'max_wait_ms':300}}");
	r = chat("chat", "batch-expires", "x-faultline-class: batch", 5000);
	expect_refusal(r, "wait exceeded", 503, "service_unavailable", "batch_queue_timeout");
	expect_took(r, "wait exceeded", 295, 300 + SLACK_MS);
	expect_retry_after(r, "wait exceeded", 5);
	expect_queue_total("expired", 1);
	expect_depth(0);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0);
}

/* One request's row in a mock log: when it arrived and how long it lasted. */
struct span {
	double t_ms;
	double dur_ms;
	char rid[32];
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a;
	const struct span *y = b;

	return (x->t_ms > y->t_ms) - (x->t_ms < y->t_ms);
}

/*
 * concurrency 1: three batch requests queued while every target is open
 * are all answered once the providers are back, but one at a time — in
 * both providers' logs together, each request arrives only after the one
 * before it has ended (each takes 300 ms).
 */
Test(gateway_route, batch_concurrency_dequeues_one_at_a_time, .timeout = 30)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	static const char *const names[] = { "primary", "secondary" };
	struct gw_bg *b[3];
	struct span spans[8];
	size_t nspans = 0;
	char rid[32];
	size_t i;
	int k;

	start_all_open("'ttft_ms':300,'output_tokens':4", "{'batch':{'concurrency':1}}");
	for (k = 0; k < 3; k++) {
		snprintf(rid, sizeof(rid), "cc-%d", k);
		b[k] = chat_bg("chat", rid, "x-faultline-class: batch", 10000);
		expect_depth(k + 1);
	}
	cr_assert_eq(gw_mock_clear(&mock, NULL), 200);
	for (k = 0; k < 3; k++) {
		gw_bg_join(b[k]);
		cr_assert_eq(b[k]->r.status, 200, "cc-%d: %ld %s (curl %d)", k, b[k]->r.status,
			     b[k]->r.body, b[k]->r.code);
	}
	expect_depth(0);
	expect_queue_total("dequeued", 3);
	gw_mock_settle(&mock, provs);
	for (k = 0; k < 2; k++) {
		const struct csv_table *t = gw_mock_rows(&held, &mock, names[k]);

		for (i = 1; i < t->nrows && nspans < 8; i++) {
			if (strcmp(csv_get(t, i, "kind"), "chat") != 0)
				continue;	/* the health checks' model listings */
			spans[nspans].t_ms = gw_row_num(t, i, "t_ms");
			spans[nspans].dur_ms = gw_row_num(t, i, "dur_ms");
			snprintf(spans[nspans].rid, sizeof(spans[0].rid), "%s",
				 csv_get(t, i, "request_id"));
			nspans++;
		}
	}
	cr_assert_eq(nspans, 3, "%zu requests reached the providers, not 3", nspans);
	qsort(spans, nspans, sizeof(spans[0]), span_cmp);
	for (i = 1; i < nspans; i++)
		cr_assert_geq(spans[i].t_ms + 2, spans[i - 1].t_ms + spans[i - 1].dur_ms,
			      "%s arrived at %.1f ms, while %s (%.1f ms, for %.1f ms) was in "
			      "progress: more than one dequeued at a time", spans[i].rid,
			      spans[i].t_ms, spans[i - 1].rid, spans[i - 1].t_ms,
			      spans[i - 1].dur_ms);
}

/*
 * x-faultline-class takes interactive or batch; any other value is a 400
 * invalid_request_error, with the chat headers (attempts 0, hedged 0) and
 * no provider asked.
 */
Test(gateway_route, unknown_class_is_400, .timeout = 20)
{
	static const char *const bad[] = { "urgent", "low", "batch,interactive" };
	struct http_result *r;
	char v[64];
	size_t i;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char h[96];
		cJSON *doc;

		snprintf(h, sizeof(h), "x-faultline-class: %s", bad[i]);
		r = chat("chat", "bad-class", h, 5000);
		cr_assert_eq(r->status, 400, "class '%s': %ld %s", bad[i], r->status, r->body);
		doc = gw_held_doc(&held, gw_error_doc(r->body));
		cr_assert_not_null(doc, "class '%s': not an OpenAI error: %s", bad[i], r->body);
		cr_assert_str_eq(gw_json_str(cJSON_GetObjectItemCaseSensitive(doc, "error"), "type"),
				 "invalid_request_error", "class '%s': %s", bad[i], r->body);
		cr_assert_str_eq(gw_header_str(r, "x-request-id", v, sizeof(v)), "bad-class");
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 0, "class '%s'", bad[i]);
		expect_hedged(r, bad[i], 0);
	}
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0);
	r = chat("chat", "interactive", "x-faultline-class: interactive", 5000);
	expect_routed(r, "interactive", "primary", 1, 0);
	r = chat("chat", "batch", "x-faultline-class: batch", 5000);
	expect_routed(r, "batch, a target closed", "primary", 1, 0);
}

/* ---- the latency budget ---- */

/*
 * A breaker with only the latency rule (latency_budget_ms 300 at p95,
 * min_requests 5): a primary answering every request, but in 420 ms,
 * stays closed for four of them and opens on the fifth; the sixth request
 * then goes to the secondary in one attempt, the primary not asked.
 */
Test(gateway_route, latency_budget_opens_the_breaker, .timeout = 30)
{
	static const char *const st = "provider=primary,model=mock-small";
	const cJSON *b;
	struct http_result *r;
	char rid[32];
	double v;
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':400," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'breaker':{'latency_budget_ms':300,'min_requests':5,'consecutive_failures':0,"
		 "'failure_ratio':0,'cooldown_ms':30000},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':2000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':2000}},"
		 "'models':{'chat':{" CHAIN "}}}");
	for (i = 0; i < 5; i++) {
		snprintf(rid, sizeof(rid), "late-%d", i);
		r = chat("chat", rid, NULL, 5000);
		expect_routed(r, rid, "primary", 1, 0);
		expect_took(r, rid, 400 + FAST_MS - 5, 400 + FAST_MS + SLACK_MS);
		if (i < 4)
			cr_assert_eq(gw_metric(metrics(), "faultline_breaker_state", st), 0,
				     "opened after %d slow answers, before min_requests 5", i + 1);
	}
	v = gw_metric_wait(&gw, "faultline_breaker_state", st, 1, 1000);
	cr_assert_eq(v, 1, "five 420 ms answers over a 300 ms budget: state %g", v);
	b = gw_breaker_must(gw_breakers_held(&gw, &held), "primary", "mock-small");
	cr_assert_str_eq(gw_json_str(b, "state"), "open", "%s", cJSON_PrintUnformatted(b));
	r = chat("chat", "after-open", NULL, 5000);
	expect_routed(r, "after the latency trip", "secondary", 1, 0);
	expect_took(r, "after the latency trip", 0, FAST_MS + SLACK_MS);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 5);
}

/* ---- cost ---- */

/*
 * A hedged request costs the winner's answer plus the loser's billed
 * estimate — the prompt's 14 bytes / 4 → 4 input tokens at the loser's
 * input price, no output (a plain answer sent nothing) — and that part is
 * faultline_duplicate_cost_usd_total{provider="primary"}. A hedge answered
 * with a 503 costs nothing: that request's cost is the primary's answer
 * alone, and the 503ing provider has no spend.
 */
Test(gateway_route, discarded_attempts_are_billed, .timeout = 20)
{
	const double loser = PROMPT_TOKENS * 1.0 / 1000;	/* the primary's input price, 1 */
	struct http_result *r;
	double won;
	double answered;
	double v;
	const char *text;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'slow','add_ms':600," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'fails','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'status','status':503," ALWAYS "}]}]}");
	start_gw("{'providers':{"
		 "'primary':{'base_url':'@primary@','timeout_ms':3000,"
		 "'price_per_1k':{'input':1,'output':2}},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000,"
		 "'price_per_1k':{'input':0.5,'output':3}},"
		 "'fails':{'base_url':'@fails@','timeout_ms':3000,"
		 "'price_per_1k':{'input':4,'output':4}}},"
		 "'hedge':{'after_ms':100},"
		 "'models':{'chat':{" CHAIN "},"
		 "'f':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'fails','model':'mock-small'}]}}}");

	r = chat("chat", "cost-hedged", NULL, 5000);
	expect_routed(r, "hedged", "secondary", 2, 1);
	won = gw_expect_cost(&held, r, "hedged", 0.5, 3, loser);
	v = gw_metric_wait(&gw, "faultline_duplicate_cost_usd_total", "provider=primary", loser,
			   2000);
	cr_assert(fabs(v - loser) <= 1e-9, "duplicate cost of the primary %.9g, expected %.9g",
		  v, loser);

	r = chat("f", "cost-503", NULL, 5000);
	expect_routed(r, "a 503'd hedge", "primary", 2, 1);
	answered = gw_expect_cost(&held, r, "a 503'd hedge", 1, 2, 0);

	text = metrics();
	cr_assert(fabs(gw_metric(text, "faultline_duplicate_cost_usd_total", "provider=primary") -
		       loser) <= 1e-9, "metrics:\n%s", metric_lines("faultline_duplicate_cost_usd_total"));
	cr_assert_eq(metric0("faultline_duplicate_cost_usd_total", "provider=secondary"), 0);
	cr_assert_eq(metric0("faultline_duplicate_cost_usd_total", "provider=fails"), 0);
	cr_assert(fabs(gw_metric(text, "faultline_cost_usd_total",
				 "provider=primary,tenant=,feature=") - (loser + answered)) <= 1e-9,
		  "the primary's spend is not its discarded attempt plus its answer (%.9g); "
		  "metrics:\n%s", loser + answered, metric_lines("faultline_cost_usd_total"));
	cr_assert(fabs(gw_metric(text, "faultline_cost_usd_total",
				 "provider=secondary,tenant=,feature=") - won) <= 1e-9,
		  "metrics:\n%s", metric_lines("faultline_cost_usd_total"));
	cr_assert_eq(gw_metric_sum(text, "faultline_cost_usd_total", "provider=fails", NULL), 0,
		     "a 503 was billed; metrics:\n%s", metric_lines("faultline_cost_usd_total"));
	cr_assert_eq(gw_metric(text, "faultline_tokens_total",
			       "provider=primary,tenant=,feature=,direction=input"),
		     2 * PROMPT_TOKENS, "metrics:\n%s", metric_lines("faultline_tokens_total"));
}

/* ---- every target open ---- */

/*
 * least_recently_failed tries every open target that fails fast: with
 * both providers refusing, once both breakers are open a request still
 * tries both (refused in no time), so the first request after a provider
 * comes back is answered by it; with both hanging, a request made after
 * both timed out tries neither and gets the 503 at once, Retry-After
 * included: no timeout is burned.
 */
Test(gateway_route, every_target_open_tries_only_what_fails_fast, .timeout = 30)
{
	struct http_result *r;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'breaker':{'consecutive_failures':1,'cooldown_ms':20000,'cooldown_jitter':0},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':300},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':300}},"
		 "'models':{'chat':{" CHAIN "}}}");
	inject("{'provider':'primary','kind':'down','duration_s':30}");
	inject("{'provider':'secondary','kind':'down','duration_s':30}");
	r = chat("chat", "refused-1", NULL, 5000);
	gw_expect_error(&held, r, "both refusing", 503, "service_unavailable",
			"all_providers_unavailable");
	cr_assert_eq(gw_metric(metrics(), "faultline_breaker_state",
			       "provider=secondary,model=mock-small"), 1, "both open now");
	r = chat("chat", "refused-2", NULL, 5000);
	gw_expect_error(&held, r, "both open, both refusing", 503, "service_unavailable",
			"all_providers_unavailable");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 2, "each refusing target tried");
	expect_took(r, "both open, both refusing", 0, 200);
	/* The secondary comes back: the next request finds it, breaker open or not. */
	cr_assert_eq(gw_mock_clear(&mock, "secondary"), 200);
	r = chat("chat", "back", NULL, 5000);
	expect_routed(r, "the secondary came back", "secondary", 2, 0);

	/* Both hang: after each has timed out once, nothing is tried. */
	gw_mock_clear(&mock, NULL);
	cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0, "the gateway did not exit 0");
	start_gw("{'request_deadline_ms':5000,"
		 "'breaker':{'consecutive_failures':1,'cooldown_ms':20000,'cooldown_jitter':0},"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':300},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':300}},"
		 "'models':{'chat':{" CHAIN "}}}");
	inject("{'provider':'primary','kind':'hang','duration_s':30}");
	inject("{'provider':'secondary','kind':'hang','duration_s':30}");
	r = chat("chat", "hang-1", NULL, 5000);
	gw_expect_error(&held, r, "both hanging", 502, "bad_gateway", "upstream_error");
	expect_took(r, "both hanging", 2 * 300 - 50, 2 * 300 + SLACK_MS);
	r = chat("chat", "hang-2", NULL, 5000);
	gw_expect_error(&held, r, "both open, both hung", 503, "service_unavailable",
			"all_providers_unavailable");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 0, "no hung target tried");
	expect_took(r, "both open, both hung", 0, 100);
	expect_retry_after(r, "both open, both hung", 20);
}

/*
 * A batch request refused by every target, breakers off (so no breaker
 * ever opens to say so), goes back to the queue and waits 1 s before it is
 * sent again — not round and round at once — until its max_wait_ms: two
 * rounds of two refused attempts, then the 503 batch_queue_timeout.
 */
Test(gateway_route, a_refused_batch_request_waits_before_going_again, .timeout = 30)
{
	struct http_result *r;
	double n;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'down'," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'down'," ALWAYS "}]}]}");
	start_gw("{'request_deadline_ms':5000,'breaker':{'enabled':false},"
		 "'classes':{'batch':{'max_wait_ms':1500}},"
		 "'providers':{'primary':{'base_url':'@primary@'},'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{" CHAIN "}}}");
	r = chat("chat", "refused-batch", "x-faultline-class: batch", 5000);
	expect_refusal(r, "refused until it expired", 503, "service_unavailable",
		       "batch_queue_timeout");
	expect_took(r, "refused until it expired", 1500 - 20, 1500 + SLACK_MS);
	n = gw_header_num(r, "x-faultline-attempts");
	cr_assert_eq(n, 4, "two rounds of both targets, a second apart: %g attempts", n);
	expect_queue_total("queued", 1);
	expect_queue_total("dequeued", 1);
	expect_queue_total("expired", 1);
}
