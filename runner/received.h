/*
 * received: the report's table of what the clients of each setup got, a
 * row per setup × phase from a stamp's combined summary (runner/stats.h;
 * the runs' means) — the answers, from the primary and from another
 * provider (the counts behind the fallback share) and degraded ones, and
 * each kind of failure: HTTP errors by status, streams ended with an error
 * event, silent breaks, cut bodies, client timeouts, refused and reset
 * connections, invalid bodies. A column that is zero in every row is left
 * out, and a line under the table says which.
 */
#ifndef FAULTLINE_RUNNER_RECEIVED_H
#define FAULTLINE_RUNNER_RECEIVED_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "runner/scenario.h"

/*
 * Prints the table: report.md's "## What clients received" section
 * (markdown) or plain columns after "what clients received:". Nothing
 * when the summary has no setup × phase.
 */
void received_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown);

#endif
