/*
 * Correlated failure through bin/gateway (docs/mockprov.md: groups): two
 * providers that share a region go down together by their group's fault,
 * so a chain that stays in the region answers nothing, while a chain that
 * ends in another region answers every request — the failover that can
 * and cannot work, as a client sees it on loopback.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define FAST "'ttft_ms':10,'jitter_ms':0,'token_ms':0,'output_tokens':8"

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_group, .fini = teardown);

Test(gateway_group, a_region_down_takes_its_whole_chain_down, .timeout = 30)
{
	static const char *const provs[] = { "east-1", "east-2", "west-1", NULL };
	const struct csv_table *log;
	struct http_result *r;
	char rid[32];

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'east-1','listen':'127.0.0.1:0','group':'east'," FAST "},"
			       "{'name':'east-2','listen':'127.0.0.1:0','group':'east'," FAST "},"
			       "{'name':'west-1','listen':'127.0.0.1:0','group':'west'," FAST "}],"
			       "'groups':{'east':{'faults':[{'kind':'status','status':503,"
			       "'from_s':-1000,'to_s':1000}]}}}");
	gw_start_template(&gw, "{'breaker':{'enabled':false},'providers':{'east-1':{'base_url':'@east-1@'},"
			  "'east-2':{'base_url':'@east-2@'},'west-1':{'base_url':'@west-1@'}},"
			  "'models':{"
			  "'same':{'targets':[{'provider':'east-1','model':'mock-small'},"
			  "{'provider':'east-2','model':'mock-small'}]},"
			  "'cross':{'targets':[{'provider':'east-1','model':'mock-small'},"
			  "{'provider':'west-1','model':'mock-small'}]}}}",
			  &mock, NULL);
	for (int i = 0; i < 3; i++) {
		snprintf(rid, sizeof(rid), "same-%d", i);
		r = gw_chat_held(&gw, &held, "same", rid, NULL, 5000);
		gw_expect_error(&held, r, rid, 502, "bad_gateway", "upstream_error");
		snprintf(rid, sizeof(rid), "cross-%d", i);
		r = gw_chat_held(&gw, &held, "cross", rid, NULL, 5000);
		gw_expect_answer(r, rid, "west-1", 2);
	}
	gw_mock_settle(&mock, provs);
	/* Both members logged the group's fault; the other region none. */
	log = gw_mock_rows(&held, &mock, "east-2");
	cr_assert_eq(log->nrows - 1, 3, "east-2 logged %zu rows", log->nrows - 1);
	for (size_t i = 1; i < log->nrows; i++) {
		cr_assert_str_eq(csv_get(log, i, "fault"), "status");
		cr_assert_str_eq(csv_get(log, i, "status"), "503");
	}
	log = gw_mock_rows(&held, &mock, "east-1");
	cr_assert_eq(log->nrows - 1, 6, "east-1 logged %zu rows", log->nrows - 1);
	log = gw_mock_rows(&held, &mock, "west-1");
	cr_assert_eq(log->nrows - 1, 3, "west-1 logged %zu rows", log->nrows - 1);
	for (size_t i = 1; i < log->nrows; i++)
		cr_assert_str_eq(csv_get(log, i, "fault"), "");
}
