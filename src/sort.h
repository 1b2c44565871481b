/* qsort with no undefined behaviour for empty arrays: qsort(NULL, 0, ...)
 * is undefined in C (the pointer must be valid), and an empty vector here
 * is often NULL. */
#ifndef HS_SORT_H
#define HS_SORT_H

#include <stdint.h>
#include <stdlib.h>

/* Sorts n 32-bit values in place, ascending: insertion sort for short
 * arrays, else a least-significant-digit radix sort, a pass skipped when
 * every value has the same digit: up to a few thousand values 8-bit
 * digits on the stack, beyond 11-bit digits through a scratch array
 * (qsort when the scratch cannot be had).  A graph
 * row of a million pointers is sorted in milliseconds instead of the
 * comparison sort's tenths of a second. */
void hs_sort_u32(uint32_t *v, size_t n);

static inline void hs_sort(void *base, size_t n, size_t size,
			   int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void hs_sort_r(void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *, void *),
			     void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

#endif
