/* Dominator tree of the heap, retained sizes, retainer paths and leak
 * suspects: see analyzers/retain.h. */
#include "src/parallel.h"
#include "src/alloc.h"
#include "src/sort.h"
#include "analyzers/retain.h"

#include <stdlib.h>
#include <string.h>

struct root_edges {
	const struct hs_graph *g;
	const struct hs_roots *roots;
	uint32_t base;
	uint32_t *adj;
	size_t n, cap;
	uint32_t *off;          /* per root node */
	size_t cur;             /* root being filled */
	bool nomem;
};

/* Closes the rows of roots up to and including `upto`. */
static void close_rows(struct root_edges *re, size_t upto)
{
	while (re->cur <= upto) {
		size_t node = HS_NODE_FIRST_ROOT + re->cur;
		size_t start = re->off[node];
		size_t cnt = re->n - start;
		if (cnt > 1) {
			hs_sort_u32(re->adj + start, cnt);
			size_t k = 1;
			for (size_t i = 1; i < cnt; i++)
				if (re->adj[start + i] != re->adj[start + k - 1])
					re->adj[start + k++] = re->adj[start + i];
			re->n = start + k;
		}
		re->off[node + 1] = (uint32_t)re->n;
		re->cur++;
	}
}

static bool root_word(uint64_t v, const struct hs_root *root, uint64_t where,
		      void *arg)
{
	(void)where;
	struct root_edges *re = arg;
	size_t idx = (size_t)(root - re->roots->roots);
	if (idx > re->cur)
		close_rows(re, idx - 1);
	if (v < re->g->map.lo || v >= re->g->map.hi)
		return true;
	bool interior;
	uint32_t id = hs_graph_target(re->g, v, &interior);
	if (id == HS_NO_ALLOC)
		return true;
	if (re->n == re->cap) {
		size_t cap = re->cap ? 2 * re->cap : 4096;
		uint32_t *a = hs_realloc(re->adj, cap * sizeof(*a));
		if (!a) {
			re->nomem = true;
			return false;
		}
		re->adj = a;
		re->cap = cap;
	}
	re->adj[re->n++] = re->base + id;
	return true;
}

/* A node's own size: an allocation's, nothing for the roots.  The tree
 * asks for it again (hs_domtree_retained): arg is the retain. */
static uint64_t weight(void *arg, uint32_t node)
{
	const struct hs_retain *r = arg;
	return node >= r->base ? r->heap->allocs[node - r->base].size : 0;
}

struct hs_error *hs_retain_compute(const struct hs_core *core,
				   const struct hs_heap *heap,
				   const struct hs_roots *roots,
				   const struct hs_graph *graph,
				   const struct hs_mark *mark,
				   unsigned nthreads, bool keep_order,
				   struct hs_log *log, struct hs_retain **ret)
{
	if ((uint64_t)roots->n + HS_NODE_FIRST_ROOT + graph->n >= HS_EDGE_MAX_IDS)
		return hs_error_create(HS_ERR_UNSUPPORTED, "too many roots and allocations");
	struct hs_retain *r = hs_calloc(1, sizeof(*r));
	if (!r)
		return &hs_error_nomem;
	r->nroots = (uint32_t)roots->n;
	r->heap = heap;
	r->nthreads = nthreads;
	r->base = HS_NODE_FIRST_ROOT + r->nroots;
	struct root_edges re = {.g = graph, .roots = roots, .base = r->base};
	re.off = hs_calloc((size_t)r->base + 1, sizeof(uint32_t));
	struct hs_error *err = &hs_error_nomem;
	if (!re.off)
		goto fail;
	/* super-root: the pseudo-root and every root; pseudo-root: the leak
	 * roots; then each root's targets */
	size_t need = 1 + r->nroots + mark->nleak_roots;
	re.cap = need + 4096;
	re.adj = hs_malloc(re.cap * sizeof(uint32_t));
	if (!re.adj)
		goto fail;
	re.off[0] = 0;
	re.adj[re.n++] = HS_NODE_LEAKED;
	for (uint32_t i = 0; i < r->nroots; i++)
		re.adj[re.n++] = HS_NODE_FIRST_ROOT + i;
	re.off[1] = (uint32_t)re.n;
	for (size_t i = 0; i < mark->nleak_roots; i++)
		re.adj[re.n++] = r->base + mark->leak_roots[i].id;
	re.off[2] = (uint32_t)re.n;
	if (r->nroots) {
		hs_roots_scan(core, roots, root_word, &re);
		if (re.nomem)
			goto fail;
		close_rows(&re, r->nroots - 1);
	}
	r->head_off = re.off;
	r->head_adj = re.adj;
	re.off = NULL;
	re.adj = NULL;

	struct hs_domgraph dg = {
		.n = r->base + graph->n, .na = r->base,
		.head_off = r->head_off, .head_adj = r->head_adj,
		.tail_index = &graph->index, .tail_rows = graph->rows,
		.nthreads = nthreads,
		.keep_order = keep_order,
		.log = log,
	};
	if ((err = hs_dominators_compute(&dg, weight, r, &r->tree)))
		goto fail;
	for (uint32_t i = 0; i < graph->n; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		if (hs_alloc_in_graph(a)) {
			r->used_bytes += a->size;
			r->used_count++;
		}
	}
	*ret = r;
	return NULL;
fail:
	free(re.off);
	free(re.adj);
	hs_retain_destroy(r);
	return err;
}

void hs_retain_destroy(struct hs_retain *r)
{
	if (!r)
		return;
	hs_domtree_destroy(r->tree);
	free(r->head_off);
	free(r->head_adj);
	free(r);
}

static int cmp_suspect(const void *a, const void *b, void *arg)
{
	const struct hs_domtree *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (hs_domtree_retained(t, x) != hs_domtree_retained(t, y))
		return hs_domtree_retained(t, x) > hs_domtree_retained(t, y) ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct hs_error *hs_retain_suspects(const struct hs_retain *r, double share,
				    uint32_t **ret, size_t *count)
{
	const struct hs_domtree *t = r->tree;
	uint64_t threshold = (uint64_t)(share * (double)r->used_bytes);
	if (threshold == 0)
		threshold = 1;
	size_t n = 0, cap = 16;
	uint32_t *v = hs_malloc(cap * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	/* the leaked blocks as one group, then each top-level dominator */
	for (uint32_t x = HS_NODE_LEAKED; x < t->n; x++) {
		uint32_t d = t->idom[x];
		if ((x != HS_NODE_LEAKED && d != HS_NODE_SUPER && d != HS_NODE_LEAKED) ||
		    x == HS_NODE_SUPER || hs_domtree_retained(t, x) < threshold)
			continue;
		if (n == cap) {
			cap *= 2;
			uint32_t *nv = hs_realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				return &hs_error_nomem;
			}
			v = nv;
		}
		v[n++] = x;
	}
	hs_sort_r(v, n, sizeof(*v), cmp_suspect, (void *)t);
	*ret = v;
	*count = n;
	return NULL;
}

/* A bounded min-heap of the n largest: no sort of millions. */
size_t hs_retain_top(const struct hs_retain *r, size_t n, uint32_t *out)
{
	const struct hs_domtree *t = r->tree;
	size_t k = 0;
	for (uint32_t v = r->base; v < t->n; v++) {
		if (t->idom[v] == HS_DOM_NONE)
			continue;
		uint64_t x = hs_domtree_retained(t, v);
		if (k < n) {
			size_t i = k++;
			out[i] = v;
			while (i && hs_domtree_retained(t, out[(i - 1) / 2]) > x) {
				uint32_t tmp = out[(i - 1) / 2];
				out[(i - 1) / 2] = out[i];
				out[i] = tmp;
				i = (i - 1) / 2;
			}
		} else if (n && x > hs_domtree_retained(t, out[0])) {
			out[0] = v;
			size_t i = 0;
			for (;;) {
				size_t l = 2 * i + 1, m = i;
				if (l < k && hs_domtree_retained(t, out[l]) < hs_domtree_retained(t, out[m]))
					m = l;
				if (l + 1 < k && hs_domtree_retained(t, out[l + 1]) < hs_domtree_retained(t, out[m]))
					m = l + 1;
				if (m == i)
					break;
				uint32_t tmp = out[m];
				out[m] = out[i];
				out[i] = tmp;
				i = m;
			}
		}
	}
	/* heap order to descending order */
	for (size_t i = 1; i < k; i++) {
		uint32_t x = out[i];
		size_t j = i;
		while (j > 0 && hs_domtree_retained(t, out[j - 1]) < hs_domtree_retained(t, x)) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = x;
	}
	return k;
}

/* Whether v (dominated by p) keeps at least keep of p's retained size. */
static inline bool is_heavy(const struct hs_domtree *t, uint32_t v, uint32_t p, double keep)
{
	return (double)hs_domtree_retained(t, v) >= keep * (double)hs_domtree_retained(t, p);
}

/* One part of hs_retain_heavy_children's passes: the nodes [from, to)
 * (their bits in `heavy` are the part's own words), their dominators'
 * ranks in `has` (the part's own set until they are merged). */
struct heavy_part {
	const struct hs_domtree *t;
	double keep;
	uint32_t from, to;
	uint64_t *heavy;
	struct hs_rankset *has;
	uint32_t *child;        /* (the second pass) */
};

/* The first pass: which nodes are heavy (a bit each), and which inner
 * nodes have a heavy child.  The nodes in order, their dominators
 * scattered: the words and slots a dominator's ranks lead to are asked
 * for in stages, 2 * AHEAD and AHEAD nodes ahead, each stage reading what
 * the one before asked for. */
static void *heavy_marks(void *arg)
{
	struct heavy_part *hp = arg;
	const struct hs_domtree *t = hp->t;
	enum { AHEAD = 16 };
	for (uint32_t v = hp->from ? hp->from : 1; v < hp->to; v++) {
		if (v + 2 * AHEAD < hp->to && t->idom[v + 2 * AHEAD] != HS_DOM_NONE)
			__builtin_prefetch(&t->inner.w[t->idom[v + 2 * AHEAD] / 32]);
		if (v + AHEAD < hp->to && t->idom[v + AHEAD] != HS_DOM_NONE) {
			uint32_t k = hs_rankset_index(&t->inner, t->idom[v + AHEAD]);
			if (k != HS_RANK_NONE) {
				__builtin_prefetch(&t->inner_sum[k]);
				__builtin_prefetch(&hp->has->w[k / 32]);
			}
		}
		uint32_t p = t->idom[v];
		if (p == HS_DOM_NONE || p == v || !is_heavy(t, v, p, hp->keep))
			continue;
		hp->heavy[v / 64] |= 1ull << (v % 64);
		/* (p dominates v: an inner node) */
		hs_rankset_add(hp->has, hs_rankset_index(&t->inner, p));
	}
	return NULL;
}

/* The second pass: each heavy node filed as its dominator's child, taken
 * from the bits into a ring as they come (their dominators' words asked
 * for AHEAD and AHEAD / 2 nodes ahead).  A dominator has one heavy child,
 * or several when they all retain nothing: then the lowest, which the
 * slot's atomic minimum keeps whichever part comes first. */
static void *heavy_children(void *arg)
{
	struct heavy_part *hp = arg;
	const struct hs_domtree *t = hp->t;
	const struct hs_rankset *has = hp->has;
	enum { AHEAD = 16, RING = 2 * AHEAD };
	uint32_t ring[RING];
	size_t head = 0, count = 0, x = hp->from / 64, nx = (hp->to + 63) / 64;
	uint64_t b = x < nx ? hp->heavy[x] : 0;
	for (;;) {
		while (count < RING) {
			while (!b && ++x < nx)
				b = hp->heavy[x];
			if (!b)
				break;
			uint32_t v = (uint32_t)(x * 64) + (uint32_t)__builtin_ctzll(b);
			b &= b - 1;
			ring[(head + count++) % RING] = v;
			__builtin_prefetch(&t->inner.w[t->idom[v] / 32]);
		}
		if (!count)
			break;
		if (count > AHEAD) {
			uint32_t k = hs_rankset_index(&t->inner,
						      t->idom[ring[(head + AHEAD) % RING]]);
			__builtin_prefetch(&has->w[k / 32]);
		}
		if (count > AHEAD / 2) {
			uint32_t k = hs_rankset_index(has, hs_rankset_index(
				&t->inner, t->idom[ring[(head + AHEAD / 2) % RING]]));
			__builtin_prefetch(&hp->child[k]);
		}
		uint32_t v = ring[head];
		head = (head + 1) % RING;
		count--;
		uint32_t k = hs_rankset_index(has, hs_rankset_index(&t->inner, t->idom[v]));
		uint32_t cur = __atomic_load_n(&hp->child[k], __ATOMIC_RELAXED);
		while (v < cur && !__atomic_compare_exchange_n(&hp->child[k], &cur, v, false,
							       __ATOMIC_RELAXED,
							       __ATOMIC_RELAXED))
			;
	}
	return NULL;
}

struct hs_error *hs_retain_heavy_children(const struct hs_retain *r, double keep,
					  struct hs_heavy *ret)
{
	const struct hs_domtree *t = r->tree;
	memset(ret, 0, sizeof(*ret));
	ret->keep = keep;
	/* first the heavy nodes, then those children, by rank; with two
	 * threads, each takes the nodes of one half (split at a word of
	 * `heavy`), and the second half's dominators go to a set of its own
	 * until the first pass ends */
	struct hs_rankset has1 = {0};
	uint64_t *heavy = hs_calloc((size_t)t->n / 64 + 1, sizeof(uint64_t));
	struct hs_error *err = heavy ? hs_rankset_init(&ret->has, (size_t)t->inner.count + 1)
				     : &hs_error_nomem;
	if (err)
		goto fail;
	uint32_t split = t->n / 2 / 64 * 64;
	unsigned nparts = r->nthreads >= 2 && split >= 64 ? 2 : 1;
	if (nparts == 2 && (err = hs_rankset_init(&has1, (size_t)t->inner.count + 1)))
		goto fail;
	struct heavy_part parts[2] = {
		{t, keep, 0, nparts == 2 ? split : t->n, heavy, &ret->has, NULL},
		{t, keep, split, t->n, heavy, &has1, NULL},
	};
	hs_run_parts(parts, sizeof(*parts), nparts, heavy_marks);
	if (nparts == 2) {
		hs_rankset_merge(&ret->has, &has1);
		hs_rankset_fini(&has1);
		parts[1].has = &ret->has;
	}
	hs_rankset_finish(&ret->has);
	ret->child = hs_malloc(((size_t)ret->has.count + 1) * sizeof(uint32_t));
	if (!ret->child) {
		err = &hs_error_nomem;
		goto fail;
	}
	memset(ret->child, 0xff, ((size_t)ret->has.count + 1) * sizeof(uint32_t));
	parts[0].child = parts[1].child = ret->child;
	hs_run_parts(parts, sizeof(*parts), nparts, heavy_children);
	free(heavy);
	return NULL;
fail:
	free(heavy);
	hs_rankset_fini(&has1);
	hs_retain_heavy_fini(ret);
	return err;
}

void hs_retain_heavy_fini(struct hs_heavy *h)
{
	hs_rankset_fini(&h->has);
	free(h->child);
	h->child = NULL;
}

/* Its heavy child, HS_DOM_NONE if none. */
static uint32_t heavy_child(const struct hs_retain *r, const struct hs_heavy *h,
			    uint32_t node)
{
	uint32_t k = hs_rankset_index(&r->tree->inner, node);
	if (k == HS_RANK_NONE)
		return HS_DOM_NONE;
	k = hs_rankset_index(&h->has, k);
	return k == HS_RANK_NONE ? HS_DOM_NONE : h->child[k];
}

uint32_t hs_retain_accumulation(const struct hs_retain *r, const struct hs_heavy *heavy,
				uint32_t node,
				bool (*same_kind)(void *arg, uint32_t a, uint32_t b),
				void *arg, uint32_t *depth, uint32_t *chain)
{
	uint32_t d = 0;
	*chain = 0;
	for (;;) {
		uint32_t best = heavy_child(r, heavy, node);
		if (best == HS_DOM_NONE || d >= (1u << 24))
			break;
		/* the head of a chain of one kind: count the chain, stop */
		uint32_t next = heavy_child(r, heavy, best);
		if (same_kind && hs_retain_is_alloc(r, best) && next != HS_DOM_NONE &&
		    same_kind(arg, best, next)) {
			uint32_t n = 1, x = best;
			while ((next = heavy_child(r, heavy, x)) != HS_DOM_NONE &&
			       same_kind(arg, x, next) && n < (1u << 30)) {
				x = next;
				n++;
			}
			if (n >= 3) {
				*chain = n;
				node = best;
				d++;
				break;
			}
		}
		node = best;
		d++;
	}
	*depth = d;
	return node;
}

struct hs_error *hs_retain_bfs(const struct hs_retain *r,
			       const struct hs_graph *g, uint32_t **ret)
{
	uint32_t n = r->tree->n;
	uint32_t *parent = hs_malloc((size_t)n * sizeof(uint32_t));
	uint32_t *queue = hs_malloc((size_t)n * sizeof(uint32_t));
	if (!parent || !queue) {
		free(parent);
		free(queue);
		return &hs_error_nomem;
	}
	memset(parent, 0xff, (size_t)n * sizeof(uint32_t));
	size_t qh = 0, qt = 0;
	parent[HS_NODE_SUPER] = HS_NODE_SUPER;
	queue[qt++] = HS_NODE_SUPER;
	while (qh < qt) {
		uint32_t v = queue[qh++];
		struct hs_retain_succ it = hs_retain_succ(r, g, v);
		uint32_t w;
		while (hs_retain_next(&it, &w)) {
			if (parent[w] != HS_DOM_NONE)
				continue;
			parent[w] = v;
			queue[qt++] = w;
		}
	}
	free(queue);
	*ret = parent;
	return NULL;
}
