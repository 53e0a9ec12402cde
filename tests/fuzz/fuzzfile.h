/*
 * fuzzfile: a fuzz input as a file, for loaders that take a path. The
 * bytes go to a memory file (memfd), named through /proc/self/fd, so no
 * file is left on disk and none is shared between fuzzing processes.
 */
#ifndef FAULTLINE_FUZZFILE_H
#define FAULTLINE_FUZZFILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Replaces the memory file's contents with size bytes of data and returns
 * its path (static storage, the same every call). Aborts when the file
 * cannot be made or written: that is the harness failing, not the target.
 */
const char *fuzzfile_put(const uint8_t *data, size_t size);

#endif
