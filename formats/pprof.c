/* pprof and folded-stack writers: see formats/pprof.h for the
 * profile.proto fields written. */
#include "formats/pprof.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "src/alloc.h"
#include "src/escape.h"
#include "src/outfile.h"
#include "src/varint.h"

struct buf {
	uint8_t *p;
	size_t n, cap;
	bool nomem;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->nomem)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *p = hs_realloc(b->p, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[HS_VARINT_MAX];
	put(b, tmp, hs_varint_put(tmp, v));
}

static void field_varint(struct buf *b, unsigned field, uint64_t v)
{
	varint(b, (uint64_t)field << 3 | 0);
	varint(b, v);
}

static void field_bytes(struct buf *b, unsigned field, const void *d, size_t n)
{
	varint(b, (uint64_t)field << 3 | 2);
	varint(b, n);
	put(b, d, n);
}

static void field_msg(struct buf *b, unsigned field, struct buf *m)
{
	field_bytes(b, field, m->p, m->n);
	if (m->nomem)
		b->nomem = true;
	m->n = 0;
}

static void value_type(struct buf *out, unsigned field, uint64_t type,
		       uint64_t unit)
{
	struct buf m = {0};
	field_varint(&m, 1, type);
	field_varint(&m, 2, unit);
	field_msg(out, field, &m);
	free(m.p);
}

static struct hs_error *write_gz(const struct buf *b, const char *path)
{
	struct hs_outfile o;
	struct hs_error *err = hs_outfile_open(&o, path);
	if (err)
		return err;
	gzFile gz = gzdopen(o.fd, "wb9");
	if (!gz) {
		close(o.fd);
		err = hs_error_create(HS_ERR_IO, "%s: cannot start gzip", o.tmp);
	} else {
		size_t off = 0;
		while (off < b->n && !err) {
			unsigned chunk = b->n - off > (1u << 30) ? 1u << 30 : (unsigned)(b->n - off);
			if (gzwrite(gz, b->p + off, chunk) != (int)chunk)
				err = hs_error_create(HS_ERR_IO, "%s: gzip write failed", o.tmp);
			off += chunk;
		}
		if (gzclose(gz) != Z_OK && !err)
			err = hs_error_create(HS_ERR_IO, "%s: gzip close failed", o.tmp);
	}
	return hs_outfile_finish(&o, err);
}

struct hs_error *hs_pprof_write(const struct hs_stacks *s, const char *path)
{
	struct buf out = {0}, m = {0}, packed = {0};
	/* string table: "", the labels, then the sample type names */
	uint64_t base = 1 + s->nlabels;
	static const char *const names[] = {
		"inuse_objects", "count", "inuse_space", "bytes",
		"leaked_objects", "leaked_space", "space",
	};
	enum { S_IO, S_COUNT, S_IS, S_BYTES, S_LO, S_LS, S_SPACE };
	value_type(&out, 1, base + S_IO, base + S_COUNT);
	value_type(&out, 1, base + S_IS, base + S_BYTES);
	value_type(&out, 1, base + S_LO, base + S_COUNT);
	value_type(&out, 1, base + S_LS, base + S_BYTES);
	for (size_t f = 0; f < s->nframes; f++) {
		const struct hs_stack_frame *fr = &s->frames[f];
		if (!fr->count)
			continue;
		packed.n = 0;
		for (uint32_t x = (uint32_t)f; x != UINT32_MAX; x = s->frames[x].parent)
			varint(&packed, x + 1ull);
		field_bytes(&m, 1, packed.p, packed.n);
		packed.n = 0;
		varint(&packed, fr->count);
		varint(&packed, fr->bytes);
		varint(&packed, fr->leaked_count);
		varint(&packed, fr->leaked_bytes);
		field_bytes(&m, 2, packed.p, packed.n);
		field_msg(&out, 2, &m);
	}
	struct buf line = {0};
	for (size_t f = 0; f < s->nframes; f++) {
		field_varint(&m, 1, f + 1);
		field_varint(&line, 1, s->frames[f].label + 1ull);
		field_msg(&m, 4, &line);
		field_msg(&out, 4, &m);
	}
	for (size_t l = 0; l < s->nlabels; l++) {
		field_varint(&m, 1, l + 1);
		field_varint(&m, 2, l + 1);
		field_varint(&m, 3, l + 1);
		field_msg(&out, 5, &m);
	}
	field_bytes(&out, 6, "", 0);
	/* protobuf strings must be UTF-8 (go tool pprof refuses the file
	 * otherwise), and pprof prints them to terminals: the text policy
	 * gives both */
	for (size_t l = 0; l < s->nlabels && !out.nomem; l++) {
		char *name = hs_escape_text_dup(s->labels[l]);
		if (name)
			field_bytes(&out, 6, name, strlen(name));
		else
			out.nomem = true;
		free(name);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		field_bytes(&out, 6, names[i], strlen(names[i]));
	value_type(&out, 11, base + S_SPACE, base + S_BYTES);
	field_varint(&out, 12, 1);
	field_varint(&out, 14, base + S_IS);
	struct hs_error *err = out.nomem || m.nomem || packed.nomem || line.nomem ?
		&hs_error_nomem : write_gz(&out, path);
	free(out.p);
	free(m.p);
	free(packed.p);
	free(line.p);
	return err;
}

/* Folded stacks: "root;frame;frame bytes", one line per stack; a name goes
 * through the text policy (src/escape.h: the file is read in terminals
 * and by flame graph tools that want UTF-8), then a ';' in it, which would
 * split a frame, is written as ':' and a newline as a space. */
static char *folded_name(const char *label)
{
	char *name = hs_escape_text_dup(label);
	for (char *p = name; p && *p; p++) {
		if (*p == ';')
			*p = ':';
		else if (*p == '\n')
			*p = ' ';
	}
	return name;
}

struct hs_error *hs_folded_write(const struct hs_stacks *s, const char *path,
				 bool leaked_only)
{
	char **names = hs_calloc(s->nlabels ? s->nlabels : 1, sizeof(*names));
	if (!names)
		return &hs_error_nomem;
	struct hs_error *err = NULL;
	for (size_t l = 0; l < s->nlabels && !err; l++)
		if (!(names[l] = folded_name(s->labels[l])))
			err = &hs_error_nomem;
	struct hs_outfile o;
	FILE *f = NULL;
	if (!err)
		err = hs_outfile_fopen(&o, path, &f);
	if (!err) {
		uint32_t chain[HS_STACK_DEPTH + 2];
		for (size_t i = 0; i < s->nframes; i++) {
			const struct hs_stack_frame *fr = &s->frames[i];
			uint64_t v = leaked_only ? fr->leaked_bytes : fr->bytes;
			if (!v)
				continue;
			size_t n = 0;
			for (uint32_t x = (uint32_t)i;
			     x != UINT32_MAX && n < HS_STACK_DEPTH + 2;
			     x = s->frames[x].parent)
				chain[n++] = x;
			while (n--) {
				fputs(names[s->frames[chain[n]].label], f);
				if (n)
					putc(';', f);
			}
			fprintf(f, " %llu\n", (unsigned long long)v);
		}
		if (fclose(f) != 0)
			err = hs_error_errno(errno, "%s", o.tmp);
		err = hs_outfile_finish(&o, err);
	}
	for (size_t l = 0; l < s->nlabels; l++)
		free(names[l]);
	free(names);
	return err;
}
