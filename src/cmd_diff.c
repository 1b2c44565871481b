/* heapdiff SNAP1 SNAP2 [SNAP3 ...] (heapsift diff): what grew, and who
 * holds it.  A snapshot is a core or a summary (heapsift summary, read by
 * src/summary.c); both come to analyzers/diff as rows. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/diff.h"
#include "formats/htmlpage.h"
#include "src/alloc.h"
#include "src/cli_retain.h"
#include "src/outfile.h"
#include "src/summary.h"

/* One snapshot named on the command line. */
struct input {
	const char *path;
	bool is_summary;
	struct hs_summary *summary;     /* a summary's rows */
	struct hs_snapshot *snap;       /* a core; kept open when its blocks
					 * are compared (the ends) */
	struct hs_diff_rows *core_rows;
	struct hs_diff_snapshot blocks;
	const struct hs_diff_rows *rows;
	char *build_id;                 /* the executable's, or NULL */
};

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

/* A type row that changed: by blocks, some were new or deleted; by
 * totals, its series or counts moved.  Either way, its retained bytes. */
static bool type_changed(const struct hs_diff *d, const struct hs_diff_type *t)
{
	if (t->retained_delta)
		return true;
	if (d->by_blocks)
		return t->new_count || t->deleted_count;
	bool changed = t->delta_count != 0;
	for (size_t k = 1; k < d->nsnaps; k++)
		changed |= t->bytes[k] != t->bytes[0];
	return changed;
}

/* a count known only by blocks */
static void json_blocks_uint(struct hs_jsonw *w, const struct hs_diff *d,
			     const char *key, uint64_t v)
{
	if (d->by_blocks) {
		hs_jsonw_kuint(w, key, v);
	} else {
		hs_jsonw_key(w, key);
		hs_jsonw_null(w);
	}
}

static void json_diff(struct hs_jsonw *w, const struct input *in, size_t n,
		      const struct hs_diff *d)
{
	hs_jsonw_object_begin(w);
	hs_jsonw_key(w, "snapshots");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "path", in[i].path);
		hs_jsonw_kstring(w, "kind", in[i].is_summary ? "summary" : "core");
		hs_jsonw_kuint(w, "used_count", in[i].rows->used_count);
		hs_jsonw_kuint(w, "used_bytes", in[i].rows->used_bytes);
		hs_jsonw_kbool(w, "partial", in[i].rows->partial);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	hs_jsonw_kstring(w, "compared_by", d->by_blocks ? "blocks" : "type_totals");
	hs_jsonw_kint(w, "used_delta_count", d->used_delta_count);
	hs_jsonw_kint(w, "used_delta_bytes", d->used_delta_bytes);
	hs_jsonw_key(w, "types");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < d->ntypes; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (!type_changed(d, t))
			continue;
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "type", t->label);
		json_blocks_uint(w, d, "new_count", t->new_count);
		json_blocks_uint(w, d, "new_bytes", t->new_bytes);
		json_blocks_uint(w, d, "deleted_count", t->deleted_count);
		json_blocks_uint(w, d, "deleted_bytes", t->deleted_bytes);
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
	json_blocks_uint(w, d, "new_leak_roots", d->new_leak_roots);
	json_blocks_uint(w, d, "new_leak_root_bytes", d->new_leak_root_bytes);
	hs_jsonw_kint(w, "leaked_delta_count", d->leaked_delta_count);
	hs_jsonw_kint(w, "leaked_delta_bytes", d->leaked_delta_bytes);
	json_series(w, "leaked_bytes", d->leaked, n);
	json_trend(w, d->leaked_trend, d->leaked_slope);
	hs_jsonw_object_end(w);
	hs_jsonw_object_end(w);
}

static void output(struct hs_cli *cli, const struct input *in, size_t n,
		   const struct hs_diff *d)
{
	size_t limit = cli->top_n;
	char b1[40], b2[40], b3[40], b4[40], b5[40];
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		json_diff(&w, in, n, d);
		hs_jsonw_finish(&w);
		return;
	}
	printf("%zu snapshots, first to last: %s in %+" PRId64 " blocks\n", n,
	       signed_size(b1, d->used_delta_bytes), d->used_delta_count);
	if (!d->by_blocks) {
		size_t first = 0, more = 0;
		for (size_t i = 0; i < n; i++)
			if (in[i].is_summary && !more++)
				first = i;
		if (more == 1)
			printf("compared by type totals: %s is a summary", in[first].path);
		else
			printf("compared by type totals: %s and %zu more are summaries",
			       in[first].path, more - 1);
		printf(" (a summary has no blocks to match by address: new and deleted blocks are unknown)\n");
	}
	size_t shown = 0;
	for (size_t i = 0; i < d->ntypes && shown < 5; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (t->delta_bytes <= 0)
			break;
		if (!shown++)
			printf("\nWHAT GREW%s:\n", d->by_blocks ? ", and who holds the new blocks" : "");
		printf("  %10s %+8" PRId64 " blocks  %-28s %-9s", signed_size(b1, t->delta_bytes),
		       t->delta_count, t->label, trend(t->trend));
		if (t->held_by)
			printf("  held by %s (%s of the new bytes)", t->held_by,
			       hs_fmt_size(b2, t->held_bytes));
		printf("\n");
	}
	if (!shown)
		printf("\nNothing grew.\n");
	printf("\nLEAKS: leaked bytes %s (%+" PRId64 " blocks)%s%s", signed_size(b1, d->leaked_delta_bytes),
	       d->leaked_delta_count, n >= 3 ? ", " : "", n >= 3 ? trend(d->leaked_trend) : "");
	if (d->by_blocks)
		printf("; %" PRIu64 " new leak roots (%s)\n", d->new_leak_roots,
		       hs_fmt_size(b2, d->new_leak_root_bytes));
	else
		printf("\n");

	printf("\nPER TYPE (rows that changed, by bytes delta)\n");
	printf("%8s %9s %8s %10s %10s %10s %11s  %-9s %s\n", "# NEW", "# DELETED",
	       "# DELTA", "ALLOC'D", "FREED", "DELTA", "RETAINED Δ", "TREND", "TYPE");
	shown = 0;
	for (size_t i = 0; i < d->ntypes && shown < limit; i++) {
		const struct hs_diff_type *t = &d->types[i];
		if (!type_changed(d, t))
			continue;
		shown++;
		char nc[24] = "-", dc[24] = "-", nb[40] = "-", db[40] = "-";
		if (d->by_blocks) {
			snprintf(nc, sizeof(nc), "%" PRIu64, t->new_count);
			snprintf(dc, sizeof(dc), "%" PRIu64, t->deleted_count);
			hs_fmt_size(nb, t->new_bytes);
			hs_fmt_size(db, t->deleted_bytes);
		}
		printf("%8s %9s %+8" PRId64 " %10s %10s %10s %11s  %-9s %s\n",
		       nc, dc, t->delta_count, nb, db,
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
	const struct input *in;
	size_t n;
	const struct hs_diff *d;
};

static void html_data(struct hs_jsonw *w, void *arg)
{
	const struct html_arg *a = arg;
	json_diff(w, a->in, a->n, a->d);
}

/* The comparison as one self-contained HTML page. */
static struct hs_error *write_html(const char *out, const struct input *in,
				   size_t n, const struct hs_diff *d)
{
	struct html_arg a = {in, n, d};
	return hs_html_page_write(hs_diff_html, out, html_data, &a);
}

/* A warning (unless --quiet) that a summary's list was cut. */
static void cut_warning(const struct hs_cli *cli, const struct input *x)
{
	const struct hs_diff_rows *r = x->rows;
	if (cli->quiet || !x->summary)
		return;
	if (r->types_truncated)
		fprintf(stderr, "heapsift: warning: %s lists %zu of its %" PRIu64
			" types: the others count as 0 bytes in its column\n",
			x->path, r->ntypes, x->summary->types_total);
	if (r->roots_truncated)
		fprintf(stderr, "heapsift: warning: %s lists %zu of its %" PRIu64
			" roots: the others count as 0 bytes in its column\n",
			x->path, r->nroots, x->summary->roots_total);
}

/* x comes from the build of the program first does (the executables'
 * build-ids), or --force: 0, or the exit code after one error line. */
static int same_program(const struct hs_cli *cli, const struct input *first,
			const struct input *x)
{
	if (!first || cli->force ||
	    (x->build_id && first->build_id && !strcmp(x->build_id, first->build_id)))
		return 0;
	fprintf(stderr, "heapsift: %s and %s are not snapshots of the same program (executable build-id %s vs %s); --force compares them anyway\n",
		first->path, x->path, first->build_id ? first->build_id : "unknown",
		x->build_id ? x->build_id : "unknown");
	return HS_EXIT_ANALYSIS;
}

/* Reads snapshot x: a summary, or a core analyzed as far as the
 * dominators (its blocks kept when keep).  first: the first snapshot,
 * NULL for itself.  0, or the exit code after one error line. */
static int load(struct hs_cli *cli, struct input *x, const struct input *first,
		bool keep)
{
	struct hs_error *err;
	int rc;
	if (x->is_summary) {
		if ((err = hs_summary_read(x->path, &x->summary)))
			goto fail;
		x->rows = x->summary->rows;
		if (x->summary->exe_build_id &&
		    !(x->build_id = strdup(x->summary->exe_build_id)))
			return hs_cli_fail(cli, &hs_error_nomem);
		if ((rc = same_program(cli, first, x)))
			return rc;
		cut_warning(cli, x);
		return 0;
	}
	if ((err = hs_snapshot_open(x->path, &cli->opts, &x->snap)))
		goto fail;
	const char *id = exe_build_id(x->snap);
	if (id && !(x->build_id = strdup(id)))
		return hs_cli_fail(cli, &hs_error_nomem);
	if ((rc = same_program(cli, first, x)))
		return rc;
	struct hs_results res;
	const struct hs_error *e = hs_snapshot_results(x->snap, HS_WANT_ORDER | HS_WANT_TYPES,
						       &res);
	if (e) {
		fprintf(stderr, "heapsift: %s: %s\n", x->path, e->message);
		return e->code == HS_ERR_USAGE ? HS_EXIT_USAGE : HS_EXIT_ANALYSIS;
	}
	x->blocks = (struct hs_diff_snapshot){res.heap, res.mark, res.retain,
					      res.types, res.roots};
	if ((err = hs_diff_rows_of(&x->blocks, &x->core_rows)))
		goto fail;
	x->rows = x->core_rows;
	if (!keep) {
		/* only its rows are needed: its memory goes back now */
		hs_snapshot_destroy(x->snap);
		x->snap = NULL;
	}
	return 0;
fail:
	rc = hs_cli_fail(cli, err);
	hs_error_destroy(err);
	return rc;
}

int hs_cmd_diff(struct hs_cli *cli, struct hs_snapshot *unused)
{
	(void)unused;
	size_t n = cli->ncores;
	if (n < 2)
		return hs_cli_usage(cli, "diff needs two snapshots or more (cores or summaries)");
	int bad = cli->out ? hs_cli_output_ok(cli, cli->out) : 0;
	if (bad)
		return bad;
	struct input *in = hs_calloc(n, sizeof(*in));
	struct hs_diff_input *din = hs_calloc(n, sizeof(*din));
	int rc = HS_EXIT_OK;
	if (!in || !din) {
		free(in);
		free(din);
		return hs_cli_fail(cli, &hs_error_nomem);
	}
	/* blocks are compared when every snapshot is a core, between the
	 * first and the last: only those stay open */
	bool all_cores = true;
	for (size_t i = 0; i < n; i++) {
		in[i].path = cli->cores[i];
		in[i].is_summary = hs_summary_is(in[i].path);
		all_cores &= !in[i].is_summary;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = load(cli, &in[i], i ? &in[0] : NULL,
			  all_cores && (i == 0 || i == n - 1));
	struct hs_diff *d = NULL;
	if (!rc) {
		for (size_t i = 0; i < n; i++)
			din[i] = (struct hs_diff_input){in[i].rows, in[i].is_summary,
							in[i].snap ? &in[i].blocks : NULL};
		struct hs_error *err = hs_diff_compute(din, n, &d);
		if (err) {
			rc = hs_cli_fail(cli, err);
			hs_error_destroy(err);
		} else if (cli->out) {
			err = write_html(cli->out, in, n, d);
			if (err) {
				rc = hs_cli_fail(cli, err);
				hs_error_destroy(err);
			} else if (cli->format == HS_FORMAT_TEXT &&
				   !hs_outfile_is_stdout(cli->out)) {
				printf("wrote %s\n", cli->out);
			}
		} else {
			output(cli, in, n, d);
		}
	}
	hs_diff_destroy(d);
	for (size_t i = 0; i < n; i++) {
		hs_snapshot_destroy(in[i].snap);
		hs_diff_rows_destroy(in[i].core_rows);
		hs_summary_destroy(in[i].summary);
		free(in[i].build_id);
	}
	free(in);
	free(din);
	return rc;
}
