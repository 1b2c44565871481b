/* The C tests' one harness (tests/unit/):
 *
 *   CHECK(cond)              counts a check; a failed one is reported
 *                            with its file, line and condition
 *   CHECKF(cond, fmt, ...)   the same, with a message of the test's
 *   check_finish()           prints "N passed, M failed" (what ctest's
 *                            log shows) and gives main's exit status
 *   check_rand()             a fixed xorshift64 stream: the same inputs
 *                            on every run
 *
 * Each test is one program that includes this header once. */
#ifndef HS_CHECK_H
#define HS_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond) CHECKF(cond, "check failed: %s", #cond)

#define CHECKF(cond, ...)                                                    \
	do {                                                                 \
		check_count++;                                               \
		if (!(cond)) {                                               \
			check_failures++;                                    \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);      \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
		}                                                            \
	} while (0)

static inline int check_finish(void)
{
	printf("%d passed, %d failed\n", check_count - check_failures,
	       check_failures);
	return check_failures ? 1 : 0;
}

static uint64_t check_rng = 88172645463325252ull;

static inline uint64_t check_rand(void)
{
	check_rng ^= check_rng << 13;
	check_rng ^= check_rng >> 7;
	check_rng ^= check_rng << 17;
	return check_rng;
}

#endif
