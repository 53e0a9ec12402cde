/*
 * schema_path: the schema checker's JSON pointers (built on the way down,
 * cut when long), its messages (cut as UTF-8) and its type names.
 */
#include "gateway/schema_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* A message before it is cut into the caller's buffer. */
#define MSG_LEN 512

/* The names of the T_* bits, bit i named by type_names[i]. */
static const char *const type_names[] = {
	"null", "boolean", "object", "array", "number", "string", "integer",
};

/* ---- messages ---- */

/*
 * Formats a message and copies it into out (len bytes), cut before a UTF-8
 * sequence rather than inside one, any byte that is not UTF-8 shown as \xNN.
 */
void schema__vmessage(char *out, size_t len, const char *fmt, va_list ap)
{
	char tmp[MSG_LEN];

	if (!out || len == 0)
		return;
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	json_copy_cut(out, len, tmp, len - 1);
}

/* schema__vmessage with the arguments in line. */
void schema__message(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	schema__vmessage(out, len, fmt, ap);
	va_end(ap);
}

/* ---- JSON pointers ---- */

/* Appends "/seg", escaped as a JSON pointer; returns the length schema__path_pop goes back to. */
size_t schema__path_push(struct path *p, const char *seg)
{
	size_t old = p->len;
	size_t need = 1;
	const char *q;

	if (p->cut) {
		p->cut++;
		return old;
	}
	for (q = seg; *q; q++)
		need += *q == '~' || *q == '/' ? 2 : 1;
	if (p->len + need > PATH_MAX_LEN) {
		memcpy(p->buf + p->len, "/...", 5);
		p->len += 4;
		p->cut = 1;
		return old;
	}
	p->buf[p->len++] = '/';
	for (q = seg; *q; q++) {
		if (*q == '~' || *q == '/') {
			p->buf[p->len++] = '~';
			p->buf[p->len++] = *q == '~' ? '0' : '1';
		} else {
			p->buf[p->len++] = *q;
		}
	}
	p->buf[p->len] = '\0';
	return old;
}

/* Appends "/i". */
size_t schema__path_push_index(struct path *p, size_t i)
{
	char seg[24];

	snprintf(seg, sizeof(seg), "%zu", i);
	return schema__path_push(p, seg);
}

/* Undoes the path_push that returned old. */
void schema__path_pop(struct path *p, size_t old)
{
	if (p->cut && --p->cut)
		return;
	p->len = old;
	p->buf[old] = '\0';
}

/* Sets p to the pointer text s as written (already escaped), cut like a push. */
void schema__path_set(struct path *p, const char *s)
{
	size_t n = strlen(s);

	p->cut = 0;
	if (n > PATH_MAX_LEN) {
		memcpy(p->buf, s, PATH_MAX_LEN);
		memcpy(p->buf + PATH_MAX_LEN, "/...", 5);
		p->len = PATH_MAX_LEN + 4;
		p->cut = 1;	/* full: later pushes only count, as after a push that did not fit */
		return;
	}
	memcpy(p->buf, s, n + 1);
	p->len = n;
}

/* A schema's pointer as messages show it. */
const char *schema__at(const struct path *p)
{
	return p->len ? p->buf : "the root";
}

/* ---- JSON values ---- */

/* Whether x is a number with no fraction. */
bool schema__is_integral(double x)
{
	return isfinite(x) && floor(x) == x;
}

/* The T_* bits a value has: a number with no fraction is also an integer. */
unsigned schema__type_bits(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return T_NULL;
	if (cJSON_IsBool(v))
		return T_BOOLEAN;
	if (cJSON_IsObject(v))
		return T_OBJECT;
	if (cJSON_IsArray(v))
		return T_ARRAY;
	if (cJSON_IsString(v))
		return T_STRING;
	if (cJSON_IsNumber(v))
		return T_NUMBER | (schema__is_integral(v->valuedouble) ? T_INTEGER : 0);
	return 0;
}

/* The name of a value's type, as messages show it. */
const char *schema__type_name(const cJSON *v)
{
	unsigned bits = schema__type_bits(v) & ~(unsigned)T_INTEGER;
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (bits == 1u << i)
			return type_names[i];
	return "an unknown value";
}

/* The T_* bit of a type name, or 0 when it names none. */
unsigned schema__type_bit(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(name, type_names[i]) == 0)
			return 1u << i;
	return 0;
}

/* The names of the types in bits, as "a" or "a" or "b" …, into out. */
const char *schema__types_text(char *out, size_t len, unsigned bits)
{
	size_t o = 0;
	size_t i;

	out[0] = '\0';
	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]) && o < len; i++)
		if (bits & (1u << i))
			o += (size_t)snprintf(out + o, len - o, "%s\"%s\"", o ? " or " : "",
					      type_names[i]);
	return out;
}

/* How many items or members v has. */
size_t schema__child_count(const cJSON *v)
{
	size_t n = 0;
	const cJSON *c;

	for (c = v->child; c; c = c->next)
		n++;
	return n;
}
