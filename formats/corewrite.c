/* Writing a copy of a core with words zeroed: see formats/corewrite.h. */
#include "formats/corewrite.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/alloc.h"
#include "src/sort.h"
#include <unistd.h>

#include "src/outfile.h"

static struct hs_error *write_all(int fd, const uint8_t *p, size_t n,
				  const char *path)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return hs_error_errno(errno, "%s", path);
		}
		p += w;
		n -= (size_t)w;
	}
	return NULL;
}

enum { CHUNK = 1 << 20 };

static int cmp_seg_offset(const void *a, const void *b)
{
	const struct hs_core_segment *x = *(const struct hs_core_segment *const *)a;
	const struct hs_core_segment *y = *(const struct hs_core_segment *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The file's bytes [from, seg end) for a segment whose words may be zeroed,
 * written through buf.  A target word starts at offset + 8k of the file
 * (vaddr is page aligned); words of a hostile core's overlapping segments
 * that were written already are not written again. */
static struct hs_error *write_masked_seg(int fd, const char *name,
					 const struct hs_core *core,
					 const struct hs_core_segment *s,
					 uint64_t from,
					 const struct hs_core_writer *w,
					 uint8_t *buf, uint64_t *zeroed)
{
	uint64_t end = s->offset + s->avail, words_end = s->offset + (s->avail & ~7ull);
	uint64_t pos = from;
	while (pos < end) {
		uint64_t n = end - pos < CHUNK ? end - pos : CHUNK;
		memcpy(buf, core->data + pos, n);
		/* the first whole word at or after pos */
		uint64_t k = s->offset + ((pos - s->offset + 7) & ~7ull);
		for (; k + 8 <= pos + n && k < words_end; k += 8) {
			uint64_t v;
			memcpy(&v, buf + (k - pos), 8);
			if (!v || w->keep(w->arg, k, v))
				continue;
			memset(buf + (k - pos), 0, 8);
			(*zeroed)++;
		}
		/* a tail shorter than a word */
		if (pos + n == end && end > words_end && words_end >= pos &&
		    !w->keep(w->arg, words_end, 0))
			memset(buf + (words_end - pos), 0, end - words_end);
		struct hs_error *err = write_all(fd, buf, n, name);
		if (err)
			return err;
		pos += n;
	}
	return NULL;
}

struct hs_error *hs_core_write_masked(const struct hs_core *core,
				      const char *out_path,
				      const struct hs_core_writer *w,
				      uint64_t *zeroed_words)
{
	struct hs_outfile o;
	struct hs_error *err = hs_outfile_open(&o, out_path);
	if (err)
		return err;
	int fd = o.fd;
	const char *name = o.tmp ? o.tmp : "standard output";
	/* the segments to mask, in file order; the file is written in one
	 * pass (standard output cannot be patched afterwards) */
	const struct hs_core_segment **segs = hs_malloc((core->nsegs + 1) * sizeof(*segs));
	uint8_t *buf = hs_malloc(CHUNK);
	if (!segs || !buf)
		err = &hs_error_nomem;
	size_t n = 0;
	for (size_t i = 0; !err && i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if (s->avail && w->zero_segment(w->arg, s))
			segs[n++] = s;
	}
	if (!err)
		hs_sort(segs, n, sizeof(*segs), cmp_seg_offset);
	uint64_t zeroed = 0, pos = 0;
	for (size_t i = 0; !err && i < n; i++) {
		const struct hs_core_segment *s = segs[i];
		uint64_t end = s->offset + s->avail;
		if (end <= pos)
			continue;
		if (s->offset > pos) {
			err = write_all(fd, core->data + pos, s->offset - pos, name);
			pos = s->offset;
		}
		if (!err)
			err = write_masked_seg(fd, name, core, s, pos, w, buf, &zeroed);
		pos = end;
	}
	if (!err && pos < core->size)
		err = write_all(fd, core->data + pos, core->size - pos, name);
	free(segs);
	free(buf);
	if (!err && o.tmp && fsync(fd) != 0)
		err = hs_error_errno(errno, "%s: fsync", name);
	if (close(fd) != 0 && !err)
		err = hs_error_errno(errno, "%s: close", name);
	err = hs_outfile_finish(&o, err);
	if (!err && zeroed_words)
		*zeroed_words = zeroed;
	return err;
}

static size_t note_size(const struct hs_core_note_out *n)
{
	return sizeof(Elf64_Nhdr) + ((strlen(n->name) + 1 + 3) & ~(size_t)3) +
	       ((n->size + 3) & ~(size_t)3);
}

static const uint8_t zeros[4096];

struct hs_error *hs_core_write_new(const char *out_path,
				   const struct hs_core_note_out *notes,
				   size_t nnotes,
				   const struct hs_core_load_out *loads,
				   size_t nloads, hs_core_fill_fn *fill,
				   struct hs_error *(*filled)(void *arg),
				   void *arg)
{
	if (nloads + 1 >= PN_XNUM)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "%zu mappings: more than an ELF header counts",
				       nloads);
	struct hs_outfile o;
	struct hs_error *err = hs_outfile_open(&o, out_path);
	if (err)
		return err;
	int fd = o.fd;
	const char *name = o.tmp ? o.tmp : "standard output";
	size_t nphdr = nloads + 1;
	uint64_t notes_off = sizeof(Elf64_Ehdr) + nphdr * sizeof(Elf64_Phdr);
	uint64_t notes_len = 0;
	for (size_t i = 0; i < nnotes; i++)
		notes_len += note_size(&notes[i]);
	uint64_t data_off = (notes_off + notes_len + 4095) & ~4095ull;
	size_t hdr_len = (size_t)(notes_off + notes_len);
	uint8_t *hdr = hs_calloc(1, hdr_len);
	uint8_t *buf = hs_malloc(CHUNK);
	if (!hdr || !buf) {
		err = &hs_error_nomem;
		goto out;
	}
	Elf64_Ehdr *eh = (Elf64_Ehdr *)hdr;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (uint16_t)nphdr;
	Elf64_Phdr *ph = (Elf64_Phdr *)(hdr + sizeof(Elf64_Ehdr));
	ph[0] = (Elf64_Phdr){.p_type = PT_NOTE, .p_offset = notes_off,
			     .p_filesz = notes_len, .p_align = 4};
	uint64_t off = data_off;
	for (size_t i = 0; i < nloads; i++) {
		ph[i + 1] = (Elf64_Phdr){
			.p_type = PT_LOAD, .p_flags = loads[i].flags,
			.p_offset = off, .p_vaddr = loads[i].vaddr,
			.p_memsz = loads[i].memsz, .p_filesz = loads[i].filesz,
			.p_align = 4096,
		};
		off += (loads[i].filesz + 4095) & ~4095ull;
	}
	uint8_t *p = hdr + notes_off;
	for (size_t i = 0; i < nnotes; i++) {
		size_t namesz = strlen(notes[i].name) + 1;
		Elf64_Nhdr nh = {.n_namesz = (Elf64_Word)namesz,
				 .n_descsz = (Elf64_Word)notes[i].size,
				 .n_type = notes[i].type};
		memcpy(p, &nh, sizeof(nh));
		p += sizeof(nh);
		memcpy(p, notes[i].name, namesz);
		p += (namesz + 3) & ~(size_t)3;
		if (notes[i].size)
			memcpy(p, notes[i].desc, notes[i].size);
		p += (notes[i].size + 3) & ~(size_t)3;
	}
	err = write_all(fd, hdr, hdr_len, name);
	if (!err && data_off > hdr_len)
		err = write_all(fd, zeros, data_off - hdr_len, name);
	for (size_t i = 0; !err && i < nloads; i++) {
		uint64_t n = loads[i].filesz;
		for (uint64_t at = 0; !err && at < n;) {
			size_t len = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
			err = fill(arg, i, at, buf, len);
			if (!err)
				err = write_all(fd, buf, len, name);
			at += len;
		}
		uint64_t pad = ((n + 4095) & ~4095ull) - n;
		if (!err && pad)
			err = write_all(fd, zeros, (size_t)pad, name);
	}
	if (!err && filled)
		err = filled(arg);
	if (!err && o.tmp && fsync(fd) != 0)
		err = hs_error_errno(errno, "%s: fsync", name);
out:
	free(hdr);
	free(buf);
	if (close(fd) != 0 && !err)
		err = hs_error_errno(errno, "%s: close", name);
	return hs_outfile_finish(&o, err);
}
