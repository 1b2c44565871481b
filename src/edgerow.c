/* Rows of edges as varints: see src/edgerow.h. */
#include "src/edgerow.h"
#include "src/alloc.h"
#include "src/vector.h"

#include <stdlib.h>
#include <string.h>

uint32_t hs_edgerow_wide_start(const struct hs_edgerow_index *ix, uint32_t v)
{
	uint32_t g = v / HS_EDGEROW_GROUP, lo = 0, hi = ix->nwide;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ix->wide_group[mid] < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ix->wide[(size_t)lo * HS_EDGEROW_GROUP + v % HS_EDGEROW_GROUP];
}

struct hs_edgerow_group *hs_edgerow_groups_alloc(uint32_t n)
{
	size_t ng = (size_t)n / HS_EDGEROW_GROUP + 1;
	return aligned_alloc(64, ng * sizeof(struct hs_edgerow_group));
}

void hs_edgerow_fill_init(struct hs_edgerow_fill *f, struct hs_edgerow_group *groups,
			  uint32_t first_row)
{
	*f = (struct hs_edgerow_fill){.groups = groups,
				      .first = first_row / HS_EDGEROW_GROUP,
				      .group = first_row / HS_EDGEROW_GROUP};
}

/* Writes the open group (its k starts) and opens the next. */
static bool close_group(struct hs_edgerow_fill *f)
{
	struct hs_edgerow_group *grp = &f->groups[f->group];
	memset(grp, 0, sizeof(*grp));
	grp->base = (uint32_t)f->start[0];
	if (f->start[f->k - 1] - f->start[0] >= HS_EDGEROW_WIDE) {
		uint32_t *wg = hs_vector_grow(f->wide_group, f->nwide, &f->capgroup, 1,
					      sizeof(*wg));
		if (wg)
			f->wide_group = wg;
		uint32_t *w = wg ? hs_vector_grow(f->wide, (size_t)f->nwide * HS_EDGEROW_GROUP,
						  &f->capwide, HS_EDGEROW_GROUP, sizeof(*w)) : NULL;
		if (!w)
			return false;
		f->wide = w;
		f->wide_group[f->nwide] = f->group;
		/* (past the index's last row: its end) */
		for (unsigned j = 0; j < HS_EDGEROW_GROUP; j++)
			f->wide[(size_t)f->nwide * HS_EDGEROW_GROUP + j] =
				(uint32_t)f->start[j < f->k ? j : f->k - 1];
		f->nwide++;
		grp->rel[0] = HS_EDGEROW_WIDE;
	} else {
		for (unsigned j = 0; j < f->k; j++)
			grp->rel[j] = (uint16_t)(f->start[j] - f->start[0]);
	}
	f->group++;
	f->k = 0;
	return true;
}

bool hs_edgerow_fill_row(struct hs_edgerow_fill *f, uint64_t bytes)
{
	f->start[f->k++] = f->at;
	f->at += bytes;
	return f->k < HS_EDGEROW_GROUP || close_group(f);
}

bool hs_edgerow_fill_end(struct hs_edgerow_fill *f)
{
	f->start[f->k++] = f->at;
	return close_group(f);
}

void hs_edgerow_fill_fini(struct hs_edgerow_fill *f)
{
	free(f->wide_group);
	free(f->wide);
	f->wide_group = f->wide = NULL;
	f->nwide = 0;
	f->capgroup = f->capwide = 0;
}

bool hs_edgerow_index_join(struct hs_edgerow_index *ix, struct hs_edgerow_group *groups,
			   struct hs_edgerow_fill *const *fills, size_t nfills)
{
	*ix = (struct hs_edgerow_index){.groups = groups};
	size_t nwide = 0;
	for (size_t t = 0; t < nfills; t++)
		nwide += fills[t]->nwide;
	if (nwide) {
		ix->wide_group = hs_malloc(nwide * sizeof(*ix->wide_group));
		ix->wide = hs_malloc(nwide * HS_EDGEROW_GROUP * sizeof(*ix->wide));
	}
	bool ok = !nwide || (ix->wide_group && ix->wide);
	uint32_t off = 0;  /* the bytes of the fills before */
	for (size_t t = 0; t < nfills; t++) {
		struct hs_edgerow_fill *f = fills[t];
		for (uint32_t g = f->first; ok && g < f->group; g++)
			groups[g].base += off;
		for (uint32_t i = 0; ok && i < f->nwide; i++, ix->nwide++) {
			ix->wide_group[ix->nwide] = f->wide_group[i];
			for (size_t j = 0; j < HS_EDGEROW_GROUP; j++)
				ix->wide[(size_t)ix->nwide * HS_EDGEROW_GROUP + j] =
					f->wide[(size_t)i * HS_EDGEROW_GROUP + j] + off;
		}
		off += (uint32_t)f->at;
		hs_edgerow_fill_fini(f);
	}
	if (!ok)
		hs_edgerow_index_fini(ix);
	return ok;
}

bool hs_edgerow_index_build(const uint32_t *starts, uint32_t n,
			    struct hs_edgerow_index *ix)
{
	*ix = (struct hs_edgerow_index){0};
	struct hs_edgerow_group *groups = hs_edgerow_groups_alloc(n);
	if (!groups)
		return false;
	struct hs_edgerow_fill f;
	hs_edgerow_fill_init(&f, groups, 0);
	bool ok = true;
	for (uint32_t v = 0; ok && v < n; v++)
		ok = hs_edgerow_fill_row(&f, starts[v + 1] - starts[v]);
	if (!(ok && hs_edgerow_fill_end(&f))) {
		hs_edgerow_fill_fini(&f);
		free(groups);
		return false;
	}
	struct hs_edgerow_fill *fp = &f;
	return hs_edgerow_index_join(ix, groups, &fp, 1);
}

void hs_edgerow_index_fini(struct hs_edgerow_index *ix)
{
	free(ix->groups);
	free(ix->wide_group);
	free(ix->wide);
	*ix = (struct hs_edgerow_index){0};
}

bool hs_edgerow_encode(const uint32_t *off, const uint32_t *adj, uint32_t n,
		       struct hs_edgerow_index *ix, uint8_t **rows)
{
	uint64_t bytes = 0;
	uint8_t tmp[HS_EDGEROW_MAX];
	for (uint32_t v = 0; v < n; v++) {
		uint32_t prev = v;
		for (uint32_t x = off[v]; x < off[v + 1]; x++)
			bytes += hs_edgerow_put(tmp, &prev, adj[x]);
	}
	if (bytes >= UINT32_MAX)
		return false;
	uint32_t *o = hs_malloc(((size_t)n + 1) * sizeof(*o));
	uint8_t *r = hs_malloc(bytes + 1);
	if (!o || !r) {
		free(o);
		free(r);
		return false;
	}
	uint32_t at = 0;
	for (uint32_t v = 0; v < n; v++) {
		o[v] = at;
		uint32_t prev = v;
		for (uint32_t x = off[v]; x < off[v + 1]; x++)
			at += (uint32_t)hs_edgerow_put(r + at, &prev, adj[x]);
	}
	o[n] = at;
	bool ok = hs_edgerow_index_build(o, n, ix);
	free(o);
	if (!ok) {
		free(r);
		return false;
	}
	*rows = r;
	return true;
}
