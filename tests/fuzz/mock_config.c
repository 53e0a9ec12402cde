/*
 * fuzz: mockprov's config loader (mock_config_load) on any file. A file it
 * refuses must come with a message; one it takes is freed again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mockprov/config.h"
#include "common/cfg.h"
#include "tests/fuzz/fuzzfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzzfile_put(data, size);
	struct mock_config cfg;
	char err[CFG_ERR_LEN];
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	memset(err, 0x5a, sizeof(err));
	rc = mock_config_load(path, &cfg, err);
	if (rc) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0]) {
			fprintf(stderr, "mock_config_load: %d with no message\n", rc);
			abort();
		}
		return 0;
	}
	mock_config_free(&cfg);
	return 0;
}
