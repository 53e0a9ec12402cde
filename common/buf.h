/*
 * buf: a growable byte buffer, always NUL-terminated so its contents can be
 * used as a C string. Every program builds responses, rows and request bodies
 * in one of these. Also the one way an array of any element grows
 * (buf_grow_array).
 */
#ifndef FAULTLINE_BUF_H
#define FAULTLINE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct buf {
	char *data;	/* NULL until the first append; then NUL-terminated */
	size_t len;
	size_t cap;
};

/* buf_reserve when b lacks the room: grows it. Returns 0 or -ENOMEM. */
int buf_grow(struct buf *b, size_t n);

/*
 * Makes room for at least n more bytes. Returns 0 or -ENOMEM. Inline, with
 * buf_append and buf_puts, because a simulated run writes tens of
 * millions of fields a second through them.
 */
static inline int buf_reserve(struct buf *b, size_t n)
{
	return b->len + n + 1 <= b->cap ? 0 : buf_grow(b, n);
}

/* Appends n bytes. Returns 0 or -ENOMEM. */
static inline int buf_append(struct buf *b, const void *data, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

/* Appends a C string. Returns 0 or -ENOMEM. */
static inline int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

/* Appends printf-style output. Returns 0, -ENOMEM or -EINVAL. */
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* buf_printf with a va_list, which it uses up as vprintf does. */
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/*
 * printf into a new malloc'ed string, never cut to a buffer's size (the
 * caller frees it); NULL when memory runs out.
 */
char *buf_aprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends a whole number in decimal (no printf: for hot paths). */
int buf_put_int(struct buf *b, long long v);

/*
 * Appends v with exactly `decimals` digits after the point as
 * numfmt_fixed writes it (0–9 digits, rounded half away from zero,
 * without printf); what it does not take (decimals out of range, a
 * value too big for them) falls back to printf's "%.*f".
 */
int buf_put_fixed(struct buf *b, double v, int decimals);

/* Removes the first n bytes, keeping the rest. */
void buf_consume(struct buf *b, size_t n);

/* Empties the buffer but keeps its memory. */
void buf_reset(struct buf *b);

/* Frees the memory; the buffer is empty and reusable afterwards. */
void buf_free(struct buf *b);

/*
 * Hands the contents to the caller, who must free() them; the buffer is left
 * empty. Returns an empty string (still to be freed) when nothing was added,
 * or NULL when out of memory.
 */
char *buf_steal(struct buf *b);

/*
 * Grows the array *p, of *cap elements of size bytes, to hold at least n
 * (doubling, from 64), updating *p and *cap. Returns 0, or -ENOMEM (the
 * array untouched) when out of memory or n * size would overflow.
 */
int buf_grow_array(void **p, size_t *cap, size_t n, size_t size);

#endif
