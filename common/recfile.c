/*
 * recfile: atomically renamed result files and CSV/JSONL rows.
 */
#include "common/recfile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/json.h"

/* Cuts an unfinished last line (a write the kill interrupted) off fp. */
static int cut_partial_line(FILE *fp, bool *resumed)
{
	char tail[4096];
	long end;
	long pos;
	size_t n;

	if (fseek(fp, 0, SEEK_END) || (end = ftell(fp)) < 0)
		return -errno;
	for (pos = end; pos > 0; pos -= (long)n) {
		n = pos < (long)sizeof(tail) ? (size_t)pos : sizeof(tail);
		if (fseek(fp, pos - (long)n, SEEK_SET) || fread(tail, 1, n, fp) != n)
			return -EIO;
		while (n && tail[n - 1] != '\n') {
			n--;
			pos--;
		}
		if (n)
			break;
		n = 0;
	}
	if (pos != end && ftruncate(fileno(fp), pos))
		return -errno;
	*resumed = pos > 0;
	return fseek(fp, 0, SEEK_END) ? -errno : 0;
}

int recfile_open(struct recfile *f, const char *path, bool resume, bool *resumed)
{
	struct buf tmp = { 0 };
	bool again = false;
	int rc;

	memset(f, 0, sizeof(*f));
	rc = buf_printf(&tmp, "%s.tmp", path);
	if (rc)
		goto out_free;
	f->path = strdup(path);
	if (!f->path) {
		rc = -ENOMEM;
		goto out_free;
	}
	if (resume)
		f->fp = fopen(tmp.data, "r+");
	if (f->fp) {
		rc = cut_partial_line(f->fp, &again);
		if (rc)
			goto out_close;
	} else {
		f->fp = fopen(tmp.data, "w");
		if (!f->fp) {
			rc = -errno;
			goto out_free;
		}
	}
	if (resumed)
		*resumed = again;
	f->tmp = buf_steal(&tmp);
	return 0;
out_close:
	fclose(f->fp);
	f->fp = NULL;
out_free:
	free(f->path);
	f->path = NULL;
	buf_free(&tmp);
	return rc;
}

int recfile_write(struct recfile *f, const void *data, size_t len)
{
	errno = 0;
	if (fwrite(data, 1, len, f->fp) != len)
		return errno ? -errno : -EIO;
	f->dirty = true;
	return 0;
}

int recfile_flush(struct recfile *f)
{
	if (!f->dirty)
		return 0;
	if (fflush(f->fp))
		return -errno;	/* still dirty: the next flush tries again */
	f->dirty = false;
	return 0;
}

/* Whether commits reach the disk before the rename (recfile_set_durable). */
static bool durable = true;

void recfile_set_durable(bool on)
{
	durable = on;
}

/* fsync, unless commits need not be durable. */
static int sync_fd(int fd)
{
	return durable ? fsync(fd) : 0;
}

/* Makes a rename in path's directory durable. */
static int sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	struct buf dir = { 0 };
	int fd;
	int rc = 0;

	if (!durable)
		return 0;
	if (buf_append(&dir, path, slash ? (size_t)(slash - path) + 1 : 0) ||
	    buf_puts(&dir, "."))
		return -ENOMEM;
	fd = open(dir.data, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	buf_free(&dir);
	return rc;
}

static void recfile_release(struct recfile *f)
{
	free(f->path);
	free(f->tmp);
	f->path = NULL;
	f->tmp = NULL;
	f->fp = NULL;
}

int recfile_commit(struct recfile *f)
{
	int rc = 0;

	if (fflush(f->fp) || sync_fd(fileno(f->fp)))
		rc = -errno;
	if (fclose(f->fp) && !rc)
		rc = -errno;
	if (!rc && rename(f->tmp, f->path))
		rc = -errno;
	if (!rc)
		rc = sync_dir(f->path);
	recfile_release(f);
	return rc;
}

int recfile_commit_tmp(const char *path)
{
	size_t len = strlen(path);
	char *tmp = malloc(len + sizeof(".tmp"));
	int fd;
	int rc = 0;

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", sizeof(".tmp"));
	fd = open(tmp, O_RDONLY);
	if (fd < 0)
		rc = -errno;
	if (!rc && sync_fd(fd))
		rc = -errno;
	if (fd >= 0 && close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (!rc)
		rc = sync_dir(path);
	free(tmp);
	return rc;
}

void recfile_close_short(struct recfile *f)
{
	fclose(f->fp);	/* its errors were the reason: said already */
	recfile_release(f);
}

void recfile_abandon(struct recfile *f)
{
	fclose(f->fp);
	unlink(f->tmp);
	recfile_release(f);
}

void row_begin(struct row *r, bool json)
{
	buf_reset(&r->b);
	r->json = json;
	r->nfields = 0;
	r->oom = false;
	if (json && buf_puts(&r->b, "{"))
		r->oom = true;
}

/* Notes a failed append: the row will not be written. */
static void row_check(struct row *r, int rc)
{
	if (rc)
		r->oom = true;
}

/* Whether a field name goes into JSON as it is (the usual: our own column names). */
static bool plain_name(const char *name, size_t *len)
{
	const unsigned char *p = (const unsigned char *)name;

	for (; *p; p++) {
		if (*p < 0x20 || *p == '"' || *p == '\\')
			return false;
	}
	*len = (size_t)(p - (const unsigned char *)name);
	return true;
}

int row_names(struct row *r, const char *const *names, size_t n)
{
	size_t len;
	size_t i;
	int rc = 0;

	free(r->key_at);
	buf_reset(&r->keys);
	r->names = NULL;
	r->nnames = 0;
	r->key_at = malloc((n + 1) * sizeof(*r->key_at));
	if (!r->key_at)
		return -ENOMEM;
	for (i = 0; !rc && i < n; i++) {
		r->key_at[i] = r->keys.len;
		if (plain_name(names[i], &len))
			rc = buf_append(&r->keys, "\"", 1) || buf_append(&r->keys, names[i], len) ||
			     buf_append(&r->keys, "\":", 2) ? -ENOMEM : 0;
		else
			rc = json_escape(&r->keys, names[i]) || buf_puts(&r->keys, ":") ? -ENOMEM : 0;
	}
	if (rc) {
		free(r->key_at);
		r->key_at = NULL;
		return rc;
	}
	r->key_at[n] = r->keys.len;
	r->names = names;
	r->nnames = n;
	return 0;
}

/* A JSON row's field under its declared name (row_names): the key as made. */
static bool row_sep_declared(struct row *r, const char *name)
{
	size_t i = (size_t)r->nfields;
	size_t n;
	char *d;

	if (i >= r->nnames || r->names[i] != name)
		return false;
	n = r->key_at[i + 1] - r->key_at[i];
	if (buf_reserve(&r->b, n + 1)) {
		r->oom = true;
		return true;
	}
	d = r->b.data + r->b.len;
	if (r->nfields++)
		*d++ = ',';
	memcpy(d, r->keys.data + r->key_at[i], n);
	r->b.len = (size_t)(d + n - r->b.data);
	r->b.data[r->b.len] = '\0';
	return true;
}

/*
 * The comma before a field, and a JSON row's "name": — written in one go,
 * since a simulated run writes millions of rows and this was half of it.
 */
static void row_sep(struct row *r, const char *name)
{
	size_t n = 0;
	char *d;

	if (r->json && row_sep_declared(r, name))
		return;
	if (r->json && !plain_name(name, &n)) {
		if (r->nfields++)
			row_check(r, buf_puts(&r->b, ","));
		row_check(r, json_escape(&r->b, name));
		row_check(r, buf_puts(&r->b, ":"));
		return;
	}
	if (buf_reserve(&r->b, n + 4)) {
		r->oom = true;
		return;
	}
	d = r->b.data + r->b.len;
	if (r->nfields++)
		*d++ = ',';
	if (r->json) {
		*d++ = '"';
		memcpy(d, name, n);
		d += n;
		*d++ = '"';
		*d++ = ':';
	}
	r->b.len = (size_t)(d - r->b.data);
	r->b.data[r->b.len] = '\0';
}

static int csv_quote(struct buf *b, const char *v)
{
	const char *p;
	int rc = 0;

	if (!strpbrk(v, ",\"\r\n"))
		return buf_puts(b, v);
	rc |= buf_puts(b, "\"");
	for (p = v; *p; p++)
		rc |= *p == '"' ? buf_puts(b, "\"\"") : buf_append(b, p, 1);
	rc |= buf_puts(b, "\"");
	return rc;
}

void row_str(struct row *r, const char *name, const char *v)
{
	row_sep(r, name);
	if (r->json)
		row_check(r, v ? json_escape(&r->b, v) : buf_puts(&r->b, "null"));
	else if (v)
		row_check(r, csv_quote(&r->b, v));
}

void row_int(struct row *r, const char *name, int64_t v)
{
	row_sep(r, name);
	row_check(r, buf_put_int(&r->b, (long long)v));
}

void row_num(struct row *r, const char *name, double v, int decimals)
{
	row_sep(r, name);
	if (isnan(v) || isinf(v)) {
		if (r->json)
			row_check(r, buf_puts(&r->b, "null"));
		return;
	}
	row_check(r, buf_put_fixed(&r->b, v, decimals));
}

void row_bool(struct row *r, const char *name, bool v)
{
	row_sep(r, name);
	if (r->json)
		row_check(r, buf_puts(&r->b, v ? "true" : "false"));
	else
		row_check(r, buf_puts(&r->b, v ? "1" : "0"));
}

int row_end(struct row *r)
{
	if (buf_puts(&r->b, r->json ? "}\n" : "\n"))
		r->oom = true;
	return r->oom ? -ENOMEM : 0;
}

int row_header(struct row *r, const char *const *names, size_t n)
{
	size_t i;

	row_begin(r, false);
	for (i = 0; i < n; i++)
		row_str(r, names[i], names[i]);
	return row_end(r);
}

void row_free(struct row *r)
{
	buf_free(&r->b);
	buf_free(&r->keys);
	free(r->key_at);
	r->key_at = NULL;
	r->names = NULL;
	r->nnames = 0;
}
