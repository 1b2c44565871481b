/* Fragmentation and footprint: where the memory goes, and why free memory
 * cannot be used.
 *
 * Per arena: system bytes, used bytes, free bytes by where they sit
 * (fastbins, thread caches, small and large bins by chunk size, top), the
 * largest free chunk, external fragmentation (1 - largest free / free,
 * without the top chunk, which grows), the allocator's overhead (what the
 * process pays beyond usable bytes: headers, rounding, the allocator's own
 * structures) and a histogram of free chunk sizes by powers of two.  Which
 * request sizes no free chunk can serve any more (the heap would grow).
 *
 * Footprint: every mapping of the core by kind, reserved (mapped) and
 * present (in the core), and the share of the writable footprint that the
 * malloc heap explains, counted in memory in use (arenas by their system
 * bytes, stacks from the stack pointer up: reservations cost nothing).
 */
#ifndef HS_FRAG_H
#define HS_FRAG_H

#include <stdbool.h>

#include "analyzers/alloc/heap.h"
#include "analyzers/roots.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"

enum hs_free_kind {
	HS_FREE_FASTBIN,
	HS_FREE_TCACHE,         /* glibc chunks, jemalloc regions and extents */
	HS_FREE_SMALL,          /* regular bins, chunks under 1 KiB */
	HS_FREE_LARGE,          /* regular bins, 1 KiB and more */
	HS_FREE_TOP,
	/* jemalloc */
	HS_FREE_SLABS,          /* free regions of slabs */
	HS_FREE_DIRTY,          /* free page runs, not yet purged */
	HS_FREE_MUZZY,          /* free page runs, lazily purged */
	HS_FREE_RETAINED,       /* address space kept for reuse: no memory */
	HS_FREE_KINDS
};
/* Free memory that fragmentation is about: every kind but glibc's top
 * chunk (the heap grows there) and jemalloc's retained address space. */
static inline bool hs_free_kind_usable(int k)
{
	return k != HS_FREE_TOP && k != HS_FREE_RETAINED;
}
extern const char *const hs_free_kind_names[HS_FREE_KINDS];

enum { HS_FRAG_BUCKETS = 48 };  /* histogram: chunk sizes up to 2^k */

/* jemalloc: one small size class of one arena (or of all). */
struct hs_frag_class {
	uint64_t size, slabs, regions, used, tcache, free;
};

struct hs_frag_arena {
	uint32_t index;
	bool main;
	uint64_t system;
	uint64_t used_count, used_bytes;        /* usable bytes */
	uint64_t free_count[HS_FREE_KINDS], free_bytes[HS_FREE_KINDS]; /* chunk bytes */
	uint64_t largest_free;                  /* largest free chunk, top excluded */
	uint64_t top;
	uint64_t overhead;                      /* system - used - free */
	uint64_t hist_count[HS_FRAG_BUCKETS], hist_bytes[HS_FRAG_BUCKETS];
	struct hs_frag_class *classes;          /* jemalloc: by size */
	size_t nclasses;
};

enum hs_map_kind {
	HS_MAP_ARENA,           /* malloc heaps */
	HS_MAP_MMAPPED,         /* malloc's mmapped chunks */
	HS_MAP_PYMALLOC,        /* CPython's pymalloc arenas */
	HS_MAP_STACK,
	HS_MAP_TEXT,            /* module code */
	HS_MAP_RODATA,          /* module read-only data */
	HS_MAP_DATA,            /* module writable data (file-backed) */
	HS_MAP_BSS,             /* module writable anonymous data */
	HS_MAP_ANON,            /* other anonymous memory */
	HS_MAP_FILE,            /* other file mappings */
	HS_MAP_SPECIAL,         /* vdso, vsyscall */
	HS_MAP_KINDS
};
extern const char *const hs_map_kind_names[HS_MAP_KINDS];

struct hs_frag {
	struct hs_frag_arena *arenas;
	size_t narenas;
	struct hs_frag_arena all;               /* every arena together */
	uint64_t reserved[HS_MAP_KINDS], present[HS_MAP_KINDS];
	uint64_t writable_reserved[HS_MAP_KINDS];
	/* writable memory in use: arenas by their system bytes, mmapped
	 * chunks by their mappings, stacks from each sp to the top, the rest
	 * as reserved (it depends on the mappings and the allocator's state
	 * only, not on the data: a redacted core gives the same) */
	uint64_t in_use[HS_MAP_KINDS];
	uint64_t stack_used;                    /* from each sp to the top */
	uint64_t mmap_threshold;                /* requests at least this big are mmapped */
	uint64_t largest_servable;              /* the largest request a free chunk serves */
	const char *allocator;                  /* heap->allocator */
	uint32_t kinds;                         /* 1 << enum hs_free_kind: the
						 * kinds the heap's places have */
	bool headerless;                        /* jemalloc: slabs of size classes and
						 * page runs, retained space, no top */
	uint64_t metadata;                      /* memory of the allocator's metadata */
};

struct hs_error *hs_frag_compute(const struct hs_core *core, struct hs_dwarf *dw,
				 const struct hs_heap *heap,
				 struct hs_frag **ret);
void hs_frag_destroy(struct hs_frag *f);

/* Free bytes fragmentation is about (not the top chunk, not retained
 * address space). */
uint64_t hs_frag_free_bytes(const struct hs_frag_arena *a);
/* Does this allocator have free blocks of kind k? */
bool hs_frag_kind_applies(const struct hs_frag *f, int k);
/* The largest request free memory serves: glibc's chunk less its header;
 * jemalloc's region or page run as is. */
uint64_t hs_frag_max_request(const struct hs_frag *f);
/* External fragmentation: 1 - largest free block / free bytes. */
double hs_frag_external(const struct hs_frag_arena *a);
/* Writable memory in use, and the share of it that malloc explains (with
 * pymalloc's arenas, which sit above it). */
uint64_t hs_frag_writable(const struct hs_frag *f);
double hs_frag_malloc_share(const struct hs_frag *f);
/* One line that answers first: fragmentation, memory outside malloc, live
 * growth, or how much of the heap is free. */
void hs_frag_verdict(const struct hs_frag *f, char *buf, size_t len);

struct hs_jsonw;
/* frag's JSON object (the frag command's, and the HTML report's section) */
void hs_frag_json(struct hs_jsonw *w, const struct hs_frag *f,
		  const struct hs_heap *heap);
/* The same with at most max_arenas arenas (those of most system bytes,
 * in index order), and "arenas_total", "arenas_truncated" (summaries). */
void hs_frag_json_capped(struct hs_jsonw *w, const struct hs_frag *f,
			 const struct hs_heap *heap, size_t max_arenas);

/* The chunk size glibc needs for a request of n bytes. */
static inline uint64_t hs_glibc_request2size(uint64_t n)
{
	uint64_t s = (n + 8 + 15) & ~15ull;
	return s < 32 ? 32 : s;
}

#endif
