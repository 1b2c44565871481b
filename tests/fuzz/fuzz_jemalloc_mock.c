/* fuzz_jemalloc_mock: the jemalloc walk proper (hs_jemalloc_walk_known) on
 * the hand-built jemalloc 5.3 heap of tests/unit/jemalloc_heap.h, with
 * words of it overwritten.  Where fuzz_jemalloc patches a real core (and
 * so also drives discovery: the library's code and TLS, the extent map's
 * search), this one drives the walk alone on a core built in memory: every
 * extent, region and cached pointer of the sound heap is one the builder
 * placed.
 *
 * The core is 6.5 MB (the extent map's root and leaf are 2 MiB each), so
 * it is built once, and each input patches the built image in place (and
 * puts it back after the walk) rather than building a core per input.
 *
 * Input: one byte of options, then records of 10 bytes: a little-endian
 * u16 word index into the zones below (modulo their words) and the u64
 * stored there.  Options: bit 0, the arenas array is given (else the walk
 * looks for it in the library's data); bit 1, the size classes are given
 * as a table (the last zone; else the walk computes them); bit 2, the
 * library is linked into the executable; bit 3, no thread's tsd is known.
 * The empty input is the sound heap with the arenas array given.
 *
 * The zones are what the walker reads, a few hundred words: the extent
 * map's root around its one entry and the leaf's first 40 entries, the
 * eight edata_t whole (bits, address, size, slab bitmaps), the arenas
 * array's first slots, each arena's index, base and descriptor ring head,
 * the bases' block lists and their blocks' headers, the thread's tsd
 * arena, its tcache_t (slow pointer, bins 0-5 and 35-38), its
 * tcache_slow_t, the two bins' stacks, and the first 40 size classes.
 *
 * After each walk the heap must be sane: blocks in address order, not
 * overlapping nor wrapping, each in a place the backend names; regions
 * that do not wrap. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/jemalloc.h"
#include "tests/fuzz/fz_heap.h"
#include "tests/unit/jemalloc_heap.h"

enum { MAX_ZONES = 32, NSIZES_FUZZED = 40 };

static struct zone {
	uint8_t *p;        /* in the image, or the size table */
	uint64_t len;
} zones[MAX_ZONES];
static size_t nzones;
static uint64_t nwords;

static uint8_t *image;  /* the sound core's bytes */
static size_t image_len;
static uint64_t sizes[232];

/* The image's bytes for len bytes at addr (a PT_LOAD's file data). */
static uint8_t *image_at(uint64_t addr, uint64_t len)
{
	Elf64_Ehdr eh;
	memcpy(&eh, image, sizeof(eh));
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, image + eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && addr >= ph.p_vaddr &&
		    addr + len <= ph.p_vaddr + ph.p_filesz)
			return image + ph.p_offset + (addr - ph.p_vaddr);
	}
	fprintf(stderr, "fuzz_jemalloc_mock: %#llx is not in the core\n",
		(unsigned long long)addr);
	abort();
}

static void zone(uint64_t addr, uint64_t len)
{
	if (nzones == MAX_ZONES)
		abort();
	zones[nzones++] = (struct zone){image_at(addr, len), len};
	nwords += len / 8;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	L = layout_find();
	if (!L || !layout_fits()) {
		fprintf(stderr, "fuzz_jemalloc_mock: no Debian 12 row in formats/jelayout.c, or not the one the heap is built for\n");
		abort();
	}
	struct mock_core m;
	build_mock(&m);
	image = mock_build(&m, &image_len);
	mock_free(&m);
	jemalloc_sizes(sizes);

	uint64_t root = EMAP + L->emap_rtree_off + L->rtree_root_off;
	zone(root + 8 * (((HEAP >> 30) & ((1u << 18) - 1)) - 4), 8 * 8);
	zone(LEAF, 40 * 8);
	zone(EDATAS, (uint64_t)NEXT * L->edata_size);
	zone(ARENAS, 4 * 8);
	const uint64_t arenas[2] = {ARENA0, ARENA1}, bases[2] = {BASE0, BASE1},
		       blocks[2] = {META, META2};
	for (int a = 0; a < 2; a++) {
		/* the index (a u32) and the base_t pointer after it */
		zone(arenas[a] + L->arena_ind_off, 16);
		zone(arenas[a] + L->arena_descriptor_ql_off, 8);
		zone(bases[a] + L->base_blocks_off, 8);
		zone(blocks[a], 16);
	}
	zone(TSD + L->tsd_arena_off, 8);
	zone(tcache(), bin(6) - tcache());
	zone(bin(35), bin(39) - bin(35));
	zone(SLOW, L->tcache_slow_tcache_off + 8);
	zone(STACK3, 3 * 8);
	zone(STACK37, 8);
	zones[nzones++] = (struct zone){(uint8_t *)sizes, NSIZES_FUZZED * 8};
	nwords += NSIZES_FUZZED;
	return 0;
}

/* The zone word w (0 <= w < nwords). */
static uint8_t *word_at(uint64_t w)
{
	for (size_t z = 0; z < nzones; z++) {
		if (w < zones[z].len / 8)
			return zones[z].p + 8 * w;
		w -= zones[z].len / 8;
	}
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t opts = size ? data[0] : 1;
	struct fz_words saved;
	fz_words_apply(&saved, data, size, nwords, word_at);

	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	struct hs_error *err = hs_core_open_memory("jemalloc-mock.core", image,
						   image_len, &log, &core);
	if (!err) {
		struct hs_jemalloc_known k = known();
		if (!(opts & 1))
			k.arenas = 0;
		if (opts & 2)
			k.sizes = sizes;
		k.lib_is_exe = opts & 4;
		if (opts & 8)
			k.tsd = NULL;
		struct hs_heap *heap = NULL;
		err = hs_jemalloc_walk_known(core, &k, &log, &heap);
		if (!err) {
			fz_heap_check(heap, "fuzz_jemalloc_mock",
				      FZ_HEAP_DISJOINT | FZ_HEAP_NO_WRAP);
			hs_heap_destroy(heap);
		}
	}
	hs_error_destroy(err);
	hs_core_destroy(core);
	hs_log_fini(&log);
	/* the image back to the sound heap */
	fz_words_restore(&saved);
	return 0;
}
