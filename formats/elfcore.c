/* See elfcore.h for the file layout.  Note payload layouts (x86-64, from
 * the kernel's include/uapi/linux/elfcore.h and fs/binfmt_elf.c):
 *
 * NT_PRSTATUS (336 bytes)          NT_PRPSINFO (136 bytes)
 *   0  si_signo, si_code, si_errno    0  pr_state, pr_sname, pr_zomb, pr_nice
 *  12  pr_cursig (short)               8  pr_flag
 *  16  pr_sigpend, pr_sighold         16  pr_uid, pr_gid
 *  32  pr_pid, ppid, pgrp, sid        24  pr_pid, ppid, pgrp, sid
 *  48  4 x struct timeval             40  pr_fname[16]
 * 112  pr_reg[27] (user_regs_struct)  56  pr_psargs[80]
 * 328  pr_fpvalid
 *
 * NT_FILE: u64 count, u64 page_size, count x {u64 start, end, pgoff},
 *          then count NUL-terminated paths.
 * NT_FPREGSET (CORE, 512 bytes): FXSAVE; xmm0-15 at 160, 16 bytes each.
 * NT_X86_XSTATE (LINUX): the XSAVE area in its standard (uncompacted)
 *          form: FXSAVE's 512 bytes, XSTATE_BV at 512; YMM_Hi128 (bit 2) at
 *          576, ZMM_Hi256 (bit 6) at 1152, Hi16_ZMM (bit 7) at 1664: the
 *          offsets CPUID leaf 0xD gives on x86-64 CPUs (the kernel writes
 *          the user ABI layout, arch/x86/kernel/fpu/xstate.c).
 * NT_SIGINFO: siginfo_t: si_signo, si_errno, si_code (int each), pad,
 *          then the union (si_addr at 16 for fault signals).
 */
#include "src/sort.h"
#include "src/alloc.h"
#include "formats/elfcore.h"
#include "src/safeopen.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const hs_reg_names[HS_NREGS] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags",
	"rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
};

enum {
	PRSTATUS_SIZE = 336,
	PRSTATUS_CURSIG = 12,
	PRSTATUS_PID = 32,
	PRSTATUS_REG = 112,
	PRPSINFO_SIZE = 136,
	FXSAVE_SIZE = 512,
	FXSAVE_XMM = 160,
	XSTATE_BV = 512,
	XSTATE_YMM = 576,
	XSTATE_ZMM_HI256 = 1152,
	XSTATE_HI16_ZMM = 1664,
	NT_XSTATE = 0x202,
	MAX_SEGMENTS = 1 << 24,
	MAX_THREADS = 1 << 20,
	MAX_FILES = 1 << 22,
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* True when [off, off+len) lies inside a file of the given size. */
static bool in_file(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct hs_core_segment *x = a, *y = b;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int cmp_file(const void *a, const void *b)
{
	const struct hs_core_file *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct hs_error *parse_prstatus(struct hs_core *core,
				       const uint8_t *desc, uint64_t descsz)
{
	if (descsz < PRSTATUS_SIZE - 8)  /* pr_fpvalid may be absent */
		return hs_error_create(HS_ERR_FORMAT,
				       "NT_PRSTATUS note of %llu bytes, expected %d",
				       (unsigned long long)descsz, PRSTATUS_SIZE);
	if (core->nthreads >= MAX_THREADS)
		return hs_error_create(HS_ERR_FORMAT, "too many threads");
	struct hs_core_thread *t = hs_realloc(core->threads,
					   (core->nthreads + 1) * sizeof(*t));
	if (!t)
		return &hs_error_nomem;
	core->threads = t;
	t = &core->threads[core->nthreads++];
	memset(t, 0, sizeof(*t));
	int16_t cursig;
	memcpy(&cursig, desc + PRSTATUS_CURSIG, sizeof(cursig));
	t->cursig = cursig;
	t->tid = (int32_t)rd32(desc + PRSTATUS_PID);
	for (int i = 0; i < HS_NREGS; i++)
		t->regs[i] = rd64(desc + PRSTATUS_REG + 8 * i);
	return NULL;
}

/* The vector registers of the thread whose NT_PRSTATUS came last. */
static struct hs_error *parse_vector(struct hs_core *core, bool xstate,
				     const uint8_t *desc, uint64_t descsz)
{
	if (!core->nthreads || descsz < FXSAVE_SIZE)
		return NULL;
	struct hs_core_thread *t = &core->threads[core->nthreads - 1];
	if (!t->vec) {
		t->vec = hs_calloc(HS_VEC_REGS, sizeof(*t->vec));
		if (!t->vec)
			return &hs_error_nomem;
	}
	for (int r = 0; r < 16; r++) {
		t->vec[r][0] = rd64(desc + FXSAVE_XMM + 16 * r);
		t->vec[r][1] = rd64(desc + FXSAVE_XMM + 16 * r + 8);
	}
	if (t->vec_regs < 16)
		t->vec_regs = 16;
	if (t->vec_lanes < 2)
		t->vec_lanes = 2;
	if (!xstate || descsz < XSTATE_BV + 8)
		return NULL;
	uint64_t bv = rd64(desc + XSTATE_BV);
	/* a component whose bit is clear is in its initial state: zero */
	if ((bv & (1 << 2)) && descsz >= XSTATE_YMM + 256) {
		for (int r = 0; r < 16; r++) {
			t->vec[r][2] = rd64(desc + XSTATE_YMM + 16 * r);
			t->vec[r][3] = rd64(desc + XSTATE_YMM + 16 * r + 8);
		}
		t->vec_lanes = 4;
	}
	if ((bv & (1 << 6)) && descsz >= XSTATE_ZMM_HI256 + 512) {
		for (int r = 0; r < 16; r++)
			for (int l = 0; l < 4; l++)
				t->vec[r][4 + l] = rd64(desc + XSTATE_ZMM_HI256 + 32 * r + 8 * l);
		t->vec_lanes = 8;
	}
	if ((bv & (1 << 7)) && descsz >= XSTATE_HI16_ZMM + 1024) {
		for (int r = 0; r < 16; r++)
			for (int l = 0; l < 8; l++)
				t->vec[16 + r][l] = rd64(desc + XSTATE_HI16_ZMM + 64 * r + 8 * l);
		t->vec_regs = 32;
		t->vec_lanes = 8;
	}
	return NULL;
}

static void parse_prpsinfo(struct hs_core *core, const uint8_t *desc,
			   uint64_t descsz)
{
	if (descsz < PRPSINFO_SIZE)
		return;
	struct hs_core_process *p = &core->process;
	p->valid = true;
	p->state = (char)desc[1];
	p->uid = (int32_t)rd32(desc + 16);
	p->gid = (int32_t)rd32(desc + 20);
	p->pid = (int32_t)rd32(desc + 24);
	p->ppid = (int32_t)rd32(desc + 28);
	memcpy(p->fname, desc + 40, 16);
	p->fname[16] = 0;
	memcpy(p->psargs, desc + 56, 80);
	p->psargs[80] = 0;
	/* psargs may hold NULs between arguments on some dumpers */
	for (int i = 79; i >= 0 && p->psargs[i] == ' '; i--)
		p->psargs[i] = 0;
}

static struct hs_error *parse_file_note(struct hs_core *core,
					const uint8_t *desc, uint64_t descsz)
{
	if (descsz < 16)
		return hs_error_create(HS_ERR_FORMAT, "NT_FILE note too short");
	uint64_t count = rd64(desc), page = rd64(desc + 8);
	if (count > MAX_FILES || count * 24 > descsz - 16)
		return hs_error_create(HS_ERR_FORMAT,
				       "NT_FILE note claims %llu files in %llu bytes",
				       (unsigned long long)count,
				       (unsigned long long)descsz);
	if (page == 0 || (page & (page - 1)))
		return hs_error_create(HS_ERR_FORMAT,
				       "NT_FILE page size %llu is not a power of two",
				       (unsigned long long)page);
	core->files = hs_calloc(count ? count : 1, sizeof(*core->files));
	if (!core->files)
		return &hs_error_nomem;
	const char *names = (const char *)desc + 16 + count * 24;
	const char *end = (const char *)desc + descsz;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *e = desc + 16 + i * 24;
		struct hs_core_file *f = &core->files[i];
		f->start = rd64(e);
		f->end = rd64(e + 8);
		f->offset = rd64(e + 16) * page;
		const char *nul = memchr(names, 0, (size_t)(end - names));
		if (!nul)
			return hs_error_create(HS_ERR_FORMAT,
					       "NT_FILE note: unterminated path");
		f->path = names;
		names = nul + 1;
	}
	core->nfiles = count;
	hs_sort(core->files, core->nfiles, sizeof(*core->files), cmp_file);
	return NULL;
}

/* HEAPSIFT/HS_NT_FDS (elfcore.h).  An entry that runs past the note ends
 * the table. */
static struct hs_error *parse_fd_note(struct hs_core *core, const uint8_t *d,
				      uint64_t len)
{
	if (core->has_fds || len < 4)
		return NULL;
	core->has_fds = true;
	uint64_t count = rd32(d);
	if (count > len / 8)
		count = len / 8;
	core->fds = hs_calloc(count + 1, sizeof(*core->fds));
	if (!core->fds)
		return &hs_error_nomem;
	uint64_t at = 4;
	for (uint64_t i = 0; i < count && at + 8 <= len; i++) {
		uint32_t n = rd32(d + at + 4);
		if (n > len - at - 8)
			break;
		char *path = hs_malloc((size_t)n + 1);
		if (!path)
			return &hs_error_nomem;
		memcpy(path, d + at + 8, n);
		path[n] = 0;
		core->fds[core->nfds++] = (struct hs_core_fd){(int32_t)rd32(d + at), path};
		at += 8 + ((n + 3ull) & ~3ull);
	}
	return NULL;
}

static struct hs_error *parse_notes(struct hs_core *core, const uint8_t *p,
				    uint64_t len, struct hs_log *log)
{
	const uint8_t *end = p + len;
	while ((uint64_t)(end - p) >= 12) {
		uint32_t namesz = rd32(p), descsz = rd32(p + 4), type = rd32(p + 8);
		uint64_t nameoff = 12, descoff = nameoff + ((namesz + 3ull) & ~3ull);
		uint64_t next = descoff + ((descsz + 3ull) & ~3ull);
		if (descoff + descsz > (uint64_t)(end - p)) {
			hs_log_warn(log, "%s: note of type %#x runs past the end of its segment; later notes ignored",
				    core->path, type);
			core->truncated = true;
			break;
		}
		const char *name = (const char *)p + nameoff;
		const uint8_t *desc = p + descoff;
		bool is_core = namesz == 5 && !memcmp(name, "CORE", 5);
		bool is_linux = namesz == 6 && !memcmp(name, "LINUX", 6);
		if (is_linux && type == NT_XSTATE) {
			struct hs_error *e = parse_vector(core, true, desc, descsz);
			if (e)
				return e;
		}
		struct hs_error *err = NULL;
		if (namesz == sizeof(HS_NOTE_NAME) && !memcmp(name, HS_NOTE_NAME, namesz) &&
		    type == HS_NT_FDS)
			err = parse_fd_note(core, desc, descsz);
		if (is_core) {
			switch (type) {
			case NT_PRSTATUS:
				err = parse_prstatus(core, desc, descsz);
				break;
			case NT_PRPSINFO:
				parse_prpsinfo(core, desc, descsz);
				break;
			case NT_FPREGSET:
				err = parse_vector(core, false, desc, descsz);
				break;
			case NT_AUXV:
				if (!core->auxv) {
					core->nauxv = descsz / 16;
					core->auxv = hs_malloc(core->nauxv * 16 + 1);
					if (!core->auxv)
						return &hs_error_nomem;
					memcpy(core->auxv, desc, core->nauxv * 16);
				}
				break;
			case NT_FILE:
				if (!core->files)
					err = parse_file_note(core, desc, descsz);
				break;
			case NT_SIGINFO:
				if (descsz >= 24) {
					core->siginfo.valid = true;
					core->siginfo.signo = (int32_t)rd32(desc);
					core->siginfo.errnum = (int32_t)rd32(desc + 4);
					core->siginfo.code = (int32_t)rd32(desc + 8);
					core->siginfo.addr = rd64(desc + 16);
				}
				break;
			default:
				break;
			}
		}
		if (err)
			return err;
		if (next > (uint64_t)(end - p))
			break;
		p += next;
	}
	return NULL;
}

static struct hs_error *parse(struct hs_core *core, struct hs_log *log);

/* A core named name, with nothing read yet. */
static struct hs_error *core_new(const char *name, struct hs_core **ret)
{
	struct hs_core *core = hs_calloc(1, sizeof(*core));
	if (!core)
		return &hs_error_nomem;
	core->fd = -1;
	core->page_size = 4096;
	core->path = strdup(name);
	if (!core->path) {
		free(core);
		return &hs_error_nomem;
	}
	*ret = core;
	return NULL;
}

/* Checks the size of core->data and parses it; destroys core on error. */
static struct hs_error *core_finish(struct hs_core *core, struct hs_log *log,
				    struct hs_core **ret)
{
	struct hs_error *err;
	if (core->size < sizeof(Elf64_Ehdr))
		err = hs_error_create(HS_ERR_FORMAT,
				      "%s: not an ELF core file (%zu bytes, too short for an ELF header)",
				      core->path, core->size);
	else
		err = parse(core, log);
	if (err) {
		hs_core_destroy(core);
		return err;
	}
	*ret = core;
	return NULL;
}

struct hs_error *hs_core_open(const char *path, struct hs_log *log,
			      struct hs_core **ret)
{
	struct hs_core *core;
	struct hs_error *err = core_new(path, &core);
	if (err)
		return err;
	/* never a FIFO or a device: looked at before it is opened */
	struct stat st;
	err = hs_open_regular(path, &core->fd, &st);
	if (err) {
		hs_core_destroy(core);
		return err;
	}
	core->size = (size_t)st.st_size;
	if (core->size >= sizeof(Elf64_Ehdr)) {
		void *map = mmap(NULL, core->size, PROT_READ, MAP_PRIVATE,
				 core->fd, 0);
		if (map == MAP_FAILED) {
			err = hs_error_errno(errno, "%s: mmap", path);
			hs_core_destroy(core);
			return err;
		}
		core->data = map;
		core->mapped = true;
#ifdef MADV_HUGEPAGE
		/* Pages of the core that are not in the page cache yet are
		 * read in 2 MiB folios, which the kernel maps with one entry
		 * each (in this run and the next ones: the page cache keeps
		 * them).  Pages already cached stay as they were.  A hint:
		 * where it is refused (no transparent huge pages), nothing
		 * changes. */
		(void)madvise(map, core->size, MADV_HUGEPAGE);
#endif
	}
	return core_finish(core, log, ret);
}

struct hs_error *hs_core_open_memory(const char *name, const void *data,
				     size_t size, struct hs_log *log,
				     struct hs_core **ret)
{
	struct hs_core *core;
	struct hs_error *err = core_new(name, &core);
	if (err)
		return err;
	core->data = data;
	core->size = size;
	return core_finish(core, log, ret);
}

/* Validates the headers and reads the notes of core->data. */
static struct hs_error *parse(struct hs_core *core, struct hs_log *log)
{
	struct hs_error *err = NULL;
	const char *path = core->path;
	/* copies: a core in memory need not be aligned, nor the offsets in it */
	Elf64_Ehdr ehdr;
	memcpy(&ehdr, core->data, sizeof(ehdr));
	const Elf64_Ehdr *eh = &ehdr;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
		err = hs_error_create(HS_ERR_FORMAT, "%s: not an ELF file", path);
		goto fail;
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64) {
		err = hs_error_create(HS_ERR_UNSUPPORTED,
				      "%s: not an x86-64 ELF file (only x86-64 Linux cores are supported)",
				      path);
		goto fail;
	}
	if (eh->e_type != ET_CORE) {
		err = hs_error_create(HS_ERR_FORMAT,
				      "%s: an ELF %s, not a core file",
				      path, eh->e_type == ET_EXEC ? "executable" :
				      eh->e_type == ET_DYN ? "shared object or PIE executable" :
				      eh->e_type == ET_REL ? "relocatable object" : "file");
		goto fail;
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
		err = hs_error_create(HS_ERR_FORMAT,
				      "%s: unexpected program header size %u",
				      path, eh->e_phentsize);
		goto fail;
	}
	uint64_t phnum = eh->e_phnum;
	if (phnum == PN_XNUM) {
		/* The real count is in section header 0's sh_info. */
		if (!in_file(core->size, eh->e_shoff, sizeof(Elf64_Shdr))) {
			err = hs_error_create(HS_ERR_TRUNCATED,
					      "%s: truncated (section header 0 is missing)",
					      path);
			goto fail;
		}
		Elf64_Shdr sh0;
		memcpy(&sh0, core->data + eh->e_shoff, sizeof(sh0));
		phnum = sh0.sh_info;
	}
	if (phnum > MAX_SEGMENTS ||
	    !in_file(core->size, eh->e_phoff, phnum * sizeof(Elf64_Phdr))) {
		err = hs_error_create(HS_ERR_TRUNCATED,
				      "%s: truncated (the program headers end past the end of the file)",
				      path);
		goto fail;
	}
	core->segs = hs_calloc(phnum ? phnum : 1, sizeof(*core->segs));
	if (!core->segs) {
		err = &hs_error_nomem;
		goto fail;
	}
	uint64_t truncated_segs = 0, first_truncated = 0;
	bool saw_note = false;
	for (uint64_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, core->data + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE) {
			saw_note = true;
			uint64_t len = ph.p_filesz;
			if (!in_file(core->size, ph.p_offset, len)) {
				core->truncated = true;
				len = ph.p_offset < core->size ? core->size - ph.p_offset : 0;
				hs_log_warn(log, "%s: truncated inside the notes (thread and file lists may be incomplete)",
					    path);
			}
			/* nothing of it in the file: no pointer past the end */
			if (len &&
			    (err = parse_notes(core, core->data + ph.p_offset, len, log)))
				goto fail;
		} else if (ph.p_type == PT_LOAD) {
			if (ph.p_memsz == 0)
				continue;
			if (ph.p_filesz > ph.p_memsz ||
			    ph.p_vaddr + ph.p_memsz < ph.p_vaddr) {
				err = hs_error_create(HS_ERR_FORMAT,
						      "%s: malformed segment at %#llx",
						      path, (unsigned long long)ph.p_vaddr);
				goto fail;
			}
			struct hs_core_segment *s = &core->segs[core->nsegs++];
			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->filesz = ph.p_filesz;
			s->offset = ph.p_offset;
			s->flags = ph.p_flags & 7;
			s->file = -1;
			if (ph.p_filesz == 0)
				s->avail = 0;
			else if (in_file(core->size, ph.p_offset, ph.p_filesz))
				s->avail = ph.p_filesz;
			else {
				s->avail = ph.p_offset < core->size ?
					core->size - ph.p_offset : 0;
				if (!truncated_segs++)
					first_truncated = ph.p_vaddr;
			}
		}
	}
	if (!saw_note) {
		err = hs_error_create(HS_ERR_FORMAT, "%s: core file without notes", path);
		goto fail;
	}
	if (truncated_segs) {
		core->truncated = true;
		hs_log_warn(log, "%s: truncated: %llu of %zu segments are cut short or missing, from %#llx on (reads there fail)",
			    path, (unsigned long long)truncated_segs, core->nsegs,
			    (unsigned long long)first_truncated);
	}
	hs_sort(core->segs, core->nsegs, sizeof(*core->segs), cmp_seg);
	for (size_t i = 0; i + 1 < core->nsegs; i++) {
		if (core->segs[i].vaddr + core->segs[i].memsz > core->segs[i + 1].vaddr) {
			err = hs_error_create(HS_ERR_FORMAT,
					      "%s: overlapping segments at %#llx",
					      path, (unsigned long long)core->segs[i + 1].vaddr);
			goto fail;
		}
	}
	uint64_t pagesz;
	if (hs_core_auxv(core, AT_PAGESZ, &pagesz) && pagesz &&
	    !(pagesz & (pagesz - 1)))
		core->page_size = pagesz;
	for (size_t i = 0; i < core->nsegs; i++) {
		core->mapped_bytes += core->segs[i].memsz;
		core->present_bytes += core->segs[i].avail;
		const struct hs_core_file *f = hs_core_find_file(core, core->segs[i].vaddr);
		if (f)
			core->segs[i].file = (int)(f - core->files);
	}
	if (core->nthreads == 0)
		hs_log_warn(log, "%s: no thread (NT_PRSTATUS) in the notes", path);
	return NULL;
fail:
	return err;
}

void hs_core_destroy(struct hs_core *core)
{
	if (!core)
		return;
	if (core->data && core->mapped)
		munmap((void *)core->data, core->size);
	if (core->fd >= 0)
		close(core->fd);
	free(core->segs);
	for (size_t i = 0; i < core->nthreads; i++)
		free(core->threads[i].vec);
	free(core->threads);
	free(core->files);
	free(core->auxv);
	for (size_t i = 0; i < core->nfds; i++)
		free(core->fds[i].path);
	free(core->fds);
	free(core->path);
	free(core);
}

const struct hs_core_segment *hs_core_find_segment(const struct hs_core *core,
						   uint64_t addr)
{
	size_t lo = 0, hi = core->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hs_core_segment *s = &core->segs[mid];
		if (addr < s->vaddr)
			hi = mid;
		else if (addr - s->vaddr >= s->memsz)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

const struct hs_core_file *hs_core_find_file(const struct hs_core *core,
					     uint64_t addr)
{
	size_t lo = 0, hi = core->nfiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hs_core_file *f = &core->files[mid];
		if (addr < f->start)
			hi = mid;
		else if (addr >= f->end)
			lo = mid + 1;
		else
			return f;
	}
	return NULL;
}

static void trace_file(const struct hs_core *core, uint64_t off, uint64_t len)
{
	for (uint64_t w = off / 8; w <= (off + len - 1) / 8; w++)
		__atomic_fetch_or(&core->trace[w / 64], 1ull << (w % 64),
				  __ATOMIC_RELAXED);
}

void hs_core_touch(const struct hs_core *core, uint64_t addr, size_t len)
{
	if (!core->trace || !len)
		return;
	uint64_t done = 0;
	while (done < len) {
		const struct hs_core_segment *s = hs_core_find_segment(core, addr + done);
		if (!s)
			return;
		uint64_t off = addr + done - s->vaddr;
		if (off >= s->avail)
			return;
		uint64_t n = s->avail - off;
		if (n > len - done)
			n = len - done;
		trace_file(core, s->offset + off, n);
		done += n;
	}
}

/* ---- mapping the heaps' pages ahead of the walk ---- */

struct hs_core_prefault {
	const struct hs_core *core;
	pthread_t thread;
	int stop;               /* atomic: the owner wants it to stop */
};

enum {
	PREFAULT_STEP = 4 << 20,        /* bytes per madvise call */
	PREFAULT_MIN = 16 << 20,        /* less than this: not worth a thread */
};

/* Whether the helper maps segment s: anonymous and writable, with data in
 * the file. */
static bool prefault_seg(const struct hs_core_segment *s)
{
	return (s->flags & HS_SEG_W) && s->file < 0 && s->avail;
}

static void *prefault_main(void *arg)
{
	struct hs_core_prefault *pf = arg;
	const struct hs_core *core = pf->core;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if (!prefault_seg(s))
			continue;
		uint64_t off = s->offset & ~(page - 1), end = s->offset + s->avail;
		while (off < end) {
			if (__atomic_load_n(&pf->stop, __ATOMIC_RELAXED))
				return NULL;
			uint64_t len = end - off < PREFAULT_STEP ? end - off : PREFAULT_STEP;
			if (madvise((void *)(core->data + off), len,
				    MADV_POPULATE_READ) != 0 && errno == EINVAL)
				return NULL;  /* not this kernel's */
			off += len;
		}
	}
	return NULL;
}

struct hs_core_prefault *hs_core_prefault_start(const struct hs_core *core)
{
#ifdef MADV_POPULATE_READ
	if (!core->mapped)
		return NULL;
	uint64_t total = 0;
	for (size_t i = 0; i < core->nsegs; i++)
		if (prefault_seg(&core->segs[i]))
			total += core->segs[i].avail;
	if (total < PREFAULT_MIN)
		return NULL;
	struct hs_core_prefault *pf = hs_calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	pf->core = core;
	if (pthread_create(&pf->thread, NULL, prefault_main, pf) != 0) {
		free(pf);
		return NULL;
	}
	return pf;
#else
	(void)core;
	return NULL;
#endif
}

void hs_core_prefault_stop(struct hs_core_prefault *pf)
{
	if (!pf)
		return;
	__atomic_store_n(&pf->stop, 1, __ATOMIC_RELAXED);
	pthread_join(pf->thread, NULL);
	free(pf);
}

/* Reads as much as possible; returns the number of bytes read. */
static size_t read_partial(const struct hs_core *core, uint64_t addr,
			   uint8_t *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		const struct hs_core_segment *s = hs_core_find_segment(core, addr + done);
		if (!s)
			break;
		uint64_t off = addr + done - s->vaddr;
		uint64_t n = s->memsz - off;
		if (n > len - done)
			n = len - done;
		if (off < s->avail) {
			uint64_t m = s->avail - off;
			if (m > n)
				m = n;
			memcpy(buf + done, core->data + s->offset + off, m);
			if (core->trace)
				trace_file(core, s->offset + off, m);
			done += m;
			continue;
		}
		if (s->avail < s->filesz)
			break;  /* cut off by truncation: absent, not zero */
		memset(buf + done, 0, n);  /* pages the dumper left out */
		done += n;
	}
	return done;
}

bool hs_core_read_quiet(const struct hs_core *core, uint64_t addr, void *buf,
			size_t len)
{
	const struct hs_core_segment *s = hs_core_find_segment(core, addr);
	if (s) {
		uint64_t off = addr - s->vaddr;
		if (off < s->avail && len <= s->avail - off) {
			memcpy(buf, core->data + s->offset + off, len);
			if (core->trace && len)
				trace_file(core, s->offset + off, len);
			return true;
		}
	}
	return read_partial(core, addr, buf, len) == len;
}

struct hs_error *hs_core_read(const struct hs_core *core, uint64_t addr,
			      void *buf, size_t len)
{
	size_t n = read_partial(core, addr, buf, len);
	if (n == len)
		return NULL;
	uint64_t miss = addr + n;
	const struct hs_core_segment *s = hs_core_find_segment(core, miss);
	if (s)
		return hs_error_create(HS_ERR_FAULT,
				       "address %#llx is in a segment the core file cuts short (truncated core)",
				       (unsigned long long)miss);
	return hs_error_create(HS_ERR_FAULT,
			       "address %#llx is not in the core dump",
			       (unsigned long long)miss);
}

const void *hs_core_ptr(const struct hs_core *core, uint64_t addr, size_t len)
{
	struct hs_core_near near = {0};
	return hs_core_ptr_near(core, &near, addr, len);
}

bool hs_core_auxv(const struct hs_core *core, uint64_t type, uint64_t *ret)
{
	for (size_t i = 0; i < core->nauxv; i++) {
		if (core->auxv[2 * i] == type) {
			*ret = core->auxv[2 * i + 1];
			return true;
		}
	}
	return false;
}
