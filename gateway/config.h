/*
 * config: the gateway's config file — providers, model aliases (ordered
 * chains of targets), the request deadline, retries and breaker settings —
 * validated once into plain structs, with every error naming the file, the
 * key's path and what was expected (docs/gateway-config.md lists every key).
 */
#ifndef FAULTLINE_GATEWAY_CONFIG_H
#define FAULTLINE_GATEWAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/breaker.h"
#include "common/cfg.h"
#include "gateway/health.h"

/* Limits of the client keys (auth.keys_env). */
#define GW_MAX_CLIENT_KEYS 32
#define GW_CLIENT_KEY_MIN 16		/* bytes: shorter keys can be guessed */
#define GW_CLIENT_KEY_MAX 1024

/* Limits of a chain. */
#define GW_MAX_TARGETS 16
#define GW_MAX_ATTEMPTS 64
#define GW_MAX_HEDGES 3

/* What a request does when every target of its alias is open. */
enum gw_all_open {
	GW_ALL_OPEN_LEAST_RECENTLY_FAILED,	/* try the one whose last failure is oldest */
	GW_ALL_OPEN_FAIL_FAST,			/* 503 at once */
};

/* Same-target retries. */
struct gw_retry {
	unsigned max_retries;		/* per target, after a failure */
	double base_ms;			/* backoff ceiling of the first retry */
	double cap_ms;			/* no backoff is longer */
	double min_attempt_ms;		/* a retry must leave this much deadline */
};

/* Hedging of an alias's slow requests (docs/gateway.md: Hedging). */
struct gw_hedge {
	bool enabled;
	double after_ms;		/* a fixed delay; NAN: adaptive */
	double percentile;		/* adaptive: of the first target's recent latencies */
	double min_after_ms;
	double max_after_ms;		/* also the delay before min_samples */
	unsigned min_samples;
	unsigned max;			/* hedges per request */
};

/* The retry and hedge token bucket of an alias. */
struct gw_budget {
	double ratio;			/* tokens per request */
	double min_per_second;		/* tokens per second */
	double burst;			/* tokens held at most */
};

/* The batch class's queue, per alias. */
struct gw_batch {
	unsigned queue_max;		/* 0: no queue */
	double max_wait_ms;
	unsigned concurrency;		/* dequeued requests in progress at once */
};

/* The wire format a provider speaks (docs/dialects.md). */
enum gw_dialect {
	GW_DIALECT_OPENAI,		/* chat completions: passed through */
	GW_DIALECT_ANTHROPIC,		/* Messages: translated both ways (anthropic.c) */
};

struct gw_provider {
	char *name;
	char *base_url;			/* as written, without a trailing '/' */
	char *chat_url;			/* base_url + "/chat/completions", or "/messages" */
	char *auth_header;		/* "Authorization: Bearer KEY" or "x-api-key: KEY", or
					 * NULL; never logged */
	enum gw_dialect dialect;
	int64_t default_max_tokens;	/* anthropic: max_tokens when a request gives none */
	double timeout_ms;		/* a whole attempt */
	double connect_timeout_ms;
	double price_in_per_1k;		/* USD per 1,000 prompt tokens */
	double price_out_per_1k;	/* USD per 1,000 completion tokens */
	struct breaker_config breaker;
	struct health_config health;	/* health_check; enabled only when given */
};

/* One entry of an alias's chain. */
struct gw_target_ref {
	size_t provider;		/* index into gw_config.providers */
	char *model;			/* the upstream model name */
};

/* An alias's output contracts (docs/gateway.md: Output contracts). */
struct contract;
struct gw_contract {
	bool enforce;			/* answers are checked against response_format */
	bool counts_as_failure;		/* a violation counts against its target's breaker */
	struct contract *dflt;		/* for requests that state none; NULL: none */
	char *dflt_json;		/* its response_format as compact JSON, sent upstream */
};

/* What an alias answers when nothing healthy can (docs/gateway.md: Degraded answers). */
enum gw_degraded_mode {
	GW_DEGRADED_ERROR,		/* the error (today's fast 503 and its kin) */
	GW_DEGRADED_STATIC,		/* a completion with fixed content */
	GW_DEGRADED_CACHE,		/* the last good answer to the same request */
};

struct gw_degraded {
	enum gw_degraded_mode mode;
	char *content;			/* static */
	double ttl_ms;			/* cache: an answer is trusted this long */
	size_t max_entries;		/* cache: its bounds */
	size_t max_bytes;
};

struct gw_alias {
	char *name;
	struct gw_target_ref *targets;
	size_t ntargets;
	unsigned max_attempts;
	struct gw_retry retry;
	struct gw_hedge hedge;
	struct gw_budget budget;
	struct gw_contract contract;
	struct gw_degraded degraded;
};

/*
 * The client keys a request must present (docs/gateway.md: Client keys); none when
 * nkeys is 0. The keys are never logged, and are wiped when freed.
 */
struct gw_auth {
	char **keys;			/* each 16-1024 printable bytes, no spaces */
	size_t *lens;
	size_t nkeys;
};

/* Where a replica's breakers are shared (docs/gateway-config.md: shared_state). */
enum gw_shared_backend {
	GW_SHARED_LOCAL,		/* not shared: this process's breakers alone */
	GW_SHARED_REDIS,		/* shared through Redis (gateway/shared.h) */
};

/* Limits of shared_state. */
#define GW_REPLICA_MAX 63		/* bytes of a replica's name */
#define GW_KEY_PREFIX_MAX 128		/* bytes of key_prefix */

struct gw_shared {
	enum gw_shared_backend backend;
	char *url;			/* as written; never holds a password */
	char *host;			/* numeric: 127.0.0.1, ::1 */
	int port;
	int db;				/* SELECT'ed on connecting */
	char *key_prefix;		/* every key and the channel start with it */
	char *password;			/* from password_env, or NULL; never logged, wiped */
	char *replica;			/* this replica's name: --replica, or the config's */
	double lock_ms;			/* the probe lock's expiry */
	double timeout_ms;		/* a reply later than this: Redis is down */
	double reconnect_ms;		/* the first reconnection's backoff ceiling */
	double reconnect_max_ms;	/* no backoff is longer */
};

/* The most worker processes a gateway runs (workers, --workers). */
#define GW_WORKERS_MAX 64

struct gw_config {
	struct sockaddr_storage listen;
	unsigned workers;		/* processes serving the port; 1: no supervisor */
	double deadline_ms;
	uint64_t seed;
	size_t max_body_bytes;
	size_t max_upstream_body_bytes;	/* one upstream answer buffered whole, at most */
	size_t upstream_body_budget_bytes;	/* every upstream answer buffered at once */
	double header_timeout_ms;
	double idle_timeout_ms;
	unsigned max_connections;
	struct breaker_config breaker;	/* the top level's, before provider overrides */
	enum gw_all_open when_all_open;
	double first_token_timeout_ms;	/* a streaming attempt's cap until its first content */
	double stall_timeout_ms;	/* the longest silence after a stream's commit */
	struct gw_batch batch;
	struct gw_provider *providers;
	size_t nproviders;
	struct gw_alias *aliases;
	size_t naliases;
	struct gw_auth auth;		/* auth.keys_env */
	struct gw_shared shared;	/* shared_state */
};

/*
 * Validates a parsed config (root: the top-level object) into cfg, as
 * gw_config_load does after reading the file; file names it in messages,
 * so a caller that embeds a gateway config in its own file (the chaos
 * runner's scenarios) can say where it is. root is only read, and cfg
 * keeps no pointer into it. Returns 0, or -EINVAL with a message in err
 * (CFG_ERR_LEN bytes); cfg is then empty.
 */
int gw_config_from_json(const cJSON *root, const char *file, bool allow_remote,
			struct gw_config *cfg, char *err);

/*
 * Checks a parsed config as gw_config_from_json does (providers on
 * loopback), except that the environment is not read: api_key_env and
 * auth.keys_env must be well formed, but their variables need not be set
 * here. For a config checked away from where the gateway will run (a
 * scenario loaded to report or gate results made elsewhere); the gateway
 * itself still refuses to start without them. Returns 0, or -EINVAL with
 * a message in err (CFG_ERR_LEN bytes).
 */
int gw_config_check_json(const cJSON *root, const char *file, char *err);

/*
 * gw_config_check_json, keeping what it read in *cfg (the caller frees it
 * with gw_config_free): for the runner, which predicts from a setup's
 * config (its breaker, timeouts and health checks) without running it.
 * Returns as gw_config_check_json; cfg is empty on failure.
 */
int gw_config_read_json(const cJSON *root, const char *file, struct gw_config *cfg, char *err);

/*
 * Loads and validates a config file. Providers' base URLs must be on
 * loopback unless allow_remote. An api_key_env must name a variable that
 * is set (its value is read here, and never written anywhere but the
 * upstream request). So must each of auth.keys_env, whose values are the
 * client keys. Returns 0, or -EINVAL with "FILE: KEY.PATH: expected …,
 * got …" in err (CFG_ERR_LEN bytes); cfg is then empty.
 */
int gw_config_load(const char *path, bool allow_remote, struct gw_config *cfg, char *err);

/*
 * Checks that the gateway may serve on addr, the config's listen or (when
 * flag is not NULL) the flag's value: an address that is not loopback
 * needs allow_remote and client keys (auth.keys_env), else anyone who can
 * reach it spends the providers' keys. file is the config's path. Returns
 * 0, or -EINVAL with a message naming the file and key, or the flag, in
 * err (CFG_ERR_LEN bytes).
 */
int gw_config_check_listen(const struct gw_config *cfg, const struct sockaddr_storage *addr,
			   const char *flag, bool allow_remote, const char *file, char *err);

/*
 * Sets the replica's name (--replica), replacing shared_state.replica.
 * Returns 0, or -EINVAL with a message in err (CFG_ERR_LEN bytes) when the
 * name is not 1–63 letters, digits, '-', '_' or '.'; -ENOMEM.
 */
int gw_config_set_replica(struct gw_config *cfg, const char *name, char *err);

/* Frees what gw_config_load allocated. */
void gw_config_free(struct gw_config *cfg);

/*
 * The config's tables, each once with the dotted path of its object
 * (docs/gateway-config.md documents each key as PATH.KEY); the overrides
 * (providers.NAME.breaker, models.ALIAS.retry/hedge/budget) take the keys
 * of the top-level table of that name. Returns the array, static, and its
 * length in *n.
 */
const struct cfg_section *gw_config_sections(size_t *n);

#endif
