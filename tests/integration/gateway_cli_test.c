/*
 * bin/gateway as a program: a bad command line or config exits 2 naming
 * the file and the key; one that cannot start exits 1; --allow-remote
 * lets a remote base_url through; SIGTERM drains (the request in flight
 * gets its answer with Connection: close, new connections are refused,
 * idle ones are closed, exit 0) and a second signal cuts what is left.
 *
 * Configs are written with single quotes (gw_template turns them into
 * JSON); @NAME@ stands for mock provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "common/opt.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"

/* ---- fixtures ---- */

static struct mock_proc mock;
static struct gw_proc gw;

/* A chat request run on a thread of its own (one per test at most). */
struct bg_request {
	pthread_t thread;
	bool started;
	const char *alias;
	struct http_result r;
};

static struct bg_request bg;

/* The gateway is stopped first, so a request still running ends and its thread is joined. */
static void teardown(void)
{
	gw_cleanup();
	if (bg.started)
		pthread_join(bg.thread, NULL);
	http_result_free(&bg.r);
	memset(&bg, 0, sizeof(bg));
	mock_cleanup(&mock);
}

TestSuite(gateway_cli, .fini = teardown);

/* ---- bad configs ---- */

/* A valid config's parts, for the cases to spoil one of. */
#define PROV_OK "'p':{'base_url':'http://127.0.0.1:9/v1'}"
#define TARGET_OK "{'provider':'p','model':'m'}"
#define MODELS_OK "'models':{'chat':{'targets':[" TARGET_OK "]}}"
/* Provider names of 128 and 129 characters from the README's set. */
#define N16 "Ab0_-.cdEFgh1234"
#define N128 N16 N16 N16 N16 N16 N16 N16 N16
#define N129 N128 "x"

/* A config the gateway must refuse, and what its message must name. */
struct bad_config {
	const char *what;
	const char *config;		/* a template: single quotes */
	const char *env;		/* one "NAME" to unset or "NAME=V" to set, or NULL */
	const char *needles[3];		/* each must appear in stderr (besides the file) */
};

static const struct bad_config bad_configs[] = {
	{ "unknown top-level key",
	  "{'bogus_key':1,'providers':{" PROV_OK "}," MODELS_OK "}", NULL, { "bogus_key" } },
	{ "unknown provider key",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1','timeot_ms':5}}," MODELS_OK "}",
	  NULL, { "timeot_ms" } },
	{ "key given twice",
	  "{'request_deadline_ms':1000,'request_deadline_ms':2000,'providers':{" PROV_OK "},"
	  MODELS_OK "}", NULL, { "request_deadline_ms" } },
	{ "target of an undefined provider",
	  "{'providers':{" PROV_OK "},'models':{'chat':{'targets':[{'provider':'ghost','model':'m'}]}}}",
	  NULL, { "targets", "ghost" } },
	{ "target given twice",
	  "{'providers':{" PROV_OK "},'models':{'chat':{'targets':[" TARGET_OK "," TARGET_OK "]}}}",
	  NULL, { "targets" } },
	{ "no targets",
	  "{'providers':{" PROV_OK "},'models':{'chat':{'targets':[]}}}", NULL, { "targets" } },
	{ "deadline below its bound",
	  "{'request_deadline_ms':0,'providers':{" PROV_OK "}," MODELS_OK "}", NULL,
	  { "request_deadline_ms" } },
	{ "max_body_bytes below its bound",
	  "{'max_body_bytes':10,'providers':{" PROV_OK "}," MODELS_OK "}", NULL,
	  { "max_body_bytes" } },
	{ "timeout_ms above its bound",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1','timeout_ms':3600001}}," MODELS_OK "}",
	  NULL, { "timeout_ms" } },
	{ "cooldown_jitter of 1",
	  "{'breaker':{'cooldown_jitter':1},'providers':{" PROV_OK "}," MODELS_OK "}", NULL,
	  { "cooldown_jitter" } },
	{ "cooldown_max_ms under cooldown_ms",
	  "{'breaker':{'cooldown_ms':5000,'cooldown_max_ms':1000},'providers':{" PROV_OK "},"
	  MODELS_OK "}", NULL, { "cooldown_max_ms" } },
	{ "max_attempts 0",
	  "{'providers':{" PROV_OK "},'models':{'chat':{'targets':[" TARGET_OK "],'max_attempts':0}}}",
	  NULL, { "max_attempts" } },
	{ "retries above 10",
	  "{'retry':{'max_retries':11},'providers':{" PROV_OK "}," MODELS_OK "}", NULL,
	  { "max_retries" } },
	{ "when_all_open in a provider's breaker",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1','breaker':"
	  "{'when_all_open':'fail_fast'}}}," MODELS_OK "}", NULL, { "when_all_open" } },
	{ "api_key_env naming an unset variable",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1','api_key_env':'FL_GW_UNSET_KEY'}},"
	  MODELS_OK "}", "FL_GW_UNSET_KEY", { "api_key_env", "FL_GW_UNSET_KEY" } },
	{ "non-loopback base_url",
	  "{'providers':{'p':{'base_url':'http://10.1.2.3:9/v1'}}," MODELS_OK "}", NULL,
	  { "base_url" } },
	{ "base_url not http",
	  "{'providers':{'p':{'base_url':'ftp://127.0.0.1:9/v1'}}," MODELS_OK "}", NULL,
	  { "base_url" } },
	{ "base_url whose user part looks like loopback (the host is 10.1.2.3)",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9@@10.1.2.3/v1'}}," MODELS_OK "}", NULL,
	  { "base_url" } },
	{ "base_url a host name",
	  "{'providers':{'p':{'base_url':'http://example.com/v1'}}," MODELS_OK "}", NULL,
	  { "base_url" } },
	{ "no models", "{'providers':{" PROV_OK "}}", NULL, { "models" } },
	{ "no providers", "{" MODELS_OK "}", NULL, { "providers" } },
	{ "a provider name with a space",
	  "{'providers':{'a b':{'base_url':'http://127.0.0.1:9/v1'}},"
	  "'models':{'chat':{'targets':[{'provider':'a b','model':'m'}]}}}", NULL, { "a b" } },
	{ "a provider name over 128 characters", "{'providers':{'" N129 "':"
	  "{'base_url':'http://127.0.0.1:9/v1'}},'models':{'chat':{'targets':[{'provider':'"
	  N129 "','model':'m'}]}}}", NULL, { "providers" } },
	{ "a provider name with ':'",
	  "{'providers':{'eu:west':{'base_url':'http://127.0.0.1:9/v1'}},"
	  "'models':{'chat':{'targets':[{'provider':'eu:west','model':'m'}]}}}", NULL,
	  { "eu:west" } },
	{ "an alias with a space",
	  "{'providers':{" PROV_OK "},'models':{'my chat':{'targets':[" TARGET_OK "]}}}", NULL,
	  { "my chat" } },
	{ "an empty upstream model name",
	  "{'providers':{" PROV_OK "},'models':{'chat':{'targets':[{'provider':'p','model':''}]}}}",
	  NULL, { "model" } },
	{ "a base_url with a query",
	  "{'providers':{'p':{'base_url':'http://127.0.0.1:9/v1?x=1'}}," MODELS_OK "}", NULL,
	  { "base_url" } },
	{ "a string for a number",
	  "{'request_deadline_ms':'5000','providers':{" PROV_OK "}," MODELS_OK "}", NULL,
	  { "request_deadline_ms" } },
	{ "not JSON", "{'providers':", NULL, { NULL } },
	{ "text after the JSON", "{'providers':{" PROV_OK "}," MODELS_OK "} x", NULL, { NULL } },
};

/*
 * Each bad config makes the gateway exit 2 at once, its message naming
 * the config file and the key (and what was wrong, as the case says).
 * Every case is run; the ones that fail are listed together.
 */
Test(gateway_cli, bad_config_exits_2_naming_file_and_key, .timeout = 60)
{
	static const char *const listen_any[] = { "--listen", "127.0.0.1:0", NULL };
	char failed[16384] = "";
	size_t used = 0;
	size_t nfailed = 0;
	size_t i;

	for (i = 0; i < sizeof(bad_configs) / sizeof(bad_configs[0]); i++) {
		const struct bad_config *c = &bad_configs[i];
		const char *env[] = { c->env, NULL };
		char cfg[2048];
		char path[256];
		char err[8192];
		const char *missing = NULL;
		size_t k;
		int rc;

		cr_assert_not_null(gw_template(cfg, sizeof(cfg), c->config, NULL), "%s", c->what);
		/* --listen: a config wrongly taken must not take the config's default port. */
		rc = gw_run(cfg, listen_any, c->env ? env : NULL, path, sizeof(path), err,
			    sizeof(err), 2000);
		if (!strstr(err, path))
			missing = path;
		for (k = 0; k < 3 && c->needles[k] && !missing; k++)
			if (!strstr(err, c->needles[k]))
				missing = c->needles[k];
		if ((rc != 2 || missing) && used < sizeof(failed)) {
			used += (size_t)snprintf(failed + used, sizeof(failed) - used,
						 "  - %s: %s %d%s%s; stderr: %s", c->what,
						 rc < 0 ? "it took the config: still running after 2 s, exit"
							: "exit", rc,
						 missing ? ", the message does not name " : "",
						 missing ? missing : "", err[0] ? err : "(none)\n");
			nfailed++;
		}
	}
	if (nfailed)
		fprintf(stderr, "bad configs not refused as they should be:\n%s", failed);
	cr_assert_eq(nfailed, 0, "%zu bad configs not refused as they should be (listed above)",
		     nfailed);
}

/* A config at the edge of the README's bounds, which must start. */
static const struct {
	const char *what;
	const char *config;
} good_configs[] = {
	{ "base_url on localhost",
	  "{'providers':{'p':{'base_url':'http://localhost:9/v1'}}," MODELS_OK "}" },
	{ "base_url on [::1]",
	  "{'providers':{'p':{'base_url':'http://[::1]:9/v1'}}," MODELS_OK "}" },
	{ "base_url on 127.0.0.2 (127.0.0.0/8)",
	  "{'providers':{'p':{'base_url':'http://127.0.0.2:9/v1'}}," MODELS_OK "}" },
	{ "https base_url",
	  "{'providers':{'p':{'base_url':'https://127.0.0.1:9/v1'}}," MODELS_OK "}" },
	{ "a 128-character provider name of letters, digits, '_', '-' and '.'",
	  "{'providers':{'" N128 "':{'base_url':'http://127.0.0.1:9/v1'}},"
	  "'models':{'chat':{'targets':[{'provider':'" N128 "','model':'m'}]}}}" },
	{ "an alias with '/', ':', '+' and '@' (like openai/gpt-4o)",
	  "{'providers':{" PROV_OK "},'models':{'openai/gpt-4o:mini+x@@y':{'targets':["
	  TARGET_OK "]}}}" },
	{ "every bound at its edge",
	  "{'request_deadline_ms':3600000,'max_body_bytes':1024,'header_timeout_ms':1,"
	  "'idle_timeout_ms':3600000,'max_connections':1,'seed':0,"
	  "'retry':{'max_retries':10,'base_ms':0,'cap_ms':0,'min_attempt_ms':1},"
	  "'breaker':{'consecutive_failures':0,'failure_ratio':1,'window_ms':60,'buckets':60,"
	  "'min_requests':0,'slow_ms':0,'slow_ratio':0,'cooldown_ms':1,'cooldown_multiplier':1000,"
	  "'cooldown_max_ms':86400000,'cooldown_jitter':0.999,'half_open_probes':1000,"
	  "'when_all_open':'fail_fast'},'stream':{'first_token_timeout_ms':600000,"
	  "'stall_timeout_ms':1},"
	  "'providers':{'p':{'base_url':'http://127.0.0.1:9/v1','timeout_ms':1,"
	  "'connect_timeout_ms':600000,'price_per_1k':{'input':1000,'output':0}}},"
	  "'models':{'chat':{'targets':[" TARGET_OK "],'max_attempts':64}}}" },
};

/* Configs at the edges of the README's bounds start and stop cleanly (every case run). */
Test(gateway_cli, configs_at_the_bounds_start, .timeout = 60)
{
	char failed[8192] = "";
	size_t used = 0;
	size_t nfailed = 0;
	size_t i;

	for (i = 0; i < sizeof(good_configs) / sizeof(good_configs[0]); i++) {
		char cfg[2048];
		char err[4096];
		int rc;

		cr_assert_not_null(gw_template(cfg, sizeof(cfg), good_configs[i].config, NULL));
		rc = gw_start(&gw, cfg, NULL);
		if (rc) {
			used += (size_t)snprintf(failed + used, sizeof(failed) - used,
						 "  - %s: did not start: %s", good_configs[i].what,
						 gw_stderr(&gw, err, sizeof(err)));
			nfailed++;
			continue;
		}
		rc = gw_stop(&gw, SIGTERM, 5000);
		if (rc) {
			used += (size_t)snprintf(failed + used, sizeof(failed) - used,
						 "  - %s: exit %d after SIGTERM\n", good_configs[i].what,
						 rc);
			nfailed++;
		}
	}
	if (nfailed)
		fprintf(stderr, "configs within the README's bounds refused:\n%s", failed);
	cr_assert_eq(nfailed, 0, "%zu configs within the README's bounds refused (listed above)",
		     nfailed);
}

/* A bad command line exits 2 and names the flag (the config itself is valid). */
Test(gateway_cli, bad_command_line_exits_2, .timeout = 20)
{
	static const char cfg[] = "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\"}},"
				  "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}";
	static const struct {
		const char *what;
		const char *args[4];
		const char *needle;
	} cases[] = {
		{ "an unknown flag", { "--frobnicate", NULL }, "--frobnicate" },
		{ "a bad --listen", { "--listen", "nowhere:x", NULL }, "--listen" },
		{ "a bad --log-level", { "--log-level", "loud", NULL }, "--log-level" },
		{ "a bad --seed", { "--seed", "-3", NULL }, "--seed" },
		{ "a flag without its value", { "--events", NULL }, "--events" },
	};
	static const char *const no_config[] = { "gateway", "--listen", "127.0.0.1:0", NULL };
	char path[256];
	char err[4096];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = gw_run(cfg, cases[i].args, NULL, path, sizeof(path), err, sizeof(err), 5000);
		cr_assert_eq(rc, 2, "%s: exit %d; stderr:\n%s", cases[i].what, rc, err);
		cr_assert(strstr(err, cases[i].needle), "%s: no %s in:\n%s", cases[i].what,
			  cases[i].needle, err);
	}
	rc = run_program(no_config, err, sizeof(err), 5);
	cr_assert_eq(rc, 2, "no --config: exit %d; stderr:\n%s", rc, err);
	cr_assert(strstr(err, "--config"), "no --config: %s", err);
}

/*
 * A gateway that cannot start for another reason exits 1: its port is
 * taken (by another gateway), or its events file cannot be opened.
 */
Test(gateway_cli, cannot_start_exits_1, .timeout = 20)
{
	static const char cfg[] = "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\"}},"
				  "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}";
	const char *busy[] = { "--listen", NULL, NULL };
	static const char *const no_events[] = { "--listen", "127.0.0.1:0", "--events",
						 "/nonexistent-dir/events.jsonl", NULL };
	char path[256];
	char err[4096];
	int rc;

	cr_assert_eq(gw_start(&gw, cfg, NULL), 0);
	busy[1] = gw.addr;
	rc = gw_run(cfg, busy, NULL, path, sizeof(path), err, sizeof(err), 5000);
	cr_assert_eq(rc, 1, "port %s in use: exit %d; stderr:\n%s", gw.addr, rc, err);
	rc = gw_run(cfg, no_events, NULL, path, sizeof(path), err, sizeof(err), 5000);
	cr_assert_eq(rc, 1, "events file unopenable: exit %d; stderr:\n%s", rc, err);
	cr_assert(strstr(err, "/nonexistent-dir/events.jsonl"), "%s", err);
	cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0);
}

/* A remote base_url is refused without --allow-remote, and accepted with it. */
Test(gateway_cli, allow_remote_lets_a_remote_base_url_through, .timeout = 20)
{
	static const char cfg[] = "{\"providers\":{\"p\":{\"base_url\":\"http://10.1.2.3:9/v1\"}},"
				  "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}}";
	static const char *const args[] = { "--allow-remote", NULL };
	const struct gw_opts o = { .args = args };
	char path[256];
	char err[4096];
	int rc;

	rc = gw_run(cfg, NULL, NULL, path, sizeof(path), err, sizeof(err), 5000);
	cr_assert_eq(rc, 2, "exit %d; stderr:\n%s", rc, err);
	cr_assert_eq(gw_start(&gw, cfg, &o), 0, "--allow-remote: did not start");
	cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0);
}

/* ---- SIGTERM ---- */

static void *bg_main(void *arg)
{
	struct bg_request *b = arg;

	gw_chat(&gw, b->alias, NULL, 8000, &b->r);
	return NULL;
}

/* Starts bg: a chat request for alias, on its own thread. */
static void bg_start(const char *alias)
{
	bg.alias = alias;
	cr_assert_eq(pthread_create(&bg.thread, NULL, bg_main, &bg), 0);
	bg.started = true;
}

/* Waits for bg's request to end. */
static void bg_join(void)
{
	pthread_join(bg.thread, NULL);
	bg.started = false;
}

/* A TCP connection to the gateway; -1 with errno set when refused. */
static int connect_gw(void)
{
	struct sockaddr_storage a;
	int fd;

	cr_assert_eq(opt_parse_hostport(gw.addr, &a), 0, "address %s", gw.addr);
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	close(fd);
	return -1;
}

/*
 * Polls until a connection to the gateway is refused (the listener has
 * closed), within timeout_ms. Returns true when it was.
 */
static bool await_refused(double timeout_ms)
{
	double end = now_ms() + timeout_ms;

	for (;;) {
		int fd = connect_gw();

		if (fd < 0 && errno == ECONNREFUSED)
			return true;
		if (fd >= 0)
			close(fd);
		if (now_ms() > end)
			return false;
		usleep(2000);	/* polling for the listener's close: no event reaches us */
	}
}

/*
 * Reads from fd until the peer closes it (true) or timeout_ms pass
 * (false). What came is dropped.
 */
static bool await_close(int fd, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	char buf[4096];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = end - now_ms();
		ssize_t n;

		if (left <= 0)
			return false;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return true;
	}
}

/*
 * SIGTERM while a request is in flight (its upstream takes 800 ms) and a
 * keep-alive connection is idle: the listener closes at once (new
 * connections are refused), the idle connection is closed, the request
 * still gets its 200 — with Connection: close — and then the gateway
 * exits 0.
 */
Test(gateway_cli, sigterm_drains_in_flight_requests, .timeout = 20)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n";
	char cfg[1024];
	char v[64];
	double t_sig;
	int idle;
	int rc;

	cr_assert_eq(mock_start(&mock, "{\"providers\":[{\"name\":\"primary\",\"listen\":\"127.0.0.1:0\","
				"\"ttft_ms\":800,\"output_tokens\":4}]}", 0), 0);
	cr_assert_not_null(gw_template(cfg, sizeof(cfg),
				       "{'request_deadline_ms':5000,"
				       "'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000}},"
				       "'models':{'chat':{'targets':[{'provider':'primary',"
				       "'model':'mock-small'}]}}}", &mock));
	cr_assert_eq(gw_start(&gw, cfg, NULL), 0);

	idle = connect_gw();
	cr_assert(idle >= 0, "connect: %s", strerror(errno));
	cr_assert_eq(send(idle, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));

	bg_start("chat");
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 1, 3000),
		  "the request never reached the provider");
	t_sig = now_ms();
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	cr_assert(await_refused(1000), "new connections are still accepted after SIGTERM");
	cr_assert(await_close(idle, 1000), "the idle keep-alive connection was not closed");
	close(idle);

	bg_join();
	cr_assert_eq(bg.r.code, CURLE_OK, "the request in flight was cut: curl %d %s", bg.r.code,
		     bg.r.errbuf);
	cr_assert_eq(bg.r.status, 200, "%ld %s", bg.r.status, bg.r.body);
	cr_assert(http_header(&bg.r, "connection", v, sizeof(v)) && strcasecmp(v, "close") == 0,
		  "the answer while draining has no Connection: close");
	rc = gw_wait(&gw, 3000);
	cr_assert_eq(rc, 0, "exit %d after draining", rc);
	cr_assert_lt(now_ms() - t_sig, 3000);
}

/*
 * A second signal while draining cuts the request that is left (its
 * upstream hangs) and the gateway exits 0 at once.
 */
Test(gateway_cli, second_signal_cuts_the_drain, .timeout = 20)
{
	char cfg[1024];
	double t;
	int rc;

	cr_assert_eq(mock_start(&mock, "{\"providers\":[{\"name\":\"primary\",\"listen\":\"127.0.0.1:0\","
				"\"faults\":[{\"kind\":\"hang\",\"from_s\":-1000,\"to_s\":1000}]}]}", 0), 0);
	cr_assert_not_null(gw_template(cfg, sizeof(cfg),
				       "{'request_deadline_ms':10000,"
				       "'providers':{'primary':{'base_url':'@primary@','timeout_ms':10000}},"
				       "'models':{'chat':{'targets':[{'provider':'primary',"
				       "'model':'mock-small'}]}}}", &mock));
	cr_assert_eq(gw_start(&gw, cfg, NULL), 0);
	bg_start("chat");
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 1, 3000));
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	cr_assert(await_refused(1000), "new connections are still accepted after SIGTERM");
	cr_assert_eq(gw_wait(&gw, 300), -1, "the gateway exited with a request in flight");
	t = now_ms();
	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	rc = gw_wait(&gw, 2000);
	cr_assert_eq(rc, 0, "exit %d after the second signal", rc);
	cr_assert_lt(now_ms() - t, 1000, "took %.0f ms to exit after the second signal",
		     now_ms() - t);
	bg_join();
	cr_assert(bg.r.total_ms < 3000, "the client waited %.0f ms", bg.r.total_ms);
}

/* strstr, ignoring ASCII case. */
static const char *find_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++) {
		if (strncasecmp(hay, needle, n) == 0)
			return hay;
	}
	return NULL;
}

/* Reads one whole HTTP answer (headers and Content-Length body) off fd within timeout_ms. */
static bool read_answer(int fd, char *got, size_t cap, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	size_t used = 0;

	got[0] = '\0';
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const char *eoh = strstr(got, "\r\n\r\n");
		const char *cl = find_ci(got, "\r\ncontent-length:");
		double left = end - now_ms();
		ssize_t n;

		if (eoh && cl && cl < eoh &&
		    used >= (size_t)(eoh + 4 - got) + strtoul(cl + 17, NULL, 10))
			return true;
		if (left <= 0)
			return false;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = recv(fd, got + used, cap - 1 - used, 0);
		if (n <= 0)
			return false;
		used += (size_t)n;
		got[used] = '\0';
	}
}

/*
 * A request still arriving when SIGTERM comes is a request in progress,
 * not an idle connection: a chat POST whose body is half sent finishes
 * arriving after the signal and is answered, 200 with Connection: close.
 * (A request in flight keeps the gateway draining meanwhile.)
 */
Test(gateway_cli, sigterm_answers_a_request_still_arriving, .timeout = 20)
{
	static const char body[] = "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
				   "\"content\":\"hi\"}]}";
	char head[256];
	char cfg[1024];
	char got[8192];
	int post;

	cr_assert_eq(mock_start(&mock, "{\"providers\":[{\"name\":\"primary\",\"listen\":\"127.0.0.1:0\","
				"\"ttft_ms\":800,\"output_tokens\":4}]}", 0), 0);
	cr_assert_not_null(gw_template(cfg, sizeof(cfg),
				       "{'providers':{'primary':{'base_url':'@primary@'}},"
				       "'models':{'chat':{'targets':[{'provider':'primary',"
				       "'model':'mock-small'}]}}}", &mock));
	cr_assert_eq(gw_start(&gw, cfg, NULL), 0);
	bg_start("chat");
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 1, 3000));

	post = connect_gw();
	cr_assert(post >= 0);
	snprintf(head, sizeof(head), "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", strlen(body));
	cr_assert_eq(send(post, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	cr_assert_eq(send(post, body, 10, MSG_NOSIGNAL), 10);
	/* Lets the gateway read the partial request first: nothing a client can await. */
	cr_assert_eq(poll(NULL, 0, 100), 0);

	cr_assert_eq(gw_signal(&gw, SIGTERM), 0);
	cr_assert(await_refused(1000), "new connections are still accepted after SIGTERM");
	send(post, body + 10, strlen(body) - 10, MSG_NOSIGNAL);
	cr_assert(read_answer(post, got, sizeof(got), 3000),
		  "a chat request, half sent when SIGTERM came, got no answer: \"%s\"", got);
	cr_assert(strncmp(got, "HTTP/1.1 200", 12) == 0, "%s", got);
	cr_assert(find_ci(got, "\r\nconnection: close\r\n"), "no Connection: close: %s", got);
	close(post);
	bg_join();
	cr_assert_eq(bg.r.status, 200);
	cr_assert_eq(gw_wait(&gw, 3000), 0);
}
