/*
 * schedule: the open-loop arrival schedule — constant or Poisson arrivals
 * from one or more sources, merged in time order, with streams chosen per
 * source or by weight. No clock and no I/O: everything follows from the
 * rates and the seed.
 */
#include "loadgen/schedule.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen/mix.h"

/* The random stream number the picking generator uses; sources use i + 1. */
#define PICK_STREAM 0

static bool rate_ok(double rate)
{
	return isfinite(rate) && rate > 0;
}

static bool arrival_ok(enum arrival a)
{
	return a == ARRIVAL_CONSTANT || a == ARRIVAL_POISSON;
}

/* NaN fails the comparison; an infinite duration (no end) is allowed. */
static bool duration_ok(double duration_ms)
{
	return duration_ms >= 0;
}

/*
 * Sets a source's first arrival: for constant arrivals its phase (a share
 * of its period: source i of n starts i/n of a period in, so streams of a
 * mix do not all fire at once), one gap in when Poisson.
 */
static void source_start(struct sched_source *src, double rate, enum arrival arrival,
			 int stream, double phase, uint64_t seed, uint64_t rng_stream)
{
	src->rate_per_s = rate;
	src->arrival = arrival;
	src->stream = stream;
	src->k = 0;
	src->phase_ms = phase * 1000.0 / rate;
	rng_seed_stream(&src->rng, seed, rng_stream);
	if (arrival == ARRIVAL_CONSTANT)
		src->next_ms = src->phase_ms;
	else
		src->next_ms = rng_exp(&src->rng, 1000.0 / rate);
}

/*
 * Moves a source past its current arrival. Constant times are computed from
 * k so that no rounding error accumulates over a long run.
 */
static void source_advance(struct sched_source *src)
{
	src->k++;
	if (src->arrival == ARRIVAL_CONSTANT)
		src->next_ms = src->phase_ms + (double)src->k * 1000.0 / src->rate_per_s;
	else
		src->next_ms += rng_exp(&src->rng, 1000.0 / src->rate_per_s);
}

/* Copies weights into s after checking them. Returns 0, -EINVAL or -ENOMEM. */
static int set_weights(struct sched *s, const double *weights, size_t n)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isfinite(weights[i]) || weights[i] < 0)
			return -EINVAL;
		sum += weights[i];
	}
	if (!(sum > 0) || !isfinite(sum))
		return -EINVAL;
	s->weights = malloc(n * sizeof(*s->weights));
	if (!s->weights)
		return -ENOMEM;
	memcpy(s->weights, weights, n * sizeof(*s->weights));
	s->nweights = n;
	s->weight_sum = sum;
	return 0;
}

/*
 * What both shapes share: the picking weights, nsrc sources (to be
 * started by the caller), the picking generator and the end. Returns 0, or
 * -EINVAL or -ENOMEM with s left empty.
 */
static int prepare(struct sched *s, const double *weights, size_t n, size_t nsrc,
		   double duration_ms, uint64_t seed)
{
	int rc = set_weights(s, weights, n);

	if (rc)
		goto out_free;
	s->src = calloc(nsrc, sizeof(*s->src));
	if (!s->src) {
		rc = -ENOMEM;
		goto out_free;
	}
	s->nsrc = nsrc;
	rng_seed_stream(&s->pick, seed, PICK_STREAM);
	s->end_ms = duration_ms;
	return 0;
out_free:
	sched_free(s);
	return rc;
}

/*
 * One source per stream. The picking weights (for sched_pick) are the rates,
 * so a closed-loop run sends the streams in the same proportions.
 */
int sched_init_rates(struct sched *s, const double *rates, const enum arrival *arrivals,
		     size_t n, double duration_ms, uint64_t seed)
{
	size_t i;
	int rc;

	memset(s, 0, sizeof(*s));
	if (n == 0 || n > INT_MAX || !rates || !arrivals || !duration_ok(duration_ms))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!rate_ok(rates[i]) || !arrival_ok(arrivals[i]))
			return -EINVAL;
	}
	rc = prepare(s, rates, n, n, duration_ms, seed);
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		source_start(&s->src[i], rates[i], arrivals[i], (int)i, (double)i / (double)n,
			     seed, i + 1);
	return 0;
}

/*
 * One source at rate whose arrivals are shared out by weight (its stream is
 * -1: each arrival's stream is drawn with the picking generator).
 */
int sched_init_shared(struct sched *s, double rate, enum arrival arrival,
		      const double *weights, size_t n, double duration_ms, uint64_t seed)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (n == 0 || n > INT_MAX || !weights || !rate_ok(rate) || !arrival_ok(arrival) ||
	    !duration_ok(duration_ms))
		return -EINVAL;
	rc = prepare(s, weights, n, 1, duration_ms, seed);
	if (rc)
		return rc;
	source_start(&s->src[0], rate, arrival, -1, 0, seed, 1);
	return 0;
}

/* Caps the arrivals issued in total; 0 lifts the cap. */
void sched_set_max(struct sched *s, uint64_t max_requests)
{
	s->max_requests = max_requests;
}

/* The index of the source with the earliest next arrival (ties: lowest). */
static size_t earliest(const struct sched *s)
{
	size_t best = 0;
	size_t i;

	for (i = 1; i < s->nsrc; i++) {
		if (s->src[i].next_ms < s->src[best].next_ms)
			best = i;
	}
	return best;
}

/* Issues the next arrival in time order; false once past the end or cap. */
bool sched_next(struct sched *s, double *at_ms, int *stream)
{
	struct sched_source *src;

	if (s->nsrc == 0)
		return false;
	if (s->max_requests && s->issued >= s->max_requests)
		return false;
	src = &s->src[earliest(s)];
	if (!(src->next_ms < s->end_ms))
		return false;
	*at_ms = src->next_ms;
	*stream = src->stream >= 0 ? src->stream : sched_pick(s);
	source_advance(src);
	s->issued++;
	return true;
}

/* The next arrival's time without issuing it; INFINITY when over. */
double sched_peek(const struct sched *s)
{
	double t;

	if (s->nsrc == 0)
		return INFINITY;
	if (s->max_requests && s->issued >= s->max_requests)
		return INFINITY;
	t = s->src[earliest(s)].next_ms;
	return t < s->end_ms ? t : INFINITY;
}

double sched_closed_next(int64_t n, double ramp_up_ms, int64_t *started, uint64_t busy,
			 double now_ms)
{
	double at;

	if (busy < (uint64_t)*started)
		return now_ms;
	if (*started >= n)
		return INFINITY;
	at = ramp_up_ms > 0 ? (double)*started * ramp_up_ms / (double)n : 0;
	if (at > now_ms)
		return at;
	(*started)++;
	return now_ms;
}

double sched_closed_free_at(double think_ms, bool ok, double now_ms, double duration_ms)
{
	if (ok || !(think_ms > 0) || now_ms >= duration_ms)
		return now_ms;
	return fmin(now_ms + think_ms, duration_ms);
}

/* A stream drawn by weight; never one whose weight is 0. */
int sched_pick(struct sched *s)
{
	double u;
	double cum = 0;
	size_t last = 0;
	size_t i;

	if (!s->weights || s->nweights <= 1)
		return 0;
	u = rng_uniform(&s->pick) * s->weight_sum;
	for (i = 0; i < s->nweights; i++) {
		if (s->weights[i] <= 0)
			continue;
		cum += s->weights[i];
		last = i;
		if (u < cum)
			return (int)i;
	}
	/* Rounding can leave u just above the running sum: the last one wins. */
	return (int)last;
}

/* Frees the sources and weights; the schedule is empty after. */
void sched_free(struct sched *s)
{
	free(s->src);
	free(s->weights);
	memset(s, 0, sizeof(*s));
}

int sched_init_load(struct sched *s, const struct mix *mix, double rate, enum arrival arrival,
		    int64_t concurrency, double duration_ms, uint64_t seed, int64_t max_requests)
{
	double *v = calloc(mix->n, sizeof(*v));
	enum arrival *arr = calloc(mix->n, sizeof(*arr));
	size_t i;
	int rc;

	if (!v || !arr) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < mix->n; i++) {
		v[i] = mix->by_rate ? mix->streams[i].rate : mix->streams[i].share;
		arr[i] = mix->streams[i].arrival >= 0 ? (enum arrival)mix->streams[i].arrival :
			 arrival;
	}
	if (mix->by_rate && concurrency == 0)
		rc = sched_init_rates(s, v, arr, mix->n, duration_ms, seed);
	else
		rc = sched_init_shared(s, concurrency > 0 ? 1.0 : rate, arrival, v, mix->n,
				       duration_ms, seed);
	if (!rc && max_requests > 0)
		sched_set_max(s, (uint64_t)max_requests);
out:
	free(v);
	free(arr);
	return rc;
}
