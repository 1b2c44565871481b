/* Heap summaries: a small JSON document of one core's analysis, without
 * the program's data, that heapdiff compares as it compares cores.
 *
 * The document (docs/json.md, "heapsift summary") has a top-level
 * "format": "heapsift-summary" and "version": HS_SUMMARY_VERSION.  It
 * holds figures and names only: totals, the rows of `types` and `top`,
 * used blocks per size, the largest dominators (labelled by type), frag's
 * figures, the allocator's own counters, the core's time, pid and the
 * modules' build-ids.  Names are those the program's code and debug info
 * give (DWARF, vtables, symbols, CPython's tp_name), never bytes read from
 * a block's contents.  Every list is cut at a number of rows and at a
 * number of bytes of names (the HS_SUMMARY_ limits below; a byte JSON may
 * escape counts as its longest escape), so the document stays a few
 * hundred KB whatever the heap (under 600 KB at the very worst: every
 * list full, every name budget spent); a list that was cut says so
 * ("<list>_truncated": true, "<list>_total": rows before the cut).
 *
 * Reading one back (hs_summary_parse) trusts nothing: the file may be
 * truncated, another JSON document, another version, or crafted.  Only
 * what heapdiff needs is read, and every field of it is checked.
 */
#ifndef HS_SUMMARY_FILE_H
#define HS_SUMMARY_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "analyzers/diff.h"
#include "src/error.h"
#include "src/snapshot.h"

#define HS_SUMMARY_FORMAT "heapsift-summary"

enum {
	HS_SUMMARY_VERSION = 1,
	/* rows of each list, and bytes of the names in it */
	HS_SUMMARY_MAX_TYPES = 500,
	HS_SUMMARY_MAX_ROOTS = 500,
	HS_SUMMARY_MAX_DOMINATORS = 200,
	HS_SUMMARY_MAX_SIZES = 256,
	HS_SUMMARY_MAX_MODULES = 256,
	HS_SUMMARY_MAX_ARENAS = 16,     /* frag's arenas, the largest */
	HS_SUMMARY_NAME_BYTES = 64 * 1024,
	/* a file larger than this is no summary heapsift wrote */
	HS_SUMMARY_MAX_FILE = 16 * 1024 * 1024,
};

/* Writes the summary of snap to f (analyzing the core as far as the
 * dominators and types).  Write errors are f's (ferror) to check. */
struct hs_error *hs_summary_write(struct hs_snapshot *snap, FILE *f);

/* A summary read back. */
struct hs_summary {
	struct hs_diff_rows *rows;
	char *exe_build_id;     /* the executable's build-id, or NULL */
	uint64_t types_total, roots_total;      /* rows before the cut */
};

/* Does the file at path look like a summary (JSON: its first byte that
 * is not blank is '{' or '[') rather than a core?  False when it cannot be read:
 * the core reader then says why. */
bool hs_summary_is(const char *path);

/* Reads and checks the summary at path (name in messages). */
struct hs_error *hs_summary_read(const char *path, struct hs_summary **ret);
/* The same for a document in memory; name stands for its path. */
struct hs_error *hs_summary_parse(const char *name, const char *data,
				  size_t len, struct hs_summary **ret);
void hs_summary_destroy(struct hs_summary *s);

#endif
