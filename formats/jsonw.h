/* A streaming JSON writer.
 *
 * Lists of millions of allocations are written element by element to a
 * stdio stream, never built whole in memory (a jansson tree of 10^7 objects
 * would take gigabytes).  The writer tracks nesting and commas; it does not
 * check that keys and values alternate.  It buffers itself (stdio's
 * per-character locking costs more than the formatting).
 */
#ifndef HS_JSONW_H
#define HS_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { HS_JSONW_MAX_DEPTH = 64, HS_JSONW_BUF = 1 << 16 };

struct hs_jsonw {
	FILE *out;
	size_t len;                 /* bytes in buf not yet written */
	char buf[HS_JSONW_BUF];
	int depth;
	bool first[HS_JSONW_MAX_DEPTH];
	bool after_key;
	bool pretty;
	bool html;              /* escape < > & (JSON inside an HTML page) */
};

void hs_jsonw_init(struct hs_jsonw *w, FILE *out, bool pretty);
void hs_jsonw_object_begin(struct hs_jsonw *w);
void hs_jsonw_object_end(struct hs_jsonw *w);
void hs_jsonw_array_begin(struct hs_jsonw *w);
void hs_jsonw_array_end(struct hs_jsonw *w);
void hs_jsonw_key(struct hs_jsonw *w, const char *key);
void hs_jsonw_string(struct hs_jsonw *w, const char *s);
void hs_jsonw_uint(struct hs_jsonw *w, uint64_t v);
void hs_jsonw_int(struct hs_jsonw *w, int64_t v);
void hs_jsonw_bool(struct hs_jsonw *w, bool v);
void hs_jsonw_null(struct hs_jsonw *w);
/* An address as a string "0x..." (JSON numbers lose precision past 2^53). */
void hs_jsonw_addr(struct hs_jsonw *w, uint64_t v);
/* Raw text, e.g. a newline between list elements. */
void hs_jsonw_raw(struct hs_jsonw *w, const char *s);
/* Ends the document with a newline and flushes. */
int hs_jsonw_finish(struct hs_jsonw *w);

/* key + value shorthands */
void hs_jsonw_kstring(struct hs_jsonw *w, const char *key, const char *s);
void hs_jsonw_kuint(struct hs_jsonw *w, const char *key, uint64_t v);
void hs_jsonw_kint(struct hs_jsonw *w, const char *key, int64_t v);
void hs_jsonw_kbool(struct hs_jsonw *w, const char *key, bool v);
void hs_jsonw_kaddr(struct hs_jsonw *w, const char *key, uint64_t v);

#endif
