/*
 * scriptstub: an upstream that answers every request with the same
 * scripted bytes — status line, headers and body written as given, step
 * by step with a pause before each — for the upstream answers mockprov
 * cannot give (SSE comments and id: lines, a role-only first chunk, an
 * {"error":…} chunk, a data: line that is not JSON). A plain socket on a
 * thread of its own, one connection at a time; no HTTP library, so it
 * sends exactly what the test wrote.
 */
#ifndef FAULTLINE_SCRIPTSTUB_H
#define FAULTLINE_SCRIPTSTUB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One write of the script. */
struct script_step {
	double delay_ms;		/* pause before it */
	const char *bytes;
};

struct script_stub {
	int lfd;			/* the listener; -1 when not running */
	int wake[2];			/* a byte on wake[1] stops the thread */
	pthread_t thread;
	char addr[64];			/* 127.0.0.1:PORT */
	const struct script_step *steps;
	size_t nsteps;
	bool hold_open;			/* after the script: wait for the client to close */
	pthread_mutex_t mu;
	unsigned requests;		/* requests read whole; under mu */
	bool running;
};

/*
 * Starts the stub on 127.0.0.1 (a free port, in s->addr): each
 * connection's request is read whole (headers and Content-Length body),
 * then the n steps are written (kept, not copied); then the connection is
 * closed, or, with hold_open, kept until the client closes it. Returns 0
 * or -1.
 */
int script_stub_start(struct script_stub *s, const struct script_step *steps, size_t n,
		      bool hold_open);

/* Requests read so far. */
unsigned script_stub_requests(struct script_stub *s);

/* Stops the thread and closes the listener (a no-op when not running). */
void script_stub_stop(struct script_stub *s);

#endif
