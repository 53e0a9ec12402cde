/*
 * sse: an incremental parser for server-sent events (the text/event-stream
 * framing of the WHATWG HTML spec) as OpenAI-style streams use it. Bytes go
 * in as they arrive, split anywhere; each complete event comes out through a
 * callback with its event name and its data lines joined by '\n'.
 */
#ifndef FAULTLINE_SSE_H
#define FAULTLINE_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* Longest line accepted; a longer one makes sse_feed fail. */
#define SSE_MAX_LINE (1u << 20)

/* Most data one event may gather, its lines joined; more makes sse_feed fail. */
#define SSE_MAX_EVENT (1u << 20)

struct sse_event {
	const char *event;	/* "event:" field, "" when absent (means "message") */
	const char *data;	/* data lines joined with '\n', NUL-terminated */
	size_t data_len;
	const char *id;		/* last event ID: the latest valid "id:" field
				 * of this stream, kept across events as the
				 * spec says; "" when none was seen */
};

/*
 * Called for each complete event; return nonzero to stop parsing. The
 * strings in ev live until the callback returns. The callback must not feed,
 * reset or free the parser it is called from.
 */
typedef int (*sse_event_cb)(void *ctx, const struct sse_event *ev);

struct sse_parser {
	struct buf line;	/* the incomplete line so far (only a line cut
				 * by the end of a feed is copied here) */
	struct buf data;	/* data of the event being built */
	struct buf event;	/* event type of the event being built */
	struct buf id;		/* last event ID buffer */
	bool has_data;		/* a data: field was seen (even empty) */
	bool in_event;		/* a field line was seen since the last
				 * blank line */
	bool bom_checked;	/* past the point where a BOM may start */
	unsigned char bom_len;	/* BOM bytes matched so far at stream start */
	bool last_cr;		/* the previous byte was CR (CRLF across feeds) */
	sse_event_cb cb;
	void *ctx;
	size_t events;		/* dispatched so far */
};

/* Sets up a parser that reports events to cb(ctx, …). */
void sse_init(struct sse_parser *p, sse_event_cb cb, void *ctx);

/*
 * Feeds bytes. Lines end with LF, CR or CRLF (a CRLF may be split between
 * two calls); a UTF-8 BOM at the very start of the stream is skipped; a
 * blank line dispatches the event when it has data (an event with no data:
 * field is dropped, as the spec says); comment lines (":…"), retry: and
 * unknown fields are ignored; an id: value containing NUL is ignored;
 * "field" without a colon is the field with an empty value; one leading
 * space after the colon is removed. Returns 0, the callback's nonzero value
 * when it stopped the parse (the rest of this call's bytes are dropped),
 * -ENOMEM, or -E2BIG for a line longer than SSE_MAX_LINE bytes or an
 * event whose data outgrows SSE_MAX_EVENT. After an
 * error the stream is lost: sse_reset before feeding a new one.
 */
int sse_feed(struct sse_parser *p, const char *data, size_t len);

/*
 * True when bytes were fed that do not yet form a complete event (a partial
 * line or an event not ended by a blank line): a stream that ends here was
 * cut mid-event.
 */
bool sse_pending(const struct sse_parser *p);

/*
 * Empties the parser for a new stream (partial line, event, last event ID,
 * BOM check and event count), keeping its memory, callback and context.
 */
void sse_reset(struct sse_parser *p);

/* Frees the parser's memory; it is empty and reusable afterwards. */
void sse_free_parser(struct sse_parser *p);

#endif
