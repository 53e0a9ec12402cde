/*
 * arena: bump allocation for cJSON's hooks — a block kept across parses,
 * and chunks added for a tree that does not fit, freed at the reset.
 */
#include <stdint.h>
#include <stdlib.h>

#include "loadgen/arena.h"

/* The first block: a chat completion's tree takes about 3 KiB. */
#define ARENA_BLOCK (64u << 10)
#define ARENA_ALIGN 16u

struct arena_chunk {
	struct arena_chunk *next;
	size_t size;
	size_t used;
	_Alignas(ARENA_ALIGN) char data[];
};

/* The arena the hooks allocate from (cJSON's hooks carry no pointer). */
static struct arena *current;

void arena_init(struct arena *a)
{
	*a = (struct arena){ 0 };
}

static size_t rounded(size_t n)
{
	return (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
}

/* A new chunk of at least n bytes at the head of a->more, or NULL. */
static struct arena_chunk *add_chunk(struct arena *a, size_t n)
{
	size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
	struct arena_chunk *c = malloc(sizeof(*c) + size);

	if (!c)
		return NULL;
	c->next = a->more;
	c->size = size;
	c->used = 0;
	a->more = c;
	return c;
}

static void *arena_alloc(size_t n)
{
	struct arena *a = current;
	struct arena_chunk *c = a->more;
	void *p;

	n = rounded(n ? n : 1);
	if (!a->block) {
		a->block = aligned_alloc(ARENA_ALIGN, ARENA_BLOCK);
		a->size = a->block ? ARENA_BLOCK : 0;
	}
	if (!c && a->size - a->used >= n) {
		p = a->block + a->used;
		a->used += n;
		return p;
	}
	if (!c || c->size - c->used < n)
		c = add_chunk(a, n);
	if (!c)
		return NULL;
	p = c->data + c->used;
	c->used += n;
	return p;
}

/* Nodes go with the whole arena, at arena_reset. */
static void arena_release(void *p)
{
	(void)p;
}

cJSON *arena_parse(struct arena *a, const char *text, size_t len)
{
	cJSON_Hooks hooks = { .malloc_fn = arena_alloc, .free_fn = arena_release };
	cJSON *root;

	current = a;
	cJSON_InitHooks(&hooks);
	root = cJSON_ParseWithLength(text, len);
	cJSON_InitHooks(NULL);
	current = NULL;
	return root;
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *c;

	while (a->more) {
		c = a->more;
		a->more = c->next;
		free(c);
	}
	a->used = 0;
}

void arena_free(struct arena *a)
{
	arena_reset(a);
	free(a->block);
	arena_init(a);
}
