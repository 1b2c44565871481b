/* Redaction: a core that analyzes the same, without the program's data.
 *
 * In writable memory a word is kept when
 *   - the allocator walk or the roots read it (chunk headers, arenas,
 *     heap_info, mp_, tcache structures, free-list links, the dtv and its
 *     length, GOT slots: the core reader traces these reads), or the module
 *     list needs it (each module's dynamic section, r_debug, the link_map
 *     chain and its names: what libdwfl reads to list the modules);
 *   - its value points into a mapped range of the process (a segment of the
 *     core or a file mapping): pointers make the graph, the roots, vtable
 *     pointers, return addresses for unwinding;
 *   - CPython's (analyzers/python.h): a pool's header, an object's count
 *     and type words, and what its type's name needs (the type object's
 *     fields, its name, its module's name), read again through the trace
 *     once the objects are known;
 *   - it is part of a C string, with --keep-strings.
 * Every other word of writable memory is zeroed.  Read-only segments
 * (module images, RELRO, the vdso) are copied as they are, and so are the
 * notes (registers, the file list).
 *
 * The address layout is not hidden: rebasing would have to move every
 * pointer, register, return address, module address and note consistently,
 * and one word missed would change the analysis.
 */
#ifndef HS_REDACT_H
#define HS_REDACT_H

#include "formats/dwarf.h"
#include "formats/elfcore.h"

struct hs_redact_options {
	bool keep_strings;
};

struct hs_redact_stats {
	uint64_t writable_words;    /* words of writable memory in the file */
	uint64_t zeroed_words;
};

/* Marks (through core->trace, which must be set) what libdwfl reads to
 * list the modules. */
void hs_redact_touch_modules(const struct hs_core *core, struct hs_dwarf *dw);

/* Writes the redacted copy; trace is the bitmap the analysis filled. */
struct hs_error *hs_redact_write(const struct hs_core *core,
				 const uint64_t *trace,
				 const struct hs_redact_options *opts,
				 const char *out, struct hs_redact_stats *stats);

#endif
