/* Output files written beside their final path (PATH.tmp-XXXXXX) and
 * renamed over it only when complete: a failed write leaves nothing behind
 * and an existing PATH untouched. */
#ifndef HS_OUTFILE_H
#define HS_OUTFILE_H

#include <stdio.h>

#include "src/error.h"

struct hs_outfile {
	const char *path;
	char *tmp;
	int fd;
};

/* Creates the temporary file; o->fd is open for writing. */
struct hs_error *hs_outfile_open(struct hs_outfile *o, const char *path);
/* The same, as a stdio stream (closed with fclose by the caller). */
struct hs_error *hs_outfile_fopen(struct hs_outfile *o, const char *path,
				  FILE **f);
/* After the caller closed the file: with err NULL, renames it over the path
 * (an error if that fails); otherwise removes it.  Returns the outcome. */
struct hs_error *hs_outfile_finish(struct hs_outfile *o, struct hs_error *err);

#endif
