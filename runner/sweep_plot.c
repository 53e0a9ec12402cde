/*
 * sweep_plot: a sweep's gnuplot data files, from its loaded results
 * (runner/sweep_data.c), and the plots of plots/sweep-*.gp over them; see
 * sweep_plot.h.
 */
#include "runner/sweep_plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/records.h"
#include "runner/gnuplot.h"
#include "runner/outfile.h"
#include "runner/sweep_data.h"

/* How a figure is drawn: its title, unit, and the factor its values are shown at. */
struct fig_info {
	const char *name;
	const char *title;
	const char *unit;
	double scale;
};

static const struct fig_info fig_infos[] = {
	{ "answered_share", "answered share", "%", 100 },
	{ "latency_p50_ms", "p50 latency of ok requests", "ms", 1 },
	{ "latency_p95_ms", "p95 latency of ok requests", "ms", 1 },
	{ "latency_p99_ms", "p99 latency of ok requests", "ms", 1 },
	{ "attempts_per_request", "upstream attempts per request", "", 1 },
	{ "duplicate_share", "duplicate share of upstream attempts", "%", 100 },
	{ "cost_per_answered_usd", "cost per answered request", "USD", 1 },
	{ "time_to_open_ms", "time to the first breaker open", "ms", 1 },
	{ "time_to_primary_ms", "time to the primary's first answer", "ms", 1 },
	{ "fallback_share", "fallback share of ok requests", "%", 100 },
	{ "time_to_close_ms", "time to the breaker's close", "ms", 1 },
	{ "exposed_requests", "requests exposed to the fault", "requests", 1 },
	{ "check_rate_per_s", "health-check requests per second", "1/s", 1 },
};
#define NFIG_INFOS (sizeof(fig_infos) / sizeof(fig_infos[0]))

static int errorf(char *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int errorf(char *err, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CFG_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- data files ---- */

struct sp {
	const struct sweep_data *d;
	const char *scripts;
	char *err;
	bool write_failed;
	char *out_dir;		/* SWEEP/plots */
	char *data_dir;		/* SWEEP/plots/data */
	struct buf meta;
	bool has_knee;		/* some row of a drawn series has both shares */
	bool has_tradeoff;	/* some row has time_to_open_ms and check_rate_per_s */
	bool draw_tradeoff;	/* some row of a drawn series has */
};

/* "array NAME[n] = [...]" of n strings or numbers (gnuplot arrays cannot be empty). */
static void meta_strs(struct sp *p, const char *name, const char *const *v, size_t n)
{
	size_t i;

	buf_printf(&p->meta, "array %s[%zu] = [", name, n ? n : 1);
	for (i = 0; i < n; i++) {
		if (i)
			buf_puts(&p->meta, ", ");
		gnuplot_quote(&p->meta, v[i]);
	}
	buf_puts(&p->meta, n ? "]\n" : "'']\n");
}

static void meta_nums(struct sp *p, const char *name, const double *v, size_t n)
{
	size_t i;

	buf_printf(&p->meta, "array %s[%zu] = [", name, n ? n : 1);
	for (i = 0; i < n; i++) {
		if (i)
			buf_puts(&p->meta, ", ");
		gnuplot_num(&p->meta, v[i]);
	}
	buf_puts(&p->meta, n ? "]\n" : "NaN]\n");
}

/* The names of a set's series, and how many a plot shows. */
static int meta_series(struct sp *p, const char *prefix, const struct sweep_series_set *set)
{
	const char **names = calloc(set->n ? set->n : 1, sizeof(*names));
	char var[64];
	size_t i;

	if (!names)
		return errorf(p->err, -ENOMEM, "out of memory");
	for (i = 0; i < set->n; i++)
		names[i] = set->s[i].name;
	snprintf(var, sizeof(var), "n%s", prefix);
	gnuplot_meta_num(&p->meta, var, (double)set->n);
	snprintf(var, sizeof(var), "n%s_shown", prefix);
	gnuplot_meta_num(&p->meta, var, (double)(set->n < SWEEP_PLOT_MAX_SERIES ? set->n : SWEEP_PLOT_MAX_SERIES));
	snprintf(var, sizeof(var), "%s_name", prefix);
	meta_strs(p, var, names, set->n);
	free(names);
	return 0;
}

static int write_data(struct sp *p, const char *name, const struct buf *b)
{
	struct buf path = { 0 };
	int rc;

	if (buf_printf(&path, "%s/%s", p->data_dir, name))
		return errorf(p->err, -ENOMEM, "out of memory");
	rc = outfile_write(path.data, b->data ? b->data : "", b->len, p->err, CFG_ERR_LEN);
	if (rc)
		p->write_failed = true;
	buf_free(&path);
	return rc;
}

/*
 * A point's varied values: "300" for one varied path (names false), else
 * "timeout_ms=300, fall=3".
 */
static void point_label(const struct sweep_data *d, const struct sweep_point *pt, bool names,
			struct buf *b)
{
	size_t a;

	for (a = 0; a < d->naxes; a++) {
		if (a)
			buf_puts(b, ", ");
		if (names || d->naxes > 1)
			buf_printf(b, "%s=", d->axes[a].leaf);
		buf_puts(b, d->axes[a].label[pt->pos[a]]);
	}
}

/* The x of a row in the figure plots: the first varied value, or its place from 1. */
static double row_x(const struct sweep_data *d, const struct sweep_row *r)
{
	const struct sweep_axis *a = &d->axes[0];

	return a->numeric ? a->num[r->pt->pos[0]] : (double)(r->pt->pos[0] + 1);
}

/* Sorts a series' rows by x, then by point (insertion: a series has tens of rows). */
static void sort_by_x(const struct sweep_data *d, size_t *rows, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++) {
		size_t r = rows[i];
		double x = row_x(d, &d->rows[r]);
		size_t j = i;

		while (j > 0) {
			const struct sweep_row *prev = &d->rows[rows[j - 1]];
			double px = row_x(d, prev);

			if (px < x || (px == x && prev->pt->index <= d->rows[r].pt->index))
				break;
			rows[j] = rows[j - 1];
			j--;
		}
		rows[j] = r;
	}
}

/* The x axis: its path, kind, scale and the values' labels. */
static void meta_axis(struct sp *p)
{
	const struct sweep_axis *a = &p->d->axes[0];
	double lo = INFINITY;
	double hi = -INFINITY;
	size_t k;

	gnuplot_meta_str(&p->meta, "x_path", a->path);
	gnuplot_meta_str(&p->meta, "x_leaf", a->leaf);
	gnuplot_meta_num(&p->meta, "x_numeric", a->numeric);
	for (k = 0; a->numeric && k < a->nvalues; k++) {
		lo = fmin(lo, a->num[k]);
		hi = fmax(hi, a->num[k]);
	}
	gnuplot_meta_num(&p->meta, "x_log", a->numeric && lo > 0 && hi / lo > 20);
	gnuplot_meta_num(&p->meta, "nxval", (double)a->nvalues);
	meta_strs(p, "xval_label", (const char *const *)a->label, a->nvalues);
	if (a->numeric) {
		meta_nums(p, "xval", a->num, a->nvalues);
	} else {
		double *pos = calloc(a->nvalues, sizeof(*pos));

		for (k = 0; pos && k < a->nvalues; k++)
			pos[k] = (double)(k + 1);
		meta_nums(p, "xval", pos ? pos : a->num, a->nvalues);
		free(pos);
	}
}

/* series.dat and the figures' variables; figs_with (nfigs) says which have a value. */
static int write_series(struct sp *p, bool *figs_with)
{
	const struct sweep_data *d = p->d;
	struct sweep_grouping g = { .by_phase = true, .by_others = true };
	struct sweep_series_set set;
	struct buf b = { 0 };
	const char **titles = NULL;
	const char **units = NULL;
	double *scales = NULL;
	double *cols = NULL;
	size_t i;
	size_t j;
	size_t f;
	int rc = sweep_group(d, &g, &set, p->err);

	if (rc)
		return rc;
	buf_printf(&b, "# faultline sweep %s: every figure per series (written by chaos plot)\n",
		   d->scenario);
	for (i = 0; i < set.n; i++) {
		struct sweep_series *s = &set.s[i];

		if (i)
			buf_puts(&b, "\n\n");
		buf_printf(&b, "# series %zu: ", i + 1);
		buf_puts(&b, s->name);
		buf_puts(&b, "\n# x value point runs");
		for (f = 0; f < d->nfigs; f++)
			buf_printf(&b, " %s %s_sd", d->figs[f], d->figs[f]);
		buf_puts(&b, "\n");
		sort_by_x(d, s->rows, s->nrows);
		for (j = 0; j < s->nrows; j++) {
			const struct sweep_row *r = &d->rows[s->rows[j]];

			gnuplot_num(&b, row_x(d, r));
			buf_puts(&b, " ");
			gnuplot_dat_str(&b, d->axes[0].label[r->pt->pos[0]]);
			buf_printf(&b, " %ld ", r->pt->index);
			gnuplot_num(&b, r->runs);
			for (f = 0; f < d->nfigs; f++) {
				buf_puts(&b, " ");
				gnuplot_num(&b, r->mean[f]);
				buf_puts(&b, " ");
				gnuplot_num(&b, r->sd[f]);
				if (i < SWEEP_PLOT_MAX_SERIES && isfinite(r->mean[f]))
					figs_with[f] = true;	/* a drawn point */
			}
			buf_puts(&b, "\n");
		}
	}
	titles = calloc(d->nfigs, sizeof(*titles));
	units = calloc(d->nfigs, sizeof(*units));
	scales = calloc(d->nfigs, sizeof(*scales));
	cols = calloc(d->nfigs, sizeof(*cols));
	if (!b.data || !titles || !units || !scales || !cols) {
		rc = errorf(p->err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = write_data(p, "series.dat", &b);
	if (rc)
		goto out;
	rc = meta_series(p, "series", &set);
	for (f = 0; f < d->nfigs; f++) {
		titles[f] = d->figs[f];
		units[f] = "";
		scales[f] = 1;
		cols[f] = (double)(5 + 2 * f);
		for (i = 0; i < NFIG_INFOS; i++) {
			if (strcmp(fig_infos[i].name, d->figs[f]) == 0) {
				titles[f] = fig_infos[i].title;
				units[f] = fig_infos[i].unit;
				scales[f] = fig_infos[i].scale;
			}
		}
	}
	gnuplot_meta_num(&p->meta, "nfigs", (double)d->nfigs);
	meta_strs(p, "fig_name", (const char *const *)d->figs, d->nfigs);
	meta_strs(p, "fig_title", titles, d->nfigs);
	meta_strs(p, "fig_unit", units, d->nfigs);
	meta_nums(p, "fig_scale", scales, d->nfigs);
	meta_nums(p, "fig_col", cols, d->nfigs);
out:
	free(titles);
	free(units);
	free(scales);
	free(cols);
	buf_free(&b);
	sweep_series_free(&set);
	return rc;
}

/* The three knee files being built. */
struct knee_files {
	struct buf pts;		/* knee.dat */
	struct buf front;	/* knee-frontier.dat */
	struct buf mark;	/* knee-mark.dat */
};

/*
 * Series number n's (from 1) blocks of knee.dat and knee-frontier.dat, and
 * its knee-mark.dat row.
 */
static void knee_blocks(struct sp *p, const struct sweep_series *s, size_t n,
			const struct sweep_knee *k, struct knee_files *f)
{
	const struct sweep_data *d = p->d;
	struct buf label = { 0 };
	size_t j;
	size_t m;

	if (n > 1) {
		buf_puts(&f->pts, "\n\n");
		buf_puts(&f->front, "\n\n");
	}
	buf_printf(&f->pts, "# series %zu: %s\n# duplicate_share answered_share values point "
		   "on_frontier is_knee\n", n, s->name);
	buf_printf(&f->front, "# series %zu: %s\n# duplicate_share answered_share point\n", n,
		   s->name);
	for (j = 0; j < s->nrows; j++) {
		const struct sweep_row *r = &d->rows[s->rows[j]];
		bool on = false;

		for (m = 0; m < k->nfront; m++)
			on = on || k->front[m] == j;
		if (n <= SWEEP_PLOT_MAX_SERIES && isfinite(k->x[j]) && isfinite(k->y[j]))
			p->has_knee = true;
		buf_reset(&label);
		point_label(d, r->pt, false, &label);
		gnuplot_num(&f->pts, k->x[j]);
		buf_puts(&f->pts, " ");
		gnuplot_num(&f->pts, k->y[j]);
		buf_puts(&f->pts, " ");
		gnuplot_dat_str(&f->pts, label.data ? label.data : "");
		buf_printf(&f->pts, " %ld %d %d\n", r->pt->index, on, k->knee == (long)j);
	}
	if (!k->nfront)	/* gnuplot wants a row in a block it is asked for */
		buf_puts(&f->front, "NaN NaN 0\n");
	for (m = 0; m < k->nfront; m++) {
		gnuplot_num(&f->front, k->x[k->front[m]]);
		buf_puts(&f->front, " ");
		gnuplot_num(&f->front, k->y[k->front[m]]);
		buf_printf(&f->front, " %ld\n", d->rows[s->rows[k->front[m]]].pt->index);
	}
	if (k->knee >= 0) {
		buf_reset(&label);
		buf_puts(&label, "knee: ");
		point_label(d, d->rows[s->rows[k->knee]].pt, true, &label);
		gnuplot_num(&f->mark, k->x[k->knee]);
		buf_puts(&f->mark, " ");
		gnuplot_num(&f->mark, k->y[k->knee]);
		buf_puts(&f->mark, " ");
		gnuplot_dat_str(&f->mark, label.data ? label.data : "");
		buf_printf(&f->mark, " %zu\n", n);
	}
	buf_free(&label);
}

/* knee.dat, knee-frontier.dat, knee-mark.dat and the knee's variables. */
static int write_knee(struct sp *p, double exchange, const char *knee_phase)
{
	const struct sweep_data *d = p->d;
	struct sweep_series_set set;
	struct knee_files f = { { 0 }, { 0 }, { 0 } };
	size_t i;
	int rc;

	rc = sweep_knee_series(d, knee_phase, &set, p->err);
	if (rc)
		return rc;
	buf_puts(&f.pts, "# completion against duplicate work, one block per series\n");
	buf_puts(&f.front, "# each series' Pareto frontier by duplicate share, one block per "
		 "series\n");
	buf_printf(&f.mark, "# each series' knee at an exchange rate of %g\n"
		   "# duplicate_share answered_share label series\n", exchange);
	for (i = 0; i < set.n; i++) {
		struct sweep_knee k;

		rc = sweep_series_knee(d, &set.s[i], exchange, &k);
		if (rc) {
			errorf(p->err, rc, "out of memory");
			goto out;
		}
		knee_blocks(p, &set.s[i], i + 1, &k, &f);
		sweep_knee_free(&k);
	}
	if (!f.pts.data || !f.front.data || !f.mark.data) {
		rc = errorf(p->err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = write_data(p, "knee.dat", &f.pts);
	if (!rc)
		rc = write_data(p, "knee-frontier.dat", &f.front);
	if (!rc)
		rc = write_data(p, "knee-mark.dat", &f.mark);
	if (!rc)
		rc = meta_series(p, "knee", &set);
	gnuplot_meta_str(&p->meta, "knee_phase", knee_phase ? knee_phase : "");
	gnuplot_meta_num(&p->meta, "exchange", exchange);
out:
	buf_free(&f.pts);
	buf_free(&f.front);
	buf_free(&f.mark);
	sweep_series_free(&set);
	return rc;
}

/*
 * The health-check rate a row's point and setup pay in steady state: the
 * rate of their first row, the scenario's first phase, before any fault
 * (in a faulted phase the rate follows the fault: checks slow to the
 * unhealthy interval, or hang to their timeout).
 */
static double steady_rate(const struct sweep_data *d, const struct sweep_row *r, size_t rate)
{
	size_t i;

	for (i = 0; i < d->nrows; i++)
		if (d->rows[i].pt == r->pt && strcmp(d->rows[i].setup, r->setup) == 0)
			return d->rows[i].mean[rate];
	return NAN;
}

/* tradeoff.dat: time to open against the steady health-check rate, per setup × phase. */
static int write_tradeoff(struct sp *p)
{
	const struct sweep_data *d = p->d;
	struct sweep_grouping g = { .by_phase = true, .by_others = false };
	size_t open = sweep_figure(d, "time_to_open_ms");
	size_t rate = sweep_figure(d, "check_rate_per_s");
	struct sweep_series_set set;
	struct buf b = { 0 };
	size_t i;
	size_t j;
	int rc;

	for (i = 0; open != SIZE_MAX && rate != SIZE_MAX && i < d->nrows; i++) {
		if (isfinite(d->rows[i].mean[open]) &&
		    isfinite(steady_rate(d, &d->rows[i], rate)))
			p->has_tradeoff = true;
	}
	if (!p->has_tradeoff) {
		gnuplot_meta_num(&p->meta, "ntrade", 0);
		return 0;
	}
	rc = sweep_group(d, &g, &set, p->err);
	if (rc)
		return rc;
	buf_puts(&b, "# time to open against health-check rate, one block per series\n");
	for (i = 0; i < set.n; i++) {
		const struct sweep_series *s = &set.s[i];

		if (i)
			buf_puts(&b, "\n\n");
		buf_printf(&b, "# series %zu: %s\n# steady_check_rate_per_s time_to_open_ms values "
			   "point\n",
			   i + 1, s->name);
		for (j = 0; j < s->nrows; j++) {
			const struct sweep_row *r = &d->rows[s->rows[j]];
			double steady = steady_rate(d, r, rate);
			struct buf label = { 0 };

			if (i < SWEEP_PLOT_MAX_SERIES && isfinite(r->mean[open]) && isfinite(steady))
				p->draw_tradeoff = true;
			point_label(d, r->pt, false, &label);
			gnuplot_num(&b, steady);
			buf_puts(&b, " ");
			gnuplot_num(&b, r->mean[open]);
			buf_puts(&b, " ");
			gnuplot_dat_str(&b, label.data ? label.data : "");
			buf_printf(&b, " %ld\n", r->pt->index);
			buf_free(&label);
		}
	}
	rc = b.data ? write_data(p, "tradeoff.dat", &b) : errorf(p->err, -ENOMEM, "out of memory");
	if (!rc)
		rc = meta_series(p, "trade", &set);
	buf_free(&b);
	sweep_series_free(&set);
	return rc;
}

/* ---- gnuplot ---- */

/* One render's paths and variables, owned (render_all frees them). */
struct sp_render {
	struct buf script;
	struct buf png;
	struct buf log;
	char vars[32];
};

/* Fills r for OUT_DIR/NAME.png from SCRIPTS/SCRIPT.gp. Returns 0 or -ENOMEM. */
static int render_of(const struct sp *p, struct sp_render *r, const char *script_name,
		     const char *name)
{
	if (buf_printf(&r->script, "%s/%s.gp", p->scripts, script_name) ||
	    buf_printf(&r->png, "%s/%s.png", p->out_dir, name) ||
	    buf_printf(&r->log, "%s/%s.log", p->data_dir, name))
		return -ENOMEM;
	return 0;
}

/*
 * Every figure the sweep has, its knee and its trade-off plot, two
 * gnuplots at a time (gnuplot_render_all); the first failure in order is
 * the one said.
 */
static int render_all(struct sp *p, const bool *figs_with)
{
	size_t max = p->d->nfigs + 2;
	struct sp_render *r = calloc(max, sizeof(*r));
	struct gnuplot_task *t = calloc(max, sizeof(*t));
	bool write_failed = false;
	size_t n = 0;
	size_t f;
	int rc = r && t ? 0 : -ENOMEM;

	for (f = 0; !rc && f < p->d->nfigs; f++) {
		if (!figs_with[f])
			continue;
		snprintf(r[n].vars, sizeof(r[n].vars), "fig = %zu; ", f + 1);
		rc = render_of(p, &r[n++], "sweep-figure", p->d->figs[f]);
	}
	if (!rc && p->has_knee)
		rc = render_of(p, &r[n++], "sweep-knee", "knee");
	if (!rc && p->draw_tradeoff)
		rc = render_of(p, &r[n++], "sweep-tradeoff", "tradeoff");
	for (f = 0; !rc && f < n; f++)
		t[f] = (struct gnuplot_task){ .script = r[f].script.data, .png = r[f].png.data,
					      .log = r[f].log.data,
					      .vars = r[f].vars[0] ? r[f].vars : NULL };
	if (rc)
		errorf(p->err, rc, "out of memory");
	else if (n)
		rc = gnuplot_render_all(t, n, p->data_dir, p->scripts, 2, p->err, &write_failed);
	p->write_failed = p->write_failed || write_failed;
	for (f = 0; r && f < max; f++) {
		buf_free(&r[f].script);
		buf_free(&r[f].png);
		buf_free(&r[f].log);
	}
	free(r);
	free(t);
	return rc;
}

static int make_dir(struct sp *p, const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return errorf(p->err, -errno, "%s: cannot make the directory: %s", path,
			      strerror(errno));
	return 0;
}

/* meta.gp's shared variables: the titles and what common.gp expects. */
static void meta_common(struct sp *p)
{
	const struct sweep_data *d = p->d;
	struct buf tail = { 0 };

	buf_printf(&tail, "%s sweep", d->scenario);
	if (isfinite(d->time_scale))
		buf_printf(&tail, ", time scale %g", d->time_scale);
	buf_printf(&tail, ", %g run%s a point", d->repeat, d->repeat == 1 ? "" : "s");
	buf_puts(&p->meta, "# faultline sweep plot variables (written by chaos plot)\n");
	gnuplot_meta_str(&p->meta, "scenario", d->scenario);
	gnuplot_meta_str(&p->meta, "title_tail", tail.data ? tail.data : d->scenario);
	gnuplot_meta_num(&p->meta, "repeat", d->repeat);
	gnuplot_meta_num(&p->meta, "error_bars", d->repeat > 1);
	gnuplot_meta_num(&p->meta, "max_series", SWEEP_PLOT_MAX_SERIES);
	gnuplot_meta_num(&p->meta, "nfaults", 0);	/* common.gp counts the kill windows */
	buf_free(&tail);
}

int sweep_plot_files(const char *sweep_dir, const char *scripts_dir, double exchange,
		     const char *knee_phase, bool render_pngs, char *err, bool *write_failed)
{
	struct sweep_data d;
	struct sp p = { .d = &d, .scripts = scripts_dir, .err = err };
	struct buf out = { 0 };
	struct buf data = { 0 };
	bool *figs_with = NULL;
	int rc;

	if (write_failed)
		*write_failed = false;
	rc = sweep_data_load(&d, sweep_dir, err);
	if (!rc)
		rc = sweep_knee_check(&d, exchange, knee_phase, err);
	if (rc)
		goto out;
	figs_with = calloc(d.nfigs, sizeof(*figs_with));
	if (!figs_with || buf_printf(&out, "%s/" REC_PLOTS_DIR, sweep_dir) ||
	    buf_printf(&data, "%s/" REC_PLOTS_DATA_DIR, sweep_dir)) {
		rc = errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	p.out_dir = out.data;
	p.data_dir = data.data;
	rc = make_dir(&p, p.out_dir);
	if (!rc)
		rc = make_dir(&p, p.data_dir);
	if (rc)
		goto out;
	meta_common(&p);
	meta_axis(&p);
	rc = write_series(&p, figs_with);
	if (!rc)
		rc = write_knee(&p, exchange, knee_phase);
	if (!rc)
		rc = write_tradeoff(&p);
	if (!rc && !p.meta.data)
		rc = errorf(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = write_data(&p, "meta.gp", &p.meta);
	if (!rc && render_pngs)
		rc = render_all(&p, figs_with);
out:
	if (write_failed)
		*write_failed = rc && p.write_failed;
	free(figs_with);
	buf_free(&p.meta);
	buf_free(&out);
	buf_free(&data);
	sweep_data_free(&d);
	return rc;
}

int sweep_plot(const char *sweep_dir, const char *scripts_dir, double exchange,
	       const char *knee_phase, char *err, bool *write_failed)
{
	return sweep_plot_files(sweep_dir, scripts_dir, exchange, knee_phase, true, err,
				write_failed);
}
