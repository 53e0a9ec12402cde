/*
 * schema: compiling a schema of the draft-7 subset into a graph of nodes —
 * one per schema in a copy of the document, a $ref an edge to its target
 * — refusing any keyword outside it, bad values, $ref loops. Checking is
 * schema_check.c's.
 */
#include "gateway/schema_int.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every keyword a compile accepts, for schema_keyword_supported. */
static const char *const supported[] = { SCHEMA_KEYWORDS, SCHEMA_CONTAINERS, SCHEMA_ANNOTATIONS };

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
	const char *id;			/* the root's $id, or NULL */
	size_t idlen;			/* its length, less a trailing empty fragment "#" */
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
	schema__vmessage(c->err, c->errlen, fmt, ap);
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
	size_t old = schema__path_push(&c->path, seg1);
	size_t old2 = seg2 ? schema__path_push(&c->path, seg2) : 0;
	struct node *n = compile(c, v, depth + 1);

	if (seg2)
		schema__path_pop(&c->path, old2);
	schema__path_pop(&c->path, old);
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
	return cc_fail(c, "invalid JSON Schema at %s: \"%s\" must be %s", schema__at(&c->path),
		       m->string, what);
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
		n->types = schema__type_bit(m->valuestring);
		return n->types ? true : invalid(c, m, what);
	}
	if (!cJSON_IsArray(m) || !m->child)
		return invalid(c, m, what);
	for (t = m->child; t; t = t->next) {
		bit = cJSON_IsString(t) ? schema__type_bit(t->valuestring) : 0;
		if (!bit || (n->types & bit))
			return invalid(c, m, what);
		n->types |= bit;
	}
	return true;
}

int schema__prop_cmp(const void *a, const void *b)
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
	n->nprops = schema__child_count(m);
	n->props = calloc(n->nprops ? n->nprops : 1, sizeof(*n->props));
	if (!n->props)
		return cc_fail(c, "out of memory");
	for (p = m->child; p; p = p->next, i++) {
		n->props[i].name = p->string;
		n->props[i].schema = compile_below(c, p, depth, "properties", p->string);
		if (!n->props[i].schema)
			return false;
	}
	qsort(n->props, n->nprops, sizeof(*n->props), schema__prop_cmp);
	for (i = 1; i < n->nprops; i++)
		if (strcmp(n->props[i - 1].name, n->props[i].name) == 0)
			return cc_fail(c, "invalid JSON Schema at %s: \"properties\" names \"%s\" twice",
				       schema__at(&c->path), n->props[i].name);
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
	n->nrequired = schema__child_count(m);
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
			       schema__at(&c->path));
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
	if (!cJSON_IsNumber(m) || !schema__is_integral(m->valuedouble) || m->valuedouble < 0)
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
	n->nany_of = schema__child_count(m);
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
	n->where = strdup(schema__at(&c->path));
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
 * $id: a string, at the root only. There it names the document: the "#…"
 * references resolve within it all the same, and so does a $ref that
 * spells the name out (resolve_refs); below the root it would start
 * another base URI, which the subset does not follow.
 */
static bool ann_id(struct cc *c, struct node *n, const cJSON *m, int depth)
{
	(void)depth;
	if (!cJSON_IsString(m))
		return invalid(c, m, "a string");
	if (n != c->s->nodes[0])
		return cc_fail(c, "unsupported JSON Schema keyword \"$id\" at %s (only the root "
			       "may have one: below it, it starts another base URI)",
			       schema__at(&c->path));
	c->id = m->valuestring;
	c->idlen = strlen(c->id);
	if (c->idlen && c->id[c->idlen - 1] == '#')
		c->idlen--;
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
			schema__at(&c->path));
		return NULL;
	}
	if (!cJSON_IsBool(v) && !cJSON_IsObject(v)) {
		cc_fail(c, "invalid JSON Schema at %s: a schema is an object or a boolean, not %s",
			schema__at(&c->path), schema__type_name(v));
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
				schema__at(&c->path));
			return NULL;
		}
		if (seen & (UINT64_C(1) << k)) {
			cc_fail(c, "invalid JSON Schema at %s: \"%s\" appears twice", schema__at(&c->path),
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
		const char *frag;
		struct path saved;
		char *ptr;
		bool bad;

		if (!n->ref)
			continue;
		frag = n->ref;
		/* The root's own $id, spelled out before the fragment, is this document. */
		if (c->id && c->idlen && strncmp(frag, c->id, c->idlen) == 0 &&
		    (frag[c->idlen] == '#' || !frag[c->idlen]))
			frag += c->idlen;
		if (!*frag)
			frag = "#";
		if (frag[0] != '#' || (frag[1] && frag[1] != '/'))
			return cc_fail(c, "unsupported JSON Schema keyword \"$ref\" at %s (\"%s\" is "
				       "not a pointer within this schema: \"#\", \"#/definitions/NAME\", "
				       "\"#/$defs/NAME\")", n->where, n->ref);
		ptr = fragment_decode(frag + 1, &bad);
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
		schema__path_set(&c->path, ptr);
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
		schema__message(err, errlen, "invalid JSON Schema: there is none");
		return NULL;
	}
	c.s = calloc(1, sizeof(*c.s));
	if (!c.s || !(c.s->doc = cJSON_Duplicate(schema, true))) {
		free(c.s);
		schema__message(err, errlen, "out of memory");
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
