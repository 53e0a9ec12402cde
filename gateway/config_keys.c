/*
 * config_keys: the secrets a gateway config names but never holds — a
 * provider's API key (api_key_env) and the client keys (auth.keys_env) —
 * read from the environment. No message ever carries a value.
 */
#include "gateway/config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"

/* Reads the key from the environment into p->auth_header, as p->dialect sends it. */
int gw_config__api_key(const char *var, struct gw_provider *p, const char *file,
			const char *path, char *err)
{
	const char *key = getenv(var);
	struct buf b = { 0 };
	size_t i;

	if (!key || !*key)
		return cfg_error(err, file, path, "api_key_env",
				 "expected the name of a set environment variable, but %.100s is %s",
				 var, key ? "empty" : "not set");
	for (i = 0; key[i]; i++) {
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			return cfg_error(err, file, path, "api_key_env",
					 "expected a key without control characters in %.100s", var);
	}
	if (buf_printf(&b, p->dialect == GW_DIALECT_ANTHROPIC ? "x-api-key: %s"
							       : "Authorization: Bearer %s", key)) {
		buf_free(&b);
		return cfg_error(err, file, path, "api_key_env", "out of memory");
	}
	p->auth_header = buf_steal(&b);
	return p->auth_header ? 0 : cfg_error(err, file, path, "api_key_env", "out of memory");
}

bool gw_config__env_name_ok(const char *s)
{
	size_t i;

	if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (i = 1; s[i]; i++) {
		if (i >= 128 || !(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') ||
				  (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	}
	return true;
}

/*
 * Reads client key i, auth.keys_env[i] (item), from the environment into
 * a. Messages name the variable, never its value.
 */
int gw_config__client_key(const cJSON *list, const cJSON *item, size_t i, const char *file,
			   bool read_env, struct gw_auth *a, char *err)
{
	const cJSON *prev;
	const char *key;
	char path[48];
	char got[96];
	size_t len;
	size_t j;

	snprintf(path, sizeof(path), "auth.keys_env[%zu]", i);
	if (!cJSON_IsString(item) || !gw_config__env_name_ok(item->valuestring)) {
		cfg_describe(item, got, sizeof(got));
		return cfg_error(err, file, path, NULL,
				 "expected an environment variable's name (a letter or '_', then "
				 "letters, digits or '_'; at most 128), got %s", got);
	}
	for (prev = list->child, j = 0; prev != item; prev = prev->next, j++) {
		if (strcmp(prev->valuestring, item->valuestring) == 0)
			return cfg_error(err, file, path, NULL,
					 "expected each variable once, but %s is also "
					 "auth.keys_env[%zu]", item->valuestring, j);
	}
	if (!read_env) {
		a->nkeys = i + 1;
		return 0;
	}
	key = getenv(item->valuestring);
	if (!key || !*key)
		return cfg_error(err, file, path, NULL,
				 "expected the name of a set environment variable holding a client "
				 "key, but %s is %s", item->valuestring, key ? "empty" : "not set");
	len = strlen(key);
	if (len < GW_CLIENT_KEY_MIN || len > GW_CLIENT_KEY_MAX)
		return cfg_error(err, file, path, NULL,
				 "expected a client key of %d to %d bytes in %s, got %s bytes",
				 GW_CLIENT_KEY_MIN, GW_CLIENT_KEY_MAX, item->valuestring,
				 len < GW_CLIENT_KEY_MIN ? "fewer" : "more");
	for (j = 0; j < len; j++) {
		if ((unsigned char)key[j] <= 0x20 || (unsigned char)key[j] >= 0x7f)
			return cfg_error(err, file, path, NULL,
					 "expected a client key of printable ASCII without spaces "
					 "in %s", item->valuestring);
	}
	a->keys[i] = strdup(key);
	if (!a->keys[i])
		return cfg_error(err, file, path, NULL, "out of memory");
	a->lens[i] = len;
	a->nkeys = i + 1;
	return 0;
}
