/*
 * schema_int.h — what the schema checker's files share (schema.c compiles,
 * schema_check.c checks, schema_path.c builds pointers and messages): the
 * compiled nodes and the helpers. Private to them: not for other modules.
 */
#ifndef FAULTLINE_GATEWAY_SCHEMA_INT_H
#define FAULTLINE_GATEWAY_SCHEMA_INT_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway/schema.h"

/* The longest JSON pointer a message shows; a longer one ends in "/...". */
#define PATH_MAX_LEN 200

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

/*
 * Formats a message into out (len bytes; nothing when out is NULL or len
 * 0), cut before a UTF-8 sequence rather than inside one, each byte that
 * is not UTF-8 shown as \xNN.
 */
void schema__vmessage(char *out, size_t len, const char *fmt, va_list ap);
void schema__message(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Appends "/seg", escaped as a JSON pointer; returns the length schema__path_pop goes back to. */
size_t schema__path_push(struct path *p, const char *seg);

/* Appends "/i". */
size_t schema__path_push_index(struct path *p, size_t i);

/* Undoes the push that returned old. */
void schema__path_pop(struct path *p, size_t old);

/* Sets p to the pointer text s as written (already escaped), cut like a push. */
void schema__path_set(struct path *p, const char *s);

/* A schema's pointer as messages show it: "the root" for the empty one. */
const char *schema__at(const struct path *p);

/* Whether x is a number with no fraction. */
bool schema__is_integral(double x);

/* The T_* bits a value has: a number with no fraction is also an integer. */
unsigned schema__type_bits(const cJSON *v);

/* The name of a value's type, as messages show it ("number" for any number). */
const char *schema__type_name(const cJSON *v);

/* The T_* bit of a type name, or 0 when it names none. */
unsigned schema__type_bit(const char *name);

/* The names of the types in bits, as "a" or "a" or "b" …, into out. */
const char *schema__types_text(char *out, size_t len, unsigned bits);

/* Orders struct props by name (qsort, bsearch). */
int schema__prop_cmp(const void *a, const void *b);

/* How many items or members v has. */
size_t schema__child_count(const cJSON *v);

#endif
