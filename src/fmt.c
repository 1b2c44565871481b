#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/fmt.h"

const char *hs_fmt_size(char *buf, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, 32, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, 32, "%.1f %s", v, units[u]);
	return buf;
}

struct hs_lines *hs_lines_new(FILE *f)
{
	struct hs_lines *b = hs_malloc(sizeof(*b));
	if (b) {
		b->f = f;
		b->len = 0;
	}
	return b;
}

void hs_lines_flush(struct hs_lines *b)
{
	if (b->len)
		fwrite(b->buf, 1, b->len, b->f);
	b->len = 0;
}

void hs_lines_free(struct hs_lines *b)
{
	if (!b)
		return;
	hs_lines_flush(b);
	free(b);
}
