/*
 * arena: cJSON parses into reused memory read the same trees as cJSON's
 * own (small, larger than the first block, not JSON at all), survive
 * resets, and leave cJSON's default allocation in place for everyone else.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "loadgen/arena.h"

static const char answer[] =
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,"
	"\"model\":\"chat\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
	"\"content\":\"hello \\u00e9 world\"},\"finish_reason\":\"stop\"}],"
	"\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":16,\"total_tokens\":32}}";

/* Parses text both ways and asserts the trees are equal. */
static void assert_same_tree(struct arena *a, const char *text, size_t len)
{
	cJSON *mine = arena_parse(a, text, len);
	cJSON *theirs = cJSON_ParseWithLength(text, len);

	cr_assert_not_null(theirs);
	cr_assert_not_null(mine);
	cr_assert(cJSON_Compare(mine, theirs, true), "the arena's tree differs from cJSON's");
	cJSON_Delete(theirs);
}

Test(arena, reads_the_tree_cjson_reads, .timeout = 10)
{
	struct arena a;
	const cJSON *usage;
	cJSON *root;
	int i;

	arena_init(&a);
	for (i = 0; i < 1000; i++) {
		assert_same_tree(&a, answer, strlen(answer));
		arena_reset(&a);
	}
	root = arena_parse(&a, answer, strlen(answer));
	usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens")->valueint, 16);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "model")->valuestring, "chat");
	arena_free(&a);
}

Test(arena, a_tree_larger_than_its_block, .timeout = 30)
{
	struct buf text = { 0 };
	struct arena a;
	int round;
	int i;

	/* About 5 MB of nodes: many chunks beyond the first block. */
	cr_assert_eq(buf_puts(&text, "{\"items\":["), 0);
	for (i = 0; i < 20000; i++)
		cr_assert_eq(buf_printf(&text, "%s{\"n\":%d,\"s\":\"item %d\"}", i ? "," : "", i, i),
			     0);
	cr_assert_eq(buf_puts(&text, "],\"big\":\""), 0);
	for (i = 0; i < 200000; i++)
		cr_assert_eq(buf_puts(&text, "x"), 0);
	cr_assert_eq(buf_puts(&text, "\"}"), 0);
	arena_init(&a);
	for (round = 0; round < 3; round++) {
		assert_same_tree(&a, text.data, text.len);
		arena_reset(&a);
		/* A small tree after a large one, from the kept block. */
		assert_same_tree(&a, answer, strlen(answer));
		arena_reset(&a);
	}
	arena_free(&a);
	buf_free(&text);
}

Test(arena, not_json_is_null_and_the_arena_goes_on, .timeout = 10)
{
	static const char *const bad[] = { "", "{", "{\"a\":}", "[1,2", "nope", "{\"a\":\"\\u12\"}" };
	struct arena a;
	size_t i;

	arena_init(&a);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_null(arena_parse(&a, bad[i], strlen(bad[i])), "\"%s\" parsed", bad[i]);
		arena_reset(&a);
	}
	assert_same_tree(&a, answer, strlen(answer));
	arena_free(&a);
}

Test(arena, cjson_allocates_as_before_outside_a_parse, .timeout = 10)
{
	struct arena a;
	cJSON *o;
	char *text;

	arena_init(&a);
	cr_assert_not_null(arena_parse(&a, answer, strlen(answer)));
	arena_free(&a);
	/* With the arena gone, a tree made now must be cJSON's own to free (ASan checks). */
	o = cJSON_CreateObject();
	cr_assert_not_null(cJSON_AddStringToObject(o, "k", "v"));
	text = cJSON_PrintUnformatted(o);
	cr_assert_str_eq(text, "{\"k\":\"v\"}");
	cJSON_free(text);
	cJSON_Delete(o);
	/* A fresh arena that never parsed frees cleanly. */
	arena_init(&a);
	arena_reset(&a);
	arena_free(&a);
}
