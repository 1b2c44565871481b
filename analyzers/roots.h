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
 *
 * Live words only (docs/roots.md): how each thread stopped decides which of
 * its registers and whether the 128 bytes below its stack pointer (the
 * red zone) can hold a live pointer.  A thread interrupted asynchronously in
 * user code (a fault; a signal or a stop outside a system call) may be
 * using all of them.  A thread stopped in or right after a system call
 * keeps only its callee-saved registers and the call's own arguments; a
 * thread stopped at a function's entry keeps its callee-saved and argument
 * registers.  The words this rule rejects are still roots, flagged stale:
 * the mark does not follow them, and says which blocks only they point to.
 */
#ifndef HS_ROOTS_H
#define HS_ROOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"
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
	bool stale;             /* a word the live rule rejects (a dead
				 * register, a red zone): not followed */
	uint64_t value;         /* a value root's pointer (a register; the
				 * dtv, which the TCB points 16 bytes into) */
	enum hs_root_kind kind;
	int32_t thread;         /* index into core->threads, or -1 */
	char *name;
};

enum hs_thread_stop {
	HS_STOP_ASYNC,          /* interrupted in user code: all words live */
	HS_STOP_SYSCALL,        /* in (or just out of) a system call */
	HS_STOP_CALL,           /* at a function's first instruction */
};
extern const char *const hs_thread_stop_names[];

struct hs_thread_state {
	enum hs_thread_stop stop;
	int64_t syscall;        /* HS_STOP_SYSCALL: its number, or -1 */
	const char *why;        /* the evidence, a static string */
};

/* How thread t (an index into core->threads) stopped, from the core: the
 * signal information, orig_rax, the instruction before the pc, whether the
 * pc is a function's entry. */
struct hs_thread_state hs_thread_state_of(const struct hs_core *core,
					   struct hs_dwarf *dw, size_t t);

struct hs_roots {
	struct hs_root *roots;
	struct hs_thread_state *threads;   /* per core thread */
	size_t nstale;          /* stale roots */
	size_t n, cap;
	uint64_t bytes[HS_ROOT_KIND_COUNT];
	bool unwound;           /* every thread's stack was split into frames */
};

struct hs_roots_options {
	bool unexplained;       /* include unexplained writable memory */
	bool conservative;      /* every register and red zone is live (no
				 * stale roots) */
	/* words outside the heap that hold no reference, though they point
	 * into it (libc's head of its list of stdio streams): no root */
	const uint64_t *not_refs;
	size_t nnot_refs;
	/* a runtime's own stacks in memory of their own (CPython's frame
	 * chunks: analyzers/python.h): [base, lo) a header, no root; [lo,
	 * top) live; [top, end) the words of returned calls, stale; roots
	 * of kind stack */
	const struct hs_root_stack *stacks;
	size_t nstacks;
	/* words outside the heap that held a reference once and hold none
	 * now (CPython's free-list slots above the list's count, which keep
	 * the objects taken from them): stale roots of kind global */
	const struct hs_root_stale *stale;
	size_t nstale;
};

struct hs_root_stale {
	uint64_t start, end;
	const char *what;       /* "python free list of lists" */
};

struct hs_root_stack {
	uint64_t base, lo, top, end;
	const char *what;       /* "python frames" */
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
