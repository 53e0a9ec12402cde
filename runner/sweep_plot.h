/*
 * sweep_plot: a sweep folder's plots (chaos plot SWEEP_DIR) and its knee.
 * Reads SWEEP_DIR/sweep.json (the varied paths, their values and each
 * point's) and SWEEP_DIR/sweep.csv (one row per point × setup × phase,
 * read with common/csv.h), writes gnuplot data files under
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
 * how many of how many it shows. The data files hold every series.
 *
 * sweep.csv's header: point, dir, one column per varied path (sweep.json's
 * vary paths, in order), setup, phase, runs, then pairs FIGURE,FIGURE_sd
 * (at least one; answered_share and duplicate_share among them), then
 * optionally objective, then optionally broken. The varied values are
 * taken from sweep.json's points (a row's point names its entry there);
 * the CSV's varied columns are checked by name only.
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

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* The most series one sweep plot draws; the rest stay in the data files. */
#define SWEEP_PLOT_MAX_SERIES 12

/* A sweep point (sweep.json's points[]), its varied values in vary's order. */
struct sweep_point {
	long index;		/* "index", from 1 */
	char *dir;		/* "dir" */
	const cJSON *values;	/* "values": {PATH: value} (in sweep_data's json) */
	size_t *pos;		/* per varied path: the value's place in its values, from 0 */
};

/* A varied path and its values (sweep.json's vary[]). */
struct sweep_axis {
	const char *path;
	const char *leaf;	/* after path's last '.' */
	const cJSON *values;	/* the array, in the sweep's order */
	size_t nvalues;
	char **label;		/* each value as text: a number %.15g, a string as is */
	double *num;		/* each value as a number (NAN: not one) */
	bool numeric;		/* every value a number */
};

/* One row of sweep.csv. */
struct sweep_row {
	size_t line;		/* in sweep.csv, for messages */
	const struct sweep_point *pt;
	char *setup;
	char *phase;
	double runs;		/* NAN: empty */
	double *mean;		/* per figure; NAN: empty */
	double *sd;
};

/* A sweep folder's sweep.json and sweep.csv, loaded. */
struct sweep_data {
	char *dir;
	cJSON *json;		/* sweep.json */
	const char *scenario;	/* its "scenario" ("sweep" without one) */
	double time_scale;	/* NAN: none */
	double repeat;		/* 1 without one */
	struct sweep_axis *axes;
	size_t naxes;
	struct sweep_point *points;
	size_t npoints;
	char **figs;		/* figure names, sweep.csv's order */
	size_t nfigs;
	struct sweep_row *rows;
	size_t nrows;
};

/*
 * Loads SWEEP_DIR/sweep.json and SWEEP_DIR/sweep.csv into d (freed with
 * sweep_data_free, also on failure). Returns 0; -ENOENT when either file
 * is missing; -EINVAL when one does not hold what it should (err,
 * CFG_ERR_LEN bytes, names the file, the line for the CSV, and what was
 * expected); -ENOMEM.
 */
int sweep_data_load(struct sweep_data *d, const char *sweep_dir, char *err);

/* Frees what sweep_data_load loaded; d is left empty. */
void sweep_data_free(struct sweep_data *d);

/*
 * The knee of each setup × phase (knee_phase not NULL: of each setup, over
 * its rows of that phase) at exchange rate exchange (runner/knee.h), as a
 * new cJSON array for the caller to cJSON_Delete: [{"setup", "phase",
 * "point" (the index), "dir", "values": {PATH: value}, "duplicate_share",
 * "answered_share"}, …] in series order; a series where no row has both
 * shares has no entry. Pure. Returns 0; -EINVAL (err says why) for an
 * exchange rate that is negative or NAN, or a knee_phase no row has;
 * -ENOMEM.
 */
int sweep_knees(const struct sweep_data *d, double exchange, const char *knee_phase, cJSON **out,
		char *err);

/*
 * Writes the data files above under SWEEP_DIR/plots/data/ (each through
 * .tmp and a rename), and, when render, the plots: SWEEP_DIR/plots/NAME.png
 * from SCRIPTS/sweep-figure.gp (one run a figure), sweep-knee.gp and
 * sweep-tradeoff.gp, each PNG written to .tmp and renamed. exchange and
 * knee_phase are sweep_knees'. Returns 0, or a negative errno with a
 * message in err (CFG_ERR_LEN bytes): sweep_data_load's and sweep_knees'
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
