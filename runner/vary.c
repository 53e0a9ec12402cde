/*
 * vary: --vary's values, typed by the scenario's value at the path, and
 * the points of their grid.
 */
#include "runner/vary.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/opt.h"
#include "common/json.h"
#include "runner/jpath.h"

#define RANGE_SLACK 1e-9		/* TO counts within this share of a step */
#define VARY_LINK '+'			/* links paths that take the same values */

enum vtype { VT_NUMBER, VT_STRING, VT_BOOL, VT_GUESS };

/* Whether s reads wholly as a finite number. */
static bool is_number(const char *s, double *out)
{
	return opt_parse_double(s, -DBL_MAX, DBL_MAX, out) == 0;
}

/* The type the values at path take from cur (NULL: a key to be made). */
static int type_of(const cJSON *cur, const char *path, enum vtype *t, char *err, size_t errlen)
{
	if (!cur)
		*t = VT_GUESS;
	else if (cJSON_IsNumber(cur))
		*t = VT_NUMBER;
	else if (cJSON_IsString(cur))
		*t = VT_STRING;
	else if (cJSON_IsBool(cur))
		*t = VT_BOOL;
	else {
		snprintf(err, errlen, "--vary %.200s: it holds %s, and --vary sets a number, a "
			 "string, true or false", path, cJSON_IsObject(cur) ? "an object" :
			 cJSON_IsArray(cur) ? "an array" : "null");
		return -EINVAL;
	}
	return 0;
}

/* What a value of type t is called, for "expected a number (PATH is 300)". */
static void describe(const cJSON *cur, enum vtype t, struct buf *out)
{
	char *now = cur ? cJSON_PrintUnformatted(cur) : NULL;

	buf_puts(out, t == VT_NUMBER ? "a number" : t == VT_BOOL ? "true or false" : "a string");
	if (now)
		buf_printf(out, ", as the value there now (%.60s)", now);
	free(now);
}

/*
 * The item text (len bytes) as a value of type t into *out. Returns 0, or
 * -EINVAL with err saying what was expected.
 */
static int make_value(const char *path, const cJSON *cur, enum vtype t, const char *text,
		      cJSON **out, char *err, size_t errlen)
{
	struct buf want = { 0 };
	double d;
	int rc = 0;

	*out = NULL;
	if (!*text) {
		snprintf(err, errlen, "--vary %.200s: expected a list V1,V2,… or a range "
			 "FROM..TO/STEP, got an empty value", path);
		return -EINVAL;
	}
	if (t == VT_NUMBER && is_number(text, &d))
		*out = cJSON_CreateNumber(d);
	else if (t == VT_BOOL && (strcmp(text, "true") == 0 || strcmp(text, "false") == 0))
		*out = cJSON_CreateBool(strcmp(text, "true") == 0);
	else if (t == VT_STRING)
		*out = cJSON_CreateString(text);
	else {
		describe(cur, t, &want);
		snprintf(err, errlen, "--vary %.200s: expected %s, got \"%.60s\"", path,
			 want.data ? want.data : "a value", text);
		rc = -EINVAL;
		goto out;
	}
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
out:
	buf_free(&want);
	return rc;
}

/* The type a list's items give a key that is not there yet. */
static enum vtype guess(char **items, size_t n)
{
	bool numbers = true;
	bool bools = true;
	double d;
	size_t i;

	for (i = 0; i < n; i++) {
		numbers = numbers && is_number(items[i], &d);
		bools = bools && (strcmp(items[i], "true") == 0 || strcmp(items[i], "false") == 0);
	}
	return numbers ? VT_NUMBER : bools ? VT_BOOL : VT_STRING;
}

/* A list's items as values into arr. */
static int parse_list(const char *path, const cJSON *cur, enum vtype t, const char *spec,
		      cJSON *arr, char *err, size_t errlen)
{
	char **items = NULL;
	char *copy = strdup(spec);
	char *s = copy;
	size_t n = 0;
	size_t i;
	int rc = -ENOMEM;

	if (!copy)
		goto out;
	items = calloc(strlen(spec) + 1, sizeof(*items));
	if (!items)
		goto out;
	for (;;) {
		char *comma = strchr(s, ',');

		if (comma)
			*comma = '\0';
		items[n++] = s;
		if (!comma)
			break;
		s = comma + 1;
	}
	rc = 0;
	if (n > VARY_MAX_VALUES) {
		snprintf(err, errlen, "--vary %.200s: expected at most %d values, got %zu", path,
			 VARY_MAX_VALUES, n);
		rc = -EINVAL;
		goto out;
	}
	if (t == VT_GUESS)
		t = guess(items, n);
	for (i = 0; i < n && !rc; i++) {
		cJSON *v;

		rc = make_value(path, cur, t, items[i], &v, err, errlen);
		if (!rc)
			cJSON_AddItemToArray(arr, v);
	}
out:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(items);
	free(copy);
	return rc;
}

/* v rounded to 12 significant digits: 0.1 + 2 × 0.1 is 0.3. */
static double tidy(double v)
{
	char text[40];

	snprintf(text, sizeof(text), "%.12g", v);
	return strtod(text, NULL);
}

/* FROM..TO/STEP into arr. */
static int parse_range(const char *path, const cJSON *cur, enum vtype t, const char *spec,
		       cJSON *arr, char *err, size_t errlen)
{
	const char *dots = strstr(spec, "..");
	const char *slash = dots ? strchr(dots, '/') : NULL;
	char from_s[64];
	char to_s[64];
	double from;
	double to;
	double step;
	double steps;
	size_t n;
	size_t i;

	if (t != VT_NUMBER && t != VT_GUESS) {
		snprintf(err, errlen, "--vary %.200s: a range FROM..TO/STEP is of numbers, and the "
			 "value there now is %s", path, cJSON_IsBool(cur) ? "true or false" :
			 "a string");
		return -EINVAL;
	}
	if (!slash || (size_t)(dots - spec) >= sizeof(from_s) ||
	    (size_t)(slash - dots - 2) >= sizeof(to_s)) {
		snprintf(err, errlen, "--vary %.200s: expected a range FROM..TO/STEP, got \"%.60s\"",
			 path, spec);
		return -EINVAL;
	}
	snprintf(from_s, sizeof(from_s), "%.*s", (int)(dots - spec), spec);
	snprintf(to_s, sizeof(to_s), "%.*s", (int)(slash - dots - 2), dots + 2);
	if (!is_number(from_s, &from) || !is_number(to_s, &to) || !is_number(slash + 1, &step)) {
		snprintf(err, errlen, "--vary %.200s: expected a range FROM..TO/STEP of numbers, "
			 "got \"%.60s\"", path, spec);
		return -EINVAL;
	}
	if (!(step > 0) || from > to) {
		snprintf(err, errlen, "--vary %.200s: expected FROM ≤ TO and STEP above 0 in "
			 "FROM..TO/STEP, got \"%.60s\"", path, spec);
		return -EINVAL;
	}
	steps = (to - from) / step;
	if (!(floor(steps + RANGE_SLACK) + 1 <= VARY_MAX_VALUES)) {
		snprintf(err, errlen, "--vary %.200s: expected at most %d values, and \"%.60s\" "
			 "gives more", path, VARY_MAX_VALUES, spec);
		return -EINVAL;
	}
	n = (size_t)floor(steps + RANGE_SLACK) + 1;
	for (i = 0; i < n; i++) {
		double v = from + (double)i * step;
		cJSON *item;

		if (i == n - 1 && fabs(v - to) <= RANGE_SLACK * step)
			v = to;
		item = cJSON_CreateNumber(tidy(v));
		if (!item || !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Part k (from 0) of a path, whose parts are linked by '+' ("A+B": one
 * axis setting both), into out (len bytes). Returns 1, 0 past the last
 * part, -1 for an empty part or one longer than len − 1.
 */
static int path_part(const char *path, size_t k, char *out, size_t len)
{
	const char *p = path;
	const char *end;
	size_t n;

	for (; k > 0; k--) {
		p = strchr(p, VARY_LINK);
		if (!p)
			return 0;
		p++;
	}
	end = strchr(p, VARY_LINK);
	n = end ? (size_t)(end - p) : strlen(p);
	if (n == 0 || n >= len)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 1;
}

/* How many of path's parts are part. */
static size_t count_part(const char *path, const char *part)
{
	char p[VARY_PATH_MAX];
	size_t n = 0;
	size_t k;

	for (k = 0; path_part(path, k, p, sizeof(p)) == 1; k++)
		n += strcmp(p, part) == 0;
	return n;
}

/* Whether part is a part of a path the plan varies already. */
static bool overlaps(const struct vary_plan *plan, const char *part)
{
	char other[VARY_PATH_MAX];
	size_t j;
	size_t k;

	for (j = 0; j < plan->n; j++)
		for (k = 0; path_part(plan->v[j].path, k, other, sizeof(other)) == 1; k++)
			if (strcmp(other, part) == 0)
				return true;
	return false;
}

/*
 * Checks each part of path against base and the plan: settable, not
 * varied already, all of one type. The first part's current value into
 * *cur and the values' type into *t.
 */
static int check_path(const struct vary_plan *plan, const cJSON *base, const char *path,
		      const cJSON **cur, enum vtype *t, char *err, size_t errlen)
{
	char part[VARY_PATH_MAX];
	char msg[400];
	const cJSON *c;
	enum vtype tk;
	size_t k;
	int got;
	int rc;

	for (k = 0; (got = path_part(path, k, part, sizeof(part))) == 1; k++) {
		if (overlaps(plan, part) || count_part(path, part) > 1) {
			if (strchr(path, VARY_LINK))
				snprintf(err, errlen, "--vary %.200s: %.200s given twice (one --vary "
					 "per path)", path, part);
			else
				snprintf(err, errlen, "--vary %.200s: given twice (one --vary per path)",
					 path);
			return -EINVAL;
		}
		rc = jpath_settable(base, part, &c, msg, sizeof(msg));
		if (rc) {
			snprintf(err, errlen, "--vary %.200s: no such value in the scenario: %s", path,
				 msg);
			return rc == -ENOMEM ? rc : -EINVAL;
		}
		rc = type_of(c, part, &tk, err, errlen);
		if (rc)
			return rc;
		/* A key to be made takes the type of the parts that are there. */
		if (k == 0 || *t == VT_GUESS) {
			if (k == 0 || c)
				*cur = c;
			*t = tk;
		} else if (tk != *t && tk != VT_GUESS) {
			snprintf(err, errlen, "--vary %.200s: linked paths take the same values, but "
				 "%.200s holds another type than the first", path, part);
			return -EINVAL;
		}
	}
	if (got < 0) {
		snprintf(err, errlen, "--vary %.200s: expected PATH or PATH+PATH…, each part not "
			 "empty and under %d bytes", path, VARY_PATH_MAX);
		return -EINVAL;
	}
	return 0;
}

/* Appends the varied path with its values (taken over) to plan. */
static int append(struct vary_plan *plan, const char *path, cJSON *values, char *err,
		  size_t errlen)
{
	struct vary *more;
	size_t count = (size_t)cJSON_GetArraySize(values);
	char *copy = NULL;
	int rc = -ENOMEM;

	if (count == 0) {
		snprintf(err, errlen, "--vary %.200s: expected at least one value", path);
		rc = -EINVAL;
		goto out_free;
	}
	if (plan->npoints * count > VARY_MAX_POINTS) {
		snprintf(err, errlen, "--vary %.200s: the grid would have %zu points, and a sweep "
			 "has at most %d", path, plan->npoints * count, VARY_MAX_POINTS);
		rc = -EINVAL;
		goto out_free;
	}
	copy = strdup(path);
	more = realloc(plan->v, (plan->n + 1) * sizeof(*more));
	if (!copy || !more) {
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	plan->v = more;
	plan->v[plan->n].path = copy;
	plan->v[plan->n].leaf = vary_leaf(copy);
	plan->v[plan->n].values = values;
	plan->n++;
	plan->npoints *= count;
	return 0;
out_free:
	free(copy);
	cJSON_Delete(values);
	return rc;
}

/* Adds one --vary PATH=SPEC (vary.h). */
int vary_add(struct vary_plan *plan, const cJSON *base, const char *arg, char *err,
	     size_t errlen)
{
	const char *eq = strchr(arg, '=');
	const cJSON *cur;
	char *path = NULL;
	cJSON *values = NULL;
	enum vtype t;
	int rc;

	if (plan->n == 0)
		plan->npoints = 1;
	if (!eq || eq == arg) {
		snprintf(err, errlen, "--vary: expected PATH=V1,V2,… or PATH=FROM..TO/STEP, got "
			 "\"%.200s\"", arg);
		return -EINVAL;
	}
	path = strndup(arg, (size_t)(eq - arg));
	values = cJSON_CreateArray();
	if (!path || !values) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = check_path(plan, base, path, &cur, &t, err, errlen);
	if (rc)
		goto out;
	if (strstr(eq + 1, "..") && (t == VT_NUMBER || (t == VT_GUESS && !strchr(eq + 1, ','))))
		rc = parse_range(path, cur, t, eq + 1, values, err, errlen);
	else
		rc = parse_list(path, cur, t, eq + 1, values, err, errlen);
	if (rc)
		goto out;
	rc = append(plan, path, values, err, errlen);
	values = NULL;
out:
	cJSON_Delete(values);
	free(path);
	return rc;
}

/* Adds a varied path as sweep.json holds it (vary.h). */
int vary_add_json(struct vary_plan *plan, const cJSON *base, const cJSON *item, char *err,
		  size_t errlen)
{
	const char *path = json_get_string(item, "path");
	const cJSON *vals = cJSON_GetObjectItemCaseSensitive(item, "values");
	const cJSON *cur;
	const cJSON *v;
	cJSON *values;
	enum vtype t;
	int rc;

	if (plan->n == 0)
		plan->npoints = 1;
	if (!path || !cJSON_IsArray(vals)) {
		snprintf(err, errlen, "vary: expected {\"path\": PATH, \"values\": [...]}");
		return -EINVAL;
	}
	rc = check_path(plan, base, path, &cur, &t, err, errlen);
	if (rc)
		return rc;
	cJSON_ArrayForEach(v, vals) {
		bool ok = t == VT_NUMBER ? cJSON_IsNumber(v) : t == VT_STRING ? cJSON_IsString(v) :
			  t == VT_BOOL ? cJSON_IsBool(v) :
			  cJSON_IsNumber(v) || cJSON_IsString(v) || cJSON_IsBool(v);

		if (!ok) {
			snprintf(err, errlen, "--vary %.200s: a value of another type than the "
				 "scenario's", path);
			return -EINVAL;
		}
	}
	values = cJSON_Duplicate(vals, true);
	if (!values) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return append(plan, path, values, err, errlen);
}

/* The leaf of a path (vary.h). */
const char *vary_leaf(const char *path)
{
	const char *last = strrchr(path, VARY_LINK);
	const char *dot;

	last = last ? last + 1 : path;
	dot = strrchr(last, '.');
	return dot ? dot + 1 : last;
}

/* Point i's value of path j: i's digit j in the grid's mixed radix, the last fastest. */
const cJSON *vary_value(const struct vary_plan *plan, size_t i, size_t j)
{
	size_t k = plan->n;
	size_t idx = 0;

	while (k-- > j) {
		size_t count = (size_t)cJSON_GetArraySize(plan->v[k].values);

		idx = i % count;
		i /= count;
	}
	return cJSON_GetArrayItem(plan->v[j].values, (int)idx);
}

/* Point i's scenario (vary.h). */
cJSON *vary_scenario(const struct vary_plan *plan, const cJSON *base, size_t i, char *err,
		     size_t errlen)
{
	cJSON *root = cJSON_Duplicate(base, true);
	cJSON *v;
	size_t j;

	if (!root) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (j = 0; j < plan->n; j++) {
		char part[VARY_PATH_MAX];
		size_t k;

		for (k = 0; path_part(plan->v[j].path, k, part, sizeof(part)) == 1; k++) {
			v = cJSON_Duplicate(vary_value(plan, i, j), true);
			if (!v || jpath_set(root, part, v, err, errlen)) {
				if (!v)
					snprintf(err, errlen, "out of memory");
				cJSON_Delete(root);
				return NULL;
			}
		}
	}
	return root;
}

/* A value as written in the scenario (vary.h). */
int vary_value_text(const cJSON *v, struct buf *out)
{
	char *text;
	int rc;

	if (cJSON_IsString(v))
		return buf_puts(out, v->valuestring);
	text = cJSON_PrintUnformatted(v);
	if (!text)
		return -ENOMEM;
	rc = buf_puts(out, text);
	free(text);
	return rc;
}

/* "LEAF=VALUE,…" (vary.h). */
char *vary_label(const struct vary_plan *plan, size_t i)
{
	struct buf b = { 0 };
	size_t j;
	int rc = buf_puts(&b, "");

	for (j = 0; j < plan->n && !rc; j++) {
		rc = buf_printf(&b, "%s%s=", j ? "," : "", plan->v[j].leaf);
		if (!rc)
			rc = vary_value_text(vary_value(plan, i, j), &b);
	}
	if (rc) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* Appends text with every character but [A-Za-z0-9_.=-] made '_'. */
static int put_safe(struct buf *b, const char *text)
{
	const char *s;
	int rc = 0;

	for (s = text; *s && !rc; s++) {
		bool ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			  (*s >= '0' && *s <= '9') || strchr("_.=-", *s);

		rc = buf_append(b, ok ? s : "_", 1);
	}
	return rc;
}

/* "pNNN-LEAF=VALUE,…", each leaf and value made safe for a file name (vary.h). */
char *vary_dir_name(const struct vary_plan *plan, size_t i)
{
	struct buf b = { 0 };
	struct buf value = { 0 };
	size_t j;
	int rc = buf_printf(&b, "p%03zu", i + 1);

	for (j = 0; j < plan->n && !rc; j++) {
		buf_reset(&value);
		rc = buf_puts(&b, j ? "," : "-");
		if (!rc)
			rc = put_safe(&b, plan->v[j].leaf);
		if (!rc)
			rc = buf_puts(&b, "=");
		if (!rc)
			rc = vary_value_text(vary_value(plan, i, j), &value);
		if (!rc)
			rc = put_safe(&b, value.data ? value.data : "");
	}
	buf_free(&value);
	if (rc) {
		buf_free(&b);
		return NULL;
	}
	if (b.len > VARY_DIR_MAX)
		b.data[VARY_DIR_MAX] = '\0';
	return buf_steal(&b);
}

/* Frees the plan (vary.h). */
void vary_plan_free(struct vary_plan *plan)
{
	size_t j;

	for (j = 0; j < plan->n; j++) {
		free(plan->v[j].path);
		cJSON_Delete(plan->v[j].values);
	}
	free(plan->v);
	memset(plan, 0, sizeof(*plan));
}
