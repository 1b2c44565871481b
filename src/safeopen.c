#include "src/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

const char *hs_file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symbolic link";
	default: return "not a regular file";
	}
}

/* 0 with *fd open, or an errno value; *mode is set when the file exists
 * but is not regular. */
static int open_checked(const char *path, int *fd, struct stat *st,
			mode_t *mode)
{
	struct stat before;
	*mode = 0;
	if (stat(path, &before) != 0)
		return errno;
	if (!S_ISREG(before.st_mode)) {
		*mode = before.st_mode;
		return EINVAL;
	}
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f < 0)
		return errno;
	struct stat after;
	if (fstat(f, &after) != 0) {
		int e = errno;
		close(f);
		return e;
	}
	/* replaced between the look and the open */
	if (!S_ISREG(after.st_mode) || after.st_dev != before.st_dev ||
	    after.st_ino != before.st_ino) {
		*mode = after.st_mode;
		close(f);
		return S_ISREG(after.st_mode) ? EAGAIN : EINVAL;
	}
	int flags = fcntl(f, F_GETFL);
	if (flags >= 0)
		fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
	if (st)
		*st = after;
	*fd = f;
	return 0;
}

struct hs_error *hs_open_regular(const char *path, int *ret_fd,
				 struct stat *st)
{
	mode_t mode;
	int e = open_checked(path, ret_fd, st, &mode);
	if (!e)
		return NULL;
	if (e == EINVAL && mode)
		return hs_error_create(HS_ERR_FORMAT, "%s: not a regular file (%s)",
				       path, hs_file_kind(mode));
	if (e == EAGAIN)
		return hs_error_create(HS_ERR_IO, "%s: changed while being opened",
				       path);
	return hs_error_errno(e, "%s", path);
}

int hs_open_regular_fd(const char *path)
{
	int fd;
	mode_t mode;
	int e = open_checked(path, &fd, NULL, &mode);
	if (e) {
		errno = e;
		return -1;
	}
	return fd;
}
