/* The jemalloc 5.3 heap of tests/unit/test_jemalloc.c, built extent by
 * extent (tests/unit/jemalloc_heap.h). */
#include <elf.h>
#include <string.h>

#include "tests/unit/jemalloc_heap.h"

const struct ext ext[NEXT] = {
	[SLAB48] = {HEAP + 0x0000, 3, 0, 0, ST_ACTIVE, 3, true},
	[SLAB8] = {HEAP + 0x3000, 1, 0, 1, ST_ACTIVE, 0, true},
	[LARGE] = {HEAP + 0x4000, 5, 0x240, 0, ST_ACTIVE, 36, false},
	[CACHED] = {HEAP + 0x9000, 6, 0x80, 0, ST_ACTIVE, 37, false},
	[STACKS] = {HEAP + 0xf000, 5, 0, 0, ST_ACTIVE, 36, false},
	[DIRTY] = {HEAP + 0x14000, 2, 0, 0, ST_DIRTY, 232, false},
	[MUZZY] = {HEAP + 0x16000, 3, 0, 1, ST_MUZZY, 232, false},
	[RETAINED] = {HEAP + 0x19000, 8, 0, 0, ST_RETAINED, 232, false},
};

const uint64_t cached48[3] = {10, 11, 12};

const struct hs_je_layout *L;

const struct hs_je_layout *layout_find(void)
{
	for (size_t i = 0; i < hs_je_nlayouts; i++)
		if (!strcmp(hs_je_layouts[i].build_id, "1d5163c246dc9cd2b4d339f2ac42efd95c6e0ae1"))
			return &hs_je_layouts[i];
	return NULL;
}

bool layout_fits(void)
{
	return L->lg_page == 12 && L->rtree_height == 2 && L->rtree_bits0 == 18 &&
	       L->rtree_bits1 == 18 && L->lg_vaddr == 48 && L->nsizes == 232 &&
	       L->nbins == 36 && L->edata_size == 128 && L->bits_nfree_shift == 28;
}

uint64_t edata_of(int e)
{
	return EDATAS + 128ull * (uint64_t)e;
}

bool slab48_free(uint64_t r)
{
	return r == 0 || r == 5 || r == 6 || r == 7 || r == 100 || r == 255;
}

bool slab8_free(uint64_t r)
{
	return (r < 64 && r % 2 == 0) || r == 511;
}

uint64_t tcache(void)
{
	return TSD + L->tsd_tcache_off;
}

uint64_t bin(uint32_t b)
{
	return tcache() + L->tcache_bins_off + (uint64_t)b * L->cache_bin_size;
}

/* ---- building ---- */

void put_leaf(struct mock_core *m, uint64_t page, uint64_t bits)
{
	mock_put64(m, LEAF + 8 * ((page >> 12) & ((1u << 18) - 1)), bits);
}

void put_extent(struct mock_core *m, int e, uint32_t nfree)
{
	const struct ext *x = &ext[e];
	uint64_t ed = edata_of(e);
	uint64_t bits = x->arena | (uint64_t)x->slab << 12 |
			(uint64_t)(x->state == ST_ACTIVE) << 13 |  /* committed */
			(uint64_t)x->state << 17 | (uint64_t)x->szind << 20 |
			(uint64_t)nfree << 28;
	mock_put64(m, ed, bits);
	mock_put64(m, ed + L->edata_addr_off, x->base + x->addr_off);
	/* e_size_esn: the size, and a serial number in the low page bits */
	mock_put64(m, ed + L->edata_size_off, x->pages * PAGE | (uint64_t)(e + 1));
	/* the extent map: every page of a slab, the first and last of the
	 * others, as jemalloc registers them */
	uint64_t word = (uint64_t)x->szind << 48 | ed | (uint64_t)x->state << 2 |
			1u << 1 | x->slab;
	for (uint64_t p = 0; p < x->pages; p++)
		if (x->slab || p == 0 || p == x->pages - 1)
			put_leaf(m, x->base + p * PAGE, word);
}

void put_bitmap(struct mock_core *m, int e, uint64_t nregs,
		bool (*is_free)(uint64_t))
{
	uint64_t bm[8] = {0};
	for (uint64_t r = 0; r < nregs; r++)
		if (is_free(r))
			bm[r / 64] |= 1ull << (r % 64);
	mock_write(m, edata_of(e) + L->edata_bitmap_off, bm, sizeof(bm));
}

void put_bin(struct mock_core *m, uint32_t b, uint64_t stack,
	     const uint64_t *ptrs, uint32_t n)
{
	mock_put64(m, bin(b) + L->cache_bin_stack_head_off, stack);
	uint16_t empty = (uint16_t)(stack + 8ull * n);
	mock_write(m, bin(b) + L->cache_bin_low_bits_empty_off, &empty, 2);
	for (uint32_t i = 0; i < n; i++)
		mock_put64(m, stack + 8ull * i, ptrs[i]);
}

void put_arena(struct mock_core *m, uint64_t a, uint32_t ind,
	       uint64_t base, uint64_t block, uint64_t block_size)
{
	mock_write(m, a + L->arena_ind_off, &ind, 4);
	mock_put64(m, a + L->arena_base_off, base);
	mock_put64(m, base + L->base_blocks_off, block);
	mock_put64(m, block + L->base_block_size_off, block_size);
	mock_put64(m, block + L->base_block_next_off, 0);
	mock_put64(m, ARENAS + 8ull * ind, a);
}

void build_mock(struct mock_core *m)
{
	memset(m, 0, sizeof(*m));
	mock_segment(m, LIBDATA, LIBDATA_SIZE, PF_R | PF_W);
	mock_segment(m, META, META_SIZE, PF_R | PF_W);
	mock_segment(m, META2, META2_SIZE, PF_R | PF_W);
	mock_segment(m, THR, 0x2000, PF_R | PF_W);
	mock_segment(m, HEAP, HEAP_SIZE, PF_R | PF_W);
	mock_thread(m, 1)[HS_REG_FS_BASE] = FS_BASE;

	/* the extent map: the root's one entry covers HEAP's gigabyte */
	mock_put64(m, EMAP + L->emap_rtree_off + L->rtree_root_off +
		   8 * ((HEAP >> 30) & ((1u << 18) - 1)), LEAF);
	for (int e = 0; e < NEXT; e++)
		put_extent(m, e, e == SLAB48 ? NFREE48 : e == SLAB8 ? NFREE8 : 0);
	put_bitmap(m, SLAB48, 256, slab48_free);
	put_bitmap(m, SLAB8, 512, slab8_free);

	put_arena(m, ARENA0, 0, BASE0, META, META_SIZE);
	put_arena(m, ARENA1, 1, BASE1, META2, META2_SIZE);

	/* the thread: its tsd's arena and tcache; tcache_slow points back,
	 * and is the one descriptor in arena 0's ring */
	mock_put64(m, TSD + L->tsd_arena_off, ARENA0);
	mock_put64(m, tcache() + L->tcache_slow_ptr_off, SLOW);
	mock_put64(m, SLOW + L->tcache_slow_tcache_off, tcache());
	mock_put64(m, SLOW + L->tcache_slow_arena_off, ARENA0);
	mock_put64(m, SLOW + L->tcache_slow_dyn_alloc_off, ext[STACKS].base);
	uint64_t desc = SLOW + L->tcache_slow_descriptor_off;
	mock_put64(m, desc + L->descriptor_next_off, desc);
	mock_put64(m, desc + L->descriptor_bins_off, tcache() + L->tcache_bins_off);
	mock_put64(m, ARENA0 + L->arena_descriptor_ql_off, desc);
	uint64_t p3[3], p37 = ext[CACHED].base + ext[CACHED].addr_off;
	for (int i = 0; i < 3; i++)
		p3[i] = ext[SLAB48].base + 48 * cached48[i];
	put_bin(m, 3, STACK3, p3, 3);
	put_bin(m, 37, STACK37, &p37, 1);
}

static const uint64_t tsds[1] = {TSD};

struct hs_jemalloc_known known(void)
{
	return (struct hs_jemalloc_known){
		.layout = L, .version = L->version, .emap = EMAP,
		.arenas = ARENAS, .tsd = tsds,
		.lib_start = LIBTEXT, .lib_end = LIBDATA + LIBDATA_SIZE,
	};
}

void jemalloc_sizes(uint64_t *s)
{
	size_t i = 0;
	s[i++] = 8;
	for (uint64_t k = 1; k <= 4; k++)
		s[i++] = 16 * k;
	for (uint64_t base = 64; i < 232; base *= 2)
		for (uint64_t k = 1; k <= 4 && i < 232; k++)
			s[i++] = base + k * base / 4;
}
