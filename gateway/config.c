/*
 * config: loading and validating the gateway config. Each section is a
 * cfg table; a section that overrides another (a provider's breaker, an
 * alias's retry) is read with a copy of the table whose defaults are the
 * enclosing section's values, so an absent key inherits.
 */
#include "gateway/config.h"
#include "gateway/config_int.h"
#include "gateway/anthropic.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/opt.h"

/* ---- tables ---- */

struct top_raw {
	char *listen;
	double deadline_ms;
	int64_t seed;
	int64_t max_body_bytes;
	double header_timeout_ms;
	double idle_timeout_ms;
	int64_t max_connections;
	int64_t max_upstream_body_bytes;
	int64_t upstream_body_budget_bytes;
	int64_t workers;
};

#define TK(name, type, field, def, min, max, defs) \
	{ name, type, offsetof(struct top_raw, field), false, def, min, max, defs, NULL }

static const struct cfg_key top_keys[] = {
	TK("listen", CFG_STR, listen, 0, 0, 0, "127.0.0.1:8080"),
	TK("request_deadline_ms", CFG_NUM, deadline_ms, 30000, 1, 3600000, NULL),
	TK("seed", CFG_INT, seed, 1, 0, 9007199254740991.0, NULL),
	TK("max_body_bytes", CFG_INT, max_body_bytes, 1048576, 1024, 67108864, NULL),
	TK("header_timeout_ms", CFG_NUM, header_timeout_ms, 10000, 1, 600000, NULL),
	TK("idle_timeout_ms", CFG_NUM, idle_timeout_ms, 60000, 1, 3600000, NULL),
	TK("max_connections", CFG_INT, max_connections, 10000, 1, 1000000, NULL),
	TK("max_upstream_body_bytes", CFG_INT, max_upstream_body_bytes, 16777216, 1024,
	   1073741824, NULL),
	TK("upstream_body_budget_bytes", CFG_INT, upstream_body_budget_bytes, 268435456,
	   1048576, 68719476736.0, NULL),
	TK("workers", CFG_INT, workers, 1, 1, GW_WORKERS_MAX, NULL),
	{ "providers", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "models", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "retry", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "breaker", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "stream", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "hedge", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "budget", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "classes", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "auth", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "shared_state", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};
#define NTOP_KEYS (sizeof(top_keys) / sizeof(top_keys[0]))

struct stream_raw {
	double first_token_timeout_ms;
	double stall_timeout_ms;
};

static const struct cfg_key stream_keys[] = {
	{ "first_token_timeout_ms", CFG_NUM, offsetof(struct stream_raw, first_token_timeout_ms),
	  false, 1000, 1, 600000, NULL, NULL },
	{ "stall_timeout_ms", CFG_NUM, offsetof(struct stream_raw, stall_timeout_ms),
	  false, 3000, 1, 600000, NULL, NULL },
};
#define NSTREAM_KEYS (sizeof(stream_keys) / sizeof(stream_keys[0]))

struct retry_raw {
	int64_t max_retries;
	double base_ms;
	double cap_ms;
	double min_attempt_ms;
};

#define RK(name, type, field, def, min, max) \
	{ name, type, offsetof(struct retry_raw, field), false, def, min, max, NULL, NULL }

static const struct cfg_key retry_keys[] = {
	RK("max_retries", CFG_INT, max_retries, 0, 0, 10),
	RK("base_ms", CFG_NUM, base_ms, 100, 0, 600000),
	RK("cap_ms", CFG_NUM, cap_ms, 2000, 0, 600000),
	RK("min_attempt_ms", CFG_NUM, min_attempt_ms, 100, 1, 600000),
};
#define NRETRY_KEYS (sizeof(retry_keys) / sizeof(retry_keys[0]))

struct hedge_raw {
	bool enabled;
	double after_ms;
	double percentile;
	double min_after_ms;
	double max_after_ms;
	int64_t min_samples;
	int64_t max;
};

#define HGK(name, type, field, def, min, max) \
	{ name, type, offsetof(struct hedge_raw, field), false, def, min, max, NULL, NULL }

static const struct cfg_key hedge_keys[] = {
	HGK("enabled", CFG_BOOL, enabled, 1, 0, 1),
	HGK("after_ms", CFG_NUM, after_ms, NAN, 1, 600000),
	HGK("percentile", CFG_NUM, percentile, 95, 50, 99.9),
	HGK("min_after_ms", CFG_NUM, min_after_ms, 10, 1, 600000),
	HGK("max_after_ms", CFG_NUM, max_after_ms, 1000, 1, 600000),
	HGK("min_samples", CFG_INT, min_samples, 20, 1, 256),
	HGK("max", CFG_INT, max, 1, 1, GW_MAX_HEDGES),
};

struct budget_raw {
	double ratio;
	double min_per_second;
	double burst;
};

static const struct cfg_key budget_keys[] = {
	{ "ratio", CFG_NUM, offsetof(struct budget_raw, ratio), false, 0.2, 0, 10, NULL, NULL },
	{ "min_per_second", CFG_NUM, offsetof(struct budget_raw, min_per_second), false, 1, 0,
	  100000, NULL, NULL },
	{ "burst", CFG_NUM, offsetof(struct budget_raw, burst), false, 10, 1, 1000000, NULL,
	  NULL },
};

struct batch_raw {
	int64_t queue_max;
	double max_wait_ms;
	int64_t concurrency;
};

static const struct cfg_key batch_keys[] = {
	{ "queue_max", CFG_INT, offsetof(struct batch_raw, queue_max), false, 1000, 0, 1000000,
	  NULL, NULL },
	{ "max_wait_ms", CFG_NUM, offsetof(struct batch_raw, max_wait_ms), false, 60000, 1,
	  3600000, NULL, NULL },
	{ "concurrency", CFG_INT, offsetof(struct batch_raw, concurrency), false, 4, 1, 10000,
	  NULL, NULL },
};

static const struct cfg_key classes_keys[] = {
	{ "batch", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};

struct breaker_raw {
	bool enabled;
	int64_t consecutive_failures;
	double failure_ratio;
	double window_ms;
	int64_t buckets;
	int64_t min_requests;
	double slow_ms;
	double slow_ratio;
	double latency_budget_ms;
	double latency_percentile;
	double cooldown_ms;
	double cooldown_multiplier;
	double cooldown_max_ms;
	double cooldown_jitter;
	int64_t half_open_probes;
	int when_all_open;
};

static const char *const all_open_names[] = { "least_recently_failed", "fail_fast", NULL };

#define BK(name, type, field, def, min, max) \
	{ name, type, offsetof(struct breaker_raw, field), false, def, min, max, NULL, NULL }

/* when_all_open is last: provider overrides use the table without it. */
static const struct cfg_key breaker_keys[] = {
	BK("enabled", CFG_BOOL, enabled, 1, 0, 1),
	BK("consecutive_failures", CFG_INT, consecutive_failures, 5, 0, 1000000),
	BK("failure_ratio", CFG_NUM, failure_ratio, 0.5, 0, 1),
	BK("window_ms", CFG_NUM, window_ms, 10000, 1, 3600000),
	BK("buckets", CFG_INT, buckets, 10, 1, BREAKER_MAX_BUCKETS),
	BK("min_requests", CFG_INT, min_requests, 20, 0, 1000000),
	BK("slow_ms", CFG_NUM, slow_ms, 0, 0, 3600000),
	BK("slow_ratio", CFG_NUM, slow_ratio, 0.5, 0, 1),
	BK("latency_budget_ms", CFG_NUM, latency_budget_ms, 0, 0, 3600000),
	BK("latency_percentile", CFG_NUM, latency_percentile, 95, 50, 99.9),
	BK("cooldown_ms", CFG_NUM, cooldown_ms, 5000, 0.001, 3600000),
	BK("cooldown_multiplier", CFG_NUM, cooldown_multiplier, 2, 1, 1000),
	BK("cooldown_max_ms", CFG_NUM, cooldown_max_ms, 60000, 0.001, 86400000),
	BK("cooldown_jitter", CFG_NUM, cooldown_jitter, 0.2, 0, 1),	/* [0, 1): check_breaker */
	BK("half_open_probes", CFG_INT, half_open_probes, 3, 1, 1000),
	{ "when_all_open", CFG_ENUM, offsetof(struct breaker_raw, when_all_open), false, 0, 0, 0,
	  "least_recently_failed", all_open_names },
};
#define NBREAKER_KEYS (sizeof(breaker_keys) / sizeof(breaker_keys[0]))

static const char *const dialect_names[] = { "openai", "anthropic", NULL };

struct provider_raw {
	char *base_url;
	char *api_key_env;
	int dialect;
	int64_t default_max_tokens;
	double timeout_ms;
	double connect_timeout_ms;
};

#define PK(name, type, field, req, def, min, max) \
	{ name, type, offsetof(struct provider_raw, field), req, def, min, max, NULL, NULL }

static const struct cfg_key provider_keys[] = {
	PK("base_url", CFG_STR, base_url, true, 0, 0, 0),
	PK("api_key_env", CFG_STR, api_key_env, false, 0, 0, 0),
	{ "dialect", CFG_ENUM, offsetof(struct provider_raw, dialect), false, 0, 0, 0, "openai",
	  dialect_names },
	PK("default_max_tokens", CFG_INT, default_max_tokens, false, ANTH_MAX_TOKENS_DEFAULT, 1, 10000000),
	PK("timeout_ms", CFG_NUM, timeout_ms, false, 10000, 1, 3600000),
	PK("connect_timeout_ms", CFG_NUM, connect_timeout_ms, false, 2000, 1, 600000),
	{ "price_per_1k", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "breaker", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "health_check", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};
#define NPROVIDER_KEYS (sizeof(provider_keys) / sizeof(provider_keys[0]))

struct health_raw {
	bool enabled;
	double interval_ms;
	double unhealthy_interval_ms;
	double timeout_ms;
	int64_t fall;
	int64_t rise;
	int request;
};

static const char *const health_request_names[] = { "models", "completion", NULL };

#define HK(name, type, field, def, min, max) \
	{ name, type, offsetof(struct health_raw, field), false, def, min, max, NULL, NULL }

static const struct cfg_key health_keys[] = {
	HK("enabled", CFG_BOOL, enabled, 1, 0, 1),
	HK("interval_ms", CFG_NUM, interval_ms, 5000, 1, 3600000),
	HK("unhealthy_interval_ms", CFG_NUM, unhealthy_interval_ms, 1000, 1, 3600000),
	HK("timeout_ms", CFG_NUM, timeout_ms, 1000, 1, 600000),
	HK("fall", CFG_INT, fall, 2, 1, 100),
	HK("rise", CFG_INT, rise, 2, 1, 100),
	{ "request", CFG_ENUM, offsetof(struct health_raw, request), false, 0, 0, 0, "models",
	  health_request_names },
};

struct price_raw {
	double input;
	double output;
};

static const struct cfg_key price_keys[] = {
	{ "input", CFG_NUM, offsetof(struct price_raw, input), false, 0, 0, 1000, NULL, NULL },
	{ "output", CFG_NUM, offsetof(struct price_raw, output), false, 0, 0, 1000, NULL, NULL },
};

struct alias_raw {
	int64_t max_attempts;		/* 0: the number of targets */
};

static const struct cfg_key alias_keys[] = {
	{ "targets", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "max_attempts", CFG_INT, offsetof(struct alias_raw, max_attempts), false, 0, 1,
	  GW_MAX_ATTEMPTS, NULL, NULL },
	{ "retry", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "hedge", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "budget", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "contract", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
	{ "degraded", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};

struct target_raw {
	char *provider;
	char *model;
};

static const struct cfg_key target_keys[] = {
	{ "provider", CFG_STR, offsetof(struct target_raw, provider), true, 0, 0, 0, NULL, NULL },
	{ "model", CFG_STR, offsetof(struct target_raw, model), true, 0, 0, 0, NULL, NULL },
};

static const struct cfg_key auth_keys[] = {
	{ "keys_env", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---- */

/*
 * Applies obj (may be NULL: every key inherits) with keys whose defaults
 * are the values already in target, so an override names only what
 * changes. Numeric, boolean and enum keys only.
 */
static int apply_inherited(const struct cfg_key *keys, size_t n, const cJSON *obj,
			   void *target, const char *file, const char *path, char *err)
{
	struct cfg_key local[NBREAKER_KEYS];
	size_t i;

	if (!obj)
		return 0;
	for (i = 0; i < n && i < NELEM(local); i++) {
		const char *field = (const char *)target + keys[i].offset;

		local[i] = keys[i];
		switch (keys[i].type) {
		case CFG_INT:
			local[i].def = (double)*(const int64_t *)field;
			break;
		case CFG_NUM:
			local[i].def = *(const double *)field;
			break;
		case CFG_BOOL:
			local[i].def = *(const bool *)field;
			break;
		case CFG_ENUM:
			local[i].def_str = keys[i].choices[*(const int *)field];
			break;
		case CFG_STR:
		case CFG_SKIP:
			break;
		}
	}
	return cfg_apply(local, i, obj, target, file, path, err);
}

/*
 * Applies the object under key in parent (obj's path: path) by the table;
 * an absent one gets every default, as an empty object would.
 */
static int apply_section(const struct cfg_key *keys, size_t n, const cJSON *parent,
			 const char *key, void *target, const char *file, const char *path,
			 char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(parent, key);
	cJSON *empty;
	int rc;

	if (obj)
		return cfg_apply(keys, n, obj, target, file, path, err);
	empty = cJSON_CreateObject();
	if (!empty)
		return cfg_error(err, file, path, NULL, "out of memory");
	rc = cfg_apply(keys, n, empty, target, file, path, err);
	cJSON_Delete(empty);
	return rc;
}

static struct breaker_config breaker_from_raw(const struct breaker_raw *r)
{
	return (struct breaker_config){
		.enabled = r->enabled,
		.consecutive_failures = (unsigned)r->consecutive_failures,
		.failure_ratio = r->failure_ratio,
		.window_ms = r->window_ms,
		.buckets = (unsigned)r->buckets,
		.min_requests = (unsigned)r->min_requests,
		.slow_ms = r->slow_ms,
		.slow_ratio = r->slow_ratio,
		.latency_budget_ms = r->latency_budget_ms,
		.latency_percentile = r->latency_percentile,
		.cooldown_ms = r->cooldown_ms,
		.cooldown_multiplier = r->cooldown_multiplier,
		.cooldown_max_ms = r->cooldown_max_ms,
		.cooldown_jitter = r->cooldown_jitter,
		.half_open_probes = (unsigned)r->half_open_probes,
	};
}

/* Checks the fields' relations; breaker_config_check's "key: text" becomes PATH.key. */
static int check_breaker(const struct breaker_config *bc, const char *file, const char *path,
			 char *err)
{
	char msg[256];
	char key[64];
	const char *sep;

	if (!breaker_config_check(bc, msg, sizeof(msg)))
		return 0;
	sep = strstr(msg, ": ");
	if (!sep)
		return cfg_error(err, file, path, NULL, "%s", msg);
	snprintf(key, sizeof(key), "%.*s", (int)(sep - msg), msg);
	return cfg_error(err, file, path, key, "%s", sep + 2);
}

/* A name usable in metrics labels, file names and logs. */
static bool name_ok(const char *s, const char *extra)
{
	size_t n = strlen(s);
	size_t i;

	if (n == 0 || n > 128)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.' || (extra && strchr(extra, c))))
			return false;
	}
	return true;
}

/*
 * The auth section: the client keys, read from the variables auth.keys_env
 * names (unless !read_env: then only the names are checked).
 */
static int load_auth(const cJSON *root, const char *file, bool read_env, struct gw_auth *a,
		     char *err)
{
	const cJSON *auth = cJSON_GetObjectItemCaseSensitive(root, "auth");
	const cJSON *list;
	const cJSON *item;
	char got[96];
	char unused;
	size_t i = 0;
	int n;
	int rc;

	if (!auth)
		return 0;
	rc = cfg_apply(auth_keys, NELEM(auth_keys), auth, &unused, file, "auth", err);
	if (rc)
		return rc;
	list = cJSON_GetObjectItemCaseSensitive(auth, "keys_env");
	n = cJSON_GetArraySize(list);
	if (!cJSON_IsArray(list) || n < 1 || n > GW_MAX_CLIENT_KEYS) {
		if (cJSON_IsArray(list))
			snprintf(got, sizeof(got), "%d of them", n);
		else
			cfg_describe(list, got, sizeof(got));
		return cfg_error(err, file, "auth", "keys_env",
				 "expected an array of 1 to %d environment variable names, got %s",
				 GW_MAX_CLIENT_KEYS, got);
	}
	a->keys = calloc((size_t)n, sizeof(*a->keys));
	a->lens = calloc((size_t)n, sizeof(*a->lens));
	if (!a->keys || !a->lens)
		return cfg_error(err, file, "auth", "keys_env", "out of memory");
	cJSON_ArrayForEach(item, list) {
		rc = gw_config__client_key(list, item, i++, file, read_env, a, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int load_provider(const cJSON *obj, const struct breaker_raw *top_breaker,
			 bool allow_remote, bool read_env, const char *file, struct gw_provider *p,
			 char *err)
{
	struct provider_raw raw = { 0 };
	struct price_raw price = { 0 };
	struct health_raw hr = { 0 };
	struct breaker_raw br = *top_breaker;
	char path[192];
	char sub[224];
	int rc;

	snprintf(path, sizeof(path), "providers.%s", obj->string);
	p->name = strdup(obj->string);
	if (!p->name)
		return cfg_error(err, file, path, NULL, "out of memory");
	if (!name_ok(obj->string, NULL))
		return cfg_error(err, file, "providers", obj->string,
				 "expected a provider name of 1-128 letters, digits, '_', '-' or '.'");
	rc = cfg_apply(provider_keys, NPROVIDER_KEYS, obj, &raw, file, path, err);
	if (rc)
		goto out;
	p->dialect = raw.dialect == 1 ? GW_DIALECT_ANTHROPIC : GW_DIALECT_OPENAI;
	p->default_max_tokens = raw.default_max_tokens;
	rc = gw_config__base_url(raw.base_url, allow_remote, p, file, path, err);
	if (!rc && raw.api_key_env && read_env)
		rc = gw_config__api_key(raw.api_key_env, p, file, path, err);
	if (rc)
		goto out;
	p->timeout_ms = raw.timeout_ms;
	p->connect_timeout_ms = raw.connect_timeout_ms;
	snprintf(sub, sizeof(sub), "%s.price_per_1k", path);
	rc = apply_section(price_keys, NELEM(price_keys), obj, "price_per_1k", &price, file, sub,
			   err);
	if (rc)
		goto out;
	p->price_in_per_1k = price.input;
	p->price_out_per_1k = price.output;
	snprintf(sub, sizeof(sub), "%s.breaker", path);
	rc = apply_inherited(breaker_keys, NBREAKER_KEYS - 1,
			     cJSON_GetObjectItemCaseSensitive(obj, "breaker"), &br, file, sub, err);
	if (rc)
		goto out;
	p->breaker = breaker_from_raw(&br);
	rc = check_breaker(&p->breaker, file, sub, err);
	if (rc || !cJSON_GetObjectItemCaseSensitive(obj, "health_check"))
		goto out;
	snprintf(sub, sizeof(sub), "%s.health_check", path);
	rc = apply_section(health_keys, NELEM(health_keys), obj, "health_check", &hr, file, sub,
			   err);
	if (rc)
		goto out;
	p->health = (struct health_config){
		.enabled = hr.enabled,
		.interval_ms = hr.interval_ms,
		.unhealthy_interval_ms = hr.unhealthy_interval_ms,
		.timeout_ms = hr.timeout_ms,
		.fall = (unsigned)hr.fall,
		.rise = (unsigned)hr.rise,
		.request = (enum health_request)hr.request,
	};
out:
	cfg_free(provider_keys, NPROVIDER_KEYS, &raw);
	return rc;
}

static int find_provider(const struct gw_config *cfg, const char *name, size_t *idx)
{
	size_t i;

	for (i = 0; i < cfg->nproviders; i++) {
		if (strcmp(cfg->providers[i].name, name) == 0) {
			*idx = i;
			return 0;
		}
	}
	return -ENOENT;
}

static int load_targets(const cJSON *arr, struct gw_config *cfg, const char *file,
			const char *path, struct gw_alias *a, char *err)
{
	const cJSON *item;
	char tpath[256];
	size_t i = 0;
	size_t j;
	int n = cJSON_GetArraySize(arr);
	int rc;

	if (!cJSON_IsArray(arr) || n < 1 || n > GW_MAX_TARGETS)
		return cfg_error(err, file, path, "targets",
				 "expected an array of 1 to %d targets {\"provider\",\"model\"}",
				 GW_MAX_TARGETS);
	a->targets = calloc((size_t)n, sizeof(*a->targets));
	if (!a->targets)
		return cfg_error(err, file, path, "targets", "out of memory");
	cJSON_ArrayForEach(item, arr) {
		struct target_raw t = { 0 };
		struct gw_target_ref *ref = &a->targets[i];

		snprintf(tpath, sizeof(tpath), "%s.targets[%zu]", path, i);
		rc = cfg_apply(target_keys, NELEM(target_keys), item, &t, file, tpath, err);
		if (!rc && find_provider(cfg, t.provider, &ref->provider))
			rc = cfg_error(err, file, tpath, "provider",
				       "expected a provider defined under \"providers\", got \"%.64s\"",
				       t.provider);
		if (rc) {
			cfg_free(target_keys, NELEM(target_keys), &t);
			return rc;
		}
		ref->model = t.model;
		t.model = NULL;
		cfg_free(target_keys, NELEM(target_keys), &t);
		a->ntargets = ++i;
		for (j = 0; j + 1 < i; j++) {
			if (a->targets[j].provider == ref->provider &&
			    strcmp(a->targets[j].model, ref->model) == 0)
				return cfg_error(err, file, tpath, NULL,
						 "expected each target once, but %s/%.64s is also "
						 "targets[%zu]", cfg->providers[ref->provider].name,
						 ref->model, j);
		}
	}
	return 0;
}

/* The sections every alias inherits from the top level. */
struct alias_defaults {
	struct retry_raw retry;
	struct hedge_raw hedge;
	struct budget_raw budget;
};

static int check_hedge(const struct hedge_raw *h, const char *file, const char *path, char *err)
{
	if (h->max_after_ms < h->min_after_ms)
		return cfg_error(err, file, path, "max_after_ms",
				 "expected at least min_after_ms (%g), got %g", h->min_after_ms,
				 h->max_after_ms);
	return 0;
}

static struct gw_hedge hedge_from_raw(const struct hedge_raw *h)
{
	return (struct gw_hedge){
		.enabled = h->enabled,
		.after_ms = h->after_ms,
		.percentile = h->percentile,
		.min_after_ms = h->min_after_ms,
		.max_after_ms = h->max_after_ms,
		.min_samples = (unsigned)h->min_samples,
		.max = (unsigned)h->max,
	};
}

static int load_alias(const cJSON *obj, struct gw_config *cfg, const struct alias_defaults *top,
		      const char *file, struct gw_alias *a, char *err)
{
	struct alias_raw raw = { 0 };
	struct retry_raw rr = top->retry;
	struct hedge_raw hr = top->hedge;
	struct budget_raw bu = top->budget;
	const cJSON *hedge = cJSON_GetObjectItemCaseSensitive(obj, "hedge");
	char path[192];
	char sub[224];
	int rc;

	snprintf(path, sizeof(path), "models.%s", obj->string);
	a->name = strdup(obj->string);
	if (!a->name)
		return cfg_error(err, file, path, NULL, "out of memory");
	if (!name_ok(obj->string, ":/+@"))
		return cfg_error(err, file, "models", obj->string,
				 "expected an alias of 1-128 letters, digits or _-.:/+@");
	rc = cfg_apply(alias_keys, NELEM(alias_keys), obj, &raw, file, path, err);
	if (rc)
		return rc;
	rc = load_targets(cJSON_GetObjectItemCaseSensitive(obj, "targets"), cfg, file, path, a, err);
	if (rc)
		return rc;
	a->max_attempts = raw.max_attempts ? (unsigned)raw.max_attempts : (unsigned)a->ntargets;
	snprintf(sub, sizeof(sub), "%s.retry", path);
	rc = apply_inherited(retry_keys, NRETRY_KEYS, cJSON_GetObjectItemCaseSensitive(obj, "retry"),
			     &rr, file, sub, err);
	if (rc)
		return rc;
	a->retry = (struct gw_retry){ (unsigned)rr.max_retries, rr.base_ms, rr.cap_ms,
				      rr.min_attempt_ms };
	snprintf(sub, sizeof(sub), "%s.hedge", path);
	if (hedge)
		hr.enabled = true;	/* given the object, hedging is on unless it says not */
	rc = apply_inherited(hedge_keys, NELEM(hedge_keys), hedge, &hr, file, sub, err);
	if (!rc)
		rc = check_hedge(&hr, file, sub, err);
	if (rc)
		return rc;
	a->hedge = hedge_from_raw(&hr);
	snprintf(sub, sizeof(sub), "%s.budget", path);
	rc = apply_inherited(budget_keys, NELEM(budget_keys),
			     cJSON_GetObjectItemCaseSensitive(obj, "budget"), &bu, file, sub, err);
	if (rc)
		return rc;
	a->budget = (struct gw_budget){ bu.ratio, bu.min_per_second, bu.burst };
	rc = gw_config__contract(obj, file, path, &a->contract, err);
	if (!rc)
		rc = gw_config__degraded(obj, file, path, &a->degraded, err);
	return rc;
}

/* The top level's hedge (off unless given), budget and classes. */
static int load_routing(const cJSON *root, const char *file, struct gw_config *cfg,
			struct alias_defaults *d, char *err)
{
	const cJSON *classes = cJSON_GetObjectItemCaseSensitive(root, "classes");
	struct batch_raw bq = { 0 };
	int rc;

	rc = apply_section(hedge_keys, NELEM(hedge_keys), root, "hedge", &d->hedge, file, "hedge",
			   err);
	if (!rc)
		rc = check_hedge(&d->hedge, file, "hedge", err);
	if (rc)
		return rc;
	if (!cJSON_GetObjectItemCaseSensitive(root, "hedge"))
		d->hedge.enabled = false;
	rc = apply_section(budget_keys, NELEM(budget_keys), root, "budget", &d->budget, file,
			   "budget", err);
	if (rc)
		return rc;
	if (classes) {
		rc = cfg_apply(classes_keys, NELEM(classes_keys), classes, &bq, file, "classes",
			       err);
		if (rc)
			return rc;
	}
	rc = apply_section(batch_keys, NELEM(batch_keys), classes, "batch", &bq, file,
			   "classes.batch", err);
	if (rc)
		return rc;
	cfg->batch = (struct gw_batch){ (unsigned)bq.queue_max, bq.max_wait_ms,
					(unsigned)bq.concurrency };
	return 0;
}

/* The members of an object section, checked to be a non-empty object of unique keys. */
static int section(const cJSON *root, const char *key, const char *file, char *err,
		   const cJSON **out)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, key);
	const cJSON *a;
	const cJSON *b;

	if (!cJSON_IsObject(obj) || !obj->child)
		return cfg_error(err, file, "", key, "expected a non-empty object");
	for (a = obj->child; a; a = a->next) {
		for (b = obj->child; b != a; b = b->next) {
			if (strcmp(a->string, b->string) == 0)
				return cfg_error(err, file, key, a->string,
						 "given twice; expected each name once");
		}
	}
	*out = obj;
	return 0;
}

static int load_top(const cJSON *root, const char *file, struct gw_config *cfg, char *err)
{
	struct top_raw top = { 0 };
	struct stream_raw st = { 0 };
	int rc;

	rc = cfg_apply(top_keys, NTOP_KEYS, root, &top, file, "", err);
	if (rc)
		goto out;
	if (opt_parse_hostport(top.listen, &cfg->listen)) {
		rc = cfg_error(err, file, "", "listen",
			       "expected HOST:PORT with a numeric host and a port from 0 to 65535, "
			       "got \"%.100s\"", top.listen);
		goto out;
	}
	cfg->deadline_ms = top.deadline_ms;
	cfg->seed = (uint64_t)top.seed;
	cfg->max_body_bytes = (size_t)top.max_body_bytes;
	cfg->header_timeout_ms = top.header_timeout_ms;
	cfg->idle_timeout_ms = top.idle_timeout_ms;
	cfg->max_connections = (unsigned)top.max_connections;
	cfg->max_upstream_body_bytes = (size_t)top.max_upstream_body_bytes;
	cfg->upstream_body_budget_bytes = (size_t)top.upstream_body_budget_bytes;
	cfg->workers = (unsigned)top.workers;
	if (cfg->upstream_body_budget_bytes < cfg->max_upstream_body_bytes) {
		rc = cfg_error(err, file, "", "upstream_body_budget_bytes",
			       "expected at least max_upstream_body_bytes (%zu), got %zu",
			       cfg->max_upstream_body_bytes, cfg->upstream_body_budget_bytes);
		goto out;
	}
	rc = apply_section(stream_keys, NSTREAM_KEYS, root, "stream", &st, file, "stream", err);
	cfg->first_token_timeout_ms = st.first_token_timeout_ms;
	cfg->stall_timeout_ms = st.stall_timeout_ms;
out:
	cfg_free(top_keys, NTOP_KEYS, &top);
	return rc;
}

/* gw_config_from_json, reading the environment's keys only when read_env. */
static int from_json(const cJSON *root, const char *path, bool allow_remote, bool read_env,
		     struct gw_config *cfg, char *err)
{
	struct breaker_raw br = { 0 };
	struct alias_defaults ad = { 0 };
	const cJSON *providers;
	const cJSON *models;
	const cJSON *item;
	size_t i;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	rc = load_top(root, path, cfg, err);
	if (!rc)
		rc = load_auth(root, path, read_env, &cfg->auth, err);
	if (!rc)
		rc = gw_config__shared(root, path, allow_remote, read_env, &cfg->shared, err);
	if (rc)
		goto out;
	rc = apply_section(breaker_keys, NBREAKER_KEYS, root, "breaker", &br, path, "breaker", err);
	if (rc)
		goto out;
	cfg->breaker = breaker_from_raw(&br);
	cfg->when_all_open = (enum gw_all_open)br.when_all_open;
	rc = check_breaker(&cfg->breaker, path, "breaker", err);
	if (rc)
		goto out;
	rc = apply_section(retry_keys, NRETRY_KEYS, root, "retry", &ad.retry, path, "retry", err);
	if (!rc)
		rc = load_routing(root, path, cfg, &ad, err);
	if (rc)
		goto out;
	rc = section(root, "providers", path, err, &providers);
	if (!rc)
		rc = section(root, "models", path, err, &models);
	if (rc)
		goto out;
	cfg->providers = calloc((size_t)cJSON_GetArraySize(providers), sizeof(*cfg->providers));
	cfg->aliases = calloc((size_t)cJSON_GetArraySize(models), sizeof(*cfg->aliases));
	if (!cfg->providers || !cfg->aliases) {
		rc = cfg_error(err, path, "", NULL, "out of memory");
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(item, providers) {
		cfg->nproviders = i + 1;
		rc = load_provider(item, &br, allow_remote, read_env, path, &cfg->providers[i++],
				   err);
		if (rc)
			goto out;
	}
	i = 0;
	cJSON_ArrayForEach(item, models) {
		cfg->naliases = i + 1;
		rc = load_alias(item, cfg, &ad, path, &cfg->aliases[i++], err);
		if (rc)
			goto out;
	}
out:
	if (rc)
		gw_config_free(cfg);
	return rc;
}

int gw_config_from_json(const cJSON *root, const char *path, bool allow_remote,
			struct gw_config *cfg, char *err)
{
	return from_json(root, path, allow_remote, true, cfg, err);
}

int gw_config_check_json(const cJSON *root, const char *file, char *err)
{
	struct gw_config cfg;
	int rc;

	rc = from_json(root, file, false, false, &cfg, err);
	if (!rc)
		gw_config_free(&cfg);
	return rc;
}

int gw_config_read_json(const cJSON *root, const char *file, struct gw_config *cfg, char *err)
{
	return from_json(root, file, false, false, cfg, err);
}

int gw_config_load(const char *path, bool allow_remote, struct gw_config *cfg, char *err)
{
	cJSON *root = json_load_file(path, err, CFG_ERR_LEN);
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if (!root)
		return -EINVAL;
	rc = gw_config_from_json(root, path, allow_remote, cfg, err);
	cJSON_Delete(root);
	return rc;
}

void gw_config_free(struct gw_config *cfg)
{
	size_t i;
	size_t j;

	for (i = 0; i < cfg->nproviders; i++) {
		free(cfg->providers[i].name);
		free(cfg->providers[i].base_url);
		free(cfg->providers[i].chat_url);
		free(cfg->providers[i].auth_header);
	}
	for (i = 0; i < cfg->naliases; i++) {
		for (j = 0; j < cfg->aliases[i].ntargets; j++)
			free(cfg->aliases[i].targets[j].model);
		free(cfg->aliases[i].targets);
		free(cfg->aliases[i].name);
		gw_config__answer_free(&cfg->aliases[i].contract, &cfg->aliases[i].degraded);
	}
	free(cfg->providers);
	free(cfg->aliases);
	for (i = 0; i < cfg->auth.nkeys; i++) {
		if (cfg->auth.keys[i])	/* NULL when only checked (gw_config_check_json) */
			explicit_bzero(cfg->auth.keys[i], cfg->auth.lens[i]);
		free(cfg->auth.keys[i]);
	}
	free(cfg->auth.keys);
	free(cfg->auth.lens);
	gw_config__shared_free(&cfg->shared);
	memset(cfg, 0, sizeof(*cfg));
}

int gw_config_check_listen(const struct gw_config *cfg, const struct sockaddr_storage *addr,
			   const char *flag, bool allow_remote, const char *file, char *err)
{
	char text[64];

	if (opt_addr_is_loopback((const struct sockaddr *)addr))
		return 0;
	opt_format_addr((const struct sockaddr *)addr, text, sizeof(text));
	if (!allow_remote && flag) {
		snprintf(err, CFG_ERR_LEN,
			 "%s: expected a loopback address (127.0.0.0/8 or ::1) without "
			 "--allow-remote, got \"%s\": anyone who can reach it would spend the "
			 "providers' keys (serving remotely needs --allow-remote and client keys "
			 "in auth.keys_env)", flag, text);
		return -EINVAL;
	}
	if (!allow_remote)
		return cfg_error(err, file, "", "listen",
				 "expected a loopback address (127.0.0.0/8 or ::1) without "
				 "--allow-remote, got \"%s\": anyone who can reach it would spend "
				 "the providers' keys (serving remotely needs --allow-remote and "
				 "client keys in auth.keys_env)", text);
	if (!cfg->auth.nkeys)
		return cfg_error(err, file, "auth", "keys_env",
				 "missing (required to serve on %s, from %s, which is not loopback: "
				 "without client keys anyone who can reach it would spend the "
				 "providers' keys)", text, flag ? flag : "listen");
	return 0;
}

/*
 * Each table once, at the path where it is defined: a provider's breaker
 * and an alias's retry, hedge and budget take the top-level tables' keys.
 */
const struct cfg_section *gw_config_sections(size_t *n)
{
	static const struct cfg_section sections[] = {
		{ "", top_keys, NTOP_KEYS },
		{ "stream", stream_keys, NSTREAM_KEYS },
		{ "retry", retry_keys, NRETRY_KEYS },
		{ "hedge", hedge_keys, NELEM(hedge_keys) },
		{ "budget", budget_keys, NELEM(budget_keys) },
		{ "classes", classes_keys, NELEM(classes_keys) },
		{ "classes.batch", batch_keys, NELEM(batch_keys) },
		{ "breaker", breaker_keys, NBREAKER_KEYS },
		{ "auth", auth_keys, NELEM(auth_keys) },
		{ "shared_state", gw_config__shared_keys, GW_NSHARED_KEYS },
		{ "providers.NAME", provider_keys, NPROVIDER_KEYS },
		{ "providers.NAME.price_per_1k", price_keys, NELEM(price_keys) },
		{ "providers.NAME.health_check", health_keys, NELEM(health_keys) },
		{ "models.ALIAS", alias_keys, NELEM(alias_keys) },
		{ "models.ALIAS.targets[]", target_keys, NELEM(target_keys) },
		{ "models.ALIAS.contract", gw_config__contract_keys, GW_NCONTRACT_KEYS },
		{ "models.ALIAS.degraded", gw_config__degraded_keys, GW_NDEGRADED_KEYS },
	};

	*n = NELEM(sections);
	return sections;
}
