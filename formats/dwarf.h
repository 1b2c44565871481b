/* Modules, symbols and DWARF type layouts of a core, through libdwfl.
 *
 * libdwfl reports the modules from the core itself (the dynamic linker's
 * r_debug list and NT_FILE), matches each to its ELF file by build-id, and
 * finds its debug info: the file itself, DIR/.build-id/xx/yyyy.debug for each
 * debug directory (the user's --debug-dir first, then /usr/lib/debug), a
 * .gnu_debuglink next to the file, and debuginfod when DEBUGINFOD_URLS is set.
 *
 * Type layouts are cached per (module, name): the allocator walkers read
 * their metadata through member offsets from here, not through constants.
 */
#ifndef HS_DWARF_H
#define HS_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/elfcore.h"
#include "src/error.h"
#include "src/log.h"

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwarf Dwarf;

struct hs_dwarf_options {
	const char *exe;        /* --exe: the executable, if the core's path is gone */
	const char *debug_dir;  /* --debug-dir: searched before /usr/lib/debug */
	const char *sysroot;    /* --sysroot: prefix for the core's file paths */
	bool no_system_debug;   /* --no-system-debug: no /usr/lib/debug (nor
				 * the sysroot's), no .debug beside the file:
				 * only --debug-dir and the files' own DWARF */
};

enum hs_debug_source {
	HS_DEBUG_NONE,          /* no DWARF found */
	HS_DEBUG_SELF,          /* the module's own file has DWARF */
	HS_DEBUG_BUILD_ID,      /* /usr/lib/debug/.build-id/... */
	HS_DEBUG_DEBUG_DIR,     /* under --debug-dir */
	HS_DEBUG_DEBUGINFOD,    /* fetched by debuginfod (its cache) */
	HS_DEBUG_OTHER,         /* debuglink or another path */
};
extern const char *const hs_debug_source_names[];

struct hs_module {
	Dwfl_Module *mod;
	char *name;             /* path as the core names it */
	uint64_t start, end;    /* address range of the image */
	uint64_t bias;          /* load bias */
	char *build_id;         /* hex, or NULL */
	char *elf_path;         /* file found for it, or NULL */
	char *debug_path;       /* file its DWARF came from, or NULL */
	enum hs_debug_source debug_source;
	bool debug_checked;     /* debug_* computed (lazily: loading is slow) */
	bool is_exe;
};

struct hs_layout_field {
	char *name;
	uint64_t offset;
	uint64_t size;
};

struct hs_layout {
	char *name;
	uint64_t size;
	size_t nfields;
	struct hs_layout_field *fields;
};

struct hs_dwarf;

struct hs_error *hs_dwarf_create(const struct hs_core *core,
				 const struct hs_dwarf_options *opts,
				 struct hs_log *log, struct hs_dwarf **ret);
void hs_dwarf_destroy(struct hs_dwarf *dw);
/* Ends libdwfl's session once nothing more is to be read from the
 * modules' files: libdw's copies of their DWARF (a compressed
 * .debug_info is inflated whole: 11 MB for libc's) and symbol tables,
 * and the files' mappings, are freed.  The modules stay (names, ranges,
 * build-ids, what hs_dwarf_check_debug found, computed now) and so do the
 * layouts found so far; every lookup that would read a file afterwards
 * finds nothing (no DWARF, no symbols, no ELF).  A type registry made
 * from dw must let go first (hs_dtypes_release). */
void hs_dwarf_release(struct hs_dwarf *dw);

size_t hs_dwarf_num_modules(const struct hs_dwarf *dw);
/* The module's file name: the last component of the path the core names. */
const char *hs_module_base(const struct hs_module *m);
struct hs_module *hs_dwarf_module(struct hs_dwarf *dw, size_t i);
/* The module whose file name (basename) starts with prefix, e.g. "libc.so". */
struct hs_module *hs_dwarf_find_module(struct hs_dwarf *dw, const char *prefix);
/* One of glibc's own libraries by file name: one that starts with prefix
 * (the soname: "libc.so", "ld-linux"), which since glibc 2.34 is the file
 * itself, or STEM-VERSION.so ("libc-2.31.so", "ld-2.31.so"), the file the
 * soname's symbolic link named before 2.34 and so the name in the core. */
struct hs_module *hs_dwarf_find_glibc(struct hs_dwarf *dw, const char *prefix,
				      const char *stem);
/* base (a file name) is STEM-VERSION.so, VERSION digits and dots:
 * "libc-2.31.so" for stem "libc". */
bool hs_glibc_versioned_name(const char *base, const char *stem);
struct hs_module *hs_dwarf_module_at(struct hs_dwarf *dw, uint64_t addr);
/* Loads the module's DWARF (if any) and fills debug_path/debug_source. */
void hs_dwarf_check_debug(struct hs_dwarf *dw, struct hs_module *m);

/* Every module's debug info loaded (hs_dwarf_check_debug) on a thread of
 * its own while the caller does work that needs none: libdwfl, libdw and
 * libelf are never used from two threads at once, so the hand-over is
 * explicit.  The owner of dw arms it; a stage it then runs calls
 * hs_dwarf_idle when it will not touch dw (nor its modules' debug fields)
 * again before it returns, which starts the thread if armed; the owner
 * calls hs_dwarf_preload_wait when the stage has returned, before dw is
 * used again.  Unarmed, hs_dwarf_idle does nothing. */
void hs_dwarf_preload_arm(struct hs_dwarf *dw);
void hs_dwarf_idle(struct hs_dwarf *dw);
void hs_dwarf_preload_wait(struct hs_dwarf *dw);

/* Symbol by name in module m (local symbols included, from .symtab of the
 * file or its debug file).  value is the run-time address, or for STT_TLS
 * symbols the offset in the module's TLS block. */
struct hs_error *hs_dwarf_symbol(struct hs_dwarf *dw, struct hs_module *m,
				 const char *name, uint64_t *value,
				 uint64_t *size, bool *is_tls);
/* hs_dwarf_symbol's run-time address alone: false when m has no such
 * symbol (the error dropped). */
bool hs_dwarf_symbol_addr(struct hs_dwarf *dw, struct hs_module *m,
			  const char *name, uint64_t *addr);
/* Name of the symbol covering addr and addr's offset into it, or false. */
bool hs_dwarf_symbolize(struct hs_dwarf *dw, uint64_t addr, const char **name,
			uint64_t *offset, struct hs_module **mod);

/* Layout of "struct NAME" / "union NAME" / typedef NAME in module m: the
 * first definition, in the order of the units. */
struct hs_error *hs_dwarf_layout(struct hs_dwarf *dw, struct hs_module *m,
				 const char *name,
				 const struct hs_layout **ret);
/* The same, from the unit named `unit` (its file name, without
 * directories: "malloc.c") when it defines it, which spares reading the
 * units before it; else (or with unit NULL) as hs_dwarf_layout.  A layout
 * is cached by module and name, whichever call found it. */
struct hs_error *hs_dwarf_layout_unit(struct hs_dwarf *dw, struct hs_module *m,
				      const char *unit, const char *name,
				      const struct hs_layout **ret);
/* Offset (and size) of a member; dotted paths ("fd.next") are not needed
 * yet.  Returns HS_ERR_NOT_FOUND naming the type and member. */
struct hs_error *hs_layout_member(const struct hs_layout *l, const char *member,
				  uint64_t *offset, uint64_t *size);

/* The same search as hs_dwarf_layout in one Dwarf handle (every unit),
 * without a module or a cache: for a caller that opened the DWARF itself
 * (the fuzzer, tests/fuzz/fuzz_dwarf.c).  *ret is the caller's, freed with
 * hs_layout_fini(). */
struct hs_error *hs_dwarf_layout_in(Dwarf *dbg, const char *name,
				    struct hs_layout *ret);
/* And hs_dwarf_layout_unit's, the same way (tests/unit/test_layout_units.c). */
struct hs_error *hs_dwarf_layout_in_unit(Dwarf *dbg, const char *unit,
					 const char *name, struct hs_layout *ret);
void hs_layout_fini(struct hs_layout *l);

struct hs_symbol {
	uint64_t addr, size;
	const char *name;       /* owned by libdwfl */
	bool global;
};

/* m's sized data symbols (objects and TLS excluded), sorted by address,
 * one per address (a global name preferred over a local alias).  The array
 * belongs to dw. */
struct hs_error *hs_dwarf_data_symbols(struct hs_dwarf *dw, struct hs_module *m,
				       const struct hs_symbol **ret,
				       size_t *count);

/* m's TLS symbols, sorted by offset in its TLS block.  Belongs to dw. */
struct hs_error *hs_dwarf_tls_symbols(struct hs_dwarf *dw, struct hs_module *m,
				      const struct hs_symbol **ret,
				      size_t *count);

/* m's PT_TLS segment: block size and alignment; false if it has none. */
bool hs_dwarf_module_tls(struct hs_dwarf *dw, struct hs_module *m,
			 uint64_t *memsz, uint64_t *align);

/* Where m's TLS block of the thread with thread pointer fs_base starts:
 * for the executable from the local-exec layout (the block ends at the
 * thread pointer), for libraries from a relocated GOT slot (a TPOFF64 slot
 * holds an offset from the thread pointer; a DTPMOD64 slot holds the
 * module id, whose block the thread's dtv points to). */
bool hs_dwarf_tls_block(struct hs_dwarf *dw, const struct hs_core *core,
			struct hs_module *m, uint64_t fs_base, uint64_t *ret);

/* The run-time addresses of m's GOT slots that carry an R_X86_64_TPOFF64
 * relocation without a symbol (initial-exec TLS variables of m itself;
 * each slot holds the variable's offset from the thread pointer once
 * relocated), at most max of them, in relocation order.  The count. */
size_t hs_dwarf_tpoff_slots(struct hs_dwarf *dw, struct hs_module *m,
			    uint64_t *ret, size_t max);

struct hs_frame {
	uint64_t pc;
	uint64_t sp;
	bool activation;        /* pc is exact (signal frame / frame 0) */
};

struct hs_thread_frames {
	int tid;
	struct hs_frame *frames;    /* malloc'ed */
	size_t n;
};

/* Unwinds every thread of the core (CFI, through libdwfl), core being the
 * one dw was made from: (*ret)[i] is core->threads[i], *count is
 * core->nthreads.  *ret is malloc'ed, as is each frames array;
 * hs_dwarf_frames_free() frees them.  Threads libdwfl cannot unwind have
 * n == 0.  The first call warns once about thread ids (pr_pid) no thread
 * can have: those threads are unwound all the same. */
struct hs_error *hs_dwarf_unwind_all(struct hs_dwarf *dw,
				     const struct hs_core *core,
				     struct hs_thread_frames **ret,
				     size_t *count);
void hs_dwarf_frames_free(struct hs_thread_frames *t, size_t count);

/* "function (file.c:142)", "function+0x1a", or "module+0x1234"; NULL if
 * nothing is known.  Caller frees. */
char *hs_dwarf_describe_pc(struct hs_dwarf *dw, uint64_t pc, bool exact);

/* Reads target memory that the core leaves out (read-only file mappings
 * such as .rodata) from the module file that maps it.  False when no
 * module file covers [addr, addr+len). */
bool hs_dwarf_read_file(struct hs_dwarf *dw, uint64_t addr, void *buf,
			size_t len);

/* The ELF file libdwfl found for m (not the debug file), with its bias. */
struct Elf *hs_dwarf_module_elf(struct hs_dwarf *dw, struct hs_module *m,
				uint64_t *bias);

/* The text of the first string in m's file that starts with prefix (e.g.
 * "GNU C Library "), up to the first newline; NULL if absent.  Caller frees. */
char *hs_dwarf_find_string(struct hs_dwarf *dw, struct hs_module *m,
			   const char *prefix);

#endif
