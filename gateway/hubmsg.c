/*
 * hubmsg: the supervisor's and workers' frames (hubmsg.h).
 */
#include "gateway/hubmsg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[HUB_NTYPES] = {
	[HUB_READY] = "ready",     [HUB_PUT] = "put",	      [HUB_GET] = "get",
	[HUB_LOCK] = "lock",	   [HUB_UNLOCK] = "unlock",   [HUB_EXTEND] = "extend",
	[HUB_GATHER] = "gather",   [HUB_VIEWED] = "viewed",   [HUB_MESSAGE] = "message",
	[HUB_VALUE] = "value",	   [HUB_LOCKED] = "locked",   [HUB_VIEW] = "view",
	[HUB_GATHERED] = "gathered", [HUB_HEALTH] = "health", [HUB_BUDGET] = "budget",
};

const char *hubmsg_type_name(enum hubmsg_type t)
{
	return t > 0 && t < HUB_NTYPES ? type_names[t] : "?";
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_u32(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int hubmsg_encode(struct buf *out, enum hubmsg_type type, size_t n,
		  const struct hubmsg_field *f)
{
	unsigned char head[5];
	unsigned char len[4];
	size_t body = 1;
	size_t i;
	int rc;

	if (n > HUBMSG_MAX_FIELDS)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (f[i].len > HUBMSG_MAX_BYTES || body + 4 + f[i].len > HUBMSG_MAX_BYTES)
			return -EMSGSIZE;
		body += 4 + f[i].len;
	}
	put_u32(head, (uint32_t)body);
	head[4] = (unsigned char)type;
	rc = buf_reserve(out, 4 + body);
	if (rc)
		return -ENOMEM;
	buf_append(out, head, sizeof(head));
	for (i = 0; i < n; i++) {
		put_u32(len, (uint32_t)f[i].len);
		buf_append(out, len, sizeof(len));
		buf_append(out, f[i].data, f[i].len);
	}
	return 0;
}

struct hubmsg_field hubmsg_str(const char *s)
{
	return (struct hubmsg_field){ s, strlen(s) };
}

ssize_t hubmsg_decode(const char *data, size_t len, struct hubmsg *m)
{
	size_t body;
	size_t pos;

	m->nfields = 0;
	if (len < 4)
		return 0;
	body = get_u32(data);
	if (body < 1 || body > HUBMSG_MAX_BYTES)
		return -EBADMSG;
	if (len - 4 < body)
		return 0;
	m->type = (enum hubmsg_type)(unsigned char)data[4];
	if (m->type < 1 || m->type >= HUB_NTYPES)
		return -EBADMSG;
	for (pos = 5; pos < 4 + body;) {
		size_t flen;

		if (4 + body - pos < 4 || m->nfields == HUBMSG_MAX_FIELDS)
			return -EBADMSG;
		flen = get_u32(data + pos);
		pos += 4;
		if (flen > 4 + body - pos)
			return -EBADMSG;
		m->f[m->nfields++] = (struct hubmsg_field){ data + pos, flen };
		pos += flen;
	}
	return (ssize_t)(4 + body);
}

bool hubmsg_copy(const struct hubmsg *m, size_t i, char *out, size_t cap)
{
	if (i >= m->nfields || m->f[i].len >= cap || memchr(m->f[i].data, '\0', m->f[i].len))
		return false;
	memcpy(out, m->f[i].data, m->f[i].len);
	out[m->f[i].len] = '\0';
	return true;
}

bool hubmsg_u64(const struct hubmsg *m, size_t i, uint64_t *out)
{
	char text[24];
	char *end;

	if (!hubmsg_copy(m, i, text, sizeof(text)) || text[0] < '0' || text[0] > '9')
		return false;
	errno = 0;
	*out = strtoull(text, &end, 10);
	return *end == '\0' && errno == 0;
}

bool hubmsg_num(const struct hubmsg *m, size_t i, double *out)
{
	char text[64];
	char *end;

	if (!hubmsg_copy(m, i, text, sizeof(text)) || !text[0])
		return false;
	*out = strtod(text, &end);
	return *end == '\0' && isfinite(*out);
}
