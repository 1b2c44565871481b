/* x86-64 disassembly for the allocators' fallbacks (glibc's and jemalloc's
 * variables found from the code of exported functions), with capstone.
 *
 * capstone is loaded when a disassembler is first opened (dlopen of the
 * library whose major version the build's header names), not when heapsift
 * starts: its 80,000 relocations cost every start about 5 ms, and most
 * runs never disassemble (docs/dependencies.md).  Each hs_disasm holds the
 * library and its own handle; nothing is shared between them.
 */
#ifndef HS_ALLOC_DISASM_H
#define HS_ALLOC_DISASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/error.h"

struct hs_disasm;

/* An x86-64 disassembler with instruction details on; an error when
 * capstone cannot be loaded or opened. */
struct hs_error *hs_disasm_open(struct hs_disasm **ret);
/* The addresses that the RIP-relative memory operands of size bytes of
 * code at addr refer to, in order, those keep(arg, address) takes: at
 * most max in out, their number returned.  *ninsn (unless NULL): how many
 * instructions the code disassembled to (0: none). */
size_t hs_disasm_rip_refs(struct hs_disasm *d, const uint8_t *code,
			  size_t size, uint64_t addr,
			  bool (*keep)(const void *arg, uint64_t address),
			  const void *arg, uint64_t *out, size_t max,
			  size_t *ninsn);
/* hs_disasm_rip_refs over the code of function `name` of module mod: its
 * symbol's bytes, read from the module's file, else from the core.  False,
 * with nothing in out, when the symbol is not found or its code cannot be
 * had (no size, over 64 KiB, not readable, out of memory); else *nrefs
 * (the addresses in out) and *ninsn (unless NULL) as hs_disasm_rip_refs
 * gives them. */
bool hs_disasm_function_refs(struct hs_disasm *d, struct hs_dwarf *dw,
			     struct hs_module *mod, const struct hs_core *core,
			     const char *name,
			     bool (*keep)(const void *arg, uint64_t address),
			     const void *arg, uint64_t *out, size_t max,
			     size_t *nrefs, size_t *ninsn);
/* Closes d and lets the library go; NULL is nothing. */
void hs_disasm_close(struct hs_disasm *d);

#endif
