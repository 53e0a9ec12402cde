/*
 * lgharness: running loadgen, reading its results, a stub chat server and
 * a raw canned-bytes server for the loadgen integration tests.
 */
#include "tests/support/lgharness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"

/* What lg_cleanup undoes. Each Criterion test runs in a process of its own. */
#define LG_MAX_CHILDREN 16
#define LG_MAX_DIRS 16
static pid_t children[LG_MAX_CHILDREN];
static size_t nchildren;
static char dirs[LG_MAX_DIRS][64];
static size_t ndirs;

int lg_tempdir(char *out, size_t len)
{
	if (len < 27 || ndirs == LG_MAX_DIRS)
		return -1;
	snprintf(out, len, "/tmp/faultline-test-XXXXXX");
	if (!mkdtemp(out))
		return -1;
	snprintf(dirs[ndirs++], sizeof(dirs[0]), "%s", out);
	return 0;
}

/* lg_spawn, with stderr a pseudo-terminal when tty is true. */
static int spawn(struct lg_proc *p, const char *const argv[], bool tty)
{
	memset(p, 0, sizeof(*p));
	p->out_fd = -1;
	p->err_fd = -1;
	p->status = -1;
	p->pid = spawn_piped(argv, tty, &p->out_fd, &p->err_fd);
	if (p->pid < 0)
		return -1;
	if (nchildren < LG_MAX_CHILDREN)
		children[nchildren++] = p->pid;
	return 0;
}

int lg_spawn(struct lg_proc *p, const char *const argv[])
{
	return spawn(p, argv, false);
}

int lg_spawn_tty(struct lg_proc *p, const char *const argv[])
{
	return spawn(p, argv, true);
}

/* Waits up to timeout_ms for output on the open pipes and reads it. */
static void pump_pipes(struct lg_proc *p, double timeout_ms, bool stderr_only)
{
	struct pollfd pfd[2];
	int n = 0;
	int i;

	if (p->err_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = p->err_fd, .events = POLLIN };
	if (!stderr_only && p->out_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = p->out_fd, .events = POLLIN };
	if (n == 0)
		return;
	if (poll(pfd, (nfds_t)n, timeout_ms < 0 ? 0 : (int)timeout_ms + 1) <= 0)
		return;
	for (i = 0; i < n; i++) {
		if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (pfd[i].fd == p->err_fd)
			read_into(&p->err_fd, p->err, sizeof(p->err), &p->nerr);
		else
			read_into(&p->out_fd, p->out, sizeof(p->out), &p->nout);
	}
}

bool lg_await_stderr(struct lg_proc *p, const char *needle, double timeout_ms)
{
	double end = now_ms() + timeout_ms;

	while (!strstr(p->err, needle)) {
		if (p->err_fd < 0 || now_ms() >= end)
			return false;
		pump_pipes(p, end - now_ms(), true);
	}
	return true;
}

int lg_wait(struct lg_proc *p, double timeout_s)
{
	double end = now_ms() + timeout_s * 1000;
	int st;

	if (p->pid <= 0)
		return p->status;
	/* The pipes close when the child exits: that is the event to wait for. */
	while ((p->out_fd >= 0 || p->err_fd >= 0) && now_ms() < end)
		pump_pipes(p, end - now_ms(), false);
	if (p->out_fd >= 0 || p->err_fd >= 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &st, 0);
		p->status = -1;
	} else if (waitpid(p->pid, &st, 0) == p->pid) {
		p->status = exit_status(st);
	}
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	p->out_fd = -1;
	p->err_fd = -1;
	p->pid = -1;
	return p->status;
}

int lg_run(struct lg_proc *p, const char *out_dir, const char *const args[], double timeout_s)
{
	const char *argv[80];
	size_t n = 0;
	size_t i;

	argv[n++] = "loadgen";
	for (i = 0; args[i] && n < sizeof(argv) / sizeof(argv[0]) - 5; i++)
		argv[n++] = args[i];
	argv[n++] = "--no-progress";
	if (out_dir) {
		argv[n++] = "--out";
		argv[n++] = out_dir;
	}
	argv[n] = NULL;
	if (lg_spawn(p, argv))
		return -1;
	return lg_wait(p, timeout_s);
}

void lg_cleanup(void)
{
	char cmd[128];
	size_t i;
	int st;

	for (i = 0; i < nchildren; i++) {
		if (children[i] > 0 && waitpid(children[i], &st, WNOHANG) == 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], &st, 0);
		}
	}
	nchildren = 0;
	for (i = 0; i < ndirs; i++) {
		if (strncmp(dirs[i], "/tmp/faultline-test-", 20) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "rm -rf '%.63s'", dirs[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dirs[i]);
	}
	ndirs = 0;
}

/* ---- results ---- */

int lg_requests(const char *out_dir, struct csv_table *t)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/requests.csv", out_dir);
	if (csv_read(path, t))
		return -1;
	return t->nrows ? 0 : -1;
}

cJSON *lg_summary(const char *out_dir)
{
	char path[400];
	struct buf b = { 0 };
	char chunk[4096];
	cJSON *root = NULL;
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/summary.json", out_dir);
	fp = fopen(path, "r");
	if (!fp)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_append(&b, chunk, n);
	fclose(fp);
	if (b.data)
		root = cJSON_ParseWithLength(b.data, b.len);
	buf_free(&b);
	return root;
}

/* The item at a '/' path of object keys, or NULL. */
static const cJSON *json_at(const cJSON *root, const char *path)
{
	char key[128];
	const char *p = path;
	const cJSON *cur = root;

	while (cur && *p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len >= sizeof(key))
			return NULL;
		memcpy(key, p, len);
		key[len] = '\0';
		cur = cJSON_GetObjectItemCaseSensitive(cur, key);
		p += len;
		if (*p == '/')
			p++;
	}
	return cur;
}

double lg_json_num(const cJSON *root, const char *path)
{
	const cJSON *v = json_at(root, path);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *lg_json_str(const cJSON *root, const char *path)
{
	const cJSON *v = json_at(root, path);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double lg_num(const struct csv_table *t, size_t row, const char *col)
{
	const char *v = csv_get(t, row, col);
	char *end;
	double d;

	if (!v || !*v)
		return NAN;
	d = strtod(v, &end);
	return *end ? NAN : d;
}

size_t lg_column(const struct csv_table *t, const char *col, double **vals)
{
	double *v = calloc(t->nrows ? t->nrows : 1, sizeof(*v));
	size_t n = 0;
	size_t i;

	*vals = v;
	if (!v)
		return 0;
	for (i = 1; i < t->nrows; i++) {
		double d = lg_num(t, i, col);

		if (!isnan(d))
			v[n++] = d;
	}
	return n;
}

size_t lg_count(const struct csv_table *t, const char *col, const char *value)
{
	size_t n = 0;
	size_t i;

	for (i = 1; i < t->nrows; i++) {
		const char *v = csv_get(t, i, col);

		if (v && strcmp(v, value) == 0)
			n++;
	}
	return n;
}

size_t lg_find(const struct csv_table *t, const char *col, const char *value)
{
	size_t i;

	for (i = 1; i < t->nrows; i++) {
		const char *v = csv_get(t, i, col);

		if (v && strcmp(v, value) == 0)
			return i;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return (x > y) - (x < y);
}

double lg_percentile(double *v, size_t n, double p)
{
	double rank;
	size_t k;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	rank = ceil(p / 100.0 * (double)n);
	k = rank < 1 ? 1 : (size_t)rank;
	if (k > n)
		k = n;
	return v[k - 1];
}

/* ---- the stub server ---- */

static const char stub_body[] =
	"{\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion\",\"created\":1,"
	"\"model\":\"stub\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
	"\"content\":\"a b c\"},\"finish_reason\":\"stop\"}],"
	"\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}";

/* The first (and only) content chunk of the stub's streams. */
static const char stub_chunk[] =
	"data: {\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion.chunk\","
	"\"created\":1,\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":"
	"{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n";
static const char stub_done[] = "data: [DONE]\n\n";
static const char stub_comment[] = ": keepalive\n\n";

/* Loop thread: a stream left open has ended (the client left, or stub_stop). */
static void stub_on_abort(struct http_exchange *ex, void *data, enum http_abort_reason reason)
{
	struct stub_server *s = data;
	size_t i;

	(void)reason;
	for (i = 0; i < STUB_MAX_REQUESTS; i++) {
		if (s->open[i] == ex)
			s->open[i] = NULL;
	}
}

/* Loop thread: notes a stream that stays open, for the comments and the abort. */
static void stub_keep_open(struct stub_server *s, struct http_exchange *ex)
{
	size_t i;

	for (i = 0; i < STUB_MAX_REQUESTS; i++) {
		if (!s->open[i]) {
			s->open[i] = ex;
			http_exchange_set_data(ex, s, stub_on_abort, NULL);
			return;
		}
	}
	http_exchange_close(ex, false);	/* more than the tests ask for */
}

/* Loop thread: every 100 ms, a comment on each open stream. */
static void stub_on_keepalive(uv_timer_t *t)
{
	struct stub_server *s = t->data;
	unsigned wrote = 0;
	size_t i;

	for (i = 0; i < STUB_MAX_REQUESTS; i++) {
		if (!s->open[i])
			continue;
		if (http_stream_write(s->open[i], stub_comment, strlen(stub_comment)))
			s->open[i] = NULL;	/* ended: the server has let it go */
		else
			wrote++;
	}
	pthread_mutex_lock(&s->mu);
	s->comments += wrote;
	pthread_mutex_unlock(&s->mu);
}

/* Loop thread: answers with an event stream that is left open. */
static void stub_stream(struct stub_server *s, struct http_exchange *ex, struct http_kv *h,
			size_t n)
{
	h[0] = (struct http_kv){ "Content-Type", "text/event-stream" };
	if (http_stream_begin(ex, 200, h, n))
		return;
	if (http_stream_write(ex, stub_chunk, strlen(stub_chunk)))
		return;
	if (s->answer == STUB_DONE_OPEN && http_stream_write(ex, stub_done, strlen(stub_done)))
		return;
	stub_keep_open(s, ex);
}

/* Loop thread: records the request's headers and answers it. */
static void stub_on_request(struct http_exchange *ex, void *data)
{
	struct stub_server *s = data;
	const struct http_request *req = http_exchange_request(ex);
	struct http_kv h[16];
	size_t n = 0;
	size_t i;

	pthread_mutex_lock(&s->mu);
	if (s->requests < STUB_MAX_REQUESTS) {
		char *out = s->headers[s->requests];
		size_t used = 0;

		for (i = 0; i < req->nheaders && used < sizeof(s->headers[0]); i++)
			used += (size_t)snprintf(out + used, sizeof(s->headers[0]) - used,
						 "%s: %s\n", req->headers[i].name,
						 req->headers[i].value);
		snprintf(s->bodies[s->requests], sizeof(s->bodies[0]), "%.*s",
			 (int)req->body_len, req->body ? req->body : "");
	}
	s->requests++;
	pthread_mutex_unlock(&s->mu);
	h[n++] = (struct http_kv){ "Content-Type", "application/json" };
	for (i = 0; i < s->nresp && n < sizeof(h) / sizeof(h[0]); i++)
		h[n++] = s->resp_headers[i];
	if (s->answer != STUB_PLAIN) {
		stub_stream(s, ex, h, n);
		return;
	}
	http_respond(ex, 200, h, n, stub_body, strlen(stub_body));
}

static void *stub_main(void *arg)
{
	struct stub_server *s = arg;

	uv_run(&s->loop, UV_RUN_DEFAULT);
	return NULL;
}

static void stub_on_freed(void *arg)
{
	struct stub_server *s = arg;

	uv_close((uv_handle_t *)&s->wake, NULL);
}

static void stub_on_wake(uv_async_t *a)
{
	struct stub_server *s = a->data;

	uv_timer_stop(&s->keepalive);
	uv_close((uv_handle_t *)&s->keepalive, NULL);
	/* Aborts the streams left open: stub_on_abort forgets each. */
	http_server_free(s->srv, stub_on_freed, s);
	s->srv = NULL;
}

static int stub_start_max(struct stub_server *s, enum stub_answer answer,
			  const struct http_kv *headers, size_t n, size_t max_body);

int stub_start_answer(struct stub_server *s, enum stub_answer answer,
		      const struct http_kv *headers, size_t n)
{
	return stub_start_max(s, answer, headers, n, 0);
}

int stub_start_big(struct stub_server *s)
{
	return stub_start_max(s, STUB_PLAIN, NULL, 0, 4u << 20);
}

/* stub_start_answer, with request bodies of up to max_body bytes (0: the server's default). */
static int stub_start_max(struct stub_server *s, enum stub_answer answer,
			  const struct http_kv *headers, size_t n, size_t max_body)
{
	struct http_server_config cfg;
	struct sockaddr_in sin;
	const struct sockaddr_in *bound;

	memset(s, 0, sizeof(*s));
	s->resp_headers = headers;
	s->nresp = n;
	s->answer = answer;
	pthread_mutex_init(&s->mu, NULL);
	http_server_config_default(&cfg);
	if (max_body)
		cfg.max_body_bytes = max_body;
	if (uv_loop_init(&s->loop))
		return -1;
	if (uv_async_init(&s->loop, &s->wake, stub_on_wake))
		return -1;
	s->wake.data = s;
	if (uv_timer_init(&s->loop, &s->keepalive))
		return -1;
	s->keepalive.data = s;
	if (answer == STUB_KEEPALIVE && uv_timer_start(&s->keepalive, stub_on_keepalive, 100, 100))
		return -1;
	s->srv = http_server_new(&s->loop, &cfg, stub_on_request, s);
	if (!s->srv)
		return -1;
	uv_ip4_addr("127.0.0.1", 0, &sin);
	if (http_server_listen(s->srv, (const struct sockaddr *)&sin))
		return -1;
	bound = (const struct sockaddr_in *)http_server_addr(s->srv);
	snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%u", (unsigned)ntohs(bound->sin_port));
	if (pthread_create(&s->thread, NULL, stub_main, s))
		return -1;
	s->running = true;
	return 0;
}

int stub_start(struct stub_server *s, const struct http_kv *headers, size_t n)
{
	return stub_start_answer(s, STUB_PLAIN, headers, n);
}

int stub_stop(struct stub_server *s)
{
	int rc;

	if (!s->running)
		return -1;
	uv_async_send(&s->wake);
	pthread_join(s->thread, NULL);
	s->running = false;
	rc = uv_loop_close(&s->loop);
	pthread_mutex_destroy(&s->mu);
	return rc ? -1 : 0;
}

const char *stub_header(struct stub_server *s, unsigned i, const char *name, char *out,
			size_t len)
{
	size_t nlen = strlen(name);
	const char *p;
	const char *found = NULL;

	pthread_mutex_lock(&s->mu);
	p = i < STUB_MAX_REQUESTS && i < s->requests ? s->headers[i] : "";
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t llen = eol ? (size_t)(eol - p) : strlen(p);

		if (llen > nlen + 1 && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
			snprintf(out, len, "%.*s", (int)(llen - nlen - 2), p + nlen + 2);
			found = out;
			break;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* ---- the raw server ---- */

/* Waits up to ms (-1: no limit) for fd to be readable; false once told to stop. */
static bool raw_wait(struct raw_server *s, int fd, int ms)
{
	struct pollfd p[2] = { { .fd = s->wake[0], .events = POLLIN },
			       { .fd = fd, .events = POLLIN } };
	int rc;

	do
		rc = poll(p, fd >= 0 ? 2 : 1, ms);
	while (rc < 0 && errno == EINTR);
	return rc >= 0 && !(p[0].revents & POLLIN);
}

/* The Content-Length of a request's head (head[0..len)), or 0. */
static size_t raw_content_length(const char *head, size_t len)
{
	static const char name[] = "\r\ncontent-length:";
	size_t i;

	for (i = 0; i + sizeof(name) - 1 <= len; i++) {
		if (strncasecmp(head + i, name, sizeof(name) - 1) == 0)
			return strtoul(head + i + sizeof(name) - 1, NULL, 10);
	}
	return 0;
}

/* Reads one request: headers, then Content-Length bytes of body. */
static bool raw_read_request(struct raw_server *s, int fd)
{
	char buf[65536];
	size_t len = 0;
	size_t want = 0;
	const char *end = NULL;

	for (;;) {
		ssize_t n;

		if (end && len >= want)
			return true;
		if (len == sizeof(buf) - 1 || !raw_wait(s, fd, -1))
			return false;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		if (end)
			continue;
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			want = (size_t)(end - buf);
			want += 4 + raw_content_length(buf, want);
		}
	}
}

static bool raw_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static bool raw_write_part(int fd, const struct raw_part *part)
{
	size_t n = strlen(part->bytes);
	char size[32];

	if (!part->chunk)
		return raw_write_all(fd, part->bytes, n);
	snprintf(size, sizeof(size), "%zx\r\n", n);
	return raw_write_all(fd, size, strlen(size)) && raw_write_all(fd, part->bytes, n) &&
	       raw_write_all(fd, "\r\n", 2);
}

static void *raw_main(void *arg)
{
	struct raw_server *s = arg;

	while (raw_wait(s, s->listen_fd, -1)) {
		int fd = accept(s->listen_fd, NULL, NULL);
		bool ok;
		size_t i;

		if (fd < 0)
			continue;
		ok = raw_read_request(s, fd);
		for (i = 0; ok && i < s->nparts; i++) {
			if (s->parts[i].pause_ms && !raw_wait(s, -1, (int)s->parts[i].pause_ms))
				ok = false;
			else
				ok = raw_write_part(fd, &s->parts[i]);
		}
		if (ok) {
			pthread_mutex_lock(&s->mu);
			s->requests++;
			pthread_mutex_unlock(&s->mu);
		}
		close(fd);
	}
	return NULL;
}

int raw_start(struct raw_server *s, const struct raw_part *parts, size_t n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);

	memset(s, 0, sizeof(*s));
	s->parts = parts;
	s->nparts = n;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 || pipe(s->wake))
		goto fail;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->listen_fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(s->listen_fd, 16) ||
	    getsockname(s->listen_fd, (struct sockaddr *)&sin, &sl))
		goto fail;
	snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%u", (unsigned)ntohs(sin.sin_port));
	if (pthread_create(&s->thread, NULL, raw_main, s))
		goto fail;
	s->running = true;
	return 0;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	pthread_mutex_destroy(&s->mu);
	return -1;
}

int raw_stop(struct raw_server *s)
{
	char c = 1;
	int rc = 0;

	if (!s->running)
		return -1;
	if (write(s->wake[1], &c, 1) != 1)
		rc = -1;
	pthread_join(s->thread, NULL);
	s->running = false;
	close(s->listen_fd);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	return rc;
}

unsigned raw_requests(struct raw_server *s)
{
	unsigned n;

	pthread_mutex_lock(&s->mu);
	n = s->requests;
	pthread_mutex_unlock(&s->mu);
	return n;
}
