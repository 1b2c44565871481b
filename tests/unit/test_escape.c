/* The escaping policies (src/escape.h): UTF-8 validation against a decoder
 * written from the definition, the text and JSON policies on known inputs,
 * the word-at-a-time scans against a byte-by-byte reading, and the escaping
 * stream against one-shot escaping, split at every point. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/escape.h"
#include "tests/unit/check.h"


/* The definition (RFC 3629): the lead byte gives the length, the others are
 * 10xxxxxx; the code point must need that length, not be a surrogate, and
 * be at most U+10FFFF.  Returns the length, or 0 when ill-formed (or cut). */
static size_t ref_valid(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t v, min;
	if (s[0] < 0x80)
		return *cp = s[0], 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, v = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, v = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, v = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Whether s[0..k) can start a well-formed sequence: some completion makes
 * one (the second byte's range depends on the lead, later ones never do). */
static bool ref_prefix(const unsigned char *s, size_t k)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 :
		(s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!len || k > len)
		return false;
	unsigned char t[4];
	uint32_t cp;
	memcpy(t, s, k);
	for (size_t i = k; i < len; i++)
		t[i] = 0x80;
	if (k >= 2 || len == 1)
		return ref_valid(t, len, &cp) == len;
	for (unsigned b = 0x80; b <= 0xbf; b++) {
		t[1] = (unsigned char)b;
		if (ref_valid(t, len, &cp) == len)
			return true;
	}
	return false;
}

static void check_decode(const unsigned char *s, size_t n)
{
	uint32_t cp = 0, rcp = 0;
	size_t len = 0, rlen = ref_valid(s, n, &rcp);
	enum hs_utf8 r = hs_utf8_decode(s, n, &cp, &len);
	char hex[32];
	int k = 0;
	for (size_t i = 0; i < n; i++)
		k += snprintf(hex + k, sizeof(hex) - (size_t)k, "%02x", s[i]);
	if (rlen) {
		CHECKF(r == HS_UTF8_OK && len == rlen && cp == rcp,
		      "decode %s: not the well-formed sequence it is", hex);
		return;
	}
	if (r == HS_UTF8_OK) {
		CHECKF(false, "decode %s: ill-formed, taken as well-formed", hex);
	} else if (r == HS_UTF8_SHORT) {
		CHECKF(len == n && ref_prefix(s, n),
		      "decode %s: SHORT, but cannot be completed", hex);
	} else {
		/* the maximal subpart: a prefix of a well-formed sequence
		 * (or one byte), and one byte more is not */
		CHECKF(len >= 1 && len <= 3 && len <= n &&
		      (len == 1 || ref_prefix(s, len)) &&
		      (len < n ? !ref_prefix(s, len + 1) : !ref_prefix(s, 1)),
		      "decode %s: BAD, not at its maximal subpart", hex);
	}
}

static void test_decode(void)
{
	unsigned char s[4];
	for (unsigned a = 0; a < 256; a++) {
		s[0] = (unsigned char)a;
		check_decode(s, 1);
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (unsigned char)b;
			check_decode(s, 2);
			if (a < 0xe0)
				continue;
			for (unsigned c = 0; c < 256; c++) {
				s[2] = (unsigned char)c;
				check_decode(s, 3);
				if (a < 0xf0 || a > 0xf5)
					continue;
				static const unsigned char last[] = {
					0x00, 0x41, 0x7f, 0x80, 0x9f, 0xbf, 0xc0, 0xff};
				for (size_t d = 0; d < sizeof(last); d++) {
					s[3] = last[d];
					check_decode(s, 4);
				}
			}
		}
	}
}

static void expect_text(const char *in, size_t n, const char *want)
{
	char out[512];
	size_t used;
	size_t o = hs_escape_text(in, n, false, out, &used);
	out[o] = 0;
	check_count++;
	if (strcmp(out, want) || used != n) {
		check_failures++;
		fprintf(stderr, "text policy: got \"%s\", want \"%s\"\n", out, want);
	}
}

static void expect_json(const char *in, size_t n, bool html, const char *want)
{
	char out[512];
	size_t used;
	size_t o = hs_escape_json(in, n, html, false, out, &used);
	out[o] = 0;
	check_count++;
	if (strcmp(out, want) || used != n) {
		check_failures++;
		fprintf(stderr, "JSON policy: got \"%s\", want \"%s\"\n", out, want);
	}
}

#define T(in, want) expect_text(in, sizeof(in) - 1, want)
#define J(in, want) expect_json(in, sizeof(in) - 1, false, want)
#define JH(in, want) expect_json(in, sizeof(in) - 1, true, want)

static void test_policies(void)
{
	T("plain ASCII, a path /usr/lib/x86_64-linux-gnu/libc.so.6",
	  "plain ASCII, a path /usr/lib/x86_64-linux-gnu/libc.so.6");
	T("tab\tand\nnewline", "tab\tand\nnewline");
	T("back\\slash \\x41", "back\\slash \\x41");
	T("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07");
	T("\x1b[2Jcleared", "\\x1b[2Jcleared");
	T("cr\rdel\x7f", "cr\\x0ddel\\x7f");
	T("nul\0end", "nul\\x00end");
	T("C1 \xc2\x85 \xc2\x9b \xc2\x80", "C1 \\xc2\\x85 \\xc2\\x9b \\xc2\\x80");
	T("not C1 \xc2\xa0 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	  "not C1 \xc2\xa0 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	T("lone \xff and \x85", "lone \\xff and \\x85");
	T("cut \xe2\x82", "cut \\xe2\\x82");
	T("cut \xe2\x82" "A", "cut \\xe2\\x82A");
	T("overlong \xc0\xaf \xe0\x80\xaf \xc1\xbf",
	  "overlong \\xc0\\xaf \\xe0\\x80\\xaf \\xc1\\xbf");
	T("surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80");
	T("past U+10FFFF \xf4\x90\x80\x80 \xf5\x80",
	  "past U+10FFFF \\xf4\\x90\\x80\\x80 \\xf5\\x80");
	T("", "");

	J("plain \"quoted\" back\\slash", "plain \\\"quoted\\\" back\\\\slash");
	J("\n\t\r\x01\x1b\x7f", "\\n\\t\\r\\u0001\\u001b\\u007f");
	J("C1 \xc2\x85", "C1 \\u0085");
	J("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	J("lone \xff", "lone \\ufffd");
	/* maximal subparts, as Python's decode("utf-8", "replace") */
	J("\xe2\x82" "A", "\\ufffdA");
	J("\xf0\x9f\x98", "\\ufffd");
	J("\xc0\xaf", "\\ufffd\\ufffd");
	J("\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd");
	J("\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd");
	J("</script>&", "</script>&");
	JH("</script>&", "\\u003c/script\\u003e\\u0026");
	JH("\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029");
	J("\xe2\x80\xa8", "\xe2\x80\xa8");
}

/* Byte by byte, what the word-at-a-time scans must agree with. */
static size_t ref_text(const unsigned char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		size_t len = 1;
		bool ok = s[i] < 0x80 ||
			hs_utf8_decode(s + i, n - i, &cp, &len) == HS_UTF8_OK;
		if (s[i] < 0x80)
			cp = s[i];
		if (ok && (cp >= 0xa0 || (cp >= 0x20 && cp < 0x7f) || cp == '\n' ||
			   cp == '\t')) {
			memcpy(out + o, s + i, len);
			o += len;
		} else {
			for (size_t j = 0; j < len; j++)
				o += (size_t)sprintf(out + o, "\\x%02x", s[i + j]);
		}
		i += len;
	}
	return o;
}


/* Printable ASCII with a special byte here and there (one in `every`), at
 * every offset of a word. */
static void random_input(unsigned char *s, size_t n, unsigned every)
{
	static const unsigned char odd[] = {
		0x00, 0x07, 0x09, 0x0a, 0x1b, 0x1f, 0x20, 0x22, 0x26, 0x3c, 0x3e,
		0x5c, 0x7e, 0x7f, 0x80, 0x85, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xc3,
		0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
	for (size_t i = 0; i < n; i++) {
		uint64_t r = check_rand();
		s[i] = r % every ? (unsigned char)(0x20 + (r >> 8) % 95) :
			odd[(r >> 8) % sizeof(odd)];
	}
}

static bool shows_safely(const char *s, size_t n)
{
	if (!hs_utf8_valid(s, n))
		return false;
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n; i++) {
		if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f)
			return false;
		if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
			return false;
	}
	return true;
}

static void test_random(void)
{
	enum { N = 200 };
	unsigned char in[N];
	char out[N * HS_ESCAPE_JSON_MAX + 1], ref[N * HS_ESCAPE_TEXT_MAX + 1];
	int bad_ref = 0, bad_safe = 0, bad_json = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + check_rand() % N, used;
		random_input(in, n, round % 3 ? 8 : 61);
		size_t o = hs_escape_text((char *)in, n, false, out, &used);
		size_t r = ref_text(in, n, ref);
		if (o != r || memcmp(out, ref, o) || used != n)
			bad_ref++;
		if (!shows_safely(out, o))
			bad_safe++;
		o = hs_escape_json((char *)in, n, round & 1, false, out, &used);
		bool ok = hs_utf8_valid(out, o) && used == n;
		for (size_t i = 0; i < o && ok; i++)
			ok = (unsigned char)out[i] >= 0x20 && out[i] != 0x7f &&
				!((round & 1) && (out[i] == '<' || out[i] == '>' ||
						  out[i] == '&'));
		bad_json += !ok;
	}
	CHECKF(!bad_ref, "%s: text policy differs from a byte-by-byte reading",
	      "random inputs");
	CHECKF(!bad_safe, "%s: text policy output not valid UTF-8 or has a control",
	      "random inputs");
	CHECKF(!bad_json, "%s: JSON policy output not valid UTF-8 or has a control",
	      "random inputs");
}

/* The stream, with the input cut in two at every point (a sequence split
 * between writes), must write what one-shot escaping gives. */
static void test_stream(void)
{
	static const char input[] =
		"name \xe2\x82\xac\xf0\x9f\x98\x80 \x1b]0;t\x07 \xc2\x85 \xe2\x82"
		"A \xff tail \xf0\x9f\x98";
	size_t n = sizeof(input) - 1, used;
	char want[4 * sizeof(input)];
	size_t wn = hs_escape_text(input, n, false, want, &used);
	int bad = 0;
	for (size_t cut = 0; cut <= n; cut++) {
		FILE *tmp = tmpfile();
		if (!tmp) {
			CHECKF(false, "%s", "tmpfile failed");
			return;
		}
		FILE *s = hs_escape_stream(fileno(tmp), _IONBF);
		fwrite(input, 1, cut, s);
		fwrite(input + cut, 1, n - cut, s);
		fclose(s);
		char got[4 * sizeof(input)];
		rewind(tmp);
		size_t gn = fread(got, 1, sizeof(got), tmp);
		fclose(tmp);
		if (gn != wn || memcmp(got, want, wn))
			bad++;
	}
	CHECKF(!bad, "%s: the stream differs from one-shot escaping", "cut writes");
	/* byte by byte, fully buffered */
	FILE *tmp = tmpfile();
	FILE *s = hs_escape_stream(fileno(tmp), _IOFBF);
	for (size_t i = 0; i < n; i++) {
		fputc(input[i], s);
		fflush(s);
	}
	fclose(s);
	char got[4 * sizeof(input)];
	rewind(tmp);
	size_t gn = fread(got, 1, sizeof(got), tmp);
	fclose(tmp);
	CHECKF(gn == wn && !memcmp(got, want, wn), "%s: the stream differs",
	      "one byte per write");
}

int main(void)
{
	test_decode();
	test_policies();
	test_random();
	test_stream();
	return check_finish();
}
