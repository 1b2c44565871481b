/* heapsift show: one allocation, who points to it, what it points to. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/cli_retain.h"

enum { MAX_REFS = 1000 };

struct ref {
	bool from_root;
	const struct hs_root *root;
	uint32_t id;            /* source or target allocation */
	uint64_t where;         /* address of the pointer word */
	uint64_t value;         /* the pointer */
};

struct refs {
	struct ref v[MAX_REFS];
	size_t n;
	uint64_t more;
};

static void add_ref(struct refs *r, struct ref x)
{
	if (r->n < MAX_REFS)
		r->v[r->n++] = x;
	else
		r->more++;
}

static bool root_ref(const struct hs_root *root, uint64_t where,
		     uint64_t value, void *arg)
{
	add_ref(arg, (struct ref){.from_root = true, .root = root,
				  .where = where, .value = value});
	return true;
}

/* Words of allocation src that point into target (or, with target ==
 * HS_NO_ALLOC, into any program allocation). */
static void scan_words(const struct hs_core *core, const struct hs_heap *heap,
		       const struct hs_graph *g, uint32_t src, uint32_t target,
		       struct refs *out)
{
	const struct hs_alloc *a = &heap->allocs[src];
	struct hs_py_skip skip = hs_graph_skip(g, src);
	for (uint64_t off = 0; off + 8 <= a->size; off += 8) {
		uint64_t v;
		if (hs_py_skip_word(skip, off / 8, a->size / 8))
			continue;  /* not references (a GC head, rounding) */
		if (!hs_core_read_u64(core, a->addr + off, &v))
			break;
		bool interior;
		uint32_t t = hs_graph_target(g, v, &interior);
		if (t == HS_NO_ALLOC || t == src ||
		    (target != HS_NO_ALLOC && t != target))
			continue;
		add_ref(out, (struct ref){.id = target == HS_NO_ALLOC ? t : src,
					  .where = a->addr + off, .value = v});
	}
}

static const char *reach_of(const struct hs_mark *m, uint32_t id)
{
	return m ? hs_reach_names[m->reach[id]] : "unknown";
}

static const char *type_of(const struct hs_results *res, uint32_t id, char *buf,
			   size_t len)
{
	return hs_types_name(res->types, res->heap, id, buf, len);
}

static void hexdump(const struct hs_core *core, const struct hs_alloc *a)
{
	uint64_t n = a->size < 4096 ? a->size : 4096;
	for (uint64_t off = 0; off < n; off += 16) {
		uint8_t b[16];
		size_t k = n - off < 16 ? (size_t)(n - off) : 16;
		if (!hs_core_read_quiet(core, a->addr + off, b, k)) {
			printf("  %#" PRIx64 ": (not in the core)\n", a->addr + off);
			return;
		}
		printf("  +%#06" PRIx64 " ", off);
		for (size_t i = 0; i < 16; i++) {
			if (i < k)
				printf(" %02x", b[i]);
			else
				printf("   ");
		}
		printf("  ");
		for (size_t i = 0; i < k; i++)
			putchar(b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '.');
		putchar('\n');
	}
	if (n < a->size)
		printf("  ... %" PRIu64 " more bytes\n", a->size - n);
}

int hs_cmd_show(struct hs_cli *cli, struct hs_snapshot *snap)
{
	const struct hs_heap *heap;
	const struct hs_error *err = hs_snapshot_heap(snap, &heap);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_alloc *a = hs_heap_find(heap, cli->addr);
	if (!a) {
		fprintf(stderr, "heapsift: %#" PRIx64 " is not inside any heap block\n",
			cli->addr);
		return HS_EXIT_ANALYSIS;
	}
	uint32_t id = (uint32_t)(a - heap->allocs);
	/* without the mark, the block is shown alone: no reach, no
	 * references, no types (res then holds the heap only) */
	struct hs_results res;
	const struct hs_error *merr = hs_snapshot_results(snap, HS_WANT_MARK | HS_WANT_TYPES,
							  &res);
	const struct hs_mark *mark = res.mark;
	const struct hs_graph *g = res.graph;
	const struct hs_roots *roots = res.roots;
	char tname[600];
	struct refs *in = hs_calloc(1, sizeof(*in)), *out = hs_calloc(1, sizeof(*out));
	if (!in || !out) {
		free(in);
		free(out);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	const struct hs_leak_root *lr = NULL;
	if (g && hs_alloc_in_graph(a)) {
		hs_roots_scan_for(snap->core, roots, g, id, root_ref, in);
		for (uint32_t v = 0; v < g->n; v++) {
			struct hs_edges it = hs_graph_edges(g, v);
			uint32_t e;
			while (hs_edges_next(&it, &e))
				if (HS_EDGE_ID(e) == id)
					scan_words(snap->core, heap, g, v, id, in);
		}
		scan_words(snap->core, heap, g, id, HS_NO_ALLOC, out);
		for (size_t i = 0; i < mark->nleak_roots; i++)
			if (mark->leak_roots[i].id == id)
				lr = &mark->leak_roots[i];
	}
	const char *state = hs_alloc_state(a) == HS_STATE_USED ? "used" : "free";
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kaddr(&w, "address", a->addr);
		hs_jsonw_kuint(&w, "size", a->size);
		hs_jsonw_kstring(&w, "state", state);
		hs_jsonw_kstring(&w, "where", hs_alloc_where(heap, a));
		if (hs_alloc_place(heap, a)->chunk_before) {
			hs_jsonw_kaddr(&w, "chunk", hs_alloc_chunk(heap, a));
			hs_jsonw_kuint(&w, "chunk_size", hs_alloc_chunk_size(heap, a));
		}
		if (hs_heap_arena(heap, id) != HS_ARENA_NONE)
			hs_jsonw_kuint(&w, "arena", hs_heap_arena(heap, id));
		if (hs_alloc_state(a) == HS_STATE_USED) {
			hs_jsonw_kstring(&w, "reach", reach_of(mark, id));
			if (mark && hs_mark_stale_ref(mark, id))
				hs_jsonw_kbool(&w, "stale_ref", true);
			if (mark && hs_mark_via(mark, id))
				hs_jsonw_kstring(&w, "via", hs_rule_names[hs_mark_via(mark, id)]);
			hs_jsonw_kstring(&w, "type", type_of(&res, id, tname, sizeof(tname)));
			if (hs_types_inferred(res.types, id))
				hs_jsonw_kbool(&w, "type_inferred", true);
		}
		if (lr) {
			hs_jsonw_kuint(&w, "held_count", lr->held_count);
			hs_jsonw_kuint(&w, "held_bytes", lr->held_bytes);
		}
		hs_jsonw_key(&w, "pointed_by");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < in->n; i++) {
			const struct ref *r = &in->v[i];
			hs_jsonw_object_begin(&w);
			if (r->from_root) {
				hs_jsonw_kstring(&w, "root", r->root->name);
				hs_jsonw_kstring(&w, "kind", hs_root_kind_names[r->root->kind]);
				if (r->root->stale)
					hs_jsonw_kbool(&w, "stale", true);
				if (!hs_root_is_value(r->root))
					hs_jsonw_kaddr(&w, "at", r->where);
			} else {
				const struct hs_alloc *s = &heap->allocs[r->id];
				char *field = hs_cli_field(&res, r->id, r->where - s->addr);
				hs_jsonw_kaddr(&w, "allocation", s->addr);
				hs_jsonw_kuint(&w, "offset", r->where - s->addr);
				hs_jsonw_kstring(&w, "field", field);
				hs_jsonw_kstring(&w, "reach", reach_of(mark, r->id));
				free(field);
			}
			hs_jsonw_kuint(&w, "target_offset", r->value - a->addr);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_key(&w, "points_to");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < out->n; i++) {
			const struct ref *r = &out->v[i];
			const struct hs_alloc *t = &heap->allocs[r->id];
			char *field = hs_cli_field(&res, id, r->where - a->addr);
			hs_jsonw_object_begin(&w);
			hs_jsonw_kuint(&w, "offset", r->where - a->addr);
			hs_jsonw_kstring(&w, "field", field);
			free(field);
			hs_jsonw_kaddr(&w, "allocation", t->addr);
			hs_jsonw_kuint(&w, "target_offset", r->value - t->addr);
			hs_jsonw_kuint(&w, "size", t->size);
			hs_jsonw_kstring(&w, "type", type_of(&res, r->id, tname, sizeof(tname)));
			hs_jsonw_kstring(&w, "reach", reach_of(mark, r->id));
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		if (in->more || out->more)
			hs_jsonw_kuint(&w, "references_omitted", in->more + out->more);
		if (merr)
			hs_jsonw_kstring(&w, "mark_error", merr->message);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		char b[32];
		printf("%#" PRIx64 ": %s, %" PRIu64 " bytes (%s)", (uint64_t)a->addr, state,
		       (uint64_t)a->size, hs_alloc_where(heap, a));
		if (hs_alloc_place(heap, a)->chunk_before)
			printf(", chunk %#" PRIx64 " of %" PRIu64 " bytes",
			       hs_alloc_chunk(heap, a), hs_alloc_chunk_size(heap, a));
		if (hs_heap_arena(heap, id) != HS_ARENA_NONE)
			printf(", arena %u", (unsigned)hs_heap_arena(heap, id));
		printf("\n");
		if (cli->addr != a->addr)
			printf("(%#" PRIx64 " is %" PRIu64 " bytes into it)\n", cli->addr,
			       cli->addr - a->addr);
		if (hs_alloc_state(a) == HS_STATE_USED) {
			const char *type = type_of(&res, id, tname, sizeof(tname));
			printf("class: %s\ntype: %s\n", reach_of(mark, id),
			       type ? type : "unknown");
			if (mark && hs_mark_via(mark, id))
				printf("via: reachable only through a pointer past a header that the %s rule accepts\n",
				       hs_rule_names[hs_mark_via(mark, id)]);
			if (mark && hs_mark_stale_ref(mark, id))
				printf("stale: a word the live rule rejects points to it (a dead register, a red zone or a returned call's python frame, marked below); --conservative-roots counts such words\n");
		}
		if (lr)
			printf("holds indirectly: %u blocks, %s\n", lr->held_count,
			       hs_fmt_size(b, lr->held_bytes));
		if (merr)
			printf("(no reachability: %s)\n", merr->message);
		if (hs_alloc_in_graph(a) && g) {
			printf("pointed to by:%s\n", in->n ? "" : " nothing");
			for (size_t i = 0; i < in->n; i++) {
				const struct ref *r = &in->v[i];
				const char *how = r->value == a->addr ? "start" : "interior";
				const char *mark_ = r->from_root && r->root->stale ?
					" [stale, not a root]" : "";
				if (r->from_root && hs_root_is_value(r->root))
					printf("  %s  -> %s +%#" PRIx64 "%s\n", r->root->name,
					       how, r->value - a->addr, mark_);
				else if (r->from_root)
					printf("  %s (at %#" PRIx64 ")  -> %s +%#" PRIx64 "%s\n",
					       r->root->name, r->where, how,
					       r->value - a->addr, mark_);
				else {
					const struct hs_alloc *s = &heap->allocs[r->id];
					char *field = hs_cli_field(&res, r->id, r->where - s->addr);
					printf("  %#" PRIx64 " +%#" PRIx64 "%s%s (%" PRIu64 " bytes, %s)  -> %s +%#" PRIx64 "\n",
					       (uint64_t)s->addr, r->where - s->addr, field ? " " : "",
					       field ? field : "", (uint64_t)s->size,
					       reach_of(mark, r->id), how, r->value - a->addr);
					free(field);
				}
			}
			printf("points to:%s\n", out->n ? "" : " nothing");
			for (size_t i = 0; i < out->n; i++) {
				const struct ref *r = &out->v[i];
				const struct hs_alloc *t = &heap->allocs[r->id];
				char *field = hs_cli_field(&res, id, r->where - a->addr);
				const char *type = type_of(&res, r->id, tname, sizeof(tname));
				printf("  +%#" PRIx64 "%s%s  -> %#" PRIx64 " +%#" PRIx64 " (%" PRIu64 " bytes, %s%s%s)\n",
				       r->where - a->addr, field ? " " : "", field ? field : "",
				       (uint64_t)t->addr, r->value - t->addr, (uint64_t)t->size,
				       type ? type : "", type ? ", " : "", reach_of(mark, r->id));
				free(field);
			}
			if (in->more || out->more)
				printf("  (%" PRIu64 " more references not shown)\n",
				       in->more + out->more);
		}
		if (cli->show_bytes) {
			printf("bytes:\n");
			hexdump(snap->core, a);
		}
	}
	free(in);
	free(out);
	return HS_EXIT_OK;
}
