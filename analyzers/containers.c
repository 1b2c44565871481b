/* libstdc++'s containers and their statistics: see analyzers/containers.h. */
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/hashtab.h"
#include "src/sort.h"
#include "analyzers/containers.h"

HS_HASH_SET(cx_seen)
HS_HASH_MAP(cx_rowmap, uint32_t)

/* the live part of a block that is a vector's buffer or a deque's chunk:
 * [lo, hi) bytes from its start */
struct cx_live {
	uint64_t lo, hi;
};
HS_HASH_MAP(cx_livemap, struct cx_live)

struct cx {
	const struct hs_core *core;
	const struct hs_heap *heap;
	const struct hs_graph *graph;
	const struct hs_types *types;
	struct hs_containers *out;
	struct cx_seen seen;
	struct cx_rowmap rowof;         /* type index + 1 -> row + 1 */
	size_t caprows;
	/* Two passes over the same containers.  A vector's buffer holds
	 * capacity - size slots past its elements, a deque's chunks free
	 * slots at both ends: what is there is no object (zeros, or a
	 * destroyed one), but the block's type covers them.  The first pass
	 * (collect) notes the live part of every such block, the second
	 * counts, and looks into those blocks' live parts only. */
	bool collect;
	struct cx_livemap live;         /* block id + 1 -> its live part */
	struct hs_error *err;           /* of a note in collect */
	struct hs_dvar *vars;           /* the typed roots */
	size_t nvars;
	/* steps left, in one pass, for walking hash tables' node lists and
	 * deques' maps: the nodes and chunks of different containers are
	 * different blocks, so the walks of a sound heap take at most one
	 * step per block; lists a hostile core makes long, or shares, run
	 * out of it */
	uint64_t steps;
};

unsigned hs_cx_bucket(uint64_t n)
{
	if (n <= 1)
		return (unsigned)n;
	unsigned k = 64 - (unsigned)__builtin_clzll(n - 1);  /* ceil(log2 n) */
	return k < 2 ? 2 : k;
}

void hs_cx_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi)
{
	if (b <= 1) {
		*lo = *hi = b;
		return;
	}
	*lo = b == 2 ? 2 : (1ull << (b - 1)) + 1;
	*hi = b >= 64 ? UINT64_MAX : 1ull << b;
}

const char *hs_cx_kind_name(uint8_t kind)
{
	static const char *const names[HS_DC_NKINDS] = {
		"vector", "string", "unordered", "tree", "deque",
	};
	return kind < HS_DC_NKINDS ? names[kind] : "?";
}

/* Removes ", std::allocator<...>" and the other defaulted arguments
 * (less, hash, equal_to, char_traits) from a name, at any depth, spells
 * std::__cxx11::basic_string<char> std::string, and drops the space GCC
 * leaves before a '>' that no longer follows one. */
void hs_cx_short_name(const char *name, char *buf, size_t len)
{
	static const char *const drop[] = {
		", std::allocator<", ", std::less<", ", std::hash<", ", std::equal_to<",
		", std::char_traits<",
	};
	static const char str[] = "std::__cxx11::basic_string<char>";
	char tmp[600];
	size_t o = 0;
	if (!len)
		return;
	for (const char *p = name; *p && o + 1 < sizeof(tmp);) {
		bool skipped = false;
		for (size_t k = 0; k < sizeof(drop) / sizeof(drop[0]) && !skipped; k++) {
			size_t dl = strlen(drop[k]);
			if (strncmp(p, drop[k], dl))
				continue;
			/* to the matching '>' */
			const char *q = p + dl;
			int depth = 1;
			for (; *q && depth; q++)
				depth += *q == '<' ? 1 : *q == '>' ? -1 : 0;
			if (!depth) {
				p = q;
				skipped = true;
			}
		}
		if (skipped)
			continue;
		tmp[o++] = *p++;
	}
	tmp[o] = 0;
	/* the spaces, then std::string, then the spaces that leaves */
	for (int pass = 0; pass < 3; pass++) {
		char *out = pass == 2 ? buf : tmp;
		size_t cap = pass == 2 ? len : sizeof(tmp), w = 0;
		char src[600];
		memcpy(src, tmp, o + 1);
		for (size_t i = 0; src[i] && w + 1 < cap; i++) {
			if (pass == 1 && !strncmp(src + i, str, sizeof(str) - 1)) {
				w += (size_t)snprintf(out + w, cap - w, "std::string");
				w = w < cap ? w : cap - 1;
				i += sizeof(str) - 2;
				continue;
			}
			if (pass != 1 && src[i] == ' ' && src[i + 1] == '>' &&
			    (!w || out[w - 1] != '>'))
				continue;
			out[w++] = src[i];
		}
		out[w] = 0;
		o = w;
	}
}

/* The used block that starts at v, HS_NO_ALLOC otherwise. */
static uint32_t block_at(const struct cx *c, uint64_t v)
{
	bool interior;
	uint32_t id = hs_graph_hit(c->graph, v, &interior);
	return id != HS_NO_ALLOC && !interior ? id : HS_NO_ALLOC;
}

static uint64_t block_end(const struct cx *c, uint32_t id)
{
	return c->heap->allocs[id].addr + c->heap->allocs[id].size;
}

static bool words(const struct cx *c, uint64_t addr, uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!hs_core_read_u64(c->core, addr + 8 * i, &w[i]))
			return false;
	return true;
}

/* The live part of block id, as the first container that owns it says. */
static void note_live(struct cx *c, uint32_t id, uint64_t lo, uint64_t hi)
{
	if (!c->collect || c->err)
		return;
	struct cx_live *slot;
	bool fresh;
	c->err = cx_livemap_insert(&c->live, (uint64_t)id + 1, &slot, &fresh);
	if (!c->err && fresh)
		*slot = (struct cx_live){lo, hi};
}

struct found {
	uint64_t size, element_bytes, unused_bytes, bucket_bytes;
};

/* Reads one container; false when it fails the checks.  *skip: a string
 * in its inline buffer, not counted. */
static bool read_vector(struct cx *c, uint64_t addr, uint64_t esize,
			struct found *f)
{
	uint64_t w[3];
	if (!words(c, addr, w, 3))
		return false;
	uint64_t s = w[0], fin = w[1], e = w[2];
	if (!s && !fin && !e)
		return true;
	if (s > fin || fin > e || s == e || (fin - s) % esize || (e - s) % esize)
		return false;
	uint32_t id = block_at(c, s);
	if (id == HS_NO_ALLOC || e > block_end(c, id))
		return false;
	note_live(c, id, 0, fin - s);
	f->size = (fin - s) / esize;
	f->element_bytes = fin - s;
	f->unused_bytes = e - fin;
	return true;
}

static bool read_string(const struct cx *c, uint64_t addr, uint64_t esize,
			struct found *f, bool *skip)
{
	uint64_t w[3];
	if (!words(c, addr, w, 3))
		return false;
	uint64_t p = w[0], len = w[1], cap = w[2];
	if (p == addr + 16) {
		*skip = true;
		return true;
	}
	if (len > cap || cap >= UINT64_MAX / esize - 1)
		return false;
	uint32_t id = block_at(c, p);
	if (id == HS_NO_ALLOC || (cap + 1) * esize > c->heap->allocs[id].size)
		return false;
	f->size = len;
	f->element_bytes = len * esize;
	f->unused_bytes = (cap - len) * esize;
	return true;
}

static bool read_hash(struct cx *c, uint64_t addr, uint64_t esize,
		      struct found *f)
{
	uint64_t w[4];
	if (!words(c, addr, w, 4))
		return false;
	uint64_t buckets = w[0], nb = w[1], first = w[2], count = w[3];
	if (!nb || count > c->heap->nallocs)
		return false;
	if (buckets == addr + 48) {
		if (nb != 1)
			return false;
	} else {
		uint32_t id = block_at(c, buckets);
		if (id == HS_NO_ALLOC || nb > c->heap->allocs[id].size / 8)
			return false;
		f->bucket_bytes = nb * 8;
	}
	/* the nodes: count of them, then the end of the list */
	if (count > c->steps)
		return false;
	c->steps -= count;
	uint64_t p = first;
	for (uint64_t i = 0; i < count; i++) {
		uint32_t id = block_at(c, p);
		if (id == HS_NO_ALLOC || c->heap->allocs[id].size < esize ||
		    !hs_core_read_u64(c->core, p, &p))
			return false;
	}
	if (p)
		return false;
	f->size = count;
	f->element_bytes = count * esize;
	return true;
}

static bool read_tree(const struct cx *c, uint64_t addr, uint64_t esize,
		      struct found *f)
{
	uint64_t root, count;
	if (!hs_core_read_u64(c->core, addr + 16, &root) ||
	    !hs_core_read_u64(c->core, addr + 40, &count) || count > c->heap->nallocs)
		return false;
	if (!count != !root)
		return false;
	if (root) {
		uint32_t id = block_at(c, root);
		if (id == HS_NO_ALLOC || c->heap->allocs[id].size < esize)
			return false;
	}
	f->size = count;
	f->element_bytes = count * esize;
	return true;
}

static bool read_deque(struct cx *c, uint64_t addr, uint64_t esize,
		       struct found *f)
{
	uint64_t w[10];
	if (!words(c, addr, w, 10))
		return false;
	uint64_t map = w[0], msize = w[1];
	uint64_t scur = w[2], sfirst = w[3], slast = w[4], snode = w[5];
	uint64_t fcur = w[6], ffirst = w[7], flast = w[8], fnode = w[9];
	if (!map)
		return !msize && !snode && !fnode;  /* moved from */
	uint32_t id = block_at(c, map);
	if (id == HS_NO_ALLOC || !msize || msize > c->heap->allocs[id].size / 8)
		return false;
	uint64_t chunk = esize < 512 ? 512 / esize : 1;  /* elements */
	uint64_t end = map + msize * 8;
	if (snode < map || snode >= end || fnode < snode || fnode >= end ||
	    (snode - map) % 8 || (fnode - map) % 8)
		return false;
	if (slast - sfirst != chunk * esize || flast - ffirst != chunk * esize ||
	    scur < sfirst || scur > slast || fcur < ffirst || fcur > flast ||
	    (scur - sfirst) % esize || (fcur - ffirst) % esize)
		return false;
	uint64_t nchunks = (fnode - snode) / 8 + 1;
	uint64_t used_first = (slast - scur) / esize, used_last = (fcur - ffirst) / esize;
	uint64_t size;
	if (nchunks == 1) {
		if (fcur < scur)
			return false;
		size = (fcur - scur) / esize;
	} else {
		size = (nchunks - 2) * chunk + used_first + used_last;
	}
	if (c->collect && nchunks <= c->steps) {
		c->steps -= nchunks;
		/* the chunks' live parts: from cur in the first, to cur in
		 * the last */
		for (uint64_t n = snode; n <= fnode; n += 8) {
			uint64_t chunk_addr;
			if (!hs_core_read_u64(c->core, n, &chunk_addr))
				break;
			uint32_t cid = block_at(c, chunk_addr);
			if (cid == HS_NO_ALLOC)
				continue;
			uint64_t lo = n == snode ? scur - sfirst : 0;
			uint64_t hi = n == fnode ? fcur - ffirst : chunk * esize;
			if ((n == snode && chunk_addr != sfirst) ||
			    (n == fnode && chunk_addr != ffirst))
				continue;
			note_live(c, cid, lo, hi);
		}
	}
	f->size = size;
	f->element_bytes = size * esize;
	f->unused_bytes = (nchunks * chunk - size) * esize;
	f->bucket_bytes = msize * 8;
	return true;
}

static struct hs_error *row_for(struct cx *c, const struct hs_dcontainer *dc,
				struct hs_container_row **ret)
{
	uint32_t *slot;
	bool fresh;
	struct hs_error *err = cx_rowmap_insert(&c->rowof, (uint64_t)dc->type->index + 1,
					       &slot, &fresh);
	if (err)
		return err;
	if (fresh) {
		struct hs_containers *o = c->out;
		if (o->nrows == c->caprows) {
			size_t cap = c->caprows ? 2 * c->caprows : 16;
			struct hs_container_row *v = hs_realloc(o->rows, cap * sizeof(*v));
			if (!v)
				return &hs_error_nomem;
			o->rows = v;
			c->caprows = cap;
		}
		struct hs_container_row *r = &o->rows[o->nrows];
		memset(r, 0, sizeof(*r));
		r->name = dc->type->name;
		r->kind = dc->kind;
		r->type = dc->type->index;
		*slot = (uint32_t)++o->nrows;
	}
	*ret = &c->out->rows[*slot - 1];
	return NULL;
}

static struct hs_error *one(struct cx *c, const struct hs_dcontainer *dc, uint64_t addr)
{
	bool fresh;
	struct hs_error *err = cx_seen_add(&c->seen, addr, &fresh);
	if (err || !fresh)
		return err;
	struct found f = {0};
	/* an element size from DWARF: count * esize must not wrap (counts
	 * are at most the heap's blocks, below 2^32) */
	if (!dc->esize || dc->esize >= 1ull << 31) {
		c->out->invalid += !c->collect;
		return NULL;
	}
	if (c->collect) {
		/* only what owns blocks whose contents are typed */
		if (dc->kind == HS_DC_VECTOR)
			read_vector(c, addr, dc->esize, &f);
		else if (dc->kind == HS_DC_DEQUE)
			read_deque(c, addr, dc->esize, &f);
		err = c->err;
		c->err = NULL;
		return err;
	}
	bool ok, skip = false;
	switch (dc->kind) {
	case HS_DC_VECTOR: ok = read_vector(c, addr, dc->esize, &f); break;
	case HS_DC_STRING: ok = read_string(c, addr, dc->esize, &f, &skip); break;
	case HS_DC_HASH: ok = read_hash(c, addr, dc->esize, &f); break;
	case HS_DC_TREE: ok = read_tree(c, addr, dc->esize, &f); break;
	case HS_DC_DEQUE: ok = read_deque(c, addr, dc->esize, &f); break;
	default: ok = false;
	}
	if (!ok) {
		c->out->invalid++;
		return NULL;
	}
	if (skip) {
		c->out->inline_strings++;
		return NULL;
	}
	struct hs_container_row *r;
	if ((err = row_for(c, dc, &r)))
		return err;
	c->out->count++;
	r->count++;
	r->elements += f.size;
	r->hist[hs_cx_bucket(f.size)]++;
	r->element_bytes += f.element_bytes;
	r->unused_bytes += f.unused_bytes;
	r->bucket_bytes += f.bucket_bytes;
	for (unsigned k = 0; k < HS_CX_NSBO; k++)
		if (f.size <= hs_cx_sbo_size(k)) {
			r->sbo_count[k]++;
			r->sbo_bytes[k] += f.element_bytes + f.unused_bytes;
		}
	return NULL;
}

/* The containers of an object of type d at addr, limit bytes of it. */
static struct hs_error *scan(struct cx *c, struct hs_dtype *d, uint64_t addr,
			     uint64_t limit)
{
	const struct hs_dcontainer *v;
	size_t n;
	struct hs_error *err = hs_dtype_containers(c->types->reg, d, &v, &n);
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t csize = v[i].type->size;
		for (uint32_t k = 0; k < v[i].count && !err; k++) {
			uint64_t off = v[i].offset + k * v[i].stride;
			if (off + csize > limit)
				break;
			err = one(c, &v[i], addr + off);
		}
	}
	return err;
}

/* Typed roots: variables with a fixed address, TLS variables of every
 * thread, locals of every unwound frame (as analyzers/types seeds them). */
static struct hs_error *find_roots(struct cx *c, struct hs_dwarf *dw)
{
	struct hs_dtypes *reg = c->types->reg;
	struct hs_error *err = NULL;
	for (size_t i = 0; i < hs_dwarf_num_modules(dw) && !err; i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		hs_dwarf_check_debug(dw, m);
		if (m->debug_source == HS_DEBUG_NONE)
			continue;
		err = hs_dtypes_variables(reg, m, NULL, NULL, &c->vars, &c->nvars);
	}
	struct hs_thread_frames *tf = NULL;
	size_t ntf = 0;
	struct hs_error *uerr = err ? NULL : hs_dwarf_unwind_all(dw, c->core, &tf, &ntf);
	if (uerr == &hs_error_nomem)
		err = uerr;
	else
		hs_error_destroy(uerr);
	for (size_t k = 0; k < ntf && !err; k++) {
		for (size_t f = 0; f + 1 < tf[k].n && !err; f++) {
			const struct hs_frame *fr = &tf[k].frames[f];
			struct hs_module *m = hs_dwarf_module_at(dw, fr->pc);
			if (!m || m->debug_source == HS_DEBUG_NONE || !tf[k].frames[f + 1].sp)
				continue;
			err = hs_dtypes_frame_locals(reg, m, fr->pc, fr->activation || f == 0,
						     tf[k].frames[f + 1].sp, &c->vars, &c->nvars);
		}
	}
	hs_dwarf_frames_free(tf, ntf);
	return err;
}

static struct hs_error *scan_roots(struct cx *c, struct hs_dwarf *dw)
{
	struct hs_error *err = NULL;
	for (size_t i = 0; i < c->nvars && !err; i++) {
		struct hs_dvar *v = &c->vars[i];
		uint64_t limit = v->type->size;
		if (!limit)
			continue;
		if (!v->tls) {
			if (hs_heap_in_regions(c->heap, v->addr, limit))
				continue;
			c->out->roots += !c->collect;
			err = scan(c, v->type, v->addr, limit);
			continue;
		}
		for (size_t k = 0; k < c->core->nthreads && !err; k++) {
			uint64_t fs = c->core->threads[k].regs[HS_REG_FS_BASE], block;
			if (fs && hs_dwarf_tls_block(dw, c->core, v->mod, fs, &block)) {
				c->out->roots += !c->collect;
				err = scan(c, v->type, block + v->addr, limit);
			}
		}
	}
	return err;
}

static struct hs_error *scan_blocks(struct cx *c)
{
	const struct hs_heap *heap = c->heap;
	for (uint32_t id = 0; id < c->graph->n; id++) {
		struct hs_dtype *d = hs_types_of(c->types, id);
		if (!d || !d->size)
			continue;
		const struct hs_dcontainer *v;
		size_t n;
		struct hs_error *err = hs_dtype_containers(c->types->reg, d, &v, &n);
		if (err)
			return err;
		if (!n)
			continue;
		if (!c->collect)
			c->out->blocks++;
		const struct hs_alloc *a = &heap->allocs[id];
		uint64_t start = hs_types_start(c->types, id);
		uint64_t k = hs_types_count(c->types, heap, id);
		uint64_t lo = 0, hi = a->size;
		const struct cx_live *live = c->collect ? NULL :
			cx_livemap_find(&c->live, (uint64_t)id + 1);
		if (live) {
			lo = live->lo;
			hi = live->hi < hi ? live->hi : hi;
		}
		for (uint64_t e = 0; e < k; e++) {
			uint64_t off = start + e * d->size;
			if (off + d->size > hi)
				break;
			if (off < lo)
				continue;
			if ((err = scan(c, d, a->addr + off, d->size)))
				return err;
		}
	}
	return NULL;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct hs_container_row *x = a, *y = b;
	uint64_t bx = x->element_bytes + x->unused_bytes + x->bucket_bytes;
	uint64_t by = y->element_bytes + y->unused_bytes + y->bucket_bytes;
	if (bx != by)
		return bx > by ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct hs_error *hs_containers_compute(const struct hs_core *core,
				       struct hs_dwarf *dw,
				       const struct hs_heap *heap,
				       const struct hs_graph *graph,
				       const struct hs_types *types,
				       struct hs_containers **ret)
{
	struct hs_containers *out = hs_calloc(1, sizeof(*out));
	if (!out)
		return &hs_error_nomem;
	struct cx c = {.core = core, .heap = heap, .graph = graph, .types = types,
		       .out = out};
	struct hs_error *err = find_roots(&c, dw);
	for (int pass = 0; pass < 2 && !err; pass++) {
		c.collect = pass == 0;
		c.steps = 2 * (uint64_t)heap->nallocs + 4096;
		cx_seen_free(&c.seen);
		err = scan_roots(&c, dw);
		if (!err)
			err = scan_blocks(&c);
	}
	cx_seen_free(&c.seen);
	cx_rowmap_free(&c.rowof);
	cx_livemap_free(&c.live);
	hs_dvars_free(c.vars, c.nvars);
	if (err) {
		hs_containers_destroy(out);
		return err;
	}
	hs_sort(out->rows, out->nrows, sizeof(*out->rows), cmp_rows);
	*ret = out;
	return NULL;
}

void hs_containers_destroy(struct hs_containers *c)
{
	if (!c)
		return;
	free(c->rows);
	free(c);
}
