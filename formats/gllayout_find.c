/* Choosing a row of the glibc layout table (formats/gllayout.h); the
 * table itself, formats/gllayout.c, is generated. */
#include <string.h>

#include "formats/gllayout.h"

const struct hs_gl_layout *hs_gl_layout_find(const char *version,
					     const char *build_id, bool *exact)
{
	const struct hs_gl_layout *by_version = NULL;
	*exact = false;
	if (!version)
		return NULL;
	for (size_t i = 0; i < hs_gl_nlayouts; i++) {
		const struct hs_gl_layout *L = &hs_gl_layouts[i];
		if (strcmp(L->version, version))
			continue;
		if (build_id && !strcmp(L->build_id, build_id)) {
			*exact = true;
			return L;
		}
		if (!by_version)
			by_version = L;
	}
	return by_version;
}
