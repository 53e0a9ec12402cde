/*
 * relay: what the gateway makes of an upstream event stream as its bytes
 * arrive — each complete event re-framed for the client, the commit point
 * (the first event with content), [DONE], a break (an error event, a
 * frame that is not JSON), the usage and the content counted for cost.
 * An Anthropic target's events are translated into OpenAI chunks first
 * (anthropic.c), so the client gets one OpenAI stream whoever answered.
 * No I/O: proxy.c feeds it the bytes libcurl hands over and writes out
 * what it produced.
 */
#ifndef FAULTLINE_GATEWAY_RELAY_H
#define FAULTLINE_GATEWAY_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/json_scan.h"
#include "common/sse.h"
#include "gateway/anthropic.h"

/* How an upstream stream went wrong, as far as the relay can see. */
enum relay_break {
	RELAY_OK,
	RELAY_ERROR_EVENT,	/* an `error` event, or a chunk that is {"error":…} */
	RELAY_INVALID,		/* a data line that is not JSON, or too long a line */
};

struct relay {
	struct sse_parser parser;
	struct buf out;		/* re-framed events not yet written to the client */
	bool content;		/* an event with content was seen: the commit point */
	bool done;		/* data: [DONE] was seen (and put in out) */
	enum relay_break brk;	/* set once; nothing is taken after it or [DONE] */
	char message[256];	/* the upstream error event's message, if any */
	bool has_usage;		/* a usage object was seen; tokens_* are its */
	int64_t tokens_in;
	int64_t tokens_out;
	uint64_t content_chunks;	/* chunks whose delta carried content */
	uint64_t events;	/* events taken so far (a stall is none for a while) */
	bool anthropic;		/* the upstream speaks Anthropic's events: translated */
	struct anth_stream anth;
};

/*
 * The prompt and completion token counts of a usage object as written
 * (0 for one absent, not a number, not positive, or past 1e15: garbage,
 * not cast into an overflow).
 */
void relay_usage_tokens(struct json_span usage, int64_t *in, int64_t *out);

/* Sets up an empty relay. */
void relay_init(struct relay *r);

/* Empties the relay for another attempt's stream, keeping its memory. */
void relay_reset(struct relay *r);

/*
 * Makes the (reset) relay take an Anthropic stream, translated into OpenAI
 * chunks created at created_s, with a usage chunk when include_usage.
 */
void relay_anthropic(struct relay *r, bool include_usage, long long created_s);

/* Frees the relay's memory. */
void relay_free(struct relay *r);

/*
 * Feeds bytes of the upstream body. Each complete event is appended to out
 * as "event: NAME\n" (when named, other than "message"), one "data: …\n"
 * per data line, and a blank line — unless it is a break, which is not
 * copied. Stops at [DONE] (copied) or a break. Returns 0, or -ENOMEM.
 */
int relay_feed(struct relay *r, const char *data, size_t len);

/* Whether the relay takes no more: [DONE] or a break was seen. */
bool relay_over(const struct relay *r);

/*
 * Appends the gateway's error event for a broken stream:
 * "event: error\ndata: {"error":{"message","type":"server_error","param":null,"code"}}\n\n".
 * Returns 0 or -ENOMEM.
 */
int relay_error_event(struct buf *b, const char *code, const char *message);

#endif
