/* A glibc 2.36 heap built by hand in a synthetic core (tests/unit/mockcore.h):
 * the builder of tests/unit/test_glibc.c (which says what is where), also
 * what the fuzz_glibc_mock harness mutates.
 *
 * place() once L (glibc 2.36's row of formats/gllayout.c) is set, then
 * build(variant) gives the core's bytes, build_mock(variant) the
 * struct mock_core before it is built.  main_arena, mp_ and the tcache's
 * TLS offset are MAIN_ARENA, MP and TPOFF (struct hs_glibc_known).
 */
#ifndef HS_GLIBC_HEAP_H
#define HS_GLIBC_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "formats/gllayout.h"
#include "tests/unit/mockcore.h"

/* glibc's own constants (malloc/malloc.c) */
enum { P = 1, M = 2, A_BIT = 4, NONCONTIG = 2 };

#define LIBC 0x7ffff7e00000ull
#define MAIN_ARENA (LIBC + 0x100)
#define MP (LIBC + 0x1000)
#define HEAP 0x555555559000ull
#define HEAP_SIZE 0x2000ull
#define H2 0x7fffe4000000ull              /* 64 MiB aligned */
#define H2_SIZE 0x3000ull
#define TLS 0x7ffff7d80000ull
#define MM1 0x7ffff7a00000ull
#define MM1_SIZE 0x21000ull
#define MM2 0x7ffff7c40000ull
#define MM2_SIZE 0x2000ull
#define MEMALIGN_SHIFT 0x30ull
#define TCACHE_KEY 0x5a5a1234deadbeefull
#define TPOFF (-0x48ll)
extern const uint64_t FS[3];

enum kind { USED, TCSTRUCT, FAST, TCACHE, BIN, TOP, MMAP };

/* The chunks, in address order within each heap.  bin: BIN's bin index
 * (1 unsorted, 16 small, 68 large); TCACHE's thread (0: thread 100). */
enum {
	T, A, F1, B, F2, TC1, C, U, D, S1, E, S2, G, L1, H, TC2, TOP0,
	X0, X1, X2, X3, X4, X5, X6, TOP1,
	M1, M2, NBLK
};
struct blk {
	const char *name;
	int arena;          /* -1: mmapped */
	uint64_t csz;       /* chunk size (top: computed) */
	enum kind kind;
	int bin;
	uint64_t chunk;     /* computed */
};
extern struct blk blk[NBLK];

enum variant {
	SOUND,
	SIZE_PAST_HEAP,     /* B's size runs past the main heap */
	FASTBIN_CYCLE,      /* fastbin 0: F2 -> F1 -> F2 */
	BIN_LOOP,           /* small bin 16: S1's bk back to S2 */
	BK_MISMATCH,        /* S2's bk is D (in use), whose bk leads back */
	RING_LOOP,          /* arena 1's next is itself */
	SYSTEM_MEM_HUGE,    /* main_arena.system_mem is 2^62 */
	MISALIGNED_SIZE,    /* C's size is 0x58 */
	MISALIGNED_FASTBIN, /* fastbin 0's head is F2 + 8 */
	MISALIGNED_TCACHE,  /* tcache bin 1's head is TC2's user memory + 8 */
	TCACHE_CYCLE,       /* tcache bin 1: TC2 -> TC1 -> TC2 */
	TOP_PAST_HEAP,      /* arena 1's top size runs past its heap */
	HEAP_INFO_BAD,      /* arena 1's heap_info names another arena */
	NVARIANTS
};
extern const char *const variant_names[NVARIANTS];

extern const struct hs_gl_layout *L;
extern uint64_t arena_at[2];

uint64_t bin_at(uint64_t arena, int i);
/* glibc >= 2.32: PROTECT_PTR */
uint64_t protect(uint64_t pos, uint64_t ptr);
uint64_t tcstruct(int thread);
void place(void);
void build_mock(enum variant v, struct mock_core *m);
uint8_t *build(enum variant v, size_t *len);

#endif
