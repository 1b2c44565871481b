/* Per-type and per-root rows of a heap: see analyzers/summary.h. */
#include "src/sort.h"
#include "analyzers/summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rows {
	struct hs_type_row *v;
	size_t n, cap;
	size_t *hash;           /* untyped rows by size: index + 1 */
	size_t hcap;
};

static struct hs_type_row *add_row(struct rows *r)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct hs_type_row *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		r->v = v;
		r->cap = cap;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[0]));
	return &r->v[r->n++];
}

static size_t untyped_row(struct rows *r, uint64_t size)
{
	size_t j = (size * 0x9e3779b97f4a7c15ull >> 20) & (r->hcap - 1);
	while (r->hash[j]) {
		if (r->v[r->hash[j] - 1].size == size)
			return r->hash[j] - 1;
		j = (j + 1) & (r->hcap - 1);
	}
	struct hs_type_row *x = add_row(r);
	if (!x)
		return SIZE_MAX;
	x->type = HS_NO_TYPE;
	x->size = size;
	r->hash[j] = r->n;
	return r->n - 1;
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

struct hs_error *hs_type_rows(const struct hs_heap *heap,
			      const struct hs_mark *mark,
			      const struct hs_retain *r,
			      const struct hs_types *types,
			      struct hs_type_row **ret, size_t *count)
{
	const struct hs_domtree *t = r->tree;
	uint32_t n = t->n, nalloc = n - r->base;
	struct rows rows = {0};
	struct hs_error *err = &hs_error_nomem;
	uint32_t *row_of = malloc(((size_t)nalloc + 1) * sizeof(uint32_t));
	uint32_t *active = NULL;
	uint32_t *coff = calloc((size_t)n + 2, sizeof(uint32_t));
	uint32_t *kids = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *stack = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *pos = malloc(((size_t)n + 1) * sizeof(uint32_t));
	rows.hcap = 1024;
	while (rows.hcap < 4 * (size_t)(nalloc / 16 + 1) && rows.hcap < (1u << 24))
		rows.hcap *= 2;
	rows.hash = calloc(rows.hcap, sizeof(size_t));
	if (!row_of || !coff || !kids || !stack || !pos || !rows.hash)
		goto out;
	/* a row per type, then one per type for inferred guesses ("T?") */
	size_t ntypes = types ? types->reg->n : 0;
	for (size_t i = 0; i < 2 * ntypes; i++) {
		struct hs_type_row *x = add_row(&rows);
		if (!x)
			goto out;
		x->type = (uint32_t)(i % ntypes);
		x->guessed = i >= ntypes;
	}
	for (uint32_t id = 0; id < nalloc; id++) {
		const struct hs_alloc *a = &heap->allocs[id];
		row_of[id] = UINT32_MAX;
		if (!hs_alloc_in_graph(a))
			continue;
		uint32_t ty = types ? types->type_of[id] : HS_NO_TYPE;
		size_t k = ty == HS_NO_TYPE ? untyped_row(&rows, a->size) :
			hs_types_guessed(types, id) ? ntypes + ty : ty;
		if (k == SIZE_MAX)
			goto out;
		row_of[id] = (uint32_t)k;
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
	active = calloc(rows.n + 1, sizeof(uint32_t));
	if (!active)
		goto out;
	/* the dominator tree as child lists, walked depth first */
	for (uint32_t v = 1; v < n; v++)
		if (t->idom[v] != HS_DOM_NONE)
			coff[t->idom[v] + 2]++;
	for (uint32_t v = 0; v < n; v++)
		coff[v + 2] += coff[v + 1];
	for (uint32_t v = 1; v < n; v++)
		if (t->idom[v] != HS_DOM_NONE)
			kids[coff[t->idom[v] + 1]++] = v;
	size_t sp = 0;
	stack[sp] = HS_NODE_SUPER;
	pos[sp++] = coff[HS_NODE_SUPER];
	while (sp) {
		uint32_t v = stack[sp - 1];
		if (pos[sp - 1] < coff[v + 1]) {
			uint32_t w = kids[pos[sp - 1]++];
			if (hs_retain_is_alloc(r, w) && row_of[w - r->base] != UINT32_MAX) {
				uint32_t k = row_of[w - r->base];
				if (!active[k]++)
					rows.v[k].retained += t->retained[w];
			}
			stack[sp] = w;
			pos[sp++] = coff[w];
			continue;
		}
		if (hs_retain_is_alloc(r, v) && row_of[v - r->base] != UINT32_MAX)
			active[row_of[v - r->base]]--;
		sp--;
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
	free(row_of);
	free(active);
	free(coff);
	free(kids);
	free(stack);
	free(pos);
	free(rows.hash);
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
	struct hs_root_row *rows = calloc((size_t)r->nroots + 2, sizeof(*rows));
	if (!rows)
		return &hs_error_nomem;
	size_t k = 0;
	for (uint32_t i = 0; i < r->nroots; i++) {
		uint32_t node = HS_NODE_FIRST_ROOT + i;
		if (!t->retained[node])
			continue;  /* holds nothing alone */
		rows[k++] = (struct hs_root_row){
			.name = roots->roots[i].name,
			.kind = hs_root_kind_names[roots->roots[i].kind],
			.retained = t->retained[node],
			.count = t->retained_count[node] - 1,
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
			shared += t->retained[v];
			shared_count += t->retained_count[v];
		}
	if (shared)
		rows[m++] = (struct hs_root_row){"(held by several roots, none alone)",
						 "shared", shared, shared_count};
	if (t->retained[HS_NODE_LEAKED])
		rows[m++] = (struct hs_root_row){"(leaked: no root holds these)", "leaked",
						 t->retained[HS_NODE_LEAKED],
						 t->retained_count[HS_NODE_LEAKED] - 1};
	hs_sort(rows, m, sizeof(*rows), cmp_root_row);
	*ret = rows;
	*count = m;
	return NULL;
}

struct hs_error *hs_retain_root_of(const struct hs_retain *r, uint32_t **ret)
{
	const struct hs_domtree *t = r->tree;
	uint32_t *root = malloc((size_t)t->n * sizeof(uint32_t));
	uint32_t *path = malloc((size_t)t->n * sizeof(uint32_t));
	if (!root || !path) {
		free(root);
		free(path);
		return &hs_error_nomem;
	}
	memset(root, 0xff, (size_t)t->n * sizeof(uint32_t));
	for (uint32_t v = 0; v < r->base && v < t->n; v++)
		root[v] = v;
	/* walk up to a node whose root is known, then fill the path in */
	for (uint32_t v = r->base; v < t->n; v++) {
		if (root[v] != HS_DOM_NONE || t->idom[v] == HS_DOM_NONE)
			continue;
		size_t n = 0;
		uint32_t x = v;
		while (root[x] == HS_DOM_NONE && t->idom[x] != HS_DOM_NONE) {
			path[n++] = x;
			x = t->idom[x];
		}
		uint32_t found = root[x];
		while (n)
			root[path[--n]] = found;
	}
	free(path);
	*ret = root;
	return NULL;
}
