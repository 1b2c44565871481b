/* The conservative mark: memcheck's leak classes, from the core alone.
 *
 *   reachable  a chain of start pointers from a root (a pointer that a
 *              header rule accepts counts as a start: see rules.h)
 *   possible   reachable only when interior pointers count
 *   leak-root  leaked, and no other leaked allocation points to it (a
 *              pointer to itself does not count); of a cycle of leaked
 *              allocations that nothing else leaked points to, exactly one
 *              member, the lowest address
 *   indirect   leaked, and pointed to by other leaked allocations
 *
 * Every indirect allocation is charged to one leak root: the first (in
 * address order of the roots) whose leaked subgraph reaches it.
 */
#ifndef HS_MARK_H
#define HS_MARK_H

#include <stdint.h>

#include "analyzers/graph.h"
#include "analyzers/rules.h"
#include "analyzers/roots.h"
#include "src/rankset.h"

enum hs_reach {
	HS_REACH_NONE,          /* free, or allocator-internal */
	HS_REACH_REACHABLE,
	HS_REACH_POSSIBLE,
	HS_REACH_LEAK_ROOT,
	HS_REACH_INDIRECT,
	HS_REACH_COUNT
};
extern const char *const hs_reach_names[HS_REACH_COUNT];

struct hs_class_total {
	uint64_t count, bytes;
};

struct hs_leak_root {
	uint32_t id;
	uint32_t held_count;    /* indirect allocations charged to it */
	uint64_t held_bytes;
};

struct hs_mark {
	uint8_t *reach;         /* enum hs_reach, per allocation */
	struct hs_class_total total[HS_REACH_COUNT];
	/* Blocks the live roots do not reach but a stale root word (a dead
	 * register, a red zone) points into: one bit each, NULL when there is
	 * no stale root; their count and bytes. */
	uint64_t *stale_ref;
	struct hs_class_total stale;
	/* The allocations that would not be reachable without a header rule
	 * (enum hs_rule): reachable only through a pointer that rule
	 * accepted, directly or through blocks so held; that rule for each,
	 * by rank in via_set (hs_mark_via).  NULL when no rule is on.
	 * Totals per rule. */
	struct hs_rankset via_set;
	uint8_t *via;
	struct hs_class_total via_total[HS_RULE_COUNT];
	struct hs_leak_root *leak_roots;   /* by address */
	size_t nleak_roots;
	/* edges of the graph the mark read, all its passes together: to
	 * show how it grows with the heap (--stats) */
	uint64_t edges_read;
};

struct hs_error *hs_mark_compute(const struct hs_core *core,
				 const struct hs_heap *heap,
				 const struct hs_roots *roots,
				 const struct hs_graph *graph,
				 struct hs_mark **ret);
void hs_mark_destroy(struct hs_mark *m);

/* The mark's first step alone: what the roots' start pointers reach
 * through start pointers.  It reads neither the header rules nor the
 * types (the typed rule's holds and learned offsets change only which
 * flag an edge that is no start pointer carries), so it can run as soon
 * as the graph is made, beside the types' propagation; the rows it reads
 * must not change meanwhile.  hs_mark_compute_from then goes on from it,
 * with the same result as hs_mark_compute. */
struct hs_mark_starts;
struct hs_error *hs_mark_starts(const struct hs_core *core,
				const struct hs_roots *roots,
				const struct hs_graph *graph,
				struct hs_mark_starts **ret);
void hs_mark_starts_destroy(struct hs_mark_starts *s);
/* hs_mark_compute from s (made on this graph and these roots; NULL: from
 * the start), which it takes, whether it succeeds or not. */
struct hs_error *hs_mark_compute_from(const struct hs_core *core,
				      const struct hs_heap *heap,
				      const struct hs_roots *roots,
				      const struct hs_graph *graph,
				      struct hs_mark_starts *s,
				      struct hs_mark **ret);

static inline bool hs_mark_stale_ref(const struct hs_mark *m, uint32_t id)
{
	return m->stale_ref && (m->stale_ref[id / 64] >> (id % 64) & 1);
}

/* The header rule without which allocation id would not be reachable,
 * HS_RULE_NONE when there is none. */
static inline enum hs_rule hs_mark_via(const struct hs_mark *m, uint32_t id)
{
	uint32_t k;
	if (!m->via || (k = hs_rankset_index(&m->via_set, id)) == HS_RANK_NONE)
		return HS_RULE_NONE;
	return (enum hs_rule)m->via[k];
}

/* Calls fn(value, root, address of the word) for every value root and every
 * aligned word of every memory root that is in the core, in root order;
 * stops early (returning false) when fn returns false.  Stale roots are
 * left out. */
bool hs_roots_scan(const struct hs_core *core, const struct hs_roots *roots,
		   bool (*fn)(uint64_t v, const struct hs_root *r,
			      uint64_t where, void *arg),
		   void *arg);

/* Calls fn for every root word in the core that points into allocation id
 * (start or interior), stale roots included (root->stale says which);
 * stops early when fn returns false. */
void hs_roots_scan_for(const struct hs_core *core, const struct hs_roots *roots,
		       const struct hs_graph *graph, uint32_t id,
		       bool (*fn)(const struct hs_root *root, uint64_t where,
				  uint64_t value, void *arg),
		       void *arg);

#endif
