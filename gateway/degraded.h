/*
 * degraded: honest degraded answers — what an alias answers when nothing
 * healthy can (docs/gateway.md: Degraded answers): a completion with the
 * alias's static content, or the last good answer to the same request
 * from its answer cache, marked `x-faultline-degraded` and never billed.
 *
 * The key and the answers are built by pure functions here; the caches
 * (one per alias whose mode is cache, by route index) are owned by
 * struct degraded, which the gateway holds.
 */
#ifndef FAULTLINE_GATEWAY_DEGRADED_H
#define FAULTLINE_GATEWAY_DEGRADED_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/records.h"
#include "gateway/answer_cache.h"
#include "gateway/config.h"

/* One alias's degraded answers: its cache (mode cache) and counts. */
struct degraded_route {
	const struct gw_degraded *cfg;
	bool has_cache;
	struct answer_cache cache;
	uint64_t answers[DEGRADED_COUNT];	/* by mark (common/records.h owns the names) */
	uint64_t cache_misses;		/* nothing healthy, and no fresh answer: the error */
};

struct degraded {
	struct degraded_route *routes;	/* by route index */
	size_t nroutes;
};

/* One per alias (aliases[i] is route i). Returns 0 or -ENOMEM. */
int degraded_init(struct degraded *d, const struct gw_alias *aliases, size_t naliases);
void degraded_free(struct degraded *d);

/*
 * A good answer (body, len) to the request with key, on route: stored in
 * its cache at now (a failure to store is counted, not an error).
 */
void degraded_store(struct degraded *d, size_t route, const struct buf *key, const char *body,
		    size_t len, double now);

/*
 * The cache key of a request (root: its parsed body) into key: its
 * model, messages and every parameter that may change the answer, as
 * compact JSON — what does not (stream, stream_options, user, metadata,
 * store, service_tier, and unknown keys are kept: a key the gateway does
 * not know may matter) left out. Two requests that differ only in the
 * order of their top-level keys or in white space share a key. Returns 0
 * or -ENOMEM.
 */
int degraded_key(const cJSON *root, struct buf *key);

/*
 * A chat completion (stream false: JSON; true: SSE, its content in one
 * chunk, then a usage chunk and [DONE]) with content, for model, id
 * `degraded-ID`, created at unix_s, usage 0 tokens — nothing was
 * generated for it. Returns 0 or -ENOMEM.
 */
int degraded_completion(struct buf *out, const char *id, const char *model, const char *content,
			bool stream, double unix_s);

/*
 * A cached completion (body, a chat completion as an upstream sent it)
 * as a stream: its first choice's content in one chunk. Returns 0,
 * -EINVAL when the body has no string content, or -ENOMEM.
 */
int degraded_restream(struct buf *out, const char *body, size_t len, const char *id,
		      const char *model, double unix_s);

#endif
