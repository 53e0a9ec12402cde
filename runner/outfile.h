/*
 * outfile: every file the runner writes — summaries, report.md, plot data,
 * the scenario's copy, configs, baselines — goes through here: written
 * whole to PATH.tmp, synced, closed and only then renamed to PATH, every
 * step's error checked. A file that could not be written keeps its .tmp
 * name, so a name without .tmp is always a whole file.
 */
#ifndef FAULTLINE_RUNNER_OUTFILE_H
#define FAULTLINE_RUNNER_OUTFILE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/*
 * Writes len bytes of data to PATH.tmp and renames it to PATH. Returns 0,
 * or a negative errno with a message in err (errlen bytes) naming the
 * file and the error ("cannot write R/summary.json.tmp: No space left on
 * device"); PATH.tmp is then left as far as it got and PATH untouched.
 */
int outfile_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* outfile_write of a NUL-terminated text. */
int outfile_write_text(const char *path, const char *text, char *err, size_t errlen);

/* outfile_write of root as indented JSON and a newline. */
int outfile_write_json(const char *path, const cJSON *root, char *err, size_t errlen);

#endif
