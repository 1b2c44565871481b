/* Numbers for people: sizes in binary units, as every command's text
 * output shows them. */
#ifndef HS_FMT_H
#define HS_FMT_H

#include <stdint.h>

/* "1.5 MiB" style (bytes below 1 KiB: "512 B"); buf of at least 32 bytes. */
const char *hs_fmt_size(char *buf, uint64_t bytes);

/* One line of a long listing, built without printf (list prints millions):
 * fields are appended, then padded as printf's width would pad them.  What
 * does not fit in HS_LINE_MAX bytes is cut. */
enum { HS_LINE_MAX = 4096 };
struct hs_line {
	size_t len;
	char buf[HS_LINE_MAX];
};

static inline void hs_line_char(struct hs_line *l, char c)
{
	if (l->len < HS_LINE_MAX)
		l->buf[l->len++] = c;
}
/* s up to its NUL, as "%s" */
void hs_line_str(struct hs_line *l, const char *s);
/* v as "%" PRIu64, and as "%#" PRIx64 (0x prefix, but "0" for 0) */
void hs_line_dec(struct hs_line *l, uint64_t v);
void hs_line_hex(struct hs_line *l, uint64_t v);
/* The field appended since from, padded with spaces to width: after it
 * ("%-Ns") or before it ("%Ns"). */
void hs_line_pad_left(struct hs_line *l, size_t from, size_t width);
void hs_line_pad_right(struct hs_line *l, size_t from, size_t width);

#endif
