/* Tests of the degraded mode's answer cache: its bounds, its TTL and its LRU order. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/answer_cache.h"

static void put(struct answer_cache *c, const char *k, const char *v, double now)
{
	cr_assert_eq(answer_cache_put(c, k, strlen(k), v, strlen(v), now), 0, "put %s", k);
}

static const char *get(struct answer_cache *c, const char *k, double now)
{
	size_t n = 0;
	const char *v = answer_cache_get(c, k, strlen(k), now, &n);

	if (v)
		cr_assert_eq(n, strlen(v));
	return v;
}

Test(answer_cache, stores_replaces_and_finds, .timeout = 10)
{
	struct answer_cache c;

	cr_assert_eq(answer_cache_init(&c, 10, 1 << 20, 1000), 0);
	cr_assert_null(get(&c, "q1", 0));
	put(&c, "q1", "a1", 0);
	put(&c, "q2", "a2", 0);
	cr_assert_str_eq(get(&c, "q1", 10), "a1");
	cr_assert_str_eq(get(&c, "q2", 10), "a2");
	put(&c, "q1", "a1 again", 20);
	cr_assert_str_eq(get(&c, "q1", 30), "a1 again");
	cr_assert_eq(c.entries, 2);
	cr_assert_eq(c.bytes, 2 + 8 + 2 + 2 + 2 * ANSWER_CACHE_ENTRY_OVERHEAD);
	cr_assert_eq(c.stats.hits, 3);
	cr_assert_eq(c.stats.misses, 1);
	/* A key is its bytes: one with a NUL inside is another key. */
	cr_assert_eq(answer_cache_put(&c, "q1\0x", 4, "other", 5, 40), 0);
	cr_assert_str_eq(get(&c, "q1", 41), "a1 again");
	answer_cache_free(&c);
}

Test(answer_cache, an_entry_expires_at_its_ttl, .timeout = 10)
{
	struct answer_cache c;

	cr_assert_eq(answer_cache_init(&c, 10, 1 << 20, 1000), 0);
	put(&c, "q", "a", 100);
	cr_assert_str_eq(get(&c, "q", 1099.9), "a");
	cr_assert_null(get(&c, "q", 1100));
	cr_assert_eq(c.entries, 0, "the expired entry is dropped");
	cr_assert_eq(c.bytes, 0);
	cr_assert_eq(c.stats.expired, 1);
	/* Storing again starts its age again. */
	put(&c, "q", "b", 2000);
	cr_assert_str_eq(get(&c, "q", 2999), "b");
	answer_cache_free(&c);
}

Test(answer_cache, the_entry_bound_drops_the_least_recently_used, .timeout = 10)
{
	struct answer_cache c;
	char k[16];

	cr_assert_eq(answer_cache_init(&c, 3, 1 << 20, 1e9), 0);
	put(&c, "a", "1", 0);
	put(&c, "b", "2", 1);
	put(&c, "c", "3", 2);
	cr_assert_not_null(get(&c, "a", 3));	/* a is now the most recent: b goes first */
	put(&c, "d", "4", 4);
	cr_assert_eq(c.entries, 3);
	cr_assert_null(get(&c, "b", 5));
	cr_assert_str_eq(get(&c, "a", 5), "1");
	cr_assert_str_eq(get(&c, "c", 5), "3");
	cr_assert_str_eq(get(&c, "d", 5), "4");
	cr_assert_eq(c.stats.evictions, 1);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		put(&c, k, "v", 10 + i);
		cr_assert_leq(c.entries, 3);
	}
	cr_assert_str_eq(get(&c, "k999", 2000), "v");
	cr_assert_null(get(&c, "k996", 2000));
	answer_cache_free(&c);
}

Test(answer_cache, the_byte_bound_holds_and_a_lone_giant_is_refused, .timeout = 10)
{
	struct answer_cache c;
	char big[400];
	size_t bound = 3 * (ANSWER_CACHE_ENTRY_OVERHEAD + 1 + 100);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(answer_cache_init(&c, 1000, bound, 1e9), 0);
	for (int i = 0; i < 10; i++) {
		char k[2] = { (char)('a' + i), 0 };

		big[100] = '\0';
		put(&c, k, big, i);
		big[100] = 'x';
		cr_assert_leq(c.bytes, bound, "after %d puts: %zu bytes", i + 1, c.bytes);
	}
	cr_assert_eq(c.entries, 3);
	cr_assert_not_null(get(&c, "j", 20));
	cr_assert_null(get(&c, "g", 20));
	/* One entry larger than the whole bound: refused, and the key's older answer dropped. */
	cr_assert_eq(answer_cache_put(&c, "j", 1, big, bound, 21), -E2BIG);
	cr_assert_null(get(&c, "j", 22));
	cr_assert_eq(c.stats.too_big, 1);
	cr_assert_leq(c.bytes, bound);
	answer_cache_free(&c);
	cr_assert_eq(c.entries, 0);
}

Test(answer_cache, many_keys_in_a_small_table_stay_findable, .timeout = 10)
{
	struct answer_cache c;
	char k[32];
	char v[32];

	cr_assert_eq(answer_cache_init(&c, 5000, 1 << 24, 1e9), 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "question %d", i);
		snprintf(v, sizeof(v), "answer %d", i);
		put(&c, k, v, i);
	}
	for (int i = 0; i < 5000; i += 7) {
		snprintf(k, sizeof(k), "question %d", i);
		snprintf(v, sizeof(v), "answer %d", i);
		cr_assert_str_eq(get(&c, k, 6000), v);
	}
	answer_cache_free(&c);
}
