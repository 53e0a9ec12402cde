/*
 * Gateway replicas sharing their breakers through a real redis-server
 * (docs/gateway.md, "Shared state"), as clients and the events files see
 * it: an open on one replica reaches the other within 100 ms and its next
 * request skips the provider; one replica probes at a time behind the
 * probe lock, and a lock held by a replica that died expires on its own;
 * Redis killed and restarted, or stopped, mid-traffic fails no request
 * and slows none, /metrics says it is down, and sharing resumes; an open
 * learned while Redis was down reaches the others when it is back; a
 * password read from the environment; mistakes in shared_state exit 2.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/redisproc.h"

#define FAST "'ttft_ms':20,'jitter_ms':0,'token_ms':0,'output_tokens':8"
#define CHAIN "'targets':[{'provider':'primary','model':'mock-small'}," \
	"{'provider':'secondary','model':'mock-small'}]"

static struct mock_proc mock;
static struct gw_proc gw1, gw2;
static struct redis_proc redis;
static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	redis_cleanup(&redis);
	gw_held_free(&held);
}

TestSuite(gateway_shared, .fini = teardown);

/* ---- helpers ---- */

static void start_all(const char *password)
{
	cr_assert(redis_available(), "redis-server is not installed (scripts/deps.sh installs it)");
	cr_assert_eq(redis_start(&redis, 0, password), 0, "redis-server did not start");
	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
}

/*
 * Starts replica g named name: primary then secondary, the breaker opening
 * on 3 failures for cooldown_ms (no jitter, one probe), shared through the
 * test's Redis with a quick link (200 ms timeout, reconnects within 200 ms)
 * and lock_ms; shared_extra adds keys to shared_state (",…" or "").
 */
static void start_replica(struct gw_proc *g, const char *name, double cooldown_ms,
			  double lock_ms, const char *shared_extra, const char *const *env)
{
	char tmpl[2048];
	const char *args[] = { "--replica", name, NULL };
	struct gw_opts o = { .args = args, .env = env, .log_level = "info" };

	snprintf(tmpl, sizeof(tmpl),
		 "{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':1000},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{" CHAIN ",'max_attempts':2}},"
		 "'breaker':{'consecutive_failures':3,'failure_ratio':0,'cooldown_ms':%g,"
		 "'cooldown_multiplier':1,'cooldown_jitter':0,'half_open_probes':1},"
		 "'shared_state':{'backend':'redis','url':'redis://127.0.0.1:%d/0',"
		 "'key_prefix':'test:','timeout_ms':200,'reconnect_ms':20,"
		 "'reconnect_max_ms':200,'lock_ms':%g%s}}",
		 cooldown_ms, redis.port, lock_ms, shared_extra);
	gw_start_template(g, tmpl, &mock, &o);
}

static void expect_up(const struct gw_proc *g, double v, double within_ms, const char *what);

/* Redis, mockprov and replicas r1 and r2 (start_replica), both seen sharing. */
static void start_pair(double cooldown_ms, double lock_ms)
{
	start_all(NULL);
	start_replica(&gw1, "r1", cooldown_ms, lock_ms, "", NULL);
	start_replica(&gw2, "r2", cooldown_ms, lock_ms, "", NULL);
	expect_up(&gw1, 1, 3000, "r1");
	expect_up(&gw2, 1, 3000, "r2");
}

/* Waits until g's /metrics says the shared state is up (v = 1) or down (0). */
static void expect_up(const struct gw_proc *g, double v, double within_ms, const char *what)
{
	double got = gw_metric_wait(g, "faultline_shared_state_up", "", v, within_ms);

	cr_assert_eq(got, v, "%s: faultline_shared_state_up %g after %.0f ms, expected %g", what,
		     got, within_ms, v);
}

/* The primary answers 503 from now on, for duration_s. */
static void primary_fails(double duration_s)
{
	gw_mock_primary_fails(&mock, duration_s);
}

/* Sends 3 requests to g, each failing over from the primary: its breaker opens. */
static void trip(const struct gw_proc *g)
{
	int i;

	for (i = 0; i < 3; i++) {
		struct http_result *r = gw_chat_held(g, &held, "chat", NULL, NULL, 5000);

		gw_expect_answer(r, "a request during the 503s", "secondary", 2);
	}
}

/*
 * The events of g with "to" to (and origin, when not NULL), polled for up
 * to within_ms until there are at least n; returns the array (held).
 */
static cJSON *events_to(const struct gw_proc *g, const char *to, const char *origin, int n,
			double within_ms, cJSON **all)
{
	double end = now_ms() + within_ms;
	cJSON *match;

	for (;;) {
		cJSON *ev = gw_events(g);
		const cJSON *e;

		cr_assert_not_null(ev, "an events line is not JSON");
		match = cJSON_CreateArray();
		cr_assert_not_null(match);
		cJSON_ArrayForEach(e, ev) {
			if (strcmp(gw_json_str(e, "to"), to) == 0 &&
			    (!origin || (gw_json_str(e, "origin") &&
					 strcmp(gw_json_str(e, "origin"), origin) == 0)))
				cJSON_AddItemReferenceToArray(match, (cJSON *)e);
		}
		if (cJSON_GetArraySize(match) >= n || now_ms() > end) {
			if (all)
				*all = ev;
			gw_held_doc(&held, ev);
			return gw_held_doc(&held, match);
		}
		cJSON_Delete(match);
		cJSON_Delete(ev);
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * Sends chat requests to r1 and r2 in turn for ms, pausing pause_ms after
 * each; every one must be answered 200. tick (may be NULL) runs after each
 * with the time since the start. Returns how many were sent; *worst (may
 * be NULL) gets the slowest's time.
 */
static int alternate(double ms, long pause_ms, void (*tick)(double since), double *worst)
{
	double t0 = now_ms();
	int n;

	for (n = 0; now_ms() - t0 < ms; n++) {
		struct http_result r;
		long status;
		double took;

		cr_assert_eq(gw_chat(n % 2 ? &gw2 : &gw1, "chat", NULL, 5000, &r), 0);
		status = r.status;
		took = r.total_ms;
		http_result_free(&r);
		cr_assert_eq(status, 200, "request %d at %.0f ms: status %ld", n, now_ms() - t0,
			     status);
		if (worst && took > *worst)
			*worst = took;
		if (tick)
			tick(now_ms() - t0);
		if (pause_ms > 0) {
			struct timespec ts = { 0, pause_ms * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	return n;
}

/* Polls g's stderr for up to within_ms until it holds text; out gets it. */
static bool wait_stderr(const struct gw_proc *g, const char *text, double within_ms, char *out,
			size_t len)
{
	double end = now_ms() + within_ms;

	for (;;) {
		if (strstr(gw_stderr(g, out, len), text))
			return true;
		if (now_ms() > end)
			return false;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
}

/* ---- tests ---- */

/*
 * Replica r1's breaker opens on its own failures; r2's opens from r1's
 * message within 100 ms, marked remote, and r2's next request goes
 * straight to the secondary (one attempt).
 */
Test(gateway_shared, two_replicas_share_an_open_within_100_ms, .timeout = 60)
{
	cJSON *opened1;
	cJSON *opened2;
	const cJSON *e1;
	const cJSON *e2;
	double gap;

	start_pair(5000, 2000);
	primary_fails(30);
	trip(&gw1);
	opened1 = events_to(&gw1, "open", "local", 1, 1000, NULL);
	opened2 = events_to(&gw2, "open", NULL, 1, 1000, NULL);
	cr_assert_eq(cJSON_GetArraySize(opened1), 1, "r1's breaker did not open");
	cr_assert_eq(cJSON_GetArraySize(opened2), 1, "r2's breaker did not follow r1's");
	e1 = cJSON_GetArrayItem(opened1, 0);
	e2 = cJSON_GetArrayItem(opened2, 0);
	cr_assert_str_eq(gw_json_str(e1, "replica"), "r1");
	cr_assert_str_eq(gw_json_str(e2, "replica"), "r2");
	cr_assert_str_eq(gw_json_str(e2, "origin"), "remote");
	cr_assert_str_eq(gw_json_str(e2, "peer"), "r1");
	cr_assert_str_eq(gw_json_str(e2, "via"), "pubsub");
	cr_assert_str_eq(gw_json_str(e2, "reason"), "r1: 3 consecutive failures");
	gap = gw_json_num(e2, "t_unix_ms") - gw_json_num(e1, "t_unix_ms");
	cr_assert(gap >= 0 && gap <= 100, "r2 opened %.3f ms after r1 (at most 100)", gap);

	gw_expect_answer(gw_chat_held(&gw2, &held, "chat", NULL, NULL, 5000),
			 "r2's first request after r1's open", "secondary", 1);
	const char *m = gw_metrics_held(&gw2, &held);
	cr_assert_eq(gw_metric(m, "faultline_shared_applied_total", ""), 1, "%s", m);
	cr_assert_eq(gw_metric(m, "faultline_breaker_rejections_total",
			       "provider=primary,model=mock-small"), 1);
	m = gw_metrics_held(&gw1, &held);
	cr_assert_eq(gw_metric(m, "faultline_shared_published_total", ""), 1, "%s", m);
}

/*
 * The cooldown ends while a replica that died ("r9", the test) holds the
 * probe lock: neither replica probes until it expires; then exactly one
 * goes half-open (probe lock won) and its probe's close reaches the other.
 */
Test(gateway_shared, one_replica_probes_at_a_time, .timeout = 60)
{
	const char *set[] = { "SET", "test:probe:primary/mock-small", "r9", "PX", "1500" };
	cJSON *half1;
	cJSON *half2;
	cJSON *closed;
	cJSON *all1;
	cJSON *all2;
	char reply[64];
	double t_open;
	double t_half;

	start_pair(500, 3000);
	primary_fails(0.3);
	/* r9 holds the lock from before the open: no replica may probe until it expires. */
	cr_assert_eq(redis_cmd(&redis, reply, sizeof(reply), 5, set), 0);
	cr_assert_str_eq(reply, "OK");
	trip(&gw1);
	t_open = gw_json_num(cJSON_GetArrayItem(events_to(&gw1, "open", "local", 1, 1000, NULL), 0),
			     "t_unix_ms");
	cr_assert_eq(cJSON_GetArraySize(events_to(&gw2, "open", "remote", 1, 1000, NULL)), 1);
	/* The primary is healthy again; traffic to both for 3 s, the lock gone after 1.5 s. */
	alternate(3000, 50, NULL, NULL);
	half1 = events_to(&gw1, "half_open", NULL, 0, 0, &all1);
	half2 = events_to(&gw2, "half_open", NULL, 0, 0, &all2);
	cr_assert_eq(cJSON_GetArraySize(half1) + cJSON_GetArraySize(half2), 1,
		     "%d and %d half-opens; expected one replica to probe, once\nr1: %s\nr2: %s",
		     cJSON_GetArraySize(half1), cJSON_GetArraySize(half2), cJSON_Print(all1),
		     cJSON_Print(all2));
	const cJSON *h = cJSON_GetArraySize(half1) ? cJSON_GetArrayItem(half1, 0)
						   : cJSON_GetArrayItem(half2, 0);
	const char *prober = gw_json_str(h, "replica");
	cr_assert_str_eq(gw_json_str(h, "reason"), "probe lock won");
	cr_assert_str_eq(gw_json_str(h, "origin"), "local");
	t_half = gw_json_num(h, "t_unix_ms");
	cr_assert(t_half - t_open >= 1200, "a replica probed %.0f ms after the open, while r9 "
		  "held the lock (1,500 ms from before the open)", t_half - t_open);
	/* The other replica closed on the prober's verdict. */
	closed = events_to(strcmp(prober, "r1") == 0 ? &gw2 : &gw1, "closed", "remote", 1, 1000,
			   NULL);
	cr_assert_eq(cJSON_GetArraySize(closed), 1, "the other replica did not close");
	cr_assert_str_eq(gw_json_str(cJSON_GetArrayItem(closed, 0), "peer"), prober);
	/* Released on the verdict: the lock is gone. */
	const char *get[] = { "GET", "test:probe:primary/mock-small" };
	cr_assert_eq(redis_cmd(&redis, reply, sizeof(reply), 2, get), 0);
	cr_assert_str_eq(reply, "(nil)", "the lock was not released: %s", reply);
}

/*
 * Requests keep coming while the cooldown ends (a request every few ms to
 * each replica): one replica still takes the probe lock at the cooldown's
 * end, not later — requests that find the cooldown over while the lock is
 * being asked for hold the breaker open, and must not delay the asking.
 */
Test(gateway_shared, a_busy_fleet_still_probes_when_the_cooldown_ends, .timeout = 60)
{
	cJSON *half1;
	cJSON *half2;
	double t_open;
	double t_half;
	int i;

	start_pair(400, 3000);
	primary_fails(0.2);
	trip(&gw1);
	t_open = gw_json_num(cJSON_GetArrayItem(events_to(&gw1, "open", "local", 1, 1000, NULL), 0),
			     "t_unix_ms");
	i = alternate(1500, 0, NULL, NULL);
	half1 = events_to(&gw1, "half_open", NULL, 0, 0, NULL);
	half2 = events_to(&gw2, "half_open", NULL, 0, 0, NULL);
	cr_assert_eq(cJSON_GetArraySize(half1) + cJSON_GetArraySize(half2), 1,
		     "%d and %d half-opens in %d requests; expected one", cJSON_GetArraySize(half1),
		     cJSON_GetArraySize(half2), i);
	t_half = gw_json_num(cJSON_GetArraySize(half1) ? cJSON_GetArrayItem(half1, 0)
						       : cJSON_GetArrayItem(half2, 0), "t_unix_ms");
	cr_assert(t_half - t_open >= 399 && t_half - t_open <= 800,
		  "probed %.0f ms after the open; the cooldown is 400 ms", t_half - t_open);
}

/*
 * Redis is killed with traffic going through both replicas, then
 * restarted on its port; later it is stopped (SIGSTOP) and continued.
 * Every request is answered, none slower than 300 ms; /metrics says down
 * and then up; and sharing works again afterwards.
 */
static int phase;

/* Redis's timeline under alternate(): killed at 1 s, restarted at 2 s, stopped at 3.5 s, continued at 5 s. */
static void fail_redis(double since)
{
	if (phase == 0 && since > 1000) {
		cr_assert_eq(redis_kill(&redis, SIGKILL), 0);
		phase = 1;
	} else if (phase == 1 && since > 2000) {
		expect_up(&gw1, 0, 100, "r1 with Redis dead");
		cr_assert_eq(redis_restart(&redis), 0, "redis-server did not restart");
		phase = 2;
	} else if (phase == 2 && since > 3500) {
		expect_up(&gw1, 1, 2000, "r1 after the restart");
		expect_up(&gw2, 1, 2000, "r2 after the restart");
		cr_assert_eq(redis_kill(&redis, SIGSTOP), 0);
		phase = 3;
	} else if (phase == 3 && since > 5000) {
		expect_up(&gw2, 0, 100, "r2 with Redis stopped");
		cr_assert_eq(redis_kill(&redis, SIGCONT), 0);
		phase = 4;
	}
}

Test(gateway_shared, redis_failing_fails_no_request, .timeout = 90)
{
	double worst = 0;

	start_pair(60000, 2000);
	phase = 0;
	alternate(6000, 0, fail_redis, &worst);
	cr_assert_eq(phase, 4, "the loop ended in phase %d", phase);
	cr_assert(worst <= 300, "a request took %.0f ms while Redis failed", worst);
	expect_up(&gw1, 1, 3000, "r1 after SIGCONT");
	expect_up(&gw2, 1, 3000, "r2 after SIGCONT");
	const char *m = gw_metrics_held(&gw1, &held);
	cr_assert_geq(gw_metric(m, "faultline_shared_reconnects_total", ""), 2, "%s", m);
	/* Sharing works again. */
	primary_fails(30);
	trip(&gw2);
	cr_assert_eq(cJSON_GetArraySize(events_to(&gw1, "open", "remote", 1, 1000, NULL)), 1,
		     "r1 did not follow r2's open after Redis came back");
	char err[4096];
	cr_assert(strstr(gw_stderr(&gw1, err, sizeof(err)), "shared state: Redis at 127.0.0.1"),
		  "nothing logged of Redis going away: %s", err);
}

/* An open made while Redis was down reaches the other replica once it is back. */
Test(gateway_shared, an_open_made_while_redis_was_down_converges, .timeout = 60)
{
	cJSON *opened;

	start_pair(60000, 2000);
	cr_assert_eq(redis_kill(&redis, SIGKILL), 0);
	expect_up(&gw1, 0, 2000, "r1 with Redis dead");
	primary_fails(30);
	trip(&gw1);
	cr_assert_eq(cJSON_GetArraySize(events_to(&gw1, "open", "local", 1, 1000, NULL)), 1);
	cr_assert_eq(cJSON_GetArraySize(events_to(&gw2, "open", NULL, 1, 300, NULL)), 0,
		     "r2 heard of the open with Redis dead");
	cr_assert_eq(redis_restart(&redis), 0);
	opened = events_to(&gw2, "open", "remote", 1, 3000, NULL);
	cr_assert_eq(cJSON_GetArraySize(opened), 1, "r2 did not learn of r1's open");
	cr_assert_str_eq(gw_json_str(cJSON_GetArrayItem(opened, 0), "peer"), "r1");
	gw_expect_answer(gw_chat_held(&gw2, &held, "chat", NULL, NULL, 5000),
			 "r2 after converging", "secondary", 1);
}

/*
 * Replica r1 restarts (same name, a new process) while the fleet's breaker
 * is open: the new r1, closed for want of evidence, learns the open from
 * Redis and does not close r2's.
 */
Test(gateway_shared, a_restarted_replica_keeps_the_fleets_open, .timeout = 60)
{
	cJSON *learned;
	cJSON *closed;

	start_pair(60000, 2000);
	primary_fails(30);
	trip(&gw1);
	cr_assert_eq(cJSON_GetArraySize(events_to(&gw2, "open", "remote", 1, 1000, NULL)), 1);
	cr_assert_eq(gw_stop(&gw1, SIGTERM, 5000), 0);
	start_replica(&gw1, "r1", 60000, 2000, "", NULL);
	expect_up(&gw1, 1, 3000, "the restarted r1");
	learned = events_to(&gw1, "open", "remote", 1, 2000, NULL);
	cr_assert_eq(cJSON_GetArraySize(learned), 1, "the restarted r1 did not learn the open");
	cr_assert_str_eq(gw_json_str(cJSON_GetArrayItem(learned, 0), "via"), "sync");
	gw_expect_answer(gw_chat_held(&gw1, &held, "chat", NULL, NULL, 5000),
			 "the restarted r1's first request", "secondary", 1);
	closed = events_to(&gw2, "closed", NULL, 1, 500, NULL);
	cr_assert_eq(cJSON_GetArraySize(closed), 0, "r2 closed when r1 restarted");
}

/* A dial Redis refuses is seen as refused at once, not after a timeout. */
Test(gateway_shared, a_refused_dial_is_seen_at_once, .timeout = 30)
{
	char err[4096];
	double t0;

	start_all(NULL);
	cr_assert_eq(redis_kill(&redis, SIGKILL), 0);
	t0 = now_ms();
	start_replica(&gw1, "r1", 5000, 2000, "", NULL);
	cr_assert(wait_stderr(&gw1, "unreachable: Connection refused", 2000, err, sizeof(err)),
		  "%s", err);
	cr_assert(now_ms() - t0 < 1000, "refusal seen after %.0f ms", now_ms() - t0);
	expect_up(&gw1, 0, 0, "r1 with Redis dead");
}

/* AUTH with the password from password_env; a wrong one: down, logged without the password. */
Test(gateway_shared, the_password_comes_from_the_environment, .timeout = 60)
{
	const char *good[] = { "FL_REDIS_PW=correct-horse-battery", NULL };
	const char *bad[] = { "FL_REDIS_PW=wrong-password-9", NULL };
	char err[4096];

	start_all("correct-horse-battery");
	start_replica(&gw1, "r1", 5000, 2000, ",'password_env':'FL_REDIS_PW'", good);
	start_replica(&gw2, "r2", 5000, 2000, ",'password_env':'FL_REDIS_PW'", bad);
	expect_up(&gw1, 1, 3000, "r1 with the password");
	cr_assert(wait_stderr(&gw2, "AUTH was refused", 3000, err, sizeof(err)), "%s", err);
	expect_up(&gw2, 0, 0, "r2 with a wrong password");
	gw_expect_answer(gw_chat_held(&gw2, &held, "chat", NULL, NULL, 5000),
			 "r2 without shared state", "primary", 1);
	cr_assert_null(strstr(err, "wrong-password-9"), "the password was logged: %s", err);
	gw_stderr(&gw1, err, sizeof(err));
	cr_assert_null(strstr(err, "correct-horse-battery"), "the password was logged: %s", err);
}

/* Mistakes in shared_state, and a bad --replica, exit 2 naming the key. */
Test(gateway_shared, bad_shared_state_exits_2, .timeout = 30)
{
	static const char *const bad_replica[] = { "--replica", "a b", NULL };
	static const struct {
		const char *shared;
		const char *const *args;
		const char *says;
	} cases[] = {
		{ "{'backend':'redis','url':'redis://10.9.8.7:6379'}", NULL,
		  "shared_state.url: expected a loopback host" },
		{ "{'backend':'redis','url':'redis://:pw@127.0.0.1:6379'}", NULL,
		  "shared_state.url: expected a URL without a user or password" },
		{ "{'backend':'redis','flavour':'x'}", NULL, "shared_state.flavour: unknown key" },
		{ "{'backend':'redis','password_env':'FL_NOT_SET_PW'}", NULL,
		  "shared_state.password_env: expected the name of a set environment variable" },
		{ "{'backend':'redis'}", bad_replica,
		  "--replica: expected 1 to 63 letters" },
	};
	const char *env[] = { "FL_NOT_SET_PW", NULL };
	char tmpl[1024];
	char json[1024];
	char path[256];
	char err[2048];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(tmpl, sizeof(tmpl),
			 "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1'}},"
			 "'models':{'chat':{'targets':[{'provider':'p','model':'m'}]}},"
			 "'shared_state':%s}", cases[i].shared);
		for (size_t k = 0; tmpl[k] && k + 1 < sizeof(json); k++)
			json[k] = tmpl[k] == '\'' ? '"' : tmpl[k], json[k + 1] = '\0';
		cr_assert_eq(gw_run(json, cases[i].args, env, path, sizeof(path), err, sizeof(err),
				    5000), 2, "case %zu: %s", i, err);
		cr_assert(strstr(err, cases[i].says), "case %zu: expected \"%s\" in %s", i,
			  cases[i].says, err);
	}
}
