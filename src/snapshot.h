/* One core and everything derived from it.
 *
 * Each stage is computed once, lazily, when a command first asks for it,
 * and is immutable afterwards.  A failed stage remembers its error, so a
 * command that can do without it (info without a heap) still works.
 */
#ifndef HS_SNAPSHOT_H
#define HS_SNAPSHOT_H

#include <stdio.h>

#include "analyzers/files.h"
#include "analyzers/graph.h"
#include "analyzers/alloc/heap.h"
#include "analyzers/mark.h"
#include "analyzers/retain.h"
#include "analyzers/roots.h"
#include "analyzers/types.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/error.h"
#include "src/log.h"

struct hs_options {
	const char *exe;
	const char *debug_dir;
	const char *sysroot;
	bool no_system_debug;   /* only --debug-dir and the files' own DWARF */
	FILE *warnings;         /* where warnings go as they happen, or NULL */
	bool progress;          /* progress lines on the warnings stream */
	/* seconds a phase runs before its progress shows: 0 the default (1),
	 * negative at once */
	double progress_delay;
	bool no_unexplained;    /* no roots for unexplained writable memory */
	bool conservative_roots;/* every register and red zone is a root */
	const char *rules_off;  /* header rules turned off ("all", or names
				 * separated by commas), or NULL */
	unsigned threads;       /* worker threads (0: one per CPU) */
	/* The caller will ask for every module's debug info (info's list of
	 * modules; the types, which the mark needs): with more than one
	 * thread, it is loaded while the heap is walked (hs_dwarf_idle). */
	bool all_debug;
	/* The caller reads only the heap's totals, no block (info): the walk
	 * may count the blocks without keeping them (hs_walk_options).  No
	 * stage after the heap can be asked for. */
	bool totals_only;
	/* The allocator to walk, instead of the one the registry detects
	 * (analyzers/alloc/backend.h): a backend of the caller's own, such
	 * as the unit tests' toy allocator.  NULL: detect. */
	const struct hs_backend *backend;
	/* hs_snapshot_release_debug does nothing (for the tests: the output
	 * must be the same either way) */
	bool keep_debug;
	/* hs_types_compute's narrow_max (0: the default; for the tests) */
	uint32_t types_narrow_max;
	/* how `top`'s sharers split their predecessor passes between two
	 * threads (enum hs_sharers_split; 0: by the count of blocks; for
	 * the tests) */
	unsigned sharers_split;
	/* the types after the graph, never beside its scan (for the tests:
	 * the output must be the same either way) */
	bool types_after;
};

struct hs_snapshot {
	struct hs_options opts;
	struct hs_log log;
	struct hs_core *core;
	struct hs_dwarf *dwarf;
	struct hs_error *dwarf_err;
	struct hs_heap *heap;
	struct hs_error *heap_err;
	struct hs_roots *roots;
	struct hs_error *roots_err;
	struct hs_graph *graph;
	struct hs_error *graph_err;
	struct hs_rules rules;          /* header rules the graph applies */
	/* CPython's objects (analyzers/python.h), computed with the graph
	 * (its scan skips their GC heads); NULL: no CPython */
	struct hs_pyobjects *python;
	/* reference counts against the references found (hs_python_refs) */
	struct hs_pyrefs *pyrefs;
	struct hs_error *pyrefs_err;
	bool pyrefs_done;
	/* glibc's stdio streams (analyzers/files.h), found before the roots
	 * and the graph: their list links are no references */
	struct hs_files *files;
	struct hs_error *files_err;
	bool files_done;
	struct hs_mark *mark;
	struct hs_error *mark_err;
	/* the mark's first step, made beside the types once the graph is
	 * (see hs_snapshot_graph), when the mark was asked for first; NULL:
	 * not made (the mark then does it itself) */
	struct hs_mark_starts *mark_starts;
	bool mark_wanted;
	/* while the graph is made: when it was, and whether the types
	 * beside it ran on the caller's thread (--stats' graph time) */
	double t_graph_made;
	bool types_on_caller;
	pthread_t graph_thread;
	struct hs_retain *retain;
	struct hs_error *retain_err;
	struct hs_types *types;
	struct hs_error *types_err;
	bool types_done, infer_done;
	/* the types (without the inference) made beside the graph's scan,
	 * by whoever asks for the graph first (see hs_snapshot_graph):
	 * never, when the typed rule wants them, always */
	enum { HS_TYPES_AFTER, HS_TYPES_BESIDE_TYPED, HS_TYPES_BESIDE } types_beside;
	struct hs_log_held types_held;  /* their warnings, after the graph's */
	bool dwarf_done, heap_done, roots_done, graph_done, mark_done,
		retain_done;
	bool retain_order;  /* the dominator tree keeps its order (HS_WANT_ORDER) */
	/* seconds spent in each stage (for --stats) */
	double t_open, t_dwarf, t_heap, t_roots, t_graph, t_mark, t_retain,
		t_types;
};

double hs_now(void);

struct hs_error *hs_snapshot_open(const char *path,
				  const struct hs_options *opts,
				  struct hs_snapshot **ret);
/* The same for a core in memory (tests): data must outlive the snapshot;
 * name stands for the path in messages. */
struct hs_error *hs_snapshot_open_memory(const char *name, const void *data,
					 size_t size,
					 const struct hs_options *opts,
					 struct hs_snapshot **ret);
void hs_snapshot_destroy(struct hs_snapshot *snap);

/* What the verdicts read, as data: a view of the stages a command asked
 * hs_snapshot_results for (the objects belong to the snapshot; a stage not
 * asked for, or that failed, is NULL). */
struct hs_results {
	const struct hs_core *core;
	const struct hs_heap *heap;
	const struct hs_roots *roots;
	const struct hs_graph *graph;
	const struct hs_rules *rules;   /* the header rules the graph applied */
	const struct hs_mark *mark;
	const struct hs_retain *retain;
	const struct hs_types *types;
	struct hs_log *log;             /* the snapshot's: warnings of the output */
	unsigned threads;               /* worker threads the stages may use */
	unsigned sharers_split;         /* hs_options.sharers_split */
};

enum hs_want {
	HS_WANT_MARK = 1,       /* roots, graph and mark */
	HS_WANT_RETAIN = 3,     /* ... and the dominators */
	HS_WANT_TYPES = 4,      /* types, when they can be had: a failure
				 * leaves types NULL (names come untyped) */
	HS_WANT_LEAN = 8,       /* the caller reads nothing more from the
				 * modules' files: their debug info is let go
				 * (hs_snapshot_release_debug) before the
				 * dominators, the largest stage */
	HS_WANT_ORDER = 19,     /* the dominators with their tree's order,
				 * for hs_type_rows (1 to 2.3 bytes a block):
				 * asked for by the first call that computes
				 * the dominators */
};

/* Computes the heap and the stages in want (enum hs_want, or-ed), in
 * order, and fills *ret with them.  The error of the first required stage
 * that failed (types are never required); *ret holds the stages before it
 * either way. */
const struct hs_error *hs_snapshot_results(struct hs_snapshot *snap,
					   unsigned want,
					   struct hs_results *ret);

/* Lets go of what libdw and libelf hold of the modules (their DWARF, a
 * compressed .debug_info inflated whole, symbol tables and mapped files:
 * 20 MB on a Debian 12 program with libc6-dbg), and of the type
 * registry's indexes into it, keeping what was computed from them.  A
 * stage that reads DWARF must be computed before: afterwards it would find
 * no DWARF, no symbols and no module files (hs_dwarf_release). */
void hs_snapshot_release_debug(struct hs_snapshot *snap);

/* Stages.  The returned objects belong to the snapshot; so does a returned
 * error (callers must not destroy it). */
const struct hs_error *hs_snapshot_dwarf(struct hs_snapshot *snap,
					 struct hs_dwarf **ret);
const struct hs_error *hs_snapshot_heap(struct hs_snapshot *snap,
					const struct hs_heap **ret);

const struct hs_error *hs_snapshot_roots(struct hs_snapshot *snap,
					 const struct hs_roots **ret);
const struct hs_error *hs_snapshot_graph(struct hs_snapshot *snap,
					 const struct hs_graph **ret);
/* The mark needs the heap, the roots and the graph; on success all three
 * are available through their own calls. */
const struct hs_error *hs_snapshot_mark(struct hs_snapshot *snap,
					const struct hs_mark **ret);
/* glibc's stdio streams; needs the heap. */
const struct hs_error *hs_snapshot_files(struct hs_snapshot *snap,
					 const struct hs_files **ret);
/* Dominators and retained sizes; needs the mark. */
/* CPython's objects held from outside the heap (analyzers/python.h);
 * *ret NULL when the program has no CPython. */
const struct hs_error *hs_snapshot_pyrefs(struct hs_snapshot *snap,
					  const struct hs_pyrefs **ret);
const struct hs_error *hs_snapshot_retain(struct hs_snapshot *snap,
					  const struct hs_retain **ret);
/* What each allocation is (C++ vtables, DWARF types); needs the graph. */
const struct hs_error *hs_snapshot_types(struct hs_snapshot *snap,
					 const struct hs_types **ret);

#endif
