/*
 * sweep: `chaos sweep` — one scenario run over a grid of values
 * (runner/vary.h), each point a whole `chaos run` into its own folder
 * under OUT/NAME/STAMP-sweep/, with sweep.json (the plan and each point's
 * status, rewritten after every point) and sweep.csv (one row per point ×
 * setup × phase, the figures' means and standard deviations over the
 * repeats); `--resume` goes on with the points not done. Also `chaos
 * report` and `chaos gate` over a sweep folder (one with a sweep.json):
 * every point's, then the sweep's table. docs/chaos.md and
 * docs/results-format.md describe the command and its files.
 */
#ifndef FAULTLINE_RUNNER_SWEEP_H
#define FAULTLINE_RUNNER_SWEEP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "runner/vary.h"

#define SWEEP_FILE "sweep.json"
#define SWEEP_CSV "sweep.csv"

/* The command line of `chaos sweep`. */
struct sweep_opts {
	const char *scenario_path;	/* a new sweep's scenario; NULL with resume_dir */
	const char *resume_dir;		/* the sweep folder to go on with; NULL: a new sweep */
	const char *const *vary;	/* the --vary arguments, nvary of them */
	size_t nvary;
	const char *out_dir;		/* results root */
	const char *only_setup;		/* NULL: every setup */
	double scale;			/* the time scale (when not ci_scale) */
	bool ci_scale;			/* --time-scale ci */
	unsigned repeat;		/* runs per setup of each point */
	bool sim;			/* --sim: each point simulated (chaos sim) */
	bool quiet;			/* no line per point (nor per run) on stderr */
	const char *bin_dir;		/* where the programs are */
	const char *plots_dir;		/* the gnuplot scripts; NULL: no plots */
};

enum sweep_status { SWEEP_PENDING, SWEEP_DONE, SWEEP_FAILED };

/* A sweep as its sweep.json says, with its base scenario. */
struct sweep {
	char *dir;			/* OUT/NAME/STAMP-sweep */
	cJSON *base;			/* the scenario as given, unscaled, with its "name" */
	char *name;			/* the scenario's */
	char *scenario_file;		/* the path it was given as */
	double scale;
	unsigned repeat;
	bool sim;			/* its points are simulated ("sim": true) */
	char *only_setup;		/* NULL: every setup */
	struct vary_plan plan;
	char **dirs;			/* each point's folder name */
	enum sweep_status *status;	/* each point's */
	double *elapsed_s;		/* each point's run time; NAN: not known */
	char **csv_rows;		/* each done point's sweep.csv rows, once read (or NULL) */
	cJSON *knee;			/* sweep_conclude's, or NULL */
	cJSON *best;			/* sweep_conclude's, or NULL */
};

/*
 * `chaos sweep`: plans the grid (every --vary checked against the
 * scenario, every point's scenario through scenario_load, before anything
 * runs), makes the sweep folder (or takes o->resume_dir's), runs each
 * point not done with chaos_run into DIR/POINT/, rewriting sweep.json and
 * sweep.csv after each, and prints the sweep's table. Returns the exit
 * status: 0 every point done; 1 a point failed or a file could not be
 * written; 2 a bad --vary, point, scenario or sweep.json (said on stderr
 * naming it; nothing made); 130/143 stopped by SIGINT/SIGTERM (the point
 * in progress stopped as chaos run stops, left pending in sweep.json).
 */
int sweep_command(const struct sweep_opts *o);

/* Whether dir is a sweep folder: it has a sweep.json. */
bool sweep_is_dir(const char *dir);

/*
 * Loads DIR/sweep.json and DIR/scenario.json into s, checking that they
 * agree (the points' folders are those of the vary). Returns 0, or
 * -EINVAL / -ENOENT / -ENOMEM with a message in err (CFG_ERR_LEN bytes)
 * naming the file and what is wrong. Free s with sweep_free whatever the
 * result.
 */
int sweep_load(struct sweep *s, const char *dir, char *err);

/* Frees what s holds; s is left empty. */
void sweep_free(struct sweep *s);

/*
 * `chaos report SWEEP`: report_command over every point with a
 * summary.json, then sweep.csv again and the sweep's table on out.
 * Returns the worst of the points' exit statuses (2 for a bad sweep.json).
 */
int sweep_report_command(const char *dir, FILE *out);

/*
 * `chaos gate SWEEP`: gate_command over every done point (with
 * objective_setups, not NULL, the scenario's objective too), each line of
 * its table on out prefixed with the point's folder name; a point not done
 * (failed, pending) is a failed line of its own. Returns 2 when a point's
 * files are unusable or the sweep.json is, else 1 when a check of a point
 * broke or a point was not done, else 0.
 */
int sweep_gate_command(const char *dir, const char *objective_setups, FILE *out);

/*
 * `chaos plot SWEEP`: the knees and best points (sweep_conclude) printed
 * on out and the sweep's plots drawn under DIR/plots/ with the gnuplot
 * scripts in plots_dir. Returns 0, or 2 (said on stderr) for an unusable
 * sweep folder or a plot that could not be made.
 */
int sweep_plot_command(const char *dir, const char *plots_dir, FILE *out);

/*
 * Writes DIR/sweep.csv (through sweep.csv.tmp) from the points' summaries:
 * one row per done point (with its summary.json) × setup × phase. A done
 * point's summary is read once: its rows are kept in s->csv_rows, so a
 * sweep that rewrites the file after each point reads each summary once,
 * not once per point after it. Returns 0 or a negative errno with err
 * (CFG_ERR_LEN bytes) naming the file.
 */
int sweep_csv_write(struct sweep *s, char *err);

/*
 * Point i's combined summary, DIR/POINT/summary.json, as a new tree for
 * the caller to cJSON_Delete; NULL when it has none (or it is not JSON).
 */
cJSON *sweep_point_summary(const struct sweep *s, size_t i);

/* Prints the sweep's table (the points with a summary.json) to fp. */
void sweep_table_print(FILE *fp, const struct sweep *s);

#endif
