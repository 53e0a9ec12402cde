/*
 * recfile: atomically renamed result files and CSV/JSONL rows.
 */
#include "recfile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

int recfile_open(struct recfile *f, const char *path)
{
	struct buf tmp = { 0 };
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
	f->fp = fopen(tmp.data, "w");
	if (!f->fp) {
		rc = -errno;
		goto out_free;
	}
	f->tmp = buf_steal(&tmp);
	return 0;
out_free:
	free(f->path);
	f->path = NULL;
	buf_free(&tmp);
	return rc;
}

int recfile_write(struct recfile *f, const void *data, size_t len)
{
	if (fwrite(data, 1, len, f->fp) != len)
		return -EIO;
	f->dirty = true;
	return 0;
}

int recfile_flush(struct recfile *f)
{
	if (!f->dirty)
		return 0;
	f->dirty = false;
	return fflush(f->fp) ? -errno : 0;
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

	if (fflush(f->fp) || fsync(fileno(f->fp)))
		rc = -errno;
	if (fclose(f->fp) && !rc)
		rc = -errno;
	if (!rc && rename(f->tmp, f->path))
		rc = -errno;
	recfile_release(f);
	return rc;
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
	if (json)
		buf_puts(&r->b, "{");
}

static void row_sep(struct row *r, const char *name)
{
	if (r->nfields++)
		buf_puts(&r->b, ",");
	if (r->json) {
		json_escape(&r->b, name);
		buf_puts(&r->b, ":");
	}
}

static void csv_quote(struct buf *b, const char *v)
{
	const char *p;

	if (!strpbrk(v, ",\"\r\n")) {
		buf_puts(b, v);
		return;
	}
	buf_puts(b, "\"");
	for (p = v; *p; p++) {
		if (*p == '"')
			buf_puts(b, "\"\"");
		else
			buf_append(b, p, 1);
	}
	buf_puts(b, "\"");
}

void row_str(struct row *r, const char *name, const char *v)
{
	row_sep(r, name);
	if (r->json)
		v ? json_escape(&r->b, v) : buf_puts(&r->b, "null");
	else if (v)
		csv_quote(&r->b, v);
}

void row_int(struct row *r, const char *name, int64_t v)
{
	row_sep(r, name);
	buf_put_int(&r->b, (long long)v);
}

void row_num(struct row *r, const char *name, double v, int decimals)
{
	row_sep(r, name);
	if (isnan(v) || isinf(v)) {
		if (r->json)
			buf_puts(&r->b, "null");
		return;
	}
	buf_put_fixed(&r->b, v, decimals);
}

void row_bool(struct row *r, const char *name, bool v)
{
	row_sep(r, name);
	if (r->json)
		buf_puts(&r->b, v ? "true" : "false");
	else
		buf_puts(&r->b, v ? "1" : "0");
}

void row_end(struct row *r)
{
	buf_puts(&r->b, r->json ? "}\n" : "\n");
}

void row_free(struct row *r)
{
	buf_free(&r->b);
}
