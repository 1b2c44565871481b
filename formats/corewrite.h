/* Writes cores: a copy of a core with some words of its segments zeroed
 * (redact), or a new core from notes and memory (snapshot).
 *
 * The copy is written under a temporary name beside the output
 * (OUT.tmp-XXXXXX), synced and renamed over OUT only when complete: a
 * failure leaves nothing under OUT.  The input is only read.
 */
#ifndef HS_COREWRITE_H
#define HS_COREWRITE_H

#include <stdint.h>

#include "formats/elfcore.h"
#include "src/error.h"

/* keep(arg, file_offset) says whether the 8-byte file word at that offset
 * (within some PT_LOAD's file data) stays; the others are zeroed.  Only the
 * segments for which zero_segment(arg, seg) is true are touched. */
struct hs_core_writer {
	bool (*zero_segment)(void *arg, const struct hs_core_segment *seg);
	bool (*keep)(void *arg, uint64_t file_offset, uint64_t value);
	void *arg;
};

struct hs_error *hs_core_write_masked(const struct hs_core *core,
				      const char *out_path,
				      const struct hs_core_writer *w,
				      uint64_t *zeroed_words);

/* A new core (ET_CORE, x86-64), laid out as the kernel lays one out:
 *
 *   Elf64_Ehdr | Phdr: PT_NOTE, PT_LOAD x nloads | notes | page-aligned
 *   segment bytes, in the order of loads
 *
 * Each note is {namesz, descsz, type, name\0 padded to 4, desc padded to
 * 4}.  A load's first filesz bytes are asked of fill(arg, index, offset
 * within the segment, buf, len) a chunk at a time (filesz may be 0: the
 * mapping is described, its bytes left out; memsz - filesz read as zeros).
 * fill's error stops the write and nothing is left under out_path.
 * filled(arg), when not NULL, is called once every byte was asked of fill
 * (before the file is synced); its error, too, leaves nothing behind. */
struct hs_core_note_out {
	const char *name;       /* "CORE", "LINUX", ... */
	uint32_t type;
	const void *desc;
	size_t size;
};

struct hs_core_load_out {
	uint64_t vaddr, memsz, filesz;
	uint32_t flags;         /* HS_SEG_* (= PF_*) */
};

typedef struct hs_error *hs_core_fill_fn(void *arg, size_t index,
					 uint64_t offset, void *buf,
					 size_t len);

struct hs_error *hs_core_write_new(const char *out_path,
				   const struct hs_core_note_out *notes,
				   size_t nnotes,
				   const struct hs_core_load_out *loads,
				   size_t nloads, hs_core_fill_fn *fill,
				   struct hs_error *(*filled)(void *arg),
				   void *arg);

#endif
