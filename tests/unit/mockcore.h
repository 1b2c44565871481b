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

#include <elf.h>
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
/* The n bytes at a target address inside a segment, to read or change. */
uint8_t *mock_bytes(struct mock_core *m, uint64_t addr, size_t n);
/* A thread (NT_PRSTATUS); returns its registers (zero), to set. */
uint64_t *mock_thread(struct mock_core *m, int32_t tid);
/* The core file's bytes (the caller frees them); notes: each thread's
 * NT_PRSTATUS, then NT_AUXV with a 4 KiB page. */
uint8_t *mock_build(const struct mock_core *m, size_t *size);
void mock_free(struct mock_core *m);

/* The pieces, for tests that lay a core out by hand (a truncated one, a
 * segment partly in the file) and for the notes fuzzer: */
/* the ELF header of an x86-64 core whose phnum program headers follow it */
void mock_ehdr(Elf64_Ehdr *eh, unsigned phnum);
/* a file image that grows (zero-filled) as bytes are put anywhere in it */
struct mock_buf {
	uint8_t *p;
	size_t len;
};
void mock_put(struct mock_buf *b, size_t off, const void *data, size_t n);
/* a "CORE" note at off; returns where the next one goes */
size_t mock_note(struct mock_buf *b, size_t off, uint32_t type,
		 const void *desc, uint32_t descsz);
/* struct elf_prstatus on x86-64: its size, pr_pid and pr_reg (27 words) */
enum { MOCK_PRSTATUS_SIZE = 336, MOCK_PRSTATUS_PID = 32, MOCK_PRSTATUS_REGS = 112 };

#endif
