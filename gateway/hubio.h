/*
 * hubio: hubmsg.h's frames over a libuv stream, for both ends of a
 * workers gateway's sockets (hub.c, worker.c): a frame is written at once
 * when the socket takes it whole, else the rest is queued behind the
 * frames before it; bytes read are kept in a buffer and handed on frame
 * by frame.
 */
#ifndef FAULTLINE_GATEWAY_HUBIO_H
#define FAULTLINE_GATEWAY_HUBIO_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "common/buf.h"
#include "gateway/hubmsg.h"

/*
 * Sends one frame on s. Returns 0, or a negative errno / libuv error code
 * when it could not be written or queued (the link is then to be taken
 * as lost). A queued write that fails later is not reported: the read
 * side sees the socket end.
 */
int hubio_send(uv_stream_t *s, enum hubmsg_type type, size_t n, const struct hubmsg_field *f);

/* A libuv alloc callback's buffer: the free room of in (grown to 64 KiB free). */
void hubio_alloc(struct buf *in, uv_buf_t *ub);

/*
 * nread bytes were read into in's free room: calls on_frame(arg, m) for
 * every whole frame, in order, until it returns false (the link was
 * dropped: in is then left alone), and keeps the rest of a frame for the
 * next read. Returns 0, or -EBADMSG at a malformed frame.
 */
int hubio_read(struct buf *in, size_t nread, bool (*on_frame)(void *arg, const struct hubmsg *m),
	       void *arg);

#endif
