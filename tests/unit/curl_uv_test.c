/*
 * Tests for common/curl_uv: libcurl's multi_socket interface on a libuv
 * loop. The server (common/http_server) and the client share one loop in
 * the test thread; the test drives it with uv_run until a callback count
 * reaches its goal (or a guard timer gives up), and every test ends by
 * closing curl_uv and the server and asserting that the loop closes clean.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/http_server.h"

#define WAIT_MS 5000		/* the longest a test waits for any one goal */
#define NBULK 50		/* transfers added at once */
#define NSEQ 20			/* transfers one after the other */
#define NIDLE 4			/* connections left idle in curl's cache */
#define NXFER NBULK

/* One transfer: its easy handle and what came back through on_done. */
struct xfer {
	CURL *easy;
	char post[32];		/* the request body */
	char want[48];		/* the body the server answers with */
	struct buf body;	/* what the write callback got */
	unsigned done;		/* on_done runs for this handle */
	CURLcode result;
	long status;
	long connects;		/* CURLINFO_NUM_CONNECTS */
	uint64_t added_ns;
	uint64_t done_ns;
};

struct fixture {
	uv_loop_t loop;
	uv_timer_t guard;	/* gives up on a goal after WAIT_MS */
	uv_timer_t later;	/* a test's delayed action */
	uv_timer_t check;	/* polls the server's connection count */
	struct curl_uv cu;
	struct http_server *srv;
	unsigned short port;
	struct xfer xfers[NXFER];
	unsigned nxfers;

	/* The goal uv_run is stopped at. */
	const unsigned *goal;
	unsigned goal_n;
	bool gave_up;

	/* Client side. */
	unsigned done;		/* on_done runs */
	unsigned closed;	/* on_closed runs */
	int polls_at_closed;	/* live uv_poll_t handles when on_closed ran */
	void (*after_done)(struct xfer *x);

	/* Server side. */
	unsigned requests;
	unsigned max_conns;	/* http_server_conn_count seen at a request */
	unsigned aborts[2];	/* by enum http_abort_reason */
	unsigned freed;		/* http_server_free's done callback */
	unsigned conns_zero;	/* the check timer saw no connection left */
	struct http_exchange *held;	/* a /hold exchange not yet ended */
	uint64_t remove_after_ms;	/* /hold: curl_uv_remove after this */
	uint64_t reset_after_ms;	/* /hold: reset the exchange after this */

	/* What the delayed curl_uv_remove saw. */
	int remove_rc;
	size_t transfers_after_remove;
	unsigned removes;
};

/* Each Criterion test runs in a process of its own: one fixture each. */
static struct fixture fx;

/* Counts one run of a callback; stops the loop when it is the goal. */
static void bump(unsigned *what)
{
	(*what)++;
	if (fx.goal == what && *what >= fx.goal_n)
		uv_stop(&fx.loop);
}

static void on_guard(uv_timer_t *t)
{
	(void)t;
	fx.gave_up = true;
	uv_stop(&fx.loop);
}

/* Runs the loop until *what reaches n. Returns false if it never did. */
static bool run_until(const unsigned *what, unsigned n)
{
	if (*what >= n)
		return true;
	fx.goal = what;
	fx.goal_n = n;
	fx.gave_up = false;
	uv_timer_start(&fx.guard, on_guard, WAIT_MS, 0);
	uv_run(&fx.loop, UV_RUN_DEFAULT);
	uv_timer_stop(&fx.guard);
	fx.goal = NULL;
	return *what >= n;
}

/* ---- the server ---- */

static void on_held_abort(struct http_exchange *ex, void *data, enum http_abort_reason why)
{
	(void)data;
	if (ex == fx.held)
		fx.held = NULL;
	bump(&fx.aborts[why]);
}

/* Finds a transfer by its easy handle (CURLOPT_PRIVATE). */
static struct xfer *xfer_of(CURL *easy)
{
	char *p = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p);
	return (struct xfer *)p;
}

static void on_later_remove(uv_timer_t *t)
{
	(void)t;
	fx.remove_rc = curl_uv_remove(&fx.cu, fx.xfers[0].easy);
	fx.transfers_after_remove = fx.cu.transfers;
	bump(&fx.removes);
}

static void on_later_reset(uv_timer_t *t)
{
	(void)t;
	cr_assert_not_null(fx.held, "the held exchange ended before the reset");
	http_exchange_close(fx.held, true);
	fx.held = NULL;
}

/*
 * /echo answers 200 "ok:" + the request body; /hold never answers (a test
 * may remove the transfer or reset the exchange from a timer); /reset
 * declares 100 bytes, sends 7 and resets the connection.
 */
static void on_request(struct http_exchange *ex, void *data)
{
	static const struct http_kv type[] = { { "Content-Type", "text/plain" } };
	const struct http_request *req = http_exchange_request(ex);
	unsigned conns = http_server_conn_count(fx.srv);
	struct buf b = { 0 };

	(void)data;
	bump(&fx.requests);
	if (conns > fx.max_conns)
		fx.max_conns = conns;
	if (strcmp(req->path, "/hold") == 0) {
		fx.held = ex;
		http_exchange_set_data(ex, NULL, on_held_abort, NULL);
		if (fx.remove_after_ms)
			uv_timer_start(&fx.later, on_later_remove, fx.remove_after_ms, 0);
		if (fx.reset_after_ms)
			uv_timer_start(&fx.later, on_later_reset, fx.reset_after_ms, 0);
	} else if (strcmp(req->path, "/reset") == 0) {
		cr_assert_eq(http_respond_head(ex, 200, type, 1, 100), 0);
		cr_assert_eq(http_write_raw(ex, "partial", 7), 0);
		http_exchange_close(ex, true);
	} else {
		cr_assert_eq(buf_printf(&b, "ok:%s", req->body), 0);
		cr_assert_eq(http_respond(ex, 200, type, 1, b.data, b.len), 0);
		buf_free(&b);
	}
}

/* ---- the client ---- */

static size_t on_write(char *p, size_t size, size_t n, void *userp)
{
	struct xfer *x = userp;

	if (buf_append(&x->body, p, size * n))
		return 0;
	return size * n;
}

static void on_done(struct curl_uv *cu, CURL *easy, CURLcode result)
{
	struct xfer *x = xfer_of(easy);

	cr_assert_eq(cu, &fx.cu);
	cr_assert_not_null(x, "on_done with a handle no test added");
	x->done++;
	x->done_ns = clock_mono_ns();
	x->result = result;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &x->status);
	curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &x->connects);
	if (fx.after_done)
		fx.after_done(x);
	bump(&fx.done);
}

/* Counts the uv_poll_t handles still open on the loop. */
static void count_polls(uv_handle_t *h, void *arg)
{
	if (h->type == UV_POLL && !uv_is_closing(h))
		(*(int *)arg)++;
}

static void on_cu_closed(struct curl_uv *cu)
{
	int polls = 0;

	cr_assert_eq(cu, &fx.cu);
	uv_walk(&fx.loop, count_polls, &polls);
	fx.polls_at_closed = polls;
	bump(&fx.closed);
}

/* Sets up transfer i: a POST of "n=i" to path (on port) expecting "ok:n=i". */
static struct xfer *xfer_setup(unsigned i, unsigned short port, const char *path)
{
	struct xfer *x = &fx.xfers[i];
	char url[128];

	cr_assert_lt(i, NXFER);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	snprintf(x->post, sizeof(x->post), "n=%u", i);
	snprintf(x->want, sizeof(x->want), "ok:n=%u", i);
	x->easy = curl_easy_init();
	cr_assert_not_null(x->easy);
	curl_easy_setopt(x->easy, CURLOPT_URL, url);
	curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->post);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	if (i >= fx.nxfers)
		fx.nxfers = i + 1;
	return x;
}

static void xfer_add(struct xfer *x)
{
	int rc;

	x->added_ns = clock_mono_ns();
	rc = curl_uv_add(&fx.cu, x->easy);
	cr_assert_eq(rc, 0, "curl_uv_add: %d", rc);
}

static double xfer_ms(const struct xfer *x)
{
	return (double)(x->done_ns - x->added_ns) / 1e6;
}

/* Asserts that x came back once, 200, with the body its POST asked for. */
static void assert_echoed(const struct xfer *x)
{
	unsigned i = (unsigned)(x - fx.xfers);

	cr_assert_eq(x->done, 1, "transfer %u came back %u times", i, x->done);
	cr_assert_eq(x->result, CURLE_OK, "transfer %u: %s", i, curl_easy_strerror(x->result));
	cr_assert_eq(x->status, 200, "transfer %u: status %ld", i, x->status);
	cr_assert_str_eq(x->body.data ? x->body.data : "", x->want, "transfer %u", i);
}

/* ---- setting up and tearing down ---- */

static void fx_start(void)
{
	struct http_server_config cfg;
	struct sockaddr_in sin;
	const struct sockaddr_in *bound;

	cr_assert_eq(uv_loop_init(&fx.loop), 0);
	cr_assert_eq(uv_timer_init(&fx.loop, &fx.guard), 0);
	cr_assert_eq(uv_timer_init(&fx.loop, &fx.later), 0);
	cr_assert_eq(uv_timer_init(&fx.loop, &fx.check), 0);
	http_server_config_default(&cfg);
	cfg.max_conns = 300;
	fx.srv = http_server_new(&fx.loop, &cfg, on_request, &fx);
	cr_assert_not_null(fx.srv);
	cr_assert_eq(uv_ip4_addr("127.0.0.1", 0, &sin), 0);
	cr_assert_eq(http_server_listen(fx.srv, (const struct sockaddr *)&sin), 0);
	bound = (const struct sockaddr_in *)http_server_addr(fx.srv);
	fx.port = ntohs(bound->sin_port);
	cr_assert_neq(fx.port, 0);
	cr_assert_eq(curl_uv_init(&fx.cu, &fx.loop, on_done), 0);
}

static void on_server_freed(void *arg)
{
	(void)arg;
	bump(&fx.freed);
}

/* Closes curl_uv (unless the test did) and the server, if still there. */
static void fx_close(void)
{
	if (!fx.cu.closed)
		curl_uv_close(&fx.cu, on_cu_closed);
	if (fx.srv) {
		http_server_free(fx.srv, on_server_freed, NULL);
		fx.srv = NULL;
	}
}

/*
 * Closes everything and runs the loop to its end: on_closed must run once,
 * the server be freed once, no handle be left open and (under ASan) no
 * memory leaked.
 */
static void fx_finish(void)
{
	unsigned i;
	int rc;

	fx_close();
	uv_close((uv_handle_t *)&fx.guard, NULL);
	uv_close((uv_handle_t *)&fx.later, NULL);
	uv_close((uv_handle_t *)&fx.check, NULL);
	rc = uv_run(&fx.loop, UV_RUN_DEFAULT);
	cr_assert_eq(rc, 0, "uv_run returned with handles still active");
	cr_assert_eq(fx.closed, 1, "on_closed ran %u times", fx.closed);
	cr_assert_eq(fx.polls_at_closed, 0, "%d poll handles open at on_closed",
		     fx.polls_at_closed);
	cr_assert_eq(fx.freed, 1);
	rc = uv_loop_close(&fx.loop);
	cr_assert_eq(rc, 0, "uv_loop_close: %s", uv_strerror(rc));
	for (i = 0; i < fx.nxfers; i++) {
		if (fx.xfers[i].easy)
			curl_easy_cleanup(fx.xfers[i].easy);
		buf_free(&fx.xfers[i].body);
	}
#ifdef __SANITIZE_ADDRESS__
	/*
	 * With curl_uv closed and every handle cleaned up, whatever it
	 * allocated is free. LeakSanitizer's own report at exit comes after
	 * Criterion has the result: check now.
	 */
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "memory leaked");
#endif
}

static void suite_init(void)
{
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
}

static void suite_fini(void)
{
	curl_global_cleanup();
}

TestSuite(curl_uv, .init = suite_init, .fini = suite_fini);

/* ---- the tests ---- */

/*
 * 50 POSTs added at once: each easy handle comes back through on_done
 * exactly once, whole and 200; then closing runs on_closed once and leaves
 * nothing on the loop.
 */
Test(curl_uv, fifty_posts_each_come_back_once, .timeout = 10)
{
	unsigned i;

	fx_start();
	for (i = 0; i < NBULK; i++)
		xfer_add(xfer_setup(i, fx.port, "/echo"));
	cr_assert_eq(fx.cu.transfers, NBULK);
	cr_assert(run_until(&fx.done, NBULK), "%u of %d transfers came back", fx.done, NBULK);
	cr_assert_eq(fx.done, NBULK);
	cr_assert_eq(fx.requests, NBULK);
	for (i = 0; i < NBULK; i++)
		assert_echoed(&fx.xfers[i]);
	cr_assert_eq(fx.cu.transfers, 0, "transfers = %zu", fx.cu.transfers);

	curl_uv_close(&fx.cu, on_cu_closed);
	cr_assert_eq(fx.closed, 0, "on_closed ran before the handles were closed");
	fx_finish();
	cr_assert_eq(fx.done, NBULK, "on_done ran during the close");
}

/* Adds the next of the NSEQ transfers when one comes back. */
static void add_next(struct xfer *x)
{
	unsigned i = (unsigned)(x - fx.xfers);

	if (i + 1 < NSEQ)
		xfer_add(&fx.xfers[i + 1]);
}

/* 20 transfers one after the other, each added from on_done, share a connection. */
Test(curl_uv, sequential_transfers_reuse_the_connection, .timeout = 10)
{
	long connects = 0;
	int polls = 0;
	unsigned i;

	fx_start();
	for (i = 0; i < NSEQ; i++)
		xfer_setup(i, fx.port, "/echo");
	fx.after_done = add_next;
	xfer_add(&fx.xfers[0]);
	cr_assert(run_until(&fx.done, NSEQ), "%u of %d transfers came back", fx.done, NSEQ);
	for (i = 0; i < NSEQ; i++) {
		assert_echoed(&fx.xfers[i]);
		connects += fx.xfers[i].connects;
	}
	cr_assert_eq(fx.xfers[0].connects, 1, "the first transfer made %ld connections",
		     fx.xfers[0].connects);
	cr_assert_leq(connects, 2, "%ld connections for %d transfers", connects, NSEQ);
	cr_assert_leq(fx.max_conns, 2, "the server saw %u connections at once", fx.max_conns);
	cr_assert_eq(fx.cu.transfers, 0);
	/* A socket curl let go of is no longer polled: at most one poll a connection. */
	uv_walk(&fx.loop, count_polls, &polls);
	cr_assert_leq(polls, (int)http_server_conn_count(fx.srv),
		      "%d poll handles open for %u connections", polls,
		      http_server_conn_count(fx.srv));
	fx_finish();
}

/* A port bound to a socket that does not listen refuses connections. */
Test(curl_uv, refused_connection_is_couldnt_connect, .timeout = 10)
{
	struct sockaddr_in sin = { 0 };
	socklen_t len = sizeof(sin);
	struct xfer *x;
	int fd;

	fx_start();
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (const struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);

	x = xfer_setup(0, ntohs(sin.sin_port), "/echo");
	xfer_add(x);
	cr_assert(run_until(&fx.done, 1), "the refused transfer never came back");
	cr_assert_eq(x->done, 1);
	cr_assert_eq(x->result, CURLE_COULDNT_CONNECT, "%d: %s", x->result,
		     curl_easy_strerror(x->result));
	cr_assert_eq(fx.cu.transfers, 0);
	cr_assert_eq(fx.requests, 0);
	close(fd);
	fx_finish();
}

/*
 * A transfer taken back with curl_uv_remove 100 ms after the server got its
 * request: on_done never runs for it, and the server sees the client go.
 */
Test(curl_uv, remove_mid_transfer_skips_on_done_and_closes_the_connection, .timeout = 10)
{
	struct xfer *x;

	fx_start();
	fx.remove_after_ms = 100;
	x = xfer_setup(0, fx.port, "/hold");
	xfer_add(x);
	cr_assert(run_until(&fx.removes, 1), "the request never reached the server");
	cr_assert_eq(fx.remove_rc, 0, "curl_uv_remove: %d", fx.remove_rc);
	cr_assert_eq(fx.transfers_after_remove, 0);
	cr_assert(run_until(&fx.aborts[HTTP_ABORT_PEER], 1),
		  "the server never saw the connection close");
	cr_assert_eq(fx.requests, 1);
	fx_finish();
	cr_assert_eq(x->done, 0, "on_done ran %u times for a removed transfer", x->done);
	cr_assert_eq(fx.done, 0);
	cr_assert_eq(fx.aborts[HTTP_ABORT_SERVER], 0);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER], 1);
}

/* CURLOPT_TIMEOUT_MS with a server that never answers: curl_uv's timer ends it. */
Test(curl_uv, timeout_ms_fires_from_the_timer, .timeout = 10)
{
	struct xfer *x;
	double ms;

	fx_start();
	x = xfer_setup(0, fx.port, "/hold");
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, 200L);
	xfer_add(x);
	cr_assert(run_until(&fx.done, 1), "the transfer never timed out");
	ms = xfer_ms(x);
	cr_assert_eq(x->done, 1);
	cr_assert_eq(x->result, CURLE_OPERATION_TIMEDOUT, "%d: %s", x->result,
		     curl_easy_strerror(x->result));
	cr_assert_geq(ms, 150, "timed out after %.1f ms", ms);
	cr_assert_leq(ms, 1000, "timed out after %.1f ms", ms);
	cr_assert_eq(fx.requests, 1);
	cr_assert_eq(fx.cu.transfers, 0);
	fx_finish();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 1);
}

/* A failure that a reset brings: not OK, and soon (never a hang). */
static void assert_reset_failure(const struct xfer *x)
{
	double ms = xfer_ms(x);

	cr_assert_eq(x->done, 1);
	cr_assert_neq(x->result, CURLE_OK, "a reset transfer succeeded: %s", x->body.data);
	cr_assert(x->result == CURLE_RECV_ERROR || x->result == CURLE_SEND_ERROR ||
		  x->result == CURLE_PARTIAL_FILE || x->result == CURLE_GOT_NOTHING,
		  "unexpected result %d: %s", x->result, curl_easy_strerror(x->result));
	cr_assert_lt(ms, 2000, "the reset took %.1f ms to end the transfer", ms);
}

/* The server resets the connection after part of its answer. */
Test(curl_uv, reset_mid_answer_fails_the_transfer, .timeout = 10)
{
	struct xfer *x;

	fx_start();
	x = xfer_setup(0, fx.port, "/reset");
	xfer_add(x);
	cr_assert(run_until(&fx.done, 1), "the reset transfer never came back");
	assert_reset_failure(x);
	cr_assert_eq(fx.cu.transfers, 0);
	fx_finish();
}

/*
 * The bytes that came before a reset are the transfer's: curl reads them
 * (the status line, 7 bytes of body) and then fails on the reset itself
 * with CURLE_RECV_ERROR. When the data and the RST are both waiting as the
 * loop polls, libuv reports a poll error, and curl_uv must still let curl
 * read the socket rather than fail the transfer unread.
 */
Test(curl_uv, reset_mid_answer_keeps_the_bytes_before_it, .timeout = 10)
{
	struct xfer *x;

	fx_start();
	x = xfer_setup(0, fx.port, "/reset");
	xfer_add(x);
	cr_assert(run_until(&fx.done, 1), "the reset transfer never came back");
	cr_assert_eq(x->done, 1);
	cr_assert_eq(x->status, 200, "the status line before the reset was lost: %ld",
		     x->status);
	cr_assert_str_eq(x->body.data ? x->body.data : "", "partial",
			 "the body bytes before the reset were lost");
	cr_assert_eq(x->result, CURLE_RECV_ERROR, "%d: %s", x->result,
		     curl_easy_strerror(x->result));
	fx_finish();
}

/*
 * The server resets the connection while curl waits for the answer with
 * nothing to read: the RST arrives as a poll error on curl's socket.
 */
Test(curl_uv, reset_while_waiting_fails_the_transfer, .timeout = 10)
{
	struct xfer *x;

	fx_start();
	fx.reset_after_ms = 50;
	x = xfer_setup(0, fx.port, "/hold");
	xfer_add(x);
	cr_assert(run_until(&fx.done, 1), "the reset transfer never came back");
	assert_reset_failure(x);
	cr_assert_eq(fx.requests, 1);
	cr_assert_eq(fx.cu.transfers, 0);
	fx_finish();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
}

/* Once closing, curl_uv refuses new transfers (and removals). */
Test(curl_uv, add_after_close_is_einval, .timeout = 10)
{
	struct xfer *x;
	int rc;

	fx_start();
	x = xfer_setup(0, fx.port, "/echo");
	curl_uv_close(&fx.cu, on_cu_closed);
	rc = curl_uv_add(&fx.cu, x->easy);
	cr_assert_eq(rc, -EINVAL, "curl_uv_add after close: %d", rc);
	cr_assert_eq(fx.cu.transfers, 0);
	rc = curl_uv_remove(&fx.cu, x->easy);
	cr_assert_eq(rc, -EINVAL, "curl_uv_remove after close: %d", rc);
	cr_assert_eq(fx.cu.transfers, 0);
	fx_finish();
	cr_assert_eq(fx.done, 0);
	cr_assert_eq(fx.requests, 0);
}

static void on_check(uv_timer_t *t)
{
	(void)t;
	if (http_server_conn_count(fx.srv) == 0) {
		uv_timer_stop(&fx.check);
		bump(&fx.conns_zero);
	}
}

/*
 * Closing with connections idle in curl's cache (keep-alive, after the
 * transfers ended): every poll handle is closed by on_closed, and the
 * server sees every connection go.
 */
Test(curl_uv, close_with_idle_cached_connections_closes_every_poll, .timeout = 10)
{
	unsigned i;

	fx_start();
	for (i = 0; i < NIDLE; i++)
		xfer_add(xfer_setup(i, fx.port, "/echo"));
	cr_assert(run_until(&fx.done, NIDLE), "%u of %d transfers came back", fx.done, NIDLE);
	for (i = 0; i < NIDLE; i++)
		cr_assert_eq(fx.xfers[i].result, CURLE_OK);
	cr_assert_eq(fx.cu.transfers, 0);
	cr_assert_gt(http_server_conn_count(fx.srv), 0, "no connection left idle to close");

	curl_uv_close(&fx.cu, on_cu_closed);
	cr_assert(run_until(&fx.closed, 1), "on_closed never ran");
	cr_assert_eq(fx.polls_at_closed, 0, "%d poll handles open at on_closed",
		     fx.polls_at_closed);
	/* No event tells the program a connection went: poll the count. */
	uv_timer_start(&fx.check, on_check, 0, 5);
	cr_assert(run_until(&fx.conns_zero, 1), "%u connections still open",
		  http_server_conn_count(fx.srv));
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
	fx_finish();
}

/* Closes curl_uv from the on_done of the last of NIDLE transfers. */
static void close_after_last(struct xfer *x)
{
	(void)x;
	if (fx.done + 1 < NIDLE)
		return;
	cr_assert_eq(fx.cu.transfers, 0);
	curl_uv_close(&fx.cu, on_cu_closed);
	cr_assert_eq(fx.closed, 0, "on_closed ran inside curl_uv_close");
}

/*
 * Closing from inside on_done, as a program does when its last transfer
 * ends: the poll handle of the socket curl just let go of is still
 * closing then, and on_closed must wait for it, and run once.
 */
Test(curl_uv, close_from_the_last_on_done, .timeout = 10)
{
	unsigned i;

	fx_start();
	for (i = 0; i < NIDLE; i++)
		xfer_add(xfer_setup(i, fx.port, "/echo"));
	fx.after_done = close_after_last;
	cr_assert(run_until(&fx.done, NIDLE), "%u of %d transfers came back", fx.done, NIDLE);
	for (i = 0; i < NIDLE; i++)
		assert_echoed(&fx.xfers[i]);
	fx_finish();
	cr_assert_eq(fx.done, NIDLE);
}

/* Counts the uv_poll_t handles that are polling (started, not closing). */
static void count_active_polls(uv_handle_t *h, void *arg)
{
	if (h->type == UV_POLL && uv_is_active(h) && !uv_is_closing(h))
		(*(int *)arg)++;
}

static unsigned waited;

static void on_waited(uv_timer_t *t)
{
	(void)t;
	bump(&waited);
}

/*
 * A kept-alive connection idle in curl's pool stays watched (no poll churn
 * per request); when the server closes it, the watch stops polling at once
 * (no busy loop on a socket curl is not reading), and the next transfer
 * opens a new connection and succeeds.
 */
Test(curl_uv, idle_connection_closed_by_the_server, .timeout = 10)
{
	struct xfer *a;
	struct xfer *b;
	int active = 0;

	fx_start();
	a = xfer_setup(0, fx.port, "/echo");
	b = xfer_setup(1, fx.port, "/echo");
	xfer_add(a);
	cr_assert(run_until(&fx.done, 1), "the first transfer never came back");
	cr_assert_eq(a->result, CURLE_OK);
	cr_assert_eq(http_server_conn_count(fx.srv), 1);

	http_server_close_conns(fx.srv, false);
	uv_timer_start(&fx.later, on_waited, 100, 0);
	cr_assert(run_until(&waited, 1));
	uv_walk(&fx.loop, count_active_polls, &active);
	cr_assert_eq(active, 0, "%d polls still active on a closed idle connection", active);

	xfer_add(b);
	cr_assert(run_until(&fx.done, 2), "the second transfer never came back");
	assert_echoed(b);
	cr_assert_eq(b->connects, 1, "the second transfer made %ld connections", b->connects);
	fx_finish();
}

/*
 * A listener on loopback whose accept queue is full (backlog 0, never
 * accepting, filled by connects of its own): a further connect hangs.
 * Returns its port; the fds go in fds[0..4] for the caller to close.
 */
static unsigned short full_listener(int fds[5])
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fds[0], 0);
	cr_assert_eq(bind(fds[0], (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(fds[0], 0), 0);
	cr_assert_eq(getsockname(fds[0], (struct sockaddr *)&sin, &len), 0);
	for (i = 1; i < 5; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert_geq(fds[i], 0);
		if (connect(fds[i], (struct sockaddr *)&sin, sizeof(sin)) != 0)
			cr_assert(errno == EINPROGRESS, "connect: %s", strerror(errno));
	}
	return ntohs(sin.sin_port);
}

/*
 * A connect that never completes and is given up (curl's connect timeout)
 * leaves nothing behind: curl 7.88 closes such a socket with a plain
 * close(), so curl_uv must not keep its watch as an idle connection — else
 * the next socket on the same fd number would be taken for it and never
 * polled. The next transfer is as quick as ever.
 */
Test(curl_uv, abandoned_connect_leaves_no_watch, .timeout = 10)
{
	struct xfer *a;
	struct xfer *b;
	int fds[5];
	int active = 0;
	size_t i;

	fx_start();
	a = xfer_setup(0, full_listener(fds), "/echo");
	curl_easy_setopt(a->easy, CURLOPT_CONNECTTIMEOUT_MS, 100L);
	xfer_add(a);
	cr_assert(run_until(&fx.done, 1), "the hanging connect never came back");
	cr_assert_eq(a->result, CURLE_OPERATION_TIMEDOUT, "%s", curl_easy_strerror(a->result));

	uv_walk(&fx.loop, count_active_polls, &active);
	cr_assert_eq(active, 0, "%d polls left after the connect was given up", active);
	for (i = 0; i < fx.cu.nfds; i++)
		cr_assert_null(fx.cu.by_fd[i], "a watch left for fd %zu", i);

	b = xfer_setup(1, fx.port, "/echo");
	xfer_add(b);
	cr_assert(run_until(&fx.done, 2), "the second transfer never came back");
	cr_assert_eq(b->result, CURLE_OK, "%s", curl_easy_strerror(b->result));
	cr_assert_lt(xfer_ms(b), 100, "the next transfer took %.1f ms", xfer_ms(b));
	for (i = 0; i < 5; i++)
		close(fds[i]);
	fx_finish();
}

Test(curl_uv, header_split, .timeout = 10)
{
	static const char status[] = "HTTP/1.1 503 Service Unavailable\r\n";
	static const char blank[] = "\r\n";
	static const char ra[] = "Retry-After: \t 2 \r\n";
	static const char empty[] = "X-Empty:\r\n";
	static const char cr[] = "Content-Type: application/json\rX-Evil: 1\r\n";
	char longline[400];
	struct curl_uv_header h;

	cr_assert_not(curl_uv_header_split(status, strlen(status), &h));
	cr_assert_not(curl_uv_header_split(blank, strlen(blank), &h));
	cr_assert(curl_uv_header_split(ra, strlen(ra), &h));
	cr_assert_eq(h.name_len, 11);
	cr_assert(curl_uv_header_is(&h, "retry-after"), "names are case-insensitive");
	cr_assert_not(curl_uv_header_is(&h, "retry-afte"));
	cr_assert_not(curl_uv_header_is(&h, NULL));
	cr_assert_str_eq(h.value, "2");
	cr_assert(curl_uv_header_split(empty, strlen(empty), &h));
	cr_assert_str_eq(h.value, "");
	cr_assert_not(curl_uv_header_split(cr, strlen(cr), &h), "a bare CR inside: not taken");
	memset(longline, 'v', sizeof(longline));
	memcpy(longline, "A: ", 3);
	cr_assert(curl_uv_header_split(longline, sizeof(longline), &h));
	cr_assert_eq(strlen(h.value), sizeof(h.value) - 1, "a long value is cut to fit");
}
