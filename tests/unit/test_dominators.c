/* Semi-NCA against the definition on random graphs: v dominates w when
 * every path from the entry to w passes through v, i.e. when w cannot be
 * reached from the entry once v is removed.  Also checks retained sizes
 * (the sum of weights of the dominated nodes) and a long chain (no
 * recursion anywhere). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/dominators.h"
#include "analyzers/retain.h"
#include "analyzers/summary.h"
#include "src/edgerow.h"
#include "src/sort.h"
#include "tests/unit/check.h"

/* Allocation failures, injected: the n-th malloc, calloc or realloc from
 * now fails (0: none).  This binary's own allocator over glibc's; not in
 * a sanitized build, whose allocator must see every block. */
#if !defined(__SANITIZE_ADDRESS__)
#define FAIL_ALLOCS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
static long fail_in;

static bool failing(void)
{
	return fail_in > 0 && --fail_in == 0;
}

void *malloc(size_t n)
{
	return failing() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return failing() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return failing() ? NULL : __libc_realloc(p, n);
}
#endif


static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(check_rand() % n);
}

/* reachable-from-0 set with node `removed` deleted (HS_DOM_NONE: none) */
static void reach(uint32_t n, const uint32_t *off, const uint32_t *adj,
		  uint32_t removed, char *seen, uint32_t *stack)
{
	memset(seen, 0, n);
	if (removed == 0)
		return;
	size_t sp = 0;
	seen[0] = 1;
	stack[sp++] = 0;
	while (sp) {
		uint32_t v = stack[--sp];
		for (uint32_t k = off[v]; k < off[v + 1]; k++) {
			uint32_t w = adj[k];
			if (w != removed && !seen[w]) {
				seen[w] = 1;
				stack[sp++] = w;
			}
		}
	}
}

static uint64_t weight_of(void *arg, uint32_t v)
{
	return ((const uint64_t *)arg)[v];
}

/* graphs whose sums were packed, and wide */
static unsigned sums_seen[2];

/* weights are (1 to 100) << shift: 0 as a heap's, 40 for sums that still
 * fit beside the counts in a word, 50 for sums that mostly do not (the tree
 * keeps them wide, see struct hs_domtree) */
/* The root map (analyzers/summary.h) over tree t, nodes below base being
 * the roots, against walking up the dominators from every node: the top
 * (the last allocation node before a root node) and the holder. */
static void root_map_check(struct hs_domtree *t, uint32_t base)
{
	struct hs_retain r = {.base = base, .tree = t};
	struct hs_root_map map;
	struct hs_error *err = hs_root_map_init(&r, &map);
	CHECKF(!err, "root map: %s", err ? err->message : "");
	if (err)
		return;
	uint32_t bad = 0, first = 0, want = 0, want_top = 0;
	for (uint32_t v = 0; v < t->n; v++) {
		uint32_t x = v, top = v;
		while (x >= base && x != HS_DOM_NONE) {
			top = x;
			x = t->idom[x];
		}
		if (x == HS_DOM_NONE)
			top = HS_DOM_NONE;
		if ((hs_root_map_get(&map, v) != x || hs_root_map_top(&map, v) != top) &&
		    !bad++) {
			first = v;
			want = x;
			want_top = top;
		}
	}
	CHECKF(!bad, "n=%u base=%u: %u nodes with a wrong root or top, the first %u: "
	       "%u and %u, not %u and %u", t->n, base, bad, first,
	       hs_root_map_get(&map, first), hs_root_map_top(&map, first), want, want_top);
	hs_root_map_fini(&map);
}

/* The rows of `types` (analyzers/summary.h) over tree t, the nodes from
 * base on being allocations (untyped: a row per size, of 8 to 32 bytes;
 * some free, outside the rows), against walking up the dominators from
 * every node: a node retains for its row where no node above it has its
 * row.  Without the tree's order, hs_type_rows must refuse. */
static void type_rows_check(struct hs_domtree *t, uint32_t base)
{
	uint32_t na = t->n - base;
	struct hs_alloc *allocs = calloc(na + 1, sizeof(*allocs));
	uint8_t *reach = calloc(na + 1, 1);
	struct hs_heap *heap = calloc(1, sizeof(*heap));
	struct {
		uint64_t count, bytes, leaked_count, leaked_bytes, retained;
	} want[5] = {{0}};
	for (uint32_t i = 0; i < na; i++) {
		allocs[i].addr = 0x10000 + 64 * (uint64_t)i;
		allocs[i].size = 8 * (1 + (i % 4 == 3 ? rnd(4) : i % 3));
		allocs[i].where = rnd(10) ? 0 : HS_WHERE_FREE;
		reach[i] = (uint8_t)rnd(HS_REACH_COUNT);
	}
	heap->allocs = allocs;
	heap->nallocs = na;
	struct hs_mark mark = {.reach = reach};
	struct hs_retain r = {.base = base, .tree = t};
	struct hs_type_row *rows = NULL;
	size_t nrows = 0;
	struct hs_error *err = hs_type_rows(heap, &mark, &r, NULL, &rows, &nrows);
	if (!t->order) {
		CHECKF(err, "type rows without the tree's order: no error");
		hs_error_destroy(err);
		goto out;
	}
	CHECKF(!err, "type rows: %s", err ? err->message : "");
	if (err)
		goto out;
	size_t nsizes = 0;
	for (uint32_t v = base; v < t->n; v++) {
		const struct hs_alloc *a = &allocs[v - base];
		if (!hs_alloc_in_graph(a))
			continue;
		unsigned s = (unsigned)a->size / 8;
		nsizes += !want[s].count;
		want[s].count++;
		want[s].bytes += a->size;
		if (reach[v - base] == HS_REACH_LEAK_ROOT || reach[v - base] == HS_REACH_INDIRECT) {
			want[s].leaked_count++;
			want[s].leaked_bytes += a->size;
		}
		if (t->idom[v] == HS_DOM_NONE)
			continue;
		bool above = false;
		for (uint32_t x = t->idom[v]; !above; x = t->idom[x]) {
			above = x >= base && hs_alloc_in_graph(&allocs[x - base]) &&
				allocs[x - base].size == a->size;
			if (!x)
				break;
		}
		if (!above)
			want[s].retained += hs_domtree_retained(t, v);
	}
	CHECKF(nrows == nsizes, "n=%u base=%u: %zu type rows, expected %zu", t->n, base,
	       nrows, nsizes);
	for (size_t i = 0; i < nrows; i++) {
		const struct hs_type_row *x = &rows[i];
		unsigned s = (unsigned)x->size / 8;
		CHECKF(x->type == HS_NO_TYPE && s >= 1 && s <= 4 &&
		       x->count == want[s].count && x->bytes == want[s].bytes &&
		       x->leaked_count == want[s].leaked_count &&
		       x->leaked_bytes == want[s].leaked_bytes &&
		       x->retained == want[s].retained,
		       "n=%u base=%u: row %s: %llu blocks, retained %llu; expected %llu, %llu",
		       t->n, base, x->label, (unsigned long long)x->count,
		       (unsigned long long)x->retained, (unsigned long long)want[s].count,
		       (unsigned long long)want[s].retained);
	}
out:
	hs_type_rows_free(rows, nrows);
	free(allocs);
	free(reach);
	free(heap);
}

/* Graphs whose lengths of predecessor lists were counted again (a row
 * named a target twice), and not; graphs with a node of 256 or more
 * predecessors (the fast count's bytes overflow); of those, graphs where
 * 256 or more come from nodes not reached (their edges are counted, then
 * taken back out). */
static unsigned heavy_seen;

/* hs_retain_heavy_children against its definition: a node's heavy child
 * is the lowest child of it in the tree (checked above) that retains at
 * least `keep` of what the node retains. */
static void heavy_check(struct hs_domtree *t, uint32_t n, double keep)
{
	struct hs_retain r = {.tree = t};
	struct hs_heavy h;
	struct hs_error *err = hs_retain_heavy_children(&r, keep, &h);
	CHECKF(!err, "heavy children: %s", err ? err->message : "");
	if (err)
		return;
	for (uint32_t p = 0; p < n; p++) {
		uint32_t want = HS_DOM_NONE;
		for (uint32_t v = 1; v < n && want == HS_DOM_NONE; v++)
			if (t->idom[v] == p && v != p &&
			    (double)hs_domtree_retained(t, v) >= keep * (double)hs_domtree_retained(t, p))
				want = v;
		uint32_t k = hs_rankset_index(&t->inner, p), got = HS_DOM_NONE;
		if (k != HS_RANK_NONE && (k = hs_rankset_index(&h.has, k)) != HS_RANK_NONE)
			got = h.child[k];
		CHECKF(got == want, "n=%u keep %.2f: heavy child of %u is %u, expected %u",
		       n, keep, p, got, want);
		heavy_seen += want != HS_DOM_NONE;
	}
	hs_retain_heavy_fini(&h);
}

static unsigned recounts_seen[2], hubs_seen, hubs_cut_seen;

/* A random graph of n nodes and m edges, nodes [split, n) in the tail
 * block, weights << shift.  hub: half the edges go to node hub - 1 (0:
 * none).  unique: no row names a target twice, as in a heap's graph.
 * cut: no edge goes into the last cut nodes (not reached, unless
 * split is past them). */
static void random_graph_x(uint32_t n, uint32_t m, uint32_t split, unsigned shift,
			   uint32_t hub, bool unique, uint32_t cut)
{
	uint32_t *off = calloc(n + 1, sizeof(uint32_t));
	uint32_t *adj = malloc((m ? m : 1) * sizeof(uint32_t));
	uint32_t *src = malloc((m ? m : 1) * sizeof(uint32_t));
	uint64_t *weight = malloc(n * sizeof(uint64_t));
	for (uint32_t i = 0; i < m; i++) {
		src[i] = rnd(n);
		off[src[i] + 1]++;
	}
	for (uint32_t v = 0; v < n; v++)
		off[v + 1] += off[v];
	uint32_t *fill = malloc((n + 1) * sizeof(uint32_t));
	memcpy(fill, off, (n + 1) * sizeof(uint32_t));
	/* nodes of the tail block point only into the tail block */
	for (uint32_t i = 0; i < m; i++) {
		uint32_t lo = src[i] >= split ? split : 0;
		adj[fill[src[i]]++] = hub && hub - 1 >= lo && rnd(2) ? hub - 1 :
				      lo + rnd(n - cut - lo);
	}
	/* each row sorted; with unique, each target once (m shrinks) */
	bool twins = false;
	uint32_t kept = 0;
	for (uint32_t v = 0; v < n; v++) {
		uint32_t start = off[v], len = off[v + 1] - start;
		hs_sort_u32(adj + start, len);
		off[v] = kept;
		for (uint32_t i = 0; i < len; i++) {
			bool twin = i && adj[start + i] == adj[start + i - 1];
			if (twin && unique)
				continue;
			twins |= twin;
			adj[kept++] = adj[start + i];
		}
	}
	off[n] = m = kept;
	for (uint32_t v = 0; v < n; v++)
		weight[v] = (uint64_t)(1 + rnd(100)) << shift;

	/* the same graph as head block [0, split) + tail block [split, n),
	 * with the tail's targets stored relative to split and flag bits
	 * that must be dropped (like HS_EDGE_INTERIOR), as varint rows */
	uint32_t *toff = malloc((n - split + 1) * sizeof(uint32_t));
	uint32_t *tadj = malloc((m ? m : 1) * sizeof(uint32_t));
	uint32_t *hadj = malloc((m ? m : 1) * sizeof(uint32_t));
	uint32_t *hoff = malloc((split + 1) * sizeof(uint32_t));
	for (uint32_t v = 0; v <= split; v++)
		hoff[v] = off[v];
	memcpy(hadj, adj, off[split] * sizeof(uint32_t));
	for (uint32_t v = split; v <= n; v++)
		toff[v - split] = off[v] - off[split];
	for (uint32_t k = off[split]; k < m; k++)
		tadj[k - off[split]] = (adj[k] - split) | (uint32_t)rnd(4) << 30;
	struct hs_edgerow_index tix = {0};
	uint8_t *trows = NULL;
	CHECK(hs_edgerow_encode(toff, tadj, n - split, &tix, &trows));
	struct hs_domgraph g = {
		.n = n, .na = split,
		.head_off = hoff, .head_adj = hadj,
		.tail_index = &tix, .tail_rows = trows,
		/* half the graphs build the reverse graph with two threads */
		.nthreads = 1 + rnd(2),
		/* and half keep their predecessor lists in 4 bytes an entry */
		.wide_lists = rnd(2),
		/* and half their order, for the type rows */
		.keep_order = rnd(2),
	};
	struct hs_domtree *t = NULL;
	struct hs_error *err = hs_dominators_compute(&g, weight_of, weight, &t);
	CHECKF(!err, "compute failed: %s", err ? err->message : "");
	if (err)
		goto out;
	CHECKF(!t->recounted || twins, "n=%u m=%u: counted again, but no row names a "
	       "target twice", n, m);
	recounts_seen[t->recounted]++;
	if (hub) {
		uint32_t into = 0, cut_into = 0;
		for (uint32_t k = 0; k < m; k++) {
			into += adj[k] == hub - 1;
			cut_into += adj[k] == hub - 1 && k >= off[n - cut];
		}
		hubs_seen += into >= 256;
		hubs_cut_seen += cut_into >= 256 && !t->recounted;
	}

	/* naive: dom(v) = nodes that disappear when v is removed */
	char *seen0 = malloc(n), *seen = malloc(n);
	uint32_t *stack = malloc((m + n + 1) * sizeof(uint32_t));
	reach(n, off, adj, HS_DOM_NONE, seen0, stack);
	/* the sums are packed when the reached nodes' total weight fits
	 * beside a count of them */
	uint64_t total = 0;
	for (uint32_t v = 0; v < n; v++)
		total += seen0[v] ? weight[v] : 0;
	unsigned cbits = 64 - (unsigned)__builtin_clzll((uint64_t)t->reached + 1);
	bool wide = total >> (64 - cbits) != 0;
	if (t->inner.count) {
		CHECKF(wide == (t->inner_count != NULL), "weights << %u, total %llu, %u reached: sums %s",
		       shift, (unsigned long long)total, t->reached, t->inner_count ? "wide" : "packed");
		sums_seen[wide]++;
	}
	/* doms[w] = list of dominators, computed as: v dom w iff w not
	 * reached without v */
	char *dom = calloc((size_t)n * n, 1);
	for (uint32_t v = 0; v < n; v++) {
		if (!seen0[v])
			continue;
		reach(n, off, adj, v, seen, stack);
		for (uint32_t w = 0; w < n; w++)
			if (seen0[w] && !seen[w])
				dom[(size_t)v * n + w] = 1;
	}
	for (uint32_t w = 0; w < n; w++) {
		if (!seen0[w]) {
			CHECKF(t->idom[w] == HS_DOM_NONE, "unreachable %u has idom %u", w, t->idom[w]);
			continue;
		}
		if (w == 0) {
			CHECKF(t->idom[0] == 0, "idom of entry is %u", t->idom[0]);
			continue;
		}
		/* the idom is the strict dominator that every other strict
		 * dominator dominates */
		uint32_t expect = HS_DOM_NONE;
		for (uint32_t v = 0; v < n; v++) {
			if (v == w || !dom[(size_t)v * n + w])
				continue;
			bool closest = true;
			for (uint32_t u = 0; u < n; u++)
				if (u != w && u != v && dom[(size_t)u * n + w] &&
				    !dom[(size_t)u * n + v])
					closest = false;
			if (closest)
				expect = v;
		}
		CHECKF(t->idom[w] == expect, "n=%u m=%u: idom(%u) = %u, expected %u", n, m, w,
		      t->idom[w], expect);
	}
	for (uint32_t v = 0; v < n; v++) {
		if (!seen0[v]) {
			CHECKF(!hs_domtree_retained(t, v) && !hs_domtree_count(t, v),
			       "unreachable %u retains %llu/%u", v,
			       (unsigned long long)hs_domtree_retained(t, v),
			       hs_domtree_count(t, v));
			continue;
		}
		uint64_t sum = 0;
		uint32_t cnt = 0;
		for (uint32_t w = 0; w < n; w++)
			if (dom[(size_t)v * n + w]) {
				sum += weight[w];
				cnt++;
			}
		CHECKF(hs_domtree_retained(t, v) == sum && hs_domtree_count(t, v) == cnt,
		      "retained(%u) = %llu/%u, expected %llu/%u", v,
		      (unsigned long long)hs_domtree_retained(t, v), hs_domtree_count(t, v),
		      (unsigned long long)sum, cnt);
	}
	root_map_check(t, 1 + rnd(n));
	heavy_check(t, n, rnd(2) ? 0.7 : 0.55 + rnd(40) / 100.0);
	if (t->order) {
		/* the order: each reached node once, after its dominator */
		char *placed = calloc(n, 1);
		struct hs_domorder it = hs_domtree_order(t);
		uint32_t v, k = 0, bad = 0;
		while (hs_domtree_order_next(&it, &v)) {
			bool ok = v < n && seen0[v] && !placed[v] && (k ? placed[t->idom[v]] : !v);
			bad += !ok;
			k++;
			if (v < n)
				placed[v] = 1;
		}
		CHECKF(!bad && k == t->reached, "n=%u: %u of the order's %u nodes out of "
		       "place, %u reached", n, bad, k, t->reached);
		free(placed);
	}
	type_rows_check(t, 1 + rnd(n - 1));
	free(dom);
	free(seen0);
	free(seen);
	free(stack);
out:
	hs_domtree_destroy(t);
	free(off);
	free(adj);
	free(src);
	free(weight);
	free(fill);
	free(toff);
	free(tadj);
	hs_edgerow_index_fini(&tix);
	free(trows);
	free(hadj);
	free(hoff);
}

static void random_graph_w(uint32_t n, uint32_t m, uint32_t split, unsigned shift)
{
	random_graph_x(n, m, split, shift, 0, rnd(2), 0);
}

static void random_graph(uint32_t n, uint32_t m, uint32_t split)
{
	random_graph_w(n, m, split, 0);
}

/* 0 -> 1 -> ... -> n-1, plus a back edge from the end to 1; in the head
 * block (every node pushed on the DFS stack) or, but for node 0, in the
 * tail block (nodes with one successor are followed without a frame) */
static void long_chain(uint32_t n, bool tail, bool rows)
{
	uint32_t *off = malloc((n + 1) * sizeof(uint32_t));
	uint32_t *adj = malloc(n * sizeof(uint32_t));
	uint32_t k = 0;
	for (uint32_t v = 0; v < n; v++) {
		off[v] = k;
		if (v + 1 < n)
			adj[k++] = v + 1;
		else
			adj[k++] = 1;
	}
	off[n] = k;
	struct hs_domgraph g = {.n = n, .na = n, .head_off = off, .head_adj = adj,
				.keep_order = rows};
	struct hs_edgerow_index tix = {0};
	uint8_t *trows = NULL;
	if (tail) {
		/* the tail's offsets start at node 1's row, its targets are
		 * relative to node 1 */
		for (uint32_t i = 1; i < n; i++)
			adj[i] -= 1;
		if (!hs_edgerow_encode(off + 1, adj, n - 1, &tix, &trows))
			CHECK(!"the chain's rows encode");
		g = (struct hs_domgraph){
			.n = n, .na = 1, .head_off = off, .head_adj = adj,
			.tail_index = &tix, .tail_rows = trows,
			.nthreads = 2, .keep_order = rows,
		};
	}
	struct hs_domtree *t = NULL;
	struct hs_error *err = hs_dominators_compute(&g, NULL, NULL, &t);
	CHECKF(!err, "chain: %s", err ? err->message : "");
	if (t) {
		bool ok = true;
		for (uint32_t v = 1; v < n; v++)
			ok &= t->idom[v] == v - 1 && hs_domtree_retained(t, v) == n - v;
		CHECKF(ok, "chain of %u: wrong idom or retained", n);
		CHECKF(hs_domtree_retained(t, 0) == n, "chain: root retains %llu",
		      (unsigned long long)hs_domtree_retained(t, 0));
		/* a tree as deep as the chain */
		if (rows)
			type_rows_check(t, 1 + rnd(4));
	}
	hs_domtree_destroy(t);
	free(off);
	free(adj);
	hs_edgerow_index_fini(&tix);
	free(trows);
}

/* A large sparse graph, deep dominator trees: the root map with many
 * root nodes and with few. */
static void root_map_large(uint32_t n)
{
	uint32_t m = 2 * n;
	uint32_t *off = calloc(n + 1, sizeof(uint32_t));
	uint32_t *adj = malloc(m * sizeof(uint32_t));
	/* node v's successors: two of the nodes above it, mostly near it
	 * (long paths, deep dominator trees), and now and then anywhere */
	for (uint32_t v = 0, k = 0; v < n; v++) {
		off[v] = k;
		for (int j = 0; j < 2 && v + 1 < n; j++)
			adj[k++] = rnd(8) ? v + 1 + rnd(n - v - 1 < 16 ? n - v - 1 : 16) : rnd(n);
		off[v + 1] = k;
	}
	struct hs_domgraph g = {.n = n, .na = n, .head_off = off, .head_adj = adj};
	struct hs_domtree *t = NULL;
	struct hs_error *err = hs_dominators_compute(&g, NULL, NULL, &t);
	CHECKF(!err, "large: %s", err ? err->message : "");
	if (t) {
		root_map_check(t, 70000);
		root_map_check(t, 300);
		root_map_check(t, 1);
	}
	/* numbers past 2^16, in the lists' 3-byte entries and in 4-byte
	 * ones, with one thread and two: the same tree */
	for (int wide = 0; t && wide < 2; wide++) {
		g.wide_lists = wide;
		g.nthreads = 2 - (unsigned)wide;
		struct hs_domtree *u = NULL;
		err = hs_dominators_compute(&g, NULL, NULL, &u);
		CHECKF(!err, "large, wide %d: %s", wide, err ? err->message : "");
		uint32_t bad = 0;
		for (uint32_t v = 0; u && v < n; v++)
			bad += u->idom[v] != t->idom[v] ||
			       hs_domtree_retained(u, v) != hs_domtree_retained(t, v);
		CHECKF(u && !bad, "large, wide %d: %u nodes differ", wide, bad);
		hs_domtree_destroy(u);
	}
	hs_domtree_destroy(t);
	free(off);
	free(adj);
}

#ifdef FAIL_ALLOCS
static uint64_t unit_weight(void *arg, uint32_t v)
{
	(void)v;
	return *(const uint64_t *)arg;
}

/* One graph, every allocation of the computation failing in turn: an
 * error that says out of memory, or the same tree as without failures
 * (a second thread that cannot start leaves the work to the first);
 * never a tree that differs.  Node 0 points to the others in shuffled
 * order (the streams of the preorder's differences and the parents'
 * distances then outgrow what they reserve), and some of them to one
 * another. */
static void failing_allocations(uint32_t n, uint64_t weight)
{
	uint32_t m = (n - 1) + n / 4;
	uint32_t *off = calloc(n + 1, sizeof(uint32_t)), *adj = malloc(m * sizeof(uint32_t));
	for (uint32_t i = 0; i < n - 1; i++)
		adj[i] = 1 + i;
	for (uint32_t i = n - 2; i > 0; i--) {
		uint32_t j = rnd(i + 1), x = adj[i];
		adj[i] = adj[j];
		adj[j] = x;
	}
	off[1] = n - 1;
	/* n / 4 more edges, from nodes 1 .. n/4 to random nodes */
	for (uint32_t v = 1; v <= n / 4; v++) {
		adj[n - 1 + v - 1] = 1 + rnd(n - 1);
		off[v + 1] = off[v] + 1;
	}
	for (uint32_t v = n / 4 + 1; v < n; v++)
		off[v + 1] = off[v];
	struct hs_domgraph g = {
		.n = n, .na = n,
		.head_off = off, .head_adj = adj,
		.nthreads = 2,
	};
	struct hs_domtree *want = NULL;
	struct hs_error *err = hs_dominators_compute(&g, unit_weight, &weight, &want);
	CHECKF(!err, "without failures: %s", err ? err->message : "");
	unsigned failed = 0, same = 0;
	for (long k = 1; want && k < 10000; k++) {
		struct hs_domtree *t = NULL;
		fail_in = k;
		err = hs_dominators_compute(&g, unit_weight, &weight, &t);
		bool hit = fail_in == 0;
		fail_in = 0;
		if (err) {
			CHECKF(err == &hs_error_nomem, "allocation %ld failing: %s", k, err->message);
			CHECKF(!t, "allocation %ld failing: a tree and an error", k);
			failed++;
			continue;
		}
		bool ok = t && t->idom && t->reached == want->reached;
		for (uint32_t v = 0; ok && v < n; v++)
			ok = t->idom[v] == want->idom[v] &&
			     hs_domtree_retained(t, v) == hs_domtree_retained(want, v) &&
			     hs_domtree_count(t, v) == hs_domtree_count(want, v);
		CHECKF(ok, "allocation %ld failing: the tree differs", k);
		hs_domtree_destroy(t);
		same++;
		if (!hit)
			break;  /* every allocation had its turn */
	}
	/* the search allocates a dozen arrays and more, two streams grow */
	CHECKF(failed >= 12, "n=%u: only %u allocations failed, %u runs", n, failed, same);
	hs_domtree_destroy(want);
	free(off);
	free(adj);
}
#endif

int main(void)
{
	for (int i = 0; i < 400; i++) {
		uint32_t n = 2 + rnd(40);
		uint32_t m = rnd(3 * n);
		random_graph(n, m, n);
	}
	/* graphs whose tail block only points into itself, as the heap's
	 * allocations only point to allocations */
	for (int i = 0; i < 400; i++) {
		uint32_t n = 4 + rnd(40);
		uint32_t split = 1 + rnd(n / 2);
		random_graph(n, rnd(3 * n), split);
	}
	/* sparse graphs, as heaps are: most nodes have no successor or one */
	for (int i = 0; i < 200; i++) {
		uint32_t n = 20 + rnd(80);
		random_graph(n, n + rnd(n / 2), 1 + rnd(4));
	}
	/* sums of the size of a heap of petabytes */
	for (int i = 0; i < 200; i++) {
		uint32_t n = 20 + rnd(80);
		random_graph_w(n, 2 * n + rnd(n), 1 + rnd(4), rnd(2) ? 40 : 50);
	}
	CHECKF(sums_seen[0] > 100 && sums_seen[1] > 50, "sums: %u packed, %u wide",
	       sums_seen[0], sums_seen[1]);
	/* a node with hundreds of predecessors, in the tail block (from a
	 * few head nodes and many tail ones) or in the head block */
	for (int i = 0; i < 24; i++) {
		uint32_t n = 300 + rnd(100);
		uint32_t split = i % 2 ? 1 + rnd(4) : n - 20;
		uint32_t hub = i % 2 ? split + rnd(n - split) : rnd(split);
		random_graph_x(n, 6 * n, split, 0, hub + 1, rnd(2), 0);
	}
	/* the same in the tail block, hundreds of its predecessors among
	 * the last 300 to 350 nodes, which no edge enters */
	for (int i = 0; i < 12; i++) {
		uint32_t n = 700 + rnd(100), cut = 300 + rnd(50);
		random_graph_x(n, 6 * n, 1 + rnd(4), 0, 10 + rnd(n - cut - 10), true, cut);
	}
	CHECKF(recounts_seen[0] > 200 && recounts_seen[1] > 50 && hubs_seen >= 16 &&
	       hubs_cut_seen >= 6,
	       "lengths counted again in %u graphs, once in %u; %u graphs with a node "
	       "of 256 predecessors or more, %u of them from nodes not reached",
	       recounts_seen[1], recounts_seen[0], hubs_seen, hubs_cut_seen);
	CHECKF(heavy_seen > 1000, "only %u heavy children", heavy_seen);
#ifdef FAIL_ALLOCS
	failing_allocations(20000, 1);
	/* sums that do not fit beside the counts: the second array */
	failing_allocations(20000, (uint64_t)1 << 50);
#endif
	root_map_large(200000);
	long_chain(10 * 1000 * 1000, false, false);
	long_chain(10 * 1000 * 1000, true, false);
	long_chain(1000 * 1000, false, true);
	long_chain(1000 * 1000, true, true);
	return check_finish();
}
