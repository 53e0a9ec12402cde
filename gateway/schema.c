/*
 * schema: a subset of JSON Schema draft 7, compiled into a graph of nodes
 * (one per schema in a copy of the document, $ref an edge to its target)
 * and applied to instances.
 */
#include "gateway/schema.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* The longest JSON pointer a message shows; a longer one ends in "/...". */
#define PATH_MAX_LEN 200

/* A message before it is cut into the caller's buffer. */
#define MSG_LEN 512

static const char *const supported[] = { SCHEMA_KEYWORDS, SCHEMA_CONTAINERS, SCHEMA_ANNOTATIONS };

/* The instance types, as bits of a node's types; integer is a kind of number. */
enum {
	T_NULL = 1 << 0,
	T_BOOLEAN = 1 << 1,
	T_OBJECT = 1 << 2,
	T_ARRAY = 1 << 3,
	T_NUMBER = 1 << 4,
	T_STRING = 1 << 5,
	T_INTEGER = 1 << 6,
};

/* The names of the T_* bits, bit i named by type_names[i]. */
static const char *const type_names[] = {
	"null", "boolean", "object", "array", "number", "string", "integer",
};

/* One member of properties: a name and its schema. */
struct prop {
	const char *name;
	struct node *schema;
};

/* One compiled schema. What is absent checks nothing. */
struct node {
	bool never;			/* the schema false */
	unsigned types;			/* T_* bits; 0: any type */
	const cJSON *enum_values;	/* an array in the schema's copy, or NULL */
	const cJSON *const_value;	/* NULL: no const */
	struct prop *props;		/* sorted by name */
	size_t nprops;
	const char **required;		/* in the schema's order */
	size_t nrequired;
	struct node *additional;	/* NULL: any other property */
	struct node *items;		/* NULL: any item */
	struct node **any_of;
	size_t nany_of;
	double min_items, max_items;	/* 0 and INFINITY when absent */
	double min_length, max_length;
	double minimum, maximum;	/* -INFINITY and INFINITY when absent */
	double ex_minimum, ex_maximum;
	const char *ref;		/* the $ref as written, or NULL */
	struct node *target;		/* where ref leads: the node applied instead */
	char *where;			/* a $ref's schema's pointer, for messages */
	unsigned char mark;		/* the loop search's colour */
};

struct schema {
	cJSON *doc;			/* the copy every node points into */
	struct node *root;
	struct node **nodes;		/* every node, in the order they were made */
	size_t nnodes, cap;
};

/* A JSON pointer being built on the way down, cut at PATH_MAX_LEN. */
struct path {
	char buf[PATH_MAX_LEN + 8];
	size_t len;
	unsigned cut;			/* pushes since (and including) the one that did not fit */
};

/* ---- messages ---- */

/*
 * Formats a message and copies it into out (len bytes), cut before a UTF-8
 * sequence rather than inside one, any byte that is not UTF-8 shown as \xNN.
 */
static void vmessage(char *out, size_t len, const char *fmt, va_list ap)
{
	char tmp[MSG_LEN];

	if (!out || len == 0)
		return;
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	json_copy_cut(out, len, tmp, len - 1);
}

/* vmessage with the arguments in line. */
static void message(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(out, len, fmt, ap);
	va_end(ap);
}

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

/* ---- JSON pointers ---- */

/* Appends "/seg", escaped as a JSON pointer; returns the length path_pop goes back to. */
static size_t path_push(struct path *p, const char *seg)
{
	size_t old = p->len;
	size_t need = 1;
	const char *q;

	if (p->cut) {
		p->cut++;
		return old;
	}
	for (q = seg; *q; q++)
		need += *q == '~' || *q == '/' ? 2 : 1;
	if (p->len + need > PATH_MAX_LEN) {
		memcpy(p->buf + p->len, "/...", 5);
		p->len += 4;
		p->cut = 1;
		return old;
	}
	p->buf[p->len++] = '/';
	for (q = seg; *q; q++) {
		if (*q == '~' || *q == '/') {
			p->buf[p->len++] = '~';
			p->buf[p->len++] = *q == '~' ? '0' : '1';
		} else {
			p->buf[p->len++] = *q;
		}
	}
	p->buf[p->len] = '\0';
	return old;
}

/* Appends "/i". */
static size_t path_push_index(struct path *p, size_t i)
{
	char seg[24];

	snprintf(seg, sizeof(seg), "%zu", i);
	return path_push(p, seg);
}

/* Undoes the path_push that returned old. */
static void path_pop(struct path *p, size_t old)
{
	if (p->cut && --p->cut)
		return;
	p->len = old;
	p->buf[old] = '\0';
}

/* Sets p to the pointer text s as written (already escaped), cut like a push. */
static void path_set(struct path *p, const char *s)
{
	size_t n = strlen(s);

	p->cut = 0;
	if (n > PATH_MAX_LEN) {
		memcpy(p->buf, s, PATH_MAX_LEN);
		memcpy(p->buf + PATH_MAX_LEN, "/...", 5);
		p->len = PATH_MAX_LEN + 4;
		return;
	}
	memcpy(p->buf, s, n + 1);
	p->len = n;
}

/* A schema's pointer as messages show it. */
static const char *at(const struct path *p)
{
	return p->len ? p->buf : "the root";
}

/* ---- JSON values ---- */

/* Whether x is a number with no fraction. */
static bool is_integral(double x)
{
	return isfinite(x) && floor(x) == x;
}

/* The T_* bits a value has: a number with no fraction is also an integer. */
static unsigned type_bits(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return T_NULL;
	if (cJSON_IsBool(v))
		return T_BOOLEAN;
	if (cJSON_IsObject(v))
		return T_OBJECT;
	if (cJSON_IsArray(v))
		return T_ARRAY;
	if (cJSON_IsString(v))
		return T_STRING;
	if (cJSON_IsNumber(v))
		return T_NUMBER | (is_integral(v->valuedouble) ? T_INTEGER : 0);
	return 0;
}

/* The name of a value's type, as messages show it. */
static const char *type_name(const cJSON *v)
{
	unsigned bits = type_bits(v) & ~(unsigned)T_INTEGER;
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (bits == 1u << i)
			return type_names[i];
	return "an unknown value";
}

/* The T_* bit of a type name, or 0 when it names none. */
static unsigned type_bit(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(name, type_names[i]) == 0)
			return 1u << i;
	return 0;
}

static bool json_equal(const cJSON *a, const cJSON *b);

/* Whether every member of a has a member of b with its name and an equal value. */
static bool members_in(const cJSON *a, const cJSON *b)
{
	const cJSON *x;
	const cJSON *y;

	for (x = a->child; x; x = x->next) {
		for (y = b->child; y; y = y->next)
			if (strcmp(x->string, y->string) == 0 && json_equal(x, y))
				break;
		if (!y)
			return false;
	}
	return true;
}

/*
 * JSON equality: same type (0 is not false), numbers by value (1 == 1.0,
 * 0 == -0), arrays item by item, objects by their members in any order.
 */
static bool json_equal(const cJSON *a, const cJSON *b)
{
	const cJSON *x;
	const cJSON *y;

	if ((a->type & 0xff) != (b->type & 0xff))
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
			if (!json_equal(x, y))
				return false;
		return !x && !y;
	case cJSON_Object:
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			;
		return !x && !y && members_in(a, b) && members_in(b, a);
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

/* How many items or members v has. */
static size_t child_count(const cJSON *v)
{
	size_t n = 0;
	const cJSON *c;

	for (c = v->child; c; c = c->next)
		n++;
	return n;
}

/* ---- compiling ---- */

/* Pointers into the schema's copy mapped to the nodes made from them. */
struct map {
	const cJSON **keys;
	struct node **vals;
	size_t cap, n;			/* cap: 0 or a power of two */
};

/* What a compile carries along. */
struct cc {
	struct schema *s;
	struct map map;
	struct path path;
	char *err;
	size_t errlen;
	bool failed;
};

/* Records the compile's first error; returns false. */
static bool cc_fail(struct cc *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return false;
	c->failed = true;
	va_start(ap, fmt);
	vmessage(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* The slot of key in m: where it is, or the empty one it would go in. */
static size_t map_slot(const struct map *m, const cJSON *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key;
	size_t i;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	for (i = (size_t)h & (m->cap - 1); m->keys[i] && m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		;
	return i;
}

/* The node made from key, or NULL. */
static struct node *map_get(const struct map *m, const cJSON *key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = map_slot(m, key);
	return m->keys[i] ? m->vals[i] : NULL;
}

/* Maps key to val (key not there yet), growing m at half full. Returns false when out of memory. */
static bool map_put(struct map *m, const cJSON *key, struct node *val)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		struct map g = { .cap = m->cap ? 2 * m->cap : 64 };

		g.keys = calloc(g.cap, sizeof(*g.keys));
		g.vals = calloc(g.cap, sizeof(*g.vals));
		if (!g.keys || !g.vals) {
			free(g.keys);
			free(g.vals);
			return false;
		}
		for (i = 0; i < m->cap; i++) {
			if (m->keys[i]) {
				size_t j = map_slot(&g, m->keys[i]);

				g.keys[j] = m->keys[i];
				g.vals[j] = m->vals[i];
			}
		}
		g.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	i = map_slot(m, key);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return true;
}

/* A node for the schema at v, with nothing to check yet, kept by the schema and the map. */
static struct node *node_new(struct cc *c, const cJSON *v)
{
	struct schema *s = c->s;
	struct node *n;

	if (s->nnodes == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct node **nodes = realloc(s->nodes, cap * sizeof(*nodes));

		if (!nodes)
			return NULL;
		s->nodes = nodes;
		s->cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	s->nodes[s->nnodes++] = n;
	if (!map_put(&c->map, v, n))
		return NULL;
	n->max_items = n->max_length = INFINITY;
	n->minimum = n->ex_minimum = -INFINITY;
	n->maximum = n->ex_maximum = INFINITY;
	return n;
}

static struct node *compile(struct cc *c, const cJSON *v, int depth);

/* Compiles the schema v found at /seg1[/seg2] below the current one. */
static struct node *compile_below(struct cc *c, const cJSON *v, int depth, const char *seg1,
				  const char *seg2)
{
	size_t old = path_push(&c->path, seg1);
	size_t old2 = seg2 ? path_push(&c->path, seg2) : 0;
	struct node *n = compile(c, v, depth + 1);

	if (seg2)
		path_pop(&c->path, old2);
	path_pop(&c->path, old);
	return n;
}

/* compile_below at /seg/i. */
static struct node *compile_item(struct cc *c, const cJSON *v, int depth, const char *seg, size_t i)
{
	char idx[24];

	snprintf(idx, sizeof(idx), "%zu", i);
	return compile_below(c, v, depth, seg, idx);
}

/* The keyword m's value is not what it must be. Returns false. */
static bool invalid(struct cc *c, const cJSON *m, const char *what)
{
	return cc_fail(c, "invalid JSON Schema at %s: \"%s\" must be %s", at(&c->path), m->string,
		       what);
}

/* type: a type name, or a non-empty array of distinct ones. */
static bool kw_type(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	const char *what = "a type name (null, boolean, object, array, number, string, integer) "
			   "or a non-empty array of distinct ones";
	const cJSON *t;
	unsigned bit;

	(void)depth;
	if (cJSON_IsString(m)) {
		n->types = type_bit(m->valuestring);
		return n->types ? true : invalid(c, m, what);
	}
	if (!cJSON_IsArray(m) || !m->child)
		return invalid(c, m, what);
	for (t = m->child; t; t = t->next) {
		bit = cJSON_IsString(t) ? type_bit(t->valuestring) : 0;
		if (!bit || (n->types & bit))
			return invalid(c, m, what);
		n->types |= bit;
	}
	return true;
}

/* Orders props by name. */
static int prop_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prop *)a)->name, ((const struct prop *)b)->name);
}

/* properties: an object of schemas, one name once. */
static bool kw_properties(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	const cJSON *p;
	size_t i = 0;

	if (!cJSON_IsObject(m))
		return invalid(c, m, "an object of schemas");
	n->nprops = child_count(m);
	n->props = calloc(n->nprops ? n->nprops : 1, sizeof(*n->props));
	if (!n->props)
		return cc_fail(c, "out of memory");
	for (p = m->child; p; p = p->next, i++) {
		n->props[i].name = p->string;
		n->props[i].schema = compile_below(c, p, depth, "properties", p->string);
		if (!n->props[i].schema)
			return false;
	}
	qsort(n->props, n->nprops, sizeof(*n->props), prop_cmp);
	for (i = 1; i < n->nprops; i++)
		if (strcmp(n->props[i - 1].name, n->props[i].name) == 0)
			return cc_fail(c, "invalid JSON Schema at %s: \"properties\" names \"%s\" twice",
				       at(&c->path), n->props[i].name);
	return true;
}

/* Orders C strings held by pointers. */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* required: an array of distinct property names. */
static bool kw_required(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	const char *what = "an array of distinct property names";
	const char **sorted;
	const cJSON *r;
	size_t i = 0;
	bool dup = false;

	(void)depth;
	if (!cJSON_IsArray(m))
		return invalid(c, m, what);
	n->nrequired = child_count(m);
	n->required = calloc(n->nrequired ? n->nrequired : 1, sizeof(*n->required));
	sorted = calloc(n->nrequired ? n->nrequired : 1, sizeof(*sorted));
	if (!n->required || !sorted) {
		free(sorted);
		return cc_fail(c, "out of memory");
	}
	for (r = m->child; r; r = r->next, i++) {
		if (!cJSON_IsString(r)) {
			free(sorted);
			return invalid(c, m, what);
		}
		n->required[i] = sorted[i] = r->valuestring;
	}
	qsort(sorted, n->nrequired, sizeof(*sorted), str_cmp);
	for (i = 1; i < n->nrequired; i++)
		dup |= strcmp(sorted[i - 1], sorted[i]) == 0;
	free(sorted);
	return dup ? invalid(c, m, what) : true;
}

/* additionalProperties: a schema (true and false are schemas). */
static bool kw_additional(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	n->additional = compile_below(c, m, depth, m->string, NULL);
	return n->additional != NULL;
}

/* items: one schema for every item; the array form (a tuple) is not in the subset. */
static bool kw_items(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	if (cJSON_IsArray(m))
		return cc_fail(c, "unsupported JSON Schema keyword \"items\" at %s (an array of "
			       "schemas, a tuple: only one schema for every item is supported)",
			       at(&c->path));
	n->items = compile_below(c, m, depth, m->string, NULL);
	return n->items != NULL;
}

/* enum: an array of values. */
static bool kw_enum(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsArray(m))
		return invalid(c, m, "an array of values");
	n->enum_values = m;
	return true;
}

/* const: any value. */
static bool kw_const(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)c;
	(void)depth;
	n->const_value = m;
	return true;
}

/* The field of n that the limit keyword kw sets. */
static double *limit_of(struct node *n, const char *kw)
{
	static const struct {
		const char *kw;
		size_t off;
	} fields[] = {
		{ "minItems", offsetof(struct node, min_items) },
		{ "maxItems", offsetof(struct node, max_items) },
		{ "minLength", offsetof(struct node, min_length) },
		{ "maxLength", offsetof(struct node, max_length) },
		{ "minimum", offsetof(struct node, minimum) },
		{ "maximum", offsetof(struct node, maximum) },
		{ "exclusiveMinimum", offsetof(struct node, ex_minimum) },
		{ "exclusiveMaximum", offsetof(struct node, ex_maximum) },
	};
	size_t i;

	for (i = 0; strcmp(fields[i].kw, kw) != 0; i++)
		;
	return (double *)((char *)n + fields[i].off);
}

/* minItems, maxItems, minLength, maxLength: a non-negative integer (2.0 is one). */
static bool kw_count(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsNumber(m) || !is_integral(m->valuedouble) || m->valuedouble < 0)
		return invalid(c, m, "a non-negative integer");
	*limit_of(n, m->string) = m->valuedouble;
	return true;
}

/* minimum, maximum, exclusiveMinimum, exclusiveMaximum: a number (draft 7's form). */
static bool kw_bound(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsNumber(m))
		return invalid(c, m, "a number");
	*limit_of(n, m->string) = m->valuedouble;
	return true;
}

/* anyOf: a non-empty array of schemas. */
static bool kw_any_of(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	const cJSON *b;
	size_t i = 0;

	if (!cJSON_IsArray(m) || !m->child)
		return invalid(c, m, "a non-empty array of schemas");
	n->nany_of = child_count(m);
	n->any_of = calloc(n->nany_of, sizeof(*n->any_of));
	if (!n->any_of)
		return cc_fail(c, "out of memory");
	for (b = m->child; b; b = b->next, i++) {
		n->any_of[i] = compile_item(c, b, depth, m->string, i);
		if (!n->any_of[i])
			return false;
	}
	return true;
}

/* $ref: a string, resolved once every schema is compiled (resolve_refs). */
static bool kw_ref(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsString(m))
		return invalid(c, m, "a string");
	n->ref = m->valuestring;
	n->where = strdup(at(&c->path));
	return n->where ? true : cc_fail(c, "out of memory");
}

/* definitions, $defs: an object of schemas, each compiled for $ref to reach. */
static bool kw_defs(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	const cJSON *d;

	(void)n;
	if (!cJSON_IsObject(m))
		return invalid(c, m, "an object of schemas");
	for (d = m->child; d; d = d->next)
		if (!compile_below(c, d, depth, m->string, d->string))
			return false;
	return true;
}

/* title, description, $comment, $schema: a string, never applied. */
static bool ann_string(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)n;
	(void)depth;
	return cJSON_IsString(m) ? true : invalid(c, m, "a string");
}

/* readOnly, writeOnly, deprecated: a boolean, never applied. */
static bool ann_bool(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)n;
	(void)depth;
	return cJSON_IsBool(m) ? true : invalid(c, m, "true or false");
}

/* examples: an array, never applied. */
static bool ann_array(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)n;
	(void)depth;
	return cJSON_IsArray(m) ? true : invalid(c, m, "an array");
}

/* default: any value, never applied. */
static bool ann_any(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)c;
	(void)n;
	(void)m;
	(void)depth;
	return true;
}

/*
 * $id: a string, at the root only. There it names the document, and the
 * "#…" references resolve within it all the same; below the root it would
 * start another base URI, which the subset does not follow.
 */
static bool ann_id(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsString(m))
		return invalid(c, m, "a string");
	if (n != c->s->nodes[0])
		return cc_fail(c, "unsupported JSON Schema keyword \"$id\" at %s (only the root "
			       "may have one: below it, it starts another base URI)", at(&c->path));
	return true;
}

/* A keyword of the subset and what compiles it. */
struct keyword {
	const char *name;
	bool (*compile)(struct cc *c, struct node *n, const cJSON *m, int depth);
};

static const struct keyword keywords[] = {
	{ "type", kw_type },
	{ "properties", kw_properties },
	{ "required", kw_required },
	{ "additionalProperties", kw_additional },
	{ "items", kw_items },
	{ "enum", kw_enum },
	{ "const", kw_const },
	{ "minItems", kw_count },
	{ "maxItems", kw_count },
	{ "minLength", kw_count },
	{ "maxLength", kw_count },
	{ "minimum", kw_bound },
	{ "maximum", kw_bound },
	{ "exclusiveMinimum", kw_bound },
	{ "exclusiveMaximum", kw_bound },
	{ "anyOf", kw_any_of },
	{ "$ref", kw_ref },
	{ "definitions", kw_defs },
	{ "$defs", kw_defs },
	{ "title", ann_string },
	{ "description", ann_string },
	{ "$comment", ann_string },
	{ "$schema", ann_string },
	{ "$id", ann_id },
	{ "default", ann_any },
	{ "examples", ann_array },
	{ "readOnly", ann_bool },
	{ "writeOnly", ann_bool },
	{ "deprecated", ann_bool },
};

#define NKEYWORDS (sizeof(keywords) / sizeof(keywords[0]))
_Static_assert(NKEYWORDS <= 64, "compile() marks the keywords seen in a uint64_t");

bool schema_keyword_supported(const char *kw)
{
	size_t i;

	for (i = 0; i < sizeof(supported) / sizeof(supported[0]); i++)
		if (strcmp(kw, supported[i]) == 0)
			return true;
	return false;
}

/*
 * Compiles the schema at v (at c->path, depth schemas deep), or returns
 * the node already made from it. Every member of an object schema must be
 * a keyword of the table, once. NULL when it fails (c says why).
 */
static struct node *compile(struct cc *c, const cJSON *v, int depth)
{
	uint64_t seen = 0;
	const cJSON *m;
	struct node *n = map_get(&c->map, v);
	size_t k;

	if (n)
		return n;
	if (depth > SCHEMA_MAX_DEPTH) {
		cc_fail(c, "JSON Schema nested deeper than %d schemas at %s", SCHEMA_MAX_DEPTH,
			at(&c->path));
		return NULL;
	}
	if (!cJSON_IsBool(v) && !cJSON_IsObject(v)) {
		cc_fail(c, "invalid JSON Schema at %s: a schema is an object or a boolean, not %s",
			at(&c->path), type_name(v));
		return NULL;
	}
	n = node_new(c, v);
	if (!n) {
		cc_fail(c, "out of memory");
		return NULL;
	}
	n->never = cJSON_IsFalse(v);
	for (m = cJSON_IsObject(v) ? v->child : NULL; m; m = m->next) {
		for (k = 0; k < NKEYWORDS && strcmp(m->string, keywords[k].name) != 0; k++)
			;
		if (k == NKEYWORDS) {
			cc_fail(c, "unsupported JSON Schema keyword \"%s\" at %s", m->string,
				at(&c->path));
			return NULL;
		}
		if (seen & (UINT64_C(1) << k)) {
			cc_fail(c, "invalid JSON Schema at %s: \"%s\" appears twice", at(&c->path),
				m->string);
			return NULL;
		}
		seen |= UINT64_C(1) << k;
		if (!keywords[k].compile(c, n, m, depth))
			return NULL;
	}
	return n;
}

/*
 * Decodes the URI fragment frag (after its '#'): each %XX into its byte.
 * Returns a string to free, or NULL with *bad set when an escape is not
 * two hex digits (or decodes to NUL), NULL alone when out of memory.
 */
static char *fragment_decode(const char *frag, bool *bad)
{
	char *out = malloc(strlen(frag) + 1);
	size_t o = 0;
	char hex[3] = { 0 };

	*bad = false;
	if (!out)
		return NULL;
	for (; *frag; frag++) {
		if (*frag != '%') {
			out[o++] = *frag;
			continue;
		}
		if (!isxdigit((unsigned char)frag[1]) || !isxdigit((unsigned char)frag[2]))
			break;
		hex[0] = frag[1];
		hex[1] = frag[2];
		out[o] = (char)strtol(hex, NULL, 16);
		if (!out[o++])
			break;
		frag += 2;
	}
	if (*frag) {
		free(out);
		*bad = true;
		return NULL;
	}
	out[o] = '\0';
	return out;
}

/*
 * The value at the JSON pointer ptr ("" or "/a/b", ~0 and ~1 escaped)
 * within root; NULL when there is none or ptr is not a pointer.
 */
static const cJSON *pointer_find(const cJSON *root, const char *ptr)
{
	const cJSON *v = root;
	char *seg = malloc(strlen(ptr) + 1);
	const char *p = ptr;

	if (!seg)
		return NULL;
	while (v && *p == '/') {
		size_t n = 0;

		for (p++; *p && *p != '/'; p++) {
			if (*p != '~') {
				seg[n++] = *p;
			} else if (p[1] == '0' || p[1] == '1') {
				seg[n++] = p[1] == '0' ? '~' : '/';
				p++;
			} else {
				v = NULL;
				break;
			}
		}
		seg[n] = '\0';
		if (!v) {
			break;
		} else if (cJSON_IsObject(v)) {
			v = cJSON_GetObjectItemCaseSensitive(v, seg);
		} else if (cJSON_IsArray(v) && n > 0 && strspn(seg, "0123456789") == n &&
			   (seg[0] != '0' || n == 1) && n < 10) {
			v = cJSON_GetArrayItem(v, atoi(seg));
		} else {
			v = NULL;
		}
	}
	free(seg);
	return *p ? NULL : v;
}

/*
 * Points every $ref at its target's node: the target is a JSON pointer
 * into the same document ("#" and "#/…", %XX decoded), compiled as a
 * schema when no keyword made it one (a pointer into an enum, say); the
 * nodes that compiles are resolved in the same pass.
 */
static bool resolve_refs(struct cc *c)
{
	size_t i;

	for (i = 0; i < c->s->nnodes; i++) {
		struct node *n = c->s->nodes[i];
		const cJSON *target;
		struct path saved;
		char *ptr;
		bool bad;

		if (!n->ref)
			continue;
		if (n->ref[0] != '#' || (n->ref[1] && n->ref[1] != '/'))
			return cc_fail(c, "unsupported JSON Schema keyword \"$ref\" at %s (\"%s\" is "
				       "not a pointer within this schema: \"#\", \"#/definitions/NAME\", "
				       "\"#/$defs/NAME\")", n->where, n->ref);
		ptr = fragment_decode(n->ref + 1, &bad);
		if (!ptr)
			return bad ? cc_fail(c, "invalid JSON Schema at %s: \"$ref\" \"%s\" has a bad "
					     "%%-escape", n->where, n->ref)
				   : cc_fail(c, "out of memory");
		target = pointer_find(c->s->doc, ptr);
		if (!target) {
			free(ptr);
			return cc_fail(c, "invalid JSON Schema at %s: \"$ref\" \"%s\" points at "
				       "nothing in the schema", n->where, n->ref);
		}
		saved = c->path;
		path_set(&c->path, ptr);
		free(ptr);
		n->target = compile(c, target, 1);
		c->path = saved;
		if (!n->target)
			return false;
	}
	return true;
}

/* Where n leads without reading into the instance: its $ref's target, else its anyOf's branches. */
static struct node *same_instance_edge(const struct node *n, size_t i)
{
	if (n->ref)
		return i == 0 ? n->target : NULL;
	return i < n->nany_of ? n->any_of[i] : NULL;
}

/*
 * Refuses a loop of $ref and anyOf edges (a depth-first search, its stack
 * kept on the heap): checking an instance against a schema on it would
 * come back to the same schema and the same instance forever.
 */
static bool find_loops(struct cc *c)
{
	struct frame {
		struct node *n;
		size_t next;
	} *stack = calloc(c->s->nnodes, sizeof(*stack));
	size_t top;
	size_t i;
	size_t j;

	if (!stack)
		return cc_fail(c, "out of memory");
	for (i = 0; i < c->s->nnodes; i++) {
		if (c->s->nodes[i]->mark)
			continue;
		top = 0;
		stack[top++] = (struct frame){ c->s->nodes[i], 0 };
		c->s->nodes[i]->mark = 1;
		while (top) {
			struct frame *f = &stack[top - 1];
			struct node *e = same_instance_edge(f->n, f->next++);

			if (!e) {
				f->n->mark = 2;
				top--;
			} else if (!e->mark) {
				e->mark = 1;
				stack[top++] = (struct frame){ e, 0 };
			} else if (e->mark == 1) {
				/* The loop is the stack from e up: name a $ref on it. */
				for (j = 0; stack[j].n != e; j++)
					;
				while (j + 1 < top && !stack[j].n->ref)
					j++;
				cc_fail(c, "invalid JSON Schema at %s: \"$ref\" \"%s\" leads back to "
					"itself without reading into the instance (a $ref loop)",
					stack[j].n->where, stack[j].n->ref);
				free(stack);
				return false;
			}
		}
	}
	free(stack);
	return true;
}

struct schema *schema_compile(const cJSON *schema, char *err, size_t errlen)
{
	struct cc c = { .err = err, .errlen = errlen };
	bool ok;

	if (err && errlen)
		err[0] = '\0';
	if (!schema) {
		message(err, errlen, "invalid JSON Schema: there is none");
		return NULL;
	}
	c.s = calloc(1, sizeof(*c.s));
	if (!c.s || !(c.s->doc = cJSON_Duplicate(schema, true))) {
		free(c.s);
		message(err, errlen, "out of memory");
		return NULL;
	}
	c.s->root = compile(&c, c.s->doc, 1);
	ok = c.s->root && resolve_refs(&c) && find_loops(&c);
	free(c.map.keys);
	free(c.map.vals);
	if (!ok) {
		schema_free(c.s);
		return NULL;
	}
	return c.s;
}

void schema_free(struct schema *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nnodes; i++) {
		free(s->nodes[i]->props);
		free(s->nodes[i]->required);
		free(s->nodes[i]->any_of);
		free(s->nodes[i]->where);
		free(s->nodes[i]);
	}
	free(s->nodes);
	cJSON_Delete(s->doc);
	free(s);
}

/* ---- checking ---- */

/* What a check carries along. */
struct ck {
	struct path path;		/* the instance's pointer */
	char *why;
	size_t whylen;
	unsigned quiet;			/* inside anyOf: a failed branch says nothing */
	bool too_deep;			/* SCHEMA_MAX_DEPTH was passed: the whole check fails */
};

/* Writes "POINTER: what" (what alone at the root) as the reason; returns false. */
static bool ck_fail(struct ck *k, const char *fmt, ...)
{
	char what[MSG_LEN];
	va_list ap;

	if (k->quiet && !k->too_deep)
		return false;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (k->path.len)
		message(k->why, k->whylen, "%s: %s", k->path.buf, what);
	else
		message(k->why, k->whylen, "%s", what);
	return false;
}

/* The names of the types in bits, as "a" or "a" or "b" …, into out. */
static const char *types_text(char *out, size_t len, unsigned bits)
{
	size_t o = 0;
	size_t i;

	out[0] = '\0';
	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]) && o < len; i++)
		if (bits & (1u << i))
			o += (size_t)snprintf(out + o, len - o, "%s\"%s\"", o ? " or " : "",
					      type_names[i]);
	return out;
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
	size_t count = child_count(v);
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
		size_t old = path_push_index(&k->path, i);
		bool ok = check(k, n->items, item, depth + 1);

		path_pop(&k->path, old);
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
						    prop_cmp) : NULL;

	return p ? p->schema : NULL;
}

/* required, then each member (every one, a repeated name too) against its schema. */
static bool check_object(struct ck *k, const struct node *n, const cJSON *v, int depth)
{
	const cJSON *m;
	size_t i;

	for (i = 0; i < n->nrequired; i++)
		if (!cJSON_GetObjectItemCaseSensitive(v, n->required[i]))
			return ck_fail(k, "missing required property \"%s\"", n->required[i]);
	for (m = v->child; m; m = m->next) {
		const struct node *sub = prop_find(n, m->string);
		size_t old;
		bool ok;

		if (!sub && !n->additional)
			continue;
		if (!sub && n->additional->never)
			return ck_fail(k, "property \"%s\" is not allowed (additionalProperties is "
				       "false)", m->string);
		old = path_push(&k->path, m->string);
		ok = check(k, sub ? sub : n->additional, m, depth + 1);
		path_pop(&k->path, old);
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
	for (i = 0; i < n->nany_of && !ok && !k->too_deep; i++)
		ok = check(k, n->any_of[i], v, depth + 1);
	k->quiet--;
	if (ok)
		return true;
	if (k->too_deep)
		return false;
	if (n->nany_of == 1)
		return ck_fail(k, "does not match the one schema of anyOf");
	return ck_fail(k, "matches none of the %zu schemas of anyOf", n->nany_of);
}

/* Whether v is in the array enum_values. */
static bool in_enum(const cJSON *enum_values, const cJSON *v)
{
	const cJSON *e;

	for (e = enum_values->child; e; e = e->next)
		if (json_equal(e, v))
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
	char a[96];

	if (depth > SCHEMA_MAX_DEPTH) {
		k->too_deep = true;
		return ck_fail(k, "more than %d schemas deep (the checker's bound)",
			       SCHEMA_MAX_DEPTH);
	}
	if (n->target)
		return check(k, n->target, v, depth + 1);
	if (n->never)
		return ck_fail(k, "no value is allowed here (the schema is false)");
	if (n->types && !(n->types & type_bits(v)))
		return ck_fail(k, "expected type %s, got %s", types_text(a, sizeof(a), n->types),
			       type_name(v));
	if (n->enum_values && !in_enum(n->enum_values, v))
		return ck_fail(k, "not one of the %zu value%s of enum", child_count(n->enum_values),
			       child_count(n->enum_values) == 1 ? "" : "s");
	if (n->const_value && !json_equal(n->const_value, v))
		return ck_fail(k, "not the value of const");
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
		message(why, whylen, "content is empty");
		return;
	}
	if (memchr(text, '\0', len)) {
		message(why, whylen, "content is not JSON (a NUL byte at byte %zu)",
			(size_t)((const char *)memchr(text, '\0', len) - text));
		return;
	}
	v = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!v) {
		message(why, whylen, "content is not JSON (at byte %zu)",
			end ? (size_t)(end - text) : (size_t)0);
		return;
	}
	cJSON_Delete(v);
	for (i = (size_t)(end - text); i < len && json_is_ws(text[i]); i++)
		;
	if (i < len)
		message(why, whylen, "content has more after its JSON value (at byte %zu)", i);
	else
		message(why, whylen, "content is not strict JSON (a control character outside a "
			"string, a byte-order mark or a bad \\u escape)");
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
		message(why, whylen, "content has a string holding \\u0000, which cannot be checked");
		return false;
	}
	if (s) {
		ok = schema_check(s, v, why, whylen);
	} else {
		ok = cJSON_IsObject(v);
		if (!ok)
			message(why, whylen, "content is a JSON %s, not an object", type_name(v));
	}
	cJSON_Delete(v);
	return ok;
}
