/* heapdiff CORE1 CORE2 [CORE3 ...] (heapsift diff): what grew, and who
 * holds it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/diff.h"
#include "formats/htmlpage.h"
#include "src/cli_retain.h"
#include "src/outfile.h"

static const char *signed_size(char *buf, int64_t v)
{
	char tmp[32];
	hs_fmt_size(tmp, (uint64_t)(v < 0 ? -v : v));
	snprintf(buf, 40, "%s%s", v < 0 ? "-" : v > 0 ? "+" : "", tmp);
	return buf;
}

static const char *exe_build_id(struct hs_snapshot *snap)
{
	struct hs_dwarf *dw;
	if (hs_snapshot_dwarf(snap, &dw))
		return NULL;
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		if (m->is_exe)
			return m->build_id;
	}
	return NULL;
}

static void json_series(struct hs_jsonw *w, const char *key, const uint64_t *v,
			size_t n)
{
	hs_jsonw_key(w, key);
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++)
		hs_jsonw_uint(w, v[i]);
	hs_jsonw_array_end(w);
}

static void json_trend(struct hs_jsonw *w, enum hs_trend t, double slope)
{
	hs_jsonw_kint(w, "slope", (int64_t)slope);
	if (t == HS_TREND_NONE) {
		hs_jsonw_key(w, "trend");
		hs_jsonw_null(w);
	} else {
		hs_jsonw_kstring(w, "trend", hs_trend_names[t]);
	}
}

static const char *trend(enum hs_trend t)
{
	return t == HS_TREND_NONE ? "-" : hs_trend_names[t];
}

static void json_diff(struct hs_jsonw *w, struct hs_snapshot **snaps, size_t n,
		      const struct hs_diff *d)
{
	hs_jsonw_object_begin(w);
	hs_jsonw_key(w, "snapshots");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "path", snaps[i]->core->path);
		hs_jsonw_kuint(w, "used_count", snaps[i]->retain->used_count);
		hs_jsonw_kuint(w, "used_bytes", snaps[i]->retain->used_bytes);
		hs_jsonw_kbool(w, "partial", snaps[i]->heap->partial);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_kint(w, "used_delta_count", d->used_delta_count);
	hs_jsonw_kint(w, "used_delta_bytes", d->used_delta_bytes);
	hs_jsonw_key(w, "types");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < d->ntypes; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (!t->new_count && !t->deleted_count && !t->retained_delta)
			continue;  /* unchanged */
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "type", t->label);
		hs_jsonw_kuint(w, "new_count", t->new_count);
		hs_jsonw_kuint(w, "new_bytes", t->new_bytes);
		hs_jsonw_kuint(w, "deleted_count", t->deleted_count);
		hs_jsonw_kuint(w, "deleted_bytes", t->deleted_bytes);
		hs_jsonw_kint(w, "delta_count", t->delta_count);
		hs_jsonw_kint(w, "delta_bytes", t->delta_bytes);
		hs_jsonw_kint(w, "retained_delta", t->retained_delta);
		json_series(w, "bytes", t->bytes, n);
		json_trend(w, t->trend, t->slope);
		if (t->held_by) {
			hs_jsonw_key(w, "new_bytes_held_by");
			hs_jsonw_object_begin(w);
			hs_jsonw_kstring(w, "root", t->held_by);
			hs_jsonw_kuint(w, "bytes", t->held_bytes);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "roots");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < d->nroots; i++) {
		const struct hs_diff_root *r = &d->roots[i];
		bool changed = false;
		for (size_t k = 1; k < n; k++)
			changed |= r->retained[k] != r->retained[0];
		if (!changed)
			continue;
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "name", r->name);
		hs_jsonw_kstring(w, "kind", r->kind);
		hs_jsonw_kint(w, "retained_delta", r->retained_delta);
		json_series(w, "retained", r->retained, n);
		json_trend(w, r->trend, r->slope);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_key(w, "leaks");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "new_leak_roots", d->new_leak_roots);
	hs_jsonw_kuint(w, "new_leak_root_bytes", d->new_leak_root_bytes);
	hs_jsonw_kint(w, "leaked_delta_count", d->leaked_delta_count);
	hs_jsonw_kint(w, "leaked_delta_bytes", d->leaked_delta_bytes);
	json_series(w, "leaked_bytes", d->leaked, n);
	json_trend(w, d->leaked_trend, d->leaked_slope);
	hs_jsonw_object_end(w);
	hs_jsonw_object_end(w);
}

static void output(struct hs_cli *cli, struct hs_snapshot **snaps, size_t n,
		   const struct hs_diff *d)
{
	size_t limit = cli->top_n;
	char b1[40], b2[40], b3[40], b4[40], b5[40];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		json_diff(&w, snaps, n, d);
		hs_jsonw_finish(&w);
		return;
	}
	printf("%zu snapshots, first to last: %s in %+" PRId64 " blocks\n", n,
	       signed_size(b1, d->used_delta_bytes), d->used_delta_count);
	size_t shown = 0;
	for (size_t i = 0; i < d->ntypes && shown < 5; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (t->delta_bytes <= 0)
			break;
		if (!shown++)
			printf("\nWHAT GREW, and who holds the new blocks:\n");
		printf("  %10s %+8" PRId64 " blocks  %-28s %-9s", signed_size(b1, t->delta_bytes),
		       t->delta_count, t->label, trend(t->trend));
		if (t->held_by)
			printf("  held by %s (%s of the new bytes)", t->held_by,
			       hs_fmt_size(b2, t->held_bytes));
		printf("\n");
	}
	if (!shown)
		printf("\nNothing grew.\n");
	printf("\nLEAKS: leaked bytes %s (%+" PRId64 " blocks)%s%s; %" PRIu64
	       " new leak roots (%s)\n", signed_size(b1, d->leaked_delta_bytes),
	       d->leaked_delta_count, n >= 3 ? ", " : "",
	       n >= 3 ? trend(d->leaked_trend) : "", d->new_leak_roots,
	       hs_fmt_size(b2, d->new_leak_root_bytes));

	printf("\nPER TYPE (rows that changed, by bytes delta)\n");
	printf("%8s %9s %8s %10s %10s %10s %11s  %-9s %s\n", "# NEW", "# DELETED",
	       "# DELTA", "ALLOC'D", "FREED", "DELTA", "RETAINED Δ", "TREND", "TYPE");
	shown = 0;
	for (size_t i = 0; i < d->ntypes && shown < limit; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (!t->new_count && !t->deleted_count && !t->retained_delta)
			continue;
		shown++;
		printf("%8" PRIu64 " %9" PRIu64 " %+8" PRId64 " %10s %10s %10s %11s  %-9s %s\n",
		       t->new_count, t->deleted_count, t->delta_count,
		       hs_fmt_size(b1, t->new_bytes), hs_fmt_size(b2, t->deleted_bytes),
		       signed_size(b3, t->delta_bytes), signed_size(b4, t->retained_delta),
		       trend(t->trend), t->label);
	}
	printf("\nPER ROOT (retained bytes that changed)\n");
	printf("%11s  %-9s %s\n", "RETAINED Δ", "TREND", "ROOT");
	shown = 0;
	for (size_t i = 0; i < d->nroots && shown < limit; i++) {
		const struct hs_diff_root *r = &d->roots[i];
		if (!r->retained_delta && r->trend != HS_TREND_SAWTOOTH)
			continue;
		shown++;
		printf("%11s  %-9s %s\n", signed_size(b5, r->retained_delta),
		       trend(r->trend), r->name);
	}
}

extern const char hs_diff_html[];

struct html_arg {
	struct hs_snapshot **snaps;
	size_t n;
	const struct hs_diff *d;
};

static void html_data(struct hs_jsonw *w, void *arg)
{
	const struct html_arg *a = arg;
	json_diff(w, a->snaps, a->n, a->d);
}

/* The comparison as one self-contained HTML page. */
static struct hs_error *write_html(const char *out, struct hs_snapshot **snaps,
				   size_t n, const struct hs_diff *d)
{
	struct html_arg a = {snaps, n, d};
	return hs_html_page_write(hs_diff_html, out, html_data, &a);
}

int hs_cmd_diff(struct hs_cli *cli, struct hs_snapshot *unused)
{
	(void)unused;
	size_t n = cli->ncores;
	if (n < 2)
		return hs_cli_usage(cli, "diff needs two cores or more");
	int bad = cli->out ? hs_cli_output_ok(cli, cli->out) : 0;
	if (bad)
		return bad;
	struct hs_snapshot **snaps = calloc(n, sizeof(*snaps));
	struct hs_diff_snapshot *in = calloc(n, sizeof(*in));
	int rc = HS_EXIT_OK;
	if (!snaps || !in) {
		free(snaps);
		free(in);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	const char *first_id = NULL;
	for (size_t i = 0; i < n && !rc; i++) {
		struct hs_error *err = hs_snapshot_open(cli->cores[i], &cli->opts, &snaps[i]);
		if (err) {
			rc = hs_cli_fail(cli, err);
			hs_error_destroy(err);
			break;
		}
		const char *id = exe_build_id(snaps[i]);
		if (i == 0)
			first_id = id;
		else if (!cli->force && (!id || !first_id || strcmp(id, first_id))) {
			fprintf(stderr, "heapsift: %s and %s are not cores of the same program (executable build-id %s vs %s); --force compares them anyway\n",
				cli->cores[0], cli->cores[i], first_id ? first_id : "unknown",
				id ? id : "unknown");
			rc = HS_EXIT_ANALYSIS;
			break;
		}
		struct hs_results res;
		const struct hs_error *e = hs_snapshot_results(snaps[i], HS_WANT_RETAIN | HS_WANT_TYPES,
							       &res);
		if (e) {
			fprintf(stderr, "heapsift: %s: %s\n", cli->cores[i], e->message);
			rc = e->code == HS_ERR_USAGE ? HS_EXIT_USAGE : HS_EXIT_ANALYSIS;
			break;
		}
		in[i] = (struct hs_diff_snapshot){res.heap, res.mark, res.retain,
						  res.types, res.roots};
	}
	struct hs_diff *d = NULL;
	if (!rc) {
		struct hs_error *err = hs_diff_compute(in, n, &d);
		if (err) {
			rc = hs_cli_fail(cli, err);
			hs_error_destroy(err);
		} else if (cli->out) {
			err = write_html(cli->out, snaps, n, d);
			if (err) {
				rc = hs_cli_fail(cli, err);
				hs_error_destroy(err);
			} else if (cli->format == HS_FORMAT_TEXT &&
				   !hs_outfile_is_stdout(cli->out)) {
				printf("wrote %s\n", cli->out);
			}
		} else {
			output(cli, snaps, n, d);
		}
	}
	hs_diff_destroy(d);
	for (size_t i = 0; i < n; i++)
		hs_snapshot_destroy(snaps[i]);
	free(snaps);
	free(in);
	return rc;
}
