/* A set of ids in [0, n) as a bitmap with a rank directory: membership
 * and a member's index among the members (its rank, in id order) in O(1),
 * in 2 bits per id of the range, where an array of indices would take 32.
 * For per-id data that only a part of the ids has: the data goes in an
 * array of `count` entries, indexed by rank.
 *
 *   struct hs_rankset s;
 *   if ((err = hs_rankset_init(&s, n))) ...
 *   hs_rankset_add(&s, id);  ...           (any order)
 *   hs_rankset_merge(&s, &t);              (t's members too; t as s)
 *   hs_rankset_finish(&s);                 (then no more adds)
 *   uint32_t k = hs_rankset_index(&s, id); (HS_RANK_NONE if not a member)
 *   uint32_t id = hs_rankset_select(&s, k); (k < s.count: the inverse)
 *   hs_rankset_fini(&s);
 *
 * Each 64-bit word holds the bits of 32 ids and, above them, how many
 * members the words before it hold: a lookup reads one word, which
 * matters where the lookups are random (the dominators, the types).
 *
 * Base layer: includes nothing above it.
 */
#ifndef HS_RANKSET_H
#define HS_RANKSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/alloc.h"
#include "src/error.h"

#define HS_RANK_NONE UINT32_MAX

struct hs_rankset {
	uint64_t *w;            /* per 32 ids: their bits, then (<< 32) the rank */
	size_t nwords;
	uint32_t count;         /* members (after hs_rankset_finish) */
};

/* The members among the low 32 bits of a word.  Without the popcnt
 * instruction (the baseline x86-64 target) __builtin_popcount is a call
 * into libgcc, which costs more in these lookups than a few operations. */
static inline uint32_t hs_popcount32(uint32_t x)
{
#ifdef __POPCNT__
	return (uint32_t)__builtin_popcount(x);
#else
	x -= (x >> 1) & 0x55555555u;
	x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
	x = (x + (x >> 4)) & 0x0f0f0f0fu;
	return (x * 0x01010101u) >> 24;
#endif
}

/* An empty set over [0, n), n < 2^32. */
static inline struct hs_error *hs_rankset_init(struct hs_rankset *s, size_t n)
{
	s->nwords = n / 32 + 1;
	s->count = 0;
	s->w = hs_calloc(s->nwords, sizeof(uint64_t));
	return s->w ? NULL : &hs_error_nomem;
}

static inline void hs_rankset_add(struct hs_rankset *s, uint32_t id)
{
	s->w[id / 32] |= 1ull << (id % 32);
}

/* Before finishing: adds the members of from, a set over the same range
 * (filled apart, by another thread). */
static inline void hs_rankset_merge(struct hs_rankset *s, const struct hs_rankset *from)
{
	for (size_t i = 0; i < s->nwords && i < from->nwords; i++)
		s->w[i] |= from->w[i];
}

/* Counts the members and fills the rank directory. */
static inline void hs_rankset_finish(struct hs_rankset *s)
{
	uint32_t r = 0;
	for (size_t i = 0; i < s->nwords; i++) {
		uint32_t bits = (uint32_t)s->w[i];
		s->w[i] = (uint64_t)r << 32 | bits;
		r += hs_popcount32(bits);
	}
	s->count = r;
}

static inline bool hs_rankset_has(const struct hs_rankset *s, uint32_t id)
{
	return s->w[id / 32] >> (id % 32) & 1;
}

/* id's index among the members, HS_RANK_NONE when it is not one. */
static inline uint32_t hs_rankset_index(const struct hs_rankset *s, uint32_t id)
{
	uint64_t w = s->w[id / 32];
	if (!(w >> (id % 32) & 1))
		return HS_RANK_NONE;
	return (uint32_t)(w >> 32) + hs_popcount32((uint32_t)w & ((1u << (id % 32)) - 1));
}

/* The member of index rank (< s->count): hs_rankset_index's inverse.  A
 * binary search over the words' ranks, then the word's bits. */
static inline uint32_t hs_rankset_select(const struct hs_rankset *s, uint32_t rank)
{
	size_t lo = 0, hi = s->nwords;
	/* the last word whose members before it are at most rank */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uint32_t)(s->w[mid] >> 32) <= rank)
			lo = mid;
		else
			hi = mid;
	}
	uint32_t bits = (uint32_t)s->w[lo];
	for (uint32_t left = rank - (uint32_t)(s->w[lo] >> 32); left; left--)
		bits &= bits - 1;
	return (uint32_t)(lo * 32) + (uint32_t)__builtin_ctz(bits);
}

static inline void hs_rankset_fini(struct hs_rankset *s)
{
	free(s->w);
	s->w = NULL;
}

#endif
