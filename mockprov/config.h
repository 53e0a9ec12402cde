/*
 * config: the mockprov config file — a list of providers, each with its
 * listen address, model, timing model and fault timeline, and the groups
 * of providers that fail together (each group's faults added to every
 * member's timeline) — validated once into plain structs.
 */
#ifndef FAULTLINE_MOCKPROV_CONFIG_H
#define FAULTLINE_MOCKPROV_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/cfg.h"
#include "mockprov/fault.h"
#include "mockprov/timing.h"
#include "mockprov/wire.h"

struct provider_cfg {
	char *name;
	char *listen;			/* as written */
	struct sockaddr_storage addr;
	char *model;
	char *group;			/* the group it is in, or NULL */
	bool strict_model;		/* 404 for any other model */
	enum wire_dialect dialect;	/* the API it speaks */
	struct timing_model timing;
	int64_t output_tokens;
	struct fault *faults;		/* its own, then its group's (fault.group set) */
	size_t nfaults;
};

struct mock_config {
	struct provider_cfg *providers;
	size_t nproviders;
};

/*
 * Validates a parsed config (root: the top-level object) into cfg; file
 * names it in messages, so a caller that embeds mockprov's config in its
 * own file (the chaos runner's scenarios) gets errors naming that file.
 * root is only read, and cfg keeps no pointer into it. Returns 0, or
 * -EINVAL with a message naming the file, key and expectation in err
 * (CFG_ERR_LEN bytes); cfg is then empty.
 */
int mock_config_from_json(const cJSON *root, const char *file, struct mock_config *cfg,
			  char *err);

/*
 * Loads and validates a config file (read with json_load_file, then
 * mock_config_from_json). Returns 0, or -EINVAL with a message
 * naming the file, key and expectation in err (CFG_ERR_LEN bytes).
 */
int mock_config_load(const char *path, struct mock_config *cfg, char *err);

/*
 * Checks that every provider listens on a loopback address (127.0.0.0/8 or
 * ::1), as mockprov requires unless it is run with --allow-remote, so a
 * config cannot open a mock to the network by accident. Returns 0, or
 * -EINVAL with a message naming file, providers[i].listen and the flag in
 * err (CFG_ERR_LEN bytes).
 */
int mock_config_require_loopback(const struct mock_config *cfg, const char *file, char *err);

/* Frees what mock_config_load allocated. */
void mock_config_free(struct mock_config *cfg);

/*
 * The config's tables — providers and their faults, every kind's keys —
 * each with the dotted path of its object (docs/mockprov.md documents
 * each key as PATH.KEY). Returns the array, static, and its length in *n.
 */
const struct cfg_section *mock_config_sections(size_t *n);

#endif
