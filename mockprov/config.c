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
	char *group;
	bool strict_model;
	int dialect;
	double ttft_ms;
	double jitter_ms;
	double token_ms;
	int64_t output_tokens;
};

#define PK(name, type, field, req, def, min, max, defs) \
	{ name, type, offsetof(struct provider_raw, field), req, def, min, max, defs, NULL }
#define PK_ENUM(name, field, defs, choices) \
	{ name, CFG_ENUM, offsetof(struct provider_raw, field), false, 0, 0, 0, defs, choices }

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
	PK("group", CFG_STR, group, false, 0, 0, 0, NULL),
	PK_ENUM("dialect", dialect, "openai", wire_dialect_names),
};
#define NPROVIDER_KEYS (sizeof(provider_keys) / sizeof(provider_keys[0]))

static const struct cfg_key top_keys[] = {
	{ "providers", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
	{ "groups", CFG_SKIP, 0, false, 0, 0, 0, NULL, NULL },
};
#define NTOP_KEYS (sizeof(top_keys) / sizeof(top_keys[0]))

/* A group's object: its faults, which every member takes after its own. */
static const struct cfg_key group_keys[] = {
	{ "faults", CFG_SKIP, 0, true, 0, 0, 0, NULL, NULL },
};
#define NGROUP_KEYS (sizeof(group_keys) / sizeof(group_keys[0]))

/* The most bytes in a group's name. */
#define GROUP_NAME_MAX 64

/*
 * Parses the fault array arr (the "faults" of the object at path) into a
 * new array *out of *n faults (absent: none). On an error *out may hold
 * what was made, for the caller to free.
 */
static int load_faults(const cJSON *arr, const char *file, const char *path,
		       struct fault **out, size_t *n, char *err)
{
	const cJSON *item;
	char fpath[128];
	size_t i = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return cfg_error(err, file, path, "faults", "expected an array of faults");
	*n = (size_t)cJSON_GetArraySize(arr);
	*out = calloc(*n ? *n : 1, sizeof(**out));
	if (!*out)
		return cfg_error(err, file, path, "faults", "out of memory");
	cJSON_ArrayForEach(item, arr) {
		snprintf(fpath, sizeof(fpath), "%s.faults[%zu]", path, i);
		rc = fault_parse(item, file, fpath, &(*out)[i], err);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/* A group's name: 1–64 bytes, none of them white space, '/', '\\', ',' or '"'. */
static bool group_name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= GROUP_NAME_MAX && !strpbrk(name, "/\\ \t\r\n,\"");
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
	if (raw.group && !group_name_ok(raw.group)) {
		rc = cfg_error(err, file, path, "group",
			       "expected a group's name, 1 to %d bytes without white space, "
			       "slash, backslash, comma or quote, got \"%.80s\"", GROUP_NAME_MAX,
			       raw.group);
		goto out;
	}
	p->name = raw.name;
	p->listen = raw.listen;
	p->model = raw.model;
	p->group = raw.group;
	raw.name = raw.listen = raw.model = raw.group = NULL;
	p->strict_model = raw.strict_model;
	p->dialect = (enum wire_dialect)raw.dialect;
	p->timing.ttft_ms = raw.ttft_ms;
	p->timing.jitter_ms = raw.jitter_ms;
	p->timing.token_ms = raw.token_ms;
	p->output_tokens = raw.output_tokens;
	rc = load_faults(cJSON_GetObjectItemCaseSensitive(obj, "faults"), file, path,
			 &p->faults, &p->nfaults, err);
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

/* Appends a copy of the group's n faults to p's own, marked as the group's. */
static int add_group_faults(struct provider_cfg *p, const struct fault *gf, size_t n)
{
	struct fault *all;
	size_t i;

	all = realloc(p->faults, (p->nfaults + n ? p->nfaults + n : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	p->faults = all;
	for (i = 0; i < n; i++) {
		all[p->nfaults + i] = gf[i];
		all[p->nfaults + i].group = p->group;
	}
	p->nfaults += n;
	return 0;
}

/*
 * One group, "groups": {"NAME": {"faults": […]}}: its faults go to the end
 * of every member's timeline (a provider whose "group" is NAME), each
 * member drawing their probabilities from its own streams. A group no
 * provider names is an error: its faults would do nothing.
 */
static int load_group(const cJSON *obj, const char *file, struct mock_config *cfg, char *err)
{
	const char *name = obj->string;
	char none;		/* the table's target: it has only the faults, read below */
	struct fault *gf = NULL;
	size_t members = 0;
	size_t n = 0;
	char path[GROUP_NAME_MAX + 16];
	size_t i;
	int rc;

	if (!group_name_ok(name))
		return cfg_error(err, file, "groups", NULL,
				 "expected names of groups, 1 to %d bytes without white space, "
				 "slash, backslash, comma or quote, got \"%.80s\"", GROUP_NAME_MAX,
				 name);
	snprintf(path, sizeof(path), "groups.%s", name);
	rc = cfg_apply(group_keys, NGROUP_KEYS, obj, &none, file, path, err);
	if (!rc)
		rc = load_faults(cJSON_GetObjectItemCaseSensitive(obj, "faults"), file, path, &gf,
				 &n, err);
	for (i = 0; !rc && i < cfg->nproviders; i++) {
		struct provider_cfg *p = &cfg->providers[i];

		if (!p->group || strcmp(p->group, name) != 0)
			continue;
		members++;
		if (add_group_faults(p, gf, n))
			rc = cfg_error(err, file, path, "faults", "out of memory");
	}
	if (!rc && !members)
		rc = cfg_error(err, file, "groups", name,
			       "no provider is in this group: expected a group some provider "
			       "names with \"group\": \"%s\"", name);
	free(gf);
	return rc;
}

static int load_groups(const cJSON *root, const char *file, struct mock_config *cfg,
		       char *err)
{
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
	const cJSON *g;
	const cJSON *prev;
	char got[96];
	int rc;

	if (!groups)
		return 0;
	if (!cJSON_IsObject(groups)) {
		cfg_describe(groups, got, sizeof(got));
		return cfg_error(err, file, "", "groups", "expected an object of groups, "
				 "{\"NAME\": {\"faults\": [...]}}, got %s", got);
	}
	cJSON_ArrayForEach(g, groups) {
		for (prev = groups->child; prev != g; prev = prev->next) {
			if (strcmp(prev->string, g->string) == 0)
				return cfg_error(err, file, "groups", g->string,
						 "given twice; expected each group once");
		}
		rc = load_group(g, file, cfg, err);
		if (rc)
			return rc;
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
	rc = cfg_apply(top_keys, NTOP_KEYS, root, cfg, file, "", err);
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
	if (!rc)
		rc = load_groups(root, file, cfg, err);
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
		free(cfg->providers[i].group);
		free(cfg->providers[i].faults);
	}
	free(cfg->providers);
	memset(cfg, 0, sizeof(*cfg));
}

/*
 * The top table, the provider table, a group's table, then
 * fault_config_sections (a group's faults are documented as a provider's).
 */
const struct cfg_section *mock_config_sections(size_t *n)
{
	static struct cfg_section sections[3 + FAULT_NKINDS + 1];
	size_t nfault;

	sections[0] = (struct cfg_section){ "", top_keys, NTOP_KEYS };
	sections[1] = (struct cfg_section){ "providers[]", provider_keys, NPROVIDER_KEYS };
	sections[2] = (struct cfg_section){ "groups.NAME", group_keys, NGROUP_KEYS };
	nfault = fault_config_sections("providers[].faults[]", &sections[3],
				       sizeof(sections) / sizeof(sections[0]) - 3);
	*n = 3 + nfault;
	return sections;
}
