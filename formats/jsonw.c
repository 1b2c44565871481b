/* The streaming JSON writer: see formats/jsonw.h. */
#include "formats/jsonw.h"

#include <string.h>

#include "src/escape.h"

void hs_jsonw_init(struct hs_jsonw *w, FILE *out, bool pretty)
{
	w->out = out;
	w->len = 0;
	w->depth = 0;
	w->after_key = false;
	w->pretty = pretty;
	w->html = false;
	memset(w->first, 0, sizeof(w->first));
	w->first[0] = true;
}

static void flush(struct hs_jsonw *w)
{
	if (w->len)
		fwrite(w->buf, 1, w->len, w->out);
	w->len = 0;
}

/* Room for n more bytes (n <= HS_JSONW_BUF). */
static inline char *room(struct hs_jsonw *w, size_t n)
{
	if (w->len + n > sizeof(w->buf))
		flush(w);
	return w->buf + w->len;
}

static inline void put(struct hs_jsonw *w, char c)
{
	*room(w, 1) = c;
	w->len++;
}

static void puts_(struct hs_jsonw *w, const char *s, size_t n)
{
	while (n) {
		size_t k = sizeof(w->buf) - w->len;
		if (!k) {
			flush(w);
			continue;
		}
		if (k > n)
			k = n;
		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
	}
}

static void indent(struct hs_jsonw *w)
{
	if (!w->pretty)
		return;
	put(w, '\n');
	for (int i = 0; i < w->depth; i++)
		puts_(w, "  ", 2);
}

/* Separator before a value (or a key) at the current depth. */
static void sep(struct hs_jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first[w->depth])
		put(w, ',');
	w->first[w->depth] = false;
	if (w->depth)
		indent(w);
}

static void open(struct hs_jsonw *w, char c)
{
	sep(w);
	put(w, c);
	if (w->depth + 1 < HS_JSONW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct hs_jsonw *w, char c)
{
	bool empty = w->first[w->depth];
	if (w->depth)
		w->depth--;
	if (!empty)
		indent(w);
	put(w, c);
}

void hs_jsonw_object_begin(struct hs_jsonw *w) { open(w, '{'); }
void hs_jsonw_object_end(struct hs_jsonw *w) { close_(w, '}'); }
void hs_jsonw_array_begin(struct hs_jsonw *w) { open(w, '['); }
void hs_jsonw_array_end(struct hs_jsonw *w) { close_(w, ']'); }

/* A string through the JSON policy (src/escape.h): whatever bytes it holds,
 * the document stays valid UTF-8 JSON.  Most strings are short and plain
 * (keys, states, type names): they are copied byte by byte until the first
 * byte that needs a look, and the policy takes the rest, in steps that fit
 * the buffer. */
static void put_string(struct hs_jsonw *w, const char *s)
{
	enum { STEP = HS_JSONW_BUF / (2 * HS_ESCAPE_JSON_MAX) };
	put(w, '"');
	for (unsigned char c; (c = (unsigned char)*s) >= 0x20 && c < 0x7f &&
		     c != '"' && c != '\\' &&
		     !(w->html && (c == '<' || c == '>' || c == '&')); s++)
		put(w, (char)c);
	size_t n = *s ? strlen(s) : 0;
	while (n) {
		size_t k = n > STEP ? STEP : n, used;
		char *b = room(w, HS_ESCAPE_JSON_MAX * k);
		w->len += hs_escape_json(s, k, w->html, k < n, b, &used);
		s += used;
		n -= used;
	}
	put(w, '"');
}

void hs_jsonw_key(struct hs_jsonw *w, const char *key)
{
	sep(w);
	put_string(w, key);
	put(w, ':');
	if (w->pretty)
		put(w, ' ');
	w->after_key = true;
}

void hs_jsonw_string(struct hs_jsonw *w, const char *s)
{
	sep(w);
	if (s)
		put_string(w, s);
	else
		puts_(w, "null", 4);
}

/* Hand-rolled integer formatting: list output prints tens of millions. */
static void put_uint(struct hs_jsonw *w, uint64_t v)
{
	char buf[24];
	int i = sizeof(buf);
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	puts_(w, buf + i, sizeof(buf) - (size_t)i);
}

void hs_jsonw_uint(struct hs_jsonw *w, uint64_t v)
{
	sep(w);
	put_uint(w, v);
}

void hs_jsonw_int(struct hs_jsonw *w, int64_t v)
{
	sep(w);
	if (v < 0) {
		put(w, '-');
		put_uint(w, -(uint64_t)v);
	} else {
		put_uint(w, (uint64_t)v);
	}
}

void hs_jsonw_bool(struct hs_jsonw *w, bool v)
{
	sep(w);
	if (v)
		puts_(w, "true", 4);
	else
		puts_(w, "false", 5);
}

void hs_jsonw_null(struct hs_jsonw *w)
{
	sep(w);
	puts_(w, "null", 4);
}

void hs_jsonw_addr(struct hs_jsonw *w, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char buf[24];
	int i = sizeof(buf);
	buf[--i] = '"';
	do {
		buf[--i] = hex[v & 15];
		v >>= 4;
	} while (v);
	buf[--i] = 'x';
	buf[--i] = '0';
	buf[--i] = '"';
	sep(w);
	puts_(w, buf + i, sizeof(buf) - (size_t)i);
}

void hs_jsonw_raw(struct hs_jsonw *w, const char *s)
{
	puts_(w, s, strlen(s));
}

int hs_jsonw_finish(struct hs_jsonw *w)
{
	put(w, '\n');
	flush(w);
	return fflush(w->out);
}

void hs_jsonw_kstring(struct hs_jsonw *w, const char *key, const char *s)
{
	hs_jsonw_key(w, key);
	hs_jsonw_string(w, s);
}

void hs_jsonw_kuint(struct hs_jsonw *w, const char *key, uint64_t v)
{
	hs_jsonw_key(w, key);
	hs_jsonw_uint(w, v);
}

void hs_jsonw_kint(struct hs_jsonw *w, const char *key, int64_t v)
{
	hs_jsonw_key(w, key);
	hs_jsonw_int(w, v);
}

void hs_jsonw_kbool(struct hs_jsonw *w, const char *key, bool v)
{
	hs_jsonw_key(w, key);
	hs_jsonw_bool(w, v);
}

void hs_jsonw_kaddr(struct hs_jsonw *w, const char *key, uint64_t v)
{
	hs_jsonw_key(w, key);
	hs_jsonw_addr(w, v);
}
