/*
 * runner knee: the Pareto frontier of (duplicate share, answered share)
 * points and the knee at an exchange rate — one point, ties, every point
 * dominated by one, missing values, k = 0, a huge k, and the cost of a
 * step exactly at k.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "runner/knee.h"

TestSuite(knee, .timeout = 10);

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Runs knee_find and checks the frontier (want_f, nf indices) and the knee. */
static void check(const double *x, const double *y, size_t n, double k, const size_t *want_f,
		  size_t nf, long want_knee)
{
	size_t frontier[32];
	size_t got_nf = 99;
	long knee = 99;
	size_t i;

	cr_assert_eq(knee_find(x, y, n, k, frontier, &got_nf, &knee), 0);
	cr_expect_eq(got_nf, nf, "frontier has %zu points, want %zu", got_nf, nf);
	for (i = 0; i < nf && i < got_nf; i++)
		cr_expect_eq(frontier[i], want_f[i], "frontier[%zu] = %zu, want %zu", i, frontier[i],
			     want_f[i]);
	cr_expect_eq(knee, want_knee, "knee %ld, want %ld", knee, want_knee);
}

/*
 * A timeout sweep: shorter timeouts fail over sooner (more answered) and
 * duplicate more. Points out of order in the input; frontier by x.
 *   i  x (dup)  y (answered)
 *   0  0.20     0.990
 *   1  0.01     0.900
 *   2  0.03     0.960
 *   3  0.08     0.980
 *   4  0.05     0.950   dominated by 2
 * Steps from 1: Δx .02 / Δy .06 = 0.33; from 2: .05/.02 = 2.5; from 3: .12/.01 = 12.
 */
static const double tx[] = { 0.20, 0.01, 0.03, 0.08, 0.05 };
static const double ty[] = { 0.990, 0.900, 0.960, 0.980, 0.950 };

Test(knee, frontier_by_duplicates_and_the_first_dear_step)
{
	static const size_t f[] = { 1, 2, 3, 0 };

	check(tx, ty, N(tx), 1, f, N(f), 2);	/* 2 → 3 costs 2.5 > 1 */
	check(tx, ty, N(tx), 3, f, N(f), 3);	/* 3 → 0 costs 12 > 3 */
	check(tx, ty, N(tx), 0.2, f, N(f), 1);	/* 1 → 2 costs 0.33 > 0.2 */
}

Test(knee, k_zero_takes_the_cheapest_point)
{
	static const size_t f[] = { 1, 2, 3, 0 };

	check(tx, ty, N(tx), 0, f, N(f), 1);
}

Test(knee, a_huge_k_takes_the_most_complete_point)
{
	static const size_t f[] = { 1, 2, 3, 0 };

	check(tx, ty, N(tx), 1e9, f, N(f), 0);
	check(tx, ty, N(tx), INFINITY, f, N(f), 0);
}

Test(knee, one_point_is_the_knee)
{
	static const double x[] = { 0.4 };
	static const double y[] = { 0.5 };
	static const size_t f[] = { 0 };

	check(x, y, 1, 1, f, 1, 0);
	check(x, y, 1, 0, f, 1, 0);
}

Test(knee, all_dominated_by_one)
{
	/* Point 2 has the least duplicates and the most answered. */
	static const double x[] = { 0.10, 0.30, 0.05, 0.05, 0.20 };
	static const double y[] = { 0.90, 0.95, 0.99, 0.97, 0.99 };
	static const size_t f[] = { 2 };

	check(x, y, N(x), 1, f, 1, 2);
}

/* Equal points: the first stands for them; equal x or equal y: the better one. */
Test(knee, ties)
{
	static const double x[] = { 0.10, 0.10, 0.10, 0.02, 0.30 };
	static const double y[] = { 0.95, 0.95, 0.90, 0.95, 0.99 };
	/* 0 and 1 equal, but 3 has the same y for fewer duplicates: dominates both; 2 too. */
	static const size_t f[] = { 3, 4 };

	check(x, y, N(x), 1, f, N(f), 3);	/* .28 / .04 = 7 > 1 */
	check(x, y, N(x), 7.5, f, N(f), 4);

	static const double x2[] = { 0.10, 0.10 };
	static const double y2[] = { 0.95, 0.95 };
	static const size_t f2[] = { 0 };

	check(x2, y2, N(x2), 1, f2, 1, 0);
}

/* NAN in either value leaves the point out; none with both: no knee. */
Test(knee, missing_values)
{
	static const double x[] = { NAN, 0.02, 0.01, 0.5 };
	static const double y[] = { 1.0, NAN, 0.80, 0.99 };
	static const size_t f[] = { 2, 3 };
	static const double xn[] = { NAN, 0.02 };
	static const double yn[] = { 1.0, NAN };
	size_t nf = 99;
	long knee = 99;

	check(x, y, N(x), 1, f, N(f), 2);	/* .49 / .19 > 1 */
	check(x, y, N(x), 3, f, N(f), 3);
	cr_assert_eq(knee_find(xn, yn, 2, 1, NULL, &nf, &knee), 0);
	cr_expect_eq(knee, -1);
	cr_expect_eq(nf, 0);
	cr_assert_eq(knee_find(NULL, NULL, 0, 1, NULL, NULL, &knee), 0);
	cr_expect_eq(knee, -1);
}

/* A step costing exactly k (in decimals) is not dear. */
Test(knee, a_step_at_exactly_k_is_taken)
{
	static const double x[] = { 0.01, 0.02, 0.05 };
	static const double y[] = { 0.90, 0.91, 0.92 };
	static const size_t f[] = { 0, 1, 2 };

	check(x, y, N(x), 1, f, N(f), 1);	/* .01/.01 = 1 taken; .03/.01 = 3 not */
}

Test(knee, a_bad_rate_is_refused)
{
	long knee = 5;
	size_t nf = 5;

	cr_expect_eq(knee_find(tx, ty, N(tx), -1, NULL, &nf, &knee), -EINVAL);
	cr_expect_eq(knee, -1);
	cr_expect_eq(nf, 0);
	cr_expect_eq(knee_find(tx, ty, N(tx), NAN, NULL, NULL, &knee), -EINVAL);
}
