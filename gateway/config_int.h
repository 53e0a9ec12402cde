/*
 * config_int.h — what the gateway config's files share (config.c reads
 * the sections; config_url.c checks base URLs; config_keys.c reads keys
 * from the environment). Private to them: not for other modules.
 * Each returns 0, or -EINVAL with a message in err naming file, path and
 * key, in cfg_error's form.
 */
#ifndef FAULTLINE_GATEWAY_CONFIG_INT_H
#define FAULTLINE_GATEWAY_CONFIG_INT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway/config.h"

/*
 * Checks a base URL with libcurl's own parser, so the host checked is the
 * host connected to: http:// or https://, a host, no user or password, no
 * query or fragment; loopback unless allow_remote. Fills p->base_url (no
 * trailing '/') and p->chat_url, which gw_config_free frees.
 */
int gw_config__base_url(const char *url, bool allow_remote, struct gw_provider *p,
			const char *file, const char *path, char *err);

/* Reads provider p's key from variable var into p->auth_header. */
int gw_config__api_key(const char *var, struct gw_provider *p, const char *file,
		       const char *path, char *err);

/*
 * Client key i, auth.keys_env[i] (item of list): checks the variable's
 * name, and unless !read_env reads its value into a (a->nkeys becomes
 * i + 1 either way). Messages name the variable, never its value.
 */
int gw_config__client_key(const cJSON *list, const cJSON *item, size_t i, const char *file,
			  bool read_env, struct gw_auth *a, char *err);

#endif
