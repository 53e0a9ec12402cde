/*
 * harness: what the integration tests share — starting a real bin/mockprov
 * (or any program) on loopback and waiting for its "ready" line, stopping it
 * with a signal, reading its CSV logs, and making real HTTP requests with
 * libcurl while timing every chunk that arrives.
 *
 * Programs are taken from $FAULTLINE_BIN (default "bin"), so `make asan`
 * runs the same tests against the sanitizer builds.
 */
#ifndef FAULTLINE_HARNESS_H
#define FAULTLINE_HARNESS_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HARNESS_MAX_PROVIDERS 12

struct mock_proc {
	pid_t pid;
	int out_fd;			/* the child's stdout */
	int err_fd;			/* the child's stderr */
	char dir[256];			/* temp dir: config and logs */
	char config_path[300];
	int64_t t0;			/* Unix epoch ms */
	int nprov;
	char prov_name[HARNESS_MAX_PROVIDERS][64];
	char prov_addr[HARNESS_MAX_PROVIDERS][64];	/* HOST:PORT */
	char admin_addr[64];		/* "" without --admin */
};

/* How mock_start_opts starts mockprov. */
struct mock_opts {
	int64_t t0;		/* Unix epoch ms; 0: now */
	unsigned seed;		/* --seed; 0: mockprov's default (1) */
	const char *dir;	/* config and log dir to use (a restart's); NULL: a new temp dir */
	long fsize_limit;	/* > 0: the child's RLIMIT_FSIZE in bytes, with SIGXFSZ
				 * ignored, so a write past it fails with EFBIG (a full
				 * disk, as mockprov sees it); 0: no limit set */
	double listen_at_ms;	/* > 0: --listen-at, on t0's time base */
	int nice;		/* > 0: the child runs at this niceness (its timer slack grows) */
};

/*
 * Writes config_json into a new temp dir (or o->dir) and starts mockprov on
 * it with --t0 --log-dir DIR --admin 127.0.0.1:0 (and --seed), then waits
 * (up to 5 s) for its "ready" line, noting the addresses it prints. Returns
 * 0, or -1 (the child's stderr is printed).
 */
int mock_start_opts(struct mock_proc *m, const char *config_json, const struct mock_opts *o);

/* mock_start_opts with t0 (0: now) and nothing else. */
int mock_start(struct mock_proc *m, const char *config_json, int64_t t0);

/* The HOST:PORT a provider listens on, or NULL. */
const char *mock_addr(const struct mock_proc *m, const char *name);

/* Writes "http://HOST:PORT" + path for a provider into out. Returns out. */
char *mock_url(const struct mock_proc *m, const char *name, const char *path,
	       char *out, size_t len);

/*
 * Sends sig (SIGTERM) and waits up to 5 s for the exit. Returns the exit
 * status (0–255), 128+N for death by signal N, or -1 on timeout (then the
 * child is killed).
 */
int mock_stop(struct mock_proc *m, int sig);

/* Removes the temp dir. */
void mock_cleanup(struct mock_proc *m);

/* A CSV file read whole: rows[0] is the header. */
struct csv_table {
	size_t nrows;
	size_t ncols;			/* of the header */
	char ***rows;			/* rows[i][j], NUL-terminated */
	size_t *rowlen;			/* fields in row i */
};

/* Reads a CSV file (RFC 4180 quoting). Returns 0 or -1. */
int csv_read(const char *path, struct csv_table *t);

/* The index of a header column, or -1. */
int csv_col(const struct csv_table *t, const char *name);

/* Field (row, column name) or NULL. Row 1 is the first data row. */
const char *csv_get(const struct csv_table *t, size_t row, const char *col);

/* Frees the table's rows. */
void csv_free(struct csv_table *t);

/* Reads DIR/mock-NAME.csv of a stopped mockprov. Returns 0 or -1. */
int mock_log(const struct mock_proc *m, const char *name, struct csv_table *t);

/* One HTTP exchange as a client saw it. */
struct http_result {
	CURLcode code;			/* CURLE_OK or the transfer's error */
	long os_errno;			/* CURLINFO_OS_ERRNO (ECONNRESET…) */
	long status;			/* 0 when no response line arrived */
	char *headers;			/* raw response headers */
	char *body;			/* NUL-terminated */
	size_t body_len;
	double start_ms;		/* clock_mono_ns()/1e6 at the start */
	double total_ms;		/* start to end (or error) */
	size_t nchunks;			/* body deliveries from libcurl */
	double *chunk_ms;		/* arrival of each, ms after start */
	size_t *chunk_len;
	char errbuf[CURL_ERROR_SIZE];
};

struct http_opts {
	const char *method;		/* default: POST with a body, else GET */
	const char *body;
	const char *const *headers;	/* "Name: value", NULL-terminated */
	double timeout_ms;		/* whole transfer; default 5000 */
	bool fresh_connection;
};

/* Performs one request with libcurl. Returns 0 when the call was made. */
int http_do(const char *url, const struct http_opts *o, struct http_result *r);

/*
 * A header's value from a block of CRLF-terminated header lines (name
 * case-insensitive, the spaces and tabs around the value left out),
 * copied to out, or NULL when it is absent.
 */
const char *header_field(const char *block, const char *name, char *out, size_t len);

/* A response header's value (case-insensitive name) copied to out, or NULL. */
const char *http_header(const struct http_result *r, const char *name,
			char *out, size_t len);

/* Frees what http_do allocated in r. */
void http_result_free(struct http_result *r);

/*
 * Parses an SSE body into its "data:" payloads (in order). Returns the
 * number found; *events holds malloc'ed strings (free with sse_free).
 * *error_events counts "event: error" events.
 */
size_t sse_parse(const char *body, char ***events, size_t *error_events);

/* Frees what sse_parse returned. */
void sse_free(char **events, size_t n);

/* A chat completion request body. */
const char *chat_body(bool stream, char *out, size_t len);

/* Milliseconds on the monotonic clock. */
double now_ms(void);

/* Unix epoch ms now. */
int64_t unix_ms(void);

/*
 * Runs argv (argv[0] relative to $FAULTLINE_BIN when it has no slash) to
 * completion within timeout_s, capturing stderr into err. Returns the exit
 * status, or -1.
 */
int run_program(const char *const argv[], char *err, size_t errlen, double timeout_s);

/* Path of a program under $FAULTLINE_BIN. */
const char *bin_path(const char *prog, char *out, size_t len);

/*
 * Starts argv (argv[0] under $FAULTLINE_BIN when it has no slash; the list
 * NULL-terminated) with its stdout going to a new pipe whose read end is
 * left in *out_fd. Its stderr goes to another new pipe or, when tty is
 * true, to a new pseudo-terminal in raw mode (no output processing: the
 * bytes arrive as written), so that to the child stderr is a terminal;
 * either way *err_fd is the end to read it from. Returns the child's pid,
 * or -1 with nothing left open.
 */
pid_t spawn_piped(const char *const argv[], bool tty, int *out_fd, int *err_fd);

/*
 * Reads what one read(2) of *fd gives onto the end of out (cap bytes in
 * all, *used of them filled, kept NUL-terminated; once it is full the rest
 * is read and dropped). At EOF or on an error (EIO when the far side of a
 * pseudo-terminal has closed) it closes *fd and sets it to -1.
 */
void read_into(int *fd, char *out, size_t cap, size_t *used);

/*
 * A waitpid status as the tests report it: the exit status, 128+N for
 * death by signal N, else -1.
 */
int exit_status(int wstatus);

/* Writes text into a new file under dir; returns the path in out. */
char *write_file(const char *dir, const char *name, const char *text,
		 char *out, size_t len);

#endif
