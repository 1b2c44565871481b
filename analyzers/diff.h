/* What grew between snapshots of one program.
 *
 * Between the first and the last snapshot, blocks are matched by address,
 * size and type (Chrome DevTools' comparison): a block at an address that
 * now holds another size or type is a deleted one plus a new one.  Per type
 * (per size when untyped): new, deleted, their bytes, deltas, retained
 * delta, and the root that holds most of the new bytes.  Per root: retained
 * delta.  Over three snapshots or more, each row's series (bytes, or
 * retained bytes for roots) gets a slope (least squares, per snapshot) and
 * a trend: growing, plateau (grew, then flat), stable, sawtooth, shrinking.
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
	uint64_t new_count, new_bytes, deleted_count, deleted_bytes;
	int64_t delta_count, delta_bytes, retained_delta;
	uint64_t *bytes;        /* per snapshot */
	double slope;           /* bytes per snapshot */
	enum hs_trend trend;
	const char *held_by;    /* root holding most new bytes (borrowed), or NULL */
	uint64_t held_bytes;
};

struct hs_diff_root {
	const char *name, *kind;     /* borrowed */
	int64_t retained_delta;
	uint64_t *retained;          /* per snapshot */
	double slope;
	enum hs_trend trend;
};

struct hs_diff {
	size_t nsnaps;
	struct hs_diff_type *types;
	size_t ntypes;
	struct hs_diff_root *roots;
	size_t nroots;
	uint64_t new_leak_roots, new_leak_root_bytes;
	int64_t leaked_delta_count, leaked_delta_bytes;
	uint64_t *leaked;            /* leaked bytes per snapshot */
	enum hs_trend leaked_trend;
	double leaked_slope;
	int64_t used_delta_count, used_delta_bytes;
};

struct hs_error *hs_diff_compute(const struct hs_diff_snapshot *s, size_t n,
				 struct hs_diff **ret);
void hs_diff_destroy(struct hs_diff *d);

/* exposed for tests */
enum hs_trend hs_trend_of(const uint64_t *v, size_t n, double *slope);

#endif
