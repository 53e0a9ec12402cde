/*
 * stamp: a results stamp's layout and the loading of its summary and
 * scenario; see stamp.h.
 */
#include "runner/stamp.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "common/records.h"

/* The summary's setups in order, as a cJSON child list. */
#define for_each_setup(s, st) for ((st) = (s)->setups->child; (st); (st) = (st)->next)

static int errorf(char *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int errorf(char *err, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CFG_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

int stamp_path(char *out, size_t len, const char *stamp_dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", stamp_dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int stamp_run_dir(char *out, size_t len, const char *stamp_dir, const char *setup, unsigned k)
{
	int n = snprintf(out, len, REC_RUN_DIR_FMT, stamp_dir, setup, k);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

char *stamp_path_alloc(const char *stamp_dir, const char *name)
{
	struct buf b = { 0 };

	if (buf_printf(&b, "%s/%s", stamp_dir, name)) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

char *stamp_run_dir_alloc(const char *stamp_dir, const char *setup, unsigned k)
{
	struct buf b = { 0 };

	if (buf_printf(&b, REC_RUN_DIR_FMT, stamp_dir, setup, k)) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* Checks the summary's head and points s at its parts. */
static int check_summary(struct stamp *s, char *err)
{
	const char *path = s->summary_path;
	const cJSON *v;
	const cJSON *st;

	v = cJSON_GetObjectItemCaseSensitive(s->summary, "scenario");
	if (!cJSON_IsString(v))
		return errorf(err, -EINVAL, "%s: scenario: expected a string", path);
	s->name = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(s->summary, "time_scale");
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > SC_SCALE_MAX)
		return errorf(err, -EINVAL, "%s: time_scale: expected a number in (0, %g]", path,
			      SC_SCALE_MAX);
	s->scale = v->valuedouble;
	s->setups = cJSON_GetObjectItemCaseSensitive(s->summary, "setups");
	if (!cJSON_IsObject(s->setups) || !s->setups->child)
		return errorf(err, -EINVAL, "%s: setups: expected an object with a setup", path);
	for_each_setup(s, st) {
		if (!cJSON_IsObject(st) ||
		    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(st, "windows")))
			return errorf(err, -EINVAL, "%s: setups.%s.windows: expected an array", path,
				      st->string);
	}
	return 0;
}

/* Sets s->dir and s->summary_path. */
static int begin(struct stamp *s, const char *stamp_dir, char *err)
{
	memset(s, 0, sizeof(*s));
	s->dir = stamp_dir;
	s->summary_path = stamp_path_alloc(stamp_dir, REC_SUMMARY);
	if (!s->summary_path)
		return errorf(err, -ENOMEM, "%s: out of memory", stamp_dir);
	if (strlen(s->summary_path) >= PATH_MAX)
		return errorf(err, -ENAMETOOLONG, "%.200s…: too long: its files would have paths of "
			      "%zu bytes and more, and the system takes at most %d", stamp_dir,
			      strlen(s->summary_path), PATH_MAX - 1);
	return 0;
}

int stamp_load(struct stamp *s, const char *stamp_dir, char *err)
{
	char msg[CFG_ERR_LEN];
	char *path = NULL;
	struct stat st;
	int rc;

	rc = begin(s, stamp_dir, err);
	if (rc)
		goto out;
	if (stat(s->summary_path, &st)) {
		rc = errorf(err, -errno, "%s: %s (not a finished chaos run's stamp directory?)",
			    s->summary_path, strerror(errno));
		goto out;
	}
	s->own_summary = json_load_file(s->summary_path, msg, sizeof(msg));
	if (!s->own_summary) {
		rc = errorf(err, -EINVAL, "%s", msg);
		goto out;
	}
	s->summary = s->own_summary;
	rc = check_summary(s, err);
	if (rc)
		goto out;
	path = stamp_path_alloc(stamp_dir, REC_SCENARIO);
	if (!path) {
		rc = errorf(err, -ENOMEM, "%s: out of memory", stamp_dir);
		goto out;
	}
	if (stat(path, &st)) {
		rc = errorf(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = scenario_load(path, s->scale, &s->own_sc, err);
	if (!rc)
		s->sc = &s->own_sc;
out:
	free(path);
	return rc;
}

int stamp_use(struct stamp *s, const char *stamp_dir, const cJSON *summary,
	      const struct scenario *sc, char *err)
{
	int rc = begin(s, stamp_dir, err);

	if (rc)
		return rc;
	s->summary = summary;
	s->sc = sc;
	return check_summary(s, err);
}

void stamp_free(struct stamp *s)
{
	cJSON_Delete(s->own_summary);
	scenario_free(&s->own_sc);
	free(s->summary_path);
	memset(s, 0, sizeof(*s));
}

unsigned stamp_first_run(const struct stamp *s, const char *setup, char **dir)
{
	const cJSON *rep = cJSON_GetObjectItemCaseSensitive(s->summary, "repeat");
	unsigned n = cJSON_IsNumber(rep) && rep->valuedouble >= 1 ? (unsigned)rep->valuedouble : 1;
	struct stat st;
	unsigned k;

	*dir = NULL;
	for (k = 1; k <= n && k <= 100; k++) {
		*dir = stamp_run_dir_alloc(s->dir, setup, k);
		if (!*dir)
			return 0;
		if (stat(*dir, &st) == 0 && S_ISDIR(st.st_mode))
			return k;
		free(*dir);
		*dir = NULL;
	}
	return 0;
}

/* A number member of a JSON file's top object; NAN when the file or the member is not there. */
static double file_num(const char *path, const char *key)
{
	char err[CFG_ERR_LEN];
	cJSON *root = json_load_file(path, err, sizeof(err));
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;

	cJSON_Delete(root);
	return d;
}

double stamp_scale(const char *stamp_dir, const struct scenario *probe)
{
	char *path = stamp_path_alloc(stamp_dir, REC_SUMMARY);
	char *dir;
	double s = NAN;
	size_t i;

	if (path)
		s = file_num(path, "time_scale");
	for (i = 0; isnan(s) && i < probe->nsetups; i++) {
		free(path);
		path = NULL;
		dir = stamp_run_dir_alloc(stamp_dir, probe->setups[i].name, 1);
		if (dir)
			path = stamp_path_alloc(dir, REC_SUMMARY);
		free(dir);
		if (path)
			s = file_num(path, "time_scale");
	}
	free(path);
	return s;
}

bool stamp_simulated(const char *stamp_dir, const struct scenario *sc)
{
	bool sim = false;
	size_t i;

	for (i = 0; !sim && i < sc->nsetups; i++) {
		char *dir = stamp_run_dir_alloc(stamp_dir, sc->setups[i].name, 1);
		char *path = dir ? stamp_path_alloc(dir, REC_SIM) : NULL;

		sim = path && access(path, F_OK) == 0;
		free(path);
		free(dir);
	}
	return sim;
}

int stamp_mkdir_p(const char *path)
{
	char *copy = strdup(path);
	char *s;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (s = copy + 1; *s && !rc; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(copy, 0755) && errno != EEXIST)
			rc = -errno;
		*s = '/';
	}
	if (!rc && mkdir(copy, 0755) && errno != EEXIST)
		rc = -errno;
	free(copy);
	return rc;
}

int stamp_make_new(const char *out_dir, const char *name, const char *suffix, char **dir)
{
	char stamp[32];
	char *parent = buf_aprintf("%s/%s", out_dir, name);
	time_t now = time(NULL);
	struct tm tm;
	int rc = -EEXIST;
	int i;

	*dir = NULL;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (i = 1; i < 100 && rc == -EEXIST; i++) {
		free(*dir);
		*dir = i == 1 ? buf_aprintf("%s/%s%s", parent ? parent : "", stamp, suffix) :
			buf_aprintf("%s/%s%s-%d", parent ? parent : "", stamp, suffix, i);
		if (!parent || !*dir) {
			rc = -ENOMEM;
			break;
		}
		rc = stamp_mkdir_p(parent);
		if (rc)
			break;
		rc = mkdir(*dir, 0755) == 0 ? 0 : -errno;
	}
	free(parent);
	return rc;
}
