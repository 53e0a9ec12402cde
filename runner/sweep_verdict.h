/*
 * sweep_verdict: what a sweep concludes — each row of sweep.csv judged
 * against the scenario's objective (runner/objective.h), the best point
 * for each setup (the cheapest that meets every bound, ties broken by
 * p95), and the knee of completion against duplicate work at the
 * objective's exchange rate (runner/knee.h, through runner/sweep_data.h),
 * stored in sweep.json, printed, and handed to the plots.
 */
#ifndef FAULTLINE_RUNNER_SWEEP_VERDICT_H
#define FAULTLINE_RUNNER_SWEEP_VERDICT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "runner/objective.h"
#include "runner/scenario.h"
#include "runner/sweep.h"

/*
 * The sweep's base scenario (its scenario.json as the sweep holds it),
 * loaded at the sweep's time scale, for its objective: every point is
 * judged against the base's objective. Returns 0, or a negative errno
 * with err; free sc with scenario_free whatever the result.
 */
int sweep_base_scenario(const struct sweep *s, struct scenario *sc, char *err);

/*
 * One row's verdict: "meets" or "fails" with the bounds broken into v,
 * for a phase the objective judges (its phase, or any with "*"); NULL
 * when o states no objective or the phase is not its.
 */
const char *sweep_row_verdict(const struct sc_objective *o, const char *phase,
			      const cJSON *cfig, struct objective_verdict *v);

/*
 * The best point of each setup as a new cJSON array: [{"setup", "point"
 * (its index from 1, null when none meets the objective), "dir",
 * "values": {PATH: value}, "cost_per_answered_usd", "latency_p95_ms"}]
 * — a point meets it when the setup's figures in the objective's phase
 * (every phase, for "*") do, and is ranked on its cost per answered
 * request and p95 there (over the whole run, for "*"). NULL with *oom
 * false when o states no objective.
 */
cJSON *sweep_best(const struct sweep *s, const struct sc_objective *o, bool *oom);

/*
 * After a sweep's points (and after chaos report over it): the knee of
 * each setup (sweep_knees at the objective's exchange rate and phase)
 * and the best points into s->knee and s->best, the verdicts printed on
 * out, and, with plots_dir, the sweep's plots (runner/sweep_plot.h).
 * Returns 0, or a negative errno with err (a plot or a file that could
 * not be made); what could be computed is kept either way.
 */
int sweep_conclude(struct sweep *s, const char *plots_dir, FILE *out, char *err);

#endif
