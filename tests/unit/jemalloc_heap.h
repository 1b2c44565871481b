/* A jemalloc 5.3 heap built by hand in a synthetic core
 * (tests/unit/mockcore.h): the builder of tests/unit/test_jemalloc.c
 * (which says what is where), also what the fuzz_jemalloc_mock harness
 * mutates.
 *
 * L = layout_find() (Debian 12's row of formats/jelayout.c), then
 * build_mock() gives the struct mock_core before it is built, and known()
 * what hs_jemalloc_walk_known needs for it (the extent map at EMAP, the
 * arenas array at ARENAS, thread 1's tsd at TSD).
 */
#ifndef HS_JEMALLOC_HEAP_H
#define HS_JEMALLOC_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzers/alloc/jemalloc.h"
#include "formats/jelayout.h"
#include "tests/unit/mockcore.h"

#define PAGE 4096ull
#define LIBTEXT 0x7f0000000000ull
#define LIBDATA 0x7f0000200000ull
#define LIBDATA_SIZE 0x20a000ull
#define EMAP LIBDATA
#define ARENAS (LIBDATA + 0x201000)
#define META 0x7f1000000000ull
#define META_SIZE 0x400000ull
#define BASE0 (META + 0x1000)
#define ARENA0 (META + 0x2000)
#define ARENA1 (META + 0x20000)
#define EDATAS (META + 0x40000)
#define SLOW (META + 0x50000)
#define SLOW2 (META + 0x50400)
#define GARBAGE (META + 0x60000)
#define LEAF (META + 0x200000)
#define META2 0x7f1000800000ull
#define META2_SIZE 0x10000ull
#define BASE1 (META2 + 0x100)
#define THR 0x7f2000000000ull
#define TSD (THR + 0x100)
#define FS_BASE (THR + 0x1000)
#define HEAP 0x7f3000000000ull
#define HEAP_SIZE 0x40000ull
#define OUTSIDE 0x7e0000000000ull  /* in no segment */

/* the extents */
enum { SLAB48, SLAB8, LARGE, CACHED, STACKS, DIRTY, MUZZY, RETAINED, NEXT };
enum { ST_ACTIVE, ST_DIRTY, ST_MUZZY, ST_RETAINED };
struct ext {
	uint64_t base, pages, addr_off;  /* e_addr = base + addr_off */
	uint32_t arena, state, szind;    /* szind 232 (nsizes): none */
	bool slab;
};
extern const struct ext ext[NEXT];

/* free regions in the slabs' bitmaps; regions of SLAB48 in the tcache */
bool slab48_free(uint64_t r);
bool slab8_free(uint64_t r);
extern const uint64_t cached48[3];   /* bin 3 */
enum { NFREE48 = 6, NFREE8 = 33 };

/* the stacks of bins 3 and 37 inside STACKS */
#define STACK3 (ext[STACKS].base + 0x100)
#define STACK37 (ext[STACKS].base + 0x200)

extern const struct hs_je_layout *L;

/* Debian 12's row, or NULL; does the row fit what the builder lays out by
 * hand (4 KiB pages, a two-level extent map of 18 + 18 bits, 232 size
 * classes of which 36 have slabs, ...)? */
const struct hs_je_layout *layout_find(void);
bool layout_fits(void);

uint64_t edata_of(int e);
/* thread 1's tcache_t; its cache bin b */
uint64_t tcache(void);
uint64_t bin(uint32_t b);

/* The pieces build_mock() lays out, for the variants that redo one. */
void put_leaf(struct mock_core *m, uint64_t page, uint64_t bits);
void put_extent(struct mock_core *m, int e, uint32_t nfree);
void put_bitmap(struct mock_core *m, int e, uint64_t nregs,
		bool (*is_free)(uint64_t));
/* A bin of n pointers from stack (low_bits_empty just past them). */
void put_bin(struct mock_core *m, uint32_t b, uint64_t stack,
	     const uint64_t *ptrs, uint32_t n);
void put_arena(struct mock_core *m, uint64_t a, uint32_t ind,
	       uint64_t base, uint64_t block, uint64_t block_size);

/* The sound heap, in m (overwritten; mock_free it). */
void build_mock(struct mock_core *m);
/* What the walk is given for it (the size classes computed). */
struct hs_jemalloc_known known(void);

/* jemalloc's size classes for this layout (232): 8, then 16-spaced to 64,
 * then four per doubling */
void jemalloc_sizes(uint64_t *s);

#endif
