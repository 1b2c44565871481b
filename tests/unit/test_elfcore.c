/* Unit tests of the core reader on synthetic cores written here, so the
 * expected answer of every read is known by construction. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/elfcore.h"
#include "tests/unit/check.h"
#include "tests/unit/mockcore.h"


/* A core with one thread (tid 42, rsp 0x7000), and two segments:
 *   0x10000: 0x2000 bytes, 0x1000 in the file (pattern i & 0xff), rest zero
 *   0x20000: 0x1000 bytes, all in the file (pattern 0xab)              */
static struct mock_buf make_core(void)
{
	struct mock_buf b = {0};
	Elf64_Ehdr eh;
	mock_ehdr(&eh, 3);
	mock_put(&b, 0, &eh, sizeof(eh));

	size_t notes = sizeof(eh) + 3 * sizeof(Elf64_Phdr);
	unsigned char prstatus[MOCK_PRSTATUS_SIZE] = {0};
	int32_t tid = 42;
	memcpy(prstatus + MOCK_PRSTATUS_PID, &tid, 4);
	uint64_t rsp = 0x7000;
	memcpy(prstatus + MOCK_PRSTATUS_REGS + 8 * HS_REG_RSP, &rsp, 8);
	size_t end = mock_note(&b, notes, NT_PRSTATUS, prstatus, sizeof(prstatus));
	uint64_t auxv[4] = {AT_PAGESZ, 4096, AT_NULL, 0};
	end = mock_note(&b, end, NT_AUXV, auxv, sizeof(auxv));

	size_t data1 = 0x1000, data2 = data1 + 0x1000;
	Elf64_Phdr ph[3] = {
		{.p_type = PT_NOTE, .p_offset = notes, .p_filesz = end - notes},
		{.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = data1,
		 .p_vaddr = 0x10000, .p_filesz = 0x1000, .p_memsz = 0x2000},
		{.p_type = PT_LOAD, .p_flags = PF_R, .p_offset = data2,
		 .p_vaddr = 0x20000, .p_filesz = 0x1000, .p_memsz = 0x1000},
	};
	mock_put(&b, sizeof(eh), ph, sizeof(ph));
	unsigned char page[0x1000];
	for (int i = 0; i < 0x1000; i++)
		page[i] = (unsigned char)i;
	mock_put(&b, data1, page, sizeof(page));
	memset(page, 0xab, sizeof(page));
	mock_put(&b, data2, page, sizeof(page));
	return b;
}

static char *write_tmp(const struct mock_buf *b, size_t len)
{
	char *path = strdup("/tmp/hs-unit-core-XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, b->p, len) != (ssize_t)len)
		abort();
	close(fd);
	return path;
}

static void test_good(void)
{
	struct mock_buf b = make_core();
	char *path = write_tmp(&b, b.len);
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	struct hs_error *err = hs_core_open(path, &log, &core);
	CHECK(err == NULL);
	if (!core)
		goto out;
	CHECK(core->nsegs == 2);
	CHECK(core->nthreads == 1 && core->threads[0].tid == 42);
	CHECK(core->threads[0].regs[HS_REG_RSP] == 0x7000);
	CHECK(core->page_size == 4096);
	CHECK(!core->truncated && log.nwarnings == 0);
	unsigned char x[16];
	CHECK(hs_core_read(core, 0x10010, x, 4) == NULL && x[0] == 0x10 && x[3] == 0x13);
	/* past filesz, inside memsz: zeros */
	memset(x, 0xff, sizeof(x));
	CHECK(hs_core_read(core, 0x11800, x, 16) == NULL && x[0] == 0 && x[15] == 0);
	/* straddling file data and zero fill */
	CHECK(hs_core_read(core, 0x10ff8, x, 16) == NULL && x[0] == 0xf8 && x[8] == 0);
	/* not in the dump */
	err = hs_core_read(core, 0x12000, x, 1);
	CHECK(err && err->code == HS_ERR_FAULT && strstr(err->message, "0x12000"));
	hs_error_destroy(err);
	/* running off the end of a segment into a hole */
	CHECK(!hs_core_read_quiet(core, 0x11ff8, x, 16));
	CHECK(hs_core_ptr(core, 0x20000, 0x1000) != NULL);
	CHECK(hs_core_ptr(core, 0x20001, 0x1000) == NULL);
	CHECK(hs_core_find_segment(core, 0x1ffff) == NULL);
	uint64_t v;
	CHECK(hs_core_read_u64(core, 0x20ff8, &v) && v == 0xababababababababull);
out:
	hs_core_destroy(core);
	hs_log_fini(&log);
	unlink(path);
	free(path);
	free(b.p);
}

/* Every truncation point gives an error or a warned, bounded core. */
static void test_truncated(void)
{
	struct mock_buf b = make_core();
	for (size_t len = 0; len < b.len; len += (len < 0x300 ? 1 : 0x100)) {
		char *path = write_tmp(&b, len);
		struct hs_log log;
		hs_log_init(&log, NULL, false);
		struct hs_core *core = NULL;
		struct hs_error *err = hs_core_open(path, &log, &core);
		CHECK((err != NULL) != (core != NULL));
		if (err) {
			CHECK(err->message && err->message[0]);
		} else {
			CHECK(core->truncated && log.nwarnings > 0);
			unsigned char x[8];
			/* reads inside the cut-off part fail, never return
			 * zeros or garbage */
			if (len < 0x2000)
				CHECK(!hs_core_read_quiet(core, 0x20000, x, 8));
		}
		hs_error_destroy(err);
		hs_core_destroy(core);
		hs_log_fini(&log);
		unlink(path);
		free(path);
	}
	free(b.p);
}

static void test_not_core(void)
{
	struct mock_buf b = make_core();
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b.p;
	eh->e_type = ET_EXEC;
	char *path = write_tmp(&b, b.len);
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	struct hs_error *err = hs_core_open(path, &log, &core);
	CHECK(err && err->code == HS_ERR_FORMAT && strstr(err->message, "not a core"));
	hs_error_destroy(err);
	unlink(path);
	free(path);
	b.p[0] = 'X';
	path = write_tmp(&b, b.len);
	err = hs_core_open(path, &log, &core);
	CHECK(err && strstr(err->message, "not an ELF file"));
	hs_error_destroy(err);
	hs_log_fini(&log);
	unlink(path);
	free(path);
	free(b.p);
}

/* The segment of an address, against a linear search, on cores of 1 to
 * MOCK_MAX_SEGS segments laid out in random order, some back to back:
 * every segment's first and last byte, the bytes just outside, and
 * addresses at random.  The reads with a cursor (hs_core_ptr_near,
 * hs_core_read_u64_near), its segment left by the read before, answer
 * as those without. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_find_segment(void)
{
	for (int round = 0; round < 200; round++) {
		struct mock_core m = {0};
		size_t nseg = 1 + check_rand() % MOCK_MAX_SEGS;
		uint64_t at = 0x1000 * (1 + check_rand() % 16);
		uint64_t start[MOCK_MAX_SEGS], size[MOCK_MAX_SEGS];
		for (size_t i = 0; i < nseg; i++) {
			start[i] = at;
			size[i] = 0x1000 * (1 + check_rand() % 3);
			at += size[i] + (check_rand() % 2 ? 0 : 0x1000 * (check_rand() % 4));
		}
		/* added in a shuffled order: the reader sorts them */
		size_t order[MOCK_MAX_SEGS];
		for (size_t i = 0; i < nseg; i++)
			order[i] = i;
		for (size_t i = nseg; i > 1; i--) {
			size_t j = check_rand() % i, x = order[i - 1];
			order[i - 1] = order[j];
			order[j] = x;
		}
		for (size_t i = 0; i < nseg; i++)
			mock_segment(&m, start[order[i]], size[order[i]], PF_R | PF_W);
		size_t len;
		uint8_t *bytes = mock_build(&m, &len);
		struct hs_log log;
		hs_log_init(&log, NULL, false);
		struct hs_core *core = NULL;
		struct hs_error *err = hs_core_open_memory("mock", bytes, len, &log, &core);
		CHECKF(!err && core && core->nsegs == nseg, "round %d: %zu segments", round, nseg);
		if (!err && core) {
			uint64_t probes[4 * MOCK_MAX_SEGS + 64];
			size_t np = 0;
			for (size_t i = 0; i < nseg; i++) {
				probes[np++] = start[i] - 1;
				probes[np++] = start[i];
				probes[np++] = start[i] + size[i] - 1;
				probes[np++] = start[i] + size[i];
			}
			while (np < sizeof(probes) / sizeof(probes[0]))
				probes[np++] = check_rand() % (at + 0x2000);
			for (size_t k = 0; k < np; k++) {
				uint64_t a = probes[k];
				const struct hs_core_segment *want = NULL;
				for (size_t i = 0; i < core->nsegs; i++)
					if (a >= core->segs[i].vaddr &&
					    a - core->segs[i].vaddr < core->segs[i].memsz)
						want = &core->segs[i];
				const struct hs_core_segment *got = hs_core_find_segment(core, a);
				CHECKF(got == want, "round %d, %zu segments: %#llx in segment %td, "
				       "expected %td", round, nseg, (unsigned long long)a,
				       got ? got - core->segs : -1, want ? want - core->segs : -1);
			}
			/* in the probes' order, then sorted (as a scan reads) */
			struct hs_core_near near = {0};
			for (int pass = 0; pass < 2; pass++) {
				if (pass)
					qsort(probes, np, sizeof(probes[0]), cmp_u64);
				for (size_t k = 0; k < np; k++) {
					uint64_t a = probes[k];
					size_t n = k % 3 == 0 ? 8 : 1 + check_rand() % 0x1800;
					const void *got = hs_core_ptr_near(core, &near, a, n);
					CHECKF(got == hs_core_ptr(core, a, n), "round %d: %#llx, %zu bytes "
					       "with a cursor: %p", round, (unsigned long long)a, n, got);
					uint64_t x = 1, y = 2;
					bool okx = hs_core_read_u64_near(core, &near, a, &x);
					bool oky = hs_core_read_u64(core, a, &y);
					CHECKF(okx == oky && (!okx || x == y), "round %d: the word at "
					       "%#llx with a cursor", round, (unsigned long long)a);
				}
			}
		}
		hs_error_destroy(err);
		hs_core_destroy(core);
		hs_log_fini(&log);
		free(bytes);
		mock_free(&m);
	}
}

/* The VmFlags of the mapping that starts at addr, in /proc/self/smaps
 * (into flags); false: not found. */
static bool mapping_flags(const void *addr, char *flags, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	if (!f)
		return false;
	char line[512];
	bool in = false, found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo == (unsigned long)addr;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, n, "%s", line + 8);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The mapped core asks for huge pages (formats/elfcore.c), where the
 * kernel takes the advice at all. */
static void test_huge_advice(void)
{
	size_t len = 4 << 20;
	void *probe = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool offered = probe != MAP_FAILED && madvise(probe, len, MADV_HUGEPAGE) == 0;
	if (probe != MAP_FAILED)
		munmap(probe, len);
	if (!offered) {
		printf("test_huge_advice: skipped, the kernel takes no MADV_HUGEPAGE\n");
		return;
	}
	struct mock_buf b = make_core();
	char *path = write_tmp(&b, b.len);
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_core *core = NULL;
	CHECK(hs_core_open(path, &log, &core) == NULL && core && core->mapped);
	char flags[512] = "";
	if (core)
		CHECK(mapping_flags(core->data, flags, sizeof(flags)) &&
		      strstr(flags, " hg"));
	hs_core_destroy(core);
	hs_log_fini(&log);
	unlink(path);
	free(path);
	free(b.p);
}

int main(void)
{
	test_good();
	test_huge_advice();
	test_find_segment();
	test_truncated();
	test_not_core();
	return check_finish();
}
