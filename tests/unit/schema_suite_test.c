/*
 * schema_suite: the official JSON Schema Test Suite, draft 7 (Debian's
 * json-schema-test-suite), run through gateway/schema. Every file of
 * tests/draft7 (not optional/): a group whose schema compiles must give
 * each case the suite's answer; a group whose schema does not compile
 * for a keyword (or a form of one) outside the subset is skipped and
 * listed, by keyword; any other compile error fails. The suite is found
 * through FAULTLINE_JSON_SCHEMA_SUITE (the suite's top or its draft7
 * directory) or in the usual places; without it the test fails.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/json.h"
#include "gateway/schema.h"

TestSuite(schema_suite, .timeout = 120);

#define UNSUPPORTED "unsupported JSON Schema keyword \""
#define MAX_FILES 128
#define MAX_KEYWORDS 64

/* The keywords groups were skipped for, with what was skipped for each. */
struct skips {
	struct {
		char kw[64];
		unsigned groups, cases;
		struct buf list;	/* "    FILE: GROUP — REASON\n" per group */
	} by[MAX_KEYWORDS];
	size_t n;
};

/* Whether dir holds the draft 7 files: draft7 itself has type.json. */
static bool is_draft7(const char *dir)
{
	char path[1024 + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/type.json", dir);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The draft7 directory into out, from the environment or the usual places; false when none is. */
static bool find_suite(char *out, size_t len)
{
	static const char *const places[] = {
		"/usr/share/json-schema-test-suite",
		"/usr/local/share/json-schema-test-suite",
		"/usr/share/json-schema-test-suite/JSON-Schema-Test-Suite",
	};
	const char *env = getenv("FAULTLINE_JSON_SCHEMA_SUITE");
	size_t i;

	if (env && *env) {
		snprintf(out, len, "%s/tests/draft7", env);
		if (is_draft7(out))
			return true;
		snprintf(out, len, "%s", env);
		return is_draft7(out);
	}
	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		snprintf(out, len, "%s/tests/draft7", places[i]);
		if (is_draft7(out))
			return true;
	}
	return false;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files directly in dir, sorted, into names (freed by the caller); how many. */
static size_t list_files(const char *dir, char **names)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(dp, "cannot read %s", dir);
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		char path[1024 + 260];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0 || stat(path, &st) ||
		    !S_ISREG(st.st_mode))
			continue;
		cr_assert_lt(n, MAX_FILES, "more than %d files in %s", MAX_FILES, dir);
		names[n] = strdup(de->d_name);
		cr_assert_not_null(names[n]);
		n++;
	}
	closedir(dp);
	qsort(names, n, sizeof(*names), name_cmp);
	return n;
}

/* The keyword a compile error names ("unsupported JSON Schema keyword \"K\" …"), into kw. */
static void error_keyword(const char *err, char *kw, size_t len)
{
	const char *p = err + strlen(UNSUPPORTED);
	const char *q = strchr(p, '"');
	size_t n = q ? (size_t)(q - p) : strlen(p);

	if (n >= len)
		n = len - 1;
	memcpy(kw, p, n);
	kw[n] = '\0';
}

/* Records a skipped group under the keyword its compile error names. */
static void skip_group(struct skips *sk, const char *file, const char *group, const char *err,
		       unsigned cases)
{
	char kw[64];
	size_t i;

	error_keyword(err, kw, sizeof(kw));
	for (i = 0; i < sk->n && strcmp(sk->by[i].kw, kw) != 0; i++)
		;
	if (i == sk->n) {
		cr_assert_lt(sk->n, MAX_KEYWORDS);
		snprintf(sk->by[i].kw, sizeof(sk->by[i].kw), "%s", kw);
		sk->n++;
	}
	sk->by[i].groups++;
	sk->by[i].cases += cases;
	cr_assert_eq(buf_printf(&sk->by[i].list, "    %s: %s — %s\n", file, group, err), 0);
}

Test(schema_suite, draft7_every_supported_case_passes)
{
	char dir[1024];
	char *names[MAX_FILES];
	struct skips sk = { .n = 0 };
	struct buf fails = { 0 };
	struct buf out = { 0 };
	unsigned passed = 0, failed = 0, skipped = 0;
	size_t nfiles;
	size_t f;
	size_t i;

	cr_assert(find_suite(dir, sizeof(dir)),
		  "the JSON Schema Test Suite (draft7) was not found: install Debian's "
		  "json-schema-test-suite (apt-get install json-schema-test-suite; scripts/deps.sh "
		  "lists it), or point FAULTLINE_JSON_SCHEMA_SUITE at the suite's top or its "
		  "tests/draft7 directory");
	nfiles = list_files(dir, names);
	cr_assert_gt(nfiles, 0, "no .json files in %s", dir);
	for (f = 0; f < nfiles; f++) {
		char path[1024 + 260];
		char err[512];
		cJSON *doc;
		const cJSON *group;

		snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
		doc = json_load_file(path, err, sizeof(err));
		cr_assert_not_null(doc, "%s", err);
		cr_assert(cJSON_IsArray(doc), "%s: not an array of test groups", path);
		cJSON_ArrayForEach(group, doc) {
			const char *gdesc = json_get_string(group, "description");
			const cJSON *tests = cJSON_GetObjectItemCaseSensitive(group, "tests");
			const cJSON *t;
			struct schema *s;
			unsigned ncases = (unsigned)cJSON_GetArraySize(tests);

			cr_assert(gdesc && cJSON_IsArray(tests), "%s: a group without description or tests",
				  path);
			s = schema_compile(cJSON_GetObjectItemCaseSensitive(group, "schema"), err,
					   sizeof(err));
			if (!s && strncmp(err, UNSUPPORTED, strlen(UNSUPPORTED)) == 0) {
				skip_group(&sk, names[f], gdesc, err, ncases);
				skipped += ncases;
				continue;
			}
			if (!s) {
				failed += ncases;
				cr_assert_eq(buf_printf(&fails, "  %s: %s: the schema does not compile: %s\n",
							names[f], gdesc, err), 0);
				continue;
			}
			cJSON_ArrayForEach(t, tests) {
				const cJSON *valid = cJSON_GetObjectItemCaseSensitive(t, "valid");
				const char *cdesc = json_get_string(t, "description");
				char why[256];
				bool got;

				cr_assert(cJSON_IsBool(valid) && cdesc, "%s: %s: a case without valid",
					  path, gdesc);
				got = schema_check(s, cJSON_GetObjectItemCaseSensitive(t, "data"), why,
						   sizeof(why));
				if (got == cJSON_IsTrue(valid)) {
					passed++;
					continue;
				}
				failed++;
				if (got)
					cr_assert_eq(buf_printf(&fails, "  %s: %s: %s: valid, the suite says "
								"invalid\n", names[f], gdesc, cdesc), 0);
				else
					cr_assert_eq(buf_printf(&fails, "  %s: %s: %s: invalid (%s), the suite "
								"says valid\n", names[f], gdesc, cdesc, why), 0);
			}
			schema_free(s);
		}
		cJSON_Delete(doc);
	}

	/* The skipped groups by keyword, then the figures, last where they are seen. */
	if (sk.n)
		cr_assert_eq(buf_puts(&out, "JSON Schema Test Suite draft7: the groups skipped, by the "
				      "keyword outside the subset:\n"), 0);
	for (i = 0; i < sk.n; i++) {
		cr_assert_eq(buf_printf(&out, "  \"%s\"%s: %u cases in %u group%s\n",
					sk.by[i].kw, schema_keyword_supported(sk.by[i].kw) ?
					" (a form outside the subset)" : "",
					sk.by[i].cases, sk.by[i].groups, sk.by[i].groups == 1 ? "" : "s"), 0);
		cr_assert_eq(buf_append(&out, sk.by[i].list.data, sk.by[i].list.len), 0);
		buf_free(&sk.by[i].list);
	}
	if (failed)
		cr_assert_eq(buf_printf(&out, "JSON Schema Test Suite draft7: failed:\n%s", fails.data), 0);
	cr_assert_eq(buf_printf(&out, "JSON Schema Test Suite draft7 (%s): %u cases passed, %u failed, "
				"%u skipped (unsupported keywords) in %zu files\n",
				dir, passed, failed, skipped, nfiles), 0);
	fputs(out.data, stderr);
	buf_free(&out);
	for (f = 0; f < nfiles; f++)
		free(names[f]);
	cr_assert_eq(failed, 0, "%u suite cases failed:\n%s", failed, fails.data);
	cr_assert_gt(passed, 0, "no suite case ran");
	buf_free(&fails);
}
