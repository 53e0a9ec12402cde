/*
 * rawhttp: a socket-level HTTP/1.x client and an SSE parser for the
 * integration tests.
 */
#define _GNU_SOURCE	/* memmem */
#include "tests/support/rawhttp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/harness.h"

/* ---- SSE ---- */

static int sse_dispatch(struct sse_reader *r, double at_ms)
{
	struct sse_event *e;

	if (r->nev == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct sse_event *ev = realloc(r->ev, cap * sizeof(*ev));

		if (!ev)
			return -1;
		r->ev = ev;
		r->cap = cap;
	}
	e = &r->ev[r->nev++];
	e->event = r->event;
	e->data = r->data.data ? buf_steal(&r->data) : strdup("");
	e->at_ms = at_ms;
	e->body_off = r->fed;
	r->event = NULL;
	r->any = false;
	return e->data ? 0 : -1;
}

/* One line of the stream (without its line end). */
static int sse_line(struct sse_reader *r, const char *s, size_t n, double at_ms)
{
	const char *colon;
	const char *v;
	size_t name_len;
	size_t vlen;

	if (n == 0)
		return r->any ? sse_dispatch(r, at_ms) : 0;
	if (s[0] == ':') {
		r->comments++;
		return 0;
	}
	colon = memchr(s, ':', n);
	name_len = colon ? (size_t)(colon - s) : n;
	v = colon ? colon + 1 : s + n;
	if (v < s + n && *v == ' ')
		v++;
	vlen = (size_t)(s + n - v);
	if (name_len == 4 && memcmp(s, "data", 4) == 0) {
		/* A data line after the first: joined with "\n". */
		if (r->data.data)
			buf_append(&r->data, "\n", 1);
		buf_append(&r->data, v, vlen);
		r->any = true;
	} else if (name_len == 5 && memcmp(s, "event", 5) == 0) {
		free(r->event);
		r->event = strndup(v, vlen);
		r->any = true;
	} else if (name_len == 2 && memcmp(s, "id", 2) == 0) {
		r->ids++;
	}
	return 0;
}

int sse_reader_feed(struct sse_reader *r, const char *p, size_t n, double at_ms)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t span = nl ? (size_t)(nl - p) + 1 : n;
		size_t len;

		r->fed += span;
		if (buf_append(&r->line, p, nl ? span - 1 : span))
			return -1;
		p += span;
		n -= span;
		if (!nl)
			break;
		len = r->line.len;
		if (len && r->line.data[len - 1] == '\r')
			len--;
		if (sse_line(r, r->line.data, len, at_ms))
			return -1;
		buf_reset(&r->line);
	}
	return 0;
}

void sse_reader_free(struct sse_reader *r)
{
	size_t i;

	for (i = 0; i < r->nev; i++) {
		free(r->ev[i].event);
		free(r->ev[i].data);
	}
	free(r->ev);
	free(r->event);
	buf_free(&r->line);
	buf_free(&r->data);
	memset(r, 0, sizeof(*r));
}

/* ---- the connection ---- */

int raw_open(struct raw_http *c, const char *addr, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(addr, ':');

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->first_byte_ms = c->head_ms = c->end_ms = -1;
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((unsigned short)atoi(colon + 1));
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		raw_close(c);
		return -1;
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

int raw_send(struct raw_http *c, const char *data, size_t len)
{
	double end = now_ms() + 5000;

	while (len) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
		ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

		if (n > 0) {
			data += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (now_ms() > end)
			return -1;
		poll(&pfd, 1, 50);
	}
	return 0;
}

int raw_post(struct raw_http *c, const char *path, int minor, const char *const *headers,
	     const char *body)
{
	struct buf req = { 0 };
	size_t i;
	int rc;

	buf_printf(&req, "POST %s HTTP/1.%d\r\nHost: %s\r\nContent-Type: application/json\r\n"
		   "Content-Length: %zu\r\n", path, minor, c->addr, strlen(body));
	for (i = 0; headers && headers[i]; i++)
		buf_printf(&req, "%s\r\n", headers[i]);
	buf_puts(&req, "\r\n");
	buf_puts(&req, body);
	rc = req.data ? raw_send(c, req.data, req.len) : -1;
	c->sent_ms = now_ms();
	buf_free(&req);
	return rc;
}

/* ---- the response ---- */

static void set_bad(struct raw_http *c, const char *why)
{
	c->state = RAW_BAD;
	c->bad = why;
}

static void body_bytes(struct raw_http *c, const char *p, size_t n, double at)
{
	buf_append(&c->body, p, n);
	sse_reader_feed(&c->sse, p, n, at);
}

/* The end of the CRLF-terminated line starting at raw+pos, or NULL. */
static const char *line_end(const struct raw_http *c)
{
	const char *p = c->raw.data + c->pos;

	return memmem(p, c->raw.len - c->pos, "\r\n", 2);
}

static void parse_head(struct raw_http *c, double at)
{
	const char *p = c->raw.data + c->pos;
	const char *end = memmem(p, c->raw.len - c->pos, "\r\n\r\n", 4);
	char v[64];
	int major;

	if (!end)
		return;
	c->head = strndup(p, (size_t)(end - p) + 4);
	c->pos += (size_t)(end - p) + 4;
	c->head_ms = at - c->sent_ms;
	if (sscanf(c->head, "HTTP/%d.%d %d", &major, &c->minor, &c->status) != 3 || major != 1) {
		set_bad(c, "not an HTTP/1.x status line");
		return;
	}
	if (header_field(c->head, "Transfer-Encoding", v, sizeof(v)) &&
	    strcasecmp(v, "chunked") == 0) {
		c->chunked = true;
		c->state = RAW_CHUNK_SIZE;
	} else if (header_field(c->head, "Content-Length", v, sizeof(v))) {
		c->left = (size_t)strtoull(v, NULL, 10);
		c->state = c->left ? RAW_LENGTH : RAW_DONE;
	} else {
		c->state = RAW_UNTIL_CLOSE;
	}
}

/* Parses what raw holds past pos; at is the time of the latest read. */
static void parse(struct raw_http *c, double at)
{
	for (;;) {
		const char *p = c->raw.data + c->pos;
		size_t avail = c->raw.len - c->pos;
		const char *eol;
		size_t n;

		switch (c->state) {
		case RAW_HEAD:
			parse_head(c, at);
			if (c->state == RAW_HEAD)
				return;
			break;
		case RAW_CHUNK_SIZE: {
			char *endp;
			unsigned long long size;

			eol = line_end(c);
			if (!eol)
				return;
			size = strtoull(p, &endp, 16);
			if (endp == p || (endp != eol && *endp != ';')) {
				set_bad(c, "a bad chunk-size line");
				return;
			}
			c->pos += (size_t)(eol - p) + 2;
			c->left = (size_t)size;
			if (size == 0) {
				c->state = RAW_TRAILER;
				c->trailer = strdup("");
			} else {
				c->nchunks++;
				c->state = RAW_CHUNK_DATA;
			}
			break;
		}
		case RAW_CHUNK_DATA:
		case RAW_LENGTH:
			n = avail < c->left ? avail : c->left;
			if (!n)
				return;
			body_bytes(c, p, n, at);
			c->pos += n;
			c->left -= n;
			if (!c->left)
				c->state = c->state == RAW_LENGTH ? RAW_DONE : RAW_CHUNK_END;
			break;
		case RAW_CHUNK_END:
			if (avail < 2)
				return;
			if (p[0] != '\r' || p[1] != '\n') {
				set_bad(c, "no CRLF after a chunk's data");
				return;
			}
			c->pos += 2;
			c->state = RAW_CHUNK_SIZE;
			break;
		case RAW_TRAILER: {
			size_t len;
			char *t;

			eol = line_end(c);
			if (!eol)
				return;
			len = (size_t)(eol - p);
			c->pos += len + 2;
			if (len == 0) {
				c->state = RAW_DONE;
				break;
			}
			t = realloc(c->trailer, strlen(c->trailer) + len + 3);
			if (!t) {
				set_bad(c, "out of memory");
				return;
			}
			c->trailer = t;
			strncat(c->trailer, p, len);
			strcat(c->trailer, "\r\n");
			break;
		}
		case RAW_UNTIL_CLOSE:
			if (avail)
				body_bytes(c, p, avail, at);
			c->pos += avail;
			return;
		case RAW_DONE:
			if (c->end_ms < 0)
				c->end_ms = at - c->sent_ms;
			return;
		case RAW_BAD:
			return;
		}
	}
}

bool raw_has_events(const struct raw_http *c, void *n_events)
{
	return c->sse.nev >= *(size_t *)n_events;
}

bool raw_has_head(const struct raw_http *c, void *unused)
{
	(void)unused;
	return c->head != NULL;
}

static bool finished(const struct raw_http *c)
{
	return c->state == RAW_DONE || c->state == RAW_BAD || c->eof || c->err;
}

int raw_read(struct raw_http *c, raw_until_fn until, void *arg, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	char chunk[65536];

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		double left;
		ssize_t n;

		if (until ? until(c, arg) : c->state == RAW_DONE)
			return 0;
		if (finished(c) || c->fd < 0)
			return -1;
		left = end - now_ms();
		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(c->fd, chunk, sizeof(chunk), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			double at = now_ms();

			if (n < 0)
				c->err = errno;
			else
				c->eof = true;
			if (c->state == RAW_UNTIL_CLOSE && n == 0)
				c->state = RAW_DONE;
			parse(c, at);
			if (c->end_ms < 0)
				c->end_ms = at - c->sent_ms;
			continue;
		}
		{
			double at = now_ms();

			if (c->first_byte_ms < 0)
				c->first_byte_ms = at - c->sent_ms;
			buf_append(&c->raw, chunk, (size_t)n);
			parse(c, at);
		}
	}
}

const char *raw_header(const struct raw_http *c, const char *name, char *out, size_t len)
{
	const char *eol = c->head ? strstr(c->head, "\r\n") : NULL;

	return eol ? header_field(eol + 2, name, out, len) : NULL;
}

const char *raw_trailer(const struct raw_http *c, const char *name, char *out, size_t len)
{
	return c->trailer ? header_field(c->trailer, name, out, len) : NULL;
}

const char *raw_tail(const struct raw_http *c, size_t max)
{
	static char out[16384];
	size_t from = c->raw.len > max ? c->raw.len - max : 0;
	size_t o = 0;
	size_t i;

	if (from)
		o += (size_t)snprintf(out, sizeof(out), "[%zu bytes before] ", from);
	for (i = from; i < c->raw.len && o + 8 < sizeof(out); i++) {
		unsigned char ch = (unsigned char)c->raw.data[i];

		if (ch == '\r')
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\r");
		else if (ch == '\n')
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\n\n");
		else if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
	return out;
}

int raw_next(struct raw_http *c, struct raw_http *next)
{
	if (c->state != RAW_DONE || c->pos != c->raw.len || c->fd < 0)
		return -1;
	memset(next, 0, sizeof(*next));
	next->fd = c->fd;
	next->first_byte_ms = next->head_ms = next->end_ms = -1;
	snprintf(next->addr, sizeof(next->addr), "%s", c->addr);
	c->fd = -1;
	return 0;
}

void raw_close(struct raw_http *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void raw_free(struct raw_http *c)
{
	raw_close(c);
	buf_free(&c->raw);
	buf_free(&c->body);
	sse_reader_free(&c->sse);
	free(c->head);
	free(c->trailer);
	c->head = c->trailer = NULL;
}
