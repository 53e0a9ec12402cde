/*
 * fuzz: the gateway's body scanner (json_member_span) against cJSON on any
 * text (tests/support/jsondiff.c): on a text json_parse_whole accepts as
 * an object, both must see the same members and values, and a value
 * spliced into a span must land where cJSON says; on any other text the
 * scan must stay inside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/jsondiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[1024];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (jsondiff_check(text, size, why, sizeof(why)) < 0) {
		fprintf(stderr, "json_member_span disagrees with cJSON: %s\n", why);
		abort();
	}
	free(text);
	return 0;
}
