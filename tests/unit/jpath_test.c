/*
 * jpath: getting and setting a value of a scenario by its dotted path —
 * object keys, array indexes, array elements by name — and the errors
 * that name the component that failed.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "runner/jpath.h"

TestSuite(jpath, .timeout = 10);

static const char doc[] =
	"{\"name\":\"s\",\"providers\":[{\"name\":\"primary\",\"faults\":[{\"kind\":\"hang\","
	"\"from_s\":1,\"add_ms\":200},{\"kind\":\"slow\",\"from_s\":3}]},{\"name\":\"secondary\"}],"
	"\"load\":{\"timeout_ms\":1500},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\"},{\"name\":\"gateway\",\"kind\":\"gateway\","
	"\"config\":{\"providers\":{\"primary\":{\"timeout_ms\":300}},\"breaker\":{\"cooldown_ms\":5}}}]}";

static char err[512];

static cJSON *parse(void)
{
	cJSON *root = cJSON_Parse(doc);

	cr_assert_not_null(root);
	err[0] = '\0';
	return root;
}

Test(jpath, gets_by_key_index_and_name)
{
	cJSON *root = parse();
	const cJSON *v;

	cr_assert_eq(jpath_get(root, "setups.gateway.config.providers.primary.timeout_ms", &v, err,
			       sizeof(err)), 0, "%s", err);
	cr_expect(cJSON_IsNumber(v) && v->valuedouble == 300);
	cr_assert_eq(jpath_get(root, "providers.primary.faults.0.add_ms", &v, err, sizeof(err)), 0);
	cr_expect_eq(v->valuedouble, 200);
	cr_assert_eq(jpath_get(root, "providers.0.faults.1.kind", &v, err, sizeof(err)), 0);
	cr_expect_str_eq(v->valuestring, "slow");
	cr_assert_eq(jpath_get(root, "setups.1.kind", &v, err, sizeof(err)), 0);
	cr_expect_str_eq(v->valuestring, "gateway");
	cr_assert_eq(jpath_get(root, "load", &v, err, sizeof(err)), 0);
	cr_expect(cJSON_IsObject(v), "get returns the node, whatever it is");
	cJSON_Delete(root);
}

Test(jpath, errors_name_the_component)
{
	cJSON *root = parse();
	const cJSON *v;

	cr_expect_eq(jpath_get(root, "setups.gatewy.config", &v, err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "setups.gatewy: no setup named \"gatewy\" (setups: direct, gateway)");
	cr_expect_eq(jpath_get(root, "setups.gateway.config.providers.primary.timeout_mss", &v, err,
			       sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "setups.gateway.config.providers.primary.timeout_mss: no such key");
	cr_expect_eq(jpath_get(root, "providers.primary.faults.2.from_s", &v, err, sizeof(err)),
		     -ENOENT);
	cr_expect_str_eq(err, "providers.primary.faults.2: no element 2 (faults has 2)");
	cr_expect_eq(jpath_get(root, "load.timeout_ms.x", &v, err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "load.timeout_ms.x: load.timeout_ms holds a number, not an object or "
			 "an array");
	cr_expect_eq(jpath_get(root, "load..rate", &v, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "empty"), "%s", err);
	cr_expect_eq(jpath_get(root, "", &v, err, sizeof(err)), -EINVAL);
	cr_expect_null(v);
	cJSON_Delete(root);
}

Test(jpath, settable_allows_a_new_last_key_of_an_object)
{
	cJSON *root = parse();
	const cJSON *cur = root;

	cr_expect_eq(jpath_settable(root, "load.rate", &cur, err, sizeof(err)), 0, "%s", err);
	cr_expect_null(cur);
	cr_expect_eq(jpath_settable(root, "setups.gateway.config.breaker.consecutive_failures", &cur,
				    err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(jpath_settable(root, "load.timeout_ms", &cur, err, sizeof(err)), 0);
	cr_expect(cJSON_IsNumber(cur));
	/* Only the last component may be new, and only in an object. */
	cr_expect_eq(jpath_settable(root, "setups.gateway.config.hedge.max", &cur, err, sizeof(err)),
		     -ENOENT);
	cr_expect_str_eq(err, "setups.gateway.config.hedge: no such key");
	cr_expect_eq(jpath_settable(root, "providers.primary.faults.5", &cur, err, sizeof(err)),
		     -ENOENT);
	cJSON_Delete(root);
}

Test(jpath, set_replaces_and_adds)
{
	cJSON *root = parse();
	const cJSON *v;
	char *text;

	cr_assert_eq(jpath_set(root, "setups.gateway.config.providers.primary.timeout_ms",
			       cJSON_CreateNumber(800), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jpath_set(root, "load.rate", cJSON_CreateNumber(7), err, sizeof(err)), 0);
	cr_assert_eq(jpath_set(root, "providers.primary.faults.1", cJSON_CreateString("x"), err,
			       sizeof(err)), 0);
	cr_assert_eq(jpath_set(root, "setups.direct.kind", cJSON_CreateTrue(), err, sizeof(err)), 0);
	cr_assert_eq(jpath_get(root, "setups.gateway.config.providers.primary.timeout_ms", &v, err,
			       sizeof(err)), 0);
	cr_expect_eq(v->valuedouble, 800);
	text = cJSON_PrintUnformatted(root);
	cr_expect(strstr(text, "\"load\":{\"timeout_ms\":1500,\"rate\":7}"), "%s", text);
	cr_expect(strstr(text, "\"from_s\":1,\"add_ms\":200},\"x\"]"), "%s", text);
	cr_expect(strstr(text, "{\"name\":\"direct\",\"kind\":true}"), "%s", text);
	cr_expect(strstr(text, "\"timeout_ms\":800}"), "integers stay integers: %s", text);
	free(text);
	/* A failed set frees the value it was given (ASan would say). */
	cr_expect_eq(jpath_set(root, "setups.nope.kind", cJSON_CreateNumber(1), err, sizeof(err)),
		     -ENOENT);
	cJSON_Delete(root);
}
