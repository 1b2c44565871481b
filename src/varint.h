/* LEB128 varints and zigzag signs: seven bits a byte, low bits first, the
 * high bit set on every byte but the last; a signed difference d as 2d
 * (d >= 0) or -2d - 1, so that small differences of either sign take few
 * bytes.  For streams heapsift writes and reads back itself (the
 * dominators' streams, the sharers' predecessor rows, pprof's protobuf):
 * a reader of bytes from a core must bound its reads itself.
 *
 * Base layer: includes nothing above it.
 */
#ifndef HS_VARINT_H
#define HS_VARINT_H

#include <stddef.h>
#include <stdint.h>

enum { HS_VARINT_MAX = 10 };  /* bytes of a 64-bit value */

static inline uint64_t hs_zigzag(int64_t d)
{
	return d >= 0 ? (uint64_t)d << 1 : ((uint64_t)-(d + 1) << 1) + 1;
}

static inline int64_t hs_unzigzag(uint64_t z)
{
	return z & 1 ? -(int64_t)(z >> 1) - 1 : (int64_t)(z >> 1);
}

/* The bytes hs_varint_put writes for x. */
static inline size_t hs_varint_len(uint64_t x)
{
	size_t n = 1;
	while (x >= 0x80) {
		x >>= 7;
		n++;
	}
	return n;
}

/* Writes x at out (room for hs_varint_len(x) bytes); returns the bytes
 * written. */
static inline size_t hs_varint_put(uint8_t *out, uint64_t x)
{
	size_t n = 0;
	while (x >= 0x80) {
		out[n++] = (uint8_t)(x | 0x80);
		x >>= 7;
	}
	out[n++] = (uint8_t)x;
	return n;
}

/* The varint at *p, which moves past it. */
static inline uint64_t hs_varint_get(const uint8_t **p)
{
	uint64_t x = 0;
	unsigned sh = 0;
	uint8_t c;
	do {
		c = *(*p)++;
		x |= (uint64_t)(c & 0x7f) << sh;
		sh += 7;
	} while (c & 0x80 && sh < 64);
	return x;
}

#endif
