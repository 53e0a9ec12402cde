/*
 * admin: mockprov's admin API on --admin HOST:PORT — read the state of every
 * provider, inject a fault now for a duration, clear faults.
 *
 *   GET    /state                 providers, listeners, counts, faults
 *   POST   /faults                {"provider":NAME,"kind":…,"duration_s":S,…}
 *   DELETE /faults[?provider=NAME]
 *   GET    /healthz
 */
#ifndef FAULTLINE_ADMIN_H
#define FAULTLINE_ADMIN_H

#include <sys/socket.h>

#include "common/http_server.h"
#include "mockprov/provider.h"

struct admin {
	struct http_server *srv;
	struct mock_env *env;
	struct provider *providers;
	size_t nproviders;
};

/*
 * Starts the admin server on addr. Returns 0 or a libuv error code.
 */
int admin_start(struct admin *a, struct mock_env *env, struct provider *providers,
		size_t nproviders, const struct sockaddr *addr);

/* Stops the admin server; done is called when its handles are closed. */
void admin_stop(struct admin *a, void (*done)(void *arg), void *arg);

#endif
