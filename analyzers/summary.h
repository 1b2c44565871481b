/* Per-type and per-root summaries of a heap, shared by `types`, `top` and
 * the comparison of snapshots. */
#ifndef HS_SUMMARY_H
#define HS_SUMMARY_H

#include "analyzers/mark.h"
#include "analyzers/retain.h"
#include "analyzers/types.h"

struct hs_type_row {
	char *label;            /* "struct session", "char[]", "(untyped, 40 bytes)" */
	uint32_t type;          /* registry index, HS_NO_TYPE for untyped rows */
	uint64_t size;          /* untyped rows: the block size */
	bool arrays;            /* some block holds several elements */
	bool guessed;           /* inferred guesses of the type: "T?" */
	uint64_t count, bytes, retained, leaked_count, leaked_bytes;
};

/* One row per type (and one per type for its inferred guesses, "T?") and
 * one per size of untyped blocks (the usable size: glibc's and jemalloc's
 * usable sizes are their size classes), biggest retained
 * first.  Retained counts each block once: only where no dominator above
 * it has its row (a walk of the dominator tree, in its order: the tree
 * must have kept it, keep_order; else an error).  types may be NULL
 * (all untyped). */
struct hs_error *hs_type_rows(const struct hs_heap *heap,
			      const struct hs_mark *mark,
			      const struct hs_retain *retain,
			      const struct hs_types *types,
			      struct hs_type_row **ret, size_t *count);
void hs_type_rows_free(struct hs_type_row *rows, size_t count);

/* The row label of allocation id (as in hs_type_rows); buf of 600 bytes. */
const char *hs_type_label(const struct hs_heap *heap,
			  const struct hs_types *types, uint32_t id, char *buf,
			  size_t len);

struct hs_root_row {
	const char *name;       /* borrowed from the roots, or a constant */
	const char *kind;
	uint64_t retained, count;
};

/* One row per root name that retains something alone, plus "shared"
 * (blocks held by several roots, none alone) and "leaked", biggest first:
 * the rows add up to the heap. */
struct hs_error *hs_root_rows(const struct hs_retain *retain,
			      const struct hs_roots *roots,
			      struct hs_root_row **ret, size_t *count);

/* For every node, the root node that dominates it (its holder):
 * HS_NODE_SUPER when several do, HS_NODE_LEAKED for leaked blocks, the
 * node itself below retain->base, HS_DOM_NONE when it is not reached.
 * The map keeps, for each inner node of the dominator tree (one that
 * dominates another; 4 bytes each, by rank), its top: the allocation
 * node on its dominator chain whose own dominator is below base.  A
 * node's holder is its top's dominator; a leaf's top is its dominator's,
 * or the leaf itself when its dominator is below base. */
struct hs_root_map {
	const struct hs_domtree *tree;
	uint32_t base;
	uint32_t *top;
};

struct hs_error *hs_root_map_init(const struct hs_retain *retain,
				  struct hs_root_map *m);
void hs_root_map_fini(struct hs_root_map *m);

/* Node v's top (see above); v itself below base, HS_DOM_NONE when v is
 * not reached.  Every path from the super-root to v goes through it. */
static inline uint32_t hs_root_map_top(const struct hs_root_map *m, uint32_t v)
{
	const struct hs_domtree *t = m->tree;
	if (v < m->base)
		return v;
	uint32_t d = t->idom[v];
	if (d == HS_DOM_NONE)
		return HS_DOM_NONE;
	if (d < m->base)
		return v;
	uint32_t k = hs_rankset_index(&t->inner, v);
	if (k == HS_RANK_NONE)
		k = hs_rankset_index(&t->inner, d);  /* d dominates v: inner */
	return m->top[k];
}

/* The root node that dominates node v (see above). */
static inline uint32_t hs_root_map_get(const struct hs_root_map *m, uint32_t v)
{
	uint32_t u = hs_root_map_top(m, v);
	return u == HS_DOM_NONE || u < m->base ? u : m->tree->idom[u];
}

#endif
