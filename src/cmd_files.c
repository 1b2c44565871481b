/* heapsift files: every stdio stream (FILE), its descriptor, mode and
 * buffer, whether the program still holds it, and who. */
#include <inttypes.h>
#include <stdlib.h>

#include "src/cli_retain.h"

/* The stream's class: the mark's for a heap stream, else its kind. */
static const char *file_class(const struct hs_results *res, const struct hs_file *f)
{
	if (f->kind == HS_FILE_HEAP)
		return hs_cli_reach(res, f->id);
	return hs_file_kind_names[f->kind];
}

static bool file_leaked(const struct hs_results *res, const struct hs_file *f)
{
	return f->kind == HS_FILE_HEAP && res->mark &&
	       (res->mark->reach[f->id] == HS_REACH_LEAK_ROOT ||
		res->mark->reach[f->id] == HS_REACH_INDIRECT);
}

/* Its immediate dominator: what alone holds it; HS_DOM_NONE when
 * unknown (no dominators, or not a heap stream). */
static uint32_t holder(const struct hs_results *res, const struct hs_file *f)
{
	if (f->kind != HS_FILE_HEAP || !res->retain)
		return HS_DOM_NONE;
	return res->retain->tree->idom[hs_retain_node(res->retain, f->id)];
}

static void json_file(struct hs_jsonw *w, const struct hs_results *res,
		      const struct hs_file *f)
{
	hs_jsonw_object_begin(w);
	hs_jsonw_kaddr(w, "address", f->addr);
	hs_jsonw_kstring(w, "kind", hs_file_kind_names[f->kind]);
	hs_jsonw_kstring(w, "name", f->name);
	hs_jsonw_key(w, "fd");
	if (f->fd == HS_FILE_NO_FD)
		hs_jsonw_null(w);
	else
		hs_jsonw_int(w, f->fd);
	hs_jsonw_kstring(w, "mode", hs_file_mode(f->flags));
	hs_jsonw_kuint(w, "flags", f->flags);
	hs_jsonw_kstring(w, "orientation", f->mode < 0 ? "byte" : f->mode > 0 ? "wide" : NULL);
	hs_jsonw_key(w, "buffer");
	if (!f->buf_base) {
		hs_jsonw_null(w);
	} else {
		hs_jsonw_object_begin(w);
		hs_jsonw_kaddr(w, "address", f->buf_base);
		hs_jsonw_kuint(w, "size", f->buf_size);
		hs_jsonw_key(w, "block");
		if (f->buf_id == UINT32_MAX)
			hs_jsonw_null(w);
		else
			hs_jsonw_addr(w, res->heap->allocs[f->buf_id].addr);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_kbool(w, "bad_buffer", f->bad_buffer);
	hs_jsonw_kbool(w, "on_list", f->on_list);
	hs_jsonw_kstring(w, "class", file_class(res, f));
	hs_jsonw_kbool(w, "leaked", file_leaked(res, f));
	hs_jsonw_key(w, "held_by");
	uint32_t h = holder(res, f);
	if (h == HS_DOM_NONE) {
		hs_jsonw_null(w);
	} else {
		hs_jsonw_object_begin(w);
		hs_cli_json_node(w, res, h);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_object_end(w);
}

static void text_file(const struct hs_results *res, const struct hs_file *f)
{
	char addr[48], fd[16], buf[32], who[1024];
	if (f->name)
		snprintf(addr, sizeof(addr), "%s", f->name);
	else
		snprintf(addr, sizeof(addr), "%#" PRIx64, f->addr);
	if (f->fd == HS_FILE_NO_FD)
		snprintf(fd, sizeof(fd), "?");
	else
		snprintf(fd, sizeof(fd), "%d", f->fd);
	if (f->bad_buffer)
		snprintf(buf, sizeof(buf), "bad");
	else if (!f->buf_base)
		snprintf(buf, sizeof(buf), "-");
	else
		hs_fmt_size(buf, f->buf_size);
	uint32_t h = holder(res, f);
	if (f->kind == HS_FILE_STATIC)
		snprintf(who, sizeof(who), "libc (%#" PRIx64 ")", f->addr);
	else if (h == HS_DOM_NONE)
		snprintf(who, sizeof(who), "-");
	else
		hs_cli_node_name(res, h, who, sizeof(who));
	printf("%-16s %5s  %-4s %10s  %-10s %s%s\n", addr, fd, hs_file_mode(f->flags),
	       buf, file_class(res, f), who, f->on_list ? "" : "  (not on libc's list)");
}

int hs_cmd_files(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_MARK | HS_WANT_TYPES,
							 &res);
	const struct hs_files *files;
	if (err || (err = hs_snapshot_files(snap, &files)))
		return hs_cli_fail(cli, err);
	/* without the dominators, no holder is named */
	if (hs_snapshot_retain(snap, &res.retain))
		res.retain = NULL;
	const struct hs_core *core = snap->core;
	size_t nheap = 0, nstatic = 0, nleaked = 0, nreach = 0, nposs = 0;
	for (size_t i = 0; i < files->n; i++) {
		const struct hs_file *f = &files->v[i];
		nheap += f->kind == HS_FILE_HEAP;
		nstatic += f->kind == HS_FILE_STATIC;
		nleaked += file_leaked(&res, f);
		nreach += f->kind == HS_FILE_HEAP && res.mark->reach[f->id] == HS_REACH_REACHABLE;
		nposs += f->kind == HS_FILE_HEAP && res.mark->reach[f->id] == HS_REACH_POSSIBLE;
	}
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kbool(&w, "partial", res.heap->partial);
		hs_jsonw_kuint(&w, "count", files->n);
		hs_jsonw_kuint(&w, "heap", nheap);
		hs_jsonw_kuint(&w, "static", nstatic);
		hs_jsonw_kuint(&w, "reachable", nreach);
		hs_jsonw_kuint(&w, "possible", nposs);
		hs_jsonw_kuint(&w, "leaked", nleaked);
		hs_jsonw_kstring(&w, "layout", files->from_dwarf ? "dwarf" : "table");
		hs_jsonw_key(&w, "list");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kbool(&w, "found", files->list_found);
		hs_jsonw_kuint(&w, "length", files->list_len);
		hs_jsonw_kbool(&w, "loop", files->list_loop);
		hs_jsonw_kbool(&w, "bad_link", files->list_bad);
		hs_jsonw_object_end(&w);
		hs_jsonw_key(&w, "streams");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < files->n; i++)
			json_file(&w, &res, &files->v[i]);
		hs_jsonw_array_end(&w);
		hs_jsonw_key(&w, "descriptors");
		if (!core->has_fds) {
			hs_jsonw_null(&w);
		} else {
			hs_jsonw_array_begin(&w);
			for (size_t i = 0; i < core->nfds; i++) {
				hs_jsonw_object_begin(&w);
				hs_jsonw_kint(&w, "fd", core->fds[i].fd);
				hs_jsonw_kstring(&w, "path", core->fds[i].path);
				hs_jsonw_object_end(&w);
			}
			hs_jsonw_array_end(&w);
		}
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
		return HS_EXIT_OK;
	}
	hs_cli_partial_line(res.heap);
	printf("FILE STREAMS: %zu (%zu on the heap, %zu static): %zu reachable, %zu possible, %zu leaked%s\n",
	       files->n, nheap, nstatic, nreach, nposs, nleaked,
	       nleaked ? " (a leaked stream is a leaked descriptor)" : "");
	if (!files->list_found)
		printf("(libc's list of streams, _IO_list_all, was not found: streams found by type only)\n");
	else if (files->list_loop || files->list_bad)
		printf("(libc's list of streams is damaged after %zu streams: the rest were found by type; see warnings)\n",
		       files->list_len);
	if (files->n) {
		printf("\n%-16s %5s  %-4s %10s  %-10s %s\n", "STREAM", "FD", "MODE",
		       "BUFFER", "CLASS", "HELD BY");
		for (size_t i = 0; i < files->n; i++)
			text_file(&res, &files->v[i]);
	}
	/* a live snapshot's descriptor table (heapsift snapshot) */
	if (core->has_fds) {
		printf("\nOPEN DESCRIPTORS: %zu (at the snapshot)\n\n%5s  %s\n", core->nfds,
		       "FD", "TARGET");
		for (size_t i = 0; i < core->nfds; i++)
			printf("%5d  %s\n", core->fds[i].fd, core->fds[i].path);
	}
	return HS_EXIT_OK;
}
