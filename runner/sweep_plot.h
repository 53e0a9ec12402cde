/*
 * sweep_plot: a sweep folder's plots (chaos plot SWEEP_DIR). Loads its
 * sweep.json and sweep.csv (runner/sweep_data.h), writes gnuplot data
 * files under
 * SWEEP_DIR/plots/data/ and runs gnuplot (runner/gnuplot.h) to make
 * SWEEP_DIR/plots/NAME.png:
 *
 *   FIGURE    one per figure column of sweep.csv with at least one value:
 *             its mean (± the stddev over the repeats as error bars when
 *             sweep.json's repeat > 1) against the first varied value, one
 *             line per series — setup × phase × the values of the other
 *             varied paths; a log x axis when the values are numbers
 *             spanning more than 20×, a category axis when one is not a
 *             number (script sweep-figure.gp)
 *   knee      answered share (%) against duplicate share (%), one point per
 *             sweep point labelled with its varied values, one series per
 *             setup (the rows of phase knee_phase; NULL: each setup × phase),
 *             each series' Pareto frontier drawn as a line and its knee
 *             (runner/knee.h at the exchange rate) circled and labelled
 *             "knee: LEAF=V" (sweep-knee.gp); left out when no row has both
 *             shares
 *   tradeoff  time_to_open_ms against check_rate_per_s, one point per sweep
 *             point labelled, one series per setup × phase — the
 *             detection study's trade-off (sweep-tradeoff.gp); made only
 *             when some row has both values
 *
 * A plot draws at most SWEEP_PLOT_MAX_SERIES series, the first ones in
 * series order (setups and phases as sweep.csv first has them, then the
 * other varied paths' values in sweep.json's order); its title then says
 * how many of how many it shows. The data files hold every series. A
 * plot is made only when a series it draws has a point to draw.
 *
 * Data files (whitespace-separated, strings double-quoted, NaN for no
 * value — an empty CSV cell — shares as fractions, as in sweep.csv):
 *   meta.gp        gnuplot variables: titles, the x axis, the series'
 *                  names, the figures' columns, titles, units and scales
 *   series.dat     one block per series (two blank lines apart), its rows
 *                  by x: x "value" point runs, then FIGURE FIGURE_sd for
 *                  each figure in sweep.csv's order. x is the first varied
 *                  value, or its place in sweep.json's values (from 1)
 *                  when they are not all numbers
 *   knee.dat       one block per knee series, rows in sweep.csv's order:
 *                  duplicate_share answered_share "values" point on_frontier is_knee
 *   knee-frontier.dat  one block per knee series: its frontier by
 *                  duplicate share: duplicate_share answered_share point
 *   knee-mark.dat  one row per knee series with a knee:
 *                  duplicate_share answered_share "knee: LEAF=V, …" series
 *   tradeoff.dat   one block per setup × phase: check_rate_per_s
 *                  time_to_open_ms "values" point
 */
#ifndef FAULTLINE_RUNNER_SWEEP_PLOT_H
#define FAULTLINE_RUNNER_SWEEP_PLOT_H

#include <stdbool.h>

#include "runner/sweep_data.h"

/* The most series one sweep plot draws; the rest stay in the data files. */
#define SWEEP_PLOT_MAX_SERIES 12

/*
 * Writes the data files above under SWEEP_DIR/plots/data/ (each through
 * .tmp and a rename), and, when render, the plots: SWEEP_DIR/plots/NAME.png
 * from SCRIPTS/sweep-figure.gp (one run a figure), sweep-knee.gp and
 * sweep-tradeoff.gp, each PNG written to .tmp and renamed. exchange and
 * knee_phase are sweep_knees' (runner/sweep_data.h). Returns 0, or a negative errno with a
 * message in err (CFG_ERR_LEN bytes): sweep_data_load's and sweep_knee_check's
 * errors; -ENOENT for a missing script or gnuplot; -ETIMEDOUT for a
 * gnuplot run past GNUPLOT_TIMEOUT_MS; -EIO for a script that fails (the
 * message names it and ends with gnuplot's last stderr lines). When
 * write_failed is not NULL, it says whether the error is a file that
 * could not be written (its .tmp is then left).
 */
int sweep_plot_files(const char *sweep_dir, const char *scripts_dir, double exchange,
		     const char *knee_phase, bool render, char *err, bool *write_failed);

/* sweep_plot_files with render: the data files and the PNGs. */
int sweep_plot(const char *sweep_dir, const char *scripts_dir, double exchange,
	       const char *knee_phase, char *err, bool *write_failed);

#endif
