/* heapsift frag: where the memory goes, and why free memory cannot be used. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/pymalloc.h"
#include "analyzers/frag.h"
#include "formats/jsonw.h"
#include "src/alloc.h"
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

static void py_row(const char *what, bool known, uint64_t bytes, const char *more)
{
	char b[32];
	if (known)
		printf("  %-18s %11s %12" PRIu64 " bytes%s\n", what, hs_fmt_size(b, bytes),
		       bytes, more);
	else
		printf("  %-18s %11s (the arena table was not found)\n", what, "?");
}

/* pymalloc's arenas as sys._debugmallocstats() splits them, and how full
 * each arena's pools are: an arena goes back to the system only when no
 * pool of it is in use. */
static void pymalloc_text(const struct hs_pymalloc *py)
{
	struct hs_py_footprint fp;
	hs_pymalloc_footprint(py, &fp);
	char b1[32], b2[32], more[96];
	printf("\nPYMALLOC (Python %s): %" PRIu64 " arena%s of %s, %s\n", py->version,
	       py->arenas, py->arenas == 1 ? "" : "s", hs_fmt_size(b1, py->arena_size),
	       hs_fmt_size(b2, fp.arenas));
	snprintf(more, sizeof(more), ", %" PRIu64 " blocks", py->used_blocks);
	py_row("blocks in use", true, fp.blocks, more);
	snprintf(more, sizeof(more), ", %" PRIu64 " blocks in pools in use", py->free_blocks);
	py_row("available blocks", true, fp.available, more);
	snprintf(more, sizeof(more), ", %" PRIu64 " pools", py->unused_pools);
	py_row("unused pools", py->table, fp.unused_pools, more);
	py_row("pool headers", true, fp.headers, "");
	py_row("quantization", true, fp.quantization, "");
	py_row("arena alignment", py->table, fp.alignment, "");
	if (!py->table)
		return;
	/* arenas by the share of their pools in use */
	uint64_t n[4] = {0}, low_pools = 0;
	for (size_t i = 0; i < py->narena; i++) {
		const struct hs_py_arena *a = &py->arena[i];
		if (!a->total_pools)
			continue;
		unsigned q = (unsigned)(4 * a->pools / a->total_pools);
		n[q > 3 ? 3 : q]++;
		if (q == 0)
			low_pools += a->pools;
	}
	printf("  arenas by pools in use: under 25%% %" PRIu64 ", 25-50%% %" PRIu64
	       ", 50-75%% %" PRIu64 ", 75%% or more %" PRIu64 "\n", n[0], n[1], n[2], n[3]);
	if (n[0])
		printf("  %" PRIu64 " arena%s under 25%% in use keep%s %s mapped for %" PRIu64
		       " pools in use: an arena is unmapped only when all its pools are free\n",
		       n[0], n[0] == 1 ? "" : "s", n[0] == 1 ? "s" : "",
		       hs_fmt_size(b1, n[0] * py->arena_size), low_pools);
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
	hs_frag_verdict(f, v, sizeof(v));
	const struct hs_frag_arena *all = &f->all;
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_frag_json(&w, f, heap);
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
		if (!hs_frag_kind_applies(f, k))
			continue;
		printf("%s %s %s (%" PRIu64 ")", sep, hs_free_kind_names[k],
		       hs_fmt_size(b1, all->free_bytes[k]), all->free_count[k]);
		sep = ",";
	}
	printf("\n");
	if (f->headerless)
		printf("%s's own metadata: %s\n", f->allocator, hs_fmt_size(b1, f->metadata));
	printf("\n%6s %11s %11s %11s %11s %13s %9s %11s\n", "ARENA", "SYSTEM", "USED",
	       "FREE", f->headerless ? "RETAINED" : "TOP", "LARGEST FREE", "EXT FRAG", "OVERHEAD");
	for (size_t i = 0; i < f->narenas; i++) {
		const struct hs_frag_arena *a = &f->arenas[i];
		if (f->headerless && !a->system && !a->free_bytes[HS_FREE_RETAINED])
			continue;  /* an arena index not in use */
		printf("%5zu%s %11s %11s %11s %11s %13s %8.0f%% %11s\n", i, a->main ? "*" : " ",
		       hs_fmt_size(b1, a->system), hs_fmt_size(b2, a->used_bytes),
		       hs_fmt_size(b3, hs_frag_free_bytes(a)),
		       hs_fmt_size(b4, f->headerless ? a->free_bytes[HS_FREE_RETAINED] : a->top),
		       hs_fmt_size(b5, a->largest_free), 100.0 * hs_frag_external(a),
		       hs_fmt_size(b1 + 16, a->overhead));
	}
	if (f->headerless)
		printf("(* arena 0; SYSTEM: pages of active, dirty and muzzy extents; FREE: slab regions, thread caches, dirty and muzzy pages; RETAINED: address space kept, no memory; OVERHEAD: slab tails, large extents' pad page, thread caches' stacks)\n");
	else
		printf("(* the main arena; FREE is outside the top chunk, in chunk bytes)\n");
	if (heap->pymalloc)
		pymalloc_text(heap->pymalloc);
	if (f->headerless && all->nclasses) {
		/* the classes with the most free bytes first */
		size_t n = all->nclasses;
		struct hs_frag_class *byfree = hs_malloc(n * sizeof(*byfree));
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
	       hs_fmt_size(b1, hs_frag_max_request(f)));
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
	printf("%s %.1f%% of the writable memory in use (%s)\n",
	       f->in_use[HS_MAP_PYMALLOC] ? "malloc and pymalloc explain" : "malloc explains",
	       100.0 * hs_frag_malloc_share(f), hs_fmt_size(b1, hs_frag_writable(f)));
	hs_frag_destroy(f);
	return HS_EXIT_OK;
}
