/* C and C++ types, variables and frame locals from DWARF: see
 * formats/dwtypes.h. */
#include "src/hashtab.h"
#include "src/alloc.h"
#include "src/sort.h"
#include "formats/dwtypes.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	MAX_DEPTH = 32,          /* nesting of types we follow */
	MAX_PTRS = 1 << 16,      /* pointer slots of one type */
	/* types one flattening looks at: hostile DWARF can nest a struct in
	 * itself, k members a level, k^MAX_DEPTH visits without this */
	MAX_VISITS = 1 << 18,
};

/* ---- per-module index of type definitions by name ---- */

struct name_entry {
	char *name;
	Dwarf_Off off;
};

struct name_index {
	struct hs_module *mod;
	Dwarf *dbg;
	struct name_entry *v;
	size_t n, cap;
	bool sorted;
};

static uint64_t hash_str(const char *s, uint64_t seed)
{
	uint64_t h = 1469598103934665603ull ^ seed;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

struct hs_error *hs_dtypes_create(struct hs_dwarf *dw, struct hs_dtypes **ret)
{
	struct hs_dtypes *t = hs_calloc(1, sizeof(*t));
	if (!t)
		return &hs_error_nomem;
	t->dw = dw;
	*ret = t;
	return NULL;
}

/* The indexes of definitions by name, one per module. */
static void names_free(struct hs_dtypes *t)
{
	for (size_t i = 0; i < t->nnames; i++) {
		for (size_t k = 0; k < t->names[i].n; k++)
			free(t->names[i].v[k].name);
		free(t->names[i].v);
	}
	free(t->names);
	t->names = NULL;
	t->nnames = 0;
}

void hs_dtypes_destroy(struct hs_dtypes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i]->name);
		free(t->v[i]->ptrs);
		free(t->v[i]->containers);
		free(t->v[i]->scalar_words);
		free(t->v[i]);
	}
	free(t->v);
	free(t->hash);
	names_free(t);
	free(t->structs);
	free(t);
}

void hs_dtypes_release(struct hs_dtypes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		t->v[i]->dbg = NULL;
	names_free(t);
	free(t->structs);
	t->structs = NULL;
	t->nstructs = 0;
	t->structs_done = true;
}

static struct hs_dtype *lookup(struct hs_dtypes *t, const char *name,
			       uint64_t size)
{
	if (!t->hcap)
		return NULL;
	size_t j = hash_str(name, size) & (t->hcap - 1);
	while (t->hash[j]) {
		struct hs_dtype *d = t->v[t->hash[j] - 1];
		if (d->size == size && !strcmp(d->name, name))
			return d;
		j = (j + 1) & (t->hcap - 1);
	}
	return NULL;
}

static struct hs_error *intern(struct hs_dtypes *t, const char *name,
			       uint64_t size, struct hs_dtype **ret)
{
	struct hs_dtype *d = lookup(t, name, size);
	if (d) {
		*ret = d;
		return NULL;
	}
	if ((t->n + 1) * 2 > t->hcap) {
		size_t cap = t->hcap ? 2 * t->hcap : 256;
		size_t *h = hs_calloc(cap, sizeof(*h));
		if (!h)
			return &hs_error_nomem;
		for (size_t i = 0; i < t->n; i++) {
			size_t j = hash_str(t->v[i]->name, t->v[i]->size) & (cap - 1);
			while (h[j])
				j = (j + 1) & (cap - 1);
			h[j] = i + 1;
		}
		free(t->hash);
		t->hash = h;
		t->hcap = cap;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct hs_dtype **v = hs_realloc(t->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		t->v = v;
		t->cap = cap;
	}
	d = hs_calloc(1, sizeof(*d));
	if (!d || !(d->name = strdup(name))) {
		free(d);
		return &hs_error_nomem;
	}
	d->size = size;
	d->index = (uint32_t)t->n;
	t->v[t->n++] = d;
	size_t j = hash_str(name, size) & (t->hcap - 1);
	while (t->hash[j])
		j = (j + 1) & (t->hcap - 1);
	t->hash[j] = d->index + 1;
	*ret = d;
	return NULL;
}

/* ---- names ---- */

static bool is_cxx(Dwarf_Die *die)
{
	Dwarf_Die cu;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	int lang = dwarf_srclang(&cu);
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

static bool type_of(Dwarf_Die *die, Dwarf_Die *ret)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, ret);
}

static bool is_decl(Dwarf_Die *die)
{
	bool flag = false;
	Dwarf_Attribute a;
	if (dwarf_attr(die, DW_AT_declaration, &a))
		dwarf_formflag(&a, &flag);
	return flag;
}

/* GCC's DWARF spells builtin types "long unsigned int"; the demangler, and
 * so the names that vtables and RTTI give, "unsigned long".  C++ names are
 * normalized to the demangler's spelling so that one class has one name. */
static void cxx_normalize(char *s)
{
	static const char *const from[] = {
		"long long unsigned int", "long long int", "long unsigned int",
		"short unsigned int", "long int", "short int",
	};
	static const char *const to[] = {
		"unsigned long long", "long long", "unsigned long",
		"unsigned short", "long", "short",
	};
	for (size_t k = 0; k < sizeof(from) / sizeof(from[0]); k++) {
		size_t fl = strlen(from[k]), tl = strlen(to[k]);
		char *p = s;
		while ((p = strstr(p, from[k]))) {
			bool start = p == s || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
						 (p[-1] >= 'A' && p[-1] <= 'Z') ||
						 (p[-1] >= '0' && p[-1] <= '9'));
			char e = p[fl];
			bool end = !(e == '_' || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
				     (e >= '0' && e <= '9'));
			if (!start || !end) {
				p += fl;
				continue;
			}
			memcpy(p, to[k], tl);
			memmove(p + tl, p + fl, strlen(p + fl) + 1);
			p += tl;
		}
	}
}

/* "ns::Outer::Name" from the scopes around a C++ DIE */
static void qualified(Dwarf_Die *die, char *buf, size_t len)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes_die(die, &scopes);
	size_t at = 0;
	buf[0] = 0;
	for (int i = n - 1; i >= 1; i--) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_namespace && tag != DW_TAG_structure_type &&
		    tag != DW_TAG_class_type && tag != DW_TAG_union_type)
			continue;
		const char *s = dwarf_diename(&scopes[i]);
		int w = snprintf(buf + at, len - at, "%s::",
				 s ? s : "(anonymous namespace)");
		if (w < 0 || (size_t)w >= len - at)
			break;
		at += (size_t)w;
	}
	free(scopes);
	const char *s = dwarf_diename(die);
	snprintf(buf + at, len - at, "%s", s ? s : "(anonymous)");
	cxx_normalize(buf);
}

static void type_name(Dwarf_Die *die, char *buf, size_t len, int depth)
{
	if (depth > MAX_DEPTH) {
		snprintf(buf, len, "?");
		return;
	}
	Dwarf_Die inner;
	const char *name = dwarf_diename(die);
	char tmp[400];  /* room for a suffix in the 512 of callers */
	switch (dwarf_tag(die)) {
	case DW_TAG_base_type:
		snprintf(buf, len, "%s", name ? name : "?");
		if (is_cxx(die))
			cxx_normalize(buf);
		return;
	case DW_TAG_typedef: {
		Dwarf_Die target, peeled;
		if (type_of(die, &target) && dwarf_peel_type(&target, &peeled) == 0) {
			int tag = dwarf_tag(&peeled);
			bool agg = tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
				tag == DW_TAG_class_type || tag == DW_TAG_enumeration_type;
			if (agg && dwarf_diename(&peeled)) {
				type_name(&peeled, buf, len, depth + 1);
				return;
			}
		}
		if (name && is_cxx(die))
			qualified(die, buf, len);
		else
			snprintf(buf, len, "%s", name ? name : "?");
		return;
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
		if (type_of(die, &inner))
			type_name(&inner, buf, len, depth + 1);
		else
			snprintf(buf, len, "void");
		return;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		if (type_of(die, &inner))
			type_name(&inner, tmp, sizeof(tmp), depth + 1);
		else
			snprintf(tmp, sizeof(tmp), "void");
		snprintf(buf, len, "%s *", tmp);
		return;
	case DW_TAG_array_type: {
		if (type_of(die, &inner))
			type_name(&inner, tmp, sizeof(tmp), depth + 1);
		else
			snprintf(tmp, sizeof(tmp), "?");
		Dwarf_Word size = 0, esize = 0;
		dwarf_aggregate_size(die, &size);
		if (type_of(die, &inner))
			dwarf_aggregate_size(&inner, &esize);
		if (esize)
			snprintf(buf, len, "%s[%llu]", tmp,
				 (unsigned long long)(size / esize));
		else
			snprintf(buf, len, "%s[]", tmp);
		return;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type: {
		if (is_cxx(die)) {
			qualified(die, buf, len);
			return;
		}
		const char *kw = dwarf_tag(die) == DW_TAG_union_type ? "union" :
			dwarf_tag(die) == DW_TAG_enumeration_type ? "enum" : "struct";
		snprintf(buf, len, "%s %s", kw, name ? name : "(anonymous)");
		return;
	}
	case DW_TAG_subroutine_type:
		snprintf(buf, len, "function");
		return;
	default:
		snprintf(buf, len, "%s", name ? name : "?");
	}
}

/* ---- the name index, for incomplete types and vtable classes ---- */

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct name_entry *)a)->name,
		      ((const struct name_entry *)b)->name);
}

static struct hs_error *index_add(struct name_index *ix, const char *name,
				  Dwarf_Off off)
{
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 256;
		struct name_entry *v = hs_realloc(ix->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		ix->v = v;
		ix->cap = cap;
	}
	ix->v[ix->n].name = strdup(name);
	if (!ix->v[ix->n].name)
		return &hs_error_nomem;
	ix->v[ix->n++].off = off;
	return NULL;
}

/* Preorder walk of a CU's DIEs with an explicit stack of bounded depth:
 * visit() sets *descend when the walk should go into die's children. */
static struct hs_error *walk_cu(Dwarf_Die *cu,
				struct hs_error *(*visit)(Dwarf_Die *die, void *arg,
							  bool *descend),
				void *arg)
{
	Dwarf_Die stack[MAX_DEPTH];
	int sp = 0;
	Dwarf_Die child;
	if (dwarf_child(cu, &child) != 0)
		return NULL;
	stack[sp++] = child;
	while (sp) {
		Dwarf_Die die = stack[--sp];
		for (;;) {
			bool descend = false;
			struct hs_error *err = visit(&die, arg, &descend);
			if (err)
				return err;
			Dwarf_Die sub;
			if (descend && sp < MAX_DEPTH - 1 &&
			    dwarf_child(&die, &sub) == 0) {
				Dwarf_Die next;
				if (dwarf_siblingof(&die, &next) == 0)
					stack[sp++] = next;
				die = sub;
				continue;
			}
			if (dwarf_siblingof(&die, &die) != 0)
				break;
		}
	}
	return NULL;
}

/* Definitions of structs, classes and unions: top level, in namespaces,
 * nested in classes. */
static struct hs_error *index_die(Dwarf_Die *die, void *arg, bool *descend)
{
	struct name_index *ix = arg;
	int tag = dwarf_tag(die);
	bool agg = tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
		tag == DW_TAG_union_type;
	if (agg && dwarf_diename(die) && !is_decl(die)) {
		char name[512];
		type_name(die, name, sizeof(name), 0);
		struct hs_error *err = index_add(ix, name, dwarf_dieoffset(die));
		if (err)
			return err;
	}
	*descend = agg || tag == DW_TAG_namespace;
	return NULL;
}

static struct hs_error *name_index(struct hs_dtypes *t, struct hs_module *m,
				   struct name_index **ret)
{
	for (size_t i = 0; i < t->nnames; i++)
		if (t->names[i].mod == m) {
			*ret = &t->names[i];
			return NULL;
		}
	struct name_index *v = hs_realloc(t->names, (t->nnames + 1) * sizeof(*v));
	if (!v)
		return &hs_error_nomem;
	t->names = v;
	struct name_index *ix = &t->names[t->nnames++];
	memset(ix, 0, sizeof(*ix));
	ix->mod = m;
	Dwarf_Addr bias;
	ix->dbg = m->mod ? dwfl_module_getdwarf(m->mod, &bias) : NULL;
	Dwarf_Die *cu = NULL;
	while (ix->dbg && (cu = dwfl_module_nextcu(m->mod, cu, &bias))) {
		struct hs_error *err = walk_cu(cu, index_die, ix);
		if (err)
			return err;
	}
	hs_sort(ix->v, ix->n, sizeof(*ix->v), cmp_entry);
	*ret = ix;
	return NULL;
}

static bool index_find(struct name_index *ix, const char *name, Dwarf_Die *ret)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ix->v[mid].name, name);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && !strcmp(ix->v[lo].name, name) &&
	       dwarf_offdie(ix->dbg, ix->v[lo].off, ret);
}

/* ---- types from DIEs ---- */

/* The type a DIE describes; NULL for void and functions. */
static struct hs_error *from_die(struct hs_dtypes *t, struct hs_module *m,
				 Dwarf_Die *die, struct hs_dtype **ret)
{
	*ret = NULL;
	Dwarf_Die peeled;
	if (dwarf_peel_type(die, &peeled) != 0)
		return NULL;
	int tag = dwarf_tag(&peeled);
	if (tag == DW_TAG_subroutine_type || tag == DW_TAG_unspecified_type)
		return NULL;
	char name[512];
	type_name(die, name, sizeof(name), 0);
	if ((tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
	     tag == DW_TAG_union_type) && is_decl(&peeled)) {
		/* complete it from another compilation unit */
		char full[512];
		type_name(&peeled, full, sizeof(full), 0);
		struct name_index *ix;
		struct hs_error *err = name_index(t, m, &ix);
		if (err)
			return err;
		Dwarf_Die def;
		if (index_find(ix, full, &def))
			peeled = def;
	}
	Dwarf_Word size = 0;
	if (is_decl(&peeled) || dwarf_aggregate_size(&peeled, &size) != 0)
		size = 0;
	struct hs_dtype *d;
	struct hs_error *err = intern(t, name, size, &d);
	if (err)
		return err;
	if (!d->dbg && !is_decl(&peeled)) {
		d->dbg = dwarf_cu_getdwarf(peeled.cu);
		d->die = dwarf_dieoffset(&peeled);
		d->mod = m;
	}
	*ret = d;
	return NULL;
}

struct hs_error *hs_dtypes_named(struct hs_dtypes *t, const char *name,
				 uint64_t size, struct hs_dtype **ret)
{
	/* a DWARF definition of that name in any module */
	for (size_t i = 0; i < hs_dwarf_num_modules(t->dw); i++) {
		struct hs_module *m = hs_dwarf_module(t->dw, i);
		Dwarf_Addr bias;
		if (!m->mod || !dwfl_module_getdwarf(m->mod, &bias))
			continue;
		struct name_index *ix;
		struct hs_error *err = name_index(t, m, &ix);
		if (err)
			return err;
		Dwarf_Die def;
		if (index_find(ix, name, &def))
			return from_die(t, m, &def, ret);
	}
	return intern(t, name, size, ret);
}

struct hs_error *hs_dtypes_object(struct hs_dtypes *t, const char *name,
				  struct hs_dtype **ret)
{
	return intern(t, name, 0, ret);
}

/* ---- pointer slots ---- */

struct flat {
	struct hs_dptr *v;
	size_t n, cap;
	size_t visits;          /* types looked at, bounded by MAX_VISITS */
	bool vptr;              /* a _vptr member was seen */
};

static struct hs_error *flat_add(struct flat *f, struct hs_dptr p)
{
	if (f->n >= MAX_PTRS)
		return NULL;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct hs_dptr *v = hs_realloc(f->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = p;
	return NULL;
}

static uint64_t array_count(Dwarf_Die *arr, Dwarf_Die *elem)
{
	Dwarf_Word size = 0, esize = 0;
	if (dwarf_aggregate_size(arr, &size) != 0 ||
	    dwarf_aggregate_size(elem, &esize) != 0 || !esize)
		return 0;
	return size / esize;
}

/* ---- libstdc++'s node-based containers ----
 *
 * std::map, std::set, std::list and std::unordered_* link their nodes
 * through a base class that has no value: _Rb_tree_node_base's _M_left,
 * _List_node_base's _M_next, _Hash_node_base's _M_nxt.  What a node
 * really is (_Rb_tree_node<V>, _List_node<V>, _Hash_node<V, c>) is only
 * known from the template around the pointer: the container
 * (_Rb_tree<K, V, ...>, _List_base<V, A>, _Hashtable<K, V, ...>), an
 * iterator, or the node itself.  Flattening such a template, a pointer
 * to the base node is taken as a pointer to the node of its V, found by
 * name in the module's DWARF (libstdc++ 9 to 14: stl_tree.h, stl_list.h,
 * hashtable_policy.h), but for a tree node's _M_parent: the root's points
 * to the header, inside the object that holds the map.  A node keeps its value in
 * __gnu_cxx::__aligned_membuf<V> or __aligned_buffer<V>, bytes to the
 * compiler: flattened as the V they hold. */

struct node_ctx {
	const char *base;       /* the base node: "std::_Rb_tree_node_base" */
	struct hs_dtype *node;  /* what a pointer to it points to */
	const char *keep;       /* a member left a pointer to the base, or NULL */
};

static const struct node_kind {
	const char *tmpl;       /* the template's own name, up to its '<' */
	int arg;                /* V's place in its type parameters; -1: the
				 * template is the node itself */
	const char *node;       /* the node's qualified name, up to its '<' */
	const char *base;
	/* a member of the base that may point to the container's own
	 * sentinel, inside the object holding the container, rather than to
	 * a node: a tree node's _M_parent (the root's is the header) */
	const char *keep;
} node_kinds[] = {
	{"_Rb_tree<", 1, "std::_Rb_tree_node<", "std::_Rb_tree_node_base"},
	{"_Rb_tree_iterator<", 0, "std::_Rb_tree_node<", "std::_Rb_tree_node_base"},
	{"_Rb_tree_const_iterator<", 0, "std::_Rb_tree_node<", "std::_Rb_tree_node_base"},
	{"_Rb_tree_node<", -1, NULL, "std::_Rb_tree_node_base", "_M_parent"},
	{"_List_base<", 0, "std::_List_node<", "std::__detail::_List_node_base"},
	{"_List_iterator<", 0, "std::_List_node<", "std::__detail::_List_node_base"},
	{"_List_const_iterator<", 0, "std::_List_node<",
	 "std::__detail::_List_node_base"},
	{"_List_node<", -1, NULL, "std::__detail::_List_node_base"},
	{"_Hashtable<", 1, "std::__detail::_Hash_node<", "std::__detail::_Hash_node_base"},
	{"_Hash_node<", -1, NULL, "std::__detail::_Hash_node_base"},
};

/* The type of die's k-th template type parameter. */
static bool template_arg(Dwarf_Die *die, int k, Dwarf_Die *ret)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return false;
	int i = 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_template_type_parameter)
			continue;
		if (i++ == k)
			return type_of(&child, ret);
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* The definition named prefix...> in m whose first template type
 * parameter is named vname. */
static struct hs_error *find_instance(struct hs_dtypes *t, struct hs_module *m,
				      const char *prefix, const char *vname,
				      struct hs_dtype **ret)
{
	*ret = NULL;
	struct name_index *ix;
	struct hs_error *err = name_index(t, m, &ix);
	if (err)
		return err;
	size_t plen = strlen(prefix), lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(ix->v[mid].name, prefix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* bounded: one look per definition of that template in the module */
	for (; lo < ix->n && !strncmp(ix->v[lo].name, prefix, plen); lo++) {
		Dwarf_Die def, arg;
		char name[512];
		if (!dwarf_offdie(ix->dbg, ix->v[lo].off, &def) || !template_arg(&def, 0, &arg))
			continue;
		type_name(&arg, name, sizeof(name), 0);
		if (!strcmp(name, vname))
			return from_die(t, m, &def, ret);
	}
	return NULL;
}

/* Whether the struct at die (named name) is one of node_kinds; *ret then
 * says what its base-node pointers point to. */
static struct hs_error *node_context(struct hs_dtypes *t, struct hs_module *m,
				     Dwarf_Die *die, const char *name,
				     struct node_ctx *ret, bool *found)
{
	*found = false;
	for (size_t k = 0; k < sizeof(node_kinds) / sizeof(node_kinds[0]); k++) {
		const struct node_kind *nk = &node_kinds[k];
		if (strncmp(name, nk->tmpl, strlen(nk->tmpl)))
			continue;
		struct hs_dtype *node = NULL;
		struct hs_error *err;
		if (nk->arg < 0) {
			err = from_die(t, m, die, &node);
		} else {
			Dwarf_Die v;
			char vname[512];
			if (!template_arg(die, nk->arg, &v))
				return NULL;
			type_name(&v, vname, sizeof(vname), 0);
			err = find_instance(t, m, nk->node, vname, &node);
		}
		if (err)
			return err;
		if (!node || !node->size)
			return NULL;
		ret->base = nk->base;
		ret->node = node;
		ret->keep = nk->keep;
		*found = true;
		return NULL;
	}
	return NULL;
}

/* Pointer slots of the type at die, at base; an array of them with
 * (stride, count) when inside an array.  Recursion is bounded by
 * MAX_DEPTH: it follows the nesting of types, not data.  nc: the
 * innermost node-based container around (see node_kinds), or NULL. */
static struct hs_error *flatten(struct hs_dtypes *t, struct hs_module *m,
				Dwarf_Die *die, uint64_t base, uint64_t stride,
				uint32_t count, struct flat *f, int depth,
				const struct node_ctx *nc)
{
	if (depth > MAX_DEPTH || ++f->visits > MAX_VISITS)
		return NULL;
	Dwarf_Die peeled, inner;
	if (dwarf_peel_type(die, &peeled) != 0)
		return NULL;
	struct hs_error *err;
	switch (dwarf_tag(&peeled)) {
	case DW_TAG_pointer_type: {
		struct hs_dtype *pointee = NULL;
		if (type_of(&peeled, &inner) && (err = from_die(t, m, &inner, &pointee)))
			return err;
		if (!pointee)
			return NULL;  /* void * or a function pointer */
		if (nc && !strcmp(pointee->name, nc->base))
			pointee = nc->node;
		return flat_add(f, (struct hs_dptr){base, stride, count, pointee});
	}
	case DW_TAG_array_type: {
		if (!type_of(&peeled, &inner))
			return NULL;
		uint64_t n = array_count(&peeled, &inner);
		Dwarf_Word esize = 0;
		dwarf_aggregate_size(&inner, &esize);
		if (!n || !esize)
			return NULL;
		if (count == 1)
			return flatten(t, m, &inner, base, esize, (uint32_t)n, f, depth + 1,
				       nc);
		/* an array in an array: unroll the outer one, as long as its
		 * elements hold pointers (the first one tells: they all have
		 * the same type; an array of 10^9 structs of scalars must not
		 * cost 10^9 calls) */
		for (uint32_t i = 0; i < count && f->n < MAX_PTRS; i++) {
			size_t before = f->n;
			if ((err = flatten(t, m, &inner, base + i * stride, esize,
					   (uint32_t)n, f, depth + 1, nc)))
				return err;
			if (f->n == before)
				break;
		}
		return NULL;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type: {
		if (is_decl(&peeled)) {
			char full[512];
			type_name(&peeled, full, sizeof(full), 0);
			struct name_index *ix;
			if ((err = name_index(t, m, &ix)))
				return err;
			Dwarf_Die def;
			if (!index_find(ix, full, &def))
				return NULL;
			peeled = def;
		}
		const char *sn = is_cxx(&peeled) ? dwarf_diename(&peeled) : NULL;
		struct node_ctx mine;
		if (sn) {
			/* a node's value, bytes to the compiler */
			Dwarf_Die v;
			if ((!strncmp(sn, "__aligned_membuf<", 17) ||
			     !strncmp(sn, "__aligned_buffer<", 17)) && template_arg(&peeled, 0, &v))
				return flatten(t, m, &v, base, stride, count, f, depth + 1, nc);
			bool found;
			if ((err = node_context(t, m, &peeled, sn, &mine, &found)))
				return err;
			if (found)
				nc = &mine;
		}
		Dwarf_Die member;
		if (dwarf_child(&peeled, &member) != 0)
			return NULL;
		do {
			int tag = dwarf_tag(&member);
			if (tag != DW_TAG_member && tag != DW_TAG_inheritance)
				continue;
			/* the vptr: GCC names it "_vptr.Class", clang "_vptr$Class" */
			const char *mn = tag == DW_TAG_member ? dwarf_diename(&member) : NULL;
			if (mn && !strncmp(mn, "_vptr", 5))
				f->vptr = true;
			Dwarf_Attribute a;
			Dwarf_Word off = 0;
			if (dwarf_attr(&member, DW_AT_data_member_location, &a)) {
				if (dwarf_formudata(&a, &off) != 0)
					continue;
			} else if (dwarf_attr(&member, DW_AT_external, &a)) {
				continue;  /* a static member */
			}
			if (dwarf_attr(&member, DW_AT_bit_size, &a) ||
			    dwarf_attr(&member, DW_AT_data_bit_offset, &a))
				continue;
			if (!type_of(&member, &inner))
				continue;
			bool keep = nc && nc->keep && mn && !strcmp(mn, nc->keep);
			if ((err = flatten(t, m, &inner, base + off, stride, count, f,
					   depth + 1, keep ? NULL : nc)))
				return err;
		} while (dwarf_siblingof(&member, &member) == 0);
		return NULL;
	}
	default:
		/* unions are ambiguous; scalars hold no pointers */
		return NULL;
	}
}

struct hs_error *hs_dtype_pointers(struct hs_dtypes *t, struct hs_dtype *type,
				   const struct hs_dptr **ret, size_t *n)
{
	if (!type->layout_done) {
		type->layout_done = true;
		Dwarf_Die die;
		if (type->dbg && dwarf_offdie(type->dbg, type->die, &die)) {
			struct flat f = {0};
			struct hs_error *err = flatten(t, type->mod, &die, 0, 0, 1, &f, 0,
						       NULL);
			if (err) {
				free(f.v);
				return err;
			}
			type->ptrs = f.v;
			type->nptrs = f.n;
			type->polymorphic = f.vptr;
		}
	}
	*ret = type->ptrs;
	*n = type->nptrs;
	return NULL;
}

/* ---- libstdc++ containers in a type ---- */

static const struct container_kind {
	const char *prefix;     /* the qualified name, up to its '<' */
	uint8_t kind;
	uint64_t size;          /* sizeof the container in libstdc++ */
	const char *node;       /* tree, hash: the node template */
} container_kinds[] = {
	{"std::vector<", HS_DC_VECTOR, 24, NULL},
	{"std::__cxx11::basic_string<", HS_DC_STRING, 32, NULL},
	{"std::unordered_map<", HS_DC_HASH, 56, "std::__detail::_Hash_node<"},
	{"std::unordered_set<", HS_DC_HASH, 56, "std::__detail::_Hash_node<"},
	{"std::unordered_multimap<", HS_DC_HASH, 56, "std::__detail::_Hash_node<"},
	{"std::unordered_multiset<", HS_DC_HASH, 56, "std::__detail::_Hash_node<"},
	{"std::map<", HS_DC_TREE, 48, "std::_Rb_tree_node<"},
	{"std::set<", HS_DC_TREE, 48, "std::_Rb_tree_node<"},
	{"std::multimap<", HS_DC_TREE, 48, "std::_Rb_tree_node<"},
	{"std::multiset<", HS_DC_TREE, 48, "std::_Rb_tree_node<"},
	{"std::deque<", HS_DC_DEQUE, 80, NULL},
};

struct conts {
	struct hs_dcontainer *v;
	size_t n, cap;
	size_t visits;
};

/* The element size of a container of kind ck whose definition is die:
 * sizeof T, or sizeof the node of its value (the value type is the
 * second template parameter of its one member, _Rb_tree or _Hashtable). */
static struct hs_error *container_esize(struct hs_dtypes *t, struct hs_module *m,
					Dwarf_Die *die, const struct container_kind *ck,
					uint64_t *ret)
{
	*ret = 0;
	Dwarf_Die arg, impl, v;
	Dwarf_Word size = 0;
	if (!ck->node) {
		if (template_arg(die, 0, &arg) && dwarf_aggregate_size(&arg, &size) == 0)
			*ret = size;
		return NULL;
	}
	Dwarf_Die member;
	if (dwarf_child(die, &member) != 0)
		return NULL;
	do {
		if (dwarf_tag(&member) != DW_TAG_member)
			continue;
		Dwarf_Attribute a;
		if (!dwarf_attr(&member, DW_AT_data_member_location, &a) || !type_of(&member, &impl) ||
		    dwarf_peel_type(&impl, &impl) != 0 || !template_arg(&impl, 1, &v))
			continue;
		char vname[512];
		type_name(&v, vname, sizeof(vname), 0);
		struct hs_dtype *node;
		struct hs_error *err = find_instance(t, m, ck->node, vname, &node);
		if (err)
			return err;
		if (node)
			*ret = node->size;
		return NULL;
	} while (dwarf_siblingof(&member, &member) == 0);
	return NULL;
}

/* Containers in the type at die, at base (see flatten, whose walk this
 * follows). */
static struct hs_error *find_containers(struct hs_dtypes *t, struct hs_module *m,
					Dwarf_Die *die, uint64_t base, uint64_t stride,
					uint32_t count, struct conts *c, int depth)
{
	if (depth > MAX_DEPTH || ++c->visits > MAX_VISITS || c->n >= MAX_PTRS)
		return NULL;
	Dwarf_Die peeled, inner;
	if (dwarf_peel_type(die, &peeled) != 0)
		return NULL;
	struct hs_error *err;
	int tag = dwarf_tag(&peeled);
	if (tag == DW_TAG_array_type) {
		if (!type_of(&peeled, &inner))
			return NULL;
		uint64_t n = array_count(&peeled, &inner);
		Dwarf_Word esize = 0;
		dwarf_aggregate_size(&inner, &esize);
		if (!n || !esize)
			return NULL;
		if (count == 1)
			return find_containers(t, m, &inner, base, esize, (uint32_t)n, c,
					       depth + 1);
		for (uint32_t i = 0; i < count && c->n < MAX_PTRS; i++) {
			size_t before = c->n;
			if ((err = find_containers(t, m, &inner, base + i * stride, esize,
						   (uint32_t)n, c, depth + 1)))
				return err;
			if (c->n == before)
				break;
		}
		return NULL;
	}
	if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type)
		return NULL;
	if (is_decl(&peeled)) {
		char full[512];
		type_name(&peeled, full, sizeof(full), 0);
		struct name_index *ix;
		if ((err = name_index(t, m, &ix)))
			return err;
		Dwarf_Die def;
		if (!index_find(ix, full, &def))
			return NULL;
		peeled = def;
	}
	if (!is_cxx(&peeled))
		return NULL;
	const char *sn = dwarf_diename(&peeled);
	Dwarf_Die v;
	if (sn && (!strncmp(sn, "__aligned_membuf<", 17) ||
		   !strncmp(sn, "__aligned_buffer<", 17)) && template_arg(&peeled, 0, &v))
		return find_containers(t, m, &v, base, stride, count, c, depth + 1);
	char name[512];
	type_name(&peeled, name, sizeof(name), 0);
	for (size_t k = 0; k < sizeof(container_kinds) / sizeof(container_kinds[0]); k++) {
		const struct container_kind *ck = &container_kinds[k];
		if (strncmp(name, ck->prefix, strlen(ck->prefix)))
			continue;
		if (!strncmp(name, "std::vector<bool,", 17))
			return NULL;  /* bits, not elements */
		Dwarf_Word size = 0;
		uint64_t esize;
		if (dwarf_aggregate_size(&peeled, &size) != 0 || size != ck->size)
			return NULL;
		if ((err = container_esize(t, m, &peeled, ck, &esize)))
			return err;
		struct hs_dtype *d;
		if (!esize || (err = from_die(t, m, &peeled, &d)) || !d)
			return err;
		if (c->n == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 8;
			struct hs_dcontainer *w = hs_realloc(c->v, cap * sizeof(*w));
			if (!w)
				return &hs_error_nomem;
			c->v = w;
			c->cap = cap;
		}
		c->v[c->n++] = (struct hs_dcontainer){base, stride, count, ck->kind, esize, d};
		return NULL;
	}
	Dwarf_Die member;
	if (dwarf_child(&peeled, &member) != 0)
		return NULL;
	do {
		int mt = dwarf_tag(&member);
		if (mt != DW_TAG_member && mt != DW_TAG_inheritance)
			continue;
		Dwarf_Attribute a;
		Dwarf_Word off = 0;
		if (!dwarf_attr(&member, DW_AT_data_member_location, &a) ||
		    dwarf_formudata(&a, &off) != 0 || dwarf_attr(&member, DW_AT_bit_size, &a) ||
		    !type_of(&member, &inner))
			continue;
		if ((err = find_containers(t, m, &inner, base + off, stride, count, c,
					   depth + 1)))
			return err;
	} while (dwarf_siblingof(&member, &member) == 0);
	return NULL;
}

struct hs_error *hs_dtype_containers(struct hs_dtypes *t, struct hs_dtype *type,
				     const struct hs_dcontainer **ret, size_t *n)
{
	if (!type->containers_done) {
		type->containers_done = true;
		Dwarf_Die die;
		if (type->dbg && dwarf_offdie(type->dbg, type->die, &die)) {
			struct conts c = {0};
			struct hs_error *err = find_containers(t, type->mod, &die, 0, 0, 1, &c, 0);
			if (err) {
				free(c.v);
				return err;
			}
			type->containers = c.v;
			type->ncontainers = c.n;
		}
	}
	*ret = type->containers;
	*n = type->ncontainers;
	return NULL;
}

/* ---- variables ---- */

struct vars {
	struct hs_dvar *v;
	size_t n, cap;
};

/* The caller's test of a variable's bytes (hs_dtypes_variables). */
struct var_filter {
	bool (*holds)(void *arg, uint64_t addr, uint64_t size);
	void *arg;
};

static struct hs_error *var_add(struct hs_dtypes *t, struct hs_module *m,
				Dwarf_Die *die, Dwarf_Addr bias,
				const struct var_filter *filter, struct vars *out)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	if (!dwarf_attr(die, DW_AT_location, &a) ||
	    dwarf_getlocation(&a, &ops, &nops) != 0)
		return NULL;
	uint64_t addr;
	bool tls = false;
	if (nops == 1 && ops[0].atom == DW_OP_addr) {
		addr = ops[0].number + bias;
	} else if (nops == 2 &&
		   (ops[1].atom == DW_OP_GNU_push_tls_address ||
		    ops[1].atom == DW_OP_form_tls_address) &&
		   (ops[0].atom == DW_OP_const8u || ops[0].atom == DW_OP_const4u ||
		    ops[0].atom == DW_OP_constu || ops[0].atom == DW_OP_addr)) {
		addr = ops[0].number;
		tls = true;
	} else {
		return NULL;
	}
	Dwarf_Die type;
	if (!type_of(die, &type))
		return NULL;
	Dwarf_Word size;
	if (filter && filter->holds && !tls &&
	    dwarf_aggregate_size(&type, &size) == 0 &&
	    !filter->holds(filter->arg, addr, size ? size : 8))
		return NULL;
	/* only variables that can hold pointers matter */
	struct hs_dtype *d;
	struct hs_error *err = from_die(t, m, &type, &d);
	if (err || !d)
		return err;
	const struct hs_dptr *p;
	size_t np;
	if ((err = hs_dtype_pointers(t, d, &p, &np)) || !np)
		return err;
	if (out->n == out->cap) {
		size_t cap = out->cap ? 2 * out->cap : 64;
		struct hs_dvar *v = hs_realloc(out->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		out->v = v;
		out->cap = cap;
	}
	Dwarf_Attribute na;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &na));
	struct hs_dvar *v = &out->v[out->n];
	v->name = strdup(name ? name : "?");
	if (!v->name)
		return &hs_error_nomem;
	v->mod = m;
	v->addr = addr;
	v->tls = tls;
	v->type = d;
	out->n++;
	return NULL;
}

struct vars_walk {
	struct hs_dtypes *t;
	struct hs_module *m;
	Dwarf_Addr bias;
	struct var_filter filter;
	struct vars *out;
};

/* Variables: top level, in namespaces, and function-local statics. */
static struct hs_error *vars_die(Dwarf_Die *die, void *arg, bool *descend)
{
	struct vars_walk *w = arg;
	int tag = dwarf_tag(die);
	if (tag == DW_TAG_variable)
		return var_add(w->t, w->m, die, w->bias, &w->filter, w->out);
	*descend = tag == DW_TAG_namespace || tag == DW_TAG_subprogram ||
		tag == DW_TAG_lexical_block;
	return NULL;
}

struct hs_error *hs_dtypes_variables(struct hs_dtypes *t, struct hs_module *m,
				     bool (*holds)(void *arg, uint64_t addr, uint64_t size),
				     void *arg, struct hs_dvar **vars, size_t *n)
{
	struct vars out = {*vars, *n, *n};
	struct vars_walk w = {t, m, 0, {holds, arg}, &out};
	Dwarf_Die *cu = NULL;
	struct hs_error *err = NULL;
	while (!err && m->mod && (cu = dwfl_module_nextcu(m->mod, cu, &w.bias)))
		err = walk_cu(cu, vars_die, &w);
	*vars = out.v;
	*n = out.n;
	return err;
}

void hs_dvars_free(struct hs_dvar *vars, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(vars[i].name);
	free(vars);
}

/* ---- member names ---- */

char *hs_dtype_member_at(struct hs_dtypes *t, struct hs_dtype *type,
			 uint64_t offset)
{
	(void)t;
	Dwarf_Die die;
	if (!type->dbg || !dwarf_offdie(type->dbg, type->die, &die))
		return NULL;
	char path[512];
	size_t at = 0;
	path[0] = 0;
	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		Dwarf_Die peeled;
		if (dwarf_peel_type(&die, &peeled) != 0)
			break;
		int tag = dwarf_tag(&peeled);
		if (tag == DW_TAG_array_type) {
			Dwarf_Die elem;
			Dwarf_Word esize = 0;
			if (!type_of(&peeled, &elem) || dwarf_aggregate_size(&elem, &esize) ||
			    !esize)
				break;
			int w = snprintf(path + at, sizeof(path) - at, "[%llu]",
					 (unsigned long long)(offset / esize));
			if (w > 0 && (size_t)w < sizeof(path) - at)
				at += (size_t)w;
			offset %= esize;
			die = elem;
			continue;
		}
		if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type &&
		    tag != DW_TAG_union_type)
			break;
		Dwarf_Die member, found;
		bool ok = false;
		uint64_t found_off = 0;
		if (dwarf_child(&peeled, &member) == 0) {
			do {
				if (dwarf_tag(&member) != DW_TAG_member &&
				    dwarf_tag(&member) != DW_TAG_inheritance)
					continue;
				Dwarf_Attribute a;
				Dwarf_Word off = 0, size = 0;
				Dwarf_Die mt;
				if (!dwarf_attr(&member, DW_AT_data_member_location, &a) ||
				    dwarf_formudata(&a, &off) != 0 || !type_of(&member, &mt) ||
				    dwarf_aggregate_size(&mt, &size) != 0)
					continue;
				if (offset >= off && offset < off + size) {
					found = member;
					found_off = off;
					ok = true;
					break;
				}
			} while (dwarf_siblingof(&member, &member) == 0);
		}
		if (!ok)
			break;
		const char *name = dwarf_diename(&found);
		char base[256];  /* outlives the block below: name may point here */
		if (!name) {  /* an anonymous member or a base class */
			Dwarf_Die mt;
			if (dwarf_tag(&found) == DW_TAG_inheritance && type_of(&found, &mt))
				type_name(&mt, base, sizeof(base), 0);
			else
				base[0] = 0;
			name = dwarf_tag(&found) == DW_TAG_inheritance ? base : NULL;
		}
		if (name && *name) {
			int w = snprintf(path + at, sizeof(path) - at, "%s%s",
					 at ? "." : "", name);
			if (w > 0 && (size_t)w < sizeof(path) - at)
				at += (size_t)w;
		}
		offset -= found_off;
		if (!type_of(&found, &die))
			break;
	}
	return at ? strdup(path) : NULL;
}

/* ---- locals of a frame ---- */

static bool frame_base_is_cfa(Dwarf_Die *fn)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	return dwarf_attr(fn, DW_AT_frame_base, &a) &&
	       dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 &&
	       ops[0].atom == DW_OP_call_frame_cfa;
}

struct hs_error *hs_dtypes_frame_locals(struct hs_dtypes *t, struct hs_module *m,
					uint64_t pc, bool exact, uint64_t cfa,
					struct hs_dvar **vars, size_t *n)
{
	Dwarf_Addr bias;
	uint64_t look = exact ? pc : pc - 1;
	Dwarf_Die *cu = m->mod ? dwfl_module_addrdie(m->mod, look, &bias) : NULL;
	if (!cu)
		return NULL;
	Dwarf_Die *scopes = NULL;
	int nscopes = dwarf_getscopes(cu, look - bias, &scopes);
	if (nscopes <= 0)
		return NULL;
	/* the frame base of the function these scopes are in */
	bool cfa_based = false;
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram) {
			cfa_based = frame_base_is_cfa(&scopes[i]);
			break;
		}
	}
	struct vars out = {*vars, *n, *n};
	struct hs_error *err = NULL;
	for (int i = 0; i < nscopes && cfa_based && !err; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_lexical_block &&
		    tag != DW_TAG_inlined_subroutine)
			continue;
		Dwarf_Die child;
		if (dwarf_child(&scopes[i], &child) != 0)
			continue;
		do {
			int ct = dwarf_tag(&child);
			if (ct != DW_TAG_variable && ct != DW_TAG_formal_parameter)
				continue;
			Dwarf_Attribute a;
			Dwarf_Op *ops;
			size_t nops;
			if (!dwarf_attr(&child, DW_AT_location, &a) ||
			    dwarf_getlocation_addr(&a, look - bias, &ops, &nops, 1) != 1 ||
			    nops != 1 || ops[0].atom != DW_OP_fbreg)
				continue;
			Dwarf_Die type;
			if (!type_of(&child, &type))
				continue;
			struct hs_dtype *d;
			if ((err = from_die(t, m, &type, &d)))
				break;
			const struct hs_dptr *p;
			size_t np;
			if (!d || (err = hs_dtype_pointers(t, d, &p, &np)))
				continue;
			if (!np)
				continue;
			if (out.n == out.cap) {
				size_t cap = out.cap ? 2 * out.cap : 64;
				struct hs_dvar *v = hs_realloc(out.v, cap * sizeof(*v));
				if (!v) {
					err = &hs_error_nomem;
					break;
				}
				out.v = v;
				out.cap = cap;
			}
			Dwarf_Attribute na;
			const char *name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_name, &na));
			struct hs_dvar *v = &out.v[out.n];
			v->name = strdup(name ? name : "?");
			if (!v->name) {
				err = &hs_error_nomem;
				break;
			}
			v->mod = m;
			v->addr = cfa + (uint64_t)(int64_t)ops[0].number;
			v->tls = false;
			v->type = d;
			out.n++;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	free(scopes);
	*vars = out.v;
	*n = out.n;
	return err;
}

bool hs_dtype_is_aggregate(const struct hs_dtype *type)
{
	if (type->from_vtable)
		return true;
	if (!type->dbg)
		return false;
	if (type->aggregate)  /* decided once: the types' solver asks often */
		return type->aggregate == 1;
	Dwarf_Die die;
	bool agg = false;
	if (dwarf_offdie(type->dbg, type->die, &die)) {
		int tag = dwarf_tag(&die);
		agg = tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
		      tag == DW_TAG_union_type;
	}
	((struct hs_dtype *)type)->aggregate = agg ? 1 : 2;
	return agg;
}

/* ---- the catalogue of struct definitions, by size ---- */

struct hs_dstruct {
	struct hs_module *mod;
	Dwarf *dbg;
	Dwarf_Off off;          /* the struct's DIE, or its typedef's */
	uint64_t size;
	struct hs_dtype *type;  /* interned on first use */
	bool done;
};

HS_HASH_SET(key_set)

struct collect {
	struct hs_dstruct *v;
	size_t n, cap;
	struct key_set keys;    /* struct_key of each struct taken */
	struct hs_module *m;
	Dwarf *dbg;
	double deadline;
	uint64_t visits;
	bool over;
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Name, size and the first members' names and offsets: one entry for the
 * copies of a header's struct in every compilation unit. */
static uint64_t struct_key(Dwarf_Die *def, const char *name, uint64_t size)
{
	uint64_t h = hash_str(name, size);
	Dwarf_Die member;
	if (dwarf_child(def, &member) != 0)
		return h | 1;
	int k = 0;
	do {
		if (dwarf_tag(&member) != DW_TAG_member)
			continue;
		const char *mn = dwarf_diename(&member);
		Dwarf_Attribute a;
		Dwarf_Word off = 0;
		if (dwarf_attr(&member, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &off);
		h = hash_str(mn ? mn : "", h ^ off);
	} while (++k < 4 && dwarf_siblingof(&member, &member) == 0);
	return h | 1;
}

static struct hs_error *struct_die(Dwarf_Die *die, void *arg, bool *descend)
{
	struct collect *c = arg;
	int tag = dwarf_tag(die);
	*descend = !c->over && (tag == DW_TAG_namespace ||
				tag == DW_TAG_structure_type || tag == DW_TAG_class_type);
	if (c->over)
		return NULL;
	if (++c->visits % 4096 == 0 && mono_now() > c->deadline) {
		c->over = true;
		return NULL;
	}
	Dwarf_Die def = *die;
	const char *name;
	if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type) {
		name = dwarf_diename(die);
		if (!name || is_decl(die))
			return NULL;
	} else if (tag == DW_TAG_typedef) {
		/* typedef struct { ... } config_t; */
		if (!type_of(die, &def) || dwarf_tag(&def) != DW_TAG_structure_type ||
		    dwarf_diename(&def) || is_decl(&def) || !(name = dwarf_diename(die)))
			return NULL;
	} else {
		return NULL;
	}
	Dwarf_Word size = 0;
	if (dwarf_aggregate_size(&def, &size) != 0 || !size || size > HS_DSTRUCT_MAX_SIZE)
		return NULL;
	bool fresh;
	struct hs_error *kerr = key_set_add(&c->keys, struct_key(&def, name, size),
					    &fresh);
	if (kerr || !fresh)
		return kerr;
	if (c->keys.n > HS_DSTRUCT_MAX_TYPES) {
		c->over = true;
		return NULL;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		struct hs_dstruct *v = hs_realloc(c->v, cap * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct hs_dstruct){.mod = c->m, .dbg = c->dbg,
					   .off = dwarf_dieoffset(die), .size = size};
	return NULL;
}

static int cmp_dstruct(const void *a, const void *b)
{
	const struct hs_dstruct *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static struct hs_error *append_name(char **list, const char *name)
{
	char *s;
	if (asprintf(&s, "%s%s%s", *list ? *list : "", *list ? ", " : "", name) < 0)
		return &hs_error_nomem;
	free(*list);
	*list = s;
	return NULL;
}

struct hs_error *hs_dtypes_structs(struct hs_dtypes *t, char **skipped)
{
	*skipped = NULL;
	if (t->structs_done)
		return NULL;
	t->structs_done = true;
	struct collect c = {0};
	struct hs_error *err = NULL;
	size_t nmod = hs_dwarf_num_modules(t->dw);
	/* the executable first: a type it shares with a library is its own */
	for (int pass = 0; pass < 2 && !err; pass++) {
		for (size_t i = 0; i < nmod && !err; i++) {
			struct hs_module *m = hs_dwarf_module(t->dw, i);
			if (m->is_exe != (pass == 0))
				continue;
			Dwarf_Addr bias;
			Dwarf *dbg = m->mod ? dwfl_module_getdwarf(m->mod, &bias) : NULL;
			if (!dbg)
				continue;
			size_t start = c.n;
			c.m = m;
			c.dbg = dbg;
			c.over = false;
			c.visits = 0;
			c.deadline = mono_now() + HS_DSTRUCT_MAX_SECONDS;
			if (c.keys.keys)
				memset(c.keys.keys, 0, c.keys.cap * sizeof(*c.keys.keys));
			c.keys.n = 0;
			Dwarf_Die *cu = NULL;
			while (!err && !c.over && (cu = dwfl_module_nextcu(m->mod, cu, &bias)))
				err = walk_cu(cu, struct_die, &c);
			if (!err && c.over) {
				c.n = start;
				err = append_name(skipped, m->name ? m->name : "?");
			}
		}
	}
	key_set_free(&c.keys);
	if (err) {
		free(c.v);
		free(*skipped);
		*skipped = NULL;
		return err;
	}
	hs_sort(c.v, c.n, sizeof(*c.v), cmp_dstruct);
	t->structs = c.v;
	t->nstructs = c.n;
	return NULL;
}

static int cmp_dtype_index(const void *a, const void *b)
{
	const struct hs_dtype *x = *(struct hs_dtype *const *)a;
	const struct hs_dtype *y = *(struct hs_dtype *const *)b;
	return x->index < y->index ? -1 : x->index > y->index;
}

struct hs_error *hs_dtypes_structs_sized(struct hs_dtypes *t, uint64_t lo,
					 uint64_t hi, struct hs_dtype ***v,
					 size_t *n, size_t *cap)
{
	size_t a = 0, b = t->nstructs;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (t->structs[mid].size < lo)
			a = mid + 1;
		else
			b = mid;
	}
	size_t first = *n;
	for (size_t i = a; i < t->nstructs && t->structs[i].size <= hi; i++) {
		struct hs_dstruct *s = &t->structs[i];
		if (!s->done) {
			s->done = true;
			Dwarf_Die die;
			if (dwarf_offdie(s->dbg, s->off, &die)) {
				struct hs_error *err = from_die(t, s->mod, &die, &s->type);
				if (err)
					return err;
			}
		}
		if (!s->type || s->type->size != s->size)
			continue;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			struct hs_dtype **w = hs_realloc(*v, c * sizeof(*w));
			if (!w)
				return &hs_error_nomem;
			*v = w;
			*cap = c;
		}
		(*v)[(*n)++] = s->type;
	}
	/* one entry per type: copies in several modules intern to one */
	hs_sort(*v + first, *n - first, sizeof(**v), cmp_dtype_index);
	size_t m = first;
	for (size_t i = first; i < *n; i++)
		if (m == first || (*v)[m - 1] != (*v)[i])
			(*v)[m++] = (*v)[i];
	*n = m;
	return NULL;
}

/* Marks the bytes of [base, base + size of die) that scalar members cover
 * (1 in bytes[]); pointers, unions and bit fields are left 0. */
static void scalar_mark(Dwarf_Die *die, uint64_t base, uint8_t *bytes,
			uint64_t limit, int depth, size_t *visits)
{
	if (depth > MAX_DEPTH || ++*visits > MAX_VISITS || base >= limit)
		return;
	Dwarf_Die peeled, inner;
	if (dwarf_peel_type(die, &peeled) != 0)
		return;
	Dwarf_Word size = 0;
	switch (dwarf_tag(&peeled)) {
	case DW_TAG_base_type:
	case DW_TAG_enumeration_type:
		if (dwarf_aggregate_size(&peeled, &size) == 0 && size <= limit - base)
			memset(bytes + base, 1, size);
		return;
	case DW_TAG_array_type: {
		if (!type_of(&peeled, &inner))
			return;
		uint64_t n = array_count(&peeled, &inner);
		Dwarf_Word esize = 0;
		Dwarf_Die ep;
		if (!n || dwarf_aggregate_size(&inner, &esize) != 0 || !esize ||
		    dwarf_peel_type(&inner, &ep) != 0)
			return;
		int et = dwarf_tag(&ep);
		if (et == DW_TAG_base_type || et == DW_TAG_enumeration_type) {
			uint64_t len = n * esize;
			if (len / esize == n && len <= limit - base)
				memset(bytes + base, 1, len);
			return;
		}
		for (uint64_t i = 0; i < n && base + i * esize < limit; i++)
			scalar_mark(&inner, base + i * esize, bytes, limit, depth + 1, visits);
		return;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type: {
		Dwarf_Die member;
		if (is_decl(&peeled) || dwarf_child(&peeled, &member) != 0)
			return;
		do {
			int tag = dwarf_tag(&member);
			if (tag != DW_TAG_member && tag != DW_TAG_inheritance)
				continue;
			Dwarf_Attribute a;
			Dwarf_Word off = 0;
			if (!dwarf_attr(&member, DW_AT_data_member_location, &a) ||
			    dwarf_formudata(&a, &off) != 0 ||
			    dwarf_attr(&member, DW_AT_bit_size, &a) ||
			    dwarf_attr(&member, DW_AT_data_bit_offset, &a) ||
			    !type_of(&member, &inner))
				continue;
			scalar_mark(&inner, base + off, bytes, limit, depth + 1, visits);
		} while (dwarf_siblingof(&member, &member) == 0);
		return;
	}
	default:
		return;
	}
}

struct hs_error *hs_dtype_scalar_words(struct hs_dtypes *t, struct hs_dtype *type,
				       const uint64_t **ret)
{
	(void)t;
	if (!type->scalar_done) {
		type->scalar_done = true;
		Dwarf_Die die;
		if (type->size && type->size <= HS_DSTRUCT_MAX_SIZE && type->dbg &&
		    dwarf_offdie(type->dbg, type->die, &die)) {
			uint8_t *bytes = hs_calloc(type->size, 1);
			uint64_t *words = hs_calloc((type->size / 8 + 63) / 64 + 1, sizeof(uint64_t));
			if (!bytes || !words) {
				free(bytes);
				free(words);
				return &hs_error_nomem;
			}
			size_t visits = 0;
			scalar_mark(&die, 0, bytes, type->size, 0, &visits);
			for (uint64_t w = 0; w + 1 <= type->size / 8; w++) {
				bool all = true;
				for (int k = 0; k < 8 && all; k++)
					all = bytes[w * 8 + k];
				if (all)
					words[w / 64] |= 1ull << (w % 64);
			}
			free(bytes);
			type->scalar_words = words;
		}
	}
	*ret = type->scalar_words;
	return NULL;
}
