/* jemalloc 5.x walker.
 *
 * Finding it (hs_jemalloc_detect): a module named libjemalloc*; else a
 * module whose build-id has a row in formats/jelayout.c, or that defines
 * mallctl, je_mallctl or _rjem_mallctl, or an executable whose symbol table
 * has arena_emap_global; else an executable holding "<jemalloc>: ".
 * Internal symbols are tried as je_NAME, _rjem_je_NAME, then NAME
 * (je_symbol).  The version is the "5.3.0-0-g<40 hex>" string in the
 * library's read-only sections (find_version).
 *
 * Layouts (struct hs_je_layout, L below), one of two sources:
 *   DWARF, when the module has struct edata_s (layout_from_dwarf): offsets
 *     and sizes of the types; nsizes, nbins and arenas_max from the sizes of
 *     the symbols sz_index2size_tab, bin_infos and arenas; the size classes
 *     read from sz_index2size_tab in the core; e_bits' fields and the
 *     rtree's shape derived from those numbers by jemalloc 5.3's rules.
 *   Else the table (pick_layout): the row with the module's build-id, else
 *     one of the same version (warned; refused for a copy linked into the
 *     executable, or when the TLS block is not tsd_size bytes); the size
 *     classes computed (size_classes: tiny, then 2^lg_ngroup per doubling),
 *     class nbins checked against large_minclass.
 * A region's usable size is sizes[szind] either way.  A field added to
 * struct hs_je_layout must be filled by both sources.
 *
 *   emap_t (arena_emap_global)             edata_t, one per extent
 *     +emap_rtree_off rtree_t                +0 e_bits (fields by L->bits_*):
 *       +rtree_root_off root[2^bits0]           arena, slab, state, szind,
 *         -> node[2^bits1] (-> [2^bits2])       nfree
 *           -> leaf words, one per page      +edata_addr_off e_addr
 *   key: the page's address; level widths    +edata_size_off e_size_esn
 *   bits0.. from the top of lg_vaddr bits     (low page bits masked off)
 *   leaf word: szind | edata_t | flags;       +edata_bitmap_off slab bitmap,
 *   the walker keeps only the edata_t:         bitmap_groups_max words;
 *   low lg_vaddr bits, sign-extended,          bit r set = region r free
 *   & ~(edata_size - 1)
 *
 *   thread: fs_base -> the library's TLS block = tsd_t (+ tsd_tls's offset
 *   when that symbol exists)
 *     +tsd_arena_off  arena_t *
 *     +tsd_tcache_off tcache_t (inside the tsd)
 *       +tcache_slow_ptr_off -> tcache_slow_t
 *            +tcache_slow_tcache_off     back to the tcache (checked)
 *            +tcache_slow_arena_off      arena_t *
 *            +tcache_slow_dyn_alloc_off  the tcache's own allocation
 *            +tcache_slow_descriptor_off its link in the arena's ring
 *       +tcache_bins_off cache_bin_t[tcache_nbins_max], cache_bin_size each
 *            +cache_bin_stack_head_off     void **stack_head
 *            +cache_bin_low_bits_empty_off uint16_t
 *            n = (uint16_t)(low_bits_empty - stack_head) / 8 pointers
 *            from stack_head up (at most cache_bin_ncached_max)
 *
 *   arenas[arenas_max] -> arena_t
 *     +arena_ind_off           its index (must equal its slot)
 *     +arena_descriptor_ql_off ring of cache_bin_array_descriptor_t, one per
 *                              tcache: +descriptor_next_off,
 *                              +descriptor_bins_off (its cache_bin_t array)
 *     +arena_base_off -> base_t +base_blocks_off -> base_block_t list
 *                              (+base_block_size_off, +base_block_next_off)
 * arena_t's bins (bin_t) are not read: every slab is reached through the
 * extent map, and so is every large extent.
 *
 * Two halves.  Discovery (hs_jemalloc_walk, discover()) reads the core's
 * modules and fills a struct hs_jemalloc_known: steps 1 and 2, each
 * thread's tsd (fs_base -> the TLS block, find_tsds) and the symbol
 * arenas.  The walk proper (hs_jemalloc_walk_known, walk()) reads only the
 * core, from steps 3 on; the unit test tests/unit/test_jemalloc.c calls it
 * on a synthetic core with a hand-built hs_jemalloc_known.
 *  1. version, layouts, size classes.
 *  2. the extent map (find_emap): its symbol, accepted only if plausible;
 *     else capstone disassembles exported functions (malloc_usable_size,
 *     sallocx, free, ...) and tries each RIP-relative target in the
 *     library's writable data.  Plausible: of up to 4096 leaf words, those
 *     whose extent covers their key outnumber the others 100 to 1 (and are
 *     not none), and every node is readable; the most good leaves win.
 *  3. threads(): each tsd becomes a metadata region; a tcache whose
 *     tcache_slow points back is read (cached pointers -> j->cached,
 *     dyn_alloc -> j->internal); arenas from the tsd and the tcache.
 *  4. find_arenas(): the known array (the symbol arenas), else the place
 *     in the library's writable data where every arena known from step 3
 *     sits at its own index (most arenas at their own index wins).
 *  5. arena_rings(): each arena's descriptor ring (every tcache, explicit
 *     ones too) and its base blocks (metadata regions, metadata_blocks).
 *  6. metadata regions: a shared library's writable data; for a copy in
 *     the executable, only the rtree.
 *  7. the rtree in key order; visit_extent() once per edata_t, which must
 *     lie below 2^lg_vaddr and be under 2^44 bytes (struct hs_alloc's size):
 *       active slab   szind < nbins; nregs = size / sizes[szind]; a block
 *                     per region, free when its bitmap bit is set (the
 *                     count is compared with nfree); used ones are
 *                     tcache if cached, internal if jemalloc's, else small
 *       active large  one block at e_addr of sizes[szind] bytes (large,
 *                     tcache or internal), which must fit in the extent
 *       dirty, muzzy, retained: the whole extent, a free page run
 *     An arena index absent from the arenas array counts as unassociated.
 *
 * Stats recomputed into heap->stats, a struct hs_je_stats (jemalloc's
 * own counters are not read): allocated = used regions and large usable
 * sizes, thread caches' included; active = bytes of active extents; dirty,
 * muzzy, retained = bytes of extents in that state; metadata_blocks; per
 * arena and class, heap->classes.  An arena's system_mem excludes retained extents.
 *
 * Partial (heap->partial, with a warning): an unreadable or implausible
 * thread cache bin; no arenas array; an array slot whose arena gives
 * another index; a broken descriptor ring or base block list; extent map
 * nodes not in the core; extents unreadable, inconsistent or in
 * transition; extents of unknown arenas; nfree disagreeing with bitmaps.
 * Warned only: a TLS block of another size than tsd_size; a table row
 * used for another build of its version.  No layouts, a size table that
 * is not jemalloc's, or no extent map: an error, and no heap.
 */
#include "analyzers/alloc/disasm.h"
#include "analyzers/alloc/jemalloc.h"
#include "formats/jelayout.h"
#include "src/alloc.h"
#include "src/fmt.h"
#include "src/hashtab.h"
#include "src/sort.h"

#include <inttypes.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of 64-bit values (src/hashtab.h; 0 is never a member) ---- */

HS_HASH_SET(u64set)

/* ---- the walk ---- */

enum { ST_ACTIVE, ST_DIRTY, ST_MUZZY, ST_RETAINED };

/* One struct for both halves: discovery (hs_jemalloc_walk) fills dw, lib,
 * version and size_tab; the walk proper (hs_jemalloc_walk_known) has k,
 * and neither dw nor lib. */
struct je {
	const struct hs_core *core;
	struct hs_dwarf *dw;
	struct hs_log *log;
	uint64_t visited;           /* extents visited, for progress */
	struct hs_module *lib;
	const struct hs_jemalloc_known *k;
	const struct hs_je_layout *L;
	struct hs_je_layout dwarf_layout;  /* L points here when from DWARF */
	char *version;
	uint64_t *size_tab;         /* owned: read from the core, or computed */
	const uint64_t *sizes;      /* usable size per size index */
	uint64_t emap;              /* emap_t (its rtree) */
	uint64_t arenas_at;         /* the arenas array, 0 if not found */
	uint64_t *arenas;           /* arena_t per index (0: none) */
	uint32_t narenas;           /* highest index + 1 */
	struct u64set cached;       /* pointers held in thread caches */
	struct u64set tcaches;      /* cache_bin_t arrays read */
	struct u64set edatas;       /* extents seen */
	struct u64set internal;     /* jemalloc's own allocations (tcaches) */
	struct hs_heap *heap;
	struct hs_arena unassociated;  /* extents of no arena */
	struct hs_size_class *classes;   /* [arena * nbins + szind], grown by arena */
	struct hs_je_stats stats;       /* the heap's, once the walk is done */
	uint32_t class_arenas;
	uint64_t nfree_mismatch, bad_extents;
	uint64_t unknown_arena;     /* extents naming an arena not in the array */
};

static bool rd32(const struct je *j, uint64_t addr, uint32_t *v)
{
	return hs_core_read_quiet(j->core, addr, v, 4);
}

static bool rd16(const struct je *j, uint64_t addr, uint16_t *v)
{
	return hs_core_read_quiet(j->core, addr, v, 2);
}

/* A symbol of the module under any of jemalloc's private prefixes. */
static bool je_symbol(struct je *j, const char *suffix, uint64_t *addr,
		      uint64_t *size)
{
	static const char *const prefixes[] = {"je_", "_rjem_je_", ""};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		char name[128];
		snprintf(name, sizeof(name), "%s%s", prefixes[i], suffix);
		struct hs_error *err = hs_dwarf_symbol(j->dw, j->lib, name, addr,
						       size, NULL);
		if (!err)
			return true;
		hs_error_destroy(err);
	}
	return false;
}

bool hs_jemalloc_detect(struct hs_dwarf *dw, struct hs_module **lib)
{
	if ((*lib = hs_dwarf_find_module(dw, "libjemalloc")))
		return true;
	/* a renamed library or a static copy: jemalloc's own entry point
	 * mallctl (exported, under any public prefix), or its extent map in a
	 * symbol table */
	static const char *const entry[] = {"mallctl", "je_mallctl", "_rjem_mallctl"};
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		struct je j = {.dw = dw, .lib = m};
		uint64_t a;
		/* a build in the layout table, whatever its file is called */
		for (size_t k = 0; k < hs_je_nlayouts && m->build_id; k++)
			if (!strcmp(hs_je_layouts[k].build_id, m->build_id)) {
				*lib = m;
				return true;
			}
		for (size_t k = 0; k < sizeof(entry) / sizeof(entry[0]); k++) {
			HS_AUTO_ERROR *err = hs_dwarf_symbol(dw, m, entry[k], &a, NULL, NULL);
			if (!err) {
				*lib = m;
				return true;
			}
		}
		if (m->is_exe && je_symbol(&j, "arena_emap_global", &a, NULL)) {
			*lib = m;
			return true;
		}
	}
	/* a stripped static copy: jemalloc's own messages in the executable */
	for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		if (!m->is_exe)
			continue;
		char *msg = hs_dwarf_find_string(dw, m, "<jemalloc>: ");
		free(msg);
		if (msg) {
			*lib = m;
			return true;
		}
	}
	return false;
}

/* "5.3.0-0-g<40 hex>" in the library's read-only data. */
static char *find_version(struct je *j)
{
	uint64_t bias;
	Elf *elf = hs_dwarf_module_elf(j->dw, j->lib, &bias);
	if (!elf)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & (SHF_EXECINSTR | SHF_WRITE)) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		const char *p = d->d_buf, *end = p + d->d_size;
		for (const char *s = p; s < end; s++) {
			if (s > p && s[-1] != '\0')
				continue;
			const char *e = memchr(s, '\0', (size_t)(end - s));
			if (!e)
				break;
			size_t len = (size_t)(e - s);
			/* digits.digits.digits-digits-g + 40 hex */
			if (len < 48 || len > 64 || s[0] < '0' || s[0] > '9')
				continue;
			const char *g = strstr(s, "-g");
			if (!g || (size_t)(e - g) != 42)
				continue;
			int dots = 0, dashes = 0;
			bool ok = true;
			for (const char *c = s; c < g && ok; c++) {
				if (*c == '.')
					dots++;
				else if (*c == '-')
					dashes++;
				else if (*c < '0' || *c > '9')
					ok = false;
			}
			for (const char *c = g + 2; c < e && ok; c++)
				ok = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f');
			if (ok && dots == 2 && dashes == 1)
				return strndup(s, len);
		}
	}
	return NULL;
}

/* ---- layouts from DWARF (a -g build, or a debug file) ---- */

struct dl {
	struct je *j;
	struct hs_error *err;
};

static uint32_t dl_member(struct dl *d, const char *type, const char *member,
			  uint64_t *size)
{
	const struct hs_layout *l;
	uint64_t off = 0;
	if (d->err)
		return 0;
	if (!(d->err = hs_dwarf_layout(d->j->dw, d->j->lib, type, &l)))
		d->err = hs_layout_member(l, member, &off, size);
	return (uint32_t)off;
}

static uint32_t dl_size(struct dl *d, const char *type)
{
	const struct hs_layout *l;
	if (d->err)
		return 0;
	if ((d->err = hs_dwarf_layout(d->j->dw, d->j->lib, type, &l)))
		return 0;
	return (uint32_t)l->size;
}

static uint32_t lg2(uint64_t x)
{
	uint32_t r = 0;
	while (x > 1) {
		x >>= 1;
		r++;
	}
	return r;
}

/* Struct offsets from DWARF; the size classes from the size table in the
 * core (jemalloc fills it at start-up); the rest (edata_t's bit fields,
 * the rtree's shape) from the rules of jemalloc 5.3's headers applied to
 * those numbers.  Returns false (and no error) when the module has no
 * DWARF for jemalloc. */
static struct hs_error *layout_from_dwarf(struct je *j, bool *found)
{
	struct hs_je_layout *L = &j->dwarf_layout;
	struct dl d = {.j = j};
	const struct hs_layout *probe;
	*found = false;
	struct hs_error *err = hs_dwarf_layout(j->dw, j->lib, "struct edata_s", &probe);
	if (err) {
		bool nomem = err == &hs_error_nomem;
		hs_error_destroy(err);
		return nomem ? &hs_error_nomem : NULL;
	}
	uint64_t tab, tabsize, infos, infosize, arenas, arenasize, sz;
	if (!je_symbol(j, "sz_index2size_tab", &tab, &tabsize) || !tabsize ||
	    !je_symbol(j, "bin_infos", &infos, &infosize) ||
	    !je_symbol(j, "arenas", &arenas, &arenasize))
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "jemalloc in %s has DWARF but not the symbols sz_index2size_tab, bin_infos and arenas",
				       j->lib->name);
	memset(L, 0, sizeof(*L));
	L->version = j->version ? j->version : "unknown";
	L->build_id = j->lib->build_id ? j->lib->build_id : "";
	L->origin = "the library's own DWARF";
	L->nsizes = (uint32_t)(tabsize / 8);
	uint32_t bininfo = dl_size(&d, "struct bin_info_s");
	L->nbins = bininfo ? (uint32_t)(infosize / bininfo) : 0;
	L->arenas_max = (uint32_t)(arenasize / 8);
	j->size_tab = hs_calloc(L->nsizes, sizeof(uint64_t));
	if (!j->size_tab)
		return &hs_error_nomem;
	if (!hs_core_read_quiet(j->core, tab, j->size_tab, (size_t)L->nsizes * 8) ||
	    L->nbins == 0 || L->nbins >= L->nsizes || !j->size_tab[0])
		return hs_error_create(HS_ERR_CORRUPT,
				       "jemalloc in %s: its size table at %#llx is not in the core, or not filled",
				       j->lib->name, (unsigned long long)tab);
	L->large_minclass = (uint32_t)j->size_tab[L->nbins];
	L->lg_tiny_min = lg2(j->size_tab[0]);
	L->lg_ngroup = 2;
	L->lg_page = lg2(L->large_minclass) - L->lg_ngroup;
	L->lg_quantum = lg2(j->size_tab[1]);
	/* the table is the core's data, and these numbers become shift
	 * counts below (slab_maxregs, the nfree field's width): they must be
	 * jemalloc's (sc.h: the first large class is 1 << (LG_PAGE +
	 * SC_LG_NGROUP); tiny <= quantum <= page) */
	if (j->size_tab[0] != 1ull << L->lg_tiny_min ||
	    j->size_tab[1] != 1ull << L->lg_quantum ||
	    L->lg_tiny_min > L->lg_quantum || L->lg_page < L->lg_quantum ||
	    L->lg_page < 12 || L->lg_page > 21 ||
	    j->size_tab[L->nbins] != 1ull << (L->lg_page + L->lg_ngroup))
		return hs_error_create(HS_ERR_CORRUPT,
				       "jemalloc in %s: its size table at %#llx does not hold jemalloc's size classes (%llu, %llu, ..., %llu)",
				       j->lib->name, (unsigned long long)tab,
				       (unsigned long long)j->size_tab[0],
				       (unsigned long long)j->size_tab[1],
				       (unsigned long long)j->size_tab[L->nbins]);

	L->rtree_size = dl_size(&d, "struct rtree_s");
	L->rtree_root_off = dl_member(&d, "struct rtree_s", "root", &sz);
	uint32_t bits0 = lg2(sz / 8);
	L->emap_rtree_off = dl_member(&d, "struct emap_s", "rtree", NULL);
	L->edata_size = dl_size(&d, "struct edata_s");
	L->edata_addr_off = dl_member(&d, "struct edata_s", "e_addr", NULL);
	L->edata_size_off = dl_member(&d, "struct edata_s", "e_size_esn", NULL);
	L->edata_bitmap_off = dl_member(&d, "struct edata_s", "e_slab_data", &sz);
	L->bitmap_groups_max = (uint32_t)(sz / 8);
	L->tsd_size = dl_size(&d, "struct tsd_s");
	L->tsd_tcache_off = dl_member(&d, "struct tsd_s",
				      "cant_access_tsd_items_directly_use_a_getter_or_setter_tcache", NULL);
	L->tsd_arena_off = dl_member(&d, "struct tsd_s",
				     "cant_access_tsd_items_directly_use_a_getter_or_setter_arena", NULL);
	L->tsd_state_off = dl_member(&d, "struct tsd_s", "state", NULL);
	L->tcache_slow_ptr_off = dl_member(&d, "struct tcache_s", "tcache_slow", NULL);
	L->tcache_bins_off = dl_member(&d, "struct tcache_s", "bins", &sz);
	L->cache_bin_size = dl_size(&d, "struct cache_bin_s");
	L->tcache_nbins_max = L->cache_bin_size ? (uint32_t)(sz / L->cache_bin_size) : 0;
	L->cache_bin_stack_head_off = dl_member(&d, "struct cache_bin_s", "stack_head", NULL);
	L->cache_bin_low_bits_empty_off = dl_member(&d, "struct cache_bin_s", "low_bits_empty", NULL);
	L->cache_bin_ncached_max = 8191;
	L->tcache_slow_arena_off = dl_member(&d, "struct tcache_slow_s", "arena", NULL);
	L->tcache_slow_tcache_off = dl_member(&d, "struct tcache_slow_s", "tcache", NULL);
	L->tcache_slow_descriptor_off = dl_member(&d, "struct tcache_slow_s", "cache_bin_array_descriptor", NULL);
	L->tcache_slow_dyn_alloc_off = dl_member(&d, "struct tcache_slow_s", "dyn_alloc", NULL);
	L->descriptor_next_off = dl_member(&d, "struct cache_bin_array_descriptor_s", "link", NULL);
	L->descriptor_bins_off = dl_member(&d, "struct cache_bin_array_descriptor_s", "bins", NULL);
	L->arena_size = dl_size(&d, "struct arena_s");
	L->arena_ind_off = dl_member(&d, "struct arena_s", "ind", NULL);
	L->arena_descriptor_ql_off = dl_member(&d, "struct arena_s", "cache_bin_array_descriptor_ql", NULL);
	L->arena_base_off = dl_member(&d, "struct arena_s", "base", NULL);
	L->base_blocks_off = dl_member(&d, "struct base_s", "blocks", NULL);
	L->base_block_size_off = dl_member(&d, "struct base_block_s", "size", NULL);
	L->base_block_next_off = dl_member(&d, "struct base_block_s", "next", NULL);
	if (d.err)
		return d.err;

	/* the rtree: which height and address width give this root size */
	for (uint32_t vaddr = 48; vaddr <= 57 && !L->rtree_height; vaddr += 9)
		for (uint32_t h = 1; h <= 3 && !L->rtree_height; h++) {
			uint32_t nsb = vaddr - L->lg_page;
			if (nsb / h != bits0)
				continue;
			L->lg_vaddr = vaddr;
			L->rtree_height = h;
			L->rtree_bits0 = nsb / h;
			if (h == 2)
				L->rtree_bits1 = nsb / 2 + nsb % 2;
			if (h == 3) {
				L->rtree_bits1 = nsb / 3 + nsb % 3 / 2;
				L->rtree_bits2 = nsb / 3 + nsb % 3 - nsb % 3 / 2;
			}
		}
	uint32_t lg_nsizes = lg2(L->nsizes - 1) + 1;  /* LG_CEIL */
	L->rtree_leaf_compact = 64 - L->lg_vaddr >= lg_nsizes;
	if (!L->rtree_height || !L->rtree_leaf_compact)
		return hs_error_create(HS_ERR_UNSUPPORTED,
				       "jemalloc in %s: an extent map of %u root bits for %u-bit pages is not a shape heapsift reads",
				       j->lib->name, bits0, L->lg_page);
	L->rtree_leaf_state_shift = 2;
	/* edata_t's e_bits, as jemalloc 5.3's edata.h lays them out */
	L->bits_arena_shift = 0;
	L->bits_arena_width = 12;
	L->bits_slab_shift = 12;
	L->bits_state_shift = 17;
	L->bits_state_width = 3;
	L->bits_szind_shift = 20;
	L->bits_szind_width = lg_nsizes;
	L->bits_nfree_shift = 20 + lg_nsizes;
	L->bits_nfree_width = L->lg_page - L->lg_tiny_min + 1;
	L->slab_maxregs = 1u << (L->lg_page - L->lg_tiny_min);
	j->L = L;
	*found = true;
	return NULL;
}

/* The row for this library: same build-id; else same version (said). */
static struct hs_error *pick_layout(struct je *j)
{
	const char *bid = j->lib->build_id;
	for (size_t i = 0; i < hs_je_nlayouts; i++)
		if (bid && !strcmp(hs_je_layouts[i].build_id, bid)) {
			j->L = &hs_je_layouts[i];
			return NULL;
		}
	for (size_t i = 0; i < hs_je_nlayouts; i++) {
		const struct hs_je_layout *L = &hs_je_layouts[i];
		if (!j->version || strcmp(L->version, j->version))
			continue;
		/* another build of the same version: its configuration may
		 * differ; the thread state (the library's whole TLS block)
		 * must at least have the row's size */
		uint64_t memsz = 0, align;
		char why[96];
		if (j->lib->is_exe)
			snprintf(why, sizeof(why), "a copy linked into the executable, whose TLS block is not jemalloc's alone");
		else if (!hs_dwarf_module_tls(j->dw, j->lib, &memsz, &align) || memsz != L->tsd_size)
			snprintf(why, sizeof(why), "its TLS block is %llu bytes, theirs %u",
				 (unsigned long long)memsz, L->tsd_size);
		else
			why[0] = '\0';
		if (why[0])
			return hs_error_create(HS_ERR_UNSUPPORTED,
					       "jemalloc %s (%s, build-id %s) is not in heapsift's layout table, and the layouts of the same version (%s) do not fit it (%s); give heapsift its debug info, or generate a row with scripts/jemalloc-layout.sh",
					       j->version, j->lib->name, bid ? bid : "unknown",
					       L->origin, why);
		j->L = L;
		hs_log_warn(j->log,
			    "jemalloc %s (build-id %s) is not in heapsift's layout table; using the layouts of the same version built as %s: the walk's consistency checks decide",
			    j->version, bid ? bid : "unknown", j->L->origin);
		return NULL;
	}
	return hs_error_create(HS_ERR_UNSUPPORTED,
			       "jemalloc %s (%s, build-id %s): no layouts for this build in heapsift's table (it knows %s %s); generate them with scripts/jemalloc-layout.sh",
			       j->version ? j->version : "of unknown version",
			       j->lib->name, bid ? bid : "unknown",
			       hs_je_layouts[0].version, hs_je_layouts[0].origin);
}

/* Usable size per size index, from jemalloc's size-class rule: tiny
 * classes, then groups of 2^lg_ngroup classes, each group's spacing
 * doubling. */
static struct hs_error *size_classes(struct je *j)
{
	const struct hs_je_layout *L = j->L;
	j->size_tab = hs_calloc(L->nsizes, sizeof(uint64_t));
	if (!j->size_tab)
		return &hs_error_nomem;
	uint32_t i = 0;
	for (uint32_t lg = L->lg_tiny_min; lg < L->lg_quantum && i < L->nsizes; lg++)
		j->size_tab[i++] = 1ull << lg;
	uint32_t ngroup = 1u << L->lg_ngroup;
	/* the first group: quantum-spaced from one quantum */
	for (uint32_t k = 1; k <= ngroup && i < L->nsizes; k++)
		j->size_tab[i++] = (uint64_t)k << L->lg_quantum;
	for (uint32_t lg_base = L->lg_quantum + L->lg_ngroup; i < L->nsizes && lg_base < 63; lg_base++)
		for (uint32_t k = 1; k <= ngroup && i < L->nsizes; k++)
			j->size_tab[i++] = (1ull << lg_base) +
				((uint64_t)k << (lg_base - L->lg_ngroup));
	/* the first large class is a fixed point of the rule */
	if (L->nbins >= L->nsizes || j->size_tab[L->nbins] != L->large_minclass)
		return hs_error_create(HS_ERR_CORRUPT,
				       "jemalloc size classes: class %u is %llu bytes, the layout says %u",
				       L->nbins, (unsigned long long)j->size_tab[L->nbins],
				       L->large_minclass);
	return NULL;
}

/* ---- the extent map ---- */

static uint32_t level_bits(const struct hs_je_layout *L, uint32_t level)
{
	return level == 0 ? L->rtree_bits0 : level == 1 ? L->rtree_bits1 : L->rtree_bits2;
}

/* Decodes a compact leaf word: the extent's edata_t, or 0. */
static uint64_t leaf_edata(const struct hs_je_layout *L, uint64_t bits)
{
	uint32_t nhib = 64 - L->lg_vaddr;
	int64_t sx = (int64_t)(bits << nhib) >> nhib;
	return (uint64_t)sx & ~(uint64_t)(L->edata_size - 1);
}

struct rtree_visit {
	/* called for each non-zero leaf word, keys in increasing order;
	 * false stops the walk */
	bool (*fn)(struct je *j, void *arg, uint64_t key, uint64_t bits);
	void *arg;
	uint64_t nodes_bad;     /* child pointers that are not readable */
};

static bool rtree_level(struct je *j, struct rtree_visit *rv, uint64_t node,
			uint32_t level, uint64_t key)
{
	const struct hs_je_layout *L = j->L;
	uint32_t bits = level_bits(L, level);
	uint64_t n = 1ull << bits;
	const uint64_t *a = node % 8 ? NULL : hs_core_ptr(j->core, node, n * 8);
	if (!a) {
		rv->nodes_bad++;
		return true;
	}
	hs_core_touch(j->core, node, n * 8);
	uint32_t cum = 64 - L->lg_vaddr;
	for (uint32_t l = 0; l <= level; l++)
		cum += level_bits(L, l);
	uint32_t shift = 64 - cum;
	bool last = level + 1 == L->rtree_height;
	for (uint64_t i = 0; i < n; i++) {
		if (!a[i])
			continue;
		uint64_t k = key | (i << shift);
		if (last) {
			if (!rv->fn(j, rv->arg, k, a[i]))
				return false;
		} else if (a[i] % 8) {
			rv->nodes_bad++;
		} else if (!rtree_level(j, rv, a[i], level + 1, k)) {
			return false;
		}
	}
	return true;
}

static bool rtree_walk(struct je *j, uint64_t emap, struct rtree_visit *rv)
{
	uint64_t root = emap + j->L->emap_rtree_off + j->L->rtree_root_off;
	return rtree_level(j, rv, root, 0, 0);
}

/* Checking a candidate extent map: leaf words whose extent covers the key. */
struct check {
	uint64_t good, bad, seen;
};

static bool check_leaf(struct je *j, void *arg, uint64_t key, uint64_t bits)
{
	struct check *c = arg;
	const struct hs_je_layout *L = j->L;
	uint64_t e = leaf_edata(L, bits), addr, size;
	if (!e)
		return true;  /* cleared: no extent, szind "none" */
	if (hs_core_read_u64(j->core, e + L->edata_addr_off, &addr) &&
	    hs_core_read_u64(j->core, e + L->edata_size_off, &size)) {
		uint64_t page = ~((1ull << L->lg_page) - 1);
		uint64_t base = addr & page;
		size &= page;
		if (key >= base && key - base < size)
			c->good++;
		else
			c->bad++;
	} else {
		c->bad++;
	}
	return ++c->seen < 4096;
}

static bool emap_plausible(struct je *j, uint64_t cand, struct check *c)
{
	memset(c, 0, sizeof(*c));
	struct rtree_visit rv = {.fn = check_leaf, .arg = c};
	rtree_walk(j, cand, &rv);
	return c->good > 0 && c->bad * 100 <= c->good && !rv.nodes_bad;
}

/* Is addr in a writable part of the library's image? */
static bool in_lib_data(const struct je *j, uint64_t addr)
{
	if (addr < j->lib->start || addr >= j->lib->end)
		return false;
	const struct hs_core_segment *s = hs_core_find_segment(j->core, addr);
	return s && (s->flags & HS_SEG_W);
}

/* in_lib_data, as hs_disasm_rip_refs' filter */
static bool in_lib_data_ref(const void *j, uint64_t addr)
{
	return in_lib_data(j, addr);
}

/* RIP-relative data addresses that exported function fn refers to. */
static size_t rip_targets(struct je *j, struct hs_disasm *cs, const char *fn,
			  uint64_t *out, size_t max)
{
	static const char *const pub[] = {"", "je_"};
	for (size_t i = 0; i < 2; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s%s", pub[i], fn);
		size_t k = 0;
		if (hs_disasm_function_refs(cs, j->dw, j->lib, j->core, name, in_lib_data_ref, j,
					    out, max, &k, NULL))
			return k;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The extent map: its symbol, or the data address that exported functions
 * (which all look pointers up in it) refer to and that holds an rtree whose
 * leaves describe extents covering their keys. */
static struct hs_error *find_emap(struct je *j)
{
	uint64_t a;
	struct check c;
	if (je_symbol(j, "arena_emap_global", &a, NULL)) {
		if (emap_plausible(j, a, &c)) {
			j->emap = a;
			return NULL;
		}
		return hs_error_create(HS_ERR_CORRUPT,
				       "jemalloc's extent map at %#llx does not describe extents (%llu of %llu leaf entries fit): corrupt, or another layout",
				       (unsigned long long)a, (unsigned long long)c.good,
				       (unsigned long long)(c.good + c.bad));
	}
	struct hs_disasm *cs;
	struct hs_error *derr = hs_disasm_open(&cs);
	if (derr)
		return derr;
	static const char *const fns[] = {
		"malloc_usable_size", "sallocx", "free", "sdallocx", "dallocx",
		"rallocx", "xallocx", "realloc",
	};
	uint64_t cand[512];
	size_t nc = 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		nc += rip_targets(j, cs, fns[i], cand + nc, 512 - nc);
	hs_disasm_close(cs);
	hs_sort(cand, nc, sizeof(*cand), cmp_u64);
	uint64_t best = 0, best_good = 0;
	for (size_t i = 0; i < nc; i++) {
		if (i && cand[i] == cand[i - 1])
			continue;
		/* the reference may be to the rtree inside the emap */
		uint64_t e = cand[i] - j->L->emap_rtree_off;
		if (e % 8)
			continue;
		if (emap_plausible(j, e, &c) && c.good > best_good) {
			best = e;
			best_good = c.good;
		}
	}
	if (!nc)
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "jemalloc %s (%s, build-id %s): its extent map was not found: the library's code could not be read to look for it (is the file at its path, or under --sysroot?)",
				       j->version ? j->version : "of unknown version", j->lib->name,
				       j->lib->build_id ? j->lib->build_id : "unknown");
	if (!best)
		return hs_error_create(HS_ERR_NOT_FOUND,
				       "jemalloc %s (%s, build-id %s): its extent map was not found (%zu candidate addresses from its exported functions, none holds an extent map); the core may lack the library's data, or this build differs",
				       j->version ? j->version : "of unknown version", j->lib->name,
				       j->lib->build_id ? j->lib->build_id : "unknown", nc);
	j->emap = best;
	return NULL;
}

/* ---- threads, arenas, thread caches ---- */

static bool arena_ok(struct je *j, uint64_t a, uint32_t *ind)
{
	return a && !(a % 8) && rd32(j, a + j->L->arena_ind_off, ind) &&
	       *ind < j->L->arenas_max;
}

static struct hs_error *note_arena(struct je *j, uint64_t a, uint32_t ind)
{
	if (ind >= j->narenas) {
		uint64_t *v = hs_realloc(j->arenas, (ind + 1) * sizeof(*v));
		if (!v)
			return &hs_error_nomem;
		memset(v + j->narenas, 0, (ind + 1 - j->narenas) * sizeof(*v));
		j->arenas = v;
		j->narenas = ind + 1;
	}
	j->arenas[ind] = a;
	return NULL;
}

/* Reads one tcache (its tcache_slow_t and cache_bin_t array): the cached
 * pointers join j->cached; its own allocation (the bins' stacks, and for
 * an explicit tcache the tcache itself) joins j->internal: the stacks keep
 * stale pointers below their heads, which must not make blocks reachable. */
static struct hs_error *read_tcache(struct je *j, uint64_t slow, uint64_t bins)
{
	const struct hs_je_layout *L = j->L;
	bool added;
	uint64_t dyn;
	if (u64set_add(&j->tcaches, bins, &added))
		return &hs_error_nomem;
	if (!added)
		return NULL;
	if (slow && hs_core_read_u64(j->core, slow + L->tcache_slow_dyn_alloc_off, &dyn) && dyn &&
	    u64set_add(&j->internal, dyn, NULL))
		return &hs_error_nomem;
	for (uint32_t b = 0; b < L->tcache_nbins_max; b++) {
		uint64_t cb = bins + (uint64_t)b * L->cache_bin_size, head;
		uint16_t empty;
		if (!hs_core_read_u64(j->core, cb + L->cache_bin_stack_head_off, &head) ||
		    !rd16(j, cb + L->cache_bin_low_bits_empty_off, &empty)) {
			hs_log_warn(j->log, "jemalloc thread cache at %#llx: bin %u is not in the core",
				    (unsigned long long)bins, b);
			j->heap->partial = true;
			return NULL;
		}
		uint16_t diff = (uint16_t)(empty - (uint16_t)head);
		uint32_t n = diff / 8;
		if (!n)
			continue;
		if (diff % 8 || n > L->cache_bin_ncached_max) {
			hs_log_warn(j->log, "jemalloc thread cache at %#llx: bin %u claims %u cached pointers; skipped",
				    (unsigned long long)bins, b, n);
			j->heap->partial = true;
			continue;
		}
		for (uint32_t k = 0; k < n; k++) {
			uint64_t p;
			if (!hs_core_read_u64(j->core, head + 8ull * k, &p)) {
				hs_log_warn(j->log, "jemalloc thread cache at %#llx: bin %u's stack is not in the core",
					    (unsigned long long)bins, b);
				j->heap->partial = true;
				break;
			}
			if (p && u64set_add(&j->cached, p, NULL))
				return &hs_error_nomem;
		}
	}
	return NULL;
}

/* Each thread's tsd: the library's TLS block (from its fs_base), plus
 * tsd_tls's offset when that symbol exists.  *ret: one per thread of the
 * core, 0 where there is none. */
static struct hs_error *find_tsds(struct je *j, uint64_t **ret)
{
	const struct hs_je_layout *L = j->L;
	uint64_t tsd_off = 0, memsz, align;
	uint64_t v;
	if (je_symbol(j, "tsd_tls", &v, NULL))
		tsd_off = v;  /* TLS symbols: offsets in the block */
	else if (hs_dwarf_module_tls(j->dw, j->lib, &memsz, &align) && memsz != L->tsd_size)
		hs_log_warn(j->log, "jemalloc's TLS block is %llu bytes, its tsd %u: the thread caches may be misread",
			    (unsigned long long)memsz, L->tsd_size);
	uint64_t *tsd = hs_calloc(j->core->nthreads + 1, sizeof(*tsd));
	if (!tsd)
		return &hs_error_nomem;
	for (size_t t = 0; t < j->core->nthreads; t++) {
		uint64_t fs = j->core->threads[t].regs[HS_REG_FS_BASE], block;
		if (fs && hs_dwarf_tls_block(j->dw, j->core, j->lib, fs, &block))
			tsd[t] = block + tsd_off;
	}
	*ret = tsd;
	return NULL;
}

/* Each thread's tsd: its tcache and arena. */
static struct hs_error *threads(struct je *j)
{
	const struct hs_je_layout *L = j->L;
	for (size_t t = 0; t < j->core->nthreads && j->k->tsd; t++) {
		uint64_t tsd = j->k->tsd[t];
		if (!tsd)
			continue;
		uint64_t tcache = tsd + L->tsd_tcache_off, slow, back, arena;
		/* jemalloc's thread state is its metadata, not a root: its
		 * rtree cache keeps page keys (a 1 GiB-aligned key looks like
		 * a pointer to a block that starts there) */
		struct hs_error *rerr = hs_heap_add_region(j->heap, tsd, tsd + L->tsd_size,
							   HS_REGION_META);
		if (rerr)
			return rerr;
		uint32_t ind;
		if (hs_core_read_u64(j->core, tcache + L->tcache_slow_ptr_off, &slow) && slow &&
		    hs_core_read_u64(j->core, slow + L->tcache_slow_tcache_off, &back) && back == tcache) {
			struct hs_error *err = read_tcache(j, slow, tcache + L->tcache_bins_off);
			if (err)
				return err;
			if (hs_core_read_u64(j->core, slow + L->tcache_slow_arena_off, &arena) &&
			    arena_ok(j, arena, &ind) && (err = note_arena(j, arena, ind)))
				return err;
		}
		if (hs_core_read_u64(j->core, tsd + L->tsd_arena_off, &arena) && arena_ok(j, arena, &ind)) {
			struct hs_error *err = note_arena(j, arena, ind);
			if (err)
				return err;
		}
	}
	return NULL;
}

/* How many entries of a would-be arenas array at a are arenas that say
 * they have that index. */
static uint32_t arenas_at_index(struct je *j, uint64_t a)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < j->L->arenas_max; i++) {
		uint64_t p;
		uint32_t ind;
		if (!hs_core_read_u64(j->core, a + 8ull * i, &p))
			break;
		if (p && arena_ok(j, p, &ind) && ind == i)
			n++;
	}
	return n;
}

/* The arenas array: the known one (its symbol), or the place in the
 * library's data where every arena known from the threads sits at its own
 * index. */
static struct hs_error *find_arenas(struct je *j)
{
	const struct hs_je_layout *L = j->L;
	uint64_t at = 0, ref = 0;
	uint32_t refind = 0, best = 0;
	if (!(at = j->k->arenas)) {
		for (uint32_t i = 0; i < j->narenas && !ref; i++)
			if (j->arenas[i]) {
				ref = j->arenas[i];
				refind = i;
			}
		for (size_t s = 0; s < j->core->nsegs && ref && !at; s++) {
			const struct hs_core_segment *seg = &j->core->segs[s];
			if (!(seg->flags & HS_SEG_W) || seg->vaddr + seg->memsz <= j->k->lib_start ||
			    seg->vaddr >= j->k->lib_end)
				continue;
			uint64_t lo = seg->vaddr, hi = seg->vaddr + seg->memsz;
			const uint64_t *w = hs_core_ptr(j->core, lo, hi - lo);
			if (!w)
				continue;
			for (uint64_t k = refind; k < (hi - lo) / 8; k++) {
				if (w[k] != ref)
					continue;
				uint64_t cand = lo + 8 * (k - refind);
				bool all = true;
				for (uint32_t i = 0; i < j->narenas && all; i++) {
					uint64_t x;
					if (j->arenas[i] && (!hs_core_read_u64(j->core, cand + 8ull * i, &x) ||
							     x != j->arenas[i]))
						all = false;
				}
				/* another global may hold a known arena too (jemalloc
				 * keeps arena 0 in one): the array is the candidate
				 * with the most arenas at their own index */
				uint32_t n = all ? arenas_at_index(j, cand) : 0;
				if (n > best) {
					best = n;
					at = cand;
				}
			}
		}
	}
	if (!at) {
		hs_log_warn(j->log, "jemalloc's arenas array was not found: only the %s arenas threads use are read (explicit thread caches of other arenas are missed)",
			    j->narenas ? "" : "(no)");
		j->heap->partial = true;
		return NULL;
	}
	j->arenas_at = at;
	for (uint32_t i = 0; i < L->arenas_max; i++) {
		uint64_t a;
		uint32_t ind;
		if (!hs_core_read_u64(j->core, at + 8ull * i, &a))
			break;
		if (!a)
			continue;
		if (!arena_ok(j, a, &ind) || ind != i) {
			hs_log_warn(j->log, "jemalloc arena %u at %#llx does not say it is arena %u; skipped",
				    i, (unsigned long long)a, i);
			j->heap->partial = true;
			continue;
		}
		struct hs_error *err = note_arena(j, a, i);
		if (err)
			return err;
	}
	return NULL;
}

/* Every tcache an arena knows (thread and explicit ones): its ring of
 * cache bin array descriptors.  Then the arena's metadata blocks.  Both
 * lists are followed once per element: a ring that does not come back to
 * its head, or a block list that loops, is cut where it repeats. */
static struct hs_error *arena_rings(struct je *j)
{
	const struct hs_je_layout *L = j->L;
	struct u64set bases = {0}, seen = {0};
	struct hs_error *err = NULL;
	bool added;
	for (uint32_t i = 0; i < j->narenas && !err; i++) {
		uint64_t a = j->arenas[i], head, d, bins, base, blk;
		if (!a)
			continue;
		if (hs_core_read_u64(j->core, a + L->arena_descriptor_ql_off, &head) && head) {
			d = head;
			uint32_t n = 0;
			do {
				uint64_t cur = d;
				if (u64set_add(&seen, cur, &added)) {
					err = &hs_error_nomem;
					break;
				}
				if (!added || !hs_core_read_u64(j->core, cur + L->descriptor_bins_off, &bins) ||
				    !hs_core_read_u64(j->core, cur + L->descriptor_next_off, &d) || ++n > 1000000) {
					hs_log_warn(j->log, "jemalloc arena %u: its thread cache ring is broken after %u entries%s",
						    i, n, added ? "" : " (it loops)");
					j->heap->partial = true;
					break;
				}
				if (bins && (err = read_tcache(j, cur - L->tcache_slow_descriptor_off, bins)))
					break;
			} while (d && d != head);
		}
		if (err || !hs_core_read_u64(j->core, a + L->arena_base_off, &base) || !base)
			continue;
		if (u64set_add(&bases, base, &added)) {
			err = &hs_error_nomem;
			break;
		}
		if (!added || !hs_core_read_u64(j->core, base + L->base_blocks_off, &blk))
			continue;
		for (uint32_t n = 0; blk && n < 1000000; n++) {
			uint64_t size, next;
			if (u64set_add(&seen, blk, &added)) {
				err = &hs_error_nomem;
				break;
			}
			if (!added) {
				hs_log_warn(j->log, "jemalloc arena %u: its list of metadata blocks loops at %#llx; cut there",
					    i, (unsigned long long)blk);
				j->heap->partial = true;
				break;
			}
			if (!hs_core_read_u64(j->core, blk + L->base_block_size_off, &size) ||
			    !hs_core_read_u64(j->core, blk + L->base_block_next_off, &next) ||
			    size > (1ull << 40)) {
				hs_log_warn(j->log, "jemalloc arena %u: a metadata block at %#llx is unreadable",
					    i, (unsigned long long)blk);
				j->heap->partial = true;
				break;
			}
			if ((err = hs_heap_add_region(j->heap, blk, blk + size, HS_REGION_META)))
				break;
			j->stats.metadata_blocks += size;
			blk = next;
		}
	}
	u64set_free(&bases);
	u64set_free(&seen);
	return err;
}

/* ---- extents ---- */

/* heap->arenas is indexed by jemalloc's arena index; extents of no arena
 * ("unassociated") count in a slot after the last one. */
static struct hs_error *arena_of(struct je *j, uint32_t ind, struct hs_arena **ret)
{
	if (ind >= j->L->arenas_max) {
		*ret = &j->unassociated;
		return NULL;
	}
	while (j->heap->narenas <= ind) {
		uint32_t i = (uint32_t)j->heap->narenas;
		struct hs_arena a = {
			.addr = i < j->narenas ? j->arenas[i] : 0,
			.main = i == 0,
		};
		struct hs_error *err = hs_heap_add_arena(j->heap, &a, NULL);
		if (err)
			return err;
	}
	*ret = &j->heap->arenas[ind];
	return NULL;
}

static struct hs_error *add_block(struct je *j, struct hs_arena *ar, uint64_t addr,
				  uint64_t size, enum hs_je_where where, uint32_t arena)
{
	struct hs_alloc_in a = {
		.addr = addr, .size = size, .where = where,
		.arena = arena < j->L->arenas_max ? arena : HS_ARENA_NONE,
	};
	if (hs_where_state(a.where) == HS_STATE_USED) {
		ar->used_count++;
		ar->used_bytes += size;
	} else {
		ar->free_count++;
		ar->free_bytes += size;
	}
	return hs_heap_add(j->heap, &a);
}

static struct hs_error *slab(struct je *j, struct hs_arena *ar, uint64_t e,
			     uint64_t base, uint64_t size, uint32_t szind,
			     uint32_t nfree, uint32_t arena)
{
	const struct hs_je_layout *L = j->L;
	struct hs_je_stats *st = &j->stats;
	if (szind >= L->nbins) {
		j->bad_extents++;
		return NULL;
	}
	/* a size table read from the core may hold a class of 0 bytes */
	uint64_t reg = j->sizes[szind], nregs = reg ? size / reg : 0;
	if (!nregs || nregs > L->slab_maxregs) {
		j->bad_extents++;
		return NULL;
	}
	uint64_t bitmap[64];
	size_t groups = (size_t)(nregs + 63) / 64;
	if (groups > L->bitmap_groups_max || groups > 64 ||
	    !hs_core_read_quiet(j->core, e + L->edata_bitmap_off, bitmap, groups * 8)) {
		j->bad_extents++;
		return NULL;
	}
	uint64_t nf = 0;
	for (uint64_t r = 0; r < nregs; r++)
		nf += bitmap[r / 64] >> (r % 64) & 1;
	if (nf != nfree)
		j->nfree_mismatch++;
	struct hs_size_class *cl = NULL;
	if (arena < L->arenas_max) {
		if (arena >= j->class_arenas) {
			uint32_t na = arena + 1;
			struct hs_size_class *v = hs_realloc(j->classes,
							(size_t)na * L->nbins * sizeof(*v));
			if (!v)
				return &hs_error_nomem;
			memset(v + (size_t)j->class_arenas * L->nbins, 0,
			       (size_t)(na - j->class_arenas) * L->nbins * sizeof(*v));
			j->classes = v;
			j->class_arenas = na;
		}
		cl = &j->classes[(size_t)arena * L->nbins + szind];
		cl->arena = arena;
		cl->index = szind;
		cl->size = reg;
		cl->slabs++;
		cl->regions += nregs;
		cl->free += nf;
	}
	struct hs_error *err;
	for (uint64_t r = 0; r < nregs; r++) {
		uint64_t addr = base + r * reg;
		enum hs_je_where w;
		if (bitmap[r / 64] >> (r % 64) & 1) {
			w = HS_JE_SLAB;
		} else {
			/* jemalloc counts what thread caches hold as allocated */
			st->allocated += reg;
			w = u64set_has(&j->cached, addr) ? HS_JE_TCACHE :
			    u64set_has(&j->internal, addr) ? HS_JE_INTERNAL : HS_JE_SMALL;
			if (w == HS_JE_TCACHE && cl)
				cl->tcache++;
		}
		if ((err = add_block(j, ar, addr, reg, w, arena)))
			return err;
	}
	return NULL;
}

static bool visit_extent(struct je *j, void *arg, uint64_t key, uint64_t bits)
{
	(void)key;
	struct hs_error **errp = arg;
	if (!(++j->visited & 0xffff))
		hs_log_progress(j->log, "walking the heap", "extents", j->visited, 0);
	const struct hs_je_layout *L = j->L;
	struct hs_je_stats *st = &j->stats;
	uint64_t e = leaf_edata(L, bits);
	bool added;
	if (!e)
		return true;
	if (u64set_add(&j->edatas, e, &added)) {
		*errp = &hs_error_nomem;
		return false;
	}
	if (!added)
		return true;
	uint64_t ebits, addr, size;
	if (!hs_core_read_u64(j->core, e, &ebits) || !hs_core_read_u64(j->core, e + L->edata_addr_off, &addr) ||
	    !hs_core_read_u64(j->core, e + L->edata_size_off, &size)) {
		j->bad_extents++;
		return true;
	}
#define FIELD(name) ((uint32_t)((ebits >> L->bits_##name##_shift) & ((1ull << L->bits_##name##_width) - 1)))
	uint32_t arena = FIELD(arena), state = FIELD(state), szind = FIELD(szind),
		 nfree = FIELD(nfree);
	bool is_slab = ebits >> L->bits_slab_shift & 1;
#undef FIELD
	uint64_t pagemask = (1ull << L->lg_page) - 1;
	uint64_t base = addr & ~pagemask, vspace = 1ull << L->lg_vaddr;
	size &= ~pagemask;
	/* an extent lies in the address space, and its size fits a block
	 * (struct hs_alloc's 44 bits); inactive extents have no size class
	 * (szind == nsizes) */
	if (!size || base >= vspace || size > vspace - base || size >> 44 ||
	    (state == ST_ACTIVE && szind >= L->nsizes)) {
		j->bad_extents++;
		return true;
	}
	/* the arenas array lists every arena there is (a destroyed arena
	 * takes its extents with it): another index is a damaged extent,
	 * whose blocks count as unassociated rather than make arenas up to
	 * that index */
	if (j->arenas_at && arena < L->arenas_max &&
	    (arena >= j->narenas || !j->arenas[arena])) {
		j->unknown_arena++;
		arena = L->arenas_max;
	}
	struct hs_arena *ar;
	struct hs_error *err;
	if ((err = arena_of(j, arena, &ar)) ||
	    (err = hs_heap_begin_run(j->heap))) {
		*errp = err;
		return false;
	}
	if ((err = hs_heap_add_region(j->heap, base, base + size, HS_REGION_HEAP))) {
		*errp = err;
		return false;
	}
	if (state != ST_RETAINED)
		ar->system_mem += size;  /* retained: address space, not memory */
	switch (state) {
	case ST_ACTIVE:
		st->active += size;
		if (is_slab) {
			err = slab(j, ar, e, base, size, szind, nfree, arena);
		} else {
			uint64_t usize = j->sizes[szind];
			if (usize > base + size - addr) {
				j->bad_extents++;
				break;
			}
			st->allocated += usize;
			err = add_block(j, ar, addr, usize,
					u64set_has(&j->cached, addr) ? HS_JE_TCACHE :
					u64set_has(&j->internal, addr) ? HS_JE_INTERNAL :
					HS_JE_LARGE, arena);
		}
		break;
	case ST_DIRTY:
		st->dirty += size;
		err = add_block(j, ar, base, size, HS_JE_DIRTY, arena);
		break;
	case ST_MUZZY:
		st->muzzy += size;
		err = add_block(j, ar, base, size, HS_JE_MUZZY, arena);
		break;
	case ST_RETAINED:
		st->retained += size;
		err = add_block(j, ar, base, size, HS_JE_RETAINED, arena);
		break;
	default:
		/* being split or merged: a process stopped inside jemalloc */
		j->bad_extents++;
		break;
	}
	if (err) {
		*errp = err;
		return false;
	}
	return true;
}

static struct hs_error *walk(struct je *j)
{
	const struct hs_jemalloc_known *k = j->k;
	struct hs_error *err;
	j->heap->version = k->version ? strdup(k->version) : NULL;
	if ((err = threads(j)) || (err = find_arenas(j)) || (err = arena_rings(j)))
		return err;
	/* a shared libjemalloc's writable data is jemalloc's state alone (the
	 * program's pointers live elsewhere): metadata, not roots.  A copy
	 * linked into the executable shares its data with the program: there
	 * only the extent map is. */
	if (k->lib_is_exe &&
	    (err = hs_heap_add_region(j->heap, j->emap, j->emap + j->L->rtree_size,
				      HS_REGION_META)))
		return err;
	for (size_t i = 0; i < j->core->nsegs && !k->lib_is_exe; i++) {
		const struct hs_core_segment *seg = &j->core->segs[i];
		uint64_t lo = seg->vaddr > k->lib_start ? seg->vaddr : k->lib_start;
		uint64_t hi = seg->vaddr + seg->memsz < k->lib_end ?
			seg->vaddr + seg->memsz : k->lib_end;
		if ((seg->flags & HS_SEG_W) && lo < hi &&
		    (err = hs_heap_add_region(j->heap, lo, hi, HS_REGION_META)))
			return err;
	}
	j->heap->ntcaches = (uint32_t)j->tcaches.n;
	if (j->narenas) {
		struct hs_arena *ar;
		if ((err = arena_of(j, j->narenas - 1, &ar)))
			return err;
	}
	struct hs_error *verr = NULL;
	struct rtree_visit rv = {.fn = visit_extent, .arg = &verr};
	rtree_walk(j, j->emap, &rv);
	hs_log_progress_end(j->log);
	if (verr)
		return verr;
	if (rv.nodes_bad) {
		hs_log_warn(j->log, "jemalloc's extent map: %llu nodes are not in the core; their extents are missing",
			    (unsigned long long)rv.nodes_bad);
		j->heap->partial = true;
	}
	if (j->bad_extents) {
		hs_log_warn(j->log, "jemalloc: %llu extents are unreadable, inconsistent or in transition; skipped",
			    (unsigned long long)j->bad_extents);
		j->heap->partial = true;
	}
	if (j->unknown_arena) {
		hs_log_warn(j->log, "jemalloc: %llu extents name an arena the arenas array does not have; counted as unassociated",
			    (unsigned long long)j->unknown_arena);
		j->heap->partial = true;
	}
	if (j->nfree_mismatch) {
		hs_log_warn(j->log, "jemalloc: %llu slabs' free counts disagree with their bitmaps (the bitmaps were used)",
			    (unsigned long long)j->nfree_mismatch);
		j->heap->partial = true;
	}
	/* the classes that have slabs, in place, handed to the heap */
	size_t n = 0;
	for (size_t i = 0; i < (size_t)j->class_arenas * j->L->nbins; i++)
		if (j->classes[i].slabs)
			j->classes[n++] = j->classes[i];
	j->heap->classes = j->classes;
	j->heap->nclasses = n;
	j->classes = NULL;
	j->heap->page_size = 1ull << j->L->lg_page;
	j->heap->metadata_bytes = j->stats.metadata_blocks;
	j->stats.extent_map = j->emap;
	j->stats.arenas_array = j->arenas_at;
	j->stats.layout = j->L->origin;
	struct hs_je_stats *st = hs_malloc(sizeof(*st));
	if (!st)
		return &hs_error_nomem;
	*st = j->stats;
	j->heap->stats = st;
	return hs_heap_finish_partial(j->heap, j->log);
}

struct hs_error *hs_jemalloc_walk_known(const struct hs_core *core,
					const struct hs_jemalloc_known *k,
					struct hs_log *log, struct hs_heap **ret)
{
	struct je j = {.core = core, .log = log, .k = k, .L = k->layout,
		       .sizes = k->sizes, .emap = k->emap};
	struct hs_error *err;
	if (!j.sizes) {
		if ((err = size_classes(&j))) {
			free(j.size_tab);
			return err;
		}
		j.sizes = j.size_tab;
	}
	j.heap = hs_heap_create(&hs_jemalloc_backend);
	if (!j.heap) {
		free(j.size_tab);
		return &hs_error_nomem;
	}
	j.heap->headerless = true;
	err = walk(&j);
	free(j.size_tab);
	free(j.arenas);
	u64set_free(&j.cached);
	u64set_free(&j.tcaches);
	u64set_free(&j.edatas);
	u64set_free(&j.internal);
	free(j.classes);
	if (err) {
		hs_heap_destroy(j.heap);
		return err;
	}
	*ret = j.heap;
	return NULL;
}

/* What the walk needs, from the core's modules: steps 1, 2, each thread's
 * tsd (step 3's TLS) and the arenas symbol (step 4's first choice). */
static struct hs_error *discover(struct je *j, struct hs_jemalloc_known *k,
				 uint64_t **tsd)
{
	struct hs_error *err;
	j->version = find_version(j);
	bool dwarf;
	if ((err = layout_from_dwarf(j, &dwarf)))
		return err;
	if (!dwarf && ((err = pick_layout(j)) || (err = size_classes(j))))
		return err;
	if ((err = find_emap(j)) || (err = find_tsds(j, tsd)))
		return err;
	uint64_t arenas;
	*k = (struct hs_jemalloc_known){
		.layout = j->L, .sizes = j->size_tab, .version = j->version,
		.emap = j->emap, .tsd = *tsd,
		.arenas = je_symbol(j, "arenas", &arenas, NULL) ? arenas : 0,
		.lib_start = j->lib->start, .lib_end = j->lib->end,
		.lib_is_exe = j->lib->is_exe,
	};
	return NULL;
}

struct hs_error *hs_jemalloc_walk(const struct hs_core *core,
				  struct hs_dwarf *dw, struct hs_log *log,
				  const struct hs_walk_options *opts,
				  struct hs_heap **ret)
{
	(void)opts;
	struct je j = {.core = core, .dw = dw, .log = log};
	if (!hs_jemalloc_detect(dw, &j.lib))
		return hs_error_create(HS_ERR_NOT_FOUND, "no jemalloc in this core");
	struct hs_jemalloc_known k;
	uint64_t *tsd = NULL;
	struct hs_error *err = discover(&j, &k, &tsd);
	if (!err)
		err = hs_jemalloc_walk_known(core, &k, log, ret);
	free(j.version);
	free(j.size_tab);
	free(tsd);
	return err;
}

/* ---- the backend ---- */

const struct hs_je_stats *hs_jemalloc_stats(const struct hs_heap *heap)
{
	return heap->backend == &hs_jemalloc_backend ? heap->stats : NULL;
}

static void stats_json(struct hs_jsonw *w, const struct hs_heap *heap)
{
	const struct hs_je_stats *js = hs_jemalloc_stats(heap);
	if (!js)
		return;
	hs_jsonw_key(w, "stats");
	hs_jsonw_object_begin(w);
	hs_jsonw_kuint(w, "allocated", js->allocated);
	hs_jsonw_kuint(w, "active", js->active);
	hs_jsonw_kuint(w, "dirty", js->dirty);
	hs_jsonw_kuint(w, "muzzy", js->muzzy);
	hs_jsonw_kuint(w, "retained", js->retained);
	hs_jsonw_kuint(w, "metadata_blocks", js->metadata_blocks);
	hs_jsonw_object_end(w);
	hs_jsonw_kaddr(w, "extent_map", js->extent_map);
	if (js->arenas_array)
		hs_jsonw_kaddr(w, "arenas_array", js->arenas_array);
	hs_jsonw_kstring(w, "layouts", js->layout);
}

static void stats_text(FILE *out, const struct hs_heap *heap)
{
	const struct hs_je_stats *js = hs_jemalloc_stats(heap);
	if (!js)
		return;
	char b1[32], b2[32], b3[32], b4[32], b5[32];
	fprintf(out, "  stats    allocated %s, active %s, dirty %s, muzzy %s, retained %s (jemalloc's stats.*)\n",
		hs_fmt_size(b1, js->allocated), hs_fmt_size(b2, js->active),
		hs_fmt_size(b3, js->dirty), hs_fmt_size(b4, js->muzzy),
		hs_fmt_size(b5, js->retained));
}

/* Regions and extents have no header: a block's size is its cost. */
static const struct hs_place places[HS_WHERE_MAX] = {
	[HS_JE_SMALL] = {"small", .flags = HS_PLACE_CLASSED},
	[HS_JE_LARGE] = {"large"},
	[HS_JE_INTERNAL] = {"internal"},
	[HS_JE_SLAB] = {"slab", "slabs"},
	[HS_JE_TCACHE] = {"tcache", "tcache"},
	[HS_JE_DIRTY] = {"dirty", "dirty"},
	[HS_JE_MUZZY] = {"muzzy", "muzzy"},
	[HS_JE_RETAINED] = {"retained", "retained"},
};

/* jemalloc's size classes with quantum 16: 8, 16, 32, 48, ... 128, then
 * four classes per doubling (sz_s2u). */
static uint64_t size_class(uint64_t request)
{
	if (request <= 8)
		return 8;
	if (request <= 128)
		return (request + 15) & ~(uint64_t)15;
	int lg = 63 - __builtin_clzll(request - 1);
	uint64_t delta = 1ull << (lg - 2);
	return (request + delta - 1) & ~(delta - 1);
}

/* the spacing of the classes: 16 up to 128, then a quarter of the
 * power of two below (large extents included: their sizes are classes
 * too, no place of jemalloc's is HS_PLACE_PAGES) */
static uint64_t slack(const struct hs_place *place, uint64_t size)
{
	(void)place;
	if (size <= 128)
		return 16;
	int lg = 63 - __builtin_clzll(size - 1);
	return 1ull << (lg - 2);
}

const struct hs_backend hs_jemalloc_backend = {
	.name = "jemalloc",
	.places = places,
	.size_class = size_class,
	.slack = slack,
	.detect = hs_jemalloc_detect,
	.walk = hs_jemalloc_walk,
	.stats_json = stats_json,
	.stats_text = stats_text,
};
