/*
 * jpath: a dotted path to a value in a JSON document — walked component
 * by component, each error naming the path as far as it got.
 */
#include "runner/jpath.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"

/* Where a walk ended: the parent of the last component, and the value there. */
struct spot {
	cJSON *parent;
	cJSON *node;			/* NULL: an object's key to be added */
	int index;			/* the last component's in an array parent, else -1 */
};

/* What kind of value v is, for "PATH holds a number". */
static const char *kind_name(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "true or false";
	return "null";
}

/* Whether s (len bytes) is a whole number 0–99999 written in digits alone. */
static bool parse_index(const char *s, size_t len, int *out)
{
	size_t i;
	int v = 0;

	if (len == 0 || len > 5)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* The element names of arr, for a message ("direct, gateway"). */
static void list_names(const cJSON *arr, struct buf *out)
{
	const cJSON *e;
	const char *name;
	size_t n = 0;

	cJSON_ArrayForEach(e, arr) {
		name = cJSON_IsObject(e) ? json_get_string(e, "name") : NULL;
		if (!name)
			continue;
		if (out->len > 160) {
			buf_puts(out, ", …");
			return;
		}
		buf_printf(out, "%s%s", n++ ? ", " : "", name);
	}
	if (!n)
		buf_puts(out, "no element has a \"name\"");
}

/* The element of arr whose "name" is comp (len bytes), or NULL; its index in *index. */
static cJSON *find_named(const cJSON *arr, const char *comp, size_t len, int *index)
{
	cJSON *e;
	const char *name;
	int i = 0;

	cJSON_ArrayForEach(e, arr) {
		name = cJSON_IsObject(e) ? json_get_string(e, "name") : NULL;
		if (name && strlen(name) == len && memcmp(name, comp, len) == 0) {
			*index = i;
			return e;
		}
		i++;
	}
	return NULL;
}

/*
 * "no setup named" for an array called setups: its key without a last 's',
 * or "element" (an array with no key, or one not ending in 's').
 */
static void element_word(const char *key, size_t keylen, char *out, size_t len)
{
	if (keylen > 1 && key[keylen - 1] == 's')
		snprintf(out, len, "%.*s", (int)(keylen - 1 < 60 ? keylen - 1 : 60), key);
	else
		snprintf(out, len, "element");
}

/*
 * Follows path from root. With allow_new, a last component that is a key
 * absent from an object is found as a spot with node NULL. Returns 0 or
 * -EINVAL / -ENOENT with err naming the component.
 */
static int walk(const cJSON *root, const char *path, bool allow_new, struct spot *at, char *err,
		size_t errlen)
{
	cJSON *node = (cJSON *)root;
	const char *comp = path;
	const char *key = NULL;		/* the previous component: node's key */
	size_t keylen = 0;
	char word[64];
	struct buf names = { 0 };
	int rc = 0;

	at->parent = NULL;
	at->node = node;
	at->index = -1;
	for (;;) {
		const char *dot = strchr(comp, '.');
		size_t len = dot ? (size_t)(dot - comp) : strlen(comp);
		int prefix = (int)(comp - path + len);
		bool last = !dot;
		cJSON *next = NULL;
		int index = -1;

		if (len == 0) {
			snprintf(err, errlen, "%.200s: expected components separated by single dots, "
				 "got an empty one", path);
			rc = -EINVAL;
			goto out;
		}
		if (cJSON_IsObject(node)) {
			char *k = strndup(comp, len);

			if (!k) {
				snprintf(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto out;
			}
			next = cJSON_GetObjectItemCaseSensitive(node, k);
			free(k);
			if (!next && !(last && allow_new)) {
				snprintf(err, errlen, "%.*s: no such key", prefix, path);
				rc = -ENOENT;
				goto out;
			}
		} else if (cJSON_IsArray(node)) {
			if (parse_index(comp, len, &index)) {
				next = cJSON_GetArrayItem(node, index);
				if (!next) {
					snprintf(err, errlen, "%.*s: no element %d (%.*s has %d)", prefix,
						 path, index, key ? (int)keylen : 4, key ? key : "it",
						 cJSON_GetArraySize(node));
					rc = -ENOENT;
					goto out;
				}
			} else {
				next = find_named(node, comp, len, &index);
				if (!next) {
					element_word(key, keylen, word, sizeof(word));
					list_names(node, &names);
					snprintf(err, errlen, "%.*s: no %s named \"%.*s\" (%.*s: %s)", prefix,
						 path, word, (int)len, comp, key ? (int)keylen : 4,
						 key ? key : "here", names.data ? names.data : "");
					rc = -ENOENT;
					goto out;
				}
			}
		} else {
			snprintf(err, errlen, "%.*s: %.*s holds %s, not an object or an array", prefix,
				 path, key ? (int)(key - path + keylen) : 4, key ? path : "root",
				 kind_name(node));
			rc = -ENOENT;
			goto out;
		}
		at->parent = node;
		at->node = next;
		at->index = index;
		if (last)
			break;
		node = next;
		key = comp;
		keylen = len;
		comp = dot + 1;
	}
out:
	buf_free(&names);
	return rc;
}

/* Looks a value up by its path (jpath.h). */
int jpath_get(const cJSON *root, const char *path, const cJSON **out, char *err,
	      size_t errlen)
{
	struct spot at;
	int rc = walk(root, path, false, &at, err, errlen);

	*out = rc ? NULL : at.node;
	return rc;
}

/* Whether jpath_set could set path, and what is there now (jpath.h). */
int jpath_settable(const cJSON *root, const char *path, const cJSON **cur, char *err,
		   size_t errlen)
{
	struct spot at;
	int rc = walk(root, path, true, &at, err, errlen);

	*cur = rc ? NULL : at.node;
	return rc;
}

/* Replaces or adds the value at path, taking value over (jpath.h). */
int jpath_set(cJSON *root, const char *path, cJSON *value, char *err, size_t errlen)
{
	const char *leaf = strrchr(path, '.');
	struct spot at;
	int rc;

	leaf = leaf ? leaf + 1 : path;
	rc = walk(root, path, true, &at, err, errlen);
	if (rc)
		goto out_free_value;
	if (at.index >= 0) {
		if (!cJSON_ReplaceItemInArray(at.parent, at.index, value))
			goto out_oom;
	} else if (at.node) {
		if (!cJSON_ReplaceItemInObjectCaseSensitive(at.parent, leaf, value))
			goto out_oom;
	} else if (!cJSON_AddItemToObject(at.parent, leaf, value)) {
		goto out_oom;
	}
	return 0;
out_oom:
	snprintf(err, errlen, "%.200s: out of memory", path);
	rc = -ENOMEM;
out_free_value:
	cJSON_Delete(value);
	return rc;
}
