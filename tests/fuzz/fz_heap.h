/* What the allocator walkers' harnesses share (fuzz_glibc, fuzz_jemalloc,
 * fuzz_glibc_mock, fuzz_jemalloc_mock): the checks of the block table a
 * walk returned, and the word patches the mock harnesses apply to their
 * heap built in memory.
 *
 * Not part of fz_base.c: that file also sets the ASan options of the
 * harnesses on real cores (__asan_default_options) and reads their gzip
 * base cores, neither of which the mock harnesses want. */
#ifndef HS_FZ_HEAP_H
#define HS_FZ_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"

/* What fz_heap_check() holds a block table to besides every block's place
 * being one the backend names, which it always checks. */
enum fz_heap_checks {
	FZ_HEAP_ORDER = 1 << 0,     /* blocks in address order */
	/* a block, header included, starts where the one before ends or
	 * later */
	FZ_HEAP_DISJOINT = 1 << 1,
	FZ_HEAP_NO_WRAP = 1 << 2,   /* no block or region wraps */
};

/* Aborts, naming the harness who and the block (or region), when the heap
 * breaks one of checks (enum fz_heap_checks): a bug the fuzzer must
 * report.  Returns a value folded from the blocks, one lookup
 * (hs_heap_find) and the arenas' totals, for a harness to keep so that
 * none of it is optimized away. */
uint64_t fz_heap_check(const struct hs_heap *h, const char *who,
		       unsigned checks);

/* The mock harnesses' input: a byte of the harness's options, then records
 * of FZ_WORD_RECORD bytes, a little-endian u16 word index (modulo the
 * harness's number of words) and the u64 written at that word.  At most
 * FZ_WORD_MAX_RECORDS are applied. */
enum { FZ_WORD_RECORD = 10, FZ_WORD_MAX_RECORDS = 256 };

/* The harness's word w (0 <= w < its number of words): 8 writable bytes. */
typedef uint8_t *(*fz_word_fn)(uint64_t w);

struct fz_words {
	size_t n;
	struct {
		uint8_t *p;
		uint8_t old[8];
	} saved[FZ_WORD_MAX_RECORDS];
};

/* Writes the records of the input data (size bytes, the options byte
 * first) to the words word() gives, remembering what was there. */
void fz_words_apply(struct fz_words *s, const uint8_t *data, size_t size,
		    uint64_t nwords, fz_word_fn word);
/* Puts the words back, newest record first: a word patched twice gets its
 * first value. */
void fz_words_restore(struct fz_words *s);

#endif
