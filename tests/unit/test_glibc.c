/* The glibc ptmalloc walker on a heap built by hand: the walk proper
 * (hs_glibc_walk_known), given glibc 2.36's layout row of
 * formats/gllayout.c and where main_arena, mp_ and the tcache are, over a
 * synthetic core (tests/unit/mockcore.h).  Every chunk is placed by the
 * test, so the expected block table and mallinfo2 are known exactly.
 *
 *   libc data    main_arena, mp_ (sbrk_base, n_mmaps, mmapped_mem, ...)
 *   main heap    from sbrk_base: thread 100's tcache_perthread_struct,
 *                chunks in use, two in fastbin 0 (safe-linked), two in
 *                that tcache's bin 1, one in the unsorted bin, two in
 *                small bin 16, one in large bin 68, the top chunk
 *   arena 1      a heap at a heap_max (64 MiB) boundary: heap_info, the
 *                malloc_state, thread 101's tcache_perthread_struct,
 *                chunks in use, in its unsorted bin, its fastbin 0, that
 *                tcache's bin 0, its top chunk
 *   mmapped      a plain mmapped chunk, and one that memalign moved 48
 *                bytes into its mapping
 *   TLS          fs_base of threads 100 and 101 (their tcache pointer at
 *                fs_base + TPOFF) and of thread 102, which has none
 *
 * Then hostile variants of the same core: each gives a warning and a
 * partial heap (or the statistics are refused), with the blocks the walk
 * could still trust exactly as in the sound heap, never a crash or a hang.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzers/alloc/glibc.h"
#include "analyzers/alloc/heap.h"
#include "formats/gllayout.h"
#include "tests/unit/glibc_heap.h"
#include "tests/unit/mockcore.h"
#include "tests/unit/check.h"

/* the walker's places, by the names this test uses */
#define W_HEAP HS_GL_HEAP
#define W_MMAPPED HS_GL_MMAPPED
#define W_INTERNAL HS_GL_INTERNAL
#define W_BIN HS_GL_BIN
#define W_FASTBIN HS_GL_FASTBIN
#define W_TCACHE HS_GL_TCACHE
#define W_TOP HS_GL_TOP

/* ---- what the walk must give ---- */

struct want {
	uint64_t addr, size;
	int where;
	unsigned arena;
};

static struct want want_of(int i)
{
	const struct blk *b = &blk[i];
	static const int where[] = {
		[USED] = W_HEAP, [TCSTRUCT] = W_INTERNAL, [FAST] = W_FASTBIN,
		[TCACHE] = W_TCACHE, [BIN] = W_BIN, [TOP] = W_TOP,
		[MMAP] = W_MMAPPED,
	};
	return (struct want){
		.addr = b->chunk + 16,
		.size = b->csz - (b->kind == TOP || b->kind == MMAP ? 16 : 8),
		.where = where[b->kind],
		.arena = b->arena < 0 ? HS_ARENA_NONE : (unsigned)b->arena,
	};
}

/* The walk's table against the blocks of keep[] (in address order), with
 * the places of the variant. */
static void check_blocks(const char *what, const struct hs_heap *heap,
			 const bool keep[NBLK], const int where[NBLK])
{
	struct want w[NBLK];
	size_t n = 0;
	for (int i = 0; i < NBLK; i++)
		if (keep[i]) {
			w[n] = want_of(i);
			if (where[i] >= 0)
				w[n].where = where[i];
			n++;
		}
	for (size_t i = 1; i < n; i++)  /* by address */
		for (size_t j = i; j > 0 && w[j - 1].addr > w[j].addr; j--) {
			struct want t = w[j];
			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	CHECKF(heap->nallocs == n, "%s: %zu blocks, want %zu", what,
	       heap->nallocs, n);
	for (size_t i = 0; i < n && i < heap->nallocs; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		CHECKF(a->addr == w[i].addr && a->size == w[i].size &&
		       a->where == (unsigned)w[i].where && hs_heap_arena(heap, i) == w[i].arena,
		       "%s: block %zu is %#" PRIx64 " size %#" PRIx64 " %s arena %u, want %#" PRIx64 " size %#" PRIx64 " %s arena %u",
		       what, i, (uint64_t)a->addr, (uint64_t)a->size,
		       hs_alloc_where(heap, a), (unsigned)hs_heap_arena(heap, i), w[i].addr,
		       w[i].size, heap->places[w[i].where].name, w[i].arena);
		CHECKF(hs_alloc_state(a) == (w[i].where == W_HEAP ||
					     w[i].where == W_INTERNAL ||
					     w[i].where == W_MMAPPED ?
					     HS_STATE_USED : HS_STATE_FREE),
		       "%s: block %zu's state", what, i);
	}
}

static bool warned(const struct hs_log *log, const char *text)
{
	for (size_t i = 0; i < log->nkept; i++)
		if (strstr(log->kept[i], text))
			return true;
	return false;
}

struct run {
	struct hs_log log;
	uint8_t *bytes;
	struct hs_core *core;
	struct hs_heap *heap;
	struct hs_error *err;
};

static void run(enum variant v, struct run *r)
{
	memset(r, 0, sizeof(*r));
	hs_log_init(&r->log, getenv("HS_UNIT_VERBOSE") ? stderr : NULL, false);
	size_t len;
	r->bytes = build(v, &len);
	struct hs_error *err = hs_core_open_memory("glibc.core", r->bytes, len,
						   &r->log, &r->core);
	if (err) {
		fprintf(stderr, "%s: open: %s\n", variant_names[v], err->message);
		hs_error_destroy(err);
		exit(1);
	}
	struct hs_glibc_known k = {
		.layout = L, .main_arena = MAIN_ARENA, .mp = MP,
		.safe_linking = true, .tpoff_known = true, .tpoff = TPOFF,
	};
	r->err = hs_glibc_walk_known(r->core, &k, &r->log, &r->heap);
	if (getenv("HS_UNIT_VERBOSE"))
		fprintf(stderr, "-- %s: %s, %zu warnings\n", variant_names[v],
			r->err ? r->err->message : "walked", r->log.nwarnings);
}

static void run_end(struct run *r)
{
	if (r->heap)
		hs_heap_destroy(r->heap);
	hs_error_destroy(r->err);
	hs_core_destroy(r->core);
	free(r->bytes);
	hs_log_fini(&r->log);
}

/* ---- the sound heap ---- */

static void test_sound(void)
{
	struct run r;
	run(SOUND, &r);
	CHECK(!r.err);
	if (r.err) {
		run_end(&r);
		return;
	}
	const struct hs_heap *h = r.heap;
	bool keep[NBLK];
	int where[NBLK];
	for (int i = 0; i < NBLK; i++) {
		keep[i] = true;
		where[i] = -1;
	}
	check_blocks("sound", h, keep, where);
	CHECKF(r.log.nwarnings == 0, "sound: %zu warnings (first: %s)",
	       r.log.nwarnings, r.log.nkept ? r.log.kept[0] : "");
	CHECK(!h->partial);
	CHECK(h->unaccounted_bytes == 0);
	CHECK(!strcmp(h->allocator, "glibc") && !h->headerless);
	CHECK(h->ntcaches == 2);
	CHECK(h->mmap_count == 2 && h->mmap_bytes == MM1_SIZE + MM2_SIZE);
	CHECK(h->mmap_expected == 2 && h->mmap_expected_bytes == MM1_SIZE + MM2_SIZE);
	CHECK(h->mmap_threshold == 128 * 1024);

	/* the arenas, by construction */
	CHECK(h->narenas == 2);
	for (size_t a = 0; a < 2 && a < h->narenas; a++) {
		const struct hs_arena *ar = &h->arenas[a];
		uint64_t used = 0, used_b = 0, fr = 0, fr_b = 0, bins = 0, fast = 0;
		for (int i = 0; i < NBLK; i++) {
			if (blk[i].arena != (int)a)
				continue;
			if (blk[i].kind == USED || blk[i].kind == TCSTRUCT) {
				used++;
				used_b += blk[i].csz;
			} else {
				fr++;
				fr_b += blk[i].csz;
			}
			bins += blk[i].kind == BIN;
			fast += blk[i].kind == FAST;
		}
		const struct blk *top = &blk[a ? TOP1 : TOP0];
		CHECKF(ar->addr == arena_at[a] && ar->main == (a == 0) &&
		       ar->top == top->chunk && ar->top_size == top->csz,
		       "arena %zu: its address, top", a);
		CHECKF(ar->system_mem == (a ? H2_SIZE : HEAP_SIZE) &&
		       ar->covered == ar->system_mem && ar->nheaps == 1 &&
		       !ar->partial && !ar->uninitialized &&
		       ar->attached_threads == 1,
		       "arena %zu: system_mem %" PRIu64 " covered %" PRIu64 " heaps %u",
		       a, ar->system_mem, ar->covered, ar->nheaps);
		CHECKF(ar->used_count == used && ar->used_bytes == used_b &&
		       ar->free_count == fr && ar->free_bytes == fr_b,
		       "arena %zu: used %" PRIu64 "/%" PRIu64 " free %" PRIu64 "/%" PRIu64,
		       a, ar->used_count, ar->used_bytes, ar->free_count, ar->free_bytes);
		CHECKF(ar->bin_chunks == bins && ar->fastbin_chunks == fast,
		       "arena %zu: bins %" PRIu64 " fastbins %" PRIu64, a,
		       ar->bin_chunks, ar->fastbin_chunks);
	}

	/* regions: both heaps, main_arena and mp_, the mmapped mappings */
	bool main_heap = false, heap2 = false, meta = false, mm1 = false, mm2 = false;
	for (size_t i = 0; i < h->nregions; i++) {
		const struct hs_region *g = &h->regions[i];
		main_heap |= g->kind == HS_REGION_HEAP && g->start == HEAP &&
			     g->end == HEAP + HEAP_SIZE;
		heap2 |= g->kind == HS_REGION_HEAP && g->start == H2 &&
			 g->end == H2 + (64ull << 20);
		meta |= g->kind == HS_REGION_META && g->start == MAIN_ARENA &&
			g->end == MAIN_ARENA + L->ms_sizeof;
		mm1 |= g->kind == HS_REGION_MMAPPED && g->start == MM1 &&
		       g->end == MM1 + MM1_SIZE;
		mm2 |= g->kind == HS_REGION_MMAPPED && g->start == MM2 &&
		       g->end == MM2 + MM2_SIZE;
	}
	CHECK(main_heap);
	CHECK(heap2);
	CHECK(meta);
	CHECK(mm1);
	CHECK(mm2);

	/* mallinfo2, as glibc's int_mallinfo counts: the top and every chunk
	 * in a bin are ordblks, fastbin chunks smblks; tcache chunks count as
	 * in use */
	struct hs_mallinfo2 w = {0};
	for (int i = 0; i < NBLK; i++) {
		const struct blk *b = &blk[i];
		if (b->kind == TOP || b->kind == BIN) {
			w.ordblks++;
			w.fordblks += b->csz;
		} else if (b->kind == FAST) {
			w.smblks++;
			w.fsmblks += b->csz;
			w.fordblks += b->csz;
		}
	}
	w.arena = HEAP_SIZE + H2_SIZE;
	w.uordblks = w.arena - w.fordblks;
	w.hblks = 2;
	w.hblkhd = MM1_SIZE + MM2_SIZE;
	w.keepcost = blk[TOP0].csz;
	const struct hs_mallinfo2 *mi = hs_glibc_mallinfo2(h);
	CHECK(mi);
	if (mi) {
		CHECKF(mi->arena == w.arena, "arena %" PRIu64, mi->arena);
		CHECKF(mi->ordblks == w.ordblks, "ordblks %" PRIu64, mi->ordblks);
		CHECKF(mi->smblks == w.smblks, "smblks %" PRIu64, mi->smblks);
		CHECKF(mi->hblks == w.hblks, "hblks %" PRIu64, mi->hblks);
		CHECKF(mi->hblkhd == w.hblkhd, "hblkhd %" PRIu64, mi->hblkhd);
		CHECKF(mi->usmblks == 0, "usmblks %" PRIu64, mi->usmblks);
		CHECKF(mi->fsmblks == w.fsmblks, "fsmblks %" PRIu64, mi->fsmblks);
		CHECKF(mi->uordblks == w.uordblks, "uordblks %" PRIu64, mi->uordblks);
		CHECKF(mi->fordblks == w.fordblks, "fordblks %" PRIu64, mi->fordblks);
		CHECKF(mi->keepcost == w.keepcost, "keepcost %" PRIu64, mi->keepcost);
	}
	run_end(&r);
}

/* ---- the hostile variants ---- */

static void test_variant(enum variant v)
{
	const char *name = variant_names[v];
	struct run r;
	run(v, &r);
	/* a damaged heap is walked (an error would be the other way out,
	 * which none of these calls for): warned, and partial unless only
	 * statistics are wrong */
	CHECKF(!r.err, "%s: %s", name, r.err ? r.err->message : "");
	if (r.err) {
		run_end(&r);
		return;
	}
	const struct hs_heap *h = r.heap;
	CHECKF(r.log.nwarnings > 0, "%s: no warning", name);
	CHECKF(h->partial == (v != SYSTEM_MEM_HUGE), "%s: partial %d", name,
	       h->partial);
	bool keep[NBLK];
	int where[NBLK];
	for (int i = 0; i < NBLK; i++) {
		keep[i] = true;
		where[i] = -1;
	}
	const char *msg = NULL;
	char buf[160];
	switch (v) {
	case SIZE_PAST_HEAP:
		/* the main heap up to B; B's size would take the walk past
		 * the heap's end */
		for (int i = B; i <= TOP0; i++)
			keep[i] = false;
		msg = "impossible chunk size 0x10001";
		break;
	case FASTBIN_CYCLE:
		msg = "fastbin 0 has a loop at chunk";
		break;
	case BIN_LOOP:
		/* bins are only counted: the chunks stay where the heap says */
		msg = "bin 16 is broken (a loop";
		break;
	case BK_MISMATCH:
		snprintf(buf, sizeof(buf), "bin 16 is broken (chunk %#" PRIx64 " is the bk of %#" PRIx64 ", and its fd is 0)",
			 blk[D].chunk, blk[S2].chunk);
		msg = buf;
		break;
	case RING_LOOP:
		msg = "arena ring loops";
		break;
	case SYSTEM_MEM_HUGE:
		msg = "its statistics are not trusted";
		break;
	case MISALIGNED_SIZE:
		for (int i = C; i <= TOP0; i++)
			keep[i] = false;
		msg = "impossible chunk size 0x59";
		break;
	case MISALIGNED_FASTBIN:
		/* no chunk of fastbin 0 is known: F1 and F2 look in use */
		where[F1] = where[F2] = W_HEAP;
		msg = "misaligned chunk";
		break;
	case MISALIGNED_TCACHE:
		where[TC1] = where[TC2] = W_HEAP;
		msg = "tcache bin 1 holds a bad entry";
		break;
	case TCACHE_CYCLE:
		msg = "tcache bin 1 has a loop";
		break;
	case TOP_PAST_HEAP:
		/* arena 1's chunks are walked; its top is not listed */
		keep[TOP1] = false;
		msg = "runs past its heap's end";
		break;
	case HEAP_INFO_BAD:
		for (int i = X0; i <= TOP1; i++)
			keep[i] = false;
		msg = "heap_info at 0x7fffe4000000 is inconsistent";
		break;
	case SOUND:
	case NVARIANTS:
		break;
	}
	check_blocks(name, h, keep, where);
	CHECKF(msg && warned(&r.log, msg), "%s: no warning saying \"%s\" (first: %s)",
	       name, msg ? msg : "", r.log.nkept ? r.log.kept[0] : "");
	if (v == SYSTEM_MEM_HUGE) {
		/* refused as a statistic: nothing counted missing */
		CHECK(h->unaccounted_bytes == 0);
	}
	if (v == RING_LOOP)
		CHECK(h->narenas == 2);
	const struct hs_mallinfo2 *mi = hs_glibc_mallinfo2(h);
	CHECKF(mi, "%s: no mallinfo2", name);
	run_end(&r);
}

int main(void)
{
	alarm(60);  /* a walk that loops fails the test instead of hanging it */
	bool exact;
	L = hs_gl_layout_find("2.36", NULL, &exact);
	CHECK(L);
	if (!L)
		return check_finish();
	place();
	test_sound();
	for (int v = SOUND + 1; v < NVARIANTS; v++)
		test_variant((enum variant)v);
	return check_finish();
}
