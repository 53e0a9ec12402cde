/*
 * gwharness: starting bin/gateway, talking to it and reading what it
 * exposes, for the gateway integration tests; and the fixtures their
 * tests share, which assert.
 */
#include "tests/support/gwharness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"

/* What gw_cleanup undoes. Each Criterion test runs in a process of its own. */
#define GW_MAX_CHILDREN 64
#define GW_MAX_DIRS 64
static pid_t children[GW_MAX_CHILDREN];
static size_t nchildren;
static char dirs[GW_MAX_DIRS][64];
static size_t ndirs;

static const char tmp_prefix[] = "/tmp/faultline-test-";

/* A new temp dir into out, noted for gw_cleanup. Returns 0 or -1. */
static int new_dir(char *out, size_t len)
{
	if (len < 27 || ndirs == GW_MAX_DIRS)
		return -1;
	snprintf(out, len, "%sXXXXXX", tmp_prefix);
	if (!mkdtemp(out))
		return -1;
	snprintf(dirs[ndirs++], sizeof(dirs[0]), "%s", out);
	return 0;
}

static void note_child(pid_t pid)
{
	if (nchildren < GW_MAX_CHILDREN)
		children[nchildren++] = pid;
}

/* Reads a whole file into out (NUL-terminated, cut at len - 1). Returns out. */
static char *slurp(const char *path, char *out, size_t len)
{
	FILE *fp = fopen(path, "r");
	size_t n = 0;

	if (len)
		out[0] = '\0';
	if (!fp || !len)
		goto out;
	n = fread(out, 1, len - 1, fp);
	out[n] = '\0';
out:
	if (fp)
		fclose(fp);
	return out;
}

/*
 * Forks and execs the gateway with argv (argv[0] "gateway"), env applied
 * in the child, stdout to out_pipe[1] (or /dev/null when out_pipe is
 * NULL) and stderr to err_path. Returns the pid or -1.
 */
static pid_t spawn(const char *const argv[], const char *const env[], const int *out_pipe,
		   const char *err_path)
{
	char prog[256];
	pid_t pid;
	size_t i;

	bin_path("gateway", prog, sizeof(prog));
	pid = fork();
	if (pid != 0)
		return pid;
	/* The child. */
	for (i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		if (eq) {
			char name[128];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - env[i]), env[i]);
			setenv(name, eq + 1, 1);
		} else {
			unsetenv(env[i]);
		}
	}
	if (out_pipe) {
		dup2(out_pipe[1], 1);
	} else {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, 1);
	}
	{
		int efd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (efd >= 0)
			dup2(efd, 2);
	}
	execv(prog, (char *const *)argv);
	_exit(127);
}

/* Reads the gateway's stdout until "ready" (noting "listening ADDR") or the timeout. */
static int read_ready(struct gw_proc *g, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	size_t scanned = 0;
	bool ready = false;

	while (!ready) {
		struct pollfd pfd = { .fd = g->out_fd, .events = POLLIN };
		double left = end - now_ms();
		char *nl;

		if (left <= 0 || g->out_fd < 0)
			return -1;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		read_into(&g->out_fd, g->out, sizeof(g->out), &g->nout);
		while ((nl = strchr(g->out + scanned, '\n'))) {
			const char *line = g->out + scanned;

			if (strncmp(line, "listening ", 10) == 0)
				sscanf(line + 10, "%63s", g->addr);
			else if (strncmp(line, "ready", 5) == 0)
				ready = true;
			scanned = (size_t)(nl - g->out) + 1;
		}
	}
	return g->addr[0] ? 0 : -1;
}

int gw_start(struct gw_proc *g, const char *config_json, const struct gw_opts *o)
{
	static const struct gw_opts none = { 0 };
	const char *argv[48];
	char errtext[8192];
	size_t n = 0;
	size_t i;
	int out[2];

	if (!o)
		o = &none;
	memset(g, 0, sizeof(*g));
	g->pid = -1;
	g->out_fd = -1;
	g->status = -1;
	if (new_dir(g->dir, sizeof(g->dir)))
		return -1;
	if (!write_file(g->dir, "gateway.json", config_json, g->config_path,
			sizeof(g->config_path)))
		return -1;
	snprintf(g->events_path, sizeof(g->events_path), "%s/events.jsonl", g->dir);
	snprintf(g->err_path, sizeof(g->err_path), "%s/stderr.log", g->dir);
	argv[n++] = "gateway";
	argv[n++] = "--config";
	argv[n++] = g->config_path;
	argv[n++] = "--listen";
	argv[n++] = o->listen ? o->listen : "127.0.0.1:0";
	if (!o->no_events) {
		argv[n++] = "--events";
		argv[n++] = g->events_path;
	}
	argv[n++] = "--log-level";
	argv[n++] = o->log_level ? o->log_level : "warn";
	for (i = 0; o->args && o->args[i] && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[n++] = o->args[i];
	argv[n] = NULL;
	/* Close-on-exec, so no other child holds the write end open. */
	if (pipe(out))
		return -1;
	fcntl(out[0], F_SETFD, FD_CLOEXEC);
	fcntl(out[1], F_SETFD, FD_CLOEXEC);
	g->pid = spawn(argv, o->env, out, g->err_path);
	close(out[1]);
	if (g->pid < 0) {
		close(out[0]);
		return -1;
	}
	note_child(g->pid);
	g->out_fd = out[0];
	if (read_ready(g, o->ready_ms > 0 ? o->ready_ms : 10000)) {
		gw_stop(g, SIGKILL, 2000);
		fprintf(stderr, "gateway did not print listening/ready; stdout:\n%s\nstderr:\n%s\n",
			g->out, slurp(g->err_path, errtext, sizeof(errtext)));
		return -1;
	}
	return 0;
}

int gw_signal(struct gw_proc *g, int sig)
{
	if (g->pid <= 0)
		return -1;
	return kill(g->pid, sig) ? -1 : 0;
}

/* Reaps pid within timeout_ms (polling: a child's exit gives no fd event once stdout is gone). */
static int reap(pid_t pid, double end)
{
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return exit_status(st);
		if (r < 0 || now_ms() > end)
			return -1;
		usleep(2000);
	}
}

int gw_wait(struct gw_proc *g, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	int rc;

	if (g->pid <= 0)
		return g->status;
	/* Its stdout closes when it exits: the event to wait for. */
	while (g->out_fd >= 0 && now_ms() < end) {
		struct pollfd pfd = { .fd = g->out_fd, .events = POLLIN };

		if (poll(&pfd, 1, (int)(end - now_ms()) + 1) > 0)
			read_into(&g->out_fd, g->out, sizeof(g->out), &g->nout);
	}
	rc = reap(g->pid, end);
	if (rc < 0)
		return -1;
	g->status = rc;
	g->pid = -1;
	if (g->out_fd >= 0)
		close(g->out_fd);
	g->out_fd = -1;
	return rc;
}

int gw_stop(struct gw_proc *g, int sig, double timeout_ms)
{
	int rc;

	if (g->pid <= 0)
		return g->status;
	kill(g->pid, sig);
	rc = gw_wait(g, timeout_ms);
	if (rc < 0) {
		kill(g->pid, SIGKILL);
		gw_wait(g, 2000);
		g->status = -1;
	}
	return rc;
}

char *gw_url(const struct gw_proc *g, const char *path, char *out, size_t len)
{
	snprintf(out, len, "http://%s%s", g->addr[0] ? g->addr : "127.0.0.1:1", path);
	return out;
}

char *gw_stderr(const struct gw_proc *g, char *out, size_t len)
{
	return slurp(g->err_path, out, len);
}

int gw_run(const char *config_json, const char *const args[], const char *const env[],
	   char *config_path, size_t pathlen, char *err, size_t errlen, double timeout_ms)
{
	const char *argv[32];
	char dir[64];
	char err_path[128];
	size_t n = 0;
	size_t i;
	pid_t pid;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (new_dir(dir, sizeof(dir)))
		return -1;
	if (!write_file(dir, "gateway.json", config_json, config_path, pathlen))
		return -1;
	snprintf(err_path, sizeof(err_path), "%s/stderr.log", dir);
	argv[n++] = "gateway";
	argv[n++] = "--config";
	argv[n++] = config_path;
	for (i = 0; args && args[i] && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = spawn(argv, env, NULL, err_path);
	if (pid < 0)
		return -1;
	note_child(pid);
	rc = reap(pid, now_ms() + timeout_ms);
	if (rc < 0) {
		kill(pid, SIGKILL);
		reap(pid, now_ms() + 2000);
	}
	if (err && errlen)
		slurp(err_path, err, errlen);
	return rc;
}

void gw_cleanup(void)
{
	char cmd[128];
	size_t i;
	int st;

	/*
	 * SIGTERM first, a second one to cut a drain short, then SIGKILL: a
	 * gateway that exits by itself runs its sanitizers' exit checks.
	 */
	for (i = 0; i < nchildren; i++) {
		if (children[i] <= 0 || waitpid(children[i], &st, WNOHANG) != 0)
			continue;
		kill(children[i], SIGTERM);
		if (reap(children[i], now_ms() + 1000) >= 0)
			continue;
		kill(children[i], SIGTERM);
		if (reap(children[i], now_ms() + 1000) >= 0)
			continue;
		kill(children[i], SIGKILL);
		waitpid(children[i], &st, 0);
	}
	nchildren = 0;
	for (i = 0; i < ndirs; i++) {
		if (strncmp(dirs[i], tmp_prefix, sizeof(tmp_prefix) - 1) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "rm -rf '%.63s'", dirs[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dirs[i]);
	}
	ndirs = 0;
}

/* ---- requests ---- */

const char *gw_chat_body(const char *alias, char *out, size_t len)
{
	snprintf(out, len,
		 "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		 "\"content\":\"Say something.\"}]}", alias);
	return out;
}

int gw_chat(const struct gw_proc *g, const char *alias, const char *const *headers,
	    double timeout_ms, struct http_result *r)
{
	char url[128];
	char body[256];
	struct http_opts o = {
		.body = gw_chat_body(alias, body, sizeof(body)),
		.headers = headers,
		.timeout_ms = timeout_ms,
	};

	return http_do(gw_url(g, "/v1/chat/completions", url, sizeof(url)), &o, r);
}

int gw_get(const struct gw_proc *g, const char *path, struct http_result *r)
{
	char url[256];
	struct http_opts o = { .timeout_ms = 3000 };

	return http_do(gw_url(g, path, url, sizeof(url)), &o, r);
}

double gw_header_num(const struct http_result *r, const char *name)
{
	char v[64];
	char *end;
	double d;

	if (!http_header(r, name, v, sizeof(v)))
		return NAN;
	d = strtod(v, &end);
	return end == v || *end ? NAN : d;
}

cJSON *gw_error_doc(const char *body)
{
	cJSON *root = cJSON_Parse(body);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(err, "type");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");

	if (cJSON_IsObject(root) && cJSON_IsString(msg) && msg->valuestring[0] &&
	    cJSON_IsString(type) && type->valuestring[0] &&
	    (cJSON_IsString(code) || cJSON_IsNull(code)))
		return root;
	cJSON_Delete(root);
	return NULL;
}

const char *gw_json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double gw_json_num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void *bg_main(void *arg)
{
	struct gw_bg *b = arg;
	const char *hdrs[3] = { b->hrid, b->extra[0] ? b->extra : NULL, NULL };

	b->rc = gw_chat(b->g, b->alias, hdrs, b->timeout_ms, &b->r);
	return NULL;
}

void gw_bg_start(struct gw_bg *b, const struct gw_proc *g, const char *alias, const char *rid,
		 const char *extra, double timeout_ms)
{
	memset(b, 0, sizeof(*b));
	b->g = g;
	snprintf(b->alias, sizeof(b->alias), "%s", alias);
	snprintf(b->hrid, sizeof(b->hrid), "x-request-id: %s", rid);
	snprintf(b->extra, sizeof(b->extra), "%s", extra ? extra : "");
	b->timeout_ms = timeout_ms;
	b->rc = -1;
	cr_assert_eq(pthread_create(&b->thread, NULL, bg_main, b), 0, "no thread for %s", rid);
	b->running = true;
}

void gw_bg_join(struct gw_bg *b)
{
	if (!b->running)
		return;
	pthread_join(b->thread, NULL);
	b->running = false;
}

/* ---- /metrics ---- */

#define MAX_LABELS 16

/* One parsed sample line. */
struct sample {
	char name[128];
	size_t nlabels;
	char key[MAX_LABELS][64];
	char val[MAX_LABELS][128];
	double value;
};

/* Parses one exposition line (not a comment). Returns 0, or -1 when it is not a sample. */
static int parse_sample(const char *line, size_t len, struct sample *s)
{
	const char *p = line;
	const char *end = line + len;
	size_t n = 0;
	char num[64];

	memset(s, 0, sizeof(*s));
	while (p < end && *p != '{' && *p != ' ' && n + 1 < sizeof(s->name))
		s->name[n++] = *p++;
	if (!n)
		return -1;
	if (p < end && *p == '{') {
		p++;
		while (p < end && *p != '}') {
			size_t k = 0;
			size_t v = 0;

			if (s->nlabels == MAX_LABELS)
				return -1;
			while (p < end && *p != '=' && k + 1 < sizeof(s->key[0]))
				s->key[s->nlabels][k++] = *p++;
			if (p + 1 >= end || p[0] != '=' || p[1] != '"')
				return -1;
			p += 2;
			while (p < end && *p != '"') {
				char c = *p++;

				if (c == '\\' && p < end) {
					c = *p++;
					if (c == 'n')
						c = '\n';
				}
				if (v + 1 < sizeof(s->val[0]))
					s->val[s->nlabels][v++] = c;
			}
			if (p >= end)
				return -1;
			p++;	/* the closing quote */
			s->nlabels++;
			if (p < end && *p == ',')
				p++;
		}
		if (p >= end)
			return -1;
		p++;	/* '}' */
	}
	while (p < end && *p == ' ')
		p++;
	n = 0;
	while (p < end && *p != ' ' && n + 1 < sizeof(num))
		num[n++] = *p++;
	num[n] = '\0';
	if (!n)
		return -1;
	s->value = strtod(num, NULL);
	return 0;
}

/* Whether s has label k="v". */
static bool has_label(const struct sample *s, const char *k, size_t klen, const char *v,
		      size_t vlen)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++) {
		if (strlen(s->key[i]) == klen && strncmp(s->key[i], k, klen) == 0 &&
		    strlen(s->val[i]) == vlen && strncmp(s->val[i], v, vlen) == 0)
			return true;
	}
	return false;
}

/* Whether s holds every label of want ("k=v,…"); *count gets how many were named. */
static bool labels_match(const struct sample *s, const char *want, size_t *count)
{
	const char *p = want;

	*count = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);

		if (!eq)
			return false;
		if (!has_label(s, p, (size_t)(eq - p), eq + 1, len - (size_t)(eq - p) - 1))
			return false;
		(*count)++;
		p += len;
		if (*p == ',')
			p++;
	}
	return true;
}

/* Walks the samples of name; exact: the label sets must be equal. */
static double metric_walk(const char *text, const char *name, const char *labels, bool exact,
			  size_t *nmatch)
{
	const char *p = text;
	double sum = 0;
	size_t n = 0;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		struct sample s;
		size_t named;

		if (len && *p != '#' && parse_sample(p, len, &s) == 0 &&
		    strcmp(s.name, name) == 0 && labels_match(&s, labels, &named) &&
		    (!exact || named == s.nlabels)) {
			sum += s.value;
			n++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	if (nmatch)
		*nmatch = n;
	return sum;
}

double gw_metric(const char *text, const char *name, const char *labels)
{
	size_t n;
	double v = metric_walk(text, name, labels, true, &n);

	return n == 1 ? v : NAN;
}

double gw_metric_sum(const char *text, const char *name, const char *labels, size_t *n)
{
	return metric_walk(text, name, labels, false, n);
}

size_t gw_metric_series(const char *text, const char *name, const char *labels,
			const char *key, char (*keyvals)[32], double *vals, size_t cap)
{
	const char *p = text;
	size_t n = 0;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		struct sample s;
		size_t named;
		size_t i;

		if (len && *p != '#' && parse_sample(p, len, &s) == 0 &&
		    strcmp(s.name, name) == 0 && labels_match(&s, labels, &named)) {
			if (n < cap) {
				vals[n] = s.value;
				keyvals[n][0] = '\0';
				for (i = 0; i < s.nlabels; i++) {
					if (strcmp(s.key[i], key) == 0)
						snprintf(keyvals[n], 32, "%s", s.val[i]);
				}
			}
			n++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return n;
}

/* ---- /admin/breakers and events ---- */

cJSON *gw_breakers(const struct gw_proc *g)
{
	struct http_result r;
	cJSON *doc = NULL;

	if (gw_get(g, "/admin/breakers", &r) == 0 && r.status == 200)
		doc = cJSON_Parse(r.body);
	http_result_free(&r);
	return doc;
}

const cJSON *gw_breaker(const cJSON *doc, const char *provider, const char *model)
{
	const cJSON *b;

	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(doc, "breakers")) {
		const char *p = gw_json_str(b, "provider");
		const char *m = gw_json_str(b, "model");

		if (p && m && strcmp(p, provider) == 0 && strcmp(m, model) == 0)
			return b;
	}
	return NULL;
}

cJSON *gw_events(const struct gw_proc *g)
{
	cJSON *arr = cJSON_CreateArray();
	struct buf b = { 0 };
	char chunk[4096];
	const char *p;
	size_t n;
	FILE *fp = fopen(g->events_path, "r");

	if (!fp)
		return arr;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	buf_append(&b, "", 0);
	p = b.data;
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		cJSON *line = cJSON_ParseWithLength(p, len);

		if (!cJSON_IsObject(line)) {
			cJSON_Delete(line);
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, line);
		if (!eol)
			break;
		p = eol + 1;
	}
	buf_free(&b);
	return arr;
}

/* Polls /metrics until the sample equals want (at_least: is at least want), or timeout_ms. */
static double metric_poll(const struct gw_proc *g, const char *name, const char *labels,
			  double want, bool at_least, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	double v;

	for (;;) {
		struct http_result r;

		v = NAN;
		if (gw_get(g, "/metrics", &r) == 0 && r.status == 200)
			v = gw_metric(r.body, name, labels);
		http_result_free(&r);
		if (v == want || (at_least && v >= want) || now_ms() > end)
			return v;
		usleep(5000);	/* polling /metrics for the event */
	}
}

double gw_metric_wait(const struct gw_proc *g, const char *name, const char *labels,
		      double want, double timeout_ms)
{
	return metric_poll(g, name, labels, want, false, timeout_ms);
}

double gw_metric_wait_min(const struct gw_proc *g, const char *name, const char *labels,
			  double want, double timeout_ms)
{
	return metric_poll(g, name, labels, want, true, timeout_ms);
}

long gw_rss_kb(const struct gw_proc *g)
{
	char path[64];
	char line[256];
	long kb = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)g->pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kb = strtol(line + 6, NULL, 10);
			break;
		}
	}
	fclose(fp);
	return kb;
}

/* ---- mockprov's admin API ---- */

double gw_mock_state(const struct mock_proc *m, const char *prov, const char *key)
{
	char url[160];
	struct http_opts o = { .timeout_ms = 2000 };
	struct http_result r;
	const cJSON *p;
	cJSON *root = NULL;
	double v = NAN;

	snprintf(url, sizeof(url), "http://%s/state", m->admin_addr);
	if (http_do(url, &o, &r) == 0 && r.status == 200)
		root = cJSON_Parse(r.body);
	http_result_free(&r);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "providers")) {
		const char *name = gw_json_str(p, "name");

		if (name && strcmp(name, prov) == 0)
			v = gw_json_num(p, key);
	}
	cJSON_Delete(root);
	return v;
}

bool gw_mock_wait(const struct mock_proc *m, const char *prov, const char *key, double want,
		  double timeout_ms)
{
	double end = now_ms() + timeout_ms;

	for (;;) {
		if (gw_mock_state(m, prov, key) == want)
			return true;
		if (now_ms() > end)
			return false;
		usleep(2000);	/* polling the admin API for the event */
	}
}

long gw_mock_inject(const struct mock_proc *m, const char *fault_json)
{
	char url[160];
	struct http_opts o = { .body = fault_json, .timeout_ms = 2000 };
	struct http_result r;
	long status = -1;

	snprintf(url, sizeof(url), "http://%s/faults", m->admin_addr);
	if (http_do(url, &o, &r) == 0)
		status = r.status;
	http_result_free(&r);
	return status;
}

void gw_mock_primary_fails(const struct mock_proc *m, double duration_s)
{
	char fault[160];

	snprintf(fault, sizeof(fault),
		 "{\"provider\":\"primary\",\"kind\":\"status\",\"status\":503,"
		 "\"duration_s\":%g}", duration_s);
	cr_assert_eq(gw_mock_inject(m, fault), 201);
}

long gw_mock_clear(const struct mock_proc *m, const char *prov)
{
	char url[256];
	struct http_opts o = { .method = "DELETE", .timeout_ms = 2000 };
	struct http_result r;
	long status = -1;

	snprintf(url, sizeof(url), "http://%s/faults%s%.64s", m->admin_addr,
		 prov ? "?provider=" : "", prov ? prov : "");
	if (http_do(url, &o, &r) == 0)
		status = r.status;
	http_result_free(&r);
	return status;
}

char *gw_mock_base(const struct mock_proc *m, const char *prov, char *out, size_t len)
{
	return mock_url(m, prov, "/v1", out, len);
}

char *gw_template(char *out, size_t len, const char *tmpl, const struct mock_proc *m)
{
	const char *p = tmpl;
	size_t used = 0;

	while (*p) {
		if (p[0] == '@' && p[1] == '@') {	/* a literal '@' */
			if (used + 2 > len)
				return NULL;
			out[used++] = '@';
			p += 2;
			continue;
		}
		if (*p == '@') {
			const char *end = strchr(p + 1, '@');
			char name[64];
			char base[128];

			if (!end || !m || (size_t)(end - p - 1) >= sizeof(name))
				return NULL;
			snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
			if (!mock_addr(m, name))
				return NULL;
			gw_mock_base(m, name, base, sizeof(base));
			if (used + strlen(base) + 1 > len)
				return NULL;
			memcpy(out + used, base, strlen(base));
			used += strlen(base);
			p = end + 1;
			continue;
		}
		if (used + 2 > len)
			return NULL;
		out[used++] = *p == '\'' ? '"' : *p;
		p++;
	}
	out[used] = '\0';
	return out;
}

/* ---- configs ---- */

/* Appends printf-style to out (of size len, used so far *n); notes an overflow in *overflow. */
static void append(char *out, size_t len, size_t *n, bool *overflow, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void append(char *out, size_t len, size_t *n, bool *overflow, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*overflow)
		return;
	va_start(ap, fmt);
	w = vsnprintf(out + *n, len - *n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= len - *n) {
		*overflow = true;
		return;
	}
	*n += (size_t)w;
}

void gw_fallback_begin(struct gw_fallback *f, const char *secondary_mock, const char *gw_head,
		       const char *secondary_gw)
{
	memset(f, 0, sizeof(*f));
	append(f->mock, sizeof(f->mock), &f->nmock, &f->overflow,
	       "{'providers':[{'name':'secondary','listen':'127.0.0.1:0',%s}", secondary_mock);
	append(f->gw, sizeof(f->gw), &f->ngw, &f->overflow,
	       "{%s'providers':{'secondary':{'base_url':'@secondary@'%s}", gw_head, secondary_gw);
}

void gw_fallback_add(struct gw_fallback *f, const char *name, const char *mock_fields,
		     const char *faults, const char *gw_fields)
{
	append(f->mock, sizeof(f->mock), &f->nmock, &f->overflow,
	       ",{'name':'%s','listen':'127.0.0.1:0',%s,'faults':[%s]}", name, mock_fields,
	       faults);
	append(f->gw, sizeof(f->gw), &f->ngw, &f->overflow, ",'%s':{'base_url':'@%s@'%s}", name,
	       name, gw_fields);
	append(f->models, sizeof(f->models), &f->nmodels, &f->overflow,
	       "%s'%s':{'targets':[{'provider':'%s','model':'mock-small'},"
	       "{'provider':'secondary','model':'mock-small'}]}", f->nprov ? "," : "", name, name);
	f->nprov++;
}

int gw_fallback_end(struct gw_fallback *f, const char *gw_extra)
{
	append(f->mock, sizeof(f->mock), &f->nmock, &f->overflow, "]}");
	append(f->gw, sizeof(f->gw), &f->ngw, &f->overflow, "}%s,'models':{%s}}", gw_extra,
	       f->models);
	return f->overflow ? -1 : 0;
}

/* ---- a test's fixtures ---- */

void gw_held_free(struct gw_held *h)
{
	size_t i;

	for (i = 0; i < h->nresults; i++)
		http_result_free(&h->results[i]);
	for (i = 0; i < h->ndocs; i++)
		cJSON_Delete(h->docs[i]);
	for (i = 0; i < h->ntables; i++)
		csv_free(&h->tables[i]);
	h->nresults = h->ndocs = h->ntables = 0;
}

struct http_result *gw_held_result(struct gw_held *h)
{
	cr_assert_lt(h->nresults, GW_HELD_MAX);
	return &h->results[h->nresults++];
}

cJSON *gw_held_doc(struct gw_held *h, cJSON *doc)
{
	cr_assert_lt(h->ndocs, GW_HELD_MAX);
	h->docs[h->ndocs++] = doc;
	return doc;
}

void gw_mock_start_template(struct mock_proc *m, const char *tmpl)
{
	char cfg[8192];

	cr_assert_not_null(gw_template(cfg, sizeof(cfg), tmpl, NULL), "bad mock template");
	cr_assert_eq(mock_start(m, cfg, 0), 0, "mockprov did not start on %s", cfg);
}

void gw_start_template(struct gw_proc *g, const char *tmpl, const struct mock_proc *m,
		       const struct gw_opts *o)
{
	char cfg[8192];

	cr_assert_not_null(gw_template(cfg, sizeof(cfg), tmpl, m),
			   "bad gateway template %s", tmpl);
	cr_assert_eq(gw_start(g, cfg, o), 0, "the gateway did not start on %s", cfg);
}

const char *gw_metrics_held(const struct gw_proc *g, struct gw_held *h)
{
	struct http_result *r = gw_held_result(h);

	cr_assert_eq(gw_get(g, "/metrics", r), 0);
	cr_assert_eq(r->status, 200, "/metrics: %ld %s", r->status, r->body);
	return r->body;
}

const cJSON *gw_breakers_held(const struct gw_proc *g, struct gw_held *h)
{
	cJSON *doc = gw_held_doc(h, gw_breakers(g));

	cr_assert_not_null(doc, "GET /admin/breakers did not give JSON");
	return doc;
}

const cJSON *gw_breaker_must(const cJSON *doc, const char *prov, const char *model)
{
	const cJSON *b = gw_breaker(doc, prov, model);

	cr_assert_not_null(b, "no breaker for %s/%s in /admin/breakers", prov, model);
	return b;
}

void gw_mock_settle(struct mock_proc *m, const char *const *provs)
{
	size_t i;

	for (i = 0; provs[i]; i++)
		cr_assert(gw_mock_wait(m, provs[i], "in_flight", 0, 3000),
			  "%s still has requests in flight", provs[i]);
	cr_assert_eq(mock_stop(m, SIGTERM), 0, "mockprov did not exit 0");
}

const struct csv_table *gw_mock_rows(struct gw_held *h, const struct mock_proc *m,
				     const char *prov)
{
	struct csv_table *t;

	cr_assert_lt(h->ntables, GW_HELD_TABLES);
	t = &h->tables[h->ntables++];
	cr_assert_eq(mock_log(m, prov, t), 0, "no mock-%s.csv", prov);
	cr_assert_geq(t->nrows, 1, "mock-%s.csv has no header", prov);
	return t;
}

size_t gw_rows_of(const struct csv_table *t, const char *rid, size_t *rows, size_t cap)
{
	size_t n = 0;
	size_t i;

	for (i = 1; i < t->nrows; i++) {
		const char *v = csv_get(t, i, "request_id");

		if (v && strcmp(v, rid) == 0) {
			if (n < cap)
				rows[n] = i;
			n++;
		}
	}
	return n;
}

size_t gw_row_of(const struct csv_table *t, const char *prov, const char *rid)
{
	size_t row = 0;
	size_t n = gw_rows_of(t, rid, &row, 1);

	cr_assert_eq(n, 1, "mock-%s.csv has %zu rows for %s, expected 1", prov, n, rid);
	return row;
}

struct http_result *gw_chat_held(const struct gw_proc *g, struct gw_held *h, const char *alias,
				 const char *rid, const char *extra, double timeout_ms)
{
	char hrid[200];
	const char *hdrs[3] = { NULL, NULL, NULL };
	size_t n = 0;
	struct http_result *r = gw_held_result(h);

	if (rid) {
		snprintf(hrid, sizeof(hrid), "x-request-id: %s", rid);
		hdrs[n++] = hrid;
	}
	if (extra)
		hdrs[n++] = extra;
	cr_assert_eq(gw_chat(g, alias, hdrs, timeout_ms, r), 0, "curl could not start");
	return r;
}

const char *gw_header_str(const struct http_result *r, const char *name, char *out, size_t len)
{
	const char *v = http_header(r, name, out, len);

	return v ? v : "(absent)";
}

void gw_expect_answer(const struct http_result *r, const char *what, const char *prov,
		      int attempts)
{
	char v[128];

	cr_assert_eq(r->code, CURLE_OK, "%s: curl %d %s", what, r->code, r->errbuf);
	cr_assert_eq(r->status, 200, "%s: status %ld, body %s", what, r->status, r->body);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-provider", v, sizeof(v)), prov,
			 "%s: answered by %s, not %s", what, v, prov);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), attempts,
		     "%s: x-faultline-attempts %s, expected %d", what,
		     gw_header_str(r, "x-faultline-attempts", v, sizeof(v)), attempts);
}

cJSON *gw_expect_error(struct gw_held *h, const struct http_result *r, const char *what,
		       long status, const char *type, const char *code)
{
	const cJSON *err;
	cJSON *doc;

	cr_assert_eq(r->code, CURLE_OK, "%s: curl %d %s", what, r->code, r->errbuf);
	cr_assert_eq(r->status, status, "%s: status %ld (expected %ld), body %s", what,
		     r->status, status, r->body);
	doc = gw_error_doc(r->body);
	cr_assert_not_null(doc, "%s: not an OpenAI-style error: %s", what, r->body);
	gw_held_doc(h, doc);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "type"), type, "%s: error.type in %s", what, r->body);
	cr_assert_str_eq(gw_json_str(err, "code") ? gw_json_str(err, "code") : "(null)", code,
			 "%s: error.code in %s", what, r->body);
	cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(err, "attempts")),
		  "%s: no error.attempts array in %s", what, r->body);
	return doc;
}

double gw_row_num(const struct csv_table *t, size_t row, const char *col)
{
	const char *v = csv_get(t, row, col);

	cr_assert(v && *v, "no %s in row %zu", col, row);
	return strtod(v, NULL);
}

double gw_expect_cost(struct gw_held *h, const struct http_result *r, const char *what,
		      double in, double out, double discarded)
{
	cJSON *body = gw_held_doc(h, cJSON_Parse(r->body));
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(body, "usage");
	double pt = gw_json_num(usage, "prompt_tokens");
	double ct = gw_json_num(usage, "completion_tokens");
	double own = pt * in / 1000 + ct * out / 1000;
	double want = own + discarded;
	double cost = gw_header_num(r, "x-faultline-cost-usd");
	char v[64];

	cr_assert(pt > 0 && ct > 0, "%s: usage in %s", what, r->body);
	cr_assert(fabs(cost - want) <= 1e-9 + want * 1e-4,
		  "%s: x-faultline-cost-usd %s, expected %.9f (%.0f in × %g + %.0f out × %g per 1k"
		  ", + %.9f discarded)", what, gw_header_str(r, "x-faultline-cost-usd", v, sizeof(v)),
		  want, pt, in, ct, out, discarded);
	return own;
}
