/* Dominator tree and retained sizes (semi-NCA, iterative).
 *
 * The graph is given as two compressed-row blocks so that the heap's pointer
 * graph is used in place, not copied:
 *   nodes [0, na):  head_off/head_adj, targets are node ids;
 *   nodes [na, n):  tail_off/tail_adj indexed by (node - na), targets are
 *                   (tail_adj[i] & tail_mask) + na.
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

#include <stdint.h>

#include "src/log.h"

#include "src/error.h"

#define HS_DOM_NONE UINT32_MAX

struct hs_domgraph {
	uint32_t n, na;
	const uint32_t *head_off, *head_adj;
	const uint32_t *tail_off, *tail_adj;
	uint32_t tail_mask;
	unsigned nthreads;  /* 0 or 1: one; 2 or more: two build the reverse graph */
	struct hs_log *log; /* progress; may be NULL */
};

struct hs_domtree {
	uint32_t n;
	uint32_t *idom;        /* per node; HS_DOM_NONE if unreachable; idom[0] = 0 */
	uint64_t *retained;    /* per node: sum of weight over the nodes it dominates */
	uint32_t *retained_count; /* per node: nodes it dominates, itself included */
	uint32_t reached;      /* nodes reachable from 0 */
};

/* weight(arg, v) is node v's own size (weight may be NULL: all 1).
 * Memory while searching: at most 20 bytes per node, and 4 bytes per
 * edge that is not a DFS tree edge (the reverse graph keeps only those);
 * the DFS stack grows with the number of branching nodes on the deepest
 * path, not with n.  Results: 16 bytes per node. */
struct hs_error *hs_dominators_compute(const struct hs_domgraph *g,
				       uint64_t (*weight)(void *arg, uint32_t node),
				       void *arg, struct hs_domtree **ret);
void hs_domtree_destroy(struct hs_domtree *t);

#endif
