/*
 * gateway auth: reading `Authorization: Bearer KEY` and matching KEY
 * against the client keys — every key accepted, the scheme in any case,
 * anything else (no header, another scheme, no key, a key that differs by
 * a byte, by a prefix or by a repetition) refused as missing or invalid;
 * no client keys, no check.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/auth.h"

#define K1 "ck-first-0123456789abcdef"
#define K2 "ck-second-0123456789abcdef"
#define K3 "ck-second-0123456789abcdefX"	/* K2 and one more byte */

static char k1[] = K1;
static char k2[] = K2;
static char k3[] = K3;
static char *keys[] = { k1, k2, k3 };
static size_t lens[] = { sizeof(K1) - 1, sizeof(K2) - 1, sizeof(K3) - 1 };
static const struct gw_auth three = { keys, lens, 3 };

/* A header and what it comes to. */
struct auth_case {
	const char *header;		/* NULL: no Authorization header */
	enum auth_verdict want;
};

static const struct auth_case cases[] = {
	{ "Bearer " K1, AUTH_OK },
	{ "Bearer " K2, AUTH_OK },
	{ "Bearer " K3, AUTH_OK },
	{ "bearer " K1, AUTH_OK },
	{ "BEARER \t " K2 " \t", AUTH_OK },
	{ "  Bearer\t" K1, AUTH_OK },
	{ NULL, AUTH_MISSING },
	{ "", AUTH_MISSING },
	{ "Bearer", AUTH_MISSING },
	{ "Bearer ", AUTH_MISSING },
	{ "Bearer  \t ", AUTH_MISSING },
	{ "Bearer" K1, AUTH_MISSING },
	{ "Basic Zm9vOmJhcg==", AUTH_MISSING },
	{ K1, AUTH_MISSING },
	{ "Bearer " K1 "x", AUTH_INVALID },
	{ "Bearer ck-first-0123456789abcdeF", AUTH_INVALID },
	{ "Bearer Ck-first-0123456789abcdef", AUTH_INVALID },
	{ "Bearer ck-first-0123456789abcde", AUTH_INVALID },
	{ "Bearer ck-second-0123456789abcdefXY", AUTH_INVALID },
	{ "Bearer " K1 K1, AUTH_INVALID },
	{ "Bearer " K1 " " K2, AUTH_INVALID },
	{ "Bearer x", AUTH_INVALID },
};

Test(gwauth, bearer_keys_are_matched_exactly, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum auth_verdict v = auth_check(&three, cases[i].header);

		cr_expect_eq(v, cases[i].want, "\"%s\": %s, expected %s",
			     cases[i].header ? cases[i].header : "(no header)", auth_verdict_name(v),
			     auth_verdict_name(cases[i].want));
	}
}

/* A key longer than any key may be is invalid at once (the limit is public). */
Test(gwauth, overlong_key_is_invalid, .timeout = 10)
{
	static char header[GW_CLIENT_KEY_MAX + 64];
	size_t n = strlen("Bearer ");

	memcpy(header, "Bearer ", n);
	while (n < sizeof(header) - 1)
		header[n++] = 'k';
	header[n] = '\0';
	cr_assert_eq(auth_check(&three, header), AUTH_INVALID);
}

Test(gwauth, no_keys_no_check, .timeout = 10)
{
	const struct gw_auth none = { 0 };

	cr_assert_eq(auth_check(&none, NULL), AUTH_OK);
	cr_assert_eq(auth_check(&none, "Basic Zm9vOmJhcg=="), AUTH_OK);
	cr_assert_eq(auth_check(&none, "Bearer anything"), AUTH_OK);
}

Test(gwauth, verdict_names, .timeout = 10)
{
	cr_assert_str_eq(auth_verdict_name(AUTH_OK), "ok");
	cr_assert_str_eq(auth_verdict_name(AUTH_MISSING), "missing");
	cr_assert_str_eq(auth_verdict_name(AUTH_INVALID), "invalid");
}
