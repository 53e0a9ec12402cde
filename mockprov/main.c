/*
 * mockprov: scriptable OpenAI-compatible mock providers that fail on a
 * schedule. One process serves every provider of its config, each on its
 * own port; see docs/mockprov.md for the config, the faults and the admin API.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "mockprov/admin.h"
#include "common/clock.h"
#include "mockprov/config.h"
#include "common/log.h"
#include "common/opt.h"
#include "common/waketick.h"
#include "mockprov/provider.h"

static const char usage_text[] =
	"usage: mockprov --config FILE [--t0 MS] [--listen-at MS] [--log-dir DIR]\n"
	"                [--admin HOST:PORT] [--allow-remote] [--seed N] [--log-level LEVEL]\n"
	"       mockprov --check-config FILE [--allow-remote]\n"
	"\n"
	"Serves the mock providers of FILE, each on its own port, failing on the\n"
	"schedule of its faults.\n"
	"\n"
	"  --config FILE       providers, timing and faults (JSON; see docs/mockprov.md)\n"
	"  --t0 MS             shared time base, Unix epoch ms (default: now)\n"
	"  --listen-at MS      load the config now, but listen (and serve) only at MS\n"
	"                      after t0, not before: a restart on the timeline's time\n"
	"                      (default: at once)\n"
	"  --log-dir DIR       where mock-NAME.csv goes (default: .)\n"
	"  --admin HOST:PORT   serve the admin API (state, inject, clear)\n"
	"  --allow-remote      let --admin and the providers' listen be addresses\n"
	"                      other than loopback (127.0.0.0/8, [::1]); without it\n"
	"                      such an address is refused (exit status 2)\n"
	"  --seed N            seed for jitter and fault probabilities (default: 1)\n"
	"  --log-level LEVEL   debug, info, warn, error or off (default: info)\n"
	"  --check-config FILE load and check FILE as a start would, then exit: 0 and\n"
	"                      'FILE: ok' when it is good, 2 and the error when not;\n"
	"                      nothing is opened or written\n"
	"  --help              this text\n"
	"\n"
	"On start it prints 'listening NAME HOST:PORT' for each provider, then\n"
	"'ready'. SIGINT or SIGTERM stops it: logs are completed, exit status 0;\n"
	"1 when a log could not be written whole (it keeps its .tmp name).\n";

struct mockprov {
	uv_loop_t *loop;
	struct mock_env env;
	struct mock_config cfg;
	struct provider *providers;
	size_t nstarted;
	struct admin admin;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_check_t flusher;
	uv_timer_t listen_timer;	/* --listen-at: until the providers listen */
	uv_timer_t waketick;		/* bounds the kernel's timer slack (waketick.h) */
	double listen_at_ms;		/* on the t0 time base; < 0: at once */
	const struct sockaddr_storage *admin_addr;	/* NULL: no admin API */
	const char *admin_text;
	int exit_code;
};

/* Each loop iteration hands the rows written in it to the kernel. */
static void on_flush(uv_check_t *h)
{
	struct mockprov *mp = h->data;
	size_t i;

	for (i = 0; i < mp->nstarted; i++)
		provider_flush_log(&mp->providers[i]);
}

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

/* Stops everything; keep_log false after a start that failed (provider_stop). */
static void stop_all(struct mockprov *mp, bool keep_log)
{
	size_t i;

	if (mp->env.stopping)
		return;
	mp->env.stopping = true;
	admin_stop(&mp->admin, NULL, NULL);
	for (i = 0; i < mp->nstarted; i++) {
		if (provider_stop(&mp->providers[i], keep_log, NULL, NULL))
			mp->exit_code = 1;
	}
	uv_close((uv_handle_t *)&mp->sigint, on_handle_closed);
	uv_close((uv_handle_t *)&mp->sigterm, on_handle_closed);
	uv_close((uv_handle_t *)&mp->flusher, on_handle_closed);
	uv_close((uv_handle_t *)&mp->listen_timer, on_handle_closed);
	uv_close((uv_handle_t *)&mp->waketick, on_handle_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct mockprov *mp = s->data;

	log_info("caught %s: stopping", signum == SIGINT ? "SIGINT" : "SIGTERM");
	stop_all(mp, true);
}

/*
 * Starts every provider (and the admin API), then says "ready"; a provider
 * that cannot start stops everything, exit status 1.
 */
static void serve(struct mockprov *mp)
{
	char err[CFG_ERR_LEN];
	char addr[64];
	size_t i;
	int rc;

	for (i = 0; i < mp->cfg.nproviders; i++) {
		rc = provider_start(&mp->providers[i], &mp->env, &mp->cfg.providers[i], i, err);
		mp->nstarted = i + 1;
		if (rc) {
			fprintf(stderr, "mockprov: %s\n", err);
			goto fail;
		}
		printf("listening %s %s\n", mp->cfg.providers[i].name, mp->providers[i].addr_text);
	}
	if (mp->admin_addr) {
		rc = admin_start(&mp->admin, &mp->env, mp->providers, mp->nstarted,
				 (const struct sockaddr *)mp->admin_addr);
		if (rc) {
			fprintf(stderr, "mockprov: --admin: cannot listen on %s: %s\n",
				mp->admin_text, uv_strerror(rc));
			goto fail;
		}
		printf("admin %s\n", opt_format_addr(http_server_addr(mp->admin.srv), addr,
						     sizeof(addr)));
	}
	uv_check_start(&mp->flusher, on_flush);
	printf("ready t0=%lld\n", (long long)mp->env.tb.t0_unix_ms);
	fflush(stdout);
	log_info("serving %zu provider(s); t0=%lld", mp->nstarted,
		 (long long)mp->env.tb.t0_unix_ms);
	return;
fail:
	fflush(stdout);
	stop_all(mp, false);
	mp->exit_code = 1;
}

/*
 * --listen-at's timer: serve once the clock has reached it. The timer
 * counts whole milliseconds from the loop's cached time, which can lag the
 * clock, so it is armed to wake a little early and the last stretch is
 * waited out on the clock itself (at most LISTEN_SPIN_MS + 1 of spinning):
 * the listener opens within microseconds of its time, not up to a
 * millisecond and a loop turn after it. A closed loop of clients against
 * a refusing provider counts some 25 refusals a millisecond, so a
 * recovered phase's answered share rests on that precision.
 */
#define LISTEN_SPIN_MS 2.0

static void on_listen_at(uv_timer_t *t)
{
	struct mockprov *mp = t->data;
	double left;

	uv_update_time(mp->loop);
	left = mp->listen_at_ms - timebase_now_ms(&mp->env.tb);
	if (left > LISTEN_SPIN_MS + 1) {
		/* Whole milliseconds, rounded down: it wakes 2 to 3 ms early. */
		uv_timer_start(&mp->listen_timer, on_listen_at, (uint64_t)(left - LISTEN_SPIN_MS), 0);
		return;
	}
	while (timebase_now_ms(&mp->env.tb) < mp->listen_at_ms)
		;
	serve(mp);
}

static void parse_args(int argc, char **argv, struct mockprov *mp, const char **config,
		       const char **admin, bool *allow_remote, bool *check_only)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "t0", required_argument, NULL, 't' },
		{ "listen-at", required_argument, NULL, 'L' },
		{ "log-dir", required_argument, NULL, 'd' },
		{ "admin", required_argument, NULL, 'a' },
		{ "allow-remote", no_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t t0 = clock_unix_ms();
	int64_t v;
	enum log_level level;
	const char *val;
	int c;

	mp->env.log_dir = ".";
	mp->env.seed = 1;
	mp->listen_at_ms = -1;
	while ((c = opt_next("mockprov", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'c':
			*config = val;
			break;
		case 'C':
			*config = val;
			*check_only = true;
			break;
		case 't':
			if (opt_parse_i64(val, 0, INT64_MAX / 1000000, &t0))
				opt_usage_error("mockprov", "--t0: expected Unix epoch milliseconds, got \"%s\"", val);
			break;
		case 'L':
			if (opt_parse_double(val, 0, 1e12, &mp->listen_at_ms))
				opt_usage_error("mockprov", "--listen-at: expected milliseconds after "
						"t0, 0 or more, got \"%s\"", val);
			break;
		case 'd':
			mp->env.log_dir = val;
			break;
		case 'a':
			*admin = val;
			break;
		case 'r':
			*allow_remote = true;
			break;
		case 's':
			if (opt_parse_i64(val, 0, INT64_MAX, &v))
				opt_usage_error("mockprov", "--seed: expected a whole number ≥ 0, got \"%s\"", val);
			mp->env.seed = (uint64_t)v;
			break;
		case 'l':
			if (log_parse_level(val, &level))
				opt_usage_error("mockprov", "--log-level: expected debug, info, warn, error or off, "
					    "got \"%s\"", val);
			log_set_level(level);
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	if (!*config)
		opt_usage_error("mockprov", "--config FILE is required");
	timebase_init(&mp->env.tb, t0);
}

int main(int argc, char **argv)
{
	struct mockprov mp;
	struct sockaddr_storage admin_addr;
	const char *config = NULL;
	const char *admin = NULL;
	bool allow_remote = false;
	bool check_only = false;
	char err[CFG_ERR_LEN];
	struct stat st;
	int rc;

	memset(&mp, 0, sizeof(mp));
	log_init("mockprov", LOG_INFO);
	parse_args(argc, argv, &mp, &config, &admin, &allow_remote, &check_only);
	if (admin && opt_parse_hostport(admin, &admin_addr))
		opt_usage_error("mockprov", "--admin: expected HOST:PORT, got \"%s\"", admin);
	if (admin && !allow_remote && !opt_addr_is_loopback((struct sockaddr *)&admin_addr))
		opt_usage_error("mockprov", "--admin: %s is not a loopback address; the admin "
				"API listens on loopback (127.0.0.0/8, [::1]) unless --allow-remote "
				"is given", admin);
	if (stat(mp.env.log_dir, &st) || !S_ISDIR(st.st_mode))
		opt_usage_error("mockprov", "--log-dir: \"%s\" is not a directory", mp.env.log_dir);
	if (mock_config_load(config, &mp.cfg, err) ||
	    (!allow_remote && mock_config_require_loopback(&mp.cfg, config, err))) {
		fprintf(stderr, "mockprov: %s\n", err);
		mock_config_free(&mp.cfg);
		return 2;
	}
	if (check_only) {
		printf("%s: ok\n", config);
		mock_config_free(&mp.cfg);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a file past RLIMIT_FSIZE: a write error to report, not a death */
	opt_raise_fd_limit(0);
	mp.loop = uv_default_loop();
	mp.env.loop = mp.loop;
	http_server_config_default(&mp.env.http);
	mp.providers = calloc(mp.cfg.nproviders, sizeof(*mp.providers));
	if (!mp.providers) {
		fprintf(stderr, "mockprov: out of memory\n");
		return 1;
	}
	mp.exit_code = 0;
	mp.admin_addr = admin ? &admin_addr : NULL;
	mp.admin_text = admin;
	uv_signal_init(mp.loop, &mp.sigint);
	uv_signal_init(mp.loop, &mp.sigterm);
	mp.sigint.data = &mp;
	mp.sigterm.data = &mp;
	uv_signal_start(&mp.sigint, on_signal, SIGINT);
	uv_signal_start(&mp.sigterm, on_signal, SIGTERM);
	uv_check_init(mp.loop, &mp.flusher);
	mp.flusher.data = &mp;
	uv_unref((uv_handle_t *)&mp.flusher);
	uv_timer_init(mp.loop, &mp.listen_timer);
	mp.listen_timer.data = &mp;
	waketick_start(mp.loop, &mp.waketick);
	if (mp.listen_at_ms >= 0)
		on_listen_at(&mp.listen_timer);
	else
		serve(&mp);
	uv_run(mp.loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(mp.loop);
	if (rc)
		log_warn("event loop closed with handles open: %s", uv_strerror(rc));
	free(mp.providers);
	mock_config_free(&mp.cfg);
	return mp.exit_code;
}
