/* C and C++ types from DWARF, as the type analysis needs them: a name, a
 * size, and where the pointers are.
 *
 * Types are interned by (name, size): "struct session" has one entry
 * however many compilation units describe it.  A type's pointer slots are
 * flattened once, lazily: every pointer member, of nested structs too, and
 * arrays of pointers as (offset, stride, count).  An incomplete type (a
 * declaration: struct session; in a header) is completed by name from the
 * module's other compilation units.
 */
#ifndef HS_DWTYPES_H
#define HS_DWTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dwarf.h"

struct hs_dtype;

struct hs_dptr {
	uint64_t offset;        /* of the first pointer */
	uint64_t stride;        /* between pointers of an array (0: one) */
	uint32_t count;         /* pointers in the array (1: one) */
	struct hs_dtype *pointee;
};

struct hs_dtype {
	char *name;             /* "struct session", "shop::Cart", "char" */
	uint64_t size;          /* 0: unknown (incomplete) */
	uint32_t index;         /* in the registry */
	bool from_vtable;       /* named by a vtable (C++ dynamic type) */
	/* a DIE for its layout, if any */
	void *dbg;              /* Dwarf * */
	uint64_t die;           /* Dwarf_Off of the peeled type */
	struct hs_module *mod;
	bool layout_done;
	struct hs_dptr *ptrs;
	size_t nptrs;
	bool polymorphic;       /* has a vptr, its own or a base's (set with ptrs) */
	uint8_t runtime;        /* the types' solver's cache: 0 unknown, 1 the C or
				 * C++ runtime's type, 2 the program's */
	uint8_t aggregate;      /* hs_dtype_is_aggregate's cache: 0 unknown, 1, 2 */
	/* words (8-byte, aligned) that only scalar members cover: one bit
	 * each, for types of at most HS_DSTRUCT_MAX_SIZE bytes */
	bool scalar_done;
	uint64_t *scalar_words;
	/* the libstdc++ containers it holds (hs_dtype_containers) */
	bool containers_done;
	struct hs_dcontainer *containers;
	size_t ncontainers;
};

/* libstdc++ containers, as hs_dtype_containers finds them in a type. */
enum hs_dcontainer_kind {
	HS_DC_VECTOR,           /* std::vector<T> (not vector<bool>) */
	HS_DC_STRING,           /* std::__cxx11::basic_string<C> */
	HS_DC_HASH,             /* std::unordered_{map,set,multimap,multiset} */
	HS_DC_TREE,             /* std::{map,set,multimap,multiset} */
	HS_DC_DEQUE,            /* std::deque<T> */
	HS_DC_NKINDS,
};

struct hs_dcontainer {
	uint64_t offset;        /* of the first one */
	uint64_t stride;        /* between those of an array (0: one) */
	uint32_t count;         /* in the array (1: one) */
	uint8_t kind;           /* enum hs_dcontainer_kind */
	/* the size of an element: T for a vector, a string (its character)
	 * and a deque; the node for a tree or a hash table */
	uint64_t esize;
	struct hs_dtype *type;  /* the container's own type */
};

struct hs_dvar {
	char *name;
	struct hs_module *mod;
	uint64_t addr;          /* run-time address, or offset in the TLS block */
	bool tls;
	struct hs_dtype *type;
};

struct hs_dstruct;

struct hs_dtypes {
	struct hs_dwarf *dw;
	/* every struct definition, by size (hs_dtypes_structs) */
	struct hs_dstruct *structs;
	size_t nstructs;
	bool structs_done;
	struct hs_dtype **v;    /* by index */
	size_t n, cap;
	size_t *hash;           /* open addressing: index + 1, 0 = empty */
	size_t hcap;
	struct name_index *names; /* per module: definitions by name */
	size_t nnames;
};

struct hs_error *hs_dtypes_create(struct hs_dwarf *dw, struct hs_dtypes **ret);
void hs_dtypes_destroy(struct hs_dtypes *t);
/* Lets go of the DWARF before hs_dwarf_release: the types stay (names,
 * sizes, the layouts and pointer slots computed so far), the indexes by
 * name and the catalogue of structs are freed, and nothing is read from
 * DWARF again: a layout not computed yet is unknown. */
void hs_dtypes_release(struct hs_dtypes *t);

/* Global and static variables (and TLS variables, with tls set) that m's
 * DWARF places at a fixed address; appended to *vars (malloc'ed).  With
 * `holds` (may be NULL), a variable at a fixed address is kept only when
 * holds(arg, address, size) says its bytes may hold what the caller looks
 * for; one it rejects is never typed (typing a variable builds its type's
 * layout: most of the cost of a library's thousands of variables). */
struct hs_error *hs_dtypes_variables(struct hs_dtypes *t, struct hs_module *m,
				     bool (*holds)(void *arg, uint64_t addr, uint64_t size),
				     void *arg, struct hs_dvar **vars, size_t *n);
void hs_dvars_free(struct hs_dvar *vars, size_t n);

/* Locals and parameters of the function running at pc (the innermost
 * scopes first, inlined ones included) that live in the frame at a fixed
 * offset from the canonical frame address (DW_OP_fbreg with a frame base
 * of DW_OP_call_frame_cfa): appended to *vars with run-time addresses.
 * exact: pc is where the frame stopped (frame 0), not a return address. */
struct hs_error *hs_dtypes_frame_locals(struct hs_dtypes *t, struct hs_module *m,
					uint64_t pc, bool exact, uint64_t cfa,
					struct hs_dvar **vars, size_t *n);

/* The type's pointer slots (computed once). */
struct hs_error *hs_dtype_pointers(struct hs_dtypes *t, struct hs_dtype *type,
				   const struct hs_dptr **ret, size_t *n);

/* A type known only by name (a C++ class named by its vtable); its layout
 * is looked up in the DWARF of every module by its qualified name. */
struct hs_error *hs_dtypes_named(struct hs_dtypes *t, const char *name,
				 uint64_t size, struct hs_dtype **ret);

/* A type known only by name and not from DWARF (an object of another
 * language's runtime: CPython's "dict"), of no fixed size: a block of it
 * is one object. */
struct hs_error *hs_dtypes_object(struct hs_dtypes *t, const char *name,
				  struct hs_dtype **ret);

/* The catalogue of struct and class definitions, for telling a block's
 * type from its contents (analyzers/types.c, leaked blocks): every
 * complete, named definition (or anonymous one named by a typedef) of at
 * most HS_DSTRUCT_MAX_SIZE bytes, in every module with DWARF, one entry
 * per name, size and first members.  Bounded: a module with more than
 * HS_DSTRUCT_MAX_TYPES definitions, or whose walk takes more than
 * HS_DSTRUCT_MAX_SECONDS, adds none, and is named in *skipped (a
 * malloc'ed, comma-separated list, or NULL), for the caller's warning.
 * Built once; the types are interned lazily by hs_dtypes_structs_sized. */
enum {
	HS_DSTRUCT_MAX_SIZE = 4096,
	HS_DSTRUCT_MAX_TYPES = 1 << 18,
	HS_DSTRUCT_MAX_SECONDS = 20,
};
struct hs_error *hs_dtypes_structs(struct hs_dtypes *t, char **skipped);

/* The catalogue's types whose size is in [lo, hi], appended to *v
 * (malloc'ed; each type once). */
struct hs_error *hs_dtypes_structs_sized(struct hs_dtypes *t, uint64_t lo,
					 uint64_t hi, struct hs_dtype ***v,
					 size_t *n, size_t *cap);

/* The type's scalar words (see hs_dtype.scalar_words), computed once;
 * *ret NULL when unknown (too big, no layout). */
struct hs_error *hs_dtype_scalar_words(struct hs_dtypes *t, struct hs_dtype *type,
				       const uint64_t **ret);

/* The libstdc++ containers inside the type (members, bases, arrays, the
 * values of nodes: not the containers' own insides), computed once.  Only
 * containers whose type has the size of libstdc++'s layout (GCC 5's ABI
 * onwards: vector 24 bytes, string 32, hash table 56, tree 48, deque 80)
 * and whose element size is known are listed. */
struct hs_error *hs_dtype_containers(struct hs_dtypes *t, struct hs_dtype *type,
				     const struct hs_dcontainer **ret, size_t *n);

/* A struct, class or union (or a class a vtable names), not a scalar, a
 * pointer or an enum. */
bool hs_dtype_is_aggregate(const struct hs_dtype *type);

/* The member at offset (dotted for nested structs: "in.buf"), or NULL.
 * Caller frees. */
char *hs_dtype_member_at(struct hs_dtypes *t, struct hs_dtype *type,
			 uint64_t offset);

#endif
