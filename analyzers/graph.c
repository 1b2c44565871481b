/* The address map and the pointer graph it builds: see analyzers/graph.h. */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/graph.h"
#include "src/parallel.h"
#include "src/vector.h"

#include <stdlib.h>
#include <string.h>

enum {
	GRAN_SHIFT = 8,
	SPAN_GAP = 1 << 20,
};

static uint64_t alloc_end(const struct hs_alloc *a)
{
	return a->addr + a->size;
}

static void addrmap_destroy(struct hs_addrmap *m)
{
	for (size_t i = 0; i < m->nspans; i++) {
		free(m->spans[i].group_first);
		free(m->spans[i].rel);
	}
	free(m->spans);
	m->spans = NULL;
	m->nspans = 0;
}

static struct hs_error *addrmap_build(struct hs_addrmap *m,
				      const struct hs_heap *heap)
{
	m->heap = heap;
	m->lo = m->hi = 0;
	size_t n = heap->nallocs;
	if (!n)
		return NULL;
	const struct hs_alloc *a = heap->allocs;
	m->lo = a[0].addr;
	m->hi = alloc_end(&a[n - 1]);
	size_t cap = 16;
	m->spans = hs_malloc(cap * sizeof(*m->spans));
	if (!m->spans)
		return &hs_error_nomem;
	size_t i = 0;
	while (i < n) {
		size_t j = i + 1;
		uint64_t end = alloc_end(&a[i]);
		while (j < n && a[j].addr - end < SPAN_GAP) {
			if (alloc_end(&a[j]) > end)
				end = alloc_end(&a[j]);
			j++;
		}
		if (m->nspans == cap) {
			cap *= 2;
			struct hs_addrmap_span *s = hs_realloc(m->spans, cap * sizeof(*s));
			if (!s)
				return &hs_error_nomem;
			m->spans = s;
		}
		struct hs_addrmap_span *s = &m->spans[m->nspans];
		s->base = a[i].addr & ~((1ull << GRAN_SHIFT) - 1);
		s->end = end;
		s->first_id = (uint32_t)i;
		s->last_id = (uint32_t)j;
		uint64_t ngran = ((end - s->base) >> GRAN_SHIFT) + 1;
		s->rel = hs_malloc(ngran * sizeof(*s->rel));
		hs_vector_hugepages(s->rel, ngran * sizeof(*s->rel));
		s->group_first = hs_malloc(((ngran >> HS_ADDRMAP_GROUP_SHIFT) + 1) *
					sizeof(*s->group_first));
		m->nspans++;  /* (freed with the map, whatever failed) */
		if (!s->rel || !s->group_first)
			return &hs_error_nomem;
		size_t k = i;
		for (uint64_t g = 0; g < ngran; g++) {
			uint64_t gstart = s->base + (g << GRAN_SHIFT);
			while (k < j && alloc_end(&a[k]) <= gstart)
				k++;
			if (!(g & ((1u << HS_ADDRMAP_GROUP_SHIFT) - 1)))
				s->group_first[g >> HS_ADDRMAP_GROUP_SHIFT] = (uint32_t)k;
			/* below 2^16 in a sorted, disjoint table; were it not,
			 * a smaller entry only makes the lookup walk further */
			size_t rel = k - s->group_first[g >> HS_ADDRMAP_GROUP_SHIFT];
			s->rel[g] = rel < UINT16_MAX ? (uint16_t)rel : UINT16_MAX;
		}
		i = j;
	}
	return NULL;
}

/* The first allocation that ends past the start of granule g of span s. */
static inline uint32_t span_first(const struct hs_addrmap_span *s, uint64_t g)
{
	return s->group_first[g >> HS_ADDRMAP_GROUP_SHIFT] + s->rel[g];
}

/* The span that holds v, or NULL. */
static const struct hs_addrmap_span *span_of(const struct hs_addrmap *m,
					     uint64_t v)
{
	if (v < m->lo || v >= m->hi)
		return NULL;
	size_t lo = 0, hi = m->nspans;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v < m->spans[mid].base)
			hi = mid;
		else if (v >= m->spans[mid].end)
			lo = mid + 1;
		else
			return &m->spans[mid];
	}
	return NULL;
}

/* The block that holds v, from k (the first block of v's granule) on in
 * span s, or HS_NO_ALLOC. */
static uint32_t lookup_from(const struct hs_addrmap *m,
			    const struct hs_addrmap_span *s, uint32_t k, uint64_t v)
{
	const struct hs_alloc *a = m->heap->allocs;
	while (k < s->last_id && alloc_end(&a[k]) <= v)
		k++;
	if (k < s->last_id && a[k].addr <= v)
		return k;
	return HS_NO_ALLOC;
}

uint32_t hs_addrmap_lookup(const struct hs_addrmap *m, uint64_t v)
{
	const struct hs_addrmap_span *s = span_of(m, v);
	if (!s)
		return HS_NO_ALLOC;
	return lookup_from(m, s, span_first(s, (v - s->base) >> GRAN_SHIFT), v);
}

void hs_graph_prefetch(const struct hs_graph *g, uint64_t v, struct hs_graph_probe *p)
{
	const struct hs_addrmap_span *s = p->span = span_of(&g->map, v);
	if (s)
		__builtin_prefetch(&s->rel[(v - s->base) >> GRAN_SHIFT]);
}

uint32_t hs_graph_prefetch_target(const struct hs_graph *g, uint64_t v,
				  struct hs_graph_probe *p)
{
	const struct hs_addrmap_span *s = p->span;
	if (!s)
		return HS_NO_ALLOC;
	uint32_t k = p->k = span_first(s, (v - s->base) >> GRAN_SHIFT);
	if (k >= s->last_id)
		return HS_NO_ALLOC;
	__builtin_prefetch(&g->map.heap->allocs[k]);
	__builtin_prefetch((const char *)&g->map.heap->allocs[k] + 64);
	return k;
}

/* hs_graph_target of v in block id (HS_NO_ALLOC: none), as the lookup
 * found it. */
static uint32_t target_of(const struct hs_graph *g, uint64_t v, uint32_t id,
			  bool *interior)
{
	if (id == HS_NO_ALLOC)
		return id;
	const struct hs_alloc *a = &g->map.heap->allocs[id];
	if (!hs_alloc_in_graph(a))
		return HS_NO_ALLOC;
	*interior = v != a->addr;
	/* into a CPython object's GC head or pre-header: no reference
	 * (with the pyobject rule on: off, every interior pointer counts,
	 * as memcheck counts them) */
	if (*interior && g->rules && g->rules->py &&
	    (g->rules->enabled & 1u << HS_RULE_PYOBJECT) &&
	    hs_py_in_head(g->rules->py, a, id, v))
		return HS_NO_ALLOC;
	return id;
}

uint32_t hs_graph_target(const struct hs_graph *g, uint64_t v, bool *interior)
{
	return target_of(g, v, hs_addrmap_lookup(&g->map, v), interior);
}

uint32_t hs_graph_probe_target(const struct hs_graph *g, uint64_t v,
			       const struct hs_graph_probe *p, bool *interior)
{
	return target_of(g, v, p->span ? lookup_from(&g->map, p->span, p->k, v) : HS_NO_ALLOC,
			 interior);
}

/* ---- the scan ---- */

struct part {
	const struct hs_core *core;
	const struct hs_graph *g;
	uint32_t from, to;      /* sources [from, to) */
	struct hs_edgerow_fill fill;    /* where its rows start (from: a
					 * group's first row) */
	uint32_t *edges;        /* the open row's edges, as found */
	size_t nedges, cap;
	/* a long open row's targets as bits instead (go_wide): start
	 * edges, rule edges, interior edges, nwords words each */
	uint64_t *wide;
	size_t nwords;
	uint8_t *rows;          /* the closed rows (src/edgerow.h) */
	size_t nbytes, capbytes;
	uint64_t total;         /* edges in them */
	uint64_t words;
	bool nomem;
	uint64_t unreadable;    /* sources not (wholly) in the core */
	struct hs_log *log;     /* progress (the workers that show it) */
	uint64_t *done;         /* blocks scanned by all parts (progress) */
	uint64_t counted;       /* what this part added to *done */
	struct hs_offstats stats;       /* interior pointers, for learning */
	bool learn;
	/* learning: the rows with an interior edge (shared: a row's bit is
	 * set once, atomically, as it closes), then the blocks a start or
	 * rule edge of the part's rows holds (its own, held_pass) */
	uint64_t *interior_rows, *held;
	uint32_t open;          /* the first source whose row is still open */
};

/* Edge e into the wide row's bit set of its kind. */
static inline void wide_add(struct part *p, uint32_t e)
{
	uint64_t *set = p->wide + p->nwords * ((e & HS_EDGE_INTERIOR) ? 2 :
					       (e & HS_EDGE_RULE) ? 1 : 0);
	uint32_t id = HS_EDGE_ID(e);
	set[id / 64] |= 1ull << (id % 64);
}

/* A row of very many edges (a hash table's array of a million slots:
 * 2 M edges) would take 4 bytes an edge here, and as much again for its
 * sort's scratch; three bits a node take less from about 3/64 of the
 * nodes on, and make the sort a walk over the bits.  The open row's
 * edges so far go to the bits; false when memory ran out. */
static bool go_wide(struct part *p)
{
	p->nwords = (size_t)p->g->n / 64 + 1;
	if (!(p->wide = hs_calloc(3 * p->nwords, sizeof(uint64_t))))
		return false;
	for (size_t i = 0; i < p->nedges; i++)
		wide_add(p, p->edges[i]);
	p->nedges = 0;
	return true;
}

static bool push_edge(struct part *p, uint32_t e)
{
	if (p->wide) {
		wide_add(p, e);
		return true;
	}
	if (p->nedges == p->cap) {
		if (p->cap >= 3 * ((size_t)p->g->n / 64) && p->cap >= 4096)
			return go_wide(p) && push_edge(p, e);
		size_t cap = p->cap ? p->cap * 2 : 4096;
		uint32_t *v = hs_realloc(p->edges, cap * sizeof(*v));
		if (!v)
			return false;
		p->edges = v;
		p->cap = cap;
	}
	p->edges[p->nedges++] = e;
	return true;
}

/* Sorts a source's edges by target with the start edge first, then a
 * rule's, then an interior one, and keeps one per target. */
static size_t unique_edges(uint32_t *e, size_t n)
{
	if (n < 2)
		return n;
	/* sort by (id, rank): start 0, rule 1, interior 2 */
	for (size_t i = 0; i < n; i++)
		e[i] = HS_EDGE_ID(e[i]) << 2 |
		       ((e[i] & HS_EDGE_INTERIOR) ? 2 : (e[i] & HS_EDGE_RULE) ? 1 : 0);
	hs_sort_u32(e, n);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && (e[k - 1] >> 2) == (e[i] >> 2))
			continue;
		e[k++] = e[i];
	}
	for (size_t i = 0; i < k; i++)
		e[i] = (e[i] >> 2) | ((e[i] & 3) == 2 ? HS_EDGE_INTERIOR :
				      (e[i] & 3) == 1 ? HS_EDGE_RULE : 0);
	return k;
}

/* The scan resolves the words it finds in batches: each pointer's lookup
 * waits on two cache misses (the granule entry, then the block), and a
 * batch asks for all of a stage's lines before it reads the first.  The
 * words are handled in the order they were found, so the edges are the
 * same as one at a time. */
enum { SCAN_BATCH = 64 };

struct cand {
	uint64_t v;
	uint32_t src;
	struct hs_graph_probe probe;
};

/* Closes the rows of the sources before `upto`: deduplicated, written
 * as varints after the part's rows, their bytes counted; false when
 * memory ran out. */
static bool close_sources(struct part *p, uint32_t upto)
{
	while (p->open < upto) {
		/* (no row yet: edges may still be NULL) */
		size_t n = p->nedges ? unique_edges(p->edges, p->nedges) : 0;
		const uint64_t *ws = p->wide, *wr = ws + p->nwords, *wi = wr + p->nwords;
		if (ws)
			for (size_t x = 0; x < p->nwords; x++)
				n += (size_t)__builtin_popcountll(ws[x] | wr[x] | wi[x]);
		if (p->capbytes - p->nbytes < n * HS_EDGEROW_MAX) {
			size_t cap = p->capbytes ? p->capbytes * 2 : 1 << 16;
			while (cap - p->nbytes < n * HS_EDGEROW_MAX)
				cap *= 2;
			uint8_t *b = hs_realloc(p->rows, cap);
			if (!b)
				return false;
			hs_vector_hugepages(b, cap);
			p->rows = b;
			p->capbytes = cap;
		}
		size_t at = p->nbytes;
		uint32_t prev = p->open;
		bool interior = false;
		if (ws) {
			/* by target, each once: a start edge, else a rule's,
			 * else an interior one (as unique_edges keeps) */
			for (size_t x = 0; x < p->nwords; x++) {
				for (uint64_t b = ws[x] | wr[x] | wi[x]; b; b &= b - 1) {
					unsigned k = (unsigned)__builtin_ctzll(b);
					uint32_t e = (uint32_t)(x * 64 + k);
					if (!(ws[x] >> k & 1))
						e |= wr[x] >> k & 1 ? HS_EDGE_RULE : HS_EDGE_INTERIOR;
					p->nbytes += hs_edgerow_put(p->rows + p->nbytes, &prev, e);
					interior |= (e & HS_EDGE_INTERIOR) != 0;
				}
			}
			free(p->wide);
			p->wide = NULL;
		} else {
			for (size_t i = 0; i < n; i++) {
				p->nbytes += hs_edgerow_put(p->rows + p->nbytes, &prev,
							    p->edges[i]);
				interior |= (p->edges[i] & HS_EDGE_INTERIOR) != 0;
			}
		}
		if (interior && p->interior_rows)
			__atomic_fetch_or(&p->interior_rows[p->open / 64],
					  1ull << (p->open % 64), __ATOMIC_RELAXED);
		if (!hs_edgerow_fill_row(&p->fill, p->nbytes - at))
			return false;
		p->total += n;
		p->nedges = 0;
		p->open++;
	}
	return true;
}

/* The batch's words, resolved and filed under their sources; false when
 * memory ran out. */
static bool resolve(struct part *p, struct cand *c, size_t n)
{
	const struct hs_graph *g = p->g;
	const struct hs_alloc *allocs = g->map.heap->allocs;
	/* each stage finds what the next reads, and asks for it */
	for (size_t i = 0; i < n; i++)
		hs_graph_prefetch(g, c[i].v, &c[i].probe);
	for (size_t i = 0; i < n; i++)
		hs_graph_prefetch_target(g, c[i].v, &c[i].probe);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = c[i].v;
		uint32_t src = c[i].src;
		/* (most words are in the source whose row is open) */
		if (p->open < src && !close_sources(p, src))
			return false;
		bool interior;
		uint32_t t = hs_graph_probe_target(g, v, &c[i].probe, &interior);
		if (t != HS_NO_ALLOC && g->pystarts &&
		    hs_py_is_start(g->rules->py, &allocs[t], t, v) &&
		    __atomic_load_n(&g->pystarts[t], __ATOMIC_RELAXED) != UINT32_MAX)
			__atomic_fetch_add(&g->pystarts[t], 1, __ATOMIC_RELAXED);
		if (t == HS_NO_ALLOC || t == src)
			continue;
		uint32_t flag = 0;
		if (interior) {
			enum hs_rule rule = hs_rules_check(g->rules, &allocs[t], v);
			flag = rule ? HS_EDGE_RULE : HS_EDGE_INTERIOR;
			if (rule)
				__atomic_store_n(&g->rule_of[t], (uint8_t)rule,
						 __ATOMIC_RELAXED);
			else if (p->learn && v - allocs[t].addr < HS_LEARN_MAX_OFFSET &&
				 hs_offstats_add(&p->stats, allocs[t].size,
						 v - allocs[t].addr))
				return false;
		}
		if (!push_edge(p, t | flag))
			return false;
	}
	return true;
}

/* The blocks a start or rule edge of the part's rows holds: its rows
 * read again once the graph is whole (marked as the rows closed, each
 * edge's random write into the map slowed the scan more). */
static void *held_pass(void *arg)
{
	struct part *p = arg;
	for (uint32_t src = p->from; src < p->to; src++) {
		struct hs_edges it = hs_graph_edges(p->g, src);
		uint32_t e;
		while (hs_edges_next(&it, &e))
			if (!(e & HS_EDGE_INTERIOR))
				p->held[HS_EDGE_ID(e) / 64] |= 1ull << (HS_EDGE_ID(e) % 64);
	}
	return NULL;
}

static void *scan_part(void *arg);

/* The scan's parts done, counted where one thread waits for the others'
 * (hs_graph_build_beside). */
struct scan_done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n;
};

/* The parts are more than the threads (about equal bytes are not about
 * equal work: a part of many pointers takes longer), and each thread
 * takes the next part not taken until none is left: scan_part, or with
 * held set, held_pass into the thread's own bits. */
struct worker {
	struct part *parts;
	unsigned nparts;
	unsigned *next;         /* the next part to take, shared */
	struct hs_log *log;     /* progress: the caller's, and beside() a helper's */
	uint64_t *held;
	struct scan_done *done; /* counts the parts it scanned (NULL: none) */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (;;) {
		unsigned i = __atomic_fetch_add(w->next, 1, __ATOMIC_RELAXED);
		if (i >= w->nparts)
			return NULL;
		struct part *p = &w->parts[i];
		if (w->held) {
			p->held = w->held;
			held_pass(p);
		} else {
			p->log = w->log;
			scan_part(p);
			if (w->done) {
				pthread_mutex_lock(&w->done->lock);
				w->done->n++;
				pthread_cond_signal(&w->done->cond);
				pthread_mutex_unlock(&w->done->lock);
			}
		}
	}
}

/* beside(), then the scan's parts left, on a thread of its own */
struct beside_run {
	void (*beside)(void *arg, const struct hs_graph *g);
	void *arg;
	const struct hs_graph *g;
	struct worker w;        /* a copy: the caller reuses its workers */
};

static void *beside_main(void *arg)
{
	struct beside_run *r = arg;
	r->beside(r->arg, r->g);
	return work(&r->w);
}

/* Waits for beside()'s thread, then gives the progress line back. */
static void beside_join(struct hs_task *t, struct hs_log *log)
{
	hs_task_join(t);
	if (log) {
		hs_log_relay(log, NULL);
		hs_log_progress_end(log);
	}
}

static const char SCAN_PHASE[] = "scanning for pointers";

static void scan_rows(struct part *p)
{
	const struct hs_graph *g = p->g;
	const struct hs_alloc *allocs = g->map.heap->allocs;
	uint64_t lo = g->map.lo, hi = g->map.hi;
	struct cand batch[SCAN_BATCH];
	size_t nb = 0;
	p->open = p->from;
	p->nedges = 0;
	struct hs_core_near near = {0};  /* (the blocks in address order) */
	for (uint32_t src = p->from; src < p->to; src++) {
		const struct hs_alloc *a = &allocs[src];
		if (!((src - p->from) & 0xfff)) {
			uint64_t done = __atomic_load_n(p->done, __ATOMIC_RELAXED);
			if (src > p->from) {
				done = __atomic_add_fetch(p->done, 0x1000, __ATOMIC_RELAXED);
				p->counted += 0x1000;
			}
			if (p->log)
				hs_log_progress(p->log, SCAN_PHASE, "blocks",
						done, p->g->n);
		}
		if (!hs_alloc_in_graph(a))
			continue;
		struct hs_py_skip skip = hs_graph_skip(g, src);
		uint64_t nwords = a->size / 8 - skip.tail;
		const uint64_t *w = hs_core_ptr_near(p->core, &near, a->addr, nwords * 8);
		for (uint64_t k = 0; k < nwords; k++) {
			uint64_t v;
			if (k - skip.at < skip.n)
				continue;  /* not references */
			if (w)
				v = w[k];
			else if (!hs_core_read_u64(p->core, a->addr + 8 * k, &v)) {
				p->unreadable++;
				break;
			}
			if (v < lo || v >= hi)
				continue;
			batch[nb++] = (struct cand){.v = v, .src = src};
			if (nb == SCAN_BATCH) {
				if (!resolve(p, batch, nb)) {
					p->nomem = true;  /* the one error it gives */
					return;
				}
				nb = 0;
			}
		}
		p->words += nwords;
	}
	if (!resolve(p, batch, nb)) {
		p->nomem = true;
		return;
	}
	if (!close_sources(p, p->to))
		p->nomem = true;
}

static void *scan_part(void *arg)
{
	struct part *p = arg;
	scan_rows(p);
	/* the blocks the progress did not count (past the part's last
	 * multiple of 4,096, or not scanned: memory ran out): all are
	 * counted once all parts are done */
	__atomic_add_fetch(p->done, (p->to - p->from) - p->counted, __ATOMIC_RELAXED);
	return NULL;
}

/* Turns src's interior edges to dst[0..n) (sorted) into rule edges, in
 * one pass over its row, and files `rule` as their targets' (always, or
 * only where none is yet); returns how many it turned. */
static size_t take_interior(struct hs_graph *g, uint32_t src, const uint32_t *dst,
			    size_t n, enum hs_rule rule, bool always)
{
	struct hs_edges it = hs_graph_edges(g, src);
	size_t k = 0, done = 0;
	uint32_t e;
	while (k < n) {
		uint8_t *at = g->rows + (it.p - g->rows);
		if (!hs_edges_next(&it, &e))
			break;
		uint32_t id = HS_EDGE_ID(e);
		while (k < n && dst[k] < id)
			k++;
		if (k == n || dst[k] != id)
			continue;
		if (e & HS_EDGE_INTERIOR) {
			hs_edgerow_set_flags(at, HS_EDGE_RULE);
			if (always || !g->rule_of[id])
				g->rule_of[id] = (uint8_t)rule;
			done++;
		}
		while (k < n && dst[k] == id)
			k++;
	}
	return done;
}

/* Edges into blocks whose size has learned offsets become rule edges where
 * the pointer uses such an offset: the rows of the sources that have such
 * an interior edge (among the rows with an interior edge: set in
 * interior_rows) are scanned again (same edges, other flags). */
static struct hs_error *apply_learned(const struct hs_core *core, struct hs_graph *g,
				      const uint64_t *interior_rows)
{
	const struct hs_alloc *allocs = g->map.heap->allocs;
	uint32_t *hit = NULL;
	size_t cap = 0;
	for (size_t x = 0; x < (size_t)g->n / 64 + 1; x++) {
		for (uint64_t bits = interior_rows[x]; bits; bits &= bits - 1) {
			uint32_t src = (uint32_t)(x * 64) + (uint32_t)__builtin_ctzll(bits);
			struct hs_edges it = hs_graph_edges(g, src);
			bool any = false;
			uint32_t e;
			while (!any && hs_edges_next(&it, &e))
				any = (e & HS_EDGE_INTERIOR) &&
				      hs_rules_learned(g->rules, allocs[HS_EDGE_ID(e)].size);
			if (!any)
				continue;
			const struct hs_alloc *a = &allocs[src];
			struct hs_py_skip skip = hs_graph_skip(g, src);
			size_t nhit = 0;
			for (uint64_t w = 0; w < a->size / 8; w++) {
				uint64_t v;
				if (hs_py_skip_word(skip, w, a->size / 8))
					continue;
				if (!hs_core_read_u64(core, a->addr + 8 * w, &v))
					break;
				if (v < g->map.lo || v >= g->map.hi)
					continue;
				bool interior;
				uint32_t t = hs_graph_target(g, v, &interior);
				if (t == HS_NO_ALLOC || t == src || !interior ||
				    hs_rules_check(g->rules, &allocs[t], v) != HS_RULE_LEARNED)
					continue;
				if (nhit == cap) {
					size_t nc = cap ? 2 * cap : 64;
					uint32_t *h = hs_realloc(hit, nc * sizeof(*h));
					if (!h) {
						free(hit);
						return &hs_error_nomem;
					}
					hit = h;
					cap = nc;
				}
				hit[nhit++] = t;
			}
			hs_sort_u32(hit, nhit);
			take_interior(g, src, hit, nhit, HS_RULE_LEARNED, true);
		}
	}
	free(hit);
	return NULL;
}

struct hs_error *hs_graph_build(const struct hs_core *core,
				const struct hs_heap *heap,
				struct hs_rules *rules, unsigned nthreads,
				struct hs_log *log, struct hs_graph **ret)
{
	return hs_graph_build_beside(core, heap, rules, nthreads, log, NULL, NULL, NULL, ret);
}

struct hs_error *hs_graph_build_beside(const struct hs_core *core,
				       const struct hs_heap *heap,
				       struct hs_rules *rules, unsigned nthreads,
				       struct hs_log *log,
				       void (*beside)(void *arg, const struct hs_graph *g),
				       void (*after)(void *arg, const struct hs_graph *g),
				       void *arg, struct hs_graph **ret)
{
	if (heap->nallocs >= HS_EDGE_MAX_IDS)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "%zu allocations: more than the graph can index",
				       heap->nallocs);
	struct hs_graph *g = hs_calloc(1, sizeof(*g));
	if (!g)
		return &hs_error_nomem;
	/* where the rows start: each part fills the groups of its rows
	 * (until they are joined into g->index) */
	struct hs_edgerow_group *groups = NULL;
	struct part parts[HS_PARTS_MAX];
	unsigned nparts = 0;
	uint64_t *interior_rows = NULL;  /* (learning) */
	/* beside() on a thread of its own (two threads or more) */
	struct beside_run br;
	struct hs_task btask;
	bool bthread = false;
	struct scan_done done_parts = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	struct hs_log_relay relay;
	uint64_t unreadable = 0;
	struct hs_error *err = addrmap_build(&g->map, heap);
	if (err)
		goto fail;
	g->n = (uint32_t)heap->nallocs;
	groups = hs_edgerow_groups_alloc(g->n);
	if (rules && rules->enabled) {
		g->rules = rules;
		g->rule_of = hs_calloc((size_t)g->n + 1, 1);
		/* (without rules the scan reads CPython's GC heads too: its
		 * counts would not be hs_python_refs') */
		if (rules->py && !(g->pystarts = hs_zalloc_written(((size_t)g->n + 1) * sizeof(uint32_t))))
			g->rule_of = (free(g->rule_of), NULL);
	}
	if (!groups || (g->rules && !g->rule_of)) {
		err = &hs_error_nomem;
		goto fail;
	}
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > HS_PARTS_MAX)
		nthreads = HS_PARTS_MAX;
	if (g->n < 4096)
		nthreads = 1;
	/* split the sources into parts of about equal bytes, a few a
	 * thread (struct worker) */
	enum { PARTS_PER_THREAD = 4 };
	nparts = nthreads == 1 ? 1 :
		 nthreads * PARTS_PER_THREAD < HS_PARTS_MAX ?
		 nthreads * PARTS_PER_THREAD : HS_PARTS_MAX;
	uint64_t total = 0;
	for (uint32_t i = 0; i < g->n; i++)
		total += heap->allocs[i].size;
	memset(parts, 0, sizeof(parts));
	uint32_t cur = 0;
	uint64_t acc = 0, done = 0;
	for (unsigned t = 0; t < nparts; t++) {
		parts[t].core = core;
		parts[t].g = g;
		parts[t].from = cur;
		parts[t].done = &done;
		parts[t].learn = g->rules && (g->rules->enabled & 1u << HS_RULE_LEARNED);
		uint64_t goal = total / nparts * (t + 1);
		/* (each part's rows fill whole groups of the index) */
		while (cur < g->n && (t == nparts - 1 || acc < goal || cur % HS_EDGEROW_GROUP))
			acc += heap->allocs[cur++].size;
		parts[t].to = cur;
		hs_edgerow_fill_init(&parts[t].fill, groups, parts[t].from);
	}
	if (parts[0].learn) {
		if (!(interior_rows = hs_calloc((size_t)g->n / 64 + 1, sizeof(uint64_t)))) {
			err = &hs_error_nomem;
			goto fail;
		}
		for (unsigned t = 0; t < nparts; t++)
			parts[t].interior_rows = interior_rows;
	}
	unsigned next = 0;
	struct worker workers[HS_PARTS_MAX];
	for (unsigned t = 0; t < nthreads; t++)
		/* progress from the caller's thread, and beside() from the
		 * first other one too (the log takes its lock) */
		workers[t] = (struct worker){parts, nparts, &next,
					     t == 0 || (beside && t == 1) ? log : NULL, NULL};
	/* the scan's progress (the first other thread's calls show it),
	 * until it is done, in place of what beside() shows */
	relay = (struct hs_log_relay){SCAN_PHASE, "blocks", &done, g->n};
	if (beside && nthreads >= 2) {
		/* beside() on a thread of its own, which then takes parts
		 * too; the caller's and the others take parts, and once all
		 * are scanned the caller finishes the graph (and calls
		 * after()) while beside() may still run */
		for (unsigned t = 0; t < nthreads; t++)
			workers[t].done = &done_parts;
		br = (struct beside_run){beside, arg, g, workers[1]};
		if (log)
			hs_log_relay(log, &relay);
		hs_task_start(&btask, beside_main, &br);
		bthread = true;
		struct hs_task tasks[HS_PARTS_MAX];
		for (unsigned t = 2; t < nthreads; t++)
			hs_task_start(&tasks[t], work, &workers[t]);
		work(&workers[0]);
		for (unsigned t = 2; t < nthreads; t++)
			hs_task_join(&tasks[t]);
		/* (beside()'s thread may still scan the last part it took) */
		pthread_mutex_lock(&done_parts.lock);
		while (done_parts.n < nparts)
			pthread_cond_wait(&done_parts.cond, &done_parts.lock);
		pthread_mutex_unlock(&done_parts.lock);
		for (unsigned t = 0; t < nthreads; t++)
			workers[t].done = NULL;
	} else if (beside) {
		if (log)
			hs_log_relay(log, &relay);
		beside(arg, g);
		if (log)
			hs_log_relay(log, NULL);
		work(&workers[0]);
	} else {
		hs_run_parts(workers, sizeof(*workers), nthreads, work);
	}
	if (!bthread)
		hs_log_progress_end(log);
	uint64_t nedges = 0, nbytes = 0;
	bool nomem = false;
	for (unsigned t = 0; t < nparts; t++) {
		nedges += parts[t].total;
		nbytes += parts[t].nbytes;
		free(parts[t].edges);
		free(parts[t].wide);
		parts[t].edges = NULL;
		nomem |= parts[t].nomem;
		unreadable += parts[t].unreadable;
		g->words_scanned += parts[t].words;
	}
	/* the end of the rows, after the last part's (the parts after it
	 * are empty when the one before reached the last row); a part's
	 * scan that ran out of memory left its rows unfilled */
	unsigned last = nparts - 1;
	while (last > 0 && parts[last].from == parts[last].to)
		last--;
	if (!nomem && !hs_edgerow_fill_end(&parts[last].fill))
		nomem = true;
	if (nomem || nbytes >= UINT32_MAX) {
		err = nomem ? &hs_error_nomem :
			hs_error_create(HS_ERR_UNSUPPORTED, "too many pointers (%llu)",
					(unsigned long long)nedges);
		for (unsigned t = 0; t < nparts; t++)
			free(parts[t].rows);
		goto fail;
	}
	/* concatenate: part 0's buffer grows to hold the others (and the
	 * bytes a decoder may read past a row's last edge) */
	g->rows = hs_realloc(parts[0].rows, nbytes + HS_EDGEROW_MAX);
	if (!g->rows) {
		for (unsigned t = 0; t < nparts; t++)
			free(parts[t].rows);
		err = &hs_error_nomem;
		goto fail;
	}
	size_t at = parts[0].nbytes;
	for (unsigned t = 1; t < nparts; t++) {
		if (parts[t].nbytes)
			memcpy(g->rows + at, parts[t].rows, parts[t].nbytes);
		at += parts[t].nbytes;
		free(parts[t].rows);
	}
	memset(g->rows + at, 0, HS_EDGEROW_MAX);
	g->nedges = nedges;
	/* (the fills are emptied and the groups taken, either way) */
	struct hs_edgerow_fill *fills[HS_PARTS_MAX];
	for (unsigned t = 0; t < nparts; t++)
		fills[t] = &parts[t].fill;
	bool indexed = hs_edgerow_index_join(&g->index, groups, fills, nparts);
	groups = NULL;
	if (!indexed) {
		err = &hs_error_nomem;
		goto fail;
	}
	if (parts[0].learn) {
		/* the blocks a start pointer (or a rule's) from another block
		 * holds: learning is about the others */
		for (unsigned t = 0; t < nthreads && !nomem; t++)
			nomem = !(workers[t].held = hs_calloc((size_t)g->n / 64 + 1, sizeof(uint64_t)));
		if (!nomem) {
			/* (a counter of its own: beside()'s thread may still
			 * look at the scan's) */
			unsigned lnext = 0;
			for (unsigned t = 0; t < nthreads; t++)
				workers[t].next = &lnext;
			hs_run_parts(workers, sizeof(*workers), nthreads, work);
			uint64_t *held = workers[0].held;
			for (unsigned t = 1; t < nthreads; t++)
				for (size_t x = 0; x < (size_t)g->n / 64 + 1; x++)
					held[x] |= workers[t].held[x];
			struct hs_offstats stats[HS_PARTS_MAX];
			for (unsigned t = 0; t < nparts; t++)
				stats[t] = parts[t].stats;
			err = hs_rules_learn(rules, stats, nparts, held);
		}
		for (unsigned t = 0; t < nthreads; t++)
			free(workers[t].held);
		if (nomem)
			err = &hs_error_nomem;
		if (err)
			goto fail;
	}
	for (unsigned t = 0; t < nparts; t++)
		hs_offstats_free(&parts[t].stats);
	if (g->rules && g->rules->nlearned && interior_rows &&
	    (err = apply_learned(core, g, interior_rows)))
		goto fail;
	free(interior_rows);
	interior_rows = NULL;
	/* the graph is made: after() beside what beside() has left to do */
	if (after)
		after(arg, g);
	if (bthread)
		beside_join(&btask, log);
	/* (after beside(), whose warnings its caller puts after these) */
	if (unreadable)
		hs_log_warn(log, "%llu allocations are not wholly in the core; their pointers were read up to the gap",
			    (unsigned long long)unreadable);
	*ret = g;
	return NULL;
fail:
	if (bthread)
		beside_join(&btask, log);
	for (unsigned t = 0; t < nparts; t++) {
		hs_edgerow_fill_fini(&parts[t].fill);
		hs_offstats_free(&parts[t].stats);
	}
	free(groups);
	free(interior_rows);
	hs_graph_destroy(g);
	return err;
}

void hs_graph_destroy(struct hs_graph *g)
{
	if (!g)
		return;
	addrmap_destroy(&g->map);
	free(g->rule_of);
	free(g->pystarts);
	hs_edgerow_index_fini(&g->index);
	free(g->rows);
	free(g);
}

void hs_graph_drop_rule_of(struct hs_graph *g)
{
	free(g->rule_of);
	g->rule_of = NULL;
}

size_t hs_graph_take_as_start(struct hs_graph *g, uint32_t src, const uint32_t *dst,
			      size_t n, enum hs_rule rule)
{
	if (!g->rule_of || src >= g->n || !n || dst[n - 1] >= g->n)
		return 0;
	return take_interior(g, src, dst, n, rule, false);
}
