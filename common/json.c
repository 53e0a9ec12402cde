/*
 * json: cJSON helpers.
 */
#include "json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
		while (end < b.data + b.len && strchr(" \t\r\n", *end))
			end++;
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

int json_escape(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *run;
	int rc = buf_reserve(b, strlen(s) + 2);

	if (rc)
		return rc;
	rc = buf_append(b, "\"", 1);
	while (!rc && *p) {
		/* Characters that need no escape go in runs, not one by one. */
		run = p;
		while (*p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			rc = buf_append(b, run, (size_t)(p - run));
		if (rc || !*p)
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
	if (memchr(text, '\0', len))
		return NULL;
	return cJSON_ParseWithLengthOpts(text, len + 1, NULL, true);
}

void json_copy_cut(char *out, size_t len, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	snprintf(out, len, "%.*s", (int)n, s);
}

const char *json_get_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* s[i] is '"': the index after the closing quote; *escaped when it has a '\\'. */
static size_t skip_string(const char *s, size_t len, size_t i, bool *escaped)
{
	for (i++; i < len && s[i] != '"'; i++) {
		if (s[i] == '\\') {
			*escaped = true;
			i++;
		}
	}
	return i + 1;
}

/* The index after the value at s[i] (valid JSON assumed). */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	bool esc = false;
	int depth = 0;

	if (i < len && s[i] == '"')
		return skip_string(s, len, i, &esc);
	if (i < len && s[i] != '{' && s[i] != '[') {
		while (i < len && !strchr(",}] \t\r\n", s[i]))
			i++;
		return i;
	}
	for (; i < len; i++) {
		if (s[i] == '"') {
			i = skip_string(s, len, i, &esc) - 1;
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return i;
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
		bool escaped = false;
		size_t k = i + 1;
		size_t klen_raw;
		size_t v;

		i = skip_string(s, len, i, &escaped);
		if (escaped)
			return -EINVAL;
		klen_raw = i - 1 - k;
		i = skip_ws(s, len, i);
		if (i >= len || s[i] != ':')
			return -EINVAL;
		v = skip_ws(s, len, i + 1);
		i = skip_value(s, len, v);
		if (klen_raw == klen && memcmp(s + k, key, klen) == 0) {
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

int json_write_file(const char *path, const cJSON *root)
{
	struct buf tmp = { 0 };
	char *text = cJSON_Print(root);
	FILE *fp;
	int rc = 0;

	if (!text || buf_printf(&tmp, "%s.tmp", path)) {
		rc = -ENOMEM;
		goto out;
	}
	fp = fopen(tmp.data, "w");
	if (!fp) {
		rc = -errno;
		goto out;
	}
	if (fputs(text, fp) < 0 || fputc('\n', fp) == EOF)
		rc = -EIO;
	if (fclose(fp) && !rc)
		rc = -errno;
	if (!rc && rename(tmp.data, path))
		rc = -errno;
	if (rc)
		unlink(tmp.data);
out:
	free(text);
	buf_free(&tmp);
	return rc;
}
