/*
 * sse: an incremental text/event-stream parser. Each feed is scanned with
 * memchr for line ends; lines complete within the feed are parsed where they
 * lie, and only a line cut by the end of a feed is copied aside until the
 * rest arrives.
 */
#include "common/sse.h"

#include <errno.h>
#include <string.h>

static const unsigned char utf8_bom[3] = { 0xEF, 0xBB, 0xBF };

void sse_init(struct sse_parser *p, sse_event_cb cb, void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->cb = cb;
	p->ctx = ctx;
}

/* Forgets the event being built, as after a blank line. */
static void event_clear(struct sse_parser *p)
{
	buf_reset(&p->data);
	buf_reset(&p->event);
	p->has_data = false;
	p->in_event = false;
}

/* A blank line: hands the event to the callback if it had data. */
static int dispatch(struct sse_parser *p)
{
	struct sse_event ev;
	int rc;

	if (!p->has_data) {
		event_clear(p);
		return 0;
	}
	ev.event = p->event.data ? p->event.data : "";
	ev.data = p->data.data ? p->data.data : "";
	ev.data_len = p->data.len;
	ev.id = p->id.data ? p->id.data : "";
	p->events++;
	rc = p->cb(p->ctx, &ev);
	event_clear(p);
	return rc;
}

/* Applies one field whose name and value are known. */
static int field(struct sse_parser *p, const char *name, size_t name_len,
		 const char *value, size_t value_len)
{
	int rc;

	p->in_event = true;
	if (name_len == 4 && memcmp(name, "data", 4) == 0) {
		if (p->data.len + value_len + 1 > SSE_MAX_EVENT)
			return -E2BIG;	/* an event that never ends would grow without bound */
		if (p->has_data) {
			rc = buf_append(&p->data, "\n", 1);
			if (rc)
				return rc;
		}
		p->has_data = true;
		return buf_append(&p->data, value, value_len);
	}
	if (name_len == 5 && memcmp(name, "event", 5) == 0) {
		buf_reset(&p->event);
		return buf_append(&p->event, value, value_len);
	}
	if (name_len == 2 && memcmp(name, "id", 2) == 0) {
		if (memchr(value, '\0', value_len))
			return 0;
		buf_reset(&p->id);
		return buf_append(&p->id, value, value_len);
	}
	return 0;	/* retry and unknown fields */
}

/* Interprets one line, without its line end. */
static int line(struct sse_parser *p, const char *s, size_t n)
{
	const char *colon;
	const char *value;
	size_t name_len;
	size_t value_len;

	if (n == 0)
		return dispatch(p);
	if (s[0] == ':')
		return 0;	/* comment */
	colon = memchr(s, ':', n);
	if (!colon)
		return field(p, s, n, s + n, 0);
	name_len = (size_t)(colon - s);
	value = colon + 1;
	value_len = n - name_len - 1;
	if (value_len && value[0] == ' ') {
		value++;
		value_len--;
	}
	return field(p, s, name_len, value, value_len);
}

/*
 * Skips a UTF-8 BOM at the start of the stream, which may itself arrive in
 * pieces, advancing *pos past the bytes it used. Bytes that only began to
 * look like a BOM are line content: they go to the partial line. Returns 0
 * or -ENOMEM.
 */
static int bom_skip(struct sse_parser *p, const char **pos, const char *end)
{
	while (!p->bom_checked && *pos < end) {
		if ((unsigned char)**pos != utf8_bom[p->bom_len]) {
			p->bom_checked = true;
			return buf_append(&p->line, utf8_bom, p->bom_len);
		}
		(*pos)++;
		p->bom_len++;
		if (p->bom_len == sizeof(utf8_bom))
			p->bom_checked = true;
	}
	return 0;
}

/* Next occurrence of c at or after pos, or end when there is none. */
static const char *next_of(const char *pos, const char *end, char c)
{
	const char *q = memchr(pos, c, (size_t)(end - pos));

	return q ? q : end;
}

int sse_feed(struct sse_parser *p, const char *data, size_t len)
{
	const char *pos = data;
	const char *end = data + len;
	const char *cr;		/* next CR at or after pos, or end */
	const char *lf;		/* next LF at or after pos, or end */
	const char *eol;
	const char *next;
	size_t n;
	int rc;

	if (len == 0)
		return 0;
	if (!p->bom_checked) {
		rc = bom_skip(p, &pos, end);
		if (rc)
			return rc;
	}
	if (p->last_cr && pos < end) {
		p->last_cr = false;
		if (*pos == '\n')
			pos++;
	}
	cr = next_of(pos, end, '\r');
	lf = next_of(pos, end, '\n');
	while (pos < end) {
		if (cr < pos)
			cr = next_of(pos, end, '\r');
		if (lf < pos)
			lf = next_of(pos, end, '\n');
		eol = cr < lf ? cr : lf;
		if (eol == end)
			break;
		next = eol + 1;
		if (*eol == '\r') {
			if (next == end)
				p->last_cr = true;
			else if (*next == '\n')
				next++;
		}
		n = (size_t)(eol - pos);
		if (p->line.len) {
			if (n > SSE_MAX_LINE - p->line.len)
				return -E2BIG;
			rc = buf_append(&p->line, pos, n);
			if (!rc)
				rc = line(p, p->line.data, p->line.len);
			buf_reset(&p->line);
		} else {
			if (n > SSE_MAX_LINE)
				return -E2BIG;
			rc = line(p, pos, n);
		}
		if (rc)
			return rc;
		pos = next;
	}
	n = (size_t)(end - pos);
	if (n == 0)
		return 0;
	if (n > SSE_MAX_LINE - p->line.len)
		return -E2BIG;
	return buf_append(&p->line, pos, n);
}

bool sse_pending(const struct sse_parser *p)
{
	if (!p->bom_checked && p->bom_len)
		return true;
	return p->line.len > 0 || p->in_event;
}

void sse_reset(struct sse_parser *p)
{
	buf_reset(&p->line);
	buf_reset(&p->id);
	event_clear(p);
	p->bom_checked = false;
	p->bom_len = 0;
	p->last_cr = false;
	p->events = 0;
}

void sse_free_parser(struct sse_parser *p)
{
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->event);
	buf_free(&p->id);
	sse_reset(p);
}
