/*
 * proc: spawning children in their own process groups on libuv (through
 * the guard once it is set up), their stdout split into lines, stdout and
 * stderr logged, the end of stderr kept, their exit reported.
 */
#include "runner/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/guard.h"

/* A stdout line longer than this is handed over in pieces of this size. */
#define MAX_LINE 8192

/* The longest argv proc_start takes when it puts the guard in front. */
#define MAX_ARGS 256

static void log_write(struct proc *p, const char *data, size_t len)
{
	while (p->log_fd >= 0 && !p->log_err && len) {
		ssize_t n = write(p->log_fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Said by the caller (log_err); the output is still read, and its tail kept. */
			p->log_err = n < 0 ? -errno : -EIO;
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

/* Keeps the end of the child's stderr in p->tail. */
static void tail_keep(struct proc *p, const char *data, size_t len)
{
	size_t at;
	size_t n;

	if (len > sizeof(p->tail)) {
		p->tail_total += len - sizeof(p->tail);
		data += len - sizeof(p->tail);
		len = sizeof(p->tail);
	}
	while (len) {
		at = (size_t)(p->tail_total % sizeof(p->tail));
		n = sizeof(p->tail) - at < len ? sizeof(p->tail) - at : len;
		memcpy(p->tail + at, data, n);
		p->tail_total += n;
		data += n;
		len -= n;
	}
}

/* Hands out every whole line in p->line, keeping the rest. */
static void split_lines(struct proc *p)
{
	char *nl;

	while (p->line.len && (nl = memchr(p->line.data, '\n', p->line.len))) {
		*nl = '\0';
		if (p->on_line)
			p->on_line(p, p->line.data);
		buf_consume(&p->line, (size_t)(nl - p->line.data) + 1);
	}
	if (p->line.len >= MAX_LINE) {
		if (p->on_line)
			p->on_line(p, p->line.data);
		buf_reset(&p->line);
	}
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char chunk[65536];	/* one loop: one read at a time */

	(void)h;
	(void)hint;
	*b = uv_buf_init(chunk, sizeof(chunk));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct proc *p = s->data;

	if (n < 0) {
		/* EOF or an error: on stdout, whatever is left is the last line. */
		uv_read_stop(s);
		if (s == (uv_stream_t *)&p->out) {
			if (p->line.len && p->on_line)
				p->on_line(p, p->line.data);
			buf_reset(&p->line);
		}
		return;
	}
	log_write(p, b->base, (size_t)n);
	if (s == (uv_stream_t *)&p->err)
		tail_keep(p, b->base, (size_t)n);
	else if (buf_append(&p->line, b->base, (size_t)n) == 0)
		split_lines(p);
}

/* Everything is closed: p's own memory goes, then the owner's on_closed may free p. */
static void closed(struct proc *p)
{
	free(p->log_path);
	p->log_path = NULL;
	if (p->on_closed)
		p->on_closed(p);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct proc *p = h->data;

	if (--p->open_handles)
		return;
	closed(p);
}

static void on_exit_cb(uv_process_t *h, int64_t status, int sig)
{
	struct proc *p = h->data;

	p->running = false;
	p->exit_status = status;
	p->term_signal = sig;
	if (p->on_exit)
		p->on_exit(p);
}

/*
 * Whether execvp would find file: 0, or a negative errno (-ENOENT, -EACCES).
 * Asked before a guarded start, whose exec happens in the guard, too late
 * to fail proc_start.
 */
static int find_program(const char *file)
{
	const char *path = getenv("PATH");
	const char *dir;
	const char *end;
	char full[PATH_MAX];
	int rc = -ENOENT;

	if (strchr(file, '/'))
		return access(file, X_OK) ? -errno : 0;
	if (!path)
		path = "/bin:/usr/bin";
	for (dir = path;; dir = end + 1) {
		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		/* An empty entry is the current directory, as for execvp. */
		if ((size_t)snprintf(full, sizeof(full), "%.*s%s%s", (int)(end - dir), dir,
				     end == dir ? "" : "/", file) < sizeof(full)) {
			if (access(full, X_OK) == 0)
				return 0;
			if (errno == EACCES)
				rc = -EACCES;
		}
		if (!*end)
			return rc;
	}
}

int proc_start(struct proc *p, uv_loop_t *loop, const char *name, const char *const argv[],
	       const char *log_path)
{
	uv_process_options_t o = { 0 };
	uv_stdio_container_t io[4];
	const char *guarded[MAX_ARGS + 3];
	const char *guard = guard_program();
	int devnull;
	size_t n;
	int rc;

	p->loop = loop;
	p->running = false;
	p->exit_status = -1;
	p->term_signal = 0;
	p->open_handles = 0;
	p->closing = false;
	p->on_closed = NULL;
	p->line = (struct buf){ 0 };
	p->log_err = 0;
	p->tail_total = 0;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->log_path = strdup(log_path);
	if (!p->log_path)
		return -ENOMEM;
	if (guard) {
		rc = find_program(argv[0]);
		for (n = 0; !rc && argv[n]; n++) {
			if (n == MAX_ARGS)
				rc = -E2BIG;
			else
				guarded[n + 2] = argv[n];
		}
		if (rc)
			return rc;
		guarded[0] = guard;
		guarded[1] = "_guard";
		guarded[n + 2] = NULL;
		argv = guarded;
	}
	p->log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (p->log_fd < 0)
		return -errno;
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0) {
		rc = -errno;
		goto out_close_log;
	}
	uv_pipe_init(loop, &p->out, 0);
	uv_pipe_init(loop, &p->err, 0);
	p->out.data = p;
	p->err.data = p;
	io[0] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD, .data.fd = devnull };
	io[1] = (uv_stdio_container_t){ .flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
					.data.stream = (uv_stream_t *)&p->out };
	io[2] = (uv_stdio_container_t){ .flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
					.data.stream = (uv_stream_t *)&p->err };
	io[GUARD_LIFELINE_FD] = (uv_stdio_container_t){ .flags = UV_INHERIT_FD,
							.data.fd = guard_lifeline() };
	o.file = argv[0];
	o.args = (char **)argv;
	o.exit_cb = on_exit_cb;
	o.flags = UV_PROCESS_DETACHED;	/* setsid(): a process group of its own */
	o.stdio = io;
	o.stdio_count = guard ? 4 : 3;
	p->handle.data = p;
	rc = uv_spawn(loop, &p->handle, &o);
	close(devnull);
	if (rc) {
		/* The handles were initialised: they close in the loop (proc_close). */
		p->open_handles = 3;
		p->closing = true;
		uv_close((uv_handle_t *)&p->handle, on_handle_closed);
		uv_close((uv_handle_t *)&p->out, on_handle_closed);
		uv_close((uv_handle_t *)&p->err, on_handle_closed);
		goto out_close_log;
	}
	p->pid = p->handle.pid;
	p->running = true;
	p->open_handles = 3;
	uv_read_start((uv_stream_t *)&p->out, on_alloc, on_read);
	uv_read_start((uv_stream_t *)&p->err, on_alloc, on_read);
	return 0;

out_close_log:
	close(p->log_fd);
	p->log_fd = -1;
	return rc;
}

int proc_signal(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return -ESRCH;
	return kill(-p->pid, sig) == 0 ? 0 : -errno;
}

void proc_close(struct proc *p, void (*on_closed)(struct proc *p))
{
	p->on_closed = on_closed;
	buf_free(&p->line);
	if (p->log_fd >= 0) {
		close(p->log_fd);
		p->log_fd = -1;
	}
	if (!p->open_handles) {
		closed(p);
		return;
	}
	if (p->closing)
		return;		/* a failed start's handles are closing already */
	p->closing = true;
	uv_close((uv_handle_t *)&p->out, on_handle_closed);
	uv_close((uv_handle_t *)&p->err, on_handle_closed);
	uv_close((uv_handle_t *)&p->handle, on_handle_closed);
}

/* The name of the signals a child is likely to die of, or NULL. */
static const char *signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {
		{ SIGKILL, "SIGKILL" }, { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },
		{ SIGSEGV, "SIGSEGV" }, { SIGABRT, "SIGABRT" }, { SIGBUS, "SIGBUS" },
		{ SIGFPE, "SIGFPE" }, { SIGILL, "SIGILL" }, { SIGPIPE, "SIGPIPE" },
		{ SIGHUP, "SIGHUP" }, { SIGQUIT, "SIGQUIT" }, { SIGXFSZ, "SIGXFSZ" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].sig == sig)
			return names[i].name;
	}
	return NULL;
}

void proc_describe_exit(const struct proc *p, char *out, size_t len)
{
	if (p->running)
		snprintf(out, len, "still running");
	else if (p->term_signal && signal_name(p->term_signal))
		snprintf(out, len, "killed by %s", signal_name(p->term_signal));
	else if (p->term_signal)
		snprintf(out, len, "killed by signal %d", p->term_signal);
	else
		snprintf(out, len, "exited with status %lld", (long long)p->exit_status);
}

int proc_stderr_tail(const struct proc *p, size_t nlines, struct buf *out)
{
	size_t size = sizeof(p->tail);
	size_t len = p->tail_total < size ? (size_t)p->tail_total : size;
	size_t at = (size_t)(p->tail_total % size);
	struct buf all = { 0 };
	size_t start = 0;
	size_t seen = 0;
	size_t i;
	int rc;

	if (!len)
		return 0;
	/* The ring in order: from its end (the oldest byte) round to its end. */
	if (p->tail_total > size)
		rc = buf_append(&all, p->tail + at, size - at) || buf_append(&all, p->tail, at);
	else
		rc = buf_append(&all, p->tail, len);
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	/* Once the ring has wrapped, its first line is a piece: left out when another follows. */
	if (p->tail_total > size) {
		const char *nl = memchr(all.data, '\n', all.len - 1);

		if (nl)
			start = (size_t)(nl - all.data) + 1;
	}
	/* Back from the end over nlines newlines (a last line without one counts). */
	i = all.len;
	if (all.data[i - 1] == '\n')
		i--;
	while (i > start) {
		if (all.data[i - 1] == '\n' && ++seen == nlines)
			break;
		i--;
	}
	rc = buf_append(out, all.data + i, all.len - i);
out:
	buf_free(&all);
	return rc;
}
