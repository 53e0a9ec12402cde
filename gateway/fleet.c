/*
 * fleet: the replicas' shared-state messages and what a replica does with
 * one (fleet.h).
 */
#include "gateway/fleet.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* A closed breaker's stored message lasts this long. */
#define FLEET_CLOSED_TTL_MS 600000.0

static bool copy_name(char *dst, size_t len, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (!src || n >= len)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

void fleet_msg_free(struct fleet_msg *m)
{
	free(m->provider);
	free(m->model);
	m->provider = m->model = NULL;
}

bool fleet_msg_of_change(struct fleet_msg *m, const char *replica, uint64_t instance,
			 const char *provider, const char *model, const struct breaker *b,
			 const struct breaker_change *chg, double now_ms, double now_unix_ms)
{
	memset(m, 0, sizeof(*m));
	if (!chg->changed || (chg->to != BREAKER_OPEN && chg->to != BREAKER_CLOSED))
		return false;
	if (!copy_name(m->replica, sizeof(m->replica), replica))
		return false;
	m->provider = strdup(provider);
	m->model = strdup(model ? model : "");
	if (!m->provider || !m->model) {
		fleet_msg_free(m);
		return false;
	}
	m->instance = instance;
	m->to = chg->to;
	m->t_unix_ms = now_unix_ms;
	if (chg->to == BREAKER_OPEN)
		m->until_unix_ms = now_unix_ms + (b->open_until_ms - now_ms);
	snprintf(m->reason, sizeof(m->reason), "%s", chg->reason);
	return true;
}

bool fleet_msg_of_state(struct fleet_msg *m, const char *replica, uint64_t instance,
			const char *provider, const char *model, const struct breaker *b,
			double now_ms, double now_unix_ms)
{
	struct breaker_change chg = { .changed = true, .to = BREAKER_OPEN };

	memset(m, 0, sizeof(*m));
	if (!b->cfg.enabled || b->state != BREAKER_OPEN ||
	    !fleet_msg_of_change(m, replica, instance, provider, model, b, &chg, now_ms,
				 now_unix_ms))
		return false;
	m->t_unix_ms = now_unix_ms + (b->since_ms - now_ms);
	snprintf(m->reason, sizeof(m->reason), "open when it reconnected");
	return true;
}

int fleet_msg_encode(const struct fleet_msg *m, struct buf *out)
{
	int rc = buf_puts(out, "{\"replica\":");

	rc = rc ? rc : json_escape(out, m->replica);
	rc = rc ? rc : buf_printf(out, ",\"instance\":\"%016llx\"", (unsigned long long)m->instance);
	rc = rc ? rc : buf_puts(out, ",\"provider\":");
	rc = rc ? rc : json_escape(out, m->provider);
	rc = rc ? rc : buf_puts(out, ",\"model\":");
	rc = rc ? rc : json_escape(out, m->model);
	rc = rc ? rc : buf_printf(out, ",\"to\":\"%s\",\"t_unix_ms\":%.3f",
				  breaker_state_name(m->to), m->t_unix_ms);
	if (!rc && m->to == BREAKER_OPEN)
		rc = buf_printf(out, ",\"until_unix_ms\":%.3f", m->until_unix_ms);
	rc = rc ? rc : buf_puts(out, ",\"reason\":");
	rc = rc ? rc : json_escape(out, m->reason);
	rc = rc ? rc : buf_puts(out, "}");
	return rc ? -ENOMEM : 0;
}

static bool get_str(const cJSON *o, const char *key, char *dst, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && copy_name(dst, len, v->valuestring);
}

/* A string member of o, copied whole into *dst (owned). */
static bool get_dup(const cJSON *o, const char *key, char **dst)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v))
		return false;
	*dst = strdup(v->valuestring);
	return *dst != NULL;
}

static bool get_num(const cJSON *o, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

int fleet_msg_decode(const char *text, size_t len, struct fleet_msg *m)
{
	cJSON *o = cJSON_ParseWithLength(text, len);
	char instance[20];
	char to[16];
	char *end = NULL;
	bool ok;

	memset(m, 0, sizeof(*m));
	ok = cJSON_IsObject(o) && get_str(o, "replica", m->replica, sizeof(m->replica)) &&
	     m->replica[0] && get_str(o, "instance", instance, sizeof(instance)) &&
	     strlen(instance) == 16 && (m->instance = strtoull(instance, &end, 16), *end == '\0') &&
	     get_dup(o, "provider", &m->provider) && get_dup(o, "model", &m->model) &&
	     get_str(o, "to", to, sizeof(to)) &&
	     get_num(o, "t_unix_ms", &m->t_unix_ms) &&
	     get_str(o, "reason", m->reason, sizeof(m->reason));
	if (ok && strcmp(to, "open") == 0) {
		m->to = BREAKER_OPEN;
		ok = get_num(o, "until_unix_ms", &m->until_unix_ms);
	} else if (ok && strcmp(to, "closed") == 0) {
		m->to = BREAKER_CLOSED;
	} else {
		ok = false;
	}
	cJSON_Delete(o);
	if (!ok) {
		fleet_msg_free(m);
		memset(m, 0, sizeof(*m));
	}
	return ok ? 0 : -EINVAL;
}

enum fleet_verdict fleet_apply(struct breaker *b, const struct fleet_msg *m, double now_ms,
			       double now_unix_ms, struct breaker_change *chg)
{
	double t_ms = now_ms + (m->t_unix_ms - now_unix_ms);
	char reason[BREAKER_REASON_LEN];

	memset(chg, 0, sizeof(*chg));
	if (!b->cfg.enabled)
		return FLEET_IGNORED;
	/* A breaker that never changed holds no evidence: any change is newer. */
	if (t_ms < b->since_ms && b->changes > 0)
		return FLEET_STALE;
	snprintf(reason, sizeof(reason), "%.63s: %.61s", m->replica, m->reason);
	if (m->to == BREAKER_OPEN) {
		double until_ms = now_ms + (m->until_unix_ms - now_unix_ms);

		if (!(until_ms > now_ms))
			return FLEET_STALE;
		breaker_open_until(b, now_ms, t_ms, until_ms, reason, chg);
		return chg->changed ? FLEET_APPLIED : FLEET_HELD;
	}
	breaker_close_now(b, now_ms, t_ms, reason, chg);
	return chg->changed ? FLEET_APPLIED : FLEET_HELD;
}

bool fleet_local_newer(const struct breaker *b, const struct fleet_msg *stored, double now_ms,
		       double now_unix_ms)
{
	if (!b->cfg.enabled || b->state != BREAKER_OPEN)
		return false;
	if (!stored)
		return true;
	return stored->to == BREAKER_CLOSED &&
	       b->since_ms > now_ms + (stored->t_unix_ms - now_unix_ms);
}

double fleet_store_ttl_ms(const struct fleet_msg *m, double now_unix_ms, double lock_ms)
{
	double ttl = m->to == BREAKER_OPEN ? m->until_unix_ms - now_unix_ms + lock_ms
					   : FLEET_CLOSED_TTL_MS;

	return ttl >= 1 ? ceil(ttl) : 1;
}

int fleet_breaker_key(struct buf *out, const char *prefix, const char *provider,
		      const char *model)
{
	return buf_printf(out, "%sbreaker:%s/%s", prefix, provider, model ? model : "");
}

int fleet_lock_key(struct buf *out, const char *prefix, const char *provider,
		   const char *model)
{
	return buf_printf(out, "%sprobe:%s/%s", prefix, provider, model ? model : "");
}

int fleet_channel(struct buf *out, const char *prefix)
{
	return buf_printf(out, "%sbreakers", prefix);
}
