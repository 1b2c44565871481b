/* What grew between snapshots of one program.
 *
 * Each snapshot comes to the comparison as rows (struct hs_diff_rows): its
 * per-type rows (as `types` computes them) and per-root rows (as `top`
 * does), and its totals.  A core gives them from its analysis
 * (hs_diff_rows_of), a saved summary from its file (src/summary.h); the
 * series, slopes and trends are computed from the rows alone, whichever
 * they came from.
 *
 * When every snapshot is a core, blocks are matched by address, size and
 * type between the first and the last (Chrome DevTools' comparison): a
 * block at an address that now holds another size or type is a deleted
 * one plus a new one.  Per type (per size when untyped): new, deleted,
 * their bytes, deltas, retained delta, and the root that holds most of the
 * new bytes.  A summary has no blocks: when one snapshot is a summary, the
 * per-type deltas come from the first and last rows' counts and bytes, and
 * new, deleted, their holders and the new leak roots are unknown.  Per
 * root: retained delta.  Over three snapshots or more, each row's series
 * (bytes, or retained bytes for roots) gets a slope (least squares, per
 * snapshot) and a trend: growing, plateau (grew, then flat), stable,
 * sawtooth, shrinking.
 */
#ifndef HS_DIFF_H
#define HS_DIFF_H

#include "analyzers/summary.h"

struct hs_diff_snapshot {
	const struct hs_heap *heap;
	const struct hs_mark *mark;
	const struct hs_retain *retain;
	const struct hs_types *types;   /* may be NULL */
	const struct hs_roots *roots;
};

/* A type row of one snapshot: label as hs_type_rows makes it. */
struct hs_diff_trow {
	char *label;
	uint64_t count, bytes, retained;
};

/* A root row of one snapshot, as hs_root_rows makes it. */
struct hs_diff_rrow {
	char *name, *kind;
	uint64_t retained;
};

/* One snapshot as the comparison reads it; owns its strings. */
struct hs_diff_rows {
	struct hs_diff_trow *types;
	size_t ntypes;
	struct hs_diff_rrow *roots;
	size_t nroots;
	uint64_t used_count, used_bytes;        /* the program's used blocks */
	uint64_t leaked_count, leaked_bytes;    /* leak roots and indirect */
	bool partial;                           /* the heap walk was partial */
	/* a summary's lists were cut (src/summary.h): rows past the cut
	 * are missing from it */
	bool types_truncated, roots_truncated;
};

/* The rows of an analyzed core. */
struct hs_error *hs_diff_rows_of(const struct hs_diff_snapshot *s,
				 struct hs_diff_rows **ret);
void hs_diff_rows_destroy(struct hs_diff_rows *rows);

/* One snapshot to compare: its rows, whether it is a summary, and for a
 * core its blocks: needed for the first and the last when no input is a
 * summary (NULL otherwise). */
struct hs_diff_input {
	const struct hs_diff_rows *rows;
	bool summary;
	const struct hs_diff_snapshot *blocks;
};

enum hs_trend {
	HS_TREND_NONE,          /* fewer than three snapshots */
	HS_TREND_GROWING,
	HS_TREND_PLATEAU,
	HS_TREND_STABLE,
	HS_TREND_SAWTOOTH,
	HS_TREND_SHRINKING,
};
extern const char *const hs_trend_names[];

struct hs_diff_type {
	char *label;
	/* new and deleted: by blocks only (hs_diff.by_blocks) */
	uint64_t new_count, new_bytes, deleted_count, deleted_bytes;
	int64_t delta_count, delta_bytes, retained_delta;
	uint64_t *bytes;        /* per snapshot */
	double slope;           /* bytes per snapshot */
	enum hs_trend trend;
	const char *held_by;    /* root holding most new bytes (borrowed), or NULL */
	uint64_t held_bytes;
};

struct hs_diff_root {
	const char *name, *kind;     /* borrowed from the inputs' rows */
	int64_t retained_delta;
	uint64_t *retained;          /* per snapshot */
	double slope;
	enum hs_trend trend;
};

struct hs_diff {
	size_t nsnaps;
	/* blocks matched by address (every input a core); false: deltas
	 * from the type rows' totals, new and deleted unknown */
	bool by_blocks;
	struct hs_diff_type *types;
	size_t ntypes;
	struct hs_diff_root *roots;
	size_t nroots;
	uint64_t new_leak_roots, new_leak_root_bytes;   /* by blocks only */
	int64_t leaked_delta_count, leaked_delta_bytes;
	uint64_t *leaked;            /* leaked bytes per snapshot */
	enum hs_trend leaked_trend;
	double leaked_slope;
	int64_t used_delta_count, used_delta_bytes;
};

/* The inputs' rows must outlive the result (root names are borrowed). */
struct hs_error *hs_diff_compute(const struct hs_diff_input *in, size_t n,
				 struct hs_diff **ret);
void hs_diff_destroy(struct hs_diff *d);

/* exposed for tests */
enum hs_trend hs_trend_of(const uint64_t *v, size_t n, double *slope);

#endif
