/*
 * hubmsg: the frames between a workers gateway's supervisor and its
 * workers — a round trip with empty and binary fields, frames split and
 * back to back, and what is not a frame (a length past the limit, an
 * unknown type, a field running past its frame); the field readers.
 * Also respawn, the supervisor's restart back-off.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/hubmsg.h"
#include "gateway/respawn.h"

static struct hubmsg m;

Test(hubmsg, a_frame_round_trips, .timeout = 10)
{
	struct hubmsg_field f[3] = { hubmsg_str("key:p/m"), { "a\0b", 3 }, hubmsg_str("") };
	struct buf b = { 0 };
	char text[16];

	cr_assert_eq(hubmsg_encode(&b, HUB_PUT, 3, f), 0);
	/* length, type, then 3 × (length, bytes) */
	cr_assert_eq(b.len, 4 + 1 + (4 + 7) + (4 + 3) + (4 + 0));
	cr_assert_eq(hubmsg_decode(b.data, b.len, &m), (ssize_t)b.len);
	cr_assert_eq(m.type, HUB_PUT);
	cr_assert_eq(m.nfields, 3);
	cr_assert_eq(m.f[1].len, 3);
	cr_assert_eq(memcmp(m.f[1].data, "a\0b", 3), 0);
	cr_assert(hubmsg_copy(&m, 0, text, sizeof(text)));
	cr_assert_str_eq(text, "key:p/m");
	cr_assert_not(hubmsg_copy(&m, 1, text, sizeof(text)), "a NUL inside is no string");
	cr_assert(hubmsg_copy(&m, 2, text, sizeof(text)));
	cr_assert_str_eq(text, "");
	cr_assert_not(hubmsg_copy(&m, 3, text, sizeof(text)), "no field 3");
	cr_assert_str_eq(hubmsg_type_name(HUB_PUT), "put");
	buf_free(&b);
}

Test(hubmsg, frames_split_and_back_to_back, .timeout = 10)
{
	struct hubmsg_field one = hubmsg_str("1");
	struct buf b = { 0 };
	size_t first;
	size_t i;

	cr_assert_eq(hubmsg_encode(&b, HUB_READY, 0, NULL), 0);
	first = b.len;
	cr_assert_eq(hubmsg_encode(&b, HUB_LOCKED, 1, &one), 0);
	for (i = 0; i < first; i++)
		cr_assert_eq(hubmsg_decode(b.data, i, &m), 0, "%zu bytes are not a frame yet", i);
	cr_assert_eq(hubmsg_decode(b.data, b.len, &m), (ssize_t)first, "the first frame alone");
	cr_assert_eq(m.type, HUB_READY);
	cr_assert_eq(m.nfields, 0);
	cr_assert_eq(hubmsg_decode(b.data + first, b.len - first - 1, &m), 0);
	cr_assert_eq(hubmsg_decode(b.data + first, b.len - first, &m),
		     (ssize_t)(b.len - first));
	cr_assert_eq(m.type, HUB_LOCKED);
	buf_free(&b);
}

Test(hubmsg, what_is_not_a_frame, .timeout = 10)
{
	/* A length past the limit, a length of 0, an unknown type. */
	static const char huge[] = "\x7f\xff\xff\xff\x01";
	static const char empty[] = "\x00\x00\x00\x00";
	static const char unknown[] = "\x00\x00\x00\x01\x63";
	/* Type put, a field whose length says 9 in a frame of 6. */
	static const char overrun[] = "\x00\x00\x00\x06\x02\x00\x00\x00\x09z";
	/* Type put, 2 bytes left that cannot hold a field's length. */
	static const char stub[] = "\x00\x00\x00\x03\x02\x00\x00";

	cr_assert_eq(hubmsg_decode(huge, 5, &m), -EBADMSG);
	cr_assert_eq(hubmsg_decode(empty, 4, &m), -EBADMSG);
	cr_assert_eq(hubmsg_decode(unknown, 5, &m), -EBADMSG);
	cr_assert_eq(hubmsg_decode(overrun, 10, &m), -EBADMSG);
	cr_assert_eq(hubmsg_decode(stub, 7, &m), -EBADMSG);
}

Test(hubmsg, too_many_fields_are_refused, .timeout = 10)
{
	static struct hubmsg_field f[HUBMSG_MAX_FIELDS + 1];
	struct buf b = { 0 };
	size_t i;

	for (i = 0; i <= HUBMSG_MAX_FIELDS; i++)
		f[i] = hubmsg_str("x");
	cr_assert_eq(hubmsg_encode(&b, HUB_GATHERED, HUBMSG_MAX_FIELDS + 1, f), -EMSGSIZE);
	cr_assert_eq(b.len, 0, "nothing written");
	cr_assert_eq(hubmsg_encode(&b, HUB_GATHERED, HUBMSG_MAX_FIELDS, f), 0);
	cr_assert_eq(hubmsg_decode(b.data, b.len, &m), (ssize_t)b.len);
	cr_assert_eq(m.nfields, HUBMSG_MAX_FIELDS);
	buf_free(&b);
}

Test(hubmsg, numbers, .timeout = 10)
{
	struct hubmsg_field f[5] = { hubmsg_str("18446744073709551615"), hubmsg_str("-1"),
				     hubmsg_str("12x"), hubmsg_str("2500.5"), hubmsg_str("inf") };
	struct buf b = { 0 };
	uint64_t u;
	double d;

	cr_assert_eq(hubmsg_encode(&b, HUB_HEALTH, 5, f), 0);
	cr_assert_gt(hubmsg_decode(b.data, b.len, &m), 0);
	cr_assert(hubmsg_u64(&m, 0, &u));
	cr_assert_eq(u, UINT64_MAX);
	cr_assert_not(hubmsg_u64(&m, 1, &u), "no sign");
	cr_assert_not(hubmsg_u64(&m, 2, &u), "no trailing bytes");
	cr_assert(hubmsg_num(&m, 3, &d));
	cr_assert_float_eq(d, 2500.5, 1e-9);
	cr_assert_not(hubmsg_num(&m, 4, &d), "finite only");
	cr_assert_not(hubmsg_num(&m, 5, &d), "no field 5");
	buf_free(&b);
}

Test(respawn, at_once_after_a_long_life_doubling_in_a_crash_loop, .timeout = 10)
{
	struct respawn r = { 0 };
	double waits[] = { 100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000 };
	double got;
	size_t i;

	/* (The assertion macros read their arguments more than once: each call first.) */
	got = respawn_delay_ms(&r, 60000);
	cr_assert_float_eq(got, 0, 1e-9, "a crash after a minute: at once");
	for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		got = respawn_delay_ms(&r, 50);
		cr_assert_float_eq(got, waits[i], 1e-9, "death %zu in a row: %g", i, got);
	}
	/* Once a worker lives its 10 s, the count starts over. */
	got = respawn_delay_ms(&r, RESPAWN_STABLE_MS);
	cr_assert_float_eq(got, 0, 1e-9);
	got = respawn_delay_ms(&r, 9999);
	cr_assert_float_eq(got, 100, 1e-9);
}
