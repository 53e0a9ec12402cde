/*
 * sse: the events that come out of a text/event-stream, whatever the line
 * ends and however the bytes are split between feeds; the fields the spec
 * says to drop or ignore; stopping from the callback; over-long lines;
 * sse_pending for a stream cut mid-event; reuse after sse_reset.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sse.h"

#define MAX_EVENTS 64

/* The events a parser reported, copied out of the callback. */
struct got {
	size_t n;
	char *event[MAX_EVENTS];
	char *id[MAX_EVENTS];
	char *data[MAX_EVENTS];
	size_t data_len[MAX_EVENTS];
	size_t stop_at;		/* the callback returns stop_rc for this event (1-based) */
	int stop_rc;
};

/* What an event should be; data is compared over strlen(data) bytes. */
struct want {
	const char *event;
	const char *id;
	const char *data;
};

static char *copy(const char *s, size_t n)
{
	char *c = malloc(n + 1);

	cr_assert_not_null(c);
	memcpy(c, s, n);
	c[n] = '\0';
	return c;
}

static int on_event(void *ctx, const struct sse_event *ev)
{
	struct got *g = ctx;

	cr_assert_lt(g->n, MAX_EVENTS, "more events than the test expects");
	cr_assert_not_null(ev->event);
	cr_assert_not_null(ev->id);
	cr_assert_not_null(ev->data);
	cr_assert_eq(ev->data[ev->data_len], '\0', "data not NUL-terminated");
	g->event[g->n] = copy(ev->event, strlen(ev->event));
	g->id[g->n] = copy(ev->id, strlen(ev->id));
	g->data[g->n] = copy(ev->data, ev->data_len);
	g->data_len[g->n] = ev->data_len;
	g->n++;
	if (g->stop_at && g->n == g->stop_at)
		return g->stop_rc;
	return 0;
}

static void got_clear(struct got *g)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		free(g->event[i]);
		free(g->id[i]);
		free(g->data[i]);
	}
	g->n = 0;
}

/* Asserts that g holds exactly the events in w, in order. */
static void expect(const struct got *g, const struct want *w, size_t n, const char *how)
{
	size_t i;

	cr_assert_eq(g->n, n, "%s: %zu events, want %zu", how, g->n, n);
	for (i = 0; i < n; i++) {
		cr_assert_str_eq(g->event[i], w[i].event, "%s: event %zu type", how, i);
		cr_assert_str_eq(g->id[i], w[i].id, "%s: event %zu id", how, i);
		cr_assert_eq(g->data_len[i], strlen(w[i].data),
			     "%s: event %zu data_len %zu, want %zu (\"%s\")", how, i,
			     g->data_len[i], strlen(w[i].data), w[i].data);
		cr_assert_str_eq(g->data[i], w[i].data, "%s: event %zu data", how, i);
	}
}

/* Asserts that g holds the same events as ref, in order. */
static void same(const struct got *g, const struct got *ref, const char *how)
{
	size_t i;

	cr_assert_eq(g->n, ref->n, "%s: %zu events, want %zu", how, g->n, ref->n);
	for (i = 0; i < ref->n; i++) {
		cr_assert_str_eq(g->event[i], ref->event[i], "%s: event %zu type", how, i);
		cr_assert_str_eq(g->id[i], ref->id[i], "%s: event %zu id", how, i);
		cr_assert_eq(g->data_len[i], ref->data_len[i], "%s: event %zu data_len", how, i);
		cr_assert_eq(memcmp(g->data[i], ref->data[i], ref->data_len[i]), 0,
			     "%s: event %zu data \"%s\", want \"%s\"", how, i, g->data[i],
			     ref->data[i]);
	}
}

/* Feeds a C string. */
static int feed(struct sse_parser *p, const char *s)
{
	return sse_feed(p, s, strlen(s));
}

/* Parses s (a C string) in one feed; asserts the feed returned 0. */
static void parse_whole(const char *s, struct got *g)
{
	struct sse_parser p;

	sse_init(&p, on_event, g);
	cr_assert_eq(feed(&p, s), 0);
	cr_assert_not(sse_pending(&p), "complete input left pending");
	sse_free_parser(&p);
}

/* Feeds in[0..len) cut at the ascending offsets cuts[0..ncuts). */
static void parse_cut(const char *in, size_t len, const size_t *cuts, size_t ncuts,
		      struct got *g, const char *how)
{
	struct sse_parser p;
	size_t from = 0;
	size_t i;

	sse_init(&p, on_event, g);
	for (i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		cr_assert_eq(sse_feed(&p, in + from, to - from), 0, "%s", how);
		from = to;
	}
	cr_assert_not(sse_pending(&p), "%s: complete input left pending", how);
	sse_free_parser(&p);
}

/*
 * A stream that uses every feature: BOM, CRLF, CR and LF line ends (a CR
 * line end before a CRLF blank line, an LF line end before a CR blank line),
 * comments, event names, ids (one with NUL, ignored), multi-line and empty
 * data, fields without colon or space, retry, unknown fields and an event
 * without data.
 */
static const char mixed[] =
	"\xEF\xBB\xBF"
	": hello\r\n"
	"data: {\"a\":1}\r\n\r\n"
	"event: update\rid: 7\rdata:first\rdata:  second\r\r"
	"retry: 3000\nfoo: bar\ndata\n\n"
	"event: ping\n\n"
	"id: x\0y\ndata: keeps 7\n: note\n\n"
	"event: error\r\ndata: {\"error\":\"overloaded\"}\r\r\n"
	"id\ndata: [DONE]\n\r";

static const struct want mixed_want[] = {
	{ "", "", "{\"a\":1}" },
	{ "update", "7", "first\n second" },
	{ "", "7", "" },
	{ "", "7", "keeps 7" },
	{ "error", "7", "{\"error\":\"overloaded\"}" },
	{ "", "", "[DONE]" },
};

#define MIXED_LEN (sizeof(mixed) - 1)
#define NWANT(w) (sizeof(w) / sizeof((w)[0]))

Test(sse, openai_stream, .timeout = 10)
{
	static const char in[] =
		"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
		"\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
		"data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
		"\"delta\":{\"content\":\"Hel\"}}]}\n\n"
		"data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
		"\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n"
		"data: [DONE]\n\n";
	static const struct want w[] = {
		{ "", "", "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
			  "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}" },
		{ "", "", "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
			  "\"delta\":{\"content\":\"Hel\"}}]}" },
		{ "", "", "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
			  "\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}" },
		{ "", "", "[DONE]" },
	};
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, sizeof(in) - 1), 0);
	expect(&g, w, NWANT(w), "one feed");
	cr_assert_eq(p.events, 4);
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, mixed_stream_in_one_feed, .timeout = 10)
{
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, mixed, MIXED_LEN), 0);
	expect(&g, mixed_want, NWANT(mixed_want), "one feed");
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, every_split_point_gives_the_same_events, .timeout = 10)
{
	struct got g = { 0 };
	char how[64];
	size_t cuts[2];

	for (cuts[0] = 0; cuts[0] <= MIXED_LEN; cuts[0]++) {
		snprintf(how, sizeof(how), "cut at %zu", cuts[0]);
		parse_cut(mixed, MIXED_LEN, cuts, 1, &g, how);
		expect(&g, mixed_want, NWANT(mixed_want), how);
		got_clear(&g);
	}
	for (cuts[0] = 0; cuts[0] <= MIXED_LEN; cuts[0]++) {
		for (cuts[1] = cuts[0]; cuts[1] <= MIXED_LEN; cuts[1]++) {
			snprintf(how, sizeof(how), "cuts at %zu and %zu", cuts[0], cuts[1]);
			parse_cut(mixed, MIXED_LEN, cuts, 2, &g, how);
			expect(&g, mixed_want, NWANT(mixed_want), how);
			got_clear(&g);
		}
	}
}

Test(sse, one_byte_feeds_give_the_same_events, .timeout = 10)
{
	struct got g = { 0 };
	struct sse_parser p;
	size_t i;

	sse_init(&p, on_event, &g);
	for (i = 0; i < MIXED_LEN; i++)
		cr_assert_eq(sse_feed(&p, mixed + i, 1), 0, "byte %zu", i);
	expect(&g, mixed_want, NWANT(mixed_want), "1-byte feeds");
	cr_assert_eq(p.events, NWANT(mixed_want));
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, random_sized_feeds_give_the_same_events, .timeout = 10)
{
	struct got ref = { 0 };
	struct got g = { 0 };
	char in[4 * MIXED_LEN];
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	struct sse_parser p;
	char how[64];
	size_t len = 0;
	size_t pos;
	int round;
	int i;

	for (i = 0; i < 4; i++) {	/* the BOM only counts at the very start */
		memcpy(in + len, mixed + (i ? 3 : 0), MIXED_LEN - (i ? 3 : 0));
		len += MIXED_LEN - (i ? 3 : 0);
	}
	sse_init(&p, on_event, &ref);
	cr_assert_eq(sse_feed(&p, in, len), 0);
	sse_free_parser(&p);
	cr_assert_eq(ref.n, 4 * NWANT(mixed_want));
	for (pos = 0; pos < ref.n; pos++) {
		const struct want *w = &mixed_want[pos % NWANT(mixed_want)];

		cr_assert_str_eq(ref.event[pos], w->event, "event %zu", pos);
		cr_assert_str_eq(ref.id[pos], w->id, "event %zu", pos);
		cr_assert_str_eq(ref.data[pos], w->data, "event %zu", pos);
	}

	for (round = 0; round < 500; round++) {
		snprintf(how, sizeof(how), "round %d", round);
		sse_init(&p, on_event, &g);
		for (pos = 0; pos < len;) {
			size_t n;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			n = (size_t)(rng % 24);	/* includes empty feeds */
			if (n > len - pos)
				n = len - pos;
			cr_assert_eq(sse_feed(&p, in + pos, n), 0, "%s at %zu", how, pos);
			pos += n;
		}
		cr_assert_not(sse_pending(&p), "%s", how);
		sse_free_parser(&p);
		same(&g, &ref, how);
		got_clear(&g);
	}
	got_clear(&ref);
}

Test(sse, crlf_and_cr_line_ends, .timeout = 10)
{
	static const struct want w[] = {
		{ "a", "", "1\n2" },
		{ "b", "", "3\n4" },
		{ "", "", "5" },
	};
	struct got g = { 0 };

	parse_whole("event: a\r\ndata: 1\r\ndata: 2\r\n\r\n"
		    "event: b\rdata: 3\rdata: 4\r\r"
		    "data: 5\r\n\n", &g);
	expect(&g, w, NWANT(w), "CRLF and CR");
	got_clear(&g);
}

Test(sse, crlf_split_across_feeds_is_one_line_end, .timeout = 10)
{
	static const struct want w[] = { { "", "", "a\nb" } };
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(feed(&p, "data: a\r"), 0);
	cr_assert_eq(feed(&p, "\ndata: b\r"), 0);
	cr_assert_eq(feed(&p, "\n\r"), 0);	/* LF ends "data: b"; CR is the blank line */
	cr_assert_eq(g.n, 1, "the LF after a CR was taken for a blank line");
	cr_assert_eq(feed(&p, "\n"), 0);		/* belongs to that CR */
	cr_assert_eq(feed(&p, ""), 0);
	expect(&g, w, NWANT(w), "CRLF across feeds");
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, cr_at_end_of_feed_then_another_line, .timeout = 10)
{
	static const struct want w[] = { { "", "", "a" }, { "", "", "b" } };
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(feed(&p, "data: a\r"), 0);
	cr_assert_eq(feed(&p, "\rdata: b\r"), 0);
	cr_assert_eq(g.n, 1);
	cr_assert(sse_pending(&p));
	cr_assert_eq(feed(&p, "\r"), 0);
	expect(&g, w, NWANT(w), "CR then CR");
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, bom_skipped_only_at_the_very_start, .timeout = 10)
{
	static const struct want one[] = { { "", "", "x" } };
	static const struct want first[] = { { "", "", "a" } };
	struct got g = { 0 };
	struct sse_parser p;

	parse_whole("\xEF\xBB\xBF" "data: x\n\n", &g);
	expect(&g, one, NWANT(one), "BOM");
	got_clear(&g);

	/* Later, a BOM is part of the field name, which is then unknown. */
	parse_whole("data: a\n\n\xEF\xBB\xBF" "data: b\n\n", &g);
	expect(&g, first, NWANT(first), "BOM mid-stream");
	got_clear(&g);

	/* Only one BOM is skipped. */
	parse_whole("\xEF\xBB\xBF\xEF\xBB\xBF" "data: x\n\n", &g);
	expect(&g, NULL, 0, "two BOMs");

	/* Half a BOM is not one: its bytes stay in the field name. */
	parse_whole("\xEF\xBB" "data: x\n\n", &g);
	expect(&g, NULL, 0, "half a BOM");

	/* A BOM fed a byte at a time. */
	sse_init(&p, on_event, &g);
	cr_assert_eq(feed(&p, "\xEF"), 0);
	cr_assert(sse_pending(&p), "a BOM byte alone is not a complete stream");
	cr_assert_eq(feed(&p, "\xBB"), 0);
	cr_assert_eq(feed(&p, "\xBF"), 0);
	cr_assert_eq(feed(&p, "data: x\n\n"), 0);
	expect(&g, one, NWANT(one), "BOM in pieces");
	got_clear(&g);
	sse_free_parser(&p);

	/* A BOM byte alone, then no BOM: the byte stays in the line. */
	sse_init(&p, on_event, &g);
	cr_assert_eq(feed(&p, "\xEF"), 0);
	cr_assert_eq(feed(&p, "data: x\n\ndata: y\n\n"), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.data[0], "y");
	got_clear(&g);
	sse_free_parser(&p);
}

Test(sse, comments_are_ignored, .timeout = 10)
{
	static const struct want w[] = { { "", "", "a\nb" } };
	struct got g = { 0 };

	parse_whole(": keep-alive\n\n:\n\n:data: no\n\n"
		    "data: a\n: in between\ndata: b\n:\n\n", &g);
	expect(&g, w, NWANT(w), "comments");
	got_clear(&g);
}

Test(sse, error_event_with_data, .timeout = 10)
{
	static const struct want w[] = {
		{ "", "", "{\"choices\":[]}" },
		{ "error", "", "{\"error\":{\"message\":\"overloaded\",\"code\":529}}" },
		{ "", "", "after" },
	};
	struct got g = { 0 };

	parse_whole("data: {\"choices\":[]}\n\n"
		    "event: error\n"
		    "data: {\"error\":{\"message\":\"overloaded\",\"code\":529}}\n\n"
		    "data: after\n\n", &g);
	expect(&g, w, NWANT(w), "event: error");
	got_clear(&g);
}

Test(sse, multi_line_data_is_joined_with_newlines, .timeout = 10)
{
	static const struct want w[] = {
		{ "", "", "line one\nline two\n\nline four" },
		{ "", "", "\n" },
	};
	struct got g = { 0 };

	parse_whole("data: line one\ndata: line two\ndata:\ndata: line four\n\n"
		    "data\ndata\n\n", &g);
	expect(&g, w, NWANT(w), "multi-line data");
	got_clear(&g);
}

Test(sse, field_without_colon_has_empty_value, .timeout = 10)
{
	static const struct want w[] = {
		{ "", "", "" },
		{ "", "", "x" },
	};
	struct got g = { 0 };

	/* "data" alone is an empty data field; "event" alone resets the type. */
	parse_whole("data\n\nevent: a\nevent\ndata: x\n\n", &g);
	expect(&g, w, NWANT(w), "no colon");
	got_clear(&g);
}

Test(sse, only_one_space_after_the_colon_is_removed, .timeout = 10)
{
	static const struct want w[] = {
		{ "e", "", "abc" },
		{ "", "", " two" },
		{ "", "", "\ttab " },
		{ "", "", "" },
	};
	struct got g = { 0 };

	parse_whole("event:e\ndata:abc\n\ndata:  two\n\ndata: \ttab \n\ndata: \n\n", &g);
	expect(&g, w, NWANT(w), "spaces");
	got_clear(&g);
}

Test(sse, event_without_data_is_dropped, .timeout = 10)
{
	static const struct want w[] = { { "", "3", "x" } };
	struct got g = { 0 };

	/* The dropped event's type does not carry over; its id does. */
	parse_whole("event: ping\nid: 3\n\nevent: other\n\n\n\ndata: x\n\n", &g);
	expect(&g, w, NWANT(w), "no data");
	got_clear(&g);
}

Test(sse, id_persists_and_id_with_nul_is_ignored, .timeout = 10)
{
	static const char in[] = "id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\n"
				 "id\ndata: d\n\nid:2\ndata: e\n\n";
	static const struct want w[] = {
		{ "", "1", "a" },
		{ "", "1", "b" },
		{ "", "1", "c" },
		{ "", "", "d" },
		{ "", "2", "e" },
	};
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, sizeof(in) - 1), 0);
	expect(&g, w, NWANT(w), "ids");
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, retry_and_unknown_fields_are_ignored, .timeout = 10)
{
	static const struct want w[] = { { "", "", "x" } };
	struct got g = { 0 };

	parse_whole("retry: 1000\nfoo: bar\nData: no\ndata : no\nretry\n\n"
		    "retry: 5\ndata: x\nbogus\n\n", &g);
	expect(&g, w, NWANT(w), "unknown fields");
	got_clear(&g);
}

Test(sse, data_may_hold_nul_bytes, .timeout = 10)
{
	static const char in[] = "data: a\0b\n\n";
	struct got g = { 0 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, sizeof(in) - 1), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.data_len[0], 3);
	cr_assert_eq(memcmp(g.data[0], "a\0b", 4), 0);
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, callback_stops_the_parse, .timeout = 10)
{
	static const char in[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
	static const struct want w[] = { { "", "", "1" }, { "", "", "2" } };
	struct got g = { .stop_at = 2, .stop_rc = 42 };
	struct sse_parser p;

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, sizeof(in) - 1), 42);
	expect(&g, w, NWANT(w), "stopped");
	cr_assert_eq(p.events, 2);
	got_clear(&g);

	/* Stopping on an event whose blank line completes a buffered line. */
	sse_reset(&p);
	g.stop_at = 1;
	g.stop_rc = -1;
	cr_assert_eq(feed(&p, "data: 1\n"), 0);
	cr_assert_eq(feed(&p, "\ndata: 2\n\n"), -1);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.data[0], "1");
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, line_at_the_limit_is_accepted, .timeout = 10)
{
	size_t len = SSE_MAX_LINE + 2;	/* the line, then "\n\n" */
	char *in = malloc(len);
	struct got g = { 0 };
	struct sse_parser p;
	size_t pos;

	cr_assert_not_null(in);
	memcpy(in, "data: ", 6);
	memset(in + 6, 'x', SSE_MAX_LINE - 6);
	memcpy(in + SSE_MAX_LINE, "\n\n", 2);

	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, len), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.data_len[0], SSE_MAX_LINE - 6);
	got_clear(&g);

	sse_reset(&p);
	for (pos = 0; pos < len; pos += 4096)
		cr_assert_eq(sse_feed(&p, in + pos, len - pos < 4096 ? len - pos : 4096), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.data_len[0], SSE_MAX_LINE - 6);
	cr_assert_eq(g.data[0][0], 'x');
	cr_assert_eq(g.data[0][SSE_MAX_LINE - 7], 'x');
	sse_free_parser(&p);
	got_clear(&g);
	free(in);
}

Test(sse, over_long_line_fails, .timeout = 10)
{
	size_t len = SSE_MAX_LINE + 3;	/* one byte too many, then "\n\n" */
	char *in = malloc(len);
	struct got g = { 0 };
	struct sse_parser p;
	size_t pos;
	int rc = 0;

	cr_assert_not_null(in);
	memcpy(in, "data: ", 6);
	memset(in + 6, 'x', SSE_MAX_LINE + 1 - 6);
	memcpy(in + SSE_MAX_LINE + 1, "\n\n", 2);

	/* Complete within one feed. */
	sse_init(&p, on_event, &g);
	cr_assert_eq(sse_feed(&p, in, len), -E2BIG);
	cr_assert_eq(g.n, 0);

	/* Cut across feeds, line end included: fails when it passes the limit. */
	sse_reset(&p);
	for (pos = 0; pos < len && rc == 0; pos += 1000)
		rc = sse_feed(&p, in + pos, len - pos < 1000 ? len - pos : 1000);
	cr_assert_eq(rc, -E2BIG);
	cr_assert_eq(g.n, 0);

	/* Without a line end, buffered: fails without waiting for one. */
	sse_reset(&p);
	cr_assert_eq(sse_feed(&p, in, SSE_MAX_LINE), 0);
	cr_assert(sse_pending(&p));
	cr_assert_eq(feed(&p, "x"), -E2BIG);
	cr_assert_eq(g.n, 0);

	/* The parser works again after a reset. */
	sse_reset(&p);
	cr_assert_eq(feed(&p, "data: ok\n\n"), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.data[0], "ok");
	sse_free_parser(&p);
	got_clear(&g);
	free(in);
}

Test(sse, event_data_is_bounded, .timeout = 10)
{
	static char line[1000];
	struct got g = { 0 };
	struct sse_parser p;
	size_t fed = 0;
	int rc = 0;

	/* Many data lines and never a blank line: refused once past the cap. */
	memset(line, 'z', sizeof(line));
	memcpy(line, "data: ", 6);
	line[sizeof(line) - 1] = '\n';
	sse_init(&p, on_event, &g);
	while (rc == 0 && fed < 4 * SSE_MAX_EVENT) {
		rc = sse_feed(&p, line, sizeof(line));
		fed += sizeof(line);
	}
	cr_assert_eq(rc, -E2BIG);
	/* Each line brings 993 bytes of data (and its '\n' joint). */
	cr_assert_leq(fed / sizeof(line), SSE_MAX_EVENT / 994 + 1, "refused at %zu bytes", fed);
	cr_assert_eq(g.n, 0);

	/* Just under the cap, the event is handed over whole. */
	sse_reset(&p);
	for (fed = 0; fed + 2 * sizeof(line) < SSE_MAX_EVENT; fed += sizeof(line))
		cr_assert_eq(sse_feed(&p, line, sizeof(line)), 0);
	cr_assert_eq(feed(&p, "\n"), 0);
	cr_assert_eq(g.n, 1);
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, pending_tells_a_stream_cut_mid_event, .timeout = 10)
{
	static const char *const cut[] = {
		"data: {\"cho",			/* partial line */
		"data: {}\n",			/* data seen, no blank line */
		"data: {}\n\ndata: x\n",	/* second event unfinished */
		"event: error\n",		/* a field, no data yet */
		"data: {}\r",			/* line ended, event not */
		"retry: 10\n",			/* an ignored field still opens an event */
		"\xEF\xBB",			/* half a BOM */
	};
	static const char *const whole[] = {
		"",
		"data: {}\n\n",
		"data: {}\r\n\r\n",
		"data: {}\r\r",
		": keep-alive\n",		/* a comment opens no event */
		"event: ping\n\n",		/* dropped, but complete */
		"\xEF\xBB\xBF",
		"data: [DONE]\n\n",
	};
	struct got g = { 0 };
	struct sse_parser p;
	size_t i;

	sse_init(&p, on_event, &g);
	cr_assert_not(sse_pending(&p), "fresh parser");
	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		sse_reset(&p);
		cr_assert_eq(feed(&p, cut[i]), 0);
		cr_assert(sse_pending(&p), "\"%s\" should be pending", cut[i]);
	}
	for (i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
		sse_reset(&p);
		cr_assert_eq(feed(&p, whole[i]), 0);
		cr_assert_not(sse_pending(&p), "\"%s\" should not be pending", whole[i]);
	}
	/* Completing a cut stream clears it. */
	sse_reset(&p);
	cr_assert_eq(feed(&p, "data: x"), 0);
	cr_assert(sse_pending(&p));
	cr_assert_eq(feed(&p, "\n"), 0);
	cr_assert(sse_pending(&p));
	cr_assert_eq(feed(&p, "\n"), 0);
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
	got_clear(&g);
}

Test(sse, reset_reuses_the_parser, .timeout = 10)
{
	static const struct want w[] = { { "", "", "fresh" } };
	struct got g = { 0 };
	struct sse_parser p;
	char *line_mem;
	char *data_mem;
	size_t line_cap;

	sse_init(&p, on_event, &g);
	cr_assert_eq(feed(&p, "id: 9\nevent: old\ndata: a\n\ndata: b\ndata: partial li"), 0);
	cr_assert_eq(g.n, 1);
	cr_assert(sse_pending(&p));
	line_mem = p.line.data;
	line_cap = p.line.cap;
	data_mem = p.data.data;
	got_clear(&g);

	sse_reset(&p);
	cr_assert_not(sse_pending(&p));
	cr_assert_eq(p.events, 0);
	cr_assert_eq(p.line.data, line_mem, "reset gave up the line memory");
	cr_assert_eq(p.line.cap, line_cap);
	cr_assert_eq(p.data.data, data_mem, "reset gave up the data memory");

	/* A new stream: BOM skipped again, no id, no leftover data or type. */
	cr_assert_eq(feed(&p, "\xEF\xBB\xBF" "ne\n\ndata: fresh\n\n"), 0);
	expect(&g, w, NWANT(w), "after reset");
	cr_assert_eq(p.events, 1);
	got_clear(&g);

	/* After sse_free_parser the parser is empty and works again. */
	sse_free_parser(&p);
	cr_assert_null(p.line.data);
	cr_assert_not(sse_pending(&p));
	cr_assert_eq(feed(&p, "data: fresh\n\n"), 0);
	expect(&g, w, NWANT(w), "after free");
	sse_free_parser(&p);
	got_clear(&g);
}
