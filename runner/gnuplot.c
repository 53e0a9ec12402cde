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

/* One render of a batch: its job, its gnuplot child, and what came of it. */
struct gp_run {
	struct proc p;			/* first: on_gp_exit has the proc */
	uv_timer_t timer;
	struct gp_batch *batch;
	const struct gnuplot_task *t;
	struct gp_job job;
	struct buf vars;
	struct buf tmp;			/* PNG.tmp */
	int rc;				/* before the start: why it never ran */
	bool started;
	bool timed_out;
};

/* The renders of one call, up to `parallel` gnuplots at a time on a private loop. */
struct gp_batch {
	uv_loop_t loop;
	struct gp_run *runs;
	size_t n;
	size_t next;			/* the next to start */
	size_t running;
	unsigned parallel;
};

static void gp_start_next(struct gp_batch *b);

static void on_gp_exit(struct proc *p)
{
	struct gp_run *g = (struct gp_run *)p;

	uv_timer_stop(&g->timer);
	g->batch->running--;
	gp_start_next(g->batch);
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

/* Starts gnuplot -e VARS script for g (its files made ready first); g->rc says when it cannot. */
static void gp_start(struct gp_run *g)
{
	struct gp_job *j = &g->job;
	const struct gnuplot_task *t = g->t;
	const char *argv[5];
	struct stat st;
	int rc;

	if (buf_printf(&g->tmp, "%s" REC_TMP_SUFFIX, t->png)) {
		g->rc = errorf(j, -ENOMEM, "out of memory");
		return;
	}
	if (stat(t->script, &st)) {
		g->rc = errorf(j, -errno, "%s: %s", t->script, strerror(errno));
		return;
	}
	unlink(g->tmp.data);
	gp_assign(&g->vars, "datadir", j->data_dir);
	gp_assign(&g->vars, "plotsdir", j->scripts_dir);
	gp_assign(&g->vars, "outfile", g->tmp.data);
	if (t->vars)
		buf_puts(&g->vars, t->vars);
	if (!g->vars.data) {
		g->rc = errorf(j, -ENOMEM, "out of memory");
		return;
	}
	argv[0] = "gnuplot";
	argv[1] = "-e";
	argv[2] = g->vars.data;
	argv[3] = t->script;
	argv[4] = NULL;
	unlink(t->log);
	g->p.on_exit = on_gp_exit;
	rc = proc_start(&g->p, &g->batch->loop, "gnuplot", argv, t->log);
	if (rc == -ENOENT)
		g->rc = errorf(j, rc, "gnuplot: not found on PATH (install gnuplot, e.g. gnuplot-nox)");
	else if (rc)
		g->rc = errorf(j, rc, "gnuplot: cannot start it for %s: %s", t->script,
			       strerror(-rc));
	if (rc)
		return;
	g->started = true;
	g->batch->running++;
	uv_timer_init(&g->batch->loop, &g->timer);
	g->timer.data = g;
	uv_timer_start(&g->timer, on_gp_timeout, GNUPLOT_TIMEOUT_MS, 0);
}

/* Starts renders until `parallel` run (or none is left); one that cannot start is done at once. */
static void gp_start_next(struct gp_batch *b)
{
	while (b->running < b->parallel && b->next < b->n)
		gp_start(&b->runs[b->next++]);
}

/* What came of g's gnuplot, once it has exited: 0, or an error naming the script. */
static int gp_exit_result(struct gp_run *g)
{
	struct gp_job *j = &g->job;
	const char *script = g->t->script;
	struct buf tail = { 0 };
	char how[64];

	if (g->timed_out)
		return errorf(j, -ETIMEDOUT, "%s: gnuplot took longer than %d s and was killed",
			      script, GNUPLOT_TIMEOUT_MS / 1000);
	if (g->p.log_err) {
		j->write_failed = true;
		return errorf(j, g->p.log_err, "cannot write %s: %s", g->t->log,
			      strerror(-g->p.log_err));
	}
	if (g->p.exit_status == 0 && !g->p.term_signal)
		return 0;
	if (g->p.term_signal == SIGXFSZ) {
		j->write_failed = true;
		return errorf(j, -EFBIG, "cannot write %s: gnuplot was killed by SIGXFSZ (a file "
			      "size limit)", g->tmp.data);
	}
	proc_describe_exit(&g->p, how, sizeof(how));
	proc_stderr_tail(&g->p, TAIL_LINES, &tail);
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

/* The PNG of a render whose gnuplot has run: checked whole, then committed. */
static int gp_commit(struct gp_run *g)
{
	struct gp_job *j = &g->job;
	const char *tmp = g->tmp.data;
	struct stat st;
	int rc = g->rc;

	if (!rc && g->started)
		rc = gp_exit_result(g);
	if (!rc && (stat(tmp, &st) || st.st_size == 0))
		rc = errorf(j, -EIO, "%s: gnuplot wrote no %s", g->t->script, tmp);
	if (!rc && !png_whole(tmp)) {
		j->write_failed = true;
		rc = errorf(j, -EIO, "cannot write %s: gnuplot wrote part of it (a full disk?)", tmp);
	}
	if (!rc) {
		rc = recfile_commit_tmp(g->t->png);	/* synced and renamed, as every result file is */
		if (rc)
			errorf(j, rc, "cannot rename %s to %s: %s", tmp, g->t->png, strerror(-rc));
	}
	if (rc) {
		/* A PNG that could not be written whole is kept, as every such file is. */
		if (!j->write_failed && tmp)
			unlink(tmp);
		return rc;
	}
	unlink(g->t->log);
	return 0;
}

int gnuplot_render_all(const struct gnuplot_task *tasks, size_t n, const char *data_dir,
		       const char *scripts_dir, unsigned parallel, char *err, bool *write_failed)
{
	struct gp_batch b = { .n = n, .parallel = parallel ? parallel : 1 };
	char (*errs)[CFG_ERR_LEN] = calloc(n ? n : 1, sizeof(*errs));
	size_t i;
	int first = 0;
	int rc;

	*write_failed = false;
	b.runs = calloc(n ? n : 1, sizeof(*b.runs));
	if (!b.runs || !errs) {
		free(b.runs);
		free(errs);
		snprintf(err, CFG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = uv_loop_init(&b.loop);
	if (rc) {
		free(b.runs);
		free(errs);
		snprintf(err, CFG_ERR_LEN, "cannot start a loop: %s", uv_strerror(rc));
		return rc;
	}
	for (i = 0; i < n; i++) {
		b.runs[i].batch = &b;
		b.runs[i].t = &tasks[i];
		b.runs[i].job = (struct gp_job){ .data_dir = data_dir, .scripts_dir = scripts_dir,
						 .err = errs[i] };
	}
	gp_start_next(&b);
	uv_run(&b.loop, UV_RUN_DEFAULT);	/* until every gnuplot has exited */
	for (i = 0; i < n; i++) {
		if (b.runs[i].started) {
			uv_close((uv_handle_t *)&b.runs[i].timer, NULL);
			proc_close(&b.runs[i].p, NULL);
		}
	}
	uv_run(&b.loop, UV_RUN_DEFAULT);
	uv_loop_close(&b.loop);
	/* In the tasks' order: the first failure is the one reported. */
	for (i = 0; i < n; i++) {
		rc = gp_commit(&b.runs[i]);
		if (rc && !first) {
			first = rc;
			snprintf(err, CFG_ERR_LEN, "%s", errs[i]);
			*write_failed = b.runs[i].job.write_failed;
		}
		buf_free(&b.runs[i].vars);
		buf_free(&b.runs[i].tmp);
	}
	free(b.runs);
	free(errs);
	return first;
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
	struct gnuplot_task t = { .script = script, .png = png, .log = log, .vars = vars };

	return gnuplot_render_all(&t, 1, data_dir, scripts_dir, 1, err, write_failed);
}
