/* What a string from the core may show: UTF-8 validation and the two
 * escaping policies every string goes through before it reaches a user.
 *
 * A core is hostile input: a process name, a path in NT_FILE, a symbol or
 * type name may hold any byte.  Printed raw, an ESC or OSC sequence retitles
 * or clears the terminal, and a byte that is not UTF-8 makes a JSON document
 * or a pprof profile invalid.  So:
 *
 *   text   (stdout and stderr, folded stacks, pprof strings): bytes below
 *          0x20 other than \n and \t, DEL, the C1 controls U+0080-U+009F
 *          (their two UTF-8 bytes) and every byte that is not part of a
 *          well-formed UTF-8 sequence are shown as \xNN (lower-case hex).
 *          A backslash stays as it is.  The result is valid UTF-8.
 *   JSON   (formats/jsonw.c): " and \ escaped, \n \t \r as such, other C0
 *          controls, DEL and the C1 controls as \u00XX, < > & as \u00XX
 *          when the JSON sits in an HTML page (and U+2028, U+2029 there);
 *          an ill-formed sequence becomes one \ufffd.
 *
 * Well-formed UTF-8 is that of Unicode's Table 3-7: no overlong forms, no
 * surrogates (U+D800-U+DFFF), nothing above U+10FFFF, no truncated
 * sequence.  An ill-formed sequence is cut at its maximal subpart (the
 * longest prefix that could start a well-formed sequence), as Unicode
 * recommends and as Python's decode(errors="replace") does: E2 82 41 is
 * one U+FFFD then "A".
 *
 * The policies work on buffers and stream well: with `more`, a sequence cut
 * by the end of the input is left unconsumed (at most 3 bytes) for the next
 * call.  Plain ASCII is scanned sixteen (SSE2) or eight bytes at a time.
 */
#ifndef HS_ESCAPE_H
#define HS_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum hs_utf8 {
	HS_UTF8_OK,     /* a well-formed sequence */
	HS_UTF8_BAD,    /* ill-formed: *len is its maximal subpart (1-3 bytes) */
	HS_UTF8_SHORT,  /* all n bytes start a well-formed sequence, cut short */
};

/* The UTF-8 sequence at s[0..n), n >= 1.  OK: *cp is the code point and
 * *len its length (1-4).  BAD: *len bytes are to be replaced as one.
 * SHORT: *len is n (1-3). */
enum hs_utf8 hs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp,
			    size_t *len);

/* Whether s[0..n) is all well-formed UTF-8. */
bool hs_utf8_valid(const char *s, size_t n);

/* At most this many output bytes per input byte. */
enum { HS_ESCAPE_TEXT_MAX = 4, HS_ESCAPE_JSON_MAX = 6 };

/* The text policy: escapes s[0..n) into out (room for HS_ESCAPE_TEXT_MAX *
 * n bytes) and returns the length written.  *used is the input consumed:
 * all of it, unless `more` is set and the input ends inside a sequence that
 * may still be completed. */
size_t hs_escape_text(const char *s, size_t n, bool more, char *out,
		      size_t *used);

/* The text policy on a whole string, into a new one (malloc); NULL when out
 * of memory. */
char *hs_escape_text_dup(const char *s);

/* The JSON policy, for the inside of a JSON string (no quotes): as
 * hs_escape_text, with room for HS_ESCAPE_JSON_MAX * n bytes. */
size_t hs_escape_json(const char *s, size_t n, bool html, bool more, char *out,
		      size_t *used);

/* A write-only stream that applies the text policy to everything written to
 * it and writes the result to fd, carrying a sequence split between two
 * writes.  bufmode is setvbuf's (_IOFBF, _IOLBF, _IONBF).  Closing it writes
 * what it carries (escaped) and leaves fd open.  NULL when out of memory. */
FILE *hs_escape_stream(int fd, int bufmode);

#endif
