/*
 * proc: the runner's child processes (mockprov, the setup under test,
 * loadgen, gnuplot) on its libuv loop. Each runs in a process group of its
 * own (a new session), so a signal to the group also reaches whatever it
 * started and a Ctrl-C at the terminal reaches only the runner, which stops
 * each group itself; once guard_init has run, each is started through
 * `chaos _guard` and dies with the runner (guard.h). A child's stdout is
 * read line by line — the `listening` and `ready` lines the programs print
 * — and, with its stderr, appended to a log file; the last PROC_TAIL_BYTES
 * of its stderr are also kept in memory, so a crash report does not depend
 * on the log having been written. Its exit is reported once.
 */
#ifndef FAULTLINE_RUNNER_PROC_H
#define FAULTLINE_RUNNER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/buf.h"

/* How much of a child's stderr is kept in memory (its last bytes). */
#define PROC_TAIL_BYTES 8192

struct proc;

/* One line of the child's stdout, without its newline. */
typedef void (*proc_line_cb)(struct proc *p, const char *line);

/* The child has exited: exit_status and term_signal are set. */
typedef void (*proc_exit_cb)(struct proc *p);

struct proc {
	uv_process_t handle;		/* first: the handle's memory is the proc's */
	uv_pipe_t out;			/* the child's stdout */
	uv_pipe_t err;			/* the child's stderr */
	uv_loop_t *loop;
	char name[64];			/* for messages: "mockprov", "gateway"… */
	char *log_path;			/* owned until closed; NULL before proc_start */
	int log_fd;			/* -1 once closed */
	int log_err;			/* the first error writing the log (negative errno); 0: none */
	char tail[PROC_TAIL_BYTES];	/* the end of its stderr, a ring */
	uint64_t tail_total;		/* bytes of stderr ever read (tail_total % size: the ring's end) */
	pid_t pid;			/* also the process group's id */
	bool running;			/* started, exit not yet seen */
	int64_t exit_status;
	int term_signal;		/* 0 unless a signal ended it */
	struct buf line;		/* the stdout line being read */
	proc_line_cb on_line;		/* may be NULL */
	proc_exit_cb on_exit;		/* may be NULL */
	void *data;			/* the caller's */
	int open_handles;		/* the handles proc_close still waits for */
	bool closing;			/* they are being closed */
	void (*on_closed)(struct proc *p);
};

/*
 * Starts argv (argv[0] a path, or a name looked for on PATH; the list
 * NULL-terminated) in a new process group, with stdin from /dev/null, and
 * stdout and stderr read by p and appended to log_path (the file is
 * created or appended to; a failed write is noted in log_err, and the rest
 * of the output still read). Set p's on_line, on_exit and data before the
 * call (the rest is p's own). Returns 0, or a negative errno (-ENOENT: no
 * such program) with nothing running; either way p goes to proc_close
 * before its memory is freed.
 */
int proc_start(struct proc *p, uv_loop_t *loop, const char *name, const char *const argv[],
	       const char *log_path);

/*
 * Sends sig to the child's whole process group. Returns 0, -ESRCH when the
 * group is gone, or another negative errno.
 */
int proc_signal(struct proc *p, int sig);

/*
 * Closes p's handles and log once the child has exited (call it from
 * on_exit or later); on_closed (may be NULL) runs when they are closed,
 * after which p's memory may be freed.
 */
void proc_close(struct proc *p, void (*on_closed)(struct proc *p));

/* Describes how the child ended: "exited with status 2", "killed by SIGKILL". */
void proc_describe_exit(const struct proc *p, char *out, size_t len);

/*
 * Appends the last nlines lines of the child's stderr (of its last
 * PROC_TAIL_BYTES; a line cut there is left out) to out, for a crash
 * report. Returns 0 or -ENOMEM.
 */
int proc_stderr_tail(const struct proc *p, size_t nlines, struct buf *out);

#endif
