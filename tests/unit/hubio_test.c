/*
 * hubio: frames over a libuv stream — here one end of a socketpair whose
 * other end the test reads, or does not: a peer that stops reading makes
 * sends refused once HUBIO_QUEUE_MAX waits (the sender's memory stays
 * bounded), every frame taken before arrives whole and in order once the
 * peer reads again, and sends are taken again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "gateway/hubio.h"
#include "gateway/hubmsg.h"

static struct hubmsg m;

Test(hubio, a_peer_that_does_not_read_is_refused_past_the_bound, .timeout = 30)
{
	enum { FIELD = 1 << 20 };
	uv_loop_t loop;
	uv_pipe_t p;
	int sv[2];
	char *big = malloc(FIELD);
	char no[16];
	struct buf in = { 0 };
	size_t sent = 0;
	size_t got = 0;
	size_t frames = 0;
	unsigned k;
	int rc = 0;

	cr_assert_not_null(big);
	memset(big, 'x', FIELD);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(uv_pipe_init(&loop, &p, 0), 0);
	cr_assert_eq(uv_pipe_open(&p, sv[0]), 0);
	for (k = 0; k < 64; k++) {
		struct hubmsg_field f[2] = { { no, 0 }, { big, FIELD } };

		f[0].len = (size_t)snprintf(no, sizeof(no), "%u", k);
		rc = hubio_send((uv_stream_t *)&p, HUB_BUDGET, 2, f);
		if (rc)
			break;
		sent++;
	}
	cr_assert_eq(rc, -ENOBUFS, "frame %u: %d", k, rc);
	cr_assert_geq(uv_stream_get_write_queue_size((uv_stream_t *)&p), HUBIO_QUEUE_MAX);
	cr_assert_lt(uv_stream_get_write_queue_size((uv_stream_t *)&p), HUBIO_QUEUE_MAX + 2 * FIELD,
		     "the queue went on growing past the bound");
	/* The peer reads again: every frame taken arrives, whole, in order. */
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	while (frames < sent) {
		ssize_t n;
		ssize_t len;

		uv_run(&loop, UV_RUN_NOWAIT);
		cr_assert_eq(buf_reserve(&in, 1 << 16), 0);
		n = read(sv[1], in.data + in.len, in.cap - in.len - 1);
		if (n <= 0) {
			cr_assert(n < 0 && errno == EAGAIN);
			continue;
		}
		in.len += (size_t)n;
		got += (size_t)n;
		while ((len = hubmsg_decode(in.data, in.len, &m)) > 0) {
			snprintf(no, sizeof(no), "%zu", frames);
			cr_assert_eq(m.type, HUB_BUDGET);
			cr_assert_eq(m.f[0].len, strlen(no));
			cr_assert_eq(memcmp(m.f[0].data, no, strlen(no)), 0, "out of order");
			cr_assert_eq(m.f[1].len, FIELD);
			buf_consume(&in, (size_t)len);
			frames++;
		}
		cr_assert_geq(len, 0);
	}
	cr_assert_eq(uv_stream_get_write_queue_size((uv_stream_t *)&p), 0);
	{
		struct hubmsg_field f[1] = { hubmsg_str("after") };

		cr_assert_eq(hubio_send((uv_stream_t *)&p, HUB_BUDGET, 1, f), 0,
			     "sends are not taken again once the peer read");
	}
	uv_close((uv_handle_t *)&p, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	close(sv[1]);
	buf_free(&in);
	free(big);
}
