/*
 * streamclient: opens N concurrent streaming chat completions against one
 * URL, times every SSE token event as it arrives, and prints the
 * distribution of the gaps between tokens and of the time to first token,
 * with how many streams ended with [DONE] and how many failed. Told the
 * provider's token interval, it also prints how late each token came
 * against its stream's schedule.
 *
 * The bytes are moved by an engine (streamclient.h): raw libuv sockets with
 * http-parser by default, or libcurl's multi interface. This file holds the
 * flags, the SSE splitting and timing, and the report.
 */
#include "bench/streamclient.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "common/opt.h"

#define MAX_STREAMS 50000
#define FD_SPARE 64	/* descriptors kept for everything but the streams */

static const char usage_text[] =
	"usage: streamclient --url URL [--streams N] [--duration-bound S]\n"
	"                    [--engine raw|curl] [--body JSON] [--token-ms MS]\n"
	"                    [--events-csv FILE] [--kv]\n"
	"\n"
	"Opens N concurrent streaming chat completions (\"stream\": true) against\n"
	"URL, records when each SSE token event arrives, and prints the gaps\n"
	"between tokens (count, p50, p90, p99, p99.9, max in ms), the time to\n"
	"first token (p50, p99), and how many streams ended with [DONE].\n"
	"\n"
	"A token's arrival time is the kernel's receive timestamp of its bytes\n"
	"(raw engine), so it does not depend on how soon the client read them;\n"
	"the gaps by read time are printed as well. The curl engine has only\n"
	"the read time.\n"
	"\n"
	"With --token-ms MS (the provider sends token k at a fixed time\n"
	"ttft + k x MS after the request, as mockprov does), each token's\n"
	"lateness is printed too: its arrival - k x MS, less the least such\n"
	"value in its stream (so the stream's most punctual token is 0 late and\n"
	"a constant delay, like a proxy's first-token cost, cancels out). Unlike\n"
	"a gap, one late token counts once, not as a long gap then a short one.\n"
	"The jitter |gap - MS| is printed as well.\n"
	"\n"
	"  --url URL             http://HOST:PORT/PATH of a chat completions endpoint\n"
	"  --streams N           concurrent streams, 1 to 50000 (default 1000)\n"
	"  --duration-bound S    hard time limit; streams still open then are\n"
	"                        counted as unfinished (default 60 s)\n"
	"  --engine raw|curl     raw libuv sockets and http-parser (default), or\n"
	"                        libcurl's multi interface (raw takes only\n"
	"                        http://NUMERIC-HOST:PORT URLs)\n"
	"  --body JSON           the request body (default: a one-message chat\n"
	"                        request for model mock-small with \"stream\": true)\n"
	"  --token-ms MS         the provider's interval between tokens (ms, above 0):\n"
	"                        adds the lateness and jitter distributions\n"
	"  --events-csv FILE     write every token's times to FILE (stream, token,\n"
	"                        arrive_ms, read_ms from the start of the run)\n"
	"  --kv                  print the figures as 'key value' lines\n"
	"  --help                this text\n"
	"\n"
	"Exit status: 0 when every stream ended with [DONE], 1 when some did not,\n"
	"2 for a usage error, 3 when the run could not start.\n";

static const char default_body[] =
	"{\"model\":\"mock-small\",\"stream\":true,"
	"\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\"}]}";

struct options {
	const char *url;
	int64_t streams;
	double bound_ms;
	const struct engine *engine;
	const char *body;
	const char *events_csv;
	double token_ms;	/* 0: not given */
	bool kv;
};

/* One token as --events-csv writes it. */
struct token_event {
	int stream;
	int token;
	uint64_t arrive_ns;
	uint64_t read_ns;
};

struct event_log {
	struct token_event *v;
	size_t n;
	size_t cap;
};

static void parse_args(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "streams", required_argument, NULL, 'n' },
		{ "duration-bound", required_argument, NULL, 'd' },
		{ "engine", required_argument, NULL, 'e' },
		{ "body", required_argument, NULL, 'b' },
		{ "events-csv", required_argument, NULL, 'c' },
		{ "token-ms", required_argument, NULL, 't' },
		{ "kv", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *val;
	int c;

	o->streams = 1000;
	o->bound_ms = 60000;
	o->engine = &engine_raw;
	o->body = default_body;
	while ((c = opt_next("streamclient", argc, argv, NULL, opts, &val)) != -1) {
		switch (c) {
		case 'u':
			o->url = val;
			break;
		case 'n':
			if (opt_parse_i64(val, 1, MAX_STREAMS, &o->streams))
				opt_usage_error("streamclient", "--streams: expected a whole number from 1 to 50000, "
					    "got \"%s\"", val);
			break;
		case 'd':
			if (opt_parse_duration_ms(val, &o->bound_ms) || o->bound_ms <= 0)
				opt_usage_error("streamclient", "--duration-bound: expected a duration above 0 "
					    "(e.g. 30 or 30s), got \"%s\"", val);
			break;
		case 'e':
			if (strcmp(val, "raw") == 0)
				o->engine = &engine_raw;
			else if (strcmp(val, "curl") == 0)
				o->engine = &engine_curl;
			else
				opt_usage_error("streamclient", "--engine: expected raw or curl, got \"%s\"", val);
			break;
		case 'b':
			o->body = val;
			break;
		case 'c':
			o->events_csv = val;
			break;
		case 't':
			if (opt_parse_double(val, 0, 600000, &o->token_ms) || o->token_ms <= 0)
				opt_usage_error("streamclient", "--token-ms: expected a number of "
					    "milliseconds above 0 (e.g. 20), got \"%s\"", val);
			break;
		case 'k':
			o->kv = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	if (!o->url)
		opt_usage_error("streamclient", "--url URL is required");
	if (strncmp(o->url, "http://", 7) != 0)
		opt_usage_error("streamclient", "--url: expected an http:// URL, got \"%s\"", o->url);
}

/* ---- samples ---- */

static int samples_add(struct samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		double *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return (x > y) - (x < y);
}

static void samples_sort(struct samples *s)
{
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
}

/* The nearest-rank percentile p (0–100) of sorted samples; NaN when empty. */
static double percentile(const struct samples *s, double p)
{
	size_t rank;

	if (s->n == 0)
		return NAN;
	rank = (size_t)ceil(p / 100 * (double)s->n);
	if (rank < 1)
		rank = 1;
	return s->v[rank - 1];
}

/* ---- SSE ---- */

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool contains(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);
	size_t i;

	for (i = 0; i + n <= len; i++) {
		if (s[i] == needle[0] && memcmp(s + i, needle, n) == 0)
			return true;
	}
	return false;
}

/* Keeps one token's times for --events-csv. */
static void event_log_add(struct event_log *log, const struct stream *s, uint64_t arrive_ns,
			  uint64_t read_ns)
{
	struct token_event *e;

	if (log->n == log->cap) {
		size_t cap = log->cap ? log->cap * 2 : 4096;

		e = realloc(log->v, cap * sizeof(*e));
		if (!e)
			return;
		log->v = e;
		log->cap = cap;
	}
	e = &log->v[log->n++];
	e->stream = s->index;
	e->token = s->tokens;
	e->arrive_ns = arrive_ns;
	e->read_ns = read_ns;
}

/* Milliseconds from a to b (monotonic ns), negative if b is earlier. */
static double ms_between(uint64_t a, uint64_t b)
{
	return (double)(int64_t)(b - a) / 1e6;
}

/* One whole SSE event (without its blank line) that came in one read. */
static void on_event(struct stream *s, const char *ev, size_t len, uint64_t arrive_ns,
		     uint64_t read_ns)
{
	struct run *r = s->run;

	if (has_prefix(ev, len, "event: error")) {
		s->saw_error_event = true;
		return;
	}
	if (has_prefix(ev, len, "data: [DONE]")) {
		s->saw_done = true;
		return;
	}
	if (!has_prefix(ev, len, "data: "))
		return;
	/* A chunk is one JSON object: a cheap check that it is whole. */
	if (has_prefix(ev, len, "data: {") && ev[len - 1] != '}') {
		s->saw_malformed = true;
		return;
	}
	/* A token is a chunk whose delta has content; the finish and usage
	 * chunks have none. */
	if (!contains(ev, len, "\"content\":"))
		return;
	if (s->tokens == 0) {
		samples_add(&r->ttft, ms_between(s->start_ns, arrive_ns));
	} else {
		samples_add(&r->gaps, ms_between(s->last_arrive_ns, arrive_ns));
		samples_add(&r->read_gaps, ms_between(s->last_read_ns, read_ns));
		/* One read has one timestamp, its last segment's: a token that
		 * waited unread for the next one is stamped with its time. */
		if (read_ns == s->last_read_ns)
			r->shared_stamps++;
	}
	if (r->token_ms > 0)
		samples_add(&s->offsets, ms_between(s->start_ns, arrive_ns) -
			    (double)s->tokens * r->token_ms);
	if (r->events)
		event_log_add(r->events, s, arrive_ns, read_ns);
	s->last_arrive_ns = arrive_ns;
	s->last_read_ns = read_ns;
	s->tokens++;
}

/*
 * The offset just past the next "\n\n" in data from `from`, or 0. (SSE
 * also allows "\r\n" line ends; mockprov and OpenAI send "\n".)
 */
static size_t event_end(const char *data, size_t len, size_t from)
{
	const char *p = data + from;
	const char *end = data + len;

	while (p + 1 < end) {
		p = memchr(p, '\n', (size_t)(end - p - 1));
		if (!p)
			return 0;
		if (p[1] == '\n')
			return (size_t)(p - data) + 2;
		p++;
	}
	return 0;
}

/* Emits every whole event of data; returns the bytes consumed. */
static size_t split_events(struct stream *s, const char *data, size_t len,
			   uint64_t arrive_ns, uint64_t read_ns)
{
	size_t start = 0;
	size_t end = event_end(data, len, 0);

	while (end) {
		on_event(s, data + start, end - start - 2, arrive_ns, read_ns);
		start = end;
		end = event_end(data, len, start);
	}
	return start;
}

void stream_on_body(struct stream *s, const char *data, size_t len, uint64_t arrive_ns,
		    uint64_t read_ns)
{
	size_t used;

	s->run->bytes_in += len;
	if (s->pending.len == 0) {
		used = split_events(s, data, len, arrive_ns, read_ns);
		if (used < len)
			buf_append(&s->pending, data + used, len - used);
		return;
	}
	/* An event began in an earlier read: it ends now, at the earliest. */
	buf_append(&s->pending, data, len);
	used = split_events(s, s->pending.data, s->pending.len, arrive_ns, read_ns);
	buf_consume(&s->pending, used);
}

static void note_error(struct run *r, struct stream *s, const char *msg)
{
	if (r->first_error[0])
		return;
	snprintf(r->first_error, sizeof(r->first_error), "stream %d: %s", s->index, msg);
}

void stream_finish(struct stream *s, int status, const char *error)
{
	struct run *r = s->run;
	const char *why = NULL;
	char msg[64];

	if (s->state != STREAM_RUNNING)
		return;
	if (error) {
		r->ntransport_errors++;
		why = error;
	} else if (status != 200) {
		r->nhttp_errors++;
		snprintf(msg, sizeof(msg), "answered HTTP %d", status);
		why = msg;
	} else if (s->saw_error_event) {
		r->nerror_events++;
		why = "got an SSE error event";
	} else if (s->saw_malformed) {
		r->nmalformed++;
		why = "got a malformed SSE event";
	} else if (!s->saw_done) {
		r->nno_done++;
		why = "the stream ended without [DONE]";
	}
	if (why) {
		note_error(r, s, why);
		s->state = STREAM_FAILED;
		r->nfailed++;
	} else {
		s->state = STREAM_COMPLETED;
		r->ncompleted++;
	}
	buf_free(&s->pending);
	if (--r->nactive == 0 && !r->starting && r->all_done)
		r->all_done(r);
}

/* ---- the run ---- */

struct main_state {
	struct run run;
	const struct engine *engine;
	uv_timer_t bound;
	uv_signal_t sigint;
	bool closing;
};

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static void close_main_handles(struct main_state *ms)
{
	if (ms->closing)
		return;
	ms->closing = true;
	uv_close((uv_handle_t *)&ms->bound, on_closed);
	uv_close((uv_handle_t *)&ms->sigint, on_closed);
}

static void on_all_done(struct run *r)
{
	struct main_state *ms = r->all_done_data;

	ms->engine->abort(r);
	close_main_handles(ms);
}

/* Ends the streams still running: they count as unfinished. */
static void stop_run(struct main_state *ms)
{
	struct run *r = &ms->run;
	int i;

	if (r->stopping)
		return;
	r->stopping = true;
	for (i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		if (s->state == STREAM_RUNNING || s->state == STREAM_IDLE) {
			s->state = STREAM_UNFINISHED;
			r->nunfinished++;
		}
	}
	r->nactive = 0;
	ms->engine->abort(r);
	close_main_handles(ms);
}

static void on_bound(uv_timer_t *t)
{
	stop_run(t->data);
}

static void on_sigint(uv_signal_t *h, int signum)
{
	(void)signum;
	stop_run(h->data);
}

/*
 * With --token-ms: each token's lateness (its offset from the schedule less
 * its stream's least), and each gap's distance from the interval.
 */
static void schedule_figures(struct run *r)
{
	size_t k;
	int i;

	if (r->token_ms <= 0)
		return;
	for (i = 0; i < r->nstreams; i++) {
		const struct samples *off = &r->streams[i].offsets;
		double least;

		if (off->n == 0)
			continue;
		least = off->v[0];
		for (k = 1; k < off->n; k++)
			least = fmin(least, off->v[k]);
		for (k = 0; k < off->n; k++)
			samples_add(&r->lateness, off->v[k] - least);
	}
	for (k = 0; k < r->gaps.n; k++)
		samples_add(&r->jitter, fabs(r->gaps.v[k] - r->token_ms));
}

static double cpu_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* Prints "PREFIX_p50_ms V" lines and the like for one distribution. */
static void kv_dist(const char *prefix, const struct samples *s, bool all)
{
	printf("%s_count %zu\n%s_p50_ms %.3f\n", prefix, s->n, prefix, percentile(s, 50));
	if (all)
		printf("%s_p90_ms %.3f\n", prefix, percentile(s, 90));
	printf("%s_p99_ms %.3f\n", prefix, percentile(s, 99));
	if (all)
		printf("%s_p999_ms %.3f\n", prefix, percentile(s, 99.9));
	printf("%s_max_ms %.3f\n", prefix, percentile(s, 100));
}

static void print_dist(const char *label, const struct samples *s)
{
	printf("  %-22s count %zu  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
	       label, s->n, percentile(s, 50), percentile(s, 90), percentile(s, 99),
	       percentile(s, 99.9), percentile(s, 100));
}

static void report(const struct options *o, const struct run *r, double wall_s,
		   const struct rusage *ru)
{
	double user = cpu_s(&ru->ru_utime);
	double sys = cpu_s(&ru->ru_stime);
	double share = wall_s > 0 ? 100 * (user + sys) / wall_s : 0;
	const char *stamps = r->kernel_stamps ? "kernel" : "read";

	if (o->kv) {
		printf("engine %s\narrival_stamps %s\nstreams %d\ncompleted %d\nfailed %d\n"
		       "unfinished %d\n", o->engine->name, stamps, r->nstreams, r->ncompleted,
		       r->nfailed, r->nunfinished);
		printf("http_errors %d\nerror_events %d\nmalformed %d\nno_done %d\n"
		       "transport_errors %d\n", r->nhttp_errors, r->nerror_events,
		       r->nmalformed, r->nno_done, r->ntransport_errors);
		kv_dist("ttft", &r->ttft, false);
		kv_dist("gap", &r->gaps, true);
		kv_dist("read_gap", &r->read_gaps, true);
		printf("shared_stamps %llu\n", (unsigned long long)r->shared_stamps);
		if (r->token_ms > 0) {
			printf("token_ms %.3f\n", r->token_ms);
			kv_dist("lateness", &r->lateness, true);
			kv_dist("jitter", &r->jitter, true);
		}
		printf("wall_s %.3f\ncpu_user_s %.3f\ncpu_sys_s %.3f\ncpu_pct %.1f\n"
		       "bytes_in %llu\n", wall_s, user, sys, share,
		       (unsigned long long)r->bytes_in);
		if (r->first_error[0])
			printf("first_error %s\n", r->first_error);
		return;
	}
	printf("streamclient: %d streams to %s (engine %s, arrival = %s timestamp)\n",
	       r->nstreams, o->url, o->engine->name, stamps);
	printf("  streams                completed with [DONE] %d, failed %d, "
	       "unfinished %d\n", r->ncompleted, r->nfailed, r->nunfinished);
	if (r->nfailed)
		printf("  failures               HTTP status %d, error event %d, malformed %d, "
		       "no [DONE] %d, transport %d; first: %s\n", r->nhttp_errors,
		       r->nerror_events, r->nmalformed, r->nno_done, r->ntransport_errors,
		       r->first_error);
	printf("  ttft (ms)              count %zu  p50 %.3f  p99 %.3f  max %.3f\n",
	       r->ttft.n, percentile(&r->ttft, 50), percentile(&r->ttft, 99),
	       percentile(&r->ttft, 100));
	print_dist("inter-token (ms)", &r->gaps);
	if (r->kernel_stamps) {
		print_dist("  by read time (ms)", &r->read_gaps);
		printf("  tokens read with the one before (stamped as the later): %llu\n",
		       (unsigned long long)r->shared_stamps);
	}
	if (r->token_ms > 0) {
		print_dist("lateness (ms)", &r->lateness);
		print_dist("|gap - token_ms| (ms)", &r->jitter);
	}
	printf("  client                 wall %.2f s, cpu user %.2f s + sys %.2f s = %.0f%% "
	       "of one core, %.1f MB in\n", wall_s, user, sys, share,
	       (double)r->bytes_in / 1e6);
}

/* Writes every token's times, in ms from t0_ns. Returns 0 or -errno. */
static int write_events(const char *path, const struct event_log *log, uint64_t t0_ns)
{
	FILE *fp = fopen(path, "w");
	size_t i;
	int rc = 0;

	if (!fp)
		return -errno;
	fputs("stream,token,arrive_ms,read_ms\n", fp);
	for (i = 0; i < log->n; i++) {
		const struct token_event *e = &log->v[i];

		fprintf(fp, "%d,%d,%.3f,%.3f\n", e->stream, e->token,
			ms_between(t0_ns, e->arrive_ns), ms_between(t0_ns, e->read_ns));
	}
	if (fclose(fp))
		rc = -errno;
	return rc;
}

static void free_run(struct run *r)
{
	int i;

	for (i = 0; i < r->nstreams; i++) {
		buf_free(&r->streams[i].pending);
		free(r->streams[i].offsets.v);
	}
	free(r->streams);
	free(r->gaps.v);
	free(r->read_gaps.v);
	free(r->ttft.v);
	free(r->lateness.v);
	free(r->jitter.v);
	if (r->events)
		free(r->events->v);
}

int main(int argc, char **argv)
{
	struct main_state ms;
	struct options o = { 0 };
	struct run *r = &ms.run;
	struct event_log events = { 0 };
	struct rusage ru;
	uint64_t t_start;
	double wall_s;
	int rc;
	int i;

	parse_args(argc, argv, &o);
	memset(&ms, 0, sizeof(ms));
	signal(SIGPIPE, SIG_IGN);
	rc = opt_raise_fd_limit(o.streams + FD_SPARE);
	if (rc) {
		fprintf(stderr, "streamclient: %lld streams need %lld file descriptors; "
			"the limit is lower (ulimit -n)\n", (long long)o.streams,
			(long long)(o.streams + FD_SPARE));
		return 3;
	}
	ms.engine = o.engine;
	r->loop = uv_default_loop();
	r->url = o.url;
	r->body = o.body;
	r->body_len = strlen(o.body);
	r->nstreams = (int)o.streams;
	r->token_ms = o.token_ms;
	r->all_done = on_all_done;
	r->all_done_data = &ms;
	if (o.events_csv)
		r->events = &events;
	r->streams = calloc((size_t)r->nstreams, sizeof(*r->streams));
	if (!r->streams) {
		fprintf(stderr, "streamclient: out of memory\n");
		return 3;
	}
	for (i = 0; i < r->nstreams; i++) {
		r->streams[i].run = r;
		r->streams[i].index = i;
	}
	uv_timer_init(r->loop, &ms.bound);
	ms.bound.data = &ms;
	uv_timer_start(&ms.bound, on_bound, (uint64_t)ceil(o.bound_ms), 0);
	uv_signal_init(r->loop, &ms.sigint);
	ms.sigint.data = &ms;
	uv_signal_start(&ms.sigint, on_sigint, SIGINT);
	t_start = clock_mono_ns();
	r->starting = true;
	rc = ms.engine->start(r);
	r->starting = false;
	if (rc) {
		fprintf(stderr, "streamclient: cannot start the %s engine: %s\n",
			ms.engine->name, r->first_error[0] ? r->first_error : uv_strerror(rc));
		stop_run(&ms);
	} else if (r->nactive == 0) {
		on_all_done(r);	/* every stream failed as it started */
	}
	uv_run(r->loop, UV_RUN_DEFAULT);
	wall_s = (double)(clock_mono_ns() - t_start) / 1e9;
	ms.engine->cleanup(r);
	uv_run(r->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(r->loop))
		fprintf(stderr, "streamclient: the event loop closed with handles open\n");
	if (rc) {
		free_run(r);
		return 3;
	}
	getrusage(RUSAGE_SELF, &ru);
	schedule_figures(r);
	samples_sort(&r->lateness);
	samples_sort(&r->jitter);
	samples_sort(&r->gaps);
	samples_sort(&r->read_gaps);
	samples_sort(&r->ttft);
	report(&o, r, wall_s, &ru);
	rc = r->ncompleted == r->nstreams ? 0 : 1;
	if (o.events_csv) {
		int werr = write_events(o.events_csv, &events, t_start);

		if (werr) {
			fprintf(stderr, "streamclient: cannot write %s: %s\n", o.events_csv,
				strerror(-werr));
			rc = 3;
		}
	}
	free_run(r);
	return rc;
}
