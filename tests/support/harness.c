/*
 * harness: processes, CSV logs and HTTP requests for the integration tests.
 */
#include "tests/support/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"

double now_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

int64_t unix_ms(void)
{
	return clock_unix_ms();
}

const char *bin_path(const char *prog, char *out, size_t len)
{
	const char *dir = getenv("FAULTLINE_BIN");

	snprintf(out, len, "%s/%s", dir && *dir ? dir : "bin", prog);
	return out;
}

/* argv[0] as a path: as given when it has a slash, else under $FAULTLINE_BIN. */
static const char *prog_path(const char *argv0, char *out, size_t len)
{
	if (!strchr(argv0, '/'))
		return bin_path(argv0, out, len);
	snprintf(out, len, "%s", argv0);
	return out;
}

char *write_file(const char *dir, const char *name, const char *text,
		 char *out, size_t len)
{
	FILE *fp;

	snprintf(out, len, "%s/%s", dir, name);
	fp = fopen(out, "w");
	if (!fp)
		return NULL;
	fputs(text, fp);
	fclose(fp);
	return out;
}

static void print_file(const char *path)
{
	char line[512];
	FILE *fp = fopen(path, "r");

	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp))
		fprintf(stderr, "  | %s", line);
	fclose(fp);
}

/* Waits for a child within timeout_ms. Returns its status code or -1. */
static int wait_child(pid_t pid, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (now_ms() > end)
			return -1;
		usleep(2000);	/* polling a child's exit: no event to wait on */
	}
	return exit_status(st);
}

int exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return -1;
}

/* Reads lines from fd until "ready" or the timeout. */
static int read_ready(struct mock_proc *m, double timeout_ms)
{
	struct buf acc = { 0 };
	double end = now_ms() + timeout_ms;
	char chunk[1024];
	int rc = -1;

	for (;;) {
		struct pollfd pfd = { .fd = m->out_fd, .events = POLLIN };
		double left = end - now_ms();
		char *line;
		char *nl;
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		n = read(m->out_fd, chunk, sizeof(chunk));
		if (n <= 0)
			break;
		buf_append(&acc, chunk, (size_t)n);
		while ((nl = strchr(acc.data, '\n'))) {
			*nl = '\0';
			line = acc.data;
			if (strncmp(line, "listening ", 10) == 0 && m->nprov < HARNESS_MAX_PROVIDERS) {
				sscanf(line + 10, "%63s %63s", m->prov_name[m->nprov],
				       m->prov_addr[m->nprov]);
				m->nprov++;
			} else if (strncmp(line, "admin ", 6) == 0) {
				snprintf(m->admin_addr, sizeof(m->admin_addr), "%s", line + 6);
			} else if (strncmp(line, "ready", 5) == 0) {
				rc = 0;
			}
			buf_consume(&acc, (size_t)(nl - acc.data) + 1);
			if (rc == 0)
				goto out;
		}
	}
out:
	buf_free(&acc);
	return rc;
}

int mock_start(struct mock_proc *m, const char *config_json, int64_t t0)
{
	const struct mock_opts o = { .t0 = t0 };

	return mock_start_opts(m, config_json, &o);
}

int mock_start_opts(struct mock_proc *m, const char *config_json, const struct mock_opts *o)
{
	char prog[256];
	char t0s[32];
	char seed[32];
	char listen_at[32];
	char errpath[300];
	int out[2];
	pid_t pid;

	memset(m, 0, sizeof(*m));
	m->pid = -1;
	if (o->dir) {
		snprintf(m->dir, sizeof(m->dir), "%s", o->dir);
	} else {
		snprintf(m->dir, sizeof(m->dir), "/tmp/faultline-test-XXXXXX");
		if (!mkdtemp(m->dir))
			return -1;
	}
	if (!write_file(m->dir, "mock.json", config_json, m->config_path,
			sizeof(m->config_path)))
		return -1;
	m->t0 = o->t0 ? o->t0 : unix_ms();
	snprintf(t0s, sizeof(t0s), "%lld", (long long)m->t0);
	snprintf(seed, sizeof(seed), "%u", o->seed ? o->seed : 1);
	snprintf(listen_at, sizeof(listen_at), "%.3f", o->listen_at_ms);
	snprintf(errpath, sizeof(errpath), "%s/stderr.log", m->dir);
	bin_path("mockprov", prog, sizeof(prog));
	if (pipe(out))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(out[1], 1);
		if (efd >= 0)
			dup2(efd, 2);
		close(out[0]);
		close(out[1]);
		if (o->fsize_limit > 0) {
			struct rlimit rl = { (rlim_t)o->fsize_limit, (rlim_t)o->fsize_limit };

			if (setrlimit(RLIMIT_FSIZE, &rl))
				_exit(126);
		}
		if (o->nice > 0 && setpriority(PRIO_PROCESS, 0, o->nice))
			_exit(126);
		execl(prog, prog, "--config", m->config_path, "--t0", t0s, "--log-dir", m->dir,
		      "--admin", "127.0.0.1:0", "--log-level", "warn", "--seed", seed,
		      o->listen_at_ms > 0 ? "--listen-at" : (char *)NULL, listen_at, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	m->out_fd = out[0];
	m->pid = pid;
	if (read_ready(m, 5000)) {
		fprintf(stderr, "mockprov did not become ready; its stderr:\n");
		mock_stop(m, SIGKILL);
		print_file(errpath);
		return -1;
	}
	return 0;
}

const char *mock_addr(const struct mock_proc *m, const char *name)
{
	int i;

	for (i = 0; i < m->nprov; i++) {
		if (strcmp(m->prov_name[i], name) == 0)
			return m->prov_addr[i];
	}
	return NULL;
}

char *mock_url(const struct mock_proc *m, const char *name, const char *path,
	       char *out, size_t len)
{
	const char *a = mock_addr(m, name);

	snprintf(out, len, "http://%s%s", a ? a : "127.0.0.1:1", path);
	return out;
}

int mock_stop(struct mock_proc *m, int sig)
{
	int rc;

	if (m->pid <= 0)
		return -1;
	kill(m->pid, sig);
	rc = wait_child(m->pid, 5000);
	if (rc < 0) {
		kill(m->pid, SIGKILL);
		wait_child(m->pid, 2000);
	}
	m->pid = -1;
	if (m->out_fd > 0)
		close(m->out_fd);
	m->out_fd = -1;
	return rc;
}

void mock_cleanup(struct mock_proc *m)
{
	char cmd[400];

	if (m->pid > 0)
		mock_stop(m, SIGKILL);
	if (m->dir[0] && strncmp(m->dir, "/tmp/faultline-test-", 20) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", m->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", m->dir);
	}
}

/* ---- CSV ---- */

static int csv_push_field(char ***row, size_t *n, struct buf *f)
{
	char **r = realloc(*row, (*n + 1) * sizeof(*r));

	if (!r)
		return -1;
	*row = r;
	r[*n] = buf_steal(f);
	(*n)++;
	return 0;
}

static int csv_push_row(struct csv_table *t, char **row, size_t n)
{
	char ***rows = realloc(t->rows, (t->nrows + 1) * sizeof(*rows));
	size_t *lens = realloc(t->rowlen, (t->nrows + 1) * sizeof(*lens));

	if (rows)
		t->rows = rows;
	if (lens)
		t->rowlen = lens;
	if (!rows || !lens)
		return -1;
	t->rows[t->nrows] = row;
	t->rowlen[t->nrows] = n;
	t->nrows++;
	return 0;
}

int csv_read(const char *path, struct csv_table *t)
{
	FILE *fp = fopen(path, "r");
	struct buf f = { 0 };
	char **row = NULL;
	size_t n = 0;
	bool quoted = false;
	bool any = false;
	int c;

	memset(t, 0, sizeof(*t));
	if (!fp)
		return -1;
	while ((c = fgetc(fp)) != EOF) {
		if (quoted) {
			if (c == '"') {
				int d = fgetc(fp);

				if (d == '"') {
					buf_append(&f, "\"", 1);
					continue;
				}
				quoted = false;
				if (d == EOF)
					break;
				c = d;
			} else {
				char ch = (char)c;

				buf_append(&f, &ch, 1);
				continue;
			}
		}
		if (c == '"') {
			quoted = true;
			any = true;
		} else if (c == ',') {
			csv_push_field(&row, &n, &f);
			any = true;
		} else if (c == '\n') {
			csv_push_field(&row, &n, &f);
			csv_push_row(t, row, n);
			row = NULL;
			n = 0;
			any = false;
		} else if (c != '\r') {
			char ch = (char)c;

			buf_append(&f, &ch, 1);
			any = true;
		}
	}
	if (any || f.len) {
		csv_push_field(&row, &n, &f);
		csv_push_row(t, row, n);
	}
	buf_free(&f);
	fclose(fp);
	t->ncols = t->nrows ? t->rowlen[0] : 0;
	return 0;
}

int csv_col(const struct csv_table *t, const char *name)
{
	size_t j;

	for (j = 0; t->nrows && j < t->rowlen[0]; j++) {
		if (strcmp(t->rows[0][j], name) == 0)
			return (int)j;
	}
	return -1;
}

const char *csv_get(const struct csv_table *t, size_t row, const char *col)
{
	int j = csv_col(t, col);

	if (j < 0 || row >= t->nrows || (size_t)j >= t->rowlen[row])
		return NULL;
	return t->rows[row][j];
}

void csv_free(struct csv_table *t)
{
	size_t i;
	size_t j;

	for (i = 0; i < t->nrows; i++) {
		for (j = 0; j < t->rowlen[i]; j++)
			free(t->rows[i][j]);
		free(t->rows[i]);
	}
	free(t->rows);
	free(t->rowlen);
	memset(t, 0, sizeof(*t));
}

int mock_log(const struct mock_proc *m, const char *name, struct csv_table *t)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/mock-%s.csv", m->dir, name);
	return csv_read(path, t);
}

/* ---- HTTP ---- */

struct recv_state {
	struct http_result *r;
	struct buf body;
	struct buf headers;
	size_t cap;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct recv_state *s = arg;
	struct http_result *r = s->r;
	size_t len = size * nmemb;

	if (r->nchunks == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *t = realloc(r->chunk_ms, cap * sizeof(*t));
		size_t *l = realloc(r->chunk_len, cap * sizeof(*l));

		if (t)
			r->chunk_ms = t;
		if (l)
			r->chunk_len = l;
		if (!t || !l)
			return 0;
		s->cap = cap;
	}
	r->chunk_ms[r->nchunks] = now_ms() - r->start_ms;
	r->chunk_len[r->nchunks] = len;
	r->nchunks++;
	buf_append(&s->body, data, len);
	return len;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct recv_state *s = arg;

	buf_append(&s->headers, data, size * nmemb);
	return size * nmemb;
}

int http_do(const char *url, const struct http_opts *o, struct http_result *r)
{
	static const struct http_opts none = { 0 };
	struct recv_state s = { .r = r };
	struct curl_slist *hl = NULL;
	CURL *h;
	size_t i;

	if (!o)
		o = &none;
	memset(r, 0, sizeof(*r));
	h = curl_easy_init();
	if (!h)
		return -1;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout_ms > 0 ? o->timeout_ms : 5000));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
	if (o->fresh_connection)
		curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	hl = curl_slist_append(hl, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Expect:");
	for (i = 0; o->headers && o->headers[i]; i++)
		hl = curl_slist_append(hl, o->headers[i]);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (o->body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, o->body);
	if (o->method)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, o->method);
	r->start_ms = now_ms();
	r->code = curl_easy_perform(h);
	r->total_ms = now_ms() - r->start_ms;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &r->os_errno);
	buf_append(&s.body, "", 0);
	buf_append(&s.headers, "", 0);
	r->body_len = s.body.len;
	r->body = buf_steal(&s.body);
	r->headers = buf_steal(&s.headers);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return 0;
}

const char *header_field(const char *block, const char *name, char *out, size_t len)
{
	size_t nlen = strlen(name);
	const char *p = block;

	while (p && *p) {
		const char *eol = strstr(p, "\r\n");
		size_t llen = eol ? (size_t)(eol - p) : strlen(p);

		if (llen > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
			const char *v = p + nlen + 1;
			size_t vlen;

			while (*v == ' ' || *v == '\t')
				v++;
			vlen = llen - (size_t)(v - p);
			while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
				vlen--;
			snprintf(out, len, "%.*s", (int)vlen, v);
			return out;
		}
		if (!eol)
			break;
		p = eol + 2;
	}
	return NULL;
}

const char *http_header(const struct http_result *r, const char *name,
			char *out, size_t len)
{
	return header_field(r->headers, name, out, len);
}

void http_result_free(struct http_result *r)
{
	free(r->headers);
	free(r->body);
	free(r->chunk_ms);
	free(r->chunk_len);
	memset(r, 0, sizeof(*r));
}

size_t sse_parse(const char *body, char ***events, size_t *error_events)
{
	const char *p = body;
	char **ev = NULL;
	size_t n = 0;
	bool error_next = false;

	*error_events = 0;
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t llen = eol ? (size_t)(eol - p) : strlen(p);

		if (llen >= 6 && strncmp(p, "event:", 6) == 0) {
			const char *v = p + 6;

			while (*v == ' ')
				v++;
			error_next = strncmp(v, "error", 5) == 0;
		} else if (llen >= 5 && strncmp(p, "data:", 5) == 0) {
			const char *v = p + 5;
			char **e;

			while (*v == ' ')
				v++;
			e = realloc(ev, (n + 1) * sizeof(*e));
			if (!e)
				break;
			ev = e;
			ev[n] = strndup(v, llen - (size_t)(v - p));
			n++;
			if (error_next)
				(*error_events)++;
			error_next = false;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	*events = ev;
	return n;
}

void sse_free(char **events, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(events[i]);
	free(events);
}

const char *chat_body(bool stream, char *out, size_t len)
{
	snprintf(out, len,
		 "{\"model\":\"mock-small\",\"stream\":%s,%s\"messages\":[{\"role\":\"user\","
		 "\"content\":\"Say something.\"}]}",
		 stream ? "true" : "false",
		 stream ? "\"stream_options\":{\"include_usage\":true}," : "");
	return out;
}

int run_program(const char *const argv[], char *err, size_t errlen, double timeout_s)
{
	char prog[256];
	char tmpl[] = "/tmp/faultline-run-XXXXXX";
	int efd = mkstemp(tmpl);
	pid_t pid;
	int rc;
	ssize_t n;

	if (efd < 0)
		return -1;
	prog_path(argv[0], prog, sizeof(prog));
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(efd, 2);
		if (devnull >= 0)
			dup2(devnull, 1);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	rc = wait_child(pid, timeout_s * 1000);
	if (rc < 0) {
		kill(pid, SIGKILL);
		wait_child(pid, 2000);
	}
	if (err && errlen) {
		lseek(efd, 0, SEEK_SET);
		n = read(efd, err, errlen - 1);
		err[n > 0 ? n : 0] = '\0';
	}
	close(efd);
	unlink(tmpl);
	return rc;
}

/* A new pseudo-terminal in raw mode: *master and *slave. Returns 0 or -1. */
static int open_raw_pty(int *master, int *slave)
{
	struct termios t;

	if (openpty(master, slave, NULL, NULL, NULL))
		return -1;
	if (tcgetattr(*slave, &t) == 0) {
		cfmakeraw(&t);
		if (tcsetattr(*slave, TCSANOW, &t) == 0)
			return 0;
	}
	close(*master);
	close(*slave);
	return -1;
}

pid_t spawn_piped(const char *const argv[], bool tty, int *out_fd, int *err_fd)
{
	char prog[256];
	int po[2];
	int pe[2];		/* [0]: read by the caller; [1]: the child's stderr */
	pid_t pid;
	int rc;

	prog_path(argv[0], prog, sizeof(prog));
	if (pipe(po))
		return -1;
	rc = tty ? open_raw_pty(&pe[0], &pe[1]) : pipe(pe);
	if (rc)
		goto out_close_po;
	pid = fork();
	if (pid < 0)
		goto out_close_pe;
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	*out_fd = po[0];
	*err_fd = pe[0];
	return pid;

out_close_pe:
	close(pe[0]);
	close(pe[1]);
out_close_po:
	close(po[0]);
	close(po[1]);
	return -1;
}

void read_into(int *fd, char *out, size_t cap, size_t *used)
{
	char scratch[4096];
	ssize_t n;

	if (*used + 1 < cap)
		n = read(*fd, out + *used, cap - 1 - *used);
	else
		n = read(*fd, scratch, sizeof(scratch));	/* full: drop the rest */
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	if (*used + 1 < cap) {
		*used += (size_t)n;
		out[*used] = '\0';
	}
}
