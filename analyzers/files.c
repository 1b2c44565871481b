/* glibc's stdio streams: see files.h for the layout. */
#include "analyzers/files.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/hashtab.h"

const char *const hs_file_kind_names[] = {
	[HS_FILE_HEAP] = "heap",
	[HS_FILE_STATIC] = "static",
	[HS_FILE_OTHER] = "other",
};

enum {
	IO_NO_READS = 4,
	IO_NO_WRITES = 8,
	IO_IS_APPENDING = 0x1000,
	/* more streams than this on the list is a loop we could not see */
	LIST_MAX = 1 << 20,
	/* no descriptor is this large (the kernel's default ceiling of
	 * fs.nr_open is 1 << 20) */
	FD_MAX = 1 << 20,
};

HS_HASH_SET(hs_file_seen)

struct layout {
	uint64_t flags, buf_base, buf_end, chain, fileno, mode, size;
	uint64_t prevchain;     /* 0: none */
};

/* glibc 2.31 to 2.40, x86-64 */
static const struct layout fallback = {
	.flags = 0, .buf_base = 56, .buf_end = 64, .chain = 104, .fileno = 112,
	.mode = 192, .size = 216,
};

struct finder {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	struct hs_log *log;
	struct hs_files *f;
	size_t cap;
	struct layout L;
	uint64_t vt_lo, vt_hi;          /* __libc_IO_vtables */
	uint64_t file_jumps;
	uint64_t std[3];                /* _IO_2_1_stdin_, stdout, stderr */
	struct hs_file_seen seen;
};

static const char *const std_names[3] = {"stdin", "stdout", "stderr"};

const char *hs_file_mode(uint32_t flags)
{
	bool r = !(flags & IO_NO_READS), w = !(flags & IO_NO_WRITES);
	bool a = flags & IO_IS_APPENDING;
	if (r && w)
		return a ? "a+" : "r+";
	if (w)
		return a ? "a" : "w";
	return r ? "r" : "-";
}

static bool symbol(struct finder *s, struct hs_module *m, const char *name,
		   uint64_t *addr)
{
	return hs_dwarf_symbol_addr(s->dw, m, name, addr);
}

/* The struct's offsets from libc's DWARF, when it has them and they are
 * sane; else the table's. */
static void find_layout(struct finder *s, struct hs_module *libc)
{
	s->L = fallback;
	const struct hs_layout *l;
	struct hs_error *err = hs_dwarf_layout(s->dw, libc, "struct _IO_FILE", &l);
	struct layout d = {0};
	if (!err &&
	    !(err = hs_layout_member(l, "_flags", &d.flags, NULL)) &&
	    !(err = hs_layout_member(l, "_IO_buf_base", &d.buf_base, NULL)) &&
	    !(err = hs_layout_member(l, "_IO_buf_end", &d.buf_end, NULL)) &&
	    !(err = hs_layout_member(l, "_chain", &d.chain, NULL)) &&
	    !(err = hs_layout_member(l, "_fileno", &d.fileno, NULL)) &&
	    !(err = hs_layout_member(l, "_mode", &d.mode, NULL))) {
		d.size = l->size;
		struct hs_error *e2 = hs_layout_member(l, "_prevchain", &d.prevchain, NULL);
		hs_error_destroy(e2);
		if (d.size >= 64 && d.size <= 1024 && d.chain % 8 == 0 &&
		    d.chain + 8 <= d.size && d.prevchain % 8 == 0 &&
		    d.prevchain + 8 <= d.size && d.fileno + 4 <= d.size &&
		    d.mode + 4 <= d.size && d.buf_end + 8 <= d.size) {
			s->L = d;
			s->f->from_dwarf = true;
		}
	}
	hs_error_destroy(err);
}

/* Without DWARF: glibc 2.41 put _prevchain where 2.31 to 2.40 have a
 * padding word that is 0 (184, before _mode).  In libc's own streams it
 * points to the _chain of the stream before, or to _IO_list_all. */
enum { PREVCHAIN_2_41 = 184 };
static void infer_prevchain(struct finder *s, uint64_t head)
{
	for (int k = 0; k < 3; k++) {
		uint64_t v;
		if (!s->std[k] ||
		    !hs_core_read_u64(s->core, s->std[k] + PREVCHAIN_2_41, &v) || !v)
			continue;
		bool link = v == head || hs_core_find_segment(s->core, v);
		for (int j = 0; j < 3; j++)
			link |= s->std[j] && v == s->std[j] + s->L.chain;
		if (link) {
			s->L.prevchain = PREVCHAIN_2_41;
			return;
		}
	}
}

/* libc's __libc_IO_vtables section, where every vtable of a stream is
 * (glibc checks a stream's vtable against it, IO_validate_vtable). */
static void find_vtables(struct finder *s, struct hs_module *libc)
{
	uint64_t bias;
	Elf *elf = hs_dwarf_module_elf(s->dw, libc, &bias);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, "__libc_IO_vtables") && sh.sh_size &&
		    sh.sh_addr + sh.sh_size > sh.sh_addr) {
			s->vt_lo = sh.sh_addr + bias;
			s->vt_hi = sh.sh_addr + sh.sh_size + bias;
			return;
		}
	}
}

static bool is_vtable(const struct finder *s, uint64_t v)
{
	return (v && v == s->file_jumps) || (v >= s->vt_lo && v < s->vt_hi);
}

static struct hs_error *push(struct finder *s, const struct hs_file *file)
{
	if (s->f->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct hs_file *v = hs_realloc(s->f->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		s->f->v = v;
		s->cap = cap;
	}
	s->f->v[s->f->n++] = *file;
	return NULL;
}

static uint32_t block_at(const struct finder *s, uint64_t addr, bool start)
{
	const struct hs_alloc *a = hs_heap_find(s->heap, addr);
	if (!a || hs_alloc_state(a) != HS_STATE_USED || (start && a->addr != addr))
		return UINT32_MAX;
	return (uint32_t)(a - s->heap->allocs);
}

/* Reads the stream at addr into *file; false when its words are not in
 * the core. */
static bool read_file(struct finder *s, uint64_t addr, struct hs_file *file)
{
	uint32_t flags;
	int32_t fd, mode;
	uint64_t base, end;
	if (!hs_core_read_quiet(s->core, addr + s->L.flags, &flags, 4) ||
	    !hs_core_read_quiet(s->core, addr + s->L.fileno, &fd, 4) ||
	    !hs_core_read_quiet(s->core, addr + s->L.mode, &mode, 4) ||
	    !hs_core_read_u64(s->core, addr + s->L.buf_base, &base) ||
	    !hs_core_read_u64(s->core, addr + s->L.buf_end, &end))
		return false;
	*file = (struct hs_file){.addr = addr, .id = UINT32_MAX, .flags = flags,
				 .mode = mode, .fd = fd, .buf_id = UINT32_MAX,
				 .kind = HS_FILE_OTHER};
	if (fd < -1 || fd >= FD_MAX) {
		hs_log_warn(s->log, "stream at %#llx: its descriptor (_fileno) %d is no descriptor",
			    (unsigned long long)addr, fd);
		file->fd = HS_FILE_NO_FD;
	}
	if (base || end) {
		if (end < base || end - base > (1ull << 40)) {
			hs_log_warn(s->log, "stream at %#llx: its buffer %#llx..%#llx makes no sense",
				    (unsigned long long)addr, (unsigned long long)base,
				    (unsigned long long)end);
			file->bad_buffer = true;
		} else {
			file->buf_base = base;
			file->buf_size = end - base;
			file->buf_id = block_at(s, base, false);
		}
	}
	for (int k = 0; k < 3; k++)
		if (s->std[k] && addr == s->std[k]) {
			file->kind = HS_FILE_STATIC;
			file->name = std_names[k];
		}
	if (file->kind == HS_FILE_OTHER && (file->id = block_at(s, addr, true)) != UINT32_MAX)
		file->kind = HS_FILE_HEAP;
	return true;
}

static struct hs_error *walk_list(struct finder *s, uint64_t head)
{
	uint64_t p;
	struct hs_error *err;
	if (!hs_core_read_u64(s->core, head, &p))
		return NULL;
	s->f->list_found = true;
	for (size_t n = 0; p; n++) {
		bool fresh;
		if (n == LIST_MAX) {
			hs_log_warn(s->log, "the list of streams (_IO_list_all) is longer than %d: not followed further",
				    LIST_MAX);
			s->f->list_loop = true;
			break;
		}
		if ((err = hs_file_seen_add(&s->seen, p, &fresh)))
			return err;
		if (!fresh) {
			hs_log_warn(s->log, "the list of streams (_IO_list_all) comes back to the stream at %#llx after %zu streams: a loop, not followed further",
				    (unsigned long long)p, n);
			s->f->list_loop = true;
			break;
		}
		uint64_t vt = 0, next;
		struct hs_file file;
		if (!hs_core_read_u64(s->core, p + s->L.size, &vt) || !is_vtable(s, vt) ||
		    !hs_core_read_u64(s->core, p + s->L.chain, &next) ||
		    !read_file(s, p, &file)) {
			hs_log_warn(s->log, "the list of streams (_IO_list_all) leads to %#llx, which is no stream: not followed further",
				    (unsigned long long)p);
			s->f->list_bad = true;
			break;
		}
		file.on_list = true;
		if ((err = push(s, &file)))
			return err;
		s->f->list_len++;
		p = next;
	}
	return NULL;
}

/* Used blocks that start with a stream the list does not hold. */
static struct hs_error *scan_blocks(struct finder *s)
{
	struct hs_error *err;
	for (size_t i = 0; i < s->heap->nallocs; i++) {
		const struct hs_alloc *a = &s->heap->allocs[i];
		uint64_t vt;
		if (hs_alloc_state(a) != HS_STATE_USED || a->size < s->L.size + 8 ||
		    hs_file_seen_has(&s->seen, a->addr) ||
		    !hs_core_read_u64(s->core, a->addr + s->L.size, &vt) ||
		    !is_vtable(s, vt))
			continue;
		struct hs_file file;
		if (!read_file(s, a->addr, &file))
			continue;
		if ((err = push(s, &file)))
			return err;
	}
	return NULL;
}

static struct hs_error *mark_blocks(struct finder *s)
{
	struct hs_files *f = s->f;
	f->nblocks = s->heap->nallocs;
	for (size_t i = 0; i < f->n; i++) {
		uint32_t id = f->v[i].id;
		if (id == UINT32_MAX)
			continue;
		if (!f->is_file &&
		    !(f->is_file = hs_calloc(f->nblocks / 64 + 1, sizeof(uint64_t))))
			return &hs_error_nomem;
		f->is_file[id / 64] |= 1ull << (id % 64);
	}
	/* _chain, and on 2.41 every word to _prevchain (the words between
	 * hold no pointer out of the block: the descriptor, offsets, and
	 * _lock, _codecvt, _wide_data into the block itself) */
	f->skip_at = (uint32_t)(s->L.chain / 8);
	f->skip_n = s->L.prevchain > s->L.chain ?
		(uint32_t)((s->L.prevchain - s->L.chain) / 8 + 1) : 1;
	return NULL;
}

struct hs_error *hs_files_find(const struct hs_core *core, struct hs_dwarf *dw,
			       const struct hs_heap *heap, struct hs_log *log,
			       struct hs_files **ret)
{
	struct hs_files *f = hs_calloc(1, sizeof(*f));
	if (!f)
		return &hs_error_nomem;
	struct finder s = {.core = core, .dw = dw, .heap = heap, .log = log, .f = f};
	struct hs_module *libc = dw ? hs_dwarf_find_glibc(dw, "libc.so", "libc") : NULL;
	struct hs_error *err = NULL;
	uint64_t head;
	if (libc) {
		find_layout(&s, libc);
		find_vtables(&s, libc);
		if (!symbol(&s, libc, "_IO_file_jumps", &s.file_jumps))
			s.file_jumps = 0;
		static const char *const syms[3] = {"_IO_2_1_stdin_", "_IO_2_1_stdout_",
						    "_IO_2_1_stderr_"};
		for (int k = 0; k < 3; k++)
			if (!symbol(&s, libc, syms[k], &s.std[k]))
				s.std[k] = 0;
		if (!s.vt_lo && !s.file_jumps)
			hs_log_warn(log, "libc's stream vtables (__libc_IO_vtables, _IO_file_jumps) not found: streams are found through _IO_list_all only");
		bool have_head = symbol(&s, libc, "_IO_list_all", &head);
		if (!f->from_dwarf)
			infer_prevchain(&s, have_head ? head : 0);
		if (have_head) {
			f->not_refs[f->nnot_refs++] = head;
			err = walk_list(&s, head);
		}
		if (!err && (s.vt_lo || s.file_jumps))
			err = scan_blocks(&s);
		/* libc's own streams, when the list did not lead to them */
		for (int k = 0; k < 3 && !err; k++) {
			struct hs_file file;
			if (s.std[k] && !hs_file_seen_has(&s.seen, s.std[k]) &&
			    read_file(&s, s.std[k], &file))
				err = push(&s, &file);
		}
		/* on 2.41 libc's own streams' _prevchain point into the heap
		 * streams' _chain: links too */
		for (int k = 0; k < 3 && s.L.prevchain; k++)
			if (s.std[k])
				f->not_refs[f->nnot_refs++] = s.std[k] + s.L.prevchain;
		if (!err)
			err = mark_blocks(&s);
	}
	hs_file_seen_free(&s.seen);
	if (err) {
		hs_files_destroy(f);
		return err;
	}
	*ret = f;
	return NULL;
}

void hs_files_destroy(struct hs_files *f)
{
	if (!f)
		return;
	free(f->v);
	free(f->is_file);
	free(f);
}
