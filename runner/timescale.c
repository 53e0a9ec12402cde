/*
 * timescale: the scenario file's time scale — every duration multiplied
 * and every rate divided by one factor, over the whole parsed file
 * (the rule is at the top of runner/scenario.h).
 */
#include "runner/scenario.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* The key names a duration: …_s or …_ms, maybe followed by _max or _min. */
static bool key_is_time(const char *key)
{
	size_t n = strlen(key);

	if (ends_with(key, n, "_max") || ends_with(key, n, "_min"))
		n -= 4;
	return ends_with(key, n, "_s") || ends_with(key, n, "_ms");
}

/* The key names a rate: rate, rpm, tpm, or …_per_second (budget.min_per_second). */
static bool key_is_rate(const char *key)
{
	return strcmp(key, "rate") == 0 || strcmp(key, "rpm") == 0 || strcmp(key, "tpm") == 0 ||
	       ends_with(key, strlen(key), "_per_second");
}

/* Scales the members of node; key is node's own (array members inherit it). */
static void scale_node(cJSON *node, const char *key, double s)
{
	cJSON *c;

	cJSON_ArrayForEach(c, node) {
		const char *k = cJSON_IsArray(node) ? key : c->string;

		/* The simulator's constants are the machine's, not the timeline's. */
		if (!key && k && strcmp(k, "sim") == 0 && cJSON_IsObject(c))
			continue;
		/* So is the time another gateway takes to start (setups[].ready_ms). */
		if (key && strcmp(key, "setups") == 0 && cJSON_IsObject(node) && k &&
		    strcmp(k, "ready_ms") == 0)
			continue;
		if (cJSON_IsNumber(c) && k) {
			if (key_is_time(k))
				cJSON_SetNumberHelper(c, c->valuedouble * s);
			else if (key_is_rate(k))
				cJSON_SetNumberHelper(c, c->valuedouble / s);
		} else if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
			scale_node(c, k, s);
		}
	}
}

int scenario_scale(cJSON *root, double s)
{
	if (!isfinite(s) || !(s > 0))
		return -EINVAL;
	if (root && (cJSON_IsArray(root) || cJSON_IsObject(root)))
		scale_node(root, root->string, s);
	return 0;
}
