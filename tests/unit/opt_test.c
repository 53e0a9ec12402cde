/*
 * opt: durations, rates, bounded numbers and HOST:PORT addresses, and the
 * strings they must refuse.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "common/opt.h"

static double duration(const char *s)
{
	double ms = -12345;

	cr_assert_eq(opt_parse_duration_ms(s, &ms), 0, "\"%s\" refused", s);
	return ms;
}

static double rate(const char *s)
{
	double r = -12345;

	cr_assert_eq(opt_parse_rate(s, &r), 0, "\"%s\" refused", s);
	return r;
}

static const char *fmt_hostport(const char *s, char *out, size_t len)
{
	struct sockaddr_storage ss;

	cr_assert_eq(opt_parse_hostport(s, &ss), 0, "\"%s\" refused", s);
	return opt_format_addr((struct sockaddr *)&ss, out, len);
}

Test(opt, duration_units, .timeout = 10)
{
	cr_assert_float_eq(duration("250ms"), 250, 1e-9);
	cr_assert_float_eq(duration("2s"), 2000, 1e-9);
	cr_assert_float_eq(duration("1.5m"), 90000, 1e-9);
	cr_assert_float_eq(duration("100us"), 0.1, 1e-12);
	cr_assert_float_eq(duration("2h"), 7200000, 1e-9);
	cr_assert_float_eq(duration("0ms"), 0, 1e-12);
}

Test(opt, duration_bare_number_is_seconds, .timeout = 10)
{
	cr_assert_float_eq(duration("3"), 3000, 1e-9);
	cr_assert_float_eq(duration("0.25"), 250, 1e-9);
}

Test(opt, duration_refusals, .timeout = 10)
{
	static const char *const bad[] = {
		"-1s", "2x", "", "ms", "s", "1 s", "2sec", "nan", "inf", "1e999s",
	};
	double ms = 777;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(opt_parse_duration_ms(bad[i], &ms), -EINVAL,
			     "\"%s\" accepted as %g ms", bad[i], ms);
	cr_assert_eq(opt_parse_duration_ms(NULL, &ms), -EINVAL);
	cr_assert_float_eq(ms, 777, 0, "out written on a refusal");
}

Test(opt, rate_units, .timeout = 10)
{
	cr_assert_float_eq(rate("500"), 500, 1e-9);
	cr_assert_float_eq(rate("500/s"), 500, 1e-9);
	cr_assert_float_eq(rate("30/m"), 0.5, 1e-12);
	cr_assert_float_eq(rate("7200/h"), 2, 1e-12);
	cr_assert_float_eq(rate("0.5"), 0.5, 1e-12);
}

Test(opt, rate_refusals, .timeout = 10)
{
	static const char *const bad[] = { "0", "-3", "0/s", "", "5/x", "5/", "/s", "5 /s" };
	double r = 777;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(opt_parse_rate(bad[i], &r), -EINVAL,
			     "\"%s\" accepted as %g/s", bad[i], r);
	cr_assert_float_eq(r, 777, 0);
}

Test(opt, i64_bounds, .timeout = 10)
{
	int64_t v = -1;

	cr_assert_eq(opt_parse_i64("0", 0, 10, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(opt_parse_i64("10", 0, 10, &v), 0);
	cr_assert_eq(v, 10);
	cr_assert_eq(opt_parse_i64("-5", -5, 5, &v), 0);
	cr_assert_eq(v, -5);
	cr_assert_eq(opt_parse_i64("9223372036854775807", 0, INT64_MAX, &v), 0);
	cr_assert_eq(v, INT64_MAX);
	v = 42;
	cr_assert_eq(opt_parse_i64("11", 0, 10, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64("-1", 0, 10, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64("9223372036854775808", 0, INT64_MAX, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64("1.5", 0, 10, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64("3x", 0, 10, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64("", 0, 10, &v), -EINVAL);
	cr_assert_eq(opt_parse_i64(NULL, 0, 10, &v), -EINVAL);
	cr_assert_eq(v, 42, "out written on a refusal");
}

Test(opt, double_bounds, .timeout = 10)
{
	double v = -1;

	cr_assert_eq(opt_parse_double("0", 0, 1, &v), 0);
	cr_assert_float_eq(v, 0, 0);
	cr_assert_eq(opt_parse_double("1", 0, 1, &v), 0);
	cr_assert_float_eq(v, 1, 0);
	cr_assert_eq(opt_parse_double("0.25", 0, 1, &v), 0);
	cr_assert_float_eq(v, 0.25, 0);
	v = 9;
	cr_assert_eq(opt_parse_double("1.0001", 0, 1, &v), -EINVAL);
	cr_assert_eq(opt_parse_double("-0.1", 0, 1, &v), -EINVAL);
	cr_assert_eq(opt_parse_double("nan", 0, 1, &v), -EINVAL);
	cr_assert_eq(opt_parse_double("inf", 0, 1e308, &v), -EINVAL);
	cr_assert_eq(opt_parse_double("0.5s", 0, 1, &v), -EINVAL);
	cr_assert_eq(opt_parse_double("", 0, 1, &v), -EINVAL);
	cr_assert_float_eq(v, 9, 0);
}

Test(opt, hostport_ipv4, .timeout = 10)
{
	struct sockaddr_storage ss;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;

	cr_assert_eq(opt_parse_hostport("127.0.0.1:9001", &ss), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(ntohs(a4->sin_port), 9001);
	cr_assert_eq(ntohl(a4->sin_addr.s_addr), 0x7f000001u);
	cr_assert_eq(opt_addr_port((struct sockaddr *)&ss), 9001);
}

Test(opt, hostport_ipv6_brackets, .timeout = 10)
{
	struct sockaddr_storage ss;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;

	cr_assert_eq(opt_parse_hostport("[::1]:80", &ss), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert_eq(ntohs(a6->sin6_port), 80);
	cr_assert(IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr));
	cr_assert_eq(opt_addr_port((struct sockaddr *)&ss), 80);
}

Test(opt, hostport_defaults_to_loopback, .timeout = 10)
{
	char out[64];

	cr_assert_str_eq(fmt_hostport(":8080", out, sizeof(out)), "127.0.0.1:8080");
	cr_assert_str_eq(fmt_hostport("8080", out, sizeof(out)), "127.0.0.1:8080");
	cr_assert_str_eq(fmt_hostport("localhost:1", out, sizeof(out)), "127.0.0.1:1");
	cr_assert_str_eq(fmt_hostport("0", out, sizeof(out)), "127.0.0.1:0");
}

Test(opt, hostport_refusals, .timeout = 10)
{
	static const char *const bad[] = {
		"host:99999", "127.0.0.1:99999", "127.0.0.1:65536", "1.2.3:80",
		"[::1]80", "[::1]", "[]:80", "127.0.0.1:", "127.0.0.1:-1",
		"127.0.0.1:http", "example.com:80", "", "[::1:80",
	};
	struct sockaddr_storage ss;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(opt_parse_hostport(bad[i], &ss), -EINVAL,
			     "\"%s\" accepted", bad[i]);
	cr_assert_eq(opt_parse_hostport(NULL, &ss), -EINVAL);
}

Test(opt, format_addr_round_trips, .timeout = 10)
{
	static const char *const addrs[] = {
		"127.0.0.1:9001", "[::1]:80", "10.1.2.3:65535", "0.0.0.0:0",
		"[2001:db8::5]:443",
	};
	char out[64];
	char again[64];
	size_t i;

	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		cr_assert_str_eq(fmt_hostport(addrs[i], out, sizeof(out)), addrs[i]);
		cr_assert_str_eq(fmt_hostport(out, again, sizeof(again)), addrs[i]);
	}
}

Test(opt, addr_is_loopback, .timeout = 10)
{
	static const struct { const char *addr; int loopback; } cases[] = {
		{ "127.0.0.1:1", 1 }, { "127.255.0.9:1", 1 }, { "[::1]:1", 1 },
		{ "128.0.0.1:1", 0 }, { "10.0.0.1:1", 0 }, { "0.0.0.0:1", 0 },
		{ "[::]:1", 0 }, { "[::2]:1", 0 }, { "1.0.0.127:1", 0 },
	};
	struct sockaddr_storage ss;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(opt_parse_hostport(cases[i].addr, &ss), 0);
		cr_assert_eq(!!opt_addr_is_loopback((struct sockaddr *)&ss),
			     cases[i].loopback, "%s", cases[i].addr);
	}
}

static const struct option next_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "verbose", no_argument, NULL, 'v' },
	{ NULL, 0, NULL, 0 },
};

Test(opt, next_walks_long_options, .timeout = 10)
{
	char *argv[] = { "prog", "--verbose", "--config", "a.json", "--config=b.json", NULL };
	const char *val;

	optind = 0;	/* GNU: start afresh */
	cr_assert_eq(opt_next("prog", 5, argv, NULL, next_opts, &val), 'v');
	cr_assert_null(val);
	cr_assert_eq(opt_next("prog", 5, argv, NULL, next_opts, &val), 'c');
	cr_assert_str_eq(val, "a.json");
	cr_assert_eq(opt_next("prog", 5, argv, NULL, next_opts, &val), 'c');
	cr_assert_str_eq(val, "b.json");
	cr_assert_eq(opt_next("prog", 5, argv, NULL, next_opts, &val), -1);
}

Test(opt, next_takes_short_options_given, .timeout = 10)
{
	static const struct option opts[] = {
		{ "header", required_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	char *argv[] = { "prog", "-H", "a: b", "-Hc: d", "--header", "e: f", NULL };
	const char *val;

	optind = 0;
	cr_assert_eq(opt_next("prog", 6, argv, "H:", opts, &val), 'H');
	cr_assert_str_eq(val, "a: b");
	cr_assert_eq(opt_next("prog", 6, argv, "H:", opts, &val), 'H');
	cr_assert_str_eq(val, "c: d");
	cr_assert_eq(opt_next("prog", 6, argv, "H:", opts, &val), 'H');
	cr_assert_str_eq(val, "e: f");
	cr_assert_eq(opt_next("prog", 6, argv, "H:", opts, &val), -1);
}

/* A short form not given in shorts is unknown, though its long option exists. */
Test(opt, next_short_not_given_is_unknown, .timeout = 10, .exit_code = 2,
     .init = cr_redirect_stderr)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	char *argv[] = { "prog", "-v", NULL };
	const char *val;

	optind = 0;
	while (opt_next("prog", 2, argv, NULL, opts, &val) != -1)
		;
}

/* Each bad command line ends the program with status 2 (and a message). */
static void next_all(int argc, char **argv)
{
	const char *val;

	optind = 0;
	while (opt_next("prog", argc, argv, NULL, next_opts, &val) != -1)
		;
}

Test(opt, next_unknown_option_exits_2, .timeout = 10, .exit_code = 2, .init = cr_redirect_stderr)
{
	char *argv[] = { "prog", "--bogus", NULL };

	next_all(2, argv);
}

Test(opt, next_unknown_short_option_exits_2, .timeout = 10, .exit_code = 2, .init = cr_redirect_stderr)
{
	char *argv[] = { "prog", "-x", NULL };

	next_all(2, argv);
}

Test(opt, next_missing_value_exits_2, .timeout = 10, .exit_code = 2, .init = cr_redirect_stderr)
{
	char *argv[] = { "prog", "--config", NULL };

	next_all(2, argv);
}

Test(opt, next_stray_argument_exits_2, .timeout = 10, .exit_code = 2, .init = cr_redirect_stderr)
{
	char *argv[] = { "prog", "--verbose", "stray", NULL };

	next_all(3, argv);
}
