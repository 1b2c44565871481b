/* The pointer graph between used allocations, and the address map that
 * builds it.
 *
 * Address map: allocations are grouped into spans (runs with gaps under
 * 1 MiB); each span has a table with, for every 256-byte granule, the first
 * allocation that ends past the granule's start.  A lookup is a range check,
 * a binary search over the few spans, one table read and a short forward
 * scan: O(1) on average, which matters because the scan looks up every
 * word of the heap.
 *
 * Graph: compressed sparse rows, each row a run of varints (src/edgerow.h)
 * found through an index of 2 bytes a row: row i holds the edges of
 * allocation i, read with hs_graph_edges.  An edge is the target's id with HS_EDGE_INTERIOR
 * set when the pointer hit the target's interior rather than its start,
 * or HS_EDGE_RULE when it hit the interior where a header rule (rules.h)
 * takes it for a start.  Edges of one source are sorted and unique (a
 * start pointer wins over a rule's, which wins over an interior one),
 * self-pointers are dropped.  Most edges take a byte: a block mostly
 * points to blocks allocated near it.  Sources and targets are the used
 * allocations that belong to the program (not free, not allocator-internal).
 * Which word of the source held the pointer is not stored: rescan the
 * source (hs_graph_edges_at) when it is needed.
 */
#ifndef HS_GRAPH_H
#define HS_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"
#include "analyzers/rules.h"
#include "formats/elfcore.h"
#include "src/edgerow.h"
#include "src/log.h"

#define HS_EDGE_INTERIOR 0x80000000u
#define HS_EDGE_RULE 0x40000000u
#define HS_EDGE_FLAGS (HS_EDGE_INTERIOR | HS_EDGE_RULE)
#define HS_EDGE_ID(e) ((e) & ~HS_EDGE_FLAGS)
#define HS_EDGE_MAX_IDS HS_EDGE_RULE    /* ids are below this */
#define HS_NO_ALLOC UINT32_MAX

/* Per granule of a span, the first allocation that ends past the
 * granule's start, in two parts: group_first per group of
 * HS_ADDRMAP_GROUP granules (the group's first granule's), and rel, per
 * granule, how many allocations past that.  The blocks are sorted and
 * disjoint, so their ends rise: a group's 16 KiB hold fewer than 2^16 of
 * them, and rel fits in 16 bits (half the map's memory of 32-bit
 * entries; the group's entry stays in the cache).  A rel clamped at
 * 2^16 - 1 would still be right: the lookup walks on from a block before
 * the granule's first. */
enum { HS_ADDRMAP_GROUP_SHIFT = 6 };
struct hs_addrmap_span {
	uint64_t base, end;     /* [base, end): base is granule aligned */
	uint32_t first_id;      /* allocations first_id .. last_id - 1 */
	uint32_t last_id;
	uint32_t *group_first;  /* per HS_ADDRMAP_GROUP granules */
	uint16_t *rel;          /* per granule */
};

struct hs_addrmap {
	const struct hs_heap *heap;
	uint64_t lo, hi;
	struct hs_addrmap_span *spans;
	size_t nspans;
};

struct hs_graph {
	struct hs_addrmap map;
	uint32_t n;
	struct hs_edgerow_index index;  /* where each row starts in rows */
	uint8_t *rows;
	uint64_t nedges;
	uint64_t words_scanned;
	/* Per allocation, the header rule that some pointer into it matched
	 * (enum hs_rule), or NULL when no rule is on.  The mark reads it
	 * (its via), nothing after: hs_graph_drop_rule_of frees it then. */
	uint8_t *rule_of;
	const struct hs_rules *rules;
	/* With CPython's objects among the blocks (rules->py): per
	 * allocation, how many of the scanned words point to the start of the
	 * object it holds (hs_py_is_start; saturating at UINT32_MAX), for
	 * hs_python_refs, which needs them once and frees them; else NULL */
	uint32_t *pystarts;
};

/* Allocation v's edges: while (hs_edges_next(&it, &e)) ... */
static inline struct hs_edges hs_graph_edges(const struct hs_graph *g, uint32_t v)
{
	return hs_edgerow(g->rows, &g->index, v);
}

static inline bool hs_alloc_in_graph(const struct hs_alloc *a)
{
	return a->where < HS_WHERE_INTERNAL;  /* used by the program */
}

/* The words of allocation src that are not references (CPython's GC
 * heads and values prefixes, and the rounding past an object's end:
 * analyzers/python.h; a stdio stream's links in libc's list of streams:
 * analyzers/files.h): [at, at + n) and the last tail words.  The scan,
 * and whoever lists a block's pointers, skips them (hs_py_skip_word). */
static inline struct hs_py_skip hs_graph_skip(const struct hs_graph *g, uint32_t src)
{
	if (g->rules && g->rules->files) {
		uint32_t at, n;
		hs_files_skip(g->rules->files, src, &at, &n);
		if (n)
			return (struct hs_py_skip){at, n, 0};
	}
	return g->rules && g->rules->py ?
	       hs_py_skip_of(g->rules->py, src, g->map.heap->allocs[src].size / 8) :
	       (struct hs_py_skip){0, 0, 0};
}

/* The allocation whose usable range holds addr (any state), or HS_NO_ALLOC. */
uint32_t hs_addrmap_lookup(const struct hs_addrmap *map, uint64_t addr);

/* Builds the graph with up to nthreads threads; rules (may be NULL) must
 * outlive the graph, and get their learned offsets from it. */
struct hs_error *hs_graph_build(const struct hs_core *core,
				const struct hs_heap *heap,
				struct hs_rules *rules, unsigned nthreads,
				struct hs_log *log, struct hs_graph **ret);
/* hs_graph_build that calls beside(arg, g) once g's address map is made,
 * while the scan goes on, and after(arg, g) (either may be NULL) on the
 * caller's thread once g is made, before it returns.  With two threads
 * or more, beside runs on a thread of its own, which takes the scan's
 * parts left once it returns, and after runs while beside may still run;
 * with one, beside runs on the caller's thread, then the scan.  beside
 * may read g's map (the hs_graph_*target and hs_graph_prefetch* lookups),
 * n and rules, and nothing else of g: the rows are being made.  It runs
 * even when the build fails after it; not when the build fails before
 * (the map).  after runs only when the build succeeds; what it does must
 * not touch what beside does (the log's warnings included: the log is
 * one thread's at a time). */
struct hs_error *hs_graph_build_beside(const struct hs_core *core,
				       const struct hs_heap *heap,
				       struct hs_rules *rules, unsigned nthreads,
				       struct hs_log *log,
				       void (*beside)(void *arg, const struct hs_graph *g),
				       void (*after)(void *arg, const struct hs_graph *g),
				       void *arg, struct hs_graph **ret);
void hs_graph_destroy(struct hs_graph *g);

/* Frees rule_of, for the snapshot once the mark has read it (1 byte per
 * allocation that no later stage needs). */
void hs_graph_drop_rule_of(struct hs_graph *g);

/* Turns src's interior edges to the targets dst[0..n) (sorted, ascending)
 * into ones the header rule `rule` takes for a start (the typed rule,
 * decided after the scan): one pass over src's row.  Returns how many of
 * them were interior edges of src. */
size_t hs_graph_take_as_start(struct hs_graph *g, uint32_t src, const uint32_t *dst,
			      size_t n, enum hs_rule rule);

/* The program-owned allocation that a pointer value v refers to, with
 * *interior set when v is not its start; HS_NO_ALLOC otherwise. */
uint32_t hs_graph_target(const struct hs_graph *g, uint64_t v, bool *interior);

/* The same, with the cheap range test first (for scans of many words). */
static inline uint32_t hs_graph_hit(const struct hs_graph *g, uint64_t v,
				    bool *interior)
{
	if (v < g->map.lo || v >= g->map.hi)
		return HS_NO_ALLOC;
	return hs_graph_target(g, v, interior);
}

/* For a batch of lookups whose order matters (type propagation follows
 * pointers one at a time), in three stages, each value with a probe of
 * its own: first hs_graph_prefetch(g, v, &p) for each value, which finds
 * v's span and asks the cache for the address map's entry there; then
 * hs_graph_prefetch_target(g, v, &p) for each, which reads that entry and
 * asks for the allocation record the lookup reads next, and returns its id
 * (the target's or one just before it, HS_NO_ALLOC when v is in no span)
 * for the caller to ask for its own per-allocation data; then
 * hs_graph_probe_target(g, v, &p, &interior), hs_graph_target's answer,
 * which starts from what the probe found. */
struct hs_graph_probe {
	const struct hs_addrmap_span *span;     /* v's, or NULL */
	uint32_t k;                             /* first block of v's granule */
};
void hs_graph_prefetch(const struct hs_graph *g, uint64_t v, struct hs_graph_probe *p);
uint32_t hs_graph_prefetch_target(const struct hs_graph *g, uint64_t v,
				  struct hs_graph_probe *p);
uint32_t hs_graph_probe_target(const struct hs_graph *g, uint64_t v,
			       const struct hs_graph_probe *p, bool *interior);

#endif
