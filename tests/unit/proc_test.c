/*
 * proc: real children (/bin/sh) on a private loop — stdout lines in order
 * and logged with stderr, the exit status and the killing signal, a signal
 * to the whole process group reaching a grandchild, a program that does
 * not exist, and the end of stderr kept in memory: there at the exit
 * callback, cut to its last lines, and there when the log cannot be
 * written (/dev/full).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/proc.h"

/* What the callbacks saw. */
struct seen {
	char lines[8][128];
	unsigned nlines;
	unsigned exits;
	unsigned closed;
	pid_t grandchild;
	char tail[16384];		/* proc_stderr_tail(…, 3) at the exit */
	int log_err;			/* p->log_err at the exit */
	unsigned lines_at_exit;		/* nlines then */
};

static struct seen seen;
static char dir[64];
static char log_path[128];

static void setup(void)
{
	memset(&seen, 0, sizeof(seen));
	snprintf(dir, sizeof(dir), "/tmp/fl-proc-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(log_path, sizeof(log_path), "%s/child.log", dir);
}

static void teardown(void)
{
	unlink(log_path);
	rmdir(dir);
}

static void on_line(struct proc *p, const char *line)
{
	(void)p;
	if (sscanf(line, "grandchild %d", &seen.grandchild) == 1)
		proc_signal(p, SIGTERM);	/* the whole group: sh and its sleep */
	if (seen.nlines < 8)
		snprintf(seen.lines[seen.nlines++], sizeof(seen.lines[0]), "%s", line);
}

static void on_closed(struct proc *p)
{
	(void)p;
	seen.closed++;
}

static void on_exit_close(struct proc *p)
{
	struct buf tail = { 0 };

	seen.exits++;
	seen.lines_at_exit = seen.nlines;
	cr_assert_eq(proc_stderr_tail(p, 3, &tail), 0);
	snprintf(seen.tail, sizeof(seen.tail), "%s", tail.len ? tail.data : "");
	buf_free(&tail);
	seen.log_err = p->log_err;
	proc_close(p, on_closed);
}

/* The whole file at path into out. */
static void read_whole(const char *path, struct buf *out)
{
	char chunk[4096];
	FILE *fp = fopen(path, "r");
	size_t n;

	cr_assert_not_null(fp, "no %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		cr_assert_eq(buf_append(out, chunk, n), 0);
	fclose(fp);
}

/* Whether pid is a live process (a zombie awaiting its reaper is not). */
static bool alive(pid_t pid)
{
	char path[64];
	char stat[256];
	char *close_paren;
	FILE *fp;
	size_t n;

	if (kill(pid, 0) != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return false;
	n = fread(stat, 1, sizeof(stat) - 1, fp);
	fclose(fp);
	stat[n] = '\0';
	close_paren = strrchr(stat, ')');
	return !(close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z');
}

/* A timer that ends a test stuck waiting for a child. */
static void on_deadline(uv_timer_t *t)
{
	(void)t;
	cr_assert_fail("the child did not exit in time");
}

/* Runs the loop until p is closed, within 5 s. */
static void run(uv_loop_t *loop)
{
	uv_timer_t deadline;

	uv_timer_init(loop, &deadline);
	uv_timer_start(&deadline, on_deadline, 5000, 0);
	uv_unref((uv_handle_t *)&deadline);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&deadline, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(loop), 0, "the loop still has handles");
}

static struct proc *start_sh_logging(uv_loop_t *loop, const char *script, const char *log)
{
	static struct proc p;
	const char *argv[] = { "/bin/sh", "-c", script, NULL };

	memset(&p, 0, sizeof(p));
	p.on_line = on_line;
	p.on_exit = on_exit_close;
	cr_assert_eq(proc_start(&p, loop, "sh", argv, log), 0);
	cr_assert_gt(p.pid, 0);
	cr_assert(p.running);
	return &p;
}

static struct proc *start_sh(uv_loop_t *loop, const char *script)
{
	return start_sh_logging(loop, script, log_path);
}

TestSuite(proc, .init = setup, .fini = teardown);

Test(proc, lines_log_and_exit_status, .timeout = 10)
{
	uv_loop_t loop;
	struct proc *p;
	struct buf log = { 0 };
	char how[64];

	cr_assert_eq(uv_loop_init(&loop), 0);
	p = start_sh(&loop, "echo listening 127.0.0.1:1; echo oops >&2; printf 'ready'; exit 3");
	run(&loop);
	cr_assert_eq(seen.exits, 1);
	cr_assert_eq(seen.closed, 1);
	cr_assert_eq(seen.nlines, 2, "got %u lines", seen.nlines);
	cr_assert_str_eq(seen.lines[0], "listening 127.0.0.1:1");
	cr_assert_str_eq(seen.lines[1], "ready", "a last line without a newline still counts");
	cr_assert_not(p->running);
	cr_assert_eq(p->exit_status, 3);
	cr_assert_eq(p->term_signal, 0);
	proc_describe_exit(p, how, sizeof(how));
	cr_assert_str_eq(how, "exited with status 3");
	read_whole(log_path, &log);
	cr_assert(strstr(log.data, "listening 127.0.0.1:1\n"), "stdout is logged: %s", log.data);
	cr_assert(strstr(log.data, "oops\n"), "stderr is logged: %s", log.data);
	cr_assert(strstr(log.data, "ready"), "%s", log.data);
	buf_free(&log);
}

Test(proc, signal_reaches_the_whole_group, .timeout = 10)
{
	uv_loop_t loop;
	struct proc *p;
	char how[64];
	int i;

	cr_assert_eq(uv_loop_init(&loop), 0);
	/* sh waits on a sleep of its own; on_line signals the group when told its pid. */
	p = start_sh(&loop, "sleep 30 & echo grandchild $!; wait");
	run(&loop);
	cr_assert_gt(seen.grandchild, 0);
	cr_assert_eq(p->term_signal, SIGTERM, "sh: %d", p->term_signal);
	proc_describe_exit(p, how, sizeof(how));
	cr_assert_str_eq(how, "killed by SIGTERM");
	/* The sleep got it too: it is gone (reaped by init) within 2 s. */
	for (i = 0; i < 200 && alive(seen.grandchild); i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);	/* polling another process's death: no event to wait on */
	}
	cr_assert_not(alive(seen.grandchild), "the grandchild %d outlived its group",
		      seen.grandchild);
}

Test(proc, group_is_not_the_runners, .timeout = 10)
{
	uv_loop_t loop;
	struct proc *p;

	cr_assert_eq(uv_loop_init(&loop), 0);
	p = start_sh(&loop, "exit 0");
	cr_assert_eq(getpgid(p->pid), p->pid, "the child leads a process group of its own");
	cr_assert_neq(getpgid(p->pid), getpgrp());
	run(&loop);
	cr_assert_eq(p->exit_status, 0);
}

Test(proc, no_such_program, .timeout = 10)
{
	static struct proc p;
	const char *argv[] = { "/nonexistent/program", NULL };
	uv_loop_t loop;

	cr_assert_eq(uv_loop_init(&loop), 0);
	memset(&p, 0, sizeof(p));
	cr_assert_eq(proc_start(&p, &loop, "nope", argv, log_path), -ENOENT);
	cr_assert_not(p.running);
	proc_close(&p, on_closed);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(seen.closed, 1, "on_closed ran once the handles closed");
	cr_assert_eq(uv_loop_close(&loop), 0);
}

/*
 * The child's last words reach the exit callback, even when the loop
 * first runs after the child has exited (waitid without reaping makes
 * sure of it), so that the pipes and the exit are seen in one poll: libuv
 * reads the pipes before it handles SIGCHLD.
 */
Test(proc, stderr_is_in_the_tail_at_the_exit, .timeout = 10)
{
	uv_loop_t loop;
	siginfo_t info;
	struct proc *p;

	cr_assert_eq(uv_loop_init(&loop), 0);
	p = start_sh(&loop, "echo ready; echo one >&2; echo two >&2; printf 'last words' >&2; "
		     "exit 3");
	cr_assert_eq(waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOWAIT), 0);
	run(&loop);
	cr_assert_eq(seen.exits, 1);
	cr_assert_str_eq(seen.tail, "one\ntwo\nlast words", "%s", seen.tail);
	cr_assert_eq(seen.lines_at_exit, 1, "stdout's line came after the exit");
}

/* Of a long stderr, the last lines; the line the 8 KiB ring cut into is left out. */
Test(proc, stderr_tail_is_its_last_lines, .timeout = 10)
{
	uv_loop_t loop;
	struct buf log = { 0 };

	cr_assert_eq(uv_loop_init(&loop), 0);
	start_sh(&loop, "i=0; while [ $i -lt 2000 ]; do echo line $i >&2; i=$((i+1)); done; "
		 "echo the end >&2; exit 1");
	run(&loop);
	cr_assert_str_eq(seen.tail, "line 1998\nline 1999\nthe end\n", "%s", seen.tail);
	read_whole(log_path, &log);
	cr_assert(strstr(log.data, "line 0\nline 1\n") && strstr(log.data, "the end\n"),
		  "the log has all of it");
	buf_free(&log);
}

/* A log that cannot be written (a full disk: /dev/full): the error is kept, and the tail too. */
Test(proc, an_unwritable_log_still_leaves_the_tail, .timeout = 10)
{
	uv_loop_t loop;

	cr_assert_eq(uv_loop_init(&loop), 0);
	start_sh_logging(&loop, "echo ready; echo cannot bind 127.0.0.1:1 >&2; exit 2", "/dev/full");
	run(&loop);
	cr_assert_eq(seen.log_err, -ENOSPC, "log_err %d", seen.log_err);
	cr_assert_str_eq(seen.tail, "cannot bind 127.0.0.1:1\n");
	cr_assert_eq(seen.nlines, 1, "stdout is still read after the log failed");
}
