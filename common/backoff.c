/*
 * backoff: capped exponential backoff with full jitter, and Retry-After
 * (delta-seconds or an IMF-fixdate) parsed by hand so that neither the
 * locale nor the process time zone can change the answer.
 */
#include "common/backoff.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* 2^2048 overflows a double, so larger retry numbers change nothing. */
#define BACKOFF_MAX_DOUBLINGS 2048

/* RFC 9110 §5.1: a delta-seconds too large to hold is taken as 2^31. */
#define RETRY_AFTER_MAX_S 2147483648.0

/* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define IMF_FIXDATE_LEN 29

double backoff_delay_ms(const struct backoff *b, unsigned retry, struct rng *r)
{
	double u = rng_uniform(r);
	int doublings = retry > BACKOFF_MAX_DOUBLINGS ? BACKOFF_MAX_DOUBLINGS : (int)retry;
	double ceiling = ldexp(b->base_ms, doublings);

	if (!(ceiling <= b->cap_ms))
		ceiling = b->cap_ms;
	if (!(ceiling > 0 && ceiling <= DBL_MAX))
		return 0;
	return u * ceiling;
}

double backoff_delay_after_ms(const struct backoff *b, unsigned retry,
			      double retry_after_ms, struct rng *r)
{
	double jittered = backoff_delay_ms(b, retry, r);

	if (retry_after_ms >= 0 && retry_after_ms <= b->cap_ms)
		return retry_after_ms > jittered ? retry_after_ms : jittered;
	return jittered;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Reads exactly n decimal digits at s into *out; false if any is not one. */
static bool read_digits(const char *s, int n, int *out)
{
	int v = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* The index of the three-letter name at s in names, or -1. */
static int find_name(const char *s, const char *const *names, int count)
{
	int i;

	for (i = 0; i < count; i++)
		if (memcmp(s, names[i], 3) == 0)
			return i;
	return -1;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (m 1..12). */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era;
	int yoe;
	int doy;
	int doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (int)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * Parses an IMF-fixdate, the one HTTP-date form servers send, into
 * milliseconds since the epoch. s has exactly IMF_FIXDATE_LEN characters.
 */
static bool parse_imf_fixdate(const char *s, int64_t *unix_ms)
{
	static const char *const days[] = {
		"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun",
	};
	static const char *const months[] = {
		"Jan", "Feb", "Mar", "Apr", "May", "Jun",
		"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
	};
	static const int month_days[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
	};
	int day;
	int month;
	int year;
	int hour;
	int minute;
	int second;
	int last_day;

	if (find_name(s, days, 7) < 0 || memcmp(s + 3, ", ", 2) != 0)
		return false;
	if (!read_digits(s + 5, 2, &day) || s[7] != ' ')
		return false;
	month = find_name(s + 8, months, 12);
	if (month < 0 || s[11] != ' ')
		return false;
	if (!read_digits(s + 12, 4, &year) || s[16] != ' ')
		return false;
	if (!read_digits(s + 17, 2, &hour) || s[19] != ':' ||
	    !read_digits(s + 20, 2, &minute) || s[22] != ':' ||
	    !read_digits(s + 23, 2, &second) || memcmp(s + 25, " GMT", 4) != 0)
		return false;

	last_day = month_days[month] + (month == 1 && is_leap(year));
	/* Second 60 is a leap second; it counts as the next second. */
	if (day < 1 || day > last_day || hour > 23 || minute > 59 || second > 60)
		return false;
	*unix_ms = ((days_from_civil(year, month + 1, day) * 24 + hour) * 60 +
		    minute) * 60 + second;
	*unix_ms *= 1000;
	return true;
}

/*
 * Parses delta-seconds, 1*DIGIT with an optional "." 1*DIGIT fraction, over
 * exactly n characters, into milliseconds.
 */
static bool parse_delta_seconds(const char *s, size_t n, double *ms)
{
	double whole = 0;
	double frac = 0;
	double scale = 1;
	size_t i = 0;

	if (n == 0 || !is_digit(s[0]))
		return false;
	for (; i < n && is_digit(s[i]); i++)
		if (whole < RETRY_AFTER_MAX_S)
			whole = whole * 10 + (s[i] - '0');
	if (i < n) {
		if (s[i] != '.' || i + 1 == n)
			return false;
		for (i++; i < n; i++) {
			if (!is_digit(s[i]))
				return false;
			/* Digits past the 15th are below anything a timer sees. */
			if (scale < 1e15) {
				frac = frac * 10 + (s[i] - '0');
				scale *= 10;
			}
		}
	}
	if (whole >= RETRY_AFTER_MAX_S) {
		*ms = RETRY_AFTER_MAX_S * 1000;
		return true;
	}
	*ms = whole * 1000 + frac * 1000 / scale;
	return true;
}

double backoff_parse_retry_after(const char *value, int64_t now_unix_ms)
{
	size_t len;
	double ms;
	int64_t date_ms;

	if (!value)
		return -1;
	while (is_ows(*value))
		value++;
	len = strlen(value);
	while (len > 0 && is_ows(value[len - 1]))
		len--;

	if (parse_delta_seconds(value, len, &ms))
		return ms;
	if (len == IMF_FIXDATE_LEN && parse_imf_fixdate(value, &date_ms)) {
		/* In double, so no now_unix_ms can overflow the subtraction. */
		ms = (double)date_ms - (double)now_unix_ms;
		return ms > 0 ? ms : 0;
	}
	return -1;
}
