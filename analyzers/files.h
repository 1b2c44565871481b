/* glibc's stdio streams (FILE) in a core: found through libio's list of
 * streams and by type.
 *
 * glibc's FILE is struct _IO_FILE (libio/bits/types/struct_FILE.h),
 * followed by its vtable pointer (struct _IO_FILE_plus).  fopen returns a
 * struct locked_FILE from malloc: the _IO_FILE_plus first, then its lock
 * and wide data.  x86-64, glibc 2.31 to 2.40 (libc6-dbg's DWARF says the
 * same):
 *
 *     0  int _flags            _IO_NO_READS 4, _IO_NO_WRITES 8,
 *                              _IO_IS_APPENDING 0x1000
 *    56  char *_IO_buf_base    the buffer (a malloc block of its own)
 *    64  char *_IO_buf_end
 *   104  FILE *_chain          the next stream of _IO_list_all's list
 *   112  int _fileno
 *   192  int _mode             < 0 byte stream, > 0 wide, 0 undecided
 *   216  const struct _IO_jump_t *vtable   in libc's __libc_IO_vtables
 *
 * (glibc 2.41 puts _prevchain, the address of the word that points to the
 * stream, at 184: known from DWARF only.)
 *
 * Every fopen'ed stream stays on _IO_list_all's list until fclose, lost by
 * the program or not: the list is libc's bookkeeping, like a GC's list of
 * objects, so its links are not references (hs_files_skip for the graph's
 * scan, hs_files.not_refs for the roots).  A stream is found on the list
 * (walked bounded, a loop stops it with a warning) and by type: a used
 * block whose word at the vtable's offset points into libc's
 * __libc_IO_vtables section (a stream the list lost).  libc's own stdin,
 * stdout and stderr are found by their symbols too.
 */
#ifndef HS_FILES_H
#define HS_FILES_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/error.h"
#include "src/log.h"

enum hs_file_kind {
	HS_FILE_HEAP,           /* a heap block (fopen, fdopen, ...) */
	HS_FILE_STATIC,         /* libc's stdin, stdout, stderr */
	HS_FILE_OTHER,          /* on the list, elsewhere in memory */
};
extern const char *const hs_file_kind_names[];

enum { HS_FILE_NO_FD = INT32_MIN };

struct hs_file {
	uint64_t addr;
	uint32_t id;            /* its block (HS_FILE_HEAP), else UINT32_MAX */
	enum hs_file_kind kind;
	const char *name;       /* "stdin", "stdout", "stderr", or NULL */
	int32_t fd;             /* HS_FILE_NO_FD when _fileno is not one */
	uint32_t flags;         /* _flags */
	int32_t mode;           /* _mode */
	uint64_t buf_base, buf_size;
	uint32_t buf_id;        /* the buffer's block, or UINT32_MAX */
	bool on_list;           /* met walking _IO_list_all */
	bool bad_buffer;        /* _IO_buf_end before _IO_buf_base, or huge */
};

struct hs_files {
	struct hs_file *v;      /* list order first, then by address */
	size_t n;
	bool from_dwarf;        /* the layout came from libc's DWARF */
	bool list_found;        /* _IO_list_all was read */
	bool list_loop;         /* the list came back to a stream it met */
	bool list_bad;          /* the list led to memory that is no stream */
	size_t list_len;
	/* words outside the heap that hold list links, not references:
	 * _IO_list_all (and libc's streams' _prevchain on 2.41) */
	uint64_t not_refs[4];
	size_t nnot_refs;
	/* per block, a bit: the block starts with a stream (hs_files_skip) */
	uint64_t *is_file;
	size_t nblocks;
	uint32_t skip_at, skip_n;  /* words of a stream that are list links */
};

/* Finds the streams.  A core without glibc's libc gives an empty set;
 * only running out of memory is an error. */
struct hs_error *hs_files_find(const struct hs_core *core, struct hs_dwarf *dw,
			       const struct hs_heap *heap, struct hs_log *log,
			       struct hs_files **ret);
void hs_files_destroy(struct hs_files *f);

/* "r", "w", "a", "r+", "a+", or "-" (neither read nor write) */
const char *hs_file_mode(uint32_t flags);

/* The words [at, at + n) of block id that are list links (none: n 0). */
static inline void hs_files_skip(const struct hs_files *f, uint32_t id,
				 uint32_t *at, uint32_t *n)
{
	if (f && f->is_file && id < f->nblocks &&
	    (f->is_file[id / 64] >> (id % 64) & 1)) {
		*at = f->skip_at;
		*n = f->skip_n;
	} else {
		*at = *n = 0;
	}
}

#endif
