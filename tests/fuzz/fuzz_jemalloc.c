/* fuzz_jemalloc: the jemalloc 5.3 walker (analyzers/alloc/jemalloc.c) on a real
 * core with patched allocator state.
 *
 * Base core (tests/fuzz/base/, gcore, gzip): jemalloc-arenas.core.gz,
 * tests/fixtures/je_arenas.c on Debian's libjemalloc2 (stripped: layouts
 * from formats/jelayout.c, the extent map found by disassembly): four
 * manual arenas besides the automatic ones, an explicit tcache, a worker
 * thread with its own cache, slabs half free, large extents, dirty and
 * retained page runs.  The zones are the words the walker reads of the
 * clean core: the extent map's root and leaves (cut into their zero and
 * non-zero stretches), every edata_t (bits, address, size, slab bitmap),
 * the threads' tsd and tcache bins with their stacks, the arenas array,
 * each arena's index, cache-bin descriptor ring and base blocks.  Input
 * format: fz_base.h. */
#include <stdint.h>

#include "analyzers/alloc/jemalloc.h"
#include "tests/fuzz/fz_base.h"

static struct fz_base bases[1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_base_load(&bases[0], "jemalloc-arenas.core.gz", hs_jemalloc_walk);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_base_run(bases, 1, data, size);
	return 0;
}
