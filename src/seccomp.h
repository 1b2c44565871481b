/* A seccomp filter run as the kernel runs it, for `heapsift snapshot`:
 * before it makes a process under a filter call userfaultfd or clone, it
 * asks each of the process's filters (PTRACE_SECCOMP_GET_FILTER) what it
 * would do with that call.
 *
 * Classic BPF as seccomp takes it (the kernel's seccomp_check_filter):
 * 32-bit loads from struct seccomp_data (aligned, in bounds), the length,
 * immediates and the 16 scratch words; ALU operations and jumps on A
 * with K or X; TAX, TXA; RET of K or A.  Base layer: includes nothing of
 * heapsift's.
 */
#ifndef HS_SECCOMP_H
#define HS_SECCOMP_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value (SECCOMP_RET_* with its data) program f of n instructions
 * returns for d, in *ret; false for a program that cannot be run to a
 * RET: an instruction seccomp does not take, a load or scratch word out
 * of bounds, a division by zero, a jump past the end, or running off the
 * end (the kernel refuses the last two when the filter is installed). */
bool hs_seccomp_run(const struct sock_filter *f, size_t n,
		    const struct seccomp_data *d, uint32_t *ret);

#endif
