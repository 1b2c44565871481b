/* src/edgerow.h's varint rows: rows of random edges (targets near their
 * node and anywhere below 2^30, every flag pair, the ids 0 and 2^30 - 1)
 * written with hs_edgerow_encode and read back with hs_edges_next; the
 * index's starts against the sums of the edges' lengths, two groups of
 * rows among them wider than 16 bits (a row of BIG edges), and the same
 * index filled in parts (hs_edgerow_fill) and joined; the byte
 * counts of edges one and two bytes long; flags changed in place.  And
 * src/varint.h beneath them: zigzag and varints at their boundaries and
 * at random, written and read back, their lengths as announced. */
#include <stdlib.h>
#include <string.h>

#include "src/edgerow.h"
#include "tests/unit/check.h"

enum { N = 20000, BIG = 40000, BIG_ROW = 777 };

int main(void)
{
	uint32_t *off = malloc((N + 1) * sizeof(*off));
	uint32_t *adj = malloc(((size_t)N * 40 + 2 * BIG) * sizeof(*adj));
	CHECK(off && adj);
	if (!off || !adj)
		return check_finish();
	size_t m = 0;
	for (uint32_t v = 0; v < N; v++) {
		off[v] = (uint32_t)m;
		unsigned deg = check_rand() % 8 == 0 ? (unsigned)(check_rand() % 40) :
			       (unsigned)(check_rand() % 4);
		if (v == BIG_ROW || v == 5 * BIG_ROW)
			deg = BIG;
		for (unsigned k = 0; k < deg; k++) {
			uint64_t r = check_rand();
			uint32_t id;
			switch (r % 5) {
			case 0: id = (uint32_t)(r >> 8) & HS_EDGEROW_ID_MASK; break;
			case 1: id = 0; break;
			case 2: id = HS_EDGEROW_ID_MASK; break;
			default: id = (uint32_t)((int64_t)v + (int64_t)(r >> 40) % 200 - 100) &
				      HS_EDGEROW_ID_MASK; break;
			}
			adj[m++] = id | (uint32_t)(r >> 20 & 3) << 30;
		}
	}
	off[N] = (uint32_t)m;
	struct hs_edgerow_index ix;
	uint8_t *rows;
	if (!hs_edgerow_encode(off, adj, N, &ix, &rows)) {
		CHECK(!"the rows encode");
		return check_finish();
	}
	/* the starts: the sums of the edges' lengths */
	int badstart = 0;
	uint32_t at = 0;
	uint8_t b[HS_EDGEROW_MAX];
	for (uint32_t v = 0; v <= N; v++) {
		badstart += hs_edgerow_start(&ix, v) != at;
		uint32_t prev = v;
		for (uint32_t x = v < N ? off[v] : 0; v < N && x < off[v + 1]; x++)
			at += (uint32_t)hs_edgerow_put(b, &prev, adj[x]);
	}
	CHECKF(!badstart, "%d rows start where they should not", badstart);
	CHECKF(ix.nwide == 2, "%u groups of 32-bit starts, not 2", ix.nwide);
	/* the same index filled in parts, as a graph's threads fill it: cut
	 * at random groups' ends, some parts empty, the last rows at times in
	 * a part followed by empty ones */
	int badfill = 0, badwide = 0, badjoin = 0;
	for (int round = 0; round < 60; round++) {
		enum { MAXFILLS = 9 };
		uint32_t cut[MAXFILLS + 1];
		size_t nf = 1 + check_rand() % MAXFILLS;
		cut[0] = 0;
		for (size_t t = 1; t < nf; t++) {
			uint32_t c = (uint32_t)(check_rand() % (N / HS_EDGEROW_GROUP + 2)) *
				     HS_EDGEROW_GROUP;
			cut[t] = c > N ? N : c;
		}
		cut[nf] = N;
		for (size_t t = 1; t < nf; t++)  /* ascending */
			for (size_t u = t; u > 1 && cut[u - 1] > cut[u]; u--) {
				uint32_t x = cut[u];
				cut[u] = cut[u - 1];
				cut[u - 1] = x;
			}
		struct hs_edgerow_group *groups = hs_edgerow_groups_alloc(N);
		CHECK(groups);
		if (!groups)
			break;
		struct hs_edgerow_fill fills[MAXFILLS], *fp[MAXFILLS];
		size_t last = 0;
		for (size_t t = 0; t < nf; t++) {
			fp[t] = &fills[t];
			hs_edgerow_fill_init(&fills[t], groups, cut[t]);
			for (uint32_t v = cut[t]; v < cut[t + 1]; v++)
				badfill += !hs_edgerow_fill_row(&fills[t], hs_edgerow_start(&ix, v + 1) -
								      hs_edgerow_start(&ix, v));
			if (cut[t] < cut[t + 1])
				last = t;
		}
		badfill += !hs_edgerow_fill_end(&fills[last]);
		struct hs_edgerow_index jx;
		if (!hs_edgerow_index_join(&jx, groups, fp, nf)) {
			badjoin++;
			continue;
		}
		for (uint32_t v = 0; v <= N; v++)
			badjoin += hs_edgerow_start(&jx, v) != hs_edgerow_start(&ix, v);
		badwide += jx.nwide != ix.nwide;
		hs_edgerow_index_fini(&jx);
	}
	CHECKF(!badfill, "%d rows not filled (memory)", badfill);
	CHECKF(!badjoin, "%d starts of the joined index differ from the whole one's", badjoin);
	CHECKF(!badwide, "%d joined indexes with another number of wide groups", badwide);
	int bad = 0, badlen = 0;
	for (uint32_t v = 0; v < N; v++) {
		struct hs_edges it = hs_edgerow(rows, &ix, v);
		uint32_t x = off[v], e;
		while (hs_edges_next(&it, &e)) {
			if (x >= off[v + 1] || e != adj[x])
				bad++;
			x++;
		}
		if (x != off[v + 1] || it.p != rows + hs_edgerow_start(&ix, v + 1))
			badlen++;
	}
	CHECKF(!bad, "%d edges read back wrong", bad);
	CHECKF(!badlen, "%d rows of the wrong length", badlen);
	/* a target within 15 ids after the one before takes a byte, with
	 * any flags; 16 ids needs two */
	uint32_t prev = 100;
	CHECK(hs_edgerow_put(b, &prev, 115 | 3u << 30) == 1 && prev == 115);
	prev = 100;
	CHECK(hs_edgerow_put(b, &prev, 116) == 2);
	prev = 100;
	CHECK(hs_edgerow_put(b, &prev, 85) == 1);
	prev = 0;
	CHECK(hs_edgerow_put(b, &prev, HS_EDGEROW_ID_MASK | 2u << 30) == HS_EDGEROW_MAX);
	/* flags changed in place: the rest of the row reads the same */
	for (uint32_t v = 0; v < N; v++) {
		uint8_t *p = rows + hs_edgerow_start(&ix, v);
		if (p == rows + hs_edgerow_start(&ix, v + 1))
			continue;
		hs_edgerow_set_flags(p, 1u << 30);
		adj[off[v]] = (adj[off[v]] & HS_EDGEROW_ID_MASK) | 1u << 30;
	}
	bad = 0;
	for (uint32_t v = 0; v < N; v++) {
		struct hs_edges it = hs_edgerow(rows, &ix, v);
		uint32_t x = off[v], e;
		while (hs_edges_next(&it, &e))
			bad += x >= off[v + 1] || e != adj[x++];
	}
	CHECKF(!bad, "%d edges wrong after flags were set", bad);
	hs_edgerow_index_fini(&ix);
	free(rows);
	free(off);
	free(adj);

	/* varints: 7 bits a byte; zigzag: 0, -1, 1, -2 ... */
	CHECK(hs_zigzag(0) == 0 && hs_zigzag(-1) == 1 && hs_zigzag(1) == 2 &&
	      hs_zigzag(-2) == 3 && hs_zigzag(INT64_MIN) == UINT64_MAX &&
	      hs_zigzag(INT64_MAX) == UINT64_MAX - 1);
	CHECK(hs_varint_len(127) == 1 && hs_varint_len(128) == 2 &&
	      hs_varint_len(UINT32_MAX) == 5 && hs_varint_len(UINT64_MAX) == HS_VARINT_MAX);
	const int64_t edge[] = {0, 1, -1, 63, -64, 64, -65, INT32_MAX, INT32_MIN,
				(int64_t)1 << 32, -((int64_t)1 << 32), INT64_MAX, INT64_MIN};
	uint8_t buf[64 * HS_VARINT_MAX];
	bad = 0;
	for (int round = 0; round < 1000; round++) {
		int64_t d[64];
		size_t len = 0, want = 0;
		for (int i = 0; i < 64; i++) {
			uint64_t r = check_rand();
			d[i] = round == 0 && i < (int)(sizeof(edge) / sizeof(*edge)) ? edge[i] :
			       (int64_t)(r >> (r % 64));
			if (r & 1)
				d[i] = ~d[i];  /* -d - 1, INT64_MIN included */
			want += hs_varint_len(hs_zigzag(d[i]));
			len += hs_varint_put(buf + len, hs_zigzag(d[i]));
		}
		const uint8_t *p = buf;
		for (int i = 0; i < 64; i++)
			bad += hs_unzigzag(hs_varint_get(&p)) != d[i];
		bad += len != want || p != buf + len;
	}
	CHECKF(!bad, "%d varint rounds read back wrong", bad);
	return check_finish();
}
