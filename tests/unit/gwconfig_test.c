/*
 * gateway config: a full config fills every field, absent keys take their
 * defaults, a provider's breaker and an alias's retry, hedge and budget
 * inherit what they do not name, and each kind of mistake is refused
 * naming the file, the key path and what was expected. Also the router
 * built from a config: shared targets, provider filters, the
 * least-recently-failed choice.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/config.h"
#include "common/opt.h"
#include "gateway/router.h"

static char err[CFG_ERR_LEN];
static char file[128];

/* Writes json to a fresh temporary directory, loads it, removes it again. */
static int load_opts(const char *json, bool allow_remote, struct gw_config *cfg)
{
	char dir[64];
	FILE *fp;
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/fl-gwcfg-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/gateway.json", dir);
	fp = fopen(file, "w");
	cr_assert_not_null(fp);
	cr_assert_eq(fputs(json, fp) >= 0, true);
	cr_assert_eq(fclose(fp), 0);
	err[0] = '\0';
	rc = gw_config_load(file, allow_remote, cfg, err);
	unlink(file);
	rmdir(dir);
	return rc;
}

static int load(const char *json, struct gw_config *cfg)
{
	return load_opts(json, false, cfg);
}

/* Asserts that two breaker configs agree field by field. */
static void assert_breaker_eq(const struct breaker_config *a, const struct breaker_config *b)
{
	cr_assert_eq(a->enabled, b->enabled);
	cr_assert_eq(a->consecutive_failures, b->consecutive_failures);
	cr_assert_float_eq(a->failure_ratio, b->failure_ratio, 0);
	cr_assert_float_eq(a->window_ms, b->window_ms, 0);
	cr_assert_eq(a->buckets, b->buckets);
	cr_assert_eq(a->min_requests, b->min_requests);
	cr_assert_float_eq(a->slow_ms, b->slow_ms, 0);
	cr_assert_float_eq(a->slow_ratio, b->slow_ratio, 0);
	cr_assert_float_eq(a->latency_budget_ms, b->latency_budget_ms, 0);
	cr_assert_float_eq(a->latency_percentile, b->latency_percentile, 0);
	cr_assert_float_eq(a->cooldown_ms, b->cooldown_ms, 0);
	cr_assert_float_eq(a->cooldown_multiplier, b->cooldown_multiplier, 0);
	cr_assert_float_eq(a->cooldown_max_ms, b->cooldown_max_ms, 0);
	cr_assert_float_eq(a->cooldown_jitter, b->cooldown_jitter, 0);
	cr_assert_eq(a->half_open_probes, b->half_open_probes);
}

#define MINIMAL \
	"{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\"}}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}"

Test(gwconfig, minimal_takes_every_default, .timeout = 10)
{
	struct gw_config c;
	struct breaker_config d = breaker_config_default();
	char addr[64];

	cr_assert_eq(load(MINIMAL, &c), 0, "%s", err);
	cr_assert_str_eq(opt_format_addr((struct sockaddr *)&c.listen, addr, sizeof(addr)),
			 "127.0.0.1:8080");
	cr_assert_float_eq(c.deadline_ms, 30000, 0);
	cr_assert_eq(c.seed, 1);
	cr_assert_eq(c.max_body_bytes, 1048576);
	cr_assert_float_eq(c.header_timeout_ms, 10000, 0);
	cr_assert_float_eq(c.idle_timeout_ms, 60000, 0);
	cr_assert_eq(c.max_connections, 10000);
	cr_assert_eq(c.when_all_open, GW_ALL_OPEN_LEAST_RECENTLY_FAILED);
	cr_assert_float_eq(c.first_token_timeout_ms, 1000, 0);
	cr_assert_float_eq(c.stall_timeout_ms, 3000, 0);
	assert_breaker_eq(&c.breaker, &d);
	cr_assert_eq(c.nproviders, 1);
	cr_assert_str_eq(c.providers[0].name, "p");
	cr_assert_str_eq(c.providers[0].base_url, "http://127.0.0.1:9001/v1");
	cr_assert_str_eq(c.providers[0].chat_url, "http://127.0.0.1:9001/v1/chat/completions");
	cr_assert_null(c.providers[0].auth_header);
	cr_assert_float_eq(c.providers[0].timeout_ms, 10000, 0);
	cr_assert_float_eq(c.providers[0].connect_timeout_ms, 2000, 0);
	cr_assert_float_eq(c.providers[0].price_in_per_1k, 0, 0);
	cr_assert_float_eq(c.providers[0].price_out_per_1k, 0, 0);
	assert_breaker_eq(&c.providers[0].breaker, &d);
	cr_assert_eq(c.naliases, 1);
	cr_assert_str_eq(c.aliases[0].name, "chat");
	cr_assert_eq(c.aliases[0].ntargets, 1);
	cr_assert_eq(c.aliases[0].targets[0].provider, 0);
	cr_assert_str_eq(c.aliases[0].targets[0].model, "m");
	cr_assert_eq(c.aliases[0].max_attempts, 1, "max_attempts defaults to the targets");
	cr_assert_eq(c.aliases[0].retry.max_retries, 0);
	cr_assert_float_eq(c.aliases[0].retry.base_ms, 100, 0);
	cr_assert_float_eq(c.aliases[0].retry.cap_ms, 2000, 0);
	cr_assert_float_eq(c.aliases[0].retry.min_attempt_ms, 100, 0);
	gw_config_free(&c);
	cr_assert_null(c.providers);
	cr_assert_eq(c.naliases, 0);
}

Test(gwconfig, full_config_and_inheritance, .timeout = 10)
{
	static const char json[] =
		"{\"listen\":\"127.0.0.1:0\",\"request_deadline_ms\":5000,\"seed\":7,"
		"\"max_body_bytes\":4096,\"header_timeout_ms\":500,\"idle_timeout_ms\":900,"
		"\"max_connections\":12,"
		"\"stream\":{\"first_token_timeout_ms\":700,\"stall_timeout_ms\":800},"
		"\"retry\":{\"max_retries\":2,\"base_ms\":50,\"cap_ms\":400,\"min_attempt_ms\":20},"
		"\"breaker\":{\"consecutive_failures\":4,\"cooldown_ms\":1500,\"half_open_probes\":2,"
		"\"cooldown_jitter\":0,\"when_all_open\":\"fail_fast\"},"
		"\"providers\":{"
		" \"a\":{\"base_url\":\"http://localhost:9001/v1/\",\"api_key_env\":\"FL_TEST_KEY\","
		"      \"timeout_ms\":1000,\"connect_timeout_ms\":300,"
		"      \"price_per_1k\":{\"input\":0.15,\"output\":0.6},"
		"      \"breaker\":{\"consecutive_failures\":2,\"enabled\":false}},"
		" \"b\":{\"base_url\":\"https://[::1]:9443\"}},"
		"\"models\":{"
		" \"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"small\"},"
		"                       {\"provider\":\"b\",\"model\":\"small\"}],"
		"          \"max_attempts\":5,\"retry\":{\"max_retries\":1}},"
		" \"openai/gpt-4o\":{\"targets\":[{\"provider\":\"b\",\"model\":\"big\"}]}}}";
	struct gw_config c;

	setenv("FL_TEST_KEY", "sk-test-123", 1);
	cr_assert_eq(load(json, &c), 0, "%s", err);
	cr_assert_float_eq(c.deadline_ms, 5000, 0);
	cr_assert_eq(c.seed, 7);
	cr_assert_eq(c.max_body_bytes, 4096);
	cr_assert_float_eq(c.header_timeout_ms, 500, 0);
	cr_assert_float_eq(c.idle_timeout_ms, 900, 0);
	cr_assert_eq(c.max_connections, 12);
	cr_assert_float_eq(c.first_token_timeout_ms, 700, 0);
	cr_assert_float_eq(c.stall_timeout_ms, 800, 0);
	cr_assert_eq(c.when_all_open, GW_ALL_OPEN_FAIL_FAST);
	cr_assert_str_eq(c.providers[0].base_url, "http://localhost:9001/v1", "trailing / dropped");
	cr_assert_str_eq(c.providers[0].chat_url, "http://localhost:9001/v1/chat/completions");
	cr_assert_str_eq(c.providers[0].auth_header, "Authorization: Bearer sk-test-123");
	cr_assert_float_eq(c.providers[0].timeout_ms, 1000, 0);
	cr_assert_float_eq(c.providers[0].connect_timeout_ms, 300, 0);
	cr_assert_float_eq(c.providers[0].price_in_per_1k, 0.15, 1e-12);
	cr_assert_float_eq(c.providers[0].price_out_per_1k, 0.6, 1e-12);
	/* a's override names two keys; the rest come from the top-level breaker. */
	cr_assert_eq(c.providers[0].breaker.consecutive_failures, 2);
	cr_assert_eq(c.providers[0].breaker.enabled, false);
	cr_assert_float_eq(c.providers[0].breaker.cooldown_ms, 1500, 0);
	cr_assert_eq(c.providers[0].breaker.half_open_probes, 2);
	cr_assert_float_eq(c.providers[0].breaker.cooldown_jitter, 0, 0);
	cr_assert_float_eq(c.providers[0].breaker.failure_ratio, 0.5, 0);
	/* b has no override: the top level's as it is. */
	cr_assert_eq(c.providers[1].breaker.consecutive_failures, 4);
	cr_assert_eq(c.providers[1].breaker.enabled, true);
	cr_assert_str_eq(c.providers[1].chat_url, "https://[::1]:9443/chat/completions");
	cr_assert_eq(c.aliases[0].max_attempts, 5);
	cr_assert_eq(c.aliases[0].retry.max_retries, 1, "the alias's own");
	cr_assert_float_eq(c.aliases[0].retry.base_ms, 50, 0, "inherited");
	cr_assert_float_eq(c.aliases[0].retry.cap_ms, 400, 0);
	cr_assert_float_eq(c.aliases[0].retry.min_attempt_ms, 20, 0);
	cr_assert_str_eq(c.aliases[1].name, "openai/gpt-4o");
	cr_assert_eq(c.aliases[1].retry.max_retries, 2, "the top level's");
	cr_assert_eq(c.aliases[1].max_attempts, 1);
	gw_config_free(&c);
	unsetenv("FL_TEST_KEY");
}

Test(gwconfig, remote_base_url_with_allow_remote, .timeout = 10)
{
	static const char json[] =
		"{\"providers\":{\"p\":{\"base_url\":\"https://api.example.com/v1\"}},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}";
	struct gw_config c;

	cr_assert_eq(load(json, &c), -EINVAL);
	cr_assert(strstr(err, "providers.p.base_url: expected a loopback host"), "%s", err);
	cr_assert_eq(load_opts(json, true, &c), 0, "%s", err);
	cr_assert_str_eq(c.providers[0].chat_url, "https://api.example.com/v1/chat/completions");
	gw_config_free(&c);
}

/* A config that must be refused, and what the message must say. */
struct bad_case {
	const char *json;
	const char *says;
};

#define P_OK "\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\"}}"
#define M_OK "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}"

static const struct bad_case bad_cases[] = {
	{ "{" P_OK "," M_OK ",\"colour\":1}", ": colour: unknown key" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"health_check\":{\"fall\":0}}}," M_OK "}", "providers.p.health_check.fall: expected a whole number from 1 to 100" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"health_check\":{\"request\":\"ping\"}}}," M_OK "}",
	  "providers.p.health_check.request:" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"health_check\":{\"every\":1}}}," M_OK "}",
	  "providers.p.health_check.every: unknown key" },
	{ "{" P_OK "}", ": models: missing (required)" },
	{ "{" M_OK "}", ": providers: missing (required)" },
	{ "{\"providers\":{}," M_OK "}", ": providers: expected a non-empty object" },
	{ "{" P_OK ",\"models\":[]}", ": models: expected a non-empty object" },
	{ "{" P_OK "," M_OK ",\"request_deadline_ms\":0}",
	  ": request_deadline_ms: expected a number from 1 to 3600000, got 0" },
	{ "{" P_OK "," M_OK ",\"listen\":\"nowhere\"}", ": listen: expected HOST:PORT" },
	{ "{" P_OK "," M_OK ",\"max_body_bytes\":10}", ": max_body_bytes: expected a whole number" },
	{ "{" P_OK "," M_OK ",\"stream\":{\"stall_timeout_ms\":-1}}", ": stream.stall_timeout_ms:" },
	{ "{" P_OK "," M_OK ",\"retry\":{\"max_retries\":11}}", ": retry.max_retries: expected" },
	{ "{" P_OK "," M_OK ",\"retry\":{\"tries\":1}}", ": retry.tries: unknown key" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"failure_ratio\":1.5}}", ": breaker.failure_ratio:" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"when_all_open\":\"panic\"}}",
	  ": breaker.when_all_open: expected one of least_recently_failed, fail_fast" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"cooldown_ms\":5000,\"cooldown_max_ms\":100}}",
	  ": breaker.cooldown_max_ms: expected a finite number >= cooldown_ms" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"buckets\":10,\"window_ms\":5}}",
	  ": breaker.window_ms: expected 10 (1 ms per bucket)" },
	{ "{\"providers\":{\"p\":{}}," M_OK "}", ": providers.p.base_url: missing (required)" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"ftp://127.0.0.1/\"}}," M_OK "}",
	  ": providers.p.base_url: expected an http:// or https:// URL" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://10.0.0.1:80/v1\"}}," M_OK "}",
	  ": providers.p.base_url: expected a loopback host" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1?x=1\"}}," M_OK "}",
	  ": providers.p.base_url: expected a URL without a query" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://:9/v1\"}}," M_OK "}",
	  ": providers.p.base_url: expected a URL such as http://127.0.0.1:9001/v1" },
	/* curl would connect to 10.1.2.3 and send the userinfo as Basic auth. */
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://localhost:1@10.1.2.3/v1\"}}," M_OK "}",
	  ": providers.p.base_url: expected a URL without a user or password" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1#frag\"}}," M_OK "}",
	  ": providers.p.base_url: expected a URL without a query or fragment" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1\\\\@10.0.0.1/\"}}," M_OK "}",
	  ": providers.p.base_url: expected a URL such as" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\",\"timeout_ms\":0}}," M_OK "}",
	  ": providers.p.timeout_ms: expected a number from 1" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\","
	  "\"api_key_env\":\"FL_SURELY_UNSET_VAR\"}}," M_OK "}",
	  ": providers.p.api_key_env: expected the name of a set environment variable, but "
	  "FL_SURELY_UNSET_VAR is not set" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\","
	  "\"price_per_1k\":{\"input\":-1}}}," M_OK "}",
	  ": providers.p.price_per_1k.input: expected a number from 0 to 1000" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\","
	  "\"breaker\":{\"when_all_open\":\"fail_fast\"}}}," M_OK "}",
	  ": providers.p.breaker.when_all_open: unknown key" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\","
	  "\"breaker\":{\"half_open_probes\":0}}}," M_OK "}",
	  ": providers.p.breaker.half_open_probes: expected a whole number from 1 to 1000" },
	{ "{\"providers\":{\"bad name\":{\"base_url\":\"http://127.0.0.1:9\"}}," M_OK "}",
	  ": providers.bad name: expected a provider name" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9\"},"
	  "\"p\":{\"base_url\":\"http://127.0.0.1:9\"}}," M_OK "}",
	  ": providers.p: given twice" },
	{ "{" P_OK ",\"models\":{\"chat\":{}}}", ": models.chat.targets: missing (required)" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[]}}}",
	  ": models.chat.targets: expected an array of 1 to 16 targets" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"q\",\"model\":\"m\"}]}}}",
	  ": models.chat.targets[0].provider: expected a provider defined under \"providers\", "
	  "got \"q\"" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\"}]}}}",
	  ": models.chat.targets[0].model: missing (required)" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"},"
	  "{\"provider\":\"p\",\"model\":\"m\"}]}}}",
	  ": models.chat.targets[1]: expected each target once, but p/m is also targets[0]" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"max_attempts\":0}}}", ": models.chat.max_attempts: expected a whole number from 1 to 64" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"retry\":{\"cap_ms\":-5}}}}", ": models.chat.retry.cap_ms: expected a number from 0" },
	{ "{" P_OK ",\"models\":{\"a \\\"b\\\"\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}",
	  ": models.a \"b\": expected an alias" },
	{ "[1,2]", "expected an object, got an array" },
	/* hedging, the budget, the batch class, the latency budget */
	{ "{" P_OK "," M_OK ",\"hedge\":{\"max\":4}}",
	  ": hedge.max: expected a whole number from 1 to 3, got 4" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"min_after_ms\":200,\"max_after_ms\":100}}",
	  ": hedge.max_after_ms: expected at least min_after_ms (200), got 100" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"min_after_ms\":2000}}",
	  ": hedge.max_after_ms: expected at least min_after_ms (2000), got 1000" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"delay_ms\":100}}", ": hedge.delay_ms: unknown key" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"percentile\":100}}",
	  ": hedge.percentile: expected a number from 50 to 99.9, got 100" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"after_ms\":0}}",
	  ": hedge.after_ms: expected a number from 1 to 600000, got 0" },
	{ "{" P_OK "," M_OK ",\"hedge\":{\"min_samples\":257}}",
	  ": hedge.min_samples: expected a whole number from 1 to 256, got 257" },
	{ "{" P_OK "," M_OK ",\"hedge\":true}", ": hedge: expected an object, got true" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"hedge\":{\"max\":4}}}}", ": models.chat.hedge.max: expected a whole number from 1 to 3" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"hedge\":{\"max_after_ms\":5}}}}",
	  ": models.chat.hedge.max_after_ms: expected at least min_after_ms (10), got 5" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"hedge\":{\"extra\":1}}}}", ": models.chat.hedge.extra: unknown key" },
	{ "{" P_OK "," M_OK ",\"budget\":{\"ratio\":-1}}",
	  ": budget.ratio: expected a number from 0 to 10, got -1" },
	{ "{" P_OK "," M_OK ",\"budget\":{\"burst\":0}}",
	  ": budget.burst: expected a number from 1 to 1000000, got 0" },
	{ "{" P_OK "," M_OK ",\"budget\":{\"tokens\":5}}", ": budget.tokens: unknown key" },
	{ "{" P_OK ",\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
	  "\"budget\":{\"min_per_second\":-1}}}}",
	  ": models.chat.budget.min_per_second: expected a number from 0 to 100000, got -1" },
	{ "{" P_OK "," M_OK ",\"classes\":{\"other\":{}}}", ": classes.other: unknown key" },
	{ "{" P_OK "," M_OK ",\"classes\":{\"batch\":{\"concurrency\":0}}}",
	  ": classes.batch.concurrency: expected a whole number from 1 to 10000, got 0" },
	{ "{" P_OK "," M_OK ",\"classes\":{\"batch\":{\"queue_max\":-1}}}",
	  ": classes.batch.queue_max: expected a whole number from 0 to 1000000, got -1" },
	{ "{" P_OK "," M_OK ",\"classes\":{\"batch\":{\"max_wait_ms\":0}}}",
	  ": classes.batch.max_wait_ms: expected a number from 1 to 3600000, got 0" },
	{ "{" P_OK "," M_OK ",\"classes\":{\"batch\":{\"size\":1}}}",
	  ": classes.batch.size: unknown key" },
	{ "{" P_OK "," M_OK ",\"classes\":[]}", ": classes: expected an object, got an array" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"latency_percentile\":40}}",
	  ": breaker.latency_percentile: expected a number from 50 to 99.9, got 40" },
	{ "{" P_OK "," M_OK ",\"breaker\":{\"latency_budget_ms\":-1}}",
	  ": breaker.latency_budget_ms: expected a number from 0 to 3600000, got -1" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"breaker\":{\"latency_percentile\":99.95}}}," M_OK "}",
	  ": providers.p.breaker.latency_percentile: expected a number from 50 to 99.9" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"health_check\":{\"interval_ms\":0}}}," M_OK "}",
	  ": providers.p.health_check.interval_ms: expected a number from 1 to 3600000, got 0" },
	{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
	  "\"health_check\":{\"unhealthy_interval_ms\":0.5}}}," M_OK "}",
	  ": providers.p.health_check.unhealthy_interval_ms: expected a number from 1 to 3600000" },
};

Test(gwconfig, health_check_defaults_and_off_when_absent, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load("{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
			  "\"health_check\":{\"request\":\"completion\"}},"
			  "\"q\":{\"base_url\":\"http://127.0.0.1:9002/v1\"}}," M_OK "}", &c), 0,
		     "%s", err);
	cr_assert(c.providers[0].health.enabled);
	cr_assert_eq(c.providers[0].health.interval_ms, 5000);
	cr_assert_eq(c.providers[0].health.unhealthy_interval_ms, 1000);
	cr_assert_eq(c.providers[0].health.timeout_ms, 1000);
	cr_assert_eq(c.providers[0].health.fall, 2);
	cr_assert_eq(c.providers[0].health.rise, 2);
	cr_assert_eq(c.providers[0].health.request, HEALTH_COMPLETION);
	cr_assert_not(c.providers[1].health.enabled, "on without a health_check");
	gw_config_free(&c);
}

Test(gwconfig, bad_configs, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct gw_config c;

		cr_assert_eq(load(bc->json, &c), -EINVAL, "accepted: %s", bc->json);
		cr_assert(strncmp(err, file, strlen(file)) == 0, "names the file: %s", err);
		cr_assert(strstr(err, bc->says), "expected \"%s\" in \"%s\"", bc->says, err);
		cr_assert_null(c.providers, "nothing kept after a refusal");
		cr_assert_null(c.aliases);
	}
}

Test(gwconfig, not_json_names_the_file, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load("{\"providers\":", &c), -EINVAL);
	cr_assert(strstr(err, file), "%s", err);
}

/* ---- the router over a config ---- */

static const char two_aliases[] =
	"{\"providers\":{\"a\":{\"base_url\":\"http://127.0.0.1:9001\"},"
	"              \"b\":{\"base_url\":\"http://127.0.0.1:9002\"}},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"m\"},"
	"                                  {\"provider\":\"b\",\"model\":\"m\"}]},"
	"            \"fast\":{\"targets\":[{\"provider\":\"b\",\"model\":\"m\"},"
	"                                  {\"provider\":\"a\",\"model\":\"other\"}]}}}";

Test(gwrouter, aliases_share_targets, .timeout = 10)
{
	struct gw_config c;
	struct router r;
	struct gw_route *chat;
	struct gw_route *fast;

	cr_assert_eq(load(two_aliases, &c), 0, "%s", err);
	cr_assert_eq(router_init(&r, &c, 0), 0);
	cr_assert_eq(r.ntargets, 3, "a/m, b/m, a/other");
	chat = router_find(&r, "chat");
	fast = router_find(&r, "fast");
	cr_assert_not_null(chat);
	cr_assert_not_null(fast);
	cr_assert_null(router_find(&r, "nope"));
	cr_assert_eq(chat->targets[1], fast->targets[0], "b/m is one target, one breaker");
	cr_assert_neq(chat->targets[0], fast->targets[1], "a/m and a/other are two");
	cr_assert_str_eq(fast->targets[1]->model, "other");
	cr_assert_eq(chat->targets[0]->br.state, BREAKER_CLOSED);
	router_free(&r);
	gw_config_free(&c);
}

Test(gwrouter, provider_filter, .timeout = 10)
{
	struct gw_config c;
	struct router r;
	struct gw_route *chat;

	cr_assert_eq(load(two_aliases, &c), 0, "%s", err);
	cr_assert_eq(router_init(&r, &c, 0), 0);
	chat = router_find(&r, "chat");
	cr_assert(router_route_allows(chat, NULL));
	cr_assert(router_route_allows(chat, &(struct target_filter){ "b", false }));
	cr_assert_not(router_route_allows(chat, &(struct target_filter){ "c", false }));
	cr_assert(router_target_allowed(chat->targets[0], &(struct target_filter){ "a", false }));
	cr_assert_not(router_target_allowed(chat->targets[0], &(struct target_filter){ "b", false }));
	/* No Anthropic target here: no_anthropic leaves every one allowed. */
	cr_assert(router_target_allowed(chat->targets[1], &(struct target_filter){ NULL, true }));
	router_free(&r);
	gw_config_free(&c);
}

/* A request that cannot be translated may use every target but an Anthropic provider's. */
Test(gwrouter, no_anthropic_filter, .timeout = 10)
{
	static const char cfg[] =
		"{\"providers\":{\"a\":{\"base_url\":\"http://127.0.0.1:9001\"},"
		"\"claude\":{\"base_url\":\"http://127.0.0.1:9002/v1\",\"dialect\":\"anthropic\"}},"
		"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"m\"},"
		"{\"provider\":\"claude\",\"model\":\"c\"}]},"
		"\"claude\":{\"targets\":[{\"provider\":\"claude\",\"model\":\"c\"}]}}}";
	const struct target_filter plain = { NULL, true };
	const struct target_filter pinned = { "claude", true };
	struct gw_config c;
	struct router r;
	struct gw_route *chat;
	size_t at = 99;

	cr_assert_eq(load(cfg, &c), 0, "%s", err);
	cr_assert_str_eq(c.providers[1].chat_url, "http://127.0.0.1:9002/v1/messages");
	cr_assert_eq(router_init(&r, &c, 0), 0);
	chat = router_find(&r, "chat");
	cr_assert(router_target_allowed(chat->targets[0], &plain));
	cr_assert_not(router_target_allowed(chat->targets[1], &plain));
	cr_assert(router_route_allows(chat, &plain));
	cr_assert_not(router_route_allows(chat, &pinned), "pinned to the one left out");
	cr_assert_not(router_route_allows(router_find(&r, "claude"), &plain));
	breaker_record(&chat->targets[0]->br, 100, false, 1, 0, NULL, NULL);
	cr_assert_eq(router_least_recently_failed(chat, &plain, NULL, 0, &at), chat->targets[0],
		     "the Anthropic target never failed, but is left out");
	router_free(&r);
	gw_config_free(&c);
}

Test(gwrouter, least_recently_failed, .timeout = 10)
{
	struct gw_config c;
	struct router r;
	struct gw_route *chat;
	struct gw_target *a;
	struct gw_target *b;
	struct provider_stats *ps;
	size_t at = 99;

	cr_assert_eq(load(two_aliases, &c), 0, "%s", err);
	cr_assert_eq(router_init(&r, &c, 0), 0);
	chat = router_find(&r, "chat");
	a = chat->targets[0];
	b = chat->targets[1];
	cr_assert_eq(router_least_recently_failed(chat, NULL, NULL, 0, &at), a, "no failures: the first");
	breaker_record(&a->br, 100, false, 1, 0, NULL, NULL);
	cr_assert_eq(router_least_recently_failed(chat, NULL, NULL, 0, &at), b, "b never failed");
	breaker_record(&b->br, 200, false, 1, 0, NULL, NULL);
	cr_assert_eq(router_least_recently_failed(chat, NULL, NULL, 0, &at), a, "a failed longer ago");
	breaker_record(&a->br, 300, false, 1, 0, NULL, NULL);
	cr_assert_eq(router_least_recently_failed(chat, NULL, NULL, 0, &at), b);
	cr_assert_eq(router_least_recently_failed(chat, &(struct target_filter){ "a", false }, NULL, 0,
						  &at), a, "the filter holds");
	cr_assert_null(router_least_recently_failed(chat, &(struct target_filter){ "c", false }, NULL,
						    0, &at));
	/* A provider its health checks call down is not tried; with none left, none. */
	ps = calloc(c.nproviders, sizeof(*ps));
	cr_assert_not_null(ps);
	cr_assert_eq(router_least_recently_failed(chat, NULL, ps, 0, &at), b);
	cr_assert_eq(at, 1);
	cr_assert_eq(router_least_recently_failed(chat, NULL, ps, 1u << 1, &at), a,
		     "b tried already: a");
	cr_assert_eq(at, 0);
	cr_assert_null(router_least_recently_failed(chat, NULL, ps, 3, &at), "both tried");
	/* Down by health checks that refused: cheap to try; that timed out: not tried. */
	ps[b->provider].unhealthy = true;
	cr_assert_eq(router_least_recently_failed(chat, NULL, ps, 0, &at), b);
	ps[b->provider].check_slow = true;
	cr_assert_eq(router_least_recently_failed(chat, NULL, ps, 0, &at), a, "b hangs");
	a->failed_slow = true;
	cr_assert_null(router_least_recently_failed(chat, NULL, ps, 0, &at),
		       "a's last failure timed out");
	free(ps);
	router_free(&r);
	gw_config_free(&c);
}

/* ---- hedging, the budget, the batch class, the latency budget ---- */

/* Asserts h is the README's hedge defaults but for enabled. */
static void assert_hedge_defaults(const struct gw_hedge *h)
{
	cr_assert(isnan(h->after_ms), "after_ms %g", h->after_ms);
	cr_assert_float_eq(h->percentile, 95, 0);
	cr_assert_float_eq(h->min_after_ms, 10, 0);
	cr_assert_float_eq(h->max_after_ms, 1000, 0);
	cr_assert_eq(h->min_samples, 20);
	cr_assert_eq(h->max, 1);
}

Test(gwconfig, hedge_budget_batch_defaults, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load(MINIMAL, &c), 0, "%s", err);
	cr_assert_not(c.aliases[0].hedge.enabled, "hedging on without a hedge object");
	assert_hedge_defaults(&c.aliases[0].hedge);
	cr_assert_float_eq(c.aliases[0].budget.ratio, 0.2, 0);
	cr_assert_float_eq(c.aliases[0].budget.min_per_second, 1, 0);
	cr_assert_float_eq(c.aliases[0].budget.burst, 10, 0);
	cr_assert_eq(c.batch.queue_max, 1000);
	cr_assert_float_eq(c.batch.max_wait_ms, 60000, 0);
	cr_assert_eq(c.batch.concurrency, 4);
	cr_assert_float_eq(c.breaker.latency_budget_ms, 0, 0);
	cr_assert_float_eq(c.breaker.latency_percentile, 95, 0);
	gw_config_free(&c);

	/* An empty classes object, and an empty batch one, are the defaults too. */
	cr_assert_eq(load("{" P_OK "," M_OK ",\"classes\":{}}", &c), 0, "%s", err);
	cr_assert_eq(c.batch.queue_max, 1000);
	cr_assert_eq(c.batch.concurrency, 4);
	gw_config_free(&c);
	cr_assert_eq(load("{" P_OK "," M_OK ",\"classes\":{\"batch\":{}}}", &c), 0, "%s", err);
	cr_assert_float_eq(c.batch.max_wait_ms, 60000, 0);
	gw_config_free(&c);
}

/* Given the object, at the alias or at the top, hedging is on with the defaults. */
Test(gwconfig, hedge_given_is_on, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load("{" P_OK ",\"models\":{"
			  "\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],\"hedge\":{}},"
			  "\"other\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}", &c), 0,
		     "%s", err);
	cr_assert(c.aliases[0].hedge.enabled, "an alias's empty hedge object is on");
	assert_hedge_defaults(&c.aliases[0].hedge);
	cr_assert_not(c.aliases[1].hedge.enabled, "the alias without one is off");
	gw_config_free(&c);

	cr_assert_eq(load("{" P_OK "," M_OK ",\"hedge\":{}}", &c), 0, "%s", err);
	cr_assert(c.aliases[0].hedge.enabled, "a top-level empty hedge object is on");
	assert_hedge_defaults(&c.aliases[0].hedge);
	gw_config_free(&c);

	cr_assert_eq(load("{" P_OK "," M_OK ",\"hedge\":{\"enabled\":false}}", &c), 0, "%s", err);
	cr_assert_not(c.aliases[0].hedge.enabled, "enabled false at the top");
	gw_config_free(&c);
}

/*
 * An alias's hedge keys override the top level's one by one; its
 * {"enabled": false} turns off a top-level hedge; a top-level
 * {"enabled": false} is turned on again by an alias's own hedge object.
 */
Test(gwconfig, hedge_inheritance, .timeout = 10)
{
	static const char json[] =
		"{" P_OK ","
		"\"hedge\":{\"percentile\":90,\"min_after_ms\":20,\"max_after_ms\":500,"
		"          \"min_samples\":50,\"max\":2},"
		"\"models\":{"
		" \"a\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]},"
		" \"b\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
		"       \"hedge\":{\"max\":3,\"after_ms\":150}},"
		" \"c\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
		"       \"hedge\":{\"enabled\":false}},"
		" \"d\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
		"       \"hedge\":{\"max_after_ms\":30}}}}";
	struct gw_config c;
	const struct gw_hedge *h;

	cr_assert_eq(load(json, &c), 0, "%s", err);
	h = &c.aliases[0].hedge;
	cr_assert(h->enabled, "a: the top level's");
	cr_assert(isnan(h->after_ms));
	cr_assert_float_eq(h->percentile, 90, 0);
	cr_assert_float_eq(h->min_after_ms, 20, 0);
	cr_assert_float_eq(h->max_after_ms, 500, 0);
	cr_assert_eq(h->min_samples, 50);
	cr_assert_eq(h->max, 2);
	h = &c.aliases[1].hedge;
	cr_assert(h->enabled);
	cr_assert_float_eq(h->after_ms, 150, 0, "b's own");
	cr_assert_eq(h->max, 3, "b's own");
	cr_assert_float_eq(h->percentile, 90, 0, "inherited");
	cr_assert_float_eq(h->min_after_ms, 20, 0, "inherited");
	cr_assert_float_eq(h->max_after_ms, 500, 0, "inherited");
	cr_assert_eq(h->min_samples, 50, "inherited");
	cr_assert_not(c.aliases[2].hedge.enabled, "c turned it off");
	h = &c.aliases[3].hedge;
	cr_assert(h->enabled);
	cr_assert_float_eq(h->max_after_ms, 30, 0);
	cr_assert_float_eq(h->min_after_ms, 20, 0, "checked against the inherited minimum");
	gw_config_free(&c);

	cr_assert_eq(load("{" P_OK ",\"hedge\":{\"enabled\":false,\"max\":2},"
			  "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
			  "\"hedge\":{\"percentile\":99}}}}", &c), 0, "%s", err);
	cr_assert(c.aliases[0].hedge.enabled, "the alias's own object turns it on");
	cr_assert_eq(c.aliases[0].hedge.max, 2, "inherited from the disabled top level");
	cr_assert_float_eq(c.aliases[0].hedge.percentile, 99, 0);
	gw_config_free(&c);
}

Test(gwconfig, budget_inheritance, .timeout = 10)
{
	static const char json[] =
		"{" P_OK ",\"budget\":{\"ratio\":0.5,\"burst\":40},"
		"\"models\":{"
		" \"a\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]},"
		" \"b\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}],"
		"       \"budget\":{\"min_per_second\":0,\"ratio\":0}}}}";
	struct gw_config c;

	cr_assert_eq(load(json, &c), 0, "%s", err);
	cr_assert_float_eq(c.aliases[0].budget.ratio, 0.5, 0);
	cr_assert_float_eq(c.aliases[0].budget.min_per_second, 1, 0, "the default");
	cr_assert_float_eq(c.aliases[0].budget.burst, 40, 0);
	cr_assert_float_eq(c.aliases[1].budget.ratio, 0, 0, "b's own");
	cr_assert_float_eq(c.aliases[1].budget.min_per_second, 0, 0, "b's own");
	cr_assert_float_eq(c.aliases[1].budget.burst, 40, 0, "inherited");
	gw_config_free(&c);
}

Test(gwconfig, batch_class_and_latency_budget_given, .timeout = 10)
{
	static const char json[] =
		"{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
		"                     \"breaker\":{\"latency_percentile\":99}},"
		"              \"q\":{\"base_url\":\"http://127.0.0.1:9002/v1\"}}," M_OK ","
		"\"classes\":{\"batch\":{\"queue_max\":0,\"max_wait_ms\":2500,\"concurrency\":16}},"
		"\"breaker\":{\"latency_budget_ms\":800,\"latency_percentile\":90}}";
	struct gw_config c;

	cr_assert_eq(load(json, &c), 0, "%s", err);
	cr_assert_eq(c.batch.queue_max, 0);
	cr_assert_float_eq(c.batch.max_wait_ms, 2500, 0);
	cr_assert_eq(c.batch.concurrency, 16);
	cr_assert_float_eq(c.breaker.latency_budget_ms, 800, 0);
	cr_assert_float_eq(c.breaker.latency_percentile, 90, 0);
	cr_assert_float_eq(c.providers[0].breaker.latency_budget_ms, 800, 0, "inherited");
	cr_assert_float_eq(c.providers[0].breaker.latency_percentile, 99, 0, "p's own");
	cr_assert_float_eq(c.providers[1].breaker.latency_budget_ms, 800, 0);
	cr_assert_float_eq(c.providers[1].breaker.latency_percentile, 90, 0);
	gw_config_free(&c);
}

/* The health check's intervals go down to 1 ms now; 0 is still refused (bad_configs). */
Test(gwconfig, health_check_interval_of_1_ms, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load("{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
			  "\"health_check\":{\"interval_ms\":1,\"unhealthy_interval_ms\":1}}},"
			  M_OK "}", &c), 0, "%s", err);
	cr_assert_float_eq(c.providers[0].health.interval_ms, 1, 0);
	cr_assert_float_eq(c.providers[0].health.unhealthy_interval_ms, 1, 0);
	gw_config_free(&c);
}

/* ---- client keys (auth) and the listen address ---- */

#define CK1 "ck-first-0123456789abcdef"
#define CK2 "ck-second-0123456789abcdef"

/* The variables the auth cases read (each test runs in a process of its own). */
static void set_key_env(void)
{
	cr_assert_eq(setenv("FL_GWCFG_CK1", CK1, 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_CK2", CK2, 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_EMPTY", "", 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_SHORT", "ck-15-bytes-abc", 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_SPACE", "ck-with a-space-0123456789", 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_CTRL", "ck-with-a-tab\t0123456789", 1), 0);
	cr_assert_eq(unsetenv("FL_GWCFG_UNSET"), 0);
}

#define AUTH(list) "{" P_OK "," M_OK ",\"auth\":" list "}"

/* auth.keys_env: each variable's value is a client key, kept in order. */
Test(gwconfig, auth_keys_read_from_the_environment, .timeout = 10)
{
	struct gw_config c;

	set_key_env();
	cr_assert_eq(load(AUTH("{\"keys_env\":[\"FL_GWCFG_CK1\",\"FL_GWCFG_CK2\"]}"), &c), 0, "%s",
		     err);
	cr_assert_eq(c.auth.nkeys, 2);
	cr_assert_str_eq(c.auth.keys[0], CK1);
	cr_assert_eq(c.auth.lens[0], strlen(CK1));
	cr_assert_str_eq(c.auth.keys[1], CK2);
	cr_assert_eq(c.auth.lens[1], strlen(CK2));
	gw_config_free(&c);
	cr_assert_eq(c.auth.nkeys, 0);
	cr_assert_null(c.auth.keys);

	cr_assert_eq(load(MINIMAL, &c), 0, "%s", err);
	cr_assert_eq(c.auth.nkeys, 0, "client keys without an auth section");
	gw_config_free(&c);
}

/* The bounds: keys of 16 and 1024 bytes, 32 variables; one more byte or variable is refused. */
Test(gwconfig, auth_bounds, .timeout = 10)
{
	static char long_key[GW_CLIENT_KEY_MAX + 2];
	static char json[4096];
	struct gw_config c;
	char name[32];
	size_t used;
	int i;

	memset(long_key, 'k', GW_CLIENT_KEY_MAX);
	cr_assert_eq(setenv("FL_GWCFG_MIN", "ck-16-bytes-abcd", 1), 0);
	cr_assert_eq(setenv("FL_GWCFG_MAX", long_key, 1), 0);
	cr_assert_eq(load(AUTH("{\"keys_env\":[\"FL_GWCFG_MIN\",\"FL_GWCFG_MAX\"]}"), &c), 0, "%s",
		     err);
	cr_assert_eq(c.auth.lens[0], GW_CLIENT_KEY_MIN);
	cr_assert_eq(c.auth.lens[1], GW_CLIENT_KEY_MAX);
	gw_config_free(&c);
	long_key[GW_CLIENT_KEY_MAX] = 'k';
	cr_assert_eq(setenv("FL_GWCFG_MAX", long_key, 1), 0);
	cr_assert_eq(load(AUTH("{\"keys_env\":[\"FL_GWCFG_MAX\"]}"), &c), -EINVAL);
	cr_assert(strstr(err, ": auth.keys_env[0]: expected a client key of 16 to 1024 bytes in "
			 "FL_GWCFG_MAX, got more"), "%s", err);

	for (i = 0; i <= GW_MAX_CLIENT_KEYS; i++) {
		snprintf(name, sizeof(name), "FL_GWCFG_K%d", i);
		cr_assert_eq(setenv(name, "ck-many-0123456789", 1), 0);
	}
	for (i = GW_MAX_CLIENT_KEYS; i <= GW_MAX_CLIENT_KEYS + 1; i++) {
		int k;

		used = (size_t)snprintf(json, sizeof(json), "{" P_OK "," M_OK ",\"auth\":{\"keys_env\":[");
		for (k = 0; k < i; k++)
			used += (size_t)snprintf(json + used, sizeof(json) - used, "%s\"FL_GWCFG_K%d\"",
						 k ? "," : "", k);
		snprintf(json + used, sizeof(json) - used, "]}}");
		if (i == GW_MAX_CLIENT_KEYS) {
			cr_assert_eq(load(json, &c), 0, "%d variables: %s", i, err);
			cr_assert_eq(c.auth.nkeys, (size_t)i);
			gw_config_free(&c);
		} else {
			cr_assert_eq(load(json, &c), -EINVAL, "%d variables accepted", i);
			cr_assert(strstr(err, ": auth.keys_env: expected an array of 1 to 32 "
					 "environment variable names, got 33 of them"), "%s", err);
		}
	}
}

/* An auth section that must be refused, and what the message must say. */
static const struct bad_case bad_auth_cases[] = {
	{ AUTH("[\"FL_GWCFG_CK1\"]"), ": auth: expected an object, got an array" },
	{ AUTH("{}"), ": auth.keys_env: missing (required)" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_CK1\"],\"keys\":[]}"), ": auth.keys: unknown key" },
	{ AUTH("{\"keys_env\":\"FL_GWCFG_CK1\"}"),
	  ": auth.keys_env: expected an array of 1 to 32 environment variable names, got the "
	  "string \"FL_GWCFG_CK1\"" },
	{ AUTH("{\"keys_env\":[]}"),
	  ": auth.keys_env: expected an array of 1 to 32 environment variable names, got 0 of "
	  "them" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_CK1\",7]}"),
	  ": auth.keys_env[1]: expected an environment variable's name" },
	{ AUTH("{\"keys_env\":[\"1FL\"]}"), ": auth.keys_env[0]: expected an environment variable's name" },
	{ AUTH("{\"keys_env\":[\"FL-GW\"]}"), ": auth.keys_env[0]: expected an environment variable's name" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_CK1\",\"FL_GWCFG_UNSET\"]}"),
	  ": auth.keys_env[1]: expected the name of a set environment variable holding a client "
	  "key, but FL_GWCFG_UNSET is not set" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_EMPTY\"]}"),
	  ": auth.keys_env[0]: expected the name of a set environment variable holding a client "
	  "key, but FL_GWCFG_EMPTY is empty" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_SHORT\"]}"),
	  ": auth.keys_env[0]: expected a client key of 16 to 1024 bytes in FL_GWCFG_SHORT, got "
	  "fewer" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_SPACE\"]}"),
	  ": auth.keys_env[0]: expected a client key of printable ASCII without spaces in "
	  "FL_GWCFG_SPACE" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_CTRL\"]}"),
	  ": auth.keys_env[0]: expected a client key of printable ASCII without spaces in "
	  "FL_GWCFG_CTRL" },
	{ AUTH("{\"keys_env\":[\"FL_GWCFG_CK1\",\"FL_GWCFG_CK2\",\"FL_GWCFG_CK1\"]}"),
	  ": auth.keys_env[2]: expected each variable once, but FL_GWCFG_CK1 is also "
	  "auth.keys_env[0]" },
};

/* Each bad auth section is refused naming the file and key path, and never a key's value. */
Test(gwconfig, bad_auth_configs, .timeout = 10)
{
	static const char *const values[] = { CK1, CK2, "ck-15-bytes-abc", "a-space-0123456789",
					      "0123456789" };
	size_t i;
	size_t j;

	set_key_env();
	for (i = 0; i < sizeof(bad_auth_cases) / sizeof(bad_auth_cases[0]); i++) {
		const struct bad_case *bc = &bad_auth_cases[i];
		struct gw_config c;

		cr_assert_eq(load(bc->json, &c), -EINVAL, "accepted: %s", bc->json);
		cr_assert(strncmp(err, file, strlen(file)) == 0, "names the file: %s", err);
		cr_assert(strstr(err, bc->says), "expected \"%s\" in \"%s\"", bc->says, err);
		for (j = 0; j < sizeof(values) / sizeof(values[0]); j++)
			cr_assert_null(strstr(err, values[j]), "a key's value in \"%s\"", err);
		cr_assert_null(c.auth.keys, "nothing kept after a refusal");
		cr_assert_eq(c.auth.nkeys, 0);
	}
}

/* Loads json (asserted) and checks listen (the config's, or flag's value addr). */
static int check_listen(const char *json, const char *addr, const char *flag, bool allow_remote)
{
	struct sockaddr_storage ss;
	struct gw_config c;
	char path[sizeof(file)];
	int rc;

	cr_assert_eq(load_opts(json, allow_remote, &c), 0, "%s", err);
	snprintf(path, sizeof(path), "%s", file);
	ss = c.listen;
	if (addr)
		cr_assert_eq(opt_parse_hostport(addr, &ss), 0, "%s", addr);
	err[0] = '\0';
	rc = gw_config_check_listen(&c, &ss, flag, allow_remote, path, err);
	gw_config_free(&c);
	return rc;
}

#define LISTEN(addr) "{\"listen\":\"" addr "\"," P_OK "," M_OK "}"
#define LISTEN_AUTH(addr) \
	"{\"listen\":\"" addr "\"," P_OK "," M_OK ",\"auth\":{\"keys_env\":[\"FL_GWCFG_CK1\"]}}"

/*
 * A loopback listen needs nothing; any other needs --allow-remote, then
 * client keys: the message names the file and key (or the flag), and says
 * why.
 */
Test(gwconfig, remote_listen_needs_allow_remote_and_keys, .timeout = 10)
{
	static const char *const loopback[] = { "127.0.0.1:0", "127.1.2.3:80", "[::1]:0",
						"localhost:0" };
	size_t i;

	set_key_env();
	for (i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		cr_assert_eq(check_listen(LISTEN("127.0.0.1:0"), loopback[i], "--listen", false), 0,
			     "%s: %s", loopback[i], err);
		cr_assert_eq(check_listen(MINIMAL, loopback[i], NULL, false), 0, "%s: %s",
			     loopback[i], err);
	}
	cr_assert_eq(check_listen(LISTEN_AUTH("127.0.0.1:0"), NULL, NULL, false), 0, "%s", err);

	/* The config's listen: FILE: listen. */
	cr_assert_eq(check_listen(LISTEN("0.0.0.0:8080"), NULL, NULL, false), -EINVAL);
	cr_assert(strncmp(err, file, strlen(file)) == 0, "names the file: %s", err);
	cr_assert(strstr(err, ": listen: expected a loopback address (127.0.0.0/8 or ::1) without "
			 "--allow-remote, got \"0.0.0.0:8080\": anyone who can reach it would "
			 "spend the providers' keys"), "%s", err);
	cr_assert_eq(check_listen(LISTEN_AUTH("10.1.2.3:8080"), NULL, NULL, false), -EINVAL,
		     "client keys alone do not allow a remote listen");
	cr_assert(strstr(err, ": listen: expected a loopback address"), "%s", err);
	/* IPv4-mapped loopback is not taken as loopback: the safe side. */
	cr_assert_eq(check_listen(LISTEN("[::ffff:127.0.0.1]:80"), NULL, NULL, false), -EINVAL);

	/* --listen: the flag, and a config listen it replaces does not count. */
	cr_assert_eq(check_listen(LISTEN("127.0.0.1:0"), "[::]:0", "--listen", false), -EINVAL);
	cr_assert(strncmp(err, "--listen: expected a loopback address (127.0.0.0/8 or ::1) "
			  "without --allow-remote, got \"[::]:0\"", 56) == 0, "%s", err);
	cr_assert(strstr(err, "--allow-remote and client keys in auth.keys_env"), "%s", err);
	cr_assert_eq(check_listen(LISTEN("0.0.0.0:8080"), "127.0.0.1:0", "--listen", false), 0,
		     "%s", err);

	/* --allow-remote without client keys: FILE: auth.keys_env. */
	cr_assert_eq(check_listen(LISTEN("0.0.0.0:8080"), NULL, NULL, true), -EINVAL);
	cr_assert(strncmp(err, file, strlen(file)) == 0, "names the file: %s", err);
	cr_assert(strstr(err, ": auth.keys_env: missing (required to serve on 0.0.0.0:8080, from "
			 "listen, which is not loopback"), "%s", err);
	cr_assert_eq(check_listen(MINIMAL, "0.0.0.0:0", "--listen", true), -EINVAL);
	cr_assert(strstr(err, ": auth.keys_env: missing (required to serve on 0.0.0.0:0, from "
			 "--listen"), "%s", err);

	/* Both: it may serve there. */
	cr_assert_eq(check_listen(LISTEN_AUTH("0.0.0.0:8080"), NULL, NULL, true), 0, "%s", err);
	cr_assert_eq(check_listen(LISTEN_AUTH("127.0.0.1:0"), "[::]:0", "--listen", true), 0, "%s",
		     err);
}

/*
 * gw_config_check_json checks a config without reading the environment
 * (a scenario reloaded to report or gate results made elsewhere): unset
 * key variables pass, a malformed name or an unknown key still does not;
 * gw_config_from_json refuses the same unset variables.
 */
Test(gwconfig, check_json_needs_no_environment, .timeout = 10)
{
	static const char unset[] =
		"{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\","
		"\"api_key_env\":\"FL_GWCFG_SURELY_UNSET_API\"}}," M_OK ","
		"\"auth\":{\"keys_env\":[\"FL_GWCFG_SURELY_UNSET_CK\"]}}";
	static const char bad_name[] =
		"{" P_OK "," M_OK ",\"auth\":{\"keys_env\":[\"1FL\"]}}";
	static const char bad_key[] = "{" P_OK "," M_OK ",\"colour\":1}";
	struct gw_config cfg;
	cJSON *root;

	unsetenv("FL_GWCFG_SURELY_UNSET_API");
	unsetenv("FL_GWCFG_SURELY_UNSET_CK");
	root = cJSON_Parse(unset);
	cr_assert_not_null(root);
	cr_assert_eq(gw_config_check_json(root, "s.json", err), 0, "%s", err);
	cr_assert_eq(gw_config_from_json(root, "s.json", false, &cfg, err), -EINVAL);
	cr_assert(strstr(err, "FL_GWCFG_SURELY_UNSET_"), "%s", err);
	cJSON_Delete(root);

	root = cJSON_Parse(bad_name);
	cr_assert_not_null(root);
	cr_assert_eq(gw_config_check_json(root, "s.json", err), -EINVAL);
	cr_assert(strstr(err, "s.json: auth.keys_env[0]: expected an environment variable's name"),
		  "%s", err);
	cJSON_Delete(root);

	root = cJSON_Parse(bad_key);
	cr_assert_not_null(root);
	cr_assert_eq(gw_config_check_json(root, "s.json", err), -EINVAL);
	cr_assert(strstr(err, "s.json: colour: unknown key"), "%s", err);
	cJSON_Delete(root);
}
