/*
 * Tests for common/http_server: a real server on loopback, its libuv loop in
 * a thread of its own, driven from the test thread by libcurl and by raw
 * sockets (to see the bytes on the wire: pipelining, half-sent requests,
 * resets). Handlers run on the loop thread and record what they saw under
 * a mutex; every test ends by freeing the server on its loop thread and
 * checking that the loop closes clean.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "common/buf.h"
#include "common/clock.h"
#include "common/http_server.h"
#include "common/log.h"

#define WAIT_MS 5000		/* the longest a test waits for any one event */
#define BIG_BODY (8u << 20)	/* more than the kernel's socket buffers take */
#define SMALL_RCVBUF 65536	/* a client socket that cannot absorb much */

/* ---- the server under test, on its own loop thread ---- */

/* What a handler saw of the last request (see record_request). */
struct seen {
	char method[16];
	char url[128];
	char path[128];
	char query[128];
	bool has_query;
	char custom[64];	/* X-Custom, looked up as "x-CUSTOM" */
	char host[64];		/* looked up as "HOST" */
	char content_type[64];	/* looked up as "content-type" */
	size_t nheaders;
	char body[8192];
	size_t body_len;
	bool body_terminated;
	bool server_data_ok;	/* both server data pointers were &fx */
	unsigned short http_minor;
	bool keep_alive;
	unsigned conns;		/* http_server_conn_count at dispatch */
};

struct fixture {
	uv_loop_t loop;
	uv_async_t wake;	/* runs fx.call on the loop thread */
	pthread_t thread;
	struct http_server *srv;	/* once running, loop thread only */
	unsigned short port;

	pthread_mutex_t mu;
	pthread_cond_t cond;	/* broadcast on every change under mu */
	void (*call)(void *arg);
	void *call_arg;
	unsigned calls_done;
	unsigned freed;		/* http_server_free's done callback ran */
	unsigned drained;	/* http_server_drain's done callback ran */

	/* Under mu: what the handlers saw and did. */
	unsigned requests;
	unsigned answered;
	unsigned in_flight;	/* dispatched, not yet answered */
	unsigned max_in_flight;
	unsigned aborts[2];	/* by enum http_abort_reason */
	unsigned drains;
	unsigned late_writes;	/* handler writes after on_abort: must stay 0 */
	unsigned write_errors;
	unsigned stream_done;
	int rcs[32];		/* return codes a handler recorded, in order */
	unsigned nrcs;
	size_t queued;		/* http_exchange_queued after the writes */
	char order[256];	/* paths in dispatch order, space-separated */
	struct seen seen;
};

/* Each Criterion test runs in a process of its own: one fixture each. */
static struct fixture fx;

static void fx_lock(void)
{
	pthread_mutex_lock(&fx.mu);
}

static void fx_unlock(void)
{
	pthread_cond_broadcast(&fx.cond);
	pthread_mutex_unlock(&fx.mu);
}

/* Waits until *what >= n. Returns false after timeout_ms. */
static bool fx_wait(const unsigned *what, unsigned n, int timeout_ms)
{
	struct timespec dl;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fx.mu);
	while (*what < n) {
		if (pthread_cond_timedwait(&fx.cond, &fx.mu, &dl) == ETIMEDOUT)
			break;
	}
	ok = *what >= n;
	pthread_mutex_unlock(&fx.mu);
	return ok;
}

/* Reads a counter the loop thread writes. */
static unsigned fx_get(const unsigned *what)
{
	unsigned v;

	pthread_mutex_lock(&fx.mu);
	v = *what;
	pthread_mutex_unlock(&fx.mu);
	return v;
}

static void on_wake(uv_async_t *a)
{
	void (*fn)(void *);
	void *arg;

	(void)a;
	pthread_mutex_lock(&fx.mu);
	fn = fx.call;
	arg = fx.call_arg;
	fx.call = NULL;
	pthread_mutex_unlock(&fx.mu);
	if (fn)
		fn(arg);
	fx_lock();
	if (fn)
		fx.calls_done++;
	fx_unlock();
}

/* Runs fn(arg) on the loop thread and waits for it to return. */
static void fx_call(void (*fn)(void *), void *arg)
{
	unsigned target;

	fx_lock();
	fx.call = fn;
	fx.call_arg = arg;
	target = fx.calls_done + 1;
	fx_unlock();
	uv_async_send(&fx.wake);
	cr_assert(fx_wait(&fx.calls_done, target, WAIT_MS), "the loop thread did not run a call");
}

static void *loop_main(void *arg)
{
	(void)arg;
	uv_run(&fx.loop, UV_RUN_DEFAULT);
	return NULL;
}

/* Small limits; timeouts long enough not to matter unless a test sets them. */
static void test_config(struct http_server_config *cfg)
{
	http_server_config_default(cfg);
	cfg->max_header_bytes = 1024;
	cfg->max_body_bytes = 4096;
	cfg->header_timeout_ms = 60000;
	cfg->idle_timeout_ms = 60000;
	cfg->max_conns = 300;
	cfg->backlog = 512;
}

static unsigned short port_of(const struct sockaddr *sa)
{
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* Starts a server on 127.0.0.1:0 with on_request, its loop in a thread. */
static void fx_start(const struct http_server_config *cfg, http_request_cb on_request)
{
	struct sockaddr_in sin;
	pthread_condattr_t ca;

	pthread_mutex_init(&fx.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fx.cond, &ca);
	pthread_condattr_destroy(&ca);
	cr_assert_eq(uv_loop_init(&fx.loop), 0);
	cr_assert_eq(uv_async_init(&fx.loop, &fx.wake, on_wake), 0);
	fx.srv = http_server_new(&fx.loop, cfg, on_request, &fx);
	cr_assert_not_null(fx.srv);
	cr_assert_eq(uv_ip4_addr("127.0.0.1", 0, &sin), 0);
	cr_assert_eq(http_server_listen(fx.srv, (const struct sockaddr *)&sin), 0);
	fx.port = port_of(http_server_addr(fx.srv));
	cr_assert_neq(fx.port, 0);
	cr_assert(http_server_is_listening(fx.srv));
	cr_assert_eq(pthread_create(&fx.thread, NULL, loop_main, NULL), 0);
}

static void on_server_freed(void *arg)
{
	(void)arg;
	fx_lock();
	fx.freed++;
	fx_unlock();
	uv_close((uv_handle_t *)&fx.wake, NULL);
}

static void stop_on_loop(void *arg)
{
	(void)arg;
	http_server_free(fx.srv, on_server_freed, NULL);
	fx.srv = NULL;
}

/*
 * Frees the server on its loop thread, waits for the loop to run out of
 * handles, and checks that it closes clean.
 */
static void fx_stop(void)
{
	fx_call(stop_on_loop, NULL);
	cr_assert(fx_wait(&fx.freed, 1, WAIT_MS), "http_server_free never called done");
	cr_assert_eq(pthread_join(fx.thread, NULL), 0);
	cr_assert_eq(fx.freed, 1);
	cr_assert_eq(uv_loop_close(&fx.loop), 0, "the loop still has handles");
	pthread_cond_destroy(&fx.cond);
	pthread_mutex_destroy(&fx.mu);
#ifdef __SANITIZE_ADDRESS__
	/*
	 * With the server gone, whatever it allocated is free. LeakSanitizer's
	 * own report at exit comes after Criterion has the result: check now.
	 */
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "the server leaked memory");
#endif
}

/* ---- loop-thread operations, run through fx_call ---- */

struct loop_op {
	bool reset;
	int rc;
	unsigned count;
	bool listening;
	unsigned short port;
	uint64_t rejected;
};

static void op_close_conns(void *arg)
{
	struct loop_op *op = arg;

	http_server_close_conns(fx.srv, op->reset);
}

static void op_conn_count(void *arg)
{
	struct loop_op *op = arg;

	op->count = http_server_conn_count(fx.srv);
}

static void op_rejected(void *arg)
{
	struct loop_op *op = arg;

	op->rejected = http_server_rejected(fx.srv);
}

static void op_serve_fd(void *arg)
{
	struct loop_op *op = arg;

	op->rc = http_server_serve_fd(fx.srv, (int)op->count);
}

static void op_unlisten(void *arg)
{
	struct loop_op *op = arg;

	http_server_unlisten(fx.srv);
	op->listening = http_server_is_listening(fx.srv);
}

static void on_drained(void *arg)
{
	(void)arg;
	fx_lock();
	fx.drained++;
	fx_unlock();
}

/* Starts a drain; op->count is how often done had run when it returned. */
static void op_drain(void *arg)
{
	struct loop_op *op = arg;

	http_server_drain(fx.srv, on_drained, NULL);
	op->listening = http_server_is_listening(fx.srv);
	op->count = fx_get(&fx.drained);
}

static void op_relisten(void *arg)
{
	struct loop_op *op = arg;

	op->rc = http_server_relisten(fx.srv);
	op->listening = http_server_is_listening(fx.srv);
	op->port = port_of(http_server_addr(fx.srv));
}

/* ---- handlers' bookkeeping (loop thread) ---- */

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "(null)");
}

/* Copies what the program sees of the request into fx.seen. */
static void record_request(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);
	struct seen *s = &fx.seen;

	fx_lock();
	fx.requests++;
	copy_str(s->method, sizeof(s->method), req->method);
	copy_str(s->url, sizeof(s->url), req->url);
	copy_str(s->path, sizeof(s->path), req->path);
	s->has_query = req->query != NULL;
	copy_str(s->query, sizeof(s->query), req->query);
	copy_str(s->custom, sizeof(s->custom), http_request_header(req, "x-CUSTOM"));
	copy_str(s->host, sizeof(s->host), http_request_header(req, "HOST"));
	copy_str(s->content_type, sizeof(s->content_type),
		 http_request_header(req, "content-type"));
	s->nheaders = req->nheaders;
	s->body_len = req->body_len;
	if (req->body_len < sizeof(s->body))
		memcpy(s->body, req->body, req->body_len + 1);
	s->body_terminated = req->body && req->body[req->body_len] == '\0';
	s->server_data_ok = data == &fx && http_exchange_server_data(ex) == &fx;
	s->http_minor = req->http_minor;
	s->keep_alive = req->keep_alive;
	s->conns = http_server_conn_count(fx.srv);
	fx_unlock();
}

static void record_rc(int rc)
{
	fx_lock();
	if (fx.nrcs < sizeof(fx.rcs) / sizeof(fx.rcs[0]))
		fx.rcs[fx.nrcs++] = rc;
	fx_unlock();
}

static void record_abort(enum http_abort_reason why)
{
	fx_lock();
	fx.aborts[why]++;
	fx_unlock();
}

static void bump(unsigned *what)
{
	fx_lock();
	(*what)++;
	fx_unlock();
}

static int respond_text(struct http_exchange *ex, int status, const char *body)
{
	static const struct http_kv h[] = { { "Content-Type", "text/plain" } };

	return http_respond(ex, status, h, 1, body, strlen(body));
}

static void on_abort_count(struct http_exchange *ex, void *data,
			   enum http_abort_reason why)
{
	(void)ex;
	(void)data;
	record_abort(why);
}

static void on_handle_free(uv_handle_t *h)
{
	free(h);
}

/* Out of memory on the loop thread: Criterion asserts belong to the test thread. */
static void *must(void *p)
{
	if (!p)
		abort();
	return p;
}

/* ---- handlers ---- */

/* Records the request and answers 200 "got:<body>" with an X-Method header. */
static void on_echo(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);
	const struct http_kv h[] = {
		{ "Content-Type", "text/plain" },
		{ "X-Method", req->method },
	};
	struct buf b = { 0 };

	record_request(ex, data);
	if (buf_printf(&b, "got:%s", req->body))
		abort();
	http_respond(ex, 200, h, 2, b.data, b.len);
	buf_free(&b);
}

/* An answer a timer sends later; its exchange may be aborted first. */
struct later {
	uv_timer_t timer;	/* first: the struct is freed with the handle */
	struct http_exchange *ex;
	char body[128];
};

static void on_later_abort(struct http_exchange *ex, void *data,
			   enum http_abort_reason why)
{
	struct later *l = data;

	(void)ex;
	record_abort(why);
	uv_timer_stop(&l->timer);
	uv_close((uv_handle_t *)&l->timer, on_handle_free);
}

static void answer_now(struct http_exchange *ex, const char *body)
{
	/* Counted first: answering may dispatch the next pipelined request. */
	fx_lock();
	fx.in_flight--;
	fx.answered++;
	fx_unlock();
	respond_text(ex, 200, body);
}

static void on_later_timer(uv_timer_t *t)
{
	struct later *l = (struct later *)t;

	answer_now(l->ex, l->body);
	uv_close((uv_handle_t *)t, on_handle_free);
}

static void answer_later(struct http_exchange *ex, uint64_t ms, const char *body)
{
	struct later *l = must(calloc(1, sizeof(*l)));

	l->ex = ex;
	copy_str(l->body, sizeof(l->body), body);
	uv_timer_init(&fx.loop, &l->timer);
	http_exchange_set_data(ex, l, on_later_abort, NULL);
	uv_timer_start(&l->timer, on_later_timer, ms, 0);
}

/*
 * Answers with the path as the body: paths under /slow after 100 ms from a
 * timer, the rest at once. Tracks how many requests are in flight.
 */
static void on_path(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);
	size_t used;

	(void)data;
	fx_lock();
	fx.requests++;
	fx.in_flight++;
	if (fx.in_flight > fx.max_in_flight)
		fx.max_in_flight = fx.in_flight;
	used = strlen(fx.order);
	snprintf(fx.order + used, sizeof(fx.order) - used, "%s%s", used ? " " : "", req->path);
	fx_unlock();
	if (strncmp(req->path, "/slow", 5) == 0)
		answer_later(ex, 100, req->path);
	else
		answer_now(ex, req->path);
}

/* /hold is never answered (until aborted); anything else gets "ok". */
static void on_hold(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);

	record_request(ex, data);
	if (strcmp(req->path, "/hold") == 0)
		http_exchange_set_data(ex, NULL, on_abort_count, NULL);
	else
		respond_text(ex, 200, "ok");
}

/* The bytes of the pattern stream: position i holds 'a' + i % 23. */
static void pattern_fill(char *p, size_t offset, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)('a' + (offset + i) % 23);
}

/* Chunk sizes around the 4096-byte one-write limit of http_stream_write. */
static const size_t pattern_sizes[] = { 1, 10, 100, 4000, 4089, 4090, 4096, 5000, 70000, 3 };
#define NPATTERN (sizeof(pattern_sizes) / sizeof(pattern_sizes[0]))

static size_t pattern_total(void)
{
	size_t i;
	size_t n = 0;

	for (i = 0; i < NPATTERN; i++)
		n += pattern_sizes[i];
	return n;
}

/* A stream written from a timer, one chunk of the pattern per tick. */
struct streamer {
	uv_timer_t timer;	/* first: the struct is freed with the handle */
	struct http_exchange *ex;
	size_t next;
	size_t offset;
};

static void on_streamer_abort(struct http_exchange *ex, void *data,
			      enum http_abort_reason why)
{
	struct streamer *s = data;

	(void)ex;
	record_abort(why);
	uv_timer_stop(&s->timer);
	uv_close((uv_handle_t *)&s->timer, on_handle_free);
}

static void on_streamer_tick(uv_timer_t *t)
{
	struct streamer *s = (struct streamer *)t;
	size_t n;
	char *p;
	int rc;

	if (s->next == NPATTERN) {
		rc = http_stream_end(s->ex);
		record_rc(rc);
		bump(&fx.stream_done);
		uv_close((uv_handle_t *)t, on_handle_free);
		return;
	}
	n = pattern_sizes[s->next++];
	p = must(malloc(n));
	pattern_fill(p, s->offset, n);
	s->offset += n;
	rc = http_stream_write(s->ex, p, n);
	free(p);
	if (rc) {
		record_rc(rc);
		bump(&fx.write_errors);
		uv_close((uv_handle_t *)t, on_handle_free);
	}
}

/*
 * /hello streams "hello" and " world" at once; /pattern streams the
 * pattern chunks from a timer, one every 2 ms.
 */
static void on_stream(struct http_exchange *ex, void *data)
{
	static const struct http_kv h[] = { { "Content-Type", "text/plain" } };
	const struct http_request *req = http_exchange_request(ex);
	struct streamer *s;

	record_request(ex, data);
	if (strcmp(req->path, "/hello") == 0) {
		record_rc(http_stream_begin(ex, 200, h, 1));
		record_rc(http_stream_write(ex, "hello", 5));
		record_rc(http_stream_write(ex, "", 0));
		record_rc(http_stream_write(ex, " world", 6));
		record_rc(http_stream_end(ex));
		return;
	}
	if (strcmp(req->path, "/trailer") == 0) {
		static const struct http_kv tr[] = { { "x-cost", "0.5" }, { "x-n", "2" } };

		record_rc(http_stream_begin(ex, 200, h, 1));
		record_rc(http_stream_write(ex, "hello", 5));
		record_rc(http_stream_end_trailers(ex, tr, 2));
		return;
	}
	s = must(calloc(1, sizeof(*s)));
	s->ex = ex;
	uv_timer_init(&fx.loop, &s->timer);
	http_exchange_set_data(ex, s, on_streamer_abort, NULL);
	record_rc(http_stream_begin(ex, 200, NULL, 0));
	uv_timer_start(&s->timer, on_streamer_tick, 2, 2);
}

/* A stream that writes "tick" now and then one more every second. */
struct ticker {
	uv_timer_t timer;	/* first: the struct is freed with the handle */
	struct http_exchange *ex;
	bool aborted;
};

static void on_ticker_abort(struct http_exchange *ex, void *data,
			    enum http_abort_reason why)
{
	struct ticker *t = data;

	(void)ex;
	t->aborted = true;
	record_abort(why);
	uv_timer_stop(&t->timer);
	uv_close((uv_handle_t *)&t->timer, on_handle_free);
}

static void on_tick(uv_timer_t *h)
{
	struct ticker *t = (struct ticker *)h;

	if (t->aborted) {
		bump(&fx.late_writes);
		return;
	}
	if (http_stream_write(t->ex, "tick", 4)) {
		bump(&fx.write_errors);
		uv_timer_stop(h);
		uv_close((uv_handle_t *)h, on_handle_free);
	}
}

static void on_ticks(struct http_exchange *ex, void *data)
{
	struct ticker *t = must(calloc(1, sizeof(*t)));

	record_request(ex, data);
	t->ex = ex;
	uv_timer_init(&fx.loop, &t->timer);
	http_exchange_set_data(ex, t, on_ticker_abort, NULL);
	if (http_stream_begin(ex, 200, NULL, 0) || http_stream_write(ex, "tick", 4)) {
		bump(&fx.write_errors);
		uv_close((uv_handle_t *)&t->timer, on_handle_free);
		return;
	}
	uv_timer_start(&t->timer, on_tick, 1000, 1000);
}

/* The head of a chunked stream begun with no headers of the program's. */
static const char chunked_head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
#define CHUNKED_HEAD_LEN (sizeof(chunked_head) - 1)

/*
 * Fault injection. /respond: reset after 100 bytes of a 4000-byte answer.
 * /stream: reset 20 bytes into the body of a stream of small chunks.
 * /big-chunk: reset 1000 bytes into the body, inside one 8000-byte chunk.
 */
static void on_reset(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);
	static char body[8000];

	record_request(ex, data);
	memset(body, 'x', sizeof(body));
	if (strcmp(req->path, "/respond") == 0) {
		http_exchange_set_reset_after(ex, 100);
		record_rc(http_respond(ex, 200, NULL, 0, body, 4000));
	} else if (strcmp(req->path, "/stream") == 0) {
		http_exchange_set_reset_after(ex, CHUNKED_HEAD_LEN + 20);
		record_rc(http_stream_begin(ex, 200, NULL, 0));
		record_rc(http_stream_write(ex, "abcd", 4));		/* 9 bytes */
		record_rc(http_stream_write(ex, "0123456789", 10));	/* 15: crosses */
		record_rc(http_stream_write(ex, "late", 4));
	} else {
		http_exchange_set_reset_after(ex, CHUNKED_HEAD_LEN + 1000);
		record_rc(http_stream_begin(ex, 200, NULL, 0));
		record_rc(http_stream_write(ex, body, sizeof(body)));
	}
	bump(&fx.answered);
}

static const char partial[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial";

/* Writes a truncated answer raw, then closes: /fin with a FIN, else a RST. */
static void on_close(struct http_exchange *ex, void *data)
{
	const struct http_request *req = http_exchange_request(ex);

	record_request(ex, data);
	record_rc(http_write_raw(ex, partial, sizeof(partial) - 1));
	http_exchange_close(ex, strcmp(req->path, "/fin") != 0);
}

/* Streams 16 MiB at once, and ends the stream when the queue drains. */
#define DRAIN_CHUNK (1u << 20)
#define DRAIN_CHUNKS 16

static void on_drain_end(struct http_exchange *ex, void *data)
{
	(void)data;
	bump(&fx.drains);
	record_rc(http_stream_end(ex));
}

static void on_flood(struct http_exchange *ex, void *data)
{
	static char chunk[DRAIN_CHUNK];
	int rc;
	int i;

	pattern_fill(chunk, 0, sizeof(chunk));
	http_exchange_set_data(ex, NULL, on_abort_count, on_drain_end);
	rc = http_stream_begin(ex, 200, NULL, 0);
	for (i = 0; i < DRAIN_CHUNKS && !rc; i++)
		rc = http_stream_write(ex, chunk, sizeof(chunk));
	record_rc(rc);
	fx_lock();
	fx.queued = rc ? 0 : http_exchange_queued(ex);
	fx_unlock();
	record_request(ex, data);
}

/* Answers BIG_BODY bytes at once with http_respond. */
static void on_big(struct http_exchange *ex, void *data)
{
	char *body = must(malloc(BIG_BODY));

	pattern_fill(body, 0, BIG_BODY);
	record_rc(http_respond(ex, 200, NULL, 0, body, BIG_BODY));
	free(body);
	record_request(ex, data);
}

/* ---- raw-socket client ---- */

static double now_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

/*
 * Connects to the server, with a fixed small receive buffer when rcvbuf > 0.
 * Returns 0 with the socket in *fd, or the errno of the failed connect.
 */
static int tcp_open(int rcvbuf, int *fd)
{
	struct sockaddr_in sin;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err = 0;

	cr_assert(s >= 0, "socket: %s", strerror(errno));
	if (rcvbuf > 0)
		cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(fx.port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (const struct sockaddr *)&sin, sizeof(sin)) != 0) {
		err = errno;
		close(s);
		s = -1;
	}
	*fd = s;
	return err;
}

static int tcp_connect(void)
{
	int fd;
	int err = tcp_open(0, &fd);

	cr_assert_eq(err, 0, "connect: %s", strerror(err));
	return fd;
}

static void send_bytes(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		cr_assert(n > 0, "send: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void send_str(int fd, const char *s)
{
	send_bytes(fd, s, strlen(s));
}

/* Closes with a TCP RST (SO_LINGER 0). */
static void close_with_reset(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/*
 * Receives what arrives within timeout_ms and appends it to out. Returns
 * the byte count, 0 at EOF, -errno on error, -ETIMEDOUT when nothing came.
 */
static ssize_t recv_some(int fd, struct buf *out, int timeout_ms)
{
	char tmp[65536];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int rc;

	rc = poll(&p, 1, timeout_ms > 0 ? timeout_ms : 0);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc < 0)
		return -errno;
	n = recv(fd, tmp, sizeof(tmp), 0);
	if (n < 0)
		return -errno;
	if (n > 0 && buf_append(out, tmp, (size_t)n))
		return -ENOMEM;
	return n;
}

static int ms_left(double deadline)
{
	double left = deadline - now_ms();

	return left > 0 ? (int)left + 1 : 0;
}

/* Reads until the peer closes. Returns 0 at EOF, else -errno or -ETIMEDOUT. */
static int recv_to_end(int fd, struct buf *out, int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;

	for (;;) {
		ssize_t n = recv_some(fd, out, ms_left(deadline));

		if (n <= 0)
			return (int)n;
	}
}

/* Reads until out holds at least len bytes. Returns 0, or what stopped it. */
static int recv_len(int fd, struct buf *out, size_t len, int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;

	while (out->len < len) {
		ssize_t n = recv_some(fd, out, ms_left(deadline));

		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return (int)n;
	}
	return 0;
}

/* Reads until needle is in out. Returns 0, or what stopped it. */
static int recv_until(int fd, struct buf *out, const char *needle, int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;

	while (!out->data || !strstr(out->data, needle)) {
		ssize_t n = recv_some(fd, out, ms_left(deadline));

		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return (int)n;
	}
	return 0;
}

/* One response as read off a raw socket. */
struct response {
	int status;
	char head[1024];	/* status line and headers, blank line included */
	const char *body;	/* into the receive buffer */
	size_t body_len;
};

/*
 * Parses one response at data (framed by Content-Length; none for 1xx).
 * Returns the bytes it spans, 0 when incomplete, -1 when malformed.
 */
static long parse_response(const char *data, size_t len, struct response *r)
{
	const char *end = strstr(data, "\r\n\r\n");
	const char *cl;
	size_t hlen;

	if (!end)
		return 0;
	hlen = (size_t)(end + 4 - data);
	if (hlen >= sizeof(r->head))
		return -1;
	memcpy(r->head, data, hlen);
	r->head[hlen] = '\0';
	if (sscanf(r->head, "HTTP/1.1 %d ", &r->status) != 1)
		return -1;
	r->body_len = 0;
	if (r->status >= 200) {
		cl = strstr(r->head, "\r\nContent-Length: ");
		if (!cl)
			return -1;
		r->body_len = strtoul(cl + 18, NULL, 10);
	}
	if (len < hlen + r->body_len)
		return 0;
	r->body = data + hlen;
	return (long)(hlen + r->body_len);
}

/*
 * Reads until n whole responses are in out and parses them into rs.
 * Returns how many were parsed (n unless the peer stopped or time ran out).
 */
static size_t recv_responses(int fd, struct buf *out, struct response *rs, size_t n,
			     int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;
	size_t got = 0;

	for (;;) {
		size_t off = 0;
		long used;

		got = 0;
		while (got < n && out->data && off < out->len) {
			used = parse_response(out->data + off, out->len - off, &rs[got]);
			if (used <= 0)
				break;
			off += (size_t)used;
			got++;
		}
		if (got == n || recv_some(fd, out, ms_left(deadline)) <= 0)
			return got;
	}
}

/* True when the head holds exactly this header line. */
static bool has_header(const struct response *r, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\r\n%s\r\n", line);
	return strstr(r->head, want) != NULL;
}

static bool body_is(const struct response *r, const char *s)
{
	return r->body_len == strlen(s) && memcmp(r->body, s, r->body_len) == 0;
}

/* True when body is {"error":{"message":"…",…}} with a message. */
static bool is_openai_error(const char *body, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
	bool ok = cJSON_IsString(msg) && msg->valuestring[0] != '\0';

	cJSON_Delete(root);
	return ok;
}

/*
 * Sends req on a new connection, expects one JSON error with status and
 * "Connection: close", then the server's close; the handler is not called.
 */
static void expect_error_and_close(const char *req, size_t len, int status)
{
	struct buf out = { 0 };
	struct response r;
	int fd = tcp_connect();
	int rc;

	send_bytes(fd, req, len);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "the server did not close: %s", strerror(-rc));
	cr_assert_gt(parse_response(out.data ? out.data : "", out.len, &r), 0,
		     "no whole answer: %s", out.data ? out.data : "");
	cr_assert_eq(r.status, status, "%s", r.head);
	cr_assert(has_header(&r, "Content-Type: application/json"), "%s", r.head);
	cr_assert(has_header(&r, "Connection: close"), "%s", r.head);
	cr_assert(is_openai_error(r.body, r.body_len), "body: %.*s", (int)r.body_len, r.body);
	cr_assert_eq(fx_get(&fx.requests), 0, "the handler saw a rejected request");
	close(fd);
	buf_free(&out);
}

/* ---- curl client ---- */

struct fetch {
	CURLcode code;
	long status;
	long connects;
	struct buf body;
	struct buf head;
	char err[CURL_ERROR_SIZE];
};

static size_t on_curl_data(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	return buf_append(b, p, size * n) ? 0 : size * n;
}

static void curl_prepare(CURL *h, const char *path, struct buf *body, struct buf *head)
{
	char url[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", fx.port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 8000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_curl_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_curl_data);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, head);
}

/* A GET (post NULL) or POST on h; the result in f (free with fetch_free). */
static void fetch(CURL *h, const char *path, const char *post,
		  struct curl_slist *hdrs, struct fetch *f)
{
	memset(f, 0, sizeof(*f));
	curl_prepare(h, path, &f->body, &f->head);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, f->err);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (post) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
	f->code = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &f->status);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &f->connects);
	/* Empty appends make both buffers valid C strings. */
	buf_append(&f->body, "", 0);
	buf_append(&f->head, "", 0);
}

static void fetch_free(struct fetch *f)
{
	buf_free(&f->body);
	buf_free(&f->head);
}

/* ---- the tests ---- */

static void suite_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void suite_fini(void)
{
	curl_global_cleanup();
}

TestSuite(http_server, .init = suite_init, .fini = suite_fini);

Test(http_server, get_and_post_reach_the_handler, .timeout = 10)
{
	struct http_server_config cfg;
	struct curl_slist *hdrs = NULL;
	struct fetch f;
	char host[64];
	CURL *h;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	h = curl_easy_init();
	hdrs = curl_slist_append(hdrs, "X-Custom: Hello There");

	fetch(h, "/v1/models?limit=5&x=y", NULL, hdrs, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert_str_eq(f.body.data, "got:");
	cr_assert(strstr(f.head.data, "\r\nContent-Length: 4\r\n"), "%s", f.head.data);
	cr_assert(strstr(f.head.data, "\r\nX-Method: GET\r\n"), "%s", f.head.data);
	cr_assert(strstr(f.head.data, "\r\nContent-Type: text/plain\r\n"), "%s", f.head.data);
	cr_assert_eq(fx_get(&fx.requests), 1);
	cr_assert_str_eq(fx.seen.method, "GET");
	cr_assert_str_eq(fx.seen.url, "/v1/models?limit=5&x=y");
	cr_assert_str_eq(fx.seen.path, "/v1/models");
	cr_assert(fx.seen.has_query);
	cr_assert_str_eq(fx.seen.query, "limit=5&x=y");
	cr_assert_str_eq(fx.seen.custom, "Hello There");
	snprintf(host, sizeof(host), "127.0.0.1:%u", fx.port);
	cr_assert_str_eq(fx.seen.host, host);
	cr_assert_eq(fx.seen.body_len, 0);
	cr_assert(fx.seen.body_terminated);
	cr_assert(fx.seen.server_data_ok);
	cr_assert_eq(fx.seen.http_minor, 1);
	cr_assert(fx.seen.keep_alive);
	fetch_free(&f);

	curl_slist_free_all(hdrs);
	hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	fetch(h, "/v1/chat/completions", "{\"model\":\"m\",\"n\":1}", hdrs, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert_str_eq(f.body.data, "got:{\"model\":\"m\",\"n\":1}");
	cr_assert(strstr(f.head.data, "\r\nContent-Length: 23\r\n"), "%s", f.head.data);
	cr_assert(strstr(f.head.data, "\r\nX-Method: POST\r\n"), "%s", f.head.data);
	cr_assert_eq(fx_get(&fx.requests), 2);
	cr_assert_str_eq(fx.seen.method, "POST");
	cr_assert_str_eq(fx.seen.path, "/v1/chat/completions");
	cr_assert_not(fx.seen.has_query);
	cr_assert_str_eq(fx.seen.content_type, "application/json");
	cr_assert_str_eq(fx.seen.custom, "(null)");
	cr_assert_eq(fx.seen.body_len, 19);
	cr_assert_str_eq(fx.seen.body, "{\"model\":\"m\",\"n\":1}");
	cr_assert(fx.seen.body_terminated);
	fetch_free(&f);

	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	fx_stop();
}

Test(http_server, keep_alive_reuses_one_connection, .timeout = 10)
{
	struct http_server_config cfg;
	struct fetch f;
	CURL *h;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	h = curl_easy_init();

	fetch(h, "/one", NULL, NULL, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert_eq(f.connects, 1);
	cr_assert_null(strstr(f.head.data, "Connection: close"), "%s", f.head.data);
	fetch_free(&f);

	fetch(h, "/two", NULL, NULL, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert_eq(f.connects, 0, "the second request opened a new connection");
	cr_assert_eq(fx_get(&fx.requests), 2);
	cr_assert_str_eq(fx.seen.path, "/two");
	cr_assert_eq(fx.seen.conns, 1, "server-side connections: %u", fx.seen.conns);
	fetch_free(&f);

	curl_easy_cleanup(h);
	fx_stop();
}

Test(http_server, http10_closes_unless_kept_alive, .timeout = 10)
{
	struct http_server_config cfg;
	struct response r[2];
	struct buf out = { 0 };
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_echo);

	/* Plain HTTP/1.0: "Connection: close", then the server closes. */
	fd = tcp_connect();
	send_str(fd, "GET /old HTTP/1.0\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "the server did not close: %s", strerror(-rc));
	cr_assert_gt(parse_response(out.data, out.len, &r[0]), 0, "%s", out.data);
	cr_assert_eq(r[0].status, 200);
	cr_assert(has_header(&r[0], "Connection: close"), "%s", r[0].head);
	cr_assert(has_header(&r[0], "Content-Length: 4"), "%s", r[0].head);
	cr_assert(body_is(&r[0], "got:"));
	cr_assert_eq(fx_get(&fx.requests), 1);
	cr_assert_eq(fx.seen.http_minor, 0);
	cr_assert_not(fx.seen.keep_alive);
	close(fd);
	buf_reset(&out);

	/* HTTP/1.0 asking for keep-alive gets it, and a second answer. */
	fd = tcp_connect();
	send_str(fd, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	cr_assert_eq(recv_responses(fd, &out, r, 1, WAIT_MS), 1);
	cr_assert(has_header(&r[0], "Connection: keep-alive"), "%s", r[0].head);
	send_str(fd, "GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	cr_assert_eq(recv_responses(fd, &out, r, 2, WAIT_MS), 2);
	cr_assert_eq(r[1].status, 200);
	cr_assert_eq(fx_get(&fx.requests), 3);
	close(fd);
	buf_free(&out);
	fx_stop();
}

/*
 * An answer to HEAD is headers only. The body the program gave
 * http_respond must not be sent: on a kept-alive connection it would be
 * read as the start of the next answer.
 */
Test(http_server, head_answer_has_no_body, .timeout = 10)
{
	static const char two[] =
		"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"
		"GET /g HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct buf out = { 0 };
	const char *end;
	char first[256] = "";
	char next[256] = "";
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	fd = tcp_connect();
	send_bytes(fd, two, sizeof(two) - 1);
	rc = recv_until(fd, &out, "\r\nX-Method: GET\r\n", WAIT_MS);
	close(fd);
	/* Copied out so that a failure below leaks nothing. */
	if (out.data) {
		snprintf(first, sizeof(first), "%s", out.data);
		end = strstr(out.data, "\r\n\r\n");
		if (end)
			snprintf(next, sizeof(next), "%s", end + 4);
	}
	buf_free(&out);
	cr_assert_eq(rc, 0, "no answer to the GET: %s", first);
	cr_assert_eq(fx_get(&fx.requests), 2);
	cr_assert(strncmp(first, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", first);
	cr_assert(strncmp(next, "HTTP/1.1 200 OK\r\n", 17) == 0,
		  "bytes between the HEAD answer and the next: %s", next);
	fx_stop();
}

Test(http_server, pipelined_requests_answered_in_order, .timeout = 10)
{
	static const char two[] =
		"GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
		"GET /second?q=1 HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct response r[2];
	struct buf out = { 0 };
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	fd = tcp_connect();
	send_bytes(fd, two, sizeof(two) - 1);
	cr_assert_eq(recv_responses(fd, &out, r, 2, WAIT_MS), 2, "%s", out.data);
	cr_assert(body_is(&r[0], "/first"), "%.*s", (int)r[0].body_len, r[0].body);
	cr_assert(body_is(&r[1], "/second"), "%.*s", (int)r[1].body_len, r[1].body);
	fx_lock();
	cr_assert_str_eq(fx.order, "/first /second");
	cr_assert_eq(fx.max_in_flight, 1);
	fx_unlock();
	close(fd);
	buf_free(&out);
	fx_stop();
}

Test(http_server, pipelined_request_waits_for_an_async_answer, .timeout = 10)
{
	static const char two[] =
		"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
		"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct response r[2];
	struct buf out = { 0 };
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	fd = tcp_connect();
	send_bytes(fd, two, sizeof(two) - 1);
	cr_assert_eq(recv_responses(fd, &out, r, 2, WAIT_MS), 2, "%s", out.data);
	/* /slow is answered 100 ms later from a timer, /fast at once. */
	cr_assert(body_is(&r[0], "/slow"), "%.*s", (int)r[0].body_len, r[0].body);
	cr_assert(body_is(&r[1], "/fast"), "%.*s", (int)r[1].body_len, r[1].body);
	fx_lock();
	cr_assert_str_eq(fx.order, "/slow /fast");
	cr_assert_eq(fx.max_in_flight, 1, "/fast was dispatched before /slow was answered");
	cr_assert_eq(fx.answered, 2);
	fx_unlock();
	close(fd);
	buf_free(&out);
	fx_stop();
}

Test(http_server, expect_100_continue, .timeout = 10)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct http_server_config cfg;
	struct response r[2];
	struct buf out = { 0 };
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	fd = tcp_connect();
	send_str(fd, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
		 "Expect: 100-continue\r\n\r\n");
	/* The interim answer comes before any of the body is sent. */
	cr_assert_eq(recv_until(fd, &out, "\r\n\r\n", WAIT_MS), 0, "no 100 Continue");
	cr_assert_str_eq(out.data, cont);
	cr_assert_eq(fx_get(&fx.requests), 0);
	send_str(fd, "hello");
	cr_assert_eq(recv_responses(fd, &out, r, 2, WAIT_MS), 2, "%s", out.data);
	cr_assert_eq(r[0].status, 100);
	cr_assert_eq(r[1].status, 200);
	cr_assert(body_is(&r[1], "got:hello"));
	cr_assert_eq(fx_get(&fx.requests), 1);
	cr_assert_str_eq(fx.seen.body, "hello");
	close(fd);
	buf_free(&out);
	fx_stop();
}

/*
 * A chunked request's trailer fields are not its headers: one that
 * repeats a header of the head, or names a new one, does not reach the
 * program (a trailer must not set x-request-id or pick a provider).
 */
Test(http_server, request_trailers_are_dropped, .timeout = 10)
{
	static const char first[] =
		"POST /t HTTP/1.1\r\nHost: x\r\nX-Custom: from-the-head\r\n"
		"Transfer-Encoding: chunked\r\n\r\n"
		"5\r\nhello\r\n0\r\nX-Custom: from-the-trailer\r\n"
		"Content-Type: evil/trailer\r\n\r\n";
	static const char second[] =
		"POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		"3\r\nabc\r\n0\r\nX-Custom: only-in-the-trailer\r\n\r\n";
	struct http_server_config cfg;
	struct response r[2];
	struct buf out = { 0 };
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	fd = tcp_connect();
	send_str(fd, first);
	cr_assert_eq(recv_responses(fd, &out, r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert(body_is(&r[0], "got:hello"), "%.*s", (int)r[0].body_len, r[0].body);
	fx_lock();
	cr_assert_str_eq(fx.seen.custom, "from-the-head");
	cr_assert_str_eq(fx.seen.content_type, "(null)");
	cr_assert_eq(fx.seen.nheaders, 3);
	fx_unlock();

	/* The same connection goes on: the trailer ended the first request. */
	buf_reset(&out);
	send_str(fd, second);
	cr_assert_eq(recv_responses(fd, &out, r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert(body_is(&r[0], "got:abc"), "%.*s", (int)r[0].body_len, r[0].body);
	fx_lock();
	cr_assert_eq(fx.requests, 2);
	cr_assert_str_eq(fx.seen.custom, "(null)");
	cr_assert_eq(fx.seen.nheaders, 2);
	fx_unlock();
	close(fd);
	buf_free(&out);
	fx_stop();
}

/* Trailer fields count toward max_header_bytes, as the head does. */
Test(http_server, request_trailers_over_the_limit_are_431, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf req = { 0 };
	size_t i;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	cr_assert_eq(buf_puts(&req, "POST /t HTTP/1.1\r\nHost: x\r\n"
			      "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n"), 0);
	for (i = 0; i < 40; i++)
		cr_assert_eq(buf_printf(&req, "X-Pad-%zu: %040zu\r\n", i, i), 0);
	cr_assert_eq(buf_puts(&req, "\r\n"), 0);
	expect_error_and_close(req.data, req.len, 431);
	buf_free(&req);
	fx_stop();
}

Test(http_server, body_over_limit_is_413, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf req = { 0 };
	char body[4097];
	struct fetch f;
	CURL *h;

	test_config(&cfg);	/* max_body_bytes 4096 */
	fx_start(&cfg, on_echo);

	/* Chunked, so the limit is found while reading the body. */
	memset(body, 'b', sizeof(body));
	cr_assert_eq(buf_puts(&req, "POST /big HTTP/1.1\r\nHost: x\r\n"
			      "Transfer-Encoding: chunked\r\n\r\n"
			      "800\r\n"), 0);
	cr_assert_eq(buf_append(&req, body, 0x800), 0);
	cr_assert_eq(buf_puts(&req, "\r\n800\r\n"), 0);
	cr_assert_eq(buf_append(&req, body, 0x800), 0);
	cr_assert_eq(buf_puts(&req, "\r\n1\r\nb\r\n0\r\n\r\n"), 0);
	expect_error_and_close(req.data, req.len, 413);
	buf_free(&req);

	/* A body of exactly the limit is accepted. */
	h = curl_easy_init();
	body[4096] = '\0';
	fetch(h, "/fits", body, NULL, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert_eq(fx_get(&fx.requests), 1);
	cr_assert_eq(fx.seen.body_len, 4096);
	fetch_free(&f);
	curl_easy_cleanup(h);
	fx_stop();
}

/*
 * Waits until the server has n connections. Polled: the server has no
 * event for a connection's end.
 */
static bool wait_conn_count(unsigned n, int timeout_ms)
{
	struct loop_op op = { 0 };
	double deadline = now_ms() + timeout_ms;

	for (;;) {
		fx_call(op_conn_count, &op);
		if (op.count == n)
			return true;
		if (now_ms() > deadline)
			return false;
		poll(NULL, 0, 10);
	}
}

/*
 * A client that keeps uploading after its 413 is not reset: the server
 * reads and drops the rest, and closes at the client's EOF, or after a
 * bounded linger (2 s in http_server.c) when the client goes quiet.
 */
Test(http_server, rejected_upload_is_drained_then_closed, .timeout = 10)
{
	static const char head[] =
		"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
	struct http_server_config cfg;
	struct buf out = { 0 };
	struct response r;
	char chunk[16384];
	double t0;
	ssize_t n = 0;
	int fd;
	int rc;
	int i;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	memset(chunk, 'u', sizeof(chunk));

	fd = tcp_connect();
	send_str(fd, head);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "no FIN after the 413: %s", strerror(-rc));
	cr_assert_gt(parse_response(out.data, out.len, &r), 0, "%s", out.data);
	cr_assert_eq(r.status, 413);
	for (i = 0; i < 32; i++) {
		n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
		if (n < 0)
			break;
	}
	cr_assert_eq(i, 32, "upload cut after %d KiB: %s", i * 16, strerror(errno));
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	cr_assert(wait_conn_count(0, 1500), "the client's EOF did not end the linger");
	close(fd);

	/* A client that goes quiet is closed after the linger. */
	buf_reset(&out);
	fd = tcp_connect();
	send_str(fd, head);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "no FIN after the 413: %s", strerror(-rc));
	t0 = now_ms();
	cr_assert(wait_conn_count(0, WAIT_MS), "a lingering connection stayed open");
	cr_assert_geq(now_ms() - t0, 1000, "closed after %.0f ms", now_ms() - t0);
	close(fd);
	cr_assert_eq(fx_get(&fx.requests), 0);
	buf_free(&out);
	fx_stop();
}

Test(http_server, content_length_over_limit_is_413_at_once, .timeout = 10)
{
	static const char head[] =
		"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
	static const char expect[] =
		"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n"
		"Expect: 100-continue\r\n\r\n";
	struct http_server_config cfg;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	/* The body is never sent: the answer must not wait for it. */
	expect_error_and_close(head, sizeof(head) - 1, 413);
	/* Nor is it invited: no 100 Continue before the 413. */
	expect_error_and_close(expect, sizeof(expect) - 1, 413);
	fx_stop();
}

Test(http_server, headers_over_limit_are_431, .timeout = 10)
{
	struct http_server_config cfg;
	struct response r;
	struct buf req = { 0 };
	struct buf out = { 0 };
	char value[1101];
	int fd;

	test_config(&cfg);	/* max_header_bytes 1024 */
	fx_start(&cfg, on_echo);
	memset(value, 'v', sizeof(value) - 1);
	value[1100] = '\0';
	cr_assert_eq(buf_printf(&req, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", value), 0);
	expect_error_and_close(req.data, req.len, 431);

	/* Well under the limit (900 bytes of value) is fine. */
	buf_reset(&req);
	value[900] = '\0';
	cr_assert_eq(buf_printf(&req, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", value), 0);
	fd = tcp_connect();
	send_bytes(fd, req.data, req.len);
	cr_assert_eq(recv_responses(fd, &out, &r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert_eq(r.status, 200);
	close(fd);
	buf_free(&out);
	buf_free(&req);
	fx_stop();
}

Test(http_server, garbage_request_is_400, .timeout = 10)
{
	static const char junk[] = "this is not http\r\n\r\n";
	struct http_server_config cfg;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	expect_error_and_close(junk, sizeof(junk) - 1, 400);
	fx_stop();
}

Test(http_server, header_timeout_closes_a_half_sent_request, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	double t0;
	double took;
	int fd;
	int rc;

	test_config(&cfg);
	cfg.header_timeout_ms = 300;
	fx_start(&cfg, on_echo);
	fd = tcp_connect();
	t0 = now_ms();
	send_str(fd, "GET /slow HT");
	rc = recv_to_end(fd, &out, WAIT_MS);
	took = now_ms() - t0;
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_eq(out.len, 0, "a timeout is a silent close, got: %s", out.data);
	cr_assert_geq(took, 295, "closed after %.1f ms", took);
	cr_assert_lt(took, 300 + 1500, "closed after %.1f ms", took);
	cr_assert_eq(fx_get(&fx.requests), 0);
	close(fd);
	buf_free(&out);
	fx_stop();
}

Test(http_server, header_timeout_counts_from_the_first_byte, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	char line[64];
	ssize_t n = -ETIMEDOUT;
	double t0;
	double took;
	int fd;
	int i;

	test_config(&cfg);
	cfg.header_timeout_ms = 400;
	fx_start(&cfg, on_echo);
	fd = tcp_connect();
	t0 = now_ms();
	send_str(fd, "GET / HTTP/1.1\r\n");
	/* A header line every 100 ms: bytes keep coming, the request never ends. */
	for (i = 0; i < 20; i++) {
		n = recv_some(fd, &out, 100);
		if (n != -ETIMEDOUT)
			break;
		snprintf(line, sizeof(line), "X-Drip-%d: v\r\n", i);
		if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0)
			break;
	}
	if (n == -ETIMEDOUT)
		n = recv_some(fd, &out, WAIT_MS);
	took = now_ms() - t0;
	cr_assert(n == 0 || n == -ECONNRESET, "not closed: %zd", n);
	cr_assert_eq(out.len, 0);
	cr_assert_geq(took, 395, "closed after %.1f ms", took);
	cr_assert_lt(took, 1500, "closed after %.1f ms: the timer restarts with each byte?", took);
	close(fd);
	buf_free(&out);
	fx_stop();
}

Test(http_server, idle_timeout_closes_a_quiet_connection, .timeout = 10)
{
	struct http_server_config cfg;
	struct response r;
	struct buf out = { 0 };
	double t0;
	double t1;
	double t2;
	int fd;
	int rc;

	test_config(&cfg);
	cfg.idle_timeout_ms = 300;
	fx_start(&cfg, on_echo);

	/* A connection that never sends a byte. */
	fd = tcp_connect();
	t0 = now_ms();
	rc = recv_to_end(fd, &out, WAIT_MS);
	t1 = now_ms();
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_eq(out.len, 0);
	cr_assert_geq(t1 - t0, 295, "closed after %.1f ms", t1 - t0);
	cr_assert_lt(t1 - t0, 300 + 1500, "closed after %.1f ms", t1 - t0);
	close(fd);

	/* A keep-alive connection after its answer. */
	fd = tcp_connect();
	t0 = now_ms();
	send_str(fd, "GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(fd, &out, &r, 1, WAIT_MS), 1);
	t1 = now_ms();
	rc = recv_to_end(fd, &out, WAIT_MS);
	t2 = now_ms();
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_geq(t2 - t0, 295, "closed %.1f ms after the request", t2 - t0);
	cr_assert_lt(t2 - t1, 300 + 1500, "closed %.1f ms after the answer", t2 - t1);
	close(fd);
	buf_free(&out);
	fx_stop();
}

Test(http_server, max_conns_closes_extra_connections, .timeout = 10)
{
	static const char hold[] = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct response r;
	struct buf out = { 0 };
	int a, b, c, d;
	int rc;

	test_config(&cfg);
	cfg.max_conns = 2;
	fx_start(&cfg, on_hold);
	a = tcp_connect();
	send_str(a, hold);
	b = tcp_connect();
	send_str(b, hold);
	cr_assert(fx_wait(&fx.requests, 2, WAIT_MS));

	/* The third is accepted and closed at once. */
	c = tcp_connect();
	rc = recv_to_end(c, &out, 2000);
	cr_assert(rc == 0 || rc == -ECONNRESET, "the third connection stayed open: %s",
		  strerror(-rc));
	cr_assert_eq(out.len, 0);
	close(c);

	/* One leaves (its exchange is aborted): there is room again. */
	close(a);
	cr_assert(fx_wait(&fx.aborts[HTTP_ABORT_PEER], 1, WAIT_MS));
	fx_call(op_conn_count, &op);
	cr_assert_eq(op.count, 1);
	d = tcp_connect();
	send_str(d, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(d, &out, &r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert_eq(r.status, 200);
	cr_assert(body_is(&r, "ok"));
	close(d);

	/* Freeing the server aborts b's exchange. */
	fx_stop();
	cr_assert_eq(fx.aborts[HTTP_ABORT_SERVER], 1);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER], 1);
	close(b);
	buf_free(&out);
}

/* Waits until the server has rejected n connections (polled, as counts are). */
static bool wait_rejected(uint64_t n, int timeout_ms)
{
	struct loop_op op = { 0 };
	double deadline = now_ms() + timeout_ms;

	for (;;) {
		fx_call(op_rejected, &op);
		if (op.rejected >= n)
			return op.rejected == n;
		if (now_ms() > deadline)
			return false;
		poll(NULL, 0, 5);
	}
}

/* How many lines of the file hold needle; the last of them is copied to last. */
static unsigned count_lines(const char *path, const char *needle, char *last, size_t len)
{
	char line[1024];
	unsigned n = 0;
	FILE *fp = fopen(path, "r");

	cr_assert_not_null(fp);
	last[0] = '\0';
	while (fgets(line, sizeof(line), fp)) {
		if (strstr(line, needle)) {
			n++;
			snprintf(last, len, "%s", line);
		}
	}
	fclose(fp);
	return n;
}

/*
 * A flood of connections past max_conns is one log line a second, not one
 * per connection; the next line says how many went unsaid, and
 * http_server_rejected counts them all.
 */
Test(http_server, connection_limit_log_is_rate_limited, .timeout = 15)
{
	static const char hold[] = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char needle[] = "connection limit (2) reached: closing a new connection";
	char path[] = "/tmp/fl-http-log-XXXXXX";
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	char last[1024];
	int fds[50];
	double t0;
	int logfd;
	int saved;
	int a, b, c;
	size_t i;

	logfd = mkstemp(path);
	cr_assert_geq(logfd, 0);
	saved = dup(2);
	cr_assert_eq(dup2(logfd, 2), 2);
	log_set_level(LOG_WARN);
	test_config(&cfg);
	cfg.max_conns = 2;
	fx_start(&cfg, on_hold);
	a = tcp_connect();
	send_str(a, hold);
	b = tcp_connect();
	send_str(b, hold);
	cr_assert(fx_wait(&fx.requests, 2, WAIT_MS));

	t0 = now_ms();
	for (i = 0; i < 50; i++)
		fds[i] = tcp_connect();
	cr_assert(wait_rejected(50, WAIT_MS), "not 50 connections rejected");
	cr_assert_lt(now_ms() - t0, 900, "the burst took too long to test a 1 s limit");
	cr_assert_eq(count_lines(path, needle, last, sizeof(last)), 1, "%s", last);
	cr_assert_null(strstr(last, "suppressed"), "%s", last);

	/* A second on, the next one is logged with the count of the rest. */
	while (now_ms() - t0 < 1100)
		poll(NULL, 0, 20);
	c = tcp_connect();
	cr_assert(wait_rejected(51, WAIT_MS));
	cr_assert_eq(count_lines(path, needle, last, sizeof(last)), 2, "%s", last);
	cr_assert(strstr(last, "(49 more suppressed)"), "%s", last);
	fx_call(op_rejected, &op);
	cr_assert_eq(op.rejected, 51);

	for (i = 0; i < 50; i++)
		close(fds[i]);
	close(c);
	close(a);
	close(b);
	fx_stop();
	dup2(saved, 2);
	close(saved);
	close(logfd);
	unlink(path);
}

/*
 * A socket handed over with http_server_serve_fd (one end of a socketpair:
 * no TCP) is served as an accepted connection, and closed with it.
 */
Test(http_server, serve_fd_serves_a_socketpair, .timeout = 10)
{
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct buf out = { 0 };
	struct response r[2];
	int sv[2];
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	op.count = (unsigned)sv[0];
	fx_call(op_serve_fd, &op);
	cr_assert_eq(op.rc, 0, "%s", uv_strerror(op.rc));
	send_str(sv[1], "GET /one HTTP/1.1\r\nHost: x\r\n\r\n"
		 "GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	rc = recv_to_end(sv[1], &out, WAIT_MS);
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_eq(recv_responses(sv[1], &out, r, 2, 0), 2, "%s", out.data);
	cr_assert(body_is(&r[0], "/one"));
	cr_assert(body_is(&r[1], "/two"));
	cr_assert(wait_conn_count(0, WAIT_MS));
	close(sv[1]);
	buf_free(&out);
	fx_stop();
}

/*
 * http_server_close_conns with reset ends a connection whose graceful
 * close is under way (its answer still queued for a reader that stopped,
 * the FIN waiting behind it): libuv refuses its own reset while a
 * shutdown is pending, and the connection must not stay open for ever.
 */
Test(http_server, close_conns_resets_a_connection_being_shut, .timeout = 10)
{
	struct http_server_config cfg;
	struct loop_op op = { .reset = true };
	char chunk[4096];
	double deadline;
	ssize_t n = 0;
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_big);
	cr_assert_eq(tcp_open(SMALL_RCVBUF, &fd), 0);
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	/* Answered: the 8 MiB are queued and the close waits for them. */
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	cr_assert_eq(fx.rcs[0], 0);
	fx_call(op_close_conns, &op);
	cr_assert(wait_conn_count(0, 2000), "the connection stayed open");
	/* The client sees a reset, after what had reached it. */
	deadline = now_ms() + WAIT_MS;
	while (now_ms() < deadline) {
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			break;
	}
	cr_assert(n < 0 && errno == ECONNRESET, "not reset: recv %zd (%s)", n, strerror(errno));
	close(fd);
	fx_stop();
}

Test(http_server, stream_is_reassembled_by_curl, .timeout = 10)
{
	struct http_server_config cfg;
	struct fetch f;
	size_t total = pattern_total();
	char *want;
	CURL *h;
	unsigned i;

	test_config(&cfg);
	fx_start(&cfg, on_stream);
	h = curl_easy_init();
	fetch(h, "/pattern", NULL, NULL, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_eq(f.status, 200);
	cr_assert(strstr(f.head.data, "\r\nTransfer-Encoding: chunked\r\n"), "%s", f.head.data);
	cr_assert_null(strstr(f.head.data, "Content-Length"), "%s", f.head.data);
	want = malloc(total);
	cr_assert_not_null(want);
	pattern_fill(want, 0, total);
	cr_assert_eq(f.body.len, total);
	cr_assert(memcmp(f.body.data, want, total) == 0, "the body differs");
	cr_assert(fx_wait(&fx.stream_done, 1, WAIT_MS));
	fx_lock();
	/* rcs[0] is http_stream_begin, the last http_stream_end. */
	cr_assert_eq(fx.nrcs, 2);
	for (i = 0; i < fx.nrcs; i++)
		cr_assert_eq(fx.rcs[i], 0, "call %u returned %d", i, fx.rcs[i]);
	cr_assert_eq(fx.write_errors, 0);
	fx_unlock();

	/* The connection is reused after a chunked answer. */
	fetch_free(&f);
	fetch(h, "/hello", NULL, NULL, &f);
	cr_assert_eq(f.code, CURLE_OK, "%s", f.err);
	cr_assert_str_eq(f.body.data, "hello world");
	cr_assert_eq(f.connects, 0);
	fetch_free(&f);
	free(want);
	curl_easy_cleanup(h);
	fx_stop();
}

Test(http_server, stream_bytes_on_the_wire, .timeout = 10)
{
	static const char chunked[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		"Transfer-Encoding: chunked\r\n\r\n"
		"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
	static const char delimited[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		"Connection: close\r\n\r\nhello world";
	static const char get11[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct buf out = { 0 };
	unsigned i;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_stream);

	/* HTTP/1.1: chunked, and the connection stays open for another. */
	fd = tcp_connect();
	send_str(fd, get11);
	cr_assert_eq(recv_len(fd, &out, sizeof(chunked) - 1, WAIT_MS), 0, "%s", out.data);
	cr_assert_str_eq(out.data, chunked);
	buf_reset(&out);
	send_str(fd, get11);
	cr_assert_eq(recv_len(fd, &out, sizeof(chunked) - 1, WAIT_MS), 0, "%s", out.data);
	cr_assert_str_eq(out.data, chunked);
	close(fd);
	buf_reset(&out);

	/* HTTP/1.0: no chunks, the close ends the body. */
	fd = tcp_connect();
	send_str(fd, "GET /hello HTTP/1.0\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_str_eq(out.data, delimited);
	close(fd);

	fx_lock();
	cr_assert_eq(fx.nrcs, 15);	/* five calls for each of three answers */
	for (i = 0; i < fx.nrcs; i++)
		cr_assert_eq(fx.rcs[i], 0, "call %u returned %d", i, fx.rcs[i]);
	fx_unlock();
	buf_free(&out);
	fx_stop();
}

Test(http_server, stream_trailers_follow_the_last_chunk, .timeout = 10)
{
	static const char chunked[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		"Transfer-Encoding: chunked\r\n\r\n"
		"5\r\nhello\r\n0\r\nx-cost: 0.5\r\nx-n: 2\r\n\r\n";
	static const char delimited[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		"Connection: close\r\n\r\nhello";
	static const char get11[] = "GET /trailer HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct buf out = { 0 };
	unsigned i;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_stream);

	/* HTTP/1.1: the trailer fields, and the connection kept for another. */
	fd = tcp_connect();
	send_str(fd, get11);
	cr_assert_eq(recv_len(fd, &out, sizeof(chunked) - 1, WAIT_MS), 0, "%s", out.data);
	cr_assert_str_eq(out.data, chunked);
	buf_reset(&out);
	send_str(fd, get11);
	cr_assert_eq(recv_len(fd, &out, sizeof(chunked) - 1, WAIT_MS), 0, "%s", out.data);
	cr_assert_str_eq(out.data, chunked);
	close(fd);
	buf_reset(&out);

	/* HTTP/1.0: nowhere to put them; the close ends the body. */
	fd = tcp_connect();
	send_str(fd, "GET /trailer HTTP/1.0\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_str_eq(out.data, delimited);
	close(fd);

	fx_lock();
	cr_assert_eq(fx.nrcs, 9);
	for (i = 0; i < fx.nrcs; i++)
		cr_assert_eq(fx.rcs[i], 0, "call %u returned %d", i, fx.rcs[i]);
	fx_unlock();
	buf_free(&out);
	fx_stop();
}

Test(http_server, client_abort_mid_stream, .timeout = 10)
{
	static const char get[] = "GET /ticks HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char first[] = "\r\n\r\n4\r\ntick\r\n";
	struct http_server_config cfg;
	struct buf out = { 0 };
	int fd;

	test_config(&cfg);
	fx_start(&cfg, on_ticks);

	/* The client reads the first chunk and closes (a FIN). */
	fd = tcp_connect();
	send_str(fd, get);
	cr_assert_eq(recv_until(fd, &out, first, WAIT_MS), 0, "%s", out.data);
	close(fd);
	cr_assert(fx_wait(&fx.aborts[HTTP_ABORT_PEER], 1, WAIT_MS), "no on_abort after a FIN");

	/* Another resets the connection. */
	buf_reset(&out);
	fd = tcp_connect();
	send_str(fd, get);
	cr_assert_eq(recv_until(fd, &out, first, WAIT_MS), 0, "%s", out.data);
	close_with_reset(fd);
	cr_assert(fx_wait(&fx.aborts[HTTP_ABORT_PEER], 2, WAIT_MS), "no on_abort after a RST");

	fx_stop();
	cr_assert_eq(fx.requests, 2);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER], 2, "on_abort ran more than once");
	cr_assert_eq(fx.aborts[HTTP_ABORT_SERVER], 0);
	cr_assert_eq(fx.write_errors, 0);
	cr_assert_eq(fx.late_writes, 0);
	buf_free(&out);
}

Test(http_server, close_conns_unlisten_and_relisten, .timeout = 10)
{
	static const char hold[] = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct response r;
	struct buf out = { 0 };
	unsigned short port;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_hold);
	port = fx.port;

	/* An exchange in progress is aborted for the server's reason. */
	fd = tcp_connect();
	send_str(fd, hold);
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	op.reset = false;
	fx_call(op_close_conns, &op);
	cr_assert_eq(fx_get(&fx.aborts[HTTP_ABORT_SERVER]), 1);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "expected a FIN: %s", strerror(-rc));
	cr_assert_eq(out.len, 0);
	close(fd);
	fx_call(op_conn_count, &op);
	cr_assert_eq(op.count, 0);

	/* With reset, the client sees a RST. */
	fd = tcp_connect();
	send_str(fd, hold);
	cr_assert(fx_wait(&fx.requests, 2, WAIT_MS));
	op.reset = true;
	fx_call(op_close_conns, &op);
	cr_assert_eq(fx_get(&fx.aborts[HTTP_ABORT_SERVER]), 2);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, -ECONNRESET, "expected a RST: %s", strerror(-rc));
	close(fd);

	/* Unlisten: refused. */
	fx_call(op_unlisten, &op);
	cr_assert_not(op.listening);
	rc = tcp_open(0, &fd);
	cr_assert_eq(rc, ECONNREFUSED, "connect: %s", strerror(rc));

	/* Relisten: the same port, and it answers. */
	fx_call(op_relisten, &op);
	cr_assert_eq(op.rc, 0, "%s", uv_strerror(op.rc));
	cr_assert(op.listening);
	cr_assert_eq(op.port, port);
	fd = tcp_connect();
	send_str(fd, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(fd, &out, &r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert_eq(r.status, 200);
	close(fd);

	fx_stop();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER], 0);
	cr_assert_eq(fx.aborts[HTTP_ABORT_SERVER], 2);
	buf_free(&out);
}

/* Sends req, expects at most limit bytes, a prefix of want, then a RST. */
static void expect_cut(const char *req, size_t limit, const char *want, size_t wantlen)
{
	struct buf out = { 0 };
	int fd = tcp_connect();
	int rc;

	send_str(fd, req);
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, -ECONNRESET, "expected a RST: %s", strerror(-rc));
	cr_assert_leq(out.len, limit);
	cr_assert_leq(out.len, wantlen);
	cr_assert(out.len == 0 || memcmp(out.data, want, out.len) == 0, "%s", out.data);
	close(fd);
	buf_free(&out);
}

Test(http_server, reset_after_cuts_the_response, .timeout = 10)
{
	struct http_server_config cfg;
	char want[256];
	int n;

	test_config(&cfg);
	fx_start(&cfg, on_reset);

	n = snprintf(want, sizeof(want), "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n");
	memset(want + n, 'x', 100);
	n += 100;
	expect_cut("GET /respond HTTP/1.1\r\nHost: x\r\n\r\n", 100, want, (size_t)n);
	cr_assert(fx_wait(&fx.answered, 1, WAIT_MS));
	fx_lock();
	cr_assert_eq(fx.nrcs, 1);
	cr_assert_eq(fx.rcs[0], -ECONNRESET, "http_respond returned %d", fx.rcs[0]);
	fx.nrcs = 0;
	fx_unlock();

	n = snprintf(want, sizeof(want), "%s4\r\nabcd\r\na\r\n0123456789\r\n", chunked_head);
	expect_cut("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", CHUNKED_HEAD_LEN + 20,
		   want, (size_t)n);
	cr_assert(fx_wait(&fx.answered, 2, WAIT_MS));
	fx_lock();
	cr_assert_eq(fx.nrcs, 4);
	cr_assert_eq(fx.rcs[0], 0);
	cr_assert_eq(fx.rcs[1], 0);
	cr_assert_eq(fx.rcs[2], -ECONNRESET, "the write that crossed returned %d", fx.rcs[2]);
	cr_assert_eq(fx.rcs[3], -EPIPE, "a write after the reset returned %d", fx.rcs[3]);
	fx_unlock();
	fx_stop();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
}

/*
 * The reset point falls inside one chunk bigger than http_stream_write's
 * 4096-byte single-write buffer, where the chunk goes out as three writes.
 */
Test(http_server, reset_after_inside_a_large_chunk, .timeout = 10)
{
	struct http_server_config cfg;
	char want[2048];
	int n;

	test_config(&cfg);
	fx_start(&cfg, on_reset);
	n = snprintf(want, sizeof(want), "%s1f40\r\n", chunked_head);
	memset(want + n, 'x', sizeof(want) - (size_t)n);
	expect_cut("GET /big-chunk HTTP/1.1\r\nHost: x\r\n\r\n", CHUNKED_HEAD_LEN + 1000,
		   want, sizeof(want));
	cr_assert(fx_wait(&fx.answered, 1, WAIT_MS));
	fx_lock();
	cr_assert_eq(fx.nrcs, 2);
	cr_assert_eq(fx.rcs[0], 0);
	cr_assert_eq(fx.rcs[1], -ECONNRESET,
		     "the write that reached the limit returned %d (%s), not -ECONNRESET",
		     fx.rcs[1], strerror(-fx.rcs[1]));
	fx_unlock();
	fx_stop();
}

Test(http_server, exchange_close_with_fin_or_reset, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_close);

	fd = tcp_connect();
	send_str(fd, "GET /fin HTTP/1.1\r\nHost: x\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "expected EOF: %s", strerror(-rc));
	cr_assert_str_eq(out.data, partial);
	close(fd);

	expect_cut("GET /rst HTTP/1.1\r\nHost: x\r\n\r\n", sizeof(partial) - 1,
		   partial, sizeof(partial) - 1);

	fx_stop();
	cr_assert_eq(fx.requests, 2);
	cr_assert_eq(fx.nrcs, 2);
	cr_assert_eq(fx.rcs[0], 0);
	cr_assert_eq(fx.rcs[1], 0);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
	buf_free(&out);
}

Test(http_server, queue_grows_for_a_slow_reader_then_drains, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	size_t total = CHUNKED_HEAD_LEN + DRAIN_CHUNKS * (8 + DRAIN_CHUNK + 2) + 5;
	size_t queued;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_flood);
	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	send_str(fd, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	fx_lock();
	queued = fx.queued;
	cr_assert_eq(fx.rcs[0], 0, "a write failed: %d", fx.rcs[0]);
	cr_assert_eq(fx.drains, 0, "drained before the client read anything");
	fx_unlock();
	cr_assert_gt(queued, 0, "nothing queued for a client that does not read");
	cr_assert_leq(queued, (size_t)DRAIN_CHUNKS * (DRAIN_CHUNK + 10));

	rc = recv_len(fd, &out, total, WAIT_MS);
	cr_assert_eq(rc, 0, "got %zu of %zu bytes: %s", out.len, total, strerror(-rc));
	cr_assert_eq(out.len, total);
	cr_assert(memcmp(out.data + total - 5, "0\r\n\r\n", 5) == 0, "no last chunk");
	cr_assert(fx_wait(&fx.drains, 1, WAIT_MS));
	close(fd);
	fx_stop();
	cr_assert_eq(fx.drains, 1);
	cr_assert_eq(fx.nrcs, 2);
	cr_assert_eq(fx.rcs[1], 0, "http_stream_end in on_drain returned %d", fx.rcs[1]);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
	buf_free(&out);
}

#define NMANY 200

Test(http_server, many_concurrent_connections, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf bodies[NMANY];
	struct buf heads[NMANY];
	CURL *h[NMANY];
	CURLM *m;
	CURLMsg *msg;
	char want[64];
	unsigned ok = 0;
	int running = 1;
	int left;
	long status;
	int i;

	test_config(&cfg);
	cfg.max_conns = NMANY + 10;
	fx_start(&cfg, on_path);
	memset(bodies, 0, sizeof(bodies));
	memset(heads, 0, sizeof(heads));
	m = curl_multi_init();
	for (i = 0; i < NMANY; i++) {
		snprintf(want, sizeof(want), "/slow/%d", i);
		h[i] = curl_easy_init();
		curl_prepare(h[i], want, &bodies[i], &heads[i]);
		curl_multi_add_handle(m, h[i]);
	}
	while (running) {
		cr_assert_eq(curl_multi_perform(m, &running), CURLM_OK);
		if (running)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	while ((msg = curl_multi_info_read(m, &left)) != NULL) {
		if (msg->msg == CURLMSG_DONE && msg->data.result == CURLE_OK)
			ok++;
	}
	cr_assert_eq(ok, NMANY, "%u of %d transfers succeeded", ok, NMANY);
	for (i = 0; i < NMANY; i++) {
		curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &status);
		cr_assert_eq(status, 200);
		snprintf(want, sizeof(want), "/slow/%d", i);
		cr_assert_eq(buf_append(&bodies[i], "", 0), 0);
		cr_assert_str_eq(bodies[i].data, want);
		curl_multi_remove_handle(m, h[i]);
		curl_easy_cleanup(h[i]);
		buf_free(&bodies[i]);
		buf_free(&heads[i]);
	}
	curl_multi_cleanup(m);
	fx_lock();
	cr_assert_eq(fx.requests, NMANY);
	cr_assert_eq(fx.answered, NMANY);
	cr_assert_gt(fx.max_in_flight, 1, "the requests were not concurrent");
	fx_unlock();
	fx_stop();
}

/*
 * Reads one answer of on_big's. Returns the length of its body, or 0 when
 * it was cut off; *got is the byte count received.
 */
static size_t recv_big_answer(int fd, size_t *got)
{
	struct buf out = { 0 };
	struct response r;
	size_t n = 0;

	if (recv_responses(fd, &out, &r, 1, WAIT_MS) == 1)
		n = r.body_len;
	*got = out.len;
	buf_free(&out);
	return n;
}

/*
 * A client that half-closes after its request (shutdown(SHUT_WR)) still
 * gets the whole answer: the exchange had ended, its bytes were queued.
 */
Test(http_server, answer_survives_the_clients_half_close, .timeout = 10)
{
	struct http_server_config cfg;
	size_t body;
	size_t got;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_big);
	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	cr_assert_eq(fx.rcs[0], 0);
	body = recv_big_answer(fd, &got);
	close(fd);
	cr_assert_eq(body, BIG_BODY, "the answer was cut off: %zu bytes of %u + head",
		     got, BIG_BODY);
	fx_stop();
}

/*
 * The idle timeout is for a connection with nothing to do: one whose answer
 * is still moving to a slow reader is not idle (nginx's send_timeout: the
 * timer restarts on progress), however long the whole transfer takes.
 */
Test(http_server, idle_timeout_spares_an_answer_being_written, .timeout = 10)
{
	struct http_server_config cfg;
	char chunk[65536];
	size_t total = 0;
	ssize_t n;
	int fd;
	int rc;
	int i;

	test_config(&cfg);
	cfg.idle_timeout_ms = 200;
	fx_start(&cfg, on_big);
	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	/* The behaviour under test: a slow reader, 600 ms in all, 3 × the idle
	 * timeout, but never 200 ms without taking bytes. */
	for (i = 0; i < 10; i++) {
		/* One read a step: slow, but the window reopens and bytes move. */
		poll(NULL, 0, 60);
		n = recv(fd, chunk, sizeof(chunk), 0);
		cr_assert_gt(n, 0, "closed after %d steps", i);
		total += (size_t)n;
	}
	/* The rest, until the idle close that follows the complete answer. */
	while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0)
		total += (size_t)n;
	close(fd);
	cr_assert_gt(total, BIG_BODY, "the answer was cut off: %zu bytes of %u + head",
		     total, BIG_BODY);
	fx_stop();
}

/*
 * A reader that takes nothing for the whole idle timeout while its answer
 * waits is closed: a stuck client cannot hold a connection and its queued
 * output for ever.
 */
Test(http_server, idle_timeout_closes_a_reader_that_stopped, .timeout = 10)
{
	struct http_server_config cfg;
	char chunk[65536];
	size_t total = 0;
	ssize_t n;
	int fd;
	int rc;

	test_config(&cfg);
	cfg.idle_timeout_ms = 200;
	fx_start(&cfg, on_big);
	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert(fx_wait(&fx.requests, 1, WAIT_MS));
	/* The behaviour under test: a reader that stalls past the timeout. */
	poll(NULL, 0, 600);
	while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0)
		total += (size_t)n;
	close(fd);
	cr_assert_lt(total, BIG_BODY, "the whole answer arrived: %zu bytes", total);
	fx_stop();
}

/* ---- hard deadlines, deferred resets, misuse, the reserved port ---- */

/*
 * Reads one on_big answer (head and BIG_BODY bytes) into out slowly but
 * steadily: one receive, then a 2 ms pause, over and over, through a small
 * receive buffer, so the transfer takes a few hundred ms. Returns the
 * answer's length, or 0 when it did not come whole.
 */
static size_t recv_big_slowly(int fd, struct buf *out)
{
	double deadline = now_ms() + WAIT_MS;
	struct response r;
	long used;

	for (;;) {
		used = out->data ? parse_response(out->data, out->len, &r) : 0;
		if (used > 0 || used < 0)
			return used > 0 && r.body_len == BIG_BODY ? (size_t)used : 0;
		/* The slow reader under test: a pause between receives. */
		poll(NULL, 0, 2);
		if (recv_some(fd, out, ms_left(deadline)) <= 0)
			return 0;
	}
}

/*
 * The header timeout is a hard deadline from a request's first byte, even
 * on a connection whose earlier answer kept the output moving: the bytes a
 * slow reader took of that answer do not stretch it to the idle timeout.
 */
Test(http_server, header_timeout_stays_hard_after_a_slow_read, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	struct buf rest = { 0 };
	double t0;
	double took;
	int fd;
	int rc;

	test_config(&cfg);
	cfg.header_timeout_ms = 300;
	cfg.idle_timeout_ms = 2000;
	fx_start(&cfg, on_big);
	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_gt(recv_big_slowly(fd, &out), 0, "the answer did not come whole: %zu bytes",
		     out.len);
	cr_assert_eq(fx_get(&fx.requests), 1);

	/* Half a request line, and nothing more. */
	t0 = now_ms();
	send_str(fd, "GET /next HT");
	rc = recv_to_end(fd, &rest, WAIT_MS);
	took = now_ms() - t0;
	cr_assert_eq(rc, 0, "not closed: %s", strerror(-rc));
	cr_assert_eq(rest.len, 0, "a timeout is a silent close, got: %s", rest.data);
	cr_assert_geq(took, 295, "closed after %.1f ms", took);
	cr_assert_lt(took, 1500, "closed after %.1f ms: the idle timeout (2000), not the "
		     "header timeout (300)?", took);
	cr_assert_eq(fx_get(&fx.requests), 1);
	close(fd);
	buf_free(&out);
	buf_free(&rest);
	fx_stop();
}

/*
 * After a graceful close (Connection: close) whose answer the client took
 * whole, the server waits LINGER_MS (2 s) for the client's own close, and
 * no longer: that the answer moved earlier does not turn the linger into
 * the idle timeout (60 s here).
 */
Test(http_server, linger_after_close_is_hard, .timeout = 10)
{
	struct http_server_config cfg;
	struct buf out = { 0 };
	struct response r;
	double t0;
	double took;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_big);
	fd = tcp_connect();
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	t0 = now_ms();	/* the server's FIN: its linger began just before */
	cr_assert_eq(rc, 0, "no FIN after the answer: %s", strerror(-rc));
	cr_assert_gt(parse_response(out.data, out.len, &r), 0);
	cr_assert_eq(r.body_len, BIG_BODY);
	cr_assert(has_header(&r, "Connection: close"), "%s", r.head);

	/* The client never closes its side. */
	cr_assert(wait_conn_count(0, 2000 + 1500), "still open %.0f ms after the FIN",
		  now_ms() - t0);
	took = now_ms() - t0;
	cr_assert_geq(took, 1900, "closed %.1f ms after the FIN, before the linger", took);
	close(fd);
	buf_free(&out);
	fx_stop();
}

/*
 * A reset deferred until the queued output is written (the bytes before a
 * reset fault's cut). /budget: the reset budget runs out while megabytes
 * are queued; /end: the handler resets with output queued.
 */
static void on_deferred_reset(struct http_exchange *ex, void *data)
{
	static char chunk[DRAIN_CHUNK];
	const struct http_request *req = http_exchange_request(ex);
	bool end = strcmp(req->path, "/end") == 0;
	int rc;
	int i;

	record_request(ex, data);
	http_exchange_set_data(ex, NULL, on_abort_count, NULL);
	pattern_fill(chunk, 0, sizeof(chunk));
	http_exchange_set_reset_after(ex, end ? 64 * (size_t)DRAIN_CHUNK
					      : CHUNKED_HEAD_LEN + 6 * (size_t)DRAIN_CHUNK);
	rc = http_stream_begin(ex, 200, NULL, 0);
	for (i = 0; i < 8 && !rc; i++)
		rc = http_stream_write(ex, chunk, sizeof(chunk));
	record_rc(rc);
	if (end && !rc)
		http_exchange_close(ex, true);
	bump(&fx.answered);
}

/*
 * Sends GET path to on_deferred_reset from a client that never reads; the
 * connection must be reset once nothing moved for the idle timeout
 * (300 ms), not held for ever. Returns the handler's last write result.
 */
static int expect_deferred_reset(const char *path, unsigned nth)
{
	struct buf out = { 0 };
	double t0 = now_ms();
	double took;
	char req[128];
	int fd;
	int rc;

	rc = tcp_open(SMALL_RCVBUF, &fd);
	cr_assert_eq(rc, 0);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	send_str(fd, req);
	cr_assert(fx_wait(&fx.answered, nth, WAIT_MS));
	cr_assert(wait_conn_count(0, 3000), "%s: a stuck reset held the connection", path);
	took = now_ms() - t0;
	cr_assert_geq(took, 290, "%s: closed after %.1f ms, before the idle timeout", path,
		      took);
	/* What the client holds, then the RST. */
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, -ECONNRESET, "%s: expected a RST: %s", path, strerror(-rc));
	cr_assert_gt(out.len, 0);
	cr_assert_lt(out.len, 6 * (size_t)DRAIN_CHUNK, "%s: %zu bytes", path, out.len);
	close(fd);
	buf_free(&out);
	fx_lock();
	rc = fx.rcs[nth - 1];
	fx_unlock();
	return rc;
}

Test(http_server, deferred_reset_of_a_reader_that_stopped, .timeout = 10)
{
	struct http_server_config cfg;
	int rc;

	test_config(&cfg);
	cfg.idle_timeout_ms = 300;
	fx_start(&cfg, on_deferred_reset);
	rc = expect_deferred_reset("/budget", 1);
	cr_assert_eq(rc, -ECONNRESET, "the write that reached the budget returned %d", rc);
	rc = expect_deferred_reset("/end", 2);
	cr_assert_eq(rc, 0, "a write before http_exchange_close returned %d", rc);
	fx_stop();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0,
		     "an exchange the program had ended was aborted");
}

/*
 * Calls out of order. /started: http_respond once a stream has begun;
 * /head-started: http_respond_head the same way; /short: a head declaring
 * 100 bytes, 7 of them, and a FIN.
 */
static void on_misuse(struct http_exchange *ex, void *data)
{
	static const struct http_kv h[] = { { "X-Fault", "short" } };
	const struct http_request *req = http_exchange_request(ex);

	record_request(ex, data);
	http_exchange_set_data(ex, NULL, on_abort_count, NULL);
	if (strcmp(req->path, "/short") == 0) {
		record_rc(http_respond_head(ex, 200, h, 1, 100));
		record_rc(http_write_raw(ex, "partial", 7));
		http_exchange_close(ex, false);
	} else {
		record_rc(http_stream_begin(ex, 200, NULL, 0));
		if (strcmp(req->path, "/started") == 0)
			record_rc(http_respond(ex, 200, NULL, 0, "late", 4));
		else
			record_rc(http_respond_head(ex, 200, NULL, 0, 4));
		/* The exchange has ended: the program may not go on with it. */
		record_rc(http_respond(ex, 200, NULL, 0, "again", 5));
		record_rc(http_stream_write(ex, "more", 4));
	}
	bump(&fx.answered);
}

Test(http_server, respond_out_of_order_resets, .timeout = 10)
{
	static const char *const paths[] = { "/started", "/head-started" };
	struct http_server_config cfg;
	struct buf out = { 0 };
	char req[128];
	size_t i;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_misuse);
	for (i = 0; i < 2; i++) {
		fd = tcp_connect();
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
		send_str(fd, req);
		rc = recv_to_end(fd, &out, WAIT_MS);
		cr_assert_eq(rc, -ECONNRESET, "%s: expected a RST: %s", paths[i], strerror(-rc));
		/* At most the stream's head, never a second answer. */
		cr_assert_leq(out.len, CHUNKED_HEAD_LEN, "%s: %s", paths[i], out.data);
		cr_assert(out.len == 0 || memcmp(out.data, chunked_head, out.len) == 0, "%s: %s",
			  paths[i], out.data);
		close(fd);
		buf_reset(&out);
		cr_assert(fx_wait(&fx.answered, (unsigned)i + 1, WAIT_MS));
		fx_lock();
		cr_assert_eq(fx.nrcs, 4 * (i + 1));
		cr_assert_eq(fx.rcs[4 * i], 0, "%s: http_stream_begin returned %d", paths[i],
			     fx.rcs[4 * i]);
		cr_assert_eq(fx.rcs[4 * i + 1], -EINVAL, "%s: returned %d, not -EINVAL",
			     paths[i], fx.rcs[4 * i + 1]);
		cr_assert_eq(fx.rcs[4 * i + 2], -EPIPE, "%s: http_respond after it returned %d: "
			     "the exchange did not end", paths[i], fx.rcs[4 * i + 2]);
		cr_assert_eq(fx.rcs[4 * i + 3], -EPIPE, "%s: a stream write after it returned %d",
			     paths[i], fx.rcs[4 * i + 3]);
		fx_unlock();
	}
	fx_stop();
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
	buf_free(&out);
}

/* http_respond_head declares a length; http_write_raw sends less of it. */
Test(http_server, respond_head_declares_more_than_comes, .timeout = 10)
{
	static const char want[] =
		"HTTP/1.1 200 OK\r\nX-Fault: short\r\nContent-Length: 100\r\n\r\npartial";
	struct http_server_config cfg;
	struct buf out = { 0 };
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_misuse);
	fd = tcp_connect();
	send_str(fd, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
	rc = recv_to_end(fd, &out, WAIT_MS);
	cr_assert_eq(rc, 0, "expected a FIN: %s", strerror(-rc));
	cr_assert_str_eq(out.data ? out.data : "", want);
	close(fd);
	fx_stop();
	cr_assert_eq(fx.nrcs, 2);
	cr_assert_eq(fx.rcs[0], 0, "http_respond_head returned %d", fx.rcs[0]);
	cr_assert_eq(fx.rcs[1], 0, "http_write_raw returned %d", fx.rcs[1]);
	cr_assert_eq(fx.aborts[HTTP_ABORT_PEER] + fx.aborts[HTTP_ABORT_SERVER], 0);
	buf_free(&out);
}

/*
 * Binds a fresh socket to 127.0.0.1:port with SO_REUSEADDR off (libuv's
 * bind turns it on; two sockets both with it, neither listening, may share
 * a port). Returns 0, or the errno of the failed bind.
 */
static int plain_bind(unsigned short port)
{
	struct sockaddr_in sin;
	int off = 0;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err = 0;

	cr_assert(s >= 0, "socket: %s", strerror(errno));
	cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &off, sizeof(off)), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (const struct sockaddr *)&sin, sizeof(sin)) != 0)
		err = errno;
	close(s);
	return err;
}

/*
 * While unlistened, the port refuses connections but stays the server's: no
 * one else can bind it (a port-0 server's ephemeral port would otherwise be
 * free for any outgoing connection to take), and relisten gets it back.
 * No connection comes before the unlisten, so no TIME_WAIT holds the port.
 */
Test(http_server, unlisten_keeps_the_port_reserved, .timeout = 10)
{
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct response r;
	struct buf out = { 0 };
	unsigned short port;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_echo);
	port = fx.port;

	fx_call(op_unlisten, &op);
	cr_assert_not(op.listening);
	rc = tcp_open(0, &fd);
	cr_assert_eq(rc, ECONNREFUSED, "connect: %s", strerror(rc));
	rc = plain_bind(port);
	cr_assert_eq(rc, EADDRINUSE, "bind to the unlistened port %u: %s", port,
		     rc ? strerror(rc) : "it succeeded: the port was let go");

	fx_call(op_relisten, &op);
	cr_assert_eq(op.rc, 0, "%s", uv_strerror(op.rc));
	cr_assert(op.listening);
	cr_assert_eq(op.port, port);
	fd = tcp_connect();
	send_str(fd, "GET /back HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(fd, &out, &r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert_eq(r.status, 200);
	close(fd);
	fx_stop();
	cr_assert_eq(fx.requests, 1);
	buf_free(&out);
}

/* ---- listeners handed in besides the main one ---- */

/* A listening socket on 127.0.0.1:0 the test keeps, its port into *port. */
static int own_listener(unsigned short *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
	cr_assert_eq(listen(fd, 16), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

static int connect_port(unsigned short port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
	return fd;
}

struct also_op {
	int fd;			/* to hand in; -1: none */
	unsigned key;
	bool unlisten;		/* http_server_unlisten_also(key) */
	unsigned short connect;	/* a port to connect to first (on the loop: nothing accepts it yet) */
	int client;		/* that connection */
	bool drain;
	int rc;
};

static void op_also(void *arg)
{
	struct also_op *op = arg;

	if (op->connect)
		op->client = connect_port(op->connect);
	if (op->unlisten)
		http_server_unlisten_also(fx.srv, op->key);
	if (op->drain)
		http_server_drain(fx.srv, on_drained, NULL);
	if (op->fd >= 0)
		op->rc = http_server_listen_also_fd(fx.srv, op->key, op->fd);
}

/* GET path on fd: answered 200 with path, and Connection: close when closing. */
static void expect_answer(int fd, const char *path, bool closing)
{
	struct buf out = { 0 };
	struct response r;
	char req[128];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	send_str(fd, req);
	cr_assert_eq(recv_responses(fd, &out, &r, 1, WAIT_MS), 1, "%s: %s", path,
		     out.data ? out.data : "(nothing)");
	cr_assert_eq(r.status, 200);
	cr_assert(body_is(&r, path));
	if (closing)
		cr_assert(has_header(&r, "Connection: close"), "%s", r.head);
	buf_free(&out);
}

/*
 * A listening socket another process made, handed in besides the main
 * listener (a workers gateway's dead worker's): its connections are
 * served; given back (unlisten_also), the server's copy closes and new
 * ones wait for the socket's maker; a drain takes in the connections
 * waiting on it before it closes its copy, and one handed in during the
 * drain has what waits on it taken in at once. The maker's copy is never
 * closed by the server.
 */
Test(http_server, a_listener_handed_in_is_served_given_back_and_drained, .timeout = 10)
{
	struct http_server_config cfg;
	struct also_op op = { .fd = -1 };
	unsigned short port;
	int lfd;
	int c;
	int w;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	lfd = own_listener(&port);
	op = (struct also_op){ .fd = dup(lfd), .key = 2 };
	fx_call(op_also, &op);
	cr_assert_eq(op.rc, 0);
	op = (struct also_op){ .fd = dup(lfd), .key = 2 };
	fx_call(op_also, &op);
	cr_assert_eq(op.rc, UV_EEXIST, "a key twice: %d", op.rc);
	c = connect_port(port);
	expect_answer(c, "/served", false);
	close(c);

	/* Given back: what connects now waits in the socket's queue, for its maker. */
	op = (struct also_op){ .fd = -1, .key = 2, .unlisten = true };
	fx_call(op_also, &op);
	c = connect_port(port);
	w = accept(lfd, NULL, NULL);
	cr_assert(w >= 0, "the connection did not wait in the socket's own queue");
	close(w);
	close(c);

	/* Handed in again; a connection made on the loop (not yet accepted), then a drain. */
	op = (struct also_op){ .fd = dup(lfd), .key = 2 };
	fx_call(op_also, &op);
	cr_assert_eq(op.rc, 0);
	op = (struct also_op){ .fd = -1, .connect = port, .drain = true };
	fx_call(op_also, &op);
	expect_answer(op.client, "/waiting-at-the-drain", true);
	close(op.client);

	/* Handed in while draining: the connection waiting on it is taken in, the copy closed. */
	c = connect_port(port);
	op = (struct also_op){ .fd = dup(lfd), .key = 3 };
	fx_call(op_also, &op);
	cr_assert_eq(op.rc, 0);
	expect_answer(c, "/handed-in-late", true);
	close(c);
	c = connect_port(port);
	w = accept(lfd, NULL, NULL);
	cr_assert(w >= 0, "after the drain the server still holds a copy");
	close(w);
	close(c);
	cr_assert(fx_wait(&fx.drained, 1, WAIT_MS), "the drain never ended");
	close(lfd);
	fx_stop();
}

/*
 * A drain gives a new connection that has sent nothing 1 s for its first
 * byte (DRAIN_FIRST_MS), not header_timeout_ms (60 s here): a pool's
 * silent spare does not hold the drain, while a client that connected to
 * send a request, and sends it within that second, is answered.
 */
Test(http_server, drain_gives_a_silent_new_connection_a_second, .timeout = 10)
{
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct response r;
	struct buf out = { 0 };
	double t0;
	double closed_after;
	int silent;
	int late;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	silent = tcp_connect();
	late = tcp_connect();
	cr_assert(wait_conn_count(2, WAIT_MS), "the server never held both connections");
	t0 = now_ms();
	fx_call(op_drain, &op);
	/* The late one's request comes after the drain began, within the second. */
	poll(NULL, 0, 200);
	send_str(late, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(late, &out, &r, 1, WAIT_MS), 1, "%s", out.data);
	cr_assert_eq(r.status, 200);
	cr_assert(has_header(&r, "Connection: close"), "%s", r.head);
	/* The silent one is closed with nothing sent, a second in; then the drain is done. */
	buf_reset(&out);
	cr_assert_eq(recv_to_end(silent, &out, WAIT_MS), 0, "the silent connection stayed open");
	closed_after = now_ms() - t0;
	cr_assert_eq(out.len, 0, "the silent connection got: %s", out.data);
	cr_assert(closed_after >= 800 && closed_after < 4000,
		  "the silent connection closed %.0f ms after the drain began", closed_after);
	cr_assert(fx_wait(&fx.drained, 1, WAIT_MS), "done never ran once no connection was left");
	close(silent);
	close(late);
	fx_stop();
	buf_free(&out);
}

Test(http_server, drain_finishes_answers_and_closes_the_rest, .timeout = 10)
{
	struct http_server_config cfg;
	struct loop_op op = { 0 };
	struct response r;
	struct buf idle_out = { 0 };
	struct buf busy_out = { 0 };
	int idle;
	int busy;
	int fd;
	int rc;

	test_config(&cfg);
	fx_start(&cfg, on_path);
	/* One keep-alive connection, answered and idle; one with /slow in progress. */
	idle = tcp_connect();
	send_str(idle, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(recv_responses(idle, &idle_out, &r, 1, WAIT_MS), 1);
	busy = tcp_connect();
	send_str(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert(fx_wait(&fx.requests, 2, WAIT_MS), "/slow never arrived");

	fx_call(op_drain, &op);
	cr_assert_not(op.listening);
	cr_assert_eq(op.count, 0, "done is never called from inside http_server_drain");
	rc = tcp_open(0, &fd);
	cr_assert_eq(rc, ECONNREFUSED, "a new connection while draining: %s", strerror(rc));

	/* The idle one is closed with nothing more; the busy one gets its answer, then EOF. */
	buf_reset(&idle_out);
	cr_assert_eq(recv_to_end(idle, &idle_out, WAIT_MS), 0, "the idle connection stayed open");
	cr_assert_eq(idle_out.len, 0, "the idle connection got: %s", idle_out.data);
	cr_assert_eq(recv_responses(busy, &busy_out, &r, 1, WAIT_MS), 1, "%s", busy_out.data);
	cr_assert_eq(r.status, 200);
	cr_assert(body_is(&r, "/slow"));
	cr_assert(has_header(&r, "Connection: close"), "%s", r.head);
	cr_assert_eq(recv_to_end(busy, &busy_out, WAIT_MS), 0, "the answered one stayed open");
	cr_assert(fx_wait(&fx.drained, 1, WAIT_MS), "done never ran once no connection was left");
	close(idle);
	close(busy);
	fx_stop();
	cr_assert_eq(fx.drained, 1, "done ran once");
	buf_free(&idle_out);
	buf_free(&busy_out);
}
