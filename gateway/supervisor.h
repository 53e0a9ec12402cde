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
 * keeps dying: respawn.h) on the same listening socket, so connections
 * that reached it meanwhile wait in its queue. SIGTERM or SIGINT has every
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
	const struct gw_config *cfg;		/* loaded and checked */
	const struct sockaddr_storage *addr;	/* where to serve */
	unsigned workers;			/* N > 1 */
	int argc;				/* the command line, handed to each worker */
	char **argv;
};

/*
 * Runs the gateway as the supervisor of a->workers workers until it is
 * stopped. Returns the exit status: 0 when every worker stopped cleanly
 * after a signal; 1 when the port cannot be had, a worker cannot be
 * started, one exits before all are ready (the others are stopped), or
 * one exits with a status other than 0 at the stop; 2 when the replica's
 * name leaves no room for the workers' (NAME.wK, at most 63 bytes).
 */
int supervisor_run(const struct supervisor_args *a);

#endif
