/*
 * log: leveled log lines on stderr, each stamped with the wall-clock time and
 * the program's name. One process-wide level, set once from --log-level.
 */
#ifndef FAULTLINE_LOG_H
#define FAULTLINE_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

/* Sets the program name printed on every line. */
void log_init(const char *prog, enum log_level level);

/* Sets the level; lines below it are dropped. */
void log_set_level(enum log_level level);

/* Parses "debug", "info", "warn", "error" or "off". Returns 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *out);

/* True when a line at this level would be printed. */
bool log_enabled(enum log_level level);

/* Prints one line (a newline is added). */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A line logged at most once per interval, the occurrences in between
 * counted rather than printed: a flood of events must not become a flood
 * of lines. Zero-initialised, it lets the first line through.
 */
struct log_limit {
	uint64_t last_ns;	/* when a line last went out; 0: never */
	uint64_t quiet;		/* occurrences held back since */
};

/*
 * Whether an occurrence at now_ns may be logged (none went out in the last
 * interval_ns). When it may, *quiet gets how many were held back since the
 * line before (0 when none) and the count starts again; when not, it is
 * counted. Pure: the caller passes the time.
 */
bool log_limit_pass(struct log_limit *l, uint64_t now_ns, uint64_t interval_ns, uint64_t *quiet);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
