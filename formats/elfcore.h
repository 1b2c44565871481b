/* Reader for x86-64 Linux ELF core files (kernel cores and gdb's gcore).
 *
 *   +-------------------+ 0
 *   | Elf64_Ehdr        |  e_type == ET_CORE, e_machine == EM_X86_64
 *   +-------------------+ e_phoff
 *   | Elf64_Phdr[phnum] |  PT_NOTE: notes (threads, auxv, files, ...)
 *   |                   |  PT_LOAD: one per dumped mapping
 *   +-------------------+
 *   | note data         |  CORE/NT_PRPSINFO, then per thread CORE/NT_PRSTATUS
 *   |                   |  (+ FP/xstate), CORE/NT_AUXV, CORE/NT_FILE,
 *   |                   |  CORE/NT_SIGINFO (kernel cores)
 *   +-------------------+
 *   | segment bytes     |  p_filesz bytes at p_offset; p_memsz > p_filesz
 *   |                   |  reads as zeros (pages the dumper skipped)
 *   +-------------------+
 *
 * The file is mmap'ed read-only.  Nothing in it is trusted: every offset and
 * count is checked against the file size, and a segment that the file cuts
 * short is reported once and never read past.
 */
#ifndef HS_ELFCORE_H
#define HS_ELFCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "src/error.h"
#include "src/log.h"

/* Indices into hs_core_thread.regs: the order of struct user_regs_struct
 * (<sys/user.h>), which is also the order of pr_reg in NT_PRSTATUS. */
enum hs_reg {
	HS_REG_R15, HS_REG_R14, HS_REG_R13, HS_REG_R12, HS_REG_RBP, HS_REG_RBX,
	HS_REG_R11, HS_REG_R10, HS_REG_R9, HS_REG_R8, HS_REG_RAX, HS_REG_RCX,
	HS_REG_RDX, HS_REG_RSI, HS_REG_RDI, HS_REG_ORIG_RAX, HS_REG_RIP,
	HS_REG_CS, HS_REG_EFLAGS, HS_REG_RSP, HS_REG_SS, HS_REG_FS_BASE,
	HS_REG_GS_BASE, HS_REG_DS, HS_REG_ES, HS_REG_FS, HS_REG_GS,
	HS_NREGS
};
extern const char *const hs_reg_names[HS_NREGS];

enum { HS_SEG_R = 4, HS_SEG_W = 2, HS_SEG_X = 1 }; /* = ELF PF_* bits */

struct hs_core_segment {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t filesz;    /* as declared by the header */
	uint64_t avail;     /* bytes actually present in the file (<= filesz) */
	uint64_t offset;    /* file offset of the data */
	uint32_t flags;     /* HS_SEG_* */
	int file;           /* index into hs_core.files, -1 if anonymous */
};

enum { HS_VEC_REGS = 32, HS_VEC_LANES = 8 };

struct hs_core_thread {
	int32_t tid;
	int32_t cursig;
	uint64_t regs[HS_NREGS];
	/* Vector registers as 8-byte lanes: vec[r][0..1] is xmm r (from
	 * NT_FPREGSET or the legacy part of NT_X86_XSTATE), [2..3] the upper
	 * half of ymm r, [4..7] the upper half of zmm r; registers 16-31 only
	 * with AVX-512.  vec_regs registers of vec_lanes lanes each are
	 * present (0 when the core has no floating-point notes). */
	uint64_t (*vec)[HS_VEC_LANES];
	uint8_t vec_regs, vec_lanes;
};

struct hs_core_file {
	uint64_t start, end;
	uint64_t offset;    /* in bytes */
	const char *path;   /* points into the mapped note */
};

/* heapsift's own note (name "HEAPSIFT", written by `heapsift snapshot`):
 * the descriptor table, from /proc/PID/fd at the stop.  desc: u32 count,
 * then count entries of {s32 fd, u32 len, len bytes of readlink's
 * target}, each entry padded to 4 bytes. */
#define HS_NOTE_NAME "HEAPSIFT"
enum { HS_NT_FDS = 1 };

struct hs_core_fd {
	int32_t fd;
	char *path;         /* a copy, NUL-terminated */
};

struct hs_core_process {
	bool valid;         /* NT_PRPSINFO seen */
	int32_t pid, ppid, uid, gid;
	char state;         /* pr_sname: R, S, D, T, Z ... */
	char fname[17];
	char psargs[81];
};

struct hs_core_siginfo {
	bool valid;
	int32_t signo, code, errnum;
	uint64_t addr;      /* si_addr, meaningful for SIGSEGV/SIGBUS/... */
};

struct hs_core {
	char *path;
	int fd;
	const uint8_t *data;
	size_t size;
	bool mapped;        /* data is our mmap of fd (else the caller's) */

	struct hs_core_segment *segs;   /* PT_LOAD, sorted by vaddr */
	size_t nsegs;
	struct hs_core_thread *threads; /* in note order: the first is the one
					 * that received the signal */
	size_t nthreads;
	struct hs_core_file *files;     /* NT_FILE, sorted by start */
	size_t nfiles;
	uint64_t *auxv;                 /* pairs (type, value) */
	size_t nauxv;
	struct hs_core_process process;
	struct hs_core_siginfo siginfo;
	struct hs_core_fd *fds;         /* HS_NT_FDS, in note order */
	size_t nfds;
	bool has_fds;                   /* the note was there */
	uint64_t page_size;
	/* Sums over the segments: of memsz (the address space the core
	 * describes) and of avail (the bytes the file holds for them).  A
	 * count or size read from the core is bounded by these before it
	 * sizes anything. */
	uint64_t mapped_bytes, present_bytes;
	bool truncated;                 /* some segment or note cut short */
	/* While set, reads through hs_core_read* and hs_core_touch mark the
	 * file's 8-byte words they cover (one bit each): redaction keeps
	 * what the allocator walk and the roots read.  Owned by whoever set
	 * it; bulk scans (hs_core_ptr) are not traced. */
	uint64_t *trace;
};

/* Opens and validates path; warnings (truncation ...) go to log. */
struct hs_error *hs_core_open(const char *path, struct hs_log *log,
			      struct hs_core **ret);
/* The same for a core already in memory (tests, fuzzing): data must outlive
 * the core and is not freed; name stands for the path in messages. */
struct hs_error *hs_core_open_memory(const char *name, const void *data,
				     size_t size, struct hs_log *log,
				     struct hs_core **ret);
void hs_core_destroy(struct hs_core *core);

/* The segment containing addr, or NULL. */
const struct hs_core_segment *hs_core_find_segment(const struct hs_core *core,
						   uint64_t addr);

/* Copies len bytes at target address addr into buf.  Bytes inside a segment
 * but past its file data read as zero when the dumper left them out (filesz <
 * memsz), and fail when the file was truncated.  Returns an HS_ERR_FAULT error
 * naming the first missing address. */
struct hs_error *hs_core_read(const struct hs_core *core, uint64_t addr,
			      void *buf, size_t len);

/* Cheaper variant for hot loops: true on success, no error object. */
bool hs_core_read_quiet(const struct hs_core *core, uint64_t addr, void *buf,
			size_t len);

/* A pointer to len bytes at addr that lie entirely in one segment's file data
 * (zero copy), or NULL. */
const void *hs_core_ptr(const struct hs_core *core, uint64_t addr, size_t len);

/* hs_core_ptr and hs_core_read_u64 for reads that stay in one segment a
 * long time (a pass over the blocks in address order): the segment of the
 * last read is tried first, and searched for only when addr leaves it.
 * Same answers as without it (which are these with a fresh cursor).  The
 * cursor is the caller's (one per thread), zeroed to start. */
struct hs_core_near {
	const struct hs_core_segment *seg;
};

static inline const void *hs_core_ptr_near(const struct hs_core *core,
					   struct hs_core_near *near,
					   uint64_t addr, size_t len)
{
	const struct hs_core_segment *s = near->seg;
	/* (addr below the segment wraps around: past it too) */
	if (!s || addr - s->vaddr >= s->memsz) {
		s = near->seg = hs_core_find_segment(core, addr);
		if (!s)
			return NULL;
	}
	uint64_t off = addr - s->vaddr;
	if (off >= s->avail || len > s->avail - off)
		return NULL;
	return core->data + s->offset + off;
}

static inline bool hs_core_read_u64_near(const struct hs_core *core,
					 struct hs_core_near *near,
					 uint64_t addr, uint64_t *ret)
{
	const void *p = core->trace ? NULL : hs_core_ptr_near(core, near, addr, sizeof(*ret));
	if (p) {
		memcpy(ret, p, sizeof(*ret));
		return true;
	}
	return hs_core_read_quiet(core, addr, ret, sizeof(*ret));
}

/* One word: straight from the mapping when it is there (a load, not a
 * call to memcpy), else as hs_core_read_quiet reads it (zero fill, words
 * across segments, the trace). */
static inline bool hs_core_read_u64(const struct hs_core *core, uint64_t addr,
				    uint64_t *ret)
{
	struct hs_core_near near = {0};
	return hs_core_read_u64_near(core, &near, addr, ret);
}

/* Marks [addr, addr+len) as read, when tracing (see hs_core.trace). */
void hs_core_touch(const struct hs_core *core, uint64_t addr, size_t len);

/* A helper thread that maps the file data of the core's anonymous
 * writable segments (where heaps live) into the page tables ahead of the
 * walk (madvise MADV_POPULATE_READ, in address order, a few MiB at a
 * time), while the caller does something else (reads debug info): the
 * walk then takes no page faults, and a core not in the page cache is
 * read in the meantime.  Only for a core hs_core_open mapped, and only
 * when there is enough to do; NULL when not started (nothing to do, no
 * thread, a kernel without MADV_POPULATE_READ just leaves the pages to
 * their faults).  Changes nothing a read returns. */
struct hs_core_prefault;
struct hs_core_prefault *hs_core_prefault_start(const struct hs_core *core);
/* Stops the helper where it is and waits for it; NULL is no helper. */
void hs_core_prefault_stop(struct hs_core_prefault *pf);

/* Value of auxv entry type, or false. */
bool hs_core_auxv(const struct hs_core *core, uint64_t type, uint64_t *ret);

/* The NT_FILE entry containing addr, or NULL. */
const struct hs_core_file *hs_core_find_file(const struct hs_core *core,
					     uint64_t addr);

#endif
