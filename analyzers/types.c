#include "src/sort.h"
#include "analyzers/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (the C++ ABI's own): heapsift links libstdc++
 * for this one function. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

struct vtable {
	uint64_t start, end;
	char *class_name;       /* demangled */
};

struct ctx {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	const struct hs_graph *graph;
	struct hs_log *log;
	struct hs_types *t;
	uint8_t *from;          /* per allocation: 0 none, 1 dwarf, 2 vtable */
	uint32_t *work;
	size_t nwork, capwork;
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
};

static int cmp_vt(const void *a, const void *b)
{
	const struct vtable *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static char *demangle(const char *mangled)
{
	int status = 0;
	char *s = __cxa_demangle(mangled, NULL, NULL, &status);
	return status == 0 ? s : NULL;
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
			char *d = demangle(name);
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
				struct vtable *v = realloc(c->vt, cap * sizeof(*v));
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
	return demangle(name);
}

static bool push(struct ctx *c, uint32_t id)
{
	if (c->nwork == c->capwork) {
		size_t cap = c->capwork ? 2 * c->capwork : 4096;
		uint32_t *w = realloc(c->work, cap * sizeof(*w));
		if (!w)
			return false;
		c->work = w;
		c->capwork = cap;
	}
	c->work[c->nwork++] = id;
	return true;
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

/* Gives allocation id the type d (see the rules in types.h). */
static bool assign(struct ctx *c, uint32_t id, struct hs_dtype *d, int from)
{
	struct hs_types *t = c->t;
	const struct hs_alloc *a = &c->heap->allocs[id];
	if (!hs_alloc_in_graph(a) || (d->size && d->size > a->size))
		return true;  /* does not fit: a cast, not this type */
	uint32_t cur = t->type_of[id];
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
	t->type_of[id] = d->index;
	c->from[id] = (uint8_t)from;
	return push(c, id);
}

static bool add_hold(struct ctx *c, uint32_t holder, uint32_t target, uint64_t v)
{
	struct hs_types *t = c->t;
	if (t->nholds == t->capholds) {
		size_t cap = t->capholds ? 2 * t->capholds : 64;
		struct hs_types_hold *h = realloc(t->holds, cap * sizeof(*h));
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
	if (c->inner_seen[id / 64] >> (id % 64) & 1)
		return true;
	c->inner_seen[id / 64] |= 1ull << (id % 64);
	if (c->ninner == c->capinner) {
		size_t cap = c->capinner ? 2 * c->capinner : 256;
		struct inner *w = realloc(c->inner, cap * sizeof(*w));
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
static bool follow(struct ctx *c, uint64_t v, struct hs_dtype *pointee,
		   uint32_t holder)
{
	if (v < c->graph->map.lo || v >= c->graph->map.hi)
		return true;
	bool interior;
	uint32_t id = hs_graph_target(c->graph, v, &interior);
	if (id == HS_NO_ALLOC)
		return true;
	if (interior) {
		/* (a block holds nothing by pointing into itself) */
		if (id != holder && !typed_interior(c, holder, id, v, pointee))
			return false;
		/* element k of an array */
		uint64_t off = v - c->heap->allocs[id].addr;
		if (!pointee->size || off % pointee->size)
			return true;
	}
	return assign(c, id, pointee, interior ? FROM_ELEMENT : FROM_DWARF);
}

/* The pointer slots of a typed object at addr (in a block or a root). */
static struct hs_error *scan_object(struct ctx *c, struct hs_dtype *d,
				    uint64_t addr, uint64_t limit, uint32_t holder)
{
	const struct hs_dptr *p;
	size_t n;
	struct hs_error *err = hs_dtype_pointers(c->t->reg, d, &p, &n);
	if (err)
		return err;
	if (!n)
		return NULL;
	/* the object in one piece of the core (the usual case), else word by
	 * word */
	const uint8_t *obj = hs_core_ptr(c->core, addr, limit);
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < p[i].count; k++) {
			uint64_t off = p[i].offset + k * p[i].stride;
			if (off + 8 > limit)
				break;
			uint64_t v;
			if (obj)
				memcpy(&v, obj + off, 8);
			else if (!hs_core_read_u64(c->core, addr + off, &v))
				continue;
			if (v < c->graph->map.lo || v >= c->graph->map.hi)
				continue;  /* not into the heap: no lookup */
			if (!follow(c, v, p[i].pointee, holder))
				return &hs_error_nomem;
		}
	}
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
		uint32_t before = t->type_of[id];
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
		if (k > 1 && t->type_of[id] == d->index) {
			if (t->nvarrays == t->capvarrays) {
				size_t cap = t->capvarrays ? 2 * t->capvarrays : 64;
				struct hs_types_count *v = realloc(t->varrays, cap * sizeof(*v));
				if (!v)
					return &hs_error_nomem;
				t->varrays = v;
				t->capvarrays = cap;
			}
			t->varrays[t->nvarrays++] = (struct hs_types_count){id, k};
		}
		if (t->type_of[id] != before) {
			if (vt)
				t->from_vtable++;
			else
				t->from_rtti++;
		}
	}
	return NULL;
}

static bool in_allocator_state(const struct hs_heap *heap, uint64_t addr,
			       uint64_t len)
{
	for (size_t i = 0; i < heap->nregions; i++)
		if (addr < heap->regions[i].end && addr + len > heap->regions[i].start)
			return true;
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
		err = hs_dtypes_variables(t->reg, m, &vars, &nvars);
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
		if (!v->tls && in_allocator_state(c->heap, v->addr, limit))
			continue;  /* main_arena, mp_: never a root */
		if (!v->tls) {
			err = scan_object(c, v->type, v->addr, limit, HS_NO_ALLOC);
			continue;
		}
		for (size_t k = 0; k < c->core->nthreads && !err; k++) {
			uint64_t fs = c->core->threads[k].regs[HS_REG_FS_BASE], block;
			if (fs && hs_dwarf_tls_block(c->dw, c->core, v->mod, fs, &block))
				err = scan_object(c, v->type, block + v->addr, limit,
						  HS_NO_ALLOC);
		}
	}
	hs_dvars_free(vars, nvars);
	return err;
}

static struct hs_error *propagate(struct ctx *c)
{
	struct hs_types *t = c->t;
	while (c->nwork || c->ninner) {
		if (!c->nwork) {
			struct inner in = c->inner[--c->ninner];
			struct hs_error *err = scan_object(c, in.d, in.addr, in.d->size, in.id);
			if (err)
				return err;
			continue;
		}
		uint32_t id = c->work[--c->nwork];
		struct hs_dtype *d = t->reg->v[t->type_of[id]];
		const struct hs_alloc *a = &c->heap->allocs[id];
		if (!d->size)
			continue;
		uint64_t k = hs_types_count(t, c->heap, id);
		for (uint64_t e = 0; e < k; e++) {
			struct hs_error *err = scan_object(c, d, a->addr + e * d->size,
							   d->size, id);
			if (err)
				return err;
		}
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
		struct hs_dtype *d = t->reg->v[t->type_of[id]];
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
		t->type_of[id] = slab->index;
		t->slabs++;
	}
	return NULL;
}

struct hs_error *hs_types_compute(const struct hs_core *core,
				  struct hs_dwarf *dw,
				  const struct hs_heap *heap,
				  const struct hs_graph *graph,
				  struct hs_log *log, struct hs_types **ret)
{
	struct hs_types *t = calloc(1, sizeof(*t));
	if (!t)
		return &hs_error_nomem;
	struct ctx c = {.core = core, .dw = dw, .heap = heap, .graph = graph,
			.log = log, .t = t};
	struct hs_error *err = hs_dtypes_create(dw, &t->reg);
	if (err)
		goto out;
	err = &hs_error_nomem;
	t->type_of = malloc(((size_t)graph->n + 1) * sizeof(uint32_t));
	c.from = calloc((size_t)graph->n + 1, 1);
	c.inner_seen = calloc((size_t)graph->n / 64 + 1, sizeof(uint64_t));
	if (!t->type_of || !c.from || !c.inner_seen)
		goto out;
	memset(t->type_of, 0xff, ((size_t)graph->n + 1) * sizeof(uint32_t));
	if ((err = collect_vtables(&c)) || (err = seed_vtables(&c)) ||
	    (err = propagate(&c)) || (err = seed_variables(&c)) ||
	    (err = propagate(&c)) || (err = name_slabs(&c)))
		goto out;
	t->from_dwarf = t->typed - t->from_vtable - t->from_rtti;
	if (t->conflicts)
		hs_log_warn(log, "%llu blocks were given two types of one size (%s); the first was kept",
			    (unsigned long long)t->conflicts,
			    t->conflict_example ? t->conflict_example : "");
out:
	for (size_t i = 0; i < c.nvt; i++)
		free(c.vt[i].class_name);
	free(c.vt);
	free(c.work);
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
	free(t->type_of);
	free(t->conflict_example);
	free(t->varrays);
	free(t->holds);
	free(t);
}

uint64_t hs_types_count(const struct hs_types *t, const struct hs_heap *heap,
			uint32_t id)
{
	struct hs_dtype *d = hs_types_of(t, id);
	if (!d || !d->size)
		return 1;
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
	if (k >= 2)
		snprintf(buf, len, "%s[%llu]", d->name, (unsigned long long)k);
	else
		snprintf(buf, len, "%s", d->name);
	return buf;
}
