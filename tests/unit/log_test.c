/* log_limit_pass: one line per interval, the rest counted, on a fake clock. */
#include <criterion/criterion.h>

#include "common/log.h"

#define S 1000000000ull

Test(log, limit_lets_one_line_through_per_interval, .timeout = 10)
{
	struct log_limit l = { 0 };
	uint64_t quiet = 99;

	cr_assert(log_limit_pass(&l, 5 * S, S, &quiet), "the first line goes out");
	cr_assert_eq(quiet, 0);
	cr_assert_not(log_limit_pass(&l, 5 * S + 1, S, &quiet));
	cr_assert_not(log_limit_pass(&l, 6 * S - 1, S, &quiet));
	cr_assert(log_limit_pass(&l, 6 * S, S, &quiet), "one interval later");
	cr_assert_eq(quiet, 2, "held back: %llu", (unsigned long long)quiet);
	cr_assert(log_limit_pass(&l, 9 * S, S, &quiet));
	cr_assert_eq(quiet, 0);
}

/* A clock that reads 0 still starts an interval. */
Test(log, limit_at_time_zero, .timeout = 10)
{
	struct log_limit l = { 0 };
	uint64_t quiet;

	cr_assert(log_limit_pass(&l, 0, S, &quiet));
	cr_assert_not(log_limit_pass(&l, 1, S, &quiet));
}
