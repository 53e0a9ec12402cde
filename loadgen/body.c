/*
 * body: building a stream's chat completion body once, and a request's
 * from it with the mark of the question it asks (see body.h).
 */
#include "loadgen/body.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

int body_tpl_init(struct body_tpl *t, const struct mix_stream *s, bool stream)
{
	struct buf b = { 0 };
	size_t head_len;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = buf_puts(&b, "{\"model\":");
	rc |= json_escape(&b, s->model);
	rc |= buf_puts(&b, ",\"messages\":[{\"role\":\"user\",\"content\":\"");
	rc |= mix_prompt_write(&b, s->prompt_tokens);
	head_len = b.len;
	rc |= buf_printf(&b, "\"}],\"max_tokens\":%lld", (long long)s->max_tokens);
	if (s->response_format) {
		rc |= buf_puts(&b, ",\"response_format\":");
		rc |= buf_puts(&b, s->response_format);
	}
	if (stream)
		rc |= buf_puts(&b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
	rc |= buf_puts(&b, "}");
	if (rc) {
		buf_free(&b);
		return -ENOMEM;
	}
	t->len = b.len;
	t->head_len = head_len;
	t->whole = buf_steal(&b);
	return t->whole ? 0 : -ENOMEM;
}

void body_tpl_free(struct body_tpl *t)
{
	free(t->whole);
	memset(t, 0, sizeof(*t));
}

int64_t body_question(int64_t prompts, uint64_t k)
{
	if (prompts == 0)
		return BODY_OWN_QUESTION;
	if (prompts == 1)
		return 0;
	return (int64_t)(k % (uint64_t)prompts);
}

bool body_varies(int64_t prompts)
{
	return prompts != 1;
}

/* Appends s escaped for inside a JSON string (json_escape's, without the quotes). */
static int put_escaped(struct buf *out, const char *s)
{
	size_t at = out->len;
	int rc = json_escape(out, s);

	if (rc)
		return rc;
	/* Drop the quotes: the one at `at` and the last. */
	memmove(out->data + at, out->data + at + 1, out->len - at - 2);
	out->len -= 2;
	out->data[out->len] = '\0';
	return 0;
}

int body_build(const struct body_tpl *t, int64_t prompts, uint64_t k, const char *id,
	       struct buf *out)
{
	int64_t q = body_question(prompts, k);
	int rc;

	buf_reset(out);
	rc = buf_append(out, t->whole, t->head_len);
	if (!rc && q == BODY_OWN_QUESTION) {
		rc = buf_puts(out, " (request ");
		rc = rc ? rc : put_escaped(out, id);
		rc = rc ? rc : buf_puts(out, ")");
	} else if (!rc && body_varies(prompts)) {
		rc = buf_printf(out, " (question %lld)", (long long)q);
	}
	if (!rc)
		rc = buf_append(out, t->whole + t->head_len, t->len - t->head_len);
	return rc ? -ENOMEM : 0;
}
