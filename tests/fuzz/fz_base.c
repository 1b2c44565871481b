/* See fz_base.h. */
#include "tests/fuzz/fz_base.h"
#include "tests/fuzz/fz_heap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef HS_FUZZ_BASE_DIR
#define HS_FUZZ_BASE_DIR "tests/fuzz/base"
#endif

/* The walkers size some tables from the core's own counters (glibc's
 * system_mem): a patched counter asks for more than any real heap needs.
 * That must be an allocation failure the library reports (HS_ERR_NOMEM),
 * not a sanitizer abort.  The environment's ASAN_OPTIONS still win. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void load_gz(struct fz_base *b, const char *path)
{
	gzFile gz = gzopen(path, "rb");
	if (!gz)
		die("cannot open the base core %s (set HS_FUZZ_BASE_DIR to the directory of the .core.gz files)",
		    path);
	size_t cap = 1 << 20, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf)
			die("%s: out of memory", path);
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			continue;
		}
		size_t want = cap - n > (1u << 30) ? (1u << 30) : cap - n;
		int r = gzread(gz, buf + n, (unsigned)want);
		if (r < 0)
			die("%s: not a readable gzip file", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	gzclose(gz);
	b->bytes = realloc(buf, n ? n : 1);
	if (!b->bytes)
		die("%s: out of memory", path);
	b->size = n;
}

static bool traced(const uint64_t *trace, uint64_t w)
{
	return trace[w / 64] >> (w % 64) & 1;
}

static bool granule_zero(const uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void add_zone(struct fz_base *b, uint64_t off, uint64_t len, size_t seg)
{
	const struct hs_core_segment *s = &b->core->segs[seg];
	/* cut where 64-byte granules of the file change between all zero and
	 * not all zero */
	uint64_t end = off + len, start = off;
	int prev = -1;
	for (uint64_t g = off; g < end;) {
		uint64_t gend = (g / 64 + 1) * 64;
		if (gend > end)
			gend = end;
		int zero = granule_zero(b->bytes + g, gend - g);
		if (prev >= 0 && zero != prev) {
			struct fz_zone *z = realloc(b->zones, (b->nzones + 1) * sizeof(*z));
			if (!z)
				die("out of memory");
			b->zones = z;
			b->zones[b->nzones++] = (struct fz_zone){
				start, g - start, s->vaddr + (start - s->offset), seg};
			start = g;
		}
		prev = zero;
		g = gend;
	}
	struct fz_zone *z = realloc(b->zones, (b->nzones + 1) * sizeof(*z));
	if (!z)
		die("out of memory");
	b->zones = z;
	b->zones[b->nzones++] = (struct fz_zone){
		start, end - start, s->vaddr + (start - s->offset), seg};
}

/* Runs of read words, segment by segment. */
static void make_zones(struct fz_base *b, const uint64_t *trace)
{
	for (size_t i = 0; i < b->core->nsegs; i++) {
		const struct hs_core_segment *s = &b->core->segs[i];
		if (!s->avail)
			continue;
		uint64_t lo = s->offset, hi = s->offset + s->avail;
		uint64_t run = 0;
		bool in = false;
		for (uint64_t w = lo / 8; w * 8 < hi; w++) {
			uint64_t ws = w * 8 < lo ? lo : w * 8;
			if (traced(trace, w)) {
				if (!in)
					run = ws;
				in = true;
			} else if (in) {
				add_zone(b, run, ws - run, i);
				in = false;
			}
		}
		if (in)
			add_zone(b, run, hi - run, i);
	}
}

static volatile uint64_t sink;

void fz_base_load(struct fz_base *b, const char *file, fz_walk_fn walk)
{
	const char *dir = getenv("HS_FUZZ_BASE_DIR");
	if (!dir || !*dir)
		dir = HS_FUZZ_BASE_DIR;
	size_t len = strlen(dir) + strlen(file) + 2;
	char *path = malloc(len);
	if (!path)
		die("out of memory");
	snprintf(path, len, "%s/%s", dir, file);
	memset(b, 0, sizeof(*b));
	b->name = path;
	b->walk = walk;
	load_gz(b, path);
	hs_log_init(&b->log, NULL, false);
	struct hs_error *err = hs_core_open_memory(path, b->bytes, b->size, &b->log,
						   &b->core);
	if (err)
		die("%s", err->message);
	struct hs_dwarf_options o = {0};
	if ((err = hs_dwarf_create(b->core, &o, &b->log, &b->dw)))
		die("%s: %s", path, err->message);

	uint64_t *trace = calloc(b->size / 512 + 2, sizeof(uint64_t));
	if (!trace)
		die("out of memory");
	b->core->trace = trace;
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_heap *heap;
	err = walk(b->core, b->dw, &log, NULL, &heap);
	b->core->trace = NULL;
	if (err)
		die("%s: the walk of the base core fails (is the allocator's debug info or library installed?): %s",
		    path, err->message);
	b->clean_blocks = heap->nallocs;
	if (!heap->nallocs)
		die("%s: the walk of the base core finds no block", path);
	hs_heap_destroy(heap);
	hs_log_fini(&log);
	make_zones(b, trace);
	free(trace);
	if (!b->nzones)
		die("%s: the walk read nothing", path);
	if (getenv("HS_FUZZ_ZONES")) {
		fprintf(stderr, "%s: %zu blocks, %zu zones\n", path, b->clean_blocks,
			b->nzones);
		for (size_t i = 0; i < b->nzones; i++)
			fprintf(stderr, "  zone %zu: %#llx +%llu (file %#llx)\n", i,
				(unsigned long long)b->zones[i].vaddr,
				(unsigned long long)b->zones[i].len,
				(unsigned long long)b->zones[i].off);
	}
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Writes n bytes at file offset off, clipped to the end of the segment's
 * file data, remembering what was there. */
static void put(struct fz_base *b, uint64_t off, uint64_t seg_end,
		const void *src, uint32_t n)
{
	if (!n || off >= seg_end || b->nundo == FZ_MAX_RECORDS)
		return;
	if (n > seg_end - off)
		n = (uint32_t)(seg_end - off);
	struct fz_undo *u = &b->undo[b->nundo++];
	u->off = off;
	u->len = n;
	memcpy(u->bytes, b->bytes + off, n);
	memcpy(b->bytes + off, src, n);
}

static void patch(struct fz_base *b, const uint8_t *p, size_t n)
{
	while (n >= 7 && b->nundo < FZ_MAX_RECORDS) {
		unsigned op = p[0] & 3;
		int words = ((p[0] >> 2) ^ 32) - 32;  /* -32 .. 31 */
		const struct fz_zone *z = &b->zones[get16(p + 1) % b->nzones];
		int64_t at = (int64_t)(get32(p + 3) % z->len) + 8 * words;
		p += 7;
		n -= 7;
		/* the op's own bytes */
		size_t need = op == 0 ? 1 : op == 3 ? 3 : 7;
		if (n < need)
			break;
		size_t len = 0;
		if (op == 0) {
			len = p[0] % 32u + 1;
			if (len > n - 1)
				len = n - 1;
			need += len;
		}
		const uint8_t *arg = p;
		p += need;
		n -= need;
		const struct hs_core_segment *s = &b->core->segs[z->seg];
		uint64_t seg_end = s->offset + s->avail;
		uint64_t off = z->off + (uint64_t)at, vaddr = z->vaddr + (uint64_t)at;
		if (op) {
			/* word ops: the place's aligned word */
			off -= vaddr & 7;
			vaddr -= vaddr & 7;
		}
		if (off < s->offset || off >= seg_end)
			continue;  /* moved out of the segment: skipped */
		if (op == 0) {
			put(b, off, seg_end, arg + 1, (uint32_t)len);
		} else if (op == 1 || op == 2) {
			const struct fz_zone *t = &b->zones[get16(arg) % b->nzones];
			uint64_t target = t->vaddr + get32(arg + 2) % t->len +
					  (uint64_t)(int64_t)(int8_t)arg[6];
			uint64_t v = op == 1 ? target : (vaddr >> 12) ^ target;
			put(b, off, seg_end, &v, 8);
		} else {
			unsigned shift = arg[0] % 64u;
			int16_t delta = (int16_t)get16(arg + 1);
			uint64_t v = 0;
			uint64_t have = seg_end - off < 8 ? seg_end - off : 8;
			memcpy(&v, b->bytes + off, have);
			v += (uint64_t)(int64_t)delta << shift;
			put(b, off, seg_end, &v, (uint32_t)have);
		}
	}
}

static void undo(struct fz_base *b)
{
	while (b->nundo) {
		const struct fz_undo *u = &b->undo[--b->nundo];
		memcpy(b->bytes + u->off, u->bytes, u->len);
	}
}

void fz_base_run(struct fz_base *bases, size_t nbases, const uint8_t *data,
		 size_t size)
{
	if (!size)
		return;
	struct fz_base *b = &bases[data[0] % nbases];
	patch(b, data + 1, size - 1);
	struct hs_log log;
	hs_log_init(&log, NULL, false);
	struct hs_heap *heap = NULL;
	struct hs_error *err = b->walk(b->core, b->dw, &log, NULL, &heap);
	if (getenv("HS_FUZZ_VERBOSE")) {
		/* what an input does, for reading a corpus */
		fprintf(stderr, "%s: %zu writes; %s%s\n", b->name, b->nundo,
			err ? "error: " : "walked", err ? err->message : "");
		if (heap)
			fprintf(stderr, "  %zu blocks (%zu in the clean core), %zu arenas%s\n",
				heap->nallocs, b->clean_blocks, heap->narenas,
				heap->partial ? ", partial" : "");
		for (size_t i = 0; i < log.nkept; i++)
			fprintf(stderr, "  warning: %s\n", log.kept[i]);
	}
	if (!err) {
		/* sorted by address, known places */
		sink += fz_heap_check(heap, "fuzz", FZ_HEAP_ORDER);
		hs_heap_destroy(heap);
	} else {
		sink += err->code;
		hs_error_destroy(err);
	}
	sink += log.nwarnings;
	hs_log_fini(&log);
	undo(b);
}
