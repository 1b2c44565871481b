/* The hand-built pymalloc heap: see pymalloc_pools.h. */
#include "tests/unit/pymalloc_pools.h"

const struct py_pool_spec py_pools[PY_NPOOLS] = {
	{ARENA_A, 0, 0, 1021, 1021, {-1}},
	{ARENA_A + PY_POOL, 0, 1, 10, 8, {3, 7, -1}},
	{ARENA_A + 2 * PY_POOL, 0, 3, 4, 0, {0, 1, 2, 3, -1}},
	{ARENA_A + 3 * PY_POOL, 0, 31, 3, 2, {2, -1}},
	{ARENA_B, 1, 5, 6, 5, {5, -1}},
};

void py_build(struct mock_core *m)
{
	/* arena 0: four pools and one never carved (zeros); arena 1's
	 * mapping starts 12 KiB before its first pool */
	mock_segment(m, ARENA_A, 5 * PY_POOL, PF_R | PF_W);
	mock_segment(m, ARENA_B_MAP, 0x8000, PF_R | PF_W);
	mock_thread(m, 1);
	for (int i = 0; i < PY_NPOOLS; i++) {
		const struct py_pool_spec *p = &py_pools[i];
		uint64_t size = ((uint64_t)p->szidx + 1) * 16;
		uint64_t first = p->free[0] >= 0 ? p->addr + 48 + p->free[0] * size : 0;
		mock_put64(m, p->addr, p->count);
		mock_put64(m, p->addr + 8, first);
		mock_put64(m, p->addr + 16, p->addr);     /* nextpool */
		mock_put64(m, p->addr + 24, p->addr);     /* prevpool */
		mock_put64(m, p->addr + 32, (uint64_t)p->szidx << 32 | p->arena);
		mock_put64(m, p->addr + 40, (PY_POOL - size) << 32 |
			   (48 + p->carved * size));
		for (int k = 0; k < 8 && p->free[k] >= 0; k++) {
			uint64_t next = k + 1 < 8 && p->free[k + 1] >= 0 ?
					p->addr + 48 + p->free[k + 1] * size : 0;
			mock_put64(m, p->addr + 48 + p->free[k] * size, next);
		}
		/* the blocks in use hold something */
		for (uint32_t b = 0; b < p->carved; b++) {
			int isfree = 0;
			for (int k = 0; k < 8 && p->free[k] >= 0; k++)
				isfree |= p->free[k] == (int)b;
			if (!isfree)
				mock_put64(m, p->addr + 48 + b * size, 1);
		}
	}
}

void py_expected(uint64_t *used, uint64_t *pools, uint64_t *empty,
		 uint64_t *avail)
{
	*used = *pools = *empty = *avail = 0;
	for (int i = 0; i < PY_NPOOLS; i++) {
		const struct py_pool_spec *p = &py_pools[i];
		uint64_t size = ((uint64_t)p->szidx + 1) * 16;
		if (!p->count) {
			(*empty)++;
			continue;
		}
		(*pools)++;
		*used += p->count;
		*avail += (PY_POOL - 48) / size - p->count;
	}
}
