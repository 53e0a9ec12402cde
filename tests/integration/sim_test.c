/*
 * chaos sim end to end: a scenario's runs in virtual time, through bin/chaos
 * sim — what each request came to under a hang, a 503 window, a kill and a
 * restart, with loadgen's watchdog and a retrying client; the same files a
 * real run writes; byte-identical files for the same seed, others for
 * another.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/harness.h"
#include "tests/support/lgharness.h"

static char dir[256];
static char scenario[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(sim, .init = setup, .fini = lg_cleanup);

/*
 * 20 req/s for 4 s at a primary answering in 30 ms: it hangs in [1, 2),
 * answers 503 in [2, 2.5), is killed at 2.5 s and restarted at 3 s,
 * listening 120 ms later. loadgen's timeout is 300 ms; client_retry
 * retries twice. The model: 0.5 ms to reach a server, answers 2 ms late.
 */
static const char timeline[] =
	"{\"name\":\"timeline\",\"duration_s\":4,\"seed\":7,"
	"\"sim\":{\"latency_ms\":0.5,\"answer_ms\":2,\"restart_ms\":120},"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30,\"jitter_ms\":0,\"token_ms\":0,"
	"\"faults\":[{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2},"
	"{\"kind\":\"status\",\"status\":503,\"from_s\":2,\"to_s\":2.5}]}],"
	"\"actions\":[{\"at_s\":2.5,\"do\":\"kill\",\"provider\":\"primary\"},"
	"{\"at_s\":3,\"do\":\"restart\",\"provider\":\"primary\"}],"
	"\"load\":{\"rate\":20,\"arrival\":\"constant\",\"timeout_ms\":300},"
	"\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"},"
	"{\"name\":\"retry\",\"kind\":\"client_retry\",\"provider\":\"primary\",\"retries\":2,"
	"\"retry_backoff_ms\":50}]}";

/* The stamp directories under DIR/results/NAME, sorted, into out[0..max). */
static size_t stamps(const char *name, char out[][600], size_t max)
{
	char parent[500];
	struct dirent **list;
	size_t n = 0;
	int k;
	int i;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	k = scandir(parent, &list, NULL, alphasort);
	cr_assert_geq(k, 0, "no %s", parent);
	for (i = 0; i < k; i++) {
		if (list[i]->d_name[0] != '.' && n < max)
			snprintf(out[n++], 600, "%s/%.80s", parent, list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return n;
}

static void run_sim(const char *extra_flag, const char *extra_val)
{
	char out[600];
	char err[8192];
	int rc;

	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "sim", scenario, "--out", out, "--quiet",
				       extra_flag, extra_val, NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "chaos sim exited %d:\n%s", rc, err);
}

/* Whether two files have the same bytes. */
static bool same_file(const char *a, const char *b)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

Test(sim, what_each_request_came_to, .timeout = 60)
{
	char st[1][600];
	char path[900];
	struct csv_table t;
	size_t i;
	size_t n[5] = { 0 };

	write_file(dir, "timeline.json", timeline, scenario, sizeof(scenario));
	run_sim(NULL, NULL);
	cr_assert_eq(stamps("timeline", st, 1), 1);
	snprintf(path, sizeof(path), "%s/direct/run-1/requests.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.nrows - 1, 80, "%zu requests, not 20/s for 4 s", t.nrows - 1);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");
		const char *o = csv_get(&t, i, "outcome");

		if (sched < 960 || (sched >= 3150 && sched < 4000)) {
			cr_assert_str_eq(o, "ok", "request at %.0f ms: %s", sched, o);
			cr_assert_float_eq(lg_num(&t, i, "latency_ms"), 32.5, 1e-6,
					   "30 ms to answer, 2 ms late, and the network's 0.5 ms");
			n[0]++;
		} else if (sched >= 1000 && sched < 1700) {
			cr_assert_str_eq(o, "timeout", "request at %.0f ms: %s", sched, o);
			cr_assert_float_eq(lg_num(&t, i, "latency_ms"), 300, 1e-6);
			n[1]++;
		} else if (sched >= 2000 && sched < 2500) {
			cr_assert_str_eq(o, "http_error", "request at %.0f ms: %s", sched, o);
			cr_assert_eq(lg_num(&t, i, "status"), 503);
			n[2]++;
		} else if (sched >= 2500 && sched < 3100) {
			/* killed, then restarted but not listening until 3120 ms */
			cr_assert_str_eq(o, "refused", "request at %.0f ms: %s", sched, o);
			n[3]++;
		}
	}
	cr_assert_eq(n[0], 20 + 17);
	cr_assert_eq(n[1], 14);
	cr_assert_eq(n[2], 10);
	cr_assert_eq(n[3], 12);
	csv_free(&t);

	/* The mock's log: the hung requests were read and never answered. */
	snprintf(path, sizeof(path), "%s/direct/run-1/mock-primary.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(lg_count(&t, "fault", "hang"), 20);
	cr_assert_eq(lg_count(&t, "fault", "status"), 10);
	for (i = 1; i < t.nrows; i++) {
		if (strcmp(csv_get(&t, i, "fault"), "hang") == 0)
			cr_assert_float_eq(lg_num(&t, i, "dur_ms"), 299.5, 1e-6,
					   "held until loadgen's timeout (it arrived 0.5 ms after the send)");
	}
	csv_free(&t);

	/* The retrying client: a 503 is retried (50 ms backoff, up to 2), a refusal too. */
	snprintf(path, sizeof(path), "%s/retry/run-1/requests.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");

		if (sched >= 2000 && sched < 2400)
			cr_assert_eq(lg_num(&t, i, "retries"), 2, "the 503 at %.0f ms", sched);
	}
	csv_free(&t);
	snprintf(path, sizeof(path), "%s/summary.json", st[0]);
	{
		FILE *fp = fopen(path, "r");
		char text[256] = { 0 };

		cr_assert_not_null(fp);
		cr_assert_gt(fread(text, 1, sizeof(text) - 1, fp), 0);
		fclose(fp);
		cr_assert(strstr(text, "\"simulated\":\ttrue") || strstr(text, "\"simulated\": true"),
			  "the stamp does not say it was simulated:\n%s", text);
	}
}

Test(sim, the_same_seed_gives_the_same_bytes, .timeout = 60)
{
	static const char *const files[] = { "requests.csv", "requests.jsonl", "summary.json",
					     "loadgen-summary.json", "mock-primary.csv" };
	char st[3][600];
	char a[900];
	char b[900];
	size_t i;
	size_t k;

	/* Jitter and a fault probability: draws that a seed decides. */
	write_file(dir, "jitter.json",
		   "{\"name\":\"jitter\",\"duration_s\":3,\"seed\":3,"
		   "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30,\"jitter_ms\":20,"
		   "\"faults\":[{\"kind\":\"status\",\"status\":500,\"probability\":0.3,"
		   "\"from_s\":0,\"to_s\":3}]}],"
		   "\"load\":{\"rate\":50,\"arrival\":\"poisson\",\"timeout_ms\":300},"
		   "\"setups\":[{\"name\":\"retry\",\"kind\":\"client_retry\","
		   "\"provider\":\"primary\",\"retries\":1,\"retry_backoff_ms\":20}]}",
		   scenario, sizeof(scenario));
	/* Three stamps of one second: -2 and -3 after the first's name, in order. */
	run_sim(NULL, NULL);
	run_sim(NULL, NULL);
	run_sim("--seed", "4");
	cr_assert_eq(stamps("jitter", st, 3), 3);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(a, sizeof(a), "%s/retry/run-1/%s", st[0], files[i]);
		snprintf(b, sizeof(b), "%s/retry/run-1/%s", st[1], files[i]);
		cr_assert(same_file(a, b), "%s differs between two runs of one seed", files[i]);
	}
	for (k = 0, i = 0; i < 2; i++) {
		snprintf(a, sizeof(a), "%s/retry/run-1/%s", st[0], files[i]);
		snprintf(b, sizeof(b), "%s/retry/run-1/%s", st[2], files[i]);
		k += !same_file(a, b);
	}
	cr_assert_eq(k, 2, "another seed gave the same requests");
}
