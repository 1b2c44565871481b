/* Rows of a graph's edges as varints.
 *
 * An edge is a node id below 2^30 with two flag bits above it (bits 31 and
 * 30 of a 32-bit edge).  A row holds its edges in the order written, each
 * as the difference from the id before it (the row's own node for the
 * first), zigzag-signed, shifted left by two with the flags in the low
 * two bits, as an LEB128 varint: at most HS_EDGEROW_MAX bytes, one for a
 * target within 15 ids of the one before.  On a heap, a block mostly
 * points to blocks allocated beside it and its targets are sorted: most
 * edges take a byte instead of four.
 *
 * The flags sit in the low bits of an edge's first byte, so they can be
 * changed in place (hs_edgerow_set_flags) without moving the row.
 *
 * Where the rows start (struct hs_edgerow_index): per group of
 * HS_EDGEROW_GROUP rows one 64-byte line, the group's first start (32
 * bits) and each row's offset from it (16 bits): 2.13 bytes a row instead
 * of 4, and a row's start is still one cache line away.  A group whose
 * rows span 2^16 bytes or more (a block of tens of thousands of pointers
 * among them) keeps 32-bit starts of its own instead, marked by its first
 * row's offset (always 0 otherwise) set to HS_EDGEROW_WIDE.
 */
#ifndef HS_EDGEROW_H
#define HS_EDGEROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/varint.h"

enum { HS_EDGEROW_MAX = 5 };
#define HS_EDGEROW_ID_MASK 0x3fffffffu

/* Writes edge e (id and flags) after `*prev` (the id before it, or the
 * row's node) at out, which has room for HS_EDGEROW_MAX bytes; returns
 * the bytes written and sets *prev to e's id. */
static inline size_t hs_edgerow_put(uint8_t *out, uint32_t *prev, uint32_t e)
{
	uint32_t id = e & HS_EDGEROW_ID_MASK;
	uint64_t z = hs_zigzag((int64_t)id - (int64_t)*prev) << 2 | e >> 30;
	*prev = id;
	return hs_varint_put(out, z);
}

/* The edge at *p (moved past it), after *prev (set to its id). */
static inline uint32_t hs_edgerow_get(const uint8_t **p, uint32_t *prev)
{
	const uint8_t *q = *p;
	uint64_t z = q[0] & 0x7f;
	if (q[0] & 0x80) {
		unsigned sh = 7;
		size_t i = 1;
		for (;;) {
			z |= (uint64_t)(q[i] & 0x7f) << sh;
			if (!(q[i++] & 0x80) || i == HS_EDGEROW_MAX)
				break;
			sh += 7;
		}
		*p = q + i;
	} else {
		*p = q + 1;
	}
	uint32_t flags = (uint32_t)(z & 3) << 30;
	z >>= 2;
	uint32_t d = (uint32_t)(z >> 1);
	uint32_t id = (z & 1 ? *prev - d - 1 : *prev + d) & HS_EDGEROW_ID_MASK;
	*prev = id;
	return id | flags;
}

/* Sets the flags of the edge that starts at p. */
static inline void hs_edgerow_set_flags(uint8_t *p, uint32_t flags)
{
	*p = (uint8_t)((*p & ~3u) | flags >> 30);
}

enum { HS_EDGEROW_GROUP = 30, HS_EDGEROW_WIDE = UINT16_MAX };

struct hs_edgerow_group {
	uint32_t base;                  /* its first row's start */
	uint16_t rel[HS_EDGEROW_GROUP]; /* each row's start - base */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct hs_edgerow_group) == 64, "a group is a cache line");

struct hs_edgerow_index {
	struct hs_edgerow_group *groups;        /* starts 0 .. n: n the rows' end */
	uint32_t *wide_group;   /* the wide groups, ascending */
	uint32_t *wide;         /* HS_EDGEROW_GROUP starts per wide group */
	uint32_t nwide;
};

uint32_t hs_edgerow_wide_start(const struct hs_edgerow_index *ix, uint32_t v);

/* Where row v starts (v <= n: row n's start is the rows' end). */
static inline uint32_t hs_edgerow_start(const struct hs_edgerow_index *ix, uint32_t v)
{
	const struct hs_edgerow_group *g = &ix->groups[v / HS_EDGEROW_GROUP];
	if (__builtin_expect(g->rel[0] == HS_EDGEROW_WIDE, 0))
		return hs_edgerow_wide_start(ix, v);
	return g->base + g->rel[v % HS_EDGEROW_GROUP];
}

/* Asks the cache for what hs_edgerow_start(ix, v) reads. */
static inline void hs_edgerow_prefetch(const struct hs_edgerow_index *ix, uint32_t v)
{
	__builtin_prefetch(&ix->groups[v / HS_EDGEROW_GROUP]);
}

/* The index of starts[0 .. n] (ascending, starts[0] == 0); false when
 * memory ran out. */
bool hs_edgerow_index_build(const uint32_t *starts, uint32_t n,
			    struct hs_edgerow_index *ix);
void hs_edgerow_index_fini(struct hs_edgerow_index *ix);

/* An index filled row by row, as the rows are written, without an array
 * of starts: each fill covers rows from a group's first on, its starts
 * counted from its own first row, so that the parts of a graph written
 * each on its own thread fill their groups side by side (each group is
 * one fill's), and hs_edgerow_index_join adds the bytes of the parts
 * before each.  The groups are allocated by hs_edgerow_groups_alloc for
 * the n rows.  Each fill but the last that holds a row ends at a
 * group's end; that last one (or the first, when there are no rows) ends
 * with hs_edgerow_fill_end, and the fills after it hold no row. */
struct hs_edgerow_fill {
	struct hs_edgerow_group *groups;        /* all of the index's */
	uint32_t first;         /* the fill's first group */
	uint32_t group;         /* the open group */
	unsigned k;             /* starts in it so far */
	uint64_t at;            /* the bytes of the rows filled so far */
	uint64_t start[HS_EDGEROW_GROUP];       /* the open group's */
	/* its wide groups (their starts from the fill's first row) */
	uint32_t *wide_group, *wide;
	uint32_t nwide;
	size_t capgroup, capwide;       /* (hs_vector_grow) */
};

/* The groups of an index of n rows (64-byte aligned), or NULL. */
struct hs_edgerow_group *hs_edgerow_groups_alloc(uint32_t n);
/* A fill from row first_row (a multiple of HS_EDGEROW_GROUP) on. */
void hs_edgerow_fill_init(struct hs_edgerow_fill *f, struct hs_edgerow_group *groups,
			  uint32_t first_row);
/* The next row is `bytes` long; false when memory ran out. */
bool hs_edgerow_fill_row(struct hs_edgerow_fill *f, uint64_t bytes);
/* The last fill: row n starts at the end of the rows; false when memory
 * ran out. */
bool hs_edgerow_fill_end(struct hs_edgerow_fill *f);
void hs_edgerow_fill_fini(struct hs_edgerow_fill *f);
/* The index of *fills[0 .. nfills) (in row order, the last ended; their
 * rows' bytes in all below 2^32), whose groups it takes; the fills are
 * emptied.  False when memory ran out (the groups are then freed too). */
bool hs_edgerow_index_join(struct hs_edgerow_index *ix, struct hs_edgerow_group *groups,
			   struct hs_edgerow_fill *const *fills, size_t nfills);

/* A row being read: its bytes [p, end) and the id before the next edge. */
struct hs_edges {
	const uint8_t *p, *end;
	uint32_t prev;
};

static inline struct hs_edges hs_edgerow(const uint8_t *rows,
					  const struct hs_edgerow_index *ix, uint32_t node)
{
	return (struct hs_edges){rows + hs_edgerow_start(ix, node),
				 rows + hs_edgerow_start(ix, node + 1), node};
}

/* The next edge of the row into *e; false at its end. */
static inline bool hs_edges_next(struct hs_edges *it, uint32_t *e)
{
	if (it->p >= it->end)
		return false;
	*e = hs_edgerow_get(&it->p, &it->prev);
	return true;
}

/* Rows from plain arrays: row v (v < n) is adj[off[v] .. off[v + 1]),
 * edges with flags as above.  Sets *ix (where they start) and *rows
 * (malloc'd); false when memory ran out or the rows pass 2^32 bytes. */
bool hs_edgerow_encode(const uint32_t *off, const uint32_t *adj, uint32_t n,
		       struct hs_edgerow_index *ix, uint8_t **rows);

#endif
