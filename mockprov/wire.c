/*
 * wire: the dialect table and what every dialect's writers share.
 */
#include "mockprov/wire.h"

#include <stdarg.h>
#include <string.h>

#include "common/json.h"

const char *const wire_dialect_names[] = { "openai", "anthropic", NULL };

const struct wire *wire_of(enum wire_dialect d)
{
	return d == WIRE_ANTHROPIC ? &wire_anthropic : &wire_openai;
}

void wire_put_tokens(struct buf *b, const struct wire_answer *a, int from, int to)
{
	const char *s = a->text + a->off[from];
	size_t len = a->off[to] - a->off[from];

	if (a->escape)
		json_escape_chars(b, s, len);
	else
		buf_append(b, s, len);
}

void wire_error_set(struct wire_error *e, int status, const char *fmt, ...)
{
	va_list ap;

	buf_free(&e->message);
	memset(e, 0, sizeof(*e));
	e->status = status;
	va_start(ap, fmt);
	buf_vprintf(&e->message, fmt, ap);
	va_end(ap);
}

void wire_error_free(struct wire_error *e)
{
	buf_free(&e->message);
}
