/*
 * launch: the processes of one run, for run.c — one mockprov per provider
 * (each with its config file), the setup (our gateway with its config, an
 * external one from its command templates, or none), loadgen on t0 with
 * its command line and mix file; their readiness ("ready" lines, then a
 * 2xx from /healthz or ready_url, polled); the scenario's kill and restart
 * actions; the terminal's progress line; and what each child's lines and
 * exit mean for the run. Anything wrong goes to run__fail.
 */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/curl_uv.h"
#include "common/json.h"
#include "runner/loadcfg.h"
#include "runner/outfile.h"
#include "runner/proc.h"
#include "runner/run_int.h"
#include "runner/stamp.h"

#define POLL_EVERY_MS 20		/* readiness polling */
#define LOG_TAIL_LINES 15
#define PROGRESS_MS 500			/* the terminal's progress line */

static void healthz_next(struct chaos *ch);
static void setup_start(struct chaos *ch);
static void load_start(struct chaos *ch);
static void on_child_exit(struct proc *p);
static void on_child_line(struct proc *p, const char *line);

static const char *role_name(const struct child *c)
{
	return c->role == ROLE_MOCK ? "mockprov" : c->role == ROLE_SETUP ? "setup" :
	       c->role == ROLE_REDIS ? "redis-server" : "loadgen";
}

/* What a child is called in messages (run_int.h). */
void launch_child_name(const struct chaos *ch, const struct child *c, char *out, size_t len)
{
	if (c->role == ROLE_MOCK)
		snprintf(out, len, "mockprov %s", ch->sc->provider_names[c->index]);
	else if (c->role == ROLE_SETUP && scenario_setup_replicated(ch->st))
		snprintf(out, len, "gateway replica r%zu", c->index + 1);
	else if (c->role == ROLE_SETUP)
		snprintf(out, len, "the setup");
	else
		snprintf(out, len, "%s", role_name(c));
}

/* Every child of the run in turn: loadgen, the setup's, Redis, the providers (run_int.h). */
void launch_each_child(struct chaos *ch, void (*fn)(struct child *c, void *arg), void *arg)
{
	size_t i;

	fn(&ch->load, arg);
	for (i = 0; i < SC_REPLICAS_MAX; i++)
		fn(&ch->setup[i], arg);
	fn(&ch->redis, arg);
	for (i = 0; i < ch->sc->nproviders; i++)
		fn(&ch->mocks[i], arg);
}

/* ---- children ---- */

static void on_proc_closed(struct proc *p)
{
	free(p);
}

/* Closes the child's process (which has exited); its memory goes when closed. */
void launch_child_close(struct child *c)
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

	launch_child_close(c);
	c->ch = ch;
	c->ready = false;
	c->said_ready = false;
	c->stop = STOP_NONE;
	c->sigkilled = false;
	c->pgid = 0;
	c->addr[0] = '\0';
	c->p = calloc(1, sizeof(*c->p));
	log_path = buf_aprintf("%s/%s", ch->dir, log_name);
	if (!c->p || !log_path) {
		free(c->p);
		c->p = NULL;
		rc = -ENOMEM;
		run__fail(ch, "out of memory");
		goto out;
	}
	c->p->on_line = on_child_line;
	c->p->on_exit = on_child_exit;
	c->p->data = c;
	rc = proc_start(c->p, ch->loop, log_name, argv, log_path);
	if (!rc)
		c->pgid = c->p->pid;	/* it leads a group of its own */
	if (rc) {
		launch_child_close(c);		/* proc_close is due either way */
		run__fail(ch, "cannot start %s: %s", argv[0], strerror(-rc));
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
bool launch_group_alive(const struct child *c)
{
	return c->pgid > 0 && kill(-c->pgid, 0) == 0;
}

/*
 * Signals the child's whole group, whether or not the child itself is
 * still there: what it started (a wrapper's server, workers) must go too.
 */
void launch_child_stop(struct child *c, int sig, enum stop_kind why)
{
	if (c->pgid <= 0)
		return;
	if (c->stop == STOP_NONE && child_running(c))
		c->stop = why;
	kill(-c->pgid, sig);
}

/* launch_any_left's step: arg is the bool it sets when c is left. */
static void note_left(struct child *c, void *arg)
{
	if (child_running(c) || launch_group_alive(c))
		*(bool *)arg = true;
}

/* Whether anything of the run is left: a child not yet reaped, or a process of a group. */
bool launch_any_left(const struct chaos *ch)
{
	bool left = false;

	launch_each_child((struct chaos *)ch, note_left, &left);
	return left;
}

/* ---- providers ---- */

/*
 * mockprov's config for provider i alone, on ports[i] when known, with the
 * group it is in (its faults are the provider's too; the other groups have
 * no member in this process, which mockprov would refuse).
 */
static char *mock_config_of(struct chaos *ch, size_t i)
{
	char *all = scenario_mock_config(ch->sc, ch->ports);
	cJSON *root = all ? cJSON_Parse(all) : NULL;
	cJSON *one = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(one, "providers");
	cJSON *item = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(root, "providers"),
						(int)i);
	const char *group = json_get_string(item, "group");
	cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
	cJSON *mine = group ? cJSON_DetachItemFromObjectCaseSensitive(groups, group) : NULL;
	cJSON *only = mine ? cJSON_AddObjectToObject(one, "groups") : NULL;
	char *text = NULL;

	if (item && arr && (!mine || only)) {
		cJSON_AddItemToArray(arr, item);
		if (mine)
			cJSON_AddItemToObject(only, group, mine);
		text = cJSON_Print(one);
	} else {
		cJSON_Delete(item);
		cJSON_Delete(mine);
	}
	cJSON_Delete(one);
	cJSON_Delete(root);
	free(all);
	return text;
}

/*
 * The --t0 a child started now is given: the run's t0, moved by any step
 * of the wall clock since the run's time base was set up, so a process
 * started after a time sync (a restarted provider, a replica) counts the
 * same milliseconds since t0 as the ones started before it (a restarted
 * provider whose log ran 7.9 s ahead of loadgen's, answering half a
 * second before its restart's time, is what a step does). A step is said
 * once a run.
 */
static long long child_t0(struct chaos *ch, const char *who)
{
	int64_t step = 0;
	int64_t t0 = timebase_child_t0(&ch->tb, &step);

	if ((step >= CLOCK_STEP_MS || step <= -CLOCK_STEP_MS) && step != ch->clock_step_said) {
		fprintf(stderr, "chaos: %s / %s: the wall clock stepped %+lld ms since the run "
			"began; %s starts on the run's time base all the same\n", ch->sc->name,
			ch->st->name, (long long)step, who);
		ch->clock_step_said = step;
	}
	return (long long)t0;
}

/* Starts provider i's mockprov, its config written first (run_int.h). */
void launch_mock(struct chaos *ch, size_t i, double listen_at_ms)
{
	const char *name = ch->sc->provider_names[i];
	char *prog = buf_aprintf("%s/mockprov", ch->o->bin_dir);
	char *cfg = buf_aprintf("%s/mockprov-%s.json", ch->dir, name);
	char *log_name = buf_aprintf("mockprov-%s.log", name);
	char t0[32];
	char seed[32];
	char at[32];
	char err[CFG_ERR_LEN];
	char *text = mock_config_of(ch, i);
	const char *argv[] = { prog, "--config", cfg, "--t0", t0, "--log-dir", ch->dir,
			       "--seed", seed, "--log-level", "warn", NULL, NULL, NULL };

	snprintf(t0, sizeof(t0), "%lld", child_t0(ch, name));
	if (listen_at_ms >= 0) {
		snprintf(at, sizeof(at), "%.3f", listen_at_ms);
		argv[11] = "--listen-at";
		argv[12] = at;
	}
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)ch->sc->seed);
	if (!prog || !cfg || !log_name || !text) {
		run__fail(ch, "cannot start mockprov for %s: out of memory", name);
		goto out;
	}
	if (outfile_write_text(cfg, text, err, sizeof(err))) {
		run__fail(ch, "%s", err);
		goto out;
	}
	ch->mocks[i].role = ROLE_MOCK;
	ch->mocks[i].index = i;
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
	/* It listens again and will finish its own log — unless a kill came first. */
	if (c->stop == STOP_NONE)
		c->killed = false;
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
	pl->in_flight = pl->easy && curl_uv_add(&ch->cu, pl->easy) == 0;
	if (!pl->in_flight)	/* our own failure, not the program's lateness */
		run__fail(ch, "cannot poll %s: libcurl would not take the transfer", pl->url);
}

/* A readiness poll ended: done, or another in POLL_EVERY_MS, or out of time. */
void launch_on_poll_done(struct curl_uv *cu, CURL *easy, CURLcode code)
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

/*
 * Polls url until it answers 2xx (done(ch, true)) or the monotonic clock
 * passes deadline_ns (done(ch, false)).
 */
static void poll_until(struct chaos *ch, const char *url, uint64_t deadline_ns,
		       void (*done)(struct chaos *ch, bool ok))
{
	struct poller *pl = &ch->poll;

	free(pl->url);
	pl->url = strdup(url);
	if (!pl->url) {
		run__fail(ch, "out of memory");
		return;
	}
	pl->done = done;
	pl->deadline_ns = deadline_ns;
	poll_send(ch);
}

/* Polls url until it answers 2xx (done(ch, true)) or READY_TIMEOUT_MS pass. */
static void poll_until_ready(struct chaos *ch, const char *url,
			     void (*done)(struct chaos *ch, bool ok))
{
	poll_until(ch, url, clock_mono_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000, done);
}

static void on_healthz(struct chaos *ch, bool ok)
{
	if (!ok) {
		run__fail(ch, "provider %s never answered %s", ch->sc->provider_names[ch->healthz_next],
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
				run__fail(ch, "provider %s printed no address", ch->sc->provider_names[i]);
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

static void gateway_start(struct chaos *ch, size_t r, int port);
static void on_setup_ready(struct chaos *ch, bool ok);

/* Polls replica setup_next's /healthz (on_setup_ready). */
static void healthz_replica(struct chaos *ch)
{
	char url[256];

	snprintf(url, sizeof(url), "http://%s/healthz", ch->setup[ch->setup_next].addr);
	poll_until_ready(ch, url, on_setup_ready);
}

/* Starts every replica of the gateway setup at once (each boots in tens of ms). */
static void gateway_start_all(struct chaos *ch)
{
	size_t r;

	for (r = 0; r < ch->nsetup && !ch->stopping; r++)
		gateway_start(ch, r, 0);
}

static void on_setup_ready(struct chaos *ch, bool ok)
{
	struct child *c = &ch->setup[ch->setup_next];

	if (!ok && ch->st->kind == SC_EXTERNAL) {
		launch_external_late(ch);
		return;
	}
	if (!ok) {
		run__fail(ch, "setup %s never answered %s", ch->st->name, ch->poll.url);
		return;
	}
	c->ready = true;
	if (ch->st->kind == SC_EXTERNAL) {
		load_start(ch);		/* at t0, as for every setup */
		return;
	}
	/* A gateway's replicas answer /healthz one after another; then the load. */
	if (++ch->setup_next < ch->nsetup)
		healthz_replica(ch);
	else
		load_start(ch);
}

/* A port free on 127.0.0.1 now, for an external gateway's {port}. */
int launch_free_port(void)
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

/*
 * Starts gateway replica r (index from 0) — the setup's one gateway when
 * it is not replicated — with the run's gateway.json (written by the
 * first start), on port when > 0 (a restart: where loadgen already
 * sends), else on a port of its choosing (its "listening" line says it).
 * A replicated setup's replica K gets --replica rK, events-rK.jsonl and
 * gateway-rK.log.
 */
static void gateway_start(struct chaos *ch, size_t r, int port)
{
	char err[CFG_ERR_LEN];
	bool replicated = scenario_setup_replicated(ch->st);
	char *prog = buf_aprintf("%s/gateway", ch->o->bin_dir);
	char *cfg = buf_aprintf("%s/gateway.json", ch->dir);
	char *events = replicated ? buf_aprintf("%s/events-r%zu.jsonl", ch->dir, r + 1) :
			 buf_aprintf("%s/events.jsonl", ch->dir);
	char *log_name = replicated ? buf_aprintf("gateway-r%zu.log", r + 1) : strdup("gateway.log");
	char *text = NULL;
	char seed[32];
	char t0[32];
	char name[16];
	char listen[64];
	/* --t0: its health checks start at t0, on the grid the simulator's start on. */
	const char *argv[16] = { prog, "--config", cfg, "--events", events, "--seed", seed,
				 "--t0", t0, "--log-level", "warn", NULL };
	size_t n = 11;

	/* Replica K draws its own jitter (the scenario's seed + K - 1), as real replicas do. */
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)(ch->sc->seed + r));
	snprintf(t0, sizeof(t0), "%lld", child_t0(ch, "the gateway"));
	if (!prog || !cfg || !events || !log_name) {
		run__fail(ch, "setup %s: out of memory", ch->st->name);
		goto out;
	}
	if (replicated) {
		snprintf(name, sizeof(name), "r%zu", r + 1);
		argv[n++] = "--replica";
		argv[n++] = name;
	}
	if (port > 0) {
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		argv[n++] = "--listen";
		argv[n++] = listen;
	}
	argv[n] = NULL;
	if (r == 0 && port <= 0) {	/* the run's first start writes the config */
		text = scenario_gateway_config(ch->sc, ch->st, "127.0.0.1:0",
					       (const char *const *)ch->urls, ch->redis_url,
					       ch->key_prefix, err);
		if (!text) {
			run__fail(ch, "setup %s: %s", ch->st->name, err);
			goto out;
		}
		if (outfile_write_text(cfg, text, err, sizeof(err))) {
			run__fail(ch, "%s", err);
			goto out;
		}
	}
	ch->setup[r].role = ROLE_SETUP;
	ch->setup[r].index = r;
	child_start(ch, &ch->setup[r], argv, log_name);
out:
	free(text);
	free(log_name);
	free(events);
	free(cfg);
	free(prog);
}

/* The port a child listens on, from the address its "listening" line gave; 0: none. */
static int child_port(const struct child *c)
{
	const char *colon = strrchr(c->addr, ':');

	return colon ? (int)strtol(colon + 1, NULL, 10) : 0;
}

/*
 * Starts the run's redis-server on ch->redis_port (a free loopback port
 * picked by its first start; a restart comes back on it, empty): bound to
 * 127.0.0.1, no persistence, its files in RUN/redis/, its log (stdout)
 * into redis.log. Its "Ready to accept connections" line says it answers.
 */
static void redis_start(struct chaos *ch)
{
	char *dir = buf_aprintf("%s/redis", ch->dir);
	char port[16];
	const char *argv[] = { "redis-server", "--port", port, "--bind", "127.0.0.1",
			       "--save", "", "--appendonly", "no", "--dir", dir,
			       "--logfile", "", "--daemonize", "no", "--protected-mode", "yes",
			       "--loglevel", "notice", NULL };
	int rc;

	if (!dir) {
		run__fail(ch, "setup %s: out of memory", ch->st->name);
		return;
	}
	if (ch->redis_port <= 0) {
		ch->redis_port = launch_free_port();
		free(ch->redis_url);
		free(ch->key_prefix);
		ch->redis_url = buf_aprintf("redis://127.0.0.1:%d/0", ch->redis_port);
		/* The run's keys alone: t0, the runner's pid, the setup and the run. */
		ch->key_prefix = buf_aprintf("faultline:%lld-%ld-%s-%u:", (long long)ch->t0,
					     (long)getpid(), ch->st->name, ch->k);
		if (ch->redis_port < 0 || !ch->redis_url || !ch->key_prefix) {
			run__fail(ch, "setup %s: no free port for redis-server", ch->st->name);
			goto out;
		}
	}
	rc = stamp_mkdir_p(dir);
	if (rc) {
		run__fail(ch, "cannot make %s: %s", dir, strerror(-rc));
		goto out;
	}
	snprintf(port, sizeof(port), "%d", ch->redis_port);
	ch->redis.role = ROLE_REDIS;
	child_start(ch, &ch->redis, argv, "redis.log");
out:
	free(dir);
}

/*
 * The values of the run's placeholders: the providers' URLs and addresses
 * (as they printed them), the external setup's port, the run's folder as
 * an absolute path. hostports and dir are allocated for v (run_vals_free).
 */
struct run_vals {
	struct sc_expand_vals v;
	const char **hostports;
	char *dir;
};

static int run_vals_init(struct chaos *ch, struct run_vals *rv)
{
	size_t i;

	memset(rv, 0, sizeof(*rv));
	rv->hostports = calloc(ch->sc->nproviders ? ch->sc->nproviders : 1,
			       sizeof(*rv->hostports));
	rv->dir = realpath(ch->dir, NULL);
	if (!rv->hostports || !rv->dir)
		return -errno;
	for (i = 0; i < ch->sc->nproviders; i++)
		rv->hostports[i] = ch->mocks[i].addr[0] ? ch->mocks[i].addr : NULL;
	rv->v.port = ch->ext_port;
	rv->v.urls = (const char *const *)ch->urls;
	rv->v.hostports = rv->hostports;
	rv->v.dir = rv->dir;
	return 0;
}

static void run_vals_free(struct run_vals *rv)
{
	free(rv->hostports);
	free(rv->dir);
	memset(rv, 0, sizeof(*rv));
}

/*
 * Writes an external setup's files (setups[].files) into the run's
 * folder, placeholders filled, each whole through NAME.tmp. Returns 0, or
 * -1 with the run failed.
 */
static int write_setup_files(struct chaos *ch, const struct sc_expand_vals *v)
{
	const struct sc_setup *st = ch->st;
	char err[CFG_ERR_LEN];
	char *path = NULL;
	char *text = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < st->nfiles && !rc; i++) {
		path = buf_aprintf("%s/%s", ch->dir, st->file_names[i]);
		text = scenario_expand(ch->sc, st->file_texts[i], v);
		if (!path || !text) {
			run__fail(ch, "setup %s: cannot write its file %s: %s", st->name,
				  st->file_names[i], strerror(errno));
			rc = -1;
		} else if (outfile_write_text(path, text, err, sizeof(err))) {
			run__fail(ch, "setup %s: %s", st->name, err);
			rc = -1;
		}
		free(path);
		free(text);
	}
	return rc;
}

/* Fails the run: the external setup did not answer its ready_url by t0 (run_int.h). */
void launch_external_late(struct chaos *ch)
{
	char what[1024];

	snprintf(what, sizeof(what), "did not answer 2xx at its ready_url %s by t0: it had "
		 "ready_ms (%.0f ms) and what the providers left of the %d ms lead (a larger "
		 "setups[].ready_ms gives it longer)",
		 ch->poll.url ? ch->poll.url : ch->st->ready_url, ch->st->ready_ms, CHAOS_LEAD_MS);
	if (ch->setup[0].p)
		launch_fail_with_tail(ch, &ch->setup[0], what);
	else
		run__fail(ch, "setup %s %s", ch->st->name, what);
}

/*
 * Starts an external setup once every provider answers: its files
 * written, then its command, then its ready_url polled until t0 (less the
 * margin loadgen needs to start).
 */
static void external_start(struct chaos *ch)
{
	const struct sc_setup *st = ch->st;
	struct run_vals rv = { 0 };
	char **argv = calloc(st->ncommand + 1, sizeof(*argv));
	char *ready = NULL;
	char *target = NULL;
	size_t i;

	ch->ext_port = launch_free_port();
	if (!argv || ch->ext_port < 0 || run_vals_init(ch, &rv))
		goto out_fail;
	for (i = 0; i < st->ncommand; i++) {
		argv[i] = scenario_expand(ch->sc, st->command[i], &rv.v);
		if (!argv[i])
			goto out_fail;
	}
	ready = scenario_expand(ch->sc, st->ready_url, &rv.v);
	target = scenario_expand(ch->sc, st->target, &rv.v);
	if (!ready || !target)
		goto out_fail;
	if (write_setup_files(ch, &rv.v))
		goto out_free;
	free(ch->target);
	ch->target = target;
	target = NULL;
	ch->setup[0].role = ROLE_SETUP;
	if (child_start(ch, &ch->setup[0], (const char *const *)argv, "external.log") == 0)
		poll_until(ch, ready, timebase_mono_at(&ch->tb, -LOAD_MARGIN_MS), on_setup_ready);
	goto out_free;
out_fail:
	run__fail(ch, "setup %s: cannot prepare its command%s", st->name,
		  ch->ext_port < 0 ? ": no free port" : "");
out_free:
	run_vals_free(&rv);
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
			run__fail(ch, "provider %s printed no address", ch->sc->provider_names[st->provider]);
			return;
		}
		free(ch->target);
		ch->target = strdup(ch->urls[st->provider]);
		if (!ch->target) {
			run__fail(ch, "out of memory");
			return;
		}
		load_start(ch);
		break;
	case SC_GATEWAY:
		if (st->shared_redis)
			redis_start(ch);	/* its ready line, then the replicas */
		else
			gateway_start_all(ch);	/* their "ready" lines, then each /healthz */
		break;
	case SC_EXTERNAL:
		external_start(ch);	/* its ready_url, then the load */
		break;
	}
}

/* What a replica or the gateway is called in launch_pending_step's text. */
static void replica_text(const struct chaos *ch, size_t r, char *out, size_t len)
{
	if (scenario_setup_replicated(ch->st))
		snprintf(out, len, "replica r%zu", r + 1);
	else
		snprintf(out, len, "the gateway");
}

/* What the run still waits for before loadgen can start (run_int.h). */
const struct child *launch_pending_step(struct chaos *ch, struct buf *out)
{
	const struct scenario *sc = ch->sc;
	char name[64];
	size_t i;

	for (i = 0; i < sc->nproviders; i++) {
		if (ch->mocks[i].p && !ch->mocks[i].ready) {
			buf_printf(out, "waiting for provider %s's mockprov to say \"ready\"",
				   sc->provider_names[i]);
			return &ch->mocks[i];
		}
	}
	if (ch->mocks_ready == sc->nproviders && ch->healthz_next < sc->nproviders) {
		buf_printf(out, "waiting for provider %s's /healthz (%s)",
			   sc->provider_names[ch->healthz_next], ch->poll.url ? ch->poll.url : "");
		return &ch->mocks[ch->healthz_next];
	}
	if (ch->redis.p && !ch->redis.ready) {
		buf_printf(out, "waiting for redis-server to say \"Ready to accept connections\"");
		return &ch->redis;
	}
	for (i = 0; i < ch->nsetup; i++) {
		const struct child *c = &ch->setup[i];

		if (!c->p || c->ready)
			continue;
		if (ch->st->kind == SC_EXTERNAL) {
			buf_printf(out, "waiting for the setup's ready_url %s to answer 2xx "
				   "(ready_ms %.0f ms)", ch->poll.url ? ch->poll.url : ch->st->ready_url,
				   ch->st->ready_ms);
			return c;
		}
		replica_text(ch, i, name, sizeof(name));
		if (c->said_ready)
			buf_printf(out, "waiting for %s's /healthz (http://%s/healthz)", name, c->addr);
		else
			buf_printf(out, "waiting for %s to say \"ready\"", name);
		return c;
	}
	if (ch->nsetup && !ch->setup[0].p)
		buf_printf(out, "the setup not started: waiting for the providers");
	else
		buf_printf(out, "every process ready, loadgen not yet started");
	return NULL;
}

/* ---- the load and the actions ---- */

/*
 * When action k is carried out: a kill at its time; a restart's process
 * RESTART_LEAD_MS ahead of its time (never before the kill it follows),
 * told to listen at the time itself (mockprov --listen-at), so the
 * provider is back when the timeline says and not a boot later (24-59 ms
 * on a quiet machine, 200 on a loaded one).
 */
static double action_fire_ms(const struct scenario *sc, size_t k)
{
	const struct sc_action *a = &sc->actions[k];
	double at = a->at_ms - RESTART_LEAD_MS;
	size_t j;

	/* A gateway replica or Redis has no --listen-at: it restarts at its time. */
	if (a->kind != SC_RESTART || a->target != SC_TARGET_PROVIDER)
		return a->at_ms;
	for (j = k; j-- > 0;) {
		if (scenario_action_same_target(&sc->actions[j], a))
			return at > sc->actions[j].at_ms ? at : sc->actions[j].at_ms;
	}
	return at > 0 ? at : 0;
}

void launch_plan_actions(const struct scenario *sc, size_t *order)
{
	size_t i, j;

	/* Insertion sort by fire time, ties in the scenario's order: a few actions. */
	for (i = 0; i < sc->nactions; i++) {
		double f = action_fire_ms(sc, i);

		for (j = i; j > 0 && action_fire_ms(sc, order[j - 1]) > f; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
}

static void on_action(uv_timer_t *t);

/*
 * The timer for the next action: its fire time less the loop's cached
 * time, rounded up. The cached time lags the clock (by the fork of loadgen
 * just before the first arming, say), and a delay from the clock would
 * fire that much early — a kill at 2999 ms for 3000, its breaker opening
 * counted in the phase before. on_action re-checks the clock, as
 * mockprov's edges do.
 */
static void arm_action(struct chaos *ch)
{
	double delay;

	if (ch->next_action >= ch->sc->nactions)
		return;
	delay = ceil((double)timebase_mono_at(&ch->tb, action_fire_ms(ch->sc,
				ch->action_order[ch->next_action])) / 1e6 - (double)uv_now(ch->loop));
	uv_timer_start(&ch->timer, on_action, delay > 0 ? (uint64_t)delay : 0, 0);
}

/* The child an action kills or restarts in this run. */
static struct child *action_child(struct chaos *ch, const struct sc_action *a)
{
	switch (a->target) {
	case SC_TARGET_PROVIDER:
		return &ch->mocks[a->provider];
	case SC_TARGET_REPLICA:
		return &ch->setup[a->replica - 1];
	case SC_TARGET_REDIS:
		break;
	}
	return &ch->redis;
}

/* Starts a killed child again: a provider listening at at_ms, a replica or Redis now. */
static void child_restart(struct chaos *ch, struct child *c, double at_ms)
{
	if (c->role == ROLE_MOCK)
		launch_mock(ch, c->index, at_ms);	/* closes the killed one's process first */
	else if (c->role == ROLE_SETUP)
		gateway_start(ch, c->index, child_port(c));	/* where loadgen sends */
	else if (c->role == ROLE_REDIS)
		redis_start(ch);		/* on its port, empty */
}

static void on_action(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	size_t k = ch->action_order[ch->next_action];
	const struct sc_action *a = &ch->sc->actions[k];
	struct child *m = action_child(ch, a);
	char name[96];

	if (timebase_now_ms(&ch->tb) < action_fire_ms(ch->sc, k)) {
		arm_action(ch);		/* the loop's ms ticks ran ahead of the clock */
		return;
	}
	ch->next_action++;
	if (ch->stopping)
		return;
	if (!scenario_action_applies(a, ch->st)) {
		arm_action(ch);		/* a replica or Redis this setup does not have */
		return;
	}
	launch_progress_clear(ch);
	if (ch->o->verbose) {
		if (a->target == SC_TARGET_PROVIDER)	/* "kill primary", as it always said */
			snprintf(name, sizeof(name), "%s", ch->sc->provider_names[a->provider]);
		else
			launch_child_name(ch, m, name, sizeof(name));
		fprintf(stderr, "chaos: t=%.1f s: %s %s\n", a->at_ms / 1000,
			a->kind == SC_KILL ? "kill" : "restart", name);
	}
	if (a->kind == SC_KILL) {
		m->restart_pending = false;	/* a later kill undoes a restart still waiting */
		m->killed = true;
		launch_child_stop(m, SIGKILL, STOP_ACTION);
	} else if (child_running(m)) {
		m->restart_pending = true;	/* the kill's exit is still to come */
		m->listen_at_ms = a->at_ms;
	} else {
		child_restart(ch, m, a->at_ms);
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
	char *path = buf_aprintf("%s/requests.csv.tmp", ch->dir);
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

/* Clears the terminal's progress line, if it is drawn. */
void launch_progress_clear(struct chaos *ch)
{
	if (ch->progress_drawn)
		fputs("\r\033[K", stderr);
	ch->progress_drawn = false;
}

static void on_progress(uv_timer_t *t)
{
	struct chaos *ch = t->data;
	double now = timebase_now_ms(&ch->tb) / 1000;

	progress_read(ch);
	fprintf(stderr, "\r\033[Kchaos: %s / %s / run %u  t=%.1f/%.1f s  requests %llu  errors %llu",
		ch->sc->name, ch->st->name, ch->k, now < 0 ? 0 : now, ch->sc->duration_ms / 1000,
		(unsigned long long)ch->progress_rows, (unsigned long long)ch->progress_errors);
	ch->progress_drawn = true;
}

/*
 * The setup's request headers (setups[].headers) as loadgen's -H takes
 * them, "Name: value", placeholders filled, into out (st->nheaders of
 * them, malloc'ed). Returns 0, or -1 with the run failed.
 */
static int setup_headers(struct chaos *ch, char **out)
{
	const struct sc_setup *st = ch->st;
	struct run_vals rv;
	char *value;
	size_t i;
	int rc = 0;

	if (!st->nheaders)
		return 0;
	if (run_vals_init(ch, &rv)) {
		run_vals_free(&rv);
		run__fail(ch, "cannot start loadgen: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < st->nheaders && !rc; i++) {
		value = scenario_expand(ch->sc, st->header_values[i], &rv.v);
		out[i] = value ? buf_aprintf("%s: %s", st->header_names[i], value) : NULL;
		if (!out[i]) {
			run__fail(ch, "cannot start loadgen: setup %s's header %s: %s", st->name,
				  st->header_names[i], strerror(errno));
			rc = -1;
		}
		free(value);
	}
	run_vals_free(&rv);
	return rc;
}

static void load_start(struct chaos *ch)
{
	const struct sc_setup *st = ch->st;
	struct lg_config cfg;
	char *prog = NULL;
	char *mix = NULL;
	cJSON *m;
	bool oom;
	char t0[32];
	char dur[48];
	char timeout[48];
	char stall[48];
	char seed[32];
	char rate[48];
	char conc[32];
	char ramp[48];
	char think[48];
	char stream[32];
	char ptok[32];
	char mtok[32];
	char retries[32];
	char backoff[48];
	char backoff_max[48];
	char prefix[96];
	char err[CFG_ERR_LEN];
	char targets[SC_REPLICAS_MAX][160];
	char *headers[SC_SETUP_HEADERS_MAX] = { NULL };
	const char *argv[48 + 2 * SC_REPLICAS_MAX + 2 * SC_SETUP_HEADERS_MAX];
	size_t n = 0;
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	if (timebase_now_ms(&ch->tb) > -LOAD_MARGIN_MS) {
		run__fail(ch, "the processes took longer than %.0f ms to start: t0 has passed",
			 ch->lead_ms);
		goto out;
	}
	/* What loadgen is told is what the simulator runs: loadcfg_of's settings. */
	if (loadcfg_of(ch->sc, st, ch->k, &cfg, prefix, sizeof(prefix), err)) {
		run__fail(ch, "cannot start loadgen: %s", err);
		goto out;
	}
	prog = buf_aprintf("%s/loadgen", ch->o->bin_dir);
	if (!prog || (!ch->target && !scenario_setup_replicated(st))) {
		run__fail(ch, "cannot start loadgen: out of memory");
		goto out;
	}
	snprintf(t0, sizeof(t0), "%lld", child_t0(ch, "loadgen"));
	snprintf(dur, sizeof(dur), "%.3fms", cfg.duration_ms);
	snprintf(timeout, sizeof(timeout), "%.3fms", cfg.timeout_ms);
	snprintf(stall, sizeof(stall), "%.3fms", cfg.stall_timeout_ms);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)cfg.seed);
	snprintf(stream, sizeof(stream), "%g", ch->sc->load.stream_p);
	snprintf(ptok, sizeof(ptok), "%lld", (long long)ch->sc->load.prompt_tokens);
	snprintf(mtok, sizeof(mtok), "%lld", (long long)ch->sc->load.max_tokens);
	argv[n++] = prog;
	if (scenario_setup_replicated(st)) {
		/* Every replica, in turn: request N goes to replica (N - 1) % R + 1. */
		for (i = 0; i < ch->nsetup; i++) {
			snprintf(targets[i], sizeof(targets[i]), "http://%s/v1", ch->setup[i].addr);
			argv[n++] = "--target";
			argv[n++] = targets[i];
		}
	} else {
		argv[n++] = "--target";
		argv[n++] = ch->target;
	}
	argv[n++] = "--t0";
	argv[n++] = t0;
	argv[n++] = "--duration";
	argv[n++] = dur;
	argv[n++] = "--timeout";
	argv[n++] = timeout;
	argv[n++] = "--stall-timeout";
	argv[n++] = stall;
	argv[n++] = "--seed";
	argv[n++] = seed;
	argv[n++] = "--model";
	argv[n++] = ch->sc->load.model;
	argv[n++] = "--stream";
	argv[n++] = stream;
	argv[n++] = "--prompt-tokens";
	argv[n++] = ptok;
	argv[n++] = "--max-tokens";
	argv[n++] = mtok;
	argv[n++] = "--id-prefix";
	argv[n++] = cfg.id_prefix;
	if (cfg.concurrency) {
		snprintf(conc, sizeof(conc), "%lld", (long long)cfg.concurrency);
		argv[n++] = "--concurrency";
		argv[n++] = conc;
		if (cfg.ramp_up_ms > 0) {
			snprintf(ramp, sizeof(ramp), "%.6fms", cfg.ramp_up_ms);
			argv[n++] = "--ramp-up";
			argv[n++] = ramp;
		}
		snprintf(think, sizeof(think), "%.6fms", cfg.error_think_ms);
		argv[n++] = "--error-think";
		argv[n++] = think;
	} else {
		if (!cfg.mix.by_rate) {
			snprintf(rate, sizeof(rate), "%.6f", cfg.rate);
			argv[n++] = "--rate";
			argv[n++] = rate;
		}
		/* Also the default of the mix's streams that give a rate. */
		argv[n++] = "--arrival";
		argv[n++] = cfg.arrival == ARRIVAL_POISSON ? "poisson" : "constant";
	}
	m = scenario_loadgen_mix(ch->sc, st, &oom);
	if (m || oom) {
		int rc;

		mix = buf_aprintf("%s/mix.json", ch->dir);
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "cannot write %s/mix.json: out of memory", ch->dir);
		if (m && mix)
			rc = outfile_write_json(mix, m, err, sizeof(err));
		cJSON_Delete(m);
		if (rc) {
			run__fail(ch, "%s", err);
			goto out;
		}
		argv[n++] = "--mix";
		argv[n++] = mix;
	}
	if (cfg.retries) {
		snprintf(retries, sizeof(retries), "%lld", (long long)cfg.retries);
		snprintf(backoff, sizeof(backoff), "%.3fms", cfg.backoff.base_ms);
		snprintf(backoff_max, sizeof(backoff_max), "%.3fms", cfg.backoff.cap_ms);
		argv[n++] = "--retries";
		argv[n++] = retries;
		argv[n++] = "--retry-backoff";
		argv[n++] = backoff;
		argv[n++] = "--retry-backoff-max";
		argv[n++] = backoff_max;
	}
	if (setup_headers(ch, headers))
		goto out;
	for (i = 0; i < st->nheaders; i++) {
		argv[n++] = "-H";
		argv[n++] = headers[i];
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
	for (i = 0; i < SC_SETUP_HEADERS_MAX; i++)
		free(headers[i]);
	mix_free(&cfg.mix);
	free(mix);
	free(prog);
}

/* ---- lines and exits ---- */

/*
 * A gateway's "ready": once every replica of the first start has said it,
 * each /healthz is polled in turn (on_setup_ready); a restart's is enough.
 */
static void on_gateway_ready(struct chaos *ch, struct child *c)
{
	c->killed = false;
	if (ch->load.p) {
		c->ready = true;	/* a restart during the load: loadgen already sends to it */
		return;
	}
	c->said_ready = true;
	if (++ch->setup_lines == ch->nsetup)
		healthz_replica(ch);
}

/* Redis answers: the first start's replicas may start; a restart's is back. */
static void on_redis_ready(struct chaos *ch, struct child *c)
{
	c->ready = true;
	c->killed = false;
	if (!ch->load.p && !ch->setup[0].p)
		gateway_start_all(ch);
}

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
		if (!scenario_setup_replicated(ch->st)) {
			free(ch->target);
			ch->target = buf_aprintf("http://%s/v1", addr);
		}
	} else if (c->role == ROLE_REDIS) {
		if (!c->ready && !ch->stopping && strstr(line, "Ready to accept connections"))
			on_redis_ready(ch, c);
	} else if (strncmp(line, "ready", 5) == 0 && !c->ready && !c->said_ready &&
		   !ch->stopping && (c->role == ROLE_MOCK || ch->st->kind == SC_GATEWAY)) {
		if (c->role == ROLE_SETUP) {
			on_gateway_ready(ch, c);
		} else {
			c->ready = true;
			if (!ch->load.p && ++ch->mocks_ready == ch->sc->nproviders)
				healthz_next(ch);
		}
	}
}

/* Whether a child's exit after the run's SIGTERM is the clean one. */
static bool clean_stop(const struct chaos *ch, const struct child *c)
{
	const struct proc *p = c->p;

	if (c->role == ROLE_LOAD)
		return true;		/* stopped only when the run is failing anyway */
	if (c->role == ROLE_REDIS)	/* redis-server exits 0 on SIGTERM */
		return p->exit_status == 0 && !p->term_signal;
	if (c->role == ROLE_SETUP && ch->st->kind == SC_EXTERNAL)
		return (p->exit_status == 0 || p->exit_status == 128 + SIGTERM) &&
		       (!p->term_signal || p->term_signal == SIGTERM);
	return p->exit_status == 0 && !p->term_signal;	/* mockprov and the gateway say so */
}

/*
 * Fails the run with the child's last stderr lines, kept in memory: they
 * are there even when its log (named for the rest) could not be written.
 */
void launch_fail_with_tail(struct chaos *ch, const struct child *c, const char *what)
{
	struct buf tail = { 0 };

	proc_stderr_tail(c->p, LOG_TAIL_LINES, &tail);
	if (c->p->log_err)
		run__fail(ch, "%s (%s) %s; its last stderr lines (%s could not be written: %s):\n%s",
			 role_name(c), c->p->name, what, c->p->log_path, strerror(-c->p->log_err),
			 tail.len ? tail.data : "(none)\n");
	else
		run__fail(ch, "%s (%s) %s; its last stderr lines (all its output is in %s):\n%s",
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
			run__stop(ch);		/* the load is over: stop the rest */
		else
			launch_fail_with_tail(ch, c, how);
		break;
	case STOP_ACTION:
		if (c->restart_pending && !ch->stopping) {
			c->restart_pending = false;
			child_restart(ch, c, c->listen_at_ms);
		}
		break;
	case STOP_END:
		if (!clean_stop(ch, c)) {
			snprintf(what, sizeof(what), "%s after SIGTERM", how);
			launch_fail_with_tail(ch, c, what);
		}
		break;
	}
}
