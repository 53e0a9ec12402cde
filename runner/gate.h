/*
 * gate: `chaos gate STAMP_DIR [--baseline FILE] [--save-baseline FILE]` —
 * judges a finished run (its stamp's combined summary.json, runner/stats.h)
 * against the scenario's expect block and, optionally, against a baseline
 * saved from an earlier run, and says which figure broke what. Pure apart
 * from gate_command, which reads and writes the files.
 *
 * Expectations (the scenario's "expect" entries, bounds scaled like the run)
 *
 *   Each entry is judged for every setup of the summary whose name matches
 *   its "setup" (fnmatch, no flags) and every phase it names (a name, or
 *   "*": every phase of the scenario), one check per bound given:
 *
 *     bound                    figure of the combined summary   judged on
 *     error_rate_max           error_rate                       its "max"
 *     answered_min             answered_share                   its "min"
 *     answered_max             answered_share                   its "max"
 *     extra_requests_max       extra_requests                   its "max"
 *     latency_p50_ms_max       latency_ms.p50                   its "max"
 *     latency_p95_ms_max       latency_ms.p95                   its "max"
 *     latency_p99_ms_max       latency_ms.p99                   its "max"
 *     time_to_open_ms_max      time_to_open_ms                  its "max"
 *     time_to_primary_ms_max   time_to_primary_ms               its "max"
 *     time_to_primary_ms_min   time_to_primary_ms               its "min"
 *     opens_min                opens                            its "min"
 *     opens_max                opens                            its "max"
 *     fallback_share_max       fallback_share                   its "max"
 *     fallback_share_min       fallback_share                   its "min"
 *     silent_breaks_max        silent_breaks                    its "max"
 *     stalls_max               stalls                           its "max"
 *     max_gap_ms_max           max_gap_ms                       its "max"
 *     ttft_p95_ms_max          ttft_ms.p95                      its "max"
 *     broken_answers_max       contract.reached_clients         its "max"
 *     broken_answers_min       contract.reached_clients         its "min"
 *     contract_violations_min  contract.violations              its "min"
 *     degraded_min             degraded_answers                 its "min"
 *     error_latency_ms_max     error_latency_ms.max             its "max"
 *     transitions_min          transitions                      its "min"
 *     transitions_max          transitions                      its "max"
 *     fallback_spend_usd_max   fallback_spend_usd               its "max"
 *
 *   An entry's "class" judges the phase's classes.CLASS figures instead
 *   (failed, "no CLASS request in the run", when the summary has none),
 *   its "stream" the phase's mix_streams.NAME figures (failed, "no
 *   request of stream NAME in the run").
 *   window_answered_min judges answered_windows[KEY].worst_share (KEY the
 *   entry's window_s in ms, stats_window_key) on its "min", the note
 *   naming the worst window when every run had the same one; no window
 *   with a request fails ("no value"). With relative_to, checked after the
 *   others, latency_p99_ratio_max judges latency_ms.p99 / the other
 *   setup's (same phase and class), cost_overhead_max cost_per_answered /
 *   the other's − 1: this setup's largest over the run's over the other's
 *   smallest, so the worst pair of runs; figures "latency_p99_ratio" and
 *   "cost_overhead", the note naming the other setup ("not in the run"
 *   when its summary lacks it, failed).
 *
 *   With repeats the worst run is judged: a _max bound against the largest
 *   value any run had, a _min bound against the smallest. A figure with no
 *   value fails its bound with the note "no value" — no ok request for the
 *   latencies and shares, no request for error_rate, no breaker opening for
 *   time_to_open_ms (so a breaker that never opened breaks
 *   time_to_open_ms_max), no answer from the primary for
 *   time_to_primary_ms, no streaming request for max_gap_ms (none with a
 *   gap) and no ok stream for ttft_ms.p95. The stream counts
 *   (silent_breaks, stalls) are 0 when there is no stream: they hold; so
 *   does error_latency_ms_max when no request went unanswered ("no
 *   unanswered request": nothing waited), and against the runs that had
 *   one when others had none. A figure some runs had and others did not fails
 *   too ("no value in K of N runs"): the worst run is one without it.
 *
 *   A setup pattern that matches no setup of the summary is one failed
 *   check, "no such setup in the run"; a phase the summary lacks for a
 *   matched setup likewise ("no such phase in the run"). Not a skip,
 *   although `chaos run --setup` leaves setups out on purpose: the
 *   summary cannot tell such a setup from one whose every run failed
 *   (chaos run leaves those out too), and a gate must not pass on what it
 *   did not measure. Gate a --setup run on a scenario whose expectations
 *   name only that setup, or read the notes.
 *
 * Baseline (a stamp's summary.json saved earlier, plus "tolerances")
 *
 *   "tolerances": {"relative": 0.25,
 *                  "absolute": {"error_rate": 0.01, "answered_share": 0.01,
 *                               "fallback_share": 0.05},
 *                  "floor_ms": 5}
 *   Every key is optional (these are the defaults); relative in [0, 100],
 *   the absolute ones in [0, 1], floor_ms in [0, 1e9]; unknown keys are
 *   errors. floor_ms is in measured milliseconds and is not scaled: it
 *   absorbs timer and scheduling noise, which does not shrink with the
 *   time scale.
 *
 *   The stream figures (streams, ttft_ms, stalls, truncations,
 *   error_events, silent_breaks, max_gap_ms) are not compared with a
 *   baseline: a stall's gap is the stall timeout, a count of breaks is
 *   the fault's doing, and both are judged by expect bounds instead.
 *
 *   For every setup × phase of the baseline, the run's mean (over its
 *   repeats) against the baseline's mean:
 *     error_rate               run ≤ base + absolute.error_rate
 *     answered_share           run ≥ base − absolute.answered_share
 *     latency_ms.p50/p95/p99,  run ≤ base × (1 + relative) + floor_ms
 *     time_to_open_ms
 *     fallback_share           |run − base| ≤ absolute.fallback_share
 *   A figure the baseline has no value for is not compared (no check); one
 *   the run has no value for while the baseline has fails ("no value"), as
 *   does one the baseline had in every run and the run lacks in some. A
 *   setup or phase of the baseline missing in the run fails ("missing in
 *   the run"); setups and phases the run has beyond the baseline's are not
 *   compared. A baseline of another scenario, or of another time scale, is
 *   unusable input (-EINVAL), as is one of the wrong shape (the message
 *   names the file and the key's path).
 *
 *   Every comparison allows 1e-9 × max(1, |bound|) for rounding, so a value
 *   exactly at its bound holds whichever way its decimals were computed.
 */
#ifndef FAULTLINE_RUNNER_GATE_H
#define FAULTLINE_RUNNER_GATE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "runner/scenario.h"

/* Tolerances a baseline gets when it states none (and --save-baseline writes). */
#define GATE_TOL_RELATIVE 0.25
#define GATE_TOL_ERROR_RATE 0.01
#define GATE_TOL_ANSWERED_SHARE 0.01
#define GATE_TOL_FALLBACK_SHARE 0.05
#define GATE_TOL_FLOOR_MS 5.0

enum gate_op {
	GATE_LE,		/* value ≤ bound */
	GATE_GE,		/* value ≥ bound */
	GATE_NEAR,		/* |value − bound| ≤ tolerance */
};

/*
 * One verdict: where it comes from ("expect" or "baseline"), the setup,
 * phase and figure, the bound and operator, the value compared, pass or
 * not, and a note ("no value", "missing in the run", "worst of 3 runs",
 * the baseline's figure and tolerance…).
 */
struct gate_check {
	const char *source;	/* "expect" or "baseline" */
	char *setup;		/* a setup's name (an expect's pattern when none matched) */
	char *phase;		/* a phase's name (an expect's "phase" when none matched) */
	const char *figure;	/* "error_rate", "latency_ms.p95"…; "-" for a missing setup/phase */
	enum gate_op op;
	double bound;		/* GATE_LE/GE: the limit; GATE_NEAR: the baseline's value; NAN: none */
	double tolerance;	/* GATE_NEAR: how far value may be from bound; else 0 */
	double value;		/* the figure compared; NAN when it has none */
	bool pass;
	char note[128];
};

struct gate_result {
	struct gate_check *checks;
	size_t n;
	size_t failed;
};

/*
 * Evaluates sc's expect block against summary (the stamp's combined
 * summary.json; sc loaded with its time_scale) and, when baseline is not
 * NULL, the run against the baseline, as described above: expectation
 * checks first, in the order of the entries, then baseline checks in the
 * baseline's order. Returns 0 with the verdicts in r (free them with
 * gate_result_free; r->failed counts the checks that broke); -EINVAL with
 * a message in err (CFG_ERR_LEN bytes), naming "summary" or "baseline" and
 * the key's path, for unusable input — a summary or baseline of the wrong
 * shape, a baseline of another scenario or time_scale, an sc of another
 * time scale than the summary; -ENOMEM. r is empty on failure.
 */
int gate_evaluate(const struct scenario *sc, const cJSON *summary, const cJSON *baseline,
		  struct gate_result *r, char *err);

/*
 * Prints a table of every check, one line each — PASS/FAIL, source, setup,
 * phase, figure, value, operator, bound, note — and a last line
 * "N checks, M failed".
 */
void gate_print(FILE *fp, const struct gate_result *r);

/* Frees the checks; r is left empty (freeing it again is harmless). */
void gate_result_free(struct gate_result *r);

/*
 * The whole command: loads STAMP_DIR/summary.json and STAMP_DIR/scenario.json
 * (with scenario_load at the summary's time_scale, so bounds are scaled like
 * the run), and baseline_path when not NULL; evaluates (with
 * objective_setups, not NULL, the scenario's objective too, for the setups
 * it matches: a scenario without one is unusable input); prints the table to
 * out. With save_path (may be NULL) it then writes the summary as a baseline
 * file, with the default tolerances written out, through save_path.tmp and a
 * rename (outfile_write), and says so on out before the table. Returns the
 * exit status: 0 when every check holds (also when there is none), 1 when
 * one broke or the baseline cannot be written (said on stderr, naming the
 * file and the error; no table then, and save_path.tmp is left as far as
 * it got), 2 for unusable input (the message, on stderr, names the file
 * and what is wrong; nothing is saved then).
 */
int gate_command(const char *stamp_dir, const char *baseline_path, const char *save_path,
		 const char *objective_setups, FILE *out);

#endif
