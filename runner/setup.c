/*
 * setup: a scenario's setups — their kinds and each kind's keys, a
 * gateway setup's config checked with the gateway's own loader, an
 * external setup's command, ready URL, target, response headers, files
 * and ready time, any setup's request headers — and the setups a
 * --add-setup file adds to a loaded scenario.
 */
#include "runner/scenario.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/json.h"
#include "gateway/config.h"
#include "loadgen/mix.h"
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
	double ready_ms;
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
	SK("headers", CFG_SKIP, name, false, 0, 0, 0),
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
	SK("files", CFG_SKIP, name, false, 0, 0, 0),
	/* Unscaled (runner/timescale.c): a program's start does not shrink with the timeline. */
	SK("ready_ms", CFG_NUM, ready_ms, false, SC_READY_MS_DEFAULT, 1, 120000),
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

#define MAX_SETUP_KEYS 12

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
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, false, sc->scale,
				      NULL };
	struct sc_expand_vals vals = { 0 };
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
	vals.urls = urls;
	stand_in.v = &vals;
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
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, false, false, sc->scale,
				      NULL };
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

/*
 * Checks that obj's key is an object of at most max string members, each
 * name given once (case ignored when nocase). Returns 0 with *out the
 * object (NULL when absent), or -EINVAL naming the key.
 */
static int string_object(const cJSON *obj, const char *key, size_t max, bool nocase,
			 const char *what, const char *file, const char *path, const cJSON **out,
			 char *err)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, key);
	const cJSON *c;
	const cJSON *prev;
	char sub[96];
	char got[96];

	*out = NULL;
	if (!o)
		return 0;
	snprintf(sub, sizeof(sub), "%s.%s", path, key);
	cfg_describe(o, got, sizeof(got));
	if (!cJSON_IsObject(o) || (size_t)cJSON_GetArraySize(o) > max)
		return cfg_error(err, file, path, key, "expected an object of at most %zu %s, got "
				 "%s%s", max, what, got, cJSON_IsObject(o) ? " with more" : "");
	cJSON_ArrayForEach(c, o) {
		for (prev = o->child; prev != c; prev = prev->next) {
			if (nocase ? strcasecmp(prev->string, c->string) == 0 :
			    strcmp(prev->string, c->string) == 0)
				return cfg_error(err, file, sub, c->string, "given twice%s; expected "
						 "each once", nocase ? " (header names ignore case)" :
						 "");
		}
		if (!cJSON_IsString(c)) {
			cfg_describe(c, got, sizeof(got));
			return cfg_error(err, file, sub, c->string, "expected a string, got %s", got);
		}
	}
	*out = o;
	return 0;
}

/* Copies an object's names and string values into names[] and values[] (n of them). */
static int copy_pairs(const cJSON *o, char ***names, char ***values, size_t *n, const char *file,
		      const char *path, char *err)
{
	size_t len = (size_t)cJSON_GetArraySize(o);
	const cJSON *c;

	*names = calloc(len + 1, sizeof(**names));
	*values = calloc(len + 1, sizeof(**values));
	if (!*names || !*values)
		return scenario__oom(err, file, path);
	cJSON_ArrayForEach(c, o) {
		(*names)[*n] = strdup(c->string);
		(*values)[*n] = strdup(c->valuestring);
		if (!(*names)[*n] || !(*values)[*n]) {
			(*n)++;		/* freed with the rest */
			return scenario__oom(err, file, path);
		}
		(*n)++;
	}
	return 0;
}

/* A header value: no control characters but tab (as loadgen takes one). */
static bool header_value_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	}
	return true;
}

/*
 * "headers": request headers loadgen sends on every request of the setup
 * (its -H), names as loadgen takes them (not one it sets itself), values
 * templates: {upstream.NAME}, {hostport.NAME}, {dir}, {ms:N}, and an
 * external setup's {port} and {listen}.
 */
static int load_headers(const cJSON *obj, const struct scenario *sc, const char *file,
			const char *path, struct sc_setup *st, char *err)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, st->kind == SC_EXTERNAL,
				      true, sc->scale, NULL };
	const cJSON *h;
	const cJSON *c;
	char sub[96];
	char key[192];
	int rc;

	rc = string_object(obj, "headers", SC_SETUP_HEADERS_MAX, true, "request headers (name: "
			   "value)", file, path, &h, err);
	if (rc || !h)
		return rc;
	snprintf(sub, sizeof(sub), "%s.headers", path);
	cJSON_ArrayForEach(c, h) {
		if (!mix_header_name_ok(c->string, strlen(c->string)))
			return cfg_error(err, file, sub, c->string, "expected a header name made of "
					 "letters, digits and !#$%%&'*+-.^_`|~");
		if (mix_header_reserved(c->string, strlen(c->string)))
			return cfg_error(err, file, sub, c->string, "expected a header loadgen does "
					 "not set itself (%s)", MIX_RESERVED_HEADERS);
		if (!header_value_ok(c->valuestring))
			return cfg_error(err, file, sub, c->string, "expected a header value without "
					 "control characters (no CR or LF)");
		snprintf(key, sizeof(key), "%s.%s", sub, c->string);
		rc = template_check(&cx, c->valuestring, file, key, err);
		if (rc)
			return rc;
	}
	return copy_pairs(h, &st->header_names, &st->header_values, &st->nheaders, file, sub, err);
}

/*
 * The names the runner or its programs write in a run's folder (fnmatch
 * patterns): a setup's "files" may not take them, nor a NAME.tmp, the
 * name a file has while it is written.
 */
static const char *const run_file_patterns[] = {
	"requests.csv", "requests.jsonl", "summary.json", "loadgen-summary.json", "sim.json",
	"mix.json", "external.log", "loadgen.log", "redis.log", "redis", "mock-*.csv",
	"mockprov-*.json", "mockprov-*.log", "gateway*.json", "gateway*.log", "events*.jsonl",
	"*.tmp", NULL,
};

/* Whether name is a plain file name a setup may write into the run's folder. */
static bool file_name_ok(const char *name)
{
	size_t i;

	if (!name[0] || strlen(name) > 128 || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return false;
	for (i = 0; run_file_patterns[i]; i++) {
		if (fnmatch(run_file_patterns[i], name, 0) == 0)
			return false;
	}
	return true;
}

/* "files": NAME → text, written into the run's folder, placeholders filled. */
static int load_files(const cJSON *obj, const struct subst_ctx *cx, const char *file,
		      const char *path, struct sc_setup *st, char *err)
{
	const cJSON *f;
	const cJSON *c;
	char sub[96];
	char key[256];
	int rc;

	rc = string_object(obj, "files", SC_SETUP_FILES_MAX, false, "files (name: text)", file,
			   path, &f, err);
	if (rc || !f)
		return rc;
	snprintf(sub, sizeof(sub), "%s.files", path);
	cJSON_ArrayForEach(c, f) {
		if (!file_name_ok(c->string))
			return cfg_error(err, file, sub, c->string, "expected a plain file name of "
					 "1-128 bytes (no '/', not \".\" or \"..\", not *.tmp) that "
					 "is none of the run's own (requests.csv, requests.jsonl, "
					 "summary.json, loadgen-summary.json, mock-*.csv, "
					 "mockprov-*, external.log, loadgen.log, mix.json…)");
		snprintf(key, sizeof(key), "%s.%.100s", sub, c->string);
		rc = template_check(cx, c->valuestring, file, key, err);
		if (rc)
			return rc;
	}
	return copy_pairs(f, &st->file_names, &st->file_texts, &st->nfiles, file, sub, err);
}

static int load_external(const cJSON *obj, const struct scenario *sc, struct setup_raw *raw,
			 const char *file, const char *path, struct sc_setup *st, char *err)
{
	const struct subst_ctx cx = { sc->provider_names, sc->nproviders, true, true, sc->scale,
				      NULL };
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
	st->ready_ms = raw->ready_ms;
	rc = load_files(obj, &cx, file, path, st, err);
	if (rc)
		return rc;
	return load_response_headers(obj, file, path, st, err);
}

/*
 * Loads setup obj into sc->setups[idx], said to be "setups[shown]" of
 * file in messages; its name must differ from every setup before it
 * (those from first on are file's own, the others another file's).
 */
static int load_setup(const cJSON *obj, struct scenario *sc, size_t idx, size_t shown,
		      size_t first, const char *file, char *err)
{
	struct cfg_key keys[MAX_SETUP_KEYS];
	struct setup_raw raw = { 0 };
	struct sc_setup *st = &sc->setups[idx];
	enum sc_setup_kind kind = SC_DIRECT;
	char path[64];
	size_t n = 0;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "setups[%zu]", shown);
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
		if (strcmp(sc->setups[i].name, raw.name) != 0)
			continue;
		if (i >= first)
			rc = cfg_error(err, file, path, "name", "expected a name no other setup has, "
				       "got \"%s\" (also setups[%zu])", raw.name, i - first);
		else
			rc = cfg_error(err, file, path, "name", "expected a name no other setup has, "
				       "got \"%s\" (also setups[%zu] of %.160s)", raw.name,
				       i < sc->nsetups - sc->nadded ? i : i - (sc->nsetups - sc->nadded),
				       i < sc->nsetups - sc->nadded ? sc->path : "an earlier --add-setup file");
		goto out;
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
	if (!rc)
		rc = load_headers(obj, sc, file, path, st, err);
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
		rc = load_setup(item, sc, i, i, 0, file, err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

void setup_free(struct sc_setup *st)
{
	size_t j;

	free(st->name);
	cJSON_Delete(st->config);
	for (j = 0; j < st->ncommand; j++)
		free(st->command[j]);
	free(st->command);
	free(st->ready_url);
	free(st->target);
	cJSON_Delete(st->response_headers);
	for (j = 0; j < st->nfiles; j++) {
		free(st->file_names[j]);
		free(st->file_texts[j]);
	}
	free(st->file_names);
	free(st->file_texts);
	for (j = 0; j < st->nheaders; j++) {
		free(st->header_names[j]);
		free(st->header_values[j]);
	}
	free(st->header_names);
	free(st->header_values);
	memset(st, 0, sizeof(*st));
}

/*
 * The setups of an --add-setup file's document (doc: one setup object or
 * an array of them) as an array as written; NULL with err said when it is
 * neither (or memory runs out).
 */
static cJSON *added_array(const cJSON *doc, const char *path, char *err)
{
	cJSON *arr;
	char got[96];

	if (cJSON_IsObject(doc)) {
		arr = cJSON_CreateArray();
		if (!arr || !cJSON_AddItemToArray(arr, cJSON_Duplicate(doc, true))) {
			cJSON_Delete(arr);
			scenario__oom(err, path, NULL);
			return NULL;
		}
		return arr;
	}
	if (cJSON_IsArray(doc) && cJSON_GetArraySize(doc) > 0) {
		arr = cJSON_Duplicate(doc, true);
		if (!arr)
			scenario__oom(err, path, NULL);
		return arr;
	}
	cfg_describe(doc, got, sizeof(got));
	cfg_error(err, path, NULL, NULL, "expected a setup object or a non-empty array of setups, "
		  "got %s", got);
	return NULL;
}

int scenario_add_setups(struct scenario *sc, const char *path, char *err)
{
	cJSON *doc = json_load_file(path, err, CFG_ERR_LEN);
	int rc;

	if (!doc)
		return -EINVAL;
	rc = scenario_add_setup_json(sc, doc, path, err);
	cJSON_Delete(doc);
	return rc;
}

int scenario_add_setup_json(struct scenario *sc, const cJSON *doc, const char *path, char *err)
{
	size_t before = sc->nsetups;
	size_t nadded = sc->nadded;
	struct sc_setup *more;
	cJSON *arr = NULL;
	cJSON *scaled = NULL;
	cJSON *item;
	size_t n;
	size_t i = 0;
	int rc = -EINVAL;

	arr = added_array(doc, path, err);
	if (!arr)
		goto out;
	n = (size_t)cJSON_GetArraySize(arr);
	scaled = cJSON_CreateObject();
	if (!scaled || !cJSON_AddItemToObject(scaled, "setups", cJSON_Duplicate(arr, true))) {
		rc = scenario__oom(err, path, NULL);
		goto out;
	}
	/* As the scenario's own: {"setups": […]} takes the same rule. */
	scenario_scale(scaled, sc->scale);
	more = realloc(sc->setups, (before + n) * sizeof(*more));
	if (!more) {
		rc = scenario__oom(err, path, NULL);
		goto out;
	}
	sc->setups = more;
	memset(sc->setups + before, 0, n * sizeof(*more));
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(scaled, "setups")) {
		rc = load_setup(item, sc, before + i, i, before, path, err);
		if (rc)
			break;
		i++;
	}
	if (!rc && !sc->added) {
		sc->added = cJSON_CreateArray();
		if (!sc->added)
			rc = scenario__oom(err, path, NULL);
	}
	while (!rc && arr->child) {
		if (!cJSON_AddItemToArray(sc->added, cJSON_DetachItemViaPointer(arr, arr->child)))
			rc = scenario__oom(err, path, NULL);	/* cannot happen: a detached item */
	}
	if (rc) {
		for (i = before; i < before + n; i++)
			setup_free(&sc->setups[i]);
		sc->nsetups = before;
		sc->nadded = nadded;
		goto out;
	}
	sc->nsetups = before + n;
	sc->nadded = nadded + n;
out:
	cJSON_Delete(scaled);
	cJSON_Delete(arr);
	return rc;
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
