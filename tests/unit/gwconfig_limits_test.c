/*
 * The gateway config's limits on buffered upstream answers:
 * max_upstream_body_bytes and upstream_body_budget_bytes, their defaults,
 * bounds and the rule that the budget holds at least one whole answer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/config.h"

static char err[CFG_ERR_LEN];

#define PROVIDERS "\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\"}}," \
	"\"models\":{\"m\":{\"targets\":[{\"provider\":\"p\",\"model\":\"x\"}]}}"

/* Loads {HEAD PROVIDERS} from a temp file. */
static int load(const char *head, struct gw_config *cfg)
{
	char dir[] = "/tmp/fl-gwlim-XXXXXX";
	char path[64];
	FILE *fp;
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/g.json", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fprintf(fp, "{%s" PROVIDERS "}", head);
	cr_assert_eq(fclose(fp), 0);
	err[0] = '\0';
	rc = gw_config_load(path, false, cfg, err);
	unlink(path);
	rmdir(dir);
	return rc;
}

Test(gwconfig_limits, defaults, .timeout = 10)
{
	struct gw_config cfg;

	cr_assert_eq(load("", &cfg), 0, "%s", err);
	cr_expect_eq(cfg.max_upstream_body_bytes, 16u << 20);
	cr_expect_eq(cfg.upstream_body_budget_bytes, 256u << 20);
	gw_config_free(&cfg);
}

Test(gwconfig_limits, set, .timeout = 10)
{
	struct gw_config cfg;

	cr_assert_eq(load("\"max_upstream_body_bytes\":65536,"
			  "\"upstream_body_budget_bytes\":2097152,", &cfg), 0, "%s", err);
	cr_expect_eq(cfg.max_upstream_body_bytes, 65536);
	cr_expect_eq(cfg.upstream_body_budget_bytes, 2097152);
	gw_config_free(&cfg);
}

Test(gwconfig_limits, errors, .timeout = 10)
{
	static const struct {
		const char *head;
		const char *says;
	} cases[] = {
		{ "\"max_upstream_body_bytes\":1000,", "max_upstream_body_bytes" },
		{ "\"max_upstream_body_bytes\":\"big\",", "max_upstream_body_bytes" },
		{ "\"upstream_body_budget_bytes\":1000,", "upstream_body_budget_bytes" },
		{ "\"max_upstream_body_bytes\":4194304,\"upstream_body_budget_bytes\":2097152,",
		  "upstream_body_budget_bytes: expected at least max_upstream_body_bytes (4194304)" },
	};
	struct gw_config cfg;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(load(cases[i].head, &cfg), -EINVAL, "%s", cases[i].head);
		cr_expect(strstr(err, cases[i].says), "expected \"%s\" in \"%s\"", cases[i].says,
			  err);
	}
}
