/*
 * A gateway of several worker processes on one port (workers: N,
 * docs/gateway.md "Workers"), as clients, mockprov and the events file
 * see it: a breaker opened by one worker is open in every other within
 * 50 ms (by the events' times) and their requests skip the target;
 * SIGTERM under load answers every request in flight in full and exits 0;
 * a worker killed with SIGKILL is started again and the gateway answers
 * throughout, its counts kept in /metrics — while one is in its restart back-off another serves its
 * socket, so no connection waits and a stop loses none (with every
 * worker down, a stop that drops connections exits 1); a second gateway
 * on the port exits 1; a target's names past a kilobyte open and close
 * as any; a worker whose hub stops answering gives up its waits; /metrics and /admin/breakers total the requests sent,
 * whichever worker answers; the health checks run once, not N times; the
 * retry budget is one for the gateway; with shared_state redis the
 * workers share through Redis; a bad --workers and a replica name too
 * long for its workers exit 2 (at a start and under --check-config).
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/rawhttp.h"
#include "tests/support/redisproc.h"
#include "tests/support/tmpdir.h"

#define FAST "'ttft_ms':20,'jitter_ms':0,'token_ms':0,'output_tokens':8"
#define CHAIN "'targets':[{'provider':'primary','model':'mock-small'}," \
	"{'provider':'secondary','model':'mock-small'}]"

/* A config that needs nothing running, its closing brace left off. */
#define BASE "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\"}}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}"

static struct mock_proc mock;
static struct gw_proc gw;
static struct redis_proc redis;
static struct gw_held held;
static char cdir[64];		/* a test's own temp dir, when it makes one */

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	redis_cleanup(&redis);
	gw_held_free(&held);
	if (cdir[0])
		tmpdir_remove(cdir);
	cdir[0] = '\0';
}

TestSuite(gateway_workers, .fini = teardown);

/* ---- helpers ---- */

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* mockprov with a primary and a secondary answering after ttft_ms. */
static void start_mock(int ttft_ms)
{
	char tmpl[512];

	snprintf(tmpl, sizeof(tmpl),
		 "{'providers':["
		 "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':%d,'jitter_ms':0,'token_ms':0,"
		 "'output_tokens':8},"
		 "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}", ttft_ms);
	gw_mock_start_template(&mock, tmpl);
}

#define PROVIDERS "'primary':{'base_url':'@primary@','timeout_ms':2000}," \
	"'secondary':{'base_url':'@secondary@'}"

/*
 * The gateway with n workers: providers (the inside of "providers"),
 * primary then secondary for the alias, the breaker opening on 3 failures
 * for 5 s (no jitter).
 */
static void start_workers(unsigned n, const char *providers)
{
	char tmpl[2048];
	struct gw_opts o = { .log_level = "info" };

	snprintf(tmpl, sizeof(tmpl),
		 "{'workers':%u,'request_deadline_ms':5000,'providers':{%s},"
		 "'models':{'chat':{" CHAIN ",'max_attempts':2}},"
		 "'breaker':{'consecutive_failures':3,'failure_ratio':0,'cooldown_ms':5000,"
		 "'cooldown_multiplier':1,'cooldown_jitter':0,'half_open_probes':1}}",
		 n, providers);
	gw_start_template(&gw, tmpl, &mock, &o);
}

/* The primary answers 503 from now on, for duration_s. */
static void primary_fails(double duration_s)
{
	gw_mock_primary_fails(&mock, duration_s);
}

/* The pids of the gateway's workers (children of its pid), up to cap. Returns how many. */
static size_t worker_pids(const struct gw_proc *g, pid_t *pids, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL && n < cap) {
		char path[300];
		char stat[512];
		FILE *fp;
		char *close_paren;
		int ppid = 0;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;
		if (fgets(stat, sizeof(stat), fp) && (close_paren = strrchr(stat, ')')) &&
		    sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == g->pid)
			pids[n++] = (pid_t)atoi(e->d_name);
		fclose(fp);
	}
	closedir(d);
	return n;
}

/* A file's text into out (NUL-terminated; "" when it cannot be read). Returns out. */
static char *slurp_text(const char *path, char *out, size_t len)
{
	FILE *fp = fopen(path, "r");
	size_t n = fp ? fread(out, 1, len - 1, fp) : 0;

	out[n] = '\0';
	if (fp)
		fclose(fp);
	return out;
}

static bool pid_in(pid_t pid, const pid_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (set[i] == pid)
			return true;
	}
	return false;
}

/*
 * Kills a worker of the gateway's two (both, with both) times times in a
 * row, each of its successors as soon as it appears, so that each dies
 * soon after its start and the supervisor waits 100 ms, 200 ms, … before
 * each restart; then waits for the log line of the last back-off,
 * "starting it again in WAIT ms". Returns when the last kill was made
 * (now_ms()).
 */
static double kill_into_backoff(int times, bool both, const char *wait_line)
{
	pid_t dead[64];
	pid_t pids[8];
	pid_t survivor = 0;
	size_t ndead = 0;
	double killed = 0;
	double end;
	char err[65536];
	size_t n;
	size_t i;
	int round;

	n = worker_pids(&gw, pids, 8);
	cr_assert_eq(n, 2, "%zu workers", n);
	if (!both)
		survivor = pids[1];
	for (round = 0; round < times; round++) {
		size_t want = both ? 2 : 1;
		size_t nnew;

		/* This round's victims: the workers not killed before (the dead may linger as zombies). */
		for (end = now_ms() + 15000;; pause_ms(2)) {
			pid_t fresh[8];

			n = worker_pids(&gw, pids, 8);
			for (i = 0, nnew = 0; i < n; i++) {
				if (pids[i] != survivor && !pid_in(pids[i], dead, ndead))
					fresh[nnew++] = pids[i];
			}
			if (nnew >= want) {
				for (i = 0; i < nnew && ndead < 64; i++) {
					cr_assert_eq(kill(fresh[i], SIGKILL), 0);
					dead[ndead++] = fresh[i];
				}
				killed = now_ms();
				break;
			}
			cr_assert_lt(now_ms(), end, "round %d: the killed worker was not started again",
				     round + 1);
		}
	}
	for (end = now_ms() + 10000;; pause_ms(5)) {
		if (strstr(gw_stderr(&gw, err, sizeof(err)), wait_line))
			break;
		cr_assert_lt(now_ms(), end, "no \"%s\" in:\n%s", wait_line, err);
	}
	return killed;
}

/*
 * The events whose "to" is to and, when origin is not NULL, whose origin
 * it is: a new array of copies (the caller deletes it, or holds it).
 */
static cJSON *events_to(const char *to, const char *origin)
{
	cJSON *ev = gw_events(&gw);
	cJSON *match = cJSON_CreateArray();
	const cJSON *e;

	cr_assert_not_null(ev, "an events line is not JSON");
	cr_assert_not_null(match);
	cJSON_ArrayForEach(e, ev) {
		if (strcmp(gw_json_str(e, "to"), to) == 0 &&
		    (!origin || strcmp(gw_json_str(e, "origin"), origin) == 0))
			cJSON_AddItemToArray(match, cJSON_Duplicate(e, true));
	}
	cJSON_Delete(ev);
	return match;
}

/* How many events events_to would give. */
static int count_events(const char *to, const char *origin)
{
	cJSON *match = events_to(to, origin);
	int n = cJSON_GetArraySize(match);

	cJSON_Delete(match);
	return n;
}

/* Polls the events file for up to within_ms until n lines go to `to`; returns them (held). */
static cJSON *await_events(const char *to, const char *origin, int n, double within_ms)
{
	double end = now_ms() + within_ms;

	while (count_events(to, origin) < n && now_ms() < end)
		pause_ms(5);
	return gw_held_doc(&held, events_to(to, origin));
}

/*
 * SIGTERMs the gateway and waits until its port refuses connections: every
 * worker has begun its drain (5 s at most).
 */
static void sigterm_until_refused(void)
{
	double end = now_ms() + 5000;

	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	for (;; pause_ms(5)) {
		struct raw_http probe;
		int rc = raw_open(&probe, gw.addr, 0);

		raw_free(&probe);
		if (rc)
			break;
		cr_assert_lt(now_ms(), end, "the port still takes connections 5 s after SIGTERM");
	}
}

/* Sends n chat requests, one after another, each on a connection of its own; all 200. */
static void send_ok(int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++) {
		struct http_result r;
		long status;

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 5000, &r), 0);
		status = r.status;
		http_result_free(&r);
		cr_assert_eq(status, 200, "%s: request %d of %d answered %ld", what, i + 1, n,
			     status);
	}
}

/* ---- tests ---- */

/*
 * Three workers; requests one at a time, each on a new connection (so the
 * kernel spreads them), during the primary's 503s: the worker that first
 * sees 3 failures opens the breaker, and each of the other two has opened
 * it too within 50 ms by the events' times (origin remote, via the hub);
 * from then on no request tries the primary, whichever worker gets it, and
 * /admin/breakers shows it open in every worker.
 */
Test(gateway_workers, an_open_reaches_every_worker_within_50_ms, .timeout = 60)
{
	const cJSON *local;
	const cJSON *e;
	cJSON *remote;
	const cJSON *br;
	const cJSON *v;
	double t_open;
	int i;

	start_mock(20);
	start_workers(3, PROVIDERS);
	primary_fails(60);
	for (i = 0; i < 40 && count_events("open", "local") == 0; i++) {
		struct http_result r;
		long status;

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 5000, &r), 0);
		status = r.status;
		http_result_free(&r);
		cr_assert_eq(status, 200, "request %d: %ld", i, status);
	}
	cr_assert_eq(count_events("open", "local"), 1,
		     "no worker (or more than one) opened the breaker in %d requests", i);
	local = cJSON_GetArrayItem(gw_held_doc(&held, events_to("open", "local")), 0);
	t_open = gw_json_num(local, "t_unix_ms");
	remote = await_events("open", "remote", 2, 1000);
	cr_assert_eq(cJSON_GetArraySize(remote), 2, "%d of the other 2 workers followed the open",
		     cJSON_GetArraySize(remote));
	cJSON_ArrayForEach(e, remote) {
		double gap = gw_json_num(e, "t_unix_ms") - t_open;

		cr_assert(gap >= 0 && gap <= 50, "worker %g opened %.3f ms after worker %g (at most "
			  "50)", gw_json_num(e, "worker"), gap, gw_json_num(local, "worker"));
		cr_assert_str_eq(gw_json_str(e, "via"), "hub");
		cr_assert_neq(gw_json_num(e, "worker"), gw_json_num(local, "worker"));
		cr_assert_str_eq(gw_json_str(e, "peer"), gw_json_str(local, "replica"));
	}
	cr_assert_neq(gw_json_num(cJSON_GetArrayItem(remote, 0), "worker"),
		      gw_json_num(cJSON_GetArrayItem(remote, 1), "worker"));
	/* Whichever worker answers now skips the primary: one attempt each. */
	for (i = 0; i < 12; i++) {
		struct http_result r;

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 5000, &r), 0);
		gw_expect_answer(&r, "a request after the open", "secondary", 1);
		http_result_free(&r);
	}
	br = gw_breaker_must(gw_breakers_held(&gw, &held), "primary", "mock-small");
	cr_assert_str_eq(gw_json_str(br, "state"), "open");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(br, "workers")), 3);
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(br, "workers"))
		cr_assert_str_eq(gw_json_str(v, "state"), "open", "worker %g",
				 gw_json_num(v, "worker"));
	cr_assert_geq(gw_json_num(cJSON_GetObjectItemCaseSensitive(br, "totals"), "rejected"), 12);
}

/*
 * One open of the gateway's breaker, made by one worker of three and
 * followed by the other two, is one transition: /metrics counts
 * closed -> open once (each worker counts the changes it made, not those
 * it applied from another), and the events file's two remote lines name
 * the worker they follow ("peer_worker"), which is how a reader of the
 * file — the runner — tells them from a change of the gateway's own.
 */
Test(gateway_workers, one_open_of_the_gateway_counts_once, .timeout = 60)
{
	const cJSON *local;
	const cJSON *e;
	const char *text;
	int i;

	start_mock(20);
	start_workers(3, PROVIDERS);
	primary_fails(60);
	for (i = 0; i < 40 && count_events("open", "local") == 0; i++)
		send_ok(1, "during the 503s");
	cr_assert_eq(count_events("open", "local"), 1);
	local = cJSON_GetArrayItem(gw_held_doc(&held, events_to("open", "local")), 0);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(local, "peer_worker"));
	cJSON_ArrayForEach(e, await_events("open", "remote", 2, 1000))
		cr_assert_eq(gw_json_num(e, "peer_worker"), gw_json_num(local, "worker"),
			     "a remote line of worker %g does not name the worker it follows",
			     gw_json_num(e, "worker"));
	cr_assert_eq(count_events("open", "remote"), 2);
	for (i = 0; i < 6; i++) {
		text = gw_metrics_held(&gw, &held);
		cr_assert_eq(gw_metric(text, "faultline_breaker_transitions_total",
				       "provider=primary,model=mock-small,from=closed,to=open"), 1,
			     "ask %d:\n%s", i, text);
		cr_assert_eq(gw_metric_sum(text, "faultline_breaker_transitions_total",
					   "provider=primary", NULL), 1, "%s", text);
	}
}

/*
 * Two workers with 24 requests in flight (each held 1.5 s by the primary,
 * on connections of their own, so both workers have some): SIGTERM to the
 * gateway answers every one of them 200 in full, both workers say they
 * drained requests, and it exits 0; then the port refuses connections.
 */
Test(gateway_workers, sigterm_answers_every_request_in_flight, .timeout = 60)
{
	enum { N = 24 };
	static struct gw_bg bg[N];
	char rid[32];
	char err[16384];
	const char *w1;
	const char *w2;
	struct http_result r;
	size_t i;

	start_mock(1500);
	start_workers(2, PROVIDERS);
	for (i = 0; i < N; i++) {
		snprintf(rid, sizeof(rid), "drain-%zu", i);
		gw_bg_start(&bg[i], &gw, "chat", rid, NULL, 10000);
	}
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", N, 5000),
		  "the %d requests did not all reach the primary", N);
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	for (i = 0; i < N; i++) {
		gw_bg_join(&bg[i]);
		cr_expect_eq(bg[i].rc, 0);
		cr_expect_eq(bg[i].r.status, 200, "drain-%zu: status %ld (%s)", i, bg[i].r.status,
			     bg[i].r.errbuf);
		cr_expect_not_null(bg[i].r.body && strstr(bg[i].r.body, "\"finish_reason\""),
				   "drain-%zu: not a whole answer: %s", i,
				   bg[i].r.body ? bg[i].r.body : "(none)");
		http_result_free(&bg[i].r);
	}
	cr_assert_eq(gw_wait(&gw, 10000), 0, "the gateway did not exit 0");
	gw_stderr(&gw, err, sizeof(err));
	w1 = strstr(err, "gateway[w1] info: caught SIGTERM: draining ");
	w2 = strstr(err, "gateway[w2] info: caught SIGTERM: draining ");
	cr_assert(w1 && w2, "both workers drain:\n%s", err);
	cr_expect_gt(atoi(w1 + strlen("gateway[w1] info: caught SIGTERM: draining ")), 0,
		     "worker 1 had nothing in flight:\n%s", err);
	cr_expect_gt(atoi(w2 + strlen("gateway[w2] info: caught SIGTERM: draining ")), 0,
		     "worker 2 had nothing in flight:\n%s", err);
	cr_assert_eq(gw_chat(&gw, "chat", NULL, 2000, &r), 0);
	cr_expect_eq(r.status, 0, "a request after the stop was answered %ld", r.status);
	cr_expect_eq(r.code, CURLE_COULDNT_CONNECT, "after the stop: %s", r.errbuf);
	http_result_free(&r);
}

/* What a loader thread saw: requests sent (written whole), answered 200 in full, broken. */
struct loader {
	pthread_t thread;
	const struct gw_proc *g;
	atomic_int *answered;		/* every loader's answers, for the test to wait on */
	int sent;
	int ok;
	int broken;
	char first_broken[256];
};

/*
 * Sends chat requests one after another, each on a new connection, until
 * the port refuses one (the gateway has stopped): a request is sent once
 * its bytes are written, and must then be answered 200 in full.
 */
static void *load(void *arg)
{
	struct loader *l = arg;
	char body[256];

	gw_chat_body("chat", body, sizeof(body));
	for (;;) {
		struct raw_http c;

		if (raw_open(&c, l->g->addr, 0)) {
			raw_free(&c);
			break;		/* refused (or reset while connecting): nothing was sent */
		}
		if (raw_post(&c, "/v1/chat/completions", 1, NULL, body)) {
			raw_free(&c);
			break;		/* the request did not leave: the port was closing */
		}
		l->sent++;
		if (raw_read(&c, NULL, NULL, 10000) == 0 && c.status == 200 && c.state == RAW_DONE &&
		    strstr(c.body.data ? c.body.data : "", "\"finish_reason\"")) {
			l->ok++;
			atomic_fetch_add(l->answered, 1);
		} else if (l->broken++ == 0) {
			snprintf(l->first_broken, sizeof(l->first_broken),
				 "status %d, state %d, err %d, eof %d: %s", c.status, (int)c.state,
				 c.err, c.eof, raw_tail(&c, 120));
		}
		raw_free(&c);
	}
	return NULL;
}

/*
 * Two workers under a steady load — 12 clients, each sending a request on
 * a new connection as soon as its last was answered — get SIGTERM: every
 * request sent is answered 200 in full (none cut, none reset, none closed
 * unanswered), the clients end refused, and the gateway exits 0.
 */
Test(gateway_workers, sigterm_under_load_loses_no_request, .timeout = 60)
{
	enum { N = 12 };
	static struct loader l[N];
	atomic_int answered = 0;
	int sent = 0;
	int ok = 0;
	double end;
	size_t i;

	start_mock(2);
	start_workers(2, PROVIDERS);
	for (i = 0; i < N; i++) {
		l[i] = (struct loader){ .g = &gw, .answered = &answered };
		cr_assert_eq(pthread_create(&l[i].thread, NULL, load, &l[i]), 0);
	}
	for (end = now_ms() + 10000; atomic_load(&answered) < 200 && now_ms() < end;)
		pause_ms(5);
	cr_assert_geq(atomic_load(&answered), 200, "the load did not get going");
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	for (i = 0; i < N; i++) {
		pthread_join(l[i].thread, NULL);
		sent += l[i].sent;
		ok += l[i].ok;
		cr_expect_eq(l[i].broken, 0, "client %zu: %d of %d requests sent were not answered "
			     "in full; the first: %s", i, l[i].broken, l[i].sent, l[i].first_broken);
	}
	cr_assert_eq(ok, sent, "%d of %d requests sent were answered in full", ok, sent);
	cr_assert_eq(gw_wait(&gw, 10000), 0, "the gateway did not exit 0");
}

/*
 * Connections opened before the stop, whose requests come after it (as a
 * client's request may be on its way while the gateway starts to drain):
 * the workers do not close them as idle — a connection that has had no
 * answer yet was opened to send one — and answer each in full with
 * Connection: close, once the port already refuses new connections.
 */
Test(gateway_workers, connections_opened_before_sigterm_are_answered, .timeout = 60)
{
	enum { N = 8 };
	struct raw_http c[N];
	char body[256];
	char conn[32];
	size_t i;

	start_mock(5);
	start_workers(2, PROVIDERS);
	send_ok(2, "before");
	for (i = 0; i < N; i++)
		cr_assert_eq(raw_open(&c[i], gw.addr, 0), 0);
	sigterm_until_refused();
	gw_chat_body("chat", body, sizeof(body));
	for (i = 0; i < N; i++) {
		cr_assert_eq(raw_post(&c[i], "/v1/chat/completions", 1, NULL, body), 0,
			     "connection %zu was closed before its request", i);
		cr_expect_eq(raw_read(&c[i], NULL, NULL, 5000), 0, "connection %zu: %s", i,
			     raw_tail(&c[i], 160));
		cr_expect_eq(c[i].status, 200, "connection %zu", i);
		cr_expect_str_eq(raw_header(&c[i], "Connection", conn, sizeof(conn)) ? conn : "",
				 "close");
		raw_free(&c[i]);
	}
	cr_assert_eq(gw_wait(&gw, 10000), 0, "the gateway did not exit 0");
}

/*
 * Two workers; one is killed with SIGKILL: the supervisor logs it and
 * starts it again, /metrics counts the restart, and every request sent
 * meanwhile and after — on new connections, some of which the kernel
 * hands the dead worker's socket — is answered.
 */
Test(gateway_workers, a_killed_worker_is_started_again, .timeout = 60)
{
	pid_t before[4];
	pid_t after[4];
	char err[16384];
	char want[96];
	const char *text;
	double end;
	size_t n;

	start_mock(20);
	start_workers(2, PROVIDERS);
	send_ok(4, "before the kill");
	n = worker_pids(&gw, before, 4);
	cr_assert_eq(n, 2, "%zu workers", n);
	cr_assert_eq(kill(before[0], SIGKILL), 0);
	send_ok(20, "from the kill on");
	/* Every worker serves again (its figures in /metrics) within 5 s. */
	for (end = now_ms() + 5000;; pause_ms(20)) {
		struct http_result r;
		double up;

		cr_assert_eq(gw_get(&gw, "/metrics", &r), 0);
		up = gw_metric_sum(r.body ? r.body : "", "faultline_worker_up", "", NULL);
		http_result_free(&r);
		if (up == 2 || now_ms() > end)
			break;
	}
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric_sum(text, "faultline_worker_restarts_total", "", NULL), 1, "%s",
		     text);
	cr_assert_eq(gw_metric_sum(text, "faultline_worker_up", "", NULL), 2, "%s", text);
	n = worker_pids(&gw, after, 4);
	cr_assert_eq(n, 2, "%zu workers after the restart", n);
	cr_assert(after[0] != before[0] && after[1] != before[0], "the killed worker is back "
		  "under its old pid");
	snprintf(want, sizeof(want), "(pid %d) was killed by signal 9", (int)before[0]);
	cr_assert_not_null(strstr(gw_stderr(&gw, err, sizeof(err)), want),
			   "no line saying so:\n%s", err);
	cr_assert_not_null(strstr(err, "serves again"), "%s", err);
	send_ok(4, "after the restart");
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0, "the gateway did not stop cleanly");
}

/*
 * Two workers; one is killed six times in a row, each time soon after its
 * start, so that the supervisor waits 3.2 s before starting it again.
 * Meanwhile the kernel still hands new connections to its listening
 * socket, which the other worker serves too: 24 requests, each on a
 * connection of its own, are all answered within a second (none waits
 * out the back-off), and a stop then exits 0.
 */
Test(gateway_workers, a_worker_in_back_off_leaves_no_connection_waiting, .timeout = 60)
{
	char err[65536];
	double killed;
	int i;

	start_mock(5);
	start_workers(2, PROVIDERS);
	send_ok(4, "before the kills");
	killed = kill_into_backoff(6, false, "starting it again in 3200 ms");
	for (i = 0; i < 24; i++) {
		struct http_result r;
		long status;
		double t0 = now_ms();

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 1000, &r), 0);
		status = r.status;
		cr_assert_eq(status, 200, "request %d, %.0f ms into the back-off: %ld (%s) after %.0f ms",
			     i + 1, t0 - killed, status, r.errbuf, now_ms() - t0);
		http_result_free(&r);
	}
	cr_assert_lt(now_ms() - killed, 3200, "the requests outlasted the back-off: no test");
	cr_assert_not_null(strstr(gw_stderr(&gw, err, sizeof(err)), "'s socket is served by worker"),
			   "%s", err);
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0, "the gateway did not stop cleanly");
}

/*
 * Connections opened while a worker is in its restart back-off — some
 * on its socket — then SIGTERM: every one is answered in full once its
 * request comes (none reset with the dead worker's socket), the port
 * refuses new connections, and the gateway exits 0.
 */
Test(gateway_workers, sigterm_in_a_back_off_loses_no_connection, .timeout = 60)
{
	enum { N = 16 };
	struct raw_http c[N];
	char body[256];
	size_t i;

	start_mock(5);
	start_workers(2, PROVIDERS);
	send_ok(2, "before the kills");
	kill_into_backoff(6, false, "starting it again in 3200 ms");
	for (i = 0; i < N; i++)
		cr_assert_eq(raw_open(&c[i], gw.addr, 0), 0);
	sigterm_until_refused();
	gw_chat_body("chat", body, sizeof(body));
	for (i = 0; i < N; i++) {
		cr_expect_eq(raw_post(&c[i], "/v1/chat/completions", 1, NULL, body), 0,
			     "connection %zu was closed before its request", i);
		cr_expect_eq(raw_read(&c[i], NULL, NULL, 5000), 0, "connection %zu: %s", i,
			     raw_tail(&c[i], 160));
		cr_expect_eq(c[i].status, 200, "connection %zu: %s", i, raw_tail(&c[i], 160));
		raw_free(&c[i]);
	}
	cr_assert_eq(gw_wait(&gw, 10000), 0, "the gateway did not exit 0");
}

/*
 * Both workers in a restart back-off at once, connections waiting on
 * their sockets, then SIGTERM: nobody can take them, so the gateway says
 * they are dropped and exits 1 (not 0, as if nothing were lost).
 */
Test(gateway_workers, a_stop_that_drops_waiting_connections_exits_1, .timeout = 60)
{
	enum { N = 8 };
	struct raw_http c[N];
	char err[65536];
	size_t i;
	int rc;

	start_mock(5);
	start_workers(2, PROVIDERS);
	kill_into_backoff(6, true, "starting it again in 3200 ms");
	for (i = 0; i < N; i++)
		cr_assert_eq(raw_open(&c[i], gw.addr, 0), 0);
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	rc = gw_wait(&gw, 10000);
	for (i = 0; i < N; i++)
		raw_free(&c[i]);
	gw_stderr(&gw, err, sizeof(err));
	cr_assert_eq(rc, 1, "exit %d\n%s", rc, err);
	cr_assert_not_null(strstr(err, "connection(s) waiting on it are dropped"), "%s", err);
}

/* Whether every worker's view of breaker (prov, model) in /admin/breakers is state. */
static bool all_workers(const char *prov, const char *model, const char *state, unsigned n)
{
	cJSON *doc = gw_breakers(&gw);
	const cJSON *br = gw_breaker(doc, prov, model);
	const cJSON *v;
	unsigned k = 0;
	bool all = br != NULL;

	const cJSON *views = br ? cJSON_GetObjectItemCaseSensitive(br, "workers") : NULL;

	cJSON_ArrayForEach(v, views) {
		all &= strcmp(gw_json_str(v, "state"), state) == 0;
		k++;
	}
	cJSON_Delete(doc);
	return all && k == n;
}

/*
 * A target whose model's name is 1,500 bytes long (its keys in the hub's
 * store past a kilobyte): three workers; the primary fails for 1.5 s, the
 * breaker opens in every worker, and once the primary is well again it
 * closes again in every worker (the probe lock is had and given back)
 * and the primary answers — not left open for good.
 */
Test(gateway_workers, a_long_model_name_opens_and_closes_again, .timeout = 60)
{
	static char model[1501];
	static char tmpl[4096];
	struct gw_opts o = { .log_level = "info" };
	double end;
	int i;

	memset(model, 'm', sizeof(model) - 1);
	start_mock(5);
	snprintf(tmpl, sizeof(tmpl),
		 "{'workers':3,'request_deadline_ms':5000,'providers':{" PROVIDERS "},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'%s'},"
		 "{'provider':'secondary','model':'mock-small'}],'max_attempts':2}},"
		 "'breaker':{'consecutive_failures':3,'failure_ratio':0,'cooldown_ms':300,"
		 "'cooldown_multiplier':1,'cooldown_jitter':0,'half_open_probes':1}}", model);
	gw_start_template(&gw, tmpl, &mock, &o);
	primary_fails(1.5);
	for (i = 0; i < 60 && !all_workers("primary", model, "open", 3); i++)
		send_ok(1, "during the 503s");
	cr_assert(all_workers("primary", model, "open", 3), "the breaker did not open in every "
		  "worker in %d requests", i);
	for (end = now_ms() + 15000; !all_workers("primary", model, "closed", 3); pause_ms(20)) {
		cr_assert_lt(now_ms(), end, "the breaker did not close again in every worker");
		send_ok(1, "after the 503s");
	}
	for (i = 0; i < 6; i++) {
		struct http_result r;

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 5000, &r), 0);
		gw_expect_answer(&r, "after the close", "primary", 1);
		http_result_free(&r);
	}
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0);
}

/* Reads what fd (non-blocking) holds onto in (cap bytes) and sets bit T of *types for each whole frame of type T. */
static void read_frames(int fd, unsigned char *in, size_t cap, size_t *used, unsigned *types)
{
	ssize_t n;

	while (*used < cap && (n = read(fd, in + *used, cap - *used)) > 0)
		*used += (size_t)n;
	while (*used >= 5) {
		size_t len = (size_t)in[0] << 24 | (size_t)in[1] << 16 | (size_t)in[2] << 8 | in[3];

		if (*used < 4 + len)
			break;
		*types |= 1u << (in[4] & 31);
		memmove(in, in + 4 + len, *used - 4 - len);
		*used -= 4 + len;
	}
}

/*
 * A worker whose supervisor reads its frames but never answers (the test
 * is its supervisor here): its reads of the shared store are given up
 * after a second and taken as nothing stored, and a /metrics — which it
 * gathers through the hub — is answered with its own figures after two
 * seconds, not left waiting for good. Its hub's socket closed, it drains
 * and exits 0.
 */
Test(gateway_workers, a_worker_does_not_wait_for_good_on_a_silent_hub, .timeout = 30)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t slen = sizeof(sin);
	static unsigned char in[1 << 16];
	size_t used = 0;
	unsigned types = 0;
	char cfg[128];
	char errp[256];
	char prog[256];
	char url[96];
	char err[16384];
	struct http_result r;
	struct http_opts ho = { .method = "GET", .timeout_ms = 5000 };
	int sv[2];
	int lfd;
	int cfd;
	int status;
	double t0;
	double end;
	pid_t pid;

	cr_assert_eq(tmpdir_make(cdir, sizeof(cdir), "wksilent"), 0);
	cr_assert_not_null(write_file(cdir, "gw.json", BASE ",\"workers\":2}", cfg, sizeof(cfg)));
	snprintf(errp, sizeof(errp), "%s/stderr.log", cdir);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(lfd >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(lfd, 16), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sin, &slen), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cfd = open(cfg, O_RDONLY | O_CLOEXEC);
	cr_assert(cfd >= 0);
	bin_path("gateway", prog, sizeof(prog));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* Above 5 first, so that no dup2 below overwrites another. */
		int l = fcntl(lfd, F_DUPFD, 10);
		int h = fcntl(sv[1], F_DUPFD, 10);
		int c = fcntl(cfd, F_DUPFD, 10);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (l < 0 || h < 0 || c < 0 || e < 0 || dup2(l, 3) < 0 || dup2(h, 4) < 0 ||
		    dup2(c, 5) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execl(prog, "gateway", "--config", cfg, "--worker", "1", "--log-level", "info",
		      (char *)NULL);
		_exit(127);
	}
	close(lfd);
	close(sv[1]);
	close(cfd);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	/* It says it serves, and reads every target's stored state (one get each). */
	for (end = now_ms() + 10000; !(types & (1u << 1) && types & (1u << 3)); pause_ms(5)) {
		read_frames(sv[0], in, sizeof(in), &used, &types);
		cr_assert_lt(now_ms(), end, "no ready and get frames (types seen %#x)", types);
	}
	for (end = now_ms() + 5000;; pause_ms(10)) {
		read_frames(sv[0], in, sizeof(in), &used, &types);
		if (strstr(slurp_text(errp, err, sizeof(err)), "the hub did not answer a read of the "
			   "store within 1000 ms: taken as nothing stored"))
			break;
		cr_assert_lt(now_ms(), end, "the store's reads still wait:\n%s", err);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ntohs(sin.sin_port));
	t0 = now_ms();
	cr_assert_eq(http_do(url, &ho, &r), 0);
	cr_assert_eq(r.status, 200, "/metrics: %ld (%s)", r.status, r.errbuf);
	cr_assert(now_ms() - t0 >= 1900 && now_ms() - t0 < 4000, "/metrics took %.0f ms (2 s)",
		  now_ms() - t0);
	cr_assert_not_null(strstr(r.body ? r.body : "", "faultline_requests_total"), "%s", r.body);
	http_result_free(&r);
	read_frames(sv[0], in, sizeof(in), &used, &types);
	cr_assert(types & (1u << 7), "no gather frame (types seen %#x)", types);
	close(sv[0]);
	for (end = now_ms() + 10000; waitpid(pid, &status, WNOHANG) == 0; pause_ms(10)) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			cr_assert_fail("the worker did not exit once its hub closed");
		}
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x:\n%s", status,
		  slurp_text(errp, err, sizeof(err)));
}

/*
 * Two workers answer 20 requests; /metrics says so; one worker is killed
 * and started again: /metrics still counts the 20 — the dead worker's
 * counts as of the last /metrics are kept by the supervisor and added,
 * so a counter never falls (Prometheus would read a fall as a reset) —
 * and its share stays under its number; gauges are the live workers'.
 */
Test(gateway_workers, counters_do_not_fall_when_a_worker_is_started_again, .timeout = 60)
{
	char workers[8][32];
	char names[8][32];
	double before[8];
	double after[8];
	const char *text;
	pid_t pids[4];
	double end;
	size_t n;
	size_t i;
	int k;

	start_mock(5);
	start_workers(2, PROVIDERS);
	send_ok(20, "before the kill");
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 20);
	n = gw_metric_series(text, "faultline_worker_requests_total", "", "worker", names, before, 8);
	cr_assert_eq(n, 2, "%s", text);
	cr_assert(before[0] > 0 && before[1] > 0, "a worker had none of the 20: %g, %g", before[0],
		  before[1]);
	cr_assert_eq(worker_pids(&gw, pids, 4), 2);
	cr_assert_eq(kill(pids[0], SIGKILL), 0);
	for (end = now_ms() + 10000;; pause_ms(20)) {
		struct http_result r;
		double up;

		cr_assert_eq(gw_get(&gw, "/metrics", &r), 0);
		up = gw_metric_sum(r.body ? r.body : "", "faultline_worker_up", "", NULL);
		cr_assert_eq(gw_metric(r.body ? r.body : "", "faultline_requests_total",
				       "alias=chat,status=200"), 20, "while a worker is down:\n%s",
			     r.body ? r.body : "");
		http_result_free(&r);
		if (up == 2)
			break;
		cr_assert_lt(now_ms(), end, "the killed worker did not serve again");
	}
	for (k = 0; k < 4; k++) {
		text = gw_metrics_held(&gw, &held);
		cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 20,
			     "ask %d after the restart:\n%s", k, text);
		cr_assert_eq(gw_metric(text, "faultline_upstream_latency_seconds_count",
				       "provider=primary"), 20, "%s", text);
		cr_assert_eq(gw_metric(text, "faultline_requests_in_flight", ""), 0);
		n = gw_metric_series(text, "faultline_worker_requests_total", "", "worker", workers,
				     after, 8);
		cr_assert_eq(n, 2, "one line per worker:\n%s", text);
		for (i = 0; i < n; i++) {
			size_t j = strcmp(workers[i], names[0]) == 0 ? 0 : 1;

			cr_assert_str_eq(workers[i], names[j]);
			cr_assert_eq(after[i], before[j], "worker %s: %g, was %g", workers[i],
				     after[i], before[j]);
		}
	}
	send_ok(4, "after the restart");
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 24, "%s",
		     text);
}

/*
 * Three workers answer 30 requests between them; /metrics, asked 6
 * times (on new connections: different workers answer), always totals
 * the 30 — answers, attempts, the latency histogram — with each worker's
 * share; /admin/breakers totals them too.
 */
Test(gateway_workers, metrics_total_the_requests_sent, .timeout = 60)
{
	const char *text;
	const cJSON *br;
	char workers[8][32];
	double shares[8];
	size_t n;
	int k;

	start_mock(5);
	start_workers(3, PROVIDERS);
	send_ok(30, "the requests counted");
	for (k = 0; k < 6; k++) {
		text = gw_metrics_held(&gw, &held);
		cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=200"), 30,
			     "ask %d:\n%s", k, text);
		cr_assert_eq(gw_metric(text, "faultline_attempts_total",
				       "provider=primary,outcome=success"), 30);
		cr_assert_eq(gw_metric(text, "faultline_upstream_latency_seconds_count",
				       "provider=primary"), 30);
		cr_assert_eq(gw_metric(text, "faultline_upstream_latency_seconds_bucket",
				       "provider=primary,le=+Inf"), 30);
		cr_assert_eq(gw_metric(text, "faultline_requests_in_flight", ""), 0);
		cr_assert_eq(gw_metric(text, "faultline_workers", ""), 3);
		cr_assert_eq(gw_metric_sum(text, "faultline_worker_up", "", NULL), 3);
		n = gw_metric_series(text, "faultline_worker_requests_total", "", "worker", workers,
				     shares, 8);
		cr_assert_eq(n, 3, "%s", text);
		cr_assert_eq(shares[0] + shares[1] + shares[2], 30);
		cr_assert_eq(gw_metric(text, "faultline_breaker_state",
				       "provider=primary,model=mock-small"), 0);
	}
	br = gw_breaker_must(gw_breakers_held(&gw, &held), "primary", "mock-small");
	cr_assert_eq(gw_json_num(cJSON_GetObjectItemCaseSensitive(br, "totals"), "requests"), 30);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(br, "workers")), 3);
}

/*
 * A provider with a health check every 100 ms and three workers: the
 * checks in mockprov's log are one series (worker 1's), not three — no
 * check id twice — and every worker's /metrics agrees the provider is
 * healthy, while only the checks made are counted.
 */
Test(gateway_workers, health_checks_run_once, .timeout = 60)
{
	const struct csv_table *t;
	const char *text;
	double passes;
	size_t i;
	size_t j;
	size_t checks = 0;

	start_mock(5);
	start_workers(3, "'primary':{'base_url':'@primary@','health_check':{'interval_ms':100}},"
			 "'secondary':{'base_url':'@secondary@'}");
	passes = gw_metric_wait_min(&gw, "faultline_health_checks_total",
				    "provider=primary,result=pass", 10, 5000);
	cr_assert_geq(passes, 10, "the checks did not run: %g passes", passes);
	for (i = 0; i < 4; i++) {
		text = gw_metrics_held(&gw, &held);
		cr_assert_eq(gw_metric(text, "faultline_provider_healthy", "provider=primary"), 1);
	}
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0);
	gw_mock_settle(&mock, (const char *const[]){ "primary", NULL });
	t = gw_mock_rows(&held, &mock, "primary");
	for (i = 1; i < t->nrows; i++) {
		const char *id = csv_get(t, i, "request_id");

		if (strncmp(id, "health-check-", 13))
			continue;
		checks++;
		for (j = i + 1; j < t->nrows; j++)
			cr_assert_str_neq(id, csv_get(t, j, "request_id"),
					  "check %s was made twice: more than one worker checks", id);
	}
	cr_assert_geq(checks, 10);
}

/*
 * The retry budget is the gateway's, not each worker's: a bucket of 6
 * tokens (no refill, no deposits) and 20 requests, one after another on
 * new connections, each failing once on the primary (503) and allowed one
 * same-target retry: the two workers together retry 6 times — 8 at most,
 * the others' use reaching a worker within 50 ms —, not 12 as two buckets
 * of their own would; the rest are counted as exhausted.
 */
Test(gateway_workers, the_retry_budget_is_the_gateways, .timeout = 60)
{
	char tmpl[2048];
	struct gw_opts o = { .log_level = "info" };
	const char *text;
	double attempts;
	double exhausted;
	double retries;
	int i;

	start_mock(5);
	snprintf(tmpl, sizeof(tmpl),
		 "{'workers':2,'request_deadline_ms':5000,'providers':{" PROVIDERS "},"
		 "'models':{'chat':{" CHAIN ",'max_attempts':3}},"
		 "'retry':{'max_retries':1,'base_ms':100,'cap_ms':100,'min_attempt_ms':1},"
		 "'budget':{'ratio':0,'min_per_second':0,'burst':6},"
		 "'breaker':{'enabled':false}}");
	gw_start_template(&gw, tmpl, &mock, &o);
	primary_fails(60);
	for (i = 0; i < 20; i++) {
		struct http_result r;

		char prov[32];

		cr_assert_eq(gw_chat(&gw, "chat", NULL, 5000, &r), 0);
		cr_assert_eq(r.status, 200, "request %d: %ld", i, r.status);
		cr_assert_str_eq(gw_header_str(&r, "x-faultline-provider", prov, sizeof(prov)),
				 "secondary");
		http_result_free(&r);
	}
	text = gw_metrics_held(&gw, &held);
	attempts = gw_metric_sum(text, "faultline_attempts_total", "provider=primary", NULL);
	exhausted = gw_metric(text, "faultline_budget_exhausted_total", "alias=chat,kind=retry");
	retries = attempts - 20;
	cr_assert(retries >= 6 && retries <= 8, "%g retries on the primary; the gateway's budget "
		  "holds 6 (each worker's own would be 12)\n%s", retries, text);
	cr_assert_eq(exhausted, 20 - retries, "%g retries not made for want of a token", exhausted);
}

/*
 * Two workers with shared_state redis: they share their breakers through
 * Redis as replicas do, each a replica of its own (REPLICA.wK): an open
 * by one reaches the other by pubsub, and Redis holds it under the
 * target's key; /metrics still answers for both.
 */
Test(gateway_workers, with_redis_the_workers_share_through_it, .timeout = 60)
{
	char tmpl[2048];
	char reply[1024];
	const char *get[] = { "GET", "wk:breaker:primary/mock-small" };
	struct gw_opts o = { .log_level = "info", .args = (const char *const[]){ "--replica", "r1",
										  NULL } };
	const cJSON *local;
	const cJSON *remote;
	const char *text;
	double end;
	int i;

	cr_assert(redis_available(), "redis-server is not installed (scripts/deps.sh installs it)");
	cr_assert_eq(redis_start(&redis, 0, NULL), 0, "redis-server did not start");
	start_mock(20);
	snprintf(tmpl, sizeof(tmpl),
		 "{'workers':2,'request_deadline_ms':5000,'providers':{" PROVIDERS "},"
		 "'models':{'chat':{" CHAIN ",'max_attempts':2}},"
		 "'breaker':{'consecutive_failures':3,'failure_ratio':0,'cooldown_ms':5000,"
		 "'cooldown_multiplier':1,'cooldown_jitter':0,'half_open_probes':1},"
		 "'shared_state':{'backend':'redis','url':'redis://127.0.0.1:%d/0',"
		 "'key_prefix':'wk:','timeout_ms':200,'reconnect_ms':20,'reconnect_max_ms':200}}",
		 redis.port);
	gw_start_template(&gw, tmpl, &mock, &o);
	/* Both workers' links up (the lowest of the two is 1). */
	for (end = now_ms() + 5000;; pause_ms(20)) {
		struct http_result r;
		double up;

		cr_assert_eq(gw_get(&gw, "/metrics", &r), 0);
		up = gw_metric(r.body ? r.body : "", "faultline_shared_state_up", "");
		http_result_free(&r);
		if (up == 1)
			break;
		cr_assert_lt(now_ms(), end, "the workers' links to Redis did not come up");
	}
	primary_fails(60);
	for (i = 0; i < 40 && count_events("open", "local") == 0; i++)
		send_ok(1, "during the 503s");
	cr_assert_eq(count_events("open", "local"), 1);
	local = cJSON_GetArrayItem(gw_held_doc(&held, events_to("open", "local")), 0);
	remote = cJSON_GetArrayItem(await_events("open", "remote", 1, 1000), 0);
	cr_assert_not_null(remote, "the other worker did not follow the open");
	cr_assert_str_eq(gw_json_str(remote, "via"), "pubsub");
	cr_assert_str_eq(gw_json_str(remote, "peer"), gw_json_str(local, "replica"));
	cr_assert(strncmp(gw_json_str(local, "replica"), "r1.w", 4) == 0, "%s",
		  gw_json_str(local, "replica"));
	cr_assert_eq(redis_cmd(&redis, reply, sizeof(reply), 2, get), 0);
	cr_assert_not_null(strstr(reply, "\"to\":\"open\""), "Redis holds %s", reply);
	send_ok(4, "after the open");
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric_sum(text, "faultline_worker_up", "", NULL), 2, "%s", text);
	cr_assert_eq(gw_metric(text, "faultline_shared_applied_total", ""), 1, "%s", text);
}

/* Writes the text to a FIFO once a reader opens it, then closes it: a file that reads once. */
struct fifo_writer {
	pthread_t thread;
	char path[256];
	const char *text;
	int written;
};

static void *write_fifo(void *arg)
{
	struct fifo_writer *f = arg;
	int fd = open(f->path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	f->written = (int)write(fd, f->text, strlen(f->text));
	close(fd);
	return NULL;
}

/*
 * The config file is read once — checked, then the same bytes handed to
 * the workers — not read again for them: a config that can be read only
 * once (a FIFO) starts a workers gateway that answers.
 */
Test(gateway_workers, the_config_file_is_read_once, .timeout = 60)
{
	static char tmpl[2048];
	static char cfg[4096];
	static struct fifo_writer fw;
	struct gw_opts o = { .log_level = "info" };

	start_mock(5);
	snprintf(tmpl, sizeof(tmpl),
		 "{'workers':2,'request_deadline_ms':5000,'providers':{" PROVIDERS "},"
		 "'models':{'chat':{" CHAIN ",'max_attempts':2}}}");
	cr_assert_not_null(gw_template(cfg, sizeof(cfg), tmpl, &mock));
	cr_assert_eq(tmpdir_make(cdir, sizeof(cdir), "wkfifo"), 0);
	snprintf(fw.path, sizeof(fw.path), "%s/gateway.json", cdir);
	cr_assert_eq(mkfifo(fw.path, 0600), 0);
	fw.text = cfg;
	cr_assert_eq(pthread_create(&fw.thread, NULL, write_fifo, &fw), 0);
	o.args = (const char *const[]){ "--config", fw.path, NULL };
	gw_start_template(&gw, "{}", &mock, &o);
	pthread_join(fw.thread, NULL);
	cr_assert_eq(fw.written, (int)strlen(cfg));
	send_ok(8, "a gateway whose config was a FIFO");
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0);
}

Test(gateway_workers, bad_workers_and_a_replica_name_too_long_exit_2, .timeout = 30)
{
	char path[256];
	char err[4096];
	const char *cfg = BASE "}";
	const char *with = BASE ",\"workers\":65}";
	char want[512];
	int rc;

	rc = gw_run(cfg, (const char *const[]){ "--workers", "0", NULL }, NULL, path,
		    sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 2, "--workers 0: %d\n%s", rc, err);
	cr_assert_not_null(strstr(err, "--workers: expected a whole number from 1 to 64"), "%s",
			   err);
	rc = gw_run(with, NULL, NULL, path, sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 2, "workers 65: %d\n%s", rc, err);
	snprintf(want, sizeof(want), "gateway: %s: workers: expected a whole number from 1 to 64, "
		 "got 65\n", path);
	cr_assert_str_eq(err, want);
	rc = gw_run(cfg, (const char *const[]){ "--workers", "12", "--replica",
					       "a-name-of-sixty-one-bytes-that-fits-63-alone-"
					       "but-not-with-w12", NULL },
		    NULL, path, sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 2, "a long replica name: %d\n%s", rc, err);
	cr_assert_not_null(strstr(err, "too long for 12 workers"), "%s", err);
}

/*
 * A second workers gateway on a port a workers gateway serves is refused
 * as a second single gateway is — exit 1, "address already in use",
 * naming the address — rather than sharing the port (its sockets'
 * SO_REUSEPORT would let it) and taking part of the traffic; the first
 * serves on, every request.
 */
Test(gateway_workers, a_second_gateway_on_the_port_exits_1, .timeout = 60)
{
	char path[256];
	char err[8192];
	char want[128];
	int rc;

	start_mock(5);
	start_workers(2, PROVIDERS);
	snprintf(want, sizeof(want), "gateway: cannot listen on %s: address already in use",
		 gw.addr);
	rc = gw_run(BASE "}", (const char *const[]){ "--listen", gw.addr, "--workers", "2", NULL },
		    NULL, path, sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 1, "a second workers gateway on %s: exit %d\n%s", gw.addr, rc, err);
	cr_assert_not_null(strstr(err, want), "%s", err);
	cr_assert_null(strstr(err, "serving"), "it served:\n%s", err);
	rc = gw_run(BASE "}", (const char *const[]){ "--listen", gw.addr, NULL }, NULL, path,
		    sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 1, "a single gateway on %s: exit %d\n%s", gw.addr, rc, err);
	cr_assert_not_null(strstr(err, want), "%s", err);
	send_ok(16, "the first gateway, after");
	cr_assert_eq(gw_stop(&gw, SIGTERM, 10000), 0);
}

/*
 * --check-config checks what a start checks: a replica name too long for
 * the workers (NAME.wK past 63 bytes) exits 2 with the start's message,
 * from the config file's keys as from the flags; without workers it is ok.
 */
Test(gateway_workers, check_config_rejects_a_replica_name_too_long_for_the_workers,
     .timeout = 30)
{
	static const char long_name[] = "a-name-of-sixty-one-bytes-that-fits-63-alone-but-not-with-w12";
	char cfg[1024];
	char path[256];
	char plain[256];
	char err[4096];
	char want[512];
	int rc;

	cr_assert_eq(tmpdir_make(cdir, sizeof(cdir), "wkcheck"), 0);
	snprintf(cfg, sizeof(cfg), BASE ",\"workers\":12,\"shared_state\":{\"replica\":\"%s\"}}",
		 long_name);
	cr_assert_not_null(write_file(cdir, "long.json", cfg, path, sizeof(path)));
	cr_assert_not_null(write_file(cdir, "plain.json", BASE "}", plain, sizeof(plain)));
	rc = run_program((const char *const[]){ "gateway", "--check-config", path, NULL }, err,
			 sizeof(err), 10);
	cr_assert_eq(rc, 2, "--check-config with the name in the file: %d\n%s", rc, err);
	snprintf(want, sizeof(want), "gateway: %s: shared_state.replica (or --replica) \"%s\" is "
		 "too long for 12 workers", path, long_name);
	cr_assert_not_null(strstr(err, want), "%s", err);
	rc = run_program((const char *const[]){ "gateway", "--check-config", path, "--workers", "1",
						NULL }, err, sizeof(err), 10);
	cr_assert_eq(rc, 0, "--workers 1 (no workers' names): %d\n%s", rc, err);
	rc = run_program((const char *const[]){ "gateway", "--check-config", plain, "--workers",
						"12", "--replica", long_name, NULL },
			 err, sizeof(err), 10);
	cr_assert_eq(rc, 2, "--check-config with --workers and --replica: %d\n%s", rc, err);
	cr_assert_not_null(strstr(err, "too long for 12 workers"), "%s", err);
}

/*
 * A worker that cannot start (its events file cannot be opened) stops
 * the gateway at once: the supervisor stops the others and exits 1, with
 * the worker's reason and its own on stderr.
 */
Test(gateway_workers, a_worker_that_cannot_start_stops_the_gateway, .timeout = 30)
{
	char path[256];
	char err[8192];
	int rc;

	rc = gw_run(BASE "}", (const char *const[]){ "--workers", "2", "--events",
						  "/nonexistent-dir/events.jsonl", NULL },
		    NULL, path, sizeof(path), err, sizeof(err), 10000);
	cr_assert_eq(rc, 1, "exit %d\n%s", rc, err);
	cr_assert_not_null(strstr(err, "--events: cannot open /nonexistent-dir/events.jsonl"),
			   "%s", err);
	cr_assert_not_null(strstr(err, "before every worker was ready: stopping"), "%s", err);
}
