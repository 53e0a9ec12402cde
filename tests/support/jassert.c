/*
 * jassert: assertions on a summary's figures by dotted path; see jassert.h.
 */
#include "tests/support/jassert.h"

#include <criterion/criterion.h>
#include <math.h>

#include "runner/jpath.h"

const cJSON *jget(const cJSON *root, const char *path)
{
	const cJSON *v = NULL;
	char e[256];

	cr_assert_eq(jpath_get(root, path, &v, e, sizeof(e)), 0, "%s", e);
	return v;
}

double jnum(const cJSON *root, const char *path)
{
	const cJSON *v = jget(root, path);

	if (cJSON_IsNull(v))
		return NAN;
	cr_assert(cJSON_IsNumber(v), "%s is not a number", path);
	return v->valuedouble;
}

void expect_num(const cJSON *root, const char *path, double want)
{
	const cJSON *v = jget(root, path);

	if (isnan(want)) {
		cr_assert(cJSON_IsNull(v), "%s: expected null", path);
		return;
	}
	cr_assert(cJSON_IsNumber(v), "%s: expected a number", path);
	cr_assert_float_eq(v->valuedouble, want, 1e-9, "%s: expected %.12g, got %.12g", path,
			   want, v->valuedouble);
}

void expect_str(const cJSON *root, const char *path, const char *want)
{
	const cJSON *v = jget(root, path);

	cr_assert(cJSON_IsString(v), "%s: expected a string", path);
	cr_assert_str_eq(v->valuestring, want, "%s", path);
}
