/* The core as libdwfl is given it.
 *
 * libdwfl opens some paths that the core names with a plain open(2) of its
 * own, not through the find_elf callback (elfutils 0.188):
 *   - each NT_FILE path that covers an ELF image it finds in the segments
 *     (dwfl_segment_report_module.c), to compare build-ids;
 *   - each l_name of the dynamic linker's link_map list, read from the
 *     core's memory (link_map.c, report_r_debug), for the same reason.
 * A core is hostile: a path naming a FIFO would block that open forever, and
 * opening a device can have effects of its own.  So before libdwfl sees the
 * core, each of those paths is looked at, and one that exists and is not a
 * regular file is overwritten, in a private copy-on-write view of the core,
 * by as many '/' as it has bytes: "////" opens the root directory, which
 * libdwfl reads, fails on, and skips.  Lengths and offsets do not change.
 * The view shares every page it does not patch with the core's mapping.
 *
 * The warning for each such path says which it was; module names are taken
 * back from the core's own NT_FILE by address (hs_dwfl_view_name).
 */
#ifndef HS_DWFLVIEW_H
#define HS_DWFLVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/elfcore.h"
#include "src/error.h"
#include "src/log.h"

struct hs_dwfl_view {
	const uint8_t *data;    /* the core's bytes, or the patched copy */
	size_t size;
	void *map;              /* our private mapping, or NULL */
	uint8_t *copy;          /* our copy of an in-memory core, or NULL */
	size_t npatched;        /* paths overwritten */
};

struct hs_error *hs_dwfl_view_create(const struct hs_core *core,
				     struct hs_log *log,
				     struct hs_dwfl_view *ret);
void hs_dwfl_view_destroy(struct hs_dwfl_view *v);

/* True for a name that the view overwrote (only '/'). */
bool hs_dwfl_view_blanked(const char *name);

/* The path the core names for the mapping at addr (NT_FILE), or NULL. */
const char *hs_dwfl_view_name(const struct hs_core *core, uint64_t addr);

#endif
