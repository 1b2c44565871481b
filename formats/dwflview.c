/* See dwflview.h.  The dynamic linker's list, as the core holds it (glibc
 * <link.h>, <elf.h>):
 *
 *   auxv AT_PHDR, AT_PHNUM -> the executable's Elf64_Phdr[] in memory
 *     PT_PHDR.p_vaddr       -> load bias = AT_PHDR - p_vaddr
 *     PT_DYNAMIC            -> Elf64_Dyn[] {d_tag, d_val}; DT_DEBUG -> r_debug
 *   r_debug   {int r_version; link_map *r_map @8; ...}
 *   link_map  {l_addr @0, char *l_name @8, l_ld @16, l_next @24, l_prev @32}
 */
#include "formats/dwflview.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "src/alloc.h"
#include "src/vector.h"
#include "src/safeopen.h"

enum {
	MAX_PHNUM = 1024,
	MAX_DYN = 4096,         /* dynamic entries looked at */
	MAX_LINK_MAPS = 1 << 16,
	MAX_NAME = 4096,
};

struct patch {
	uint64_t off, len;
};

HS_VECTOR(patches, struct patch)

bool hs_dwfl_view_blanked(const char *name)
{
	if (!name || !*name)
		return false;
	for (; *name; name++)
		if (*name != '/')
			return false;
	return true;
}

const char *hs_dwfl_view_name(const struct hs_core *core, uint64_t addr)
{
	const struct hs_core_file *f = hs_core_find_file(core, addr);
	return f ? f->path : NULL;
}

/* Looks at path (without opening it): true when something that is not a
 * regular file is there.  Nothing there is fine: libdwfl's open fails. */
static bool unsafe(const char *path, mode_t *mode)
{
	struct stat st;
	if (!*path || hs_dwfl_view_blanked(path) || stat(path, &st) != 0)
		return false;
	*mode = st.st_mode;
	return !S_ISREG(st.st_mode);
}

static struct hs_error *check(const struct hs_core *core, struct hs_log *log,
			      const char *path, uint64_t off, const char *what,
			      struct patches *p)
{
	mode_t mode = 0;
	if (!unsafe(path, &mode))
		return NULL;
	/* warn once per path (NT_FILE repeats a path for each mapping) */
	bool seen = false;
	for (size_t i = 0; i < p->n && !seen; i++)
		seen = p->v[i].len == strlen(path) &&
		       !memcmp(core->data + p->v[i].off, path, p->v[i].len);
	if (!seen)
		hs_log_warn(log, "the core names %s in %s: %s, not a regular file, so it is not opened",
			    path, what, hs_file_kind(mode));
	return patches_push(p, (struct patch){off, strlen(path)});
}

/* The address of r_debug, from the executable's dynamic section, or 0. */
static uint64_t find_r_debug(const struct hs_core *core)
{
	uint64_t phdr, phnum;
	if (!hs_core_auxv(core, AT_PHDR, &phdr) ||
	    !hs_core_auxv(core, AT_PHNUM, &phnum) || !phnum || phnum > MAX_PHNUM)
		return 0;
	uint64_t bias = 0, dyn = 0, dynsz = 0;
	bool have_dyn = false;
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		if (!hs_core_read_quiet(core, phdr + i * sizeof(ph), &ph, sizeof(ph)))
			return 0;
		if (ph.p_type == PT_PHDR)
			bias = phdr - ph.p_vaddr;
		else if (ph.p_type == PT_DYNAMIC && !have_dyn) {
			have_dyn = true;
			dyn = ph.p_vaddr;
			dynsz = ph.p_memsz;
		}
	}
	if (!have_dyn)
		return 0;
	dyn += bias;
	for (uint64_t k = 0; k < MAX_DYN && (k + 1) * 16 <= dynsz; k++) {
		uint64_t tag, val;
		if (!hs_core_read_u64(core, dyn + 16 * k, &tag) || tag == DT_NULL ||
		    !hs_core_read_u64(core, dyn + 16 * k + 8, &val))
			break;
		if (tag == DT_DEBUG)
			return val;
	}
	return 0;
}

/* The file offset of the NUL-terminated string at addr, when it lies whole
 * in one segment's file data (as libdwfl reads it); its length in *len. */
static bool string_at(const struct hs_core *core, uint64_t addr,
		      uint64_t *off, uint64_t *len)
{
	const struct hs_core_segment *s = hs_core_find_segment(core, addr);
	if (!s || addr - s->vaddr >= s->avail)
		return false;
	uint64_t o = s->offset + (addr - s->vaddr);
	uint64_t room = s->avail - (addr - s->vaddr);
	if (room > MAX_NAME)
		room = MAX_NAME;
	const uint8_t *nul = memchr(core->data + o, 0, room);
	if (!nul)
		return false;
	*off = o;
	*len = (uint64_t)(nul - (core->data + o));
	return true;
}

static struct hs_error *check_link_map(const struct hs_core *core,
				       struct hs_log *log, struct patches *p)
{
	uint64_t r_debug = find_r_debug(core), lm;
	if (!r_debug || !hs_core_read_u64(core, r_debug + 8, &lm))
		return NULL;
	char name[MAX_NAME];
	for (size_t i = 0; lm && i < MAX_LINK_MAPS; i++) {
		uint64_t l_name, l_next, off, len;
		if (!hs_core_read_u64(core, lm + 8, &l_name) || !hs_core_read_u64(core, lm + 24, &l_next))
			break;
		if (l_name && string_at(core, l_name, &off, &len) && len) {
			memcpy(name, core->data + off, len);
			name[len] = 0;
			struct hs_error *err = check(core, log, name, off,
						     "the dynamic linker's list", p);
			if (err)
				return err;
		}
		lm = l_next;
	}
	return NULL;
}

struct hs_error *hs_dwfl_view_create(const struct hs_core *core,
				     struct hs_log *log,
				     struct hs_dwfl_view *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->data = core->data;
	ret->size = core->size;
	struct patches p = {0};
	struct hs_error *err = NULL;
	for (size_t i = 0; i < core->nfiles && !err; i++) {
		const char *path = core->files[i].path;
		err = check(core, log, path,
			    (uint64_t)((const uint8_t *)path - core->data),
			    "its file list (NT_FILE)", &p);
	}
	if (!err)
		err = check_link_map(core, log, &p);
	if (err || !p.n)
		goto out;
	if (core->mapped && core->fd >= 0) {
		void *m = mmap(NULL, core->size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE, core->fd, 0);
		if (m == MAP_FAILED) {
			err = hs_error_errno(errno, "%s: mmap", core->path);
			goto out;
		}
		ret->map = m;
		ret->data = m;
	} else {
		ret->copy = hs_malloc(core->size);
		if (!ret->copy) {
			err = &hs_error_nomem;
			goto out;
		}
		memcpy(ret->copy, core->data, core->size);
		ret->data = ret->copy;
	}
	uint8_t *w = ret->map ? ret->map : ret->copy;
	for (size_t i = 0; i < p.n; i++)
		memset(w + p.v[i].off, '/', p.v[i].len);
	ret->npatched = p.n;
out:
	patches_free(&p);
	if (err)
		hs_dwfl_view_destroy(ret);
	return err;
}

void hs_dwfl_view_destroy(struct hs_dwfl_view *v)
{
	if (v->map)
		munmap(v->map, v->size);
	free(v->copy);
	v->map = NULL;
	v->copy = NULL;
	v->data = NULL;
}
