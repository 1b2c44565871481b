/* heapsift's malloc, calloc and realloc: glibc's, with tables of a
 * megabyte and more on whole transparent huge pages where that costs
 * little memory.
 *
 * A block of 1 MiB or more is a mapping of its own (main.c sets malloc's
 * mmap threshold there), and glibc asks for huge pages on it (the tunable
 * glibc.malloc.hugetlb, main.c).  But Linux puts a mapping on a 2 MiB
 * boundary only when its length is a multiple of 2 MiB (6.8 and later),
 * and glibc maps the request plus its header in whole 4 KiB pages: so a
 * table of a few megabytes starts anywhere, only the 2 MiB pieces that
 * fall whole inside it are huge, and the rest takes a page fault per
 * 4 KiB.  On a virtual machine such a fault costs 15-18 us: on this
 * project's test machine, tens of thousands of them were a tenth to a
 * fifth of `leaks` (docs/performance.md, "Whole huge pages for the
 * tables").  So the project allocates through these, which round such a
 * request up to a mapping of whole 2 MiB pages when that adds at most a
 * quarter of it; the rounding's last huge page is resident whole once
 * written, where 4 KiB pages would hold only what is used (a table of
 * 2.6 MiB would take 4).  free() is free().  In the sanitized builds the
 * requests are left as they are, so that an overrun past them is still
 * caught. */
#ifndef HS_ALLOC_H
#define HS_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* HS_ASAN: built with AddressSanitizer (gcc says so with
 * __SANITIZE_ADDRESS__, clang with __has_feature) */
#if defined(__SANITIZE_ADDRESS__)
#define HS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HS_ASAN 1
#endif
#endif

#define HS_ALLOC_HUGE_MIN ((size_t)1 << 20)
#define HS_ALLOC_HUGE ((size_t)2 << 20)
/* glibc's mmapped chunk on x86-64: the request, 8 bytes of size word
 * rounded to 16, and a 16-byte header, in whole pages: a request of
 * k * 2 MiB - 24 bytes maps exactly k * 2 MiB */
#define HS_ALLOC_MMAP_OVERHEAD 24

/* The length of the mapping of whole 2 MiB pages that holds a request
 * of n bytes and glibc's header (n at most SIZE_MAX - HS_ALLOC_HUGE). */
static inline size_t hs_alloc_mapping(size_t n)
{
	return (n + HS_ALLOC_MMAP_OVERHEAD + HS_ALLOC_HUGE - 1) & ~(HS_ALLOC_HUGE - 1);
}

/* The size to ask malloc for, for a request of n bytes. */
static inline size_t hs_alloc_size(size_t n)
{
#ifdef HS_ASAN
	return n;
#else
	if (n < HS_ALLOC_HUGE_MIN || n > SIZE_MAX - HS_ALLOC_HUGE)
		return n;
	size_t m = hs_alloc_mapping(n) - HS_ALLOC_MMAP_OVERHEAD;
	return m - n <= n / 4 ? m : n;
#endif
}

__attribute__((malloc, alloc_size(1))) static inline void *hs_malloc(size_t n)
{
	return malloc(hs_alloc_size(n));
}

__attribute__((malloc, alloc_size(1, 2))) static inline void *hs_calloc(size_t n,
									  size_t size)
{
	size_t bytes;
	/* (an overflowing product is calloc's to refuse) */
	if (__builtin_mul_overflow(n, size, &bytes) || bytes < HS_ALLOC_HUGE_MIN)
		return calloc(n, size);
	return calloc(1, hs_alloc_size(bytes));
}

__attribute__((alloc_size(2))) static inline void *hs_realloc(void *p, size_t n)
{
	return realloc(p, hs_alloc_size(n));
}

/* hs_malloc for a table that will be written whole (src/vector.h's
 * hs_zalloc_written, a vector's reserve_filled).  Where hs_alloc_size
 * leaves a request of 1 MiB or more as it is (a table of 2.6 to 3 MB, a
 * byte an allocation on the benchmark cores, took some 700 faults of
 * 4 KiB), it asks all the same for a mapping of whole 2 MiB pages, which
 * Linux 6.8 and later put on a 2 MiB boundary; asks for huge pages up to
 * the 2 MiB boundary below the table's end; and gives the rest of the
 * mapping, where the table ends, 4 KiB pages (MADV_NOHUGEPAGE).  The
 * table's head is huge, its end takes a fault per 4 KiB page written, and
 * nothing past the end is resident: written whole, the table holds what
 * it held before, in fewer faults.  Where the kernel does not align the
 * mapping, the same advice keeps the huge pages glibc asks for on all of
 * it (glibc.malloc.hugetlb) inside the table.  Given only to a block
 * that is glibc's mapped chunk of that length (its header says so, 16
 * bytes before it, at the start of a page): another allocator's block is
 * left alone, and refused advice changes nothing. */
static inline void *hs_malloc_filled(size_t n)
{
#ifndef HS_ASAN
	if (n >= HS_ALLOC_HUGE_MIN && n <= SIZE_MAX - 2 * HS_ALLOC_HUGE &&
	    hs_alloc_size(n) == n) {
		size_t map = hs_alloc_mapping(n);
		char *p = malloc(map - HS_ALLOC_MMAP_OVERHEAD);
		uintptr_t start = (uintptr_t)p - 16;
		/* glibc's chunk header before the block: its size, with bit 1
		 * for a mapped chunk (read through an address the compiler
		 * does not tie to the block) */
		size_t head = 0;
		const char *hdr = (const char *)start;
		__asm__("" : "+r"(hdr));
		if (p && !(start & 4095))
			memcpy(&head, hdr + 8, sizeof(head));
		if (head == (map | 2)) {
			uintptr_t tail = ((uintptr_t)p + n) & ~(uintptr_t)(HS_ALLOC_HUGE - 1);
			if (tail < start)
				tail = start;
			if (tail > start)
				(void)madvise((void *)start, tail - start, MADV_HUGEPAGE);
			(void)madvise((void *)tail, start + map - tail, MADV_NOHUGEPAGE);
		}
		return p;
	}
#endif
	return hs_malloc(n);
}

#endif
