/* src/seccomp.h: filters of every instruction seccomp takes, each run on
 * calls it must allow and calls it must refuse, and programs that cannot
 * be run. */
#include <errno.h>
#include <linux/audit.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "src/seccomp.h"
#include "tests/unit/check.h"

#define N(f) (sizeof(f) / sizeof((f)[0]))
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(k) BPF_STMT(BPF_RET | BPF_K, (k))
#define NR offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define ARG0 offsetof(struct seccomp_data, args[0])
#define ARG0HI (offsetof(struct seccomp_data, args[0]) + 4)

static uint32_t run(const struct sock_filter *f, size_t n, long nr, uint64_t arg0,
		    bool *ok)
{
	struct seccomp_data d = {.nr = (int)nr, .arch = AUDIT_ARCH_X86_64,
				 .instruction_pointer = 0x401000, .args = {arg0}};
	uint32_t r = 0xdead;
	*ok = hs_seccomp_run(f, n, &d, &r);
	return r;
}

static uint32_t action(const struct sock_filter *f, size_t n, long nr, uint64_t arg0)
{
	bool ok;
	uint32_t r = run(f, n, nr, arg0, &ok);
	CHECKF(ok, "program of %zu instructions did not run (nr %ld)", n, nr);
	return r;
}

static bool runs(const struct sock_filter *f, size_t n)
{
	bool ok;
	run(f, n, SYS_read, 0, &ok);
	return ok;
}

int main(void)
{
	/* the shape libseccomp and Docker write: the arch, then the number */
	struct sock_filter docker[] = {
		LD(ARCH),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD(NR),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		RET(SECCOMP_RET_ERRNO | EPERM),
		/* clone: no namespace flags (the low word of args[0]) */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
		LD(ARG0),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x7e020000, 1, 0),
		RET(SECCOMP_RET_ALLOW),
		RET(SECCOMP_RET_ERRNO | EPERM),
	};
	CHECK(action(docker, N(docker), SYS_userfaultfd, 0) == (SECCOMP_RET_ERRNO | EPERM));
	CHECK(action(docker, N(docker), SYS_clone, 0x8000 | 17) == SECCOMP_RET_ALLOW);
	CHECK(action(docker, N(docker), SYS_clone, 0x20000000) == (SECCOMP_RET_ERRNO | EPERM));
	CHECK(action(docker, N(docker), SYS_read, 0) == (SECCOMP_RET_ERRNO | EPERM));

	/* JGT, JGE, X, TAX/TXA, scratch memory, JA, RET A */
	struct sock_filter mix[] = {
		LD(NR),
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LDX | BPF_IMM, 100),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 2),   /* nr > 100 */
		BPF_STMT(BPF_LD | BPF_IMM, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_STMT(BPF_LD | BPF_MEM, 3),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 50, 0, 1),  /* nr >= 50 */
		BPF_STMT(BPF_JMP | BPF_JA, 2),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		RET(SECCOMP_RET_LOG),
		BPF_STMT(BPF_LDX | BPF_MEM, 3),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, SECCOMP_RET_ERRNO),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	CHECK(action(mix, N(mix), 200, 0) == SECCOMP_RET_TRAP);
	CHECK(action(mix, N(mix), 60, 0) == (SECCOMP_RET_ERRNO | 60));  /* JA, then X */
	CHECK(action(mix, N(mix), 7, 0) == SECCOMP_RET_LOG);

	/* every ALU operation, on K and on X */
	struct {
		uint16_t op;
		uint32_t k, want;
	} alu[] = {
		{BPF_ADD, 5, 105}, {BPF_SUB, 5, 95}, {BPF_MUL, 3, 300}, {BPF_DIV, 7, 14},
		{BPF_MOD, 7, 2}, {BPF_AND, 0x6c, 0x64}, {BPF_OR, 3, 103}, {BPF_XOR, 0xff, 0x9b},
		{BPF_LSH, 2, 400}, {BPF_RSH, 2, 25}, {BPF_NEG, 0, (uint32_t)-100},
	};
	for (size_t i = 0; i < N(alu); i++) {
		struct sock_filter k[] = {
			BPF_STMT(BPF_LD | BPF_IMM, 100),
			BPF_STMT(BPF_ALU | alu[i].op | BPF_K, alu[i].k),
			BPF_STMT(BPF_RET | BPF_A, 0),
		};
		struct sock_filter x[] = {
			BPF_STMT(BPF_LDX | BPF_IMM, alu[i].k),
			BPF_STMT(BPF_LD | BPF_IMM, 100),
			BPF_STMT(BPF_ALU | alu[i].op | BPF_X, 0),
			BPF_STMT(BPF_RET | BPF_A, 0),
		};
		CHECKF(action(k, N(k), SYS_read, 0) == alu[i].want, "ALU op %#x with K", alu[i].op);
		CHECKF(action(x, N(x), SYS_read, 0) == alu[i].want, "ALU op %#x with X", alu[i].op);
	}
	/* the length, and the high word of an argument */
	struct sock_filter len[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, sizeof(struct seccomp_data), 0, 3),
		LD(ARG0HI),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 0),
		RET(SECCOMP_RET_ALLOW),
		RET(SECCOMP_RET_KILL_THREAD),
	};
	CHECK(action(len, N(len), SYS_read, 1ull << 32) == SECCOMP_RET_KILL_THREAD);
	CHECK(action(len, N(len), SYS_read, 1) == SECCOMP_RET_ALLOW);

	/* what cannot be run */
	struct sock_filter off_end[] = {LD(NR)};
	struct sock_filter unaligned[] = {LD(2), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter past[] = {LD(sizeof(struct seccomp_data)), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter jump_out[] = {BPF_STMT(BPF_JMP | BPF_JA, 5), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter cond_out[] = {
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 9, 9), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter div0[] = {
		BPF_STMT(BPF_LD | BPF_IMM, 1), BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
		RET(SECCOMP_RET_ALLOW)};
	struct sock_filter mem_out[] = {BPF_STMT(BPF_ST, 16), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter byte_load[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), RET(SECCOMP_RET_ALLOW)};
	struct sock_filter ind_load[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_IND, 0), RET(SECCOMP_RET_ALLOW)};
	CHECK(!runs(off_end, N(off_end)));
	CHECK(!runs(unaligned, N(unaligned)));
	CHECK(!runs(past, N(past)));
	CHECK(!runs(jump_out, N(jump_out)));
	CHECK(!runs(cond_out, N(cond_out)));
	CHECK(!runs(div0, N(div0)));
	CHECK(!runs(mem_out, N(mem_out)));
	CHECK(!runs(byte_load, N(byte_load)));
	CHECK(!runs(ind_load, N(ind_load)));
	CHECK(!runs(docker, 0));
	return check_finish();
}
