/*
 * gateway config, shared_state: the local default, a Redis URL's parts,
 * the password read from the environment (and never in a message), the
 * replica's name (config and --replica), and every mistake refused naming
 * the key.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "gateway/config.h"

#define BASE \
	"\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\"}}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}"

static char err[CFG_ERR_LEN];

/* Loads {BASE, "shared_state": shared} (shared NULL: none). */
static int load(const char *shared, bool allow_remote, struct gw_config *cfg)
{
	char text[2048];
	cJSON *root;
	int rc;

	snprintf(text, sizeof(text), "{" BASE "%s%s}", shared ? ",\"shared_state\":" : "",
		 shared ? shared : "");
	root = cJSON_Parse(text);
	cr_assert_not_null(root, "%s", text);
	err[0] = '\0';
	rc = gw_config_from_json(root, "gw.json", allow_remote, cfg, err);
	cJSON_Delete(root);
	return rc;
}

Test(gwconfig_shared, local_by_default, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load(NULL, false, &c), 0, "%s", err);
	cr_assert_eq(c.shared.backend, GW_SHARED_LOCAL);
	cr_assert_str_eq(c.shared.host, "127.0.0.1");
	cr_assert_eq(c.shared.port, 6379);
	cr_assert_eq(c.shared.db, 0);
	cr_assert_str_eq(c.shared.key_prefix, "faultline:");
	cr_assert_str_eq(c.shared.replica, "gateway");
	cr_assert_null(c.shared.password);
	cr_assert_float_eq(c.shared.lock_ms, 5000, 0);
	cr_assert_float_eq(c.shared.timeout_ms, 500, 0);
	cr_assert_float_eq(c.shared.reconnect_ms, 100, 0);
	cr_assert_float_eq(c.shared.reconnect_max_ms, 5000, 0);
	gw_config_free(&c);
}

Test(gwconfig_shared, redis_with_every_key, .timeout = 10)
{
	struct gw_config c;

	setenv("FL_TEST_REDIS_PW", "s3cret pass", 1);
	cr_assert_eq(load("{\"backend\":\"redis\",\"url\":\"redis://[::1]:16379/3\","
			  "\"key_prefix\":\"fleet-a:\",\"password_env\":\"FL_TEST_REDIS_PW\","
			  "\"replica\":\"r-1.a_b\",\"lock_ms\":800,\"timeout_ms\":50,"
			  "\"reconnect_ms\":10,\"reconnect_max_ms\":10}", false, &c), 0, "%s", err);
	cr_assert_eq(c.shared.backend, GW_SHARED_REDIS);
	cr_assert_str_eq(c.shared.host, "::1");
	cr_assert_eq(c.shared.port, 16379);
	cr_assert_eq(c.shared.db, 3);
	cr_assert_str_eq(c.shared.key_prefix, "fleet-a:");
	cr_assert_str_eq(c.shared.password, "s3cret pass");
	cr_assert_str_eq(c.shared.replica, "r-1.a_b");
	cr_assert_float_eq(c.shared.lock_ms, 800, 0);
	cr_assert_float_eq(c.shared.timeout_ms, 50, 0);
	cr_assert_eq(gw_config_set_replica(&c, "r2", err), 0, "%s", err);
	cr_assert_str_eq(c.shared.replica, "r2");
	cr_assert_eq(gw_config_set_replica(&c, "r 2", err), -EINVAL);
	cr_assert(strstr(err, "--replica: expected 1 to 63 letters"), "%s", err);
	cr_assert_str_eq(c.shared.replica, "r2", "a refused name replaced the good one");
	gw_config_free(&c);

	cr_assert_eq(load("{\"backend\":\"redis\",\"url\":\"redis://localhost\"}", false, &c), 0,
		     "%s", err);
	cr_assert_str_eq(c.shared.host, "127.0.0.1", "localhost is dialled as 127.0.0.1");
	cr_assert_eq(c.shared.port, 6379);
	gw_config_free(&c);
	cr_assert_eq(load("{\"backend\":\"redis\",\"url\":\"redis://10.1.2.3:6380/1\"}", true, &c),
		     0, "%s", err);
	cr_assert_str_eq(c.shared.host, "10.1.2.3");
	gw_config_free(&c);
	unsetenv("FL_TEST_REDIS_PW");
}

struct bad_case {
	const char *shared;
	const char *says;
};

static const struct bad_case bad_cases[] = {
	{ "{\"backend\":\"memcached\"}", "shared_state.backend: expected" },
	{ "{\"colour\":1}", "shared_state.colour: unknown key" },
	{ "[]", "shared_state" },
	{ "{\"url\":\"http://127.0.0.1:6379\"}", "shared_state.url: expected a URL such as redis://" },
	{ "{\"url\":\"redis://10.0.0.1:6379\"}", "shared_state.url: expected a loopback host" },
	{ "{\"url\":\"redis://redis.internal:6379\"}", "shared_state.url: expected a numeric host" },
	{ "{\"url\":\"redis://:hunter2@127.0.0.1:6379\"}",
	  "shared_state.url: expected a URL without a user or password" },
	{ "{\"url\":\"redis://127.0.0.1:6379/zero\"}", "shared_state.url: expected a database number" },
	{ "{\"url\":\"redis://127.0.0.1:6379/0?x=1\"}", "shared_state.url: expected redis://HOST" },
	{ "{\"url\":\"redis://127.0.0.1:0\"}", "shared_state.url:" },
	{ "{\"replica\":\"\"}", "shared_state.replica: expected a non-empty string" },
	{ "{\"replica\":\"a/b\"}", "shared_state.replica: expected 1 to 63" },
	{ "{\"key_prefix\":\"a b\"}", "shared_state.key_prefix: expected at most 128" },
	{ "{\"lock_ms\":5}", "shared_state.lock_ms:" },
	{ "{\"timeout_ms\":0}", "shared_state.timeout_ms:" },
	{ "{\"reconnect_ms\":500,\"reconnect_max_ms\":100}",
	  "shared_state.reconnect_max_ms: expected at least reconnect_ms" },
	{ "{\"backend\":\"redis\",\"password_env\":\"1BAD\"}",
	  "shared_state.password_env: expected an environment variable's name" },
	{ "{\"backend\":\"redis\",\"password_env\":\"FL_TEST_UNSET_PW\"}",
	  "shared_state.password_env: expected the name of a set environment variable, but "
	  "FL_TEST_UNSET_PW is not set" },
};

Test(gwconfig_shared, mistakes_are_refused_naming_the_key, .timeout = 10)
{
	size_t i;

	unsetenv("FL_TEST_UNSET_PW");
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct gw_config c;

		cr_assert_eq(load(bad_cases[i].shared, false, &c), -EINVAL, "accepted: %s",
			     bad_cases[i].shared);
		cr_assert(strncmp(err, "gw.json: ", 9) == 0, "names the file: %s", err);
		cr_assert(strstr(err, bad_cases[i].says), "expected \"%s\" in \"%s\"",
			  bad_cases[i].says, err);
		cr_assert_null(c.shared.replica, "kept after a refusal");
	}
}

Test(gwconfig_shared, the_password_is_never_in_a_message, .timeout = 10)
{
	struct gw_config c;

	setenv("FL_TEST_REDIS_PW", "pw-with\x01control", 1);
	cr_assert_eq(load("{\"backend\":\"redis\",\"password_env\":\"FL_TEST_REDIS_PW\"}", false,
			  &c), -EINVAL);
	cr_assert(strstr(err, "without control characters in FL_TEST_REDIS_PW"), "%s", err);
	cr_assert_null(strstr(err, "pw-with"), "the password is in the message: %s", err);
	unsetenv("FL_TEST_REDIS_PW");

	/* A URL holding a password, refused for any reason, is not echoed. */
	static const char *const urls[] = {
		"{\"url\":\"rediss://:hunter2@127.0.0.1:6379\"}",
		"{\"url\":\"redis://:hunter 2@127.0.0.1:6379\"}",
		"{\"url\":\"redis://u:hunter2@127.0.0.1:6379\"}",
	};
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		cr_assert_eq(load(urls[i], false, &c), -EINVAL, "accepted %s", urls[i]);
		cr_assert(strstr(err, "shared_state.url"), "%s", err);
		cr_assert_null(strstr(err, "hunter"), "the password is in the message: %s", err);
	}
}
