/* CPython's objects in the heap: see python.h. */
#include "analyzers/python.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/pymalloc.h"
#include "analyzers/graph.h"
#include "analyzers/roots.h"
#include "src/alloc.h"
#include "src/parallel.h"
#include "src/vector.h"

/* PyTypeObject (Include/cpython/object.h; the same offsets from 3.8 to
 * 3.13) and the flags this reads */
enum {
	OB_TYPE = 8,
	TP_NAME = 24,
	TP_BASICSIZE = 32,
	TP_ITEMSIZE = 40,
	TP_FLAGS = 168,
	TP_DICT = 264,
	F_MANAGED_WEAKREF = 1 << 3,
	F_MANAGED_DICT = 1 << 4,
	F_HEAPTYPE = 1 << 9,
	F_READY = 1 << 12,
	F_HAVE_GC = HS_PY_HAVE_GC,
	F_LONG_SUBCLASS = 1 << 24,
	F_LIST_SUBCLASS = 1 << 25,
	F_UNICODE_SUBCLASS = 1 << 28,
	F_DICT_SUBCLASS = 1 << 29,
	F_TYPE_SUBCLASS = 1u << 31,
	MAX_NAME = 200,
	/* distinct candidate type pointers remembered as not types */
	MAX_NEGATIVE = 1 << 20,
	MAX_TYPES = 1 << 20,
};

struct slot {
	uint64_t key;           /* 0: empty */
	uint32_t value;         /* type index, or HS_PY_NONE: not a type */
};

struct ctx {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	struct hs_log *log;
	struct hs_pyobjects *p;
	/* list items that point into a heap block at no object's start */
	uint64_t stray, stray_list, stray_item;
	uint64_t type_type, dict_type, list_type, set_type;
	/* the value types (python.h: HS_PY_VALUE) */
	uint64_t str_type, bytes_type, long_type, float_type;
	struct slot *map;
	size_t mapcap, mapn, negatives;
	size_t typecap;
	size_t ntails, tailcap;
	/* the block being classified: its first words, found once (none
	 * while the core's reads are traced: they must be seen) */
	const uint64_t *head;
	uint64_t head_addr, head_len;
	struct hs_core_near near;       /* the blocks come in address order */
	/* with two threads classifying: the modules' files are read under
	 * it (their ELF handles are loaded as they are first read) */
	pthread_mutex_t *file_lock;
};

/* The word at addr (in the core's mapping: the words there whatever block
 * asks). */
static inline bool head_word(const struct ctx *c, uint64_t addr, uint64_t *v)
{
	uint64_t k = addr - c->head_addr;
	if (k < c->head_len && c->head_len - k >= 8) {
		memcpy(v, (const uint8_t *)c->head + k, 8);
		return true;
	}
	return hs_core_read_u64(c->core, addr, v);
}

/* What the core lacks, from the module's file (read-only data). */
static bool rd_file(struct ctx *c, uint64_t addr, void *buf, size_t len)
{
	if (!c->dw)
		return false;
	if (c->file_lock)
		pthread_mutex_lock(c->file_lock);
	bool ok = hs_dwarf_read_file(c->dw, addr, buf, len);
	if (c->file_lock)
		pthread_mutex_unlock(c->file_lock);
	return ok;
}

static bool rd(struct ctx *c, uint64_t addr, uint64_t *v)
{
	return hs_core_read_u64(c->core, addr, v) || rd_file(c, addr, v, sizeof(*v));
}

/* A NUL-terminated printable string of at most MAX_NAME bytes. */
static bool rd_cstr(struct ctx *c, uint64_t addr, char *buf, size_t len)
{
	size_t i = 0;
	for (; i + 1 < len; i++) {
		char ch;
		if (!hs_core_read_quiet(c->core, addr + i, &ch, 1) &&
		    !rd_file(c, addr + i, &ch, 1))
			return false;
		if (!ch)
			break;
		if ((unsigned char)ch < 0x20 || (unsigned char)ch == 0x7f)
			return false;
		buf[i] = ch;
	}
	buf[i] = 0;
	return i > 0 && i + 1 < len;
}

/* A str object's text when it is compact ASCII (3.11: data at +48; 3.12
 * and later: +40). */
static bool rd_ascii(struct ctx *c, uint64_t s, char *buf, size_t len)
{
	uint64_t type, length, state;
	if (!rd(c, s + OB_TYPE, &type) || !rd(c, s + 16, &length) ||
	    !rd(c, s + 32, &state))
		return false;
	/* state: interned 2 bits, kind 3, compact 1, ascii 1 */
	bool compact = state >> 5 & 1, ascii = state >> 6 & 1;
	if (!compact || !ascii || !length || length + 1 > len)
		return false;
	uint64_t data = s + (c->p->minor >= 12 ? 40 : 48);
	if (!hs_core_read_quiet(c->core, data, buf, length))
		return false;
	buf[length] = 0;
	for (uint64_t i = 0; i < length; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
			return false;
	return true;
}

/* d[key] of a dict whose keys are compact ASCII strings (a type's dict),
 * 3.11 and 3.12: PyDictObject {ob_refcnt, ob_type, ma_used,
 * ma_version_tag, ma_keys, ma_values}; the keys object {dk_refcnt,
 * dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version, dk_usable,
 * dk_nentries, dk_indices[1 << dk_log2_index_bytes]}, then the entries:
 * {me_hash, me_key, me_value} (general) or {me_key, me_value} (unicode). */
static bool dict_get(struct ctx *c, uint64_t d, const char *key, uint64_t *ret)
{
	uint64_t keys, values, w1, nentries;
	if (!rd(c, d + 32, &keys) || !rd(c, d + 40, &values) || values ||
	    !rd(c, keys + 8, &w1) || !rd(c, keys + 24, &nentries))
		return false;
	unsigned log2_index_bytes = w1 >> 8 & 0xff, kind = w1 >> 16 & 0xff;
	if (log2_index_bytes > 24 || kind > 1 || nentries > 1 << 16)
		return false;
	uint64_t entries = keys + 32 + (1ULL << log2_index_bytes);
	uint64_t esz = kind ? 16 : 24, koff = kind ? 0 : 8;
	char name[MAX_NAME];
	for (uint64_t i = 0; i < nentries; i++) {
		uint64_t k, v;
		if (!rd(c, entries + i * esz + koff, &k) || !k)
			continue;
		if (!rd_ascii(c, k, name, sizeof(name)) || strcmp(name, key))
			continue;
		if (!rd(c, entries + i * esz + koff + 8, &v))
			return false;
		*ret = v;
		return true;
	}
	return false;
}

static struct slot *slot_of(struct ctx *c, uint64_t key)
{
	size_t mask = c->mapcap - 1;
	size_t i = (key * 0x9E3779B97F4A7C15ull >> 20) & mask;
	while (c->map[i].key && c->map[i].key != key)
		i = (i + 1) & mask;
	return &c->map[i];
}

static struct hs_error *map_put(struct ctx *c, uint64_t key, uint32_t value)
{
	if ((c->mapn + 1) * 2 > c->mapcap) {
		size_t cap = c->mapcap ? 2 * c->mapcap : 1024;
		struct slot *old = c->map;
		size_t oldcap = c->mapcap;
		c->map = hs_calloc(cap, sizeof(*c->map));
		if (!c->map) {
			c->map = old;
			return &hs_error_nomem;
		}
		c->mapcap = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].key)
				*slot_of(c, old[i].key) = old[i];
		free(old);
	}
	struct slot *s = slot_of(c, key);
	if (!s->key)
		c->mapn++;
	*s = (struct slot){key, value};
	return NULL;
}

static struct hs_error *add_type(struct ctx *c, uint64_t addr, const char *name,
				 uint64_t flags, uint64_t basicsize,
				 uint64_t itemsize, uint32_t *ret)
{
	struct hs_pyobjects *p = c->p;
	if (p->ntypes >= MAX_TYPES) {
		*ret = HS_PY_NONE;
		return NULL;
	}
	if (p->ntypes == c->typecap) {
		size_t cap = c->typecap ? 2 * c->typecap : 64;
		struct hs_pytype *v = hs_realloc(p->types, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		p->types = v;
		c->typecap = cap;
	}
	char *n = strdup(name);
	if (!n)
		return &hs_error_nomem;
	p->types[p->ntypes] = (struct hs_pytype){
		.addr = addr, .name = n, .flags = flags, .basicsize = basicsize,
		.itemsize = itemsize,
	};
	*ret = (uint32_t)p->ntypes++;
	return NULL;
}

/* Is t a type object: `type`, or a class of it (a metaclass, bounded)? */
static bool is_type_object(struct ctx *c, uint64_t t, int depth)
{
	uint64_t meta, flags;
	if (!rd(c, t + OB_TYPE, &meta))
		return false;
	if (meta == c->type_type)
		return true;
	if (depth >= 3 || !rd(c, meta + TP_FLAGS, &flags) ||
	    !(flags & F_TYPE_SUBCLASS))
		return false;
	return is_type_object(c, meta, depth + 1);
}

/* The type at t: its index, HS_PY_NONE when t is not one (remembered). */
static struct hs_error *type_at(struct ctx *c, uint64_t t, uint32_t *ret)
{
	*ret = HS_PY_NONE;
	if (!t || t & 7)
		return NULL;
	if (c->mapcap) {
		struct slot *s = slot_of(c, t);
		if (s->key) {
			*ret = s->value;
			return NULL;
		}
	}
	if (!hs_core_find_segment(c->core, t))
		return NULL;    /* never cached: most candidates are not pointers */
	uint64_t flags, basicsize, itemsize, name_at;
	char name[MAX_NAME], module[MAX_NAME], full[2 * MAX_NAME + 2];
	bool ok = is_type_object(c, t, 0) && rd(c, t + TP_FLAGS, &flags) &&
		  (flags & F_READY) && rd(c, t + TP_BASICSIZE, &basicsize) &&
		  basicsize >= 16 && basicsize <= 1 << 24 &&
		  rd(c, t + TP_ITEMSIZE, &itemsize) && itemsize <= 1 << 16 &&
		  rd(c, t + TP_NAME, &name_at) && rd_cstr(c, name_at, name, sizeof(name));
	if (!ok) {
		if (c->negatives >= MAX_NEGATIVE)
			return NULL;
		c->negatives++;
		return map_put(c, t, HS_PY_NONE);
	}
	const char *n = name;
	uint64_t tdict, mod;
	if ((flags & F_HEAPTYPE) && (c->p->minor == 11 || c->p->minor == 12) &&
	    !strchr(name, '.') && rd(c, t + TP_DICT, &tdict) && tdict &&
	    dict_get(c, tdict, "__module__", &mod) &&
	    rd_ascii(c, mod, module, sizeof(module)) && strcmp(module, "builtins")) {
		snprintf(full, sizeof(full), "%s.%s", module, name);
		n = full;
	}
	struct hs_error *err = add_type(c, t, n, flags, basicsize, itemsize, ret);
	if (!err)
		err = map_put(c, t, *ret);
	return err;
}

static uint64_t preheader(const struct ctx *c, uint64_t flags)
{
	uint64_t n = flags & F_HAVE_GC ? 16 : 0;
	if (c->p->minor == 11)
		n += flags & F_MANAGED_DICT ? 16 : 0;
	else if (c->p->minor >= 12)
		n += flags & (F_MANAGED_DICT | F_MANAGED_WEAKREF) ? 16 : 0;
	return n;
}

/* Whether an object that ends `end` bytes into block a agrees with it:
 * within it, and followed by no more than the allocator's rounding. */
static bool fits(const struct hs_alloc *a, uint64_t end)
{
	uint64_t words = a->size / 8, used = (end + 7) / 8;
	return used <= words && words - used <= 3;
}

/* Words of block a past the end of the object of type pt at off in it
 * (python.h: struct hs_py_skip), 0 to 3; 0 when its end is not known. */
static uint32_t tail_words(struct ctx *c, const struct hs_alloc *a,
			   const struct hs_pytype *pt, uint64_t off)
{
	uint64_t end = pt->basicsize, n;
	if (pt->flags & F_UNICODE_SUBCLASS ||
	    (pt->itemsize && (pt->flags & F_LONG_SUBCLASS) && c->p->minor >= 12))
		return 0;
	if (pt->itemsize) {
		/* ob_size; an int's is negative for a negative number */
		if (!head_word(c, a->addr + off + 16, &n))
			return 0;
		if ((int64_t)n < 0)
			n = -n;
		if (n > a->size / pt->itemsize)
			return 0;
		end += n * pt->itemsize;
	}
	end = off + ((end + 7) & ~7ull);
	return fits(a, end) ? (uint32_t)(a->size / 8 - end / 8) : 0;
}

/* The form of the value object (python.h: HS_PY_VALUE) of type pt at the
 * start of block a, or -1 when it is none: another type, or size fields
 * that do not agree with the block (then it is scanned whole). */
static int value_form(struct ctx *c, const struct hs_alloc *a,
		      const struct hs_pytype *pt)
{
	uint64_t t = pt->addr, v, state;
	unsigned minor = c->p->minor;
	if (!t || (t != c->str_type && t != c->bytes_type &&
		   t != c->long_type && t != c->float_type))
		return -1;
	if (t == c->float_type)
		return pt->basicsize == 24 && fits(a, 24) ? HS_PY_VALUE_ALL : -1;
	/* ob_size (bytes, int up to 3.11), lv_tag (int from 3.12: the
	 * digits above 3 bits of sign and flags), length (str) */
	if (!head_word(c, a->addr + 16, &v))
		return -1;
	if (t == c->bytes_type)
		return pt->basicsize == 33 && pt->itemsize == 1 && v <= a->size &&
		       fits(a, 33 + v) ? HS_PY_VALUE_ALL : -1;
	if (t == c->long_type) {
		uint64_t n = minor >= 12 ? v >> 3 : (int64_t)v < 0 ? -v : v;
		return pt->basicsize == 24 && pt->itemsize == 4 && n <= a->size / 4 &&
		       fits(a, 24 + 4 * (n ? n : 1)) ? HS_PY_VALUE_ALL : -1;
	}
	/* a str: state's bits are interned (2), kind (3: 1, 2 or 4 bytes a
	 * character), compact, ascii, and up to 3.11 ready */
	if (v > a->size || !head_word(c, a->addr + 32, &state))
		return -1;
	unsigned kind = (state >> 2) & 7;
	bool compact = state >> 5 & 1, ascii = state >> 6 & 1, ready = state >> 7 & 1;
	if (minor <= 11 && !ready)
		return -1;
	if (!compact)   /* its characters in a block of their own */
		return fits(a, pt->basicsize) ? HS_PY_VALUE_STR_HEAD : -1;
	if (ascii)
		return kind == 1 && fits(a, (minor <= 11 ? 48 : 40) + v + 1) ?
		       (minor <= 11 ? HS_PY_VALUE_STR_ASCII : HS_PY_VALUE_ALL) : -1;
	return (kind == 1 || kind == 2 || kind == 4) &&
	       fits(a, (minor <= 11 ? 72 : 56) + (v + 1) * kind) ? HS_PY_VALUE_STR : -1;
}

/* The object block a holds, if any: its kind (python.h). */
static struct hs_error *classify(struct ctx *c, const struct hs_alloc *a,
				 uint32_t *ret)
{
	*ret = HS_PY_NONE;
	/* what is read below lies in the first 56 bytes: one lookup */
	c->head_addr = a->addr;
	c->head_len = a->size < 56 ? a->size & ~7ull : 56;
	c->head = c->core->trace ? NULL : hs_core_ptr_near(c->core, &c->near, a->addr,
							   c->head_len);
	if (!c->head)
		c->head_len = 0;
	for (uint64_t off = 0; off <= 32 && off + 16 <= a->size; off += 16) {
		uint64_t refcnt, type;
		/* a count, not an address (a large count that is one is
		 * taken for a pointer: a block that starts with a pointer
		 * and then one to a type is no object) */
		if (!head_word(c, a->addr + off, &refcnt) ||
		    !refcnt || refcnt > 1ULL << 40 ||
		    (refcnt >= 1 << 16 && hs_core_find_segment(c->core, refcnt)) ||
		    !head_word(c, a->addr + off + OB_TYPE, &type))
			continue;
		uint32_t ti;
		struct hs_error *err = type_at(c, type, &ti);
		if (err)
			return err;
		if (ti == HS_PY_NONE)
			continue;
		const struct hs_pytype *pt = &c->p->types[ti];
		/* not the basic size: a str or an int is smaller than
		 * its type's (the compact forms) */
		if (preheader(c, pt->flags) != off)
			continue;
		int form = off ? -1 : value_form(c, a, pt);
		*ret = ti << HS_PY_TYPE_SHIFT | (uint32_t)(off / 16) |
		       (form >= 0 ? HS_PY_VALUE | (uint32_t)form << HS_PY_TAIL_SHIFT :
			tail_words(c, a, pt, off) << HS_PY_TAIL_SHIFT);
		return NULL;
	}
	return NULL;
}

/* The block that starts at addr, as an index, or -1. */
static int64_t block_at(const struct hs_heap *heap, uint64_t addr)
{
	const struct hs_alloc *a = addr ? hs_heap_find(heap, addr) : NULL;
	if (!a || a->addr != addr || hs_alloc_state(a) != HS_STATE_USED)
		return -1;
	return a - heap->allocs;
}

/* A part's type (created on first use). */
static struct hs_error *part_type(struct ctx *c, const char *name, uint8_t part,
				  uint64_t owner, uint32_t *ret)
{
	for (size_t i = 0; i < c->p->ntypes; i++)
		if (!c->p->types[i].addr && !strcmp(c->p->types[i].name, name)) {
			*ret = (uint32_t)i;
			return NULL;
		}
	struct hs_error *err = add_type(c, 0, name, 0, 0, 0, ret);
	if (!err && *ret != HS_PY_NONE) {
		c->p->types[*ret].part = part;
		c->p->types[*ret].owner = owner;
	}
	return err;
}

/* within: a pointer up to that many bytes into the block names it;
 * *marked (may be NULL): the block marked, or -1 */
static struct hs_error *mark_part_at(struct ctx *c, uint64_t at, const char *name,
				     uint8_t part, uint64_t owner, uint64_t within,
				     int64_t *marked)
{
	if (marked)
		*marked = -1;
	int64_t b = block_at(c->heap, at);
	if (b < 0 && within && at) {
		const struct hs_alloc *a = hs_heap_find(c->heap, at);
		if (a && at - a->addr <= within && !((at - a->addr) % 8) &&
		    hs_alloc_state(a) == HS_STATE_USED)
			b = a - c->heap->allocs;
	}
	if (b < 0 || c->p->kind[b] != HS_PY_NONE)
		return NULL;
	uint32_t ti;
	struct hs_error *err = part_type(c, name, part, owner, &ti);
	if (err || ti == HS_PY_NONE)
		return err;
	uint64_t prefix = at - c->heap->allocs[b].addr;
	c->p->kind[b] = ti << HS_PY_TYPE_SHIFT | HS_PY_PART | (uint32_t)(prefix / 8);
	c->p->parts++;
	if (marked)
		*marked = b;
	return NULL;
}

static struct hs_error *mark_part(struct ctx *c, uint64_t at, const char *name,
				  uint8_t part, uint64_t owner, uint64_t within)
{
	return mark_part_at(c, at, name, part, owner, within, NULL);
}

/* The item array b of a list of n items: its words past them. */
static struct hs_error *list_tail(struct ctx *c, int64_t b, uint64_t n)
{
	uint64_t words = c->heap->allocs[b].size / 8;
	if (n >= words)
		return NULL;
	if (c->ntails == c->tailcap) {
		size_t cap = c->tailcap ? 2 * c->tailcap : 64;
		struct hs_py_tail *v = hs_realloc(c->p->tails, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		c->p->tails = v;
		c->tailcap = cap;
	}
	c->p->tails[c->ntails++] = (struct hs_py_tail){(uint32_t)b, (uint32_t)(words - n)};
	c->p->ntails = c->ntails;
	return NULL;
}

static int cmp_tail(const void *a, const void *b)
{
	const struct hs_py_tail *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* A list's items are objects: one that points into a used block where
 * no object starts is evidence of a corrupt object (its ob_type), or of
 * a corrupt list.  Items outside the heap are static objects (None,
 * small ints, builtin types). */
static void check_items(struct ctx *c, uint64_t list, uint64_t items)
{
	uint64_t n, p;
	const struct hs_alloc *ia = hs_heap_find(c->heap, items);
	if (!rd(c, list + 16, &n) || !ia || ia->addr != items ||
	    n > ia->size / 8)
		return;
	for (uint64_t i = 0; i < n; i++) {
		if (!hs_core_read_u64(c->core, items + 8 * i, &p))
			return;
		const struct hs_alloc *a = hs_heap_find(c->heap, p);
		if (!a || hs_alloc_state(a) != HS_STATE_USED)
			continue;
		uint32_t k = c->p->kind[a - c->heap->allocs];
		if (k != HS_PY_NONE && a->addr + hs_py_offset(k) == p)
			continue;
		if (!c->stray++) {
			c->stray_list = list;
			c->stray_item = p;
		}
	}
}

/* The variable parts of the dicts, lists and sets (python.h). */
static struct hs_error *parts(struct ctx *c)
{
	struct hs_pyobjects *p = c->p;
	struct hs_error *err = NULL;
	for (size_t i = 0; i < c->heap->nallocs && !err; i++) {
		uint32_t k = p->kind[i];
		if (k == HS_PY_NONE)
			continue;
		/* a copy: mark_part may grow p->types */
		const struct hs_pytype tc = p->types[hs_py_type_index(k)], *t = &tc;
		if (!t->addr)
			continue;
		uint64_t obj = c->heap->allocs[i].addr + hs_py_offset(k), v;
		if (t->addr == c->dict_type || (t->flags & F_DICT_SUBCLASS)) {
			if (rd(c, obj + 32, &v))
				err = mark_part(c, v, "dict (keys)", HS_PY_PART_KEYS, 0, 0);
			/* an instance's values that its dict took over (3.11,
			 * 3.12: past their prefix, as in the pre-header) */
			if (!err && rd(c, obj + 40, &v))
				err = mark_part(c, v, "dict (values)", HS_PY_PART_OTHER, 0, 56);
		} else if (t->addr == c->list_type || (t->flags & F_LIST_SUBCLASS)) {
			int64_t b;
			uint64_t n;
			if (rd(c, obj + 24, &v)) {
				err = mark_part_at(c, v, "list (items)", HS_PY_PART_ITEMS, 0, 0, &b);
				if (!err && b >= 0 && rd(c, obj + 16, &n))
					err = list_tail(c, b, n);
				check_items(c, obj, v);
			}
		} else if (c->p->minor == 11 && (t->flags & F_MANAGED_DICT) &&
			   hs_py_offset(k) == 32) {
			/* 3.11's pre-header: the instance's attribute values
			 * (past a prefix of at most 56 bytes: insertion order
			 * bytes, and its size in the last), then its dict */
			char name[MAX_NAME + 16];
			snprintf(name, sizeof(name), "%s (values)", t->name);
			if (rd(c, obj - 32, &v))
				err = mark_part(c, v, name, HS_PY_PART_VALUES, t->addr, 56);
		} else if (c->set_type && t->addr == c->set_type) {
			/* PySetObject: table at +40, smalltable inline at +64 */
			if (rd(c, obj + 40, &v) && v != obj + 64)
				err = mark_part(c, v, "set (table)", HS_PY_PART_OTHER, 0, 0);
		}
	}
	return err;
}

static uint64_t symbol(struct hs_dwarf *dw, struct hs_module *m, const char *name)
{
	uint64_t v;
	return hs_dwarf_symbol_addr(dw, m, name, &v) ? v : 0;
}

static void value_types(struct ctx *c, struct hs_dwarf *dw, struct hs_module *m)
{
	c->str_type = symbol(dw, m, "PyUnicode_Type");
	c->bytes_type = symbol(dw, m, "PyBytes_Type");
	c->long_type = symbol(dw, m, "PyLong_Type");
	c->float_type = symbol(dw, m, "PyFloat_Type");
}

/* _PyStackChunk: previous, size, top (in words, saved when a newer chunk
 * is pushed), then the data */
enum { CHUNK_DATA = 24, CHUNK_MIN = 16 * 1024, CHUNK_MAX = 1u << 30,
       MAX_STACKS = 4096 };

struct stacks {
	const struct hs_core *core;
	struct hs_root_stack *v;
	size_t n, cap;
};

/* Is it a chunk: anonymous memory, its size word agreeing with end? */
static bool chunk_at(const struct hs_core *core, uint64_t chunk, uint64_t end)
{
	uint64_t size;
	const struct hs_core_segment *s = hs_core_find_segment(core, chunk);
	return s && s->file < 0 && (s->flags & HS_SEG_W) &&
	       hs_core_read_u64(core, chunk + 8, &size) && chunk + size == end &&
	       end <= s->vaddr + s->memsz;
}

static struct hs_error *add_stack(struct stacks *st, uint64_t chunk, uint64_t top,
				  uint64_t end)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].base == chunk)
			return NULL;
	if (st->n >= MAX_STACKS)
		return NULL;    /* a corrupt core's: the rest stay unexplained */
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 8;
		struct hs_root_stack *v = hs_realloc(st->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		st->v = v;
		st->cap = cap;
	}
	st->v[st->n++] = (struct hs_root_stack){chunk, chunk + CHUNK_DATA, top, end,
						"python frames"};
	return NULL;
}

/* Words w[0..n): thread states' (chunk, top, limit); each found, with the
 * chunks before it (bounded: a loop in the links ends it). */
static struct hs_error *find_states(struct stacks *st, const uint64_t *w, size_t n)
{
	for (size_t i = 0; i + 3 <= n; i++) {
		uint64_t chunk = w[i], top = w[i + 1], end = w[i + 2];
		if ((chunk | top | end) & 7 || end - chunk < CHUNK_MIN ||
		    end - chunk > CHUNK_MAX || top < chunk + CHUNK_DATA || top > end ||
		    !chunk_at(st->core, chunk, end))
			continue;
		struct hs_error *err = add_stack(st, chunk, top, end);
		uint64_t prev, size, words;
		for (int k = 0; !err && k < 4096 &&
		     hs_core_read_u64(st->core, chunk, &prev) && prev; k++) {
			if (prev & 7 || !hs_core_read_u64(st->core, prev + 8, &size) ||
			    size < CHUNK_MIN || size > CHUNK_MAX ||
			    !chunk_at(st->core, prev, prev + size) ||
			    !hs_core_read_u64(st->core, prev + 16, &words) ||
			    words > (size - CHUNK_DATA) / 8)
				break;
			err = add_stack(st, prev, prev + CHUNK_DATA + 8 * words, prev + size);
			chunk = prev;
		}
		if (err)
			return err;
		i += 2;
	}
	return NULL;
}

/* Segment i's words when it is writable data of module m's span, wholly
 * in the core file (*n of them), else NULL. */
static const uint64_t *module_data(const struct hs_core *core, const struct hs_module *m,
				   size_t i, size_t *n)
{
	const struct hs_core_segment *s = &core->segs[i];
	if (!(s->flags & HS_SEG_W) || s->vaddr < m->start || s->vaddr + s->memsz > m->end)
		return NULL;
	*n = s->memsz / 8;
	return hs_core_ptr(core, s->vaddr, s->memsz);
}

struct hs_error *hs_python_stacks(const struct hs_core *core,
				  struct hs_dwarf *dw,
				  const struct hs_heap *heap,
				  struct hs_root_stack **ret, size_t *count)
{
	*ret = NULL;
	*count = 0;
	unsigned minor;
	struct hs_module *m = dw ? hs_pymalloc_python(dw, &minor) : NULL;
	if (!m || minor < 11)
		return NULL;
	struct stacks st = {.core = core};
	struct hs_error *err = NULL;
	/* the interpreter's writable data: the main thread's state */
	for (size_t i = 0; i < core->nsegs && !err; i++) {
		size_t n;
		const uint64_t *w = module_data(core, m, i, &n);
		if (w)
			err = find_states(&st, w, n);
	}
	/* the other threads' states: malloc's blocks */
	for (size_t i = 0; i < heap->nallocs && !err; i++) {
		const struct hs_alloc *a = &heap->allocs[i];
		if (hs_alloc_state(a) != HS_STATE_USED || a->size < 256 || a->size > 4096)
			continue;
		const uint64_t *w = hs_core_ptr(core, a->addr, a->size);
		if (w)
			err = find_states(&st, w, a->size / 8);
	}
	if (err) {
		free(st.v);
		return err;
	}
	*ret = st.v;
	*count = st.n;
	return NULL;
}

/* ---- free lists ---- */

/* A core whose data holds nothing but addresses of lists could make each
 * word a candidate array of 80 slots to check: MAX_CANDIDATES bounds
 * that work (Debian's python3.11 checks 250 to 273: every word of its
 * data that points to a list or a dict). */
enum { FREE_SLOTS = 80, FREE_ARRAY = 8 * FREE_SLOTS, MAX_STALE = 64,
       MAX_CANDIDATES = 1 << 12 };

struct free_lists {
	const struct hs_core *core;
	const struct hs_heap *heap;
	struct hs_root_stale *v;
	size_t n, cap;
	size_t candidates;      /* arrays checked */
};

/* Of the 80 slots at w: in *freed how many leading slots hold objects
 * of type `type` (any block when type is 0) whose reference count is 0
 * (for type 0: are not null); false when a slot is neither null nor the
 * address of a block (an object of the type, or a block freed or reused
 * since: the slots above the count keep the objects taken from them). */
static bool free_slots(const struct free_lists *fl, const uint64_t *w, uint64_t type,
		       unsigned *freed)
{
	bool prefix = true;
	*freed = 0;
	for (unsigned i = 0; i < FREE_SLOTS; i++) {
		uint64_t p = w[i], t, rc = 0;
		if (!p) {
			prefix = false;
			continue;
		}
		if (p & 7 || !hs_heap_find(fl->heap, p))
			return false;
		if (!prefix)
			continue;
		if (type && (!hs_core_read_u64(fl->core, p + OB_TYPE, &t) || t != type ||
			     !hs_core_read_u64(fl->core, p, &rc) || rc))
			prefix = false;
		else
			(*freed)++;
	}
	return true;
}

static struct hs_error *free_add(struct free_lists *fl, uint64_t array, unsigned count,
				 const char *what)
{
	if (count >= FREE_SLOTS || fl->n >= MAX_STALE)
		return NULL;
	for (size_t i = 0; i < fl->n; i++)
		if (fl->v[i].start < array + FREE_ARRAY && array + 8 * count < fl->v[i].end)
			return NULL;    /* one found already holds these words */
	if (fl->n == fl->cap) {
		struct hs_root_stale *v = hs_vector_grow(fl->v, fl->n, &fl->cap, 1, sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		fl->v = v;
	}
	fl->v[fl->n++] = (struct hs_root_stale){array + 8 * count, array + FREE_ARRAY, what};
	return NULL;
}

/* A count (an int) at w's byte offset off, if it is one for slots whose
 * first `freed` hold freed objects.  An empty list is not taken: its
 * first slot, which anchors it, may hold anything by now. */
static bool free_count(const struct free_lists *fl, const uint64_t *w, uint64_t at,
		       size_t off, unsigned freed, unsigned *count)
{
	int32_t c;
	memcpy(&c, (const uint8_t *)w + off, 4);
	if (c < 1 || (unsigned)c > freed)
		return false;
	hs_core_touch(fl->core, at + off, 4);   /* a redacted copy keeps it */
	*count = (unsigned)c;
	return true;
}

/* The free lists among the n words at w (at address at). */
static struct hs_error *find_free_lists(struct free_lists *fl, const uint64_t *w, size_t n,
					uint64_t at, unsigned minor,
					uint64_t list_type, uint64_t dict_type)
{
	struct hs_error *err = NULL;
	/* a list's array and its count; a dict's, the keys' after it */
	size_t need = minor == 12 ? 2 * FREE_SLOTS + 1 : 2 * FREE_SLOTS + 2;
	for (size_t i = 0; i + FREE_SLOTS + 1 <= n && !err; i++) {
		uint64_t p = w[i], t;
		if (!p || p & 7 || !hs_core_read_u64(fl->core, p + OB_TYPE, &t) ||
		    (t != list_type && t != dict_type))
			continue;
		unsigned freed, kfreed, count, kcount;
		if (++fl->candidates > MAX_CANDIDATES)
			break;
		if (!free_slots(fl, w + i, t, &freed))
			continue;
		uint64_t array = at + 8 * i;
		if (t == list_type) {
			if (free_count(fl, w + i, array, FREE_ARRAY, freed, &count)) {
				err = free_add(fl, array, count, "python free list of lists");
				i += FREE_SLOTS - 1;    /* its slots start nothing */
			}
			continue;
		}
		if (i + need > n)
			continue;
		/* 3.11, 3.13: the dicts' count, then the keys' array and its
		 * count; 3.12: the keys' array follows the dicts', then the
		 * two counts */
		bool split = minor == 12;
		size_t keys = split ? FREE_SLOTS : FREE_SLOTS + 1;
		size_t cnt = split ? 2 * FREE_ARRAY : FREE_ARRAY;
		size_t kcnt = split ? 2 * FREE_ARRAY + 4 : (keys + FREE_SLOTS) * 8;
		if (!free_count(fl, w + i, array, cnt, freed, &count))
			continue;
		if (free_slots(fl, w + i + keys, 0, &kfreed) &&
		    free_count(fl, w + i, array, kcnt, kfreed, &kcount) &&
		    (err = free_add(fl, array + 8 * keys, kcount, "python free list of dict keys")))
			break;
		err = free_add(fl, array, count, "python free list of dicts");
		i += FREE_SLOTS - 1;
	}
	return err;
}

struct hs_error *hs_python_free_lists(const struct hs_core *core,
				      struct hs_dwarf *dw,
				      const struct hs_heap *heap,
				      struct hs_root_stale **ret, size_t *count)
{
	*ret = NULL;
	*count = 0;
	unsigned minor;
	struct hs_module *m = dw ? hs_pymalloc_python(dw, &minor) : NULL;
	if (!m || minor < 11 || minor > 13)
		return NULL;
	uint64_t list_type = symbol(dw, m, "PyList_Type");
	uint64_t dict_type = symbol(dw, m, "PyDict_Type");
	if (!list_type || !dict_type)
		return NULL;
	struct free_lists fl = {.core = core, .heap = heap};
	struct hs_error *err = NULL;
	for (size_t i = 0; i < core->nsegs && !err; i++) {
		size_t n;
		const uint64_t *w = module_data(core, m, i, &n);
		if (w)
			err = find_free_lists(&fl, w, n, core->segs[i].vaddr, minor,
					      list_type, dict_type);
	}
	if (err) {
		free(fl.v);
		return err;
	}
	*ret = fl.v;
	*count = fl.n;
	return NULL;
}

void hs_python_destroy(struct hs_pyobjects *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ntypes; i++)
		free(p->types[i].name);
	free(p->types);
	free(p->kind);
	free(p->kind16);
	free(p->tails);
	free(p);
}

/* The used blocks [from, to) classified (their kinds in c->p->kind). */
struct classify_part {
	struct ctx *c;
	size_t from, to;
	uint64_t objects;
	struct hs_error *err;
};

static void *classify_part(void *arg)
{
	struct classify_part *cp = arg;
	struct ctx *c = cp->c;
	uint32_t *kind = c->p->kind;
	for (size_t i = cp->from; i < cp->to && !cp->err; i++) {
		const struct hs_alloc *a = &c->heap->allocs[i];
		kind[i] = HS_PY_NONE;
		if (hs_alloc_state(a) != HS_STATE_USED || a->where == HS_WHERE_INTERNAL)
			continue;
		cp->err = classify(c, a, &kind[i]);
		cp->objects += kind[i] != HS_PY_NONE;
	}
	return NULL;
}

/* The second half's types (c1's, in the order it found them) into c's:
 * a type c found too keeps its index, the others come after c's, in that
 * order, which is where one thread would have put them; then the second
 * half's kinds renumbered.  False when memory ran out, or when the types
 * would pass MAX_TYPES (where one thread would have given up on some of
 * them): the caller classifies the half again. */
static bool merge_types(struct ctx *c, struct ctx *c1, size_t from, size_t to,
			struct hs_error **err)
{
	const struct hs_pyobjects *p1 = c1->p;
	if (c->p->ntypes + p1->ntypes > MAX_TYPES)
		return false;
	/* (a type to one half and none to the other: the reads disagree,
	 * and one thread's way decides; checked before c takes any) */
	for (size_t i = 0; c->mapcap && i < p1->ntypes; i++) {
		struct slot *s = slot_of(c, p1->types[i].addr);
		if (s->key && s->value == HS_PY_NONE)
			return false;
	}
	uint32_t *renum = hs_malloc((p1->ntypes ? p1->ntypes : 1) * sizeof(*renum));
	if (!renum) {
		*err = &hs_error_nomem;
		return false;
	}
	for (size_t i = 0; i < p1->ntypes && !*err; i++) {
		const struct hs_pytype *t = &p1->types[i];
		struct slot *s = c->mapcap ? slot_of(c, t->addr) : NULL;
		if (s && s->key) {
			renum[i] = s->value;
			continue;
		}
		if (!(*err = add_type(c, t->addr, t->name, t->flags, t->basicsize,
				      t->itemsize, &renum[i])))
			*err = map_put(c, t->addr, renum[i]);
	}
	if (*err) {
		free(renum);
		return false;
	}
	uint32_t *kind = c->p->kind, low = (1u << HS_PY_TYPE_SHIFT) - 1;
	for (size_t i = from; i < to; i++)
		if (kind[i] != HS_PY_NONE)
			kind[i] = renum[hs_py_type_index(kind[i])] << HS_PY_TYPE_SHIFT |
				  (kind[i] & low);
	free(renum);
	return true;
}

struct hs_error *hs_python_objects(const struct hs_core *core,
				   struct hs_dwarf *dw,
				   const struct hs_heap *heap, uint32_t narrow_max,
				   unsigned nthreads, struct hs_log *log,
				   struct hs_pyobjects **ret)
{
	*ret = NULL;
	unsigned minor;
	struct hs_module *m = hs_pymalloc_python(dw, &minor);
	if (!m || minor < 8)
		return NULL;
	struct ctx c = {.core = core, .dw = dw, .heap = heap, .log = log};
	if (!(c.type_type = symbol(dw, m, "PyType_Type")))
		return NULL;
	c.dict_type = symbol(dw, m, "PyDict_Type");
	c.list_type = symbol(dw, m, "PyList_Type");
	c.set_type = symbol(dw, m, "PySet_Type");
	value_types(&c, dw, m);
	struct hs_error *err = NULL;
	c.p = hs_calloc(1, sizeof(*c.p));
	if (!c.p)
		return &hs_error_nomem;
	c.p->minor = minor;
	c.p->kind = hs_malloc((heap->nallocs ? heap->nallocs : 1) * sizeof(*c.p->kind));
	if (!c.p->kind) {
		err = &hs_error_nomem;
		goto out;
	}
	/* With two threads, the second half of the blocks is classified
	 * with a context of its own (its own types and their cache), merged
	 * after (merge_types).  Not while the core's reads are traced (the
	 * trace is not shared). */
	size_t n = heap->nallocs, half = n / 2;
	pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
	/* (what the two share: the inputs and the types found by name) */
	struct ctx c1 = {.core = core, .dw = dw, .heap = heap, .log = log,
			 .type_type = c.type_type, .dict_type = c.dict_type,
			 .list_type = c.list_type, .set_type = c.set_type,
			 .str_type = c.str_type, .bytes_type = c.bytes_type,
			 .long_type = c.long_type, .float_type = c.float_type};
	c1.p = nthreads >= 2 && n >= 2 && !core->trace ? hs_calloc(1, sizeof(*c1.p)) : NULL;
	struct classify_part parts_[2] = {{&c, 0, c1.p ? half : n, 0, NULL},
					  {&c1, half, n, 0, NULL}};
	if (c1.p) {
		c1.p->minor = minor;
		c1.p->kind = c.p->kind;  /* (its own half of it) */
		c.file_lock = c1.file_lock = &file_lock;
	}
	hs_run_parts(parts_, sizeof(*parts_), c1.p ? 2 : 1, classify_part);
	c.file_lock = NULL;
	err = parts_[0].err;
	c.p->objects = parts_[0].objects;
	if (c1.p) {
		if (err || parts_[1].err) {
			if (!err)
				err = parts_[1].err;
			else
				hs_error_destroy(parts_[1].err);
		} else if (merge_types(&c, &c1, half, n, &err)) {
			c.p->objects += parts_[1].objects;
		} else if (!err) {
			/* one thread's way, for this half too */
			parts_[1] = (struct classify_part){&c, half, n, 0, NULL};
			classify_part(&parts_[1]);
			err = parts_[1].err;
			c.p->objects += parts_[1].objects;
		}
		c1.p->kind = NULL;
		hs_python_destroy(c1.p);
		free(c1.map);
	}
	if (!err)
		err = parts(&c);
	if (err)
		goto out;
	if (c.p->ntails)
		qsort(c.p->tails, c.p->ntails, sizeof(*c.p->tails), cmp_tail);
	if (c.stray)
		hs_log_warn(log, "%" PRIu64 " items of Python lists point into heap blocks where no object starts (the first: list at %#" PRIx64 ", item %#" PRIx64 "): those objects are corrupt and left untyped",
			    c.stray, c.stray_list, c.stray_item);
	for (size_t i = 0; i < heap->nallocs; i++) {
		uint32_t k = c.p->kind[i];
		if (k == HS_PY_NONE)
			continue;
		struct hs_pytype *t = &c.p->types[hs_py_type_index(k)];
		t->count++;
		t->bytes += heap->allocs[i].size;
	}
	/* 16 bits a block when the types allow (2 bytes less a block for
	 * the rest of the run); if memory runs out, the 32 stay */
	uint32_t narrow = narrow_max && narrow_max < HS_PY_NARROW_TYPES ?
			  narrow_max : HS_PY_NARROW_TYPES;
	uint16_t *k16 = c.p->ntypes < narrow ?
			hs_malloc((heap->nallocs ? heap->nallocs : 1) * sizeof(*k16)) : NULL;
	if (k16) {
		for (size_t i = 0; i < heap->nallocs; i++)
			k16[i] = c.p->kind[i] == HS_PY_NONE ? UINT16_MAX : (uint16_t)c.p->kind[i];
		free(c.p->kind);
		c.p->kind = NULL;
		c.p->kind16 = k16;
	}
	*ret = c.p;
	c.p = NULL;
out:
	hs_python_destroy(c.p);
	free(c.map);
	return err;
}

/* One word: a pointer to an object's start counts for it. */
static inline void count_ref(const struct hs_pyobjects *py,
			     const struct hs_graph *g, uint32_t *counts,
			     uint64_t v)
{
	if (v < g->map.lo || v >= g->map.hi)
		return;
	uint32_t id = hs_addrmap_lookup(&g->map, v);
	if (id == HS_NO_ALLOC || id >= g->n)
		return;
	if (!hs_py_is_start(py, &g->map.heap->allocs[id], id, v))
		return;
	if (counts[id] != UINT32_MAX)
		counts[id]++;
}

void hs_pyrefs_destroy(struct hs_pyrefs *r)
{
	if (!r)
		return;
	free(r->v);
	free(r);
}

struct hs_error *hs_python_refs(const struct hs_pyobjects *py,
				const struct hs_core *core,
				const struct hs_heap *heap,
				const struct hs_graph *g,
				const struct hs_roots *roots,
				uint32_t *starts,
				struct hs_pyrefs **ret)
{
	*ret = NULL;
	struct hs_pyrefs *r = hs_calloc(1, sizeof(*r));
	uint32_t *counts = starts ? starts : hs_calloc(g->n ? g->n : 1, sizeof(*counts));
	if (!r || !counts) {
		free(r);
		if (!starts)
			free(counts);
		return &hs_error_nomem;
	}
	struct hs_core_near near = {0};  /* (the blocks in address order) */
	for (uint32_t src = 0; !starts && src < g->n; src++) {
		const struct hs_alloc *a = &heap->allocs[src];
		if (!hs_alloc_in_graph(a))
			continue;
		struct hs_py_skip skip = hs_py_skip_of(py, src, a->size / 8);
		uint64_t nwords = a->size / 8 - skip.tail;
		const uint64_t *w = hs_core_ptr_near(core, &near, a->addr, nwords * 8);
		for (uint64_t k = 0; k < nwords; k++) {
			uint64_t v;
			if (k - skip.at < skip.n)
				continue;
			if (w)
				v = w[k];
			else if (!hs_core_read_u64(core, a->addr + 8 * k, &v))
				break;
			count_ref(py, g, counts, v);
		}
	}
	for (size_t i = 0; i < roots->n; i++) {
		const struct hs_root *rt = &roots->roots[i];
		if (hs_root_is_value(rt)) {
			count_ref(py, g, counts, rt->value);
			continue;
		}
		for (uint64_t at = (rt->start + 7) & ~7ULL; at + 8 <= rt->end; at += 8) {
			uint64_t v;
			if (hs_core_read_u64_near(core, &near, at, &v))
				count_ref(py, g, counts, v);
		}
	}
	size_t cap = 0;
	struct hs_error *err = NULL;
	for (uint32_t id = 0; id < g->n && !err; id++) {
		uint32_t k = hs_py_kind(py, id);
		if (k == HS_PY_NONE || (k & HS_PY_PART))
			continue;
		uint64_t refcnt;
		if (!hs_core_read_u64_near(core, &near, heap->allocs[id].addr + hs_py_offset(k),
					   &refcnt))
			continue;
		r->checked++;
		if (refcnt <= counts[id] || (py->minor >= 12 && refcnt >= 0xffffffffULL))
			continue;
		if (r->n == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct hs_py_outside *v = hs_realloc(r->v, c * sizeof(*v));
			if (!v) {
				err = &hs_error_nomem;
				break;
			}
			r->v = v;
			cap = c;
		}
		r->v[r->n++] = (struct hs_py_outside){id, counts[id], refcnt};
	}
	if (!starts)
		free(counts);
	if (err) {
		hs_pyrefs_destroy(r);
		return err;
	}
	*ret = r;
	return NULL;
}

/* The entries of the keys object at keys: where they start, their size,
 * how many (3.11 and 3.12's layout, dict_get). */
static bool keys_entries(struct ctx *c, uint64_t keys, uint64_t *at,
			 uint64_t *esz, uint64_t *n, unsigned *kind)
{
	uint64_t w1;
	if (!rd(c, keys + 8, &w1) || !rd(c, keys + 24, n))
		return false;
	unsigned log2_index_bytes = w1 >> 8 & 0xff;
	*kind = w1 >> 16 & 0xff;
	if (log2_index_bytes > 32 || *kind > 2)
		return false;
	*at = keys + 32 + (1ULL << log2_index_bytes);
	*esz = *kind == 0 ? 24 : 16;
	return true;
}

/* A key's text: a str's, or a one-digit int's. */
static char *key_text(struct ctx *c, uint64_t key, bool attribute)
{
	char buf[MAX_NAME], *out = NULL;
	uint64_t size, digit;
	if (rd_ascii(c, key, buf, sizeof(buf))) {
		if (asprintf(&out, attribute ? ".%s" : "['%s']", buf) < 0)
			out = NULL;
	} else if (!attribute && rd(c, key + 16, &size) && (size == 1 || size == (uint64_t)-1) &&
		   rd(c, key + 24, &digit)) {
		long long v = (long long)(digit & 0x3fffffff);
		if (asprintf(&out, "[%lld]", size == 1 ? v : -v) < 0)
			out = NULL;
	}
	return out;
}

char *hs_python_field(const struct hs_pyobjects *py, const struct hs_core *core,
		      const struct hs_heap *heap, uint32_t id, uint64_t offset)
{
	uint32_t k = hs_py_kind(py, id);
	if (k == HS_PY_NONE || !(k & HS_PY_PART))
		return NULL;
	const struct hs_pytype *t = &py->types[hs_py_type_index(k)];
	char *out = NULL;
	if (t->part == HS_PY_PART_ITEMS)
		return asprintf(&out, "[%llu]", (unsigned long long)(offset / 8)) < 0 ?
		       NULL : out;
	if (py->minor < 11 || py->minor > 12)
		return NULL;
	struct hs_pyobjects copy = *py;
	struct ctx c = {.core = core, .heap = heap, .p = &copy};
	uint64_t block = heap->allocs[id].addr, at, esz, n, key;
	unsigned kind;
	if (t->part == HS_PY_PART_KEYS) {
		if (!keys_entries(&c, block, &at, &esz, &n, &kind) ||
		    block + offset < at || (block + offset - at) / esz >= n)
			return NULL;
		uint64_t i = (block + offset - at) / esz;
		if (!rd(&c, at + i * esz + (esz == 24 ? 8 : 0), &key) || !key)
			return NULL;
		return key_text(&c, key, false);
	}
	if (t->part == HS_PY_PART_VALUES && py->minor == 11 && t->owner) {
		/* the owner type's shared keys (ht_cached_keys, 3.11's
		 * PyHeapTypeObject) name the values by index */
		uint64_t keys, prefix = (uint64_t)(k & 7) * 8;
		if (offset < prefix || !rd(&c, t->owner + 872, &keys) || !keys ||
		    !keys_entries(&c, keys, &at, &esz, &n, &kind) || kind != 2)
			return NULL;
		uint64_t i = (offset - prefix) / 8;
		if (i >= n || !rd(&c, at + i * esz, &key) || !key)
			return NULL;
		return key_text(&c, key, true);
	}
	return NULL;
}

void hs_python_touch(const struct hs_pyobjects *py, const struct hs_core *core,
		     struct hs_dwarf *dw, const struct hs_heap *heap)
{
	struct hs_pyobjects fresh = {.minor = py->minor};
	struct ctx c = {.core = core, .dw = dw, .heap = heap, .p = &fresh};
	unsigned minor;
	struct hs_module *m = hs_pymalloc_python(dw, &minor);
	if (!m || !(c.type_type = symbol(dw, m, "PyType_Type")))
		return;
	c.list_type = symbol(dw, m, "PyList_Type");
	value_types(&c, dw, m);
	for (size_t i = 0; i < py->ntypes; i++) {
		uint32_t ti;
		if (py->types[i].addr && type_at(&c, py->types[i].addr, &ti))
			break;  /* out of memory: what was touched stays */
	}
	for (size_t i = 0; i < heap->nallocs; i++) {
		uint32_t k = hs_py_kind(py, (uint32_t)i);
		if (k == HS_PY_NONE || (k & HS_PY_PART))
			continue;
		/* count, type, and the ob_size of a varying object or of a
		 * list (what of its block and its items are scanned) */
		const struct hs_pytype *t = &py->types[hs_py_type_index(k)];
		hs_core_touch(core, heap->allocs[i].addr + hs_py_offset(k),
			      t->itemsize || (t->flags & F_LIST_SUBCLASS) ||
			      t->addr == c.list_type ? 24 : 16);
		/* a str's length and state: its form as a value object */
		if (t->addr && t->addr == c.str_type) {
			hs_core_touch(core, heap->allocs[i].addr + 16, 8);
			hs_core_touch(core, heap->allocs[i].addr + 32, 8);
		}
	}
	for (size_t i = 0; i < fresh.ntypes; i++)
		free(fresh.types[i].name);
	free(fresh.types);
	free(c.map);
}
