/*
 * cfg: a table of keys fills a struct from a JSON object — defaults, bounds,
 * types, unknown and missing keys — and its errors name the file, the
 * path.key and what was expected.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/cfg.h"

struct prov {
	int64_t output_tokens;
	double ttft_ms;
	bool stream;
	char *name;
	char *model;
	int mode;
};

static const char *const modes[] = { "fast", "slow", "off", NULL };

static const struct cfg_key prov_keys[] = {
	{ "name", CFG_STR, offsetof(struct prov, name), true, 0, 0, 0, NULL, NULL },
	{ "model", CFG_STR, offsetof(struct prov, model), false, 0, 0, 0, "mock-small", NULL },
	{ "output_tokens", CFG_INT, offsetof(struct prov, output_tokens), false, 16, 1, 4096,
	  NULL, NULL },
	{ "ttft_ms", CFG_NUM, offsetof(struct prov, ttft_ms), false, 200, 0, 600000, NULL, NULL },
	{ "stream", CFG_BOOL, offsetof(struct prov, stream), false, 1, 0, 0, NULL, NULL },
	{ "mode", CFG_ENUM, offsetof(struct prov, mode), false, 0, 0, 0, "slow", modes },
	{ "faults", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};
#define NKEYS (sizeof(prov_keys) / sizeof(prov_keys[0]))

static char err[CFG_ERR_LEN];

/* Applies the table to json; returns cfg_apply's result. */
static int apply(const char *json, struct prov *p)
{
	cJSON *obj = cJSON_Parse(json);
	int rc;

	cr_assert_not_null(obj, "test JSON does not parse: %s", json);
	memset(p, 0, sizeof(*p));
	err[0] = '\0';
	rc = cfg_apply(prov_keys, NKEYS, obj, p, "conf.json", "providers[0]", err);
	cJSON_Delete(obj);
	return rc;
}

/* Asserts the call failed and err contains want. */
static void assert_refused(int rc, struct prov *p, const char *want)
{
	cr_assert_eq(rc, -EINVAL, "accepted; err \"%s\"", err);
	cr_assert(strstr(err, want), "error \"%s\" lacks \"%s\"", err, want);
	cfg_free(prov_keys, NKEYS, p);
}

Test(cfg, defaults_for_absent_keys, .timeout = 10)
{
	struct prov p;

	cr_assert_eq(apply("{\"name\":\"a\"}", &p), 0, "%s", err);
	cr_assert_str_eq(p.name, "a");
	cr_assert_str_eq(p.model, "mock-small");
	cr_assert_eq(p.output_tokens, 16);
	cr_assert_float_eq(p.ttft_ms, 200, 0);
	cr_assert_eq(p.stream, true);
	cr_assert_eq(p.mode, 1, "enum default \"slow\" is index 1");
	cfg_free(prov_keys, NKEYS, &p);
	cr_assert_null(p.name);
	cr_assert_null(p.model);
}

Test(cfg, present_values_fill_target, .timeout = 10)
{
	struct prov p;

	cr_assert_eq(apply("{\"name\":\"b\",\"model\":\"m2\",\"output_tokens\":4096,"
			   "\"ttft_ms\":12.5,\"stream\":false,\"mode\":\"off\","
			   "\"faults\":[{\"kind\":\"hang\"}]}", &p), 0, "%s", err);
	cr_assert_str_eq(p.name, "b");
	cr_assert_str_eq(p.model, "m2");
	cr_assert_eq(p.output_tokens, 4096);
	cr_assert_float_eq(p.ttft_ms, 12.5, 0);
	cr_assert_eq(p.stream, false);
	cr_assert_eq(p.mode, 2);
	cfg_free(prov_keys, NKEYS, &p);
}

Test(cfg, number_above_max_names_file_path_and_bounds, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"ttft_ms\":600001}", &p), &p,
		       "conf.json: providers[0].ttft_ms: expected a number from 0 to 600000, got");
	cr_assert(strstr(err, "600001"), "%s", err);
}

Test(cfg, number_below_min_refused, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"ttft_ms\":-1}", &p), &p,
		       "providers[0].ttft_ms: expected a number from 0 to 600000, got -1");
}

Test(cfg, number_bounds_are_inclusive, .timeout = 10)
{
	struct prov p;

	cr_assert_eq(apply("{\"name\":\"a\",\"ttft_ms\":0,\"output_tokens\":1}", &p), 0, "%s", err);
	cr_assert_float_eq(p.ttft_ms, 0, 0);
	cr_assert_eq(p.output_tokens, 1);
	cfg_free(prov_keys, NKEYS, &p);
	cr_assert_eq(apply("{\"name\":\"a\",\"ttft_ms\":600000}", &p), 0, "%s", err);
	cr_assert_float_eq(p.ttft_ms, 600000, 0);
	cfg_free(prov_keys, NKEYS, &p);
}

Test(cfg, int_refuses_fraction, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"output_tokens\":2.5}", &p), &p,
		       "conf.json: providers[0].output_tokens: expected a whole number from 1 to 4096, got 2.5");
}

Test(cfg, int_refuses_string, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"output_tokens\":\"16\"}", &p), &p,
		       "providers[0].output_tokens: expected a whole number from 1 to 4096, got the string \"16\"");
}

Test(cfg, int_above_max_refused, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"output_tokens\":4097}", &p), &p,
		       "providers[0].output_tokens: expected a whole number from 1 to 4096, got 4097");
}

Test(cfg, bool_refuses_number, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"stream\":1}", &p), &p,
		       "conf.json: providers[0].stream: expected true or false, got 1");
}

Test(cfg, str_refuses_empty_and_non_string, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"\"}", &p), &p,
		       "providers[0].name: expected a non-empty string");
	assert_refused(apply("{\"name\":7}", &p), &p,
		       "providers[0].name: expected a non-empty string, got 7");
}

Test(cfg, enum_lists_choices, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"mode\":\"medium\"}", &p), &p,
		       "conf.json: providers[0].mode: expected one of fast, slow, off, got the string \"medium\"");
}

Test(cfg, unknown_key_refused, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"name\":\"a\",\"ttft\":5}", &p), &p,
		       "conf.json: providers[0].ttft: unknown key");
}

Test(cfg, required_missing_refused, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("{\"ttft_ms\":5}", &p), &p,
		       "conf.json: providers[0].name: missing (required)");
}

Test(cfg, required_skip_key_missing_refused, .timeout = 10)
{
	static const struct cfg_key keys[] = {
		{ "targets", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	};
	cJSON *obj = cJSON_Parse("{}");
	int dummy = 0;

	cr_assert_eq(cfg_apply(keys, 1, obj, &dummy, "gw.json", "models.chat", err), -EINVAL);
	cr_assert(strstr(err, "gw.json: models.chat.targets: missing (required)"), "%s", err);
	cJSON_Delete(obj);
}

Test(cfg, non_object_refused, .timeout = 10)
{
	struct prov p;

	assert_refused(apply("[1,2]", &p), &p, "conf.json: providers[0]: expected an object, got an array");
}

Test(cfg, top_level_key_has_no_leading_dot, .timeout = 10)
{
	cJSON *obj = cJSON_Parse("{\"name\":\"a\",\"zzz\":true}");
	struct prov p;

	memset(&p, 0, sizeof(p));
	cr_assert_eq(cfg_apply(prov_keys, NKEYS, obj, &p, "conf.json", "", err), -EINVAL);
	cr_assert(strncmp(err, "conf.json: zzz: unknown key", 27) == 0, "%s", err);
	cfg_free(prov_keys, NKEYS, &p);
	cJSON_Delete(obj);
}

Test(cfg, duplicate_key_refused, .timeout = 10)
{
	struct prov p;

	/* cJSON keeps both; the first would silently win without this check. */
	assert_refused(apply("{\"name\":\"a\",\"ttft_ms\":1,\"name\":\"b\"}", &p), &p,
		       "conf.json: providers[0].name: given twice; expected each key once");
}
