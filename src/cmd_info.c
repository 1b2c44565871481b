/* heapsift info: what the core is, and the allocator's totals. */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "formats/jsonw.h"
#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/pymalloc.h"
#include "analyzers/roots.h"
#include "src/cli.h"
#include "src/info.h"

static void info_text(struct hs_cli *cli, struct hs_snapshot *snap)
{
	const struct hs_core *core = snap->core;
	char b1[32], b2[32];
	struct hs_dwarf *dw;
	const struct hs_error *derr = hs_snapshot_dwarf(snap, &dw);
	const struct hs_heap *heap;
	const struct hs_error *herr = hs_snapshot_heap(snap, &heap);
	(void)cli;

	printf("core       %s (%s%s)\n", core->path, hs_fmt_size(b1, core->size),
	       core->truncated ? ", TRUNCATED" : "");
	if (core->process.valid)
		printf("process    %s, pid %d, args \"%s\"\n", core->process.fname,
		       core->process.pid, core->process.psargs);
	int sig = core->siginfo.valid ? core->siginfo.signo :
		core->nthreads ? core->threads[0].cursig : 0;
	if (sig && hs_info_stop_signal(sig))
		printf("signal     none: a snapshot of a process stopped by SIG%s (e.g. gcore)\n",
		       hs_info_sig_name(sig));
	else if (sig && hs_info_sent_by_process(core))
		printf("signal     SIG%s, sent by pid %d (uid %u) (code %d)\n", hs_info_sig_name(sig),
		       (int32_t)(uint32_t)core->siginfo.addr,
		       (unsigned)(core->siginfo.addr >> 32), core->siginfo.code);
	else if (sig && core->siginfo.valid)
		printf("signal     SIG%s (code %d, address %#" PRIx64 ")\n",
		       hs_info_sig_name(sig), core->siginfo.code, core->siginfo.addr);
	else if (sig)
		printf("signal     SIG%s\n", hs_info_sig_name(sig));
	else
		printf("signal     none (a snapshot, e.g. gcore)\n");
	printf("threads    %zu\n", core->nthreads);
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct hs_core_thread *t = &core->threads[i];
		const char *name;
		uint64_t off;
		printf("  tid %-8d pc %#" PRIx64, t->tid, t->regs[HS_REG_RIP]);
		if (dw && hs_dwarf_symbolize(dw, t->regs[HS_REG_RIP], &name, &off, NULL))
			printf(" %s+%#" PRIx64, name, off);
		if (dw) {
			struct hs_thread_state st = hs_thread_state_of(core, dw, i);
			if (st.stop == HS_STOP_SYSCALL && st.syscall >= 0)
				printf(", in system call %" PRId64, st.syscall);
			else if (st.stop == HS_STOP_SYSCALL)
				printf(", after a system call");
			else if (st.stop == HS_STOP_CALL)
				printf(", at a function's entry");
			else
				printf(", interrupted");
		}
		printf("\n");
	}
	if (derr) {
		printf("modules    unknown: %s\n", derr->message);
	} else {
		printf("modules    %zu\n", hs_dwarf_num_modules(dw));
		for (size_t i = 0; i < hs_dwarf_num_modules(dw); i++) {
			struct hs_module *m = hs_dwarf_module(dw, i);
			hs_dwarf_check_debug(dw, m);
			printf("  %#014" PRIx64 " %-40s build-id %-40s debug: %s%s%s\n",
			       m->start, m->name,
			       m->build_id ? m->build_id : "-",
			       hs_debug_source_names[m->debug_source],
			       m->debug_path ? " " : "",
			       m->debug_path ? m->debug_path : "");
		}
	}
	if (herr) {
		printf("allocator  unknown: %s\n", herr->message);
	} else {
		struct hs_info_totals t;
		hs_info_totals(heap, &t);
		size_t narenas = 0;
		for (size_t i = 0; i < heap->narenas; i++)
			narenas += !heap->headerless || heap->arenas[i].addr ||
				   heap->arenas[i].system_mem;
		printf("allocator  %s %s%s: %zu arena%s, %u thread cache%s\n",
		       heap->allocator, heap->version ? heap->version : "",
		       heap->partial ? " (PARTIAL: see warnings)" : "",
		       narenas, narenas == 1 ? "" : "s",
		       heap->ntcaches, heap->ntcaches == 1 ? "" : "s");
		for (size_t i = 0; i < heap->nfound; i++) {
			const struct hs_found *f = &heap->found[i];
			printf("  %-8s %s: %s%s%s%s\n", i ? "" : "found",
			       f->item, f->how, f->detail[0] ? " (" : "",
			       f->detail, f->detail[0] ? ")" : "");
		}
		printf("  used     %10" PRIu64 " blocks  %12s\n", t.used_count,
		       hs_fmt_size(b1, t.used_bytes));
		printf("  free     %10" PRIu64 " blocks  %12s\n", t.free_count,
		       hs_fmt_size(b1, t.free_bytes));
		if (heap->backend->stats_text)
			heap->backend->stats_text(stdout, heap);
		for (size_t i = 0; i < heap->narenas; i++) {
			const struct hs_arena *a = &heap->arenas[i];
			if (heap->headerless && !a->addr && !a->system_mem)
				continue;  /* a jemalloc arena index not in use */
			printf("  arena %zu %#" PRIx64 "%s: system %s, used %" PRIu64 " (%s)",
			       i, a->addr, a->main ? " (main)" : "",
			       hs_fmt_size(b1, a->system_mem), a->used_count,
			       hs_fmt_size(b2, a->used_bytes));
			if (!heap->headerless)
				printf(", %u heap%s", a->nheaps, a->nheaps == 1 ? "" : "s");
			if (a->uninitialized)
				printf(" (never set up: malloc was not called yet)");
			printf("\n");
		}
		if (heap->pymalloc)
			hs_pymalloc_text(stdout, heap->pymalloc);
	}
	if (snap->log.nwarnings)
		printf("warnings   %zu (see stderr, or --format json)\n",
		       snap->log.nwarnings);
}

int hs_cmd_info(struct hs_cli *cli, struct hs_snapshot *snap)
{
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_info_json(&w, snap);
		hs_cli_json_warnings(&w, &snap->log);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else
		info_text(cli, snap);
	return HS_EXIT_OK;
}
