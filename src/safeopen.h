/* Opening files whose paths may be hostile.
 *
 * A path can come from the user or from the core itself (NT_FILE, the
 * dynamic linker's list), and a core's paths are chosen by whoever made the
 * core.  Opening a FIFO blocks until a writer comes; opening some devices
 * has effects of its own (a watchdog, a tape).  So a path is looked at
 * before it is opened: only a regular file is opened, with O_NONBLOCK and
 * O_NOCTTY, and the descriptor is checked again (the same file, still
 * regular) before anything is read.
 */
#ifndef HS_SAFEOPEN_H
#define HS_SAFEOPEN_H

#include <stdbool.h>
#include <sys/stat.h>

#include "src/error.h"

/* Opens path read-only when it is a regular file; *ret_fd is then open
 * (blocking mode restored) and st, if not NULL, holds its fstat.  Any other
 * kind of file (FIFO, device, socket, directory) gives an HS_ERR_FORMAT
 * error naming the kind, without opening it. */
struct hs_error *hs_open_regular(const char *path, int *ret_fd,
				 struct stat *st);

/* open(2)'s shape for callbacks that want an fd or -1 with errno: the same
 * checks, errno EINVAL for a file that is not regular. */
int hs_open_regular_fd(const char *path);

/* "a FIFO", "a character device", ... for st_mode. */
const char *hs_file_kind(mode_t mode);

#endif
