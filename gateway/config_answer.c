/*
 * config_answer: what an alias holds its answers to — `contract` (checking
 * answers against the request's response_format, and a default contract
 * for requests that state none) and `degraded` (what to answer when
 * nothing healthy can).
 */
#include "gateway/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "gateway/contract.h"

struct contract_raw {
	bool enforce;
	bool counts_as_failure;
};

const struct cfg_key gw_config__contract_keys[GW_NCONTRACT_KEYS] = {
	{ "enforce", CFG_BOOL, offsetof(struct contract_raw, enforce), false, 1, 0, 0, NULL,
	  NULL },
	{ "counts_as_failure", CFG_BOOL, offsetof(struct contract_raw, counts_as_failure), false,
	  1, 0, 0, NULL, NULL },
	{ "response_format", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};

struct degraded_raw {
	int mode;
	char *content;
	double ttl_s;
	int64_t max_entries;
	int64_t max_bytes;
};

static const char *const modes[] = { "error", "static", "cache", NULL };

#define DK(name, type, field, def, min, max, defs, choices) \
	{ name, type, offsetof(struct degraded_raw, field), false, def, min, max, defs, choices }

const struct cfg_key gw_config__degraded_keys[GW_NDEGRADED_KEYS] = {
	DK("mode", CFG_ENUM, mode, 0, 0, 0, "error", modes),
	DK("content", CFG_STR, content, 0, 0, 0, NULL, NULL),
	DK("ttl_s", CFG_NUM, ttl_s, 300, 0.001, 604800, NULL, NULL),
	DK("max_entries", CFG_INT, max_entries, 1000, 1, 10000000, NULL, NULL),
	DK("max_bytes", CFG_INT, max_bytes, 16777216, 4096, 68719476736.0, NULL, NULL),
};

/* Degraded static content, at most this long: it is one answer, not a document store. */
#define MAX_STATIC_CONTENT 65536

int gw_config__contract(const cJSON *alias, const char *file, const char *path,
			struct gw_contract *c, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(alias, "contract");
	const cJSON *rf = cJSON_GetObjectItemCaseSensitive(obj, "response_format");
	struct contract_raw raw = { 0 };
	char sub[224];
	char why[CFG_ERR_LEN / 2];
	int rc;

	c->enforce = c->counts_as_failure = true;
	if (!obj)
		return 0;
	snprintf(sub, sizeof(sub), "%s.contract", path);
	if (!cJSON_IsObject(obj))
		return cfg_error(err, file, path, "contract", "expected an object");
	rc = cfg_apply(gw_config__contract_keys, GW_NCONTRACT_KEYS, obj, &raw, file, sub, err);
	if (rc)
		return rc;
	c->enforce = raw.enforce;
	c->counts_as_failure = raw.counts_as_failure;
	if (!rf)
		return 0;
	rc = contract_from_response_format(rf, &c->dflt, why, sizeof(why));
	if (rc == -ENOMEM)
		return cfg_error(err, file, sub, "response_format", "out of memory");
	if (rc)
		return cfg_error(err, file, sub, "response_format",
				 "expected a response_format the gateway can check: %s", why);
	c->dflt_json = cJSON_PrintUnformatted(rf);
	if (!c->dflt_json)
		return cfg_error(err, file, sub, "response_format", "out of memory");
	return 0;
}

int gw_config__degraded(const cJSON *alias, const char *file, const char *path,
			struct gw_degraded *d, char *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(alias, "degraded");
	struct degraded_raw raw = { 0 };
	char sub[224];
	int rc;

	*d = (struct gw_degraded){ .mode = GW_DEGRADED_ERROR };
	if (!obj)
		return 0;
	snprintf(sub, sizeof(sub), "%s.degraded", path);
	if (!cJSON_IsObject(obj))
		return cfg_error(err, file, path, "degraded", "expected an object");
	rc = cfg_apply(gw_config__degraded_keys, GW_NDEGRADED_KEYS, obj, &raw, file, sub, err);
	if (rc)
		goto out;
	d->mode = (enum gw_degraded_mode)raw.mode;
	if (d->mode == GW_DEGRADED_STATIC && !raw.content) {
		rc = cfg_error(err, file, sub, "content", "expected a string with mode static");
		goto out;
	}
	if (d->mode != GW_DEGRADED_STATIC && raw.content) {
		rc = cfg_error(err, file, sub, "content", "expected only with mode static");
		goto out;
	}
	if (raw.content && strlen(raw.content) > MAX_STATIC_CONTENT) {
		rc = cfg_error(err, file, sub, "content", "expected at most %d bytes",
			       MAX_STATIC_CONTENT);
		goto out;
	}
	if (d->mode != GW_DEGRADED_CACHE) {
		static const char *const cache_only[] = { "ttl_s", "max_entries", "max_bytes" };

		for (size_t i = 0; i < 3; i++) {
			if (cJSON_GetObjectItemCaseSensitive(obj, cache_only[i])) {
				rc = cfg_error(err, file, sub, cache_only[i],
					       "expected only with mode cache");
				goto out;
			}
		}
	}
	d->content = raw.content;
	raw.content = NULL;
	d->ttl_ms = raw.ttl_s * 1000;
	d->max_entries = (size_t)raw.max_entries;
	d->max_bytes = (size_t)raw.max_bytes;
out:
	free(raw.content);
	return rc;
}

void gw_config__answer_free(struct gw_contract *c, struct gw_degraded *d)
{
	contract_free(c->dflt);
	c->dflt = NULL;
	free(c->dflt_json);
	c->dflt_json = NULL;
	free(d->content);
	d->content = NULL;
}
