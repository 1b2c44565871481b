/* heapsift path: how a root reaches a block; heapsift dom: what dominates
 * it and what it dominates. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/sort.h"
#include "src/cli_retain.h"

enum { MAX_HOPS = 100000 };

/* The block holding cli->addr, as a node; prints the error itself. */
static int target_node(struct hs_cli *cli, const struct hs_results *res,
		       uint32_t *node)
{
	const struct hs_alloc *a = hs_heap_find(res->heap, cli->addr);
	if (!a) {
		fprintf(stderr, "heapsift: %#" PRIx64 " is not inside any heap block\n",
			cli->addr);
		return HS_EXIT_ANALYSIS;
	}
	if (!hs_alloc_in_graph(a)) {
		fprintf(stderr, "heapsift: %#" PRIx64 " is in a %s block (%s): nothing retains it\n",
			cli->addr, hs_alloc_state(a) == HS_STATE_FREE ? "free" : "allocator-internal",
			hs_alloc_where(res->heap, a));
		return HS_EXIT_ANALYSIS;
	}
	*node = hs_retain_node(res->retain, (uint32_t)(a - res->heap->allocs));
	return HS_EXIT_OK;
}

/* Address of the first word of node `from` that points into allocation
 * node `to` (its value in *value); false if none is found. */
static bool find_word(const struct hs_results *res, uint32_t from, uint32_t to,
		      uint64_t *where, uint64_t *value)
{
	const struct hs_retain *r = res->retain;
	const struct hs_alloc *t = &res->heap->allocs[to - r->base];
	uint64_t lo, hi;
	if (hs_retain_is_alloc(r, from)) {
		const struct hs_alloc *a = &res->heap->allocs[from - r->base];
		lo = a->addr;
		hi = a->addr + a->size;
	} else {
		const struct hs_root *root = hs_retain_root(r, res->roots, from);
		if (!root)
			return false;
		if (hs_root_is_value(root)) {
			*where = 0;
			*value = root->value;
			return true;
		}
		lo = (root->start + 7) & ~7ull;
		hi = root->end;
	}
	struct hs_py_skip skip = hs_retain_is_alloc(r, from) && res->graph ?
			hs_graph_skip(res->graph, from - r->base) :
			(struct hs_py_skip){0, 0, 0};
	for (uint64_t p = lo; p + 8 <= hi; p += 8) {
		uint64_t v;
		if (hs_py_skip_word(skip, (p - lo) / 8, (hi - lo) / 8) ||
		    !hs_core_read_u64(res->core, p, &v))
			continue;
		if (v >= t->addr && v < t->addr + t->size) {
			*where = p;
			*value = v;
			return true;
		}
	}
	return false;
}

/* nodes of the BFS-tree path from a root to node, root first */
static size_t chain(const uint32_t *parent, uint32_t node, uint32_t *out)
{
	size_t n = 0;
	while (node != HS_NODE_SUPER && node != HS_DOM_NONE && n < MAX_HOPS) {
		out[n++] = node;
		node = parent[node];
	}
	for (size_t i = 0; i < n / 2; i++) {
		uint32_t x = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = x;
	}
	return n;
}

static void print_path(const struct hs_results *res, const uint32_t *nodes, size_t n,
		       struct hs_jsonw *w)
{
	const struct hs_retain *r = res->retain;
	if (w)
		hs_jsonw_object_begin(w);
	size_t i = 0;
	if (n && nodes[0] == HS_NODE_LEAKED) {
		/* no root: the path starts at a leak root */
		i = 1;
		if (w) {
			hs_jsonw_kstring(w, "root", NULL);
			hs_jsonw_kstring(w, "kind", "leaked");
		} else {
			printf("  (no root: leaked)\n");
		}
	} else if (n) {
		const struct hs_root *root = hs_retain_root(r, res->roots, nodes[0]);
		uint64_t where = 0, value = 0;
		bool found = n > 1 && find_word(res, nodes[0], nodes[1], &where, &value);
		if (w) {
			hs_jsonw_kstring(w, "root", root->name);
			hs_jsonw_kstring(w, "kind", hs_root_kind_names[root->kind]);
			if (found && where)
				hs_jsonw_kaddr(w, "at", where);
		} else if (found && where) {
			printf("  %s  [word at %#" PRIx64 "]\n", root->name, where);
		} else {
			printf("  %s\n", root->name);
		}
		i = 1;
	}
	if (w) {
		hs_jsonw_key(w, "hops");
		hs_jsonw_array_begin(w);
	}
	for (; i < n; i++) {
		uint32_t id = nodes[i] - r->base;
		const struct hs_alloc *a = &res->heap->allocs[id];
		uint64_t where = 0, value = a->addr;
		bool prev_alloc = i > 0 && hs_retain_is_alloc(r, nodes[i - 1]);
		bool found = i > 0 && find_word(res, nodes[i - 1], nodes[i], &where, &value);
		uint64_t from_off = prev_alloc && found ?
			where - res->heap->allocs[nodes[i - 1] - r->base].addr : 0;
		char *field = prev_alloc && found ?
			hs_cli_field(res, nodes[i - 1] - r->base, from_off) : NULL;
		if (w) {
			hs_jsonw_object_begin(w);
			if (prev_alloc && found)
				hs_jsonw_kuint(w, "from_offset", from_off);
			if (field)
				hs_jsonw_kstring(w, "field", field);
			hs_jsonw_kaddr(w, "address", a->addr);
			hs_jsonw_kuint(w, "target_offset", found ? value - a->addr : 0);
			hs_jsonw_kuint(w, "size", a->size);
			char tname[600];
			hs_jsonw_kstring(w, "type", hs_types_name(res->types, res->heap, id,
								  tname, sizeof(tname)));
			hs_jsonw_kstring(w, "reach", hs_cli_reach(res, id));
			hs_jsonw_object_end(w);
		} else {
			char via[700] = "";
			if (prev_alloc && found && field)
				snprintf(via, sizeof(via), "+%#" PRIx64 " %s ", from_off, field);
			else if (prev_alloc && found)
				snprintf(via, sizeof(via), "+%#" PRIx64 " ", from_off);
			char into[48] = "";
			if (found && value != a->addr)
				snprintf(into, sizeof(into), " +%#" PRIx64, value - a->addr);
			char tname[600];
			const char *type = hs_types_name(res->types, res->heap, id,
							 tname, sizeof(tname));
			printf("  %*s%s-> %#" PRIx64 "%s (%" PRIu64 " bytes, %s%s%s)\n",
			       (int)(2 * (i > 8 ? 8 : i)), "", via, (uint64_t)a->addr, into,
			       (uint64_t)a->size, type ? type : "", type ? ", " : "",
			       hs_cli_reach(res, id));
		}
		free(field);
	}
	if (w) {
		hs_jsonw_array_end(w);
		hs_jsonw_object_end(w);
	}
}

int hs_cmd_path(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res_;
	const struct hs_results *res = &res_;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_RETAIN | HS_WANT_TYPES,
							 &res_);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res->retain;
	uint32_t target;
	int rc = target_node(cli, res, &target);
	if (rc)
		return rc;
	uint32_t *parent = NULL;
	struct hs_error *e = hs_retain_bfs(r, res->graph, &parent);
	if (e)
		return hs_cli_fail(cli, e);
	/* the last hops: the shortest path itself, and with --all one more
	 * path per other direct retainer, shortest first */
	size_t cap = 1, n = 1;
	uint32_t *last = hs_malloc(sizeof(*last) * 16);
	if (!last) {
		free(parent);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	cap = 16;
	last[0] = parent[target];
	if (cli->all) {
		const struct hs_graph *g = res->graph;
		for (uint32_t v = 0; v < r->base + g->n && n < cli->top_n; v++) {
			if (v == last[0] || parent[v] == HS_DOM_NONE || v == HS_NODE_SUPER)
				continue;
			struct hs_retain_succ it = hs_retain_succ(r, g, v);
			uint32_t w;
			while (hs_retain_next(&it, &w)) {
				if (w != target)
					continue;
				if (n == cap) {
					cap *= 2;
					uint32_t *nl = hs_realloc(last, cap * sizeof(*nl));
					if (!nl)
						break;
					last = nl;
				}
				last[n++] = v;
				break;
			}
		}
	}
	uint32_t *nodes = hs_malloc(MAX_HOPS * sizeof(uint32_t));
	if (!nodes) {
		free(parent);
		free(last);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	char name[512], b1[32];
	struct hs_jsonw w;
	const struct hs_alloc *a = &res->heap->allocs[target - r->base];
	if (cli->format == HS_FORMAT_JSON) {
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_key(&w, "target");
		hs_jsonw_object_begin(&w);
		hs_cli_json_node(&w, res, target);
		hs_jsonw_object_end(&w);
		hs_jsonw_key(&w, "paths");
		hs_jsonw_array_begin(&w);
	} else {
		hs_cli_node_name(res, target, name, sizeof(name));
		printf("%s retains %s in %u blocks\n", name,
		       hs_fmt_size(b1, hs_domtree_retained(r->tree, target)),
		       hs_domtree_count(r->tree, target));
	}
	for (size_t k = 0; k < n; k++) {
		size_t len = chain(parent, last[k], nodes);
		if (len + 1 < MAX_HOPS)
			nodes[len++] = target;
		if (cli->format == HS_FORMAT_JSON) {
			print_path(res, nodes, len, &w);
		} else {
			printf("%s (%zu hop%s):\n", n > 1 ? "path" : "shortest path",
			       len - 1, len == 2 ? "" : "s");
			print_path(res, nodes, len, NULL);
		}
	}
	if (cli->format == HS_FORMAT_JSON) {
		hs_jsonw_array_end(&w);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else if (!cli->all) {
		(void)a;
		printf("(--all shows a path through each other block or root that points to it)\n");
	}
	free(nodes);
	free(parent);
	free(last);
	return HS_EXIT_OK;
}

static int cmp_retained_desc(const void *x, const void *y, void *arg)
{
	const struct hs_domtree *t = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (hs_domtree_retained(t, a) != hs_domtree_retained(t, b))
		return hs_domtree_retained(t, a) > hs_domtree_retained(t, b) ? -1 : 1;
	return a < b ? -1 : a > b;
}

int hs_cmd_dom(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res_;
	const struct hs_results *res = &res_;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_RETAIN | HS_WANT_TYPES,
							 &res_);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res->retain;
	uint32_t target;
	int rc = target_node(cli, res, &target);
	if (rc)
		return rc;
	const struct hs_domtree *t = r->tree;
	/* dominator chain, target first */
	size_t nchain = 0, cap = 64;
	uint32_t *up = hs_malloc(cap * sizeof(*up));
	size_t nkids = 0, kcap = 64;
	uint32_t *kids = hs_malloc(kcap * sizeof(*kids));
	if (!up || !kids) {
		free(up);
		free(kids);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	for (uint32_t v = t->idom[target]; v != HS_NODE_SUPER && v != HS_DOM_NONE;
	     v = t->idom[v]) {
		if (nchain == cap) {
			cap *= 2;
			uint32_t *nu = hs_realloc(up, cap * sizeof(*nu));
			if (!nu)
				break;
			up = nu;
		}
		up[nchain++] = v;
	}
	for (uint32_t v = r->base; v < t->n; v++) {
		if (t->idom[v] != target || v == target)
			continue;
		if (nkids == kcap) {
			kcap *= 2;
			uint32_t *nk = hs_realloc(kids, kcap * sizeof(*nk));
			if (!nk)
				break;
			kids = nk;
		}
		kids[nkids++] = v;
	}
	hs_sort_r(kids, nkids, sizeof(*kids), cmp_retained_desc, (void *)t);
	size_t show = nkids < cli->top_n ? nkids : cli->top_n;
	char name[512], b1[32];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_cli_json_node(&w, res, target);
		hs_jsonw_key(&w, "idom");
		hs_jsonw_object_begin(&w);
		hs_cli_json_node(&w, res, t->idom[target]);
		hs_jsonw_object_end(&w);
		hs_jsonw_key(&w, "dominators");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < nchain; i++) {
			hs_jsonw_object_begin(&w);
			hs_cli_json_node(&w, res, up[i]);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_kuint(&w, "children_count", nkids);
		hs_jsonw_key(&w, "children");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < show; i++) {
			hs_jsonw_object_begin(&w);
			hs_cli_json_node(&w, res, kids[i]);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		hs_cli_node_name(res, target, name, sizeof(name));
		printf("%s retains %s in %u blocks\n", name,
		       hs_fmt_size(b1, hs_domtree_retained(t, target)), hs_domtree_count(t, target));
		hs_cli_node_name(res, t->idom[target], name, sizeof(name));
		printf("immediate dominator: %s\n", name);
		if (nchain > 1) {
			printf("dominators, nearest first:\n");
			for (size_t i = 0; i < nchain; i++) {
				hs_cli_node_name(res, up[i], name, sizeof(name));
				printf("  %s\n", name);
			}
		}
		printf("dominates %zu block%s directly", nkids, nkids == 1 ? "" : "s");
		if (nkids) {
			printf(", the largest:\n%11s %9s  %s\n", "RETAINED", "BLOCKS", "BLOCK");
			for (size_t i = 0; i < show; i++) {
				hs_cli_node_name(res, kids[i], name, sizeof(name));
				printf("%11s %9u  %s\n", hs_fmt_size(b1, hs_domtree_retained(t, kids[i])),
				       hs_domtree_count(t, kids[i]), name);
			}
		} else {
			printf("\n");
		}
	}
	free(up);
	free(kids);
	return HS_EXIT_OK;
}
