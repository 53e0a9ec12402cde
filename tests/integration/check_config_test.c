/*
 * --check-config FILE, for bin/gateway and bin/mockprov: a good config
 * exits 0 saying "FILE: ok" and nothing else, without opening a socket
 * (its port is held by the test, so a listen would fail) or writing a
 * file; a bad one exits 2 with the usual message naming the file and the
 * key, as a start would.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/tmpdir.h"

static char dir[64];
static int held_fd = -1;

static void setup(void)
{
	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "checkcfg"), 0);
}

static void teardown(void)
{
	if (held_fd >= 0)
		close(held_fd);
	held_fd = -1;
	if (dir[0])
		tmpdir_remove(dir);
	dir[0] = '\0';
}

TestSuite(check_config, .init = setup, .fini = teardown);

/* A port on 127.0.0.1 the test listens on itself: a program that listened there would fail. */
static int hold_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);

	held_fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(held_fd >= 0);
	cr_assert_eq(bind(held_fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
	cr_assert_eq(listen(held_fd, 1), 0);
	cr_assert_eq(getsockname(held_fd, (struct sockaddr *)&sin, &len), 0);
	return ntohs(sin.sin_port);
}

/* Runs argv to its end (5 s at most), stdout and stderr captured; returns the exit status. */
static int run(const char *const argv[], char *out, size_t outlen, char *err, size_t errlen)
{
	size_t nout = 0;
	size_t nerr = 0;
	double end = now_ms() + 5000;
	int out_fd;
	int err_fd;
	pid_t pid;
	int st;

	out[0] = err[0] = '\0';
	pid = spawn_piped(argv, false, &out_fd, &err_fd);
	cr_assert(pid > 0, "cannot start %s", argv[0]);
	while ((out_fd >= 0 || err_fd >= 0) && now_ms() < end) {
		struct pollfd pfd[2] = {
			{ .fd = out_fd, .events = POLLIN },
			{ .fd = err_fd, .events = POLLIN },
		};

		if (poll(pfd, 2, 100) <= 0)
			continue;
		if (pfd[0].revents)
			read_into(&out_fd, out, outlen, &nout);
		if (pfd[1].revents)
			read_into(&err_fd, err, errlen, &nerr);
	}
	if (out_fd >= 0 || err_fd >= 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		cr_assert_fail("%s still running after 5 s: it did not just check", argv[0]);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return exit_status(st);
}

/* How many entries dir has besides . and .. */
static int entries(const char *d)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(dp);
	for (e = readdir(dp); e; e = readdir(dp)) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	}
	closedir(dp);
	return n;
}

/* ---- mockprov ---- */

Test(check_config, mockprov_good_config_exits_0_opening_nothing, .timeout = 20)
{
	char json[256];
	char path[128];
	char want[160];
	char out[1024];
	char err[2048];
	const char *argv[] = { "mockprov", "--check-config", path, "--log-dir", dir, NULL };
	int rc;

	snprintf(json, sizeof(json), "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:%d\","
		 "\"faults\":[{\"kind\":\"hang\",\"from_s\":0,\"to_s\":5}]}]}", hold_port());
	cr_assert_not_null(write_file(dir, "mock.json", json, path, sizeof(path)));
	rc = run(argv, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, err);
	snprintf(want, sizeof(want), "%s: ok\n", path);
	cr_assert_str_eq(out, want);
	cr_assert_str_empty(err);
	cr_assert_eq(entries(dir), 1, "no log written beside the config");
}

Test(check_config, mockprov_bad_configs_exit_2_naming_file_and_key, .timeout = 20)
{
	static const struct {
		const char *json;
		const char *key;
		const char *says;
	} cases[] = {
		{ "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"ttft\":5}]}",
		  "providers[0].ttft", "unknown key" },
		{ "{\"providers\":[{\"name\":\"p\",\"listen\":\"127.0.0.1:0\",\"ttft_ms\":-5}]}",
		  "providers[0].ttft_ms", "expected a number from 0" },
		{ "{\"providers\":[{\"name\":\"p\",\"listen\":\"0.0.0.0:0\"}]}",
		  "providers[0].listen", "expected a loopback address" },
	};
	char path[128];
	char out[1024];
	char err[2048];
	const char *argv[] = { "mockprov", "--check-config", path, NULL };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_not_null(write_file(dir, "mock.json", cases[i].json, path, sizeof(path)));
		rc = run(argv, out, sizeof(out), err, sizeof(err));
		cr_expect_eq(rc, 2, "case %zu: exit %d; stderr: %s", i, rc, err);
		cr_expect(strstr(err, path) && strstr(err, cases[i].key) &&
			  strstr(err, cases[i].says), "case %zu: %s", i, err);
		cr_expect_str_empty(out, "case %zu: nothing on stdout", i);
	}
}

/* --allow-remote counts as at a start: the same non-loopback listen is then fine (and not opened). */
Test(check_config, mockprov_allow_remote_as_at_a_start, .timeout = 20)
{
	char path[128];
	char out[1024];
	char err[2048];
	const char *argv[] = { "mockprov", "--check-config", path, "--allow-remote", NULL };
	int rc;

	cr_assert_not_null(write_file(dir, "mock.json",
				      "{\"providers\":[{\"name\":\"p\",\"listen\":\"0.0.0.0:0\"}]}",
				      path, sizeof(path)));
	rc = run(argv, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, err);
	cr_assert(strstr(out, ": ok"), "%s", out);
}

/* ---- gateway ---- */

#define GW_MODELS "\"models\":{\"chat\":{\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]}}"

Test(check_config, gateway_good_config_exits_0_opening_nothing, .timeout = 20)
{
	char json[512];
	char path[128];
	char events[128];
	char want[160];
	char out[1024];
	char err[2048];
	const char *argv[] = { "gateway", "--check-config", path, "--events", events, NULL };
	int rc;

	snprintf(json, sizeof(json), "{\"listen\":\"127.0.0.1:%d\",\"providers\":{\"p\":"
		 "{\"base_url\":\"http://127.0.0.1:9/v1\"}},\"breaker\":{\"cooldown_ms\":100},"
		 GW_MODELS "}", hold_port());
	cr_assert_not_null(write_file(dir, "gateway.json", json, path, sizeof(path)));
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	rc = run(argv, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(rc, 0, "exit %d; stderr: %s", rc, err);
	snprintf(want, sizeof(want), "%s: ok\n", path);
	cr_assert_str_eq(out, want);
	cr_assert_str_empty(err);
	cr_assert_eq(entries(dir), 1, "no events file written");
}

Test(check_config, gateway_bad_configs_exit_2_naming_file_and_key, .timeout = 20)
{
	static const struct {
		const char *json;
		const char *key;
		const char *says;
	} cases[] = {
		{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\"}},"
		  "\"breaker\":{\"consecutive_failurs\":3}," GW_MODELS "}",
		  "breaker.consecutive_failurs", "unknown key" },
		{ "{\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9/v1\",\"timeout_ms\":0}},"
		  GW_MODELS "}", "providers.p.timeout_ms", "expected" },
		{ "{\"providers\":{\"p\":{\"base_url\":\"http://10.1.2.3:9/v1\"}}," GW_MODELS "}",
		  "base_url", "loopback" },
		{ "{\"listen\":\"0.0.0.0:8080\",\"providers\":{\"p\":{\"base_url\":"
		  "\"http://127.0.0.1:9/v1\"}}," GW_MODELS "}", "listen", "loopback" },
	};
	char path[128];
	char out[1024];
	char err[2048];
	const char *argv[] = { "gateway", "--check-config", path, NULL };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_not_null(write_file(dir, "gateway.json", cases[i].json, path,
					      sizeof(path)));
		rc = run(argv, out, sizeof(out), err, sizeof(err));
		cr_expect_eq(rc, 2, "case %zu: exit %d; stderr: %s", i, rc, err);
		cr_expect(strstr(err, path) && strstr(err, cases[i].key) &&
			  strstr(err, cases[i].says), "case %zu: %s", i, err);
		cr_expect_str_empty(out, "case %zu: nothing on stdout", i);
	}
}
