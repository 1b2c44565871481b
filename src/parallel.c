/* Running one function over a few parts at once, or one beside the caller:
 * see src/parallel.h. */
#include "src/parallel.h"

void hs_run_parts(void *parts, size_t size, unsigned n, void *(*fn)(void *))
{
	pthread_t tids[HS_PARTS_MAX];
	bool started[HS_PARTS_MAX] = {false};
	char *p = parts;
	for (unsigned t = 1; t < n && t < HS_PARTS_MAX; t++)
		started[t] = pthread_create(&tids[t], NULL, fn, p + t * size) == 0;
	if (n)
		fn(p);
	for (unsigned t = 1; t < n; t++) {
		if (t < HS_PARTS_MAX && started[t])
			pthread_join(tids[t], NULL);
		else
			fn(p + t * size);
	}
}

void hs_task_start(struct hs_task *t, void *(*fn)(void *), void *arg)
{
	t->running = pthread_create(&t->tid, NULL, fn, arg) == 0;
	if (!t->running)
		fn(arg);
}

void hs_task_join(struct hs_task *t)
{
	if (t->running)
		pthread_join(t->tid, NULL);
	t->running = false;
}
