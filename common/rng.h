/*
 * rng: a small seeded generator (xoshiro256**, seeded through splitmix64) so
 * that every random choice — jitter, fault probabilities, arrivals — repeats
 * exactly for the same seed. Policy code takes a struct rng * argument.
 */
#ifndef FAULTLINE_RNG_H
#define FAULTLINE_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Seeds the generator; the same seed gives the same sequence. */
void rng_seed(struct rng *r, uint64_t seed);

/* Derives an independent stream: seed mixed with a stream number. */
void rng_seed_stream(struct rng *r, uint64_t seed, uint64_t stream);

/* The next 64 random bits. */
uint64_t rng_next(struct rng *r);

/* A uniform double in [0, 1). */
double rng_uniform(struct rng *r);

/* A uniform double in [lo, hi). */
double rng_range(struct rng *r, double lo, double hi);

/* An exponential variate with the given mean (for Poisson arrivals). */
double rng_exp(struct rng *r, double mean);

#endif
