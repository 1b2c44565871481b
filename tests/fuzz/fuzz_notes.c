/* fuzz_notes: the note parsers (NT_PRSTATUS, NT_PRPSINFO, NT_FILE, NT_AUXV,
 * NT_SIGINFO, and whatever else a core's PT_NOTE holds).
 *
 * Input: the payload of the core's one PT_NOTE segment, that is a sequence
 * of notes {u32 namesz, u32 descsz, u32 type, name, desc} (4-aligned).  The
 * harness puts it in a minimal valid x86-64 ET_CORE file, so the fuzzer
 * mutates notes, never ELF headers:
 *
 *   0    Elf64_Ehdr (e_phnum 2)
 *   64   PT_NOTE  -> the input, at 176
 *   120  PT_LOAD  -> 64 bytes of data at 0x400000 (memsz 0x2000: the rest
 *                    reads as zero), so NT_FILE entries can name it
 *   176  the input, then the segment data (8-aligned)
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/elfcore.h"
#include "tests/fuzz/fz_core.h"
#include "tests/unit/mockcore.h"

enum {
	NOTE_OFF = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr),
	LOAD_SIZE = 64,
	LOAD_VADDR = 0x400000,
	LOAD_MEMSZ = 0x2000,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t load_off = (NOTE_OFF + size + 7) & ~(size_t)7;
	size_t total = load_off + LOAD_SIZE;
	uint8_t *img = calloc(1, total);
	if (!img)
		return 0;
	Elf64_Ehdr eh;
	mock_ehdr(&eh, 2);
	Elf64_Phdr ph[2] = {
		{.p_type = PT_NOTE, .p_offset = NOTE_OFF, .p_filesz = size,
		 .p_align = 4},
		{.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = load_off,
		 .p_vaddr = LOAD_VADDR, .p_filesz = LOAD_SIZE,
		 .p_memsz = LOAD_MEMSZ, .p_align = 0x1000},
	};
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sizeof(eh), ph, sizeof(ph));
	if (size)
		memcpy(img + NOTE_OFF, data, size);
	for (size_t i = 0; i < LOAD_SIZE; i++)
		img[load_off + i] = (uint8_t)(0xa0 + i);

	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core;
	struct hs_error *err = hs_core_open_memory("fuzz-notes.core", img, total,
						   &log, &core);
	if (!err) {
		fz_exercise_core(core);
		hs_core_destroy(core);
	}
	hs_error_destroy(err);
	hs_log_fini(&log);
	free(img);
	return 0;
}
