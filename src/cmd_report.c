/* heapsift report: one self-contained HTML page (no network): summary,
 * suspects, an icicle of the dominator tree, roots, leaks, types, blocks.
 * Aggregated, so a heap of 10^7 blocks makes a page of the same size as a
 * small one: the tree is the dominator stacks (analyzers/stacks), the
 * tables their top rows. */
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/sort.h"
#include "analyzers/frag.h"
#include "analyzers/stacks.h"
#include "analyzers/summary.h"
#include "formats/htmlpage.h"
#include "src/cli_retain.h"
#include "src/outfile.h"

extern const char hs_report_html[];

enum { ROWS = 200 };

struct lr {
	char *label;
	uint64_t size, held_count, held_bytes;
};

static int cmp_lr(const void *a, const void *b)
{
	return strcmp(((const struct lr *)a)->label, ((const struct lr *)b)->label);
}

struct group {
	const char *label;
	uint64_t count, bytes, held_count, held_bytes;
};

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	uint64_t tx = x->bytes + x->held_bytes, ty = y->bytes + y->held_bytes;
	return tx > ty ? -1 : tx < ty;
}

/* Leak roots by type into the open array; false when out of memory (the
 * rows written so far stay). */
static bool leak_groups(struct hs_jsonw *w, const struct hs_results *res)
{
	bool ok = false;
	const struct hs_mark *m = res->mark;
	size_t n = m->nleak_roots;
	struct lr *v = hs_calloc(n ? n : 1, sizeof(*v));
	struct group *g = hs_calloc(n ? n : 1, sizeof(*g));
	char buf[600];
	size_t ng = 0;
	if (!v || !g)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct hs_leak_root *lr = &m->leak_roots[i];
		v[i].label = strdup(hs_type_label(res->heap, res->types, lr->id, buf,
						  sizeof(buf)));
		if (!v[i].label)
			goto out;
		v[i].size = res->heap->allocs[lr->id].size;
		v[i].held_count = lr->held_count;
		v[i].held_bytes = lr->held_bytes;
	}
	hs_sort(v, n, sizeof(*v), cmp_lr);
	for (size_t i = 0; i < n; i++) {
		if (!ng || strcmp(g[ng - 1].label, v[i].label))
			g[ng++] = (struct group){.label = v[i].label};
		g[ng - 1].count++;
		g[ng - 1].bytes += v[i].size;
		g[ng - 1].held_count += v[i].held_count;
		g[ng - 1].held_bytes += v[i].held_bytes;
	}
	hs_sort(g, ng, sizeof(*g), cmp_group);
	for (size_t i = 0; i < ng && i < ROWS; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "type", g[i].label);
		hs_jsonw_kuint(w, "count", g[i].count);
		hs_jsonw_kuint(w, "bytes", g[i].bytes);
		hs_jsonw_kuint(w, "held_count", g[i].held_count);
		hs_jsonw_kuint(w, "held_bytes", g[i].held_bytes);
		hs_jsonw_object_end(w);
	}
	ok = true;
out:
	for (size_t i = 0; v && i < n; i++)
		free(v[i].label);
	free(v);
	free(g);
	return ok;
}

struct data_arg {
	struct hs_snapshot *snap;
	const struct hs_results *res;
	const struct hs_stacks *st;
	const struct hs_type_row *types;
	size_t ntypes;
	const struct hs_root_row *roots;
	size_t nroots;
};

/* The page's data, for hs_html_page_write. */
static void data(struct hs_jsonw *w, void *arg)
{
	const struct data_arg *da = arg;
	struct hs_snapshot *snap = da->snap;
	const struct hs_results *res = da->res;
	const struct hs_stacks *st = da->st;
	const struct hs_type_row *types = da->types;
	const struct hs_root_row *roots = da->roots;
	size_t ntypes = da->ntypes, nroots = da->nroots;
	const struct hs_retain *r = res->retain;
	const struct hs_mark *m = res->mark;
	const struct hs_heap *heap = res->heap;
	hs_jsonw_object_begin(w);
	hs_jsonw_key(w, "summary");
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "core", snap->core->path);
	if (snap->core->process.valid)
		hs_jsonw_kstring(w, "process", snap->core->process.fname);
	char alloc[128];
	snprintf(alloc, sizeof(alloc), "%s %s%s", heap->allocator,
		 heap->version ? heap->version : "", heap->partial ? " (partial)" : "");
	hs_jsonw_kstring(w, "allocator", alloc);
	hs_jsonw_kuint(w, "used_count", r->used_count);
	hs_jsonw_kuint(w, "used_bytes", r->used_bytes);
	uint64_t fc = 0, fb = 0, tc = 0, tb = 0;
	for (size_t i = 0; i < heap->nallocs; i++)
		if (hs_alloc_state(&heap->allocs[i]) == HS_STATE_FREE) {
			fc++;
			fb += heap->allocs[i].size;
		}
	for (size_t i = 0; i < ntypes; i++)
		if (types[i].type != HS_NO_TYPE) {
			tc += types[i].count;
			tb += types[i].bytes;
		}
	hs_jsonw_kuint(w, "free_count", fc);
	hs_jsonw_kuint(w, "free_bytes", fb);
	hs_jsonw_kuint(w, "leaked_count", m->total[HS_REACH_LEAK_ROOT].count +
		       m->total[HS_REACH_INDIRECT].count);
	hs_jsonw_kuint(w, "leaked_bytes", m->total[HS_REACH_LEAK_ROOT].bytes +
		       m->total[HS_REACH_INDIRECT].bytes);
	hs_jsonw_kuint(w, "leak_roots", m->total[HS_REACH_LEAK_ROOT].count);
	hs_jsonw_kuint(w, "typed_count", tc);
	hs_jsonw_kuint(w, "typed_bytes", tb);
	hs_jsonw_object_end(w);
	hs_cli_suspects_json(w, res);
	hs_jsonw_key(w, "roots");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < nroots && i < ROWS; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "name", roots[i].name);
		hs_jsonw_kstring(w, "kind", roots[i].kind);
		hs_jsonw_kuint(w, "retained", roots[i].retained);
		hs_jsonw_kuint(w, "count", roots[i].count);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "types");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < ntypes && i < ROWS; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "label", types[i].label);
		hs_jsonw_kuint(w, "count", types[i].count);
		hs_jsonw_kuint(w, "bytes", types[i].bytes);
		hs_jsonw_kuint(w, "retained", types[i].retained);
		hs_jsonw_kuint(w, "leaked_count", types[i].leaked_count);
		hs_jsonw_kuint(w, "leaked_bytes", types[i].leaked_bytes);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	/* leak roots by type (untyped: by size), as in `leaks` */
	hs_jsonw_key(w, "leaks");
	hs_jsonw_array_begin(w);
	if (!leak_groups(w, res))  /* a section left out is said, not silent */
		hs_log_warn(&snap->log, "report: the leak roots by type were left out: out of memory");
	hs_jsonw_array_end(w);
	/* the blocks of largest retained size */
	hs_jsonw_key(w, "blocks");
	hs_jsonw_array_begin(w);
	{
		const struct hs_domtree *t = r->tree;
		uint32_t best[50];
		size_t nb = 0;
		for (uint32_t v = r->base; v < t->n; v++) {
			if (t->idom[v] == HS_DOM_NONE)
				continue;
			size_t j;
			if (nb < 50)
				j = nb++;
			else if (hs_domtree_retained(t, v) <= hs_domtree_retained(t, best[49]))
				continue;
			else
				j = 49;
			while (j > 0 && hs_domtree_retained(t, best[j - 1]) < hs_domtree_retained(t, v)) {
				best[j] = best[j - 1];
				j--;
			}
			best[j] = v;
		}
		char name[512], tname[600];
		for (size_t i = 0; i < nb; i++) {
			uint32_t id = best[i] - r->base;
			const struct hs_alloc *a = &heap->allocs[id];
			hs_jsonw_object_begin(w);
			hs_jsonw_kaddr(w, "address", a->addr);
			hs_jsonw_kuint(w, "size", a->size);
			hs_jsonw_kstring(w, "type", hs_types_name(res->types, heap, id,
								  tname, sizeof(tname)));
			hs_jsonw_kstring(w, "reach", hs_cli_reach(res, id));
			hs_jsonw_kuint(w, "retained", hs_domtree_retained(t, best[i]));
			hs_cli_node_name(res, t->idom[best[i]], name, sizeof(name));
			hs_jsonw_kstring(w, "held_by", name);
			hs_jsonw_object_end(w);
		}
	}
	hs_jsonw_array_end(w);
	struct hs_dwarf *dw;
	struct hs_frag *frag;
	hs_snapshot_dwarf(snap, &dw);
	struct hs_error *ferr = hs_frag_compute(snap->core, dw, heap, &frag);
	if (!ferr) {
		hs_jsonw_key(w, "frag");
		hs_frag_json(w, frag, heap);
		hs_frag_destroy(frag);
	}
	hs_error_destroy(ferr);  /* no frag section (e.g. jemalloc heaps) */
	hs_jsonw_key(w, "tree");
	hs_jsonw_object_begin(w);
	hs_jsonw_key(w, "labels");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < st->nlabels; i++)
		hs_jsonw_string(w, st->labels[i]);
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "frames");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < st->nframes; i++) {
		const struct hs_stack_frame *f = &st->frames[i];
		hs_jsonw_array_begin(w);
		hs_jsonw_uint(w, f->label);
		hs_jsonw_int(w, f->parent == UINT32_MAX ? -1 : (int64_t)f->parent);
		hs_jsonw_uint(w, f->bytes);
		hs_jsonw_array_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_object_end(w);
	hs_cli_json_warnings(w, &snap->log);
	hs_jsonw_object_end(w);
}

int hs_cmd_report(struct hs_cli *cli, struct hs_snapshot *snap)
{
	if (!cli->out)
		return hs_cli_usage(cli, "report needs -o OUT.html");
	int bad = hs_cli_output_ok(cli, cli->out);
	if (bad)
		return bad;
	struct hs_results res_;
	const struct hs_results *res = &res_;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_ORDER | HS_WANT_TYPES,
							 &res_);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res->retain;
	const struct hs_types *types = res->types;
	struct hs_stacks *st = NULL;
	struct hs_type_row *trows = NULL;
	struct hs_root_row *rrows = NULL;
	size_t ntrows = 0, nrrows = 0;
	struct hs_error *e;
	if ((e = hs_stacks_build(res->heap, res->mark, res->roots, r, types, &st)) ||
	    (e = hs_type_rows(res->heap, res->mark, r, types, &trows, &ntrows)) ||
	    (e = hs_root_rows(r, res->roots, &rrows, &nrrows)))
		goto out;
	struct data_arg da = {snap, res, st, trows, ntrows, rrows, nrrows};
	e = hs_html_page_write(hs_report_html, cli->out, data, &da);
out:
	hs_stacks_destroy(st);
	hs_type_rows_free(trows, ntrows);
	free(rrows);
	if (e) {
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	if (cli->format == HS_FORMAT_TEXT && !hs_outfile_is_stdout(cli->out))
		printf("wrote %s\n", cli->out);
	return HS_EXIT_OK;
}
