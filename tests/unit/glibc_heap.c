/* The glibc 2.36 heap of tests/unit/test_glibc.c, built chunk by chunk
 * (tests/unit/glibc_heap.h). */
#include <elf.h>
#include <string.h>

#include "tests/unit/glibc_heap.h"

const uint64_t FS[3] = {TLS + 0x300, TLS + 0x700, TLS + 0xb00};

struct blk blk[NBLK] = {
	[T] = {"T", 0, 0x290, TCSTRUCT, 0, 0},
	[A] = {"A", 0, 0x30, USED, 0, 0},
	[F1] = {"F1", 0, 0x20, FAST, 0, 0},
	[B] = {"B", 0, 0x40, USED, 0, 0},
	[F2] = {"F2", 0, 0x20, FAST, 0, 0},
	[TC1] = {"TC1", 0, 0x30, TCACHE, 0, 0},
	[C] = {"C", 0, 0x50, USED, 0, 0},
	[U] = {"U", 0, 0x90, BIN, 1, 0},
	[D] = {"D", 0, 0x30, USED, 0, 0},
	[S1] = {"S1", 0, 0x100, BIN, 16, 0},
	[E] = {"E", 0, 0x20, USED, 0, 0},
	[S2] = {"S2", 0, 0x100, BIN, 16, 0},
	[G] = {"G", 0, 0x30, USED, 0, 0},
	[L1] = {"L1", 0, 0x500, BIN, 68, 0},
	[H] = {"H", 0, 0x20, USED, 0, 0},
	[TC2] = {"TC2", 0, 0x30, TCACHE, 0, 0},
	[TOP0] = {"TOP0", 0, 0, TOP, 0, 0},
	[X0] = {"X0", 1, 0x290, TCSTRUCT, 1, 0},
	[X1] = {"X1", 1, 0x40, USED, 0, 0},
	[X2] = {"X2", 1, 0x60, BIN, 1, 0},
	[X3] = {"X3", 1, 0x30, USED, 0, 0},
	[X4] = {"X4", 1, 0x20, FAST, 0, 0},
	[X5] = {"X5", 1, 0x20, TCACHE, 1, 0},
	[X6] = {"X6", 1, 0x50, USED, 0, 0},
	[TOP1] = {"TOP1", 1, 0, TOP, 0, 0},
	[M1] = {"M1", -1, MM1_SIZE, MMAP, 0, 0},
	[M2] = {"M2", -1, MM2_SIZE - MEMALIGN_SHIFT, MMAP, 0, 0},
};


const struct hs_gl_layout *L;
uint64_t arena_at[2];

uint64_t bin_at(uint64_t arena, int i)
{
	return arena + L->ms_bins + (uint64_t)(i - 1) * 16 - 16;
}

/* glibc >= 2.32: PROTECT_PTR */
uint64_t protect(uint64_t pos, uint64_t ptr)
{
	return (pos >> 12) ^ ptr;
}

uint64_t tcstruct(int thread)
{
	return blk[thread ? X0 : T].chunk + 16;
}

/* ---- the hostile variants ---- */

const char *const variant_names[NVARIANTS] = {
	"sound", "size past heap", "fastbin cycle", "bin loop",
	"bk mismatch", "ring loop", "system_mem huge", "misaligned size",
	"misaligned fastbin", "misaligned tcache", "tcache cycle",
	"top past heap", "heap_info bad",
};

/* ---- the core ---- */

void place(void)
{
	uint64_t cur[2] = {HEAP, 0};
	uint64_t end[2] = {HEAP + HEAP_SIZE, H2 + H2_SIZE};
	arena_at[0] = MAIN_ARENA;
	arena_at[1] = H2 + L->hi_sizeof;
	cur[1] = (arena_at[1] + L->ms_sizeof + 15) & ~(uint64_t)15;
	for (int i = 0; i < NBLK; i++) {
		struct blk *b = &blk[i];
		if (b->arena < 0)
			continue;
		b->chunk = cur[b->arena];
		if (b->kind == TOP)
			b->csz = end[b->arena] - b->chunk;
		cur[b->arena] += b->csz;
	}
	blk[M1].chunk = MM1;
	blk[M2].chunk = MM2 + MEMALIGN_SHIFT;
}

void build_mock(enum variant v, struct mock_core *out)
{
	struct mock_core m = {0};
	mock_segment(&m, LIBC, 0x2000, PF_R | PF_W);
	mock_segment(&m, HEAP, HEAP_SIZE, PF_R | PF_W);
	mock_segment(&m, H2, H2_SIZE, PF_R | PF_W);
	mock_segment(&m, TLS, 0x1000, PF_R | PF_W);
	mock_segment(&m, MM1, MM1_SIZE, PF_R | PF_W);
	mock_segment(&m, MM2, MM2_SIZE, PF_R | PF_W);

	/* the arenas: empty bins point to themselves */
	for (int a = 0; a < 2; a++) {
		uint64_t ar = arena_at[a];
		for (int i = 1; i < (int)(L->ms_bins_size / 16) + 1; i++) {
			mock_put64(&m, bin_at(ar, i) + 16, bin_at(ar, i));
			mock_put64(&m, bin_at(ar, i) + 24, bin_at(ar, i));
		}
		mock_put64(&m, ar + L->ms_flags, a ? NONCONTIG : 0);
		mock_put64(&m, ar + L->ms_top, blk[a ? TOP1 : TOP0].chunk);
		mock_put64(&m, ar + L->ms_next, arena_at[!a]);
		mock_put64(&m, ar + L->ms_attached_threads, 1);
		mock_put64(&m, ar + L->ms_system_mem, a ? H2_SIZE : HEAP_SIZE);
	}
	/* arena 1's heap_info */
	mock_put64(&m, H2 + L->hi_ar_ptr, arena_at[1]);
	mock_put64(&m, H2 + L->hi_prev, 0);
	mock_put64(&m, H2 + L->hi_size, H2_SIZE);
	/* mp_ */
	mock_put64(&m, MP + L->mp_sbrk_base, HEAP);
	mock_put64(&m, MP + L->mp_mmap_threshold, 128 * 1024);
	uint32_t n_mmaps = 2;
	mock_write(&m, MP + L->mp_n_mmaps, &n_mmaps, 4);
	mock_put64(&m, MP + L->mp_mmapped_mem, MM1_SIZE + MM2_SIZE);
	mock_put64(&m, MP + L->mp_hp_pagesize, 0);

	/* the chunks' headers; a free chunk in a bin clears its successor's
	 * PREV_INUSE and sets its prev_size */
	for (int i = 0; i < NBLK; i++) {
		struct blk *b = &blk[i];
		if (b->arena < 0)
			continue;
		bool prev_free = i > 0 && blk[i - 1].arena == b->arena &&
				 blk[i - 1].kind == BIN;
		mock_put64(&m, b->chunk + 8, b->csz | (prev_free ? 0 : P) |
			   (b->arena ? A_BIT : 0));
		if (b->kind == BIN)
			mock_put64(&m, b->chunk + b->csz, b->csz);
	}
	/* fastbins: pushed in table order, safe-linked */
	for (int i = 0; i < NBLK; i++) {
		struct blk *b = &blk[i];
		if (b->kind != FAST)
			continue;
		uint64_t head = arena_at[b->arena] + L->ms_fastbins +
				8 * ((b->csz >> 4) - 2), old = 0;
		for (int j = 0; j < i; j++)
			if (blk[j].kind == FAST && blk[j].arena == b->arena &&
			    blk[j].csz == b->csz)
				old = blk[j].chunk;
		mock_put64(&m, b->chunk + 16, protect(b->chunk + 16, old));
		mock_put64(&m, head, b->chunk);
	}
	/* thread caches: entries are user pointers, pushed in table order */
	for (int i = 0; i < NBLK; i++) {
		struct blk *b = &blk[i];
		if (b->kind != TCACHE)
			continue;
		uint64_t tc = tcstruct(b->bin), idx = (b->csz - 32) / 16;
		uint64_t e = b->chunk + 16, old = 0;
		uint16_t count = 0;
		for (int j = 0; j < i; j++)
			if (blk[j].kind == TCACHE && blk[j].bin == b->bin &&
			    blk[j].csz == b->csz) {
				old = blk[j].chunk + 16;
				count++;
			}
		count++;
		mock_put64(&m, e, protect(e, old));
		mock_put64(&m, e + 8, TCACHE_KEY);
		mock_put64(&m, tc + L->tc_entries + 8 * idx, e);
		mock_write(&m, tc + L->tc_counts + 2 * idx, &count, 2);
	}
	/* regular bins: doubly linked, in table order from the bin's fd */
	for (int a = 0; a < 2; a++) {
		for (int bi = 1; bi < 128; bi++) {
			uint64_t bin = bin_at(arena_at[a], bi), last = bin;
			for (int i = 0; i < NBLK; i++) {
				struct blk *b = &blk[i];
				if (b->kind != BIN || b->arena != a || b->bin != bi)
					continue;
				mock_put64(&m, last + 16, b->chunk);  /* fd */
				mock_put64(&m, b->chunk + 24, last);  /* bk */
				if (bi >= 64) {  /* a large bin's nextsize ring */
					mock_put64(&m, b->chunk + 32, b->chunk);
					mock_put64(&m, b->chunk + 40, b->chunk);
				}
				last = b->chunk;
			}
			mock_put64(&m, last + 16, bin);
			mock_put64(&m, bin + 24, last);
		}
	}
	/* mmapped chunks; memalign left M2's old header at its mapping's start */
	mock_put64(&m, MM1 + 8, MM1_SIZE | M);
	mock_put64(&m, MM2 + 8, MM2_SIZE | M);
	mock_put64(&m, blk[M2].chunk, MEMALIGN_SHIFT);
	mock_put64(&m, blk[M2].chunk + 8, blk[M2].csz | M);

	/* threads: the tcache pointer at fs_base + TPOFF */
	for (int t = 0; t < 3; t++) {
		mock_thread(&m, 100 + t)[HS_REG_FS_BASE] = FS[t];
		mock_put64(&m, FS[t], FS[t]);  /* the TCB's self pointer */
		mock_put64(&m, FS[t] + (uint64_t)TPOFF, t < 2 ? tcstruct(t) : 0);
	}

	switch (v) {
	case SOUND:
	case NVARIANTS:
		break;
	case SIZE_PAST_HEAP:
		mock_put64(&m, blk[B].chunk + 8, 0x10000 | P);
		break;
	case FASTBIN_CYCLE:
		mock_put64(&m, blk[F1].chunk + 16,
			   protect(blk[F1].chunk + 16, blk[F2].chunk));
		break;
	case BIN_LOOP:
		mock_put64(&m, blk[S1].chunk + 24, blk[S2].chunk);
		break;
	case BK_MISMATCH:
		mock_put64(&m, blk[S2].chunk + 24, blk[D].chunk);
		mock_put64(&m, blk[D].chunk + 24, bin_at(MAIN_ARENA, 16));
		break;
	case RING_LOOP:
		mock_put64(&m, arena_at[1] + L->ms_next, arena_at[1]);
		break;
	case SYSTEM_MEM_HUGE:
		mock_put64(&m, MAIN_ARENA + L->ms_system_mem, 1ull << 62);
		break;
	case MISALIGNED_SIZE:
		mock_put64(&m, blk[C].chunk + 8, 0x58 | P);
		break;
	case MISALIGNED_FASTBIN:
		mock_put64(&m, MAIN_ARENA + L->ms_fastbins, blk[F2].chunk + 8);
		break;
	case MISALIGNED_TCACHE:
		mock_put64(&m, tcstruct(0) + L->tc_entries + 8,
			   blk[TC2].chunk + 16 + 8);
		break;
	case TCACHE_CYCLE:
		mock_put64(&m, blk[TC1].chunk + 16,
			   protect(blk[TC1].chunk + 16, blk[TC2].chunk + 16));
		break;
	case TOP_PAST_HEAP:
		mock_put64(&m, blk[TOP1].chunk + 8, (blk[TOP1].csz + 0x1000) | P);
		break;
	case HEAP_INFO_BAD:
		mock_put64(&m, H2 + L->hi_ar_ptr, MAIN_ARENA);
		break;
	}
	*out = m;
}

uint8_t *build(enum variant v, size_t *len)
{
	struct mock_core m;
	build_mock(v, &m);
	uint8_t *core = mock_build(&m, len);
	mock_free(&m);
	return core;
}

