/*
 * fault: the fault timeline and per-request decisions.
 */
#include "mockprov/fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "mockprov/contract.h"

static const char *const kind_names[FAULT_NKINDS + 1] = {
	[FAULT_DOWN] = "down",
	[FAULT_HANG] = "hang",
	[FAULT_STATUS] = "status",
	[FAULT_SLOW] = "slow",
	[FAULT_SLOW_TOKENS] = "slow_tokens",
	[FAULT_STALL] = "stall",
	[FAULT_TRUNCATE] = "truncate",
	[FAULT_ERROR_EVENT] = "error_event",
	[FAULT_RESET] = "reset",
	[FAULT_MALFORMED] = "malformed",
	[FAULT_RATE_LIMIT] = "rate_limit",
	[FAULT_BAD_CONTENT] = "bad_content",
	[FAULT_NKINDS] = NULL,
};

const char *fault_kind_name(enum fault_kind kind)
{
	return kind < FAULT_NKINDS ? kind_names[kind] : "?";
}

bool fault_active(const struct fault *f, double t_ms)
{
	return t_ms >= f->from_ms && t_ms < f->to_ms;
}

bool fault_down_at(const struct fault *faults, size_t n, double t_ms)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (faults[i].kind == FAULT_DOWN && fault_active(&faults[i], t_ms))
			return true;
	}
	return false;
}

double fault_next_edge(const struct fault *faults, size_t n, double t_ms,
		       enum fault_kind kind)
{
	double next = INFINITY;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct fault *f = &faults[i];

		if (kind != FAULT_NKINDS && f->kind != kind)
			continue;
		if (f->from_ms > t_ms && f->from_ms < next)
			next = f->from_ms;
		if (f->to_ms > t_ms && f->to_ms < next)
			next = f->to_ms;
	}
	return next;
}

size_t fault_prune_expired(struct fault *faults, size_t n, double now_ms)
{
	size_t kept = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (faults[i].injected && faults[i].to_ms <= now_ms)
			continue;
		if (kept != i)
			faults[kept] = faults[i];
		kept++;
	}
	return kept;
}

static void applied_add(struct fault_decision *d, enum fault_kind kind)
{
	size_t len = strlen(d->applied);

	snprintf(d->applied + len, sizeof(d->applied) - len, "%s%s",
		 len ? "+" : "", fault_kind_name(kind));
}

/*
 * The budget of a rate_limit window at t_ms: full when the window opens, then
 * refilled from the last spend. The state changes only when a request spends
 * it, so refused requests add no rounding error: 12 s after the last spend at
 * 5 rpm, exactly one request is available again.
 */
static void rate_peek(const struct fault *f, double t_ms, double *requests, double *tokens)
{
	const struct rate_state *s = &f->rate;
	double dt = fmax(0, t_ms - s->last_ms);

	if (!s->started) {
		*requests = f->rpm;
		*tokens = f->tpm;
		return;
	}
	*requests = fmin(f->rpm, s->requests + dt * f->rpm / 60000.0);
	*tokens = fmin(f->tpm, s->tokens + dt * f->tpm / 60000.0);
}

/* Starts the window's budget full on its first request, then peeks. */
static void rate_available(struct fault *f, double t_ms, double *requests, double *tokens)
{
	struct rate_state *s = &f->rate;

	if (!s->started) {
		s->started = true;
		s->last_ms = t_ms;
		s->requests = f->rpm;
		s->tokens = f->tpm;
	}
	rate_peek(f, t_ms, requests, tokens);
}

/*
 * Spends one request and token_cost tokens of a rate_limit window. Returns
 * true when the budget allowed it; else fills in the retry time.
 */
static bool rate_take(struct fault *f, double t_ms, double token_cost,
		      struct fault_decision *d)
{
	struct rate_state *s = &f->rate;
	double requests;
	double tokens;
	bool req_ok;
	bool tok_ok;
	double wait_s = 0;

	rate_available(f, t_ms, &requests, &tokens);
	req_ok = f->rpm <= 0 || requests >= 1;
	tok_ok = f->tpm <= 0 || tokens >= token_cost;
	if (req_ok && tok_ok) {
		if (f->rpm > 0)
			requests -= 1;
		if (f->tpm > 0)
			tokens -= token_cost;
		s->requests = requests;
		s->tokens = tokens;
		s->last_ms = fmax(s->last_ms, t_ms);
	} else {
		if (!req_ok)
			wait_s = (1 - requests) * 60.0 / f->rpm;
		if (!tok_ok) {
			double w = token_cost > f->tpm ? 60.0
						       : (token_cost - tokens) * 60.0 / f->tpm;

			wait_s = fmax(wait_s, w);
		}
		d->retry_after_s = fmax(1, ceil(wait_s));
	}
	d->rate = f;
	d->rate_rpm = f->rpm;
	d->rate_tpm = f->tpm;
	d->rate_requests_left = f->rpm > 0 ? floor(requests) : -1;
	d->rate_tokens_left = f->tpm > 0 ? floor(tokens) : -1;
	d->rate_reset_requests_s = f->rpm > 0 ? (f->rpm - requests) * 60.0 / f->rpm : 0;
	d->rate_reset_tokens_s = f->tpm > 0 ? (f->tpm - tokens) * 60.0 / f->tpm : 0;
	return req_ok && tok_ok;
}

void fault_decide(struct fault *faults, size_t n, double t_ms, double token_cost,
		  struct rng *rng, struct fault_decision *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->token_ms = -1;
	for (i = 0; i < n && !out->decider; i++) {
		struct fault *f = &faults[i];

		if (!fault_active(f, t_ms))
			continue;
		/* Draw only for windows that are open, so a seed replays. */
		if (f->probability < 1 && rng_uniform(rng) >= f->probability)
			continue;
		switch (f->kind) {
		case FAULT_SLOW:
			out->add_ms += f->add_ms;
			applied_add(out, f->kind);
			break;
		case FAULT_SLOW_TOKENS:
			out->token_ms = fmax(out->token_ms, f->token_ms);
			applied_add(out, f->kind);
			break;
		case FAULT_RATE_LIMIT:
			if (token_cost < 0)
				break;	/* not a request the budget counts */
			if (!rate_take(f, t_ms, token_cost, out)) {
				out->decider = f;
				applied_add(out, f->kind);
			}
			break;
		default:
			out->decider = f;
			applied_add(out, f->kind);
			break;
		}
	}
}

/* ---- parsing ---- */

#define FK(name, type, field, req, def, min, max) \
	{ name, type, offsetof(struct fault, field), req, def, min, max, NULL, NULL }
#define FKE(name, field, def, choices) \
	{ name, CFG_ENUM, offsetof(struct fault, field), false, 0, 0, 0, def, choices }

/* Keys every fault has. from_s/to_s are read into from_ms/to_ms below. */
static const struct cfg_key common_keys[] = {
	FK("kind", CFG_SKIP, kind, true, 0, 0, 0),	/* read first, by parse_kind */
	FK("from_s", CFG_SKIP, from_ms, true, 0, 0, 0),
	FK("to_s", CFG_SKIP, to_ms, true, 0, 0, 0),
	FK("probability", CFG_SKIP, probability, false, 0, 0, 0),
};

struct kind_keys {
	const struct cfg_key *keys;
	size_t n;
};

static const struct cfg_key status_keys[] = {
	FK("status", CFG_INT, status, false, 503, 400, 599),
	FK("retry_after_s", CFG_NUM, retry_after_s, false, -1, 0, 86400),
};
static const struct cfg_key slow_keys[] = {
	FK("add_ms", CFG_NUM, add_ms, true, 0, 0, 3600000),
};
static const struct cfg_key slow_tokens_keys[] = {
	FK("token_ms", CFG_NUM, token_ms, true, 0, 0, 600000),
};
static const struct cfg_key after_tokens_keys[] = {
	FK("after_tokens", CFG_INT, after_tokens, false, 0, 0, 1000000),
};
static const struct cfg_key reset_keys[] = {
	FK("after_bytes", CFG_INT, after_bytes, false, 0, 0, 1e12),
};
static const struct cfg_key rate_keys[] = {
	FK("rpm", CFG_NUM, rpm, false, 0, 0, 1e9),
	FK("tpm", CFG_NUM, tpm, false, 0, 0, 1e12),
};
static const struct cfg_key bad_content_keys[] = {
	FKE("violation", violation, "prose", contract_violation_names),
};

#define KK(a) { a, sizeof(a) / sizeof(a[0]) }
static const struct kind_keys kind_keys[FAULT_NKINDS] = {
	[FAULT_STATUS] = KK(status_keys),
	[FAULT_SLOW] = KK(slow_keys),
	[FAULT_SLOW_TOKENS] = KK(slow_tokens_keys),
	[FAULT_STALL] = KK(after_tokens_keys),
	[FAULT_TRUNCATE] = KK(after_tokens_keys),
	[FAULT_ERROR_EVENT] = KK(after_tokens_keys),
	[FAULT_RESET] = KK(reset_keys),
	[FAULT_RATE_LIMIT] = KK(rate_keys),
	[FAULT_BAD_CONTENT] = KK(bad_content_keys),
};

static int parse_kind(const cJSON *obj, const char *file, const char *path,
		      enum fault_kind *out, char *err)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	char list[256] = "";
	char got[96];
	size_t used = 0;
	int i;

	for (i = 0; kind_names[i]; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i ? ", " : "", kind_names[i]);
	if (!k)
		return cfg_error(err, file, path, "kind", "missing (required): one of %s", list);
	for (i = 0; kind_names[i]; i++) {
		if (cJSON_IsString(k) && strcmp(k->valuestring, kind_names[i]) == 0) {
			*out = (enum fault_kind)i;
			return 0;
		}
	}
	cfg_describe(k, got, sizeof(got));
	return cfg_error(err, file, path, "kind", "expected one of %s, got %s", list, got);
}

/*
 * Each kind takes its own keys: name the kind and its keys when another
 * kind's key (or a misspelt one) turns up.
 */
static int check_kind_keys(const cJSON *obj, enum fault_kind kind,
			   const struct cfg_key *keys, size_t n, const char *file,
			   const char *path, char *err)
{
	const cJSON *item;
	char list[256];
	size_t used = 0;
	size_t i;
	int k;

	for (i = 0; i < n; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i ? ", " : "", keys[i].name);
	cJSON_ArrayForEach(item, obj) {
		for (i = 0; i < n && strcmp(keys[i].name, item->string) != 0; i++)
			;
		if (i < n)
			continue;
		for (k = 0; k < FAULT_NKINDS; k++) {
			for (i = 0; i < kind_keys[k].n; i++) {
				if (strcmp(kind_keys[k].keys[i].name, item->string) == 0)
					return cfg_error(err, file, path, item->string,
							 "not a key of a \"%s\" fault (it belongs to "
							 "\"%s\"); a \"%s\" fault takes: %s",
							 kind_names[kind], kind_names[k],
							 kind_names[kind], list);
			}
		}
		return cfg_error(err, file, path, item->string,
				 "unknown key; a \"%s\" fault takes: %s", kind_names[kind], list);
	}
	return 0;
}

static int read_probability(const cJSON *obj, const char *file, const char *path,
			    double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "probability");
	char got[96];

	*out = 1;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, "probability",
				 "expected a number above 0 and at most 1, got %s", got);
	}
	*out = v->valuedouble;
	return 0;
}

static int read_seconds(const cJSON *obj, const char *key, const char *file,
			const char *path, double *out_ms, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char got[96];

	if (!v)
		return cfg_error(err, file, path, key, "missing (required)");
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < -1e7 ||
	    v->valuedouble > 1e7) {
		cfg_describe(v, got, sizeof(got));
		return cfg_error(err, file, path, key,
				 "expected seconds after t0, a number from -10000000 to 10000000, "
				 "got %s", got);
	}
	*out_ms = v->valuedouble * 1000.0;
	return 0;
}

int fault_parse(const cJSON *obj, const char *file, const char *path,
		struct fault *f, char *err)
{
	struct cfg_key keys[8];
	const struct kind_keys *kk;
	size_t n = 0;
	size_t i;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!cJSON_IsObject(obj)) {
		char got[96];

		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, path, NULL, "expected a fault object, got %s", got);
	}
	/* The kind decides which other keys are allowed: read it first. */
	rc = parse_kind(obj, file, path, &f->kind, err);
	if (rc)
		return rc;
	for (i = 0; i < sizeof(common_keys) / sizeof(common_keys[0]); i++)
		keys[n++] = common_keys[i];
	kk = &kind_keys[f->kind];
	for (i = 0; i < kk->n; i++)
		keys[n++] = kk->keys[i];
	rc = check_kind_keys(obj, f->kind, keys, n, file, path, err);
	if (!rc)
		rc = cfg_apply(keys, n, obj, f, file, path, err);
	if (!rc)
		rc = read_probability(obj, file, path, &f->probability, err);
	if (rc)
		return rc;
	rc = read_seconds(obj, "from_s", file, path, &f->from_ms, err);
	if (!rc)
		rc = read_seconds(obj, "to_s", file, path, &f->to_ms, err);
	if (rc)
		return rc;
	if (f->to_ms <= f->from_ms)
		return cfg_error(err, file, path, "to_s",
				 "expected a time after from_s (%g), got %g",
				 f->from_ms / 1000.0, f->to_ms / 1000.0);
	if (f->kind == FAULT_DOWN && f->probability < 1)
		return cfg_error(err, file, path, "probability",
				 "not supported for kind \"down\" (a listener is open or closed); "
				 "use several windows instead");
	if (f->kind == FAULT_RATE_LIMIT && f->rpm <= 0 && f->tpm <= 0)
		return cfg_error(err, file, path, NULL,
				 "a rate_limit fault needs rpm or tpm above 0");
	return 0;
}

void fault_to_json(const struct fault *f, double now_ms, cJSON *obj)
{
	cJSON_AddStringToObject(obj, "kind", fault_kind_name(f->kind));
	cJSON_AddNumberToObject(obj, "from_s", f->from_ms / 1000.0);
	cJSON_AddNumberToObject(obj, "to_s", f->to_ms / 1000.0);
	cJSON_AddNumberToObject(obj, "probability", f->probability);
	cJSON_AddBoolToObject(obj, "injected", f->injected);
	cJSON_AddBoolToObject(obj, "active", fault_active(f, now_ms));
	if (f->group)
		cJSON_AddStringToObject(obj, "group", f->group);
	switch (f->kind) {
	case FAULT_STATUS:
		cJSON_AddNumberToObject(obj, "status", (double)f->status);
		if (f->retry_after_s >= 0)
			cJSON_AddNumberToObject(obj, "retry_after_s", f->retry_after_s);
		break;
	case FAULT_SLOW:
		cJSON_AddNumberToObject(obj, "add_ms", f->add_ms);
		break;
	case FAULT_SLOW_TOKENS:
		cJSON_AddNumberToObject(obj, "token_ms", f->token_ms);
		break;
	case FAULT_STALL:
	case FAULT_TRUNCATE:
	case FAULT_ERROR_EVENT:
		cJSON_AddNumberToObject(obj, "after_tokens", (double)f->after_tokens);
		break;
	case FAULT_RESET:
		cJSON_AddNumberToObject(obj, "after_bytes", (double)f->after_bytes);
		break;
	case FAULT_BAD_CONTENT:
		cJSON_AddStringToObject(obj, "violation", contract_violation_names[f->violation]);
		break;
	case FAULT_RATE_LIMIT:
		cJSON_AddNumberToObject(obj, "rpm", f->rpm);
		cJSON_AddNumberToObject(obj, "tpm", f->tpm);
		if (fault_active(f, now_ms)) {
			double requests;
			double tokens;

			rate_peek(f, now_ms, &requests, &tokens);
			cJSON_AddNumberToObject(obj, "requests_left", floor(requests));
			cJSON_AddNumberToObject(obj, "tokens_left", floor(tokens));
		}
		break;
	default:
		break;
	}
}

size_t fault_config_sections(const char *path, struct cfg_section *out, size_t max)
{
	size_t n = 0;
	size_t k;

	if (n < max)
		out[n] = (struct cfg_section){ path, common_keys,
					   sizeof(common_keys) / sizeof(common_keys[0]) };
	n++;
	for (k = 0; k < FAULT_NKINDS; k++) {
		if (!kind_keys[k].keys)
			continue;
		if (n < max)
			out[n] = (struct cfg_section){ path, kind_keys[k].keys, kind_keys[k].n };
		n++;
	}
	return n;
}
