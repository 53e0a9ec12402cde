/*
 * rawhttp: an HTTP/1.x client on a plain socket, for the tests where the
 * exact bytes and their timing matter. It sends a request as written,
 * reads only when told to (so a test can be a client that reads slowly,
 * or leaves), and parses what arrives as it arrives: the status line and
 * headers, a chunked, Content-Length or close-delimited body, the chunked
 * trailer, and the body's server-sent events, each stamped with the time
 * its blank line arrived.
 *
 * sse_reader, the event parser, also works alone on a whole body (one
 * libcurl gave, say).
 */
#ifndef FAULTLINE_RAWHTTP_H
#define FAULTLINE_RAWHTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* One server-sent event. */
struct sse_event {
	char *event;			/* its event: field; NULL when it had none */
	char *data;			/* its data: lines, joined with "\n"; "" when none */
	double at_ms;			/* when its ending blank line arrived */
	size_t body_off;		/* offset in the body just past that line */
};

/* An incremental SSE parser: feed it bytes, it collects the events. */
struct sse_reader {
	struct sse_event *ev;
	size_t nev;
	size_t cap;
	size_t fed;			/* bytes fed so far */
	struct buf line;		/* the line being read */
	struct buf data;		/* the event's data so far */
	char *event;			/* the event's event: field so far */
	bool any;			/* the event has a field */
	size_t comments;		/* ':' lines seen */
	size_t ids;			/* id: lines seen */
};

/*
 * Feeds n bytes of an event stream; the events they complete get at_ms.
 * Lines end with LF or CRLF (a lone CR, which the SSE spec also allows,
 * is not taken as an end). Returns 0, or -1 when out of memory.
 */
int sse_reader_feed(struct sse_reader *r, const char *p, size_t n, double at_ms);

/* Frees what the reader holds; it is empty and reusable afterwards. */
void sse_reader_free(struct sse_reader *r);

/* Where the response parser is. */
enum raw_state {
	RAW_HEAD,			/* the status line and headers */
	RAW_CHUNK_SIZE,			/* a chunk-size line */
	RAW_CHUNK_DATA,
	RAW_CHUNK_END,			/* the CRLF after a chunk's data */
	RAW_TRAILER,			/* after the last chunk: trailer lines, then CRLF */
	RAW_LENGTH,			/* a Content-Length body */
	RAW_UNTIL_CLOSE,		/* a close-delimited body */
	RAW_DONE,			/* the response is complete */
	RAW_BAD,			/* a framing error (bad) */
};

/* One connection and the response read from it. */
struct raw_http {
	int fd;				/* -1 once closed */
	char addr[64];			/* HOST:PORT */
	double sent_ms;			/* now_ms() once the request was written */
	/* What arrived. */
	struct buf raw;			/* every byte received, as received */
	double first_byte_ms;		/* ms after sent_ms; -1 until a byte came */
	double head_ms;			/* when the headers were whole; -1 until */
	double end_ms;			/* when the response was complete (or EOF); -1 until */
	bool eof;			/* the server closed its side */
	int err;			/* errno of a failed read (ECONNRESET…), 0 when none */
	/* Parsed. */
	enum raw_state state;
	const char *bad;		/* what was wrong, for RAW_BAD */
	int status;			/* 0 until the status line came */
	int minor;			/* HTTP/1.minor of the status line */
	char *head;			/* the status line and headers, CRLFs kept */
	bool chunked;
	size_t nchunks;			/* chunks of data (not the last, empty one) */
	char *trailer;			/* the trailer's lines, CRLFs kept ("" when none) */
	struct buf body;		/* the body, de-chunked */
	struct sse_reader sse;		/* its events */
	/* Parser state. */
	size_t pos;			/* parsed up to here in raw */
	size_t left;			/* of the chunk or Content-Length body */
};

/*
 * Connects to addr (HOST:PORT, IPv4) — with the receive buffer set to
 * rcvbuf bytes first when rcvbuf > 0, so a client that stops reading is
 * held to it — and leaves the socket non-blocking. Returns 0 or -1.
 */
int raw_open(struct raw_http *c, const char *addr, int rcvbuf);

/* Writes len bytes, all of them (within 5 s). Returns 0 or -1. */
int raw_send(struct raw_http *c, const char *data, size_t len);

/*
 * Writes "POST path HTTP/1.minor" with Host, Content-Type:
 * application/json, Content-Length, the extra headers ("Name: value",
 * NULL-terminated, may be NULL) and body, then notes sent_ms. Returns 0
 * or -1.
 */
int raw_post(struct raw_http *c, const char *path, int minor, const char *const *headers,
	     const char *body);

/* A condition raw_read waits for. */
typedef bool (*raw_until_fn)(const struct raw_http *c, void *arg);

/*
 * Reads and parses what arrives until until(c, arg) holds (until NULL: the
 * response is complete), the response is complete or broke, the server
 * closed or reset the connection, or timeout_ms passed. Returns 0 when
 * until holds (or, with until NULL, the response is complete), -1
 * otherwise.
 */
int raw_read(struct raw_http *c, raw_until_fn until, void *arg, double timeout_ms);

/* raw_read's conditions: n events have arrived; the headers are whole. */
bool raw_has_events(const struct raw_http *c, void *n_events);
bool raw_has_head(const struct raw_http *c, void *unused);

/* A response header's value (case-insensitive name) copied to out, or NULL. */
const char *raw_header(const struct raw_http *c, const char *name, char *out, size_t len);

/* A trailer field's value (case-insensitive name) copied to out, or NULL. */
const char *raw_trailer(const struct raw_http *c, const char *name, char *out, size_t len);

/*
 * Up to the last max bytes received, printable (\r \n as such, other
 * control bytes as \xNN), for failure messages. Returns a static buffer
 * overwritten by the next call.
 */
const char *raw_tail(const struct raw_http *c, size_t max);

/*
 * Moves c's connection (its socket and address) into next, a new
 * response to read on it, as a keep-alive client sends its next request;
 * c keeps what it read. Returns 0, or -1 when c's response is not
 * complete or bytes past it already arrived.
 */
int raw_next(struct raw_http *c, struct raw_http *next);

/* Closes the socket (an abrupt leave when the response is not complete). */
void raw_close(struct raw_http *c);

/* raw_close, then frees what was read. */
void raw_free(struct raw_http *c);

#endif
