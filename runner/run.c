/*
 * run: one scenario through its setups. A run's life reads down this file:
 * run_begin (dir, t0, one mockprov per provider) → on_mock_line ("ready")
 * → the providers' /healthz → setup_start (gateway or external, or none)
 * → its readiness → load_start (loadgen on t0) and the action timer →
 * on_load_exit → run_stop (every child SIGTERMed, SIGKILLed after
 * STOP_GRACE_MS) → run_end (the summary, the rename) → the next run.
 * Anything unexpected — a child exiting early, a setup not ready in time,
 * a signal — goes through run_fail, which stops the run the same way.
 */
#include "runner/run.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/json.h"
#include "runner/outfile.h"
#include "runner/proc.h"
#include "runner/plot.h"
#include "runner/report.h"
#include "runner/stats.h"

#define STOP_GRACE_MS 5000		/* SIGTERM, then SIGKILL */
#define STOP_KILLED_MS 2000		/* after SIGKILL, the groups' last chance to go */
#define STOP_POLL_MS 20			/* how often a stop looks for processes left */
#define READY_TIMEOUT_MS 30000		/* a child's "ready", a URL's 2xx */
#define POLL_EVERY_MS 20		/* readiness polling */
#define LOG_TAIL_LINES 15
#define PROGRESS_MS 500			/* the terminal's progress line */

enum role { ROLE_MOCK, ROLE_SETUP, ROLE_LOAD };

/* Why a child was signalled, which decides what exit is right for it. */
enum stop_kind {
	STOP_NONE,			/* not signalled: it must not exit (loadgen: with 0) */
	STOP_ACTION,			/* a kill action: any exit */
	STOP_END,			/* the run's stop: programs exit 0 after SIGTERM */
};

struct chaos;

/* One child of a run (its process, once started, lives in p until closed). */
struct child {
	struct proc *p;			/* NULL: not started, or closed */
	struct chaos *ch;
	enum role role;
	size_t index;			/* ROLE_MOCK: the provider */
	pid_t pgid;			/* its process group, kept after it exits */
	bool ready;
	enum stop_kind stop;
	bool restart_pending;		/* a restart action waits for the kill's exit */
	bool killed;			/* ROLE_MOCK: down by a kill action, not restarted */
	bool sigkilled;			/* the stop had to SIGKILL its group */
	char addr[128];			/* HOST:PORT it printed */
};

/* A readiness poll: GET url until a 2xx, or the deadline. */
struct poller {
	uv_timer_t timer;
	CURL *easy;
	char *url;
	uint64_t deadline_ns;
	bool in_flight;
	void (*done)(struct chaos *ch, bool ok);
};

struct chaos {
	uv_loop_t *loop;
	const struct scenario *sc;
	const struct chaos_opts *o;
	struct curl_uv cu;
	uv_signal_t sigint;
	uv_signal_t sigterm;
	uv_signal_t sighup;
	uv_timer_t timer;		/* actions; while stopping, the stop's poll */
	uv_timer_t start_deadline;	/* at t0: everything must be ready */
	uv_timer_t progress;		/* redraws the progress line */
	bool tty;			/* stderr is a terminal: draw it */
	long progress_off;		/* read so far of requests.csv.tmp */
	uint64_t progress_rows;
	uint64_t progress_errors;
	bool progress_header;		/* the CSV header has been passed */
	struct buf progress_line;	/* a row not yet whole */
	bool progress_drawn;
	uint64_t stop_ns;		/* when the stop began */
	bool sent_sigkill;
	unsigned completed;		/* runs that completed */
	uv_timer_t watchdog;		/* the whole run's deadline */
	uv_timer_t ender;		/* runs run_end from the loop, never from a caller */
	struct poller poll;
	int signal;			/* that stopped everything; 0: none */
	int exit_code;

	char *stamp_dir;		/* OUT/NAME/STAMP */

	/* The run in progress. */
	const struct sc_setup *st;
	size_t setup_index;
	unsigned k;			/* repeat, from 1 */
	char *dir;			/* STAMP/SETUP/run-K.tmp */
	char *final_dir;		/* STAMP/SETUP/run-K */
	int64_t t0;
	struct child *mocks;		/* one per provider */
	int *ports;
	char **urls;			/* http://HOST:PORT/v1 per provider */
	size_t mocks_ready;
	size_t healthz_next;		/* the provider being polled */
	struct child setup;
	struct child load;
	char *target;			/* loadgen's --target; NULL: not known yet */
	size_t next_action;
	bool stopping;
	bool failed;
	struct buf why;			/* why the run failed */
	bool log_failed;		/* a child's log could not be written */
	struct buf log_error;		/* the first such: what, and why */
	cJSON **runs;			/* this setup's summaries so far */
	size_t nruns;
	cJSON *combined;		/* setup name → stats_combine */
};

static void run_begin(struct chaos *ch);
static void timeline_begin(struct chaos *ch);
static void run_fail(struct chaos *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_stop(struct chaos *ch);
static void healthz_next(struct chaos *ch);
static void setup_start(struct chaos *ch);
static void load_start(struct chaos *ch);
static void on_child_exit(struct proc *p);
static void on_child_line(struct proc *p, const char *line);
static void progress_clear(struct chaos *ch);

static const char *role_name(const struct child *c)
{
	return c->role == ROLE_MOCK ? "mockprov" : c->role == ROLE_SETUP ? "setup" : "loadgen";
}

/* ---- files ---- */

/*
 * printf into a new malloc'ed string, however long: every path and
 * message of a run is built so, never cut to a buffer's size. NULL when
 * out of memory.
 */
static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *str_printf(const char *fmt, ...)
{
	struct buf b = { 0 };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* Says why the run failed (the first reason stays: see run_fail). */
static void set_why(struct chaos *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_why(struct chaos *ch, const char *fmt, ...)
{
	va_list ap;

	buf_reset(&ch->why);
	va_start(ap, fmt);
	buf_vprintf(&ch->why, fmt, ap);
	va_end(ap);
}

/* The reason set_why gave, or the one thing that stops it giving one. */
static const char *why_text(const struct chaos *ch)
{
	return ch->why.len ? ch->why.data : "out of memory";
}

static int mkdir_p(const char *path)
{
	char *copy = strdup(path);
	char *s;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (s = copy + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(copy, 0755) && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		*s = '/';
	}
	if (mkdir(copy, 0755) && errno != EEXIST)
		rc = -errno;
out:
	free(copy);
	return rc;
}

/* ---- children ---- */

static void on_proc_closed(struct proc *p)
{
	free(p);
}

/* Closes the child's process (which has exited); its memory goes when closed. */
static void child_close(struct child *c)
{
	struct chaos *ch = c->ch;

	if (!c->p)
		return;
	if (c->p->log_err && !ch->log_failed) {
		ch->log_failed = true;
		buf_printf(&ch->log_error, "cannot write %s: %s", c->p->log_path,
			   strerror(-c->p->log_err));
	}
	proc_close(c->p, on_proc_closed);
	c->p = NULL;
}

static int child_start(struct chaos *ch, struct child *c, const char *const argv[],
		       const char *log_name)
{
	char *log_path = NULL;
	int rc;

	child_close(c);
	c->ch = ch;
	c->ready = false;
	c->stop = STOP_NONE;
	c->sigkilled = false;
	c->pgid = 0;
	c->addr[0] = '\0';
	c->p = calloc(1, sizeof(*c->p));
	log_path = str_printf("%s/%s", ch->dir, log_name);
	if (!c->p || !log_path) {
		free(c->p);
		c->p = NULL;
		rc = -ENOMEM;
		run_fail(ch, "out of memory");
		goto out;
	}
	c->p->on_line = on_child_line;
	c->p->on_exit = on_child_exit;
	c->p->data = c;
	rc = proc_start(c->p, ch->loop, log_name, argv, log_path);
	if (!rc)
		c->pgid = c->p->pid;	/* it leads a group of its own */
	if (rc) {
		child_close(c);		/* proc_close is due either way */
		run_fail(ch, "cannot start %s: %s", argv[0], strerror(-rc));
	}
out:
	free(log_path);
	return rc;
}

static bool child_running(const struct child *c)
{
	return c->p && c->p->running;
}

/* Whether any process of the child's group is left (its leader may have gone). */
static bool group_alive(const struct child *c)
{
	return c->pgid > 0 && kill(-c->pgid, 0) == 0;
}

/*
 * Signals the child's whole group, whether or not the child itself is
 * still there: what it started (a wrapper's server, workers) must go too.
 */
static void child_stop(struct child *c, int sig, enum stop_kind why)
{
	if (c->pgid <= 0)
		return;
	if (c->stop == STOP_NONE && child_running(c))
		c->stop = why;
	kill(-c->pgid, sig);
}

/* Whether anything of the run is left: a child not yet reaped, or a process of a group. */
static bool any_left(const struct chaos *ch)
{
	size_t i;

	for (i = 0; i < ch->sc->nproviders; i++) {
		if (child_running(&ch->mocks[i]) || group_alive(&ch->mocks[i]))
			return true;
	}
	return child_running(&ch->setup) || group_alive(&ch->setup) ||
	       child_running(&ch->load) || group_alive(&ch->load);
}

/* ---- providers ---- */

/* mockprov's config for provider i alone, on ports[i] when known. */
static char *mock_config_of(struct chaos *ch, size_t i)
{
	char *all = scenario_mock_config(ch->sc, ch->ports);
	cJSON *root = all ? cJSON_Parse(all) : NULL;
	cJSON *one = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(one, "providers");
	cJSON *item = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(root, "providers"),
						(int)i);
	char *text = NULL;

	if (item && arr) {
		cJSON_AddItemToArray(arr, item);
		text = cJSON_Print(one);
	} else {
		cJSON_Delete(item);
	}
	cJSON_Delete(one);
	cJSON_Delete(root);
	free(all);
	return text;
}

static void mock_start(struct chaos *ch, size_t i)
{
	const char *name = ch->sc->provider_names[i];
	char *prog = str_printf("%s/mockprov", ch->o->bin_dir);
	char *cfg = str_printf("%s/mockprov-%s.json", ch->dir, name);
	char *log_name = str_printf("mockprov-%s.log", name);
	char t0[32];
	char seed[32];
	char err[CFG_ERR_LEN];
	char *text = mock_config_of(ch, i);
	const char *argv[] = { prog, "--config", cfg, "--t0", t0, "--log-dir", ch->dir,
			       "--seed", seed, "--log-level", "warn", NULL };

	snprintf(t0, sizeof(t0), "%lld", (long long)ch->t0);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)ch->sc->seed);
	if (!prog || !cfg || !log_name || !text) {
		run_fail(ch, "cannot start mockprov for %s: out of memory", name);
		goto out;
	}
	if (outfile_write_text(cfg, text, err, sizeof(err))) {
		run_fail(ch, "%s", err);
		goto out;
	}
	ch->mocks[i].role = ROLE_MOCK;
	ch->mocks[i].index = i;
	ch->mocks[i].killed = false;
	child_start(ch, &ch->mocks[i], argv, log_name);
out:
	free(text);
	free(log_name);
	free(cfg);
	free(prog);
}

/* "listening NAME HOST:PORT": where provider i is. */
static void note_listening(struct chaos *ch, struct child *c, const char *addr)
{
	const char *colon = strrchr(addr, ':');
	size_t i = c->index;
	size_t len;

	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	if (!colon)
		return;
	ch->ports[i] = (int)strtol(colon + 1, NULL, 10);
	free(ch->urls[i]);
	len = strlen(addr) + sizeof("http:///v1");
	ch->urls[i] = malloc(len);
	if (ch->urls[i])
		snprintf(ch->urls[i], len, "http://%s/v1", addr);
}

/* ---- readiness polling ---- */

static void poll_send(struct chaos *ch);

static void on_poll_timer(uv_timer_t *t)
{
	poll_send(t->data);
}

static size_t discard(char *d, size_t s, size_t n, void *u)
{
	(void)d;
	(void)u;
	return s * n;
}

static void poll_send(struct chaos *ch)
{
	struct poller *pl = &ch->poll;

	if (!pl->easy)
		pl->easy = curl_easy_init();
	curl_easy_reset(pl->easy);
	curl_easy_setopt(pl->easy, CURLOPT_URL, pl->url);
	curl_easy_setopt(pl->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(pl->easy, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(pl->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(pl->easy, CURLOPT_WRITEFUNCTION, discard);
	pl->in_flight = curl_uv_add(&ch->cu, pl->easy) == 0;
	if (!pl->in_flight)
		pl->done(ch, false);
}

static void on_poll_done(struct curl_uv *cu, CURL *easy, CURLcode code)
{
	struct chaos *ch = cu->data;
	struct poller *pl = &ch->poll;
	long status = 0;

	pl->in_flight = false;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	if (ch->stopping)
		return;
	if (code == CURLE_OK && status >= 200 && status <= 299) {
		pl->done(ch, true);
		return;
	}
	if (clock_mono_ns() > pl->deadline_ns) {
		pl->done(ch, false);
		return;
	}
	uv_timer_start(&pl->timer, on_poll_timer, POLL_EVERY_MS, 0);
}

/* Polls url until it answers 2xx (done(ch, true)) or READY_TIMEOUT_MS pass. */
static void poll_until_ready(struct chaos *ch, const char *url,
			     void (*done)(struct chaos *ch, bool ok))
{
	struct poller *pl = &ch->poll;

	free(pl->url);
	pl->url = strdup(url);
	if (!pl->url) {
		run_fail(ch, "out of memory");
		return;
	}
	pl->done = done;
	pl->deadline_ns = clock_mono_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000;
	poll_send(ch);
}

static void on_healthz(struct chaos *ch, bool ok)
{
	if (!ok) {
		run_fail(ch, "provider %s never answered %s", ch->sc->provider_names[ch->healthz_next],
			 ch->poll.url);
		return;
	}
	ch->healthz_next++;
	healthz_next(ch);
}

/* Every provider answers /healthz, one after the other; then the setup. */
static void healthz_next(struct chaos *ch)
{
	char url[256];

	size_t i;

	if (ch->healthz_next == ch->sc->nproviders) {
		for (i = 0; i < ch->sc->nproviders; i++) {
			if (!ch->urls[i]) {
				run_fail(ch, "provider %s printed no address", ch->sc->provider_names[i]);
				return;
			}
		}
		setup_start(ch);
		return;
	}
	snprintf(url, sizeof(url), "http://%s/healthz", ch->mocks[ch->healthz_next].addr);
	poll_until_ready(ch, url, on_healthz);
}

/* ---- the setup ---- */

static void on_setup_ready(struct chaos *ch, bool ok)
{
	if (!ok) {
		run_fail(ch, "setup %s never answered %s", ch->st->name, ch->poll.url);
		return;
	}
	ch->setup.ready = true;
	if (ch->st->kind == SC_EXTERNAL)
		timeline_begin(ch);	/* the providers now, then the load */
	else
		load_start(ch);
}

/* A port free on 127.0.0.1 now, for an external gateway's {port}. */
static int free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = -1;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static void gateway_start(struct chaos *ch)
{
	char err[CFG_ERR_LEN];
	char *prog = str_printf("%s/gateway", ch->o->bin_dir);
	char *cfg = str_printf("%s/gateway.json", ch->dir);
	char *events = str_printf("%s/events.jsonl", ch->dir);
	char seed[32];
	char *text = scenario_gateway_config(ch->sc, ch->st, "127.0.0.1:0",
					     (const char *const *)ch->urls, err);
	const char *argv[] = { prog, "--config", cfg, "--events", events, "--seed", seed,
			       "--log-level", "warn", NULL };

	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)ch->sc->seed);
	if (!text) {
		run_fail(ch, "setup %s: %s", ch->st->name, err);
		goto out;
	}
	if (!prog || !cfg || !events) {
		run_fail(ch, "setup %s: out of memory", ch->st->name);
		goto out;
	}
	if (outfile_write_text(cfg, text, err, sizeof(err))) {
		run_fail(ch, "%s", err);
		goto out;
	}
	ch->setup.role = ROLE_SETUP;
	child_start(ch, &ch->setup, argv, "gateway.log");
out:
	free(text);
	free(events);
	free(cfg);
	free(prog);
}

static void external_start(struct chaos *ch)
{
	const struct sc_setup *st = ch->st;
	const char *const *urls = (const char *const *)ch->urls;
	int port = free_port();
	char **argv = calloc(st->ncommand + 1, sizeof(*argv));
	char *ready = NULL;
	char *target = NULL;
	size_t i;

	if (!argv || port < 0)
		goto out_fail;
	for (i = 0; i < st->ncommand; i++) {
		argv[i] = scenario_expand(ch->sc, st->command[i], port, urls);
		if (!argv[i])
			goto out_fail;
	}
	ready = scenario_expand(ch->sc, st->ready_url, port, urls);
	target = scenario_expand(ch->sc, st->target, port, urls);
	if (!ready || !target)
		goto out_fail;
	free(ch->target);
	ch->target = target;
	target = NULL;
	ch->setup.role = ROLE_SETUP;
	if (child_start(ch, &ch->setup, (const char *const *)argv, "external.log") == 0)
		poll_until_ready(ch, ready, on_setup_ready);
	goto out_free;
out_fail:
	run_fail(ch, "setup %s: cannot prepare its command", st->name);
out_free:
	for (i = 0; argv && i < st->ncommand; i++)
		free(argv[i]);
	free(argv);
	free(ready);
	free(target);
}

static void setup_start(struct chaos *ch)
{
	const struct sc_setup *st = ch->st;

	switch (st->kind) {
	case SC_DIRECT:
	case SC_CLIENT_RETRY:
		if (!ch->urls[st->provider]) {
			run_fail(ch, "provider %s printed no address", ch->sc->provider_names[st->provider]);
			return;
		}
		free(ch->target);
		ch->target = strdup(ch->urls[st->provider]);
		if (!ch->target) {
			run_fail(ch, "out of memory");
			return;
		}
		load_start(ch);
		break;
	case SC_GATEWAY:
		gateway_start(ch);	/* its "ready" line, then its /healthz */
		break;
	case SC_EXTERNAL:
		load_start(ch);		/* it was started, and became ready, before t0 was chosen */
		break;
	}
}

/* ---- the load and the actions ---- */

static void on_action(uv_timer_t *t);

static void arm_action(struct chaos *ch)
{
	double at;

	if (ch->next_action >= ch->sc->nactions)
		return;
	at = (double)ch->t0 + ch->sc->actions[ch->next_action].at_ms - (double)clock_unix_ms();
	uv_timer_start(&ch->timer, on_action, at > 0 ? (uint64_t)ceil(at) : 0, 0);
}

static void on_action(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	const struct sc_action *a = &ch->sc->actions[ch->next_action++];
	struct child *m = &ch->mocks[a->provider];

	if (ch->stopping)
		return;
	progress_clear(ch);
	if (ch->o->verbose)
		fprintf(stderr, "chaos: t=%.1f s: %s %s\n", a->at_ms / 1000,
			a->kind == SC_KILL ? "kill" : "restart", ch->sc->provider_names[a->provider]);
	if (a->kind == SC_KILL) {
		m->restart_pending = false;	/* a later kill undoes a restart still waiting */
		m->killed = true;
		child_stop(m, SIGKILL, STOP_ACTION);
	} else if (child_running(m)) {
		m->restart_pending = true;	/* the kill's exit is still to come */
	} else {
		mock_start(ch, a->provider);	/* closes the killed one's process first */
	}
	arm_action(ch);
}

/* The outcome field (the 14th) of a requests.csv row; quotes honoured. */
static bool row_is_ok(const char *row, size_t len)
{
	size_t field = 0;
	size_t start = 0;
	bool quoted = false;
	size_t i;

	for (i = 0; i <= len; i++) {
		char c = i < len ? row[i] : ',';

		if (c == '"') {
			quoted = !quoted;
		} else if (c == ',' && !quoted) {
			if (field == 13)
				return i - start == 2 && strncmp(row + start, "ok", 2) == 0;
			field++;
			start = i + 1;
		}
	}
	return false;
}

/* Counts the rows loadgen has flushed since the last call. */
static void progress_read(struct chaos *ch)
{
	char *path = str_printf("%s/requests.csv.tmp", ch->dir);
	char chunk[65536];
	struct buf *line = &ch->progress_line;
	FILE *fp = path ? fopen(path, "r") : NULL;
	size_t n;
	size_t i;

	free(path);
	if (!fp || fseek(fp, ch->progress_off, SEEK_SET)) {
		if (fp)
			fclose(fp);
		return;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		ch->progress_off += (long)n;
		for (i = 0; i < n; i++) {
			if (chunk[i] != '\n') {
				buf_append(line, &chunk[i], 1);
				continue;
			}
			if (ch->progress_header) {
				ch->progress_rows++;
				if (!row_is_ok(line->data ? line->data : "", line->len))
					ch->progress_errors++;
			}
			ch->progress_header = true;
			buf_reset(line);
		}
	}
	fclose(fp);
}

static void progress_clear(struct chaos *ch)
{
	if (ch->progress_drawn)
		fputs("\r\033[K", stderr);
	ch->progress_drawn = false;
}

static void on_progress(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	double now = (double)(clock_unix_ms() - ch->t0) / 1000;

	progress_read(ch);
	fprintf(stderr, "\r\033[Kchaos: %s / %s / run %u  t=%.1f/%.1f s  requests %llu  errors %llu",
		ch->sc->name, ch->st->name, ch->k, now < 0 ? 0 : now, ch->sc->duration_ms / 1000,
		(unsigned long long)ch->progress_rows, (unsigned long long)ch->progress_errors);
	ch->progress_drawn = true;
}

static void load_start(struct chaos *ch)
{
	const struct sc_load *l = &ch->sc->load;
	const struct sc_setup *st = ch->st;
	char *prog = NULL;
	char *mix = NULL;
	char t0[32];
	char dur[48];
	char timeout[48];
	char stall[48];
	char seed[32];
	char rate[48];
	char conc[32];
	char stream[32];
	char ptok[32];
	char mtok[32];
	char retries[32];
	char backoff[48];
	char backoff_max[48];
	char prefix[96];
	char err[CFG_ERR_LEN];
	const char *argv[48];
	size_t n = 0;

	if (clock_unix_ms() > ch->t0 - 50) {
		run_fail(ch, "the processes took longer than %d ms to start: t0 has passed",
			 CHAOS_LEAD_MS);
		goto out;
	}
	prog = str_printf("%s/loadgen", ch->o->bin_dir);
	if (!prog || !ch->target) {
		run_fail(ch, "cannot start loadgen: out of memory");
		goto out;
	}
	snprintf(t0, sizeof(t0), "%lld", (long long)ch->t0);
	snprintf(dur, sizeof(dur), "%.3fms", ch->sc->duration_ms);
	snprintf(timeout, sizeof(timeout), "%.3fms", l->timeout_ms);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)ch->sc->seed + ch->k - 1);
	snprintf(stream, sizeof(stream), "%g", l->stream_p);
	snprintf(ptok, sizeof(ptok), "%lld", (long long)l->prompt_tokens);
	snprintf(mtok, sizeof(mtok), "%lld", (long long)l->max_tokens);
	snprintf(prefix, sizeof(prefix), "%s-%u-", st->name, ch->k);
	argv[n++] = prog;
	argv[n++] = "--target";
	argv[n++] = ch->target;
	argv[n++] = "--t0";
	argv[n++] = t0;
	argv[n++] = "--duration";
	argv[n++] = dur;
	argv[n++] = "--timeout";
	argv[n++] = timeout;
	if (!isnan(l->stall_timeout_ms)) {
		snprintf(stall, sizeof(stall), "%.3fms", l->stall_timeout_ms);
		argv[n++] = "--stall-timeout";
		argv[n++] = stall;
	}
	argv[n++] = "--seed";
	argv[n++] = seed;
	argv[n++] = "--model";
	argv[n++] = l->model;
	argv[n++] = "--stream";
	argv[n++] = stream;
	argv[n++] = "--prompt-tokens";
	argv[n++] = ptok;
	argv[n++] = "--max-tokens";
	argv[n++] = mtok;
	argv[n++] = "--id-prefix";
	argv[n++] = prefix;
	if (l->concurrency) {
		snprintf(conc, sizeof(conc), "%u", l->concurrency);
		argv[n++] = "--concurrency";
		argv[n++] = conc;
	} else if (l->rate > 0) {
		snprintf(rate, sizeof(rate), "%.6f", l->rate);
		argv[n++] = "--rate";
		argv[n++] = rate;
		argv[n++] = "--arrival";
		argv[n++] = l->arrival == SC_ARRIVAL_POISSON ? "poisson" : "constant";
	}
	if (l->mix || (st->kind == SC_EXTERNAL && st->response_headers)) {
		cJSON *m = l->mix ? cJSON_Duplicate(l->mix, true) : cJSON_CreateObject();
		int rc;

		if (m && !cJSON_GetObjectItemCaseSensitive(m, "streams")) {
			cJSON *streams = cJSON_AddArrayToObject(m, "streams");
			cJSON *one = cJSON_CreateObject();

			cJSON_AddStringToObject(one, "name", "load");
			cJSON_AddNumberToObject(one, "share", 1);
			cJSON_AddItemToArray(streams, one);
		}
		if (m && st->kind == SC_EXTERNAL && st->response_headers) {
			cJSON_DeleteItemFromObjectCaseSensitive(m, "response_headers");
			cJSON_AddItemToObject(m, "response_headers",
					      cJSON_Duplicate(st->response_headers, true));
		}
		mix = str_printf("%s/mix.json", ch->dir);
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "cannot write %s/mix.json: out of memory", ch->dir);
		if (m && mix)
			rc = outfile_write_json(mix, m, err, sizeof(err));
		cJSON_Delete(m);
		if (rc) {
			run_fail(ch, "%s", err);
			goto out;
		}
		argv[n++] = "--mix";
		argv[n++] = mix;
	}
	if (st->kind == SC_CLIENT_RETRY) {
		snprintf(retries, sizeof(retries), "%u", st->retries);
		snprintf(backoff, sizeof(backoff), "%.3fms", st->retry_backoff_ms);
		/* loadgen's 5 s cap, scaled, and never under the backoff itself. */
		snprintf(backoff_max, sizeof(backoff_max), "%.3fms",
			 fmax(5000 * ch->sc->scale, st->retry_backoff_ms));
		argv[n++] = "--retries";
		argv[n++] = retries;
		argv[n++] = "--retry-backoff";
		argv[n++] = backoff;
		argv[n++] = "--retry-backoff-max";
		argv[n++] = backoff_max;
	}
	argv[n++] = "--no-progress";
	argv[n++] = "--out";
	argv[n++] = ch->dir;
	argv[n] = NULL;
	ch->load.role = ROLE_LOAD;
	if (child_start(ch, &ch->load, argv, "loadgen.log"))
		goto out;
	arm_action(ch);
	if (ch->tty) {
		ch->progress_off = 0;
		ch->progress_rows = ch->progress_errors = 0;
		ch->progress_header = false;
		buf_reset(&ch->progress_line);
		uv_timer_start(&ch->progress, on_progress, PROGRESS_MS, PROGRESS_MS);
	}
out:
	free(mix);
	free(prog);
}

/* ---- lines and exits ---- */

static void on_child_line(struct proc *p, const char *line)
{
	struct child *c = p->data;
	struct chaos *ch = c->ch;
	char name[128];
	char addr[128];

	if (c->role == ROLE_MOCK && sscanf(line, "listening %127s %127s", name, addr) == 2) {
		note_listening(ch, c, addr);
	} else if (c->role == ROLE_SETUP && ch->st->kind == SC_GATEWAY &&
		   sscanf(line, "listening %127s", addr) == 1) {
		snprintf(c->addr, sizeof(c->addr), "%s", addr);
		free(ch->target);
		ch->target = str_printf("http://%s/v1", addr);
	} else if (strncmp(line, "ready", 5) == 0 && !c->ready && !ch->stopping &&
		   (c->role == ROLE_MOCK || ch->st->kind == SC_GATEWAY)) {
		c->ready = true;
		if (c->role == ROLE_MOCK && !ch->load.p && ++ch->mocks_ready == ch->sc->nproviders)
			healthz_next(ch);
		else if (c->role == ROLE_SETUP) {
			char url[256];

			snprintf(url, sizeof(url), "http://%s/healthz", c->addr);
			poll_until_ready(ch, url, on_setup_ready);
		}
	}
}

/* Whether a child's exit after the run's SIGTERM is the clean one. */
static bool clean_stop(const struct chaos *ch, const struct child *c)
{
	const struct proc *p = c->p;

	if (c->role == ROLE_LOAD)
		return true;		/* stopped only when the run is failing anyway */
	if (c->role == ROLE_SETUP && ch->st->kind == SC_EXTERNAL)
		return (p->exit_status == 0 || p->exit_status == 128 + SIGTERM) &&
		       (!p->term_signal || p->term_signal == SIGTERM);
	return p->exit_status == 0 && !p->term_signal;	/* mockprov and the gateway say so */
}

/*
 * Fails the run with the child's last stderr lines, kept in memory: they
 * are there even when its log (named for the rest) could not be written.
 */
static void fail_with_tail(struct chaos *ch, const struct child *c, const char *what)
{
	struct buf tail = { 0 };

	proc_stderr_tail(c->p, LOG_TAIL_LINES, &tail);
	if (c->p->log_err)
		run_fail(ch, "%s (%s) %s; its last stderr lines (%s could not be written: %s):\n%s",
			 role_name(c), c->p->name, what, c->p->log_path, strerror(-c->p->log_err),
			 tail.len ? tail.data : "(none)\n");
	else
		run_fail(ch, "%s (%s) %s; its last stderr lines (all its output is in %s):\n%s",
			 role_name(c), c->p->name, what, c->p->log_path,
			 tail.len ? tail.data : "(none)\n");
	buf_free(&tail);
}

static void on_child_exit(struct proc *p)
{
	struct child *c = p->data;
	struct chaos *ch = c->ch;
	char how[64];
	char what[128];

	proc_describe_exit(p, how, sizeof(how));
	switch (c->stop) {
	case STOP_NONE:
		if (c->role == ROLE_LOAD && p->exit_status == 0 && !p->term_signal)
			run_stop(ch);		/* the load is over: stop the rest */
		else
			fail_with_tail(ch, c, how);
		break;
	case STOP_ACTION:
		if (c->restart_pending && !ch->stopping) {
			c->restart_pending = false;
			mock_start(ch, c->index);
		}
		break;
	case STOP_END:
		if (!clean_stop(ch, c)) {
			snprintf(what, sizeof(what), "%s after SIGTERM", how);
			fail_with_tail(ch, c, what);
		}
		break;
	}
}

/* ---- stopping ---- */

static void end_soon(struct chaos *ch);

/* Which children's groups are still there, for a message, onto out. */
static void left_names(const struct chaos *ch, struct buf *out)
{
	size_t i;

	for (i = 0; i < ch->sc->nproviders; i++) {
		if (group_alive(&ch->mocks[i]))
			buf_printf(out, "%smockprov %s", out->len ? ", " : "",
				   ch->sc->provider_names[i]);
	}
	if (group_alive(&ch->setup))
		buf_printf(out, "%sthe setup", out->len ? ", " : "");
	if (group_alive(&ch->load))
		buf_printf(out, "%sloadgen", out->len ? ", " : "");
}

/*
 * While stopping, every STOP_POLL_MS: the run ends once nothing of it is
 * left; STOP_GRACE_MS after the SIGTERM, what is left gets SIGKILL (and
 * the run fails: a program that does not stop when asked loses records);
 * STOP_KILLED_MS later the run ends whatever is left, saying so.
 */
static void on_stop_poll(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	double ms = (double)(clock_mono_ns() - ch->stop_ns) / 1e6;
	struct buf names = { 0 };
	size_t i;

	if (!any_left(ch)) {
		end_soon(ch);
		goto out;
	}
	if (ms >= STOP_GRACE_MS && !ch->sent_sigkill) {
		ch->sent_sigkill = true;
		left_names(ch, &names);
		run_fail(ch, "%s did not stop within %d ms of SIGTERM",
			 names.len ? names.data : "a child", STOP_GRACE_MS);
		for (i = 0; i < ch->sc->nproviders; i++)
			child_stop(&ch->mocks[i], SIGKILL, STOP_END);
		child_stop(&ch->setup, SIGKILL, STOP_END);
		child_stop(&ch->load, SIGKILL, STOP_END);
	} else if (ms >= STOP_GRACE_MS + STOP_KILLED_MS) {
		left_names(ch, &names);
		fprintf(stderr, "chaos: %s still has processes after SIGKILL (zombies?)\n",
			names.len ? names.data : "a child");
		end_soon(ch);
		goto out;
	}
	uv_timer_start(&ch->timer, on_stop_poll, STOP_POLL_MS, 0);
out:
	buf_free(&names);
}

/* Every child's group gets SIGTERM; on_stop_poll ends the run when they are gone. */
static void run_stop(struct chaos *ch)
{
	size_t i;

	if (ch->stopping)
		return;
	ch->stopping = true;
	ch->stop_ns = clock_mono_ns();
	uv_timer_stop(&ch->progress);
	progress_clear(ch);
	ch->sent_sigkill = false;
	uv_timer_stop(&ch->watchdog);
	uv_timer_stop(&ch->start_deadline);
	if (ch->poll.in_flight) {
		curl_uv_remove(&ch->cu, ch->poll.easy);
		ch->poll.in_flight = false;
	}
	uv_timer_stop(&ch->poll.timer);
	child_stop(&ch->load, SIGTERM, STOP_END);
	child_stop(&ch->setup, SIGTERM, STOP_END);
	for (i = 0; i < ch->sc->nproviders; i++) {
		ch->mocks[i].restart_pending = false;
		child_stop(&ch->mocks[i], SIGTERM, STOP_END);
	}
	uv_timer_start(&ch->timer, on_stop_poll, 0, 0);
}

static void run_fail(struct chaos *ch, const char *fmt, ...)
{
	va_list ap;

	if (!ch->failed) {
		ch->failed = true;
		buf_reset(&ch->why);
		va_start(ap, fmt);
		buf_vprintf(&ch->why, fmt, ap);
		va_end(ap);
	}
	run_stop(ch);
}

static void on_watchdog(uv_timer_t *t)
{
	struct chaos *ch = t->data;

	run_fail(ch, "the run did not end within its deadline");
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct chaos *ch = s->data;
	size_t i;

	if (ch->signal && ch->stopping) {
		/* A second one: no grace. */
		for (i = 0; i < ch->sc->nproviders; i++)
			child_stop(&ch->mocks[i], SIGKILL, STOP_END);
		child_stop(&ch->setup, SIGKILL, STOP_END);
		child_stop(&ch->load, SIGKILL, STOP_END);
		return;
	}
	if (!ch->signal)
		ch->signal = signum;
	run_fail(ch, "stopped by %s", signum == SIGINT ? "SIGINT" : signum == SIGHUP ? "SIGHUP"
							      : "SIGTERM");
}

/* At t0 the load must have started: whoever is not ready fails the run, with its log. */
static void on_start_deadline(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	size_t i;

	if (ch->load.p || ch->stopping)
		return;
	for (i = 0; i < ch->sc->nproviders; i++) {
		if (ch->mocks[i].p && !ch->mocks[i].ready) {
			fail_with_tail(ch, &ch->mocks[i], "was not ready by t0");
			return;
		}
	}
	if (ch->setup.p && !ch->setup.ready) {
		fail_with_tail(ch, &ch->setup, "was not ready by t0");
		return;
	}
	run_fail(ch, "the run could not start by t0 (%d ms after it began)", CHAOS_LEAD_MS);
}

/* ---- the end of a run, and the next ---- */

/*
 * A provider killed and not restarted leaves mock-NAME.csv.tmp (mockprov
 * renames its log on a clean stop). Its rows up to the kill are whole —
 * mockprov hands them to the kernel every loop turn — so the file is
 * finished here, as mockprov would have.
 */
static int finish_mock_logs(struct chaos *ch)
{
	char *tmp = NULL;
	char *done = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < ch->sc->nproviders && !rc; i++) {
		if (!ch->mocks[i].killed)
			continue;	/* stopped cleanly: mockprov finished its own log */
		free(done);
		free(tmp);
		done = str_printf("%s/mock-%s.csv", ch->dir, ch->sc->provider_names[i]);
		tmp = str_printf("%s/mock-%s.csv.tmp", ch->dir, ch->sc->provider_names[i]);
		if (!done || !tmp) {
			set_why(ch, "out of memory");
			rc = -ENOMEM;
		} else if (access(tmp, F_OK) == 0 && access(done, F_OK) != 0 && rename(tmp, done)) {
			rc = -errno;
			set_why(ch, "cannot rename %s to %s: %s", tmp, done, strerror(-rc));
		}
	}
	free(done);
	free(tmp);
	return rc;
}

static int summarise(struct chaos *ch)
{
	char err[CFG_ERR_LEN];
	char *path = str_printf("%s/summary.json", ch->dir);
	char *lg = str_printf("%s/loadgen-summary.json", ch->dir);
	cJSON *sum = NULL;
	cJSON **runs;
	int rc;

	if (!path || !lg) {
		rc = -ENOMEM;
		goto out;
	}
	/* loadgen's own summary keeps its name apart from the run's. */
	if (rename(path, lg) && errno != ENOENT) {
		rc = -errno;
		set_why(ch, "cannot rename %s to %s: %s", path, lg, strerror(-rc));
		goto out;
	}
	rc = finish_mock_logs(ch);
	if (rc)
		goto out;
	rc = report_summarise_run(ch->sc, ch->st, ch->dir, ch->k, ch->t0, &sum, err);
	if (rc) {
		set_why(ch, "summary: %s", err);
		goto out;
	}
	rc = outfile_write_json(path, sum, err, sizeof(err));
	if (rc) {
		cJSON_Delete(sum);
		set_why(ch, "%s", err);
		goto out;
	}
	runs = realloc(ch->runs, (ch->nruns + 1) * sizeof(*runs));
	if (!runs) {
		cJSON_Delete(sum);
		rc = -ENOMEM;
		goto out;
	}
	ch->runs = runs;
	ch->runs[ch->nruns++] = sum;
out:
	free(lg);
	free(path);
	return rc;
}

static void free_runs(struct chaos *ch)
{
	size_t i;

	for (i = 0; i < ch->nruns; i++)
		cJSON_Delete(ch->runs[i]);
	free(ch->runs);
	ch->runs = NULL;
	ch->nruns = 0;
}

/* After this setup's last run: its runs combined under the stamp's summary. */
static void combine_setup(struct chaos *ch)
{
	cJSON *c = stats_combine(ch->runs, ch->nruns);

	if (c)
		cJSON_AddItemToObject(ch->combined, ch->st->name, c);
	free_runs(ch);
}

static void run_cleanup(struct chaos *ch)
{
	size_t i;

	for (i = 0; i < ch->sc->nproviders; i++)
		child_close(&ch->mocks[i]);
	child_close(&ch->setup);
	child_close(&ch->load);
	uv_timer_stop(&ch->timer);
	uv_timer_stop(&ch->start_deadline);
}

static void run_next(struct chaos *ch);

static void run_end(struct chaos *ch)
{
	bool ok = !ch->failed;

	if (!ch->st)
		return;
	run_cleanup(ch);
	if (ok && ch->log_failed) {
		/* A child's log is one of the run's files: the run is not whole without it. */
		set_why(ch, "%s", ch->log_error.len ? ch->log_error.data : "a child's log could "
			"not be written");
		ok = false;
	}
	if (ok && summarise(ch))
		ok = false;
	if (ok && rename(ch->dir, ch->final_dir)) {
		set_why(ch, "cannot rename %s: %s", ch->dir, strerror(errno));
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "chaos: %s / %s / run %u failed: %s\n  (its files: %s)\n",
			ch->sc->name, ch->st->name, ch->k, why_text(ch), ch->dir ? ch->dir : "none");
		ch->exit_code = 1;
	} else {
		ch->completed++;
		if (ch->o->verbose)
			fprintf(stderr, "chaos: %s / %s / run %u done: %s\n", ch->sc->name,
				ch->st->name, ch->k, ch->final_dir);
	}
	if (ch->signal) {
		ch->exit_code = 128 + ch->signal;
		free_runs(ch);
		return;		/* the loop runs out of work */
	}
	if (ch->k == ch->o->repeat)
		combine_setup(ch);
	run_next(ch);
}

static void on_ender(uv_timer_t *t)
{
	run_end(t->data);
}

/* run_end on the next loop turn: a run never ends inside the call that stopped it. */
static void end_soon(struct chaos *ch)
{
	uv_timer_start(&ch->ender, on_ender, 0, 0);
}

/* The next (setup, repeat), or the end. */
static void run_next(struct chaos *ch)
{
	const struct scenario *sc = ch->sc;

	if (ch->st && ch->k < ch->o->repeat) {
		ch->k++;
		run_begin(ch);
		return;
	}
	for (ch->setup_index = ch->st ? ch->setup_index + 1 : 0; ch->setup_index < sc->nsetups;
	     ch->setup_index++) {
		ch->st = &sc->setups[ch->setup_index];
		if (!ch->o->only_setup || strcmp(ch->o->only_setup, ch->st->name) == 0) {
			ch->k = 1;
			run_begin(ch);
			return;
		}
	}
	/* Every run is over: the loop runs out of work once the handles close. */
}

static void run_begin(struct chaos *ch)
{
	const struct scenario *sc = ch->sc;
	double budget;
	size_t i;
	int rc;

	ch->stopping = false;
	ch->failed = false;
	buf_reset(&ch->why);
	ch->log_failed = false;
	buf_reset(&ch->log_error);
	ch->mocks_ready = 0;
	ch->healthz_next = 0;
	ch->next_action = 0;
	free(ch->target);
	ch->target = NULL;
	memset(ch->mocks, 0, sc->nproviders * sizeof(*ch->mocks));
	memset(&ch->setup, 0, sizeof(ch->setup));
	memset(&ch->load, 0, sizeof(ch->load));
	for (i = 0; i < sc->nproviders; i++) {
		ch->ports[i] = 0;
		free(ch->urls[i]);
		ch->urls[i] = NULL;
	}
	free(ch->final_dir);
	free(ch->dir);
	ch->final_dir = str_printf("%s/%s/run-%u", ch->stamp_dir, ch->st->name, ch->k);
	ch->dir = str_printf("%s/%s/run-%u.tmp", ch->stamp_dir, ch->st->name, ch->k);
	rc = ch->dir && ch->final_dir ? mkdir_p(ch->dir) : -ENOMEM;
	if (rc) {
		ch->failed = true;
		set_why(ch, "cannot make %s/%s/run-%u.tmp: %s", ch->stamp_dir, ch->st->name, ch->k,
			strerror(-rc));
		ch->stopping = true;
		end_soon(ch);
		return;
	}
	if (ch->o->verbose)
		fprintf(stderr, "chaos: %s / %s / run %u of %u: %.1f s\n", sc->name, ch->st->name,
			ch->k, ch->o->repeat, sc->duration_ms / 1000);
	/* The last request may take loadgen's max time, and each retry a timeout and a wait. */
	budget = CHAOS_LEAD_MS + sc->duration_ms + sc->load.timeout_ms * 11 + 30000;
	if (ch->st->kind == SC_CLIENT_RETRY)
		budget += ch->st->retries * (sc->load.timeout_ms +
					     fmax(5000 * sc->scale, ch->st->retry_backoff_ms));
	if (ch->st->kind == SC_EXTERNAL)
		budget += READY_TIMEOUT_MS;
	uv_timer_start(&ch->watchdog, on_watchdog, (uint64_t)budget, 0);
	if (ch->st->kind != SC_EXTERNAL) {
		timeline_begin(ch);
		return;
	}
	/*
	 * Another gateway may take a while to start (an interpreter, its
	 * imports): it gets READY_TIMEOUT_MS, before t0 is chosen, with the
	 * providers' ports picked now for its {upstream.NAME}; the providers
	 * start on them once it is ready.
	 */
	for (i = 0; i < sc->nproviders; i++) {
		char url[64];

		ch->ports[i] = free_port();
		if (ch->ports[i] < 0) {
			run_fail(ch, "no free port for provider %s", sc->provider_names[i]);
			return;
		}
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", ch->ports[i]);
		ch->urls[i] = strdup(url);
		if (!ch->urls[i]) {
			run_fail(ch, "out of memory");
			return;
		}
	}
	external_start(ch);
}

/* t0, a lead ahead; the providers on it; the setup (if not already up) and the load follow. */
static void timeline_begin(struct chaos *ch)
{
	size_t i;

	ch->t0 = clock_unix_ms() + CHAOS_LEAD_MS;
	uv_timer_start(&ch->start_deadline, on_start_deadline, CHAOS_LEAD_MS, 0);
	for (i = 0; i < ch->sc->nproviders && !ch->stopping; i++)
		mock_start(ch, i);
}

/* ---- the command ---- */

static void on_closed_quiet(uv_handle_t *h)
{
	(void)h;
}

/* The longest a stamp's name gets: 20261203T201731Z-99. */
#define STAMP_NAME_MAX 19

/*
 * Whether every path of the run (OUT/NAME/STAMP/SETUP/run-K.tmp/FILE, the
 * longest file a provider's mockprov-NAME.json.tmp or loadgen's
 * summary on its way to loadgen-summary.json.tmp) fits in PATH_MAX, so a
 * too long --out is refused at the start, not by each run's first file.
 * Returns the longest path's length.
 */
static size_t longest_path(const struct scenario *sc, const struct chaos_opts *o)
{
	size_t setup = 0;
	size_t file = sizeof("loadgen-summary.json.tmp") - 1;
	size_t i;
	char k[16];

	for (i = 0; i < sc->nsetups; i++) {
		if (strlen(sc->setups[i].name) > setup)
			setup = strlen(sc->setups[i].name);
	}
	for (i = 0; i < sc->nproviders; i++) {
		size_t n = sizeof("mockprov-.json.tmp") - 1 + strlen(sc->provider_names[i]);

		if (n > file)
			file = n;
	}
	snprintf(k, sizeof(k), "%u", o->repeat);
	return strlen(o->out_dir) + 1 + strlen(sc->name) + 1 + STAMP_NAME_MAX + 1 + setup +
	       sizeof("/run-.tmp/") - 1 + strlen(k) + file;
}

/* Makes OUT/NAME/STAMP, a new one (STAMP-2… when taken), into ch->stamp_dir. */
static int make_stamp_dir(struct chaos *ch)
{
	char stamp[32];
	char *parent = str_printf("%s/%s", ch->o->out_dir, ch->sc->name);
	time_t now = time(NULL);
	struct tm tm;
	int rc = -EEXIST;
	int i;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (i = 1; i < 100 && rc == -EEXIST; i++) {
		free(ch->stamp_dir);
		if (i == 1)
			ch->stamp_dir = str_printf("%s/%s", parent ? parent : "", stamp);
		else
			ch->stamp_dir = str_printf("%s/%s-%d", parent ? parent : "", stamp, i);
		if (!parent || !ch->stamp_dir) {
			rc = -ENOMEM;
			break;
		}
		/* The parent with -p, the stamp itself alone: two runners never share one. */
		rc = mkdir_p(parent);
		if (rc)
			break;
		rc = mkdir(ch->stamp_dir, 0755) == 0 ? 0 : -errno;
	}
	free(parent);
	return rc;
}

/*
 * Keeps the scenario file in the stamp dir, so the results say what ran:
 * as written (unscaled), with its name stated, since the copy's file name
 * no longer gives it.
 */
static int copy_scenario(const struct chaos *ch, char *err, size_t errlen)
{
	char *path = str_printf("%s/scenario.json", ch->stamp_dir);
	cJSON *root = json_load_file(ch->sc->path, err, errlen);
	int rc = -EIO;

	if (!root)
		goto out;
	if (!cJSON_GetObjectItemCaseSensitive(root, "name"))
		cJSON_AddStringToObject(root, "name", ch->sc->name);
	rc = -ENOMEM;
	snprintf(err, errlen, "out of memory");
	if (path)
		rc = outfile_write_json(path, root, err, errlen);
out:
	cJSON_Delete(root);
	free(path);
	return rc;
}

int chaos_run(const struct scenario *sc, const struct chaos_opts *o)
{
	struct chaos ch = { .sc = sc, .o = o };
	char err[CFG_ERR_LEN];
	char *path = NULL;
	size_t longest = longest_path(sc, o);
	size_t i;
	int rc;

	if (longest >= PATH_MAX) {
		fprintf(stderr, "chaos: --out: %s is too long: the run's files would have paths of up "
			"to %zu bytes, and the system takes at most %d\n", o->out_dir, longest,
			PATH_MAX - 1);
		return 2;
	}

	ch.loop = uv_default_loop();
	ch.mocks = calloc(sc->nproviders, sizeof(*ch.mocks));
	ch.ports = calloc(sc->nproviders, sizeof(*ch.ports));
	ch.urls = calloc(sc->nproviders, sizeof(*ch.urls));
	ch.combined = cJSON_CreateObject();
	if (!ch.mocks || !ch.ports || !ch.urls || !ch.combined) {
		fprintf(stderr, "chaos: out of memory\n");
		ch.exit_code = 1;
		goto out_free;
	}
	rc = make_stamp_dir(&ch);
	if (rc) {
		/* A name longer than the file system takes is a bad --out: exit 2. */
		fprintf(stderr, "chaos: %scannot make %s: %s\n", rc == -ENAMETOOLONG ? "--out: " : "",
			ch.stamp_dir ? ch.stamp_dir : o->out_dir, strerror(-rc));
		ch.exit_code = rc == -ENAMETOOLONG ? 2 : 1;
		goto out_free;
	}
	rc = copy_scenario(&ch, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "chaos: cannot copy %s into %s: %s\n", sc->path, ch.stamp_dir, err);
		ch.exit_code = 1;
		goto out_free;
	}
	if (curl_uv_init(&ch.cu, ch.loop, on_poll_done)) {
		fprintf(stderr, "chaos: cannot set up libcurl\n");
		ch.exit_code = 1;
		goto out_free;
	}
	ch.cu.data = &ch;
	uv_timer_init(ch.loop, &ch.timer);
	uv_timer_init(ch.loop, &ch.watchdog);
	uv_timer_init(ch.loop, &ch.poll.timer);
	uv_timer_init(ch.loop, &ch.ender);
	uv_timer_init(ch.loop, &ch.start_deadline);
	uv_timer_init(ch.loop, &ch.progress);
	ch.progress.data = &ch;
	ch.tty = o->verbose && isatty(STDERR_FILENO);
	ch.timer.data = ch.watchdog.data = ch.poll.timer.data = ch.ender.data = &ch;
	ch.start_deadline.data = &ch;
	uv_signal_init(ch.loop, &ch.sigint);
	uv_signal_init(ch.loop, &ch.sigterm);
	uv_signal_init(ch.loop, &ch.sighup);
	ch.sigint.data = ch.sigterm.data = ch.sighup.data = &ch;
	uv_signal_start(&ch.sigint, on_signal, SIGINT);
	uv_signal_start(&ch.sigterm, on_signal, SIGTERM);
	/* The children have sessions of their own: a closed terminal reaches only us. */
	uv_signal_start(&ch.sighup, on_signal, SIGHUP);
	/* Signals and the watchdog do not keep the loop alive: the children and timers do. */
	uv_unref((uv_handle_t *)&ch.sigint);
	uv_unref((uv_handle_t *)&ch.sigterm);
	uv_unref((uv_handle_t *)&ch.sighup);
	uv_unref((uv_handle_t *)&ch.watchdog);

	run_next(&ch);
	uv_run(ch.loop, UV_RUN_DEFAULT);

	if (!ch.signal && ch.completed) {
		cJSON *top = cJSON_CreateObject();

		cJSON_AddStringToObject(top, "scenario", sc->name);
		cJSON_AddNumberToObject(top, "time_scale", sc->scale);
		cJSON_AddNumberToObject(top, "repeat", o->repeat);
		cJSON_AddItemToObject(top, "setups", ch.combined);
		ch.combined = NULL;
		path = str_printf("%s/summary.json", ch.stamp_dir);
		if (!path)
			snprintf(err, sizeof(err), "cannot write %s/summary.json: out of memory",
				 ch.stamp_dir);
		if (!path || outfile_write_json(path, top, err, sizeof(err)) ||
		    report_write(ch.stamp_dir, sc, top, err)) {
			fprintf(stderr, "chaos: %s\n", err);
			ch.exit_code = 1;
		} else {
			bool write_failed = false;

			report_table(stdout, sc, top, false);
			/*
			 * Plots help a person; a failure to draw them (no gnuplot) is
			 * said, not a failed run; a file that cannot be written is.
			 */
			if (o->plots_dir && plot_stamp(ch.stamp_dir, o->plots_dir, err, &write_failed))
				fprintf(stderr, "chaos: no plots: %s\n", err);
			if (write_failed)
				ch.exit_code = 1;
			printf("results: %s (report.md, summary.json, plots/)\n", ch.stamp_dir);
		}
		cJSON_Delete(top);
	}
	uv_close((uv_handle_t *)&ch.sigint, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.sigterm, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.sighup, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.start_deadline, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.progress, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.timer, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.watchdog, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.poll.timer, on_closed_quiet);
	uv_close((uv_handle_t *)&ch.ender, on_closed_quiet);
	curl_uv_close(&ch.cu, NULL);
	uv_run(ch.loop, UV_RUN_DEFAULT);
	if (ch.poll.easy)
		curl_easy_cleanup(ch.poll.easy);
	uv_loop_close(ch.loop);
out_free:
	free(path);
	free(ch.stamp_dir);
	free(ch.dir);
	free(ch.final_dir);
	free(ch.target);
	free(ch.poll.url);
	buf_free(&ch.why);
	buf_free(&ch.log_error);
	buf_free(&ch.progress_line);
	free_runs(&ch);
	for (i = 0; ch.urls && i < sc->nproviders; i++)
		free(ch.urls[i]);
	free(ch.urls);
	free(ch.ports);
	free(ch.mocks);
	cJSON_Delete(ch.combined);
	return ch.exit_code;
}
