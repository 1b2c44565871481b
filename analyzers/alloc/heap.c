/* The allocator-neutral heap model (runs, regions, arenas, the final
 * sort): see analyzers/alloc/heap.h. */
#include "src/sort.h"
#include "src/vector.h"
#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/heap.h"

#include <stdarg.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

uint64_t hs_heap_size_class(const struct hs_heap *heap, uint64_t request)
{
	return heap->backend->size_class ? heap->backend->size_class(request) :
	       request;
}

uint64_t hs_heap_slack(const struct hs_heap *heap, const struct hs_alloc *a)
{
	if (hs_alloc_place(heap, a)->slack)
		return hs_alloc_place(heap, a)->slack;
	return heap->backend->slack ?
	       heap->backend->slack(hs_alloc_place(heap, a), a->size) : 1;
}

struct hs_heap *hs_heap_create(const struct hs_backend *backend)
{
	struct hs_heap *heap = calloc(1, sizeof(*heap));
	if (heap) {
		heap->backend = backend;
		heap->allocator = backend->name;
		memcpy(heap->own_places, backend->places,
		       sizeof(heap->own_places));
		heap->places = heap->own_places;
	}
	return heap;
}

void hs_heap_destroy(struct hs_heap *heap)
{
	if (!heap)
		return;
	free(heap->allocs);
	free(heap->runs);
	free(heap->ends);
	free(heap->arenas);
	free(heap->regions);
	free(heap->classes);
	free(heap->stats);
	free(heap->pymalloc);
	free(heap->version);
	free(heap);
}

/* A totals_only heap's run ends: the current run's kept, if it has a
 * block, and a new one begun. */
static struct hs_error *end_run(struct hs_heap *heap)
{
	if (!heap->run_blocks)
		return NULL;
	if (heap->nends == heap->endcap) {
		struct hs_run_ends *v = hs_vector_grow(heap->ends, heap->nends,
						       &heap->endcap, 1, sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		heap->ends = v;
	}
	heap->ends[heap->nends++] = heap->run;
	heap->run_blocks = 0;
	return NULL;
}

struct hs_error *hs_heap_begin_run(struct hs_heap *heap)
{
	if (heap->totals_only) {
		struct hs_error *err = end_run(heap);
		if (err)
			return err;
	}
	if (heap->nruns && heap->runs[heap->nruns - 1] == heap->nallocs)
		return NULL;  /* previous run is empty: reuse it */
	if (heap->nruns == heap->runcap) {
		size_t *r = hs_vector_grow(heap->runs, heap->nruns, &heap->runcap, 1,
					   sizeof(*r));
		if (!r)
			return &hs_error_nomem;
		heap->runs = r;
	}
	heap->runs[heap->nruns++] = heap->nallocs;
	return NULL;
}

struct hs_error *hs_heap_reserve(struct hs_heap *heap, size_t n)
{
	if (n <= heap->cap || heap->totals_only)
		return NULL;
	struct hs_alloc *v = realloc(heap->allocs, n * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	hs_vector_hugepages(v, n * sizeof(*v));
	heap->allocs = v;
	heap->cap = n;
	return NULL;
}

struct hs_error *hs_heap_add_slow(struct hs_heap *heap, const struct hs_alloc *a)
{
	if (heap->nallocs == heap->cap) {
		size_t cap = heap->cap ? heap->cap + heap->cap / 2 : 1024;
		struct hs_alloc *n = realloc(heap->allocs, cap * sizeof(*n));
		if (!n)
			return &hs_error_nomem;
		hs_vector_hugepages(n, cap * sizeof(*n));
		heap->allocs = n;
		heap->cap = cap;
	}
	if (!heap->nruns) {
		struct hs_error *err = hs_heap_begin_run(heap);
		if (err)
			return err;
	}
	heap->allocs[heap->nallocs++] = *a;
	return NULL;
}

struct hs_error *hs_heap_add_arena(struct hs_heap *heap,
				   const struct hs_arena *a, size_t *ret)
{
	if (heap->narenas == heap->arenacap) {
		/* doubling: a hostile arena ring may have 65,536 arenas */
		struct hs_arena *v = hs_vector_grow(heap->arenas, heap->narenas,
						    &heap->arenacap, 1, sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		heap->arenas = v;
	}
	heap->arenas[heap->narenas] = *a;
	if (ret)
		*ret = heap->narenas;
	heap->narenas++;
	return NULL;
}

struct hs_error *hs_heap_add_region(struct hs_heap *heap, uint64_t start,
				    uint64_t end, enum hs_region_kind kind)
{
	if (heap->nregions == heap->regcap) {
		/* doubling: a hostile main arena may have a million pieces */
		struct hs_region *v = hs_vector_grow(heap->regions, heap->nregions,
						     &heap->regcap, 1, sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		heap->regions = v;
	}
	heap->regions[heap->nregions++] = (struct hs_region){start, end, kind};
	return NULL;
}

static int cmp_region(const void *a, const void *b)
{
	const struct hs_region *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct run {
	size_t start, len;
	uint64_t first;
};

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct hs_alloc *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One pass over the blocks: whether they are sorted, where the first
 * overlap is (n: none), and heap's counts by place. */
static bool scan(struct hs_heap *heap, size_t *overlap)
{
	const struct hs_alloc *a = heap->allocs;
	size_t n = heap->nallocs;
	bool sorted = true;
	*overlap = n;
	memset(heap->count_where, 0, sizeof(heap->count_where));
	memset(heap->bytes_where, 0, sizeof(heap->bytes_where));
	for (size_t i = 0; i < n; i++) {
		const struct hs_alloc *q = &a[i];
		heap->count_where[q->where]++;
		heap->bytes_where[q->where] += q->size;
		if (!i)
			continue;
		const struct hs_alloc *p = &a[i - 1];
		if (p->addr >= q->addr)
			sorted = false;
		uint64_t hdr = heap->places[q->where].header;
		if (*overlap == n && p->addr + p->size > q->addr - hdr)
			*overlap = i;
	}
	return sorted;
}

static int cmp_ends(const void *a, const void *b)
{
	const struct hs_run_ends *x = a, *y = b;
	return x->first_addr < y->first_addr ? -1 : x->first_addr > y->first_addr;
}

/* hs_heap_finish of a totals_only heap: the runs in the order the blocks
 * would be sorted in, each one's last block against the next one's first
 * (the blocks within a run were checked as they came). */
static struct hs_error *finish_totals(struct hs_heap *heap)
{
	struct hs_error *err = end_run(heap);
	if (err)
		return err;
	hs_sort(heap->ends, heap->nends, sizeof(*heap->ends), cmp_ends);
	for (size_t i = 1; i < heap->nends; i++) {
		const struct hs_run_ends *p = &heap->ends[i - 1], *q = &heap->ends[i];
		if (p->last_addr >= q->first_addr ||
		    p->last_end > q->first_addr - q->first_header)
			heap->needs_blocks = true;
	}
	return NULL;
}

struct hs_error *hs_heap_finish(struct hs_heap *heap)
{
	size_t n = heap->nallocs, overlap;
	hs_sort(heap->regions, heap->nregions, sizeof(*heap->regions), cmp_region);
	if (heap->totals_only)
		return finish_totals(heap);
	if (scan(heap, &overlap))
		goto check;
	struct run *runs = malloc((heap->nruns + 1) * sizeof(*runs));
	struct hs_alloc *out = malloc((n ? n : 1) * sizeof(*out));
	hs_vector_hugepages(out, (n ? n : 1) * sizeof(*out));
	if (!runs || !out) {
		free(runs);
		free(out);
		return &hs_error_nomem;
	}
	size_t nr = 0;
	for (size_t i = 0; i < heap->nruns; i++) {
		size_t s = heap->runs[i];
		size_t e = i + 1 < heap->nruns ? heap->runs[i + 1] : n;
		if (e > s)
			runs[nr++] = (struct run){s, e - s, heap->allocs[s].addr};
	}
	hs_sort(runs, nr, sizeof(*runs), cmp_run);
	size_t k = 0;
	for (size_t i = 0; i < nr; i++) {
		memcpy(out + k, heap->allocs + runs[i].start,
		       runs[i].len * sizeof(*out));
		k += runs[i].len;
	}
	free(runs);
	free(heap->allocs);
	heap->allocs = out;
	heap->cap = n ? n : 1;
	if (!scan(heap, &overlap)) {
		/* runs interleave: only a corrupt heap does that */
		hs_sort(out, n, sizeof(*out), cmp_alloc);
		scan(heap, &overlap);
	}
check:
	if (overlap < n) {
		const struct hs_alloc *p = &heap->allocs[overlap - 1],
				      *q = &heap->allocs[overlap];
		return hs_error_create(HS_ERR_CORRUPT,
				       "blocks at %#llx and %#llx overlap",
				       (unsigned long long)p->addr,
				       (unsigned long long)q->addr);
	}
	return NULL;
}

bool hs_heap_in_regions(const struct hs_heap *heap, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < heap->nregions; i++)
		if (addr < heap->regions[i].end && addr + len > heap->regions[i].start)
			return true;
	return false;
}

void hs_heap_finish_regions(struct hs_heap *heap)
{
	hs_sort(heap->regions, heap->nregions, sizeof(*heap->regions), cmp_region);
}

struct hs_error *hs_heap_merge(struct hs_heap *heap,
			       const struct hs_alloc *blocks, size_t n)
{
	if (!n)
		return NULL;
	if (heap->totals_only) {
		/* counted only; a layer's blocks lie outside malloc's heaps */
		for (size_t i = 0; i < n; i++) {
			heap->count_where[blocks[i].where]++;
			heap->bytes_where[blocks[i].where] += blocks[i].size;
		}
		heap->nallocs += n;
		return NULL;
	}
	size_t m = heap->nallocs, total = m + n;
	struct hs_alloc *out = malloc(total * sizeof(*out));
	if (!out)
		return &hs_error_nomem;
	hs_vector_hugepages(out, total * sizeof(*out));
	const struct hs_alloc *a = heap->allocs;
	size_t i = 0, j = 0, k = 0;
	while (i < m && j < n)
		out[k++] = a[i].addr < blocks[j].addr ? a[i++] : blocks[j++];
	if (m > i)      /* a may be NULL: a heap without a block */
		memcpy(out + k, a + i, (m - i) * sizeof(*out));
	k += m - i;
	if (n > j)
		memcpy(out + k, blocks + j, (n - j) * sizeof(*out));
	struct hs_alloc *old = heap->allocs;
	size_t oldcap = heap->cap, overlap;
	heap->allocs = out;
	heap->nallocs = total;
	heap->cap = total;
	if (!scan(heap, &overlap) || overlap < total) {
		heap->allocs = old;
		heap->nallocs = m;
		heap->cap = oldcap;
		scan(heap, &overlap);
		free(out);
		return hs_error_create(HS_ERR_CORRUPT,
				       "pymalloc's blocks overlap malloc's");
	}
	free(old);
	return NULL;
}

const struct hs_alloc *hs_heap_find(const struct hs_heap *heap, uint64_t addr)
{
	size_t lo = 0, hi = heap->nallocs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hs_alloc *a = &heap->allocs[mid];
		if (addr < a->addr)
			hi = mid;
		else if (addr - a->addr >= (a->size ? a->size : 1))
			lo = mid + 1;
		else
			return a;
	}
	return NULL;
}

void hs_heap_found(struct hs_heap *h, const char *item, const char *how,
		   const char *detail, ...)
{
	struct hs_found *f = NULL;
	for (size_t i = 0; i < h->nfound; i++)
		if (!strcmp(h->found[i].item, item))
			f = &h->found[i];
	if (!f) {
		if (h->nfound >= HS_HEAP_MAX_FOUND)
			return;
		f = &h->found[h->nfound++];
	}
	f->item = item;
	f->how = how;
	f->detail[0] = 0;
	if (detail) {
		va_list ap;
		va_start(ap, detail);
		vsnprintf(f->detail, sizeof(f->detail), detail, ap);
		va_end(ap);
	}
}
