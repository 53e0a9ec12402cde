/*
 * json: cJSON helpers.
 */
#include "common/json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- what cJSON takes that JSON does not ---- */

bool json_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
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

/* Whether the string ending at s[i - 1] is an object key: a ':' follows it. */
static bool is_key(const char *s, size_t len, size_t i)
{
	while (i < len && json_is_ws(s[i]))
		i++;
	return i < len && s[i] == ':';
}

/*
 * The offset of the first byte where text breaks a rule of JSON that cJSON
 * does not hold it to (json_parse_whole says which), or len when none does.
 * Only a text cJSON also accepts is then known to be JSON.
 */
static size_t lax_at(const char *s, size_t len)
{
	size_t at;
	size_t i = 0;
	bool nul;

	if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		return 0;
	while (i < len) {
		if (s[i] != '"') {
			if ((unsigned char)s[i] <= 0x20 && !json_is_ws(s[i]))
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
		if (nul && is_key(s, len, i))
			return at;
	}
	return len;
}

/* ---- loading, writing, escaping ---- */

cJSON *json_load_file(const char *path, char *err, size_t errlen)
{
	struct buf b = { 0 };
	char chunk[65536];
	const char *end = NULL;
	cJSON *root = NULL;
	FILE *fp;
	size_t n;

	fp = fopen(path, "rb");
	if (!fp) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (buf_append(&b, chunk, n)) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out_close;
		}
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		goto out_close;
	}
	root = cJSON_ParseWithLengthOpts(b.data ? b.data : "", b.len, &end, 0);
	if (root) {
		/* One value per file: anything but white space after it is an error. */
		while (end < b.data + b.len && json_is_ws(*end))
			end++;
		if (end == b.data + b.len)
			end = b.data + lax_at(b.data, b.len);
		if (end < b.data + b.len) {
			cJSON_Delete(root);
			root = NULL;
		}
	}
	if (!root) {
		int line = 1;
		int col = 1;
		const char *p;

		for (p = b.data; p && end && p < end; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		snprintf(err, errlen, "%s:%d:%d: invalid JSON", path, line, col);
	}
out_close:
	fclose(fp);
	buf_free(&b);
	return root;
}

int json_escape_chars(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len;
	const unsigned char *run;
	int rc = buf_reserve(b, len);

	while (!rc && p < end) {
		/* Characters that need no escape go in runs, not one by one. */
		run = p;
		while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			rc = buf_append(b, run, (size_t)(p - run));
		if (rc || p == end)
			break;
		switch (*p) {
		case '"':
			rc = buf_append(b, "\\\"", 2);
			break;
		case '\\':
			rc = buf_append(b, "\\\\", 2);
			break;
		case '\n':
			rc = buf_append(b, "\\n", 2);
			break;
		case '\r':
			rc = buf_append(b, "\\r", 2);
			break;
		case '\t':
			rc = buf_append(b, "\\t", 2);
			break;
		default:
			rc = buf_printf(b, "\\u%04x", *p);
		}
		p++;
	}
	return rc;
}

int json_escape(struct buf *b, const char *s)
{
	size_t len = strlen(s);
	int rc = buf_reserve(b, len + 2);

	if (!rc)
		rc = buf_append(b, "\"", 1);
	if (!rc)
		rc = json_escape_chars(b, s, len);
	if (!rc)
		rc = buf_append(b, "\"", 1);
	return rc;
}

static int json_string_or_null(struct buf *b, const char *s)
{
	return s ? json_escape(b, s) : buf_puts(b, "null");
}

int json_openai_error(struct buf *b, const char *message, const char *type,
		      const char *param, const char *code)
{
	int rc = 0;

	rc |= buf_puts(b, "{\"error\":{\"message\":");
	rc |= json_escape(b, message);
	rc |= buf_puts(b, ",\"type\":");
	rc |= json_escape(b, type);
	rc |= buf_puts(b, ",\"param\":");
	rc |= json_string_or_null(b, param);
	rc |= buf_puts(b, ",\"code\":");
	rc |= json_string_or_null(b, code);
	rc |= buf_puts(b, "}}");
	return rc ? -ENOMEM : 0;
}

cJSON *json_parse_whole(const char *text, size_t len)
{
	if (memchr(text, '\0', len) || lax_at(text, len) < len)
		return NULL;
	return cJSON_ParseWithLengthOpts(text, len + 1, NULL, true);
}

/*
 * The length of the well-formed UTF-8 sequence at s (avail bytes there),
 * or 0 when the bytes there are not one (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF).
 */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char lo = 0x80;
	unsigned char hi = 0xbf;
	size_t n;
	size_t i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return n;
}

void json_copy_cut(char *out, size_t len, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t avail = strlen(s);
	size_t o = 0;
	size_t i = 0;

	if (len == 0)
		return;
	if (max > len - 1)
		max = len - 1;
	while (i < avail) {
		size_t n = utf8_seq(u + i, avail - i);

		if (n == 0) {
			/* Not text: shown as \xNN, so what is echoed stays UTF-8. */
			if (o + 4 > max)
				break;
			snprintf(out + o, len - o, "\\x%02x", u[i]);
			o += 4;
			i++;
			continue;
		}
		if (o + n > max)
			break;
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
}

const char *json_error_text(const cJSON *root, const char *data)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(err) ? err : root,
							    "message");

	return cJSON_IsString(msg) ? msg->valuestring
	     : cJSON_IsString(err) ? err->valuestring
	     : root ? "" : data;
}

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

const char *json_get_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- the byte scanner (json_member_span) ---- */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && json_is_ws(s[i]))
		i++;
	return i;
}

/* s[i] is '"': the index of the closing quote, or len when there is none. */
static size_t string_end(const char *s, size_t len, size_t i)
{
	for (i++; i < len && s[i] != '"'; i++) {
		if (s[i] == '\\')
			i++;
	}
	return i < len ? i : len;
}

/* The index after the value at s[i] (valid JSON assumed), at most len. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	int depth = 0;

	if (i < len && s[i] == '"') {
		i = string_end(s, len, i);
		return i < len ? i + 1 : len;
	}
	if (i < len && s[i] != '{' && s[i] != '[') {
		while (i < len && s[i] && !json_is_ws(s[i]) && !strchr(",}]", s[i]))
			i++;
		return i;
	}
	for (; i < len; i++) {
		if (s[i] == '"') {
			i = string_end(s, len, i);
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return len;
}

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
static bool key_is(const char *s, size_t k, size_t e, const char *key, size_t klen)
{
	char u[4];
	size_t n = 0;
	size_t ulen;

	while (k < e) {
		if (s[k] != '\\') {
			if (n >= klen || s[k] != key[n])
				return false;
			n++;
			k++;
			continue;
		}
		ulen = unescape(s, e, &k, u);
		if (ulen == 0 || klen - n < ulen || memcmp(u, key + n, ulen) != 0)
			return false;
		n += ulen;
	}
	return n == klen;
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
	size_t klen = strlen(key);
	bool found = false;
	size_t i = skip_ws(s, len, 0);

	if (i >= len || s[i] != '{')
		return -EINVAL;
	i = skip_ws(s, len, i + 1);
	while (i < len && s[i] == '"') {
		size_t k = i + 1;
		size_t e = string_end(s, len, i);
		size_t v;

		i = skip_ws(s, len, e + (e < len));
		if (i >= len || s[i] != ':')
			return -EINVAL;
		v = skip_ws(s, len, i + 1);
		i = skip_value(s, len, v);
		if (key_is(s, k, e, key, klen)) {
			if (found)
				return -EEXIST;
			found = true;
			*start = v;
			*end = i;
		}
		i = skip_ws(s, len, i);
		if (i < len && s[i] == ',')
			i = skip_ws(s, len, i + 1);
	}
	return found ? 0 : -ENOENT;
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

bool json_put(cJSON *o, const char *key, cJSON *item)
{
	if (!item)
		return false;
	if (!o || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}
