/* Radix sort of 32-bit values: see src/sort.h. */
#include "src/sort.h"
#include "src/alloc.h"

#include <string.h>

/* Below SHORT values, insertion sort; below MID, a radix sort of 8-bit
 * digits on the stack: the wide one's scratch and its three 2,048-entry
 * counts (48 KiB, cleared and summed on every call) cost more than a row
 * of a few hundred values takes to sort, and a heap has tens of thousands
 * of such rows. */
enum { DIGIT_BITS = 11, NDIGIT = 1 << DIGIT_BITS, SHORT = 64, MID = 4096 };

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void insertion(uint32_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* The passes of a least-significant-digit radix sort of v[0..n), `passes`
 * digits of `bits` bits, through tmp (n values); cnt: passes << bits
 * counts, zeroed.  Every digit is counted in one pass over v; a digit that
 * every value shares moves nothing and is skipped (an id below 2^22 with
 * its two flag bits leaves the top byte 0). */
static inline __attribute__((always_inline)) void lsd_radix(uint32_t *v, uint32_t *tmp, size_t n, size_t *cnt,
			     unsigned bits, unsigned passes)
{
	size_t nd = (size_t)1 << bits;
	uint32_t mask = (uint32_t)nd - 1;
	for (size_t i = 0; i < n; i++)
		for (unsigned d = 0; d < passes; d++)
			cnt[d * nd + (v[i] >> d * bits & mask)]++;
	uint32_t *src = v, *dst = tmp;
	for (unsigned d = 0; d < passes; d++) {
		size_t *c = cnt + d * nd;
		unsigned shift = d * bits;
		if (c[src[0] >> shift & mask] == n)
			continue;
		size_t run = 0;
		for (size_t k = 0; k < nd; k++) {
			size_t x = c[k];
			c[k] = run;
			run += x;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t x = src[i];
			dst[c[x >> shift & mask]++] = x;
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

void hs_sort_u32(uint32_t *v, size_t n)
{
	if (n < SHORT) {
		insertion(v, n);
		return;
	}
	if (n < MID) {
		/* 8-bit digits, scratch and counts on the stack */
		uint32_t tmp[MID];
		size_t cnt[4 << 8] = {0};
		lsd_radix(v, tmp, n, cnt, 8, 4);
		return;
	}
	uint32_t *tmp = hs_malloc(n * sizeof(*tmp));
	size_t *cnt = hs_calloc(3 * NDIGIT, sizeof(*cnt));
	if (!tmp || !cnt) {
		free(tmp);
		free(cnt);
		qsort(v, n, sizeof(*v), cmp_u32);
		return;
	}
	lsd_radix(v, tmp, n, cnt, DIGIT_BITS, 3);
	free(tmp);
	free(cnt);
}
