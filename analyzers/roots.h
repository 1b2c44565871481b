/* Named roots of the conservative mark: where a running program can hold a
 * pointer that the heap does not explain.
 *
 *   register     every general register of every thread
 *   stack        each thread's live stack, from its stack pointer (less the
 *                128-byte red zone) to the top of its mapping, one root per
 *                unwound frame
 *   global       writable segments of every module (data, bss), one root
 *                per data symbol, the gaps named module+offset
 *   tls          each thread's static TLS block (one root per TLS variable
 *                where its module's block can be located), TCB and dtv
 *   unexplained  writable memory nothing else explains (an application's
 *                own mmap'ed pools): a root so that it cannot cause false
 *                leaks; can be turned off
 *
 * Allocator state is never a root: every heap region (arena heaps, mmapped
 * chunks, main_arena, mp_) is cut out of every root range.
 */
#ifndef HS_ROOTS_H
#define HS_ROOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzers/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

enum hs_root_kind {
	HS_ROOT_REGISTER,
	HS_ROOT_STACK,
	HS_ROOT_GLOBAL,
	HS_ROOT_TLS,
	HS_ROOT_UNEXPLAINED,
	HS_ROOT_KIND_COUNT
};
extern const char *const hs_root_kind_names[HS_ROOT_KIND_COUNT];

struct hs_root {
	uint64_t start, end;    /* memory range; empty for a value root */
	uint64_t value;         /* a value root's pointer (a register; the
				 * dtv, which the TCB points 16 bytes into) */
	enum hs_root_kind kind;
	int32_t thread;         /* index into core->threads, or -1 */
	char *name;
};

struct hs_roots {
	struct hs_root *roots;
	size_t n, cap;
	uint64_t bytes[HS_ROOT_KIND_COUNT];
	bool unwound;           /* every thread's stack was split into frames */
};

struct hs_roots_options {
	bool unexplained;       /* include unexplained writable memory */
};

struct hs_error *hs_roots_build(const struct hs_core *core, struct hs_dwarf *dw,
				const struct hs_heap *heap,
				const struct hs_roots_options *opts,
				struct hs_log *log, struct hs_roots **ret);
void hs_roots_destroy(struct hs_roots *roots);

static inline bool hs_root_is_value(const struct hs_root *r)
{
	return r->start == r->end;
}

/* The root whose range holds addr, or NULL (binary search: roots of memory
 * are sorted by start and do not overlap; value roots come first). */
const struct hs_root *hs_roots_find(const struct hs_roots *roots, uint64_t addr);

#endif
