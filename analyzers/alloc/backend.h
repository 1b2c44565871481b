/* Allocator backends: how heapsift recognizes a program's malloc, walks it
 * into the neutral heap model (analyzers/alloc/heap.h), and shows the
 * allocator's own counters.
 *
 * A backend is one struct hs_backend, defined by its walker's file, and one
 * line in the registry (hs_backends[], backend.c).  Everything above this
 * layer (graph, mark, types, frag, the CLI) reads only the neutral model:
 * blocks with a where and an arena, arenas, regions, size classes, totals.
 * What only one allocator has (glibc's mallinfo2, jemalloc's stats.*) is
 * the backend's: it keeps it behind heap->stats and writes it out itself.
 *
 * The registry also lists allocators heapsift recognizes but cannot walk
 * (tcmalloc, mimalloc): walking glibc's mostly idle heap instead would give
 * a wrong answer as if it were certain, so they are refused by name.
 *
 * Adding a backend (docs/architecture.md, "Allocator backends"): a file or
 * directory under analyzers/alloc/ that fills a struct hs_heap and defines
 * its struct hs_backend, one line in hs_backends[], and its tests.
 */
#ifndef HS_BACKEND_H
#define HS_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include "formats/dwarf.h"
#include "formats/elfcore.h"
#include "formats/jsonw.h"
#include "src/error.h"
#include "src/log.h"
#include "analyzers/alloc/heap.h"

struct hs_heap;

struct hs_backend {
	const char *name;       /* "glibc": heap->allocator, JSON, messages */
	/* Is this the program's malloc?  From module names and symbols only
	 * (no walk); *lib: the module that holds it.  NULL: the default, tried
	 * last, whose walk says what it could not find. */
	bool (*detect)(struct hs_dwarf *dw, struct hs_module **lib);
	/* Every block into a new heap (hs_heap_create with this backend),
	 * as opts asks (NULL: the defaults; a walker may ignore what it
	 * cannot do).  NULL: recognized, not read (the registry refuses it). */
	struct hs_error *(*walk)(const struct hs_core *core, struct hs_dwarf *dw,
				 struct hs_log *log,
				 const struct hs_walk_options *opts,
				 struct hs_heap **ret);
	/* The allocator's own counters (heap->stats): members of info's
	 * "allocator" object, and lines of info's text.  Either may be NULL. */
	void (*stats_json)(struct hs_jsonw *w, const struct hs_heap *heap);
	void (*stats_text)(FILE *out, const struct hs_heap *heap);
	/* A recognized allocator without a walker: its library's file name
	 * starts with lib_prefix, or the executable (a static copy) exports
	 * symbol. */
	const char *lib_prefix, *symbol;
	/* The usable size malloc(request) gives (small requests), and how far
	 * below the usable size of a block of place a request it served can
	 * be (a page where requests are rounded to pages, HS_PLACE_PAGES).
	 * NULL: the request itself, 1. */
	uint64_t (*size_class)(uint64_t request);
	uint64_t (*slack)(const struct hs_place *place, uint64_t size);
	/* Where its blocks sit: HS_WHERE_MAX places, used ones first
	 * (analyzers/alloc/heap.h); unnamed entries are unused. */
	const struct hs_place *places;
};

/* The registry, in the order detection tries it; NULL-terminated. */
extern const struct hs_backend *const hs_backends[];

/* The program's allocator: the first backend of the registry whose detect
 * says so (the default otherwise).  An error naming the allocator when it is
 * one heapsift recognizes and does not read. */
struct hs_error *hs_backend_find(struct hs_dwarf *dw,
				 const struct hs_backend **ret);

#endif
