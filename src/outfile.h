/* Output files.
 *
 * A path is written as an unnamed file in its directory (O_TMPFILE), given a
 * temporary name beside its final one (PATH.tmp-XXXXXX) when complete and
 * renamed over it: a failed write leaves nothing behind and an existing PATH
 * untouched, and so does a writer killed on the way (where the file system
 * has no O_TMPFILE the file is named PATH.tmp-XXXXXX from the start, and a
 * killed writer leaves that).  What is at PATH already must be a regular file, or
 * nothing: a symbolic link there is never followed nor replaced, and a
 * device, FIFO, socket or directory is refused (renaming over /dev/null, run
 * as root, would replace the system's /dev/null).  "-" is standard output,
 * for whoever wants the bytes elsewhere (a pipe, a FIFO, a device).
 */
#ifndef HS_OUTFILE_H
#define HS_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "src/error.h"

struct hs_outfile {
	const char *path;
	char *tmp;          /* NULL when writing to standard output */
	int fd;
	int keep;           /* the unnamed file, until it is linked; else -1 */
};

/* True for "-". */
bool hs_outfile_is_stdout(const char *path);

/* Whether path can be written: an HS_ERR_IO error saying why not (a
 * symbolic link, a device, ...), for commands to call before a long
 * analysis.  hs_outfile_open checks again. */
struct hs_error *hs_outfile_check(const char *path);

/* Creates the temporary file (or takes standard output); o->fd is open for
 * writing and belongs to the caller until hs_outfile_finish. */
struct hs_error *hs_outfile_open(struct hs_outfile *o, const char *path);
/* The same, as a stdio stream (closed with fclose by the caller). */
struct hs_error *hs_outfile_fopen(struct hs_outfile *o, const char *path,
				  FILE **f);
/* A scratch file for a writer of path: unnamed, open for reading and
 * writing, in the directory path's output goes to (the same file system;
 * $TMPDIR, else /tmp, for standard output), gone when *fd is closed or the
 * process dies.  Where the file system has no O_TMPFILE, a named file
 * removed at once. */
struct hs_error *hs_outfile_scratch(const char *path, int *fd);
/* After the caller closed the file: with err NULL, renames it over the path
 * (an error if that fails); otherwise removes it.  Returns the outcome. */
struct hs_error *hs_outfile_finish(struct hs_outfile *o, struct hs_error *err);

#endif
