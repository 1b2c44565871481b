/* Radix sort of 32-bit values: see src/sort.h. */
#include "src/sort.h"

#include <string.h>

enum { DIGIT_BITS = 11, NDIGIT = 1 << DIGIT_BITS, SHORT = 64 };

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

void hs_sort_u32(uint32_t *v, size_t n)
{
	if (n < SHORT) {
		insertion(v, n);
		return;
	}
	uint32_t *tmp = malloc(n * sizeof(*tmp));
	/* the three digits' counts in one pass */
	size_t *cnt = calloc(3 * NDIGIT, sizeof(*cnt));
	if (!tmp || !cnt) {
		free(tmp);
		free(cnt);
		qsort(v, n, sizeof(*v), cmp_u32);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t x = v[i];
		cnt[x & (NDIGIT - 1)]++;
		cnt[NDIGIT + (x >> DIGIT_BITS & (NDIGIT - 1))]++;
		cnt[2 * NDIGIT + (x >> 2 * DIGIT_BITS)]++;
	}
	uint32_t *src = v, *dst = tmp;
	for (int d = 0; d < 3; d++) {
		size_t *c = cnt + (size_t)d * NDIGIT;
		unsigned shift = (unsigned)d * DIGIT_BITS;
		/* every value has the same digit here: nothing moves */
		if (c[src[0] >> shift & (NDIGIT - 1)] == n)
			continue;
		size_t run = 0;
		for (size_t k = 0; k < NDIGIT; k++) {
			size_t x = c[k];
			c[k] = run;
			run += x;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t x = src[i];
			dst[c[x >> shift & (NDIGIT - 1)]++] = x;
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	free(cnt);
}
