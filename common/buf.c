/*
 * buf: growable NUL-terminated byte buffers.
 */
#include "common/buf.h"
#include "common/numfmt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_grow(struct buf *b, size_t n)
{
	size_t want = b->len + n + 1;
	size_t cap;
	char *p;

	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	int rc;

	va_copy(ap2, ap);
	rc = buf_reserve(b, 64);
	if (rc)
		goto out;
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	if (n < 0) {
		rc = -EINVAL;
		goto out;
	}
	if ((size_t)n >= b->cap - b->len) {
		rc = buf_reserve(b, (size_t)n);
		if (rc)
			goto out;
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
	}
	b->len += (size_t)n;
out:
	va_end(ap2);
	return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *buf_aprintf(const char *fmt, ...)
{
	struct buf b = { 0 };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

int buf_put_int(struct buf *b, long long v)
{
	char tmp[NUMFMT_LEN];

	return buf_append(b, tmp, numfmt_int(tmp, v));
}

int buf_put_fixed(struct buf *b, double v, int decimals)
{
	char tmp[NUMFMT_LEN];
	size_t n;

	n = numfmt_fixed(tmp, v, decimals);
	return n ? buf_append(b, tmp, n) : buf_printf(b, "%.*f", decimals, v);
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

char *buf_steal(struct buf *b)
{
	char *p;

	if (!b->data && buf_reserve(b, 0))
		return NULL;
	p = b->data;
	if (b->len == 0)
		p[0] = '\0';
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

int buf_grow_array(void **p, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *np;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return -ENOMEM;
	np = realloc(*p, ncap * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}
