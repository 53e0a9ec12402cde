/*
 * opt: value parsers shared by command lines and config files.
 */
#include "common/opt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int parse_number(const char *s, double *out, const char **rest)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	*out = v;
	*rest = end;
	return 0;
}

int opt_parse_duration_ms(const char *s, double *out_ms)
{
	static const struct { const char *unit; double ms; } units[] = {
		{ "us", 0.001 }, { "ms", 1 }, { "s", 1000 }, { "", 1000 },
		{ "m", 60000 }, { "h", 3600000 },
	};
	const char *rest;
	double v;
	size_t i;

	if (parse_number(s, &v, &rest) || v < 0)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(rest, units[i].unit) == 0) {
			*out_ms = v * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

int opt_parse_rate(const char *s, double *out_per_s)
{
	const char *rest;
	double v;
	double per = 1;

	if (parse_number(s, &v, &rest) || v <= 0)
		return -EINVAL;
	if (strcmp(rest, "") == 0 || strcmp(rest, "/s") == 0)
		per = 1;
	else if (strcmp(rest, "/m") == 0)
		per = 60;
	else if (strcmp(rest, "/h") == 0)
		per = 3600;
	else
		return -EINVAL;
	*out_per_s = v / per;
	return 0;
}

int opt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int opt_parse_double(const char *s, double min, double max, double *out)
{
	const char *rest;
	double v;

	if (parse_number(s, &v, &rest) || *rest || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int opt_parse_hostport(const char *s, struct sockaddr_storage *out)
{
	char host[64];
	const char *colon;
	const char *port_s;
	int64_t port;
	size_t hlen;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hlen = (size_t)(close - s - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		port_s = close + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			snprintf(host, sizeof(host), "127.0.0.1");
			port_s = s;
		} else {
			hlen = (size_t)(colon - s);
			if (hlen >= sizeof(host))
				return -EINVAL;
			memcpy(host, s, hlen);
			host[hlen] = '\0';
			if (hlen == 0 || strcmp(host, "localhost") == 0)
				snprintf(host, sizeof(host), "127.0.0.1");
			port_s = colon + 1;
		}
	}
	if (opt_parse_i64(port_s, 0, 65535, &port))
		return -EINVAL;
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;

		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)out;

		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
	}
	return 0;
}

char *opt_format_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &a6->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%d", host, ntohs(a6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &a4->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%d", host, ntohs(a4->sin_port));
	} else {
		snprintf(out, len, "?");
	}
	return out;
}

int opt_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return -1;
}

bool opt_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;

		return IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
	}
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;

		return (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

void opt_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see %s --help)\n", prog);
	exit(2);
}

int opt_raise_fd_limit(long long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return -errno;
	}
	return (long long)rl.rlim_cur < need ? -EMFILE : 0;
}

int opt_next(const char *prog, int argc, char **argv, const char *shorts,
	     const struct option *longopts, const char **arg)
{
	char optstring[64];
	int c;

	opterr = 0;	/* our one-line errors, not getopt's */
	/* A leading ':' makes a missing value ':' rather than '?'. */
	snprintf(optstring, sizeof(optstring), ":%s", shorts ? shorts : "");
	c = getopt_long(argc, argv, optstring, longopts, NULL);
	*arg = optarg;
	if (c == ':')
		opt_usage_error(prog, "%s: needs a value", argv[optind - 1]);
	if (c == '?')
		opt_usage_error(prog, "unknown option \"%s\"", argv[optind - 1]);
	if (c == -1 && optind < argc)
		opt_usage_error(prog, "unexpected argument \"%s\"", argv[optind]);
	return c;
}
