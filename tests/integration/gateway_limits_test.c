/*
 * bin/gateway at the edge of its own resources (README, gateway: "Limits"):
 * a gateway out of file descriptors answers 503 gateway_overloaded, counts
 * it in /metrics and holds nothing against the providers, whose breakers
 * stay closed; upstream answers are read only up to the body limit.
 */
/* prlimit(2) */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/rawhttp.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define FAST "'ttft_ms':2,'jitter_ms':0,'token_ms':0,'output_tokens':2"
#define IDLE_MAX 32

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;
static struct raw_http idle[IDLE_MAX];
static struct raw_http req;

static void teardown(void)
{
	size_t i;

	for (i = 0; i < IDLE_MAX; i++)
		raw_free(&idle[i]);
	raw_free(&req);
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_limits, .fini = teardown);

/* How many descriptors process pid has open, or -1. */
static int fd_count(pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* Waits up to timeout_ms for pid to hold want descriptors. Returns the last count. */
static int fd_wait(pid_t pid, int want, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	int n;

	while ((n = fd_count(pid)) != want && now_ms() < end)
		poll(NULL, 0, 5);
	return n;
}

/*
 * Idle clients take every descriptor the gateway may open: a request on a
 * connection it already holds cannot get an upstream socket. That is the
 * gateway's trouble, not the providers': 503 gateway_overloaded with
 * Retry-After, counted in /metrics, no breaker opened (one failure would
 * open them), no provider asked; once descriptors are free it answers.
 */
Test(gateway_limits, out_of_descriptors_is_not_the_providers_fault, .timeout = 30)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	struct rlimit low;
	struct rlimit high = { 0 };
	const cJSON *doc;
	struct http_result *r;
	char body[256];
	char v[64];
	const char *text;
	int base;
	int n;
	size_t i;

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	gw_start_template(&gw, "{'breaker':{'consecutive_failures':1,'cooldown_ms':60000},"
			  "'providers':{'primary':{'base_url':'@primary@'},"
			  "'secondary':{'base_url':'@secondary@'}},"
			  "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
			  "{'provider':'secondary','model':'mock-small'}]}}}", &mock, NULL);

	/* The request's connection, held by the gateway before the limit is lowered. */
	base = fd_count(gw.pid);
	cr_assert_gt(base, 0);
	cr_assert_eq(raw_open(&req, gw.addr, 0), 0);
	cr_assert_eq(fd_wait(gw.pid, base + 1, 5000), base + 1, "the connection was not accepted");

	/* Room for two more descriptors, which idle clients then take. */
	cr_assert_eq(prlimit(gw.pid, RLIMIT_NOFILE, NULL, &high), 0);
	low = (struct rlimit){ (rlim_t)base + 3, high.rlim_max };
	cr_assert_eq(prlimit(gw.pid, RLIMIT_NOFILE, &low, NULL), 0, "prlimit: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		cr_assert_eq(raw_open(&idle[i], gw.addr, 0), 0);
	n = fd_wait(gw.pid, base + 3, 5000);
	cr_assert_eq(n, base + 3, "the gateway holds %d descriptors, not %d", n, base + 3);

	cr_assert_eq(raw_post(&req, "/v1/chat/completions", 1, NULL,
			      gw_chat_body("chat", body, sizeof(body))), 0);
	cr_assert_eq(raw_read(&req, NULL, NULL, 5000), 0, "no answer: %s", raw_tail(&req, 300));
	cr_expect_eq(req.status, 503, "status %d: %s", req.status, raw_tail(&req, 400));
	cr_expect(strstr(req.body.data ? req.body.data : "", "\"gateway_overloaded\""),
		  "body: %s", req.body.data);
	cr_expect_str_eq(raw_header(&req, "retry-after", v, sizeof(v)) ? v : "(none)", "1");
	cr_expect_str_eq(raw_header(&req, "x-faultline-attempts", v, sizeof(v)) ? v : "(none)",
			 "0");

	/* Descriptors back: the providers were never blamed. */
	for (i = 0; i < IDLE_MAX; i++)
		raw_free(&idle[i]);
	cr_assert_eq(prlimit(gw.pid, RLIMIT_NOFILE, &high, NULL), 0);
	text = gw_metrics_held(&gw, &held);
	cr_expect_geq(gw_metric(text, "faultline_gateway_overloaded_total", ""), 1);
	doc = gw_breakers_held(&gw, &held);
	cr_expect_str_eq(gw_json_str(gw_breaker_must(doc, "primary", "mock-small"), "state"),
			 "closed");
	cr_expect_str_eq(gw_json_str(gw_breaker_must(doc, "secondary", "mock-small"), "state"),
			 "closed");
	r = gw_chat_held(&gw, &held, "chat", "after", NULL, 5000);
	gw_expect_answer(r, "with descriptors again", "primary", 1);
	gw_mock_settle(&mock, provs);
	cr_expect_eq(gw_mock_rows(&held, &mock, "primary")->nrows, 2,
		     "the primary saw %zu requests (one, and the header)",
		     gw_mock_rows(&held, &mock, "primary")->nrows);
}

/*
 * An answer over max_upstream_body_bytes is not read (its Content-Length
 * says so before the body): invalid_body, and the next target answers.
 */
Test(gateway_limits, answer_over_the_body_limit_fails_over, .timeout = 30)
{
	struct http_result *r;
	const char *text;

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':2,'jitter_ms':0,"
			       "'token_ms':0,'output_tokens':100000},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	gw_start_template(&gw, "{'max_upstream_body_bytes':65536,"
			  "'providers':{'primary':{'base_url':'@primary@'},"
			  "'secondary':{'base_url':'@secondary@'}},"
			  "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
			  "{'provider':'secondary','model':'mock-small'}]}}}", &mock, NULL);
	r = gw_chat_held(&gw, &held, "chat", "big", NULL, 10000);
	gw_expect_answer(r, "past the body limit", "secondary", 2);
	text = gw_metrics_held(&gw, &held);
	cr_expect_eq(gw_metric(text, "faultline_attempts_total",
			       "provider=primary,outcome=invalid_body"), 1);
	cr_expect_eq(gw_metric(text, "faultline_upstream_body_bytes", ""), 0);
}

/*
 * Answers held at once are bounded by upstream_body_budget_bytes: stalled
 * answers of ~380 KB each fill a 1 MiB budget, and the request whose
 * answer would pass it fails at once with 503 gateway_overloaded (the
 * others wait for their timeout); nothing stays counted afterwards.
 */
Test(gateway_limits, buffered_answers_stay_within_the_budget, .timeout = 30)
{
	enum { N = 4 };
	struct gw_bg bg[N];
	char rid[32];
	size_t overloaded = 0;
	const char *text;
	size_t i;

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':2,'jitter_ms':0,"
			       "'token_ms':0,'output_tokens':100000,"
			       "'faults':[{'kind':'stall','after_tokens':60000," ALWAYS "}]}]}");
	gw_start_template(&gw, "{'max_upstream_body_bytes':1048576,"
			  "'upstream_body_budget_bytes':1048576,"
			  "'breaker':{'enabled':false},"
			  "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000}},"
			  "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}",
			  &mock, NULL);
	for (i = 0; i < N; i++) {
		snprintf(rid, sizeof(rid), "held-%zu", i);
		gw_bg_start(&bg[i], &gw, "chat", rid, NULL, 10000);
	}
	for (i = 0; i < N; i++) {
		gw_bg_join(&bg[i]);
		if (bg[i].r.status == 503 && strstr(bg[i].r.body ? bg[i].r.body : "",
						    "\"gateway_overloaded\"")) {
			overloaded++;
			cr_expect_lt(bg[i].r.total_ms, 2500, "held-%zu: the 503 took %.0f ms", i,
				     bg[i].r.total_ms);
		} else {
			cr_expect_geq(bg[i].r.status, 502, "held-%zu: status %ld", i,
				      bg[i].r.status);
		}
	}
	for (i = 0; i < N; i++)
		http_result_free(&bg[i].r);
	cr_expect_geq(overloaded, 1, "no request found the budget spent");
	cr_expect_leq(overloaded, N - 2, "%zu of %d requests found the budget spent", overloaded,
		      N);
	text = gw_metrics_held(&gw, &held);
	cr_expect_geq(gw_metric(text, "faultline_gateway_overloaded_total", ""), 1);
	cr_expect_eq(gw_metric(text, "faultline_upstream_body_bytes", ""), 0);
}

/*
 * An events file that cannot be written (its size limit reached, as on a
 * full disk) is not left under its name, short: it becomes NAME.tmp, the
 * gateway says why and exits 1.
 */
Test(gateway_limits, short_events_file_keeps_tmp_name, .timeout = 30)
{
	/* Room for the error's log line (stderr is a file too), not for the event's line. */
	struct rlimit fsize = { 600, 600 };
	const struct gw_opts quiet = { .log_level = "error" };
	struct http_result *r;
	char config[2048];
	char model[801];
	char tmp[160];
	char err[4096];
	int status;

	memset(model, 'm', sizeof(model) - 1);
	model[sizeof(model) - 1] = '\0';
	snprintf(config, sizeof(config),
		 "{'breaker':{'consecutive_failures':1,'cooldown_ms':60000},"
		 "'providers':{'gone':{'base_url':'http://127.0.0.1:1/v1'}},"
		 "'models':{'chat':{'targets':[{'provider':'gone','model':'%s'}]}}}", model);
	gw_start_template(&gw, config, NULL, &quiet);
	cr_assert_eq(prlimit(gw.pid, RLIMIT_FSIZE, &fsize, NULL), 0, "prlimit: %s",
		     strerror(errno));
	r = gw_chat_held(&gw, &held, "chat", "opens", NULL, 5000);
	cr_expect_eq(r->status, 503);
	status = gw_stop(&gw, SIGTERM, 5000);
	gw_stderr(&gw, err, sizeof(err));
	cr_expect_eq(status, 1, "exit status %d; stderr: %s", status, err);
	cr_expect(strstr(err, "events file") && strstr(err, "File too large"), "stderr: %s", err);
	snprintf(tmp, sizeof(tmp), "%s.tmp", gw.events_path);
	cr_expect_neq(access(gw.events_path, F_OK), 0, "%s is still there", gw.events_path);
	cr_expect_eq(access(tmp, F_OK), 0, "no %s", tmp);
}

/* The soft and hard "Max open files" of process pid (/proc/PID/limits); -1 when unread. */
static void open_files_limit(pid_t pid, long *soft, long *hard)
{
	char path[64];
	char line[256];
	FILE *fp;

	*soft = *hard = -1;
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "Max open files", 14) == 0 &&
		    sscanf(line + 14, "%ld %ld", soft, hard) != 2)
			*soft = *hard = -1;
	}
	fclose(fp);
}

/*
 * At start the gateway raises its soft open-file limit to the hard one;
 * when that is still under what max_connections may need (2 × 10000 + 64
 * here, against a hard limit of 200) it says so, naming both numbers —
 * unless it was allowed to raise the hard limit too. With max_connections
 * 50 (needing 164) the raise is enough and nothing is said.
 */
Test(gateway_limits, fd_limit_raised_or_warned_at_start, .timeout = 30)
{
	struct rlimit lim = { 100, 200 };
	const struct gw_opts warn = { .log_level = "warn" };
	struct gw_proc small;
	char err[4096];
	long soft;
	long hard;

	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &lim), 0, "setrlimit: %s", strerror(errno));
	gw_start_template(&gw, "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1'}},"
			  "'models':{'m':{'targets':[{'provider':'p','model':'x'}]}}}", NULL, &warn);
	open_files_limit(gw.pid, &soft, &hard);
	gw_stderr(&gw, err, sizeof(err));
	if (soft >= 20064) {
		cr_log_info("the gateway raised its hard limit to %ld", hard);
	} else {
		cr_expect_eq(soft, 200, "soft limit %ld, not raised to the hard 200", soft);
		cr_expect(strstr(err, "open-file limit is 200") && strstr(err, "20064"),
			  "no warning naming 200 and 20064: %s", err);
	}

	memset(&small, 0, sizeof(small));
	cr_assert_eq(gw_start(&small, "{\"max_connections\":50,\"providers\":{\"p\":{\"base_url\":"
			      "\"http://127.0.0.1:9/v1\"}},\"models\":{\"m\":{\"targets\":"
			      "[{\"provider\":\"p\",\"model\":\"x\"}]}}}", &warn), 0);
	open_files_limit(small.pid, &soft, &hard);
	cr_expect_geq(soft, 164, "soft limit %ld", soft);
	gw_stderr(&small, err, sizeof(err));
	cr_expect_null(strstr(err, "open-file limit"), "a warning where the limit is enough: %s",
		       err);
}
