/* CPython's pymalloc as a layer above malloc: see pymalloc.h. */
#include "analyzers/alloc/pymalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/vector.h"

enum {
	POOL_OVERHEAD = 48,     /* the header, rounded up to 16 */
	MAX_CLASS_SIZE = 512,
	MAX_WARNINGS = 8,
};

/* The pool header's fields (pymalloc.h). */
struct pool_header {
	uint32_t count, pad;
	uint64_t freeblock, nextpool, prevpool;
	uint32_t arenaindex, szidx, nextoffset, maxnextoffset;
};
_Static_assert(sizeof(struct pool_header) == POOL_OVERHEAD, "pool header");

struct blocks {
	struct hs_alloc_in *v;
	size_t n, cap;
};

struct arena_span {
	uint32_t index;
	uint64_t lo, hi;        /* first and last pool */
	uint64_t pools;         /* with a header, between them */
	uint64_t used, empty;   /* of those, read: in use, empty */
	uint64_t address, total, nfree;  /* from the arena table */
};

/* obmalloc's struct arena_object, 3.8 to 3.13 */
struct arena_object {
	uint64_t address, pool_address;
	uint32_t nfreepools, ntotalpools;
	uint64_t freepools, nextarena, prevarena;
};
_Static_assert(sizeof(struct arena_object) == 48, "arena_object");

struct layer {
	const struct hs_core *core;
	struct hs_log *log;
	struct hs_heap *heap;
	struct hs_pymalloc *py;
	struct blocks out;
	/* a heap of totals only (info): the blocks are counted, not kept */
	uint64_t emitted;
	uint64_t count_where[HS_WHERE_MAX], bytes_where[HS_WHERE_MAX];
	struct arena_span *arenas;
	size_t narenas, arenacap;
	uint64_t *freebits;     /* one pool's carved blocks on its free list */
	uint64_t *maxend;       /* in_regions' */
	unsigned warnings;
};

/* 3.minor from a module's file name: python3.11, libpython3.11.so.1.0,
 * python3.11d; 0 when it is not one. */
static unsigned python_minor(const char *base)
{
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python3.", 8))
		return 0;
	const char *p = base + 8;
	unsigned minor = 0;
	int digits = 0;
	while (*p >= '0' && *p <= '9' && digits < 3)
		minor = minor * 10 + (unsigned)(*p++ - '0'), digits++;
	if (!digits || (*p && *p != '.' && *p != 'd' && *p != 'm'))
		return 0;
	return minor;
}

struct hs_module *hs_pymalloc_python(struct hs_dwarf *dw, unsigned *minor)
{
	/* a shared build's python3.N is a launcher: the interpreter is the
	 * libpython3.N.so it loads, the module that defines PyType_Type */
	size_t n = hs_dwarf_num_modules(dw);
	struct hs_module *first = NULL;
	unsigned first_minor = 0;
	for (size_t i = 0; i < n; i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		unsigned v = python_minor(hs_module_base(m));
		uint64_t at;
		if (!v)
			continue;
		if (hs_dwarf_symbol_addr(dw, m, "PyType_Type", &at)) {
			*minor = v;
			return m;
		}
		if (!first) {
			first = m;
			first_minor = v;
		}
	}
	*minor = first_minor;
	return first;
}

__attribute__((format(printf, 2, 3)))
static void warn(struct layer *l, const char *fmt, ...)
{
	if (l->warnings++ >= MAX_WARNINGS)
		return;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hs_log_warn(l->log, "%s", msg);
}

static struct hs_error *emit(struct layer *l, uint64_t addr, uint64_t size,
			     unsigned where)
{
	struct blocks *b = &l->out;
	l->emitted++;
	if (l->heap->totals_only) {
		l->count_where[where]++;
		l->bytes_where[where] += size;
		return NULL;
	}
	if (b->n == b->cap) {
		struct hs_alloc_in *v = hs_vector_grow(b->v, b->n, &b->cap, 1,
						    sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		b->v = v;
	}
	b->v[b->n++] = (struct hs_alloc_in){
		.addr = addr, .size = size, .where = where, .arena = HS_ARENA_NONE,
	};
	return NULL;
}

/* Does the header at pool have the shape of one (pymalloc.h)? */
static bool pool_shaped(const struct pool_header *h, uint64_t pool,
			uint64_t pool_size)
{
	if (h->szidx >= HS_PY_CLASSES)
		return false;
	uint64_t size = ((uint64_t)h->szidx + 1) * 16;
	if (h->maxnextoffset != pool_size - size)
		return false;
	if (h->nextoffset < POOL_OVERHEAD + size || h->nextoffset > pool_size ||
	    (h->nextoffset - POOL_OVERHEAD) % size)
		return false;
	uint64_t carved = (h->nextoffset - POOL_OVERHEAD) / size;
	if (h->count > carved)
		return false;
	if (h->freeblock && (h->freeblock < pool + POOL_OVERHEAD ||
			     h->freeblock >= pool + h->nextoffset ||
			     (h->freeblock - pool - POOL_OVERHEAD) % size))
		return false;
	/* a pool with room left always has a free block: pymalloc carves
	 * the next one when its list runs out */
	if (!h->freeblock && (h->count < carved ||
			      h->nextoffset <= h->maxnextoffset))
		return false;
	return true;
}

/* The arena an index names, a new one if none does; false when the pool
 * is too far from the arena's other pools for one arena (two arenas
 * cannot share an index). */
static struct hs_error *arena_of(struct layer *l, uint32_t index,
				 uint64_t pool, struct arena_span **ret)
{
	*ret = NULL;
	for (size_t i = l->narenas; i-- > 0;) {
		struct arena_span *a = &l->arenas[i];
		if (a->index != index)
			continue;
		uint64_t lo = pool < a->lo ? pool : a->lo;
		uint64_t hi = pool > a->hi ? pool : a->hi;
		if (hi - lo + l->py->pool_size > l->py->arena_size)
			return NULL;
		a->lo = lo;
		a->hi = hi;
		a->pools++;
		*ret = a;
		return NULL;
	}
	if (l->narenas == l->arenacap) {
		struct arena_span *v = hs_vector_grow(l->arenas, l->narenas,
						      &l->arenacap, 1, sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		l->arenas = v;
	}
	l->arenas[l->narenas] = (struct arena_span){.index = index, .lo = pool, .hi = pool, .pools = 1};
	*ret = &l->arenas[l->narenas++];
	return NULL;
}

/* One pool whose header has the shape: its free list, then its blocks. */
static struct hs_error *read_pool(struct layer *l, uint64_t pool,
				  const struct pool_header *h)
{
	struct hs_pymalloc *py = l->py;
	uint64_t size = ((uint64_t)h->szidx + 1) * 16;
	uint64_t carved = (h->nextoffset - POOL_OVERHEAD) / size;
	struct arena_span *span;
	struct hs_error *err = arena_of(l, h->arenaindex, pool, &span);
	if (err)
		return err;
	if (!span) {
		warn(l, "pymalloc pool at %#" PRIx64 ": arena %u has pools more than an arena apart; pool left out",
		     pool, h->arenaindex);
		py->bad_pools++;
		l->heap->partial = true;
		return NULL;
	}
	size_t words = (carved + 63) / 64;
	memset(l->freebits, 0, words * sizeof(uint64_t));
	uint64_t nfree = 0;
	for (uint64_t p = h->freeblock; p;) {
		uint64_t k = (p - pool - POOL_OVERHEAD) / size;
		if (p < pool + POOL_OVERHEAD || k >= carved ||
		    (p - pool - POOL_OVERHEAD) % size ||
		    (l->freebits[k / 64] >> (k % 64) & 1)) {
			warn(l, "pymalloc pool at %#" PRIx64 ": its free list goes astray at %#" PRIx64 "; pool left out",
			     pool, p);
			py->bad_pools++;
			l->heap->partial = true;
			return NULL;
		}
		l->freebits[k / 64] |= 1ULL << (k % 64);
		nfree++;
		if (!hs_core_read_u64(l->core, p, &p)) {
			warn(l, "pymalloc pool at %#" PRIx64 ": free block %#" PRIx64 " is not in the core; pool left out",
			     pool, pool + POOL_OVERHEAD + k * size);
			py->bad_pools++;
			l->heap->partial = true;
			return NULL;
		}
	}
	if (carved - nfree != h->count) {
		warn(l, "pymalloc pool at %#" PRIx64 ": %" PRIu64 " blocks in use by its free list, %u by its count; pool left out",
		     pool, carved - nfree, h->count);
		py->bad_pools++;
		l->heap->partial = true;
		return NULL;
	}
	if (!h->count) {
		py->empty_pools++;
		span->empty++;
		return emit(l, pool + POOL_OVERHEAD,
			    py->pool_size - POOL_OVERHEAD, HS_PY_EMPTY);
	}
	struct hs_py_class *c = &py->classes[h->szidx];
	span->used++;
	py->pools++;
	c->pools++;
	uint64_t addr = pool + POOL_OVERHEAD;
	for (uint64_t k = 0; k < carved; k++, addr += size) {
		bool isfree = l->freebits[k / 64] >> (k % 64) & 1;
		if ((err = emit(l, addr, size, isfree ? HS_PY_FREE : HS_PY_BLOCK)))
			return err;
	}
	/* not carved yet: free blocks, as pymalloc counts them */
	uint64_t rest = 0;
	for (; addr + size <= pool + py->pool_size; addr += size, rest++)
		if ((err = emit(l, addr, size, HS_PY_FREE)))
			return err;
	uint64_t avail = nfree + rest;
	c->used += h->count;
	c->avail += avail;
	py->used_blocks += h->count;
	py->used_bytes += h->count * size;
	py->free_blocks += avail;
	py->free_bytes += avail * size;
	return NULL;
}

/* Does [start, end) meet one of the heap's regions (malloc's heaps)?
 * The regions are sorted by start; maxend[i] is the largest end among
 * the first i + 1 (they may nest). */
static bool in_regions(const struct layer *l, uint64_t start, uint64_t end)
{
	const struct hs_heap *heap = l->heap;
	size_t lo = 0, hi = heap->nregions;
	while (lo < hi) {       /* the regions that start before end: [0, lo) */
		size_t mid = lo + (hi - lo) / 2;
		if (heap->regions[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && l->maxend[lo - 1] > start;
}

static struct hs_error *scan_segment(struct layer *l,
				     const struct hs_core_segment *s)
{
	uint64_t ps = l->py->pool_size;
	uint64_t start = (s->vaddr + ps - 1) & ~(ps - 1);
	uint64_t end = s->vaddr + (s->avail < s->memsz ? s->avail : s->memsz);
	for (uint64_t pool = start; pool + ps <= end && pool >= start; pool += ps) {
		const struct pool_header *h =
			hs_core_ptr(l->core, pool, sizeof(*h));
		if (!h || !pool_shaped(h, pool, ps))
			continue;
		if (in_regions(l, pool, pool + ps))
			continue;
		struct pool_header copy = *h;
		/* a redaction keeps the pools' headers (hs_core.trace) */
		hs_core_touch(l->core, pool, sizeof(*h));
		struct hs_error *err = read_pool(l, pool, &copy);
		if (err)
			return err;
	}
	return NULL;
}

/* Py_Version (3.11+): 0xMMmmppRS; else "3.minor" */
static void read_version(const struct hs_core *core, struct hs_dwarf *dw,
			 struct hs_module *m, unsigned minor, char *buf,
			 size_t len)
{
	uint64_t at, v;
	/* read-only data: in the module's file when the core left it out */
	if (hs_dwarf_symbol_addr(dw, m, "Py_Version", &at) &&
	    (hs_core_read_u64(core, at, &v) ||
	     hs_dwarf_read_file(dw, at, &v, sizeof(v))) &&
	    (v >> 24 & 0xff) == 3 && (v >> 16 & 0xff) == minor) {
		snprintf(buf, len, "3.%u.%u", (unsigned)(v >> 16 & 0xff),
			 (unsigned)(v >> 8 & 0xff));
		return;
	}
	snprintf(buf, len, "3.%u", minor);
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct hs_alloc_in *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_span(const void *a, const void *b)
{
	const struct arena_span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Does rec describe arena span a: its mapping holds a's pools, its next
 * pool to carve is past them, its counts fit an arena? */
static bool record_fits(const struct layer *l, const struct arena_object *rec,
			const struct arena_span *a)
{
	uint64_t ps = l->py->pool_size, as = l->py->arena_size;
	return rec->address && rec->address <= a->lo &&
	       a->hi + ps <= rec->address + as &&
	       rec->pool_address >= a->hi + ps &&
	       rec->pool_address <= rec->address + as &&
	       rec->ntotalpools <= as / ps && rec->ntotalpools + 1 >= as / ps &&
	       rec->nfreepools <= rec->ntotalpools &&
	       a->used + rec->nfreepools <= rec->ntotalpools;
}

/* obmalloc's arena table (pymalloc.h): the one malloc block whose records
 * at the arenas' indexes fit them all.  Before the merge: the heap's
 * blocks are malloc's. */
static void find_table(struct layer *l)
{
	uint32_t top = 0;
	for (size_t i = 0; i < l->narenas; i++)
		if (l->arenas[i].index > top)
			top = l->arenas[i].index;
	uint64_t need = ((uint64_t)top + 1) * sizeof(struct arena_object);
	const struct hs_heap *heap = l->heap;
	if (heap->totals_only || !heap->allocs)
		return;         /* malloc's blocks were not kept (info) */
	uint64_t found = 0;
	size_t nfound = 0;
	for (size_t i = 0; i < heap->nallocs && nfound < 2; i++) {
		const struct hs_alloc *b = &heap->allocs[i];
		if (hs_alloc_state(b) != HS_STATE_USED || b->size < need)
			continue;
		const struct arena_object *t = hs_core_ptr(l->core, b->addr, need);
		if (!t)
			continue;
		size_t k = 0;
		while (k < l->narenas && record_fits(l, &t[l->arenas[k].index], &l->arenas[k]))
			k++;
		if (k == l->narenas) {
			found = b->addr;
			nfound++;
		}
	}
	if (nfound != 1)
		return;         /* none, or ambiguous: the arenas' counts alone */
	const struct hs_alloc *b = hs_heap_find(heap, found);
	const struct arena_object *t = hs_core_ptr(l->core, b->addr, b->size);
	uint64_t n = b->size / sizeof(*t), ps = l->py->pool_size;
	/* every record in use is one of the arenas found (pymalloc frees an
	 * arena whose pools are all free): else the table is not trusted */
	uint64_t inuse = 0;
	for (uint64_t k = 0; k < n; k++)
		inuse += t[k].address != 0;
	if (inuse != l->narenas)
		return;
	hs_core_touch(l->core, b->addr, n * sizeof(*t));
	l->py->table = found;
	for (size_t k = 0; k < l->narenas; k++) {
		struct arena_span *a = &l->arenas[k];
		const struct arena_object *rec = &t[a->index];
		a->address = rec->address;
		a->total = rec->ntotalpools;
		a->nfree = rec->nfreepools;
		l->py->unused_pools += rec->nfreepools;
		l->py->alignment_bytes += (l->py->arena_size / ps - rec->ntotalpools) * ps;
	}
}

void hs_pymalloc_footprint(const struct hs_pymalloc *py,
			   struct hs_py_footprint *f)
{
	*f = (struct hs_py_footprint){
		.arenas = py->arenas * py->arena_size,
		.blocks = py->used_bytes,
		.available = py->free_bytes,
		.headers = py->pools * POOL_OVERHEAD,
	};
	for (unsigned i = 0; i < HS_PY_CLASSES; i++)
		f->quantization += py->classes[i].pools *
				   ((py->pool_size - POOL_OVERHEAD) % ((i + 1) * 16));
	if (py->table) {
		f->unused_pools = py->unused_pools * py->pool_size;
		f->alignment = py->alignment_bytes;
	}
}

static const struct hs_place py_places[] = {
	[HS_PY_BLOCK] = {"pymalloc", .slack = 16},
	[HS_PY_FREE] = {"pymalloc_free", "pymalloc", .slack = 16},
	[HS_PY_EMPTY] = {"pymalloc_pool", "pymalloc"},
};

struct hs_error *hs_pymalloc_read(const struct hs_core *core,
				  struct hs_log *log, struct hs_heap *heap,
				  unsigned minor, const char *version)
{
	for (int w = HS_PY_BLOCK; w <= HS_PY_EMPTY; w++)
		if (py_places[w].name && heap->places[w].name) {
			hs_log_warn(log, "the %s backend uses pymalloc's places: pymalloc is not read",
				    heap->allocator);
			return NULL;
		}
	struct hs_error *err = NULL;
	struct layer l = {.core = core, .log = log, .heap = heap};
	l.py = hs_calloc(1, sizeof(*l.py));
	if (!l.py)
		return &hs_error_nomem;
	l.py->minor = minor;
	snprintf(l.py->version, sizeof(l.py->version), "%s", version);
	/* obmalloc.c: 16 KiB pools in 1 MiB arenas since 3.10 (the radix
	 * tree's large pools), 4 KiB in 256 KiB before */
	l.py->pool_size = minor >= 10 ? 16384 : 4096;
	l.py->arena_size = minor >= 10 ? 1 << 20 : 256 << 10;
	l.freebits = hs_calloc((l.py->pool_size / 16 + 63) / 64, sizeof(uint64_t));
	l.maxend = hs_malloc((heap->nregions ? heap->nregions : 1) * sizeof(uint64_t));
	if (!l.freebits || !l.maxend) {
		err = &hs_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < heap->nregions; i++) {
		uint64_t e = heap->regions[i].end;
		l.maxend[i] = i && l.maxend[i - 1] > e ? l.maxend[i - 1] : e;
	}
	for (size_t i = 0; i < core->nsegs && !err; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if ((s->flags & HS_SEG_W) && s->file < 0)
			err = scan_segment(&l, s);
	}
	if (err)
		goto out;
	if (l.warnings > MAX_WARNINGS)
		hs_log_warn(log, "%u more pymalloc pools were left out",
			    l.warnings - MAX_WARNINGS);
	if (!l.emitted)
		goto out;       /* pymalloc off, or never used */
	/* segments come in address order, and pools in each: sorted already */
	for (size_t i = 1; i < l.out.n; i++)
		if (l.out.v[i - 1].addr >= l.out.v[i].addr) {
			qsort(l.out.v, l.out.n, sizeof(*l.out.v), cmp_alloc);
			break;
		}
	find_table(&l);
	for (int w = HS_PY_BLOCK; w <= HS_PY_EMPTY; w++)
		if (py_places[w].name)
			heap->own_places[w] = py_places[w];
	if (heap->totals_only) {
		for (unsigned w = 0; w < HS_WHERE_MAX; w++) {
			heap->count_where[w] += l.count_where[w];
			heap->bytes_where[w] += l.bytes_where[w];
		}
		heap->nallocs += l.emitted;
	} else if ((err = hs_heap_merge(heap, l.out.v, l.out.n))) {
		for (int w = HS_PY_BLOCK; w <= HS_PY_EMPTY; w++)
			if (py_places[w].name)
				heap->own_places[w] = (struct hs_place){0};
		hs_log_warn(log, "%s: pymalloc is not read", err->message);
		hs_error_destroy(err);
		err = NULL;
		heap->partial = true;
		goto out;
	}
	l.py->arenas = l.narenas;
	/* pools are carved in address order and keep their headers when
	 * empty: a pool without one between two of its arena's is corrupt */
	for (size_t i = 0; i < l.narenas; i++) {
		const struct arena_span *a = &l.arenas[i];
		uint64_t want = (a->hi - a->lo) / l.py->pool_size + 1;
		if (a->pools >= want)
			continue;
		hs_log_warn(log, "pymalloc arena %u: %" PRIu64 " of the pools between %#" PRIx64 " and %#" PRIx64 " have no pool header; their blocks are left out",
			    a->index, want - a->pools, a->lo, a->hi);
		l.py->bad_pools += want - a->pools;
		heap->partial = true;
	}
	for (size_t i = 0; i < l.narenas && !err; i++)
		err = hs_heap_add_region(heap, l.arenas[i].lo,
					 l.arenas[i].hi + l.py->pool_size,
					 HS_REGION_HEAP);
	if (err)
		goto out;
	hs_heap_finish_regions(heap);
	/* the arenas, by address */
	qsort(l.arenas, l.narenas, sizeof(*l.arenas), cmp_span);
	struct hs_pymalloc *py = hs_realloc(l.py, sizeof(*py) +
					 l.narenas * sizeof(py->arena[0]));
	if (!py) {
		err = &hs_error_nomem;
		goto out;
	}
	l.py = py;
	py->narena = l.narenas;
	for (size_t i = 0; i < l.narenas; i++) {
		const struct arena_span *a = &l.arenas[i];
		py->arena[i] = (struct hs_py_arena){
			.index = a->index, .lo = a->lo, .hi = a->hi,
			.pools = a->used, .empty_pools = a->empty,
			.address = a->address, .total_pools = a->total,
			.free_pools = a->nfree,
		};
	}
	heap->pymalloc = l.py;
	l.py = NULL;
out:
	free(l.py);
	free(l.out.v);
	free(l.arenas);
	free(l.freebits);
	free(l.maxend);
	return err;
}

struct hs_error *hs_pymalloc_layer(const struct hs_core *core,
				   struct hs_dwarf *dw, struct hs_log *log,
				   struct hs_heap *heap)
{
	unsigned minor;
	struct hs_module *m = hs_pymalloc_python(dw, &minor);
	if (!m)
		return NULL;
	if (minor < 8) {
		hs_log_warn(log, "Python 3.%u's pymalloc (8-byte size classes) is not read: its objects stay inside unexplained memory",
			    minor);
		return NULL;
	}
	char version[32];
	read_version(core, dw, m, minor, version, sizeof(version));
	return hs_pymalloc_read(core, log, heap, minor, version);
}

void hs_pymalloc_json(struct hs_jsonw *w, const struct hs_pymalloc *py)
{
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "python", py->version);
	hs_jsonw_kuint(w, "pool_size", py->pool_size);
	hs_jsonw_kuint(w, "arena_size", py->arena_size);
	hs_jsonw_kuint(w, "arenas", py->arenas);
	hs_jsonw_kuint(w, "pools", py->pools);
	hs_jsonw_kuint(w, "empty_pools", py->empty_pools);
	hs_jsonw_kuint(w, "bad_pools", py->bad_pools);
	hs_jsonw_kuint(w, "used_blocks", py->used_blocks);
	hs_jsonw_kuint(w, "used_bytes", py->used_bytes);
	hs_jsonw_kuint(w, "free_blocks", py->free_blocks);
	hs_jsonw_kuint(w, "free_bytes", py->free_bytes);
	hs_jsonw_key(w, "classes");
	hs_jsonw_array_begin(w);
	for (unsigned i = 0; i < HS_PY_CLASSES; i++) {
		const struct hs_py_class *c = &py->classes[i];
		if (!c->pools)
			continue;
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "index", i);
		hs_jsonw_kuint(w, "size", (i + 1) * 16);
		hs_jsonw_kuint(w, "pools", c->pools);
		hs_jsonw_kuint(w, "used", c->used);
		hs_jsonw_kuint(w, "avail", c->avail);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_object_end(w);
}

void hs_pymalloc_text(FILE *out, const struct hs_pymalloc *py)
{
	fprintf(out, "pymalloc   Python %s: %" PRIu64 " arena%s, %" PRIu64
		" pool%s in use, %" PRIu64 " empty%s\n",
		py->version, py->arenas, py->arenas == 1 ? "" : "s",
		py->pools, py->pools == 1 ? "" : "s", py->empty_pools,
		py->bad_pools ? " (PARTIAL: see warnings)" : "");
	fprintf(out, "  used     %10" PRIu64 " blocks  %12" PRIu64 " bytes\n",
		py->used_blocks, py->used_bytes);
	fprintf(out, "  free     %10" PRIu64 " blocks  %12" PRIu64 " bytes (in pools in use)\n",
		py->free_blocks, py->free_bytes);
}
