#include <inttypes.h>
#include <stdio.h>

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
