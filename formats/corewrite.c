#include "formats/corewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/outfile.h"

static struct hs_error *write_all(int fd, const uint8_t *p, size_t n,
				  const char *path)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return hs_error_errno(errno, "%s", path);
		}
		p += w;
		n -= (size_t)w;
	}
	return NULL;
}

struct hs_error *hs_core_write_masked(const struct hs_core *core,
				      const char *out_path,
				      const struct hs_core_writer *w,
				      uint64_t *zeroed_words)
{
	struct hs_outfile o;
	struct hs_error *err = hs_outfile_open(&o, out_path);
	if (err)
		return err;
	int fd = o.fd;
	const char *tmp = o.tmp;
	err = write_all(fd, core->data, core->size, tmp);
	uint8_t *map = MAP_FAILED;
	if (!err && core->size) {
		map = mmap(NULL, core->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			err = hs_error_errno(errno, "%s: mmap", tmp);
	}
	uint64_t zeroed = 0;
	for (size_t i = 0; !err && i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if (!s->avail || !w->zero_segment(w->arg, s))
			continue;
		/* words of the target: vaddr is page aligned, so a target word
		 * starts at offset + 8k of the file */
		for (uint64_t k = 0; k + 8 <= s->avail; k += 8) {
			uint64_t off = s->offset + k, v;
			memcpy(&v, map + off, 8);
			if (!v || w->keep(w->arg, off, v))
				continue;
			memset(map + off, 0, 8);
			zeroed++;
		}
		/* a tail shorter than a word */
		uint64_t tail = s->avail & 7;
		if (tail && !w->keep(w->arg, s->offset + s->avail - tail, 0))
			memset(map + s->offset + s->avail - tail, 0, tail);
	}
	if (map != MAP_FAILED) {
		if (!err && msync(map, core->size, MS_SYNC) != 0)
			err = hs_error_errno(errno, "%s: msync", tmp);
		munmap(map, core->size);
	}
	if (!err && fsync(fd) != 0)
		err = hs_error_errno(errno, "%s: fsync", tmp);
	if (close(fd) != 0 && !err)
		err = hs_error_errno(errno, "%s: close", tmp);
	err = hs_outfile_finish(&o, err);
	if (!err && zeroed_words)
		*zeroed_words = zeroed;
	return err;
}
