/* libstdc++'s containers, as the heap holds them: every std::vector,
 * std::string with its buffer on the heap, std::unordered_{map,set}
 * (and multi), std::{map,set} (and multi) and std::deque inside a typed
 * root (a global, static, TLS or frame variable) or a typed block
 * (analyzers/types), found through the types' DWARF layouts
 * (hs_dtype_containers), each once.
 *
 * What is read of each one (libstdc++, GCC 5's ABI onwards; the
 * container's size is checked against the layout first):
 *   vector     _M_start, _M_finish, _M_end_of_storage (0, 8, 16): the
 *              buffer must be a used block, [start, end of storage) in it
 *   string     _M_p, _M_string_length, _M_allocated_capacity (0, 8, 16):
 *              counted only when _M_p is not the inline buffer (+16); the
 *              buffer (capacity + 1 characters) must be a used block
 *   hash       _M_buckets, _M_bucket_count, _M_before_begin._M_nxt,
 *              _M_element_count (0, 8, 16, 24); _M_single_bucket at 48.
 *              The node list is walked (_M_element_count steps, each a
 *              used block holding a node, then null) to check the count;
 *              the walks of one pass take at most 2 steps per block of
 *              the heap in all, and a table past that fails its checks
 *   tree       _M_header._M_parent (16) and _M_node_count (40): a root
 *              block when there are nodes, none when there are not
 *   deque      _M_map, _M_map_size, _M_start and _M_finish (iterators of
 *              cur, first, last, node): both nodes inside the map, which
 *              must be a used block; chunks of 512 bytes (one element when
 *              it is larger), as __deque_buf_size
 * A container that fails these checks is counted as invalid, not in its
 * type's row.
 *
 * Per container type: how many, a histogram of their element counts
 * (0, 1, 2-4, 5-8, 9-16, ..., powers of two), the bytes of their elements
 * (size * sizeof T; a node-based container's nodes: size * sizeof node),
 * of unused capacity (vector, string: (capacity - size) * sizeof T;
 * deque: the chunks' free slots), of bucket arrays (a hash table's
 * buckets unless it uses its single inline one; a deque's map), and for
 * N in 1, 2, 4, 8, 16 the containers of at most N elements (empty ones
 * included) with the bytes of elements and unused capacity they hold on
 * the heap: what a variant with N elements inline would no longer
 * allocate.
 */
#ifndef HS_CONTAINERS_H
#define HS_CONTAINERS_H

#include "analyzers/graph.h"
#include "analyzers/types.h"
#include "formats/dwarf.h"

enum {
	HS_CX_BUCKETS = 66,     /* 0, 1, then (2^(k-1), 2^k] from 2-4 */
	HS_CX_NSBO = 5,         /* N = 1, 2, 4, 8, 16 */
};

struct hs_container_row {
	const char *name;       /* the container's type (the registry's) */
	uint8_t kind;           /* enum hs_dcontainer_kind */
	uint32_t type;          /* registry index */
	uint64_t count;
	uint64_t elements;      /* elements in all */
	uint64_t hist[HS_CX_BUCKETS];
	uint64_t element_bytes, unused_bytes, bucket_bytes;
	uint64_t sbo_count[HS_CX_NSBO], sbo_bytes[HS_CX_NSBO];
};

struct hs_containers {
	struct hs_container_row *rows;  /* most bytes first */
	size_t nrows;
	uint64_t count;         /* containers in the rows */
	uint64_t invalid;       /* found, but failing the checks above */
	uint64_t inline_strings; /* strings in their inline buffer: not counted */
	uint64_t roots, blocks; /* typed roots and blocks looked into */
};

/* Which histogram bucket n elements fall in, and that bucket's bounds. */
unsigned hs_cx_bucket(uint64_t n);
void hs_cx_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi);
/* The small-buffer sizes: 1, 2, 4, 8, 16. */
static inline uint64_t hs_cx_sbo_size(unsigned k)
{
	return 1ull << k;
}
const char *hs_cx_kind_name(uint8_t kind);
/* The name without libstdc++'s defaulted arguments: "std::map<int, long>",
 * "std::vector<std::string>". */
void hs_cx_short_name(const char *name, char *buf, size_t len);

struct hs_error *hs_containers_compute(const struct hs_core *core,
				       struct hs_dwarf *dw,
				       const struct hs_heap *heap,
				       const struct hs_graph *graph,
				       const struct hs_types *types,
				       struct hs_containers **ret);
void hs_containers_destroy(struct hs_containers *c);

#endif
