/*
 * numfmt: numbers written in decimal without printf, for the paths that
 * write one per request or per row (a header's value, a CSV field).
 * Each writes into a caller's array of NUMFMT_LEN bytes, NUL-terminated,
 * and returns the length. struct buf's buf_put_int and buf_put_fixed are
 * built on them.
 */
#ifndef FAULTLINE_NUMFMT_H
#define FAULTLINE_NUMFMT_H

#include <stddef.h>

/* Room for any number these write (a long long: 20 characters, and the NUL). */
#define NUMFMT_LEN 32

/* A whole number. */
size_t numfmt_int(char *out, long long v);

/*
 * v with exactly decimals (0–9) digits after the point, rounded half away
 * from zero (printf rounds a tie to even: the two can differ by one unit
 * in the last place on a tie). Returns 0, out untouched, when v is not a
 * finite number under 9e18 / 10^decimals in size or decimals is out of
 * range: the caller formats it another way (printf's "%.*f").
 */
size_t numfmt_fixed(char *out, double v, int decimals);

#endif
