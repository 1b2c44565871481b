/* Comparison of snapshots: see analyzers/diff.h (matching rules, rows,
 * series and trends). */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/diff.h"
#include "src/strmap.h"

#include <stdlib.h>
#include <string.h>

const char *const hs_trend_names[] = {
	[HS_TREND_NONE] = "none",
	[HS_TREND_GROWING] = "growing",
	[HS_TREND_PLATEAU] = "plateau",
	[HS_TREND_STABLE] = "stable",
	[HS_TREND_SAWTOOTH] = "sawtooth",
	[HS_TREND_SHRINKING] = "shrinking",
};

enum hs_trend hs_trend_of(const uint64_t *v, size_t n, double *slope)
{
	/* least squares slope over the snapshot index */
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < n; i++) {
		sx += (double)i;
		sy += (double)v[i];
		sxx += (double)i * (double)i;
		sxy += (double)i * (double)v[i];
	}
	double den = (double)n * sxx - sx * sx;
	*slope = n > 1 && den != 0 ? ((double)n * sxy - sx * sy) / den : 0;
	if (n < 3)
		return HS_TREND_NONE;
	uint64_t max = 0, min = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (v[i] > max)
			max = v[i];
		if (v[i] < min)
			min = v[i];
	}
	/* changes within 2% of the largest value are noise (allocator
	 * rounding, a buffer or two) */
	double tol = 0.02 * (double)max;
	if ((double)(max - min) <= tol)
		return HS_TREND_STABLE;
	bool ups = false, downs = false;
	for (size_t i = 0; i + 1 < n; i++) {
		double d = (double)v[i + 1] - (double)v[i];
		if (d > tol)
			ups = true;
		else if (d < -tol)
			downs = true;
	}
	double last = (double)v[n - 1] - (double)v[n - 2];
	if (ups && !downs)
		return last > tol ? HS_TREND_GROWING : HS_TREND_PLATEAU;
	if (downs && !ups)
		return HS_TREND_SHRINKING;
	return HS_TREND_SAWTOOTH;
}

/* acc + sign * v, wrapping (rows read from a summary are untrusted: no
 * signed overflow whatever they hold) */
static int64_t add_signed(int64_t acc, int sign, uint64_t v)
{
	uint64_t u = (uint64_t)acc;
	return (int64_t)(sign > 0 ? u + v : sign < 0 ? u - v : u);
}

struct builder {
	struct hs_diff *d;
	size_t n;
	struct hs_strmap tmap, rmap;
	size_t tcap, rcap;
};

static struct hs_diff_type *type_row(struct builder *b, const char *label)
{
	struct hs_diff *d = b->d;
	size_t idx;
	if (hs_strmap_find(&b->tmap, label, &idx))
		return &d->types[idx];
	if (d->ntypes == b->tcap) {
		size_t cap = b->tcap ? 2 * b->tcap : 64;
		struct hs_diff_type *v = hs_realloc(d->types, cap * sizeof(*v));
		if (!v)
			return NULL;
		d->types = v;
		b->tcap = cap;
	}
	struct hs_diff_type *row = &d->types[d->ntypes];
	memset(row, 0, sizeof(*row));
	row->label = strdup(label);
	row->bytes = hs_calloc(b->n, sizeof(uint64_t));
	if (!row->label || !row->bytes ||
	    hs_strmap_put(&b->tmap, row->label, d->ntypes)) {
		free(row->label);
		free(row->bytes);
		return NULL;
	}
	d->ntypes++;
	return row;
}

static struct hs_diff_root *root_row(struct builder *b, const char *name,
				     const char *kind)
{
	struct hs_diff *d = b->d;
	size_t idx;
	if (hs_strmap_find(&b->rmap, name, &idx))
		return &d->roots[idx];
	if (d->nroots == b->rcap) {
		size_t cap = b->rcap ? 2 * b->rcap : 64;
		struct hs_diff_root *v = hs_realloc(d->roots, cap * sizeof(*v));
		if (!v)
			return NULL;
		d->roots = v;
		b->rcap = cap;
	}
	if (hs_strmap_put(&b->rmap, name, d->nroots))
		return NULL;
	struct hs_diff_root *row = &d->roots[d->nroots++];
	memset(row, 0, sizeof(*row));
	row->name = name;
	row->kind = kind;
	row->retained = hs_calloc(b->n, sizeof(uint64_t));
	return row->retained ? row : NULL;
}

static const char *type_name(const struct hs_diff_snapshot *s, uint32_t id)
{
	struct hs_dtype *d = hs_types_of(s->types, id);
	return d ? d->name : NULL;
}

static bool same_block(const struct hs_diff_snapshot *a, uint32_t i,
		       const struct hs_diff_snapshot *b, uint32_t j)
{
	if (a->heap->allocs[i].size != b->heap->allocs[j].size)
		return false;
	const char *x = type_name(a, i), *y = type_name(b, j);
	return (!x && !y) || (x && y && !strcmp(x, y));
}

struct holder {
	uint32_t root;          /* root node */
	uint64_t bytes;
};

static int cmp_type(const void *a, const void *b)
{
	const struct hs_diff_type *x = a, *y = b;
	if (x->delta_bytes != y->delta_bytes)
		return x->delta_bytes > y->delta_bytes ? -1 : 1;
	return strcmp(x->label, y->label);
}

static int cmp_root(const void *a, const void *b)
{
	const struct hs_diff_root *x = a, *y = b;
	if (x->retained_delta != y->retained_delta)
		return x->retained_delta > y->retained_delta ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* New and deleted blocks between the first and the last snapshot, per
 * row, and which root holds each row's new bytes in the last one. */
static struct hs_error *compare_ends(struct builder *b,
				     const struct hs_diff_snapshot *a,
				     const struct hs_diff_snapshot *z)
{
	struct hs_diff *d = b->d;
	struct hs_root_map root_of;
	struct hs_error *err = hs_root_map_init(z->retain, &root_of);
	if (err)
		return err;
	/* per row: bytes of new blocks per holding root (small lists) */
	struct holder **holders = NULL;
	size_t *nholders = NULL, hcap = 0;
	err = &hs_error_nomem;
	const struct hs_heap *ha = a->heap, *hz = z->heap;
	size_t i = 0, j = 0;
	char label[600];
	while (i < ha->nallocs || j < hz->nallocs) {
		const struct hs_alloc *x = i < ha->nallocs ? &ha->allocs[i] : NULL;
		const struct hs_alloc *y = j < hz->nallocs ? &hz->allocs[j] : NULL;
		if (x && !hs_alloc_in_graph(x)) {
			i++;
			continue;
		}
		if (y && !hs_alloc_in_graph(y)) {
			j++;
			continue;
		}
		bool del = x && (!y || x->addr < y->addr ||
				 (x->addr == y->addr && !same_block(a, (uint32_t)i, z, (uint32_t)j)));
		bool add = y && (!x || y->addr < x->addr ||
				 (x->addr == y->addr && !same_block(a, (uint32_t)i, z, (uint32_t)j)));
		if (x && y && x->addr == y->addr && !del && !add) {
			/* the same block in both; a leak root that is new */
			if (z->mark->reach[j] == HS_REACH_LEAK_ROOT &&
			    a->mark->reach[i] != HS_REACH_LEAK_ROOT) {
				d->new_leak_roots++;
				d->new_leak_root_bytes += y->size;
			}
			i++;
			j++;
			continue;
		}
		if (del) {
			struct hs_diff_type *row = type_row(b, hs_type_label(ha, a->types, (uint32_t)i,
									     label, sizeof(label)));
			if (!row)
				goto out;
			row->deleted_count++;
			row->deleted_bytes += x->size;
			i++;
		}
		if (add) {
			struct hs_diff_type *row = type_row(b, hs_type_label(hz, z->types, (uint32_t)j,
									     label, sizeof(label)));
			if (!row)
				goto out;
			row->new_count++;
			row->new_bytes += y->size;
			if (z->mark->reach[j] == HS_REACH_LEAK_ROOT) {
				d->new_leak_roots++;
				d->new_leak_root_bytes += y->size;
			}
			/* who holds it */
			size_t r = (size_t)(row - d->types);
			if (r >= hcap) {
				size_t cap = hcap ? 2 * hcap : 64;
				while (cap <= r)
					cap *= 2;
				struct holder **h = hs_realloc(holders, cap * sizeof(*h));
				size_t *nh = hs_realloc(nholders, cap * sizeof(*nh));
				if (h)
					holders = h;
				if (nh)
					nholders = nh;
				if (!h || !nh)
					goto out;
				memset(holders + hcap, 0, (cap - hcap) * sizeof(*h));
				memset(nholders + hcap, 0, (cap - hcap) * sizeof(*nh));
				hcap = cap;
			}
			uint32_t root = hs_root_map_get(&root_of, hs_retain_node(z->retain, (uint32_t)j));
			size_t k = 0;
			while (k < nholders[r] && holders[r][k].root != root)
				k++;
			if (k == nholders[r]) {
				struct holder *h = hs_realloc(holders[r], (k + 1) * sizeof(*h));
				if (!h)
					goto out;
				holders[r] = h;
				h[k] = (struct holder){root, 0};
				nholders[r]++;
			}
			holders[r][k].bytes += y->size;
			j++;
		}
	}
	for (size_t r = 0; r < d->ntypes && r < hcap; r++) {
		struct hs_diff_type *row = &d->types[r];
		for (size_t k = 0; k < nholders[r]; k++) {
			if (holders[r][k].bytes <= row->held_bytes)
				continue;
			uint32_t node = holders[r][k].root;
			row->held_bytes = holders[r][k].bytes;
			const struct hs_root *root = hs_retain_root(z->retain, z->roots, node);
			row->held_by = root ? root->name :
				node == HS_NODE_LEAKED ? "(leaked: no root holds these)" :
				"(held by several roots, none alone)";
		}
	}
	err = NULL;
out:
	for (size_t r = 0; r < hcap; r++)
		free(holders[r]);
	free(holders);
	free(nholders);
	hs_root_map_fini(&root_of);
	return err;
}

struct hs_error *hs_diff_rows_of(const struct hs_diff_snapshot *s,
				 struct hs_diff_rows **ret)
{
	struct hs_diff_rows *r = hs_calloc(1, sizeof(*r));
	if (!r)
		return &hs_error_nomem;
	struct hs_type_row *rows = NULL;
	size_t nrows = 0;
	struct hs_root_row *rr = NULL;
	size_t nrr = 0;
	struct hs_error *err = hs_type_rows(s->heap, s->mark, s->retain, s->types,
					    &rows, &nrows);
	if (err)
		goto fail;
	err = &hs_error_nomem;
	r->types = hs_calloc(nrows ? nrows : 1, sizeof(*r->types));
	if (!r->types)
		goto fail;
	for (size_t i = 0; i < nrows; i++) {
		/* the label moves to the diff's row */
		r->types[i] = (struct hs_diff_trow){rows[i].label, rows[i].count,
						    rows[i].bytes, rows[i].retained};
		rows[i].label = NULL;
	}
	r->ntypes = nrows;
	if ((err = hs_root_rows(s->retain, s->roots, &rr, &nrr)))
		goto fail;
	err = &hs_error_nomem;
	r->roots = hs_calloc(nrr ? nrr : 1, sizeof(*r->roots));
	if (!r->roots)
		goto fail;
	for (size_t i = 0; i < nrr; i++) {
		struct hs_diff_rrow *x = &r->roots[r->nroots];
		x->name = strdup(rr[i].name);
		x->kind = strdup(rr[i].kind);
		x->retained = rr[i].retained;
		r->nroots++;
		if (!x->name || !x->kind)
			goto fail;
	}
	const struct hs_class_total *t = s->mark->total;
	r->used_count = s->retain->used_count;
	r->used_bytes = s->retain->used_bytes;
	r->leaked_count = t[HS_REACH_LEAK_ROOT].count + t[HS_REACH_INDIRECT].count;
	r->leaked_bytes = t[HS_REACH_LEAK_ROOT].bytes + t[HS_REACH_INDIRECT].bytes;
	r->partial = s->heap->partial;
	hs_type_rows_free(rows, nrows);
	free(rr);
	*ret = r;
	return NULL;
fail:
	hs_type_rows_free(rows, nrows);
	free(rr);
	hs_diff_rows_destroy(r);
	return err;
}

void hs_diff_rows_destroy(struct hs_diff_rows *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ntypes; i++)
		free(r->types[i].label);
	free(r->types);
	for (size_t i = 0; i < r->nroots; i++) {
		free(r->roots[i].name);
		free(r->roots[i].kind);
	}
	free(r->roots);
	free(r);
}

struct hs_error *hs_diff_compute(const struct hs_diff_input *in, size_t n,
				 struct hs_diff **ret)
{
	struct hs_diff *d = hs_calloc(1, sizeof(*d));
	if (!d)
		return &hs_error_nomem;
	d->nsnaps = n;
	d->by_blocks = n && in[0].blocks && in[n - 1].blocks;
	for (size_t k = 0; k < n; k++)
		d->by_blocks &= !in[k].summary;
	struct builder b = {.d = d, .n = n};
	struct hs_error *err = &hs_error_nomem;
	d->leaked = hs_calloc(n, sizeof(uint64_t));
	if (!d->leaked)
		goto fail;
	/* series: bytes per type row, retained per root, leaked bytes; the
	 * ends' counts and bytes for the deltas by totals */
	for (size_t k = 0; k < n; k++) {
		const struct hs_diff_rows *rows = in[k].rows;
		int sign = (k == n - 1) - (k == 0);
		for (size_t i = 0; i < rows->ntypes; i++) {
			const struct hs_diff_trow *x = &rows->types[i];
			struct hs_diff_type *row = type_row(&b, x->label);
			if (!row)
				goto fail;
			/* types of one name and different sizes (two
			 * modules' struct of one name) share a label: one
			 * row */
			row->bytes[k] += x->bytes;
			row->retained_delta = add_signed(row->retained_delta, sign, x->retained);
			if (!d->by_blocks) {
				row->delta_count = add_signed(row->delta_count, sign, x->count);
				row->delta_bytes = add_signed(row->delta_bytes, sign, x->bytes);
			}
		}
		for (size_t i = 0; i < rows->nroots; i++) {
			const struct hs_diff_rrow *x = &rows->roots[i];
			struct hs_diff_root *row = root_row(&b, x->name, x->kind);
			if (!row)
				goto fail;
			row->retained[k] += x->retained;
		}
		d->leaked[k] = rows->leaked_bytes;
		d->leaked_delta_count = add_signed(d->leaked_delta_count, sign, rows->leaked_count);
		d->used_delta_count = add_signed(d->used_delta_count, sign, rows->used_count);
		d->used_delta_bytes = add_signed(d->used_delta_bytes, sign, rows->used_bytes);
	}
	d->leaked_delta_bytes = add_signed((int64_t)d->leaked[n - 1], -1, d->leaked[0]);
	d->leaked_trend = hs_trend_of(d->leaked, n, &d->leaked_slope);
	if (d->by_blocks && (err = compare_ends(&b, in[0].blocks, in[n - 1].blocks)))
		goto fail;
	for (size_t i = 0; i < d->ntypes; i++) {
		struct hs_diff_type *row = &d->types[i];
		if (d->by_blocks) {
			row->delta_count = (int64_t)row->new_count - (int64_t)row->deleted_count;
			row->delta_bytes = (int64_t)row->new_bytes - (int64_t)row->deleted_bytes;
		}
		row->trend = hs_trend_of(row->bytes, n, &row->slope);
	}
	for (size_t i = 0; i < d->nroots; i++) {
		struct hs_diff_root *row = &d->roots[i];
		row->retained_delta = add_signed((int64_t)row->retained[n - 1], -1,
						 row->retained[0]);
		row->trend = hs_trend_of(row->retained, n, &row->slope);
	}
	hs_strmap_free(&b.tmap);
	hs_strmap_free(&b.rmap);
	hs_sort(d->types, d->ntypes, sizeof(*d->types), cmp_type);
	hs_sort(d->roots, d->nroots, sizeof(*d->roots), cmp_root);
	*ret = d;
	return NULL;
fail:
	hs_strmap_free(&b.tmap);
	hs_strmap_free(&b.rmap);
	hs_diff_destroy(d);
	return err;
}

void hs_diff_destroy(struct hs_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ntypes; i++) {
		free(d->types[i].label);
		free(d->types[i].bytes);
	}
	free(d->types);
	for (size_t i = 0; i < d->nroots; i++)
		free(d->roots[i].retained);
	free(d->roots);
	free(d->leaked);
	free(d);
}
