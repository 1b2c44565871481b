/* heapsift top: what holds the memory. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/summary.h"
#include "src/alloc.h"
#include "src/cli_retain.h"

static void json_sharers(struct hs_jsonw *w, const struct hs_results *res,
			 const struct hs_sharers *s)
{
	hs_jsonw_key(w, "shared_by");
	hs_jsonw_array_begin(w);
	for (uint32_t k = 0; k < s->shown; k++)
		hs_jsonw_string(w, res->roots->roots[s->root[k]].name);
	hs_jsonw_array_end(w);
	hs_jsonw_kuint(w, "shared_by_count", s->total);
}

int hs_cmd_top(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res_;
	const struct hs_results *res = &res_;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_RETAIN | HS_WANT_TYPES |
							 HS_WANT_LEAN, &res_);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res->retain;
	size_t nrows = 0;
	struct hs_root_row *rows = NULL;
	struct hs_error *e = hs_root_rows(r, res->roots, &rows, &nrows);
	if (e)
		return hs_cli_fail(cli, e);
	size_t limit = cli->top_n;
	uint32_t *tops = hs_malloc((limit ? limit : 1) * sizeof(*tops));
	if (!tops) {
		free(rows);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	size_t ntops = hs_retain_top(r, limit, tops);
	const struct hs_domtree *t = r->tree;
	/* who shares what no single root holds: the top blocks, and the
	 * biggest shared block for the roots' "shared" row */
	struct hs_sharers *sh = hs_calloc(ntops + 1, sizeof(*sh));
	uint32_t *shared = hs_malloc((ntops + 1) * sizeof(*shared));
	size_t nshared = 0;
	uint32_t biggest = HS_DOM_NONE;
	for (uint32_t v = r->base; v < t->n; v++)
		if (t->idom[v] == HS_NODE_SUPER &&
		    (biggest == HS_DOM_NONE || hs_domtree_retained(t, v) > hs_domtree_retained(t, biggest)))
			biggest = v;
	if (sh && shared) {
		for (size_t i = 0; i < ntops; i++)
			if (t->idom[tops[i]] == HS_NODE_SUPER)
				shared[nshared++] = tops[i];
		if (biggest != HS_DOM_NONE)
			shared[nshared++] = biggest;
	}
	struct hs_sharers *shared_out = hs_calloc(nshared + 1, sizeof(*shared_out));
	e = !sh || !shared || !shared_out ? &hs_error_nomem :
		hs_cli_sharers(res, shared, nshared, shared_out);
	if (e) {
		free(sh);
		free(shared);
		free(shared_out);
		free(rows);
		free(tops);
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	for (size_t i = 0, k = 0; i < ntops; i++)
		if (t->idom[tops[i]] == HS_NODE_SUPER)
			sh[i] = shared_out[k++];
	struct hs_sharers biggest_sh = nshared && biggest != HS_DOM_NONE ?
		shared_out[nshared - 1] : (struct hs_sharers){0};
	char b1[32], b2[32], name[512];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_key(&w, "total");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "count", r->used_count);
		hs_jsonw_kuint(&w, "bytes", r->used_bytes);
		hs_jsonw_object_end(&w);
		hs_cli_suspects_json(&w, res);
		hs_jsonw_key(&w, "roots");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < nrows && i < limit; i++) {
			hs_jsonw_object_begin(&w);
			hs_jsonw_kstring(&w, "name", rows[i].name);
			hs_jsonw_kstring(&w, "kind", rows[i].kind);
			if (!strcmp(rows[i].kind, "shared"))
				json_sharers(&w, res, &biggest_sh);
			hs_jsonw_kuint(&w, "retained", rows[i].retained);
			hs_jsonw_kuint(&w, "count", rows[i].count);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_key(&w, "allocations");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < ntops; i++) {
			hs_jsonw_object_begin(&w);
			hs_cli_json_node(&w, res, tops[i]);
			hs_jsonw_key(&w, "held_by");
			hs_jsonw_object_begin(&w);
			uint32_t d = t->idom[tops[i]];
			hs_jsonw_kstring(&w, "kind", hs_cli_node_kind(res, d));
			if (hs_retain_is_alloc(r, d))
				hs_jsonw_kaddr(&w, "address", res->heap->allocs[d - r->base].addr);
			else if (d >= HS_NODE_FIRST_ROOT)
				hs_jsonw_kstring(&w, "name", hs_retain_root(r, res->roots, d)->name);
			else if (d == HS_NODE_SUPER)
				json_sharers(&w, res, &sh[i]);
			hs_jsonw_object_end(&w);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_kbool(&w, "partial", res->heap->partial);
		hs_jsonw_kuint(&w, "unaccounted_bytes", res->heap->unaccounted_bytes);
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		hs_cli_partial_line(res->heap);
		printf("HEAP: %" PRIu64 " blocks in use by the program, %s\n\n", r->used_count,
		       hs_fmt_size(b1, r->used_bytes));
		hs_cli_suspects_text(res);
		printf("\nROOTS BY RETAINED SIZE (%zu of %zu that hold something alone)\n",
		       nrows < limit ? nrows : limit, nrows);
		printf("%11s %6s %9s  %-11s %s\n", "RETAINED", "SHARE", "BLOCKS", "KIND",
		       "ROOT");
		for (size_t i = 0; i < nrows && i < limit; i++) {
			printf("%11s %5.1f%% %9" PRIu64 "  %-11s %s\n",
			       hs_fmt_size(b1, rows[i].retained),
			       r->used_bytes ? 100.0 * (double)rows[i].retained /
				       (double)r->used_bytes : 0.0,
			       rows[i].count, rows[i].kind, rows[i].name);
			if (!strcmp(rows[i].kind, "shared") && biggest_sh.total) {
				hs_cli_sharers_text(res, &biggest_sh, name, sizeof(name));
				printf("%31s  the biggest (%s) by: %s\n", "",
				       hs_fmt_size(b2, hs_domtree_retained(t, biggest)), name);
			}
		}
		printf("\nBLOCKS BY RETAINED SIZE (%zu)\n", ntops);
		printf("%11s %6s %9s  %-18s %10s  %-10s %-24s %s\n", "RETAINED", "SHARE",
		       "BLOCKS", "ADDRESS", "SIZE", "CLASS", "TYPE", "HELD BY");
		for (size_t i = 0; i < ntops; i++) {
			uint32_t v = tops[i], id = v - r->base;
			const struct hs_alloc *a = &res->heap->allocs[id];
			hs_cli_node_name(res, t->idom[v], name, sizeof(name));
			if (t->idom[v] == HS_NODE_SUPER && sh[i].total) {
				char who[400];
				hs_cli_sharers_text(res, &sh[i], who, sizeof(who));
				snprintf(name, sizeof(name), "several roots: %s", who);
			}
			char tname[600];
			const char *type = hs_types_name(res->types, res->heap, id, tname,
							 sizeof(tname));
			printf("%11s %5.1f%% %9u  %#-18" PRIx64 " %10s  %-10s %-24s %s\n",
			       hs_fmt_size(b1, hs_domtree_retained(t, v)),
			       r->used_bytes ? 100.0 * (double)hs_domtree_retained(t, v) /
				       (double)r->used_bytes : 0.0,
			       hs_domtree_count(t, v), (uint64_t)a->addr, hs_fmt_size(b2, a->size),
			       hs_cli_reach(res, id), type ? type : "-", name);
		}
	}
	free(sh);
	free(shared);
	free(shared_out);
	free(rows);
	free(tops);
	return HS_EXIT_OK;
}
