/*
 * recfile: files appear under their name only when committed; rows quote
 * and escape their fields for CSV (RFC 4180) and JSON Lines.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recfile.h"

struct tmpdir {
	char dir[64];
	char path[128];
	char tmp[140];
};

static void tmpdir_make(struct tmpdir *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/fl-recfile-XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/requests.csv", t->dir);
	snprintf(t->tmp, sizeof(t->tmp), "%s.tmp", t->path);
}

static void tmpdir_remove(struct tmpdir *t)
{
	unlink(t->path);
	unlink(t->tmp);
	rmdir(t->dir);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Reads a whole (small) file into out; returns its length. */
static size_t slurp(const char *path, char *out, size_t len)
{
	FILE *fp = fopen(path, "rb");
	size_t n;

	cr_assert_not_null(fp, "cannot open %s", path);
	n = fread(out, 1, len - 1, fp);
	out[n] = '\0';
	fclose(fp);
	return n;
}

Test(recfile, commit_renames_tmp, .timeout = 10)
{
	struct tmpdir t;
	struct recfile f;
	char got[256];

	tmpdir_make(&t);
	cr_assert_eq(recfile_open(&f, t.path, false, NULL), 0);
	cr_assert(exists(t.tmp), "%s not created", t.tmp);
	cr_assert_not(exists(t.path), "final name exists before commit");
	cr_assert_eq(recfile_write(&f, "a,b\n", 4), 0);
	cr_assert_eq(recfile_write(&f, "1,2\n", 4), 0);
	cr_assert_eq(recfile_flush(&f), 0);
	cr_assert_eq(slurp(t.tmp, got, sizeof(got)), 8, "flushed bytes not in tmp");
	cr_assert_not(exists(t.path));
	cr_assert_eq(recfile_commit(&f), 0);
	cr_assert(exists(t.path));
	cr_assert_not(exists(t.tmp), "tmp left behind after commit");
	cr_assert_eq(slurp(t.path, got, sizeof(got)), 8);
	cr_assert_str_eq(got, "a,b\n1,2\n");
	tmpdir_remove(&t);
}

Test(recfile, commit_replaces_old_file, .timeout = 10)
{
	struct tmpdir t;
	struct recfile f;
	char got[256];
	FILE *fp;

	tmpdir_make(&t);
	fp = fopen(t.path, "w");
	cr_assert_not_null(fp);
	fputs("old contents\n", fp);
	fclose(fp);
	cr_assert_eq(recfile_open(&f, t.path, false, NULL), 0);
	cr_assert_eq(recfile_write(&f, "new\n", 4), 0);
	slurp(t.path, got, sizeof(got));
	cr_assert_str_eq(got, "old contents\n", "old file touched before commit");
	cr_assert_eq(recfile_commit(&f), 0);
	slurp(t.path, got, sizeof(got));
	cr_assert_str_eq(got, "new\n");
	tmpdir_remove(&t);
}

Test(recfile, abandon_removes_tmp, .timeout = 10)
{
	struct tmpdir t;
	struct recfile f;

	tmpdir_make(&t);
	cr_assert_eq(recfile_open(&f, t.path, false, NULL), 0);
	cr_assert_eq(recfile_write(&f, "partial", 7), 0);
	recfile_abandon(&f);
	cr_assert_not(exists(t.tmp));
	cr_assert_not(exists(t.path));
	tmpdir_remove(&t);
}

Test(recfile, open_in_missing_dir_fails, .timeout = 10)
{
	struct recfile f;
	int rc = recfile_open(&f, "/nonexistent-fl-dir/x/requests.csv", false, NULL);

	cr_assert_lt(rc, 0);
	cr_assert_null(f.fp);
}

Test(recfile, csv_quotes_per_rfc4180, .timeout = 10)
{
	struct row r = { 0 };

	row_begin(&r, false);
	row_str(&r, "a", "plain");
	row_str(&r, "b", "x,y");
	row_str(&r, "c", "say \"hi\"");
	row_str(&r, "d", "two\nlines");
	row_str(&r, "e", "cr\rhere");
	row_str(&r, "f", NULL);
	row_str(&r, "g", "");
	row_end(&r);
	cr_assert_str_eq(r.b.data,
			 "plain,\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\rhere\",,\n");
	row_free(&r);
}

Test(recfile, csv_numbers_nan_and_bools, .timeout = 10)
{
	struct row r = { 0 };

	row_begin(&r, false);
	row_int(&r, "i", -42);
	row_num(&r, "n", 12.3456, 3);
	row_num(&r, "nan", NAN, 3);
	row_num(&r, "inf", INFINITY, 3);
	row_bool(&r, "t", true);
	row_bool(&r, "f", false);
	row_end(&r);
	cr_assert_str_eq(r.b.data, "-42,12.346,,,1,0\n");
	row_free(&r);
}

Test(recfile, row_begin_reuses_and_resets, .timeout = 10)
{
	struct row r = { 0 };

	row_begin(&r, false);
	row_int(&r, "a", 1);
	row_int(&r, "b", 2);
	row_end(&r);
	cr_assert_str_eq(r.b.data, "1,2\n");
	row_begin(&r, false);
	row_int(&r, "a", 3);
	row_end(&r);
	cr_assert_str_eq(r.b.data, "3\n");
	row_begin(&r, true);
	row_int(&r, "a", 4);
	row_end(&r);
	cr_assert_str_eq(r.b.data, "{\"a\":4}\n");
	row_free(&r);
}

Test(recfile, json_row_exact_text, .timeout = 10)
{
	struct row r = { 0 };

	row_begin(&r, true);
	row_str(&r, "id", "r1");
	row_num(&r, "ms", NAN, 3);
	row_num(&r, "x", 1.5, 1);
	row_bool(&r, "ok", true);
	row_bool(&r, "h", false);
	row_str(&r, "p", NULL);
	row_end(&r);
	cr_assert_str_eq(r.b.data,
			 "{\"id\":\"r1\",\"ms\":null,\"x\":1.5,\"ok\":true,\"h\":false,\"p\":null}\n");
	row_free(&r);
}

Test(recfile, json_row_parses_with_cjson, .timeout = 10)
{
	struct row r = { 0 };
	const cJSON *v;
	cJSON *root;

	row_begin(&r, true);
	row_str(&r, "error", "bad \"quote\" \\ and\nnewline\x01");
	row_int(&r, "status", 503);
	row_num(&r, "latency_ms", 12.25, 3);
	row_num(&r, "ttft_ms", NAN, 3);
	row_bool(&r, "hedged", true);
	row_str(&r, "provider", NULL);
	row_str(&r, "weird \"key\"", "v");
	row_end(&r);
	cr_assert_eq(r.b.data[r.b.len - 1], '\n');
	cr_assert_eq(strchr(r.b.data, '\n'), r.b.data + r.b.len - 1,
		     "raw newline inside a JSON line: %s", r.b.data);
	root = cJSON_Parse(r.b.data);
	cr_assert_not_null(root, "not JSON: %s", r.b.data);
	cr_assert_str_eq(cJSON_GetObjectItem(root, "error")->valuestring,
			 "bad \"quote\" \\ and\nnewline\x01");
	cr_assert_float_eq(cJSON_GetObjectItem(root, "status")->valuedouble, 503, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(root, "latency_ms")->valuedouble, 12.25, 0);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(root, "ttft_ms")));
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "hedged")));
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(root, "provider")));
	v = cJSON_GetObjectItem(root, "weird \"key\"");
	cr_assert_not_null(v);
	cr_assert_str_eq(v->valuestring, "v");
	cJSON_Delete(root);
	row_free(&r);
}
