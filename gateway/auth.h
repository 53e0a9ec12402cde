/*
 * auth: the gateway's client keys. With auth.keys_env configured, a
 * request must carry `Authorization: Bearer KEY` with one of the keys;
 * the comparison takes a time that depends on the presented key's length
 * and the number of keys, never on the configured keys' bytes.
 */
#ifndef FAULTLINE_GATEWAY_AUTH_H
#define FAULTLINE_GATEWAY_AUTH_H

#include "gateway/config.h"

/* What a request's credentials come to. */
enum auth_verdict {
	AUTH_OK,
	AUTH_MISSING,		/* no Authorization header, or not `Bearer` with a key */
	AUTH_INVALID,		/* a bearer key that is none of the configured ones */
	AUTH_NVERDICTS,
};

/*
 * Judges a request's Authorization header (NULL when absent) against a's
 * keys: AUTH_OK when a has none, or when the header is `Bearer KEY` (the
 * scheme in any case, then spaces) with KEY one of them.
 */
enum auth_verdict auth_check(const struct gw_auth *a, const char *authorization);

/* The label of a refusal: "missing" or "invalid" ("ok" for AUTH_OK). */
const char *auth_verdict_name(enum auth_verdict v);

#endif
