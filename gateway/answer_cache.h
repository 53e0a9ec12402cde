/*
 * answer_cache: the last good answer to each request, for an alias whose
 * degraded mode is `cache` — bounded in entries and in bytes, each entry
 * trusted for ttl_ms after it was stored. Least recently used entries go
 * first when a bound is passed; an expired entry is dropped when it is
 * looked up (and when the oldest are evicted).
 *
 * Pure: the time is the caller's `now` (ms, any monotonic clock); no I/O.
 * Keys and values are byte strings the cache copies; what a key holds
 * (the request's model, messages and the parameters that change an
 * answer) is the caller's business (gateway/degraded.h).
 */
#ifndef FAULTLINE_GATEWAY_ANSWER_CACHE_H
#define FAULTLINE_GATEWAY_ANSWER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/list.h"

/* What an entry costs against max_bytes besides its key and value. */
#define ANSWER_CACHE_ENTRY_OVERHEAD 64

struct answer_cache_stats {
	uint64_t hits;
	uint64_t misses;		/* no entry, or only an expired one */
	uint64_t stores;
	uint64_t evictions;		/* pushed out by a bound */
	uint64_t expired;		/* dropped for age */
	uint64_t too_big;		/* not stored: larger than max_bytes alone */
};

struct answer_cache_entry;

struct answer_cache {
	size_t max_entries;
	size_t max_bytes;
	double ttl_ms;
	size_t entries;
	size_t bytes;			/* keys + values + ANSWER_CACHE_ENTRY_OVERHEAD each */
	struct answer_cache_entry **slots;	/* hash chains */
	size_t nslots;			/* a power of two */
	struct list lru;		/* most recently used first */
	struct answer_cache_stats stats;
};

/* Sets c up with its bounds (each ≥ 1). Returns 0 or -ENOMEM. */
int answer_cache_init(struct answer_cache *c, size_t max_entries, size_t max_bytes,
		      double ttl_ms);

/* Frees every entry and the table. */
void answer_cache_free(struct answer_cache *c);

/*
 * Stores a copy of val under key at now, replacing an entry with that
 * key, then drops the least recently used until both bounds hold.
 * Returns 0, -E2BIG when the entry alone is over max_bytes (not stored;
 * an older entry with its key is dropped, as it is no longer the last
 * answer), or -ENOMEM (nothing changed).
 */
int answer_cache_put(struct answer_cache *c, const char *key, size_t klen, const char *val,
		     size_t vlen, double now);

/*
 * The value stored under key less than ttl_ms before now (and its
 * length in *vlen), now the most recently used; NULL when there is none
 * or it expired (then dropped). The pointer holds until the next put
 * or free.
 */
const char *answer_cache_get(struct answer_cache *c, const char *key, size_t klen, double now,
			     size_t *vlen);

#endif
