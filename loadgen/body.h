/*
 * body: the chat completion bodies loadgen sends. A stream's body is built
 * once per kind (streaming or not) and cut in two at the end of its
 * prompt: the head (model, the message up to the prompt's last word) and
 * the tail (the message's end, max_tokens, response_format, stream). A
 * stream that asks one question sends head and tail as they are, the same
 * bytes every time; one that asks several puts the question's mark between
 * them, per request:
 *
 *   prompts 1   every request: "… dog" (no mark)
 *   prompts N   the stream's request k (from 0): "… dog (question k mod N)"
 *   prompts 0   every request its own: "… dog (request ID)", ID its x-request-id
 *
 * so a gateway's answer cache sees that many questions. The mark adds two
 * words to the prompt's prompt_tokens. Pure.
 */
#ifndef FAULTLINE_BODY_H
#define FAULTLINE_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "loadgen/mix.h"

/* One stream's body of one kind. */
struct body_tpl {
	char *whole;		/* the body without a mark: head, then tail */
	size_t len;		/* strlen(whole) */
	size_t head_len;	/* whole[0, head_len) is the head */
};

/*
 * Builds s's body (stream: the streaming kind, with stream_options
 * include_usage) into t:
 *   {"model":M,"messages":[{"role":"user","content":"PROMPT"}],
 *    "max_tokens":N[,"response_format":RF][,"stream":true,"stream_options":…]}
 * on one line. Returns 0 or -ENOMEM (t left empty).
 */
int body_tpl_init(struct body_tpl *t, const struct mix_stream *s, bool stream);

/* Frees t's body; t is empty after (safe to repeat). */
void body_tpl_free(struct body_tpl *t);

/* What body_question says of a stream with prompts 0. */
#define BODY_OWN_QUESTION (-1)

/*
 * The question the stream's request k (from 0) asks: 0 for every request
 * when prompts is 1, k mod prompts when more, BODY_OWN_QUESTION when 0.
 */
int64_t body_question(int64_t prompts, uint64_t k);

/* Whether a stream's bodies differ from request to request (prompts is not 1). */
bool body_varies(int64_t prompts);

/*
 * The body of the stream's request k (from 0), whose x-request-id is id,
 * for a stream asking prompts questions, into out (emptied first): t's
 * whole body for prompts 1, else the head, the mark of
 * body_question(prompts, k) (" (question Q)", or " (request ID)" with ID
 * escaped for JSON), and the tail. Returns 0 or -ENOMEM.
 */
int body_build(const struct body_tpl *t, int64_t prompts, uint64_t k, const char *id,
	       struct buf *out);

#endif
