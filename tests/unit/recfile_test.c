/*
 * recfile: files appear under their name only when committed; rows quote
 * and escape their fields for CSV (RFC 4180) and JSON Lines.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/recfile.h"

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

Test(recfile, commit_tmp_renames_what_another_process_wrote, .timeout = 10)
{
	struct tmpdir t;
	char got[256];
	FILE *fp;

	tmpdir_make(&t);
	fp = fopen(t.path, "w");
	cr_assert_not_null(fp);
	fputs("old\n", fp);
	fclose(fp);
	fp = fopen(t.tmp, "w");
	cr_assert_not_null(fp);
	fputs("written elsewhere\n", fp);
	fclose(fp);
	cr_assert_eq(recfile_commit_tmp(t.path), 0);
	cr_assert_not(exists(t.tmp), "tmp left behind after commit");
	slurp(t.path, got, sizeof(got));
	cr_assert_str_eq(got, "written elsewhere\n");
	/* Nothing to commit: an error, and PATH as it was. */
	cr_assert_eq(recfile_commit_tmp(t.path), -ENOENT);
	slurp(t.path, got, sizeof(got));
	cr_assert_str_eq(got, "written elsewhere\n");
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

/* ---- resuming a PATH.tmp a killed process left ---- */

/* The resume tests' dir: .fini removes it even when an assertion ended the test. */
static struct tmpdir rt;

static void rt_remove(void)
{
	if (rt.dir[0])
		tmpdir_remove(&rt);
	rt.dir[0] = '\0';
}

/* Writes text as the whole of path (a PATH.tmp as a killed process left it). */
static void put_file(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "wb");

	cr_assert_not_null(fp, "cannot create %s", path);
	cr_assert_eq(fwrite(text, 1, len, fp), len);
	cr_assert_eq(fclose(fp), 0);
}

/*
 * Opens t's file with resume, checks *resumed and the tmp's contents right
 * after the open, appends "new\n" and commits; the committed file must then
 * hold kept + "new\n".
 */
static void expect_resume(struct tmpdir *t, bool want_resumed, const char *kept)
{
	struct recfile f;
	bool resumed = !want_resumed;
	char got[256];
	char want[256];

	cr_assert_eq(recfile_open(&f, t->path, true, &resumed), 0);
	cr_assert_eq(resumed, want_resumed, "*resumed is %d", resumed);
	slurp(t->tmp, got, sizeof(got));
	cr_assert_str_eq(got, kept, "the tmp right after the open");
	cr_assert_eq(recfile_write(&f, "new\n", 4), 0);
	cr_assert_eq(recfile_commit(&f), 0);
	snprintf(want, sizeof(want), "%snew\n", kept);
	slurp(t->path, got, sizeof(got));
	cr_assert_str_eq(got, want);
	cr_assert_not(exists(t->tmp));
}

/* A restart continues the rows the killed process had written. */
Test(recfile, resume_continues_a_tmp_left_behind, .timeout = 10, .fini = rt_remove)
{
	static const char left[] = "h\nr1\nr2\n";

	tmpdir_make(&rt);
	put_file(rt.tmp, left, sizeof(left) - 1);
	expect_resume(&rt, true, left);
}

/* The kill came in the middle of a row: the torn row is cut off. */
Test(recfile, resume_cuts_a_torn_last_line, .timeout = 10, .fini = rt_remove)
{
	static const char left[] = "h\nr1\nr2,half";

	tmpdir_make(&rt);
	put_file(rt.tmp, left, sizeof(left) - 1);
	expect_resume(&rt, true, "h\nr1\n");
}

/* A torn line longer than the 4 KiB the cut reads backwards at a time. */
Test(recfile, resume_cuts_a_torn_line_over_4k, .timeout = 10, .fini = rt_remove)
{
	char left[10008];

	tmpdir_make(&rt);
	memcpy(left, "h\nr1\n", 5);
	memset(left + 5, 'x', sizeof(left) - 5);
	put_file(rt.tmp, left, sizeof(left));
	expect_resume(&rt, true, "h\nr1\n");
}

/*
 * Nothing whole to continue — an empty tmp, one torn first line, or no tmp
 * at all — is a fresh start: *resumed is false, so the header gets written.
 */
Test(recfile, resume_of_nothing_whole_starts_empty, .timeout = 10, .fini = rt_remove)
{
	tmpdir_make(&rt);
	put_file(rt.tmp, "t_ms,requ", 9);
	expect_resume(&rt, false, "");

	unlink(rt.path);
	put_file(rt.tmp, "", 0);
	expect_resume(&rt, false, "");

	unlink(rt.path);
	expect_resume(&rt, false, "");
}

/* Without resume, a tmp left behind is truncated, as before. */
Test(recfile, no_resume_truncates_a_tmp_left_behind, .timeout = 10, .fini = rt_remove)
{
	struct recfile f;
	bool resumed = true;
	char got[256];

	tmpdir_make(&rt);
	put_file(rt.tmp, "h\nr1\n", 5);
	cr_assert_eq(recfile_open(&f, rt.path, false, &resumed), 0);
	cr_assert_not(resumed, "*resumed is true without resume");
	cr_assert_eq(slurp(rt.tmp, got, sizeof(got)), 0, "the old rows are still there: %s", got);
	cr_assert_eq(recfile_write(&f, "h\n", 2), 0);
	cr_assert_eq(recfile_commit(&f), 0);
	slurp(rt.path, got, sizeof(got));
	cr_assert_str_eq(got, "h\n");
}

/* The header comes from the column names, quoted like any field. */
Test(recfile, row_header_from_names, .timeout = 10)
{
	static const char *const names[] = { "a", "b", "c" };
	static const char *const odd[] = { "x,y", "z" };
	struct row r = { 0 };

	cr_assert_eq(row_header(&r, names, 3), 0);
	cr_assert_str_eq(r.b.data, "a,b,c\n");
	cr_assert_eq(r.b.len, 6);
	/* A second header reuses the row, and a name with a comma is quoted. */
	cr_assert_eq(row_header(&r, odd, 2), 0);
	cr_assert_str_eq(r.b.data, "\"x,y\",z\n");
	row_free(&r);
}

/* Adds the same fields under names[0..4] (out of order from the 4th on). */
static void add_fields(struct row *r, const char *const *names)
{
	row_str(r, names[0], "r1");
	row_num(r, names[1], NAN, 3);
	row_int(r, names[2], 7);
	row_num(r, names[4], 2.5, 1);		/* out of the declared order */
	row_bool(r, names[3], true);
}

Test(recfile, declared_names_write_the_same_rows, .timeout = 10)
{
	static const char *const names[] = { "id", "ms", "weird \"key\"\n", "ok", "x" };
	const char *const copies[] = { "id", "ms", "weird \"key\"\n", "ok", "x" };
	struct row plain = { 0 };
	struct row declared = { 0 };
	int json;
	int round;

	cr_assert_eq(row_names(&declared, names, 5), 0);
	for (json = 0; json < 2; json++) {
		for (round = 0; round < 2; round++) {
			row_begin(&plain, json);
			add_fields(&plain, names);
			cr_assert_eq(row_end(&plain), 0);
			row_begin(&declared, json);
			add_fields(&declared, round ? copies : names);
			cr_assert_eq(row_end(&declared), 0);
			cr_assert_str_eq(declared.b.data, plain.b.data);
		}
	}
	cr_assert_str_eq(declared.b.data, "{\"id\":\"r1\",\"ms\":null,\"weird \\\"key\\\"\\n\":7,"
			 "\"x\":2.5,\"ok\":true}\n");
	/* Declared again (another table), and freed. */
	cr_assert_eq(row_names(&declared, copies, 2), 0);
	row_begin(&declared, true);
	row_str(&declared, copies[0], "a");
	row_str(&declared, copies[1], "b");
	cr_assert_eq(row_end(&declared), 0);
	cr_assert_str_eq(declared.b.data, "{\"id\":\"a\",\"ms\":\"b\"}\n");
	row_free(&plain);
	row_free(&declared);
	cr_assert_null(declared.key_at);
}
