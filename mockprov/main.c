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
#include "mockprov/provider.h"

static const char usage_text[] =
	"usage: mockprov --config FILE [--t0 MS] [--log-dir DIR] [--admin HOST:PORT]\n"
	"                [--allow-remote] [--seed N] [--log-level LEVEL]\n"
	"       mockprov --check-config FILE [--allow-remote]\n"
	"\n"
	"Serves the mock providers of FILE, each on its own port, failing on the\n"
	"schedule of its faults.\n"
	"\n"
	"  --config FILE       providers, timing and faults (JSON; see docs/mockprov.md)\n"
	"  --t0 MS             shared time base, Unix epoch ms (default: now)\n"
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

static void stop_all(struct mockprov *mp)
{
	size_t i;

	if (mp->env.stopping)
		return;
	mp->env.stopping = true;
	admin_stop(&mp->admin, NULL, NULL);
	for (i = 0; i < mp->nstarted; i++) {
		if (provider_stop(&mp->providers[i], true, NULL, NULL))
			mp->exit_code = 1;
	}
	uv_close((uv_handle_t *)&mp->sigint, on_handle_closed);
	uv_close((uv_handle_t *)&mp->sigterm, on_handle_closed);
	uv_close((uv_handle_t *)&mp->flusher, on_handle_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct mockprov *mp = s->data;

	log_info("caught %s: stopping", signum == SIGINT ? "SIGINT" : "SIGTERM");
	stop_all(mp);
}

static void parse_args(int argc, char **argv, struct mockprov *mp, const char **config,
		       const char **admin, bool *allow_remote, bool *check_only)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "t0", required_argument, NULL, 't' },
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
	char addr[64];
	struct stat st;
	size_t i;
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
	for (i = 0; i < mp.cfg.nproviders; i++) {
		rc = provider_start(&mp.providers[i], &mp.env, &mp.cfg.providers[i], i, err);
		mp.nstarted = i + 1;
		if (rc) {
			fprintf(stderr, "mockprov: %s\n", err);
			mp.exit_code = 1;
			goto out_stop;
		}
		printf("listening %s %s\n", mp.cfg.providers[i].name, mp.providers[i].addr_text);
	}
	if (admin) {
		rc = admin_start(&mp.admin, &mp.env, mp.providers, mp.nstarted,
				 (const struct sockaddr *)&admin_addr);
		if (rc) {
			fprintf(stderr, "mockprov: --admin: cannot listen on %s: %s\n", admin,
				uv_strerror(rc));
			mp.exit_code = 1;
			goto out_stop;
		}
		printf("admin %s\n", opt_format_addr(http_server_addr(mp.admin.srv), addr,
						     sizeof(addr)));
	}
	uv_signal_init(mp.loop, &mp.sigint);
	uv_signal_init(mp.loop, &mp.sigterm);
	mp.sigint.data = &mp;
	mp.sigterm.data = &mp;
	uv_signal_start(&mp.sigint, on_signal, SIGINT);
	uv_signal_start(&mp.sigterm, on_signal, SIGTERM);
	uv_check_init(mp.loop, &mp.flusher);
	mp.flusher.data = &mp;
	uv_check_start(&mp.flusher, on_flush);
	uv_unref((uv_handle_t *)&mp.flusher);
	printf("ready t0=%lld\n", (long long)mp.env.tb.t0_unix_ms);
	fflush(stdout);
	log_info("serving %zu provider(s); t0=%lld", mp.nstarted,
		 (long long)mp.env.tb.t0_unix_ms);
	uv_run(mp.loop, UV_RUN_DEFAULT);
	goto out_close;
out_stop:
	mp.env.stopping = true;
	admin_stop(&mp.admin, NULL, NULL);
	for (i = 0; i < mp.nstarted; i++)
		provider_stop(&mp.providers[i], false, NULL, NULL);
	uv_run(mp.loop, UV_RUN_DEFAULT);
out_close:
	rc = uv_loop_close(mp.loop);
	if (rc)
		log_warn("event loop closed with handles open: %s", uv_strerror(rc));
	free(mp.providers);
	mock_config_free(&mp.cfg);
	return mp.exit_code;
}
