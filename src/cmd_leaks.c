/* heapsift leaks: is it a leak, and how much? */
#include <inttypes.h>
#include <stdlib.h>

#include "src/alloc.h"
#include "src/sort.h"
#include "src/cli_retain.h"

struct group {
	uint32_t type;          /* registry index, HS_NO_TYPE: grouped by size */
	uint64_t size;          /* block size (for typed groups: of the first) */
	bool mixed;             /* typed group with blocks of several sizes */
	size_t first, count;    /* into the sorted leak-root index */
	uint64_t bytes, held_count, held_bytes;
};

struct sort_ctx {
	const struct hs_heap *heap;
	const struct hs_mark *mark;
	const struct hs_types *types;
};

/* The type, with GUESS_BIT for an inferred guess ("T?"): its own group */
#define GUESS_BIT 0x80000000u
static uint32_t type_idx(const struct sort_ctx *c, uint32_t id)
{
	uint32_t t = c->types ? hs_types_index(c->types, id) : HS_NO_TYPE;
	return t != HS_NO_TYPE && hs_types_guessed(c->types, id) ? t | GUESS_BIT : t;
}

static const char *group_name(const struct hs_types *types, uint32_t type,
			      char *buf, size_t len)
{
	if (type == HS_NO_TYPE)
		return NULL;
	snprintf(buf, len, "%s%s", types->reg->v[type & ~GUESS_BIT]->name,
		 type & GUESS_BIT ? "?" : "");
	return buf;
}

/* typed blocks by type, the rest by size */
static int cmp_by_size(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct hs_leak_root *x = &c->mark->leak_roots[*(const size_t *)a];
	const struct hs_leak_root *y = &c->mark->leak_roots[*(const size_t *)b];
	uint32_t tx = type_idx(c, x->id), ty = type_idx(c, y->id);
	if (tx != ty)
		return tx < ty ? -1 : 1;
	uint64_t sx = c->heap->allocs[x->id].size, sy = c->heap->allocs[y->id].size;
	if (tx == HS_NO_TYPE && sx != sy)
		return sx > sy ? -1 : 1;
	if (x->held_bytes != y->held_bytes)
		return x->held_bytes > y->held_bytes ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	uint64_t tx = x->bytes + x->held_bytes, ty = y->bytes + y->held_bytes;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static void json_total(struct hs_jsonw *w, const char *key,
		       const struct hs_class_total *t)
{
	hs_jsonw_key(w, key);
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "count", t->count);
	hs_jsonw_kuint(w, "bytes", t->bytes);
	hs_jsonw_object_end(w);
}

/* CPython's objects held from outside the heap, by type: most first. */
struct outside_row {
	uint32_t type;          /* registry index, HS_NO_TYPE */
	uint64_t count, extra;  /* objects, references beyond those found */
};

static int cmp_outside(const void *a, const void *b)
{
	const struct outside_row *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

static struct outside_row *outside_rows(const struct hs_types *types,
					const struct hs_pyrefs *r, size_t *n)
{
	struct outside_row *v = hs_calloc(r->n, sizeof(*v));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		uint32_t t = types ? hs_types_index(types, r->v[i].id) : HS_NO_TYPE;
		size_t j = 0;
		while (j < k && v[j].type != t)
			j++;
		if (j == k)
			v[k++] = (struct outside_row){.type = t};
		v[j].count++;
		v[j].extra += r->v[i].refcnt - r->v[i].found;
	}
	hs_sort(v, k, sizeof(*v), cmp_outside);
	*n = k;
	return v;
}

static const char *outside_name(const struct hs_types *types, uint32_t t)
{
	return t != HS_NO_TYPE ? types->reg->v[t]->name : "(untyped)";
}

enum { OUTSIDE_LIST_MAX = 1000 };

static void outside_json(struct hs_jsonw *w, const struct hs_heap *heap,
			 const struct hs_types *types, const struct hs_pyrefs *r,
			 const struct outside_row *rows, size_t nrows)
{
	hs_jsonw_key(w, "python_outside");
	if (!r) {
		hs_jsonw_null(w);
		return;
	}
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "checked", r->checked);
	hs_jsonw_kuint(w, "count", r->n);
	hs_jsonw_key(w, "by_type");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < nrows; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "type", outside_name(types, rows[i].type));
		hs_jsonw_kuint(w, "count", rows[i].count);
		hs_jsonw_kuint(w, "extra_refs", rows[i].extra);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "objects");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < r->n && i < OUTSIDE_LIST_MAX; i++) {
		const struct hs_py_outside *o = &r->v[i];
		uint32_t t = types ? hs_types_index(types, o->id) : HS_NO_TYPE;
		hs_jsonw_object_begin(w);
		hs_jsonw_kaddr(w, "address", heap->allocs[o->id].addr);
		hs_jsonw_kstring(w, "type", outside_name(types, t));
		hs_jsonw_kuint(w, "refcnt", o->refcnt);
		hs_jsonw_kuint(w, "found", o->found);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_object_end(w);
}

static void outside_text(const struct hs_cli *cli, const struct hs_heap *heap,
			 const struct hs_types *types, const struct hs_pyrefs *r,
			 const struct outside_row *rows, size_t nrows)
{
	if (!r || !r->n)
		return;
	printf("\nPython objects held from outside the heap: %zu of %" PRIu64
	       " have a reference count above the references found to them in the heap, the stacks, the registers and the globals (a reference C code kept)\n",
	       r->n, r->checked);
	printf("%-32s %8s %12s\n", "TYPE", "OBJECTS", "EXTRA REFS");
	for (size_t i = 0; i < nrows; i++)
		printf("%-32s %8" PRIu64 " %12" PRIu64 "\n",
		       outside_name(types, rows[i].type), rows[i].count, rows[i].extra);
	if (!cli->list) {
		printf("(--list shows the objects)\n");
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct hs_py_outside *o = &r->v[i];
		uint32_t t = types ? hs_types_index(types, o->id) : HS_NO_TYPE;
		printf("%12s %#" PRIx64 " %s: refcount %" PRIu64 ", %u references found\n",
		       "", (uint64_t)heap->allocs[o->id].addr,
		       outside_name(types, t), o->refcnt, o->found);
	}
}

static bool stream_leaked(const struct hs_mark *mark, const struct hs_file *f)
{
	return f->kind == HS_FILE_HEAP && (mark->reach[f->id] == HS_REACH_LEAK_ROOT ||
					   mark->reach[f->id] == HS_REACH_INDIRECT);
}

/* Leaked stdio streams: each is a descriptor the program can no longer
 * close. */
static void files_json(struct hs_jsonw *w, const struct hs_mark *mark,
		       const struct hs_files *files)
{
	hs_jsonw_key(w, "leaked_files");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; files && i < files->n; i++) {
		const struct hs_file *f = &files->v[i];
		if (!stream_leaked(mark, f))
			continue;
		hs_jsonw_object_begin(w);
		hs_jsonw_kaddr(w, "address", f->addr);
		hs_jsonw_key(w, "fd");
		if (f->fd == HS_FILE_NO_FD)
			hs_jsonw_null(w);
		else
			hs_jsonw_int(w, f->fd);
		hs_jsonw_kstring(w, "mode", hs_file_mode(f->flags));
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
}

static void files_text(const struct hs_mark *mark, const struct hs_files *files)
{
	size_t n = 0;
	for (size_t i = 0; files && i < files->n; i++)
		n += stream_leaked(mark, &files->v[i]);
	if (!n)
		return;
	printf("\nLeaked FILE streams: %zu, each a descriptor the program cannot close any more (fds", n);
	size_t shown = 0;
	for (size_t i = 0; i < files->n && shown < 20; i++) {
		const struct hs_file *f = &files->v[i];
		if (!stream_leaked(mark, f))
			continue;
		if (f->fd == HS_FILE_NO_FD)
			printf("%s?", shown ? ", " : " ");
		else
			printf("%s%d", shown ? ", " : " ", f->fd);
		shown++;
	}
	printf("%s); heapsift files CORE lists them\n", n > shown ? ", ..." : "");
}

int hs_cmd_leaks(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_MARK, &res);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_mark *mark = res.mark;
	const struct hs_heap *heap = res.heap;
	const struct hs_roots *roots = res.roots;
	/* without types, leaks groups by size only; without the dominators,
	 * it has no suspects.  The types first: the leaked blocks' inference
	 * then runs before the dominators' results take their memory */
	const struct hs_error *terr = hs_snapshot_types(snap, &res.types);
	if (terr) {
		res.types = NULL;
		if (terr->code == HS_ERR_NOMEM)
			hs_log_warn(&snap->log, "types left out (blocks grouped by size): %s",
				    terr->message);
	}
	const struct hs_files *files;
	if (hs_snapshot_files(snap, &files))
		files = NULL;
	const struct hs_pyrefs *pyrefs;
	if (hs_snapshot_pyrefs(snap, &pyrefs))
		pyrefs = NULL;
	/* nothing below reads the modules' files: their debug info goes
	 * before the dominators come */
	hs_snapshot_release_debug(snap);
	const struct hs_error *rerr = hs_snapshot_retain(snap, &res.retain);
	if (rerr) {
		res.retain = NULL;
		hs_log_warn(&snap->log, "no suspects: %s", rerr->message);
	}
	const struct hs_types *types = res.types;
	struct outside_row *outside = NULL;
	size_t noutside = 0;
	if (pyrefs && pyrefs->n && !(outside = outside_rows(types, pyrefs, &noutside)))
		return hs_cli_fail(cli, &hs_error_nomem);

	size_t n = mark->nleak_roots;
	size_t *order = hs_malloc((n ? n : 1) * sizeof(*order));
	struct group *groups = hs_malloc((n ? n : 1) * sizeof(*groups));
	if (!order || !groups) {
		free(order);
		free(groups);
		free(outside);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	struct sort_ctx ctx = {heap, mark, types};
	hs_sort_r(order, n, sizeof(*order), cmp_by_size, &ctx);
	size_t ngroups = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hs_leak_root *lr = &mark->leak_roots[order[i]];
		uint64_t size = heap->allocs[lr->id].size;
		uint32_t type = type_idx(&ctx, lr->id);
		struct group *last = ngroups ? &groups[ngroups - 1] : NULL;
		if (!last || last->type != type ||
		    (type == HS_NO_TYPE && last->size != size))
			groups[ngroups++] = (struct group){.type = type, .size = size,
							   .first = i};
		struct group *g = &groups[ngroups - 1];
		if (g->size != size)
			g->mixed = true;
		g->count++;
		g->bytes += size;
		g->held_count += lr->held_count;
		g->held_bytes += lr->held_bytes;
	}
	hs_sort(groups, ngroups, sizeof(*groups), cmp_group);

	const struct hs_class_total *t = mark->total;
	struct hs_class_total leaked = {
		t[HS_REACH_LEAK_ROOT].count + t[HS_REACH_INDIRECT].count,
		t[HS_REACH_LEAK_ROOT].bytes + t[HS_REACH_INDIRECT].bytes,
	};
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_key(&w, "summary");
		hs_jsonw_object_begin(&w);
		json_total(&w, "reachable", &t[HS_REACH_REACHABLE]);
		json_total(&w, "possible", &t[HS_REACH_POSSIBLE]);
		json_total(&w, "leak_root", &t[HS_REACH_LEAK_ROOT]);
		json_total(&w, "indirect", &t[HS_REACH_INDIRECT]);
		json_total(&w, "leaked", &leaked);
		json_total(&w, "stale_ref", &mark->stale);
		hs_cli_json_learned(&w, &res);
		hs_jsonw_key(&w, "via");
		hs_jsonw_object_begin(&w);
		for (int k = 1; k < HS_RULE_COUNT; k++)
			json_total(&w, hs_rule_names[k], &mark->via_total[k]);
		hs_jsonw_object_end(&w);
		hs_jsonw_object_end(&w);
		if (!rerr)
			hs_cli_suspects_json(&w, &res);
		hs_jsonw_key(&w, "groups");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < ngroups; i++) {
			const struct group *g = &groups[i];
			hs_jsonw_object_begin(&w);
			char gname[600];
			hs_jsonw_kstring(&w, "type", group_name(types, g->type, gname,
								sizeof(gname)));
			if (!g->mixed)
				hs_jsonw_kuint(&w, "size", g->size);
			hs_jsonw_kuint(&w, "count", g->count);
			hs_jsonw_kuint(&w, "bytes", g->bytes);
			hs_jsonw_kuint(&w, "held_count", g->held_count);
			hs_jsonw_kuint(&w, "held_bytes", g->held_bytes);
			hs_jsonw_key(&w, "leak_roots");
			hs_jsonw_array_begin(&w);
			for (size_t k = g->first; k < g->first + g->count; k++) {
				const struct hs_leak_root *lr = &mark->leak_roots[order[k]];
				hs_jsonw_object_begin(&w);
				hs_jsonw_kaddr(&w, "address", heap->allocs[lr->id].addr);
				hs_jsonw_kuint(&w, "held_count", lr->held_count);
				hs_jsonw_kuint(&w, "held_bytes", lr->held_bytes);
				hs_jsonw_object_end(&w);
			}
			hs_jsonw_array_end(&w);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		outside_json(&w, heap, types, pyrefs, outside, noutside);
		files_json(&w, mark, files);
		hs_jsonw_key(&w, "roots");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "count", roots->n);
		hs_jsonw_kbool(&w, "stacks_unwound", roots->unwound);
		hs_jsonw_key(&w, "bytes");
		hs_jsonw_object_begin(&w);
		for (int k = 0; k < HS_ROOT_KIND_COUNT; k++)
			hs_jsonw_kuint(&w, hs_root_kind_names[k], roots->bytes[k]);
		hs_jsonw_object_end(&w);
		hs_jsonw_object_end(&w);
		hs_jsonw_kbool(&w, "partial", heap->partial);
		hs_jsonw_kuint(&w, "unaccounted_bytes", heap->unaccounted_bytes);
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		char b1[32], b2[32];
		uint64_t used = t[HS_REACH_REACHABLE].bytes + t[HS_REACH_POSSIBLE].bytes +
			leaked.bytes;
		hs_cli_partial_line(heap);
		if (leaked.count)
			printf("LEAKED: %" PRIu64 " blocks, %s (%.1f%% of used bytes): %" PRIu64
			       " leak roots holding %" PRIu64 " more blocks\n",
			       leaked.count, hs_fmt_size(b1, leaked.bytes),
			       used ? 100.0 * (double)leaked.bytes / (double)used : 0.0,
			       t[HS_REACH_LEAK_ROOT].count, t[HS_REACH_INDIRECT].count);
		else
			printf("No leaks: every used block is reachable from a root%s.\n",
			       t[HS_REACH_POSSIBLE].count ? " (some only through interior pointers)" : "");
		if (!rerr) {
			printf("\n");
			hs_cli_suspects_text(&res);
		}
		printf("\n%-10s %10s %12s\n", "CLASS", "BLOCKS", "BYTES");
		static const int order_cls[] = {HS_REACH_REACHABLE, HS_REACH_POSSIBLE,
						HS_REACH_LEAK_ROOT, HS_REACH_INDIRECT};
		for (size_t k = 0; k < 4; k++)
			printf("%-10s %10" PRIu64 " %12s\n", hs_reach_names[order_cls[k]],
			       t[order_cls[k]].count, hs_fmt_size(b1, t[order_cls[k]].bytes));
		printf("%-10s %10" PRIu64 " %12s\n", "leaked", leaked.count,
		       hs_fmt_size(b1, leaked.bytes));
		hs_cli_learned_text(&res);
		for (int k = 1; k < HS_RULE_COUNT; k++)
			if (mark->via_total[k].count)
				printf("(reachable: %" PRIu64 " blocks, %s, only through pointers past a header that the %s rule accepts)\n",
				       mark->via_total[k].count,
				       hs_fmt_size(b1, mark->via_total[k].bytes),
				       hs_rule_names[k]);
		if (mark->stale.count)
			printf("(%" PRIu64 " of these blocks, %s, are pointed to by a word the live rule rejects: a dead register, a red zone or a returned call's python frame; `show` names it, --conservative-roots counts it)\n",
			       mark->stale.count, hs_fmt_size(b1, mark->stale.bytes));
		if (ngroups) {
			printf("\nLeak roots by type (by size when untyped), biggest total first:\n");
			printf("%-32s %8s %12s   %s\n", "TYPE OR SIZE", "ROOTS", "BYTES",
			       "HOLDING INDIRECTLY");
			for (size_t i = 0; i < ngroups; i++) {
				const struct group *g = &groups[i];
				char label[600];
				if (g->type != HS_NO_TYPE)
					group_name(types, g->type, label, sizeof(label));
				else
					snprintf(label, sizeof(label), "%" PRIu64 " bytes", g->size);
				printf("%-32s %8zu %12s   %" PRIu64 " blocks, %s\n",
				       label, g->count, hs_fmt_size(b1, g->bytes),
				       g->held_count, hs_fmt_size(b2, g->held_bytes));
				if (!cli->list)
					continue;
				for (size_t k = g->first; k < g->first + g->count; k++) {
					const struct hs_leak_root *lr = &mark->leak_roots[order[k]];
					printf("%12s %#" PRIx64 " holds %u blocks, %s\n", "",
					       (uint64_t)heap->allocs[lr->id].addr,
					       lr->held_count, hs_fmt_size(b1, lr->held_bytes));
				}
			}
			if (!cli->list)
				printf("(--list shows the addresses; heapsift show CORE ADDR explains one)\n");
		}
		files_text(mark, files);
		outside_text(cli, heap, types, pyrefs, outside, noutside);
	}
	free(outside);
	free(order);
	free(groups);
	return HS_EXIT_OK;
}
