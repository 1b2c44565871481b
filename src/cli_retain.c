/* Output shared by the commands that speak of retained memory. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzers/summary.h"
#include "src/alloc.h"
#include "src/cli_retain.h"
#include "src/outfile.h"
#include "src/parallel.h"
#include "src/rankset.h"
#include "src/sort.h"
#include "src/varint.h"

const char *hs_cli_reach(const struct hs_results *res, uint32_t id)
{
	return res->mark ? hs_reach_names[res->mark->reach[id]] : "unknown";
}

char *hs_cli_field(const struct hs_results *res, uint32_t id, uint64_t offset)
{
	struct hs_dtype *d = hs_types_of(res->types, id);
	const struct hs_pyobjects *py = res->rules ? res->rules->py : NULL;
	if (d && !d->size && py) {
		/* a dict's keys table, an instance's values */
		char *f = hs_python_field(py, res->core, res->heap, id, offset);
		char *out = NULL;
		if (f && asprintf(&out, "%s%s", d->name, f) < 0)
			out = NULL;
		free(f);
		return out;
	}
	if (!d || !d->size)
		return NULL;
	uint64_t start = hs_types_start(res->types, id);
	if (offset < start) {  /* a new T[n]'s count */
		char *out;
		return asprintf(&out, "%s[] count", d->name) < 0 ? NULL : out;
	}
	offset -= start;
	char *member = hs_dtype_member_at(res->types->reg, d, offset % d->size);
	char *out = NULL;
	uint64_t k = offset / d->size;
	int rc;
	if (hs_types_count(res->types, res->heap, id) >= 2)
		rc = asprintf(&out, "%s[%llu]%s%s", d->name, (unsigned long long)k,
			      member ? "." : "", member ? member : "");
	else
		rc = asprintf(&out, "%s%s%s", d->name, member ? "." : "",
			      member ? member : "");
	free(member);
	return rc < 0 ? NULL : out;
}

void hs_cli_node_name(const struct hs_results *res, uint32_t node, char *buf,
		      size_t len)
{
	const struct hs_retain *r = res->retain;
	if (node == HS_NODE_SUPER)
		snprintf(buf, len, "several roots (no single one)");
	else if (node == HS_NODE_LEAKED)
		snprintf(buf, len, "nothing (leaked)");
	else if (!hs_retain_is_alloc(r, node))
		snprintf(buf, len, "%s", hs_retain_root(r, res->roots, node)->name);
	else {
		uint32_t id = node - r->base;
		const struct hs_alloc *a = &res->heap->allocs[id];
		char tname[600];
		const char *type = hs_types_name(res->types, res->heap, id, tname,
						 sizeof(tname));
		snprintf(buf, len, "%#" PRIx64 " (%" PRIu64 " bytes, %s%s%s)", (uint64_t)a->addr,
			 (uint64_t)a->size, type ? type : "", type ? ", " : "",
			 hs_cli_reach(res, id));
	}
}

const char *hs_cli_node_kind(const struct hs_results *res, uint32_t node)
{
	const struct hs_retain *r = res->retain;
	if (node == HS_NODE_SUPER)
		return "shared";
	if (node == HS_NODE_LEAKED)
		return "leaked";
	if (!hs_retain_is_alloc(r, node))
		return hs_root_kind_names[hs_retain_root(r, res->roots, node)->kind];
	return "allocation";
}

void hs_cli_json_node(struct hs_jsonw *w, const struct hs_results *res,
		      uint32_t node)
{
	const struct hs_retain *r = res->retain;
	hs_jsonw_kstring(w, "kind", hs_cli_node_kind(res, node));
	if (hs_retain_is_alloc(r, node)) {
		uint32_t id = node - r->base;
		const struct hs_alloc *a = &res->heap->allocs[id];
		char tname[600];
		hs_jsonw_kaddr(w, "address", a->addr);
		hs_jsonw_kuint(w, "size", a->size);
		hs_jsonw_kstring(w, "type", hs_types_name(res->types, res->heap, id,
							  tname, sizeof(tname)));
		hs_jsonw_kstring(w, "reach", hs_cli_reach(res, id));
	} else if (node >= HS_NODE_FIRST_ROOT) {
		hs_jsonw_kstring(w, "name", hs_retain_root(r, res->roots, node)->name);
	}
	hs_jsonw_kuint(w, "retained", hs_domtree_retained(r->tree, node));
	hs_jsonw_kuint(w, "count", hs_cli_blocks(r, node));
}

static double share(const struct hs_retain *r, uint64_t bytes)
{
	return r->used_bytes ? 100.0 * (double)bytes / (double)r->used_bytes : 0.0;
}

/* Blocks a node retains: roots and pseudo-roots are not blocks. */
uint32_t hs_cli_blocks(const struct hs_retain *r, uint32_t node)
{
	return hs_domtree_count(r->tree, node) - (hs_retain_is_alloc(r, node) ? 0 : 1);
}

/* Blocks of one kind: the same type, or the same size when untyped. */
static bool same_kind(void *arg, uint32_t a, uint32_t b)
{
	const struct hs_results *res = arg;
	const struct hs_retain *r = res->retain;
	if (!hs_retain_is_alloc(r, a) || !hs_retain_is_alloc(r, b))
		return false;
	uint32_t x = a - r->base, y = b - r->base;
	struct hs_dtype *tx = hs_types_of(res->types, x), *ty = hs_types_of(res->types, y);
	if (tx || ty)
		return tx == ty;
	return res->heap->allocs[x].size == res->heap->allocs[y].size;
}

static uint32_t accumulation(const struct hs_results *res, const struct hs_heavy *heavy,
			     uint32_t node, uint32_t *depth, uint32_t *chain)
{
	return hs_retain_accumulation(res->retain, heavy, node, same_kind, (void *)res,
				      depth, chain);
}

/* Says why the suspects are left out (on the snapshot's log: the JSON
 * output's warnings have it too), and frees err. */
static void no_suspects(const struct hs_results *res, struct hs_error *err)
{
	if (res->log)
		hs_log_warn(res->log, "no suspects: %s", err->message);
	else
		fprintf(stderr, "heapsift: warning: no suspects: %s\n", err->message);
	hs_error_destroy(err);
}

/* The suspects (malloc'ed), and when there are some the heavy children
 * that lead to their accumulation points (computed here, not kept with
 * the tree: only the few suspects need them; hs_retain_heavy_fini). */
static struct hs_error *suspects(const struct hs_retain *r, uint32_t **ret,
				 size_t *count, struct hs_heavy *heavy)
{
	memset(heavy, 0, sizeof(*heavy));
	struct hs_error *err = hs_retain_suspects(r, HS_SUSPECT_SHARE, ret, count);
	if (!err && *count &&
	    (err = hs_retain_heavy_children(r, HS_ACCUMULATION_KEEP, heavy))) {
		free(*ret);
		*ret = NULL;
		*count = 0;
	}
	return err;
}

void hs_cli_suspects_text(const struct hs_results *res)
{
	const struct hs_retain *r = res->retain;
	uint32_t *s;
	struct hs_heavy heavy;
	size_t n;
	struct hs_error *err = suspects(r, &s, &n, &heavy);
	if (err) {
		no_suspects(res, err);
		return;
	}
	char name[512], b1[32];
	if (!n) {
		printf("No single root or block holds %d%% or more of the heap's used bytes.\n",
		       (int)(HS_SUSPECT_SHARE * 100));
		free(s);
		return;
	}
	printf("SUSPECTS: what holds %d%% or more of the heap's %s of used blocks\n",
	       (int)(HS_SUSPECT_SHARE * 100), hs_fmt_size(b1, r->used_bytes));
	for (size_t i = 0; i < n; i++) {
		uint32_t x = s[i];
		if (x == HS_NODE_LEAKED) {
			printf("%3zu. leaked blocks (%zu leak roots) hold %s (%.1f%%) in %u blocks: see heapsift leaks\n",
			       i + 1, res->mark->nleak_roots,
			       hs_fmt_size(b1, hs_domtree_retained(r->tree, x)),
			       share(r, hs_domtree_retained(r->tree, x)), hs_cli_blocks(r, x));
			continue;
		}
		hs_cli_node_name(res, x, name, sizeof(name));
		printf("%3zu. %s holds %s (%.1f%%) in %u blocks\n", i + 1, name,
		       hs_fmt_size(b1, hs_domtree_retained(r->tree, x)),
		       share(r, hs_domtree_retained(r->tree, x)), hs_cli_blocks(r, x));
		uint32_t depth, chain;
		uint32_t acc = accumulation(res, &heavy, x, &depth, &chain);
		if (acc != x) {
			hs_cli_node_name(res, acc, name, sizeof(name));
			printf("     accumulation point, %u level%s down: %s holds %s (%.1f%%) in %u blocks",
			       depth, depth == 1 ? "" : "s", name,
			       hs_fmt_size(b1, hs_domtree_retained(r->tree, acc)),
			       share(r, hs_domtree_retained(r->tree, acc)), hs_cli_blocks(r, acc));
			if (chain)
				printf(": the head of a chain of %u such blocks", chain);
			printf("\n");
		}
	}
	free(s);
	hs_retain_heavy_fini(&heavy);
}

void hs_cli_suspects_json(struct hs_jsonw *w, const struct hs_results *res)
{
	const struct hs_retain *r = res->retain;
	uint32_t *s = NULL;
	struct hs_heavy heavy;
	size_t n = 0;
	hs_jsonw_key(w, "suspects");
	hs_jsonw_array_begin(w);
	struct hs_error *err = suspects(r, &s, &n, &heavy);
	if (err) {
		no_suspects(res, err);
	} else {
		for (size_t i = 0; i < n; i++) {
			hs_jsonw_object_begin(w);
			hs_cli_json_node(w, res, s[i]);
			uint32_t depth, chain;
			uint32_t acc = accumulation(res, &heavy, s[i], &depth, &chain);
			hs_jsonw_key(w, "accumulation_point");
			hs_jsonw_object_begin(w);
			hs_cli_json_node(w, res, acc);
			hs_jsonw_kuint(w, "depth", depth);
			hs_jsonw_kuint(w, "chain", chain);
			hs_jsonw_object_end(w);
			hs_jsonw_object_end(w);
		}
	}
	hs_jsonw_array_end(w);
	free(s);
	hs_retain_heavy_fini(&heavy);
}

int hs_cli_output_ok(const struct hs_cli *cli, const char *path)
{
	struct hs_error *err = hs_outfile_check(path);
	if (!err)
		return 0;
	int rc = hs_cli_fail(cli, err);
	hs_error_destroy(err);
	return rc;
}

int hs_cli_output_not_core(const struct hs_cli *cli, const char *path)
{
	int bad = hs_cli_output_ok(cli, path);
	if (bad)
		return bad;
	struct stat a, b;
	if (stat(path, &b) == 0 && stat(cli->core, &a) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return hs_cli_usage(cli, "-o OUT must not be the input core");
	return 0;
}

void hs_cli_json_learned(struct hs_jsonw *w, const struct hs_results *res)
{
	const struct hs_rules *r = res->rules;
	hs_jsonw_key(w, "learned");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < r->nlearned; i++) {
		const struct hs_learned *l = &r->learned[i];
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "size", l->size);
		hs_jsonw_kuint(w, "blocks", l->blocks);
		hs_jsonw_key(w, "offsets");
		hs_jsonw_array_begin(w);
		for (int k = 0; k < l->noff; k++) {
			hs_jsonw_object_begin(w);
			hs_jsonw_kuint(w, "offset", l->off[k]);
			hs_jsonw_kuint(w, "pointers", l->pointers[k]);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_array_end(w);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
}

void hs_cli_learned_text(const struct hs_results *res)
{
	const struct hs_rules *r = res->rules;
	enum { SHOWN = 8 };
	for (size_t i = 0; i < r->nlearned && i < SHOWN; i++) {
		const struct hs_learned *l = &r->learned[i];
		printf("(learned: pointers into the %" PRIu64 " blocks of %" PRIu64 " bytes hold them at",
		       l->blocks, l->size);
		for (int k = 0; k < l->noff; k++)
			printf("%s +%#x (%" PRIu64 " pointers)", k ? "," : "",
			       (unsigned)l->off[k], l->pointers[k]);
		printf(")\n");
	}
	if (r->nlearned > SHOWN)
		printf("(learned: %zu more sizes; --format json lists them)\n",
		       r->nlearned - SHOWN);
}

enum { SHARER_VISITS = 1 << 16 };

/* One pass over the edges from the sources [src_lo, src_hi) into the
 * walked blocks of [dst_lo, dst_hi), the last source first.  A row holds
 * its sources as varints of their difference from the row's own node
 * (zigzag-signed): a block is mostly held by blocks allocated beside it,
 * and each entry's length is known without its neighbours, so the first
 * pass (bytes NULL) adds up the rows' lengths, and the second files each
 * source at the end of what is left of its row: the rows come out in the
 * order of their sources. */
struct walked_pass {
	const struct hs_retain *r;
	const struct hs_graph *g;
	const struct hs_rankset *walked;
	uint32_t src_lo, src_hi, dst_lo, dst_hi;
	uint32_t *off;          /* per walked rank: its length, or its cursor */
	uint8_t *bytes;         /* NULL: count */
	bool fits;              /* (counting) every row's length fits in 32 bits */
	uint64_t *pairs;        /* (walked_gather) */
	size_t npairs, cap;
	bool full;
};

static void *walked_pass(void *arg)
{
	struct walked_pass *wp = arg;
	const struct hs_rankset *walked = wp->walked;
	uint32_t *off = wp->off;
	uint8_t *bytes = wp->bytes;
	uint32_t dst_lo = wp->dst_lo, span = wp->dst_hi - wp->dst_lo;
	/* the edges into walked blocks are decoded AHEAD before their use
	 * into a ring: the count of a target's row is asked for before it
	 * is read */
	enum { AHEAD = 32, RING = 32 };
	_Static_assert(RING >= AHEAD, "the ring holds the edges ahead");
	struct {
		uint32_t v, w;
	} ring[RING];
	size_t head = 0, count = 0;
	struct hs_retain_succ it = {0};  /* (no row yet: it ends at once) */
	uint32_t v = wp->src_hi, w;
	wp->fits = true;
	for (;;) {
		while (count < AHEAD) {
			bool got;
			while (!(got = hs_retain_next(&it, &w)) && v > wp->src_lo)
				it = hs_retain_succ(wp->r, wp->g, --v);
			if (!got)
				break;
			/* (the set's words stay in the caches: n / 4 bytes) */
			if (w - dst_lo >= span || !hs_rankset_has(walked, w))
				continue;  /* another pass's, or not walked */
			ring[(head + count) % RING].v = v;
			ring[(head + count) % RING].w = w;
			count++;
		}
		if (!count)
			break;
		if (count > AHEAD / 2)
			__builtin_prefetch(&off[hs_rankset_index(walked, ring[(head + AHEAD / 2) % RING].w)]);
		uint32_t src = ring[head].v, dst = ring[head].w;
		head = (head + 1) % RING;
		count--;
		uint32_t k = hs_rankset_index(walked, dst);
		uint64_t z = hs_zigzag((int64_t)src - dst);
		uint32_t len = (uint32_t)hs_varint_len(z);
		if (bytes) {
			off[k] -= len;
			hs_varint_put(bytes + off[k], z);
		} else if (off[k] <= UINT32_MAX - len) {
			off[k] += len;
		} else {
			wp->fits = false;
		}
	}
	return NULL;
}

/* One pass instead of two, when the edges into the walked blocks are
 * few: each edge of the part's sources into a walked block, gathered as
 * (target << 32 | source), up to cap; full, the part stops. */
static void *walked_gather(void *arg)
{
	struct walked_pass *wp = arg;
	struct hs_retain_succ it = {0};  /* (no row yet: it ends at once) */
	uint32_t v = wp->src_hi, w;
	for (;;) {
		bool got;
		while (!(got = hs_retain_next(&it, &w)) && v > wp->src_lo)
			it = hs_retain_succ(wp->r, wp->g, --v);
		if (!got)
			break;
		if (!hs_rankset_has(wp->walked, w))
			continue;
		if (wp->npairs == wp->cap) {
			wp->full = true;
			break;
		}
		wp->pairs[wp->npairs++] = (uint64_t)w << 32 | v;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The rows from the gathered pairs, sorted by target then source: each
 * row's entries in source order, the rows in rank order, as the passes
 * write them. */
static struct hs_error *rows_of_pairs(const struct hs_rankset *walked, uint64_t *pairs,
				      size_t n, uint32_t **off_ret, uint8_t **pred_ret)
{
	uint32_t nw = walked->count;
	hs_sort(pairs, n, sizeof(*pairs), cmp_u64);
	uint32_t *off = hs_calloc((size_t)nw + 1, sizeof(*off));
	if (!off)
		return &hs_error_nomem;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t dst = (uint32_t)(pairs[i] >> 32), src = (uint32_t)pairs[i];
		uint32_t len = (uint32_t)hs_varint_len(hs_zigzag((int64_t)src - dst));
		off[hs_rankset_index(walked, dst)] += len;
		total += len;
	}
	if (total > UINT32_MAX) {
		free(off);
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "too many pointers into the shared blocks to list their holders");
	}
	uint32_t run = 0;
	for (uint32_t k = 0; k < nw; k++) {
		uint32_t len = off[k];
		off[k] = run;
		run += len;
	}
	off[nw] = run;
	uint8_t *pred = hs_malloc(total + 1);
	if (!pred) {
		free(off);
		return &hs_error_nomem;
	}
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t dst = (uint32_t)(pairs[i] >> 32), src = (uint32_t)pairs[i];
		at += hs_varint_put(pred + at, hs_zigzag((int64_t)src - dst));
	}
	*off_ret = off;
	*pred_ret = pred;
	return NULL;
}

/* The first node whose row (of r's graph) starts at or past half of the
 * allocations' rows' bytes: two parts of about equal bytes to decode. */
static uint32_t half_of_rows(const struct hs_retain *r, const struct hs_graph *g)
{
	uint32_t lo = 0, hi = g->n;
	uint32_t half = hs_edgerow_start(&g->index, g->n) / 2;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (hs_edgerow_start(&g->index, mid) < half)
			lo = mid + 1;
		else
			hi = mid;
	}
	return r->base + lo;
}

/* The predecessor rows of the walked blocks (see walked_pass) into
 * *off_ret (nw + 1 starts) and *pred_ret, with up to two threads: when
 * the walked blocks are few, each thread takes half of the sources'
 * rows, and gathers the edges into walked blocks in one pass
 * (walked_gather) or, when they are too many for that, counts into an
 * array of its own (4 bytes per walked block) then fills; when they are
 * many, each reads every row and takes the edges into half of the walked
 * blocks, so that the two write apart without a second array.  The rows
 * are the same every way. */
static struct hs_error *walked_rows(const struct hs_retain *r, const struct hs_graph *g,
				    const struct hs_rankset *walked, unsigned nthreads,
				    enum hs_sharers_split split,
				    uint32_t **off_ret, uint8_t **pred_ret)
{
	uint32_t nn = r->tree->n, nw = walked->count;
	struct walked_pass p[2];
	for (int i = 0; i < 2; i++)
		p[i] = (struct walked_pass){.r = r, .g = g, .walked = walked,
					    .src_lo = 0, .src_hi = nn, .dst_lo = 0, .dst_hi = nn};
	unsigned parts = nthreads > 1 && nw >= 2 && g->n >= 2 &&
			 split != HS_SHARERS_ONE ? 2 : 1;
	bool by_source = parts == 2 && (split == HS_SHARERS_AUTO ? nw <= nn / 8 :
					split == HS_SHARERS_BY_SOURCE ||
					split == HS_SHARERS_BY_PAIRS);
	if (by_source && split != HS_SHARERS_BY_SOURCE) {
		/* few walked blocks: the edges into them gathered in one pass,
		 * half of the sources each, up to a quarter byte a node in
		 * all; when there are more, counted and filled */
		size_t cap = nn / 64 + 4096;
		uint64_t *pairs = hs_malloc(2 * cap * sizeof(*pairs));
		if (pairs) {
			p[0].src_lo = p[1].src_hi = half_of_rows(r, g);
			p[0].pairs = pairs;
			p[1].pairs = pairs + cap;
			p[0].cap = p[1].cap = cap;
			hs_run_parts(p, sizeof(p[0]), 2, walked_gather);
			struct hs_error *err = NULL;
			if (!p[0].full && !p[1].full) {
				memmove(pairs + p[0].npairs, pairs + cap,
					p[1].npairs * sizeof(*pairs));
				err = rows_of_pairs(walked, pairs, p[0].npairs + p[1].npairs,
						    off_ret, pred_ret);
			}
			free(pairs);
			if (err || (!p[0].full && !p[1].full))
				return err;
			for (int i = 0; i < 2; i++)
				p[i].pairs = NULL;
		}
	}
	uint32_t *off = hs_calloc((size_t)nw + 1, sizeof(*off)), *off2 = NULL;
	if (!off)
		return &hs_error_nomem;
	if (by_source) {
		off2 = hs_calloc((size_t)nw + 1, sizeof(*off2));
		if (!off2) {
			free(off);
			return &hs_error_nomem;
		}
		p[0].src_lo = p[1].src_hi = half_of_rows(r, g);
	} else if (parts == 2) {
		p[0].dst_hi = p[1].dst_lo = hs_rankset_select(walked, nw / 2);
	}
	/* part 0 takes the last sources: its entries end each row */
	p[0].off = off;
	p[1].off = by_source ? off2 : off;
	hs_run_parts(p, sizeof(p[0]), parts, walked_pass);
	bool fits = p[0].fits && (parts == 1 || p[1].fits);
	uint64_t total = 0;
	for (uint32_t k = 0; k < nw; k++) {
		total += off[k];
		if (by_source) {
			/* part 1's entries go before part 0's */
			uint32_t last = off[k];
			total += off2[k];
			off2[k] = (uint32_t)(total - last);
		}
		off[k] = (uint32_t)total;
	}
	if (!fits || total > UINT32_MAX) {
		free(off);
		free(off2);
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "too many pointers into the shared blocks to list their holders");
	}
	off[nw] = (uint32_t)total;
	uint8_t *pred = hs_malloc(total + 1);
	if (!pred) {
		free(off);
		free(off2);
		return &hs_error_nomem;
	}
	for (unsigned i = 0; i < parts; i++)
		p[i].bytes = pred;
	hs_run_parts(p, sizeof(p[0]), parts, walked_pass);
	if (by_source) {
		/* part 1's cursors end at the rows' starts */
		off2[nw] = off[nw];
		free(off);
		off = off2;
	}
	*off_ret = off;
	*pred_ret = pred;
	return NULL;
}

/* The walks of hs_cli_sharers, one per block, each taken by the next
 * thread free (`next`, shared); the blocks' results are their own, so
 * they do not depend on which thread walked them.  Each thread has its
 * queue, its bits for the tops its walk has seen and its marks of the
 * roots the walk has named. */
struct walk_part {
	const struct hs_results *res;
	const struct hs_root_map *tops;
	const struct hs_rankset *walked;
	const uint32_t *off;
	const uint8_t *pred;
	const uint32_t *nodes;
	struct hs_sharers *out;
	size_t n;
	size_t *next;
	bool nomem;
};

static void *walk_part(void *arg)
{
	struct walk_part *wp = arg;
	const struct hs_retain *r = wp->res->retain;
	const struct hs_rankset *walked = wp->walked;
	const uint32_t *off = wp->off;
	const uint8_t *pred = wp->pred;
	uint32_t nw = walked->count;
	uint32_t *queue = hs_malloc(SHARER_VISITS * sizeof(*queue));
	uint64_t *seen = hs_calloc((size_t)nw / 64 + 1, sizeof(*seen));
	uint32_t *root_mark = hs_calloc(r->base, sizeof(*root_mark));
	if (!queue || !seen || !root_mark) {
		wp->nomem = true;
		goto out;
	}
	/* backwards from the block: a root, or a block a root holds alone,
	 * names a sharer; the top of a block held by several roots is walked
	 * through */
	for (;;) {
		size_t k = __atomic_fetch_add(wp->next, 1, __ATOMIC_RELAXED);
		if (k >= wp->n)
			break;
		uint32_t stamp = (uint32_t)k + 1, qh = 0, qt = 0;
		queue[qt++] = wp->nodes[k];
		uint32_t kq = hs_rankset_index(walked, wp->nodes[k]);
		seen[kq / 64] |= 1ull << (kq % 64);
		struct hs_sharers *o = &wp->out[k];
		while (qh < qt) {
			/* what the blocks a few places ahead in the queue will
			 * read, asked for in the order it will be read: the
			 * row's offset, its bytes, its sources' dominators */
			if (qh + 8 < qt)
				__builtin_prefetch(&off[hs_rankset_index(walked, queue[qh + 8])]);
			if (qh + 4 < qt)
				__builtin_prefetch(pred + off[hs_rankset_index(walked, queue[qh + 4])]);
			if (qh + 2 < qt) {
				uint32_t va = queue[qh + 2], ka = hs_rankset_index(walked, va);
				const uint8_t *at = pred + off[ka], *end = pred + off[ka + 1];
				for (int i = 0; i < 8 && at < end; i++)
					__builtin_prefetch(&r->tree->idom[(uint32_t)(va + hs_unzigzag(hs_varint_get(&at)))]);
			}
			uint32_t v = queue[qh++], kv = hs_rankset_index(walked, v);
			const uint8_t *at = pred + off[kv], *end = pred + off[kv + 1];
			while (at < end) {
				uint32_t p = (uint32_t)(v + hs_unzigzag(hs_varint_get(&at)));
				uint32_t holder = p, top = p;
				if (p >= r->base) {
					top = hs_root_map_top(wp->tops, p);
					if (top == v || top == HS_DOM_NONE)
						continue;  /* from inside v's subtree */
					holder = r->tree->idom[top];
				}
				if (holder >= HS_NODE_FIRST_ROOT && holder < r->base) {
					if (root_mark[holder] == stamp)
						continue;
					root_mark[holder] = stamp;
					if (wp->res->roots->roots[holder - HS_NODE_FIRST_ROOT].stale)
						continue;
					if (o->shown < HS_SHARERS_SHOWN)
						o->root[o->shown++] = holder - HS_NODE_FIRST_ROOT;
					o->total++;
				} else if (holder == HS_NODE_SUPER && p >= r->base &&
					   qt < SHARER_VISITS) {
					uint32_t kp = hs_rankset_index(walked, top);
					if (seen[kp / 64] >> (kp % 64) & 1)
						continue;
					seen[kp / 64] |= 1ull << (kp % 64);
					queue[qt++] = top;
				}
			}
		}
		/* the next walk starts with nothing seen */
		for (uint32_t i = 0; i < qt; i++) {
			uint32_t kv = hs_rankset_index(walked, queue[i]);
			seen[kv / 64] &= ~(1ull << (kv % 64));
		}
	}
out:
	free(queue);
	free(seen);
	free(root_mark);
	return NULL;
}

struct hs_error *hs_cli_sharers(const struct hs_results *res, const uint32_t *nodes,
				size_t n, struct hs_sharers *out)
{
	const struct hs_retain *r = res->retain;
	const struct hs_graph *g = res->graph;
	memset(out, 0, n * sizeof(*out));
	if (!n || !r || !g)
		return NULL;
	uint32_t nn = r->tree->n;
	/* Every path from a root to a block goes through the block's top
	 * (hs_root_map_top): an edge from outside the top's subtree of the
	 * dominator tree can only enter it at the top.  So the walk goes
	 * backwards from top to top: from each top held by several roots
	 * (dominated by the super-root), through the edges into it from
	 * outside its subtree, to the roots that hold their sources alone and
	 * to the tops of the sources no single root holds.  Only those tops
	 * (`walked`) have their predecessors listed (rows of varints, by
	 * rank: walked_pass), and a bit for "seen". */
	struct hs_root_map tops = {0};
	uint32_t *off = NULL;
	uint8_t *pred = NULL;
	struct hs_rankset walked = {0};
	struct hs_error *err = hs_root_map_init(r, &tops);
	if (err || (err = hs_rankset_init(&walked, nn)))
		goto out;
	err = &hs_error_nomem;
	for (size_t k = 0; k < n; k++)
		hs_rankset_add(&walked, nodes[k]);
	for (uint32_t v = r->base; v < nn; v++)
		if (r->tree->idom[v] == HS_NODE_SUPER)
			hs_rankset_add(&walked, v);
	hs_rankset_finish(&walked);
	uint32_t nw = walked.count;
	if ((err = walked_rows(r, g, &walked, res->threads, res->sharers_split, &off, &pred)))
		goto out;
	if (res->sharers_split != HS_SHARERS_AUTO) {
		/* for the tests: the rows, whichever way they were split */
		uint64_t h = 14695981039346656037ull;
		for (uint32_t k = 0; k <= nw; k++)
			h = (h ^ off[k]) * 1099511628211ull;
		for (uint32_t i = 0; i < off[nw]; i++)
			h = (h ^ pred[i]) * 1099511628211ull;
		fprintf(stderr, "heapsift: sharers: %u walked blocks, %u bytes of rows, hash %016" PRIx64 "\n",
			nw, off[nw], h);
	}
	/* backwards from each block (a walk each, the walks taken in turn
	 * by up to two threads) */
	size_t next = 0;
	struct walk_part parts[2];
	unsigned nparts = res->threads > 1 && n >= 2 ? 2 : 1;
	for (unsigned i = 0; i < 2; i++)
		parts[i] = (struct walk_part){.res = res, .tops = &tops, .walked = &walked,
					      .off = off, .pred = pred, .nodes = nodes,
					      .out = out, .n = n, .next = &next};
	hs_run_parts(parts, sizeof(*parts), nparts, walk_part);
	/* (a part without its memory takes no walk: the other took them) */
	err = parts[0].nomem && (nparts == 1 || parts[1].nomem) ? &hs_error_nomem : NULL;
out:
	hs_rankset_fini(&walked);
	free(off);
	free(pred);
	hs_root_map_fini(&tops);
	return err;
}

void hs_cli_sharers_text(const struct hs_results *res, const struct hs_sharers *s,
			 char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < s->shown && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
				 res->roots->roots[s->root[i]].name);
		if (w < 0)
			break;
		at += (size_t)w;
	}
	if (s->total > s->shown && at < len)
		snprintf(buf + at, len - at, " (+%u more)", s->total - s->shown);
}
