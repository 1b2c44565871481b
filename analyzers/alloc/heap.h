/* The allocator-neutral heap model: every block an allocator walker found,
 * in one array sorted by address.  Index = allocation id.
 *
 * Walkers fill it through hs_heap_add(), one sorted run per heap segment;
 * hs_heap_finish() orders the runs (they do not overlap in a sane heap) in
 * O(n), falling back to a full sort when they interleave.
 */
#ifndef HS_HEAP_H
#define HS_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/error.h"

enum hs_state {
	HS_STATE_USED = 0,
	HS_STATE_FREE = 1,
};

/* Where a block sits: the allocator's own classification. */
enum hs_where {
	HS_WHERE_HEAP,      /* used chunk in an arena heap */
	HS_WHERE_MMAPPED,   /* used, directly mmapped */
	HS_WHERE_INTERNAL,  /* used by the allocator itself (tcache struct) */
	HS_WHERE_BIN,       /* free, in a regular bin (unsorted/small/large) */
	HS_WHERE_FASTBIN,   /* free, in a fastbin */
	HS_WHERE_TCACHE,    /* free, in a thread cache */
	HS_WHERE_TOP,       /* free, the top chunk (wilderness) */
	/* jemalloc */
	HS_WHERE_SMALL,     /* used, a region of a slab */
	HS_WHERE_LARGE,     /* used, a large extent (huge ones included) */
	HS_WHERE_SLAB,      /* free, a free region of a slab */
	HS_WHERE_DIRTY,     /* free pages, not yet purged */
	HS_WHERE_MUZZY,     /* free pages, lazily purged (MADV_FREE) */
	HS_WHERE_RETAINED,  /* free address space kept for reuse */
	HS_WHERE_COUNT
};
/* HS_WHERE_TCACHE is shared: a glibc chunk or a jemalloc region or large
 * extent held in a thread cache. */
extern const char *const hs_where_names[HS_WHERE_COUNT];

enum { HS_ARENA_NONE = 0xffff };

struct hs_alloc {
	uint64_t addr;              /* user address */
	uint64_t size : 44;         /* usable bytes */
	uint64_t where : 4;         /* enum hs_where */
	uint64_t arena : 16;        /* arena index, HS_ARENA_NONE if none */
};

/* Bytes before addr that the block owns (its header).  A glibc heap chunk
 * owns only its size field: its prev_size field belongs to the chunk before
 * it when that one is in use. */
static inline uint64_t hs_alloc_header(const struct hs_alloc *a)
{
	return a->where == HS_WHERE_MMAPPED ? 16 : 8;
}

static inline enum hs_state hs_alloc_state(const struct hs_alloc *a)
{
	switch (a->where) {
	case HS_WHERE_HEAP:
	case HS_WHERE_MMAPPED:
	case HS_WHERE_INTERNAL:
	case HS_WHERE_SMALL:
	case HS_WHERE_LARGE:
		return HS_STATE_USED;
	default:
		return HS_STATE_FREE;
	}
}

/* glibc's view of the block: its chunk (the header is 16 bytes before the
 * user pointer) and the chunk's size. */
static inline uint64_t hs_alloc_chunk(const struct hs_alloc *a)
{
	return a->addr - 16;
}

static inline uint64_t hs_alloc_chunk_size(const struct hs_alloc *a)
{
	return a->where == HS_WHERE_MMAPPED || a->where == HS_WHERE_TOP ?
		a->size + 16 : a->size + 8;
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

struct hs_heap {
	const struct hs_backend *backend;  /* analyzers/alloc/backend.h */
	const char *allocator;      /* the backend's name: "glibc", "jemalloc" */
	struct hs_found found[HS_HEAP_MAX_FOUND];
	size_t nfound;
	bool headerless;            /* blocks have no header (jemalloc): no
				     * chunk before the user address */
	char *version;              /* allocator version, if known */
	struct hs_alloc *allocs;
	size_t nallocs, cap;
	size_t *runs;               /* start index of each sorted run */
	size_t nruns, runcap;
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
};

/* The usable size malloc(request) gives: glibc's chunk rounding
 * (max(24, (request + 8 + 15) & ~15) - 8 on x86-64), or jemalloc's size
 * class (quantum 16: 8, 16, 32, 48, ... 128, then four classes per
 * doubling).  Only meaningful for small requests (no mmapped chunks, no
 * large extents). */
static inline uint64_t hs_heap_size_class(const struct hs_heap *heap,
					  uint64_t request)
{
	if (!heap->headerless) {
		uint64_t c = (request + 8 + 15) & ~(uint64_t)15;
		return (c < 32 ? 32 : c) - 8;
	}
	if (request <= 8)
		return 8;
	if (request <= 128)
		return (request + 15) & ~(uint64_t)15;
	int lg = 63 - __builtin_clzll(request - 1);
	uint64_t delta = 1ull << (lg - 2);
	return (request + delta - 1) & ~(delta - 1);
}

struct hs_heap *hs_heap_create(const struct hs_backend *backend);
/* Records how item was found (hs_found); detail is printf-formatted. */
__attribute__((format(printf, 4, 5)))
void hs_heap_found(struct hs_heap *h, const char *item, const char *how,
		   const char *detail, ...);
void hs_heap_destroy(struct hs_heap *heap);
/* Starts a new sorted run (each heap segment walks in address order). */
struct hs_error *hs_heap_begin_run(struct hs_heap *heap);
struct hs_error *hs_heap_add(struct hs_heap *heap, const struct hs_alloc *a);
/* Makes room for n allocations in all. */
struct hs_error *hs_heap_reserve(struct hs_heap *heap, size_t n);
struct hs_error *hs_heap_add_arena(struct hs_heap *heap,
				   const struct hs_arena *a, size_t *ret);
struct hs_error *hs_heap_add_region(struct hs_heap *heap, uint64_t start,
				    uint64_t end, enum hs_region_kind kind);
/* Sorts by address; overlapping blocks are an error (corrupt walk). */
struct hs_error *hs_heap_finish(struct hs_heap *heap);
/* The allocation containing addr (user range [addr, addr+size)), or NULL. */
const struct hs_alloc *hs_heap_find(const struct hs_heap *heap, uint64_t addr);

#endif
