/*
 * tmpdir: a temporary directory for a unit test — made under /tmp, written
 * into, emptied and removed at the suite's teardown.
 */
#ifndef FAULTLINE_TMPDIR_H
#define FAULTLINE_TMPDIR_H

#include <stddef.h>

/* Makes /tmp/fl-TAG-test-XXXXXX into out. Returns 0 or -1. */
int tmpdir_make(char *out, size_t len, const char *tag);

/* Removes every file of dir (not subdirectories), keeping dir. */
void tmpdir_empty(const char *dir);

/* Removes dir and everything under it. */
void tmpdir_remove(const char *dir);

/* Writes len bytes of data to DIR/name (created or truncated). Returns 0 or -1. */
int tmpdir_write(const char *dir, const char *name, const char *data, size_t len);

/* DIR/name's whole contents, NUL-terminated (the caller frees them); NULL when it cannot be read. */
char *tmpdir_read(const char *dir, const char *name);

/* Makes the directory DIR/name. Returns 0 or -1 (errno says why). */
int tmpdir_mkdir(const char *dir, const char *name);

/*
 * The one entry of dir (dot-files left out) as DIR/ENTRY into out: a
 * run's one stamp directory. Returns how many entries there are (out is
 * set when there is one), or -1 when dir cannot be read.
 */
int tmpdir_only_entry(const char *dir, char *out, size_t len);

#endif
