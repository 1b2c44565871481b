/* Writers of dominator stacks: a gzipped pprof profile (profile.proto) and
 * folded stacks for flamegraph.pl and speedscope.
 *
 * profile.proto, the fields written (github.com/google/pprof, proto/
 * profile.proto):
 *   Profile  1 sample_type (ValueType)   2 sample   4 location   5 function
 *            6 string_table (entry 0 is "")  11 period_type  12 period
 *           14 default_sample_type
 *   ValueType 1 type  2 unit (string indices)
 *   Sample    1 location_id (packed, leaf first)  2 value (packed)
 *   Location  1 id  4 line (Line: 1 function_id)
 *   Function  1 id  2 name  3 system_name
 * Varints for integers, length-delimited for messages, strings and packed
 * fields.  The encoder is a hundred lines: linking a protobuf runtime for
 * one message type would cost more than it saves.
 */
#ifndef HS_PPROF_H
#define HS_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/error.h"

/* What the writers take: stacks interned in a trie of frames, each frame a
 * label and its parent, with the blocks whose stack ends there
 * (analyzers/stacks.h builds them from the dominator tree). */
/* the deepest stack: frames have depth < HS_STACK_DEPTH */
enum { HS_STACK_DEPTH = 64 };

struct hs_stack_frame {
	uint32_t label;         /* index into labels */
	uint32_t parent;        /* frame, or UINT32_MAX for a stack's base */
	uint32_t depth;
	/* blocks whose stack ends here */
	uint64_t count, bytes, leaked_count, leaked_bytes;
};

struct hs_stacks {
	struct hs_stack_frame *frames;
	size_t nframes;
	char **labels;
	size_t nlabels;
};

struct hs_error *hs_pprof_write(const struct hs_stacks *s, const char *path);
struct hs_error *hs_folded_write(const struct hs_stacks *s, const char *path,
				 bool leaked_only);

#endif
