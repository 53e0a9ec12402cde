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

/*
 * Checks shared_state.url, a Redis URL, with libcurl's parser:
 * redis://HOST[:PORT][/DB], HOST numeric (no name is looked up, so that
 * connecting never blocks) or localhost, loopback unless allow_remote, no
 * user or password (password_env holds it), no query or fragment. Fills
 * s->host, s->port (6379 when absent) and s->db (0).
 */
int gw_config__redis_url(const char *url, bool allow_remote, struct gw_shared *s,
			 const char *file, char *err);

/*
 * The shared_state section: reads it into s (defaults when root has
 * none), the password from password_env when read_env.
 */
int gw_config__shared(const cJSON *root, const char *file, bool allow_remote, bool read_env,
		      struct gw_shared *s, char *err);

/* Frees and wipes what gw_config__shared filled. */
void gw_config__shared_free(struct gw_shared *s);

/* The shared_state table, for gw_config_sections. */
#define GW_NSHARED_KEYS 9
extern const struct cfg_key gw_config__shared_keys[GW_NSHARED_KEYS];

/*
 * An alias's contract and degraded sections (alias: its object; path:
 * "models.ALIAS"): defaults when absent. gw_config__answer_free frees them.
 */
int gw_config__contract(const cJSON *alias, const char *file, const char *path,
			struct gw_contract *c, char *err);
int gw_config__degraded(const cJSON *alias, const char *file, const char *path,
			struct gw_degraded *d, char *err);
void gw_config__answer_free(struct gw_contract *c, struct gw_degraded *d);

/* Their tables, for gw_config_sections. */
#define GW_NCONTRACT_KEYS 3
#define GW_NDEGRADED_KEYS 5
extern const struct cfg_key gw_config__contract_keys[GW_NCONTRACT_KEYS];
extern const struct cfg_key gw_config__degraded_keys[GW_NDEGRADED_KEYS];

/* Whether s names an environment variable (a letter or '_', then letters, digits or '_'). */
bool gw_config__env_name_ok(const char *s);

#endif
