#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "src/fmt.h"

const char *hs_fmt_size(char *buf, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, 32, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, 32, "%.1f %s", v, units[u]);
	return buf;
}

void hs_line_str(struct hs_line *l, const char *s)
{
	size_t n = strlen(s);
	if (n > HS_LINE_MAX - l->len)
		n = HS_LINE_MAX - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

void hs_line_dec(struct hs_line *l, uint64_t v)
{
	char t[20];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		hs_line_char(l, t[--n]);
}

void hs_line_hex(struct hs_line *l, uint64_t v)
{
	if (v) {
		hs_line_char(l, '0');
		hs_line_char(l, 'x');
	}
	char t[16];
	size_t n = 0;
	do {
		t[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		hs_line_char(l, t[--n]);
}

void hs_line_pad_left(struct hs_line *l, size_t from, size_t width)
{
	while (l->len - from < width && l->len < HS_LINE_MAX)
		l->buf[l->len++] = ' ';
}

void hs_line_pad_right(struct hs_line *l, size_t from, size_t width)
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
