/* A hand-built pymalloc heap (CPython 3.10+: 16 KiB pools, 48-byte pool
 * headers) in a synthetic core, for test_pymalloc and fuzz_pymalloc_mock.
 *
 * Arena 0 at ARENA_A (pool-aligned), four pools and a fifth never carved:
 *   A0  16-byte blocks, full (1,021 in use, none free)
 *   A1  32-byte blocks, 10 carved, blocks 3 and 7 on the free list: 8 in use
 *   A2  64-byte blocks, empty: its 4 carved blocks all on the free list
 *   A3  512-byte blocks, 3 carved, the third on the free list: 2 in use
 * Arena 1 mapped at ARENA_B_MAP (not pool-aligned), its first pool at
 * ARENA_B:
 *   B0  96-byte blocks, 6 carved, the sixth on the free list: 5 in use
 * What pymalloc itself counts (sys._debugmallocstats): a pool in use has
 * NUMBLOCKS(size) - count blocks available, NUMBLOCKS(size) being
 * (16384 - 48) / size. */
#ifndef HS_PYMALLOC_POOLS_H
#define HS_PYMALLOC_POOLS_H

#include <stdint.h>

#include "tests/unit/mockcore.h"

#define PY_POOL 16384ULL
#define ARENA_A 0x7f0000000000ULL
#define ARENA_B_MAP 0x7f0000201000ULL
#define ARENA_B 0x7f0000204000ULL

struct py_pool_spec {
	uint64_t addr;
	uint32_t arena, szidx, carved, count;
	/* carved blocks on the free list, in list order; -1 ends */
	int free[8];
};

enum { PY_NPOOLS = 5 };
extern const struct py_pool_spec py_pools[PY_NPOOLS];

/* The core's segments with every pool of py_pools. */
void py_build(struct mock_core *m);

/* Blocks in use, pools in use, empty pools, available blocks: what the
 * specs say, by pymalloc's own arithmetic. */
void py_expected(uint64_t *used, uint64_t *pools, uint64_t *empty,
		 uint64_t *avail);

#endif
