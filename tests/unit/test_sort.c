/* src/sort.h's hs_sort_u32 against qsort: every size up to past the
 * threshold between its two radix sorts, on random values (all four bytes
 * used), few distinct values, sorted, reversed, equal and organ-pipe
 * inputs, and ids with flag bits; then one row as large as a hash table's
 * bucket array. */
#include <stdlib.h>
#include <string.h>

#include "src/sort.h"
#include "tests/unit/check.h"

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

enum { MAXN = 5000 };
static uint32_t in[MAXN], got[MAXN], want[MAXN];

/* in[0..n) of shape s */
static void fill(unsigned s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = check_rand();
		switch (s) {
		case 0: in[i] = (uint32_t)r; break;                       /* random */
		case 1: in[i] = (uint32_t)(r % 7); break;                 /* few values */
		case 2: in[i] = (uint32_t)i; break;                       /* sorted */
		case 3: in[i] = (uint32_t)(n - i); break;                 /* reversed */
		case 4: in[i] = 42; break;                                /* equal */
		case 5: in[i] = (uint32_t)(i < n / 2 ? i : n - i); break; /* organ pipe */
		default: in[i] = (uint32_t)(r >> 40) << 2 | (uint32_t)(r & 3); break;
		}
	}
}

enum { SHAPES = 7 };

int main(void)
{
	int bad = 0;
	for (unsigned s = 0; s < SHAPES; s++) {
		for (size_t n = 0; n <= MAXN; n += n < 300 ? 1 : 97) {
			fill(s, n);
			memcpy(want, in, n * sizeof(*in));
			if (n)
				qsort(want, n, sizeof(*want), cmp);
			memcpy(got, in, n * sizeof(*in));
			hs_sort_u32(got, n);
			bad += memcmp(got, want, n * sizeof(*got)) != 0;
		}
	}
	CHECKF(!bad, "hs_sort_u32 differs from qsort on %d inputs", bad);
	/* a row as large as the radix sort's, with its ids' two flag bits */
	enum { BIG = 300000 };
	uint32_t *v = malloc(BIG * sizeof(*v)), *w = malloc(BIG * sizeof(*w));
	CHECK(v && w);
	if (v && w) {
		for (size_t i = 0; i < BIG; i++)
			v[i] = w[i] = (uint32_t)(check_rand() % 3000000) << 2 | (uint32_t)(i & 3);
		qsort(w, BIG, sizeof(*w), cmp);
		hs_sort_u32(v, BIG);
		CHECK(!memcmp(v, w, BIG * sizeof(*v)));
	}
	free(v);
	free(w);
	return check_finish();
}
