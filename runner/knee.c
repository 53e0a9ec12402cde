/*
 * knee: the Pareto frontier of (duplicate share, answered share) points
 * and its knee at an exchange rate; see knee.h.
 */
#include "runner/knee.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>

static bool has_both(const double *x, const double *y, size_t i)
{
	return isfinite(x[i]) && isfinite(y[i]);
}

/*
 * Whether point i is off the frontier: another point dominates it, or an
 * earlier one has the same values.
 */
static bool dominated(const double *x, const double *y, size_t n, size_t i)
{
	size_t j;

	for (j = 0; j < n; j++) {
		if (j == i || !has_both(x, y, j))
			continue;
		if (x[j] == x[i] && y[j] == y[i]) {
			if (j < i)
				return true;
			continue;
		}
		if (y[j] >= y[i] && x[j] <= x[i])
			return true;
	}
	return false;
}

int knee_find(const double *x, const double *y, size_t n, double k, size_t *frontier,
	      size_t *nfrontier, long *knee)
{
	size_t first = n;	/* the frontier's point of least x so far */
	size_t count = 0;
	size_t cur;
	size_t i;

	*knee = -1;
	if (nfrontier)
		*nfrontier = 0;
	if (isnan(k) || k < 0)
		return -EINVAL;
	/*
	 * The frontier walked by x ascending: each next point is the one of
	 * least x above the current (frontier x values are distinct). O(n²):
	 * a sweep has tens of points.
	 */
	for (i = 0; i < n; i++) {
		if (has_both(x, y, i) && !dominated(x, y, n, i) && (first == n || x[i] < x[first]))
			first = i;
	}
	if (first == n)
		return 0;
	cur = first;
	for (;;) {
		size_t next = n;

		if (frontier)
			frontier[count] = cur;
		count++;
		for (i = 0; i < n; i++) {
			if (has_both(x, y, i) && x[i] > x[cur] && !dominated(x, y, n, i) &&
			    (next == n || x[i] < x[next]))
				next = i;
		}
		if (*knee < 0 && (next == n || x[next] - x[cur] - k * (y[next] - y[cur]) > KNEE_SLACK))
			*knee = (long)cur;
		if (next == n)
			break;
		cur = next;
	}
	if (nfrontier)
		*nfrontier = count;
	return 0;
}
