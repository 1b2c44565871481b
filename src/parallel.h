/* Running one function over a few parts of a job at once. */
#ifndef HS_PARALLEL_H
#define HS_PARALLEL_H

#include <stddef.h>

enum { HS_PARTS_MAX = 16 };

/* fn on each of the n parts of the array `parts` (each `size` bytes):
 * parts 1 .. n - 1 on threads of their own (up to HS_PARTS_MAX - 1 of
 * them), part 0 on the caller's; a part without a thread (its thread
 * could not start, or past HS_PARTS_MAX) runs on the caller's too, after
 * part 0.  Returns when every part is done. */
void hs_run_parts(void *parts, size_t size, unsigned n, void *(*fn)(void *));

#endif
