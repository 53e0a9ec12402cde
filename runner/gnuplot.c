/*
 * gnuplot: one plot script run into a PNG — a gnuplot child on a private
 * libuv loop with a timeout, its PNG written to PATH.tmp and committed
 * only when whole; see gnuplot.h.
 */
#include "runner/gnuplot.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "common/cfg.h"
#include "common/recfile.h"
#include "common/records.h"
#include "runner/proc.h"

/* Lines of gnuplot's output an error message quotes. */
#define TAIL_LINES 3

/* One render's inputs and its error. */
struct gp_job {
	const char *data_dir;
	const char *scripts_dir;
	const char *vars;	/* more gnuplot assignments, or NULL */
	char *err;		/* CFG_ERR_LEN bytes */
	bool write_failed;	/* err is about a file that could not be written */
};

static int errorf(struct gp_job *j, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int errorf(struct gp_job *j, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->err, CFG_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

void gnuplot_quote(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_puts(b, "''");
		else if ((unsigned char)*s < 0x20)
			buf_puts(b, " ");
		else
			buf_append(b, s, 1);
	}
	buf_puts(b, "'");
}

void gnuplot_num(struct buf *b, double v)
{
	if (isfinite(v))
		buf_printf(b, "%.10g", v);
	else
		buf_puts(b, "NaN");
}

void gnuplot_dat_str(struct buf *b, const char *s)
{
	buf_puts(b, "\"");
	for (; *s; s++) {
		if (*s == '"')
			buf_puts(b, "'");
		else if ((unsigned char)*s < 0x20)
			buf_puts(b, " ");
		else
			buf_append(b, s, 1);
	}
	buf_puts(b, "\"");
}

void gnuplot_meta_num(struct buf *meta, const char *name, double v)
{
	buf_printf(meta, "%s = ", name);
	gnuplot_num(meta, v);
	buf_puts(meta, "\n");
}

void gnuplot_meta_str(struct buf *meta, const char *name, const char *v)
{
	buf_printf(meta, "%s = ", name);
	gnuplot_quote(meta, v);
	buf_puts(meta, "\n");
}

struct gp_run {
	struct proc p;
	uv_timer_t timer;
	bool exited;
	bool timed_out;
	int closing;
};

static void on_gp_exit(struct proc *p)
{
	struct gp_run *g = (struct gp_run *)p;

	g->exited = true;
	uv_timer_stop(&g->timer);
}

static void on_gp_timeout(uv_timer_t *t)
{
	struct gp_run *g = t->data;

	g->timed_out = true;
	proc_signal(&g->p, SIGKILL);
}

/* Appends a path to b as a gnuplot single-quoted string assignment. */
static void gp_assign(struct buf *b, const char *name, const char *value)
{
	buf_printf(b, "%s = ", name);
	gnuplot_quote(b, value);
	buf_puts(b, "; ");
}

/* Runs gnuplot -e VARS script; 0 when it exited 0, else an error naming the script. */
static int run_gnuplot(struct gp_job *j, const char *script, const char *out, const char *log)
{
	struct gp_run g = { 0 };
	struct buf vars = { 0 };
	struct buf tail = { 0 };
	uv_loop_t loop;
	const char *argv[5];
	char how[64];
	int rc;

	gp_assign(&vars, "datadir", j->data_dir);
	gp_assign(&vars, "plotsdir", j->scripts_dir);
	gp_assign(&vars, "outfile", out);
	if (j->vars)
		buf_puts(&vars, j->vars);
	if (!vars.data)
		return errorf(j, -ENOMEM, "out of memory");
	argv[0] = "gnuplot";
	argv[1] = "-e";
	argv[2] = vars.data;
	argv[3] = script;
	argv[4] = NULL;
	unlink(log);
	rc = uv_loop_init(&loop);
	if (rc) {
		buf_free(&vars);
		return errorf(j, rc, "cannot start a loop: %s", uv_strerror(rc));
	}
	g.p.on_exit = on_gp_exit;
	rc = proc_start(&g.p, &loop, "gnuplot", argv, log);
	if (rc == -ENOENT)
		errorf(j, rc, "gnuplot: not found on PATH (install gnuplot, e.g. gnuplot-nox)");
	else if (rc)
		errorf(j, rc, "gnuplot: cannot start it for %s: %s", script, strerror(-rc));
	if (!rc) {
		uv_timer_init(&loop, &g.timer);
		g.timer.data = &g;
		uv_timer_start(&g.timer, on_gp_timeout, GNUPLOT_TIMEOUT_MS, 0);
		uv_run(&loop, UV_RUN_DEFAULT);	/* until gnuplot exits (the timer stops then) */
		uv_close((uv_handle_t *)&g.timer, NULL);
	}
	proc_close(&g.p, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	buf_free(&vars);
	if (rc)
		return rc;
	if (g.timed_out)
		return errorf(j, -ETIMEDOUT, "%s: gnuplot took longer than %d s and was killed",
			      script, GNUPLOT_TIMEOUT_MS / 1000);
	if (g.p.log_err) {
		j->write_failed = true;
		return errorf(j, g.p.log_err, "cannot write %s: %s", log, strerror(-g.p.log_err));
	}
	if (g.p.exit_status == 0 && !g.p.term_signal)
		return 0;
	if (g.p.term_signal == SIGXFSZ) {
		j->write_failed = true;
		return errorf(j, -EFBIG, "cannot write %s: gnuplot was killed by SIGXFSZ (a file "
			      "size limit)", out);
	}
	proc_describe_exit(&g.p, how, sizeof(how));
	proc_stderr_tail(&g.p, TAIL_LINES, &tail);
	/* One line: gnuplot's message rows joined. */
	for (size_t i = 0; i < tail.len; i++) {
		if (tail.data[i] == '\n')
			tail.data[i] = (i + 1 == tail.len) ? '\0' : ' ';
	}
	errorf(j, -EIO, "%s: gnuplot %s: %s", script, how,
	       tail.data && *tail.data ? tail.data : "(no output)");
	buf_free(&tail);
	return -EIO;
}

/*
 * Whether the file at path ends as a whole PNG does: with its IEND chunk
 * (gnuplot may exit 0 having written part of one to a full disk).
 */
static bool png_whole(const char *path)
{
	static const unsigned char iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D',
						0xae, 0x42, 0x60, 0x82 };
	unsigned char end[12];
	FILE *fp = fopen(path, "rb");
	bool whole;

	if (!fp)
		return false;
	whole = fseek(fp, -(long)sizeof(end), SEEK_END) == 0 &&
		fread(end, 1, sizeof(end), fp) == sizeof(end) && memcmp(end, iend, sizeof(end)) == 0;
	fclose(fp);
	return whole;
}

int gnuplot_render(const char *script, const char *png, const char *log, const char *data_dir,
		   const char *scripts_dir, char *err, bool *write_failed)
{
	return gnuplot_render_vars(script, png, log, data_dir, scripts_dir, NULL, err,
				   write_failed);
}

int gnuplot_render_vars(const char *script, const char *png, const char *log, const char *data_dir,
			const char *scripts_dir, const char *vars, char *err, bool *write_failed)
{
	struct gp_job job = { .data_dir = data_dir, .scripts_dir = scripts_dir, .vars = vars,
			      .err = err };
	struct gp_job *j = &job;
	struct buf tmp = { 0 };
	struct stat st;
	int rc;

	*write_failed = false;
	if (buf_printf(&tmp, "%s" REC_TMP_SUFFIX, png))
		return errorf(j, -ENOMEM, "out of memory");
	if (stat(script, &st)) {
		rc = errorf(j, -errno, "%s: %s", script, strerror(errno));
		goto out;
	}
	unlink(tmp.data);
	rc = run_gnuplot(j, script, tmp.data, log);
	if (!rc && (stat(tmp.data, &st) || st.st_size == 0))
		rc = errorf(j, -EIO, "%s: gnuplot wrote no %s", script, tmp.data);
	if (!rc && !png_whole(tmp.data)) {
		j->write_failed = true;
		rc = errorf(j, -EIO, "cannot write %s: gnuplot wrote part of it (a full disk?)",
			    tmp.data);
	}
	if (!rc) {
		rc = recfile_commit_tmp(png);	/* synced and renamed, as every result file is */
		if (rc)
			errorf(j, rc, "cannot rename %s to %s: %s", tmp.data, png, strerror(-rc));
	}
	if (rc) {
		/* A PNG that could not be written whole is kept, as every such file is. */
		if (!j->write_failed)
			unlink(tmp.data);
		goto out;
	}
	unlink(log);
out:
	*write_failed = j->write_failed;
	buf_free(&tmp);
	return rc;
}
