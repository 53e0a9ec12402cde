/*
 * tmpdir: temporary directories for unit tests, and the files a test
 * writes into them.
 */
#define _XOPEN_SOURCE 700	/* nftw */
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tmpdir_make(char *out, size_t len, const char *tag)
{
	snprintf(out, len, "/tmp/fl-%s-test-XXXXXX", tag);
	return mkdtemp(out) ? 0 : -1;
}

void tmpdir_empty(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char path[1200];

	if (!dp)
		return;
	for (de = readdir(dp); de; de = readdir(dp)) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(dp);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tmpdir_remove(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int tmpdir_write(const char *dir, const char *name, const char *data, size_t len)
{
	char path[1200];
	FILE *fp;
	int rc = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	fp = fopen(path, "wb");
	if (!fp)
		return -1;
	if (fwrite(data, 1, len, fp) != len)
		rc = -1;
	if (fclose(fp))
		rc = -1;
	return rc;
}

char *tmpdir_read(const char *dir, const char *name)
{
	char path[1200];
	char *text = NULL;
	FILE *fp;
	long n;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return NULL;
	fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
		text = calloc(1, (size_t)n + 1);
		if (text && fread(text, 1, (size_t)n, fp) != (size_t)n) {
			free(text);
			text = NULL;
		}
	}
	fclose(fp);
	return text;
}

int tmpdir_mkdir(const char *dir, const char *name)
{
	char path[1200];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	return mkdir(path, 0755) ? -1 : 0;
}

int tmpdir_only_entry(const char *dir, char *out, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n++ == 0)
			snprintf(out, len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return n;
}
