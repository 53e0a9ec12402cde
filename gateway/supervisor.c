/*
 * supervisor: a workers gateway's first process (supervisor.h). The
 * listening sockets are made here, with SO_REUSEPORT, rather than by each
 * worker: a bind error is reported once, before anything starts, port 0
 * is resolved once, and a worker started again takes over its
 * predecessor's socket — and the connections waiting in its queue —
 * instead of a new one. Workers are this program again (exec'ed through
 * libuv's uv_spawn, so none inherits this process's loop), each in a
 * session of its own: a signal to the supervisor's process group (a
 * terminal's Ctrl-C, the runner's stop) reaches the supervisor alone,
 * which hands it on once; a worker dies with the supervisor
 * (PR_SET_PDEATHSIG, set by the worker).
 */
#define _GNU_SOURCE
#include "gateway/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/opt.h"
#include "gateway/hub.h"
#include "gateway/respawn.h"

/* The listening sockets' backlog (the workers' libuv listen sets it again, the same). */
#define LISTEN_BACKLOG 1024

struct sup;

/* One started worker process; freed once its handle closes. */
struct child {
	uv_process_t proc;
	struct slot *slot;
};

/* A worker's place: its number, socket and life. */
struct slot {
	struct sup *sup;
	unsigned no;
	int listen_fd;			/* the supervisor's copy; -1 once closed */
	struct child *child;		/* running; NULL while it is not */
	bool ready;			/* said it serves (this life) */
	bool ever_ready;
	double started_ms;
	struct respawn respawn;
	uv_timer_t restart;
	char argno[12];			/* K, for --worker K */
};

struct sup {
	uv_loop_t *loop;
	const struct supervisor_args *a;
	unsigned n;
	struct slot *slots;
	struct hub hub;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	int config_fd;
	char exe[PATH_MAX];
	char **wargv;			/* argv, then --worker K */
	char addr[64];
	unsigned running;
	bool announced;			/* "ready" printed */
	bool stopping;
	bool closed;
	int exit_code;
};

static double mono_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

/* ---- the listening sockets ---- */

/* A socket bound to addr with SO_REUSEPORT and listening, or -errno. */
static int listen_socket(const struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in);
	int one = 1;
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int rc;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)addr, len) || listen(fd, LISTEN_BACKLOG)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* One socket per worker on the same port (port 0: the first one's). Returns 0 or -errno. */
static int open_sockets(struct sup *s)
{
	struct sockaddr_storage addr = *s->a->addr;
	socklen_t len = sizeof(addr);
	unsigned i;
	int fd;

	for (i = 0; i < s->n; i++) {
		fd = listen_socket(&addr);
		if (fd < 0)
			return fd;
		s->slots[i].listen_fd = fd;
		if (i == 0 && getsockname(fd, (struct sockaddr *)&addr, &len))
			return -errno;
	}
	opt_format_addr((const struct sockaddr *)&addr, s->addr, sizeof(s->addr));
	return 0;
}

static void close_sockets(struct sup *s)
{
	unsigned i;

	for (i = 0; s->slots && i < s->n; i++) {
		if (s->slots[i].listen_fd >= 0)
			close(s->slots[i].listen_fd);
		s->slots[i].listen_fd = -1;
	}
}

/*
 * The config file's bytes in an anonymous file, so that every worker —
 * one started again an hour later too — reads the config the gateway
 * started with. Returns its descriptor or -errno.
 */
static int config_copy(const char *path)
{
	char chunk[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC);
	int out;
	ssize_t n;
	int rc = 0;

	if (in < 0)
		return -errno;
	out = memfd_create("gateway-config", MFD_CLOEXEC);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while ((n = read(in, chunk, sizeof(chunk))) > 0) {
		if (write(out, chunk, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
	}
	if (n < 0)
		rc = -errno;
	close(in);
	if (rc) {
		close(out);
		return rc;
	}
	return out;
}

/* ---- workers ---- */

static void spawn(struct slot *sl);

static void on_child_closed(uv_handle_t *h)
{
	free(h->data);
}

/* "exited with status 3", "was killed by signal 9 (Killed)". */
static void describe_exit(char *out, size_t len, int64_t status, int signal)
{
	if (signal)
		snprintf(out, len, "was killed by signal %d (%s)", signal, strsignal(signal));
	else
		snprintf(out, len, "exited with status %lld", (long long)status);
}

static void close_all(struct sup *s)
{
	unsigned i;

	if (s->closed)
		return;
	s->closed = true;
	hub_close(&s->hub);
	for (i = 0; i < s->n; i++)
		uv_close((uv_handle_t *)&s->slots[i].restart, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
	uv_close((uv_handle_t *)&s->sigterm, NULL);
}

/* Every worker is told to drain (sig SIGTERM); no more are started. */
static void stop_all(struct sup *s)
{
	unsigned i;

	s->stopping = true;
	close_sockets(s);
	for (i = 0; i < s->n; i++) {
		uv_timer_stop(&s->slots[i].restart);
		if (s->slots[i].child)
			uv_process_kill(&s->slots[i].child->proc, SIGTERM);
	}
	if (s->running == 0)
		close_all(s);
}

static void on_restart(uv_timer_t *t)
{
	struct slot *sl = t->data;

	if (!sl->sup->stopping)
		spawn(sl);
}

static void on_child_exit(uv_process_t *proc, int64_t status, int term_signal)
{
	struct child *c = proc->data;
	struct slot *sl = c->slot;
	struct sup *s = sl->sup;
	double lived = mono_ms() - sl->started_ms;
	char how[96];
	double wait;

	describe_exit(how, sizeof(how), status, term_signal);
	uv_close((uv_handle_t *)proc, on_child_closed);
	sl->child = NULL;
	sl->ready = false;
	s->running--;
	hub_detach(&s->hub, sl->no);
	if (s->stopping) {
		/* SIGTERM before the worker's handler was up ends it as asked. */
		if (status || (term_signal && term_signal != SIGTERM)) {
			log_error("worker %u (pid %d) %s while stopping", sl->no, proc->pid, how);
			s->exit_code = 1;
		}
		if (s->running == 0)
			close_all(s);
		return;
	}
	if (!s->announced) {
		log_error("worker %u (pid %d) %s before every worker was ready: stopping", sl->no,
			  proc->pid, how);
		s->exit_code = 1;
		stop_all(s);
		return;
	}
	wait = respawn_delay_ms(&sl->respawn, lived);
	if (wait > 0)
		log_error("worker %u (pid %d) %s %.1f s after its start; starting it again in "
			  "%.0f ms (it keeps dying soon after starting)", sl->no, proc->pid, how,
			  lived / 1000, wait);
	else
		log_error("worker %u (pid %d) %s after %.1f s; starting it again", sl->no, proc->pid,
			  how, lived / 1000);
	uv_timer_start(&sl->restart, on_restart, (uint64_t)wait, 0);
}

/* Starts slot sl's worker: its sockets as fds 3, 4 and the config as 5. */
static void spawn(struct slot *sl)
{
	struct sup *s = sl->sup;
	struct child *c = calloc(1, sizeof(*c));
	uv_process_options_t o = { 0 };
	uv_stdio_container_t io[6];
	int sv[2] = { -1, -1 };
	int rc;

	if (!c) {
		rc = UV_ENOMEM;
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		rc = -errno;
		goto fail;
	}
	io[0].flags = UV_IGNORE;
	io[1] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD, .data.fd = 1 };
	io[2] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD, .data.fd = 2 };
	io[SUPERVISOR_FD_LISTEN] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD,
							   .data.fd = sl->listen_fd };
	io[SUPERVISOR_FD_HUB] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD, .data.fd = sv[1] };
	io[SUPERVISOR_FD_CONFIG] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD,
							   .data.fd = s->config_fd };
	s->wargv[s->a->argc + 1] = sl->argno;
	o.file = s->exe;
	o.args = s->wargv;
	o.stdio = io;
	o.stdio_count = 6;
	o.exit_cb = on_child_exit;
	o.flags = UV_PROCESS_DETACHED;	/* a session of its own (supervisor.c's comment) */
	c->slot = sl;
	c->proc.data = c;
	rc = uv_spawn(s->loop, &c->proc, &o);
	close(sv[1]);
	sv[1] = -1;
	if (rc) {
		uv_close((uv_handle_t *)&c->proc, on_child_closed);
		c = NULL;
		goto fail;
	}
	sl->child = c;
	sl->started_ms = mono_ms();
	s->running++;
	rc = hub_attach(&s->hub, sl->no, sv[0]);
	sv[0] = -1;
	if (rc) {
		log_error("worker %u: cannot read its socket: %s; stopping it", sl->no,
			  uv_strerror(rc));
		uv_process_kill(&c->proc, SIGKILL);
	}
	return;

fail:
	free(c);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	log_error("worker %u: cannot start %s: %s", sl->no, s->exe, uv_strerror(rc));
	if (!s->announced) {
		s->exit_code = 1;
		stop_all(s);
		return;
	}
	uv_timer_start(&sl->restart, on_restart, (uint64_t)respawn_delay_ms(&sl->respawn, 0), 0);
}

/* Worker no serves: once all do, the gateway is ready. */
static void on_ready(void *arg, unsigned no)
{
	struct sup *s = arg;
	struct slot *sl = &s->slots[no - 1];
	unsigned i;

	if (sl->ready || !sl->child)
		return;
	sl->ready = true;
	if (sl->ever_ready)
		log_info("worker %u (pid %d) serves again", no, sl->child->proc.pid);
	sl->ever_ready = true;
	if (s->announced || s->stopping)
		return;
	for (i = 0; i < s->n; i++) {
		if (!s->slots[i].ready)
			return;
	}
	s->announced = true;
	printf("listening %s\nready\n", s->addr);
	fflush(stdout);
	log_info("serving %zu alias(es) over %zu provider(s) on %s with %u workers, %s",
		 s->a->cfg->naliases, s->a->cfg->nproviders, s->addr, s->n,
		 s->a->cfg->auth.nkeys ? "client keys required" : "no client keys");
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct sup *s = h->data;
	const char *name = signum == SIGINT ? "SIGINT" : "SIGTERM";
	unsigned i;

	if (s->stopping) {
		log_info("caught %s again: cutting what the workers have in flight", name);
		for (i = 0; i < s->n; i++) {
			if (s->slots[i].child)
				uv_process_kill(&s->slots[i].child->proc, SIGTERM);
		}
		return;
	}
	log_info("caught %s: draining %u worker(s)", name, s->running);
	stop_all(s);
}

/* ---- life ---- */

/* The workers' names in the shared state, REPLICA.wK, must fit 63 bytes. */
static int check_names(const struct supervisor_args *a)
{
	char last[80];
	int len = snprintf(last, sizeof(last), "%s.w%u", a->cfg->shared.replica, a->workers);

	if (len <= GW_REPLICA_MAX)
		return 0;
	fprintf(stderr, "gateway: %s: shared_state.replica (or --replica) \"%s\" is too long for "
		"%u workers: each worker's name, NAME.wK, must be at most %d bytes\n",
		a->config_path, a->cfg->shared.replica, a->workers, GW_REPLICA_MAX);
	return -EINVAL;
}

static void free_sup(struct sup *s)
{
	close_sockets(s);
	if (s->config_fd >= 0)
		close(s->config_fd);
	free(s->slots);
	free(s->wargv);
}

int supervisor_run(const struct supervisor_args *a)
{
	static const struct hub_ops ops = { on_ready };
	struct sup s = { 0 };
	size_t exe_len = sizeof(s.exe);
	unsigned i;
	int rc;

	if (check_names(a))
		return 2;
	s.a = a;
	s.n = a->workers;
	s.config_fd = -1;
	s.slots = calloc(s.n, sizeof(*s.slots));
	s.wargv = calloc((size_t)a->argc + 3, sizeof(*s.wargv));
	if (!s.slots || !s.wargv) {
		fprintf(stderr, "gateway: out of memory\n");
		free_sup(&s);
		return 1;
	}
	for (i = 0; i < s.n; i++)
		s.slots[i].listen_fd = -1;
	memcpy(s.wargv, a->argv, (size_t)a->argc * sizeof(*s.wargv));
	s.wargv[a->argc] = "--worker";
	rc = uv_exepath(s.exe, &exe_len);
	if (rc) {
		fprintf(stderr, "gateway: cannot find its own program to start workers: %s\n",
			uv_strerror(rc));
		free_sup(&s);
		return 1;
	}
	rc = open_sockets(&s);
	if (rc) {
		char text[64];

		fprintf(stderr, "gateway: cannot listen on %s: %s\n",
			opt_format_addr((const struct sockaddr *)a->addr, text, sizeof(text)),
			strerror(-rc));
		free_sup(&s);
		return 1;
	}
	s.config_fd = config_copy(a->config_path);
	if (s.config_fd < 0) {
		fprintf(stderr, "gateway: cannot keep a copy of %s for the workers: %s\n",
			a->config_path, strerror(-s.config_fd));
		free_sup(&s);
		return 1;
	}
	s.loop = uv_default_loop();
	if (hub_init(&s.hub, s.loop, s.n, &ops, &s)) {
		fprintf(stderr, "gateway: out of memory\n");
		free_sup(&s);
		return 1;
	}
	uv_signal_init(s.loop, &s.sigint);
	uv_signal_init(s.loop, &s.sigterm);
	s.sigint.data = s.sigterm.data = &s;
	uv_signal_start(&s.sigint, on_signal, SIGINT);
	uv_signal_start(&s.sigterm, on_signal, SIGTERM);
	for (i = 0; i < s.n; i++) {
		struct slot *sl = &s.slots[i];

		sl->sup = &s;
		sl->no = i + 1;
		snprintf(sl->argno, sizeof(sl->argno), "%u", sl->no);
		uv_timer_init(s.loop, &sl->restart);
		sl->restart.data = sl;
	}
	for (i = 0; i < s.n && !s.stopping; i++)
		spawn(&s.slots[i]);
	uv_run(s.loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(s.loop);
	if (rc)
		log_warn("event loop closed with handles open: %s", uv_strerror(rc));
	hub_free(&s.hub);
	free_sup(&s);
	return s.exit_code;
}
