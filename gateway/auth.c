/*
 * auth: reading a bearer key and comparing it with the client keys.
 */
#include "gateway/auth.h"

#include <string.h>
#include <strings.h>

/*
 * Whether the presented key p (plen bytes) is k (klen > 0 bytes), reading
 * every byte of p and nothing that depends on k's bytes to decide how
 * long to go on (volatile: the compiler may not cut the loop short).
 */
static bool same_key(const char *p, size_t plen, const char *k, size_t klen)
{
	const volatile unsigned char *vp = (const volatile unsigned char *)p;
	const volatile unsigned char *vk = (const volatile unsigned char *)k;
	unsigned diff = plen != klen;
	size_t i;

	for (i = 0; i < plen; i++)
		diff |= (unsigned)(vp[i] ^ vk[i % klen]);
	return diff == 0;
}

enum auth_verdict auth_check(const struct gw_auth *a, const char *authorization)
{
	const char *key;
	size_t len;
	size_t i;
	bool ok = false;

	if (!a->nkeys)
		return AUTH_OK;
	if (!authorization)
		return AUTH_MISSING;
	while (*authorization == ' ' || *authorization == '\t')
		authorization++;
	if (strncasecmp(authorization, "Bearer", 6) != 0 ||
	    (authorization[6] != ' ' && authorization[6] != '\t'))
		return AUTH_MISSING;
	key = authorization + 6;
	while (*key == ' ' || *key == '\t')
		key++;
	len = strlen(key);
	while (len > 0 && (key[len - 1] == ' ' || key[len - 1] == '\t'))
		len--;
	if (!len)
		return AUTH_MISSING;
	/* Longer than any key can be: saying so tells only the public limit. */
	if (len > GW_CLIENT_KEY_MAX)
		return AUTH_INVALID;
	for (i = 0; i < a->nkeys; i++)
		ok |= same_key(key, len, a->keys[i], a->lens[i]);
	return ok ? AUTH_OK : AUTH_INVALID;
}

const char *auth_verdict_name(enum auth_verdict v)
{
	switch (v) {
	case AUTH_OK:
		return "ok";
	case AUTH_MISSING:
		return "missing";
	case AUTH_INVALID:
		return "invalid";
	case AUTH_NVERDICTS:
		break;
	}
	return "unknown";
}
