/*
 * combine: folding the summaries of a scenario's repeats into one
 * (stats_combine; the rules are in stats.h). Pure: JSON in, JSON out.
 */
#include "runner/stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* {"mean","stddev","min","max","n"} of the numbers among v (absent: 0). */
static cJSON *combine_numbers(const cJSON *const *v, size_t n)
{
	double sum = 0, sq = 0, min = INFINITY, max = -INFINITY;
	size_t k = 0;
	size_t i;
	cJSON *o;
	bool ok = true;
	double mean;

	for (i = 0; i < n; i++) {
		double x;

		if (v[i] && !cJSON_IsNumber(v[i]))
			continue;
		x = v[i] ? v[i]->valuedouble : 0;
		sum += x;
		min = x < min ? x : min;
		max = x > max ? x : max;
		k++;
	}
	if (!k)
		return cJSON_CreateNull();
	mean = sum / (double)k;
	for (i = 0; i < n; i++) {
		double x;

		if (v[i] && !cJSON_IsNumber(v[i]))
			continue;
		x = v[i] ? v[i]->valuedouble : 0;
		sq += (x - mean) * (x - mean);
	}
	o = cJSON_CreateObject();
	ok &= json_put(o, "mean", cJSON_CreateNumber(mean));
	ok &= json_put(o, "stddev", cJSON_CreateNumber(k > 1 && min < max ? sqrt(sq / (double)(k - 1)) : 0));
	ok &= json_put(o, "min", cJSON_CreateNumber(min));
	ok &= json_put(o, "max", cJSON_CreateNumber(max));
	ok &= json_put(o, "n", cJSON_CreateNumber((double)k));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *combine_node(const cJSON *const *v, size_t n);

/* The member key of each of v (NULL where absent), combined. */
static cJSON *combine_member(const cJSON *const *v, size_t n, const char *key)
{
	const cJSON **c = malloc(n * sizeof(*c));
	cJSON *r;
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < n; i++)
		c[i] = cJSON_IsObject(v[i]) ? cJSON_GetObjectItemCaseSensitive(v[i], key) : NULL;
	if (strcmp(key, "from_ms") == 0 || strcmp(key, "to_ms") == 0) {
		r = NULL;
		for (i = 0; i < n && !r; i++) {
			if (c[i])
				r = cJSON_Duplicate(c[i], 1);
		}
	} else {
		r = combine_node(c, n);
	}
	free(c);
	return r;
}

static cJSON *combine_object(const cJSON *const *v, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < n; i++) {
		const cJSON *m;

		if (!cJSON_IsObject(v[i]))
			continue;
		cJSON_ArrayForEach(m, v[i]) {
			if (cJSON_GetObjectItemCaseSensitive(o, m->string))
				continue;
			if (!json_put(o, m->string, combine_member(v, n, m->string))) {
				cJSON_Delete(o);
				return NULL;
			}
		}
	}
	return o;
}

static cJSON *combine_array(const cJSON *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	const cJSON **c = malloc(n * sizeof(*c));
	int len = -1;
	int k;
	size_t i;

	if (!a || !c)
		goto fail;
	for (i = 0; i < n; i++) {
		if (cJSON_IsArray(v[i]) && (len < 0 || cJSON_GetArraySize(v[i]) < len))
			len = cJSON_GetArraySize(v[i]);
	}
	for (k = 0; k < len; k++) {
		cJSON *e;

		for (i = 0; i < n; i++)
			c[i] = cJSON_IsArray(v[i]) ? cJSON_GetArrayItem(v[i], k) : NULL;
		e = combine_node(c, n);
		if (!e || !cJSON_AddItemToArray(a, e)) {
			cJSON_Delete(e);
			goto fail;
		}
	}
	free(c);
	return a;
fail:
	free(c);
	cJSON_Delete(a);
	return NULL;
}

/* v[0..n) (NULL: absent) combined by the rules in stats.h. */
static cJSON *combine_node(const cJSON *const *v, size_t n)
{
	const cJSON *first = NULL;
	size_t i;

	for (i = 0; i < n && !first; i++) {
		if (v[i] && !cJSON_IsNull(v[i]))
			first = v[i];
	}
	if (!first)
		return cJSON_CreateNull();
	if (cJSON_IsNumber(first))
		return combine_numbers(v, n);
	if (cJSON_IsObject(first))
		return combine_object(v, n);
	if (cJSON_IsArray(first))
		return combine_array(v, n);
	return cJSON_Duplicate(first, 1);
}

cJSON *stats_combine(cJSON *const *runs, size_t n)
{
	static const char *const copied[] = { "primary", "duration_ms", "window_ms" };
	static const char *const combined[] = { "phases", "windows", "totals" };
	cJSON *o;
	cJSON *bt;
	bool ok = true;
	size_t i;

	if (n == 0)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!cJSON_IsObject(runs[i]))
			return NULL;
	}
	o = cJSON_CreateObject();
	bt = cJSON_CreateArray();
	ok &= json_put(o, "runs", cJSON_CreateNumber((double)n));
	for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(runs[0], copied[i]);

		ok &= json_put(o, copied[i], v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
	}
	for (i = 0; ok && i < sizeof(combined) / sizeof(combined[0]); i++)
		ok = json_put(o, combined[i], combine_member((const cJSON *const *)runs, n, combined[i]));
	for (i = 0; ok && bt && i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(runs[i], "breaker_transitions");
		cJSON *copy = v ? cJSON_Duplicate(v, 1) : cJSON_CreateArray();

		ok = copy && cJSON_AddItemToArray(bt, copy);
		if (!ok)
			cJSON_Delete(copy);
	}
	ok &= json_put(o, "breaker_transitions", bt);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
