/* Writes a copy of a core with some words of its segments zeroed.
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

#endif
