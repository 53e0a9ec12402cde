/*
 * detect: the detection study's prediction and its table; see detect.h.
 * The formulas are docs/chaos.md's "Detection".
 */
#include "runner/detect.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/config.h"
#include "mockprov/config.h"
#include "runner/stats.h"

/* ---- the formulas (pure) ---- */

double detect_trials_to_run(double p, unsigned k)
{
	double pk;

	if (k == 0)
		return 0;
	if (p >= 1)
		return k;
	if (!(p > 0))
		return INFINITY;
	pk = pow(p, k);
	return (1 - pk) / ((1 - p) * pk);
}

static struct detect_value value(double ms)
{
	return (struct detect_value){ ms, DETECT_HAS_VALUE };
}

static struct detect_value none(enum detect_none why)
{
	return (struct detect_value){ NAN, why };
}

/*
 * How long after its arrival a request that meets the fault fails, as
 * the gateway sees it: refused at once, a hang at the attempt's time cap
 * (a stream's first-token cap when smaller), a 5xx when it is answered,
 * slow tokens at the cap when the slow answer outlasts it (else never:
 * the answers are slow but whole), a stall after the commit the stall
 * timeout after the last token, whatever the attempt's timeout. NAN with *why set when there is none.
 */
static double failure_latency(const struct detect_passive *pa, const struct detect_fault *f,
			      enum detect_none *why)
{
	double cap = pa->timeout_ms;

	if (f->streaming && pa->first_token_timeout_ms < cap)
		cap = pa->first_token_timeout_ms;
	*why = DETECT_HAS_VALUE;
	switch (f->kind) {
	case DETECT_REFUSED:
		return 0;
	case DETECT_HANG:
		return cap;
	case DETECT_ERROR_STATUS:
		return fmin(f->answer_ms, cap);
	case DETECT_SLOW_TOKENS:
		if (f->streaming)
			break;		/* a slow stream fails only by its gaps: not modelled */
		if (f->answer_ms > pa->timeout_ms)
			return pa->timeout_ms;
		*why = DETECT_NEVER;
		return NAN;
	case DETECT_STALL:
		if (!f->streaming)
			return pa->timeout_ms;	/* a plain answer that never comes */
		if (!f->committed)
			return cap;
		/* Committed, the stream is the stall timer's: the attempt's
		 * timeout no longer cuts it (measured: detect-stall). */
		return f->answer_ms + pa->stall_timeout_ms;
	default:
		break;
	}
	*why = DETECT_UNMODELLED;
	return NAN;
}

/*
 * Passive: the threshold-th failure in a row is recorded L after its
 * request arrived, and requests arrive every 1000 / rate ms; with a share
 * p of them failing it takes detect_trials_to_run(p, threshold) requests
 * on average, so T = L + (trials − 1) × inter-arrival.
 */
static struct detect_value passive(const struct detect_passive *pa, const struct detect_fault *f,
				   double rate_per_s)
{
	enum detect_none why;
	double l;

	if (!pa->on)
		return none(DETECT_OFF);
	l = failure_latency(pa, f, &why);
	if (why != DETECT_HAS_VALUE)
		return none(why);
	if (!(rate_per_s > 0))
		return none(DETECT_UNMODELLED);
	return value(l + (detect_trials_to_run(f->probability, pa->threshold) - 1) * 1000.0 /
		     rate_per_s);
}

/*
 * Active: the first check after the fault starts comes on average half an
 * interval later (the fault starts anywhere in the cycle); each failing
 * check takes its failure time Lc (0 refused or a 5xx, the check timeout
 * for a hang) and the next one starts an interval after it ends, so fall
 * checks failing in a row take I/2 + (n − 1)(I + Lc) + Lc, n being
 * detect_trials_to_run(p, fall). GET /models checks do not see token
 * faults; a completion check's view of them is not modelled.
 */
static struct detect_value active(const struct detect_active *ac, const struct detect_fault *f)
{
	double lc;
	double n;

	if (!ac->on)
		return none(DETECT_OFF);
	switch (f->kind) {
	case DETECT_REFUSED:
		lc = 0;
		break;
	case DETECT_HANG:
		lc = ac->timeout_ms;
		break;
	case DETECT_ERROR_STATUS:
		lc = fmin(f->answer_ms, ac->timeout_ms);
		break;
	case DETECT_SLOW_TOKENS:
	case DETECT_STALL:
		return none(ac->completion ? DETECT_UNMODELLED : DETECT_NEVER);
	default:
		return none(DETECT_UNMODELLED);
	}
	n = detect_trials_to_run(f->probability, ac->fall);
	return value(ac->interval_ms / 2 + (n - 1) * (ac->interval_ms + lc) + lc);
}

void detect_predict(const struct detect_passive *pa, const struct detect_active *ac,
		    const struct detect_fault *f, double rate_per_s, struct detect_prediction *out)
{
	out->passive = passive(pa, f, rate_per_s);
	out->active = active(ac, f);
	if (out->passive.why == DETECT_HAS_VALUE && out->active.why == DETECT_HAS_VALUE)
		out->both = value(fmin(out->passive.ms, out->active.ms));
	else if (out->passive.why == DETECT_HAS_VALUE)
		out->both = out->passive;
	else if (out->active.why == DETECT_HAS_VALUE)
		out->both = out->active;
	else if (out->passive.why == DETECT_UNMODELLED || out->active.why == DETECT_UNMODELLED)
		out->both = none(DETECT_UNMODELLED);
	else if (out->passive.why == DETECT_NEVER || out->active.why == DETECT_NEVER)
		out->both = none(DETECT_NEVER);
	else
		out->both = none(DETECT_OFF);
}

/* ---- from a scenario ---- */

/* The fault of provider pc that the fault phase [from, to) meets first, or NULL. */
static const struct fault *phase_fault(const struct provider_cfg *pc, double from, double to)
{
	const struct fault *best = NULL;
	size_t i;

	for (i = 0; i < pc->nfaults; i++) {
		const struct fault *f = &pc->faults[i];

		if (f->from_ms >= to || f->to_ms <= from)
			continue;
		if (!best || f->from_ms < best->from_ms)
			best = f;
	}
	return best;
}

/* The formulas' view of fault f of provider pc under sc's load. */
static void fault_of(const struct scenario *sc, const struct provider_cfg *pc,
		     const struct fault *f, struct detect_fault *out)
{
	const struct timing_model *t = &pc->timing;
	double tokens = (double)pc->output_tokens;

	memset(out, 0, sizeof(*out));
	out->kind = DETECT_OTHER;
	out->probability = f ? f->probability : 1;
	out->streaming = sc->load.stream_p >= 1;
	if (sc->load.max_tokens > 0 && (double)sc->load.max_tokens < tokens)
		tokens = (double)sc->load.max_tokens;
	if (!f || (sc->load.stream_p > 0 && sc->load.stream_p < 1))
		return;		/* no fault, or a mixed load: not modelled */
	switch (f->kind) {
	case FAULT_DOWN:
		out->kind = DETECT_REFUSED;
		break;
	case FAULT_HANG:
		out->kind = DETECT_HANG;
		break;
	case FAULT_STATUS:
		if (f->status >= 500)
			out->kind = DETECT_ERROR_STATUS;
		out->answer_ms = 0;	/* mockprov answers a status fault at once */
		break;
	case FAULT_SLOW_TOKENS:
		out->kind = DETECT_SLOW_TOKENS;
		out->answer_ms = t->ttft_ms + tokens * f->token_ms;
		break;
	case FAULT_STALL:
		out->kind = DETECT_STALL;
		out->committed = f->after_tokens > 0;
		out->answer_ms = t->ttft_ms +
				 (fmin((double)f->after_tokens, tokens) - 1) * t->token_ms;
		break;
	default:
		break;
	}
}

/* The gateway config of setup st, read with the gateway's loader; -EINVAL or -ENOMEM. */
static int read_gateway(const struct scenario *sc, const struct sc_setup *st,
			struct gw_config *cfg)
{
	const char **urls = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*urls));
	char err[CFG_ERR_LEN];
	char *text = NULL;
	cJSON *root = NULL;
	size_t i;
	int rc = -ENOMEM;

	if (!urls)
		return -ENOMEM;
	for (i = 0; i < sc->nproviders; i++)
		urls[i] = "http://127.0.0.1:9/v1";	/* stands in: never asked */
	text = scenario_gateway_config(sc, st, "127.0.0.1:0", urls, NULL, NULL, err);
	if (!text)
		goto out_free_urls;
	root = cJSON_Parse(text);
	if (!root)
		goto out_free_text;
	rc = gw_config_read_json(root, "setup", cfg, err) ? -EINVAL : 0;
	cJSON_Delete(root);
out_free_text:
	free(text);
out_free_urls:
	free(urls);
	return rc;
}

/* The mock config of sc's providers; -EINVAL or -ENOMEM. */
static int read_mock(const struct scenario *sc, struct mock_config *mc)
{
	char err[CFG_ERR_LEN];
	char *text = scenario_mock_config(sc, NULL);
	cJSON *root;
	int rc;

	memset(mc, 0, sizeof(*mc));
	if (!text)
		return -ENOMEM;
	root = cJSON_Parse(text);
	free(text);
	if (!root)
		return -ENOMEM;
	rc = mock_config_from_json(root, "scenario", mc, err) ? -EINVAL : 0;
	cJSON_Delete(root);
	return rc;
}

/* The index of provider name in cfg, or -1. */
static int gw_provider_index(const struct gw_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nproviders; i++) {
		if (strcmp(cfg->providers[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

int detect_predict_setup(const struct scenario *sc, const struct sc_setup *st,
			 struct detect_prediction *out)
{
	const struct sc_phase *ph = &sc->phases[sc->detection.fault_phase];
	const char *primary = scenario_primary(sc, st);
	struct detect_passive pa = { 0 };
	struct detect_active ac = { 0 };
	struct detect_fault f;
	struct mock_config mc;
	struct gw_config cfg;
	const struct gw_provider *gp;
	size_t i;
	int gi;
	int rc;

	out->passive = out->active = out->both = none(DETECT_OFF);
	if (st->kind != SC_GATEWAY)
		return 0;
	rc = read_gateway(sc, st, &cfg);
	if (rc)
		return rc == -EINVAL ? 0 : rc;	/* scenario_load checked it: memory */
	rc = read_mock(sc, &mc);
	if (rc) {
		gw_config_free(&cfg);
		return rc == -EINVAL ? 0 : rc;
	}
	memset(&f, 0, sizeof(f));
	f.kind = DETECT_OTHER;
	for (i = 0; i < mc.nproviders; i++) {
		if (strcmp(mc.providers[i].name, primary) == 0)
			fault_of(sc, &mc.providers[i],
				 phase_fault(&mc.providers[i], ph->from_ms, ph->to_ms), &f);
	}
	gi = gw_provider_index(&cfg, primary);
	if (gi >= 0) {
		gp = &cfg.providers[gi];
		pa.on = gp->breaker.enabled && gp->breaker.consecutive_failures > 0;
		pa.threshold = gp->breaker.consecutive_failures;
		pa.timeout_ms = cfg.deadline_ms > 0 ? fmin(gp->timeout_ms, cfg.deadline_ms)
						    : gp->timeout_ms;
		pa.first_token_timeout_ms = cfg.first_token_timeout_ms;
		pa.stall_timeout_ms = cfg.stall_timeout_ms;
		ac.on = gp->health.enabled;
		ac.interval_ms = gp->health.interval_ms;
		ac.timeout_ms = gp->health.timeout_ms;
		ac.fall = gp->health.fall;
		ac.completion = gp->health.request == HEALTH_COMPLETION;
		detect_predict(&pa, &ac, &f, sc->load.rate, out);
	}
	mock_config_free(&mc);
	gw_config_free(&cfg);
	return 0;
}

/* ---- the table ---- */

#define NCOLS 9

static const char *const col_names[NCOLS] = {
	"setup", "T_detect ms", "predicted ms", "exposed", "exposed failed",
	"to primary ms", "to closed ms", "checks/s run", "checks/s fault",
};

/* fig[key][sub] (sub may be NULL) of a combined summary: its "mean", "stddev", "n". */
static double cfig(const cJSON *fig, const char *key, const char *sub, const char *what)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(fig, key);

	if (sub)
		v = cJSON_GetObjectItemCaseSensitive(v, sub);
	v = cJSON_GetObjectItemCaseSensitive(v, what);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* "mean ± stddev" (± left out for one run), "never" when no run had one, "(n/runs)" when some. */
static void measured(struct buf *b, const cJSON *fig, const char *key, double runs)
{
	double mean = cfig(fig, key, NULL, "mean");
	double sd = cfig(fig, key, NULL, "stddev");
	double n = cfig(fig, key, NULL, "n");

	if (isnan(mean)) {
		buf_puts(b, "never");
		return;
	}
	buf_printf(b, "%.0f", mean);
	if (runs > 1)
		buf_printf(b, " ± %.0f", isnan(sd) ? 0 : sd);
	if (n < runs)
		buf_printf(b, " (%.0f/%.0f runs)", n, runs);
}

static void predicted(struct buf *b, const struct detect_value *v)
{
	switch (v->why) {
	case DETECT_HAS_VALUE:
		buf_printf(b, "%.0f", v->ms);
		break;
	case DETECT_NEVER:
		buf_puts(b, "never");
		break;
	default:
		buf_puts(b, "-");
		break;
	}
}

/* A count's mean: whole, or with one decimal. */
static void count(struct buf *b, double v)
{
	if (isnan(v))
		buf_puts(b, "-");
	else
		buf_printf(b, v == floor(v) ? "%.0f" : "%.1f", v);
}

static void number(struct buf *b, double v, const char *fmt)
{
	if (isnan(v))
		buf_puts(b, "-");
	else
		buf_printf(b, fmt, v);
}

/* Fills one row's cells for setup st (its combined figures sfig). */
static void row_cells(const struct scenario *sc, const struct sc_setup *st, const cJSON *sfig,
		      struct buf *cells)
{
	const cJSON *phases = cJSON_GetObjectItemCaseSensitive(sfig, "phases");
	const cJSON *fault = cJSON_GetObjectItemCaseSensitive(
		phases, sc->phases[sc->detection.fault_phase].name);
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(
		phases, sc->phases[sc->detection.recovery_phase].name);
	const cJSON *totals = cJSON_GetObjectItemCaseSensitive(sfig, "totals");
	const cJSON *runs_v = cJSON_GetObjectItemCaseSensitive(sfig, "runs");
	double runs = cJSON_IsNumber(runs_v) ? runs_v->valuedouble : 1;
	bool gw = st->kind == SC_GATEWAY;
	struct detect_prediction pr;

	buf_puts(&cells[0], st->name);
	if (gw)
		measured(&cells[1], fault, "time_to_open_ms", runs);
	else
		buf_puts(&cells[1], "-");
	if (detect_predict_setup(sc, st, &pr))
		pr.both = none(DETECT_UNMODELLED);
	predicted(&cells[2], &pr.both);
	count(&cells[3], cfig(fault, "exposed", "requests", "mean"));
	count(&cells[4], cfig(fault, "exposed", "failed", "mean"));
	number(&cells[5], cfig(rec, "time_to_primary_ms", NULL, "mean"), "%.0f");
	if (gw)
		number(&cells[6], cfig(rec, "time_to_close_ms", NULL, "mean"), "%.0f");
	else
		buf_puts(&cells[6], "-");
	number(&cells[7], cfig(totals, "check_rate_per_s", NULL, "mean"), "%.2f");
	number(&cells[8], cfig(fault, "check_rate_per_s", NULL, "mean"), "%.2f");
}

/* Display width of a UTF-8 string. */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

static void print_rows(FILE *fp, struct buf *cells, size_t nrows, bool markdown)
{
	size_t w[NCOLS];
	size_t r;
	size_t c;

	for (c = 0; c < NCOLS; c++)
		w[c] = width(col_names[c]);
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < NCOLS; c++) {
			const char *s = cells[r * NCOLS + c].data;

			if (s && width(s) > w[c])
				w[c] = width(s);
		}
	}
	for (r = 0; r <= nrows; r++) {
		for (c = 0; c < NCOLS; c++) {
			const char *s = r ? cells[(r - 1) * NCOLS + c].data : col_names[c];
			size_t n;

			s = s ? s : "";
			n = width(s);
			fputs(markdown ? "| " : c ? "  " : "", fp);
			if (c)
				fprintf(fp, "%*s%s", (int)(w[c] > n ? w[c] - n : 0), "", s);
			else
				fprintf(fp, "%s%*s", s, (int)(w[c] > n ? w[c] - n : 0), "");
			fputs(markdown ? " " : "", fp);
		}
		fputs(markdown ? "|\n" : "\n", fp);
		if (markdown && r == 0) {
			for (c = 0; c < NCOLS; c++)
				fputs(c ? "|---:" : "|---", fp);
			fputs("|\n", fp);
		}
	}
}

void detect_table(FILE *fp, const struct scenario *sc, const cJSON *summary, bool markdown)
{
	const cJSON *setups = cJSON_GetObjectItemCaseSensitive(summary, "setups");
	struct buf *cells;
	size_t nrows = 0;
	size_t i;

	if (!sc->detection.set)
		return;
	cells = calloc(sc->nsetups * NCOLS + 1, sizeof(*cells));
	if (!cells)
		return;
	for (i = 0; i < sc->nsetups; i++) {
		const cJSON *sfig = cJSON_GetObjectItemCaseSensitive(setups, sc->setups[i].name);

		if (!sfig)
			continue;
		row_cells(sc, &sc->setups[i], sfig, &cells[nrows * NCOLS]);
		nrows++;
	}
	if (nrows) {
		if (markdown)
			fprintf(fp, "\n## Detection\n\nThe primary's fault starts with phase `%s`; "
				"the recovery is measured from the start of `%s`. *T_detect*: "
				"fault start → the breaker's first opening (the runs' mean ± "
				"spread); *predicted*: the textbook's figure for the setup's "
				"methods (docs/chaos.md, Detection; \"never\": its methods cannot "
				"see this fault, \"-\": no formula); *exposed*: user requests that "
				"reached the primary between the fault's start and the opening, "
				"and of them those that failed at the client; *to primary* / *to "
				"closed*: recovery start → the primary's first answer / the "
				"breaker closing; *checks/s*: the primary's health-check requests "
				"a second, over the run and in the fault phase.\n\n",
				sc->phases[sc->detection.fault_phase].name,
				sc->phases[sc->detection.recovery_phase].name);
		else
			fputs("\ndetection:\n", fp);
		print_rows(fp, cells, nrows, markdown);
	}
	for (i = 0; i < sc->nsetups * NCOLS + 1; i++)
		buf_free(&cells[i]);
	free(cells);
}
