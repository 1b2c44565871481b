/* pymalloc's reader (analyzers/alloc/pymalloc.h) on the hand-built pools
 * of tests/unit/pymalloc_pools.h: every block where it was put, the
 * totals pymalloc itself would count, and each kind of corruption a
 * warning with that pool left out and the rest unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/glibc.h"
#include "analyzers/alloc/pymalloc.h"
#include "tests/unit/check.h"
#include "tests/unit/pymalloc_pools.h"

struct run {
	struct hs_core *core;
	struct hs_heap *heap;
	struct hs_log log;
	uint8_t *bytes;
	FILE *devnull;
};

/* Reads m's pools into a fresh, empty (finished) glibc heap whose
 * regions (malloc's heaps) are [region, region + region_len), if any. */
static void run_read_in(struct run *r, const struct mock_core *m,
			uint64_t region, uint64_t region_len)
{
	size_t len;
	memset(r, 0, sizeof(*r));
	r->bytes = mock_build(m, &len);
	r->devnull = fopen("/dev/null", "w");
	hs_log_init(&r->log, r->devnull, false);
	struct hs_error *err = hs_core_open_memory("pools", r->bytes, len, &r->log,
						   &r->core);
	CHECK(!err);
	r->heap = hs_heap_create(&hs_glibc_backend);
	CHECK(r->heap != NULL);
	if (region_len)
		CHECK(!hs_heap_add_region(r->heap, region, region + region_len,
					  HS_REGION_HEAP));
	CHECK(!hs_heap_finish(r->heap));
	err = hs_pymalloc_read(r->core, &r->log, r->heap, 11, "3.11");
	CHECKF(!err, "read: %s", err ? err->message : "");
}

static void run_read(struct run *r, const struct mock_core *m)
{
	run_read_in(r, m, 0, 0);
}

static void run_done(struct run *r)
{
	hs_heap_destroy(r->heap);
	hs_core_destroy(r->core);
	hs_log_fini(&r->log);
	fclose(r->devnull);
	free(r->bytes);
}

static uint64_t count_where(const struct hs_heap *h, unsigned where)
{
	uint64_t n = 0;
	for (size_t i = 0; i < h->nallocs; i++)
		n += h->allocs[i].where == where;
	return n;
}

static void test_sound(void)
{
	struct mock_core m = {0};
	py_build(&m);
	struct run r;
	run_read(&r, &m);
	uint64_t used, pools, empty, avail;
	py_expected(&used, &pools, &empty, &avail);
	const struct hs_pymalloc *py = r.heap->pymalloc;
	CHECK(py != NULL);
	if (py) {
		CHECKF(py->used_blocks == used, "used %llu, want %llu",
		       (unsigned long long)py->used_blocks, (unsigned long long)used);
		CHECK(py->pools == pools && py->empty_pools == empty);
		CHECKF(py->free_blocks == avail, "avail %llu, want %llu",
		       (unsigned long long)py->free_blocks, (unsigned long long)avail);
		CHECK(py->arenas == 2 && py->bad_pools == 0);
		CHECK(py->classes[1].used == 8 && py->classes[1].pools == 1);
	}
	CHECK(count_where(r.heap, HS_PY_BLOCK) == used);
	CHECK(count_where(r.heap, HS_PY_FREE) == avail);
	CHECK(count_where(r.heap, HS_PY_EMPTY) == empty);
	CHECK(!r.heap->partial && r.log.nwarnings == 0);
	/* every block where the spec put it: A1's block 3 is free, 4 used */
	const struct hs_alloc *a = hs_heap_find(r.heap, ARENA_A + PY_POOL + 48 + 3 * 32);
	CHECK(a && a->where == HS_PY_FREE && a->size == 32);
	a = hs_heap_find(r.heap, ARENA_A + PY_POOL + 48 + 4 * 32 + 5);
	CHECK(a && a->where == HS_PY_BLOCK && a->addr == ARENA_A + PY_POOL + 48 + 4 * 32);
	/* the empty pool is one free block; the pool never carved, nothing */
	a = hs_heap_find(r.heap, ARENA_A + 2 * PY_POOL + 100);
	CHECK(a && a->where == HS_PY_EMPTY && a->size == PY_POOL - 48);
	CHECK(!hs_heap_find(r.heap, ARENA_A + 4 * PY_POOL + 48));
	/* the arenas' pools are regions (no longer roots) */
	CHECK(r.heap->nregions == 2 && r.heap->regions[0].start == ARENA_A &&
	      r.heap->regions[0].end == ARENA_A + 4 * PY_POOL &&
	      r.heap->regions[1].start == ARENA_B);
	/* in order, not overlapping */
	for (size_t i = 1; i < r.heap->nallocs; i++)
		CHECK(r.heap->allocs[i - 1].addr + r.heap->allocs[i - 1].size <=
		      r.heap->allocs[i].addr);
	run_done(&r);
	mock_free(&m);
}

/* A pool whose free list loops, one whose count disagrees with its list,
 * one whose header is gone between two others: each left out with a
 * warning, the others read as before. */
static void test_corrupt(void)
{
	uint64_t used, pools, empty, avail;
	py_expected(&used, &pools, &empty, &avail);
	static const struct {
		const char *what;
		uint64_t addr, value;
		uint64_t lost_used;
	} cases[] = {
		/* A1's block 7 (the list's end) points back to block 3 */
		{"loop", ARENA_A + PY_POOL + 48 + 7 * 32, ARENA_A + PY_POOL + 48 + 3 * 32, 8},
		/* A1's block 3 points into A1's header */
		{"astray", ARENA_A + PY_POOL + 48 + 3 * 32, ARENA_A + PY_POOL + 16, 8},
		/* A3's count says 1, its list says 2 in use */
		{"count", ARENA_A + 3 * PY_POOL, 1, 2},
		/* A1's header zeroed: a hole between A0 and A2 */
		{"hole", ARENA_A + PY_POOL + 40, 0, 8},
		/* B0's free block points outside the core */
		{"outside", ARENA_B + 48 + 5 * 96, 0x10, 5},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mock_core m = {0};
		py_build(&m);
		mock_put64(&m, cases[i].addr, cases[i].value);
		struct run r;
		run_read(&r, &m);
		const struct hs_pymalloc *py = r.heap->pymalloc;
		CHECKF(py && py->used_blocks == used - cases[i].lost_used,
		       "%s: used %llu, want %llu", cases[i].what,
		       py ? (unsigned long long)py->used_blocks : 0ULL,
		       (unsigned long long)(used - cases[i].lost_used));
		CHECKF(r.heap->partial && r.log.nwarnings == 1 && py && py->bad_pools == 1,
		       "%s: partial %d, %zu warnings", cases[i].what, r.heap->partial,
		       r.log.nwarnings);
		run_done(&r);
		mock_free(&m);
	}
}

/* Pool-shaped memory inside malloc's heaps is malloc's: not read. */
static void test_in_regions(void)
{
	struct mock_core m = {0};
	py_build(&m);
	struct run r;
	run_read_in(&r, &m, ARENA_B_MAP, 0x8000);
	uint64_t used, pools, empty, avail;
	py_expected(&used, &pools, &empty, &avail);
	const struct hs_pymalloc *py = r.heap->pymalloc;
	CHECK(py && py->used_blocks == used - 5 && py->arenas == 1);
	CHECK(!r.heap->partial && r.log.nwarnings == 0);
	CHECK(!hs_heap_find(r.heap, ARENA_B + 48));
	run_done(&r);
	mock_free(&m);
}

/* Without pools (no CPython, or PYTHONMALLOC=malloc): nothing at all. */
static void test_none(void)
{
	struct mock_core m = {0};
	mock_segment(&m, ARENA_A, 4 * PY_POOL, PF_R | PF_W);
	mock_thread(&m, 1);
	struct run r;
	run_read(&r, &m);
	CHECK(!r.heap->pymalloc && r.heap->nallocs == 0 && !r.heap->partial);
	CHECK(!r.heap->places[HS_PY_BLOCK].name);
	run_done(&r);
	mock_free(&m);
}

/* obmalloc's arena_object, as frag reads it */
struct arena_rec {
	uint64_t address, pool_address;
	uint32_t nfreepools, ntotalpools;
	uint64_t freepools, nextarena, prevarena;
};

#define TABLE 0x5000000ULL
#define TABLE2 0x5001000ULL

/* A malloc heap of one or two used blocks, each an arena table: arena 0
 * (pool-aligned, 64 pools: 4 carved, A2 emptied again: 61 not in use),
 * then arena 1 (not pool-aligned, 63 pools: B0 carved, 62 not in use). */
static void run_table(struct run *r, struct mock_core *m, int copies,
		      uint64_t corrupt_address)
{
	struct arena_rec recs[3] = {
		{ARENA_A, ARENA_A + 4 * PY_POOL, 61, 64, 0, 0, 0},
		{corrupt_address ? corrupt_address : ARENA_B_MAP, ARENA_B + PY_POOL,
		 62, 63, 0, 0, 0},
		{0, 0, 0, 0, 0, 0, 0},
	};
	mock_segment(m, TABLE, 0x2000, PF_R | PF_W);
	mock_write(m, TABLE, recs, sizeof(recs));
	if (copies > 1)
		mock_write(m, TABLE2, recs, sizeof(recs));
	size_t len;
	memset(r, 0, sizeof(*r));
	r->bytes = mock_build(m, &len);
	r->devnull = fopen("/dev/null", "w");
	hs_log_init(&r->log, r->devnull, false);
	CHECK(!hs_core_open_memory("pools", r->bytes, len, &r->log, &r->core));
	r->heap = hs_heap_create(&hs_glibc_backend);
	CHECK(r->heap != NULL);
	CHECK(!hs_heap_begin_run(r->heap));
	for (int i = 0; i < copies; i++) {
		struct hs_alloc_in a = {.addr = i ? TABLE2 : TABLE, .size = sizeof(recs),
				     .where = HS_GL_HEAP, .arena = 0};
		CHECK(!hs_heap_add(r->heap, &a));
	}
	CHECK(!hs_heap_finish(r->heap));
	struct hs_error *err = hs_pymalloc_read(r->core, &r->log, r->heap, 11, "3.11");
	CHECKF(!err, "read: %s", err ? err->message : "");
}

static void test_table(void)
{
	struct mock_core m = {0};
	py_build(&m);
	struct run r;
	run_table(&r, &m, 1, 0);
	const struct hs_pymalloc *py = r.heap->pymalloc;
	CHECK(py && py->table == TABLE);
	CHECKF(py && py->unused_pools == 61 + 62, "unused pools %llu",
	       py ? (unsigned long long)py->unused_pools : 0ULL);
	CHECK(py && py->alignment_bytes == PY_POOL);
	CHECK(py && py->narena == 2 && py->arena[0].address == ARENA_A &&
	      py->arena[0].total_pools == 64 && py->arena[0].pools == 3 &&
	      py->arena[0].empty_pools == 1 && py->arena[1].address == ARENA_B_MAP &&
	      py->arena[1].total_pools == 63 && py->arena[1].free_pools == 62);
	if (py) {
		/* the parts are the arenas' bytes, as pymalloc splits them */
		struct hs_py_footprint f;
		hs_pymalloc_footprint(py, &f);
		uint64_t sum = f.blocks + f.available + f.unused_pools + f.headers +
			       f.quantization + f.alignment;
		CHECKF(f.arenas == 2 * (1ULL << 20) && sum == f.arenas,
		       "arenas %llu, parts %llu", (unsigned long long)f.arenas,
		       (unsigned long long)sum);
		CHECK(f.headers == 4 * 48);
	}
	run_done(&r);
	mock_free(&m);

	/* two blocks fit: which one is the table is not known */
	memset(&m, 0, sizeof(m));
	py_build(&m);
	run_table(&r, &m, 2, 0);
	CHECK(r.heap->pymalloc && !r.heap->pymalloc->table &&
	      !r.heap->pymalloc->unused_pools && !r.heap->pymalloc->arena[0].address);
	run_done(&r);
	mock_free(&m);

	/* a record whose mapping does not hold its arena's pools */
	memset(&m, 0, sizeof(m));
	py_build(&m);
	run_table(&r, &m, 1, ARENA_B + 2 * PY_POOL);
	CHECK(r.heap->pymalloc && !r.heap->pymalloc->table);
	run_done(&r);
	mock_free(&m);
}

int main(void)
{
	test_sound();
	test_table();
	test_corrupt();
	test_in_regions();
	test_none();
	return check_finish();
}
