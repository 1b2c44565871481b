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

struct hs_error *hs_outfile_open(struct hs_outfile *o, const char *path)
{
	o->path = path;
	o->tmp = NULL;
	o->fd = -1;
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
	if (!err && rename(o->tmp, o->path) != 0)
		err = hs_error_errno(errno, "%s", o->path);
	if (err)
		unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return err;
}
