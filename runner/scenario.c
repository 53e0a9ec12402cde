/*
 * scenario: loading and validating a scenario file — its top level, ci,
 * providers, prices, actions, phases and load here, its setups in
 * runner/setup.c and expectations in runner/expect.c — and what a run
 * asks of the loaded scenario (its phases, windows, primary provider,
 * tables). Times are scaled by runner/timescale.c, placeholders and the
 * programs' configs are runner/template.c's.
 */
#include "runner/scenario.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mockprov/config.h"
#include "common/buf.h"
#include "common/json.h"
#include "loadgen/mix.h"
#include "runner/scenario_int.h"

/* The largest whole number a double holds exactly: seeds up to 2^53 − 1. */
#define MAX_SAFE_INT 9007199254740991.0

/* ---- small helpers ---- */

/* Says "out of memory" at file and path; returns -ENOMEM. */
int scenario__oom(char *err, const char *file, const char *path)
{
	cfg_error(err, file, path, NULL, "out of memory");
	return -ENOMEM;
}

/* A scenario, phase or setup name: 1–64 of [A-Za-z0-9_.-], not "." or "..". */
bool scenario__name_ok(const char *s)
{
	size_t n = strlen(s);
	size_t i;

	if (n == 0 || n > 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* "a, b, c" from a list of names, cut to fit. */
void scenario__names_text(char *const *names, size_t n, char *out, size_t len)
{
	size_t used = 0;
	size_t i;

	out[0] = '\0';
	for (i = 0; i < n && used < len; i++) {
		int w = snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* The index of the name of len bytes among names, or -1. */
int scenario__find_name(char *const *names, size_t n, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * A number above 0 and at most max under key (which must be present).
 * cfg's ranges are closed; "above 0" needs its own words.
 */
static int read_positive(const cJSON *obj, const char *key, double max, const char *file,
			 const char *path, double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char got[96];

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !(v->valuedouble > 0) ||
	    v->valuedouble > max) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, key, "expected a number above 0 and at most %.17g, "
				 "got %s", max, got);
	}
	*out = v->valuedouble;
	return 0;
}

/* The array under key, or NULL when absent; anything else but an array is an error. */
int scenario__get_array(const cJSON *obj, const char *key, bool nonempty, const char *what,
			const char *file, const char *path, const cJSON **out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char got[96];

	*out = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsArray(v) || (nonempty && !v->child)) {
		cfg_describe(v, got, sizeof(got));
		if (cJSON_IsArray(v))
			snprintf(got, sizeof(got), "an empty array");
		return cfg_error(err, file, path, key, "expected %s%s, got %s",
				 nonempty ? "a non-empty array of " : "an array of ", what, got);
	}
	*out = v;
	return 0;
}

/* ---- top level ---- */

struct top_raw {
	char *name;
	int64_t seed;
};

static const struct cfg_key top_keys[] = {
	{ "name", CFG_STR, offsetof(struct top_raw, name), false, 0, 0, 0, NULL, NULL },
	{ "description", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "duration_s", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "seed", CFG_INT, offsetof(struct top_raw, seed), false, 1, 0, MAX_SAFE_INT, NULL, NULL },
	{ "providers", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "groups", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "actions", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "phases", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "load", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "setups", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "expect", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "prices", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "ci", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "objective", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "detection", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "sim", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};

/* The file's base name without ".json", as a default scenario name. */
static char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(base);

	if (n > 5 && strcmp(base + n - 5, ".json") == 0)
		n -= 5;
	return strndup(base, n);
}

static int load_top(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	struct top_raw top = { 0 };
	const cJSON *desc;
	char got[96];
	double dur_s = 0;
	int rc;

	rc = cfg_apply(top_keys, NELEM(top_keys), root, &top, file, "", err);
	if (rc)
		goto out;
	if (top.name) {
		if (!scenario__name_ok(top.name)) {
			rc = cfg_error(err, file, "", "name", "expected " NAME_RULE ", got \"%.64s\"",
				       top.name);
			goto out;
		}
		sc->name = top.name;
		top.name = NULL;
	} else {
		sc->name = base_name(file);
		if (!sc->name) {
			rc = scenario__oom(err, file, "name");
			goto out;
		}
		if (!scenario__name_ok(sc->name)) {
			rc = cfg_error(err, file, "", "name", "missing, and the file's base name "
				       "\"%.64s\" is not " NAME_RULE ": expected a name", sc->name);
			goto out;
		}
	}
	desc = cJSON_GetObjectItemCaseSensitive(root, "description");
	if (desc && !cJSON_IsString(desc)) {
		cfg_describe(desc, got, sizeof(got));
		rc = cfg_error(err, file, "", "description", "expected a string, got %s", got);
		goto out;
	}
	sc->description = strdup(desc ? desc->valuestring : "");
	if (!sc->description) {
		rc = scenario__oom(err, file, "description");
		goto out;
	}
	rc = read_positive(root, "duration_s", 86400, file, "", &dur_s, err);
	if (rc)
		goto out;
	sc->duration_ms = dur_s * 1000.0;
	sc->seed = (uint64_t)top.seed;
out:
	cfg_free(top_keys, NELEM(top_keys), &top);
	return rc;
}

/* ---- ci ---- */

struct ci_raw {
	char *why;
};

static const struct cfg_key ci_keys[] = {
	{ "time_scale", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "why", CFG_STR, offsetof(struct ci_raw, why), true, 0, 0, 0, NULL, NULL },
};

/*
 * "ci": {"time_scale": S, "why": "…"}: the scale CI runs the scenario at,
 * in (0, SC_CI_SCALE_MAX], and why that one. Absent: 1, and why NULL
 * (*why may be NULL when the caller does not want it). Never scaled: no
 * key of it names a time or a rate.
 */
static int read_ci(const cJSON *root, const char *file, double *scale, char **why, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "ci");
	struct ci_raw raw = { 0 };
	char got[96];
	int rc = 0;

	*scale = 1;
	if (why)
		*why = NULL;
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, "", "ci", "expected an object {\"time_scale\": S, "
				 "\"why\": \"…\"}, got %s", got);
	}
	rc = cfg_apply(ci_keys, NELEM(ci_keys), obj, &raw, file, "ci", err);
	if (!rc)
		rc = read_positive(obj, "time_scale", SC_CI_SCALE_MAX, file, "ci", scale, err);
	if (!rc && why) {
		*why = raw.why;
		raw.why = NULL;
	}
	cfg_free(ci_keys, NELEM(ci_keys), &raw);
	return rc;
}

/* ---- providers ---- */

/*
 * Validates the providers and groups with mockprov's own loader, on a copy
 * whose providers without a listen get 127.0.0.1:0, so every message names
 * this file and providers[i].KEY or groups.NAME.KEY as mockprov words it.
 */
static int load_providers(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
	const cJSON *arr;
	struct mock_config mc = { 0 };
	cJSON *top = NULL;
	cJSON *copy = NULL;
	cJSON *p;
	size_t i;
	int rc;

	rc = scenario__get_array(root, "providers", true, "providers (mockprov provider objects)",
				 file, "", &arr, err);
	if (rc)
		return rc;
	sc->providers = cJSON_Duplicate(arr, 1);
	top = cJSON_CreateObject();
	copy = cJSON_Duplicate(arr, 1);
	if (!sc->providers || !top || !copy || !cJSON_AddItemToObject(top, "providers", copy)) {
		cJSON_Delete(copy);
		rc = scenario__oom(err, file, "providers");
		goto out;
	}
	cJSON_ArrayForEach(p, copy) {
		if (cJSON_IsObject(p) && !cJSON_GetObjectItemCaseSensitive(p, "listen") &&
		    !cJSON_AddStringToObject(p, "listen", "127.0.0.1:0")) {
			rc = scenario__oom(err, file, "providers");
			goto out;
		}
	}
	if (groups) {
		sc->groups = cJSON_Duplicate(groups, 1);
		copy = cJSON_Duplicate(groups, 1);
		if (!sc->groups || !copy || !cJSON_AddItemToObject(top, "groups", copy)) {
			cJSON_Delete(copy);
			rc = scenario__oom(err, file, "groups");
			goto out;
		}
	}
	rc = mock_config_from_json(top, file, &mc, err);
	if (!rc)	/* the runner never passes --allow-remote: fail here, not at start */
		rc = mock_config_require_loopback(&mc, file, err);
	if (rc)
		goto out;
	sc->provider_names = calloc(mc.nproviders, sizeof(*sc->provider_names));
	if (!sc->provider_names) {
		rc = scenario__oom(err, file, "providers");
		goto out;
	}
	for (i = 0; i < mc.nproviders; i++) {
		sc->provider_names[i] = mc.providers[i].name;
		mc.providers[i].name = NULL;
		sc->nproviders = i + 1;
	}
out:
	mock_config_free(&mc);
	cJSON_Delete(top);
	return rc;
}

/* Looks up the provider named by key; an unknown name is an error. */
int scenario__provider_ref(const struct scenario *sc, const char *name, const char *file,
			   const char *path, const char *key, size_t *out, char *err)
{
	char list[256];
	int idx = scenario_provider_index(sc, name);

	if (idx < 0) {
		scenario__names_text(sc->provider_names, sc->nproviders, list, sizeof(list));
		return cfg_error(err, file, path, key, "expected the name of a provider (%.160s), "
				 "got \"%.64s\"", list, name);
	}
	*out = (size_t)idx;
	return 0;
}

/* ---- prices ---- */

static const struct cfg_key price_keys[] = {
	{ "input", CFG_NUM, offsetof(struct sc_price, input), false, 0, 0, 1000, NULL, NULL },
	{ "output", CFG_NUM, offsetof(struct sc_price, output), false, 0, 0, 1000, NULL, NULL },
};

/* "prices": {"PROVIDER": {"input": USD per 1k, "output": USD per 1k}, …}. */
static int load_prices(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "prices");
	const cJSON *c;
	const cJSON *prev;
	char path[160];
	char got[96];
	size_t idx = 0;
	int rc;

	sc->prices = calloc(sc->nproviders, sizeof(*sc->prices));
	if (!sc->prices)
		return scenario__oom(err, file, "prices");
	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, "", "prices", "expected an object of providers' prices "
				 "{\"NAME\": {\"input\": USD per 1k, \"output\": USD per 1k}}, "
				 "got %s", got);
	}
	cJSON_ArrayForEach(c, obj) {
		for (prev = obj->child; prev != c; prev = prev->next) {
			if (strcmp(prev->string, c->string) == 0)
				return cfg_error(err, file, "prices", c->string,
						 "given twice; expected each provider once");
		}
		rc = scenario__provider_ref(sc, c->string, file, "prices", c->string, &idx, err);
		if (rc)
			return rc;
		snprintf(path, sizeof(path), "prices.%.120s", c->string);
		if (!cJSON_IsObject(c)) {
			cfg_describe(c, got, sizeof(got));
			return cfg_error(err, file, "prices", c->string, "expected an object "
					 "{\"input\", \"output\"} (USD per 1k tokens), got %s", got);
		}
		rc = cfg_apply(price_keys, NELEM(price_keys), c, &sc->prices[idx], file, path, err);
		if (rc)
			return rc;
		sc->prices[idx].set = true;
	}
	return 0;
}

/* ---- actions ---- */

struct action_raw {
	double at_s;
	int kind;
	char *provider;
	int64_t replica;
	bool redis;
};

static const char *const action_names[] = { "kill", "restart", NULL };

/* provider, replica and redis: exactly one is given (action_target). */
static const struct cfg_key action_keys[] = {
	{ "at_s", CFG_NUM, offsetof(struct action_raw, at_s), true, 0, 0, 0, NULL, NULL },
	{ "do", CFG_ENUM, offsetof(struct action_raw, kind), true, 0, 0, 0, NULL, action_names },
	{ "provider", CFG_STR, offsetof(struct action_raw, provider), false, 0, 0, 0, NULL, NULL },
	{ "replica", CFG_INT, offsetof(struct action_raw, replica), false, 0, 1, SC_REPLICAS_MAX,
	  NULL, NULL },
	{ "redis", CFG_BOOL, offsetof(struct action_raw, redis), false, 0, 0, 0, NULL, NULL },
};

bool scenario_action_same_target(const struct sc_action *a, const struct sc_action *b)
{
	if (a->target != b->target)
		return false;
	if (a->target == SC_TARGET_PROVIDER)
		return a->provider == b->provider;
	return a->target == SC_TARGET_REDIS || a->replica == b->replica;
}

/* What an action's target is called in messages: "\"primary\"", "replica 2", "Redis". */
static void target_text(const struct scenario *sc, const struct sc_action *a, char *out,
			size_t len)
{
	if (a->target == SC_TARGET_PROVIDER)
		snprintf(out, len, "\"%.64s\"", sc->provider_names[a->provider]);
	else if (a->target == SC_TARGET_REPLICA)
		snprintf(out, len, "replica %u", a->replica);
	else
		snprintf(out, len, "Redis");
}

/* Checks kills and restarts alternate per target, in time order. */
static int check_action_order(const struct scenario *sc, const size_t *file_idx,
			      const char *file, char *err)
{
	size_t i;
	size_t j;
	char path[64];
	char what[96];

	for (i = 0; i < sc->nactions; i++) {
		const struct sc_action *a = &sc->actions[i];
		const struct sc_action *last = NULL;
		size_t last_idx = 0;

		for (j = 0; j < i; j++) {
			if (scenario_action_same_target(&sc->actions[j], a)) {
				last = &sc->actions[j];
				last_idx = file_idx[j];
			}
		}
		snprintf(path, sizeof(path), "actions[%zu]", file_idx[i]);
		target_text(sc, a, what, sizeof(what));
		if (a->kind == SC_RESTART && (!last || last->kind != SC_KILL))
			return cfg_error(err, file, path, "do",
					 "expected a \"restart\" only after a \"kill\" of %s, "
					 "got a restart at %g s while it runs", what, a->at_ms / 1000.0);
		if (a->kind == SC_KILL && last && last->kind == SC_KILL)
			return cfg_error(err, file, path, "do",
					 "expected a \"restart\" of %s between two kills, got a "
					 "second \"kill\" at %g s (actions[%zu] killed it)",
					 what, a->at_ms / 1000.0, last_idx);
	}
	return 0;
}

/* Which of provider, replica and redis the action names: exactly one. */
static int action_target(const struct scenario *sc, const cJSON *item, struct action_raw *raw,
			 const char *file, const char *path, struct sc_action *a, char *err)
{
	const cJSON *redis = cJSON_GetObjectItemCaseSensitive(item, "redis");
	int given = !!raw->provider + !!cJSON_GetObjectItemCaseSensitive(item, "replica") + !!redis;

	if (given != 1)
		return cfg_error(err, file, path, given ? "replica" : "provider",
				 "expected exactly one of \"provider\" (a provider's name), "
				 "\"replica\" (a gateway replica, from 1) and \"redis\" (true), "
				 "got %d", given);
	if (raw->provider) {
		a->target = SC_TARGET_PROVIDER;
		return scenario__provider_ref(sc, raw->provider, file, path, "provider",
					      &a->provider, err);
	}
	if (redis) {
		if (!raw->redis)
			return cfg_error(err, file, path, "redis", "expected true (the Redis of "
					 "every setup with shared_state redis), got false");
		a->target = SC_TARGET_REDIS;
		return 0;
	}
	a->target = SC_TARGET_REPLICA;
	a->replica = (unsigned)raw->replica;
	return 0;
}

static int load_actions(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	struct cfg_key keys[NELEM(action_keys)];
	const cJSON *arr;
	const cJSON *item;
	size_t *file_idx = NULL;
	size_t n;
	size_t i = 0;
	size_t j;
	char path[64];
	int rc;

	rc = scenario__get_array(root, "actions", false,
				 "actions {\"at_s\",\"do\",\"provider\"|\"replica\"|\"redis\"}",
				 file, "", &arr, err);
	if (rc || !arr || !arr->child)
		return rc;
	memcpy(keys, action_keys, sizeof(keys));
	keys[0].max = sc->duration_ms / 1000.0;
	n = (size_t)cJSON_GetArraySize(arr);
	sc->actions = calloc(n, sizeof(*sc->actions));
	file_idx = calloc(n, sizeof(*file_idx));
	if (!sc->actions || !file_idx) {
		rc = scenario__oom(err, file, "actions");
		goto out;
	}
	cJSON_ArrayForEach(item, arr) {
		struct action_raw raw = { 0 };
		struct sc_action a = { 0 };

		snprintf(path, sizeof(path), "actions[%zu]", i);
		rc = cfg_apply(keys, NELEM(keys), item, &raw, file, path, err);
		if (!rc)
			rc = action_target(sc, item, &raw, file, path, &a, err);
		cfg_free(keys, NELEM(keys), &raw);
		if (rc)
			goto out;
		a.at_ms = raw.at_s * 1000.0;
		a.kind = raw.kind == 0 ? SC_KILL : SC_RESTART;
		/* Insertion sort by time, stable: equal times keep the file's order. */
		for (j = i; j > 0 && sc->actions[j - 1].at_ms > a.at_ms; j--) {
			sc->actions[j] = sc->actions[j - 1];
			file_idx[j] = file_idx[j - 1];
		}
		sc->actions[j] = a;
		file_idx[j] = i;
		sc->nactions = ++i;
	}
	rc = check_action_order(sc, file_idx, file, err);
out:
	free(file_idx);
	return rc;
}

bool scenario_action_applies(const struct sc_action *a, const struct sc_setup *st)
{
	switch (a->target) {
	case SC_TARGET_PROVIDER:
		return true;
	case SC_TARGET_REPLICA:
		return st->kind == SC_GATEWAY && st->replicas >= a->replica;
	case SC_TARGET_REDIS:
		return st->shared_redis;
	}
	return false;
}

/*
 * Once the setups are loaded: an action on a replica or on Redis must
 * apply to some setup (a replica K needs a gateway setup with at least K
 * replicas; Redis one with shared_state redis). The actions are sorted by
 * time; a message names the one in the file's order.
 */
static int check_action_setups(const cJSON *root, const char *file, const struct scenario *sc,
			       char *err)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "actions");
	const cJSON *item;
	size_t i = 0;
	size_t s;
	char path[64];

	cJSON_ArrayForEach(item, arr) {
		const cJSON *rep = cJSON_GetObjectItemCaseSensitive(item, "replica");
		struct sc_action a = { .target = SC_TARGET_REDIS };

		snprintf(path, sizeof(path), "actions[%zu]", i++);
		if (cJSON_IsNumber(rep)) {
			a.target = SC_TARGET_REPLICA;
			a.replica = (unsigned)rep->valuedouble;
		} else if (!cJSON_GetObjectItemCaseSensitive(item, "redis")) {
			continue;
		}
		for (s = 0; s < sc->nsetups && !scenario_action_applies(&a, &sc->setups[s]); s++)
			;
		if (s < sc->nsetups)
			continue;
		if (a.target == SC_TARGET_REPLICA)
			return cfg_error(err, file, path, "replica", "expected a replica some gateway "
					 "setup has (1 to its \"replicas\"), got %u: no gateway setup "
					 "has %u replicas", a.replica, a.replica);
		return cfg_error(err, file, path, "redis", "expected a setup with \"shared_state\": "
				 "\"redis\" for Redis to be killed or restarted in, got none");
	}
	return 0;
}

bool scenario_setup_replicated(const struct sc_setup *st)
{
	return st->kind == SC_GATEWAY && (st->replicas > 1 || st->shared_redis);
}

/*
 * A gateway setup whose alias answers degraded (static or cached) when
 * nothing healthy can: the simulator models no answer's content, so it
 * would count errors where the gateway answers. Returns 0, or -EINVAL
 * with the message naming the alias's degraded.mode.
 */
static int sim_degraded_check(const struct sc_setup *st, const char *path, const char *file,
			      char *err)
{
	const cJSON *alias;
	char key[192];

	if (st->kind != SC_GATEWAY)
		return 0;
	cJSON_ArrayForEach(alias, cJSON_GetObjectItemCaseSensitive(st->config, "models")) {
		const char *mode = json_get_string(
			cJSON_GetObjectItemCaseSensitive(alias, "degraded"), "mode");

		if (!mode || strcmp(mode, "error") == 0)
			continue;
		snprintf(key, sizeof(key), "config.models.%.64s.degraded.mode", alias->string);
		return cfg_error(err, file, path, key, "chaos sim does not simulate degraded "
				 "answers yet: expected \"error\", got \"%s\" (chaos run runs it)",
				 mode);
	}
	return 0;
}

/*
 * A bad_content fault in the fault array faults of the object at path
 * (providers[i], groups.NAME): chaos sim refuses it, naming its kind.
 */
static int sim_check_faults(const struct scenario *sc, const cJSON *faults, const char *path,
			    char *err)
{
	const cJSON *f;
	char fpath[128];
	size_t j = 0;

	if (!cJSON_IsArray(faults))
		return 0;
	cJSON_ArrayForEach(f, faults) {
		const char *kind = json_get_string(f, "kind");

		if (kind && strcmp(kind, "bad_content") == 0) {
			snprintf(fpath, sizeof(fpath), "%s.faults[%zu]", path, j);
			return cfg_error(err, sc->path, fpath, "kind", "chaos sim does not simulate "
					 "answers' content yet: expected a kind other than "
					 "\"bad_content\" (chaos run runs it)");
		}
		j++;
	}
	return 0;
}

int scenario_sim_check(const struct scenario *sc, const char *only_setup, char *err)
{
	const cJSON *p;
	char where[96];
	size_t i;
	int rc;

	for (i = 0; i < sc->nsetups; i++) {
		const struct sc_setup *st = &sc->setups[i];
		char path[96];

		if (only_setup && strcmp(only_setup, st->name) != 0)
			continue;
		snprintf(path, sizeof(path), "setups[%zu] \"%.40s\"", i, st->name);
		if (st->replicas > 1)
			return cfg_error(err, sc->path, path, "replicas", "chaos sim does not simulate "
					 "gateway replicas yet: expected 1, got %u (chaos run runs it)",
					 st->replicas);
		if (st->shared_redis)
			return cfg_error(err, sc->path, path, "shared_state", "chaos sim does not "
					 "simulate Redis yet: expected \"local\", got \"redis\" (chaos "
					 "run runs it)");
		if (sim_degraded_check(st, path, sc->path, err))
			return -EINVAL;
	}
	for (i = 0; i < sc->nactions; i++) {
		const struct sc_action *a = &sc->actions[i];
		size_t s;

		for (s = 0; a->target != SC_TARGET_PROVIDER && s < sc->nsetups; s++) {
			if (only_setup && strcmp(only_setup, sc->setups[s].name) != 0)
				continue;
			if (scenario_action_applies(a, &sc->setups[s]))
				return cfg_error(err, sc->path, "actions[]",
						 a->target == SC_TARGET_REDIS ? "redis" : "replica",
						 "chaos sim does not simulate kills and restarts of "
						 "gateway replicas or Redis yet: expected \"provider\", "
						 "got one at %g s that setup \"%.40s\" would carry out "
						 "(chaos run runs it)", a->at_ms / 1000.0,
						 sc->setups[s].name);
		}
	}
	i = 0;
	cJSON_ArrayForEach(p, sc->providers) {
		snprintf(where, sizeof(where), "providers[%zu]", i++);
		rc = sim_check_faults(sc, cJSON_GetObjectItemCaseSensitive(p, "faults"), where, err);
		if (rc)
			return rc;
	}
	cJSON_ArrayForEach(p, sc->groups) {
		snprintf(where, sizeof(where), "groups.%.64s", p->string);
		rc = sim_check_faults(sc, cJSON_GetObjectItemCaseSensitive(p, "faults"), where, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- phases ---- */

struct phase_raw {
	char *name;
	double from_s;
	double to_s;
};

static const struct cfg_key phase_keys[] = {
	{ "name", CFG_STR, offsetof(struct phase_raw, name), true, 0, 0, 0, NULL, NULL },
	{ "from_s", CFG_NUM, offsetof(struct phase_raw, from_s), true, 0, 0, 0, NULL, NULL },
	{ "to_s", CFG_NUM, offsetof(struct phase_raw, to_s), true, 0, 0, 0, NULL, NULL },
};

/* Checks phase i against the ones before it: a new name, no overlap. */
static int check_phase(const struct scenario *sc, size_t i, const char *file, const char *path,
		       char *err)
{
	const struct sc_phase *p = &sc->phases[i];
	size_t j;

	for (j = 0; j < i; j++) {
		const struct sc_phase *q = &sc->phases[j];

		if (strcmp(p->name, q->name) == 0)
			return cfg_error(err, file, path, "name", "expected a name no other phase has, "
					 "got \"%s\" (also phases[%zu])", p->name, j);
		if (p->from_ms < q->to_ms && q->from_ms < p->to_ms)
			return cfg_error(err, file, path,
					 p->from_ms >= q->from_ms ? "from_s" : "to_s",
					 "expected a window that overlaps no other phase, got %g-%g s, "
					 "which overlaps phases[%zu] \"%s\" (%g-%g s)",
					 p->from_ms / 1000.0, p->to_ms / 1000.0, j, q->name,
					 q->from_ms / 1000.0, q->to_ms / 1000.0);
	}
	return 0;
}

static int load_phases(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	struct cfg_key keys[NELEM(phase_keys)];
	const cJSON *arr;
	const cJSON *item;
	size_t i = 0;
	char path[64];
	int rc;

	rc = scenario__get_array(root, "phases", true,
				 "phases {\"name\",\"from_s\",\"to_s\"} (leave it out for one "
				 "phase \"all\")", file, "", &arr, err);
	if (rc)
		return rc;
	if (!arr) {
		sc->phases = calloc(1, sizeof(*sc->phases));
		if (!sc->phases)
			return scenario__oom(err, file, "phases");
		sc->nphases = 1;
		sc->phases[0].name = strdup("all");
		sc->phases[0].to_ms = sc->duration_ms;
		return sc->phases[0].name ? 0 : scenario__oom(err, file, "phases");
	}
	memcpy(keys, phase_keys, sizeof(keys));
	keys[1].max = keys[2].max = sc->duration_ms / 1000.0;
	sc->phases = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->phases));
	if (!sc->phases)
		return scenario__oom(err, file, "phases");
	cJSON_ArrayForEach(item, arr) {
		struct phase_raw raw = { 0 };
		struct sc_phase *p = &sc->phases[i];

		snprintf(path, sizeof(path), "phases[%zu]", i);
		sc->nphases = i + 1;
		rc = cfg_apply(keys, NELEM(keys), item, &raw, file, path, err);
		if (!rc && !scenario__name_ok(raw.name))
			rc = cfg_error(err, file, path, "name", "expected " NAME_RULE ", got \"%.64s\"",
				       raw.name);
		if (!rc && !(raw.to_s > raw.from_s))
			rc = cfg_error(err, file, path, "to_s", "expected a time after from_s (%g), "
				       "got %g", raw.from_s, raw.to_s);
		if (rc) {
			cfg_free(keys, NELEM(keys), &raw);
			return rc;
		}
		p->name = raw.name;
		p->from_ms = raw.from_s * 1000.0;
		p->to_ms = raw.to_s * 1000.0;
		rc = check_phase(sc, i, file, path, err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/* ---- load ---- */

struct load_raw {
	int64_t concurrency;
	double ramp_up_ms;
	double error_think_ms;
	int arrival;
	double stream;
	double timeout_ms;
	double stall_timeout_ms;
	char *model;
	int64_t prompt_tokens;
	int64_t max_tokens;
};

static const char *const arrival_names[] = { "constant", "poisson", NULL };

#define LK(name, type, field, def, min, max, defs, choices) \
	{ name, type, offsetof(struct load_raw, field), false, def, min, max, defs, choices }

static const struct cfg_key load_keys[] = {
	{ "rate", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	LK("concurrency", CFG_INT, concurrency, 0, 1, 10000, NULL, NULL),
	LK("ramp_up_ms", CFG_NUM, ramp_up_ms, 0, 0, 3600000, NULL, NULL),
	LK("error_think_ms", CFG_NUM, error_think_ms, NAN, 0, 60000, NULL, NULL),
	LK("arrival", CFG_ENUM, arrival, 0, 0, 0, "constant", arrival_names),
	LK("stream", CFG_NUM, stream, 0, 0, 1, NULL, NULL),
	LK("timeout_ms", CFG_NUM, timeout_ms, 30000, 1, 3600000, NULL, NULL),
	LK("stall_timeout_ms", CFG_NUM, stall_timeout_ms, NAN, 1, 3600000, NULL, NULL),
	LK("model", CFG_STR, model, 0, 0, 0, "chat", NULL),
	LK("prompt_tokens", CFG_INT, prompt_tokens, 16, 1, 1000000, NULL, NULL),
	LK("max_tokens", CFG_INT, max_tokens, 16, 1, 1000000, NULL, NULL),
	{ "mix", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};

/* The mix's streams give rates (loadgen then sends at their sum). */
static bool mix_by_rate(const cJSON *mix)
{
	const cJSON *streams = cJSON_GetObjectItemCaseSensitive(mix, "streams");
	const cJSON *st;

	cJSON_ArrayForEach(st, streams) {
		if (cJSON_IsObject(st) && cJSON_GetObjectItemCaseSensitive(st, "rate"))
			return true;
	}
	return false;
}

/* cfg_error's "FILE: " for loadgen's messages, to be replaced by "FILE: load.mix.". */
#define MIX_FILE_MARK "\x01"

/*
 * Checks load.mix with loadgen's own reader (mix_from_json), as loadgen
 * will take it (scenario_loadgen_mix: with the one stream the runner adds
 * when it names none), with the load section's model, stream share and
 * token counts as its defaults. Messages are said as
 * "FILE: load.mix.KEY: expected …".
 */
static int check_mix(const struct scenario *sc, const char *file, char *err)
{
	const struct sc_load *l = &sc->load;
	const struct mix_defaults d = {
		.model = l->model,
		.stream_p = l->stream_p,
		.prompt_tokens = l->prompt_tokens,
		.max_tokens = l->max_tokens,
	};
	struct mix m;
	struct buf msg = { 0 };
	char merr[CFG_ERR_LEN];
	const char *rest;
	cJSON *mix;
	bool oom;
	int rc = -ENOMEM;

	mix = scenario_loadgen_mix(sc, NULL, &oom);
	if (!mix)
		goto out;
	rc = mix_from_json(&m, mix, MIX_FILE_MARK, &d, merr);
	if (!rc) {
		mix_free(&m);
		goto out;
	}
	rest = merr;
	if (strncmp(rest, MIX_FILE_MARK ": ", sizeof(MIX_FILE_MARK ": ") - 1) == 0)
		rest += sizeof(MIX_FILE_MARK ": ") - 1;
	rc = buf_printf(&msg, "%.160s: load.mix%s%s", file, rest[0] == ':' ? "" : ".", rest);
	if (rc)
		goto out;
	/* Cut, like every message, at CFG_ERR_LEN. */
	snprintf(err, CFG_ERR_LEN, "%s", msg.data);
	rc = -EINVAL;
out:
	if (rc == -ENOMEM)
		rc = scenario__oom(err, file, "load.mix");
	buf_free(&msg);
	cJSON_Delete(mix);
	return rc;
}

static int load_load(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "load");
	const cJSON *mix = cJSON_GetObjectItemCaseSensitive(obj, "mix");
	const cJSON *rate = cJSON_GetObjectItemCaseSensitive(obj, "rate");
	const cJSON *conc = cJSON_GetObjectItemCaseSensitive(obj, "concurrency");
	struct load_raw raw = { 0 };
	struct sc_load *l = &sc->load;
	char got[96];
	int rc;

	rc = cfg_apply(load_keys, NELEM(load_keys), obj, &raw, file, "load", err);
	if (rc)
		goto out;
	if (mix && !cJSON_IsObject(mix)) {
		cfg_describe(mix, got, sizeof(got));
		rc = cfg_error(err, file, "load", "mix", "expected an object (a loadgen mix file's "
			       "contents), got %s", got);
		goto out;
	}
	if (rate && conc) {
		rc = cfg_error(err, file, "load", "concurrency", "expected rate (open loop) or "
			       "concurrency (closed loop), got both");
		goto out;
	}
	if (rate && mix && mix_by_rate(mix)) {
		rc = cfg_error(err, file, "load", "rate", "expected no rate when the mix's streams "
			       "give rates (loadgen sends at their sum), got a rate too");
		goto out;
	}
	if (!rate && !conc && !(mix && mix_by_rate(mix))) {
		rc = cfg_error(err, file, "load", NULL, "expected rate (requests per second, open "
			       "loop) or concurrency (clients, closed loop), got neither");
		goto out;
	}
	if (rate) {
		rc = read_positive(obj, "rate", 100000, file, "load", &l->rate, err);
		if (rc)
			goto out;
	}
	if (conc && cJSON_GetObjectItemCaseSensitive(obj, "arrival")) {
		rc = cfg_error(err, file, "load", "arrival", "expected arrival only with an open "
			       "loop (rate), got it with concurrency");
		goto out;
	}
	if (!conc && cJSON_GetObjectItemCaseSensitive(obj, "ramp_up_ms")) {
		rc = cfg_error(err, file, "load", "ramp_up_ms", "expected ramp_up_ms only with a "
			       "closed loop (concurrency), got it with an open loop");
		goto out;
	}
	if (!conc && cJSON_GetObjectItemCaseSensitive(obj, "error_think_ms")) {
		rc = cfg_error(err, file, "load", "error_think_ms", "expected error_think_ms only "
			       "with a closed loop (concurrency), got it with an open loop");
		goto out;
	}
	if (raw.ramp_up_ms > 0 && raw.ramp_up_ms >= sc->duration_ms) {
		rc = cfg_error(err, file, "load", "ramp_up_ms", "expected less than the duration "
			       "(%g ms): the clients begin within the run, got %g", sc->duration_ms,
			       raw.ramp_up_ms);
		goto out;
	}
	l->concurrency = (unsigned)raw.concurrency;
	l->ramp_up_ms = raw.ramp_up_ms;
	/* Absent: the default, scaled as the key would have been. */
	l->error_think_ms = !conc ? 0 : isnan(raw.error_think_ms) ?
			    SC_ERROR_THINK_MS * sc->scale : raw.error_think_ms;
	l->arrival = raw.arrival == 0 ? SC_ARRIVAL_CONSTANT : SC_ARRIVAL_POISSON;
	l->stream_p = raw.stream;
	l->timeout_ms = raw.timeout_ms;
	l->stall_timeout_ms = raw.stall_timeout_ms;
	l->model = raw.model;
	raw.model = NULL;
	l->prompt_tokens = raw.prompt_tokens;
	l->max_tokens = raw.max_tokens;
	if (mix) {
		l->mix = cJSON_Duplicate(mix, 1);
		rc = l->mix ? check_mix(sc, file, err) : scenario__oom(err, file, "load.mix");
	}
out:
	cfg_free(load_keys, NELEM(load_keys), &raw);
	return rc;
}

/* ---- detection ---- */

struct detection_raw {
	char *fault_phase;
	char *recovery_phase;
};

static const struct cfg_key detection_keys[] = {
	{ "fault_phase", CFG_STR, offsetof(struct detection_raw, fault_phase), true, 0, 0, 0,
	  NULL, NULL },
	{ "recovery_phase", CFG_STR, offsetof(struct detection_raw, recovery_phase), true, 0, 0,
	  0, NULL, NULL },
};

/* The index of the phase called name into *out, or -EINVAL naming detection.key. */
static int phase_ref(const struct scenario *sc, const char *name, const char *file,
		     const char *key, size_t *out, char *err)
{
	char names[256];
	size_t i;

	for (i = 0; i < sc->nphases; i++) {
		if (strcmp(sc->phases[i].name, name) == 0) {
			*out = i;
			return 0;
		}
	}
	names[0] = '\0';
	for (i = 0; i < sc->nphases; i++) {
		size_t len = strlen(names);

		snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
			 sc->phases[i].name);
	}
	return cfg_error(err, file, "detection", key, "expected one of the phases (%s), got "
			 "\"%.64s\"", names, name);
}

/*
 * "detection": {"fault_phase": P, "recovery_phase": Q}, two different
 * phases, Q after P. Absent: no detection study (sc->detection.set false).
 */
static int load_detection(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "detection");
	struct detection_raw raw = { 0 };
	struct sc_detection *d = &sc->detection;
	char got[96];
	int rc;

	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, "", "detection", "expected an object {\"fault_phase\": "
				 "\"…\", \"recovery_phase\": \"…\"}, got %s", got);
	}
	rc = cfg_apply(detection_keys, NELEM(detection_keys), obj, &raw, file, "detection", err);
	if (!rc)
		rc = phase_ref(sc, raw.fault_phase, file, "fault_phase", &d->fault_phase, err);
	if (!rc)
		rc = phase_ref(sc, raw.recovery_phase, file, "recovery_phase", &d->recovery_phase,
			       err);
	if (!rc && !(sc->phases[d->recovery_phase].from_ms >= sc->phases[d->fault_phase].to_ms))
		rc = cfg_error(err, file, "detection", "recovery_phase", "expected a phase that "
			       "starts at or after the fault phase \"%s\" ends, got \"%s\"",
			       raw.fault_phase, raw.recovery_phase);
	d->set = rc == 0;
	cfg_free(detection_keys, NELEM(detection_keys), &raw);
	return rc;
}

/* ---- sim ---- */

/*
 * The simulator's model constants, measured on loopback (docs/chaos.md,
 * "chaos sim"): the defaults are what `chaos compare` was calibrated with.
 */
static const struct cfg_key sim_keys[] = {
	{ "latency_ms", CFG_NUM, offsetof(struct sc_sim, latency_ms), false, 0.3, 0.001, 1000, NULL,
	  NULL },
	{ "refused_ms", CFG_NUM, offsetof(struct sc_sim, refused_ms), false, 0.41, 0.001, 1000,
	  NULL, NULL },
	{ "answer_ms", CFG_NUM, offsetof(struct sc_sim, answer_ms), false, 0.28, 0, 1000, NULL,
	  NULL },
	{ "gateway_ms", CFG_NUM, offsetof(struct sc_sim, gateway_ms), false, 0.75, 0, 1000, NULL,
	  NULL },
	{ "jitter_ms", CFG_NUM, offsetof(struct sc_sim, jitter_ms), false, 0.6, 0, 1000, NULL,
	  NULL },
	{ "restart_ms", CFG_NUM, offsetof(struct sc_sim, restart_ms), false, 0.4, 0, 60000, NULL,
	  NULL },
};

/* "sim": {latency_ms, refused_ms, answer_ms, jitter_ms, gateway_ms, restart_ms}; absent: the defaults. */
static int load_sim(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "sim");
	static const cJSON empty = { .type = cJSON_Object };
	char got[96];

	if (obj && !cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, "", "sim", "expected an object {\"latency_ms\": …}, got %s",
				 got);
	}
	return cfg_apply(sim_keys, NELEM(sim_keys), obj ? obj : &empty, &sc->sim, file, "sim", err);
}

/* ---- the scenario ---- */

int scenario_load(const char *path, double scale, struct scenario *sc, char *err)
{
	cJSON *root;
	int rc;

	memset(sc, 0, sizeof(*sc));
	root = json_load_file(path, err, CFG_ERR_LEN);
	if (!root)
		return -EINVAL;
	rc = scenario_load_json(root, path, scale, sc, err);
	cJSON_Delete(root);
	return rc;
}

int scenario_load_json(const cJSON *doc, const char *path, double scale, struct scenario *sc,
		       char *err)
{
	cJSON *root = NULL;
	size_t len;
	int rc;

	memset(sc, 0, sizeof(*sc));
	if (!isfinite(scale) || !(scale > 0) || scale > SC_SCALE_MAX) {
		snprintf(err, CFG_ERR_LEN, "%.160s: time scale: expected a number above 0 and at "
			 "most %g, got %g", path, SC_SCALE_MAX, scale);
		return -EINVAL;
	}
	root = cJSON_Duplicate(doc, true);
	if (!root)
		return scenario__oom(err, path, NULL);
	scenario_scale(root, scale);
	sc->scale = scale;
	sc->path = strdup(path);
	sc->written = cJSON_Duplicate(doc, true);
	if (!sc->path || !sc->written) {
		rc = scenario__oom(err, path, NULL);
		goto out;
	}
	rc = load_top(root, path, sc, err);
	if (!rc)
		rc = read_ci(root, path, &sc->ci_scale, &sc->ci_why, err);
	if (!rc)
		rc = load_providers(root, path, sc, err);
	if (!rc)
		rc = load_prices(root, path, sc, err);
	if (!rc)
		rc = load_actions(root, path, sc, err);
	if (!rc)
		rc = load_phases(root, path, sc, err);
	if (!rc)
		rc = load_detection(root, path, sc, err);
	if (!rc)
		rc = load_sim(root, path, sc, err);
	if (!rc)
		rc = load_load(root, path, sc, err);
	if (!rc)
		rc = setup_load_all(root, path, sc, err);
	if (!rc)
		rc = check_action_setups(root, path, sc, err);
	if (!rc)
		rc = expect_load_all(root, doc, path, sc, err);
	if (!rc)
		rc = objective_load(root, path, sc, err);
out:
	cJSON_Delete(root);
	if (rc) {
		scenario_free(sc);
		len = strlen(err);
		if (scale != 1 && len + 64 < CFG_ERR_LEN)
			snprintf(err + len, CFG_ERR_LEN - len,
				 " (times as scaled by the time scale %g)", scale);
	}
	return rc;
}

void scenario_free(struct scenario *sc)
{
	size_t i;

	free(sc->name);
	free(sc->description);
	free(sc->ci_why);
	free(sc->path);
	cJSON_Delete(sc->providers);
	cJSON_Delete(sc->groups);
	for (i = 0; i < sc->nproviders; i++)
		free(sc->provider_names[i]);
	free(sc->provider_names);
	free(sc->prices);
	free(sc->actions);
	for (i = 0; i < sc->nphases; i++)
		free(sc->phases[i].name);
	free(sc->phases);
	free(sc->load.model);
	cJSON_Delete(sc->load.mix);
	for (i = 0; i < sc->nsetups; i++)
		setup_free(&sc->setups[i]);
	free(sc->setups);
	cJSON_Delete(sc->added);
	cJSON_Delete(sc->written);
	for (i = 0; i < sc->nexpects; i++) {
		free(sc->expects[i].setup);
		free(sc->expects[i].phase);
		free(sc->expects[i].cls);
		free(sc->expects[i].stream);
		free(sc->expects[i].relative_to);
	}
	free(sc->expects);
	objective_free(&sc->objective);
	memset(sc, 0, sizeof(*sc));
}

int scenario_ci_scale(const char *path, double *scale, char *err)
{
	cJSON *root = json_load_file(path, err, CFG_ERR_LEN);
	int rc;

	*scale = 1;
	if (!root)
		return -EINVAL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return cfg_error(err, path, "", NULL, "expected an object, got %s",
				 cJSON_IsArray(root) ? "an array" : "another value");
	}
	rc = read_ci(root, path, scale, NULL, err);
	cJSON_Delete(root);
	return rc;
}

int scenario_provider_index(const struct scenario *sc, const char *name)
{
	return scenario__find_name(sc->provider_names, sc->nproviders, name, strlen(name));
}

int scenario_phase_at(const struct scenario *sc, double t_ms)
{
	size_t i;

	for (i = 0; i < sc->nphases; i++) {
		if (sc->phases[i].from_ms <= t_ms && t_ms < sc->phases[i].to_ms)
			return (int)i;
	}
	return -1;
}

size_t scenario_windows(const struct scenario *sc, double *out, size_t max)
{
	size_t n = 0;
	size_t i;
	size_t j;

	for (i = 0; i < sc->nexpects; i++) {
		double w = sc->expects[i].window_ms;

		if (isnan(w))
			continue;
		for (j = 0; j < n && out[j] != w; j++)
			;
		if (j == n && n < max)
			out[n++] = w;
	}
	return n;
}

const char *scenario_primary(const struct scenario *sc, const struct sc_setup *st)
{
	const cJSON *models;
	const cJSON *targets;
	const cJSON *prov;

	if (st->kind == SC_DIRECT || st->kind == SC_CLIENT_RETRY)
		return sc->provider_names[st->provider];
	if (st->kind == SC_GATEWAY) {
		models = cJSON_GetObjectItemCaseSensitive(st->config, "models");
		targets = cJSON_GetObjectItemCaseSensitive(models ? models->child : NULL, "targets");
		prov = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(targets, 0), "provider");
		if (cJSON_IsString(prov))
			return prov->valuestring;
	}
	return sc->provider_names[0];
}

/* The setups' tables are runner/setup.c's, the expectations' runner/expect.c's. */
const struct cfg_section *scenario_sections(size_t *n)
{
	static struct cfg_section sections[16];
	const struct cfg_section own[] = {
		{ "", top_keys, NELEM(top_keys) },
		{ "ci", ci_keys, NELEM(ci_keys) },
		{ "prices.PROVIDER", price_keys, NELEM(price_keys) },
		{ "actions[]", action_keys, NELEM(action_keys) },
		{ "phases[]", phase_keys, NELEM(phase_keys) },
		{ "detection", detection_keys, NELEM(detection_keys) },
		{ "sim", sim_keys, NELEM(sim_keys) },
		{ "load", load_keys, NELEM(load_keys) },
	};
	size_t i;

	for (i = 0; i < NELEM(own); i++)
		sections[i] = own[i];
	i += setup_sections(&sections[i], NELEM(sections) - i);
	i += expect_sections(&sections[i], NELEM(sections) - i);
	i += objective_sections(&sections[i], NELEM(sections) - i);
	*n = i;
	return sections;
}
