/*
 * config: loading and validating the mockprov config.
 */
#include "mockprov/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/opt.h"

/* Raw values as the table reads them; copied into provider_cfg after. */
struct provider_raw {
	char *name;
	char *listen;
	char *model;
	bool strict_model;
	double ttft_ms;
	double jitter_ms;
	double token_ms;
	int64_t output_tokens;
};

#define PK(name, type, field, req, def, min, max, defs) \
	{ name, type, offsetof(struct provider_raw, field), req, def, min, max, defs, NULL }

static const struct cfg_key provider_keys[] = {
	PK("name", CFG_STR, name, true, 0, 0, 0, NULL),
	PK("listen", CFG_STR, listen, true, 0, 0, 0, NULL),
	PK("model", CFG_STR, model, false, 0, 0, 0, "mock-small"),
	PK("strict_model", CFG_BOOL, strict_model, false, 0, 0, 1, NULL),
	PK("ttft_ms", CFG_NUM, ttft_ms, false, 200, 0, 600000, NULL),
	PK("jitter_ms", CFG_NUM, jitter_ms, false, 0, 0, 600000, NULL),
	PK("token_ms", CFG_NUM, token_ms, false, 0, 0, 600000, NULL),
	PK("output_tokens", CFG_INT, output_tokens, false, 16, 1, 100000, NULL),
	PK("faults", CFG_SKIP, name, false, 0, 0, 0, NULL),
};
#define NPROVIDER_KEYS (sizeof(provider_keys) / sizeof(provider_keys[0]))

static const struct cfg_key top_keys[] = {
	{ "providers", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
};

static int load_faults(const cJSON *arr, const char *file, const char *path,
		       struct provider_cfg *p, char *err)
{
	const cJSON *item;
	char fpath[128];
	size_t i = 0;
	int rc;

	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return cfg_error(err, file, path, "faults", "expected an array of faults");
	p->nfaults = (size_t)cJSON_GetArraySize(arr);
	p->faults = calloc(p->nfaults ? p->nfaults : 1, sizeof(*p->faults));
	if (!p->faults)
		return cfg_error(err, file, path, "faults", "out of memory");
	cJSON_ArrayForEach(item, arr) {
		snprintf(fpath, sizeof(fpath), "%s.faults[%zu]", path, i);
		rc = fault_parse(item, file, fpath, &p->faults[i], err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

static int load_provider(const cJSON *obj, const char *file, size_t idx,
			 struct provider_cfg *p, char *err)
{
	struct provider_raw raw = { 0 };
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "providers[%zu]", idx);
	rc = cfg_apply(provider_keys, NPROVIDER_KEYS, obj, &raw, file, path, err);
	if (rc)
		goto out;
	if (!strchr(raw.listen, ':')) {
		rc = cfg_error(err, file, path, "listen",
			       "expected HOST:PORT, got \"%s\" (no port)", raw.listen);
		goto out;
	}
	if (opt_parse_hostport(raw.listen, &p->addr)) {
		rc = cfg_error(err, file, path, "listen",
			       "expected HOST:PORT with a numeric host and a port from 0 to 65535 "
			       "(e.g. 127.0.0.1:9001), got \"%s\"", raw.listen);
		goto out;
	}
	p->name = raw.name;
	p->listen = raw.listen;
	p->model = raw.model;
	raw.name = raw.listen = raw.model = NULL;
	p->strict_model = raw.strict_model;
	p->timing.ttft_ms = raw.ttft_ms;
	p->timing.jitter_ms = raw.jitter_ms;
	p->timing.token_ms = raw.token_ms;
	p->output_tokens = raw.output_tokens;
	rc = load_faults(cJSON_GetObjectItemCaseSensitive(obj, "faults"), file, path, p, err);
out:
	cfg_free(provider_keys, NPROVIDER_KEYS, &raw);
	return rc;
}

static bool same_port(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	int pa = opt_addr_port((const struct sockaddr *)a);

	return pa != 0 && pa == opt_addr_port((const struct sockaddr *)b);
}

static int check_unique(const char *file, struct mock_config *cfg, char *err)
{
	size_t i;
	size_t j;
	char path[64];

	for (i = 0; i < cfg->nproviders; i++) {
		for (j = 0; j < i; j++) {
			snprintf(path, sizeof(path), "providers[%zu]", i);
			if (strcmp(cfg->providers[i].name, cfg->providers[j].name) == 0)
				return cfg_error(err, file, path, "name",
						 "expected a name no other provider has, got \"%s\" "
						 "(also providers[%zu])", cfg->providers[i].name, j);
			if (same_port(&cfg->providers[i].addr, &cfg->providers[j].addr))
				return cfg_error(err, file, path, "listen",
						 "expected a port no other provider uses, got \"%s\" "
						 "(providers[%zu] listens on \"%s\")",
						 cfg->providers[i].listen, j, cfg->providers[j].listen);
		}
		if (strpbrk(cfg->providers[i].name, "/\\ \t\r\n,\"") ||
		    strcmp(cfg->providers[i].name, ".") == 0 ||
		    strcmp(cfg->providers[i].name, "..") == 0) {
			snprintf(path, sizeof(path), "providers[%zu]", i);
			return cfg_error(err, file, path, "name",
					 "expected a name usable in a file name (no slash, space, "
					 "comma or quote), got \"%s\"", cfg->providers[i].name);
		}
	}
	return 0;
}

int mock_config_from_json(const cJSON *root, const char *file, struct mock_config *cfg,
			  char *err)
{
	const cJSON *arr;
	const cJSON *item;
	size_t i = 0;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	rc = cfg_apply(top_keys, 1, root, cfg, file, "", err);
	if (rc)
		goto out;
	arr = cJSON_GetObjectItemCaseSensitive(root, "providers");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
		rc = cfg_error(err, file, "", "providers",
			       "expected a non-empty array of providers");
		goto out;
	}
	cfg->nproviders = (size_t)cJSON_GetArraySize(arr);
	cfg->providers = calloc(cfg->nproviders, sizeof(*cfg->providers));
	if (!cfg->providers) {
		rc = cfg_error(err, file, "", "providers", "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(item, arr) {
		rc = load_provider(item, file, i, &cfg->providers[i], err);
		if (rc)
			goto out;
		i++;
	}
	rc = check_unique(file, cfg, err);
out:
	if (rc)
		mock_config_free(cfg);
	return rc;
}

int mock_config_load(const char *path, struct mock_config *cfg, char *err)
{
	cJSON *root;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	root = json_load_file(path, err, CFG_ERR_LEN);
	if (!root)
		return -EINVAL;
	rc = mock_config_from_json(root, path, cfg, err);
	cJSON_Delete(root);
	return rc;
}

int mock_config_require_loopback(const struct mock_config *cfg, const char *file, char *err)
{
	char path[64];
	size_t i;

	for (i = 0; i < cfg->nproviders; i++) {
		if (opt_addr_is_loopback((const struct sockaddr *)&cfg->providers[i].addr))
			continue;
		snprintf(path, sizeof(path), "providers[%zu]", i);
		return cfg_error(err, file, path, "listen",
				 "expected a loopback address (127.0.0.0/8 or [::1]) unless "
				 "mockprov runs with --allow-remote, got \"%s\"",
				 cfg->providers[i].listen);
	}
	return 0;
}

void mock_config_free(struct mock_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nproviders; i++) {
		free(cfg->providers[i].name);
		free(cfg->providers[i].listen);
		free(cfg->providers[i].model);
		free(cfg->providers[i].faults);
	}
	free(cfg->providers);
	memset(cfg, 0, sizeof(*cfg));
}

/* providers[] and its faults: the top table, the provider table, then fault_config_sections. */
const struct cfg_section *mock_config_sections(size_t *n)
{
	static struct cfg_section sections[2 + FAULT_NKINDS + 1];
	size_t nfault;

	sections[0] = (struct cfg_section){ "", top_keys, sizeof(top_keys) / sizeof(top_keys[0]) };
	sections[1] = (struct cfg_section){ "providers[]", provider_keys, NPROVIDER_KEYS };
	nfault = fault_config_sections("providers[].faults[]", &sections[2],
				       sizeof(sections) / sizeof(sections[0]) - 2);
	*n = 2 + nfault;
	return sections;
}
