/* src/fmt.h's line builder against printf: hs_line_dec, hs_line_hex and
 * the two paddings give what "%" PRIu64, "%#" PRIx64, "%-Ns" and "%Ns"
 * give, on edge values and 100,000 random ones; a line cut at HS_LINE_MAX
 * stays inside its buffer; lines gathered in chunks (struct hs_lines)
 * reach the stream whole and in order. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "src/fmt.h"
#include "tests/unit/check.h"

static char line_buf[HS_LINE_MAX + 1];
static struct hs_line line = {0, line_buf};

static void one(uint64_t v, unsigned width)
{
	char want[128];
	snprintf(want, sizeof(want), "%#-*" PRIx64 "|%*" PRIu64 "|%-*s|%*s|", width,
		 v, width, v, width, "ab", width, "");
	struct hs_line *l = &line;
	l->len = 0;
	hs_line_hex(l, v);
	hs_line_pad_left(l, 0, width);
	hs_line_char(l, '|');
	size_t f = l->len;
	hs_line_dec(l, v);
	hs_line_pad_right(l, f, width);
	hs_line_char(l, '|');
	f = l->len;
	hs_line_str(l, "ab");
	hs_line_pad_left(l, f, width);
	hs_line_char(l, '|');
	f = l->len;
	hs_line_str(l, "");
	hs_line_pad_right(l, f, width);
	hs_line_char(l, '|');
	CHECKF(l->len == strlen(want) && !memcmp(l->buf, want, l->len),
	       "%" PRIu64 " width %u: \"%.*s\", printf gives \"%s\"", v, width,
	       (int)l->len, l->buf, want);
}

int main(void)
{
	static const uint64_t edges[] = {
		0, 1, 9, 10, 15, 16, 99, 100, 255, 256, 4095, 4096,
		0x7fffffffffffull, 0x555555559000ull, UINT32_MAX,
		(uint64_t)UINT32_MAX + 1, 9999999999999999999ull, UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		for (unsigned w = 0; w <= 22; w++)
			one(edges[i], w);
	for (int i = 0; i < 100000; i++) {
		uint64_t v = check_rand() >> (check_rand() % 64);
		one(v, (unsigned)(check_rand() % 24));
	}
	/* a line longer than its buffer is cut, never overrun */
	char big[HS_LINE_MAX + 100];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	line.len = 0;
	hs_line_str(&line, "ab");
	hs_line_str(&line, big);
	hs_line_dec(&line, 12345);
	hs_line_pad_left(&line, 0, HS_LINE_MAX + 50);
	hs_line_pad_right(&line, 2, HS_LINE_MAX + 50);
	hs_line_char(&line, '\n');
	CHECK(line.len == HS_LINE_MAX && line.buf[0] == 'a' &&
	      line.buf[HS_LINE_MAX - 1] == 'x');
	/* lines of 1 to 3,000 bytes (some cut) through chunks, against the
	 * same lines written one by one */
	FILE *got = tmpfile(), *want = tmpfile();
	CHECK(got && want);
	if (got && want) {
		struct hs_lines *b = hs_lines_new(got);
		CHECK(b != NULL);
		for (int i = 0; b && i < 20000; i++) {
			struct hs_line l;
			hs_lines_begin(b, &l);
			hs_line_dec(&l, (uint64_t)i);
			size_t f = l.len;
			hs_line_str(&l, i % 97 ? "" : big);
			hs_line_pad_left(&l, f, check_rand() % 3000);
			hs_line_char(&l, '\n');
			fwrite(l.buf, 1, l.len, want);
			hs_lines_end(b, &l);
		}
		hs_lines_free(b);
		long n = ftell(want);
		CHECKF(n == ftell(got) && n > 4 * HS_LINES_CHUNK, "%ld bytes through chunks, %ld one by one",
		       ftell(got), n);
		rewind(got);
		rewind(want);
		int cg, cw, same = 1;
		do {
			cg = fgetc(got);
			cw = fgetc(want);
			same &= cg == cw;
		} while (cg != EOF && cw != EOF);
		CHECK(same);
		fclose(got);
		fclose(want);
	}
	return check_finish();
}
