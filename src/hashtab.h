/* One hash table for 64-bit keys, typed by a macro (in the style of
 * drgn's hash_table.h): open addressing, linear probing, a power-of-two
 * capacity from 1024, at most half full.  Key 0 marks an empty slot, so it
 * is never a member: the tables hold addresses, sizes or hashes (a caller
 * whose key can be 0 stores key + 1).  No deletion: the analyses only add.
 *
 *   HS_HASH_SET(addr_set)                set of keys
 *   HS_HASH_MAP(addr_map, uint32_t)      keys with a value each
 *
 * define struct NAME {uint64_t *keys; [VALUE *vals;] size_t n, cap;} and:
 *
 *   NAME_has(t, key)                  is key a member
 *   NAME_add(t, key, &fresh)          set: adds key (fresh: it was new;
 *                                     may be NULL)
 *   NAME_insert(t, key, &val, &fresh) map: adds key with a zeroed value if
 *                                     new; *val: its value's slot (valid
 *                                     until the next insert)
 *   NAME_find(t, key)                 map: key's value slot, or NULL
 *   NAME_free(t)                      frees, leaves an empty table
 *
 * add and insert return &hs_error_nomem when memory runs out (the table
 * is then unchanged).  Iterate with `for (i < t->cap) if (t->keys[i])`:
 * the order is the slots', so sort what reaches the output.
 */
#ifndef HS_HASHTAB_H
#define HS_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/error.h"

/* murmur3's 64-bit finalizer: every bit of x moves the low bits */
static inline uint64_t hs_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* key's slot in keys[cap]: where it is, or the empty slot it would take */
static inline size_t hs_hash_slot(const uint64_t *keys, size_t cap,
				  uint64_t key)
{
	size_t i = hs_hash64(key) & (cap - 1);
	while (keys[i] && keys[i] != key)
		i = (i + 1) & (cap - 1);
	return i;
}

/* The new capacity for one more key than n in cap slots (cap itself when
 * there is room), 0 when it would not fit in memory. */
static inline size_t hs_hash_cap(size_t cap, size_t n)
{
	if (2 * (n + 1) <= cap)
		return cap;
	if (cap > SIZE_MAX / 2 / sizeof(uint64_t) / 2)
		return 0;
	return cap ? 2 * cap : 1024;
}

/* Takes key's slot (*n counts it when it is new); *fresh: it was new. */
static inline size_t hs_hash_claim(uint64_t *keys, size_t cap, size_t *n,
				   uint64_t key, bool *fresh)
{
	size_t i = hs_hash_slot(keys, cap, key);
	*fresh = !keys[i];
	if (*fresh) {
		keys[i] = key;
		(*n)++;
	}
	return i;
}

/* Moves the keys (and the values of vsize bytes each, when vals is not
 * NULL) of a table of *cap slots into one of cap slots. */
static inline struct hs_error *hs_hash_grow(uint64_t **keys, void **vals,
					    size_t vsize, size_t *oldcap,
					    size_t cap)
{
	uint64_t *k = hs_calloc(cap, sizeof(*k));
	unsigned char *v = vals ? hs_calloc(cap, vsize) : NULL;
	if (!k || (vals && !v)) {
		free(k);
		free(v);
		return &hs_error_nomem;
	}
	for (size_t i = 0; i < *oldcap; i++) {
		if (!(*keys)[i])
			continue;
		size_t j = hs_hash_slot(k, cap, (*keys)[i]);
		k[j] = (*keys)[i];
		if (vals)
			memcpy(v + j * vsize, (unsigned char *)*vals + i * vsize, vsize);
	}
	free(*keys);
	*keys = k;
	if (vals) {
		free(*vals);
		*vals = v;
	}
	*oldcap = cap;
	return NULL;
}

#define HS_HASH_SET(name)                                                     \
	struct name {                                                         \
		uint64_t *keys;                                               \
		size_t n, cap;                                                \
	};                                                                    \
	__attribute__((unused)) static inline bool                            \
	name##_has(const struct name *t, uint64_t key)                        \
	{                                                                     \
		return t->cap && key &&                                       \
		       t->keys[hs_hash_slot(t->keys, t->cap, key)] == key;    \
	}                                                                     \
	__attribute__((unused)) static inline struct hs_error *               \
	name##_add(struct name *t, uint64_t key, bool *fresh)                 \
	{                                                                     \
		if (fresh)                                                    \
			*fresh = false;                                       \
		if (!key)                                                     \
			return NULL;                                          \
		size_t cap = hs_hash_cap(t->cap, t->n);                       \
		if (!cap)                                                     \
			return &hs_error_nomem;                               \
		struct hs_error *err_;                                        \
		if (cap != t->cap &&                                          \
		    (err_ = hs_hash_grow(&t->keys, NULL, 0, &t->cap, cap)))   \
			return err_;                                          \
		bool new_;                                                    \
		hs_hash_claim(t->keys, t->cap, &t->n, key, &new_);            \
		if (fresh)                                                    \
			*fresh = new_;                                        \
		return NULL;                                                  \
	}                                                                     \
	__attribute__((unused)) static inline void name##_free(struct name *t) \
	{                                                                     \
		free(t->keys);                                                \
		t->keys = NULL;                                               \
		t->n = t->cap = 0;                                            \
	}

#define HS_HASH_MAP(name, value_type)                                         \
	struct name {                                                         \
		uint64_t *keys;                                               \
		value_type *vals;                                             \
		size_t n, cap;                                                \
	};                                                                    \
	__attribute__((unused)) static inline value_type *                    \
	name##_find(const struct name *t, uint64_t key)                       \
	{                                                                     \
		if (!t->cap || !key)                                          \
			return NULL;                                          \
		size_t i = hs_hash_slot(t->keys, t->cap, key);                \
		return t->keys[i] ? &t->vals[i] : NULL;                       \
	}                                                                     \
	__attribute__((unused)) static inline bool                            \
	name##_has(const struct name *t, uint64_t key)                        \
	{                                                                     \
		return name##_find(t, key) != NULL;                           \
	}                                                                     \
	__attribute__((unused)) static inline struct hs_error *               \
	name##_insert(struct name *t, uint64_t key, value_type **val,         \
		      bool *fresh)                                            \
	{                                                                     \
		if (!key)                                                     \
			return hs_error_create(HS_ERR_CORRUPT,                \
					       "key 0 in a hash map");        \
		size_t cap = hs_hash_cap(t->cap, t->n);                       \
		if (!cap)                                                     \
			return &hs_error_nomem;                               \
		void *vals_ = t->vals;                                        \
		struct hs_error *err_;                                        \
		if (cap != t->cap &&                                          \
		    (err_ = hs_hash_grow(&t->keys, &vals_, sizeof(value_type), \
					 &t->cap, cap)))                      \
			return err_;                                          \
		t->vals = vals_;                                              \
		bool new_;                                                    \
		size_t i = hs_hash_claim(t->keys, t->cap, &t->n, key, &new_); \
		if (new_)                                                     \
			memset(&t->vals[i], 0, sizeof(t->vals[i]));           \
		if (fresh)                                                    \
			*fresh = new_;                                        \
		*val = &t->vals[i];                                           \
		return NULL;                                                  \
	}                                                                     \
	__attribute__((unused)) static inline void name##_free(struct name *t) \
	{                                                                     \
		free(t->keys);                                                \
		free(t->vals);                                                \
		t->keys = NULL;                                               \
		t->vals = NULL;                                               \
		t->n = t->cap = 0;                                            \
	}

#endif
