/*
 * recfile: result files written under a temporary name ("PATH.tmp") and
 * renamed to PATH only when complete, so a reader never sees half a file;
 * and the CSV and JSON Lines row builders the per-request records use.
 */
#ifndef FAULTLINE_RECFILE_H
#define FAULTLINE_RECFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"

struct recfile {
	FILE *fp;
	char *path;	/* final name */
	char *tmp;	/* PATH.tmp, written while open */
	bool dirty;	/* written since the last flush */
};

/*
 * Whether recfile_commit and recfile_commit_tmp fsync the file and its
 * folder before and after the rename (the default, on: a crash leaves
 * the old file or the whole new one). Off for files a run can make again
 * in a moment, byte for byte (chaos sim's): the rename alone still keeps a
 * reader from ever seeing half a file. Process-wide.
 */
void recfile_set_durable(bool on);

/*
 * Opens PATH.tmp for writing: empty, or — with resume — continuing one that
 * a killed process left (a partial last line is cut off), so a restart after
 * a crash loses no rows; *resumed (may be NULL) tells whether it did, so the
 * caller writes its header only once. Returns 0 or a negative errno; on
 * success the caller ends with recfile_commit or recfile_abandon.
 */
int recfile_open(struct recfile *f, const char *path, bool resume, bool *resumed);

/* Appends bytes (buffered). Returns 0 or a negative errno. */
int recfile_write(struct recfile *f, const void *data, size_t len);

/* Pushes buffered bytes to the kernel, so a crash loses nothing written. */
int recfile_flush(struct recfile *f);

/* Flushes, syncs, closes and renames PATH.tmp to PATH. Returns 0 or -errno. */
int recfile_commit(struct recfile *f);

/*
 * Commits PATH.tmp that another process wrote whole (gnuplot's PNG): syncs
 * it, renames it to PATH and syncs the directory, as recfile_commit does.
 * Returns 0 or a negative errno (-ENOENT: no PATH.tmp); PATH.tmp is left
 * on failure.
 */
int recfile_commit_tmp(const char *path);

/* Closes and removes PATH.tmp. */
void recfile_abandon(struct recfile *f);

/*
 * Closes PATH.tmp and leaves it under that name: a file a write error cut
 * short keeps what it has, and the name that says it is not whole.
 */
void recfile_close_short(struct recfile *f);

/*
 * A row being built: fields are added in order and the row ends with a
 * newline. The same row type serves CSV (RFC 4180 quoting) and JSON Lines
 * (one object a line); the caller picks with csv.
 */
struct row {
	struct buf b;
	bool json;
	int nfields;
	bool oom;	/* an append failed: the row is incomplete */

	/* The names declared by row_names, and their JSON keys made once. */
	const char *const *names;
	size_t nnames;
	struct buf keys;	/* each name's key, "name":, one after the other */
	size_t *key_at;		/* where key i starts in keys (nnames + 1 entries) */
};

/* Starts a row (reusing the memory of the previous one). */
void row_begin(struct row *r, bool json);

/*
 * Declares the names the rows' fields will be added under, in order:
 * a JSON row then writes each key as made here, once, rather than checking
 * and quoting the name field by field. names is kept, not copied: it must
 * outlive r (a static column table). A field added under another name, or
 * out of order, is written as without. Returns 0 or -ENOMEM (r works as
 * before, only slower).
 */
int row_names(struct row *r, const char *const *names, size_t n);

/* Adds a string field; NULL is an empty CSV field / JSON null. */
void row_str(struct row *r, const char *name, const char *v);

/* Adds a whole number. */
void row_int(struct row *r, const char *name, int64_t v);

/* Adds a number with decimals places; NaN is an empty field / null. */
void row_num(struct row *r, const char *name, double v, int decimals);

/* Adds a boolean, written 1/0 in CSV and true/false in JSON. */
void row_bool(struct row *r, const char *name, bool v);

/*
 * Ends the row; r->b.data then holds the line, newline included. Returns 0,
 * or -ENOMEM when any part of it could not be added (do not write it).
 */
int row_end(struct row *r);

/*
 * Builds a CSV header line from column names: the same names the rows are
 * built with, so the two cannot drift apart. Returns as row_end does.
 */
int row_header(struct row *r, const char *const *names, size_t n);

/* Frees the row's memory. */
void row_free(struct row *r);

#endif
