/* fuzz_glibc_mock: the glibc walk proper (hs_glibc_walk_known) on the
 * hand-built glibc 2.36 heap of tests/unit/glibc_heap.h, with words of it
 * overwritten.  Where fuzz_glibc patches real cores (and so also drives
 * discovery: DWARF, symbols, the tcache's TLS offset), this one drives the
 * walk alone on a core of 180 KB that is built in memory: thousands of
 * inputs a second, every one of them a heap whose every chunk the builder
 * placed.
 *
 * Input: one byte of options (bit 0: safe-linking, bit 1: the tcache's TLS
 * offset is known), then records of 10 bytes: a little-endian u16 word
 * index into the zones below (modulo their words) and the u64 stored there.
 * The zones are what the walker reads: libc's data (main_arena, mp_), both
 * heaps whole, the threads' TLS, and the mmapped chunks' headers.
 *
 * After each walk the heap must be sane: blocks in address order, not
 * overlapping, each in a place the backend names. */
#include <stdio.h>
#include <stdlib.h>

#include "analyzers/alloc/glibc.h"
#include "tests/fuzz/fz_heap.h"
#include "tests/unit/glibc_heap.h"

static const struct zone {
	uint64_t addr, len;
} zones[] = {
	{LIBC, 0x2000}, {HEAP, HEAP_SIZE}, {H2, H2_SIZE}, {TLS, 0x1000},
	{MM1, 0x40}, {MM2, 0x80},
};
enum { NZONES = sizeof(zones) / sizeof(zones[0]) };

static struct mock_core base;
static uint64_t nwords;

/* The zone word w (0 <= w < nwords) as an address. */
static uint64_t word_addr(uint64_t w)
{
	for (size_t z = 0; z < NZONES; z++) {
		if (w < zones[z].len / 8)
			return zones[z].addr + 8 * w;
		w -= zones[z].len / 8;
	}
	abort();
}

/* The base core's 8 bytes at the zone word w. */
static uint8_t *word_at(uint64_t w)
{
	return mock_bytes(&base, word_addr(w), 8);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	bool exact;
	L = hs_gl_layout_find("2.36", NULL, &exact);
	if (!L) {
		fprintf(stderr, "fuzz_glibc_mock: no glibc 2.36 row in formats/gllayout.c\n");
		abort();
	}
	place();
	build_mock(SOUND, &base);
	for (size_t z = 0; z < NZONES; z++)
		nwords += zones[z].len / 8;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t opts = size ? data[0] : 3;
	struct fz_words saved;
	fz_words_apply(&saved, data, size, nwords, word_at);
	size_t len;
	uint8_t *bytes = mock_build(&base, &len);
	fz_words_restore(&saved);

	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	struct hs_error *err = hs_core_open_memory("glibc-mock.core", bytes, len,
						   &log, &core);
	if (!err) {
		struct hs_glibc_known k = {
			.layout = L, .main_arena = MAIN_ARENA, .mp = MP,
			.safe_linking = opts & 1, .tpoff_known = opts & 2,
			.tpoff = TPOFF,
		};
		struct hs_heap *heap = NULL;
		err = hs_glibc_walk_known(core, &k, &log, &heap);
		if (!err) {
			fz_heap_check(heap, "fuzz_glibc_mock", FZ_HEAP_DISJOINT);
			hs_heap_destroy(heap);
		}
	}
	hs_error_destroy(err);
	hs_core_destroy(core);
	free(bytes);
	hs_log_fini(&log);
	return 0;
}
