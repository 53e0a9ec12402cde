/*
 * redisproc: a real redis-server for the tests (redisproc.h).
 */
#include "tests/support/redisproc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REDIS_SERVER "/usr/bin/redis-server"

bool redis_available(void)
{
	return access(REDIS_SERVER, X_OK) == 0;
}

/* A loopback port nobody listens on now (the kernel's choice). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = -1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int redis_cmd(const struct redis_proc *r, char *out, size_t len, int argc, const char **argv)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	redisReply *rep = NULL;
	int rc = -1;

	if (!c || c->err)
		goto out;
	redisSetTimeout(c, tv);
	if (r->password[0]) {
		rep = redisCommand(c, "AUTH %s", r->password);
		if (!rep)
			goto out;
		freeReplyObject(rep);
	}
	rep = redisCommandArgv(c, argc, argv, NULL);
	if (!rep)
		goto out;
	switch (rep->type) {
	case REDIS_REPLY_STRING:
	case REDIS_REPLY_STATUS:
		snprintf(out, len, "%s", rep->str);
		break;
	case REDIS_REPLY_ERROR:
		snprintf(out, len, "ERR %s", rep->str);
		break;
	case REDIS_REPLY_INTEGER:
		snprintf(out, len, "%lld", rep->integer);
		break;
	case REDIS_REPLY_NIL:
		snprintf(out, len, "(nil)");
		break;
	default:
		snprintf(out, len, "(reply of type %d)", rep->type);
	}
	rc = 0;
	freeReplyObject(rep);
out:
	if (c)
		redisFree(c);
	return rc;
}

/* Waits up to 5 s for a PONG; on failure prints its log. */
static int wait_ready(struct redis_proc *r)
{
	const char *ping[] = { "PING" };
	char reply[64];
	char cmd[160];
	int i;

	for (i = 0; i < 500; i++) {
		if (redis_cmd(r, reply, sizeof(reply), 1, ping) == 0 &&
		    strcmp(reply, "PONG") == 0)
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
			r->pid = -1;
			break;
		}
		sleep_ms(10);
	}
	snprintf(cmd, sizeof(cmd), "cat '%s/redis.log' >&2", r->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "redis-server did not start, and left no log\n");
	return -1;
}

static int spawn(struct redis_proc *r)
{
	char port[16];
	char log[128];
	const char *argv[20];
	int n = 0;
	pid_t pid;

	snprintf(port, sizeof(port), "%d", r->port);
	snprintf(log, sizeof(log), "%s/redis.log", r->dir);
	argv[n++] = REDIS_SERVER;
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--dir";
	argv[n++] = r->dir;
	argv[n++] = "--logfile";
	argv[n++] = log;
	if (r->password[0]) {
		argv[n++] = "--requirepass";
		argv[n++] = r->password;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(REDIS_SERVER, (char *const *)argv);
		_exit(127);
	}
	r->pid = pid;
	return wait_ready(r);
}

int redis_start(struct redis_proc *r, int port, const char *password)
{
	memset(r, 0, sizeof(*r));
	r->pid = -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/faultline-test-redis-XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(r->password, sizeof(r->password), "%s", password ? password : "");
	r->port = port > 0 ? port : free_port();
	if (r->port <= 0)
		return -1;
	return spawn(r);
}

int redis_kill(struct redis_proc *r, int sig)
{
	if (r->pid <= 0)
		return -1;
	kill(r->pid, sig);
	if (sig == SIGSTOP || sig == SIGCONT)
		return 0;
	if (waitpid(r->pid, NULL, 0) != r->pid)
		return -1;
	r->pid = -1;
	return 0;
}

int redis_restart(struct redis_proc *r)
{
	int i;

	if (r->pid > 0)
		redis_kill(r, SIGKILL);
	/* The old listener may linger a moment; redis-server exits if the port is busy. */
	for (i = 0; i < 5; i++) {
		if (spawn(r) == 0)
			return 0;
		if (r->pid > 0)
			redis_kill(r, SIGKILL);
		sleep_ms(100);
	}
	return -1;
}

void redis_cleanup(struct redis_proc *r)
{
	char cmd[128];

	if (r->pid > 0) {
		kill(r->pid, SIGCONT);
		redis_kill(r, SIGKILL);
	}
	if (strncmp(r->dir, "/tmp/faultline-test-redis-", 26) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", r->dir);
	}
	r->dir[0] = '\0';
}
