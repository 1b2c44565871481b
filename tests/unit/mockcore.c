#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/mockcore.h"

static void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "mockcore: out of memory\n");
		abort();
	}
	return p;
}

uint8_t *mock_segment(struct mock_core *m, uint64_t vaddr, size_t size,
		      uint32_t flags)
{
	if (m->nsegs == MOCK_MAX_SEGS) {
		fprintf(stderr, "mockcore: more than %d segments\n", MOCK_MAX_SEGS);
		abort();
	}
	struct mock_seg *s = &m->segs[m->nsegs++];
	s->vaddr = vaddr;
	s->size = size;
	s->flags = flags;
	s->data = must(calloc(1, size ? size : 1));
	return s->data;
}

uint8_t *mock_bytes(struct mock_core *m, uint64_t addr, size_t n)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		struct mock_seg *s = &m->segs[i];
		if (addr >= s->vaddr && addr - s->vaddr <= s->size &&
		    n <= s->size - (addr - s->vaddr))
			return s->data + (addr - s->vaddr);
	}
	fprintf(stderr, "mockcore: %#llx+%zu is in no segment\n",
		(unsigned long long)addr, n);
	abort();
}

void mock_write(struct mock_core *m, uint64_t addr, const void *data, size_t n)
{
	memcpy(mock_bytes(m, addr, n), data, n);
}

void mock_put64(struct mock_core *m, uint64_t addr, uint64_t value)
{
	mock_write(m, addr, &value, 8);
}

uint64_t *mock_thread(struct mock_core *m, int32_t tid)
{
	if (m->nthreads == MOCK_MAX_THREADS) {
		fprintf(stderr, "mockcore: more than %d threads\n", MOCK_MAX_THREADS);
		abort();
	}
	struct mock_thread *t = &m->threads[m->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return t->regs;
}

void mock_put(struct mock_buf *o, size_t off, const void *data, size_t n)
{
	if (off + n > o->len) {
		o->p = must(realloc(o->p, off + n));
		memset(o->p + o->len, 0, off + n - o->len);
		o->len = off + n;
	}
	memcpy(o->p + off, data, n);
}

size_t mock_note(struct mock_buf *o, size_t off, uint32_t type,
		 const void *desc, uint32_t descsz)
{
	uint32_t hdr[3] = {5, descsz, type};  /* namesz counts the NUL */
	mock_put(o, off, hdr, sizeof(hdr));
	mock_put(o, off + 12, "CORE\0\0\0", 8);
	mock_put(o, off + 20, desc, descsz);
	return off + 20 + ((descsz + 3) & ~3u);
}

void mock_ehdr(Elf64_Ehdr *eh, unsigned phnum)
{
	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (Elf64_Half)phnum;
}

uint8_t *mock_build(const struct mock_core *m, size_t *size)
{
	struct mock_buf o = {0};
	size_t nph = 1 + m->nsegs;
	Elf64_Ehdr eh;
	mock_ehdr(&eh, (unsigned)nph);
	mock_put(&o, 0, &eh, sizeof(eh));

	size_t notes = sizeof(eh) + nph * sizeof(Elf64_Phdr), end = notes;
	for (size_t i = 0; i < m->nthreads; i++) {
		uint8_t pr[MOCK_PRSTATUS_SIZE] = {0};
		memcpy(pr + MOCK_PRSTATUS_PID, &m->threads[i].tid, 4);
		memcpy(pr + MOCK_PRSTATUS_REGS, m->threads[i].regs, 8 * HS_NREGS);
		end = mock_note(&o, end, NT_PRSTATUS, pr, sizeof(pr));
	}
	uint64_t auxv[4] = {AT_PAGESZ, 4096, AT_NULL, 0};
	end = mock_note(&o, end, NT_AUXV, auxv, sizeof(auxv));

	Elf64_Phdr ph = {.p_type = PT_NOTE, .p_offset = notes,
			 .p_filesz = end - notes, .p_align = 4};
	mock_put(&o, sizeof(eh), &ph, sizeof(ph));
	size_t off = (end + 4095) & ~(size_t)4095;
	for (size_t i = 0; i < m->nsegs; i++) {
		const struct mock_seg *s = &m->segs[i];
		Elf64_Phdr p = {
			.p_type = PT_LOAD, .p_flags = s->flags, .p_offset = off,
			.p_vaddr = s->vaddr, .p_filesz = s->size,
			.p_memsz = s->size, .p_align = 4096,
		};
		mock_put(&o, sizeof(eh) + (1 + i) * sizeof(Elf64_Phdr), &p, sizeof(p));
		mock_put(&o, off, s->data, s->size);
		off = (off + s->size + 4095) & ~(size_t)4095;
	}
	*size = o.len;
	return o.p;
}

void mock_free(struct mock_core *m)
{
	for (size_t i = 0; i < m->nsegs; i++)
		free(m->segs[i].data);
	m->nsegs = 0;
	m->nthreads = 0;
}
