/* heapsift list: every allocation, streamed. */
#include <inttypes.h>
#include <string.h>

#include "formats/jsonw.h"
#include "src/cli.h"

static bool selected(const struct hs_cli *cli, const struct hs_alloc *a)
{
	if (cli->state >= 0 && (int)hs_alloc_state(a) != cli->state)
		return false;
	return a->size >= cli->min_size;
}

static const char *reach_of(const struct hs_mark *m, const struct hs_heap *h,
			    const struct hs_alloc *a)
{
	if (!m || hs_alloc_state(a) != HS_STATE_USED)
		return NULL;
	return hs_reach_names[m->reach[a - h->allocs]];
}

int hs_cmd_list(struct hs_cli *cli, struct hs_snapshot *snap)
{
	const struct hs_heap *heap;
	const struct hs_error *err = hs_snapshot_heap(snap, &heap);
	if (err)
		return hs_cli_fail(cli, err);
	/* the leak class is a column of its own: without it (no roots, say)
	 * the list is still worth having */
	const struct hs_mark *mark = NULL;
	const struct hs_retain *retain = NULL;
	const struct hs_types *types = NULL;
	if (!cli->raw) {
		const struct hs_error *merr = hs_snapshot_mark(snap, &mark);
		if (merr)
			hs_log_warn(&snap->log, "no leak classes: %s", merr->message);
		else if ((merr = hs_snapshot_retain(snap, &retain)))
			hs_log_warn(&snap->log, "no retained sizes: %s", merr->message);
		const struct hs_error *terr = hs_snapshot_types(snap, &types);
		if (terr)
			hs_log_warn(&snap->log, "no types: %s", terr->message);
	}
	char tname[600];
	uint64_t n = 0, bytes = 0;
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, false);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kstring(&w, "allocator", heap->allocator);
		hs_jsonw_kbool(&w, "partial", heap->partial);
		hs_jsonw_kuint(&w, "unaccounted_bytes", heap->unaccounted_bytes);
		hs_jsonw_key(&w, "allocations");
		hs_jsonw_array_begin(&w);
		size_t run = 0;  /* hs_heap_arena_next's cursor */
		for (size_t i = 0; i < heap->nallocs; i++) {
			const struct hs_alloc *a = &heap->allocs[i];
			if (!selected(cli, a))
				continue;
			hs_jsonw_raw(&w, "\n");
			hs_jsonw_object_begin(&w);
			hs_jsonw_kaddr(&w, "address", a->addr);
			hs_jsonw_kuint(&w, "size", a->size);
			hs_jsonw_kstring(&w, "state",
					 hs_alloc_state(a) == HS_STATE_USED ? "used" : "free");
			hs_jsonw_kstring(&w, "where", hs_alloc_where(heap, a));
			if (hs_alloc_place(heap, a)->chunk_before) {
				hs_jsonw_kaddr(&w, "chunk", hs_alloc_chunk(heap, a));
				hs_jsonw_kuint(&w, "chunk_size", hs_alloc_chunk_size(heap, a));
			}
			uint32_t arena = hs_heap_arena_next(heap, &run, i);
			if (arena != HS_ARENA_NONE)
				hs_jsonw_kuint(&w, "arena", arena);
			const char *reach = reach_of(mark, heap, a);
			if (reach)
				hs_jsonw_kstring(&w, "reach", reach);
			if (mark && hs_mark_stale_ref(mark, (uint32_t)i))
				hs_jsonw_kbool(&w, "stale_ref", true);
			if (mark && hs_mark_via(mark, (uint32_t)i))
				hs_jsonw_kstring(&w, "via", hs_rule_names[hs_mark_via(mark, (uint32_t)i)]);
			if (retain && hs_alloc_state(a) == HS_STATE_USED)
				hs_jsonw_kuint(&w, "retained",
					       hs_domtree_retained(retain->tree,
								   hs_retain_node(retain, (uint32_t)i)));
			if (!cli->raw && hs_alloc_state(a) == HS_STATE_USED) {
				hs_jsonw_kstring(&w, "type", hs_types_name(types, heap, (uint32_t)i,
									   tname, sizeof(tname)));
				if (hs_types_inferred(types, (uint32_t)i))
					hs_jsonw_kbool(&w, "type_inferred", true);
			}
			hs_jsonw_object_end(&w);
			n++;
			bytes += a->size;
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_kuint(&w, "count", n);
		hs_jsonw_kuint(&w, "bytes", bytes);
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
		return HS_EXIT_OK;
	}
	struct hs_lines *out = hs_lines_new(stdout);
	if (!out)
		return hs_cli_fail(cli, &hs_error_nomem);
	struct hs_line line;
	printf("%-18s %12s %-5s %-9s %-5s %-10s %s\n", "ADDRESS", "SIZE", "STATE",
	       "WHERE", "ARENA", "CLASS", "TYPE");
	size_t run = 0;  /* hs_heap_arena_next's cursor */
	for (size_t i = 0; i < heap->nallocs; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		if (!selected(cli, a))
			continue;
		unsigned arena = hs_heap_arena_next(heap, &run, i);
		const char *reach = reach_of(mark, heap, a);
		char rbuf[24];
		if (reach && mark && hs_mark_stale_ref(mark, (uint32_t)i)) {
			/* only a dead register or red zone points to it */
			snprintf(rbuf, sizeof(rbuf), "%s*", reach);
			reach = rbuf;
		}
		const char *type = hs_alloc_state(a) == HS_STATE_USED ?
			hs_types_name(types, heap, (uint32_t)i, tname, sizeof(tname)) : NULL;
		/* "%#-18" PRIx64 " %12" PRIu64 " %-5s %-9s %-5s %-10s %s\n",
		 * without printf: millions of lines */
		struct hs_line *l = &line;
		hs_lines_begin(out, l);
		hs_line_hex(l, a->addr);
		hs_line_pad_left(l, 0, 18);
		hs_line_char(l, ' ');
		size_t f = l->len;
		hs_line_dec(l, a->size);
		hs_line_pad_right(l, f, 12);
		const char *fields[4] = {
			hs_alloc_state(a) == HS_STATE_USED ? "used" : "free",
			hs_alloc_where(heap, a), NULL, reach ? reach : "-",
		};
		static const unsigned widths[4] = {5, 9, 5, 10};
		for (int k = 0; k < 4; k++) {
			hs_line_char(l, ' ');
			f = l->len;
			if (k != 2)
				hs_line_str(l, fields[k]);
			else if (arena != HS_ARENA_NONE)
				hs_line_dec(l, arena);
			else
				hs_line_char(l, '-');
			hs_line_pad_left(l, f, widths[k]);
		}
		hs_line_char(l, ' ');
		hs_line_str(l, type ? type : "-");
		hs_line_char(l, '\n');
		hs_lines_end(out, l);
		n++;
		bytes += a->size;
	}
	hs_lines_free(out);
	char b[32];
	printf("%" PRIu64 " allocations, %s%s\n", n, hs_fmt_size(b, bytes),
	       heap->partial ? " (PARTIAL: the walk met damaged or missing metadata; see warnings)" : "");
	if (mark && mark->stale.count)
		printf("*: a word the live rule rejects (a dead register, a red zone or a returned call's python frame) points to it; heapsift show ADDR names it\n");
	return HS_EXIT_OK;
}
