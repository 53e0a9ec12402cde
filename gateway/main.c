/*
 * gateway: an OpenAI-compatible failover gateway — model aliases over
 * ordered provider chains, per-attempt timeouts under one deadline,
 * same-target retries, circuit breakers, Prometheus metrics. See
 * docs/gateway.md for the endpoints and headers, docs/gateway-config.md
 * for the config.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <uv.h>

#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/supervisor.h"
#include "gateway/worker.h"
#include "common/json.h"
#include "common/log.h"
#include "common/opt.h"
#include "common/waketick.h"

/* Descriptors the gateway keeps for itself: listener, loop, events file, health checks. */
#define FD_RESERVE 64

static const char usage_text[] =
	"usage: gateway --config FILE [--listen HOST:PORT] [--events FILE] [--seed N] [--t0 MS]\n"
	"               [--replica NAME] [--workers N] [--allow-remote] [--log-level LEVEL]\n"
	"       gateway --check-config FILE [--listen HOST:PORT] [--allow-remote]\n"
	"\n"
	"Serves an OpenAI-compatible API that fails over between the providers of\n"
	"FILE, with per-attempt timeouts under one deadline and circuit breakers.\n"
	"\n"
	"  --config FILE       providers, model aliases, budgets (JSON; see docs/gateway-config.md)\n"
	"  --listen HOST:PORT  where to serve (default: the config's listen)\n"
	"  --events FILE       append a JSON line per breaker state change\n"
	"  --seed N            seed for retry and cooldown jitter (default: the config's)\n"
	"  --t0 MS             a run's shared time base (Unix epoch ms): each provider's\n"
	"                      first health check at t0 plus a phase drawn from the seed\n"
	"                      (default: at once)\n"
	"  --replica NAME      this replica's name in the shared state and events\n"
	"                      (default: the config's shared_state.replica, gateway)\n"
	"  --workers N         serve with N worker processes on the one port, sharing\n"
	"                      breakers, health and budgets (default: the config's\n"
	"                      workers, 1)\n"
	"  --allow-remote      allow provider base URLs and a listen address that are\n"
	"                      not loopback (the latter needs auth.keys_env)\n"
	"  --log-level LEVEL   debug, info, warn, error or off (default: info)\n"
	"  --check-config FILE load and check FILE as a start would, then exit: 0 and\n"
	"                      'FILE: ok' when it is good, 2 and the error when not;\n"
	"                      nothing is opened or written\n"
	"  --help              this text\n"
	"\n"
	"On start it prints 'listening HOST:PORT', then 'ready'. SIGTERM or SIGINT\n"
	"stops it once the requests in progress are answered; a second one at once.\n"
	"(--worker K is the supervisor's, for the workers it starts.)\n";

struct args {
	const char *config;
	const char *listen;
	const char *events;
	const char *replica;		/* --replica, or NULL */
	bool allow_remote;
	bool check_only;		/* --check-config: validate, then exit */
	bool have_seed;
	uint64_t seed;
	int64_t t0;			/* --t0; 0: none */
	unsigned workers;		/* --workers; 0: the config's */
	unsigned worker;		/* --worker K: this is worker K of a supervisor's; 0: not */
	enum log_level level;		/* --log-level */
};

struct main_state {
	uv_loop_t *loop;
	struct gateway gw;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_timer_t waketick;		/* bounds the kernel's timer slack (waketick.h) */
	bool stopping;
	bool closed;
};

static struct main_state *the_state;

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

/* Everything is answered (or cut): close the handles; the loop then ends. */
static void shut_down(struct gateway *gw)
{
	struct main_state *ms = the_state;

	(void)gw;
	if (ms->closed)
		return;
	ms->closed = true;
	log_info("stopped");
	gateway_close(&ms->gw);
	uv_close((uv_handle_t *)&ms->sigint, on_handle_closed);
	uv_close((uv_handle_t *)&ms->sigterm, on_handle_closed);
	uv_close((uv_handle_t *)&ms->waketick, on_handle_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct main_state *ms = s->data;
	const char *name = signum == SIGINT ? "SIGINT" : "SIGTERM";

	if (ms->stopping) {
		log_info("caught %s again: cutting %llu request(s) in flight", name,
			 (unsigned long long)ms->gw.in_flight);
		shut_down(&ms->gw);
		return;
	}
	ms->stopping = true;
	log_info("caught %s: draining %llu request(s) in flight", name,
		 (unsigned long long)ms->gw.in_flight);
	gateway_drain(&ms->gw, shut_down);
}

/* A worker whose supervisor is gone drains, as on SIGTERM. */
static void on_supervisor_lost(struct gateway *gw)
{
	struct main_state *ms = the_state;

	if (ms->stopping)
		return;
	ms->stopping = true;
	gateway_drain(gw, shut_down);
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'L' },
		{ "events", required_argument, NULL, 'e' },
		{ "seed", required_argument, NULL, 's' },
		{ "t0", required_argument, NULL, 't' },
		{ "replica", required_argument, NULL, 'R' },
		{ "workers", required_argument, NULL, 'W' },
		{ "worker", required_argument, NULL, 'K' },
		{ "allow-remote", no_argument, NULL, 'r' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum log_level level;
	const char *val;
	int64_t v;
	int c;

	while ((c = opt_next("gateway", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'c':
			a->config = val;
			break;
		case 'C':
			a->config = val;
			a->check_only = true;
			break;
		case 'L':
			a->listen = val;
			break;
		case 'e':
			a->events = val;
			break;
		case 's':
			if (opt_parse_i64(val, 0, INT64_MAX, &v))
				opt_usage_error("gateway", "--seed: expected a whole number >= 0, got \"%s\"",
						val);
			a->seed = (uint64_t)v;
			a->have_seed = true;
			break;
		case 't':
			if (opt_parse_i64(val, 1, INT64_MAX, &v))
				opt_usage_error("gateway", "--t0: expected Unix epoch milliseconds, got "
						"\"%s\"", val);
			a->t0 = v;
			break;
		case 'R':
			a->replica = val;
			break;
		case 'W':
			if (opt_parse_i64(val, 1, GW_WORKERS_MAX, &v))
				opt_usage_error("gateway", "--workers: expected a whole number from 1 "
						"to %d, got \"%s\"", GW_WORKERS_MAX, val);
			a->workers = (unsigned)v;
			break;
		case 'K':
			if (opt_parse_i64(val, 1, GW_WORKERS_MAX, &v))
				opt_usage_error("gateway", "--worker: expected a whole number from 1 "
						"to %d, got \"%s\"", GW_WORKERS_MAX, val);
			a->worker = (unsigned)v;
			break;
		case 'r':
			a->allow_remote = true;
			break;
		case 'l':
			if (log_parse_level(val, &level))
				opt_usage_error("gateway", "--log-level: expected debug, info, warn, error "
						"or off, got \"%s\"", val);
			log_set_level(level);
			a->level = level;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	if (!a->config)
		opt_usage_error("gateway", "--config FILE is required");
}

/*
 * Raises the open-file limit to its hard limit — and the hard limit, when
 * allowed — and warns when it is still less than the gateway may need at
 * max_connections: a client connection and an upstream one (the
 * connections libcurl keeps, CURLMOPT_MAXCONNECTS) for each, and some for
 * itself (warn: say so; a workers gateway's first worker speaks for all).
 */
static void check_fd_limit(const struct gw_config *cfg, bool warn)
{
	long long need = 2 * (long long)cfg->max_connections + FD_RESERVE;
	struct rlimit rl = { 0 };

	if (opt_raise_fd_limit(need) != -EMFILE)
		return;
	/* Where the process may (CAP_SYS_RESOURCE), the hard limit goes up too. */
	rl = (struct rlimit){ (rlim_t)need, (rlim_t)need };
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (!warn)
		return;
	log_warn("the open-file limit is %llu, but max_connections %u may need %lld descriptors "
		 "(a client and an upstream connection each, and %d for the gateway itself): "
		 "raise it (ulimit -n) or lower max_connections; when descriptors run out, "
		 "requests get 503 gateway_overloaded", (unsigned long long)rl.rlim_cur,
		 cfg->max_connections, need, FD_RESERVE);
}

/*
 * A worker's config: the bytes the supervisor read at its start (fd
 * SUPERVISOR_FD_CONFIG), so that a worker started again later runs the
 * same config; messages still name the file. Returns 0 or -EINVAL.
 */
static int load_worker_config(const struct args *a, struct gw_config *cfg, char *err)
{
	char path[32];
	cJSON *root;
	int rc;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", SUPERVISOR_FD_CONFIG);
	memset(cfg, 0, sizeof(*cfg));
	root = json_load_file(path, err, CFG_ERR_LEN);
	close(SUPERVISOR_FD_CONFIG);
	if (!root)
		return -EINVAL;
	rc = gw_config_from_json(root, a->config, a->allow_remote, cfg, err);
	cJSON_Delete(root);
	return rc;
}

/* A worker's name in the shared state and the events: REPLICA.wK. */
static int name_worker(struct gw_config *cfg, unsigned k, char *err)
{
	char name[96];

	snprintf(name, sizeof(name), "%s.w%u", cfg->shared.replica, k);
	return gw_config_set_replica(cfg, name, err);
}

int main(int argc, char **argv)
{
	static struct main_state ms;
	static char logname[32];
	struct gw_config cfg;
	struct sockaddr_storage addr;
	struct args a = { .level = LOG_INFO };
	struct gateway_worker wk = { 0 };
	char err[CFG_ERR_LEN];
	char text[64];
	int exit_code = 0;
	int rc;

	log_init("gateway", LOG_INFO);
	parse_args(argc, argv, &a);
	if (a.worker) {
		/* Dies with its supervisor, however that dies. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(logname, sizeof(logname), "gateway[w%u]", a.worker);
		log_init(logname, a.level);
	}
	rc = a.worker ? load_worker_config(&a, &cfg, err)
		      : gw_config_load(a.config, a.allow_remote, &cfg, err);
	if (rc) {
		fprintf(stderr, "gateway: %s\n", err);
		return 2;
	}
	if ((a.replica && gw_config_set_replica(&cfg, a.replica, err)) ||
	    (a.worker && name_worker(&cfg, a.worker, err))) {
		fprintf(stderr, "gateway: %s\n", err);
		gw_config_free(&cfg);
		return 2;
	}
	if (a.workers)
		cfg.workers = a.workers;
	addr = cfg.listen;
	if (a.listen && opt_parse_hostport(a.listen, &addr)) {
		gw_config_free(&cfg);
		opt_usage_error("gateway", "--listen: expected HOST:PORT, got \"%s\"", a.listen);
	}
	if (gw_config_check_listen(&cfg, &addr, a.listen ? "--listen" : NULL, a.allow_remote,
				   a.config, err)) {
		fprintf(stderr, "gateway: %s\n", err);
		gw_config_free(&cfg);
		return 2;
	}
	if (a.check_only) {
		printf("%s: ok\n", a.config);
		gw_config_free(&cfg);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a file past RLIMIT_FSIZE: an error to report, not a death */
	if (!a.worker && cfg.workers > 1) {
		struct supervisor_args sa = { a.config, &cfg, &addr, cfg.workers, argc, argv };

		exit_code = supervisor_run(&sa);
		gw_config_free(&cfg);
		return exit_code;
	}
	check_fd_limit(&cfg, a.worker <= 1);	/* the workers' limits are alike: one warns */
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "gateway: cannot initialise libcurl\n");
		gw_config_free(&cfg);
		return 1;
	}
	the_state = &ms;
	ms.loop = uv_default_loop();
	wk = (struct gateway_worker){ a.worker, cfg.workers, SUPERVISOR_FD_HUB, on_supervisor_lost };
	/* Each worker its own jitter: the seed, plus its number less one. */
	if (gateway_init(&ms.gw, ms.loop, &cfg, a.events,
			 (a.have_seed ? a.seed : cfg.seed) + (a.worker ? a.worker - 1 : 0), a.t0,
			 a.worker ? &wk : NULL, err)) {
		fprintf(stderr, "gateway: %s\n", err);
		exit_code = 1;
		goto out_global;
	}
	rc = a.worker ? http_server_listen_fd(ms.gw.srv, SUPERVISOR_FD_LISTEN)
		      : http_server_listen(ms.gw.srv, (const struct sockaddr *)&addr);
	if (rc) {
		fprintf(stderr, "gateway: cannot listen on %s: %s\n",
			opt_format_addr((const struct sockaddr *)&addr, text, sizeof(text)),
			uv_strerror(rc));
		exit_code = 1;
		ms.closed = true;
		gateway_close(&ms.gw);
		uv_run(ms.loop, UV_RUN_DEFAULT);
		goto out_free;
	}
	uv_signal_init(ms.loop, &ms.sigint);
	uv_signal_init(ms.loop, &ms.sigterm);
	waketick_start(ms.loop, &ms.waketick);
	ms.sigint.data = &ms;
	ms.sigterm.data = &ms;
	uv_signal_start(&ms.sigint, on_signal, SIGINT);
	uv_signal_start(&ms.sigterm, on_signal, SIGTERM);
	opt_format_addr(http_server_addr(ms.gw.srv), text, sizeof(text));
	if (a.worker) {
		worker_ready(ms.gw.worker);	/* the supervisor prints the lines */
		log_debug("worker %u of %u (pid %d) serving on %s", a.worker, cfg.workers,
			  (int)getpid(), text);
	} else {
		printf("listening %s\nready\n", text);
		fflush(stdout);
		log_info("serving %zu alias(es) over %zu provider(s) on %s, %s", cfg.naliases,
			 cfg.nproviders, text,
			 cfg.auth.nkeys ? "client keys required" : "no client keys");
	}
	uv_run(ms.loop, UV_RUN_DEFAULT);
	if (ms.gw.events_failed)
		exit_code = 1;
out_free:
	rc = uv_loop_close(ms.loop);
	if (rc)
		log_warn("event loop closed with handles open: %s", uv_strerror(rc));
	gateway_free(&ms.gw);
out_global:
	curl_global_cleanup();
	gw_config_free(&cfg);
	return exit_code;
}
