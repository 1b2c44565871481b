/* CPython's small-object allocator (pymalloc, Objects/obmalloc.c), read as
 * a layer above the program's malloc.
 *
 * pymalloc takes arenas from mmap (1 MiB since Python 3.10, 256 KiB
 * before), cuts each into pools (16 KiB since 3.10, 4 KiB before) aligned
 * to their size, and each pool into blocks of one size class (16 to 512
 * bytes, by 16, since 3.8).  A pool starts with a 48-byte header:
 *
 *   +0  ref.count      blocks handed out (uint)
 *   +8  freeblock      head of the pool's free list (block *)
 *   +16 nextpool, +24 prevpool
 *   +32 arenaindex     the arena's index in obmalloc's arenas[] (uint)
 *   +36 szidx          size class: blocks are (szidx + 1) * 16 bytes
 *   +40 nextoffset     bytes of the pool carved into blocks so far
 *   +44 maxnextoffset  pool size - block size, set when the pool is set up
 *
 * Blocks are carved from +48 up to nextoffset; those on the free list
 * (linked through their first word) are free, the others are in use, and
 * their number is ref.count.  A pool whose count is 0 is empty (on its
 * arena's free pools list).
 *
 * The layer needs no debug info: every pool-aligned address of the core's
 * anonymous writable memory outside malloc's heaps whose header has that
 * shape (maxnextoffset exactly the pool size less the class's size,
 * nextoffset on a block boundary, a free list of carved blocks that are
 * not in use, count carved blocks less the free ones) is a pool.  The
 * check runs only when the program has CPython in it (a module named
 * python3.N or libpython3.N).  Its blocks join the heap's table in two
 * places of their own (used, free), empty pools as one free block each,
 * and the pools' spans become regions of the heap, so that they are no
 * longer roots.
 */
#ifndef HS_PYMALLOC_H
#define HS_PYMALLOC_H

#include <stdint.h>
#include <stdio.h>

#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "formats/jsonw.h"
#include "src/error.h"
#include "src/log.h"
#include "analyzers/alloc/heap.h"

/* The places of pymalloc's blocks in every heap's table: free in both
 * backends' tables. */
enum {
	HS_PY_BLOCK = 6,        /* used: a block of a pool */
	HS_PY_FREE = 14,        /* free: a block of a pool, on its free list
				 * or not carved yet */
	HS_PY_EMPTY = 15,       /* free: an empty pool (its blocks' bytes) */
};

enum { HS_PY_CLASSES = 32 };

struct hs_py_class {
	uint64_t pools, used, avail;    /* as sys._debugmallocstats counts */
};

/* One arena, by its pools' headers (and its arena_object, when the
 * arena table was found). */
struct hs_py_arena {
	uint32_t index;         /* the pools' arenaindex */
	uint64_t lo, hi;        /* first and last pool with a header */
	uint64_t pools, empty_pools;    /* in use; empty, with a header */
	/* from the arena table, else 0: the mapping's start, the pools it
	 * holds (one fewer when it is not pool-aligned), those not in use */
	uint64_t address, total_pools, free_pools;
};

struct hs_pymalloc {
	char version[32];       /* "3.11.2" (Py_Version), or from the name */
	unsigned minor;         /* 3.minor */
	uint64_t pool_size, arena_size;
	uint64_t arenas;        /* arenas with at least one pool */
	uint64_t pools, empty_pools;    /* pools in use, empty ones */
	uint64_t used_blocks, used_bytes;
	uint64_t free_blocks, free_bytes;       /* avail: in used pools */
	uint64_t bad_pools;     /* headers that looked right, lists that did not */
	struct hs_py_class classes[HS_PY_CLASSES];
	/* obmalloc's table of arenas (arena_object[]: each arena's mapping,
	 * pools and pools not in use) is a malloc block; found when exactly
	 * one block's records agree with every arena's pools.  Then, as
	 * sys._debugmallocstats() counts them: */
	uint64_t table;                 /* its address; 0: not found */
	uint64_t unused_pools;          /* carved and freed, or not carved */
	uint64_t alignment_bytes;       /* arenas' start before their first pool */
	size_t narena;
	struct hs_py_arena arena[];     /* by address (one free() with the rest) */
};

/* What pymalloc's arenas hold, in bytes, as sys._debugmallocstats()
 * splits them (the last three need the arena table; their sum is the
 * arenas' size then). */
struct hs_py_footprint {
	uint64_t arenas, blocks, available, headers, quantization,
		 unused_pools, alignment;
};
void hs_pymalloc_footprint(const struct hs_pymalloc *py,
			   struct hs_py_footprint *f);

/* The module that holds CPython (python3.N, libpython3.N.so; of several,
 * the one that defines PyType_Type), and N;
 * NULL when the program has none. */
struct hs_module *hs_pymalloc_python(struct hs_dwarf *dw, unsigned *minor);

/* Looks for CPython's pools in the core and adds their blocks to heap (a
 * finished heap, totals_only or not).  Nothing when the program has no
 * CPython, or pymalloc is off (PYTHONMALLOC=malloc): heap->pymalloc stays
 * NULL.  Errors are out of memory only; what is wrong in a pool is a
 * warning, and the pool is left out (heap->partial). */
struct hs_error *hs_pymalloc_layer(const struct hs_core *core,
				   struct hs_dwarf *dw, struct hs_log *log,
				   struct hs_heap *heap);

/* The layer's reader proper, from the core's memory alone: CPython 3.minor
 * (8 or later) whose version is version.  hs_pymalloc_layer calls it once
 * it knows both; the tests call it on synthetic cores. */
struct hs_error *hs_pymalloc_read(const struct hs_core *core,
				  struct hs_log *log, struct hs_heap *heap,
				  unsigned minor, const char *version);

/* info's "pymalloc" object, and its lines of text. */
void hs_pymalloc_json(struct hs_jsonw *w, const struct hs_pymalloc *py);
void hs_pymalloc_text(FILE *out, const struct hs_pymalloc *py);

#endif
