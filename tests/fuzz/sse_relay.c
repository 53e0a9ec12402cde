/*
 * fuzz: the SSE parser (common/sse.c) and the gateway's relay
 * (gateway/relay.c) on an upstream body fed three ways — whole, in two
 * pieces split where the first byte says, and byte by byte. A stream's
 * meaning does not depend on how its bytes arrive: every way must give
 * the same events, the same pending state, and the same relay output,
 * break, counts and message.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/relay.h"
#include "common/buf.h"
#include "common/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a parser made of a stream, written out so two can be compared. */
struct seen {
	struct buf events;	/* each event: its name, id and data, length-prefixed */
	int rc;			/* the first nonzero sse_feed result, or 0 */
	bool pending;
};

static int on_event(void *ctx, const struct sse_event *ev)
{
	struct buf *b = ctx;

	if (strlen(ev->data) > ev->data_len) {
		fprintf(stderr, "sse: data_len %zu shorter than the data\n", ev->data_len);
		abort();
	}
	if (buf_printf(b, "event %zu:%s id %zu:%s data %zu:", strlen(ev->event), ev->event,
		       strlen(ev->id), ev->id, ev->data_len) ||
	    buf_append(b, ev->data, ev->data_len) || buf_append(b, "\n", 1))
		abort();
	return 0;
}

/* Feeds s to a parser: first bytes (≤ n), then the rest in pieces of step. */
static void sse_run(const char *s, size_t n, size_t first, size_t step, struct seen *out)
{
	struct sse_parser p;
	size_t off = 0;

	memset(out, 0, sizeof(*out));
	sse_init(&p, on_event, &out->events);
	out->rc = sse_feed(&p, s, first);
	for (off = first; off < n && !out->rc; off += step)
		out->rc = sse_feed(&p, s + off, step < n - off ? step : n - off);
	out->pending = sse_pending(&p);
	sse_free_parser(&p);
}

/* Feeds s to a relay the same way. */
static void relay_run(const char *s, size_t n, size_t first, size_t step, struct relay *r)
{
	size_t off = 0;

	relay_init(r);
	/* -ENOMEM leaves nothing to compare. */
	if (relay_feed(r, s, first))
		abort();
	for (off = first; off < n; off += step) {
		if (relay_feed(r, s + off, step < n - off ? step : n - off))
			abort();
	}
}

static void sse_same(const struct seen *a, const struct seen *b, const char *how)
{
	if (a->rc != b->rc || a->pending != b->pending || a->events.len != b->events.len ||
	    (a->events.len && memcmp(a->events.data, b->events.data, a->events.len))) {
		fprintf(stderr, "sse: %s differs from whole: rc %d/%d pending %d/%d\n"
			"whole:\n%s\n%s:\n%s\n", how, a->rc, b->rc, a->pending, b->pending,
			a->events.data ? a->events.data : "", how,
			b->events.data ? b->events.data : "");
		abort();
	}
}

static void relay_same(const struct relay *a, const struct relay *b, const char *how)
{
	if (a->out.len != b->out.len || (a->out.len && memcmp(a->out.data, b->out.data, a->out.len)) ||
	    a->content != b->content || a->done != b->done || a->brk != b->brk ||
	    strcmp(a->message, b->message) || a->has_usage != b->has_usage ||
	    a->tokens_in != b->tokens_in || a->tokens_out != b->tokens_out ||
	    a->content_chunks != b->content_chunks || a->events != b->events) {
		fprintf(stderr, "relay: %s differs from whole: brk %d/%d done %d/%d events "
			"%llu/%llu\nwhole out:\n%s\n%s out:\n%s\n", how, a->brk, b->brk, a->done,
			b->done, (unsigned long long)a->events, (unsigned long long)b->events,
			a->out.data ? a->out.data : "", how, b->out.data ? b->out.data : "");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole, split, bytes;
	struct relay rw, rs, rb;
	const char *s;
	size_t cut;
	size_t n;

	if (size < 1)
		return 0;
	s = (const char *)data + 1;
	n = size - 1;
	cut = n ? data[0] % (n + 1) : 0;

	sse_run(s, n, n, n, &whole);
	sse_run(s, n, cut, n, &split);
	sse_run(s, n, n ? 1 : 0, 1, &bytes);
	sse_same(&whole, &split, "split");
	sse_same(&whole, &bytes, "byte by byte");
	buf_free(&whole.events);
	buf_free(&split.events);
	buf_free(&bytes.events);

	relay_run(s, n, n, n, &rw);
	relay_run(s, n, cut, n, &rs);
	relay_run(s, n, n ? 1 : 0, 1, &rb);
	relay_same(&rw, &rs, "split");
	relay_same(&rw, &rb, "byte by byte");
	relay_free(&rw);
	relay_free(&rs);
	relay_free(&rb);
	return 0;
}
