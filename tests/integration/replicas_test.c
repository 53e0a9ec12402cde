/*
 * bin/chaos with gateway replicas, end to end: two local replicas share
 * the round-robin load, each with its own events file, and one is killed
 * and restarted on its port; a shared_state redis setup starts its own
 * redis-server, which a kill and a restart take down and bring back on the
 * same port (it answers PING there), and which is gone after the run; bad
 * replica keys and actions, a missing redis-server and chaos sim are
 * refused with exit 2 naming the key or the setup.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "tests/support/harness.h"
#include "tests/support/tmpdir.h"
#include "tests/support/lgharness.h"

static char dir[256];
static char scenario[400];

static void setup(void)
{
	cr_assert_eq(lg_tempdir(dir, sizeof(dir)), 0);
}

TestSuite(chaos_replicas, .init = setup, .fini = lg_cleanup);

/* A gateway config: primary then secondary, a breaker opening after two failures. */
#define GW_CONFIG \
	"{\"request_deadline_ms\":1400," \
	"\"providers\":{\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":200}," \
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\",\"timeout_ms\":1000}}," \
	"\"breaker\":{\"consecutive_failures\":2,\"failure_ratio\":0,\"cooldown_ms\":300," \
	"\"cooldown_jitter\":0,\"cooldown_multiplier\":1,\"half_open_probes\":1}," \
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"mock-small\"}," \
	"{\"provider\":\"secondary\",\"model\":\"mock-small\"}]}}}"

/* The primary hangs [0.5 s, 1.5 s) of a 3 s timeline; 20 req/s. */
#define HEAD(name) \
	"{\"name\":\"" name "\",\"duration_s\":3," \
	"\"providers\":[{\"name\":\"primary\",\"ttft_ms\":30," \
	"\"faults\":[{\"kind\":\"hang\",\"from_s\":0.5,\"to_s\":1.5}]}," \
	"{\"name\":\"secondary\",\"ttft_ms\":30}]," \
	"\"phases\":[{\"name\":\"healthy\",\"from_s\":0,\"to_s\":0.5}," \
	"{\"name\":\"outage\",\"from_s\":0.5,\"to_s\":1.5}," \
	"{\"name\":\"after\",\"from_s\":1.5,\"to_s\":3}]," \
	"\"load\":{\"rate\":20,\"timeout_ms\":1500},"

/* Two local replicas; replica 2 killed at 2 s and restarted at 2.3 s. */
static const char local_two[] =
	HEAD("rep-local")
	"\"actions\":[{\"at_s\":2,\"do\":\"kill\",\"replica\":2},"
	"{\"at_s\":2.3,\"do\":\"restart\",\"replica\":2}],"
	"\"setups\":[{\"name\":\"local\",\"kind\":\"gateway\",\"replicas\":2,\"config\":" GW_CONFIG
	"}]}";

/* Two replicas sharing their breakers; Redis killed at 1 s and restarted at 1.4 s. */
static const char shared_two[] =
	HEAD("rep-shared")
	"\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":true},"
	"{\"at_s\":1.4,\"do\":\"restart\",\"redis\":true}],"
	"\"setups\":[{\"name\":\"shared\",\"kind\":\"gateway\",\"replicas\":2,"
	"\"shared_state\":\"redis\",\"config\":" GW_CONFIG "}]}";

/* The one stamp directory under DIR/results/NAME, into out. */
static void stamp_dir(const char *name, char *out, size_t len)
{
	char parent[500];
	int n;

	snprintf(parent, sizeof(parent), "%s/results/%s", dir, name);
	n = tmpdir_only_entry(parent, out, len);
	cr_assert_eq(n, 1, "%d stamp dirs under %s", n, parent);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* A whole file into b (NUL-terminated); false when it cannot be read. */
static bool slurp(const char *path, struct buf *b)
{
	FILE *fp = fopen(path, "r");
	char chunk[4096];
	size_t n;

	buf_reset(b);
	if (!fp)
		return false;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(b, chunk, n);
	fclose(fp);
	buf_append(b, "", 1);
	return true;
}

/* How many times needle is in s. */
static int count(const char *s, const char *needle)
{
	int n = 0;

	for (s = s ? strstr(s, needle) : NULL; s; s = strstr(s + 1, needle))
		n++;
	return n;
}

static cJSON *read_json(const char *path)
{
	struct buf b = { 0 };
	cJSON *root;

	cr_assert(slurp(path, &b), "no %s", path);
	root = cJSON_Parse(b.data);
	buf_free(&b);
	cr_assert_not_null(root, "%s is not JSON", path);
	return root;
}

/* Runs `chaos run` on text (as DIR/FILE) into DIR/results; its exit status, stderr in err. */
static int chaos_run(const char *file, const char *text, char *err, size_t errlen)
{
	char out[600];
	const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

	write_file(dir, file, text, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	return run_program(argv, err, errlen, 60);
}

Test(chaos_replicas, two_local_replicas_share_the_load_and_one_restarts, .timeout = 90)
{
	char err[8192];
	char stamp[800];
	char path[1000];
	struct buf b = { 0 };
	struct csv_table reqs;
	const char *const files[] = { "events-r1.jsonl", "events-r2.jsonl", "gateway-r1.log",
				      "gateway-r2.log", "gateway.json", NULL };
	size_t odd_ok = 0, even_ok = 0, refused = 0, back = 0;
	cJSON *sum;
	size_t i;
	int rc;

	rc = chaos_run("rep-local.json", local_two, err, sizeof(err));
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, err);
	cr_assert(strstr(err, "kill gateway replica r2") && strstr(err, "restart gateway replica r2"),
		  "%s", err);
	stamp_dir("rep-local", stamp, sizeof(stamp));
	for (i = 0; files[i]; i++) {
		snprintf(path, sizeof(path), "%s/local/run-1/%s", stamp, files[i]);
		cr_assert(exists(path), "missing %s", path);
	}
	snprintf(path, sizeof(path), "%s/local/run-1/events.jsonl", stamp);
	cr_assert_not(exists(path), "a replicated setup writes events-rK.jsonl only");
	/* Local state: the runner writes no shared_state; each replica saw the hang itself. */
	snprintf(path, sizeof(path), "%s/local/run-1/gateway.json", stamp);
	cr_assert(slurp(path, &b));
	cr_assert_null(strstr(b.data, "shared_state"), "%s", b.data);
	for (i = 1; i <= 2; i++) {
		snprintf(path, sizeof(path), "%s/local/run-1/events-r%zu.jsonl", stamp, i);
		cr_assert(slurp(path, &b));
		cr_assert(strstr(b.data, "\"to\":\"open\""), "replica %zu never opened: %s", i,
			  b.data);
	}
	/* Replica 2 came back on its port: two "listening" lines, one address. */
	snprintf(path, sizeof(path), "%s/local/run-1/gateway-r2.log", stamp);
	cr_assert(slurp(path, &b));
	cr_assert_eq(count(b.data, "listening 127.0.0.1:"), 2, "%s", b.data);
	{
		const char *first = strstr(b.data, "listening ");
		const char *second = strstr(first + 1, "listening ");
		size_t len = strcspn(first, "\n");

		cr_assert(strncmp(first, second, len) == 0, "another port after the restart:\n%s",
			  b.data);
	}
	/* Odd requests went to replica 1, even ones to replica 2 (loadgen's round robin). */
	snprintf(path, sizeof(path), "%s/local/run-1/requests.csv", stamp);
	cr_assert_eq(csv_read(path, &reqs), 0);
	for (i = 1; i < reqs.nrows; i++) {	/* row 0: the header */
		const char *id = csv_get(&reqs, i, "id");
		const char *outcome = csv_get(&reqs, i, "outcome");
		double sched = strtod(csv_get(&reqs, i, "sched_ms"), NULL);
		long n = strtol(strrchr(id, '-') + 1, NULL, 10);
		bool ok = strcmp(outcome, "ok") == 0;

		if (n % 2)
			odd_ok += ok;
		else
			even_ok += ok;
		if (n % 2 == 0 && strcmp(outcome, "refused") == 0) {
			cr_assert(sched >= 1990 && sched < 2600, "%s refused at %.1f ms", id, sched);
			refused++;
		}
		if (n % 2 == 0 && sched >= 2700)
			back += ok;
		if (n % 2)
			cr_assert(ok, "%s to replica 1: %s", id, outcome);
	}
	csv_free(&reqs);
	cr_assert(odd_ok > 20 && even_ok > 20, "ok: %zu odd, %zu even", odd_ok, even_ok);
	cr_assert(refused > 0, "no request met the killed replica");
	cr_assert(back > 0, "the restarted replica answered nothing");
	/* The summary's replica figures. */
	snprintf(path, sizeof(path), "%s/local/run-1/summary.json", stamp);
	sum = read_json(path);
	{
		const cJSON *tot = cJSON_GetObjectItem(sum, "totals");
		const cJSON *reps = cJSON_GetObjectItem(tot, "replicas");

		cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(tot, "timeout_paid")));
		cr_assert(cJSON_GetObjectItem(tot, "timeout_paid")->valuedouble >= 2,
			  "the hang's first requests waited out the 200 ms timeout");
		cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(reps, "r1"),
						 "requests")->valuedouble, 30);
		cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(reps, "r2"),
						 "requests")->valuedouble, 30);
		cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(tot, "probe_overlaps")));
	}
	cJSON_Delete(sum);
	buf_free(&b);
}

/* The port of the run's Redis, from the replicas' config; 0: none. */
static int redis_port_of(const char *run_dir)
{
	char path[1100];
	cJSON *cfg;
	const char *url;
	int port = 0;

	snprintf(path, sizeof(path), "%s/gateway.json", run_dir);
	cfg = read_json(path);
	url = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "shared_state"),
						       "url"));
	if (url && strncmp(url, "redis://127.0.0.1:", 18) == 0)
		port = atoi(url + 18);
	cJSON_Delete(cfg);
	return port;
}

/* Sends PING to 127.0.0.1:port; true when "+PONG" comes back within a second. */
static bool redis_pong(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd pfd;
	char reply[64] = "";
	ssize_t n = -1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 1000) == 1)
			n = read(fd, reply, sizeof(reply) - 1);
	}
	close(fd);
	return n >= 5 && strncmp(reply, "+PONG", 5) == 0;
}

Test(chaos_replicas, shared_state_runs_its_own_redis_and_restarts_it, .timeout = 90)
{
	struct lg_proc p;
	char out[600];
	char stamp[800];
	char run[1000];
	char path[1100];
	char title[64];
	struct buf b = { 0 };
	double t;
	int port;
	int rc;

	write_file(dir, "rep-shared.json", shared_two, scenario, sizeof(scenario));
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "run", scenario, "--out", out, NULL };

		cr_assert_eq(lg_spawn(&p, argv), 0);
	}
	cr_assert(lg_await_stderr(&p, "restart redis-server", 20000), "no restart: %s", p.err);
	stamp_dir("rep-shared", stamp, sizeof(stamp));
	snprintf(run, sizeof(run), "%s/shared/run-1.tmp", stamp);
	port = redis_port_of(run);
	cr_assert(port > 0, "no Redis URL in %s/gateway.json", run);
	/* The restarted Redis says it is ready (a log line: no other event says so)… */
	snprintf(path, sizeof(path), "%s/redis.log", run);
	for (t = now_ms(); now_ms() - t < 5000; usleep(10000)) {
		if (slurp(path, &b) && count(b.data, "Ready to accept connections") == 2)
			break;
	}
	cr_assert_eq(count(b.data, "Ready to accept connections"), 2, "%s", b.data);
	/* …and answers on the port it had. */
	cr_assert(redis_pong(port), "the restarted Redis does not answer PING on %d", port);
	rc = lg_wait(&p, 60);
	cr_assert_eq(rc, 0, "chaos run exited %d:\n%s", rc, p.err);
	snprintf(run, sizeof(run), "%s/shared/run-1", stamp);
	snprintf(path, sizeof(path), "%s/redis.log", run);
	cr_assert(slurp(path, &b));
	snprintf(title, sizeof(title), "port=%d", port);
	cr_assert_eq(count(b.data, title), 2, "both starts on port %d:\n%s", port, b.data);
	cr_assert(strstr(b.data, "Redis is now ready to exit"), "not stopped cleanly:\n%s",
		  b.data);
	/* Stopped with the run: nothing answers on its port, no redis-server of it is left. */
	cr_assert_not(redis_pong(port), "Redis outlived the run");
	snprintf(title, sizeof(title), "redis-server 127.0.0.1:%d", port);
	{
		char cmd[200];
		struct buf ps = { 0 };
		FILE *fp;
		char chunk[4096];
		size_t n;

		snprintf(cmd, sizeof(cmd), "ps -eo args");
		fp = popen(cmd, "r");
		cr_assert_not_null(fp);
		while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
			buf_append(&ps, chunk, n);
		pclose(fp);
		buf_append(&ps, "", 1);
		cr_assert_null(strstr(ps.data, title), "%s is still running", title);
		buf_free(&ps);
	}
	/* The replicas shared their breakers: a remote change, and the config the runner wrote. */
	snprintf(path, sizeof(path), "%s/events-r1.jsonl", run);
	cr_assert(slurp(path, &b));
	snprintf(path, sizeof(path), "%s/events-r2.jsonl", run);
	{
		struct buf b2 = { 0 };

		cr_assert(slurp(path, &b2));
		/* Each replica was started with --replica rK: its lines say so. */
		cr_assert(strstr(b.data, "\"replica\":\"r1\""), "%s", b.data);
		cr_assert(strstr(b2.data, "\"replica\":\"r2\""), "%s", b2.data);
		cr_assert(strstr(b.data, "\"origin\":\"remote\"") ||
			  strstr(b2.data, "\"origin\":\"remote\""),
			  "no replica followed the other:\n%s\n%s", b.data, b2.data);
		buf_free(&b2);
	}
	snprintf(path, sizeof(path), "%s/gateway.json", run);
	cr_assert(slurp(path, &b));
	cr_assert(strstr(b.data, "\"backend\":\t\"redis\"") || strstr(b.data, "\"backend\": \"redis\"")
		  || strstr(b.data, "\"backend\":\"redis\""), "%s", b.data);
	cr_assert(strstr(b.data, "faultline:"), "no key prefix: %s", b.data);
	buf_free(&b);
}

/* A bad scenario's `chaos run` exits 2 with says in its stderr. */
static void refused(const char *name, const char *text, const char *says)
{
	char err[8192];
	int rc = chaos_run(name, text, err, sizeof(err));

	cr_assert_eq(rc, 2, "%s: exit %d:\n%s", name, rc, err);
	cr_assert(strstr(err, says), "%s: expected \"%s\" in:\n%s", name, says, err);
}

Test(chaos_replicas, bad_replicas_and_actions_exit_2_naming_the_key, .timeout = 60)
{
	refused("zero.json",
		HEAD("zero") "\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"replicas\":0,"
		"\"config\":" GW_CONFIG "}]}",
		"zero.json: setups[0].replicas: expected a whole number from 1 to 16, got 0");
	refused("far.json",
		HEAD("far") "\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"replica\":3}],"
		"\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"replicas\":2,"
		"\"config\":" GW_CONFIG "}]}",
		"far.json: actions[0].replica: expected a replica some gateway setup has");
	refused("noredis.json",
		HEAD("noredis") "\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"redis\":true}],"
		"\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"replicas\":2,"
		"\"config\":" GW_CONFIG "}]}",
		"noredis.json: actions[0].redis: expected a setup with \"shared_state\": \"redis\"");
	refused("both.json",
		HEAD("both") "\"actions\":[{\"at_s\":1,\"do\":\"kill\",\"replica\":1,"
		"\"provider\":\"primary\"}],"
		"\"setups\":[{\"name\":\"g\",\"kind\":\"gateway\",\"config\":" GW_CONFIG "}]}",
		"both.json: actions[0].replica: expected exactly one of");
}

Test(chaos_replicas, no_redis_server_and_chaos_sim_exit_2_naming_the_setup, .timeout = 60)
{
	char err[8192];
	char out[600];
	char empty[400];
	const char *path = getenv("PATH");
	char *saved = strdup(path ? path : "/usr/bin:/bin");
	int rc;

	cr_assert_not_null(saved);
	/* A PATH without redis-server: the runner finds its own programs by FAULTLINE_BIN. */
	snprintf(empty, sizeof(empty), "%s/empty-path", dir);
	cr_assert_eq(mkdir(empty, 0755), 0);
	setenv("PATH", empty, 1);
	rc = chaos_run("rep-shared.json", shared_two, err, sizeof(err));
	setenv("PATH", saved, 1);
	free(saved);
	cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "rep-shared.json: setups[0] \"shared\": shared_state \"redis\" needs "
			 "redis-server"), "%s", err);
	snprintf(out, sizeof(out), "%s/results", dir);
	{
		const char *argv[] = { "chaos", "sim", scenario, "--out", out, NULL };

		rc = run_program(argv, err, sizeof(err), 30);
	}
	cr_assert_eq(rc, 2, "chaos sim exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "rep-shared.json: setups[0] \"shared\".replicas: chaos sim does not "
			 "simulate gateway replicas yet"), "%s", err);
	{
		const char *argv[] = { "chaos", "sweep", scenario, "--sim", "--out", out, "--vary",
				       "load.rate=10,20", NULL };

		rc = run_program(argv, err, sizeof(err), 30);
	}
	cr_assert_eq(rc, 2, "chaos sweep --sim exit %d:\n%s", rc, err);
	cr_assert(strstr(err, "setups[0] \"shared\".replicas: chaos sim does not simulate"),
		  "%s", err);
}
