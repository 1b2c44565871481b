/* src/alloc.h, heapsift's hs_malloc, hs_calloc and hs_realloc: a request
 * of 1 MiB or more is rounded up to where glibc's mapping is a whole
 * number of 2 MiB pages when that adds at most a quarter of it; the others
 * are glibc's as they are.  With malloc's mmap threshold at 1 MiB, as
 * main.c sets it, such a block is a mapping of its own: its usable size
 * shows the rounding, and where the kernel puts mappings of whole 2 MiB
 * pages on a 2 MiB boundary (Linux 6.8 and later), so does its address.
 * hs_malloc_filled maps a table the rounding leaves alone as whole 2 MiB
 * pages too, with huge pages asked for up to the 2 MiB boundary below the
 * table's end ("hg" in /proc/self/smaps) and refused from there ("nh"),
 * whether the kernel aligned the mapping or not.
 * Not built in the sanitized tree, where the requests are left as they
 * are. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/alloc.h"
#include "tests/unit/check.h"

#define MIB ((size_t)1 << 20)
#define HUGE (2 * MIB)

/* glibc's mmapped chunk: 16 bytes of header before the block */
static uintptr_t mapping_of(const void *p)
{
	return (uintptr_t)p - 16;
}

/* Does the kernel align an anonymous mapping of whole 2 MiB pages? */
static int kernel_aligns(void)
{
	void *p = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	int ok = (uintptr_t)p % HUGE == 0;
	munmap(p, 4 * MIB);
	return ok;
}

/* The VmFlags line of the mapping that holds addr, in buf; false when
 * /proc/self/smaps names none. */
static int vm_flags(uintptr_t addr, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return 0;
	char line[512];
	int in = 0, found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2)
			in = lo <= addr && addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(buf, len, "%s", line + 8);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* Does the flags line name flag (two letters, as smaps spells them)? */
static int has_flag(const char *flags, const char *flag)
{
	char want[5] = {' ', flag[0], flag[1], 0, 0};
	char padded[600];
	snprintf(padded, sizeof(padded), " %s", flags);
	for (char *p = padded; (p = strstr(p, want)); p++)
		if (p[3] == ' ' || p[3] == '\n' || p[3] == 0)
			return 1;
	return 0;
}

int main(void)
{
	CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1);
	int aligns = kernel_aligns();
	printf("the kernel %s mappings of whole 2 MiB pages\n", aligns ? "aligns" : "does not align");

	/* the sizes asked for */
	CHECK(hs_alloc_size(0) == 0);
	CHECK(hs_alloc_size(MIB - 1) == MIB - 1);
	CHECK(hs_alloc_size(7 * MIB) == 8 * MIB - 24);
	CHECK(hs_alloc_size(8 * MIB - 24) == 8 * MIB - 24);
	CHECK(hs_alloc_size(8 * MIB - 23) == 8 * MIB - 23);  /* 2 MiB more: too much */
	CHECK(hs_alloc_size(6 * MIB + 1) == 6 * MIB + 1);   /* the same */
	CHECK(hs_alloc_size(5 * MIB) == 6 * MIB - 24);      /* a fifth more */
	/* 10 MiB - 24 is 2,097,147 more than 8,388,589: exactly a quarter
	 * (rounded down), rounded up; a byte less, and it would be more */
	CHECK(hs_alloc_size(8388589) == 10 * MIB - 24);
	CHECK(hs_alloc_size(8388588) == 8388588);
	CHECK(hs_alloc_size(SIZE_MAX) == SIZE_MAX);

	/* 3 MiB: rounding up to 4 MiB would add a third of it, more than a
	 * quarter: left as it is */
	char *a = hs_malloc(3 * MIB);
	CHECK(a != NULL);
	CHECKF(malloc_usable_size(a) < 4 * MIB - 16, "3 MiB: usable %zu", malloc_usable_size(a));

	/* 7 MiB: 8 MiB adds a seventh: rounded, the mapping is 8 MiB */
	char *b = hs_malloc(7 * MIB);
	CHECK(b != NULL);
	CHECKF(malloc_usable_size(b) == 8 * MIB - 16, "7 MiB: usable %zu", malloc_usable_size(b));
	if (aligns)
		CHECKF(mapping_of(b) % HUGE == 0, "7 MiB at %p", (void *)b);

	/* exactly 2 MiB of mapping asked for: rounded by nothing */
	char *c = hs_malloc(HUGE - 24);
	CHECK(c != NULL);
	CHECKF(malloc_usable_size(c) == HUGE - 16, "2 MiB - 24: usable %zu", malloc_usable_size(c));
	if (aligns)
		CHECKF(mapping_of(c) % HUGE == 0, "2 MiB - 24 at %p", (void *)c);

	/* under 1 MiB: glibc's own size */
	char *d = hs_malloc(MIB - 4096);
	CHECK(d != NULL);
	CHECKF(malloc_usable_size(d) < MIB, "1 MiB - 4 KiB: usable %zu", malloc_usable_size(d));

	/* calloc: rounded as malloc, and zeroed */
	unsigned char *e = hs_calloc(7, MIB);
	CHECK(e != NULL);
	CHECKF(malloc_usable_size(e) == 8 * MIB - 16, "calloc 7 MiB: usable %zu",
	       malloc_usable_size(e));
	size_t nonzero = 0;
	for (size_t i = 0; e && i < 7 * MIB; i += 4093)
		nonzero += e[i] != 0;
	CHECK(nonzero == 0);
	/* a product that overflows: no block, ENOMEM */
	volatile size_t many = SIZE_MAX / 2;  /* (not known to the compiler) */
	errno = 0;
	void *f = hs_calloc(many, 4);
	CHECK(f == NULL && errno == ENOMEM);

	/* realloc: the contents kept, the new size rounded */
	for (size_t i = 0; b && i < 7 * MIB; i += 4096)
		b[i] = (char)(i / 4096);
	char *g = hs_realloc(b, 15 * MIB);
	CHECK(g != NULL);
	size_t bad = 0;
	for (size_t i = 0; g && i < 7 * MIB; i += 4096)
		bad += g[i] != (char)(i / 4096);
	CHECK(bad == 0);
	CHECKF(malloc_usable_size(g) == 16 * MIB - 16, "realloc 15 MiB: usable %zu",
	       malloc_usable_size(g));
	/* realloc to 0 frees, as glibc's */
	CHECK(hs_realloc(c, 0) == NULL);

	/* a table written whole: 3,000,000 bytes (a byte an allocation on a
	 * core of three million), which the rounding leaves alone (4 MiB
	 * would add more than a quarter), mapped as 4 MiB: huge pages asked
	 * for on the first 2 MiB, refused on the last */
	CHECK(hs_alloc_size(3000000) == 3000000);
	char *h = hs_malloc_filled(3000000);
	CHECK(h != NULL);
	CHECKF(malloc_usable_size(h) == 4 * MIB - 16, "filled 3,000,000: usable %zu",
	       malloc_usable_size(h));
	/* (where the kernel has no transparent huge pages, it refuses the
	 * advice and smaps shows neither) */
	if (h && !access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK)) {
		/* from the 2 MiB boundary below the table's end: small pages;
		 * before it (aligned, a whole huge page): huge ones */
		char flags[512] = "";
		uintptr_t start = mapping_of(h), tail = ((uintptr_t)h + 3000000) & ~(HUGE - 1);
		if (tail < start)
			tail = start;
		if (aligns)
			CHECKF(start % HUGE == 0 && tail == start + HUGE, "filled 3,000,000 at %p",
			       (void *)h);
		if (tail > start)
			CHECKF(vm_flags(start, flags, sizeof(flags)) && has_flag(flags, "hg") &&
			       !has_flag(flags, "nh"), "the head's flags: %s", flags);
		CHECKF(vm_flags(tail, flags, sizeof(flags)) && has_flag(flags, "nh") &&
		       !has_flag(flags, "hg"), "the tail's flags: %s", flags);
		memset(h, 1, 3000000);
	}
	/* one the rounding takes (7 MiB), and one under 1 MiB: as hs_malloc */
	char *k = hs_malloc_filled(7 * MIB);
	CHECK(k != NULL);
	CHECKF(malloc_usable_size(k) == 8 * MIB - 16, "filled 7 MiB: usable %zu",
	       malloc_usable_size(k));
	char *l = hs_malloc_filled(MIB - 4096);
	CHECK(l != NULL);
	CHECKF(malloc_usable_size(l) < MIB, "filled 1 MiB - 4 KiB: usable %zu", malloc_usable_size(l));

	free(a);
	free(d);
	free(e);
	free(g);
	free(h);
	free(k);
	free(l);
	return check_finish();
}
