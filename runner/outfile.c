/*
 * outfile: whole files through PATH.tmp, synced, then renamed.
 */
#include "runner/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/recfile.h"

/* Writes all of data to fd. Returns 0 or a negative errno. */
int outfile_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	struct recfile f;
	int rc;

	rc = recfile_open(&f, path, false, NULL);
	if (rc) {
		snprintf(err, errlen, "cannot create %s.tmp: %s", path, strerror(-rc));
		return rc;
	}
	rc = recfile_write(&f, data, len);
	if (rc) {
		recfile_close_short(&f);
		snprintf(err, errlen, "cannot write %s.tmp: %s", path, strerror(-rc));
		return rc;
	}
	/* Flushed, synced (a full disk may say so only then), closed, renamed. */
	rc = recfile_commit(&f);
	if (rc)
		snprintf(err, errlen, "cannot write %s.tmp: %s", path, strerror(-rc));
	return rc;
}

int outfile_write_text(const char *path, const char *text, char *err, size_t errlen)
{
	return outfile_write(path, text, strlen(text), err, errlen);
}

int outfile_write_json(const char *path, const cJSON *root, char *err, size_t errlen)
{
	struct buf b = { 0 };
	char *text = cJSON_Print(root);
	int rc;

	if (!text || buf_puts(&b, text) || buf_puts(&b, "\n")) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		rc = -ENOMEM;
		goto out_free;
	}
	rc = outfile_write(path, b.data, b.len, err, errlen);
out_free:
	free(text);
	buf_free(&b);
	return rc;
}
