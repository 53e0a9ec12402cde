/*
 * outfile: whole files through PATH.tmp, synced, then renamed.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"

/* Writes all of data to fd. Returns 0 or a negative errno. */
static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int outfile_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	struct buf tmp = { 0 };
	int fd;
	int rc;

	if (buf_printf(&tmp, "%s.tmp", path)) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		return -ENOMEM;
	}
	fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp.data, strerror(-rc));
		goto out_free;
	}
	rc = write_all(fd, data, len);
	/* A disk that fills up may say so only when the data is written back. */
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc && errno != EINTR)
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "cannot write %s: %s", tmp.data, strerror(-rc));
		goto out_free;
	}
	if (rename(tmp.data, path)) {
		rc = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp.data, path, strerror(-rc));
	}
out_free:
	buf_free(&tmp);
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
