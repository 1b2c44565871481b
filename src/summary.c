/* Heap summaries, written and read back: see src/summary.h.
 *
 * The document, as written (docs/json.md lists every field):
 *
 *   { "format": "heapsift-summary", "version": 1,
 *     "core": {...}, "time": {...}, "process": {...}, "modules": [...],
 *     "partial": bool, "totals": {...}, "allocator": {...}, "pymalloc": ...,
 *     "types": [...], "roots": [...], "sizes": [...], "dominators": [...],
 *     "frag": {...}, "warnings": N }
 *
 * Lists are written one row per line (a row is a compact object), the rest
 * indented.  The reader takes "format", "version", "partial", "totals",
 * "types", "roots" and "modules", and checks the type and range of every
 * value it takes: a number is an integer from 0 to 2^53 (JSON's exact
 * integers), a string at most HS_SUMMARY_NAME_BYTES long.
 */
#include "src/summary.h"
#include "src/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/pymalloc.h"
#include "analyzers/frag.h"
#include "formats/jsonw.h"
#include "src/escape.h"
#include "src/hashtab.h"
#include "src/safeopen.h"
#include "src/sort.h"
#include "src/vector.h"

/* ------------------------------------------------------------- writing */

/* A row of a list: one line, compact (the writer's pretty flag is off
 * inside it). */
static void row_begin(struct hs_jsonw *w)
{
	hs_jsonw_object_begin(w);
	w->pretty = false;
}

static void row_end(struct hs_jsonw *w)
{
	hs_jsonw_object_end(w);
	w->pretty = true;
}

/* "<list>_total" and "<list>_truncated" after a list */
static void list_end(struct hs_jsonw *w, const char *list, size_t total,
		     size_t written)
{
	char key[64];
	hs_jsonw_array_end(w);
	snprintf(key, sizeof(key), "%s_total", list);
	hs_jsonw_kuint(w, key, total);
	snprintf(key, sizeof(key), "%s_truncated", list);
	hs_jsonw_kbool(w, key, written < total);
}

/* What a name can cost in the document: a byte that JSON may escape
 * (controls, quotes, anything past ASCII) up to HS_ESCAPE_JSON_MAX, so
 * that a core's hostile names cannot stretch a list past its budget. */
static size_t cost(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
		n += *p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' ?
			HS_ESCAPE_JSON_MAX : 1;
	return n;
}

/* Room for names of that cost in a list's budget of names. */
static bool fits(size_t *budget, size_t len)
{
	if (len > *budget)
		return false;
	*budget -= len;
	return true;
}

static void write_time(struct hs_jsonw *w, const struct hs_core *core)
{
	/* an ELF core carries no wall-clock time (NT_PRSTATUS has CPU
	 * times only): the file's modification time is when it was
	 * written */
	struct stat st;
	hs_jsonw_key(w, "time");
	if (!(core->fd >= 0 ? fstat(core->fd, &st) == 0 : stat(core->path, &st) == 0)) {
		hs_jsonw_null(w);
		return;
	}
	char utc[32] = "";
	struct tm tm;
	time_t t = st.st_mtim.tv_sec;
	if (gmtime_r(&t, &tm))
		strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
	hs_jsonw_object_begin(w);
	hs_jsonw_kint(w, "unix", (int64_t)t);
	hs_jsonw_kstring(w, "utc", utc);
	hs_jsonw_kstring(w, "source", "file_mtime");
	hs_jsonw_object_end(w);
}

static void write_modules(struct hs_jsonw *w, struct hs_dwarf *dw)
{
	size_t n = dw ? hs_dwarf_num_modules(dw) : 0, k = 0;
	size_t budget = HS_SUMMARY_NAME_BYTES;
	hs_jsonw_key(w, "modules");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < n && k < HS_SUMMARY_MAX_MODULES; i++, k++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		if (!fits(&budget, cost(m->name) + cost(m->build_id)))
			break;
		row_begin(w);
		hs_jsonw_kstring(w, "name", m->name);
		hs_jsonw_key(w, "build_id");
		if (m->build_id)
			hs_jsonw_string(w, m->build_id);
		else
			hs_jsonw_null(w);
		hs_jsonw_kbool(w, "executable", m->is_exe);
		row_end(w);
	}
	list_end(w, "modules", n, k);
}

static void class_total(struct hs_jsonw *w, const char *key, uint64_t count,
			uint64_t bytes)
{
	hs_jsonw_key(w, key);
	row_begin(w);
	hs_jsonw_kuint(w, "count", count);
	hs_jsonw_kuint(w, "bytes", bytes);
	row_end(w);
}

static void write_totals(struct hs_jsonw *w, const struct hs_results *res)
{
	const struct hs_class_total *t = res->mark->total;
	uint64_t free_count = 0, free_bytes = 0;
	for (int i = HS_WHERE_FREE; i < HS_WHERE_MAX; i++) {
		free_count += res->heap->count_where[i];
		free_bytes += res->heap->bytes_where[i];
	}
	hs_jsonw_key(w, "totals");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "used_count", res->retain->used_count);
	hs_jsonw_kuint(w, "used_bytes", res->retain->used_bytes);
	hs_jsonw_kuint(w, "free_count", free_count);
	hs_jsonw_kuint(w, "free_bytes", free_bytes);
	class_total(w, "reachable", t[HS_REACH_REACHABLE].count, t[HS_REACH_REACHABLE].bytes);
	class_total(w, "possible", t[HS_REACH_POSSIBLE].count, t[HS_REACH_POSSIBLE].bytes);
	class_total(w, "leaked", t[HS_REACH_LEAK_ROOT].count + t[HS_REACH_INDIRECT].count,
		    t[HS_REACH_LEAK_ROOT].bytes + t[HS_REACH_INDIRECT].bytes);
	class_total(w, "leak_roots", t[HS_REACH_LEAK_ROOT].count, t[HS_REACH_LEAK_ROOT].bytes);
	hs_jsonw_object_end(w);
}

static void write_allocator(struct hs_jsonw *w, const struct hs_heap *heap)
{
	hs_jsonw_key(w, "allocator");
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "name", heap->allocator);
	hs_jsonw_kstring(w, "version", heap->version);
	hs_jsonw_kuint(w, "unaccounted_bytes", heap->unaccounted_bytes);
	/* the allocator's own counters, as info writes them */
	if (heap->backend->stats_json)
		heap->backend->stats_json(w, heap);
	hs_jsonw_key(w, "places");
	hs_jsonw_object_begin(w);
	for (int i = 0; i < HS_WHERE_MAX; i++)
		if (heap->places[i].name)
			class_total(w, heap->places[i].name, heap->count_where[i],
				    heap->bytes_where[i]);
	hs_jsonw_object_end(w);
	class_total(w, "mmapped", heap->mmap_count, heap->mmap_bytes);
	hs_jsonw_kuint(w, "thread_caches", heap->ntcaches);
	hs_jsonw_kuint(w, "arenas", heap->narenas);
	hs_jsonw_object_end(w);
	hs_jsonw_key(w, "pymalloc");
	if (heap->pymalloc)
		hs_pymalloc_json(w, heap->pymalloc);
	else
		hs_jsonw_null(w);
}

static uint64_t row_weight(const struct hs_type_row *x)
{
	return x->bytes > x->retained ? x->bytes : x->retained;
}

/* the rows of most bytes or retained bytes first */
static int cmp_weight(const void *a, const void *b)
{
	const struct hs_type_row *x = a, *y = b;
	if (row_weight(x) != row_weight(y))
		return row_weight(x) > row_weight(y) ? -1 : 1;
	return strcmp(x->label, y->label);
}

static void write_types(struct hs_jsonw *w, struct hs_type_row *rows, size_t n)
{
	hs_sort(rows, n, sizeof(*rows), cmp_weight);
	size_t budget = HS_SUMMARY_NAME_BYTES, k = 0;
	hs_jsonw_key(w, "types");
	hs_jsonw_array_begin(w);
	for (; k < n && k < HS_SUMMARY_MAX_TYPES; k++) {
		const struct hs_type_row *x = &rows[k];
		if (!fits(&budget, cost(x->label)))
			break;
		row_begin(w);
		hs_jsonw_kstring(w, "label", x->label);
		hs_jsonw_kuint(w, "count", x->count);
		hs_jsonw_kuint(w, "bytes", x->bytes);
		hs_jsonw_kuint(w, "retained", x->retained);
		hs_jsonw_kuint(w, "leaked_count", x->leaked_count);
		hs_jsonw_kuint(w, "leaked_bytes", x->leaked_bytes);
		row_end(w);
	}
	list_end(w, "types", n, k);
}

static void write_roots(struct hs_jsonw *w, const struct hs_root_row *rows, size_t n)
{
	size_t budget = HS_SUMMARY_NAME_BYTES, k = 0;
	hs_jsonw_key(w, "roots");
	hs_jsonw_array_begin(w);
	for (; k < n && k < HS_SUMMARY_MAX_ROOTS; k++) {
		const struct hs_root_row *x = &rows[k];
		if (!fits(&budget, cost(x->name)))
			break;
		row_begin(w);
		hs_jsonw_kstring(w, "name", x->name);
		hs_jsonw_kstring(w, "kind", x->kind);
		hs_jsonw_kuint(w, "retained", x->retained);
		hs_jsonw_kuint(w, "count", x->count);
		row_end(w);
	}
	list_end(w, "roots", n, k);
}

struct size_row {
	uint64_t size, count, bytes;
};
HS_VECTOR(size_vec, struct size_row)
HS_HASH_MAP(size_index, size_t)     /* size + 1 -> index */

static int cmp_size_bytes(const void *a, const void *b)
{
	const struct size_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

static int cmp_size(const void *a, const void *b)
{
	const struct size_row *x = a, *y = b;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* The program's used blocks per usable size (glibc's and jemalloc's
 * usable sizes are their size classes): the sizes of most bytes, in size
 * order, and the rest as one row. */
static struct hs_error *write_sizes(struct hs_jsonw *w, const struct hs_heap *heap)
{
	struct size_vec v = {0};
	struct size_index idx = {0};
	for (size_t i = 0; i < heap->nallocs; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		if (!hs_alloc_in_graph(a))
			continue;
		size_t *k = NULL;
		bool fresh = false;
		if (size_index_insert(&idx, a->size + 1, &k, &fresh))
			goto nomem;
		if (fresh) {
			struct size_row *r = size_vec_append(&v);
			if (!r)
				goto nomem;
			r->size = a->size;
			*k = v.n - 1;
		}
		v.v[*k].count++;
		v.v[*k].bytes += a->size;
	}
	size_index_free(&idx);
	size_t n = v.n, k = n < HS_SUMMARY_MAX_SIZES ? n : HS_SUMMARY_MAX_SIZES;
	uint64_t other_count = 0, other_bytes = 0;
	hs_sort(v.v, n, sizeof(*v.v), cmp_size_bytes);
	for (size_t i = k; i < n; i++) {
		other_count += v.v[i].count;
		other_bytes += v.v[i].bytes;
	}
	hs_sort(v.v, k, sizeof(*v.v), cmp_size);
	hs_jsonw_key(w, "sizes");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < k; i++) {
		row_begin(w);
		hs_jsonw_kuint(w, "size", v.v[i].size);
		hs_jsonw_kuint(w, "count", v.v[i].count);
		hs_jsonw_kuint(w, "bytes", v.v[i].bytes);
		row_end(w);
	}
	list_end(w, "sizes", n, k);
	class_total(w, "sizes_other", other_count, other_bytes);
	size_vec_free(&v);
	return NULL;
nomem:
	size_index_free(&idx);
	size_vec_free(&v);
	return &hs_error_nomem;
}

/* The blocks that retain most, by type label, and what holds each. */
static struct hs_error *write_dominators(struct hs_jsonw *w, const struct hs_results *res)
{
	const struct hs_retain *r = res->retain;
	const struct hs_domtree *t = r->tree;
	uint32_t *tops = hs_malloc(HS_SUMMARY_MAX_DOMINATORS * sizeof(*tops));
	if (!tops)
		return &hs_error_nomem;
	size_t n = hs_retain_top(r, HS_SUMMARY_MAX_DOMINATORS, tops);
	size_t total = 0;
	for (uint32_t v = r->base; v < t->n; v++)
		total += t->idom[v] != HS_DOM_NONE;
	size_t budget = HS_SUMMARY_NAME_BYTES, k = 0;
	char label[600], held[600];
	hs_jsonw_key(w, "dominators");
	hs_jsonw_array_begin(w);
	for (; k < n; k++) {
		uint32_t v = tops[k], id = v - r->base, d = t->idom[v];
		hs_type_label(res->heap, res->types, id, label, sizeof(label));
		const char *kind, *name = NULL;
		if (hs_retain_is_alloc(r, d)) {
			kind = "block";
			name = hs_type_label(res->heap, res->types, d - r->base, held,
					     sizeof(held));
		} else if (d >= HS_NODE_FIRST_ROOT) {
			const struct hs_root *root = hs_retain_root(r, res->roots, d);
			kind = hs_root_kind_names[root->kind];
			name = root->name;
		} else {
			kind = d == HS_NODE_LEAKED ? "leaked" : "shared";
		}
		if (!fits(&budget, cost(label) + cost(name)))
			break;
		row_begin(w);
		hs_jsonw_kstring(w, "type", label);
		hs_jsonw_kuint(w, "size", res->heap->allocs[id].size);
		hs_jsonw_kuint(w, "retained", hs_domtree_retained(t, v));
		hs_jsonw_kuint(w, "count", hs_domtree_count(t, v));
		hs_jsonw_key(w, "held_by");
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "kind", kind);
		if (name)
			hs_jsonw_kstring(w, hs_retain_is_alloc(r, d) ? "type" : "name", name);
		hs_jsonw_object_end(w);
		row_end(w);
	}
	list_end(w, "dominators", total, k);
	free(tops);
	return NULL;
}

static struct hs_error *copy_error(const struct hs_error *e)
{
	if (e == &hs_error_nomem)
		return &hs_error_nomem;
	return hs_error_create(e->code, "%s", e->message);
}

struct hs_error *hs_summary_write(struct hs_snapshot *snap, FILE *f)
{
	struct hs_results res;
	const struct hs_error *cerr = hs_snapshot_results(snap, HS_WANT_ORDER | HS_WANT_TYPES,
							  &res);
	if (cerr)
		return copy_error(cerr);
	struct hs_dwarf *dw = NULL;
	hs_snapshot_dwarf(snap, &dw);
	const struct hs_core *core = snap->core;
	struct hs_type_row *types = NULL;
	struct hs_root_row *roots = NULL;
	size_t ntypes = 0, nroots = 0;
	struct hs_frag *frag = NULL;
	struct hs_jsonw *w = NULL;
	struct hs_error *err;
	if ((err = hs_type_rows(res.heap, res.mark, res.retain, res.types, &types, &ntypes)) ||
	    (err = hs_root_rows(res.retain, res.roots, &roots, &nroots)))
		goto out;
	/* without frag's figures the summary says "frag": null, as the
	 * report leaves its section out; out of memory is an error */
	err = hs_frag_compute(core, dw, res.heap, &frag);
	if (err == &hs_error_nomem)
		goto out;
	hs_error_destroy(err);
	err = &hs_error_nomem;
	if (!(w = hs_malloc(sizeof(*w))))
		goto out;
	hs_jsonw_init(w, f, true);
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "format", HS_SUMMARY_FORMAT);
	hs_jsonw_kint(w, "version", HS_SUMMARY_VERSION);
	hs_jsonw_key(w, "core");
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "path", core->path);
	hs_jsonw_kuint(w, "size", core->size);
	hs_jsonw_kbool(w, "truncated", core->truncated);
	hs_jsonw_object_end(w);
	write_time(w, core);
	hs_jsonw_key(w, "process");
	if (core->process.valid) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kint(w, "pid", core->process.pid);
		hs_jsonw_kstring(w, "name", core->process.fname);
		hs_jsonw_object_end(w);
	} else {
		hs_jsonw_null(w);
	}
	write_modules(w, dw);
	hs_jsonw_kbool(w, "partial", res.heap->partial);
	write_totals(w, &res);
	write_allocator(w, res.heap);
	write_types(w, types, ntypes);
	write_roots(w, roots, nroots);
	if ((err = write_sizes(w, res.heap)) || (err = write_dominators(w, &res)))
		goto out;
	hs_jsonw_key(w, "frag");
	if (frag) {
		w->pretty = false;
		hs_frag_json_capped(w, frag, res.heap, HS_SUMMARY_MAX_ARENAS);
		w->pretty = true;
	} else {
		hs_jsonw_null(w);
	}
	hs_jsonw_kuint(w, "warnings", snap->log.nwarnings);
	hs_jsonw_object_end(w);
	hs_jsonw_finish(w);
	err = NULL;
out:
	free(w);
	hs_frag_destroy(frag);
	hs_type_rows_free(types, ntypes);
	free(roots);
	return err;
}

/* ------------------------------------------------------------- reading */

bool hs_summary_is(const char *path)
{
	int fd;
	struct hs_error *err = hs_open_regular(path, &fd, NULL);
	if (err) {
		hs_error_destroy(err);
		return false;
	}
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')
			continue;
		return buf[i] == '{' || buf[i] == '[';
	}
	return false;
}

struct hs_error *hs_summary_read(const char *path, struct hs_summary **ret)
{
	int fd;
	struct stat st;
	struct hs_error *err = hs_open_regular(path, &fd, &st);
	if (err)
		return err;
	if (st.st_size > HS_SUMMARY_MAX_FILE) {
		close(fd);
		return hs_error_create(HS_ERR_FORMAT,
				       "%s: %lld bytes: too large for a heapsift summary (at most %d)",
				       path, (long long)st.st_size, HS_SUMMARY_MAX_FILE);
	}
	size_t cap = (size_t)st.st_size + 1, len = 0;
	char *data = hs_malloc(cap);
	if (!data) {
		close(fd);
		return &hs_error_nomem;
	}
	/* up to the size fstat gave: a file that grows meanwhile is read
	 * as it was */
	while (len < cap - 1) {
		ssize_t k = read(fd, data + len, cap - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err = hs_error_errno(errno, "%s", path);
			break;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (!err)
		err = hs_summary_parse(path, data, len, ret);
	free(data);
	return err;
}

struct reader {
	const char *name;
	struct hs_error *err;
};

__attribute__((format(printf, 2, 3)))
static bool damaged(struct reader *r, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!r->err)
		r->err = hs_error_create(HS_ERR_FORMAT, "%s: a damaged heapsift summary: %s",
					 r->name, what);
	return false;
}

/* obj[key] (where names obj in messages), or NULL after an error */
static json_t *field(struct reader *r, json_t *obj, const char *where,
		     const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		damaged(r, "%s%s%s is missing", where, *where ? "." : "", key);
	return v;
}

#define HS_SUMMARY_MAX_NUMBER (1ull << 53)

static bool get_uint(struct reader *r, json_t *obj, const char *where,
		     const char *key, uint64_t *ret)
{
	json_t *v = field(r, obj, where, key);
	if (!v)
		return false;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > HS_SUMMARY_MAX_NUMBER)
		return damaged(r, "%s%s%s is not an integer from 0 to 2^53", where,
			       *where ? "." : "", key);
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

static bool get_bool(struct reader *r, json_t *obj, const char *where,
		     const char *key, bool *ret)
{
	json_t *v = field(r, obj, where, key);
	if (!v)
		return false;
	if (!json_is_boolean(v))
		return damaged(r, "%s%s%s is not true or false", where, *where ? "." : "", key);
	*ret = json_is_true(v);
	return true;
}

/* A string of at most HS_SUMMARY_NAME_BYTES (jansson checked its UTF-8
 * and refused NUL), copied; or, with null_ok, null (*ret NULL). */
static bool get_string(struct reader *r, json_t *obj, const char *where,
		       const char *key, bool null_ok, char **ret)
{
	json_t *v = field(r, obj, where, key);
	if (!v)
		return false;
	if (null_ok && json_is_null(v)) {
		*ret = NULL;
		return true;
	}
	if (!json_is_string(v) || json_string_length(v) > HS_SUMMARY_NAME_BYTES)
		return damaged(r, "%s%s%s is not a string%s", where, *where ? "." : "", key,
			       json_is_string(v) ? " of at most 64 KiB" : "");
	*ret = strdup(json_string_value(v));
	if (!*ret && !r->err)
		r->err = &hs_error_nomem;
	return *ret != NULL;
}

static json_t *get_kind(struct reader *r, json_t *obj, const char *where,
			const char *key, int (*is)(const json_t *), const char *what)
{
	json_t *v = field(r, obj, where, key);
	if (v && !is(v)) {
		damaged(r, "%s%s%s is not %s", where, *where ? "." : "", key, what);
		return NULL;
	}
	return v;
}

static int is_object(const json_t *v) { return json_is_object(v); }
static int is_array(const json_t *v) { return json_is_array(v); }

static bool read_types(struct reader *r, json_t *doc, struct hs_diff_rows *rows)
{
	json_t *a = get_kind(r, doc, "", "types", is_array, "an array");
	if (!a)
		return false;
	size_t n = json_array_size(a);
	rows->types = hs_calloc(n ? n : 1, sizeof(*rows->types));
	if (!rows->types) {
		r->err = &hs_error_nomem;
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char where[48];
		snprintf(where, sizeof(where), "types[%zu]", i);
		json_t *o = json_array_get(a, i);
		if (!json_is_object(o))
			return damaged(r, "%s is not an object", where);
		struct hs_diff_trow *x = &rows->types[rows->ntypes];
		if (!get_string(r, o, where, "label", false, &x->label))
			return false;
		rows->ntypes++;
		if (!get_uint(r, o, where, "count", &x->count) ||
		    !get_uint(r, o, where, "bytes", &x->bytes) ||
		    !get_uint(r, o, where, "retained", &x->retained))
			return false;
	}
	return true;
}

static bool read_roots(struct reader *r, json_t *doc, struct hs_diff_rows *rows)
{
	json_t *a = get_kind(r, doc, "", "roots", is_array, "an array");
	if (!a)
		return false;
	size_t n = json_array_size(a);
	rows->roots = hs_calloc(n ? n : 1, sizeof(*rows->roots));
	if (!rows->roots) {
		r->err = &hs_error_nomem;
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char where[48];
		snprintf(where, sizeof(where), "roots[%zu]", i);
		json_t *o = json_array_get(a, i);
		if (!json_is_object(o))
			return damaged(r, "%s is not an object", where);
		struct hs_diff_rrow *x = &rows->roots[rows->nroots];
		if (!get_string(r, o, where, "name", false, &x->name))
			return false;
		rows->nroots++;
		if (!get_string(r, o, where, "kind", false, &x->kind) ||
		    !get_uint(r, o, where, "retained", &x->retained))
			return false;
	}
	return true;
}

/* The executable's build-id (the first module marked executable). */
static bool read_modules(struct reader *r, json_t *doc, char **exe_build_id)
{
	json_t *a = get_kind(r, doc, "", "modules", is_array, "an array");
	if (!a)
		return false;
	for (size_t i = 0; i < json_array_size(a); i++) {
		char where[48];
		snprintf(where, sizeof(where), "modules[%zu]", i);
		json_t *o = json_array_get(a, i);
		if (!json_is_object(o))
			return damaged(r, "%s is not an object", where);
		bool exe;
		char *id;
		if (!get_bool(r, o, where, "executable", &exe) ||
		    !get_string(r, o, where, "build_id", true, &id))
			return false;
		if (exe && !*exe_build_id)
			*exe_build_id = id;
		else
			free(id);
	}
	return true;
}

static bool read_doc(struct reader *r, json_t *doc, struct hs_summary *s)
{
	json_t *format = json_is_object(doc) ? json_object_get(doc, "format") : NULL;
	if (!json_is_string(format) || strcmp(json_string_value(format), HS_SUMMARY_FORMAT)) {
		r->err = hs_error_create(HS_ERR_FORMAT,
					 "%s: not a heapsift summary (a JSON document without \"format\": \"%s\")",
					 r->name, HS_SUMMARY_FORMAT);
		return false;
	}
	json_t *version = json_object_get(doc, "version");
	if (!json_is_integer(version))
		return damaged(r, "version is %s", version ? "not an integer" : "missing");
	if (json_integer_value(version) != HS_SUMMARY_VERSION) {
		r->err = hs_error_create(HS_ERR_UNSUPPORTED,
					 "%s: a heapsift summary of version %" JSON_INTEGER_FORMAT
					 "; this heapsift reads version %d",
					 r->name, json_integer_value(version), HS_SUMMARY_VERSION);
		return false;
	}
	struct hs_diff_rows *rows = hs_calloc(1, sizeof(*rows));
	if (!rows) {
		r->err = &hs_error_nomem;
		return false;
	}
	s->rows = rows;
	json_t *totals = get_kind(r, doc, "", "totals", is_object, "an object");
	json_t *leaked = totals ? get_kind(r, totals, "totals", "leaked", is_object,
					   "an object") : NULL;
	if (!leaked || !get_bool(r, doc, "", "partial", &rows->partial) ||
	    !get_uint(r, totals, "totals", "used_count", &rows->used_count) ||
	    !get_uint(r, totals, "totals", "used_bytes", &rows->used_bytes) ||
	    !get_uint(r, leaked, "totals.leaked", "count", &rows->leaked_count) ||
	    !get_uint(r, leaked, "totals.leaked", "bytes", &rows->leaked_bytes))
		return false;
	return read_types(r, doc, rows) &&
		get_uint(r, doc, "", "types_total", &s->types_total) &&
		get_bool(r, doc, "", "types_truncated", &rows->types_truncated) &&
		read_roots(r, doc, rows) &&
		get_uint(r, doc, "", "roots_total", &s->roots_total) &&
		get_bool(r, doc, "", "roots_truncated", &rows->roots_truncated) &&
		read_modules(r, doc, &s->exe_build_id);
}

struct hs_error *hs_summary_parse(const char *name, const char *data,
				  size_t len, struct hs_summary **ret)
{
	json_error_t jerr;
	json_t *doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return hs_error_create(HS_ERR_FORMAT,
				       "%s: not a heapsift summary, or a truncated one: invalid JSON at line %d, column %d (%s)",
				       name, jerr.line, jerr.column, jerr.text);
	struct hs_summary *s = hs_calloc(1, sizeof(*s));
	if (!s) {
		json_decref(doc);
		return &hs_error_nomem;
	}
	struct reader r = {.name = name};
	bool ok = read_doc(&r, doc, s);
	json_decref(doc);
	if (!ok) {
		hs_summary_destroy(s);
		return r.err ? r.err : &hs_error_nomem;
	}
	*ret = s;
	return NULL;
}

void hs_summary_destroy(struct hs_summary *s)
{
	if (!s)
		return;
	hs_diff_rows_destroy(s->rows);
	free(s->exe_build_id);
	free(s);
}
