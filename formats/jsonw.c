#include "formats/jsonw.h"

#include <string.h>

void hs_jsonw_init(struct hs_jsonw *w, FILE *out, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->pretty = pretty;
	w->first[0] = true;
}

static void indent(struct hs_jsonw *w)
{
	if (!w->pretty)
		return;
	putc('\n', w->out);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->out);
}

/* Separator before a value (or a key) at the current depth. */
static void sep(struct hs_jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first[w->depth])
		putc(',', w->out);
	w->first[w->depth] = false;
	if (w->depth)
		indent(w);
}

static void open(struct hs_jsonw *w, char c)
{
	sep(w);
	putc(c, w->out);
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
	putc(c, w->out);
}

void hs_jsonw_object_begin(struct hs_jsonw *w) { open(w, '{'); }
void hs_jsonw_object_end(struct hs_jsonw *w) { close_(w, '}'); }
void hs_jsonw_array_begin(struct hs_jsonw *w) { open(w, '['); }
void hs_jsonw_array_end(struct hs_jsonw *w) { close_(w, ']'); }

static void put_string(FILE *out, const char *s)
{
	putc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				putc(*p, out);
		}
	}
	putc('"', out);
}

void hs_jsonw_key(struct hs_jsonw *w, const char *key)
{
	sep(w);
	put_string(w->out, key);
	putc(':', w->out);
	if (w->pretty)
		putc(' ', w->out);
	w->after_key = true;
}

void hs_jsonw_string(struct hs_jsonw *w, const char *s)
{
	sep(w);
	if (s)
		put_string(w->out, s);
	else
		fputs("null", w->out);
}

/* Hand-rolled integer formatting: list output prints tens of millions. */
static void put_uint(FILE *out, uint64_t v)
{
	char buf[24];
	int i = sizeof(buf);
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(buf + i, 1, sizeof(buf) - (size_t)i, out);
}

void hs_jsonw_uint(struct hs_jsonw *w, uint64_t v)
{
	sep(w);
	put_uint(w->out, v);
}

void hs_jsonw_int(struct hs_jsonw *w, int64_t v)
{
	sep(w);
	if (v < 0) {
		putc('-', w->out);
		put_uint(w->out, -(uint64_t)v);
	} else {
		put_uint(w->out, (uint64_t)v);
	}
}

void hs_jsonw_bool(struct hs_jsonw *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->out);
}

void hs_jsonw_null(struct hs_jsonw *w)
{
	sep(w);
	fputs("null", w->out);
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
	fwrite(buf + i, 1, sizeof(buf) - (size_t)i, w->out);
}

int hs_jsonw_finish(struct hs_jsonw *w)
{
	putc('\n', w->out);
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
