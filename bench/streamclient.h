/*
 * streamclient: what the streaming benchmark client's parts share — the
 * state of one stream and of the whole run, the calls an engine makes as
 * bytes arrive and streams end, and the two engines that move the bytes
 * (libcurl's multi interface, or raw libuv sockets with http-parser).
 */
#ifndef FAULTLINE_BENCH_STREAMCLIENT_H
#define FAULTLINE_BENCH_STREAMCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"

/* A growable array of samples in milliseconds. */
struct samples {
	double *v;
	size_t n;
	size_t cap;
};

enum stream_state {
	STREAM_IDLE,		/* not started */
	STREAM_RUNNING,
	STREAM_COMPLETED,	/* ended with [DONE] */
	STREAM_FAILED,		/* transport error, non-200, error event, or no [DONE] */
	STREAM_UNFINISHED,	/* still running when the duration bound hit */
};

struct run;
struct event_log;

struct stream {
	struct run *run;
	int index;
	enum stream_state state;
	uint64_t start_ns;		/* monotonic: connect started */
	uint64_t last_arrive_ns;	/* the last token's; 0 before the first */
	uint64_t last_read_ns;
	int tokens;
	bool saw_done;
	bool saw_error_event;
	bool saw_malformed;		/* a data event that is not one whole object */
	struct buf pending;		/* the part of an SSE event not yet ended */
	struct samples offsets;		/* with --token-ms: arrival - start - k x token_ms */
	void *conn;			/* the engine's per-stream state */
};

struct run {
	uv_loop_t *loop;
	const char *url;
	const char *body;		/* the request body, shared by every stream */
	size_t body_len;
	struct stream *streams;
	int nstreams;
	int nactive;			/* started and not ended */
	bool starting;			/* in engine->start: all_done waits */
	bool stopping;			/* the duration bound hit */
	void (*all_done)(struct run *r);	/* called when nactive reaches 0 */
	void *all_done_data;
	void *engine;			/* the engine's run state */

	struct samples gaps;		/* inter-token gaps by arrival, ms */
	struct samples read_gaps;	/* the same by when the client read them */
	struct samples ttft;		/* time to first token (arrival), ms */
	double token_ms;		/* the provider's token interval; 0: not given */
	struct samples lateness;	/* with token_ms: each token's, ms (see --help) */
	struct samples jitter;		/* with token_ms: |gap - token_ms|, ms */
	uint64_t shared_stamps;		/* tokens that came in one read with the one before */
	bool kernel_stamps;		/* arrival times are the kernel's */
	struct event_log *events;	/* every token's times, or NULL */
	int ncompleted;
	int nfailed;
	int nunfinished;
	int nhttp_errors;		/* answered with a status other than 200 */
	int nerror_events;
	int nmalformed;
	int nno_done;			/* ended cleanly without [DONE] */
	int ntransport_errors;
	char first_error[256];
	uint64_t bytes_in;
};

/*
 * Hands the stream the body bytes of one read (chunked framing already
 * removed): arrive_ns is when they reached the socket (the kernel's receive
 * timestamp, or the read time when there is none), read_ns when the client
 * read them, both monotonic. It splits them into SSE events on the
 * blank-line boundary and times each token event.
 */
void stream_on_body(struct stream *s, const char *data, size_t len, uint64_t arrive_ns,
		    uint64_t read_ns);

/*
 * Ends a stream. error is NULL when the response ended cleanly (then the
 * stream has completed if it saw [DONE]), else a sentence saying what went
 * wrong; status is the HTTP status seen (0: none). Calls run->all_done when
 * it was the last active stream.
 */
void stream_finish(struct stream *s, int status, const char *error);

/*
 * An engine starts every stream of the run (connect, send the request) and
 * calls stream_on_body and stream_finish as the answers come. start returns
 * 0 or a libuv error code (with run->first_error set). abort closes every
 * handle the engine still has open — the connections of streams still
 * running, without stream_finish for them, and its timers — so the loop can
 * end; it is called once, after the last stream ended or at the duration
 * bound. cleanup, called once the loop has stopped, frees what is left.
 */
struct engine {
	const char *name;
	int (*start)(struct run *r);
	void (*abort)(struct run *r);
	void (*cleanup)(struct run *r);
};

extern const struct engine engine_curl;
extern const struct engine engine_raw;

#endif
