/* Semi-NCA dominators over the two-block graph: see
 * analyzers/dominators.h. */
#include "analyzers/dominators.h"
#include "src/alloc.h"
#include "src/edgerow.h"
#include "src/hashtab.h"
#include "src/parallel.h"
#include "src/varint.h"
#include "src/vector.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Building the predecessor lists: a part takes the edges into the nodes
 * set in `mine` and counts them per row (only when count_lengths, below,
 * could not or was off), or fills them in (cnt its cursors); either way
 * it counts the edges it took.  Only the numbers in `into`
 * (those some edge other than a DFS tree edge enters) have a row: the row
 * of their rank.  The parts' targets are disjoint, and so are their rows:
 * they share one array of counts.  Each part's targets have the numbers
 * of one half: their rows are apart in that array too, so the parts do
 * not write to the same cache lines. */
struct pred_part {
	const struct hs_domgraph *g;
	const uint32_t *num, *parent;
	const struct hs_rankset *into;
	const uint64_t *mine;           /* the part's part of into, by node */
	uint32_t *cnt;
	uint8_t *radj;
	unsigned rw;
	uint64_t m;
};

/* The predecessor lists' entries (numbers, and in step 3 a row's
 * semi-dominator) take rw bytes: 3 while the numbers stay below 2^24
 * (most heaps: a quarter of the lists' memory), else 4.  The array has
 * room for a 4-byte read past its last entry. */
static inline uint32_t radj_get(const uint8_t *radj, size_t e, unsigned rw)
{
	uint32_t x;
	memcpy(&x, radj + e * rw, sizeof(x));
	return rw == 4 ? x : x & 0xffffff;
}

static inline void radj_set(uint8_t *radj, size_t e, unsigned rw, uint32_t x)
{
	if (rw == 4)
		memcpy(radj + e * 4, &x, 4);
	else
		memcpy(radj + e * 3, &x, 3);  /* (x86-64: low bytes first) */
}

/* One edge of pred_pass: source number i, target w. */
static inline void pred_edge(struct pred_part *pp, uint32_t i, uint32_t w)
{
	if (pp->parent[w] == i)
		return;
	/* the DFS saw this edge reach a node it had seen: w is in the set */
	uint32_t k = hs_rankset_index(pp->into, w);
	if (pp->radj)
		radj_set(pp->radj, --pp->cnt[k], pp->rw, i);
	else
		pp->cnt[k]++;
	pp->m++;
}

/* Was node y entered by an edge besides its DFS tree edge (and, of a
 * part's, is it the part's)?  An edge into a node that was not is that
 * node's tree edge: it is left out without its target's number, a read at
 * random, being looked at. */
static inline bool entered_node(const uint64_t *entered, uint32_t y)
{
	return entered[y / 64] >> (y % 64) & 1;
}

/* One pass over the edges into a part's targets, DFS tree edges left
 * out: counts them per target (radj NULL), or files each source number
 * in its target's row.  Every part reads all rows, in order (the reads
 * are sequential); their targets' numbers, parents and rows are
 * scattered: they are asked for a few edges ahead. */
static void *pred_pass(void *arg)
{
	enum { AHEAD = 16 };
	struct pred_part *pp = arg;
	const struct hs_domgraph *g = pp->g;
	const uint32_t *num = pp->num;
	const uint64_t *entered = pp->mine;
	pp->m = 0;
	for (uint32_t v = 0; v < g->na; v++) {
		uint32_t i = num[v];
		if (!i)
			continue;
		for (uint32_t x = g->head_off[v]; x < g->head_off[v + 1]; x++) {
			uint32_t y = g->head_adj[x];
			if (entered_node(entered, y))
				pred_edge(pp, i, num[y]);
		}
	}
	if (g->n == g->na)
		return NULL;
	/* the tail's edges into the part's targets, in row order, decoded
	 * 2 * AHEAD ahead of their use into a ring of (row, target node) */
	enum { RING = 64 };
	_Static_assert(RING > 2 * AHEAD, "the ring holds the edges ahead");
	struct {
		uint32_t k, y;
	} ring[RING];
	const struct hs_edgerow_index *ix = g->tail_index;
	const uint8_t *rows = g->tail_rows;
	uint32_t na = g->na, kend = g->n - na;
	uint32_t dk = 0, prev = 0;  /* the decoder: its row, */
	const uint8_t *dp = rows + hs_edgerow_start(ix, 0),  /* bytes */
		      *dend = rows + hs_edgerow_start(ix, 1);
	size_t head = 0, count = 0;
	for (;;) {
		while (count < 2 * AHEAD) {
			while (dp == dend && ++dk < kend) {
				dend = rows + hs_edgerow_start(ix, dk + 1);
				prev = dk;
			}
			if (dk >= kend)
				break;
			uint32_t y = (hs_edgerow_get(&dp, &prev) & HS_EDGEROW_ID_MASK) + na;
			if (!entered_node(entered, y))
				continue;
			size_t at = (head + count++) % RING;
			ring[at].k = dk;
			ring[at].y = y;
			__builtin_prefetch(&num[y]);
		}
		if (!count)
			break;
		if (count > AHEAD) {
			uint32_t w = num[ring[(head + AHEAD) % RING].y];
			__builtin_prefetch(&pp->parent[w]);
			__builtin_prefetch(&pp->into->w[w / 32]);
		}
		if (count > AHEAD / 2) {
			/* the target's rank is at hand now: its row's count */
			uint32_t w = num[ring[(head + AHEAD / 2) % RING].y];
			__builtin_prefetch(&pp->cnt[hs_rankset_index(pp->into, w)]);
		}
		uint32_t k = ring[head].k, y = ring[head].y;
		head = (head + 1) % RING;
		count--;
		uint32_t i = num[k + na];
		if (i)
			pred_edge(pp, i, num[y]);
	}
	return NULL;
}

/* Counting the predecessor lists' lengths without the numbers.  The DFS
 * reads every edge out of a reached node once: the edge that found its
 * target first (the tree edge) and the others.  So the edges into a node
 * from reached nodes are, in a graph whose rows name a target once, its
 * list and its tree edge.  count_pass counts the edges into every node
 * from every row, reading the rows in order, a byte a node in c8 (from
 * 255 on, in `over`): it needs nothing from the DFS, and runs beside it
 * on a second thread.  Then count_lengths takes the edges of the nodes
 * the DFS did not reach back out (few: on a heap, the blocks of no
 * root's and no leak's, which have no pointers).  The targets' numbers
 * and parents are not read at all.  A row that names a target twice
 * makes a count too large: the fill (pred_pass) then files fewer edges
 * than were counted, and the lengths are counted again the exact way. */
HS_HASH_MAP(count_map, uint32_t)

struct count_part {
	const struct hs_domgraph *g;
	/* the only nodes counted (after the DFS, on one thread), or NULL:
	 * all (beside it) */
	const uint64_t *entered;
	uint8_t *c8;
	struct count_map over;  /* key node + 1: its count past 255 */
	bool nomem;
};

static inline void count_edge(struct count_part *cp, uint32_t y)
{
	if (cp->c8[y] != 255) {
		cp->c8[y]++;
		return;
	}
	uint32_t *c;
	if (count_map_insert(&cp->over, (uint64_t)y + 1, &c, NULL))
		cp->nomem = true;
	else
		++*c;
}

/* count_edge undone */
static inline void uncount_edge(struct count_part *cp, uint32_t y)
{
	uint32_t *more;
	if (cp->c8[y] == 255 && (more = count_map_find(&cp->over, (uint64_t)y + 1)) && *more)
		--*more;
	else
		cp->c8[y]--;
}

/* Node y's count. */
static inline uint32_t count_of(const struct count_part *cp, uint32_t y)
{
	uint32_t c = cp->c8[y];
	if (c == 255) {
		const uint32_t *more = count_map_find(&cp->over, (uint64_t)y + 1);
		c += more ? *more : 0;
	}
	return c;
}

static void *count_pass(void *arg)
{
	enum { AHEAD = 16, RING = 32 };
	struct count_part *cp = arg;
	const struct hs_domgraph *g = cp->g;
	const uint64_t *entered = cp->entered;
	for (uint32_t x = 0; x < g->head_off[g->na]; x++)
		if (!entered || entered_node(entered, g->head_adj[x]))
			count_edge(cp, g->head_adj[x]);
	/* the tail's rows in order, the targets' counts asked for AHEAD
	 * edges ahead of their use (ring: the targets in between) */
	uint32_t ring[RING];
	size_t head = 0, count = 0;
	uint32_t na = g->na, nt = g->n - na;
	const uint8_t *p = g->tail_rows + (nt ? hs_edgerow_start(g->tail_index, 0) : 0);
	for (uint32_t k = 0; k < nt; k++) {
		struct hs_edges it = {p, g->tail_rows + hs_edgerow_start(g->tail_index, k + 1), k};
		p = it.end;
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t y = (e & HS_EDGEROW_ID_MASK) + na;
			if (entered && !entered_node(entered, y))
				continue;
			__builtin_prefetch(&cp->c8[y], 1);
			ring[(head + count++) % RING] = y;
			if (count > AHEAD) {
				count_edge(cp, ring[head]);
				head = (head + 1) % RING;
				count--;
			}
		}
	}
	for (; count; count--, head = (head + 1) % RING)
		count_edge(cp, ring[head]);
	return NULL;
}

/* A growing stream of LEB128 varints, read back in the order written. */
struct ustream {
	uint8_t *b;
	size_t n, cap;
	bool nomem;  /* a put did not fit: the stream is incomplete */
};

static struct hs_error *ustream_reserve(struct ustream *s, size_t bytes)
{
	uint8_t *b = hs_malloc(bytes + 16);
	if (!b)
		return &hs_error_nomem;
	hs_vector_hugepages(b, bytes + 16);
	s->b = b;
	s->cap = bytes + 16;
	return NULL;
}

static inline void ustream_put(struct ustream *s, uint32_t x)
{
	if (__builtin_expect(s->cap - s->n < 5, 0)) {
		void *p = s->nomem ? NULL : hs_vector_grow(s->b, s->n, &s->cap, s->cap / 2 + 5, 1);
		if (!p) {
			s->nomem = true;
			return;
		}
		s->b = p;
	}
	s->n += hs_varint_put(s->b + s->n, x);
}

static inline uint32_t ustream_get(const uint8_t **p)
{
	return (uint32_t)hs_varint_get(p);
}

/* A node as the difference from the one before it, and back. */
static inline uint32_t zigzag(uint32_t v, uint32_t prev)
{
	return (uint32_t)hs_zigzag((int64_t)v - prev);
}

static inline uint32_t unzigzag(uint32_t prev, uint32_t z)
{
	return (uint32_t)(prev + hs_unzigzag(z));
}

/* The lengths of the predecessor lists, from count_pass's counts (done):
 * roff[k] for row k (the k-th entered node by number, whose nodes by
 * number the stream vs gives), and *m their sum.  False when memory ran
 * out (roff untouched): pred_pass counts them then. */
static bool count_lengths(const struct hs_domgraph *g, struct count_part *cp,
			  const uint32_t *num, const uint64_t *entered, uint32_t nr,
			  const struct ustream *vs, uint32_t *roff, uint64_t *m)
{
	if (cp->nomem || !cp->c8)
		return false;
	/* the edges out of the nodes not reached are no one's (only the
	 * entered nodes' counts are read) */
	for (uint32_t v = 0; v < g->na; v++)
		if (!num[v])
			for (uint32_t x = g->head_off[v]; x < g->head_off[v + 1]; x++)
				if (entered_node(entered, g->head_adj[x]))
					uncount_edge(cp, g->head_adj[x]);
	uint32_t na = g->na;
	for (uint32_t k = 0; k < g->n - na; k++) {
		if (num[k + na])
			continue;
		struct hs_edges it = hs_edgerow(g->tail_rows, g->tail_index, k);
		uint32_t e;
		while (hs_edges_next(&it, &e))
			if (entered_node(entered, (e & HS_EDGEROW_ID_MASK) + na))
				uncount_edge(cp, (e & HS_EDGEROW_ID_MASK) + na);
	}
	const uint8_t *p = vs->b;
	uint64_t sum = 0;
	for (uint32_t i = 1, v = 0, k = 0; i <= nr; i++) {
		v = unzigzag(v, ustream_get(&p));
		if (!entered_node(entered, v))
			continue;
		uint32_t c = count_of(cp, v);
		/* less the tree edge (the entry has none) */
		c -= i != 1 && c;
		roff[k++] = c;
		sum += c;
	}
	*m = sum;
	return true;
}

/* The varint that ends at b + *end, read backwards: only a varint's last
 * byte has the high bit clear. */
static inline uint32_t ustream_get_back(const uint8_t *b, size_t *end)
{
	size_t i = *end - 1;
	while (i > 0 && (b[i - 1] & 0x80))
		i--;
	*end = i;
	const uint8_t *p = b + i;
	return ustream_get(&p);
}

/* The node before `v`, from the difference that led to v. */
static inline uint32_t unzigzag_back(uint32_t v, uint32_t z)
{
	return (uint32_t)(v - hs_unzigzag(z));
}

static void ustream_fini(struct ustream *s)
{
	free(s->b);
	*s = (struct ustream){0};
}

/* Step 3 asks for what a row's sources need this many rows ahead. */
enum { SEMI_AHEAD = 8 };

/* A DFS frame: the node's preorder number (FRAME_HEAD: a node of the head
 * part), the cursor and end of its row, and (a tail row) the id before
 * the cursor. */
#define FRAME_HEAD 0x80000000u
struct frame {
	uint32_t num, cur, end, prev;
};

struct dfs_bits {
	const uint64_t *leaf, *one;  /* no successor; exactly one */
	const uint32_t *only;        /* per node (num[]): its one successor */
};

static inline struct frame frame_of(const struct hs_domgraph *g, uint32_t v,
				   uint32_t number, const struct dfs_bits *b)
{
	if (v < g->na)
		return (struct frame){number | FRAME_HEAD, g->head_off[v], g->head_off[v + 1]};
	uint32_t k = v - g->na;
	struct hs_edges it = hs_edgerow(g->tail_rows, g->tail_index, k);
	struct frame f = {number, (uint32_t)(it.p - g->tail_rows),
			  (uint32_t)(it.end - g->tail_rows), k};
	/* its successors come next, and what they need is scattered: ask
	 * for it now */
	uint32_t e;
	while (hs_edges_next(&it, &e)) {
		uint32_t y = (e & HS_EDGEROW_ID_MASK) + g->na;
		if (b->one[y / 64] >> (y % 64) & 1)
			__builtin_prefetch(&b->only[y]);
		else if (!(b->leaf[y / 64] >> (y % 64) & 1))
			hs_edgerow_prefetch(g->tail_index, y - g->na);
	}
	return f;
}

/* Step 5's sums (struct hs_domtree): each reached node's own weight to
 * its own sum (an inner node) or its dominator's, then each inner node's
 * sum to its dominator's, children before parents.  Packed (wide false):
 * false when the total weight does not fit beside the counts, and the
 * sums are then to be done again, wide.  The nodes in reverse preorder
 * come from the stream vs, read from its end (vlast: the last node). */
static inline bool sum_up(struct hs_domtree *t, uint32_t n, uint32_t nr,
			  const struct ustream *vs, uint32_t vlast, bool wide)
{
	uint64_t *sum = t->inner_sum;
	uint32_t *cnt = t->inner_count;
	const uint32_t *tidom = t->idom;
	const struct hs_rankset *inner = &t->inner;
	unsigned cb = t->cbits;
	uint64_t total = 0;
	bool over = false;
	/* own weights in node order (the weights are read in the order
	 * they are stored); the sums the next nodes add to are scattered:
	 * asked for ahead */
	enum { AHEAD = 16 };
	for (uint32_t v = 0, k = 0; v < n; v++) {
		if (v + 2 * AHEAD < n && tidom[v + 2 * AHEAD] != HS_DOM_NONE)
			__builtin_prefetch(&inner->w[tidom[v + 2 * AHEAD] / 32]);
		if (v + AHEAD < n && tidom[v + AHEAD] != HS_DOM_NONE) {
			uint32_t kd = hs_rankset_index(inner, tidom[v + AHEAD]);
			if (kd != HS_RANK_NONE) {
				__builtin_prefetch(&sum[kd], 1);
				if (wide)
					__builtin_prefetch(&cnt[kd], 1);
			}
		}
		uint32_t d = tidom[v];
		uint32_t kv = hs_rankset_has(inner, v) ? k++ : HS_RANK_NONE;
		if (d == HS_DOM_NONE)
			continue;
		uint32_t kd = kv != HS_RANK_NONE || d == v ? kv : hs_rankset_index(inner, d);
		if (kd == HS_RANK_NONE)
			continue;  /* the entry, dominating nothing */
		uint64_t w = t->weight ? t->weight(t->warg, v) : 1;
		if (wide) {
			sum[kd] += w;
			cnt[kd]++;
		} else {
			over |= __builtin_add_overflow(total, w, &total);
			sum[kd] += (w << cb) + 1;
		}
	}
	if (!wide && (over || (cb < 64 && total >> (64 - cb))))
		return false;
	/* then each inner node's sum to its dominator's, in reverse
	 * preorder (the nodes of the numbers down to w - 2 * AHEAD are in
	 * ring[number % RING]) */
	enum { RING = 64 };
	uint32_t ring[RING];
	size_t vend = vs->n;
	uint32_t low = nr;  /* the least number in the ring */
	ring[nr % RING] = vlast;
	for (uint32_t w = nr; w >= 2; w--) {
		for (; low > 1 && low + 2 * AHEAD > w; low--)
			ring[(low - 1) % RING] = unzigzag_back(ring[low % RING],
							       ustream_get_back(vs->b, &vend));
		if (w >= 2 + 2 * AHEAD) {
			uint32_t x = ring[(w - 2 * AHEAD) % RING];
			__builtin_prefetch(&tidom[x]);
			__builtin_prefetch(&inner->w[x / 32]);
		}
		if (w >= 2 + AHEAD) {
			uint32_t x = ring[(w - AHEAD) % RING];
			uint32_t kx = hs_rankset_index(inner, x);
			if (kx != HS_RANK_NONE) {
				__builtin_prefetch(&sum[kx]);
				if (wide)
					__builtin_prefetch(&cnt[kx]);
				__builtin_prefetch(&inner->w[tidom[x] / 32]);
			}
		}
		uint32_t v = ring[w % RING];
		uint32_t kv = hs_rankset_index(inner, v);
		if (kv == HS_RANK_NONE)
			continue;
		uint32_t kd = hs_rankset_index(inner, tidom[v]);
		sum[kd] += sum[kv];
		if (wide)
			cnt[kd] += cnt[kv];
	}
	return true;
}

struct hs_error *hs_dominators_compute(const struct hs_domgraph *g,
				       uint64_t (*weight)(void *arg, uint32_t node),
				       void *warg, struct hs_domtree **ret)
{
	uint32_t n = g->n;
	/* progress: the DFS, the semi-dominators and the NCA walk, n each */
	static const char PHASE[] = "computing dominators";
	uint64_t total = 3 * (uint64_t)n;
	struct hs_error *err = &hs_error_nomem;
	struct hs_domtree *t = hs_calloc(1, sizeof(*t));
	struct count_part cp = {0};
	struct hs_task count_task = {0};
	/* DFS numbers are 1-based; 0 means "not reached" */
	uint32_t *num = hs_calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *vertex = NULL;
	uint32_t *parent = hs_malloc(((size_t)n + 1) * sizeof(uint32_t));
	/* read at random: huge pages spare a TLB miss per read */
	hs_vector_hugepages(num, ((size_t)n + 1) * sizeof(uint32_t));
	hs_vector_hugepages(parent, ((size_t)n + 1) * sizeof(uint32_t));
	/* the DFS stack grows with the depth, not with n */
	size_t stcap = 4096;
	struct frame *stack = hs_malloc(stcap * sizeof(*stack));
	uint32_t *least = NULL, *idom = NULL, *roff = NULL,
		 *evs = NULL, *big = NULL;
	uint8_t *radj = NULL;
	uint8_t *len8 = NULL;  /* (step 2 on) */
	/* the numbers' nodes, in preorder: the deltas, zigzag varints (most
	 * take a byte or two: a DFS meets the blocks of a heap in about the
	 * order they were allocated); an array again in step 5 only */
	struct ustream ps = {0}, vs = {0};
	uint32_t vprev = 0, vlast = 0;  /* vlast: the node numbered last */
	struct hs_rankset into = {0};
	/* the nodes an edge reaches after the DFS has seen them: the only
	 * ones with predecessors besides their DFS parent (by node; by
	 * number, into) */
	uint64_t *entered = NULL, *upper = NULL;
	if (!t || !num || !parent || !stack || !n)
		goto out;
	if (n >= FRAME_HEAD) {
		err = hs_error_create(HS_ERR_UNSUPPORTED, "graph too large");
		goto out;
	}
	t->n = n;

	/* 1. iterative DFS from 0: preorder numbers, spanning-tree parents.
	 * The search is bound by cache misses on the rows, so it reads as few
	 * as it can:
	 *  - each frame keeps its cursor into the node's row, so returning to
	 *    a node after a deep subtree reads nothing of the graph again;
	 *  - whether a node was seen is asked once per edge: a bitmap (n bits,
	 *    which stay in cache) answers faster than num[] (4n bytes);
	 *  - a node without successors (bitmap leaf) is numbered where it is
	 *    found and never pushed;
	 *  - a node with exactly one successor (bitmap one; most list nodes)
	 *    needs no frame either: its successor is visited at once, one
	 *    miss instead of two (offset, then row).  Until the node is
	 *    numbered, its slot in num[] holds that successor; it is read
	 *    just before the number is written over it.
	 * The preorder is the same as a plain DFS's. */
	uint32_t nt = n - g->na;  /* nodes of the tail part */
	/* the lists' lengths counted meanwhile (count_pass), with two
	 * threads; with one, after the search (its bytes then too) */
	bool two = g->nthreads >= 2 && nt >= 2;
	cp.g = g;
	if (two && (cp.c8 = hs_zalloc_written((size_t)n + 1)))
		hs_task_start(&count_task, count_pass, &cp);
	uint64_t *seen = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	uint64_t *leaf = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	uint64_t *one = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	entered = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	if (!seen || !leaf || !one || !entered) {
		free(seen);
		free(leaf);
		free(one);
		goto out;
	}
#define BIT(b, x) ((b)[(x) / 64] >> ((x) % 64) & 1)
#define SET_BIT(b, x) ((b)[(x) / 64] |= 1ull << ((x) % 64))
	if (nt) {
		/* the rows in order: each starts where the one before ends */
		uint32_t start = 0;
		for (uint32_t k = 0; k < nt; k++) {
			uint32_t end = hs_edgerow_start(g->tail_index, k + 1);
			struct hs_edges it = {g->tail_rows + start, g->tail_rows + end, k};
			start = end;
			if (it.p == it.end) {
				SET_BIT(leaf, k + g->na);
				continue;
			}
			uint32_t e = 0;
			hs_edges_next(&it, &e);
			if (it.p == it.end) {
				SET_BIT(one, k + g->na);
				num[k + g->na] = (e & HS_EDGEROW_ID_MASK) + g->na;
			}
		}
	}
	struct dfs_bits bits = {leaf, one, num};
	if ((err = ustream_reserve(&vs, (size_t)n * 2))) {
		free(seen);
		free(leaf);
		free(one);
		goto out;
	}
	err = &hs_error_nomem;
	SET_BIT(seen, 0);
	uint32_t next = 1;
	size_t sp = 0;
	uint64_t searched = 0;
	num[0] = next;
	ustream_put(&vs, 0);
	parent[next] = 0;
	stack[sp++] = frame_of(g, 0, next++, &bits);
	while (sp) {
		struct frame *f = &stack[sp - 1];
		bool in_head = f->num & FRAME_HEAD;
		uint32_t from = f->num & ~FRAME_HEAD;
		bool pushed = false;
		while (f->cur < f->end) {
			uint32_t w;
			searched++;
			if (in_head) {
				w = g->head_adj[f->cur++];
			} else {
				const uint8_t *p = g->tail_rows + f->cur;
				w = (hs_edgerow_get(&p, &f->prev) & HS_EDGEROW_ID_MASK) + g->na;
				f->cur = (uint32_t)(p - g->tail_rows);
			}
			if (BIT(seen, w)) {
				SET_BIT(entered, w);
				continue;
			}
			SET_BIT(seen, w);
			uint32_t up = from;
			/* w, then down its chain of single successors */
			for (;;) {
				if (g->log && !(next & 0xffff))
					hs_log_progress(g->log, PHASE, "nodes", next, total);
				/* only a node of one successor keeps it in its
				 * slot, read just before the number goes there:
				 * for the others the slot is written, not read,
				 * and the search does not wait for its line */
				bool single = BIT(one, w);
				uint32_t succ = 0;
				if (single)
					succ = num[w];
				num[w] = next;
				ustream_put(&vs, zigzag(w, vprev));
				vprev = w;
				vlast = w;
				parent[next] = up;
				up = next++;
				if (BIT(leaf, w))
					break;
				if (!single) {
					if (sp == stcap) {
						struct frame *ns = hs_realloc(stack, 2 * stcap * sizeof(*ns));
						if (!ns) {
							free(seen);
							free(leaf);
							free(one);
							goto out;
						}
						stack = ns;
						stcap *= 2;
					}
					stack[sp++] = frame_of(g, w, up, &bits);
					pushed = true;
					break;
				}
				w = succ;
				searched++;
				if (BIT(seen, w)) {
					SET_BIT(entered, w);
					break;
				}
				SET_BIT(seen, w);
			}
			if (pushed)
				break;
		}
		if (!pushed)
			sp--;
	}
	t->work.searched = searched;
	/* the single successors of the nodes not reached are no numbers */
	for (size_t x = 0; x < (size_t)n / 64 + 1; x++)
		for (uint64_t b = one[x] & ~seen[x]; b; b &= b - 1)
			num[x * 64 + (uint32_t)__builtin_ctzll(b)] = 0;
	free(stack);
	free(seen);
	free(leaf);
	free(one);
	stack = NULL;
	if (vs.nomem)
		goto out;
	uint32_t nr = next - 1;  /* reached nodes: numbers 1..nr */
	t->reached = nr;
	/* the same set by number */
	err = hs_rankset_init(&into, (size_t)nr + 1);
	if (err)
		goto out;
	err = &hs_error_nomem;
	for (size_t x = 0; x < (size_t)n / 64 + 1; x++)
		for (uint64_t b = entered[x]; b; b &= b - 1)
			hs_rankset_add(&into, num[x * 64 + (uint32_t)__builtin_ctzll(b)]);
	hs_rankset_finish(&into);
	uint32_t np = into.count;
#undef BIT
#undef SET_BIT

	/* the numbers and parents, written by the search, are read at
	 * random from here on: in huge pages, whatever pages the kernel had
	 * at hand when they were written */
	hs_vector_collapse(num, ((size_t)n + 1) * sizeof(uint32_t));
	hs_vector_collapse(parent, ((size_t)n + 1) * sizeof(uint32_t));
	/* 2. predecessors in number space (reached nodes only), without the
	 * edges from a node's DFS parent: the semi-dominator search starts
	 * from the parent anyway, and on a heap most edges are tree edges.
	 * So only the nodes that the DFS found entered by another edge have
	 * a row (row k: the k-th of them by number).  Rows are read in node
	 * order (the order they are stored in), not in DFS order: sequential
	 * reads; num[], parent[] and the counts are random.  The rows'
	 * lengths come from count_lengths, which reads no number or parent
	 * per edge.  With two threads, each fills the rows of the nodes of
	 * half of the numbers (`upper` takes the upper half out of
	 * `entered`): their rows are apart in one array. */
	roff = hs_calloc((size_t)np + 2, sizeof(uint32_t));
	if (!roff)
		goto out;
	uint64_t m = 0;
	hs_task_join(&count_task);
	if (!two && (cp.c8 = hs_calloc((size_t)n + 1, 1))) {
		cp.entered = entered;
		count_pass(&cp);
	}
	bool counted = count_lengths(g, &cp, num, entered, nr, &vs, roff, &m);
	free(cp.c8);
	count_map_free(&cp.over);
	cp = (struct count_part){0};
	struct pred_part parts[2] = {
		{.g = g, .num = num, .parent = parent, .into = &into, .mine = entered,
		 .cnt = roff},
	};
	unsigned nparts = 1;
	if (two && (upper = hs_calloc((size_t)n / 64 + 1, sizeof(uint64_t)))) {
		for (size_t x = 0; x < (size_t)n / 64 + 1; x++) {
			for (uint64_t b = entered[x]; b; b &= b - 1) {
				uint32_t y = (uint32_t)(x * 64) + (uint32_t)__builtin_ctzll(b);
				if (num[y] > nr / 2)
					upper[x] |= 1ull << (y % 64);
			}
			entered[x] &= ~upper[x];
		}
		parts[1] = parts[0];
		parts[1].mine = upper;
		nparts = 2;
	}
	if (!counted) {
		hs_run_parts(parts, sizeof(*parts), nparts, pred_pass);
		m = parts[0].m + (nparts == 2 ? parts[1].m : 0);
	}
	if (m >= UINT32_MAX) {
		err = hs_error_create(HS_ERR_UNSUPPORTED, "graph too large");
		goto out;
	}
	unsigned rw = nr < (1u << 24) && !g->wide_lists ? 3 : 4;
	radj = hs_malloc((m ? m : 1) * rw + sizeof(uint32_t));
	hs_vector_hugepages(radj, (m ? m : 1) * rw);
	if (!radj)
		goto out;
	for (;;) {
		/* row k is [start, end): filled downwards from its end; once
		 * filled, roff[k] is the row's start */
		uint32_t run = 0;
		for (uint32_t i = 0; i <= np + 1; i++) {
			run += roff[i];
			roff[i] = run;
		}
		for (unsigned i = 0; i < nparts; i++) {
			parts[i].radj = radj;
			parts[i].rw = rw;
		}
		hs_run_parts(parts, sizeof(*parts), nparts, pred_pass);
		uint64_t filled = parts[0].m + (nparts == 2 ? parts[1].m : 0);
		if (filled == m)
			break;
		/* fewer than counted: a row named a target twice (never
		 * more: the count holds every edge the fill takes).  The
		 * exact counts, then the fill again, in the lists' memory
		 * (large enough) */
		t->recounted = true;
		memset(roff, 0, ((size_t)np + 2) * sizeof(uint32_t));
		for (unsigned i = 0; i < nparts; i++)
			parts[i].radj = NULL;
		hs_run_parts(parts, sizeof(*parts), nparts, pred_pass);
		m = parts[0].m + (nparts == 2 ? parts[1].m : 0);
	}
	t->work.filed = m;
	free(entered);
	free(upper);
	entered = upper = NULL;
	/* the rows' lengths, a byte each (those of 255 or more in `big`, in
	 * row order): steps 3 and 4 walk the rows in order, so a running sum
	 * gives their bounds.  The bytes are written over the offsets (4
	 * bytes a row; byte k is behind the offsets still to be read), which
	 * then shrink to them.  Every row has an edge: the one that found
	 * its node seen. */
	size_t nbig = 0;
	for (uint32_t k = 0; k < np; k++)
		nbig += roff[k + 1] - roff[k] >= 255;
	big = hs_malloc((nbig ? nbig : 1) * sizeof(uint32_t));
	if (!big)
		goto out;
	uint8_t *l8 = (uint8_t *)roff;
	for (uint32_t k = 0, b = 0, at = roff[0]; k < np; k++) {
		uint32_t end = roff[k + 1], len = end - at;
		l8[k] = (uint8_t)(len >= 255 ? 255 : len);
		if (len >= 255)
			big[b++] = len;
		at = end;
	}
	len8 = hs_realloc(l8, (size_t)np + 1);
	if (!len8)
		len8 = l8;  /* (the offsets' memory, kept) */
	roff = NULL;
	/* from here on, numbers map to nodes through the stream vs.  The
	 * arrays are passed on rather than freed and allocated again: a
	 * page the kernel gives afresh costs more than its fill (on this
	 * machine's virtual machines, from 8 to 500 ms for 150 MB) */

	/* the lists, filled at random, are read at random (with the
	 * numbers and parents): in huge pages, whatever pages the kernel had
	 * at hand when they were written */
	hs_vector_collapse(radj, (size_t)m * rw);
	/* 3. semi-dominators, reverse preorder, eval with path compression
	 * over the parent links (LLVM's SemiNCAInfo::runSemiNCA).  A node
	 * without a row has its DFS parent alone for a predecessor: that is
	 * its semi-dominator, and its immediate dominator too.  Eval only
	 * ever compares the semi-dominators of labels, so least[x] keeps the
	 * label's semi-dominator itself (not the label): it is set when x is
	 * done, to x's own, and lowered by path compression.  Once the node
	 * of row k is done, its row is read no more: its semi-dominator is
	 * kept in the row's first slot for step 4.  Compression
	 * overwrites the parent links that step 4 needs: they go first to a
	 * stream of varints, in preorder (w - parent - 1: a byte for a node
	 * that is its parent's first child, most nodes of a heap). */
	if ((err = ustream_reserve(&ps, (size_t)nr + nr / 4)))
		goto out;
	err = &hs_error_nomem;
	for (uint32_t w = 2; w <= nr; w++)
		ustream_put(&ps, w - parent[w] - 1);
	if (ps.nomem)
		goto out;
	least = num;  /* n + 1 numbers, nr + 1 needed */
	num = NULL;
	size_t evcap = 1024;
	evs = hs_malloc(evcap * sizeof(uint32_t));
	if (!least || !evs)
		goto out;
	/* row k is [start, end); the lookahead's row ak is [astart, aend) */
	uint32_t end = (uint32_t)m, aend = (uint32_t)m, astart = (uint32_t)m, ak = np;
	uint64_t semi_steps = 0;
	size_t bi = nbig, abi = nbig;
	for (uint32_t w = nr, k = np; w >= 2; w--) {
		if (g->log && !(w & 0xffff))
			hs_log_progress(g->log, PHASE, "nodes", (uint64_t)n + nr - w, total);
		if (!hs_rankset_has(&into, w)) {
			least[w] = parent[w];  /* untouched yet: w was not done */
			continue;
		}
		k--;
		/* the rows come in decreasing order, their sources'
		 * parents and least scattered: asked for a few rows ahead */
		while (k >= SEMI_AHEAD && ak > k - SEMI_AHEAD) {
			ak--;
			aend = astart;
			astart = aend - (len8[ak] == 255 ? big[--abi] : len8[ak]);
			if (ak == k - SEMI_AHEAD)
				for (uint32_t e = astart; e < aend; e++) {
					__builtin_prefetch(&parent[radj_get(radj, e, rw)]);
					__builtin_prefetch(&least[radj_get(radj, e, rw)]);
				}
		}
		uint32_t start = end - (len8[k] == 255 ? big[--bi] : len8[k]);
		uint32_t sw = parent[w];
		semi_steps += end - start;
		for (uint32_t e = start; e < end; e++) {
			uint32_t v = radj_get(radj, e, rw);
			/* eval(v, w + 1): the least semi-dominator on v's path */
			uint32_t sv;
			if (parent[v] < w + 1) {
				/* not done yet (its semi-dominator is still
				 * itself), w itself, or the root of its
				 * virtual tree (done) */
				sv = v < w ? v : v == w ? sw : least[v];
			} else {
				size_t es = 0;
				uint32_t x = v;
				do {
					if (es == evcap) {
						uint32_t *ne = hs_realloc(evs, 2 * evcap * sizeof(uint32_t));
						if (!ne)
							goto out;
						evs = ne;
						evcap *= 2;
					}
					evs[es++] = x;
					semi_steps++;
					x = parent[x];
				} while (parent[x] >= w + 1);
				/* every node on the path is done */
				uint32_t px = x;
				uint32_t pl = least[px];
				do {
					uint32_t y = evs[--es];
					parent[y] = parent[px];
					if (pl < least[y])
						least[y] = pl;
					else
						pl = least[y];
					px = y;
				} while (es);
				sv = least[v];
			}
			if (sv < sw)
				sw = sv;
		}
		if (start < end)
			radj_set(radj, start, rw, sw);
		end = start;
		least[w] = sw;
	}
	/* 4. idom = NCA(parent, semi): walk up the idom chain from the DFS
	 * parent (a node without a row keeps its parent).  The parent links
	 * are spent: their array takes the idoms, filled in preorder. */
	idom = parent;
	parent = NULL;
	const uint8_t *pcur = ps.b;
	t->work.semi_steps = semi_steps;
	uint32_t start = 0, k0 = 0;  /* row k's start */
	uint64_t nca_steps = 0;
	bi = 0;
	if (np && hs_rankset_has(&into, 1)) {
		/* the entry's row (an edge back to it), not read */
		start = len8[0] == 255 ? big[bi++] : len8[0];
		k0 = 1;
	}
	for (uint32_t w = 2, k = k0; w <= nr; w++) {
		if (g->log && !(w & 0xffff))
			hs_log_progress(g->log, PHASE, "nodes", 2 * (uint64_t)n + w, total);
		uint32_t c = w - 1 - ustream_get(&pcur);
		if (hs_rankset_has(&into, w)) {
			uint32_t len = len8[k] == 255 ? big[bi++] : len8[k];
			k++;
			if (len) {
				uint32_t sw = radj_get(radj, start, rw);
				while (c > sw) {
					c = idom[c];
					nca_steps++;
				}
			}
			start += len;
		}
		idom[w] = c;
	}
	t->work.nca_steps = nca_steps;

	/* the search structures go before the results come */
	ustream_fini(&ps);
	free(len8);
	free(big);
	free(radj);
	free(evs);
	hs_rankset_fini(&into);
	len8 = NULL;
	radj = NULL;
	evs = big = NULL;

	/* 5. in node space: idom (then the numbered idom goes), then retained
	 * sizes, children before parents (reverse preorder) */
	t->idom = least;  /* n + 1 */
	least = NULL;
	for (uint32_t v = 0; v < n; v++)
		t->idom[v] = HS_DOM_NONE;
	/* the inner nodes: those that dominate another */
	if ((err = hs_rankset_init(&t->inner, n)))
		goto out;
	err = &hs_error_nomem;
	/* first each reached node's idom by number (the nodes come from the
	 * stream); the numbered idom, read once in order, gives its slot to
	 * the node of the number: then the numbers become nodes */
	const uint8_t *vcur = vs.b;
	vertex = idom;  /* nr + 1 */
	idom = NULL;
	for (uint32_t i = 1, v = 0; i <= nr; i++) {
		v = unzigzag(v, ustream_get(&vcur));
		t->idom[v] = i == 1 ? 1 : vertex[i];
		vertex[i] = v;
	}
	/* (the nodes in order, the numbers' nodes and the dominators' bits
	 * scattered: asked for ahead, the second from the first) */
	enum { STEP5_AHEAD = 16 };
	for (uint32_t v = 0; v < n; v++) {
		if (v + 2 * STEP5_AHEAD < n && t->idom[v + 2 * STEP5_AHEAD] != HS_DOM_NONE)
			__builtin_prefetch(&vertex[t->idom[v + 2 * STEP5_AHEAD]]);
		if (v + STEP5_AHEAD < n && t->idom[v + STEP5_AHEAD] != HS_DOM_NONE)
			__builtin_prefetch(&t->inner.w[vertex[t->idom[v + STEP5_AHEAD]] / 32], 1);
		uint32_t d = t->idom[v];
		if (d == HS_DOM_NONE)
			continue;
		d = t->idom[v] = vertex[d];
		if (d != v)
			hs_rankset_add(&t->inner, d);
	}
	/* the sums below walk the numbers backwards: the stream, read from
	 * its end, gives them without the array, whose pages (touched
	 * already) the sums take */
	hs_rankset_finish(&t->inner);
	uint32_t ninner = t->inner.count;
	t->weight = weight;
	t->warg = warg;
	t->cbits = 64 - (unsigned)__builtin_clzll((uint64_t)nr + 1);
	t->inner_sum = hs_realloc(vertex, ((size_t)ninner + 1) * sizeof(uint64_t));
	if (!t->inner_sum)
		goto out;
	vertex = NULL;
	memset(t->inner_sum, 0, ((size_t)ninner + 1) * sizeof(uint64_t));
	/* the sums read these at random, each node's and its dominator's:
	 * in huge pages, whatever pages they were given */
	hs_vector_collapse(t->inner_sum, ((size_t)ninner + 1) * sizeof(uint64_t));
	hs_vector_collapse(t->idom, ((size_t)n + 1) * sizeof(uint32_t));
	hs_vector_collapse(t->inner.w, t->inner.nwords * sizeof(uint64_t));
	if (!sum_up(t, g->n, nr, &vs, vlast, false)) {
		/* the total weight needs the counts' bits too */
		memset(t->inner_sum, 0, ((size_t)ninner + 1) * sizeof(uint64_t));
		t->inner_count = hs_calloc((size_t)ninner + 1, sizeof(uint32_t));
		if (!t->inner_count)
			goto out;
		sum_up(t, g->n, nr, &vs, vlast, true);
	}
	if (g->keep_order) {
		uint8_t *b = hs_realloc(vs.b, vs.n ? vs.n : 1);
		t->order = b ? b : vs.b;
		t->order_len = vs.n;
		vs = (struct ustream){0};
	}
	err = NULL;
out:
	hs_task_join(&count_task);
	free(cp.c8);
	count_map_free(&cp.over);
	if (g->log)
		hs_log_progress_end(g->log);
	free(num);
	free(vertex);
	free(parent);
	free(stack);
	free(least);
	free(idom);
	free(roff);
	free(len8);
	free(big);
	free(radj);
	free(evs);
	free(entered);
	free(upper);
	ustream_fini(&ps);
	ustream_fini(&vs);
	hs_rankset_fini(&into);
	if (err) {
		hs_domtree_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

void hs_domtree_destroy(struct hs_domtree *t)
{
	if (!t)
		return;
	free(t->idom);
	hs_rankset_fini(&t->inner);
	free(t->inner_sum);
	free(t->inner_count);
	free(t->order);
	free(t);
}
