/* qsort with no undefined behaviour for empty arrays: qsort(NULL, 0, ...)
 * is undefined in C (the pointer must be valid), and an empty vector here
 * is often NULL. */
#ifndef HS_SORT_H
#define HS_SORT_H

#include <stdlib.h>

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
