/*
 * cfg: table-driven validation of JSON config objects.
 */
#include "common/cfg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cfg_error(char *err, const char *file, const char *path, const char *key,
	      const char *fmt, ...)
{
	char what[CFG_ERR_LEN];
	char where[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (path && *path && key)
		snprintf(where, sizeof(where), "%s.%s", path, key);
	else if (key)
		snprintf(where, sizeof(where), "%s", key);
	else if (path && *path)
		snprintf(where, sizeof(where), "%s", path);
	else
		snprintf(where, sizeof(where), "(top level)");
	snprintf(err, CFG_ERR_LEN, "%.160s: %.100s: %.240s", file, where, what);
	return -EINVAL;
}

void cfg_describe(const cJSON *v, char *out, size_t len)
{
	if (!v)
		snprintf(out, len, "nothing");
	else if (cJSON_IsString(v))
		snprintf(out, len, "the string \"%.60s\"", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(out, len, "%.17g", v->valuedouble);
	else if (cJSON_IsBool(v))
		snprintf(out, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNull(v))
		snprintf(out, len, "null");
	else if (cJSON_IsArray(v))
		snprintf(out, len, "an array");
	else
		snprintf(out, len, "an object");
}

/*
 * The bounds are short decimals written in a table, so 15 digits show them
 * as written (99.9, not 99.900000000000006) and every whole bound exactly.
 */
static void range_text(const struct cfg_key *k, char *out, size_t len)
{
	const char *what = k->type == CFG_INT ? "a whole number" : "a number";

	snprintf(out, len, "%s from %.15g to %.15g", what, k->min, k->max);
}

static void choices_text(const char *const *choices, char *out, size_t len)
{
	size_t used = 0;
	int i;

	out[0] = '\0';
	for (i = 0; choices[i] && used < len; i++) {
		int n = snprintf(out + used, len - used, "%s%s", i ? ", " : "",
				 choices[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static int apply_default(const struct cfg_key *k, char *field)
{
	int i;

	switch (k->type) {
	case CFG_INT:
		*(int64_t *)field = (int64_t)k->def;
		break;
	case CFG_NUM:
		*(double *)field = k->def;
		break;
	case CFG_BOOL:
		*(bool *)field = k->def != 0;
		break;
	case CFG_STR:
		*(char **)field = NULL;
		if (k->def_str) {
			*(char **)field = strdup(k->def_str);
			if (!*(char **)field)
				return -ENOMEM;
		}
		break;
	case CFG_ENUM:
		*(int *)field = 0;
		for (i = 0; k->def_str && k->choices[i]; i++) {
			if (strcmp(k->choices[i], k->def_str) == 0)
				*(int *)field = i;
		}
		break;
	case CFG_SKIP:
		break;
	}
	return 0;
}

static int apply_value(const struct cfg_key *k, const cJSON *v, char *field,
		       const char *file, const char *path, char *err)
{
	char got[96];
	char want[256];
	int i;

	cfg_describe(v, got, sizeof(got));
	switch (k->type) {
	case CFG_INT:
	case CFG_NUM:
		range_text(k, want, sizeof(want));
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
		    v->valuedouble < k->min || v->valuedouble > k->max ||
		    (k->type == CFG_INT && v->valuedouble != floor(v->valuedouble)))
			return cfg_error(err, file, path, k->name,
					 "expected %s, got %s", want, got);
		if (k->type == CFG_INT)
			*(int64_t *)field = (int64_t)v->valuedouble;
		else
			*(double *)field = v->valuedouble;
		return 0;
	case CFG_BOOL:
		if (!cJSON_IsBool(v))
			return cfg_error(err, file, path, k->name,
					 "expected true or false, got %s", got);
		*(bool *)field = cJSON_IsTrue(v);
		return 0;
	case CFG_STR:
		if (!cJSON_IsString(v) || !v->valuestring[0])
			return cfg_error(err, file, path, k->name,
					 "expected a non-empty string, got %s", got);
		free(*(char **)field);
		*(char **)field = strdup(v->valuestring);
		return *(char **)field ? 0 : -ENOMEM;
	case CFG_ENUM:
		choices_text(k->choices, want, sizeof(want));
		for (i = 0; cJSON_IsString(v) && k->choices[i]; i++) {
			if (strcmp(k->choices[i], v->valuestring) == 0) {
				*(int *)field = i;
				return 0;
			}
		}
		return cfg_error(err, file, path, k->name,
				 "expected one of %s, got %s", want, got);
	case CFG_SKIP:
		return 0;
	}
	return 0;
}

int cfg_apply(const struct cfg_key *keys, size_t nkeys, const cJSON *obj,
	      void *target, const char *file, const char *path, char *err)
{
	const cJSON *item;
	size_t i;
	int rc;

	if (!cJSON_IsObject(obj)) {
		char got[96];

		cfg_describe(obj, got, sizeof(got));
		return cfg_error(err, file, path, NULL, "expected an object, got %s", got);
	}
	cJSON_ArrayForEach(item, obj) {
		const cJSON *prev;

		for (i = 0; i < nkeys; i++) {
			if (strcmp(keys[i].name, item->string) == 0)
				break;
		}
		if (i == nkeys)
			return cfg_error(err, file, path, item->string,
					 "unknown key (check its spelling against the README)");
		for (prev = obj->child; prev != item; prev = prev->next) {
			if (strcmp(prev->string, item->string) == 0)
				return cfg_error(err, file, path, item->string,
						 "given twice; expected each key once");
		}
	}
	for (i = 0; i < nkeys; i++) {
		const struct cfg_key *k = &keys[i];
		char *field = (char *)target + k->offset;

		item = cJSON_GetObjectItemCaseSensitive(obj, k->name);
		if (k->type == CFG_SKIP) {
			if (!item && k->required)
				return cfg_error(err, file, path, k->name, "missing (required)");
			continue;
		}
		rc = apply_default(k, field);
		if (rc)
			return cfg_error(err, file, path, k->name, "out of memory");
		if (!item) {
			if (k->required)
				return cfg_error(err, file, path, k->name, "missing (required)");
			continue;
		}
		rc = apply_value(k, item, field, file, path, err);
		if (rc)
			return rc;
	}
	return 0;
}

void cfg_free(const struct cfg_key *keys, size_t nkeys, void *target)
{
	size_t i;

	for (i = 0; i < nkeys; i++) {
		if (keys[i].type == CFG_STR) {
			char **field = (char **)((char *)target + keys[i].offset);

			free(*field);
			*field = NULL;
		}
	}
}
