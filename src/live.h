/* A core of a live process, taken with a short pause (heapsift snapshot).
 *
 * Every thread is stopped with PTRACE_SEIZE + PTRACE_INTERRUPT (the list of
 * threads is read again until it no longer grows), its registers are read,
 * and then either
 *
 *  - tracked (default where the kernel has asynchronous userfaultfd write
 *    protection and PAGEMAP_SCAN, Linux 6.7): one thread (chosen as for
 *    fork) is made to run userfaultfd(), which heapsift takes with
 *    pidfd_getfd before the thread closes its own; the threads go; every
 *    dumped mapping is registered and write-protected, copied to an
 *    unnamed file while the process runs, the pages written meanwhile
 *    copied again (a few rounds); the threads are stopped again, their
 *    registers read, and what PAGEMAP_SCAN says was written since its
 *    copy (or is gone, or was mapped since) is read before they go again.
 *    The protection is lifted a slice at a time; closing the userfaultfd
 *    (heapsift killed included) lifts what is left.
 *  - no-fork: the memory is copied (process_vm_readv, /proc/PID/mem for
 *    what it cannot read) while the threads stay stopped, or
 *  - fork (default without tracking, or asked): one thread (one stopped in user code, else one
 *    stopped in a system call, which is then restarted) is made to run
 *    clone(CLONE_PARENT) from a `syscall` instruction of its own mappings
 *    (the vdso's first), its registers are put back, every thread is let
 *    go, and the memory is
 *    copied from the clone: a copy-on-write copy frozen at the stop, a
 *    child of the target's parent (never of the target), traced with
 *    PTRACE_O_EXITKILL and killed when done.
 *
 * The core is written as the kernel writes one (formats/corewrite): per
 * thread NT_PRSTATUS, NT_PRFPREG and NT_X86_XSTATE, then NT_PRPSINFO,
 * NT_AUXV, NT_FILE, and heapsift's descriptor table (HS_NT_FDS,
 * formats/elfcore.h).
 * What is dumped follows the kernel's default coredump_filter and gdb's
 * gcore: private and anonymous shared memory whole, file-backed private
 * mappings whole when written to (smaps' Anonymous), else the first page
 * of an ELF file (its headers and build-id), nothing of other file
 * mappings.
 *
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked while it runs: one that
 * comes stops the copy, every thread is let go, the clone killed, nothing
 * left under the output's name, and the signal is delivered when the mask
 * is restored.  If heapsift itself is killed, ptrace lets the threads run
 * on and kills the clone.
 */
#ifndef HS_LIVE_H
#define HS_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/error.h"

struct hs_live_options {
	bool no_fork;
	bool fork;              /* fork mode, not write-tracked */
	/* /proc/sys/kernel/yama/ptrace_scope, or the tests' stand-in */
	const char *ptrace_scope_path;
	/* tests only: milliseconds to sleep once the memory's source is
	 * ready and the output file is being written (fork: after the
	 * threads were let go; no-fork: while they are stopped), or in
	 * tracked mode once the copy is made, the target running with its
	 * writes tracked */
	unsigned test_sleep_ms;
	/* tests only: the clone is run by a thread stopped inside a system
	 * call rather than one stopped in user code */
	bool test_inject_in_syscall;
	/* tests only: sleep this long once the threads are seized and asked to
	 * stop, before their stops are waited for */
	unsigned test_stop_sleep_ms;
	/* tests only: sleep this long once every thread is stopped, before
	 * their registers are read */
	unsigned test_regs_sleep_ms;
};

struct hs_live_result {
	double pause_ms;        /* the longest stop: first interrupt to last
				 * detach */
	bool forked;            /* fork mode was asked and used */
	char fallback[160];     /* fork mode asked but not used: why */
	bool tracked;           /* write-tracked mode was used */
	char track_why[160];    /* write tracking tried and not used: why */
	double pause1_ms;       /* tracked: the stop that starts the tracking */
	double pause2_ms;       /* tracked: the stop at the snapshot */
	uint64_t recopied;      /* tracked: bytes copied again while it ran */
	uint64_t late_bytes;    /* tracked: bytes read with the threads stopped */
	size_t nthreads, nloads;
	uint64_t bytes;         /* memory bytes written */
};

/* Writes a core of process pid at out_path (atomically: src/outfile). */
struct hs_error *hs_live_snapshot(pid_t pid, const char *out_path,
				  const struct hs_live_options *opts,
				  struct hs_live_result *ret);

#endif
