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
#include <string.h>

#include "analyzers/alloc/glibc.h"
#include "tests/unit/glibc_heap.h"

static const struct zone {
	uint64_t addr, len;
} zones[] = {
	{LIBC, 0x2000}, {HEAP, HEAP_SIZE}, {H2, H2_SIZE}, {TLS, 0x1000},
	{MM1, 0x40}, {MM2, 0x80},
};
enum { NZONES = sizeof(zones) / sizeof(zones[0]), RECORD = 10, MAX_RECORDS = 256 };

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

/* The base core's 8 bytes at addr. */
static uint8_t *at(uint64_t addr)
{
	for (size_t i = 0; i < base.nsegs; i++)
		if (addr >= base.segs[i].vaddr &&
		    addr + 8 <= base.segs[i].vaddr + base.segs[i].size)
			return base.segs[i].data + (addr - base.segs[i].vaddr);
	abort();
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

static void check_heap(const struct hs_heap *h)
{
	for (size_t i = 0; i < h->nallocs; i++) {
		const struct hs_alloc *a = &h->allocs[i];
		const struct hs_alloc *p = i ? &h->allocs[i - 1] : NULL;
		if (!h->places[a->where].name ||
		    (p && p->addr + p->size > a->addr - h->places[a->where].header)) {
			fprintf(stderr, "fuzz_glibc_mock: block %zu at %#llx overlaps the one before, or has place %u\n",
				i, (unsigned long long)a->addr, (unsigned)a->where);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t opts = size ? data[0] : 3;
	size_t n = size ? (size - 1) / RECORD : 0;
	if (n > MAX_RECORDS)
		n = MAX_RECORDS;
	struct {
		uint8_t *p;
		uint8_t old[8];
	} saved[MAX_RECORDS];
	for (size_t r = 0; r < n; r++) {
		const uint8_t *rec = data + 1 + r * RECORD;
		uint64_t w = (uint64_t)(rec[0] | rec[1] << 8) % nwords;
		saved[r].p = at(word_addr(w));
		memcpy(saved[r].old, saved[r].p, 8);
		memcpy(saved[r].p, rec + 2, 8);
	}
	size_t len;
	uint8_t *bytes = mock_build(&base, &len);
	/* restored newest first: a word patched twice gets its first value */
	for (size_t r = n; r-- > 0;)
		memcpy(saved[r].p, saved[r].old, 8);

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
			check_heap(heap);
			hs_heap_destroy(heap);
		}
	}
	hs_error_destroy(err);
	hs_core_destroy(core);
	free(bytes);
	hs_log_fini(&log);
	return 0;
}
