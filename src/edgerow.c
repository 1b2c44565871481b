/* Rows of edges as varints: see src/edgerow.h. */
#include "src/edgerow.h"
#include "src/alloc.h"

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

bool hs_edgerow_index_build(const uint32_t *starts, uint32_t n,
			    struct hs_edgerow_index *ix)
{
	*ix = (struct hs_edgerow_index){0};
	size_t ng = (size_t)n / HS_EDGEROW_GROUP + 1;
	ix->groups = aligned_alloc(64, ng * sizeof(*ix->groups));
	if (!ix->groups)
		goto fail;
	for (size_t g = 0; g < ng; g++) {
		size_t first = g * HS_EDGEROW_GROUP;
		size_t last = first + HS_EDGEROW_GROUP - 1 < n ? first + HS_EDGEROW_GROUP - 1 : n;
		struct hs_edgerow_group *grp = &ix->groups[g];
		memset(grp, 0, sizeof(*grp));
		grp->base = starts[first];
		if (starts[last] - starts[first] >= HS_EDGEROW_WIDE) {
			grp->rel[0] = HS_EDGEROW_WIDE;
			ix->nwide++;
			continue;
		}
		for (size_t v = first; v <= last; v++)
			grp->rel[v - first] = (uint16_t)(starts[v] - starts[first]);
	}
	if (ix->nwide) {
		ix->wide_group = hs_malloc(ix->nwide * sizeof(*ix->wide_group));
		ix->wide = hs_malloc((size_t)ix->nwide * HS_EDGEROW_GROUP * sizeof(*ix->wide));
		if (!ix->wide_group || !ix->wide)
			goto fail;
		uint32_t k = 0;
		for (size_t g = 0; g < ng; g++) {
			if (ix->groups[g].rel[0] != HS_EDGEROW_WIDE)
				continue;
			ix->wide_group[k] = (uint32_t)g;
			for (size_t j = 0; j < HS_EDGEROW_GROUP; j++) {
				size_t v = g * HS_EDGEROW_GROUP + j;
				ix->wide[(size_t)k * HS_EDGEROW_GROUP + j] = v <= n ? starts[v] : starts[n];
			}
			k++;
		}
	}
	return true;
fail:
	hs_edgerow_index_fini(ix);
	return false;
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
