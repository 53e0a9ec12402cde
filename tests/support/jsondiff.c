/*
 * jsondiff: the JSON scanner against cJSON.
 */
#include "tests/support/jsondiff.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"

/* Readers on a text the scanner refuses are walked this deep, no deeper. */
#define GARBAGE_DEPTH 64

/* Past this depth the tree of each value is not compared (it costs a parse per level). */
#define TREE_DEPTH 3

/* ---- the reference: cJSON held to the rules json_check documents ---- */

/* Whether the number s (n bytes) is in RFC 8259's form. */
static bool rfc_number(const char *s, size_t n)
{
	static regex_t re;
	static bool compiled;
	char *num = strndup(s, n);
	bool ok;

	if (!num)
		abort();
	if (!compiled) {
		if (regcomp(&re, "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?$",
			    REG_EXTENDED | REG_NOSUB))
			abort();
		compiled = true;
	}
	ok = regexec(&re, num, 0, NULL, 0) == 0;
	free(num);
	return ok;
}

/* The value of four hex digits at p (n bytes left), or -1 when they are not. */
static long hex4(const char *p, size_t n)
{
	char hex[5];

	if (n < 4)
		return -1;
	memcpy(hex, p, 4);
	hex[4] = '\0';
	if (strspn(hex, "0123456789abcdefABCDEF") != 4)
		return -1;
	return strtol(hex, NULL, 16);
}

/*
 * The offset of the first byte where text breaks a rule of JSON that cJSON
 * does not hold it to, or len when none does: a byte-order mark; white
 * space other than space, tab, LF and CR; a \u escape without four hex
 * digits; a key with \u0000; a number not in RFC 8259's form. Found on its
 * own walk (strings skipped, the rest byte by byte), not json_check's; on a
 * text cJSON accepts, each run of number bytes that begins with '-' or a
 * digit outside a string is one number.
 */
static size_t lax_at(const char *s, size_t len)
{
	size_t at;
	size_t i = 0;
	size_t k;
	bool nul;

	if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		return 0;
	while (i < len) {
		if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
			for (k = i; k < len && s[k] && strchr("0123456789+-.eE", s[k]); k++)
				;
			if (!rfc_number(s + i, k - i))
				return i;
			i = k;
			continue;
		}
		if (s[i] != '"') {
			if ((unsigned char)s[i] <= 0x20 && s[i] != ' ' && s[i] != '\t' &&
			    s[i] != '\n' && s[i] != '\r')
				return i;
			i++;
			continue;
		}
		at = i++;
		nul = false;
		while (i < len && s[i] != '"') {
			if (s[i] != '\\') {
				i++;
			} else if (i + 1 < len && s[i + 1] == 'u') {
				long cp = hex4(s + i + 2, len - i - 2);

				if (cp < 0)
					return i;
				nul |= cp == 0;
				i += 6;
			} else {
				i += 2;
			}
		}
		i++;
		for (k = i; k < len && strchr(" \t\r\n", s[k]) && s[k]; k++)
			;
		if (nul && k < len && s[k] == ':')
			return at;
	}
	return len;
}

/* Whether the reference accepts text: no NUL byte, no lax form, and cJSON parses it. */
static bool reference_accepts(const char *text, size_t len)
{
	cJSON *root;

	if (memchr(text, '\0', len) || lax_at(text, len) < len)
		return false;
	root = cJSON_ParseWithLengthOpts(text, len + 1, NULL, true);
	cJSON_Delete(root);
	return root != NULL;
}

/* ---- facts against the tree ---- */

static enum json_type type_of(const cJSON *item)
{
	switch (item->type & 0xff) {
	case cJSON_False:
		return JSON_FALSE;
	case cJSON_True:
		return JSON_TRUE;
	case cJSON_NULL:
		return JSON_NULL;
	case cJSON_Number:
		return JSON_NUMBER;
	case cJSON_String:
		return JSON_STRING;
	case cJSON_Array:
		return JSON_ARRAY;
	case cJSON_Object:
		return JSON_OBJECT;
	default:
		return JSON_NONE;
	}
}

/* How many members of root cJSON calls key; the first goes to *first. */
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

static int compare_value(struct json_span v, const cJSON *item, int depth, char *why,
			 size_t whylen);

/* A string's facts: emptiness, length and text as cJSON reads them. */
static int compare_string(struct json_span v, const cJSON *item, char *why, size_t whylen)
{
	struct buf b = { 0 };
	int rc = -1;

	if (json_string_nonempty(v) != (item->valuestring[0] != '\0'))
		snprintf(why, whylen, "%.*s: json_string_nonempty says %d", (int)v.len, v.p,
			 json_string_nonempty(v));
	else if (json_string_strlen(v) != strlen(item->valuestring))
		snprintf(why, whylen, "%.*s: json_string_strlen says %zu, cJSON's text has %zu",
			 (int)v.len, v.p, json_string_strlen(v), strlen(item->valuestring));
	else if (json_unescape(&b, v.p, v.len) || strcmp(b.data ? b.data : "",
							   item->valuestring) != 0)
		snprintf(why, whylen, "%.*s: json_unescape's text is not cJSON's", (int)v.len, v.p);
	else
		rc = 0;
	buf_free(&b);
	return rc;
}

/*
 * An object's members by key: how many, and the first one's value — the
 * span json_next gave that member (spans[i] for child i, compared there).
 */
static int compare_members(struct json_span v, const cJSON *item, const struct json_span *spans,
			   char *why, size_t whylen)
{
	const cJSON *c;
	const cJSON *first = NULL;
	struct json_member m;
	struct json_span got;
	size_t i = 0;

	cJSON_ArrayForEach(c, item) {
		int n = count_key(item, c->string, &first);

		if (first == c) {	/* the key is looked up at its first member */
			m = (struct json_member){ c->string, { NULL, 0 }, 0 };
			got = json_get(v, c->string);
			if (json_members(v, &m, 1) || m.count != (unsigned)n ||
			    got.p != m.v.p || got.len != m.v.len || m.v.p != spans[i].p ||
			    m.v.len != spans[i].len) {
				snprintf(why, whylen, "key \"%s\": cJSON has it %d times, "
					 "json_members %u", c->string, n, m.count);
				return -1;
			}
		}
		i++;
	}
	return 0;
}

/* An array's or object's items, in order, against cJSON's children. */
static int compare_items(struct json_span v, const cJSON *item, int depth, char *why,
			 size_t whylen)
{
	const cJSON *c = item->child;
	struct json_span *spans = calloc((size_t)cJSON_GetArraySize(item) + 1, sizeof(*spans));
	struct json_member none = { "", { NULL, 0 }, 0 };
	struct json_span e;
	size_t at = 0;
	size_t at2 = 0;
	size_t n = 0;
	int rc = -1;

	if (!spans)
		abort();
	while (json_next(v, &at, &e)) {
		if (!c) {
			snprintf(why, whylen, "%.*s: json_next gives more items than cJSON has",
				 (int)v.len, v.p);
			goto out;
		}
		if (e.p < v.p || e.p + e.len > v.p + v.len) {
			snprintf(why, whylen, "an item outside its value");
			goto out;
		}
		/* json_next_members steps the same way. */
		if (!json_next_members(v, &at2, &none, 1) || at2 != at) {
			snprintf(why, whylen, "%.*s: json_next_members steps otherwise", (int)v.len,
				 v.p);
			goto out;
		}
		if (compare_value(e, c, depth + 1, why, whylen))
			goto out;
		spans[n++] = e;
		c = c->next;
	}
	if (c) {
		snprintf(why, whylen, "%.*s: json_next gives fewer items than cJSON has",
			 (int)v.len, v.p);
		goto out;
	}
	if (json_has_items(v) != (n > 0)) {
		snprintf(why, whylen, "%.*s: json_has_items says otherwise", (int)v.len, v.p);
		goto out;
	}
	rc = type_of(item) == JSON_OBJECT ? compare_members(v, item, spans, why, whylen) : 0;
out:
	free(spans);
	return rc;
}

/* Every fact the readers give about v against item, and below it. */
static int compare_value(struct json_span v, const cJSON *item, int depth, char *why,
			 size_t whylen)
{
	enum json_type t = json_type_of(v);
	double d = 0;
	cJSON *tree;
	bool same;

	if (t != type_of(item)) {
		snprintf(why, whylen, "%.*s: json_type_of says %d, cJSON %d", (int)v.len, v.p, t,
			 type_of(item));
		return -1;
	}
	if (depth < TREE_DEPTH) {
		tree = json_parse_span(v);
		same = tree && same_value(tree, item);
		cJSON_Delete(tree);
		if (!same) {
			snprintf(why, whylen, "%.*s: json_parse_span's tree is not cJSON's",
				 (int)v.len, v.p);
			return -1;
		}
	}
	switch (t) {
	case JSON_STRING:
		return compare_string(v, item, why, whylen);
	case JSON_NUMBER:
		if (!json_number(v, &d) || memcmp(&d, &item->valuedouble, sizeof(d)) != 0) {
			snprintf(why, whylen, "%.*s: json_number says %.17g, cJSON %.17g",
				 (int)v.len, v.p, d, item->valuedouble);
			return -1;
		}
		return 0;
	case JSON_ARRAY:
	case JSON_OBJECT:
		return compare_items(v, item, depth, why, whylen);
	default:
		if (json_string_strlen(v) != 0 || json_string_nonempty(v) || json_number(v, &d)) {
			snprintf(why, whylen, "%.*s: read as a string or number", (int)v.len, v.p);
			return -1;
		}
		return 0;
	}
}

/* ---- any text: the readers stay inside ---- */

static bool inside(struct json_span in, struct json_span v)
{
	return v.len == 0 || (v.p >= in.p && v.p + v.len <= in.p + in.len);
}

/* Runs every reader over v and what they find, to a bounded depth: no span may leave v. */
static int walk_garbage(struct json_span v, int depth, char *why, size_t whylen)
{
	struct json_member m[2] = { { "model", { NULL, 0 }, 0 }, { "a", { NULL, 0 }, 0 } };
	struct json_span e;
	size_t at = 0;
	double d;
	size_t i;

	(void)json_type_of(v);
	(void)json_string_nonempty(v);
	(void)json_string_strlen(v);
	(void)json_number(v, &d);
	json_members(v, m, 2);
	for (i = 0; i < 2; i++) {
		if (!inside(v, m[i].v)) {
			snprintf(why, whylen, "json_members: a span outside the text");
			return -1;
		}
	}
	while (json_next(v, &at, &e)) {
		if (!inside(v, e) || e.len == 0) {
			snprintf(why, whylen, "json_next: a span outside the text, or empty");
			return -1;
		}
		if (depth < GARBAGE_DEPTH && walk_garbage(e, depth + 1, why, whylen))
			return -1;
	}
	return 0;
}

/* ---- json_member_span and splicing ---- */

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

/* Checks json_member_span on one key. Returns 0 when it agrees with cJSON, else -1. */
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

/*
 * json_check_members against json_check and json_members, on all the
 * top-level keys of root, an object (and "model"), at once: the same
 * verdict, counts and spans. On a text that is not an object (root NULL),
 * every member must be found nowhere.
 */
static int check_fused(const char *text, size_t len, bool accepted, const cJSON *root,
		       char *why, size_t whylen)
{
	struct json_span all = { text, len };
	struct json_member *a;
	struct json_member *b;
	const cJSON *c;
	size_t n = 1;
	size_t i;
	int rc = 0;

	cJSON_ArrayForEach(c, root)
		n++;
	a = calloc(n, sizeof(*a));
	b = calloc(n, sizeof(*b));
	if (!a || !b)
		abort();
	a[0].key = b[0].key = "model";
	n = 1;
	cJSON_ArrayForEach(c, root) {
		a[n].key = b[n].key = c->string;
		n++;
	}
	if ((json_check_members(text, len, NULL, a, n) == 0) != accepted) {
		snprintf(why, whylen, "json_check_members and json_check disagree");
		rc = -1;
	}
	if (root)
		json_members(all, b, n);
	for (i = 0; i < n && !rc; i++) {
		if (a[i].count != b[i].count || a[i].v.p != b[i].v.p || a[i].v.len != b[i].v.len) {
			snprintf(why, whylen, "key \"%s\": json_check_members found it %u times "
				 "(%.*s), json_members %u (%.*s)", a[i].key, a[i].count,
				 (int)a[i].v.len, a[i].v.p ? a[i].v.p : "", b[i].count,
				 (int)b[i].v.len, b[i].v.p ? b[i].v.p : "");
			rc = -1;
		}
	}
	free(a);
	free(b);
	return rc;
}

/* The verdicts: json_check, json_parse_whole and the reference must agree. */
static int check_verdict(const char *text, size_t len, bool *accepted, char *why,
			 size_t whylen)
{
	size_t bad_at = len + 1;
	bool got = json_check(text, len, &bad_at) == 0;
	bool want = reference_accepts(text, len);
	cJSON *root = json_parse_whole(text, len);

	*accepted = got;
	cJSON_Delete(root);
	if (got != want) {
		snprintf(why, whylen, "json_check %s it, the reference %s it", got ? "accepts" :
			 "refuses", want ? "accepts" : "refuses");
		return -1;
	}
	if ((root != NULL) != got) {
		snprintf(why, whylen, "json_parse_whole disagrees with json_check");
		return -1;
	}
	if (!got && bad_at > len) {
		snprintf(why, whylen, "json_check refuses it at %zu, past its %zu bytes", bad_at,
			 len);
		return -1;
	}
	return 0;
}

int jsondiff_check(const char *text, size_t len, char *why, size_t whylen)
{
	struct json_span all = { text, len };
	const cJSON *c;
	cJSON *root;
	bool accepted;
	int rc = 1;

	if (check_verdict(text, len, &accepted, why, whylen) ||
	    walk_garbage(all, 0, why, whylen))
		return -1;
	if (!accepted)
		return check_fused(text, len, false, NULL, why, whylen);
	root = json_parse_whole(text, len);
	if (!root) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (check_fused(text, len, true, cJSON_IsObject(root) ? root : NULL, why, whylen)) {
		cJSON_Delete(root);
		return -1;
	}
	/* The value alone, as a reader's span of it would be. */
	while (all.len && json_is_ws(all.p[0])) {
		all.p++;
		all.len--;
	}
	while (all.len && json_is_ws(all.p[all.len - 1]))
		all.len--;
	if (compare_value(all, root, 0, why, whylen)) {
		rc = -1;
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		rc = 0;
		goto out;
	}
	if (check_key(text, len, root, "model", why, whylen))
		rc = -1;
	cJSON_ArrayForEach(c, root) {
		if (rc < 0)
			break;
		if (c->string && check_key(text, len, root, c->string, why, whylen))
			rc = -1;
	}
out:
	cJSON_Delete(root);
	return rc;
}
