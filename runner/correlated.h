/*
 * correlated: the failure failover cannot route around — every target of
 * an alias's chain failing at once (a region, a shared dependency) —
 * found in a stamp's combined summary (runner/stats.h) and said in words
 * for the report:
 *
 *   failover cannot work: every target of chat (east-1, east-2) failed
 *   together in phase outage — they share group east
 *
 * For each gateway setup and phase: the aliases the load asks for
 * (load.model, or each load.mix stream's model, load.model by default),
 * each alias's chain (the setup config's models.ALIAS.targets); a target
 * failed throughout the phase when its chat rows timed in the phase
 * (upstream_by_provider) are all faulted, or it has none — a provider
 * that was down, or that the gateway stopped asking; and the phase
 * answered less than half its requests. Judged on the runs' means, so
 * with repeats every run must have failed so. The group is the
 * providers' "group" (mockprov's: a provider's faults shared with its
 * group) when every target has the same one. Pure apart from the
 * printing.
 */
#ifndef FAULTLINE_RUNNER_CORRELATED_H
#define FAULTLINE_RUNNER_CORRELATED_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "runner/scenario.h"

/* Below this answered share, a phase whose chain failed whole gets a callout. */
#define CORRELATED_ANSWERED_BELOW 0.5

/*
 * The group every provider of names[0, n) has in providers (a scenario's
 * providers array: each object's "group", a string), or NULL when one has
 * none or they differ (or n is 0).
 */
const char *correlated_group(const cJSON *providers, const char *const *names, size_t n);

/*
 * Whether a target failed throughout a phase, by its upstream_by_provider
 * entry of the phase's combined figures (fig; NULL or no entry: it logged
 * nothing): no attempts, or every attempt faulted (the runs' means).
 */
bool correlated_target_failed(const cJSON *fig, const char *provider);

/*
 * Prints a callout for every gateway setup × phase × alias of summary
 * (the stamp's combined summary) whose chain failed whole, as above: in
 * markdown a "## Correlated failures" section of "- **SETUP**: …" lines,
 * on a terminal "correlated failures:" and "  SETUP: …" lines. Returns the
 * callouts printed (nothing at all when 0).
 */
size_t correlated_report(FILE *fp, const struct scenario *sc, const cJSON *summary,
			 bool markdown);

#endif
