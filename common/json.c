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

/* ---- loading, writing, escaping ---- */

cJSON *json_load_file(const char *path, char *err, size_t errlen)
{
	struct buf b = { 0 };
	char chunk[65536];
	const char *text;
	cJSON *root = NULL;
	size_t bad_at = 0;
	int line = 1;
	int col = 1;
	FILE *fp;
	size_t n;
	size_t i;

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
	text = b.data ? b.data : "";
	if (json_check(text, b.len, &bad_at) == 0) {
		root = cJSON_ParseWithLengthOpts(text, b.len + 1, NULL, true);
		if (!root)
			snprintf(err, errlen, "%s: out of memory", path);
		goto out_close;
	}
	for (i = 0; i < bad_at; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(err, errlen, "%s:%d:%d: invalid JSON", path, line, col);
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
	if (json_check(text, len, NULL))
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

const char *json_get_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
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
