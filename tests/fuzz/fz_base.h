/* Patching a real core in place, for the allocator walkers' harnesses
 * (fuzz_glibc, fuzz_jemalloc).
 *
 * A base core (tests/fuzz/base/NAME.core.gz, a gcore of a fixture) is
 * loaded once, opened with hs_core_open_memory() over a private writable
 * copy, and walked once with the core's read trace on: the 8-byte words of
 * the file that the walker read are its "zones" (runs of consecutive read
 * words within one segment, cut where 64-byte granules turn from zero to
 * non-zero and back, so a mostly empty extent-map node does not hide its
 * few entries).  Each input is then a list of patches over the zones,
 * applied to the copy, walked, and undone.
 *
 * Input format (little endian):
 *
 *   u8 base                  which base core (mod the harness's count)
 *   then records, until one does not fit in what is left:
 *   u8 op                    bits 0-1: the op; bits 2-7, signed: a move of
 *                            -32 .. 31 words from the place below
 *   u16 zone                 mod the number of zones
 *   u32 offset               mod the zone's length: the place (plus the move)
 *   op 0, bytes:   u8 n, then (n % 32) + 1 bytes written at the place
 *   op 1, pointer: u16 zone2, u32 offset2, i8 delta: the address
 *                  zone2 + offset2 % its length + delta (a chunk starts 8
 *                  or 16 bytes before the words the walker reads) written
 *                  as 8 bytes at the place, aligned down to 8
 *   op 2, linked:  the same, safe-linked as glibc stores tcache and
 *                  fastbin links: (&field >> 12) ^ address
 *   op 3, add:     u8 shift, i16 delta: the u64 at the place (aligned
 *                  down to 8) gets delta << (shift % 64) added
 *
 * A write never leaves the segment's file data; at most 256 records are
 * applied.  A corpus entry means the same thing as long as the base core
 * file and the walker's reads of the clean core are unchanged (the zones
 * come from that walk: docs/testing.md, "Fuzzing"). */
#ifndef HS_FZ_BASE_H
#define HS_FZ_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzers/alloc/heap.h"
#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "src/log.h"

typedef struct hs_error *(*fz_walk_fn)(const struct hs_core *core,
				       struct hs_dwarf *dw, struct hs_log *log,
				       const struct hs_walk_options *opts,
				       struct hs_heap **ret);

struct fz_zone {
	uint64_t off, len;      /* in the file */
	uint64_t vaddr;
	size_t seg;
};

struct fz_undo {
	uint64_t off;
	uint32_t len;
	uint8_t bytes[32];
};

enum { FZ_MAX_RECORDS = 256 };

struct fz_base {
	char *name;
	uint8_t *bytes;         /* the core, patched in place */
	size_t size;
	struct hs_log log;      /* the open's and libdwfl's warnings */
	struct hs_core *core;
	struct hs_dwarf *dw;
	fz_walk_fn walk;
	struct fz_zone *zones;
	size_t nzones;
	struct fz_undo undo[FZ_MAX_RECORDS];
	size_t nundo;
	size_t clean_blocks;    /* what the clean walk found */
};

/* Loads tests/fuzz/base/FILE ($HS_FUZZ_BASE_DIR overrides the directory),
 * walks it with the trace on and makes its zones.  Exits with a message
 * when that fails: a harness without its base core tests nothing. */
void fz_base_load(struct fz_base *b, const char *file, fz_walk_fn walk);

/* One input: data[0] picks the base, the rest are records.  Applies them,
 * walks, checks the block table's order, frees it and undoes the patches. */
void fz_base_run(struct fz_base *bases, size_t nbases, const uint8_t *data,
		 size_t size);

#endif
