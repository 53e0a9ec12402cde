/*
 * expect: a scenario's expectations — which setups and phases each is
 * about, the bounds it sets and the keys that go together.
 */
#include "runner/scenario.h"

#include <fnmatch.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "runner/jpath.h"
#include "runner/scenario_int.h"

static bool given(double v)
{
	return !isnan(v);
}

#define EK(name, field, max) \
	{ name, CFG_NUM, offsetof(struct sc_expect, field), false, NAN, 0, max, NULL, NULL }

/* The bounds start at index EXPECT_FIRST_BOUND; before them, what the entry is about. */
#define EXPECT_FIRST_BOUND 7

static const struct cfg_key expect_keys[] = {
	{ "setup", CFG_STR, offsetof(struct sc_expect, setup), true, 0, 0, 0, NULL, NULL },
	{ "phase", CFG_STR, offsetof(struct sc_expect, phase), true, 0, 0, 0, NULL, NULL },
	{ "class", CFG_STR, offsetof(struct sc_expect, cls), false, 0, 0, 0, NULL, NULL },
	{ "stream", CFG_STR, offsetof(struct sc_expect, stream), false, 0, 0, 0, NULL, NULL },
	{ "relative_to", CFG_STR, offsetof(struct sc_expect, relative_to), false, 0, 0, 0, NULL,
	  NULL },
	{ "when", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	EK("window_s", window_ms, 1e12),
	EK("error_rate_max", error_rate_max, 1),
	EK("answered_min", answered_min, 1),
	EK("answered_max", answered_max, 1),
	EK("window_answered_min", window_answered_min, 1),
	EK("latency_p50_ms_max", latency_p50_ms_max, 1e12),
	EK("latency_p95_ms_max", latency_p95_ms_max, 1e12),
	EK("latency_p99_ms_max", latency_p99_ms_max, 1e12),
	EK("latency_p99_ratio_max", latency_p99_ratio_max, 1e6),
	{ "cost_overhead_max", CFG_NUM, offsetof(struct sc_expect, cost_overhead_max), false, NAN,
	  -1, 1e6, NULL, NULL },
	{ "extra_requests_max", CFG_NUM, offsetof(struct sc_expect, extra_requests_max), false, NAN,
	  -1, 1e6, NULL, NULL },
	EK("time_to_open_ms_max", time_to_open_ms_max, 1e12),
	EK("time_to_primary_ms_max", time_to_primary_ms_max, 1e12),
	EK("time_to_primary_ms_min", time_to_primary_ms_min, 1e12),
	EK("opens_min", opens_min, 1e12),
	EK("opens_max", opens_max, 1e12),
	EK("fallback_share_max", fallback_share_max, 1),
	EK("fallback_share_min", fallback_share_min, 1),
	EK("silent_breaks_max", silent_breaks_max, 1e12),
	EK("stalls_max", stalls_max, 1e12),
	EK("max_gap_ms_max", max_gap_ms_max, 1e12),
	EK("ttft_p95_ms_max", ttft_p95_ms_max, 1e12),
	EK("duplicate_share_max", duplicate_share_max, 1),
	EK("cost_per_answered_usd_max", cost_per_answered_max, 1e6),
	EK("timeout_paid_max", timeout_paid_max, 1e12),
	EK("timeout_paid_ratio_max", timeout_paid_ratio_max, 1e6),
	EK("replica_open_spread_ms_max", replica_open_spread_ms_max, 1e12),
	EK("probe_overlaps_max", probe_overlaps_max, 1e12),
	EK("broken_answers_max", broken_answers_max, 1e12),
	EK("broken_answers_min", broken_answers_min, 1e12),
	EK("contract_violations_min", contract_violations_min, 1e12),
	EK("degraded_min", degraded_min, 1e12),
	EK("error_latency_ms_max", error_latency_ms_max, 1e12),
	EK("transitions_min", transitions_min, 1e12),
	EK("transitions_max", transitions_max, 1e12),
	EK("fallback_spend_usd_max", fallback_spend_usd_max, 1e6),
};

/* The bounds on a replicated setup's figures (runner/replicas.h), by key. */
static const char *replica_bound(const struct sc_expect *e)
{
	if (given(e->timeout_paid_max))
		return "timeout_paid_max";
	if (given(e->timeout_paid_ratio_max))
		return "timeout_paid_ratio_max";
	if (given(e->replica_open_spread_ms_max))
		return "replica_open_spread_ms_max";
	if (given(e->probe_overlaps_max))
		return "probe_overlaps_max";
	return NULL;
}

/*
 * A bound on the replica figures is only for replicated gateway setups
 * (replicas above 1, or shared_state redis: scenario_setup_replicated),
 * which alone have them: every setup the entry matches, and its
 * relative_to, must be one.
 */
static int check_replica_bounds(const struct scenario *sc, const struct sc_expect *e,
				const char *file, const char *path, char *err)
{
	const char *key = replica_bound(e);
	size_t i;

	for (i = 0; key && i < sc->nsetups; i++) {
		const struct sc_setup *st = &sc->setups[i];
		bool matched = fnmatch(e->setup, st->name, 0) == 0 ||
			       (e->relative_to && strcmp(e->relative_to, st->name) == 0);

		if (matched && !scenario_setup_replicated(st))
			return cfg_error(err, file, path, key, "expected it only on gateway setups "
					 "with replicas above 1 or shared_state \"redis\" (which "
					 "have replica figures), got it on setup \"%.64s\", which "
					 "has neither", st->name);
	}
	return 0;
}


/* The setup and phase an entry names exist. */
static int check_expect_names(const struct scenario *sc, const struct sc_expect *e,
			      const char *file, const char *path, char *err)
{
	char list[256];
	char *names[64];
	size_t i;
	size_t n;
	bool any = false;

	n = sc->nsetups < NELEM(names) ? sc->nsetups : NELEM(names);
	for (i = 0; i < n; i++)
		names[i] = sc->setups[i].name;
	scenario__names_text(names, n, list, sizeof(list));
	for (i = 0; i < sc->nsetups && !any; i++)
		any = fnmatch(e->setup, sc->setups[i].name, 0) == 0;
	if (!any)
		return cfg_error(err, file, path, "setup", "expected a setup name or a glob matching "
				 "one (%.160s), got \"%.64s\", which matches none", list, e->setup);
	for (i = 0, any = false; e->relative_to && i < sc->nsetups && !any; i++)
		any = strcmp(e->relative_to, sc->setups[i].name) == 0;
	if (e->relative_to && !any)
		return cfg_error(err, file, path, "relative_to", "expected the name of a setup "
				 "(%.160s), got \"%.64s\"", list, e->relative_to);
	any = strcmp(e->phase, "*") == 0;
	for (i = 0; i < sc->nphases && !any; i++)
		any = strcmp(e->phase, sc->phases[i].name) == 0;
	if (!any) {
		n = sc->nphases < NELEM(names) ? sc->nphases : NELEM(names);
		for (i = 0; i < n; i++)
			names[i] = sc->phases[i].name;
		scenario__names_text(names, n, list, sizeof(list));
		return cfg_error(err, file, path, "phase", "expected a phase name (%.160s) or \"*\", "
				 "got \"%.64s\"", list, e->phase);
	}
	return 0;
}

/* The names of the load's mix streams ("a, b"), into out; returns how many. */
static size_t mix_stream_names(const struct scenario *sc, char *out, size_t len)
{
	const cJSON *streams = cJSON_GetObjectItemCaseSensitive(sc->load.mix, "streams");
	const cJSON *st;
	size_t n = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(st, streams) {
		const char *name = json_get_string(st, "name");
		size_t used = strlen(out);

		if (!name)
			continue;
		snprintf(out + used, len - used, "%s%s", n++ ? ", " : "", name);
	}
	return n;
}

/*
 * An entry's stream: a name of the load's mix streams (whose requests
 * requests.csv's stream_name column marks) when it has two or more (the
 * summary's mix_streams; one stream's figures are the phase's own), and
 * not with a class.
 */
static int check_expect_stream(const struct scenario *sc, const struct sc_expect *e,
			       const char *file, const char *path, char *err)
{
	const cJSON *streams = cJSON_GetObjectItemCaseSensitive(sc->load.mix, "streams");
	const cJSON *st;
	char list[256];

	if (!e->stream)
		return 0;
	if (e->cls)
		return cfg_error(err, file, path, "stream", "expected class or stream, not both "
				 "(the figures are given per class and per stream, not per both)");
	if (mix_stream_names(sc, list, sizeof(list)) < 2)
		return cfg_error(err, file, path, "stream", "expected it only when load.mix has two "
				 "streams or more (one stream's figures are the phase's own), got "
				 "\"%.64s\"", e->stream);
	cJSON_ArrayForEach(st, streams) {
		const char *name = json_get_string(st, "name");

		if (name && strcmp(name, e->stream) == 0)
			return 0;
	}
	return cfg_error(err, file, path, "stream", "expected the name of one of load.mix's "
			 "streams (%.160s), got \"%.64s\"", list, e->stream);
}

/* The keys that go together: window_s with its bound, relative_to with the ratios. */
static int check_expect_pairs(const struct scenario *sc, const struct sc_expect *e,
			      const char *file, const char *path, char *err)
{
	bool ratio = given(e->latency_p99_ratio_max) || given(e->cost_overhead_max) ||
		     given(e->timeout_paid_ratio_max);

	if (e->cls && strcmp(e->cls, "interactive") != 0 && strcmp(e->cls, "batch") != 0)
		return cfg_error(err, file, path, "class", "expected \"interactive\" or \"batch\", "
				 "got \"%.64s\"", e->cls);
	if (given(e->window_ms) && !(e->window_ms > 0 && e->window_ms <= sc->duration_ms / 1000))
		return cfg_error(err, file, path, "window_s", "expected a number above 0 and at most "
				 "duration_s (%g), got %g", sc->duration_ms / 1000, e->window_ms);
	if (given(e->window_ms) != given(e->window_answered_min))
		return cfg_error(err, file, path, given(e->window_ms) ? "window_answered_min" :
				 "window_s", "expected window_s and window_answered_min together, "
				 "got one without the other");
	if (e->relative_to && !ratio)
		return cfg_error(err, file, path, "relative_to", "expected it only with "
				 "latency_p99_ratio_max, cost_overhead_max or timeout_paid_ratio_max, "
				 "got it with none of them");
	if (ratio && !e->relative_to)
		return cfg_error(err, file, path, "relative_to", "missing: latency_p99_ratio_max, "
				 "cost_overhead_max and timeout_paid_ratio_max compare with the setup "
				 "it names");
	if (e->answered_min > e->answered_max)
		return cfg_error(err, file, path, "answered_min", "expected at most answered_max "
				 "(%g), got %g", e->answered_max, e->answered_min);
	if (e->fallback_share_min > e->fallback_share_max)
		return cfg_error(err, file, path, "fallback_share_min", "expected at most "
				 "fallback_share_max (%g), got %g", e->fallback_share_max,
				 e->fallback_share_min);
	if (e->time_to_primary_ms_min > e->time_to_primary_ms_max)
		return cfg_error(err, file, path, "time_to_primary_ms_min", "expected at most "
				 "time_to_primary_ms_max (%g), got %g", e->time_to_primary_ms_max,
				 e->time_to_primary_ms_min);
	if (e->opens_min > e->opens_max)
		return cfg_error(err, file, path, "opens_min", "expected at most opens_max (%g), "
				 "got %g", e->opens_max, e->opens_min);
	if (e->transitions_min > e->transitions_max)
		return cfg_error(err, file, path, "transitions_min", "expected at most "
				 "transitions_max (%g), got %g", e->transitions_max,
				 e->transitions_min);
	if (e->broken_answers_min > e->broken_answers_max)
		return cfg_error(err, file, path, "broken_answers_min", "expected at most "
				 "broken_answers_max (%g), got %g", e->broken_answers_max,
				 e->broken_answers_min);
	return check_expect_stream(sc, e, file, path, err);
}

static int check_expect(const struct scenario *sc, struct sc_expect *e, const char *file,
			const char *path, char *err)
{
	size_t i;
	bool any = false;
	int rc;

	rc = check_expect_names(sc, e, file, path, err);
	if (!rc)
		rc = check_expect_pairs(sc, e, file, path, err);
	if (!rc)
		rc = check_replica_bounds(sc, e, file, path, err);
	if (rc)
		return rc;
	for (i = EXPECT_FIRST_BOUND; i < NELEM(expect_keys); i++)
		any = any || given(*(const double *)((const char *)e + expect_keys[i].offset));
	if (!any)
		return cfg_error(err, file, path, NULL, "expected at least one bound "
				 "(error_rate_max, answered_min, latency_p50_ms_max, …), got none");
	e->window_ms *= 1000;	/* window_s, in the scenario's ms from here on */
	return 0;
}

/* Whether the scenario's value at a when's path equals want (numbers within 1e-9). */
static bool same_value(const cJSON *have, const cJSON *want)
{
	if (cJSON_IsNumber(have) && cJSON_IsNumber(want))
		return fabs(have->valuedouble - want->valuedouble) <=
		       1e-9 * fmax(1, fabs(want->valuedouble));
	if (cJSON_IsString(have) && cJSON_IsString(want))
		return strcmp(have->valuestring, want->valuestring) == 0;
	return cJSON_IsBool(have) && cJSON_IsBool(want) &&
	       cJSON_IsTrue(have) == cJSON_IsTrue(want);
}

/* Whether two values are of one kind: numbers, strings or booleans. */
static bool same_kind(const cJSON *a, const cJSON *b)
{
	return (cJSON_IsNumber(a) && cJSON_IsNumber(b)) ||
	       (cJSON_IsString(a) && cJSON_IsString(b)) || (cJSON_IsBool(a) && cJSON_IsBool(b));
}

/*
 * An entry's "when" (in the unscaled document): {PATH: VALUE or [VALUE,
 * …]}, every PATH a value of the scenario (runner/jpath.h) of the kind
 * given. *applies says whether the scenario's values are those given
 * (one of them, for a list) at every PATH. Returns 0, or -EINVAL naming
 * the key.
 */
static int check_when(const cJSON *doc, const cJSON *when, const char *file,
		      const char *path, bool *applies, char *err)
{
	char wpath[128];
	char msg[400];
	char got[96];
	const cJSON *cond;

	*applies = true;
	if (!when)
		return 0;
	snprintf(wpath, sizeof(wpath), "%s.when", path);
	if (!cJSON_IsObject(when) || !when->child) {
		cfg_describe(when, got, sizeof(got));
		return cfg_error(err, file, path, "when", "expected an object {PATH: value or "
				 "[values]} naming at least one of the scenario's values, got %s",
				 got);
	}
	cJSON_ArrayForEach(cond, when) {
		const cJSON *have;
		const cJSON *v;
		bool any = false;

		if (jpath_get(doc, cond->string, &have, msg, sizeof(msg)))
			return cfg_error(err, file, wpath, cond->string, "expected the path of a value "
					 "the scenario states: %s", msg);
		if (!cJSON_IsNumber(have) && !cJSON_IsString(have) && !cJSON_IsBool(have))
			return cfg_error(err, file, wpath, cond->string, "expected the path of a "
					 "number, string or boolean, got one of %s",
					 cJSON_IsObject(have) ? "an object" : cJSON_IsArray(have) ?
					 "an array" : "null");
		if (!cJSON_IsArray(cond) && !same_kind(have, cond)) {
			cfg_describe(cond, got, sizeof(got));
			return cfg_error(err, file, wpath, cond->string, "expected a value of the kind "
					 "the scenario has there, got %s", got);
		}
		for (v = cJSON_IsArray(cond) ? cond->child : NULL; v; v = v->next) {
			if (!same_kind(have, v)) {
				cfg_describe(v, got, sizeof(got));
				return cfg_error(err, file, wpath, cond->string, "expected values of the "
						 "kind the scenario has there, got %s", got);
			}
			any = any || same_value(have, v);
		}
		if (cJSON_IsArray(cond) && !cond->child)
			return cfg_error(err, file, wpath, cond->string, "expected at least one value");
		if (!cJSON_IsArray(cond))
			any = same_value(have, cond);
		*applies = *applies && any;
	}
	return 0;
}

int expect_load_all(const cJSON *root, const cJSON *doc, const char *file, struct scenario *sc,
		    char *err)
{
	const cJSON *arr;
	const cJSON *item;
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(doc, "expect");
	size_t i = 0;
	size_t k = 0;
	char path[64];
	int rc;

	rc = scenario__get_array(root, "expect", false,
				 "expectations {\"setup\",\"phase\",bounds…}", file, "", &arr, err);
	if (rc || !arr || !arr->child)
		return rc;
	sc->expects = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->expects));
	if (!sc->expects)
		return scenario__oom(err, file, "expect");
	cJSON_ArrayForEach(item, arr) {
		bool applies;

		snprintf(path, sizeof(path), "expect[%zu]", i);
		sc->nexpects = k + 1;
		rc = cfg_apply(expect_keys, NELEM(expect_keys), item, &sc->expects[k], file, path,
			       err);
		if (!rc)
			rc = check_expect(sc, &sc->expects[k], file, path, err);
		if (!rc)
			rc = check_when(doc, cJSON_GetObjectItemCaseSensitive(
						cJSON_GetArrayItem(raw, (int)i), "when"),
					file, path, &applies, err);
		if (rc)
			return rc;
		if (applies) {
			k++;
		} else {	/* not this scenario's: checked, then left out */
			free(sc->expects[k].setup);
			free(sc->expects[k].phase);
			free(sc->expects[k].cls);
			free(sc->expects[k].stream);
			free(sc->expects[k].relative_to);
			memset(&sc->expects[k], 0, sizeof(sc->expects[k]));
			sc->nexpects = k;
		}
		i++;
	}
	return 0;
}

void expect_blank(struct sc_expect *e)
{
	size_t i;

	for (i = 0; i < NELEM(expect_keys); i++)
		if (expect_keys[i].type == CFG_NUM)
			*(double *)((char *)e + expect_keys[i].offset) = NAN;
}

size_t expect_sections(struct cfg_section *out, size_t max)
{
	if (max > 0)
		out[0] = (struct cfg_section){ "expect[]", expect_keys, NELEM(expect_keys) };
	return 1;
}
