#include "src/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/safeopen.h"

bool hs_outfile_is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

struct hs_error *hs_outfile_check(const char *path)
{
	if (hs_outfile_is_stdout(path))
		return NULL;
	if (!*path)
		return hs_error_create(HS_ERR_IO, "the output path is empty");
	struct stat st;
	if (lstat(path, &st) != 0)
		return NULL;    /* nothing there: created */
	if (S_ISREG(st.st_mode))
		return NULL;    /* replaced when the new one is complete */
	if (S_ISLNK(st.st_mode))
		return hs_error_create(HS_ERR_IO,
				       "%s is a symbolic link: heapsift neither follows nor replaces it (name the file itself)",
				       path);
	return hs_error_create(HS_ERR_IO,
			       "%s is %s, not a regular file: heapsift does not replace it (use -o - to write to standard output)",
			       path, hs_file_kind(st.st_mode));
}

/* The directory path's output goes to (malloc'd): $TMPDIR (else /tmp)
 * for standard output. */
static char *dir_of(const char *path)
{
	if (hs_outfile_is_stdout(path)) {
		const char *t = getenv("TMPDIR");
		return strdup(t && *t ? t : "/tmp");
	}
	const char *slash = strrchr(path, '/');
	return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

struct hs_error *hs_outfile_scratch(const char *path, int *fd)
{
	*fd = -1;
	char *dir = path ? dir_of(path) : NULL, *name = NULL;
	if (!dir)
		return path ? &hs_error_nomem : hs_error_create(HS_ERR_USAGE, "no output path");
	*fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (*fd < 0 && asprintf(&name, "%s/heapsift-XXXXXX", dir) >= 0) {
		if ((*fd = mkostemp(name, O_CLOEXEC)) >= 0)
			unlink(name);
		free(name);
	}
	struct hs_error *err = *fd < 0 ? hs_error_errno(errno, "a temporary file in %s", dir) : NULL;
	free(dir);
	return err;
}

struct hs_error *hs_outfile_open(struct hs_outfile *o, const char *path)
{
	o->path = path;
	o->tmp = NULL;
	o->fd = o->keep = -1;
	if (!path)
		return hs_error_create(HS_ERR_USAGE, "no output path");
	struct hs_error *err = hs_outfile_check(path);
	if (err)
		return err;
	if (hs_outfile_is_stdout(path)) {
		fflush(stdout);
		o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (o->fd < 0)
			return hs_error_errno(errno, "standard output");
		return NULL;
	}
	if (asprintf(&o->tmp, "%s.tmp-XXXXXX", path) < 0) {
		o->tmp = NULL;
		return &hs_error_nomem;
	}
	/* unnamed until complete, where the file system can: a writer
	 * killed on the way leaves nothing (o->keep holds it open after the
	 * caller's close, for the link) */
	char *dir = dir_of(path);
	if (!dir) {
		free(o->tmp);
		o->tmp = NULL;
		return &hs_error_nomem;
	}
	o->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	free(dir);
	if (o->fd >= 0) {
		o->keep = fcntl(o->fd, F_DUPFD_CLOEXEC, 3);
		if (o->keep >= 0)
			return NULL;
		close(o->fd);
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0) {
		err = hs_error_errno(errno, "%s", path);
		free(o->tmp);
		o->tmp = NULL;
		return err;
	}
	return NULL;
}

struct hs_error *hs_outfile_fopen(struct hs_outfile *o, const char *path,
				  FILE **f)
{
	struct hs_error *err = hs_outfile_open(o, path);
	if (err)
		return err;
	*f = fdopen(o->fd, "w");
	if (!*f) {
		err = hs_error_errno(errno, "%s", path);
		close(o->fd);
		return hs_outfile_finish(o, err);
	}
	return NULL;
}

struct hs_error *hs_outfile_finish(struct hs_outfile *o, struct hs_error *err)
{
	if (!o->tmp)
		return err;     /* standard output: nothing to rename */
	/* Checked again just before the rename: what appeared at the path
	 * meanwhile is not replaced either.  (rename(2) itself replaces a
	 * symbolic link, never its target.) */
	if (!err)
		err = hs_outfile_check(o->path);
	bool named = o->keep < 0;
	if (!err && !named) {
		/* the unnamed file gets the temporary name (a name that
		 * exists already: another), then the rename replaces PATH */
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->keep);
		for (int tries = 0; !named && tries < 100; tries++) {
			int fd = mkostemp(o->tmp, O_CLOEXEC);
			if (fd < 0)
				break;
			close(fd);
			unlink(o->tmp);
			named = linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0 ||
				/* no /proc: the way that needs privilege */
				(errno == ENOENT &&
				 linkat(o->keep, "", AT_FDCWD, o->tmp, AT_EMPTY_PATH) == 0);
			if (!named && errno != EEXIST)
				break;
			if (!named)
				memcpy(o->tmp + strlen(o->tmp) - 6, "XXXXXX", 6);
		}
		if (!named)
			err = hs_error_errno(errno, "%s", o->path);
	}
	if (o->keep >= 0)
		close(o->keep);
	o->keep = -1;
	if (!err && rename(o->tmp, o->path) != 0)
		err = hs_error_errno(errno, "%s", o->path);
	if (err && named)
		unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return err;
}
