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
 * retries twice. The model: 0.5 ms to reach a server, a timer fires 2 ms
 * after the millisecond it is due in, no noise.
 */
static const char timeline[] =
	"{\"name\":\"timeline\",\"duration_s\":4,\"seed\":7,"
	"\"sim\":{\"latency_ms\":0.5,\"answer_ms\":2,\"jitter_ms\":0,\"restart_ms\":120},"
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

/*
 * Writes json as DIR/NAME.json, simulates it (with flag and val, or NULL),
 * and reads the file at rel under its one stamp into t; the stamp's path
 * into stamp when not NULL (600 bytes).
 */
static void sim_table(const char *name, const char *json, const char *flag, const char *val,
		      const char *rel, struct csv_table *t, char *stamp)
{
	char st[1][600];
	char path[900];

	snprintf(path, sizeof(path), "%s.json", name);
	write_file(dir, path, json, scenario, sizeof(scenario));
	run_sim(flag, val);
	cr_assert_eq(stamps(name, st, 1), 1);
	snprintf(path, sizeof(path), "%s/%s", st[0], rel);
	cr_assert_eq(csv_read(path, t), 0, "cannot read %s", path);
	if (stamp)
		snprintf(stamp, 600, "%s", st[0]);
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
			cr_assert_float_eq(lg_num(&t, i, "latency_ms"), 33, 1e-6,
					   "there 0.5 ms after the send, 30 ms to answer: a timer due "
					   "at 30.5 ms fires when that millisecond is over, 2 ms late");
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
	/* Each run says so and with which model; chaos report keeps the stamp's word. */
	snprintf(path, sizeof(path), "%s/retry/run-1/sim.json", st[0]);
	{
		FILE *fp = fopen(path, "r");
		char text[512] = { 0 };
		char err[8192];
		const char *argv[] = { "chaos", "report", st[0], NULL };

		cr_assert_not_null(fp, "no %s", path);
		cr_assert_gt(fread(text, 1, sizeof(text) - 1, fp), 0);
		fclose(fp);
		cr_assert(strstr(text, "\"answer_ms\":\t2"), "%s", text);
		cr_assert_eq(run_program(argv, err, sizeof(err), 30), 0, "%s", err);
		snprintf(path, sizeof(path), "%s/report.md", st[0]);
		fp = fopen(path, "r");
		cr_assert_not_null(fp);
		memset(text, 0, sizeof(text));
		cr_assert_gt(fread(text, 1, sizeof(text) - 1, fp), 0);
		fclose(fp);
		cr_assert(strstr(text, "**Simulated**"), "report.md does not say so:\n%s", text);
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

/*
 * The gateway's own policy in virtual time: the primary refuses from 1 s
 * (killed) to 2 s (restarted, listening at once); the breaker opens on
 * the 2nd failure in a row, stays open 300 ms (no jitter), lets 1 probe
 * through. 100 req/s, constant. What the events and the requests say
 * follows from the config alone.
 */
static const char gateway_kill[] =
	"{\"name\":\"gwkill\",\"duration_s\":3,\"seed\":5,"
	"\"sim\":{\"latency_ms\":0.5,\"answer_ms\":0,\"jitter_ms\":0,\"gateway_ms\":0,\"restart_ms\":0,"
	"\"refused_ms\":1},"
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":20,\"jitter_ms\":0,\"token_ms\":0},"
	"{\"name\":\"secondary\",\"ttft_ms\":40,\"jitter_ms\":0,\"token_ms\":0}],"
	"\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"provider\":\"primary\"},"
	"{\"at_s\":2,\"do\":\"restart\",\"provider\":\"primary\"}],"
	"\"phases\":[{\"name\":\"before\",\"from_s\":0,\"to_s\":1},"
	"{\"name\":\"down\",\"from_s\":1,\"to_s\":2},{\"name\":\"after\",\"from_s\":2,\"to_s\":3}],"
	"\"load\":{\"rate\":100,\"arrival\":\"constant\",\"timeout_ms\":1000},"
	"\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{\"request_deadline_ms\":900,"
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":500},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":500}},"
	"\"breaker\":{\"consecutive_failures\":2,\"cooldown_ms\":300,\"cooldown_jitter\":0,"
	"\"cooldown_multiplier\":1,\"half_open_probes\":1},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"m\"},"
	"{\"provider\":\"secondary\",\"model\":\"m\"}]}}}}]}";

Test(sim, the_gateways_breaker_in_virtual_time, .timeout = 60)
{
	char st[1][600];
	char path[900];
	struct csv_table t;
	FILE *fp;
	char line[512];
	double at[16];
	char to[16][16];
	size_t nev = 0;
	size_t i;

	write_file(dir, "gwkill.json", gateway_kill, scenario, sizeof(scenario));
	run_sim(NULL, NULL);
	cr_assert_eq(stamps("gwkill", st, 1), 1);
	snprintf(path, sizeof(path), "%s/gw/run-1/events.jsonl", st[0]);
	fp = fopen(path, "r");
	cr_assert_not_null(fp, "no events.jsonl");
	while (nev < 16 && fgets(line, sizeof(line), fp)) {
		cJSON *e = cJSON_Parse(line);

		cr_assert_not_null(e, "not JSON: %s", line);
		at[nev] = cJSON_GetObjectItemCaseSensitive(e, "t_unix_ms")->valuedouble - 1767225600000.0;
		snprintf(to[nev], sizeof(to[nev]), "%s",
			 cJSON_GetObjectItemCaseSensitive(e, "to")->valuestring);
		cJSON_Delete(e);
		nev++;
	}
	fclose(fp);
	/*
	 * Requests every 10 ms reach the gateway 0.5 ms after their send and
	 * the primary 0.5 ms later, answered 21 ms after that (a 20 ms timer
	 * due on a whole millisecond fires when that one is over): at the kill
	 * (1000 ms) those sent at 980 and 990 ms are in flight, and both are
	 * reset — two failures in a row, the breaker opens at once.
	 */
	cr_assert_geq(nev, 3, "%zu events", nev);
	cr_assert_str_eq(to[0], "open");
	cr_assert_float_eq(at[0], 1000, 1e-6, "opened at %.3f", at[0]);
	/* 300 ms later a probe may go: the request sent at 1300 ms (at the gateway at 1300.5). */
	cr_assert_str_eq(to[1], "half_open");
	cr_assert_float_eq(at[1], 1300.5, 1e-6, "half-open at %.3f", at[1]);
	cr_assert_str_eq(to[2], "open", "the probe was refused: open again");
	/* The last change closes it, after the restart at 2000 ms. */
	cr_assert_str_eq(to[nev - 1], "closed");
	cr_assert_geq(at[nev - 1], 2000);
	cr_assert_lt(at[nev - 1], 2400);

	snprintf(path, sizeof(path), "%s/gw/run-1/requests.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");

		cr_assert_str_eq(csv_get(&t, i, "outcome"), "ok", "request at %.0f ms", sched);
		if (sched < 975)
			cr_assert_str_eq(csv_get(&t, i, "provider"), "primary");
		if (sched == 980) {
			cr_assert_eq(lg_num(&t, i, "attempts"), 2, "the request sent at 980 ms failed over");
			cr_assert_float_eq(lg_num(&t, i, "latency_ms"), 61, 1e-6, "reset at 1000 "
					   "ms, then 0.5 ms to the secondary and its 40 ms, whose "
					   "timer is due at 1040.5 and fires at 1041");
		}
		if (sched > 1020 && sched < 1300) {
			/* The breaker is open: straight to the secondary, one attempt. */
			cr_assert_str_eq(csv_get(&t, i, "provider"), "secondary");
			cr_assert_eq(lg_num(&t, i, "attempts"), 1);
			/*
			 * At the secondary 1 ms after the send, its 40 ms timer due on
			 * a whole millisecond: it fires when that millisecond is over.
			 */
			cr_assert_float_eq(lg_num(&t, i, "latency_ms"), 42, 1e-6);
		}
	}
	csv_free(&t);
}

Test(sim, a_gateway_run_is_the_same_every_time, .timeout = 60)
{
	static const char *const files[] = { "requests.csv", "events.jsonl", "mock-a.csv",
					     "mock-b.csv", "loadgen-summary.json" };
	char st[2][600];
	char a[900];
	char b[900];
	size_t i;

	/*
	 * Everything drawn: jitter, a share of 503s and of stalled streams,
	 * Poisson arrivals, half the requests streaming, a batch class,
	 * hedging, retries with jittered backoff, health checks, jittered
	 * cooldowns.
	 */
	write_file(dir, "drawn.json",
		   "{\"name\":\"drawn\",\"duration_s\":5,\"seed\":11,"
		   "\"providers\":[{\"name\":\"a\",\"ttft_ms\":30,\"jitter_ms\":25,\"token_ms\":5,"
		   "\"faults\":[{\"kind\":\"status\",\"status\":503,\"probability\":0.3,"
		   "\"from_s\":1,\"to_s\":3},{\"kind\":\"stall\",\"after_tokens\":2,"
		   "\"probability\":0.2,\"from_s\":0,\"to_s\":5}]},"
		   "{\"name\":\"b\",\"ttft_ms\":60,\"jitter_ms\":30,\"token_ms\":5}],"
		   "\"load\":{\"timeout_ms\":2000,\"model\":\"chat\",\"mix\":{\"streams\":["
		   "{\"name\":\"i\",\"rate\":40,\"stream\":0.5,\"arrival\":\"poisson\"},"
		   "{\"name\":\"b\",\"rate\":10,\"class\":\"batch\",\"arrival\":\"poisson\"}]}},"
		   "\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		   "\"request_deadline_ms\":1500,\"retry\":{\"max_retries\":1,\"base_ms\":20},"
		   "\"providers\":{\"a\":{\"base_url\":\"{upstream.a}\",\"timeout_ms\":400,"
		   "\"health_check\":{\"interval_ms\":200,\"timeout_ms\":100}},"
		   "\"b\":{\"base_url\":\"{upstream.b}\",\"timeout_ms\":400}},"
		   "\"stream\":{\"first_token_timeout_ms\":200,\"stall_timeout_ms\":150},"
		   "\"breaker\":{\"consecutive_failures\":3,\"cooldown_ms\":200},"
		   "\"classes\":{\"batch\":{\"concurrency\":2}},"
		   "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"a\",\"model\":\"m\"},"
		   "{\"provider\":\"b\",\"model\":\"m\"}],\"hedge\":{\"after_ms\":80}}}}}]}",
		   scenario, sizeof(scenario));
	run_sim(NULL, NULL);
	run_sim(NULL, NULL);
	cr_assert_eq(stamps("drawn", st, 2), 2);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(a, sizeof(a), "%s/gw/run-1/%s", st[0], files[i]);
		snprintf(b, sizeof(b), "%s/gw/run-1/%s", st[1], files[i]);
		cr_assert(same_file(a, b), "%s differs between two runs of one seed", files[i]);
	}
	/* And it did meet what it was built to meet: hedges, stalls, checks, a breaker. */
	{
		struct csv_table t;

		snprintf(a, sizeof(a), "%s/gw/run-1/requests.csv", st[0]);
		cr_assert_eq(csv_read(a, &t), 0);
		cr_assert_gt(lg_count(&t, "hedged", "1"), 0, "no request was hedged");
		cr_assert_gt(lg_count(&t, "class", "batch"), 0);
		csv_free(&t);
		snprintf(a, sizeof(a), "%s/gw/run-1/mock-a.csv", st[0]);
		cr_assert_eq(csv_read(a, &t), 0);
		cr_assert_gt(lg_count(&t, "kind", "models"), 10, "too few health checks");
		cr_assert_gt(lg_count(&t, "fault", "stall"), 0);
		csv_free(&t);
	}
}

Test(sim, a_simulated_sweep, .timeout = 60)
{
	char out[600];
	char err[8192];
	char sw[1][600];
	char path[900];
	struct csv_table t;
	cJSON *plan;
	FILE *fp;
	char text[4096] = { 0 };
	int rc;

	write_file(dir, "timeline.json", timeline, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "sweep", scenario, "--sim", "--out", out, "--quiet",
				       "--setup", "direct", "--vary", "load.timeout_ms=100..500/100",
				       NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "chaos sweep --sim exited %d:\n%s", rc, err);
	cr_assert_eq(stamps("timeline", sw, 1), 1);
	snprintf(path, sizeof(path), "%s/sweep.json", sw[0]);
	fp = fopen(path, "r");
	cr_assert_not_null(fp);
	cr_assert_gt(fread(text, 1, sizeof(text) - 1, fp), 0);
	fclose(fp);
	plan = cJSON_Parse(text);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "sim")), "%s", text);
	cJSON_Delete(plan);
	snprintf(path, sizeof(path), "%s/sweep.csv", sw[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(t.nrows - 1, 5, "%zu rows, not one per point", t.nrows - 1);
	csv_free(&t);
	/* Each point is a simulated stamp; the hang is cut at each point's timeout. */
	snprintf(path, sizeof(path), "%s/p003-timeout_ms=300/direct/run-1/mock-primary.csv", sw[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	cr_assert_eq(lg_count(&t, "fault", "hang"), 20);
	csv_free(&t);
	/* Resumed, it keeps being a simulated sweep: nothing left to run. */
	{
		const char *argv[] = { "chaos", "sweep", "--resume", sw[0], "--quiet", NULL };

		rc = run_program(argv, err, sizeof(err), 50);
	}
	cr_assert_eq(rc, 0, "resume exited %d:\n%s", rc, err);
}

/*
 * What the mock model writes and the client records, fault by fault, as
 * mockprov and loadgen do (each checked against a real run's files when
 * it was written): a hang cut by a down edge is logged "hang", not
 * "hang+down"; a stream whose reset budget ends inside its head breaks at
 * once, no status, no token; a truncated answer carries no usage; a
 * prompt of 50 words is 69 tokens (its characters / 4).
 */
Test(sim, faults_as_mockprov_and_loadgen_record_them, .timeout = 60)
{
	char st[1][600];
	char path[900];
	struct csv_table t;
	size_t i;
	size_t hangs = 0, resets = 0, truncs = 0;

	write_file(dir, "faults.json",
		   "{\"name\":\"faults\",\"duration_s\":4,"
		   "\"providers\":[{\"name\":\"p\",\"ttft_ms\":30,\"jitter_ms\":0,\"token_ms\":5,"
		   "\"output_tokens\":8,\"faults\":["
		   "{\"kind\":\"hang\",\"from_s\":0.5,\"to_s\":1},"
		   "{\"kind\":\"down\",\"from_s\":0.9,\"to_s\":1.2},"
		   "{\"kind\":\"reset\",\"after_bytes\":100,\"from_s\":1.5,\"to_s\":2},"
		   "{\"kind\":\"truncate\",\"after_tokens\":2,\"from_s\":2.5,\"to_s\":3}]}],"
		   "\"load\":{\"arrival\":\"constant\",\"timeout_ms\":1000,"
		   "\"prompt_tokens\":50,\"mix\":{\"streams\":[{\"name\":\"s\",\"rate\":20,"
		   "\"stream\":true,\"prompt_tokens\":50},{\"name\":\"w\",\"rate\":20,"
		   "\"prompt_tokens\":50}]}},"
		   "\"setups\":[{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"p\"}]}",
		   scenario, sizeof(scenario));
	run_sim(NULL, NULL);
	cr_assert_eq(stamps("faults", st, 1), 1);
	snprintf(path, sizeof(path), "%s/d/run-1/mock-p.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		const char *fault = csv_get(&t, i, "fault");

		if (strncmp(fault, "hang", 4) == 0) {
			cr_assert_str_eq(fault, "hang", "row %zu: a hang the down edge cut", i);
			hangs++;
		}
		if (strcmp(fault, "reset") == 0 && strcmp(csv_get(&t, i, "streaming"), "1") == 0) {
			cr_assert_eq(lg_num(&t, i, "status"), 0, "row %zu: no head went out", i);
			cr_assert_eq(lg_num(&t, i, "tokens_out"), 0, "row %zu", i);
			resets++;
		}
	}
	cr_assert_gt(hangs, 10);
	cr_assert_gt(resets, 5);
	csv_free(&t);
	snprintf(path, sizeof(path), "%s/d/run-1/requests.csv", st[0]);
	cr_assert_eq(csv_read(path, &t), 0);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");
		const char *o = csv_get(&t, i, "outcome");

		if (strcmp(o, "ok") == 0)
			cr_assert_eq(lg_num(&t, i, "tokens_in"), 69, "50 words are 276 characters");
		if (sched >= 1500 && sched < 2000 && strcmp(csv_get(&t, i, "streaming"), "1") == 0) {
			cr_assert_str_eq(o, "reset", "stream at %.0f ms", sched);
			cr_assert(isnan(lg_num(&t, i, "ttft_ms")), "a stream that never began has a ttft");
		}
		if (strcmp(o, "truncated") == 0) {
			cr_assert_str_eq(csv_get(&t, i, "tokens_in"), "", "a cut answer has no usage");
			truncs++;
		}
	}
	cr_assert_gt(truncs, 5);
	csv_free(&t);
}

/*
 * Through the gateway: a provider's 400 is passed to the client with its
 * message (the gateway's request is gone by then: the message must not
 * be); batch requests wait in the queue while every provider refuses and
 * are answered 503 when their 300 ms are up.
 */
Test(sim, a_passed_through_error_and_an_expired_batch_queue, .timeout = 60)
{
	struct csv_table t;
	size_t i;
	size_t n400 = 0, expired = 0, refused = 0;

	sim_table("gwq",
		   "{\"name\":\"gwq\",\"duration_s\":3,"
		   "\"providers\":[{\"name\":\"p\",\"ttft_ms\":20,\"jitter_ms\":0,"
		   "\"faults\":[{\"kind\":\"status\",\"status\":400,\"from_s\":0,\"to_s\":1},"
		   "{\"kind\":\"down\",\"from_s\":1.5,\"to_s\":3}]}],"
		   "\"load\":{\"timeout_ms\":2000,\"model\":\"chat\",\"mix\":{\"streams\":["
		   "{\"name\":\"i\",\"rate\":20},{\"name\":\"b\",\"rate\":20,\"class\":\"batch\"}]}},"
		   "\"setups\":[{\"name\":\"gw\",\"kind\":\"gateway\",\"config\":{"
		   "\"request_deadline_ms\":1000,\"providers\":{\"p\":{\"base_url\":\"{upstream.p}\"}},"
		   "\"classes\":{\"batch\":{\"max_wait_ms\":300}},"
		   "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}}]}",
		   NULL, NULL, "gw/run-1/requests.csv", &t, NULL);
	for (i = 1; i < t.nrows; i++) {
		double sched = lg_num(&t, i, "sched_ms");

		if (sched < 1000) {
			cr_assert_eq(lg_num(&t, i, "status"), 400);
			cr_assert_str_eq(csv_get(&t, i, "error"),
					 "HTTP 400: The request was rejected by the provider.");
			n400++;
		}
		if (sched >= 2000 && strcmp(csv_get(&t, i, "class"), "batch") == 0 &&
		    lg_num(&t, i, "status") == 503) {
			cr_assert_geq(lg_num(&t, i, "latency_ms"), 300, "expired early");
			/* The gateway's own words (gateway/errmsg.c), as a real gateway answers. */
			cr_assert_str_eq(csv_get(&t, i, "error"), "HTTP 503: No provider of model "
					 "'chat' took the batch request within 300 ms.");
			expired++;
		}
		if (sched >= 2000 && strcmp(csv_get(&t, i, "class"), "interactive") == 0) {
			cr_assert_str_eq(csv_get(&t, i, "error"), "HTTP 503: No provider of model "
					 "'chat' is available after 1 attempt: p/m: refused (0 ms).");
			refused++;
		}
	}
	cr_assert_eq(n400, 40);
	cr_assert_gt(expired, 5, "no batch request expired in the queue");
	cr_assert_eq(refused, 20);
	csv_free(&t);
}

Test(sim, the_machines_noise, .timeout = 60)
{
	/*
	 * 200 requests at a provider answering in 100 ms, a 30% share of them
	 * 503s: with jitter_ms 0.6 each answer comes an exponential draw of
	 * that mean later than answer_ms, so latencies differ, none is early,
	 * and their mean is 0.6 ms above the constant model's. The draws are
	 * the machine's own stream: the same requests get the 503s with and
	 * without them.
	 */
	static const char *const jit[] = { "0", "0.6" };
	char path[1300];
	char text[1024];
	struct csv_table t[2];
	double sum = 0, lo = INFINITY, hi = 0;
	size_t n = 0;
	size_t i;
	size_t k;

	for (k = 0; k < 2; k++) {
		snprintf(text, sizeof(text),
			 "{\"name\":\"noise%zu\",\"duration_s\":4,\"seed\":9,"
			 "\"sim\":{\"latency_ms\":0.3,\"answer_ms\":0.75,\"jitter_ms\":%s},"
			 "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":100,\"jitter_ms\":0,"
			 "\"token_ms\":0,\"faults\":[{\"kind\":\"status\",\"status\":503,"
			 "\"probability\":0.3,\"from_s\":0,\"to_s\":4}]}],"
			 "\"load\":{\"rate\":50,\"arrival\":\"constant\",\"timeout_ms\":1000},"
			 "\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"}]}",
			 k, jit[k]);
		snprintf(path, sizeof(path), "noise%zu", k);
		sim_table(path, text, NULL, NULL, "direct/run-1/requests.csv", &t[k], NULL);
	}
	cr_assert_eq(t[0].nrows, t[1].nrows);
	cr_assert_eq(t[0].nrows - 1, 200);
	for (i = 1; i < t[1].nrows; i++) {
		const char *o0 = csv_get(&t[0], i, "outcome");
		double l0 = lg_num(&t[0], i, "latency_ms");
		double l1 = lg_num(&t[1], i, "latency_ms");

		cr_assert_str_eq(csv_get(&t[0], i, "id"), csv_get(&t[1], i, "id"));
		cr_assert_str_eq(o0, csv_get(&t[1], i, "outcome"),
				 "request %zu: the noise moved a fault's draw", i);
		if (strcmp(o0, "ok") != 0)
			continue;
		cr_assert_float_eq(l0, 101.75, 1e-6, "the constant model: due at 100.3 ms, fired "
				   "when that millisecond is over, 0.75 ms late");
		cr_assert_geq(l1, l0, "an answer came before its plan");
		sum += l1 - l0;
		lo = fmin(lo, l1 - l0);
		hi = fmax(hi, l1 - l0);
		n++;
	}
	cr_assert_gt(n, 100);
	cr_assert_float_eq(sum / (double)n, 0.6, 0.2, "mean noise %.3f ms over %zu answers",
			   sum / (double)n, n);
	cr_assert_lt(lo, 0.1, "the smallest draw %.3f ms", lo);
	cr_assert_gt(hi, 1.5, "the largest draw %.3f ms", hi);
	csv_free(&t[0]);
	csv_free(&t[1]);
}

/*
 * A closed loop of 4 clients with ramp_up_ms 400 at a provider answering
 * in 500 ms: in virtual time client k begins exactly at k × 100 ms, as
 * loadgen's own schedule says, and sends again when answered, so the
 * clients stay 100 ms apart. Then an open loop whose mix stream gives a
 * rate and says no arrival: load.arrival "poisson" reaches it, so its gaps
 * are not all equal.
 */
Test(sim, a_ramp_up_and_the_loads_arrival, .timeout = 60)
{
	struct csv_table t;
	double start[16];
	double gap_lo = INFINITY, gap_hi = 0, prev = -1;
	size_t n;
	size_t i;

	sim_table("ramp",
		   "{\"name\":\"ramp\",\"duration_s\":1,\"seed\":3,"
		   "\"sim\":{\"latency_ms\":0.5,\"answer_ms\":1,\"jitter_ms\":0},"
		   "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":500,\"jitter_ms\":0,"
		   "\"token_ms\":0}],"
		   "\"load\":{\"concurrency\":4,\"ramp_up_ms\":400,\"timeout_ms\":1000},"
		   "\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"}]}",
		   NULL, NULL, "direct/run-1/requests.csv", &t, NULL);
	n = t.nrows - 1;
	cr_assert_eq(n, 8, "4 clients, 2 requests each in 1 s: %zu requests", n);
	for (i = 0; i < n; i++)
		start[i] = lg_num(&t, i + 1, "start_ms");
	lg_percentile(start, n, 50);	/* sorts */
	for (i = 0; i < 4; i++) {
		cr_assert_float_eq(start[i], 100.0 * (double)i, 1e-9,
				   "client %zu began at %.6f ms", i, start[i]);
		cr_assert_float_eq(start[i + 4] - start[i], start[4] - start[0], 1e-9,
				   "client %zu's round differs", i);
	}
	csv_free(&t);

	sim_table("arrival",
		   "{\"name\":\"arrival\",\"duration_s\":2,\"seed\":3,"
		   "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":50,\"jitter_ms\":0,"
		   "\"token_ms\":0}],"
		   "\"load\":{\"arrival\":\"poisson\",\"timeout_ms\":1000,"
		   "\"mix\":{\"streams\":[{\"name\":\"s\",\"rate\":50}]}},"
		   "\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"}]}",
		   NULL, NULL, "direct/run-1/requests.csv", &t, NULL);
	cr_assert_gt(t.nrows, 50);
	for (i = 1; i < t.nrows; i++) {
		double at = lg_num(&t, i, "sched_ms");

		if (prev >= 0) {
			gap_lo = fmin(gap_lo, at - prev);
			gap_hi = fmax(gap_hi, at - prev);
		}
		prev = at;
	}
	cr_assert_lt(gap_lo, 5.0, "Poisson gaps: the shortest %.3f ms", gap_lo);
	cr_assert_gt(gap_hi, 50.0, "Poisson gaps: the longest %.3f ms", gap_hi);
	csv_free(&t);
}

/*
 * A closed loop's think after an error, in virtual time: 4 clients for 1 s
 * at a primary answering 503 throughout, each waiting load.error_think_ms
 * (50) after every error — as loadgen does (sched_closed_free_at), so at
 * most C·T/D + C = 84 requests, each after the first round meant for an
 * error's end + 50 ms exactly. Without the key the 10 ms default applies
 * (at most 404); 0 turns it off (the clients spin).
 */
Test(sim, a_closed_loop_thinks_after_an_error, .timeout = 60)
{
	static const struct {
		const char *name;
		const char *think;	/* the load's key, or "" */
		double think_ms;
		double lo, hi;		/* requests */
	} cases[] = {
		{ "think50", ",\"error_think_ms\":50", 50, 40, 84 },
		{ "think10", "", 10, 200, 404 },
		{ "think0", ",\"error_think_ms\":0", 0, 1000, INFINITY },
	};
	char json[1024];
	struct csv_table t;
	double *sched;
	size_t c;
	size_t n;
	size_t i;
	size_t j;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		snprintf(json, sizeof(json),
			 "{\"name\":\"%s\",\"duration_s\":1,\"seed\":3,"
			 "\"sim\":{\"latency_ms\":0.5,\"answer_ms\":1,\"jitter_ms\":0},"
			 "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":20,\"jitter_ms\":0,"
			 "\"token_ms\":0,\"faults\":[{\"kind\":\"status\",\"status\":503,"
			 "\"from_s\":0,\"to_s\":1}]}],"
			 "\"load\":{\"concurrency\":4,\"timeout_ms\":1000%s},"
			 "\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\","
			 "\"provider\":\"primary\"}]}", cases[c].name, cases[c].think);
		sim_table(cases[c].name, json, NULL, NULL, "direct/run-1/requests.csv", &t, NULL);
		n = t.nrows - 1;
		cr_assert(n >= cases[c].lo && n <= cases[c].hi, "%s: %zu requests, expected %g to %g",
			  cases[c].name, n, cases[c].lo, cases[c].hi);
		sched = calloc(n, sizeof(*sched));
		cr_assert_not_null(sched);
		for (i = 0; i < n; i++)
			sched[i] = lg_num(&t, i + 1, "sched_ms");
		lg_percentile(sched, n, 50);	/* sorts */
		for (i = 4; cases[c].think_ms > 0 && i < n; i++) {
			for (j = 1; j < t.nrows; j++) {
				if (fabs(lg_num(&t, j, "end_ms") + cases[c].think_ms - sched[i]) < 1e-3)
					break;
			}
			cr_assert_lt(j, t.nrows, "%s: a request meant for %.3f ms: no error ended "
				     "%g ms before it", cases[c].name, sched[i], cases[c].think_ms);
		}
		free(sched);
		csv_free(&t);
	}
}

/*
 * --repeat 2 of a closed loop: each run draws the machine's noise from its
 * own seed (the scenario's + k − 1, as loadgen's), so the two runs'
 * latencies differ; without noise (jitter_ms 0) nothing else differs and
 * the runs are the same bytes.
 */
Test(sim, each_repeat_has_its_own_machine_noise, .timeout = 60)
{
	static const char *const jit[] = { "0.6", "0" };
	char st[600];
	char path[900];
	char text[1024];
	char name[32];
	struct csv_table t[2];
	bool same;
	size_t i;
	size_t k;

	for (k = 0; k < 2; k++) {
		snprintf(name, sizeof(name), "repeat%zu", k);
		snprintf(text, sizeof(text),
			 "{\"name\":\"%s\",\"duration_s\":2,\"seed\":5,"
			 "\"sim\":{\"jitter_ms\":%s},"
			 "\"providers\":[{\"name\":\"primary\",\"ttft_ms\":50,\"jitter_ms\":0,"
			 "\"token_ms\":0}],"
			 "\"load\":{\"concurrency\":3,\"timeout_ms\":1000},"
			 "\"setups\":[{\"name\":\"direct\",\"kind\":\"direct\",\"provider\":\"primary\"}]}",
			 name, jit[k]);
		sim_table(name, text, "--repeat", "2", "direct/run-1/mock-primary.csv", &t[0], st);
		snprintf(path, sizeof(path), "%s/direct/run-2/mock-primary.csv", st);
		cr_assert_eq(csv_read(path, &t[1]), 0);
		same = t[0].nrows == t[1].nrows;
		for (i = 1; same && i < t[0].nrows; i++)
			same = strcmp(csv_get(&t[0], i, "t_ms"), csv_get(&t[1], i, "t_ms")) == 0;
		if (k == 0)
			cr_assert_not(same, "two runs of a noisy machine saw the same arrivals");
		else
			cr_assert(same, "two runs of a noiseless machine saw different arrivals");
		csv_free(&t[0]);
		csv_free(&t[1]);
	}
}
