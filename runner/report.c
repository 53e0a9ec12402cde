/*
 * report: run summaries from their files, the phase table, report.md, and
 * `chaos report`.
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "stats.h"

int report_summarise_run(const struct scenario *sc, const struct sc_setup *st,
			 const char *run_dir, unsigned k, int64_t t0_unix_ms, cJSON **out,
			 char *err)
{
	struct stats_phase *ph = calloc(sc->nphases ? sc->nphases : 1, sizeof(*ph));
	struct stats_input in = { 0 };
	cJSON *sum = NULL;
	size_t i;
	int rc;

	*out = NULL;
	if (!ph) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < sc->nphases; i++)
		ph[i] = (struct stats_phase){ sc->phases[i].name, sc->phases[i].from_ms,
					      sc->phases[i].to_ms };
	in.run_dir = run_dir;
	in.phases = ph;
	in.nphases = sc->nphases;
	in.duration_ms = sc->duration_ms;
	in.window_ms = 5000 * sc->scale;
	in.primary = scenario_primary(sc, st);
	in.t0_unix_ms = t0_unix_ms;
	rc = stats_compute(&in, &sum, err);
	free(ph);
	if (rc)
		return rc;
	cJSON_AddStringToObject(sum, "scenario", sc->name);
	cJSON_AddStringToObject(sum, "setup", st->name);
	cJSON_AddNumberToObject(sum, "run", k);
	cJSON_AddNumberToObject(sum, "t0_unix_ms", (double)t0_unix_ms);
	cJSON_AddNumberToObject(sum, "time_scale", sc->scale);
	*out = sum;
	return 0;
}

/* ---- the table ---- */


static void put(struct buf *b, double v, const char *fmt)
{
	if (isnan(v))
		buf_puts(b, "—");
	else
		buf_printf(b, fmt, v);
}

/* The columns, as (header, how to fill it). */
enum col {
	COL_REQUESTS, COL_ANSWERED, COL_ERRORS, COL_P50, COL_P95, COL_P99, COL_TPUT,
	COL_FALLBACK, COL_OPEN, COL_PRIMARY, COL_DUP, COL_COST, NCOLS
};

static const char *const col_names[NCOLS] = {
	"requests", "answered", "errors", "p50 ms", "p95 ms", "p99 ms", "ok/s",
	"fallback", "open after ms", "primary after ms", "dup. attempts", "cost USD",
};

static void cell(struct buf *b, const cJSON *fig, enum col c)
{
	const cJSON *dup = cJSON_GetObjectItemCaseSensitive(fig, "duplicate_work");
	const cJSON *cost = cJSON_GetObjectItemCaseSensitive(fig, "cost_usd");

	switch (c) {
	case COL_REQUESTS:
		put(b, stats_mean(fig, "requests", NULL), "%.0f");
		break;
	case COL_ANSWERED:
		put(b, stats_mean(fig, "answered_share", NULL) * 100, "%.1f%%");
		break;
	case COL_ERRORS:
		put(b, stats_mean(fig, "error_rate", NULL) * 100, "%.1f%%");
		break;
	case COL_P50:
		put(b, stats_mean(fig, "latency_ms", "p50"), "%.1f");
		break;
	case COL_P95:
		put(b, stats_mean(fig, "latency_ms", "p95"), "%.1f");
		break;
	case COL_P99:
		put(b, stats_mean(fig, "latency_ms", "p99"), "%.1f");
		break;
	case COL_TPUT:
		put(b, stats_mean(fig, "throughput_per_s", NULL), "%.1f");
		break;
	case COL_FALLBACK:
		put(b, stats_mean(fig, "fallback_share", NULL) * 100, "%.1f%%");
		break;
	case COL_OPEN:
		put(b, stats_mean(fig, "time_to_open_ms", NULL), "%.0f");
		break;
	case COL_PRIMARY:
		put(b, stats_mean(fig, "time_to_primary_ms", NULL), "%.0f");
		break;
	case COL_DUP:
		put(b, stats_mean(dup, "attempts", NULL), "%.0f");
		break;
	case COL_COST:
		put(b, stats_mean(cost, "total", NULL), "%.6f");
		break;
	case NCOLS:
		break;
	}
}

/* Display width of a UTF-8 string (the dash counts as one). */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

static void pad(FILE *fp, const char *s, size_t w, bool right)
{
	size_t n = width(s);

	if (right)
		fprintf(fp, "%*s%s", (int)(w > n ? w - n : 0), "", s);
	else
		fprintf(fp, "%s%*s", s, (int)(w > n ? w - n : 0), "");
}

void report_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	size_t nrows = 0;
	size_t ncells;
	struct buf *cells;
	size_t w[NCOLS + 2] = { 5, 5 };
	const cJSON *st;
	size_t r;
	size_t i;
	size_t c;

	cJSON_ArrayForEach(st, setups)
		nrows += sc->nphases;
	ncells = nrows * (NCOLS + 2);
	cells = calloc(ncells ? ncells : 1, sizeof(*cells));
	if (!cells)
		return;
	r = 0;
	cJSON_ArrayForEach(st, setups) {
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(st, "phases");

		for (i = 0; i < sc->nphases; i++, r++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases, sc->phases[i].name);
			struct buf *row = &cells[r * (NCOLS + 2)];

			buf_puts(&row[0], st->string);
			buf_puts(&row[1], sc->phases[i].name);
			for (c = 0; c < NCOLS; c++)
				cell(&row[c + 2], fig, (enum col)c);
		}
	}
	w[0] = width("setup");
	w[1] = width("phase");
	for (c = 0; c < NCOLS; c++)
		w[c + 2] = width(col_names[c]);
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < NCOLS + 2; c++) {
			const char *s = cells[r * (NCOLS + 2) + c].data;

			if (s && width(s) > w[c])
				w[c] = width(s);
		}
	}
	for (c = 0; c < NCOLS + 2; c++) {
		fputs(markdown ? "| " : c ? "  " : "", fp);
		pad(fp, c == 0 ? "setup" : c == 1 ? "phase" : col_names[c - 2], w[c], c >= 2);
		fputs(markdown ? " " : "", fp);
	}
	fputs(markdown ? "|\n" : "\n", fp);
	if (markdown) {
		for (c = 0; c < NCOLS + 2; c++)
			fputs(c >= 2 ? "|---:" : "|---", fp);
		fputs("|\n", fp);
	}
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < NCOLS + 2; c++) {
			const char *s = cells[r * (NCOLS + 2) + c].data;

			fputs(markdown ? "| " : c ? "  " : "", fp);
			pad(fp, s ? s : "", w[c], c >= 2);
			fputs(markdown ? " " : "", fp);
		}
		fputs(markdown ? "|\n" : "\n", fp);
	}
	for (i = 0; i < ncells; i++)
		buf_free(&cells[i]);
	free(cells);
}

/* ---- report.md ---- */

/* Run 1's breaker transitions of one setup, as a markdown table. */
static void transitions_md(FILE *fp, const char *setup, const cJSON *combined)
{
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(combined, "breaker_transitions");
	const cJSON *first = cJSON_GetArrayItem(runs, 0);
	const cJSON *ev;

	if (!cJSON_GetArraySize(first))
		return;
	fprintf(fp, "\n### %s: breaker transitions (run 1)\n\n", setup);
	fputs("| t (s) | target | from | to | reason |\n|---:|---|---|---|---|\n", fp);
	cJSON_ArrayForEach(ev, first) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "t_ms");
		const char *model = json_get_string(ev, "model");
		const char *reason = json_get_string(ev, "reason");

		fprintf(fp, "| %.2f | %s/%s | %s | %s | %s |\n",
			cJSON_IsNumber(t) ? t->valuedouble / 1000 : NAN,
			json_get_string(ev, "provider") ? json_get_string(ev, "provider") : "?",
			model ? model : "?", json_get_string(ev, "from") ? json_get_string(ev, "from") : "?",
			json_get_string(ev, "to") ? json_get_string(ev, "to") : "?", reason ? reason : "");
	}
}

int report_write(const char *stamp_dir, const struct scenario *sc, const cJSON *summary)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const cJSON *repeat = cJSON_GetObjectItemCaseSensitive(summary, "repeat");
	const cJSON *st;
	struct buf path = { 0 };
	struct buf tmp = { 0 };
	FILE *fp;
	size_t i;
	int rc = 0;

	if (buf_printf(&path, "%s/report.md", stamp_dir) ||
	    buf_printf(&tmp, "%s/report.md.tmp", stamp_dir)) {
		rc = -ENOMEM;
		goto out;
	}
	fp = fopen(tmp.data, "w");
	if (!fp) {
		rc = -errno;
		goto out;
	}
	fprintf(fp, "# %s\n\n%s\n\n", sc->name, sc->description[0] ? sc->description : "");
	fprintf(fp, "Time scale %g (the timeline ran %.1f s), %d run%s per setup. Phases: ",
		sc->scale, sc->duration_ms / 1000, cJSON_IsNumber(repeat) ? repeat->valueint : 1,
		cJSON_IsNumber(repeat) && repeat->valueint == 1 ? "" : "s");
	for (i = 0; i < sc->nphases; i++)
		fprintf(fp, "%s%s %.1f–%.1f s", i ? ", " : "", sc->phases[i].name,
			sc->phases[i].from_ms / 1000, sc->phases[i].to_ms / 1000);
	fputs(".\n\nEvery figure comes from the runs' per-request files (`SETUP/run-K/`); with "
	      "several runs, the mean (`summary.json` has the spread). Latency is over answered "
	      "requests, from the intended send time; *fallback* is the share of answers that "
	      "came from a provider other than the setup's primary; *open after* and *primary "
	      "after* are measured from the phase's start.\n\n## Phases\n\n", fp);
	report_table(fp, sc, summary, true);
	cJSON_ArrayForEach(st, setups)
		transitions_md(fp, st->string, st);
	if (fclose(fp))
		rc = -errno;
	if (!rc && rename(tmp.data, path.data))
		rc = -errno;
out:
	buf_free(&path);
	buf_free(&tmp);
	return rc;
}

/* ---- chaos report ---- */

static double json_num(const cJSON *root, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The time scale the stamp ran at: its summary's, or its first run's. */
static double stamp_scale(const char *stamp_dir, const struct scenario *probe)
{
	char path[1200];
	char err[CFG_ERR_LEN];
	cJSON *root;
	double s;
	size_t i;

	snprintf(path, sizeof(path), "%s/summary.json", stamp_dir);
	root = json_load_file(path, err, sizeof(err));
	s = json_num(root, "time_scale");
	cJSON_Delete(root);
	for (i = 0; isnan(s) && i < probe->nsetups; i++) {
		snprintf(path, sizeof(path), "%s/%s/run-1/summary.json", stamp_dir,
			 probe->setups[i].name);
		root = json_load_file(path, err, sizeof(err));
		s = json_num(root, "time_scale");
		cJSON_Delete(root);
	}
	return s;
}

int report_command(const char *stamp_dir, FILE *out)
{
	char path[1200];
	char err[CFG_ERR_LEN];
	struct scenario probe;
	struct scenario sc;
	cJSON *top = NULL;
	cJSON *setups;
	cJSON **runs = NULL;
	double scale;
	unsigned most = 0;
	size_t i;
	unsigned k;
	int rc = 2;

	snprintf(path, sizeof(path), "%s/scenario.json", stamp_dir);
	if (scenario_load(path, 1, &probe, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		return 2;
	}
	scale = stamp_scale(stamp_dir, &probe);
	scenario_free(&probe);
	if (isnan(scale)) {
		fprintf(stderr, "chaos: %s: no summary.json says the time scale it ran at\n",
			stamp_dir);
		return 2;
	}
	if (scenario_load(path, scale, &sc, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		return 2;
	}
	top = cJSON_CreateObject();
	cJSON_AddStringToObject(top, "scenario", sc.name);
	cJSON_AddNumberToObject(top, "time_scale", sc.scale);
	setups = cJSON_AddObjectToObject(top, "setups");
	for (i = 0; i < sc.nsetups; i++) {
		const struct sc_setup *st = &sc.setups[i];
		size_t n = 0;

		for (k = 1;; k++) {
			char run_dir[1300];
			char lg_path[1400];
			cJSON *lg;
			cJSON *sum;
			cJSON **more;
			double t0;

			snprintf(run_dir, sizeof(run_dir), "%s/%s/run-%u", stamp_dir, st->name, k);
			if (access(run_dir, F_OK) != 0)
				break;
			snprintf(lg_path, sizeof(lg_path), "%s/loadgen-summary.json", run_dir);
			lg = json_load_file(lg_path, err, sizeof(err));
			t0 = json_num(lg, "t0_unix_ms");
			cJSON_Delete(lg);
			if (isnan(t0)) {
				fprintf(stderr, "chaos: %s: no t0_unix_ms\n", lg_path);
				goto out;
			}
			if (report_summarise_run(&sc, st, run_dir, k, (int64_t)t0, &sum, err)) {
				fprintf(stderr, "chaos: %s\n", err);
				goto out;
			}
			snprintf(lg_path, sizeof(lg_path), "%s/summary.json", run_dir);
			if (json_write_file(lg_path, sum)) {
				fprintf(stderr, "chaos: cannot write %s\n", lg_path);
				cJSON_Delete(sum);
				goto out;
			}
			more = realloc(runs, (n + 1) * sizeof(*runs));
			if (!more) {
				cJSON_Delete(sum);
				goto out;
			}
			runs = more;
			runs[n++] = sum;
		}
		if (n) {
			cJSON_AddItemToObject(setups, st->name, stats_combine(runs, n));
			if (n > most)
				most = (unsigned)n;
		}
		while (n)
			cJSON_Delete(runs[--n]);
	}
	if (!most) {
		fprintf(stderr, "chaos: %s: no completed run (SETUP/run-K) to report on\n", stamp_dir);
		goto out;
	}
	cJSON_AddNumberToObject(top, "repeat", most);
	snprintf(path, sizeof(path), "%s/summary.json", stamp_dir);
	if (json_write_file(path, top) || report_write(stamp_dir, &sc, top)) {
		fprintf(stderr, "chaos: cannot write the summary or report.md in %s\n", stamp_dir);
		goto out;
	}
	report_table(out, &sc, top, false);
	fprintf(out, "report: %s/report.md\n", stamp_dir);
	rc = 0;
out:
	free(runs);
	cJSON_Delete(top);
	scenario_free(&sc);
	return rc;
}
