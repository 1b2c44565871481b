#include <string.h>

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/glibc.h"
#include "analyzers/alloc/jemalloc.h"

static const struct hs_backend tcmalloc = {
	.name = "tcmalloc", .lib_prefix = "libtcmalloc", .symbol = "tc_malloc",
};

static const struct hs_backend mimalloc = {
	.name = "mimalloc", .lib_prefix = "libmimalloc", .symbol = "mi_malloc",
};

/* Recognized allocators first (a program that links tcmalloc still maps
 * libc), then the walkers; glibc's is the default. */
const struct hs_backend *const hs_backends[] = {
	&tcmalloc,
	&mimalloc,
	&hs_jemalloc_backend,
	&hs_glibc_backend,
	NULL,
};

/* A recognized allocator without a walker: by its library's name, or by
 * an entry point a static executable exports. */
static bool detect_by_name(const struct hs_backend *b, struct hs_dwarf *dw,
			   struct hs_module **lib)
{
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		if (!strncmp(hs_module_base(m), b->lib_prefix, strlen(b->lib_prefix))) {
			*lib = m;
			return true;
		}
		if (!m->is_exe)
			continue;
		HS_AUTO_ERROR *err = hs_dwarf_symbol(dw, m, b->symbol, NULL, NULL, NULL);
		if (!err) {
			*lib = m;
			return true;
		}
	}
	return false;
}

struct hs_error *hs_backend_find(struct hs_dwarf *dw,
				 const struct hs_backend **ret)
{
	const struct hs_backend *const *b;
	for (b = hs_backends; *b; b++) {
		struct hs_module *lib = NULL;
		if ((*b)->walk) {
			if ((*b)->detect && !(*b)->detect(dw, &lib))
				continue;
			*ret = *b;
			return NULL;
		}
		if (detect_by_name(*b, dw, &lib))
			return hs_error_create(HS_ERR_UNSUPPORTED,
					       "the program's malloc is %s (%s, build-id %s), whose heap heapsift does not read yet; it reads glibc's malloc and jemalloc",
					       (*b)->name, hs_module_base(lib),
					       lib->build_id ? lib->build_id : "unknown");
	}
	return hs_error_create(HS_ERR_NOT_FOUND, "no allocator heapsift knows in this core");
}
