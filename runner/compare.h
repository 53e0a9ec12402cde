/*
 * compare: `chaos compare REAL_STAMP SIM_STAMP [--setup NAME] [--json FILE]`
 * — holds a simulated stamp (chaos sim's) to the real run it models: per
 * setup and phase, the real figure, the simulated one, the difference and
 * what is allowed, and a verdict. Works on any two stamps of the same
 * scenario and time scale; which one was simulated does not matter. Pure
 * apart from compare_command, which reads and writes the files.
 *
 * Figures (each the mean over the stamp's runs, from its combined
 * summary.json; diff = sim − real; allowed as below, scale the stamps'
 * time_scale):
 *
 *   figure                    allowed |diff|
 *   answered_share            0.01 (one percentage point)
 *   latency_ms.p50            max(5% of |real|, 10 ms × scale)
 *   latency_ms.p95            max(5% of |real|, 10 ms × scale)
 *   attempts_per_request      5% of |real|
 *   duplicate_work.attempts   5% of |real|
 *   time_to_open_ms           max(5% of |real|, 50 ms × scale)
 *
 *   A figure null or absent in both stamps is skipped (no check); one with
 *   a value in one stamp only fails ("no value in the sim" / "… in the
 *   real run"). Every comparison allows 1e-9 × max(1, |real|) for
 *   rounding.
 *
 *   breaker_transitions: per setup, the first run's events of each stamp
 *   as a sequence of (provider, from, to) — times, models and reasons not
 *   compared — must be the same; the row's real and sim are the counts,
 *   the note names the first place they differ. Skipped when neither
 *   stamp's first run has an event.
 *
 * Setups and phases: the real stamp's in its order, then the sim's it
 * lacks. A setup or phase in one stamp only is a failed row (figure "-",
 * "missing in the sim" / "missing in the real run"). With only_setup,
 * that setup alone.
 *
 * Unusable input (-EINVAL, a message naming the file and what was
 * expected): stamps of different scenarios or time scales, a summary of
 * the wrong shape, an only_setup neither stamp has.
 */
#ifndef FAULTLINE_RUNNER_COMPARE_H
#define FAULTLINE_RUNNER_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "runner/stamp.h"

/* The bounds (the issue's): shares absolute, the rest relative to real, with floors. */
#define COMPARE_SHARE_ABS 0.01		/* answered_share: one percentage point */
#define COMPARE_RELATIVE 0.05		/* of the real figure */
#define COMPARE_LATENCY_FLOOR_MS 10.0	/* × the time scale */
#define COMPARE_OPEN_FLOOR_MS 50.0	/* × the time scale */
/*
 * Latency percentiles are compared where both sides answered at least
 * this many requests in the phase (latency_ms.count's mean): a phase a
 * provider answers none of can see a handful answered at its edge, in one
 * side and not the other, and their percentiles say nothing.
 */
#define COMPARE_MIN_ANSWERED 20

/* One row: a figure of a setup's phase in both stamps, and the verdict. */
struct compare_row {
	char *setup;
	char *phase;		/* "-" for the run-wide breaker transitions */
	const char *figure;	/* "latency_ms.p50", "breaker_transitions"; "-" for a missing setup/phase */
	double real;		/* NAN: no value */
	double sim;
	double diff;		/* sim − real; NAN when either has none (and for transitions) */
	double allowed;		/* NAN for transitions and missing rows */
	bool pass;
	char note[200];
};

struct compare_result {
	struct compare_row *rows;
	size_t n;
	size_t cap;
	size_t failed;
};

/*
 * Compares the stamps real and sim (loaded, or lent with stamp_use; their
 * scenarios, when loaded, are compared by name too) as described above,
 * only_setup (NULL: every setup) limiting it to one setup. Returns 0 with
 * the rows in r (free them with compare_result_free); -EINVAL with a
 * message in err (CFG_ERR_LEN bytes) for unusable input; -ENOMEM. r is
 * empty on failure.
 */
int compare_evaluate(const struct stamp *real, const struct stamp *sim, const char *only_setup,
		     struct compare_result *r, char *err);

/*
 * Prints a header line and one line per row — setup, phase, figure, real,
 * sim, diff, allowed, PASS/FAIL, note — then "N checks, M failed".
 */
void compare_print(FILE *fp, const struct compare_result *r);

/* Frees the rows; r is left empty (freeing it again is harmless). */
void compare_result_free(struct compare_result *r);

/*
 * The whole command: loads both stamps (stamp_load), compares them, prints
 * a note line when sim_dir's summary is not marked "simulated": true (or
 * real_dir's is), then the table, to out; with json_path (may be NULL)
 * writes the rows as JSON (docs/results-format.md) through json_path.tmp
 * and a rename. Returns the exit status: 0 when every check holds, 1 when
 * one fails or the JSON file cannot be written (said on stderr), 2 for
 * unusable input (said on stderr, naming the path and what was expected).
 */
int compare_command(const char *real_dir, const char *sim_dir, const char *only_setup,
		    const char *json_path, FILE *out);

#endif
