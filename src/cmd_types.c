/* heapsift types: what the heap is made of. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/summary.h"
#include "src/cli_retain.h"

int hs_cmd_types(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_ORDER, &res);
	const struct hs_types *types;
	/* types is the one command for which types are required */
	if (err || (err = hs_snapshot_types(snap, &types)))
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res.retain;
	struct hs_type_row *rows;
	size_t m;
	struct hs_error *e = hs_type_rows(res.heap, res.mark, r, types, &rows, &m);
	if (e) {
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	uint64_t typed_count = 0, typed_bytes = 0;
	for (size_t i = 0; i < m; i++)
		if (rows[i].type != HS_NO_TYPE) {
			typed_count += rows[i].count;
			typed_bytes += rows[i].bytes;
		}
	size_t limit = cli->top_n_set ? cli->top_n : m;
	char b1[32], b2[32], b3[32];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "typed_count", typed_count);
		hs_jsonw_kuint(&w, "typed_bytes", typed_bytes);
		hs_jsonw_kuint(&w, "used_count", r->used_count);
		hs_jsonw_kuint(&w, "used_bytes", r->used_bytes);
		hs_jsonw_key(&w, "sources");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "vtable", types->from_vtable);
		hs_jsonw_kuint(&w, "rtti", types->from_rtti);
		hs_jsonw_kuint(&w, "dwarf", types->from_dwarf);
		hs_jsonw_kuint(&w, "python", types->from_python);
		hs_jsonw_object_end(&w);
		hs_jsonw_kuint(&w, "conflicts", types->conflicts);
		hs_jsonw_key(&w, "inferred");
		hs_jsonw_object_begin(&w);
		hs_jsonw_kuint(&w, "looked_at", types->infer_candidates);
		hs_jsonw_kuint(&w, "typed", types->inferred_sure);
		hs_jsonw_kuint(&w, "guessed", types->inferred_guess);
		hs_jsonw_object_end(&w);
		hs_jsonw_key(&w, "types");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < m && i < limit; i++) {
			const struct hs_type_row *x = &rows[i];
			hs_jsonw_object_begin(&w);
			if (x->type != HS_NO_TYPE) {
				char name[600];
				snprintf(name, sizeof(name), "%s%s", types->reg->v[x->type]->name,
					 x->guessed ? "?" : "");
				hs_jsonw_kstring(&w, "type", name);
				hs_jsonw_kuint(&w, "type_size", types->reg->v[x->type]->size);
				hs_jsonw_kbool(&w, "arrays", x->arrays);
			} else {
				hs_jsonw_key(&w, "type");
				hs_jsonw_null(&w);
				hs_jsonw_kuint(&w, "block_size", x->size);
			}
			hs_jsonw_kstring(&w, "label", x->label);
			hs_jsonw_kuint(&w, "count", x->count);
			hs_jsonw_kuint(&w, "bytes", x->bytes);
			hs_jsonw_kuint(&w, "retained", x->retained);
			hs_jsonw_kuint(&w, "leaked_count", x->leaked_count);
			hs_jsonw_kuint(&w, "leaked_bytes", x->leaked_bytes);
			hs_jsonw_object_end(&w);
		}
		hs_jsonw_array_end(&w);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		printf("TYPES: %" PRIu64 " of %" PRIu64 " blocks typed (%s of %s): %" PRIu64
		       " by vtable, %" PRIu64 " by RTTI, %" PRIu64 " through DWARF",
		       typed_count, r->used_count, hs_fmt_size(b1, typed_bytes),
		       hs_fmt_size(b2, r->used_bytes), types->from_vtable,
		       types->from_rtti, types->from_dwarf);
		if (types->from_python)
			printf(", %" PRIu64 " Python objects and their parts",
			       types->from_python);
		printf("\n\n");
		if (types->inferred_sure || types->inferred_guess)
			printf("(of the DWARF ones, %" PRIu64 " leaked blocks by their contents, and %"
			       PRIu64 " guessed so, marked \"?\")\n\n",
			       types->inferred_sure, types->inferred_guess);
		printf("%11s %9s %11s %9s %11s  %s\n", "RETAINED", "COUNT", "BYTES",
		       "LEAKED", "LEAKED B", "TYPE");
		for (size_t i = 0; i < m && i < limit; i++) {
			const struct hs_type_row *x = &rows[i];
			printf("%11s %9" PRIu64 " %11s %9" PRIu64 " %11s  %s\n",
			       hs_fmt_size(b1, x->retained), x->count,
			       hs_fmt_size(b2, x->bytes), x->leaked_count,
			       hs_fmt_size(b3, x->leaked_bytes), x->label);
		}
		if (limit < m)
			printf("(%zu more rows; -n N shows more)\n", m - limit);
	}
	hs_type_rows_free(rows, m);
	return HS_EXIT_OK;
}
