/*
 * table: rows of cells printed in aligned columns; see table.h.
 */
#include "runner/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* Display width of a UTF-8 string: its code points ("—" is one column). */
static size_t cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

int table_add(struct table *t, const char *const *row)
{
	size_t at = t->nrows * t->ncols;
	size_t k;

	if (buf_grow_array((void **)&t->cells, &t->cap, at + t->ncols, sizeof(*t->cells)))
		return -ENOMEM;
	for (k = 0; k < t->ncols; k++) {
		t->cells[at + k] = strdup(row[k] ? row[k] : "");
		if (!t->cells[at + k])
			goto out_free_row;
	}
	t->nrows++;
	return 0;
out_free_row:
	while (k-- > 0)
		free(t->cells[at + k]);
	return -ENOMEM;
}

void table_print(FILE *fp, const struct table *t, unsigned right)
{
	size_t *width = calloc(t->ncols ? t->ncols : 1, sizeof(*width));
	struct buf b = { 0 };
	size_t i;
	size_t k;

	if (!width)
		return;
	for (i = 0; i < t->nrows; i++) {
		for (k = 0; k + 1 < t->ncols; k++) {
			size_t len = cols(t->cells[i * t->ncols + k]);

			width[k] = len > width[k] ? len : width[k];
		}
	}
	for (i = 0; i < t->nrows; i++) {
		int rc = 0;

		buf_reset(&b);
		for (k = 0; k < t->ncols && !rc; k++) {
			const char *cell = t->cells[i * t->ncols + k];
			int fill = (int)(width[k] - cols(cell));

			if (k + 1 == t->ncols)
				rc = buf_puts(&b, cell);
			else if (k < 32 && (right >> k) & 1)
				rc = buf_printf(&b, "%*s%s  ", fill, "", cell);
			else
				rc = buf_printf(&b, "%s%*s  ", cell, fill, "");
		}
		while (!rc && b.len && b.data[b.len - 1] == ' ')
			b.data[--b.len] = '\0';
		if (!rc)
			fprintf(fp, "%s\n", b.len ? b.data : "");
	}
	buf_free(&b);
	free(width);
}

void table_print_markdown(FILE *fp, const struct table *t, unsigned right)
{
	size_t r, c;

	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			fprintf(fp, "| %s ", t->cells[r * t->ncols + c]);
		fputs("|\n", fp);
		for (c = 0; r == 0 && c < t->ncols; c++)
			fputs(c < 32 && (right >> c) & 1 ? "|---:" : "|---", fp);
		if (r == 0)
			fputs("|\n", fp);
	}
}

void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
	t->cap = 0;
}
