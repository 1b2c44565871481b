/* CPython's objects in the heap: which blocks hold one, of which type.
 *
 * A Python object starts with ob_refcnt and ob_type; ob_type points to a
 * type object, whose own ob_type is `type` (PyType_Type, an exported
 * symbol of the interpreter) or a metaclass of it.  A block holds an
 * object at an offset fixed by its type (the pre-header, CPython's
 * _PyType_PreHeaderSize):
 *
 *   3.8-3.10  16 (the GC head) for types with Py_TPFLAGS_HAVE_GC, else 0
 *   3.11      that, plus 16 for Py_TPFLAGS_MANAGED_DICT (dict, values)
 *   3.12+     GC head, plus 16 for MANAGED_DICT or MANAGED_WEAKREF
 *
 * So a used block (pymalloc's or malloc's) holds an object when, at the
 * offset its candidate type gives, ob_refcnt is a count (1 to 2^40),
 * ob_type is a ready type object (Py_TPFLAGS_READY, tp_basicsize 16 to
 * 16 MiB, a readable tp_name), and the type's basic size fits the block.
 * The type's name is tp_name ("dict", "collections.OrderedDict"); a class
 * defined in Python (Py_TPFLAGS_HEAPTYPE) is named with its module,
 * __module__ in its dict ("__main__.Order"), on 3.11 and 3.12 whose dict
 * and string layouts this reads.
 *
 * The variable parts of some containers are blocks of their own, named
 * for their owner: a dict's keys table and values array ("dict (keys)",
 * "dict (values)"), a list's item array ("list (items)") and a set's hash
 * table ("set (table)").
 *
 * Type objects in the heap are objects of type `type` (or a metaclass).
 * Everything read is checked: a type pointer outside the core, or a name
 * that is not a string, makes the block not an object.
 */
#ifndef HS_PYTHON_H
#define HS_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/error.h"
#include "src/log.h"

#define HS_PY_NONE UINT32_MAX

struct hs_pytype {
	uint64_t addr;          /* the type object; 0 for a part */
	char *name;             /* "dict", "__main__.Order", "list (items)" */
	uint64_t flags, basicsize, itemsize;
	uint64_t count, bytes;  /* blocks, their usable bytes */
	/* a part: its kind; for values, the owner's type object (its shared
	 * keys name the values) */
	uint8_t part;
	uint64_t owner;
};

enum { HS_PY_PART_KEYS = 1, HS_PY_PART_VALUES, HS_PY_PART_ITEMS, HS_PY_PART_OTHER };

struct hs_pyobjects {
	unsigned minor;         /* 3.minor */
	struct hs_pytype *types;
	size_t ntypes;
	/* per allocation: HS_PY_NONE, or the type's index << 6, then for an
	 * object where it starts (bits 0-1; 0: +0, 1: +16, 2: +32) and the
	 * words of the block past its end (bits 4-5, HS_PY_TAIL), or for a
	 * value object HS_PY_VALUE and its form (bits 4-5); for a part
	 * HS_PY_PART and the words before its contents (bits 0-2; 3.11's
	 * values prefix: bytes that are not references).  Read with
	 * hs_py_kind: with fewer than HS_PY_NARROW_TYPES types, the same in
	 * 16 bits (kind16, 0xffff for none; kind is then NULL). */
	uint32_t *kind;
	uint16_t *kind16;
	uint64_t objects, parts;        /* blocks */
	/* list item arrays: the words past the list's ob_size (what it
	 * held before it shrank: list.pop() leaves its slot as it was),
	 * by block */
	struct hs_py_tail {
		uint32_t id, words;
	} *tails;
	size_t ntails;
};

enum { HS_PY_VALUE = 4, HS_PY_PART = 8, HS_PY_TAIL_SHIFT = 4, HS_PY_TYPE_SHIFT = 6 };
/* Below this many types, every kind but 0xffff fits in 16 bits */
enum { HS_PY_NARROW_TYPES = (1 << (16 - HS_PY_TYPE_SHIFT)) - 1 };

/* Block id's kind (HS_PY_NONE: no object's block). */
static inline uint32_t hs_py_kind(const struct hs_pyobjects *py, uint32_t id)
{
	if (py->kind16) {
		uint16_t k = py->kind16[id];
		return k == UINT16_MAX ? HS_PY_NONE : k;
	}
	return py->kind[id];
}

/* The forms of a value object: an object of one of the interpreter's own
 * types whose words past ob_type hold no reference, its value only (a
 * str's characters, an int's digits, a float, a bytes' bytes).  Stale
 * words there (a str's state padding, a short string's bytes past its
 * NUL, the allocator's rounding) would otherwise hold whatever they
 * happen to point to.  Each is taken for one only when its size fields
 * agree with its block (analyzers/python.c, value_form).
 *
 *   HS_PY_VALUE_ALL        int, float, bytes; a compact ASCII str from 3.12
 *   HS_PY_VALUE_STR_ASCII  a compact ASCII str up to 3.11: its wstr
 *                          pointer (word 5) is one
 *   HS_PY_VALUE_STR        a compact str of other characters: its utf8
 *                          pointer (word 7 up to 3.11, 6 from 3.12) and,
 *                          up to 3.11, wstr (word 5) are
 *   HS_PY_VALUE_STR_HEAD   a str whose characters live elsewhere (a
 *                          legacy string): only length, hash and state
 *                          (words 2-4) are left out */
enum {
	HS_PY_VALUE_ALL,
	HS_PY_VALUE_STR_ASCII,
	HS_PY_VALUE_STR,
	HS_PY_VALUE_STR_HEAD,
};

static inline uint32_t hs_py_type_index(uint32_t kind)
{
	return kind >> HS_PY_TYPE_SHIFT;
}
/* Where the object starts in its block (0 for a part). */
static inline uint64_t hs_py_offset(uint32_t kind)
{
	return kind & HS_PY_PART ? 0 : (kind & 3) * 16;
}

/* Whether v points to the start of the CPython object that block a (of
 * id `id`) holds. */
static inline bool hs_py_is_start(const struct hs_pyobjects *py,
				  const struct hs_alloc *a, uint32_t id, uint64_t v)
{
	uint32_t k = hs_py_kind(py, id);
	return k != HS_PY_NONE && !(k & HS_PY_PART) && a->addr + hs_py_offset(k) == v;
}

/* Whether v points into the words that block a (of id `id`) keeps before
 * the CPython object it holds (the GC head, and 3.11's pre-header), past
 * the block's first byte.  Nothing of CPython's points there (the
 * collector's own links, to a GC head's start, are skipped where they
 * are: hs_graph_skip), so such a value is no reference: a C string's
 * last bytes over a stale pointer's ("<H\0" of a ctypes format over
 * 0x7fd84d00xxxx) land there as readily as anywhere. */
static inline bool hs_py_in_head(const struct hs_pyobjects *py,
				 const struct hs_alloc *a, uint32_t id, uint64_t v)
{
	uint32_t k = hs_py_kind(py, id);
	return k != HS_PY_NONE && !(k & HS_PY_PART) && v > a->addr &&
	       v < a->addr + hs_py_offset(k);
}

/* Py_TPFLAGS_HAVE_GC: the type's objects have a GC head before them */
#define HS_PY_HAVE_GC (1u << 14)

/* Words of a block that are not references: a GC head (16 bytes: the
 * collector's links to its neighbours in a generation's list), or a
 * values array's prefix: words [at, at + n), n 0 when none; and the
 * block's last tail words, past the end of the object it holds.
 *
 * An object's end is its type's size: tp_basicsize, plus ob_size times
 * tp_itemsize for a type whose objects vary (a tuple, an int, a type).
 * The words past it are the allocator's rounding, left as the block's
 * previous owner wrote them: stale pointers that would keep garbage
 * alive.  Only rounding is left out (up to 3 words: pymalloc rounds to
 * 16 bytes, malloc to 16 plus its 8-byte header); a block longer than
 * that past its object's end holds something else there (a C type's own
 * trailing data), and is scanned whole.  A value object (above) leaves
 * out its value and its rounding together.  A list's item array is
 * scanned up to the list's length: the slots past it keep what they
 * held. */
struct hs_py_skip {
	uint64_t at, n, tail;
};

/* Is word k of a block of nwords words no reference? */
static inline bool hs_py_skip_word(struct hs_py_skip s, uint64_t k, uint64_t nwords)
{
	return k - s.at < s.n || k + s.tail >= nwords;
}
static inline uint64_t hs_py_part_tail(const struct hs_pyobjects *py, uint32_t id)
{
	size_t lo = 0, hi = py->ntails;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (py->tails[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < py->ntails && py->tails[lo].id == id ? py->tails[lo].words : 0;
}
/* The words of a value object's block that hold no reference: words
 * [at, at + n) and from word `from` on. */
static inline struct hs_py_skip hs_py_value_skip(unsigned minor, unsigned form,
						 uint64_t nwords)
{
	uint64_t at = 2, n = 3, from;
	switch (form) {
	case HS_PY_VALUE_ALL:
		at = n = 0;
		from = 2;
		break;
	case HS_PY_VALUE_STR_ASCII:
		from = 6;
		break;
	case HS_PY_VALUE_STR:
		from = minor <= 11 ? 9 : 7;
		break;
	default:
		from = nwords;
		break;
	}
	return (struct hs_py_skip){at, n, nwords > from ? nwords - from : 0};
}

/* nwords: the block's size in words */
static inline struct hs_py_skip hs_py_skip_of(const struct hs_pyobjects *py,
					      uint32_t id, uint64_t nwords)
{
	uint32_t k = hs_py_kind(py, id);
	if (k == HS_PY_NONE)
		return (struct hs_py_skip){0, 0, 0};
	if (k & HS_PY_PART)
		return (struct hs_py_skip){0, k & 7, hs_py_part_tail(py, id)};
	if (k & HS_PY_VALUE)
		return hs_py_value_skip(py->minor, (k >> HS_PY_TAIL_SHIFT) & 3, nwords);
	const struct hs_pytype *t = &py->types[hs_py_type_index(k)];
	uint64_t tail = (k >> HS_PY_TAIL_SHIFT) & 3;
	if (!hs_py_offset(k) || !(t->flags & HS_PY_HAVE_GC))
		return (struct hs_py_skip){0, 0, tail};
	return (struct hs_py_skip){hs_py_offset(k) / 8 - 2, 2, tail};
}

/* The objects of the heap's used blocks; *ret NULL when the program has
 * no CPython (or its type `type` cannot be found).  narrow_max (0: none)
 * lowers the number of types below which the kinds take 16 bits (the
 * tests compare the two forms).  With nthreads >= 2, the blocks are
 * classified in two halves at once; the result is the same. */
struct hs_error *hs_python_objects(const struct hs_core *core,
				   struct hs_dwarf *dw,
				   const struct hs_heap *heap, uint32_t narrow_max,
				   unsigned nthreads, struct hs_log *log,
				   struct hs_pyobjects **ret);
void hs_python_destroy(struct hs_pyobjects *p);

/* For redaction (analyzers/redact.h): reads again, through the core's
 * trace, what the objects' types and names need (each type object's
 * fields, its name, its module's name), and marks each object's count and
 * type words as read (and the ob_size of a varying object or a list:
 * what of them the graph scans), so that a redacted core types and scans
 * them the same.  The contents of the objects stay out. */
void hs_python_touch(const struct hs_pyobjects *py, const struct hs_core *core,
		     struct hs_dwarf *dw, const struct hs_heap *heap);

/* What the word at offset of allocation id is, when the block is a
 * dict's keys table, an instance's values (3.11) or a list's items:
 * "['name']" (a str key), "[42]" (an int key, an item's index), ".name"
 * (an attribute); NULL otherwise.
 * Malloc'ed. */
char *hs_python_field(const struct hs_pyobjects *py, const struct hs_core *core,
		      const struct hs_heap *heap, uint32_t id, uint64_t offset);

/* CPython's frame stacks (3.11+).  A thread's frames live in chunks of
 * anonymous memory of their own (_PyStackChunk: previous chunk, size,
 * the top saved when a newer chunk was pushed, then the words), pointed
 * to by the thread's state (datastack_chunk, datastack_top,
 * datastack_limit, three words in a row).  Above the top are the words
 * of calls that have returned: stale.  A thread state is found by those
 * three words alone, where they agree (the limit is the chunk plus its
 * size, the top between its first word and the limit): in the
 * interpreter's writable data (3.11+ keep the main thread's state in
 * _PyRuntime) and in malloc's blocks of a thread state's size. */
struct hs_root_stack;   /* analyzers/roots.h: the roots options take them */
struct hs_error *hs_python_stacks(const struct hs_core *core,
				  struct hs_dwarf *dw,
				  const struct hs_heap *heap,
				  struct hs_root_stack **ret, size_t *count);

/* CPython's free lists of lists and dicts (3.11 to 3.13): in the main
 * interpreter's state (in _PyRuntime), an array of 80 pointers and the
 * count of those in use (numfree), the first numfree slots the freed
 * objects kept for reuse (reference count 0).  Taking one leaves its
 * pointer in the slot above the count: the object, live since or leaked
 * since, is pointed to by a dead word.  The arrays are found in the
 * interpreter's writable data by their shape: the first slot an object
 * of the type, every slot null or a block's address, the count at its
 * place for the version (3.11, 3.13: after its array, and the keys'
 * array after the dicts' count; 3.12: the dicts' array, the keys', then
 * both counts), at least 1 and at most the number of leading slots
 * whose objects are of the type with a reference count of 0 (a keys
 * table: a block).  An empty list gives no such evidence and is left
 * alone.  The slots above each count go to *ret (stale roots). */
struct hs_root_stale;   /* analyzers/roots.h */
struct hs_error *hs_python_free_lists(const struct hs_core *core,
				      struct hs_dwarf *dw,
				      const struct hs_heap *heap,
				      struct hs_root_stale **ret, size_t *count);

/* Reference counts as evidence.  Every owning reference to an object is a
 * pointer to its start somewhere: in a block, a root's memory (stacks,
 * globals, unexplained memory) or a register.  An object whose ob_refcnt
 * is larger than the pointers to it found there is held from outside the
 * heap: a reference that C code took and never gave back (or one kept
 * where heapsift does not look).  Pointers are counted in the used
 * blocks' words (less the words that are no references: GC heads) and in
 * every root, stale ones included: a count too high only hides evidence.
 * Immortal objects (3.12+, a count of 2^32 - 1 and more) are left out. */
struct hs_py_outside {
	uint32_t id;            /* the block */
	uint32_t found;         /* pointers found */
	uint64_t refcnt;
};
struct hs_pyrefs {
	struct hs_py_outside *v;        /* by address */
	size_t n;
	uint64_t checked;       /* objects looked at */
};
struct hs_graph;
struct hs_roots;
/* starts: the graph's pystarts (counted by its scan, used up here), or
 * NULL: the blocks are scanned for them here. */
struct hs_error *hs_python_refs(const struct hs_pyobjects *py,
				const struct hs_core *core,
				const struct hs_heap *heap,
				const struct hs_graph *graph,
				const struct hs_roots *roots,
				uint32_t *starts,
				struct hs_pyrefs **ret);
void hs_pyrefs_destroy(struct hs_pyrefs *r);

#endif
