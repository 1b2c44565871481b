/* Radix sort of 32-bit values: see src/sort.h. */
#include "src/sort.h"

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

/* The radix sort of a row shorter than MID: 8-bit digits, counts and
 * scratch on the stack, a pass skipped when every value has the same
 * digit (an id below 2^22 with its two flag bits leaves the top byte 0). */
static void radix8(uint32_t *v, size_t n)
{
	uint32_t tmp[MID];
	uint32_t cnt[4][256];
	memset(cnt, 0, sizeof(cnt));
	for (size_t i = 0; i < n; i++) {
		uint32_t x = v[i];
		cnt[0][x & 0xff]++;
		cnt[1][x >> 8 & 0xff]++;
		cnt[2][x >> 16 & 0xff]++;
		cnt[3][x >> 24]++;
	}
	uint32_t *src = v, *dst = tmp;
	for (unsigned d = 0; d < 4; d++) {
		uint32_t *c = cnt[d];
		unsigned shift = 8 * d;
		if (c[src[0] >> shift & 0xff] == n)
			continue;
		uint32_t run = 0;
		for (unsigned k = 0; k < 256; k++) {
			uint32_t x = c[k];
			c[k] = run;
			run += x;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t x = src[i];
			dst[c[x >> shift & 0xff]++] = x;
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
		radix8(v, n);
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
