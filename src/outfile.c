#include "src/outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct hs_error *hs_outfile_open(struct hs_outfile *o, const char *path)
{
	o->path = path;
	o->fd = -1;
	if (asprintf(&o->tmp, "%s.tmp-XXXXXX", path) < 0) {
		o->tmp = NULL;
		return &hs_error_nomem;
	}
	o->fd = mkstemp(o->tmp);
	if (o->fd < 0) {
		struct hs_error *err = hs_error_errno(errno, "%s", path);
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
	if (!err && rename(o->tmp, o->path) != 0)
		err = hs_error_errno(errno, "%s", o->path);
	if (err)
		unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return err;
}
