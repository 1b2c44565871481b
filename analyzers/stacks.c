/* Dominator stacks interned in a trie: see analyzers/stacks.h. */
#include "analyzers/stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/summary.h"
#include "src/alloc.h"
#include "src/hashtab.h"
#include "src/strmap.h"

HS_HASH_MAP(frame_map, uint32_t)

struct builder {
	struct hs_stacks *s;
	size_t fcap, lcap;
	struct hs_strmap labels;
	struct frame_map by_key;        /* frames by fkey(parent, label) */
};

static bool label_id(struct builder *b, const char *label, uint32_t *ret)
{
	size_t idx;
	if (hs_strmap_find(&b->labels, label, &idx)) {
		*ret = (uint32_t)idx;
		return true;
	}
	struct hs_stacks *s = b->s;
	if (s->nlabels == b->lcap) {
		size_t cap = b->lcap ? 2 * b->lcap : 256;
		char **v = hs_realloc(s->labels, cap * sizeof(*v));
		if (!v)
			return false;
		s->labels = v;
		b->lcap = cap;
	}
	char *copy = strdup(label);
	if (!copy || hs_strmap_put(&b->labels, copy, s->nlabels)) {
		free(copy);
		return false;
	}
	s->labels[s->nlabels] = copy;
	*ret = (uint32_t)s->nlabels++;
	return true;
}

static uint64_t fkey(uint32_t parent, uint32_t label)
{
	return ((uint64_t)parent << 32 | label) + 1;  /* 0 is empty */
}

static bool frame_id(struct builder *b, uint32_t parent, uint32_t label,
		     uint32_t *ret)
{
	uint64_t key = fkey(parent, label);
	const uint32_t *known = frame_map_find(&b->by_key, key);
	if (known) {
		*ret = *known;
		return true;
	}
	struct hs_stacks *s = b->s;
	if (s->nframes == b->fcap) {
		size_t cap = b->fcap ? 2 * b->fcap : 1024;
		struct hs_stack_frame *v = hs_realloc(s->frames, cap * sizeof(*v));
		if (!v)
			return false;
		s->frames = v;
		b->fcap = cap;
	}
	struct hs_stack_frame *f = &s->frames[s->nframes];
	memset(f, 0, sizeof(*f));
	f->label = label;
	f->parent = parent;
	f->depth = parent == UINT32_MAX ? 1 : s->frames[parent].depth + 1;
	uint32_t *slot = NULL;
	if (frame_map_insert(&b->by_key, key, &slot, NULL))
		return false;
	*slot = (uint32_t)s->nframes;
	*ret = (uint32_t)s->nframes++;
	return true;
}

/* The label of a node: a root's name, a block's type or size class. */
static const char *node_label(const struct hs_heap *heap,
			      const struct hs_roots *roots,
			      const struct hs_retain *r,
			      const struct hs_types *types, uint32_t node,
			      char *buf, size_t len)
{
	if (node == HS_NODE_SUPER)
		return "(held by several roots)";
	if (node == HS_NODE_LEAKED)
		return "(leaked)";
	if (!hs_retain_is_alloc(r, node))
		return hs_retain_root(r, roots, node)->name;
	return hs_type_label(heap, types, node - r->base, buf, len);
}

struct hs_error *hs_stacks_build(const struct hs_heap *heap,
				 const struct hs_mark *mark,
				 const struct hs_roots *roots,
				 const struct hs_retain *r,
				 const struct hs_types *types,
				 struct hs_stacks **ret)
{
	const struct hs_domtree *t = r->tree;
	struct hs_stacks *s = hs_calloc(1, sizeof(*s));
	struct builder b = {.s = s};
	uint32_t *stack_of = hs_malloc((size_t)t->n * sizeof(uint32_t));
	uint32_t *path = hs_malloc((size_t)t->n * sizeof(uint32_t));
	struct hs_error *err = &hs_error_nomem;
	if (!s || !stack_of || !path)
		goto out;
	memset(stack_of, 0xff, (size_t)t->n * sizeof(uint32_t));
	char buf[600];
	/* every node's frame: walk up to a node whose frame is known (the
	 * super-root's children start stacks), then come back down */
	for (uint32_t v = 1; v < t->n; v++) {
		if (stack_of[v] != UINT32_MAX || t->idom[v] == HS_DOM_NONE)
			continue;
		size_t n = 0;
		uint32_t x = v;
		while (x != HS_NODE_SUPER && stack_of[x] == UINT32_MAX) {
			path[n++] = x;
			x = t->idom[x];
		}
		uint32_t base = x == HS_NODE_SUPER ? UINT32_MAX : stack_of[x];
		while (n) {
			uint32_t y = path[--n];
			uint32_t label;
			/* a block dominated by the super-root directly is held
			 * by several roots: that is its stack's base */
			if (base == UINT32_MAX && hs_retain_is_alloc(r, y)) {
				uint32_t shared;
				if (!label_id(&b, "(held by several roots)", &label) ||
				    !frame_id(&b, UINT32_MAX, label, &shared))
					goto out;
				base = shared;
			}
			if (!label_id(&b, node_label(heap, roots, r, types, y, buf,
						     sizeof(buf)), &label))
				goto out;
			uint32_t f;
			if (base != UINT32_MAX && (s->frames[base].label == label ||
						   s->frames[base].depth >= HS_STACK_DEPTH))
				f = base;  /* a run of one label, or deep enough */
			else if (!frame_id(&b, base, label, &f))
				goto out;
			stack_of[y] = f;
			base = f;
		}
	}
	for (uint32_t id = 0; id + r->base < t->n; id++) {
		const struct hs_alloc *a = &heap->allocs[id];
		uint32_t f = stack_of[r->base + id];
		if (!hs_alloc_in_graph(a) || f == UINT32_MAX)
			continue;
		struct hs_stack_frame *fr = &s->frames[f];
		fr->count++;
		fr->bytes += a->size;
		uint8_t reach = mark->reach[id];
		if (reach == HS_REACH_LEAK_ROOT || reach == HS_REACH_INDIRECT) {
			fr->leaked_count++;
			fr->leaked_bytes += a->size;
		}
	}
	err = NULL;
out:
	free(stack_of);
	free(path);
	hs_strmap_free(&b.labels);
	frame_map_free(&b.by_key);
	if (err) {
		hs_stacks_destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

void hs_stacks_destroy(struct hs_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nlabels; i++)
		free(s->labels[i]);
	free(s->labels);
	free(s->frames);
	free(s);
}
