/* Redaction of a core (which words are kept): see analyzers/redact.h. */
#include "src/sort.h"
#include "src/alloc.h"
#include "analyzers/redact.h"

#include <elf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "formats/corewrite.h"

enum { MAX_LINK_MAPS = 1 << 16, MAX_NAME = 4096 };

/* r_debug {int r_version; link_map *r_map; ...} and link_map {l_addr,
 * l_name, l_ld, l_next, l_prev} (glibc <link.h>), and each module's
 * dynamic section, whose DT_DEBUG leads to r_debug. */
void hs_redact_touch_modules(const struct hs_core *core, struct hs_dwarf *dw)
{
	uint64_t r_debug = 0;
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		uint64_t bias;
		Elf *elf = hs_dwarf_module_elf(dw, m, &bias);
		size_t n;
		if (!elf || elf_getphdrnum(elf, &n) != 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)k, &ph) || ph.p_type != PT_DYNAMIC)
				continue;
			uint64_t dyn = ph.p_vaddr + bias;
			for (uint64_t off = 0; off + 16 <= ph.p_memsz; off += 16) {
				uint64_t tag, val;
				if (!hs_core_read_u64(core, dyn + off, &tag) ||
				    !hs_core_read_u64(core, dyn + off + 8, &val))
					break;
				if (tag == DT_DEBUG && val && m->is_exe)
					r_debug = val;
				if (tag == DT_NULL)
					break;
			}
		}
	}
	uint64_t lm;
	if (!r_debug || !hs_core_read_u64(core, r_debug + 8, &lm))
		return;
	hs_core_touch(core, r_debug, 40);
	for (size_t i = 0; lm && i < MAX_LINK_MAPS; i++) {
		uint64_t w[5];
		if (!hs_core_read_quiet(core, lm, w, sizeof(w)))
			break;
		for (uint64_t p = w[1], k = 0; k < MAX_NAME; p++, k++) {
			uint8_t c;
			if (!hs_core_read_quiet(core, p, &c, 1) || !c)
				break;
		}
		lm = w[3];
	}
}

struct range {
	uint64_t lo, hi;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct policy {
	const struct hs_core *core;
	const uint64_t *trace;
	uint64_t *strings;      /* word bits, or NULL */
	struct range *mapped;
	size_t nmapped;
	uint64_t writable_words;
};

static bool bit(const uint64_t *bits, uint64_t off)
{
	uint64_t w = off / 8;
	return bits[w / 64] >> (w % 64) & 1;
}

static bool zero_segment(void *arg, const struct hs_core_segment *seg)
{
	struct policy *p = arg;
	if (!(seg->flags & HS_SEG_W))
		return false;
	p->writable_words += seg->avail / 8;
	return true;
}

static bool keep(void *arg, uint64_t off, uint64_t v)
{
	struct policy *p = arg;
	if (bit(p->trace, off) || (off & 7 && bit(p->trace, off + 7)))
		return true;
	if (p->strings && bit(p->strings, off))
		return true;
	size_t lo = 0, hi = p->nmapped;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v < p->mapped[mid].lo)
			hi = mid;
		else if (v >= p->mapped[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static bool printable(uint8_t c)
{
	return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n';
}

/* Words covered by NUL-terminated runs of at least 4 printable bytes. */
static uint64_t *string_words(const struct hs_core *core)
{
	uint64_t *bits = hs_calloc(core->size / 512 + 2, sizeof(uint64_t));
	if (!bits)
		return NULL;
	for (size_t i = 0; i < core->nsegs; i++) {
		const struct hs_core_segment *s = &core->segs[i];
		if (!(s->flags & HS_SEG_W))
			continue;
		const uint8_t *d = core->data + s->offset;
		uint64_t run = 0;
		for (uint64_t k = 0; k < s->avail; k++) {
			if (printable(d[k])) {
				run++;
				continue;
			}
			if (d[k] == 0 && run >= 4)
				for (uint64_t j = k - run; j <= k; j++) {
					uint64_t w = (s->offset + j) / 8;
					bits[w / 64] |= 1ull << (w % 64);
				}
			run = 0;
		}
	}
	return bits;
}

struct hs_error *hs_redact_write(const struct hs_core *core,
				 const uint64_t *trace,
				 const struct hs_redact_options *opts,
				 const char *out, struct hs_redact_stats *stats)
{
	struct policy p = {.core = core, .trace = trace};
	p.mapped = hs_malloc((core->nsegs + core->nfiles + 1) * sizeof(*p.mapped));
	if (!p.mapped)
		return &hs_error_nomem;
	for (size_t i = 0; i < core->nsegs; i++)
		p.mapped[p.nmapped++] = (struct range){core->segs[i].vaddr,
						       core->segs[i].vaddr + core->segs[i].memsz};
	for (size_t i = 0; i < core->nfiles; i++)
		p.mapped[p.nmapped++] = (struct range){core->files[i].start,
						       core->files[i].end};
	hs_sort(p.mapped, p.nmapped, sizeof(*p.mapped), cmp_range);
	size_t k = 0;
	for (size_t i = 0; i < p.nmapped; i++) {
		if (k && p.mapped[i].lo <= p.mapped[k - 1].hi) {
			if (p.mapped[i].hi > p.mapped[k - 1].hi)
				p.mapped[k - 1].hi = p.mapped[i].hi;
		} else {
			p.mapped[k++] = p.mapped[i];
		}
	}
	p.nmapped = k;
	if (opts->keep_strings && !(p.strings = string_words(core))) {
		free(p.mapped);
		return &hs_error_nomem;
	}
	struct hs_core_writer w = {zero_segment, keep, &p};
	uint64_t zeroed = 0;
	struct hs_error *err = hs_core_write_masked(core, out, &w, &zeroed);
	if (!err && stats) {
		stats->writable_words = p.writable_words;
		stats->zeroed_words = zeroed;
	}
	free(p.mapped);
	free(p.strings);
	return err;
}
