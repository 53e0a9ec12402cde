/*
 * received: the report's What clients received table (runner/received.h).
 * Every figure is one the summary holds, or a sum or difference of them.
 */
#include "runner/received.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "runner/stats.h"
#include "runner/table.h"

/* HTTP statuses are 0–999 (runner/stats.h). */
#define STATUSES 1000

/*
 * A mean of counts as the runs' means sum and subtract: a whole number
 * when it is one but for a rounding, so 10/3 + 20/3 − 30/3 prints as 0.
 */
static double snap(double v)
{
	return fabs(v - round(v)) < 1e-9 ? round(v) : v;
}

/* fig[key][sub].mean (runner/stats.h), snapped. */
static double mean(const cJSON *fig, const char *key, const char *sub)
{
	return snap(stats_mean(fig, key, sub));
}

static double requests_n(const cJSON *fig)
{
	return mean(fig, "requests", NULL);
}

/* The answers neither degraded nor from another provider: fallback_share's rule. */
static double primary_n(const cJSON *fig)
{
	return snap(stats_mean(fig, "ok", NULL) - stats_mean(fig, "degraded_answers", NULL) -
		    stats_mean(fig, "fallback_answers", NULL));
}

static double fallback_n(const cJSON *fig)
{
	return mean(fig, "fallback_answers", NULL);
}

static double degraded_n(const cJSON *fig)
{
	return mean(fig, "degraded_answers", NULL);
}

/* Whether key of "status" is an HTTP status other than 2xx, into *status. */
static bool error_status(const char *key, long *status)
{
	char *end;

	errno = 0;
	*status = strtol(key, &end, 10);
	return !errno && end != key && !*end && *status >= 0 && *status < STATUSES &&
	       !(*status >= 200 && *status < 300);
}

/*
 * The means of fig's "status" counts other than 2xx, by status, into n
 * (STATUSES of them, zeroed here). Returns their sum; NAN without fig.
 */
static double error_statuses(const cJSON *fig, double *n)
{
	const cJSON *s;
	double sum = 0;
	long status;

	memset(n, 0, STATUSES * sizeof(*n));
	if (!fig)
		return NAN;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(fig, "status")) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "mean");
		double v = cJSON_IsNumber(m) ? m->valuedouble : 0;

		if (!error_status(s->string, &status))
			continue;
		n[status] += v;
		sum += v;
	}
	return snap(sum);
}

static double http_errors_n(const cJSON *fig)
{
	double n[STATUSES];

	return error_statuses(fig, n);
}

static double error_events_n(const cJSON *fig)
{
	return mean(fig, "error_events", NULL);
}

static double silent_breaks_n(const cJSON *fig)
{
	return mean(fig, "silent_breaks", NULL);
}

/*
 * The answers stalled or truncated that were no stream — a body shorter
 * than announced: the outcomes' counts less the streams' (stalls,
 * truncations), which the two columns before account for.
 */
static double cut_bodies_n(const cJSON *fig)
{
	const cJSON *oc = cJSON_GetObjectItemCaseSensitive(fig, "outcomes");

	return snap(stats_mean(oc, "truncated", NULL) + stats_mean(oc, "stalled", NULL) -
		    stats_mean(fig, "truncations", NULL) - stats_mean(fig, "stalls", NULL));
}

static double timeouts_n(const cJSON *fig)
{
	return mean(cJSON_GetObjectItemCaseSensitive(fig, "outcomes"), "timeout", NULL);
}

static double refused_reset_n(const cJSON *fig)
{
	const cJSON *oc = cJSON_GetObjectItemCaseSensitive(fig, "outcomes");

	return snap(stats_mean(oc, "refused", NULL) + stats_mean(oc, "reset", NULL));
}

static double invalid_n(const cJSON *fig)
{
	return mean(cJSON_GetObjectItemCaseSensitive(fig, "outcomes"), "invalid", NULL);
}

/* A count of the runs' means: whole, or with one decimal; "—" for none. */
static void count_text(struct buf *b, double v)
{
	if (isnan(v))
		buf_puts(b, "—");
	else
		buf_printf(b, v == floor(v) ? "%.0f" : "%.1f", v);
}

/* "502 ×7; 504 ×2": the statuses other than 2xx, ascending, or the count (0, "—"). */
static void http_errors_text(struct buf *b, const cJSON *fig, double count)
{
	double n[STATUSES];
	int s;

	error_statuses(fig, n);
	if (isnan(count) || !(count > 0)) {
		count_text(b, count);
		return;
	}
	for (s = 0; s < STATUSES; s++) {
		if (!(n[s] > 0))
			continue;
		buf_printf(b, "%s%d ×", b->len ? "; " : "", s);
		count_text(b, snap(n[s]));
	}
}

/* "3 / 1": refused, then reset. */
static void refused_reset_text(struct buf *b, const cJSON *fig, double count)
{
	const cJSON *oc = cJSON_GetObjectItemCaseSensitive(fig, "outcomes");

	if (isnan(count)) {
		count_text(b, count);
		return;
	}
	count_text(b, mean(oc, "refused", NULL));
	buf_puts(b, " / ");
	count_text(b, mean(oc, "reset", NULL));
}

/*
 * A column: its header, its count for a setup × phase (NAN: no value), and
 * how its cell reads (NULL: the count); keep: shown even when zero in
 * every row. Every column but setup and phase is aligned right.
 */
struct rcol {
	const char *name;
	double (*count)(const cJSON *fig);
	void (*text)(struct buf *b, const cJSON *fig, double count);
	bool keep;
};

static const struct rcol cols[] = {
	{ "requests", requests_n, NULL, true },
	{ "from primary", primary_n, NULL, false },
	{ "from another", fallback_n, NULL, false },
	{ "degraded", degraded_n, NULL, false },
	{ "HTTP errors", http_errors_n, http_errors_text, false },
	{ "error events", error_events_n, NULL, false },
	{ "silent breaks", silent_breaks_n, NULL, false },
	{ "cut bodies", cut_bodies_n, NULL, false },
	{ "timeouts", timeouts_n, NULL, false },
	{ "refused / reset", refused_reset_n, refused_reset_text, false },
	{ "invalid", invalid_n, NULL, false },
};

#define NCOLS (sizeof(cols) / sizeof(cols[0]))

/*
 * Every setup × phase's row of every column into all (setup, phase, then
 * cols), and in shown which columns have something other than a zero in
 * some row. Returns 0 or -ENOMEM.
 */
static int fill_rows(struct table *all, bool *shown, const struct scenario *sc,
		     const cJSON *summary)
{
	const cJSON *st;
	size_t i, c;

	cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(summary, "setups")) {
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(st, "phases");

		for (i = 0; i < sc->nphases; i++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases,
									    sc->phases[i].name);
			struct buf cell[NCOLS];
			const char *row[2 + NCOLS];
			int rc;

			memset(cell, 0, sizeof(cell));
			row[0] = st->string;
			row[1] = sc->phases[i].name;
			for (c = 0; c < NCOLS; c++) {
				double v = cols[c].count(fig);

				shown[c] = shown[c] || cols[c].keep || isnan(v) || v > 0;
				if (cols[c].text)
					cols[c].text(&cell[c], fig, v);
				else
					count_text(&cell[c], v);
				row[2 + c] = cell[c].data;
			}
			rc = table_add(all, row);
			for (c = 0; c < NCOLS; c++)
				buf_free(&cell[c]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The line under the table naming the columns left out, if any. */
static void left_out_line(FILE *fp, const bool *shown, bool markdown)
{
	const char *sep = "";
	size_t c;

	for (c = 0; c < NCOLS; c++) {
		if (shown[c])
			continue;
		if (!*sep)
			fputs(markdown ? "\nLeft out, zero in every row: " : "  left out, zero in every "
			      "row: ", fp);
		fprintf(fp, markdown ? "%s*%s*" : "%s%s", sep, cols[c].name);
		sep = ", ";
	}
	if (*sep)
		fputs(markdown ? ".\n" : "\n", fp);
}

void received_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	struct table all = { .ncols = 2 + NCOLS };
	struct table t = { .ncols = 2 };
	bool shown[NCOLS] = { false };
	const char *row[2 + NCOLS];
	unsigned right = 0;
	size_t r, c;

	if (fill_rows(&all, shown, sc, summary) || !all.nrows)
		goto out;
	row[0] = "setup";
	row[1] = "phase";
	for (c = 0; c < NCOLS; c++) {
		if (!shown[c])
			continue;
		right |= 1u << t.ncols;
		row[t.ncols++] = cols[c].name;
	}
	if (table_add(&t, row))
		goto out;
	for (r = 0; r < all.nrows; r++) {
		const char *const *cells = (const char *const *)&all.cells[r * all.ncols];
		size_t k = 2;

		row[0] = cells[0];
		row[1] = cells[1];
		for (c = 0; c < NCOLS; c++) {
			if (shown[c])
				row[k++] = cells[2 + c];
		}
		if (table_add(&t, row))
			goto out;
	}
	if (markdown) {
		fputs("\n## What clients received\n\nWhat the clients of each setup got, per phase "
		      "(the runs' means): the answers *from the primary* and *from another* "
		      "provider (who answered as for *fallback*, the same count) and the "
		      "gateway's *degraded* answers, fixed or cached, from neither; *HTTP "
		      "errors*, the answers with a status other than 2xx, by status; *error "
		      "events*, streams that began with a 200 and ended with an error event — "
		      "the server said why; *silent breaks*, streams that stalled or were cut "
		      "with no error event; *cut bodies*, answers not streamed that came "
		      "shorter than announced; *timeouts*, the client's own (no answer, or no "
		      "first token, in time); *refused / reset*, connections refused, and "
		      "broken; *invalid*, answers that were no chat completion.\n\n", fp);
		table_print_markdown(fp, &t, right);
	} else {
		fputs("\nwhat clients received:\n", fp);
		table_print(fp, &t, right);
	}
	left_out_line(fp, shown, markdown);
out:
	table_free(&all);
	table_free(&t);
}
