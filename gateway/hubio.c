/*
 * hubio: frames over a libuv stream (hubio.h).
 */
#include "gateway/hubio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A frame's rest the socket did not take at once, until written. */
struct write_req {
	uv_write_t req;
	char data[];
};

static void on_written(uv_write_t *req, int status)
{
	(void)status;
	free(req);
}

int hubio_send(uv_stream_t *s, enum hubmsg_type type, size_t n, const struct hubmsg_field *f)
{
	struct buf b = { 0 };
	struct write_req *r = NULL;
	uv_buf_t ub;
	size_t done = 0;
	int rc = hubmsg_encode(&b, type, n, f);

	if (rc)
		goto out;
	ub = uv_buf_init(b.data, (unsigned)b.len);
	rc = uv_try_write(s, &ub, 1);
	if (rc >= 0)
		done = (size_t)rc;
	else if (rc != UV_EAGAIN)
		goto out;
	rc = 0;
	if (done == b.len)
		goto out;
	r = malloc(sizeof(*r) + b.len - done);
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(r->data, b.data + done, b.len - done);
	ub = uv_buf_init(r->data, (unsigned)(b.len - done));
	rc = uv_write(&r->req, s, &ub, 1, on_written);
	if (rc)
		free(r);
out:
	buf_free(&b);
	return rc;
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
	buf_consume(in, used);
	return 0;
}
