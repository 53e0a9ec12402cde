/*
 * numfmt: whole and fixed-point numbers without printf — the same text as
 * printf's for whole numbers and for fixed points off a tie, and a refusal
 * (0) for what it does not take, so the caller can fall back.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/numfmt.h"

Test(numfmt, int_matches_printf, .timeout = 10)
{
	static const long long vals[] = { 0, 1, -1, 9, 10, 99, 100, 12345, -98765, 4294967296LL,
					  LLONG_MAX, LLONG_MIN };
	char out[NUMFMT_LEN];
	char want[64];
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t n = numfmt_int(out, vals[i]);

		snprintf(want, sizeof(want), "%lld", vals[i]);
		cr_assert_str_eq(out, want);
		cr_assert_eq(n, strlen(want));
	}
}

/* Nine decimals, as the cost header has them: printf's text on values that are not ties. */
Test(numfmt, fixed_nine_decimals_matches_printf, .timeout = 10)
{
	static const double vals[] = { 0, 0.000012345, 0.00042, 1.5, 3.000000001, 0.123456789,
				       -2.75, 12345.678901234, 8999999999.5 };
	char out[NUMFMT_LEN];
	char want[64];
	size_t i;
	int d;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (d = 0; d <= 9; d++) {
			size_t n = numfmt_fixed(out, vals[i], d);

			snprintf(want, sizeof(want), "%.*f", d, vals[i]);
			cr_assert_neq(n, 0, "%.17g with %d decimals refused", vals[i], d);
			cr_assert_eq(n, strlen(out));
			/* A tie may round the other way (printf: half to even). */
			cr_assert_float_eq(strtod(out, NULL), strtod(want, NULL),
					   1.000001 / pow(10, d), "%.17g with %d decimals: %s, printf %s",
					   vals[i], d, out, want);
		}
	}
	numfmt_fixed(out, 0.000012345, 9);
	cr_assert_str_eq(out, "0.000012345");
	numfmt_fixed(out, -0.0000000004, 9);
	cr_assert_str_eq(out, "0.000000000", "a negative that rounds to zero has no sign");
	numfmt_fixed(out, 2.5, 0);
	cr_assert_str_eq(out, "3", "a tie rounds away from zero");
}

/* What it does not take is refused with out untouched: the caller falls back to printf. */
Test(numfmt, fixed_refuses_what_it_cannot_write, .timeout = 10)
{
	char out[NUMFMT_LEN] = "untouched";

	cr_assert_eq(numfmt_fixed(out, 1.0, -1), 0);
	cr_assert_eq(numfmt_fixed(out, 1.0, 10), 0);
	cr_assert_eq(numfmt_fixed(out, NAN, 3), 0);
	cr_assert_eq(numfmt_fixed(out, INFINITY, 0), 0);
	cr_assert_eq(numfmt_fixed(out, 9e9, 9), 0, "9e9 x 1e9 does not fit a long long");
	cr_assert_eq(numfmt_fixed(out, -9e18, 0), 0);
	cr_assert_str_eq(out, "untouched");
	cr_assert_neq(numfmt_fixed(out, 8.9e9, 9), 0);
	cr_assert_str_eq(out, "8900000000.000000000");
}
