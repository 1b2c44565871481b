#include "analyzers/dominators.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Successors of v: *p .. *e, each (x & mask) + shift. */
static inline void succ(const struct hs_domgraph *g, uint32_t v,
			const uint32_t **p, const uint32_t **e, uint32_t *shift,
			uint32_t *mask)
{
	if (v < g->na) {
		*p = g->head_adj + g->head_off[v];
		*e = g->head_adj + g->head_off[v + 1];
		*shift = 0;
		*mask = UINT32_MAX;
	} else {
		uint32_t k = v - g->na;
		*p = g->tail_adj + g->tail_off[k];
		*e = g->tail_adj + g->tail_off[k + 1];
		*shift = g->na;
		*mask = g->tail_mask;
	}
}

struct hs_error *hs_dominators_compute(const struct hs_domgraph *g,
				       uint64_t (*weight)(void *arg, uint32_t node),
				       void *warg, struct hs_domtree **ret)
{
	uint32_t n = g->n;
	struct hs_error *err = &hs_error_nomem;
	struct hs_domtree *t = calloc(1, sizeof(*t));
	/* DFS numbers are 1-based; 0 means "not reached" */
	uint32_t *num = calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *vertex = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *parent = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *stack_v = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *stack_e = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *semi = NULL, *label = NULL, *idom = NULL, *roff = NULL,
		 *radj = NULL, *evs = NULL;
	if (!t || !num || !vertex || !parent || !stack_v || !stack_e || !n)
		goto out;
	t->n = n;

	/* 1. iterative DFS from 0: preorder numbers, spanning-tree parents.
	 * Whether a node was seen is asked once per edge: a bitmap (n bits,
	 * which stay in cache) answers faster than num[] (4n bytes). */
	uint64_t *seen = calloc((size_t)n / 64 + 1, sizeof(uint64_t));
	if (!seen)
		goto out;
#define SEEN(x) (seen[(x) / 64] >> ((x) % 64) & 1)
#define SET_SEEN(x) (seen[(x) / 64] |= 1ull << ((x) % 64))
	SET_SEEN(0);
	uint32_t next = 1;
	size_t sp = 0;
	num[0] = next;
	vertex[next] = 0;
	parent[next] = 0;
	next++;
	stack_v[sp] = 0;
	stack_e[sp] = 0;
	sp++;
	while (sp) {
		uint32_t v = stack_v[sp - 1];
		const uint32_t *p, *e;
		uint32_t shift, mask;
		succ(g, v, &p, &e, &shift, &mask);
		const uint32_t *q = p + stack_e[sp - 1];
		if (q == p && g->tail_off) {
			/* first visit: the successors are visited next, and
			 * their rows are scattered; ask for them now */
			for (const uint32_t *x = p; x < e; x++) {
				uint32_t w = (*x & mask) + shift;
				if (w >= g->na)
					__builtin_prefetch(&g->tail_off[w - g->na]);
			}
		}
		bool pushed = false;
		while (q < e) {
			uint32_t w = (*q++ & mask) + shift;
			if (SEEN(w))
				continue;
			SET_SEEN(w);
			stack_e[sp - 1] = (uint32_t)(q - p);
			num[w] = next;
			vertex[next] = w;
			parent[next] = num[v];
			next++;
			stack_v[sp] = w;
			stack_e[sp] = 0;
			sp++;
			pushed = true;
			break;
		}
		if (!pushed)
			sp--;
	}
	free(stack_v);
	free(stack_e);
	free(seen);
	stack_v = stack_e = NULL;
#undef SEEN
#undef SET_SEEN
	uint32_t nr = next - 1;  /* reached nodes: numbers 1..nr */
	t->reached = nr;

	/* 2. predecessors in number space (reached nodes only) */
	roff = calloc((size_t)nr + 2, sizeof(uint32_t));
	if (!roff)
		goto out;
	/* rows are read in node order (the order they are stored in), not in
	 * DFS order: sequential reads, only num[] is random */
	uint64_t m = 0;
	for (uint32_t v = 0; v < n; v++) {
		if (!num[v])
			continue;
		const uint32_t *p, *e;
		uint32_t shift, mask;
		succ(g, v, &p, &e, &shift, &mask);
		for (; p < e; p++) {
			uint32_t w = num[(*p & mask) + shift];
			roff[w + 1]++;
			m++;
		}
	}
	if (m >= UINT32_MAX) {
		err = hs_error_create(HS_ERR_UNSUPPORTED, "graph too large");
		goto out;
	}
	for (uint32_t i = 1; i <= nr + 1; i++)
		roff[i] += roff[i - 1];
	radj = malloc((m ? m : 1) * sizeof(uint32_t));
	uint32_t *fill = malloc(((size_t)nr + 2) * sizeof(uint32_t));
	if (!radj || !fill) {
		free(fill);
		goto out;
	}
	memcpy(fill, roff, ((size_t)nr + 2) * sizeof(uint32_t));
	for (uint32_t v = 0; v < n; v++) {
		uint32_t i = num[v];
		if (!i)
			continue;
		const uint32_t *p, *e;
		uint32_t shift, mask;
		succ(g, v, &p, &e, &shift, &mask);
		for (; p < e; p++) {
			uint32_t w = num[(*p & mask) + shift];
			radj[fill[w]++] = i;
		}
	}
	free(fill);
	free(num);   /* from here on, numbers map to nodes through vertex[] */
	num = NULL;

	/* 3. semi-dominators, reverse preorder, eval with path compression
	 * over the parent links (LLVM's SemiNCAInfo::runSemiNCA) */
	semi = malloc(((size_t)nr + 1) * sizeof(uint32_t));
	label = malloc(((size_t)nr + 1) * sizeof(uint32_t));
	idom = malloc(((size_t)nr + 1) * sizeof(uint32_t));
	size_t evcap = 1024;
	evs = malloc(evcap * sizeof(uint32_t));
	if (!semi || !label || !idom || !evs)
		goto out;
	for (uint32_t i = 1; i <= nr; i++) {
		semi[i] = i;
		label[i] = i;
		idom[i] = parent[i];
	}
	for (uint32_t w = nr; w >= 2; w--) {
		semi[w] = parent[w];
		for (uint32_t k = roff[w]; k < roff[w + 1]; k++) {
			uint32_t v = radj[k];
			/* eval(v, w + 1) */
			uint32_t res;
			if (parent[v] < w + 1) {
				/* v not linked yet (then label[v] == v), or
				 * the root of its virtual tree */
				res = label[v];
			} else {
				size_t es = 0;
				uint32_t x = v;
				do {
					if (es == evcap) {
						uint32_t *ne = realloc(evs, 2 * evcap * sizeof(uint32_t));
						if (!ne)
							goto out;
						evs = ne;
						evcap *= 2;
					}
					evs[es++] = x;
					x = parent[x];
				} while (parent[x] >= w + 1);
				uint32_t px = x;
				uint32_t plabel = label[px];
				do {
					uint32_t y = evs[--es];
					parent[y] = parent[px];
					if (semi[plabel] < semi[label[y]])
						label[y] = plabel;
					else
						plabel = label[y];
					px = y;
				} while (es);
				res = label[v];
			}
			if (semi[res] < semi[w])
				semi[w] = semi[res];
		}
	}
	/* 4. idom = NCA(parent, semi): walk up the parent's idom chain */
	for (uint32_t w = 2; w <= nr; w++) {
		uint32_t c = idom[w];
		while (c > semi[w])
			c = idom[c];
		idom[w] = c;
	}

	/* the search structures go before the results come */
	free(parent);
	free(semi);
	free(label);
	free(roff);
	free(radj);
	free(evs);
	parent = semi = label = roff = radj = evs = NULL;

	/* 5. in node space: idom, then retained sizes, children before
	 * parents (reverse preorder) */
	t->idom = malloc((size_t)n * sizeof(uint32_t));
	t->retained = calloc(n, sizeof(uint64_t));
	t->retained_count = calloc(n, sizeof(uint32_t));
	if (!t->idom || !t->retained || !t->retained_count)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		t->idom[v] = HS_DOM_NONE;
	for (uint32_t i = 1; i <= nr; i++) {
		uint32_t v = vertex[i];
		t->idom[v] = vertex[i == 1 ? 1 : idom[i]];
		t->retained[v] = weight ? weight(warg, v) : 1;
		t->retained_count[v] = 1;
	}
	for (uint32_t w = nr; w >= 2; w--) {
		uint32_t v = vertex[w], d = vertex[idom[w]];
		t->retained[d] += t->retained[v];
		t->retained_count[d] += t->retained_count[v];
	}
	err = NULL;
out:
	free(num);
	free(vertex);
	free(parent);
	free(stack_v);
	free(stack_e);
	free(semi);
	free(label);
	free(idom);
	free(roff);
	free(radj);
	free(evs);
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
	free(t->retained);
	free(t->retained_count);
	free(t);
}
