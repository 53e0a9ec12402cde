/*
 * nodeclient: node scripts as clients, for the integration tests.
 */
#include "tests/support/nodeclient.h"

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"

/* The first executable `name` on $PATH into out, or NULL. */
static const char *find_on_path(const char *name, char *out, size_t len)
{
	const char *p = getenv("PATH");

	while (p && *p) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);

		snprintf(out, len, "%.*s/%s", (int)n, p, name);
		if (n && access(out, X_OK) == 0)
			return out;
		p += n + (colon ? 1 : 0);
	}
	return NULL;
}

const char *node_unavailable(const char *package)
{
	static char why[700];
	const char *prefix = getenv("FAULTLINE_NODE_PREFIX");
	char path[512];

	if (!find_on_path("node", path, sizeof(path)))
		return "node is not on PATH (Debian: nodejs npm)";
	if (!prefix || !prefix[0])
		return "FAULTLINE_NODE_PREFIX is not set: run the tests through make, which "
		       "installs the SDKs there";
	snprintf(path, sizeof(path), "%s/node_modules/%s/package.json", prefix, package);
	if (access(path, R_OK) != 0) {
		snprintf(why, sizeof(why), "the %s package is not installed: no %s", package, path);
		return why;
	}
	return NULL;
}

int node_run(const char *const *args, char *out, size_t outlen, char *err, size_t errlen,
	     double timeout_ms)
{
	const char *argv[16];
	char node[512];
	double end = now_ms() + timeout_ms;
	size_t nout = 0;
	size_t nerr = 0;
	int out_fd;
	int err_fd;
	int st = 0;
	pid_t pid;
	size_t n = 0;

	out[0] = err[0] = '\0';
	if (!find_on_path("node", node, sizeof(node)))
		return -1;
	argv[n++] = node;
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = spawn_piped(argv, false, &out_fd, &err_fd);
	if (pid <= 0)
		return -1;
	while ((out_fd >= 0 || err_fd >= 0) && now_ms() < end) {
		struct pollfd pfd[2] = { { .fd = out_fd, .events = POLLIN },
					 { .fd = err_fd, .events = POLLIN } };

		if (poll(pfd, 2, 100) <= 0)
			continue;
		if (out_fd >= 0 && (pfd[0].revents & (POLLIN | POLLHUP)))
			read_into(&out_fd, out, outlen, &nout);
		if (err_fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP)))
			read_into(&err_fd, err, errlen, &nerr);
	}
	if (out_fd >= 0 || err_fd >= 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		if (out_fd >= 0)
			close(out_fd);
		if (err_fd >= 0)
			close(err_fd);
		return -1;
	}
	waitpid(pid, &st, 0);
	return exit_status(st);
}
