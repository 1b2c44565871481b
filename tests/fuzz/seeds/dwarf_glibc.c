/* Seed for fuzz_dwarf: types with the names and members heapsift reads
 * from libc's and ld.so's DWARF (analyzers/alloc/glibc.c, analyzers/roots.c).
 * Only their shapes matter here (typedefs, arrays, nesting, an anonymous
 * union, a TLS variable, a function with locals), not glibc's exact
 * layout.  Built by tests/fuzz/make-seeds.sh. */
#include <stddef.h>
#include <stdint.h>

struct malloc_chunk {
	size_t mchunk_prev_size;
	size_t mchunk_size;
	struct malloc_chunk *fd, *bk;
	struct malloc_chunk *fd_nextsize, *bk_nextsize;
};
typedef struct malloc_chunk *mchunkptr;

struct malloc_state {
	int mutex;
	int flags;
	int have_fastchunks;
	mchunkptr fastbinsY[10];
	mchunkptr top;
	mchunkptr last_remainder;
	mchunkptr bins[254];
	unsigned int binmap[4];
	struct malloc_state *next;
	struct malloc_state *next_free;
	size_t attached_threads;
	size_t system_mem;
	size_t max_system_mem;
};

typedef struct _heap_info {
	struct malloc_state *ar_ptr;
	struct _heap_info *prev;
	size_t size;
	size_t mprotect_size;
	size_t pagesize;
	char pad[8];
} heap_info;

struct malloc_par {
	unsigned long trim_threshold;
	size_t top_pad, mmap_threshold, arena_test, arena_max;
	size_t thp_pagesize, hp_pagesize;
	int hp_flags, n_mmaps, n_mmaps_max, max_n_mmaps, no_dyn_threshold;
	size_t mmapped_mem, max_mmapped_mem;
	char *sbrk_base;
	size_t tcache_bins, tcache_max_bytes, tcache_count;
};

typedef struct tcache_entry {
	struct tcache_entry *next;
	uintptr_t key;
} tcache_entry;

typedef struct tcache_perthread_struct {
	uint16_t counts[64];
	tcache_entry *entries[64];
} tcache_perthread_struct;

struct list_head {
	struct list_head *next, *prev;
};

typedef struct {
	void *tcb;
	void *dtv;
	void *self;
	int multiple_threads;
} tcbhead_t;

struct pthread {
	union {
		tcbhead_t header;
		void *padding[24];
	};
	struct list_head list;
	int tid;
	void *stackblock;
	size_t stackblock_size;
};

struct rtld_global {
	struct list_head _dl_stack_used;
	struct list_head _dl_stack_cache;
};

struct rtld_global_ro {
	size_t _dl_tls_static_size;
};

union hs_seed_word {
	uint64_t u;
	void *p;
};

struct malloc_state main_arena;
struct malloc_par mp_;
__thread tcache_perthread_struct *tcache;
heap_info *first_heap;
struct pthread *threads[2];
struct rtld_global _rtld_global;
struct rtld_global_ro _rtld_global_ro;
union hs_seed_word seed_word;

size_t seed_walk(struct malloc_state *av)
{
	struct malloc_chunk *p = av->top;
	heap_info *h = first_heap;
	size_t n = 0;
	for (; p; p = p->fd)
		n += p->mchunk_size;
	return n + (h ? h->size : 0);
}
