/*
 * csv: the result files' one CSV reader (RFC 4180, strictly); see csv.h.
 */
#include "common/csv.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"

int csv_error(char *err, const char *path, size_t line, const char *fmt, ...)
{
	struct buf b = { 0 };
	va_list ap;
	int rc;

	if (line)
		rc = buf_printf(&b, "%s:%zu: ", path, line);
	else
		rc = buf_printf(&b, "%s: ", path);
	va_start(ap, fmt);
	if (!rc)
		rc = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	snprintf(err, CFG_ERR_LEN, "%s", rc ? "out of memory" : b.data);
	buf_free(&b);
	return -EINVAL;
}

/* Reads a whole file into b. Returns 0 or a negative errno (-ENOENT…). */
int csv_read_file(const char *path, struct buf *b)
{
	char chunk[65536];
	FILE *fp = fopen(path, "rb");
	int rc = 0;

	if (!fp)
		return -errno;
	for (;;) {
		size_t n = fread(chunk, 1, sizeof(chunk), fp);

		if (n == 0)
			break;
		rc = buf_append(b, chunk, n);
		if (rc)
			goto out;
	}
	if (ferror(fp))
		rc = -EIO;
out:
	fclose(fp);
	return rc;
}

void csv_init(struct csv *c, const char *path, const char *data, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->path = path;
	c->s = data ? data : "";
	c->len = data ? len : 0;
	c->line = 1;
}

void csv_close(struct csv *c)
{
	buf_free(&c->fields);
	free(c->off);
	c->off = NULL;
}

const char *csv_field(const struct csv *c, size_t i)
{
	return c->fields.data + c->off[i];
}

/* Ends the current field, which began at start in c->fields. */
static int csv_end_field(struct csv *c, size_t start)
{
	int rc = buf_grow_array((void **)&c->off, &c->cap, c->nf + 1, sizeof(*c->off));

	if (rc)
		return rc;
	if (buf_append(&c->fields, "", 1))
		return -ENOMEM;
	c->off[c->nf++] = start;
	return 0;
}

/* Appends s[from, to) to the current field, rejecting NUL bytes. */
static int csv_take(struct csv *c, size_t from, size_t to, char *err)
{
	if (memchr(c->s + from, '\0', to - from))
		return csv_error(err, c->path, c->rec_line, "a NUL byte");
	if (to > from && buf_append(&c->fields, c->s + from, to - from))
		return -ENOMEM;
	return 0;
}

/* Reads a quoted field, c->pos just past its opening quote. */
static int csv_quoted(struct csv *c, char *err)
{
	for (;;) {
		size_t from = c->pos;
		int rc;

		while (c->pos < c->len && c->s[c->pos] != '"') {
			if (c->s[c->pos] == '\n')
				c->line++;
			c->pos++;
		}
		if (c->pos >= c->len)
			return csv_error(err, c->path, c->rec_line, "a quoted field is not closed");
		rc = csv_take(c, from, c->pos, err);
		if (rc)
			return rc;
		c->pos++;
		if (c->pos < c->len && c->s[c->pos] == '"') {
			rc = csv_take(c, c->pos, c->pos + 1, err);
			if (rc)
				return rc;
			c->pos++;
			continue;
		}
		if (c->pos < c->len && c->s[c->pos] != ',' && c->s[c->pos] != '\n' &&
		    c->s[c->pos] != '\r')
			return csv_error(err, c->path, c->rec_line,
					  "text after the closing quote of field %zu", c->nf + 1);
		return 0;
	}
}

/* Reads an unquoted field up to a comma, a line end or the end. */
static int csv_plain(struct csv *c, char *err)
{
	size_t from = c->pos;

	while (c->pos < c->len && c->s[c->pos] != ',' && c->s[c->pos] != '\n' &&
	       c->s[c->pos] != '\r') {
		if (c->s[c->pos] == '"')
			return csv_error(err, c->path, c->rec_line,
					  "a quote inside unquoted field %zu", c->nf + 1);
		c->pos++;
	}
	return csv_take(c, from, c->pos, err);
}

/*
 * Reads the next record into c->fields / c->off / c->nf. Returns 1, 0 at
 * the end of the file, or a negative errno (-EINVAL with err set).
 */
int csv_next(struct csv *c, char *err)
{
	buf_reset(&c->fields);
	c->nf = 0;
	if (c->pos >= c->len)
		return 0;
	c->rec_line = c->line;
	for (;;) {
		size_t start = c->fields.len;
		char ch;
		int rc;

		if (c->s[c->pos] == '"') {
			c->pos++;
			rc = csv_quoted(c, err);
		} else {
			rc = csv_plain(c, err);
		}
		if (rc)
			return rc;
		rc = csv_end_field(c, start);
		if (rc)
			return rc;
		if (c->pos >= c->len)
			return 1;
		ch = c->s[c->pos++];
		if (ch == ',') {
			if (c->pos >= c->len) {
				rc = csv_end_field(c, c->fields.len);
				return rc ? rc : 1;
			}
			continue;
		}
		if (ch == '\r') {
			if (c->pos >= c->len || c->s[c->pos] != '\n')
				return csv_error(err, c->path, c->rec_line,
						  "a carriage return not followed by a newline");
			c->pos++;
		}
		c->line++;
		return 1;
	}
}

/*
 * Reads the header and finds each of names[0..n) in it (idx[i]); a
 * missing or repeated column is an error. Returns 0 or a negative errno.
 */
int csv_header(struct csv *c, const char *const *names, size_t n, int *idx, char *err)
{
	size_t i;
	size_t j;
	int rc = csv_next(c, err);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return csv_error(err, c->path, 0, "empty file: expected a header line");
	for (i = 0; i < c->nf; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(csv_field(c, i), csv_field(c, j)) == 0)
				return csv_error(err, c->path, c->rec_line,
						  "column \"%.64s\" appears twice in the header",
						  csv_field(c, i));
		}
	}
	for (i = 0; i < n; i++) {
		idx[i] = -1;
		for (j = 0; j < c->nf; j++) {
			if (strcmp(csv_field(c, j), names[i]) == 0)
				idx[i] = (int)j;
		}
		if (idx[i] < 0)
			return csv_error(err, c->path, c->rec_line,
					  "no column \"%s\" in the header", names[i]);
	}
	return 0;
}

/* Reads the next data row, checking it is as wide as the header. */
int csv_row(struct csv *c, size_t width, char *err)
{
	int rc = csv_next(c, err);

	if (rc <= 0)
		return rc;
	if (c->nf == 1 && csv_field(c, 0)[0] == '\0' && width > 1)
		return csv_error(err, c->path, c->rec_line, "an empty line");
	if (c->nf != width)
		return csv_error(err, c->path, c->rec_line,
				  "expected %zu fields as in the header, got %zu", width, c->nf);
	return 1;
}

int csv_column(const struct csv *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nf; i++) {
		if (strcmp(csv_field(c, i), name) == 0)
			return (int)i;
	}
	return -1;
}

/* A number as a plain decimal; "" is NAN (none). Returns 0 or -EINVAL. */
int csv_num(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s) {
		*out = NAN;
		return 0;
	}
	if (strspn(s, "0123456789+-.eE") != strlen(s))
		return -EINVAL;
	v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

/* A whole number in [min, max]; "" is NAN. Returns 0 or -EINVAL. */
int csv_whole(const char *s, double min, double max, double *out)
{
	int rc = csv_num(s, out);

	if (rc || isnan(*out))
		return rc;
	if (*out != floor(*out) || *out < min || *out > max)
		return -EINVAL;
	return 0;
}
