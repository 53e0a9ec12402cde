/*
 * sweep_plot: loads a sweep folder's sweep.json and sweep.csv, groups the
 * rows into series, finds each series' knee (runner/knee.c) and writes the
 * gnuplot data files and the plots of plots/sweep-*.gp; see sweep_plot.h.
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
#include "common/csv.h"
#include "common/json.h"
#include "common/records.h"
#include "runner/gnuplot.h"
#include "runner/knee.h"
#include "runner/outfile.h"

#define SWEEP_JSON "sweep.json"
#define SWEEP_CSV "sweep.csv"

/* The columns before the varied paths' and after them, and the optional last ones. */
static const char *const head_cols[] = { "point", "dir" };
static const char *const mid_cols[] = { "setup", "phase", "runs" };
static const char *const tail_cols[] = { "objective", "broken" };
#define NHEAD 2
#define NMID 3
#define NTAIL 2

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

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

/* ---- sweep.json ---- */

/* A varied value as text: a number %.15g, a string as it is, anything else as JSON. */
static char *value_label(const cJSON *v)
{
	char num[64];

	if (cJSON_IsNumber(v)) {
		snprintf(num, sizeof(num), "%.15g", v->valuedouble);
		return dup_str(num);
	}
	if (cJSON_IsString(v))
		return dup_str(v->valuestring);
	return cJSON_PrintUnformatted(v);
}

static int load_axis(struct sweep_axis *a, const cJSON *v, size_t i, const char *path, char *err)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "path");
	const cJSON *vals = cJSON_GetObjectItemCaseSensitive(v, "values");
	const cJSON *x;
	const char *dot;
	size_t k = 0;

	if (!cJSON_IsString(p) || !*p->valuestring || !cJSON_IsArray(vals) ||
	    !cJSON_GetArraySize(vals))
		return errorf(err, -EINVAL, "%s: vary[%zu]: expected {\"path\": a path, \"values\": "
			      "[one or more values]}", path, i);
	a->path = p->valuestring;
	dot = strrchr(a->path, '.');
	a->leaf = dot ? dot + 1 : a->path;
	a->values = vals;
	a->nvalues = (size_t)cJSON_GetArraySize(vals);
	a->label = calloc(a->nvalues, sizeof(*a->label));
	a->num = calloc(a->nvalues, sizeof(*a->num));
	if (!a->label || !a->num)
		return errorf(err, -ENOMEM, "out of memory");
	a->numeric = true;
	cJSON_ArrayForEach(x, vals) {
		a->label[k] = value_label(x);
		if (!a->label[k])
			return errorf(err, -ENOMEM, "out of memory");
		a->num[k] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
		if (!cJSON_IsNumber(x))
			a->numeric = false;
		k++;
	}
	return 0;
}

/* Finds each varied value of a point in its axis' values. */
static int load_point(struct sweep_data *d, struct sweep_point *pt, const cJSON *p, size_t i,
		      const char *path, char *err)
{
	const cJSON *index = cJSON_GetObjectItemCaseSensitive(p, "index");
	const char *dir = json_get_string(p, "dir");
	size_t a;

	pt->values = cJSON_GetObjectItemCaseSensitive(p, "values");
	if (!cJSON_IsNumber(index) || index->valuedouble < 1 ||
	    index->valuedouble != floor(index->valuedouble) || index->valuedouble > 1e9 ||
	    !dir || !cJSON_IsObject(pt->values))
		return errorf(err, -EINVAL, "%s: points[%zu]: expected {\"index\": a whole number "
			      "from 1, \"dir\": a name, \"values\": {PATH: value, …}}", path, i);
	pt->index = (long)index->valuedouble;
	pt->dir = dup_str(dir);
	pt->pos = calloc(d->naxes, sizeof(*pt->pos));
	if (!pt->dir || !pt->pos)
		return errorf(err, -ENOMEM, "out of memory");
	for (a = 0; a < d->naxes; a++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(pt->values, d->axes[a].path);
		const cJSON *x;
		size_t k = 0;

		if (!v)
			return errorf(err, -EINVAL, "%s: points[%zu] (index %ld): no value for %s",
				      path, i, pt->index, d->axes[a].path);
		cJSON_ArrayForEach(x, d->axes[a].values) {
			if (cJSON_Compare(x, v, true))
				break;
			k++;
		}
		if (k == d->axes[a].nvalues)
			return errorf(err, -EINVAL, "%s: points[%zu] (index %ld): its value of %s "
				      "is not among vary's values", path, i, pt->index, d->axes[a].path);
		pt->pos[a] = k;
	}
	return 0;
}

static int load_json(struct sweep_data *d, char *err)
{
	struct buf path = { 0 };
	const cJSON *vary;
	const cJSON *points;
	const cJSON *v;
	size_t i = 0;
	int rc = -ENOMEM;

	if (buf_printf(&path, "%s/" SWEEP_JSON, d->dir))
		return errorf(err, -ENOMEM, "out of memory");
	d->json = json_load_file(path.data, err, CFG_ERR_LEN);
	if (!d->json) {
		struct stat st;

		rc = stat(path.data, &st) ? -ENOENT : -EINVAL;
		if (rc == -ENOENT)
			errorf(err, rc, "%s: no such file (is %s a sweep folder?)", path.data, d->dir);
		goto out;
	}
	vary = cJSON_GetObjectItemCaseSensitive(d->json, "vary");
	points = cJSON_GetObjectItemCaseSensitive(d->json, "points");
	if (!cJSON_IsObject(d->json) || !cJSON_IsArray(vary) || !cJSON_GetArraySize(vary) ||
	    !cJSON_IsArray(points)) {
		rc = errorf(err, -EINVAL, "%s: expected an object with \"vary\" (one or more "
			    "varied paths) and \"points\" (an array)", path.data);
		goto out;
	}
	d->scenario = json_get_string(d->json, "scenario");
	if (!d->scenario)
		d->scenario = "sweep";
	v = cJSON_GetObjectItemCaseSensitive(d->json, "time_scale");
	d->time_scale = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	v = cJSON_GetObjectItemCaseSensitive(d->json, "repeat");
	d->repeat = cJSON_IsNumber(v) && v->valuedouble >= 1 ? v->valuedouble : 1;
	d->naxes = (size_t)cJSON_GetArraySize(vary);
	d->axes = calloc(d->naxes, sizeof(*d->axes));
	d->npoints = (size_t)cJSON_GetArraySize(points);
	d->points = calloc(d->npoints ? d->npoints : 1, sizeof(*d->points));
	if (!d->axes || !d->points) {
		rc = errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(v, vary) {
		rc = load_axis(&d->axes[i], v, i, path.data, err);
		if (rc)
			goto out;
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(v, points) {
		rc = load_point(d, &d->points[i], v, i, path.data, err);
		if (rc)
			goto out;
		i++;
	}
	rc = 0;
out:
	buf_free(&path);
	return rc;
}

/* ---- sweep.csv ---- */

static const struct sweep_point *find_point(const struct sweep_data *d, long index)
{
	size_t i;

	for (i = 0; i < d->npoints; i++) {
		if (d->points[i].index == index)
			return &d->points[i];
	}
	return NULL;
}

static bool is_name(const char *s)
{
	return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
		     strlen(s);
}

/*
 * Checks the header's grammar (sweep_plot.h) and notes the figures. The
 * figure pairs start at column NHEAD + naxes + NMID.
 */
static int check_header(struct sweep_data *d, struct csv *c, char *err)
{
	size_t first = NHEAD + d->naxes + NMID;
	size_t end = c->nf;
	size_t i;
	bool has_ans = false;
	bool has_dup = false;

	for (i = 0; i < c->nf; i++) {
		size_t j;

		for (j = 0; j < i; j++) {
			if (strcmp(csv_field(c, i), csv_field(c, j)) == 0)
				return csv_error(err, c->path, c->rec_line,
						 "column \"%.64s\" appears twice in the header",
						 csv_field(c, i));
		}
	}
	for (i = 0; i < first; i++) {
		const char *want = i < NHEAD ? head_cols[i] :
				   i < NHEAD + d->naxes ? d->axes[i - NHEAD].path :
				   mid_cols[i - NHEAD - d->naxes];

		if (i >= c->nf || strcmp(csv_field(c, i), want) != 0)
			return csv_error(err, c->path, c->rec_line,
					 "column %zu is \"%.64s\", expected \"%.200s\" (the header is "
					 "point,dir, sweep.json's varied paths in order, setup,phase,"
					 "runs, then FIGURE,FIGURE_sd pairs)", i + 1,
					 i < c->nf ? csv_field(c, i) : "(none)", want);
	}
	/* The optional last columns, in order. */
	for (i = NTAIL; i-- > 0;) {
		if (end > first && strcmp(csv_field(c, end - 1), tail_cols[i]) == 0)
			end--;
	}
	if (end == first)
		return csv_error(err, c->path, c->rec_line, "no figure columns: expected FIGURE,"
				 "FIGURE_sd pairs (answered_share,answered_share_sd, …) after runs");
	for (i = first; i < end; i += 2) {
		const char *name = csv_field(c, i);
		size_t n = strlen(name);

		if (i + 1 == end || strncmp(csv_field(c, i + 1), name, n) != 0 ||
		    strcmp(csv_field(c, i + 1) + n, "_sd") != 0)
			return csv_error(err, c->path, c->rec_line, "column %zu is \"%.64s\": "
					 "expected \"%.64s_sd\" after \"%.64s\" (FIGURE,FIGURE_sd "
					 "pairs, then objective, broken)", i + 2,
					 i + 1 < end ? csv_field(c, i + 1) : "(none)", name, name);
		if (!is_name(name) || strcmp(name, "knee") == 0 || strcmp(name, "tradeoff") == 0)
			return csv_error(err, c->path, c->rec_line, "column %zu: \"%.64s\" is not a "
					 "figure's name (letters, digits, _; not knee or tradeoff)",
					 i + 1, name);
		has_ans = has_ans || strcmp(name, "answered_share") == 0;
		has_dup = has_dup || strcmp(name, "duplicate_share") == 0;
	}
	if (!has_ans || !has_dup)
		return csv_error(err, c->path, c->rec_line, "no %s column: the knee needs "
				 "answered_share and duplicate_share",
				 has_ans ? "duplicate_share" : "answered_share");
	d->nfigs = (end - first) / 2;
	d->figs = calloc(d->nfigs, sizeof(*d->figs));
	if (!d->figs)
		return errorf(err, -ENOMEM, "out of memory");
	for (i = 0; i < d->nfigs; i++) {
		d->figs[i] = dup_str(csv_field(c, first + 2 * i));
		if (!d->figs[i])
			return errorf(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* A number cell ("" is NAN); an error names the line and the column. */
static int cell_num(struct csv *c, size_t col, const char *hdr, double *out, char *err)
{
	if (csv_num(csv_field(c, col), out))
		return csv_error(err, c->path, c->rec_line, "column \"%.64s\": \"%.64s\" is not a "
				 "number", hdr, csv_field(c, col));
	return 0;
}

static int load_row(struct sweep_data *d, struct csv *c, struct sweep_row *r, char *err)
{
	size_t first = NHEAD + d->naxes + NMID;
	double point;
	size_t f;
	int rc;

	r->line = c->rec_line;
	if (csv_whole(csv_field(c, 0), 1, 1e9, &point) || isnan(point))
		return csv_error(err, c->path, c->rec_line, "column \"point\": \"%.64s\" is not a "
				 "point's index (a whole number from 1)", csv_field(c, 0));
	r->pt = find_point(d, (long)point);
	if (!r->pt)
		return csv_error(err, c->path, c->rec_line, "point %ld is not among %s/" SWEEP_JSON
				 "'s points", (long)point, d->dir);
	if (!*csv_field(c, NHEAD + d->naxes) || !*csv_field(c, NHEAD + d->naxes + 1))
		return csv_error(err, c->path, c->rec_line, "empty setup or phase");
	r->setup = dup_str(csv_field(c, NHEAD + d->naxes));
	r->phase = dup_str(csv_field(c, NHEAD + d->naxes + 1));
	r->mean = calloc(d->nfigs, sizeof(*r->mean));
	r->sd = calloc(d->nfigs, sizeof(*r->sd));
	if (!r->setup || !r->phase || !r->mean || !r->sd)
		return errorf(err, -ENOMEM, "out of memory");
	rc = cell_num(c, NHEAD + d->naxes + 2, "runs", &r->runs, err);
	for (f = 0; !rc && f < d->nfigs; f++) {
		rc = cell_num(c, first + 2 * f, d->figs[f], &r->mean[f], err);
		if (!rc)
			rc = cell_num(c, first + 2 * f + 1, d->figs[f], &r->sd[f], err);
	}
	return rc;
}

static int load_csv(struct sweep_data *d, char *err)
{
	struct buf path = { 0 };
	struct buf text = { 0 };
	struct csv c;
	size_t cap = 0;
	size_t width;
	int rc;

	if (buf_printf(&path, "%s/" SWEEP_CSV, d->dir))
		return errorf(err, -ENOMEM, "out of memory");
	rc = csv_read_file(path.data, &text);
	if (rc) {
		errorf(err, rc, "%s: %s%s", path.data, strerror(-rc),
		       rc == -ENOENT ? " (is it a sweep folder with a point done?)" : "");
		goto out_free_path;
	}
	csv_init(&c, path.data, text.data, text.len);
	rc = csv_next(&c, err);
	if (rc == 0)
		rc = csv_error(err, path.data, 0, "empty file: expected a header line");
	if (rc < 0)
		goto out_close;
	rc = check_header(d, &c, err);
	width = c.nf;
	while (!rc) {
		rc = csv_row(&c, width, err);
		if (rc <= 0)
			break;
		rc = buf_grow_array((void **)&d->rows, &cap, d->nrows + 1, sizeof(*d->rows));
		if (rc) {
			errorf(err, rc, "out of memory");
			break;
		}
		memset(&d->rows[d->nrows], 0, sizeof(*d->rows));
		rc = load_row(d, &c, &d->rows[d->nrows++], err);
	}
	if (!rc && !d->nrows)
		rc = csv_error(err, path.data, 0, "no rows: no point of the sweep has finished");
out_close:
	csv_close(&c);
	buf_free(&text);
out_free_path:
	buf_free(&path);
	return rc;
}

int sweep_data_load(struct sweep_data *d, const char *sweep_dir, char *err)
{
	int rc;

	memset(d, 0, sizeof(*d));
	err[0] = '\0';
	d->dir = dup_str(sweep_dir);
	if (!d->dir)
		return errorf(err, -ENOMEM, "out of memory");
	rc = load_json(d, err);
	if (!rc)
		rc = load_csv(d, err);
	return rc;
}

void sweep_data_free(struct sweep_data *d)
{
	size_t i;
	size_t k;

	for (i = 0; d->axes && i < d->naxes; i++) {
		for (k = 0; d->axes[i].label && k < d->axes[i].nvalues; k++)
			free(d->axes[i].label[k]);
		free(d->axes[i].label);
		free(d->axes[i].num);
	}
	for (i = 0; d->points && i < d->npoints; i++) {
		free(d->points[i].dir);
		free(d->points[i].pos);
	}
	for (i = 0; d->figs && i < d->nfigs; i++)
		free(d->figs[i]);
	for (i = 0; i < d->nrows; i++) {
		free(d->rows[i].setup);
		free(d->rows[i].phase);
		free(d->rows[i].mean);
		free(d->rows[i].sd);
	}
	free(d->axes);
	free(d->points);
	free(d->figs);
	free(d->rows);
	cJSON_Delete(d->json);
	free(d->dir);
	memset(d, 0, sizeof(*d));
}

/* ---- series ---- */

/* A group of rows plotted as one line or one set of points. */
struct series {
	size_t setup;		/* the setup's place in first-seen order */
	size_t phase;		/* the phase's, or 0 when not split by phase */
	const struct sweep_point *pt;	/* the first row's: the other paths' values */
	size_t nothers;		/* varied paths after the first that split it (0 or naxes − 1) */
	size_t *rows;
	size_t nrows;
	size_t cap;
	char *name;
};

struct series_set {
	struct series *s;
	size_t n;
	size_t cap;
};

/* How rows are grouped: by setup, and by phase, and by the other varied values. */
struct grouping {
	bool by_phase;
	bool by_others;
	const char *only_phase;	/* rows of this phase alone (NULL: all) */
};

/* Row i's place among the distinct setups (phase: false) or phases, first seen first. */
static size_t first_seen(const struct sweep_data *d, size_t i, bool phase)
{
	const char *want = phase ? d->rows[i].phase : d->rows[i].setup;
	size_t seen = 0;
	size_t j;
	size_t k;

	for (j = 0; j <= i; j++) {
		const char *name = phase ? d->rows[j].phase : d->rows[j].setup;

		for (k = 0; k < j; k++) {
			if (strcmp(phase ? d->rows[k].phase : d->rows[k].setup, name) == 0)
				break;
		}
		if (k < j)
			continue;	/* not the first of its name */
		if (strcmp(name, want) == 0)
			return seen;
		seen++;
	}
	return seen;
}

static int series_cmp(const void *pa, const void *pb)
{
	const struct series *a = pa;
	const struct series *b = pb;
	size_t i;

	if (a->setup != b->setup)
		return a->setup < b->setup ? -1 : 1;
	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	for (i = 1; i <= a->nothers; i++) {
		if (a->pt->pos[i] != b->pt->pos[i])
			return a->pt->pos[i] < b->pt->pos[i] ? -1 : 1;
	}
	return 0;
}

static void series_free(struct series_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++) {
		free(set->s[i].rows);
		free(set->s[i].name);
	}
	free(set->s);
	memset(set, 0, sizeof(*set));
}

static int series_name(const struct sweep_data *d, const struct grouping *g, struct series *s)
{
	const struct sweep_row *r = &d->rows[s->rows[0]];
	struct buf b = { 0 };
	size_t a;

	buf_puts(&b, r->setup);
	if (g->by_phase)
		buf_printf(&b, " / %s", r->phase);
	for (a = 1; a <= s->nothers; a++)
		buf_printf(&b, " %s=%s", d->axes[a].leaf, d->axes[a].label[s->pt->pos[a]]);
	s->name = buf_steal(&b);
	return s->name ? 0 : -ENOMEM;
}

/* Groups d's rows as g says into set, in series order (sweep_plot.h). */
static int group_rows(const struct sweep_data *d, const struct grouping *g,
		      struct series_set *set, char *err)
{
	size_t i;
	size_t j;
	int rc = 0;

	memset(set, 0, sizeof(*set));
	for (i = 0; i < d->nrows; i++) {
		const struct sweep_row *r = &d->rows[i];
		struct series key = { .setup = first_seen(d, i, false),
				      .phase = g->by_phase ? first_seen(d, i, true) : 0,
				      .pt = r->pt,
				      .nothers = g->by_others ? d->naxes - 1 : 0 };
		struct series *s;

		if (g->only_phase && strcmp(r->phase, g->only_phase) != 0)
			continue;
		for (j = 0; j < set->n; j++) {
			if (series_cmp(&set->s[j], &key) == 0)
				break;
		}
		if (j == set->n) {
			rc = buf_grow_array((void **)&set->s, &set->cap, set->n + 1, sizeof(*set->s));
			if (rc)
				goto out_nomem;
			set->s[set->n++] = key;
		}
		s = &set->s[j];
		rc = buf_grow_array((void **)&s->rows, &s->cap, s->nrows + 1, sizeof(*s->rows));
		if (rc)
			goto out_nomem;
		s->rows[s->nrows++] = i;
	}
	if (set->n)
		qsort(set->s, set->n, sizeof(*set->s), series_cmp);
	for (j = 0; j < set->n; j++) {
		rc = series_name(d, g, &set->s[j]);
		if (rc)
			goto out_nomem;
	}
	return 0;

out_nomem:
	series_free(set);
	return errorf(err, -ENOMEM, "out of memory");
}

static size_t fig_index(const struct sweep_data *d, const char *name)
{
	size_t f;

	for (f = 0; f < d->nfigs; f++) {
		if (strcmp(d->figs[f], name) == 0)
			return f;
	}
	return SIZE_MAX;
}

/* ---- knees ---- */

/*
 * The frontier and knee of one series: fx, fy hold its rows' shares; front
 * (s->nrows) gets the frontier's places among them, *knee the knee's (-1:
 * none).
 */
static void series_knee(const struct sweep_data *d, const struct series *s, double exchange,
			double *fx, double *fy, size_t *front, size_t *nfront, long *knee)
{
	size_t dup = fig_index(d, "duplicate_share");
	size_t ans = fig_index(d, "answered_share");
	size_t i;

	for (i = 0; i < s->nrows; i++) {
		fx[i] = d->rows[s->rows[i]].mean[dup];
		fy[i] = d->rows[s->rows[i]].mean[ans];
	}
	knee_find(fx, fy, s->nrows, exchange, front, nfront, knee);
}

static int check_knee_args(const struct sweep_data *d, double exchange, const char *knee_phase,
			   char *err)
{
	size_t i;

	if (isnan(exchange) || exchange < 0)
		return errorf(err, -EINVAL, "the knee's exchange rate must be a number ≥ 0, not %g",
			      exchange);
	if (!knee_phase)
		return 0;
	for (i = 0; i < d->nrows; i++) {
		if (strcmp(d->rows[i].phase, knee_phase) == 0)
			return 0;
	}
	return errorf(err, -EINVAL, "%s/" SWEEP_CSV ": no row of phase \"%.64s\" for the knee",
		      d->dir, knee_phase);
}

/* The knee's series: per setup of knee_phase, or per setup × phase. */
static int knee_series(const struct sweep_data *d, const char *knee_phase, struct series_set *set,
		       char *err)
{
	struct grouping g = { .by_phase = !knee_phase, .by_others = false,
			      .only_phase = knee_phase };

	return group_rows(d, &g, set, err);
}

/* Scratch arrays for series_knee, sized for the longest series. */
struct knee_scratch {
	double *x;
	double *y;
	size_t *front;
};

static int scratch_alloc(struct knee_scratch *k, size_t n, char *err)
{
	k->x = calloc(n ? n : 1, sizeof(*k->x));
	k->y = calloc(n ? n : 1, sizeof(*k->y));
	k->front = calloc(n ? n : 1, sizeof(*k->front));
	if (!k->x || !k->y || !k->front)
		return errorf(err, -ENOMEM, "out of memory");
	return 0;
}

static void scratch_free(struct knee_scratch *k)
{
	free(k->x);
	free(k->y);
	free(k->front);
}

int sweep_knees(const struct sweep_data *d, double exchange, const char *knee_phase, cJSON **out,
		char *err)
{
	struct series_set set = { 0 };
	struct knee_scratch k = { 0 };
	cJSON *arr = NULL;
	size_t i;
	int rc;

	*out = NULL;
	err[0] = '\0';
	rc = check_knee_args(d, exchange, knee_phase, err);
	if (!rc)
		rc = knee_series(d, knee_phase, &set, err);
	if (!rc)
		rc = scratch_alloc(&k, d->nrows, err);
	if (rc)
		goto out;
	arr = cJSON_CreateArray();
	for (i = 0; arr && i < set.n; i++) {
		const struct series *s = &set.s[i];
		const struct sweep_row *r;
		size_t nfront;
		long knee;
		cJSON *o;
		cJSON *vals;
		size_t a;

		series_knee(d, s, exchange, k.x, k.y, k.front, &nfront, &knee);
		if (knee < 0)
			continue;
		r = &d->rows[s->rows[knee]];
		o = cJSON_CreateObject();
		vals = cJSON_CreateObject();
		for (a = 0; vals && a < d->naxes; a++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->pt->values,
									 d->axes[a].path);

			if (!json_put(vals, d->axes[a].path, cJSON_Duplicate(v, true))) {
				cJSON_Delete(vals);
				vals = NULL;
			}
		}
		if (!json_put(o, "setup", cJSON_CreateString(r->setup)) ||
		    !json_put(o, "phase", cJSON_CreateString(r->phase)) ||
		    !json_put(o, "point", cJSON_CreateNumber((double)r->pt->index)) ||
		    !json_put(o, "dir", cJSON_CreateString(r->pt->dir)) ||
		    !json_put(o, "values", vals) ||
		    !json_put(o, "duplicate_share", cJSON_CreateNumber(k.x[knee])) ||
		    !json_put(o, "answered_share", cJSON_CreateNumber(k.y[knee])) ||
		    !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			arr = NULL;
		}
	}
	if (!arr) {
		rc = errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	*out = arr;
out:
	scratch_free(&k);
	series_free(&set);
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
	bool has_knee;		/* some row has both shares */
	bool has_tradeoff;	/* some row has time_to_open_ms and check_rate_per_s */
};

static void put_num(struct buf *b, double v)
{
	if (isfinite(v))
		buf_printf(b, "%.10g", v);
	else
		buf_puts(b, "NaN");
}

/* A double-quoted data-file string; gnuplot has no escapes there. */
static void dat_str(struct buf *b, const char *s)
{
	buf_puts(b, "\"");
	for (; *s; s++) {
		if (*s == '"')
			buf_puts(b, "'");
		else if ((unsigned char)*s < 0x20)
			buf_puts(b, " ");
		else
			buf_append(b, s, 1);
	}
	buf_puts(b, "\"");
}

static void meta_num(struct sp *p, const char *name, double v)
{
	buf_printf(&p->meta, "%s = ", name);
	put_num(&p->meta, v);
	buf_puts(&p->meta, "\n");
}

static void meta_str(struct sp *p, const char *name, const char *v)
{
	buf_printf(&p->meta, "%s = ", name);
	gnuplot_quote(&p->meta, v);
	buf_puts(&p->meta, "\n");
}

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
		put_num(&p->meta, v[i]);
	}
	buf_puts(&p->meta, n ? "]\n" : "NaN]\n");
}

/* The names of a set's series, and how many a plot shows. */
static int meta_series(struct sp *p, const char *prefix, const struct series_set *set)
{
	const char **names = calloc(set->n ? set->n : 1, sizeof(*names));
	char var[64];
	size_t i;

	if (!names)
		return errorf(p->err, -ENOMEM, "out of memory");
	for (i = 0; i < set->n; i++)
		names[i] = set->s[i].name;
	snprintf(var, sizeof(var), "n%s", prefix);
	meta_num(p, var, (double)set->n);
	snprintf(var, sizeof(var), "n%s_shown", prefix);
	meta_num(p, var, (double)(set->n < SWEEP_PLOT_MAX_SERIES ? set->n : SWEEP_PLOT_MAX_SERIES));
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

	meta_str(p, "x_path", a->path);
	meta_str(p, "x_leaf", a->leaf);
	meta_num(p, "x_numeric", a->numeric);
	for (k = 0; a->numeric && k < a->nvalues; k++) {
		lo = fmin(lo, a->num[k]);
		hi = fmax(hi, a->num[k]);
	}
	meta_num(p, "x_log", a->numeric && lo > 0 && hi / lo > 20);
	meta_num(p, "nxval", (double)a->nvalues);
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
	struct grouping g = { .by_phase = true, .by_others = true };
	struct series_set set;
	struct buf b = { 0 };
	const char **titles = NULL;
	const char **units = NULL;
	double *scales = NULL;
	double *cols = NULL;
	size_t i;
	size_t j;
	size_t f;
	int rc = group_rows(d, &g, &set, p->err);

	if (rc)
		return rc;
	buf_printf(&b, "# faultline sweep %s: every figure per series (written by chaos plot)\n",
		   d->scenario);
	for (i = 0; i < set.n; i++) {
		struct series *s = &set.s[i];

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

			put_num(&b, row_x(d, r));
			buf_puts(&b, " ");
			dat_str(&b, d->axes[0].label[r->pt->pos[0]]);
			buf_printf(&b, " %ld ", r->pt->index);
			put_num(&b, r->runs);
			for (f = 0; f < d->nfigs; f++) {
				buf_puts(&b, " ");
				put_num(&b, r->mean[f]);
				buf_puts(&b, " ");
				put_num(&b, r->sd[f]);
				if (isfinite(r->mean[f]))
					figs_with[f] = true;
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
	meta_num(p, "nfigs", (double)d->nfigs);
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
	series_free(&set);
	return rc;
}

/* knee.dat, knee-frontier.dat, knee-mark.dat and the knee's variables. */
static int write_knee(struct sp *p, double exchange, const char *knee_phase)
{
	const struct sweep_data *d = p->d;
	struct series_set set;
	struct knee_scratch k = { 0 };
	struct buf pts = { 0 };
	struct buf front = { 0 };
	struct buf mark = { 0 };
	size_t i;
	size_t j;
	int rc;

	rc = knee_series(d, knee_phase, &set, p->err);
	if (rc)
		return rc;
	rc = scratch_alloc(&k, d->nrows, p->err);
	if (rc)
		goto out;
	buf_puts(&pts, "# completion against duplicate work, one block per series\n");
	buf_puts(&front, "# each series' Pareto frontier by duplicate share, one block per series\n");
	buf_printf(&mark, "# each series' knee at an exchange rate of %g\n"
		   "# duplicate_share answered_share label series\n", exchange);
	for (i = 0; i < set.n; i++) {
		const struct series *s = &set.s[i];
		size_t nfront;
		long knee;

		series_knee(d, s, exchange, k.x, k.y, k.front, &nfront, &knee);
		if (i) {
			buf_puts(&pts, "\n\n");
			buf_puts(&front, "\n\n");
		}
		buf_printf(&pts, "# series %zu: %s\n# duplicate_share answered_share values point "
			   "on_frontier is_knee\n", i + 1, s->name);
		buf_printf(&front, "# series %zu: %s\n# duplicate_share answered_share point\n",
			   i + 1, s->name);
		for (j = 0; j < s->nrows; j++) {
			const struct sweep_row *r = &d->rows[s->rows[j]];
			struct buf label = { 0 };
			bool on = false;
			size_t m;

			for (m = 0; m < nfront; m++)
				on = on || k.front[m] == j;
			if (isfinite(k.x[j]) && isfinite(k.y[j]))
				p->has_knee = true;
			point_label(d, r->pt, false, &label);
			put_num(&pts, k.x[j]);
			buf_puts(&pts, " ");
			put_num(&pts, k.y[j]);
			buf_puts(&pts, " ");
			dat_str(&pts, label.data ? label.data : "");
			buf_printf(&pts, " %ld %d %d\n", r->pt->index, on, knee == (long)j);
			buf_free(&label);
		}
		if (!nfront)	/* gnuplot wants a row in a block it is asked for */
			buf_puts(&front, "NaN NaN 0\n");
		for (j = 0; j < nfront; j++) {
			put_num(&front, k.x[k.front[j]]);
			buf_puts(&front, " ");
			put_num(&front, k.y[k.front[j]]);
			buf_printf(&front, " %ld\n", d->rows[s->rows[k.front[j]]].pt->index);
		}
		if (knee >= 0) {
			struct buf label = { 0 };

			buf_puts(&label, "knee: ");
			point_label(d, d->rows[s->rows[knee]].pt, true, &label);
			put_num(&mark, k.x[knee]);
			buf_puts(&mark, " ");
			put_num(&mark, k.y[knee]);
			buf_puts(&mark, " ");
			dat_str(&mark, label.data ? label.data : "");
			buf_printf(&mark, " %zu\n", i + 1);
			buf_free(&label);
		}
	}
	if (!pts.data || !front.data || !mark.data) {
		rc = errorf(p->err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = write_data(p, "knee.dat", &pts);
	if (!rc)
		rc = write_data(p, "knee-frontier.dat", &front);
	if (!rc)
		rc = write_data(p, "knee-mark.dat", &mark);
	if (!rc)
		rc = meta_series(p, "knee", &set);
	meta_str(p, "knee_phase", knee_phase ? knee_phase : "");
	meta_num(p, "exchange", exchange);
out:
	buf_free(&pts);
	buf_free(&front);
	buf_free(&mark);
	scratch_free(&k);
	series_free(&set);
	return rc;
}

/* tradeoff.dat: time to open against health-check rate, per setup × phase. */
static int write_tradeoff(struct sp *p)
{
	const struct sweep_data *d = p->d;
	struct grouping g = { .by_phase = true, .by_others = false };
	size_t open = fig_index(d, "time_to_open_ms");
	size_t rate = fig_index(d, "check_rate_per_s");
	struct series_set set;
	struct buf b = { 0 };
	size_t i;
	size_t j;
	int rc;

	for (i = 0; open != SIZE_MAX && rate != SIZE_MAX && i < d->nrows; i++) {
		if (isfinite(d->rows[i].mean[open]) && isfinite(d->rows[i].mean[rate]))
			p->has_tradeoff = true;
	}
	if (!p->has_tradeoff) {
		meta_num(p, "ntrade", 0);
		return 0;
	}
	rc = group_rows(d, &g, &set, p->err);
	if (rc)
		return rc;
	buf_puts(&b, "# time to open against health-check rate, one block per series\n");
	for (i = 0; i < set.n; i++) {
		const struct series *s = &set.s[i];

		if (i)
			buf_puts(&b, "\n\n");
		buf_printf(&b, "# series %zu: %s\n# check_rate_per_s time_to_open_ms values point\n",
			   i + 1, s->name);
		for (j = 0; j < s->nrows; j++) {
			const struct sweep_row *r = &d->rows[s->rows[j]];
			struct buf label = { 0 };

			point_label(d, r->pt, false, &label);
			put_num(&b, r->mean[rate]);
			buf_puts(&b, " ");
			put_num(&b, r->mean[open]);
			buf_puts(&b, " ");
			dat_str(&b, label.data ? label.data : "");
			buf_printf(&b, " %ld\n", r->pt->index);
			buf_free(&label);
		}
	}
	rc = b.data ? write_data(p, "tradeoff.dat", &b) : errorf(p->err, -ENOMEM, "out of memory");
	if (!rc)
		rc = meta_series(p, "trade", &set);
	buf_free(&b);
	series_free(&set);
	return rc;
}

/* ---- gnuplot ---- */

/* Makes OUT_DIR/NAME.png from SCRIPTS/SCRIPT.gp with vars (may be NULL). */
static int render(struct sp *p, const char *script_name, const char *name, const char *vars)
{
	struct buf script = { 0 };
	struct buf png = { 0 };
	struct buf log = { 0 };
	bool write_failed = false;
	int rc = -ENOMEM;

	if (!buf_printf(&script, "%s/%s.gp", p->scripts, script_name) &&
	    !buf_printf(&png, "%s/%s.png", p->out_dir, name) &&
	    !buf_printf(&log, "%s/%s.log", p->data_dir, name))
		rc = gnuplot_render_vars(script.data, png.data, log.data, p->data_dir, p->scripts,
					 vars, p->err, &write_failed);
	else
		errorf(p->err, rc, "out of memory");
	p->write_failed = p->write_failed || write_failed;
	buf_free(&script);
	buf_free(&png);
	buf_free(&log);
	return rc;
}

static int render_all(struct sp *p, const bool *figs_with)
{
	char vars[64];
	size_t f;
	int rc = 0;

	for (f = 0; !rc && f < p->d->nfigs; f++) {
		if (!figs_with[f])
			continue;
		snprintf(vars, sizeof(vars), "fig = %zu; ", f + 1);
		rc = render(p, "sweep-figure", p->d->figs[f], vars);
	}
	if (!rc && p->has_knee)
		rc = render(p, "sweep-knee", "knee", NULL);
	if (!rc && p->has_tradeoff)
		rc = render(p, "sweep-tradeoff", "tradeoff", NULL);
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
	meta_str(p, "scenario", d->scenario);
	meta_str(p, "title_tail", tail.data ? tail.data : d->scenario);
	meta_num(p, "repeat", d->repeat);
	meta_num(p, "error_bars", d->repeat > 1);
	meta_num(p, "max_series", SWEEP_PLOT_MAX_SERIES);
	meta_num(p, "nfaults", 0);	/* common.gp counts the kill windows */
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
		rc = check_knee_args(&d, exchange, knee_phase, err);
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
