/*
 * guard: the runner's children die with it. Once guard_init has run, every
 * child proc_start starts goes through `chaos _guard PROGRAM ARGS…` with a
 * lifeline on fd 3: the read end of a pipe whose only write end this
 * process holds (close-on-exec), so the read end sees EOF the moment this
 * process is gone, however it died (SIGKILL included), and at no other
 * time. The guard forks a watcher and then becomes PROGRAM (same pid, so
 * the child's exit status and process group are the program's own); the
 * watcher leaves the program's process group, waits on the lifeline and,
 * at EOF, SIGKILLs the program's whole group — what a setup's `sh -c`
 * started included. It dies with the program otherwise (a parent-death
 * signal). EOF cannot be missed: a runner that dies before a watcher is
 * waiting leaves an EOF the watcher then sees at once.
 */
#ifndef FAULTLINE_RUNNER_GUARD_H
#define FAULTLINE_RUNNER_GUARD_H

/* The fd the lifeline is given to `chaos _guard` on. */
#define GUARD_LIFELINE_FD 3

/*
 * Opens the lifeline and finds this program's own path (/proc/self/exe),
 * so that children started from now on are guarded. Call it once, before
 * the first child. Returns 0 or a negative errno.
 */
int guard_init(void);

/* This program's path when guard_init has run, else NULL (children go unguarded). */
const char *guard_program(void);

/* The lifeline's read end for the children (fd 3 in each), or -1. */
int guard_lifeline(void);

/*
 * `chaos _guard PROGRAM [ARGS…]`, run by the runner itself: arms the
 * watcher and becomes PROGRAM (searched on PATH when it has no slash).
 * Returns only when it could not: 127 after saying why on stderr (no
 * lifeline on fd 3: it was not started by the runner; no such program).
 */
int guard_main(int argc, char **argv);

#endif
