/* fuzz_dwarf: the DWARF readers heapsift's walkers and type analysis use.
 *
 * Input: an ELF image with DWARF (an object file, a shared object or a
 * debug file; the seeds are small -g builds of tests/fuzz/dwarf_seed*.c,
 * which declare glibc's malloc types, the jemalloc types the jemalloc
 * walker reads, and C++ classes).  Two passes over it:
 *
 *  1. elf_memory() + dwarf_begin_elf(), then hs_dwarf_layout_in() for
 *     every type the glibc and jemalloc walkers (and the roots) ask
 *     hs_dwarf_layout() for, the same with hs_dwarf_layout_in_unit()
 *     from the unit named malloc.c (as the glibc walker asks), and
 *     hs_layout_member() for their members: struct member offsets and
 *     sizes (formats/dwarf.c).
 *  2. The same bytes in a memfd, reported to libdwfl as an offline module
 *     (libdwfl relocates object files), then formats/dwtypes.c: the
 *     module's variables with their pointer slots, member names at
 *     offsets, and frame locals at each function's entry. */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/dwarf.h"
#include "formats/dwtypes.h"

static volatile uint64_t sink;
static int memfd = -1;

/* type, then the members the walkers read (NULL-terminated) */
static const char *const *const lookups[] = {
	/* glibc (analyzers/alloc/glibc.c) */
	(const char *const[]){"struct malloc_state", "flags", "fastbinsY", "top",
		"bins", "next", "system_mem", "attached_threads", NULL},
	(const char *const[]){"struct malloc_chunk", "mchunk_size", "fd", "bk",
		NULL},
	(const char *const[]){"heap_info", "ar_ptr", "prev", "size", NULL},
	(const char *const[]){"struct malloc_par", "sbrk_base", "n_mmaps",
		"mmapped_mem", "mmap_threshold", "hp_pagesize", NULL},
	(const char *const[]){"tcache_perthread_struct", "counts", "entries",
		NULL},
	/* roots (analyzers/roots.c) */
	(const char *const[]){"struct pthread", "list", "tid", "stackblock",
		"stackblock_size", NULL},
	(const char *const[]){"tcbhead_t", "dtv", NULL},
	(const char *const[]){"struct rtld_global", "_dl_stack_used",
		"_dl_stack_cache", NULL},
	(const char *const[]){"struct rtld_global_ro", "_dl_tls_static_size",
		NULL},
	/* jemalloc built with -g (analyzers/alloc/jemalloc.c) */
	(const char *const[]){"struct edata_s", "e_addr", "e_size_esn",
		"e_slab_data", NULL},
	(const char *const[]){"struct bin_info_s", NULL},
	(const char *const[]){"struct rtree_s", "root", NULL},
	(const char *const[]){"struct emap_s", "rtree", NULL},
	(const char *const[]){"struct tsd_s", "state",
		"cant_access_tsd_items_directly_use_a_getter_or_setter_tcache",
		"cant_access_tsd_items_directly_use_a_getter_or_setter_arena", NULL},
	(const char *const[]){"struct tcache_s", "tcache_slow", "bins", NULL},
	(const char *const[]){"struct cache_bin_s", "stack_head",
		"low_bits_empty", NULL},
	(const char *const[]){"struct tcache_slow_s", "arena", "tcache",
		"cache_bin_array_descriptor", "dyn_alloc", NULL},
	(const char *const[]){"struct cache_bin_array_descriptor_s", "link",
		"bins", NULL},
	(const char *const[]){"struct arena_s", "ind",
		"cache_bin_array_descriptor_ql", "base", NULL},
	(const char *const[]){"struct base_s", "blocks", NULL},
	(const char *const[]){"struct base_block_s", "size", "next", NULL},
	/* a union and C++ classes (seeds) */
	(const char *const[]){"union hs_seed_word", "u", "p", NULL},
	(const char *const[]){"Session", "cart", "name", NULL},
};

static void layouts(Dwarf *dbg)
{
	for (size_t i = 0; i < 2 * sizeof(lookups) / sizeof(lookups[0]); i++) {
		const char *const *q = lookups[i / 2];
		struct hs_layout l;
		struct hs_error *err = i % 2 ?
			hs_dwarf_layout_in_unit(dbg, "malloc.c", q[0], &l) :
			hs_dwarf_layout_in(dbg, q[0], &l);
		if (err) {
			hs_error_destroy(err);
			continue;
		}
		sink += l.size + l.nfields;
		for (size_t k = 0; k < l.nfields; k++)
			sink += l.fields[k].offset + l.fields[k].size +
				strlen(l.fields[k].name);
		for (size_t k = 1; q[k]; k++) {
			uint64_t off, size;
			err = hs_layout_member(&l, q[k], &off, &size);
			if (!err)
				sink += off + size;
			hs_error_destroy(err);
		}
		hs_layout_fini(&l);
	}
}

/* No separate debug file is ever looked for: the input is all there is. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name,
			const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = NULL,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static void type_walk(struct hs_dtypes *t, struct hs_dtype *d)
{
	const struct hs_dptr *p;
	size_t n;
	struct hs_error *err = hs_dtype_pointers(t, d, &p, &n);
	if (err) {
		hs_error_destroy(err);
		return;
	}
	uint64_t offs[] = {0, 8, d->size ? d->size - 1 : 0, d->size};
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		char *s = hs_dtype_member_at(t, d, offs[k]);
		if (s)
			sink += strlen(s);
		free(s);
	}
	for (size_t k = 0; k < n && k < 16; k++) {
		char *s = hs_dtype_member_at(t, d, p[k].offset);
		if (s)
			sink += strlen(s);
		free(s);
		sink += p[k].stride * p[k].count;
		if (p[k].pointee)
			sink += p[k].pointee->size;
	}
}

/* A variable's type, then the types its pointers point to (as the type
 * analysis propagates along them). */
static void type_walk2(struct hs_dtypes *t, struct hs_dtype *d)
{
	type_walk(t, d);
	const struct hs_dptr *p;
	size_t n;
	struct hs_error *err = hs_dtype_pointers(t, d, &p, &n);
	if (err) {
		hs_error_destroy(err);
		return;
	}
	for (size_t k = 0; k < n && k < 8; k++)
		if (p[k].pointee)
			type_walk(t, p[k].pointee);
}


/* hs_dtypes_variables' filter, both ways: keeps half the variables, by
 * their address and size (which the input chooses). */
static bool fuzz_holds(void *arg, uint64_t addr, uint64_t size)
{
	(void)arg;
	return ((addr ^ size) & 1) == 0;
}

static void dwtypes(const uint8_t *data, size_t size)
{
	if (memfd < 0 || ftruncate(memfd, 0) != 0 ||
	    pwrite(memfd, data, size, 0) != (ssize_t)size)
		return;
	int fd = dup(memfd);  /* libdwfl closes the one it is given */
	if (fd < 0)
		return;
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(dwfl);
	Dwfl_Module *mod = dwfl_report_offline(dwfl, "fuzz", "fuzz.elf", fd);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		/* libdwfl takes the fd only with the module (offline.c:
		 * closefd is false for a caller's fd) */
		close(fd);
		dwfl_end(dwfl);
		return;
	}
	struct hs_module m = {.mod = mod, .name = (char *)"fuzz"};
	struct hs_dtypes *t;
	if (hs_dtypes_create(NULL, &t)) {
		dwfl_end(dwfl);
		return;
	}
	struct hs_dvar *vars = NULL;
	size_t nvars = 0;
	struct hs_error *err = hs_dtypes_variables(t, &m, fuzz_holds, NULL, &vars, &nvars);
	hs_error_destroy(err);
	for (size_t i = 0; i < nvars && i < 64; i++)
		if (vars[i].type)
			type_walk2(t, vars[i].type);
	/* locals of each function, at its entry and as a return address */
	int nsyms = dwfl_module_getsymtab(mod);
	for (int i = 0, nfn = 0; i < nsyms && nfn < 16; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		if (!dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		nfn++;
		size_t before = nvars;
		err = hs_dtypes_frame_locals(t, &m, addr, true, 0x7ffc0000, &vars,
					     &nvars);
		hs_error_destroy(err);
		err = hs_dtypes_frame_locals(t, &m, addr + sym.st_size / 2, false,
					     0x7ffc0000, &vars, &nvars);
		hs_error_destroy(err);
		for (size_t k = before; k < nvars && k < before + 16; k++)
			if (vars[k].type)
				type_walk(t, vars[k].type);
	}
	hs_dvars_free(vars, nvars);
	hs_dtypes_destroy(t);
	dwfl_end(dwfl);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	elf_version(EV_CURRENT);
	memfd = memfd_create("fuzz-dwarf", MFD_CLOEXEC);
	if (memfd < 0)
		perror("fuzz_dwarf: memfd_create");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* libelf wants a writable image */
	char *img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	Elf *elf = elf_memory(img, size);
	if (elf) {
		Dwarf *dbg = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		if (dbg) {
			layouts(dbg);
			dwarf_end(dbg);
		}
		elf_end(elf);
	}
	free(img);
	dwtypes(data, size);
	return 0;
}
