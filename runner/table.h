/*
 * table: the runner's plain-text tables on a terminal — rows of cells
 * printed in columns two blanks apart, each as wide as its widest cell
 * (in UTF-8 characters, so "—" is one column wide),
 * the last column unpadded and no line ending in blanks — or as a
 * markdown table. chaos gate and chaos compare print their verdicts
 * through it, the report some of its sections.
 */
#ifndef FAULTLINE_RUNNER_TABLE_H
#define FAULTLINE_RUNNER_TABLE_H

#include <stddef.h>
#include <stdio.h>

/* Rows of ncols cells each (copies, owned); set ncols, zero the rest. */
struct table {
	size_t ncols;
	size_t nrows;
	size_t cap;		/* cells allocated */
	char **cells;		/* row-major, nrows × ncols */
};

/*
 * Appends a row: copies of the ncols strings of row (NULL is written as
 * ""). Returns 0, or -ENOMEM with the table as it was.
 */
int table_add(struct table *t, const char *const *row);

/*
 * Prints every row, one line each; the columns whose bit is set in
 * right (bit k for column k) are right-aligned, the others left-aligned.
 */
void table_print(FILE *fp, const struct table *t, unsigned right);

/*
 * Prints every row as a markdown table whose first row is the header,
 * the columns whose bit is set in right (bit k for column k) aligned
 * right ("|---:"), the others left.
 */
void table_print_markdown(FILE *fp, const struct table *t, unsigned right);

/* Frees the cells; t keeps its ncols and is empty (freeing again is harmless). */
void table_free(struct table *t);

#endif
