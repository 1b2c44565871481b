/* The backend interface, end to end: a toy allocator ("bump") defined here,
 * in the test, walked by the snapshot over a synthetic core
 * (tests/unit/mockcore.h), then marked, dominated and typed by the same
 * code that serves glibc and jemalloc.  Adding a backend is this much: a
 * walker that fills struct hs_heap, and a struct hs_backend.
 *
 * bump's heap is one segment:
 *
 *   +0   u64 magic "BUMPHEAP"
 *   +8   u64 used: bytes of blocks from +16
 *   +16  blocks, one after another:
 *          u64 header: usable size (a multiple of 16) | 1 when in use
 *          usable bytes (the user's pointer is the header's address + 8)
 *
 * The test program's memory, by construction:
 *
 *   data (rw, no module: unexplained writable memory, a root)
 *     +0   -> A               +8  -> K + 8 (inside K)
 *   stack of thread 42 (rsp = stack + 0x800)
 *     rsp + 0x10 -> S         rsp - 0x200 -> Z (below the red zone: dead)
 *   A -> B, B -> A (a cycle held from a root)
 *   D -> E, E -> F            (nothing points to D)
 *   L1 -> L2, L2 -> L1        (a leaked cycle)
 *   G free; K held by an interior pointer only
 *
 * Expected classes (memcheck's): A B S reachable; K possible; D leak root
 * holding E and F (indirect); of the leaked cycle L1 (the lower address)
 * is the leak root, L2 indirect; Z leaked (a dead stack word is no root);
 * G no class (free).
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/heap.h"
#include "analyzers/graph.h"
#include "src/snapshot.h"
#include "tests/unit/mockcore.h"
#include "tests/unit/check.h"


/* ---- the toy backend ---- */

static const uint64_t BUMP_MAGIC = 0x50414548504d5542ull;  /* "BUMPHEAP" */

static struct hs_error *bump_walk(const struct hs_core *core,
				  struct hs_dwarf *dw, struct hs_log *log,
				  const struct hs_walk_options *opts,
				  struct hs_heap **ret);

/* Its places: a block in use, a free one; each owns its 8-byte header. */
enum { BUMP_USED = 0, BUMP_FREE = HS_WHERE_FREE };
static const struct hs_place bump_places[HS_WHERE_MAX] = {
	[BUMP_USED] = {"block", .header = 8},
	[BUMP_FREE] = {"free", .header = 8},
};

static const struct hs_backend bump_backend = {
	.name = "bump",
	.places = bump_places,
	.walk = bump_walk,
};

static struct hs_error *bump_walk(const struct hs_core *core,
				  struct hs_dwarf *dw, struct hs_log *log,
				  const struct hs_walk_options *opts,
				  struct hs_heap **ret)
{
	(void)dw;
	(void)opts;
	const struct hs_core_segment *seg = NULL;
	for (size_t i = 0; i < core->nsegs && !seg; i++) {
		uint64_t magic;
		if (hs_core_read_u64(core, core->segs[i].vaddr, &magic) &&
		    magic == BUMP_MAGIC)
			seg = &core->segs[i];
	}
	if (!seg)
		return hs_error_create(HS_ERR_NOT_FOUND, "no bump heap in this core");
	struct hs_heap *heap = hs_heap_create(&bump_backend);
	if (!heap)
		return &hs_error_nomem;
	heap->totals_only = opts && opts->totals_only;
	uint64_t base = seg->vaddr, used = 0;
	struct hs_arena ar = {.addr = base, .system_mem = seg->memsz, .main = true};
	struct hs_error *err = NULL;
	size_t ai;
	if (!hs_core_read_u64(core, base + 8, &used) || used > seg->memsz - 16) {
		hs_log_warn(log, "bump heap at %#" PRIx64 ": its used count is wrong", base);
		heap->partial = true;
		used = 0;
	}
	if ((err = hs_heap_add_arena(heap, &ar, &ai)) ||
	    (err = hs_heap_add_region(heap, base, base + seg->memsz, HS_REGION_HEAP)) ||
	    (err = hs_heap_begin_run(heap)))
		goto fail;
	for (uint64_t p = base + 16; p < base + 16 + used;) {
		uint64_t hdr, size;
		if (!hs_core_read_u64(core, p, &hdr) || !(size = hdr & ~(uint64_t)15) ||
		    size > base + 16 + used - (p + 8)) {
			hs_log_warn(log, "bump heap: a broken header at %#" PRIx64, p);
			heap->partial = true;
			break;
		}
		struct hs_alloc_in a = {
			.addr = p + 8, .size = size, .arena = 0,
			.where = hdr & 1 ? BUMP_USED : BUMP_FREE,
		};
		struct hs_arena *arp = &heap->arenas[0];
		if (hdr & 1) {
			arp->used_count++;
			arp->used_bytes += size;
		} else {
			arp->free_count++;
			arp->free_bytes += size;
		}
		if ((err = hs_heap_add(heap, &a)))
			goto fail;
		p += 8 + size;
	}
	if ((err = hs_heap_finish(heap)))
		goto fail;
	*ret = heap;
	return NULL;
fail:
	hs_heap_destroy(heap);
	return err;
}

/* "shuffle": bump's heap walked from its last block to its first, in one
 * run, with a warning: a walker whose blocks come out of order, which a
 * totals_only heap cannot vouch for (the snapshot walks it again keeping
 * them; the warning is given once). */
static struct hs_error *shuffle_walk(const struct hs_core *core,
				     struct hs_dwarf *dw, struct hs_log *log,
				     const struct hs_walk_options *opts,
				     struct hs_heap **ret);
static const struct hs_backend shuffle_backend = {
	.name = "shuffle",
	.places = bump_places,
	.walk = shuffle_walk,
};

static struct hs_error *shuffle_walk(const struct hs_core *core,
				     struct hs_dwarf *dw, struct hs_log *log,
				     const struct hs_walk_options *opts,
				     struct hs_heap **ret)
{
	struct hs_walk_options full = {0};
	struct hs_heap *bump;
	struct hs_error *err = bump_walk(core, dw, log, &full, &bump);
	if (err)
		return err;
	struct hs_heap *heap = hs_heap_create(&shuffle_backend);
	if (!heap) {
		hs_heap_destroy(bump);
		return &hs_error_nomem;
	}
	heap->totals_only = opts && opts->totals_only;
	hs_log_warn(log, "shuffle: walked backwards");
	size_t ai;
	if (!(err = hs_heap_add_arena(heap, &bump->arenas[0], &ai)) &&
	    !(err = hs_heap_begin_run(heap))) {
		for (size_t i = bump->nallocs; i-- > 0 && !err;) {
			const struct hs_alloc *b = &bump->allocs[i];
			struct hs_alloc_in a = {.addr = b->addr, .size = b->size,
						.where = b->where,
						.arena = hs_heap_arena(bump, i)};
			err = hs_heap_add(heap, &a);
		}
	}
	if (!err)
		err = hs_heap_finish(heap);
	hs_heap_destroy(bump);
	if (err) {
		hs_heap_destroy(heap);
		return err;
	}
	*ret = heap;
	return NULL;
}

/* A totals_only heap counts what a full one keeps, and knows when the
 * blocks' order and overlaps are beyond what it kept. */
static void test_totals_only(void)
{
	static const struct hs_alloc_in blocks[] = {
		{.addr = 0x1010, .size = 24, .where = BUMP_USED},
		{.addr = 0x1030, .size = 40, .where = BUMP_FREE},
		{.addr = 0x2010, .size = 24, .where = BUMP_USED},
		{.addr = 0x2030, .size = 8, .where = BUMP_USED},
	};
	/* the runs: {0, 1} and {2, 3}; given in that order, then the other */
	for (int order = 0; order < 2; order++) {
		struct hs_heap *full = hs_heap_create(&bump_backend);
		struct hs_heap *tot = hs_heap_create(&bump_backend);
		tot->totals_only = true;
		for (int r = 0; r < 2; r++) {
			int run = order ? 1 - r : r;
			CHECK(!hs_heap_begin_run(full) && !hs_heap_begin_run(tot));
			for (int i = 2 * run; i < 2 * run + 2; i++)
				CHECK(!hs_heap_add(full, &blocks[i]) &&
				      !hs_heap_add(tot, &blocks[i]));
		}
		CHECK(!hs_heap_finish(full) && !hs_heap_finish(tot));
		CHECK(tot->nallocs == full->nallocs && !tot->allocs);
		CHECK(!memcmp(tot->count_where, full->count_where, sizeof(full->count_where)));
		CHECK(!memcmp(tot->bytes_where, full->bytes_where, sizeof(full->bytes_where)));
		CHECK(!tot->needs_blocks);
		hs_heap_destroy(full);
		hs_heap_destroy(tot);
	}
	/* out of order within a run, and overlapping (the second block's
	 * header is in the first block): both need the blocks */
	static const struct hs_alloc_in bad[][2] = {
		{{.addr = 0x1030, .size = 8}, {.addr = 0x1010, .size = 8}},
		{{.addr = 0x1010, .size = 32}, {.addr = 0x1030, .size = 8}},
	};
	for (int k = 0; k < 2; k++) {
		struct hs_heap *tot = hs_heap_create(&bump_backend);
		tot->totals_only = true;
		CHECK(!hs_heap_begin_run(tot));
		CHECK(!hs_heap_add(tot, &bad[k][0]) && !hs_heap_add(tot, &bad[k][1]));
		CHECK(!hs_heap_finish(tot) && tot->needs_blocks);
		hs_heap_destroy(tot);
		/* the same two blocks in two runs: checked between the runs */
		tot = hs_heap_create(&bump_backend);
		tot->totals_only = true;
		for (int i = 0; i < 2; i++)
			CHECK(!hs_heap_begin_run(tot) && !hs_heap_add(tot, &bad[k][i]));
		CHECK(!hs_heap_finish(tot));
		CHECK(tot->needs_blocks == (k == 1));  /* runs are sorted by their first block */
		hs_heap_destroy(tot);
	}
}

/* The finished table: 12-byte blocks in address order whatever order the
 * runs came in, each block's arena kept (hs_heap_arena), a merge that
 * keeps them, and a block past 2^47 refused. */
static void check_table(const char *what, const struct hs_heap *h,
			const struct hs_alloc_in *want, size_t n)
{
	CHECKF(h->nallocs == n, "%s: %zu blocks, want %zu", what, h->nallocs, n);
	for (size_t i = 0; i < n && i < h->nallocs; i++) {
		const struct hs_alloc *a = &h->allocs[i];
		CHECKF(a->addr == want[i].addr && a->size == want[i].size &&
		       a->where == want[i].where &&
		       hs_heap_arena(h, i) == want[i].arena,
		       "%s: block %zu is %#llx %llu where %u arena %u, want %#llx arena %u",
		       what, i, (unsigned long long)a->addr,
		       (unsigned long long)a->size, (unsigned)a->where,
		       (unsigned)hs_heap_arena(h, i),
		       (unsigned long long)want[i].addr, (unsigned)want[i].arena);
	}
}

static void test_table(void)
{
	/* sorted by address: three arenas, none for the mmapped ones */
	static const struct hs_alloc_in sorted[] = {
		{.addr = 0x1010, .size = 24, .where = BUMP_USED, .arena = 0},
		{.addr = 0x1030, .size = 40, .where = BUMP_FREE, .arena = 0},
		{.addr = 0x2010, .size = 24, .where = BUMP_USED, .arena = HS_ARENA_NONE},
		{.addr = 0x3010, .size = 8, .where = BUMP_USED, .arena = 2},
		{.addr = 0x3020, .size = 8, .where = BUMP_USED, .arena = 2},
		{.addr = 0x7ffffffff000, .size = 0xff0, .where = BUMP_USED, .arena = 1},
	};
	enum { N = sizeof(sorted) / sizeof(sorted[0]) };
	/* the runs {0, 1} {2} {3, 4} {5}, given in these orders: in order,
	 * backwards (each run sorted: concatenated), one block at a time
	 * backwards in one run (sorted in place), and all in order in one
	 * run (whose arenas change within it) */
	static const int orders[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}};
	static const size_t start[] = {0, 2, 3, 5, 6};
	for (int o = 0; o < 4; o++) {
		struct hs_heap *h = hs_heap_create(&bump_backend);
		if (o < 2) {
			for (int r = 0; r < 4; r++) {
				int run = orders[o][r];
				CHECK(!hs_heap_begin_run(h));
				for (size_t i = start[run]; i < start[run + 1]; i++)
					CHECK(!hs_heap_add(h, &sorted[i]));
			}
		} else if (o == 2) {
			CHECK(!hs_heap_begin_run(h));
			for (size_t i = N; i-- > 0;)
				CHECK(!hs_heap_add(h, &sorted[i]));
		} else {
			CHECK(!hs_heap_reserve(h, N));
			CHECK(!hs_heap_begin_run(h));
			for (size_t i = 0; i < N; i++)
				CHECK(!hs_heap_add(h, &sorted[i]));
		}
		struct hs_error *err = hs_heap_finish(h);
		CHECK(!err);
		CHECK(!h->build && h->narena_runs == 4);
		const char *what[] = {"in order", "runs backwards", "blocks backwards",
				      "in order, one run"};
		check_table(what[o], h, sorted, N);
		/* a layer's blocks merged in, with no arena */
		static const struct hs_alloc_in layer[] = {
			{.addr = 0x1070, .size = 8, .where = BUMP_USED, .arena = HS_ARENA_NONE},
			{.addr = 0x3030, .size = 8, .where = BUMP_USED, .arena = HS_ARENA_NONE},
		};
		struct hs_alloc_in merged[N + 2];
		memcpy(merged, sorted, 2 * sizeof(merged[0]));
		merged[2] = layer[0];
		memcpy(merged + 3, sorted + 2, 3 * sizeof(merged[0]));
		merged[6] = layer[1];
		merged[7] = sorted[5];
		CHECK(!hs_heap_merge(h, layer, 2));
		check_table("merged", h, merged, N + 2);
		/* a merge that overlaps, or lies past 2^47: refused, the
		 * table as it was */
		static const struct hs_alloc_in bad[][1] = {
			{{.addr = 0x1018, .size = 8, .where = BUMP_USED}},
			{{.addr = 0x800000000010, .size = 8, .where = BUMP_USED}},
		};
		for (int b = 0; b < 2; b++) {
			err = hs_heap_merge(h, bad[b], 1);
			CHECK(err && err->code == HS_ERR_CORRUPT);
			CHECK(!err || b == 0 || strstr(err->message, "0x800000000010"));
			hs_error_destroy(err);
			check_table("after a refused merge", h, merged, N + 2);
		}
		hs_heap_destroy(h);
	}
	/* a corrupt walk, in each finishing path (in order, runs backwards,
	 * blocks backwards): a block past 2^47, one that starts inside the
	 * one before, one inside the header room after the one before, and
	 * a second at the same address (two blocks alike: the sort need not
	 * be stable); each is left out, the rest kept as a sane table,
	 * and the error names the first and counts them */
	static const struct {
		struct hs_alloc_in in[4];
		size_t n, keep[3], nkeep;
		const char *msg;
	} bad[] = {
		{{{.addr = 0x1010, .size = 24, .where = BUMP_USED, .arena = 0},
		  {.addr = 0x800000000010, .size = 24, .where = BUMP_USED, .arena = 0}},
		 2, {0}, 1, "0x800000000010 lies past 2^47, outside x86-64's user addresses (1 block left out)"},
		{{{.addr = 0x1010, .size = 64, .where = BUMP_USED, .arena = 0},
		  {.addr = 0x1030, .size = 8, .where = BUMP_USED, .arena = 1},
		  {.addr = 0x1060, .size = 8, .where = BUMP_USED, .arena = 1}},
		 3, {0, 2}, 2, "blocks at 0x1010 and 0x1030 overlap (1 block left out)"},
		{{{.addr = 0x1010, .size = 24, .where = BUMP_USED, .arena = 0},
		  {.addr = 0x1030, .size = 8, .where = BUMP_USED, .arena = 1},
		  {.addr = 0x1038, .size = 8, .where = BUMP_USED, .arena = 1},
		  {.addr = 0x900000000000, .size = 8, .where = BUMP_USED, .arena = 1}},
		 4, {0, 1}, 2, "blocks at 0x1030 and 0x1038 overlap (2 blocks left out, some past 2^47)"},
		{{{.addr = 0x1010, .size = 0, .where = BUMP_USED, .arena = 0},
		  {.addr = 0x1010, .size = 0, .where = BUMP_USED, .arena = 0}},
		 2, {0}, 1, "blocks at 0x1010 and 0x1010 overlap (1 block left out)"},
	};
	CHECK(bump_backend.places[BUMP_USED].header == 8);
	/* every block past 2^47: none kept, and the lowest named */
	{
		static const struct hs_alloc_in past[] = {
			{.addr = 0x900000000010, .size = 8, .where = BUMP_USED, .arena = 0},
			{.addr = 0x800000000010, .size = 8, .where = BUMP_USED, .arena = 0},
		};
		struct hs_heap *h = hs_heap_create(&bump_backend);
		CHECK(!hs_heap_begin_run(h));
		CHECK(!hs_heap_add(h, &past[0]) && !hs_heap_add(h, &past[1]));
		struct hs_error *err = hs_heap_finish(h);
		CHECKF(err && err->code == HS_ERR_CORRUPT &&
		       strstr(err->message, "0x800000000010 lies past 2^47, outside x86-64's user addresses (2 blocks left out)"),
		       "every block past 2^47: %s", err ? err->message : "no error");
		hs_error_destroy(err);
		CHECK(h->nallocs == 0 && !h->build);
		hs_heap_destroy(h);
	}
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		for (int o = 0; o < 3; o++) {
			/* one run a block (o < 2), or one run for them all */
			struct hs_heap *h = hs_heap_create(&bump_backend);
			for (size_t i = 0; i < bad[b].n; i++) {
				size_t k = o == 0 ? i : bad[b].n - 1 - i;
				if (o < 2 || !i)
					CHECK(!hs_heap_begin_run(h));
				CHECK(!hs_heap_add(h, &bad[b].in[k]));
			}
			struct hs_error *err = hs_heap_finish(h);
			CHECKF(err && err->code == HS_ERR_CORRUPT &&
			       strstr(err->message, bad[b].msg),
			       "corrupt walk %zu, order %d: %s", b, o,
			       err ? err->message : "no error");
			hs_error_destroy(err);
			struct hs_alloc_in want[3];
			for (size_t i = 0; i < bad[b].nkeep; i++)
				want[i] = bad[b].in[bad[b].keep[i]];
			char what[64];
			snprintf(what, sizeof(what), "corrupt walk %zu, order %d", b, o);
			CHECK(!h->build);
			check_table(what, h, want, bad[b].nkeep);
			uint64_t count = 0;
			for (unsigned w = 0; w < 16; w++)
				count += h->count_where[w];
			CHECKF(count == bad[b].nkeep, "%s: counted %llu", what,
			       (unsigned long long)count);
			hs_heap_destroy(h);
		}
	}
}

/* Runs that interleave, as a thread arena's heaps do with the mmapped
 * chunks between them: NB blocks dealt at random to NR runs, each run in
 * address order, the runs given in a random order; the table has them
 * all, in address order.  Then two runs that both hold a block at one
 * address (a corrupt walk): the block given first is kept, whichever run
 * it is in, as a stable sort would keep it. */
static void test_interleaved_runs(void)
{
	enum { NB = 6000, NR = 23 };
	struct hs_alloc_in *all = malloc(NB * sizeof(*all));
	uint8_t *run_of = malloc(NB);
	CHECK(all && run_of);
	if (!all || !run_of) {
		free(all);
		free(run_of);
		return;
	}
	for (size_t i = 0; i < NB; i++) {
		all[i] = (struct hs_alloc_in){.addr = 0x100000 + i * 0x40,
					      .size = 16 + check_rand() % 3 * 8,
					      .where = BUMP_USED, .arena = 0};
		run_of[i] = (uint8_t)(check_rand() % NR);
	}
	int order[NR];
	for (int r = 0; r < NR; r++)
		order[r] = r;
	for (int r = NR - 1; r > 0; r--) {
		int j = (int)(check_rand() % (uint64_t)(r + 1)), t = order[r];
		order[r] = order[j];
		order[j] = t;
	}
	struct hs_heap *h = hs_heap_create(&bump_backend);
	for (int r = 0; r < NR; r++) {
		CHECK(!hs_heap_begin_run(h));
		for (size_t i = 0; i < NB; i++)
			if (run_of[i] == order[r])
				CHECK(!hs_heap_add(h, &all[i]));
	}
	struct hs_error *err = hs_heap_finish(h);
	CHECKF(!err, "interleaved runs: %s", err ? err->message : "");
	hs_error_destroy(err);
	check_table("interleaved runs", h, all, NB);
	hs_heap_destroy(h);
	free(all);
	free(run_of);

	static const struct hs_alloc_in a[] = {
		{.addr = 0x1010, .size = 8, .where = BUMP_USED, .arena = 0},
		{.addr = 0x3010, .size = 8, .where = BUMP_USED, .arena = 0},
	};
	static const struct hs_alloc_in b[] = {
		{.addr = 0x1010, .size = 24, .where = BUMP_USED, .arena = 1},
		{.addr = 0x2010, .size = 8, .where = BUMP_USED, .arena = 1},
	};
	for (int first = 0; first < 2; first++) {
		h = hs_heap_create(&bump_backend);
		const struct hs_alloc_in *x = first ? b : a, *y = first ? a : b;
		CHECK(!hs_heap_begin_run(h));
		CHECK(!hs_heap_add(h, &x[0]) && !hs_heap_add(h, &x[1]));
		CHECK(!hs_heap_begin_run(h));
		CHECK(!hs_heap_add(h, &y[0]) && !hs_heap_add(h, &y[1]));
		err = hs_heap_finish(h);
		CHECKF(err && err->code == HS_ERR_CORRUPT &&
		       strstr(err->message, "blocks at 0x1010 and 0x1010 overlap (1 block left out)"),
		       "a block twice, in two runs: %s", err ? err->message : "no error");
		hs_error_destroy(err);
		const struct hs_alloc_in want[] = {x[0], b[1], a[1]};
		check_table(first ? "a block twice, the second run's first" :
			    "a block twice, the first run's first", h, want, 3);
		hs_heap_destroy(h);
	}
}

/* where the synthetic cores put the heap, the data, the stack */
enum {
	HEAP = 0x10000000, DATA = 0x20000000, STACK = 0x7ff000000000,
	RSP = STACK + 0x800,
};

/* ---- a wide heap: the mark against a plain search ---- */

/* NW blocks of WORDS words, each holding pointers to random blocks (some
 * into their interiors), a few of them held by the data segment: every
 * block's class against a depth-first search of the same pointers.  The
 * start pointers' breadth-first front grows from 3 blocks to thousands,
 * so the mark's queue wraps around its ring and grows while wrapped. */
enum { NW = 30000, WORDS = 4 };

static uint64_t wide_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The graph's address map (hs_addrmap_lookup) against a binary search of
 * the table: 200,000 blocks of 8 bytes to 96 KiB, packed close (a granule
 * group of small ones), apart, and past the span gap (several spans);
 * every block's first and last byte, the byte past it and the one before
 * it, and 200,000 addresses at random in the heap's range. */
static uint32_t table_lookup(const struct hs_heap *h, uint64_t v)
{
	size_t lo = 0, hi = h->nallocs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->allocs[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return HS_NO_ALLOC;
	const struct hs_alloc *a = &h->allocs[lo - 1];
	return v < (uint64_t)a->addr + a->size ? (uint32_t)(lo - 1) : HS_NO_ALLOC;
}

static void test_addrmap(void)
{
	enum { NB = 200000 };
	uint64_t x = 0x2545f4914f6cdd1dull;
	struct hs_heap *h = hs_heap_create(&bump_backend);
	CHECK(h != NULL);
	if (!h)
		return;
	uint64_t at = 0x10000000;
	for (int i = 0; i < NB; i++) {
		uint64_t r = wide_next(&x);
		uint64_t size = r % 100 < 70 ? 8 + 8 * (r >> 8 & 7) :
				r % 100 < 97 ? 8 + (r >> 8) % 4096 : 8 + (r >> 8) % 98304;
		uint64_t gap = r % 1000 == 0 ? (1 << 20) + (r >> 20) % (4 << 20) :
			       r % 10 < 8 ? 8 : 8 + (r >> 24) % 512;
		struct hs_alloc_in a = {.addr = at + gap, .size = size, .where = BUMP_USED,
					.arena = HS_ARENA_NONE};
		CHECK(!hs_heap_add(h, &a));
		at = a.addr + size;
	}
	CHECK(!hs_heap_finish(h));
	CHECK(h->nallocs == NB);
	/* a core without the blocks' bytes: the map needs the table alone */
	struct mock_core m = {0};
	mock_segment(&m, DATA, 0x1000, PF_R | PF_W);
	mock_thread(&m, 44)[HS_REG_RSP] = DATA + 0x800;
	size_t len;
	uint8_t *bytes = mock_build(&m, &len);
	mock_free(&m);
	struct hs_log log;
	hs_log_init(&log, getenv("HS_UNIT_VERBOSE") ? stderr : NULL, false);
	struct hs_core *core = NULL;
	struct hs_graph *g = NULL;
	CHECK(!hs_core_open_memory("addrmap.core", bytes, len, &log, &core));
	if (core)
		CHECK(!hs_graph_build(core, h, NULL, 1, &log, &g));
	if (g) {
		CHECKF(g->map.nspans > 100, "%zu spans", g->map.nspans);
		size_t bad = 0;
		for (uint32_t i = 0; i < h->nallocs; i++) {
			const struct hs_alloc *a = &h->allocs[i];
			uint64_t probe[] = {a->addr, (uint64_t)a->addr + a->size - 1,
					    (uint64_t)a->addr + a->size, (uint64_t)a->addr - 1};
			for (int k = 0; k < 4; k++)
				bad += hs_addrmap_lookup(&g->map, probe[k]) !=
				       table_lookup(h, probe[k]);
		}
		uint64_t lo = h->allocs[0].addr - 4096, span = at + 4096 - lo;
		for (int k = 0; k < NB; k++) {
			uint64_t v = lo + wide_next(&x) % span;
			bad += hs_addrmap_lookup(&g->map, v) != table_lookup(h, v);
		}
		CHECKF(!bad, "%zu lookups differ from the table's", bad);
	}
	hs_graph_destroy(g);
	hs_core_destroy(core);
	hs_log_fini(&log);
	free(bytes);
	hs_heap_destroy(h);
}

/* m with a stack and thread tid stopped on it, as a core's bytes (m is
 * freed). */
static uint8_t *with_stack(struct mock_core *m, int tid, size_t *len)
{
	mock_segment(m, STACK, 0x1000, PF_R | PF_W);
	uint64_t *regs = mock_thread(m, tid);
	regs[HS_REG_RSP] = RSP;
	regs[HS_REG_RIP] = 0x400000;
	uint8_t *bytes = mock_build(m, len);
	mock_free(m);
	return bytes;
}

static void test_wide_mark(void)
{
	static uint32_t to[NW][WORDS];     /* target + 1, 0 for none */
	static bool interior[NW][WORDS];
	static uint8_t want[NW];
	static uint32_t stack[NW * WORDS + 8];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct mock_core m = {0};
	uint64_t bsize = 8 * WORDS, span = (8 + bsize) * NW;
	mock_segment(&m, HEAP, 16 + span, PF_R | PF_W);
	mock_put64(&m, HEAP, BUMP_MAGIC);
	mock_put64(&m, HEAP + 8, span);
	for (uint32_t i = 0; i < NW; i++) {
		uint64_t p = HEAP + 16 + i * (8 + bsize);
		mock_put64(&m, p, bsize | 1);
		for (int w = 0; w < WORDS; w++) {
			uint64_t r = wide_next(&x);
			/* about 1.6 start pointers and 0.2 interior ones a block:
			 * most blocks are reached, some only through an
			 * interior pointer, some not at all */
			to[i][w] = r % 10 < 4 ? (uint32_t)((r >> 8) % NW) + 1 : 0;
			interior[i][w] = to[i][w] && r % 10 == 0;
			if (to[i][w])
				mock_put64(&m, p + 8 + 8 * w,
					   HEAP + 16 + (to[i][w] - 1) * (8 + bsize) + 8 +
					   (interior[i][w] ? 24 : 0));
		}
	}
	static const uint32_t held[] = {7, 12345, 29999};
	mock_segment(&m, DATA, 0x1000, PF_R | PF_W);
	for (int k = 0; k < 3; k++)
		mock_put64(&m, DATA + 8 * k, HEAP + 16 + held[k] * (8 + bsize) + 8);
	size_t len;
	uint8_t *bytes = with_stack(&m, 43, &len);

	/* the classes, by search: start pointers from the roots, then
	 * interior ones too from what they reached */
	size_t sp = 0;
	for (int k = 0; k < 3; k++)
		if (!want[held[k]]) {
			want[held[k]] = HS_REACH_REACHABLE;
			stack[sp++] = held[k];
		}
	for (int pass = 0; pass < 2; pass++) {
		uint8_t cls = pass ? HS_REACH_POSSIBLE : HS_REACH_REACHABLE;
		if (pass)
			for (uint32_t i = 0; i < NW; i++)
				for (int w = 0; w < WORDS; w++)
					if (want[i] == HS_REACH_REACHABLE && to[i][w] &&
					    interior[i][w] && !want[to[i][w] - 1]) {
						want[to[i][w] - 1] = cls;
						stack[sp++] = to[i][w] - 1;
					}
		while (sp) {
			uint32_t v = stack[--sp];
			for (int w = 0; w < WORDS; w++) {
				uint32_t t = to[v][w];
				if (t && (pass || !interior[v][w]) && !want[t - 1]) {
					want[t - 1] = cls;
					stack[sp++] = t - 1;
				}
			}
		}
	}
	/* no header rules: the many pointers 24 bytes into 32-byte blocks
	 * would teach heapsift an offset, and count as start pointers */
	struct hs_options o = {.threads = 1, .backend = &bump_backend,
			       .rules_off = "all"};
	struct hs_snapshot *snap;
	struct hs_error *err = hs_snapshot_open_memory("wide.core", bytes, len, &o, &snap);
	CHECK(!err);
	if (err) {
		hs_error_destroy(err);
		free(bytes);
		return;
	}
	const struct hs_mark *mark;
	const struct hs_error *e = hs_snapshot_mark(snap, &mark);
	CHECK(!e);
	size_t counts[3] = {0}, wrong = 0;
	for (uint32_t i = 0; !e && i < NW; i++) {
		uint8_t got = mark->reach[i];
		bool leaked = got == HS_REACH_LEAK_ROOT || got == HS_REACH_INDIRECT;
		if (want[i] ? got != want[i] : !leaked) {
			if (!wrong++)
				fprintf(stderr, "wide heap: block %u is %s, want %s\n", i,
					hs_reach_names[got],
					want[i] ? hs_reach_names[want[i]] : "leaked");
		}
		counts[want[i] == HS_REACH_REACHABLE ? 0 :
		       want[i] == HS_REACH_POSSIBLE ? 1 : 2]++;
	}
	CHECKF(!wrong, "wide heap: %zu blocks of %d classed wrong", wrong, NW);
	/* the shape is what the comment says, or the test tests less */
	CHECKF(counts[0] > NW / 4 && counts[1] > 1000 && counts[2] > 1000,
	       "wide heap: %zu reachable, %zu possible, %zu leaked", counts[0],
	       counts[1], counts[2]);
	hs_snapshot_destroy(snap);
	free(bytes);
}

/* Rows of very many edges: NL blocks of 4 words, each with a few
 * pointers, then blocks of LONG_WORDS[k] words pointing at random blocks
 * (some into their interiors, some twice, some to themselves).  A row past
 * 4,096 edges is sorted through bits (graph.c, go_wide), a shorter one by
 * a sort; either must hold each target once, flagged interior only when
 * no pointer hit its start, and no self-pointer.  One thread and two. */
enum { NL = 20000 };
static const uint32_t LONG_WORDS[] = {4096, 4098, 30000, 9000};
enum { NLONG = sizeof(LONG_WORDS) / sizeof(LONG_WORDS[0]) };

static void test_long_rows(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull;
	struct mock_core m = {0};
	uint64_t span = (uint64_t)NL * (8 + 32);
	for (int k = 0; k < NLONG; k++)
		span += 8 + 8 * (uint64_t)LONG_WORDS[k];
	uint32_t nb = NL + NLONG;
	uint64_t *addr = malloc(nb * sizeof(*addr));
	/* the pointers each block holds: target id, 2 bits of kind (0 start,
	 * 2 interior) */
	uint32_t **words = calloc(nb, sizeof(*words));
	uint32_t *nwords = calloc(nb, sizeof(*nwords));
	CHECK(addr && words && nwords);
	if (!addr || !words || !nwords) {
		free(addr);
		free(words);
		free(nwords);
		return;
	}
	mock_segment(&m, HEAP, 16 + span, PF_R | PF_W);
	mock_put64(&m, HEAP, BUMP_MAGIC);
	mock_put64(&m, HEAP + 8, span);
	uint64_t at = HEAP + 16;
	for (uint32_t i = 0; i < nb; i++) {
		nwords[i] = i < NL ? 4 : LONG_WORDS[i - NL];
		addr[i] = at + 8;
		mock_put64(&m, at, 8 * (uint64_t)nwords[i] | 1);
		at += 8 + 8 * (uint64_t)nwords[i];
	}
	for (uint32_t i = 0; i < nb; i++) {
		words[i] = calloc(nwords[i], sizeof(uint32_t));
		for (uint32_t w = 0; words[i] && w < nwords[i]; w++) {
			uint64_t r = wide_next(&x);
			/* self-pointers in the longest block only: the others
			 * push each word (4,096 edges fit the vector, 4,098
			 * do not; a block's words are an even number: the
			 * bump heap's sizes are multiples of 16) */
			uint32_t t = (uint32_t)((r >> 8) % nb);
			if (t == i)
				t = (t + 1) % nb;
			if (i >= NL && LONG_WORDS[i - NL] == 30000 && r % 7 == 0)
				t = i;
			bool in = r % 5 == 0;
			/* small blocks: two words of four hold pointers */
			if (i < NL && w % 2)
				continue;
			words[i][w] = (t + 1) << 2 | (in ? 2 : 0);
			mock_put64(&m, addr[i] + 8 * w, addr[t] + (in ? 16 : 0));
		}
	}
	mock_segment(&m, DATA, 0x1000, PF_R | PF_W);
	size_t len;
	uint8_t *bytes = with_stack(&m, 45, &len);
	/* each row as it should be: one rank per target, the least */
	uint8_t *rank = malloc(nb);
	for (unsigned threads = 1; threads <= 2 && rank; threads++) {
		struct hs_options o = {.threads = threads, .backend = &bump_backend,
				       .rules_off = "all"};
		struct hs_snapshot *snap;
		struct hs_error *err = hs_snapshot_open_memory("long.core", bytes, len, &o, &snap);
		CHECK(!err);
		if (err) {
			hs_error_destroy(err);
			break;
		}
		const struct hs_graph *g;
		const struct hs_error *e = hs_snapshot_graph(snap, &g);
		CHECK(!e);
		size_t wrong = 0, edges = 0, interior = 0;
		for (uint32_t i = 0; !e && i < nb; i++) {
			memset(rank, 0xff, nb);
			for (uint32_t w = 0; w < nwords[i]; w++) {
				if (!words[i] || !words[i][w])
					continue;
				uint32_t t = (words[i][w] >> 2) - 1, r = words[i][w] & 3;
				if (t != i && r < rank[t])
					rank[t] = (uint8_t)r;
			}
			struct hs_edges it = hs_graph_edges(g, i);
			uint32_t ed, last = 0;
			size_t n = 0, want = 0;
			bool bad = false;
			while (hs_edges_next(&it, &ed)) {
				uint32_t t = HS_EDGE_ID(ed);
				bad |= (n && t <= last) || t >= nb || rank[t] == 0xff ||
				       ((ed & HS_EDGE_FLAGS) != (rank[t] ? HS_EDGE_INTERIOR : 0));
				interior += (ed & HS_EDGE_INTERIOR) != 0;
				last = t;
				n++;
			}
			for (uint32_t t = 0; t < nb; t++)
				want += rank[t] != 0xff;
			edges += n;
			if ((bad || n != want) && !wrong++)
				fprintf(stderr, "long rows (%u threads): block %u has %zu edges, want %zu%s\n",
					threads, i, n, want, bad ? ", some wrong" : "");
		}
		CHECKF(!wrong, "long rows (%u threads): %zu rows wrong", threads, wrong);
		/* the long rows are long, and both kinds are there */
		CHECKF(!e && edges > 40000 && interior > 5000,
		       "long rows: %zu edges, %zu interior", edges, interior);
		hs_snapshot_destroy(snap);
	}
	free(rank);
	for (uint32_t i = 0; i < nb; i++)
		free(words[i]);
	free(words);
	free(nwords);
	free(addr);
	free(bytes);
}

/* ---- the program's memory ---- */

enum { A, B, D, E, F, G, K, L1, L2, S, Z, NBLOCKS };
static const char *const names[NBLOCKS] = {"A", "B", "D", "E", "F", "G", "K",
					   "L1", "L2", "S", "Z"};
static const uint64_t sizes[NBLOCKS] = {32, 48, 64, 16, 16, 96, 80, 32, 32,
					 16, 112};
static uint64_t at[NBLOCKS];   /* user addresses */

static uint8_t *build(size_t *len)
{
	struct mock_core m = {0};
	mock_segment(&m, HEAP, 0x1000, PF_R | PF_W);
	uint64_t p = HEAP + 16;
	for (int i = 0; i < NBLOCKS; i++) {
		mock_put64(&m, p, sizes[i] | (i != G));
		at[i] = p + 8;
		p += 8 + sizes[i];
	}
	mock_put64(&m, HEAP, BUMP_MAGIC);
	mock_put64(&m, HEAP + 8, p - (HEAP + 16));

	mock_put64(&m, at[A], at[B]);
	mock_put64(&m, at[B] + 8, at[A]);
	mock_put64(&m, at[D] + 16, at[E]);
	mock_put64(&m, at[E], at[F]);
	mock_put64(&m, at[L1], at[L2]);
	mock_put64(&m, at[L2] + 24, at[L1]);
	mock_put64(&m, at[G], at[Z]);   /* a free block holds nothing */

	mock_segment(&m, DATA, 0x1000, PF_R | PF_W);
	mock_put64(&m, DATA, at[A]);
	mock_put64(&m, DATA + 8, at[K] + 8);

	mock_segment(&m, STACK, 0x1000, PF_R | PF_W);
	mock_put64(&m, RSP + 0x10, at[S]);
	mock_put64(&m, RSP - 0x200, at[Z]);
	uint64_t *regs = mock_thread(&m, 42);
	regs[HS_REG_RSP] = RSP;
	regs[HS_REG_RIP] = 0x400000;   /* in no module: the stack is scanned whole from rsp */
	uint8_t *core = mock_build(&m, len);
	mock_free(&m);
	return core;
}

static uint32_t id_of(const struct hs_heap *heap, int i)
{
	const struct hs_alloc *a = hs_heap_find(heap, at[i]);
	return a ? (uint32_t)(a - heap->allocs) : UINT32_MAX;
}

int main(void)
{
	size_t len;
	uint8_t *bytes = build(&len);
	struct hs_options o = {.threads = 1, .backend = &bump_backend,
			       .warnings = getenv("HS_UNIT_VERBOSE") ? stderr : NULL};
	struct hs_snapshot *snap;
	struct hs_error *err = hs_snapshot_open_memory("bump.core", bytes, len, &o, &snap);
	if (err) {
		fprintf(stderr, "open: %s\n", err->message);
		return 1;
	}

	/* the walk */
	const struct hs_heap *heap;
	const struct hs_error *e = hs_snapshot_heap(snap, &heap);
	CHECK(!e);
	if (e) {
		fprintf(stderr, "heap: %s\n", e->message);
		return 1;
	}
	CHECK(!strcmp(heap->allocator, "bump") && heap->backend == &bump_backend);
	CHECK(heap->nallocs == NBLOCKS);
	CHECK(!heap->partial);
	for (int i = 0; i < NBLOCKS; i++) {
		uint32_t id = id_of(heap, i);
		CHECK(id < heap->nallocs);
		if (id >= heap->nallocs)
			continue;
		CHECK(heap->allocs[id].addr == at[i] && heap->allocs[id].size == sizes[i]);
		CHECK(hs_alloc_state(&heap->allocs[id]) ==
		      (i == G ? HS_STATE_FREE : HS_STATE_USED));
	}

	/* the mark: memcheck's classes, by construction */
	const struct hs_mark *mark;
	e = hs_snapshot_mark(snap, &mark);
	CHECK(!e);
	if (e) {
		fprintf(stderr, "mark: %s\n", e->message);
		return 1;
	}
	static const enum hs_reach want[NBLOCKS] = {
		[A] = HS_REACH_REACHABLE, [B] = HS_REACH_REACHABLE,
		[S] = HS_REACH_REACHABLE, [K] = HS_REACH_POSSIBLE,
		[D] = HS_REACH_LEAK_ROOT, [E] = HS_REACH_INDIRECT,
		[F] = HS_REACH_INDIRECT, [L1] = HS_REACH_LEAK_ROOT,
		[L2] = HS_REACH_INDIRECT, [Z] = HS_REACH_LEAK_ROOT,
		[G] = HS_REACH_NONE,
	};
	for (int i = 0; i < NBLOCKS; i++) {
		uint32_t id = id_of(heap, i);
		if (id >= heap->nallocs)
			continue;
		check_count++;
		if (mark->reach[id] != want[i]) {
			check_failures++;
			fprintf(stderr, "%s: %s, want %s\n", names[i],
				hs_reach_names[mark->reach[id]], hs_reach_names[want[i]]);
		}
	}
	/* D holds E and F; L1 holds L2 */
	CHECK(mark->nleak_roots == 3);
	for (size_t r = 0; r < mark->nleak_roots; r++) {
		const struct hs_leak_root *lr = &mark->leak_roots[r];
		if (lr->id == id_of(heap, D))
			CHECK(lr->held_count == 2 && lr->held_bytes == sizes[E] + sizes[F]);
		else if (lr->id == id_of(heap, L1))
			CHECK(lr->held_count == 1 && lr->held_bytes == sizes[L2]);
		else
			CHECK(lr->id == id_of(heap, Z) && lr->held_count == 0);
	}
	CHECK(mark->total[HS_REACH_REACHABLE].count == 3);
	CHECK(mark->total[HS_REACH_REACHABLE].bytes == sizes[A] + sizes[B] + sizes[S]);
	CHECK(mark->total[HS_REACH_LEAK_ROOT].bytes == sizes[D] + sizes[L1] + sizes[Z]);

	/* dominators: the data root holds A, which holds B (B's only holder
	 * besides the cycle back) */
	const struct hs_retain *ret;
	e = hs_snapshot_retain(snap, &ret);
	CHECK(!e);
	if (!e) {
		uint32_t na = hs_retain_node(ret, id_of(heap, A));
		uint32_t nb = hs_retain_node(ret, id_of(heap, B));
		CHECK(ret->tree->idom[nb] == na);
		CHECK(hs_domtree_retained(ret->tree, na) == sizes[A] + sizes[B]);
		CHECK(ret->used_count == NBLOCKS - 1);
	}

	/* types: the same pass runs; a core without modules has no DWARF
	 * and no vtables, so no block gets a type */
	const struct hs_types *types;
	e = hs_snapshot_types(snap, &types);
	CHECK(!e);
	if (!e)
		CHECK(types->typed == 0);

	hs_snapshot_destroy(snap);

	/* the registry: the toy is not in it, and a core without any
	 * allocator's module is glibc's to refuse, with its own message */
	o.backend = NULL;
	err = hs_snapshot_open_memory("bump.core", bytes, len, &o, &snap);
	CHECK(!err);
	if (!err) {
		e = hs_snapshot_heap(snap, &heap);
		CHECK(e && strstr(e->message, "no glibc malloc"));
		hs_snapshot_destroy(snap);
	}
	hs_error_destroy(err);

	/* totals only (info): the same counts, no blocks, no later stage */
	test_totals_only();
	test_table();
	test_interleaved_runs();
	test_addrmap();
	test_wide_mark();
	test_long_rows();
	o.backend = &bump_backend;
	o.totals_only = true;
	err = hs_snapshot_open_memory("bump.core", bytes, len, &o, &snap);
	CHECK(!err);
	if (!err) {
		e = hs_snapshot_heap(snap, &heap);
		CHECK(!e && heap->totals_only && !heap->needs_blocks && !heap->allocs);
		CHECK(!e && heap->nallocs == NBLOCKS &&
		      heap->count_where[BUMP_USED] == NBLOCKS - 1 &&
		      heap->count_where[BUMP_FREE] == 1 &&
		      heap->bytes_where[BUMP_FREE] == sizes[G]);
		const struct hs_mark *m2;
		e = hs_snapshot_mark(snap, &m2);
		CHECK(e && e->code == HS_ERR_USAGE);
		hs_snapshot_destroy(snap);
	}
	hs_error_destroy(err);
	/* blocks out of order: walked again keeping them, warned once */
	o.backend = &shuffle_backend;
	err = hs_snapshot_open_memory("bump.core", bytes, len, &o, &snap);
	CHECK(!err);
	if (!err) {
		e = hs_snapshot_heap(snap, &heap);
		CHECK(!e && !heap->totals_only && heap->nallocs == NBLOCKS);
		CHECK(!e && heap->allocs && heap->allocs[0].addr == at[A]);
		CHECK(snap->log.nwarnings == 1);
		hs_snapshot_destroy(snap);
	}
	hs_error_destroy(err);
	o.totals_only = false;

	/* no bytes, or too few to be a core: an error, never a snapshot */
	snap = NULL;
	err = hs_snapshot_open_memory("none.core", NULL, 0, &o, &snap);
	CHECK(err && err->code == HS_ERR_USAGE && !snap);
	hs_error_destroy(err);
	err = hs_snapshot_open_memory("short.core", bytes, 16, &o, &snap);
	CHECK(err && err->code != HS_ERR_USAGE && !snap);
	hs_error_destroy(err);
	free(bytes);
	return check_finish();
}
