/* capstone loaded on first use (analyzers/alloc/disasm.h). */
#include "analyzers/alloc/disasm.h"
#include "src/alloc.h"

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <stdlib.h>

#define HS_DISASM_STR2(x) #x
#define HS_DISASM_STR(x) HS_DISASM_STR2(x)
/* the library built from the header this file is compiled with */
#define CAPSTONE_SONAME "libcapstone.so." HS_DISASM_STR(CS_API_MAJOR)

struct hs_disasm {
	void *lib;
	csh cs;
	bool opened;
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_disasm) *disasm;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
};

struct hs_error *hs_disasm_open(struct hs_disasm **ret)
{
	*ret = NULL;
	struct hs_disasm *d = hs_calloc(1, sizeof(*d));
	if (!d)
		return &hs_error_nomem;
	struct hs_error *err = NULL;
	d->lib = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		/* dlerror names the file */
		const char *why = dlerror();
		err = why ? hs_error_create(HS_ERR_UNSUPPORTED, "capstone: %s", why)
			  : hs_error_create(HS_ERR_UNSUPPORTED, "capstone: cannot load %s",
					    CAPSTONE_SONAME);
		goto fail;
	}
	d->open = (__typeof__(cs_open) *)dlsym(d->lib, "cs_open");
	d->option = (__typeof__(cs_option) *)dlsym(d->lib, "cs_option");
	d->disasm = (__typeof__(cs_disasm) *)dlsym(d->lib, "cs_disasm");
	d->free = (__typeof__(cs_free) *)dlsym(d->lib, "cs_free");
	d->close = (__typeof__(cs_close) *)dlsym(d->lib, "cs_close");
	if (!d->open || !d->option || !d->disasm || !d->free || !d->close) {
		err = hs_error_create(HS_ERR_UNSUPPORTED,
				      "capstone: %s lacks its functions", CAPSTONE_SONAME);
		goto fail;
	}
	if (d->open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
		err = hs_error_create(HS_ERR_UNSUPPORTED,
				      "capstone: cannot open an x86-64 disassembler");
		goto fail;
	}
	d->opened = true;
	d->option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	*ret = d;
	return NULL;
fail:
	hs_disasm_close(d);
	return err;
}

size_t hs_disasm_rip_refs(struct hs_disasm *d, const uint8_t *code,
			  size_t size, uint64_t addr,
			  bool (*keep)(const void *arg, uint64_t address),
			  const void *arg, uint64_t *out, size_t max,
			  size_t *ninsn)
{
	cs_insn *insn = NULL;
	size_t n = d->disasm(d->cs, code, size, addr, 0, &insn), k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		const cs_x86 *x = &insn[i].detail->x86;
		for (uint8_t o = 0; o < x->op_count && k < max; o++) {
			if (x->operands[o].type != X86_OP_MEM ||
			    x->operands[o].mem.base != X86_REG_RIP)
				continue;
			uint64_t t = insn[i].address + insn[i].size +
				     (uint64_t)x->operands[o].mem.disp;
			if (keep(arg, t))
				out[k++] = t;
		}
	}
	if (n)
		d->free(insn, n);
	if (ninsn)
		*ninsn = n;
	return k;
}

void hs_disasm_close(struct hs_disasm *d)
{
	if (!d)
		return;
	if (d->opened)
		d->close(&d->cs);
	if (d->lib)
		dlclose(d->lib);
	free(d);
}

bool hs_disasm_function_refs(struct hs_disasm *d, struct hs_dwarf *dw,
			     struct hs_module *mod, const struct hs_core *core,
			     const char *name,
			     bool (*keep)(const void *arg, uint64_t address),
			     const void *arg, uint64_t *out, size_t max,
			     size_t *nrefs, size_t *ninsn)
{
	uint64_t addr = 0, size = 0;
	struct hs_error *err = hs_dwarf_symbol(dw, mod, name, &addr, &size, NULL);
	bool found = !err;
	hs_error_destroy(err);
	if (!found || !size || size > 65536)
		return false;
	uint8_t *code = hs_malloc(size);
	if (!code)
		return false;
	if (!hs_dwarf_read_file(dw, addr, code, size) &&
	    !hs_core_read_quiet(core, addr, code, size)) {
		free(code);
		return false;
	}
	*nrefs = hs_disasm_rip_refs(d, code, size, addr, keep, arg, out, max, ninsn);
	free(code);
	return true;
}
