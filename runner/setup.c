/*
 * setup: a scenario's setups — their kinds and each kind's keys, a
 * gateway setup's config checked with the gateway's own loader, an
 * external setup's command, ready URL, target and response headers.
 */
#include "runner/scenario.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/config.h"
#include "runner/scenario_int.h"

struct setup_raw {
	char *name;
	int kind;
	char *provider;
	int64_t retries;
	double retry_backoff_ms;
	char *ready_url;
	char *target;
	int64_t replicas;
	int shared_state;
};

static const char *const setup_kind_names[] = { "direct", "client_retry", "gateway", "external",
						NULL };
static const char *const shared_state_names[] = { "local", "redis", NULL };

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
	SK("replicas", CFG_INT, replicas, false, 1, 1, SC_REPLICAS_MAX),
	{ "shared_state", CFG_ENUM, offsetof(struct setup_raw, shared_state), false, 0, 0, 0,
	  "local", shared_state_names },
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

/* loadgen's response_headers keys (docs/loadgen.md, "The mix file"). */
static const char *const response_header_keys[] = { "provider", "attempts", "hedged",
						    "cost_usd", "degraded", NULL };

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
 * listen — but without reading the environment (gw_config_check_json):
 * a scenario is also loaded to report or gate results made on a machine
 * that had the keys this one lacks, and the gateway refuses to start
 * without them anyway. Its messages are said as "FILE: setups[i] \"NAME\": config.KEY:
 * expected …".
 */
static int check_gateway_config(const cJSON *cfg, const struct scenario *sc, const char *file,
				const char *path, const struct sc_setup *st, char *err)
{
	const char **urls = NULL;
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, 0, NULL };
	struct subst_ctx stand_in = cx;
	struct buf msg = { 0 };
	char gerr[CFG_ERR_LEN];
	const char *rest;
	cJSON *copy = NULL;
	size_t i;
	int rc;

	urls = calloc(sc->nproviders ? sc->nproviders : 1, sizeof(*urls));
	copy = cJSON_Duplicate(cfg, 1);
	if (!urls || !copy) {
		rc = scenario__oom(err, file, path);
		goto out;
	}
	for (i = 0; i < sc->nproviders; i++)
		urls[i] = STAND_IN_URL;
	stand_in.urls = urls;
	rc = template_expand_strings(&stand_in, copy, gerr, sizeof(gerr));
	if (!rc)
		rc = template_set_listen(copy, "127.0.0.1:0");
	if (rc) {		/* check_strings passed: only memory can fail */
		rc = scenario__oom(err, file, path);
		goto out;
	}
	rc = gw_config_check_json(copy, GW_FILE_MARK, gerr);
	if (!rc)
		goto out;
	rest = gerr;
	if (strncmp(rest, GW_FILE_MARK ": ", sizeof(GW_FILE_MARK ": ") - 1) == 0)
		rest += sizeof(GW_FILE_MARK ": ") - 1;
	if (strncmp(rest, "(top level)", 11) == 0)
		rc = buf_printf(&msg, "%.160s: %s \"%s\": config%s", file, path, st->name, rest + 11);
	else
		rc = buf_printf(&msg, "%.160s: %s \"%s\": config.%s", file, path, st->name, rest);
	if (rc) {
		rc = scenario__oom(err, file, path);
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

/* The shared_state keys the runner writes itself (or --replica says). */
static const char *const runner_shared_keys[] = { "backend", "url", "key_prefix", "replica",
						  "password_env", NULL };

/*
 * A gateway config's shared_state: none for a setup with local state; for
 * one with shared_state redis, the gateway's tuning keys (lock_ms,
 * timeout_ms, reconnect_ms…: scaled like every duration) but none of
 * those the runner writes for the run's own Redis.
 */
static int check_shared_state(const cJSON *cfg, const char *file, const char *sub,
			      const struct sc_setup *st, char *err)
{
	const cJSON *ss = cJSON_GetObjectItemCaseSensitive(cfg, "shared_state");
	char path[128];
	char got[96];
	size_t i;

	if (!ss)
		return 0;
	cfg_describe(ss, got, sizeof(got));
	if (!st->shared_redis)
		return cfg_error(err, file, sub, "shared_state", "expected no shared_state on a setup "
				 "whose state is local (the setup's \"shared_state\": \"redis\" "
				 "gives it one, with a Redis of the run's), got %s", got);
	if (!cJSON_IsObject(ss))
		return cfg_error(err, file, sub, "shared_state", "expected an object of the "
				 "gateway's shared_state tuning keys, got %s", got);
	snprintf(path, sizeof(path), "%s.shared_state", sub);
	for (i = 0; runner_shared_keys[i]; i++) {
		if (cJSON_GetObjectItemCaseSensitive(ss, runner_shared_keys[i]))
			return cfg_error(err, file, path, runner_shared_keys[i], "expected none: the "
					 "runner writes backend, url and key_prefix for the run's "
					 "Redis (which has no password) and gives each replica "
					 "--replica rK");
	}
	return 0;
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
	rc = check_shared_state(cfg, file, sub, st, err);
	if (rc)
		return rc;
	rc = template_check_strings(&cx, cfg, file, sub, err);
	if (!rc)
		rc = check_gateway_config(cfg, sc, file, path, st, err);
	if (rc)
		return rc;
	st->config = cJSON_Duplicate(cfg, 1);
	return st->config ? 0 : scenario__oom(err, file, sub);
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

	rc = scenario__get_array(obj, "command", true, "strings (the program and its arguments)",
				 file, path, &arr, err);
	if (rc)
		return rc;
	st->command = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*st->command));
	if (!st->command)
		return scenario__oom(err, file, path);
	cJSON_ArrayForEach(c, arr) {
		snprintf(sub, sizeof(sub), "%s.command[%zu]", path, i);
		if (!cJSON_IsString(c) || (i == 0 && !c->valuestring[0])) {
			cfg_describe(c, got, sizeof(got));
			return cfg_error(err, file, sub, NULL, "expected a %sstring, got %s",
					 i == 0 ? "non-empty " : "", got);
		}
		rc = template_check(cx, c->valuestring, file, sub, err);
		if (rc)
			return rc;
		st->command[i] = strdup(c->valuestring);
		if (!st->command[i])
			return scenario__oom(err, file, sub);
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
				 "names (provider, attempts, hedged, cost_usd, degraded), got %s", got);
	}
	cJSON_ArrayForEach(c, rh) {
		for (i = 0; response_header_keys[i]; i++) {
			if (strcmp(response_header_keys[i], c->string) == 0)
				break;
		}
		if (!response_header_keys[i])
			return cfg_error(err, file, sub, c->string, "unknown key; expected one of "
					 "provider, attempts, hedged, cost_usd, degraded");
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
	return st->response_headers ? 0 : scenario__oom(err, file, sub);
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
	rc = template_check(&cx, raw->ready_url, file, sub, err);
	if (rc)
		return rc;
	snprintf(sub, sizeof(sub), "%s.target", path);
	rc = template_check(&cx, raw->target, file, sub, err);
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
	if (!scenario__name_ok(raw.name)) {
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
	st->replicas = kind == SC_GATEWAY ? (unsigned)raw.replicas : 1;
	st->shared_redis = kind == SC_GATEWAY && raw.shared_state == 1;
	switch (kind) {
	case SC_DIRECT:
	case SC_CLIENT_RETRY:
		rc = scenario__provider_ref(sc, raw.provider, file, path, "provider",
					    &st->provider, err);
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

int setup_load_all(const cJSON *root, const char *file, struct scenario *sc, char *err)
{
	const cJSON *arr;
	const cJSON *item;
	size_t i = 0;
	int rc;

	rc = scenario__get_array(root, "setups", true, "setups", file, "", &arr, err);
	if (rc)
		return rc;
	sc->setups = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*sc->setups));
	if (!sc->setups)
		return scenario__oom(err, file, "setups");
	cJSON_ArrayForEach(item, arr) {
		sc->nsetups = i + 1;
		rc = load_setup(item, sc, i, file, err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

size_t setup_sections(struct cfg_section *out, size_t max)
{
	const struct cfg_section sections[] = {
		{ "setups[]", setup_common_keys, NELEM(setup_common_keys) },
		{ "setups[]", direct_keys, NELEM(direct_keys) },
		{ "setups[]", client_retry_keys, NELEM(client_retry_keys) },
		{ "setups[]", gateway_keys, NELEM(gateway_keys) },
		{ "setups[]", external_keys, NELEM(external_keys) },
	};
	size_t i;

	for (i = 0; i < NELEM(sections) && i < max; i++)
		out[i] = sections[i];
	return NELEM(sections);
}
