/*
 * objective: a scenario's service objective ("objective": {"answered_min",
 * "p95_ms_max", "duplicate_share_max", "cost_per_answered_usd_max",
 * "phase"}) judged against a setup's figures — which setups (chaos report)
 * and which sweep points (chaos sweep) meet it, which bound each one
 * breaks, and which point is best. Pure: cJSON summaries in, verdicts out.
 *
 * A phase's figures meet the objective when every bound given holds for
 * their means (the combined summary's CFIGURES, runner/stats.h):
 *
 *   bound                        figure                 holds when
 *   answered_min                 answered_share         ≥ bound
 *   p95_ms_max                   latency_ms.p95         ≤ bound
 *   duplicate_share_max          duplicate_share        ≤ bound
 *   cost_per_answered_usd_max    cost_per_answered      ≤ bound
 *
 * each within 1e-9 × max(1, |bound|) for rounding, as chaos gate allows. A
 * figure with no value (no request, no ok request, no price) breaks its
 * bound. With "phase": "*" (the default) every phase must meet it. chaos
 * gate --objective judges the same bounds on the worst run instead of the
 * mean (runner/gate.h), as it judges expectations.
 */
#ifndef FAULTLINE_RUNNER_OBJECTIVE_H
#define FAULTLINE_RUNNER_OBJECTIVE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner/scenario.h"

#define OBJECTIVE_BROKEN_LEN 320

/* A verdict: met or not, and the bounds broken ("answered_min 0.91<0.98; …"). */
struct objective_verdict {
	bool meets;
	char broken[OBJECTIVE_BROKEN_LEN];	/* "" when it meets */
};

/*
 * Judges one phase's combined figures (CFIGURES: each figure {mean, …})
 * against o's bounds into *v. cfig NULL breaks every bound ("no value").
 */
void objective_judge(const struct sc_objective *o, const cJSON *cfig,
		     struct objective_verdict *v);

/*
 * Judges a setup of a stamp's combined summary (its "phases") against o:
 * the objective's phase, or with "*" every phase the summary has (the
 * broken bounds then prefixed "PHASE: "). A phase the summary lacks
 * breaks it ("no such phase in the run").
 */
void objective_judge_setup(const struct sc_objective *o, const cJSON *setup_summary,
			   struct objective_verdict *v);

/*
 * How many points of duplicate work one point of completion may cost,
 * as the objective states it: duplicate_share_max / (1 − answered_min)
 * — what it tolerates of each, traded against each other. 1 when either
 * bound is missing (or answered_min is 1).
 */
double objective_exchange(const struct sc_objective *o);

/* A sweep point (or setup) as a candidate for the best one. */
struct objective_candidate {
	bool meets;
	double cost;		/* cost per answered request; NAN: none */
	double p95;		/* ms; NAN: none */
};

/*
 * A setup's summary (or a sweep point's setup) as a candidate: whether it
 * meets o (objective_judge_setup, the verdict into *v), and the cost per
 * answered request and p95 it is ranked on — the means of the objective's
 * phase, or of the totals with "*".
 */
void objective_candidate_of(const struct sc_objective *o, const cJSON *setup_summary,
			    struct objective_verdict *v, struct objective_candidate *c);

/*
 * The best of n candidates: the cheapest that meets the objective, ties
 * (within 1e-9 relative) broken by the lower p95; a NAN cost or p95 is
 * taken as the highest. Returns its index, or -1 when none meets it.
 */
long objective_best(const struct objective_candidate *c, size_t n);

/*
 * The objective as an expectation for chaos gate: setups matching
 * setup_pattern, its phase, its bounds (source "objective"). Returns 0,
 * or -ENOMEM; free it with objective_expect_free.
 */
int objective_expect(const struct sc_objective *o, const char *setup_pattern,
		     struct sc_expect *out);

/* Frees what objective_expect made. */
void objective_expect_free(struct sc_expect *e);

#endif
