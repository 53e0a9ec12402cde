/*
 * sweep_verdict: a sweep's conclusions — the objective's verdicts, the
 * best point of each setup, the knees (runner/sweep_verdict.h).
 */
#include "runner/sweep_verdict.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "runner/sweep_data.h"
#include "runner/stats.h"
#include "runner/sweep_plot.h"
#include "runner/vary.h"

int sweep_base_scenario(const struct sweep *s, struct scenario *sc, char *err)
{
	struct buf path = { 0 };
	int rc;

	memset(sc, 0, sizeof(*sc));
	if (buf_printf(&path, "%s/scenario.json", s->dir)) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = scenario_load_json(s->base, path.data, s->scale, sc, err);
	buf_free(&path);
	return rc;
}

const char *sweep_row_verdict(const struct sc_objective *o, const char *phase,
			      const cJSON *cfig, struct objective_verdict *v)
{
	if (!o || !o->given || (strcmp(o->phase, "*") != 0 && strcmp(o->phase, phase) != 0))
		return NULL;
	objective_judge(o, cfig, v);
	return v->meets ? "meets" : "fails";
}

/* The setups any point's summary has, first seen first. */
static cJSON *setup_names(cJSON *const *sums, size_t n)
{
	cJSON *names = cJSON_CreateArray();
	const cJSON *st;
	size_t i;

	for (i = 0; i < n && names; i++) {
		cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(sums[i], "setups")) {
			const cJSON *have;
			bool seen = false;

			cJSON_ArrayForEach(have, names)
				seen = seen || strcmp(have->valuestring, st->string) == 0;
			if (!seen && !cJSON_AddItemToArray(names, cJSON_CreateString(st->string))) {
				cJSON_Delete(names);
				return NULL;
			}
		}
	}
	return names;
}

/* The best point of one setup, as sweep_best's entry. */
static cJSON *best_of_setup(const struct sweep *s, const struct sc_objective *o,
			    cJSON *const *sums, const char *setup)
{
	struct objective_candidate *c = calloc(s->plan.npoints, sizeof(*c));
	cJSON *e = cJSON_CreateObject();
	cJSON *values = NULL;
	bool ok = c && e;
	long best;
	size_t i;
	size_t j;

	for (i = 0; i < s->plan.npoints && ok; i++) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(sums[i], "setups"), setup);
		struct objective_verdict v;

		if (!st)
			continue;
		objective_candidate_of(o, st, &v, &c[i]);
	}
	best = ok ? objective_best(c, s->plan.npoints) : -1;
	ok = ok && json_put(e, "setup", cJSON_CreateString(setup));
	if (best < 0) {
		ok = ok && json_put(e, "point", cJSON_CreateNull());
	} else {
		values = cJSON_CreateObject();
		for (j = 0; j < s->plan.n && values; j++)
			if (!json_put(values, s->plan.v[j].path,
				      cJSON_Duplicate(vary_value(&s->plan, (size_t)best, j), true)))
				ok = false;
		ok = ok && json_put(e, "point", cJSON_CreateNumber((double)best + 1));
		ok = ok && json_put(e, "dir", cJSON_CreateString(s->dirs[best]));
		ok = ok && json_put(e, "values", values);
		values = NULL;
		ok = ok && json_put(e, "cost_per_answered_usd", isnan(c[best].cost) ?
				    cJSON_CreateNull() : cJSON_CreateNumber(c[best].cost));
		ok = ok && json_put(e, "latency_p95_ms", isnan(c[best].p95) ?
				    cJSON_CreateNull() : cJSON_CreateNumber(c[best].p95));
	}
	cJSON_Delete(values);
	free(c);
	if (!ok) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

cJSON *sweep_best(const struct sweep *s, const struct sc_objective *o, bool *oom)
{
	cJSON **sums;
	cJSON *names = NULL;
	cJSON *out = NULL;
	const cJSON *name;
	size_t i;

	*oom = false;
	if (!o || !o->given)
		return NULL;
	sums = calloc(s->plan.npoints ? s->plan.npoints : 1, sizeof(*sums));
	if (!sums)
		goto out_oom;
	for (i = 0; i < s->plan.npoints; i++)	/* done points alone, as sweep.csv */
		sums[i] = s->status[i] == SWEEP_DONE ? sweep_point_summary(s, i) : NULL;
	names = setup_names(sums, s->plan.npoints);
	out = cJSON_CreateArray();
	if (!names || !out)
		goto out_oom;
	cJSON_ArrayForEach(name, names) {
		cJSON *e = best_of_setup(s, o, sums, name->valuestring);

		if (!e || !cJSON_AddItemToArray(out, e)) {
			cJSON_Delete(e);
			goto out_oom;
		}
	}
	goto out_free;
out_oom:
	*oom = true;
	cJSON_Delete(out);
	out = NULL;
out_free:
	for (i = 0; sums && i < s->plan.npoints; i++)
		cJSON_Delete(sums[i]);
	free(sums);
	cJSON_Delete(names);
	return out;
}

/* e[key] as a string, "" when it is not one. */
static const char *str_of(const cJSON *e, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* e[key] as a number, NAN when it is not one. */
static double num_of(const cJSON *e, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* "timeout_ms=1500,fall=2" of an entry's "values", into b. */
static int values_text(const cJSON *values, struct buf *b)
{
	const cJSON *v;
	int rc = 0;

	cJSON_ArrayForEach(v, values) {
		rc = buf_printf(b, "%s%s=", b->len ? "," : "", vary_leaf(v->string));
		if (!rc)
			rc = vary_value_text(v, b);
		if (rc)
			return rc;
	}
	return rc;
}

/* Prints the knees and the best points. */
static void print_conclusions(FILE *out, const struct sweep *s, const struct sc_objective *o)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, s->knee) {
		struct buf b = { 0 };

		if (values_text(cJSON_GetObjectItemCaseSensitive(e, "values"), &b))
			continue;
		fprintf(out, "knee: %s / %s at %s (answered %.1f%%, duplicate %.1f%%)\n",
			str_of(e, "setup"), str_of(e, "phase"), b.data ? b.data : "",
			100 * num_of(e, "answered_share"),
			100 * num_of(e, "duplicate_share"));
		buf_free(&b);
	}
	if (!o || !o->given)
		return;
	cJSON_ArrayForEach(e, s->best) {
		struct buf b = { 0 };

		if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "point"))) {
			fprintf(out, "best: %s: no point meets the objective\n", str_of(e, "setup"));
			continue;
		}
		if (values_text(cJSON_GetObjectItemCaseSensitive(e, "values"), &b))
			continue;
		fprintf(out, "best: %s: %s (%s: cost per answered %.4g USD, p95 %.0f ms)\n",
			str_of(e, "setup"), b.data ? b.data : "", str_of(e, "dir"),
			num_of(e, "cost_per_answered_usd"),
			num_of(e, "latency_p95_ms"));
		buf_free(&b);
	}
}

int sweep_conclude(struct sweep *s, const char *plots_dir, FILE *out, char *err)
{
	struct scenario base;
	struct sweep_data d;
	const struct sc_objective *o;
	const char *knee_phase;
	double exchange;
	bool any = false;
	bool oom;
	size_t i;
	int rc;

	rc = sweep_base_scenario(s, &base, err);
	if (rc)
		goto out;
	o = base.objective.given ? &base.objective : NULL;
	exchange = objective_exchange(o);
	knee_phase = o && strcmp(o->phase, "*") != 0 ? o->phase : NULL;
	cJSON_Delete(s->best);
	s->best = sweep_best(s, o, &oom);
	cJSON_Delete(s->knee);
	s->knee = NULL;
	for (i = 0; i < s->plan.npoints && !any; i++)
		any = s->status[i] == SWEEP_DONE;
	if (!any && !oom)
		goto out;	/* no point's figures: no knee, nothing to plot */
	rc = oom ? -ENOMEM : sweep_data_load(&d, s->dir, err);
	if (rc == -ENOMEM)
		snprintf(err, CFG_ERR_LEN, "out of memory");
	if (!rc)
		rc = sweep_knees(&d, exchange, knee_phase, &s->knee, err);
	if (!oom)
		sweep_data_free(&d);
	if (rc)
		goto out;
	print_conclusions(out, s, o);
	if (plots_dir) {
		rc = sweep_plot(s->dir, plots_dir, exchange, knee_phase, err, NULL);
		if (!rc)
			fprintf(out, "plots: %s/plots/\n", s->dir);
	}
out:
	scenario_free(&base);
	return rc;
}
