/* Who holds the memory: the dominator tree of the heap, retained sizes,
 * retainer paths and leak suspects.
 *
 * Nodes: 0 the super-root; 1 the "leaked" pseudo-root, from which every
 * leak root hangs (so a leak root retains what it alone holds); then one
 * node per named root; then the allocations (node base + allocation id).
 * Edges: super-root to every root and to the pseudo-root; each root to the
 * allocations its words point into; the pseudo-root to every leak root;
 * the pointer graph (start and interior pointers alike).
 */
#ifndef HS_RETAIN_H
#define HS_RETAIN_H

#include "analyzers/dominators.h"
#include "analyzers/graph.h"
#include "analyzers/mark.h"
#include "analyzers/roots.h"

enum { HS_NODE_SUPER = 0, HS_NODE_LEAKED = 1, HS_NODE_FIRST_ROOT = 2 };

struct hs_retain {
	uint32_t base;              /* node of allocation 0 */
	uint32_t nroots;
	struct hs_domtree *tree;    /* with its order when asked (hs_type_rows) */
	/* root -> allocation edges, compressed rows over nodes [0, base) */
	uint32_t *head_off, *head_adj;
	uint64_t used_bytes;        /* bytes of the program's used blocks */
	uint64_t used_count;
	const struct hs_heap *heap; /* the allocations' sizes: their weights */
	unsigned nthreads;          /* for the passes over the tree */
};

struct hs_error *hs_retain_compute(const struct hs_core *core,
				   const struct hs_heap *heap,
				   const struct hs_roots *roots,
				   const struct hs_graph *graph,
				   const struct hs_mark *mark,
				   unsigned nthreads, bool keep_order,
				   struct hs_log *log, struct hs_retain **ret);
void hs_retain_destroy(struct hs_retain *r);

static inline uint32_t hs_retain_node(const struct hs_retain *r, uint32_t id)
{
	return r->base + id;
}

static inline bool hs_retain_is_alloc(const struct hs_retain *r, uint32_t node)
{
	return node >= r->base;
}

static inline const struct hs_root *hs_retain_root(const struct hs_retain *r,
						   const struct hs_roots *roots,
						   uint32_t node)
{
	return node >= HS_NODE_FIRST_ROOT && node < r->base ?
		&roots->roots[node - HS_NODE_FIRST_ROOT] : NULL;
}

/* The successors of a node, read with hs_retain_next: a head node's row
 * (node ids), or an allocation's row of the graph. */
struct hs_retain_succ {
	const uint32_t *p, *q;  /* a head node's row */
	struct hs_edges edges;  /* an allocation's */
	uint32_t shift;         /* r->base for an allocation's: 0 is none */
};

static inline struct hs_retain_succ hs_retain_succ(const struct hs_retain *r,
						   const struct hs_graph *g,
						   uint32_t node)
{
	if (node < r->base)
		return (struct hs_retain_succ){
			.p = r->head_adj + r->head_off[node],
			.q = r->head_adj + r->head_off[node + 1],
		};
	return (struct hs_retain_succ){
		.edges = hs_graph_edges(g, node - r->base), .shift = r->base,
	};
}

/* The next successor's node into *node; false at the end. */
static inline bool hs_retain_next(struct hs_retain_succ *s, uint32_t *node)
{
	if (!s->shift) {
		if (s->p == s->q)
			return false;
		*node = *s->p++;
		return true;
	}
	uint32_t e;
	if (!hs_edges_next(&s->edges, &e))
		return false;
	*node = HS_EDGE_ID(e) + s->shift;
	return true;
}

/* MAT's leak suspects: the top-level dominators (children of the super-
 * root or of the leaked pseudo-root) that retain at least `share` of the
 * used bytes, and the leaked blocks as a group when they do, biggest
 * first.  *ret is malloc'ed. */
struct hs_error *hs_retain_suspects(const struct hs_retain *r, double share,
				    uint32_t **ret, size_t *count);

/* The (at most n) allocation nodes of largest retained size, biggest
 * first, into out (room for n); returns how many. */
size_t hs_retain_top(const struct hs_retain *r, size_t n, uint32_t *out);

/* For each node of the tree that has one, its heavy child: the dominated
 * child that keeps at least `keep` (0.7) of the node's retained size.
 * With keep above 0.5 a node has at most one, its largest child (of
 * children that all retain nothing, the lowest node).  Two passes over
 * the tree; 4 bytes per node with a heavy child, and a bit per inner
 * node and per node.  For hs_retain_accumulation: a largest child that
 * is not heavy ends the walk anyway. */
struct hs_heavy {
	double keep;
	struct hs_rankset has;  /* inner nodes, by rank in tree->inner */
	uint32_t *child;        /* by rank in has */
};
struct hs_error *hs_retain_heavy_children(const struct hs_retain *r, double keep,
					  struct hs_heavy *ret);
void hs_retain_heavy_fini(struct hs_heavy *h);

/* Walks down from node to its heavy child (see hs_retain_heavy_children)
 * while it has one; returns the node where the drop comes (MAT's
 * accumulation point) and the depth.  A chain (a linked list: each block
 * dominating the next, of one kind as same_kind says, each step keeping
 * the ratio) would be walked to its very end; the walk stops at the head
 * of a chain of 3 or more instead, and *chain counts its blocks (0 when
 * none). */
uint32_t hs_retain_accumulation(const struct hs_retain *r, const struct hs_heavy *heavy,
				uint32_t node,
				bool (*same_kind)(void *arg, uint32_t a, uint32_t b),
				void *arg, uint32_t *depth, uint32_t *chain);

/* Shortest retainer paths to allocation `target`: a BFS from the super-root
 * gives each node its parent; *parent (n entries, HS_DOM_NONE when
 * unreached) is malloc'ed for the caller. */
struct hs_error *hs_retain_bfs(const struct hs_retain *r,
			       const struct hs_graph *g, uint32_t **parent);

#endif
