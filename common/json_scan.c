/*
 * json_scan: checking JSON text, and reading values out of it by their
 * bytes.
 */
#include "common/json_scan.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

bool json_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline size_t skip_ws(const char *s, size_t len, size_t i)
{
	/* Most bytes are past ' ': one compare says so. */
	while (i < len && (unsigned char)s[i] <= ' ' && json_is_ws(s[i]))
		i++;
	return i;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The value of four hex digits at p (n bytes left), or -1 when they are not. */
static long hex4(const char *p, size_t n)
{
	long v = 0;
	size_t i;

	if (n < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* ---- strings' escapes, read as cJSON reads them ---- */

/* Writes code point cp as UTF-8 into out (4 bytes); returns its length. */
static size_t utf8_put(unsigned long cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Decodes the escape at s[*i] ('\\', e the string's end) into out (4
 * bytes), as cJSON does: the two-character escapes, \uXXXX, and a
 * surrogate pair as one code point. Advances *i past it. Returns the
 * length written, or 0 for an escape cJSON refuses.
 */
static size_t unescape(const char *s, size_t e, size_t *i, char *out)
{
	static const char from[] = "bfnrt\"\\/";
	static const char to[] = "\b\f\n\r\t\"\\/";
	const char *one;
	long hi;
	long lo;

	if (*i + 1 >= e)
		return 0;
	if (s[*i + 1] != 'u') {
		one = strchr(from, s[*i + 1]);
		if (!one || !*one)
			return 0;
		*out = to[one - from];
		*i += 2;
		return 1;
	}
	hi = hex4(s + *i + 2, e - *i - 2);
	if (hi < 0 || (hi >= 0xdc00 && hi <= 0xdfff))
		return 0;
	*i += 6;
	if (hi < 0xd800 || hi > 0xdbff)
		return utf8_put((unsigned long)hi, out);
	if (*i + 1 >= e || s[*i] != '\\' || s[*i + 1] != 'u')
		return 0;
	lo = hex4(s + *i + 2, e - *i - 2);
	if (lo < 0xdc00 || lo > 0xdfff)
		return 0;
	*i += 6;
	return utf8_put(0x10000 + (((unsigned long)hi & 0x3ff) << 10 | ((unsigned long)lo & 0x3ff)),
			out);
}

/* Whether the string between s[k] and s[e] (its quotes excluded) says key, unescaped. */
static bool key_is(const char *s, size_t k, size_t e, const char *key)
{
	char u[4];
	size_t n = 0;
	size_t ulen;
	size_t t;

	while (k < e) {
		if (s[k] != '\\') {
			if (key[n] == '\0' || s[k] != key[n])
				return false;
			n++;
			k++;
			continue;
		}
		ulen = unescape(s, e, &k, u);
		if (ulen == 0)
			return false;
		for (t = 0; t < ulen; t++) {
			if (key[n + t] == '\0' || key[n + t] != u[t])
				return false;
		}
		n += ulen;
	}
	return key[n] == '\0';
}

/* ---- json_check: the one definition of what is accepted ---- */

/* The bytes that end a run of a string's plain bytes: its quote, an escape, a NUL. */
static const bool string_stop[256] = { ['"'] = true, ['\\'] = true, [0] = true };

/*
 * The first index from k on whose byte string_stop holds, or len. Four
 * bytes a test while four are left: most of a text is strings' bytes.
 */
static inline size_t to_string_stop(const char *s, size_t len, size_t k)
{
	const unsigned char *u = (const unsigned char *)s;

	while (k + 4 <= len && !(string_stop[u[k]] | string_stop[u[k + 1]] |
				 string_stop[u[k + 2]] | string_stop[u[k + 3]]))
		k += 4;
	while (k < len && !string_stop[u[k]])
		k++;
	return k;
}

/*
 * s[*i] is '"': checks the string (a key when key), and moves *i past its
 * closing quote. On a bad one returns false with *i at the byte that breaks
 * a rule (a bad escape's backslash; len when it never closes).
 */
static bool check_string(const char *s, size_t len, size_t *i, bool key)
{
	size_t k = *i + 1;
	long cp;
	long lo;

	for (;;) {
		k = to_string_stop(s, len, k);
		if (k >= len || s[k] == '\0')
			break;
		if (s[k] == '"') {
			*i = k + 1;
			return true;
		}
		if (k + 1 >= len)
			break;
		if (s[k + 1] != '\0' && strchr("\"\\/bfnrt", s[k + 1])) {
			k += 2;
			continue;
		}
		if (s[k + 1] != 'u')
			break;
		cp = hex4(s + k + 2, len - k - 2);
		if (cp < 0 || (cp >= 0xdc00 && cp <= 0xdfff) || (key && cp == 0))
			break;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			/* A high surrogate: a low one must follow at once (cJSON's rule). */
			lo = k + 7 < len && s[k + 6] == '\\' && s[k + 7] == 'u'
				? hex4(s + k + 8, len - k - 8) : -1;
			if (lo < 0xdc00 || lo > 0xdfff)
				break;
			k += 6;
		}
		k += 6;
	}
	*i = k;
	return false;
}

/* Moves i past the digits at s[i]. */
static size_t digits(const char *s, size_t len, size_t i)
{
	while (i < len && is_digit(s[i]))
		i++;
	return i;
}

/* Checks the number at s[*i]: RFC 8259's form. */
static bool check_number(const char *s, size_t len, size_t *i)
{
	size_t k = *i;

	if (k < len && s[k] == '-')
		k++;
	if (k < len && s[k] == '0')
		k++;
	else if (k < len && s[k] >= '1' && s[k] <= '9')
		k = digits(s, len, k);
	else
		goto bad;
	if (k < len && s[k] == '.') {
		if (++k >= len || !is_digit(s[k]))
			goto bad;
		k = digits(s, len, k);
	}
	if (k < len && (s[k] == 'e' || s[k] == 'E')) {
		k++;
		if (k < len && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k >= len || !is_digit(s[k]))
			goto bad;
		k = digits(s, len, k);
	}
	*i = k;
	return true;
bad:
	*i = k;
	return false;
}

/* Checks the word w (n bytes: true, false, null) at s[*i]. */
static bool check_word(const char *s, size_t len, size_t *i, const char *w, size_t n)
{
	size_t k = 0;

	while (k < n && *i + k < len && s[*i + k] == w[k])
		k++;
	*i += k;
	return k == n;
}

/* Checks a value that is not an array or an object at s[*i]. */
static bool check_scalar(const char *s, size_t len, size_t *i)
{
	if (*i >= len)
		return false;
	switch (s[*i]) {
	case '"':
		return check_string(s, len, i, false);
	case 't':
		return check_word(s, len, i, "true", 4);
	case 'f':
		return check_word(s, len, i, "false", 5);
	case 'n':
		return check_word(s, len, i, "null", 4);
	default:
		return check_number(s, len, i);
	}
}

/*
 * Checks a member's key and its colon at s[*i], and moves *i past the
 * colon; [*k, *e) are the key's bytes, its quotes excluded.
 */
static bool check_key(const char *s, size_t len, size_t *i, size_t *k, size_t *e)
{
	*k = *i + 1;
	if (*i >= len || s[*i] != '"' || !check_string(s, len, i, true))
		return false;
	*e = *i - 1;
	*i = skip_ws(s, len, *i);
	if (*i >= len || s[*i] != ':')
		return false;
	(*i)++;
	return true;
}

/* Notes a member (key [k, e), value [v, end)) for each of the n keys of m it is. */
static inline void note_member(const char *s, size_t k, size_t e, size_t v, size_t end,
			       struct json_member *m, size_t n)
{
	char first = k < e ? s[k] : '\0';
	size_t j;

	for (j = 0; j < n; j++) {
		/* Most keys differ in their first byte: no need to unescape them. */
		if (first != m[j].key[0] && first != '\\')
			continue;
		if (key_is(s, k, e, m[j].key) && m[j].count++ == 0)
			m[j].v = (struct json_span){ s + v, end - v };
	}
}

/* Finds nothing: every member of m absent. */
static void found_none(struct json_member *m, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		m[j].v = (struct json_span){ NULL, 0 };
		m[j].count = 0;
	}
}

int json_check(const char *s, size_t len, size_t *bad_at)
{
	return json_check_members(s, len, bad_at, NULL, 0);
}

int json_check_members(const char *s, size_t len, size_t *bad_at, struct json_member *m,
		       size_t n)
{
	bool is_obj[JSON_DEPTH_MAX];	/* what each open bracket opened */
	size_t depth = 0;
	size_t i = 0;
	size_t k = 0;	/* the top-level member's key and value */
	size_t e = 0;
	size_t v = 0;
	size_t kk;	/* any member's key */
	size_t ke;
	bool obj;

	found_none(m, n);
	for (;;) {
		/* A value at i. */
		i = skip_ws(s, len, i);
		if (depth == 1 && is_obj[0])
			v = i;
		if (i < len && (s[i] == '{' || s[i] == '[')) {
			if (depth == JSON_DEPTH_MAX)
				goto bad;
			obj = s[i] == '{';
			is_obj[depth++] = obj;
			i = skip_ws(s, len, i + 1);
			if (i < len && s[i] == (obj ? '}' : ']')) {
				i++;
				depth--;
			} else if (!obj) {
				continue;
			} else if (!check_key(s, len, &i, &kk, &ke)) {
				goto bad;
			} else {
				if (depth == 1) {
					k = kk;
					e = ke;
				}
				continue;
			}
		} else if (!check_scalar(s, len, &i)) {
			goto bad;
		}
		/* After a value: the brackets it closes, then a comma and the next. */
		for (;;) {
			if (depth == 1 && is_obj[0])
				note_member(s, k, e, v, i, m, n);
			i = skip_ws(s, len, i);
			if (depth == 0)
				goto out;
			obj = is_obj[depth - 1];
			if (i < len && s[i] == (obj ? '}' : ']')) {
				i++;
				depth--;
				continue;
			}
			if (i >= len || s[i] != ',')
				goto bad;
			i = skip_ws(s, len, i + 1);
			if (obj && !check_key(s, len, &i, &kk, &ke))
				goto bad;
			if (obj && depth == 1) {
				k = kk;
				e = ke;
			}
			break;
		}
	}
out:
	if (i == len)
		return 0;
bad:
	found_none(m, n);
	if (bad_at)
		*bad_at = i < len ? i : len;
	return -EINVAL;
}

/* ---- reading an accepted text ---- */

/* s[i] is '"': the index of the closing quote, or len when there is none. */
static size_t string_end(const char *s, size_t len, size_t i)
{
	for (i = to_string_stop(s, len, i + 1); i < len && s[i] != '"';
	     i = to_string_stop(s, len, i))
		i += s[i] == '\\' ? 2 : 1;	/* an escape, or a NUL: not an accepted text's */
	return i < len ? i : len;
}

/* Whether c ends a number or a word: white space, a comma, a closing bracket. */
static bool ends_scalar(char c)
{
	return json_is_ws(c) || c == ',' || c == '}' || c == ']' || c == '\0';
}

/* The bytes skip_value stops at inside an array or object: a quote, a bracket. */
static const bool nest_stop[256] = {
	['"'] = true, ['{'] = true, ['['] = true, ['}'] = true, [']'] = true,
};

/* The index after the value at s[i] (an accepted text), at most len. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	int depth = 0;

	if (i < len && s[i] == '"') {
		i = string_end(s, len, i);
		return i < len ? i + 1 : len;
	}
	if (i < len && s[i] != '{' && s[i] != '[') {
		while (i < len && !ends_scalar(s[i]))
			i++;
		return i;
	}
	for (;; i++) {
		while (i < len && !nest_stop[(unsigned char)s[i]])
			i++;
		if (i >= len)
			return len;
		if (s[i] == '"') {
			i = string_end(s, len, i);
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (--depth == 0) {
			return i + 1;
		}
	}
}

/* The offset of v's value: past any white space before it. */
static size_t value_at(struct json_span v)
{
	return skip_ws(v.p, v.len, 0);
}

enum json_type json_type_of(struct json_span v)
{
	size_t i = value_at(v);

	if (i >= v.len)
		return JSON_NONE;
	switch (v.p[i]) {
	case '"':
		return JSON_STRING;
	case '{':
		return JSON_OBJECT;
	case '[':
		return JSON_ARRAY;
	case 't':
		return JSON_TRUE;
	case 'f':
		return JSON_FALSE;
	case 'n':
		return JSON_NULL;
	default:
		return v.p[i] == '-' || is_digit(v.p[i]) ? JSON_NUMBER : JSON_NONE;
	}
}

/*
 * Looks up the n keys of m among the members of the object at s[i] ('{')
 * and returns the index after its closing brace (len when there is none);
 * with first, it stops at the first member that is m[0] (for one key: the
 * first, all json_get needs), and what it returns means nothing.
 */
static size_t object_members(const char *s, size_t len, size_t i, struct json_member *m,
			     size_t n, bool first)
{
	found_none(m, n);
	i = skip_ws(s, len, i + 1);
	while (i < len && s[i] == '"') {
		size_t k = i + 1;
		size_t e = string_end(s, len, i);
		size_t v;

		i = skip_ws(s, len, e + (e < len));
		if (i >= len || s[i] != ':')
			break;
		v = skip_ws(s, len, i + 1);
		i = skip_value(s, len, v);
		note_member(s, k, e, v, i, m, n);
		if (first && m[0].count)
			break;
		i = skip_ws(s, len, i);
		if (i < len && s[i] == ',')
			i = skip_ws(s, len, i + 1);
	}
	return i < len && s[i] == '}' ? i + 1 : len;
}

int json_members(struct json_span obj, struct json_member *m, size_t n)
{
	size_t i = value_at(obj);

	if (i >= obj.len || obj.p[i] != '{') {
		found_none(m, n);
		return -EINVAL;
	}
	object_members(obj.p, obj.len, i, m, n, false);
	return 0;
}

struct json_span json_get(struct json_span obj, const char *key)
{
	struct json_member m = { key, { NULL, 0 }, 0 };
	size_t i = value_at(obj);

	if (i < obj.len && obj.p[i] == '{')
		object_members(obj.p, obj.len, i, &m, 1, true);
	return m.v;
}

bool json_has_items(struct json_span v)
{
	size_t i = value_at(v);

	if (i >= v.len || (v.p[i] != '[' && v.p[i] != '{'))
		return false;
	i = skip_ws(v.p, v.len, i + 1);
	return i < v.len && v.p[i] != ']' && v.p[i] != '}';
}

/*
 * Where the item of v (an array or object) after the one that ends at at
 * begins (at 0: the first item), past a member's key; len when there is
 * none.
 */
static size_t item_at(struct json_span v, size_t at)
{
	const char *s = v.p;
	size_t len = v.len;
	size_t i = value_at(v);
	bool obj;

	if (i >= len || (s[i] != '[' && s[i] != '{'))
		return len;
	obj = s[i] == '{';
	if (at == 0) {
		i = skip_ws(s, len, i + 1);
	} else {
		i = skip_ws(s, len, at);
		if (i >= len || s[i] != ',')
			return len;
		i = skip_ws(s, len, i + 1);
	}
	if (obj) {
		if (i >= len || s[i] != '"')
			return len;
		i = string_end(s, len, i);
		i = skip_ws(s, len, i + (i < len));
		if (i >= len || s[i] != ':')
			return len;
		i = skip_ws(s, len, i + 1);
	}
	return i < len && s[i] != ']' && s[i] != '}' ? i : len;
}

bool json_next(struct json_span v, size_t *at, struct json_span *item)
{
	size_t i = item_at(v, *at);
	size_t e;

	if (i >= v.len)
		return false;
	e = skip_value(v.p, v.len, i);
	if (e <= i)
		return false;
	*item = (struct json_span){ v.p + i, e - i };
	*at = e;
	return true;
}

bool json_next_members(struct json_span v, size_t *at, struct json_member *m, size_t n)
{
	size_t i = item_at(v, *at);
	size_t e;

	found_none(m, n);
	if (i >= v.len)
		return false;
	if (v.p[i] == '{')
		e = object_members(v.p, v.len, i, m, n, false);
	else
		e = skip_value(v.p, v.len, i);
	if (e <= i)
		return false;
	*at = e;
	return true;
}

bool json_string_nonempty(struct json_span v)
{
	const char *s = v.p;
	size_t len = v.len;
	size_t i = value_at(v);

	if (i + 1 >= len || s[i] != '"' || s[i + 1] == '"')
		return false;
	/* cJSON cuts the text at a \u0000: one first is an empty text. */
	return !(s[i + 1] == '\\' && i + 2 < len && s[i + 2] == 'u' &&
		 hex4(s + i + 3, len - i - 3) == 0);
}

size_t json_string_strlen(struct json_span v)
{
	const char *s = v.p;
	size_t len = v.len;
	size_t i = value_at(v);
	size_t n = 0;
	size_t run;
	size_t ulen;
	char u[4];

	if (i >= len || s[i] != '"')
		return 0;
	for (i++; i < len;) {
		run = to_string_stop(s, len, i);
		n += run - i;
		i = run;
		if (i >= len || s[i] == '"')
			break;
		if (s[i] == '\0') {
			n++;	/* not in an accepted text: counted as a byte */
			i++;
			continue;
		}
		ulen = unescape(s, len, &i, u);
		if (ulen == 0 || u[0] == '\0')
			break;	/* a \u0000: where cJSON's text ends */
		n += ulen;
	}
	return n;
}

bool json_number(struct json_span v, double *d)
{
	char small[64];
	char point;
	size_t i = value_at(v);
	size_t k;
	size_t n;
	char *num = small;
	char *end;
	double whole = 0;
	bool ok;

	if (i >= v.len || (v.p[i] != '-' && !is_digit(v.p[i])))
		return false;
	/*
	 * Up to 15 digits and nothing else (a token count) is a whole number
	 * below 2^53: exact as a double, so strtod would give just this.
	 */
	for (k = i; k < v.len && k - i < 15 && is_digit(v.p[k]); k++)
		whole = whole * 10 + (v.p[k] - '0');
	if (k > i && (k == v.len || v.p[k] == '\0' || !strchr("0123456789+-eE.", v.p[k]))) {
		*d = whole;
		return true;
	}
	/* cJSON's own reading: these bytes, '.' as the locale's point, strtod. */
	for (k = i; k < v.len && v.p[k] != '\0' && strchr("0123456789+-eE.", v.p[k]); k++)
		;
	n = k - i;
	if (n >= sizeof(small)) {
		num = malloc(n + 1);
		if (!num)
			return false;
	}
	point = localeconv()->decimal_point[0];
	for (k = 0; k < n; k++)
		num[k] = v.p[i + k] == '.' ? point : v.p[i + k];
	num[n] = '\0';
	*d = strtod(num, &end);
	ok = end != num;
	if (num != small)
		free(num);
	return ok;
}

cJSON *json_parse_span(struct json_span v)
{
	return v.len ? cJSON_ParseWithLengthOpts(v.p, v.len, NULL, false) : NULL;
}

/* ---- strings and spans as written ---- */

bool json_string_has_nul(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
			return true;
		i++;	/* the escaped character: a '\\' there escapes nothing after it */
	}
	return false;
}

int json_unescape(struct buf *b, const char *s, size_t len)
{
	char u[4];
	size_t i = 0;
	size_t run;
	size_t n;
	int rc = 0;

	if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
		s++;
		len -= 2;
	}
	while (!rc && i < len) {
		run = i;
		while (i < len && s[i] != '\\')
			i++;
		rc = buf_append(b, s + run, i - run);
		if (rc || i == len)
			break;
		n = unescape(s, len, &i, u);
		if (n == 0)
			return -EINVAL;
		rc = buf_append(b, u, n);
	}
	return rc ? -ENOMEM : 0;
}

int json_member_span(const char *s, size_t len, const char *key, size_t *start, size_t *end)
{
	struct json_member m = { key, { NULL, 0 }, 0 };

	if (json_members((struct json_span){ s, len }, &m, 1))
		return -EINVAL;
	if (m.count == 0)
		return -ENOENT;
	if (m.count > 1)
		return -EEXIST;
	*start = (size_t)(m.v.p - s);
	*end = *start + m.v.len;
	return 0;
}

int json_array_next(const char *s, size_t len, size_t *at, size_t *start, size_t *end)
{
	size_t i = skip_ws(s, len, *at);

	if (*at == 0) {
		if (i >= len || s[i] != '[')
			return -EINVAL;
		i = skip_ws(s, len, i + 1);
	} else if (i < len && s[i] == ',') {
		i = skip_ws(s, len, i + 1);
	}
	if (i >= len || s[i] == ']') {
		*at = i;
		return -ENOENT;
	}
	*start = i;
	*end = skip_value(s, len, i);
	*at = *end > i ? *end : len;
	return 0;
}
