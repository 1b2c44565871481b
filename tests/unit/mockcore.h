/* A synthetic-core builder for unit tests: segments, threads and their
 * registers, put together in memory as an x86-64 ELF core that the real
 * reader (formats/elfcore) opens with hs_core_open_memory or
 * hs_snapshot_open_memory.  What every test knows by construction is then
 * the ground truth: where each block is, and who points to it.
 *
 *   struct mock_core m = {0};
 *   mock_segment(&m, 0x10000000, 0x4000, PF_R | PF_W);
 *   mock_put64(&m, 0x10000008, 0x10000100);
 *   mock_thread(&m, 42)[HS_REG_RSP] = 0x7fff0100;
 *   size_t n;
 *   uint8_t *core = mock_build(&m, &n);
 *
 * Out of memory or a write outside every segment aborts the test program
 * (a test's own mistake, not something to recover from). */
#ifndef HS_MOCKCORE_H
#define HS_MOCKCORE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/elfcore.h"

enum { MOCK_MAX_SEGS = 16, MOCK_MAX_THREADS = 8 };

struct mock_core {
	struct mock_seg {
		uint64_t vaddr;
		size_t size;
		uint32_t flags;         /* PF_R, PF_W, PF_X */
		uint8_t *data;          /* all of it is in the file */
	} segs[MOCK_MAX_SEGS];
	size_t nsegs;
	struct mock_thread {
		int32_t tid;
		uint64_t regs[HS_NREGS];
	} threads[MOCK_MAX_THREADS];
	size_t nthreads;
};

/* A zero-filled segment; returns its bytes, to fill. */
uint8_t *mock_segment(struct mock_core *m, uint64_t vaddr, size_t size,
		      uint32_t flags);
/* Writes at a target address inside a segment. */
void mock_write(struct mock_core *m, uint64_t addr, const void *data, size_t n);
void mock_put64(struct mock_core *m, uint64_t addr, uint64_t value);
/* A thread (NT_PRSTATUS); returns its registers (zero), to set. */
uint64_t *mock_thread(struct mock_core *m, int32_t tid);
/* The core file's bytes (the caller frees them); notes: each thread's
 * NT_PRSTATUS, then NT_AUXV with a 4 KiB page. */
uint8_t *mock_build(const struct mock_core *m, size_t *size);
void mock_free(struct mock_core *m);

#endif
