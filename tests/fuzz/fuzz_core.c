/* fuzz_core: the core reader on a whole core file image.
 *
 * Input: the bytes of a core file (ELF header, program headers, notes,
 * segment data), opened with hs_core_open_memory(); then everything callers
 * use is run over what it returned (fz_core.h). */
#include <stdint.h>
#include <stdlib.h>

#include "formats/elfcore.h"
#include "tests/fuzz/fz_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core;
	struct hs_error *err = hs_core_open_memory("fuzz.core", data, size, &log,
						   &core);
	if (!err) {
		fz_exercise_core(core);
		hs_core_destroy(core);
	}
	hs_error_destroy(err);
	hs_log_fini(&log);
	return 0;
}
