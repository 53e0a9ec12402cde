/*
 * outcome: what a client saw of one request, in DESIGN.md's words — ok,
 * http_error, timeout, refused, reset, truncated, stalled, invalid — decided
 * from the facts of its last attempt, whether a client that retries would
 * try again, and what a request comes to when libcurl's own re-sends took
 * it past the retries the client allowed. The outcomes themselves and
 * their names are common/records.h's. Pure: no I/O, no clock.
 */
#ifndef FAULTLINE_OUTCOME_H
#define FAULTLINE_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "common/records.h"	/* enum outcome, outcome_name */

/* Who ended an attempt before libcurl did. */
enum cut {
	CUT_NONE,
	CUT_TIMEOUT,	/* no answer (or no first token) within --timeout */
	CUT_STALL,	/* a stream went silent past --stall-timeout */
	CUT_MAX_TIME,	/* a stream still going at --max-time */
};

/* The facts of one attempt. */
struct attempt_facts {
	int curl_code;		/* CURLcode of the transfer (0 when cut) */
	long status;		/* HTTP status, 0 when none arrived */
	bool streaming;		/* the request asked for a stream */
	enum cut cut;
	bool body_valid;	/* non-streaming: a chat completion JSON */
	bool sse;		/* streaming: the answer was text/event-stream */
	bool saw_done;		/* streaming: "data: [DONE]" arrived */
	bool error_event;	/* streaming: an error event arrived */
	bool stall_event;	/* streaming: the first error event's error.code was
				 * "stream_stalled" (a gateway's word for an upstream
				 * that went silent mid-stream) */
	bool bad_frame;		/* streaming: a data payload was not JSON */
	bool content_seen;	/* streaming: a content token arrived */
};

/*
 * Classifies an attempt (see docs/results-format.md's table of outcomes). An attempt
 * that would be truncated is stalled instead when the server said, with a
 * "stream_stalled" error event, that the stream had gone silent.
 */
enum outcome outcome_classify(const struct attempt_facts *f);

/*
 * True when a retrying client would try again: refused, reset, timeout,
 * and HTTP 408, 409, 429 and 5xx — but never once a stream has shown
 * content (content_seen: the user saw part of an answer), and never after
 * truncated, stalled or invalid, as the OpenAI SDKs do not.
 */
bool outcome_retryable(enum outcome o, long status, bool content_seen);

/*
 * The outcome of a request that took `retries` retries in all when the
 * client allowed `allowed`, its last delivery's outcome being o. libcurl
 * sends a request again by itself (on a new connection) when a reused
 * keep-alive connection broke after the request went out and before any
 * answer; such a re-send counts as a retry, and can take a request past
 * what the client allowed (always, with retries off). Then the last
 * delivery the client allowed was broken, and that is what the request
 * comes to: reset, whatever the re-send got. Otherwise o.
 */
enum outcome outcome_within_retries(enum outcome o, int64_t retries, int64_t allowed);

/* The error column's words for a stream whose data was not JSON. */
#define OUTCOME_BAD_FRAME "bad SSE frame: data is not JSON"

/* What outcome_describe words an attempt from. */
struct outcome_words {
	enum outcome o;
	enum cut cut;
	bool streaming;
	double timeout_ms;		/* --timeout */
	double stall_timeout_ms;	/* --stall-timeout */
	double max_time_ms;		/* --max-time */
	int64_t content_chunks;		/* a stream's content tokens */
	long status;
	const char *detail;		/* the server's message (error body or event); "" or NULL: none */
	const char *transport;		/* the transport's error (libcurl's); NULL: none */
};

/*
 * The error column of an attempt that ended with w->o ("" for ok): a cut
 * in loadgen's words ("no answer within 2000 ms"), "HTTP 503: message",
 * the transport's error, the server's message, or what was wrong with
 * the answer.
 */
void outcome_describe(const struct outcome_words *w, char *out, size_t len);

#endif
