/* Header rules: when a pointer into a block's interior holds the block as
 * a pointer to its start would.
 *
 * Programs point past a header of their own: a length before the data
 * (sqlite), an element count before a C++ array (new T[n]), a string rep
 * before the characters (pre-C++11 libstdc++), the second base of a class
 * with multiple inheritance.  These are memcheck's four heuristics
 * (valgrind's manual, --leak-check-heuristics), with memcheck's tests on
 * the block's first words.  memcheck knows each block's requested size; a
 * core records only the usable size, so where memcheck compares with the
 * request, heapsift accepts any request that the usable size could have
 * served (the allocator's rounding: 16 bytes for glibc, the size class's
 * spacing for jemalloc).
 *
 *   stdstring            at +24: {length, capacity, refcount} then the
 *                        characters; 24 + capacity + 1 is the request and
 *                        length <= capacity
 *   length64             at +8: the first word is the request less 8, > 0
 *   newarray             at +8: the first word n > 0 divides the request
 *                        less 8 (the elements)
 *   multipleinheritance  at an aligned offset: the word there and the
 *                        block's first word both point to vtables (at least
 *                        two pointers into executable file mappings among
 *                        the first 20 words, the rest null)
 *
 * a header that says its own length, as redis's sds strings do:
 *
 *   sds                  at +1, +3, +5, +9 or +17: the byte before the
 *                        pointer is a flags byte whose low 3 bits name the
 *                        header that long (sdshdr5, 8, 16, 32, 64); for
 *                        8 to 64 the header's len <= alloc, and header +
 *                        alloc + the terminating NUL fit the block
 *
 * a Lua thread past the program's extra space:
 *
 *   luastate             at +8: Lua 5.3 and 5.4 (lstate.c) put a pointer's
 *                        worth of the program's own bytes (LUA_EXTRASPACE)
 *                        before each thread's lua_State, in the block of
 *                        the thread (LX) or of the main thread and the
 *                        global state (LG), and every lua_State * points
 *                        past them.  The lua_State there starts with its
 *                        GC header {next, tt, marked}: tt is the thread
 *                        tag (8), and its top of stack and global state
 *                        (its third and fourth words) point to mapped
 *                        memory, 8-byte aligned
 *
 * a CPython object past its block's start:
 *
 *   pyobject             at +16 or +32: the block holds a Python object
 *                        there (analyzers/python.h: past its GC head, and
 *                        on 3.11 the managed dict's words); every
 *                        reference to an object points to it.  And an
 *                        instance's attribute values (3.11), pointed to
 *                        past their prefix
 *
 * and one learned from the heap itself:
 *
 *   typed                a pointer whose DWARF type is T * (known through
 *                        type propagation: analyzers/types.h) that lands k
 *                        bytes into a block, with a T fitting from k to the
 *                        block's end (CPython's PyObject * past the GC
 *                        header); the types pass gives the exact pointer
 *                        values (hs_rules_add_typed)
 *
 *   learned              for the blocks of one usable size that no start
 *                        pointer from a block holds, an offset that
 *                        pointers into them use for at least half of them
 *                        (at most four offsets a size, at least 8 such
 *                        blocks): a program's own convention, such as
 *                        sqlite's page cache (each page's header sits after
 *                        the page), sds strings or lua's lua_State.  The
 *                        graph scan counts the interior pointers per (size,
 *                        offset) and decides (hs_rules_learn); the evidence
 *                        is kept for info and leaks.
 */
#ifndef HS_RULES_H
#define HS_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "src/hashtab.h"
#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/error.h"
#include "analyzers/python.h"
#include "analyzers/files.h"

enum hs_rule {
	HS_RULE_NONE,
	HS_RULE_STDSTRING,
	HS_RULE_LENGTH64,
	HS_RULE_NEWARRAY,
	HS_RULE_MULTIPLE_INHERITANCE,
	HS_RULE_SDS,
	HS_RULE_PYOBJECT,
	HS_RULE_LEARNED,
	HS_RULE_TYPED,
	HS_RULE_LUASTATE,
	HS_RULE_COUNT
};
extern const char *const hs_rule_names[HS_RULE_COUNT];

struct hs_exec_range {
	uint64_t lo, hi;
};

enum { HS_LEARN_MAX_OFFSETS = 4, HS_LEARN_MAX_OFFSET = 1 << 20 };

/* A learned convention: pointers into blocks of `size` bytes at these
 * offsets hold them; pointers[i] pointers used off[i]; blocks of that size. */
struct hs_learned {
	uint64_t size;
	uint32_t off[HS_LEARN_MAX_OFFSETS];
	uint64_t pointers[HS_LEARN_MAX_OFFSETS];
	uint8_t noff;
	uint64_t blocks;
};

/* Counts of interior pointers per (size, offset): keys size << 20 |
 * offset, values counts (src/hashtab.h); it stops taking new keys when
 * full (counts of keys it has go on). */
HS_HASH_MAP(hs_offstats, uint32_t)
/* Adds one pointer at offset off (0 < off < HS_LEARN_MAX_OFFSET) into a
 * block of usable size `size`. */
struct hs_error *hs_offstats_add(struct hs_offstats *s, uint64_t size,
				 uint64_t off);

struct hs_rules {
	const struct hs_core *core;
	const struct hs_heap *heap;
	unsigned enabled;       /* 1 << rule */
	/* the modules' executable segments, sorted: a core leaves text out
	 * (gcore dumps no read-only file mapping) */
	struct hs_exec_range *exec;
	size_t nexec;
	struct hs_learned *learned;     /* sorted by size */
	size_t nlearned;
	/* pointer values a typed pointer holds (the typed rule), sorted and
	 * unique once hs_rules_typed_done has run */
	uint64_t *typed;
	size_t ntyped, captyped;
	/* CPython's objects (the pyobject rule), or NULL */
	const struct hs_pyobjects *py;
	/* glibc's stdio streams (analyzers/files.h): their list links are
	 * not references; NULL: none */
	const struct hs_files *files;
	/* per allocation, what the rules that read a block's first words
	 * say about it (0: not read yet), kept from the first pointer into
	 * its interior; NULL: not kept (hs_rules_drop_summary) */
	uint8_t *summary;
};

/* Frees the blocks' summaries (1 byte per allocation) once the scan and
 * the mark are done; later checks read the blocks' first words again. */
void hs_rules_drop_summary(struct hs_rules *r);

/* Adds v, a typed pointer's value into a block's interior, to the typed
 * rule's values; hs_rules_typed_done sorts them before the next check. */
struct hs_error *hs_rules_add_typed(struct hs_rules *r, uint64_t v);
void hs_rules_typed_done(struct hs_rules *r);

/* Decides the learned offsets from the counts the scan's parts made; held
 * (one bit per block) marks the blocks a start pointer from a block holds,
 * which do not count among the blocks of their size. */
struct hs_error *hs_rules_learn(struct hs_rules *r,
				const struct hs_offstats *parts, size_t nparts,
				const uint64_t *held);

/* The learned convention for blocks of this size, or NULL. */
const struct hs_learned *hs_rules_learned(const struct hs_rules *r,
					  uint64_t size);

/* Sets up r; the modules' executable ranges come from their ELF files (dw
 * may be NULL: then from the core's executable file-backed segments). */
struct hs_error *hs_rules_init(struct hs_rules *r, const struct hs_core *core,
			       const struct hs_heap *heap, struct hs_dwarf *dw,
			       unsigned enabled);
void hs_rules_fini(struct hs_rules *r);

/* All rules on; names turns off (names of hs_rule_names, comma-separated,
 * "all" for every rule).  False when a name is unknown. */
bool hs_rules_parse_off(const char *names, unsigned *enabled);
#define HS_RULES_ALL (((1u << HS_RULE_COUNT) - 1) & ~1u)

/* The rule that makes the pointer value v, inside allocation a but not at
 * its start, hold a; HS_RULE_NONE when none does. */
enum hs_rule hs_rules_check(const struct hs_rules *r, const struct hs_alloc *a,
			    uint64_t v);

#endif
