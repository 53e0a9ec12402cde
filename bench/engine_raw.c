/*
 * engine_raw: the lean streamclient engine — one non-blocking socket per
 * stream watched by a uv_poll_t, the request sent from one shared buffer,
 * each read done with recvmsg so the kernel's receive timestamp
 * (SO_TIMESTAMPNS) comes with the bytes, and the response parsed in place
 * by http-parser (which also undoes the chunked framing).
 *
 * The kernel's timestamp is when the bytes reached the socket, so a token's
 * arrival time does not depend on how soon this loop got round to reading
 * it; the read time is passed on as well, to show the difference.
 *
 * A stream's life: start_stream (connect) → on_poll writable: on_writable
 * (send the request) → on_poll readable: on_readable → on_body (SSE bytes)
 * → on_message_complete → the stream ends; a failure anywhere ends it in
 * conn_fail.
 */
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/opt.h"
#include "bench/streamclient.h"

#define READ_BUF_SIZE 65536

struct conn {
	uv_poll_t poll;		/* first: the handle's memory is the conn's */
	int fd;
	http_parser parser;
	struct stream *s;
	size_t sent;		/* request bytes written */
	uint64_t arrive_ns;	/* of the read being parsed */
	uint64_t read_ns;
	bool connected;
	bool complete;		/* the whole response was parsed */
	bool closing;
};

struct raw_run {
	struct sockaddr_storage addr;
	struct buf request;
	struct timebase tb;	/* maps the kernel's CLOCK_REALTIME stamps */
	bool aborted;
};

static void on_poll(uv_poll_t *h, int status, int events);

/* Every read lands here: the loop reads one socket at a time. */
static char read_buf[READ_BUF_SIZE];

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	stream_on_body(c->s, at, len, c->arrive_ns, c->read_ns);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->complete = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings parser_settings = {
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	close(c->fd);
	if (c->s)
		c->s->conn = NULL;
	free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->poll, on_conn_closed);
}

/* Ends the stream with an error (errnum: an errno, or 0) and closes it. */
static void conn_fail(struct conn *c, const char *what, int errnum)
{
	char msg[128];

	if (errnum)
		snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errnum));
	else
		snprintf(msg, sizeof(msg), "%s", what);
	stream_finish(c->s, (int)c->parser.status_code, msg);
	conn_close(c);
}

/* The socket reported an error: end the stream with what it was. */
static void conn_fail_socket(struct conn *c)
{
	socklen_t len = sizeof(int);
	int soerr = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) || !soerr)
		soerr = EIO;
	conn_fail(c, c->connected ? "read" : "connect", soerr);
}

/* The response is over (complete, or the peer closed): end the stream. */
static void conn_end(struct conn *c)
{
	if (c->complete) {
		stream_finish(c->s, (int)c->parser.status_code, NULL);
		conn_close(c);
	} else {
		conn_fail(c, "the server closed the connection before the end of "
			  "the response", 0);
	}
}

/* The kernel's receive time from a recvmsg's control data, or 0. */
static uint64_t kernel_stamp(struct msghdr *msg, const struct timebase *tb)
{
	struct cmsghdr *cm;
	struct timespec ts;
	int64_t ns;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - tb->unix_minus_mono_ns;
		return ns > 0 ? (uint64_t)ns : 0;
	}
	return 0;
}

/* Reads what the socket holds (until a short read) and parses it. */
static void on_readable(struct conn *c)
{
	struct raw_run *rr = c->s->run->engine;
	char control[CMSG_SPACE(sizeof(struct timespec)) * 2];
	struct iovec iov;
	struct msghdr msg;
	enum http_errno err;
	ssize_t n;

	do {
		iov.iov_base = read_buf;
		iov.iov_len = sizeof(read_buf);
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		n = recvmsg(c->fd, &msg, 0);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				conn_fail(c, "read", errno);
			return;
		}
		c->read_ns = clock_mono_ns();
		if (n == 0) {
			/* A close-delimited body ends here. */
			c->arrive_ns = c->read_ns;
			http_parser_execute(&c->parser, &parser_settings, NULL, 0);
			if (!c->closing)
				conn_end(c);
			return;
		}
		c->arrive_ns = kernel_stamp(&msg, &rr->tb);
		if (c->arrive_ns == 0 || c->arrive_ns > c->read_ns)
			c->arrive_ns = c->read_ns;
		http_parser_execute(&c->parser, &parser_settings, read_buf, (size_t)n);
		if (c->closing)
			return;		/* the run was aborted from a callback */
		err = HTTP_PARSER_ERRNO(&c->parser);
		if (c->complete) {
			conn_end(c);
			return;
		}
		if (err != HPE_OK) {
			char what[96];

			snprintf(what, sizeof(what), "bad HTTP response: %s",
				 http_errno_description(err));
			conn_fail(c, what, 0);
			return;
		}
	} while ((size_t)n == sizeof(read_buf));
}

/* Connected (or failed to): send the rest of the request. */
static void on_writable(struct conn *c)
{
	struct raw_run *rr = c->s->run->engine;
	socklen_t len = sizeof(int);
	int soerr = 0;
	ssize_t n;

	if (c->sent == rr->request.len)
		return;
	if (!c->connected) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr) {
			conn_fail(c, "connect", soerr);
			return;
		}
		c->connected = true;
	}
	n = send(c->fd, rr->request.data + c->sent, rr->request.len - c->sent, MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			conn_fail(c, "sending the request", errno);
		return;
	}
	c->sent += (size_t)n;
	if (c->sent == rr->request.len)
		uv_poll_start(&c->poll, UV_READABLE, on_poll);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct conn *c = h->data;

	if (c->closing)
		return;
	if (status < 0) {
		conn_fail_socket(c);
		return;
	}
	if (events & UV_WRITABLE)
		on_writable(c);
	if (!c->closing && (events & UV_READABLE))
		on_readable(c);
}

/* Splits http://HOST:PORT/PATH into HOST:PORT (parsed into rr) and PATH. */
static int parse_url(const char *url, struct raw_run *rr, struct buf *host_port,
		     const char **path)
{
	const char *hp = url + strlen("http://");
	const char *slash = strchr(hp, '/');
	size_t n = slash ? (size_t)(slash - hp) : strlen(hp);

	if (buf_append(host_port, hp, n))
		return -ENOMEM;
	*path = slash ? slash : "/";
	if (!strchr(host_port->data, ':'))
		return -EINVAL;
	return opt_parse_hostport(host_port->data, &rr->addr);
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

/* Opens the stream's socket and starts connecting. Returns 0 or -errno. */
static int start_stream(struct run *r, struct stream *s)
{
	struct raw_run *rr = r->engine;
	struct conn *c;
	int one = 1;
	int fd;
	int rc;

	fd = socket(rr->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->s = s;
	s->conn = c;
	http_parser_init(&c->parser, HTTP_RESPONSE);
	c->parser.data = c;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)))
		r->kernel_stamps = false;
	rc = uv_poll_init_socket(r->loop, &c->poll, fd);
	if (rc) {
		close(fd);
		free(c);
		s->conn = NULL;
		return rc;
	}
	c->poll.data = c;
	s->state = STREAM_RUNNING;
	r->nactive++;
	s->start_ns = clock_mono_ns();
	if (connect(fd, (const struct sockaddr *)&rr->addr, addr_len(&rr->addr)) &&
	    errno != EINPROGRESS) {
		conn_fail(c, "connect", errno);
		return 0;
	}
	uv_poll_start(&c->poll, UV_WRITABLE, on_poll);
	return 0;
}

static int raw_start(struct run *r)
{
	struct raw_run *rr = calloc(1, sizeof(*rr));
	struct buf host_port = { 0 };
	const char *path;
	int rc;
	int i;

	if (!rr)
		return UV_ENOMEM;
	r->engine = rr;
	timebase_init(&rr->tb, 0);
	r->kernel_stamps = true;
	rc = parse_url(r->url, rr, &host_port, &path);
	if (rc) {
		snprintf(r->first_error, sizeof(r->first_error),
			 "the raw engine takes http://NUMERIC-HOST:PORT/PATH, got \"%s\" "
			 "(use --engine curl for others)", r->url);
		rc = UV_EINVAL;
		goto out;
	}
	rc = buf_printf(&rr->request, "POST %s HTTP/1.1\r\nHost: %s\r\n"
			"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
			"Content-Length: %zu\r\n\r\n", path, host_port.data, r->body_len);
	rc |= buf_append(&rr->request, r->body, r->body_len);
	if (rc) {
		rc = UV_ENOMEM;
		goto out;
	}
	for (i = 0; i < r->nstreams && !rr->aborted; i++) {
		rc = start_stream(r, &r->streams[i]);
		if (rc) {
			snprintf(r->first_error, sizeof(r->first_error),
				 "stream %d: cannot open a socket: %s", i, strerror(-rc));
			goto out;
		}
	}
out:
	buf_free(&host_port);
	return rc;
}

static void raw_abort(struct run *r)
{
	struct raw_run *rr = r->engine;
	int i;

	if (!rr || rr->aborted)
		return;
	rr->aborted = true;
	for (i = 0; i < r->nstreams; i++) {
		if (r->streams[i].conn)
			conn_close(r->streams[i].conn);
	}
}

static void raw_cleanup(struct run *r)
{
	struct raw_run *rr = r->engine;

	if (!rr)
		return;
	buf_free(&rr->request);
	free(rr);
	r->engine = NULL;
}

const struct engine engine_raw = {
	.name = "raw",
	.start = raw_start,
	.abort = raw_abort,
	.cleanup = raw_cleanup,
};
