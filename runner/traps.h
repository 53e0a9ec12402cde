/*
 * traps: the report's sections on the traps that turn failover into a
 * bigger outage, from a stamp's combined summary (runner/stats.h; the
 * runs' means), in report.md and on the terminal:
 *
 *   Contracts          answers that broke the request's response_format:
 *                      per setup × phase the providers' broken answers,
 *                      those caught (and logged by the gateway), those
 *                      that reached the client — when a setup had one or
 *                      the load asks for a response_format;
 *   Degraded answers   per setup × phase the cache and static answers,
 *                      the errors and how long they took — when a setup
 *                      answered one or configures a degraded mode;
 *   Cost of failover   per setup × phase the cost, the fallback's share of
 *                      it, the breaker transitions, and the cost per
 *                      answered request against the first phase's (the
 *                      scenario's healthy baseline) — when a setup cost
 *                      anything;
 *   Breaker opens      a line per gateway setup: openings over the run,
 *                      a minute of the timeline, and the fallback share;
 *   Correlated failures  runner/correlated.h's callouts.
 *
 * Each is left out when it has nothing to say.
 */
#ifndef FAULTLINE_RUNNER_TRAPS_H
#define FAULTLINE_RUNNER_TRAPS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "runner/scenario.h"

/*
 * Prints the sections above: markdown (report.md's "## …" sections) or
 * plain (after "contracts:", "degraded answers:", "cost of failover:",
 * "breaker opens:", "correlated failures:").
 */
void traps_report(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown);

#endif
