/*
 * buf: growth past the first allocation, consume, steal and the NUL that
 * always ends the contents.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

Test(buf, append_grows_past_initial_capacity, .timeout = 10)
{
	struct buf b = { 0 };
	char chunk[10];
	size_t first_cap;
	int i;

	memcpy(chunk, "0123456789", sizeof(chunk));
	cr_assert_eq(buf_append(&b, chunk, sizeof(chunk)), 0);
	first_cap = b.cap;
	for (i = 1; i < 100; i++)
		cr_assert_eq(buf_append(&b, chunk, sizeof(chunk)), 0);
	cr_assert_eq(b.len, 1000);
	cr_assert_gt(b.cap, first_cap);
	cr_assert_gt(b.cap, b.len, "no room for the NUL: cap %zu", b.cap);
	cr_assert_eq(b.data[1000], '\0');
	cr_assert_eq(strlen(b.data), 1000);
	cr_assert_eq(memcmp(b.data + 990, "0123456789", 10), 0);
	buf_free(&b);
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, 0);
}

Test(buf, printf_longer_than_free_space, .timeout = 10)
{
	struct buf b = { 0 };
	char big[301];

	memset(big, 'x', 300);
	big[300] = '\0';
	cr_assert_eq(buf_puts(&b, "head:"), 0);
	cr_assert_eq(buf_printf(&b, "%s|%d", big, 42), 0);
	cr_assert_eq(b.len, 5 + 300 + 3);
	cr_assert_eq(strncmp(b.data, "head:xxx", 8), 0);
	cr_assert_str_eq(b.data + 5 + 300, "|42");
	cr_assert_eq(b.data[b.len], '\0');
	buf_free(&b);
}

Test(buf, printf_appends_in_order, .timeout = 10)
{
	struct buf b = { 0 };
	int i;

	for (i = 0; i < 50; i++)
		cr_assert_eq(buf_printf(&b, "%d,", i), 0);
	cr_assert_eq(strncmp(b.data, "0,1,2,3,", 8), 0);
	cr_assert_eq(b.len, strlen(b.data));
	cr_assert_str_eq(b.data + b.len - 6, "48,49,");
	buf_free(&b);
}

Test(buf, consume_keeps_the_rest, .timeout = 10)
{
	struct buf b = { 0 };

	cr_assert_eq(buf_puts(&b, "hello world"), 0);
	buf_consume(&b, 6);
	cr_assert_eq(b.len, 5);
	cr_assert_str_eq(b.data, "world");
	buf_consume(&b, 0);
	cr_assert_str_eq(b.data, "world");
	buf_consume(&b, 99);
	cr_assert_eq(b.len, 0);
	cr_assert_str_eq(b.data, "");
	cr_assert_eq(buf_puts(&b, "again"), 0);
	cr_assert_str_eq(b.data, "again");
	buf_free(&b);
}

Test(buf, reset_keeps_memory, .timeout = 10)
{
	struct buf b = { 0 };
	size_t cap;

	cr_assert_eq(buf_puts(&b, "some text"), 0);
	cap = b.cap;
	buf_reset(&b);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, cap);
	cr_assert_str_eq(b.data, "");
	buf_free(&b);
}

Test(buf, steal_on_empty_buffer_gives_empty_string, .timeout = 10)
{
	struct buf b = { 0 };
	char *s = buf_steal(&b);

	cr_assert_not_null(s);
	cr_assert_str_eq(s, "");
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, 0);
	free(s);
}

Test(buf, steal_hands_over_contents_and_empties, .timeout = 10)
{
	struct buf b = { 0 };
	char *s;

	cr_assert_eq(buf_puts(&b, "abc"), 0);
	s = buf_steal(&b);
	cr_assert_str_eq(s, "abc");
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(buf_puts(&b, "new"), 0);
	cr_assert_str_eq(b.data, "new");
	cr_assert_neq(b.data, s);
	free(s);
	buf_free(&b);
}

Test(buf, append_binary_keeps_embedded_nul_and_terminates, .timeout = 10)
{
	struct buf b = { 0 };

	cr_assert_eq(buf_append(&b, "a\0b", 3), 0);
	cr_assert_eq(b.len, 3);
	cr_assert_eq(memcmp(b.data, "a\0b", 3), 0);
	cr_assert_eq(b.data[3], '\0');
	cr_assert_eq(buf_append(&b, "", 0), 0);
	cr_assert_eq(b.len, 3);
	buf_free(&b);
}

Test(buf, put_int_matches_printf, .timeout = 10)
{
	static const long long vals[] = { 0, 7, -7, 10, 1234567890123LL, -9223372036854775807LL - 1 };
	struct buf b = { 0 };
	char want[32];
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		buf_reset(&b);
		buf_put_int(&b, vals[i]);
		snprintf(want, sizeof(want), "%lld", vals[i]);
		cr_assert_str_eq(b.data, want);
	}
	buf_free(&b);
}

Test(buf, put_fixed_matches_printf, .timeout = 10)
{
	static const double vals[] = { 0, 1.5, 12.0004, 12.0005, 299.9996, 1234567.891234,
				       -3.25, -0.5, 86400000.125 };
	struct buf b = { 0 };
	char want[64];
	size_t i;
	int d;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (d = 0; d <= 6; d++) {
			buf_reset(&b);
			buf_put_fixed(&b, vals[i], d);
			snprintf(want, sizeof(want), "%.*f", d, vals[i]);
			/* Ties may round differently (printf: half to even):
			 * at most one unit in the last place apart. */
			cr_assert_float_eq(strtod(b.data, NULL), strtod(want, NULL),
					   1.000001 / pow(10, d),
					   "%.10g with %d decimals: %s, printf %s",
					   vals[i], d, b.data, want);
		}
	}
	buf_reset(&b);
	buf_put_fixed(&b, 299.9996, 3);
	cr_assert_str_eq(b.data, "300.000");
	buf_reset(&b);
	buf_put_fixed(&b, 2.5, 3);
	cr_assert_str_eq(b.data, "2.500");
	buf_reset(&b);
	buf_put_fixed(&b, 1e15, 3);	/* beyond the fast path: printf */
	cr_assert_str_eq(b.data, "1000000000000000.000");
	buf_free(&b);
}

/* buf_grow_array: doubling from 64, untouched when big enough, refused past SIZE_MAX. */
Test(buf, grow_array_doubles_and_refuses_overflow, .timeout = 10)
{
	int *a = NULL;
	size_t cap = 0;

	cr_assert_eq(buf_grow_array((void **)&a, &cap, 1, sizeof(*a)), 0);
	cr_assert_eq(cap, 64);
	a[63] = 7;
	cr_assert_eq(buf_grow_array((void **)&a, &cap, 64, sizeof(*a)), 0);
	cr_assert_eq(cap, 64, "grown although it had room");
	cr_assert_eq(buf_grow_array((void **)&a, &cap, 300, sizeof(*a)), 0);
	cr_assert_eq(cap, 512);
	cr_assert_eq(a[63], 7, "contents lost");
	cr_assert_eq(buf_grow_array((void **)&a, &cap, SIZE_MAX / 2, sizeof(*a)), -ENOMEM);
	cr_assert_eq(cap, 512, "capacity changed by a refused growth");
	cr_assert_eq(a[63], 7);
	free(a);
}
