/* fuzz_summary: reading a summary back (src/summary.h, what heapdiff does
 * with a file that is not a core), then the comparison over what was read.
 *
 * Input: the file, as it is.  A summary that parses is compared with
 * itself, twice and three times (analyzers/diff.c: rows by label and
 * name, series, deltas and trends by totals): the rows are as hostile as
 * the file, and the comparison must not overflow or crash on them.
 */
#include <stdint.h>
#include <stdlib.h>

#include "src/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_summary *s = NULL;
	struct hs_error *err = hs_summary_parse("fuzz.json", (const char *)data, size, &s);
	if (err) {
		hs_error_destroy(err);
		return 0;
	}
	struct hs_diff_input in[3] = {{s->rows, true, NULL}, {s->rows, true, NULL},
				      {s->rows, true, NULL}};
	for (size_t n = 2; n <= 3; n++) {
		struct hs_diff *d = NULL;
		err = hs_diff_compute(in, n, &d);
		if (!err) {
			/* every row has its series */
			volatile uint64_t sum = 0;
			for (size_t i = 0; i < d->ntypes; i++)
				sum += d->types[i].bytes[n - 1];
			for (size_t i = 0; i < d->nroots; i++)
				sum += d->roots[i].retained[n - 1];
			(void)sum;
		}
		hs_error_destroy(err);
		hs_diff_destroy(d);
	}
	hs_summary_destroy(s);
	return 0;
}
