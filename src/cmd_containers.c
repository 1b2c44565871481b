/* heapsift containers: the C++ containers the heap holds (libstdc++). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/containers.h"
#include "formats/jsonw.h"
#include "src/cli.h"

static void json_row(struct hs_jsonw *w, const struct hs_container_row *r)
{
	hs_jsonw_object_begin(w);
	char name[600];
	hs_cx_short_name(r->name, name, sizeof(name));
	hs_jsonw_kstring(w, "type", r->name);
	hs_jsonw_kstring(w, "name", name);
	hs_jsonw_kstring(w, "kind", hs_cx_kind_name(r->kind));
	hs_jsonw_kuint(w, "count", r->count);
	hs_jsonw_kuint(w, "elements", r->elements);
	hs_jsonw_kuint(w, "element_bytes", r->element_bytes);
	hs_jsonw_kuint(w, "unused_bytes", r->unused_bytes);
	hs_jsonw_kuint(w, "bucket_bytes", r->bucket_bytes);
	hs_jsonw_key(w, "histogram");
	hs_jsonw_array_begin(w);
	for (unsigned b = 0; b < HS_CX_BUCKETS; b++) {
		if (!r->hist[b])
			continue;
		uint64_t lo, hi;
		hs_cx_bucket_range(b, &lo, &hi);
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "min", lo);
		hs_jsonw_kuint(w, "max", hi);
		hs_jsonw_kuint(w, "count", r->hist[b]);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "small_buffer");
	hs_jsonw_array_begin(w);
	for (unsigned k = 0; k < HS_CX_NSBO; k++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "n", hs_cx_sbo_size(k));
		hs_jsonw_kuint(w, "count", r->sbo_count[k]);
		hs_jsonw_kuint(w, "bytes", r->sbo_bytes[k]);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_object_end(w);
}

static void text_row(const struct hs_container_row *r)
{
	char b1[32], b2[32], b3[32], name[600];
	hs_cx_short_name(r->name, name, sizeof(name));
	printf("%s (%s)\n", name, hs_cx_kind_name(r->kind));
	printf("  %" PRIu64 " %s, %" PRIu64 " elements: %s in elements, %s unused, "
	       "%s in bucket arrays\n", r->count, r->count == 1 ? "container" : "containers",
	       r->elements,
	       hs_fmt_size(b1, r->element_bytes), hs_fmt_size(b2, r->unused_bytes),
	       hs_fmt_size(b3, r->bucket_bytes));
	printf("  elements:");
	for (unsigned b = 0; b < HS_CX_BUCKETS; b++) {
		if (!r->hist[b])
			continue;
		uint64_t lo, hi;
		hs_cx_bucket_range(b, &lo, &hi);
		if (lo == hi)
			printf("  %" PRIu64 ": %" PRIu64, lo, r->hist[b]);
		else
			printf("  %" PRIu64 "-%" PRIu64 ": %" PRIu64, lo, hi, r->hist[b]);
	}
	printf("\n  inline N:");
	for (unsigned k = 0; k < HS_CX_NSBO; k++)
		printf("  %" PRIu64 ": %.0f%% (%s)", hs_cx_sbo_size(k),
		       r->count ? 100.0 * (double)r->sbo_count[k] / (double)r->count : 0.0,
		       hs_fmt_size(b1, r->sbo_bytes[k]));
	printf("\n");
}

int hs_cmd_containers(struct hs_cli *cli, struct hs_snapshot *snap)
{
	struct hs_results res;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_MARK, &res);
	const struct hs_types *types;
	struct hs_dwarf *dw;
	/* the containers are found through types */
	if (err || (err = hs_snapshot_types(snap, &types)) ||
	    (err = hs_snapshot_dwarf(snap, &dw)))
		return hs_cli_fail(cli, err);
	struct hs_containers *c;
	struct hs_error *e = hs_containers_compute(res.core, dw, res.heap, res.graph, types, &c);
	if (e) {
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	size_t limit = cli->top_n_set ? cli->top_n : c->nrows;
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kbool(&w, "partial", res.heap->partial);
		hs_jsonw_kuint(&w, "count", c->count);
		hs_jsonw_kuint(&w, "invalid", c->invalid);
		hs_jsonw_kuint(&w, "inline_strings", c->inline_strings);
		hs_jsonw_kuint(&w, "typed_roots", c->roots);
		hs_jsonw_kuint(&w, "typed_blocks", c->blocks);
		hs_jsonw_key(&w, "containers");
		hs_jsonw_array_begin(&w);
		for (size_t i = 0; i < c->nrows && i < limit; i++)
			json_row(&w, &c->rows[i]);
		hs_jsonw_array_end(&w);
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		hs_cli_partial_line(res.heap);
		printf("CONTAINERS: %" PRIu64 " in %zu types, in %" PRIu64 " typed roots and %"
		       PRIu64 " typed blocks", c->count, c->nrows, c->roots, c->blocks);
		if (c->inline_strings)
			printf("; %" PRIu64 " strings in their inline buffer not counted",
			       c->inline_strings);
		if (c->invalid)
			printf("; %" PRIu64 " failed their layout's checks", c->invalid);
		printf("\n");
		for (size_t i = 0; i < c->nrows && i < limit; i++) {
			printf("\n");
			text_row(&c->rows[i]);
		}
		if (limit < c->nrows)
			printf("\n(%zu more types; -n N shows more)\n", c->nrows - limit);
	}
	hs_containers_destroy(c);
	return HS_EXIT_OK;
}
