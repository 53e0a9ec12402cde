/*
 * hubio: hubmsg.h's frames over a libuv stream, for both ends of a
 * workers gateway's sockets (hub.c, worker.c): a frame is written at once
 * when the socket takes it whole, else the rest is queued behind the
 * frames before it; bytes read are kept in a buffer and handed on frame
 * by frame. A frame may carry a socket (a listening one the supervisor
 * hands a worker).
 */
#ifndef FAULTLINE_GATEWAY_HUBIO_H
#define FAULTLINE_GATEWAY_HUBIO_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "common/buf.h"
#include "gateway/hubmsg.h"

/*
 * How much may wait in user space for a peer to read: past it a send is
 * refused (-ENOBUFS), so that a peer that stopped reading (a stopped or
 * wedged process) does not grow the sender's memory without bound. A
 * single frame is always taken while the queue is under it.
 */
#define HUBIO_QUEUE_MAX (16u << 20)

/*
 * Sends one frame on s. Returns 0, or a negative errno / libuv error code
 * when it could not be written or queued (the link is then to be taken
 * as lost): -ENOBUFS when HUBIO_QUEUE_MAX bytes already wait to be read.
 * A queued write that fails later is not reported: the read side sees
 * the socket end.
 */
int hubio_send(uv_stream_t *s, enum hubmsg_type type, size_t n, const struct hubmsg_field *f);

/*
 * hubio_send, with a copy of fd — a socket — going with the frame's first
 * byte (SCM_RIGHTS: s must be a pipe opened for IPC, uv_pipe_init's ipc
 * 1); the caller's fd stays open and its own. The receiver takes it with
 * uv_accept on its pipe when the frame is whole.
 */
int hubio_send_fd(uv_stream_t *s, enum hubmsg_type type, size_t n,
		  const struct hubmsg_field *f, int fd);

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
