/*
 * peers_table: two stamps of one scenario (faultline's setups in one, a
 * peer's in the other) make one table, figures read as summary.json
 * holds them (each a figure's mean), a figure a summary lacks printed as
 * a dash, a phase with streams gets the second table with what the
 * client got, and a stamp without a summary is refused with exit 2.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/peers_table.h"
#include "tests/support/tmpdir.h"

static char dir[256];

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "peers-table"), 0);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

/* A stamp folder NAME under dir with its summary.json and scenario.json. */
static void stamp(const char *name, const char *summary, const char *scenario)
{
	char sub[512];

	cr_assert_eq(tmpdir_mkdir(dir, name), 0);
	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	cr_assert_eq(tmpdir_write(sub, "summary.json", summary, strlen(summary)), 0);
	cr_assert_eq(tmpdir_write(sub, "scenario.json", scenario, strlen(scenario)), 0);
}

#define M(v) "{\"mean\":" #v "}"

static int table(const char *const *stamps, size_t n, char **text)
{
	char out[512];
	char paths[4][512];
	char *argv[16];
	int argc = 0;
	size_t i;
	int rc;

	snprintf(out, sizeof(out), "%s/peers.md", dir);
	argv[argc++] = "chaos";
	argv[argc++] = "peers-table";
	argv[argc++] = "--out";
	argv[argc++] = out;
	argv[argc++] = "--title";
	argv[argc++] = "Test";
	for (i = 0; i < n; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, stamps[i]);
		argv[argc++] = paths[i];
	}
	argv[argc] = NULL;
	rc = peers_table_main(argc, argv);
	*text = rc == 0 ? tmpdir_read(dir, "peers.md") : NULL;
	return rc;
}

Test(peers_table, two_stamps_of_one_scenario_make_one_table, .init = setup, .fini = teardown,
     .timeout = 10)
{
	static const char *const both[] = { "own", "peer" };
	char *text = NULL;

	stamp("own",
	      "{\"scenario\":\"outage-hang\",\"time_scale\":0.5,\"repeat\":1,\"setups\":{"
	      "\"breaker-on\":{\"primary\":\"primary\",\"phases\":{\"recovered\":{"
	      "\"requests\":" M(700) ",\"ok\":" M(700) ",\"answered_share\":" M(1) ","
	      "\"latency_ms\":{\"p50\":" M(101.2) ",\"p95\":" M(102.5) ",\"p99\":" M(104) "},"
	      "\"upstream_requests\":" M(707) ",\"primary_requests\":" M(690) ","
	      "\"fallback_share\":" M(0.014) ",\"stop_ms\":" M(31) ","
	      "\"upstream_source\":\"mock_log+gateway_attempts\"}}}}}",
	      "{\"name\":\"outage-hang\",\"setups\":[{\"name\":\"breaker-on\",\"kind\":\"gateway\"}]}");
	stamp("peer",
	      "{\"scenario\":\"outage-hang\",\"time_scale\":0.5,\"repeat\":1,\"setups\":{"
	      "\"haproxy\":{\"primary\":\"primary\",\"phases\":{\"recovered\":{"
	      "\"requests\":" M(698) ",\"ok\":" M(698) ",\"answered_share\":" M(1) ","
	      "\"latency_ms\":{\"p50\":" M(101.4) ",\"p95\":" M(102.2) ",\"p99\":" M(103) "},"
	      "\"fallback_share\":" M(0.153) ","
	      "\"streams\":" M(10) ",\"error_events\":" M(0) ",\"silent_breaks\":" M(10) ","
	      "\"stalls\":" M(0) ",\"truncations\":" M(10) "}}}}}",
	      "{\"name\":\"outage-hang\",\"setups\":[{\"name\":\"haproxy\",\"kind\":\"external\"}]}");
	cr_assert_eq(table(both, 2, &text), 0);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "# Test"), "%s", text);
	cr_assert_eq(strstr(strstr(text, "## outage-hang") + 1, "## outage-hang"), NULL,
		     "the two stamps of one scenario made two sections:\n%s", text);
	/* Ours: 707 upstream / 700 answers, 690 to the primary, 1.4% fallback, stopped at 31 ms. */
	cr_assert(strstr(text, "| recovered | breaker-on | gateway | 700 | 100.0% | 101.2 | 102.5 | "
			 "104.0 | 1.01 | 690 | 1.4% | 31 | mock_log+gateway_attempts |"), "%s", text);
	/* The peer's summary has no upstream, primary or stop figures: dashes, not zeros. */
	cr_assert(strstr(text, "| recovered | haproxy | external | 698 | 100.0% | 101.4 | 102.2 | "
			 "103.0 | — | — | 15.3% | — | — |"), "%s", text);
	cr_assert(strstr(text, "silent cut"), "the streams' table says what the client got:\n%s",
		  text);
	free(text);
}

Test(peers_table, a_folder_without_a_summary_is_refused, .init = setup, .fini = teardown,
     .timeout = 10)
{
	static const char *const none[] = { "empty" };
	char *text = NULL;

	cr_assert_eq(tmpdir_mkdir(dir, "empty"), 0);
	cr_assert_eq(table(none, 1, &text), 2);
}

/*
 * Streams that got an error status, or no connection, instead of a stream
 * are not "clean": the column says HTTP error and refused, the most
 * frequent first.
 */
Test(peers_table, streams_that_never_began_are_not_clean, .init = setup, .fini = teardown,
     .timeout = 10)
{
	static const char *const one[] = { "direct" };
	char *text = NULL;

	stamp("direct",
	      "{\"scenario\":\"outage-5xx\",\"time_scale\":0.5,\"repeat\":1,\"setups\":{"
	      "\"direct\":{\"primary\":\"primary\",\"phases\":{\"outage\":{"
	      "\"requests\":" M(100) ",\"ok\":" M(0) ",\"answered_share\":" M(0) ","
	      "\"streams\":" M(50) ",\"error_events\":" M(0) ",\"silent_breaks\":" M(0) ","
	      "\"stalls\":" M(0) ",\"truncations\":" M(0) ","
	      "\"outcomes\":{\"http_error\":" M(97) ",\"refused\":" M(2) ",\"reset\":" M(1) ","
	      "\"timeout\":" M(0) "}}}}}}",
	      "{\"name\":\"outage-5xx\",\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\"}]}");
	cr_assert_eq(table(one, 1, &text), 0);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "| HTTP error + refused |"), "%s", text);
	cr_assert_null(strstr(text, "clean"), "%s", text);
	free(text);
}
