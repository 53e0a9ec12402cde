/*
 * gnuplot: runs one plot script into a PNG — `gnuplot -e VARS SCRIPT` as
 * a child on a private libuv loop, killed past GNUPLOT_TIMEOUT_MS — with
 * the PNG written to PNG.tmp and committed (recfile_commit_tmp) only when
 * gnuplot exited 0 and the file ends as a whole PNG does; and gnuplot's
 * string quoting for the variables plot writes.
 */
#ifndef FAULTLINE_RUNNER_GNUPLOT_H
#define FAULTLINE_RUNNER_GNUPLOT_H

#include <stdbool.h>

#include "common/buf.h"

/* How long one gnuplot run may take before it is killed. */
#define GNUPLOT_TIMEOUT_MS 30000

/*
 * Appends s to b as a gnuplot single-quoted string ('' stands for ', control
 * characters become spaces).
 */
void gnuplot_quote(struct buf *b, const char *s);

/* Appends a number for a data file or meta.gp (%.10g), or NaN (gnuplot's "no value"). */
void gnuplot_num(struct buf *b, double v);

/* Appends s as a double-quoted data-file string: gnuplot has no escapes there (" becomes '). */
void gnuplot_dat_str(struct buf *b, const char *s);

/* Appends "NAME = NUMBER\n" to a meta.gp being built. */
void gnuplot_meta_num(struct buf *meta, const char *name, double v);

/* Appends "NAME = 'STRING'\n" to a meta.gp being built. */
void gnuplot_meta_str(struct buf *meta, const char *name, const char *v);

/*
 * Runs script with gnuplot variables datadir (data_dir), plotsdir
 * (scripts_dir) and outfile (PNG.tmp), gnuplot's output going to log
 * (removed when the PNG is made). Returns 0 with PNG in place, or a
 * negative errno with a message in err (CFG_ERR_LEN bytes): -ENOENT for a
 * missing script or gnuplot, -ETIMEDOUT past GNUPLOT_TIMEOUT_MS, -EIO for
 * a script that fails (the message ends with gnuplot's last stderr lines;
 * log is kept) or writes no PNG. *write_failed says whether the error is a
 * file that could not be written (the log, a PNG written in part): its
 * .tmp is then left; otherwise PNG.tmp is removed.
 */
int gnuplot_render(const char *script, const char *png, const char *log, const char *data_dir,
		   const char *scripts_dir, char *err, bool *write_failed);

/*
 * gnuplot_render with more variables: vars (may be NULL) is gnuplot text
 * run after datadir, plotsdir and outfile are set ("fig = 3; "), so one
 * script can draw several PNGs (the sweep's one a figure). Returns as
 * gnuplot_render.
 */
int gnuplot_render_vars(const char *script, const char *png, const char *log, const char *data_dir,
			const char *scripts_dir, const char *vars, char *err, bool *write_failed);

/* One render of gnuplot_render_all: PNG from script, gnuplot's output to log. */
struct gnuplot_task {
	const char *script;
	const char *png;
	const char *log;
	const char *vars;		/* more gnuplot assignments, or NULL */
};

/*
 * gnuplot_render_vars for n tasks sharing data_dir and scripts_dir, up to
 * `parallel` gnuplots at a time (each is one process: a machine's cores
 * draw a stamp's plots side by side). Every task is run and committed or
 * cleaned as gnuplot_render says; the return value, err and *write_failed
 * are the first failing task's, in the tasks' order (0: every PNG made).
 */
int gnuplot_render_all(const struct gnuplot_task *tasks, size_t n, const char *data_dir,
		       const char *scripts_dir, unsigned parallel, char *err, bool *write_failed);

#endif
