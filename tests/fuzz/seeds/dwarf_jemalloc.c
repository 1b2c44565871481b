/* Seed for fuzz_dwarf: types with the names and members the jemalloc
 * walker reads from a jemalloc built with -g (analyzers/alloc/jemalloc.c,
 * layout_from_dwarf): bit fields, unions, queue links, big arrays.  Their
 * shapes only, not jemalloc's exact layout.  Built by
 * tests/fuzz/make-seeds.sh. */
#include <stddef.h>
#include <stdint.h>

typedef struct edata_s edata_t;
typedef struct arena_s arena_t;

typedef struct {
	uint64_t bitmap[8];
} slab_data_t;

struct edata_s {
	uint64_t e_bits;
	void *e_addr;
	union {
		size_t e_size_esn;
		size_t e_bsize;
	};
	struct {
		edata_t *qre_next, *qre_prev;
	} ql_link;
	union {
		slab_data_t e_slab_data;
		uint64_t e_prof_info[3];
	};
	unsigned state : 3;
	unsigned szind : 8;
};

struct bin_info_s {
	size_t reg_size;
	size_t slab_size;
	uint32_t nregs;
	uint32_t n_shards;
};

typedef struct {
	uintptr_t le_bits;
} rtree_leaf_elm_t;

typedef struct {
	rtree_leaf_elm_t *child;
} rtree_node_elm_t;

struct rtree_s {
	void *base;
	char init_lock[64];
	rtree_node_elm_t root[1 << 18];
};

struct emap_s {
	struct rtree_s rtree;
};

typedef struct cache_bin_s {
	void **stack_head;
	uint64_t nrequests;
	uint16_t low_bits_low_water;
	uint16_t low_bits_full;
	uint16_t low_bits_empty;
} cache_bin_t;

typedef struct cache_bin_array_descriptor_s {
	struct {
		struct cache_bin_array_descriptor_s *qre_next, *qre_prev;
	} link;
	cache_bin_t *bins;
} cache_bin_array_descriptor_t;

typedef struct tcache_slow_s tcache_slow_t;

typedef struct tcache_s {
	tcache_slow_t *tcache_slow;
	cache_bin_t bins[73];
} tcache_t;

struct tcache_slow_s {
	struct {
		tcache_slow_t *qre_next, *qre_prev;
	} link;
	cache_bin_array_descriptor_t cache_bin_array_descriptor;
	arena_t *arena;
	unsigned next_gc_bin;
	void *dyn_alloc;
	tcache_t *tcache;
};

struct tsd_s {
	uint8_t state;
	tcache_t cant_access_tsd_items_directly_use_a_getter_or_setter_tcache;
	arena_t *cant_access_tsd_items_directly_use_a_getter_or_setter_arena;
};

typedef struct base_block_s {
	size_t size;
	struct base_block_s *next;
	edata_t edata;
} base_block_t;

typedef struct base_s {
	unsigned ind;
	base_block_t *blocks;
} base_t;

struct arena_s {
	unsigned nthreads[2];
	unsigned ind;
	struct {
		cache_bin_array_descriptor_t *qlh_first;
	} cache_bin_array_descriptor_ql;
	base_t *base;
};

struct emap_s arena_emap_global;
arena_t *arenas[16];
size_t sz_index2size_tab[232];
struct bin_info_s bin_infos[36];
__thread struct tsd_s tsd_tls;

size_t seed_bins(tcache_t *t, unsigned i)
{
	cache_bin_t *b = &t->bins[i];
	uint16_t n = (uint16_t)(b->low_bits_empty - (uint16_t)(uintptr_t)b->stack_head);
	return n / sizeof(void *);
}
