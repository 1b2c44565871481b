/* What callers of the core reader use, run over a core the fuzzer made:
 * reads (copying, quiet, zero-copy, traced) at every segment's edges and
 * across neighbours, file and auxv lookups, threads, process and signal
 * information.  Shared by fuzz_core and fuzz_notes. */
#ifndef HS_FZ_CORE_H
#define HS_FZ_CORE_H

#include <stdlib.h>
#include <string.h>

#include "formats/elfcore.h"

/* Values folded in here so the reads cannot be optimized away. */
static volatile uint64_t fz_core_sink;

static void fz_read_at(struct hs_core *core, struct hs_core_near *near,
		       uint64_t addr, size_t len)
{
	static uint8_t buf[4096];
	if (len > sizeof(buf))
		len = sizeof(buf);
	if (hs_core_read_quiet(core, addr, buf, len) && len)
		fz_core_sink += buf[0] + buf[len - 1];
	struct hs_error *err = hs_core_read(core, addr, buf, len);
	if (err)
		fz_core_sink += strlen(err->message);
	hs_error_destroy(err);
	const uint8_t *p = hs_core_ptr(core, addr, len);
	if (p && len)
		fz_core_sink += p[0] + p[len - 1];
	/* with the cursor the read before left: the same pointer */
	if (hs_core_ptr_near(core, near, addr, len) != p)
		abort();
	uint64_t v, w;
	bool got = hs_core_read_u64(core, addr, &v);
	if (got)
		fz_core_sink += v;
	if (hs_core_read_u64_near(core, near, addr, &w) != got || (got && w != v))
		abort();
	hs_core_touch(core, addr, len);
	const struct hs_core_segment *s = hs_core_find_segment(core, addr);
	if (s)
		fz_core_sink += s->flags + (uint64_t)s->file;
}

static void fz_exercise_core(struct hs_core *core)
{
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct hs_core_thread *t = &core->threads[i];
		fz_core_sink += (uint64_t)t->tid + (uint64_t)t->cursig;
		for (int r = 0; r < HS_NREGS; r++)
			fz_core_sink += t->regs[r];
	}
	if (core->process.valid)
		fz_core_sink += strlen(core->process.fname) +
				strlen(core->process.psargs) +
				(uint64_t)core->process.pid;
	if (core->siginfo.valid)
		fz_core_sink += core->siginfo.addr + (uint64_t)core->siginfo.signo;
	for (size_t i = 0; i < core->nfiles; i++) {
		const struct hs_core_file *f = &core->files[i];
		fz_core_sink += strlen(f->path) + f->offset;
		const struct hs_core_file *g = hs_core_find_file(core, f->start);
		if (g)
			fz_core_sink += g->start;
		if ((g = hs_core_find_file(core, f->end - 1)))
			fz_core_sink += g->end;
	}
	for (uint64_t type = 0; type < 64; type++) {
		uint64_t v;
		if (hs_core_auxv(core, type, &v))
			fz_core_sink += v;
	}
	fz_core_sink += core->page_size + core->truncated;

	/* traced reads: one bit per 8-byte word of the file, as redact uses */
	core->trace = calloc(core->size / 512 + 2, sizeof(uint64_t));
	static const size_t lens[] = {0, 1, 8, 16, 4096};
	struct hs_core_near near = {0};
	size_t nsegs = core->nsegs < 1024 ? core->nsegs : 1024;
	for (size_t i = 0; i < nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		const uint64_t at[] = {
			s->vaddr, s->vaddr - 1, s->vaddr + 1,
			s->vaddr + s->avail - 8, s->vaddr + s->avail - 1,
			s->vaddr + s->avail, s->vaddr + s->filesz - 1,
			s->vaddr + s->filesz, s->vaddr + s->memsz / 2,
			s->vaddr + s->memsz - 8, s->vaddr + s->memsz - 1,
			s->vaddr + s->memsz,
		};
		for (size_t a = 0; a < sizeof(at) / sizeof(at[0]); a++)
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
				fz_read_at(core, &near, at[a], lens[l]);
	}
	free(core->trace);
	core->trace = NULL;
	fz_read_at(core, &near, 0, 8);
	fz_read_at(core, &near, UINT64_MAX - 7, 8);
	fz_read_at(core, &near, UINT64_MAX, 16);
}

#endif
