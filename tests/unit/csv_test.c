/*
 * csv: the result files' one CSV reader — quoted fields with commas,
 * quotes and newlines in them, CRLF, a last line without its newline,
 * header lookup, rows of the wrong width, and the malformed records it
 * refuses with the line they start on.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "common/csv.h"

/* Reads every record of text; fields joined by '|', records by ';' into out. */
static int read_all(const char *text, char *out, size_t len, char *err)
{
	struct csv c;
	size_t used = 0;
	int rc;

	out[0] = '\0';
	csv_init(&c, "t.csv", text, strlen(text));
	for (;;) {
		size_t i;

		rc = csv_next(&c, err);
		if (rc <= 0)
			break;
		for (i = 0; i < c.nf; i++)
			used += (size_t)snprintf(out + used, len - used, "%s%s", i ? "|" : "",
						 csv_field(&c, i));
		used += (size_t)snprintf(out + used, len - used, ";");
	}
	csv_close(&c);
	return rc;
}

static void expect_read(const char *text, const char *want)
{
	char out[512];
	char err[CFG_ERR_LEN] = "";

	cr_assert_eq(read_all(text, out, sizeof(out), err), 0, "%s: %s", text, err);
	cr_assert_str_eq(out, want, "reading <%s>", text);
}

static void expect_error(const char *text, const char *want_err)
{
	char out[512];
	char err[CFG_ERR_LEN] = "";

	cr_assert_eq(read_all(text, out, sizeof(out), err), -EINVAL, "<%s> was read", text);
	cr_assert_str_eq(err, want_err);
}

Test(csv, plain_records_and_a_last_line_without_newline, .timeout = 5)
{
	expect_read("a,b,c\n1,2,3\n", "a|b|c;1|2|3;");
	expect_read("a,b,c\n1,2,3", "a|b|c;1|2|3;");
	expect_read("", "");
	expect_read("x\n", "x;");
}

Test(csv, empty_fields_and_a_trailing_comma, .timeout = 5)
{
	expect_read("a,,c\n,,\n", "a||c;||;");
	expect_read("a,b,\n", "a|b|;");
	expect_read("a,b,", "a|b|;");
}

Test(csv, quoted_fields_hold_commas_quotes_and_newlines, .timeout = 5)
{
	expect_read("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\nx,y,z\n",
		    "a,b|say \"hi\"|two\nlines;x|y|z;");
	expect_read("\"\",\"\"\"\"\n", "|\";");
	expect_read("\"last\"", "last;");
}

Test(csv, crlf_line_ends, .timeout = 5)
{
	expect_read("a,b\r\n1,2\r\n", "a|b;1|2;");
	expect_read("a,\"b\"\r\n\"1\r\n2\",3\r\n", "a|b;1\r\n2|3;");
}

Test(csv, malformed_records_name_the_line_they_start_on, .timeout = 5)
{
	expect_error("a,b\n1,x\"y\n", "t.csv:2: a quote inside unquoted field 2");
	expect_error("a,b\n\"1\"x,2\n", "t.csv:2: text after the closing quote of field 1");
	expect_error("a,b\n1,\"open\nstill\n", "t.csv:2: a quoted field is not closed");
	expect_error("a,b\n1,2\rx\n", "t.csv:2: a carriage return not followed by a newline");
}

Test(csv, a_nul_byte_is_refused, .timeout = 5)
{
	static const char text[] = "a,b\n1,x\0y\n";
	struct csv c;
	char err[CFG_ERR_LEN] = "";

	csv_init(&c, "t.csv", text, sizeof(text) - 1);
	cr_assert_eq(csv_next(&c, err), 1);
	cr_assert_eq(csv_next(&c, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv:2: a NUL byte");
	csv_close(&c);
}

Test(csv, header_finds_columns_by_name, .timeout = 5)
{
	static const char text[] = "x,id,outcome\n1,r1,ok\n";
	static const char *const names[] = { "outcome", "id" };
	struct csv c;
	char err[CFG_ERR_LEN] = "";
	int idx[2];

	csv_init(&c, "t.csv", text, sizeof(text) - 1);
	cr_assert_eq(csv_header(&c, names, 2, idx, err), 0, "%s", err);
	cr_assert_eq(idx[0], 2);
	cr_assert_eq(idx[1], 1);
	cr_assert_eq(csv_column(&c, "x"), 0);
	cr_assert_eq(csv_column(&c, "nope"), -1);
	cr_assert_eq(csv_row(&c, c.nf, err), 1);
	cr_assert_str_eq(csv_field(&c, (size_t)idx[0]), "ok");
	cr_assert_str_eq(csv_field(&c, (size_t)idx[1]), "r1");
	cr_assert_eq(csv_row(&c, 3, err), 0);
	csv_close(&c);
}

Test(csv, header_errors, .timeout = 5)
{
	static const char *const names[] = { "id" };
	struct csv c;
	char err[CFG_ERR_LEN] = "";
	int idx[1];

	csv_init(&c, "t.csv", "", 0);
	cr_assert_eq(csv_header(&c, names, 1, idx, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv: empty file: expected a header line");
	csv_close(&c);
	csv_init(&c, "t.csv", "a,b\n", 4);
	cr_assert_eq(csv_header(&c, names, 1, idx, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv:1: no column \"id\" in the header");
	csv_close(&c);
	csv_init(&c, "t.csv", "id,b,id\n", 8);
	cr_assert_eq(csv_header(&c, names, 1, idx, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv:1: column \"id\" appears twice in the header");
	csv_close(&c);
}

Test(csv, rows_must_be_as_wide_as_the_header, .timeout = 5)
{
	static const char text[] = "a,b,c\n1,2,3\n1,2\n\n";
	static const char *const names[] = { "a" };
	struct csv c;
	char err[CFG_ERR_LEN] = "";
	int idx[1];

	csv_init(&c, "t.csv", text, sizeof(text) - 1);
	cr_assert_eq(csv_header(&c, names, 1, idx, err), 0);
	cr_assert_eq(csv_row(&c, c.nf, err), 1);
	cr_assert_eq(csv_row(&c, 3, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv:3: expected 3 fields as in the header, got 2");
	cr_assert_eq(csv_row(&c, 3, err), -EINVAL);
	cr_assert_str_eq(err, "t.csv:4: an empty line");
	csv_close(&c);
}

Test(csv, numbers, .timeout = 5)
{
	double v;

	cr_assert_eq(csv_num("12.5", &v), 0);
	cr_assert_float_eq(v, 12.5, 1e-12);
	cr_assert_eq(csv_num("-1e3", &v), 0);
	cr_assert_float_eq(v, -1000, 1e-12);
	cr_assert_eq(csv_num("", &v), 0);
	cr_assert(isnan(v));
	cr_assert_eq(csv_num("0x10", &v), -EINVAL);
	cr_assert_eq(csv_num("inf", &v), -EINVAL);
	cr_assert_eq(csv_num("nan", &v), -EINVAL);
	cr_assert_eq(csv_num("1 ", &v), -EINVAL);
	cr_assert_eq(csv_num("1e999", &v), -EINVAL);
	cr_assert_eq(csv_whole("42", 0, 999, &v), 0);
	cr_assert_float_eq(v, 42, 1e-12);
	cr_assert_eq(csv_whole("4.5", 0, 999, &v), -EINVAL);
	cr_assert_eq(csv_whole("1000", 0, 999, &v), -EINVAL);
	cr_assert_eq(csv_whole("-1", 0, 999, &v), -EINVAL);
	cr_assert_eq(csv_whole("", 0, 999, &v), 0);
	cr_assert(isnan(v));
}
