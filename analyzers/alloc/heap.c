/* The allocator-neutral heap model (runs, regions, arenas, the final
 * sort): see analyzers/alloc/heap.h. */
#include "src/sort.h"
#include "src/alloc.h"
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
	struct hs_heap *heap = hs_calloc(1, sizeof(*heap));
	if (heap) {
		heap->backend = backend;
		heap->allocator = backend->name;
		memcpy(heap->own_places, backend->places,
		       sizeof(heap->own_places));
		heap->places = heap->own_places;
		heap->cur_arena = HS_ARENA_UNSET;
	}
	return heap;
}

void hs_heap_destroy(struct hs_heap *heap)
{
	if (!heap)
		return;
	free(heap->allocs);
	free(heap->build);
	free(heap->arena_runs);
	free(heap->runs);
	free(heap->run_arena);
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
	heap->cur_arena = HS_ARENA_UNSET;  /* its first block's */
	if (heap->nruns && heap->runs[heap->nruns - 1] == heap->nallocs)
		return NULL;  /* previous run is empty: reuse it */
	if (heap->nruns == heap->runcap) {
		size_t cap = heap->runcap;
		size_t *r = hs_vector_grow(heap->runs, heap->nruns, &cap, 1,
					   sizeof(*r));
		if (!r)
			return &hs_error_nomem;
		heap->runs = r;
		/* (runs keeps its room if this fails) */
		uint32_t *a = hs_realloc(heap->run_arena, cap * sizeof(*a));
		if (!a)
			return &hs_error_nomem;
		heap->run_arena = a;
		heap->runcap = cap;
	}
	heap->run_arena[heap->nruns] = HS_ARENA_UNSET;
	heap->runs[heap->nruns++] = heap->nallocs;
	return NULL;
}

struct hs_error *hs_heap_reserve(struct hs_heap *heap, size_t n)
{
	if (n <= heap->cap || heap->totals_only)
		return NULL;
	struct hs_alloc *v = hs_realloc(heap->build, n * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	hs_vector_hugepages(v, n * sizeof(*v));
	heap->build = v;
	heap->cap = n;
	return NULL;
}

struct hs_error *hs_heap_add_slow(struct hs_heap *heap, const struct hs_alloc_in *a)
{
	if (a->addr >= HS_ALLOC_ADDR_LIMIT) {
		/* (a corrupt walk's: hs_heap_finish tells) */
		if (!heap->past++ || a->addr < heap->first_past)
			heap->first_past = a->addr;
		return NULL;
	}
	/* a run's blocks are of one arena: another one begins a run (which
	 * keeps the order: the runs' ends need not be out of order) */
	if (!heap->nruns ||
	    (heap->cur_arena != HS_ARENA_UNSET && a->arena != heap->cur_arena)) {
		struct hs_error *err = hs_heap_begin_run(heap);
		if (err)
			return err;
	}
	if (heap->cur_arena == HS_ARENA_UNSET) {
		heap->cur_arena = a->arena;
		heap->run_arena[heap->nruns - 1] = a->arena;
	}
	if (heap->nallocs == heap->cap) {
		size_t cap = heap->cap ? heap->cap + heap->cap / 2 : 1024;
		struct hs_alloc *n = hs_realloc(heap->build, cap * sizeof(*n));
		if (!n)
			return &hs_error_nomem;
		hs_vector_hugepages(n, cap * sizeof(*n));
		heap->build = n;
		heap->cap = cap;
	}
	heap->build[heap->nallocs++] = (struct hs_alloc){
		.addr = a->addr, .size = a->size, .where = a->where};
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
	uint32_t arena;
};

/* By first block, then by place in the build (merge_runs' order) */
static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct hs_alloc_in *x = a, *y = b;
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

/* Appends the arena of the block at index id, if it differs from the
 * last run's. */
static bool push_arena(struct hs_arena_run **runs, size_t *n, size_t *cap,
		       size_t id, uint32_t arena)
{
	if (*n && (*runs)[*n - 1].arena == arena)
		return true;
	if (*n == *cap) {
		struct hs_arena_run *v = hs_vector_grow(*runs, *n, cap, 1, sizeof(*v));
		if (!v)
			return false;
		*runs = v;
	}
	(*runs)[(*n)++] = (struct hs_arena_run){id, arena};
	return true;
}

static struct hs_error *past_limit(uint64_t addr)
{
	return hs_error_create(HS_ERR_CORRUPT,
			       "a block at %#llx lies past 2^47, outside x86-64's user addresses",
			       (unsigned long long)addr);
}

/* What hs_heap_finish left out of a corrupt walk: the blocks that lie
 * past 2^47 or overlap a block kept before them, the first of each. */
struct sift {
	uint64_t last_addr, last_end;   /* the last block kept */
	bool any;                       /* one was kept */
	size_t past, overlaps;
	uint64_t first_past, overlap_p, overlap_q;
};

/* Keeps block a (of arena `arena`), the next in address order, at
 * out[*k], recording its arena, unless it starts inside, or at the start
 * of, the last block kept (its header included): then the sift counts it
 * and leaves it out.  (Blocks past 2^47 never reach the build:
 * hs_heap_add_slow counts them.) */
static inline struct hs_error *keep(struct hs_heap *heap, struct hs_alloc a,
				    uint32_t arena, struct hs_alloc *out, size_t *k,
				    size_t *runcap, struct sift *s)
{
	uint64_t addr = a.addr;
	if (s->any && (addr <= s->last_addr ||
		       s->last_end + heap->places[a.where].header > addr)) {
		if (!s->overlaps++) {
			s->overlap_p = s->last_addr;
			s->overlap_q = addr;
		}
		return NULL;
	}
	if (!push_arena(&heap->arena_runs, &heap->narena_runs, runcap, *k, arena))
		return &hs_error_nomem;
	out[(*k)++] = a;
	s->any = true;
	s->last_addr = addr;
	s->last_end = addr + (uint64_t)a.size;
	return NULL;
}

/* Keeps the blocks in[0..n) of one arena, in address order, at out[*k..)
 * (keep).  out may be in's own memory, at *k <= the blocks read so far:
 * each block is read before it is written, which never reaches a block
 * not yet read. */
static struct hs_error *compact(struct hs_heap *heap, const struct hs_alloc *in,
				size_t n, uint32_t arena, struct hs_alloc *out,
				size_t *k, size_t *runcap, struct sift *s)
{
	struct hs_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = keep(heap, in[i], arena, out, k, runcap, s);
	return err;
}

/* Is build in address order: within each run, and the runs one after
 * another in the order they were begun (*in_runs: within each run)? */
static bool build_sorted(const struct hs_heap *heap, bool *in_runs)
{
	const struct hs_alloc *a = heap->build;
	bool all = true;
	*in_runs = true;
	for (size_t r = 0, i = 1; i < heap->nallocs; i++) {
		while (r + 1 < heap->nruns && heap->runs[r + 1] <= i - 1)
			r++;
		if (a[i - 1].addr < a[i].addr)
			continue;
		all = false;
		if (!(r + 1 < heap->nruns && heap->runs[r + 1] == i))
			*in_runs = false;  /* within run r */
	}
	return all;
}

/* Does the build's block i come before block j?  By address, and at the
 * same address (a corrupt walk) by where they are in the build: the merge
 * keeps the order a stable sort would. */
static inline bool block_before(const struct hs_alloc *b, size_t i, size_t j)
{
	return b[i].addr < b[j].addr || (b[i].addr == b[j].addr && i < j);
}

/* Does run x's next block come before run y's? */
static inline bool run_before(const struct hs_alloc *b, const struct run *x,
			      const struct run *y)
{
	return block_before(b, x->start, y->start);
}

/* Runs that interleave (the mmapped chunks between two of a thread
 * arena's heaps), merged into out: a heap of the runs by their next
 * block; the first run gives all its blocks that come before the next
 * run's, in one go.  The runs' starts and lengths are used up. */
static struct hs_error *merge_runs(struct hs_heap *heap, struct run *runs, size_t nr,
				   struct hs_alloc *out, size_t *k, size_t *runcap,
				   struct sift *sift)
{
	const struct hs_alloc *b = heap->build;
	size_t *h = hs_malloc(nr * sizeof(*h)), nh = 0;
	if (!h)
		return &hs_error_nomem;
	/* sorted by their first blocks already (cmp_run): a heap as they
	 * are */
	for (size_t i = 0; i < nr; i++)
		h[nh++] = i;
	struct hs_error *err = NULL;
	while (nh && !err) {
		struct run *r = &runs[h[0]];
		const struct run *next = nh > 1 ? &runs[h[1]] : NULL;
		if (nh > 2 && run_before(b, &runs[h[2]], next))
			next = &runs[h[2]];
		size_t c = 1;
		if (!next)
			c = r->len;
		else
			while (c < r->len && block_before(b, r->start + c, next->start))
				c++;
		err = compact(heap, b + r->start, c, r->arena, out, k, runcap, sift);
		r->start += c;
		r->len -= c;
		if (!r->len)
			h[0] = h[--nh];
		/* the root down to its place */
		for (size_t i = 0;;) {
			size_t l = 2 * i + 1, m = i;
			if (l < nh && run_before(b, &runs[h[l]], &runs[h[m]]))
				m = l;
			if (l + 1 < nh && run_before(b, &runs[h[l + 1]], &runs[h[m]]))
				m = l + 1;
			if (m == i)
				break;
			size_t t = h[i];
			h[i] = h[m];
			h[m] = t;
			i = m;
		}
	}
	free(h);
	return err;
}

/* The build's runs in address order, compacted into a new table (*kept
 * blocks): concatenated when they lie apart, else merged.  On an error
 * the build is as it was. */
static struct hs_error *concat_runs(struct hs_heap *heap, bool *done,
				    size_t *runcap, size_t *kept, struct sift *sift)
{
	size_t n = heap->nallocs;
	*done = false;
	struct run *runs = hs_malloc((heap->nruns + 1) * sizeof(*runs));
	if (!runs)
		return &hs_error_nomem;
	size_t nr = 0;
	for (size_t i = 0; i < heap->nruns; i++) {
		size_t s = heap->runs[i];
		size_t e = i + 1 < heap->nruns ? heap->runs[i + 1] : n;
		if (e > s)
			runs[nr++] = (struct run){s, e - s, heap->build[s].addr,
						  heap->run_arena[i]};
	}
	hs_sort(runs, nr, sizeof(*runs), cmp_run);
	bool apart = true;
	for (size_t i = 1; i < nr && apart; i++) {
		const struct run *p = &runs[i - 1];
		apart = heap->build[p->start + p->len - 1].addr < runs[i].first;
	}
	struct hs_alloc *out = hs_malloc(n * sizeof(*out));
	hs_vector_hugepages(out, n * sizeof(*out));
	if (!out) {
		free(runs);
		return &hs_error_nomem;
	}
	struct hs_error *err = NULL;
	size_t k = 0;
	if (apart)
		for (size_t i = 0; i < nr && !err; i++)
			err = compact(heap, heap->build + runs[i].start, runs[i].len,
				      runs[i].arena, out, &k, runcap, sift);
	else
		err = merge_runs(heap, runs, nr, out, &k, runcap, sift);
	free(runs);
	if (err) {
		free(out);
		return err;
	}
	free(heap->build);
	heap->build = NULL;
	heap->allocs = out;
	*kept = k;
	*done = true;
	return NULL;
}

/* The build's runs, in address order one after another, kept in place
 * at out (the build's own memory). */
static struct hs_error *compact_runs(struct hs_heap *heap, struct hs_alloc *out,
				     size_t *kept, size_t *runcap, struct sift *s)
{
	struct hs_error *err = NULL;
	for (size_t r = 0; r < heap->nruns && !err; r++) {
		size_t st = heap->runs[r];
		size_t e = r + 1 < heap->nruns ? heap->runs[r + 1] : heap->nallocs;
		err = compact(heap, heap->build + st, e - st, heap->run_arena[r], out,
			      kept, runcap, s);
	}
	return err;
}

/* A corrupt walk's build (a run out of order), each block with its
 * run's arena, sorted by address (cmp_alloc), then kept at out (the
 * build's own memory). */
static struct hs_error *sort_compact(struct hs_heap *heap, struct hs_alloc *out,
				     size_t *kept, size_t *runcap, struct sift *s)
{
	size_t n = heap->nallocs;
	struct hs_alloc_in *v = hs_malloc(n * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	for (size_t r = 0, i = 0; i < n; i++) {
		while (r + 1 < heap->nruns && heap->runs[r + 1] <= i)
			r++;
		const struct hs_alloc *a = &heap->build[i];
		v[i] = (struct hs_alloc_in){.addr = a->addr, .size = a->size,
					    .where = a->where,
					    .arena = heap->run_arena[r]};
	}
	hs_sort(v, n, sizeof(*v), cmp_alloc);
	struct hs_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = keep(heap, (struct hs_alloc){.addr = v[i].addr, .size = v[i].size,
						   .where = v[i].where},
			   v[i].arena, out, kept, runcap, s);
	free(v);
	return err;
}

/* The error of a walk some blocks were left out of (sift). */
static struct hs_error *sift_error(const struct sift *s)
{
	if (s->overlaps)
		return hs_error_create(HS_ERR_CORRUPT,
				       "blocks at %#llx and %#llx overlap (%zu block%s left out%s)",
				       (unsigned long long)s->overlap_p,
				       (unsigned long long)s->overlap_q,
				       s->overlaps + s->past,
				       s->overlaps + s->past == 1 ? "" : "s",
				       s->past ? ", some past 2^47" : "");
	return hs_error_create(HS_ERR_CORRUPT,
			       "a block at %#llx lies past 2^47, outside x86-64's user addresses (%zu block%s left out)",
			       (unsigned long long)s->first_past, s->past,
			       s->past == 1 ? "" : "s");
}

struct hs_error *hs_heap_finish(struct hs_heap *heap)
{
	size_t n = heap->nallocs, overlap, runcap = 0, kept = 0;
	hs_sort(heap->regions, heap->nregions, sizeof(*heap->regions), cmp_region);
	if (heap->totals_only)
		return finish_totals(heap);
	free(heap->arena_runs);
	heap->arena_runs = NULL;
	heap->narena_runs = 0;
	/* (the blocks past 2^47 were left out as they came) */
	struct sift s = {.past = heap->past, .first_past = heap->first_past};
	if (!n) {
		free(heap->build);
		heap->build = NULL;
		heap->cap = 0;
		scan(heap, &overlap);
		return s.past ? sift_error(&s) : NULL;
	}
	bool in_runs, done = false;
	bool sorted = build_sorted(heap, &in_runs);
	struct hs_error *err = NULL;
	if (!sorted && in_runs &&
	    (err = concat_runs(heap, &done, &runcap, &kept, &s)))
		goto fail;
	if (!done) {
		/* sorted already, or a run out of order (a corrupt walk): in
		 * place */
		struct hs_alloc *out = heap->build;
		if (sorted)
			err = compact_runs(heap, out, &kept, &runcap, &s);
		else
			err = sort_compact(heap, out, &kept, &runcap, &s);
		if (err) {
			/* the build is half overwritten: no table */
			free(heap->build);
			heap->build = NULL;
			heap->nallocs = 0;
			goto fail;
		}
		struct hs_alloc *v = hs_realloc(out, (kept ? kept : 1) * sizeof(*v));
		heap->allocs = v ? v : out;
		heap->build = NULL;
	}
	heap->nallocs = kept;
	heap->cap = 0;
	scan(heap, &overlap);
	return s.overlaps || s.past ? sift_error(&s) : NULL;
fail:
	free(heap->arena_runs);
	heap->arena_runs = NULL;
	heap->narena_runs = 0;
	return err;
}

struct hs_error *hs_heap_finish_partial(struct hs_heap *heap, struct hs_log *log)
{
	struct hs_error *err = hs_heap_finish(heap);
	if (err && err->code != HS_ERR_NOMEM) {
		/* the blocks left out are named; the rest is sane */
		hs_log_warn(log, "%s", err->message);
		hs_error_destroy(err);
		err = NULL;
		heap->partial = true;
	}
	return err;
}

uint32_t hs_heap_arena(const struct hs_heap *heap, size_t id)
{
	size_t lo = 0, hi = heap->narena_runs;
	while (lo < hi) {       /* the last run that starts at or before id */
		size_t mid = lo + (hi - lo) / 2;
		if (heap->arena_runs[mid].first <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? heap->arena_runs[lo - 1].arena : HS_ARENA_NONE;
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
			       const struct hs_alloc_in *blocks, size_t n)
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
	struct hs_alloc *out = hs_malloc(total * sizeof(*out));
	if (!out)
		return &hs_error_nomem;
	hs_vector_hugepages(out, total * sizeof(*out));
	struct hs_arena_run *runs = NULL;
	size_t nruns = 0, runcap = 0, r = 0;    /* r: the old run of a[i] */
	const struct hs_alloc *a = heap->allocs;
	struct hs_error *err = NULL;
	for (size_t i = 0, j = 0, k = 0; k < total; k++) {
		uint32_t arena;
		if (j == n || (i < m && a[i].addr < blocks[j].addr)) {
			arena = hs_heap_arena_next(heap, &r, i);
			out[k] = a[i++];
		} else {
			const struct hs_alloc_in *b = &blocks[j++];
			if (b->addr >= HS_ALLOC_ADDR_LIMIT) {
				err = past_limit(b->addr);
				break;
			}
			arena = b->arena;
			out[k] = (struct hs_alloc){.addr = b->addr, .size = b->size,
						   .where = b->where};
		}
		if (!push_arena(&runs, &nruns, &runcap, k, arena)) {
			err = &hs_error_nomem;
			break;
		}
	}
	if (err) {
		free(out);
		free(runs);
		return err;
	}
	struct hs_alloc *old = heap->allocs;
	size_t overlap;
	heap->allocs = out;
	heap->nallocs = total;
	if (!scan(heap, &overlap) || overlap < total) {
		heap->allocs = old;
		heap->nallocs = m;
		scan(heap, &overlap);
		free(out);
		free(runs);
		return hs_error_create(HS_ERR_CORRUPT,
				       "pymalloc's blocks overlap malloc's");
	}
	free(old);
	free(heap->arena_runs);
	heap->arena_runs = runs;
	heap->narena_runs = nruns;
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
