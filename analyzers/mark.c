/* The conservative mark and its leak classes, and the scan of roots'
 * words: see analyzers/mark.h. */
#include "analyzers/mark.h"

#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/rankset.h"
#include "src/vector.h"

const char *const hs_reach_names[HS_REACH_COUNT] = {
	[HS_REACH_NONE] = "none",
	[HS_REACH_REACHABLE] = "reachable",
	[HS_REACH_POSSIBLE] = "possible",
	[HS_REACH_LEAK_ROOT] = "leak-root",
	[HS_REACH_INDIRECT] = "indirect",
};

HS_VECTOR(stack, uint32_t)

enum which { LIVE = 1, STALE = 2 };

static bool scan(const struct hs_core *core, const struct hs_roots *roots,
		 unsigned which,
		 bool (*fn)(uint64_t v, const struct hs_root *r, uint64_t where,
			    void *arg),
		 void *arg)
{
	for (size_t i = 0; i < roots->n; i++) {
		const struct hs_root *r = &roots->roots[i];
		if (!(which & (r->stale ? STALE : LIVE)))
			continue;
		if (hs_root_is_value(r)) {
			if (!fn(r->value, r, 0, arg))
				return false;
			continue;
		}
		uint64_t lo = (r->start + 7) & ~7ull;
		for (uint64_t a = lo; a + 8 <= r->end;) {
			/* whole runs of the segment at a time */
			const struct hs_core_segment *s = hs_core_find_segment(core, a);
			if (!s)
				break;
			uint64_t seg_hi = s->vaddr + s->avail;
			uint64_t hi = r->end < seg_hi ? r->end : seg_hi;
			if (a >= seg_hi)
				break;  /* not in the file (zeros or truncated) */
			const uint8_t *data = core->data + s->offset;
			for (; a + 8 <= hi; a += 8) {
				uint64_t v;
				memcpy(&v, data + (a - s->vaddr), 8);
				if (!fn(v, r, a, arg))
					return false;
			}
			if (hi == r->end || a + 8 > r->end)
				break;
			a = (hi + 7) & ~7ull;
		}
	}
	return true;
}

bool hs_roots_scan(const struct hs_core *core, const struct hs_roots *roots,
		   bool (*fn)(uint64_t v, const struct hs_root *r,
			      uint64_t where, void *arg),
		   void *arg)
{
	return scan(core, roots, LIVE, fn, arg);
}

struct mark_ctx {
	const struct hs_graph *g;
	uint8_t *reach;
	uint8_t *via;
	struct stack start, interior, rule;
	bool nomem;
	bool starts_only;       /* hs_mark_starts: start pointers alone */
};

static bool root_word(uint64_t v, const struct hs_root *r, uint64_t where,
		      void *arg)
{
	(void)r;
	(void)where;
	struct mark_ctx *c = arg;
	bool interior;
	uint32_t id = hs_graph_hit(c->g, v, &interior);
	if (id == HS_NO_ALLOC || (interior && c->starts_only))
		return true;
	struct stack *st = interior ? &c->interior : &c->start;
	if (interior && c->via) {
		enum hs_rule rule = hs_rules_check(c->g->rules,
						   &c->g->map.heap->allocs[id], v);
		if (rule) {
			st = &c->rule;
			if (!c->via[id])
				c->via[id] = (uint8_t)rule;
		}
	}
	if (stack_push(st, id)) {
		c->nomem = true;
		return false;
	}
	return true;
}

/* ---- leaked subgraph: strongly connected components (iterative Tarjan)
 * over the leaked allocations no leak root reached ---- */

struct tarjan {
	const struct hs_graph *g;
	const uint32_t *ids;    /* local index -> id (sorted) */
	const struct hs_rankset *local;  /* the same ids: id -> local index */
	size_t n;
	uint32_t *index, *low;  /* local; UINT32_MAX = unvisited */
	uint8_t *onstack;
	uint32_t *stack;
	size_t sp;
	uint32_t *comp;         /* component per local node */
	uint32_t ncomp;
	uint64_t read;          /* edges read */
};

static uint32_t local_of(const struct tarjan *t, uint32_t id)
{
	uint32_t k = hs_rankset_index(t->local, id);
	return k == HS_RANK_NONE ? UINT32_MAX : k;
}

static bool tarjan_run(struct tarjan *t)
{
	/* call stack of (node, the rest of its row) */
	uint32_t *cs_node = hs_malloc(t->n * sizeof(uint32_t));
	struct hs_edges *cs_edge = hs_malloc(t->n * sizeof(*cs_edge));
	if (!cs_node || !cs_edge) {
		free(cs_node);
		free(cs_edge);
		return false;
	}
	uint32_t counter = 0;
	uint64_t nread = 0;
	for (size_t root = 0; root < t->n; root++) {
		if (t->index[root] != UINT32_MAX)
			continue;
		size_t depth = 0;
		cs_node[0] = (uint32_t)root;
		cs_edge[0] = hs_graph_edges(t->g, t->ids[root]);
		t->index[root] = t->low[root] = counter++;
		t->stack[t->sp++] = (uint32_t)root;
		t->onstack[root] = 1;
		while (true) {
			uint32_t v = cs_node[depth];
			bool descended = false;
			uint32_t e;
			while (hs_edges_next(&cs_edge[depth], &e)) {
				nread++;
				uint32_t w = local_of(t, HS_EDGE_ID(e));
				if (w == UINT32_MAX)
					continue;
				if (t->index[w] == UINT32_MAX) {
					t->index[w] = t->low[w] = counter++;
					t->stack[t->sp++] = w;
					t->onstack[w] = 1;
					depth++;
					cs_node[depth] = w;
					cs_edge[depth] = hs_graph_edges(t->g, t->ids[w]);
					descended = true;
					break;
				}
				if (t->onstack[w] && t->index[w] < t->low[v])
					t->low[v] = t->index[w];
			}
			if (descended)
				continue;
			if (t->low[v] == t->index[v]) {
				uint32_t w;
				do {
					w = t->stack[--t->sp];
					t->onstack[w] = 0;
					t->comp[w] = t->ncomp;
				} while (w != v);
				t->ncomp++;
			}
			if (depth == 0)
				break;
			depth--;
			uint32_t parent = cs_node[depth];
			if (t->low[v] < t->low[parent])
				t->low[parent] = t->low[v];
		}
	}
	t->read = nread;
	free(cs_node);
	free(cs_edge);
	return true;
}

/* A bit per allocation (clean, has_in, claimed): n / 8 bytes stay in the
 * caches where n bytes would not, and need fewer fresh pages. */
static inline bool bit_has(const uint64_t *b, uint32_t v)
{
	return b[v / 64] >> (v % 64) & 1;
}

static inline void bit_set(uint64_t *b, uint32_t v)
{
	b[v / 64] |= 1ull << (v % 64);
}

/* Marks everything leaked that root reaches and nobody claimed yet as
 * indirect, charged to lr. */
static bool charge(const struct hs_graph *g, const struct hs_heap *heap,
		   uint8_t *reach, uint64_t *claimed, struct hs_leak_root *lr,
		   struct stack *st, uint64_t *read)
{
	st->n = 0;
	bit_set(claimed, lr->id);
	if (stack_push(st, lr->id))
		return false;
	uint64_t nread = 0;  /* (a local: stores through the other pointers may alias *read) */
	while (st->n) {
		uint32_t v = st->v[--st->n];
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t w = HS_EDGE_ID(e);
			nread++;
			/* (a leak root is another's, not ours) */
			if (reach[w] != HS_REACH_INDIRECT || bit_has(claimed, w))
				continue;
			bit_set(claimed, w);
			lr->held_count++;
			lr->held_bytes += heap->allocs[w].size;
			if (stack_push(st, w))
				return false;
		}
	}
	*read += nread;
	return true;
}

static int cmp_leak_root(const void *a, const void *b)
{
	const struct hs_leak_root *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static struct hs_error *classify_leaks(const struct hs_heap *heap,
				       const struct hs_graph *g, uint8_t *reach,
				       struct hs_mark *m)
{
	uint64_t *read = &m->edges_read;
	struct hs_error *err = &hs_error_nomem;
	uint32_t n = g->n;
	/* leaked: no class yet; has_in from another leaked allocation */
	uint64_t *has_in = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	uint64_t *claimed = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	struct stack st = {0};
	uint32_t *left = NULL;
	struct tarjan t = {0};
	struct hs_rankset local = {0};
	if (!has_in || !claimed)
		goto out;
	uint64_t nread = 0;
	for (uint32_t v = 0; v < n; v++) {
		if (reach[v] != HS_REACH_INDIRECT)  /* "leaked, undecided" */
			continue;
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t w = HS_EDGE_ID(e);
			nread++;
			if (reach[w] == HS_REACH_INDIRECT)
				bit_set(has_in, w);
		}
	}
	*read += nread;
	size_t nroots = 0, cap = 64;
	struct hs_leak_root *roots = hs_malloc(cap * sizeof(*roots));
	if (!roots)
		goto out;
	m->leak_roots = roots;
	for (uint32_t v = 0; v < n; v++) {
		if (reach[v] != HS_REACH_INDIRECT || bit_has(has_in, v))
			continue;
		reach[v] = HS_REACH_LEAK_ROOT;
		if (nroots == cap) {
			cap *= 2;
			roots = hs_realloc(m->leak_roots, cap * sizeof(*roots));
			if (!roots)
				goto out;
			m->leak_roots = roots;
		}
		roots[nroots++] = (struct hs_leak_root){.id = v};
	}
	m->nleak_roots = nroots;
	for (size_t i = 0; i < nroots; i++)
		if (!charge(g, heap, reach, claimed, &m->leak_roots[i], &st, read))
			goto out;
	/* leaked allocations no leak root reaches: cycles (and what hangs
	 * from them) that nothing else leaked points to */
	size_t nleft = 0;
	for (uint32_t v = 0; v < n; v++)
		if (reach[v] == HS_REACH_INDIRECT && !bit_has(claimed, v))
			nleft++;
	if (nleft) {
		if ((err = hs_rankset_init(&local, n)))
			goto out;
		err = &hs_error_nomem;
		left = hs_malloc(nleft * sizeof(*left));
		t.g = g;
		t.n = nleft;
		t.index = hs_malloc(nleft * sizeof(uint32_t));
		t.low = hs_malloc(nleft * sizeof(uint32_t));
		t.onstack = hs_calloc(nleft, 1);
		t.stack = hs_malloc(nleft * sizeof(uint32_t));
		t.comp = hs_malloc(nleft * sizeof(uint32_t));
		if (!left || !t.index || !t.low || !t.onstack || !t.stack || !t.comp)
			goto out;
		size_t k = 0;
		for (uint32_t v = 0; v < n; v++)
			if (reach[v] == HS_REACH_INDIRECT && !bit_has(claimed, v)) {
				hs_rankset_add(&local, v);
				left[k++] = v;
			}
		hs_rankset_finish(&local);
		t.ids = left;
		t.local = &local;
		memset(t.index, 0xff, nleft * sizeof(uint32_t));
		bool ran = tarjan_run(&t);
		*read += t.read;
		if (!ran)
			goto out;
		/* Tarjan numbers components sinks first; walk them sources
		 * first.  A component none of whose members is claimed yet has
		 * no leaked predecessor outside it: its lowest address member
		 * is a leak root. */
		uint32_t *lowest = hs_malloc(t.ncomp * sizeof(uint32_t));
		if (!lowest)
			goto out;
		memset(lowest, 0xff, t.ncomp * sizeof(uint32_t));
		for (size_t i = 0; i < nleft; i++)  /* left is sorted by id */
			if (lowest[t.comp[i]] == UINT32_MAX)
				lowest[t.comp[i]] = (uint32_t)i;
		for (uint32_t c = t.ncomp; c-- > 0;) {
			uint32_t v = left[lowest[c]];
			if (bit_has(claimed, v))
				continue;
			reach[v] = HS_REACH_LEAK_ROOT;
			if (m->nleak_roots == cap) {
				cap *= 2;
				roots = hs_realloc(m->leak_roots, cap * sizeof(*roots));
				if (!roots) {
					free(lowest);
					goto out;
				}
				m->leak_roots = roots;
			}
			struct hs_leak_root *lr = &m->leak_roots[m->nleak_roots++];
			*lr = (struct hs_leak_root){.id = v};
			if (!charge(g, heap, reach, claimed, lr, &st, read)) {
				free(lowest);
				goto out;
			}
		}
		free(lowest);
		/* keep leak roots in address order (ids are unique) */
		qsort(m->leak_roots, m->nleak_roots, sizeof(*m->leak_roots), cmp_leak_root);
	}
	err = NULL;
out:
	free(has_in);
	free(claimed);
	stack_free(&st);
	free(left);
	free(t.index);
	free(t.low);
	free(t.onstack);
	free(t.stack);
	free(t.comp);
	hs_rankset_fini(&local);
	return err;
}

/* From the blocks start pointers reach (and the root words in `seeds`, whose
 * via is set), follows the edges a rule accepted, then start and rule
 * edges from there; what is newly reached inherits the rule that led to it.
 * It reads the row of every reachable block that has other edges than
 * start edges (the blocks not in `clean`) once: the targets of their
 * interior edges not reached yet go to `interior`, for the next step. */
static struct hs_error *rule_reach(const struct hs_graph *g, uint8_t *reach,
				   uint8_t *via, struct stack *seeds,
				   const uint64_t *clean, struct stack *interior,
				   uint64_t *read)
{
	struct stack st = {0};
	uint64_t nread = 0;
	/* root words set via on what they hit (only those: via was all
	 * none before); start pointers win */
	for (size_t i = 0; i < seeds->n; i++)
		if (reach[seeds->v[i]] == HS_REACH_REACHABLE)
			via[seeds->v[i]] = HS_RULE_NONE;
	for (size_t i = 0; i < seeds->n; i++) {
		uint32_t x = seeds->v[i];
		if (reach[x] != HS_REACH_NONE)
			continue;
		reach[x] = HS_REACH_REACHABLE;
		if (stack_push(&st, x))
			goto nomem;
	}
	for (uint32_t v = 0; v < g->n; v++) {
		if (reach[v] != HS_REACH_REACHABLE || via[v] || bit_has(clean, v))
			continue;
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t x;
		while (hs_edges_next(&it, &x)) {
			nread++;
			if ((x & HS_EDGE_INTERIOR) && reach[HS_EDGE_ID(x)] == HS_REACH_NONE &&
			    stack_push(interior, HS_EDGE_ID(x)))
				goto nomem;
			if (!(x & HS_EDGE_RULE) || reach[HS_EDGE_ID(x)] != HS_REACH_NONE)
				continue;
			x = HS_EDGE_ID(x);
			reach[x] = HS_REACH_REACHABLE;
			via[x] = g->rule_of[x];
			if (stack_push(&st, x))
				goto nomem;
		}
	}
	while (st.n) {
		uint32_t v = st.v[--st.n];
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			nread++;
			if (e & HS_EDGE_INTERIOR) {
				if (reach[HS_EDGE_ID(e)] == HS_REACH_NONE &&
				    stack_push(interior, HS_EDGE_ID(e)))
					goto nomem;
				continue;
			}
			uint32_t x = HS_EDGE_ID(e);
			if (reach[x] != HS_REACH_NONE)
				continue;
			reach[x] = HS_REACH_REACHABLE;
			/* through another rule's pointer: that rule's */
			via[x] = (e & HS_EDGE_RULE) ? g->rule_of[x] : via[v];
			if (stack_push(&st, x))
				goto nomem;
		}
	}
	*read += nread;
	stack_free(&st);
	return NULL;
nomem:
	stack_free(&st);
	return &hs_error_nomem;
}

struct stale_ctx {
	const struct hs_graph *g;
	struct hs_mark *m;
};

static bool stale_word(uint64_t v, const struct hs_root *r, uint64_t where,
		       void *arg)
{
	(void)r;
	(void)where;
	struct stale_ctx *c = arg;
	bool interior;
	uint32_t id = hs_graph_hit(c->g, v, &interior);
	if (id == HS_NO_ALLOC)
		return true;
	uint8_t r8 = c->m->reach[id];
	if (r8 == HS_REACH_NONE || r8 == HS_REACH_REACHABLE)
		return true;
	c->m->stale_ref[id / 64] |= 1ull << (id % 64);
	return true;
}

/* The blocks that a stale root word (a dead register, a red zone) points
 * into, among those the live roots do not reach. */
static struct hs_error *stale_refs(const struct hs_core *core,
				   const struct hs_roots *roots,
				   const struct hs_graph *g, struct hs_mark *m)
{
	m->stale_ref = hs_calloc((size_t)g->n / 64 + 1, sizeof(uint64_t));
	if (!m->stale_ref)
		return &hs_error_nomem;
	struct stale_ctx c = {g, m};
	scan(core, roots, STALE, stale_word, &c);
	return NULL;
}

/* Grows the ring q (cap slots, count of them from head on, wrapping) to
 * twice its size, its blocks in order from slot 0 on. */
static bool ring_grow(struct stack *q, size_t *head, size_t count)
{
	size_t cap = q->cap, ncap = 2 * cap;
	uint32_t *v = hs_malloc(ncap * sizeof(*v));
	if (!v)
		return false;
	size_t first = cap - *head < count ? cap - *head : count;
	memcpy(v, q->v + *head, first * sizeof(*v));
	memcpy(v + first, q->v, (count - first) * sizeof(*v));
	free(q->v);
	q->v = v;
	q->cap = ncap;
	*head = 0;
	return true;
}

/* Sets x reachable and puts it at the ring's tail if it was not reached
 * yet; false when the ring could not grow. */
static inline bool reach_take(uint8_t *reach, struct stack *st, size_t *head,
			      size_t *count, uint32_t x)
{
	if (reach[x] != HS_REACH_NONE)
		return true;
	reach[x] = HS_REACH_REACHABLE;
	if (*count == st->cap && !ring_grow(st, head, *count))
		return false;
	size_t tail = *head + *count;
	st->v[tail < st->cap ? tail : tail - st->cap] = x;
	(*count)++;
	return true;
}

/* Marks reachable what the blocks in st (the start pointers' targets)
 * reach through start pointers.  Breadth first: st becomes a queue, a
 * ring of the blocks reached and not yet read (it grows with the widest
 * front, not with every block reached).  The order does not change the
 * result, and a queue knows the blocks it will read next, so their rows
 * are asked for from memory some steps ahead; depth first, each step
 * would wait for the row the step before had just found.  A target's
 * state (reach[], a byte per block read at random) is asked for when its
 * edge is read and looked at DELAY edges later, from a short line of
 * pending targets: at 10^7 blocks, the look at once was 44% of the
 * mark's samples.  The rows it reads that hold start edges alone are set
 * in `clean`: the passes after it, which look for the other edges, skip
 * them. */
static bool reach_starts(const struct hs_graph *g, uint8_t *reach,
			 struct stack *st, uint64_t *clean, uint64_t *read)
{
	enum { AHEAD = 8, DELAY = 16 };  /* DELAY: a power of two */
	size_t k = 0;
	for (size_t i = 0; i < st->n; i++) {
		uint32_t x = st->v[i];
		if (reach[x] == HS_REACH_NONE) {
			reach[x] = HS_REACH_REACHABLE;
			st->v[k++] = x;
		}
	}
	st->n = 0;
	if (!k)
		return true;
	size_t head = 0, count = k;
	uint64_t nread = 0;
	uint32_t pend[DELAY];
	unsigned ph = 0, pn = 0;  /* the pending line's first and count */
	while (count || pn) {
		if (!count) {
			/* the queue ran dry: what is pending comes next */
			uint32_t y = pend[ph];
			ph = (ph + 1) & (DELAY - 1);
			pn--;
			if (!reach_take(reach, st, &head, &count, y))
				return false;
			continue;
		}
		/* count <= cap: a slot ahead wraps once at most */
		size_t cap = st->cap, a1 = head + AHEAD, a2 = head + 2 * AHEAD;
		if (count > 2 * AHEAD) {
			uint32_t y = st->v[a2 < cap ? a2 : a2 - cap];
			hs_edgerow_prefetch(&g->index, y);
			/* its bit in clean, written at random too */
			__builtin_prefetch(&clean[y / 64], 1);
		}
		if (count > AHEAD)
			__builtin_prefetch(&g->rows[hs_edgerow_start(&g->index,
								      st->v[a1 < cap ? a1 : a1 - cap])]);
		uint32_t v = st->v[head];
		head = head + 1 == cap ? 0 : head + 1;
		count--;
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t x, flags = 0;
		while (hs_edges_next(&it, &x)) {
			nread++;
			if (x & HS_EDGE_FLAGS) {
				flags = x;
				continue;
			}
			__builtin_prefetch(&reach[x], 1);
			if (pn == DELAY) {
				uint32_t y = pend[ph];
				ph = (ph + 1) & (DELAY - 1);
				pn--;
				if (!reach_take(reach, st, &head, &count, y))
					return false;
			}
			pend[(ph + pn) & (DELAY - 1)] = x;
			pn++;
		}
		if (!flags)
			bit_set(clean, v);
	}
	*read += nread;
	return true;
}

struct hs_mark_starts {
	uint8_t *reach;         /* reachable, or none */
	uint64_t *clean;        /* see reach_starts */
	uint64_t read;          /* edges it read */
};

void hs_mark_starts_destroy(struct hs_mark_starts *s)
{
	if (!s)
		return;
	free(s->reach);
	free(s->clean);
	free(s);
}

struct hs_error *hs_mark_starts(const struct hs_core *core,
				const struct hs_roots *roots,
				const struct hs_graph *g,
				struct hs_mark_starts **ret)
{
	uint32_t n = g->n;
	struct hs_mark_starts *s = hs_calloc(1, sizeof(*s));
	struct mark_ctx c = {.g = g, .starts_only = true};
	if (!s || !(s->reach = hs_zalloc_written(n ? n : 1)) ||
	    !(s->clean = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t))))
		goto fail;
	hs_roots_scan(core, roots, root_word, &c);
	if (c.nomem || !reach_starts(g, s->reach, &c.start, s->clean, &s->read))
		goto fail;
	stack_free(&c.start);
	*ret = s;
	return NULL;
fail:
	stack_free(&c.start);
	hs_mark_starts_destroy(s);
	return &hs_error_nomem;
}

struct hs_error *hs_mark_compute(const struct hs_core *core,
				 const struct hs_heap *heap,
				 const struct hs_roots *roots,
				 const struct hs_graph *g, struct hs_mark **ret)
{
	return hs_mark_compute_from(core, heap, roots, g, NULL, ret);
}

struct hs_error *hs_mark_compute_from(const struct hs_core *core,
				      const struct hs_heap *heap,
				      const struct hs_roots *roots,
				      const struct hs_graph *g,
				      struct hs_mark_starts *early,
				      struct hs_mark **ret)
{
	/* early's tables, taken (freed with m or below, whatever happens);
	 * clean: the rows of start edges alone (reach_starts) */
	uint8_t *reach0 = early ? early->reach : NULL;
	uint64_t *clean = early ? early->clean : NULL;
	uint64_t read0 = early ? early->read : 0;
	free(early);
	struct hs_mark *m = hs_calloc(1, sizeof(*m));
	if (!m) {
		free(reach0);
		free(clean);
		return &hs_error_nomem;
	}
	uint32_t n = g->n;
	m->reach = reach0 ? reach0 : hs_zalloc_written(n ? n : 1);
	m->edges_read = read0;
	uint64_t *read = &m->edges_read;
	/* the rule per allocation while marking; kept for the few it holds */
	uint8_t *via = g->rule_of ? hs_calloc(n ? n : 1, 1) : NULL;
	struct mark_ctx c = {.g = g, .reach = m->reach, .via = via};
	struct hs_error *err = &hs_error_nomem;
	if (!m->reach || (g->rule_of && !via))
		goto fail;
	/* (from hs_mark_starts: the start pointers' targets are all reached
	 * already, and reach_starts has nothing left to do) */
	hs_roots_scan(core, roots, root_word, &c);
	if (c.nomem)
		goto fail;
	/* 1. start pointers only: reachable */
	uint8_t *reach = m->reach;
	if (!clean)
		clean = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	if (!clean || !reach_starts(g, reach, &c.start, clean, read))
		goto fail;
	struct stack *st;
	/* 1b. pointers a header rule accepts count as starts: what only
	 * they reach is reachable, and says through which rule (and the
	 * interior edges' targets of the rows it reads, for step 2) */
	st = &c.interior;
	if (via && (err = rule_reach(g, reach, via, &c.rule, clean, st, read)))
		goto fail;
	err = &hs_error_nomem;
	/* 2. interior pointers too: possible (their targets from the rows
	 * of the reachable blocks, when rule_reach did not read them) */
	uint64_t nread = 0;
	for (uint32_t v = 0; v < n && !via; v++) {
		if (reach[v] != HS_REACH_REACHABLE || bit_has(clean, v))
			continue;
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t x;
		while (hs_edges_next(&it, &x)) {
			nread++;
			if ((x & HS_EDGE_INTERIOR) &&
			    reach[HS_EDGE_ID(x)] == HS_REACH_NONE &&
			    stack_push(st, HS_EDGE_ID(x)))
				goto fail;
		}
	}
	free(clean);
	clean = NULL;
	while (st->n) {
		uint32_t v = st->v[--st->n];
		if (reach[v] != HS_REACH_NONE)
			continue;
		reach[v] = HS_REACH_POSSIBLE;
		struct hs_edges it = hs_graph_edges(g, v);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t x = HS_EDGE_ID(e);
			nread++;
			if (reach[x] == HS_REACH_NONE && stack_push(st, x))
				goto fail;
		}
	}
	*read += nread;
	/* 3. the rest of the program's allocations are leaked; internal ones
	 * count as reachable (the allocator holds them) */
	for (uint32_t v = 0; v < n; v++) {
		const struct hs_alloc *a = &heap->allocs[v];
		if (a->where == HS_WHERE_INTERNAL)
			reach[v] = HS_REACH_REACHABLE;
		else if (hs_alloc_state(a) == HS_STATE_FREE)
			reach[v] = HS_REACH_NONE;
		else if (reach[v] == HS_REACH_NONE)
			reach[v] = HS_REACH_INDIRECT;  /* leaked, undecided */
	}
	if ((err = classify_leaks(heap, g, reach, m)))
		goto fail;
	if (roots->nstale && (err = stale_refs(core, roots, g, m)))
		goto fail;
	/* the totals, and the rules of the blocks reachable through one
	 * (few): by rank in via_set, gathered at the front of via as they
	 * come (the k-th such block's at via[k], k <= v) */
	if (via && (err = hs_rankset_init(&m->via_set, n)))
		goto fail;
	err = &hs_error_nomem;
	uint32_t nvia = 0;
	for (uint32_t v = 0; v < n; v++) {
		m->total[reach[v]].count++;
		m->total[reach[v]].bytes += heap->allocs[v].size;
		if (hs_mark_stale_ref(m, v)) {
			m->stale.count++;
			m->stale.bytes += heap->allocs[v].size;
		}
		if (via && via[v] && reach[v] == HS_REACH_REACHABLE) {
			m->via_total[via[v]].count++;
			m->via_total[via[v]].bytes += heap->allocs[v].size;
			hs_rankset_add(&m->via_set, v);
			via[nvia++] = via[v];
		}
	}
	if (via) {
		hs_rankset_finish(&m->via_set);
		if (!(m->via = hs_malloc((size_t)nvia + 1)))
			goto fail;
		memcpy(m->via, via, nvia);
	}
	stack_free(&c.start);
	stack_free(&c.interior);
	stack_free(&c.rule);
	free(via);
	*ret = m;
	return NULL;
fail:
	stack_free(&c.start);
	stack_free(&c.interior);
	stack_free(&c.rule);
	free(via);
	free(clean);
	hs_mark_destroy(m);
	return err;
}

void hs_mark_destroy(struct hs_mark *m)
{
	if (!m)
		return;
	free(m->stale_ref);
	hs_rankset_fini(&m->via_set);
	free(m->via);
	free(m->reach);
	free(m->leak_roots);
	free(m);
}

struct scan_for {
	const struct hs_graph *g;
	uint32_t id;
	bool (*fn)(const struct hs_root *, uint64_t, uint64_t, void *);
	void *arg;
};

static bool scan_for_word(uint64_t v, const struct hs_root *r, uint64_t where,
			  void *arg)
{
	struct scan_for *s = arg;
	bool interior;
	if (hs_graph_hit(s->g, v, &interior) != s->id)
		return true;
	return s->fn(r, where, v, s->arg);
}

void hs_roots_scan_for(const struct hs_core *core, const struct hs_roots *roots,
		       const struct hs_graph *graph, uint32_t id,
		       bool (*fn)(const struct hs_root *root, uint64_t where,
				  uint64_t value, void *arg),
		       void *arg)
{
	struct scan_for s = {graph, id, fn, arg};
	scan(core, roots, LIVE | STALE, scan_for_word, &s);
}
