/* fuzz_glibc: the glibc ptmalloc walker (analyzers/alloc/glibc.c) on real cores
 * with patched allocator state.
 *
 * Base cores (tests/fuzz/base/, gcore of fixtures, gzip; small fixtures:
 * the walker scans all anonymous writable memory for mmapped chunks, and
 * every byte of it costs on every input):
 *   0  glibc-demo.core.gz       tests/fixtures/demo.c with 300 sessions:
 *      main_arena and the worker's arena (its heap_info), two threads and
 *      their thread caches, unsorted, small and large bins
 *   1  glibc-corruptme.core.gz  tests/fixtures/corruptme.c: a full tcache
 *      bin, a fastbin, an unsorted chunk (what tests/corrupt_core.py
 *      damages)
 *   2  glibc-secrets.core.gz    tests/fixtures/secrets.c: an mmapped chunk
 *      and a second thread
 * All are opened once (libc's DWARF from libc6-dbg); the zones are the
 * words the walker reads of the clean core: main_arena, mp_, the other
 * arena, heap_info, chunk headers, fastbin and tcache links, the tcache
 * structs and the threads' tcache pointers.  Input format: fz_base.h. */
#include <stdint.h>

#include "analyzers/alloc/glibc.h"
#include "tests/fuzz/fz_base.h"

static struct fz_base bases[3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_base_load(&bases[0], "glibc-demo.core.gz", hs_glibc_walk);
	fz_base_load(&bases[1], "glibc-corruptme.core.gz", hs_glibc_walk);
	fz_base_load(&bases[2], "glibc-secrets.core.gz", hs_glibc_walk);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_base_run(bases, 3, data, size);
	return 0;
}
