/* One growable array, typed by a macro (in the style of drgn's vector.h):
 *
 *   HS_VECTOR(u64_vector, uint64_t)
 *   struct u64_vector v = {0};
 *   if ((err = u64_vector_push(&v, 42))) ...
 *   for (size_t i = 0; i < v.n; i++) ... v.v[i] ...
 *   u64_vector_free(&v);
 *
 * defines struct NAME {TYPE *v; size_t n, cap;} and, for it:
 *
 *   NAME_reserve(vec, more)   room for `more` elements past n
 *   NAME_push(vec, x)         appends x
 *   NAME_append(vec)          appends one zeroed element, returns it
 *                             (NULL: out of memory)
 *   NAME_free(vec)            frees the elements, leaves an empty vector
 *
 * The fallible ones return &hs_error_nomem when memory runs out (the
 * vector is then unchanged), a size that would overflow included.
 * Capacity doubles from 16.  Base layer: includes nothing above it.
 */
#ifndef HS_VECTOR_H
#define HS_VECTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "src/alloc.h"
#include "src/error.h"

/* The capacity to grow cap to for n + more elements of elem bytes, or 0
 * when that does not fit in memory. */
static inline size_t hs_vector_grow_cap(size_t cap, size_t n, size_t more,
					size_t elem)
{
	if (more > SIZE_MAX / elem - n)
		return 0;
	size_t want = n + more;
	if (cap < 16)
		cap = 16;
	while (cap < want) {
		if (cap > SIZE_MAX / 2 / elem)
			return want;
		cap *= 2;
	}
	return cap;
}

/* The array v (n elements of elem bytes used, *cap allocated) grown to
 * hold `more` more: v reallocated and *cap updated, or NULL when memory
 * runs out (v is then unchanged).  HS_VECTOR's reserve, for an array kept
 * as fields of a larger struct. */
static inline void *hs_vector_grow(void *v, size_t n, size_t *cap,
				   size_t more, size_t elem)
{
	size_t c = hs_vector_grow_cap(*cap, n, more, elem);
	void *p = c ? hs_realloc(v, c * elem) : NULL;
	if (p)
		*cap = c;
	return p;
}

/* madvise(advice) over the 2 MiB-aligned part of [p, p + bytes), if any;
 * a refusal changes nothing. */
static inline void hs_vector_advise_huge(void *p, size_t bytes, int advice)
{
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
	uintptr_t end = ((uintptr_t)p + bytes) & ~(huge - 1);
	if (p && end > start)
		(void)madvise((void *)start, end - start, advice);
}

/* Asks the kernel to back the 2 MiB-aligned part of [p, p + bytes) with
 * huge pages (transparent huge pages in "madvise" mode, as Debian ships
 * them): a table of tens of megabytes that is filled front to back then
 * takes one page fault per 2 MiB instead of one per 4 KiB, and is freed
 * faster.  A hint: where the kernel says no, nothing changes.  For arrays
 * of a few megabytes and more. */
static inline void hs_vector_hugepages(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
	hs_vector_advise_huge(p, bytes, MADV_HUGEPAGE);
#else
	(void)p;
	(void)bytes;
#endif
}

/* bytes of zeroed memory, zeroed by writing it here rather than by
 * calloc.  A fresh page from the kernel that is first read is mapped to
 * the shared zero page; its first write then replaces it and flushes the
 * TLB of every CPU running a thread of this process (an interrupt to each,
 * costly in a virtual machine).  For a table read before it is written,
 * at random, while other threads run: written once here, each page takes
 * one fault and no flush (in huge pages where it is large enough:
 * hs_malloc_filled, hs_vector_hugepages).  NULL when memory runs out. */
static inline void *hs_zalloc_written(size_t bytes)
{
	void *p = hs_malloc_filled(bytes ? bytes : 1);
	if (p) {
		hs_vector_hugepages(p, bytes);
		/* keeps the compiler from making malloc + memset a calloc */
		__asm__ volatile("" : : "r"(p) : "memory");
		memset(p, 0, bytes);
	}
	return p;
}

/* MADV_COLLAPSE (Linux 6.1), which Debian 12's headers do not name */
#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25
#endif

/* Puts the 2 MiB-aligned part of [p, p + bytes) in huge pages now
 * (MADV_COLLAPSE), where its pages are there (written): a 2 MiB piece not
 * yet touched is left alone.  hs_vector_hugepages only asks: a page first
 * touched when the kernel has no free huge page at hand (memory cut up by
 * a page cache of small pages) stays a 4 KiB page, and a table of hundreds
 * of megabytes read at random then costs far more on some machines (the
 * dominators' sums at 10^8 blocks: 139 s against 9.7 once collapsed,
 * docs/performance.md).  Copying its small pages into huge ones takes
 * about 0.1 s a gigabyte; pages already huge are left as they are.  For
 * a table about to be read at random for a long time.  A hint: where the
 * kernel refuses (older than 6.1, no transparent huge pages), nothing
 * changes. */
static inline void hs_vector_collapse(void *p, size_t bytes)
{
#ifdef MADV_COLLAPSE
	hs_vector_advise_huge(p, bytes, MADV_COLLAPSE);
#else
	(void)p;
	(void)bytes;
#endif
}

#define HS_VECTOR(name, type)                                                 \
	struct name {                                                         \
		type *v;                                                      \
		size_t n, cap;                                                \
	};                                                                    \
	__attribute__((unused)) static inline struct hs_error *               \
	name##_reserve(struct name *vec, size_t more)                         \
	{                                                                     \
		if (more <= vec->cap - vec->n)                                \
			return NULL;                                          \
		type *v = hs_vector_grow(vec->v, vec->n, &vec->cap, more,    \
					 sizeof(type));                       \
		if (!v)                                                       \
			return &hs_error_nomem;                               \
		vec->v = v;                                                   \
		return NULL;                                                  \
	}                                                                     \
	/* an empty vector's room for exactly n, all of which will be       \
	 * pushed (hs_malloc_filled) */                                       \
	__attribute__((unused)) static inline struct hs_error *               \
	name##_reserve_filled(struct name *vec, size_t n)                     \
	{                                                                     \
		if (vec->v || !n || n > SIZE_MAX / sizeof(type))              \
			return name##_reserve(vec, n);                        \
		type *v = hs_malloc_filled(n * sizeof(type));                 \
		if (!v)                                                       \
			return &hs_error_nomem;                               \
		vec->v = v;                                                   \
		vec->cap = n;                                                 \
		return NULL;                                                  \
	}                                                                     \
	__attribute__((unused)) static inline struct hs_error *               \
	name##_push(struct name *vec, type x)                                 \
	{                                                                     \
		if (vec->n == vec->cap) {                                     \
			struct hs_error *err_ = name##_reserve(vec, 1);       \
			if (err_)                                             \
				return err_;                                  \
		}                                                             \
		vec->v[vec->n++] = x;                                         \
		return NULL;                                                  \
	}                                                                     \
	__attribute__((unused)) static inline type *                          \
	name##_append(struct name *vec)                                       \
	{                                                                     \
		if (vec->n == vec->cap && name##_reserve(vec, 1))             \
			return NULL;                                          \
		type *x = &vec->v[vec->n++];                                  \
		memset(x, 0, sizeof(*x));                                     \
		return x;                                                     \
	}                                                                     \
	__attribute__((unused)) static inline void                            \
	name##_free(struct name *vec)                                         \
	{                                                                     \
		free(vec->v);                                                 \
		vec->v = NULL;                                                \
		vec->n = vec->cap = 0;                                        \
	}

#endif
