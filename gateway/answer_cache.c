/*
 * answer_cache: a hash table of chains (FNV-1a over the key) and an LRU
 * list through the same entries; the key and value bytes live right
 * after their entry, in one allocation.
 */
#include "gateway/answer_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct answer_cache_entry {
	struct answer_cache_entry *next;	/* its hash chain */
	struct list_node lru;
	uint64_t hash;
	double stored_ms;
	size_t klen;
	size_t vlen;
	char bytes[];			/* key, then value and a NUL */
};

/* The table never grows: sized once for max_entries, at most this many slots. */
#define MAX_SLOTS ((size_t)1 << 20)

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static size_t entry_cost(size_t klen, size_t vlen)
{
	return klen + vlen + ANSWER_CACHE_ENTRY_OVERHEAD;
}

int answer_cache_init(struct answer_cache *c, size_t max_entries, size_t max_bytes,
		      double ttl_ms)
{
	size_t n = 16;

	memset(c, 0, sizeof(*c));
	while (n < max_entries && n < MAX_SLOTS)
		n *= 2;
	c->slots = calloc(n, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	c->nslots = n;
	c->max_entries = max_entries ? max_entries : 1;
	c->max_bytes = max_bytes ? max_bytes : 1;
	c->ttl_ms = ttl_ms;
	list_init(&c->lru);
	return 0;
}

/* The link that points at the entry for key (hash h), or at the chain's end. */
static struct answer_cache_entry **find(struct answer_cache *c, const char *key, size_t klen,
					uint64_t h)
{
	struct answer_cache_entry **p = &c->slots[h & (c->nslots - 1)];

	while (*p && ((*p)->hash != h || (*p)->klen != klen || memcmp((*p)->bytes, key, klen)))
		p = &(*p)->next;
	return p;
}

/* Unlinks and frees the entry *p points at. */
static void drop(struct answer_cache *c, struct answer_cache_entry **p)
{
	struct answer_cache_entry *e = *p;

	*p = e->next;
	list_remove(&c->lru, &e->lru);
	c->entries--;
	c->bytes -= entry_cost(e->klen, e->vlen);
	free(e);
}

/* Drops e, found again through its chain. */
static void drop_entry(struct answer_cache *c, struct answer_cache_entry *e)
{
	drop(c, find(c, e->bytes, e->klen, e->hash));
}

void answer_cache_free(struct answer_cache *c)
{
	while (!list_empty(&c->lru))
		drop_entry(c, list_entry(list_first(&c->lru), struct answer_cache_entry, lru));
	free(c->slots);
	memset(c, 0, sizeof(*c));
}

static bool expired(const struct answer_cache *c, const struct answer_cache_entry *e, double now)
{
	return now - e->stored_ms >= c->ttl_ms;
}

int answer_cache_put(struct answer_cache *c, const char *key, size_t klen, const char *val,
		     size_t vlen, double now)
{
	uint64_t h = fnv1a(key, klen);
	struct answer_cache_entry **p = find(c, key, klen, h);
	struct answer_cache_entry *e;

	if (entry_cost(klen, vlen) > c->max_bytes) {
		if (*p)
			drop(c, p);
		c->stats.too_big++;
		return -E2BIG;
	}
	e = malloc(sizeof(*e) + klen + vlen + 1);
	if (!e)
		return -ENOMEM;
	if (*p)
		drop(c, p);
	*e = (struct answer_cache_entry){ .hash = h, .stored_ms = now, .klen = klen,
					  .vlen = vlen };
	memcpy(e->bytes, key, klen);
	memcpy(e->bytes + klen, val, vlen);
	e->bytes[klen + vlen] = '\0';
	p = &c->slots[h & (c->nslots - 1)];
	e->next = *p;
	*p = e;
	list_push_front(&c->lru, &e->lru);
	c->entries++;
	c->bytes += entry_cost(klen, vlen);
	c->stats.stores++;
	while (c->entries > c->max_entries || c->bytes > c->max_bytes) {
		struct answer_cache_entry *old =
			list_entry(c->lru.head.prev, struct answer_cache_entry, lru);

		if (expired(c, old, now))
			c->stats.expired++;
		else
			c->stats.evictions++;
		drop_entry(c, old);
	}
	return 0;
}

const char *answer_cache_get(struct answer_cache *c, const char *key, size_t klen, double now,
			     size_t *vlen)
{
	struct answer_cache_entry **p = find(c, key, klen, fnv1a(key, klen));
	struct answer_cache_entry *e = *p;

	if (e && expired(c, e, now)) {
		drop(c, p);
		c->stats.expired++;
		e = NULL;
	}
	if (!e) {
		c->stats.misses++;
		return NULL;
	}
	list_remove(&c->lru, &e->lru);
	list_push_front(&c->lru, &e->lru);
	c->stats.hits++;
	*vlen = e->vlen;
	return e->bytes + e->klen;
}
