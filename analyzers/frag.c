/* Fragmentation and footprint per arena and per mapping: see
 * analyzers/frag.h. */
#include "analyzers/frag.h"
#include "src/alloc.h"
#include "src/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/pymalloc.h"
#include "formats/jsonw.h"
#include "src/fmt.h"

const char *const hs_free_kind_names[HS_FREE_KINDS] = {
	[HS_FREE_FASTBIN] = "fastbins",
	[HS_FREE_TCACHE] = "tcache",
	[HS_FREE_SMALL] = "small_bins",
	[HS_FREE_LARGE] = "large_bins",
	[HS_FREE_TOP] = "top",
	[HS_FREE_SLABS] = "slabs",
	[HS_FREE_DIRTY] = "dirty",
	[HS_FREE_MUZZY] = "muzzy",
	[HS_FREE_RETAINED] = "retained",
};

const char *const hs_map_kind_names[HS_MAP_KINDS] = {
	[HS_MAP_ARENA] = "malloc_arenas",
	[HS_MAP_MMAPPED] = "malloc_mmapped",
	[HS_MAP_PYMALLOC] = "pymalloc_arenas",
	[HS_MAP_STACK] = "thread_stacks",
	[HS_MAP_TEXT] = "module_text",
	[HS_MAP_RODATA] = "module_rodata",
	[HS_MAP_DATA] = "module_data",
	[HS_MAP_BSS] = "module_bss",
	[HS_MAP_ANON] = "other_anonymous",
	[HS_MAP_FILE] = "file_mappings",
	[HS_MAP_SPECIAL] = "special",
};

enum { SMALL_LIMIT = 1024 };   /* glibc: MIN_LARGE_SIZE on 64-bit */

static unsigned bucket(uint64_t size)
{
	unsigned b = 0;
	while (b + 1 < HS_FRAG_BUCKETS && (1ull << b) < size)
		b++;
	return b;
}

static void add_free(struct hs_frag_arena *a, enum hs_free_kind k, uint64_t chunk)
{
	a->free_count[k]++;
	a->free_bytes[k] += chunk;
	if (k == HS_FREE_TOP) {
		a->top += chunk;
		return;
	}
	if (!hs_free_kind_usable(k))
		return;
	if (chunk > a->largest_free)
		a->largest_free = chunk;
	unsigned b = bucket(chunk);
	a->hist_count[b]++;
	a->hist_bytes[b] += chunk;
}

/* Which kind of mapping [lo, hi) of segment s is. */
static enum hs_map_kind kind_of(const struct hs_core *core, struct hs_dwarf *dw,
				const struct hs_core_segment *s, uint64_t lo,
				bool *stack)
{
	*stack = false;
	for (size_t t = 0; t < core->nthreads; t++) {
		uint64_t sp = core->threads[t].regs[HS_REG_RSP];
		if (sp >= s->vaddr && sp < s->vaddr + s->memsz) {
			*stack = true;
			return HS_MAP_STACK;
		}
	}
	struct hs_module *m = dw ? hs_dwarf_module_at(dw, lo) : NULL;
	if (lo >= 0xffffffffff600000ull ||
	    (m && !strncmp(m->name, "linux-vdso", 10)) ||
	    (m && !strncmp(m->name, "linux-gate", 10)))
		return HS_MAP_SPECIAL;
	if (m) {
		if (s->flags & HS_SEG_X)
			return HS_MAP_TEXT;
		if (!(s->flags & HS_SEG_W))
			return HS_MAP_RODATA;
		return s->file >= 0 ? HS_MAP_DATA : HS_MAP_BSS;
	}
	return s->file >= 0 ? HS_MAP_FILE : HS_MAP_ANON;
}

static int cmp_class(const void *a, const void *b)
{
	uint64_t x = ((const struct hs_frag_class *)a)->size;
	uint64_t y = ((const struct hs_frag_class *)b)->size;
	return x < y ? -1 : x > y;
}

/* The bucket each of the heap's places counts in (hs_place.frag, by
 * name), -1 for none. */
static void place_kinds(const struct hs_heap *heap, int place_kind[HS_WHERE_MAX])
{
	for (int w = 0; w < HS_WHERE_MAX; w++) {
		const char *name = heap->places[w].frag;
		place_kind[w] = -1;
		for (int k = 0; name && k < HS_FREE_KINDS; k++)
			if (!strcmp(name, hs_free_kind_names[k]))
				place_kind[w] = k;
	}
}

/* A headerless slab allocator (jemalloc): size classes per arena and in
 * all; the largest request that free memory serves (a small class with a
 * free region in some slab, or a free page run that holds a new slab or a
 * large extent with its pad).  place_kind: place_kinds() of the heap. */
static struct hs_error *classes_part(struct hs_frag *f, const struct hs_heap *heap,
				     const int place_kind[HS_WHERE_MAX])
{
	f->headerless = true;
	f->mmap_threshold = 0;
	f->metadata = heap->metadata_bytes;
	uint64_t page = heap->page_size ? heap->page_size : 4096;
	uint64_t runs = 0;  /* the largest dirty or muzzy run */
	for (size_t i = 0; i < heap->nallocs; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		int k = place_kind[a->where];
		if ((k == HS_FREE_DIRTY || k == HS_FREE_MUZZY) && a->size > runs)
			runs = a->size;
	}
	f->largest_servable = runs > page ? runs - page : 0;
	for (size_t i = 0; i < heap->nclasses; i++) {
		const struct hs_size_class *c = &heap->classes[i];
		struct hs_frag_arena *targets[2] = {
			c->arena < f->narenas ? &f->arenas[c->arena] : NULL, &f->all,
		};
		for (int t = 0; t < 2; t++) {
			struct hs_frag_arena *ar = targets[t];
			if (!ar)
				continue;
			size_t k = 0;
			while (k < ar->nclasses && ar->classes[k].size != c->size)
				k++;
			if (k == ar->nclasses) {
				struct hs_frag_class *v = hs_realloc(ar->classes, (k + 1) * sizeof(*v));
				if (!v)
					return &hs_error_nomem;
				ar->classes = v;
				ar->nclasses++;
				memset(&v[k], 0, sizeof(v[k]));
				v[k].size = c->size;
			}
			struct hs_frag_class *d = &ar->classes[k];
			d->slabs += c->slabs;
			d->regions += c->regions;
			d->free += c->free;
			d->tcache += c->tcache;
			d->used += c->regions - c->free - c->tcache;
		}
		if (c->free && c->size > f->largest_servable)
			f->largest_servable = c->size;
	}
	for (size_t i = 0; i <= f->narenas; i++) {
		struct hs_frag_arena *ar = i < f->narenas ? &f->arenas[i] : &f->all;
		if (ar->nclasses)
			hs_sort(ar->classes, ar->nclasses, sizeof(*ar->classes), cmp_class);
	}
	return NULL;
}

/* The bytes of pymalloc's arenas in [lo, hi): their pools' spans (the
 * heap regions), or with mapping each arena's mapping where the arena
 * table gave it. */
static uint64_t pymalloc_bytes(const struct hs_pymalloc *py, uint64_t lo,
			       uint64_t hi, bool mapping)
{
	uint64_t n = 0;
	for (size_t i = 0; py && i < py->narena; i++) {
		const struct hs_py_arena *a = &py->arena[i];
		bool m = mapping && a->address;
		uint64_t s = m ? a->address : a->lo;
		uint64_t e = m ? a->address + py->arena_size : a->hi + py->pool_size;
		s = s > lo ? s : lo;
		e = e < hi ? e : hi;
		if (s < e)
			n += e - s;
	}
	return n;
}

struct hs_error *hs_frag_compute(const struct hs_core *core, struct hs_dwarf *dw,
				 const struct hs_heap *heap, struct hs_frag **ret)
{
	struct hs_frag *f = hs_calloc(1, sizeof(*f));
	if (!f)
		return &hs_error_nomem;
	f->narenas = heap->narenas;
	f->arenas = hs_calloc(heap->narenas ? heap->narenas : 1, sizeof(*f->arenas));
	if (!f->arenas) {
		free(f);
		return &hs_error_nomem;
	}
	for (size_t i = 0; i < heap->narenas; i++) {
		f->arenas[i].index = (uint32_t)i;
		f->arenas[i].main = heap->arenas[i].main;
		f->arenas[i].system = heap->arenas[i].system_mem;
	}
	f->allocator = heap->allocator;
	f->all.main = false;
	f->all.index = UINT32_MAX;
	int place_kind[HS_WHERE_MAX];
	place_kinds(heap, place_kind);
	for (int w = 0; w < HS_WHERE_MAX; w++)
		if (place_kind[w] >= 0)
			f->kinds |= 1u << place_kind[w];
	if (f->kinds >> HS_FREE_SMALL & 1)
		f->kinds |= 1u << HS_FREE_LARGE;
	size_t run = 0;  /* hs_heap_arena_next's cursor */
	for (size_t i = 0; i < heap->nallocs; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		uint32_t arena = hs_heap_arena_next(heap, &run, i);
		if (arena == HS_ARENA_NONE || arena >= heap->narenas)
			continue;  /* mmapped chunks belong to no arena */
		struct hs_frag_arena *ar = &f->arenas[arena];
		/* a block without a header (jemalloc's) costs its size */
		uint64_t chunk = hs_alloc_chunk_size(heap, a);
		if (hs_alloc_state(a) == HS_STATE_USED) {
			if (a->where != HS_WHERE_INTERNAL) {
				ar->used_count++;
				ar->used_bytes += a->size;
			}
			continue;
		}
		int k = place_kind[a->where];
		if (k < 0)
			continue;
		/* glibc's regular bins: small and large chunks */
		if (k == HS_FREE_SMALL && chunk >= SMALL_LIMIT)
			k = HS_FREE_LARGE;
		add_free(ar, (enum hs_free_kind)k, chunk);
	}
	for (size_t i = 0; i < f->narenas; i++) {
		struct hs_frag_arena *ar = &f->arenas[i];
		uint64_t freeb = 0;
		for (int k = 0; k < HS_FREE_KINDS; k++)
			if (k != HS_FREE_RETAINED)  /* not in system bytes */
				freeb += ar->free_bytes[k];
		ar->overhead = ar->system > ar->used_bytes + freeb ?
			ar->system - ar->used_bytes - freeb : 0;
		struct hs_frag_arena *all = &f->all;
		all->system += ar->system;
		all->used_count += ar->used_count;
		all->used_bytes += ar->used_bytes;
		all->overhead += ar->overhead;
		all->top += ar->top;
		if (ar->largest_free > all->largest_free)
			all->largest_free = ar->largest_free;
		for (int k = 0; k < HS_FREE_KINDS; k++) {
			all->free_count[k] += ar->free_count[k];
			all->free_bytes[k] += ar->free_bytes[k];
		}
		for (int b = 0; b < HS_FRAG_BUCKETS; b++) {
			all->hist_count[b] += ar->hist_count[b];
			all->hist_bytes[b] += ar->hist_bytes[b];
		}
		/* a free chunk or the top serves a request that fits it */
		uint64_t servable = ar->largest_free > ar->top ? ar->largest_free : ar->top;
		if (servable > f->largest_servable)
			f->largest_servable = servable;
	}
	/* requests at least this big bypass the heap (glibc's default when
	 * the walk could not read it) */
	f->mmap_threshold = heap->mmap_threshold ? heap->mmap_threshold : 128 * 1024;
	if (heap->headerless) {
		struct hs_error *err = classes_part(f, heap, place_kind);
		if (err) {
			hs_frag_destroy(f);
			return err;
		}
	}

	/* footprint, segment by segment; heap regions first */
	uint64_t meta_in_use = 0;
	for (size_t i = 0; i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		uint64_t lo = s->vaddr, hi = s->vaddr + s->memsz;
		uint64_t in_heap[2] = {0, 0};
		for (size_t r = 0; r < heap->nregions; r++) {
			const struct hs_region *g = &heap->regions[r];
			/* glibc's state lives in libc's data; jemalloc's own
			 * metadata (base blocks, its extent map) is malloc's */
			if (g->kind == HS_REGION_META && !heap->headerless)
				continue;
			uint64_t a = g->start > lo ? g->start : lo;
			uint64_t b = g->end < hi ? g->end : hi;
			if (a < b) {
				in_heap[g->kind == HS_REGION_MMAPPED] += b - a;
				if (g->kind == HS_REGION_META)
					meta_in_use += b - a;
			}
		}
		/* pymalloc's arenas are heap regions of their own: the
		 * mapping of each (its pools, when the arena table was not
		 * found) */
		uint64_t py_span = pymalloc_bytes(heap->pymalloc, lo, hi, false);
		uint64_t py_bytes = pymalloc_bytes(heap->pymalloc, lo, hi, true);
		in_heap[0] = in_heap[0] > py_span ? in_heap[0] - py_span : 0;
		uint64_t heap_bytes = in_heap[0] + in_heap[1] + py_bytes;
		if (heap_bytes > s->memsz)
			heap_bytes = s->memsz;
		uint64_t present = s->avail;
		/* present bytes are shared out in proportion */
		double pshare = s->memsz ? (double)present / (double)s->memsz : 0;
		f->reserved[HS_MAP_PYMALLOC] += py_bytes;
		f->present[HS_MAP_PYMALLOC] += (uint64_t)((double)py_bytes * pshare);
		if (s->flags & HS_SEG_W)
			f->writable_reserved[HS_MAP_PYMALLOC] += py_bytes;
		f->reserved[HS_MAP_ARENA] += in_heap[0];
		f->reserved[HS_MAP_MMAPPED] += in_heap[1];
		f->present[HS_MAP_ARENA] += (uint64_t)((double)in_heap[0] * pshare);
		f->present[HS_MAP_MMAPPED] += (uint64_t)((double)in_heap[1] * pshare);
		if (s->flags & HS_SEG_W) {
			f->writable_reserved[HS_MAP_ARENA] += in_heap[0];
			f->writable_reserved[HS_MAP_MMAPPED] += in_heap[1];
		}
		uint64_t rest = s->memsz - heap_bytes;
		if (!rest)
			continue;
		bool stack;
		enum hs_map_kind k = kind_of(core, dw, s, lo, &stack);
		f->reserved[k] += rest;
		f->present[k] += (uint64_t)((double)rest * pshare);
		if (s->flags & HS_SEG_W)
			f->writable_reserved[k] += rest;
		if (stack) {
			for (size_t t = 0; t < core->nthreads; t++) {
				uint64_t sp = core->threads[t].regs[HS_REG_RSP];
				if (sp >= lo && sp < hi)
					f->stack_used += hi - sp;
			}
		}
	}
	for (int k = 0; k < HS_MAP_KINDS; k++)
		f->in_use[k] = f->writable_reserved[k];
	f->in_use[HS_MAP_ARENA] = f->all.system + meta_in_use;
	f->in_use[HS_MAP_STACK] = f->stack_used;
	*ret = f;
	return NULL;
}

void hs_frag_destroy(struct hs_frag *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->narenas; i++)
		free(f->arenas[i].classes);
	free(f->all.classes);
	free(f->arenas);
	free(f);
}

/* ---- reading the result ---- */

/* Free bytes fragmentation is about (not the top chunk, not retained
 * address space). */
uint64_t hs_frag_free_bytes(const struct hs_frag_arena *a)
{
	uint64_t n = 0;
	for (int k = 0; k < HS_FREE_KINDS; k++)
		if (hs_free_kind_usable(k))
			n += a->free_bytes[k];
	return n;
}

/* Does this allocator have free blocks of kind k (one of its places counts
 * there)? */
bool hs_frag_kind_applies(const struct hs_frag *f, int k)
{
	return f->kinds >> k & 1;
}

/* The largest request free memory serves: glibc's chunk less its header;
 * jemalloc's region or page run as is. */
uint64_t hs_frag_max_request(const struct hs_frag *f)
{
	if (f->headerless)
		return f->largest_servable;
	return f->largest_servable > 8 ? f->largest_servable - 8 : 0;
}

double hs_frag_external(const struct hs_frag_arena *a)
{
	uint64_t f = hs_frag_free_bytes(a);
	return f ? 1.0 - (double)a->largest_free / (double)f : 0.0;
}

uint64_t hs_frag_writable(const struct hs_frag *f)
{
	uint64_t w = 0;
	for (int k = 0; k < HS_MAP_KINDS; k++)
		w += f->in_use[k];
	return w;
}

double hs_frag_malloc_share(const struct hs_frag *f)
{
	uint64_t w = hs_frag_writable(f);
	return w ? (double)(f->in_use[HS_MAP_ARENA] + f->in_use[HS_MAP_MMAPPED] +
			    f->in_use[HS_MAP_PYMALLOC]) / (double)w : 0.0;
}

/* One line that answers first. */
void hs_frag_verdict(const struct hs_frag *f, char *buf, size_t len)
{
	const struct hs_frag_arena *a = &f->all;
	uint64_t fr = hs_frag_free_bytes(a);
	char b1[32], b2[32];
	/* the smallest size under which half the free bytes sit */
	uint64_t acc = 0, limit = 0;
	for (int b = 0; b < HS_FRAG_BUCKETS && fr; b++) {
		acc += a->hist_bytes[b];
		if (2 * acc >= fr) {
			limit = 1ull << b;
			break;
		}
	}
	uint64_t under = 0;
	for (int b = 0; b < HS_FRAG_BUCKETS && (1ull << b) <= limit; b++)
		under += a->hist_bytes[b];
	double share = hs_frag_malloc_share(f);
	if (a->system && fr * 4 >= a->system && limit && limit <= 512)
		snprintf(buf, len, "%.0f%% of free heap bytes sit in blocks of %s or less, %.0f%% of the heap: fragmentation, not a leak",
			 100.0 * (double)under / (double)fr, hs_fmt_size(b1, limit),
			 100.0 * (double)fr / (double)a->system);
	else if (share < 0.5 && hs_frag_writable(f))
		snprintf(buf, len, "%s %.0f%% of the writable memory: the rest is outside malloc (other anonymous memory: %s)",
			 f->in_use[HS_MAP_PYMALLOC] ? "malloc and pymalloc explain" : "malloc explains",
			 100.0 * share, hs_fmt_size(b1, f->in_use[HS_MAP_ANON]));
	else if (a->system && fr * 10 < a->system)
		snprintf(buf, len, "the heap is %.0f%% in use and %s free%s: growth is live data (see leaks, top)",
			 100.0 * (double)a->used_bytes / (double)a->system, hs_fmt_size(b1, fr),
			 f->headerless ? "" : " outside the top chunk");
	else
		snprintf(buf, len, "%s of the heap's %s is free%s, the largest free block %s (external fragmentation %.0f%%)",
			 hs_fmt_size(b1, fr), hs_fmt_size(b2, a->system),
			 f->headerless ? " (in slabs, thread caches, dirty and muzzy pages)" : " outside the top chunk",
			 hs_fmt_size(b2 + 16, a->largest_free), 100.0 * hs_frag_external(a));
}

static void json_arena(struct hs_jsonw *w, const struct hs_frag_arena *a)
{
	hs_jsonw_object_begin(w);
	if (a->index != UINT32_MAX) {
		hs_jsonw_kuint(w, "index", a->index);
		hs_jsonw_kbool(w, "main", a->main);
	}
	hs_jsonw_kuint(w, "system", a->system);
	hs_jsonw_kuint(w, "used_count", a->used_count);
	hs_jsonw_kuint(w, "used_bytes", a->used_bytes);
	hs_jsonw_key(w, "free");
	hs_jsonw_object_begin(w);
	for (int k = 0; k < HS_FREE_KINDS; k++) {
		hs_jsonw_key(w, hs_free_kind_names[k]);
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "count", a->free_count[k]);
		hs_jsonw_kuint(w, "bytes", a->free_bytes[k]);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_object_end(w);
	hs_jsonw_kuint(w, "largest_free", a->largest_free);
	hs_jsonw_kuint(w, "top", a->top);
	hs_jsonw_kint(w, "external_fragmentation_permille", (int64_t)(hs_frag_external(a) * 1000 + 0.5));
	hs_jsonw_kuint(w, "overhead", a->overhead);
	hs_jsonw_key(w, "histogram");
	hs_jsonw_array_begin(w);
	for (int b = 0; b < HS_FRAG_BUCKETS; b++) {
		if (!a->hist_count[b])
			continue;
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "max_size", 1ull << b);
		hs_jsonw_kuint(w, "count", a->hist_count[b]);
		hs_jsonw_kuint(w, "bytes", a->hist_bytes[b]);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	if (a->nclasses) {
		hs_jsonw_key(w, "classes");
		hs_jsonw_array_begin(w);
		for (size_t i = 0; i < a->nclasses; i++) {
			const struct hs_frag_class *c = &a->classes[i];
			hs_jsonw_object_begin(w);
			hs_jsonw_kuint(w, "size", c->size);
			hs_jsonw_kuint(w, "slabs", c->slabs);
			hs_jsonw_kuint(w, "regions", c->regions);
			hs_jsonw_kuint(w, "used", c->used);
			hs_jsonw_kuint(w, "tcache", c->tcache);
			hs_jsonw_kuint(w, "free", c->free);
			hs_jsonw_kuint(w, "free_bytes", c->free * c->size);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_array_end(w);
	}
	hs_jsonw_object_end(w);
}

static void kuint_or_null(struct hs_jsonw *w, const char *key, bool known,
			  uint64_t v)
{
	hs_jsonw_key(w, key);
	if (known)
		hs_jsonw_uint(w, v);
	else
		hs_jsonw_null(w);
}

/* max_arenas: at most that many arenas listed (the first by address) */
static void json_pymalloc(struct hs_jsonw *w, const struct hs_pymalloc *py,
			  size_t max_arenas)
{
	struct hs_py_footprint fp;
	hs_pymalloc_footprint(py, &fp);
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "python", py->version);
	hs_jsonw_kuint(w, "arena_size", py->arena_size);
	hs_jsonw_kuint(w, "pool_size", py->pool_size);
	hs_jsonw_key(w, "arena_table");
	if (py->table)
		hs_jsonw_addr(w, py->table);
	else
		hs_jsonw_null(w);
	hs_jsonw_kuint(w, "arenas_bytes", fp.arenas);
	hs_jsonw_kuint(w, "blocks_bytes", fp.blocks);
	hs_jsonw_kuint(w, "available_bytes", fp.available);
	kuint_or_null(w, "unused_pools_bytes", py->table, fp.unused_pools);
	hs_jsonw_kuint(w, "headers_bytes", fp.headers);
	hs_jsonw_kuint(w, "quantization_bytes", fp.quantization);
	kuint_or_null(w, "alignment_bytes", py->table, fp.alignment);
	hs_jsonw_key(w, "arenas");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < py->narena && i < max_arenas; i++) {
		const struct hs_py_arena *a = &py->arena[i];
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "index", a->index);
		hs_jsonw_key(w, "address");
		if (a->address)
			hs_jsonw_addr(w, a->address);
		else
			hs_jsonw_null(w);
		hs_jsonw_kaddr(w, "first_pool", a->lo);
		hs_jsonw_kaddr(w, "last_pool", a->hi);
		hs_jsonw_kuint(w, "pools", a->pools);
		hs_jsonw_kuint(w, "empty_pools", a->empty_pools);
		kuint_or_null(w, "total_pools", a->address, a->total_pools);
		kuint_or_null(w, "free_pools", a->address, a->free_pools);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	if (max_arenas != SIZE_MAX) {
		hs_jsonw_kuint(w, "arenas_total", py->narena);
		hs_jsonw_kbool(w, "arenas_truncated", py->narena > max_arenas);
	}
	hs_jsonw_object_end(w);
}

struct arena_rank {
	uint64_t system;
	size_t index;
};

static int cmp_rank_system(const void *a, const void *b)
{
	const struct arena_rank *x = a, *y = b;
	if (x->system != y->system)
		return x->system > y->system ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_rank_index(const void *a, const void *b)
{
	const struct arena_rank *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The arenas, or the max_arenas of most system bytes (in index order). */
static void json_arenas(struct hs_jsonw *w, const struct hs_frag *f,
			size_t max_arenas)
{
	hs_jsonw_key(w, "arenas");
	hs_jsonw_array_begin(w);
	struct arena_rank *rank = f->narenas > max_arenas ?
		hs_malloc(f->narenas * sizeof(*rank)) : NULL;
	if (rank) {
		for (size_t i = 0; i < f->narenas; i++)
			rank[i] = (struct arena_rank){f->arenas[i].system, i};
		hs_sort(rank, f->narenas, sizeof(*rank), cmp_rank_system);
		hs_sort(rank, max_arenas, sizeof(*rank), cmp_rank_index);
		for (size_t i = 0; i < max_arenas; i++)
			json_arena(w, &f->arenas[rank[i].index]);
		free(rank);
	} else {
		/* all of them, or out of memory: the first ones */
		for (size_t i = 0; i < f->narenas && i < max_arenas; i++)
			json_arena(w, &f->arenas[i]);
	}
	hs_jsonw_array_end(w);
}

void hs_frag_json(struct hs_jsonw *w, const struct hs_frag *f,
		  const struct hs_heap *heap)
{
	hs_frag_json_capped(w, f, heap, SIZE_MAX);
}

void hs_frag_json_capped(struct hs_jsonw *w, const struct hs_frag *f,
			 const struct hs_heap *heap, size_t max_arenas)
{
	char v[512];
	hs_frag_verdict(f, v, sizeof(v));
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "verdict", v);
	hs_jsonw_key(w, "heap");
	json_arena(w, &f->all);
	json_arenas(w, f, max_arenas);
	if (max_arenas != SIZE_MAX) {
		hs_jsonw_kuint(w, "arenas_total", f->narenas);
		hs_jsonw_kbool(w, "arenas_truncated", f->narenas > max_arenas);
	}
	hs_jsonw_key(w, "requests");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "largest_served_from_free", hs_frag_max_request(f));
	if (f->headerless) {
		hs_jsonw_key(w, "classes_without_free_regions");
		hs_jsonw_array_begin(w);
		for (size_t i = 0; i < f->all.nclasses; i++)
			if (!f->all.classes[i].free)
				hs_jsonw_uint(w, f->all.classes[i].size);
		hs_jsonw_array_end(w);
	} else {
		hs_jsonw_kuint(w, "mmap_threshold", f->mmap_threshold);
	}
	hs_jsonw_object_end(w);
	if (f->headerless)
		hs_jsonw_kuint(w, "metadata", f->metadata);
	hs_jsonw_key(w, "footprint");
	hs_jsonw_array_begin(w);
	for (int k = 0; k < HS_MAP_KINDS; k++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "kind", hs_map_kind_names[k]);
		hs_jsonw_kuint(w, "reserved", f->reserved[k]);
		hs_jsonw_kuint(w, "present", f->present[k]);
		hs_jsonw_kuint(w, "writable", f->writable_reserved[k]);
		hs_jsonw_kuint(w, "in_use", f->in_use[k]);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_kuint(w, "stack_used", f->stack_used);
	hs_jsonw_kint(w, "malloc_share_permille", (int64_t)(hs_frag_malloc_share(f) * 1000 + 0.5));
	if (heap->pymalloc) {
		hs_jsonw_key(w, "pymalloc");
		json_pymalloc(w, heap->pymalloc, max_arenas);
	}
	hs_jsonw_kbool(w, "partial", heap->partial);
	hs_jsonw_object_end(w);
}
