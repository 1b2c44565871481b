#include "src/strmap.h"
#include "src/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;  /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

bool hs_strmap_find(const struct hs_strmap *m, const char *key, size_t *ret)
{
	if (!m->cap)
		return false;
	size_t j = hash_str(key) & (m->cap - 1);
	while (m->keys[j]) {
		if (!strcmp(m->keys[j], key)) {
			*ret = m->vals[j];
			return true;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return false;
}

struct hs_error *hs_strmap_put(struct hs_strmap *m, const char *key, size_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		const char **k = hs_calloc(cap, sizeof(*k));
		size_t *v = hs_calloc(cap, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return &hs_error_nomem;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->keys[i])
				continue;
			size_t j = hash_str(m->keys[i]) & (cap - 1);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = m->keys[i];
			v[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = k;
		m->vals = v;
		m->cap = cap;
	}
	size_t j = hash_str(key) & (m->cap - 1);
	while (m->keys[j])
		j = (j + 1) & (m->cap - 1);
	m->keys[j] = key;
	m->vals[j] = val;
	m->n++;
	return NULL;
}

void hs_strmap_free(struct hs_strmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
}
