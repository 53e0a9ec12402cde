/*
 * vary: --vary's lists and ranges, typed by the scenario's value at the
 * path; the grid's order, its points' scenarios and folder names; every
 * refusal naming the path and what was expected.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "runner/vary.h"

TestSuite(vary, .timeout = 10);

static const char doc[] =
	"{\"name\":\"s\",\"load\":{\"timeout_ms\":1500,\"model\":\"m\"},"
	"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{\"hedge\":{\"enabled\":false},"
	"\"providers\":{\"primary\":{\"timeout_ms\":300}},\"breaker\":{}}}]}";

static char err[512];

static cJSON *base(void)
{
	cJSON *root = cJSON_Parse(doc);

	cr_assert_not_null(root);
	err[0] = '\0';
	return root;
}

static char *values_text(const struct vary_plan *p, size_t j)
{
	return cJSON_PrintUnformatted(p->v[j].values);
}

Test(vary, lists_and_ranges_typed_by_the_value_there)
{
	cJSON *b = base();
	struct vary_plan p = { 0 };
	char *t;

	cr_assert_eq(vary_add(&p, b, "setups.gw.config.providers.primary.timeout_ms=300,800,1500",
			      err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(vary_add(&p, b, "load.timeout_ms=0.1..0.3/0.1", err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(vary_add(&p, b, "load.model=a,b", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(vary_add(&p, b, "setups.gw.config.hedge.enabled=true,false", err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(vary_add(&p, b, "setups.gw.config.breaker.consecutive_failures=1..3/1", err,
			      sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.n, 5);
	cr_expect_eq(p.npoints, 3 * 3 * 2 * 2 * 3);
	t = values_text(&p, 0);
	cr_expect_str_eq(t, "[300,800,1500]");
	free(t);
	t = values_text(&p, 1);
	cr_expect_str_eq(t, "[0.1,0.2,0.3]", "TO counts, without float noise");
	free(t);
	t = values_text(&p, 2);
	cr_expect_str_eq(t, "[\"a\",\"b\"]");
	free(t);
	t = values_text(&p, 3);
	cr_expect_str_eq(t, "[true,false]");
	free(t);
	t = values_text(&p, 4);
	cr_expect_str_eq(t, "[1,2,3]", "a new key: numbers when they read as numbers");
	free(t);
	vary_plan_free(&p);
	cJSON_Delete(b);
}

Test(vary, a_range_stops_before_a_to_off_its_steps)
{
	cJSON *b = base();
	struct vary_plan p = { 0 };
	char *t;

	cr_assert_eq(vary_add(&p, b, "load.timeout_ms=100..350/100", err, sizeof(err)), 0, "%s", err);
	t = values_text(&p, 0);
	cr_expect_str_eq(t, "[100,200,300]");
	free(t);
	vary_plan_free(&p);
	cJSON_Delete(b);
}

Test(vary, the_grid_varies_the_first_slowest)
{
	cJSON *b = base();
	struct vary_plan p = { 0 };
	cJSON *sc;
	char *s;
	const cJSON *v;

	cr_assert_eq(vary_add(&p, b, "setups.gw.config.providers.primary.timeout_ms=300,800", err,
			      sizeof(err)), 0);
	cr_assert_eq(vary_add(&p, b, "load.model=a b,c/d,e", err, sizeof(err)), 0);
	cr_assert_eq(p.npoints, 6);
	cr_expect_eq(vary_value(&p, 0, 0)->valuedouble, 300);
	cr_expect_str_eq(vary_value(&p, 2, 1)->valuestring, "e");
	cr_expect_eq(vary_value(&p, 3, 0)->valuedouble, 800);
	cr_expect_str_eq(vary_value(&p, 3, 1)->valuestring, "a b");
	s = vary_dir_name(&p, 1);
	cr_expect_str_eq(s, "p002-timeout_ms=300,model=c_d");
	free(s);
	s = vary_label(&p, 3);
	cr_expect_str_eq(s, "timeout_ms=800,model=a b");
	free(s);
	sc = vary_scenario(&p, b, 4, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	v = cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "load"), "model");
	cr_expect_str_eq(v->valuestring, "c/d");
	s = cJSON_PrintUnformatted(sc);
	cr_expect(strstr(s, "\"primary\":{\"timeout_ms\":800}"), "%s", s);
	free(s);
	cJSON_Delete(sc);
	vary_plan_free(&p);
	cJSON_Delete(b);
}

/* Each refusal, and the words it must hold. */
static void refused(const char *arg, const char *want)
{
	cJSON *b = base();
	struct vary_plan p = { 0 };

	cr_assert_eq(vary_add(&p, b, "load.timeout_ms=1,2", err, sizeof(err)), 0);
	cr_expect_eq(vary_add(&p, b, arg, err, sizeof(err)), -EINVAL, "%s accepted", arg);
	cr_expect(strstr(err, want), "%s: \"%s\" lacks \"%s\"", arg, err, want);
	cr_expect_eq(p.n, 1);
	vary_plan_free(&p);
	cJSON_Delete(b);
}

Test(vary, refusals_name_the_path_and_the_expectation)
{
	refused("setups.gwy.config.x=1", "--vary setups.gwy.config.x: no such value in the "
		"scenario: setups.gwy: no setup named \"gwy\" (setups: gw)");
	refused("setups.gw.config.providers.primary.timeout_ms=300,fast",
		"--vary setups.gw.config.providers.primary.timeout_ms: expected a number, as the "
		"value there now (300), got \"fast\"");
	refused("setups.gw.config.hedge.enabled=yes", "expected true or false");
	refused("load.timeout_ms=5", "--vary load.timeout_ms: given twice");
	refused("load.rate=", "--vary load.rate: expected a list V1,V2,… or a range");
	refused("load.rate=1,,2", "got an empty value");
	refused("load.rate=5..1/1", "expected FROM ≤ TO and STEP above 0");
	refused("load.rate=1..5/0", "expected FROM ≤ TO and STEP above 0");
	refused("load.rate=1..5", "expected a range FROM..TO/STEP");
	refused("load.rate=0..5000/1", "expected at most 1000 values");
	refused("load=1", "--vary load: it holds an object");
	refused("=1", "--vary: expected PATH=");
	refused("load.rate", "--vary: expected PATH=");
	refused("load.rate=0..600/1", "the grid would have 1202 points");
	refused("load.rate+load.timeout_ms=1,2", "--vary load.rate+load.timeout_ms: "
		"load.timeout_ms given twice");
	refused("load.rate+load.rate=1,2", "load.rate given twice");
	refused("load.model+setups.gw.config.providers.primary.timeout_ms=1,2",
		"linked paths take the same values, but setups.gw.config.providers.primary."
		"timeout_ms holds another type than the first");
	refused("load.rate+=1", "expected PATH or PATH+PATH");
	refused("load.rate+setups.gw.config.nope.x=1", "no such value in the scenario: "
		"setups.gw.config.nope: no such key");
}

/* A+B: one axis, both paths take each value; the folder is named by the last part's leaf. */
Test(vary, linked_paths_take_the_same_values)
{
	cJSON *b = base();
	struct vary_plan p = { 0 };
	struct vary_plan q = { 0 };
	cJSON *sc;
	char *s;

	cr_assert_eq(vary_add(&p, b, "setups.gw.config.providers.primary.timeout_ms"
			      "+load.timeout_ms=300,800", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.npoints, 2);
	s = vary_dir_name(&p, 1);
	cr_expect_str_eq(s, "p002-timeout_ms=800");
	free(s);
	sc = vary_scenario(&p, b, 1, err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	s = cJSON_PrintUnformatted(sc);
	cr_expect(strstr(s, "\"primary\":{\"timeout_ms\":800}"), "%s", s);
	cr_expect(strstr(s, "\"load\":{\"timeout_ms\":800,"), "%s", s);
	free(s);
	cJSON_Delete(sc);
	vary_plan_free(&p);
	/* a key the file leaves out takes the type of the part that is there */
	cr_assert_eq(vary_add(&q, b, "setups.gw.config.breaker.consecutive_failures"
			      "+load.timeout_ms=3", err, sizeof(err)), 0, "%s", err);
	cr_expect(cJSON_IsNumber(vary_value(&q, 0, 0)));
	s = vary_dir_name(&q, 0);
	cr_expect_str_eq(s, "p001-timeout_ms=3");
	free(s);
	cr_expect_str_eq(vary_leaf("load.rate+seed"), "seed");
	/* a list of strings may hold "..": a range is of numbers alone */
	cr_assert_eq(vary_add(&q, b, "load.model=../a,../b", err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(vary_value(&q, 1, 1)->valuestring, "../b");
	vary_plan_free(&q);
	cJSON_Delete(b);
}
