/* Dominator tree and retained sizes (semi-NCA, iterative).
 *
 * The graph is given as two compressed-row blocks so that the heap's pointer
 * graph is used in place, not copied:
 *   nodes [0, na):  head_off/head_adj, targets are node ids;
 *   nodes [na, n):  rows of varints (src/edgerow.h), row k (node na + k)
 *                   in tail_rows where tail_index says, read from k;
 *                   targets are their ids (flags dropped) + na.
 * Node 0 is the entry.  For the heap: 0 is the super-root, then the "leaked"
 * pseudo-root, then one node per named root, then the allocations.
 *
 * Semi-NCA (Georgiadis, Tarjan, Werneck 2006), as in LLVM's
 * SemiNCAInfo: a DFS numbering, semi-dominators by path-compressed eval in
 * reverse preorder, then idom[w] = NCA of parent and semi by walking up.
 * Iterative throughout: chains of 10^7 nodes are real in heaps.
 */
#ifndef HS_DOMINATORS_H
#define HS_DOMINATORS_H

#include <stdbool.h>
#include <stdint.h>

#include "src/edgerow.h"
#include "src/error.h"
#include "src/log.h"
#include "src/rankset.h"
#include "src/varint.h"

#define HS_DOM_NONE UINT32_MAX

struct hs_domgraph {
	uint32_t n, na;
	const uint32_t *head_off, *head_adj;
	const struct hs_edgerow_index *tail_index;  /* n - na rows */
	const uint8_t *tail_rows;
	unsigned nthreads;  /* 0 or 1: one; 2 or more: two build the reverse graph */
	/* the predecessor lists' entries take 3 bytes below 2^24 reached
	 * nodes, else 4; wide_lists: 4 at any size (for the tests) */
	bool wide_lists;
	/* keep the order of the search (struct hs_domtree's order) */
	bool keep_order;
	struct hs_log *log; /* progress; may be NULL */
};

struct hs_domtree {
	uint32_t n;
	uint32_t *idom;        /* per node; HS_DOM_NONE if unreachable; idom[0] = 0 */
	uint32_t reached;      /* nodes reachable from 0 */
	/* The nodes that dominate a node other than themselves, and by their
	 * rank in this set: the sum of weight over the nodes each dominates,
	 * and how many those are (itself included).  Both in one word,
	 * inner_sum[k] = sum << cbits | count, when the total weight fits
	 * in 64 - cbits bits (cbits: enough for the reached nodes); else
	 * (wide) inner_sum[k] is the sum and inner_count[k] the count.
	 * Every other node retains its own weight alone (or nothing when
	 * unreached): see hs_domtree_retained and hs_domtree_count. */
	struct hs_rankset inner;
	uint64_t *inner_sum;
	uint32_t *inner_count;  /* wide only */
	unsigned cbits;
	/* the weight given to hs_dominators_compute, for the other nodes */
	uint64_t (*weight)(void *arg, uint32_t node);
	void *warg;
	/* With keep_order: the reached nodes in the search's preorder, where
	 * each comes after its dominator (a dominator is on every path to the
	 * node, the search's own included), as differences from the node
	 * before (zigzag varints, src/varint.h): read with
	 * hs_domtree_order_next.  Else NULL. */
	uint8_t *order;
	size_t order_len;
	/* the predecessor lists' lengths were counted a second time, the
	 * slow way: a row named a target twice (never in a heap's graph,
	 * whose rows name each target once) */
	bool recounted;
	/* What the computation did, to show how it grows with the graph
	 * (--stats): edges the search read; predecessors filed in the lists
	 * (edges into a node the search had seen, less the tree's); steps of
	 * the semi-dominators' evaluation (a predecessor looked at, or a
	 * link of its path followed); steps up the dominator chains to the
	 * nearest common ancestors. */
	struct hs_domwork {
		uint64_t searched, filed, semi_steps, nca_steps;
	} work;
};

/* The nodes of t->order, from the entry on:
 *   struct hs_domorder it = hs_domtree_order(t);
 *   uint32_t v;
 *   while (hs_domtree_order_next(&it, &v)) ... */
struct hs_domorder {
	const uint8_t *p, *end;
	uint32_t v;
};

static inline struct hs_domorder hs_domtree_order(const struct hs_domtree *t)
{
	return (struct hs_domorder){t->order, t->order + t->order_len, 0};
}

static inline bool hs_domtree_order_next(struct hs_domorder *it, uint32_t *v)
{
	if (it->p >= it->end)
		return false;
	it->v = (uint32_t)(it->v + hs_unzigzag(hs_varint_get(&it->p)));
	*v = it->v;
	return true;
}

/* The order read HS_DOMORDER_AHEAD nodes ahead, for walks that read
 * per-node data at random and ask for it early:
 *   struct hs_domorder_ahead a;
 *   hs_domorder_ahead_init(&a, t);
 *   uint32_t v, u;
 *   while (hs_domorder_ahead_next(&a, &v, &u))
 *           (prefetch for u, which comes HS_DOMORDER_AHEAD nodes later
 *            (HS_DOM_NONE near the end); then do v) */
enum { HS_DOMORDER_AHEAD = 16 };

struct hs_domorder_ahead {
	struct hs_domorder it;
	uint32_t ring[HS_DOMORDER_AHEAD];
	unsigned n, head;
};

static inline void hs_domorder_ahead_init(struct hs_domorder_ahead *a,
					  const struct hs_domtree *t)
{
	a->it = hs_domtree_order(t);
	a->n = a->head = 0;
	while (a->n < HS_DOMORDER_AHEAD && hs_domtree_order_next(&a->it, &a->ring[a->n]))
		a->n++;
}

static inline bool hs_domorder_ahead_next(struct hs_domorder_ahead *a, uint32_t *v,
					  uint32_t *ahead)
{
	if (!a->n)
		return false;
	*v = a->ring[a->head];
	if (hs_domtree_order_next(&a->it, &a->ring[a->head])) {
		*ahead = a->ring[a->head];
	} else {
		*ahead = HS_DOM_NONE;
		a->n--;
	}
	a->head = (a->head + 1) % HS_DOMORDER_AHEAD;
	return true;
}

/* weight(arg, v) is node v's own size (weight may be NULL: all 1); it is
 * called again by hs_domtree_retained, so arg must live as long as the
 * tree.
 * Memory while searching: 8.5 bytes per node, plus two streams of 1 to
 * 5 bytes per node (on heaps, 1 to 2.3: the nodes in preorder as
 * differences, the DFS parents as distances), plus 4 bytes per node that
 * an edge other than a DFS tree edge enters (the reverse graph has rows
 * for those only; 8 with two threads) and 4 per such edge; the DFS stack
 * grows with the number of branching nodes on the deepest path, not
 * with n.  While the results are filled in, 4 bytes per node and the
 * first stream beside them.  Results: 4 bytes per node (idom) and 0.25 for the set of inner
 * nodes, plus 8 bytes per node that dominates another (on a heap, the
 * heads of lists and trees and their inner nodes, not the leaves); 12
 * when the total weight needs more than 64 bits less those of the
 * number of reached nodes; with keep_order, the first stream too. */
struct hs_error *hs_dominators_compute(const struct hs_domgraph *g,
				       uint64_t (*weight)(void *arg, uint32_t node),
				       void *arg, struct hs_domtree **ret);
void hs_domtree_destroy(struct hs_domtree *t);

/* hs_domtree_retained of a node known to be reached (idom not read). */
static inline uint64_t hs_domtree_retained_reached(const struct hs_domtree *t, uint32_t v)
{
	uint32_t k = hs_rankset_index(&t->inner, v);
	if (k != HS_RANK_NONE)
		return t->inner_count ? t->inner_sum[k] : t->inner_sum[k] >> t->cbits;
	return t->weight ? t->weight(t->warg, v) : 1;
}

/* The sum of weight over the nodes v dominates (0 when unreached). */
static inline uint64_t hs_domtree_retained(const struct hs_domtree *t, uint32_t v)
{
	if (!hs_rankset_has(&t->inner, v) && t->idom[v] == HS_DOM_NONE)
		return 0;
	return hs_domtree_retained_reached(t, v);
}

/* hs_domtree_count of a node known to be reached (idom not read). */
static inline uint32_t hs_domtree_count_reached(const struct hs_domtree *t, uint32_t v)
{
	uint32_t k = hs_rankset_index(&t->inner, v);
	if (k != HS_RANK_NONE)
		return t->inner_count ? t->inner_count[k]
				      : (uint32_t)(t->inner_sum[k] & ((1ull << t->cbits) - 1));
	return 1;
}

/* The nodes v dominates, itself included (0 when unreached). */
static inline uint32_t hs_domtree_count(const struct hs_domtree *t, uint32_t v)
{
	if (!hs_rankset_has(&t->inner, v) && t->idom[v] == HS_DOM_NONE)
		return 0;
	return hs_domtree_count_reached(t, v);
}

#endif
