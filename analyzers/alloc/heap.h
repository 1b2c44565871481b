/* The allocator-neutral heap model: every block an allocator walker found,
 * in one array sorted by address.  Index = allocation id.
 *
 * Walkers fill it through hs_heap_add(), one sorted run per heap segment;
 * hs_heap_finish() orders the runs: in O(n) when they lie apart, by a merge
 * in O(n log runs) when they interleave (mmapped chunks between a thread
 * arena's heaps), falling back to a full sort when a run is out of order
 * (a corrupt walk).
 */
#ifndef HS_HEAP_H
#define HS_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/error.h"
#include "src/log.h"

enum hs_state {
	HS_STATE_USED = 0,
	HS_STATE_FREE = 1,
};

/* Where a block sits: an index into its backend's table of places
 * (struct hs_place, heap->places), in 4 bits.  Each backend numbers its own
 * places (glibc.h's HS_GL_*, jemalloc.h's HS_JE_*) in three ranges, so that
 * a block's state needs no table:
 *   0-6   in use by the program
 *   7     in use by the allocator itself (glibc's tcache struct): counted
 *         reachable, never a node of the graph
 *   8-15  free
 * Nothing above the backends names a place. */
enum { HS_WHERE_INTERNAL = 7, HS_WHERE_FREE = 8, HS_WHERE_MAX = 16 };

/* What the analyses need to know of a place, in the allocator's words. */
enum hs_place_flags {
	HS_PLACE_CLASSED = 2,   /* carved from a size class: the usable size is
				 * what hs_heap_size_class gives the request */
	HS_PLACE_PAGES = 4,     /* its own mapping: requests are rounded to a
				 * page (the backend's slack knows its size) */
};
struct hs_place {
	const char *name;       /* "bin", "slab": where in list, show, info */
	/* the bucket of frag's report a free block of this place counts in
	 * ("fastbins", "slabs"; analyzers/frag.c), NULL: none */
	const char *frag;
	uint8_t flags;          /* enum hs_place_flags */
	/* Bytes before the address that the block owns (its header; a glibc
	 * heap chunk owns only its size field: its prev_size belongs to the
	 * chunk before when that one is in use). */
	uint8_t header;
	/* A block with a chunk (glibc): the chunk starts chunk_before bytes
	 * below the address (0: no chunk, jemalloc), and is overhead bytes
	 * larger than the usable size. */
	uint8_t chunk_before, overhead;
	/* How far below the usable size a request it served can be, when
	 * the place itself says (pymalloc's classes go by 16); 0: the
	 * backend's slack. */
	uint16_t slack;
};

enum { HS_ARENA_NONE = 0xffff, HS_ARENA_UNSET = 0x10000 };

/* An allocation as a walker hands it in (hs_heap_add, hs_heap_merge). */
struct hs_alloc_in {
	uint64_t addr;              /* user address */
	uint64_t size : 44;         /* usable bytes */
	uint64_t where : 4;         /* its place: heap->places[where] */
	uint64_t arena : 16;        /* arena index, HS_ARENA_NONE if none */
};

/* An allocation of the finished heap, 12 bytes: the table is the largest
 * thing heapsift keeps per block, and it lives through every analysis.
 * Addresses lie below 2^47 (x86-64's user half; hs_heap_finish leaves a
 * block above it out), sizes below 2^44.  The arena is kept apart, by runs of
 * blocks (hs_heap_arena).
 *
 * GCC computes with a bit-field in the field's own width: a->addr + k
 * wraps at 2^48, not 2^64.  An address below 2^47 plus a size below 2^44
 * stays below 2^48; cast to uint64_t before anything larger (and before
 * printf). */
struct __attribute__((packed, aligned(4))) hs_alloc {
	uint64_t addr : 48;         /* user address */
	uint64_t size : 44;         /* usable bytes */
	uint64_t where : 4;         /* its place: heap->places[where] */
};
_Static_assert(sizeof(struct hs_alloc) == 12, "12-byte allocation records");
#define HS_ALLOC_ADDR_LIMIT (1ull << 47)

static inline enum hs_state hs_where_state(unsigned where)
{
	return where >= HS_WHERE_FREE ? HS_STATE_FREE : HS_STATE_USED;
}

static inline enum hs_state hs_alloc_state(const struct hs_alloc *a)
{
	return hs_where_state(a->where);
}

struct hs_arena {
	uint64_t addr;              /* struct malloc_state address */
	uint64_t top;               /* top chunk */
	uint64_t top_size;
	uint64_t system_mem;
	uint64_t covered;           /* bytes of system_mem the walk accounts for */
	bool uninitialized;     /* glibc: malloc never set the arena up */
	uint32_t nheaps;            /* heap segments walked */
	uint32_t attached_threads;
	uint64_t used_count, used_bytes, free_count, free_bytes;
	uint64_t bin_chunks;        /* chunks the arena's bins list */
	uint64_t fastbin_chunks;    /* chunks its fastbins list */
	bool main;
	bool partial;               /* walk stopped early (see warnings) */
};

/* Address ranges the allocator owns. */
enum hs_region_kind {
	HS_REGION_HEAP,     /* an arena heap (reserved span, headers included) */
	HS_REGION_MMAPPED,  /* the mapping of one mmapped chunk */
	HS_REGION_META,     /* allocator state outside heaps (main_arena, mp_) */
};

struct hs_region {
	uint64_t start, end;
	enum hs_region_kind kind;
};

/* A slab allocator's small size class in one arena (jemalloc's bins):
 * every slab of that class, its regions and where they are. */
struct hs_size_class {
	uint32_t arena, index;      /* index: the allocator's class number */
	uint64_t size;              /* region size */
	uint64_t slabs, regions;    /* regions: slabs x regions per slab */
	uint64_t free;              /* free in the slabs' bitmaps */
	uint64_t tcache;            /* handed to thread caches, not to the program */
};

/* How the walker found one thing it needed (glibc: "layouts",
 * "main_arena", "mp_", "tcache"): how is "dwarf" (the library's debug
 * info), "symbol" (its symbol table), "layout_row" (a row of
 * formats/gllayout.c), "disassembly" (capstone on exported functions) or
 * "not_found"; detail says which file, row or function. */
struct hs_found {
	const char *item;
	const char *how;
	char detail[192];
};
enum { HS_HEAP_MAX_FOUND = 6 };

struct hs_backend;
struct hs_pymalloc;

/* The first and the last block of a run, as far as hs_heap_finish looks
 * at them (totals_only). */
struct hs_run_ends {
	uint64_t first_addr, first_header, last_addr, last_end;
};

struct hs_heap {
	const struct hs_backend *backend;  /* analyzers/alloc/backend.h */
	const char *allocator;      /* the backend's name: "glibc", "jemalloc" */
	/* HS_WHERE_MAX of them: the backend's, and a layer's above it
	 * (pymalloc's, analyzers/alloc/pymalloc.h) in places the backend
	 * leaves unnamed */
	const struct hs_place *places;
	struct hs_place own_places[HS_WHERE_MAX];
	struct hs_found found[HS_HEAP_MAX_FOUND];
	size_t nfound;
	bool headerless;            /* blocks have no header (jemalloc): no
				     * chunk before the user address */
	char *version;              /* allocator version, if known */
	/* the blocks, sorted by address, once hs_heap_finish has run */
	struct hs_alloc *allocs;
	size_t nallocs;
	/* the blocks as the walkers hand them in, until hs_heap_finish, in
	 * the final 12-byte form (most walks are sorted already, and the
	 * table is then finished where it is); the arenas by run (run_arena) */
	struct hs_alloc *build;
	size_t cap;
	/* blocks handed in past 2^47, left out as they come: how many, and
	 * the lowest (hs_heap_finish names it) */
	size_t past;
	uint64_t first_past;
	/* the blocks' arenas: runs of consecutive blocks of one arena, each
	 * from its first block's index (hs_heap_arena) */
	struct hs_arena_run {
		size_t first;
		uint32_t arena;
	} *arena_runs;
	size_t narena_runs;
	/* Blocks and their usable bytes by place (hs_alloc.where), counted by
	 * hs_heap_finish. */
	uint64_t count_where[HS_WHERE_MAX], bytes_where[HS_WHERE_MAX];
	/* Counted, not kept (hs_walk_options.totals_only, for a caller that
	 * reads only totals): allocs stays empty while nallocs, count_where
	 * and bytes_where count the blocks as they come, and the order and
	 * overlaps hs_heap_finish checks are checked block by block within a
	 * run and from the runs' ends between them.  needs_blocks: a check
	 * failed, which only the blocks themselves can tell about: walk
	 * again keeping them (the caller's part). */
	bool totals_only, needs_blocks;
	struct hs_run_ends run;         /* the current run's, once it has a block */
	size_t run_blocks;
	struct hs_run_ends *ends;       /* the runs' before it */
	size_t nends, endcap;
	size_t *runs;               /* start index of each sorted run */
	uint32_t *run_arena;        /* the arena of each run's blocks */
	size_t nruns, runcap;
	uint32_t cur_arena;         /* the last run's, HS_ARENA_UNSET before
				     * its first block */
	struct hs_arena *arenas;
	size_t narenas, arenacap;
	uint64_t mmap_count, mmap_bytes;           /* found by the scan */
	uint64_t mmap_expected, mmap_expected_bytes; /* what mp_ says */
	uint32_t ntcaches;          /* thread caches read */
	uint64_t mmap_threshold;    /* requests this big are mmapped (0: unknown) */
	struct hs_region *regions;  /* sorted by start after hs_heap_finish */
	size_t nregions, regcap;
	bool partial;               /* some part could not be walked */
	/* bytes the allocator's own counters say it holds that the walk could
	 * not account for (glibc: system_mem and mp_.mmapped_mem) */
	uint64_t unaccounted_bytes;
	struct hs_size_class *classes;  /* slab allocators: by arena, then size */
	size_t nclasses;
	uint64_t metadata_bytes;    /* memory the allocator mapped for its own
				     * metadata (jemalloc's base blocks; glibc's
				     * state lives in libc's data: 0) */
	uint64_t page_size;         /* the allocator's page (jemalloc) */
	/* The allocator's own counters, the backend's to read and write out
	 * (glibc: struct hs_mallinfo2; jemalloc: struct hs_je_stats); one
	 * flat allocation, freed with the heap.  NULL: none. */
	void *stats;
	/* CPython's pymalloc, when its pools were found (one flat
	 * allocation, freed with the heap) */
	struct hs_pymalloc *pymalloc;
};

/* A block's place in its backend's table. */
static inline const struct hs_place *hs_alloc_place(const struct hs_heap *heap,
						    const struct hs_alloc *a)
{
	return &heap->places[a->where];
}

/* The place's name, "?" for a place the backend does not define. */
static inline const char *hs_alloc_where(const struct hs_heap *heap,
					 const struct hs_alloc *a)
{
	const char *n = heap->places[a->where].name;
	return n ? n : "?";
}

/* The chunk, for allocators that have one (hs_place.chunk_before). */
static inline uint64_t hs_alloc_chunk(const struct hs_heap *heap,
				      const struct hs_alloc *a)
{
	return a->addr - heap->places[a->where].chunk_before;
}

static inline uint64_t hs_alloc_chunk_size(const struct hs_heap *heap,
					   const struct hs_alloc *a)
{
	return a->size + heap->places[a->where].overhead;
}

/* The usable size malloc(request) gives, by the backend's size classes
 * (hs_backend.size_class; the request itself when it has none).  Only
 * meaningful for small requests (no mmapped chunks, no large extents). */
uint64_t hs_heap_size_class(const struct hs_heap *heap, uint64_t request);
/* How far below a's usable size a request it served can be, by the
 * backend (hs_backend.slack, given a's place: a page for a block with its
 * own mapping, else the spacing of its size classes; 1 when it has none). */
uint64_t hs_heap_slack(const struct hs_heap *heap, const struct hs_alloc *a);

struct hs_heap *hs_heap_create(const struct hs_backend *backend);
/* What a walk's caller asks of it (hs_backend.walk); NULL: the defaults. */
struct hs_walk_options {
	/* only totals are read: the walk may leave the blocks uncounted
	 * (hs_heap.totals_only) */
	bool totals_only;
	/* the walk may use a thread of its own for part of its work */
	bool threads;
};
/* Records how item was found (hs_found); detail is printf-formatted. */
__attribute__((format(printf, 4, 5)))
void hs_heap_found(struct hs_heap *h, const char *item, const char *how,
		   const char *detail, ...);
void hs_heap_destroy(struct hs_heap *heap);
/* Starts a new sorted run (each heap segment walks in address order). */
struct hs_error *hs_heap_begin_run(struct hs_heap *heap);
/* hs_heap_add when the table is full, no run was begun, the block's
 * arena is not the run's or it lies past 2^47. */
struct hs_error *hs_heap_add_slow(struct hs_heap *heap, const struct hs_alloc_in *a);
/* hs_heap_add of a totals_only heap. */
static inline void hs_heap_count(struct hs_heap *heap, const struct hs_alloc_in *a)
{
	uint64_t header = heap->places[a->where].header;
	struct hs_run_ends *r = &heap->run;
	if (!heap->run_blocks++) {
		r->first_addr = a->addr;
		r->first_header = header;
	} else if (r->last_addr >= a->addr || r->last_end > a->addr - header) {
		heap->needs_blocks = true;  /* out of order, or overlapping */
	}
	r->last_addr = a->addr;
	r->last_end = a->addr + a->size;
	heap->count_where[a->where]++;
	heap->bytes_where[a->where] += a->size;
	heap->nallocs++;
}
/* Appends a to the current run (inline: walkers call it once a block). */
static inline struct hs_error *hs_heap_add(struct hs_heap *heap,
					   const struct hs_alloc_in *a)
{
	if (heap->nallocs < heap->cap && a->arena == heap->cur_arena &&
	    a->addr < HS_ALLOC_ADDR_LIMIT) {
		heap->build[heap->nallocs++] = (struct hs_alloc){
			.addr = a->addr, .size = a->size, .where = a->where};
		return NULL;
	}
	if (heap->totals_only) {
		hs_heap_count(heap, a);
		return NULL;
	}
	return hs_heap_add_slow(heap, a);
}
/* Makes room for n allocations in all. */
struct hs_error *hs_heap_reserve(struct hs_heap *heap, size_t n);
struct hs_error *hs_heap_add_arena(struct hs_heap *heap,
				   const struct hs_arena *a, size_t *ret);
struct hs_error *hs_heap_add_region(struct hs_heap *heap, uint64_t start,
				    uint64_t end, enum hs_region_kind kind);
/* Sorts by address, keeps the blocks in their 12-byte form (allocs; the
 * arenas in arena_runs) and counts them by place (count_where,
 * bytes_where).  A corrupt walk's blocks that lie past 2^47, or start
 * inside (or at) a block kept before them, are left out: the table is
 * sorted and disjoint even then, and HS_ERR_CORRUPT names the first one
 * and how many were left out, for the caller to refuse the heap or to
 * warn and go on.  Out of memory: no table. */
struct hs_error *hs_heap_finish(struct hs_heap *heap);
/* hs_heap_finish for a walker that goes on with what it can: a corrupt
 * walk's error (the blocks left out) becomes a warning on log and the
 * heap partial; only out of memory is returned. */
struct hs_error *hs_heap_finish_partial(struct hs_heap *heap, struct hs_log *log);
/* Adds n blocks sorted by address (a layer's, in places it named in
 * own_places) to a finished heap, and counts them by place.  A block that
 * overlaps another is an error, and the heap is left as it was. */
struct hs_error *hs_heap_merge(struct hs_heap *heap,
			       const struct hs_alloc_in *blocks, size_t n);
/* The arena of allocation id (hs_alloc_in.arena), HS_ARENA_NONE if none. */
uint32_t hs_heap_arena(const struct hs_heap *heap, size_t id);
/* The same for a pass over the blocks in increasing id order: *run (0
 * before the first call) follows the runs, so each call is O(1)
 * amortized instead of a search. */
static inline uint32_t hs_heap_arena_next(const struct hs_heap *heap, size_t *run,
					  size_t id)
{
	const struct hs_arena_run *r = heap->arena_runs;
	size_t n = heap->narena_runs;
	while (*run + 1 < n && r[*run + 1].first <= id)
		(*run)++;
	return n && r[*run].first <= id ? r[*run].arena : HS_ARENA_NONE;
}
/* Does [addr, addr + len) meet one of the allocator's regions (its
 * heaps, mmapped chunks, its own state)? */
bool hs_heap_in_regions(const struct hs_heap *heap, uint64_t addr, uint64_t len);
/* Sorts the regions again, after a layer added its own. */
void hs_heap_finish_regions(struct hs_heap *heap);
/* The allocation containing addr (user range [addr, addr+size)), or NULL. */
const struct hs_alloc *hs_heap_find(const struct hs_heap *heap, uint64_t addr);

#endif
