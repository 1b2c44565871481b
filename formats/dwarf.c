/* Modules, symbols, type layouts, TLS and unwinding of a core through
 * libdwfl: see formats/dwarf.h. */
#include "src/sort.h"
#include "src/alloc.h"
#include "formats/dwarf.h"
#include "formats/dwflview.h"
#include "src/safeopen.h"
#include "src/strmap.h"
#include "src/vector.h"

#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const hs_debug_source_names[] = {
	[HS_DEBUG_NONE] = "none",
	[HS_DEBUG_SELF] = "self",
	[HS_DEBUG_BUILD_ID] = "build-id",
	[HS_DEBUG_DEBUG_DIR] = "debug-dir",
	[HS_DEBUG_DEBUGINFOD] = "debuginfod",
	[HS_DEBUG_OTHER] = "other",
};

struct layout_cache_entry {
	struct hs_module *mod;
	struct hs_layout layout;
	bool missing;           /* looked up and not found */
};

/* A module's top-level type DIEs (typedefs, structs, unions) by name, in
 * the order of its units and of the DIEs in each, made as the searches go:
 * a search reads the units not read yet only until one defines its type.
 * Every search sees the DIEs of a name in the order the plain search
 * (find_in_cu over every unit) meets them, so both find the same
 * definition; a layout lookup no longer reads the units once per type. */
struct type_die {
	Dwarf_Die die;
	size_t next;            /* the next DIE of the same name, or NO_DIE */
};
struct type_name {
	size_t first, last;     /* indices into dies */
};
HS_VECTOR(type_dies, struct type_die)
HS_VECTOR(type_names, struct type_name)
#define NO_DIE SIZE_MAX

struct type_index {
	Dwarf *dbg;             /* NULL: not made yet */
	Dwarf_CU *cu;           /* the last unit read (NULL: none yet) */
	bool done;              /* every unit is read */
	/* the unit hs_dwarf_layout_unit names, once looked for */
	const char *unit_name;  /* (the caller's string) */
	bool unit_found;
	Dwarf_Die unit;
	struct hs_strmap by_name;  /* name (borrowed from the DWARF) -> names */
	struct type_names names;
	struct type_dies dies;
};

static void type_index_fini(struct type_index *t);

struct symtab_cache {
	struct hs_module *mod;
	struct hs_symbol *data, *tls;
	size_t ndata, ntls;
};

struct hs_dwarf {
	Dwfl_Callbacks callbacks;
	struct symtab_cache *symtabs;
	size_t nsymtabs;
	bool attached;          /* dwfl_core_file_attach done */
	bool attach_failed;
	char *debuginfo_path;
	char *sysroot;
	char *debug_dir;
	Dwfl *dwfl;
	Elf *core_elf;
	const struct hs_core *core;
	struct hs_dwfl_view view;       /* the core as libdwfl reads it */
	struct hs_log *log;
	struct hs_module *mods;
	size_t nmods;
	struct layout_cache_entry **layouts;  /* entries never move: callers
					      * keep pointers to them */
	size_t nlayouts;
	struct type_index *type_index;  /* one per module (mods[i]), made on
					 * the module's first layout search */
	bool released;          /* hs_dwarf_release: libdwfl's session ended,
				 * every mods[i].mod NULL */
	/* hs_dwarf_preload_arm/idle/wait */
	bool preload_armed, preload_running;
	pthread_t preload_thread;
};

static struct hs_error *dwfl_err(const char *what)
{
	return hs_error_create(HS_ERR_DWARF, "%s: %s", what, dwfl_errmsg(-1));
}

/* Build-id of an ELF file, compared with the one the core recorded. */
static bool build_id_matches(Dwfl_Module *mod, Elf *elf)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &want, &vaddr);
	if (n <= 0)
		return true;  /* nothing to compare with: accept */
	const void *have;
	ssize_t m = dwelf_elf_gnu_build_id(elf, &have);
	return m == n && memcmp(have, want, (size_t)n) == 0;
}

/* find_elf: under --sysroot first (checked by build-id), then libdwfl's own
 * build-id search (debug directories, debuginfod).  Module userdata is set
 * to the hs_dwarf right after reporting. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct hs_dwarf *dw = userdata ? *userdata : NULL;
	/* A path the view overwrote names something that is not a regular
	 * file here: only the build-id search and --sysroot are tried. */
	const char *path = modname;
	bool blanked = hs_dwfl_view_blanked(modname);
	/* a blanked path, or a soname from the link map ("libc.so.6"): the
	 * file the core maps there, by NT_FILE */
	if (blanked || (dw && modname && modname[0] != '/'))
		path = dw ? hs_dwfl_view_name(dw->core, base) : NULL;
	if (dw && dw->sysroot && path && path[0] == '/') {
		char *full;
		if (asprintf(&full, "%s%s", dw->sysroot, path) >= 0) {
			int fd = hs_open_regular_fd(full);
			if (fd >= 0) {
				Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
				if (elf && build_id_matches(mod, elf)) {
					*file_name = full;
					*elfp = elf;
					return fd;
				}
				elf_end(elf);
				close(fd);
			}
			free(full);
		}
	}
	int fd = dwfl_build_id_find_elf(mod, userdata, blanked ? NULL : modname,
					base, file_name, elfp);
	if (fd >= 0 || *elfp)
		return fd;
	/* The path the core names, if it still holds the same build. */
	if (!blanked && modname && modname[0] == '/' && !(dw && dw->sysroot)) {
		fd = hs_open_regular_fd(modname);
		if (fd >= 0) {
			Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
			if (elf && build_id_matches(mod, elf)) {
				*file_name = strdup(modname);
				*elfp = elf;
				return fd;
			}
			elf_end(elf);
			close(fd);
		}
	}
	return -1;
}

/* find_debuginfo: libdwfl's standard search, but a .gnu_debuglink that is
 * not a plain file name (it comes from the module's file, which the core
 * chose) is not followed: "../../x" could lead anywhere. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	if (debuglink_file && strchr(debuglink_file, '/'))
		debuglink_file = NULL;
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					    file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

static char *hexdup(const unsigned char *p, int n)
{
	char *s = hs_malloc(2 * (size_t)n + 1);
	if (!s)
		return NULL;
	for (int i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

struct collect_arg {
	struct hs_dwarf *dw;
	struct hs_error *err;
};

static int collect_module(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *varg)
{
	struct collect_arg *arg = varg;
	struct hs_dwarf *dw = arg->dw;
	*userdata = dw;
	struct hs_module *m = hs_realloc(dw->mods, (dw->nmods + 1) * sizeof(*m));
	if (!m) {
		arg->err = &hs_error_nomem;
		return DWARF_CB_ABORT;
	}
	dw->mods = m;
	m = &dw->mods[dw->nmods++];
	memset(m, 0, sizeof(*m));
	m->mod = mod;
	/* a path the view overwrote: the core's own name for it */
	if (hs_dwfl_view_blanked(name)) {
		const char *orig = hs_dwfl_view_name(dw->core, start);
		name = orig ? orig : "(a path that is not a regular file)";
	}
	m->name = strdup(name ? name : "?");
	Dwarf_Addr end;
	dwfl_module_info(mod, NULL, NULL, &end, NULL, NULL, NULL, NULL);
	m->start = start;
	m->end = end;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n > 0)
		m->build_id = hexdup(bits, n);
	if (!m->name || (n > 0 && !m->build_id)) {
		arg->err = &hs_error_nomem;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct hs_module *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct hs_error *hs_dwarf_create(const struct hs_core *core,
				 const struct hs_dwarf_options *opts,
				 struct hs_log *log, struct hs_dwarf **ret)
{
	struct hs_error *err = NULL;
	struct hs_dwarf *dw = hs_calloc(1, sizeof(*dw));
	if (!dw)
		return &hs_error_nomem;
	dw->log = log;
	if (opts->sysroot && !(dw->sysroot = strdup(opts->sysroot)))
		goto nomem;
	if (opts->debug_dir && !(dw->debug_dir = strdup(opts->debug_dir)))
		goto nomem;
	/* Leading '-': no CRC checks (build-ids are checked instead). */
	if (opts->no_system_debug ?
	    asprintf(&dw->debuginfo_path, "-%s%s",
		     opts->debug_dir ? ":" : "",
		     opts->debug_dir ? opts->debug_dir : "") < 0 :
	    asprintf(&dw->debuginfo_path, "-%s%s%s%s:.debug:/usr/lib/debug",
		     opts->debug_dir ? ":" : "",
		     opts->debug_dir ? opts->debug_dir : "",
		     opts->sysroot ? ":" : "",
		     opts->sysroot ? opts->sysroot : "") < 0) {
		dw->debuginfo_path = NULL;
		goto nomem;
	}
	if (opts->sysroot && !opts->no_system_debug) {
		char *p;
		if (asprintf(&p, "%s:%s/usr/lib/debug", dw->debuginfo_path,
			     opts->sysroot) < 0)
			goto nomem;
		free(dw->debuginfo_path);
		dw->debuginfo_path = p;
	}
	dw->callbacks.find_elf = find_elf;
	dw->callbacks.find_debuginfo = find_debuginfo;
	dw->callbacks.debuginfo_path = &dw->debuginfo_path;

	elf_version(EV_CURRENT);
	dw->dwfl = dwfl_begin(&dw->callbacks);
	if (!dw->dwfl) {
		err = dwfl_err("dwfl_begin");
		goto fail;
	}
	/* libelf reads the bytes hs_core_open checked and mapped: the path is
	 * not opened a second time (it could name another file by now) */
	dw->core = core;
	if (opts->exe) {
		/* the user's file, but libdwfl opens it itself */
		int fd;
		if ((err = hs_open_regular(opts->exe, &fd, NULL))) {
			err = hs_error_wrap(err, "--exe");
			goto fail;
		}
		close(fd);
	}
	if ((err = hs_dwfl_view_create(core, log, &dw->view)))
		goto fail;
	dw->core_elf = elf_memory((char *)dw->view.data, dw->view.size);
	if (!dw->core_elf) {
		err = hs_error_create(HS_ERR_FORMAT, "%s: %s", core->path,
				      elf_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(dw->dwfl);
	int n = dwfl_core_file_report(dw->dwfl, dw->core_elf, opts->exe);
	if (n < 0)
		hs_log_warn(log, "%s: cannot list the modules: %s", core->path,
			    dwfl_errmsg(-1));
	if (dwfl_report_end(dw->dwfl, NULL, NULL) != 0) {
		err = dwfl_err("dwfl_report_end");
		goto fail;
	}
	struct collect_arg arg = {.dw = dw};
	dwfl_getmodules(dw->dwfl, collect_module, &arg, 0);
	if (arg.err) {
		err = arg.err;
		goto fail;
	}
	hs_sort(dw->mods, dw->nmods, sizeof(*dw->mods), cmp_mod);
	/* The executable: the module that contains AT_ENTRY. */
	uint64_t entry;
	if (hs_core_auxv(core, 9 /* AT_ENTRY */, &entry)) {
		struct hs_module *m = hs_dwarf_module_at(dw, entry);
		if (m)
			m->is_exe = true;
	}
	if (opts->exe) {
		bool found = false;
		for (size_t i = 0; i < dw->nmods; i++)
			found |= dw->mods[i].is_exe;
		if (!found)
			hs_log_warn(log, "--exe %s: no module of the core matches it",
				    opts->exe);
	}
	for (size_t i = 0; i < dw->nmods; i++) {
		struct hs_module *m = &dw->mods[i];
		GElf_Addr bias;
		if (dwfl_module_getelf(m->mod, &bias)) {
			const char *mainfile = NULL;
			dwfl_module_info(m->mod, NULL, NULL, NULL, NULL, NULL,
					 &mainfile, NULL);
			m->bias = bias;
			/* libdwfl opens some files itself from the core's
			 * paths (after checking the build-id) without
			 * recording the name */
			if (!mainfile && m->name[0] == '/')
				mainfile = m->name;
			if (mainfile && !(m->elf_path = strdup(mainfile)))
				goto nomem;
		} else if (m->is_exe) {
			hs_log_warn(log, "executable %s (build-id %s) not found: its symbols and debug info are unavailable; pass --exe BINARY or --sysroot DIR",
				    m->name, m->build_id ? m->build_id : "unknown");
		} else if (strncmp(m->name, "linux-vdso", 10) &&
			   strncmp(m->name, "linux-gate", 10)) {
			hs_log_warn(log, "module %s (build-id %s) not found: its symbols are unavailable; pass --sysroot DIR if the core comes from another machine",
				    m->name, m->build_id ? m->build_id : "unknown");
		}
	}
	*ret = dw;
	return NULL;
nomem:
	err = &hs_error_nomem;
fail:
	hs_dwarf_destroy(dw);
	return err;
}

/* What dw holds of libdwfl's session: the type indexes, the symbol tables
 * (their names point into the modules' files) and the session itself. */
static void end_session(struct hs_dwarf *dw)
{
	for (size_t i = 0; dw->type_index && i < dw->nmods; i++)
		type_index_fini(&dw->type_index[i]);
	free(dw->type_index);
	dw->type_index = NULL;
	for (size_t i = 0; i < dw->nsymtabs; i++) {
		free(dw->symtabs[i].data);
		free(dw->symtabs[i].tls);
	}
	free(dw->symtabs);
	dw->symtabs = NULL;
	dw->nsymtabs = 0;
	if (dw->dwfl)
		dwfl_end(dw->dwfl);
	dw->dwfl = NULL;
}

void hs_dwarf_destroy(struct hs_dwarf *dw)
{
	if (!dw)
		return;
	hs_dwarf_preload_wait(dw);
	for (size_t i = 0; i < dw->nlayouts; i++) {
		struct hs_layout *l = &dw->layouts[i]->layout;
		for (size_t j = 0; j < l->nfields; j++)
			free(l->fields[j].name);
		free(l->fields);
		free(l->name);
		free(dw->layouts[i]);
	}
	free(dw->layouts);
	end_session(dw);
	for (size_t i = 0; i < dw->nmods; i++) {
		free(dw->mods[i].name);
		free(dw->mods[i].build_id);
		free(dw->mods[i].elf_path);
		free(dw->mods[i].debug_path);
	}
	free(dw->mods);
	if (dw->core_elf)
		elf_end(dw->core_elf);
	hs_dwfl_view_destroy(&dw->view);
	free(dw->debuginfo_path);
	free(dw->sysroot);
	free(dw->debug_dir);
	free(dw);
}

void hs_dwarf_release(struct hs_dwarf *dw)
{
	if (!dw || dw->released)
		return;
	hs_dwarf_preload_wait(dw);
	/* what the modules say of their debug info, while they can */
	for (size_t i = 0; i < dw->nmods; i++)
		hs_dwarf_check_debug(dw, &dw->mods[i]);
	end_session(dw);
	dw->attached = false;
	dw->attach_failed = true;
	for (size_t i = 0; i < dw->nmods; i++)
		dw->mods[i].mod = NULL;
	dw->released = true;
}

size_t hs_dwarf_num_modules(const struct hs_dwarf *dw)
{
	return dw->nmods;
}

struct hs_module *hs_dwarf_module(struct hs_dwarf *dw, size_t i)
{
	return i < dw->nmods ? &dw->mods[i] : NULL;
}

const char *hs_module_base(const struct hs_module *m)
{
	const char *base = strrchr(m->name, '/');
	return base ? base + 1 : m->name;
}

struct hs_module *hs_dwarf_find_module(struct hs_dwarf *dw, const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i < dw->nmods; i++) {
		if (!strncmp(hs_module_base(&dw->mods[i]), prefix, n))
			return &dw->mods[i];
	}
	return NULL;
}

bool hs_glibc_versioned_name(const char *base, const char *stem)
{
	size_t n = strlen(stem);
	if (strncmp(base, stem, n) || base[n] != '-')
		return false;
	const char *v = base + n + 1;
	size_t len = strspn(v, "0123456789.");
	return len >= 2 && isdigit((unsigned char)v[0]) && v[len - 1] == '.' &&
	       !strcmp(v + len, "so");
}

struct hs_module *hs_dwarf_find_glibc(struct hs_dwarf *dw, const char *prefix,
				      const char *stem)
{
	struct hs_module *m = hs_dwarf_find_module(dw, prefix);
	if (m)
		return m;
	for (size_t i = 0; i < dw->nmods; i++) {
		if (hs_glibc_versioned_name(hs_module_base(&dw->mods[i]), stem))
			return &dw->mods[i];
	}
	return NULL;
}

struct hs_module *hs_dwarf_module_at(struct hs_dwarf *dw, uint64_t addr)
{
	for (size_t i = 0; i < dw->nmods; i++)
		if (addr >= dw->mods[i].start && addr < dw->mods[i].end)
			return &dw->mods[i];
	return NULL;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return prefix && !strncmp(s, prefix, strlen(prefix));
}

static bool elf_has_dwarf(Elf *elf)
{
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/* Where debuginfod's client caches the debug file of build_id (its
 * documented layout: $DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME or
 * ~/.cache, then debuginfod_client/BUILDID/debuginfo), if it is there. */
static char *debuginfod_cache_file(const char *build_id)
{
	if (!build_id)
		return NULL;
	const char *dir = getenv("DEBUGINFOD_CACHE_PATH");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;
	int r;
	if (dir && *dir)
		r = asprintf(&path, "%s/%s/debuginfo", dir, build_id);
	else if (xdg && *xdg)
		r = asprintf(&path, "%s/debuginfod_client/%s/debuginfo", xdg, build_id);
	else if (home && *home)
		r = asprintf(&path, "%s/.cache/debuginfod_client/%s/debuginfo", home,
			     build_id);
	else
		return NULL;
	if (r < 0)
		return NULL;
	if (access(path, R_OK) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

void hs_dwarf_check_debug(struct hs_dwarf *dw, struct hs_module *m)
{
	if (m->debug_checked || !m->mod)
		return;
	m->debug_checked = true;
	Dwarf_Addr bias;
	if (!dwfl_module_getdwarf(m->mod, &bias)) {
		m->debug_source = HS_DEBUG_NONE;
		return;
	}
	const char *mainfile = NULL, *debugfile = NULL;
	dwfl_module_info(m->mod, NULL, NULL, NULL, NULL, NULL, &mainfile,
			 &debugfile);
	char *fetched = NULL;
	if (!debugfile && !elf_has_dwarf(hs_dwarf_module_elf(dw, m, NULL))) {
		/* libdwfl does not name what debuginfod fetched: look in
		 * debuginfod's cache for this build-id */
		fetched = debuginfod_cache_file(m->build_id);
		m->debug_source = fetched ? HS_DEBUG_DEBUGINFOD : HS_DEBUG_OTHER;
		m->debug_path = fetched;
		return;
	}
	if (!debugfile || (mainfile && !strcmp(debugfile, mainfile))) {
		m->debug_source = HS_DEBUG_SELF;
		debugfile = mainfile ? mainfile : m->elf_path;
	} else if (has_prefix(debugfile, dw->debug_dir))
		m->debug_source = HS_DEBUG_DEBUG_DIR;
	else if (strstr(debugfile, "/debuginfod_client/"))
		m->debug_source = HS_DEBUG_DEBUGINFOD;
	else if (strstr(debugfile, "/.build-id/"))
		m->debug_source = HS_DEBUG_BUILD_ID;
	else
		m->debug_source = HS_DEBUG_OTHER;
	if (debugfile)
		m->debug_path = strdup(debugfile);
}

static void *preload_main(void *arg)
{
	struct hs_dwarf *dw = arg;
	for (size_t i = 0; i < dw->nmods; i++)
		hs_dwarf_check_debug(dw, &dw->mods[i]);
	return NULL;
}

void hs_dwarf_preload_arm(struct hs_dwarf *dw)
{
	dw->preload_armed = true;
}

void hs_dwarf_idle(struct hs_dwarf *dw)
{
	if (!dw || !dw->preload_armed || dw->preload_running)
		return;
	dw->preload_armed = false;
	dw->preload_running = pthread_create(&dw->preload_thread, NULL,
					     preload_main, dw) == 0;
}

void hs_dwarf_preload_wait(struct hs_dwarf *dw)
{
	dw->preload_armed = false;
	if (dw->preload_running)
		pthread_join(dw->preload_thread, NULL);
	dw->preload_running = false;
}

struct hs_error *hs_dwarf_symbol(struct hs_dwarf *dw, struct hs_module *m,
				 const char *name, uint64_t *value,
				 uint64_t *size, bool *is_tls)
{
	(void)dw;
	int n = m->mod ? dwfl_module_getsymtab(m->mod) : -1;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(m->mod, i, &sym, &addr,
							NULL, NULL, NULL);
		if (!s || strcmp(s, name) || sym.st_shndx == SHN_UNDEF)
			continue;
		bool tls = GELF_ST_TYPE(sym.st_info) == STT_TLS;
		if (value)
			*value = tls ? sym.st_value : addr;
		if (size)
			*size = sym.st_size;
		if (is_tls)
			*is_tls = tls;
		return NULL;
	}
	return hs_error_create(HS_ERR_NOT_FOUND, "symbol %s not found in %s%s",
			       name, m->name,
			       n <= 0 ? " (no symbol table)" : "");
}

bool hs_dwarf_symbol_addr(struct hs_dwarf *dw, struct hs_module *m,
			  const char *name, uint64_t *addr)
{
	struct hs_error *err = hs_dwarf_symbol(dw, m, name, addr, NULL, NULL);
	hs_error_destroy(err);
	return !err;
}

bool hs_dwarf_symbolize(struct hs_dwarf *dw, uint64_t addr, const char **name,
			uint64_t *offset, struct hs_module **modp)
{
	struct hs_module *m = hs_dwarf_module_at(dw, addr);
	if (!m || !m->mod)
		return false;
	GElf_Off off;
	GElf_Sym sym;
	const char *s = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL,
					     NULL, NULL);
	if (!s)
		return false;
	*name = s;
	*offset = off;
	if (modp)
		*modp = m;
	return true;
}

/* ---- type layouts ---- */

static bool die_is_decl(Dwarf_Die *die)
{
	bool flag = false;
	Dwarf_Attribute attr;
	if (dwarf_attr(die, DW_AT_declaration, &attr))
		dwarf_formflag(&attr, &flag);
	return flag;
}

/* Is die (a top-level DIE named as wanted) a definition of the type?
 * kind: DW_TAG_structure_type, DW_TAG_union_type, or 0 for "a typedef or
 * an aggregate of that name".  *ret: the aggregate (a typedef peeled). */
static bool type_definition(Dwarf_Die *die, int kind, Dwarf_Die *ret)
{
	int tag = dwarf_tag(die);
	if (kind ? tag != kind :
	    (tag != DW_TAG_typedef && tag != DW_TAG_structure_type &&
	     tag != DW_TAG_union_type))
		return false;
	if (die_is_decl(die))
		return false;
	Dwarf_Die t = *die;
	if (tag == DW_TAG_typedef) {
		if (dwarf_peel_type(die, &t) != 0)
			return false;
		tag = dwarf_tag(&t);
		if ((tag != DW_TAG_structure_type &&
		     tag != DW_TAG_union_type) || die_is_decl(&t))
			return false;
	}
	*ret = t;
	return true;
}

static bool is_type_tag(int tag)
{
	return tag == DW_TAG_typedef || tag == DW_TAG_structure_type ||
	       tag == DW_TAG_union_type;
}

/* Looks among the top-level DIEs of cu for a definition of the named type
 * (type_definition). */
static bool find_in_cu(Dwarf_Die *cu, int kind, const char *name,
		       Dwarf_Die *ret)
{
	Dwarf_Die child;
	if (dwarf_child(cu, &child) != 0)
		return false;
	do {
		if (!is_type_tag(dwarf_tag(&child)))
			continue;
		const char *n = dwarf_diename(&child);
		if (n && !strcmp(n, name) && type_definition(&child, kind, ret))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static void type_index_fini(struct type_index *t)
{
	hs_strmap_free(&t->by_name);
	type_names_free(&t->names);
	type_dies_free(&t->dies);
	memset(t, 0, sizeof(*t));
}

static struct hs_error *type_index_add(struct type_index *t, Dwarf_Die *die,
				       const char *name)
{
	size_t k, i = t->dies.n;
	struct hs_error *err = type_dies_push(&t->dies,
					      (struct type_die){*die, NO_DIE});
	if (err)
		return err;
	if (hs_strmap_find(&t->by_name, name, &k)) {
		t->dies.v[t->names.v[k].last].next = i;
		t->names.v[k].last = i;
		return NULL;
	}
	if ((err = type_names_push(&t->names, (struct type_name){i, i})))
		return err;
	return hs_strmap_put(&t->by_name, name, t->names.n - 1);
}

/* Reads the next unit into t; false when there is none (t->done). */
static struct hs_error *type_index_read_unit(struct type_index *t, bool *more)
{
	Dwarf_Die cudie, child;
	*more = false;
	if (t->done ||
	    dwarf_get_units(t->dbg, t->cu, &t->cu, NULL, NULL, &cudie, NULL) != 0) {
		t->done = true;
		return NULL;
	}
	*more = true;
	if (dwarf_child(&cudie, &child) != 0)
		return NULL;
	do {
		if (!is_type_tag(dwarf_tag(&child)))
			continue;
		const char *n = dwarf_diename(&child);
		struct hs_error *err = n ? type_index_add(t, &child, n) : NULL;
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return NULL;
}

/* The first definition of the named type in t's module, reading units as
 * needed; *found: whether there is one. */
static struct hs_error *type_index_find(struct type_index *t, int kind,
					const char *name, Dwarf_Die *ret,
					bool *found)
{
	size_t seen = NO_DIE;   /* the last DIE of the name looked at */
	*found = false;
	for (;;) {
		size_t k;
		if (hs_strmap_find(&t->by_name, name, &k)) {
			size_t i = seen == NO_DIE ? t->names.v[k].first :
				   t->dies.v[seen].next;
			for (; i != NO_DIE; i = t->dies.v[i].next) {
				seen = i;
				if (type_definition(&t->dies.v[i].die, kind, ret)) {
					*found = true;
					return NULL;
				}
			}
		}
		bool more;
		struct hs_error *err = type_index_read_unit(t, &more);
		if (err || !more)
			return err;
	}
}

enum { MAX_ANON_DEPTH = 16 };

/* The members of agg, at base; an anonymous struct or union member adds
 * its own members.  chain holds the aggregates being expanded (depth of
 * them): hostile DWARF can make an anonymous member's type lead back to
 * one of them, which is not followed again. */
static struct hs_error *add_fields_in(struct hs_layout *l, Dwarf_Die *agg,
				      uint64_t base, Dwarf_Off *chain,
				      int depth)
{
	Dwarf_Die member;
	if (depth >= MAX_ANON_DEPTH || dwarf_child(agg, &member) != 0)
		return NULL;
	chain[depth] = dwarf_dieoffset(agg);
	do {
		if (dwarf_tag(&member) != DW_TAG_member)
			continue;
		Dwarf_Word off = 0;
		Dwarf_Attribute attr;
		if (dwarf_attr(&member, DW_AT_data_member_location, &attr) &&
		    dwarf_formudata(&attr, &off) != 0)
			continue;  /* location expressions: not in C structs */
		Dwarf_Die type;
		Dwarf_Word size = 0;
		if (dwarf_attr(&member, DW_AT_type, &attr) &&
		    dwarf_formref_die(&attr, &type))
			dwarf_aggregate_size(&type, &size);
		const char *name = dwarf_diename(&member);
		if (!name) {
			/* anonymous struct/union: its members are ours */
			Dwarf_Die peeled;
			if (dwarf_attr(&member, DW_AT_type, &attr) &&
			    dwarf_formref_die(&attr, &type) &&
			    dwarf_peel_type(&type, &peeled) == 0) {
				Dwarf_Off o = dwarf_dieoffset(&peeled);
				bool inside = false;
				for (int k = 0; k <= depth; k++)
					inside |= chain[k] == o;
				struct hs_error *err = inside ? NULL :
					add_fields_in(l, &peeled, base + off,
						      chain, depth + 1);
				if (err)
					return err;
			}
			continue;
		}
		struct hs_layout_field *f = hs_realloc(l->fields,
						    (l->nfields + 1) * sizeof(*f));
		if (!f)
			return &hs_error_nomem;
		l->fields = f;
		f = &l->fields[l->nfields];
		f->name = strdup(name);
		if (!f->name)
			return &hs_error_nomem;
		f->offset = base + off;
		f->size = size;
		l->nfields++;
	} while (dwarf_siblingof(&member, &member) == 0);
	return NULL;
}

static struct hs_error *add_fields(struct hs_layout *l, Dwarf_Die *agg,
				   uint64_t base)
{
	Dwarf_Off chain[MAX_ANON_DEPTH];
	return add_fields_in(l, agg, base, chain, 0);
}

/* "struct NAME", "union NAME" or NAME: the bare name, and *kind for
 * type_definition. */
static const char *type_name_parse(const char *name, int *kind)
{
	*kind = 0;
	if (!strncmp(name, "struct ", 7)) {
		*kind = DW_TAG_structure_type;
		return name + 7;
	}
	if (!strncmp(name, "union ", 6)) {
		*kind = DW_TAG_union_type;
		return name + 6;
	}
	return name;
}

/* *ret (zeroed by the caller): the layout of the aggregate at die. */
static struct hs_error *layout_of(Dwarf_Die *die, const char *name,
				  struct hs_layout *ret)
{
	if (!(ret->name = strdup(name)))
		return &hs_error_nomem;
	Dwarf_Word size = 0;
	dwarf_aggregate_size(die, &size);
	ret->size = size;
	struct hs_error *err = add_fields(ret, die, 0);
	if (err)
		hs_layout_fini(ret);
	return err;
}

/* The first unit of dbg whose name, less its directories, is `unit`:
 * *ret, or false.  (Its header and first DIE only, for each unit.) */
static bool unit_named(Dwarf *dbg, const char *unit, Dwarf_Die *ret)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	while (dwarf_get_units(dbg, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
		const char *n = dwarf_diename(&cudie);
		const char *base = n ? strrchr(n, '/') : NULL;
		if (n && !strcmp(base ? base + 1 : n, unit)) {
			*ret = cudie;
			return true;
		}
	}
	return false;
}

/* unit_named, looked for once by t. */
static bool type_index_unit(struct type_index *t, const char *unit, Dwarf_Die *ret)
{
	if (!t->unit_name || strcmp(t->unit_name, unit)) {
		t->unit_name = unit;
		t->unit_found = unit_named(t->dbg, unit, &t->unit);
	}
	*ret = t->unit;
	return t->unit_found;
}

struct hs_error *hs_dwarf_layout(struct hs_dwarf *dw, struct hs_module *m,
				 const char *name,
				 const struct hs_layout **ret)
{
	return hs_dwarf_layout_unit(dw, m, NULL, name, ret);
}

struct hs_error *hs_dwarf_layout_unit(struct hs_dwarf *dw, struct hs_module *m,
				      const char *unit, const char *name,
				      const struct hs_layout **ret)
{
	for (size_t i = 0; i < dw->nlayouts; i++) {
		struct layout_cache_entry *e = dw->layouts[i];
		if (e->mod == m && !strcmp(e->layout.name, name)) {
			if (e->missing)
				break;
			*ret = &e->layout;
			return NULL;
		}
	}
	Dwarf_Addr bias;
	Dwarf *dbg = m->mod ? dwfl_module_getdwarf(m->mod, &bias) : NULL;
	if (!dbg)
		return hs_error_create(HS_ERR_NO_DEBUGINFO,
				       "no DWARF for %s (build-id %s)", m->name,
				       m->build_id ? m->build_id : "unknown");
	if (!dw->type_index &&
	    !(dw->type_index = hs_calloc(dw->nmods, sizeof(*dw->type_index))))
		return &hs_error_nomem;
	struct type_index *t = &dw->type_index[m - dw->mods];
	if (t->dbg != dbg) {
		type_index_fini(t);
		t->dbg = dbg;
	}
	int kind;
	const char *bare = type_name_parse(name, &kind);
	Dwarf_Die die, cudie;
	bool ok = unit && type_index_unit(t, unit, &cudie) &&
		  find_in_cu(&cudie, kind, bare, &die);
	struct hs_layout found = {0};
	struct hs_error *err = ok ? NULL : type_index_find(t, kind, bare, &die, &ok);
	if (err) {
		type_index_fini(t);  /* a unit read in part: start again */
		return err;
	}
	if (!ok)
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "type %s not found in the DWARF of %s",
				       name, m->name);
	if ((err = layout_of(&die, name, &found)))
		return err;
	struct layout_cache_entry **v = hs_realloc(dw->layouts,
					       (dw->nlayouts + 1) * sizeof(*v));
	struct layout_cache_entry *e = v ? hs_calloc(1, sizeof(*e)) : NULL;
	if (v)
		dw->layouts = v;
	if (!e) {
		hs_layout_fini(&found);
		return &hs_error_nomem;
	}
	e->mod = m;
	e->layout = found;
	dw->layouts[dw->nlayouts++] = e;
	*ret = &e->layout;
	return NULL;
}

struct hs_error *hs_layout_member(const struct hs_layout *l, const char *member,
				  uint64_t *offset, uint64_t *size)
{
	for (size_t i = 0; i < l->nfields; i++) {
		if (!strcmp(l->fields[i].name, member)) {
			if (offset)
				*offset = l->fields[i].offset;
			if (size)
				*size = l->fields[i].size;
			return NULL;
		}
	}
	return hs_error_create(HS_ERR_NOT_FOUND, "%s has no member %s",
			       l->name, member);
}

struct hs_error *hs_dwarf_layout_in(Dwarf *dbg, const char *name,
				    struct hs_layout *ret)
{
	memset(ret, 0, sizeof(*ret));
	int kind;
	const char *bare = type_name_parse(name, &kind);
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, found;
	bool ok = false;
	while (!ok && dwarf_get_units(dbg, cu, &cu, NULL, NULL, &cudie, NULL) == 0)
		ok = find_in_cu(&cudie, kind, bare, &found);
	if (!ok)
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "type %s not found in the DWARF", name);
	return layout_of(&found, name, ret);
}

struct hs_error *hs_dwarf_layout_in_unit(Dwarf *dbg, const char *unit,
					 const char *name, struct hs_layout *ret)
{
	int kind;
	const char *bare = type_name_parse(name, &kind);
	Dwarf_Die cudie, found;
	if (unit_named(dbg, unit, &cudie) && find_in_cu(&cudie, kind, bare, &found)) {
		memset(ret, 0, sizeof(*ret));
		return layout_of(&found, name, ret);
	}
	return hs_dwarf_layout_in(dbg, name, ret);
}

void hs_layout_fini(struct hs_layout *l)
{
	for (size_t i = 0; i < l->nfields; i++)
		free(l->fields[i].name);
	free(l->fields);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

Elf *hs_dwarf_module_elf(struct hs_dwarf *dw, struct hs_module *m,
			 uint64_t *bias)
{
	(void)dw;
	GElf_Addr b;
	Elf *elf = m->mod ? dwfl_module_getelf(m->mod, &b) : NULL;
	if (elf && bias)
		*bias = b;
	return elf;
}

char *hs_dwarf_find_string(struct hs_dwarf *dw, struct hs_module *m,
			   const char *prefix)
{
	Elf *elf = hs_dwarf_module_elf(dw, m, NULL);
	if (!elf)
		return NULL;
	size_t plen = strlen(prefix);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & SHF_EXECINSTR))
			continue;
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		const char *p = d->d_buf, *end = p + d->d_size;
		while ((p = memmem(p, (size_t)(end - p), prefix, plen))) {
			const char *q = p;
			while (q < end && *q && *q != '\n')
				q++;
			return strndup(p, (size_t)(q - p));
		}
	}
	return NULL;
}

/* ---- symbol tables, TLS, unwinding ---- */

static int cmp_sym(const void *a, const void *b)
{
	const struct hs_symbol *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static void dedupe(struct hs_symbol *s, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if (!k || s[k - 1].addr != s[i].addr)
			s[k++] = s[i];
	*n = k;
}

static struct hs_error *load_symtab(struct hs_dwarf *dw, struct hs_module *m,
				    struct symtab_cache **ret)
{
	for (size_t i = 0; i < dw->nsymtabs; i++) {
		if (dw->symtabs[i].mod == m) {
			*ret = &dw->symtabs[i];
			return NULL;
		}
	}
	struct symtab_cache *c = hs_realloc(dw->symtabs,
					 (dw->nsymtabs + 1) * sizeof(*c));
	if (!c)
		return &hs_error_nomem;
	dw->symtabs = c;
	c = &dw->symtabs[dw->nsymtabs];
	memset(c, 0, sizeof(*c));
	c->mod = m;
	int n = m->mod ? dwfl_module_getsymtab(m->mod) : -1;
	size_t cap = n > 0 ? (size_t)n : 1;
	c->data = hs_malloc(cap * sizeof(*c->data));
	c->tls = hs_malloc(cap * sizeof(*c->tls));
	if (!c->data || !c->tls) {
		free(c->data);
		free(c->tls);
		return &hs_error_nomem;
	}
	dw->nsymtabs++;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr,
							   NULL, NULL, NULL);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || !sym.st_size)
			continue;
		int type = GELF_ST_TYPE(sym.st_info);
		struct hs_symbol hs = {
			.addr = addr, .size = sym.st_size, .name = name,
			.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL,
		};
		if (type == STT_TLS) {
			hs.addr = sym.st_value;
			c->tls[c->ntls++] = hs;
		} else if (type == STT_OBJECT || type == STT_NOTYPE ||
			   type == STT_COMMON) {
			c->data[c->ndata++] = hs;
		}
	}
	hs_sort(c->data, c->ndata, sizeof(*c->data), cmp_sym);
	dedupe(c->data, &c->ndata);
	hs_sort(c->tls, c->ntls, sizeof(*c->tls), cmp_sym);
	dedupe(c->tls, &c->ntls);
	*ret = c;
	return NULL;
}

struct hs_error *hs_dwarf_data_symbols(struct hs_dwarf *dw, struct hs_module *m,
				       const struct hs_symbol **ret,
				       size_t *count)
{
	struct symtab_cache *c;
	struct hs_error *err = load_symtab(dw, m, &c);
	if (err)
		return err;
	*ret = c->data;
	*count = c->ndata;
	return NULL;
}

struct hs_error *hs_dwarf_tls_symbols(struct hs_dwarf *dw, struct hs_module *m,
				      const struct hs_symbol **ret,
				      size_t *count)
{
	struct symtab_cache *c;
	struct hs_error *err = load_symtab(dw, m, &c);
	if (err)
		return err;
	*ret = c->tls;
	*count = c->ntls;
	return NULL;
}

static bool find_pt_tls(Elf *elf, GElf_Phdr *ret)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			*ret = ph;
			return true;
		}
	}
	return false;
}

bool hs_dwarf_module_tls(struct hs_dwarf *dw, struct hs_module *m,
			 uint64_t *memsz, uint64_t *align)
{
	Elf *elf = hs_dwarf_module_elf(dw, m, NULL);
	GElf_Phdr ph;
	if (!elf || !find_pt_tls(elf, &ph) || !ph.p_memsz)
		return false;
	*memsz = ph.p_memsz;
	*align = ph.p_align ? ph.p_align : 1;
	return true;
}

/* Calls fn(rela, module bias, the symbols its section names, arg) for
 * each TPOFF64 and DTPMOD64 relocation of module m's RELA sections, until
 * fn returns true (then returns true). */
static bool each_tls_rela(struct hs_dwarf *dw, struct hs_module *m,
			  bool (*fn)(const GElf_Rela *r, uint64_t bias,
				     Elf_Data *symdata, void *arg),
			  void *arg)
{
	uint64_t bias;
	Elf *elf = hs_dwarf_module_elf(dw, m, &bias);
	if (!elf)
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		/* symbol values for relocations that name a symbol */
		Elf_Data *symdata = NULL;
		Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
		if (symscn)
			symdata = elf_getdata(symscn, NULL);
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			if (!gelf_getrela(d, (int)i, &r))
				break;
			uint32_t type = GELF_R_TYPE(r.r_info);
			if ((type == R_X86_64_TPOFF64 || type == R_X86_64_DTPMOD64) &&
			    fn(&r, bias, symdata, arg))
				return true;
		}
	}
	return false;
}

struct tls_find {
	const struct hs_core *core;
	uint64_t fs_base, block;
};

/* A relocated GOT slot of the module's own TLS: where its block sits. */
static bool tls_block_of(const GElf_Rela *r, uint64_t bias, Elf_Data *symdata,
			 void *arg)
{
	struct tls_find *f = arg;
	uint32_t type = GELF_R_TYPE(r->r_info);
	uint64_t symval = 0;
	size_t symi = GELF_R_SYM(r->r_info);
	if (symi) {
		GElf_Sym sym;
		if (!symdata || !gelf_getsym(symdata, (int)symi, &sym) ||
		    sym.st_shndx == SHN_UNDEF)
			return false;  /* another module's variable */
		symval = sym.st_value;
	}
	uint64_t slot;
	if (!hs_core_read_u64(f->core, r->r_offset + bias, &slot))
		return false;
	if (type == R_X86_64_TPOFF64) {
		f->block = f->fs_base + slot - symval - (uint64_t)r->r_addend;
		return true;
	}
	/* DTPMOD64: slot = module id; dtv at tcb+8, 16-byte entries,
	 * dtv[id].val is the block */
	uint64_t dtv, block;
	if (slot == 0 || slot > 1 << 20 ||
	    !hs_core_read_u64(f->core, f->fs_base + 8, &dtv) ||
	    !hs_core_read_u64(f->core, dtv + 16 * slot, &block) ||
	    block == (uint64_t)-1 || block == 0)
		return false;
	f->block = block;
	return true;
}

bool hs_dwarf_tls_block(struct hs_dwarf *dw, const struct hs_core *core,
			struct hs_module *m, uint64_t fs_base, uint64_t *ret)
{
	uint64_t memsz, align;
	if (!hs_dwarf_module_tls(dw, m, &memsz, &align))
		return false;
	if (m->is_exe) {
		/* x86-64 TLS variant II: the executable's block is the first,
		 * ending at the thread pointer (rounded to its alignment). */
		*ret = fs_base - ((memsz + align - 1) & ~(align - 1));
		return true;
	}
	struct tls_find f = {.core = core, .fs_base = fs_base};
	if (!each_tls_rela(dw, m, tls_block_of, &f))
		return false;
	*ret = f.block;
	return true;
}

struct tpoff_slots {
	uint64_t *v;
	size_t n, max;
};

static bool tpoff_slot(const GElf_Rela *r, uint64_t bias, Elf_Data *symdata,
		       void *arg)
{
	(void)symdata;
	struct tpoff_slots *t = arg;
	if (GELF_R_TYPE(r->r_info) == R_X86_64_TPOFF64 && !GELF_R_SYM(r->r_info))
		t->v[t->n++] = r->r_offset + bias;
	return t->n >= t->max;  /* stop when full */
}

size_t hs_dwarf_tpoff_slots(struct hs_dwarf *dw, struct hs_module *m,
			    uint64_t *ret, size_t max)
{
	struct tpoff_slots t = {ret, 0, max};
	if (max)
		each_tls_rela(dw, m, tpoff_slot, &t);
	return t.n;
}

/* Unwinding.  libdwfl's core backend (dwfl_core_file_attach) is not used:
 * in elfutils 0.188 its next_thread callback hands each NT_PRSTATUS pr_pid
 * to dwfl_getthreads as it is, and a pr_pid of 0 or below, which the
 * iteration takes for "no more threads" or "error", ends it there: the
 * threads after that note are never seen, and the 16 bytes the backend
 * allocated for the iteration are lost (docs/dependencies.md).  libdwfl gets
 * the core's threads from hs_core instead, thread i under the id i + 1
 * (always valid), with its registers from the note and the stack from the
 * core's segments.  Nothing is allocated per iteration, so an iteration that
 * stops early loses nothing either. */

/* The dwfl_arg of the callbacks, for as long as the Dwfl: unwind_detach
 * (called by dwfl_end) frees it. */
struct unwind_src {
	const struct hs_core *core;
	size_t next;            /* threads handed out in this iteration */
};

static pid_t unwind_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct unwind_src *src = arg;
	if (!*thread_argp) {
		src->next = 0;
		*thread_argp = src;
	}
	if (src->next >= src->core->nthreads)
		return 0;
	return (pid_t)++src->next;  /* nthreads is at most 2^20 */
}

static bool unwind_memory_read(Dwfl *dwfl, Dwarf_Addr addr,
			       Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	const struct unwind_src *src = arg;
	/* the bytes as they are in the file, untraced, as libdwfl's own
	 * backend reads them; pages the dumper left out are no stack */
	const void *p = hs_core_ptr(src->core, addr, sizeof(*result));
	if (!p)
		return false;
	memcpy(result, p, sizeof(*result));
	return true;
}

static bool unwind_set_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwind_src *src = arg;
	pid_t id = dwfl_thread_tid(thread);
	if (id <= 0 || (size_t)id > src->core->nthreads)
		return false;
	const uint64_t *r = src->core->threads[id - 1].regs;
	/* DWARF register numbers 0-16 of x86-64 */
	const Dwarf_Word regs[] = {
		r[HS_REG_RAX], r[HS_REG_RDX], r[HS_REG_RCX], r[HS_REG_RBX],
		r[HS_REG_RSI], r[HS_REG_RDI], r[HS_REG_RBP], r[HS_REG_RSP],
		r[HS_REG_R8], r[HS_REG_R9], r[HS_REG_R10], r[HS_REG_R11],
		r[HS_REG_R12], r[HS_REG_R13], r[HS_REG_R14], r[HS_REG_R15],
		r[HS_REG_RIP],
	};
	if (!dwfl_thread_state_registers(thread, 0, sizeof(regs) / sizeof(*regs),
					 regs))
		return false;
	dwfl_thread_state_register_pc(thread, r[HS_REG_RIP]);
	return true;
}

static void unwind_detach(Dwfl *dwfl, void *arg)
{
	(void)dwfl;
	free(arg);
}

static const Dwfl_Thread_Callbacks unwind_callbacks = {
	.next_thread = unwind_next_thread,
	.memory_read = unwind_memory_read,
	.set_initial_registers = unwind_set_registers,
	.detach = unwind_detach,
};

/* Linux's PID_MAX_LIMIT on 64-bit machines: no thread id is above it. */
enum { TID_MAX = 4 * 1024 * 1024 };

struct tid_at {
	int32_t tid;
	uint32_t index;
};

static int cmp_tid_at(const void *a, const void *b)
{
	const struct tid_at *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* One warning for the threads whose NT_PRSTATUS pr_pid no thread can have:
 * 0 or below, above TID_MAX, or an earlier thread's. */
static struct hs_error *check_tids(struct hs_dwarf *dw,
				   const struct hs_core *core)
{
	size_t n = core->nthreads;
	if (!n)
		return NULL;
	struct tid_at *v = hs_malloc(n * sizeof(*v));
	uint32_t *same = hs_calloc(n, sizeof(*same));  /* 1 + earlier thread */
	if (!v || !same) {
		free(v);
		free(same);
		return &hs_error_nomem;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (struct tid_at){core->threads[i].tid, (uint32_t)i};
	hs_sort(v, n, sizeof(*v), cmp_tid_at);
	for (size_t i = 1; i < n; i++)
		if (v[i].tid == v[i - 1].tid)
			same[v[i].index] = same[v[i - 1].index] ?
					   same[v[i - 1].index] :
					   v[i - 1].index + 1;
	free(v);
	char list[256] = "";
	size_t bad = 0, len = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t tid = core->threads[i].tid;
		bool range = tid > 0 && tid <= TID_MAX;
		if (range && !same[i])
			continue;
		if (++bad > 3)
			continue;
		int m = range ?
			snprintf(list + len, sizeof(list) - len,
				 "%sthread %zu has %d (thread %u's)",
				 len ? ", " : "", i + 1, tid, same[i]) :
			snprintf(list + len, sizeof(list) - len,
				 "%sthread %zu has %d", len ? ", " : "", i + 1,
				 tid);
		if (m > 0)
			len += (size_t)m < sizeof(list) - len ?
			       (size_t)m : sizeof(list) - len - 1;
	}
	free(same);
	if (bad > 3)
		hs_log_warn(dw->log, "%s: impossible thread ids (NT_PRSTATUS pr_pid): %s, and %zu more threads; these are unwound all the same, named by their place in the core",
			    core->path, list, bad - 3);
	else if (bad)
		hs_log_warn(dw->log, "%s: impossible thread ids (NT_PRSTATUS pr_pid): %s; these threads are unwound all the same, named by their place in the core",
			    core->path, list);
	return NULL;
}

static struct hs_error *unwind_attach(struct hs_dwarf *dw,
				      const struct hs_core *core)
{
	struct hs_error *err = check_tids(dw, core);
	if (err)
		return err;
	struct unwind_src *src = hs_calloc(1, sizeof(*src));
	if (!src)
		return &hs_error_nomem;
	src->core = core;
	pid_t pid = core->process.valid ? core->process.pid : 0;
	if (dwfl_attach_state(dw->dwfl, dw->core_elf, pid, &unwind_callbacks,
			      src)) {
		dw->attached = true;
	} else {
		free(src);
		dw->attach_failed = true;
	}
	return NULL;
}

struct unwind_arg {
	struct hs_frame *frames;
	size_t n, cap;
	bool nomem;
};

static int frame_cb(Dwfl_Frame *state, void *varg)
{
	struct unwind_arg *a = varg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	Dwarf_Word sp = 0;
	if (dwfl_frame_reg(state, 7 /* DWARF rsp */, &sp) != 0)
		sp = 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 32;
		struct hs_frame *f = hs_realloc(a->frames, cap * sizeof(*f));
		if (!f) {
			a->nomem = true;
			return DWARF_CB_ABORT;
		}
		a->frames = f;
		a->cap = cap;
	}
	a->frames[a->n++] = (struct hs_frame){pc, sp, activation};
	return a->n >= 4096 ? DWARF_CB_ABORT : DWARF_CB_OK;
}

struct threads_arg {
	struct hs_thread_frames *t;  /* one per thread of the core */
	size_t n;
	bool nomem;
};

static int thread_cb(Dwfl_Thread *thread, void *varg)
{
	struct threads_arg *ta = varg;
	pid_t id = dwfl_thread_tid(thread);  /* index + 1 */
	if (id <= 0 || (size_t)id > ta->n)
		return DWARF_CB_OK;
	struct unwind_arg a = {0};
	dwfl_thread_getframes(thread, frame_cb, &a);
	if (a.nomem)
		ta->nomem = true;
	ta->t[id - 1].frames = a.frames;
	ta->t[id - 1].n = a.n;
	return DWARF_CB_OK;
}

struct hs_error *hs_dwarf_unwind_all(struct hs_dwarf *dw,
				     const struct hs_core *core,
				     struct hs_thread_frames **ret,
				     size_t *count)
{
	if (dw->released)
		return hs_error_create(HS_ERR_DWARF, "the modules' debug info was let go");
	if (!dw->attached && !dw->attach_failed) {
		struct hs_error *err = unwind_attach(dw, core);
		if (err)
			return err;
	}
	if (!dw->attached)
		return hs_error_create(HS_ERR_DWARF,
				       "cannot attach to the core for unwinding: %s",
				       dwfl_errmsg(-1));
	struct threads_arg ta = {.n = core->nthreads};
	ta.t = hs_calloc(ta.n ? ta.n : 1, sizeof(*ta.t));
	if (!ta.t)
		return &hs_error_nomem;
	for (size_t i = 0; i < ta.n; i++)
		ta.t[i].tid = core->threads[i].tid;
	dwfl_getthreads(dw->dwfl, thread_cb, &ta);
	if (ta.nomem) {
		hs_dwarf_frames_free(ta.t, ta.n);
		return &hs_error_nomem;
	}
	*ret = ta.t;
	*count = ta.n;
	return NULL;
}

void hs_dwarf_frames_free(struct hs_thread_frames *t, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(t[i].frames);
	free(t);
}

char *hs_dwarf_describe_pc(struct hs_dwarf *dw, uint64_t pc, bool exact)
{
	struct hs_module *m = hs_dwarf_module_at(dw, pc);
	if (!m || !m->mod)
		return NULL;
	/* a return address points after the call: look up the call itself */
	uint64_t look = exact ? pc : pc - 1;
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m->mod, look, &off, &sym, NULL,
						NULL, NULL);
	const char *base = hs_module_base(m);
	char *out = NULL;
	Dwfl_Line *line = dwfl_module_getsrc(m->mod, look);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL,
						NULL) : NULL;
	if (file) {
		const char *f = strrchr(file, '/');
		file = f ? f + 1 : file;
	}
	int r;
	if (name && file)
		r = asprintf(&out, "%s (%s:%d)", name, file, lineno);
	else if (name)
		r = asprintf(&out, "%s+%#llx", name, (unsigned long long)(pc - (look - off)));
	else
		r = asprintf(&out, "%s+%#llx", base, (unsigned long long)(pc - m->start));
	return r < 0 ? NULL : out;
}

bool hs_dwarf_read_file(struct hs_dwarf *dw, uint64_t addr, void *buf,
			size_t len)
{
	struct hs_module *m = hs_dwarf_module_at(dw, addr);
	if (!m)
		return false;
	uint64_t bias;
	Elf *elf = hs_dwarf_module_elf(dw, m, &bias);
	if (!elf)
		return false;
	size_t fsize;
	const char *file = elf_rawfile(elf, &fsize);
	size_t n;
	if (!file || elf_getphdrnum(elf, &n) != 0)
		return false;
	uint64_t v = addr - bias;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    v < ph.p_vaddr || v - ph.p_vaddr >= ph.p_filesz ||
		    len > ph.p_filesz - (v - ph.p_vaddr))
			continue;
		uint64_t off = ph.p_offset + (v - ph.p_vaddr);
		if (off > fsize || len > fsize - off)
			return false;
		memcpy(buf, file + off, len);
		return true;
	}
	return false;
}
