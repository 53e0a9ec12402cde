/*
 * arena: cJSON parses whose nodes are carved from memory kept from one
 * parse to the next. loadgen parses every answer (and every event of a
 * stream) to read a few fields, then drops the tree: with cJSON's default
 * hooks each node and string is a malloc and a free, and the free a walk
 * of the tree — more work than the parse itself.
 */
#ifndef FAULTLINE_ARENA_H
#define FAULTLINE_ARENA_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct arena_chunk;

struct arena {
	char *block;			/* kept across resets */
	size_t size;			/* of block */
	size_t used;			/* of block */
	struct arena_chunk *more;	/* added when a tree outgrew block; freed at reset */
};

/* Sets a up empty; nothing is allocated before the first parse. */
void arena_init(struct arena *a);

/*
 * Parses len bytes of text as cJSON_ParseWithLength does (the same
 * answers: NULL when it is not JSON, or when memory ran out), its nodes in
 * a. The tree is valid until arena_reset and must not be given to
 * cJSON_Delete. Not reentrant: it sets cJSON's global hooks for the
 * parse and restores the defaults after.
 */
cJSON *arena_parse(struct arena *a, const char *text, size_t len);

/* Drops every tree parsed into a; keeps its first block for the next. */
void arena_reset(struct arena *a);

/* Frees a's memory. */
void arena_free(struct arena *a);

#endif
