/*
 * knee: where more completion stops being worth its duplicate work. Given
 * sweep points (x = duplicate_share, y = answered_share) and an exchange
 * rate k — how many points of duplicate work one point of completion may
 * cost — finds the knee of the points' trade-off:
 *
 *   1. Points with a value missing (NAN or infinite x or y) are left out.
 *   2. The Pareto frontier: the points no other point dominates, a point
 *      q dominating p when q.y ≥ p.y and q.x ≤ p.x, one of them strictly.
 *      Of points equal in both values the first in input order stands for
 *      them all. Sorted by x ascending, the frontier's y ascends strictly
 *      too.
 *   3. The knee is the first frontier point from which the step to the next
 *      frontier point costs more than k: Δx/Δy > k (with 1e-9 of slack,
 *      Δx − k·Δy > 1e-9, so steps that cost exactly k in decimals are not
 *      dear); the last frontier point when no step does; none when no
 *      point has both values.
 *
 * So k = 0 takes the frontier's cheapest point (any extra duplicate work is
 * too dear), k = INFINITY its most complete one. The sweep derives k from
 * a scenario's objective as duplicate_share_max / (1 − answered_min), and
 * uses 1 when there is none. Pure: no I/O, no allocation.
 */
#ifndef FAULTLINE_RUNNER_KNEE_H
#define FAULTLINE_RUNNER_KNEE_H

#include <stddef.h>

/* What a step's cost may exceed k·Δy by and still not be dear. */
#define KNEE_SLACK 1e-9

/*
 * Finds the knee of the n points (x[i], y[i]) for exchange rate k (≥ 0,
 * INFINITY allowed). frontier (n entries, may be NULL) gets the frontier's
 * indices into the input, x ascending, and *nfrontier (may be NULL) their
 * count; *knee the knee's index into the input, or -1 when no point has
 * both values. Returns 0, or -EINVAL for a k that is negative or NAN
 * (*knee then -1, no frontier).
 */
int knee_find(const double *x, const double *y, size_t n, double k, size_t *frontier,
	      size_t *nfrontier, long *knee);

#endif
