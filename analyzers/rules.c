/* Header rules, their per-block checks and the learned offsets: see
 * analyzers/rules.h. */
#include "analyzers/rules.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/sort.h"
#include "src/vector.h"

const char *const hs_rule_names[HS_RULE_COUNT] = {
	[HS_RULE_NONE] = "none",
	[HS_RULE_STDSTRING] = "stdstring",
	[HS_RULE_LENGTH64] = "length64",
	[HS_RULE_NEWARRAY] = "newarray",
	[HS_RULE_MULTIPLE_INHERITANCE] = "multipleinheritance",
	[HS_RULE_SDS] = "sds",
	[HS_RULE_PYOBJECT] = "pyobject",
	[HS_RULE_LEARNED] = "learned",
	[HS_RULE_TYPED] = "typed",
	[HS_RULE_LUASTATE] = "luastate",
};

enum { VTABLE_WORDS = 20, PAGE0 = 4096 };

bool hs_rules_parse_off(const char *names, unsigned *enabled)
{
	while (*names) {
		const char *end = strchr(names, ',');
		size_t len = end ? (size_t)(end - names) : strlen(names);
		bool found = false;
		if (len == 3 && !strncmp(names, "all", 3)) {
			*enabled = 0;
			found = true;
		}
		for (int r = 1; r < HS_RULE_COUNT && !found; r++) {
			if (strlen(hs_rule_names[r]) == len &&
			    !strncmp(names, hs_rule_names[r], len)) {
				*enabled &= ~(1u << r);
				found = true;
			}
		}
		if (!found)
			return false;
		names += len + (end ? 1 : 0);
	}
	return true;
}

/* A request of req bytes could have given this block. */
static bool served(const struct hs_rules *r, const struct hs_alloc *a,
		   uint64_t req)
{
	return req <= a->size && req + hs_heap_slack(r->heap, a) > a->size;
}

static bool word(const struct hs_rules *r, uint64_t addr, uint64_t *v)
{
	return hs_core_read_u64(r->core, addr, v);
}

static int cmp_range(const void *a, const void *b)
{
	const struct hs_exec_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct hs_error *add_exec(struct hs_rules *r, size_t *cap, uint64_t lo,
				 uint64_t hi)
{
	if (r->nexec == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		struct hs_exec_range *v = hs_realloc(r->exec, *cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		r->exec = v;
	}
	r->exec[r->nexec++] = (struct hs_exec_range){lo, hi};
	return NULL;
}

struct hs_error *hs_rules_init(struct hs_rules *r, const struct hs_core *core,
			       const struct hs_heap *heap, struct hs_dwarf *dw,
			       unsigned enabled)
{
	*r = (struct hs_rules){.core = core, .heap = heap, .enabled = enabled};
	size_t cap = 0;
	struct hs_error *err = NULL;
	for (size_t i = 0; dw && !err && i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		uint64_t bias;
		Elf *elf = hs_dwarf_module_elf(dw, m, &bias);
		size_t n;
		if (!elf || elf_getphdrnum(elf, &n) != 0)
			continue;
		for (size_t k = 0; k < n && !err; k++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)k, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && ph.p_memsz)
				err = add_exec(r, &cap, ph.p_vaddr + bias,
					       ph.p_vaddr + bias + ph.p_memsz);
		}
	}
	for (size_t i = 0; !err && i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if ((s->flags & HS_SEG_X) && s->file >= 0)
			err = add_exec(r, &cap, s->vaddr, s->vaddr + s->memsz);
	}
	if (err) {
		hs_rules_fini(r);
		return err;
	}
	hs_sort(r->exec, r->nexec, sizeof(*r->exec), cmp_range);
	/* (without it, each check reads the block's first words itself) */
	r->summary = hs_zalloc_written(heap->nallocs ? heap->nallocs : 1);
	return NULL;
}

void hs_rules_drop_summary(struct hs_rules *r)
{
	free(r->summary);
	r->summary = NULL;
}

void hs_rules_fini(struct hs_rules *r)
{
	hs_rules_drop_summary(r);
	free(r->exec);
	free(r->learned);
	r->exec = NULL;
	r->nexec = 0;
	r->learned = NULL;
	r->nlearned = 0;
	free(r->typed);
	r->typed = NULL;
	r->ntyped = r->captyped = 0;
}

/* ---- learned offsets ---- */

enum {
	STATS_MAX = 1 << 22,    /* keys; then only known keys are counted */
	LEARN_MIN_BLOCKS = 8,
};

struct hs_error *hs_offstats_add(struct hs_offstats *s, uint64_t size,
				 uint64_t off)
{
	uint64_t key = size << 20 | off;   /* never 0: off > 0 */
	uint32_t *count = hs_offstats_find(s, key);
	if (count) {
		if (*count < UINT32_MAX)
			(*count)++;
		return NULL;
	}
	if (2 * (s->n + 1) > s->cap && s->cap >= STATS_MAX)
		return NULL;    /* full: new keys are not counted */
	struct hs_error *err = hs_offstats_insert(s, key, &count, NULL);
	if (!err)
		*count = 1;
	return err;
}

struct keycount {
	uint64_t key, count;
};

static int cmp_keycount(const void *a, const void *b)
{
	const struct keycount *x = a, *y = b;
	if (x->key >> 20 != y->key >> 20)
		return x->key >> 20 < y->key >> 20 ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;  /* most first */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct hs_error *hs_rules_learn(struct hs_rules *r,
				const struct hs_offstats *parts, size_t nparts,
				const uint64_t *held)
{
	size_t total = 0;
	for (size_t p = 0; p < nparts; p++)
		total += parts[p].n;
	if (!total || !(r->enabled & 1u << HS_RULE_LEARNED))
		return NULL;
	/* merge: every (key, count), then sum equal keys */
	struct keycount *kc = hs_malloc(total * sizeof(*kc));
	uint64_t *sizes = NULL, *nblocks = NULL;
	struct hs_error *err = &hs_error_nomem;
	if (!kc)
		goto out;
	size_t n = 0;
	for (size_t p = 0; p < nparts; p++)
		for (size_t i = 0; i < parts[p].cap; i++)
			if (parts[p].keys[i])
				kc[n++] = (struct keycount){parts[p].keys[i],
							    parts[p].vals[i]};
	hs_sort(kc, n, sizeof(*kc), cmp_u64);  /* by key (first field) */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && kc[m - 1].key == kc[i].key)
			kc[m - 1].count += kc[i].count;
		else
			kc[m++] = kc[i];
	}
	/* candidates: offsets with enough pointers to stand for half of the
	 * minimum number of blocks */
	size_t mc = 0;
	for (size_t i = 0; i < m; i++)
		if (2 * kc[i].count >= LEARN_MIN_BLOCKS)
			kc[mc++] = kc[i];
	m = mc;
	if (!m) {
		err = NULL;
		goto out;
	}
	hs_sort(kc, m, sizeof(*kc), cmp_keycount);
	/* blocks per candidate size: the distinct sizes, sorted, counted in
	 * one pass over the blocks */
	sizes = hs_malloc(m * sizeof(*sizes));
	nblocks = hs_calloc(m, sizeof(*nblocks));
	if (!sizes || !nblocks)
		goto out;
	size_t ns = 0;
	for (size_t i = 0; i < m; i++)
		if (!ns || sizes[ns - 1] != kc[i].key >> 20)
			sizes[ns++] = kc[i].key >> 20;
	for (size_t i = 0; i < r->heap->nallocs; i++) {
		const struct hs_alloc *a = &r->heap->allocs[i];
		if (hs_alloc_state(a) != HS_STATE_USED ||
		    (held && (held[i / 64] >> (i % 64) & 1)))
			continue;
		size_t lo = 0, hi = ns;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (sizes[mid] < a->size)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < ns && sizes[lo] == a->size)
			nblocks[lo]++;
	}
	size_t cap = 0;
	for (size_t i = 0; i < m;) {
		uint64_t size = kc[i].key >> 20;
		size_t j = i;
		while (j < m && kc[j].key >> 20 == size)
			j++;
		size_t lo = 0, hi = ns;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (sizes[mid] < size)
				lo = mid + 1;
			else
				hi = mid;
		}
		uint64_t blocks = lo < ns && sizes[lo] == size ? nblocks[lo] : 0;
		struct hs_learned l = {.size = size, .blocks = blocks};
		for (size_t k = i; k < j && l.noff < HS_LEARN_MAX_OFFSETS; k++) {
			if (blocks < LEARN_MIN_BLOCKS || 2 * kc[k].count < blocks)
				break;  /* sorted by count: the rest are fewer */
			l.off[l.noff] = (uint32_t)(kc[k].key & (HS_LEARN_MAX_OFFSET - 1));
			l.pointers[l.noff++] = kc[k].count;
		}
		if (l.noff) {
			if (r->nlearned == cap) {
				cap = cap ? 2 * cap : 16;
				struct hs_learned *v = hs_realloc(r->learned, cap * sizeof(*v));
				if (!v)
					goto out;
				r->learned = v;
			}
			r->learned[r->nlearned++] = l;
		}
		i = j;
	}
	err = NULL;
out:
	free(kc);
	free(sizes);
	free(nblocks);
	return err;
}

const struct hs_learned *hs_rules_learned(const struct hs_rules *r,
					  uint64_t size)
{
	size_t lo = 0, hi = r->nlearned;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->learned[mid].size < size)
			lo = mid + 1;
		else if (r->learned[mid].size > size)
			hi = mid;
		else
			return &r->learned[mid];
	}
	return NULL;
}

/* In an executable segment of a module. */
static bool executable(const struct hs_rules *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nexec;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->exec[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may overlap (a module's and the core's): look back a few */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;)
		if (addr >= r->exec[i].lo && addr < r->exec[i].hi)
			return true;
	return false;
}

/* A file-backed mapping of the process that the core holds, readable. */
static bool file_readable(const struct hs_rules *r, uint64_t addr)
{
	const struct hs_core_segment *s = hs_core_find_segment(r->core, addr);
	return s && (s->flags & HS_SEG_R) && hs_core_find_file(r->core, addr);
}

/* memcheck's vtable test: in a readable file mapping, and among its first
 * 20 words at least two pointers into executable file mappings before any
 * word that is neither null nor one. */
static bool is_vtable(const struct hs_rules *r, uint64_t p)
{
	if (p % 8 || p < PAGE0 || !file_readable(r, p))
		return false;
	const struct hs_core_segment *s = hs_core_find_segment(r->core, p);
	int fns = 0;
	for (int i = 0; i < VTABLE_WORDS; i++) {
		uint64_t at = p + 8 * (uint64_t)i, fn;
		if (at + 8 > s->vaddr + s->memsz || !word(r, at, &fn))
			return false;
		if (!fn)
			continue;
		if (!executable(r, fn))
			return false;
		if (++fns == 2)
			return true;
	}
	return false;
}

/* The first bytes of the block a rule looks at, in the mapping (p NULL
 * when they are not all there): read in place, not looked up per word. */
struct head {
	const uint8_t *p;
	uint64_t len;
};
/* std::string's three words and its first character; a lua_State's
 * first five words after the program's 8 bytes */
enum { HEAD_BYTES = 40 };

static struct head head_of(const struct hs_rules *r, const struct hs_alloc *a)
{
	uint64_t len = a->size < HEAD_BYTES ? a->size : HEAD_BYTES;
	const uint8_t *p = hs_core_ptr(r->core, a->addr, (size_t)len);
	return (struct head){p, p ? len : 0};
}

/* The word at addr, from the head when it lies there. */
static inline bool head_word(const struct hs_rules *r, const struct hs_alloc *a,
			     const struct head *hd, uint64_t addr, uint64_t *v)
{
	if (addr >= a->addr && addr - a->addr + 8 <= hd->len) {
		memcpy(v, hd->p + (addr - a->addr), sizeof(*v));
		return true;
	}
	return word(r, addr, v);
}

enum { SDS_MAX_HEADER = 17 };  /* sdshdr64 */

/* redis's sds (sds.h): the header just before the characters, its last
 * byte the flags, whose low 3 bits give the header type. */
static bool sds_header(const struct hs_rules *r, const struct hs_alloc *a,
		       const struct head *hd, uint64_t off)
{
	static const uint8_t hdr[] = {1, 3, 5, 9, SDS_MAX_HEADER};   /* by type 0-4 */
	static const uint8_t field[] = {0, 1, 2, 4, 8};  /* len and alloc */
	if (off > SDS_MAX_HEADER || off >= a->size)
		return false;
	uint8_t buf[SDS_MAX_HEADER];
	const uint8_t *h = off <= hd->len ? hd->p : NULL;
	if (!h) {
		if (!hs_core_read_quiet(r->core, a->addr, buf, (size_t)off))
			return false;
		h = buf;
	}
	unsigned type = h[off - 1] & 7;
	if (type > 4 || hdr[type] != off)
		return false;
	if (type == 0)  /* sdshdr5: the length in the flags' high bits */
		return (uint64_t)(h[0] >> 3) + 2 <= a->size;
	uint64_t len = 0, alloc = 0;
	memcpy(&len, h, field[type]);
	memcpy(&alloc, h + field[type], field[type]);
	return len <= alloc && alloc < a->size && off + alloc + 1 <= a->size;
}

/* A Lua thread: the program's extra space (8 bytes), then a lua_State
 * (see rules.h, luastate).  The smallest lua_State of 5.3 and 5.4 is over
 * 160 bytes. */
enum { LUA_TTHREAD_TAG = 8, LUA_STATE_MIN = 160 };

static bool pointer_to_mapped(const struct hs_rules *r, uint64_t v)
{
	return v && v % 8 == 0 && hs_core_find_segment(r->core, v);
}

/* Whether a lua_State sits 8 bytes into block a. */
static bool lua_state(const struct hs_rules *r, const struct hs_alloc *a,
		      const struct head *hd)
{
	uint64_t tag, top, g;
	return a->size >= 8 + LUA_STATE_MIN &&
	       head_word(r, a, hd, a->addr + 16, &tag) && (tag & 0xff) == LUA_TTHREAD_TAG &&
	       head_word(r, a, hd, a->addr + 24, &top) && pointer_to_mapped(r, top) &&
	       head_word(r, a, hd, a->addr + 32, &g) && pointer_to_mapped(r, g);
}

/* What the rules that look at a block's first words say about it, one
 * bit each (a block's summary: struct hs_rules.summary). */
enum {
	SUM_KNOWN = 1,
	SUM_STDSTRING = 2,      /* +24 holds it (stdstring) */
	SUM_LENGTH64 = 4,       /* +8 holds it (length64) */
	SUM_NEWARRAY = 8,       /* +8 holds it (newarray) */
	SUM_VTABLE = 16,        /* its first word points to a vtable */
	SUM_LUASTATE = 32,      /* +8 holds it (luastate) */
};

static uint8_t summarize(const struct hs_rules *r, const struct hs_alloc *a)
{
	struct head hd = head_of(r, a);
	uint64_t w0, w1;
	uint8_t s = SUM_KNOWN;
	bool have0 = head_word(r, a, &hd, a->addr, &w0);
	if (head_word(r, a, &hd, a->addr + 8, &w1) && w1 < a->size &&
	    served(r, a, 24 + w1 + 1) && have0 && w0 <= w1)
		s |= SUM_STDSTRING;
	if (have0 && w0 > 0 && w0 < a->size) {
		if (served(r, a, w0 + 8))
			s |= SUM_LENGTH64;
		/* some request this block served leaves n elements of equal
		 * size after the count */
		uint64_t sl = hs_heap_slack(r->heap, a);
		uint64_t lo = a->size + 1 > sl ? a->size + 1 - sl : 8;
		if (lo < 8 + w0)
			lo = 8 + w0;
		/* the first request >= lo that is 8 + a multiple of n */
		uint64_t m = (lo - 8 + w0 - 1) / w0;
		if (8 + m * w0 <= a->size)
			s |= SUM_NEWARRAY;
	}
	if (have0 && is_vtable(r, w0))
		s |= SUM_VTABLE;
	if (lua_state(r, a, &hd))
		s |= SUM_LUASTATE;
	return s;
}

/* Block a's summary, computed at its first interior pointer and kept
 * (the scan's threads may compute one at once: the same value). */
static uint8_t summary_of(const struct hs_rules *r, const struct hs_alloc *a)
{
	size_t id = (size_t)(a - r->heap->allocs);
	if (!r->summary || id >= r->heap->nallocs)
		return summarize(r, a);
	uint8_t s = __atomic_load_n(&r->summary[id], __ATOMIC_RELAXED);
	if (!s) {
		s = summarize(r, a);
		__atomic_store_n(&r->summary[id], s, __ATOMIC_RELAXED);
	}
	return s;
}

enum hs_rule hs_rules_check(const struct hs_rules *r, const struct hs_alloc *a,
			    uint64_t v)
{
	if (!r || !r->enabled || v <= a->addr)
		return HS_RULE_NONE;
	uint64_t off = v - a->addr, w1;
	unsigned on = r->enabled;
	if (r->py && (on & 1u << HS_RULE_PYOBJECT)) {
		uint32_t k = hs_py_kind(r->py, (uint32_t)(a - r->heap->allocs));
		/* an object past its block's start, or 3.11's attribute
		 * values past their prefix */
		if (k != HS_PY_NONE && ((k & HS_PY_PART) ? (k & 7) * 8 == off :
					 hs_py_offset(k) == off))
			return HS_RULE_PYOBJECT;
	}
	/* the block's first words, read once per block (the one cache miss
	 * of most checks: every aligned pointer asks whether the block
	 * starts with a vtable) */
	uint8_t sum = off % 8 ? 0 : summary_of(r, a);
	if ((on & 1u << HS_RULE_STDSTRING) && off == 24 && (sum & SUM_STDSTRING))
		return HS_RULE_STDSTRING;
	if (off == 8 && (on & 1u << HS_RULE_LENGTH64) && (sum & SUM_LENGTH64))
		return HS_RULE_LENGTH64;
	if (off == 8 && (on & 1u << HS_RULE_NEWARRAY) && (sum & SUM_NEWARRAY))
		return HS_RULE_NEWARRAY;
	if ((on & 1u << HS_RULE_MULTIPLE_INHERITANCE) && (sum & SUM_VTABLE)) {
		struct head hd = head_of(r, a);
		if (head_word(r, a, &hd, v, &w1) && is_vtable(r, w1))
			return HS_RULE_MULTIPLE_INHERITANCE;
	}
	if ((on & 1u << HS_RULE_SDS) && off <= SDS_MAX_HEADER) {
		struct head hd = head_of(r, a);
		if (sds_header(r, a, &hd, off))
			return HS_RULE_SDS;
	}
	if ((on & 1u << HS_RULE_LUASTATE) && off == 8 && (sum & SUM_LUASTATE))
		return HS_RULE_LUASTATE;
	if ((on & 1u << HS_RULE_TYPED) && r->ntyped) {
		size_t lo = 0, hi = r->ntyped;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (r->typed[mid] < v)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < r->ntyped && r->typed[lo] == v)
			return HS_RULE_TYPED;
	}
	if ((on & 1u << HS_RULE_LEARNED) && r->nlearned) {
		const struct hs_learned *l = hs_rules_learned(r, a->size);
		for (int i = 0; l && i < l->noff; i++)
			if (l->off[i] == off)
				return HS_RULE_LEARNED;
	}
	return HS_RULE_NONE;
}

struct hs_error *hs_rules_add_typed(struct hs_rules *r, uint64_t v)
{
	if (r->ntyped == r->captyped) {
		size_t cap = r->captyped ? 2 * r->captyped : 64;
		uint64_t *t = hs_realloc(r->typed, cap * sizeof(*t));
		if (!t)
			return &hs_error_nomem;
		r->typed = t;
		r->captyped = cap;
	}
	r->typed[r->ntyped++] = v;
	return NULL;
}

void hs_rules_typed_done(struct hs_rules *r)
{
	if (!r->ntyped)
		return;
	hs_sort(r->typed, r->ntyped, sizeof(*r->typed), cmp_u64);
	size_t k = 1;
	for (size_t i = 1; i < r->ntyped; i++)
		if (r->typed[i] != r->typed[k - 1])
			r->typed[k++] = r->typed[i];
	r->ntyped = k;
}
