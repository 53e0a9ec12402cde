/*
 * objective: loading a scenario's "objective" block, and judging figures
 * against it (runner/objective.h).
 */
#include "runner/objective.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/scenario_int.h"
#include "runner/stats.h"

#define OK(name, field, max) \
	{ name, CFG_NUM, offsetof(struct sc_objective, field), false, NAN, 0, max, NULL, NULL }

static const struct cfg_key objective_keys[] = {
	{ "phase", CFG_STR, offsetof(struct sc_objective, phase), false, 0, 0, 0, "*", NULL },
	OK("answered_min", answered_min, 1),
	OK("p95_ms_max", p95_ms_max, 1e12),
	OK("duplicate_share_max", duplicate_share_max, 1),
	OK("cost_per_answered_usd_max", cost_per_answered_usd_max, 1e6),
};

/* A bound of the objective: its key, the figure, and which way it holds. */
struct bound {
	const char *key;
	size_t offset;
	const char *figure;
	const char *sub;
	bool at_least;
};

static const struct bound bounds[] = {
	{ "answered_min", offsetof(struct sc_objective, answered_min), "answered_share", NULL,
	  true },
	{ "p95_ms_max", offsetof(struct sc_objective, p95_ms_max), "latency_ms", "p95", false },
	{ "duplicate_share_max", offsetof(struct sc_objective, duplicate_share_max),
	  "duplicate_share", NULL, false },
	{ "cost_per_answered_usd_max", offsetof(struct sc_objective, cost_per_answered_usd_max),
	  "cost_per_answered", NULL, false },
};

static double bound_of(const struct sc_objective *o, const struct bound *b)
{
	return *(const double *)((const char *)o + b->offset);
}

int objective_load(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "objective");
	struct sc_objective *o = &sc->objective;
	char got[96];
	size_t i;
	bool any = false;
	int rc;

	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, "", "objective", "expected an object {\"answered_min\", "
				 "\"p95_ms_max\", \"duplicate_share_max\", "
				 "\"cost_per_answered_usd_max\", \"phase\"}, got %s", got);
	}
	rc = cfg_apply(objective_keys, NELEM(objective_keys), obj, o, file, "objective", err);
	if (rc)
		return rc;
	o->given = true;
	for (i = 0; i < NELEM(bounds); i++)
		any = any || !isnan(bound_of(o, &bounds[i]));
	if (!any)
		return cfg_error(err, file, "objective", NULL, "expected at least one bound "
				 "(answered_min, p95_ms_max, duplicate_share_max, "
				 "cost_per_answered_usd_max), got none");
	if (strcmp(o->phase, "*") == 0)
		return 0;
	for (i = 0; i < sc->nphases; i++)
		if (strcmp(o->phase, sc->phases[i].name) == 0)
			return 0;
	{
		char list[256];
		char *names[64];
		size_t n = sc->nphases < NELEM(names) ? sc->nphases : NELEM(names);

		for (i = 0; i < n; i++)
			names[i] = sc->phases[i].name;
		scenario__names_text(names, n, list, sizeof(list));
		return cfg_error(err, file, "objective", "phase", "expected a phase name (%.160s) "
				 "or \"*\", got \"%.64s\"", list, o->phase);
	}
}

void objective_free(struct sc_objective *o)
{
	free(o->phase);
	memset(o, 0, sizeof(*o));
}

size_t objective_sections(struct cfg_section *out, size_t max)
{
	if (max > 0)
		out[0] = (struct cfg_section){ "objective", objective_keys, NELEM(objective_keys) };
	return 1;
}

/* ---- judging ---- */

static bool holds(double value, double bound, bool at_least)
{
	double slack = 1e-9 * (fabs(bound) > 1 ? fabs(bound) : 1);

	if (isnan(value))
		return false;
	return at_least ? value >= bound - slack : value <= bound + slack;
}

/* Appends "; " (unless first) and the text to v->broken, cut to fit. */
static void say(struct objective_verdict *v, const char *prefix, const char *text)
{
	size_t len = strlen(v->broken);

	snprintf(v->broken + len, sizeof(v->broken) - len, "%s%s%s", len ? "; " : "",
		 prefix ? prefix : "", text);
}

/* Judges cfig, adding what breaks to v (each prefixed by prefix when not NULL). */
static void judge_into(const struct sc_objective *o, const cJSON *cfig, const char *prefix,
		       struct objective_verdict *v)
{
	char text[96];
	size_t i;

	for (i = 0; i < NELEM(bounds); i++) {
		double bound = bound_of(o, &bounds[i]);
		double value;

		if (isnan(bound))
			continue;
		value = stats_mean(cfig, bounds[i].figure, bounds[i].sub);
		if (holds(value, bound, bounds[i].at_least))
			continue;
		v->meets = false;
		if (isnan(value))
			snprintf(text, sizeof(text), "%s: no value", bounds[i].key);
		else
			snprintf(text, sizeof(text), "%s %.4g%s%.4g", bounds[i].key, value,
				 bounds[i].at_least ? "<" : ">", bound);
		say(v, prefix, text);
	}
}

void objective_judge(const struct sc_objective *o, const cJSON *cfig,
		     struct objective_verdict *v)
{
	v->meets = true;
	v->broken[0] = '\0';
	judge_into(o, cfig, NULL, v);
}

void objective_judge_setup(const struct sc_objective *o, const cJSON *setup_summary,
			   struct objective_verdict *v)
{
	const cJSON *phases = cJSON_GetObjectItemCaseSensitive(setup_summary, "phases");
	const cJSON *p;
	char prefix[80];

	v->meets = true;
	v->broken[0] = '\0';
	if (strcmp(o->phase, "*") != 0) {
		p = cJSON_GetObjectItemCaseSensitive(phases, o->phase);
		if (!cJSON_IsObject(p)) {
			v->meets = false;
			say(v, o->phase, ": no such phase in the run");
			return;
		}
		judge_into(o, p, NULL, v);
		return;
	}
	if (!cJSON_IsObject(phases) || !phases->child) {
		v->meets = false;
		say(v, NULL, "no phase in the run");
		return;
	}
	cJSON_ArrayForEach(p, phases) {
		snprintf(prefix, sizeof(prefix), "%.64s: ", p->string);
		judge_into(o, p, prefix, v);
	}
}

double objective_exchange(const struct sc_objective *o)
{
	if (!o || !o->given || isnan(o->duplicate_share_max) || isnan(o->answered_min) ||
	    o->answered_min >= 1)
		return 1;
	return o->duplicate_share_max / (1 - o->answered_min);
}

/* The setup's figures a candidate is ranked on: the objective's phase, or the totals. */
static const cJSON *ranked_figures(const struct sc_objective *o, const cJSON *setup)
{
	if (strcmp(o->phase, "*") == 0)
		return cJSON_GetObjectItemCaseSensitive(setup, "totals");
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(setup, "phases"),
						o->phase);
}

void objective_candidate_of(const struct sc_objective *o, const cJSON *setup_summary,
			    struct objective_verdict *v, struct objective_candidate *c)
{
	const cJSON *fig;

	objective_judge_setup(o, setup_summary, v);
	fig = ranked_figures(o, setup_summary);
	*c = (struct objective_candidate){ v->meets, stats_mean(fig, "cost_per_answered", NULL),
					   stats_mean(fig, "latency_ms", "p95") };
}

/* NAN counts as the highest. */
static int cmp_high_nan(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	if (fabs(a - b) <= 1e-9 * fmax(1, fmax(fabs(a), fabs(b))))
		return 0;
	return a < b ? -1 : 1;
}

long objective_best(const struct objective_candidate *c, size_t n)
{
	long best = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		int by_cost;

		if (!c[i].meets)
			continue;
		if (best < 0) {
			best = (long)i;
			continue;
		}
		by_cost = cmp_high_nan(c[i].cost, c[best].cost);
		if (by_cost < 0 || (by_cost == 0 && cmp_high_nan(c[i].p95, c[best].p95) < 0))
			best = (long)i;
	}
	return best;
}

int objective_expect(const struct sc_objective *o, const char *setup_pattern,
		     struct sc_expect *out)
{
	memset(out, 0, sizeof(*out));
	out->setup = strdup(setup_pattern);
	out->phase = strdup(o->phase);
	if (!out->setup || !out->phase) {
		objective_expect_free(out);
		return -ENOMEM;
	}
	expect_blank(out);
	out->source = "objective";
	out->answered_min = o->answered_min;
	out->latency_p95_ms_max = o->p95_ms_max;
	out->duplicate_share_max = o->duplicate_share_max;
	out->cost_per_answered_max = o->cost_per_answered_usd_max;
	return 0;
}

void objective_expect_free(struct sc_expect *e)
{
	free(e->setup);
	free(e->phase);
	e->setup = NULL;
	e->phase = NULL;
}
