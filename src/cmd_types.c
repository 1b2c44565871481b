/* heapsift types: what the heap is made of. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli_retain.h"

struct row {
	uint32_t type;          /* registry index, or HS_NO_TYPE */
	uint64_t size;          /* for untyped rows: the block size */
	uint64_t count, bytes, retained, leaked_count, leaked_bytes;
	uint32_t active;        /* during the walk of the dominator tree */
	bool arrays;            /* some block holds several elements */
};

struct rows {
	struct row *v;
	size_t n, cap;
	size_t *hash;           /* untyped rows by size: index + 1 */
	size_t hcap;
};

static struct row *add_row(struct rows *r)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct row *v = realloc(r->v, cap * sizeof(*v));
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
	struct row *x = add_row(r);
	if (!x)
		return SIZE_MAX;
	x->type = HS_NO_TYPE;
	x->size = size;
	r->hash[j] = r->n;
	return r->n - 1;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

int hs_cmd_types(struct hs_cli *cli, struct hs_snapshot *snap)
{
	const struct hs_retain *r;
	const struct hs_types *types;
	const struct hs_error *err;
	if ((err = hs_snapshot_retain(snap, &r)) ||
	    (err = hs_snapshot_types(snap, &types)))
		return hs_cli_fail(cli, err);
	const struct hs_heap *heap = snap->heap;
	const struct hs_domtree *t = r->tree;
	uint32_t n = t->n, nalloc = snap->graph->n;
	struct rows rows = {0};
	uint32_t *row_of = malloc(((size_t)nalloc + 1) * sizeof(uint32_t));
	uint32_t *coff = calloc((size_t)n + 2, sizeof(uint32_t));
	uint32_t *kids = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *stack = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *pos = malloc(((size_t)n + 1) * sizeof(uint32_t));
	rows.hcap = 1024;
	while (rows.hcap < 4 * (size_t)(nalloc / 16 + 1) && rows.hcap < (1u << 24))
		rows.hcap *= 2;
	rows.hash = calloc(rows.hcap, sizeof(size_t));
	int rc = HS_EXIT_OK;
	if (!row_of || !coff || !kids || !stack || !pos || !rows.hash)
		goto nomem;
	/* one row per type, then one per size of untyped blocks */
	for (size_t i = 0; i < types->reg->n; i++) {
		struct row *x = add_row(&rows);
		if (!x)
			goto nomem;
		x->type = (uint32_t)i;
	}
	for (uint32_t id = 0; id < nalloc; id++) {
		const struct hs_alloc *a = &heap->allocs[id];
		row_of[id] = UINT32_MAX;
		if (!hs_alloc_in_graph(a))
			continue;
		size_t k = types->type_of[id] != HS_NO_TYPE ? types->type_of[id] :
			untyped_row(&rows, a->size);
		if (k == SIZE_MAX)
			goto nomem;
		row_of[id] = (uint32_t)k;
		struct row *x = &rows.v[k];
		if (x->type != HS_NO_TYPE) {
			uint64_t tsize = types->reg->v[x->type]->size;
			if (tsize && a->size / tsize >= 2)
				x->arrays = true;
		}
		x->count++;
		x->bytes += a->size;
		uint8_t reach = snap->mark->reach[id];
		if (reach == HS_REACH_LEAK_ROOT || reach == HS_REACH_INDIRECT) {
			x->leaked_count++;
			x->leaked_bytes += a->size;
		}
	}
	/* retained per type without double counting: a block counts only
	 * when no dominator above it has its type (a walk of the dominator
	 * tree keeping, per type, how many of the current path have it) */
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
				struct row *x = &rows.v[row_of[w - r->base]];
				if (!x->active++)
					x->retained += t->retained[w];
			}
			stack[sp] = w;
			pos[sp++] = coff[w];
			continue;
		}
		if (hs_retain_is_alloc(r, v) && row_of[v - r->base] != UINT32_MAX)
			rows.v[row_of[v - r->base]].active--;
		sp--;
	}
	free(kids);
	free(pos);
	free(stack);
	free(coff);
	kids = pos = stack = coff = NULL;
	/* keep rows with blocks, biggest retained first */
	size_t m = 0;
	for (size_t i = 0; i < rows.n; i++)
		if (rows.v[i].count)
			rows.v[m++] = rows.v[i];
	qsort(rows.v, m, sizeof(*rows.v), cmp_row);
	uint64_t typed_count = 0, typed_bytes = 0;
	for (size_t i = 0; i < m; i++)
		if (rows.v[i].type != HS_NO_TYPE) {
			typed_count += rows.v[i].count;
			typed_bytes += rows.v[i].bytes;
		}
	size_t limit = cli->top_n_set ? cli->top_n : m;
	char name[512], b1[32], b2[32], b3[32];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "typed_count", typed_count);
		hs_jsonw_kuint(&w, "typed_bytes", typed_bytes);
		hs_jsonw_kuint(&w, "used_count", r->used_count);
		hs_jsonw_kuint(&w, "used_bytes", r->used_bytes);
		hs_jsonw_key(&w, "sources");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "vtable", types->from_vtable);
		hs_jsonw_kuint(&w, "rtti", types->from_rtti);
		hs_jsonw_kuint(&w, "dwarf", types->from_dwarf);
		hs_jsonw_object_end(&w);
		hs_jsonw_kuint(&w, "conflicts", types->conflicts);
		hs_jsonw_key(&w, "types");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < m && i < limit; i++) {
			const struct row *x = &rows.v[i];
			hs_jsonw_object_begin(&w);
			if (x->type != HS_NO_TYPE) {
				hs_jsonw_kstring(&w, "type", types->reg->v[x->type]->name);
				hs_jsonw_kuint(&w, "type_size", types->reg->v[x->type]->size);
				hs_jsonw_kbool(&w, "arrays", x->arrays);
			} else {
				hs_jsonw_key(&w, "type");
				hs_jsonw_null(&w);
				hs_jsonw_kuint(&w, "block_size", x->size);
			}
			hs_jsonw_kuint(&w, "count", x->count);
			hs_jsonw_kuint(&w, "bytes", x->bytes);
			hs_jsonw_kuint(&w, "retained", x->retained);
			hs_jsonw_kuint(&w, "leaked_count", x->leaked_count);
			hs_jsonw_kuint(&w, "leaked_bytes", x->leaked_bytes);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		printf("TYPES: %" PRIu64 " of %" PRIu64 " blocks typed (%s of %s): %" PRIu64
		       " by vtable, %" PRIu64 " by RTTI, %" PRIu64 " through DWARF\n\n",
		       typed_count, r->used_count, hs_fmt_size(b1, typed_bytes),
		       hs_fmt_size(b2, r->used_bytes), types->from_vtable,
		       types->from_rtti, types->from_dwarf);
		printf("%11s %9s %11s %9s %11s  %s\n", "RETAINED", "COUNT", "BYTES",
		       "LEAKED", "LEAKED B", "TYPE");
		for (size_t i = 0; i < m && i < limit; i++) {
			const struct row *x = &rows.v[i];
			if (x->type != HS_NO_TYPE)
				snprintf(name, sizeof(name), "%s%s", types->reg->v[x->type]->name,
					 x->arrays ? "[]" : "");
			else
				snprintf(name, sizeof(name), "(untyped, %" PRIu64 " bytes)", x->size);
			printf("%11s %9" PRIu64 " %11s %9" PRIu64 " %11s  %s\n",
			       hs_fmt_size(b1, x->retained), x->count,
			       hs_fmt_size(b2, x->bytes), x->leaked_count,
			       hs_fmt_size(b3, x->leaked_bytes), name);
		}
		if (limit < m)
			printf("(%zu more rows; -n N shows more)\n", m - limit);
	}
	goto out;
nomem:
	rc = hs_cli_fail(cli, &hs_error_nomem);
out:
	free(row_of);
	free(coff);
	free(kids);
	free(stack);
	free(pos);
	free(rows.v);
	free(rows.hash);
	return rc;
}
