#include "src/escape.h"
#include "src/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum hs_utf8 hs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp,
			    size_t *len)
{
	unsigned c = s[0];
	if (c < 0x80) {
		*cp = c;
		*len = 1;
		return HS_UTF8_OK;
	}
	/* Unicode 15, Table 3-7: the lead byte fixes the length and the range
	 * of the second byte (which rules out overlongs, surrogates and code
	 * points past U+10FFFF); later bytes are 80..BF. */
	size_t need;
	uint32_t v;
	unsigned lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		*len = 1;       /* 80..C1, F5..FF never start a sequence */
		return HS_UTF8_BAD;
	}
	for (size_t i = 1; i < need; i++) {
		if (i == n) {
			*len = n;
			return HS_UTF8_SHORT;
		}
		unsigned b = s[i];
		if (b < lo || b > hi) {
			*len = i;
			return HS_UTF8_BAD;
		}
		v = v << 6 | (b & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*cp = v;
	*len = need;
	return HS_UTF8_OK;
}

/* Eight bytes at a time.  Each test below sets the top bit of a byte that
 * matches; a borrow or a carry can also set it in a later byte, but only
 * after a byte that matches, so the lowest flag is exact and says where the
 * first byte to look at is. */
#define REP(b) (0x0101010101010101ull * (uint64_t)(b))

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return w;
}

/* A byte below 0x20 or above 0x7e. */
static inline uint64_t not_printable(uint64_t w)
{
	return ((w - REP(0x20)) | (w + REP(0x01)) | w) & REP(0x80);
}

/* A byte equal to c. */
static inline uint64_t has_byte(uint64_t w, unsigned char c)
{
	uint64_t v = w ^ REP(c);
	return (v - REP(0x01)) & ~v & REP(0x80);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the word-at-a-time scans assume a little-endian machine"
#endif

/* The index of the byte of the lowest flag (little-endian: the first in
 * memory). */
static inline size_t first_flag(uint64_t m)
{
	return (size_t)__builtin_ctzll(m) / 8;
}

static inline bool text_plain_byte(unsigned char c)
{
	return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t';
}

/* The length of the run of bytes at p that the text policy copies as they
 * are: 0x20..0x7e, \n and \t. */
#ifdef __SSE2__
/* Sixteen bytes at a time (SSE2 is part of x86-64): a signed compare with
 * 0x20 flags the controls and every byte >= 0x80 at once. */
static size_t text_plain(const unsigned char *p, size_t n)
{
	const __m128i space = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
	const __m128i nl = _mm_set1_epi8('\n'), tab = _mm_set1_epi8('\t');
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i bad = _mm_or_si128(_mm_cmplt_epi8(b, space),
					   _mm_cmpeq_epi8(b, del));
		__m128i ok = _mm_or_si128(_mm_cmpeq_epi8(b, nl), _mm_cmpeq_epi8(b, tab));
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(ok, bad));
		if (m)
			return i + (size_t)__builtin_ctz(m);
	}
	while (i < n && text_plain_byte(p[i]))
		i++;
	return i;
}
#else
static size_t text_plain(const unsigned char *p, size_t n)
{
	size_t i = 0;
	while (i < n && text_plain_byte(p[i]))
		i++;
	return i;
}
#endif

static inline bool json_special(unsigned char c, bool html)
{
	return c < 0x20 || c >= 0x7f || c == '"' || c == '\\' ||
		(html && (c == '<' || c == '>' || c == '&'));
}

/* The length of the run of bytes that go into a JSON string as they are. */
static size_t json_plain(const unsigned char *p, size_t n, bool html)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = load64(p + i);
		uint64_t m = not_printable(w) | has_byte(w, '"') | has_byte(w, '\\');
		if (html)
			m |= has_byte(w, '<') | has_byte(w, '>') | has_byte(w, '&');
		if (m)
			return i + first_flag(m);
	}
	while (i < n && !json_special(p[i], html))
		i++;
	return i;
}

static const char hex[] = "0123456789abcdef";

static inline size_t put_x(char *out, size_t o, unsigned char c)
{
	out[o] = '\\';
	out[o + 1] = 'x';
	out[o + 2] = hex[c >> 4];
	out[o + 3] = hex[c & 15];
	return o + 4;
}

size_t hs_escape_text(const char *s, size_t n, bool more, char *out,
		      size_t *used)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (i < n) {
		size_t k = text_plain(p + i, n - i);
		memcpy(out + o, p + i, k);
		i += k;
		o += k;
		if (i == n)
			break;
		unsigned char c = p[i];
		if (c < 0x80) {         /* C0 controls and DEL */
			o = put_x(out, o, c);
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len;
		enum hs_utf8 r = hs_utf8_decode(p + i, n - i, &cp, &len);
		if (r == HS_UTF8_SHORT && more)
			break;
		if (r == HS_UTF8_OK && cp > 0x9f) {
			memcpy(out + o, p + i, len);
			o += len;
		} else {                /* C1 controls and ill-formed bytes */
			for (size_t j = 0; j < len; j++)
				o = put_x(out, o, p[i + j]);
		}
		i += len;
	}
	*used = i;
	return o;
}

char *hs_escape_text_dup(const char *s)
{
	size_t n = strlen(s), used;
	char *out = hs_malloc(HS_ESCAPE_TEXT_MAX * n + 1);
	if (!out)
		return NULL;
	out[hs_escape_text(s, n, false, out, &used)] = 0;
	return out;
}

static inline size_t put_u(char *out, size_t o, uint32_t cp)
{
	out[o] = '\\';
	out[o + 1] = 'u';
	out[o + 2] = hex[cp >> 12 & 15];
	out[o + 3] = hex[cp >> 8 & 15];
	out[o + 4] = hex[cp >> 4 & 15];
	out[o + 5] = hex[cp & 15];
	return o + 6;
}

size_t hs_escape_json(const char *s, size_t n, bool html, bool more, char *out,
		      size_t *used)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (i < n) {
		size_t k = json_plain(p + i, n - i, html);
		memcpy(out + o, p + i, k);
		i += k;
		o += k;
		if (i == n)
			break;
		unsigned char c = p[i];
		if (c < 0x80) {
			char e = c == '"' ? '"' : c == '\\' ? '\\' : c == '\n' ? 'n' :
				c == '\t' ? 't' : c == '\r' ? 'r' : 0;
			if (e) {
				out[o++] = '\\';
				out[o++] = e;
			} else {        /* other C0 controls, DEL, < > & */
				o = put_u(out, o, c);
			}
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len;
		enum hs_utf8 r = hs_utf8_decode(p + i, n - i, &cp, &len);
		if (r == HS_UTF8_SHORT && more)
			break;
		if (r != HS_UTF8_OK) {
			o = put_u(out, o, 0xfffd);
		} else if (cp <= 0x9f ||
			   (html && (cp == 0x2028 || cp == 0x2029))) {
			/* C1 controls; line and paragraph separators end a
			 * line in a script before ES2019 */
			o = put_u(out, o, cp);
		} else {
			memcpy(out + o, p + i, len);
			o += len;
		}
		i += len;
	}
	*used = i;
	return o;
}

bool hs_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		for (; i + 8 <= n; i += 8)
			if (load64(p + i) & REP(0x80))
				break;
		while (i < n && p[i] < 0x80)
			i++;
		if (i == n)
			break;
		uint32_t cp;
		size_t len;
		if (hs_utf8_decode(p + i, n - i, &cp, &len) != HS_UTF8_OK)
			return false;
		i += len;
	}
	return true;
}

/* ---------------------------------------------------------------------------
 * The escaping stream (fopencookie). */

enum { STREAM_CHUNK = 1 << 16 };

struct estream {
	int fd;
	size_t ncarry;                  /* a sequence cut by a write, <= 3 */
	char carry[4];
	char out[HS_ESCAPE_TEXT_MAX * STREAM_CHUNK];
};

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static ssize_t estream_write(void *cookie, const char *buf, size_t size)
{
	struct estream *e = cookie;
	size_t done = 0, used, o;
	/* Finish a carried sequence with the first bytes of this write. */
	while (e->ncarry && done < size) {
		char stage[8];
		size_t k = size - done < 4 ? size - done : 4;
		memcpy(stage, e->carry, e->ncarry);
		memcpy(stage + e->ncarry, buf + done, k);
		o = hs_escape_text(stage, e->ncarry + k, true, e->out, &used);
		if (!write_all(e->fd, e->out, o))
			return -1;
		e->ncarry = e->ncarry + k - used;
		memmove(e->carry, stage + used, e->ncarry);
		done += k;
	}
	while (done < size) {
		size_t k = size - done > STREAM_CHUNK ? STREAM_CHUNK : size - done;
		bool last = done + k == size;
		if (text_plain((const unsigned char *)buf + done, k) == k) {
			/* the usual case: nothing to escape, nothing to copy */
			if (!write_all(e->fd, buf + done, k))
				return -1;
			done += k;
			continue;
		}
		o = hs_escape_text(buf + done, k, true, e->out, &used);
		if (!write_all(e->fd, e->out, o))
			return -1;
		if (used < k && last) {
			e->ncarry = k - used;
			memcpy(e->carry, buf + done + used, e->ncarry);
			used = k;
		}
		done += used;   /* not last: a cut sequence starts the next chunk */
	}
	return (ssize_t)size;
}

static int estream_close(void *cookie)
{
	struct estream *e = cookie;
	int rc = 0;
	if (e->ncarry) {
		size_t used, o = hs_escape_text(e->carry, e->ncarry, false, e->out,
						&used);
		if (!write_all(e->fd, e->out, o))
			rc = -1;
	}
	free(e);
	return rc;
}

FILE *hs_escape_stream(int fd, int bufmode)
{
	struct estream *e = hs_malloc(sizeof(*e));
	if (!e)
		return NULL;
	e->fd = fd;
	e->ncarry = 0;
	cookie_io_functions_t io = {.write = estream_write, .close = estream_close};
	FILE *f = fopencookie(e, "w", io);
	if (!f) {
		free(e);
		return NULL;
	}
	if (bufmode == _IONBF)
		setvbuf(f, NULL, _IONBF, 0);
	else
		setvbuf(f, NULL, bufmode, STREAM_CHUNK);
	return f;
}
