/*
 * redisproc: a real redis-server for the tests of the gateway's shared
 * state — started on a free loopback port (no persistence, its own temp
 * dir), waited for until it answers PING, killed, stopped (SIGSTOP, a
 * Redis that no longer answers) and restarted on the same port; and a
 * synchronous hiredis client to read and write its keys as another
 * replica would.
 */
#ifndef FAULTLINE_REDISPROC_H
#define FAULTLINE_REDISPROC_H

#include <stdbool.h>
#include <sys/types.h>

struct redis_proc {
	pid_t pid;			/* -1 when not running */
	int port;
	char dir[64];			/* its working dir and log */
	char password[64];		/* requirepass, "" for none */
};

/* Whether redis-server can be run here. */
bool redis_available(void);

/*
 * Starts redis-server on 127.0.0.1: port (0: a free one, chosen here) with
 * requirepass password (NULL: none), and waits up to 5 s until it answers.
 * Returns 0, or -1 (its log is printed).
 */
int redis_start(struct redis_proc *r, int port, const char *password);

/* Sends sig (SIGKILL: it dies at once) and reaps it. Returns 0 or -1. */
int redis_kill(struct redis_proc *r, int sig);

/* Starts it again on the same port, empty. Returns as redis_start. */
int redis_restart(struct redis_proc *r);

/* Kills it if running and removes its dir. */
void redis_cleanup(struct redis_proc *r);

/*
 * Runs one command (argv, argc strings) on a new connection (AUTH first
 * when r has a password) and writes the reply's text into out: a string
 * or status as it is, an integer in decimal, nil as "(nil)", an error as
 * "ERR …". Returns 0, or -1 when no reply came within 2 s.
 */
int redis_cmd(const struct redis_proc *r, char *out, size_t len, int argc, const char **argv);

#endif
