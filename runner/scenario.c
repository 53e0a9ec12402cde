/*
 * scenario: loading and validating a scenario file, scaling its times,
 * and building the configs and command lines of a run from it.
 */
#include "runner/scenario.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/config.h"
#include "mockprov/config.h"
#include "common/buf.h"
#include "common/json.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The largest whole number a double holds exactly: seeds up to 2^53 − 1. */
#define MAX_SAFE_INT 9007199254740991.0

/* ---- small helpers ---- */

static int oom(char *err, const char *file, const char *path)
{
	cfg_error(err, file, path, NULL, "out of memory");
	return -ENOMEM;
}

/* A scenario, phase or setup name: 1–64 of [A-Za-z0-9_.-], not "." or "..". */
static bool name_ok(const char *s)
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

#define NAME_RULE "a name of 1-64 letters, digits, '_', '-' or '.' (not \".\" or \"..\")"

/* "a, b, c" from a list of names, cut to fit. */
static void names_text(char *const *names, size_t n, char *out, size_t len)
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

static int find_name(char *const *names, size_t n, const char *name, size_t len)
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
static int get_array(const cJSON *obj, const char *key, bool nonempty, const char *what,
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

/* ---- time scaling ---- */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* The key names a duration: …_s or …_ms, maybe followed by _max or _min. */
static bool key_is_time(const char *key)
{
	size_t n = strlen(key);

	if (ends_with(key, n, "_max") || ends_with(key, n, "_min"))
		n -= 4;
	return ends_with(key, n, "_s") || ends_with(key, n, "_ms");
}

/* The key names a rate: rate, rpm, tpm, or …_per_second (budget.min_per_second). */
static bool key_is_rate(const char *key)
{
	return strcmp(key, "rate") == 0 || strcmp(key, "rpm") == 0 || strcmp(key, "tpm") == 0 ||
	       ends_with(key, strlen(key), "_per_second");
}

/* Scales the members of node; key is node's own (array members inherit it). */
static void scale_node(cJSON *node, const char *key, double s)
{
	cJSON *c;

	cJSON_ArrayForEach(c, node) {
		const char *k = cJSON_IsArray(node) ? key : c->string;

		if (cJSON_IsNumber(c) && k) {
			if (key_is_time(k))
				cJSON_SetNumberHelper(c, c->valuedouble * s);
			else if (key_is_rate(k))
				cJSON_SetNumberHelper(c, c->valuedouble / s);
		} else if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
			scale_node(c, k, s);
		}
	}
}

int scenario_scale(cJSON *root, double s)
{
	if (!isfinite(s) || !(s > 0))
		return -EINVAL;
	if (root && (cJSON_IsArray(root) || cJSON_IsObject(root)))
		scale_node(root, root->string, s);
	return 0;
}

/* ---- placeholders ---- */

enum ph_kind { PH_NONE, PH_PORT, PH_LISTEN, PH_UPSTREAM, PH_UNKNOWN, PH_UNCLOSED };

/*
 * What s (at a '{') starts: {port}, {listen}, {upstream.NAME} (NAME runs
 * to the next '}'), another {word} of lower-case letters, '_' and '.' (a
 * misspelt placeholder), or plain text. *len is the placeholder's length.
 */
static enum ph_kind placeholder(const char *s, size_t *len, const char **name, size_t *namelen)
{
	static const char up[] = "{upstream.";
	const char *end;
	size_t i = 1;

	if (strncmp(s, up, sizeof(up) - 1) == 0) {
		end = strchr(s + sizeof(up) - 1, '}');
		if (!end)
			return PH_UNCLOSED;
		*name = s + sizeof(up) - 1;
		*namelen = (size_t)(end - *name);
		*len = (size_t)(end - s) + 1;
		return PH_UPSTREAM;
	}
	while ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' || s[i] == '.')
		i++;
	if (i == 1 || s[i] != '}')
		return PH_NONE;
	*len = i + 1;
	if (i - 1 == 4 && strncmp(s + 1, "port", 4) == 0)
		return PH_PORT;
	if (i - 1 == 6 && strncmp(s + 1, "listen", 6) == 0)
		return PH_LISTEN;
	return PH_UNKNOWN;
}

/* Where a template is used: which placeholders it may hold, and their values. */
struct subst_ctx {
	char *const *names;		/* provider names */
	size_t nnames;
	bool allow_port;		/* {port} and {listen} (external setups) */
	int port;
	const char *const *urls;	/* per provider; NULL: only check */
};

/*
 * Expands tmpl into out (NULL: only checks it). Returns 0, -ENOMEM, or
 * -EINVAL with why ("expected …, got …") saying what is wrong.
 */
static int subst(const struct subst_ctx *cx, const char *tmpl, struct buf *out, char *why,
		 size_t whylen)
{
	char list[256];
	const char *p = tmpl;
	const char *name = NULL;
	size_t namelen = 0;
	size_t len = 0;
	int rc = 0;
	int idx;

	while (!rc && *p) {
		const char *brace = strchr(p, '{');
		enum ph_kind kind;

		if (!brace) {
			if (out)
				rc = buf_puts(out, p);
			break;
		}
		if (out && brace > p)
			rc = buf_append(out, p, (size_t)(brace - p));
		if (rc)
			break;
		kind = placeholder(brace, &len, &name, &namelen);
		switch (kind) {
		case PH_NONE:
			if (out)
				rc = buf_append(out, "{", 1);
			p = brace + 1;
			continue;
		case PH_UNCLOSED:
			snprintf(why, whylen, "expected {upstream.NAME} closed by '}', got \"%.100s\"",
				 tmpl);
			return -EINVAL;
		case PH_UNKNOWN:
			snprintf(why, whylen, "expected only the placeholders %s, got \"%.*s\"",
				 cx->allow_port ? "{port}, {listen} and {upstream.NAME}" :
				 "{upstream.NAME} (the runner sets the gateway's listen)",
				 (int)len, brace);
			return -EINVAL;
		case PH_PORT:
		case PH_LISTEN:
			if (!cx->allow_port) {
				snprintf(why, whylen, "expected only {upstream.NAME} placeholders in a "
					 "gateway config (the runner sets its listen), got \"%.*s\"",
					 (int)len, brace);
				return -EINVAL;
			}
			if (out && kind == PH_PORT)
				rc = buf_printf(out, "%d", cx->port);
			else if (out)
				rc = buf_printf(out, "127.0.0.1:%d", cx->port);
			break;
		case PH_UPSTREAM:
			idx = find_name(cx->names, cx->nnames, name, namelen);
			if (idx < 0 || (out && (!cx->urls || !cx->urls[idx]))) {
				names_text(cx->names, cx->nnames, list, sizeof(list));
				snprintf(why, whylen, "expected {upstream.NAME} with NAME a provider of "
					 "the scenario (%.160s), got \"%.*s\"", list, (int)len, brace);
				return -EINVAL;
			}
			if (out)
				rc = buf_puts(out, cx->urls[idx]);
			break;
		}
		p = brace + len;
	}
	return rc ? -ENOMEM : 0;
}

/* Checks a template at path (the full key path) against cx. */
static int check_template(const struct subst_ctx *cx, const char *tmpl, const char *file,
			  const char *path, char *err)
{
	char why[CFG_ERR_LEN];

	if (subst(cx, tmpl, NULL, why, sizeof(why)))
		return cfg_error(err, file, path, NULL, "%s", why);
	return 0;
}

/* Checks every string value under node (path: node's key path) against cx. */
static int check_strings(const struct subst_ctx *cx, const cJSON *node, const char *file,
			 const char *path, char *err)
{
	const cJSON *c;
	char sub[256];
	int i = 0;
	int rc;

	cJSON_ArrayForEach(c, node) {
		if (cJSON_IsArray(node))
			snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
		else
			snprintf(sub, sizeof(sub), "%s.%s", path, c->string);
		if (cJSON_IsString(c))
			rc = check_template(cx, c->valuestring, file, sub, err);
		else
			rc = check_strings(cx, c, file, sub, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Replaces every string value under node by its expansion. */
static int expand_strings(const struct subst_ctx *cx, cJSON *node, char *why, size_t whylen)
{
	struct buf b = { 0 };
	cJSON *c;
	int rc = 0;

	cJSON_ArrayForEach(c, node) {
		if (cJSON_IsString(c) && strchr(c->valuestring, '{')) {
			char *s;

			buf_reset(&b);
			rc = subst(cx, c->valuestring, &b, why, whylen);
			if (!rc && buf_puts(&b, ""))
				rc = -ENOMEM;
			if (rc)
				break;
			s = cJSON_malloc(b.len + 1);
			if (!s) {
				rc = -ENOMEM;
				break;
			}
			memcpy(s, b.data, b.len + 1);
			cJSON_free(c->valuestring);
			c->valuestring = s;
		} else if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
			rc = expand_strings(cx, c, why, whylen);
			if (rc)
				break;
		}
	}
	buf_free(&b);
	return rc;
}

/* Sets obj's "listen" to value, replacing any. Returns 0 or -ENOMEM. */
static int set_listen(cJSON *obj, const char *value)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, "listen");
	return cJSON_AddStringToObject(obj, "listen", value) ? 0 : -ENOMEM;
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
	{ "actions", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "phases", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "load", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "setups", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "expect", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "prices", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "ci", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
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
		if (!name_ok(top.name)) {
			rc = cfg_error(err, file, "", "name", "expected " NAME_RULE ", got \"%.64s\"",
				       top.name);
			goto out;
		}
		sc->name = top.name;
		top.name = NULL;
	} else {
		sc->name = base_name(file);
		if (!sc->name) {
			rc = oom(err, file, "name");
			goto out;
		}
		if (!name_ok(sc->name)) {
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
		rc = oom(err, file, "description");
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
 * Validates the providers with mockprov's own loader, on a copy whose
 * providers without a listen get 127.0.0.1:0, so every message names this
 * file and providers[i].KEY as mockprov words it.
 */
static int load_providers(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *arr;
	struct mock_config mc = { 0 };
	cJSON *top = NULL;
	cJSON *copy = NULL;
	cJSON *p;
	size_t i;
	int rc;

	rc = get_array(root, "providers", true, "providers (mockprov provider objects)", file, "",
		       &arr, err);
	if (rc)
		return rc;
	sc->providers = cJSON_Duplicate(arr, 1);
	top = cJSON_CreateObject();
	copy = cJSON_Duplicate(arr, 1);
	if (!sc->providers || !top || !copy || !cJSON_AddItemToObject(top, "providers", copy)) {
		cJSON_Delete(copy);
		rc = oom(err, file, "providers");
		goto out;
	}
	cJSON_ArrayForEach(p, copy) {
		if (cJSON_IsObject(p) && !cJSON_GetObjectItemCaseSensitive(p, "listen") &&
		    !cJSON_AddStringToObject(p, "listen", "127.0.0.1:0")) {
			rc = oom(err, file, "providers");
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
		rc = oom(err, file, "providers");
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
static int provider_ref(const struct scenario *sc, const char *name, const char *file,
			const char *path, const char *key, size_t *out, char *err)
{
	char list[256];
	int idx = scenario_provider_index(sc, name);

	if (idx < 0) {
		names_text(sc->provider_names, sc->nproviders, list, sizeof(list));
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
		return oom(err, file, "prices");
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
		rc = provider_ref(sc, c->string, file, "prices", c->string, &idx, err);
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
};

static const char *const action_names[] = { "kill", "restart", NULL };

static const struct cfg_key action_keys[] = {
	{ "at_s", CFG_NUM, offsetof(struct action_raw, at_s), true, 0, 0, 0, NULL, NULL },
	{ "do", CFG_ENUM, offsetof(struct action_raw, kind), true, 0, 0, 0, NULL, action_names },
	{ "provider", CFG_STR, offsetof(struct action_raw, provider), true, 0, 0, 0, NULL, NULL },
};

/* Checks kills and restarts alternate per provider, in time order. */
static int check_action_order(const struct scenario *sc, const size_t *file_idx,
			      const char *file, char *err)
{
	size_t i;
	size_t j;
	char path[64];

	for (i = 0; i < sc->nactions; i++) {
		const struct sc_action *a = &sc->actions[i];
		const struct sc_action *last = NULL;
		size_t last_idx = 0;

		for (j = 0; j < i; j++) {
			if (sc->actions[j].provider == a->provider) {
				last = &sc->actions[j];
				last_idx = file_idx[j];
			}
		}
		snprintf(path, sizeof(path), "actions[%zu]", file_idx[i]);
		if (a->kind == SC_RESTART && (!last || last->kind != SC_KILL))
			return cfg_error(err, file, path, "do",
					 "expected a \"restart\" only after a \"kill\" of \"%.64s\", "
					 "got a restart at %g s while it runs",
					 sc->provider_names[a->provider], a->at_ms / 1000.0);
		if (a->kind == SC_KILL && last && last->kind == SC_KILL)
			return cfg_error(err, file, path, "do",
					 "expected a \"restart\" of \"%.64s\" between two kills, got a "
					 "second \"kill\" at %g s (actions[%zu] killed it)",
					 sc->provider_names[a->provider], a->at_ms / 1000.0, last_idx);
	}
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

	rc = get_array(root, "actions", false, "actions {\"at_s\",\"do\",\"provider\"}", file, "",
		       &arr, err);
	if (rc || !arr || !arr->child)
		return rc;
	memcpy(keys, action_keys, sizeof(keys));
	keys[0].max = sc->duration_ms / 1000.0;
	n = (size_t)cJSON_GetArraySize(arr);
	sc->actions = calloc(n, sizeof(*sc->actions));
	file_idx = calloc(n, sizeof(*file_idx));
	if (!sc->actions || !file_idx) {
		rc = oom(err, file, "actions");
		goto out;
	}
	cJSON_ArrayForEach(item, arr) {
		struct action_raw raw = { 0 };
		struct sc_action a;

		snprintf(path, sizeof(path), "actions[%zu]", i);
		rc = cfg_apply(keys, NELEM(keys), item, &raw, file, path, err);
		if (!rc)
			rc = provider_ref(sc, raw.provider, file, path, "provider", &a.provider, err);
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

	rc = get_array(root, "phases", true,
		       "phases {\"name\",\"from_s\",\"to_s\"} (leave it out for one phase \"all\")",
		       file, "", &arr, err);
	if (rc)
		return rc;
	if (!arr) {
		sc->phases = calloc(1, sizeof(*sc->phases));
		if (!sc->phases)
			return oom(err, file, "phases");
		sc->nphases = 1;
		sc->phases[0].name = strdup("all");
		sc->phases[0].to_ms = sc->duration_ms;
		return sc->phases[0].name ? 0 : oom(err, file, "phases");
	}
	memcpy(keys, phase_keys, sizeof(keys));
	keys[1].max = keys[2].max = sc->duration_ms / 1000.0;
	sc->phases = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->phases));
	if (!sc->phases)
		return oom(err, file, "phases");
	cJSON_ArrayForEach(item, arr) {
		struct phase_raw raw = { 0 };
		struct sc_phase *p = &sc->phases[i];

		snprintf(path, sizeof(path), "phases[%zu]", i);
		sc->nphases = i + 1;
		rc = cfg_apply(keys, NELEM(keys), item, &raw, file, path, err);
		if (!rc && !name_ok(raw.name))
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
	l->concurrency = (unsigned)raw.concurrency;
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
		if (!l->mix)
			rc = oom(err, file, "load.mix");
	}
out:
	cfg_free(load_keys, NELEM(load_keys), &raw);
	return rc;
}

/* ---- setups ---- */

struct setup_raw {
	char *name;
	int kind;
	char *provider;
	int64_t retries;
	double retry_backoff_ms;
	char *ready_url;
	char *target;
};

static const char *const setup_kind_names[] = { "direct", "client_retry", "gateway", "external",
						NULL };

#define SK(name, type, field, req, def, min, max) \
	{ name, type, offsetof(struct setup_raw, field), req, def, min, max, NULL, NULL }

static const struct cfg_key setup_common_keys[] = {
	SK("name", CFG_STR, name, true, 0, 0, 0),
	{ "kind", CFG_ENUM, offsetof(struct setup_raw, kind), true, 0, 0, 0, NULL,
	  setup_kind_names },
};
static const struct cfg_key direct_keys[] = {
	SK("provider", CFG_STR, provider, true, 0, 0, 0),
};
static const struct cfg_key client_retry_keys[] = {
	SK("provider", CFG_STR, provider, true, 0, 0, 0),
	SK("retries", CFG_INT, retries, false, 2, 1, 100),
	SK("retry_backoff_ms", CFG_NUM, retry_backoff_ms, false, 100, 0, 600000),
};
static const struct cfg_key gateway_keys[] = {
	SK("config", CFG_SKIP, name, true, 0, 0, 0),
};
static const struct cfg_key external_keys[] = {
	SK("command", CFG_SKIP, name, true, 0, 0, 0),
	SK("ready_url", CFG_STR, ready_url, true, 0, 0, 0),
	SK("target", CFG_STR, target, true, 0, 0, 0),
	SK("response_headers", CFG_SKIP, name, false, 0, 0, 0),
};

static const struct {
	const struct cfg_key *keys;
	size_t n;
} setup_kind_keys[] = {
	[SC_DIRECT] = { direct_keys, NELEM(direct_keys) },
	[SC_CLIENT_RETRY] = { client_retry_keys, NELEM(client_retry_keys) },
	[SC_GATEWAY] = { gateway_keys, NELEM(gateway_keys) },
	[SC_EXTERNAL] = { external_keys, NELEM(external_keys) },
};

#define MAX_SETUP_KEYS 8

/* loadgen's response_headers keys (README "Mix file"). */
static const char *const response_header_keys[] = { "provider", "attempts", "hedged",
						    "cost_usd", NULL };

/* Reads "kind" first: it decides which other keys are allowed. */
static int setup_kind(const cJSON *obj, const char *file, const char *path,
		      enum sc_setup_kind *out, char *err)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	char got[96];
	int i;

	if (!cJSON_IsObject(obj)) {
		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, path, NULL, "expected a setup object, got %s", got);
	}
	if (!k)
		return cfg_error(err, file, path, "kind", "missing (required): one of direct, "
				 "client_retry, gateway, external");
	for (i = 0; setup_kind_names[i]; i++) {
		if (cJSON_IsString(k) && strcmp(k->valuestring, setup_kind_names[i]) == 0) {
			*out = (enum sc_setup_kind)i;
			return 0;
		}
	}
	cfg_describe(k, got, sizeof(got));
	return cfg_error(err, file, path, "kind", "expected one of direct, client_retry, gateway, "
			 "external, got %s", got);
}

/* Names the kind and its keys when a key of another kind (or none) turns up. */
static int check_setup_keys(const cJSON *obj, enum sc_setup_kind kind, const struct cfg_key *keys,
			    size_t n, const char *file, const char *path, char *err)
{
	const cJSON *item;
	char list[256];
	size_t used = 0;
	size_t i;

	for (i = 0; i < n; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 keys[i].name);
	cJSON_ArrayForEach(item, obj) {
		for (i = 0; i < n && strcmp(keys[i].name, item->string) != 0; i++)
			;
		if (i == n)
			return cfg_error(err, file, path, item->string,
					 "unknown key for a setup of kind \"%s\", which takes: %s",
					 setup_kind_names[kind], list);
	}
	return 0;
}

/* What {upstream.NAME} stands for while a gateway config is checked at load. */
#define STAND_IN_URL "http://127.0.0.1:1/v1"

/* cfg_error's "FILE: " for the gateway's messages, to be replaced by the setup's place. */
#define GW_FILE_MARK "\x01"

/*
 * Checks a gateway setup's config with the gateway's own loader, as
 * bin/gateway would take it at the run's start (no --allow-remote), with
 * every {upstream.NAME} standing for a loopback URL and the runner's
 * listen. Its messages are said as "FILE: setups[i] \"NAME\": config.KEY:
 * expected …".
 */
static int check_gateway_config(const cJSON *cfg, const struct scenario *sc, const char *file,
				const char *path, const struct sc_setup *st, char *err)
{
	const char **urls = NULL;
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, 0, NULL };
	struct subst_ctx stand_in = cx;
	struct gw_config gc;
	struct buf msg = { 0 };
	char gerr[CFG_ERR_LEN];
	const char *rest;
	cJSON *copy = NULL;
	size_t i;
	int rc;

	urls = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*urls));
	copy = cJSON_Duplicate(cfg, 1);
	if (!urls || !copy) {
		rc = oom(err, file, path);
		goto out;
	}
	for (i = 0; i < sc->nproviders; i++)
		urls[i] = STAND_IN_URL;
	stand_in.urls = urls;
	rc = expand_strings(&stand_in, copy, gerr, sizeof(gerr));
	if (!rc)
		rc = set_listen(copy, "127.0.0.1:0");
	if (rc) {		/* check_strings passed: only memory can fail */
		rc = oom(err, file, path);
		goto out;
	}
	rc = gw_config_from_json(copy, GW_FILE_MARK, false, &gc, gerr);
	if (!rc) {
		gw_config_free(&gc);
		goto out;
	}
	rest = gerr;
	if (strncmp(rest, GW_FILE_MARK ": ", sizeof(GW_FILE_MARK ": ") - 1) == 0)
		rest += sizeof(GW_FILE_MARK ": ") - 1;
	if (strncmp(rest, "(top level)", 11) == 0)
		rc = buf_printf(&msg, "%.160s: %s \"%s\": config%s", file, path, st->name, rest + 11);
	else
		rc = buf_printf(&msg, "%.160s: %s \"%s\": config.%s", file, path, st->name, rest);
	if (rc) {
		rc = oom(err, file, path);
		goto out;
	}
	snprintf(err, CFG_ERR_LEN, "%s", msg.data);
	rc = -EINVAL;
out:
	buf_free(&msg);
	cJSON_Delete(copy);
	free(urls);
	return rc;
}

static int load_gateway(const cJSON *obj, const struct scenario *sc, const char *file,
			const char *path, struct sc_setup *st, char *err)
{
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(obj, "config");
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, 0, NULL };
	const cJSON *listen;
	char sub[96];
	char got[96];
	int rc;

	snprintf(sub, sizeof(sub), "%s.config", path);
	if (!cJSON_IsObject(cfg)) {
		cfg_describe(cfg, got, sizeof(got));
		return cfg_error(err, file, path, "config", "expected an object (a bin/gateway "
				 "config), got %s", got);
	}
	listen = cJSON_GetObjectItemCaseSensitive(cfg, "listen");
	if (listen) {
		cfg_describe(listen, got, sizeof(got));
		return cfg_error(err, file, sub, "listen", "expected no listen (the runner picks the "
				 "gateway's port), got %s", got);
	}
	rc = check_strings(&cx, cfg, file, sub, err);
	if (!rc)
		rc = check_gateway_config(cfg, sc, file, path, st, err);
	if (rc)
		return rc;
	st->config = cJSON_Duplicate(cfg, 1);
	return st->config ? 0 : oom(err, file, sub);
}

static int load_command(const cJSON *obj, const struct subst_ctx *cx, const char *file,
			const char *path, struct sc_setup *st, char *err)
{
	const cJSON *arr;
	const cJSON *c;
	char sub[96];
	char got[96];
	size_t i = 0;
	int rc;

	rc = get_array(obj, "command", true, "strings (the program and its arguments)", file, path,
		       &arr, err);
	if (rc)
		return rc;
	st->command = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*st->command));
	if (!st->command)
		return oom(err, file, path);
	cJSON_ArrayForEach(c, arr) {
		snprintf(sub, sizeof(sub), "%s.command[%zu]", path, i);
		if (!cJSON_IsString(c) || (i == 0 && !c->valuestring[0])) {
			cfg_describe(c, got, sizeof(got));
			return cfg_error(err, file, sub, NULL, "expected a %sstring, got %s",
					 i == 0 ? "non-empty " : "", got);
		}
		rc = check_template(cx, c->valuestring, file, sub, err);
		if (rc)
			return rc;
		st->command[i] = strdup(c->valuestring);
		if (!st->command[i])
			return oom(err, file, sub);
		st->ncommand = ++i;
	}
	return 0;
}

static int load_response_headers(const cJSON *obj, const char *file, const char *path,
				 struct sc_setup *st, char *err)
{
	const cJSON *rh = cJSON_GetObjectItemCaseSensitive(obj, "response_headers");
	const cJSON *c;
	const cJSON *prev;
	char sub[96];
	char got[96];
	int i;

	if (!rh)
		return 0;
	snprintf(sub, sizeof(sub), "%s.response_headers", path);
	if (!cJSON_IsObject(rh)) {
		cfg_describe(rh, got, sizeof(got));
		return cfg_error(err, file, path, "response_headers", "expected an object of header "
				 "names (provider, attempts, hedged, cost_usd), got %s", got);
	}
	cJSON_ArrayForEach(c, rh) {
		for (i = 0; response_header_keys[i]; i++) {
			if (strcmp(response_header_keys[i], c->string) == 0)
				break;
		}
		if (!response_header_keys[i])
			return cfg_error(err, file, sub, c->string, "unknown key; expected one of "
					 "provider, attempts, hedged, cost_usd");
		for (prev = rh->child; prev != c; prev = prev->next) {
			if (strcmp(prev->string, c->string) == 0)
				return cfg_error(err, file, sub, c->string,
						 "given twice; expected each key once");
		}
		if (!cJSON_IsString(c) || !c->valuestring[0]) {
			cfg_describe(c, got, sizeof(got));
			return cfg_error(err, file, sub, c->string, "expected a header name (a "
					 "non-empty string), got %s", got);
		}
	}
	st->response_headers = cJSON_Duplicate(rh, 1);
	return st->response_headers ? 0 : oom(err, file, sub);
}

static int load_external(const cJSON *obj, const struct scenario *sc, struct setup_raw *raw,
			 const char *file, const char *path, struct sc_setup *st, char *err)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, true, 0, NULL };
	char sub[96];
	int rc;

	rc = load_command(obj, &cx, file, path, st, err);
	if (rc)
		return rc;
	snprintf(sub, sizeof(sub), "%s.ready_url", path);
	rc = check_template(&cx, raw->ready_url, file, sub, err);
	if (rc)
		return rc;
	snprintf(sub, sizeof(sub), "%s.target", path);
	rc = check_template(&cx, raw->target, file, sub, err);
	if (rc)
		return rc;
	st->ready_url = raw->ready_url;
	st->target = raw->target;
	raw->ready_url = raw->target = NULL;
	return load_response_headers(obj, file, path, st, err);
}

static int load_setup(const cJSON *obj, struct scenario *sc, size_t idx, const char *file,
		      char *err)
{
	struct cfg_key keys[MAX_SETUP_KEYS];
	struct setup_raw raw = { 0 };
	struct sc_setup *st = &sc->setups[idx];
	enum sc_setup_kind kind = SC_DIRECT;
	char path[64];
	size_t n = 0;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "setups[%zu]", idx);
	rc = setup_kind(obj, file, path, &kind, err);
	if (rc)
		return rc;
	for (i = 0; i < NELEM(setup_common_keys); i++)
		keys[n++] = setup_common_keys[i];
	for (i = 0; i < setup_kind_keys[kind].n; i++)
		keys[n++] = setup_kind_keys[kind].keys[i];
	rc = check_setup_keys(obj, kind, keys, n, file, path, err);
	if (!rc)
		rc = cfg_apply(keys, n, obj, &raw, file, path, err);
	if (rc)
		goto out;
	if (!name_ok(raw.name)) {
		rc = cfg_error(err, file, path, "name", "expected " NAME_RULE ", got \"%.64s\"",
			       raw.name);
		goto out;
	}
	for (i = 0; i < idx; i++) {
		if (strcmp(sc->setups[i].name, raw.name) == 0) {
			rc = cfg_error(err, file, path, "name", "expected a name no other setup has, "
				       "got \"%s\" (also setups[%zu])", raw.name, i);
			goto out;
		}
	}
	st->name = raw.name;
	raw.name = NULL;
	st->kind = kind;
	switch (kind) {
	case SC_DIRECT:
	case SC_CLIENT_RETRY:
		rc = provider_ref(sc, raw.provider, file, path, "provider", &st->provider, err);
		st->retries = (unsigned)raw.retries;
		st->retry_backoff_ms = raw.retry_backoff_ms;
		break;
	case SC_GATEWAY:
		rc = load_gateway(obj, sc, file, path, st, err);
		break;
	case SC_EXTERNAL:
		rc = load_external(obj, sc, &raw, file, path, st, err);
		break;
	}
out:
	cfg_free(keys, n, &raw);
	return rc;
}

static int load_setups(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *arr;
	const cJSON *item;
	size_t i = 0;
	int rc;

	rc = get_array(root, "setups", true, "setups", file, "", &arr, err);
	if (rc)
		return rc;
	sc->setups = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->setups));
	if (!sc->setups)
		return oom(err, file, "setups");
	cJSON_ArrayForEach(item, arr) {
		sc->nsetups = i + 1;
		rc = load_setup(item, sc, i, file, err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/* ---- expectations ---- */

#define EK(name, field, max) \
	{ name, CFG_NUM, offsetof(struct sc_expect, field), false, NAN, 0, max, NULL, NULL }

/* The bounds start at index EXPECT_FIRST_BOUND; before them, what the entry is about. */
#define EXPECT_FIRST_BOUND 5

static const struct cfg_key expect_keys[] = {
	{ "setup", CFG_STR, offsetof(struct sc_expect, setup), true, 0, 0, 0, NULL, NULL },
	{ "phase", CFG_STR, offsetof(struct sc_expect, phase), true, 0, 0, 0, NULL, NULL },
	{ "class", CFG_STR, offsetof(struct sc_expect, cls), false, 0, 0, 0, NULL, NULL },
	{ "relative_to", CFG_STR, offsetof(struct sc_expect, relative_to), false, 0, 0, 0, NULL,
	  NULL },
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
	EK("fallback_share_max", fallback_share_max, 1),
	EK("fallback_share_min", fallback_share_min, 1),
	EK("silent_breaks_max", silent_breaks_max, 1e12),
	EK("stalls_max", stalls_max, 1e12),
	EK("max_gap_ms_max", max_gap_ms_max, 1e12),
	EK("ttft_p95_ms_max", ttft_p95_ms_max, 1e12),
};

static bool given(double v)
{
	return !isnan(v);
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
	names_text(names, n, list, sizeof(list));
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
		names_text(names, n, list, sizeof(list));
		return cfg_error(err, file, path, "phase", "expected a phase name (%.160s) or \"*\", "
				 "got \"%.64s\"", list, e->phase);
	}
	return 0;
}

/* The keys that go together: window_s with its bound, relative_to with the ratios. */
static int check_expect_pairs(const struct scenario *sc, const struct sc_expect *e,
			      const char *file, const char *path, char *err)
{
	bool ratio = given(e->latency_p99_ratio_max) || given(e->cost_overhead_max);

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
				 "latency_p99_ratio_max or cost_overhead_max, got it with neither");
	if (ratio && !e->relative_to)
		return cfg_error(err, file, path, "relative_to", "missing: latency_p99_ratio_max "
				 "and cost_overhead_max compare with the setup it names");
	if (e->answered_min > e->answered_max)
		return cfg_error(err, file, path, "answered_min", "expected at most answered_max "
				 "(%g), got %g", e->answered_max, e->answered_min);
	if (e->fallback_share_min > e->fallback_share_max)
		return cfg_error(err, file, path, "fallback_share_min", "expected at most "
				 "fallback_share_max (%g), got %g", e->fallback_share_max,
				 e->fallback_share_min);
	return 0;
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

static int load_expects(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *arr;
	const cJSON *item;
	size_t i = 0;
	char path[64];
	int rc;

	rc = get_array(root, "expect", false, "expectations {\"setup\",\"phase\",bounds…}", file, "",
		       &arr, err);
	if (rc || !arr || !arr->child)
		return rc;
	sc->expects = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->expects));
	if (!sc->expects)
		return oom(err, file, "expect");
	cJSON_ArrayForEach(item, arr) {
		snprintf(path, sizeof(path), "expect[%zu]", i);
		sc->nexpects = i + 1;
		rc = cfg_apply(expect_keys, NELEM(expect_keys), item, &sc->expects[i], file, path,
			       err);
		if (!rc)
			rc = check_expect(sc, &sc->expects[i], file, path, err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/* ---- the scenario ---- */

int scenario_load(const char *path, double scale, struct scenario *sc, char *err)
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
	root = json_load_file(path, err, CFG_ERR_LEN);
	if (!root)
		return -EINVAL;
	scenario_scale(root, scale);
	sc->scale = scale;
	sc->path = strdup(path);
	if (!sc->path) {
		rc = oom(err, path, NULL);
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
		rc = load_load(root, path, sc, err);
	if (!rc)
		rc = load_setups(root, path, sc, err);
	if (!rc)
		rc = load_expects(root, path, sc, err);
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
	size_t j;

	free(sc->name);
	free(sc->description);
	free(sc->ci_why);
	free(sc->path);
	cJSON_Delete(sc->providers);
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
	for (i = 0; i < sc->nsetups; i++) {
		struct sc_setup *st = &sc->setups[i];

		free(st->name);
		cJSON_Delete(st->config);
		for (j = 0; j < st->ncommand; j++)
			free(st->command[j]);
		free(st->command);
		free(st->ready_url);
		free(st->target);
		cJSON_Delete(st->response_headers);
	}
	free(sc->setups);
	for (i = 0; i < sc->nexpects; i++) {
		free(sc->expects[i].setup);
		free(sc->expects[i].phase);
		free(sc->expects[i].cls);
		free(sc->expects[i].relative_to);
	}
	free(sc->expects);
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
	return find_name(sc->provider_names, sc->nproviders, name, strlen(name));
}

/* cJSON's printed text as a plain malloc'ed string (cJSON may use other hooks). */
static char *print_json(const cJSON *obj)
{
	char *s = cJSON_Print(obj);
	char *out;

	if (!s)
		return NULL;
	out = strdup(s);
	cJSON_free(s);
	return out;
}

char *scenario_mock_config(const struct scenario *sc, const int *ports)
{
	cJSON *top = cJSON_CreateObject();
	cJSON *arr = cJSON_Duplicate(sc->providers, 1);
	char listen[128];
	char *out = NULL;
	cJSON *p;
	size_t i = 0;

	if (!top || !arr || !cJSON_AddItemToObject(top, "providers", arr))
		goto out;
	arr = NULL;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(top, "providers")) {
		const char *given = json_get_string(p, "listen");
		const char *colon = given ? strrchr(given, ':') : NULL;
		int rc = 0;

		if (ports && ports[i] > 0) {
			if (colon)
				snprintf(listen, sizeof(listen), "%.*s:%d", (int)(colon - given), given,
					 ports[i]);
			else
				snprintf(listen, sizeof(listen), "127.0.0.1:%d", ports[i]);
			rc = set_listen(p, listen);
		} else if (!given) {
			rc = set_listen(p, "127.0.0.1:0");
		}
		if (rc)
			goto out;
		i++;
	}
	out = print_json(top);
out:
	cJSON_Delete(arr);
	cJSON_Delete(top);
	return out;
}

char *scenario_gateway_config(const struct scenario *sc, const struct sc_setup *st,
			      const char *listen, const char *const *urls, char *err)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, 0, urls };
	char why[CFG_ERR_LEN];
	char path[96];
	cJSON *cfg = NULL;
	char *out = NULL;
	int rc;

	if (st >= sc->setups && st < sc->setups + sc->nsetups)
		snprintf(path, sizeof(path), "setups[%zu].config", (size_t)(st - sc->setups));
	else
		snprintf(path, sizeof(path), "setups.%.64s.config", st->name ? st->name : "?");
	if (st->kind != SC_GATEWAY || !st->config) {
		cfg_error(err, sc->path, path, NULL, "expected a gateway setup");
		return NULL;
	}
	cfg = cJSON_Duplicate(st->config, 1);
	if (!cfg) {
		oom(err, sc->path, path);
		goto out;
	}
	rc = expand_strings(&cx, cfg, why, sizeof(why));
	if (rc == -EINVAL) {
		cfg_error(err, sc->path, path, NULL, "%s", why);
		goto out;
	}
	if (rc || set_listen(cfg, listen)) {
		oom(err, sc->path, path);
		goto out;
	}
	out = print_json(cfg);
	if (!out)
		oom(err, sc->path, path);
out:
	cJSON_Delete(cfg);
	return out;
}

char *scenario_expand(const struct scenario *sc, const char *tmpl, int port,
		      const char *const *urls)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, true, port, urls };
	struct buf b = { 0 };
	char why[CFG_ERR_LEN];
	int rc;

	rc = subst(&cx, tmpl, &b, why, sizeof(why));
	if (!rc && buf_puts(&b, ""))
		rc = -ENOMEM;
	if (rc) {
		buf_free(&b);
		errno = -rc;
		return NULL;
	}
	return buf_steal(&b);
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

const struct cfg_section *scenario_sections(size_t *n)
{
	static const struct cfg_section sections[] = {
		{ "", top_keys, NELEM(top_keys) },
		{ "ci", ci_keys, NELEM(ci_keys) },
		{ "prices.PROVIDER", price_keys, NELEM(price_keys) },
		{ "actions[]", action_keys, NELEM(action_keys) },
		{ "phases[]", phase_keys, NELEM(phase_keys) },
		{ "load", load_keys, NELEM(load_keys) },
		{ "setups[]", setup_common_keys, NELEM(setup_common_keys) },
		{ "setups[]", direct_keys, NELEM(direct_keys) },
		{ "setups[]", client_retry_keys, NELEM(client_retry_keys) },
		{ "setups[]", gateway_keys, NELEM(gateway_keys) },
		{ "setups[]", external_keys, NELEM(external_keys) },
		{ "expect[]", expect_keys, NELEM(expect_keys) },
	};

	*n = NELEM(sections);
	return sections;
}
