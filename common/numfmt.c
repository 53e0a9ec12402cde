/*
 * numfmt: whole and fixed-point numbers written backwards into a small
 * array, then moved to the front of the caller's.
 */
#include "common/numfmt.h"

#include <stdbool.h>
#include <string.h>

/* Moves the digits written backwards, [p, end), to out, NUL-terminated. */
static size_t finish(char *out, const char *p, const char *end)
{
	size_t n = (size_t)(end - p);

	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

size_t numfmt_int(char *out, long long v)
{
	char tmp[NUMFMT_LEN];
	char *end = tmp + sizeof(tmp);
	char *p = end;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return finish(out, p, end);
}

size_t numfmt_fixed(char *out, double v, int decimals)
{
	static const long long pow10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000,
					   10000000, 100000000, 1000000000 };
	char tmp[NUMFMT_LEN];
	char *end = tmp + sizeof(tmp);
	char *p = end;
	double limit;
	long long scale;
	long long n;
	long long whole;
	bool neg;
	int i;

	if (decimals < 0 || decimals > 9)
		return 0;
	scale = pow10[decimals];
	limit = 9e18 / (double)scale;
	if (!(v > -limit && v < limit))
		return 0;	/* NaN too */
	n = (long long)(v * (double)scale + (v < 0 ? -0.5 : 0.5));
	neg = n < 0;
	if (neg)
		n = -n;
	whole = n / scale;
	n %= scale;
	for (i = 0; i < decimals; i++) {
		*--p = (char)('0' + n % 10);
		n /= 10;
	}
	if (decimals)
		*--p = '.';
	do {
		*--p = (char)('0' + whole % 10);
		whole /= 10;
	} while (whole);
	if (neg)
		*--p = '-';
	return finish(out, p, end);
}
