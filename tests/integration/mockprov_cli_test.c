/*
 * mockprov's command line as a user meets it: every bad config exits with
 * status 2 and names the file, the key and what was expected; bad flags
 * exit 2; a busy port is reported with the provider and its address; and
 * SIGINT or SIGTERM stop it with status 0 and its request log committed.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/support/harness.h"
#include "tests/support/lgharness.h"
#include "common/opt.h"

/* ---- helpers ---- */

/*
 * What a test started, so that teardown can undo it even when an assertion
 * ends the test early (each test runs in its own process).
 */
static struct mock_proc mock;
static char tmpdir[64];

/* A temp dir for config files; teardown removes it. */
static const char *make_tempdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/faultline-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	return tmpdir;
}

static void teardown(void)
{
	char cmd[400];

	mock_cleanup(&mock);
	lg_cleanup();
	if (strncmp(tmpdir, "/tmp/faultline-test-", 20) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmpdir);
	}
	tmpdir[0] = '\0';
}

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/*
 * Runs argv (argv[0] under $FAULTLINE_BIN) to completion within timeout_s,
 * capturing stdout and stderr, unlike run_program which drops stdout. It
 * waits for both pipes to close rather than polling the child. Returns the
 * exit status, 128+N for death by signal N, or -1 on timeout.
 */
static int run_capture(const char *const argv[], char *out, size_t outlen, char *err,
		       size_t errlen, double timeout_s)
{
	size_t nout = 0;
	size_t nerr = 0;
	double end = now_ms() + timeout_s * 1000;
	int out_fd;
	int err_fd;
	pid_t pid;
	int st;

	out[0] = '\0';
	err[0] = '\0';
	pid = spawn_piped(argv, false, &out_fd, &err_fd);
	if (pid < 0)
		return -1;
	while (out_fd >= 0 || err_fd >= 0) {
		struct pollfd pfd[2] = {
			{ .fd = out_fd, .events = POLLIN },
			{ .fd = err_fd, .events = POLLIN },
		};
		double left = end - now_ms();

		if (left <= 0)
			break;
		if (poll(pfd, 2, (int)left + 1) <= 0)
			continue;
		if (pfd[0].revents)
			read_into(&out_fd, out, outlen, &nout);
		if (pfd[1].revents)
			read_into(&err_fd, err, errlen, &nerr);
	}
	if (out_fd >= 0 || err_fd >= 0) {
		if (out_fd >= 0)
			close(out_fd);
		if (err_fd >= 0)
			close(err_fd);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return exit_status(st);
}

/* A valid config, for runs where only a flag is wrong. */
static const char good_config[] =
	"{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\"}]}";

/* ---- bad configs ---- */

/*
 * One bad config: what the user wrote, and the key path and expectation
 * the error must name (besides the file's path, always checked). `also`
 * is one more piece the message must hold, or NULL.
 */
struct bad_config {
	const char *name;
	const char *json;
	const char *key;
	const char *expect;
	const char *also;
};

#define P0 "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\""
#define FAULT(f) P0 ",\"faults\":[" f "]}]}"

static const struct bad_config bad_configs[] = {
	{ "invalid JSON: the error's line and column follow the path",
	  "{\"providers\":\n  [ {\"name\": \"a\",\n     \"listen\": ,}]}\n",
	  "mock.json:3:16", "invalid JSON", NULL },
	{ "not an object", "[1, 2]", "top level", "expected an object", "an array" },
	{ "missing providers", "{}", "providers", "missing (required)", NULL },
	{ "empty providers array", "{\"providers\":[]}", "providers",
	  "expected a non-empty array", NULL },
	{ "providers not an array", "{\"providers\":{}}", "providers",
	  "expected a non-empty array", NULL },
	{ "provider missing name", "{\"providers\":[{\"listen\":\"127.0.0.1:0\"}]}",
	  "providers[0].name", "missing (required)", NULL },
	{ "missing listen", "{\"providers\":[{\"name\":\"a\"}]}",
	  "providers[0].listen", "missing (required)", NULL },
	{ "listen without port",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1\"}]}",
	  "providers[0].listen", "expected HOST:PORT", "\"127.0.0.1\"" },
	{ "listen port out of range",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:70000\"}]}",
	  "providers[0].listen", "0 to 65535", "70000" },
	{ "two providers on one port",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:9001\"},"
	  "{\"name\":\"b\",\"listen\":\"127.0.0.1:9001\"}]}",
	  "providers[1].listen", "expected a port no other provider uses", "providers[0]" },
	{ "duplicate names",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\"},"
	  "{\"name\":\"a\",\"listen\":\"127.0.0.1:0\"}]}",
	  "providers[1].name", "expected a name no other provider has", "providers[0]" },
	{ "unknown provider key (typo)", P0 ",\"ttft\":100}]}",
	  "providers[0].ttft", "unknown key", NULL },
	{ "negative ttft_ms", P0 ",\"ttft_ms\":-5}]}",
	  "providers[0].ttft_ms", "expected a number from 0", "-5" },
	{ "output_tokens 0", P0 ",\"output_tokens\":0}]}",
	  "providers[0].output_tokens", "expected a whole number from 1", "got 0" },
	{ "output_tokens not whole", P0 ",\"output_tokens\":2.5}]}",
	  "providers[0].output_tokens", "expected a whole number", "2.5" },
	{ "strict_model not a boolean", P0 ",\"strict_model\":\"yes\"}]}",
	  "providers[0].strict_model", "expected true or false", NULL },
	{ "unknown fault kind lists the kinds",
	  FAULT("{\"kind\":\"explode\",\"from_s\":0,\"to_s\":1}"),
	  "providers[0].faults[0].kind", "down, hang, status, slow, slow_tokens, stall, "
	  "truncate, error_event, reset, malformed, rate_limit", "explode" },
	{ "fault missing kind", FAULT("{\"from_s\":0,\"to_s\":1}"),
	  "providers[0].faults[0].kind", "missing (required)", NULL },
	{ "fault missing from_s", FAULT("{\"kind\":\"hang\",\"to_s\":1}"),
	  "providers[0].faults[0].from_s", "missing (required)", NULL },
	{ "fault from_s not a number",
	  FAULT("{\"kind\":\"hang\",\"from_s\":\"soon\",\"to_s\":1}"),
	  "providers[0].faults[0].from_s", "expected seconds after t0", "soon" },
	{ "to_s before from_s", FAULT("{\"kind\":\"hang\",\"from_s\":10,\"to_s\":5}"),
	  "providers[0].faults[0].to_s", "expected a time after from_s", NULL },
	{ "to_s equal to from_s", FAULT("{\"kind\":\"hang\",\"from_s\":10,\"to_s\":10}"),
	  "providers[0].faults[0].to_s", "expected a time after from_s", NULL },
	{ "probability 1.5",
	  FAULT("{\"kind\":\"hang\",\"from_s\":0,\"to_s\":10,\"probability\":1.5}"),
	  "providers[0].faults[0].probability", "expected a number", "1.5" },
	{ "probability 0",
	  FAULT("{\"kind\":\"hang\",\"from_s\":0,\"to_s\":10,\"probability\":0}"),
	  "providers[0].faults[0].probability", "above 0", NULL },
	{ "probability on down",
	  FAULT("{\"kind\":\"down\",\"from_s\":0,\"to_s\":10,\"probability\":0.5}"),
	  "providers[0].faults[0].probability", "not supported for kind \"down\"", NULL },
	{ "status 200 (must be 400..599)",
	  FAULT("{\"kind\":\"status\",\"from_s\":0,\"to_s\":10,\"status\":200}"),
	  "providers[0].faults[0].status", "from 400 to 599", "200" },
	/* add_ms is spelled right: it belongs to "slow". Saying only "unknown key,
	 * check its spelling" sends the user the wrong way; the message should
	 * say the key is not one of kind "hang". */
	{ "key of another kind (add_ms on hang)",
	  FAULT("{\"kind\":\"hang\",\"from_s\":0,\"to_s\":10,\"add_ms\":100}"),
	  "providers[0].faults[0].add_ms", "hang", NULL },
	{ "slow without add_ms", FAULT("{\"kind\":\"slow\",\"from_s\":0,\"to_s\":10}"),
	  "providers[0].faults[0].add_ms", "missing (required)", NULL },
	{ "rate_limit without rpm or tpm",
	  FAULT("{\"kind\":\"rate_limit\",\"from_s\":0,\"to_s\":10}"),
	  "providers[0].faults[0]", "rpm or tpm", NULL },
	{ "faults not an array", P0 ",\"faults\":{\"kind\":\"hang\"}}]}",
	  "providers[0].faults", "expected an array", NULL },
	{ "fault not an object", FAULT("\"hang\""),
	  "providers[0].faults[0]", "expected a fault object", NULL },
	{ "provider name with a slash",
	  "{\"providers\":[{\"name\":\"a/b\",\"listen\":\"127.0.0.1:0\"}]}",
	  "providers[0].name", "usable in a file name", "a/b" },
	{ "empty provider name",
	  "{\"providers\":[{\"name\":\"\",\"listen\":\"127.0.0.1:0\"}]}",
	  "providers[0].name", "expected a non-empty string", NULL },
	{ "listen on every interface",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"0.0.0.0:0\"}]}",
	  "providers[0].listen", "expected a loopback address", "--allow-remote" },
	{ "second provider listens on IPv6 any",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\"},"
	  "{\"name\":\"b\",\"listen\":\"[::]:0\"}]}",
	  "providers[1].listen", "expected a loopback address", "--allow-remote" },
	{ "second provider's fault is named by index",
	  "{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\"},"
	  "{\"name\":\"b\",\"listen\":\"127.0.0.1:0\",\"faults\":["
	  "{\"kind\":\"hang\",\"from_s\":0,\"to_s\":1},"
	  "{\"kind\":\"slow\",\"from_s\":0,\"to_s\":1,\"add_ms\":-1}]}]}",
	  "providers[1].faults[1].add_ms", "expected a number from 0", "-1" },
};
#define NBAD (sizeof(bad_configs) / sizeof(bad_configs[0]))

ParameterizedTestParameters(mockprov_cli, bad_config)
{
	static int idx[NBAD];
	size_t i;

	for (i = 0; i < NBAD; i++)
		idx[i] = (int)i;
	return cr_make_param_array(int, idx, NBAD);
}

ParameterizedTest(int *i, mockprov_cli, bad_config, .timeout = 10, .fini = teardown)
{
	const struct bad_config *c = &bad_configs[*i];
	const char *dir = make_tempdir();
	char path[128];
	char err[4096];
	const char *argv[] = { "mockprov", "--config", path, "--log-dir", dir, NULL };
	int rc;

	cr_assert_not_null(write_file(dir, "mock.json", c->json, path, sizeof(path)));
	rc = run_program(argv, err, sizeof(err), 5);

	cr_expect_eq(rc, 2, "[%s] exit status %d, stderr: %s", c->name, rc, err);
	cr_expect(strstr(err, path), "[%s] the message does not name the file %s: %s",
		  c->name, path, err);
	cr_expect(strstr(err, c->key), "[%s] the message does not name the key \"%s\": %s",
		  c->name, c->key, err);
	cr_expect(strstr(err, c->expect), "[%s] the message does not say \"%s\": %s",
		  c->name, c->expect, err);
	if (c->also)
		cr_expect(strstr(err, c->also), "[%s] the message does not mention \"%s\": %s",
			  c->name, c->also, err);
}

/* ---- flags ---- */

Test(mockprov_cli, help_prints_usage_on_stdout, .timeout = 10, .fini = teardown)
{
	const char *argv[] = { "mockprov", "--help", NULL };
	char out[4096];
	char err[1024];
	int rc = run_capture(argv, out, sizeof(out), err, sizeof(err), 5);

	cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
	cr_expect(strncmp(out, "usage: mockprov", 15) == 0, "stdout: %s", out);
	cr_expect(strstr(out, "--config FILE"), "stdout: %s", out);
	cr_expect(strstr(out, "--log-dir"), "stdout: %s", out);
	cr_expect(strstr(out, "--admin"), "stdout: %s", out);
	cr_expect(strstr(out, "--allow-remote"), "stdout: %s", out);
	cr_expect_str_empty(err, "stderr: %s", err);
}

/* A bad command line: its flags, and what stderr must mention. */
struct bad_flags {
	const char *name;
	const char *args[6];
	const char *expect;
	const char *also;
};

static const struct bad_flags bad_flags[] = {
	{ "unknown flag", { "--bogus", NULL }, "unknown option \"--bogus\"", "see mockprov --help" },
	{ "missing --config", { NULL }, "--config", NULL },
	{ "--config without a value", { "--config", NULL }, "--config", NULL },
	{ "--t0 abc", { "--config", "CONFIG", "--t0", "abc", NULL }, "--t0", "abc" },
	{ "--seed -1", { "--config", "CONFIG", "--seed", "-1", NULL }, "--seed", "-1" },
	{ "--seed 1x", { "--config", "CONFIG", "--seed", "1x", NULL }, "--seed", "1x" },
	{ "--log-level loud", { "--config", "CONFIG", "--log-level", "loud", NULL },
	  "--log-level", "loud" },
	{ "--log-dir missing", { "--config", "CONFIG", "--log-dir", "DIR/no/such/dir", NULL },
	  "--log-dir", "no/such/dir" },
	{ "--admin without a port", { "--config", "CONFIG", "--admin", "nope", NULL },
	  "--admin", "nope" },
	{ "--admin on every interface", { "--config", "CONFIG", "--admin", "0.0.0.0:0", NULL },
	  "--admin: 0.0.0.0:0 is not a loopback address", "--allow-remote" },
	{ "--admin on a non-loopback IPv6", { "--config", "CONFIG", "--admin", "[::]:0", NULL },
	  "loopback", "--allow-remote" },
	{ "stray argument", { "--config", "CONFIG", "extra", NULL }, "extra", NULL },
	{ "nonexistent config", { "--config", "DIR/missing.json", NULL },
	  "missing.json", "cannot open" },
};
#define NFLAGS (sizeof(bad_flags) / sizeof(bad_flags[0]))

ParameterizedTestParameters(mockprov_cli, bad_flags)
{
	static int idx[NFLAGS];
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		idx[i] = (int)i;
	return cr_make_param_array(int, idx, NFLAGS);
}

/* "CONFIG" stands for a valid config file, "DIR..." for a path in the temp dir. */
ParameterizedTest(int *i, mockprov_cli, bad_flags, .timeout = 10, .fini = teardown)
{
	const struct bad_flags *c = &bad_flags[*i];
	const char *dir = make_tempdir();
	char config[128];
	char paths[6][160];
	const char *argv[8] = { "mockprov" };
	char out[4096];
	char err[4096];
	size_t k;
	int rc;

	cr_assert_not_null(write_file(dir, "ok.json", good_config, config, sizeof(config)));
	for (k = 0; c->args[k]; k++) {
		if (strcmp(c->args[k], "CONFIG") == 0) {
			argv[k + 1] = config;
		} else if (strncmp(c->args[k], "DIR", 3) == 0) {
			snprintf(paths[k], sizeof(paths[k]), "%s%s", dir, c->args[k] + 3);
			argv[k + 1] = paths[k];
		} else {
			argv[k + 1] = c->args[k];
		}
	}
	argv[k + 1] = NULL;
	rc = run_capture(argv, out, sizeof(out), err, sizeof(err), 5);

	cr_expect_eq(rc, 2, "[%s] exit status %d, stderr: %s", c->name, rc, err);
	cr_expect(strstr(err, c->expect), "[%s] stderr does not mention \"%s\": %s",
		  c->name, c->expect, err);
	if (c->also)
		cr_expect(strstr(err, c->also), "[%s] stderr does not mention \"%s\": %s",
			  c->name, c->also, err);
	cr_expect_null(strstr(out, "ready"), "[%s] it started anyway: %s", c->name, out);
}

/* Binds and listens on 127.0.0.1:0; returns the fd and the port. */
static int busy_port(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0, "socket: %s", strerror(errno));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(fd, 4), 0, "listen: %s", strerror(errno));
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

Test(mockprov_cli, port_in_use_names_provider_and_address, .timeout = 10, .fini = teardown)
{
	const char *dir = make_tempdir();
	char config[128];
	char json[256];
	char addr[64];
	char out[4096];
	char err[4096];
	const char *argv[] = { "mockprov", "--config", config, "--log-dir", dir, NULL };
	int port;
	int fd = busy_port(&port);
	int rc;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(json, sizeof(json),
		 "{\"providers\":[{\"name\":\"first\",\"listen\":\"127.0.0.1:0\"},"
		 "{\"name\":\"taken\",\"listen\":\"%s\"}]}", addr);
	cr_assert_not_null(write_file(dir, "mock.json", json, config, sizeof(config)));
	rc = run_capture(argv, out, sizeof(out), err, sizeof(err), 5);
	close(fd);

	cr_expect(rc > 0 && rc < 128, "exit status %d, stderr: %s", rc, err);
	cr_expect(strstr(err, "taken"), "stderr does not name the provider: %s", err);
	cr_expect(strstr(err, addr), "stderr does not name %s: %s", addr, err);
	cr_expect_null(strstr(out, "ready"), "it became ready anyway: %s", out);
}

/* ---- signals ---- */

/* Opens a connection to HOST:PORT and sends a chat completion on it. */
static int send_raw_chat(const char *hostport)
{
	struct sockaddr_storage a;
	char req[512];
	const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	int fd;
	int n;

	cr_assert_eq(opt_parse_hostport(hostport, &a), 0, "address %s", hostport);
	fd = socket(a.ss_family, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s",
		     strerror(errno));
	n = snprintf(req, sizeof(req),
		     "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
		     "Content-Type: application/json\r\nx-request-id: in-flight\r\n"
		     "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	return fd;
}

/* The admin's /state entry for a provider: its number `key`, or -1. */
static double state_number(const struct mock_proc *m, const char *name, const char *key)
{
	struct http_result r;
	char url[128];
	const cJSON *p;
	cJSON *root;
	double v = -1;

	snprintf(url, sizeof(url), "http://%s/state", m->admin_addr);
	if (http_do(url, NULL, &r) || r.status != 200) {
		http_result_free(&r);
		return -1;
	}
	root = cJSON_Parse(r.body);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "providers")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(p, key);

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 && cJSON_IsNumber(x))
			v = x->valuedouble;
	}
	cJSON_Delete(root);
	http_result_free(&r);
	return v;
}

/*
 * Starts a mock whose provider hangs, answers one request on a second
 * provider, leaves one hanging request in flight, then stops it with sig:
 * it must exit 0 with both logs renamed into place and holding those rows.
 */
static void stop_with(int sig)
{
	static const char config[] =
		"{\"providers\":["
		"{\"name\":\"ok\",\"listen\":\"127.0.0.1:0\",\"ttft_ms\":1,\"output_tokens\":2},"
		"{\"name\":\"stuck\",\"listen\":\"127.0.0.1:0\",\"faults\":["
		"{\"kind\":\"hang\",\"from_s\":-10,\"to_s\":3600}]}]}";
	struct mock_proc *m = &mock;
	struct http_result r;
	struct csv_table log;
	char url[128];
	char body[256];
	char path[400];
	struct http_opts o = { .body = chat_body(false, body, sizeof(body)) };
	double end;
	int fd;
	int rc;
	const char *names[] = { "ok", "stuck" };
	size_t i;

	cr_assert_eq(mock_start(m, config, 0), 0);
	cr_assert_eq(http_do(mock_url(m, "ok", "/v1/chat/completions", url, sizeof(url)),
			     &o, &r), 0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);

	fd = send_raw_chat(mock_addr(m, "stuck"));
	end = now_ms() + 3000;
	while (state_number(m, "stuck", "in_flight") < 1 && now_ms() < end)
		usleep(5000);	/* no event tells us the request was read */
	cr_expect_eq(state_number(m, "stuck", "in_flight"), 1);

	rc = mock_stop(m, sig);
	close(fd);
	cr_expect_eq(rc, 0, "exit status %d after signal %d", rc, sig);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%.255s/mock-%s.csv", m->dir, names[i]);
		cr_expect(file_exists(path), "%s is missing", path);
		snprintf(path, sizeof(path), "%.255s/mock-%s.csv.tmp", m->dir, names[i]);
		cr_expect(!file_exists(path), "%s was left behind", path);
	}
	cr_assert_eq(mock_log(m, "ok", &log), 0);
	cr_assert_eq(log.nrows, 2, "rows: %zu", log.nrows);
	cr_expect_str_eq(csv_get(&log, 1, "outcome"), "completed");
	csv_free(&log);
	cr_assert_eq(mock_log(m, "stuck", &log), 0);
	cr_assert_eq(log.nrows, 2, "the in-flight request was not logged: %zu rows", log.nrows);
	cr_expect_str_eq(csv_get(&log, 1, "request_id"), "in-flight");
	cr_expect_str_eq(csv_get(&log, 1, "fault"), "hang");
	cr_expect_str_eq(csv_get(&log, 1, "outcome"), "faulted");
	csv_free(&log);
}

Test(mockprov_cli, sigint_commits_logs_and_exits_0, .timeout = 20, .fini = teardown)
{
	stop_with(SIGINT);
}

Test(mockprov_cli, sigterm_commits_logs_and_exits_0, .timeout = 20, .fini = teardown)
{
	stop_with(SIGTERM);
}

/* ---- a kill, and a restart on the same port ---- */

/*
 * A TCP port on 127.0.0.1 that nothing holds now, chosen below the
 * kernel's ephemeral range (32768 and up by default), so that neither a
 * port-0 listener nor an outgoing connection of a test running in parallel
 * takes it while mockprov is down between a kill and its restart.
 */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int start = (int)(getpid() % 12000);
	int off = 0;
	int i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 500; i++) {
		int port = 20000 + (start + 97 * i) % 12000;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int rc;

		cr_assert(fd >= 0, "socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &off, sizeof(off));
		a.sin_port = htons((uint16_t)port);
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (rc == 0)
			return port;
	}
	cr_assert_fail("no free port from 20000 to 31999");
	return -1;
}

/* One chat completion with x-request-id rid; asserts a 200. */
static void chat_ok(const char *url, const char *rid)
{
	char body[256];
	char hdr[64];
	const char *hdrs[] = { hdr, NULL };
	struct http_opts o = { .body = chat_body(false, body, sizeof(body)), .headers = hdrs };
	struct http_result r;

	snprintf(hdr, sizeof(hdr), "x-request-id: %s", rid);
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.status, 200, "%s: curl %d %s, status %ld", rid, r.code, r.errbuf, r.status);
	http_result_free(&r);
}

/* Lines in a file, or -1 when it cannot be read. */
static long count_lines(const char *path)
{
	FILE *fp = fopen(path, "r");
	long n = 0;
	int c;

	if (!fp)
		return -1;
	while ((c = fgetc(fp)) != EOF)
		n += c == '\n';
	fclose(fp);
	return n;
}

/*
 * The runner's crash test: mockprov is killed (SIGKILL, no chance to
 * commit its log) and started again on the same port with the same --t0
 * and --log-dir. The restarted one continues mock-p.csv.tmp, so the log it
 * commits on SIGTERM has the rows of both lives under one header.
 */
Test(mockprov_cli, kill_and_restart_keeps_the_log, .timeout = 20, .fini = teardown)
{
	static const char *const cols[] = { "t_ms", "request_id", "streaming", "fault",
					    "status", "ttft_ms", "dur_ms", "tokens_out",
					    "outcome", "kind" };
	static const char *const rids[] = { "life1-a", "life1-b", "life1-c", "life2-a" };
	const char *dir = make_tempdir();
	char json[256];
	char url[128];
	char tmp[128];
	char csv[128];
	char addr[32];
	/* Both lives: the same config, port, --t0 and --log-dir. */
	const struct mock_opts o = { .t0 = unix_ms(), .dir = dir };
	struct csv_table log;
	double end;
	int port = free_port();
	size_t i;
	int rc;

	snprintf(json, sizeof(json),
		 "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:%d\",\"ttft_ms\":0,"
		 "\"token_ms\":0,\"output_tokens\":2}]}", port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/chat/completions", port);
	snprintf(tmp, sizeof(tmp), "%s/mock-p.csv.tmp", dir);
	snprintf(csv, sizeof(csv), "%s/mock-p.csv", dir);

	cr_assert_eq(mock_start_opts(&mock, json, &o), 0);
	for (i = 0; i < 3; i++)
		chat_ok(url, rids[i]);
	/* A row reaches the kernel at the end of the loop iteration that wrote
	 * it, which may come after the client has its answer: wait for it. */
	end = now_ms() + 3000;
	while (count_lines(tmp) < 4 && now_ms() < end)
		usleep(2000);	/* polling a file: no event to wait on */
	cr_assert_eq(count_lines(tmp), 4, "%s: the header and 3 rows before the kill", tmp);
	rc = mock_stop(&mock, SIGKILL);
	cr_assert_eq(rc, 128 + SIGKILL, "exit status %d", rc);
	cr_assert(!file_exists(csv), "%s committed by a killed process", csv);

	cr_assert_eq(mock_start_opts(&mock, json, &o), 0);
	cr_assert_eq(mock.nprov, 1);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_assert_str_eq(mock.prov_addr[0], addr, "the restart listens elsewhere");
	chat_ok(url, rids[3]);
	rc = mock_stop(&mock, SIGTERM);
	cr_assert_eq(rc, 0, "exit status %d after SIGTERM", rc);
	cr_assert(!file_exists(tmp), "%s was left behind", tmp);

	cr_assert_eq(csv_read(csv, &log), 0, "no %s", csv);
	cr_assert_eq(log.nrows, 5, "%zu lines: one header and 4 rows expected", log.nrows);
	cr_assert_eq(log.ncols, 10);
	for (i = 0; i < 10; i++)
		cr_assert_str_eq(log.rows[0][i], cols[i]);
	for (i = 1; i < log.nrows; i++) {
		cr_assert_str_eq(csv_get(&log, i, "request_id"), rids[i - 1], "row %zu", i);
		cr_assert_str_eq(csv_get(&log, i, "outcome"), "completed", "row %zu", i);
		/* One t0 for both lives: time runs on across the restart. */
		if (i > 1)
			cr_assert_gt(strtod(csv_get(&log, i, "t_ms"), NULL),
				     strtod(csv_get(&log, i - 1, "t_ms"), NULL), "row %zu", i);
	}
	csv_free(&log);
}

/* ---- a request log that cannot be written whole ---- */

/* Reads a whole small file into out (NUL-terminated); "" when it cannot. */
static void read_text(const char *path, char *out, size_t len)
{
	FILE *fp = fopen(path, "r");
	size_t n = 0;

	if (fp) {
		n = fread(out, 1, len - 1, fp);
		fclose(fp);
	}
	out[n] = '\0';
}

/* How many times needle occurs in hay. */
static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

Test(mockprov_cli, listen_at_opens_the_port_at_its_time, .timeout = 20, .fini = teardown)
{
	/*
	 * --listen-at: the config is loaded at once, the port opened 800 ms
	 * after t0 and not before — the runner starts a restart's process
	 * ahead with it. A connection tried meanwhile is refused.
	 */
	const char *dir = make_tempdir();
	const struct mock_opts o = { .t0 = unix_ms(), .dir = dir, .listen_at_ms = 800 };
	char json[256];
	char url[128];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int port = free_port();
	int fd;
	double ready;

	snprintf(json, sizeof(json),
		 "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:%d\",\"ttft_ms\":0}]}",
		 port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/chat/completions", port);
	cr_assert_eq(mock_start_opts(&mock, json, &o), 0);
	ready = (double)(unix_ms() - o.t0);
	cr_assert_geq(ready, 800, "ready %.0f ms after t0, before its --listen-at", ready);
	chat_ok(url, "after");
	mock_stop(&mock, SIGTERM);

	/*
	 * Started again, to listen 3 s on: every connection tried in the first
	 * 2.5 s is refused (polled: the property holds throughout, there is no
	 * event to wait on), and a SIGTERM meanwhile is a clean stop.
	 */
	{
		const char *argv[] = { "mockprov", "--config", mock.config_path, "--t0", NULL,
				       "--listen-at", "3000", "--log-dir", dir, NULL };
		char t0s[32];
		struct lg_proc p;
		double start = (double)unix_ms();
		int tries = 0;

		snprintf(t0s, sizeof(t0s), "%lld", (long long)start);
		argv[4] = t0s;
		cr_assert_eq(lg_spawn(&p, argv), 0);
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		while ((double)unix_ms() - start < 2500) {
			int rc, e;

			fd = socket(AF_INET, SOCK_STREAM, 0);
			rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
			e = errno;
			close(fd);
			cr_assert_neq(rc, 0, "a connection was accepted %.0f ms after t0, before "
				      "--listen-at 3000", (double)unix_ms() - start);
			cr_assert_eq(e, ECONNREFUSED);
			tries++;
			usleep(50 * 1000);
		}
		cr_assert_gt(tries, 10);
		kill(p.pid, SIGTERM);
		cr_assert_eq(lg_wait(&p, 5), 0, "exit status after SIGTERM while waiting to listen");
	}
}

/*
 * A full disk, made real with RLIMIT_FSIZE: every write past 4 KiB fails
 * with EFBIG. mockprov goes on answering, says once on stderr which file it
 * could not write and why, keeps the log under its .tmp name (a short log
 * must not pass for a whole one) and exits 1 when stopped.
 */
Test(mockprov_cli, log_write_error_keeps_tmp_and_exits_1, .timeout = 40, .fini = teardown)
{
	static const char json[] =
		"{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"ttft_ms\":0,"
		"\"token_ms\":0,\"output_tokens\":1}]}";
	const struct mock_opts o = { .fsize_limit = 4096 };
	char url[128];
	char rid[32];
	char path[400];
	char err[8192];
	char want[64];
	struct stat st;
	int i;
	int rc;

	cr_assert_eq(mock_start_opts(&mock, json, &o), 0);
	mock_url(&mock, "p", "/v1/chat/completions", url, sizeof(url));
	/* About 45 bytes a row: 300 rows are over three times the limit. */
	for (i = 0; i < 300; i++) {
		snprintf(rid, sizeof(rid), "row-%03d", i);
		chat_ok(url, rid);
	}
	rc = mock_stop(&mock, SIGTERM);
	snprintf(path, sizeof(path), "%.255s/stderr.log", mock.dir);
	read_text(path, err, sizeof(err));
	cr_expect_eq(rc, 1, "exit status %d after SIGTERM with a short log; stderr: %s", rc, err);

	snprintf(path, sizeof(path), "%.255s/mock-p.csv", mock.dir);
	cr_expect(!file_exists(path), "the short log was renamed to %s", path);
	snprintf(path, sizeof(path), "%.255s/mock-p.csv.tmp", mock.dir);
	cr_assert_eq(stat(path, &st), 0, "%s is gone", path);
	cr_expect_leq(st.st_size, 4096, "%s: %lld bytes past the limit", path,
		      (long long)st.st_size);

	cr_expect_eq(count_of(err, path), 1, "stderr must name %s once: %s", path, err);
	snprintf(want, sizeof(want), "%s", strerror(EFBIG));
	cr_expect(strstr(err, want), "stderr does not say \"%s\": %s", want, err);
}

/* ---- listening beyond loopback ---- */

/*
 * --allow-remote lets both the admin API and a provider listen on every
 * interface: mockprov becomes ready, says where, and stops cleanly. No
 * traffic is sent: binding is all this shows.
 */
Test(mockprov_cli, allow_remote_listens_on_any, .timeout = 20, .fini = teardown)
{
	static const char json[] =
		"{\"providers\":[{\"name\":\"wide\",\"listen\":\"0.0.0.0:0\"}]}";
	const char *dir = make_tempdir();
	char config[128];
	const char *argv[] = { "mockprov", "--config", config, "--log-dir", dir,
			       "--admin", "0.0.0.0:0", "--allow-remote", NULL };
	char out[4096] = "";
	char err[4096] = "";
	size_t nout = 0;
	size_t nerr = 0;
	double end = now_ms() + 5000;
	int out_fd;
	int err_fd;
	int st;
	pid_t pid;

	cr_assert_not_null(write_file(dir, "mock.json", json, config, sizeof(config)));
	pid = spawn_piped(argv, false, &out_fd, &err_fd);
	cr_assert(pid > 0);
	while (!strstr(out, "ready") && out_fd >= 0 && now_ms() < end) {
		struct pollfd pfd[2] = {
			{ .fd = out_fd, .events = POLLIN },
			{ .fd = err_fd, .events = POLLIN },
		};

		if (poll(pfd, 2, (int)(end - now_ms()) + 1) <= 0)
			continue;
		if (pfd[0].revents)
			read_into(&out_fd, out, sizeof(out), &nout);
		if (pfd[1].revents)
			read_into(&err_fd, err, sizeof(err), &nerr);
	}
	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	cr_expect(strstr(out, "ready"), "it did not start; stdout: %s stderr: %s", out, err);
	cr_expect(strstr(out, "listening wide 0.0.0.0:"), "stdout: %s", out);
	cr_expect(strstr(out, "admin 0.0.0.0:"), "stdout: %s", out);
	cr_expect_eq(exit_status(st), 0, "exit status %d, stderr: %s", exit_status(st), err);
}
