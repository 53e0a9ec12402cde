/*
 * contract: a JSON document for a request's schema, written straight into
 * a buffer, and the bad_content violations of it.
 *
 * The schema subset followed (docs/mockprov.md, "Content under
 * response_format"): type (a list: its first type other than "null"),
 * properties and required, enum (the first value), const, items,
 * prefixItems, minItems, maxItems, minLength, maxLength, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, multipleOf, format (a fixed value of
 * the common formats), anyOf and oneOf (the first branch that is not only
 * null), allOf (its first branch) and $ref to a JSON pointer in the
 * document (#/definitions/X, #/$defs/X, #). Everything else is ignored
 * (pattern is not honoured: such a string gets a fixed value).
 *
 * Objects near the top (the first SHALLOW levels) get every property in
 * `properties`, and arrays without minItems one item; deeper, only the
 * required properties and minItems items, so a recursive schema ends. Past
 * CONTRACT_MAX_DEPTH levels a value is null; past CONTRACT_MAX_VALUES values
 * or CONTRACT_MAX_BYTES bytes the document is closed as it stands (valid
 * JSON, possibly short of keys and items): a mock's bounds, whatever the
 * schema.
 */
#include "mockprov/contract.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* Levels at which optional properties and a first array item are still written. */
#define SHALLOW 4
/* Properties and required names looked at per object. */
#define PROPS_MAX 1000
/* Members of a schema object searched for a keyword; entries of a type list or anyOf. */
#define SCAN_MAX 64
/*
 * Members and entries a document may look at in all (properties, required
 * names, $ref paths, array indexes): past it the document is closed as it
 * stands, so no schema, however wide, holds mockprov's loop for long.
 */
#define STEPS_MAX 2000000

const char *const contract_violation_names[] = {
	[VIOLATION_PROSE] = "prose",
	[VIOLATION_MISSING_KEY] = "missing_key",
	[VIOLATION_WRONG_TYPE] = "wrong_type",
	[VIOLATION_NONE] = NULL,
};

enum vtype { T_ANY, T_STRING, T_NUMBER, T_INTEGER, T_BOOLEAN, T_NULL, T_OBJECT, T_ARRAY };

struct gen {
	const cJSON *root;	/* the schema: where $ref points */
	struct buf *out;
	const char *text;	/* the words */
	size_t len;
	bool text_clean;	/* text needs no escaping inside a JSON string */
	size_t text_at;		/* where the words went, or SIZE_MAX */
	int values;		/* values written so far */
	long steps;		/* members and entries looked at so far */
	int rc;			/* -ENOMEM once a write failed */
};

/* ---- writing ---- */

static void put(struct gen *g, const char *s, size_t n)
{
	if (!g->rc && buf_append(g->out, s, n))
		g->rc = -ENOMEM;
}

static void puts_(struct gen *g, const char *s)
{
	put(g, s, strlen(s));
}

static void put_escaped(struct gen *g, const char *s)
{
	if (!g->rc && json_escape(g->out, s))
		g->rc = -ENOMEM;
}

/* A JSON value as written (an enum's or const's). */
static void put_value(struct gen *g, const cJSON *v)
{
	char *s = cJSON_PrintUnformatted(v);

	if (!s) {
		g->rc = -ENOMEM;
		return;
	}
	puts_(g, s);
	cJSON_free(s);
}

static bool spent(const struct gen *g)
{
	return g->rc || g->values >= CONTRACT_MAX_VALUES || g->out->len >= CONTRACT_MAX_BYTES ||
	       g->steps > STEPS_MAX;
}

/* Counts one member or entry looked at; false once the document's steps are spent. */
static bool step(struct gen *g)
{
	return ++g->steps <= STEPS_MAX;
}

/* True when the words can sit inside a JSON string as they are. */
static bool clean(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/* ---- reading the schema ---- */

/* A keyword of schema object s, looked for among its first SCAN_MAX members. */
static const cJSON *get(const cJSON *s, const char *key)
{
	const cJSON *c;
	int n = 0;

	if (!cJSON_IsObject(s))
		return NULL;
	for (c = s->child; c && n < SCAN_MAX; c = c->next, n++) {
		if (c->string && strcmp(c->string, key) == 0)
			return c;
	}
	return NULL;
}

/* Member key of object obj (a property, a definition), the members looked at counted. */
static const cJSON *child(struct gen *g, const cJSON *obj, const char *key)
{
	const cJSON *c;

	if (!cJSON_IsObject(obj))
		return NULL;
	for (c = obj->child; c && step(g); c = c->next) {
		if (c->string && strcmp(c->string, key) == 0)
			return c;
	}
	return NULL;
}

/* Entry i of array arr, or NULL past its end; the entries passed counted. */
static const cJSON *nth(struct gen *g, const cJSON *arr, long i)
{
	const cJSON *c;

	if (!cJSON_IsArray(arr) || i < 0)
		return NULL;
	for (c = arr->child; c && i > 0 && step(g); c = c->next)
		i--;
	return i == 0 ? c : NULL;
}

/* A number keyword, or def when absent or not a number. */
static double num(const cJSON *s, const char *key, double def)
{
	const cJSON *v = get(s, key);

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : def;
}

/* A count keyword (minItems, minLength…), capped; -1 when absent. */
static long count(const cJSON *s, const char *key)
{
	double v = num(s, key, -1);

	if (v < 0)
		return -1;
	return v > CONTRACT_MIN_CAP ? CONTRACT_MIN_CAP : (long)v;
}

/*
 * The node a JSON pointer ("#", "#/$defs/X", "#/definitions/a~1b")
 * names in root, or NULL. Only pointers into this document.
 */
static const cJSON *pointer(struct gen *g, const char *ref)
{
	const cJSON *at = g->root;
	char tok[256];

	if (ref[0] != '#')
		return NULL;
	ref++;
	while (*ref == '/' && at) {
		size_t n = 0;

		ref++;
		while (*ref && *ref != '/' && n + 1 < sizeof(tok)) {
			if (ref[0] == '~' && (ref[1] == '0' || ref[1] == '1')) {
				tok[n++] = ref[1] == '0' ? '~' : '/';
				ref += 2;
			} else {
				tok[n++] = *ref++;
			}
		}
		tok[n] = '\0';
		if (*ref && *ref != '/')
			return NULL;	/* a name too long to be one of ours */
		if (cJSON_IsArray(at)) {
			char *end;
			long i = strtol(tok, &end, 10);

			at = *tok && !*end ? nth(g, at, i) : NULL;
		} else {
			at = child(g, at, tok);
		}
	}
	return *ref ? NULL : at;
}

/* True for a schema that allows only null ({"type":"null"}). */
static bool only_null(const cJSON *s)
{
	const cJSON *t = get(s, "type");

	return cJSON_IsString(t) && strcmp(t->valuestring, "null") == 0;
}

/*
 * The schema a value is made for: $ref followed, the first branch of anyOf
 * and oneOf that is not only null, allOf's first. NULL: anything goes (an
 * absent schema, a $ref that leads nowhere, a chain too long).
 */
static const cJSON *resolve(struct gen *g, const cJSON *s)
{
	int hops;

	for (hops = 0; hops < CONTRACT_MAX_DEPTH && cJSON_IsObject(s); hops++) {
		const cJSON *ref = get(s, "$ref");
		const cJSON *any = get(s, "anyOf");
		const cJSON *b;
		int n = 0;

		if (cJSON_IsString(ref)) {
			s = pointer(g, ref->valuestring);
			continue;
		}
		if (!cJSON_IsArray(any) || !any->child)
			any = get(s, "oneOf");
		if (cJSON_IsArray(any) && any->child) {
			s = any->child;
			for (b = any->child; b && n < SCAN_MAX; b = b->next, n++) {
				if (!only_null(b)) {
					s = b;
					break;
				}
			}
			continue;
		}
		any = get(s, "allOf");
		if (cJSON_IsArray(any) && any->child) {
			s = any->child;
			continue;
		}
		return s;
	}
	return cJSON_IsObject(s) ? NULL : s;	/* a boolean schema, or too many hops */
}

static enum vtype type_named(const char *t)
{
	static const struct { const char *name; enum vtype t; } names[] = {
		{ "string", T_STRING }, { "number", T_NUMBER }, { "integer", T_INTEGER },
		{ "boolean", T_BOOLEAN }, { "null", T_NULL }, { "object", T_OBJECT },
		{ "array", T_ARRAY },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(t, names[i].name) == 0)
			return names[i].t;
	}
	return T_ANY;
}

/* The type of a JSON value (an enum's or const's). */
static enum vtype type_of_value(const cJSON *v)
{
	if (cJSON_IsString(v))
		return T_STRING;
	if (cJSON_IsNumber(v))
		return T_NUMBER;
	if (cJSON_IsBool(v))
		return T_BOOLEAN;
	if (cJSON_IsObject(v))
		return T_OBJECT;
	if (cJSON_IsArray(v))
		return T_ARRAY;
	return T_NULL;
}

/* The fixed value a schema asks for (const, enum's first), or NULL. */
static const cJSON *fixed(const cJSON *s)
{
	const cJSON *v = get(s, "const");
	const cJSON *e;

	if (v)
		return v;
	e = get(s, "enum");
	return cJSON_IsArray(e) ? e->child : NULL;
}

/* The type a (resolved) schema's value has; T_ANY is written as a string. */
static enum vtype type_of(const cJSON *s)
{
	static const char *const object_keys[] = { "properties", "required", "additionalProperties" };
	static const char *const array_keys[] = { "items", "prefixItems", "minItems", "maxItems" };
	static const char *const number_keys[] = { "minimum", "maximum", "exclusiveMinimum",
						   "exclusiveMaximum", "multipleOf" };
	const cJSON *t = get(s, "type");
	const cJSON *v = fixed(s);
	const cJSON *e;
	size_t i;

	if (v)
		return type_of_value(v);
	if (cJSON_IsString(t))
		return type_named(t->valuestring);
	if (cJSON_IsArray(t)) {
		enum vtype first = T_ANY;
		int n = 0;

		for (e = t->child; e && n < SCAN_MAX; e = e->next, n++) {
			if (!cJSON_IsString(e))
				continue;
			if (strcmp(e->valuestring, "null") != 0)
				return type_named(e->valuestring);
			first = T_NULL;
		}
		return first;
	}
	for (i = 0; i < sizeof(object_keys) / sizeof(object_keys[0]); i++) {
		if (get(s, object_keys[i]))
			return T_OBJECT;
	}
	for (i = 0; i < sizeof(array_keys) / sizeof(array_keys[0]); i++) {
		if (get(s, array_keys[i]))
			return T_ARRAY;
	}
	for (i = 0; i < sizeof(number_keys) / sizeof(number_keys[0]); i++) {
		if (get(s, number_keys[i]))
			return T_NUMBER;
	}
	return T_ANY;
}

/* The first name among the first PROPS_MAX entries of "required", or NULL. */
static const char *first_required(const cJSON *s)
{
	const cJSON *req = get(s, "required");
	const cJSON *r;
	int n = 0;

	if (!cJSON_IsArray(req))
		return NULL;
	for (r = req->child; r && n < PROPS_MAX; r = r->next, n++) {
		if (cJSON_IsString(r))
			return r->valuestring;
	}
	return NULL;
}

/*
 * True when name is among the first PROPS_MAX entries of list (before
 * stop, when given); the entries looked at counted.
 */
static bool listed(struct gen *g, const cJSON *list, const char *name, const cJSON *stop)
{
	const cJSON *r;
	int n = 0;

	if (!cJSON_IsArray(list))
		return false;
	for (r = list->child; r && r != stop && n < PROPS_MAX && step(g); r = r->next, n++) {
		if (cJSON_IsString(r) && strcmp(r->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* ---- values ---- */

static void gen(struct gen *g, const cJSON *s, int level);

/* A value of another type than t: a string-like one as 42, the rest as "42". */
static void put_wrong(struct gen *g, enum vtype t)
{
	puts_(g, t == T_STRING || t == T_ANY || t == T_NULL ? "42" : "\"42\"");
}

static const char *format_value(const char *fmt)
{
	static const struct { const char *name; const char *value; } formats[] = {
		{ "date-time", "2026-01-01T00:00:00Z" }, { "date", "2026-01-01" },
		{ "time", "00:00:00Z" }, { "email", "mock@example.com" },
		{ "uri", "https://example.com/" }, { "url", "https://example.com/" },
		{ "uuid", "00000000-0000-4000-8000-000000000000" },
		{ "hostname", "example.com" }, { "ipv4", "127.0.0.1" }, { "ipv6", "::1" },
	};
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(fmt, formats[i].name) == 0)
			return formats[i].value;
	}
	return "mock";
}

/*
 * A string: the words when they are still to be placed and fit (no
 * format or pattern, within maxLength), padded with '.' to minLength;
 * else "mock" or a format's value, cut to maxLength and padded with 'x'.
 */
static void gen_string(struct gen *g, const cJSON *s)
{
	long min = count(s, "minLength");
	double max = num(s, "maxLength", -1);
	const cJSON *fmt = get(s, "format");
	char value[64];
	size_t n;

	if (g->text_at == SIZE_MAX && g->text_clean && !cJSON_IsString(fmt) &&
	    !get(s, "pattern") && (max < 0 || (double)g->len <= max)) {
		put(g, "\"", 1);
		if (!g->rc)
			g->text_at = g->out->len;
		put(g, g->text, g->len);
		for (n = g->len; (long)n < min; n++)
			put(g, ".", 1);
		put(g, "\"", 1);
		return;
	}
	snprintf(value, sizeof(value), "%s",
		 cJSON_IsString(fmt) ? format_value(fmt->valuestring) : "mock");
	n = strlen(value);
	if (max >= 0 && (double)n > max)
		value[n = (size_t)max] = '\0';
	put(g, "\"", 1);
	put(g, value, n);
	for (; (long)n < min; n++)
		put(g, "x", 1);
	put(g, "\"", 1);
}

/* Prints v as JSON: the shortest of %.15g and %.17g that reads back as v. */
static void put_number(struct gen *g, double v)
{
	char s[40];

	snprintf(s, sizeof(s), "%.15g", v);
	if (strtod(s, NULL) != v)
		snprintf(s, sizeof(s), "%.17g", v);
	puts_(g, s);
}

/*
 * A number in range: 0 when it may be, else the bound (one step inside an
 * exclusive bound; the middle when both bounds are exclusive), moved up to
 * a multipleOf when that stays in range. Integers are whole and within
 * ±(2^53 − 1).
 */
static void gen_number(struct gen *g, const cJSON *s, bool integer)
{
	double lo = num(s, "minimum", -INFINITY);
	double hi = num(s, "maximum", INFINITY);
	double m = num(s, "multipleOf", 0);
	const cJSON *xlo = get(s, "exclusiveMinimum");
	const cJSON *xhi = get(s, "exclusiveMaximum");
	bool lo_ex = cJSON_IsTrue(xlo);		/* draft 4: a flag on minimum */
	bool hi_ex = cJSON_IsTrue(xhi);
	double v = 0;
	double q;

	if (cJSON_IsNumber(xlo) && isfinite(xlo->valuedouble) && xlo->valuedouble >= lo) {
		lo = xlo->valuedouble;
		lo_ex = true;
	}
	if (cJSON_IsNumber(xhi) && isfinite(xhi->valuedouble) && xhi->valuedouble <= hi) {
		hi = xhi->valuedouble;
		hi_ex = true;
	}
	if (integer) {
		lo = lo_ex ? floor(lo) + 1 : ceil(lo);
		hi = hi_ex ? ceil(hi) - 1 : floor(hi);
		lo_ex = hi_ex = false;
	}
	if (v < lo || (lo_ex && v <= lo))
		v = !lo_ex ? lo : isfinite(hi) ? (lo + hi) / 2 : lo + 1;
	if (v > hi || (hi_ex && v >= hi))
		v = !hi_ex ? hi : isfinite(lo) ? (lo + hi) / 2 : hi - 1;
	if (m > 0 && isfinite(v)) {
		q = ceil(v / m) * m;
		if (isfinite(q) && q <= hi && (!integer || q == floor(q)))
			v = q;
	}
	if (!isfinite(v))
		v = 0;
	if (integer)
		v = fmin(fmax(round(v), -9007199254740991.0), 9007199254740991.0);
	put_number(g, v);
}

/*
 * An object: its properties in the schema's order (optional ones only near
 * the top), then the required names the properties do not describe.
 * v breaks it at its first required key (the top level's violation).
 */
static void gen_object(struct gen *g, const cJSON *s, int level, enum contract_violation v)
{
	const cJSON *props = get(s, "properties");
	const cJSON *req = get(s, "required");
	const cJSON *reqs = cJSON_IsArray(req) ? req : NULL;
	const char *target = v == VIOLATION_NONE ? NULL : first_required(s);
	const cJSON *p;
	bool first = true;
	int n = 0;

	put(g, "{", 1);
	if (!cJSON_IsObject(props))
		props = NULL;
	for (p = props ? props->child : NULL; p && n < PROPS_MAX && step(g) && !spent(g);
	     p = p->next, n++) {
		bool required = listed(g, req, p->string, NULL);
		bool hit = target && strcmp(p->string, target) == 0;

		if (!required && level >= SHALLOW)
			continue;
		if (hit && v == VIOLATION_MISSING_KEY)
			continue;
		if (!first)
			put(g, ",", 1);
		first = false;
		put_escaped(g, p->string);
		put(g, ":", 1);
		if (hit) {
			const cJSON *r = resolve(g, p);

			put_wrong(g, type_of(r));
		} else {
			gen(g, p, level + 1);
		}
	}
	n = 0;
	cJSON_ArrayForEach(p, reqs) {
		bool hit;

		if (n++ >= PROPS_MAX || spent(g))
			break;
		if (!cJSON_IsString(p) || (props && child(g, props, p->valuestring)) ||
		    listed(g, req, p->valuestring, p))
			continue;	/* described above, or named twice */
		hit = target && strcmp(p->valuestring, target) == 0;
		if (hit && v == VIOLATION_MISSING_KEY)
			continue;
		if (!first)
			put(g, ",", 1);
		first = false;
		put_escaped(g, p->valuestring);
		put(g, ":", 1);
		if (hit)
			put_wrong(g, T_ANY);
		else
			gen(g, NULL, level + 1);
	}
	put(g, "}", 1);
}

/* The schema of array item i: prefixItems[i], a draft-4 items list's, or items. */
static const cJSON *item_schema(struct gen *g, const cJSON *s, long i)
{
	const cJSON *prefix = nth(g, get(s, "prefixItems"), i);
	const cJSON *items = get(s, "items");

	if (prefix)
		return prefix;
	return cJSON_IsArray(items) ? nth(g, items, i) : items;
}

/* An array of minItems items (one near the top without minItems; within maxItems). */
static void gen_array(struct gen *g, const cJSON *s, int level)
{
	long n = count(s, "minItems");
	double max = num(s, "maxItems", -1);
	long i;

	if (n < 0) {
		n = level < SHALLOW ? 1 : 0;
		if (max >= 0 && (double)n > max)
			n = 0;
	}
	put(g, "[", 1);
	for (i = 0; i < n && !spent(g); i++) {
		if (i)
			put(g, ",", 1);
		gen(g, item_schema(g, s, i), level + 1);
	}
	put(g, "]", 1);
}

/* One value for schema s at nesting level level. */
static void gen(struct gen *g, const cJSON *s, int level)
{
	const cJSON *v;

	g->values++;
	s = resolve(g, s);
	if (level >= CONTRACT_MAX_DEPTH || spent(g)) {
		puts_(g, "null");
		return;
	}
	v = fixed(s);
	if (v) {
		put_value(g, v);
		return;
	}
	switch (type_of(s)) {
	case T_NUMBER:
		gen_number(g, s, false);
		break;
	case T_INTEGER:
		gen_number(g, s, true);
		break;
	case T_BOOLEAN:
		puts_(g, "true");
		break;
	case T_NULL:
		puts_(g, "null");
		break;
	case T_OBJECT:
		gen_object(g, s, level, VIOLATION_NONE);
		break;
	case T_ARRAY:
		gen_array(g, s, level);
		break;
	default:
		gen_string(g, s);
		break;
	}
}

/* ---- the content ---- */

void contract_read(const cJSON *rf, struct contract *c)
{
	const cJSON *type = get(rf, "type");
	const cJSON *schema;

	c->kind = CONTRACT_NONE;
	c->schema = NULL;
	if (!cJSON_IsString(type))
		return;
	if (strcmp(type->valuestring, "json_object") == 0) {
		c->kind = CONTRACT_JSON_OBJECT;
	} else if (strcmp(type->valuestring, "json_schema") == 0) {
		schema = get(get(rf, "json_schema"), "schema");
		c->kind = CONTRACT_JSON_OBJECT;
		if (cJSON_IsObject(schema) || cJSON_IsBool(schema)) {
			c->kind = CONTRACT_JSON_SCHEMA;
			c->schema = schema;
		}
	}
}

/* "KEY":"TEXT" of the json_object shapes, the words verbatim when they can be. */
static void put_text_member(struct gen *g, const char *key)
{
	char *copy;

	puts_(g, key);
	if (g->text_clean) {
		put(g, "\"", 1);
		if (!g->rc)
			g->text_at = g->out->len;
		put(g, g->text, g->len);
		put(g, "\"", 1);
		return;
	}
	/* Words that need escaping are escaped, and their place is lost. */
	copy = strndup(g->text, g->len);
	if (!copy) {
		g->rc = -ENOMEM;
		return;
	}
	put_escaped(g, copy);
	free(copy);
}

/* The document for a json_schema contract, broken as v says. */
static void schema_document(struct gen *g, enum contract_violation v)
{
	const cJSON *top = resolve(g, g->root);
	enum vtype t = type_of(top);

	if (v == VIOLATION_NONE) {
		gen(g, g->root, 0);
	} else if (t == T_OBJECT && !fixed(top) && first_required(top)) {
		g->values++;
		gen_object(g, top, 0, v);
	} else if (v == VIOLATION_MISSING_KEY) {
		puts_(g, "{}");
	} else {
		put_wrong(g, t);
	}
}

int contract_content(const struct contract *c, enum contract_violation v, const char *text,
		     size_t len, struct buf *out, size_t *text_at)
{
	struct gen g = {
		.root = c->schema,
		.out = out,
		.text = text,
		.len = len,
		.text_clean = clean(text, len),
		.text_at = SIZE_MAX,
	};

	if (c->kind == CONTRACT_NONE || v == VIOLATION_PROSE) {
		if (c->kind != CONTRACT_NONE || v != VIOLATION_NONE)
			puts_(&g, CONTRACT_PROSE_LEAD);
		if (!g.rc)
			g.text_at = out->len;
		put(&g, text, len);
	} else if (c->kind == CONTRACT_JSON_OBJECT) {
		if (v == VIOLATION_MISSING_KEY) {
			put_text_member(&g, "{\"text\":");
		} else if (v == VIOLATION_WRONG_TYPE) {
			put_text_member(&g, "{\"answer\":42,\"text\":");
		} else {
			put_text_member(&g, "{\"answer\":");
		}
		put(&g, "}", 1);
	} else {
		schema_document(&g, v);
	}
	*text_at = g.rc ? SIZE_MAX : g.text_at;
	return g.rc;
}
