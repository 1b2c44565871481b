/* A classic BPF seccomp filter, run: see src/seccomp.h. */
#include "src/seccomp.h"

#include <string.h>

bool hs_seccomp_run(const struct sock_filter *f, size_t n,
		    const struct seccomp_data *d, uint32_t *ret)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	const uint8_t *data = (const uint8_t *)d;
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *in = &f[pc];
		uint32_t k = in->k, src = BPF_SRC(in->code) == BPF_X ? x : k;
		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;
			if (in->code == (BPF_LD | BPF_W | BPF_ABS)) {
				if (k % 4 || k > sizeof(*d) - 4)
					return false;
				memcpy(&v, data + k, 4);
			} else if (BPF_MODE(in->code) == BPF_LEN && BPF_SIZE(in->code) == BPF_W) {
				v = sizeof(*d);
			} else if (BPF_MODE(in->code) == BPF_IMM) {
				v = k;
			} else if (BPF_MODE(in->code) == BPF_MEM && k < BPF_MEMWORDS) {
				v = mem[k];
			} else {
				return false;
			}
			if (BPF_CLASS(in->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return false;
			mem[k] = BPF_CLASS(in->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(in->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV: if (!src) return false; a /= src; break;
			case BPF_MOD: if (!src) return false; a %= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return false;
			}
			break;
		case BPF_JMP: {
			size_t to;
			if (BPF_OP(in->code) == BPF_JA) {
				to = pc + 1 + (size_t)k;
			} else {
				bool c;
				switch (BPF_OP(in->code)) {
				case BPF_JEQ: c = a == src; break;
				case BPF_JGT: c = a > src; break;
				case BPF_JGE: c = a >= src; break;
				case BPF_JSET: c = (a & src) != 0; break;
				default: return false;
				}
				to = pc + 1 + (c ? in->jt : in->jf);
			}
			if (to >= n)
				return false;
			pc = to - 1;
			break;
		}
		case BPF_RET:
			if (BPF_RVAL(in->code) == BPF_K)
				*ret = k;
			else if (BPF_RVAL(in->code) == BPF_A)
				*ret = a;
			else
				return false;
			return true;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				x = a;
			else if (BPF_MISCOP(in->code) == BPF_TXA)
				a = x;
			else
				return false;
			break;
		default:
			return false;
		}
	}
	return false;   /* ran off the end: the kernel refuses such programs */
}
