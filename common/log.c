/*
 * log: leveled lines on stderr.
 */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_prog = "faultline";
static enum log_level log_level = LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

void log_init(const char *prog, enum log_level level)
{
	log_prog = prog;
	log_level = level;
}

void log_set_level(enum log_level level)
{
	log_level = level;
}

int log_parse_level(const char *s, enum log_level *out)
{
	int i;

	for (i = LOG_DEBUG; i <= LOG_OFF; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool log_enabled(enum log_level level)
{
	return level >= log_level && level != LOG_OFF;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (!log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_prog,
		     level_names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fprintf per line keeps lines whole when processes share stderr. */
	fprintf(stderr, "%s\n", line);
}

bool log_limit_pass(struct log_limit *l, uint64_t now_ns, uint64_t interval_ns, uint64_t *quiet)
{
	if (l->last_ns && now_ns - l->last_ns < interval_ns) {
		l->quiet++;
		return false;
	}
	*quiet = l->quiet;
	l->quiet = 0;
	l->last_ns = now_ns ? now_ns : 1;
	return true;
}
