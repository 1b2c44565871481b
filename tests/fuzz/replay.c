/* Replays fuzzer inputs without libFuzzer: the harness's
 * LLVMFuzzerTestOneInput runs once on every file named on the command line
 * and on every file of every directory named (in name order, dot files
 * skipped).  Linked into fuzz_replay_NAME, which ctest runs on the
 * committed corpus: a crash or a sanitizer report fails the test, and so
 * does an input that takes longer than libFuzzer's -timeout (10 s of CPU
 * time; $HS_REPLAY_MAX_SECONDS overrides), which scripts/fuzz.sh would
 * report as a timeout.
 *
 *   fuzz_replay_NAME DIR|FILE...
 *
 * Exits 1 when nothing was replayed (a missing corpus must not pass) or
 * when an input was too slow. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int slow_inputs;

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			fprintf(stderr, "%s: out of memory\n", path);
			return -1;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		fprintf(stderr, "%s: read error\n", path);
		return -1;
	}
	/* an exact-size copy, as libFuzzer gives: a read past the end is
	 * caught by ASan */
	uint8_t *in = malloc(n ? n : 1);
	if (!in) {
		free(buf);
		return -1;
	}
	memcpy(in, buf, n);
	free(buf);
	const char *max_env = getenv("HS_REPLAY_MAX_SECONDS");
	double max = max_env ? atof(max_env) : 10.0;
	double t0 = cpu_seconds();
	LLVMFuzzerTestOneInput(in, n);
	double t = cpu_seconds() - t0;
	free(in);
	if (max > 0 && t > max) {
		fprintf(stderr, "%s: %.1f s of CPU time, more than %g s (a timeout for the fuzzer)\n",
			path, t, max);
		slow_inputs++;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, size_t *count)
{
	DIR *d = opendir(dir);
	if (!d) {
		perror(dir);
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **v = realloc(names, cap * sizeof(*v));
			if (!v)
				break;
			names = v;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		char *path = malloc(strlen(dir) + strlen(names[i]) + 2);
		if (path) {
			sprintf(path, "%s/%s", dir, names[i]);
			struct stat st;
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (replay_file(path) == 0)
					(*count)++;
				else
					rc = -1;
			}
			free(path);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	size_t count = 0;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (replay_dir(argv[i], &count) != 0)
				rc = 1;
		} else if (replay_file(argv[i]) == 0) {
			count++;
		} else {
			rc = 1;
		}
	}
	printf("replayed %zu inputs\n", count);
	if (!count) {
		fprintf(stderr, "%s: no input replayed\n", argv[0]);
		return 1;
	}
	if (slow_inputs) {
		fprintf(stderr, "%s: %d input%s too slow\n", argv[0], slow_inputs,
			slow_inputs == 1 ? "" : "s");
		return 1;
	}
	return rc;
}
