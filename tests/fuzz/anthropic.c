/*
 * fuzz: the Anthropic translation (gateway/anthropic.c) on any bytes, taken
 * four ways: as an answer body (anth_response), an error body
 * (anth_error), a request (anth_request, when the bytes are a JSON object)
 * and a stream, split into events by common/sse's parser, whole and in two
 * pieces where the first byte says. Everything written must be JSON: the
 * answer, the error, the request body, each chunk's data; a refusal names
 * its member; an event that is not a chunk writes nothing; [DONE] comes
 * once, last; and how the bytes arrive changes nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/sse.h"
#include "gateway/anthropic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless the n bytes at s are one JSON value. */
static void must_be_json(const char *what, const char *s, size_t n)
{
	char *copy = malloc(n + 1);
	cJSON *v;

	if (!copy)
		abort();
	memcpy(copy, s, n);
	copy[n] = '\0';
	v = json_parse_whole(copy, n);
	if (!v) {
		fprintf(stderr, "%s is not JSON: %s\n", what, copy);
		abort();
	}
	cJSON_Delete(v);
	free(copy);
}

/* A stream's translation so far: the chunks, and the events' codes. */
struct run {
	struct anth_stream s;
	struct buf out;
	struct buf codes;	/* one byte per event */
	bool done;
};

static int on_event(void *ctx, const struct sse_event *ev)
{
	struct run *r = ctx;
	struct anth_ev_facts f;
	size_t mark = r->out.len;
	const char *p;
	const char *end;
	char code;
	int rc = anth_stream_event(&r->s, ev->event, ev->data, ev->data_len, &r->out, &f);

	if (rc < 0)
		abort();	/* -ENOMEM under the fuzzer's limits: a bug */
	code = (char)('0' + rc);
	if (buf_append(&r->codes, &code, 1))
		abort();
	if ((rc != ANTH_EV_CHUNK && rc != ANTH_EV_DONE) == (r->out.len != mark)) {
		fprintf(stderr, "event %d wrote %zu bytes\n", rc, r->out.len - mark);
		abort();
	}
	if (r->out.len != mark && r->done) {
		fprintf(stderr, "chunks after [DONE]: %s\n", r->out.data + mark);
		abort();
	}
	if (f.text && !f.commit) {
		fprintf(stderr, "text that does not commit\n");
		abort();
	}
	for (p = r->out.data ? r->out.data + mark : ""; *p; p = end + 2) {
		end = strstr(p, "\n\n");
		if (!end || strncmp(p, "data: ", 6) != 0) {
			fprintf(stderr, "not a chunk: %s\n", p);
			abort();
		}
		if (strncmp(p, "data: [DONE]\n\n", 14) == 0) {
			if (rc != ANTH_EV_DONE || end + 2 != r->out.data + r->out.len)
				abort();
			r->done = true;
			continue;
		}
		must_be_json("a chunk's data", p + 6, (size_t)(end - p - 6));
	}
	return 0;
}

/* Feeds the stream s (n bytes) to a translation in two pieces, cut at cut. */
static void run_stream(const char *s, size_t n, size_t cut, bool usage, struct run *r)
{
	struct sse_parser p;
	int rc;

	memset(r, 0, sizeof(*r));
	anth_stream_init(&r->s, usage, 1700000000);
	sse_init(&p, on_event, r);
	rc = sse_feed(&p, s, cut);
	if (!rc)
		rc = sse_feed(&p, s + cut, n - cut);
	if (rc == -ENOMEM)
		abort();
	sse_free_parser(&p);
}

static void check_request(const char *s, size_t n)
{
	struct anth_req_opts o = { .model = "claude-x", .max_tokens_default = 100,
				   .add_rf = n % 2 ? "{\"type\":\"json_object\"}" : NULL };
	struct anth_refusal why;
	struct buf out = { 0 };
	cJSON *root = json_parse_whole(s, n);
	int rc;

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return;
	}
	rc = anth_request(root, &o, &out, &why);
	if (rc == 0) {
		must_be_json("a request body", out.data, out.len);
	} else if (rc != -EINVAL || !why.param || !why.message[0]) {
		fprintf(stderr, "rc %d without a refusal\n", rc);
		abort();
	}
	cJSON_Delete(root);
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf out = { 0 };
	struct run whole;
	struct run split;
	char *s;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1;
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, n);
	s[n] = '\0';

	/* The bytes after s's n are not read: the answer and error are given n. */
	if (anth_response(s, n, 1700000000, &out, NULL) == 0)
		must_be_json("an answer", out.data, out.len);
	buf_reset(&out);
	if (anth_error(s, n, &out) == 0)
		must_be_json("an error", out.data, out.len);
	buf_free(&out);
	check_request(s, n);

	run_stream(s, n, n, data[0] & 1, &whole);
	run_stream(s, n, n ? data[0] % (n + 1) : 0, data[0] & 1, &split);
	if (whole.out.len != split.out.len ||
	    (whole.out.len && memcmp(whole.out.data, split.out.data, whole.out.len)) ||
	    whole.codes.len != split.codes.len ||
	    (whole.codes.len && memcmp(whole.codes.data, split.codes.data, whole.codes.len))) {
		fprintf(stderr, "split differs from whole:\n%s\n---\n%s\n",
			whole.out.data ? whole.out.data : "", split.out.data ? split.out.data : "");
		abort();
	}
	buf_free(&whole.out);
	buf_free(&whole.codes);
	buf_free(&split.out);
	buf_free(&split.codes);
	free(s);
	return 0;
}
