/*
 * bin/gateway counts every delivery of a request to a provider (README,
 * gateway: "Every delivery counts"): libcurl would send a request a second
 * time on its own when a reused keep-alive connection breaks after the
 * provider read it; the gateway refuses that replay, so every delivery is
 * an attempt it chose and shows in x-faultline-attempts and /metrics; a
 * no-reroute request is sent on a fresh connection, so it reaches a
 * provider at most once.
 *
 * The provider resets half of the requests it reads (mockprov's reset
 * fault, after_bytes 0), and the tests join its own log with what the
 * gateway answered, request by request, on x-request-id.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define FAST "'ttft_ms':2,'jitter_ms':0,'token_ms':0,'output_tokens':2"
/* Requests sent one after another: enough for libcurl to re-send some. */
#define NREQ 60

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_deliveries, .fini = teardown);

/* The provider resetting half of what it reads, and a healthy one after it. */
static void start_resetting(void)
{
	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST ","
			       "'faults':[{'kind':'reset','after_bytes':0,'probability':0.5,"
			       ALWAYS "}]},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	/* No breaker: every request goes to the primary first. */
	gw_start_template(&gw, "{'request_deadline_ms':5000,"
			  "'breaker':{'enabled':false},"
			  "'providers':{'primary':{'base_url':'@primary@','timeout_ms':2000},"
			  "'secondary':{'base_url':'@secondary@','timeout_ms':2000}},"
			  "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
			  "{'provider':'secondary','model':'mock-small'}],'max_attempts':8}}}",
			  &mock, NULL);
}

/* Sends NREQ requests "PREFIX-i" with extra, keeping each x-faultline-attempts in attempts. */
static void send_all(const char *prefix, const char *extra, double *attempts, long *status)
{
	const char *headers[3] = { NULL, extra, NULL };
	char hrid[64];
	int i;

	for (i = 0; i < NREQ; i++) {
		struct http_result r = { 0 };

		snprintf(hrid, sizeof(hrid), "x-request-id: %s-%d", prefix, i);
		headers[0] = hrid;
		cr_assert_eq(gw_chat(&gw, "chat", headers, 5000, &r), 0, "%s: no answer", hrid);
		attempts[i] = gw_header_num(&r, "x-faultline-attempts");
		status[i] = r.status;
		http_result_free(&r);
	}
}

/* What each provider's log says of request PREFIX-i: how often it arrived. */
struct seen {
	size_t primary[NREQ];
	size_t secondary[NREQ];
};

/* Stops mockprov (its logs complete) and counts each request's rows in them. */
static void read_logs(const char *prefix, struct seen *seen)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *p;
	const struct csv_table *s;
	size_t rows[16];
	char rid[32];
	int i;

	gw_mock_settle(&mock, provs);
	p = gw_mock_rows(&held, &mock, "primary");
	s = gw_mock_rows(&held, &mock, "secondary");
	for (i = 0; i < NREQ; i++) {
		snprintf(rid, sizeof(rid), "%s-%d", prefix, i);
		seen->primary[i] = gw_rows_of(p, rid, rows, 16);
		seen->secondary[i] = gw_rows_of(s, rid, rows, 16);
	}
}

/*
 * libcurl never delivers a request behind the gateway's back: where a
 * reused connection breaks after the request went out, libcurl's own
 * replay is refused and the gateway's policy decides (here: fail over).
 * For every request the deliveries both providers logged equal the
 * gateway's x-faultline-attempts; none reached the primary twice; some
 * were reset there and answered by the secondary; /metrics counts the
 * primary's deliveries.
 */
Test(gateway_deliveries, every_delivery_is_an_attempt, .timeout = 60)
{
	double attempts[NREQ];
	long status[NREQ];
	struct seen seen;
	const char *text;
	size_t failed_over = 0;
	size_t total = 0;
	double counted;
	int i;

	start_resetting();
	send_all("rs", NULL, attempts, status);
	text = gw_metrics_held(&gw, &held);
	counted = gw_metric_sum(text, "faultline_attempts_total", "provider=primary", NULL);
	read_logs("rs", &seen);
	for (i = 0; i < NREQ; i++) {
		cr_expect_eq(status[i], 200, "rs-%d: status %ld", i, status[i]);
		cr_expect_eq(attempts[i], (double)(seen.primary[i] + seen.secondary[i]),
			     "rs-%d: the gateway says %.0f attempts, the providers saw %zu + %zu",
			     i, attempts[i], seen.primary[i], seen.secondary[i]);
		cr_expect_leq(seen.primary[i], 1, "rs-%d: the primary saw it %zu times", i,
			      seen.primary[i]);
		failed_over += seen.primary[i] == 1 && seen.secondary[i] == 1;
		total += seen.primary[i];
	}
	cr_log_info("%d requests: the primary logged %zu deliveries, the gateway counted %.0f "
		    "attempts on it; %zu reset there and answered by the secondary", NREQ, total,
		    counted, failed_over);
	cr_assert_gt(failed_over, 0, "no request was reset on the primary");
	cr_expect_eq(counted, (double)total,
		     "faultline_attempts_total{provider=primary} is %.0f, the primary saw %zu",
		     counted, total);
}

/*
 * A no-reroute request reaches a provider at most once, even where the
 * provider resets connections it reused: each is sent on a fresh one.
 */
Test(gateway_deliveries, no_reroute_sent_once, .timeout = 60)
{
	double attempts[NREQ];
	long status[NREQ];
	struct seen seen;
	size_t failed = 0;
	int i;

	start_resetting();
	send_all("nr", "x-faultline-no-reroute: 1", attempts, status);
	read_logs("nr", &seen);
	for (i = 0; i < NREQ; i++) {
		cr_expect_eq(seen.primary[i], 1, "nr-%d: the primary saw it %zu times", i,
			     seen.primary[i]);
		cr_expect_eq(seen.secondary[i], 0, "nr-%d: rerouted to the secondary", i);
		cr_expect_eq(attempts[i], 1, "nr-%d: %.0f attempts", i, attempts[i]);
		failed += status[i] != 200;
	}
	/* Half are reset: the test saw the fault it is about. */
	cr_log_info("%d no-reroute requests, each delivered once; %zu of them reset", NREQ, failed);
	cr_assert_gt(failed, 0, "no request was reset");
}
