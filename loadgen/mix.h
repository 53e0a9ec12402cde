/*
 * mix: the request streams a run sends — from a mix file (JSON), or one
 * stream made from the command line. Each stream has a rate or a share, a
 * class, tenant and feature (sent as x-faultline-* headers), a model,
 * whether it streams, a prompt size, how many distinct questions it asks,
 * max_tokens, a response_format and extra headers. The file can also name
 * the response headers that carry the provider, attempts, hedged flag, cost
 * and degraded mark, for gateways other than ours.
 */
#ifndef FAULTLINE_MIX_H
#define FAULTLINE_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cfg.h"
#include "common/rng.h"
#include "loadgen/schedule.h"

struct mix_stream {
	char *name;
	double rate;		/* requests per second; 0: not given */
	double share;		/* weight among the streams; 0: not given */
	char *class_name;	/* "interactive" or "batch" */
	char *tenant;		/* "" when not given */
	char *feature;		/* "" when not given */
	char *model;
	double stream_p;	/* probability that a request streams, 0–1 */
	int64_t prompt_tokens;
	int64_t prompts;	/* distinct questions: 1 one for all, 0 one per request */
	int64_t max_tokens;
	char *response_format;	/* the body's response_format, compact JSON; NULL: none */
	int arrival;		/* enum arrival, or -1: the run's --arrival */
	char **headers;		/* "Name: value" strings */
	size_t nheaders;
};

struct mix {
	struct mix_stream *streams;
	size_t n;
	bool by_rate;		/* every stream gave a rate (none a share) */
	/* Response header names (lowercase) the record fields come from. */
	char *hdr_provider;
	char *hdr_attempts;
	char *hdr_hedged;
	char *hdr_cost;
	char *hdr_degraded;
};

/* What the command line gives streams that do not say. */
struct mix_defaults {
	const char *model;
	double stream_p;
	int64_t prompt_tokens;
	int64_t max_tokens;
	const char *response_format;	/* compact JSON (mix_response_format_ok); NULL: none */
};

/*
 * Loads a mix file:
 *   {"streams": [{"name": "chat", "rate": 5, "class": "interactive",
 *                 "tenant": "acme", "feature": "search", "model": "chat",
 *                 "stream": true, "prompt_tokens": 200, "prompts": 10,
 *                 "max_tokens": 64, "response_format": {"type": "json_object"},
 *                 "arrival": "poisson", "headers": {"x-foo": "bar"}}, …],
 *    "response_headers": {"provider": "x-litellm-model-id", …}}
 * Every stream gives either "rate" or "share" (above 0, at most 1e6), and
 * all streams alike; names are unique. "stream" is true, false or a
 * probability; "response_format" an object with a string "type" (kept as
 * compact JSON). Absent keys: class "interactive", tenant and feature "",
 * prompts 1, model, stream, prompt_tokens, max_tokens and response_format
 * from d, arrival -1. Header
 * names are HTTP tokens, values have no control characters, and the
 * headers loadgen sets itself (content-type, content-length, host,
 * x-request-id, x-faultline-class/-tenant/-feature) are refused. Response
 * header names are stored lowercase. Returns 0, or -EINVAL with a message
 * naming the file, the key path and what was expected in err (CFG_ERR_LEN
 * bytes), or -ENOMEM; on error m is left empty (all zero).
 */
int mix_load(struct mix *m, const char *path, const struct mix_defaults *d, char *err);

/*
 * The same for a mix already parsed (root: its top-level object, only
 * read; m keeps no pointer into it), path naming it in messages: the
 * runner checks a scenario's load.mix with it at load.
 */
int mix_from_json(struct mix *m, const cJSON *root, const char *path,
		  const struct mix_defaults *d, char *err);

/*
 * One stream, "default", from the command line's values (share 1, class
 * interactive, no tenant or feature, prompts 1, arrival -1) and the
 * x-faultline-* response header names. Returns 0 or -ENOMEM (m left empty).
 */
int mix_default(struct mix *m, const struct mix_defaults *d);

/* The request headers loadgen sets itself, which no stream or -H may set. */
#define MIX_RESERVED_HEADERS "content-type, content-length, host, accept, expect, " \
	"x-request-id, x-faultline-class, x-faultline-tenant, x-faultline-feature"

/*
 * Whether v can be a request's response_format: an object with a string
 * "type" ({"type": "json_schema", "json_schema": {…}}, say). The rest is
 * the server's to judge: loadgen sends it as it is.
 */
bool mix_response_format_ok(const cJSON *v);

/* What a response_format must be, for messages (after "expected "). */
#define MIX_RESPONSE_FORMAT_EXPECTED "an object with a string \"type\" " \
	"(such as {\"type\": \"json_object\"})"

/* The most distinct questions a stream may ask ("prompts"). */
#define MIX_MAX_PROMPTS 1000000000

/* True when name (len bytes) is an HTTP header name: letters, digits, !#$%&'*+-.^_`|~. */
bool mix_header_name_ok(const char *name, size_t len);

/* True when the header name (len bytes, any case) is one loadgen sets itself. */
bool mix_header_reserved(const char *name, size_t len);

/*
 * The prompt loadgen sends for prompt_tokens: that many words, the same
 * every time, separated by spaces (JSON-safe text). mix_prompt_write
 * appends it to b (0 or -ENOMEM); mix_prompt_len says its length.
 */
struct buf;
int mix_prompt_write(struct buf *b, int64_t prompt_tokens);
size_t mix_prompt_len(int64_t prompt_tokens);

/* Whether the next request of stream s streams: its stream_p, drawn from r when between 0 and 1. */
bool mix_draw_stream(const struct mix_stream *s, struct rng *r);

/* Sum of the streams' rates (by_rate mixes), else 0. */
double mix_total_rate(const struct mix *m);

/* Frees everything the mix holds; m is all zero after (safe to repeat). */
void mix_free(struct mix *m);

/*
 * The mix file's tables (top level, streams[], response_headers), each
 * with the dotted path of its object (docs/loadgen.md documents each key
 * as PATH.KEY). Returns the array, static, and its length in *n.
 */
const struct cfg_section *mix_sections(size_t *n);

#endif
