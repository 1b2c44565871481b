/* Per-type and per-root rows of a heap: see analyzers/summary.h. */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/summary.h"
#include "src/hashtab.h"
#include "src/vector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

HS_VECTOR(rows, struct hs_type_row)
HS_HASH_MAP(size_rows, size_t)    /* untyped rows: size + 1 -> index */

static size_t untyped_row(struct rows *r, struct size_rows *by_size,
			  uint64_t size)
{
	size_t *k = size_rows_find(by_size, size + 1);
	if (k)
		return *k;
	struct hs_type_row *x = rows_append(r);
	if (!x || size_rows_insert(by_size, size + 1, &k, NULL))
		return SIZE_MAX;  /* out of memory (size + 1 is never 0) */
	x->type = HS_NO_TYPE;
	x->size = size;
	*k = r->n - 1;
	return *k;
}

static int cmp_row(const void *a, const void *b)
{
	const struct hs_type_row *x = a, *y = b;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->label, y->label);
}

const char *hs_type_label(const struct hs_heap *heap,
			  const struct hs_types *types, uint32_t id, char *buf,
			  size_t len)
{
	struct hs_dtype *d = hs_types_of(types, id);
	if (d)
		snprintf(buf, len, "%s%s%s", d->name,
			 hs_types_count(types, heap, id) >= 2 ? "[]" : "",
			 hs_types_guessed(types, id) ? "?" : "");
	else
		snprintf(buf, len, "(untyped, %llu bytes)",
			 (unsigned long long)heap->allocs[id].size);
	return buf;
}

/* A node whose subtree the walk is in: where the subtree ends (a
 * position in the tree's preorder), and its row. */
struct open_row {
	uint32_t end, row;
};
HS_VECTOR(open_rows, struct open_row)

/* The row of allocation id (UINT32_MAX: none, not a used block; SIZE_MAX:
 * out of memory), made on first use; *ty its type. */
static size_t row_of(const struct hs_heap *heap, const struct hs_types *types,
		     size_t ntypes, struct rows *rows, struct size_rows *by_size,
		     uint32_t id, uint32_t *ty)
{
	const struct hs_alloc *a = &heap->allocs[id];
	if (!hs_alloc_in_graph(a))
		return UINT32_MAX;
	*ty = types ? hs_types_index(types, id) : HS_NO_TYPE;
	if (*ty == HS_NO_TYPE)
		return untyped_row(rows, by_size, a->size);
	return hs_types_guessed(types, id) ? ntypes + *ty : *ty;
}

struct hs_error *hs_type_rows(const struct hs_heap *heap,
			      const struct hs_mark *mark,
			      const struct hs_retain *r,
			      const struct hs_types *types,
			      struct hs_type_row **ret, size_t *count)
{
	const struct hs_domtree *t = r->tree;
	if (!t->order)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "per-type retained sizes need the dominator tree's order");
	uint32_t nalloc = t->n - r->base, nr = t->reached, ninner = t->inner.count;
	struct rows rows = {0};
	struct size_rows by_size = {0};
	struct open_rows open = {0};
	struct hs_error *err = &hs_error_nomem;
	uint32_t *active = NULL, *next = NULL, *prow = NULL, *pnode = NULL;
	/* a row per type, then one per type for inferred guesses ("T?") */
	size_t ntypes = types ? types->reg->n : 0;
	for (size_t i = 0; i < 2 * ntypes; i++) {
		struct hs_type_row *x = rows_append(&rows);
		if (!x)
			goto out;
		x->type = (uint32_t)(i % ntypes);
		x->guessed = i >= ntypes;
	}
	for (uint32_t id = 0; id < nalloc; id++) {
		const struct hs_alloc *a = &heap->allocs[id];
		uint32_t ty;
		size_t k = row_of(heap, types, ntypes, &rows, &by_size, id, &ty);
		if (k == UINT32_MAX)
			continue;
		if (k == SIZE_MAX)
			goto out;
		struct hs_type_row *x = &rows.v[k];
		if (ty != HS_NO_TYPE && hs_types_count(types, heap, id) >= 2)
			x->arrays = true;
		x->count++;
		x->bytes += a->size;
		uint8_t reach = mark->reach[id];
		if (reach == HS_REACH_LEAK_ROOT || reach == HS_REACH_INDIRECT) {
			x->leaked_count++;
			x->leaked_bytes += a->size;
		}
	}
	/* A node retains for its row where no node above it in the dominator
	 * tree has that row.  That is a walk of the tree in preorder, with
	 * each row's open ancestors counted; but a depth-first walk of the
	 * tree goes node to child list to node, a cache miss after a cache
	 * miss on a heap's long chains.  So the preorder is laid out first:
	 * the search's order (each node after its dominator) gives each node
	 * its place, the next free one in its dominator's subtree (next[],
	 * by the dominator's rank among the inner nodes), and the node and
	 * its row (found again: it is not worth 4 bytes a block) go there;
	 * the walk then reads them in order, and asks ahead for the node's
	 * subtree size and retained size. */
	next = hs_malloc(((size_t)ninner + 1) * sizeof(uint32_t));
	prow = hs_malloc(((size_t)nr + 1) * sizeof(uint32_t));
	pnode = hs_malloc(((size_t)nr + 1) * sizeof(uint32_t));
	active = hs_calloc(rows.n + 1, sizeof(uint32_t));
	if (!next || !prow || !pnode || !active)
		goto out;
	struct hs_domorder_ahead order;
	hs_domorder_ahead_init(&order, t);
	for (uint32_t w, u; hs_domorder_ahead_next(&order, &w, &u);) {
		if (u != HS_DOM_NONE) {
			/* what the node ahead will read */
			__builtin_prefetch(&t->idom[u]);
			if (hs_retain_is_alloc(r, u)) {
				__builtin_prefetch(&heap->allocs[u - r->base]);
				if (types && types->packed)
					__builtin_prefetch(&types->typed_set.w[(u - r->base) / 32]);
			}
			uint32_t ku = hs_rankset_index(&t->inner, u);
			if (ku != HS_RANK_NONE)
				__builtin_prefetch(&t->inner_sum[ku]);
		}
		uint32_t p = 0, kw = hs_rankset_index(&t->inner, w);
		if (w != HS_NODE_SUPER) {
			uint32_t kd = hs_rankset_index(&t->inner, t->idom[w]);
			p = next[kd];
			next[kd] += hs_domtree_count_reached(t, w);
		}
		if (kw != HS_RANK_NONE)
			next[kw] = p + 1;
		uint32_t ty;
		size_t k = hs_retain_is_alloc(r, w) ?
			row_of(heap, types, ntypes, &rows, &by_size, w - r->base, &ty) : UINT32_MAX;
		if (k == SIZE_MAX)
			goto out;
		prow[p] = (uint32_t)k;
		pnode[p] = w;
	}
	free(next);
	next = NULL;
	enum { AHEAD = 16 };
	for (uint32_t p = 0; p < nr; p++) {
		if (p + AHEAD < nr && prow[p + AHEAD] != UINT32_MAX) {
			uint32_t u = pnode[p + AHEAD];
			uint32_t ku = hs_rankset_index(&t->inner, u);
			if (ku != HS_RANK_NONE)
				__builtin_prefetch(&t->inner_sum[ku]);
			else
				__builtin_prefetch(&heap->allocs[u - r->base]);
		}
		while (open.n && open.v[open.n - 1].end <= p)
			active[open.v[--open.n].row]--;
		uint32_t row = prow[p];
		if (row == UINT32_MAX)
			continue;
		uint32_t w = pnode[p], end = p + hs_domtree_count_reached(t, w);
		if (!active[row])
			rows.v[row].retained += hs_domtree_retained_reached(t, w);
		if (end > p + 1) {
			if (open_rows_push(&open, (struct open_row){end, row}))
				goto out;
			active[row]++;
		}
	}
	size_t m = 0;
	for (size_t i = 0; i < rows.n; i++) {
		struct hs_type_row *x = &rows.v[i];
		if (!x->count)
			continue;
		char label[600];
		if (x->type != HS_NO_TYPE)
			snprintf(label, sizeof(label), "%s%s%s", types->reg->v[x->type]->name,
				 x->arrays ? "[]" : "", x->guessed ? "?" : "");
		else
			snprintf(label, sizeof(label), "(untyped, %llu bytes)",
				 (unsigned long long)x->size);
		x->label = strdup(label);
		if (!x->label) {
			rows.n = m;
			goto out;
		}
		rows.v[m++] = *x;
	}
	rows.n = m;
	hs_sort(rows.v, m, sizeof(*rows.v), cmp_row);
	err = NULL;
out:
	free(next);
	free(prow);
	free(pnode);
	free(active);
	open_rows_free(&open);
	size_rows_free(&by_size);
	if (err) {
		hs_type_rows_free(rows.v, rows.n);
		return err;
	}
	*ret = rows.v;
	*count = rows.n;
	return NULL;
}

void hs_type_rows_free(struct hs_type_row *rows, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(rows[i].label);
	free(rows);
}

static int cmp_root_row(const void *a, const void *b)
{
	const struct hs_root_row *x = a, *y = b;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_root_name(const void *a, const void *b)
{
	const struct hs_root_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->kind, y->kind);
}

struct hs_error *hs_root_rows(const struct hs_retain *r,
			      const struct hs_roots *roots,
			      struct hs_root_row **ret, size_t *count)
{
	const struct hs_domtree *t = r->tree;
	struct hs_root_row *rows = hs_calloc((size_t)r->nroots + 2, sizeof(*rows));
	if (!rows)
		return &hs_error_nomem;
	size_t k = 0;
	for (uint32_t i = 0; i < r->nroots; i++) {
		uint32_t node = HS_NODE_FIRST_ROOT + i;
		if (!hs_domtree_retained(t, node))
			continue;  /* holds nothing alone */
		rows[k++] = (struct hs_root_row){
			.name = roots->roots[i].name,
			.kind = hs_root_kind_names[roots->roots[i].kind],
			.retained = hs_domtree_retained(t, node),
			.count = hs_domtree_count(t, node) - 1,
		};
	}
	hs_sort(rows, k, sizeof(*rows), cmp_root_name);
	size_t m = 0;
	for (size_t i = 0; i < k; i++) {
		if (m && !strcmp(rows[m - 1].name, rows[i].name)) {
			rows[m - 1].retained += rows[i].retained;
			rows[m - 1].count += rows[i].count;
		} else {
			rows[m++] = rows[i];
		}
	}
	uint64_t shared = 0, shared_count = 0;
	for (uint32_t v = r->base; v < t->n; v++)
		if (t->idom[v] == HS_NODE_SUPER) {
			shared += hs_domtree_retained(t, v);
			shared_count += hs_domtree_count(t, v);
		}
	if (shared)
		rows[m++] = (struct hs_root_row){"(held by several roots, none alone)",
						 "shared", shared, shared_count};
	if (hs_domtree_retained(t, HS_NODE_LEAKED))
		rows[m++] = (struct hs_root_row){"(leaked: no root holds these)", "leaked",
						 hs_domtree_retained(t, HS_NODE_LEAKED),
						 hs_domtree_count(t, HS_NODE_LEAKED) - 1};
	hs_sort(rows, m, sizeof(*rows), cmp_root_row);
	*ret = rows;
	*count = m;
	return NULL;
}

struct hs_error *hs_root_map_init(const struct hs_retain *r, struct hs_root_map *m)
{
	const struct hs_domtree *t = r->tree;
	const struct hs_rankset *inner = &t->inner;
	uint32_t base = r->base;
	*m = (struct hs_root_map){.tree = t, .base = base};
	size_t slots = (size_t)inner->count + 1;
	m->top = hs_malloc(slots * sizeof(uint32_t));
	if (!m->top)
		return &hs_error_nomem;
	memset(m->top, 0xff, slots * sizeof(uint32_t));  /* HS_DOM_NONE: unset */
	/* The slots of the nodes below base, and of the tops, are the nodes
	 * themselves.  First, from the last node down, the nodes whose
	 * dominator is below base or has its top already: a list that grew
	 * at its head, each block later in memory than the one it points to,
	 * is done there, a node after its dominator.  Walking up from such a
	 * list's tail instead reads node after node at random (the bench
	 * core's chains: 232 ms against 107). */
	for (uint32_t v = t->n; v-- > 0;) {
		uint32_t k = hs_rankset_index(inner, v);
		if (k == HS_RANK_NONE)
			continue;
		uint32_t d = t->idom[v];
		if (v < base || d < base)
			m->top[k] = v;
		else
			m->top[k] = m->top[hs_rankset_index(inner, d)];
	}
	/* then, from the first node up, the others (each at or above base,
	 * its dominator too: the first pass took the rest): walk up the
	 * (inner) dominators to one whose top is known, which every chain
	 * meets before it leaves base, then walk the same path again to fill
	 * it in (a tree that grew from its root, each block later in memory
	 * than its parent, is done in one step a node) */
	for (uint32_t v = 0; v < t->n; v++) {
		uint32_t k = hs_rankset_index(inner, v);
		if (k == HS_RANK_NONE || m->top[k] != HS_DOM_NONE)
			continue;
		uint32_t x = v, found;
		for (;;) {
			uint32_t kd = hs_rankset_index(inner, t->idom[x]);
			if (m->top[kd] != HS_DOM_NONE) {
				found = m->top[kd];
				break;
			}
			x = t->idom[x];
		}
		for (x = v;; x = t->idom[x]) {
			uint32_t kx = hs_rankset_index(inner, x);
			if (m->top[kx] != HS_DOM_NONE)
				break;
			m->top[kx] = found;
		}
	}
	return NULL;
}

void hs_root_map_fini(struct hs_root_map *m)
{
	free(m->top);
	m->top = NULL;
}
