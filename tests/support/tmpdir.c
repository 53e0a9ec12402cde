/*
 * tmpdir: flat temporary directories for unit tests.
 */
#include "tests/support/tmpdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void tmpdir_remove(const char *dir)
{
	tmpdir_empty(dir);
	rmdir(dir);
}
