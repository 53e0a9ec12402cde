/*
 * sweep_table: a sweep's figures from its points' summaries — sweep.csv,
 * one row per point × setup × phase with each figure's mean and standard
 * deviation over the repeats, and the table printed at the end.
 */
#include "runner/sweep.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "runner/outfile.h"
#include "runner/sweep_verdict.h"

/* A sweep.csv figure: its column, and where it is in a phase's CFIGURES. */
struct sweep_figure {
	const char *column;
	const char *key;
	const char *sub;		/* NULL: key's own {mean, stddev} */
};

/* sweep.csv's figures, in column order (each gives FIGURE and FIGURE_sd). */
static const struct sweep_figure figures[] = {
	{ "answered_share", "answered_share", NULL },
	{ "latency_p50_ms", "latency_ms", "p50" },
	{ "latency_p95_ms", "latency_ms", "p95" },
	{ "latency_p99_ms", "latency_ms", "p99" },
	{ "attempts_per_request", "attempts_per_request", NULL },
	{ "duplicate_share", "duplicate_share", NULL },
	{ "cost_per_answered_usd", "cost_per_answered", NULL },
	{ "time_to_open_ms", "time_to_open_ms", NULL },
	{ "time_to_primary_ms", "time_to_primary_ms", NULL },
	{ "fallback_share", "fallback_share", NULL },
	{ "time_to_close_ms", "time_to_close_ms", NULL },
	{ "exposed_requests", "exposed", "requests" },
	{ "check_rate_per_s", "check_rate_per_s", NULL },
};

#define NFIGURES (sizeof(figures) / sizeof(figures[0]))

/* A point's DIR/POINT/summary.json (sweep.h). */
cJSON *sweep_point_summary(const struct sweep *s, size_t i)
{
	char err[CFG_ERR_LEN];
	struct buf path = { 0 };
	cJSON *root = NULL;

	if (!buf_printf(&path, "%s/%s/summary.json", s->dir, s->dirs[i]))
		root = json_load_file(path.data, err, sizeof(err));
	buf_free(&path);
	return root;
}

/* A combined figure's {mean, stddev, …} in a phase's CFIGURES, or NULL. */
static const cJSON *figure_of(const cJSON *phase, const struct sweep_figure *f)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(phase, f->key);

	if (f->sub)
		v = cJSON_GetObjectItemCaseSensitive(v, f->sub);
	return cJSON_IsObject(v) ? v : NULL;
}

/*
 * A number as sweep.csv writes it: the shortest of %.15g, %.16g and
 * %.17g that reads back as the same double.
 */
static int put_number(struct buf *b, double v)
{
	char text[40];
	int digits;

	for (digits = 15; digits < 17; digits++) {
		snprintf(text, sizeof(text), "%.*g", digits, v);
		if (strtod(text, NULL) == v)
			break;
	}
	snprintf(text, sizeof(text), "%.*g", digits, v);
	return buf_puts(b, text);
}

/* A text field, quoted per RFC 4180 when it holds a comma, quote, CR or LF. */
static int put_text(struct buf *b, const char *s)
{
	const char *p;
	int rc;

	if (!strpbrk(s, ",\"\r\n"))
		return buf_puts(b, s);
	rc = buf_puts(b, "\"");
	for (p = s; *p && !rc; p++) {
		rc = buf_append(b, p, 1);
		if (!rc && *p == '"')
			rc = buf_append(b, p, 1);	/* a quote inside is doubled */
	}
	return rc ? rc : buf_puts(b, "\"");
}

/* A varied value as a field: numbers as put_number, strings quoted when needed. */
static int put_value(struct buf *b, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return put_number(b, v->valuedouble);
	if (cJSON_IsString(v))
		return put_text(b, v->valuestring);
	return buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
}

/* ",MEAN,SD" of a figure; empty fields where there is no number. */
static int put_figure(struct buf *b, const cJSON *fig)
{
	const char *keys[] = { "mean", "stddev" };
	const cJSON *v;
	size_t k;
	int rc = 0;

	for (k = 0; k < 2 && !rc; k++) {
		v = cJSON_GetObjectItemCaseSensitive(fig, keys[k]);
		rc = buf_puts(b, ",");
		if (!rc && cJSON_IsNumber(v))
			rc = put_number(b, v->valuedouble);
	}
	return rc;
}

static int put_header(struct buf *b, const struct sweep *s)
{
	size_t j;
	int rc = buf_puts(b, "point,dir");

	for (j = 0; j < s->plan.n && !rc; j++) {
		rc = buf_puts(b, ",");
		if (!rc)
			rc = put_text(b, s->plan.v[j].path);
	}
	if (!rc)
		rc = buf_puts(b, ",setup,phase,runs");
	for (j = 0; j < NFIGURES && !rc; j++)
		rc = buf_printf(b, ",%s,%s_sd", figures[j].column, figures[j].column);
	return rc ? rc : buf_puts(b, ",objective,broken\n");
}

/* ",VERDICT,BROKEN" of a row: empty fields when the objective does not judge it. */
static int put_verdict(struct buf *b, const struct sc_objective *o, const char *phase,
		       const cJSON *cfig)
{
	struct objective_verdict v;
	const char *word = sweep_row_verdict(o, phase, cfig, &v);
	int rc;

	if (!word)
		return buf_puts(b, ",,");
	rc = buf_printf(b, ",%s,", word);
	return rc ? rc : put_text(b, v.broken);
}

/* Point i's rows: one per setup of its summary × phase. */
static int put_point(struct buf *b, const struct sweep *s, size_t i, const cJSON *summary,
		     const struct sc_objective *o)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const cJSON *st;
	const cJSON *ph;
	size_t j;
	int rc = 0;

	cJSON_ArrayForEach(st, setups) {
		const cJSON *runs = cJSON_GetObjectItemCaseSensitive(st, "runs");

		cJSON_ArrayForEach(ph, cJSON_GetObjectItemCaseSensitive(st, "phases")) {
			rc = buf_printf(b, "%zu,", i + 1);
			if (!rc)
				rc = put_text(b, s->dirs[i]);
			for (j = 0; j < s->plan.n && !rc; j++) {
				rc = buf_puts(b, ",");
				if (!rc)
					rc = put_value(b, vary_value(&s->plan, i, j));
			}
			if (!rc)
				rc = buf_puts(b, ",");
			if (!rc)
				rc = put_text(b, st->string);
			if (!rc)
				rc = buf_puts(b, ",");
			if (!rc)
				rc = put_text(b, ph->string);
			if (!rc)
				rc = buf_puts(b, ",");
			if (!rc && cJSON_IsNumber(runs))
				rc = put_number(b, runs->valuedouble);
			for (j = 0; j < NFIGURES && !rc; j++)
				rc = put_figure(b, figure_of(ph, &figures[j]));
			if (!rc)
				rc = put_verdict(b, o, ph->string, ph);
			if (!rc)
				rc = buf_puts(b, "\n");
			if (rc)
				return rc;
		}
	}
	return rc;
}

/* Writes DIR/sweep.csv (sweep.h). */
/* Point i's rows into s->csv_rows[i], from its summary, unless there already. */
static int point_rows(struct sweep *s, size_t i, const struct sc_objective *o)
{
	struct buf rows = { 0 };
	cJSON *summary;
	int rc = 0;

	if (s->csv_rows[i])
		return 0;
	summary = sweep_point_summary(s, i);
	if (!summary)
		return 0;
	rc = put_point(&rows, s, i, summary, o);
	cJSON_Delete(summary);
	if (!rc && rows.len)
		s->csv_rows[i] = buf_steal(&rows);
	buf_free(&rows);
	return rc;
}

int sweep_csv_write(struct sweep *s, char *err)
{
	struct scenario base;
	struct buf b = { 0 };
	struct buf path = { 0 };
	size_t i;
	int rc;

	if (!s->csv_rows) {
		s->csv_rows = calloc(s->plan.npoints ? s->plan.npoints : 1, sizeof(*s->csv_rows));
		if (!s->csv_rows) {
			snprintf(err, CFG_ERR_LEN, "cannot write %.200s/%s: out of memory", s->dir,
				 SWEEP_CSV);
			return -ENOMEM;
		}
	}
	rc = sweep_base_scenario(s, &base, err);
	if (rc) {
		scenario_free(&base);
		return rc;
	}
	rc = put_header(&b, s);
	for (i = 0; i < s->plan.npoints && !rc; i++) {
		/* A failed point may have a summary of the runs that completed: not its figures. */
		if (s->status[i] != SWEEP_DONE)
			continue;
		rc = point_rows(s, i, &base.objective);
		if (!rc && s->csv_rows[i])
			rc = buf_puts(&b, s->csv_rows[i]);
	}
	scenario_free(&base);
	if (!rc)
		rc = buf_printf(&path, "%s/%s", s->dir, SWEEP_CSV);
	if (rc)
		snprintf(err, CFG_ERR_LEN, "cannot write %.200s/%s: out of memory", s->dir, SWEEP_CSV);
	else
		rc = outfile_write(path.data, b.data, b.len, err, CFG_ERR_LEN);
	buf_free(&path);
	buf_free(&b);
	return rc;
}

/* A figure's mean as the table shows it: fmt, or "—" when none. */
static void cell(FILE *fp, const cJSON *phase, const struct sweep_figure *f, const char *fmt,
		 double mult, int width)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(figure_of(phase, f), "mean");
	char text[40];

	if (cJSON_IsNumber(v))
		snprintf(text, sizeof(text), fmt, v->valuedouble * mult);
	else
		snprintf(text, sizeof(text), "-");
	fprintf(fp, " %*s", width, text);
}

/* The objective's verdict of a row, and the bounds broken: nothing when it judges none. */
static void verdict_cell(FILE *fp, const struct sc_objective *o, const cJSON *phase)
{
	struct objective_verdict v;
	const char *word = sweep_row_verdict(o, phase->string, phase, &v);

	if (word)
		fprintf(fp, "  %s%s%s", v.meets ? "meets" : "FAILS", v.meets ? "" : " ", v.broken);
}

/* The figure of figures[] called column. */
static const struct sweep_figure *figure(const char *column)
{
	size_t j;

	for (j = 0; j < NFIGURES; j++) {
		if (strcmp(figures[j].column, column) == 0)
			return &figures[j];
	}
	return NULL;
}

/* Prints the sweep's table (sweep.h). */
void sweep_table_print(FILE *fp, const struct sweep *s)
{
	struct scenario base;
	char err[CFG_ERR_LEN];
	const struct sc_objective *o;
	size_t i;
	const cJSON *st;
	const cJSON *ph;

	o = sweep_base_scenario(s, &base, err) == 0 && base.objective.given ? &base.objective :
									      NULL;
	fprintf(fp, "%-32s %-12s %-12s %9s %9s %9s %12s %10s%s\n", "point", "setup", "phase",
		"answered", "p95 ms", "dup share", "$/answered", "to open ms",
		o ? "  objective" : "");
	for (i = 0; i < s->plan.npoints; i++) {
		cJSON *summary = s->status[i] == SWEEP_DONE ? sweep_point_summary(s, i) : NULL;
		char *label = vary_label(&s->plan, i);

		if (!summary) {
			fprintf(fp, "%-32.32s %s\n", label ? label : "?",
				s->status[i] == SWEEP_FAILED ? "(failed)" : s->status[i] == SWEEP_DONE ?
				"(done, but no summary)" : "(not run)");
			free(label);
			continue;
		}
		cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(summary, "setups")) {
			cJSON_ArrayForEach(ph, cJSON_GetObjectItemCaseSensitive(st, "phases")) {
				fprintf(fp, "%-32.32s %-12.12s %-12.12s", label ? label : "?",
					st->string, ph->string);
				cell(fp, ph, figure("answered_share"), "%.1f%%", 100, 9);
				cell(fp, ph, figure("latency_p95_ms"), "%.0f", 1, 9);
				cell(fp, ph, figure("duplicate_share"), "%.1f%%", 100, 9);
				cell(fp, ph, figure("cost_per_answered_usd"), "%.3g", 1, 12);
				cell(fp, ph, figure("time_to_open_ms"), "%.0f", 1, 10);
				verdict_cell(fp, o, ph);
				fputc('\n', fp);
			}
		}
		free(label);
		cJSON_Delete(summary);
	}
	scenario_free(&base);
}
