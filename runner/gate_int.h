/*
 * gate_int.h — what gate.c (the judging) gives gate_cmd.c (the command).
 * Private to them.
 */
#ifndef FAULTLINE_RUNNER_GATE_INT_H
#define FAULTLINE_RUNNER_GATE_INT_H

#include <cjson/cJSON.h>

#include "runner/gate.h"
#include "runner/scenario.h"

/*
 * The top of a combined summary or baseline (root, from file): an object
 * with "scenario" (a string, into *scenario), "time_scale" (above 0, into
 * *scale) and "setups" (an object, into *setups). 0, or -EINVAL with a
 * message in err (CFG_ERR_LEN bytes).
 */
int gate__check_head(const cJSON *root, const char *file, const char **scenario,
		     double *scale, const cJSON **setups, char *err);

/*
 * gate_evaluate, with the summary's and the baseline's file names (sfile,
 * bfile) for the messages; with objective_setups (a setup name or glob;
 * NULL: none) also the scenario's objective as an expectation of those
 * setups (source "objective"; -EINVAL when the scenario states none).
 */
int gate__evaluate(const struct scenario *sc, const cJSON *summary, const char *sfile,
		   const char *objective_setups, const cJSON *baseline, const char *bfile,
		   struct gate_result *r, char *err);

/*
 * Checks that summary (from file) can serve as a baseline, every setup and
 * phase of it, by judging it against itself. 0, or a negative errno with
 * a message in err.
 */
int gate__check_as_baseline(const cJSON *summary, const char *file, char *err);

#endif
