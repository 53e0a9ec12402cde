/*
 * sweep_data: loads a sweep folder's sweep.json and sweep.csv, groups the
 * rows into series and finds each series' knee; see sweep_data.h.
 */
#include "runner/sweep_data.h"

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
#include "runner/knee.h"
#include "runner/vary.h"

/* The columns before the varied paths' and after them, and the optional last ones. */
static const char *const head_cols[] = { "point", "dir" };
static const char *const mid_cols[] = { "setup", "phase", "runs" };
static const char *const tail_cols[] = { "objective", "broken" };
#define NHEAD 2
#define NMID 3
#define NTAIL 2

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
	size_t k = 0;

	if (!cJSON_IsString(p) || !*p->valuestring || !cJSON_IsArray(vals) ||
	    !cJSON_GetArraySize(vals))
		return errorf(err, -EINVAL, "%s: vary[%zu]: expected {\"path\": a path, \"values\": "
			      "[one or more values]}", path, i);
	a->path = p->valuestring;
	a->leaf = vary_leaf(a->path);
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
 * Checks the header's grammar (sweep_data.h) and notes the figures. The
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

/* Series order: setup, phase, then the other varied paths' values. */
static int series_cmp(const void *pa, const void *pb)
{
	const struct sweep_series *a = pa;
	const struct sweep_series *b = pb;
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

void sweep_series_free(struct sweep_series_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++) {
		free(set->s[i].rows);
		free(set->s[i].name);
	}
	free(set->s);
	memset(set, 0, sizeof(*set));
}

/* Names a series SETUP[ / PHASE][ LEAF=V...]. */
static int series_name(const struct sweep_data *d, const struct sweep_grouping *g,
		       struct sweep_series *s)
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

int sweep_group(const struct sweep_data *d, const struct sweep_grouping *g,
		      struct sweep_series_set *set, char *err)
{
	size_t i;
	size_t j;
	int rc = 0;

	memset(set, 0, sizeof(*set));
	for (i = 0; i < d->nrows; i++) {
		const struct sweep_row *r = &d->rows[i];
		struct sweep_series key = { .setup = first_seen(d, i, false),
				      .phase = g->by_phase ? first_seen(d, i, true) : 0,
				      .pt = r->pt,
				      .nothers = g->by_others ? d->naxes - 1 : 0 };
		struct sweep_series *s;

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
	sweep_series_free(set);
	return errorf(err, -ENOMEM, "out of memory");
}

size_t sweep_figure(const struct sweep_data *d, const char *name)
{
	size_t f;

	for (f = 0; f < d->nfigs; f++) {
		if (strcmp(d->figs[f], name) == 0)
			return f;
	}
	return SIZE_MAX;
}

/* ---- knees ---- */

int sweep_series_knee(const struct sweep_data *d, const struct sweep_series *s, double exchange,
		      struct sweep_knee *k)
{
	size_t dup = sweep_figure(d, "duplicate_share");
	size_t ans = sweep_figure(d, "answered_share");
	size_t n = s->nrows ? s->nrows : 1;
	size_t i;

	memset(k, 0, sizeof(*k));
	k->knee = -1;
	k->x = calloc(n, sizeof(*k->x));
	k->y = calloc(n, sizeof(*k->y));
	k->front = calloc(n, sizeof(*k->front));
	if (!k->x || !k->y || !k->front) {
		sweep_knee_free(k);
		return -ENOMEM;
	}
	for (i = 0; i < s->nrows; i++) {
		k->x[i] = d->rows[s->rows[i]].mean[dup];
		k->y[i] = d->rows[s->rows[i]].mean[ans];
	}
	knee_find(k->x, k->y, s->nrows, exchange, k->front, &k->nfront, &k->knee);
	return 0;
}

void sweep_knee_free(struct sweep_knee *k)
{
	free(k->x);
	free(k->y);
	free(k->front);
	memset(k, 0, sizeof(*k));
	k->knee = -1;
}

int sweep_knee_check(const struct sweep_data *d, double exchange, const char *knee_phase,
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

int sweep_knee_series(const struct sweep_data *d, const char *knee_phase,
		      struct sweep_series_set *set, char *err)
{
	struct sweep_grouping g = { .by_phase = !knee_phase, .by_others = false,
				    .only_phase = knee_phase };

	return sweep_group(d, &g, set, err);
}

/* One knee as {"setup", "phase", "point", "dir", "values", "duplicate_share", "answered_share"}. */
static cJSON *knee_json(const struct sweep_data *d, const struct sweep_row *r, double dup,
			double ans)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *vals = cJSON_CreateObject();
	size_t a;
	bool ok;

	for (a = 0; vals && a < d->naxes; a++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->pt->values, d->axes[a].path);

		if (!json_put(vals, d->axes[a].path, cJSON_Duplicate(v, true))) {
			cJSON_Delete(vals);
			vals = NULL;
		}
	}
	ok = json_put(o, "setup", cJSON_CreateString(r->setup)) &&
	     json_put(o, "phase", cJSON_CreateString(r->phase)) &&
	     json_put(o, "point", cJSON_CreateNumber((double)r->pt->index)) &&
	     json_put(o, "dir", cJSON_CreateString(r->pt->dir));
	if (!ok)
		cJSON_Delete(vals);	/* not handed over */
	ok = ok && json_put(o, "values", vals) &&
	     json_put(o, "duplicate_share", cJSON_CreateNumber(dup)) &&
	     json_put(o, "answered_share", cJSON_CreateNumber(ans));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int sweep_knees(const struct sweep_data *d, double exchange, const char *knee_phase, cJSON **out,
		char *err)
{
	struct sweep_series_set set = { 0 };
	cJSON *arr = NULL;
	size_t i;
	int rc;

	*out = NULL;
	err[0] = '\0';
	rc = sweep_knee_check(d, exchange, knee_phase, err);
	if (!rc)
		rc = sweep_knee_series(d, knee_phase, &set, err);
	if (rc)
		goto out;
	arr = cJSON_CreateArray();
	for (i = 0; arr && i < set.n; i++) {
		struct sweep_knee k;
		cJSON *o;

		if (sweep_series_knee(d, &set.s[i], exchange, &k)) {
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		if (k.knee >= 0) {
			o = knee_json(d, &d->rows[set.s[i].rows[k.knee]], k.x[k.knee], k.y[k.knee]);
			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				cJSON_Delete(arr);
				arr = NULL;
			}
		}
		sweep_knee_free(&k);
	}
	if (!arr) {
		rc = errorf(err, -ENOMEM, "out of memory");
		goto out;
	}
	*out = arr;
out:
	sweep_series_free(&set);
	return rc;
}
