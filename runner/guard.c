/*
 * guard: the lifeline (a pipe only the runner can write to) and `chaos
 * _guard`, which hangs a watcher on it for each child.
 */
#include "runner/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* This process's lifeline, both ends close-on-exec; -1 before guard_init. */
static int lifeline_read = -1;
static int lifeline_write = -1;
static char self_path[PATH_MAX];

/*
 * A close-on-exec copy of fd above stdio (a runner started with fd 0–2
 * closed would get them from pipe()), the original closed; -1 on failure.
 */
static int moved_up(int fd)
{
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	close(fd);
	return moved;
}

int guard_init(void)
{
	int fds[2];
	ssize_t n;

	if (lifeline_write >= 0)
		return 0;
	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	self_path[n] = '\0';
	if (pipe(fds))
		return -errno;
	fds[0] = moved_up(fds[0]);
	fds[1] = moved_up(fds[1]);
	if (fds[0] < 0 || fds[1] < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		return -EMFILE;
	}
	/* The write end is never written: it only has to stay open while we live. */
	lifeline_read = fds[0];
	lifeline_write = fds[1];
	return 0;
}

const char *guard_program(void)
{
	return lifeline_write >= 0 ? self_path : NULL;
}

int guard_lifeline(void)
{
	return lifeline_read;
}

/*
 * The watcher, forked before the guard becomes the program (leader, which
 * leads the process group the runner signals). Never returns.
 */
static void watch(pid_t leader)
{
	struct pollfd pfd = { .fd = GUARD_LIFELINE_FD, .events = POLLIN };
	int devnull;
	int n;

	/*
	 * Out of the program's group: the runner's SIGTERM and SIGKILL to the
	 * group, and its check that nothing of the group is left, are the
	 * program's alone. Then die with the program (the program may already
	 * be gone: then the parent is no longer leader).
	 */
	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != leader)
		_exit(0);
	/* Let go of the runner's pipes, so only the program holds them. */
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	do {
		n = poll(&pfd, 1, -1);
	} while (n < 0 && errno == EINTR);
	/* Readable or hung up: the runner never writes, so it is gone (n < 0: we cannot tell, and act). */
	kill(-leader, SIGKILL);
	if (getppid() == leader)
		kill(leader, SIGKILL);	/* it left its group */
	_exit(0);
}

int guard_main(int argc, char **argv)
{
	pid_t leader = getpid();
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "chaos: _guard PROGRAM [ARGS...] is for the runner's own use\n");
		return 127;
	}
	if (fcntl(GUARD_LIFELINE_FD, F_SETFD, FD_CLOEXEC)) {
		fprintf(stderr, "chaos: _guard: no lifeline on fd %d (%s): it is for the runner's "
			"own use\n", GUARD_LIFELINE_FD, strerror(errno));
		return 127;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "chaos: _guard: cannot fork: %s\n", strerror(errno));
		return 127;
	}
	if (pid == 0)
		watch(leader);
	execvp(argv[2], argv + 2);
	fprintf(stderr, "chaos: cannot start %s: %s\n", argv[2], strerror(errno));
	return 127;	/* the watcher dies with us */
}
