/*
 * fuzz: the HTTP server's request side. The input, after its first byte,
 * is what a client sends on a socketpair served through
 * http_server_serve_fd on a libuv loop; then the client shuts its side.
 * The first byte: 0x80, send in pieces of (its low five bits + 1) bytes
 * with the loop run between them, else all at once; 0x40, then close
 * every connection with http_server_close_conns, 0x20 with a reset. Each
 * request that gets through is checked (its body NUL-terminated and
 * within the limit, its headers whole) and answered as its path's first
 * letter says: whole, streamed with trailers (64 copies of the body, more
 * than a socket buffer holds), a declared length then raw bytes, a close,
 * a reset part-way, or later from a timer. The connection must be gone
 * within a bounded number of loop turns once the client has shut its side.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/http_server.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loop turns allowed after the last byte is written, for the close to finish. */
#define SETTLE_TURNS 2000

static uv_loop_t loop;
static struct http_server *srv;
static struct http_server_config cfg;

/* An answer given from a timer, unless the exchange is aborted first. */
struct later {
	uv_timer_t timer;
	struct http_exchange *ex;
};

static void fail(const char *what)
{
	fprintf(stderr, "http_request: %s\n", what);
	abort();
}

static void on_later_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_later_abort(struct http_exchange *ex, void *data, enum http_abort_reason why)
{
	struct later *l = data;

	(void)ex;
	(void)why;
	l->ex = NULL;
	uv_timer_stop(&l->timer);
	uv_close((uv_handle_t *)&l->timer, on_later_closed);
}

static void on_later(uv_timer_t *t)
{
	struct later *l = t->data;
	struct http_exchange *ex = l->ex;

	/* The timer closes here: the exchange must not abort into it again. */
	http_exchange_set_data(ex, NULL, NULL, NULL);
	http_respond(ex, 200, NULL, 0, "later", 5);
	uv_close((uv_handle_t *)&l->timer, on_later_closed);
}

/* What the program may rely on in every request the server hands over. */
static void check(const struct http_request *req)
{
	size_t i;

	if (!req->method || !req->url || !req->path || !req->body)
		fail("a request field is NULL");
	if (req->body[req->body_len] != '\0')
		fail("the body is not NUL-terminated");
	if (req->body_len > cfg.max_body_bytes)
		fail("a body over max_body_bytes got through");
	if (req->query && (req->query < req->url || req->query > req->url + strlen(req->url)))
		fail("the query is not inside the URL");
	for (i = 0; i < req->nheaders; i++) {
		if (!req->headers[i].name || !req->headers[i].value)
			fail("a header without a name or value");
		if (strlen(req->headers[i].name) + strlen(req->headers[i].value) >
		    cfg.max_header_bytes)
			fail("a header over max_header_bytes got through");
	}
}

static void on_request(struct http_exchange *ex, void *data)
{
	static const struct http_kv trailer = { "x-t", "1" };
	const struct http_request *req = http_exchange_request(ex);
	struct later *l;
	int rc;
	int i;

	(void)data;
	check(req);
	switch (req->path[1]) {
	case 's':
		rc = http_stream_begin(ex, 200, NULL, 0);
		for (i = 0; i < 64 && !rc; i++)
			rc = http_stream_write(ex, req->body, req->body_len);
		if (!rc)
			http_stream_end_trailers(ex, &trailer, 1);
		break;
	case 'h':
		/* Declares one byte more than it sends when the body is odd. */
		if (http_respond_head(ex, 200, NULL, 0, req->body_len + (req->body_len & 1)) == 0 &&
		    http_write_raw(ex, req->body, req->body_len) == 0)
			http_stream_end(ex);
		break;
	case 'c':
		http_exchange_close(ex, req->body_len & 1);
		break;
	case 'r':
		http_exchange_set_reset_after(ex, req->body_len);
		http_respond(ex, 200, NULL, 0, req->url, strlen(req->url));
		break;
	case 'l':
		l = calloc(1, sizeof(*l));
		if (!l)
			fail("out of memory");
		l->ex = ex;
		l->timer.data = l;
		uv_timer_init(&loop, &l->timer);
		uv_timer_start(&l->timer, on_later, 0, 0);
		http_exchange_set_data(ex, l, on_later_abort, NULL);
		break;
	default:
		http_respond(ex, 200, NULL, 0, req->body, req->body_len);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_OFF);
	if (uv_loop_init(&loop))
		fail("uv_loop_init");
	http_server_config_default(&cfg);
	cfg.max_header_bytes = 2048;
	cfg.max_body_bytes = 4096;
	srv = http_server_new(&loop, &cfg, on_request, NULL);
	if (!srv)
		fail("http_server_new");
	return 0;
}

/* Reads and drops what the server sent; false once it closed its side. */
static bool drain(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	return n != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode;
	size_t piece;
	size_t off = 0;
	int turns = 0;
	int sv[2];
	ssize_t n;

	if (size < 1)
		return 0;
	mode = data[0];
	piece = mode & 0x80 ? (size_t)(mode & 0x1f) + 1 : size;
	data++;
	size--;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		fail("socketpair");
	if (http_server_serve_fd(srv, sv[0]))
		fail("http_server_serve_fd");
	while (off < size && turns++ < (int)size + SETTLE_TURNS) {
		n = write(sv[1], data + off, piece < size - off ? piece : size - off);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && !drain(sv[1]))
			break;	/* the server closed: the rest cannot be sent */
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(sv[1]);
	}
	if (mode & 0x40)
		http_server_close_conns(srv, mode & 0x20);
	shutdown(sv[1], SHUT_WR);
	turns = 0;
	while (http_server_conn_count(srv) && turns++ < SETTLE_TURNS) {
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(sv[1]);
	}
	if (http_server_conn_count(srv))
		fail("the connection is still open after the client shut its side");
	/* Handles closing (timers of answers given later) finish here. */
	uv_run(&loop, UV_RUN_NOWAIT);
	close(sv[1]);
	return 0;
}
