/*
 * figures: a run's figures — per phase, per time window and over the
 * whole run — from its loaded records (runner/rundata.h), as the summary
 * JSON that runner/stats.h describes. Pure: rows in, numbers out; no
 * files, no clock.
 */
#ifndef FAULTLINE_RUNNER_FIGURES_H
#define FAULTLINE_RUNNER_FIGURES_H

#include <cjson/cJSON.h>

#include "runner/rundata.h"
#include "runner/stats.h"

/*
 * Checks the caller's input (all but run_dir's files). Returns 0, or
 * -EINVAL with err (CFG_ERR_LEN bytes) saying what is wrong.
 */
int figures_check(const struct stats_input *in, char *err);

/*
 * Builds the summary of d (loaded with in->t0_unix_ms; in checked with
 * figures_check) into *out, for the caller to cJSON_Delete. First fills
 * d's derived fields — each request's cost (priced from its tokens when
 * it has none), whether the primary answered it, its upstream rows, and
 * which mock rows are duplicate work — from in, so d may be summarised
 * again with another input. Returns 0 or -ENOMEM (*out NULL).
 */
int figures_summary(struct rundata *d, const struct stats_input *in, cJSON **out);

#endif
