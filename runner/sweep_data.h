/*
 * sweep_data: a sweep folder's results, loaded — SWEEP_DIR/sweep.json (the
 * varied paths, their values and each point's) and SWEEP_DIR/sweep.csv
 * (one row per point × setup × phase, read with common/csv.h) — grouped
 * into series, and each series' knee (runner/knee.h). Pure once loaded:
 * the sweep's plots (runner/sweep_plot.h) and sweep.json's knee are made
 * from it.
 *
 * sweep.csv's header: point, dir, one column per varied path (sweep.json's
 * vary paths, in order), setup, phase, runs, then pairs FIGURE,FIGURE_sd
 * (at least one; answered_share and duplicate_share among them; a
 * FIGURE's name is letters, digits and _), then optionally objective, then
 * optionally broken. Cells are plain decimals, empty for no value. A
 * row's varied values are taken from sweep.json's point of its index (the
 * CSV's varied columns are checked by name only).
 *
 * Series order: setups and phases as sweep.csv first has them, then the
 * other varied paths' values in sweep.json's order.
 */
#ifndef FAULTLINE_RUNNER_SWEEP_DATA_H
#define FAULTLINE_RUNNER_SWEEP_DATA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define SWEEP_JSON "sweep.json"
#define SWEEP_CSV "sweep.csv"

/* A sweep point (sweep.json's points[]). */
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
 * expected), or sweep.csv has no row; -ENOMEM.
 */
int sweep_data_load(struct sweep_data *d, const char *sweep_dir, char *err);

/* Frees what sweep_data_load loaded; d is left empty. */
void sweep_data_free(struct sweep_data *d);

/* The index of figure name in d->figs, or SIZE_MAX. */
size_t sweep_figure(const struct sweep_data *d, const char *name);

/* A group of rows drawn as one line or one set of points. */
struct sweep_series {
	size_t setup;		/* the setup's place in first-seen order */
	size_t phase;		/* the phase's, or 0 when not split by phase */
	const struct sweep_point *pt;	/* the first row's: the other paths' values */
	size_t nothers;		/* varied paths after the first that split it (0 or naxes − 1) */
	size_t *rows;		/* indices into d->rows, sweep.csv's order */
	size_t nrows;
	size_t cap;
	char *name;		/* "gw / outage fall=3" */
};

struct sweep_series_set {
	struct sweep_series *s;
	size_t n;
	size_t cap;
};

/* How rows are grouped: by setup, and by phase, and by the other varied values. */
struct sweep_grouping {
	bool by_phase;
	bool by_others;
	const char *only_phase;	/* rows of this phase alone (NULL: all) */
};

/*
 * Groups d's rows as g says into set (freed with sweep_series_free), in
 * series order; each series is named SETUP[ / PHASE][ LEAF=V…]. Returns
 * 0 or -ENOMEM (err says so; set empty).
 */
int sweep_group(const struct sweep_data *d, const struct sweep_grouping *g,
		struct sweep_series_set *set, char *err);

/* Frees a set's series; set is left empty. */
void sweep_series_free(struct sweep_series_set *set);

/*
 * Checks a knee's arguments: an exchange rate ≥ 0 (INFINITY allowed), a
 * knee_phase (may be NULL) some row has. Returns 0 or -EINVAL (err says
 * why).
 */
int sweep_knee_check(const struct sweep_data *d, double exchange, const char *knee_phase,
		     char *err);

/*
 * The knee's series: per setup over its rows of knee_phase, or, knee_phase
 * NULL, per setup × phase. Returns as sweep_group.
 */
int sweep_knee_series(const struct sweep_data *d, const char *knee_phase,
		      struct sweep_series_set *set, char *err);

/* A series' shares, frontier and knee (runner/knee.h), by place in the series. */
struct sweep_knee {
	double *x;		/* duplicate_share of each row of the series */
	double *y;		/* answered_share */
	size_t *front;		/* the frontier's places, by duplicate share */
	size_t nfront;
	long knee;		/* the knee's place, or -1 */
};

/*
 * Finds series s's frontier and knee at exchange (checked with
 * sweep_knee_check) into k (freed with sweep_knee_free). Returns 0 or
 * -ENOMEM (k empty).
 */
int sweep_series_knee(const struct sweep_data *d, const struct sweep_series *s, double exchange,
		      struct sweep_knee *k);

/* Frees a sweep_knee's arrays; k is left empty. */
void sweep_knee_free(struct sweep_knee *k);

/*
 * The knee of each knee series (sweep_knee_series) at exchange rate
 * exchange, as a new cJSON array for the caller to cJSON_Delete:
 * [{"setup", "phase", "point" (the index), "dir", "values": {PATH: value},
 * "duplicate_share", "answered_share"}, …] in series order; a series where
 * no row has both shares has no entry. Returns 0; -EINVAL (err says why)
 * as sweep_knee_check; -ENOMEM.
 */
int sweep_knees(const struct sweep_data *d, double exchange, const char *knee_phase, cJSON **out,
		char *err);

#endif
