/*
 * loadgen: an open-loop (or closed-loop) load generator for OpenAI-style
 * chat endpoints that records every request. This file reads the command
 * line into a struct lg_config; run.c does the run. See docs/loadgen.md.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "loadgen/mix.h"
#include "common/opt.h"
#include "loadgen/run.h"

static const char usage_text[] =
	"usage: loadgen --target URL [--target URL…] --duration D\n"
	"               (--rate R[/s] [--arrival constant|poisson] |\n"
	"                --concurrency N [--ramp-up D] [--error-think D])\n"
	"               [--mix FILE] [--stream P] [--model NAME] [--prompt-tokens N]\n"
	"               [--max-tokens N] [--response-format JSON|@FILE]\n"
	"               [--timeout D] [--stall-timeout D] [--max-time D]\n"
	"               [--retries N] [--retry-backoff D] [--retry-backoff-max D]\n"
	"               [--connections N] [--requests N] [-H 'Name: value'…]\n"
	"               [--id-prefix P] [--t0 MS] [--seed N] [--progress|--no-progress]\n"
	"               [--allow-remote] [--log-level L] --out DIR\n"
	"\n"
	"Sends chat completion requests to the targets (in turn) and records each\n"
	"one in DIR/requests.csv and DIR/requests.jsonl, with DIR/summary.json.\n"
	"\n"
	"  --target URL          endpoint; a URL ending in / or /v1 gets\n"
	"                        v1/chat/completions or /chat/completions added\n"
	"  --duration D          how long to send (\"10s\", \"500ms\", \"2m\")\n"
	"  --rate R              open loop: requests per second (\"500\", \"30/m\")\n"
	"  --arrival KIND        constant (default) or poisson (seeded)\n"
	"  --concurrency N       closed loop: N clients, each sending when answered\n"
	"  --ramp-up D           closed loop: client k of N begins k*D/N in (0)\n"
	"  --error-think D       closed loop: a client waits D after a request that\n"
	"                        was not ok before its next one (0: no wait)\n"
	"  --mix FILE            request streams (JSON; see docs/loadgen.md)\n"
	"  --stream P            share of requests that stream, 0–1 (default 0)\n"
	"  --model NAME          model to ask for (default: chat)\n"
	"  --prompt-tokens N     prompt length in words (default 16)\n"
	"  --max-tokens N        max_tokens (default 16)\n"
	"  --response-format J   the body's response_format: JSON, or @FILE holding it,\n"
	"                        an object with a string \"type\" (default: none)\n"
	"  --timeout D           answer, or a stream's first token, within D (30s)\n"
	"  --stall-timeout D     a stream silent longer than D is stalled (--timeout)\n"
	"  --max-time D          hard cap on a stream's attempt (10 × --timeout)\n"
	"  --retries N           the client retries a failed request N times (0)\n"
	"  --retry-backoff D     first retry waits up to D, doubling (100ms)\n"
	"  --retry-backoff-max D no wait longer than D (5s)\n"
	"  --connections N       requests in progress at most (open loop; 1024)\n"
	"  --requests N          stop after N requests\n"
	"  -H, --header 'N: V'   extra request header (repeatable)\n"
	"  --id-prefix P         x-request-id is P followed by the number (\"\")\n"
	"  --t0 MS               shared time base, Unix epoch ms (default: now)\n"
	"  --seed N              seed for arrivals, streaming choice, jitter (1)\n"
	"  --progress            live line on stderr (default: when a terminal)\n"
	"  --no-progress         no live line\n"
	"  --allow-remote        allow targets outside 127.0.0.0/8, ::1, localhost\n"
	"  --log-level L         debug (each request's state changes), info, warn,\n"
	"                        error or off (default: info)\n"
	"  --out DIR             results directory (created)\n"
	"  --help                this text\n"
	"\n"
	"Exit status: 0 when the run completed (whatever the requests' outcomes),\n"
	"2 for a bad command line or mix file, 1 when it could not run or write,\n"
	"128+N when signal N stopped it (the results are written all the same).\n";

#define PROG "loadgen"

/* Is host a loopback address or localhost? */
static bool host_is_loopback(const char *host)
{
	char buf[64];
	size_t len = strlen(host);
	struct sockaddr_storage ss;

	if (strcasecmp(host, "localhost") == 0)
		return true;
	/* curl gives IPv6 hosts in brackets. */
	if (len > 2 && host[0] == '[' && host[len - 1] == ']') {
		if (len - 2 >= sizeof(buf) - 8)
			return false;
		snprintf(buf, sizeof(buf), "[%.*s]:1", (int)(len - 2), host + 1);
	} else {
		if (len >= sizeof(buf) - 8)
			return false;
		snprintf(buf, sizeof(buf), "%s:1", host);
	}
	if (opt_parse_hostport(buf, &ss))
		return false;
	return opt_addr_is_loopback((struct sockaddr *)&ss);
}

/*
 * Checks a target URL and completes its path: "/" or "" gets
 * "/v1/chat/completions", "…/v1" gets "/chat/completions". Exits 2 when it
 * is not an http(s) URL, or not loopback without --allow-remote.
 */
static char *target_url(const char *arg, bool allow_remote)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	char *path = NULL;
	char *out = NULL;
	const char *add = "";
	size_t plen;

	if (!u)
		opt_usage_error(PROG, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, arg, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0))
		opt_usage_error(PROG, "--target: expected a URL like http://127.0.0.1:8080/v1, "
				"got \"%s\"", arg);
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
		opt_usage_error(PROG, "--target: expected an http:// or https:// URL, got \"%s\"",
				arg);
	if (!allow_remote && !host_is_loopback(host))
		opt_usage_error(PROG, "--target: %s is not a loopback address (127.0.0.0/8, ::1, "
				"localhost); add --allow-remote to send load elsewhere", host);
	plen = strlen(path);
	if (plen == 0 || strcmp(path, "/") == 0)
		add = "v1/chat/completions";
	else if (plen >= 3 && strcmp(path + plen - 3, "/v1") == 0)
		add = "/chat/completions";
	else if (plen >= 4 && strcmp(path + plen - 4, "/v1/") == 0)
		add = "chat/completions";
	if (add[0]) {
		size_t len = plen + strlen(add) + 2;
		char *np = malloc(len);

		if (!np)
			opt_usage_error(PROG, "out of memory");
		snprintf(np, len, "%s%s", plen ? path : "/", add);
		curl_url_set(u, CURLUPART_PATH, np, 0);
		free(np);
	}
	if (curl_url_get(u, CURLUPART_URL, &out, 0))
		opt_usage_error(PROG, "--target: cannot use \"%s\"", arg);
	curl_free(scheme);
	curl_free(host);
	curl_free(path);
	curl_url_cleanup(u);
	return out;
}

static double parse_duration(const char *flag, const char *val, double min_ms)
{
	double ms;

	if (opt_parse_duration_ms(val, &ms) || ms < min_ms || !isfinite(ms))
		opt_usage_error(PROG, "%s: expected a duration like 500ms, 10s or 2m%s, got \"%s\"",
				flag, min_ms >= 1 ? " (1ms at least)" : min_ms > 0 ? " (more than 0)" : "",
				val);
	return ms;
}

static int64_t parse_int(const char *flag, const char *val, int64_t min, int64_t max)
{
	int64_t v;

	if (opt_parse_i64(val, min, max, &v))
		opt_usage_error(PROG, "%s: expected a whole number from %lld to %lld, got \"%s\"",
				flag, (long long)min, (long long)max, val);
	return v;
}

/* Header lines given with -H: "Name: value", with a name and no CR/LF. */
static void check_header(const char *val)
{
	const char *colon = strchr(val, ':');

	if (!colon || colon == val || strpbrk(val, "\r\n"))
		opt_usage_error(PROG, "--header: expected \"Name: value\", got \"%s\"", val);
	if (mix_header_reserved(val, (size_t)(colon - val)))
		opt_usage_error(PROG, "--header: loadgen sets %.*s itself (it sets %s)",
				(int)(colon - val), val, MIX_RESERVED_HEADERS);
	if (!mix_header_name_ok(val, (size_t)(colon - val)))
		opt_usage_error(PROG, "--header: \"%.*s\" is not a header name",
				(int)(colon - val), val);
}

/*
 * --response-format: JSON text, or @FILE holding it; an object with a
 * string "type", as a mix stream's response_format. Returns it as compact
 * JSON (malloc'ed, kept for the run); exits 2 when it is not one.
 */
static char *parse_response_format(const char *val)
{
	char err[CFG_ERR_LEN];
	char got[96];
	char *out;
	cJSON *v;

	if (val[0] == '@') {
		v = json_load_file(val + 1, err, sizeof(err));
		if (!v)
			opt_usage_error(PROG, "--response-format: %s", err);
	} else {
		v = json_parse_whole(val, strlen(val));
		if (!v)
			opt_usage_error(PROG, "--response-format: expected JSON (or @FILE), "
					"got \"%.60s\"", val);
	}
	if (!mix_response_format_ok(v)) {
		cfg_describe(v, got, sizeof(got));
		cJSON_Delete(v);
		opt_usage_error(PROG, "--response-format: expected %s, got %s",
				MIX_RESPONSE_FORMAT_EXPECTED, got);
	}
	out = cJSON_PrintUnformatted(v);
	cJSON_Delete(v);
	if (!out)
		opt_usage_error(PROG, "out of memory");
	return out;
}

enum {
	O_TARGET = 256, O_DURATION, O_RATE, O_ARRIVAL, O_CONCURRENCY, O_RAMP_UP, O_ERROR_THINK, O_MIX, O_STREAM,
	O_MODEL, O_PROMPT, O_MAXTOK, O_RESPFMT, O_TIMEOUT, O_STALL, O_MAXTIME, O_RETRIES, O_BACKOFF,
	O_BACKOFF_MAX, O_CONNECTIONS, O_REQUESTS, O_IDPREFIX, O_T0, O_SEED, O_PROGRESS,
	O_NO_PROGRESS, O_REMOTE, O_LOGLEVEL, O_OUT, O_HELP,
};

struct cli {
	const char *targets[64];
	size_t ntargets;
	const char *mix_file;
	bool have_rate;
	bool have_arrival;
	bool have_timeout;
	bool have_connections;
	bool have_ramp_up;
	bool have_error_think;
	bool allow_remote;
	int progress;		/* -1: when stderr is a terminal */
	char *response_format;	/* --response-format, compact; NULL: none */
	struct mix_defaults d;
};

static void parse_args(int argc, char **argv, struct lg_config *cfg, struct cli *cli)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, O_TARGET },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "rate", required_argument, NULL, O_RATE },
		{ "arrival", required_argument, NULL, O_ARRIVAL },
		{ "concurrency", required_argument, NULL, O_CONCURRENCY },
		{ "ramp-up", required_argument, NULL, O_RAMP_UP },
		{ "error-think", required_argument, NULL, O_ERROR_THINK },
		{ "mix", required_argument, NULL, O_MIX },
		{ "stream", required_argument, NULL, O_STREAM },
		{ "model", required_argument, NULL, O_MODEL },
		{ "prompt-tokens", required_argument, NULL, O_PROMPT },
		{ "max-tokens", required_argument, NULL, O_MAXTOK },
		{ "response-format", required_argument, NULL, O_RESPFMT },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "stall-timeout", required_argument, NULL, O_STALL },
		{ "max-time", required_argument, NULL, O_MAXTIME },
		{ "retries", required_argument, NULL, O_RETRIES },
		{ "retry-backoff", required_argument, NULL, O_BACKOFF },
		{ "retry-backoff-max", required_argument, NULL, O_BACKOFF_MAX },
		{ "connections", required_argument, NULL, O_CONNECTIONS },
		{ "requests", required_argument, NULL, O_REQUESTS },
		{ "header", required_argument, NULL, 'H' },
		{ "id-prefix", required_argument, NULL, O_IDPREFIX },
		{ "t0", required_argument, NULL, O_T0 },
		{ "seed", required_argument, NULL, O_SEED },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
		{ "allow-remote", no_argument, NULL, O_REMOTE },
		{ "log-level", required_argument, NULL, O_LOGLEVEL },
		{ "out", required_argument, NULL, O_OUT },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	static const char *headers[64];
	bool have_duration = false;
	const char *val;
	int c;

	while ((c = opt_next(PROG, argc, argv, "H:", opts, &val)) != -1) {
		switch (c) {
		case O_TARGET:
			if (cli->ntargets == sizeof(cli->targets) / sizeof(cli->targets[0]))
				opt_usage_error(PROG, "--target: at most 64 targets");
			cli->targets[cli->ntargets++] = val;
			break;
		case O_DURATION:
			cfg->duration_ms = parse_duration("--duration", val, 1e-9);
			have_duration = true;
			break;
		case O_RATE:
			if (opt_parse_rate(val, &cfg->rate) || cfg->rate > 1e6)
				opt_usage_error(PROG, "--rate: expected requests per second above 0 and "
						"at most 1000000 (\"500\", \"500/s\", \"30/m\"), got \"%s\"", val);
			cli->have_rate = true;
			break;
		case O_ARRIVAL:
			if (strcmp(val, "constant") == 0)
				cfg->arrival = ARRIVAL_CONSTANT;
			else if (strcmp(val, "poisson") == 0)
				cfg->arrival = ARRIVAL_POISSON;
			else
				opt_usage_error(PROG, "--arrival: expected constant or poisson, got \"%s\"",
						val);
			cli->have_arrival = true;
			break;
		case O_CONCURRENCY:
			cfg->concurrency = parse_int("--concurrency", val, 1, 100000);
			break;
		case O_RAMP_UP:
			cfg->ramp_up_ms = parse_duration("--ramp-up", val, 0);
			cli->have_ramp_up = true;
			break;
		case O_ERROR_THINK:
			cfg->error_think_ms = parse_duration("--error-think", val, 0);
			cli->have_error_think = true;
			break;
		case O_MIX:
			cli->mix_file = val;
			break;
		case O_STREAM:
			if (opt_parse_double(val, 0, 1, &cli->d.stream_p))
				opt_usage_error(PROG, "--stream: expected the share of streaming requests, "
						"0 to 1, got \"%s\"", val);
			break;
		case O_MODEL:
			if (!val[0])
				opt_usage_error(PROG, "--model: expected a model name");
			cli->d.model = val;
			break;
		case O_PROMPT:
			cli->d.prompt_tokens = parse_int("--prompt-tokens", val, 1, 1000000);
			break;
		case O_MAXTOK:
			cli->d.max_tokens = parse_int("--max-tokens", val, 1, 1000000);
			break;
		case O_RESPFMT:
			free(cli->response_format);
			cli->response_format = parse_response_format(val);
			cli->d.response_format = cli->response_format;
			break;
		case O_TIMEOUT:
			cfg->timeout_ms = parse_duration("--timeout", val, 1);
			cli->have_timeout = true;
			break;
		case O_STALL:
			cfg->stall_timeout_ms = parse_duration("--stall-timeout", val, 1);
			break;
		case O_MAXTIME:
			cfg->max_time_ms = parse_duration("--max-time", val, 1);
			break;
		case O_RETRIES:
			cfg->retries = parse_int("--retries", val, 0, 100);
			break;
		case O_BACKOFF:
			cfg->backoff.base_ms = parse_duration("--retry-backoff", val, 0);
			break;
		case O_BACKOFF_MAX:
			cfg->backoff.cap_ms = parse_duration("--retry-backoff-max", val, 0);
			break;
		case O_CONNECTIONS:
			cfg->connections = parse_int("--connections", val, 1, 100000);
			cli->have_connections = true;
			break;
		case O_REQUESTS:
			cfg->max_requests = parse_int("--requests", val, 1, INT64_MAX / 2);
			break;
		case 'H':
			check_header(val);
			if (cfg->nheaders == sizeof(headers) / sizeof(headers[0]))
				opt_usage_error(PROG, "--header: at most 64 headers");
			headers[cfg->nheaders++] = val;
			cfg->headers = headers;
			break;
		case O_IDPREFIX:
			if (strlen(val) > 40 || strpbrk(val, "\r\n"))
				opt_usage_error(PROG, "--id-prefix: expected at most 40 characters on "
						"one line");
			cfg->id_prefix = val;
			break;
		case O_T0:
			cfg->t0_unix_ms = parse_int("--t0", val, 0, INT64_MAX / 1000000);
			break;
		case O_SEED:
			cfg->seed = (uint64_t)parse_int("--seed", val, 0, INT64_MAX);
			break;
		case O_PROGRESS:
			cli->progress = 1;
			break;
		case O_NO_PROGRESS:
			cli->progress = 0;
			break;
		case O_REMOTE:
			cli->allow_remote = true;
			break;
		case O_LOGLEVEL: {
			enum log_level level;

			if (log_parse_level(val, &level))
				opt_usage_error(PROG, "--log-level: expected debug, info, warn, error or "
						"off, got \"%s\"", val);
			log_set_level(level);
			break;
		}
		case O_OUT:
			if (!val[0])
				opt_usage_error(PROG, "--out: expected a directory");
			cfg->out_dir = val;
			break;
		case O_HELP:
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	if (cli->ntargets == 0)
		opt_usage_error(PROG, "--target URL is required");
	if (!have_duration)
		opt_usage_error(PROG, "--duration D is required");
	if (!cfg->out_dir)
		opt_usage_error(PROG, "--out DIR is required");
	if (cli->have_rate && cfg->concurrency)
		opt_usage_error(PROG, "--rate (open loop) and --concurrency (closed loop) "
				"exclude each other");
	if (cli->have_arrival && cfg->concurrency)
		opt_usage_error(PROG, "--arrival is for open loop; a closed loop sends when "
				"each answer comes");
	if (cli->have_ramp_up && !cfg->concurrency)
		opt_usage_error(PROG, "--ramp-up is for a closed loop (--concurrency N): it "
				"staggers the clients' first requests");
	if (cli->have_error_think && !cfg->concurrency)
		opt_usage_error(PROG, "--error-think is for a closed loop (--concurrency N): an "
				"open loop sends on its schedule whatever the answers");
	if (cfg->concurrency && cfg->ramp_up_ms >= cfg->duration_ms)
		opt_usage_error(PROG, "--ramp-up (%g ms) must be shorter than --duration (%g ms): "
				"the clients begin within the run", cfg->ramp_up_ms, cfg->duration_ms);
	if (cfg->concurrency && cli->have_connections)
		opt_usage_error(PROG, "--connections is for open loop; a closed loop has "
				"--concurrency connections");
}

int main(int argc, char **argv)
{
	struct lg_config cfg;
	struct cli cli = {
		.progress = -1,
		.d = { .model = "chat", .stream_p = 0, .prompt_tokens = 16, .max_tokens = 16 },
	};
	char err[CFG_ERR_LEN];
	size_t i;
	int rc;

	lg_config_init(&cfg);
	cfg.t0_unix_ms = clock_unix_ms();
	log_init(PROG, LOG_INFO);
	signal(SIGXFSZ, SIG_IGN);	/* a file past RLIMIT_FSIZE: a write error to report, not a death */
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "loadgen: curl_global_init failed\n");
		return 1;
	}
	parse_args(argc, argv, &cfg, &cli);
	cfg.targets = calloc(cli.ntargets, sizeof(*cfg.targets));
	if (!cfg.targets)
		opt_usage_error(PROG, "out of memory");
	for (i = 0; i < cli.ntargets; i++)
		cfg.targets[i] = target_url(cli.targets[i], cli.allow_remote);
	cfg.ntargets = cli.ntargets;

	if (cli.mix_file) {
		rc = mix_load(&cfg.mix, cli.mix_file, &cli.d, err);
		if (rc) {
			fprintf(stderr, "loadgen: %s\n", err);
			rc = 2;
			goto out_free;
		}
	} else if (mix_default(&cfg.mix, &cli.d)) {
		fprintf(stderr, "loadgen: out of memory\n");
		rc = 1;
		goto out_free;
	}
	if (cfg.concurrency == 0) {
		if (cfg.mix.by_rate && cli.have_rate)
			opt_usage_error(PROG, "--rate: the streams of %s give their own rates "
					"(%g/s in all); leave --rate out", cli.mix_file,
					mix_total_rate(&cfg.mix));
		if (!cfg.mix.by_rate && !cli.have_rate)
			opt_usage_error(PROG, "--rate R (open loop) or --concurrency N (closed "
					"loop) is required");
	}
	lg_config_derive(&cfg);
	if (cfg.max_time_ms < cfg.timeout_ms)
		opt_usage_error(PROG, "--max-time (%g ms) must be at least --timeout (%g ms%s)",
				cfg.max_time_ms, cfg.timeout_ms, cli.have_timeout ? "" : ", the default");
	if (cfg.backoff.cap_ms < cfg.backoff.base_ms)
		opt_usage_error(PROG, "--retry-backoff-max (%g ms) must be at least "
				"--retry-backoff (%g ms)", cfg.backoff.cap_ms, cfg.backoff.base_ms);
	cfg.progress = cli.progress < 0 ? isatty(STDERR_FILENO) : cli.progress;
	if (opt_raise_fd_limit((long long)(cfg.concurrency ? cfg.concurrency : cfg.connections) + 64))
		fprintf(stderr, "loadgen: warning: the open files limit is below the "
			"connections asked for\n");
	if (clock_unix_ms() - cfg.t0_unix_ms > 1000)
		fprintf(stderr, "loadgen: warning: --t0 is %.1f s in the past; requests due "
			"before now are sent at once, and their latency counts the wait\n",
			(double)(clock_unix_ms() - cfg.t0_unix_ms) / 1000.0);

	rc = run_load(&cfg);

out_free:
	mix_free(&cfg.mix);
	free(cli.response_format);
	for (i = 0; i < cfg.ntargets; i++)
		curl_free(cfg.targets[i]);
	free(cfg.targets);
	curl_global_cleanup();
	return rc;
}
