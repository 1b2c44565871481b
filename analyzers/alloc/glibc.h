/* glibc ptmalloc walker: every chunk of every arena, the thread caches,
 * and the mmapped chunks, read through DWARF layouts of glibc's own types.
 */
#ifndef HS_GLIBC_H
#define HS_GLIBC_H

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

/* glibc's struct mallinfo2, as mallinfo2() would have returned it: the
 * glibc heap's stats. */
struct hs_mallinfo2 {
	uint64_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
		uordblks, fordblks, keepcost;
};

/* Where a glibc block sits (hs_alloc.where; hs_glibc_backend.places). */
enum hs_gl_where {
	HS_GL_HEAP,             /* used chunk in an arena heap */
	HS_GL_MMAPPED,          /* used, directly mmapped */
	HS_GL_INTERNAL = HS_WHERE_INTERNAL, /* used by malloc itself (tcache struct) */
	HS_GL_BIN = HS_WHERE_FREE, /* free, in a regular bin (unsorted/small/large) */
	HS_GL_FASTBIN,          /* free, in a fastbin */
	HS_GL_TCACHE,           /* free, in a thread cache */
	HS_GL_TOP,              /* free, the top chunk (wilderness) */
};

/* The registry's default (analyzers/alloc/backend.c). */
extern const struct hs_backend hs_glibc_backend;

/* A glibc heap's mallinfo2, or NULL (another allocator's heap). */
const struct hs_mallinfo2 *hs_glibc_mallinfo2(const struct hs_heap *heap);

/* Does the core use glibc malloc (a module defines main_arena)?  Sets *libc
 * to that module (NULL when no module has libc's name). */
bool hs_glibc_detect(struct hs_dwarf *dw, struct hs_module **libc);

/* The row of formats/gllayout.c for libc's release (by its "release
 * version" string; *exact: read from this very build-id), or NULL. */
struct hs_gl_layout;
const struct hs_gl_layout *hs_glibc_row(struct hs_dwarf *dw,
					struct hs_module *libc, bool *exact);

/* The walk: discovery of libc's module, layouts, main_arena, mp_, version
 * and tcache TLS offset, then the walk proper over the core's memory.
 * opts (may be NULL): hs_walk_options, both of them. */
struct hs_error *hs_glibc_walk(const struct hs_core *core, struct hs_dwarf *dw,
			       struct hs_log *log,
			       const struct hs_walk_options *opts,
			       struct hs_heap **ret);

/* What discovery finds, given instead (internal: for the unit tests, whose
 * synthetic cores have no libc to discover it from). */
struct hs_glibc_known {
	const struct hs_gl_layout *layout;  /* the offsets: a row of
					     * formats/gllayout.c; not NULL */
	uint64_t main_arena, mp;            /* where main_arena and mp_ are */
	bool safe_linking;                  /* glibc >= 2.32 */
	bool tpoff_known;                   /* else thread caches are not read */
	int64_t tpoff;                      /* tcache's offset from fs_base */
};

/* The walk proper alone: what hs_glibc_walk does once discovery is done
 * (the heap has no version and no hs_found entries). */
struct hs_error *hs_glibc_walk_known(const struct hs_core *core,
				     const struct hs_glibc_known *k,
				     struct hs_log *log, struct hs_heap **ret);

#endif
