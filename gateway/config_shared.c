/*
 * config_shared: the shared_state section — where a replica's breakers
 * are shared (local: nowhere; redis: a Redis server), its name, and the
 * password read from the environment, never written anywhere but Redis.
 */
#include "gateway/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"

struct shared_raw {
	int backend;
	char *url;
	char *key_prefix;
	char *password_env;
	char *replica;
	double lock_ms;
	double timeout_ms;
	double reconnect_ms;
	double reconnect_max_ms;
};

static const char *const backends[] = { "local", "redis", NULL };

#define SK(name, type, field, def, min, max, defs, choices) \
	{ name, type, offsetof(struct shared_raw, field), false, def, min, max, defs, choices }

const struct cfg_key gw_config__shared_keys[GW_NSHARED_KEYS] = {
	SK("backend", CFG_ENUM, backend, 0, 0, 0, "local", backends),
	SK("url", CFG_STR, url, 0, 0, 0, "redis://127.0.0.1:6379/0", NULL),
	SK("key_prefix", CFG_STR, key_prefix, 0, 0, 0, "faultline:", NULL),
	SK("password_env", CFG_STR, password_env, 0, 0, 0, NULL, NULL),
	SK("replica", CFG_STR, replica, 0, 0, 0, "gateway", NULL),
	SK("lock_ms", CFG_NUM, lock_ms, 5000, 10, 600000, NULL, NULL),
	SK("timeout_ms", CFG_NUM, timeout_ms, 500, 1, 60000, NULL, NULL),
	SK("reconnect_ms", CFG_NUM, reconnect_ms, 100, 1, 60000, NULL, NULL),
	SK("reconnect_max_ms", CFG_NUM, reconnect_max_ms, 5000, 1, 600000, NULL, NULL),
};

/* A replica's name: 1–63 letters, digits, '-', '_' or '.'. */
static bool replica_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (i >= GW_REPLICA_MAX || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
					    c == '.'))
			return false;
	}
	return i > 0;
}

/* A key prefix: at most 128 printable bytes, no space (cfg refuses an empty one). */
static bool prefix_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		if (i >= GW_KEY_PREFIX_MAX || (unsigned char)s[i] <= 0x20 ||
		    (unsigned char)s[i] >= 0x7f)
			return false;
	}
	return true;
}

static int read_password(const char *var, struct gw_shared *s, const char *file, char *err)
{
	const char *pw = getenv(var);
	size_t i;

	if (!pw || !*pw)
		return cfg_error(err, file, "shared_state", "password_env",
				 "expected the name of a set environment variable, but %.100s is %s",
				 var, pw ? "empty" : "not set");
	for (i = 0; pw[i]; i++) {
		if ((unsigned char)pw[i] < 0x20 || pw[i] == 0x7f)
			return cfg_error(err, file, "shared_state", "password_env",
					 "expected a password without control characters in %.100s",
					 var);
	}
	s->password = strdup(pw);
	return s->password ? 0 : cfg_error(err, file, "shared_state", "password_env",
					   "out of memory");
}

int gw_config__shared(const cJSON *root, const char *file, bool allow_remote, bool read_env,
		      struct gw_shared *s, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "shared_state");
	struct shared_raw raw = { 0 };
	cJSON *empty = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!obj)
		obj = empty = cJSON_CreateObject();
	if (!obj)
		return cfg_error(err, file, "", "shared_state", "out of memory");
	rc = cfg_apply(gw_config__shared_keys, GW_NSHARED_KEYS, obj, &raw, file,
		       "shared_state", err);
	cJSON_Delete(empty);
	if (rc)
		goto out;
	s->backend = (enum gw_shared_backend)raw.backend;
	s->lock_ms = raw.lock_ms;
	s->timeout_ms = raw.timeout_ms;
	s->reconnect_ms = raw.reconnect_ms;
	s->reconnect_max_ms = raw.reconnect_max_ms;
	if (!replica_ok(raw.replica)) {
		rc = cfg_error(err, file, "shared_state", "replica",
			       "expected 1 to %d letters, digits, '-', '_' or '.', got \"%.100s\"",
			       GW_REPLICA_MAX, raw.replica);
		goto out;
	}
	if (!prefix_ok(raw.key_prefix)) {
		rc = cfg_error(err, file, "shared_state", "key_prefix",
			       "expected at most %d printable bytes without spaces",
			       GW_KEY_PREFIX_MAX);
		goto out;
	}
	if (raw.reconnect_max_ms < raw.reconnect_ms) {
		rc = cfg_error(err, file, "shared_state", "reconnect_max_ms",
			       "expected at least reconnect_ms (%g), got %g", raw.reconnect_ms,
			       raw.reconnect_max_ms);
		goto out;
	}
	if (raw.password_env && !gw_config__env_name_ok(raw.password_env)) {
		rc = cfg_error(err, file, "shared_state", "password_env",
			       "expected an environment variable's name (a letter or '_', then "
			       "letters, digits or '_'; at most 128)");
		goto out;
	}
	rc = gw_config__redis_url(raw.url, allow_remote, s, file, err);
	if (!rc && raw.password_env && read_env && s->backend == GW_SHARED_REDIS)
		rc = read_password(raw.password_env, s, file, err);
	if (rc)
		goto out;
	s->url = raw.url;
	s->key_prefix = raw.key_prefix;
	s->replica = raw.replica;
	raw.url = raw.key_prefix = raw.replica = NULL;
out:
	cfg_free(gw_config__shared_keys, GW_NSHARED_KEYS, &raw);
	if (rc)
		gw_config__shared_free(s);
	return rc;
}

void gw_config__shared_free(struct gw_shared *s)
{
	if (s->password)
		explicit_bzero(s->password, strlen(s->password));
	free(s->password);
	free(s->url);
	free(s->host);
	free(s->key_prefix);
	free(s->replica);
	memset(s, 0, sizeof(*s));
}

int gw_config_set_replica(struct gw_config *cfg, const char *name, char *err)
{
	char *copy;

	if (!replica_ok(name)) {
		snprintf(err, CFG_ERR_LEN,
			 "--replica: expected 1 to %d letters, digits, '-', '_' or '.', got "
			 "\"%.100s\"", GW_REPLICA_MAX, name);
		return -EINVAL;
	}
	copy = strdup(name);
	if (!copy) {
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	free(cfg->shared.replica);
	cfg->shared.replica = copy;
	return 0;
}
