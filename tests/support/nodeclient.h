/*
 * nodeclient: running the official SDKs as real clients — a script of
 * tests/node/ under node, with the npm packages the Makefile installed
 * into $FAULTLINE_NODE_PREFIX — and collecting what it printed.
 */
#ifndef FAULTLINE_NODECLIENT_H
#define FAULTLINE_NODECLIENT_H

#include <stddef.h>

/*
 * Why a test cannot run `package` under node: node is not on $PATH,
 * $FAULTLINE_NODE_PREFIX is not set, or the package is not installed
 * there. NULL when it can. The reason is a static buffer.
 */
const char *node_unavailable(const char *package);

/*
 * Runs node with args (the script first, NULL-terminated) within
 * timeout_ms, its stdout into out and its stderr into err (each kept
 * NUL-terminated, cut at their sizes). Returns its exit status, or -1
 * when it had to be killed at the timeout or could not start.
 */
int node_run(const char *const *args, char *out, size_t outlen, char *err, size_t errlen,
	     double timeout_ms);

#endif
