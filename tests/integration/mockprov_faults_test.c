/*
 * mockprov's faults as a client sees them: every kind of the DESIGN.md
 * table from a real libcurl client on loopback, the window edges against
 * the shared t0, the overlap rule, seeded probabilities, the admin API and
 * SIGTERM — and the row each request leaves in mock-NAME.csv.
 *
 * Faults meant to hold for the whole test use the window -1000 s .. 1000 s
 * around t0; tests that measure an edge pass t0 = now and compute the
 * schedule on the same Unix clock.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "common/opt.h"

#define ALWAYS "\"from_s\":-1000,\"to_s\":1000"

/* ---- helpers ---- */

/* Unix epoch ms with sub-millisecond precision (unix_ms() is whole ms). */
static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits until period_ms have passed since start (a Unix ms time): paces probes. */
static void pace(double start, double period_ms)
{
	double left = period_ms - (unix_now() - start);

	if (left > 0)
		usleep((useconds_t)(left * 1000));
}

/* A provider object: name, timing keys (a JSON fragment) and faults. */
static void provider_json(char *out, size_t len, const char *name, const char *timing,
			  const char *faults)
{
	snprintf(out, len,
		 "{\"name\":\"%s\",\"listen\":\"127.0.0.1:0\",\"model\":\"mock-small\",%s,"
		 "\"faults\":[%s]}", name, timing, faults);
}

/* A config of one provider "p". Returns out. */
static const char *config1(char *out, size_t len, const char *timing, const char *faults)
{
	snprintf(out, len,
		 "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\","
		 "\"model\":\"mock-small\",%s,\"faults\":[%s]}]}", timing, faults);
	return out;
}

/* A config of several providers, given as provider objects. Returns out. */
static const char *config_n(char *out, size_t len, const char *const *providers, size_t n)
{
	size_t used = (size_t)snprintf(out, len, "{\"providers\":[");
	size_t i;

	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? "," : "",
					 providers[i]);
	if (used < len)
		snprintf(out + used, len - used, "]}");
	return out;
}

/*
 * The mockprovs this test started. A failed assertion ends a test before
 * its mock_cleanup; the suite's teardown then stops and removes them.
 */
static struct {
	pid_t pid;
	char dir[256];
} started[8];
static size_t nstarted;

static void start(struct mock_proc *m, const char *config, int64_t t0)
{
	int rc = mock_start(m, config, t0);

	if (nstarted < sizeof(started) / sizeof(started[0])) {
		started[nstarted].pid = m->pid;
		snprintf(started[nstarted].dir, sizeof(started[nstarted].dir), "%s", m->dir);
		nstarted++;
	}
	cr_assert_eq(rc, 0, "mockprov did not start on %s", config);
}

/* Removes a harness temp dir (flat: config, stderr, logs). */
static void remove_dir(const char *dir)
{
	char path[600];
	struct dirent *e;
	DIR *d;

	if (strncmp(dir, "/tmp/faultline-test-", 20) != 0)
		return;
	d = opendir(dir);
	if (!d)
		return;
	for (e = readdir(d); e; e = readdir(d)) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Suite teardown: kills a mockprov still running (our child, not yet
 * reaped, so its pid cannot have been reused) and removes its dir.
 */
static void reap_leftovers(void)
{
	size_t i;
	int st;

	for (i = 0; i < nstarted; i++) {
		pid_t pid = started[i].pid;

		if (pid > 0 && waitpid(pid, &st, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		remove_dir(started[i].dir);
	}
	nstarted = 0;
}

TestSuite(mockprov_faults, .fini = reap_leftovers);

/*
 * One chat completion to provider prov, with x-request-id rid (if not
 * NULL). No assertions: also used from a second thread. Returns http_do's.
 */
static int chat_try(const struct mock_proc *m, const char *prov, bool stream,
		    const char *rid, double timeout_ms, struct http_result *r)
{
	char url[128];
	char body[256];
	char hdr[160];
	const char *hdrs[] = { hdr, NULL };
	struct http_opts o = {
		.body = chat_body(stream, body, sizeof(body)),
		.timeout_ms = timeout_ms,
		.headers = rid ? hdrs : NULL,
		.fresh_connection = true,
	};

	snprintf(hdr, sizeof(hdr), "x-request-id: %s", rid ? rid : "");
	mock_url(m, prov, "/v1/chat/completions", url, sizeof(url));
	return http_do(url, &o, r);
}

static void chat(const struct mock_proc *m, const char *prov, bool stream, const char *rid,
		 double timeout_ms, struct http_result *r)
{
	cr_assert_eq(chat_try(m, prov, stream, rid, timeout_ms, r), 0, "curl could not start");
}

/* GET a provider's /healthz on a fresh connection. */
static void healthz(const struct mock_proc *m, const char *prov, struct http_result *r)
{
	char url[128];
	struct http_opts o = { .timeout_ms = 1000, .fresh_connection = true };

	mock_url(m, prov, "/healthz", url, sizeof(url));
	cr_assert_eq(http_do(url, &o, r), 0);
}

/* A keep-alive connection held open by libcurl (CONNECT_ONLY), idle. */
struct idle_conn {
	CURL *h;
	curl_socket_t fd;
};

/*
 * Reads from an idle connection until want appears in what came, the
 * server closes it (returns -1) or timeout_ms pass (returns 0). Returns 1
 * when want came.
 */
static int idle_read(struct idle_conn *c, const char *want, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	char got[2048] = "";
	size_t have = 0;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		double left = end - now_ms();
		size_t n = 0;
		CURLcode rc;

		if (want && strstr(got, want))
			return 1;
		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		rc = curl_easy_recv(c->h, got + have, sizeof(got) - 1 - have, &n);
		if (rc == CURLE_AGAIN)
			continue;
		if (rc != CURLE_OK || n == 0)
			return -1;	/* EOF or reset: the server closed it */
		have += n;
		got[have] = '\0';
		if (have + 1 >= sizeof(got))
			have = 0;
	}
}

/* Opens a connection, has one /healthz answered on it, and leaves it idle. */
static void idle_open(struct idle_conn *c, const struct mock_proc *m, const char *prov)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: mock\r\n\r\n";
	char url[128];
	size_t sent = 0;

	c->h = curl_easy_init();
	cr_assert_not_null(c->h);
	curl_easy_setopt(c->h, CURLOPT_URL, mock_url(m, prov, "/healthz", url, sizeof(url)));
	curl_easy_setopt(c->h, CURLOPT_CONNECT_ONLY, 1L);
	cr_assert_eq(curl_easy_perform(c->h), CURLE_OK);
	cr_assert_eq(curl_easy_getinfo(c->h, CURLINFO_ACTIVESOCKET, &c->fd), CURLE_OK);
	cr_assert_eq(curl_easy_send(c->h, req, strlen(req), &sent), CURLE_OK);
	cr_assert_eq(sent, strlen(req));
	cr_assert_eq(idle_read(c, "{\"status\":\"ok\"}", 2000), 1,
		     "no /healthz answer on the keep-alive connection");
}

/* An admin API call: method on path with an optional JSON body. */
static void admin(const struct mock_proc *m, const char *method, const char *path,
		  const char *body, struct http_result *r)
{
	char url[160];
	struct http_opts o = { .method = method, .body = body, .timeout_ms = 2000 };

	cr_assert(m->admin_addr[0], "mockprov printed no admin address");
	snprintf(url, sizeof(url), "http://%s%s", m->admin_addr, path);
	cr_assert_eq(http_do(url, &o, r), 0);
}

/* A header's value as a number, or NAN when it is absent or not a number. */
static double header_num(const struct http_result *r, const char *name)
{
	char v[64];
	char *end;
	double d;

	if (!http_header(r, name, v, sizeof(v)))
		return NAN;
	d = strtod(v, &end);
	return end == v || *end ? NAN : d;
}

/* True when text is an OpenAI error object with a message and a type. */
static bool is_openai_error(const char *text, const char *want_type)
{
	cJSON *root = cJSON_Parse(text);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(err, "type");
	bool ok = cJSON_IsString(msg) && msg->valuestring[0] && cJSON_IsString(type) &&
		  (!want_type || strcmp(type->valuestring, want_type) == 0);

	cJSON_Delete(root);
	return ok;
}

/* What an SSE body held, event by event. */
struct sse_sum {
	size_t events;		/* data: payloads */
	size_t tokens;		/* chunks with delta.content */
	size_t errors;		/* payloads after "event: error" */
	size_t unparsable;	/* payloads that are neither JSON nor [DONE] */
	bool done;		/* a [DONE] payload */
	bool finish;		/* a chunk with a finish_reason */
	bool last_is_error;	/* the last payload is an OpenAI error object */
};

static void sse_summarize(const char *body, struct sse_sum *s)
{
	char **ev;
	size_t n;
	size_t i;

	memset(s, 0, sizeof(*s));
	n = sse_parse(body, &ev, &s->errors);
	s->events = n;
	for (i = 0; i < n; i++) {
		const cJSON *c0;
		const cJSON *delta;
		const cJSON *fin;
		cJSON *j;

		if (strcmp(ev[i], "[DONE]") == 0) {
			s->done = true;
			continue;
		}
		j = cJSON_Parse(ev[i]);
		if (!j) {
			s->unparsable++;
			continue;
		}
		c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
		delta = cJSON_GetObjectItemCaseSensitive(c0, "delta");
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(delta, "content")))
			s->tokens++;
		fin = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
		if (cJSON_IsString(fin))
			s->finish = true;
		cJSON_Delete(j);
	}
	s->last_is_error = n && is_openai_error(ev[n - 1], NULL);
	sse_free(ev, n);
}

/* True when the whole body parses as JSON. */
static bool body_parses(const struct http_result *r)
{
	cJSON *j = cJSON_Parse(r->body);
	bool ok = j != NULL;

	cJSON_Delete(j);
	return ok;
}

/* GET /state, parsed; the caller deletes it. */
static cJSON *get_state(const struct mock_proc *m)
{
	struct http_result r;
	cJSON *root;

	admin(m, NULL, "/state", NULL, &r);
	cr_assert_eq(r.status, 200, "GET /state: %ld %s", r.status, r.body);
	root = cJSON_Parse(r.body);
	http_result_free(&r);
	cr_assert_not_null(root);
	return root;
}

/* Provider prov's object in a /state document, or NULL. */
static const cJSON *state_provider(const cJSON *state, const char *prov)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(state, "providers")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");

		if (cJSON_IsString(name) && strcmp(name->valuestring, prov) == 0)
			return p;
	}
	return NULL;
}

/* A number of provider prov in /state, or NAN. */
static double state_num(const struct mock_proc *m, const char *prov, const char *key)
{
	cJSON *st = get_state(m);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(state_provider(st, prov), key);
	double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;

	cJSON_Delete(st);
	return d;
}

/* Polls /state until prov's key equals want. Returns false on timeout. */
static bool wait_state(const struct mock_proc *m, const char *prov, const char *key,
		       double want, double timeout_ms)
{
	double end = now_ms() + timeout_ms;

	for (;;) {
		if (state_num(m, prov, key) == want)
			return true;
		if (now_ms() > end)
			return false;
		usleep(1000);	/* polling the admin API for the event */
	}
}

/*
 * Waits until every listed provider has logged all its requests (nothing in
 * flight: the server saw each client leave), then stops with SIGTERM.
 */
static void settle_and_stop(struct mock_proc *m, const char *const *provs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cr_assert(wait_state(m, provs[i], "in_flight", 0, 3000),
			  "%s still has requests in flight", provs[i]);
	cr_assert_eq(mock_stop(m, SIGTERM), 0, "mockprov did not exit 0 on SIGTERM");
}

static void settle_and_stop1(struct mock_proc *m)
{
	static const char *const p[] = { "p" };

	settle_and_stop(m, p, 1);
}

/* Reads mock-PROV.csv and checks its header. */
static void read_log(const struct mock_proc *m, const char *prov, struct csv_table *t)
{
	static const char *const cols[] = { "t_ms", "request_id", "streaming", "fault",
					    "status", "ttft_ms", "dur_ms", "tokens_out",
					    "outcome", "kind" };
	size_t j;

	cr_assert_eq(mock_log(m, prov, t), 0, "no mock-%s.csv in %s", prov, m->dir);
	cr_assert_geq(t->nrows, 1);
	cr_assert_eq(t->ncols, 10, "mock-%s.csv has %zu columns", prov, t->ncols);
	for (j = 0; j < 10; j++)
		cr_assert_str_eq(t->rows[0][j], cols[j]);
}

/* The row of request rid (1-based), asserting there is exactly one. */
static size_t log_row(const struct csv_table *t, const char *rid)
{
	size_t found = 0;
	size_t i;

	for (i = 1; i < t->nrows; i++) {
		const char *v = csv_get(t, i, "request_id");

		if (v && strcmp(v, rid) == 0) {
			cr_assert_eq(found, 0, "two log rows for %s", rid);
			found = i;
		}
	}
	cr_assert_neq(found, 0, "no log row for %s", rid);
	return found;
}

static double log_num(const struct csv_table *t, size_t row, const char *col)
{
	const char *v = csv_get(t, row, col);

	cr_assert_not_null(v, "no column %s", col);
	return *v ? strtod(v, NULL) : NAN;
}

/*
 * Asserts the row of rid: its fault column, status, tokens_out (-1: any)
 * and outcome. Returns the row.
 */
static size_t expect_row(const struct csv_table *t, const char *rid, const char *fault,
			 long status, long tokens_out, const char *outcome)
{
	size_t i = log_row(t, rid);

	cr_assert_str_eq(csv_get(t, i, "fault"), fault, "%s: fault", rid);
	cr_assert_eq((long)log_num(t, i, "status"), status, "%s: status %s", rid,
		     csv_get(t, i, "status"));
	if (tokens_out >= 0)
		cr_assert_eq((long)log_num(t, i, "tokens_out"), tokens_out,
			     "%s: tokens_out %s", rid, csv_get(t, i, "tokens_out"));
	cr_assert_str_eq(csv_get(t, i, "outcome"), outcome, "%s: outcome", rid);
	return i;
}

/* ---- down, and the window edges ---- */

/*
 * `down` (two overlapping windows, one outage from 300 to 800 ms): an idle
 * keep-alive connection and a stream in flight when the window opens are
 * closed, new connections are refused during it, and accepted after it.
 */
Test(mockprov_faults, down_refuses_then_accepts, .timeout = 15)
{
	int64_t t0 = unix_ms();
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	struct idle_conn idle;
	char cfg[1024];
	double t;
	int refused = 0;

	start(&m, config1(cfg, sizeof(cfg),
			  "\"ttft_ms\":10,\"token_ms\":50,\"output_tokens\":16",
			  "{\"kind\":\"down\",\"from_s\":0.3,\"to_s\":0.55},"
			  "{\"kind\":\"down\",\"from_s\":0.5,\"to_s\":0.8}"), t0);
	cr_assert_lt(unix_now() - (double)t0, 250, "mockprov took too long to start");
	idle_open(&idle, &m, "p");

	/* 16 tokens take 760 ms: the window opens at 300 ms, mid-stream. */
	chat(&m, "p", true, "cut", 3000, &r);
	t = unix_now() - (double)t0;	/* the cut came at or before this */
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.code, CURLE_PARTIAL_FILE, "stream cut by down: curl %d %s",
		     r.code, r.errbuf);
	sse_summarize(r.body, &s);
	cr_assert(s.tokens >= 1 && s.tokens < 16, "%zu tokens", s.tokens);
	cr_assert(!s.done);
	cr_assert(t >= 300 && t < 800, "the stream ended at t0+%.1f ms", t);
	http_result_free(&r);
	/* The idle keep-alive connection was closed too. */
	cr_assert_eq(idle_read(&idle, NULL, 200), -1, "a keep-alive connection survived down");
	curl_easy_cleanup(idle.h);

	/* Every connection until t0+800 ms is refused. */
	for (;;) {
		double s0 = unix_now();

		t = s0 - (double)t0;
		cr_assert_lt(t, 2000, "still refused at t0+%.1f ms", t);
		healthz(&m, "p", &r);
		if (r.code == CURLE_OK) {
			t = unix_now() - (double)t0;	/* accepted at or before this */
			break;
		}
		cr_assert_eq(r.code, CURLE_COULDNT_CONNECT, "t0+%.1f: curl %d %s", t, r.code,
			     r.errbuf);
		cr_assert_eq(r.os_errno, ECONNREFUSED, "t0+%.1f: errno %ld", t, r.os_errno);
		cr_assert_eq(r.status, 0);
		refused++;
		http_result_free(&r);
		/* A chat completion is refused the same way. */
		if (refused == 1) {
			chat(&m, "p", false, "refused", 1000, &r);
			cr_assert_eq(r.code, CURLE_COULDNT_CONNECT, "curl %d %s", r.code, r.errbuf);
			cr_assert_eq(r.os_errno, ECONNREFUSED);
			http_result_free(&r);
		}
		pace(s0, 2);
	}
	cr_assert_eq(r.status, 200);
	cr_assert_geq(t, 800, "accepted again at t0+%.3f ms", t);
	cr_assert_gt(refused, 10);
	http_result_free(&r);

	chat(&m, "p", false, "after", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(body_parses(&r));
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	/* Refused connections leave no row. */
	cr_assert_eq(log.nrows, 3, "%zu rows", log.nrows - 1);
	expect_row(&log, "cut", "down", 200, -1, "faulted");
	cr_assert(log_num(&log, log_row(&log, "cut"), "tokens_out") >= 1);
	expect_row(&log, "after", "", 200, 16, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * Window edges. mockprov applies a `down` edge from a timer, and a loaded
 * machine can hold any process off the CPU for tens of ms, so an attempt
 * whose edges miss ±20 ms is retried on a fresh mockprov (up to
 * EDGE_ATTEMPTS); what every attempt must get right holds in each.
 */
#define EDGE_ATTEMPTS 3

struct edges {
	double first_fault;	/* start of the first faulted probe, ms after t0 */
	double first_ok;	/* start of the first good probe after it */
};

static bool edges_within(const struct edges *e, double from, double to, double tol)
{
	return fabs(e->first_fault - from) <= tol && fabs(e->first_ok - to) <= tol;
}

/*
 * One attempt for `down` [300, 800) ms: probes /healthz on fresh
 * connections every ~1 ms until it is accepted again.
 */
static void down_edges_attempt(struct edges *e)
{
	int64_t t0 = unix_ms();
	struct mock_proc m;
	struct http_result r;
	char cfg[1024];
	bool refused_seen = false;

	e->first_fault = NAN;
	e->first_ok = NAN;
	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0",
			  "{\"kind\":\"down\",\"from_s\":0.3,\"to_s\":0.8}"), t0);
	if (unix_now() - (double)t0 >= 250)
		goto out;	/* started too late to see the first edge: a missed attempt */
	for (;;) {
		double s0 = unix_now();
		double t = s0 - (double)t0;
		double end;
		bool up;

		cr_assert_lt(t, 5000, "no edges seen by t0+%.1f ms", t);
		healthz(&m, "p", &r);
		end = unix_now() - (double)t0;
		up = r.code == CURLE_OK && r.status == 200;
		/*
		 * Refused; or, in the moment the edge timer takes to fire,
		 * accepted by the listener about to close and then closed
		 * unanswered (a FIN, or an RST when the request was unread).
		 */
		if (!up && !(r.code == CURLE_COULDNT_CONNECT && r.os_errno == ECONNREFUSED))
			cr_assert((r.code == CURLE_GOT_NOTHING ||
				   (r.code == CURLE_RECV_ERROR && r.os_errno == ECONNRESET)) &&
				  !refused_seen,
				  "t0+%.1f: curl %d errno %ld %s", t, r.code, r.os_errno, r.errbuf);
		if (r.code == CURLE_COULDNT_CONNECT)
			refused_seen = true;
		http_result_free(&r);
		/* Never early: a probe that saw the fault ended after its start. */
		if (!up)
			cr_assert_geq(end, 300, "down at t0+%.3f ms", end);
		if (!up && isnan(e->first_fault))
			e->first_fault = t;
		if (up && !isnan(e->first_fault)) {
			cr_assert_geq(end, 800, "up again at t0+%.3f ms", end);
			e->first_ok = t;
			break;
		}
		pace(s0, 1);
	}
out:
	cr_assert_eq(mock_stop(&m, SIGTERM), 0);
	mock_cleanup(&m);
}

/*
 * The `down` window [t0+300, t0+800) ms: the first refused connection and
 * the first accepted again are within 20 ms of the schedule.
 */
Test(mockprov_faults, down_edges_within_20ms, .timeout = 25)
{
	struct edges e[EDGE_ATTEMPTS];
	int i;

	for (i = 0; i < EDGE_ATTEMPTS; i++) {
		down_edges_attempt(&e[i]);
		if (edges_within(&e[i], 300, 800, 20))
			return;
	}
	cr_assert_fail("down edges (scheduled 300, 800 ms): %.1f, %.1f; %.1f, %.1f; %.1f, %.1f",
		       e[0].first_fault, e[0].first_ok, e[1].first_fault, e[1].first_ok,
		       e[2].first_fault, e[2].first_ok);
}

/*
 * A down window that ends 4 s after the last thing the mock did: an idle
 * loop sleeps until its edge timer, and Linux ends such a sleep up to
 * 0.5% late in a niced process (0.1% otherwise) — 20 ms here — unless
 * the loop wakes every so often (common/waketick). The mock runs at nice
 * 1 (the 0.5% slack, nearly the CPU share of nice 0); a connection is
 * tried every ~0.3 ms around the edge: none may be refused 12 ms or more
 * after it, and none accepted before it. (A prober the machine holds back
 * tries fewer times; it cannot see a refusal that did not happen.)
 */
Test(mockprov_faults, a_long_down_window_ends_on_time, .timeout = 20)
{
	const int64_t t0 = unix_ms();
	const struct mock_opts o = { .t0 = t0, .nice = 1 };
	struct mock_proc m;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char cfg[1024];
	const char *addr;
	double last_refused = -1;
	double first_ok = -1;
	double t;

	config1(cfg, sizeof(cfg), "\"ttft_ms\":0",
		"{\"kind\":\"down\",\"from_s\":0,\"to_s\":4}");
	cr_assert_eq(mock_start_opts(&m, cfg, &o), 0);
	addr = mock_addr(&m, "p");
	cr_assert_not_null(addr);
	sa.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	while ((t = unix_now() - (double)t0) < 3990)
		usleep(t < 3900 ? 50 * 1000 : 500);
	while (first_ok < 0 && (t = unix_now() - (double)t0) < 4500) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		int e = errno;

		close(fd);
		if (rc == 0)
			first_ok = t;
		else if (e == ECONNREFUSED)
			last_refused = t;
		else
			cr_assert_fail("connect at t0+%.3f ms: %s", t, strerror(e));
		usleep(300);
	}
	cr_assert_geq(first_ok, 4000, "accepted at t0+%.3f ms, in the window", first_ok);
	cr_assert_lt(last_refused, 4012, "refused at t0+%.3f ms: the edge was %.1f ms late",
		     last_refused, last_refused - 4000);
	cr_assert_eq(mock_stop(&m, SIGTERM), 0);
	mock_cleanup(&m);
}

/*
 * One attempt for `status` [300, 600) ms: a chat completion every ~1 ms
 * until one is answered 200 again; then the log must show that exactly the
 * requests that arrived in the window were faulted.
 */
static void status_edges_attempt(struct edges *e)
{
	int64_t t0 = unix_ms();
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	size_t i;

	e->first_fault = NAN;
	e->first_ok = NAN;
	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1",
			  "{\"kind\":\"status\",\"from_s\":0.3,\"to_s\":0.6}"), t0);
	if (unix_now() - (double)t0 >= 250) {
		cr_assert_eq(mock_stop(&m, SIGTERM), 0);
		goto out;	/* started too late to see the first edge: a missed attempt */
	}
	for (;;) {
		double s0 = unix_now();
		double t = s0 - (double)t0;
		double end;

		cr_assert_lt(t, 5000, "no edges seen by t0+%.1f ms", t);
		chat(&m, "p", false, NULL, 3000, &r);
		end = unix_now() - (double)t0;
		cr_assert_eq(r.code, CURLE_OK, "t0+%.1f: %s", t, r.errbuf);
		cr_assert(r.status == 200 || r.status == 503, "t0+%.1f: %ld", t, r.status);
		if (r.status == 503) {
			cr_assert_geq(end, 300, "503 at t0+%.3f ms", end);
			cr_assert_lt(t, 600, "503 at t0+%.3f ms", t);
		}
		if (r.status == 503 && isnan(e->first_fault))
			e->first_fault = t;
		if (r.status == 200 && !isnan(e->first_fault)) {
			cr_assert_geq(end, 600, "200 again at t0+%.3f ms", end);
			e->first_ok = t;
			http_result_free(&r);
			break;
		}
		http_result_free(&r);
		pace(s0, 1);
	}
	settle_and_stop1(&m);

	/*
	 * Exactly the requests that arrived in [300, 600) ms were faulted.
	 * t_ms is rounded to the microsecond: 299.9996 is logged as 300.000,
	 * so a row within 1 µs of an edge may go either way.
	 */
	read_log(&m, "p", &log);
	cr_assert_gt(log.nrows, 20);
	for (i = 1; i < log.nrows; i++) {
		double t = log_num(&log, i, "t_ms");
		bool in = t >= 300 && t < 600;

		if (fabs(t - 300) < 0.001 || fabs(t - 600) < 0.001)
			in = strcmp(csv_get(&log, i, "fault"), "status") == 0;

		cr_assert_str_eq(csv_get(&log, i, "fault"), in ? "status" : "",
				 "row %zu at t_ms %.3f", i, t);
		cr_assert_eq((long)log_num(&log, i, "status"), in ? 503 : 200,
			     "row %zu at t_ms %.3f", i, t);
	}
	csv_free(&log);
out:
	mock_cleanup(&m);
}

/*
 * A request-time fault (`status` in [t0+300, t0+600) ms): the first 503 and
 * the first 200 again are within 20 ms of the schedule.
 */
Test(mockprov_faults, status_edges_within_20ms, .timeout = 25)
{
	struct edges e[EDGE_ATTEMPTS];
	int i;

	for (i = 0; i < EDGE_ATTEMPTS; i++) {
		status_edges_attempt(&e[i]);
		if (edges_within(&e[i], 300, 600, 20))
			return;
	}
	cr_assert_fail("status edges (scheduled 300, 600 ms): %.1f, %.1f; %.1f, %.1f; "
		       "%.1f, %.1f", e[0].first_fault, e[0].first_ok, e[1].first_fault,
		       e[1].first_ok, e[2].first_fault, e[2].first_ok);
}

/* ---- request-time faults ---- */

/* `hang`: no status ever; the client's timeout fires, the row says so. */
Test(mockprov_faults, hang_holds_past_timeout, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	size_t i;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":100,\"token_ms\":0,\"output_tokens\":4",
			  "{\"kind\":\"hang\"," ALWAYS "}"), 0);

	/* Normal latency is 100 ms; the client gives up at 300 (> 2×). */
	chat(&m, "p", false, "hang-json", 300, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 0, "a status arrived: %ld", r.status);
	cr_assert_eq(r.headers[0], '\0', "headers arrived: %s", r.headers);
	cr_assert_eq(r.body_len, 0);
	cr_assert_geq(r.total_ms, 295, "gave up after %.1f ms", r.total_ms);
	http_result_free(&r);

	chat(&m, "p", true, "hang-sse", 300, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.body_len, 0);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	cr_assert_eq(log.nrows, 3);
	i = expect_row(&log, "hang-json", "hang", 0, 0, "faulted");
	cr_assert_geq(log_num(&log, i, "dur_ms"), 200);
	cr_assert(isnan(log_num(&log, i, "ttft_ms")), "ttft_ms %s", csv_get(&log, i, "ttft_ms"));
	cr_assert_str_eq(csv_get(&log, i, "streaming"), "0");
	i = expect_row(&log, "hang-sse", "hang", 0, 0, "faulted");
	cr_assert_geq(log_num(&log, i, "dur_ms"), 200);
	cr_assert_str_eq(csv_get(&log, i, "streaming"), "1");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `status`: an immediate error status, an OpenAI error body, retry-after. */
Test(mockprov_faults, status_answers_error, .timeout = 15)
{
	char p503[512];
	char p500[512];
	const char *provs[] = { p503, p500 };
	static const char *const names[] = { "s503", "s500" };
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[2048];
	char v[64];

	provider_json(p503, sizeof(p503), "s503", "\"ttft_ms\":2000",
		      "{\"kind\":\"status\",\"retry_after_s\":2," ALWAYS "}");
	provider_json(p500, sizeof(p500), "s500", "\"ttft_ms\":2000",
		      "{\"kind\":\"status\",\"status\":500," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), 0);

	chat(&m, "s503", false, "a", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 503);
	cr_assert_lt(r.total_ms, 1000, "not immediate: %.1f ms (ttft is 2000)", r.total_ms);
	cr_assert_str_eq(http_header(&r, "retry-after", v, sizeof(v)), "2");
	cr_assert_str_eq(http_header(&r, "content-type", v, sizeof(v)), "application/json");
	cr_assert(is_openai_error(r.body, "server_error"), "%s", r.body);
	http_result_free(&r);

	/* A stream request gets the same plain JSON error. */
	chat(&m, "s503", true, "b", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 503);
	cr_assert(is_openai_error(r.body, NULL), "%s", r.body);
	http_result_free(&r);

	chat(&m, "s500", false, "c", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 500);
	cr_assert_null(http_header(&r, "retry-after", v, sizeof(v)), "retry-after: %s", v);
	cr_assert(is_openai_error(r.body, NULL), "%s", r.body);
	http_result_free(&r);

	settle_and_stop(&m, names, 2);
	read_log(&m, "s503", &log);
	cr_assert(isnan(log_num(&log, expect_row(&log, "a", "status", 503, 0, "faulted"),
				"ttft_ms")), "a ttft_ms for an error");
	expect_row(&log, "b", "status", 503, 0, "faulted");
	csv_free(&log);
	read_log(&m, "s500", &log);
	expect_row(&log, "c", "status", 500, 0, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `stall`: after_tokens tokens, then silence until the client gives up. */
Test(mockprov_faults, stall_goes_silent, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[1024];
	size_t i;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":20,\"token_ms\":20,\"output_tokens\":16",
			  "{\"kind\":\"stall\",\"after_tokens\":3," ALWAYS "}"), 0);

	chat(&m, "p", true, "sse", 800, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.tokens, 3, "%zu tokens: %s", s.tokens, r.body);
	cr_assert_eq(s.events, 3, "%zu events: %s", s.events, r.body);
	cr_assert(!s.done && !s.finish && s.errors == 0);
	/* Tokens at 20, 40, 60 ms; the 4th was due at 80; then nothing. */
	cr_assert_gt(r.nchunks, 0);
	cr_assert_lt(r.chunk_ms[r.nchunks - 1], 400, "a chunk at %.1f ms",
		     r.chunk_ms[r.nchunks - 1]);
	cr_assert_geq(r.total_ms, 795);
	http_result_free(&r);

	/* A plain answer stalls after the headers and 3 tokens of content. */
	chat(&m, "p", false, "json", 500, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "\"content\":\"Lorem ipsum dolor"), "%s", r.body);
	cr_assert_null(strstr(r.body, "Lorem ipsum dolor sit"), "%s", r.body);
	cr_assert(!body_parses(&r));
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	i = expect_row(&log, "sse", "stall", 200, 3, "faulted");
	cr_assert_geq(log_num(&log, i, "dur_ms"), 700);
	expect_row(&log, "json", "stall", 200, 3, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `truncate`: a clean end after after_tokens tokens, without [DONE]. */
Test(mockprov_faults, truncate_ends_without_done, .timeout = 15)
{
	char p3[512];
	char pbig[512];
	const char *provs[] = { p3, pbig };
	static const char *const names[] = { "p", "big" };
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[2048];

	provider_json(p3, sizeof(p3), "p", "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":10",
		      "{\"kind\":\"truncate\",\"after_tokens\":3," ALWAYS "}");
	provider_json(pbig, sizeof(pbig), "big",
		      "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":4",
		      "{\"kind\":\"truncate\",\"after_tokens\":100," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), 0);

	chat(&m, "p", true, "sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.tokens, 3, "%zu tokens: %s", s.tokens, r.body);
	cr_assert_eq(s.events, 3, "%s", r.body);
	cr_assert(!s.done, "[DONE] sent: %s", r.body);
	cr_assert(!s.finish && s.errors == 0 && s.unparsable == 0);
	http_result_free(&r);

	/* A plain answer: Content-Length promises more than comes. */
	chat(&m, "p", false, "json", 3000, &r);
	cr_assert_eq(r.code, CURLE_PARTIAL_FILE, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(!body_parses(&r), "%s", r.body);
	cr_assert(strstr(r.body, "Lorem ipsum dolor"), "%s", r.body);
	http_result_free(&r);

	/* after_tokens past the answer: every token, still no finish nor [DONE]. */
	chat(&m, "big", true, "all", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.tokens, 4, "%zu tokens: %s", s.tokens, r.body);
	cr_assert(!s.done && !s.finish, "%s", r.body);
	http_result_free(&r);

	settle_and_stop(&m, names, 2);
	read_log(&m, "p", &log);
	expect_row(&log, "sse", "truncate", 200, 3, "faulted");
	expect_row(&log, "json", "truncate", 200, 3, "faulted");
	csv_free(&log);
	read_log(&m, "big", &log);
	expect_row(&log, "all", "truncate", 200, 4, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `error_event`: after_tokens tokens, an SSE error event, the end. */
Test(mockprov_faults, error_event_after_tokens, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[1024];

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":10",
			  "{\"kind\":\"error_event\",\"after_tokens\":2," ALWAYS "}"), 0);

	chat(&m, "p", true, "sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.tokens, 2, "%zu tokens: %s", s.tokens, r.body);
	cr_assert_eq(s.events, 3, "%s", r.body);
	cr_assert_eq(s.errors, 1, "%s", r.body);
	cr_assert(s.last_is_error, "%s", r.body);
	cr_assert(strstr(r.body, "event: error\ndata: {\"error\""), "%s", r.body);
	cr_assert(!s.done && !s.finish);
	http_result_free(&r);

	/* A plain answer has no events: an error status instead. */
	chat(&m, "p", false, "json", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 500);
	cr_assert(is_openai_error(r.body, "server_error"), "%s", r.body);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "sse", "error_event", 200, 2, "faulted");
	expect_row(&log, "json", "error_event", 500, 2, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `reset`: a TCP reset at once, or after after_bytes bytes of the answer. */
Test(mockprov_faults, reset_at_once_and_after_bytes, .timeout = 15)
{
	char p0[512];
	char p50[512];
	char p300[512];
	const char *provs[] = { p0, p50, p300 };
	static const char *const names[] = { "r0", "r50", "r300" };
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[2048];
	size_t seen;

	provider_json(p0, sizeof(p0), "r0", "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":16",
		      "{\"kind\":\"reset\",\"after_bytes\":0," ALWAYS "}");
	provider_json(p300, sizeof(p300), "r300",
		      "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":16",
		      "{\"kind\":\"reset\",\"after_bytes\":300," ALWAYS "}");
	provider_json(p50, sizeof(p50), "r50", "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":16",
		      "{\"kind\":\"reset\",\"after_bytes\":50," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 3), 0);

	chat(&m, "r0", false, "now", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.body_len, 0);
	http_result_free(&r);

	/* 50 bytes: inside the headers, so no status line completes. */
	chat(&m, "r50", true, "hdr", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_assert_eq(r.body_len, 0);
	http_result_free(&r);

	/* The stream's headers (~150 bytes) and part of the first token. */
	chat(&m, "r300", true, "sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_assert_eq(r.status, 200);
	seen = strlen(r.headers) + r.body_len;
	cr_assert(seen > 0 && seen <= 300, "%zu bytes seen", seen);
	http_result_free(&r);

	/* A plain answer (not chunked): exactly 300 bytes, headers included. */
	chat(&m, "r300", false, "json", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_assert_eq(r.status, 200);
	seen = strlen(r.headers) + r.body_len;
	cr_assert_eq(seen, 300, "%zu bytes seen", seen);
	http_result_free(&r);

	settle_and_stop(&m, names, 3);
	read_log(&m, "r0", &log);
	expect_row(&log, "now", "reset", 0, 0, "faulted");
	csv_free(&log);
	read_log(&m, "r50", &log);
	/* Cut inside the headers: no status went out whole. */
	expect_row(&log, "hdr", "reset", 0, 0, "faulted");
	csv_free(&log);
	read_log(&m, "r300", &log);
	expect_row(&log, "sse", "reset", 200, -1, "faulted");
	expect_row(&log, "json", "reset", 200, -1, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `malformed`: a 200 whose JSON, or one of whose SSE frames, does not parse. */
Test(mockprov_faults, malformed_does_not_parse, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[1024];

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":10,\"token_ms\":5,\"output_tokens\":6",
			  "{\"kind\":\"malformed\"," ALWAYS "}"), 0);

	chat(&m, "p", false, "json", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert_gt(r.body_len, 0);
	cr_assert(!body_parses(&r), "parses: %s", r.body);
	http_result_free(&r);

	chat(&m, "p", true, "sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	sse_summarize(r.body, &s);
	cr_assert_geq(s.unparsable, 1, "every event parses: %s", r.body);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "json", "malformed", 200, -1, "faulted");
	expect_row(&log, "sse", "malformed", 200, -1, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `rate_limit` rpm: three answers, then 429 with retry-after and x-ratelimit-*. */
Test(mockprov_faults, rate_limit_requests, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	char rid[16];
	char v[64];
	int i;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":4",
			  "{\"kind\":\"rate_limit\",\"rpm\":3," ALWAYS "}"), 0);
	for (i = 0; i < 3; i++) {
		snprintf(rid, sizeof(rid), "ok%d", i);
		chat(&m, "p", false, rid, 3000, &r);
		cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
		cr_assert_eq(r.status, 200, "request %d: %ld %s", i + 1, r.status, r.body);
		cr_assert_eq(header_num(&r, "x-ratelimit-limit-requests"), 3);
		cr_assert_eq(header_num(&r, "x-ratelimit-remaining-requests"), 2 - i,
			     "request %d: remaining %s", i + 1,
			     http_header(&r, "x-ratelimit-remaining-requests", v, sizeof(v)));
		cr_assert_not_null(http_header(&r, "x-ratelimit-reset-requests", v, sizeof(v)));
		cr_assert_null(http_header(&r, "x-ratelimit-limit-tokens", v, sizeof(v)));
		cr_assert(body_parses(&r));
		http_result_free(&r);
	}
	chat(&m, "p", false, "over", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 429, "%ld %s", r.status, r.body);
	/* One request refills in 60 / 3 = 20 s (19 if a second went by). */
	cr_assert(header_num(&r, "retry-after") >= 19 && header_num(&r, "retry-after") <= 20,
		  "retry-after: %s", http_header(&r, "retry-after", v, sizeof(v)));
	cr_assert_eq(header_num(&r, "x-ratelimit-limit-requests"), 3);
	cr_assert_eq(header_num(&r, "x-ratelimit-remaining-requests"), 0);
	cr_assert_not_null(http_header(&r, "x-ratelimit-reset-requests", v, sizeof(v)));
	cr_assert(is_openai_error(r.body, NULL), "%s", r.body);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "ok0", "", 200, 4, "completed");
	expect_row(&log, "ok2", "", 200, 4, "completed");
	expect_row(&log, "over", "rate_limit", 429, 0, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * `rate_limit` tpm: each request costs its prompt (4 tokens for chat_body's
 * 14 characters) plus its output (10): 30 tokens pay for two.
 */
Test(mockprov_faults, rate_limit_tokens, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	char v[64];

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":10",
			  "{\"kind\":\"rate_limit\",\"tpm\":30," ALWAYS "}"), 0);
	chat(&m, "p", false, "t1", 3000, &r);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_assert_eq(header_num(&r, "x-ratelimit-limit-tokens"), 30);
	cr_assert_eq(header_num(&r, "x-ratelimit-remaining-tokens"), 16, "remaining %s",
		     http_header(&r, "x-ratelimit-remaining-tokens", v, sizeof(v)));
	cr_assert_null(http_header(&r, "x-ratelimit-limit-requests", v, sizeof(v)));
	http_result_free(&r);

	chat(&m, "p", false, "t2", 3000, &r);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_assert_eq(header_num(&r, "x-ratelimit-remaining-tokens"), 2);
	http_result_free(&r);

	chat(&m, "p", true, "t3", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 429, "%ld %s", r.status, r.body);
	/* 12 tokens short at 30 a minute: 24 s (23 if a second went by). */
	cr_assert(header_num(&r, "retry-after") >= 23 && header_num(&r, "retry-after") <= 24,
		  "retry-after: %s", http_header(&r, "retry-after", v, sizeof(v)));
	cr_assert_eq(header_num(&r, "x-ratelimit-limit-tokens"), 30);
	cr_assert_eq(header_num(&r, "x-ratelimit-remaining-tokens"), 2);
	cr_assert_not_null(http_header(&r, "x-ratelimit-reset-tokens", v, sizeof(v)));
	cr_assert(is_openai_error(r.body, NULL), "%s", r.body);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "t2", "", 200, 10, "completed");
	expect_row(&log, "t3", "rate_limit", 429, 0, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* `slow`: add_ms more before the first token, plain or streamed. */
Test(mockprov_faults, slow_adds_latency, .timeout = 15)
{
	char ps[512];
	char pf[512];
	const char *provs[] = { ps, pf };
	static const char *const names[] = { "slow", "fast" };
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[2048];
	size_t i;

	provider_json(ps, sizeof(ps), "slow", "\"ttft_ms\":30,\"token_ms\":0,\"output_tokens\":4",
		      "{\"kind\":\"slow\",\"add_ms\":400," ALWAYS "}");
	provider_json(pf, sizeof(pf), "fast", "\"ttft_ms\":30,\"token_ms\":0,\"output_tokens\":4",
		      "");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), 0);

	chat(&m, "fast", false, "f", 3000, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(r.total_ms >= 30 && r.total_ms < 400, "fast: %.1f ms", r.total_ms);
	http_result_free(&r);

	chat(&m, "slow", false, "json", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(body_parses(&r));
	cr_assert(r.total_ms >= 430 && r.total_ms < 1500, "slow: %.1f ms", r.total_ms);
	http_result_free(&r);

	chat(&m, "slow", true, "sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_gt(r.nchunks, 0);
	cr_assert(r.chunk_ms[0] >= 430 && r.chunk_ms[0] < 1500, "first token at %.1f ms",
		  r.chunk_ms[0]);
	http_result_free(&r);

	settle_and_stop(&m, names, 2);
	read_log(&m, "slow", &log);
	i = expect_row(&log, "json", "slow", 200, 4, "completed");
	cr_assert_geq(log_num(&log, i, "ttft_ms"), 430);
	i = expect_row(&log, "sse", "slow", 200, 4, "completed");
	cr_assert_geq(log_num(&log, i, "ttft_ms"), 430);
	csv_free(&log);
	mock_cleanup(&m);
}

/* `slow_tokens`: token_ms between tokens instead of the provider's. */
Test(mockprov_faults, slow_tokens_widens_gaps, .timeout = 15)
{
	char ps[512];
	char pn[512];
	const char *provs[] = { ps, pn };
	static const char *const names[] = { "st", "norm" };
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[2048];
	double mean_gap;
	size_t k;

	provider_json(ps, sizeof(ps), "st", "\"ttft_ms\":20,\"token_ms\":5,\"output_tokens\":6",
		      "{\"kind\":\"slow_tokens\",\"token_ms\":60," ALWAYS "}");
	provider_json(pn, sizeof(pn), "norm", "\"ttft_ms\":20,\"token_ms\":5,\"output_tokens\":6",
		      "");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), 0);

	chat(&m, "norm", true, "n", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_gt(r.nchunks, 0);
	cr_assert_lt(r.chunk_ms[r.nchunks - 1], 200, "normal stream ended at %.1f ms",
		     r.chunk_ms[r.nchunks - 1]);
	http_result_free(&r);

	/* One write per token, 60 ms apart: one chunk each. */
	chat(&m, "st", true, "s", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.nchunks, 6, "%zu chunks", r.nchunks);
	for (k = 0; k < 6; k++)
		cr_assert_geq(r.chunk_ms[k], 20 + 60.0 * (double)k, "token %zu at %.1f ms", k,
			      r.chunk_ms[k]);
	mean_gap = (r.chunk_ms[5] - r.chunk_ms[0]) / 5;
	cr_assert(mean_gap >= 50 && mean_gap < 150, "mean gap %.1f ms", mean_gap);
	http_result_free(&r);

	chat(&m, "st", false, "j", 3000, &r);
	cr_assert_eq(r.status, 200);
	/* 20 + 5 × 60 ms */
	cr_assert(r.total_ms >= 320 && r.total_ms < 1500, "%.1f ms", r.total_ms);
	http_result_free(&r);

	settle_and_stop(&m, names, 2);
	read_log(&m, "st", &log);
	expect_row(&log, "s", "slow_tokens", 200, 6, "completed");
	expect_row(&log, "j", "slow_tokens", 200, 6, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/* ---- probabilities and overlaps ---- */

/*
 * Runs n requests against a fresh mockprov whose `status` fault has
 * probability 0.5; out[i] is 1 for a 503. Returns the number of 503s after
 * checking the log agrees.
 */
static int probability_run(int *out, int n)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	int faulted = 0;
	int logged = 0;
	size_t i;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1",
			  "{\"kind\":\"status\",\"probability\":0.5," ALWAYS "}"), 0);
	for (i = 0; i < (size_t)n; i++) {
		chat(&m, "p", false, NULL, 3000, &r);
		cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
		cr_assert(r.status == 200 || r.status == 503, "%ld", r.status);
		out[i] = r.status == 503;
		faulted += out[i];
		http_result_free(&r);
	}
	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	cr_assert_eq(log.nrows, (size_t)n + 1);
	for (i = 1; i < log.nrows; i++) {
		bool f = strcmp(csv_get(&log, i, "outcome"), "faulted") == 0;

		cr_assert_eq(f, out[i - 1] == 1, "row %zu disagrees with the client", i);
		logged += f;
	}
	cr_assert_eq(logged, faulted);
	csv_free(&log);
	mock_cleanup(&m);
	return faulted;
}

/* probability 0.5: about half faulted, and the same seed replays exactly. */
Test(mockprov_faults, probability_is_seeded, .timeout = 30)
{
	enum { N = 200 };
	int a[N];
	int b[N];
	int fa;
	int fb;
	int i;

	fa = probability_run(a, N);
	cr_assert(fa >= N * 30 / 100 && fa <= N * 70 / 100, "%d of %d faulted", fa, N);
	fb = probability_run(b, N);
	cr_assert_eq(fa, fb);
	for (i = 0; i < N; i++)
		cr_assert_eq(a[i], b[i], "request %d differs between two runs with seed 1", i);
}

/*
 * Overlapping windows: the first listed deciding fault decides; slow adds
 * up, and does not delay a status answer.
 */
Test(mockprov_faults, overlap_first_listed_decides, .timeout = 15)
{
	char pa[512];
	char pb[512];
	char pc[512];
	char pd[512];
	char pe[512];
	const char *provs[] = { pa, pb, pc, pd, pe };
	static const char *const names[] = { "a", "b", "c", "d", "e" };
	struct sse_sum s;
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[4096];
	const char *timing = "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":2";

	provider_json(pa, sizeof(pa), "a", timing,
		      "{\"kind\":\"status\",\"status\":502," ALWAYS "},"
		      "{\"kind\":\"reset\"," ALWAYS "}");
	provider_json(pb, sizeof(pb), "b", timing,
		      "{\"kind\":\"reset\"," ALWAYS "},"
		      "{\"kind\":\"status\",\"status\":502," ALWAYS "}");
	provider_json(pc, sizeof(pc), "c", timing,
		      "{\"kind\":\"slow\",\"add_ms\":2000," ALWAYS "},"
		      "{\"kind\":\"status\"," ALWAYS "}");
	provider_json(pd, sizeof(pd), "d", timing,
		      "{\"kind\":\"slow\",\"add_ms\":100," ALWAYS "},"
		      "{\"kind\":\"slow\",\"add_ms\":150," ALWAYS "}");
	provider_json(pe, sizeof(pe), "e", "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":4",
		      "{\"kind\":\"slow\",\"add_ms\":200," ALWAYS "},"
		      "{\"kind\":\"truncate\",\"after_tokens\":1," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 5), 0);

	chat(&m, "a", false, "a", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 502);
	http_result_free(&r);

	chat(&m, "b", false, "b", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 0);
	http_result_free(&r);

	chat(&m, "c", false, "c", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 503);
	cr_assert_lt(r.total_ms, 1000, "status waited for slow: %.1f ms", r.total_ms);
	http_result_free(&r);

	chat(&m, "d", false, "d", 3000, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(r.total_ms >= 250 && r.total_ms < 1500, "100 + 150 ms: %.1f ms", r.total_ms);
	http_result_free(&r);

	/* A decider answering at the token times follows slow. */
	chat(&m, "e", true, "e", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_gt(r.nchunks, 0);
	cr_assert(r.chunk_ms[0] >= 200 && r.chunk_ms[0] < 1500, "first token at %.1f ms",
		  r.chunk_ms[0]);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.tokens, 1, "%s", r.body);
	cr_assert(!s.done);
	http_result_free(&r);

	settle_and_stop(&m, names, 5);
	read_log(&m, "e", &log);
	expect_row(&log, "e", "slow+truncate", 200, 1, "faulted");
	csv_free(&log);
	read_log(&m, "a", &log);
	expect_row(&log, "a", "status", 502, 0, "faulted");
	csv_free(&log);
	read_log(&m, "b", &log);
	expect_row(&log, "b", "reset", 0, 0, "faulted");
	csv_free(&log);
	read_log(&m, "c", &log);
	expect_row(&log, "c", "slow+status", 503, 0, "faulted");
	csv_free(&log);
	read_log(&m, "d", &log);
	expect_row(&log, "d", "slow+slow", 200, 2, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/* ---- the client leaving, SIGTERM, the admin API ---- */

/* A client that gives up mid-stream is logged client_aborted. */
Test(mockprov_faults, client_disconnect_is_client_aborted, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[1024];
	char rid[16];
	size_t i;
	double tokens;
	int attempt;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":10,\"token_ms\":50,\"output_tokens\":16",
			  ""), 0);
	healthz(&m, "p", &r);	/* answering already: the 120 ms are the stream's */
	cr_assert_eq(r.status, 200);
	http_result_free(&r);
	/* A loaded machine may not even send the headers in 120 ms: retry then. */
	for (attempt = 0; attempt < 3; attempt++) {
		snprintf(rid, sizeof(rid), "left%d", attempt);
		chat(&m, "p", true, rid, 120, &r);
		cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
		if (r.status == 200)
			break;
		cr_assert_eq(r.status, 0, "status %ld", r.status);
		http_result_free(&r);
	}
	cr_assert_eq(r.status, 200, "no headers within 120 ms, 3 times");
	sse_summarize(r.body, &s);
	/* Tokens at 10, 60, 110 ms (fewer if the machine is slow). */
	cr_assert_leq(s.tokens, 3, "%zu tokens", s.tokens);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	i = expect_row(&log, rid, "", 200, -1, "client_aborted");
	tokens = log_num(&log, i, "tokens_out");
	/* Sent, maybe not yet read when the client gave up; never the whole answer. */
	cr_assert(tokens >= (double)s.tokens && tokens < 16,
		  "tokens_out %.0f, the client got %zu", tokens, s.tokens);
	cr_assert(log_num(&log, i, "dur_ms") > 0 && log_num(&log, i, "dur_ms") < 3000, "dur_ms %s",
		  csv_get(&log, i, "dur_ms"));
	csv_free(&log);
	mock_cleanup(&m);
}

struct bg_chat {
	const struct mock_proc *m;
	const char *prov;
	bool stream;
	const char *rid;
	struct http_result r;
	int rc;
};

static void *bg_chat_run(void *arg)
{
	struct bg_chat *b = arg;

	b->rc = chat_try(b->m, b->prov, b->stream, b->rid, 8000, &b->r);
	return NULL;
}

/*
 * SIGTERM while one request hangs and another streams: exit 0, the log is
 * renamed into place, both requests are logged.
 */
Test(mockprov_faults, sigterm_while_hanging, .timeout = 20)
{
	char ph[512];
	char pl[512];
	const char *provs[] = { ph, pl };
	struct mock_proc m;
	struct bg_chat hung = { .prov = "h", .stream = false, .rid = "hung" };
	struct bg_chat slow = { .prov = "l", .stream = true, .rid = "streaming" };
	pthread_t th[2];
	struct csv_table log;
	struct stat st;
	char cfg[2048];
	char path[400];
	double t_in;
	size_t i;

	provider_json(ph, sizeof(ph), "h", "\"ttft_ms\":0", "{\"kind\":\"hang\"," ALWAYS "}");
	provider_json(pl, sizeof(pl), "l", "\"ttft_ms\":0,\"token_ms\":100,\"output_tokens\":50",
		      "");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);	/* before a second thread uses curl */
	hung.m = &m;
	slow.m = &m;
	cr_assert_eq(pthread_create(&th[0], NULL, bg_chat_run, &hung), 0);
	cr_assert_eq(pthread_create(&th[1], NULL, bg_chat_run, &slow), 0);
	cr_assert(wait_state(&m, "h", "in_flight", 1, 3000), "the hung request never arrived");
	cr_assert(wait_state(&m, "l", "in_flight", 1, 3000), "the stream never arrived");
	t_in = now_ms();
	usleep(100 * 1000);	/* let the hang last: a duration, not a synchronisation */

	cr_assert_eq(mock_stop(&m, SIGTERM), 0, "exit status on SIGTERM");
	t_in = now_ms() - t_in;
	cr_assert_eq(pthread_join(th[0], NULL), 0);
	cr_assert_eq(pthread_join(th[1], NULL), 0);
	cr_assert_eq(hung.rc, 0);
	cr_assert_eq(hung.r.code, CURLE_GOT_NOTHING, "hung client: curl %d %s", hung.r.code,
		     hung.r.errbuf);
	cr_assert_eq(slow.r.code, CURLE_PARTIAL_FILE, "streaming client: curl %d %s",
		     slow.r.code, slow.r.errbuf);
	cr_assert_eq(slow.r.status, 200);
	http_result_free(&hung.r);
	http_result_free(&slow.r);

	snprintf(path, sizeof(path), "%s/mock-h.csv", m.dir);
	cr_assert_eq(stat(path, &st), 0, "%s is missing", path);
	snprintf(path, sizeof(path), "%s/mock-h.csv.tmp", m.dir);
	cr_assert_neq(stat(path, &st), 0, "%s was left behind", path);
	snprintf(path, sizeof(path), "%s/mock-l.csv.tmp", m.dir);
	cr_assert_neq(stat(path, &st), 0, "%s was left behind", path);

	read_log(&m, "h", &log);
	cr_assert_eq(log.nrows, 2);
	i = expect_row(&log, "hung", "hang", 0, 0, "faulted");
	cr_assert_geq(log_num(&log, i, "dur_ms"), 100);
	cr_assert_leq(log_num(&log, i, "dur_ms"), 100 + t_in + 3000);
	csv_free(&log);
	read_log(&m, "l", &log);
	cr_assert_eq(log.nrows, 2);
	i = expect_row(&log, "streaming", "shutdown", 200, -1, "faulted");
	cr_assert_geq(log_num(&log, i, "tokens_out"), 1);
	csv_free(&log);
	mock_cleanup(&m);
}

/* POST /faults injects a window that starts now; GET /state shows it; DELETE clears. */
Test(mockprov_faults, admin_inject_and_clear, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	cJSON *st;
	const cJSON *faults;
	const cJSON *f;
	double t_post;
	double t;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1",
			  ""), 0);
	chat(&m, "p", false, "before", 3000, &r);
	cr_assert_eq(r.status, 200);
	http_result_free(&r);

	t_post = now_ms();
	admin(&m, NULL, "/faults",
	      "{\"provider\":\"p\",\"kind\":\"status\",\"status\":503,\"duration_s\":0.3}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);

	chat(&m, "p", false, "during", 3000, &r);
	cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
	cr_assert(is_openai_error(r.body, NULL));
	http_result_free(&r);

	st = get_state(&m);
	faults = cJSON_GetObjectItemCaseSensitive(state_provider(st, "p"), "faults");
	cr_assert_eq(cJSON_GetArraySize(faults), 1, "faults in /state");
	f = cJSON_GetArrayItem(faults, 0);
	cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "kind")));
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(f, "kind")->valuestring, "status");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "injected")));
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "active")));
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(f, "status")));
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(f, "status")->valuedouble, 503);
	cJSON_Delete(st);

	/* 503 until 0.3 s after the injection, then 200 again. */
	for (;;) {
		double s0 = unix_now();

		t = now_ms() - t_post;
		cr_assert_lt(t, 2000, "still 503 after %.1f ms", t);
		chat(&m, "p", false, NULL, 3000, &r);
		if (r.status == 200) {
			http_result_free(&r);
			break;
		}
		cr_assert_eq(r.status, 503, "%ld", r.status);
		http_result_free(&r);
		pace(s0, 2);
	}
	t = now_ms() - t_post;
	cr_assert(t >= 300 && t < 800, "200 again %.1f ms after the POST", t);

	/* A long one, cleared by DELETE. */
	admin(&m, NULL, "/faults",
	      "{\"provider\":\"p\",\"kind\":\"status\",\"status\":500,\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	chat(&m, "p", false, NULL, 3000, &r);
	cr_assert_eq(r.status, 500);
	http_result_free(&r);
	admin(&m, "DELETE", "/faults", NULL, &r);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	/* The 0.3 s one had expired and was dropped when this one came. */
	cr_assert(strstr(r.body, "\"cleared\":1"), "%s", r.body);
	http_result_free(&r);
	chat(&m, "p", false, "cleared", 3000, &r);
	cr_assert_eq(r.status, 200);
	http_result_free(&r);
	st = get_state(&m);
	faults = cJSON_GetObjectItemCaseSensitive(state_provider(st, "p"), "faults");
	cr_assert_eq(cJSON_GetArraySize(faults), 0, "faults left in /state");
	cJSON_Delete(st);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "before", "", 200, 1, "completed");
	expect_row(&log, "during", "status", 503, 0, "faulted");
	expect_row(&log, "cleared", "", 200, 1, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * A rate_limit window spends its budget only when a request reaches it:
 * behind an active status fault it is not consulted; ahead of one it is.
 */
Test(mockprov_faults, overlap_rate_limit_budget, .timeout = 15)
{
	char pb[512];
	char pa[512];
	const char *provs[] = { pb, pa };
	static const char *const names[] = { "behind", "ahead" };
	int64_t t0 = unix_ms();
	struct mock_proc m;
	struct http_result r;
	char cfg[2048];
	const char *timing = "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":2";
	int i;

	provider_json(pb, sizeof(pb), "behind", timing,
		      "{\"kind\":\"status\",\"from_s\":-1000,\"to_s\":0.3},"
		      "{\"kind\":\"rate_limit\",\"rpm\":1," ALWAYS "}");
	provider_json(pa, sizeof(pa), "ahead", timing,
		      "{\"kind\":\"rate_limit\",\"rpm\":1," ALWAYS "},"
		      "{\"kind\":\"status\",\"from_s\":-1000,\"to_s\":0.3}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 2), t0);
	cr_assert_lt(unix_now() - (double)t0, 250, "mockprov took too long to start");

	/* ahead: the first request spends the only request, the status answers. */
	chat(&m, "ahead", false, NULL, 3000, &r);
	cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
	http_result_free(&r);
	chat(&m, "ahead", false, NULL, 3000, &r);
	cr_assert_eq(r.status, 429, "%ld %s", r.status, r.body);
	http_result_free(&r);

	/* behind: three 503s spend nothing... */
	for (i = 0; i < 3; i++) {
		chat(&m, "behind", false, NULL, 3000, &r);
		cr_assert_eq(r.status, 503, "%ld %s", r.status, r.body);
		http_result_free(&r);
	}
	/* ...so once the status window closes, one request passes, then 429. */
	for (;;) {
		double s0 = unix_now();

		cr_assert_lt(s0 - (double)t0, 2000, "the status window never closed");
		chat(&m, "behind", false, NULL, 3000, &r);
		if (r.status != 503)
			break;
		http_result_free(&r);
		pace(s0, 2);
	}
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_assert_eq(header_num(&r, "x-ratelimit-remaining-requests"), 0);
	http_result_free(&r);
	chat(&m, "behind", false, NULL, 3000, &r);
	cr_assert_eq(r.status, 429, "%ld %s", r.status, r.body);
	http_result_free(&r);

	settle_and_stop(&m, names, 2);
	mock_cleanup(&m);
}

/* An injected `down` closes the listener now and reopens it after duration_s. */
Test(mockprov_faults, admin_inject_down, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	cJSON *st;
	char cfg[1024];
	double t_post;
	double t;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0", ""), 0);
	t_post = now_ms();
	admin(&m, NULL, "/faults", "{\"provider\":\"p\",\"kind\":\"down\",\"duration_s\":0.3}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	st = get_state(&m);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(state_provider(st, "p"),
								 "listening")), "/state: still listening");
	cJSON_Delete(st);
	for (;;) {
		double s0 = unix_now();

		t = now_ms() - t_post;
		cr_assert_lt(t, 2000, "still refused after %.1f ms", t);
		healthz(&m, "p", &r);
		if (r.code == CURLE_OK)
			break;
		cr_assert_eq(r.code, CURLE_COULDNT_CONNECT, "curl %d %s", r.code, r.errbuf);
		cr_assert_eq(r.os_errno, ECONNREFUSED);
		http_result_free(&r);
		pace(s0, 2);
	}
	cr_assert_eq(r.status, 200);
	http_result_free(&r);
	t = now_ms() - t_post;
	cr_assert(t >= 300 && t < 800, "accepted again %.1f ms after the POST", t);
	cr_assert_eq(mock_stop(&m, SIGTERM), 0);
	mock_cleanup(&m);
}

/*
 * An injection while a request is in flight must not change that request:
 * its rate_limit headers still describe the window it was counted in.
 */
Test(mockprov_faults, admin_inject_during_request, .timeout = 15)
{
	struct mock_proc m;
	struct bg_chat bg = { .prov = "p", .stream = false, .rid = "inflight" };
	struct http_result r;
	struct csv_table log;
	pthread_t th;
	char cfg[1024];
	CURLcode code;
	long status;
	double limit;
	double left;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":300,\"token_ms\":0,\"output_tokens\":2",
			  "{\"kind\":\"rate_limit\",\"rpm\":100," ALWAYS "}"), 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);	/* before a second thread uses curl */
	bg.m = &m;
	cr_assert_eq(pthread_create(&th, NULL, bg_chat_run, &bg), 0);
	cr_assert(wait_state(&m, "p", "in_flight", 1, 3000), "the request never arrived");
	admin(&m, NULL, "/faults",
	      "{\"provider\":\"p\",\"kind\":\"slow\",\"add_ms\":1,\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	cr_assert_eq(pthread_join(th, NULL), 0);

	code = bg.r.code;
	status = bg.r.status;
	limit = header_num(&bg.r, "x-ratelimit-limit-requests");
	left = header_num(&bg.r, "x-ratelimit-remaining-requests");
	http_result_free(&bg.r);
	/* Empty reply: mockprov died (ASan: use-after-free in base_headers). */
	cr_assert_eq(code, CURLE_OK, "curl %d: mockprov died answering", code);
	cr_assert_eq(status, 200);
	cr_assert_eq(limit, 100, "x-ratelimit-limit-requests %g", limit);
	cr_assert_eq(left, 99, "x-ratelimit-remaining-requests %g", left);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "inflight", "", 200, 2, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/* Injected faults come before the config's, the newest first. */
Test(mockprov_faults, admin_injected_first_newest_first, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1",
			  "{\"kind\":\"status\",\"status\":503," ALWAYS "}"), 0);
	chat(&m, "p", false, "config", 3000, &r);
	cr_assert_eq(r.status, 503);
	http_result_free(&r);

	admin(&m, NULL, "/faults",
	      "{\"provider\":\"p\",\"kind\":\"status\",\"status\":500,\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	chat(&m, "p", false, "older", 3000, &r);
	cr_assert_eq(r.status, 500, "injected after the config's: %ld", r.status);
	http_result_free(&r);

	admin(&m, NULL, "/faults",
	      "{\"provider\":\"p\",\"kind\":\"status\",\"status\":502,\"duration_s\":60}", &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	chat(&m, "p", false, "newest", 3000, &r);
	cr_assert_eq(r.status, 502, "the older injection decided: %ld", r.status);
	http_result_free(&r);

	/* DELETE removes the scheduled fault too. */
	admin(&m, "DELETE", "/faults?provider=p", NULL, &r);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	cr_assert(strstr(r.body, "\"cleared\":3"), "%s", r.body);
	http_result_free(&r);
	chat(&m, "p", false, "none", 3000, &r);
	cr_assert_eq(r.status, 200);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "config", "status", 503, 0, "faulted");
	expect_row(&log, "older", "status", 500, 0, "faulted");
	expect_row(&log, "newest", "status", 502, 0, "faulted");
	expect_row(&log, "none", "", 200, 1, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * GET /v1/models answers status and malformed, is delayed by slow, is
 * never rate limited, and is logged with kind "models" and the fault it
 * got.
 */
Test(mockprov_faults, models_endpoint_faults, .timeout = 15)
{
	char ps[512];
	char pm[512];
	char pl[512];
	char pr[512];
	const char *provs[] = { ps, pm, pl, pr };
	static const char *const names[] = { "st", "mal", "slow", "rl" };
	const char *timing = "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1";
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[4096];
	char url[128];
	int i;

	provider_json(ps, sizeof(ps), "st", timing, "{\"kind\":\"status\"," ALWAYS "}");
	provider_json(pm, sizeof(pm), "mal", timing, "{\"kind\":\"malformed\"," ALWAYS "}");
	provider_json(pl, sizeof(pl), "slow", timing,
		      "{\"kind\":\"slow\",\"add_ms\":150," ALWAYS "}");
	provider_json(pr, sizeof(pr), "rl", timing,
		      "{\"kind\":\"rate_limit\",\"rpm\":1," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 4), 0);

	cr_assert_eq(http_do(mock_url(&m, "st", "/v1/models", url, sizeof(url)), NULL, &r), 0);
	cr_assert_eq(r.status, 503);
	cr_assert(is_openai_error(r.body, NULL), "%s", r.body);
	http_result_free(&r);

	cr_assert_eq(http_do(mock_url(&m, "mal", "/v1/models", url, sizeof(url)), NULL, &r), 0);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(!body_parses(&r), "%s", r.body);
	http_result_free(&r);

	cr_assert_eq(http_do(mock_url(&m, "slow", "/v1/models", url, sizeof(url)), NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(r.total_ms >= 150 && r.total_ms < 1500, "%.1f ms", r.total_ms);
	http_result_free(&r);

	for (i = 0; i < 3; i++) {
		cr_assert_eq(http_do(mock_url(&m, "rl", "/v1/models", url, sizeof(url)), NULL, &r),
			     0);
		cr_assert_eq(r.status, 200, "models request %d: %ld", i + 1, r.status);
		http_result_free(&r);
	}
	/* The one request a minute is still there for a completion. */
	chat(&m, "rl", false, "first", 3000, &r);
	cr_assert_eq(r.status, 200, "%ld %s", r.status, r.body);
	http_result_free(&r);
	chat(&m, "rl", false, "second", 3000, &r);
	cr_assert_eq(r.status, 429, "%ld %s", r.status, r.body);
	http_result_free(&r);

	settle_and_stop(&m, names, 4);
	read_log(&m, "st", &log);
	cr_assert_eq(log.nrows, 2, "%zu rows", log.nrows - 1);
	cr_assert_str_eq(csv_get(&log, 1, "kind"), "models");
	cr_assert_str_eq(csv_get(&log, 1, "status"), "503");
	cr_assert_str_eq(csv_get(&log, 1, "fault"), "status");
	cr_assert_str_eq(csv_get(&log, 1, "outcome"), "faulted");
	csv_free(&log);
	read_log(&m, "rl", &log);
	cr_assert_eq(log.nrows, 6, "%zu rows", log.nrows - 1);
	for (i = 1; i <= 3; i++)
		cr_assert_str_eq(csv_get(&log, (size_t)i, "kind"), "models");
	cr_assert_str_eq(csv_get(&log, 4, "kind"), "chat");
	csv_free(&log);
	mock_cleanup(&m);
}

/* ---- rows that say what the client got ---- */

/*
 * Sends a chat completion (streaming or plain) with x-request-id rid on a
 * raw connection; with last, asks the server to end the connection after
 * the answer (Connection: close).
 */
static void raw_send_chat(int fd, const char *rid, bool stream, bool last)
{
	char body[256];
	char req[768];
	int n;

	chat_body(stream, body, sizeof(body));
	n = snprintf(req, sizeof(req),
		     "POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\n"
		     "Content-Type: application/json\r\n%sx-request-id: %s\r\n"
		     "Content-Length: %zu\r\n\r\n%s", last ? "Connection: close\r\n" : "", rid,
		     strlen(body), body);
	cr_assert_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n, "send: %s", strerror(errno));
}

/*
 * Opens a connection to provider prov. A narrow connection is one like a
 * real network's: Ethernet-sized segments (loopback's 64 KiB ones make the
 * server's kernel grant itself megabytes of send buffer) and a 16 KiB
 * receive buffer. Returns the socket.
 */
static int raw_connect(const struct mock_proc *m, const char *prov, bool narrow)
{
	int rcvbuf = 16384;
	int mss = 1400;
	struct sockaddr_storage a;
	const char *addr = mock_addr(m, prov);
	int fd;

	cr_assert_not_null(addr, "no provider %s", prov);
	cr_assert_eq(opt_parse_hostport(addr, &a), 0, "address %s", addr);
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0, "socket: %s", strerror(errno));
	if (narrow) {
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
		cr_assert_eq(setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)), 0);
	}
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect %s: %s", addr,
		     strerror(errno));
	return fd;
}

/*
 * A new connection to prov with a streaming chat completion sent on it
 * (Connection: close, so the server ends the connection after the answer).
 * Returns the socket.
 */
static int raw_chat(const struct mock_proc *m, const char *prov, const char *rid, bool narrow)
{
	int fd = raw_connect(m, prov, narrow);

	raw_send_chat(fd, rid, true, true);
	return fd;
}

/*
 * Reads fd until the server ends the connection (within 5 s): the bytes on
 * the wire, chunk framing included, go to out (NUL-terminated). Returns
 * their count; *err is 0 after a FIN, else what ended it (ECONNRESET for a
 * RST, ETIMEDOUT when the server did not end it).
 */
static size_t raw_read_all(int fd, char *out, size_t cap, int *err)
{
	double end = now_ms() + 5000;
	size_t used = 0;

	*err = ETIMEDOUT;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = end - now_ms();
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(fd, out + used, cap - 1 - used, 0);
		if (n <= 0) {
			*err = n == 0 ? 0 : errno;
			break;
		}
		used += (size_t)n;
		cr_assert_lt(used + 1, cap, "more than %zu bytes", cap);
	}
	out[used] = '\0';
	return used;
}

/*
 * A reset budget that runs out inside the stream's last chunk
 * ("0\r\n\r\n"): every token and [DONE] went out, but the client never saw
 * the stream end, only a RST, so the row says faulted, not completed. The
 * budget is the byte count of the same stream without the fault, less 2.
 */
Test(mockprov_faults, reset_in_the_last_chunk_is_faulted, .timeout = 15)
{
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	char inject[256];
	char got[16384];
	size_t total;
	size_t n;
	int err;
	int fd;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":4",
			  ""), 0);
	/* The ids are as long as each other, so the two answers are too. */
	fd = raw_chat(&m, "p", "whole-1", false);
	total = raw_read_all(fd, got, sizeof(got), &err);
	close(fd);
	cr_assert_eq(err, 0, "the whole stream did not end with a FIN: %s", strerror(err));
	cr_assert(total > 5 && memcmp(got + total - 5, "0\r\n\r\n", 5) == 0,
		  "not a whole chunked stream: %s", got);
	cr_assert(strstr(got, "data: [DONE]"), "%s", got);

	snprintf(inject, sizeof(inject), "{\"provider\":\"p\",\"kind\":\"reset\","
		 "\"after_bytes\":%zu,\"duration_s\":60}", total - 2);
	admin(&m, NULL, "/faults", inject, &r);
	cr_assert_eq(r.status, 201, "%ld %s", r.status, r.body);
	http_result_free(&r);
	fd = raw_chat(&m, "p", "whole-2", false);
	n = raw_read_all(fd, got, sizeof(got), &err);
	close(fd);
	cr_assert_eq(err, ECONNRESET, "expected a RST: %s", strerror(err));
	cr_assert_eq(n, total - 2, "%zu bytes of %zu", n, total);
	cr_assert(memcmp(got + n - 3, "0\r\n", 3) == 0, "not cut in the last chunk: %s", got);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	expect_row(&log, "whole-1", "", 200, 4, "completed");
	expect_row(&log, "whole-2", "reset", 200, 4, "faulted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* True when buf (len bytes) holds one whole answer: by Content-Length, or chunked. */
static bool answer_complete(const char *buf, size_t len)
{
	const char *end = strstr(buf, "\r\n\r\n");
	const char *cl = strstr(buf, "\r\nContent-Length: ");
	size_t head;

	if (!end)
		return false;
	head = (size_t)(end + 4 - buf);
	if (cl && cl < end)
		return len >= head + strtoul(cl + 18, NULL, 10);
	return len >= head + 5 && strcmp(buf + len - 5, "0\r\n\r\n") == 0;
}

/*
 * Reads one answer off fd (within 5 s). Returns its status once it came
 * whole, or 0 when the connection ended first (*err: 0 for a FIN, else the
 * errno) or the time ran out (*err ETIMEDOUT).
 */
static long raw_read_answer(int fd, int *err)
{
	char buf[16384];
	double end = now_ms() + 5000;
	size_t used = 0;

	buf[0] = '\0';
	*err = ETIMEDOUT;
	while (!answer_complete(buf, used)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = end - now_ms();
		ssize_t n;

		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(fd, buf + used, sizeof(buf) - 1 - used, 0);
		if (n <= 0) {
			*err = n == 0 ? 0 : errno;
			return 0;
		}
		used += (size_t)n;
		buf[used] = '\0';
		cr_assert_lt(used + 1, sizeof(buf), "an answer over %zu bytes", sizeof(buf));
	}
	*err = 0;
	return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? strtol(buf + 9, NULL, 10) : -1;
}

/*
 * A `reset` budget larger than the answer: the answer "runs normally"
 * (README) and the row says completed — so, like any answer whose request
 * kept the connection alive, it leaves the connection open for the next
 * request, as a stream under the same fault does.
 */
Test(mockprov_faults, reset_budget_past_the_answer_keeps_the_connection, .timeout = 15)
{
	static const char *const rids[2][2] = { { "ka-json-1", "ka-json-2" },
						{ "ka-sse-1", "ka-sse-2" } };
	struct mock_proc m;
	struct csv_table log;
	char cfg[1024];
	long status;
	int err;
	int fd;
	int k;
	int i;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":3",
			  "{\"kind\":\"reset\",\"after_bytes\":100000," ALWAYS "}"), 0);
	for (k = 1; k >= 0; k--) {	/* the stream first, then the plain answer */
		fd = raw_connect(&m, "p", false);
		for (i = 0; i < 2; i++) {
			raw_send_chat(fd, rids[k][i], k == 1, false);
			status = raw_read_answer(fd, &err);
			cr_assert_eq(status, 200, "%s: %s", rids[k][i],
				     err ? strerror(err) : status ? "not a 200" :
				     "the connection was closed after the previous answer, "
				     "whose headers kept it alive");
		}
		close(fd);
	}

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < 2; i++)
			expect_row(&log, rids[k][i], "reset", 200, 3, "completed");
	}
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * Rows that report only what went out: no ttft_ms without a token written
 * (a stall after 0 tokens, plain or streamed; a plain error_event, which
 * is a 500), and status 0 when a reset cut the headers (plain or streamed).
 */
Test(mockprov_faults, rows_report_what_went_out, .timeout = 15)
{
	char pst[512];
	char pee[512];
	char prh[512];
	const char *provs[] = { pst, pee, prh };
	static const char *const names[] = { "st", "ee", "rh" };
	const char *timing = "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":4";
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	struct sse_sum s;
	char cfg[2048];
	size_t i;

	provider_json(pst, sizeof(pst), "st", timing,
		      "{\"kind\":\"stall\",\"after_tokens\":0," ALWAYS "}");
	provider_json(pee, sizeof(pee), "ee", timing,
		      "{\"kind\":\"error_event\",\"after_tokens\":2," ALWAYS "}");
	provider_json(prh, sizeof(prh), "rh", timing,
		      "{\"kind\":\"reset\",\"after_bytes\":50," ALWAYS "}");
	start(&m, config_n(cfg, sizeof(cfg), provs, 3), 0);

	/* Headers, then silence: the client gives up. */
	chat(&m, "st", false, "stall-json", 300, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	/* The body up to where the content would begin, and no further. */
	cr_assert(r.body_len > 11 && strcmp(r.body + r.body_len - 11, "\"content\":\"") == 0,
		  "%s", r.body);
	http_result_free(&r);
	chat(&m, "st", true, "stall-sse", 300, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	sse_summarize(r.body, &s);
	cr_assert_eq(s.events, 0, "%s", r.body);
	http_result_free(&r);

	chat(&m, "ee", false, "ee-json", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 500);
	http_result_free(&r);

	/* 50 bytes: inside the headers either way. */
	chat(&m, "rh", false, "hdr-json", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_assert_eq(r.body_len, 0);
	http_result_free(&r);
	chat(&m, "rh", true, "hdr-sse", 3000, &r);
	cr_assert_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.body_len, 0);
	http_result_free(&r);

	settle_and_stop(&m, names, 3);
	read_log(&m, "st", &log);
	i = expect_row(&log, "stall-json", "stall", 200, 0, "faulted");
	cr_assert_str_empty(csv_get(&log, i, "ttft_ms"), "stall-json: ttft_ms %s without a token",
			    csv_get(&log, i, "ttft_ms"));
	i = expect_row(&log, "stall-sse", "stall", 200, 0, "faulted");
	cr_assert_str_empty(csv_get(&log, i, "ttft_ms"), "stall-sse: ttft_ms %s without a token",
			    csv_get(&log, i, "ttft_ms"));
	csv_free(&log);
	read_log(&m, "ee", &log);
	i = expect_row(&log, "ee-json", "error_event", 500, 2, "faulted");
	cr_assert_str_empty(csv_get(&log, i, "ttft_ms"), "ee-json: ttft_ms %s for a 500",
			    csv_get(&log, i, "ttft_ms"));
	csv_free(&log);
	read_log(&m, "rh", &log);
	/* No status line and headers went out whole. */
	i = expect_row(&log, "hdr-json", "reset", 0, -1, "faulted");
	cr_assert_str_empty(csv_get(&log, i, "ttft_ms"));
	i = expect_row(&log, "hdr-sse", "reset", 0, 0, "faulted");
	cr_assert_str_empty(csv_get(&log, i, "ttft_ms"));
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * A stream whose tokens come at once (token_ms 0, 100000 of them, ~15 MB)
 * to a client that reads nothing for 500 ms, then leaves: the stream waits
 * for the reader once ~64 KiB are queued, so only what the queue and the
 * kernel's buffers hold was written — a few thousand tokens, not 100000 —
 * and the request ends when the client leaves.
 */
Test(mockprov_faults, stream_waits_for_a_reader_that_does_not_read, .timeout = 15)
{
	struct mock_proc m;
	struct csv_table log;
	char cfg[1024];
	double tokens;
	size_t i;
	int fd;

	start(&m, config1(cfg, sizeof(cfg),
			  "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":100000", ""), 0);
	fd = raw_chat(&m, "p", "no-reader", true);
	cr_assert(wait_state(&m, "p", "requests", 1, 3000), "the request never arrived");
	/* The behaviour under test: a client that reads nothing for 500 ms. */
	poll(NULL, 0, 500);
	close(fd);	/* unread bytes: the kernel resets the connection */
	cr_assert(wait_state(&m, "p", "in_flight", 0, 3000), "the stream outlived its client");

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	i = log_row(&log, "no-reader");
	tokens = log_num(&log, i, "tokens_out");
	cr_assert(tokens >= 1 && tokens < 10000,
		  "tokens_out %.0f: the stream did not wait for its reader", tokens);
	expect_row(&log, "no-reader", "", 200, -1, "client_aborted");
	csv_free(&log);
	mock_cleanup(&m);
}

/* ---- a window, and the seed ---- */

/*
 * A hang window [t0, t0+500 ms): a request inside it is never answered
 * (the client gives up at 300 ms, 3 × ttft); after the window the same
 * provider answers at its normal speed.
 */
Test(mockprov_faults, hang_only_inside_its_window, .timeout = 15)
{
	int64_t t0 = unix_ms();
	struct mock_proc m;
	struct http_result r;
	struct csv_table log;
	char cfg[1024];
	double t;

	start(&m, config1(cfg, sizeof(cfg), "\"ttft_ms\":100,\"token_ms\":0,\"output_tokens\":4",
			  "{\"kind\":\"hang\",\"from_s\":0,\"to_s\":0.5}"), t0);
	t = unix_now() - (double)t0;
	cr_assert_lt(t, 400, "mockprov took %.0f ms to start: the window is nearly over", t);

	chat(&m, "p", false, "inside", 300, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 0, "a status arrived: %ld", r.status);
	http_result_free(&r);

	pace((double)t0, 510);	/* the window closes at t0+500 ms */
	chat(&m, "p", false, "after", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert(body_parses(&r), "%s", r.body);
	cr_assert_lt(r.total_ms, 250, "answered after %.1f ms (ttft 100)", r.total_ms);
	http_result_free(&r);

	settle_and_stop1(&m);
	read_log(&m, "p", &log);
	cr_assert_eq(log.nrows, 3);
	expect_row(&log, "inside", "hang", 0, 0, "faulted");
	expect_row(&log, "after", "", 200, 4, "completed");
	csv_free(&log);
	mock_cleanup(&m);
}

/*
 * start() with --seed seed (mock_start always runs seed 1); the suite's
 * teardown reaps it too.
 */
static void start_seeded(struct mock_proc *m, const char *config, unsigned seed)
{
	const struct mock_opts o = { .seed = seed };
	int rc = mock_start_opts(m, config, &o);

	if (nstarted < sizeof(started) / sizeof(started[0])) {
		started[nstarted].pid = m->pid;
		snprintf(started[nstarted].dir, sizeof(started[nstarted].dir), "%s", m->dir);
		nstarted++;
	}
	cr_assert_eq(rc, 0, "mockprov --seed %u did not start", seed);
}

/*
 * probability 0.5 under two seeds: each faults about half of 100 requests,
 * and the patterns differ. Both seeds are fixed, so the test is
 * deterministic; were the streams independent draws, agreeing on 91 or
 * more of 100 would have odds of about 2e-18.
 */
Test(mockprov_faults, probability_follows_the_seed, .timeout = 20)
{
	enum { N = 100 };
	struct mock_proc m[2];
	struct http_result r;
	char cfg[1024];
	int pattern[2][N];
	int faulted[2] = { 0, 0 };
	int differ = 0;
	int i;
	int k;

	config1(cfg, sizeof(cfg), "\"ttft_ms\":0,\"token_ms\":0,\"output_tokens\":1",
		"{\"kind\":\"status\",\"probability\":0.5," ALWAYS "}");
	start(&m[0], cfg, 0);		/* seed 1 */
	start_seeded(&m[1], cfg, 2);
	for (i = 0; i < N; i++) {
		for (k = 0; k < 2; k++) {
			chat(&m[k], "p", false, NULL, 3000, &r);
			cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
			cr_assert(r.status == 200 || r.status == 503, "%ld", r.status);
			pattern[k][i] = r.status == 503;
			faulted[k] += pattern[k][i];
			http_result_free(&r);
		}
		differ += pattern[0][i] != pattern[1][i];
	}
	for (k = 0; k < 2; k++) {
		cr_assert(faulted[k] >= 25 && faulted[k] <= 75, "seed %d: %d of %d faulted", k + 1,
			  faulted[k], N);
		settle_and_stop1(&m[k]);
		mock_cleanup(&m[k]);
	}
	cr_assert_geq(differ, 10, "seeds 1 and 2 differ on %d of %d requests", differ, N);
}
