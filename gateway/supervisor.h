/*
 * supervisor: a gateway of several worker processes (workers: N, N > 1),
 * as the process the user starts. It opens N listening sockets on the
 * one port, each with SO_REUSEPORT (the kernel spreads new connections
 * over them), before any worker runs, and keeps them; it starts N
 * workers — this program again, with --worker K — each with its own
 * socket, its own event loop, a Unix socket to the supervisor's hub
 * (hub.h) and the config's bytes as they were at the start; once all
 * serve it prints "listening HOST:PORT" and "ready". A worker that dies
 * is logged and started again (at once, or after a back-off when it
 * keeps dying: respawn.h) on the same listening socket, which a live
 * worker serves meanwhile (handed over through the hub), so that no
 * connection waits out the back-off. SIGTERM or SIGINT has every
 * worker drain (the supervisor's own copies of the sockets closed first,
 * so that the port refuses new connections once the workers' close); a
 * second one cuts them; it exits once every worker has.
 */
#ifndef FAULTLINE_GATEWAY_SUPERVISOR_H
#define FAULTLINE_GATEWAY_SUPERVISOR_H

#include <sys/socket.h>

#include "gateway/config.h"

/* The file descriptors a worker is started with (gateway --worker K). */
#define SUPERVISOR_FD_LISTEN 3		/* its listening socket */
#define SUPERVISOR_FD_HUB 4		/* its socket to the hub */
#define SUPERVISOR_FD_CONFIG 5		/* the config file's bytes (read from offset 0) */

struct supervisor_args {
	const char *config_path;		/* --config, as given */
	int config_fd;				/* its bytes (supervisor_config_copy), which cfg
						 * was loaded from; the supervisor's to close */
	const struct gw_config *cfg;		/* loaded and checked */
	const struct sockaddr_storage *addr;	/* where to serve */
	unsigned workers;			/* N > 1 */
	int argc;				/* the command line, handed to each worker */
	char **argv;
};

/*
 * Runs the gateway as the supervisor of a->workers workers until it is
 * stopped. Returns the exit status: 0 when every worker stopped cleanly
 * after a signal; 1 when the port cannot be had (another process listens
 * there, another workers gateway too), a worker cannot be
 * started, one exits before all are ready (the others are stopped), one
 * exits with a status other than 0 at the stop, or connections waiting on
 * a dead worker's socket that no live worker served were dropped at it. The workers' names
 * are to be checked first (supervisor_check_names).
 */
int supervisor_run(const struct supervisor_args *a);

/*
 * The config file's bytes at path in an anonymous file (memfd), read
 * once: the gateway loads its config from it, and every worker — one
 * started again an hour later too — reads the same bytes, those that were
 * checked. Returns its descriptor, or -1 with "PATH: cannot open: …" (or
 * the like) in err (CFG_ERR_LEN bytes).
 */
int supervisor_config_copy(const char *path, char *err);

/*
 * Whether replica leaves room for the names of workers workers, NAME.wK
 * (at most 63 bytes), as a start and --check-config both check. Returns
 * 0, or -EINVAL with the message (naming config_path) on stderr.
 */
int supervisor_check_names(const char *config_path, const char *replica, unsigned workers);

#endif
