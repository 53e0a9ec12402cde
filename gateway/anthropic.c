/*
 * anthropic: OpenAI chat completions to and from Anthropic Messages. The
 * request is rebuilt as a cJSON tree and printed. The answer, on every
 * plain request, is read as written with the span readers of
 * common/json_scan.h, no tree built; each stream event is read with cJSON
 * for its shape and with the byte scanners for its texts. Either way a
 * text holding \u0000 comes through whole, re-escaped with
 * json_escape_chars.
 * docs/dialects.md has the mapping, field by field.
 */
#define _GNU_SOURCE	/* memmem */
#include "gateway/anthropic.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/json_scan.h"
#include "gateway/tokens.h"

/* The largest max_tokens written: every whole number up to it is a double exactly. */
#define MAX_WHOLE 9007199254740992.0

/* Longest client-given name (a role, a part type) quoted in a refusal. */
#define NAME_MAX_QUOTED 64

/* ---- shared ---- */

/* Whether v is there and not null. */
static bool given(const cJSON *v)
{
	return v && !cJSON_IsNull(v);
}

/* The count under key in usage: 0 for one absent, not a number, not positive, or past 1e15. */
static int64_t tokens(const cJSON *usage, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);

	if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < TOKENS_MAX)
		return (int64_t)v->valuedouble;
	return 0;
}

/* Anthropic's input token counts: uncached, written to the cache, read from it. */
static const char *const input_keys[3] = {
	"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
};

/* The OpenAI finish_reason of a stop_reason's text (unknown ones: "stop"). */
static const char *finish_text(const char *stop_reason)
{
	static const struct {
		const char *anth;
		const char *openai;
	} map[] = {
		{ "end_turn", "stop" },
		{ "stop_sequence", "stop" },
		{ "pause_turn", "stop" },
		{ "max_tokens", "length" },
		{ "model_context_window_exceeded", "length" },
		{ "tool_use", "tool_calls" },
		{ "refusal", "content_filter" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(stop_reason, map[i].anth) == 0)
			return map[i].openai;
	}
	return "stop";
}

/* The OpenAI finish_reason of a parsed stop_reason (null, not a string: "stop"). */
static const char *finish_of(const cJSON *stop_reason)
{
	return cJSON_IsString(stop_reason) ? finish_text(stop_reason->valuestring) : "stop";
}

/*
 * Parses len bytes of s, copied into text first (json_parse_whole wants a
 * NUL after them, which a caller's bytes need not have). NULL when they
 * are not one JSON value, or on -ENOMEM (*rc says which).
 */
static cJSON *parse_copy(const char *s, size_t len, struct buf *text, int *rc)
{
	*rc = buf_append(text, s, len) ? -ENOMEM : 0;
	if (*rc)
		return NULL;
	return json_parse_whole(text->data, text->len);
}

/*
 * Appends the text of the string member key of the object as written at
 * [a, e) of s, escaped for inside a JSON string: decoded whole (a \u0000
 * too) and re-escaped. Returns 0, -EINVAL when there is not exactly one
 * such member or it does not decode, or -ENOMEM; *empty says whether the
 * text was "".
 */
static int put_text_member(const char *s, size_t a, size_t e, const char *key, struct buf *out,
			   bool *empty)
{
	struct buf t = { 0 };
	size_t ta = 0;
	size_t te = 0;
	int rc = json_member_span(s + a, e - a, key, &ta, &te);

	if (rc)
		return -EINVAL;
	rc = json_unescape(&t, s + a + ta, te - ta);
	*empty = t.len == 0;
	if (!rc && t.len)
		rc = json_escape_chars(out, t.data, t.len) ? -ENOMEM : 0;
	buf_free(&t);
	return rc;
}

/*
 * Whether the JSON text s may hold an escaped NUL, the one text cJSON's
 * valuestring cannot carry whole (it ends there). Without one, a text is
 * taken from cJSON's parse and escaped; with one, it is read as written.
 */
static bool may_hold_nul(const char *s, size_t len)
{
	return memmem(s, len, "\\u0000", 6) != NULL;
}

/*
 * Whether obj has exactly one member key: cJSON keeps every duplicate and
 * finds the first, where the as-written reading refuses a second, so the
 * parsed reading refuses one too.
 */
static bool one_member(const cJSON *obj, const char *key)
{
	const cJSON *c;
	int n = 0;

	for (c = obj ? obj->child : NULL; c; c = c->next)
		n += c->string && strcmp(c->string, key) == 0;
	return n == 1;
}

/*
 * Appends a text member's value v (a parsed string) escaped, or with
 * as_written the member key as written at [a, e) of s (put_text_member).
 * Returns as put_text_member does.
 */
static int put_text(const cJSON *v, bool as_written, const char *s, size_t a, size_t e,
		    const char *key, struct buf *out, bool *empty)
{
	size_t n;

	if (as_written)
		return put_text_member(s, a, e, key, out, empty);
	n = strlen(v->valuestring);
	*empty = n == 0;
	return n && json_escape_chars(out, v->valuestring, n) ? -ENOMEM : 0;
}

/* ---- the request ---- */

/* Fills why (a sentence, param) and returns -EINVAL. */
static int refuse(struct anth_refusal *why, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct anth_refusal *why, const char *param, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->message, sizeof(why->message), fmt, ap);
	va_end(ap);
	why->param = param;
	return -EINVAL;
}

/* A client-given name cut to quote in a refusal: valid UTF-8, at most 64 bytes of it. */
struct quoted {
	char s[NAME_MAX_QUOTED * 4 + 1];
};

static struct quoted quote(const char *s)
{
	struct quoted q;

	json_copy_cut(q.s, sizeof(q.s), s, NAME_MAX_QUOTED);
	return q;
}

/* Appends item to the array arr, taking it over. False (item freed) when either is NULL or the add fails. */
static bool push(cJSON *arr, cJSON *item)
{
	if (!item)
		return false;
	if (!arr || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

/* Members Anthropic has no counterpart for: refused unless absent, null or false. */
static const struct {
	const char *key;
	const char *why;
} untranslated[] = {
	{ "tools", "the gateway does not translate tool use" },
	{ "tool_choice", "the gateway does not translate tool use" },
	{ "functions", "the gateway does not translate tool use" },
	{ "function_call", "the gateway does not translate tool use" },
	{ "parallel_tool_calls", "the gateway does not translate tool use" },
	{ "logprobs", "Anthropic returns no log probabilities" },
	{ "top_logprobs", "Anthropic returns no log probabilities" },
	{ "logit_bias", "Anthropic takes no logit bias" },
	{ "audio", "the gateway translates text only" },
	{ "prediction", "Anthropic takes no predicted output" },
};

/*
 * A finite number as a raw text that reads back as exactly d: a whole
 * number as an integer, others in the fewest digits that do (cJSON prints
 * 1e15 as 1e+15 and takes 15 digits that read back nearly d as enough).
 */
static cJSON *exact_number(double d)
{
	char text[40];
	int p;

	if (d > -1e17 && d < 1e17 && d == (double)(long long)d) {
		snprintf(text, sizeof(text), "%lld", (long long)d);
		return cJSON_CreateRaw(text);
	}
	for (p = 15; p <= 17; p++) {
		snprintf(text, sizeof(text), "%.*g", p, d);
		if (strtod(text, NULL) == d)
			break;
	}
	return cJSON_CreateRaw(text);
}

/* A copy of v (its numbers finite) with every number an exact_number; NULL on -ENOMEM. */
static cJSON *copy_exact(const cJSON *v)
{
	const cJSON *e;
	cJSON *c;
	bool ok = true;

	if (cJSON_IsNumber(v))
		return exact_number(v->valuedouble);
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return cJSON_Duplicate(v, false);
	c = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
	cJSON_ArrayForEach(e, v) {
		ok = cJSON_IsArray(v) ? push(c, copy_exact(e)) : json_put(c, e->string, copy_exact(e));
		if (!ok)
			break;
	}
	if (!ok) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

/* Refuses the members an Anthropic target cannot take at all. */
static int check_untranslated(const cJSON *root, struct anth_refusal *why)
{
	static const char *const penalties[] = { "presence_penalty", "frequency_penalty" };
	const cJSON *v;
	const cJSON *first;
	size_t i;

	for (i = 0; i < sizeof(untranslated) / sizeof(untranslated[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(root, untranslated[i].key);
		if (given(v) && !cJSON_IsFalse(v))
			return refuse(why, untranslated[i].key,
				      "'%s' cannot be sent to an Anthropic target: %s",
				      untranslated[i].key, untranslated[i].why);
	}
	for (i = 0; i < 2; i++) {
		v = cJSON_GetObjectItemCaseSensitive(root, penalties[i]);
		if (given(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
			return refuse(why, penalties[i],
				      "'%s' other than 0 cannot be sent to an Anthropic target: "
				      "Anthropic has no such penalty", penalties[i]);
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "modalities");
	first = cJSON_GetArrayItem(v, 0);
	if (given(v) && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 &&
			  cJSON_IsString(first) && strcmp(first->valuestring, "text") == 0))
		return refuse(why, "modalities",
			      "'modalities' other than [\"text\"] cannot be sent to an Anthropic "
			      "target: the gateway translates text only");
	v = cJSON_GetObjectItemCaseSensitive(root, "n");
	if (given(v) && !(cJSON_IsNumber(v) && v->valuedouble == 1))
		return refuse(why, "n", "'n' other than 1 cannot be sent to an Anthropic target: "
			      "it gives one choice per request");
	return 0;
}

/* max_tokens: max_completion_tokens, else max_tokens, else the target's default. */
static int put_max_tokens(const cJSON *root, const struct anth_req_opts *o, cJSON *body,
			  struct anth_refusal *why)
{
	const char *key = "max_completion_tokens";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	long long n = o->max_tokens_default > 0 ? (long long)o->max_tokens_default
						: ANTH_MAX_TOKENS_DEFAULT;

	if (!given(v)) {
		key = "max_tokens";
		v = cJSON_GetObjectItemCaseSensitive(root, key);
	}
	if (given(v)) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= MAX_WHOLE) ||
		    v->valuedouble != (double)(long long)v->valuedouble)
			return refuse(why, key, "'%s' must be a whole number from 1 to 2^53 for an "
				      "Anthropic target", key);
		n = (long long)v->valuedouble;
	}
	return json_put(body, "max_tokens", exact_number((double)n)) ? 0 : -ENOMEM;
}

/*
 * The image block of an image_url part: a base64 data: URL as a base64
 * source, an http(s) URL as a url source.
 */
static int image_block(const cJSON *part, int i, int j, cJSON **block, struct anth_refusal *why)
{
	const cJSON *iu = cJSON_GetObjectItemCaseSensitive(part, "image_url");
	const char *url = json_get_string(iu, "url");
	const char *semi = NULL;
	cJSON *src = cJSON_CreateObject();
	char *media = NULL;
	bool ok = true;

	*block = NULL;
	if (url && strncasecmp(url, "data:", 5) == 0)
		semi = strchr(url + 5, ';');
	if (!src) {
		return -ENOMEM;
	} else if (semi && semi > url + 5 && !memchr(url + 5, ',', (size_t)(semi - url - 5)) &&
		   strncasecmp(semi, ";base64,", 8) == 0) {
		media = strndup(url + 5, (size_t)(semi - url - 5));
		ok &= json_put(src, "type", cJSON_CreateString("base64"));
		ok &= json_put(src, "media_type", media ? cJSON_CreateString(media) : NULL);
		ok &= json_put(src, "data", cJSON_CreateString(semi + 8));
		free(media);
	} else if (url && (strncasecmp(url, "http://", 7) == 0 ||
			   strncasecmp(url, "https://", 8) == 0)) {
		ok &= json_put(src, "type", cJSON_CreateString("url"));
		ok &= json_put(src, "url", cJSON_CreateString(url));
	} else {
		cJSON_Delete(src);
		return refuse(why, "messages", "an image_url part needs a base64 data: URL or an "
			      "http(s) URL for an Anthropic target (messages[%d].content[%d])", i, j);
	}
	*block = cJSON_CreateObject();
	ok &= json_put(*block, "type", cJSON_CreateString("image"));
	ok &= json_put(*block, "source", src);
	if (!ok) {
		cJSON_Delete(*block);
		*block = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Appends the Anthropic block of one content part of a user or assistant message to blocks. */
static int take_part(const cJSON *part, int i, int j, cJSON *blocks, struct anth_refusal *why)
{
	const char *type = json_get_string(part, "type");
	const char *text = json_get_string(part, "text");
	cJSON *block = NULL;
	bool ok = true;
	int rc;

	if (!cJSON_IsObject(part) || !type)
		return refuse(why, "messages", "messages[%d].content[%d] is not a content part with "
			      "a string type", i, j);
	if (strcmp(type, "text") == 0) {
		if (!text)
			return refuse(why, "messages", "messages[%d].content[%d]: a text part needs "
				      "a string text", i, j);
		block = cJSON_CreateObject();
		ok &= json_put(block, "type", cJSON_CreateString("text"));
		ok &= json_put(block, "text", cJSON_CreateString(text));
		if (!ok) {
			cJSON_Delete(block);
			return -ENOMEM;
		}
	} else if (strcmp(type, "image_url") == 0) {
		rc = image_block(part, i, j, &block, why);
		if (rc)
			return rc;
	} else {
		return refuse(why, "messages", "content part type '%s' cannot be sent to an "
			      "Anthropic target (messages[%d].content[%d])", quote(type).s, i, j);
	}
	return push(blocks, block) ? 0 : -ENOMEM;
}

/* Adds a system or developer message's text to the system prompt. */
static int take_system(const cJSON *content, int i, struct buf *system, bool *has_system,
		       struct anth_refusal *why)
{
	const cJSON *part;
	const char *type;
	const char *text;
	int j = 0;
	int rc = 0;

	if (*has_system)
		rc |= buf_puts(system, "\n\n");
	*has_system = true;
	if (cJSON_IsString(content))
		return rc | buf_puts(system, content->valuestring) ? -ENOMEM : 0;
	if (!cJSON_IsArray(content))
		return refuse(why, "messages", "messages[%d]: content must be a string or an array "
			      "of parts for an Anthropic target", i);
	cJSON_ArrayForEach(part, content) {
		type = json_get_string(part, "type");
		text = json_get_string(part, "text");
		if (!type || strcmp(type, "text") != 0)
			return refuse(why, "messages", "content part type '%s' cannot be sent to an "
				      "Anthropic target in a system prompt (messages[%d].content[%d])",
				      type ? quote(type).s : "(none)", i, j);
		if (!text)
			return refuse(why, "messages", "messages[%d].content[%d]: a text part needs "
				      "a string text", i, j);
		rc |= buf_puts(system, text);
		j++;
	}
	return rc ? -ENOMEM : 0;
}

/* Appends one user or assistant message to list, or adds a system one to system. */
static int take_message(const cJSON *m, int i, cJSON *list, struct buf *system,
			bool *has_system, struct anth_refusal *why)
{
	const char *role = json_get_string(m, "role");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
	const cJSON *part;
	cJSON *msg;
	cJSON *blocks;
	int j = 0;
	int rc;

	if (!cJSON_IsObject(m) || !role)
		return refuse(why, "messages", "messages[%d] is not a message with a string role", i);
	if (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0)
		return take_system(content, i, system, has_system, why);
	if (strcmp(role, "tool") == 0 || strcmp(role, "function") == 0)
		return refuse(why, "messages", "messages[%d]: role '%s' cannot be sent to an "
			      "Anthropic target: the gateway does not translate tool use", i, role);
	if (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)
		return refuse(why, "messages", "messages[%d]: role '%s' cannot be sent to an "
			      "Anthropic target: it takes user and assistant turns and a system "
			      "prompt", i, quote(role).s);
	if (given(cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) ||
	    given(cJSON_GetObjectItemCaseSensitive(m, "function_call")))
		return refuse(why, "messages", "messages[%d]: a message with tool calls cannot be "
			      "sent to an Anthropic target: the gateway does not translate tool use",
			      i);
	if (!cJSON_IsString(content) && !cJSON_IsArray(content))
		return refuse(why, "messages", "messages[%d]: content must be a string or an array "
			      "of parts for an Anthropic target", i);
	/* Anthropic answers an empty turn with a 400: not sent, rather than refused there. */
	if ((cJSON_IsString(content) && !content->valuestring[0]) ||
	    (cJSON_IsArray(content) && !content->child))
		return refuse(why, "messages", "messages[%d]: an empty %s turn cannot be sent to an "
			      "Anthropic target (it takes non-empty content)", i, role);
	msg = cJSON_CreateObject();
	if (!push(list, msg) || !json_put(msg, "role", cJSON_CreateString(role)))
		return -ENOMEM;
	if (cJSON_IsString(content))
		return json_put(msg, "content", cJSON_CreateString(content->valuestring)) ? 0
											  : -ENOMEM;
	blocks = cJSON_CreateArray();
	if (!json_put(msg, "content", blocks))
		return -ENOMEM;
	cJSON_ArrayForEach(part, content) {
		rc = take_part(part, i, j++, blocks, why);
		if (rc)
			return rc;
	}
	return 0;
}

/* messages: the system prompt out of them, the user and assistant turns in order. */
static int put_messages(const cJSON *root, cJSON *body, struct anth_refusal *why)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
	cJSON *list = cJSON_CreateArray();
	struct buf system = { 0 };
	bool has_system = false;
	const cJSON *m;
	int i = 0;
	int rc = 0;

	if (!list)
		return -ENOMEM;
	if (!cJSON_IsArray(msgs))
		rc = refuse(why, "messages", "'messages' must be an array of messages");
	cJSON_ArrayForEach(m, msgs) {
		if (rc)
			break;
		rc = take_message(m, i++, list, &system, &has_system, why);
	}
	if (!rc && cJSON_GetArraySize(list) == 0)
		rc = refuse(why, "messages", "'messages' hold no user or assistant message: an "
			    "Anthropic target needs one");
	if (!rc && has_system &&
	    !json_put(body, "system", cJSON_CreateString(system.data ? system.data : "")))
		rc = -ENOMEM;
	if (rc)
		cJSON_Delete(list);
	else if (!json_put(body, "messages", list))
		rc = -ENOMEM;
	buf_free(&system);
	return rc;
}

/* A number in [0, 1] (Anthropic's range for both) copied under the same key. */
static int put_unit(const cJSON *root, const char *key, cJSON *body, struct anth_refusal *why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!given(v))
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
		return refuse(why, key, "'%s' must be a number from 0 to 1 for an Anthropic "
			      "target (Anthropic's range)", key);
	return json_put(body, key, exact_number(v->valuedouble)) ? 0 : -ENOMEM;
}

/* stop → stop_sequences; stream as given; user → metadata.user_id. */
static int put_stop_stream_user(const cJSON *root, cJSON *body, struct anth_refusal *why)
{
	const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(root, "user");
	const cJSON *s;
	cJSON *seqs = NULL;
	cJSON *meta;

	if (cJSON_IsString(stop)) {
		seqs = cJSON_CreateArray();
		if (!push(seqs, cJSON_CreateString(stop->valuestring)))
			goto out_nomem;
	} else if (cJSON_IsArray(stop)) {
		cJSON_ArrayForEach(s, stop) {
			if (!cJSON_IsString(s))
				return refuse(why, "stop", "'stop' must be a string or an array of "
					      "strings");
		}
		if (cJSON_GetArraySize(stop) > 0)
			seqs = cJSON_Duplicate(stop, true);
		if (cJSON_GetArraySize(stop) > 0 && !seqs)
			return -ENOMEM;
	} else if (given(stop)) {
		return refuse(why, "stop", "'stop' must be a string or an array of strings");
	}
	if (seqs && !json_put(body, "stop_sequences", seqs))
		return -ENOMEM;
	if (cJSON_IsBool(stream) && !json_put(body, "stream", cJSON_CreateBool(cJSON_IsTrue(stream))))
		return -ENOMEM;
	if (given(stream) && !cJSON_IsBool(stream))
		return refuse(why, "stream", "'stream' must be a boolean");
	if (given(user) && !cJSON_IsString(user))
		return refuse(why, "user", "'user' must be a string");
	if (cJSON_IsString(user)) {
		meta = cJSON_CreateObject();
		if (!json_put(body, "metadata", meta) ||
		    !json_put(meta, "user_id", cJSON_CreateString(user->valuestring)))
			return -ENOMEM;
	}
	return 0;

out_nomem:
	cJSON_Delete(seqs);
	return -ENOMEM;
}

/* Whether every number in v is finite (cJSON would print the others as null). */
static bool all_finite(const cJSON *v)
{
	const cJSON *c;

	if (cJSON_IsNumber(v))
		return v->valuedouble * 0 == 0;
	cJSON_ArrayForEach(c, v) {
		if (!all_finite(c))
			return false;
	}
	return true;
}

/* response_format (the request's, else the target's add_rf) → output_config.format. */
static int put_response_format(const cJSON *root, const struct anth_req_opts *o, cJSON *body,
			       struct anth_refusal *why)
{
	const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
	const cJSON *schema = NULL;
	const char *type;
	cJSON *added = NULL;
	cJSON *config = NULL;
	cJSON *format = NULL;
	bool ok = true;
	int rc = 0;

	if (!given(rf) && o->add_rf) {
		added = json_parse_whole(o->add_rf, strlen(o->add_rf));
		if (!added)
			return refuse(why, "response_format", "the target's response_format is not "
				      "JSON");
		rf = added;
	}
	if (!given(rf))
		return 0;
	type = json_get_string(rf, "type");
	if (!cJSON_IsObject(rf) || !type) {
		rc = refuse(why, "response_format", "'response_format' must be an object with a "
			    "string type");
		goto out;
	}
	if (strcmp(type, "text") == 0)
		goto out;
	if (strcmp(type, "json_schema") == 0) {
		schema = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(rf, "json_schema"), "schema");
		if (!cJSON_IsObject(schema)) {
			rc = refuse(why, "response_format", "response_format json_schema needs "
				    "json_schema.schema, a JSON Schema object, for an Anthropic "
				    "target");
			goto out;
		}
		if (!all_finite(schema)) {
			rc = refuse(why, "response_format", "response_format's schema holds a "
				    "number too large to write");
			goto out;
		}
	} else if (strcmp(type, "json_object") != 0) {
		rc = refuse(why, "response_format", "response_format type '%s' cannot be sent to "
			    "an Anthropic target", quote(type).s);
		goto out;
	}
	config = cJSON_CreateObject();
	format = cJSON_CreateObject();
	ok &= json_put(body, "output_config", config);
	ok &= json_put(config, "format", format);
	ok &= json_put(format, "type", cJSON_CreateString("json_schema"));
	if (schema) {
		ok &= json_put(format, "schema", copy_exact(schema));
	} else {
		cJSON *obj = cJSON_CreateObject();

		ok &= json_put(format, "schema", obj);
		ok &= json_put(obj, "type", cJSON_CreateString("object"));
	}
	rc = ok ? 0 : -ENOMEM;
out:
	cJSON_Delete(added);
	return rc;
}

int anth_request(const cJSON *root, const struct anth_req_opts *o, struct buf *out,
		 struct anth_refusal *why)
{
	const char *model = o->model ? o->model : json_get_string(root, "model");
	cJSON *body = cJSON_CreateObject();
	char *text = NULL;
	int rc;

	why->message[0] = '\0';
	why->param = NULL;
	if (!body)
		return -ENOMEM;
	rc = json_put(body, "model", cJSON_CreateString(model ? model : "")) ? 0 : -ENOMEM;
	if (!rc)
		rc = check_untranslated(root, why);
	if (!rc)
		rc = put_max_tokens(root, o, body, why);
	if (!rc)
		rc = put_messages(root, body, why);
	if (!rc)
		rc = put_unit(root, "temperature", body, why);
	if (!rc)
		rc = put_unit(root, "top_p", body, why);
	if (!rc)
		rc = put_stop_stream_user(root, body, why);
	if (!rc)
		rc = put_response_format(root, o, body, why);
	if (!rc) {
		text = cJSON_PrintUnformatted(body);
		rc = text && !buf_puts(out, text) ? 0 : -ENOMEM;
	}
	cJSON_free(text);
	cJSON_Delete(body);
	return rc;
}

/* ---- the answer and errors ---- */

/*
 * The text of the string v as cJSON's valuestring reads it (up to a
 * \u0000), unescaped into t (emptied first): its length, or -1 when v is
 * not a string (*rc untouched) or when it does not decode or memory runs
 * out (*rc then -EINVAL or -ENOMEM).
 */
static long cjson_text(struct json_span v, struct buf *t, int *rc)
{
	buf_reset(t);
	if (json_type_of(v) != JSON_STRING)
		return -1;
	*rc = json_unescape(t, v.p, v.len);
	if (*rc)
		return -1;
	return (long)strnlen(t->data ? t->data : "", t->len);
}

/*
 * Appends the texts of the text blocks of the array content, joined and
 * escaped, each decoded whole (a \u0000 too) and re-escaped; t is scratch.
 * A block that is not an object, or whose type is not "text", gives
 * nothing; a text block whose text is not one string member is -EINVAL.
 */
static int put_texts(struct json_span content, struct buf *out, struct buf *t)
{
	enum { TYPE, TEXT, N };
	struct json_member m[N] = { [TYPE] = { "type", { NULL, 0 }, 0 },
				    [TEXT] = { "text", { NULL, 0 }, 0 } };
	size_t at = 0;
	int rc = 0;
	long n;

	while (json_next_members(content, &at, m, N)) {
		n = cjson_text(m[TYPE].v, t, &rc);
		if (rc)
			return rc;
		if (n != 4 || memcmp(t->data, "text", 4) != 0)
			continue;
		if (m[TEXT].count != 1 || json_type_of(m[TEXT].v) != JSON_STRING)
			return -EINVAL;
		buf_reset(t);
		rc = json_unescape(t, m[TEXT].v.p, m[TEXT].v.len);
		if (rc)
			return rc;
		if (t->len && json_escape_chars(out, t->data, t->len))
			return -ENOMEM;
	}
	return 0;
}

/* Appends the string v's text as cJSON reads it, escaped ("" for one that is not a string). */
static int put_cjson_text(struct json_span v, struct buf *out, struct buf *t)
{
	int rc = 0;
	long n = cjson_text(v, t, &rc);

	if (rc)
		return rc;
	if (buf_puts(out, "\"") || (n > 0 && json_escape_chars(out, t->data, (size_t)n)) ||
	    buf_puts(out, "\""))
		return -ENOMEM;
	return 0;
}

/* The OpenAI finish_reason of a stop_reason as written (see finish_of). */
static const char *finish_of_span(struct json_span v, struct buf *t, int *rc)
{
	long n = cjson_text(v, t, rc);

	return n <= 0 ? "stop" : finish_text(t->data);	/* "" maps to "stop" too */
}

/*
 * The answer is read as written (json_check and the span readers of
 * common/json_scan.h), not parsed into a tree: it is on every plain
 * request to an Anthropic target. Which member counts when one repeats,
 * and what a text reads as, are cJSON's, as the rest of the file has them.
 */
int anth_response(const char *body, size_t len, long long created_s, struct buf *out,
		  int64_t *usage_out)
{
	enum { TYPE, ID, MODEL, CONTENT, USAGE, STOP, N };
	struct json_member m[N] = {
		[TYPE] = { "type", { NULL, 0 }, 0 },
		[ID] = { "id", { NULL, 0 }, 0 },
		[MODEL] = { "model", { NULL, 0 }, 0 },
		[CONTENT] = { "content", { NULL, 0 }, 0 },
		[USAGE] = { "usage", { NULL, 0 }, 0 },
		[STOP] = { "stop_reason", { NULL, 0 }, 0 },
	};
	struct json_member u[4] = {
		{ "input_tokens", { NULL, 0 }, 0 },
		{ "cache_creation_input_tokens", { NULL, 0 }, 0 },
		{ "cache_read_input_tokens", { NULL, 0 }, 0 },
		{ "output_tokens", { NULL, 0 }, 0 },
	};
	struct buf t = { 0 };
	const char *finish;
	int64_t in = 0;
	int64_t tout;
	int rc = 0;
	long n;
	size_t i;

	if (json_check_members(body, len, NULL, m, N))
		return -EINVAL;
	n = cjson_text(m[TYPE].v, &t, &rc);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (n != 7 || memcmp(t.data, "message", 7) != 0 ||
	    json_type_of(m[CONTENT].v) != JSON_ARRAY || m[CONTENT].count != 1)
		goto out;
	json_members(m[USAGE].v, u, 4);
	for (i = 0; i < 3; i++)
		in += token_count(u[i].v);
	tout = token_count(u[3].v);
	rc = 0;
	finish = finish_of_span(m[STOP].v, &t, &rc);
	if (rc)
		goto out;
	if (buf_puts(out, "{\"id\":"))
		goto nomem;
	rc = put_cjson_text(m[ID].v, out, &t);
	if (!rc && (buf_puts(out, ",\"object\":\"chat.completion\",\"created\":") ||
		    buf_put_int(out, created_s) || buf_puts(out, ",\"model\":")))
		goto nomem;
	if (!rc)
		rc = put_cjson_text(m[MODEL].v, out, &t);
	if (!rc && buf_puts(out, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
			      "\"content\":\""))
		goto nomem;
	if (!rc)
		rc = put_texts(m[CONTENT].v, out, &t);
	if (rc)
		goto out;
	if (buf_puts(out, "\"},\"finish_reason\":\"") || buf_puts(out, finish) ||
	    buf_puts(out, "\"}],\"usage\":{\"prompt_tokens\":") || buf_put_int(out, in) ||
	    buf_puts(out, ",\"completion_tokens\":") || buf_put_int(out, tout) ||
	    buf_puts(out, ",\"total_tokens\":") || buf_put_int(out, in + tout) ||
	    buf_puts(out, "}}"))
		goto nomem;
	if (usage_out) {
		usage_out[0] = in;
		usage_out[1] = tout;
	}
	goto out;
nomem:
	rc = -ENOMEM;
out:
	buf_free(&t);
	return rc;
}

int anth_error(const char *body, size_t len, struct buf *out)
{
	struct buf text = { 0 };
	int rc;
	cJSON *root = parse_copy(body, len, &text, &rc);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	const char *type = json_get_string(root, "type");
	const char *etype = json_get_string(err, "type");
	const char *message = json_get_string(err, "message");

	if (!rc && (!cJSON_IsObject(root) || !type || strcmp(type, "error") != 0 ||
		    !cJSON_IsObject(err) || !etype || !message))
		rc = -EINVAL;
	if (!rc)
		rc = json_openai_error(out, message, etype, NULL, NULL);
	cJSON_Delete(root);
	buf_free(&text);
	return rc;
}

/* ---- the stream ---- */

void anth_stream_init(struct anth_stream *s, bool include_usage, long long created_s)
{
	memset(s, 0, sizeof(*s));
	s->include_usage = include_usage;
	s->created_s = created_s;
}

/* Writes v into dst (size bytes) as JSON string text, cut between characters to fit. */
static int set_json_text(char *dst, size_t size, const char *v)
{
	char cut[512];
	struct buf b = { 0 };
	size_t max = size - 1;

	for (;;) {
		json_copy_cut(cut, sizeof(cut), v, max);
		buf_reset(&b);
		if (json_escape_chars(&b, cut, strlen(cut))) {
			buf_free(&b);
			return -ENOMEM;
		}
		if (b.len < size || max == 0)
			break;
		max = max * 3 / 4;
	}
	memcpy(dst, b.len < size ? b.data : "", b.len < size ? b.len + 1 : 1);
	buf_free(&b);
	return 0;
}

/* Takes what a usage object says; members it lacks keep what an earlier one said. */
static void take_usage(struct anth_stream *s, const cJSON *usage)
{
	size_t i;

	if (!cJSON_IsObject(usage))
		return;
	s->tokens_in = 0;
	/* A count that is null (MessageDeltaUsage's may be) keeps the one kept, as the SDK does. */
	for (i = 0; i < 3; i++) {
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(usage, input_keys[i])))
			s->input[i] = tokens(usage, input_keys[i]);
		s->tokens_in += s->input[i];
	}
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(usage, "output_tokens")))
		s->tokens_out = tokens(usage, "output_tokens");
	s->has_usage = true;
}

/* Appends "data: {" and the members every chunk of the stream shares. */
static int chunk_head(const struct anth_stream *s, struct buf *out)
{
	int rc = 0;

	rc |= buf_puts(out, "data: {\"id\":\"");
	rc |= buf_puts(out, s->id);
	rc |= buf_puts(out, "\",\"object\":\"chat.completion.chunk\",\"created\":");
	rc |= buf_put_int(out, s->created_s);
	rc |= buf_puts(out, ",\"model\":\"");
	rc |= buf_puts(out, s->model);
	rc |= buf_puts(out, "\",");
	return rc;
}

/* Appends the finish chunk. */
static int finish_chunk(struct anth_stream *s, const char *finish, struct buf *out)
{
	int rc = chunk_head(s, out);

	snprintf(s->finish, sizeof(s->finish), "%s", finish);
	s->finished = true;
	rc |= buf_puts(out, "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"");
	rc |= buf_puts(out, s->finish);
	rc |= buf_puts(out, "\"}]}\n\n");
	return rc;
}

/* message_start: the stream's id, model and first usage kept; the role chunk. */
static int on_message_start(struct anth_stream *s, const cJSON *root, struct buf *out)
{
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
	const char *id = json_get_string(msg, "id");
	const char *model = json_get_string(msg, "model");
	int rc;

	if (s->started || !cJSON_IsObject(msg))
		return ANTH_EV_INVALID;
	rc = set_json_text(s->id, sizeof(s->id), id ? id : "");
	if (!rc)
		rc = set_json_text(s->model, sizeof(s->model), model ? model : "");
	if (rc)
		return rc;
	take_usage(s, cJSON_GetObjectItemCaseSensitive(msg, "usage"));
	s->started = true;
	rc = chunk_head(s, out);
	rc |= buf_puts(out, "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		       "\"content\":\"\"},\"finish_reason\":null}]}\n\n");
	return rc ? -ENOMEM : ANTH_EV_CHUNK;
}

/* A content_block_delta: a text_delta's text as a chunk; the other deltas are nothing. */
static int on_block_delta(struct anth_stream *s, const cJSON *root, const struct buf *text,
			  struct buf *out, struct anth_ev_facts *f)
{
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(root, "delta");
	const char *type = json_get_string(delta, "type");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(delta, "text");
	bool as_written = may_hold_nul(text->data, text->len);
	size_t mark = out->len;
	size_t a = 0;
	size_t e = 0;
	bool empty = true;
	int rc;

	if (!type)
		return ANTH_EV_INVALID;
	if (strcmp(type, "text_delta") != 0)
		return ANTH_EV_NONE;
	if (!cJSON_IsString(v) || !one_member(root, "delta") || !one_member(delta, "text") ||
	    (as_written && json_member_span(text->data, text->len, "delta", &a, &e)))
		return ANTH_EV_INVALID;
	rc = chunk_head(s, out);
	rc |= buf_puts(out, "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
	if (rc)
		return -ENOMEM;
	rc = put_text(v, as_written, text->data, a, e, "text", out, &empty);
	if (rc == -EINVAL || (!rc && empty)) {
		out->len = mark;
		if (out->data)
			out->data[mark] = '\0';
		return rc ? ANTH_EV_INVALID : ANTH_EV_NONE;
	}
	if (rc || buf_puts(out, "\"},\"finish_reason\":null}]}\n\n"))
		return -ENOMEM;
	f->text = f->commit = true;
	return ANTH_EV_CHUNK;
}

/* message_delta: its usage kept; the finish chunk, once. */
static int on_message_delta(struct anth_stream *s, const cJSON *root, struct buf *out,
			    struct anth_ev_facts *f)
{
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(root, "delta");

	if (!cJSON_IsObject(delta))
		return ANTH_EV_INVALID;
	take_usage(s, cJSON_GetObjectItemCaseSensitive(root, "usage"));
	if (s->finished)
		return ANTH_EV_NONE;
	f->commit = true;
	if (finish_chunk(s, finish_of(cJSON_GetObjectItemCaseSensitive(delta, "stop_reason")),
			 out))
		return -ENOMEM;
	return ANTH_EV_CHUNK;
}

/* message_stop: the finish chunk if none went out, the usage chunk if asked for, [DONE]. */
static int on_message_stop(struct anth_stream *s, struct buf *out, struct anth_ev_facts *f)
{
	int rc = 0;

	f->commit = true;
	if (!s->finished)
		rc |= finish_chunk(s, "stop", out);
	if (s->include_usage) {
		rc |= chunk_head(s, out);
		rc |= buf_printf(out, "\"choices\":[],\"usage\":{\"prompt_tokens\":%lld,"
				 "\"completion_tokens\":%lld,\"total_tokens\":%lld}}\n\n",
				 (long long)s->tokens_in, (long long)s->tokens_out,
				 (long long)(s->tokens_in + s->tokens_out));
	}
	rc |= buf_puts(out, "data: [DONE]\n\n");
	s->stopped = true;
	return rc ? -ENOMEM : ANTH_EV_DONE;
}

/* The error event's message (its data itself when that is not JSON), as relay.c takes it. */
static void take_error(struct anth_ev_facts *f, const cJSON *root, const char *data)
{
	json_copy_cut(f->message, sizeof(f->message), json_error_text(root, data),
		      sizeof(f->message) - 1);
}

/* Events that only come inside a message: before message_start, the stream is not Anthropic's. */
static bool in_message(const char *type)
{
	return strcmp(type, "content_block_start") == 0 ||
	       strcmp(type, "content_block_delta") == 0 ||
	       strcmp(type, "content_block_stop") == 0 || strcmp(type, "message_delta") == 0 ||
	       strcmp(type, "message_stop") == 0;
}

int anth_stream_event(struct anth_stream *s, const char *event, const char *data, size_t len,
		      struct buf *out, struct anth_ev_facts *f)
{
	struct buf text = { 0 };
	int rc;
	cJSON *root = parse_copy(data, len, &text, &rc);
	const char *type = json_get_string(root, "type");

	memset(f, 0, sizeof(*f));
	if (!event || strcmp(event, "message") == 0)
		event = "";
	if (rc)
		goto out;
	if (strcmp(event, "error") == 0 || (type && strcmp(type, "error") == 0)) {
		take_error(f, root, text.data);
		rc = ANTH_EV_ERROR;
	} else if (!cJSON_IsObject(root) || !type || (event[0] && strcmp(event, type) != 0)) {
		rc = ANTH_EV_INVALID;
	} else if (s->stopped) {
		rc = ANTH_EV_NONE;
	} else if (strcmp(type, "message_start") == 0) {
		rc = on_message_start(s, root, out);
	} else if (!in_message(type)) {
		rc = ANTH_EV_NONE;	/* ping, and types Anthropic may add */
	} else if (!s->started) {
		rc = ANTH_EV_INVALID;
	} else if (strcmp(type, "content_block_delta") == 0) {
		rc = on_block_delta(s, root, &text, out, f);
	} else if (strcmp(type, "message_delta") == 0) {
		rc = on_message_delta(s, root, out, f);
	} else if (strcmp(type, "message_stop") == 0) {
		rc = on_message_stop(s, out, f);
	} else {
		rc = ANTH_EV_NONE;	/* content_block_start, content_block_stop */
	}
out:
	cJSON_Delete(root);
	buf_free(&text);
	return rc;
}
