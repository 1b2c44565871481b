/* A core of a live process: see src/live.h. */
#include "src/live.h"
#include "src/alloc.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "formats/corewrite.h"
#include "formats/elfcore.h"
#include "src/outfile.h"
#include "src/seccomp.h"
#include "src/vector.h"

_Static_assert(sizeof(struct elf_prstatus) == 336, "NT_PRSTATUS layout");
_Static_assert(sizeof(struct elf_prpsinfo) == 136, "NT_PRPSINFO layout");

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

enum {
	XSTATE_MAX = 16384,
	PAGE = 4096,
	/* the kernel's restart codes (include/linux/errno.h) */
	ERESTARTSYS = 512, ERESTARTNOINTR = 513, ERESTARTNOHAND = 514,
	ERESTART_RESTARTBLOCK = 516,
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct thread {
	pid_t tid;
	bool stopped;           /* seized and in a stop, to be detached */
	bool gone;              /* exited while we looked */
	int event;              /* status >> 16 of its stop */
	int sig;                /* the stop's signal */
	int pending;            /* a signal to deliver at detach */
	struct user_regs_struct regs;
	struct user_fpregs_struct fp;
	bool have_fp;
	uint8_t *xstate;
	size_t xstate_len;
};

struct mapping {
	uint64_t start, end, offset, inode;
	char perms[5];
	char *path;             /* "" when anonymous */
	uint64_t anon_kb;       /* smaps' Anonymous */
	bool dontdump;          /* VmFlags dd or io */
};

/* Addresses [start, end) of the target and where their bytes are: for a
 * mapping copied while the target ran, at offset off of the copy's file;
 * for what was read with the threads stopped, in data (NULL for zeros: an
 * anonymous page not there). */
struct span {
	uint64_t start, end, off;
	uint8_t *data;
};

struct live {
	pid_t pid;              /* the target */
	pid_t src;              /* whose memory is read: pid or the clone */
	pid_t clone;            /* 0 when none */
	int memfd;              /* /proc/src/mem, -1 until needed */
	struct thread *threads;
	size_t nthreads;
	struct mapping *maps;
	size_t nmaps;
	bool detached;
	double t_first, t_last;
	const struct hs_live_options *opts;
	sigset_t blocked;
	uint64_t bytes;
	const struct hs_core_load_out *loads;
	const size_t *load_map;     /* load index -> maps index */
	/* write-tracked mode */
	bool tracked;           /* the memory comes from pre and late */
	int uffd, pagemap;      /* the target's userfaultfd, its pagemap */
	uint64_t uffd_features; /* what our kernel offers */
	int pre_fd;             /* the copy made while the target ran */
	struct mapping *maps0;  /* the mappings when the copy began */
	size_t nmaps0;
	struct span *pre;       /* where each mapping's copy is, by address */
	size_t npre;
	struct span *late;      /* what was read at the stop, by address */
	size_t nlate, caplate;
	uint64_t late_bytes;    /* read at the stop */
	uint8_t *scratch;       /* 1 MiB, for what is read again at the stop */
	uint64_t recopied;      /* read again while it ran */
	double pause1_ms;       /* the stop that made the userfaultfd */
};

/* ---- /proc ------------------------------------------------------------ */

static struct hs_error *read_file(const char *path, char **ret, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hs_error_errno(errno, "%s", path);
	size_t cap = 4096, n = 0;
	char *buf = hs_malloc(cap + 1);
	for (;;) {
		if (!buf) {
			close(fd);
			return &hs_error_nomem;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			return hs_error_errno(e, "%s", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			cap *= 2;
			char *nb = hs_realloc(buf, cap + 1);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	close(fd);
	buf[n] = 0;
	*ret = buf;
	if (len)
		*len = n;
	return NULL;
}

/* A line "Key:\tvalue" of /proc/PID/status, or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, key, k) && p[k] == ':')
			return p + k + 1;
	return NULL;
}

static void free_maps(struct mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

/* /proc/PID/smaps (or maps, without the counters). */
static struct hs_error *read_maps(pid_t pid, bool smaps, struct mapping **ret,
				  size_t *nret)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, smaps ? "smaps" : "maps");
	struct hs_error *err = read_file(path, &text, NULL);
	if (err)
		return err;
	struct mapping *m = NULL;
	size_t n = 0, cap = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, perms,
			   &off, &maj, &min, &ino, &pos) >= 7 && strchr(line, '-') &&
		    line[0] != ' ' && strlen(perms) == 4) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				struct mapping *nm = hs_realloc(m, cap * sizeof(*m));
				if (!nm) {
					err = &hs_error_nomem;
					break;
				}
				m = nm;
			}
			const char *p = pos ? line + pos : "";
			while (*p == ' ')
				p++;
			m[n] = (struct mapping){.start = s, .end = e, .offset = off,
						.inode = ino, .path = strdup(p)};
			memcpy(m[n].perms, perms, 5);
			if (!m[n].path) {
				err = &hs_error_nomem;
				break;
			}
			n++;
		} else if (n && !strncmp(line, "Anonymous:", 10)) {
			m[n - 1].anon_kb = strtoull(line + 10, NULL, 10);
		} else if (n && !strncmp(line, "VmFlags:", 8)) {
			for (const char *f = line + 8; *f; f++)
				if ((f[0] == 'd' && f[1] == 'd') || (f[0] == 'i' && f[1] == 'o'))
					if (f[-1] == ' ' && (f[2] == ' ' || !f[2]))
						m[n - 1].dontdump = true;
		}
	}
	free(text);
	if (err) {
		free_maps(m, n);
		return err;
	}
	*ret = m;
	*nret = n;
	return NULL;
}

/* ---- memory ----------------------------------------------------------- */

/* len bytes at addr of process pid; what cannot be read is zeros. */
static void read_mem(struct live *l, uint64_t addr, uint8_t *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t r = process_vm_readv(l->src, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)len)
		return;
	/* a page at a time: a hole (a file mapping past its end) costs
	 * that page only */
	for (size_t at = 0; at < len;) {
		size_t n = PAGE - ((addr + at) & (PAGE - 1));
		if (n > len - at)
			n = len - at;
		local = (struct iovec){buf + at, n};
		remote = (struct iovec){(void *)(uintptr_t)(addr + at), n};
		if (process_vm_readv(l->src, &local, 1, &remote, 1, 0) != (ssize_t)n) {
			if (l->memfd < 0) {
				char path[64];
				snprintf(path, sizeof(path), "/proc/%d/mem", (int)l->src);
				l->memfd = open(path, O_RDONLY | O_CLOEXEC);
			}
			if (l->memfd < 0 ||
			    pread(l->memfd, buf + at, n, (off_t)(addr + at)) != (ssize_t)n)
				memset(buf + at, 0, n);
		}
		at += n;
	}
}

/* ---- threads ---------------------------------------------------------- */

static void sleep_ms(unsigned ms);

static bool process_alive(pid_t pid)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	struct hs_error *err = read_file(path, &text, NULL);
	if (err) {
		hs_error_destroy(err);
		return false;
	}
	const char *p = strrchr(text, ')');
	bool alive = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	free(text);
	return alive;
}

static struct hs_error *gone_error(struct live *l)
{
	return hs_error_create(HS_ERR_IO, "process %d exited during the snapshot",
			       (int)l->pid);
}

/* waitpid(tid, st, __WALL) for one of the target's threads, or 0 when
 * the process died and tid is its leader, which cannot be waited for
 * then.  A killed thread stays a zombie until its tracer (we) waits for
 * it, and the kernel reports the leader's exit only once every other
 * thread is gone: a blocking wait on the leader of a process killed
 * while we trace it never returns.  So while other threads are traced,
 * the leader is polled, and the process's state read between polls. */
static pid_t wait_thread(struct live *l, pid_t tid, int *st)
{
	if (tid != l->pid || l->nthreads <= 1) {
		pid_t r;
		while ((r = waitpid(tid, st, __WALL)) < 0 && errno == EINTR)
			;
		return r;
	}
	long ns = 0;
	for (;;) {
		pid_t r = waitpid(tid, st, __WALL | WNOHANG);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0)
			return r;
		if (!process_alive(l->pid))
			return 0;
		/* a stop comes within microseconds, mostly; an injected
		 * clone's within milliseconds, which the pause includes:
		 * polls at most 250 us apart */
		ns = ns ? (ns < 250000 ? 2 * ns : 250000) : 20000;
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
	}
}

/* Waits for thread t's next stop; false when it exited. */
static struct hs_error *wait_stop(struct live *l, struct thread *t)
{
	for (;;) {
		int st;
		pid_t r = wait_thread(l, t->tid, &st);
		if (r == 0) {
			t->gone = true;
			t->stopped = false;
			return gone_error(l);
		}
		if (r < 0) {
			if (errno == ECHILD) {
				t->gone = true;
				return NULL;
			}
			return hs_error_errno(errno, "waiting for thread %d", (int)t->tid);
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = true;
			t->stopped = false;
			if (t->tid == l->pid || !process_alive(l->pid))
				return gone_error(l);
			return NULL;
		}
		if (WIFSTOPPED(st)) {
			t->stopped = true;
			t->event = st >> 16;
			t->sig = WSTOPSIG(st);
			/* a signal-delivery-stop: the signal was on its way,
			 * it is given back at detach */
			if (t->event == 0 && t->sig != SIGTRAP)
				t->pending = t->sig;
			return NULL;
		}
	}
}

static int cmp_tid(const void *a, const void *b)
{
	const struct thread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* One reading of /proc/PID/task: seizes and interrupts the threads not
 * seen yet; *added says how many. */
static struct hs_error *seize_new(struct live *l, size_t *added)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)l->pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? gone_error(l) :
			hs_error_errno(errno, "%s", path);
	*added = 0;
	struct dirent *e;
	struct hs_error *err = NULL;
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
		bool known = false;
		for (size_t i = 0; i < l->nthreads && !known; i++)
			known = l->threads[i].tid == tid;
		if (known)
			continue;
		struct thread *nt = hs_realloc(l->threads, (l->nthreads + 1) * sizeof(*nt));
		if (!nt) {
			err = &hs_error_nomem;
			break;
		}
		l->threads = nt;
		struct thread *t = &nt[l->nthreads++];
		*t = (struct thread){.tid = tid};
		if (!l->t_first)
			l->t_first = now_ms();
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
			/* a zombie refuses with EPERM */
			if (errno == ESRCH || !process_alive(l->pid)) {
				t->gone = true;
				if (tid == l->pid)
					err = gone_error(l);
				continue;
			}
			err = hs_error_errno(errno, "ptrace(PTRACE_SEIZE) of thread %d of process %d",
					     (int)tid, (int)l->pid);
			t->gone = true;
			break;
		}
		t->stopped = true;  /* seized: detach from here on */
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno != ESRCH)
			err = hs_error_errno(errno, "ptrace(PTRACE_INTERRUPT) of thread %d",
					     (int)tid);
		(*added)++;
	}
	closedir(d);
	return err;
}

/* Every thread stopped, including those created while we stopped them. */
static struct hs_error *stop_all(struct live *l)
{
	for (int round = 0; round < 1000; round++) {
		size_t before = l->nthreads, added = 0;
		struct hs_error *err = seize_new(l, &added);
		if (round == 0 && l->opts->test_stop_sleep_ms)
			sleep_ms(l->opts->test_stop_sleep_ms);
		for (size_t i = before; i < l->nthreads; i++) {
			struct thread *t = &l->threads[i];
			if (t->gone)
				continue;
			struct hs_error *e = wait_stop(l, t);
			if (e && !err)
				err = e;
			else
				hs_error_destroy(e);
		}
		if (err)
			return err;
		if (!added)
			return NULL;
	}
	return hs_error_create(HS_ERR_IO, "process %d keeps creating threads faster than they can be stopped",
			       (int)l->pid);
}

static void detach_all(struct live *l)
{
	if (l->detached)
		return;
	for (size_t i = 0; i < l->nthreads; i++) {
		struct thread *t = &l->threads[i];
		if (t->stopped && !t->gone)
			ptrace(PTRACE_DETACH, t->tid, 0, (void *)(uintptr_t)t->pending);
		t->stopped = false;
	}
	l->detached = true;
	l->t_last = now_ms();
}

/* A ptrace request on thread tid, stopped, failed with errno: a stopped
 * thread goes away only when its process is killed (ESRCH), and then that
 * is what is said. */
static struct hs_error *stopped_error(struct live *l, pid_t tid, const char *request)
{
	int e = errno;
	if (e == ESRCH || !process_alive(l->pid))
		return gone_error(l);
	return hs_error_errno(e, "ptrace(%s) of thread %d", request, (int)tid);
}

static struct hs_error *read_regs(struct live *l, struct thread *t)
{
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) != 0)
		return stopped_error(l, t->tid, "PTRACE_GETREGS");
	struct iovec iov = {&t->fp, sizeof(t->fp)};
	t->have_fp = ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRFPREG, &iov) == 0 &&
		     iov.iov_len == sizeof(t->fp);
	t->xstate = hs_malloc(XSTATE_MAX);
	if (!t->xstate)
		return &hs_error_nomem;
	iov = (struct iovec){t->xstate, XSTATE_MAX};
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) == 0)
		t->xstate_len = iov.iov_len;
	return NULL;
}

/* ---- seccomp ----------------------------------------------------------- */

/* Whether every seccomp filter of thread tid (stopped) lets system call
 * nr(args) made from the instruction at ip run: each filter run as the
 * kernel runs it (PTRACE_SECCOMP_GET_FILTER, which needs CAP_SYS_ADMIN),
 * the call allowed only when all of them say ALLOW or LOG.  An error
 * when the filters cannot be read. */
static struct hs_error *seccomp_allows(pid_t tid, uint64_t ip, long nr,
				       const uint64_t args[3], bool *ret)
{
	struct seccomp_data d = {.nr = (int)nr, .arch = AUDIT_ARCH_X86_64,
				 .instruction_pointer = ip,
				 .args = {args[0], args[1], args[2]}};
	*ret = true;
	for (unsigned long index = 0; index < 4096; index++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)index, NULL);
		if (n < 0 && errno == ENOENT && index > 0)
			return NULL;    /* every filter ran */
		if (n <= 0 || n > BPF_MAXINSNS)
			return hs_error_errno(n < 0 ? errno : EINVAL,
					      "reading the seccomp filter of thread %d", (int)tid);
		struct sock_filter *f = hs_calloc((size_t)n, sizeof(*f));
		if (!f)
			return &hs_error_nomem;
		uint32_t action = 0;
		bool ran = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)index, f) == n &&
			   hs_seccomp_run(f, (size_t)n, &d, &action);
		free(f);
		if (!ran)
			return hs_error_create(HS_ERR_IO, "the seccomp filter of thread %d cannot be read or run",
					       (int)tid);
		action &= SECCOMP_RET_ACTION_FULL;
		if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG)
			*ret = false;
	}
	return hs_error_create(HS_ERR_IO, "thread %d has too many seccomp filters", (int)tid);
}

/* ---- fork mode -------------------------------------------------------- */

/* A `syscall` instruction (0f 05) in an executable mapping: the vdso's,
 * else the first found in the others. */
static bool find_syscall_insn(struct live *l, uint64_t *ret)
{
	uint8_t *buf = hs_malloc(1 << 20);
	if (!buf)
		return false;
	bool found = false;
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (size_t i = 0; i < l->nmaps && !found; i++) {
			const struct mapping *m = &l->maps[i];
			bool vdso = !strcmp(m->path, "[vdso]");
			if (m->perms[0] != 'r' || m->perms[2] != 'x' || vdso != (pass == 0))
				continue;
			for (uint64_t a = m->start; a < m->end && !found;) {
				size_t n = m->end - a < (1 << 20) ? (size_t)(m->end - a) : 1 << 20;
				struct iovec lo = {buf, n}, re = {(void *)(uintptr_t)a, n};
				if (process_vm_readv(l->pid, &lo, 1, &re, 1, 0) != (ssize_t)n)
					break;
				for (size_t k = 0; k + 1 < n; k++)
					if (buf[k] == 0x0f && buf[k + 1] == 0x05) {
						*ret = a + k;
						found = true;
						break;
					}
				a += n - 1;
				if (n < 2)
					break;
			}
		}
	}
	free(buf);
	return found;
}

/* The registers that resume what the thread was doing, given to it at the
 * exit of the injected system call: when it had been stopped inside a
 * system call that the kernel would restart (no signal handler ran: it
 * was our interrupt), the restart is done here, as
 * arch/x86/kernel/signal.c does it. */
static struct user_regs_struct resume_regs(const struct user_regs_struct *r)
{
	struct user_regs_struct out = *r;
	if ((int64_t)r->orig_rax >= 0) {
		int64_t rax = (int64_t)r->rax;
		if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
		    rax == -ERESTARTNOHAND) {
			out.rax = r->orig_rax;
			out.rip -= 2;
			out.orig_rax = (unsigned long long)-1;
		} else if (rax == -ERESTART_RESTARTBLOCK) {
			out.rax = SYS_restart_syscall;
			out.rip -= 2;
			out.orig_rax = (unsigned long long)-1;
		}
	}
	return out;
}

/* Makes thread t run system call nr(a[0], a[1], a[2]) from the `syscall`
 * instruction at insn, and puts its registers back; *ret: what the call
 * returned (a negative errno), *child (may be NULL): the pid of a child
 * the call made, stopped and traced, else 0. */
static struct hs_error *inject_syscall(struct live *l, struct thread *t,
				       uint64_t insn, long nr, const uint64_t a[3],
				       int64_t *ret, pid_t *child)
{
	*ret = -ENOSYS;
	if (child)
		*child = 0;
	if (ptrace(PTRACE_SETOPTIONS, t->tid, 0,
		   PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE) != 0)
		return hs_error_errno(errno, "ptrace(PTRACE_SETOPTIONS) of thread %d",
				      (int)t->tid);
	struct user_regs_struct r = t->regs;
	r.rip = insn;
	r.rax = (unsigned long long)nr;
	r.orig_rax = (unsigned long long)-1;    /* no restart on the way out */
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = r.r8 = r.r9 = 0;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) != 0)
		return hs_error_errno(errno, "ptrace(PTRACE_SETREGS) of thread %d",
				      (int)t->tid);
	bool entered = false;
	pid_t cpid = 0;
	struct hs_error *err = NULL;
	for (int steps = 0; steps < 100; steps++) {
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0) != 0) {
			err = hs_error_errno(errno, "ptrace(PTRACE_SYSCALL) of thread %d",
					     (int)t->tid);
			break;
		}
		int st;
		pid_t w = wait_thread(l, t->tid, &st);
		if (w <= 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = true;
			t->stopped = false;
			return gone_error(l);
		}
		int sig = WSTOPSIG(st), ev = st >> 16;
		if (sig == (SIGTRAP | 0x80)) {
			if (!entered) {
				entered = true;
				continue;
			}
			/* the exit of the call */
			struct user_regs_struct after;
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &after) != 0) {
				err = stopped_error(l, t->tid, "PTRACE_GETREGS");
				break;
			}
			*ret = (int64_t)after.rax;
			break;
		}
		if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_FORK) {
			unsigned long msg = 0;
			if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) == 0)
				cpid = (pid_t)msg;
			continue;
		}
		if (ev == 0 && sig != SIGTRAP && !t->pending)
			t->pending = sig;   /* delivered at detach */
	}
	/* back to where it was */
	struct user_regs_struct back = resume_regs(&t->regs);
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &back) != 0 && !err)
		err = hs_error_errno(errno, "ptrace(PTRACE_SETREGS) of thread %d",
				     (int)t->tid);
	ptrace(PTRACE_SETOPTIONS, t->tid, 0, 0);
	if (child && cpid > 0)
		*child = cpid;
	return err;
}

/* Makes thread t run clone(CLONE_PARENT) and puts it back; *child is the
 * clone's pid, stopped and traced, or 0 with *why said. */
/* The clone is a child of the target's parent, never of the target; its
 * stack pointer points nowhere, so that if it ever ran (heapsift killed
 * before it could say PTRACE_O_EXITKILL), it would fault at once. */
static const uint64_t clone_args[3] = {CLONE_PARENT | SIGCHLD, 0x1000, 0};

static struct hs_error *inject_clone(struct live *l, struct thread *t,
				     uint64_t insn, pid_t *child, char *why,
				     size_t whylen)
{
	int64_t r;
	struct hs_error *err = inject_syscall(l, t, insn, SYS_clone, clone_args, &r, child);
	if (err || *child)
		return err;
	if (r < 0)
		snprintf(why, whylen, "clone in the target failed: %s", strerror((int)-r));
	else
		snprintf(why, whylen, "clone in the target reported no child");
	return NULL;
}

/* The clone's first stop (it comes once the clone is scheduled: waited
 * for after the target's threads were let go), then it dies with us. */
static struct hs_error *hold_clone(struct live *l)
{
	int st;
	pid_t w;
	while ((w = waitpid(l->clone, &st, __WALL)) < 0 && errno == EINTR)
		;
	if (w == l->clone && WIFSTOPPED(st) &&
	    ptrace(PTRACE_SETOPTIONS, l->clone, 0, PTRACE_O_EXITKILL) == 0)
		return NULL;
	if (w != l->clone || WIFSTOPPED(st))
		return hs_error_create(HS_ERR_IO, "the clone of process %d could not be traced",
				       (int)l->pid);
	l->clone = 0;   /* gone already */
	return hs_error_create(HS_ERR_IO, "the clone of process %d died", (int)l->pid);
}

static void kill_clone(struct live *l)
{
	if (!l->clone)
		return;
	kill(l->clone, SIGKILL);
	for (;;) {
		int st;
		pid_t w = waitpid(l->clone, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			break;
	}
	l->clone = 0;
}

/* ---- notes ------------------------------------------------------------ */

struct notebuf {
	struct hs_core_note_out *notes;
	size_t n, cap;
	void **owned;
	size_t nowned;
};

static struct hs_error *add_note(struct notebuf *nb, const char *name,
				 uint32_t type, void *desc, size_t size,
				 bool owned)
{
	if (nb->n == nb->cap) {
		size_t cap = nb->cap ? nb->cap * 2 : 16;
		struct hs_core_note_out *nn = hs_realloc(nb->notes, cap * sizeof(*nn));
		void **no = hs_realloc(nb->owned, cap * sizeof(*no));
		if (nn)
			nb->notes = nn;
		if (no)
			nb->owned = no;
		if (!nn || !no) {
			if (owned)
				free(desc);
			return &hs_error_nomem;
		}
		nb->cap = cap;
	}
	nb->notes[nb->n++] = (struct hs_core_note_out){name, type, desc, size};
	if (owned)
		nb->owned[nb->nowned++] = desc;
	return NULL;
}

struct procinfo {
	int ppid, pgrp, sid, uid, gid;
	char state;
	char comm[17];
	char psargs[81];
};

static struct hs_error *read_procinfo(pid_t pid, struct procinfo *pi)
{
	char path[64], *text;
	size_t len;
	memset(pi, 0, sizeof(*pi));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	struct hs_error *err = read_file(path, &text, NULL);
	if (err)
		return err;
	char *open = strchr(text, '('), *close = strrchr(text, ')');
	if (open && close && close > open) {
		size_t n = (size_t)(close - open - 1);
		memcpy(pi->comm, open + 1, n < 16 ? n : 16);
		sscanf(close + 1, " %c %d %d %d", &pi->state, &pi->ppid, &pi->pgrp,
		       &pi->sid);
	}
	free(text);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(err = read_file(path, &text, NULL))) {
		const char *u = status_field(text, "Uid"), *g = status_field(text, "Gid");
		if (u)
			pi->uid = (int)strtol(u, NULL, 10);
		if (g)
			pi->gid = (int)strtol(g, NULL, 10);
		free(text);
	} else {
		return err;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (!(err = read_file(path, &text, &len))) {
		size_t n = len < 80 ? len : 80;
		for (size_t i = 0; i < n; i++)
			pi->psargs[i] = text[i] ? text[i] : ' ';
		while (n && pi->psargs[n - 1] == ' ')
			pi->psargs[--n] = 0;
		free(text);
	}
	hs_error_destroy(err);
	return NULL;
}

static struct hs_error *thread_notes(struct notebuf *nb, const struct live *l,
				     const struct thread *t,
				     const struct procinfo *pi)
{
	struct elf_prstatus *ps = hs_calloc(1, sizeof(*ps));
	if (!ps)
		return &hs_error_nomem;
	ps->pr_pid = t->tid;
	ps->pr_ppid = pi->ppid;
	ps->pr_pgrp = pi->pgrp;
	ps->pr_sid = pi->sid;
	memcpy(&ps->pr_reg, &t->regs, sizeof(ps->pr_reg));
	ps->pr_fpvalid = t->have_fp;
	(void)l;
	struct hs_error *err = add_note(nb, "CORE", NT_PRSTATUS, ps, sizeof(*ps), true);
	if (!err && t->have_fp)
		err = add_note(nb, "CORE", NT_PRFPREG, (void *)&t->fp, sizeof(t->fp), false);
	if (!err && t->xstate_len)
		err = add_note(nb, "LINUX", NT_X86_XSTATE, t->xstate, t->xstate_len, false);
	return err;
}

/* NT_FILE: the file-backed mappings. */
static struct hs_error *file_note(struct notebuf *nb, const struct live *l)
{
	size_t count = 0, strings = 0;
	for (size_t i = 0; i < l->nmaps; i++)
		if (l->maps[i].inode && l->maps[i].path[0] == '/') {
			count++;
			strings += strlen(l->maps[i].path) + 1;
		}
	size_t size = 16 + count * 24 + strings;
	uint8_t *d = hs_malloc(size);
	if (!d)
		return &hs_error_nomem;
	uint64_t head[2] = {count, PAGE};
	memcpy(d, head, 16);
	uint8_t *e = d + 16, *s = d + 16 + count * 24;
	for (size_t i = 0; i < l->nmaps; i++) {
		const struct mapping *m = &l->maps[i];
		if (!m->inode || m->path[0] != '/')
			continue;
		uint64_t v[3] = {m->start, m->end, m->offset / PAGE};
		memcpy(e, v, 24);
		e += 24;
		size_t n = strlen(m->path) + 1;
		memcpy(s, m->path, n);
		s += n;
	}
	return add_note(nb, "CORE", NT_FILE, d, size, true);
}

/* HS_NT_FDS from /proc/PID/fd. */
static struct hs_error *fd_note(struct notebuf *nb, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return NULL;   /* not ours to list: the note is left out */
	size_t cap = 4096, len = 4;
	uint8_t *d = hs_malloc(cap);
	uint32_t count = 0;
	struct dirent *e;
	while (d && (e = readdir(dir))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char link[PATH_MAX + 1], lp[320];
		snprintf(lp, sizeof(lp), "%s/%s", path, e->d_name);
		ssize_t n = readlink(lp, link, PATH_MAX);
		if (n < 0)
			continue;
		size_t need = 8 + (((size_t)n + 3) & ~(size_t)3);
		if (len + need > cap) {
			cap = (len + need) * 2;
			uint8_t *nd = hs_realloc(d, cap);
			if (!nd)
				free(d);
			d = nd;
			if (!d)
				break;
		}
		int32_t fd = (int32_t)strtol(e->d_name, NULL, 10);
		uint32_t l32 = (uint32_t)n;
		memcpy(d + len, &fd, 4);
		memcpy(d + len + 4, &l32, 4);
		memcpy(d + len + 8, link, (size_t)n);
		memset(d + len + 8 + n, 0, need - 8 - (size_t)n);
		len += need;
		count++;
	}
	closedir(dir);
	if (!d)
		return &hs_error_nomem;
	memcpy(d, &count, 4);
	return add_note(nb, HS_NOTE_NAME, HS_NT_FDS, d, len, true);
}

/* ---- what is dumped --------------------------------------------------- */

static bool skipped(const struct mapping *m)
{
	return !strcmp(m->path, "[vsyscall]") || !strncmp(m->path, "[vvar", 5);
}

/* How many bytes of mapping m the core holds. */
static uint64_t dump_size(struct live *l, const struct mapping *m)
{
	uint64_t size = m->end - m->start;
	if (m->perms[0] != 'r' || m->dontdump)
		return 0;
	if (!strcmp(m->path, "[vdso]"))
		return size;
	bool anon = !m->inode || m->path[0] == '[' || !m->path[0];
	if (m->perms[3] == 's')   /* shared: anonymous or shmem only */
		return anon || !strncmp(m->path, "/SYSV", 5) ||
		       !strncmp(m->path, "/memfd:", 7) || !strncmp(m->path, "/dev/zero", 9) ?
		       size : 0;
	if (anon || m->perms[1] == 'w' || m->anon_kb)
		return size;
	/* an unwritten file mapping: the ELF header page, for the build-id */
	if (m->offset == 0) {
		uint8_t magic[4];
		read_mem(l, m->start, magic, 4);
		if (!memcmp(magic, ELFMAG, SELFMAG))
			return PAGE;
	}
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- write-tracked mode ----------------------------------------------- */

/* Linux 6.7's PAGEMAP_SCAN (linux/fs.h) and userfaultfd flags, for older
 * headers: the kernel's ABI, under names of our own. */
struct hs_pm_region {
	uint64_t start, end, categories;
};

struct hs_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define HS_PAGEMAP_SCAN _IOWR('f', 16, struct hs_pm_scan_arg)
enum {
	HS_PAGE_IS_WPALLOWED = 1 << 0,
	HS_PAGE_IS_WRITTEN = 1 << 1,
	HS_PAGE_IS_FILE = 1 << 2,
	HS_PAGE_IS_PRESENT = 1 << 3,
	HS_PAGE_IS_SWAPPED = 1 << 4,
	HS_PM_SCAN_WP_MATCHING = 1 << 0,
	HS_UFFD_USER_MODE_ONLY = 1,
	HS_UFFD_FEATURE_WP_UNPOPULATED = 1 << 13,
	HS_UFFD_FEATURE_WP_ASYNC = 1 << 15,
	/* a round of copying again while the target runs is worth it while
	 * more than this was written during the round before */
	RECOPY_BYTES = 8 << 20,
	RECOPY_ROUNDS = 3,
	/* unregistering holds the target's memory map while the kernel
	 * lifts the write protection of the range's pages, and a thread of
	 * the target that faults meanwhile waits: 16-18 ms for 64 MiB on a
	 * virtual machine with shadow page tables, 0.3-2 ms for 2 MiB */
	UNREGISTER_SLICE = 2 << 20,
};

static const uint64_t uffd_args[3] = {O_CLOEXEC | O_NONBLOCK | HS_UFFD_USER_MODE_ONLY, 0, 0};

/* Whether this kernel tracks writes for us: asynchronous userfaultfd
 * write protection and PAGEMAP_SCAN (Linux 6.7), tried on ourselves. */
static bool track_supported(struct live *l, char *why, size_t whylen)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | HS_UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		snprintf(why, whylen, "no userfaultfd (%s)", strerror(errno));
		return false;
	}
	struct uffdio_api api = {.api = UFFD_API};
	bool ok = ioctl(fd, UFFDIO_API, &api) == 0 &&
		  (api.features & HS_UFFD_FEATURE_WP_ASYNC);
	close(fd);
	if (!ok) {
		snprintf(why, whylen, "the kernel cannot track writes (asynchronous userfaultfd write protection: Linux 6.7)");
		return false;
	}
	l->uffd_features = api.features;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	struct hs_pm_region r;
	uint64_t page = (uintptr_t)&r & ~(uint64_t)(PAGE - 1);
	struct hs_pm_scan_arg a = {.size = sizeof(a), .start = page, .end = page + PAGE,
				   .vec = (uintptr_t)&r, .vec_len = 1,
				   .category_anyof_mask = HS_PAGE_IS_PRESENT,
				   .return_mask = HS_PAGE_IS_PRESENT};
	ok = pm >= 0 && ioctl(pm, HS_PAGEMAP_SCAN, &a) >= 0;
	if (pm >= 0)
		close(pm);
	if (!ok)
		snprintf(why, whylen, "the kernel has no PAGEMAP_SCAN (Linux 6.7)");
	return ok;
}

/* Makes thread t (stopped) create a userfaultfd, takes it (pidfd_getfd)
 * into l->uffd and closes the target's; on a refusal *why says it. */
static struct hs_error *track_open(struct live *l, struct thread *t, uint64_t insn,
				   char *why, size_t whylen)
{
	int64_t fd;
	struct hs_error *err = inject_syscall(l, t, insn, SYS_userfaultfd, uffd_args, &fd, NULL);
	if (err)
		return err;
	if (fd < 0 || fd > INT32_MAX) {
		snprintf(why, whylen, "userfaultfd in the target failed: %s",
			 strerror(fd < 0 ? (int)-fd : EBADF));
		return NULL;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, l->pid, 0), e = errno;
	int uf = pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0) : -1;
	if (pidfd >= 0) {
		e = errno;
		close(pidfd);
	}
	const uint64_t c[3] = {(uint64_t)fd, 0, 0};
	int64_t r;
	err = inject_syscall(l, t, insn, SYS_close, c, &r, NULL);
	if (uf < 0) {
		snprintf(why, whylen, "cannot take the target's userfaultfd: %s", strerror(e));
		return err;
	}
	if (err) {
		close(uf);
		return err;
	}
	l->uffd = uf;
	return NULL;
}

/* Each region [start, end) of the target's pages in [start, end) that
 * PAGEMAP_SCAN matches (flags, inverted, mask, anyof as the kernel takes
 * them), to fn; false when the kernel refused. */
static bool pm_scan(struct live *l, uint64_t start, uint64_t end, uint64_t flags,
		    uint64_t inverted, uint64_t mask, uint64_t anyof,
		    bool (*fn)(struct live *l, uint64_t start, uint64_t end, void *arg),
		    void *arg)
{
	struct hs_pm_region vec[256];
	while (start < end) {
		struct hs_pm_scan_arg a = {
			.size = sizeof(a), .flags = flags, .start = start, .end = end,
			.vec = (uintptr_t)vec, .vec_len = 256,
			.category_inverted = inverted, .category_mask = mask,
			.category_anyof_mask = anyof,
			.return_mask = HS_PAGE_IS_WPALLOWED | HS_PAGE_IS_WRITTEN |
				       HS_PAGE_IS_PRESENT | HS_PAGE_IS_SWAPPED,
		};
		long n = ioctl(l->pagemap, HS_PAGEMAP_SCAN, &a);
		if (n < 0)
			return false;
		for (long i = 0; i < n; i++) {
			uint64_t s = vec[i].start < start ? start : vec[i].start;
			uint64_t e = vec[i].end > end ? end : vec[i].end;
			if (fn && s < e && !fn(l, s, e, arg))
				return false;
		}
		if (a.walk_end <= start || a.walk_end > end)
			return a.walk_end == end;
		start = a.walk_end;
	}
	return true;
}

static bool interrupted(const struct live *l, struct hs_error **err)
{
	sigset_t pend;
	if (sigpending(&pend) == 0)
		for (int s = 1; s < NSIG; s++)
			if (sigismember(&l->blocked, s) && sigismember(&pend, s)) {
				*err = hs_error_create(HS_ERR_IO, "interrupted by signal %d", s);
				return true;
			}
	return false;
}

/* The target's bytes [start, end) into the copy's file at off. */
static struct hs_error *copy_out(struct live *l, uint64_t start, uint64_t end,
				 uint64_t off, uint8_t *buf)
{
	struct hs_error *err = NULL;
	for (uint64_t a = start; a < end && !err; a += 1 << 20) {
		size_t n = end - a < (1 << 20) ? (size_t)(end - a) : 1 << 20;
		if (interrupted(l, &err))
			break;
		read_mem(l, a, buf, n);
		if (pwrite(l->pre_fd, buf, n, (off_t)(off + (a - start))) != (ssize_t)n)
			err = hs_error_errno(errno, "writing the snapshot's temporary copy");
	}
	return err;
}

/* Of n sorted, disjoint spans, the one holding address a, or the first
 * one above it (n when none). */
static size_t span_at(const struct span *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Of [start, end), the parts that have a place in the copy's file,
 * copied (again) there through l->scratch, *bytes counting them. */
static struct hs_error *copy_again(struct live *l, uint64_t start, uint64_t end,
				   uint64_t *bytes)
{
	if (!l->scratch && !(l->scratch = hs_malloc(1 << 20)))
		return &hs_error_nomem;
	for (size_t i = span_at(l->pre, l->npre, start); i < l->npre && l->pre[i].start < end; i++) {
		const struct span *p = &l->pre[i];
		uint64_t s = start > p->start ? start : p->start;
		uint64_t e = end < p->end ? end : p->end;
		if (s >= e)
			continue;
		struct hs_error *err = copy_out(l, s, e, p->off + (s - p->start), l->scratch);
		if (err)
			return err;
		*bytes += e - s;
	}
	return NULL;
}

struct recopy {
	struct hs_error *err;
	uint64_t bytes;
};

/* A region written since it was copied, while the target runs. */
static bool recopy_region(struct live *l, uint64_t start, uint64_t end, void *arg)
{
	struct recopy *rc = arg;
	return !(rc->err = copy_again(l, start, end, &rc->bytes));
}

/* With the threads running again: every mapping registered for write
 * protection and protected, then copied to a temporary file, then what
 * was written meanwhile copied again, a few rounds while that is much. */
static struct hs_error *track_copy(struct live *l, const char *out_path)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = HS_UFFD_FEATURE_WP_ASYNC |
			    (l->uffd_features & HS_UFFD_FEATURE_WP_UNPOPULATED),
	};
	if (ioctl(l->uffd, UFFDIO_API, &api) != 0)
		return hs_error_errno(errno, "userfaultfd of process %d", (int)l->pid);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)l->pid);
	if ((l->pagemap = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return hs_error_errno(errno, "%s", path);
	/* the copy: beside the output (the same file system), unnamed */
	struct hs_error *err = hs_outfile_scratch(out_path, &l->pre_fd);
	if (err)
		return err;
	struct mapping *maps;
	size_t nmaps;
	err = read_maps(l->pid, true, &maps, &nmaps);
	if (err)
		return err;
	if (!(l->pre = hs_calloc(nmaps + 1, sizeof(*l->pre)))) {
		free_maps(maps, nmaps);
		return &hs_error_nomem;
	}
	uint64_t off = 0, lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < nmaps; i++) {
		const struct mapping *m = &maps[i];
		uint64_t size = skipped(m) ? 0 : dump_size(l, m);
		if (!size)
			continue;
		struct uffdio_register reg = {
			.range = {m->start, m->end - m->start},
			.mode = UFFDIO_REGISTER_MODE_WP,
		};
		/* one that cannot be (a special mapping, another
		 * userfaultfd's) is read again at the stop */
		(void)ioctl(l->uffd, UFFDIO_REGISTER, &reg);
		l->pre[l->npre++] = (struct span){m->start, m->start + size, off, NULL};
		off += size;
		lo = m->start < lo ? m->start : lo;
		hi = m->end > hi ? m->end : hi;
	}
	l->maps0 = maps;
	l->nmaps0 = nmaps;
	if (!l->npre)
		return NULL;
	/* protected before the first byte is read: a write after that
	 * shows, one before it is in the copy */
	if (!pm_scan(l, lo, hi, HS_PM_SCAN_WP_MATCHING, 0, HS_PAGE_IS_WPALLOWED, 0,
		     NULL, NULL))
		return hs_error_errno(errno, "PAGEMAP_SCAN of process %d", (int)l->pid);
	struct recopy rc = {0};
	uint64_t copied = 0;
	for (size_t i = 0; i < l->npre && !err; i++)
		err = copy_again(l, l->pre[i].start, l->pre[i].end, &copied);
	for (int round = 0; round < RECOPY_ROUNDS && !err; round++) {
		rc.bytes = 0;
		/* written, or not protected: copied again and protected */
		if (!pm_scan(l, lo, hi, HS_PM_SCAN_WP_MATCHING, HS_PAGE_IS_WPALLOWED, 0,
			     HS_PAGE_IS_WPALLOWED | HS_PAGE_IS_WRITTEN, recopy_region, &rc))
			err = rc.err ? rc.err :
				hs_error_errno(errno, "PAGEMAP_SCAN of process %d", (int)l->pid);
		l->recopied += rc.bytes;
		if (rc.bytes < RECOPY_BYTES)
			break;
	}
	return err;
}

static bool late_add(struct live *l, uint64_t start, uint64_t end, bool zero)
{
	struct span *v = l->nlate < l->caplate ? l->late :
		hs_vector_grow(l->late, l->nlate, &l->caplate, 1, sizeof(*v));
	if (!v)
		return false;
	l->late = v;
	uint8_t *data = NULL;
	if (!zero) {
		if (!(data = hs_malloc(end - start)))
			return false;
		read_mem(l, start, data, end - start);
		l->late_bytes += end - start;
	}
	l->late[l->nlate++] = (struct span){start, end, 0, data};
	return true;
}

struct late_ctx {
	bool zero;              /* pages gone: zeros */
	struct hs_error *err;
};

/* A region the stop's scan found (within a copied range).  Written since
 * its copy: read again into the copy's file, at its place, so that a
 * process that wrote much costs no memory here. */
static bool late_region(struct live *l, uint64_t start, uint64_t end, void *arg)
{
	struct late_ctx *c = arg;
	if (c->zero)
		c->err = late_add(l, start, end, true) ? NULL : &hs_error_nomem;
	else
		c->err = copy_again(l, start, end, &l->late_bytes);
	return !c->err;
}

static int cmp_late(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* With the threads stopped: what load [start, end) of mapping m needs
 * besides the copy: the parts without one, and in the parts with one,
 * the pages written since or not protected (read now) and the pages no
 * longer there (zeros in an anonymous mapping, read again in a file's). */
static struct hs_error *track_late(struct live *l, const struct mapping *m,
				   uint64_t start, uint64_t end)
{
	bool anon = !m->inode || m->path[0] == '[' || !m->path[0];
	uint64_t at = start;
	for (size_t i = span_at(l->pre, l->npre, start); i < l->npre && l->pre[i].start < end; i++) {
		uint64_t s = at > l->pre[i].start ? at : l->pre[i].start;
		uint64_t e = end < l->pre[i].end ? end : l->pre[i].end;
		if (at < s && !late_add(l, at, s, false))
			return &hs_error_nomem;
		struct late_ctx written = {false, NULL}, gone = {anon, NULL};
		if (s < e &&
		    (!pm_scan(l, s, e, 0, HS_PAGE_IS_WPALLOWED, 0,
			      HS_PAGE_IS_WPALLOWED | HS_PAGE_IS_WRITTEN, late_region, &written) ||
		     !pm_scan(l, s, e, 0, HS_PAGE_IS_PRESENT | HS_PAGE_IS_SWAPPED,
			      HS_PAGE_IS_WPALLOWED | HS_PAGE_IS_PRESENT | HS_PAGE_IS_SWAPPED,
			      0, late_region, &gone)))
			return written.err ? written.err : gone.err ? gone.err :
				hs_error_errno(errno, "PAGEMAP_SCAN of process %d", (int)l->pid);
		at = e > at ? e : at;
	}
	if (at < end && !late_add(l, at, end, false))
		return &hs_error_nomem;
	return NULL;
}

static bool any_region(struct live *l, uint64_t start, uint64_t end, void *arg)
{
	(void)l;
	(void)start;
	(void)end;
	*(bool *)arg = true;
	return true;
}

/* With the threads stopped, the mappings were read from maps, not smaps
 * (whose counts walk every page table: 50 ms for 2 GiB): what decides
 * the dump is found otherwise.  A file mapping that is not writable is
 * dumped whole when it holds a private copy of some page (an anonymous
 * page present: PAGEMAP_SCAN, over its own pages only); a mapping keeps
 * the "do not dump" mark it had when the copy began. */
static struct hs_error *track_maps(struct live *l)
{
	for (size_t i = 0; i < l->nmaps; i++) {
		struct mapping *m = &l->maps[i];
		for (size_t k = 0; k < l->nmaps0; k++)
			if (l->maps0[k].start == m->start && l->maps0[k].inode == m->inode)
				m->dontdump = l->maps0[k].dontdump;
		bool anon = !m->inode || m->path[0] == '[' || !m->path[0];
		if (anon || m->perms[1] == 'w' || m->perms[3] == 's' || skipped(m))
			continue;
		bool some = false;
		if (!pm_scan(l, m->start, m->end, 0, HS_PAGE_IS_FILE,
			     HS_PAGE_IS_FILE | HS_PAGE_IS_PRESENT, 0, any_region, &some))
			return hs_error_errno(errno, "PAGEMAP_SCAN of process %d", (int)l->pid);
		m->anon_kb = some;
	}
	return NULL;
}

/* Load bytes [addr, addr + len) from the copy and what was read at the
 * stop. */
static struct hs_error *track_fill(struct live *l, uint64_t addr, uint8_t *buf,
				   size_t len)
{
	uint64_t end = addr + len;
	memset(buf, 0, len);
	for (size_t i = span_at(l->pre, l->npre, addr); i < l->npre && l->pre[i].start < end; i++) {
		const struct span *p = &l->pre[i];
		uint64_t s = addr > p->start ? addr : p->start;
		uint64_t e = end < p->end ? end : p->end;
		if (s < e && pread(l->pre_fd, buf + (s - addr), e - s,
				   (off_t)(p->off + (s - p->start))) != (ssize_t)(e - s))
			return hs_error_errno(errno, "reading the snapshot's temporary copy");
	}
	for (size_t i = span_at(l->late, l->nlate, addr);
	     i < l->nlate && l->late[i].start < end; i++) {
		const struct span *t = &l->late[i];
		uint64_t s = addr > t->start ? addr : t->start;
		uint64_t e = end < t->end ? end : t->end;
		if (t->data)
			memcpy(buf + (s - addr), t->data + (s - t->start), e - s);
		else
			memset(buf + (s - addr), 0, e - s);
	}
	return NULL;
}

static void track_close(struct live *l)
{
	/* closing the userfaultfd would unregister every range at once,
	 * holding the target's memory map lock while it lifts the write
	 * protection of every page: a slice at a time instead (UNREGISTER_SLICE) */
	for (size_t i = 0; l->uffd >= 0 && i < l->nmaps0; i++)
		for (uint64_t a = l->maps0[i].start; a < l->maps0[i].end; a += UNREGISTER_SLICE) {
			uint64_t n = l->maps0[i].end - a;
			struct uffdio_range r = {a, n < UNREGISTER_SLICE ? n : UNREGISTER_SLICE};
			if (ioctl(l->uffd, UFFDIO_UNREGISTER, &r) != 0)
				break;  /* unmapped since: nothing left to lift */
		}
	if (l->uffd >= 0)
		close(l->uffd);
	if (l->pagemap >= 0)
		close(l->pagemap);
	if (l->pre_fd >= 0)
		close(l->pre_fd);
	l->uffd = l->pagemap = l->pre_fd = -1;
	for (size_t i = 0; i < l->nlate; i++)
		free(l->late[i].data);
	free(l->late);
	free(l->pre);
	free(l->scratch);
	l->scratch = NULL;
	free_maps(l->maps0, l->nmaps0);
	l->maps0 = NULL;
	l->nmaps0 = 0;
	l->late = NULL;
	l->pre = NULL;
	l->nlate = l->npre = 0;
}

static struct hs_error *fill(void *arg, size_t index, uint64_t offset,
			     void *buf, size_t len)
{
	struct live *l = arg;
	struct hs_error *err;
	if (interrupted(l, &err))
		return err;
	if (l->opts->test_sleep_ms && !l->tracked && !l->bytes)
		sleep_ms(l->opts->test_sleep_ms);   /* the output file exists */
	l->bytes += len;
	if (l->tracked)
		return track_fill(l, l->loads[index].vaddr + offset, buf, len);
	read_mem(l, l->loads[index].vaddr + offset, buf, len);
	return NULL;
}

static struct hs_error *filled(void *arg)
{
	struct live *l = arg;
	if (l->clone || l->tracked)
		return NULL;
	/* no-fork: a target killed while stopped reads as zeros; the
	 * threads can go before the file is synced */
	if (!process_alive(l->pid))
		return gone_error(l);
	detach_all(l);
	return NULL;
}

/* ---- checks ----------------------------------------------------------- */

static struct hs_error *check_target(pid_t pid, const struct hs_live_options *o)
{
	if (pid <= 0)
		return hs_error_create(HS_ERR_USAGE, "PID must be a positive number");
	if (pid == getpid())
		return hs_error_create(HS_ERR_USAGE, "heapsift cannot take a snapshot of itself");
	char path[64], *status;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	struct hs_error *err = read_file(path, &status, NULL);
	if (err) {
		bool none = err->code == HS_ERR_IO && strstr(err->message, "No such file");
		hs_error_destroy(err);
		return none ? hs_error_create(HS_ERR_IO, "no process %d", (int)pid) :
			hs_error_create(HS_ERR_IO, "process %d: cannot read %s", (int)pid, path);
	}
	const char *f;
	int tracer = (f = status_field(status, "TracerPid")) ? (int)strtol(f, NULL, 10) : 0;
	int uid = (f = status_field(status, "Uid")) ? (int)strtol(f, NULL, 10) : -1;
	const char *state = status_field(status, "State");
	while (state && (*state == ' ' || *state == '\t'))
		state++;
	bool zombie = state && (*state == 'Z' || *state == 'X');
	bool kthread = false;
	if ((f = status_field(status, "Kthread")))
		kthread = strtol(f, NULL, 10) != 0;
	free(status);
	if (zombie)
		return hs_error_create(HS_ERR_IO, "process %d has exited (a zombie)", (int)pid);
	if (kthread)
		return hs_error_create(HS_ERR_USAGE, "process %d is a kernel thread", (int)pid);
	if (tracer)
		return hs_error_create(HS_ERR_IO,
				       "process %d is already traced by process %d (a debugger?): only one tracer at a time",
				       (int)pid, tracer);
	if (geteuid() != 0 && uid != (int)geteuid())
		return hs_error_create(HS_ERR_IO,
				       "process %d belongs to uid %d, not to you (uid %d): run as that user or root",
				       (int)pid, uid, (int)geteuid());
	char *scope;
	/* no such file: a kernel without yama */
	struct hs_error *serr = read_file(o->ptrace_scope_path ? o->ptrace_scope_path :
					  "/proc/sys/kernel/yama/ptrace_scope", &scope, NULL);
	bool have_scope = !serr;
	hs_error_destroy(serr);
	if (have_scope) {
		int v = (int)strtol(scope, NULL, 10);
		free(scope);
		if (v >= 3)
			return hs_error_create(HS_ERR_IO,
					       "ptrace is disabled on this system (kernel.yama.ptrace_scope = %d)",
					       v);
		if (v == 2 && geteuid() != 0)
			return hs_error_create(HS_ERR_IO,
					       "kernel.yama.ptrace_scope = 2: only root (CAP_SYS_PTRACE) may attach to process %d",
					       (int)pid);
		if (v == 1 && geteuid() != 0) {
			/* only a descendant of ours */
			pid_t p = pid;
			for (int depth = 0; p > 1 && p != getpid() && depth < 4096; depth++) {
				struct procinfo pi;
				if (read_procinfo(p, &pi))
					break;
				p = pi.ppid;
			}
			if (p != getpid())
				return hs_error_create(HS_ERR_IO,
						       "kernel.yama.ptrace_scope = 1: process %d is not a child of heapsift (run as root, or lower the scope)",
						       (int)pid);
		}
	}
	return NULL;
}

/* ---- the snapshot ----------------------------------------------------- */

/* Every thread stopped and its registers read, the one that stands for
 * the process first. */
static struct hs_error *stop_and_read(struct live *l)
{
	struct hs_error *err = stop_all(l);
	if (err)
		return err;
	qsort(l->threads, l->nthreads, sizeof(*l->threads), cmp_tid);
	for (size_t i = 0; i < l->nthreads; i++)
		if (l->threads[i].tid == l->pid && i) {
			struct thread t = l->threads[i];
			memmove(l->threads + 1, l->threads, i * sizeof(t));
			l->threads[0] = t;
		}
	if (l->opts->test_regs_sleep_ms)
		sleep_ms(l->opts->test_regs_sleep_ms);
	for (size_t i = 0; i < l->nthreads && !err; i++)
		if (!l->threads[i].gone)
			err = read_regs(l, &l->threads[i]);
	return err;
}

/* After a detach: the threads as if never seen, for another stop. */
static void forget_threads(struct live *l)
{
	for (size_t i = 0; i < l->nthreads; i++)
		free(l->threads[i].xstate);
	free(l->threads);
	l->threads = NULL;
	l->nthreads = 0;
	l->detached = false;
	l->t_first = l->t_last = 0;
}

static struct hs_error *snapshot(struct live *l, const char *out_path,
				 struct hs_live_result *res)
{
	const struct hs_live_options *o = l->opts;
	struct procinfo pi;
	char path[64], *auxv = NULL, *status = NULL;
	size_t auxv_len = 0;
	struct hs_error *err = read_procinfo(l->pid, &pi);
	if (err)
		return hs_error_destroy(err), hs_error_create(HS_ERR_IO, "no process %d", (int)l->pid);
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)l->pid);
	if ((err = read_file(path, &auxv, &auxv_len)))
		return err;
	bool fork_mode = !o->no_fork, track = !o->no_fork && !o->fork;
	bool filtered = false, clone_ok = true;
	uint64_t insn = 0;
	if (fork_mode) {
		/* what would make the clone unsafe or impossible, known
		 * before anything stops */
		snprintf(path, sizeof(path), "/proc/%d/status", (int)l->pid);
		const char *f;
		if ((err = read_file(path, &status, NULL)))
			goto out;
		long mode = (f = status_field(status, "Seccomp")) ? strtol(f, NULL, 10) : 0;
		filtered = mode == 2;
		if (mode == 1) {
			snprintf(res->fallback, sizeof(res->fallback),
				 "the target runs in seccomp's strict mode");
			fork_mode = false;
		} else if (filtered && geteuid() != 0) {
			snprintf(res->fallback, sizeof(res->fallback),
				 "the target runs under a seccomp filter, which only root can read (it might forbid or punish the calls heapsift would make it run)");
			fork_mode = false;
		}
		free(status);
		if (fork_mode && pi.state == 'T') {
			snprintf(res->fallback, sizeof(res->fallback), "the target is stopped");
			fork_mode = false;
		}
		if (fork_mode && (err = read_maps(l->pid, false, &l->maps, &l->nmaps)))
			goto out;
		if (fork_mode && !find_syscall_insn(l, &insn)) {
			snprintf(res->fallback, sizeof(res->fallback),
				 "no syscall instruction found in the target's code");
			fork_mode = false;
		}
		free_maps(l->maps, l->nmaps);
		l->maps = NULL;
		l->nmaps = 0;
	}

	if (track && fork_mode &&
	    !track_supported(l, res->track_why, sizeof(res->track_why)))
		track = false;
	if ((err = stop_and_read(l)))
		goto out;

	if (fork_mode) {
		/* a thread stopped in user code first: its registers go back
		 * as they were; one stopped in a system call has it restarted
		 * (resume_regs) */
		struct thread *inj = NULL;
		for (int pass = 0; pass < 2 && !inj; pass++) {
			for (size_t i = 0; i < l->nthreads && !inj; i++) {
				struct thread *t = &l->threads[i];
				bool in_call = (int64_t)t->regs.orig_rax >= 0;
				if (!t->gone && t->event == PTRACE_EVENT_STOP && t->sig == SIGTRAP &&
				    in_call == (pass == (o->test_inject_in_syscall ? 0 : 1)))
					inj = t;
			}
		}
		/* under a seccomp filter: only calls the filter lets run */
		if (inj && filtered) {
			bool uf = false;
			struct hs_error *e = NULL;
			if (track)
				e = seccomp_allows(inj->tid, insn + 2, SYS_userfaultfd, uffd_args, &uf);
			if (!e)
				e = seccomp_allows(inj->tid, insn + 2, SYS_clone, clone_args, &clone_ok);
			if (e) {
				snprintf(res->fallback, sizeof(res->fallback), "%s", e->message);
				hs_error_destroy(e);
				inj = NULL;
			} else if (track && !uf) {
				track = false;
				snprintf(res->track_why, sizeof(res->track_why),
					 "the target's seccomp filter does not let it call userfaultfd");
			}
		}
		pid_t child = 0;
		if (inj && track) {
			if ((err = track_open(l, inj, insn, res->track_why,
					      sizeof(res->track_why))))
				goto out;
			if (l->uffd >= 0) {
				/* the threads run while the copy is made, then
				 * stop again */
				detach_all(l);
				l->pause1_ms = l->t_last - l->t_first;
				forget_threads(l);
				if ((err = track_copy(l, out_path)))
					goto out;
				if (o->test_sleep_ms)
					sleep_ms(o->test_sleep_ms);
				if ((err = stop_and_read(l)))
					goto out;
				/* a process that ran execve meanwhile has another
				 * memory than the one copied: its auxiliary vector
				 * (entry, random bytes' address) says so */
				char *auxv2 = NULL;
				size_t auxv2_len = 0;
				snprintf(path, sizeof(path), "/proc/%d/auxv", (int)l->pid);
				if ((err = read_file(path, &auxv2, &auxv2_len)))
					goto out;
				bool same = auxv2_len == auxv_len && !memcmp(auxv2, auxv, auxv_len);
				free(auxv2);
				if (!same) {
					err = hs_error_create(HS_ERR_IO, "process %d ran another program (execve) during the snapshot",
							      (int)l->pid);
					goto out;
				}
				l->tracked = res->tracked = true;
			}
		}
		if (l->tracked || res->fallback[0])
			;
		else if (!inj)
			snprintf(res->fallback, sizeof(res->fallback),
				 "no thread stopped where it can run a system call");
		else if (!clone_ok)
			snprintf(res->fallback, sizeof(res->fallback),
				 "the target's seccomp filter does not let it call clone");
		else if ((err = inject_clone(l, inj, insn, &child, res->fallback,
					     sizeof(res->fallback))))
			goto out;
		if (child) {
			l->clone = l->src = child;
			detach_all(l);
			res->forked = true;
			if ((err = hold_clone(l)))
				goto out;
		}
	}
	if (!l->clone && !process_alive(l->pid)) {
		err = gone_error(l);
		goto out;
	}

	/* the memory's source, as it was at the stop */
	if ((err = read_maps(l->src, !l->tracked, &l->maps, &l->nmaps)) ||
	    (l->tracked && (err = track_maps(l))))
		goto out;
	struct hs_core_load_out *loads = hs_calloc(l->nmaps + 1, sizeof(*loads));
	size_t *load_map = hs_calloc(l->nmaps + 1, sizeof(*load_map));
	struct notebuf nb = {0};
	size_t nloads = 0;
	if (!loads || !load_map) {
		err = &hs_error_nomem;
		goto out_loads;
	}
	for (size_t i = 0; i < l->nmaps; i++) {
		const struct mapping *m = &l->maps[i];
		if (skipped(m))
			continue;
		loads[nloads] = (struct hs_core_load_out){
			.vaddr = m->start, .memsz = m->end - m->start,
			.filesz = dump_size(l, m),
			.flags = (m->perms[0] == 'r' ? HS_SEG_R : 0) |
				 (m->perms[1] == 'w' ? HS_SEG_W : 0) |
				 (m->perms[2] == 'x' ? HS_SEG_X : 0),
		};
		load_map[nloads++] = i;
	}
	l->loads = loads;
	l->load_map = load_map;
	for (size_t i = 0; i < l->nthreads && !err; i++)
		if (!l->threads[i].gone)
			err = thread_notes(&nb, l, &l->threads[i], &pi);
	struct elf_prpsinfo ps = {0};
	ps.pr_sname = pi.state;
	ps.pr_state = pi.state == 'R' ? 0 : pi.state == 'S' ? 1 : pi.state == 'D' ? 2 :
		      pi.state == 'T' ? 3 : 4;
	ps.pr_uid = (unsigned)pi.uid;
	ps.pr_gid = (unsigned)pi.gid;
	ps.pr_pid = l->pid;
	ps.pr_ppid = pi.ppid;
	ps.pr_pgrp = pi.pgrp;
	ps.pr_sid = pi.sid;
	memcpy(ps.pr_fname, pi.comm, sizeof(ps.pr_fname));
	memcpy(ps.pr_psargs, pi.psargs, sizeof(ps.pr_psargs));
	if (!err)
		err = add_note(&nb, "CORE", NT_PRPSINFO, &ps, sizeof(ps), false);
	if (!err)
		err = add_note(&nb, "CORE", NT_AUXV, auxv, auxv_len, false);
	if (!err)
		err = file_note(&nb, l);
	if (!err)
		err = fd_note(&nb, l->src);
	/* tracked: what the copy lacks is read now, then the threads go */
	for (size_t i = 0; l->tracked && i < nloads && !err; i++)
		if (loads[i].filesz)
			err = track_late(l, &l->maps[load_map[i]], loads[i].vaddr,
					 loads[i].vaddr + loads[i].filesz);
	if (l->tracked && !err) {
		if (l->nlate)   /* none at all: late is NULL */
			qsort(l->late, l->nlate, sizeof(*l->late), cmp_late);
		detach_all(l);
		res->late_bytes = l->late_bytes;
		res->recopied = l->recopied;
		res->pause1_ms = l->pause1_ms;
	}
	if (!err)
		err = hs_core_write_new(out_path, nb.notes, nb.n, loads, nloads, fill,
					filled, l);
	res->nloads = nloads;
	for (size_t i = 0; i < l->nthreads; i++)
		res->nthreads += !l->threads[i].gone;
out_loads:
	for (size_t i = 0; i < nb.nowned; i++)
		free(nb.owned[i]);
	free(nb.notes);
	free(nb.owned);
	free(loads);
	free(load_map);
	l->loads = NULL;
	l->load_map = NULL;
out:
	free(auxv);
	return err;
}

struct hs_error *hs_live_snapshot(pid_t pid, const char *out_path,
				  const struct hs_live_options *opts,
				  struct hs_live_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct hs_error *err = check_target(pid, opts);
	if (err)
		return err;
	struct live l = {.pid = pid, .src = pid, .memfd = -1, .opts = opts,
			 .uffd = -1, .pagemap = -1, .pre_fd = -1};
	sigemptyset(&l.blocked);
	sigaddset(&l.blocked, SIGINT);
	sigaddset(&l.blocked, SIGTERM);
	sigaddset(&l.blocked, SIGHUP);
	sigaddset(&l.blocked, SIGQUIT);
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, &l.blocked, &old);
	err = snapshot(&l, out_path, ret);
	detach_all(&l);
	kill_clone(&l);
	track_close(&l);
	if (err && err->code == HS_ERR_IO && !strncmp(err->message, "ptrace(PTRACE_SEIZE)", 20) &&
	    strstr(err->message, "Operation not permitted"))
		err = hs_error_wrap(err, "not allowed to trace process %d (another tracer, a different user, or yama's ptrace_scope)",
				    (int)pid);
	ret->pause_ms = l.t_first ? l.t_last - l.t_first : 0;
	if (ret->tracked) {
		ret->pause2_ms = ret->pause_ms;
		if (ret->pause1_ms > ret->pause_ms)
			ret->pause_ms = ret->pause1_ms;
	}
	ret->bytes = l.bytes;
	if (l.memfd >= 0)
		close(l.memfd);
	for (size_t i = 0; i < l.nthreads; i++)
		free(l.threads[i].xstate);
	free(l.threads);
	free_maps(l.maps, l.nmaps);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
