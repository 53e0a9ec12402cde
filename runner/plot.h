/*
 * plot: a stamp's plots (chaos plot). Reads the stamp's combined
 * summary.json, its scenario.json (loaded at the summary's time scale, so
 * fault windows and phases are in the same seconds as the runs) and each
 * setup's first completed run; writes gnuplot data files under
 * STAMP/plots/data/ and runs gnuplot once per script of plots/ to make
 * STAMP/plots/NAME.png:
 *
 *   answered  answered share (%) per window, one line per setup, the fault
 *             and kill windows shaded and labelled
 *   latency   every request of the first run, latency (log) over its
 *             sched_ms, coloured by the provider that answered, failures
 *             as crosses; one panel per setup
 *   breakers  each gateway setup's breaker state (closed / half-open /
 *             open) over time, one step line per target
 *   phases    p50, p95, p99 of ok requests per phase, bars per setup
 *
 * Data files (whitespace-separated columns, strings double-quoted, NaN for
 * no value, a header comment naming the columns):
 *   meta.gp              gnuplot variables: titles, setups, providers,
 *                        fault windows, ranges, panels (the scripts load it)
 *   answered-SETUP.dat   mid_s from_s to_s answered_pct requests
 *   latency-SETUP.dat    t_s latency_ms provider_index ok "provider" "outcome"
 *   breakers-SETUP.dat   t_s state "to"  — one block a target (blocks apart
 *                        by two blank lines), from its first state at 0 s
 *                        to the last one at the end; state 0 closed,
 *                        1 half-open, 2 open
 *   phases.dat           phase_index setup_index p50_ms p95_ms p99_ms ok "phase" "setup"
 */
#ifndef FAULTLINE_RUNNER_PLOT_H
#define FAULTLINE_RUNNER_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "runner/gnuplot.h"
#include "runner/scenario.h"

/* The plots plot_stamp makes, in order; each is SCRIPTS/NAME.gp → STAMP/plots/NAME.png. */
extern const char *const plot_names[];
#define PLOT_COUNT 4

/* How long one gnuplot run may take before it is killed. */
#define PLOT_TIMEOUT_MS GNUPLOT_TIMEOUT_MS

/*
 * Writes STAMP/plots/NAME.png (NAME each of plot_names) from the stamp dir's files: data files under
 * STAMP/plots/data/, then one gnuplot run per script (each PNG written to
 * NAME.png.tmp and renamed). scripts_dir holds the .gp files (the caller
 * finds it: $FAULTLINE_PLOTS, else BIN/../plots, else plots). Returns 0,
 * or a negative errno with a message in err (CFG_ERR_LEN bytes) naming
 * the file and what is wrong: -ENOENT for a missing summary.json,
 * scenario.json, script or gnuplot itself; -EINVAL for a file that does
 * not hold what it should; -ETIMEDOUT for a gnuplot run past
 * PLOT_TIMEOUT_MS; -EIO for a script that fails (the message ends with
 * the last lines gnuplot wrote on stderr, which stay in
 * STAMP/plots/data/NAME.log). *write_failed (may be NULL) says whether the
 * error is a file that could not be written (a data file, a gnuplot log,
 * a PNG gnuplot wrote only part of): its .tmp is then left.
 */
int plot_stamp(const char *stamp_dir, const char *scripts_dir, char *err, bool *write_failed);

struct rundata;

/*
 * A setup's first completed run (SETUP/run-K) with its requests already
 * loaded (runner/rundata.h): chaos run keeps them from the run's summary.
 */
struct plot_run {
	const char *setup;
	unsigned k;
	const struct rundata *rows;
};

/*
 * plot_stamp from the stamp's combined summary and its scenario already in
 * memory (`chaos run`, which has just written them: nothing is read
 * again), sc loaded at the summary's time_scale, and runs[0..nruns) the
 * setups' first completed runs with their requests (a setup not among
 * them has its first run found and its requests.csv read, as plot_stamp
 * does). Returns as plot_stamp.
 */
int plot_summary(const char *stamp_dir, const struct scenario *sc, const cJSON *summary,
		 const struct plot_run *runs, size_t nruns, const char *scripts_dir, char *err,
		 bool *write_failed);

#endif
