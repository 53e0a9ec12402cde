/*
 * opt: parsers for the values command lines and config files share —
 * durations, rates, bounded numbers and HOST:PORT addresses — each returning
 * 0 or -EINVAL so callers can name the bad flag or key in their own words.
 */
#ifndef FAULTLINE_OPT_H
#define FAULTLINE_OPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * A duration: a number with a unit "us", "ms", "s", "m" or "h"; a bare
 * number is seconds. Stores milliseconds. Negative values are refused.
 */
int opt_parse_duration_ms(const char *s, double *out_ms);

/* A rate: "500", "500/s", "30/m" or "2/h". Stores events per second (> 0). */
int opt_parse_rate(const char *s, double *out_per_s);

/* A whole decimal number within [min, max]. */
int opt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* A finite decimal number within [min, max]. */
int opt_parse_double(const char *s, double min, double max, double *out);

/*
 * An address: "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" (the last two mean
 * 127.0.0.1). HOST is a numeric address or "localhost"; no name lookup is
 * done. Port 0 asks the kernel for a free port.
 */
int opt_parse_hostport(const char *s, struct sockaddr_storage *out);

/* Formats an address as "HOST:PORT" or "[V6]:PORT". Returns out. */
char *opt_format_addr(const struct sockaddr *sa, char *out, size_t len);

/* The port of an IPv4 or IPv6 address (host byte order). */
int opt_addr_port(const struct sockaddr *sa);

/* True when the address is in 127.0.0.0/8 or is ::1. */
bool opt_addr_is_loopback(const struct sockaddr *sa);

/*
 * The next option of a command line of long options (getopt_long), with the
 * errors every program reports alike: an unknown option, a missing value or
 * a stray argument ends the program with status 2 (opt_usage_error). Returns
 * the option's val with its value in *arg (NULL when it takes none), or -1
 * when the command line is done. shorts (may be NULL) are the short options
 * in getopt's form ("H:"), each returning its letter.
 */
int opt_next(const char *prog, int argc, char **argv, const char *shorts,
	     const struct option *longopts, const char **arg);

/*
 * Reports a bad command line the way every program does — "PROG: message"
 * and "(see PROG --help)" on stderr — and exits with status 2.
 */
void opt_usage_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/*
 * Raises the process's soft limit on open files to its hard limit, so it
 * can hold many sockets. Returns 0 when at least `need` descriptors are
 * allowed then, -EMFILE when fewer, or -errno.
 */
int opt_raise_fd_limit(long long need);

#endif
