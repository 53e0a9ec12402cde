/*
 * jsondiff: json_member_span against cJSON.
 */
#include "tests/support/jsondiff.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"

/* How many top-level members cJSON calls key; the first goes to *first. */
static int count_key(const cJSON *root, const char *key, const cJSON **first)
{
	const cJSON *c;
	int n = 0;

	cJSON_ArrayForEach(c, root) {
		if (c->string && strcmp(c->string, key) == 0) {
			if (!n)
				*first = c;
			n++;
		}
	}
	return n;
}

/* Whether a and b are the same value: the same type and printed alike. */
static bool same_value(const cJSON *a, const cJSON *b)
{
	char *pa = cJSON_PrintUnformatted(a);
	char *pb = cJSON_PrintUnformatted(b);
	bool same = pa && pb && (a->type & 0xff) == (b->type & 0xff) && strcmp(pa, pb) == 0;

	free(pa);
	free(pb);
	return same;
}

/* The span's value, parsed on its own. */
static cJSON *parse_span(const char *text, size_t a, size_t b)
{
	struct buf v = { 0 };
	cJSON *root = NULL;

	if (buf_append(&v, text + a, b - a) == 0 && buf_append(&v, "", 0) == 0)
		root = json_parse_whole(v.data, v.len);
	buf_free(&v);
	return root;
}

/* Splices "spliced" into [a, b) and checks what cJSON makes of the result. */
static int check_splice(const char *text, size_t len, const cJSON *root, const char *key,
			size_t a, size_t b, char *why, size_t whylen)
{
	static const char value[] = "\"spliced\"";
	const cJSON *got = NULL;
	struct buf t = { 0 };
	cJSON *root2 = NULL;
	int rc = -1;

	if (buf_append(&t, text, a) || buf_append(&t, value, sizeof(value) - 1) ||
	    buf_append(&t, text + b, len - b) || buf_append(&t, "", 0)) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	root2 = json_parse_whole(t.data, t.len);
	if (!cJSON_IsObject(root2))
		snprintf(why, whylen, "the spliced text is refused: %s", t.data);
	else if (count_key(root2, key, &got) != 1 || !cJSON_IsString(got) ||
		 strcmp(got->valuestring, "spliced") != 0)
		snprintf(why, whylen, "splicing into key \"%s\" did not change it: %s", key, t.data);
	else if (cJSON_GetArraySize(root2) != cJSON_GetArraySize(root))
		snprintf(why, whylen, "splicing into key \"%s\" changed the members: %s", key,
			 t.data);
	else
		rc = 0;
out:
	cJSON_Delete(root2);
	buf_free(&t);
	return rc;
}

/* Checks one key. Returns 0 when the scanner agrees with cJSON, else -1. */
static int check_key(const char *text, size_t len, const cJSON *root, const char *key,
		     char *why, size_t whylen)
{
	const cJSON *want = NULL;
	int n = count_key(root, key, &want);
	size_t a = 0;
	size_t b = 0;
	int rc = json_member_span(text, len, key, &a, &b);
	cJSON *got;
	bool same;

	if (n == 0 && rc != -ENOENT) {
		snprintf(why, whylen, "cJSON has no key \"%s\"; the scanner says %d", key, rc);
		return -1;
	}
	if (n > 1 && rc != -EEXIST) {
		snprintf(why, whylen, "cJSON has key \"%s\" %d times; the scanner says %d", key, n,
			 rc);
		return -1;
	}
	if (n != 1)
		return 0;
	if (rc != 0 || a > b || b > len) {
		snprintf(why, whylen, "cJSON has key \"%s\" once; the scanner says %d [%zu, %zu)",
			 key, rc, a, b);
		return -1;
	}
	got = parse_span(text, a, b);
	same = got && same_value(got, want);
	cJSON_Delete(got);
	if (!same) {
		snprintf(why, whylen, "key \"%s\": the scanner's value %.*s is not cJSON's", key,
			 (int)(b - a), text + a);
		return -1;
	}
	return check_splice(text, len, root, key, a, b, why, whylen);
}

int jsondiff_check(const char *text, size_t len, char *why, size_t whylen)
{
	cJSON *root = json_parse_whole(text, len);
	const cJSON *c;
	int rc = 1;

	if (!cJSON_IsObject(root)) {
		size_t a = 0;
		size_t b = 0;

		/* Any text: the scan must stay inside it. */
		cJSON_Delete(root);
		if (json_member_span(text, len, "model", &a, &b) == 0 && (a > b || b > len)) {
			snprintf(why, whylen, "a span [%zu, %zu) outside the %zu bytes", a, b, len);
			return -1;
		}
		return 0;
	}
	if (check_key(text, len, root, "model", why, whylen))
		rc = -1;
	cJSON_ArrayForEach(c, root) {
		if (rc < 0)
			break;
		if (c->string && check_key(text, len, root, c->string, why, whylen))
			rc = -1;
	}
	cJSON_Delete(root);
	return rc;
}
