/*
 * scriptstub: a scripted upstream on a plain socket, for the gateway tests.
 */
#define _GNU_SOURCE	/* memmem */
#include "tests/support/scriptstub.h"

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

#include "common/buf.h"
#include "tests/support/harness.h"

/*
 * Waits up to ms for fd to be readable, or the stub to be stopped.
 * Returns 1 (readable), 0 (time up) or -1 (stopped).
 */
static int wait_readable(struct script_stub *s, int fd, double ms)
{
	struct pollfd pfd[2] = { { .fd = s->wake[0], .events = POLLIN },
				 { .fd = fd, .events = POLLIN } };
	int n = poll(pfd, fd >= 0 ? 2 : 1, ms < 0 ? -1 : (int)ms);

	if (n > 0 && pfd[0].revents)
		return -1;
	return n > 0 ? 1 : 0;
}

/* Reads one request whole (5 s at most). Returns 0 or -1. */
static int read_request(struct script_stub *s, int fd)
{
	struct buf in = { 0 };
	double end = now_ms() + 5000;
	int rc = -1;

	for (;;) {
		char chunk[4096];
		const char *head_end;
		ssize_t n;

		if (in.data && (head_end = memmem(in.data, in.len, "\r\n\r\n", 4))) {
			size_t head = (size_t)(head_end - in.data) + 4;
			const char *cl = strcasestr(in.data, "\r\ncontent-length:");
			size_t body = cl && cl < head_end ? strtoul(cl + 17, NULL, 10) : 0;

			if (in.len >= head + body) {
				rc = 0;
				break;
			}
		}
		if (now_ms() > end || wait_readable(s, fd, end - now_ms()) <= 0)
			break;
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			break;
		buf_append(&in, chunk, (size_t)n);
	}
	buf_free(&in);
	return rc;
}

/* Plays the script on one connection. */
static void serve(struct script_stub *s, int fd)
{
	size_t i;

	if (read_request(s, fd))
		return;
	pthread_mutex_lock(&s->mu);
	s->requests++;
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < s->nsteps; i++) {
		const char *p = s->steps[i].bytes;
		size_t len = strlen(p);

		if (s->steps[i].delay_ms > 0 && wait_readable(s, -1, s->steps[i].delay_ms) < 0)
			return;
		while (len) {
			ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

			if (n <= 0)
				return;
			p += n;
			len -= (size_t)n;
		}
	}
	while (s->hold_open) {
		char drop[4096];

		if (wait_readable(s, fd, -1) <= 0 || recv(fd, drop, sizeof(drop), 0) <= 0)
			return;
	}
}

static void *stub_main(void *arg)
{
	struct script_stub *s = arg;

	while (wait_readable(s, s->lfd, -1) > 0) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			continue;
		serve(s, fd);
		close(fd);
	}
	return NULL;
}

int script_stub_start(struct script_stub *s, const struct script_step *steps, size_t n,
		      bool hold_open)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	int one = 1;

	memset(s, 0, sizeof(*s));
	s->lfd = -1;
	s->steps = steps;
	s->nsteps = n;
	s->hold_open = hold_open;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (pipe(s->wake))
		return -1;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		goto out_close;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->lfd, 16) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &salen))
		goto out_close;
	snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	pthread_mutex_init(&s->mu, NULL);
	if (pthread_create(&s->thread, NULL, stub_main, s))
		goto out_close;
	s->running = true;
	return 0;

out_close:
	if (s->lfd >= 0)
		close(s->lfd);
	s->lfd = -1;
	close(s->wake[0]);
	close(s->wake[1]);
	return -1;
}

unsigned script_stub_requests(struct script_stub *s)
{
	unsigned n;

	pthread_mutex_lock(&s->mu);
	n = s->requests;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void script_stub_stop(struct script_stub *s)
{
	if (!s->running)
		return;
	if (write(s->wake[1], "x", 1) != 1)
		perror("script_stub_stop");
	pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	s->lfd = -1;
	s->running = false;
}
