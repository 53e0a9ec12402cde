/*
 * report: run summaries from their files, the phase table, report.md, and
 * `chaos report`.
 */
#include "runner/report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/records.h"
#include "runner/objective.h"
#include "runner/detect.h"
#include "runner/outfile.h"
#include "runner/received.h"
#include "runner/stamp.h"
#include "runner/stats.h"
#include "runner/traps.h"

/* providers.NAME.timeout_ms's default (docs/gateway-config.md). */
#define GW_DEFAULT_TIMEOUT_MS 10000.0

/*
 * A gateway setup's per-attempt timeout for its primary: the config's
 * providers.PRIMARY.timeout_ms (scaled with the scenario), or the
 * gateway's default.
 */
static double primary_timeout_ms(const struct sc_setup *st, const char *primary)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(st->config, "providers"), primary);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "timeout_ms");

	return cJSON_IsNumber(t) ? t->valuedouble : GW_DEFAULT_TIMEOUT_MS;
}

int report_summarise_run(const struct scenario *sc, const struct sc_setup *st,
			 const char *run_dir, unsigned k, int64_t t0_unix_ms, cJSON **out,
			 struct rundata *rows, char *err)
{
	struct stats_phase *ph = calloc(sc->nphases ? sc->nphases : 1, sizeof(*ph));
	struct stats_price *pr = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*pr));
	double *win = calloc(sc->nexpects ? sc->nexpects : 1, sizeof(*win));
	struct stats_input in = { 0 };
	cJSON *sum = NULL;
	size_t i;
	int rc;

	*out = NULL;
	if (!ph || !pr || !win) {
		free(ph);
		free(pr);
		free(win);
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < sc->nphases; i++)
		ph[i] = (struct stats_phase){ sc->phases[i].name, sc->phases[i].from_ms,
					      sc->phases[i].to_ms };
	for (i = 0; i < sc->nproviders; i++) {
		if (sc->prices[i].set)
			pr[in.nprices++] = (struct stats_price){ sc->provider_names[i],
								 sc->prices[i].input,
								 sc->prices[i].output };
	}
	in.prices = pr;
	if (st->kind == SC_DIRECT || st->kind == SC_CLIENT_RETRY) {
		in.provider = sc->provider_names[st->provider];
		in.attempts = STATS_ATTEMPTS_LOADGEN;
	} else {
		in.attempts = STATS_ATTEMPTS_COLUMN;
	}
	in.stop_gap_ms = 1000 * sc->scale;
	in.windows = win;
	in.nwindows = scenario_windows(sc, win, sc->nexpects);
	in.run_dir = run_dir;
	in.phases = ph;
	in.nphases = sc->nphases;
	in.duration_ms = sc->duration_ms;
	in.window_ms = 5000 * sc->scale;
	in.primary = scenario_primary(sc, st);
	in.t0_unix_ms = t0_unix_ms;
	if (scenario_setup_replicated(st)) {
		in.replicas = st->replicas;
		in.primary_timeout_ms = primary_timeout_ms(st, in.primary);
	}
	rc = stats_compute_keep(&in, &sum, rows, err);
	free(ph);
	free(pr);
	free(win);
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

/*
 * A column of a table: its header and the combined figure it shows,
 * fig[key].mean or fig[key][sub].mean, times mul, printed with fmt (NULL:
 * a count — whole, or with one decimal when a mean of repeats is not).
 */
struct column {
	const char *name;
	const char *key;
	const char *sub;
	double mul;
	const char *fmt;
};

static const struct column phase_cols[] = {
	{ "requests", "requests", NULL, 1, "%.0f" },
	{ "answered", "answered_share", NULL, 100, "%.1f%%" },
	{ "errors", "error_rate", NULL, 100, "%.1f%%" },
	{ "p50 ms", "latency_ms", "p50", 1, "%.1f" },
	{ "p95 ms", "latency_ms", "p95", 1, "%.1f" },
	{ "p99 ms", "latency_ms", "p99", 1, "%.1f" },
	{ "ok/s", "throughput_per_s", NULL, 1, "%.1f" },
	{ "fallback", "fallback_share", NULL, 100, "%.1f%%" },
	{ "open after ms", "time_to_open_ms", NULL, 1, "%.0f" },
	{ "stop ms", "stop_ms", NULL, 1, "%.0f" },
	{ "primary after ms", "time_to_primary_ms", NULL, 1, "%.0f" },
	{ "dup. attempts", "duplicate_work", "attempts", 1, "%.0f" },
	{ "cost USD", "cost_usd", "total", 1, "%.6f" },
};

static const struct column stream_cols[] = {
	{ "streams", "streams", NULL, 1, NULL },
	{ "stalls", "stalls", NULL, 1, NULL },
	{ "truncations", "truncations", NULL, 1, NULL },
	{ "silent breaks", "silent_breaks", NULL, 1, NULL },
	{ "error events", "error_events", NULL, 1, NULL },
	{ "TTFT p50 ms", "ttft_ms", "p50", 1, "%.1f" },
	{ "TTFT p95 ms", "ttft_ms", "p95", 1, "%.1f" },
	{ "max gap ms", "max_gap_ms", NULL, 1, "%.0f" },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_COLS 16

static void cell(struct buf *b, const cJSON *fig, const struct column *c)
{
	double v = stats_mean(fig, c->key, c->sub) * c->mul;

	if (c->fmt)
		put(b, v, c->fmt);
	else
		put(b, v, v == floor(v) ? "%.0f" : "%.1f");
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

/* Whether a setup × phase had streams (in any run). */
static bool has_streams(const cJSON *fig)
{
	return stats_mean(fig, "streams", NULL) > 0;
}

/*
 * Prints one row per setup × phase (only those with streams when
 * streams_only) with the columns cols[0..ncols), after heading (may be
 * NULL) when there is a row. Returns the rows printed.
 */
static size_t print_table(FILE *fp, const struct scenario *sc, const cJSON *summary,
			  bool markdown, const struct column *cols, size_t ncols,
			  bool streams_only, const char *heading)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	size_t nrows = 0;
	size_t ncells;
	struct buf *cells;
	size_t w[MAX_COLS + 2];
	const cJSON *st;
	size_t r;
	size_t i;
	size_t c;

	if (ncols > MAX_COLS)
		return 0;
	cJSON_ArrayForEach(st, setups)
		nrows += sc->nphases;
	ncells = nrows * (ncols + 2);
	cells = calloc(ncells ? ncells : 1, sizeof(*cells));
	if (!cells)
		return 0;
	r = 0;
	cJSON_ArrayForEach(st, setups) {
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(st, "phases");

		for (i = 0; i < sc->nphases; i++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases, sc->phases[i].name);
			struct buf *row = &cells[r * (ncols + 2)];

			if (streams_only && !has_streams(fig))
				continue;
			buf_puts(&row[0], st->string);
			buf_puts(&row[1], sc->phases[i].name);
			for (c = 0; c < ncols; c++)
				cell(&row[c + 2], fig, &cols[c]);
			r++;
		}
	}
	nrows = r;
	if (!nrows)
		goto out;
	w[0] = width("setup");
	w[1] = width("phase");
	for (c = 0; c < ncols; c++)
		w[c + 2] = width(cols[c].name);
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols + 2; c++) {
			const char *s = cells[r * (ncols + 2) + c].data;

			if (s && width(s) > w[c])
				w[c] = width(s);
		}
	}
	if (heading)
		fputs(heading, fp);
	for (c = 0; c < ncols + 2; c++) {
		fputs(markdown ? "| " : c ? "  " : "", fp);
		pad(fp, c == 0 ? "setup" : c == 1 ? "phase" : cols[c - 2].name, w[c], c >= 2);
		fputs(markdown ? " " : "", fp);
	}
	fputs(markdown ? "|\n" : "\n", fp);
	if (markdown) {
		for (c = 0; c < ncols + 2; c++)
			fputs(c >= 2 ? "|---:" : "|---", fp);
		fputs("|\n", fp);
	}
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols + 2; c++) {
			const char *s = cells[r * (ncols + 2) + c].data;

			fputs(markdown ? "| " : c ? "  " : "", fp);
			pad(fp, s ? s : "", w[c], c >= 2);
			fputs(markdown ? " " : "", fp);
		}
		fputs(markdown ? "|\n" : "\n", fp);
	}
out:
	for (i = 0; i < ncells; i++)
		buf_free(&cells[i]);
	free(cells);
	return nrows;
}

/* The objective's bounds in words: "answered ≥ 0.98, p95 ≤ 4000 ms…, in phase outage". */
static void objective_text(FILE *fp, const struct sc_objective *o)
{
	const char *sep = "";

	if (!isnan(o->answered_min)) {
		fprintf(fp, "answered share >= %g", o->answered_min);
		sep = ", ";
	}
	if (!isnan(o->p95_ms_max)) {
		fprintf(fp, "%sp95 <= %g ms", sep, o->p95_ms_max);
		sep = ", ";
	}
	if (!isnan(o->duplicate_share_max)) {
		fprintf(fp, "%sduplicate share <= %g", sep, o->duplicate_share_max);
		sep = ", ";
	}
	if (!isnan(o->cost_per_answered_usd_max))
		fprintf(fp, "%scost per answered <= %g USD", sep, o->cost_per_answered_usd_max);
	if (strcmp(o->phase, "*") == 0)
		fputs(", in every phase", fp);
	else
		fprintf(fp, ", in phase %s", o->phase);
}

/* A figure of the best's line: v printed with fmt, or "—" when it has none. */
static void best_figure(FILE *fp, const char *fmt, double v)
{
	if (isnan(v))
		fputs("—", fp);
	else
		fprintf(fp, fmt, v);
}

/*
 * The best setup against the objective — objective_best over the setups'
 * candidates, as chaos sweep names its best point: the cheapest that meets
 * it, ties by p95 — with the figures it won on, or that none meets it.
 */
static void best_line(FILE *fp, const struct sc_objective *o, const cJSON *setups,
		      const struct objective_candidate *c, size_t n, bool markdown)
{
	const cJSON *st = setups ? setups->child : NULL;
	size_t meets = 0;
	long best = objective_best(c, n);
	long i;

	for (i = 0; i < (long)n; i++)
		meets += c[i].meets;
	if (best < 0) {
		fputs(markdown ? "\nBest against the objective: **none** — no setup meets it.\n"
			       : "  best: none meets it\n", fp);
		return;
	}
	for (i = 0; i < best && st; i++)
		st = st->next;
	if (markdown)
		fprintf(fp, "\nBest against the objective: **%s** — ", st ? st->string : "?");
	else
		fprintf(fp, "  best: %s (", st ? st->string : "?");
	if (meets == 1)
		fputs("the only setup that meets it", fp);
	else
		fprintf(fp, "the cheapest of the %zu setups that meet it, ties by p95", meets);
	fputs(markdown ? ": cost per answered " : "; cost per answered ", fp);
	best_figure(fp, "%.4g USD", c[best].cost);
	fputs(", p95 ", fp);
	best_figure(fp, "%.0f ms", c[best].p95);
	if (strcmp(o->phase, "*") == 0)
		fputs(" over the whole run", fp);
	else
		fprintf(fp, " in phase %s", o->phase);
	fputs(markdown ? ".\n" : ")\n", fp);
}

/*
 * Which setups meet the scenario's objective (judged on the runs' means,
 * runner/objective.h), one line each, after the objective in words, then
 * the best of them (best_line).
 */
static void objective_lines(FILE *fp, const struct scenario *sc, const cJSON *summary,
			    bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const cJSON *st;
	struct objective_verdict v;
	struct objective_candidate *c;
	size_t n = 0;

	if (!sc->objective.given)
		return;
	cJSON_ArrayForEach(st, setups)
		n++;
	c = calloc(n ? n : 1, sizeof(*c));
	fputs(markdown ? "\n## Objective\n\nThe scenario's objective: " : "\nobjective: ", fp);
	objective_text(fp, &sc->objective);
	fputs(markdown ? " (judged on the runs' means).\n\n" : "\n", fp);
	n = 0;
	cJSON_ArrayForEach(st, setups) {
		struct objective_candidate one;

		objective_candidate_of(&sc->objective, st, &v, &one);
		if (c)
			c[n++] = one;
		if (markdown)
			fprintf(fp, "- **%s**: %s%s%s\n", st->string, v.meets ? "meets it" : "fails",
				v.meets ? "" : " — ", v.broken);
		else
			fprintf(fp, "  %-16s %s%s%s\n", st->string, v.meets ? "meets" : "FAILS",
				v.meets ? "" : "  ", v.broken);
	}
	if (c)
		best_line(fp, &sc->objective, setups, c, n, markdown);
	free(c);
}

/* o's string member key, or dflt when it has none. */
static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
	const char *v = json_get_string(o, key);

	return v ? v : dflt;
}

/* A row of the terminal's replica table. */
#define REPLICA_ROW "%-12s  %-12s  %12s  %-14s  %-14s  %14s  %14s\n"

/* A replicated setup's per-replica means of key ("r1/r2/r3"), into b. */
static void per_replica(struct buf *b, const cJSON *fig, const char *key, unsigned n)
{
	const cJSON *reps = cJSON_GetObjectItemCaseSensitive(fig, "replicas");
	unsigned k;

	for (k = 1; k <= n; k++) {
		char name[16];
		double v;

		snprintf(name, sizeof(name), "r%u", k);
		v = stats_mean(cJSON_GetObjectItemCaseSensitive(reps, name), key, NULL);
		if (k > 1)
			buf_puts(b, "/");
		if (isnan(v))
			buf_puts(b, "—");
		else
			buf_printf(b, "%.3g", v);
	}
}

/*
 * The replicated setups' figures (runner/replicas.h), a row per setup ×
 * phase: requests that paid the primary's timeout in all and per replica,
 * breaker transitions per replica, the spread of the replicas' first
 * openings and the overlapping recovery probes (the runs' means).
 */
static void replica_table(FILE *fp, const struct scenario *sc, const cJSON *summary,
			  bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	bool any = false;
	size_t i, p;

	for (i = 0; i < sc->nsetups; i++) {
		const struct sc_setup *st = &sc->setups[i];
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(setups, st->name), "phases");

		if (!phases || !scenario_setup_replicated(st))
			continue;
		if (!any && !markdown)
			fprintf(fp, "\nreplicas:\n" REPLICA_ROW, "setup", "phase", "timeout paid",
				"per replica", "transitions", "open spread ms", "probe overlaps");
		else if (!any)
			fputs("\n## Replicas\n\nThe setups run as gateway replicas "
				       "(the runs' means): *timeout paid*, the client requests whose "
				       "attempt at the primary waited out its per-attempt timeout "
				       "(each replica's share: loadgen's round robin by request "
				       "number); *transitions*, each replica's breaker events, local "
				       "and remote; *open spread*, from the first replica's first "
				       "opening to the last one's; *probe overlaps*, pairs of "
				       "replicas half-open by their own change at once.\n\n"
				       "| setup | phase | timeout paid | per replica | transitions | "
				       "open spread ms | probe overlaps |\n"
				       "|---|---|---:|---:|---:|---:|---:|\n", fp);
		any = true;
		for (p = 0; p < sc->nphases; p++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases,
									    sc->phases[p].name);
			struct buf paid = { 0 };
			struct buf trans = { 0 };
			struct buf total = { 0 };
			struct buf spread = { 0 };
			struct buf over = { 0 };

			per_replica(&paid, fig, "timeout_paid", st->replicas);
			per_replica(&trans, fig, "transitions", st->replicas);
			put(&total, stats_mean(fig, "timeout_paid", NULL), "%.4g");
			put(&spread, stats_mean(fig, "replica_open_spread_ms", NULL), "%.1f");
			put(&over, stats_mean(fig, "probe_overlaps", NULL), "%.3g");
			if (markdown)
				fprintf(fp, "| %s | %s | %s | %s | %s | %s | %s |\n", st->name,
					sc->phases[p].name, total.data, paid.data, trans.data,
					spread.data, over.data);
			else
				fprintf(fp, REPLICA_ROW, st->name,
					sc->phases[p].name, total.data, paid.data, trans.data,
					spread.data, over.data);
			buf_free(&paid);
			buf_free(&trans);
			buf_free(&total);
			buf_free(&spread);
			buf_free(&over);
		}
	}
}

/*
 * On the terminal, each replicated setup's combined breaker timeline (its
 * first run's: report.md's Breaker transitions has every run's): every
 * replica's events by time, each tagged with its replica, a remote one
 * with the replica it followed.
 */
static void replica_timeline(FILE *fp, const struct scenario *sc, const cJSON *summary)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	size_t i;

	for (i = 0; i < sc->nsetups; i++) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(setups, sc->setups[i].name);
		const cJSON *run = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(st, "breaker_transitions"), 0);
		const cJSON *ev;

		if (!st || !scenario_setup_replicated(&sc->setups[i]) || !cJSON_GetArraySize(run))
			continue;
		fprintf(fp, "\nbreaker timeline, %s (run 1, every replica):\n", sc->setups[i].name);
		cJSON_ArrayForEach(ev, run) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "t_ms");
			const char *peer = json_get_string(ev, "peer");

			fprintf(fp, "  %9.3f s  %-4s %s %s -> %s  %s%s%s%s\n",
				cJSON_IsNumber(t) ? t->valuedouble / 1000 : NAN,
				str_or(ev, "replica", "-"), str_or(ev, "provider", "?"),
				str_or(ev, "from", "?"), str_or(ev, "to", "?"),
				str_or(ev, "reason", ""), peer ? "  (remote, from " : "",
				peer ? peer : "", peer ? ")" : "");
		}
	}
}

/* A count of the runs' means: whole, or with one decimal. */
static void count_text(struct buf *b, double v)
{
	put(b, v, isnan(v) || v == floor(v) ? "%.0f" : "%.1f");
}

/*
 * Under the phase table, a line per setup × phase whose providers' rows
 * were joined to client requests by timing or not at all (the runs'
 * means of "join"): how many by id, by timing, not at all — saying when
 * a join was impossible. Nothing when every row joined by id.
 */
static void join_notes(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const cJSON *st;
	bool any = false;
	size_t i;

	cJSON_ArrayForEach(st, setups) {
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(st, "phases");

		for (i = 0; i < sc->nphases; i++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases, sc->phases[i].name);
			const cJSON *join = cJSON_GetObjectItemCaseSensitive(fig, "join");
			double by_id = stats_mean(join, "by_id", NULL);
			double by_timing = stats_mean(join, "by_timing", NULL);
			double unjoined = stats_mean(join, "unjoined", NULL);
			struct buf t = { 0 };

			if (!(by_timing > 0) && !(unjoined > 0))
				continue;
			if (!any)
				fputs(markdown ? "\nThe providers' rows (`mock-NAME.csv`) of these setups "
					       "× phases were joined to client requests by timing — no "
					       "request id to go by: an estimate under concurrency — or "
					       "not at all (the runs' means; *Attribution* below):\n\n"
					     : "\njoin (the providers' rows to client requests):\n", fp);
			any = true;
			count_text(&t, by_id);
			buf_puts(&t, " by id, ");
			count_text(&t, by_timing);
			buf_puts(&t, " by timing, ");
			count_text(&t, unjoined);
			buf_puts(&t, " not at all");
			if (unjoined > 0)
				buf_puts(&t, " (a join was impossible: no client request was open "
					     "when they arrived)");
			fprintf(fp, markdown ? "- **%s**, %s: %s\n" : "  %s %s: %s\n", st->string,
				sc->phases[i].name, t.data);
			buf_free(&t);
		}
	}
}

void report_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	print_table(fp, sc, summary, markdown, phase_cols, NELEM(phase_cols), false, NULL);
	join_notes(fp, sc, summary, markdown);
	print_table(fp, sc, summary, markdown, stream_cols, NELEM(stream_cols), true,
		    markdown ? "\n## Streams\n\nThe setups × phases that had streaming requests, "
			       "those alone: *silent breaks* are the stalls and truncations that "
			       "came with no error event — silence, or a cut with no word from "
			       "the server; TTFT is over answered streams, from the answering "
			       "attempt's send; *max gap* is the longest silence any stream "
			       "saw.\n\n" : "\nstreams:\n");
	received_table(fp, sc, summary, markdown);
	replica_table(fp, sc, summary, markdown);
	if (!markdown)		/* report.md has every run's, with the others' (transitions_md) */
		replica_timeline(fp, sc, summary);
	detect_table(fp, sc, summary, markdown);
	traps_report(fp, sc, summary, markdown);
	objective_lines(fp, sc, summary, markdown);
}

/* ---- report.md ---- */

/* The scenario's setup called name, or NULL. */
static const struct sc_setup *setup_named(const struct scenario *sc, const char *name)
{
	size_t i;

	for (i = 0; i < sc->nsetups; i++) {
		if (strcmp(sc->setups[i].name, name) == 0)
			return &sc->setups[i];
	}
	return NULL;
}

/*
 * Every breaker state change of every run of the gateway setups, as one
 * markdown table: t in s after the run's t0, provider, model, from → to,
 * reason.
 */
static void transitions_md(FILE *fp, const struct scenario *sc, const cJSON *setups)
{
	const cJSON *st;
	bool any = false;
	bool replicas = false;
	size_t i;

	for (i = 0; i < sc->nsetups; i++)
		replicas = replicas || scenario_setup_replicated(&sc->setups[i]);
	cJSON_ArrayForEach(st, setups) {
		const struct sc_setup *def = setup_named(sc, st->string);
		const cJSON *runs = cJSON_GetObjectItemCaseSensitive(st, "breaker_transitions");
		const cJSON *run;
		int k = 0;

		if (!def || def->kind != SC_GATEWAY)
			continue;
		cJSON_ArrayForEach(run, runs) {
			const cJSON *ev;

			k++;
			cJSON_ArrayForEach(ev, run) {
				const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "t_ms");

				if (!any && !replicas)
					fputs("\n## Breaker transitions\n\nEvery state change of the "
					      "gateway setups' breakers (each run's `events.jsonl`), "
					      "in seconds after the run's t0.\n\n| setup | run | t (s) "
					      "| provider | model | change | reason |\n"
					      "|---|---:|---:|---|---|---|---|\n", fp);
				else if (!any)
					fputs("\n## Breaker transitions\n\nEvery state change of the "
					      "gateway setups' breakers (each run's `events.jsonl`, or "
					      "every replica's `events-rK.jsonl` merged by time), in "
					      "seconds after the run's t0; *replica* is the one that "
					      "wrote the line, and for a change it followed from "
					      "another (shared state) `remote` and that replica.\n\n"
					      "| setup | run | t (s) | replica | provider | model | "
					      "change | reason |\n"
					      "|---|---:|---:|---|---|---|---|---|\n", fp);
				any = true;
				fprintf(fp, "| %s | %d | %.3f | ", st->string, k,
					cJSON_IsNumber(t) ? t->valuedouble / 1000 : NAN);
				if (replicas && json_get_string(ev, "peer"))
					fprintf(fp, "%s (%s, from %s) | ", str_or(ev, "replica", "—"),
						str_or(ev, "origin", "remote"),
						str_or(ev, "peer", "?"));
				else if (replicas)
					fprintf(fp, "%s | ", str_or(ev, "replica", "—"));
				fprintf(fp, "%s | %s | %s → %s | %s |\n",
					str_or(ev, "provider", "?"), str_or(ev, "model", "—"),
					str_or(ev, "from", "?"), str_or(ev, "to", "?"),
					str_or(ev, "reason", ""));
			}
		}
	}
}

/* A source label of the summary ("mock_log+loadgen_refused") in words, into b. */
static void source_words(struct buf *b, const cJSON *fig, const char *key)
{
	const char *v = json_get_string(fig, key);
	const char *p;

	if (!v) {
		buf_puts(b, "—");
		return;
	}
	for (p = v; *p; p++) {
		if (*p == '+')
			buf_puts(b, " + ");
		else
			buf_printf(b, "%c", *p == '_' ? ' ' : *p);
	}
}

/*
 * The Attribution section: per setup × phase, figures that need no
 * cooperation from the gateway and where each came from — the fallback
 * share and its source, upstream requests per client request with the
 * refused ones and the source, the duplicate share, the primary's
 * requests and stop_ms beside the breaker's opening, and how the
 * providers' rows were joined (the runs' means).
 */
static void attribution_md(FILE *fp, const struct scenario *sc, const cJSON *setups)
{
	const cJSON *st;
	size_t i;

	fputs("\n## Attribution\n\nFigures every setup has, from the providers' own logs "
	      "(`mock-NAME.csv`) joined to the client's requests (`requests.csv`) by request "
	      "id, else by timing, so another gateway that sends none of our headers gets "
	      "them too (the runs' means): *fallback* and where each answer's provider came "
	      "from (the gateway's provider header, authoritative, else the answering row in "
	      "the mock logs); *upstream/req*, upstream requests per client request, with the "
	      "*refused* connections no provider could log (loadgen's sends, or the gateway's "
	      "attempts, less the rows logged) and the source; *dup. share*, the upstream "
	      "rows whose work was thrown away; the primary's *requests* in the phase and "
	      "*stop ms*, from the phase's start to the last request it got before a silence "
	      "of 1 s (scaled) with none arriving or in progress (— it never stopped), beside "
	      "the breaker's *open after ms* (our gateway's alone); *joined*, the providers' "
	      "rows by id / by timing / not at all.\n\n"
	      "| setup | phase | fallback | from | upstream/req | refused | upstream from | "
	      "dup. share | primary requests | stop ms | open after ms | joined |\n"
	      "|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|\n", fp);
	cJSON_ArrayForEach(st, setups) {
		const cJSON *phases = cJSON_GetObjectItemCaseSensitive(st, "phases");

		for (i = 0; i < sc->nphases; i++) {
			const cJSON *fig = cJSON_GetObjectItemCaseSensitive(phases, sc->phases[i].name);
			const cJSON *join = cJSON_GetObjectItemCaseSensitive(fig, "join");
			struct buf t = { 0 };

			buf_printf(&t, "| %s | %s | ", st->string, sc->phases[i].name);
			put(&t, 100 * stats_mean(fig, "fallback_share", NULL), "%.1f%%");
			buf_puts(&t, " | ");
			source_words(&t, fig, "fallback_source");
			buf_puts(&t, " | ");
			put(&t, stats_mean(fig, "attempts_per_request", NULL), "%.3f");
			buf_puts(&t, " | ");
			count_text(&t, stats_mean(fig, "upstream_refused", NULL));
			buf_puts(&t, " | ");
			source_words(&t, fig, "upstream_source");
			buf_puts(&t, " | ");
			put(&t, 100 * stats_mean(fig, "duplicate_share", NULL), "%.1f%%");
			buf_puts(&t, " | ");
			count_text(&t, stats_mean(fig, "primary_requests", NULL));
			buf_puts(&t, " | ");
			put(&t, stats_mean(fig, "stop_ms", NULL), "%.0f");
			buf_puts(&t, " | ");
			put(&t, stats_mean(fig, "time_to_open_ms", NULL), "%.0f");
			buf_puts(&t, " | ");
			count_text(&t, stats_mean(join, "by_id", NULL));
			buf_puts(&t, " / ");
			count_text(&t, stats_mean(join, "by_timing", NULL));
			buf_puts(&t, " / ");
			count_text(&t, stats_mean(join, "unjoined", NULL));
			buf_puts(&t, " |\n");
			if (t.data)
				fputs(t.data, fp);
			buf_free(&t);
		}
	}
}

/* The first setup of kind direct that the summary has, or NULL. */
static const cJSON *direct_setup(const struct scenario *sc, const cJSON *setups,
				 const char **name)
{
	size_t i;

	for (i = 0; i < sc->nsetups; i++) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(setups, sc->setups[i].name);

		if (sc->setups[i].kind == SC_DIRECT && st) {
			*name = sc->setups[i].name;
			return st;
		}
	}
	return NULL;
}

static void cost_cell(FILE *fp, double v, const char *fmt)
{
	fputs(" | ", fp);
	if (isnan(v))
		fputs("—", fp);
	else
		fprintf(fp, fmt, v);
}

/* One row per setup, one column per key of the totals' cost_usd[by] maps. */
static void cost_map_md(FILE *fp, const cJSON *setups, const char *by, const char *what)
{
	cJSON *keys = cJSON_CreateObject();
	const cJSON *st;
	const cJSON *k;

	cJSON_ArrayForEach(st, setups) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(st, "totals"), "cost_usd"), by);

		cJSON_ArrayForEach(k, m) {
			if (!cJSON_GetObjectItemCaseSensitive(keys, k->string))
				cJSON_AddNullToObject(keys, k->string);
		}
	}
	if (keys && keys->child) {
		fprintf(fp, "\n### Cost by %s (USD)\n\n| setup", what);
		cJSON_ArrayForEach(k, keys)
			fprintf(fp, " | %s", k->string[0] ? k->string : "(none)");
		fputs(" |\n|---", fp);
		cJSON_ArrayForEach(k, keys)
			fputs("|---:", fp);
		fputs("|\n", fp);
		cJSON_ArrayForEach(st, setups) {
			const cJSON *cost = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(st, "totals"), "cost_usd");

			fprintf(fp, "| %s", st->string);
			cJSON_ArrayForEach(k, keys)
				cost_cell(fp, stats_mean(cJSON_GetObjectItemCaseSensitive(cost, by),
							 k->string, NULL), "%.6f");
			fputs(" |\n", fp);
		}
	}
	cJSON_Delete(keys);
}

/*
 * The cost section: per setup over the whole run, the total, the cost per
 * answered request and its overhead over the first direct setup's; then
 * by tenant and by feature. Nothing when no setup had a cost.
 */
static void cost_md(FILE *fp, const struct scenario *sc, const cJSON *setups)
{
	const char *dname = NULL;
	const cJSON *direct = direct_setup(sc, setups, &dname);
	double dcpa = direct ? stats_mean(cJSON_GetObjectItemCaseSensitive(direct, "totals"),
					  "cost_per_answered", NULL) : NAN;
	const cJSON *st;
	bool any = false;

	cJSON_ArrayForEach(st, setups)
		any = any || !isnan(stats_mean(cJSON_GetObjectItemCaseSensitive(st, "totals"),
					       "cost_usd", "total"));
	if (!any)
		return;
	fprintf(fp, "\n## Cost\n\nOver the whole run (the runs' means): what every request "
		"cost (the gateway's `x-faultline-cost-usd`, or the tokens at the scenario's "
		"`prices`), per answered request, and that against %s%s%s.\n\n"
		"| setup | cost USD | per answered USD | overhead |\n|---|---:|---:|---:|\n",
		dname ? "the direct setup `" : "a direct setup (there is none)",
		dname ? dname : "", dname ? "`" : "");
	cJSON_ArrayForEach(st, setups) {
		const cJSON *tot = cJSON_GetObjectItemCaseSensitive(st, "totals");
		double cpa = stats_mean(tot, "cost_per_answered", NULL);
		double over;

		fprintf(fp, "| %s", st->string);
		cost_cell(fp, stats_mean(tot, "cost_usd", "total"), "%.6f");
		cost_cell(fp, cpa, "%.8f");
		over = dcpa > 0 ? 100 * (cpa / dcpa - 1) : NAN;
		cost_cell(fp, fabs(over) < 0.05 ? 0 : over, "%+.1f%%");	/* no "-0.0%" */
		fputs(" |\n", fp);
	}
	cost_map_md(fp, setups, "by_tenant", "tenant");
	cost_map_md(fp, setups, "by_feature", "feature");
}

int report_write(const char *stamp_dir, const struct scenario *sc, const cJSON *summary,
		 char *err)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	const cJSON *repeat = cJSON_GetObjectItemCaseSensitive(summary, "repeat");
	struct buf path = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *fp;
	size_t i;
	int rc = 0;

	if (buf_printf(&path, "%s/" REC_REPORT, stamp_dir)) {
		rc = -ENOMEM;
		goto out_oom;
	}
	/* Made in memory, where only memory can run out, then written in one go. */
	fp = open_memstream(&text, &len);
	if (!fp) {
		rc = -errno;
		goto out_oom;
	}
	fprintf(fp, "# %s\n\n%s\n\n", sc->name, sc->description[0] ? sc->description : "");
	fprintf(fp, "Time scale %g (the timeline ran %.1f s), %d run%s per setup. Phases: ",
		sc->scale, sc->duration_ms / 1000, cJSON_IsNumber(repeat) ? repeat->valueint : 1,
		cJSON_IsNumber(repeat) && repeat->valueint == 1 ? "" : "s");
	for (i = 0; i < sc->nphases; i++)
		fprintf(fp, "%s%s %.1f–%.1f s", i ? ", " : "", sc->phases[i].name,
			sc->phases[i].from_ms / 1000, sc->phases[i].to_ms / 1000);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(summary, "simulated")))
		fputs(".\n\n**Simulated** (`chaos sim`): virtual time, the providers, network and "
		      "load modelled, the gateway's own decision code; hold it to a real run with "
		      "`chaos compare`", fp);
	fputs(".\n\nEvery figure comes from the runs' per-request files (`SETUP/run-K/`); with "
	      "several runs, the mean (`summary.json` has the spread). Latency is over answered "
	      "requests, from the intended send time; *fallback* is the share of answers that "
	      "came from a provider other than the setup's primary (named by the gateway's header, "
	      "else found in the providers' logs: *Attribution*); *open after* (the breaker's "
	      "first opening), *stop* (the primary's last request before it got none for 1 s, "
	      "scaled: every setup's) and *primary after* are measured from the phase's "
	      "start.\n\n## Phases\n\n", fp);
	report_table(fp, sc, summary, true);
	attribution_md(fp, sc, setups);
	cost_md(fp, sc, setups);
	transitions_md(fp, sc, setups);
	if (ferror(fp))
		rc = -ENOMEM;
	if (fclose(fp) && !rc)
		rc = -ENOMEM;
	if (rc)
		goto out_oom;
	rc = outfile_write(path.data, text, len, err, CFG_ERR_LEN);
	goto out_free;
out_oom:
	snprintf(err, CFG_ERR_LEN, "cannot write %s/" REC_REPORT ": %s", stamp_dir, strerror(-rc));
out_free:
	free(text);
	buf_free(&path);
	return rc;
}

/* ---- chaos report ---- */

static double json_num(const cJSON *root, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/*
 * One setup's run K under the stamp (SETUP/run-K): its summary recomputed
 * and written, into *sum (the caller's). Returns 0, with *sum NULL when
 * there is no run K; else report_command's exit status, 1 (a file that
 * cannot be written) or 2, said on stderr.
 */
static int resummarise_run(const struct scenario *sc, const struct sc_setup *st,
			   const char *stamp_dir, unsigned k, cJSON **sum)
{
	char err[CFG_ERR_LEN];
	char *run_dir = stamp_run_dir_alloc(stamp_dir, st->name, k);
	char *lg_path = NULL;
	char *sum_path = NULL;
	cJSON *lg;
	double t0;
	int rc = 2;

	*sum = NULL;
	if (run_dir) {
		lg_path = stamp_path_alloc(run_dir, REC_LOADGEN_SUMMARY);
		sum_path = stamp_path_alloc(run_dir, REC_SUMMARY);
	}
	if (!run_dir || !lg_path || !sum_path) {
		fprintf(stderr, "chaos: %s: out of memory\n", stamp_dir);
		goto out;
	}
	if (access(run_dir, F_OK) != 0) {
		rc = 0;
		goto out;
	}
	lg = json_load_file(lg_path, err, sizeof(err));
	t0 = json_num(lg, "t0_unix_ms");
	cJSON_Delete(lg);
	if (isnan(t0)) {
		fprintf(stderr, "chaos: %s: no t0_unix_ms\n", lg_path);
		goto out;
	}
	if (report_summarise_run(sc, st, run_dir, k, (int64_t)t0, sum, NULL, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		goto out;
	}
	if (outfile_write_json(sum_path, *sum, err, sizeof(err))) {
		fprintf(stderr, "chaos: %s\n", err);
		cJSON_Delete(*sum);
		*sum = NULL;
		rc = 1;
		goto out;
	}
	rc = 0;
out:
	free(sum_path);
	free(lg_path);
	free(run_dir);
	return rc;
}

int report_command(const char *stamp_dir, FILE *out)
{
	char *path = NULL;
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

	memset(&sc, 0, sizeof(sc));
	path = stamp_path_alloc(stamp_dir, REC_SCENARIO);
	if (!path) {
		fprintf(stderr, "chaos: %s: out of memory\n", stamp_dir);
		goto out;
	}
	if (strlen(path) >= PATH_MAX) {
		fprintf(stderr, "chaos: %s is too long: its files would have paths of %zu bytes "
			"and more, and the system takes at most %d\n", stamp_dir, strlen(path),
			PATH_MAX - 1);
		goto out;
	}
	if (scenario_load(path, 1, &probe, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		goto out;
	}
	scale = stamp_scale(stamp_dir, &probe);
	scenario_free(&probe);
	if (isnan(scale)) {
		fprintf(stderr, "chaos: %s: no summary.json says the time scale it ran at\n",
			stamp_dir);
		goto out;
	}
	if (scenario_load(path, scale, &sc, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		goto out;
	}
	top = cJSON_CreateObject();
	cJSON_AddStringToObject(top, "scenario", sc.name);
	cJSON_AddNumberToObject(top, "time_scale", sc.scale);
	if (stamp_simulated(stamp_dir, &sc))
		cJSON_AddTrueToObject(top, "simulated");
	setups = cJSON_AddObjectToObject(top, "setups");
	for (i = 0; i < sc.nsetups; i++) {
		const struct sc_setup *st = &sc.setups[i];
		size_t n = 0;

		for (k = 1;; k++) {
			cJSON *sum;
			cJSON **more;
			int run_rc = resummarise_run(&sc, st, stamp_dir, k, &sum);

			if (run_rc) {
				rc = run_rc;
				goto out;
			}
			if (!sum)
				break;		/* no run K: the setup's runs are done */
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
	free(path);
	path = stamp_path_alloc(stamp_dir, REC_SUMMARY);
	if (!path) {
		fprintf(stderr, "chaos: %s: out of memory\n", stamp_dir);
		goto out;
	}
	if (outfile_write_json(path, top, err, sizeof(err)) ||
	    report_write(stamp_dir, &sc, top, err)) {
		fprintf(stderr, "chaos: %s\n", err);
		rc = 1;
		goto out;
	}
	report_table(out, &sc, top, false);
	fprintf(out, "report: %s/" REC_REPORT "\n", stamp_dir);
	rc = 0;
out:
	free(runs);
	cJSON_Delete(top);
	scenario_free(&sc);
	free(path);
	return rc;
}
