/*
 * scenario: the chaos runner's scenario file — providers with their fault
 * timelines, kill/restart actions, named phases, the load, the setups to
 * compare and the expectations — validated once into plain structs, with
 * every error naming the file, the key's path and what was expected. Pure:
 * no processes, no network. The providers are checked by mockprov's own
 * config code and each gateway setup's config by the gateway's
 * (gw_config_from_json, placeholders standing for loopback URLs), so what
 * a program would refuse at the run's start is refused at load. Also
 * builds the files the runner hands to the programs (mockprov's config, a
 * gateway setup's config) and expands the {port}, {listen} and
 * {upstream.NAME} placeholders of setups. "ci" says the time scale CI
 * runs the scenario at, and why (scenario_ci_scale); "detection" which
 * phases a detection study measures (runner/detect.h).
 *
 * Time scaling (scenario_scale, applied by scenario_load before anything
 * is checked), one rule over the whole parsed file:
 *   - every number whose key ends in "_s" or "_ms", alone or followed by
 *     "_max" or "_min" (from_s, ttft_ms, retry_after_s, cooldown_ms,
 *     latency_p99_ms_max, time_to_open_ms_max…), is multiplied by S;
 *   - every number whose key is "rate", "rpm" or "tpm", or ends in
 *     "_per_second" (the gateway's budget.min_per_second), is divided by
 *     S, so the requests sent in each phase stay the same;
 *   - nothing else changes (seed, probability, concurrency, retries, token
 *     counts, status, max_attempts, half_open_probes, consecutive_failures,
 *     max_body_bytes, shares…).
 * Numbers directly inside an array are judged by the array's key; object
 * keys are never renamed; the top-level "sim" object (the simulator's
 * model of the machine) and each setup's "ready_ms" (how long another
 * gateway may take to start) are left as written. Results stay doubles (no rounding), wherever
 * they are: providers, faults, actions, phases, load, the mix, gateway
 * configs, expect bounds.
 */
#ifndef FAULTLINE_SCENARIO_H
#define FAULTLINE_SCENARIO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cfg.h"

/* The time scale scenario_load accepts: (0, SC_SCALE_MAX]. */
#define SC_SCALE_MAX 100.0

/* The largest ci.time_scale a scenario may ask for. */
#define SC_CI_SCALE_MAX 10.0

/* The most gateway replicas a setup may ask for. */
#define SC_REPLICAS_MAX 16

/*
 * load.error_think_ms when a closed loop gives none (before scaling): a
 * client waits 10 ms after a request that was not ok, so one whose
 * requests fail at once sends about a hundred a second, not thousands.
 */
#define SC_ERROR_THINK_MS 10.0

enum sc_action_kind { SC_KILL, SC_RESTART };

/* What an action kills or restarts. */
enum sc_action_target {
	SC_TARGET_PROVIDER,		/* one provider's mockprov */
	SC_TARGET_REPLICA,		/* gateway replica K of every setup that has K replicas */
	SC_TARGET_REDIS,		/* the redis-server of every setup with shared_state redis */
};

/* A kill (SIGKILL) or restart of one process at at_ms after t0. */
struct sc_action {
	double at_ms;
	enum sc_action_kind kind;
	enum sc_action_target target;
	size_t provider;		/* SC_TARGET_PROVIDER: index into the scenario's providers */
	unsigned replica;		/* SC_TARGET_REPLICA: K, from 1 */
};

/* A named window [from_ms, to_ms) after t0; phases never overlap. */
struct sc_phase {
	char *name;
	double from_ms;
	double to_ms;
};

enum sc_setup_kind { SC_DIRECT, SC_CLIENT_RETRY, SC_GATEWAY, SC_EXTERNAL };

struct sc_setup {
	char *name;
	enum sc_setup_kind kind;
	size_t provider;		/* direct, client_retry: where loadgen sends */
	unsigned retries;		/* client_retry */
	double retry_backoff_ms;	/* client_retry (scaled) */
	cJSON *config;			/* gateway: owned copy, scaled, placeholders kept */
	unsigned replicas;		/* gateway: processes per run, 1..SC_REPLICAS_MAX (1 otherwise) */
	bool shared_redis;		/* gateway: shared_state "redis" (a redis-server per run) */
	char **command;			/* external: argv templates, NULL-terminated */
	size_t ncommand;
	char *ready_url;		/* external: template */
	char *target;			/* external: template, loadgen's base URL */
	cJSON *response_headers;	/* external: owned copy, or NULL */
	double ready_ms;		/* external: its ready_url answers by t0, which is
					 * CHAOS_LEAD_MS + ready_ms after the run begins (unscaled) */
	char **file_names;		/* external: files written into the run's folder */
	char **file_texts;		/* ...their text: templates */
	size_t nfiles;
	char **header_names;		/* any kind: request headers loadgen sends (-H) */
	char **header_values;		/* ...their values: templates */
	size_t nheaders;
};

/* The setups[].ready_ms an external setup gets when it gives none. */
#define SC_READY_MS_DEFAULT 5000

/* The most setups[].headers and setups[].files a setup may have. */
#define SC_SETUP_HEADERS_MAX 64
#define SC_SETUP_FILES_MAX 64

/*
 * One expectation; every bound is NAN when not given (at least one is).
 * cls narrows its figures to one request class, stream to one mix stream
 * (not both); window_ms goes with window_answered_min, relative_to with
 * the ratio bounds.
 */
struct sc_expect {
	char *setup;			/* a setup name or an fnmatch glob */
	char *phase;			/* a phase name or "*" */
	char *cls;			/* "interactive", "batch", or NULL: every request */
	char *stream;			/* a load.mix stream's name, or NULL: every request */
	char *relative_to;		/* a setup's name, or NULL */
	double window_ms;		/* scaled (from window_s); NAN: none */
	double error_rate_max;
	double answered_min;
	double answered_max;
	double window_answered_min;	/* every window of window_ms in the phase */
	double latency_p99_ratio_max;	/* p99 / relative_to's p99 */
	double cost_overhead_max;	/* cost per answered / relative_to's − 1 */
	double extra_requests_max;	/* upstream requests / client requests − 1 */
	double latency_p50_ms_max;
	double latency_p95_ms_max;
	double latency_p99_ms_max;
	double time_to_open_ms_max;
	double time_to_primary_ms_max;
	double time_to_primary_ms_min;
	double opens_min;		/* breaker openings in the phase (counts, never scaled) */
	double opens_max;
	double fallback_share_max;
	double fallback_share_min;
	double silent_breaks_max;	/* streams: stalls and truncations without an error event */
	double stalls_max;
	double max_gap_ms_max;
	double ttft_p95_ms_max;
	double duplicate_share_max;	/* discarded attempts / attempts */
	double cost_per_answered_max;	/* USD per ok request */
	double timeout_paid_max;	/* requests that waited out the primary's timeout (a count) */
	double timeout_paid_ratio_max;	/* timeout_paid / relative_to's timeout_paid */
	double replica_open_spread_ms_max;	/* last replica's first open − the first's */
	double probe_overlaps_max;	/* replicas half-open (locally) at once (a count) */
	double broken_answers_max;	/* answers that broke the contract and reached the client */
	double broken_answers_min;	/* ... at least (a setup that does not check: the trap shows) */
	double contract_violations_min;	/* provider answers that broke it (a count) */
	double degraded_min;		/* degraded answers, static or cache (a count) */
	double error_latency_ms_max;	/* the slowest request that was not answered */
	double transitions_min;		/* breaker events in the phase (counts, never scaled) */
	double transitions_max;
	double fallback_spend_usd_max;	/* the cost of answers from other providers than the primary */
	const char *source;		/* what gate calls it: NULL "expect"; "objective" */
};

/*
 * The scenario's service objective, the way a team states it: bounds a
 * setup must meet in one phase (or every phase: "*"), judged on the
 * figures' means (runner/objective.h). Every bound is NAN when not given.
 */
struct sc_objective {
	bool given;			/* the scenario has an "objective" */
	char *phase;			/* a phase name or "*" */
	double answered_min;
	double p95_ms_max;		/* scaled */
	double duplicate_share_max;
	double cost_per_answered_usd_max;
};

enum sc_arrival { SC_ARRIVAL_CONSTANT, SC_ARRIVAL_POISSON };

/*
 * The load. Open loop at rate req/s (concurrency 0), closed loop with
 * concurrency clients (rate 0), or — both 0 — open loop at the rates the
 * mix's streams give.
 */
struct sc_load {
	double rate;			/* scaled */
	unsigned concurrency;
	double ramp_up_ms;		/* scaled; closed loop: the clients begin over it */
	double error_think_ms;		/* scaled; closed loop: a client's wait after a
					 * request not ok (loadgen's --error-think); 0: none */
	enum sc_arrival arrival;
	double stream_p;
	double timeout_ms;		/* scaled */
	double stall_timeout_ms;	/* scaled; NAN: loadgen's default (its --timeout) */
	char *model;
	int64_t prompt_tokens;
	int64_t max_tokens;
	cJSON *mix;			/* owned copy (scaled) of a loadgen mix file, or NULL */
};

/* A provider's price (USD per 1,000 tokens), from the scenario's "prices". */
struct sc_price {
	bool set;
	double input;
	double output;
};

/*
 * The detection study's phases ("detection"): where the primary's fault
 * starts and where the recovery is measured from (docs/chaos.md).
 */
struct sc_detection {
	bool set;			/* the scenario has a detection block */
	size_t fault_phase;		/* index into phases */
	size_t recovery_phase;		/* index into phases */
};

/*
 * The simulator's model constants ("sim", runner/scenario.c): not time
 * scaled (the machine's overheads do not shrink with the timeline), not
 * read by a real run.
 */
struct sc_sim {
	double latency_ms;		/* a request reaches its server this long after it is sent */
	double refused_ms;		/* a refused connection is known this long after the send */
	double answer_ms;		/* a mock's planned answer or token comes this much later */
	double jitter_ms;		/* and an exponential draw of this mean more */
	double gateway_ms;		/* a request reaches the gateway this much later than a mock */
	double restart_ms;		/* a restarted mock listens again this long after the restart */
};

struct scenario {
	char *name;
	char *description;
	char *path;			/* the file, as given */
	double scale;			/* the one it was loaded at */
	double ci_scale;		/* ci.time_scale: CI's scale for it (1 when not given) */
	char *ci_why;			/* ci.why, or NULL */
	double duration_ms;		/* scaled */
	uint64_t seed;
	cJSON *providers;		/* the scaled providers array, owned */
	cJSON *groups;			/* the scaled groups object (mockprov's), owned; NULL: none */
	char **provider_names;		/* nproviders, in file order */
	size_t nproviders;
	struct sc_price *prices;	/* nproviders, in file order; unset: no price */
	struct sc_action *actions;	/* sorted by at_ms (stable) */
	size_t nactions;
	struct sc_phase *phases;	/* in file order */
	size_t nphases;
	struct sc_load load;
	struct sc_setup *setups;
	size_t nsetups;
	size_t nadded;			/* the last nadded setups came from scenario_add_setups */
	cJSON *added;			/* ...as written (unscaled): an array, owned; NULL: none */
	cJSON *written;			/* the document as loaded (unscaled, setups as written): owned */
	struct sc_expect *expects;
	size_t nexpects;
	struct sc_objective objective;
	struct sc_detection detection;
	struct sc_sim sim;
};

/*
 * Loads a scenario file, scaling its durations by scale (in (0, 100]; see
 * the top of this file) before validating it. Returns 0 with sc filled
 * (free it with scenario_free); or -EINVAL (-ENOMEM when out of memory)
 * with a message in err (CFG_ERR_LEN bytes) in cfg's form,
 * "FILE: PATH.KEY: expected …, got …" (a gateway setup's config:
 * "FILE: setups[I] \"NAME\": config.KEY: …"), and sc empty. With a scale other
 * than 1 the message ends with a note saying so, as the values it quotes
 * are the scaled ones.
 */
int scenario_load(const char *path, double scale, struct scenario *sc, char *err);

/*
 * scenario_load of a document already parsed (doc, not changed: a sweep's
 * point, its values put in), path standing for its file in sc->path and
 * in the messages. Returns as scenario_load.
 */
int scenario_load_json(const cJSON *doc, const char *path, double scale, struct scenario *sc,
		       char *err);

/*
 * The time scale CI runs the scenario at: its "ci": {"time_scale": S,
 * "why": "…"} (S in (0, SC_CI_SCALE_MAX]), or 1 when it has none. Reads
 * the file and checks that block alone (scenario_load checks the rest, at
 * that scale). Returns 0 with *scale set, or -EINVAL with a message in err
 * (CFG_ERR_LEN bytes) naming the file and key.
 */
int scenario_ci_scale(const char *path, double *scale, char *err);

/* Frees what scenario_load allocated; sc is left empty (freeing it again is harmless). */
void scenario_free(struct scenario *sc);

/*
 * Applies the time-scaling rule (top of this file) to every number under
 * root, in place. Returns 0, or -EINVAL when s is not a finite number
 * above 0 (root is then unchanged).
 */
int scenario_scale(cJSON *root, double s);

/* The index of the provider called name, or -1. */
int scenario_provider_index(const struct scenario *sc, const char *name);

/* Whether a and b kill or restart the same process (provider, replica K, Redis). */
bool scenario_action_same_target(const struct sc_action *a, const struct sc_action *b);

/*
 * Whether action a is carried out in a run of setup st: a provider's in
 * every setup, replica K's in a gateway setup with at least K replicas,
 * Redis's in a setup with shared_state redis.
 */
bool scenario_action_applies(const struct sc_action *a, const struct sc_setup *st);

/*
 * Whether a gateway setup runs as replicas — several processes, or one
 * sharing its state through Redis — whose files are named per replica
 * (events-rK.jsonl, gateway-rK.log) and which get --replica rK. A plain
 * gateway setup (one replica, local state) keeps events.jsonl.
 */
bool scenario_setup_replicated(const struct sc_setup *st);

/*
 * Refuses what chaos sim cannot simulate yet — a setup with replicas > 1
 * or shared_state redis (of those that would run: only_setup's alone when
 * not NULL), an action on a gateway replica or on Redis, a bad_content
 * fault (a provider's or a group's: the simulated gateway and load do not
 * read content). Returns 0, or
 * -EINVAL with err (CFG_ERR_LEN bytes) naming the file, the key and why.
 */
int scenario_sim_check(const struct scenario *sc, const char *only_setup, char *err);

/*
 * mockprov's config for the run, {"providers":[…]} and the scenario's
 * "groups" when it has them, as a malloc'ed JSON string (NULL when out of
 * memory). Each provider's listen is as written,
 * or 127.0.0.1:0. With ports (may be NULL) and ports[i] > 0, provider i
 * listens on that port instead, on the host of its listen (127.0.0.1 when
 * none): a restart after a kill must come back on the port the setup's
 * URLs already point at.
 */
char *scenario_mock_config(const struct scenario *sc, const int *ports);

/*
 * A gateway setup's config for one run as a malloc'ed JSON string: every
 * {upstream.NAME} in its string values replaced by urls[i]
 * ("http://HOST:PORT/v1") for the provider i called NAME, and "listen" set
 * to listen. With redis_url (NULL: none, the gateway's default local
 * state), "shared_state": {"backend": "redis", "url": redis_url,
 * "key_prefix": key_prefix} is added. Returns NULL with the reason in err
 * (CFG_ERR_LEN bytes) when st is not a gateway setup or memory runs out.
 */
char *scenario_gateway_config(const struct scenario *sc, const struct sc_setup *st,
			      const char *listen, const char *const *urls, const char *redis_url,
			      const char *key_prefix, char *err);

/*
 * The mix loadgen gets for setup st (NULL: the scenario's own, for
 * checking it): load.mix, with the one stream "load" (share 1) when it
 * names none, an external setup's response_headers in place of the
 * mix's, and no stream header st's headers name (any case): the setup's
 * value, sent with loadgen's -H, wins. A new cJSON object the caller deletes; NULL when the run needs
 * no mix file (no load.mix and no response_headers) or memory runs out
 * (*oom then true).
 */
cJSON *scenario_loadgen_mix(const struct scenario *sc, const struct sc_setup *st, bool *oom);

/* What a run's placeholders stand for (scenario_expand). */
struct sc_expand_vals {
	int port;			/* {port}, {listen}: an external setup's own port */
	const char *const *urls;	/* {upstream.NAME}: per provider, http://HOST:PORT/v1 */
	const char *const *hostports;	/* {hostport.NAME}: per provider, HOST:PORT */
	const char *dir;		/* {dir}: the run's folder, an absolute path; NULL: none */
};

/*
 * Expands a setup's template (an external setup's command argument,
 * ready_url, target or file, any setup's header value): {port} → v->port,
 * {listen} → 127.0.0.1:port, {upstream.NAME} → v->urls[i] and
 * {hostport.NAME} → v->hostports[i] of the provider i called NAME (NAME
 * runs to the next '}'), {dir} → v->dir, {ms:N} → N × the scenario's time
 * scale, rounded to a whole number, at least 1 when N is above 0. Any
 * other {word} of lower-case letters, '_' and '.' is taken for a misspelt
 * placeholder (there is no escape for one meant literally); other text,
 * braces included ({"a":1}, {X}, "{ "), is kept as it is. scenario_load
 * refuses templates (and gateway config strings) this would refuse, so
 * for a loaded scenario's own templates only memory can fail. Returns a
 * malloc'ed string; NULL with errno EINVAL (an unknown placeholder or
 * provider, or a value v lacks) or ENOMEM.
 */
char *scenario_expand(const struct scenario *sc, const char *tmpl, const struct sc_expand_vals *v);

/*
 * Adds the setups of the JSON file at path — one setup object, or an
 * array of them — to sc's (loaded, at its time scale: the file is scaled
 * alike), checked as the scenario's own are: every error names path and
 * the setup's place in it ("FILE: setups[1].headers.x-request-id: …"; a
 * file of one object: "setups[0]"), a name the scenario (or an earlier
 * file) has included. The setups added keep their JSON as written in
 * sc->added, for the stamp's scenario.json. Returns 0, or -EINVAL
 * (-ENOMEM) with a message in err (CFG_ERR_LEN bytes) and sc as it was.
 */
int scenario_add_setups(struct scenario *sc, const char *path, char *err);

/* scenario_add_setups of a document already read (path names it in errors). */
int scenario_add_setup_json(struct scenario *sc, const cJSON *doc, const char *path, char *err);

/*
 * The provider a setup counts as its primary (for fallback share and time
 * to primary): a direct or client_retry setup's provider, a gateway
 * setup's first alias's first target's provider, else the first provider.
 */
const char *scenario_primary(const struct scenario *sc, const struct sc_setup *st);

/*
 * The window lengths (ms, scaled, each once, in the order first given) the
 * expectations' window_s ask for, into out (at most max); returns how many.
 */
size_t scenario_windows(const struct scenario *sc, double *out, size_t max);

/* The index of the phase containing t_ms (from_ms ≤ t_ms < to_ms), or -1. */
int scenario_phase_at(const struct scenario *sc, double t_ms);

/*
 * The scenario file's tables — top level, prices, actions, phases, load,
 * every setup kind's keys and the expectations — each with the dotted path
 * of its object (docs/scenario-format.md documents each key as PATH.KEY).
 * Returns the array, static, and its length in *n.
 */
const struct cfg_section *scenario_sections(size_t *n);

#endif
