/* glibc ptmalloc walker: every chunk of every arena, the thread caches,
 * and the mmapped chunks, read through DWARF layouts of glibc's own types.
 */
#ifndef HS_GLIBC_H
#define HS_GLIBC_H

#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

/* Does the core use glibc malloc (a module defines main_arena)?  Sets *libc
 * to that module (NULL when no module has libc's name). */
bool hs_glibc_detect(struct hs_dwarf *dw, struct hs_module **libc);

/* An error naming the allocator when the program's malloc is not glibc's
 * (tcmalloc, mimalloc: their heaps are not read; jemalloc has its own
 * walker, analyzers/alloc/jemalloc.h): walking
 * glibc's mostly idle heap instead would give a wrong answer as if it were
 * certain.  NULL when malloc is glibc's. */
struct hs_error *hs_other_allocator(struct hs_dwarf *dw);

/* The row of formats/gllayout.c for libc's release (by its "release
 * version" string; *exact: read from this very build-id), or NULL. */
struct hs_gl_layout;
const struct hs_gl_layout *hs_glibc_row(struct hs_dwarf *dw,
					struct hs_module *libc, bool *exact);

struct hs_error *hs_glibc_walk(const struct hs_core *core, struct hs_dwarf *dw,
			       struct hs_log *log, struct hs_heap **ret);

#endif
