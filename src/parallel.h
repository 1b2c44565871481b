/* Running one function over a few parts of a job at once, or one function
 * beside the caller. */
#ifndef HS_PARALLEL_H
#define HS_PARALLEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

enum { HS_PARTS_MAX = 16 };

/* fn on each of the n parts of the array `parts` (each `size` bytes):
 * parts 1 .. n - 1 on threads of their own (up to HS_PARTS_MAX - 1 of
 * them), part 0 on the caller's; a part without a thread (its thread
 * could not start, or past HS_PARTS_MAX) runs on the caller's too, after
 * part 0.  Returns when every part is done. */
void hs_run_parts(void *parts, size_t size, unsigned n, void *(*fn)(void *));

/* fn(arg) on a thread of its own while the caller goes on (hs_task_start),
 * until hs_task_join; when no thread can start, hs_task_start runs fn
 * itself before it returns. */
struct hs_task {
	pthread_t tid;
	bool running;
};
void hs_task_start(struct hs_task *t, void *(*fn)(void *), void *arg);
void hs_task_join(struct hs_task *t);

#endif
