/*
 * hubmsg: the messages between a workers gateway's supervisor (the hub)
 * and its workers, one format owned here. Each goes over the worker's
 * Unix socket as a frame: a 4-byte big-endian length, then that many
 * bytes — a type byte and the fields, each a 4-byte big-endian length and
 * its bytes (numbers are written as decimal text). Pure: encoding and
 * decoding, no I/O. docs/design.md lists the types and who sends each.
 */
#ifndef FAULTLINE_GATEWAY_HUBMSG_H
#define FAULTLINE_GATEWAY_HUBMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

/* No frame is longer (a /metrics text of every worker fits many times over). */
#define HUBMSG_MAX_BYTES (64u << 20)
/* No frame has more fields (a gather's answer: 2 per worker, 64 workers, and 2 more). */
#define HUBMSG_MAX_FIELDS 160

enum hubmsg_type {
	/* worker → hub */
	HUB_READY = 1,		/* (): serving; the hub may count it */
	HUB_PUT,		/* (key, value, ttl_ms): store it and tell the other workers */
	HUB_GET,		/* (id, key): the value stored, answered by HUB_VALUE */
	HUB_LOCK,		/* (id, key, owner, ttl_ms): take the lock if free; HUB_LOCKED */
	HUB_UNLOCK,		/* (key, owner): give it back, if owner holds it */
	HUB_EXTEND,		/* (key, owner, ttl_ms): keep it longer, if owner holds it */
	HUB_GATHER,		/* (id, view): every worker's view, answered by HUB_GATHERED */
	HUB_VIEWED,		/* (gid, text): this worker's view for gather gid */
	/* hub → worker */
	HUB_MESSAGE,		/* (value): another worker's HUB_PUT */
	HUB_VALUE,		/* (id, found "1"/"0", value) */
	HUB_LOCKED,		/* (id, won "1"/"0") */
	HUB_VIEW,		/* (gid, view): render the view for a gather */
	HUB_GATHERED,		/* (id, supervisor's text, then worker number and text, each) */
	/* either way: a worker's to the hub, which hands it to every other worker */
	HUB_HEALTH,		/* (provider, ok, healthy, slow, fails, passes): a check's verdict */
	HUB_BUDGET,		/* (deposits, takes, per route…): budget use since the last */
	HUB_NTYPES
};

/* One field: a view into a frame (not NUL-terminated). */
struct hubmsg_field {
	const char *data;
	size_t len;
};

struct hubmsg {
	enum hubmsg_type type;
	size_t nfields;
	struct hubmsg_field f[HUBMSG_MAX_FIELDS];
};

/* The type's name, for log lines ("put", "gathered"…); "?" when unknown. */
const char *hubmsg_type_name(enum hubmsg_type t);

/*
 * Appends the frame of type with fields f[0..n) to out. Returns 0, or
 * -EMSGSIZE when it would pass HUBMSG_MAX_BYTES or HUBMSG_MAX_FIELDS,
 * -ENOMEM.
 */
int hubmsg_encode(struct buf *out, enum hubmsg_type type, size_t n,
		  const struct hubmsg_field *f);

/* A field of a NUL-terminated string. */
struct hubmsg_field hubmsg_str(const char *s);

/*
 * Reads the frame at the front of data (len bytes): fills m, its fields
 * pointing into data. Returns the frame's bytes (> 0), 0 when data holds
 * less than a whole frame, or -EBADMSG when it is not one (a length past
 * HUBMSG_MAX_BYTES, an unknown type, a field running past the frame, too
 * many fields).
 */
ssize_t hubmsg_decode(const char *data, size_t len, struct hubmsg *m);

/* Field i of m as a whole number; false when absent or not one. */
bool hubmsg_u64(const struct hubmsg *m, size_t i, uint64_t *out);

/* Field i of m as a number; false when absent or not a finite one. */
bool hubmsg_num(const struct hubmsg *m, size_t i, double *out);

/*
 * Field i of m copied into out (cap bytes, NUL-terminated); false when
 * absent, longer than cap - 1, or holding a NUL byte.
 */
bool hubmsg_copy(const struct hubmsg *m, size_t i, char *out, size_t cap);

#endif
