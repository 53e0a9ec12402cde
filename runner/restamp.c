/*
 * restamp: a stamp's scenario.json, and a run into an existing stamp; see
 * restamp.h.
 */
#include "runner/restamp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "common/json.h"
#include "common/records.h"
#include "runner/outfile.h"
#include "runner/stamp.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)	/* linux/fs.h */
#endif

cJSON *restamp_run_doc(const struct scenario *sc, char *err, size_t errlen)
{
	cJSON *root = sc->written ? cJSON_Duplicate(sc->written, true) : NULL;
	cJSON *setups;
	const cJSON *st;

	if (!root) {
		snprintf(err, errlen, "%s: out of memory", sc->path);
		return NULL;
	}
	if (!cJSON_GetObjectItemCaseSensitive(root, "name") &&
	    !cJSON_AddStringToObject(root, "name", sc->name))
		goto out_oom;
	setups = cJSON_GetObjectItemCaseSensitive(root, "setups");
	cJSON_ArrayForEach(st, sc->added) {
		if (!cJSON_IsArray(setups) || !cJSON_AddItemToArray(setups, cJSON_Duplicate(st, true)))
			goto out_oom;
	}
	return root;
out_oom:
	snprintf(err, errlen, "%s: out of memory", sc->path);
	cJSON_Delete(root);
	return NULL;
}

/* The setup called name in the array setups, or NULL. */
static const cJSON *setup_named(const cJSON *setups, const char *name)
{
	const cJSON *st;

	cJSON_ArrayForEach(st, setups) {
		const char *s = json_get_string(st, "name");

		if (s && name && strcmp(s, name) == 0)
			return st;
	}
	return NULL;
}

static bool is_done(const char *name, const char *const *done, size_t ndone)
{
	size_t i;

	for (i = 0; name && i < ndone; i++) {
		if (strcmp(done[i], name) == 0)
			return true;
	}
	return false;
}

/*
 * run_doc with the setups of both: the stamp's in their order (those in
 * done as run_doc has them), then run_doc's the stamp lacks. A new
 * object; NULL when out of memory.
 */
static cJSON *merge(const cJSON *stamp_doc, const cJSON *run_doc, const char *const *done,
		    size_t ndone)
{
	const cJSON *old = cJSON_GetObjectItemCaseSensitive(stamp_doc, "setups");
	const cJSON *mine = cJSON_GetObjectItemCaseSensitive(run_doc, "setups");
	cJSON *out = cJSON_Duplicate(run_doc, true);
	cJSON *setups = cJSON_CreateArray();
	const cJSON *st;

	if (!out || !setups)
		goto out_oom;
	cJSON_ArrayForEach(st, old) {
		const char *name = json_get_string(st, "name");
		const cJSON *src = st;

		if (is_done(name, done, ndone) && setup_named(mine, name))
			src = setup_named(mine, name);
		if (!cJSON_AddItemToArray(setups, cJSON_Duplicate(src, true)))
			goto out_oom;
	}
	cJSON_ArrayForEach(st, mine) {
		if (setup_named(old, json_get_string(st, "name")))
			continue;
		if (!cJSON_AddItemToArray(setups, cJSON_Duplicate(st, true)))
			goto out_oom;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(out, "setups");
	if (!cJSON_AddItemToObject(out, "setups", setups)) {
		setups = NULL;
		goto out_oom;
	}
	return out;
out_oom:
	cJSON_Delete(setups);
	cJSON_Delete(out);
	return NULL;
}

int restamp_add_stamp_setup(struct scenario *sc, const char *stamp_dir, const char *name,
			    char *err)
{
	char *path = stamp_path_alloc(stamp_dir, REC_SCENARIO);
	cJSON *doc = NULL;
	const cJSON *st;
	int rc = -ENOENT;

	if (!path) {
		snprintf(err, CFG_ERR_LEN, "--stamp: out of memory");
		return -ENOMEM;
	}
	doc = json_load_file(path, err, CFG_ERR_LEN);
	if (!doc) {
		rc = -EINVAL;
		goto out;
	}
	st = setup_named(cJSON_GetObjectItemCaseSensitive(doc, "setups"), name);
	if (st)
		rc = scenario_add_setup_json(sc, st, path, err);
out:
	cJSON_Delete(doc);
	free(path);
	return rc;
}

/*
 * The first top-level key (not name, description or setups) whose value differs
 * between the stamp's scenario and this run's, into key (len bytes);
 * false when none does.
 */
static bool body_differs(const cJSON *stamp_doc, const cJSON *run_doc, char *key, size_t len)
{
	const cJSON *a = stamp_doc;
	const cJSON *b = run_doc;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		const cJSON *it;

		cJSON_ArrayForEach(it, a) {
			const cJSON *other = cJSON_GetObjectItemCaseSensitive(b, it->string);

			if (strcmp(it->string, "name") == 0 || strcmp(it->string, "setups") == 0 ||
			    strcmp(it->string, "description") == 0)
				continue;
			if (!other || !cJSON_Compare(it, other, true)) {
				snprintf(key, len, "%s", it->string);
				return true;
			}
		}
		a = run_doc;
		b = stamp_doc;
	}
	return false;
}

/* Whether two time scales are the same one (as written: within 1e-9 of each other). */
static bool same_scale(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* restamp_check's checks of the stamp's own scenario (probe: it, loaded at scale 1). */
static int check_stamp_head(const char *stamp_dir, const cJSON *stamp_doc,
			    const struct scenario *probe, const struct scenario *sc, bool sim,
			    char *err)
{
	const char *name = json_get_string(stamp_doc, "name");
	double scale;

	if (!name || strcmp(name, sc->name) != 0) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.160s holds the results of scenario \"%.64s\", "
			 "not \"%.64s\" (%.120s)", stamp_dir, name ? name : "?", sc->name, sc->path);
		return -EINVAL;
	}
	scale = stamp_scale(stamp_dir, probe);
	if (!isnan(scale) && !same_scale(scale, sc->scale)) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.200s ran at time scale %g, this run's is %g: "
			 "its figures would not compare (give --time-scale %g)", stamp_dir, scale,
			 sc->scale, scale);
		return -EINVAL;
	}
	if (!isnan(scale) && stamp_simulated(stamp_dir, probe) != sim) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.200s holds %s runs, and this one is %s",
			 stamp_dir, sim ? "real" : "simulated", sim ? "simulated" : "real");
		return -EINVAL;
	}
	return 0;
}

int restamp_check(const char *stamp_dir, const struct scenario *sc, bool sim,
		  const char *const *names, size_t n, char *err)
{
	char why[CFG_ERR_LEN];
	char *path = stamp_path_alloc(stamp_dir, REC_SCENARIO);
	cJSON *stamp_doc = NULL;
	cJSON *run_doc = NULL;
	cJSON *both = NULL;
	struct scenario probe;
	struct scenario u;
	struct stat st;
	int rc = -EINVAL;

	memset(&probe, 0, sizeof(probe));
	if (!path) {
		snprintf(err, CFG_ERR_LEN, "--stamp: out of memory");
		return -ENOMEM;
	}
	if (stat(stamp_dir, &st) != 0) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.200s: %s", stamp_dir, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.200s: not a folder", stamp_dir);
		goto out;
	}
	stamp_doc = json_load_file(path, why, sizeof(why));
	if (!stamp_doc) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.200s is not a results stamp (DIR/NAME/STAMP): "
			 "%.240s", stamp_dir, why);
		goto out;
	}
	if (scenario_load_json(stamp_doc, path, 1, &probe, why)) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.400s", why);
		goto out;
	}
	rc = check_stamp_head(stamp_dir, stamp_doc, &probe, sc, sim, err);
	if (rc)
		goto out;
	rc = -EINVAL;
	run_doc = restamp_run_doc(sc, why, sizeof(why));
	if (run_doc && body_differs(stamp_doc, run_doc, why, 64)) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.120s ran another version of %.48s: its "
			 "scenario.json's %.40s differs from %.100s's, so their runs would not "
			 "compare (only setups may differ)", stamp_dir, sc->name, why, sc->path);
		goto out;
	}
	both = run_doc ? merge(stamp_doc, run_doc, names, n) : NULL;
	if (!both) {
		snprintf(err, CFG_ERR_LEN, "--stamp: %.400s", run_doc ? "out of memory" : why);
		goto out;
	}
	if (scenario_load_json(both, path, sc->scale, &u, why)) {
		snprintf(err, CFG_ERR_LEN, "--stamp: the setups of %.100s and this run's do not go "
			 "together: %.340s", stamp_dir, why);
		goto out;
	}
	scenario_free(&u);
	rc = 0;
out:
	scenario_free(&probe);
	cJSON_Delete(both);
	cJSON_Delete(run_doc);
	cJSON_Delete(stamp_doc);
	free(path);
	return rc;
}

int restamp_write_scenario(const char *stamp_dir, const struct scenario *sc, bool merge_it,
			   const char *const *done, size_t ndone, char *err, size_t errlen)
{
	char *path = stamp_path_alloc(stamp_dir, REC_SCENARIO);
	cJSON *run_doc = NULL;
	cJSON *stamp_doc = NULL;
	cJSON *both = NULL;
	int rc = -EIO;

	if (!path) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	run_doc = restamp_run_doc(sc, err, errlen);
	if (!run_doc)
		goto out;
	if (merge_it) {
		stamp_doc = json_load_file(path, err, errlen);
		if (!stamp_doc)
			goto out;
		both = merge(stamp_doc, run_doc, done, ndone);
		if (!both) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = outfile_write_json(path, both ? both : run_doc, err, errlen);
out:
	cJSON_Delete(both);
	cJSON_Delete(stamp_doc);
	cJSON_Delete(run_doc);
	free(path);
	return rc;
}

/* Removes name (in the folder dfd) and everything under it. */
static int remove_at(int dfd, const char *name)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;
	int rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) && errno != ENOENT ? -errno : 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (!rc && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			rc = remove_at(dirfd(d), e->d_name);
	}
	closedir(d);
	if (!rc && unlinkat(dfd, name, AT_REMOVEDIR) && errno != ENOENT)
		rc = -errno;
	return rc;
}

int restamp_remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path);
}

int restamp_swap(const char *stamp_dir, const char *setup, char *err, size_t errlen)
{
	char *cur = buf_aprintf("%s/%s", stamp_dir, setup);
	char *fresh = buf_aprintf("%s/%s" RESTAMP_NEW_SUFFIX, stamp_dir, setup);
	char *old = buf_aprintf("%s/%s.old~", stamp_dir, setup);
	int rc = -ENOMEM;

	snprintf(err, errlen, "out of memory");
	if (!cur || !fresh || !old)
		goto out;
	if (access(cur, F_OK) != 0) {
		rc = rename(fresh, cur) ? -errno : 0;
		if (rc)
			snprintf(err, errlen, "cannot rename %s to %s: %s", fresh, cur, strerror(-rc));
		goto out;
	}
	/* One step: never a moment without STAMP/SETUP. */
	if (syscall(SYS_renameat2, AT_FDCWD, fresh, AT_FDCWD, cur, RENAME_EXCHANGE) == 0) {
		rc = restamp_remove_tree(fresh);
		if (rc) {
			snprintf(err, errlen, "cannot remove the old runs, now in %s: %s", fresh,
				 strerror(-rc));
			rc = 1;		/* swapped all the same */
		}
		goto out;
	}
	rc = restamp_remove_tree(old);
	if (!rc && rename(cur, old))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "cannot move %s aside to %s: %s", cur, old, strerror(-rc));
		goto out;
	}
	if (rename(fresh, cur)) {
		rc = -errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", fresh, cur, strerror(-rc));
		rename(old, cur);	/* the old runs back in their place */
		goto out;
	}
	rc = restamp_remove_tree(old);
	if (rc) {
		snprintf(err, errlen, "cannot remove the old runs, now in %s: %s", old, strerror(-rc));
		rc = 1;		/* swapped all the same */
	}
out:
	free(old);
	free(fresh);
	free(cur);
	return rc;
}
