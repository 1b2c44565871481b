#include "src/snapshot.h"

#include <stdlib.h>

#include "analyzers/glibc.h"

struct hs_error *hs_snapshot_open(const char *path,
				  const struct hs_options *opts,
				  struct hs_snapshot **ret)
{
	struct hs_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap)
		return &hs_error_nomem;
	snap->opts = *opts;
	hs_log_init(&snap->log, opts->warnings, opts->progress);
	struct hs_error *err = hs_core_open(path, &snap->log, &snap->core);
	if (err) {
		hs_snapshot_destroy(snap);
		return err;
	}
	*ret = snap;
	return NULL;
}

void hs_snapshot_destroy(struct hs_snapshot *snap)
{
	if (!snap)
		return;
	hs_heap_destroy(snap->heap);
	hs_error_destroy(snap->heap_err);
	hs_dwarf_destroy(snap->dwarf);
	hs_error_destroy(snap->dwarf_err);
	hs_core_destroy(snap->core);
	hs_log_fini(&snap->log);
	free(snap);
}

const struct hs_error *hs_snapshot_dwarf(struct hs_snapshot *snap,
					 struct hs_dwarf **ret)
{
	if (!snap->dwarf_done) {
		snap->dwarf_done = true;
		struct hs_dwarf_options o = {
			.exe = snap->opts.exe,
			.debug_dir = snap->opts.debug_dir,
			.sysroot = snap->opts.sysroot,
		};
		snap->dwarf_err = hs_dwarf_create(snap->core, &o, &snap->log,
						  &snap->dwarf);
	}
	*ret = snap->dwarf;
	return snap->dwarf_err;
}

const struct hs_error *hs_snapshot_heap(struct hs_snapshot *snap,
					const struct hs_heap **ret)
{
	if (!snap->heap_done) {
		snap->heap_done = true;
		struct hs_dwarf *dw;
		const struct hs_error *derr = hs_snapshot_dwarf(snap, &dw);
		if (derr)
			snap->heap_err = hs_error_create(derr->code, "%s",
							 derr->message);
		else
			snap->heap_err = hs_glibc_walk(snap->core, dw,
						       &snap->log, &snap->heap);
	}
	*ret = snap->heap;
	return snap->heap_err;
}
