/* glibc ptmalloc walker: every chunk of every arena, the thread caches,
 * and the mmapped chunks, read through DWARF layouts of glibc's own types.
 */
#ifndef HS_GLIBC_H
#define HS_GLIBC_H

#include "analyzers/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

/* Does the core use glibc malloc (a module defines main_arena)?  Sets *libc
 * to that module (NULL when no module has libc's name). */
bool hs_glibc_detect(struct hs_dwarf *dw, struct hs_module **libc);

struct hs_error *hs_glibc_walk(const struct hs_core *core, struct hs_dwarf *dw,
			       struct hs_log *log, struct hs_heap **ret);

#endif
