/* The base layer's containers (src/vector.h, src/hashtab.h,
 * src/rankset.h) against plain reference answers: a vector's contents
 * after pushes and appends, a set and a map after 200,000 random
 * insertions checked against a sorted array, key 0, and a reservation too
 * large for memory; a rank set's ranks against a count; and src/error.h's
 * catch helper for expected misses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/hashtab.h"
#include "src/rankset.h"
#include "src/sort.h"
#include "src/vector.h"
#include "tests/unit/check.h"


struct pair {
	uint32_t a;
	uint64_t b;
};

HS_VECTOR(u64_vector, uint64_t)
HS_VECTOR(pair_vector, struct pair)
HS_HASH_SET(u64_set)
HS_HASH_MAP(u64_map, uint32_t)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void vectors(void)
{
	struct u64_vector v = {0};
	bool ok = true;
	for (uint64_t i = 0; i < 100000; i++)
		ok &= !u64_vector_push(&v, i * 3);
	CHECK(ok && v.n == 100000 && v.cap >= v.n);
	for (size_t i = 0; ok && i < v.n; i++)
		ok = v.v[i] == i * 3;
	CHECK(ok);
	CHECK(u64_vector_reserve(&v, SIZE_MAX / 2) == &hs_error_nomem);
	CHECK(v.n == 100000 && v.v[99999] == 299997);   /* unchanged */
	u64_vector_free(&v);
	CHECK(!v.v && !v.n && !v.cap);

	struct pair_vector p = {0};
	CHECK(!pair_vector_reserve(&p, 5) && p.cap >= 5 && !p.n);
	struct pair *x = pair_vector_append(&p);
	CHECK(x && !x->a && !x->b && p.n == 1);
	x->a = 7;
	CHECK(!pair_vector_push(&p, (struct pair){1, 2}));
	CHECK(p.n == 2 && p.v[0].a == 7 && p.v[1].b == 2);
	pair_vector_free(&p);
}

static void tables(void)
{
	enum { N = 200000 };
	uint64_t *ref = malloc(N * sizeof(*ref));
	struct u64_set s = {0};
	struct u64_map m = {0};
	size_t fresh_count = 0;
	bool ok = true;
	for (size_t i = 0; i < N; i++) {
		/* few distinct values, so that keys repeat */
		uint64_t k = (check_rand() % 50000) << 4 | 8;
		ref[i] = k;
		bool fresh = false, mfresh = false;
		uint32_t *val = NULL;
		ok &= !u64_set_add(&s, k, &fresh);
		ok &= !u64_map_insert(&m, k, &val, &mfresh);
		ok &= fresh == mfresh && val;
		fresh_count += fresh;
		if (val)
			(*val)++;
	}
	CHECK(ok);
	qsort(ref, N, sizeof(*ref), cmp_u64);
	size_t distinct = 0;
	for (size_t i = 0; i < N; i++) {
		size_t j = i;
		while (j + 1 < N && ref[j + 1] == ref[i])
			j++;
		distinct++;
		uint32_t *val = u64_map_find(&m, ref[i]);
		ok &= u64_set_has(&s, ref[i]) && val && *val == j - i + 1;
		ok &= !u64_set_has(&s, ref[i] + 1) && !u64_map_find(&m, ref[i] + 1);
		i = j;
	}
	CHECK(ok);
	CHECK(s.n == distinct && m.n == distinct && fresh_count == distinct);
	CHECK(s.cap >= 2 * s.n && (s.cap & (s.cap - 1)) == 0);
	size_t slots = 0;
	for (size_t i = 0; i < s.cap; i++)
		slots += s.keys[i] != 0;
	CHECK(slots == s.n);

	/* key 0: never a member of a set, an error for a map */
	bool fresh = true;
	CHECK(!u64_set_add(&s, 0, &fresh) && !fresh && !u64_set_has(&s, 0));
	CHECK(s.n == distinct);
	uint32_t *val = NULL;
	struct hs_error *err = u64_map_insert(&m, 0, &val, NULL);
	CHECK(err && err->code == HS_ERR_CORRUPT && !val && m.n == distinct);
	hs_error_destroy(err);
	CHECK(!u64_map_find(&m, 0));

	u64_set_free(&s);
	u64_map_free(&m);
	CHECK(!s.cap && !m.cap && !u64_set_has(&s, 8) && !u64_map_find(&m, 8));
	free(ref);
}

/* A rank set's members and ranks against a plain array, at the ends of
 * words (ids 0, 63, 64, n - 1) and in between, half of them added to a
 * second set merged in; each member selected back from its rank. */
static void ranksets(void)
{
	enum { N = 100003 };
	uint8_t *in = calloc(N, 1);
	struct hs_rankset s;
	CHECK(in && !hs_rankset_init(&s, N));
	if (!in)
		return;
	uint64_t x = 88172645463325252ull;
	for (uint32_t id = 0; id < N; id++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		in[id] = id == 0 || id == 63 || id == 64 || id == N - 1 || x % 3 == 0;
	}
	/* any order; the odd ids filled apart, then merged */
	struct hs_rankset odd;
	CHECK(!hs_rankset_init(&odd, N));
	for (uint32_t id = N; id-- > 0;)
		if (in[id])
			hs_rankset_add(id % 2 ? &odd : &s, id);
	hs_rankset_merge(&s, &odd);
	hs_rankset_fini(&odd);
	hs_rankset_finish(&s);
	uint32_t rank = 0, bad = 0;
	for (uint32_t id = 0; id < N; id++) {
		uint32_t want = in[id] ? rank++ : HS_RANK_NONE;
		bad += hs_rankset_has(&s, id) != in[id] || hs_rankset_index(&s, id) != want;
		/* and back: the member of that rank */
		bad += in[id] && hs_rankset_select(&s, want) != id;
	}
	CHECKF(!bad && s.count == rank, "rank set: %u wrong of %u, %u members of %u",
	       bad, (unsigned)N, s.count, rank);
	CHECK(hs_rankset_index(&s, 0) == 0 &&
	      hs_rankset_index(&s, 64) == hs_rankset_index(&s, 63) + 1 &&
	      hs_rankset_index(&s, N - 1) == s.count - 1);
	hs_rankset_fini(&s);
	hs_rankset_fini(&s);  /* twice is harmless */
	free(in);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* hs_sort_u32 against qsort: lengths on both sides of the insertion
 * sort's limit, values that vary in one digit only (passes skipped), in
 * the top bits only, all equal, and the full range. */
static void sorts(void)
{
	static const size_t lens[] = {0, 1, 2, 63, 64, 65, 1000, 300000};
	static const uint32_t masks[] = {0x7ff, 0xffe00000, 0, 0xffffffff, 0x3fffff};
	size_t most = 300000;
	uint32_t *a = malloc(most * sizeof(*a)), *b = malloc(most * sizeof(*b));
	if (!a || !b) {
		CHECK(!"memory for the sort test");
		free(a);
		free(b);
		return;
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		for (size_t k = 0; k < sizeof(masks) / sizeof(*masks); k++) {
			size_t n = lens[i];
			for (size_t j = 0; j < n; j++)
				a[j] = b[j] = (uint32_t)check_rand() & masks[k];
			hs_sort_u32(a, n);
			hs_sort(b, n, sizeof(*b), cmp_u32);
			CHECKF(n == 0 || !memcmp(a, b, n * sizeof(*a)),
			       "hs_sort_u32: %zu values under mask %#x differ from qsort's order",
			       n, masks[k]);
		}
	}
	free(a);
	free(b);
}

/* src/error.h's catch helper: only the named code is caught */
static void catching(void)
{
	struct hs_error *err = NULL;
	CHECK(!hs_error_catch(&err, HS_ERR_NOT_FOUND) && !err);
	err = hs_error_create(HS_ERR_NOT_FOUND, "no %s", "symbol");
	CHECK(hs_error_catch(&err, HS_ERR_NOT_FOUND) && !err);
	err = hs_error_create(HS_ERR_CORRUPT, "broken");
	CHECK(!hs_error_catch(&err, HS_ERR_NOT_FOUND) && err &&
	      err->code == HS_ERR_CORRUPT);
	hs_error_destroy(err);
	err = &hs_error_nomem;
	CHECK(!hs_error_catch(&err, HS_ERR_NOT_FOUND) && err == &hs_error_nomem);
}

int main(void)
{
	vectors();
	tables();
	sorts();
	ranksets();
	catching();
	return check_finish();
}
