/*
 * groups: providers that fail together — a group's faults added to the end
 * of every member's timeline by mockprov's loader, and the loader's errors
 * for groups, each naming the file and the key's path.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mockprov/config.h"
#include "mockprov/fault.h"

TestSuite(fault_groups, .timeout = 10);

static char err[CFG_ERR_LEN];

/* Three providers — a and b in group "eu", c in none — and the groups given. */
#define PROVIDERS \
	"\"providers\":[" \
	"{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"," \
	"\"faults\":[{\"kind\":\"slow\",\"add_ms\":5,\"from_s\":0,\"to_s\":1}]}," \
	"{\"name\":\"b\",\"listen\":\"127.0.0.1:0\",\"group\":\"eu\"}," \
	"{\"name\":\"c\",\"listen\":\"127.0.0.1:0\"}]"

static int load(const char *json, struct mock_config *cfg)
{
	cJSON *root = cJSON_Parse(json);
	int rc;

	cr_assert_not_null(root, "test JSON does not parse: %s", json);
	err[0] = '\0';
	rc = mock_config_from_json(root, "conf.json", cfg, err);
	cJSON_Delete(root);
	return rc;
}

static void assert_load_error(const char *json, const char *want)
{
	struct mock_config cfg;

	cr_assert_eq(load(json, &cfg), -EINVAL, "accepted: %s", json);
	cr_assert(strstr(err, want), "%s\n  error \"%s\"\n  lacks \"%s\"", json, err, want);
	cr_assert_eq(cfg.nproviders, 0, "a failed load leaves the config empty");
}

Test(fault_groups, members_take_the_groups_faults_after_their_own)
{
	struct mock_config cfg;
	const struct provider_cfg *a;
	const struct provider_cfg *b;
	const struct provider_cfg *c;

	cr_assert_eq(load("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":["
			  "{\"kind\":\"down\",\"from_s\":10,\"to_s\":20},"
			  "{\"kind\":\"bad_content\",\"violation\":\"missing_key\",\"from_s\":30,"
			  "\"to_s\":40,\"probability\":0.5}]}}}", &cfg), 0, "%s", err);
	cr_assert_eq(cfg.nproviders, 3);
	a = &cfg.providers[0];
	b = &cfg.providers[1];
	c = &cfg.providers[2];
	cr_assert_str_eq(a->group, "eu");
	cr_assert_null(c->group);
	cr_assert_eq(a->nfaults, 3, "its own, then the group's two");
	cr_assert_eq(a->faults[0].kind, FAULT_SLOW);
	cr_assert_null(a->faults[0].group, "its own fault");
	cr_assert_eq(a->faults[1].kind, FAULT_DOWN);
	cr_assert_float_eq(a->faults[1].from_ms, 10000, 0);
	cr_assert_str_eq(a->faults[1].group, "eu");
	cr_assert_eq(a->faults[2].kind, FAULT_BAD_CONTENT);
	cr_assert_float_eq(a->faults[2].probability, 0.5, 0);
	cr_assert_eq(b->nfaults, 2);
	cr_assert_eq(b->faults[0].kind, FAULT_DOWN);
	cr_assert_eq(b->faults[1].kind, FAULT_BAD_CONTENT);
	cr_assert_str_eq(b->faults[1].group, "eu");
	cr_assert_eq(c->nfaults, 0, "outside the group");
	/* A down window of the group closes every member at once. */
	cr_assert(fault_down_at(a->faults, a->nfaults, 15000));
	cr_assert(fault_down_at(b->faults, b->nfaults, 15000));
	cr_assert_not(fault_down_at(c->faults, c->nfaults, 15000));
	mock_config_free(&cfg);
}

Test(fault_groups, a_group_without_faults_declared_is_a_label)
{
	struct mock_config cfg;

	cr_assert_eq(load("{" PROVIDERS "}", &cfg), 0, "%s", err);
	cr_assert_str_eq(cfg.providers[1].group, "eu");
	cr_assert_eq(cfg.providers[1].nfaults, 0);
	mock_config_free(&cfg);
	cr_assert_eq(load("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[]}}}", &cfg), 0, "%s",
		     err);
	cr_assert_eq(cfg.providers[0].nfaults, 1);
	mock_config_free(&cfg);
}

Test(fault_groups, a_group_with_no_member_is_an_error)
{
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[]},\"us\":{\"faults\":"
			  "[{\"kind\":\"hang\",\"from_s\":0,\"to_s\":1}]}}}",
			  "conf.json: groups.us: no provider is in this group: expected a group "
			  "some provider names with \"group\": \"us\"");
}

Test(fault_groups, errors_name_the_key)
{
	assert_load_error("{" PROVIDERS ",\"groups\":[]}",
			  "conf.json: groups: expected an object of groups");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":5}}",
			  "conf.json: groups.eu: expected an object, got 5");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{}}}",
			  "conf.json: groups.eu.faults: missing (required)");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[],\"fautls\":[]}}}",
			  "conf.json: groups.eu.fautls: unknown key");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":{}}}}",
			  "conf.json: groups.eu.faults: expected an array of faults");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[{\"kind\":\"hang\","
			  "\"from_s\":0,\"to_s\":1},{\"kind\":\"boom\",\"from_s\":0,\"to_s\":1}]}}}",
			  "conf.json: groups.eu.faults[1].kind: expected one of down");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[{\"kind\":"
			  "\"bad_content\",\"violation\":\"loud\",\"from_s\":0,\"to_s\":1}]}}}",
			  "conf.json: groups.eu.faults[0].violation: expected one of prose");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"eu\":{\"faults\":[]},\"eu\":{\"faults\":[]}}}",
			  "conf.json: groups.eu: given twice; expected each group once");
	assert_load_error("{" PROVIDERS ",\"groups\":{\"e u\":{\"faults\":[]}}}",
			  "conf.json: groups: expected names of groups, 1 to 64 bytes");
	assert_load_error("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":\"\"}]}",
			  "conf.json: providers[0].group: expected a non-empty string");
	assert_load_error("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\",\"group\":5}]}",
			  "conf.json: providers[0].group: expected a non-empty string, got 5");
	assert_load_error("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\","
			  "\"group\":\"a/b\"}]}",
			  "conf.json: providers[0].group: expected a group's name");
}
