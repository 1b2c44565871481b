/* Rows of edges as varints: see src/edgerow.h. */
#include "src/edgerow.h"

#include <stdlib.h>

bool hs_edgerow_encode(const uint32_t *off, const uint32_t *adj, uint32_t n,
		       uint32_t **roff, uint8_t **rows)
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
	uint32_t *o = malloc(((size_t)n + 1) * sizeof(*o));
	uint8_t *r = malloc(bytes + 1);
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
	*roff = o;
	*rows = r;
	return true;
}
