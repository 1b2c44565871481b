#include "src/snapshot.h"
#include "src/alloc.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/pymalloc.h"
#include "analyzers/python.h"
#include "src/sort.h"

double hs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* path, or a core of size bytes at data when data is not NULL. */
static struct hs_error *open_core(const char *path, const void *data,
				  size_t size, const struct hs_options *opts,
				  struct hs_snapshot **ret)
{
	struct hs_snapshot *snap = hs_calloc(1, sizeof(*snap));
	if (!snap)
		return &hs_error_nomem;
	snap->opts = *opts;
	hs_log_init(&snap->log, opts->warnings, opts->progress);
	if (opts->progress_delay)
		snap->log.progress_delay = opts->progress_delay > 0 ? opts->progress_delay : 0;
	double t0 = hs_now();
	struct hs_error *err = data ?
		hs_core_open_memory(path, data, size, &snap->log, &snap->core) :
		hs_core_open(path, &snap->log, &snap->core);
	snap->t_open = hs_now() - t0;
	if (err) {
		hs_snapshot_destroy(snap);
		return err;
	}
	*ret = snap;
	return NULL;
}

struct hs_error *hs_snapshot_open(const char *path,
				  const struct hs_options *opts,
				  struct hs_snapshot **ret)
{
	return open_core(path, NULL, 0, opts, ret);
}

struct hs_error *hs_snapshot_open_memory(const char *name, const void *data,
					 size_t size,
					 const struct hs_options *opts,
					 struct hs_snapshot **ret)
{
	if (!data)
		return hs_error_create(HS_ERR_USAGE, "%s: no core data", name);
	return open_core(name, data, size, opts, ret);
}

void hs_snapshot_destroy(struct hs_snapshot *snap)
{
	if (!snap)
		return;
	hs_types_destroy(snap->types);
	hs_error_destroy(snap->types_err);
	hs_retain_destroy(snap->retain);
	hs_error_destroy(snap->retain_err);
	hs_files_destroy(snap->files);
	hs_error_destroy(snap->files_err);
	hs_mark_destroy(snap->mark);
	hs_mark_starts_destroy(snap->mark_starts);
	hs_error_destroy(snap->mark_err);
	hs_graph_destroy(snap->graph);
	hs_rules_fini(&snap->rules);
	hs_pyrefs_destroy(snap->pyrefs);
	hs_error_destroy(snap->pyrefs_err);
	hs_python_destroy(snap->python);
	hs_error_destroy(snap->graph_err);
	hs_roots_destroy(snap->roots);
	hs_error_destroy(snap->roots_err);
	hs_heap_destroy(snap->heap);
	hs_error_destroy(snap->heap_err);
	hs_dwarf_destroy(snap->dwarf);
	hs_error_destroy(snap->dwarf_err);
	hs_core_destroy(snap->core);
	hs_log_fini(&snap->log);
	free(snap);
}

static struct hs_error *copy_error(const struct hs_error *err);

const struct hs_error *hs_snapshot_dwarf(struct hs_snapshot *snap,
					 struct hs_dwarf **ret)
{
	if (!snap->dwarf_done) {
		snap->dwarf_done = true;
		struct hs_dwarf_options o = {
			.exe = snap->opts.exe,
			.debug_dir = snap->opts.debug_dir,
			.sysroot = snap->opts.sysroot,
			.no_system_debug = snap->opts.no_system_debug,
		};
		{
			double t0 = hs_now();
			snap->dwarf_err = hs_dwarf_create(snap->core, &o, &snap->log,
							  &snap->dwarf);
			snap->t_dwarf = hs_now() - t0;
		}
	}
	*ret = snap->dwarf;
	return snap->dwarf_err;
}

static unsigned worker_threads(const struct hs_snapshot *snap);

/* The backend's walk into snap->heap.  With totals_only the walk may
 * leave the blocks uncounted; when its heap cannot vouch for their order
 * (hs_heap.needs_blocks) the walk is done again keeping them, and the
 * first walk's warnings are dropped: they come again. */
static struct hs_error *walk_heap(struct hs_snapshot *snap,
				  const struct hs_backend *b, struct hs_dwarf *dw)
{
	struct hs_walk_options o = {
		.totals_only = snap->opts.totals_only,
		.threads = worker_threads(snap) > 1,
	};
	struct hs_log_held held;
	if (o.totals_only)
		hs_log_hold(&snap->log, &held);
	struct hs_error *err = b->walk(snap->core, dw, &snap->log, &o, &snap->heap);
	if (!o.totals_only)
		return err;
	bool again = !err && snap->heap->needs_blocks;
	hs_log_release(&snap->log, !again);
	if (!again)
		return err;
	hs_heap_destroy(snap->heap);
	snap->heap = NULL;
	hs_dwarf_preload_wait(dw);  /* dw back, if the walk lent it */
	o.totals_only = false;
	return b->walk(snap->core, dw, &snap->log, &o, &snap->heap);
}

const struct hs_error *hs_snapshot_heap(struct hs_snapshot *snap,
					const struct hs_heap **ret)
{
	if (!snap->heap_done) {
		snap->heap_done = true;
		/* the heaps' pages are mapped on another CPU while the
		 * allocator's debug info is read (formats/elfcore.h) */
		struct hs_core_prefault *pf = worker_threads(snap) > 1 ?
			hs_core_prefault_start(snap->core) : NULL;
		struct hs_dwarf *dw;
		const struct hs_error *derr = hs_snapshot_dwarf(snap, &dw);
		if (derr)
			snap->heap_err = copy_error(derr);
		else {
			const struct hs_backend *b = snap->opts.backend;
			double t0 = hs_now();
			if (snap->opts.all_debug && worker_threads(snap) > 1)
				hs_dwarf_preload_arm(dw);
			if (b || !(snap->heap_err = hs_backend_find(dw, &b)))
				snap->heap_err = walk_heap(snap, b, dw);
			hs_dwarf_preload_wait(dw);
			if (!snap->heap_err)
				snap->heap_err = hs_pymalloc_layer(snap->core, dw,
								   &snap->log,
								   snap->heap);
			snap->t_heap = hs_now() - t0;
		}
		hs_core_prefault_stop(pf);
	}
	*ret = snap->heap;
	return snap->heap_err;
}

/* A failed stage's error, copied for the stage that needed it. */
static struct hs_error *copy_error(const struct hs_error *err)
{
	return hs_error_create(err->code, "%s", err->message);
}

/* A stage that reads blocks, asked of a snapshot opened for totals only
 * (hs_options.totals_only): the caller's mistake. */
static struct hs_error *totals_only_error(void)
{
	return hs_error_create(HS_ERR_USAGE,
			       "the heap was walked for its totals only (hs_options.totals_only): its blocks are not kept");
}

const struct hs_error *hs_snapshot_files(struct hs_snapshot *snap,
					 const struct hs_files **ret)
{
	if (!snap->files_done) {
		snap->files_done = true;
		const struct hs_heap *heap;
		const struct hs_error *e = hs_snapshot_heap(snap, &heap);
		struct hs_dwarf *dw = NULL;
		if (e) {
			snap->files_err = copy_error(e);
		} else if (heap->totals_only) {
			snap->files_err = totals_only_error();
		} else {
			if (hs_snapshot_dwarf(snap, &dw))
				dw = NULL;
			double t0 = hs_now();
			snap->files_err = hs_files_find(snap->core, dw, heap, &snap->log,
							&snap->files);
			snap->t_roots += hs_now() - t0;
		}
	}
	*ret = snap->files;
	return snap->files_err;
}

const struct hs_error *hs_snapshot_roots(struct hs_snapshot *snap,
					 const struct hs_roots **ret)
{
	if (!snap->roots_done) {
		snap->roots_done = true;
		struct hs_dwarf *dw;
		const struct hs_heap *heap;
		const struct hs_error *e;
		if ((e = hs_snapshot_dwarf(snap, &dw)) ||
		    (e = hs_snapshot_heap(snap, &heap))) {
			snap->roots_err = copy_error(e);
		} else if (heap->totals_only) {
			snap->roots_err = totals_only_error();
		} else if ((e = hs_snapshot_files(snap, &(const struct hs_files *){NULL}))) {
			snap->roots_err = copy_error(e);
		} else {
			struct hs_roots_options o = {
				.unexplained = !snap->opts.no_unexplained,
				.conservative = snap->opts.conservative_roots,
				.not_refs = snap->files->not_refs,
				.nnot_refs = snap->files->nnot_refs,
			};
			double t0 = hs_now();
			/* CPython's frame stacks */
			struct hs_root_stack *rs = NULL;
			snap->roots_err = hs_python_stacks(snap->core, dw, heap, &rs,
							   &o.nstacks);
			o.stacks = rs;
			/* and the slots of its free lists above their counts */
			struct hs_root_stale *stale = NULL;
			if (!snap->roots_err)
				snap->roots_err = hs_python_free_lists(snap->core, dw, heap,
								       &stale, &o.nstale);
			o.stale = stale;
			if (!snap->roots_err)
				snap->roots_err = hs_roots_build(snap->core, dw, heap, &o,
								 &snap->log, &snap->roots);
			free(rs);
			free(stale);
			snap->t_roots += hs_now() - t0;
		}
	}
	*ret = snap->roots;
	return snap->roots_err;
}

/* --threads, or one worker per CPU */
static unsigned worker_threads(const struct hs_snapshot *snap)
{
	if (snap->opts.threads)
		return snap->opts.threads;
	long c = sysconf(_SC_NPROCESSORS_ONLN);
	return c > 0 ? (unsigned)c : 1;
}

static void types_run(struct hs_snapshot *snap, const struct hs_graph *graph,
		      struct hs_dwarf *dw, bool beside);

/* The types' propagation beside the graph's scan (hs_graph_build_beside):
 * it reads the address map only.  Its warnings are held, to come after
 * the graph's, where they came when the types followed the graph. */
static void types_beside(void *arg, const struct hs_graph *g)
{
	struct hs_snapshot *snap = arg;
	hs_log_hold(&snap->log, &snap->types_held);
	types_run(snap, g, snap->dwarf, true);
	hs_log_set_aside(&snap->log);
	/* (the graph's time is then the build's less the types') */
	snap->types_on_caller = pthread_equal(pthread_self(), snap->graph_thread);
}

/* The mark's first step once the graph is made, while the types'
 * propagation may still run on another thread (hs_graph_build_beside):
 * it reads the graph's rows and the roots, which nothing changes then,
 * and warns of nothing.  A failure leaves it to the mark. */
static void graph_made(void *arg, const struct hs_graph *g)
{
	struct hs_snapshot *snap = arg;
	double t0 = snap->t_graph_made = hs_now();
	if (!snap->mark_wanted || !snap->roots_done || !snap->roots || snap->roots_err)
		return;
	if (hs_mark_starts(snap->core, snap->roots, g, &snap->mark_starts))
		snap->mark_starts = NULL;  /* (only memory fails) */
	snap->t_mark += hs_now() - t0;
}

const struct hs_error *hs_snapshot_graph(struct hs_snapshot *snap,
					 const struct hs_graph **ret)
{
	if (!snap->graph_done) {
		snap->graph_done = true;
		const struct hs_heap *heap;
		const struct hs_error *e = hs_snapshot_heap(snap, &heap);
		if (e) {
			snap->graph_err = copy_error(e);
		} else if (heap->totals_only) {
			snap->graph_err = totals_only_error();
		} else {
			unsigned n = worker_threads(snap);
			{
				double t0 = hs_now();
				unsigned on = HS_RULES_ALL;
				if (snap->opts.rules_off &&
				    !hs_rules_parse_off(snap->opts.rules_off, &on))
					on = HS_RULES_ALL;
				struct hs_dwarf *dw = NULL;
				if (hs_snapshot_dwarf(snap, &dw))
					dw = NULL;
				snap->graph_err = hs_rules_init(&snap->rules, snap->core,
								heap, dw, on);
				if (!snap->graph_err && dw)
					snap->graph_err = hs_python_objects(snap->core, dw, heap,
									    snap->opts.types_narrow_max,
									    n, &snap->log,
									    &snap->python);
				snap->rules.py = snap->python;
				const struct hs_files *files = NULL;
				const struct hs_error *fe = NULL;
				if (!snap->graph_err &&
				    (fe = hs_snapshot_files(snap, &files)))
					snap->graph_err = copy_error(fe);
				snap->rules.files = files;
				/* the types beside the scan: when they are
				 * wanted, and their reads and the scan's can
				 * go on at once (not while the reads are
				 * traced: the trace is not shared) */
				bool beside = !snap->graph_err && dw && n >= 2 &&
					      !snap->opts.types_after &&
					      !snap->core->trace && !snap->types_done &&
					      (snap->types_beside == HS_TYPES_BESIDE ||
					       (snap->types_beside == HS_TYPES_BESIDE_TYPED &&
						snap->rules.enabled & 1u << HS_RULE_TYPED));
				/* and, once the graph is made, the mark's first
				 * step beside them when the mark is what it is
				 * made for (graph_made) */
				snap->t_graph_made = 0;
				snap->types_on_caller = false;
				snap->graph_thread = pthread_self();
				if (!snap->graph_err)
					snap->graph_err = hs_graph_build_beside(
						snap->core, heap, &snap->rules, n, &snap->log,
						beside ? types_beside : NULL,
						beside ? graph_made : NULL, snap, &snap->graph);
				/* the graph's time: until it was made, less the
				 * types' when they ran on this thread */
				snap->t_graph = (snap->t_graph_made ? snap->t_graph_made : hs_now()) - t0 -
						(snap->types_on_caller ? snap->t_types : 0);
				if (snap->types_done && beside) {
					/* as if they had come after the graph */
					hs_log_replay(&snap->log, &snap->types_held,
						      !snap->graph_err);
					if (snap->graph_err) {
						hs_types_destroy(snap->types);
						snap->types = NULL;
						hs_error_destroy(snap->types_err);
						snap->types_err = copy_error(snap->graph_err);
					}
				}
			}
			/* the scan's counts of references to CPython's
			 * objects are used up now, before the types and the
			 * mark take their memory (4 bytes a block) */
			const struct hs_pyrefs *pyrefs;
			if (!snap->graph_err && snap->graph->pystarts)
				(void)hs_snapshot_pyrefs(snap, &pyrefs);
		}
	}
	*ret = snap->graph;
	return snap->graph_err;
}

static const struct hs_error *types_base(struct hs_snapshot *snap);

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The typed rule (rules.h): the typed pointers into blocks' interiors that
 * type propagation found hold those blocks.  Without types (no debug
 * info), there is nothing to apply. */
static struct hs_error *typed_rule(struct hs_snapshot *snap)
{
	if (!snap->graph->rule_of || !(snap->rules.enabled & 1u << HS_RULE_TYPED))
		return NULL;
	if (types_base(snap) || !snap->types)
		return NULL;
	const struct hs_types *types = snap->types;
	double t0 = hs_now();
	/* the holds by holder, then target: one pass over each holder's row
	 * (its targets gathered in dst) */
	uint64_t *pairs = hs_malloc((types->nholds ? types->nholds : 1) * sizeof(*pairs));
	uint32_t *dst = hs_malloc((types->nholds ? types->nholds : 1) * sizeof(*dst));
	if (!pairs || !dst) {
		free(pairs);
		free(dst);
		return &hs_error_nomem;
	}
	size_t np = 0;
	for (size_t i = 0; i < types->nholds; i++) {
		const struct hs_types_hold *h = &types->holds[i];
		if (h->holder == HS_NO_ALLOC) {
			struct hs_error *err = hs_rules_add_typed(&snap->rules, h->value);
			if (err) {
				free(pairs);
				free(dst);
				return err;
			}
		} else {
			pairs[np++] = (uint64_t)h->holder << 32 | h->target;
		}
	}
	hs_sort(pairs, np, sizeof(*pairs), cmp_u64);
	for (size_t i = 0; i < np;) {
		uint32_t holder = (uint32_t)(pairs[i] >> 32);
		size_t n = 0;
		for (; i < np && (uint32_t)(pairs[i] >> 32) == holder; i++)
			dst[n++] = (uint32_t)pairs[i];
		hs_graph_take_as_start(snap->graph, holder, dst, n, HS_RULE_TYPED);
	}
	free(pairs);
	free(dst);
	hs_rules_typed_done(&snap->rules);
	snap->t_mark += hs_now() - t0;
	return NULL;
}

const struct hs_error *hs_snapshot_mark(struct hs_snapshot *snap,
					const struct hs_mark **ret)
{
	if (!snap->mark_done) {
		snap->mark_done = true;
		/* the typed rule's types come beside the graph */
		if (snap->types_beside == HS_TYPES_AFTER)
			snap->types_beside = HS_TYPES_BESIDE_TYPED;
		/* and the mark's first step beside them */
		snap->mark_wanted = true;
		const struct hs_heap *heap;
		const struct hs_roots *roots;
		const struct hs_graph *graph;
		const struct hs_error *e;
		if ((e = hs_snapshot_heap(snap, &heap)) ||
		    (e = hs_snapshot_roots(snap, &roots)) ||
		    (e = hs_snapshot_graph(snap, &graph)))
			snap->mark_err = copy_error(e);
		else if (!(snap->mark_err = typed_rule(snap)))
			{
				double t0 = hs_now();
				snap->mark_err = hs_mark_compute_from(snap->core, heap, roots,
								      graph, snap->mark_starts,
								      &snap->mark);
				snap->mark_starts = NULL;  /* (taken) */
				snap->t_mark += hs_now() - t0;
				/* the rule each block was held by is in the
				 * mark's via now; nothing reads the graph's */
				if (!snap->mark_err) {
					hs_graph_drop_rule_of(snap->graph);
					hs_rules_drop_summary(&snap->rules);
				}
			}
	}
	*ret = snap->mark;
	return snap->mark_err;
}

const struct hs_error *hs_snapshot_pyrefs(struct hs_snapshot *snap,
					  const struct hs_pyrefs **ret)
{
	if (!snap->pyrefs_done) {
		snap->pyrefs_done = true;
		const struct hs_graph *graph;
		const struct hs_roots *roots;
		const struct hs_error *e;
		if ((e = hs_snapshot_graph(snap, &graph)) ||
		    (e = hs_snapshot_roots(snap, &roots)))
			snap->pyrefs_err = copy_error(e);
		else if (snap->python) {
			double t0 = hs_now();
			/* the scan's counts, used up */
			uint32_t *starts = snap->graph->pystarts;
			snap->graph->pystarts = NULL;
			snap->pyrefs_err = hs_python_refs(snap->python, snap->core,
							  snap->heap, graph, roots,
							  starts, &snap->pyrefs);
			free(starts);
			snap->t_mark += hs_now() - t0;
		}
	}
	*ret = snap->pyrefs;
	return snap->pyrefs_err;
}

const struct hs_error *hs_snapshot_retain(struct hs_snapshot *snap,
					  const struct hs_retain **ret)
{
	if (!snap->retain_done) {
		snap->retain_done = true;
		const struct hs_mark *mark;
		const struct hs_error *e = hs_snapshot_mark(snap, &mark);
		if (e) {
			snap->retain_err = copy_error(e);
		} else {
			double t0 = hs_now();
			snap->retain_err = hs_retain_compute(snap->core, snap->heap,
							     snap->roots, snap->graph,
							     mark, worker_threads(snap),
							     snap->retain_order, &snap->log,
							     &snap->retain);
			snap->t_retain = hs_now() - t0;
		}
	}
	*ret = snap->retain;
	return snap->retain_err;
}

/* The types' propagation (see types_base), beside the graph's scan or
 * after it. */
static void types_run(struct hs_snapshot *snap, const struct hs_graph *graph,
		      struct hs_dwarf *dw, bool beside)
{
	snap->types_done = true;
	double t0 = hs_now();
	snap->types_err = hs_types_compute(snap->core, dw, snap->heap, graph,
					   snap->python, snap->opts.types_narrow_max,
					   &snap->log, &snap->types);
	/* (beside the scan, its line may be the scan's, which goes on) */
	if (!beside)
		hs_log_progress_end(&snap->log);
	snap->t_types = hs_now() - t0;
}

/* The types without the leaked blocks' inference (which needs the mark,
 * which needs these for the typed rule). */
static const struct hs_error *types_base(struct hs_snapshot *snap)
{
	if (!snap->types_done) {
		const struct hs_graph *graph;
		struct hs_dwarf *dw;
		const struct hs_error *e;
		if (snap->types_beside == HS_TYPES_AFTER)
			snap->types_beside = HS_TYPES_BESIDE;
		if ((e = hs_snapshot_dwarf(snap, &dw)) ||
		    (e = hs_snapshot_graph(snap, &graph))) {
			/* (made beside the graph, they went with it) */
			if (!snap->types_done)
				snap->types_err = copy_error(e);
			snap->types_done = true;
		} else if (!snap->types_done) {
			types_run(snap, graph, dw, false);
		}
	}
	return snap->types_err;
}

const struct hs_error *hs_snapshot_types(struct hs_snapshot *snap,
					 const struct hs_types **ret)
{
	if (!types_base(snap) && !snap->infer_done) {
		snap->infer_done = true;
		/* leaked blocks' types need the mark; without one they stay
		 * untyped */
		const struct hs_mark *mark;
		struct hs_dwarf *dw;
		if (!hs_snapshot_mark(snap, &mark) && !hs_snapshot_dwarf(snap, &dw)) {
			double t0 = hs_now();
			struct hs_error *ierr = hs_types_infer(snap->types, snap->core, dw,
							       snap->heap, snap->graph,
							       mark->reach, worker_threads(snap),
							       &snap->log);
			hs_log_progress_end(&snap->log);
			if (ierr == &hs_error_nomem) {
				hs_types_destroy(snap->types);
				snap->types = NULL;
				snap->types_err = ierr;
			} else if (ierr) {
				hs_log_warn(&snap->log, "leaked blocks stay untyped: %s",
					    ierr->message);
				hs_error_destroy(ierr);
			}
			snap->t_types += hs_now() - t0;
		}
		/* final now: the types of the typed blocks alone (if memory
		 * runs out, the full table stays, which reads the same) */
		if (snap->types) {
			double t0 = hs_now();
			hs_error_destroy(hs_types_pack(snap->types));
			snap->t_types += hs_now() - t0;
		}
	}
	*ret = snap->types;
	return snap->types_err;
}

void hs_snapshot_release_debug(struct hs_snapshot *snap)
{
	if (!snap->dwarf || snap->opts.keep_debug)
		return;
	if (snap->types)
		hs_dtypes_release(snap->types->reg);
	hs_dwarf_release(snap->dwarf);
	/* libdw's blocks were small and many, in the main heap among the
	 * stages' own: give their pages back (under 2 ms here) */
	malloc_trim(0);
}

const struct hs_error *hs_snapshot_results(struct hs_snapshot *snap,
					   unsigned want,
					   struct hs_results *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->core = snap->core;
	ret->log = &snap->log;
	ret->threads = worker_threads(snap);
	ret->sharers_split = snap->opts.sharers_split;
	const struct hs_error *err = hs_snapshot_heap(snap, &ret->heap);
	if (err)
		return err;
	if (want & HS_WANT_MARK) {
		const struct hs_mark *mark;
		if ((err = hs_snapshot_mark(snap, &mark)))
			return err;
		/* the mark's stages are computed: these cannot fail now */
		hs_snapshot_roots(snap, &ret->roots);
		hs_snapshot_graph(snap, &ret->graph);
		ret->rules = &snap->rules;
		ret->mark = mark;
	}
	/* the types before the dominators: the leaked blocks' inference
	 * (after the mark) then runs before the dominators' results take
	 * their memory, and its scratch is gone when they come */
	if (want & HS_WANT_TYPES) {
		const struct hs_error *terr = hs_snapshot_types(snap, &ret->types);
		if (terr) {
			ret->types = NULL;
			/* not having them at all is no news; losing them is */
			if (terr->code == HS_ERR_NOMEM)
				hs_log_warn(&snap->log, "types left out: %s", terr->message);
		}
	}
	if (want & HS_WANT_LEAN)
		hs_snapshot_release_debug(snap);
	if ((want & HS_WANT_ORDER) == HS_WANT_ORDER && !snap->retain_done)
		snap->retain_order = true;
	if ((want & HS_WANT_RETAIN) == HS_WANT_RETAIN &&
	    (err = hs_snapshot_retain(snap, &ret->retain)))
		return err;
	return NULL;
}
