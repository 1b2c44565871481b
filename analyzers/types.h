/* What each allocation is.
 *
 * 1. C++ dynamic types: a block whose first word points into a vtable
 *    (a _ZTV symbol of any module, offset-to-top 0) is an instance of that
 *    class.  Where no symbol covers the vtable, its RTTI names the class:
 *    vptr[-1] is a type_info whose vptr is one of libstdc++'s
 *    __cxxabiv1::__*class_type_info vtables and whose second word is the
 *    mangled name.
 * 2. DWARF propagation: typed roots (global, static and TLS variables)
 *    type the blocks their pointer members point to, and so on through
 *    the whole graph, with a worklist.  A pointer to a block's start gives
 *    the block the pointee type; a pointer to element k of an array gives
 *    it too.  A block that holds k >= 2 whole elements is an array T[k].
 * 3. Typed interior pointers: a typed pointer T * (T a struct, class or
 *    union) k bytes into a block, with a whole T from there to the block's
 *    end, holds the block (the typed rule of rules.h: `holds` lists them
 *    for the mark) and the T there is scanned for pointers in turn; the
 *    block itself is not given the type T (it starts with something else).
 *    A typed T * 8 bytes into an untyped block whose first word n says
 *    that n T's fill the rest (the size a new T[n] gets: the Itanium C++
 *    ABI's array cookie, the newarray rule) types it T[n], elements from +8.
 * 4. Slabs: a block named by the vptr at its start that has room for at
 *    least four objects of that class but holds them in less than half
 *    its bytes is a pool's slab, "slab of T" (its own type, not a T).
 * 5. Conflicts: a vtable type beats a DWARF guess; a larger type beats a
 *    smaller one; two different types of one size are a conflict, counted
 *    and reported, and the first stays.
 * 6. Leaked blocks (hs_types_infer, after the mark): a leaked block that
 *    1-5 left untyped gets a type from its contents.  A struct or class
 *    of the program's DWARF (formats/dwtypes' catalogue) is a candidate
 *    for a block when it has pointer members, its size rounds to the
 *    block's size class (hs_heap_size_class), its pointer members hold
 *    null, a mapped address, or a pointer to a used block, and none of
 *    its scalar members holds a heap address.  When candidates of the
 *    executable or of the program's own libraries remain, those of the C
 *    runtime (libc, ld.so, libstdc++, ...) are dropped, and a runtime
 *    type is never taken as a guess.  Then, over the
 *    leaked blocks together, a candidate goes whose pointer member points
 *    to the start of a block none of whose candidates is the member's
 *    pointee type (arc consistency, to a fixpoint).  A block left with one
 *    candidate takes it: plainly when evidence supports it (a non-null
 *    pointer member to a block of a fitting type, or a holder with one
 *    candidate whose member of this type points to it), as a guess
 *    otherwise ("struct session?").  A block left with several stays
 *    untyped.  Inferred types then propagate as in 2, to leaked untyped
 *    blocks only, with their holder's confidence.  Never overrides a type
 *    from 1-5.
 */
#ifndef HS_TYPES_H
#define HS_TYPES_H

#include "analyzers/graph.h"
#include "analyzers/alloc/heap.h"
#include "analyzers/mark.h"
#include "analyzers/python.h"
#include "formats/dwtypes.h"
#include "src/rankset.h"

#define HS_NO_TYPE UINT32_MAX

/* How a leaked block's type was inferred (hs_types.inferred). */
enum {
	HS_INFER_NONE = 0,
	HS_INFER_SURE = 1,      /* one candidate, and evidence for it */
	HS_INFER_GUESS = 2,     /* one candidate, no evidence: "T?" */
	HS_INFER_LEVEL = 3,     /* mask of the two above */
	HS_INFER_ONE = 4,       /* chosen as one object (not an array) */
};

struct hs_types {
	struct hs_dtypes *reg;
	uint32_t nallocs;
	/* Per allocation, while the types are computed: its registry index
	 * plus one in 16 bits (type_of16; 0: untyped) while every index set
	 * is below narrow_max (65,535; lower for the tests), else the index
	 * itself (type_of; HS_NO_TYPE when untyped), which replaces type_of16
	 * when the first index that does not fit is set.  hs_types_pack then
	 * keeps the typed allocations alone (typed_set) and their indices by
	 * rank (typed_type; typed_type16 instead when every index fits in 16
	 * bits, as they do unless a program has 65,535 types; typed_type8,
	 * an index into typed_dense, when at most 255 distinct types are in
	 * use, as in most C programs' heaps), and frees these.  Read them
	 * with hs_types_index. */
	uint16_t *type_of16;
	uint32_t *type_of;
	uint32_t narrow_max;
	struct hs_rankset typed_set;
	uint32_t *typed_type;
	uint16_t *typed_type16;
	uint8_t *typed_type8;
	uint32_t typed_dense[255];      /* typed_type8's registry indexes */
	bool packed;
	uint64_t typed;         /* allocations with a type */
	uint64_t from_vtable, from_rtti, from_dwarf;
	uint64_t from_python;   /* CPython objects (analyzers/python.h) */
	uint64_t conflicts;
	uint64_t slabs;         /* blocks named "slab of T" */
	char *conflict_example;
	size_t nvtables;
	size_t nvariables;
	/* blocks holding several objects of a vtable type, by id: for those
	 * the count is how many elements start with the vptr, not size /
	 * sizeof (a class with only a vptr is 8 bytes in a 24-byte block) */
	struct hs_types_count {
		uint32_t id, count;
	} *varrays;
	size_t nvarrays, capvarrays;
	/* typed pointers into blocks' interiors that the typed rule takes for
	 * start pointers: the allocation holding the pointer (HS_NO_ALLOC for
	 * a root: a variable), the block, the pointer's value */
	struct hs_types_hold {
		uint32_t holder, target;
		uint64_t value;
	} *holds;
	size_t nholds, capholds;
	/* blocks that are a new T[n] with its count before the elements (the
	 * Itanium C++ ABI's array cookie): one bit each; n is the block's
	 * first word, read from core */
	uint64_t *cookie;
	const struct hs_core *core;
	/* per allocation: HS_INFER_*, NULL before hs_types_infer (and once
	 * packed when it inferred nothing); once packed, by rank in
	 * inferred_set (the blocks inferred).  Read it with
	 * hs_types_infer_flags. */
	uint8_t *inferred;
	struct hs_rankset inferred_set;
	uint64_t inferred_sure, inferred_guess;   /* blocks */
	uint64_t infer_candidates;  /* leaked untyped blocks looked at */
	/* the work done, to show how it grows with the heap (--stats): typed
	 * pointers followed by the propagations (the inference's too), and
	 * the inference's checks of a candidate against a block */
	uint64_t followed, infer_checks;
};

/* narrow_max: 0 for the default (65,535), or a lower bound on the
 * registry indices kept in 16 bits while computing, and on the distinct
 * types hs_types_pack keeps in a byte a block (the tests' way to widen
 * the tables: the types must come out the same). */
struct hs_error *hs_types_compute(const struct hs_core *core,
				  struct hs_dwarf *dw,
				  const struct hs_heap *heap,
				  const struct hs_graph *graph,
				  const struct hs_pyobjects *py,
				  uint32_t narrow_max,
				  struct hs_log *log, struct hs_types **ret);
void hs_types_destroy(struct hs_types *t);

/* Rule 6: types for the leaked blocks (reach: per allocation, enum
 * hs_reach) that are still untyped.  Before hs_types_pack.  With
 * nthreads of 2 or more, the candidates of each block by the block alone
 * are found on two threads (the types are the same). */
struct hs_error *hs_types_infer(struct hs_types *t, const struct hs_core *core,
				struct hs_dwarf *dw, const struct hs_heap *heap,
				const struct hs_graph *graph, const uint8_t *reach,
				unsigned nthreads, struct hs_log *log);

/* Once the types are final (after hs_types_infer, or when there is no
 * inference): keeps the types of the typed allocations alone, and the
 * inference's flags of the inferred ones (on the bench core, 4 bytes and
 * 1 byte per allocation become 1.3 and 0.3: the indices take 16 bits
 * when every one fits).  On failure (out of memory) the types stay as
 * they were. */
struct hs_error *hs_types_pack(struct hs_types *t);

/* While computing: allocation id's registry index, HS_NO_TYPE when
 * untyped. */
static inline uint32_t hs_types_cur(const struct hs_types *t, uint32_t id)
{
	if (t->type_of16)
		return (uint32_t)t->type_of16[id] - 1;  /* 0: HS_NO_TYPE */
	return t->type_of[id];
}

/* Allocation id's registry index, HS_NO_TYPE when untyped. */
static inline uint32_t hs_types_index(const struct hs_types *t, uint32_t id)
{
	if (!t->packed)
		return hs_types_cur(t, id);
	uint32_t k = hs_rankset_index(&t->typed_set, id);
	if (k == HS_RANK_NONE)
		return HS_NO_TYPE;
	if (t->typed_type8)
		return t->typed_dense[t->typed_type8[k]];
	return t->typed_type16 ? t->typed_type16[k] : t->typed_type[k];
}

/* Allocation id's HS_INFER_* flags (HS_INFER_NONE when not inferred). */
static inline uint8_t hs_types_infer_flags(const struct hs_types *t, uint32_t id)
{
	if (!t->inferred)
		return HS_INFER_NONE;
	if (!t->packed)
		return t->inferred[id];
	uint32_t k = hs_rankset_index(&t->inferred_set, id);
	return k == HS_RANK_NONE ? HS_INFER_NONE : t->inferred[k];
}

/* Whether allocation id's type is an inferred guess (shown as "T?"). */
static inline bool hs_types_guessed(const struct hs_types *t, uint32_t id)
{
	return t && (hs_types_infer_flags(t, id) & HS_INFER_LEVEL) == HS_INFER_GUESS;
}

/* Whether allocation id's type was inferred from its contents (rule 6). */
static inline bool hs_types_inferred(const struct hs_types *t, uint32_t id)
{
	return t && hs_types_infer_flags(t, id) != HS_INFER_NONE;
}

/* The type of allocation id, NULL when unknown. */
static inline struct hs_dtype *hs_types_of(const struct hs_types *t, uint32_t id)
{
	uint32_t k = t ? hs_types_index(t, id) : HS_NO_TYPE;
	return k != HS_NO_TYPE ? t->reg->v[k] : NULL;
}

/* Where allocation id's first element starts: 8 for a new T[n] with its
 * count before the elements, else 0. */
static inline uint64_t hs_types_start(const struct hs_types *t, uint32_t id)
{
	return t && t->cookie && (t->cookie[id / 64] >> (id % 64) & 1) ? 8 : 0;
}

/* How many elements of its type allocation id holds (1 when untyped). */
uint64_t hs_types_count(const struct hs_types *t, const struct hs_heap *heap,
			uint32_t id);

/* "struct buffer[4]", "shop::Cart", "struct session?" (a guess), or NULL; buf of at least 600 bytes. */
const char *hs_types_name(const struct hs_types *t, const struct hs_heap *heap,
			  uint32_t id, char *buf, size_t len);

#endif
