/*
 * fuzz: the chaos runner's scenario loader (scenario_load) on any file, at
 * time scale 1 and, for a file it takes, at 0.2 too (the scaled check is
 * another path). A file it refuses must come with a message; one it takes
 * is freed again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/scenario.h"
#include "common/cfg.h"
#include "tests/fuzz/fuzzfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads at scale; returns whether it was taken. */
static int load(const char *path, double scale)
{
	struct scenario sc;
	char err[CFG_ERR_LEN];
	int rc;

	memset(err, 0x5a, sizeof(err));
	rc = scenario_load(path, scale, &sc, err);
	if (rc) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0]) {
			fprintf(stderr, "scenario_load: %d with no message\n", rc);
			abort();
		}
		return 0;
	}
	scenario_free(&sc);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzzfile_put(data, size);

	if (load(path, 1))
		load(path, 0.2);
	return 0;
}
