/* A set of ids in [0, n) as a bitmap with a rank directory: membership
 * and a member's index among the members (its rank, in id order) in O(1),
 * in 1.5 bits per id of the range (a bit, and 32 bits of rank per 64
 * ids), where an array of indices would take 32.  For per-id data that
 * only a part of the ids has: the data goes in an array of `count`
 * entries, indexed by rank.
 *
 *   struct hs_rankset s;
 *   if ((err = hs_rankset_init(&s, n))) ...
 *   hs_rankset_add(&s, id);  ...           (any order)
 *   hs_rankset_finish(&s);                 (then no more adds)
 *   uint32_t k = hs_rankset_index(&s, id); (HS_RANK_NONE if not a member)
 *   hs_rankset_fini(&s);
 *
 * Base layer: includes nothing above it.
 */
#ifndef HS_RANKSET_H
#define HS_RANKSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/error.h"

#define HS_RANK_NONE UINT32_MAX

struct hs_rankset {
	uint64_t *bits;         /* n bits */
	uint32_t *rank;         /* per word of bits: members in the words before */
	size_t nwords;
	uint32_t count;         /* members (after hs_rankset_finish) */
};

/* An empty set over [0, n), n < 2^32. */
static inline struct hs_error *hs_rankset_init(struct hs_rankset *s, size_t n)
{
	s->nwords = n / 64 + 1;
	s->count = 0;
	s->bits = calloc(s->nwords, sizeof(uint64_t));
	s->rank = malloc(s->nwords * sizeof(uint32_t));
	if (!s->bits || !s->rank) {
		free(s->bits);
		free(s->rank);
		s->bits = NULL;
		s->rank = NULL;
		return &hs_error_nomem;
	}
	return NULL;
}

static inline void hs_rankset_add(struct hs_rankset *s, uint32_t id)
{
	s->bits[id / 64] |= 1ull << (id % 64);
}

/* Counts the members and fills the rank directory. */
static inline void hs_rankset_finish(struct hs_rankset *s)
{
	uint32_t r = 0;
	for (size_t w = 0; w < s->nwords; w++) {
		s->rank[w] = r;
		r += (uint32_t)__builtin_popcountll(s->bits[w]);
	}
	s->count = r;
}

static inline bool hs_rankset_has(const struct hs_rankset *s, uint32_t id)
{
	return s->bits[id / 64] >> (id % 64) & 1;
}

/* id's index among the members, HS_RANK_NONE when it is not one. */
static inline uint32_t hs_rankset_index(const struct hs_rankset *s, uint32_t id)
{
	uint64_t w = s->bits[id / 64];
	if (!(w >> (id % 64) & 1))
		return HS_RANK_NONE;
	return s->rank[id / 64] +
	       (uint32_t)__builtin_popcountll(w & ((1ull << (id % 64)) - 1));
}

static inline void hs_rankset_fini(struct hs_rankset *s)
{
	free(s->bits);
	free(s->rank);
	s->bits = NULL;
	s->rank = NULL;
}

#endif
