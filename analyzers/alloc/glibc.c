/* glibc ptmalloc walker.
 *
 * Layouts come from the DWARF of libc's debug file (glibc malloc/malloc.c,
 * malloc/arena.c), else from the row of formats/gllayout.c for the libc's
 * release; main_arena, mp_ and the tcache TLS variable from libc's symbol
 * table, else from the code of its exported functions (capstone), each
 * candidate accepted only when the core's memory agrees.  The constants
 * below are glibc's own, not layouts.
 *
 * Two stages: discover() finds all of that in the core's modules, then
 * walk() reads the heap from it, and from the core's memory only.
 * hs_glibc_walk_known runs walk() alone, on what its caller knows (a
 * layout row, main_arena's and mp_'s addresses, the tcache's TLS offset):
 * tests/unit/test_glibc.c walks hand-built heaps that way.
 *
 *   arena (struct malloc_state)         chunk (struct malloc_chunk)
 *     fastbinsY[NFASTBINS]  heads         +0  mchunk_prev_size (belongs to
 *     top                                      the previous chunk when that
 *     bins[NBINS*2-2]  fd/bk pairs             one is in use)
 *     next  ->  ring of arenas            +8  mchunk_size | A|M|P flag bits
 *     system_mem                          +16 fd  (user memory starts here)
 *                                         +24 bk ...
 *   main arena: one heap from mp_.sbrk_base up to the top chunk's end.
 *   other arenas: heaps of heap_max bytes, aligned to heap_max; a heap_info
 *   at the start of each (ar_ptr, prev, size), the first one followed by the
 *   arena itself.  The top chunk lies in the newest heap.
 *
 * A chunk is in use when the next chunk has PREV_INUSE, except chunks in
 * fastbins and thread caches, which keep the bit set.  Fastbin fd and tcache
 * next pointers are safe-linked (glibc >= 2.32): stored = (&field >> 12) ^ p.
 */
#include "analyzers/alloc/disasm.h"
#include "analyzers/alloc/glibc.h"
#include "formats/gllayout.h"
#include "src/alloc.h"
#include "src/fmt.h"
#include "src/hashtab.h"
#include "src/vector.h"
#include "src/sort.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	PREV_INUSE = 1,
	IS_MMAPPED = 2,
	NON_MAIN_ARENA = 4,
	SIZE_BITS = 7,
	MINSIZE = 32,
	ALIGN = 16,
	NONCONTIGUOUS_BIT = 2,
	MAX_ARENAS = 1 << 16,
	MAX_HEAPS_PER_ARENA = 1 << 16,
};
#define HEAP_MAX_DEFAULT (64ull << 20)  /* 2 * DEFAULT_MMAP_THRESHOLD_MAX */

static const struct hs_place places[HS_WHERE_MAX];

/* ---- chunks by address, with where they are (src/hashtab.h) ---- */
HS_HASH_MAP(chunkset, uint8_t)

/* Records chunk with where (the first where stays); *fresh: it was new.
 * 0 is no chunk: nothing is recorded, and it counts as new. */
static struct hs_error *set_add(struct chunkset *s, uint64_t chunk,
				uint8_t where, bool *fresh)
{
	*fresh = true;
	if (!chunk)
		return NULL;
	uint8_t *v;
	struct hs_error *err = chunkset_insert(s, chunk, &v, fresh);
	if (!err && *fresh)
		*v = where;
	return err;
}

/* ---- the special chunks: fastbins, thread caches and their structs ---- */

/* The chunks the lists name, each once, with where the first list that
 * named it says it is.  A heap can have hundreds of thousands of free
 * fastbin chunks, met in list order all over the heap; the walk then asks
 * about every chunk in address order.  So a 16-aligned chunk of a
 * segment's file data is 2 bits per 16 bytes of the segment (a map of
 * 1/64 of the segment, made when a chunk in it is first added): not in a
 * list, fastbin, tcache or internal.  A chunk no map covers (misaligned,
 * or outside the file's data) goes to a hash table with its where. */
struct specials {
	const struct hs_core *core;
	uint64_t **map;         /* per core segment, NULL until needed */
	size_t last_seg;        /* the segment of the last chunk looked at */
	struct chunkset other;  /* chunks no map covers */
};

/* where as 2 bits of a map (0: not special), and back */
static unsigned special_code(uint8_t where)
{
	return where == HS_GL_FASTBIN ? 1 : where == HS_GL_TCACHE ? 2 :
	       where == HS_GL_INTERNAL ? 3 : 0;
}
static const uint8_t special_where[4] = {
	0, HS_GL_FASTBIN, HS_GL_TCACHE, HS_GL_INTERNAL,
};

static void specials_free(struct specials *s)
{
	for (size_t i = 0; s->map && i < s->core->nsegs; i++)
		free(s->map[i]);
	free(s->map);
	s->map = NULL;
	chunkset_free(&s->other);
}

/* The segment whose map covers chunk (*seg, its index): chunk is 16-aligned
 * and in the segment's file data.  False: none does. */
static bool specials_seg(struct specials *s, uint64_t chunk, size_t *seg)
{
	const struct hs_core *core = s->core;
	if (chunk & (ALIGN - 1))
		return false;
	size_t i = s->last_seg;
	if (i >= core->nsegs || chunk - core->segs[i].vaddr >= core->segs[i].avail) {
		const struct hs_core_segment *sg = hs_core_find_segment(core, chunk);
		if (!sg || chunk - sg->vaddr >= sg->avail)
			return false;
		i = s->last_seg = (size_t)(sg - core->segs);
	}
	*seg = i;
	return true;
}

/* The 2 bits of the chunk off bytes into a segment, in its map. */
static unsigned map_get(const uint64_t *map, uint64_t off)
{
	uint64_t k = off / ALIGN;
	return (unsigned)(map[k / 32] >> (k % 32 * 2)) & 3;
}

/* set_add for the special chunks (where: fastbin, tcache or internal). */
static struct hs_error *specials_add(struct specials *s, uint64_t chunk,
				     uint8_t where, bool *fresh)
{
	*fresh = true;
	if (!chunk)
		return NULL;
	size_t i;
	unsigned code = special_code(where);
	if (code && specials_seg(s, chunk, &i)) {
		const struct hs_core_segment *sg = &s->core->segs[i];
		if (!s->map && !(s->map = hs_calloc(s->core->nsegs, sizeof(*s->map))))
			return &hs_error_nomem;
		if (!s->map[i] &&
		    !(s->map[i] = hs_zalloc_written((sg->avail / (ALIGN * 32) + 1) *
						    sizeof(uint64_t))))
			return &hs_error_nomem;
		uint64_t k = (chunk - sg->vaddr) / ALIGN;
		uint64_t *w = &s->map[i][k / 32];
		unsigned shift = k % 32 * 2;
		*fresh = !((*w >> shift) & 3);
		if (*fresh)
			*w |= (uint64_t)code << shift;
		return NULL;
	}
	uint8_t *v;
	struct hs_error *err = chunkset_insert(&s->other, chunk, &v, fresh);
	if (!err && *fresh)
		*v = where;
	return err;
}

/* Where the lists say chunk is, or -1: in none. */
static int specials_find(struct specials *s, uint64_t chunk)
{
	size_t i;
	if (specials_seg(s, chunk, &i)) {
		const uint64_t *map = s->map ? s->map[i] : NULL;
		unsigned code = map ? map_get(map, chunk - s->core->segs[i].vaddr) : 0;
		return code ? special_where[code] : -1;
	}
	const uint8_t *v = chunkset_find(&s->other, chunk);
	return v ? *v : -1;
}

/* ---- the walker ---- */

struct range {
	uint64_t start, end;
};
HS_VECTOR(ranges, struct range)

struct gl {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	struct hs_log *log;
	struct hs_module *libc;
	struct hs_heap *heap;

	/* struct malloc_state */
	uint64_t ms_size, ms_flags, ms_fastbins, nfastbins, ms_top, ms_bins,
		nbins, ms_next, ms_system_mem, ms_attached;
	/* struct malloc_chunk */
	uint64_t mc_size, mc_fd, mc_bk;
	/* heap_info */
	uint64_t hi_sizeof, hi_ar_ptr, hi_prev, hi_size;
	/* struct malloc_par */
	uint64_t mp_sbrk_base, mp_n_mmaps, mp_mmapped_mem, mp_hp_pagesize,
		mp_mmap_threshold;
	bool has_hp_pagesize;
	/* tcache_perthread_struct */
	uint64_t tc_counts, tc_count_size, tc_entries, tc_nbins;
	bool has_tcache;

	uint64_t tc_sizeof;
	bool safe_linking;            /* glibc >= 2.32 */

	uint64_t main_arena, mp, mp_sizeof;
	bool tpoff_known;             /* tcache's offset from the thread pointer */
	int64_t tpoff;
	uint64_t heap_max;
	uint64_t page;

	struct specials special;      /* fastbin/tcache/internal chunks */
	/* per arena: the chunks the walk found in bins and in fastbins
	 * (cross_check); NULL when there was no memory for them */
	uint64_t *walked_bin, *walked_fast;
	struct ranges covered;        /* arena heaps, stacks: not scanned */
	size_t covered_sorted;        /* covered.v[0, this) is sorted and
				       * disjoint (covered() makes it so) */
	uint64_t walk_top_seen;
};

static struct hs_error *layout_member(struct gl *g, const struct hs_layout *l,
				      const char *member, uint64_t *off,
				      uint64_t *size)
{
	(void)g;
	return hs_layout_member(l, member, off, size);
}

/* malloc's types, as malloc.c was compiled with them (the unit that
 * defines them first in glibc's DWARF: reading the hundreds of units
 * before it for their types took 18 ms of libc 2.36's) */
static struct hs_error *libc_layout(struct gl *g, const char *name,
				    const struct hs_layout **l)
{
	return hs_dwarf_layout_unit(g->dw, g->libc, "malloc.c", name, l);
}

static struct hs_error *load_layouts(struct gl *g)
{
	struct hs_error *err;
	const struct hs_layout *ms, *mc, *hi, *mp, *tc;
	uint64_t sz;
	if ((err = libc_layout(g, "struct malloc_state", &ms)) ||
	    (err = libc_layout(g, "struct malloc_chunk", &mc)) ||
	    (err = libc_layout(g, "heap_info", &hi)) ||
	    (err = libc_layout(g, "struct malloc_par", &mp)))
		return err;
	g->ms_size = ms->size;
	g->hi_sizeof = hi->size;
	g->mp_sizeof = mp->size;
	if ((err = layout_member(g, ms, "flags", &g->ms_flags, NULL)) ||
	    (err = layout_member(g, ms, "fastbinsY", &g->ms_fastbins, &sz)))
		return err;
	g->nfastbins = sz / 8;
	if ((err = layout_member(g, ms, "top", &g->ms_top, NULL)) ||
	    (err = layout_member(g, ms, "bins", &g->ms_bins, &sz)))
		return err;
	g->nbins = sz / 16 + 1;  /* bins[NBINS * 2 - 2] */
	if ((err = layout_member(g, ms, "next", &g->ms_next, NULL)) ||
	    (err = layout_member(g, ms, "system_mem", &g->ms_system_mem, NULL)) ||
	    (err = layout_member(g, ms, "attached_threads", &g->ms_attached, NULL)) ||
	    (err = layout_member(g, mc, "mchunk_size", &g->mc_size, NULL)) ||
	    (err = layout_member(g, mc, "fd", &g->mc_fd, NULL)) ||
	    (err = layout_member(g, mc, "bk", &g->mc_bk, NULL)) ||
	    (err = layout_member(g, hi, "ar_ptr", &g->hi_ar_ptr, NULL)) ||
	    (err = layout_member(g, hi, "prev", &g->hi_prev, NULL)) ||
	    (err = layout_member(g, hi, "size", &g->hi_size, NULL)) ||
	    (err = layout_member(g, mp, "sbrk_base", &g->mp_sbrk_base, NULL)) ||
	    (err = layout_member(g, mp, "n_mmaps", &g->mp_n_mmaps, NULL)) ||
	    (err = layout_member(g, mp, "mmapped_mem", &g->mp_mmapped_mem, NULL)) ||
	    (err = layout_member(g, mp, "mmap_threshold", &g->mp_mmap_threshold, NULL)))
		return err;
	if (g->mc_fd != 16 || g->mc_size != 8)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "unexpected struct malloc_chunk layout (fd at %llu)",
				       (unsigned long long)g->mc_fd);
	/* glibc 2.35 added hp_pagesize; heaps are 4 huge pages when it is set. */
	err = layout_member(g, mp, "hp_pagesize", &g->mp_hp_pagesize, NULL);
	g->has_hp_pagesize = !err;
	if (err && !hs_error_catch(&err, HS_ERR_NOT_FOUND))
		return err;
	/* tcache exists since 2.26 */
	err = libc_layout(g, "tcache_perthread_struct", &tc);
	if (!err) {
		uint64_t csz, esz;
		if ((err = layout_member(g, tc, "counts", &g->tc_counts, &csz)) ||
		    (err = layout_member(g, tc, "entries", &g->tc_entries, &esz)))
			return err;
		g->tc_nbins = esz / 8;
		g->tc_count_size = g->tc_nbins ? csz / g->tc_nbins : 0;
		g->tc_sizeof = tc->size;
		if (g->tc_count_size != 1 && g->tc_count_size != 2)
			return hs_error_create(HS_ERR_UNSUPPORTED,
					       "unexpected tcache_perthread_struct layout");
		g->has_tcache = true;
	} else if (!hs_error_catch(&err, HS_ERR_NOT_FOUND)) {
		return err;
	}
	return NULL;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Safe-linking (glibc >= 2.32): REVEAL_PTR. */
static uint64_t reveal(const struct gl *g, uint64_t field_addr,
		       uint64_t stored)
{
	return g->safe_linking ? (field_addr >> 12) ^ stored : stored;
}

/* Upper bound for list walks: no list holds more chunks than fit in the
 * dumped memory. */
static uint64_t list_bound(const struct hs_core *core)
{
	uint64_t total = 0;
	for (size_t i = 0; i < core->nsegs; i++)
		total += core->segs[i].memsz;
	return total / MINSIZE + 1;
}

struct arena_stats {
	uint64_t nfast, fastavail, nblocks, avail;
};

/* One fastbin as read from the core, before its chunks are recorded. */
struct fb_node {
	uint64_t p, size;
};
HS_VECTOR(fb_nodes, struct fb_node)

enum fb_end {
	FB_END_NULL,            /* the list ends */
	FB_END_MISALIGNED,      /* at a misaligned chunk (end_at) */
	FB_END_ABSENT,          /* at a chunk not in the core (end_at) */
	FB_END_LOOP,            /* the last node was met before in this list,
				 * or there are more than the bound */
};

struct fb_list {
	struct fb_nodes nodes;
	enum fb_end end;
	uint64_t end_at;
	uint64_t next;          /* the next chunk to read (while reading) */
	uint64_t saved, power, steps;  /* Brent's cycle check */
	bool active;
};

/* Reads the chunk at l->next into l: its size and the next chunk, or the
 * end of the list.  Asks for the next chunk's header to be fetched: the
 * lists are read side by side, each a chain of dependent loads all over
 * the heap, so one list's miss is waited for while the others go on. */
static struct hs_error *fb_step(struct gl *g, struct fb_list *l, uint64_t bound)
{
	uint64_t p = l->next, size, fd;
	if (!p) {
		l->end = FB_END_NULL;
		l->active = false;
		return NULL;
	}
	if (p & (ALIGN - 1)) {
		l->end = FB_END_MISALIGNED;
		l->end_at = p;
		l->active = false;
		return NULL;
	}
	const uint8_t *h = g->mc_fd == g->mc_size + 8 ?
		hs_core_ptr(g->core, p + g->mc_size, 16) : NULL;
	if (h) {
		memcpy(&size, h, 8);
		memcpy(&fd, h + 8, 8);
		hs_core_touch(g->core, p + g->mc_size, 16);
	} else if (!hs_core_read_u64(g->core, p + g->mc_size, &size) ||
		   !hs_core_read_u64(g->core, p + g->mc_fd, &fd)) {
		l->end = FB_END_ABSENT;
		l->end_at = p;
		l->active = false;
		return NULL;
	}
	struct hs_error *err = fb_nodes_push(&l->nodes, (struct fb_node){p, size});
	if (err)
		return err;
	/* a loop: this chunk again (Brent), or more chunks than the core
	 * holds; recording the list meets the repeated chunk again by then
	 * and cuts it there */
	bool loop = p == l->saved || l->nodes.n > bound;
	if (++l->steps == l->power) {
		l->saved = p;
		l->power *= 2;
		l->steps = 0;
	}
	if (loop) {
		l->end = FB_END_LOOP;
		l->active = false;
		return NULL;
	}
	l->next = reveal(g, p + g->mc_fd, fd);
	const uint8_t *n = l->next && !(l->next & (ALIGN - 1)) ?
		hs_core_ptr(g->core, l->next + g->mc_size, 8) : NULL;
	if (n)
		__builtin_prefetch(n);
	return NULL;
}

/* Fastbins: collect their chunks (free despite PREV_INUSE) and count them
 * as int_mallinfo does.  The lists are read first, side by side
 * (fb_step), then recorded one after the other, which is what decides
 * which chunk a loop or a chunk in two lists is reported at. */
static struct hs_error *read_fastbins(struct gl *g, uint64_t arena,
				      const uint8_t *buf, size_t idx,
				      struct arena_stats *st)
{
	uint64_t bound = list_bound(g->core);
	struct hs_error *err = NULL;
	struct fb_list *lists = hs_calloc(g->nfastbins ? g->nfastbins : 1,
				       sizeof(*lists));
	if (!lists)
		return &hs_error_nomem;
	size_t active = 0;
	for (uint64_t i = 0; i < g->nfastbins; i++) {
		struct fb_list *l = &lists[i];
		memcpy(&l->next, buf + g->ms_fastbins + 8 * i, 8);
		l->power = 1;
		l->active = true;
		active++;
	}
	while (active) {
		active = 0;
		for (uint64_t i = 0; i < g->nfastbins; i++) {
			if (!lists[i].active)
				continue;
			if ((err = fb_step(g, &lists[i], bound)))
				goto out;
			active += lists[i].active;
		}
	}
	for (uint64_t i = 0; i < g->nfastbins; i++) {
		const struct fb_list *l = &lists[i];
		bool cut = false;
		for (size_t k = 0; k < l->nodes.n && !cut; k++) {
			uint64_t p = l->nodes.v[k].p;
			bool fresh;
			if ((err = specials_add(&g->special, p, HS_GL_FASTBIN, &fresh)))
				goto out;
			if (!fresh || k + 1 > bound) {
				hs_log_warn(g->log, "arena %zu (%#llx): fastbin %llu has a loop at chunk %#llx; list cut there",
					    idx, (unsigned long long)arena,
					    (unsigned long long)i, (unsigned long long)p);
				g->heap->partial = true;
				cut = true;
				break;
			}
			st->nfast++;
			st->fastavail += l->nodes.v[k].size & ~(uint64_t)SIZE_BITS;
		}
		if (cut || l->end == FB_END_NULL || l->end == FB_END_LOOP)
			continue;
		if (l->end == FB_END_MISALIGNED)
			hs_log_warn(g->log, "arena %zu (%#llx): fastbin %llu holds a misaligned chunk %#llx; rest of that list ignored",
				    idx, (unsigned long long)arena,
				    (unsigned long long)i, (unsigned long long)l->end_at);
		else
			hs_log_warn(g->log, "arena %zu (%#llx): fastbin %llu points to %#llx, which is not in the core; rest of that list ignored",
				    idx, (unsigned long long)arena,
				    (unsigned long long)i, (unsigned long long)l->end_at);
		g->heap->partial = true;
	}
out:
	for (uint64_t i = 0; i < g->nfastbins; i++)
		fb_nodes_free(&lists[i].nodes);
	free(lists);
	return err;
}

/* Regular bins (unsorted, small, large), as int_mallinfo counts them. */
static void count_bins(struct gl *g, uint64_t arena, size_t idx,
		       struct arena_stats *st)
{
	uint64_t bound = list_bound(g->core);
	for (uint64_t i = 1; i < g->nbins; i++) {
		/* bin_at(av, i): a fake chunk whose fd/bk are bins[2i-2..] */
		uint64_t b = arena + g->ms_bins + (i - 1) * 16 - g->mc_fd;
		uint64_t p;
		if (!hs_core_read_u64(g->core, b + g->mc_bk, &p))
			return;
		uint64_t n = 0;
		/* Brent's cycle check: a list that loops without coming back to
		 * its bin is caught after about twice the loop's length, not
		 * after the bound (the core's size / 32, per bin) */
		uint64_t saved = b, power = 1, steps = 0;
		/* q: the chunk whose bk is p, which p's fd must name (glibc's
		 * own check, "corrupted double-linked list") */
		uint64_t q = b;
		while (p != b) {
			uint64_t size, fd, bk;
			bool loop = p == saved;
			if (++steps == power) {
				saved = p;
				power *= 2;
				steps = 0;
			}
			if (loop || ++n > bound || !hs_core_read_u64(g->core, p + g->mc_size, &size) ||
			    !hs_core_read_u64(g->core, p + g->mc_fd, &fd) ||
			    !hs_core_read_u64(g->core, p + g->mc_bk, &bk)) {
				hs_log_warn(g->log, "arena %zu (%#llx): bin %llu is broken (a loop or a pointer out of the core); mallinfo2 counts are partial",
					    idx, (unsigned long long)arena,
					    (unsigned long long)i);
				g->heap->partial = true;
				break;
			}
			if (fd != q) {
				hs_log_warn(g->log, "arena %zu (%#llx): bin %llu is broken (chunk %#llx is the bk of %#llx, and its fd is %#llx); mallinfo2 counts are partial",
					    idx, (unsigned long long)arena,
					    (unsigned long long)i, (unsigned long long)p,
					    (unsigned long long)q, (unsigned long long)fd);
				g->heap->partial = true;
				break;
			}
			st->nblocks++;
			st->avail += size & ~(uint64_t)SIZE_BITS;
			q = p;
			p = bk;
		}
	}
}

static struct hs_error *add_covered(struct gl *g, uint64_t start, uint64_t end)
{
	if (end <= start)
		return NULL;  /* covers nothing */
	return ranges_push(&g->covered, (struct range){start, end});
}

/* Walks chunks from start up to top or end.  Returns true when it reached
 * top (or a fencepost that ends the segment). */
/* Walks the chunks of [start, end) up to top; *stop is where the walk
 * ended: top, a pair of fenceposts (glibc's end of a heap that lost its
 * top: *fence), end, or the damaged chunk it could not step over. */
static struct hs_error *walk_chunks(struct gl *g, size_t idx, uint64_t start,
				    uint64_t end, uint64_t top,
				    struct hs_arena *ar, bool *reached_top,
				    uint64_t *stop, bool *fence_end)
{
	struct hs_error *err = hs_heap_begin_run(g->heap);
	if (err)
		return err;
	*reached_top = false;
	*fence_end = false;
	*stop = start;
	if ((err = add_covered(g, start, end)))
		return err;
	uint64_t p = start;
	const struct hs_core_segment *seg = hs_core_find_segment(g->core, start);
	const uint8_t *base = NULL;
	uint64_t base_lo = 0, base_hi = 0;
	/* the specials' map of the segment (specials_add's), when it has one:
	 * a chunk read from the segment is looked up there */
	const uint64_t *smap = NULL;
	if (seg && seg->avail) {
		base = g->core->data + seg->offset;
		base_lo = seg->vaddr;
		base_hi = seg->vaddr + seg->avail;
		if (g->special.map)
			smap = g->special.map[seg - g->core->segs];
	}
	const bool trace = g->core->trace != NULL;
	const uint64_t mc_size = g->mc_size;
	/* the arena's counts, kept here while the loop runs */
	uint64_t used_count = 0, used_bytes = 0, free_count = 0, free_bytes = 0;
	uint64_t bin_count = 0, fast_count = 0;
	/* size: the header of p, read already as the previous chunk's next
	 * (straight from the segment, traced as it was read) */
	bool have_size = false;
	uint64_t size = 0, nchunks = 0;
	while (p < end) {
		if (!(++nchunks & 0xffff))
			hs_log_progress(g->log, "walking the heap", "bytes", p - start,
					end - start);
		if (p == top) {
			*reached_top = true;
			break;
		}
		uint64_t nsize;
		if (have_size) {
			have_size = false;
		} else if (p + 16 <= base_hi && p >= base_lo) {
			memcpy(&size, base + (p + mc_size - base_lo), 8);
			if (trace)
				hs_core_touch(g->core, p + mc_size, 8);
		} else if (!hs_core_read_u64(g->core, p + mc_size, &size)) {
			hs_log_warn(g->log, "arena %zu: chunk at %#llx is not in the core (truncated?); rest of this heap skipped",
				    idx, (unsigned long long)p);
			ar->partial = g->heap->partial = true;
			break;
		}
		uint64_t csz = size & ~(uint64_t)SIZE_BITS;
		if (csz == 16 || csz == 0) {
			/* glibc's fenceposts (sysmalloc), which end a heap
			 * that no longer holds the top, or an old main-arena
			 * segment: two headers of size 16 | PREV_INUSE (main
			 * arena), or 16 | PREV_INUSE then 0 | PREV_INUSE
			 * (other arenas; the latter alone when the old top was
			 * too small).  A heap that holds the top ends there. */
			bool fence = false;
			if (!top && csz == 0)
				fence = size & PREV_INUSE;
			else if (!top && hs_core_read_u64(g->core, p + 16 + mc_size, &nsize))
				fence = (nsize & ~(uint64_t)SIZE_BITS) == 0 ||
					(nsize & ~(uint64_t)SIZE_BITS) == 16;
			if (fence) {
				*fence_end = true;
				break;
			}
			hs_log_warn(g->log, "arena %zu: chunk at %#llx has size %#llx, where the heap should go on: it is damaged there; rest of this heap skipped",
				    idx, (unsigned long long)p,
				    (unsigned long long)size);
			ar->partial = g->heap->partial = true;
			break;
		}
		if (csz < MINSIZE || (csz & (ALIGN - 1)) || csz > end - p ||
		    (size & IS_MMAPPED)) {
			hs_log_warn(g->log, "arena %zu: impossible chunk size %#llx at %#llx; rest of this heap skipped",
				    idx, (unsigned long long)size,
				    (unsigned long long)p);
			ar->partial = g->heap->partial = true;
			break;
		}
		uint64_t next = p + csz;
		bool inuse = true;
		if (next < end) {
			if (next + 16 <= base_hi && next >= base_lo) {
				memcpy(&nsize, base + (next + mc_size - base_lo), 8);
				if (trace)
					hs_core_touch(g->core, next + mc_size, 8);
				size = nsize;
				have_size = true;
			} else if (!hs_core_read_u64(g->core, next + mc_size, &nsize)) {
				nsize = PREV_INUSE;
			}
			inuse = nsize & PREV_INUSE;
		}
		enum hs_gl_where where = inuse ? HS_GL_HEAP : HS_GL_BIN;
		/* a 16-aligned chunk of the segment: its map says (specials_seg) */
		int special;
		if (p >= base_lo && p < base_hi && !(p & (ALIGN - 1))) {
			unsigned code = smap ? map_get(smap, p - base_lo) : 0;
			special = code ? special_where[code] : -1;
		} else {
			special = specials_find(&g->special, p);
		}
		if (special >= 0) {
			where = (enum hs_gl_where)special;
			if ((special == HS_GL_FASTBIN || special == HS_GL_TCACHE) &&
			    !inuse)
				hs_log_warn(g->log, "arena %zu: chunk %#llx is in a %s list but marked free in the heap",
					    idx, (unsigned long long)p,
					    places[special].name);
		}
		struct hs_alloc_in a = {
			.addr = p + 16,
			.size = csz - 8,
			.where = where,
			.arena = idx,
		};
		if ((err = hs_heap_add(g->heap, &a)))
			break;
		if (hs_where_state(a.where) == HS_STATE_USED) {
			used_count++;
			used_bytes += csz;
		} else {
			free_count++;
			free_bytes += csz;
		}
		bin_count += where == HS_GL_BIN;
		fast_count += where == HS_GL_FASTBIN;
		p = next;
	}
	/* the arena as a block records it (16 bits) */
	struct hs_alloc_in a_idx = {.arena = idx};
	if (g->walked_bin && a_idx.arena < g->heap->narenas) {
		g->walked_bin[a_idx.arena] += bin_count;
		g->walked_fast[a_idx.arena] += fast_count;
	}
	ar->used_count += used_count;
	ar->used_bytes += used_bytes;
	ar->free_count += free_count;
	ar->free_bytes += free_bytes;
	*stop = p < end ? p : end;
	return err;
}

static struct hs_error *add_top(struct gl *g, size_t idx, uint64_t top,
				uint64_t top_size, struct hs_arena *ar)
{
	if (top_size < MINSIZE)
		return NULL;  /* an exhausted top has no room to list */
	struct hs_alloc_in a = {
		.addr = top + 16,
		.size = top_size - 16,
		.where = HS_GL_TOP,
		.arena = idx,
	};
	ar->free_count++;
	ar->free_bytes += top_size;
	return hs_heap_add(g->heap, &a);
}

/* Does a piece of the main arena start at p: a chain of in-use-bit-set,
 * non-mmapped chunks of sane sizes that reaches top, or glibc's two
 * 16-byte fenceposts, before limit?  Reads only.  *end: the top's end, or
 * the page after the fenceposts (the piece's end). */
static bool probe_piece(struct gl *g, uint64_t p, uint64_t limit, uint64_t top,
			uint64_t top_size, uint64_t page, uint64_t *end)
{
	uint64_t size;
	if (!hs_core_read_u64(g->core, p + g->mc_size, &size) || !(size & PREV_INUSE))
		return false;  /* a piece's first chunk follows nothing free */
	for (uint64_t n = 0; p < limit && n < (1u << 24); n++) {
		if (p == top) {
			*end = top + top_size;
			return *end <= limit;
		}
		if (!hs_core_read_u64(g->core, p + g->mc_size, &size) || (size & (IS_MMAPPED | NON_MAIN_ARENA)))
			return false;
		uint64_t csz = size & ~(uint64_t)SIZE_BITS, nsize;
		if (csz == 16 && hs_core_read_u64(g->core, p + 16 + g->mc_size, &nsize) &&
		    (nsize & ~(uint64_t)SIZE_BITS) == 16) {
			*end = align_up(p + 32, page);
			return *end <= limit;
		}
		if (csz < MINSIZE || (csz & (ALIGN - 1)) || csz > limit - p)
			return false;
		p += csz;
	}
	return false;
}

/* The main arena after brk failed (non-contiguous): sysmalloc maps pieces
 * of at least 1 MiB (MMAP_AS_MORECORE_SIZE), each new one usually right
 * below the last, where the kernel merges them into one mapping; an old
 * piece ends with two fenceposts.  Walks every piece of the mapping that
 * holds top: from the mapping's start up to the top's piece, then the
 * older pieces above it, while glibc's system_mem has bytes the walk has
 * not accounted for. */
static bool covered(struct gl *g, uint64_t start, uint64_t end,
		    uint64_t *skip_to);

/* Walks the pieces that follow one another from p in [p, hi); scan: when a
 * page holds no piece, try the next (the mapping that holds top also
 * holds other things), else stop there. */
static struct hs_error *pieces_from(struct gl *g, struct hs_arena *ar, uint64_t p,
				    uint64_t hi, uint64_t top, bool scan,
				    bool *top_walked, uint64_t *probes)
{
	uint64_t page = g->page ? g->page : 4096;
	while (p < hi && *probes < (1u << 20)) {
		if (*top_walked && ar->covered >= ar->system_mem)
			break;
		uint64_t end = 0;
		++*probes;
		if (!probe_piece(g, p, hi, top, ar->top_size, page, &end)) {
			if (!scan || (!*top_walked && p > top))
				break;
			p += page;  /* not a piece of this arena: another mapping */
			continue;
		}
		bool reached, fence;
		uint64_t stop;
		struct hs_error *err;
		if ((err = hs_heap_add_region(g->heap, p, end, HS_REGION_HEAP)) ||
		    (err = walk_chunks(g, 0, p, end, top >= p && top < end ? top : 0, ar,
				       &reached, &stop, &fence)))
			return err;
		ar->nheaps++;
		ar->covered += end - p;
		if (reached) {
			if ((err = add_top(g, 0, top, ar->top_size, ar)))
				return err;
			*top_walked = true;
		}
		p = end;
	}
	return NULL;
}

/* The main arena after brk failed (non-contiguous): sysmalloc maps pieces
 * of at least 1 MiB (MMAP_AS_MORECORE_SIZE), each new one usually right
 * below the last, where the kernel merges them into one mapping; an old
 * piece ends with two fenceposts.  Walks every piece of the mapping that
 * holds top (from the mapping's start up to the top's piece, then the
 * older pieces above it); then, while glibc's system_mem has bytes the walk
 * has not accounted for, the pieces that start other mappings (a piece the
 * kernel could not merge: something was mapped between). */
static struct hs_error *walk_main_pieces(struct gl *g, struct hs_arena *ar,
					 uint64_t top)
{
	const struct hs_core_segment *ts = hs_core_find_segment(g->core, top);
	if (!ts || top + ar->top_size > ts->vaddr + ts->memsz) {
		hs_log_warn(g->log, "main arena is non-contiguous and its top chunk %#llx is not in the core",
			    (unsigned long long)top);
		ar->partial = g->heap->partial = true;
		return NULL;
	}
	uint64_t page = g->page ? g->page : 4096;
	bool top_walked = false;
	uint64_t probes = 0;
	struct hs_error *err = pieces_from(g, ar, align_up(ts->vaddr, page),
					   ts->vaddr + ts->memsz, top, true,
					   &top_walked, &probes);
	for (size_t i = 0; !err && top_walked && ar->covered < ar->system_mem &&
	     i < g->core->nsegs; i++) {
		const struct hs_core_segment *s = &g->core->segs[i];
		uint64_t skip;
		if (s == ts || !(s->flags & HS_SEG_W) || s->file >= 0 || (s->vaddr & (page - 1)) ||
		    covered(g, s->vaddr, s->vaddr + s->memsz, &skip))
			continue;
		err = pieces_from(g, ar, s->vaddr, s->vaddr + s->memsz, top, false,
				  &top_walked, &probes);
	}
	if (err)
		return err;
	if (!top_walked) {
		hs_log_warn(g->log, "main arena is non-contiguous and the piece that holds its top chunk %#llx could not be walked",
			    (unsigned long long)top);
		ar->partial = g->heap->partial = true;
	}
	return NULL;
}

static struct hs_error *walk_main_arena(struct gl *g, const uint8_t *buf,
					struct hs_arena *ar)
{
	struct hs_error *err;
	uint64_t sbrk_base;
	if (!hs_core_read_u64(g->core, g->mp + g->mp_sbrk_base, &sbrk_base)) {
		hs_log_warn(g->log, "mp_ is not in the core: the main heap cannot be walked");
		ar->partial = g->heap->partial = true;
		return NULL;
	}
	if (!sbrk_base)
		return NULL;  /* malloc never used brk */
	uint64_t start = align_up(sbrk_base, ALIGN);
	const struct hs_core_segment *seg = hs_core_find_segment(g->core, start);
	if (!seg) {
		hs_log_warn(g->log, "the main heap at %#llx is not in the core",
			    (unsigned long long)start);
		ar->partial = g->heap->partial = true;
		return NULL;
	}
	uint64_t seg_end = seg->vaddr + seg->memsz;
	uint64_t top = ar->top, end;
	/* The brk heap can be two mappings or more that touch: a child of
	 * fork() keeps the part it inherited apart from what sbrk grew after
	 * (the kernel does not merge VMAs of different anon_vma).  Follow
	 * them while the top lies further on. */
	for (const struct hs_core_segment *next;
	     top >= seg_end && (next = hs_core_find_segment(g->core, seg_end)) &&
	     next->vaddr == seg_end;)
		seg_end = next->vaddr + next->memsz;
	bool top_ok = top >= start && top < seg_end && !(top & (ALIGN - 1)) &&
		ar->top_size >= 16 && ar->top_size <= seg_end - top;
	uint32_t flags;
	memcpy(&flags, buf + g->ms_flags, 4);
	if (top_ok) {
		end = top + ar->top_size;
	} else {
		if (!(flags & NONCONTIGUOUS_BIT) ||
		    !hs_core_find_segment(g->core, top))
			hs_log_warn(g->log, "main arena: top chunk %#llx (size %#llx) is out of range of the main heap %#llx-%#llx; walking to the end of the heap mapping",
				    (unsigned long long)top,
				    (unsigned long long)ar->top_size,
				    (unsigned long long)start,
				    (unsigned long long)seg_end);
		end = seg_end;
	}
	bool reached, fence;
	uint64_t stop;
	if ((err = hs_heap_add_region(g->heap, sbrk_base, end, HS_REGION_HEAP)))
		return err;
	if ((err = walk_chunks(g, 0, start, end, top_ok ? top : 0, ar, &reached,
			       &stop, &fence)))
		return err;
	ar->nheaps = 1;
	/* what the walk accounts for of system_mem: from the break's start
	 * to the top's end, or to the page-aligned break past the two 16-byte
	 * fenceposts that end the brk piece of a non-contiguous arena */
	uint64_t page = g->page ? g->page : 4096;
	ar->covered = reached ? top + ar->top_size - sbrk_base :
		fence ? align_up(stop + 32, page) - sbrk_base : stop - sbrk_base;
	if (reached) {
		if ((err = add_top(g, 0, top, ar->top_size, ar)))
			return err;
	} else if (top_ok || !(flags & NONCONTIGUOUS_BIT)) {
		if (!ar->partial)
			hs_log_warn(g->log, "main arena: the walk from %#llx did not reach the top chunk %#llx",
				    (unsigned long long)start,
				    (unsigned long long)top);
		ar->partial = g->heap->partial = true;
	}
	if ((flags & NONCONTIGUOUS_BIT) && !top_ok &&
	    (err = walk_main_pieces(g, ar, top)))
		return err;
	return NULL;
}

static struct hs_error *walk_other_arena(struct gl *g, uint64_t arena,
					 size_t idx, struct hs_arena *ar)
{
	struct hs_error *err;
	uint64_t top = ar->top;
	uint64_t h = top & ~(g->heap_max - 1);
	uint64_t nheaps = 0;
	bool first_heap = true;
	while (h) {
		if (++nheaps > MAX_HEAPS_PER_ARENA) {
			hs_log_warn(g->log, "arena %zu (%#llx): heap list too long or looping; cut",
				    idx, (unsigned long long)arena);
			ar->partial = g->heap->partial = true;
			break;
		}
		uint64_t ar_ptr, prev, hsize;
		if (!hs_core_read_u64(g->core, h + g->hi_ar_ptr, &ar_ptr) ||
		    !hs_core_read_u64(g->core, h + g->hi_prev, &prev) ||
		    !hs_core_read_u64(g->core, h + g->hi_size, &hsize)) {
			hs_log_warn(g->log, "arena %zu (%#llx): heap_info at %#llx is not in the core",
				    idx, (unsigned long long)arena,
				    (unsigned long long)h);
			ar->partial = g->heap->partial = true;
			break;
		}
		if (ar_ptr != arena || hsize > g->heap_max ||
		    hsize < g->hi_sizeof || (prev & (g->heap_max - 1))) {
			hs_log_warn(g->log, "arena %zu (%#llx): heap_info at %#llx is inconsistent (ar_ptr %#llx, size %#llx, prev %#llx)",
				    idx, (unsigned long long)arena,
				    (unsigned long long)h,
				    (unsigned long long)ar_ptr,
				    (unsigned long long)hsize,
				    (unsigned long long)prev);
			ar->partial = g->heap->partial = true;
			break;
		}
		uint64_t start = h + g->hi_sizeof;
		if (!prev)  /* the arena's first heap holds the arena too */
			start += g->ms_size;
		start = align_up(start, ALIGN);
		uint64_t end = h + hsize;
		bool has_top = top >= start && top < end;
		if (first_heap && !has_top) {
			hs_log_warn(g->log, "arena %zu (%#llx): top chunk %#llx is not in its heap %#llx",
				    idx, (unsigned long long)arena,
				    (unsigned long long)top, (unsigned long long)h);
			ar->partial = g->heap->partial = true;
			break;
		}
		if (has_top && ar->top_size > end - top) {
			hs_log_warn(g->log, "arena %zu (%#llx): top chunk size %#llx runs past its heap's end",
				    idx, (unsigned long long)arena,
				    (unsigned long long)ar->top_size);
			ar->partial = g->heap->partial = true;
			has_top = false;
		}
		bool reached, fence;
		uint64_t stop;
		/* the whole reservation: past h + size it is PROT_NONE, which
		 * some dumpers still write out */
		if ((err = hs_heap_add_region(g->heap, h, h + g->heap_max,
					      HS_REGION_HEAP)))
			return err;
		if ((err = walk_chunks(g, idx, start, end, has_top ? top : 0, ar,
				       &reached, &stop, &fence)))
			return err;
		/* system_mem counts each heap's size, header included */
		ar->covered += (reached || fence) ? hsize : stop - h;
		if (has_top && reached &&
		    (err = add_top(g, idx, top, ar->top_size, ar)))
			return err;
		if (has_top && !reached && !ar->partial) {
			hs_log_warn(g->log, "arena %zu: the walk of heap %#llx did not reach the top chunk",
				    idx, (unsigned long long)h);
			ar->partial = g->heap->partial = true;
		}
		first_heap = false;
		ar->nheaps++;
		h = prev;
	}
	return NULL;
}

/* The offset of libc's `tcache` TLS variable from the thread pointer: its
 * offset in libc's TLS block (the symbol's value) plus where that block
 * sits, which libc's relocated GOT slots tell (hs_dwarf_tls_block). */
static bool tcache_tpoff(struct gl *g, int64_t *tpoff)
{
	uint64_t value, block;
	bool is_tls;
	struct hs_error *err = hs_dwarf_symbol(g->dw, g->libc, "tcache", &value,
					       NULL, &is_tls);
	if (err || !is_tls) {
		hs_error_destroy(err);
		return false;
	}
	/* the block's place relative to the thread pointer is the same in
	 * every thread: compute it for a thread pointer of 0 */
	if (!hs_dwarf_tls_block(g->dw, g->core, g->libc, 0, &block))
		return false;
	*tpoff = (int64_t)(block + value);
	return true;
}

static struct hs_error *read_tcaches(struct gl *g)
{
	if (!g->has_tcache)
		return NULL;
	int64_t tpoff = g->tpoff;
	if (!g->tpoff_known) {
		hs_log_warn(g->log, "cannot locate the thread-local tcache pointer in %s: chunks held by thread caches are listed as used",
			    g->libc ? g->libc->name : "libc");
		g->heap->partial = true;
		return NULL;
	}
	uint64_t bound = list_bound(g->core);
	for (size_t t = 0; t < g->core->nthreads; t++) {
		const struct hs_core_thread *th = &g->core->threads[t];
		uint64_t fs = th->regs[HS_REG_FS_BASE], tc;
		if (!fs)
			continue;
		if (!hs_core_read_u64(g->core, fs + (uint64_t)tpoff, &tc)) {
			hs_log_warn(g->log, "thread %d: its tcache pointer at %#llx is not in the core",
				    th->tid, (unsigned long long)(fs + (uint64_t)tpoff));
			g->heap->partial = true;
			continue;
		}
		if (!tc)
			continue;  /* this thread never allocated */
		bool fresh;
		struct hs_error *err = specials_add(&g->special, tc - 16,
						    HS_GL_INTERNAL, &fresh);
		if (err)
			return err;
		if (!fresh)
			continue;
		g->heap->ntcaches++;
		for (uint64_t i = 0; i < g->tc_nbins; i++) {
			uint64_t count = 0, e;
			if (!hs_core_read_quiet(g->core, tc + g->tc_counts + i * g->tc_count_size,
						&count, g->tc_count_size) ||
			    !hs_core_read_u64(g->core, tc + g->tc_entries + 8 * i, &e)) {
				hs_log_warn(g->log, "thread %d: its tcache at %#llx is not in the core",
					    th->tid, (unsigned long long)tc);
				g->heap->partial = true;
				break;
			}
			uint64_t n = 0;
			while (e) {
				uint64_t next;
				if ((e & (ALIGN - 1)) || !hs_core_read_u64(g->core, e, &next)) {
					hs_log_warn(g->log, "thread %d: tcache bin %llu holds a bad entry %#llx; rest of that list ignored",
						    th->tid, (unsigned long long)i,
						    (unsigned long long)e);
					g->heap->partial = true;
					break;
				}
				if ((err = specials_add(&g->special, e - 16,
							HS_GL_TCACHE, &fresh)))
					return err;
				if (!fresh || ++n > bound) {
					hs_log_warn(g->log, "thread %d: tcache bin %llu has a loop at %#llx; list cut there",
						    th->tid, (unsigned long long)i,
						    (unsigned long long)e);
					g->heap->partial = true;
					break;
				}
				e = reveal(g, e, next);
			}
			if (n != count && !g->heap->partial)
				hs_log_warn(g->log, "thread %d: tcache bin %llu lists %llu chunks, its count says %llu",
					    th->tid, (unsigned long long)i,
					    (unsigned long long)n,
					    (unsigned long long)count);
		}
	}
	return NULL;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Does [start, end) meet a covered range?  *skip_to: where the covered
 * memory it meets ends; when it meets none, where the next begins.  The ranges are sorted and merged when some were
 * added since the last call, then searched in O(log n): the mmapped-chunk
 * scan asks once per 16 bytes of memory, and a hostile main arena may
 * have a million pieces. */
static bool covered(struct gl *g, uint64_t start, uint64_t end,
		    uint64_t *skip_to)
{
	struct ranges *c = &g->covered;
	if (g->covered_sorted != c->n) {
		hs_sort(c->v, c->n, sizeof(*c->v), cmp_range);
		size_t m = 0;
		for (size_t i = 0; i < c->n; i++) {
			if (m && c->v[i].start < c->v[m - 1].end) {
				if (c->v[i].end > c->v[m - 1].end)
					c->v[m - 1].end = c->v[i].end;
			} else {
				c->v[m++] = c->v[i];
			}
		}
		c->n = g->covered_sorted = m;
	}
	/* the first range that ends after start (ends grow with starts) */
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n && c->v[lo].start < end) {
		*skip_to = c->v[lo].end;
		return true;
	}
	/* not covered: nothing is before the next range's start */
	*skip_to = lo < c->n ? c->v[lo].start : UINT64_MAX;
	return false;
}

/* _int_memalign of an mmapped chunk writes a new header k bytes in, with
 * prev_size = k and size = S - k, and leaves the old header (prev_size 0,
 * size S) at the mapping's start.  Given such a candidate at *q, look for
 * the real header inside it and move to it. */
static void find_memalign_header(const uint8_t *data, uint64_t lo,
				 uint64_t hi, uint64_t *q, uint64_t *prev,
				 uint64_t *csz)
{
	uint64_t start = *q, size = *csz;
	uint64_t end = start + size < hi ? start + size : hi;
	for (uint64_t p = start + 16; p + 16 <= end; p += 16) {
		uint64_t w0, w1, k = p - start;
		memcpy(&w0, data + (p - lo), 8);
		if (w0 != k)
			continue;
		memcpy(&w1, data + (p - lo) + 8, 8);
		if (w1 == ((size - k) | IS_MMAPPED)) {
			*q = p;
			*prev = k;
			*csz = size - k;
			return;
		}
	}
}

/* Mmapped chunks are linked nowhere: scan anonymous writable memory that
 * is neither an arena heap nor a thread stack for their headers.  After
 * memalign the header may sit k bytes into the mapping, with prev_size == k
 * (glibc _int_memalign); so the mapping starts at chunk - prev_size and ends
 * at chunk + size, both page aligned. */
static struct hs_error *scan_mmapped(struct gl *g)
{
	struct hs_error *err = hs_heap_begin_run(g->heap);
	if (err)
		return err;
	for (size_t t = 0; t < g->core->nthreads; t++) {
		const struct hs_core_segment *s = hs_core_find_segment(
			g->core, g->core->threads[t].regs[HS_REG_RSP]);
		if (s && (err = add_covered(g, s->vaddr, s->vaddr + s->memsz)))
			return err;
	}
	for (size_t i = 0; i < g->heap->nregions; i++) {
		const struct hs_region *r = &g->heap->regions[i];
		if (r->kind == HS_REGION_HEAP &&
		    (err = add_covered(g, r->start, r->end)))
			return err;
	}
	uint64_t page = g->page;
	for (size_t i = 0; i < g->core->nsegs; i++) {
		const struct hs_core_segment *s = &g->core->segs[i];
		if (!(s->flags & HS_SEG_W) || s->file >= 0 || !s->avail)
			continue;
		const uint8_t *data = g->core->data + s->offset;
		uint64_t lo = s->vaddr, hi = s->vaddr + s->avail;
		uint64_t q = align_up(lo, ALIGN);
		uint64_t clear_to = 0;  /* [q, clear_to) meets no covered range */
		while (q + 16 <= hi) {
			uint64_t skip;
			if (q + 16 > clear_to) {
				if (covered(g, q, q + 16, &skip)) {
					q = align_up(skip > q ? skip : q + 16, ALIGN);
					continue;
				}
				clear_to = skip;
			}
			uint64_t prev, size;
			memcpy(&prev, data + (q - lo), 8);
			memcpy(&size, data + (q - lo) + 8, 8);
			uint64_t csz = size & ~(uint64_t)SIZE_BITS;
			if ((size & SIZE_BITS) != IS_MMAPPED || csz < MINSIZE ||
			    (prev & (ALIGN - 1)) || prev > q - lo ||
			    ((q - prev) & (page - 1)) ||
			    ((prev + csz) & (page - 1)) ||
			    csz > s->vaddr + s->memsz - q ||
			    covered(g, q - prev, q + csz, &skip)) {
				q += 16;
				continue;
			}
			if (prev == 0)
				find_memalign_header(data, lo, s->vaddr + s->avail,
						     &q, &prev, &csz);
			struct hs_alloc_in a = {
				.addr = q + 16,
				.size = csz - 16,
				.where = HS_GL_MMAPPED,
				.arena = HS_ARENA_NONE,
			};
			if ((err = hs_heap_add(g->heap, &a)) ||
			    (err = hs_heap_add_region(g->heap, q - prev, q + csz,
						      HS_REGION_MMAPPED)))
				return err;
			hs_core_touch(g->core, q, 16);  /* the header */
			g->heap->mmap_count++;
			g->heap->mmap_bytes += prev + csz;
			q += csz;
		}
	}
	if (g->heap->mmap_bytes < g->heap->mmap_expected_bytes &&
	    g->heap->mmap_expected_bytes <= g->core->mapped_bytes)
		g->heap->unaccounted_bytes += g->heap->mmap_expected_bytes - g->heap->mmap_bytes;
	if (g->heap->mmap_count != g->heap->mmap_expected ||
	    g->heap->mmap_bytes != g->heap->mmap_expected_bytes) {
		hs_log_warn(g->log, "found %llu mmapped chunks (%llu bytes), glibc counts %llu (%llu bytes)",
			    (unsigned long long)g->heap->mmap_count,
			    (unsigned long long)g->heap->mmap_bytes,
			    (unsigned long long)g->heap->mmap_expected,
			    (unsigned long long)g->heap->mmap_expected_bytes);
		g->heap->partial = true;
	}
	return NULL;
}

static char *glibc_version(struct gl *g, char **package_version)
{
	char *s = hs_dwarf_find_string(g->dw, g->libc, "GNU C Library (");
	if (!s)
		return NULL;
	/* "GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release
	 * version 2.36." */
	char *ver = NULL;
	const char *r = strstr(s, "release version ");
	if (r) {
		r += strlen("release version ");
		size_t n = strspn(r, "0123456789.");
		while (n && r[n - 1] == '.')
			n--;
		ver = strndup(r, n);
	}
	if (package_version) {
		*package_version = NULL;
		const char *open = strchr(s, '('), *close = open ? strchr(open, ')') : NULL;
		if (open && close) {
			const char *sp = close;
			while (sp > open && sp[-1] != ' ')
				sp--;
			*package_version = strndup(sp, (size_t)(close - sp));
		}
	}
	free(s);
	return ver;
}

static bool find_main_arena(struct hs_dwarf *dw, struct hs_module *m,
			    uint64_t *arena, uint64_t *mp)
{
	struct hs_error *err = hs_dwarf_symbol(dw, m, "main_arena", arena, NULL,
					       NULL);
	if (!err)
		err = hs_dwarf_symbol(dw, m, "mp_", mp, NULL, NULL);
	bool ok = !err;
	hs_error_destroy(err);
	return ok;
}

bool hs_glibc_detect(struct hs_dwarf *dw, struct hs_module **libc)
{
	*libc = hs_dwarf_find_glibc(dw, "libc.so", "libc");
	if (*libc)
		return true;
	/* static executables carry their own malloc */
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		uint64_t a, p;
		if (find_main_arena(dw, m, &a, &p)) {
			*libc = m;
			return true;
		}
	}
	return false;
}

/* ---- without libc's debug info: the layout table and the code ---- */

static bool version_at_least(const char *v, int major, int minor)
{
	int a = 0, b = 0;
	if (!v || sscanf(v, "%d.%d", &a, &b) != 2)
		return true;
	return a > major || (a == major && b >= minor);
}

/* The row's offsets, checked for the shapes the walk relies on (a row
 * that does not fit is refused rather than walked). */
static struct hs_error *load_layouts_row(struct gl *g,
					 const struct hs_gl_layout *L)
{
	g->ms_flags = L->ms_flags;
	g->ms_fastbins = L->ms_fastbins;
	g->nfastbins = L->ms_fastbins_size / 8;
	g->ms_top = L->ms_top;
	g->ms_bins = L->ms_bins;
	g->nbins = L->ms_bins_size / 16 + 1;
	g->ms_next = L->ms_next;
	g->ms_system_mem = L->ms_system_mem;
	g->ms_attached = L->ms_attached_threads;
	g->ms_size = L->ms_sizeof;
	g->mc_size = L->mc_size;
	g->mc_fd = L->mc_fd;
	g->mc_bk = L->mc_bk;
	g->hi_ar_ptr = L->hi_ar_ptr;
	g->hi_prev = L->hi_prev;
	g->hi_size = L->hi_size;
	g->hi_sizeof = L->hi_sizeof;
	g->mp_sbrk_base = L->mp_sbrk_base;
	g->mp_n_mmaps = L->mp_n_mmaps;
	g->mp_mmapped_mem = L->mp_mmapped_mem;
	g->mp_mmap_threshold = L->mp_mmap_threshold;
	g->has_hp_pagesize = L->mp_hp_pagesize != HS_GL_ABSENT;
	g->mp_hp_pagesize = g->has_hp_pagesize ? L->mp_hp_pagesize : 0;
	g->mp_sizeof = L->mp_sizeof;
	g->has_tcache = L->tc_entries != HS_GL_ABSENT && L->tc_entries_size;
	if (g->has_tcache) {
		g->tc_counts = L->tc_counts;
		g->tc_entries = L->tc_entries;
		g->tc_nbins = L->tc_entries_size / 8;
		g->tc_count_size = g->tc_nbins ? L->tc_counts_size / g->tc_nbins : 0;
		g->tc_sizeof = L->tc_sizeof;
	}
	uint64_t fields[] = {g->ms_flags, g->ms_fastbins, g->ms_top, g->ms_bins,
			     g->ms_next, g->ms_system_mem, g->ms_attached};
	bool fits = g->mc_size == 8 && g->mc_fd == 16 && g->mc_bk == 24 &&
		    g->nfastbins && g->nfastbins <= 64 && g->nbins > 2 &&
		    g->nbins <= 1024 && g->ms_size <= 1 << 16 &&
		    g->mp_sizeof <= 1 << 12 && g->hi_sizeof <= 1 << 12 &&
		    g->ms_bins + 16 * (g->nbins - 1) <= g->ms_size &&
		    (!g->has_tcache || ((g->tc_count_size == 1 || g->tc_count_size == 2) &&
					g->tc_nbins <= 1024 && g->tc_sizeof <= 1 << 16));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		fits = fits && fields[i] + 8 <= g->ms_size;
	uint64_t mpf[] = {g->mp_sbrk_base, g->mp_n_mmaps, g->mp_mmapped_mem,
			  g->mp_mmap_threshold, g->mp_hp_pagesize};
	for (size_t i = 0; i < sizeof(mpf) / sizeof(mpf[0]); i++)
		fits = fits && mpf[i] + 8 <= g->mp_sizeof;
	if (!fits)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "the layout row of glibc %s (%s) does not fit the shapes heapsift walks (formats/gllayout.c); regenerate it with scripts/gen_gllayout.py",
				       L->version, L->packages);
	return NULL;
}

static bool in_libc(const struct gl *g, uint64_t a)
{
	return a >= g->libc->start && a < g->libc->end;
}

/* in_libc, as hs_disasm_rip_refs' filter */
static bool in_libc_ref(const void *g, uint64_t a)
{
	return in_libc(g, a);
}

static bool in_libc_data(const struct gl *g, uint64_t a)
{
	const struct hs_core_segment *s;
	return in_libc(g, a) && (s = hs_core_find_segment(g->core, a)) &&
	       (s->flags & HS_SEG_W);
}

struct refs {
	uint64_t a[1024];
	size_t n;
};

/* The RIP-relative addresses inside libc that the code of exported
 * function fn refers to, in order (data and GOT slots alike). */
static bool fn_refs(struct gl *g, struct hs_disasm *cs, const char *fn,
		    struct refs *r)
{
	size_t k = 0, n = 0;
	if (!hs_disasm_function_refs(cs, g->dw, g->libc, g->core, fn, in_libc_ref, g,
				     r->a + r->n, sizeof(r->a) / sizeof(r->a[0]) - r->n,
				     &k, &n))
		return false;
	r->n += k;
	return n > 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Is there a main arena at a?  Its ring of arenas closes (each readable),
 * and its top chunk is in the core with a plausible size, or the arena was
 * never set up (all bins zero, as glibc's static initializer left it). */
static bool arena_valid(struct gl *g, uint64_t a, uint8_t *buf)
{
	if (a % 8 || hs_core_read(g->core, a, buf, g->ms_size) != NULL)
		return false;
	uint64_t top, sys, next, att = 0, topsz;
	memcpy(&top, buf + g->ms_top, 8);
	memcpy(&sys, buf + g->ms_system_mem, 8);
	memcpy(&next, buf + g->ms_next, 8);
	memcpy(&att, buf + g->ms_attached, 8);
	if (sys > g->core->mapped_bytes || att > (1u << 20))
		return false;
	if (!top) {
		for (uint64_t w = 0; w < 2 * (g->nbins - 1); w++) {
			uint64_t bin;
			memcpy(&bin, buf + g->ms_bins + 8 * w, 8);
			if (bin)
				return false;
		}
		if (sys)
			return false;
	} else {
		if (top % ALIGN || !hs_core_read_u64(g->core, top + g->mc_size, &topsz))
			return false;
		topsz &= ~(uint64_t)SIZE_BITS;
		if (topsz > sys || topsz % ALIGN)
			return false;
		/* unsorted bin: empty (points at itself) or a chunk */
		uint64_t fd, bin1 = a + g->ms_bins - 16, v;
		memcpy(&fd, buf + g->ms_bins, 8);
		if (fd != bin1 && (fd % ALIGN || !hs_core_read_u64(g->core, fd + g->mc_size, &v)))
			return false;
	}
	/* the ring: back to a within MAX_ARENAS steps */
	for (uint64_t n = 0; n < MAX_ARENAS; n++) {
		if (next == a)
			return true;
		if (next % 8 || !hs_core_read_u64(g->core, next + g->ms_next, &next))
			return false;
	}
	return false;
}

/* Is there an mp_ at p that agrees with the main arena?  Its counts of
 * mmapped chunks agree with each other, its threshold is one glibc
 * allows, and sbrk_base is where the contiguous main heap starts. */
static bool mp_valid(struct gl *g, uint64_t p, const uint8_t *arena)
{
	uint64_t thr, n = 0, mem, sbrk, hp = 0;
	if (p % 8 || !hs_core_read_u64(g->core, p + g->mp_mmap_threshold, &thr) ||
	    !hs_core_read_quiet(g->core, p + g->mp_n_mmaps, &n, 4) ||
	    !hs_core_read_u64(g->core, p + g->mp_mmapped_mem, &mem) ||
	    !hs_core_read_u64(g->core, p + g->mp_sbrk_base, &sbrk) ||
	    (g->has_hp_pagesize && !hs_core_read_u64(g->core, p + g->mp_hp_pagesize, &hp)))
		return false;
	uint64_t page = g->page ? g->page : 4096;
	if (!thr || thr > (32ull << 20) || n > (1u << 30) ||
	    (n == 0) != (mem == 0) || mem % page || mem < n * page ||
	    mem > g->core->mapped_bytes || (hp & (hp - 1)))
		return false;
	uint64_t top, sys, flags = 0;
	memcpy(&top, arena + g->ms_top, 8);
	memcpy(&sys, arena + g->ms_system_mem, 8);
	memcpy(&flags, arena + g->ms_flags, 4);
	/* malloc set up (top is the initial top: the unsorted bin's
	 * pseudo-chunk inside main_arena) but no heap yet */
	if (!top || (top == g->main_arena + g->ms_bins - g->mc_fd && !sys))
		return true;
	if (!sbrk)
		return (flags & NONCONTIGUOUS_BIT) != 0;
	uint64_t v;
	if (!hs_core_read_u64(g->core, align_up(sbrk, ALIGN) + g->mc_size, &v))
		return false;
	if (flags & NONCONTIGUOUS_BIT)
		return true;
	return top >= sbrk && top - sbrk <= sys;
}

/* The disassembler in *cs, opened on its first use: discovery asks for
 * it for main_arena and mp_, then for the tcache's offset, and capstone
 * is loaded and opened once for both.  The caller closes it. */
static struct hs_error *disasm_get(struct hs_disasm **cs)
{
	return *cs ? NULL : hs_disasm_open(cs);
}

/* main_arena and mp_ from the code of libc's exported malloc functions:
 * every libc data address they refer to (and, for mp_, every address a
 * member of the row's layout can be at) is a candidate; the candidates
 * the core's memory agrees with, most referred to first.  *csp: the
 * disassembler (disasm_get). */
static struct hs_error *find_by_code(struct gl *g, struct hs_disasm **csp,
				     bool need_arena, bool need_mp)
{
	static const char *const fns[] = {
		"malloc_trim", "mallinfo2", "mallinfo", "malloc_stats",
		"mallopt", "malloc", "free", "realloc", "calloc",
	};
	struct hs_error *err = disasm_get(csp);
	if (err)
		return err;
	struct hs_disasm *cs = *csp;
	struct refs *r = hs_calloc(1, sizeof(*r));
	uint8_t *buf = hs_malloc(g->ms_size);
	if (!r || !buf) {
		err = &hs_error_nomem;
		goto out;
	}
	size_t nfn = 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		nfn += fn_refs(g, cs, fns[i], r);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (in_libc_data(g, r->a[i]))
			r->a[k++] = r->a[i];
	r->n = k;
	hs_sort(r->a, r->n, sizeof(r->a[0]), cmp_u64);
	const char *who = g->libc->build_id ? g->libc->build_id : "unknown";
	if (!nfn) {
		err = hs_error_create(HS_ERR_NOT_FOUND,
				      "%s (build-id %s): no debug info, and the code of its malloc functions could not be read to find main_arena (is the file at its path, or under --sysroot?)",
				      g->libc->name, who);
		goto out;
	}
	if (need_arena) {
		uint64_t best = 0;
		size_t best_refs = 0, tried = 0;
		for (size_t i = 0; i < r->n; i = k) {
			for (k = i; k < r->n && r->a[k] == r->a[i]; k++)
				;
			tried++;
			if (k - i > best_refs && arena_valid(g, r->a[i], buf)) {
				best = r->a[i];
				best_refs = k - i;
			}
		}
		if (!best) {
			err = hs_error_create(HS_ERR_CORRUPT,
					      "%s (build-id %s, no debug info): none of the %zu data addresses its malloc functions use holds a main_arena whose arena ring closes and whose top chunk is in the core: main_arena is corrupted, or the layout row does not fit this build",
					      g->libc->name, who, tried);
			goto out;
		}
		g->main_arena = best;
		hs_heap_found(g->heap, "main_arena", "disassembly",
			      "libc+%#llx, used %zu times by malloc_trim, mallinfo, malloc_stats, mallopt, malloc, free, ...",
			      (unsigned long long)(best - g->libc->bias), best_refs);
	}
	if (need_mp) {
		if (hs_core_read(g->core, g->main_arena, buf, g->ms_size) != NULL) {
			err = hs_error_create(HS_ERR_CORRUPT, "main_arena at %#llx is not in the core",
					      (unsigned long long)g->main_arena);
			goto out;
		}
		/* a reference is to a member: mp_ is that address less the
		 * member's offset, for each member the walk knows */
		uint64_t offs[] = {0, g->mp_n_mmaps, g->mp_mmapped_mem,
				   g->mp_mmap_threshold, g->mp_sbrk_base,
				   g->mp_hp_pagesize};
		uint64_t best = 0;
		size_t best_refs = 0;
		for (size_t i = 0; i < r->n; i++) {
			for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
				if (r->a[i] < offs[o] || (o == 5 && !g->has_hp_pagesize))
					continue;
				uint64_t p = r->a[i] - offs[o];
				if (p + g->mp_sizeof > g->main_arena && p < g->main_arena + g->ms_size)
					continue;  /* inside main_arena */
				/* references inside [p, p + sizeof), p itself first */
				size_t nrefs = 0;
				for (size_t j = 0; j < r->n; j++)
					nrefs += r->a[j] >= p && r->a[j] < p + g->mp_sizeof;
				nrefs = 2 * nrefs + (o == 0);
				if (nrefs > best_refs && mp_valid(g, p, buf)) {
					best = p;
					best_refs = nrefs;
				}
			}
		}
		if (!best) {
			err = hs_error_create(HS_ERR_CORRUPT,
					      "%s (build-id %s, no debug info): none of the data addresses its malloc functions use holds an mp_ (malloc's parameters) that agrees with main_arena: corrupted, or the layout row does not fit this build",
					      g->libc->name, who);
			goto out;
		}
		g->mp = best;
		hs_heap_found(g->heap, "mp_", "disassembly",
			      "libc+%#llx, its members used by mallopt, malloc_stats, malloc, free, ...",
			      (unsigned long long)(best - g->libc->bias));
	}
out:
	free(buf);
	free(r);
	return err;
}

/* Does every thread's word at fs_base + tpoff hold NULL or a tcache (user
 * memory of a chunk of the tcache_perthread_struct's size)?  *used: some
 * thread's is not NULL. */
static bool tpoff_valid(struct gl *g, int64_t tpoff, bool *used)
{
	uint64_t want = align_up(g->tc_sizeof + 8, ALIGN);
	*used = false;
	for (size_t t = 0; t < g->core->nthreads; t++) {
		uint64_t fs = g->core->threads[t].regs[HS_REG_FS_BASE], v, hdr;
		if (!fs)
			continue;
		if (!hs_core_read_u64(g->core, fs + (uint64_t)tpoff, &v))
			return false;
		if (!v)
			continue;
		if (v % ALIGN || !hs_core_read_u64(g->core, v - 8, &hdr) ||
		    (hdr & ~(uint64_t)SIZE_BITS) != want)
			return false;
		*used = true;
	}
	return true;
}

/* The tcache's offset from the thread pointer: the initial-exec GOT slots
 * (R_X86_64_TPOFF64, no symbol) that malloc's code loads, in its order
 * (its fast path reads tcache first); the first whose value, in every
 * thread, is NULL or a tcache. */
static void find_tpoff_by_code(struct gl *g, struct hs_disasm **csp)
{
	uint64_t slots[64];
	size_t ns = hs_dwarf_tpoff_slots(g->dw, g->libc, slots, 64);
	struct hs_error *err = ns ? disasm_get(csp) : NULL;
	if (!ns || err) {
		hs_error_destroy(err);
		return;
	}
	struct refs *r = hs_calloc(1, sizeof(*r));
	if (r && !fn_refs(g, *csp, "malloc", r))
		r->n = 0;
	bool have_zero = false;
	int64_t zero = 0;
	for (size_t i = 0; r && i < r->n; i++) {
		size_t s;
		for (s = 0; s < ns && slots[s] != r->a[i]; s++)
			;
		uint64_t v;
		if (s == ns || !hs_core_read_u64(g->core, slots[s], &v))
			continue;
		bool used;
		if (!tpoff_valid(g, (int64_t)v, &used))
			continue;
		if (used) {
			g->tpoff = (int64_t)v;
			g->tpoff_known = true;
			hs_heap_found(g->heap, "tcache", "disassembly",
				      "TLS offset %lld, from the GOT slot libc+%#llx that malloc loads",
				      (long long)v, (unsigned long long)(slots[s] - g->libc->bias));
			free(r);
			return;
		}
		if (!have_zero) {
			have_zero = true;
			zero = (int64_t)v;
		}
	}
	free(r);
	if (have_zero) {
		/* no thread has a tcache yet: every candidate reads NULL */
		g->tpoff = zero;
		g->tpoff_known = true;
		hs_heap_found(g->heap, "tcache", "disassembly",
			      "TLS offset %lld (no thread has a tcache yet)", (long long)zero);
	}
}

const struct hs_gl_layout *hs_glibc_row(struct hs_dwarf *dw,
					struct hs_module *libc, bool *exact)
{
	struct gl g = {.dw = dw, .libc = libc};
	char *ver = glibc_version(&g, NULL);
	const struct hs_gl_layout *L = hs_gl_layout_find(ver, libc->build_id, exact);
	free(ver);
	return L;
}

/* The walk and the bins must tell the same story: every chunk the walk
 * found free (by its neighbour's PREV_INUSE) is in a bin, and every fastbin
 * chunk was met by the walk. */
static void cross_check(struct gl *g)
{
	struct hs_heap *h = g->heap;
	/* the walk counted its bin and fastbin chunks as it met them */
	const uint64_t *bins = g->walked_bin, *fast = g->walked_fast;
	if (!bins || !fast)
		return;
	for (size_t i = 0; i < h->narenas; i++) {
		struct hs_arena *ar = &h->arenas[i];
		/* glibc's own count of the arena's memory against the walk's
		 * (a system_mem larger than the core was not trusted) */
		if (ar->system_mem <= g->core->mapped_bytes && ar->covered < ar->system_mem) {
			uint64_t miss = ar->system_mem - ar->covered;
			h->unaccounted_bytes += miss;
			if (!ar->partial)
				hs_log_warn(g->log, "arena %zu: system_mem says %llu bytes, the walk accounts for %llu: %llu bytes missing",
					    i, (unsigned long long)ar->system_mem,
					    (unsigned long long)ar->covered,
					    (unsigned long long)miss);
			ar->partial = h->partial = true;
		}
		if (ar->partial)
			continue;
		if (bins[i] != ar->bin_chunks)
			hs_log_warn(g->log, "arena %zu: the walk found %llu free chunks, its bins list %llu (was the arena being modified?)",
				    i, (unsigned long long)bins[i],
				    (unsigned long long)ar->bin_chunks);
		if (fast[i] != ar->fastbin_chunks)
			hs_log_warn(g->log, "arena %zu: its fastbins list %llu chunks, the walk met %llu of them",
				    i, (unsigned long long)ar->fastbin_chunks,
				    (unsigned long long)fast[i]);
	}
}

/* Discovery: libc's layouts (DWARF, else the release's row), main_arena
 * and mp_ (symbols, else the code), glibc's version and the tcache's TLS
 * offset, each recorded with hs_heap_found.  *mp_size: the bytes of mp_
 * to claim as allocator state (its symbol's size, else the layout's). */
static struct hs_error *discover(struct gl *g, uint64_t *mp_size)
{
	struct hs_error *err;
	struct hs_disasm *cs = NULL;  /* (disasm_get) */
	hs_dwarf_check_debug(g->dw, g->libc);
	bool syms = find_main_arena(g->dw, g->libc, &g->main_arena, &g->mp);
	*mp_size = 0;
	if (syms)
		hs_error_destroy(hs_dwarf_symbol(g->dw, g->libc, "mp_", NULL,
						 mp_size, NULL));
	char *pkg = NULL;
	char *ver = glibc_version(g, &pkg);
	const char *bid = g->libc->build_id ? g->libc->build_id : "unknown";
	err = g->libc->debug_source == HS_DEBUG_NONE ?
	      hs_error_create(HS_ERR_NO_DEBUGINFO, "no debug info") :
	      load_layouts(g);
	if (!err) {
		hs_heap_found(g->heap, "layouts", "dwarf", "%s",
			      g->libc->debug_path ? g->libc->debug_path : g->libc->name);
	} else if (err->code == HS_ERR_NO_DEBUGINFO || err->code == HS_ERR_NOT_FOUND) {
		/* no DWARF for the malloc types: the release's row */
		hs_error_destroy(err);
		bool exact;
		const struct hs_gl_layout *L = hs_gl_layout_find(ver, g->libc->build_id,
								 &exact);
		if (!L) {
			err = hs_error_create(
				HS_ERR_NO_DEBUGINFO,
				"%s (glibc %s, build-id %s) has no debug info and its release is not in heapsift's layout table, so the malloc heap cannot be read; install its debug info (Debian: apt-get install libc6-dbg%s%s), pass --debug-dir DIR, or add a row with scripts/gen_gllayout.py (docs/glibc-layouts.md)",
				g->libc->name, ver ? ver : "of unknown version", bid,
				pkg ? "=" : "", pkg ? pkg : "");
			goto fail;
		}
		if ((err = load_layouts_row(g, L)))
			goto fail;
		if (!exact)
			hs_log_warn(g->log, "%s (glibc %s, build-id %s) has no debug info; using the layouts of glibc %s read from another build (Debian %s, build-id %s): the walk's checks decide",
				    g->libc->name, ver, bid, L->version, L->packages,
				    L->build_id);
		hs_heap_found(g->heap, "layouts", "layout_row",
			      "glibc %s, Debian %s, build-id %s%s", L->version,
			      L->packages, L->build_id,
			      exact ? "" : " (another build of the same release)");
	} else {
		goto fail;
	}
	if (syms) {
		hs_heap_found(g->heap, "main_arena", "symbol", "libc+%#llx",
			      (unsigned long long)(g->main_arena - g->libc->bias));
		hs_heap_found(g->heap, "mp_", "symbol", "libc+%#llx",
			      (unsigned long long)(g->mp - g->libc->bias));
	} else {
		if ((err = find_by_code(g, &cs, true, true)))
			goto fail;
		*mp_size = g->mp_sizeof;
	}
	g->safe_linking = version_at_least(ver, 2, 32);
	free(pkg);
	pkg = NULL;
	if (g->has_tcache) {
		g->tpoff_known = tcache_tpoff(g, &g->tpoff);
		if (g->tpoff_known)
			hs_heap_found(g->heap, "tcache", "symbol", "TLS offset %lld",
				      (long long)g->tpoff);
		else
			find_tpoff_by_code(g, &cs);
		if (!g->tpoff_known)
			hs_heap_found(g->heap, "tcache", "not_found", NULL);
	}
	hs_disasm_close(cs);
	g->heap->version = ver;
	return NULL;
fail:
	hs_disasm_close(cs);
	free(pkg);
	free(ver);
	return err;
}

/* The walk proper, from what discovery found (g's layouts, main_arena, mp,
 * safe_linking, tpoff): the arenas' ring and bins, the thread caches, every
 * heap's chunks, the mmapped chunks, and the checks of one against the
 * other.  Reads only the core: no module, no debug info. */
static struct hs_error *walk(struct gl *g, uint64_t mp_size)
{
	struct hs_error *err;
	if ((err = hs_heap_add_region(g->heap, g->main_arena,
				      g->main_arena + g->ms_size, HS_REGION_META)) ||
	    (err = hs_heap_add_region(g->heap, g->mp, g->mp + (mp_size ? mp_size : 8),
				      HS_REGION_META)))
		return err;
	g->heap_max = HEAP_MAX_DEFAULT;
	if (g->has_hp_pagesize) {
		uint64_t hp;
		if (hs_core_read_u64(g->core, g->mp + g->mp_hp_pagesize, &hp) && hp &&
		    !(hp & (hp - 1)))
			g->heap_max = 4 * hp;
	}
	uint64_t v;
	if (hs_core_read_u64(g->core, g->mp + g->mp_n_mmaps, &v))
		g->heap->mmap_expected = (uint32_t)v;  /* int n_mmaps */
	if (hs_core_read_u64(g->core, g->mp + g->mp_mmapped_mem, &v))
		g->heap->mmap_expected_bytes = v;
	if (hs_core_read_u64(g->core, g->mp + g->mp_mmap_threshold, &v))
		g->heap->mmap_threshold = v;

	/* Thread caches first: their chunks look in use in the heap. */
	if ((err = read_tcaches(g)))
		return err;

	uint8_t *buf = hs_malloc(g->ms_size);
	if (!buf)
		return &hs_error_nomem;
	struct hs_mallinfo2 mi = {0};
	uint64_t arena = g->main_arena;
	size_t idx = 0;
	struct chunkset seen = {0};
	do {
		bool fresh;
		if ((err = set_add(&seen, arena, 0, &fresh)))
			goto out;
		if (!fresh || idx >= MAX_ARENAS) {
			hs_log_warn(g->log, "the arena ring loops without returning to main_arena (at %#llx); cut",
				    (unsigned long long)arena);
			g->heap->partial = true;
			break;
		}
		if ((err = hs_core_read(g->core, arena, buf, g->ms_size))) {
			hs_log_warn(g->log, "arena %zu at %#llx: %s", idx,
				    (unsigned long long)arena, err->message);
			hs_error_destroy(err);
			err = NULL;
			g->heap->partial = true;
			break;
		}
		struct hs_arena ar = {.addr = arena, .main = idx == 0};
		memcpy(&ar.top, buf + g->ms_top, 8);
		memcpy(&ar.system_mem, buf + g->ms_system_mem, 8);
		if (ar.system_mem > g->core->mapped_bytes) {
			/* a statistic, not a structure: the walk goes on */
			hs_log_warn(g->log, "arena %zu at %#llx: system_mem says %llu bytes, more than the %llu bytes the core maps; its statistics are not trusted",
				    idx, (unsigned long long)arena,
				    (unsigned long long)ar.system_mem,
				    (unsigned long long)g->core->mapped_bytes);
		}
		uint64_t att = 0;
		memcpy(&att, buf + g->ms_attached, 8);
		ar.attached_threads = (uint32_t)att;
		if (!hs_core_read_u64(g->core, ar.top + g->mc_size, &ar.top_size))
			ar.top_size = 0;
		ar.top_size &= ~(uint64_t)SIZE_BITS;

		struct arena_stats st = {.nblocks = 1, .avail = ar.top_size};
		/* malloc_init_state (malloc.c) has not run: top and every bin
		 * are still zero, as in a static program that never called
		 * malloc.  Nothing to walk, and nothing wrong. */
		bool uninit = !ar.top;
		for (uint64_t w = 0; uninit && w < 2 * (g->nbins - 1); w++) {
			uint64_t bin;
			memcpy(&bin, buf + g->ms_bins + 8 * w, 8);
			uninit = !bin;
		}
		if (uninit) {
			st.nblocks = 0;
			ar.uninitialized = true;
		} else {
			if ((err = read_fastbins(g, arena, buf, idx, &st)))
				goto out;
			count_bins(g, arena, idx, &st);
		}
		/* int_mallinfo (malloc.c) */
		mi.smblks += st.nfast;
		mi.ordblks += st.nblocks;
		mi.fordblks += st.avail + st.fastavail;
		mi.uordblks += ar.system_mem - (st.avail + st.fastavail);
		mi.arena += ar.system_mem;
		mi.fsmblks += st.fastavail;
		if (idx == 0)
			mi.keepcost = ar.top_size;

		ar.bin_chunks = st.nblocks ? st.nblocks - 1 : 0;
		ar.fastbin_chunks = st.nfast;
		size_t ai;
		if ((err = hs_heap_add_arena(g->heap, &ar, &ai)))
			goto out;
		memcpy(&arena, buf + g->ms_next, 8);
		idx++;
	} while (arena != g->main_arena);
	mi.hblks = g->heap->mmap_expected;
	mi.hblkhd = g->heap->mmap_expected_bytes;
	struct hs_mallinfo2 *mip = hs_malloc(sizeof(*mip));
	if (!mip) {
		err = &hs_error_nomem;
		goto out;
	}
	*mip = mi;
	g->heap->stats = mip;

	/* Now the chunks, arena by arena (fastbins of all arenas are known). */
	/* Room for every chunk there can be (untouched pages cost nothing),
	 * but never more than the core can hold: system_mem is read from the
	 * core, and a chunk's header must be in the file to be walked.  The
	 * reservation is a hint; the table still grows if it fails.  Bytes
	 * are summed (and bounded) first, then divided into chunks. */
	uint64_t sys = 0, most = g->core->present_bytes;
	for (size_t i = 0; i < g->heap->narenas; i++) {
		uint64_t s = g->heap->arenas[i].system_mem;
		sys = s > most - sys ? most : sys + s;
	}
	err = hs_heap_reserve(g->heap, (size_t)(sys / MINSIZE + 1024));
	hs_error_destroy(err);
	err = NULL;
	g->walked_bin = hs_calloc(g->heap->narenas, sizeof(*g->walked_bin));
	g->walked_fast = hs_calloc(g->heap->narenas, sizeof(*g->walked_fast));
	if (!g->walked_bin || !g->walked_fast) {
		free(g->walked_bin);
		free(g->walked_fast);
		g->walked_bin = g->walked_fast = NULL;
	}
	for (size_t i = 0; i < g->heap->narenas; i++) {
		struct hs_arena *ar = &g->heap->arenas[i];
		if ((err = hs_core_read(g->core, ar->addr, buf, g->ms_size))) {
			hs_error_destroy(err);
			err = NULL;
			continue;
		}
		if (ar->uninitialized)
			continue;
		if (i == 0)
			err = walk_main_arena(g, buf, ar);
		else
			err = walk_other_arena(g, ar->addr, i, ar);
		if (err)
			goto out;
	}
	hs_log_progress_end(g->log);
	if ((err = scan_mmapped(g)))
		goto out;
	err = hs_heap_finish_partial(g->heap, g->log);
	if (!err)
		cross_check(g);
out:
	chunkset_free(&seen);
	free(buf);
	return err;
}

static void scratch_free(struct gl *g)
{
	specials_free(&g->special);
	free(g->walked_bin);
	free(g->walked_fast);
	g->walked_bin = g->walked_fast = NULL;
	ranges_free(&g->covered);
}

/* Frees the walk's scratch; the heap to *ret, or destroyed on err. */
static struct hs_error *walk_end(struct gl *g, struct hs_error *err,
				 struct hs_heap **ret)
{
	scratch_free(g);
	if (err) {
		hs_heap_destroy(g->heap);
		return err;
	}
	*ret = g->heap;
	return NULL;
}

/* ---- walking ahead of libc's DWARF ----
 *
 * libc's DWARF takes most of discovery (decompressing libc6-dbg's debug
 * sections, 60 ms, and finding the malloc types among its units), and the
 * walk needs only its layouts.  When heapsift's layout table has a row
 * read from this very libc (the same build-id), the walk can start with
 * the row while another thread reads the DWARF; then the two are
 * compared.  The same layouts: the walk stands, and discovery reports
 * what it would have (the DWARF's, or the row's when libc has no usable
 * DWARF).  Other layouts: the walk is thrown away, warnings and all, and
 * done again after discovery as usual.  Only with leave to use a thread
 * (hs_walk_options.threads), the symbols main_arena and mp_, and an
 * exact row.  Everything discovery does besides the DWARF (symbols, the
 * version, the tcache's TLS offset) is done first, on this thread: only
 * one thread uses dw at a time, and the walk proper reads only the core. */

struct dwarf_ahead {
	struct gl g;            /* its layouts: the DWARF's */
	struct hs_error *err;   /* discovery would fail with it */
	bool nodebug;           /* no usable DWARF: discovery takes the row */
	pthread_t thread;
};

static void *dwarf_ahead_main(void *arg)
{
	struct dwarf_ahead *a = arg;
	struct gl *g = &a->g;
	hs_dwarf_check_debug(g->dw, g->libc);
	if (g->libc->debug_source == HS_DEBUG_NONE) {
		a->nodebug = true;
	} else if ((a->err = load_layouts(g)) &&
		   (a->err->code == HS_ERR_NO_DEBUGINFO || a->err->code == HS_ERR_NOT_FOUND)) {
		hs_error_destroy(a->err);
		a->err = NULL;
		a->nodebug = true;
	}
	/* done with dw: the other modules' debug info, when asked for */
	hs_dwarf_idle(g->dw);
	return NULL;
}

enum { WALK_LAYOUT_FIELDS = 30 };

/* The layout fields walk() reads, those a missing member leaves unused
 * as 0. */
static void walk_layout(const struct gl *g, uint64_t out[WALK_LAYOUT_FIELDS])
{
	const uint64_t v[WALK_LAYOUT_FIELDS] = {
		g->ms_size, g->ms_flags, g->ms_fastbins, g->nfastbins, g->ms_top,
		g->ms_bins, g->nbins, g->ms_next, g->ms_system_mem, g->ms_attached,
		g->mc_size, g->mc_fd, g->mc_bk, g->hi_sizeof, g->hi_ar_ptr,
		g->hi_prev, g->hi_size, g->mp_sbrk_base, g->mp_n_mmaps,
		g->mp_mmapped_mem, g->mp_mmap_threshold, g->mp_sizeof,
		g->has_hp_pagesize, g->has_hp_pagesize ? g->mp_hp_pagesize : 0,
		g->has_tcache, g->has_tcache ? g->tc_counts : 0,
		g->has_tcache ? g->tc_count_size : 0,
		g->has_tcache ? g->tc_entries : 0, g->has_tcache ? g->tc_nbins : 0,
		g->has_tcache ? g->tc_sizeof : 0,
	};
	memcpy(out, v, sizeof(v));
}

/* Do a and b walk with the same layouts? */
static bool same_layouts(const struct gl *a, const struct gl *b)
{
	uint64_t x[WALK_LAYOUT_FIELDS], y[WALK_LAYOUT_FIELDS];
	walk_layout(a, x);
	walk_layout(b, y);
	return !memcmp(x, y, sizeof(x));
}

/* Discovery and walk as above into g; *done false: not tried, or thrown
 * away (g is then as it was, dw back with its owner's caller). */
static struct hs_error *walk_ahead(struct gl *g,
				   const struct hs_walk_options *opts, bool *done)
{
	*done = false;
	if (!opts || !opts->threads || !g->libc->build_id)
		return NULL;
	struct gl s = *g;
	if (!find_main_arena(s.dw, s.libc, &s.main_arena, &s.mp))
		return NULL;
	char *ver = glibc_version(&s, NULL);
	bool exact = false;
	const struct hs_gl_layout *L = ver ?
		hs_gl_layout_find(ver, s.libc->build_id, &exact) : NULL;
	struct hs_error *err;
	if (!L || !exact || (err = load_layouts_row(&s, L))) {
		if (L && exact)
			hs_error_destroy(err);
		free(ver);
		return NULL;
	}
	if (!(s.heap = hs_heap_create(&hs_glibc_backend))) {
		free(ver);
		return NULL;
	}
	s.heap->totals_only = g->heap->totals_only;
	/* discovery's symbols and thread caches, as discover() does them */
	uint64_t mp_size = 0;
	hs_error_destroy(hs_dwarf_symbol(s.dw, s.libc, "mp_", NULL, &mp_size, NULL));
	hs_heap_found(s.heap, "main_arena", "symbol", "libc+%#llx",
		      (unsigned long long)(s.main_arena - s.libc->bias));
	hs_heap_found(s.heap, "mp_", "symbol", "libc+%#llx",
		      (unsigned long long)(s.mp - s.libc->bias));
	s.safe_linking = version_at_least(ver, 2, 32);
	if (s.has_tcache) {
		s.tpoff_known = tcache_tpoff(&s, &s.tpoff);
		if (s.tpoff_known) {
			hs_heap_found(s.heap, "tcache", "symbol", "TLS offset %lld",
				      (long long)s.tpoff);
		} else {
			struct hs_disasm *cs = NULL;
			find_tpoff_by_code(&s, &cs);
			hs_disasm_close(cs);
		}
		if (!s.tpoff_known)
			hs_heap_found(s.heap, "tcache", "not_found", NULL);
	}
	s.heap->version = ver;

	struct dwarf_ahead *a = hs_calloc(1, sizeof(*a));
	if (!a) {
		hs_heap_destroy(s.heap);
		return NULL;
	}
	a->g = *g;
	if (pthread_create(&a->thread, NULL, dwarf_ahead_main, a) != 0) {
		free(a);
		hs_heap_destroy(s.heap);
		return NULL;
	}
	struct hs_log_held held;
	hs_log_hold(s.log, &held);
	err = walk(&s, mp_size);
	pthread_join(a->thread, NULL);
	bool keep = !a->err && (a->nodebug || same_layouts(&a->g, &s));
	hs_log_release(s.log, keep);
	if (!keep) {
		hs_error_destroy(err);
		scratch_free(&s);
		hs_heap_destroy(s.heap);
		hs_dwarf_preload_wait(g->dw);  /* dw back from the thread */
		err = a->err;  /* discovery fails with it, before any walk */
		free(a);
		*done = err != NULL;
		return err;
	}
	bool nodebug = a->nodebug;
	free(a);
	/* discovery reports how it found the layouts first */
	struct hs_heap *h = s.heap;
	struct hs_found rest[HS_HEAP_MAX_FOUND];
	size_t n = h->nfound;
	memcpy(rest, h->found, n * sizeof(*rest));
	h->nfound = 0;
	if (nodebug)
		hs_heap_found(h, "layouts", "layout_row",
			      "glibc %s, Debian %s, build-id %s", L->version,
			      L->packages, L->build_id);
	else
		hs_heap_found(h, "layouts", "dwarf", "%s",
			      s.libc->debug_path ? s.libc->debug_path : s.libc->name);
	for (size_t i = 0; i < n && h->nfound < HS_HEAP_MAX_FOUND; i++)
		h->found[h->nfound++] = rest[i];
	hs_heap_destroy(g->heap);
	*g = s;
	*done = true;
	return err;
}

struct hs_error *hs_glibc_walk(const struct hs_core *core, struct hs_dwarf *dw,
			       struct hs_log *log,
			       const struct hs_walk_options *opts,
			       struct hs_heap **ret)
{
	struct gl g = {.core = core, .dw = dw, .log = log, .page = core->page_size,
		       .special.core = core};
	if (!hs_glibc_detect(dw, &g.libc))
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "no glibc malloc in this core (no libc module, no main_arena symbol)");
	g.heap = hs_heap_create(&hs_glibc_backend);
	if (!g.heap)
		return &hs_error_nomem;
	/* the walk reads no block back (cross_check counts as it goes) */
	g.heap->totals_only = opts && opts->totals_only;
	bool done;
	struct hs_error *err = walk_ahead(&g, opts, &done);
	if (!done) {
		uint64_t mp_size;
		err = discover(&g, &mp_size);
		if (!err) {
			hs_dwarf_idle(dw);  /* walk() reads only the core */
			err = walk(&g, mp_size);
		}
	}
	return walk_end(&g, err, ret);
}

struct hs_error *hs_glibc_walk_known(const struct hs_core *core,
				     const struct hs_glibc_known *k,
				     struct hs_log *log, struct hs_heap **ret)
{
	struct gl g = {.core = core, .log = log, .page = core->page_size,
		       .special.core = core};
	g.heap = hs_heap_create(&hs_glibc_backend);
	if (!g.heap)
		return &hs_error_nomem;
	struct hs_error *err = load_layouts_row(&g, k->layout);
	g.main_arena = k->main_arena;
	g.mp = k->mp;
	g.safe_linking = k->safe_linking;
	g.tpoff_known = k->tpoff_known;
	g.tpoff = k->tpoff;
	if (!err)
		err = walk(&g, g.mp_sizeof);
	return walk_end(&g, err, ret);
}

/* ---- the backend ---- */

const struct hs_mallinfo2 *hs_glibc_mallinfo2(const struct hs_heap *heap)
{
	return heap->backend == &hs_glibc_backend ? heap->stats : NULL;
}

static void stats_json(struct hs_jsonw *w, const struct hs_heap *heap)
{
	const struct hs_mallinfo2 *m = hs_glibc_mallinfo2(heap);
	if (!m)
		return;
	hs_jsonw_key(w, "mallinfo2");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "arena", m->arena);
	hs_jsonw_kuint(w, "ordblks", m->ordblks);
	hs_jsonw_kuint(w, "smblks", m->smblks);
	hs_jsonw_kuint(w, "hblks", m->hblks);
	hs_jsonw_kuint(w, "hblkhd", m->hblkhd);
	hs_jsonw_kuint(w, "usmblks", m->usmblks);
	hs_jsonw_kuint(w, "fsmblks", m->fsmblks);
	hs_jsonw_kuint(w, "uordblks", m->uordblks);
	hs_jsonw_kuint(w, "fordblks", m->fordblks);
	hs_jsonw_kuint(w, "keepcost", m->keepcost);
	hs_jsonw_object_end(w);
}

static void stats_text(FILE *out, const struct hs_heap *heap)
{
	char b[32];
	fprintf(out, "  mmapped  %10" PRIu64 " chunks  %12s\n", heap->mmap_count,
		hs_fmt_size(b, heap->mmap_bytes));
	const struct hs_mallinfo2 *m = hs_glibc_mallinfo2(heap);
	if (m)
		fprintf(out, "mallinfo2  arena %" PRIu64 " ordblks %" PRIu64
			" smblks %" PRIu64 " hblks %" PRIu64 " hblkhd %" PRIu64
			" usmblks %" PRIu64 " fsmblks %" PRIu64
			" uordblks %" PRIu64 " fordblks %" PRIu64
			" keepcost %" PRIu64 "\n",
			m->arena, m->ordblks, m->smblks, m->hblks, m->hblkhd,
			m->usmblks, m->fsmblks, m->uordblks, m->fordblks,
			m->keepcost);
}

/* Every chunk starts 16 bytes below its user address (prev_size, size);
 * a heap chunk owns only its size field, an mmapped one both. */
static const struct hs_place places[HS_WHERE_MAX] = {
	[HS_GL_HEAP] = {"heap", .flags = HS_PLACE_CLASSED, .header = 8,
			.chunk_before = 16, .overhead = 8},
	[HS_GL_MMAPPED] = {"mmapped", .flags = HS_PLACE_PAGES, .header = 16,
			   .chunk_before = 16, .overhead = 16},
	[HS_GL_INTERNAL] = {"internal", .header = 8,
			    .chunk_before = 16, .overhead = 8},
	/* frag counts bin chunks of 1 KiB and more as large_bins */
	[HS_GL_BIN] = {"bin", "small_bins", .header = 8, .chunk_before = 16,
		       .overhead = 8},
	[HS_GL_FASTBIN] = {"fastbin", "fastbins", .header = 8,
			   .chunk_before = 16, .overhead = 8},
	[HS_GL_TCACHE] = {"tcache", "tcache", .header = 8, .chunk_before = 16,
			  .overhead = 8},
	[HS_GL_TOP] = {"top", "top", .header = 8, .chunk_before = 16,
		       .overhead = 16},
};

/* request2size (malloc.c) less the size field: max(24, (request + 8 + 15)
 * & ~15) - 8 on x86-64. */
static uint64_t size_class(uint64_t request)
{
	uint64_t c = (request + 8 + 15) & ~(uint64_t)15;
	return (c < 32 ? 32 : c) - 8;
}

/* chunks go by 16 bytes; the smallest (24 usable) serves 0 to 24; an
 * mmapped chunk is the request rounded up to a page (sysmalloc), 4 KiB on
 * x86-64 */
static uint64_t slack(const struct hs_place *place, uint64_t size)
{
	if (place->flags & HS_PLACE_PAGES)
		return 4096;
	return size <= 24 ? size + 1 : 16;
}

const struct hs_backend hs_glibc_backend = {
	.name = "glibc",
	.places = places,
	.size_class = size_class,
	.slack = slack,
	.walk = hs_glibc_walk,
	.stats_json = stats_json,
	.stats_text = stats_text,
};
