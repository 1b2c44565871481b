/* What each allocation is (vtables and RTTI, DWARF propagation, typed
 * interior pointers, leaked blocks by their contents): see
 * analyzers/types.h for the rules and their order. */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/types.h"
#include "analyzers/python.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/hashtab.h"
#include "src/parallel.h"
#include "src/rankset.h"
#include "src/vector.h"

/* libstdc++'s demangler (the C++ ABI's own), the one function heapsift
 * needs from it.  The library is loaded when a C++ name is first to be
 * demangled, not at start: mapping and relocating it (and libm and
 * libgcc_s with it) cost every start about 1.5 ms, and programs in C have
 * no vtable symbols (docs/dependencies.md).  Each computation loads it
 * for itself and lets it go at its end. */
#define CXXABI_SONAME "libstdc++.so.6"

struct demangler {
	bool tried;
	void *lib;
	char *(*demangle)(const char *mangled, char *buf, size_t *len, int *status);
};

struct vtable {
	uint64_t start, end;
	char *class_name;       /* demangled */
};

HS_VECTOR(work_vector, uint32_t)

struct ctx {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	const struct hs_graph *graph;
	const struct hs_pyobjects *py;
	struct hs_log *log;
	struct hs_types *t;
	/* per allocation: 0 none, 1 dwarf, 2 vtable; NULL while inferring
	 * (rule 6 types untyped blocks only: nothing to weigh against) */
	uint8_t *from;
	struct work_vector work;        /* blocks whose type is new */
	/* typed objects inside blocks, past their start (the typed rule):
	 * scanned once per block */
	struct inner {
		uint64_t addr;
		struct hs_dtype *d;
		uint32_t id;
	} *inner;
	size_t ninner, capinner;
	uint64_t *inner_seen;   /* one bit per allocation */
	struct vtable *vt;
	size_t nvt;
	uint64_t ti_vtables[3]; /* __class_type_info, __si_..., __vmi_... vtables */
	size_t nti;
	/* rule 4: only leaked untyped blocks take types, with the
	 * confidence of the block being scanned */
	const uint8_t *reach;
	uint8_t cur_conf;
	struct demangler *dm;
};

static int cmp_vt(const void *a, const void *b)
{
	const struct vtable *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The demangled name (malloc'd), or NULL: not a name, or no demangler
 * (said once). */
static char *demangle(const struct ctx *c, const char *mangled)
{
	struct demangler *dm = c->dm;
	if (!dm->tried) {
		dm->tried = true;
		dm->lib = dlopen(CXXABI_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (dm->lib)
			dm->demangle = (__typeof__(dm->demangle))dlsym(dm->lib, "__cxa_demangle");
		if (!dm->demangle) {
			/* dlerror names the file or the symbol */
			const char *why = dlerror();
			hs_log_warn(c->log, "C++ classes left unnamed: %s",
				    why ? why : CXXABI_SONAME);
		}
	}
	if (!dm->demangle)
		return NULL;
	int status = 0;
	char *s = dm->demangle(mangled, NULL, NULL, &status);
	return status == 0 ? s : NULL;
}

static void demangler_fini(struct demangler *dm)
{
	if (dm->lib)
		dlclose(dm->lib);
	*dm = (struct demangler){0};
}

static struct hs_error *collect_vtables(struct ctx *c)
{
	size_t cap = 0;
	for (size_t i = 0; i < hs_dwarf_num_modules(c->dw); i++) {
		struct hs_module *m = hs_dwarf_module(c->dw, i);
		const struct hs_symbol *syms;
		size_t n;
		struct hs_error *err = hs_dwarf_data_symbols(c->dw, m, &syms, &n);
		if (err)
			return err;
		for (size_t k = 0; k < n; k++) {
			const char *name = syms[k].name;
			if (strncmp(name, "_ZTV", 4))
				continue;
			char *d = demangle(c, name);
			if (!d)
				continue;
			/* "vtable for shop::Cart" */
			const char *cls = !strncmp(d, "vtable for ", 11) ? d + 11 : d;
			if (!strncmp(name, "_ZTVN10__cxxabiv1", 17) && c->nti < 3 &&
			    (!strcmp(cls, "__cxxabiv1::__class_type_info") ||
			     !strcmp(cls, "__cxxabiv1::__si_class_type_info") ||
			     !strcmp(cls, "__cxxabiv1::__vmi_class_type_info")))
				c->ti_vtables[c->nti++] = syms[k].addr + 16;
			if (c->nvt == cap) {
				cap = cap ? 2 * cap : 256;
				struct vtable *v = hs_realloc(c->vt, cap * sizeof(*v));
				if (!v) {
					free(d);
					return &hs_error_nomem;
				}
				c->vt = v;
			}
			c->vt[c->nvt].start = syms[k].addr;
			c->vt[c->nvt].end = syms[k].addr + syms[k].size;
			c->vt[c->nvt].class_name = strdup(cls);
			free(d);
			if (!c->vt[c->nvt].class_name)
				return &hs_error_nomem;
			c->nvt++;
		}
	}
	hs_sort(c->vt, c->nvt, sizeof(*c->vt), cmp_vt);
	c->t->nvtables = c->nvt;
	return NULL;
}

static const struct vtable *find_vtable(const struct ctx *c, uint64_t p)
{
	size_t lo = 0, hi = c->nvt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p < c->vt[mid].start)
			hi = mid;
		else if (p >= c->vt[mid].end)
			lo = mid + 1;
		else
			return &c->vt[mid];
	}
	return NULL;
}

/* The class named by a vptr's RTTI, when no vtable symbol covers it. */
static char *rtti_class(const struct ctx *c, uint64_t vptr)
{
	uint64_t ti, ti_vptr, name_ptr;
	if (!c->nti || !hs_core_read_u64(c->core, vptr - 8, &ti) ||
	    !hs_core_read_u64(c->core, ti, &ti_vptr) ||
	    !hs_core_read_u64(c->core, ti + 8, &name_ptr))
		return NULL;
	bool is_ti = false;
	for (size_t i = 0; i < c->nti; i++)
		is_ti |= ti_vptr == c->ti_vtables[i];
	if (!is_ti)
		return NULL;
	char name[256];
	size_t n = 0;
	for (; n + 1 < sizeof(name); n++) {
		uint8_t ch;
		if (!hs_core_read_quiet(c->core, name_ptr + n, &ch, 1) &&
		    !hs_dwarf_read_file(c->dw, name_ptr + n, &ch, 1))
			return NULL;
		name[n] = (char)ch;
		if (!ch)
			break;
	}
	name[n] = 0;
	if (name[0] == '*')  /* local classes: "*N..." */
		memmove(name, name + 1, n);
	return demangle(c, name);
}


/* How a block got its type: a typed pointer to its start, a typed pointer
 * into it taken as an array element, a vtable. */
enum { FROM_NONE, FROM_DWARF, FROM_ELEMENT, FROM_VTABLE };

/* Two types of one size for one block: which to keep, without a warning
 * when the evidence says which.  A pointer to the block's start says more
 * than one into it (glibc's nss_action_list points to the actions after
 * a wrapper's header); a struct says more than a scalar (tzfile's
 * transitions, time_t[], and types, struct ttinfo[], start together when
 * there is no transition).  Returns 1 to take the new type, 0 to keep the
 * old, -1 when nothing decides (a conflict). */
static int prefer(int old_from, const struct hs_dtype *old, int from,
		  const struct hs_dtype *d)
{
	if (old_from == FROM_ELEMENT && from == FROM_DWARF)
		return 1;
	if (old_from == FROM_DWARF && from == FROM_ELEMENT)
		return 0;
	bool agg_old = hs_dtype_is_aggregate(old), agg_new = hs_dtype_is_aggregate(d);
	if (agg_new != agg_old)
		return agg_new;
	return agg_new ? -1 : 0;
}

/* The 16-bit table made 32-bit (see hs_types.type_of16). */
static bool widen(struct hs_types *t)
{
	size_t n = (size_t)t->nallocs + 1;
	uint32_t *w = hs_malloc(n * sizeof(*w));
	if (!w)
		return false;
	hs_vector_hugepages(w, n * sizeof(*w));
	for (size_t i = 0; i < n; i++)
		w[i] = (uint32_t)t->type_of16[i] - 1;
	free(t->type_of16);
	t->type_of16 = NULL;
	t->type_of = w;
	return true;
}

/* Sets allocation id's registry index; false: out of memory (widening). */
static bool set_type(struct hs_types *t, uint32_t id, uint32_t index)
{
	if (t->type_of16) {
		if (index < t->narrow_max) {
			t->type_of16[id] = (uint16_t)(index + 1);
			return true;
		}
		if (!widen(t))
			return false;
	}
	t->type_of[id] = index;
	return true;
}

/* Gives allocation id the type d (see the rules in types.h). */
static bool assign(struct ctx *c, uint32_t id, struct hs_dtype *d, int from)
{
	struct hs_types *t = c->t;
	const struct hs_alloc *a = &c->heap->allocs[id];
	if (!hs_alloc_in_graph(a) || (d->size && d->size > a->size))
		return true;  /* does not fit: a cast, not this type */
	if (c->reach) {
		/* inferring: leaked untyped blocks only, never a conflict */
		if (hs_types_cur(t, id) != HS_NO_TYPE ||
		    (c->reach[id] != HS_REACH_LEAK_ROOT && c->reach[id] != HS_REACH_INDIRECT))
			return true;
		if (!set_type(t, id, d->index))
			return false;
		t->typed++;
		t->inferred[id] = c->cur_conf;
		/* (each block once: it is untyped only until now) */
		t->inferred_sure += (c->cur_conf & HS_INFER_LEVEL) == HS_INFER_SURE;
		t->inferred_guess += (c->cur_conf & HS_INFER_LEVEL) == HS_INFER_GUESS;
		return !work_vector_push(&c->work, id);
	}
	uint32_t cur = hs_types_cur(t, id);
	if (cur == d->index)
		return true;
	if (cur != HS_NO_TYPE) {
		struct hs_dtype *old = t->reg->v[cur];
		if (c->from[id] == FROM_VTABLE && from != FROM_VTABLE)
			return true;
		int take = d->size == old->size && strcmp(d->name, old->name) &&
			from != FROM_VTABLE ? prefer(c->from[id], old, from, d) : 0;
		if (!(from == FROM_VTABLE && c->from[id] != FROM_VTABLE) &&
		    d->size <= old->size && take != 1) {
			if (take < 0) {
				if (!t->conflicts++) {
					char *ex;
					if (asprintf(&ex, "%#llx is both %s and %s",
						     (unsigned long long)a->addr, old->name,
						     d->name) >= 0)
						t->conflict_example = ex;
				}
			}
			return true;
		}
	} else {
		t->typed++;
	}
	if (hs_types_cur(t, id) != HS_NO_TYPE)
		t->cookie[id / 64] &= ~(1ull << (id % 64));  /* retyped: from its start */
	if (!set_type(t, id, d->index))
		return false;
	c->from[id] = (uint8_t)from;
	/* a type of no known size has no pointers to follow (propagate), and
	 * as a vtable's or CPython's it stays the block's (only another of
	 * those could change it, and each block is seeded once): CPython's
	 * million objects need no place on the stack */
	if (!d->size && from == FROM_VTABLE)
		return true;
	return !work_vector_push(&c->work, id);
}

static bool add_hold(struct ctx *c, uint32_t holder, uint32_t target, uint64_t v)
{
	struct hs_types *t = c->t;
	if (t->nholds == t->capholds) {
		size_t cap = t->capholds ? 2 * t->capholds : 64;
		struct hs_types_hold *h = hs_realloc(t->holds, cap * sizeof(*h));
		if (!h)
			return false;
		t->holds = h;
		t->capholds = cap;
	}
	t->holds[t->nholds++] = (struct hs_types_hold){holder, target, v};
	return true;
}

/* A typed pointer k bytes into a block, with a whole `pointee` struct,
 * class or union from there to the block's end: the block is held (the
 * typed rule), and the object there is scanned for its own pointers. */
static bool typed_interior(struct ctx *c, uint32_t holder, uint32_t id,
			   uint64_t v, struct hs_dtype *pointee)
{
	const struct hs_alloc *a = &c->heap->allocs[id];
	uint64_t off = v - a->addr;
	if (!hs_alloc_in_graph(a) || !pointee->size || !hs_dtype_is_aggregate(pointee) ||
	    pointee->size > a->size - off)
		return true;
	if (!add_hold(c, holder, id, v))
		return false;
	/* new T[n]: the count, then n T's that fill the block as the
	 * allocator rounds it */
	uint64_t n;
	if (off == 8 && hs_types_cur(c->t, id) == HS_NO_TYPE &&
	    hs_core_read_u64(c->core, a->addr, &n) && n >= 1 &&
	    n <= (a->size - 8) / pointee->size &&
	    hs_heap_size_class(c->heap, 8 + n * pointee->size) == a->size) {
		c->t->cookie[id / 64] |= 1ull << (id % 64);
		if (!assign(c, id, pointee, FROM_DWARF))
			return false;
		if (hs_types_cur(c->t, id) != pointee->index)
			c->t->cookie[id / 64] &= ~(1ull << (id % 64));
		else
			return true;  /* its elements are scanned as the block's */
	}
	if (c->inner_seen[id / 64] >> (id % 64) & 1)
		return true;
	c->inner_seen[id / 64] |= 1ull << (id % 64);
	if (c->ninner == c->capinner) {
		size_t cap = c->capinner ? 2 * c->capinner : 256;
		struct inner *w = hs_realloc(c->inner, cap * sizeof(*w));
		if (!w)
			return false;
		c->inner = w;
		c->capinner = cap;
	}
	c->inner[c->ninner++] = (struct inner){v, pointee, id};
	return true;
}

/* A pointer value typed `pointee`, in allocation holder (HS_NO_ALLOC: in
 * a root): type its target. */
static bool follow(struct ctx *c, uint64_t v, const struct hs_graph_probe *probe,
		   struct hs_dtype *pointee, uint32_t holder)
{
	if (v < c->graph->map.lo || v >= c->graph->map.hi)
		return true;
	bool interior;
	uint32_t id = hs_graph_probe_target(c->graph, v, probe, &interior);
	if (id == HS_NO_ALLOC)
		return true;
	if (interior) {
		/* (a block holds nothing by pointing into itself; inferring,
		 * after the mark, there is nothing left to hold) */
		if (id != holder && !c->reach && !typed_interior(c, holder, id, v, pointee))
			return false;
		/* element k of an array */
		uint64_t off = v - c->heap->allocs[id].addr;
		if (!pointee->size || off % pointee->size)
			return true;
	}
	return assign(c, id, pointee, interior ? FROM_ELEMENT : FROM_DWARF);
}

/* Pointer values of one object waiting to be followed, in slot order. */
enum { SLOT_BATCH = 16 };

struct slot {
	uint64_t v;
	struct hs_dtype *pointee;
	struct hs_graph_probe probe;
};

/* Follows the batch's pointers in order, after asking the cache for what
 * each lookup and assign will read (see scan_object). */
static bool follow_batch(struct ctx *c, struct slot *b, size_t nb,
			 uint32_t holder)
{
	c->t->followed += nb;
	for (size_t j = 0; j < nb; j++) {
		uint32_t k = hs_graph_prefetch_target(c->graph, b[j].v, &b[j].probe);
		if (k != HS_NO_ALLOC) {
			if (c->t->type_of16)
				__builtin_prefetch(&c->t->type_of16[k]);
			else
				__builtin_prefetch(&c->t->type_of[k]);
			if (c->from)
				__builtin_prefetch(&c->from[k]);
			__builtin_prefetch(&c->t->cookie[k / 64]);
		}
	}
	for (size_t j = 0; j < nb; j++)
		if (!follow(c, b[j].v, &b[j].probe, b[j].pointee, holder))
			return false;
	return true;
}

/* The pointer slots of `count` typed objects side by side from addr (the
 * elements of an array; one object, in a block or a root), each of limit
 * bytes at most.
 *
 * Propagation goes depth first: the next block scanned is, most often, the
 * one the last pointer led to, so each step waits for memory that the step
 * before found (the block's words in the core, the address map, the
 * allocation record, the block's type), and on a heap much larger than the
 * cache every such read is a miss.  So the slots' values are read first,
 * up to SLOT_BATCH at a time, from one object or from several elements of
 * an array (a table of pointers: one slot each), and the memory their
 * lookups and the blocks they point to will need is asked for before the
 * first is followed: the misses overlap instead of following one another.
 * The pointers are followed in the same order as without the batch, so
 * the types are the same. */
static struct hs_error *scan_object(struct ctx *c, struct hs_dtype *d,
				    uint64_t addr, uint64_t limit, uint64_t count,
				    uint32_t holder)
{
	const struct hs_dptr *p;
	size_t n;
	struct hs_error *err = hs_dtype_pointers(c->t->reg, d, &p, &n);
	if (err)
		return err;
	if (!n)
		return NULL;
	/* the objects in one piece of the core (the usual case), else each
	 * on its own, else word by word */
	const uint8_t *all = count > 1 ? hs_core_ptr(c->core, addr, count * limit) : NULL;
	struct slot b[SLOT_BATCH];
	size_t nb = 0;
	for (uint64_t e = 0; e < count; e++) {
		uint64_t at = addr + e * limit;
		const uint8_t *obj = all ? all + e * limit : hs_core_ptr(c->core, at, limit);
		for (size_t i = 0; i < n; i++) {
			for (uint32_t k = 0; k < p[i].count; k++) {
				uint64_t off = p[i].offset + k * p[i].stride;
				if (off + 8 > limit)
					break;
				uint64_t v;
				if (obj)
					memcpy(&v, obj + off, 8);
				else if (!hs_core_read_u64(c->core, at + off, &v))
					continue;
				if (v < c->graph->map.lo || v >= c->graph->map.hi)
					continue;  /* not into the heap: no lookup */
				b[nb] = (struct slot){.v = v, .pointee = p[i].pointee};
				hs_graph_prefetch(c->graph, v, &b[nb].probe);
				nb++;
				/* the words there, scanned next if v is a block's start */
				const uint8_t *there = hs_core_ptr(c->core, v, 8);
				if (there)
					__builtin_prefetch(there);
				if (nb == SLOT_BATCH) {
					if (!follow_batch(c, b, nb, holder))
						return &hs_error_nomem;
					nb = 0;
				}
			}
		}
	}
	if (!follow_batch(c, b, nb, holder))
		return &hs_error_nomem;
	return NULL;
}

static struct hs_error *seed_vtables(struct ctx *c)
{
	struct hs_types *t = c->t;
	if (!c->nvt && !c->nti)
		return NULL;
	uint64_t vlo = c->nvt ? c->vt[0].start : UINT64_MAX;
	uint64_t vhi = c->nvt ? c->vt[c->nvt - 1].end : 0;
	for (uint32_t id = 0; id < c->graph->n; id++) {
		const struct hs_alloc *a = &c->heap->allocs[id];
		if (!hs_alloc_in_graph(a) || a->size < 8)
			continue;
		uint64_t w0, top;
		const void *first = hs_core_ptr(c->core, a->addr, 8);
		if (first)
			memcpy(&w0, first, 8);
		else if (!hs_core_read_u64(c->core, a->addr, &w0))
			continue;
		if (w0 < 16)
			continue;
		/* a heap pointer is no vptr */
		if (w0 >= c->graph->map.lo && w0 < c->graph->map.hi)
			continue;
		const struct vtable *vt = w0 >= vlo && w0 < vhi ? find_vtable(c, w0) : NULL;
		char *rtti = NULL;
		const char *cls;
		if (vt) {
			/* the primary vptr: offset-to-top 0, past the header */
			if (w0 < vt->start + 16 ||
			    (hs_core_read_u64(c->core, w0 - 16, &top) && top != 0))
				continue;
			cls = vt->class_name;
		} else {
			if (!hs_core_find_segment(c->core, w0) ||
			    !hs_core_read_u64(c->core, w0 - 16, &top) || top != 0 ||
			    !(rtti = rtti_class(c, w0)))
				continue;
			cls = rtti;
		}
		struct hs_dtype *d;
		struct hs_error *err = hs_dtypes_named(t->reg, cls, 0, &d);
		free(rtti);
		if (err)
			return err;
		d->from_vtable = true;
		uint32_t before = hs_types_cur(t, id);
		if (!assign(c, id, d, FROM_VTABLE))
			return &hs_error_nomem;
		/* an array of such objects: each element starts with the vptr */
		uint32_t k = 1;
		while (d->size && (k + 1) * d->size <= a->size) {
			uint64_t w;
			if (!hs_core_read_u64(c->core, a->addr + k * d->size, &w) || w != w0)
				break;
			k++;
		}
		if (k > 1 && hs_types_cur(t, id) == d->index) {
			if (t->nvarrays == t->capvarrays) {
				size_t cap = t->capvarrays ? 2 * t->capvarrays : 64;
				struct hs_types_count *v = hs_realloc(t->varrays, cap * sizeof(*v));
				if (!v)
					return &hs_error_nomem;
				t->varrays = v;
				t->capvarrays = cap;
			}
			t->varrays[t->nvarrays++] = (struct hs_types_count){id, k};
		}
		if (hs_types_cur(t, id) != before) {
			if (vt)
				t->from_vtable++;
			else
				t->from_rtti++;
		}
	}
	return NULL;
}

/* Rule 1 for CPython: a block that holds a Python object is of its
 * Python type (analyzers/python.h), as strong as a vtable. */
static struct hs_error *seed_python(struct ctx *c)
{
	const struct hs_pyobjects *py = c->py;
	struct hs_error *err = NULL;
	if (!py)
		return NULL;
	struct hs_types *t = c->t;
	struct hs_dtype **d = hs_calloc(py->ntypes ? py->ntypes : 1, sizeof(*d));
	if (!d)
		return &hs_error_nomem;
	for (uint32_t id = 0; id < c->graph->n && !err; id++) {
		uint32_t k = hs_py_kind(py, id);
		if (k == HS_PY_NONE)
			continue;
		uint32_t ti = hs_py_type_index(k);
		if (!d[ti] && (err = hs_dtypes_object(t->reg, py->types[ti].name, &d[ti])))
			break;
		uint32_t before = hs_types_cur(t, id);
		if (!assign(c, id, d[ti], FROM_VTABLE))
			err = &hs_error_nomem;
		else if (hs_types_cur(t, id) != before)
			t->from_python++;
	}
	free(d);
	return err;
}

/* May the variable at [addr, addr + size) type a block: does a pointer
 * slot's worth of its bytes, at any offset, point into the heap?  Only such
 * a value is followed (scan_object), so a variable without one is not
 * typed at all. */
static bool var_holds_heap(void *arg, uint64_t addr, uint64_t size)
{
	const struct ctx *c = arg;
	uint64_t lo = c->graph->map.lo, hi = c->graph->map.hi, v;
	if (size < 8)
		return false;
	const uint8_t *p = hs_core_ptr(c->core, addr, size);
	for (uint64_t off = 0; off + 8 <= size; off++) {
		if (p)
			memcpy(&v, p + off, 8);
		else if (!hs_core_read_quiet(c->core, addr + off, &v, 8))
			continue;
		if (v >= lo && v < hi)
			return true;
	}
	return false;
}

static struct hs_error *seed_variables(struct ctx *c)
{
	struct hs_types *t = c->t;
	struct hs_dvar *vars = NULL;
	size_t nvars = 0;
	struct hs_error *err = NULL;
	for (size_t i = 0; i < hs_dwarf_num_modules(c->dw) && !err; i++) {
		struct hs_module *m = hs_dwarf_module(c->dw, i);
		hs_dwarf_check_debug(c->dw, m);
		if (m->debug_source == HS_DEBUG_NONE)
			continue;
		err = hs_dtypes_variables(t->reg, m, var_holds_heap, c, &vars, &nvars);
	}
	/* locals of every unwound frame; frame k's canonical frame address is
	 * the stack pointer of frame k + 1 (its caller) */
	struct hs_thread_frames *tf = NULL;
	size_t ntf = 0;
	struct hs_error *uerr = err ? NULL : hs_dwarf_unwind_all(c->dw, c->core, &tf, &ntf);
	if (uerr == &hs_error_nomem)
		err = uerr;
	else
		hs_error_destroy(uerr);
	for (size_t k = 0; k < ntf && !err; k++) {
		for (size_t f = 0; f + 1 < tf[k].n && !err; f++) {
			const struct hs_frame *fr = &tf[k].frames[f];
			struct hs_module *m = hs_dwarf_module_at(c->dw, fr->pc);
			if (!m || m->debug_source == HS_DEBUG_NONE || !tf[k].frames[f + 1].sp)
				continue;
			err = hs_dtypes_frame_locals(t->reg, m, fr->pc, fr->activation || f == 0,
						     tf[k].frames[f + 1].sp, &vars, &nvars);
		}
	}
	hs_dwarf_frames_free(tf, ntf);
	t->nvariables = nvars;
	for (size_t i = 0; i < nvars && !err; i++) {
		struct hs_dvar *v = &vars[i];
		uint64_t limit = v->type->size ? v->type->size : 8;
		if (!v->tls && hs_heap_in_regions(c->heap, v->addr, limit))
			continue;  /* main_arena, mp_: never a root */
		if (!v->tls) {
			err = scan_object(c, v->type, v->addr, limit, 1, HS_NO_ALLOC);
			continue;
		}
		for (size_t k = 0; k < c->core->nthreads && !err; k++) {
			uint64_t fs = c->core->threads[k].regs[HS_REG_FS_BASE], block;
			if (fs && hs_dwarf_tls_block(c->dw, c->core, v->mod, fs, &block))
				err = scan_object(c, v->type, block + v->addr, limit, 1,
						  HS_NO_ALLOC);
		}
	}
	hs_dvars_free(vars, nvars);
	return err;
}

static struct hs_error *propagate(struct ctx *c)
{
	struct hs_types *t = c->t;
	uint64_t scanned = 0;
	while (c->work.n || c->ninner) {
		if (!(++scanned & 0x3fff))
			hs_log_progress(c->log, c->reach ? "typing leaked blocks" : "typing blocks",
					"objects", scanned, 0);
		if (!c->work.n) {
			struct inner in = c->inner[--c->ninner];
			struct hs_error *err = scan_object(c, in.d, in.addr, in.d->size, 1, in.id);
			if (err)
				return err;
			continue;
		}
		uint32_t id = c->work.v[--c->work.n];
		struct hs_dtype *d = t->reg->v[hs_types_cur(t, id)];
		if (c->reach)
			c->cur_conf = t->inferred[id] & HS_INFER_LEVEL;
		const struct hs_alloc *a = &c->heap->allocs[id];
		if (!d->size)
			continue;
		/* a type without pointers (a char[] buffer: one element per
		 * byte) has nothing to follow in any element */
		const struct hs_dptr *p;
		size_t np;
		struct hs_error *err = hs_dtype_pointers(t->reg, d, &p, &np);
		if (err)
			return err;
		if (!np)
			continue;
		uint64_t k = hs_types_count(t, c->heap, id), at = a->addr + hs_types_start(t, id);
		if ((err = scan_object(c, d, at, d->size, k, id)))
			return err;
	}
	return NULL;
}

/* A block typed by the vptr at its start that is much larger than its class
 * and not an array of it (fewer than half its bytes are elements that start
 * with that vptr) is a pool's slab whose first object happens to be of that
 * class: "slab of T", a type of its own, so that `types` does not count
 * 4 KiB as one T.  Classes of unknown size (no DWARF) are left alone. */
static struct hs_error *name_slabs(struct ctx *c)
{
	struct hs_types *t = c->t;
	for (uint32_t id = 0; id < c->graph->n; id++) {
		if (c->from[id] != FROM_VTABLE)
			continue;
		struct hs_dtype *d = t->reg->v[hs_types_cur(t, id)];
		uint64_t size = c->heap->allocs[id].size;
		uint64_t k = hs_types_count(t, c->heap, id);
		if (!d->size || size / 4 < d->size || 2 * k * d->size >= size)
			continue;
		char *name;
		if (asprintf(&name, "slab of %s", d->name) < 0)
			return &hs_error_nomem;
		struct hs_dtype *slab;
		struct hs_error *err = hs_dtypes_named(t->reg, name, 0, &slab);
		free(name);
		if (err)
			return err;
		if (!set_type(t, id, slab->index))
			return &hs_error_nomem;
		t->slabs++;
	}
	return NULL;
}

struct hs_error *hs_types_compute(const struct hs_core *core,
				  struct hs_dwarf *dw,
				  const struct hs_heap *heap,
				  const struct hs_graph *graph,
				  const struct hs_pyobjects *py,
				  uint32_t narrow_max,
				  struct hs_log *log, struct hs_types **ret)
{
	struct hs_types *t = hs_calloc(1, sizeof(*t));
	if (!t)
		return &hs_error_nomem;
	struct demangler dm = {0};
	struct ctx c = {.core = core, .dw = dw, .heap = heap, .graph = graph,
			.py = py, .log = log, .t = t, .dm = &dm};
	struct hs_error *err = hs_dtypes_create(dw, &t->reg);
	if (err)
		goto out;
	err = &hs_error_nomem;
	t->nallocs = graph->n;
	t->narrow_max = narrow_max && narrow_max < UINT16_MAX ? narrow_max : UINT16_MAX;
	t->type_of16 = hs_zalloc_written(((size_t)graph->n + 1) * sizeof(uint16_t));
	c.from = hs_calloc((size_t)graph->n + 1, 1);
	c.inner_seen = hs_calloc((size_t)graph->n / 64 + 1, sizeof(uint64_t));
	t->cookie = hs_calloc((size_t)graph->n / 64 + 1, sizeof(uint64_t));
	t->core = core;
	if (!t->type_of16 || !c.from || !c.inner_seen || !t->cookie)
		goto out;
	if ((err = collect_vtables(&c)) || (err = seed_vtables(&c)) ||
	    (err = seed_python(&c)) ||
	    (err = propagate(&c)) || (err = seed_variables(&c)) ||
	    (err = propagate(&c)) || (err = name_slabs(&c)))
		goto out;
	t->from_dwarf = t->typed - t->from_vtable - t->from_rtti - t->from_python;
	if (t->conflicts)
		hs_log_warn(log, "%llu blocks were given two types of one size (%s); the first was kept",
			    (unsigned long long)t->conflicts,
			    t->conflict_example ? t->conflict_example : "");
out:
	demangler_fini(&dm);
	for (size_t i = 0; i < c.nvt; i++)
		free(c.vt[i].class_name);
	free(c.vt);
	work_vector_free(&c.work);
	free(c.from);
	free(c.inner);
	free(c.inner_seen);
	if (err) {
		hs_types_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

void hs_types_destroy(struct hs_types *t)
{
	if (!t)
		return;
	hs_dtypes_destroy(t->reg);
	free(t->type_of16);
	free(t->type_of);
	free(t->conflict_example);
	free(t->varrays);
	free(t->holds);
	free(t->inferred);
	hs_rankset_fini(&t->typed_set);
	free(t->typed_type);
	free(t->typed_type16);
	free(t->typed_type8);
	hs_rankset_fini(&t->inferred_set);
	free(t->cookie);
	free(t);
}

HS_VECTOR(u32_vector, uint32_t)
HS_VECTOR(u16_vector, uint16_t)
HS_VECTOR(u8_vector, uint8_t)

struct hs_error *hs_types_pack(struct hs_types *t)
{
	if (t->packed)
		return NULL;
	uint32_t n = t->nallocs;
	if (t->inferred && !t->inferred_sure && !t->inferred_guess) {
		/* nothing inferred: the table is zeros, most of its pages never
		 * written (reading each would map it: a page fault per 4 KiB) */
		free(t->inferred);
		t->inferred = NULL;
	}
	struct hs_rankset typed = {0}, inf = {0};
	/* the counts kept along the way size the arrays */
	struct u32_vector types = {0};
	struct u16_vector types16 = {0};
	struct u8_vector types8 = {0};
	bool narrow = t->reg->n <= UINT16_MAX;
	/* the distinct types in use: if at most 255, a byte a block (their
	 * registry indexes in typed_dense, dense_of: dense id + 1 by index).
	 * A test's narrow_max lowers that bound too, so that the tests that
	 * set it take the wider tables. */
	uint8_t *dense_of = hs_calloc((size_t)t->reg->n + 1, 1);
	uint32_t ndense = 0, maxdense = t->narrow_max < 255 ? t->narrow_max : 255;
	bool bytes = dense_of != NULL;
	for (uint32_t id = 0; id < n && bytes; id++) {
		uint32_t ti = hs_types_cur(t, id);
		if (ti == HS_NO_TYPE || dense_of[ti])
			continue;
		if (ndense == maxdense)
			bytes = false;
		else {
			t->typed_dense[ndense++] = ti;
			dense_of[ti] = (uint8_t)ndense;
		}
	}
	struct u8_vector flags = {0};
	struct hs_error *err;
	if ((err = hs_rankset_init(&typed, n)) ||
	    (t->inferred && (err = hs_rankset_init(&inf, n))) ||
	    (bytes ? (err = u8_vector_reserve_filled(&types8, t->typed + 1)) :
	     narrow ? (err = u16_vector_reserve_filled(&types16, t->typed + 1))
		    : (err = u32_vector_reserve_filled(&types, t->typed + 1))) ||
	    (t->inferred &&
	     (err = u8_vector_reserve(&flags, t->inferred_sure + t->inferred_guess + 1))))
		goto fail;
	for (uint32_t id = 0; id < n; id++) {
		uint32_t ti = hs_types_cur(t, id);
		if (ti != HS_NO_TYPE) {
			hs_rankset_add(&typed, id);
			if ((err = bytes ? u8_vector_push(&types8, (uint8_t)(dense_of[ti] - 1)) :
				   narrow ? u16_vector_push(&types16, (uint16_t)ti)
					  : u32_vector_push(&types, ti)))
				goto fail;
		}
		if (t->inferred && t->inferred[id]) {
			hs_rankset_add(&inf, id);
			if ((err = u8_vector_push(&flags, t->inferred[id])))
				goto fail;
		}
	}
	hs_rankset_finish(&typed);
	free(t->type_of16);
	t->type_of16 = NULL;
	free(t->type_of);
	t->type_of = NULL;
	t->typed_set = typed;
	free(dense_of);
	/* (the vectors' capacities are powers of two: give back the rest) */
	if (bytes)
		t->typed_type8 = hs_realloc(types8.v, types8.n + 1) ?: types8.v;
	else if (narrow)
		t->typed_type16 = hs_realloc(types16.v, (types16.n + 1) * sizeof(uint16_t)) ?: types16.v;
	else
		t->typed_type = hs_realloc(types.v, (types.n + 1) * sizeof(uint32_t)) ?: types.v;
	if (t->inferred) {
		hs_rankset_finish(&inf);
		free(t->inferred);
		t->inferred = hs_realloc(flags.v, flags.n + 1) ?: flags.v;
		t->inferred_set = inf;
	}
	t->packed = true;
	return NULL;
fail:
	free(dense_of);
	hs_rankset_fini(&typed);
	hs_rankset_fini(&inf);
	u32_vector_free(&types);
	u16_vector_free(&types16);
	u8_vector_free(&types8);
	u8_vector_free(&flags);
	return err;
}

uint64_t hs_types_count(const struct hs_types *t, const struct hs_heap *heap,
			uint32_t id)
{
	struct hs_dtype *d = hs_types_of(t, id);
	if (!d || !d->size || (hs_types_infer_flags(t, id) & HS_INFER_ONE))
		return 1;
	uint64_t n;
	if (hs_types_start(t, id) && hs_core_read_u64(t->core, heap->allocs[id].addr, &n) &&
	    n >= 1 && n <= (heap->allocs[id].size - 8) / d->size)
		return n;
	if (d->from_vtable) {
		/* ids were added in increasing order */
		size_t lo = 0, hi = t->nvarrays;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (t->varrays[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < t->nvarrays && t->varrays[lo].id == id ? t->varrays[lo].count : 1;
	}
	uint64_t k = heap->allocs[id].size / d->size;
	return k ? k : 1;
}

const char *hs_types_name(const struct hs_types *t, const struct hs_heap *heap,
			  uint32_t id, char *buf, size_t len)
{
	struct hs_dtype *d = hs_types_of(t, id);
	if (!d)
		return NULL;
	uint64_t k = hs_types_count(t, heap, id);
	const char *q = hs_types_guessed(t, id) ? "?" : "";
	if (k >= 2)
		snprintf(buf, len, "%s[%llu]%s", d->name, (unsigned long long)k, q);
	else
		snprintf(buf, len, "%s%s", d->name, q);
	return buf;
}

/* ---- rule 4: leaked blocks typed by their contents ---- */

enum {
	/* candidate checks (a type against a block) in all: a bound on the
	 * time a leak with many candidates per block can take, that grows
	 * with the leak (INFER_CHECKS_PER_BLOCK a leaked block, on average)
	 * as the rest of the analysis does, and no less than
	 * INFER_MIN_CHECKS */
	INFER_MIN_CHECKS = 1 << 26,
	INFER_CHECKS_PER_BLOCK = 256,
};

/* One size class's candidates: structs with pointer members. */
struct infer_class {
	uint64_t size;
	struct hs_dtype **v;
	size_t n;
	struct cand_mask *m;    /* per candidate, n */
};

/* A candidate's local check as masks of its words (see local_ok_masked):
 * its pointer slots and its scalar words (NULL: none known), nm mask
 * words of each; or no mask: a polymorphic type (never a candidate
 * here), or slots the masks cannot say (local_ok reads them). */
struct cand_mask {
	const uint64_t *pm;
	uint64_t *sm;
	uint32_t nm;
	uint8_t kind;
};
enum { MASK_PLAIN, MASK_NEVER, MASK_SLOW };

struct infer {
	struct ctx *c;
	uint32_t *ids;          /* the leaked untyped blocks, by id */
	size_t n;
	struct hs_rankset set;  /* the same: an id's rank is its index in ids */
	size_t *cfirst;         /* per block: its candidates, n + 1 */
	uint32_t *cand;         /* registry indexes (4 bytes, not 8: the
				 * candidates are the inference's largest
				 * table, alive at its peak) */
	uint8_t *alive;
	size_t ncand, capcand;
	uint32_t *poff, *preds; /* leaked holders of each block (CSR) */
	uint64_t checks, max_checks;
	bool over;
	/* What each word of a block is (WORD_* or the id of the block it
	 * points to the start of), read once for all candidates: from
	 * wfirst[j], size / 8 words; wfirst[j] == NO_WORDS where the block is
	 * not in one piece of the core or the budget (nwords_max) is spent,
	 * and the checks read the core themselves */
	uint32_t *words;
	size_t *wfirst;
	size_t nwords, capwords, nwords_max;
	/* per type index: its pointer slots' words, one bit each, when all
	 * slots are aligned (NULL: not computed yet; &irregular: not so) */
	uint64_t **pmask;
	size_t npmask;
	uint64_t irregular;     /* its address marks an irregular type */
	unsigned nthreads;
};

/* The solver's first pass over blocks [from, to) (struct infer's j):
 * each block's candidates by the block alone, into the part's own
 * candidates and word codes (cfirst[j] and wfirst[j] index them), with
 * its own share of the word budget.  With two threads, each part takes
 * about half of the work, and the second part's arrays then go after
 * the first's (local_merge).  The classes are all made before: the
 * parts only read them, and the types they name. */
struct local_part {
	struct infer *in;
	const struct infer_class *classes;
	const uint32_t *cls;    /* per block: its class, in classes */
	size_t from, to;
	uint32_t *cand;
	uint8_t *alive;
	size_t ncand, capcand;
	uint32_t *words;
	size_t nwords, capwords, nwords_max;
	uint64_t checks;
	bool over;
	struct hs_error *err;
	uint64_t *done;         /* blocks of all parts (progress) */
	struct hs_log *log;     /* the caller's thread's part only */
};

/* A word of a leaked block, as the solver sees it: a pointer into a
 * block's interior, null or pointing nowhere, or anything else (a scalar,
 * a pointer to mapped memory that is no block); otherwise the id of the
 * block it points to the start of. */
enum {
	WORD_OTHER = UINT32_MAX,
	WORD_NULL = UINT32_MAX - 1,
	WORD_INTERIOR = UINT32_MAX - 2,
};
#define NO_WORDS SIZE_MAX
/* the largest block that gets word codes, in 64-bit mask words */
#define MASK_WORDS ((HS_DSTRUCT_MAX_SIZE + 64) / 8 / 64 + 1)

/* The C runtime's modules: their types come second to the program's. */
static bool runtime_module(const struct hs_module *m)
{
	static const char *const prefixes[] = {
		"libc.so", "ld-linux", "ld64.so", "libm.so", "libstdc++", "libgcc_s",
		"libpthread", "libdl.", "librt.", "libresolv", "libnss_", "libanl",
		"libutil", "libcrypt.", "libmvec",
	};
	if (!m || m->is_exe || !m->name)
		return false;
	const char *base = hs_module_base(m);
	/* before glibc 2.34 the files behind its sonames: libc-2.31.so, ... */
	static const char *const stems[] = {
		"libc", "ld", "libm", "libdl", "librt", "libresolv", "libanl",
		"libutil", "libmvec",
	};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return true;
	for (size_t i = 0; i < sizeof(stems) / sizeof(stems[0]); i++)
		if (hs_glibc_versioned_name(base, stems[i]))
			return true;
	return false;
}

/* The C and C++ runtime's types: those of its modules, and the standard
 * library's templates the program instantiated (std::vector<...>, which
 * a program embeds far more often than it mallocs alone). */
static bool runtime_type(struct hs_dtype *d)
{
	if (!d->runtime)  /* decided once per type: this sits in the solver's loops */
		d->runtime = runtime_module(d->mod) || !strncmp(d->name, "std::", 5) ||
			     !strncmp(d->name, "__gnu_cxx::", 11) ||
			     !strncmp(d->name, "__cxxabiv1::", 12) ? 1 : 2;
	return d->runtime == 1;
}

static bool read_word(const struct ctx *c, const uint8_t *obj, uint64_t addr,
		      uint64_t off, uint64_t *v)
{
	if (obj) {
		memcpy(v, obj + off, 8);
		return true;
	}
	return hs_core_read_u64(c->core, addr + off, v);
}

/* Whether type d could be what block id holds, by the block alone. */
static struct hs_error *local_ok(struct ctx *c, uint32_t id, struct hs_dtype *d,
				 const uint8_t *obj, bool *ret)
{
	const struct hs_alloc *a = &c->heap->allocs[id];
	const struct hs_dptr *p;
	size_t n;
	const uint64_t *scalar;
	struct hs_error *err;
	*ret = false;
	if ((err = hs_dtype_pointers(c->t->reg, d, &p, &n)) ||
	    (err = hs_dtype_scalar_words(c->t->reg, d, &scalar)))
		return err;
	/* a class with a vptr (its own or a base's; known with its pointer
	 * slots): a block of such a class starts with a vptr and was named
	 * by it already, one that was not is no such class */
	if (d->polymorphic)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < p[i].count; k++) {
			uint64_t off = p[i].offset + k * p[i].stride, v;
			if (off + 8 > d->size)
				break;
			if (!read_word(c, obj, a->addr, off, &v))
				return NULL;
			/* into the heap's range: a used block, not free memory.
			 * A value that points nowhere says nothing either way: a
			 * redacted core has zeros there (analyzers/redact.h keeps
			 * only words that point into mapped memory), and the
			 * answer must be the same on it; outside the heap's range
			 * nothing is decided */
			bool interior;
			if (v >= c->graph->map.lo && v < c->graph->map.hi &&
			    hs_graph_target(c->graph, v, &interior) == HS_NO_ALLOC &&
			    hs_core_find_segment(c->core, v))
				return NULL;
		}
	}
	for (uint64_t w = 0; scalar && w < d->size / 8; w++) {
		if (!(scalar[w / 64] >> (w % 64) & 1))
			continue;
		uint64_t v;
		bool interior;
		if (!read_word(c, obj, a->addr, w * 8, &v))
			return NULL;
		if (hs_graph_hit(c->graph, v, &interior) != HS_NO_ALLOC)
			return NULL;  /* a heap address in a scalar member */
	}
	*ret = true;
	return NULL;
}

/* The pointer slots of type d as a mask of its words (see struct infer);
 * &in->irregular when a slot is not 8-byte aligned, the type is too big
 * for a mask, or memory ran out: then local_ok reads the slots itself. */
static const uint64_t *ptr_mask(struct infer *in, struct hs_dtype *d,
				const struct hs_dptr *p, size_t n)
{
	if (d->index >= in->npmask) {
		size_t cap = in->npmask ? in->npmask : 256;
		while (cap <= d->index)
			cap *= 2;
		uint64_t **v = hs_realloc(in->pmask, cap * sizeof(*v));
		if (!v)
			return &in->irregular;
		memset(v + in->npmask, 0, (cap - in->npmask) * sizeof(*v));
		in->pmask = v;
		in->npmask = cap;
	}
	uint64_t **slot = &in->pmask[d->index];
	if (*slot)
		return *slot;
	*slot = &in->irregular;
	if (d->size / 8 > MASK_WORDS * 64)
		return *slot;
	uint64_t *m = hs_calloc(MASK_WORDS, sizeof(uint64_t));
	if (!m)
		return *slot;
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < p[i].count; k++) {
			uint64_t off = p[i].offset + k * p[i].stride;
			if (off + 8 > d->size)
				break;
			if (off % 8) {
				free(m);
				return *slot;
			}
			m[off / 8 / 64] |= 1ull << (off / 8 % 64);
		}
	}
	return *slot = m;
}

/* Reads block j's words once (obj: the block in one piece of the core,
 * nw of them): bad, those into the heap's range that are no used block
 * but mapped memory; hit, those that point into a used block (masks of
 * MASK_WORDS).  Keeps their codes for the arc checks while the part's
 * budget lasts (in->wfirst[j], in the part's words). */
static void read_words(struct local_part *lp, size_t j, const uint8_t *obj, uint64_t nw,
		       uint64_t *bad, uint64_t *hit)
{
	struct infer *in = lp->in;
	struct ctx *c = in->c;
	const struct hs_graph *g = c->graph;
	uint32_t *code = NULL;
	in->wfirst[j] = NO_WORDS;
	if (lp->nwords + nw <= lp->nwords_max) {
		if (lp->nwords + nw > lp->capwords) {
			size_t cap = lp->capwords ? lp->capwords : 4096;
			while (cap < lp->nwords + nw)
				cap *= 2;
			uint32_t *v = hs_realloc(lp->words, cap * sizeof(*v));
			if (v) {
				lp->words = v;
				lp->capwords = cap;
			}
		}
		if (lp->nwords + nw <= lp->capwords) {
			in->wfirst[j] = lp->nwords;
			code = lp->words + lp->nwords;
			lp->nwords += nw;
		}
	}
	memset(bad, 0, MASK_WORDS * sizeof(uint64_t));
	memset(hit, 0, MASK_WORDS * sizeof(uint64_t));
	for (uint64_t w = 0; w < nw; w++) {
		uint64_t v, bit = 1ull << (w % 64);
		memcpy(&v, obj + w * 8, 8);
		uint32_t k = WORD_OTHER;
		if (v >= g->map.lo && v < g->map.hi) {
			bool interior;
			uint32_t tgt = hs_graph_target(g, v, &interior);
			if (tgt != HS_NO_ALLOC) {
				hit[w / 64] |= bit;
				k = interior ? WORD_INTERIOR : tgt;
			} else if (hs_core_find_segment(c->core, v)) {
				bad[w / 64] |= bit;
			} else {
				k = WORD_NULL;
			}
		} else if (!v || !hs_core_find_segment(c->core, v)) {
			k = WORD_NULL;
		}
		if (code)
			code[w] = k;
	}
}

/* local_ok with the block's masks from read_words and the candidate's. */
static bool local_ok_masked(const struct cand_mask *cm, const uint64_t *bad,
			    const uint64_t *hit)
{
	for (uint32_t m = 0; m < cm->nm; m++)
		if (cm->pm[m] & bad[m] || (cm->sm && cm->sm[m] & hit[m]))
			return false;
	return true;
}

/* Candidate d's masks (see struct cand_mask). */
static struct hs_error *cand_mask(struct infer *in, struct hs_dtype *d,
				  struct cand_mask *cm)
{
	const struct hs_dptr *p;
	size_t n;
	const uint64_t *scalar;
	struct hs_error *err;
	memset(cm, 0, sizeof(*cm));
	if ((err = hs_dtype_pointers(in->c->t->reg, d, &p, &n)) ||
	    (err = hs_dtype_scalar_words(in->c->t->reg, d, &scalar)))
		return err;
	if (d->polymorphic) {
		cm->kind = MASK_NEVER;
		return NULL;
	}
	cm->pm = ptr_mask(in, d, p, n);
	if (cm->pm == &in->irregular) {
		cm->kind = MASK_SLOW;
		return NULL;
	}
	uint64_t nw = d->size / 8;
	cm->nm = (uint32_t)((nw + 63) / 64);
	if (scalar) {
		/* the scalar words below size / 8 only, as local_ok reads them */
		if (!(cm->sm = hs_calloc(cm->nm ? cm->nm : 1, sizeof(uint64_t))))
			return &hs_error_nomem;
		for (uint64_t m = 0; m < cm->nm; m++)
			cm->sm[m] = scalar[m] &
				    (nw - m * 64 >= 64 ? ~0ull : (1ull << (nw - m * 64)) - 1);
	}
	cm->kind = MASK_PLAIN;
	return NULL;
}

/* Candidate k's type. */
static inline struct hs_dtype *cand_type(const struct infer *in, size_t k)
{
	return in->c->t->reg->v[in->cand[k]];
}

static bool has_cand(const struct infer *in, uint32_t j, const struct hs_dtype *d)
{
	for (size_t k = in->cfirst[j]; k < in->cfirst[j + 1]; k++)
		if (in->alive[k] && in->cand[k] == d->index)
			return true;
	return false;
}

/* Whether the block a pointer member typed `pointee` points to (tgt, at
 * its start) can be of that type. */
static bool compatible(struct infer *in, uint32_t tgt, struct hs_dtype *pointee)
{
	struct ctx *c = in->c;
	const struct hs_alloc *x = &c->heap->allocs[tgt];
	if (pointee->size > x->size)
		return false;
	if (pointee->size && hs_dtype_is_aggregate(pointee) &&
	    (hs_alloc_place(c->heap, x)->flags & HS_PLACE_CLASSED)) {
		/* malloc(k * sizeof P) for some k must give this block */
		uint64_t k = x->size / pointee->size;
		if (hs_heap_size_class(c->heap, k * pointee->size) != x->size &&
		    (k < 2 || hs_heap_size_class(c->heap, (k - 1) * pointee->size) != x->size))
			return false;
	}
	uint32_t j = hs_rankset_index(&in->set, tgt);
	if (j != HS_RANK_NONE) {
		const struct hs_dptr *p;
		size_t n;
		if (hs_dtype_pointers(c->t->reg, pointee, &p, &n) || !n ||
		    !pointee->size || hs_heap_size_class(c->heap, pointee->size) != x->size)
			return true;  /* not a candidate kind: nothing to say */
		return has_cand(in, j, pointee);
	}
	uint32_t ty = hs_types_cur(c->t, tgt);
	if (ty == HS_NO_TYPE)
		return true;
	const struct hs_dtype *q = c->t->reg->v[ty];
	return q == pointee || q->size != pointee->size ||
	       !hs_dtype_is_aggregate(pointee);
}

/* What speaks for a candidate: non-null pointer members to the start of
 * a block that has the pointee type among its candidates or as its type
 * (strong), to the start of another block that fits (weak), and null
 * pointer members (what the candidate leaves unexplained). */
struct score {
	uint32_t strong, weak, nulls;
};

/* Whether candidate d of block id agrees with the blocks it points to;
 * *sc (may be NULL): the evidence. */
static struct hs_error *arc_ok(struct infer *in, size_t j, struct hs_dtype *d,
			       bool *ret, struct score *sc)
{
	struct ctx *c = in->c;
	const struct hs_alloc *a = &c->heap->allocs[in->ids[j]];
	const struct hs_dptr *p;
	size_t n;
	struct hs_error *err = hs_dtype_pointers(c->t->reg, d, &p, &n);
	if (err)
		return err;
	*ret = true;
	struct score dummy;
	if (!sc)
		sc = &dummy;
	memset(sc, 0, sizeof(*sc));
	const uint32_t *words = in->wfirst[j] != NO_WORDS ? in->words + in->wfirst[j] : NULL;
	const uint8_t *obj = words ? NULL : hs_core_ptr(c->core, a->addr, d->size);
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < p[i].count; k++) {
			uint64_t off = p[i].offset + k * p[i].stride, v;
			if (off + 8 > d->size)
				break;
			bool interior = false;
			uint32_t tgt;
			if (words && !(off % 8)) {
				uint32_t w = words[off / 8];
				sc->nulls += w == WORD_NULL;
				if (w >= WORD_INTERIOR)
					continue;
				tgt = w;
			} else {
				if (!read_word(c, obj, a->addr, off, &v))
					continue;
				tgt = hs_graph_hit(c->graph, v, &interior);
				/* null, or pointing nowhere (zero in a redacted core) */
				sc->nulls += !v || (tgt == HS_NO_ALLOC &&
						    !hs_core_find_segment(c->core, v));
			}
			if (tgt == HS_NO_ALLOC || interior)
				continue;  /* interior: an embedded member, say nothing */
			if (!compatible(in, tgt, p[i].pointee)) {
				*ret = false;
				return NULL;
			}
			uint32_t r = hs_rankset_index(&in->set, tgt);
			if ((r != HS_RANK_NONE && has_cand(in, r, p[i].pointee)) ||
			    hs_types_cur(c->t, tgt) == p[i].pointee->index)
				sc->strong++;
			else
				sc->weak++;
		}
	}
	return NULL;
}

/* Whether a holder of block j with a single candidate has a pointer
 * member of type d to j's start. */
static struct hs_error *held_as(struct infer *in, uint32_t j, struct hs_dtype *d,
				const struct hs_dtype *const *unique, bool *ret)
{
	struct ctx *c = in->c;
	uint64_t addr = c->heap->allocs[in->ids[j]].addr;
	*ret = false;
	for (uint32_t k = in->poff[j]; k < in->poff[j + 1] && !*ret; k++) {
		uint32_t h = in->preds[k];
		const struct hs_dtype *hd = unique[h];
		if (!hd)
			continue;
		const struct hs_dptr *p;
		size_t n;
		struct hs_error *err = hs_dtype_pointers(c->t->reg, (struct hs_dtype *)hd, &p, &n);
		if (err)
			return err;
		uint64_t haddr = c->heap->allocs[in->ids[h]].addr;
		for (size_t i = 0; i < n && !*ret; i++) {
			if (p[i].pointee != d)
				continue;
			for (uint32_t e = 0; e < p[i].count; e++) {
				uint64_t off = p[i].offset + e * p[i].stride, v;
				if (off + 8 > hd->size)
					break;
				if (hs_core_read_u64(c->core, haddr + off, &v) && v == addr) {
					*ret = true;
					break;
				}
			}
		}
	}
	return NULL;
}

/* Makes the class of blocks of `size` (infer_solve makes each once). */
static struct hs_error *class_cands(struct infer *in, struct infer_class **classes,
				    size_t *nclasses, uint64_t size,
				    const struct infer_class **ret)
{
	struct infer_class *v = hs_realloc(*classes, (*nclasses + 1) * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	*classes = v;
	struct infer_class *k = &v[(*nclasses)++];
	memset(k, 0, sizeof(*k));
	k->size = size;
	*ret = k;
	const struct hs_heap *heap = in->c->heap;
	if (hs_heap_size_class(heap, size) != size)
		return NULL;  /* not a size class: no struct rounds to it */
	/* the smallest request of the class */
	uint64_t lo = 1, hi = size;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (hs_heap_size_class(heap, mid) < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct hs_dtype **all = NULL;
	size_t n = 0, cap = 0;
	struct hs_error *err = hs_dtypes_structs_sized(in->c->t->reg, lo, size, &all, &n, &cap);
	size_t m = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct hs_dptr *p;
		size_t np;
		if (!(err = hs_dtype_pointers(in->c->t->reg, all[i], &p, &np)) && np)
			all[m++] = all[i];
	}
	if (err) {
		free(all);
		return err;
	}
	k->v = all;
	k->n = m;
	if (m && !(k->m = hs_calloc(m, sizeof(*k->m))))
		return &hs_error_nomem;
	for (size_t i = 0; i < m; i++)
		if ((err = cand_mask(in, all[i], &k->m[i])))
			return err;
	return NULL;
}

/* size -> class (infer_solve) */
HS_HASH_MAP(class_map, uint32_t)

/* Block j's share of the first pass's work: its words and its class's
 * candidates. */
static inline uint64_t local_work(const struct infer *in,
				  const struct infer_class *classes,
				  const uint32_t *cls, size_t j)
{
	return in->c->heap->allocs[in->ids[j]].size / 8 + classes[cls[j]].n;
}

/* One part of the first pass (struct local_part). */
static void *local_run(void *arg)
{
	struct local_part *lp = arg;
	struct infer *in = lp->in;
	struct ctx *c = in->c;
	for (size_t j = lp->from; j < lp->to && !lp->err && !lp->over; j++) {
		if (!((j - lp->from) & 0x3fff)) {
			uint64_t done = j > lp->from ?
					__atomic_add_fetch(lp->done, 0x4000, __ATOMIC_RELAXED) :
					__atomic_load_n(lp->done, __ATOMIC_RELAXED);
			if (lp->log)
				hs_log_progress(lp->log, "inferring leaked blocks' types",
						"blocks", done, in->n);
		}
		in->cfirst[j] = lp->ncand;
		uint32_t id = in->ids[j];
		uint64_t size = c->heap->allocs[id].size;
		const struct infer_class *k = &lp->classes[lp->cls[j]];
		size_t start = lp->ncand;
		bool own = false;
		/* the block in one piece of the core (NULL: word by word) */
		const uint8_t *obj = hs_core_ptr(c->core, c->heap->allocs[id].addr, size);
		uint64_t bad[MASK_WORDS], hit[MASK_WORDS];
		bool masked = obj && k->n && size / 8 <= MASK_WORDS * 64 &&
			      c->graph->n < WORD_INTERIOR;
		size_t words_at = lp->nwords;
		in->wfirst[j] = NO_WORDS;
		if (masked)
			read_words(lp, j, obj, size / 8, bad, hit);
		for (size_t i = 0; i < k->n; i++) {
			bool ok;
			if (++lp->checks > in->max_checks) {
				lp->over = true;
				break;
			}
			if (masked && k->m[i].kind == MASK_PLAIN)
				ok = local_ok_masked(&k->m[i], bad, hit);
			else if (masked && k->m[i].kind == MASK_NEVER)
				ok = false;
			else if ((lp->err = local_ok(c, id, k->v[i], obj, &ok)))
				break;
			if (!ok)
				continue;
			if (lp->ncand == lp->capcand) {
				size_t cap = lp->capcand ? 2 * lp->capcand : 1024;
				uint32_t *v = hs_realloc(lp->cand, cap * sizeof(*v));
				uint8_t *al = hs_realloc(lp->alive, cap);
				if (v)
					lp->cand = v;
				if (al)
					lp->alive = al;
				if (!v || !al) {
					lp->err = &hs_error_nomem;
					break;
				}
				lp->capcand = cap;
			}
			lp->cand[lp->ncand] = k->v[i]->index;
			lp->alive[lp->ncand++] = 1;
			own |= !runtime_type(k->v[i]);
		}
		/* the program's own types first */
		if (own) {
			size_t m = start;
			for (size_t i = start; i < lp->ncand; i++)
				if (!runtime_type(c->t->reg->v[lp->cand[i]]))
					lp->cand[m++] = lp->cand[i];
			lp->ncand = m;
		}
		/* no candidate: no arc check reads its words */
		if (lp->ncand == start) {
			lp->nwords = words_at;
			in->wfirst[j] = NO_WORDS;
		}
	}
	return NULL;
}

/* The second part's candidates and words after the first's: in->cand,
 * in->alive and in->words are then the first part's arrays; false when
 * memory ran out. */
static bool local_merge(struct infer *in, struct local_part *p0, struct local_part *p1)
{
	size_t nc = p0->ncand + p1->ncand, nw = p0->nwords + p1->nwords;
	if (nc > p0->capcand) {
		uint32_t *v = hs_realloc(p0->cand, nc * sizeof(*v));
		if (v)
			p0->cand = v;
		uint8_t *al = hs_realloc(p0->alive, nc);
		if (al)
			p0->alive = al;
		if (!v || !al)
			return false;
		p0->capcand = nc;
	}
	if (nw > p0->capwords) {
		uint32_t *v = hs_realloc(p0->words, nw * sizeof(*v));
		if (!v)
			return false;
		p0->words = v;
		p0->capwords = nw;
	}
	if (p1->ncand) {
		memcpy(p0->cand + p0->ncand, p1->cand, p1->ncand * sizeof(*p1->cand));
		memcpy(p0->alive + p0->ncand, p1->alive, p1->ncand);
	}
	if (p1->nwords)
		memcpy(p0->words + p0->nwords, p1->words, p1->nwords * sizeof(*p1->words));
	for (size_t j = p1->from; j < p1->to; j++) {
		in->cfirst[j] += p0->ncand;
		if (in->wfirst[j] != NO_WORDS)
			in->wfirst[j] += p0->nwords;
	}
	p0->ncand = nc;
	p0->nwords = nw;
	return true;
}

static struct hs_error *infer_solve(struct infer *in)
{
	struct ctx *c = in->c;
	struct hs_error *err = NULL;
	struct infer_class *classes = NULL;
	size_t nclasses = 0;
	/* each block's size class and its candidates, and which of them are
	 * the runtime's, decided once: the first pass's parts only read them */
	uint32_t *cls = hs_malloc((in->n + 1) * sizeof(*cls));
	struct class_map bysize = {0};
	uint64_t total = 0;  /* the first pass's work (local_work) */
	if (!cls)
		err = &hs_error_nomem;
	for (size_t j = 0; j < in->n && !err; j++) {
		uint64_t size = c->heap->allocs[in->ids[j]].size;
		uint32_t *slot = NULL;
		bool fresh = false;
		/* (key 0 is no member: size + 1) */
		if ((err = class_map_insert(&bysize, size + 1, &slot, &fresh)))
			break;
		if (fresh) {
			const struct infer_class *k;
			if ((err = class_cands(in, &classes, &nclasses, size, &k)))
				break;
			for (size_t m = 0; m < k->n; m++)
				(void)runtime_type(k->v[m]);
			*slot = (uint32_t)(k - classes);
		}
		cls[j] = *slot;
		total += local_work(in, classes, cls, j);
	}
	class_map_free(&bysize);
	/* candidates per block, by the block alone: with two threads, the
	 * blocks are split where about half the work is done */
	uint64_t done = 0;
	struct local_part parts[2];
	unsigned nparts = in->nthreads >= 2 && in->n >= 2 ? 2 : 1;
	for (unsigned p = 0; p < 2; p++)
		parts[p] = (struct local_part){.in = in, .classes = classes, .cls = cls,
					       .from = 0, .to = in->n,
					       .nwords_max = in->nwords_max / nparts,
					       .done = &done,
					       .log = p ? NULL : c->log};
	if (nparts == 2 && !err) {
		uint64_t half = 0;
		size_t split = 0;
		while (split < in->n - 1 && 2 * half < total)
			half += local_work(in, classes, cls, split++);
		if (!split)
			split = 1;
		parts[0].to = parts[1].from = split;
	}
	if (!err)
		hs_run_parts(parts, sizeof(*parts), nparts, local_run);
	in->checks = parts[0].checks + (nparts == 2 ? parts[1].checks : 0);
	in->over = parts[0].over || (nparts == 2 && parts[1].over) ||
		   in->checks > in->max_checks;
	/* (an error each: the first part's is given) */
	if (nparts == 2 && parts[0].err && parts[1].err)
		hs_error_destroy(parts[1].err);
	if (!err)
		err = parts[0].err ? parts[0].err : nparts == 2 ? parts[1].err : NULL;
	if (!err && !in->over && nparts == 2 && !local_merge(in, &parts[0], &parts[1]))
		err = &hs_error_nomem;
	if (nparts == 2) {
		free(parts[1].cand);
		free(parts[1].alive);
		free(parts[1].words);
	}
	in->cand = parts[0].cand;
	in->alive = parts[0].alive;
	in->ncand = parts[0].ncand;
	in->capcand = parts[0].capcand;
	in->words = parts[0].words;
	in->nwords = parts[0].nwords;
	in->capwords = parts[0].capwords;
	in->cfirst[in->n] = in->ncand;
	free(cls);
	for (size_t i = 0; i < nclasses; i++) {
		free(classes[i].v);
		for (size_t m = 0; classes[i].m && m < classes[i].n; m++)
			free(classes[i].m[m].sm);
		free(classes[i].m);
	}
	free(classes);
	if (err || in->over)
		return err;
	/* arc consistency over the leaked subgraph, with a worklist */
	uint32_t *work = hs_malloc((in->n + 1) * sizeof(uint32_t));
	uint8_t *queued = hs_malloc(in->n + 1);
	if (!work || !queued) {
		free(work);
		free(queued);
		return &hs_error_nomem;
	}
	size_t nw = 0;
	for (size_t j = in->n; j-- > 0;) {
		work[nw++] = (uint32_t)j;
		queued[j] = 1;
	}
	while (nw && !err && !in->over) {
		uint32_t j = work[--nw];
		queued[j] = 0;
		bool changed = false;
		for (size_t k = in->cfirst[j]; k < in->cfirst[j + 1] && !err; k++) {
			if (!in->alive[k])
				continue;
			if (++in->checks > in->max_checks) {
				in->over = true;
				break;
			}
			bool ok;
			if (!(err = arc_ok(in, j, cand_type(in, k), &ok, NULL)) && !ok) {
				in->alive[k] = 0;
				changed = true;
			}
		}
		for (uint32_t p = in->poff[j]; changed && p < in->poff[j + 1]; p++) {
			uint32_t h = in->preds[p];
			if (!queued[h]) {
				queued[h] = 1;
				work[nw++] = h;
			}
		}
	}
	free(work);
	free(queued);
	if (err || in->over)
		return err;
	/* one candidate: the type; evidence decides the confidence.  Several:
	 * the one with the most evidence (strong, then weak pointers, then
	 * the fewest null ones), as a guess, when one stands out */
	struct hs_dtype **unique = hs_calloc(in->n + 1, sizeof(*unique));
	struct hs_dtype **best = hs_calloc(in->n + 1, sizeof(*best));
	uint8_t *conf = hs_calloc(in->n + 1, 1);
	uint8_t *tier = hs_calloc(in->n + 1, 1);
	if (!unique || !best || !conf || !tier) {
		err = &hs_error_nomem;
		goto done;
	}
	for (size_t j = 0; j < in->n && !err; j++) {
		struct hs_dtype *only = NULL;
		size_t alive = 0;
		for (size_t k = in->cfirst[j]; k < in->cfirst[j + 1]; k++)
			if (in->alive[k]) {
				only = cand_type(in, k);
				alive++;
			}
		if (alive == 1) {
			unique[j] = only;
			continue;
		}
		struct score top = {0};
		size_t ntop = 0;
		for (size_t k = in->cfirst[j]; k < in->cfirst[j + 1] && !err; k++) {
			if (!in->alive[k])
				continue;
			bool ok;
			struct score sc;
			if ((err = arc_ok(in, j, cand_type(in, k), &ok, &sc)))
				break;
			int cmp = !ntop ? 1 :
				sc.strong != top.strong ? (sc.strong > top.strong ? 1 : -1) :
				sc.weak != top.weak ? (sc.weak > top.weak ? 1 : -1) :
				sc.nulls != top.nulls ? (sc.nulls < top.nulls ? 1 : -1) : 0;
			if (cmp > 0) {
				top = sc;
				ntop = 1;
				best[j] = cand_type(in, k);
			} else if (cmp == 0) {
				ntop++;
			}
		}
		if (ntop != 1 || (!top.strong && !top.weak))
			best[j] = NULL;
		else
			tier[j] = top.strong ? 1 : 2;
	}
	for (size_t j = 0; j < in->n && !err; j++) {
		if (!unique[j])
			continue;
		bool ok;
		struct score sc;
		if ((err = arc_ok(in, j, unique[j], &ok, &sc)))
			break;
		bool evidence = sc.strong || sc.weak;
		if (!evidence)
			err = held_as(in, (uint32_t)j, unique[j],
				      (const struct hs_dtype *const *)unique, &evidence);
		conf[j] = evidence ? HS_INFER_SURE : HS_INFER_GUESS;
	}
	/* single candidates with evidence first, then single candidates
	 * without, then the best of several, strong evidence first; what
	 * each one holds is typed before the next pass (a char * member
	 * types its buffer before the buffer's own guess), and a block typed
	 * so keeps that type */
	for (int pass = 0; pass < 4 && !err; pass++) {
		for (size_t j = 0; j < in->n && !err; j++) {
			struct hs_dtype *d =
				pass == 0 ? (conf[j] == HS_INFER_SURE ? unique[j] : NULL) :
				pass == 1 ? (conf[j] == HS_INFER_SURE ? NULL : unique[j]) :
				tier[j] == pass - 1 ? best[j] : NULL;
			/* a program's block is rarely the C runtime's: its types
			 * are taken on evidence only, never guessed */
			if (!d || (pass && runtime_type(d)))
				continue;
			c->cur_conf = (pass == 0 ? HS_INFER_SURE : HS_INFER_GUESS) | HS_INFER_ONE;
			if (!assign(c, in->ids[j], d, FROM_DWARF))
				err = &hs_error_nomem;
		}
		if (!err)
			err = propagate(c);
	}
done:
	free(best);
	free(tier);
	free(unique);
	free(conf);
	return err;
}

/* A leaked block still untyped, in a heap chunk or small region no larger
 * than the largest struct the catalogue holds: one to infer a type for. */
static bool inferable(const struct hs_types *t, const struct hs_heap *heap,
		      const uint8_t *reach, uint64_t maxsize, uint32_t id)
{
	const struct hs_alloc *a = &heap->allocs[id];
	return (reach[id] == HS_REACH_LEAK_ROOT || reach[id] == HS_REACH_INDIRECT) &&
	       hs_types_cur(t, id) == HS_NO_TYPE && a->size <= maxsize &&
	       (hs_alloc_place(heap, a)->flags & HS_PLACE_CLASSED);
}

struct hs_error *hs_types_infer(struct hs_types *t, const struct hs_core *core,
				struct hs_dwarf *dw, const struct hs_heap *heap,
				const struct hs_graph *graph, const uint8_t *reach,
				unsigned nthreads, struct hs_log *log)
{
	struct ctx c = {.core = core, .dw = dw, .heap = heap, .graph = graph,
			.log = log, .t = t, .reach = reach};
	struct infer in = {.c = &c, .nthreads = nthreads};
	struct hs_error *err = &hs_error_nomem;
	size_t n = (size_t)graph->n + 1;
	if (!t->inferred && !(t->inferred = hs_calloc(n, 1)))
		return &hs_error_nomem;
	if ((err = hs_rankset_init(&in.set, n)))
		goto out;
	uint64_t maxsize = hs_heap_size_class(heap, HS_DSTRUCT_MAX_SIZE);
	for (uint32_t id = 0; id < graph->n; id++)
		if (inferable(t, heap, reach, maxsize, id))
			hs_rankset_add(&in.set, id);
	hs_rankset_finish(&in.set);
	size_t cnt = in.set.count;
	err = NULL;
	if (!cnt)
		goto out;
	char *skipped = NULL;
	if ((err = hs_dtypes_structs(t->reg, &skipped)))
		goto out;
	if (skipped) {
		hs_log_warn(log, "too many struct types to tell leaked blocks' types from (more than %d, or more than %d s): %s",
			    HS_DSTRUCT_MAX_TYPES, HS_DSTRUCT_MAX_SECONDS, skipped);
		free(skipped);
	}
	err = &hs_error_nomem;
	in.ids = hs_malloc(cnt * sizeof(uint32_t));
	in.cfirst = hs_malloc((cnt + 1) * sizeof(size_t));
	in.poff = hs_calloc(cnt + 2, sizeof(uint32_t));
	in.wfirst = hs_malloc((cnt + 1) * sizeof(size_t));
	if (!in.ids || !in.cfirst || !in.poff || !in.wfirst)
		goto out;
	/* the word codes: up to 8 bytes per allocation of the graph */
	in.nwords_max = 2 * (size_t)graph->n;
	for (uint32_t id = 0; id < graph->n; id++)
		if (hs_rankset_has(&in.set, id))
			in.ids[in.n++] = id;
	t->infer_candidates = in.n;
	in.max_checks = INFER_CHECKS_PER_BLOCK * (uint64_t)in.n;
	if (in.max_checks < INFER_MIN_CHECKS)
		in.max_checks = INFER_MIN_CHECKS;
	/* who holds whom among them (the reverse of the graph's rows) */
	for (size_t j = 0; j < in.n; j++) {
		uint32_t id = in.ids[j];
		struct hs_edges it = hs_graph_edges(graph, id);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t x = hs_rankset_index(&in.set, HS_EDGE_ID(e));
			if (x != HS_RANK_NONE)
				in.poff[x + 2]++;
		}
	}
	for (size_t j = 0; j < in.n; j++)
		in.poff[j + 2] += in.poff[j + 1];
	in.preds = hs_malloc(((size_t)in.poff[in.n + 1] + 1) * sizeof(uint32_t));
	if (!in.preds)
		goto out;
	for (size_t j = 0; j < in.n; j++) {
		uint32_t id = in.ids[j];
		struct hs_edges it = hs_graph_edges(graph, id);
		uint32_t e;
		while (hs_edges_next(&it, &e)) {
			uint32_t x = hs_rankset_index(&in.set, HS_EDGE_ID(e));
			if (x != HS_RANK_NONE)
				in.preds[in.poff[x + 1]++] = (uint32_t)j;
		}
	}
	err = infer_solve(&in);
	t->infer_checks += in.checks;
	if (err)
		goto out;
	if (in.over) {
		hs_log_warn(log, "the leaked blocks have too many candidate types (more than %" PRIu64 " checks, %d a block): they stay untyped",
			    in.max_checks, INFER_CHECKS_PER_BLOCK);
		goto out;
	}
	t->from_dwarf = t->typed - t->from_vtable - t->from_rtti;
out:
	work_vector_free(&c.work);
	hs_rankset_fini(&in.set);
	free(in.ids);
	free(in.cfirst);
	free(in.cand);
	free(in.alive);
	free(in.poff);
	free(in.preds);
	free(in.wfirst);
	free(in.words);
	for (size_t i = 0; i < in.npmask; i++)
		if (in.pmask[i] != &in.irregular)
			free(in.pmask[i]);
	free(in.pmask);
	return err;
}
