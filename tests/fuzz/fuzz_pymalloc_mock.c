/* fuzz_pymalloc_mock: pymalloc's reader (hs_pymalloc_read) on the
 * hand-built pools of tests/unit/pymalloc_pools.h, with words of them
 * overwritten: pool headers (counts, size classes, offsets, arena
 * indices), free lists, and the memory around them.
 *
 * Input: one byte of options (bit 0: read as Python 3.9, 4 KiB pools,
 * instead of 3.11), then records of 10 bytes: a little-endian u16 word
 * index into the two arenas' mappings (modulo their words) and the u64
 * stored there (tests/fuzz/fz_heap.h).
 *
 * After each read the heap must be sane: blocks in address order, not
 * overlapping, each in a place the heap names; and pymalloc's totals no
 * larger than its blocks. */
#include <stdio.h>
#include <stdlib.h>

#include "analyzers/alloc/glibc.h"
#include "analyzers/alloc/pymalloc.h"
#include "tests/fuzz/fz_heap.h"
#include "tests/unit/pymalloc_pools.h"

static const struct zone {
	uint64_t addr, len;
} zones[] = {
	{ARENA_A, 5 * PY_POOL}, {ARENA_B_MAP, 0x8000},
};
enum { NZONES = sizeof(zones) / sizeof(zones[0]) };

static struct mock_core base;
static uint64_t nwords;

/* The base core's 8 bytes at the zone word w. */
static uint8_t *word_at(uint64_t w)
{
	for (size_t z = 0; z < NZONES; z++) {
		if (w < zones[z].len / 8)
			return mock_bytes(&base, zones[z].addr + 8 * w, 8);
		w -= zones[z].len / 8;
	}
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	py_build(&base);
	for (size_t z = 0; z < NZONES; z++)
		nwords += zones[z].len / 8;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t opts = size ? data[0] : 0;
	struct fz_words saved;
	fz_words_apply(&saved, data, size, nwords, word_at);
	size_t len;
	uint8_t *bytes = mock_build(&base, &len);
	fz_words_restore(&saved);

	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	struct hs_error *err = hs_core_open_memory("pymalloc-mock.core", bytes, len,
						   &log, &core);
	struct hs_heap *heap = NULL;
	if (!err) {
		heap = hs_heap_create(&hs_glibc_backend);
		if (!heap)
			abort();
		err = hs_heap_finish(heap);
	}
	if (!err)
		err = hs_pymalloc_read(core, &log, heap, opts & 1 ? 9 : 11,
				       opts & 1 ? "3.9" : "3.11");
	if (!err) {
		fz_heap_check(heap, "fuzz_pymalloc_mock",
			      FZ_HEAP_ORDER | FZ_HEAP_DISJOINT | FZ_HEAP_NO_WRAP);
		const struct hs_pymalloc *py = heap->pymalloc;
		if (py && (py->used_blocks > heap->nallocs ||
			   py->free_blocks > heap->nallocs ||
			   py->pools + py->empty_pools > heap->nallocs)) {
			fprintf(stderr, "fuzz_pymalloc_mock: totals above the blocks\n");
			abort();
		}
	}
	hs_heap_destroy(heap);
	hs_error_destroy(err);
	hs_core_destroy(core);
	free(bytes);
	hs_log_fini(&log);
	return 0;
}
