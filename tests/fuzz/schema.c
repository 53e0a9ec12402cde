/*
 * fuzz: the output-contract checker on what a client controls — a JSON
 * Schema (its request's response_format) and an upstream's content. The
 * input is a schema, a NUL byte, then a content text: the schema is
 * compiled, and when it compiles the content is checked. Neither may
 * crash, loop past the checker's step bound or read out of bounds; a
 * refusal must say why.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t slen = nul ? (size_t)(nul - data) : size;
	size_t clen = nul ? size - slen - 1 : 0;
	char *schema_text = malloc(slen + 1);
	char *content = malloc(clen + 1);
	char why[256];
	cJSON *root;
	struct schema *s;

	if (!schema_text || !content)
		goto out;
	memcpy(schema_text, data, slen);
	schema_text[slen] = '\0';
	memcpy(content, nul ? nul + 1 : data, clen);
	content[clen] = '\0';
	root = cJSON_ParseWithLength(schema_text, slen);
	if (!root)
		goto out;
	why[0] = '\0';
	s = schema_compile(root, why, sizeof(why));
	cJSON_Delete(root);
	if (!s) {
		if (!why[0]) {
			fprintf(stderr, "schema_compile refused without a reason\n");
			abort();
		}
		goto out;
	}
	why[0] = '\0';
	if (!schema_check_text(s, content, clen, why, sizeof(why)) && !why[0]) {
		fprintf(stderr, "schema_check_text failed without a reason\n");
		abort();
	}
	(void)schema_check_text(NULL, content, clen, why, sizeof(why));
	schema_free(s);
out:
	free(schema_text);
	free(content);
	return 0;
}
