/*
 * hubio: frames over a libuv stream (hubio.h). A socket sent with a frame
 * goes as a copy (its own descriptor, on a handle of its own, closed once
 * sent), so the sender's stays its own.
 */
#include "gateway/hubio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A frame's rest the socket did not take at once, until written. */
struct write_req {
	uv_write_t req;
	uv_tcp_t *carried;		/* the socket going with it; NULL: none */
	char data[];
};

static void on_carried_closed(uv_handle_t *h)
{
	free(h);
}

static void carried_close(uv_tcp_t *t)
{
	if (t)
		uv_close((uv_handle_t *)t, on_carried_closed);
}

static void on_written(uv_write_t *req, int status)
{
	struct write_req *r = (struct write_req *)req;

	(void)status;
	carried_close(r->carried);
	free(r);
}

/* A handle on a copy of fd, for libuv to send, or NULL with *rc set. */
static uv_tcp_t *carried_open(uv_loop_t *loop, int fd, int *rc)
{
	uv_tcp_t *t = malloc(sizeof(*t));
	int copy;

	if (!t) {
		*rc = -ENOMEM;
		return NULL;
	}
	uv_tcp_init(loop, t);
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	*rc = copy < 0 ? -errno : uv_tcp_open(t, copy);
	if (*rc) {
		if (copy >= 0)
			close(copy);
		carried_close(t);
		return NULL;
	}
	return t;
}

/* One frame, with the socket t (NULL: none) going with its first byte. */
static int send_with(uv_stream_t *s, enum hubmsg_type type, size_t n,
		     const struct hubmsg_field *f, uv_tcp_t *t)
{
	struct buf b = { 0 };
	struct write_req *r = NULL;
	uv_buf_t ub;
	size_t done = 0;
	int rc;

	if (uv_stream_get_write_queue_size(s) >= HUBIO_QUEUE_MAX) {
		rc = -ENOBUFS;
		goto out;
	}
	rc = hubmsg_encode(&b, type, n, f);
	if (rc)
		goto out;
	ub = uv_buf_init(b.data, (unsigned)b.len);
	rc = uv_try_write2(s, &ub, 1, (uv_stream_t *)t);
	if (rc > 0) {
		done = (size_t)rc;
		carried_close(t);	/* it went with the bytes written */
		t = NULL;
	} else if (rc != UV_EAGAIN) {
		goto out;
	}
	rc = 0;
	if (done == b.len)
		goto out;
	r = malloc(sizeof(*r) + b.len - done);
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(r->data, b.data + done, b.len - done);
	r->carried = t;
	ub = uv_buf_init(r->data, (unsigned)(b.len - done));
	rc = uv_write2(&r->req, s, &ub, 1, (uv_stream_t *)t, on_written);
	if (rc)
		free(r);
	else
		t = NULL;	/* closed once written */
out:
	carried_close(t);
	buf_free(&b);
	return rc;
}

int hubio_send(uv_stream_t *s, enum hubmsg_type type, size_t n, const struct hubmsg_field *f)
{
	return send_with(s, type, n, f, NULL);
}

int hubio_send_fd(uv_stream_t *s, enum hubmsg_type type, size_t n,
		  const struct hubmsg_field *f, int fd)
{
	int rc;
	uv_tcp_t *t = carried_open(s->loop, fd, &rc);

	return t ? send_with(s, type, n, f, t) : rc;
}

void hubio_alloc(struct buf *in, uv_buf_t *ub)
{
	if (buf_reserve(in, 65536)) {
		*ub = uv_buf_init(NULL, 0);
		return;
	}
	*ub = uv_buf_init(in->data + in->len, (unsigned)(in->cap - in->len - 1));
}

int hubio_read(struct buf *in, size_t nread, bool (*on_frame)(void *arg, const struct hubmsg *m),
	       void *arg)
{
	static struct hubmsg m;		/* large: one loop, one frame at a time */
	size_t used = 0;
	ssize_t got;

	in->len += nread;
	in->data[in->len] = '\0';
	while ((got = hubmsg_decode(in->data + used, in->len - used, &m)) > 0) {
		used += (size_t)got;
		if (!on_frame(arg, &m))
			return 0;
	}
	if (got < 0)
		return -EBADMSG;
	if (used)	/* not while a long frame comes in piece by piece: no memmove per read */
		buf_consume(in, used);
	return 0;
}
