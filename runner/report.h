/*
 * report: what a person reads after a scenario — the table of every setup
 * × phase (requests, answered share, error rate, latency percentiles,
 * throughput, fallback share, time to the breaker opening and to the
 * primary's first answer, duplicate work, cost) and each gateway setup's
 * breaker transitions, for streams their breaks, TTFT and largest gap,
 * and what the clients received, as STAMP/report.md and on the terminal; and the
 * summaries behind it, computed from the per-request files alone, so
 * `chaos report STAMP` can redo them for an old run.
 */
#ifndef FAULTLINE_RUNNER_REPORT_H
#define FAULTLINE_RUNNER_REPORT_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "runner/scenario.h"

struct rundata;

/*
 * One run's summary from the files in run_dir (stats_compute over the
 * scenario's phases, 5 s windows scaled, the setup's primary), with the
 * run's facts added (scenario, setup, run, t0_unix_ms, time_scale,
 * primary). A provider's unfinished mock-NAME.csv.tmp is not looked at
 * here: the caller finishes what it must first. Returns 0 with *out (the
 * caller's), or a negative errno with a message in err (CFG_ERR_LEN).
 * With rows (may be NULL), the run's records the summary was computed
 * from are kept there (stats_compute_keep; the caller frees them with
 * rundata_free), for the plots.
 */
int report_summarise_run(const struct scenario *sc, const struct sc_setup *st,
			 const char *run_dir, unsigned k, int64_t t0_unix_ms, cJSON **out,
			 struct rundata *rows, char *err);

/*
 * Prints the phase table of a stamp's combined summary: plain columns for
 * a terminal (markdown false) or a markdown table. Figures are the runs'
 * means; "—" where there is none. When a setup × phase had streams, a
 * second table follows (after "streams:", or a "## Streams" section in
 * markdown) with those rows alone: streams, stalls, truncations, silent
 * breaks, error events, TTFT p50/p95 and the largest gap. Then what the
 * clients received (runner/received.h: after "what clients received:",
 * or a "## What clients received" section), every setup × phase. When the
 * scenario has a detection block, the Detection table follows
 * (runner/detect.h: after "detection:", or a "## Detection" section);
 * then the failover traps' sections, each when it has something to say
 * (runner/traps.h: correlated failures, contracts, degraded answers, the
 * cost of failover, breaker opens), then the objective's verdicts.
 */
void report_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown);

/*
 * Writes STAMP/report.md (outfile_write: through a .tmp and a rename).
 * Returns 0, or a negative errno with err (CFG_ERR_LEN bytes) naming the
 * file and the error.
 */
int report_write(const char *stamp_dir, const struct scenario *sc, const cJSON *summary,
		 char *err);

/*
 * `chaos report STAMP`: loads STAMP/scenario.json at the time scale its
 * summary.json (or a run's) recorded, recomputes every SETUP/run-K's
 * summary.json from its files (t0 from loadgen-summary.json), then the
 * combined summary.json and report.md, and prints the table to out.
 * Returns the exit status: 0; 1 when a file cannot be written (said on
 * stderr naming the file and the error; it is left as FILE.tmp); 2 with a
 * message on stderr naming the file and what is wrong with it.
 */
int report_command(const char *stamp_dir, FILE *out);

#endif
