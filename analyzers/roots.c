/* Named roots of the mark (registers, stacks, globals, TLS, unexplained
 * memory) and how each thread stopped: see analyzers/roots.h. */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/alloc/glibc.h"
#include "formats/gllayout.h"
#include "analyzers/roots.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const hs_root_kind_names[HS_ROOT_KIND_COUNT] = {
	[HS_ROOT_REGISTER] = "register",
	[HS_ROOT_STACK] = "stack",
	[HS_ROOT_GLOBAL] = "global",
	[HS_ROOT_TLS] = "tls",
	[HS_ROOT_UNEXPLAINED] = "unexplained",
};

enum {
	RED_ZONE = 128,          /* x86-64 SysV ABI */
	TCB_SIZE_FALLBACK = 2304,/* sizeof(struct pthread), glibc 2.36 */
};

const char *const hs_thread_stop_names[] = {
	[HS_STOP_ASYNC] = "interrupted",
	[HS_STOP_SYSCALL] = "syscall",
	[HS_STOP_CALL] = "call",
};

/* General registers that can hold a pointer. */
static const enum hs_reg pointer_regs[] = {
	HS_REG_RAX, HS_REG_RBX, HS_REG_RCX, HS_REG_RDX, HS_REG_RSI, HS_REG_RDI,
	HS_REG_RBP, HS_REG_RSP, HS_REG_R8, HS_REG_R9, HS_REG_R10, HS_REG_R11,
	HS_REG_R12, HS_REG_R13, HS_REG_R14, HS_REG_R15,
};

/* ---- how a thread stopped, and which of its words are live ---- */

/* Argument counts of the system calls a stopped thread is usually in
 * (x86-64 numbers, arch/x86/entry/syscalls/syscall_64.tbl); any other call
 * keeps all six argument registers. */
static const struct {
	uint16_t nr;
	uint8_t args;
} syscall_args[] = {
	{0, 3}, {1, 3}, {3, 1}, {7, 3}, {9, 6}, {11, 2}, {12, 1}, {13, 4},
	{14, 4}, {16, 3}, {17, 4}, {18, 4}, {19, 3}, {20, 3}, {23, 5}, {24, 0},
	{34, 0}, {35, 2}, {39, 0}, {43, 3}, {44, 6}, {45, 6}, {46, 3}, {47, 3},
	{60, 1}, {61, 4}, {62, 2}, {72, 3}, {128, 4}, {130, 2}, {202, 6},
	{230, 4}, {231, 1}, {232, 4}, {234, 3}, {247, 5}, {270, 6}, {271, 5},
	{281, 6}, {288, 4}, {318, 3}, {441, 6},
};

static int syscall_arity(int64_t nr)
{
	for (size_t i = 0; i < sizeof(syscall_args) / sizeof(syscall_args[0]); i++)
		if (syscall_args[i].nr == nr)
			return syscall_args[i].args;
	return 6;
}

static bool fault_signal(int sig)
{
	return sig == 4 /* SIGILL */ || sig == 5 /* SIGTRAP */ ||
	       sig == 7 /* SIGBUS */ || sig == 8 /* SIGFPE */ ||
	       sig == 11 /* SIGSEGV */;
}

struct hs_thread_state hs_thread_state_of(const struct hs_core *core,
					   struct hs_dwarf *dw, size_t t)
{
	const struct hs_core_thread *th = &core->threads[t];
	int64_t orig_rax = (int64_t)th->regs[HS_REG_ORIG_RAX];
	uint64_t pc = th->regs[HS_REG_RIP];
	/* the thread that took a fault: its instruction was cut short */
	if (t == 0 && core->siginfo.valid && fault_signal(core->siginfo.signo) &&
	    core->siginfo.code > 0)
		return (struct hs_thread_state){HS_STOP_ASYNC, -1,
			"it took a fault (NT_SIGINFO)"};
	if (orig_rax >= 0)
		return (struct hs_thread_state){HS_STOP_SYSCALL, orig_rax,
			"orig_rax holds a system call number"};
	uint8_t before[2];
	if (pc >= 2 && (hs_core_read_quiet(core, pc - 2, before, 2) ||
			hs_dwarf_read_file(dw, pc - 2, before, 2)) &&
	    before[0] == 0x0f && before[1] == 0x05)
		return (struct hs_thread_state){HS_STOP_SYSCALL, -1,
			"the instruction before the pc is syscall"};
	const char *name;
	uint64_t off;
	struct hs_module *m;
	if (hs_dwarf_symbolize(dw, pc, &name, &off, &m) && off == 0)
		return (struct hs_thread_state){HS_STOP_CALL, -1,
			"the pc is a function's first instruction"};
	return (struct hs_thread_state){HS_STOP_ASYNC, -1,
		"stopped between two instructions of user code"};
}

/* Whether general register reg is live in a thread stopped as st. */
static bool reg_live(const struct hs_thread_state *st, enum hs_reg reg)
{
	switch (reg) {
	case HS_REG_RBX: case HS_REG_RBP: case HS_REG_RSP: case HS_REG_R12:
	case HS_REG_R13: case HS_REG_R14: case HS_REG_R15:
		return true;    /* callee-saved: the frames' own values */
	default:
		break;
	}
	if (st->stop == HS_STOP_ASYNC)
		return true;
	static const enum hs_reg sys[] = {HS_REG_RDI, HS_REG_RSI, HS_REG_RDX,
					  HS_REG_R10, HS_REG_R8, HS_REG_R9};
	static const enum hs_reg call[] = {HS_REG_RDI, HS_REG_RSI, HS_REG_RDX,
					   HS_REG_RCX, HS_REG_R8, HS_REG_R9};
	int n = st->stop == HS_STOP_SYSCALL ?
		(st->syscall >= 0 ? syscall_arity(st->syscall) : 6) : 6;
	const enum hs_reg *args = st->stop == HS_STOP_SYSCALL ? sys : call;
	for (int i = 0; i < n; i++)
		if (args[i] == reg)
			return true;
	return false;   /* rax, rcx, r11 at a syscall; rax, r10, r11 at a call */
}

/* Vector register r is live: everywhere in an interrupted thread, xmm0-7
 * (arguments) at a call; no vector register is callee-saved. */
static bool vec_live(const struct hs_thread_state *st, int r)
{
	return st->stop == HS_STOP_ASYNC || (st->stop == HS_STOP_CALL && r < 8);
}

/* ---- sorted disjoint interval sets ---- */

struct iv {
	uint64_t lo, hi;
};

struct ivset {
	struct iv *v;
	size_t n, cap;
};

static struct hs_error *iv_add(struct ivset *s, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct iv *v = hs_realloc(s->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct iv){lo, hi};
	return NULL;
}

static int cmp_iv(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void iv_normalize(struct ivset *s)
{
	if (!s->n)
		return;
	hs_sort(s->v, s->n, sizeof(*s->v), cmp_iv);
	size_t k = 0;
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].lo <= s->v[k].hi) {
			if (s->v[i].hi > s->v[k].hi)
				s->v[k].hi = s->v[i].hi;
		} else {
			s->v[++k] = s->v[i];
		}
	}
	s->n = k + 1;
}

/* First interval whose hi > x. */
static size_t iv_search(const struct ivset *s, uint64_t x)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].hi <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- building ---- */

struct builder {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	struct hs_log *log;
	struct hs_roots *r;
	struct ivset claimed;    /* normalized between phases */
	struct ivset pending;    /* claimed by the current phase */
	bool conservative;       /* every register and red zone is live */
	bool stale;              /* add_range makes stale roots */
};

static struct hs_error *push_root(struct hs_roots *r, const struct hs_root *root)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct hs_root *v = hs_realloc(r->roots, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		r->roots = v;
		r->cap = cap;
	}
	r->roots[r->n++] = *root;
	return NULL;
}

static const char *stale_why(const struct hs_thread_state *st)
{
	return st->stop == HS_STOP_SYSCALL ? " (dead: the thread is in a system call)" :
	       " (dead: the thread is at a function's entry)";
}

/* A register's value as a root; live false makes it stale. */
__attribute__((format(printf, 5, 6)))
static struct hs_error *value_root(struct builder *b, size_t t, uint64_t v,
				   bool live, const char *fmt, ...)
{
	char *name = NULL;
	va_list ap;
	va_start(ap, fmt);
	int rc = vasprintf(&name, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return &hs_error_nomem;
	struct hs_root root = {
		.value = v, .kind = HS_ROOT_REGISTER, .thread = (int)t,
		.name = name, .stale = !live,
	};
	struct hs_error *err = push_root(b->r, &root);
	if (err) {
		free(name);
		return err;
	}
	if (live)
		b->r->bytes[HS_ROOT_REGISTER] += 8;
	else
		b->r->nstale++;
	return NULL;
}

/* Adds [lo, hi) less what is claimed, as roots of one name. */
__attribute__((format(printf, 6, 7)))
static struct hs_error *add_range(struct builder *b, enum hs_root_kind kind,
				  int thread, uint64_t lo, uint64_t hi,
				  const char *fmt, ...)
{
	if (lo >= hi)
		return NULL;
	char *name = NULL;
	va_list ap;
	va_start(ap, fmt);
	int rc = vasprintf(&name, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return &hs_error_nomem;
	struct hs_error *err = NULL;
	size_t i = iv_search(&b->claimed, lo);
	uint64_t cur = lo;
	while (cur < hi && !err) {
		uint64_t piece_hi = hi;
		if (i < b->claimed.n && b->claimed.v[i].lo < hi) {
			if (b->claimed.v[i].lo <= cur) {
				if (b->claimed.v[i].hi > cur)
					cur = b->claimed.v[i].hi;
				i++;
				continue;
			}
			piece_hi = b->claimed.v[i].lo;
		}
		struct hs_root root = {
			.start = cur, .end = piece_hi, .kind = kind,
			.thread = thread, .name = strdup(name),
			.stale = b->stale,
		};
		if (!root.name) {
			err = &hs_error_nomem;
		} else if ((err = push_root(b->r, &root))) {
			free(root.name);
		} else {
			if (b->stale)
				b->r->nstale++;
			else
				b->r->bytes[kind] += piece_hi - cur;
			err = iv_add(&b->pending, cur, piece_hi);
		}
		cur = piece_hi;
	}
	free(name);
	return err;
}

/* Ends a phase: what it claimed is claimed for the phases after it. */
static struct hs_error *end_phase(struct builder *b)
{
	for (size_t i = 0; i < b->pending.n; i++) {
		struct hs_error *err = iv_add(&b->claimed, b->pending.v[i].lo,
					      b->pending.v[i].hi);
		if (err)
			return err;
	}
	b->pending.n = 0;
	iv_normalize(&b->claimed);
	return NULL;
}

/* The glibc sizes of a thread's TCB (struct pthread) and of the static TLS
 * area (ld.so's _rtld_global_ro._dl_tls_static_size); fallbacks where the
 * debug info lacks them. */
static struct hs_error *tls_sizes(struct builder *b, uint64_t *tcb, uint64_t *static_size)
{
	*tcb = TCB_SIZE_FALLBACK;
	*static_size = 0;
	struct hs_module *libc = hs_dwarf_find_glibc(b->dw, "libc.so", "libc");
	const struct hs_layout *l;
	struct hs_error *err = NULL;
	if (libc) {
		err = hs_dwarf_layout(b->dw, libc, "struct pthread", &l);
		/* out of memory is no missing DWARF: no fallback then */
		if (err && err->code == HS_ERR_NOMEM)
			return err;
		if (!err && l->size) {
			*tcb = l->size;
		} else {
			/* no DWARF: the release's row (formats/gllayout.c) */
			bool exact;
			const struct hs_gl_layout *L = hs_glibc_row(b->dw, libc, &exact);
			if (L)
				*tcb = L->pthread_sizeof;
		}
		hs_error_destroy(err);
		err = NULL;
	}
	struct hs_module *ld = hs_dwarf_find_glibc(b->dw, "ld-linux", "ld");
	uint64_t addr, off, v;
	if (ld && !(err = hs_dwarf_symbol(b->dw, ld, "_rtld_global_ro", &addr,
					  NULL, NULL)) &&
	    !(err = hs_dwarf_layout(b->dw, ld, "struct rtld_global_ro", &l)) &&
	    !(err = hs_layout_member(l, "_dl_tls_static_size", &off, NULL)) &&
	    hs_core_read_u64(b->core, addr + off, &v) && v < (64u << 20))
		/* glibc counts the TCB in it (TLS_TCB_AT_TP) */
		*static_size = v > *tcb ? v - *tcb : v;
	if (err && err->code == HS_ERR_NOMEM)
		return err;
	if (err && ld && libc) {
		/* no DWARF for ld.so: _rtld_global_ro is exported, the member's
		 * offset is in the release's row */
		bool exact;
		const struct hs_gl_layout *L = hs_glibc_row(b->dw, libc, &exact);
		uint64_t a2;
		struct hs_error *e2 = NULL;
		if (L && L->rtld_ro_dl_tls_static_size != HS_GL_ABSENT &&
		    !(e2 = hs_dwarf_symbol(b->dw, ld, "_rtld_global_ro", &a2, NULL, NULL)) &&
		    hs_core_read_u64(b->core, a2 + L->rtld_ro_dl_tls_static_size, &v) &&
		    v < (64u << 20))
			*static_size = v > *tcb ? v - *tcb : v;
		hs_error_destroy(e2);
	}
	hs_error_destroy(err);
	if (!*static_size) {
		/* every module's block, rounded, plus glibc's surplus */
		uint64_t sum = 0;
		for (size_t i = 0; i < hs_dwarf_num_modules(b->dw); i++) {
			uint64_t memsz, align;
			if (hs_dwarf_module_tls(b->dw, hs_dwarf_module(b->dw, i),
						&memsz, &align))
				sum += (memsz + align - 1) & ~(align - 1);
		}
		*static_size = sum + 1664;
	}
	return NULL;
}

static struct hs_error *thread_tls(struct builder *b, size_t t, uint64_t tcb,
				   uint64_t static_size)
{
	const struct hs_core_thread *th = &b->core->threads[t];
	uint64_t fs = th->regs[HS_REG_FS_BASE];
	int n = (int)t + 1;
	struct hs_error *err;
	if (!fs)
		return NULL;
	/* named TLS variables first, then the rest of the area */
	for (size_t i = 0; i < hs_dwarf_num_modules(b->dw); i++) {
		struct hs_module *m = hs_dwarf_module(b->dw, i);
		uint64_t block;
		if (!hs_dwarf_tls_block(b->dw, b->core, m, fs, &block))
			continue;
		const struct hs_symbol *syms;
		size_t nsyms;
		if ((err = hs_dwarf_tls_symbols(b->dw, m, &syms, &nsyms)))
			return err;
		for (size_t k = 0; k < nsyms; k++) {
			uint64_t lo = block + syms[k].addr;
			uint64_t hi = lo + syms[k].size;
			if (k + 1 < nsyms && block + syms[k + 1].addr < hi)
				hi = block + syms[k + 1].addr;
			if ((err = add_range(b, HS_ROOT_TLS, (int)t, lo, hi,
					     "thread %d (tid %d) TLS %s in %s", n,
					     th->tid, syms[k].name,
					     hs_module_base(m))))
				return err;
		}
	}
	if ((err = end_phase(b)))
		return err;
	/* the static TLS area and the TCB sit in one mapping */
	const struct hs_core_segment *seg = hs_core_find_segment(b->core, fs);
	uint64_t lo = fs - static_size, hi = fs + tcb;
	if (seg && lo < seg->vaddr)
		lo = seg->vaddr;
	if (seg && hi > seg->vaddr + seg->memsz)
		hi = seg->vaddr + seg->memsz;
	if ((err = add_range(b, HS_ROOT_TLS, (int)t, lo, fs,
			     "thread %d (tid %d) static TLS", n, th->tid)) ||
	    (err = add_range(b, HS_ROOT_TLS, (int)t, fs, hi,
			     "thread %d (tid %d) TCB", n, th->tid)))
		return err;
	/* The dtv (dynamic TLS blocks hang from it).  The TCB points one
	 * entry into it (glibc's dtv[-1] holds its length): when the dtv is a
	 * heap block, that pointer holds the block as a start pointer would,
	 * so it becomes a value root at the block's start. */
	uint64_t dtv, len;
	if (hs_core_read_u64(b->core, fs + 8, &dtv) && dtv &&
	    hs_core_read_u64(b->core, dtv - 16, &len) && len < (1u << 16)) {
		const struct hs_alloc *a = hs_heap_find(b->heap, dtv);
		if (a && a->addr == dtv - 16) {
			char *name;
			if (asprintf(&name, "thread %d (tid %d) dtv", n, th->tid) < 0)
				return &hs_error_nomem;
			struct hs_root root = {.value = a->addr, .kind = HS_ROOT_TLS,
					       .thread = (int)t, .name = name};
			if ((err = push_root(b->r, &root))) {
				free(name);
				return err;
			}
		} else if ((err = add_range(b, HS_ROOT_TLS, (int)t, dtv - 16,
					    dtv + 16 * (len + 1),
					    "thread %d (tid %d) dtv", n, th->tid))) {
			return err;
		}
	}
	return end_phase(b);
}

static struct hs_error *thread_stack(struct builder *b, size_t t,
				     const struct hs_thread_frames *tf)
{
	const struct hs_core_thread *th = &b->core->threads[t];
	int n = (int)t + 1;
	uint64_t sp = th->regs[HS_REG_RSP];
	const struct hs_core_segment *seg = hs_core_find_segment(b->core, sp);
	if (!seg) {
		hs_log_warn(b->log, "thread %d (tid %d): its stack pointer %#llx is not in the core; its stack is not a root",
			    n, th->tid, (unsigned long long)sp);
		return NULL;
	}
	uint64_t lo = sp >= seg->vaddr + RED_ZONE ? sp - RED_ZONE : seg->vaddr;
	uint64_t hi = seg->vaddr + seg->memsz;
	const struct hs_thread_state *st = &b->r->threads[t];
	if (!b->conservative && st->stop != HS_STOP_ASYNC && lo < sp) {
		/* the red zone of a thread stopped at a system call or a call:
		 * what is there belongs to calls that have returned */
		b->stale = true;
		struct hs_error *err = add_range(b, HS_ROOT_STACK, (int)t, lo,
						 sp < hi ? sp : hi,
						 "thread %d (tid %d) red zone below the stack pointer%s",
						 n, th->tid, stale_why(st));
		b->stale = false;
		if (err)
			return err;
		lo = sp;
	}
	if (!tf || !tf->n) {
		b->r->unwound = false;
		return add_range(b, HS_ROOT_STACK, (int)t, lo, hi,
				 "thread %d (tid %d) stack", n, th->tid);
	}
	const struct hs_frame *frames = tf->frames;
	size_t nframes = tf->n;
	struct hs_error *err = NULL;
	/* frame k: from its sp to the next frame's sp (frame 0 from the red
	 * zone); frames without a usable sp are merged into the one above */
	uint64_t cur = lo;
	for (size_t k = 0; k < nframes && !err; k++) {
		uint64_t end = hi;
		for (size_t j = k + 1; j < nframes; j++) {
			if (frames[j].sp > cur && frames[j].sp <= hi) {
				end = frames[j].sp;
				break;
			}
		}
		if (end <= cur)
			continue;
		char *where = hs_dwarf_describe_pc(b->dw, frames[k].pc,
						   frames[k].activation || k == 0);
		err = add_range(b, HS_ROOT_STACK, (int)t, cur, end,
				"thread %d (tid %d) frame #%zu %s", n, th->tid, k,
				where ? where : "??");
		free(where);
		cur = end;
	}
	if (!err && cur < hi)
		err = add_range(b, HS_ROOT_STACK, (int)t, cur, hi,
				"thread %d (tid %d) stack above frame #%zu", n,
				th->tid, nframes ? nframes - 1 : 0);
	return err;
}

static struct hs_error *module_globals(struct builder *b, struct hs_module *m)
{
	const char *mname = hs_module_base(m);
	const struct hs_symbol *syms = NULL;
	size_t nsyms = 0;
	struct hs_error *err = hs_dwarf_data_symbols(b->dw, m, &syms, &nsyms);
	if (err)
		return err;
	for (size_t i = 0; i < b->core->nsegs; i++) {
		const struct hs_core_segment *s = &b->core->segs[i];
		if (!(s->flags & HS_SEG_W))
			continue;
		uint64_t lo = s->vaddr > m->start ? s->vaddr : m->start;
		uint64_t hi = s->vaddr + s->memsz < m->end ? s->vaddr + s->memsz : m->end;
		if (lo >= hi)
			continue;
		/* first symbol ending after lo */
		size_t k = 0, a = 0, z = nsyms;
		while (a < z) {
			size_t mid = a + (z - a) / 2;
			if (syms[mid].addr + syms[mid].size <= lo)
				a = mid + 1;
			else
				z = mid;
		}
		k = a;
		uint64_t cur = lo;
		for (; k < nsyms && syms[k].addr < hi; k++) {
			uint64_t slo = syms[k].addr < cur ? cur : syms[k].addr;
			uint64_t shi = syms[k].addr + syms[k].size;
			if (k + 1 < nsyms && syms[k + 1].addr < shi)
				shi = syms[k + 1].addr;
			if (shi > hi)
				shi = hi;
			if (slo >= shi)
				continue;
			if (cur < slo &&
			    (err = add_range(b, HS_ROOT_GLOBAL, -1, cur, slo,
					     "%s+%#llx", mname,
					     (unsigned long long)(cur - m->start))))
				return err;
			if ((err = add_range(b, HS_ROOT_GLOBAL, -1, slo, shi,
					     "global %s in %s", syms[k].name, mname)))
				return err;
			cur = shi;
		}
		if (cur < hi &&
		    (err = add_range(b, HS_ROOT_GLOBAL, -1, cur, hi, "%s+%#llx",
				     mname, (unsigned long long)(cur - m->start))))
			return err;
	}
	return NULL;
}

static struct hs_error *unexplained(struct builder *b)
{
	struct hs_error *err;
	for (size_t i = 0; i < b->core->nsegs; i++) {
		const struct hs_core_segment *s = &b->core->segs[i];
		if (!(s->flags & HS_SEG_W))
			continue;
		uint64_t lo = s->vaddr, hi = s->vaddr + s->memsz;
		if (s->file >= 0)
			err = add_range(b, HS_ROOT_UNEXPLAINED, -1, lo, hi,
					"writable mapping of %s at %#llx",
					b->core->files[s->file].path,
					(unsigned long long)lo);
		else
			err = add_range(b, HS_ROOT_UNEXPLAINED, -1, lo, hi,
					"anonymous memory at %#llx",
					(unsigned long long)lo);
		if (err)
			return err;
	}
	return end_phase(b);
}

/* A runtime's stacks (hs_roots_options.stacks): live below the top,
 * stale above it, the header explained.  One phase each: stacks that
 * overlap (a corrupt core) give roots that do not. */
static struct hs_error *runtime_stacks(struct builder *b,
				       const struct hs_roots_options *opts)
{
	struct hs_error *err;
	for (size_t i = 0; i < opts->nstacks; i++) {
		const struct hs_root_stack *s = &opts->stacks[i];
		if (s->base > s->lo || s->lo > s->top || s->top > s->end)
			continue;
		if ((err = add_range(b, HS_ROOT_STACK, -1, s->lo, s->top,
				     "%s at %#llx", s->what,
				     (unsigned long long)s->lo)))
			return err;
		b->stale = !b->conservative;
		err = add_range(b, HS_ROOT_STACK, -1, s->top, s->end,
				"%s at %#llx, above the top (returned calls)",
				s->what, (unsigned long long)s->lo);
		b->stale = false;
		if (err || (err = iv_add(&b->pending, s->base, s->lo)) ||
		    (err = end_phase(b)))
			return err;
	}
	return NULL;
}

static bool live_tid(const struct hs_core *core, int32_t tid)
{
	for (size_t t = 0; t < core->nthreads; t++)
		if (core->threads[t].tid == tid)
			return true;
	return false;
}

/* Words of the dynamic linker that point at memory it has given back: when
 * ld.so unloads /etc/ld.so.cache (cache set to NULL, the mapping unmapped)
 * its cache_new keeps the old address, where a later mapping of the heap
 * can start, and with it a block.  Explained, so no root. */
static struct hs_error *stale_loader_words(struct builder *b)
{
	struct hs_module *ld = hs_dwarf_find_glibc(b->dw, "ld-linux", "ld");
	uint64_t cache, cache_new, v;
	if (!ld)
		return NULL;
	struct hs_error *err = hs_dwarf_symbol(b->dw, ld, "cache", &cache, NULL, NULL);
	if (!err)
		err = hs_dwarf_symbol(b->dw, ld, "cache_new", &cache_new, NULL, NULL);
	if (err) {
		/* without ld.so's symbols the word stays a root, as before */
		bool nomem = err == &hs_error_nomem;
		hs_error_destroy(err);
		return nomem ? &hs_error_nomem : NULL;
	}
	if (!hs_core_read_u64(b->core, cache, &v) || v)
		return NULL;  /* the cache is mapped: cache_new points into it */
	return iv_add(&b->pending, cache_new, cache_new + 8);
}

/* The stacks glibc keeps for threads that have exited (ld.so's
 * _dl_stack_cache, and _dl_stack_used entries of threads not in the core):
 * their frames and TLS are dead, so they are explained and no root.  The
 * cached thread's dtv stays held by glibc (header.dtv): a value root. */
static struct hs_error *dead_thread_stacks(struct builder *b)
{
	struct hs_module *ld = hs_dwarf_find_glibc(b->dw, "ld-linux", "ld");
	struct hs_module *libc = hs_dwarf_find_glibc(b->dw, "libc.so", "libc");
	const struct hs_layout *rg, *pt, *tcb;
	uint64_t rtld, off_used, off_cache, off_list, off_tid, off_sb, off_sbsize,
		off_dtv;
	struct hs_error *err;
	if (!ld || !libc)
		return NULL;
	if ((err = hs_dwarf_symbol(b->dw, ld, "_rtld_global", &rtld, NULL, NULL)) ||
	    (err = hs_dwarf_layout(b->dw, ld, "struct rtld_global", &rg)) ||
	    (err = hs_layout_member(rg, "_dl_stack_used", &off_used, NULL)) ||
	    (err = hs_layout_member(rg, "_dl_stack_cache", &off_cache, NULL)) ||
	    (err = hs_dwarf_layout(b->dw, libc, "struct pthread", &pt)) ||
	    (err = hs_layout_member(pt, "list", &off_list, NULL)) ||
	    (err = hs_layout_member(pt, "tid", &off_tid, NULL)) ||
	    (err = hs_layout_member(pt, "stackblock", &off_sb, NULL)) ||
	    (err = hs_layout_member(pt, "stackblock_size", &off_sbsize, NULL)) ||
	    (err = hs_dwarf_layout(b->dw, libc, "tcbhead_t", &tcb)) ||
	    (err = hs_layout_member(tcb, "dtv", &off_dtv, NULL))) {
		bool nomem = err == &hs_error_nomem;
		hs_error_destroy(err);
		err = NULL;  /* the test below may not set it */
		if (nomem)
			return &hs_error_nomem;
		/* no DWARF: _rtld_global is exported, the offsets are in the
		 * release's row (formats/gllayout.c); without either, cached
		 * stacks are unexplained memory: roots, as before */
		bool exact;
		const struct hs_gl_layout *L = hs_glibc_row(b->dw, libc, &exact);
		if (!L || L->rtld_dl_stack_used == HS_GL_ABSENT ||
		    (err = hs_dwarf_symbol(b->dw, ld, "_rtld_global", &rtld, NULL, NULL))) {
			hs_error_destroy(err);
			return NULL;
		}
		off_used = L->rtld_dl_stack_used;
		off_cache = L->rtld_dl_stack_cache;
		off_list = L->pthread_list;
		off_tid = L->pthread_tid;
		off_sb = L->pthread_stackblock;
		off_sbsize = L->pthread_stackblock_size;
		off_dtv = L->tcb_dtv;
	}
	uint64_t heads[2] = {rtld + off_used, rtld + off_cache};
	for (int h = 0; h < 2; h++) {
		uint64_t p;
		if (!hs_core_read_u64(b->core, heads[h], &p))
			continue;
		for (int n = 0; p && p != heads[h] && n < 65536; n++) {
			uint64_t pd = p - off_list, sb, size, dtv, next;
			int32_t tid;
			if (!hs_core_read_quiet(b->core, pd + off_tid, &tid, sizeof(tid)) ||
			    !hs_core_read_u64(b->core, pd + off_sb, &sb) ||
			    !hs_core_read_u64(b->core, pd + off_sbsize, &size) ||
			    !hs_core_read_u64(b->core, p, &next))
				break;
			if (!live_tid(b->core, tid) && sb && size < (1ull << 40)) {
				if ((err = iv_add(&b->pending, sb, sb + size)))
					return err;
				const struct hs_alloc *a;
				if (hs_core_read_u64(b->core, pd + off_dtv, &dtv) && dtv &&
				    (a = hs_heap_find(b->heap, dtv)) && a->addr == dtv - 16) {
					char *name;
					if (asprintf(&name, "dtv of an exited thread's cached stack at %#llx",
						     (unsigned long long)sb) < 0)
						return &hs_error_nomem;
					struct hs_root root = {.value = a->addr,
							       .kind = HS_ROOT_TLS,
							       .thread = -1, .name = name};
					if ((err = push_root(b->r, &root))) {
						free(name);
						return err;
					}
				}
			}
			p = next;
		}
	}
	return end_phase(b);
}

static int cmp_root(const void *a, const void *b)
{
	const struct hs_root *x = a, *y = b;
	bool rx = hs_root_is_value(x), ry = hs_root_is_value(y);
	if (rx != ry)
		return rx ? -1 : 1;
	if (rx)
		return 0;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct hs_error *build(struct builder *b,
			      const struct hs_roots_options *opts)
{
	struct hs_error *err;
	const struct hs_core *core = b->core;
	/* allocator state is never a root */
	for (size_t i = 0; i < b->heap->nregions; i++)
		if ((err = iv_add(&b->claimed, b->heap->regions[i].start,
				  b->heap->regions[i].end)))
			return err;
	iv_normalize(&b->claimed);

	b->r->threads = hs_calloc(core->nthreads ? core->nthreads : 1,
			       sizeof(*b->r->threads));
	if (!b->r->threads)
		return &hs_error_nomem;
	for (size_t t = 0; t < core->nthreads; t++) {
		b->r->threads[t] = hs_thread_state_of(core, b->dw, t);
		const struct hs_thread_state *st = &b->r->threads[t];
		bool all = opts->conservative;
		const struct hs_core_thread *th = &core->threads[t];
		for (size_t k = 0; k < sizeof(pointer_regs) / sizeof(pointer_regs[0]); k++) {
			bool live = all || reg_live(st, pointer_regs[k]);
			if ((err = value_root(b, t, th->regs[pointer_regs[k]], live,
					      "thread %zu (tid %d) %s%s", t + 1,
					      th->tid, hs_reg_names[pointer_regs[k]],
					      live ? "" : stale_why(st))))
				return err;
		}
		for (int r = 0; r < th->vec_regs; r++) {
			bool live = all || vec_live(st, r);
			for (int l = 0; l < th->vec_lanes; l++) {
				uint64_t v = th->vec[r][l];
				/* only lanes that could point into the core */
				if (!v || !hs_core_find_segment(core, v))
					continue;
				const char *reg = l < 2 ? "xmm" : l < 4 ? "ymm" : "zmm";
				if ((err = value_root(b, t, v, live,
						      "thread %zu (tid %d) %s%d[%d]%s",
						      t + 1, th->tid, reg, r, l,
						      live ? "" : stale_why(st))))
					return err;
			}
		}
	}
	uint64_t tcb, static_size;
	if ((err = tls_sizes(b, &tcb, &static_size)))
		return err;
	for (size_t t = 0; t < core->nthreads; t++)
		if ((err = thread_tls(b, t, tcb, static_size)))
			return err;
	b->r->unwound = true;
	struct hs_thread_frames *tf = NULL;
	size_t ntf = 0;
	err = hs_dwarf_unwind_all(b->dw, core, &tf, &ntf);
	if (err && err->code == HS_ERR_NOMEM)
		return err;
	if (err) {
		hs_log_warn(b->log, "%s", err->message);
		hs_error_destroy(err);
	}
	for (size_t t = 0; t < core->nthreads; t++) {
		/* tf[t] is thread t's, whatever its thread id says */
		if ((err = thread_stack(b, t, t < ntf ? &tf[t] : NULL))) {
			hs_dwarf_frames_free(tf, ntf);
			return err;
		}
	}
	hs_dwarf_frames_free(tf, ntf);
	if ((err = end_phase(b)))
		return err;
	if ((err = stale_loader_words(b)))
		return err;
	/* words the caller knows are no references (libc's list of stdio
	 * streams: analyzers/files.h) */
	for (size_t i = 0; i < opts->nnot_refs; i++)
		if ((err = iv_add(&b->pending, opts->not_refs[i], opts->not_refs[i] + 8)))
			return err;
	if ((err = end_phase(b)))
		return err;
	/* dead words the caller found among the globals: stale, and cut out
	 * of the globals they sit in */
	for (size_t i = 0; i < opts->nstale; i++) {
		const struct hs_root_stale *st = &opts->stale[i];
		b->stale = !b->conservative;
		err = add_range(b, HS_ROOT_GLOBAL, -1, st->start, st->end,
				"%s at %#llx, slots above its count", st->what,
				(unsigned long long)st->start);
		b->stale = false;
		/* one phase each: ranges that overlap give roots that do not */
		if (err || (err = end_phase(b)))
			return err;
	}
	for (size_t i = 0; i < hs_dwarf_num_modules(b->dw); i++)
		if ((err = module_globals(b, hs_dwarf_module(b->dw, i))))
			return err;
	/* a module's whole span (bss included) is explained by the module */
	for (size_t i = 0; i < hs_dwarf_num_modules(b->dw); i++) {
		struct hs_module *m = hs_dwarf_module(b->dw, i);
		if ((err = iv_add(&b->pending, m->start, m->end)))
			return err;
	}
	if ((err = end_phase(b)))
		return err;
	/* the rest of every thread's stack mapping is explained too */
	for (size_t t = 0; t < core->nthreads; t++) {
		const struct hs_core_segment *s =
			hs_core_find_segment(core, core->threads[t].regs[HS_REG_RSP]);
		if (s && (err = iv_add(&b->pending, s->vaddr, s->vaddr + s->memsz)))
			return err;
	}
	if ((err = end_phase(b)))
		return err;
	if ((err = dead_thread_stacks(b)))
		return err;
	if ((err = runtime_stacks(b, opts)))
		return err;
	if (opts->unexplained && (err = unexplained(b)))
		return err;
	hs_sort(b->r->roots, b->r->n, sizeof(*b->r->roots), cmp_root);
	return NULL;
}

struct hs_error *hs_roots_build(const struct hs_core *core, struct hs_dwarf *dw,
				const struct hs_heap *heap,
				const struct hs_roots_options *opts,
				struct hs_log *log, struct hs_roots **ret)
{
	struct hs_roots *r = hs_calloc(1, sizeof(*r));
	if (!r)
		return &hs_error_nomem;
	struct builder b = {.core = core, .dw = dw, .heap = heap, .log = log,
			    .r = r, .conservative = opts->conservative};
	struct hs_error *err = build(&b, opts);
	free(b.claimed.v);
	free(b.pending.v);
	if (err) {
		hs_roots_destroy(r);
		return err;
	}
	if (!r->unwound)
		hs_log_warn(log, "some thread stacks could not be unwound: their roots are named by thread only");
	*ret = r;
	return NULL;
}

void hs_roots_destroy(struct hs_roots *roots)
{
	if (!roots)
		return;
	for (size_t i = 0; i < roots->n; i++)
		free(roots->roots[i].name);
	free(roots->roots);
	free(roots->threads);
	free(roots);
}

const struct hs_root *hs_roots_find(const struct hs_roots *r, uint64_t addr)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi && hs_root_is_value(&r->roots[lo]))
		lo++;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hs_root *x = &r->roots[mid];
		if (addr < x->start)
			hi = mid;
		else if (addr >= x->end)
			lo = mid + 1;
		else
			return x;
	}
	return NULL;
}
