/*
 * traps: the report's Contracts, Degraded answers, Cost of failover,
 * Breaker opens and Correlated failures sections (runner/traps.h).
 */
#include "runner/traps.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "runner/correlated.h"
#include "runner/stats.h"
#include "runner/table.h"

#define CELL 96

/* v with fmt into out, or "—" when it has no value. */
static void fmt_cell(char *out, double v, const char *fmt)
{
	if (isnan(v))
		snprintf(out, CELL, "—");
	else
		snprintf(out, CELL, fmt, v);
}

/* A count (a mean of counts: one decimal when not whole), or "—". */
static void count_cell(char *out, double v)
{
	fmt_cell(out, v, isnan(v) || v == floor(v) ? "%.0f" : "%.1f");
}

/*
 * Prints t, whose first row is the header: a markdown table (the columns
 * whose bit is set in right aligned right), or aligned plain columns.
 */
static void emit(FILE *fp, const struct table *t, bool markdown, unsigned right)
{
	if (markdown)
		table_print_markdown(fp, t, right);
	else
		table_print(fp, t, right);
}

/* The combined figures of a setup's phase, or NULL. */
static const cJSON *phase_fig(const cJSON *summary, const char *setup, const char *phase)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			summary, "setups"), setup), "phases"), phase);
}

/* Whether some setup × phase has fig[key][sub] with a mean above 0. */
static bool any_above_zero(const struct scenario *sc, const cJSON *summary, const char *key,
			   const char *sub)
{
	size_t s, p;

	for (s = 0; s < sc->nsetups; s++) {
		for (p = 0; p < sc->nphases; p++) {
			const cJSON *fig = phase_fig(summary, sc->setups[s].name,
						     sc->phases[p].name);

			if (stats_mean(fig, key, sub) > 0)
				return true;
		}
	}
	return false;
}

/* ---- Contracts ---- */

/* Whether some stream of the load asks for a response_format. */
static bool load_asks_format(const struct scenario *sc)
{
	const cJSON *st;

	cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(sc->load.mix, "streams")) {
		if (cJSON_GetObjectItemCaseSensitive(st, "response_format"))
			return true;
	}
	return false;
}

/* "secondary 12, third 0.5": the providers that broke it (means), or "0". */
static void violations_cell(struct buf *b, const cJSON *fig)
{
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(fig, "contract"), "by_provider");
	const cJSON *p;
	char n[CELL];

	cJSON_ArrayForEach(p, by) {
		double v = stats_mean(p, "violations", NULL);

		if (!(v > 0))
			continue;
		count_cell(n, v);
		buf_printf(b, "%s%s %s", b->len ? ", " : "", p->string, n);
	}
	if (!b->len)
		buf_puts(b, fig ? "0" : "—");
}

static void contracts(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	static const char *const head[] = { "setup", "phase", "violations", "caught", "gateway",
					    "reached clients" };
	struct table t = { .ncols = 6 };
	size_t s, p;

	if (!load_asks_format(sc) && !any_above_zero(sc, summary, "contract", "violations"))
		return;
	table_add(&t, head);
	for (s = 0; s < sc->nsetups; s++) {
		for (p = 0; p < sc->nphases; p++) {
			const cJSON *fig = phase_fig(summary, sc->setups[s].name,
						     sc->phases[p].name);
			double reached = stats_mean(fig, "contract", "reached_clients");
			double ok = stats_mean(fig, "ok", NULL);
			struct buf v = { 0 };
			char caught[CELL], gw[CELL], rc[CELL], share[2 * CELL];
			const char *row[6];

			if (!fig)
				continue;
			violations_cell(&v, fig);
			count_cell(caught, stats_mean(fig, "contract", "caught"));
			count_cell(gw, stats_mean(fig, "contract", "gateway_violations"));
			count_cell(rc, reached);
			if (reached > 0 && ok > 0) {
				snprintf(share, sizeof(share), "%s (%.1f%% of answers)", rc,
					 100 * reached / ok);
				snprintf(rc, sizeof(rc), "%.*s", CELL - 1, share);
			}
			row[0] = sc->setups[s].name;
			row[1] = sc->phases[p].name;
			row[2] = v.data ? v.data : "";
			row[3] = caught;
			row[4] = gw;
			row[5] = rc;
			table_add(&t, row);
			buf_free(&v);
		}
	}
	fputs(markdown ? "\n## Contracts\n\nAnswers that came back whole and well formed but "
		       "broke the request's `response_format` (mockprov's `bad_content`; the "
		       "runs' means): *violations*, the providers' broken answers to the "
		       "phase's requests; *caught*, those the client never got (the gateway "
		       "tried the next target); *gateway*, the violations the gateway logged "
		       "(`contract_violation` lines in `events.jsonl`; — when it logged none "
		       "in the run); *reached clients*, the broken answers the client got, "
		       "counted as answered.\n\n" : "\ncontracts:\n", fp);
	emit(fp, &t, markdown, 0x38);
	table_free(&t);
}

/* ---- Degraded answers ---- */

/* Whether a gateway setup's config gives some alias a degraded mode other than "error". */
static bool configures_degraded(const struct scenario *sc)
{
	size_t s;

	for (s = 0; s < sc->nsetups; s++) {
		const cJSON *m;

		if (sc->setups[s].kind != SC_GATEWAY)
			continue;
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(sc->setups[s].config,
									 "models")) {
			const char *mode = json_get_string(
				cJSON_GetObjectItemCaseSensitive(m, "degraded"), "mode");

			if (mode && strcmp(mode, "error") != 0)
				return true;
		}
	}
	return false;
}

static void degraded(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	static const char *const head[] = { "setup", "phase", "requests", "cache", "static",
					    "errors", "error p99 ms", "error max ms" };
	struct table t = { .ncols = 8 };
	size_t s, p;

	if (!configures_degraded(sc) && !any_above_zero(sc, summary, "degraded_answers", NULL))
		return;
	table_add(&t, head);
	for (s = 0; s < sc->nsetups; s++) {
		for (p = 0; p < sc->nphases; p++) {
			const cJSON *fig = phase_fig(summary, sc->setups[s].name,
						     sc->phases[p].name);
			char c[6][CELL];
			const char *row[8];
			size_t i;

			if (!fig)
				continue;
			count_cell(c[0], stats_mean(fig, "requests", NULL));
			count_cell(c[1], stats_mean(fig, "degraded", "cache"));
			count_cell(c[2], stats_mean(fig, "degraded", "static"));
			count_cell(c[3], stats_mean(fig, "requests", NULL) -
					 stats_mean(fig, "ok", NULL));
			fmt_cell(c[4], stats_mean(fig, "error_latency_ms", "p99"), "%.1f");
			fmt_cell(c[5], stats_mean(fig, "error_latency_ms", "max"), "%.1f");
			row[0] = sc->setups[s].name;
			row[1] = sc->phases[p].name;
			for (i = 0; i < 6; i++)
				row[i + 2] = c[i];
			table_add(&t, row);
		}
	}
	fputs(markdown ? "\n## Degraded answers\n\nWhat the gateway answered when nothing "
		       "healthy could (the runs' means): *cache*, the last good answer to the "
		       "same request, and *static*, the alias's fixed completion "
		       "(`x-faultline-degraded`; answered, and never billed); *errors*, the "
		       "requests not answered, and how long the slowest of them waited "
		       "(from the intended send) — a fast error is the honest one.\n\n"
		       : "\ndegraded answers:\n", fp);
	emit(fp, &t, markdown, 0xfc);
	table_free(&t);
}

/* ---- Cost of failover ---- */

static void cost(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	static const char *const head[] = { "setup", "phase", "cost USD", "fallback spend USD",
					    "transitions", "per answered USD", "vs first phase" };
	struct table t = { .ncols = 7 };
	size_t s, p;

	if (!sc->nphases || !any_above_zero(sc, summary, "cost_usd", "total"))
		return;
	table_add(&t, head);
	for (s = 0; s < sc->nsetups; s++) {
		const char *name = sc->setups[s].name;
		double base = stats_mean(phase_fig(summary, name, sc->phases[0].name),
					 "cost_per_answered", NULL);

		for (p = 0; p < sc->nphases; p++) {
			const cJSON *fig = phase_fig(summary, name, sc->phases[p].name);
			double cpa = stats_mean(fig, "cost_per_answered", NULL);
			double rel = p && base > 0 ? 100 * (cpa / base - 1) : NAN;
			char c[5][CELL];
			const char *row[7];
			size_t i;

			if (!fig)
				continue;
			fmt_cell(c[0], stats_mean(fig, "cost_usd", "total"), "%.6f");
			fmt_cell(c[1], stats_mean(fig, "fallback_spend_usd", NULL), "%.6f");
			count_cell(c[2], stats_mean(fig, "transitions", NULL));
			fmt_cell(c[3], cpa, "%.8f");
			fmt_cell(c[4], fabs(rel) < 0.5 ? 0.0 : rel, "%+.0f%%");	/* no "-0%" */
			row[0] = name;
			row[1] = sc->phases[p].name;
			for (i = 0; i < 5; i++)
				row[i + 2] = c[i];
			table_add(&t, row);
		}
	}
	if (markdown)
		fprintf(fp, "\n## Cost of failover\n\nWhat each phase cost (the runs' means): "
			"*fallback spend*, the cost of the answers that came from a provider "
			"other than the setup's primary; *transitions*, the breaker's state "
			"changes; the cost per answered request, and that against the first "
			"phase's (`%s`, the scenario's healthy baseline).\n\n",
			sc->phases[0].name);
	else
		fprintf(fp, "\ncost of failover (vs first phase: against %s):\n",
			sc->phases[0].name);
	emit(fp, &t, markdown, 0x7c);
	table_free(&t);
}

/* ---- Breaker opens ---- */

static void opens(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	double minutes = sc->duration_ms / sc->scale / 60000;
	bool any = false;
	size_t s;

	for (s = 0; s < sc->nsetups; s++) {
		const cJSON *tot = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(summary, "setups"), sc->setups[s].name),
			"totals");
		double n = stats_mean(tot, "opens", NULL);
		double fb = stats_mean(tot, "fallback_share", NULL);
		char count[CELL], trans[CELL], share[CELL];

		if (sc->setups[s].kind != SC_GATEWAY || !cJSON_IsObject(tot))
			continue;
		if (!any)
			fputs(markdown ? "\n## Breaker opens\n\nHow often each gateway setup's "
				       "breakers opened over the run — a minute being one of the "
				       "scenario's timeline, unscaled — and how much of the traffic "
				       "that pushed to the fallback (the runs' means): a breaker that "
				       "opens on a healthy day opens for nothing.\n\n"
				       : "\nbreaker opens:\n", fp);
		any = true;
		count_cell(count, n);
		count_cell(trans, stats_mean(tot, "transitions", NULL));
		fmt_cell(share, 100 * fb, "%.1f%%");
		fprintf(fp, markdown ? "- **%s**: %s opening%s (%s transition%s), %.2f a minute; "
				       "%s of answers from a fallback provider.\n"
				     : "  %s: %s opening%s (%s transition%s), %.2f a minute; %s of "
				       "answers from a fallback provider\n",
			sc->setups[s].name, count, n == 1 ? "" : "s", trans,
			strcmp(trans, "1") == 0 ? "" : "s",
			minutes > 0 && !isnan(n) ? n / minutes : 0.0, share);
	}
}

void traps_report(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	correlated_report(fp, sc, summary, markdown);
	contracts(fp, sc, summary, markdown);
	degraded(fp, sc, summary, markdown);
	cost(fp, sc, summary, markdown);
	opens(fp, sc, summary, markdown);
}
