/*
 * fuzzfile: fuzz inputs as memory files.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzzfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char path[64];

const char *fuzzfile_put(const uint8_t *data, size_t size)
{
	size_t off = 0;
	ssize_t n;

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("fuzzfile: memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0)) {
		perror("fuzzfile: ftruncate");
		abort();
	}
	while (off < size) {
		n = pwrite(fd, data + off, size - off, (off_t)off);
		if (n <= 0) {
			perror("fuzzfile: pwrite");
			abort();
		}
		off += (size_t)n;
	}
	return path;
}
