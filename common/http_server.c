/*
 * http_server: HTTP/1.1 on libuv and http-parser.
 *
 * A connection's life: on_connection → on_read (parse) → dispatch (the
 * program's on_request) → the program writes → exchange_done → back to
 * reading, or close. Reading goes on while a request is being answered, so a
 * client that goes away is seen at once (the exchange's on_abort); the bytes
 * of a pipelined next request wait in conn->inbuf until the answer is done.
 */
#include "common/http_server.h"

#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/list.h"
#include "common/log.h"
#include "common/opt.h"

#define READ_BUF_SIZE 65536
#define INBUF_PAUSE_BYTES (256 * 1024)
#define LINGER_MS 2000
/* How long a drain waits for a new connection's first byte (at most header_timeout_ms). */
#define DRAIN_FIRST_MS 1000
/* At most one "connection limit" line per this; the rest are counted. */
#define REJECT_LOG_NS 1000000000ull

enum conn_state {
	CONN_READING,	/* waiting for or receiving a request */
	CONN_HANDLING,	/* a request is with the program */
	CONN_CLOSING,	/* handles are being closed */
};

/* What the connection's one timer is waiting for. */
enum timer_phase {
	TIMER_IDLE,	/* keep-alive: the next request (idle_timeout_ms) */
	TIMER_HEADER,	/* a request arriving: all of it (header_timeout_ms) */
	TIMER_DRAIN,	/* closing or resetting once the output is written */
	TIMER_LINGER,	/* our side shut: the client's close (LINGER_MS) */
	TIMER_FIRST,	/* a drain: a new connection's first byte (DRAIN_FIRST_MS) */
};

enum resp_mode {
	RESP_NONE,	/* nothing sent yet */
	RESP_CHUNKED,	/* streaming with chunked encoding */
	RESP_RAW,	/* streaming close-delimited (HTTP/1.0), or raw bytes */
	RESP_SIZED,	/* http_respond_head: a declared length, raw body bytes */
};

struct http_exchange {
	struct conn *conn;
	struct http_request req;
	void *data;
	http_abort_cb on_abort;
	http_drain_cb on_drain;
	enum resp_mode mode;
	bool active;		/* handed to the program, not yet ended */
	bool head;		/* a HEAD request: headers only */
	bool reset_armed;
	size_t reset_after;
	size_t declared;	/* RESP_SIZED: the Content-Length sent */
	size_t body_sent;	/* RESP_SIZED: body bytes written so far */
};

struct conn {
	uv_tcp_t tcp;		/* first: the handle's memory is the conn's */
	uv_timer_t timer;
	uv_shutdown_t shutdown;
	struct http_server *srv;
	struct list_node link;	/* on srv->conns */
	http_parser parser;
	enum conn_state state;
	int open_handles;	/* closed when this reaches 0 */

	/* The request being parsed. */
	struct buf url;
	struct buf path;
	struct buf hdr;		/* "name\0value\0…" */
	struct buf body;
	size_t *hdr_offsets;	/* name, value offset pairs into hdr */
	size_t nhdr;
	size_t hdr_cap;
	struct http_kv *kv;
	bool last_was_value;
	bool head_done;		/* its headers are whole: fields now are trailers */
	bool in_message;	/* a request has started arriving */
	bool message_ready;
	size_t head_bytes;
	int parse_error;	/* status to answer a parse failure with, or 0 */
	const char *parse_error_msg;

	struct buf inbuf;	/* received, not yet parsed */
	bool reading;
	bool peer_eof;
	bool dispatching;

	size_t pending_writes;
	uint64_t sent_total;		/* bytes ever written or queued */
	size_t bytes_out;	/* of the current response */
	bool reset_when_flushed;
	bool close_when_flushed;	/* graceful close under way: see conn_close_when_flushed */
	bool shut_done;			/* our side is shut (FIN sent) */
	enum timer_phase timer_phase;
	uint64_t timer_mark;		/* conn_flushed() when the timer was armed */

	struct http_exchange ex;
};

/* A listener served besides the main one, under its caller's key. */
struct also {
	uv_tcp_t *tcp;
	unsigned key;
};

struct write_req {
	uv_write_t req;
	struct conn *conn;
	size_t len;
	char data[];
};

struct http_server {
	uv_loop_t *loop;
	struct http_server_config cfg;
	http_request_cb on_request;
	void *data;
	uv_tcp_t *listener;
	uv_tcp_t *reserve;	/* bound, not listening: holds the port while unlistened */
	struct sockaddr_storage addr;
	bool have_addr;
	bool adopted;		/* the listener was handed in (http_server_listen_fd): no reserve */
	struct also *also;	/* more listeners handed in (http_server_listen_also_fd) */
	size_t nalso;
	size_t capalso;
	struct list conns;		/* every connection (struct conn), accepted or socketpair */
	uint64_t rejected;		/* connections closed at once: max_conns were open */
	struct log_limit reject_log;	/* their log line, at most once per REJECT_LOG_NS */
	unsigned closing_listeners;
	bool freeing;
	void (*free_done)(void *arg);
	void *free_arg;
	bool draining;
	void (*drain_done)(void *arg);	/* once draining and no connection is left */
	void *drain_arg;
	uv_idle_t drain_idle;		/* calls drain_done from the loop, not from a caller */
	bool drain_idle_open;
};

/* One read buffer serves every connection: libuv calls on_alloc and then
 * on_read for one socket at a time, and on_read copies what it keeps. This
 * relies on one event loop per process (docs/design.md): servers on loops in two
 * threads would share it. */
static char read_buf[READ_BUF_SIZE];

static void conn_close(struct conn *c, bool reset);
static void on_timer(uv_timer_t *t);
static void conn_arm(struct conn *c, enum timer_phase phase);
static void conn_start_read(struct conn *c);
static void conn_process(struct conn *c);
static int conn_write(struct conn *c, const char *data, size_t len);
static void server_maybe_done(struct http_server *srv);

void http_server_config_default(struct http_server_config *cfg)
{
	cfg->max_header_bytes = 16 * 1024;
	cfg->max_body_bytes = 1024 * 1024;
	cfg->header_timeout_ms = 10000;
	cfg->idle_timeout_ms = 60000;
	cfg->max_conns = 10000;
	cfg->backlog = 1024;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return status < 400 ? "OK" : "Error";
	}
}

/* ---- request parsing ---- */

static void request_reset(struct conn *c)
{
	buf_reset(&c->url);
	buf_reset(&c->hdr);
	buf_reset(&c->body);
	c->nhdr = 0;
	c->last_was_value = false;
	c->head_done = false;
	c->in_message = false;
	c->message_ready = false;
	c->head_bytes = 0;
}

static int parse_fail(struct conn *c, int status, const char *msg)
{
	c->parse_error = status;
	c->parse_error_msg = msg;
	return -1;
}

static int head_grow(struct conn *c, size_t n)
{
	c->head_bytes += n;
	if (c->head_bytes > c->srv->cfg.max_header_bytes)
		return parse_fail(c, 431, "Request line and headers are too large.");
	return 0;
}

static int on_message_begin(http_parser *p)
{
	struct conn *c = p->data;

	request_reset(c);
	c->in_message = true;
	/* From the first byte, the whole request must arrive in time. */
	conn_arm(c, TIMER_HEADER);
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (head_grow(c, len) || buf_append(&c->url, at, len))
		return -1;
	return 0;
}

static int add_header_slot(struct conn *c)
{
	if (c->nhdr == c->hdr_cap) {
		size_t cap = c->hdr_cap ? c->hdr_cap * 2 : 16;
		size_t *o = realloc(c->hdr_offsets, cap * 2 * sizeof(*o));

		if (!o)
			return -1;
		c->hdr_offsets = o;
		c->hdr_cap = cap;
	}
	c->hdr_offsets[2 * c->nhdr] = c->hdr.len;
	c->hdr_offsets[2 * c->nhdr + 1] = 0;
	c->nhdr++;
	return 0;
}

/*
 * A chunked body's trailer fields come through the header callbacks after
 * the body. They are not the request's headers (a trailer must not set
 * x-request-id or pick a provider): counted against the header limit, and
 * dropped.
 */
static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (head_grow(c, len))
		return -1;
	if (c->head_done)
		return 0;
	if (c->last_was_value || c->nhdr == 0) {
		if (c->nhdr && buf_append(&c->hdr, "", 1))	/* end the value */
			return -1;
		if (add_header_slot(c))
			return -1;
		c->last_was_value = false;
	}
	return buf_append(&c->hdr, at, len) ? -1 : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (head_grow(c, len))
		return -1;
	if (c->head_done)
		return 0;
	if (c->nhdr == 0)
		return -1;
	if (!c->last_was_value) {
		if (buf_append(&c->hdr, "", 1))			/* end the name */
			return -1;
		c->hdr_offsets[2 * c->nhdr - 1] = c->hdr.len;
		c->last_was_value = true;
	}
	return buf_append(&c->hdr, at, len) ? -1 : 0;
}

static bool header_is(const struct conn *c, size_t i, const char *name, const char *value)
{
	const char *n = c->hdr.data + c->hdr_offsets[2 * i];
	const char *v = c->hdr.data + c->hdr_offsets[2 * i + 1];

	return strcasecmp(n, name) == 0 && (!value || strcasecmp(v, value) == 0);
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;
	size_t i;

	c->head_done = true;
	if (c->nhdr && !c->last_was_value) {
		/* A field with no value at all. */
		if (buf_append(&c->hdr, "", 1))
			return -1;
		c->hdr_offsets[2 * c->nhdr - 1] = c->hdr.len;
		c->last_was_value = true;
	}
	if (c->nhdr && buf_append(&c->hdr, "", 1))
		return -1;
	if ((p->flags & F_CONTENTLENGTH) &&
	    p->content_length > c->srv->cfg.max_body_bytes)
		return parse_fail(c, 413, "Request body is too large.");
	for (i = 0; i < c->nhdr; i++) {
		if (header_is(c, i, "expect", "100-continue") && p->http_minor >= 1) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

			conn_write(c, cont, sizeof(cont) - 1);
		}
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (c->body.len + len > c->srv->cfg.max_body_bytes)
		return parse_fail(c, 413, "Request body is too large.");
	return buf_append(&c->body, at, len) ? -1 : 0;
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->message_ready = true;
	c->ex.req.recv_ns = clock_mono_ns();	/* not at dispatch: pipelined ones wait */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings parser_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* Turns the parsed pieces into the struct http_request the program sees. */
static int request_finish(struct conn *c)
{
	struct http_request *r = &c->ex.req;
	struct http_parser_url u;
	size_t i;
	char *q;
	int rc;

	if (c->nhdr) {
		struct http_kv *kv = realloc(c->kv, c->nhdr * sizeof(*kv));

		if (!kv)
			return -1;
		c->kv = kv;
	}
	for (i = 0; i < c->nhdr; i++) {
		c->kv[i].name = c->hdr.data + c->hdr_offsets[2 * i];
		c->kv[i].value = c->hdr.data + c->hdr_offsets[2 * i + 1];
	}
	/* Empty appends make sure each buffer exists and is NUL-terminated. */
	if (buf_append(&c->url, "", 0) || buf_append(&c->body, "", 0))
		return -1;
	r->url = c->url.data;
	q = strchr(r->url, '?');
	r->query = q ? q + 1 : NULL;
	buf_reset(&c->path);
	http_parser_url_init(&u);
	if (http_parser_parse_url(r->url, c->url.len, 0, &u) == 0 &&
	    (u.field_set & (1 << UF_PATH)))
		rc = buf_append(&c->path, r->url + u.field_data[UF_PATH].off,
				u.field_data[UF_PATH].len);
	else
		rc = buf_append(&c->path, r->url, q ? (size_t)(q - r->url) : c->url.len);
	if (!rc && c->path.len == 0)
		rc = buf_puts(&c->path, "/");
	if (rc)
		return -1;
	r->path = c->path.data;
	r->method = http_method_str((enum http_method)c->parser.method);
	r->headers = c->kv;
	r->nheaders = c->nhdr;
	r->body = c->body.data;
	r->body_len = c->body.len;
	/* Draining: whatever the client asked, this answer ends the connection. */
	r->keep_alive = http_should_keep_alive(&c->parser) && !c->srv->draining;
	r->http_major = c->parser.http_major;
	r->http_minor = c->parser.http_minor;
	return 0;
}

/* ---- writing ---- */

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct conn *c = w->conn;

	c->pending_writes--;
	free(w);
	if (c->state == CONN_CLOSING)
		return;
	if (status < 0) {
		conn_close(c, false);
		return;
	}
	if (c->pending_writes)
		return;
	if (c->reset_when_flushed) {
		conn_close(c, true);
		return;
	}
	if (c->close_when_flushed)
		return;	/* the shutdown request finishes the close */
	if (c->ex.active && c->ex.on_drain)
		c->ex.on_drain(&c->ex, c->ex.data);
}

/*
 * Writes bytes to the client: straight to the socket when nothing is queued,
 * else queued behind the earlier writes. Returns 0 or a libuv error.
 */
static int conn_write(struct conn *c, const char *data, size_t len)
{
	struct write_req *w;
	uv_buf_t b;
	int n = 0;
	int rc;

	if (c->state == CONN_CLOSING)
		return UV_EPIPE;
	c->bytes_out += len;
	c->sent_total += len;
	if (c->pending_writes == 0) {
		b = uv_buf_init((char *)data, (unsigned)len);
		n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
		if (n == UV_EAGAIN || n == UV_ENOSYS)
			n = 0;
		else if (n < 0)
			return n;
		if ((size_t)n == len)
			return 0;
	}
	w = malloc(sizeof(*w) + len - (size_t)n);
	if (!w)
		return UV_ENOMEM;
	w->conn = c;
	w->len = len - (size_t)n;
	memcpy(w->data, data + n, w->len);
	b = uv_buf_init(w->data, (unsigned)w->len);
	rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
	if (rc) {
		free(w);
		return rc;
	}
	c->pending_writes++;
	return 0;
}

/*
 * Bytes of output the client has taken so far: all we wrote, less what waits
 * in libuv's queue and in the kernel's send buffer. It grows as a slow
 * reader makes progress, even when a large buffer hides it from libuv.
 */
static uint64_t conn_flushed(struct conn *c)
{
	uint64_t left = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
	uv_os_fd_t fd;
	int unsent;

	if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, SIOCOUTQ, &unsent) == 0)
		left += (uint64_t)unsent;
	return c->sent_total - left;
}

/*
 * True while the client still has output of ours to take: writes queued in
 * libuv, or bytes libuv has handed the kernel that the client has not
 * acknowledged yet (a large send buffer can hold megabytes of an answer
 * after its last write completed).
 */
static bool conn_still_sending(struct conn *c)
{
	uv_os_fd_t fd;
	int unsent = 0;

	if (c->pending_writes)
		return true;
	if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, SIOCOUTQ, &unsent) == 0)
		return unsent > 0;
	return false;
}

/* Ends the exchange from the program's side (no on_abort). */
static void exchange_end(struct conn *c)
{
	c->ex.active = false;
	c->ex.data = NULL;
	c->ex.on_abort = NULL;
	c->ex.on_drain = NULL;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;

	if (c->state == CONN_CLOSING)
		return;
	c->shut_done = true;
	if (status < 0 || c->peer_eof) {
		conn_close(c, false);
		return;
	}
	/* Written and shut: give the client LINGER_MS to close its side. */
	conn_arm(c, TIMER_LINGER);
}

/*
 * Ends the connection gracefully: the queued output is written, then our
 * side is shut (FIN). Until the client closes its side, or LINGER_MS after
 * the FIN, its bytes are read and dropped: closing with unread input would
 * make the kernel send a RST, which can destroy the answer before the client
 * has read it. A client that stops reading gets idle_timeout_ms without
 * progress before the connection is closed anyway.
 */
static void conn_close_when_flushed(struct conn *c)
{
	if (c->close_when_flushed || c->state == CONN_CLOSING)
		return;
	c->close_when_flushed = true;
	buf_reset(&c->inbuf);
	if (!c->reading && !c->peer_eof)
		conn_start_read(c);
	conn_arm(c, TIMER_DRAIN);
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown))
		conn_close(c, false);
}

/*
 * Ends the connection with a TCP RST once the queued output is written (the
 * bytes before a `reset` fault's cut), or at once when nothing is queued;
 * a client that stops reading meanwhile gets the drain timeout.
 */
static void conn_reset_when_flushed(struct conn *c)
{
	if (c->state == CONN_CLOSING)
		return;
	if (!c->pending_writes) {
		conn_close(c, true);
		return;
	}
	c->reset_when_flushed = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->reading = false;
	conn_arm(c, TIMER_DRAIN);
}

/* The response is complete: read the next request, or close. */
static void exchange_done(struct conn *c)
{
	bool keep = c->ex.req.keep_alive && !c->peer_eof;

	exchange_end(c);
	if (c->state == CONN_CLOSING)
		return;
	if (!keep) {
		conn_close_when_flushed(c);
		return;
	}
	c->state = CONN_READING;
	request_reset(c);
	conn_arm(c, TIMER_IDLE);
	if (!c->dispatching)
		conn_process(c);
}

/*
 * Writes part of a response, applying the reset budget. Returns 0, or a
 * negative errno when the exchange has ended (the caller returns it).
 */
static int exchange_write(struct http_exchange *ex, const char *data, size_t len)
{
	struct conn *c = ex->conn;
	bool reset_now = false;
	int rc;

	if (!ex->active)
		return -EPIPE;
	if (ex->reset_armed && c->bytes_out + len >= ex->reset_after) {
		len = ex->reset_after > c->bytes_out ? ex->reset_after - c->bytes_out : 0;
		reset_now = true;
	}
	rc = len ? conn_write(c, data, len) : 0;
	if (rc || reset_now) {
		exchange_end(c);
		if (rc)
			conn_close(c, true);
		else
			conn_reset_when_flushed(c);
		return reset_now && !rc ? -ECONNRESET : -EPIPE;
	}
	return 0;
}

static int status_and_headers(struct buf *b, const struct http_exchange *ex,
			      int status, const struct http_kv *h, size_t n)
{
	size_t i;
	int rc = 0;

	/* Plain appends: this runs for every answer. */
	rc |= buf_puts(b, "HTTP/1.1 ");
	rc |= buf_put_int(b, status);
	rc |= buf_puts(b, " ");
	rc |= buf_puts(b, http_reason(status));
	rc |= buf_puts(b, "\r\n");
	for (i = 0; i < n; i++) {
		rc |= buf_puts(b, h[i].name);
		rc |= buf_puts(b, ": ");
		rc |= buf_puts(b, h[i].value);
		rc |= buf_puts(b, "\r\n");
	}
	if (!ex->req.keep_alive)
		rc |= buf_puts(b, "Connection: close\r\n");
	else if (ex->req.http_major == 1 && ex->req.http_minor == 0)
		rc |= buf_puts(b, "Connection: keep-alive\r\n");
	return rc ? -ENOMEM : 0;
}

/*
 * Ends an exchange the server cannot answer as asked (out of memory, or a
 * call out of order): the connection is reset, so no half answer is taken
 * for a whole one. Returns err.
 */
static int exchange_fail(struct http_exchange *ex, int err)
{
	struct conn *c = ex->conn;

	if (ex->active) {
		exchange_end(c);
		conn_close(c, true);
	}
	return err;
}

/* Writes the status line and headers, with Content-Length when clen ≥ 0. */
static int write_head(struct http_exchange *ex, int status, const struct http_kv *h,
		      size_t n, long long clen, const char *extra)
{
	struct buf b = { 0 };
	int rc;

	rc = status_and_headers(&b, ex, status, h, n);
	if (clen >= 0) {
		rc |= buf_puts(&b, "Content-Length: ");
		rc |= buf_put_int(&b, clen);
		rc |= buf_puts(&b, "\r\n");
	}
	if (extra)
		rc |= buf_puts(&b, extra);
	rc |= buf_puts(&b, "\r\n");
	rc = rc ? exchange_fail(ex, -ENOMEM) : exchange_write(ex, b.data, b.len);
	buf_free(&b);
	return rc;
}

int http_respond(struct http_exchange *ex, int status,
		 const struct http_kv *headers, size_t n,
		 const void *body, size_t len)
{
	char one[1024];
	struct buf b = { 0 };
	int rc;

	if (!ex->active)
		return -EPIPE;
	if (ex->mode != RESP_NONE)
		return exchange_fail(ex, -EINVAL);
	rc = status_and_headers(&b, ex, status, headers, n);
	rc |= buf_puts(&b, "Content-Length: ");
	rc |= buf_put_int(&b, (long long)len);
	rc |= buf_puts(&b, "\r\n\r\n");
	if (rc) {
		rc = exchange_fail(ex, -ENOMEM);
		goto out;
	}
	if (ex->head)
		len = 0;	/* the headers say how long a GET's body would be */
	/* Small answers go out in one write with the headers. */
	if (b.len + len <= sizeof(one)) {
		memcpy(one, b.data, b.len);
		memcpy(one + b.len, body, len);
		rc = exchange_write(ex, one, b.len + len);
	} else {
		rc = exchange_write(ex, b.data, b.len);
		if (!rc && len)
			rc = exchange_write(ex, body, len);
	}
	if (!rc)
		exchange_done(ex->conn);
out:
	buf_free(&b);
	return rc;
}

int http_respond_error(struct http_exchange *ex, int status, const char *message,
		       const char *type, const char *param, const char *code,
		       const struct http_kv *extra, size_t n)
{
	struct http_kv h[16];
	struct buf body = { 0 };
	size_t i;
	int rc;

	if (n > 15)
		n = 15;
	h[0] = (struct http_kv){ "Content-Type", "application/json" };
	for (i = 0; i < n; i++)
		h[i + 1] = extra[i];
	if (json_openai_error(&body, message, type, param, code)) {
		buf_free(&body);
		return exchange_fail(ex, -ENOMEM);
	}
	rc = http_respond(ex, status, h, n + 1, body.data, body.len);
	buf_free(&body);
	return rc;
}

int http_respond_head(struct http_exchange *ex, int status,
		      const struct http_kv *headers, size_t n, size_t content_length)
{
	if (!ex->active)
		return -EPIPE;
	if (ex->mode != RESP_NONE)
		return exchange_fail(ex, -EINVAL);
	ex->mode = RESP_SIZED;
	ex->declared = content_length;
	ex->body_sent = 0;
	return write_head(ex, status, headers, n, (long long)content_length, NULL);
}

bool http_stream_chunked(const struct http_exchange *ex)
{
	return ex->req.http_major > 1 || (ex->req.http_major == 1 && ex->req.http_minor >= 1);
}

int http_stream_begin(struct http_exchange *ex, int status,
		      const struct http_kv *headers, size_t n)
{
	bool chunked = http_stream_chunked(ex);

	if (!ex->active)
		return -EPIPE;
	if (ex->mode != RESP_NONE)
		return exchange_fail(ex, -EINVAL);
	if (!chunked)
		ex->req.keep_alive = false;	/* the close ends the body */
	ex->mode = chunked ? RESP_CHUNKED : RESP_RAW;
	return write_head(ex, status, headers, n, -1,
			  chunked ? "Transfer-Encoding: chunked\r\n" : NULL);
}

/* Writes "HEX\r\n" for a chunk of len bytes into out (≥ 20 bytes). */
static int chunk_head(char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;
	int i = 0;

	do {
		tmp[n++] = hex[len & 15];
		len >>= 4;
	} while (len);
	while (n)
		out[i++] = tmp[--n];
	out[i++] = '\r';
	out[i++] = '\n';
	return i;
}

int http_stream_write(struct http_exchange *ex, const void *data, size_t len)
{
	char head[32];
	char one[4096];
	int hl;
	int rc;

	if (!ex->active)
		return -EPIPE;
	if (ex->head)
		return 0;
	if (ex->mode != RESP_CHUNKED)
		return http_write_raw(ex, data, len);
	if (len == 0)
		return 0;
	hl = chunk_head(head, len);
	if ((size_t)hl + len + 2 <= sizeof(one)) {
		memcpy(one, head, (size_t)hl);
		memcpy(one + hl, data, len);
		memcpy(one + hl + len, "\r\n", 2);
		return exchange_write(ex, one, (size_t)hl + len + 2);
	}
	rc = exchange_write(ex, head, (size_t)hl);
	if (!rc)
		rc = exchange_write(ex, data, len);
	if (!rc)
		rc = exchange_write(ex, "\r\n", 2);
	return rc;
}

int http_stream_end(struct http_exchange *ex)
{
	return http_stream_end_trailers(ex, NULL, 0);
}

int http_stream_end_trailers(struct http_exchange *ex, const struct http_kv *trailers, size_t n)
{
	struct buf b = { 0 };
	size_t i;
	int rc = 0;

	if (!ex->active)
		return -EPIPE;
	if (ex->mode == RESP_CHUNKED && !ex->head) {
		rc = buf_puts(&b, "0\r\n");
		for (i = 0; i < n; i++) {
			rc |= buf_puts(&b, trailers[i].name);
			rc |= buf_puts(&b, ": ");
			rc |= buf_puts(&b, trailers[i].value);
			rc |= buf_puts(&b, "\r\n");
		}
		rc |= buf_puts(&b, "\r\n");
		rc = rc ? exchange_fail(ex, -ENOMEM) : exchange_write(ex, b.data, b.len);
		buf_free(&b);
	} else if (ex->mode != RESP_SIZED || ex->body_sent != ex->declared) {
		ex->req.keep_alive = false;	/* the close is what ends the body */
	}
	if (!rc)
		exchange_done(ex->conn);
	return rc;
}

int http_write_raw(struct http_exchange *ex, const void *data, size_t len)
{
	if (!ex->active)
		return -EPIPE;
	if (ex->mode == RESP_NONE)
		ex->mode = RESP_RAW;
	if (ex->mode == RESP_SIZED)
		ex->body_sent += len;
	return exchange_write(ex, data, len);
}

void http_exchange_close(struct http_exchange *ex, bool reset)
{
	struct conn *c = ex->conn;

	if (!ex->active)
		return;
	exchange_end(c);
	if (reset)
		conn_reset_when_flushed(c);
	else
		conn_close_when_flushed(c);
}

/*
 * Answers a request the server itself rejects, then closes gracefully: the
 * client may still be sending (a body over the limit), and its bytes are
 * drained rather than left to turn the close into a RST.
 */
static void respond_error_and_close(struct conn *c, int status, const char *msg)
{
	struct buf body = { 0 };
	struct buf out = { 0 };

	if (json_openai_error(&body, msg, "invalid_request_error", NULL, NULL) == 0 &&
	    buf_printf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		       status, http_reason(status), body.len, body.data) == 0)
		conn_write(c, out.data, out.len);
	buf_free(&body);
	buf_free(&out);
	conn_close_when_flushed(c);
}

/* ---- exchange accessors ---- */

const struct http_request *http_exchange_request(const struct http_exchange *ex)
{
	return &ex->req;
}

const char *http_request_header(const struct http_request *req, const char *name)
{
	size_t i;

	for (i = 0; i < req->nheaders; i++) {
		if (strcasecmp(req->headers[i].name, name) == 0)
			return req->headers[i].value;
	}
	return NULL;
}

void http_exchange_set_data(struct http_exchange *ex, void *data,
			    http_abort_cb on_abort, http_drain_cb on_drain)
{
	ex->data = data;
	ex->on_abort = on_abort;
	ex->on_drain = on_drain;
}

void *http_exchange_server_data(const struct http_exchange *ex)
{
	return ex->conn->srv->data;
}

size_t http_exchange_queued(const struct http_exchange *ex)
{
	return uv_stream_get_write_queue_size((uv_stream_t *)&ex->conn->tcp);
}

void http_exchange_set_reset_after(struct http_exchange *ex, size_t nbytes)
{
	ex->reset_armed = true;
	ex->reset_after = nbytes;
}

/* ---- connection life ---- */

static void on_conn_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct http_server *srv = c->srv;

	if (--c->open_handles)
		return;
	list_remove(&srv->conns, &c->link);
	buf_free(&c->url);
	buf_free(&c->path);
	buf_free(&c->hdr);
	buf_free(&c->body);
	buf_free(&c->inbuf);
	free(c->hdr_offsets);
	free(c->kv);
	free(c);
	server_maybe_done(srv);
}

/* Aborts the exchange in progress, if any, telling the program why. */
static void conn_abort_exchange(struct conn *c, enum http_abort_reason why)
{
	http_abort_cb cb = c->ex.on_abort;
	void *data = c->ex.data;

	if (!c->ex.active)
		return;
	exchange_end(c);
	if (cb)
		cb(&c->ex, data, why);
}

static void conn_close(struct conn *c, bool reset)
{
	static const struct linger rst = { 1, 0 };
	uv_os_fd_t fd;

	if (c->state == CONN_CLOSING)
		return;
	c->state = CONN_CLOSING;
	conn_abort_exchange(c, HTTP_ABORT_PEER);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
	if (reset && uv_tcp_close_reset(&c->tcp, on_conn_handle_closed) == 0)
		return;
	/* libuv refuses the reset while a shutdown (a graceful close) is
	 * pending, and then leaves the handle open: the linger is set here. */
	if (reset && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

/*
 * Arms the connection's timer for a phase. Header and linger deadlines are
 * hard; the idle and drain ones restart while the client is still taking
 * our output (nginx's send_timeout), so only a reader that stopped, or a
 * connection with nothing to do, runs out.
 */
static void conn_arm(struct conn *c, enum timer_phase phase)
{
	const struct http_server_config *cfg = &c->srv->cfg;
	uint64_t ms = phase == TIMER_HEADER ? cfg->header_timeout_ms
		    : phase == TIMER_LINGER ? LINGER_MS
		    : phase == TIMER_FIRST  ? (cfg->header_timeout_ms < DRAIN_FIRST_MS
						? cfg->header_timeout_ms : DRAIN_FIRST_MS)
					    : cfg->idle_timeout_ms;

	c->timer_phase = phase;
	/* A mark only while writes are pending (an ioctl saved per answer); with
	 * none, on_timer takes one if the kernel still holds output. */
	c->timer_mark = (phase == TIMER_IDLE || phase == TIMER_DRAIN) && c->pending_writes
			? conn_flushed(c) : 0;
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	bool drain = c->timer_phase == TIMER_IDLE || c->timer_phase == TIMER_DRAIN;

	if (c->state == CONN_CLOSING)
		return;
	if (drain && conn_still_sending(c)) {
		uint64_t flushed = conn_flushed(c);

		if (flushed != c->timer_mark) {
			conn_arm(c, c->timer_phase);	/* still moving: wait on */
			c->timer_mark = flushed;
			return;
		}
	}
	/* Header timeout, keep-alive idle, a reader that stopped, or the end
	 * of a graceful close; a reset that could not be flushed resets now. */
	conn_close(c, c->reset_when_flushed);
}

static void dispatch(struct conn *c)
{
	struct http_server *srv = c->srv;

	c->state = CONN_HANDLING;
	uv_timer_stop(&c->timer);
	c->ex.active = true;
	c->ex.head = c->parser.method == HTTP_HEAD;
	c->ex.mode = RESP_NONE;
	c->ex.reset_armed = false;
	c->ex.data = NULL;
	c->ex.on_abort = NULL;
	c->ex.on_drain = NULL;
	c->bytes_out = 0;
	c->dispatching = true;
	srv->on_request(&c->ex, srv->data);
	c->dispatching = false;
}

/*
 * Parses what is in inbuf and dispatches complete requests, one at a time,
 * for as long as each is answered at once.
 */
static void conn_process(struct conn *c)
{
	while (c->state == CONN_READING && c->inbuf.len) {
		size_t n = http_parser_execute(&c->parser, &parser_settings,
					       c->inbuf.data, c->inbuf.len);
		enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);

		if (err != HPE_OK && err != HPE_PAUSED) {
			if (!c->parse_error)
				parse_fail(c, 400, "Malformed HTTP request.");
			respond_error_and_close(c, c->parse_error, c->parse_error_msg);
			return;
		}
		buf_consume(&c->inbuf, n);
		if (!c->message_ready)
			break;
		http_parser_pause(&c->parser, 0);
		if (request_finish(c)) {
			respond_error_and_close(c, 500, "Out of memory.");
			return;
		}
		dispatch(c);
	}
	if (c->state == CONN_READING && !c->reading && !c->peer_eof)
		conn_start_read(c);
	if (c->peer_eof && c->state == CONN_READING)
		conn_close_when_flushed(c);	/* answers still queued go out first */
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	(void)h;
	(void)hint;
	*b = uv_buf_init(read_buf, sizeof(read_buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct conn *c = s->data;

	if (c->state == CONN_CLOSING)
		return;
	if (c->close_when_flushed) {
		/* Closing gracefully: drop the client's bytes, wait for its EOF. */
		if (nread < 0) {
			c->peer_eof = true;
			c->reading = false;
			uv_read_stop(s);
			if (c->shut_done)
				conn_close(c, false);
		}
		return;
	}
	if (nread < 0) {
		c->peer_eof = true;
		c->reading = false;
		if (c->ex.active || nread != UV_EOF) {
			/* The client left mid-answer: the exchange is aborted. */
			conn_close(c, nread != UV_EOF);
			return;
		}
		/* A half-close between answers: finish writing what is queued. */
		conn_close_when_flushed(c);
		return;
	}
	if (nread == 0)
		return;
	if (buf_append(&c->inbuf, b->base, (size_t)nread)) {
		conn_close(c, true);
		return;
	}
	if (c->state == CONN_HANDLING) {
		/* Keep reading to see the client leave, but bound the backlog. */
		if (c->inbuf.len > INBUF_PAUSE_BYTES) {
			uv_read_stop(s);
			c->reading = false;
		}
		return;
	}
	conn_process(c);
}

static void conn_start_read(struct conn *c)
{
	c->reading = true;
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_reject_closed(uv_handle_t *h)
{
	free(h);
}

/*
 * Counts a connection closed for the limit, and says so in the log at most
 * once per REJECT_LOG_NS, with how many went unsaid since the last line: a
 * flood of connections must not become a flood of lines.
 */
static void note_rejected(struct http_server *srv)
{
	uint64_t quiet;

	srv->rejected++;
	if (!log_limit_pass(&srv->reject_log, clock_mono_ns(), REJECT_LOG_NS, &quiet))
		return;
	if (quiet)
		log_warn("connection limit (%u) reached: closing a new connection "
			 "(%llu more suppressed)", srv->cfg.max_conns, (unsigned long long)quiet);
	else
		log_warn("connection limit (%u) reached: closing a new connection",
			 srv->cfg.max_conns);
}

/* A new connection, its handles initialised and counted; NULL when out of memory. */
static struct conn *conn_new(struct http_server *srv)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = srv;
	uv_tcp_init(srv->loop, &c->tcp);
	uv_timer_init(srv->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->open_handles = 2;
	c->ex.conn = c;
	list_push_front(&srv->conns, &c->link);
	return c;
}

/* Starts reading the first request of a connection with its socket in place. */
static void conn_begin(struct conn *c)
{
	uv_tcp_nodelay(&c->tcp, 1);	/* fails harmlessly on a socketpair */
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->state = CONN_READING;
	conn_arm(c, TIMER_IDLE);
	conn_start_read(c);
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct http_server *srv = listener->data;
	struct conn *c;

	if (status < 0) {
		log_warn("accept: %s", uv_strerror(status));
		return;
	}
	if (srv->conns.len >= srv->cfg.max_conns) {
		uv_tcp_t *t = malloc(sizeof(*t));

		if (!t)
			return;
		uv_tcp_init(srv->loop, t);
		if (uv_accept(listener, (uv_stream_t *)t) == 0)
			note_rejected(srv);
		uv_close((uv_handle_t *)t, on_reject_closed);
		return;
	}
	c = conn_new(srv);
	if (!c)
		return;
	if (uv_accept(listener, (uv_stream_t *)&c->tcp)) {
		conn_close(c, false);
		return;
	}
	conn_begin(c);
}

int http_server_serve_fd(struct http_server *srv, int fd)
{
	struct conn *c = conn_new(srv);
	int rc;

	if (!c)
		return UV_ENOMEM;
	rc = uv_tcp_open(&c->tcp, fd);
	if (rc) {
		conn_close(c, false);
		return rc;
	}
	conn_begin(c);
	return 0;
}

/* ---- server ---- */

struct http_server *http_server_new(uv_loop_t *loop,
				    const struct http_server_config *cfg,
				    http_request_cb on_request, void *data)
{
	struct http_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return NULL;
	srv->loop = loop;
	list_init(&srv->conns);
	srv->cfg = *cfg;
	srv->on_request = on_request;
	srv->data = data;
	return srv;
}

static void on_listener_closed(uv_handle_t *h)
{
	struct http_server *srv = h->data;

	free(h);
	srv->closing_listeners--;
	server_maybe_done(srv);
}

static void close_listener(struct http_server *srv, uv_tcp_t *l)
{
	srv->closing_listeners++;
	uv_close((uv_handle_t *)l, on_listener_closed);
}

/* A new TCP handle bound to addr (not listening yet), or NULL with *rc set. */
static uv_tcp_t *bound_socket(struct http_server *srv, const struct sockaddr *addr, int *rc)
{
	uv_tcp_t *l = malloc(sizeof(*l));

	if (!l) {
		*rc = UV_ENOMEM;
		return NULL;
	}
	uv_tcp_init(srv->loop, l);
	l->data = srv;
	*rc = uv_tcp_bind(l, addr, 0);
	if (*rc) {
		close_listener(srv, l);
		return NULL;
	}
	return l;
}

/* Listens on a bound socket; it becomes the listener, or is closed. */
static int start_listening(struct http_server *srv, uv_tcp_t *l)
{
	int namelen = sizeof(srv->addr);
	int rc;

	rc = uv_listen((uv_stream_t *)l, srv->cfg.backlog, on_connection);
	if (!rc)
		rc = uv_tcp_getsockname(l, (struct sockaddr *)&srv->addr, &namelen);
	if (rc) {
		close_listener(srv, l);
		return rc;
	}
	srv->have_addr = true;
	srv->listener = l;
	return 0;
}

int http_server_listen(struct http_server *srv, const struct sockaddr *addr)
{
	uv_tcp_t *l;
	int rc;

	if (srv->listener)
		return UV_EALREADY;
	if (srv->reserve) {
		close_listener(srv, srv->reserve);
		srv->reserve = NULL;
	}
	l = bound_socket(srv, addr, &rc);
	return l ? start_listening(srv, l) : rc;
}

int http_server_listen_fd(struct http_server *srv, int fd)
{
	uv_tcp_t *l;
	int rc;

	if (srv->listener)
		return UV_EALREADY;
	l = malloc(sizeof(*l));
	if (!l)
		return UV_ENOMEM;
	uv_tcp_init(srv->loop, l);
	l->data = srv;
	rc = uv_tcp_open(l, fd);
	if (rc) {
		close_listener(srv, l);	/* a failed open did not take fd */
		return rc;
	}
	srv->adopted = true;
	return start_listening(srv, l);
}

int http_server_relisten(struct http_server *srv)
{
	struct sockaddr_storage a = srv->addr;
	uv_tcp_t *l = srv->reserve;

	if (!srv->have_addr || srv->adopted)
		return UV_EINVAL;
	if (srv->listener)
		return UV_EALREADY;
	if (!l)
		return http_server_listen(srv, (const struct sockaddr *)&a);
	srv->reserve = NULL;
	return start_listening(srv, l);
}

const struct sockaddr *http_server_addr(const struct http_server *srv)
{
	return (const struct sockaddr *)&srv->addr;
}

void http_server_unlisten(struct http_server *srv)
{
	struct sockaddr_storage a = srv->addr;
	int rc;

	if (!srv->listener)
		return;
	/* libuv closes the socket at once; the close callback comes later. */
	close_listener(srv, srv->listener);
	srv->listener = NULL;
	if (srv->freeing || srv->adopted)
		return;
	/* A bound socket that does not listen refuses connections, like a
	 * closed port, but keeps the port ours (port 0 took an ephemeral one,
	 * which an outgoing connection could otherwise take meanwhile). */
	srv->reserve = bound_socket(srv, (const struct sockaddr *)&a, &rc);
	if (!srv->reserve)
		log_warn("cannot keep port %d reserved while not listening: %s",
			 opt_addr_port((const struct sockaddr *)&a), uv_strerror(rc));
}

bool http_server_is_listening(const struct http_server *srv)
{
	return srv->listener != NULL;
}

static void on_drain_idle(uv_idle_t *h)
{
	struct http_server *srv = h->data;
	void (*done)(void *arg) = srv->drain_done;

	uv_idle_stop(h);
	srv->drain_done = NULL;
	if (done)
		done(srv->drain_arg);
}

/* Once draining leaves no connection, drain_done runs on the next loop turn. */
static void drain_check(struct http_server *srv)
{
	if (srv->draining && !srv->freeing && list_empty(&srv->conns) && srv->drain_done &&
	    srv->drain_idle_open)
		uv_idle_start(&srv->drain_idle, on_drain_idle);
}

/*
 * Takes in the connections the kernel completed on listening socket lfd
 * (non-blocking) and nobody accepted yet, before a drain closes it:
 * closing a listener resets those, and their clients have sent — or are
 * sending — a request. They are served as if accepted (max_conns does
 * not apply).
 */
static void accept_backlog_fd(struct http_server *srv, int lfd)
{
	int fd;

	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		if (http_server_serve_fd(srv, fd))
			close(fd);
	}
}

static void accept_backlog(struct http_server *srv, uv_tcp_t *l)
{
	uv_os_fd_t lfd;

	if (l && uv_fileno((uv_handle_t *)l, &lfd) == 0)
		accept_backlog_fd(srv, lfd);
}

int http_server_listen_also_fd(struct http_server *srv, unsigned key, int fd)
{
	struct also *a;
	uv_tcp_t *l;
	size_t i;
	int flags = fcntl(fd, F_GETFL);
	int rc = 0;

	if (srv->freeing)
		rc = UV_EINVAL;
	for (i = 0; !rc && i < srv->nalso; i++) {
		if (srv->also[i].key == key)
			rc = UV_EEXIST;
	}
	if (!rc && (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK)))
		rc = uv_translate_sys_error(errno);
	if (!rc && buf_grow_array((void **)&srv->also, &srv->capalso, srv->nalso + 1,
				  sizeof(*srv->also)))
		rc = UV_ENOMEM;
	if (rc || srv->draining) {
		/* Too late to serve it: what waits on it is taken in, and it is closed. */
		if (srv->draining && !srv->freeing)
			accept_backlog_fd(srv, fd);
		close(fd);
		return rc;
	}
	l = malloc(sizeof(*l));
	if (!l) {
		close(fd);
		return UV_ENOMEM;
	}
	uv_tcp_init(srv->loop, l);
	l->data = srv;
	rc = uv_tcp_open(l, fd);
	if (rc)
		close(fd);	/* the handle did not take it */
	else
		rc = uv_listen((uv_stream_t *)l, srv->cfg.backlog, on_connection);
	if (rc) {
		close_listener(srv, l);
		return rc;
	}
	a = &srv->also[srv->nalso++];
	a->tcp = l;
	a->key = key;
	return 0;
}

void http_server_unlisten_also(struct http_server *srv, unsigned key)
{
	size_t i;

	for (i = 0; i < srv->nalso; i++) {
		if (srv->also[i].key != key)
			continue;
		close_listener(srv, srv->also[i].tcp);
		srv->also[i] = srv->also[--srv->nalso];
		return;
	}
}

/* Every listener handed in by http_server_listen_also_fd closed (after its backlog, when drain). */
static void close_also(struct http_server *srv, bool drain)
{
	while (srv->nalso > 0) {
		struct also *a = &srv->also[--srv->nalso];

		if (drain)
			accept_backlog(srv, a->tcp);
		close_listener(srv, a->tcp);
	}
}

/*
 * Whether a connection waiting between requests has its next request's
 * bytes in already, in the kernel or in inbuf.
 */
static bool bytes_in(struct conn *c)
{
	uv_os_fd_t fd;
	int waiting = 0;

	if (c->inbuf.len > 0)
		return true;
	return uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && ioctl(fd, FIONREAD, &waiting) == 0 &&
	       waiting > 0;
}

void http_server_drain(struct http_server *srv, void (*done)(void *arg), void *arg)
{
	struct conn *c;
	struct list_node *n;

	srv->draining = true;
	srv->drain_done = done;
	srv->drain_arg = arg;
	if (!srv->drain_idle_open && uv_idle_init(srv->loop, &srv->drain_idle) == 0) {
		srv->drain_idle.data = srv;
		srv->drain_idle_open = true;
	}
	accept_backlog(srv, srv->listener);
	http_server_unlisten(srv);
	close_also(srv, true);
	for (n = list_first(&srv->conns); n; n = list_next(&srv->conns, n)) {
		c = list_entry(n, struct conn, link);
		if (c->state == CONN_HANDLING && c->ex.active) {
			c->ex.req.keep_alive = false;
			continue;
		}
		if (c->state != CONN_READING || c->in_message)
			continue;	/* a request arriving: let in (header_timeout_ms bounds it) */
		/*
		 * Between requests: one whose bytes are in is let in. A new
		 * connection with none yet (a client connects to send one) has
		 * DRAIN_FIRST_MS for its first byte, not header_timeout_ms: one
		 * that stays silent (a pool's spare) must not hold the drain.
		 * A keep-alive connection with nothing sent since its answer is
		 * idle, and closes.
		 */
		if (bytes_in(c))
			conn_arm(c, TIMER_HEADER);
		else if (c->sent_total == 0)
			conn_arm(c, TIMER_FIRST);
		else
			conn_close_when_flushed(c);
	}
	drain_check(srv);
}

void http_server_close_conns(struct http_server *srv, bool reset)
{
	struct conn *c;
	struct list_node *n;

	for (n = list_first(&srv->conns); n; n = list_next(&srv->conns, n)) {
		c = list_entry(n, struct conn, link);
		if (c->state == CONN_CLOSING)
			continue;
		conn_abort_exchange(c, HTTP_ABORT_SERVER);
		conn_close(c, reset);
	}
}

unsigned http_server_conn_count(const struct http_server *srv)
{
	return (unsigned)srv->conns.len;
}

uint64_t http_server_rejected(const struct http_server *srv)
{
	return srv->rejected;
}

static void on_drain_idle_closed(uv_handle_t *h)
{
	struct http_server *srv = h->data;

	srv->drain_idle_open = false;
	server_maybe_done(srv);
}

static void server_maybe_done(struct http_server *srv)
{
	drain_check(srv);
	if (!srv->freeing || !list_empty(&srv->conns) || srv->closing_listeners)
		return;
	if (srv->drain_idle_open) {
		if (!uv_is_closing((uv_handle_t *)&srv->drain_idle))
			uv_close((uv_handle_t *)&srv->drain_idle, on_drain_idle_closed);
		return;
	}
	if (srv->free_done)
		srv->free_done(srv->free_arg);
	free(srv->also);
	free(srv);
}

void http_server_free(struct http_server *srv, void (*done)(void *arg), void *arg)
{
	srv->freeing = true;
	srv->drain_done = NULL;
	srv->free_done = done;
	srv->free_arg = arg;
	http_server_unlisten(srv);
	close_also(srv, false);
	if (srv->reserve) {
		close_listener(srv, srv->reserve);
		srv->reserve = NULL;
	}
	http_server_close_conns(srv, false);
	server_maybe_done(srv);
}
