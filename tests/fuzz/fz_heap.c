/* See fz_heap.h. */
#include "tests/fuzz/fz_heap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bad_block(const char *who, size_t i, const struct hs_alloc *a,
		      const char *what) __attribute__((noreturn));
static void bad_block(const char *who, size_t i, const struct hs_alloc *a,
		      const char *what)
{
	fprintf(stderr, "%s: block %zu at %#llx (%llu bytes, place %u) %s\n",
		who, i, (unsigned long long)a->addr,
		(unsigned long long)a->size, (unsigned)a->where, what);
	abort();
}

uint64_t fz_heap_check(const struct hs_heap *h, const char *who,
		       unsigned checks)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < h->nallocs; i++) {
		const struct hs_alloc *a = &h->allocs[i];
		const struct hs_alloc *p = i ? &h->allocs[i - 1] : NULL;
		if (!h->places[a->where].name)
			bad_block(who, i, a, "has a place the backend does not name");
		if ((checks & FZ_HEAP_NO_WRAP) && a->addr + a->size < a->addr)
			bad_block(who, i, a, "wraps");
		if ((checks & FZ_HEAP_ORDER) && p && p->addr > a->addr)
			bad_block(who, i, a, "is below the one before");
		if ((checks & FZ_HEAP_DISJOINT) && p &&
		    p->addr + p->size > a->addr - h->places[a->where].header)
			bad_block(who, i, a, "overlaps the one before");
		sum += a->addr ^ a->size;
	}
	if (checks & FZ_HEAP_NO_WRAP)
		for (size_t i = 0; i < h->nregions; i++)
			if (h->regions[i].end < h->regions[i].start) {
				fprintf(stderr, "%s: region %#llx-%#llx wraps\n", who,
					(unsigned long long)h->regions[i].start,
					(unsigned long long)h->regions[i].end);
				abort();
			}
	if (h->nallocs) {
		const struct hs_alloc *a = hs_heap_find(h, h->allocs[h->nallocs / 2].addr);
		sum += a ? a->size : 0;
	}
	for (size_t i = 0; i < h->narenas; i++)
		sum += h->arenas[i].used_bytes + h->arenas[i].free_bytes;
	return sum;
}

void fz_words_apply(struct fz_words *s, const uint8_t *data, size_t size,
		    uint64_t nwords, fz_word_fn word)
{
	s->n = size ? (size - 1) / FZ_WORD_RECORD : 0;
	if (s->n > FZ_WORD_MAX_RECORDS)
		s->n = FZ_WORD_MAX_RECORDS;
	for (size_t r = 0; r < s->n; r++) {
		const uint8_t *rec = data + 1 + r * FZ_WORD_RECORD;
		uint64_t w = (uint64_t)(rec[0] | rec[1] << 8) % nwords;
		s->saved[r].p = word(w);
		memcpy(s->saved[r].old, s->saved[r].p, 8);
		memcpy(s->saved[r].p, rec + 2, 8);
	}
}

void fz_words_restore(struct fz_words *s)
{
	for (size_t r = s->n; r-- > 0;)
		memcpy(s->saved[r].p, s->saved[r].old, 8);
	s->n = 0;
}
