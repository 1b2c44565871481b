/* jemalloc 5.x walker: every region of every slab and every large extent,
 * from the global extent map (an rtree), with thread caches marking cached
 * regions free; dirty, muzzy and retained extents as free page runs.
 *
 * Layouts come from formats/jelayout.c (keyed by build-id and version), so
 * a stripped library works; what symbols do not give (the extent map, the
 * arenas array) is found by disassembling exported functions and by
 * consistency checks on the core's memory (see docs/architecture.md).
 */
#ifndef HS_JEMALLOC_H
#define HS_JEMALLOC_H

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

/* jemalloc's own totals, as its mallctl "stats.*" would give them: the
 * jemalloc heap's stats. */
struct hs_je_stats {
	uint64_t allocated;   /* bytes of used regions and large extents
			       * (thread caches' included, as jemalloc counts) */
	uint64_t active;      /* bytes of pages of active extents */
	uint64_t dirty, muzzy, retained;  /* bytes of such extents */
	uint64_t metadata_blocks;  /* bytes of base blocks (metadata) */
	uint64_t extent_map;       /* where the walk found emap / arenas */
	uint64_t arenas_array;     /* (0: not found) */
	const char *layout;        /* where its layouts came from (static) */
};

/* Where a jemalloc block sits (hs_alloc.where; hs_jemalloc_backend.places). */
enum hs_je_where {
	HS_JE_SMALL,            /* used, a region of a slab */
	HS_JE_LARGE,            /* used, a large extent (huge ones included) */
	HS_JE_INTERNAL = HS_WHERE_INTERNAL, /* used by jemalloc itself (a thread cache's
				 * own arrays) */
	HS_JE_SLAB = HS_WHERE_FREE, /* free, a free region of a slab */
	HS_JE_TCACHE,           /* free, a region or large extent held in a
				 * thread cache */
	HS_JE_DIRTY,            /* free pages, not yet purged */
	HS_JE_MUZZY,            /* free pages, lazily purged (MADV_FREE) */
	HS_JE_RETAINED,         /* free address space kept for reuse */
};

extern const struct hs_backend hs_jemalloc_backend;

/* A jemalloc heap's stats, or NULL (another allocator's heap). */
const struct hs_je_stats *hs_jemalloc_stats(const struct hs_heap *heap);

/* Is the program's malloc jemalloc?  A libjemalloc module, or a module
 * (usually the executable) that defines jemalloc's extent map under any
 * private prefix (je_, _rjem_je_, none). */
bool hs_jemalloc_detect(struct hs_dwarf *dw, struct hs_module **lib);

/* Finds what the walk needs from the core's modules (the library, its
 * layouts, its extent map, its threads' state), then walks.  opts: none
 * of hs_walk_options is taken up (the blocks are always kept). */
struct hs_error *hs_jemalloc_walk(const struct hs_core *core,
				  struct hs_dwarf *dw, struct hs_log *log,
				  const struct hs_walk_options *opts,
				  struct hs_heap **ret);

struct hs_je_layout;

/* What the walk proper needs, as hs_jemalloc_walk finds it; a unit test
 * builds one by hand for a synthetic core.  Pointers are borrowed for the
 * call.  Nothing here is checked against the core beyond what the walk
 * checks anyway (an implausible extent map is hs_jemalloc_walk's to
 * refuse). */
struct hs_jemalloc_known {
	const struct hs_je_layout *layout;
	const uint64_t *sizes;      /* usable size per size index, layout->nsizes
				     * of them; NULL: jemalloc's size-class rule
				     * applied to the layout */
	const char *version;        /* NULL: unknown */
	uint64_t emap;              /* the extent map (arena_emap_global) */
	uint64_t arenas;            /* the arenas array; 0: looked for in the
				     * library's writable data */
	const uint64_t *tsd;        /* per thread of the core, in its order: the
				     * thread's tsd_t, 0 if none; NULL: none */
	uint64_t lib_start, lib_end;  /* the library's image */
	bool lib_is_exe;            /* a copy linked into the executable (its
				     * writable data is the program's too) */
};

struct hs_error *hs_jemalloc_walk_known(const struct hs_core *core,
					const struct hs_jemalloc_known *k,
					struct hs_log *log, struct hs_heap **ret);

#endif
