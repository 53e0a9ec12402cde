/*
 * rng: xoshiro256** seeded through splitmix64 (public-domain algorithms by
 * Blackman and Vigna, written here from their description).
 */
#include "common/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t x = seed;
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

void rng_seed_stream(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = stream;

	rng_seed(r, seed ^ splitmix64(&x));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double rng_range(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_uniform(r);
}

double rng_exp(struct rng *r, double mean)
{
	/* 1 - u is in (0, 1], so the log is finite. */
	return -mean * log(1.0 - rng_uniform(r));
}
