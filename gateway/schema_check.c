/*
 * schema_check: applying a compiled schema to an instance, and to an
 * answer's content as text.
 */
#include "gateway/schema_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* A reason's words before the instance's pointer goes in front. */
#define MSG_LEN 512

/* Why a check stopped before its answer, at SCHEMA_MAX_STEPS. */
#define STEPS_TEXT "the check took more than %d steps (the checker's bound)"

/* Writes x in as few digits as read back to the same double. */
static const char *num_text(char *out, size_t len, double x)
{
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(out, len, "%.*g", prec, x);
		if (strtod(out, NULL) == x)
			return out;
	}
	snprintf(out, len, "%.17g", x);
	return out;
}

static bool json_equal(const cJSON *a, const cJSON *b, long *steps);

/* Whether every member of a has a member of b with its name and an equal value. */
static bool members_in(const cJSON *a, const cJSON *b, long *steps)
{
	const cJSON *x;
	const cJSON *y;

	for (x = a->child; x; x = x->next) {
		for (y = b->child; y; y = y->next) {
			/* Each name compared is a step: two wide objects are quadratic. */
			if (++*steps > SCHEMA_MAX_STEPS)
				return false;
			if (strcmp(x->string, y->string) == 0 && json_equal(x, y, steps))
				break;
		}
		if (!y)
			return false;
	}
	return true;
}

/*
 * JSON equality: same type (0 is not false), numbers by value (1 == 1.0,
 * 0 == -0), arrays item by item, objects by their members in any order.
 * Each value compared is a step of *steps; past SCHEMA_MAX_STEPS the
 * answer is false (the caller looks at *steps to tell).
 */
static bool json_equal(const cJSON *a, const cJSON *b, long *steps)
{
	const cJSON *x;
	const cJSON *y;

	if (++*steps > SCHEMA_MAX_STEPS || (a->type & 0xff) != (b->type & 0xff))
		return false;
	switch (a->type & 0xff) {
	case cJSON_False:
	case cJSON_True:
	case cJSON_NULL:
		return true;
	case cJSON_Number:
		return a->valuedouble == b->valuedouble;
	case cJSON_String:
		return strcmp(a->valuestring, b->valuestring) == 0;
	case cJSON_Array:
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			if (!json_equal(x, y, steps))
				return false;
		return !x && !y;
	case cJSON_Object:
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			;
		return !x && !y && members_in(a, b, steps) && members_in(b, a, steps);
	default:
		return false;
	}
}

/* How many Unicode code points the UTF-8 text s holds: its bytes that start one. */
static size_t code_points(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* ---- checking ---- */

/* What a check carries along. */
struct ck {
	struct path path;		/* the instance's pointer */
	char *why;
	size_t whylen;
	unsigned quiet;			/* inside anyOf: a failed branch says nothing */
	long steps;			/* schemas applied and values compared so far */
	bool stopped;			/* a bound was passed: the whole check fails */
};

/* Writes "POINTER: what" (what alone at the root) as the reason. */
static void ck_vwrite(struct ck *k, const char *fmt, va_list ap)
{
	char what[MSG_LEN];

	vsnprintf(what, sizeof(what), fmt, ap);
	if (k->path.len)
		schema__message(k->why, k->whylen, "%s: %s", k->path.buf, what);
	else
		schema__message(k->why, k->whylen, "%s", what);
}

/* The instance fails: the reason written, unless inside anyOf or stopped. Returns false. */
static bool ck_fail(struct ck *k, const char *fmt, ...)
{
	va_list ap;

	if (k->quiet || k->stopped)
		return false;
	va_start(ap, fmt);
	ck_vwrite(k, fmt, ap);
	va_end(ap);
	return false;
}

/*
 * The check passed a bound (SCHEMA_MAX_DEPTH or SCHEMA_MAX_STEPS): it
 * stops there and fails, the first such reason written even inside anyOf.
 * Returns false.
 */
static bool ck_stop(struct ck *k, const char *fmt, ...)
{
	va_list ap;

	if (k->stopped)
		return false;
	k->stopped = true;
	va_start(ap, fmt);
	ck_vwrite(k, fmt, ap);
	va_end(ap);
	return false;
}

static bool check(struct ck *k, const struct node *n, const cJSON *v, int depth);

/* minimum, maximum, exclusiveMinimum, exclusiveMaximum. */
static bool check_number(struct ck *k, const struct node *n, double x)
{
	char a[32];
	char b[32];

	if (x < n->minimum)
		return ck_fail(k, "%s is less than minimum %s", num_text(a, sizeof(a), x),
			       num_text(b, sizeof(b), n->minimum));
	if (x > n->maximum)
		return ck_fail(k, "%s is greater than maximum %s", num_text(a, sizeof(a), x),
			       num_text(b, sizeof(b), n->maximum));
	if (x <= n->ex_minimum)
		return ck_fail(k, "%s is not greater than exclusiveMinimum %s",
			       num_text(a, sizeof(a), x), num_text(b, sizeof(b), n->ex_minimum));
	if (x >= n->ex_maximum)
		return ck_fail(k, "%s is not less than exclusiveMaximum %s",
			       num_text(a, sizeof(a), x), num_text(b, sizeof(b), n->ex_maximum));
	return true;
}

/* minLength, maxLength, in code points. */
static bool check_string(struct ck *k, const struct node *n, const char *s)
{
	size_t len = code_points(s);
	char b[32];

	if ((double)len < n->min_length)
		return ck_fail(k, "%zu character%s, fewer than minLength %s", len,
			       len == 1 ? "" : "s", num_text(b, sizeof(b), n->min_length));
	if ((double)len > n->max_length)
		return ck_fail(k, "%zu character%s, more than maxLength %s", len,
			       len == 1 ? "" : "s", num_text(b, sizeof(b), n->max_length));
	return true;
}

/* minItems, maxItems, then items on each item. */
static bool check_array(struct ck *k, const struct node *n, const cJSON *v, int depth)
{
	size_t count = schema__child_count(v);
	const cJSON *item;
	char b[32];
	size_t i = 0;

	if ((double)count < n->min_items)
		return ck_fail(k, "%zu item%s, fewer than minItems %s", count,
			       count == 1 ? "" : "s", num_text(b, sizeof(b), n->min_items));
	if ((double)count > n->max_items)
		return ck_fail(k, "%zu item%s, more than maxItems %s", count,
			       count == 1 ? "" : "s", num_text(b, sizeof(b), n->max_items));
	if (!n->items)
		return true;
	for (item = v->child; item; item = item->next, i++) {
		size_t old = schema__path_push_index(&k->path, i);
		bool ok = check(k, n->items, item, depth + 1);

		schema__path_pop(&k->path, old);
		if (!ok)
			return false;
	}
	return true;
}

/* The schema properties gives name, or NULL. */
static const struct node *prop_find(const struct node *n, const char *name)
{
	struct prop key = { .name = name };
	const struct prop *p = n->nprops ? bsearch(&key, n->props, n->nprops, sizeof(*n->props),
						    schema__prop_cmp) : NULL;

	return p ? p->schema : NULL;
}

/* required, then each member (every one, a repeated name too) against its schema. */
static bool check_object(struct ck *k, const struct node *n, const cJSON *v, int depth)
{
	const cJSON *m;
	size_t i;

	for (i = 0; i < n->nrequired; i++) {
		/* Each member looked at is a step: many required names over a wide object. */
		for (m = v->child; m && strcmp(m->string, n->required[i]) != 0; m = m->next)
			if (++k->steps > SCHEMA_MAX_STEPS)
				return ck_stop(k, STEPS_TEXT, SCHEMA_MAX_STEPS);
		if (!m)
			return ck_fail(k, "missing required property \"%s\"", n->required[i]);
	}
	for (m = v->child; m; m = m->next) {
		const struct node *sub = prop_find(n, m->string);
		size_t old;
		bool ok;

		if (!sub && !n->additional)
			continue;
		if (!sub && n->additional->never)
			return ck_fail(k, "property \"%s\" is not allowed (additionalProperties is "
				       "false)", m->string);
		old = schema__path_push(&k->path, m->string);
		ok = check(k, sub ? sub : n->additional, m, depth + 1);
		schema__path_pop(&k->path, old);
		if (!ok)
			return false;
	}
	return true;
}

/* anyOf: one branch or more passes, tried in order. */
static bool check_any_of(struct ck *k, const struct node *n, const cJSON *v, int depth)
{
	size_t i;
	bool ok = false;

	k->quiet++;
	for (i = 0; i < n->nany_of && !ok && !k->stopped; i++)
		ok = check(k, n->any_of[i], v, depth + 1);
	k->quiet--;
	if (ok)
		return true;
	if (k->stopped)
		return false;
	if (n->nany_of == 1)
		return ck_fail(k, "does not match the one schema of anyOf");
	return ck_fail(k, "matches none of the %zu schemas of anyOf", n->nany_of);
}

/* Whether v is in the array enum_values. */
static bool in_enum(struct ck *k, const cJSON *enum_values, const cJSON *v)
{
	const cJSON *e;

	for (e = enum_values->child; e && k->steps <= SCHEMA_MAX_STEPS; e = e->next)
		if (json_equal(e, v, &k->steps))
			return true;
	return false;
}

/*
 * Checks v against n, the depth-th schema applied one inside another.
 * A $ref is its target alone; the rest are checked in the order below,
 * the first failure the reason.
 */
static bool check(struct ck *k, const struct node *n, const cJSON *v, int depth)
{
	size_t nenum = n->enum_values ? schema__child_count(n->enum_values) : 0;
	char a[96];

	if (depth > SCHEMA_MAX_DEPTH)
		return ck_stop(k, "more than %d schemas deep (the checker's bound)", SCHEMA_MAX_DEPTH);
	if (++k->steps > SCHEMA_MAX_STEPS)
		return ck_stop(k, STEPS_TEXT, SCHEMA_MAX_STEPS);
	if (n->target)
		return check(k, n->target, v, depth + 1);
	if (n->never)
		return ck_fail(k, "no value is allowed here (the schema is false)");
	if (n->types && !(n->types & schema__type_bits(v)))
		return ck_fail(k, "expected type %s, got %s",
			       schema__types_text(a, sizeof(a), n->types), schema__type_name(v));
	if (n->enum_values && !in_enum(k, n->enum_values, v))
		return k->steps > SCHEMA_MAX_STEPS ? ck_stop(k, STEPS_TEXT, SCHEMA_MAX_STEPS)
			: ck_fail(k, "not one of the %zu value%s of enum", nenum, nenum == 1 ? "" : "s");
	if (n->const_value && !json_equal(n->const_value, v, &k->steps))
		return k->steps > SCHEMA_MAX_STEPS ? ck_stop(k, STEPS_TEXT, SCHEMA_MAX_STEPS)
			: ck_fail(k, "not the value of const");
	if (cJSON_IsNumber(v) && !check_number(k, n, v->valuedouble))
		return false;
	if (cJSON_IsString(v) && !check_string(k, n, v->valuestring))
		return false;
	if (cJSON_IsArray(v) && !check_array(k, n, v, depth))
		return false;
	if (cJSON_IsObject(v) && !check_object(k, n, v, depth))
		return false;
	if (n->nany_of && !check_any_of(k, n, v, depth))
		return false;
	return true;
}

bool schema_check(const struct schema *s, const cJSON *instance, char *why, size_t whylen)
{
	struct ck k = { .why = why, .whylen = whylen };

	if (why && whylen)
		why[0] = '\0';
	if (!instance)
		return ck_fail(&k, "no value");
	return check(&k, s->root, instance, 1);
}

/* Why text is not strict JSON, into why: where cJSON stops, or what follows the value. */
static void explain_not_json(const char *text, size_t len, char *why, size_t whylen)
{
	const char *end = NULL;
	cJSON *v;
	size_t i = 0;

	while (i < len && json_is_ws(text[i]))
		i++;
	if (i == len) {
		schema__message(why, whylen, "content is empty");
		return;
	}
	if (memchr(text, '\0', len)) {
		schema__message(why, whylen, "content is not JSON (a NUL byte at byte %zu)",
				(size_t)((const char *)memchr(text, '\0', len) - text));
		return;
	}
	v = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!v) {
		schema__message(why, whylen, "content is not JSON (at byte %zu)",
				end ? (size_t)(end - text) : (size_t)0);
		return;
	}
	cJSON_Delete(v);
	for (i = (size_t)(end - text); i < len && json_is_ws(text[i]); i++)
		;
	if (i < len)
		schema__message(why, whylen, "content has more after its JSON value (at byte %zu)",
				i);
	else
		schema__message(why, whylen, "content is not strict JSON (a control character "
				"outside a string, a byte-order mark, a bad \\u escape, or a "
				"number JSON does not allow, such as 01)");
}

bool schema_check_text(const struct schema *s, const char *text, size_t len, char *why,
		       size_t whylen)
{
	cJSON *v;
	bool ok;

	if (why && whylen)
		why[0] = '\0';
	v = json_parse_whole(text, len);
	if (!v) {
		explain_not_json(text, len, why, whylen);
		return false;
	}
	if (json_string_has_nul(text, len)) {
		cJSON_Delete(v);
		schema__message(why, whylen,
				"content has a string holding \\u0000, which cannot be checked");
		return false;
	}
	if (s) {
		ok = schema_check(s, v, why, whylen);
	} else {
		ok = cJSON_IsObject(v);
		if (!ok)
			schema__message(why, whylen, "content is a JSON %s, not an object",
					schema__type_name(v));
	}
	cJSON_Delete(v);
	return ok;
}
