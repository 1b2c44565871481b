/* Numbers for people: sizes in binary units, as every command's text
 * output shows them. */
#ifndef HS_FMT_H
#define HS_FMT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* "1.5 MiB" style (bytes below 1 KiB: "512 B"); buf of at least 32 bytes. */
const char *hs_fmt_size(char *buf, uint64_t bytes);

/* One line of a long listing, built without printf (list prints millions):
 * fields are appended, then padded as printf's width would pad them.  The
 * line is built in place, in a buffer of at least HS_LINE_MAX bytes (buf:
 * a struct hs_lines' room, or an array of the caller's); what does not fit
 * is cut. */
enum { HS_LINE_MAX = 4096 };
struct hs_line {
	size_t len;
	char *buf;
};

static inline void hs_line_char(struct hs_line *l, char c)
{
	if (l->len < HS_LINE_MAX)
		l->buf[l->len++] = c;
}

/* n bytes at s, or as many as fit */
static inline void hs_line_mem(struct hs_line *l, const char *s, size_t n)
{
	if (n > HS_LINE_MAX - l->len)
		n = HS_LINE_MAX - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

/* s up to its NUL, as "%s" */
static inline void hs_line_str(struct hs_line *l, const char *s)
{
	hs_line_mem(l, s, strlen(s));
}

/* v as "%" PRIu64 */
static inline void hs_line_dec(struct hs_line *l, uint64_t v)
{
	char t[20];
	char *p = t + sizeof(t);
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	hs_line_mem(l, p, (size_t)(t + sizeof(t) - p));
}

/* v as "%#" PRIx64 (0x prefix, but "0" for 0) */
static inline void hs_line_hex(struct hs_line *l, uint64_t v)
{
	char t[18];
	char *p = t + sizeof(t);
	uint64_t x = v;
	do
		*--p = "0123456789abcdef"[x & 15];
	while (x >>= 4);
	if (v) {
		*--p = 'x';
		*--p = '0';
	}
	hs_line_mem(l, p, (size_t)(t + sizeof(t) - p));
}

/* The field appended since from, padded with spaces to width: after it
 * ("%-Ns") or before it ("%Ns"). */
static inline void hs_line_pad_left(struct hs_line *l, size_t from, size_t width)
{
	if (l->len - from >= width)
		return;
	size_t add = width - (l->len - from);
	if (add > HS_LINE_MAX - l->len)
		add = HS_LINE_MAX - l->len;
	memset(l->buf + l->len, ' ', add);
	l->len += add;
}

static inline void hs_line_pad_right(struct hs_line *l, size_t from, size_t width)
{
	size_t have = l->len - from;
	if (have >= width)
		return;
	size_t add = width - have;
	if (add > HS_LINE_MAX - l->len)
		add = HS_LINE_MAX - l->len;
	memmove(l->buf + from + add, l->buf + from, have);
	memset(l->buf + from, ' ', add);
	l->len += add;
}

/* Lines gathered in chunks before they go to a stream: one fwrite per
 * HS_LINES_CHUNK bytes instead of one per line.
 *   struct hs_lines *b = hs_lines_new(stdout);   (NULL: out of memory)
 *   struct hs_line l;
 *   hs_lines_begin(b, &l); hs_line_...(&l, ...); hs_lines_end(b, &l);
 *   hs_lines_free(b);                              (writes what is left) */
enum { HS_LINES_CHUNK = 1 << 16 };
struct hs_lines {
	FILE *f;
	size_t len;
	char buf[HS_LINES_CHUNK + HS_LINE_MAX];
};

struct hs_lines *hs_lines_new(FILE *f);
void hs_lines_flush(struct hs_lines *b);
void hs_lines_free(struct hs_lines *b);

static inline void hs_lines_begin(struct hs_lines *b, struct hs_line *l)
{
	l->buf = b->buf + b->len;
	l->len = 0;
}

static inline void hs_lines_end(struct hs_lines *b, const struct hs_line *l)
{
	b->len += l->len;
	if (b->len >= HS_LINES_CHUNK)
		hs_lines_flush(b);
}

#endif
