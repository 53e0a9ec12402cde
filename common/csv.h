/*
 * csv: the one reader of the result files' CSV (requests.csv,
 * mock-NAME.csv), strictly RFC 4180 — quoted fields, "" escapes, CRLF or
 * LF line ends, a last line with or without its newline. A quote inside an
 * unquoted field, text after a closing quote, an unterminated quote, a
 * lone carriage return or a NUL byte is an error, as is (csv_row) an empty
 * line or a row with another number of fields than the header. Errors are
 * written to err (CFG_ERR_LEN bytes) as "PATH:LINE: what", LINE being the
 * line where the bad record starts. Pure: it reads from memory the caller
 * owns (csv_read_file fills one from a file).
 */
#ifndef FAULTLINE_CSV_H
#define FAULTLINE_CSV_H

#include <stddef.h>

#include "common/buf.h"

/* A CSV text being read record by record. */
struct csv {
	const char *path;	/* for messages */
	const char *s;
	size_t len;
	size_t pos;
	size_t line;		/* physical line at pos, from 1 */
	size_t rec_line;	/* the line the last record started on */
	struct buf fields;	/* the last record's fields, each NUL-terminated */
	size_t *off;		/* where each field starts in fields */
	size_t nf;		/* the last record's number of fields */
	size_t cap;
};

/*
 * Starts reading len bytes of data (kept, not copied; may be NULL when len
 * is 0); path names the text in messages. End with csv_close.
 */
void csv_init(struct csv *c, const char *path, const char *data, size_t len);

/* Ends reading: frees the reader's memory (not the text). */
void csv_close(struct csv *c);

/*
 * Reads the next record into the reader's fields. Returns 1, 0 at the end
 * of the text, -EINVAL for a malformed record (err says where and what)
 * or -ENOMEM.
 */
int csv_next(struct csv *c, char *err);

/* Field i (< c->nf) of the last record, NUL-terminated; valid until the next read. */
const char *csv_field(const struct csv *c, size_t i);

/* Index of the field equal to name in the last record (a header), or -1. */
int csv_column(const struct csv *c, const char *name);

/*
 * Reads the header and finds each of names[0..n) in it (idx[i]); a
 * missing or repeated column, or an empty text, is an error (-EINVAL, err
 * set). Returns 0 or a negative errno.
 */
int csv_header(struct csv *c, const char *const *names, size_t n, int *idx, char *err);

/*
 * Reads the next data row and checks it has width fields (the header's).
 * Returns 1, 0 at the end, or a negative errno as csv_next.
 */
int csv_row(struct csv *c, size_t width, char *err);

/*
 * Writes "PATH:LINE: " (or "PATH: " when line is 0) and the message into
 * err (CFG_ERR_LEN bytes). Returns -EINVAL, for `return csv_error(…)`.
 */
int csv_error(char *err, const char *path, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * A field as a plain decimal number (digits, sign, point, exponent; finite:
 * no hex, inf or nan); "" is NAN (none). Returns 0 or -EINVAL.
 */
int csv_num(const char *s, double *out);

/* A whole number in [min, max] as csv_num reads it; "" is NAN. 0 or -EINVAL. */
int csv_whole(const char *s, double min, double max, double *out);

/* Reads a whole file into b. Returns 0 or a negative errno (-ENOENT…). */
int csv_read_file(const char *path, struct buf *b);

#endif
