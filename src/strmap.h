/* A map from strings to indices (open addressing).  Keys are borrowed: they
 * must outlive the map (they are usually owned by the rows they index). */
#ifndef HS_STRMAP_H
#define HS_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "src/error.h"

struct hs_strmap {
	const char **keys;
	size_t *vals;
	size_t cap, n;
};

bool hs_strmap_find(const struct hs_strmap *m, const char *key, size_t *ret);
/* Adds key (not there yet); &hs_error_nomem when out of memory. */
struct hs_error *hs_strmap_put(struct hs_strmap *m, const char *key, size_t val);
void hs_strmap_free(struct hs_strmap *m);

#endif
