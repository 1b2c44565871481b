/* heapsift frag: where the memory goes, and why free memory cannot be used. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/frag.h"
#include "formats/jsonw.h"
#include "src/cli.h"
#include "src/sort.h"

/* jemalloc size classes, the most free bytes first (then by size) */
static int cmp_free_bytes(const void *a, const void *b)
{
	const struct hs_frag_class *x = a, *y = b;
	uint64_t fx = x->free * x->size, fy = y->free * y->size;
	if (fx != fy)
		return fx > fy ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* Free bytes fragmentation is about (not the top chunk, not retained
 * address space). */
static uint64_t free_nontop(const struct hs_frag_arena *a)
{
	uint64_t n = 0;
	for (int k = 0; k < HS_FREE_KINDS; k++)
		if (hs_free_kind_usable(k))
			n += a->free_bytes[k];
	return n;
}

/* Does this allocator have free blocks of kind k? */
static bool kind_applies(const struct hs_frag *f, int k)
{
	bool je = k == HS_FREE_TCACHE || k >= HS_FREE_SLABS;
	bool gl = k < HS_FREE_SLABS;
	return f->headerless ? je : gl;
}

/* The largest request free memory serves: glibc's chunk less its header;
 * jemalloc's region or page run as is. */
static uint64_t max_request(const struct hs_frag *f)
{
	if (f->headerless)
		return f->largest_servable;
	return f->largest_servable > 8 ? f->largest_servable - 8 : 0;
}

static double ext_frag(const struct hs_frag_arena *a)
{
	uint64_t f = free_nontop(a);
	return f ? 1.0 - (double)a->largest_free / (double)f : 0.0;
}

static uint64_t writable(const struct hs_frag *f)
{
	uint64_t w = 0;
	for (int k = 0; k < HS_MAP_KINDS; k++)
		w += f->in_use[k];
	return w;
}

static double malloc_share(const struct hs_frag *f)
{
	uint64_t w = writable(f);
	return w ? (double)(f->in_use[HS_MAP_ARENA] + f->in_use[HS_MAP_MMAPPED]) /
		(double)w : 0.0;
}

/* One line that answers first. */
static void verdict(const struct hs_frag *f, char *buf, size_t len)
{
	const struct hs_frag_arena *a = &f->all;
	uint64_t fr = free_nontop(a);
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
	double share = malloc_share(f);
	if (a->system && fr * 4 >= a->system && limit && limit <= 512)
		snprintf(buf, len, "%.0f%% of free heap bytes sit in blocks of %s or less, %.0f%% of the heap: fragmentation, not a leak",
			 100.0 * (double)under / (double)fr, hs_fmt_size(b1, limit),
			 100.0 * (double)fr / (double)a->system);
	else if (share < 0.5 && writable(f))
		snprintf(buf, len, "malloc explains %.0f%% of the writable memory: the rest is outside malloc (other anonymous memory: %s)",
			 100.0 * share, hs_fmt_size(b1, f->in_use[HS_MAP_ANON]));
	else if (a->system && fr * 10 < a->system)
		snprintf(buf, len, "the heap is %.0f%% in use and %s free%s: growth is live data (see leaks, top)",
			 100.0 * (double)a->used_bytes / (double)a->system, hs_fmt_size(b1, fr),
			 f->headerless ? "" : " outside the top chunk");
	else
		snprintf(buf, len, "%s of the heap's %s is free%s, the largest free block %s (external fragmentation %.0f%%)",
			 hs_fmt_size(b1, fr), hs_fmt_size(b2, a->system),
			 f->headerless ? " (in slabs, thread caches, dirty and muzzy pages)" : " outside the top chunk",
			 hs_fmt_size(b2 + 16, a->largest_free), 100.0 * ext_frag(a));
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
	hs_jsonw_kint(w, "external_fragmentation_permille", (int64_t)(ext_frag(a) * 1000 + 0.5));
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

void hs_cli_frag_json(struct hs_jsonw *w, const struct hs_frag *f,
		      const struct hs_heap *heap)
{
	char v[512];
	verdict(f, v, sizeof(v));
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "verdict", v);
	hs_jsonw_key(w, "heap");
	json_arena(w, &f->all);
	hs_jsonw_key(w, "arenas");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < f->narenas; i++)
		json_arena(w, &f->arenas[i]);
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "requests");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "largest_served_from_free", max_request(f));
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
	hs_jsonw_kint(w, "malloc_share_permille", (int64_t)(malloc_share(f) * 1000 + 0.5));
	hs_jsonw_kbool(w, "partial", heap->partial);
	hs_jsonw_object_end(w);
}

int hs_cmd_frag(struct hs_cli *cli, struct hs_snapshot *snap)
{
	const struct hs_heap *heap;
	struct hs_dwarf *dw;
	const struct hs_error *err = hs_snapshot_heap(snap, &heap);
	if (err)
		return hs_cli_fail(cli, err);
	hs_snapshot_dwarf(snap, &dw);
	struct hs_frag *f;
	struct hs_error *e = hs_frag_compute(snap->core, dw, heap, &f);
	if (e) {
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	char v[512], b1[32], b2[32], b3[32], b4[32], b5[32];
	verdict(f, v, sizeof(v));
	const struct hs_frag_arena *all = &f->all;
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_cli_frag_json(&w, f, heap);
		hs_jsonw_finish(&w);
		hs_frag_destroy(f);
		return HS_EXIT_OK;
	}
	printf("%s\n\n", v);
	printf("HEAP: system %s, used %s in %" PRIu64 " blocks, overhead %s (%.1f%% of used)\n",
	       hs_fmt_size(b1, all->system), hs_fmt_size(b2, all->used_bytes),
	       all->used_count, hs_fmt_size(b3, all->overhead),
	       all->used_bytes ? 100.0 * (double)all->overhead / (double)all->used_bytes : 0.0);
	printf("FREE:");
	const char *sep = "";
	for (int k = 0; k < HS_FREE_KINDS; k++) {
		if (!kind_applies(f, k))
			continue;
		printf("%s %s %s (%" PRIu64 ")", sep, hs_free_kind_names[k],
		       hs_fmt_size(b1, all->free_bytes[k]), all->free_count[k]);
		sep = ",";
	}
	printf("\n");
	if (f->headerless)
		printf("jemalloc's own metadata (base blocks): %s\n", hs_fmt_size(b1, f->metadata));
	printf("\n%6s %11s %11s %11s %11s %13s %9s %11s\n", "ARENA", "SYSTEM", "USED",
	       "FREE", f->headerless ? "RETAINED" : "TOP", "LARGEST FREE", "EXT FRAG", "OVERHEAD");
	for (size_t i = 0; i < f->narenas; i++) {
		const struct hs_frag_arena *a = &f->arenas[i];
		if (f->headerless && !a->system && !a->free_bytes[HS_FREE_RETAINED])
			continue;  /* an arena index not in use */
		printf("%5zu%s %11s %11s %11s %11s %13s %8.0f%% %11s\n", i, a->main ? "*" : " ",
		       hs_fmt_size(b1, a->system), hs_fmt_size(b2, a->used_bytes),
		       hs_fmt_size(b3, free_nontop(a)),
		       hs_fmt_size(b4, f->headerless ? a->free_bytes[HS_FREE_RETAINED] : a->top),
		       hs_fmt_size(b5, a->largest_free), 100.0 * ext_frag(a),
		       hs_fmt_size(b1 + 16, a->overhead));
	}
	if (f->headerless)
		printf("(* arena 0; SYSTEM: pages of active, dirty and muzzy extents; FREE: slab regions, thread caches, dirty and muzzy pages; RETAINED: address space kept, no memory; OVERHEAD: slab tails, large extents' pad page, thread caches' stacks)\n");
	else
		printf("(* the main arena; FREE is outside the top chunk, in chunk bytes)\n");
	if (f->headerless && all->nclasses) {
		/* the classes with the most free bytes first */
		size_t n = all->nclasses;
		struct hs_frag_class *byfree = malloc(n * sizeof(*byfree));
		if (byfree) {
			memcpy(byfree, all->classes, n * sizeof(*byfree));
			hs_sort(byfree, n, sizeof(*byfree), cmp_free_bytes);
			printf("\nSMALL SIZE CLASSES (all arenas), most free bytes first\n%9s %7s %9s %9s %9s %9s %11s %6s\n",
			       "SIZE", "SLABS", "REGIONS", "USED", "TCACHE", "FREE", "FREE BYTES", "USED%");
			for (size_t i = 0; i < n && i < 20; i++) {
				const struct hs_frag_class *c = &byfree[i];
				printf("%9" PRIu64 " %7" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
				       " %9" PRIu64 " %11s %5.0f%%\n", c->size, c->slabs, c->regions,
				       c->used, c->tcache, c->free, hs_fmt_size(b1, c->free * c->size),
				       c->regions ? 100.0 * (double)c->used / (double)c->regions : 0.0);
			}
			if (n > 20)
				printf("(%zu more classes: --format json lists them all)\n", n - 20);
			free(byfree);
		}
	}
	printf("\nFREE CHUNKS BY SIZE\n%12s %9s %11s\n", "UP TO", "COUNT", "BYTES");
	for (int b = 0; b < HS_FRAG_BUCKETS; b++)
		if (all->hist_count[b])
			printf("%12s %9" PRIu64 " %11s\n", hs_fmt_size(b1, 1ull << b),
			       all->hist_count[b], hs_fmt_size(b2, all->hist_bytes[b]));
	printf("\nREQUESTS: free memory serves requests up to %s; larger ones grow the heap",
	       hs_fmt_size(b1, max_request(f)));
	if (f->headerless) {
		size_t none = 0;
		for (size_t i = 0; i < all->nclasses; i++)
			none += !all->classes[i].free;
		printf(" (or reuse retained address space); %zu of the %zu small classes in use have no free region left\n",
		       none, all->nclasses);
	} else {
		printf(" (from %s on, malloc maps them on their own)\n",
		       hs_fmt_size(b2, f->mmap_threshold));
	}
	printf("\nFOOTPRINT\n%-16s %11s %11s %11s %11s\n", "KIND", "RESERVED", "IN CORE",
	       "WRITABLE", "IN USE");
	for (int k = 0; k < HS_MAP_KINDS; k++)
		if (f->reserved[k])
			printf("%-16s %11s %11s %11s %11s\n", hs_map_kind_names[k],
			       hs_fmt_size(b1, f->reserved[k]), hs_fmt_size(b2, f->present[k]),
			       hs_fmt_size(b3, f->writable_reserved[k]),
			       hs_fmt_size(b4, f->in_use[k]));
	printf("(IN USE: arenas' system bytes, stacks from the stack pointer up, other writable memory as mapped)\n");
	printf("thread stacks in use: %s of %s reserved\n", hs_fmt_size(b1, f->stack_used),
	       hs_fmt_size(b2, f->reserved[HS_MAP_STACK]));
	printf("malloc explains %.1f%% of the writable memory in use (%s)\n",
	       100.0 * malloc_share(f), hs_fmt_size(b1, writable(f)));
	hs_frag_destroy(f);
	return HS_EXIT_OK;
}
