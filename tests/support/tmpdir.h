/*
 * tmpdir: a flat temporary directory for a unit test — made under /tmp,
 * emptied and removed at the suite's teardown.
 */
#ifndef FAULTLINE_TMPDIR_H
#define FAULTLINE_TMPDIR_H

#include <stddef.h>

/* Makes /tmp/fl-TAG-test-XXXXXX into out. Returns 0 or -1. */
int tmpdir_make(char *out, size_t len, const char *tag);

/* Removes every file of dir (not subdirectories), keeping dir. */
void tmpdir_empty(const char *dir);

/* tmpdir_empty, then removes dir itself. */
void tmpdir_remove(const char *dir);

#endif
