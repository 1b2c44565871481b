/* info's findings as JSON: what the core is, and the allocator's totals
 * (src/info.h). */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "analyzers/alloc/backend.h"
#include "analyzers/alloc/pymalloc.h"
#include "analyzers/roots.h"
#include "src/info.h"

const char *hs_info_sig_name(int sig)
{
	const char *s = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;
	return s ? s : "?";
}

/* From the counts hs_heap_finish made: every block has one place, and
 * its place says its state. */
void hs_info_totals(const struct hs_heap *h, struct hs_info_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (int w = 0; w < HS_WHERE_MAX; w++) {
		t->by_where[w] = h->count_where[w];
		t->bytes_where[w] = h->bytes_where[w];
		if (w < HS_WHERE_FREE) {
			t->used_count += h->count_where[w];
			t->used_bytes += h->bytes_where[w];
		} else {
			t->free_count += h->count_where[w];
			t->free_bytes += h->bytes_where[w];
		}
	}
}

/* How the core came to be: a stop signal (SIGSTOP, SIGTSTP, SIGTTIN,
 * SIGTTOU) never dumps a core, so a core that names one is a snapshot of a
 * stopped process (gcore stops the process with SIGSTOP to attach). */
bool hs_info_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* si_code <= 0: sent by a process (kill, tgkill, sigqueue), and the word
 * where si_addr would be holds the sender's si_pid and si_uid */
bool hs_info_sent_by_process(const struct hs_core *core)
{
	return core->siginfo.valid && core->siginfo.code <= 0;
}

void hs_info_json(struct hs_jsonw *w, struct hs_snapshot *snap)
{
	const struct hs_core *core = snap->core;
	struct hs_dwarf *dw;
	const struct hs_error *derr = hs_snapshot_dwarf(snap, &dw);
	const struct hs_heap *heap;
	const struct hs_error *herr = hs_snapshot_heap(snap, &heap);

	hs_jsonw_key(w, "core");
	hs_jsonw_object_begin(w);
	hs_jsonw_kstring(w, "path", core->path);
	hs_jsonw_kuint(w, "size", core->size);
	hs_jsonw_kuint(w, "segments", core->nsegs);
	hs_jsonw_kbool(w, "truncated", core->truncated);
	hs_jsonw_kuint(w, "page_size", core->page_size);
	hs_jsonw_object_end(w);

	hs_jsonw_key(w, "process");
	if (core->process.valid) {
		char st[2] = {core->process.state, 0};
		hs_jsonw_object_begin(w);
		hs_jsonw_kint(w, "pid", core->process.pid);
		hs_jsonw_kint(w, "ppid", core->process.ppid);
		hs_jsonw_kint(w, "uid", core->process.uid);
		hs_jsonw_kint(w, "gid", core->process.gid);
		hs_jsonw_kstring(w, "name", core->process.fname);
		hs_jsonw_kstring(w, "args", core->process.psargs);
		hs_jsonw_kstring(w, "state", st);
		hs_jsonw_object_end(w);
	} else {
		hs_jsonw_null(w);
	}

	hs_jsonw_key(w, "signal");
	int sig = core->siginfo.valid ? core->siginfo.signo :
		core->nthreads ? core->threads[0].cursig : 0;
	if (sig && !hs_info_stop_signal(sig)) {
		hs_jsonw_object_begin(w);
		hs_jsonw_kint(w, "number", sig);
		hs_jsonw_kstring(w, "name", hs_info_sig_name(sig));
		if (core->siginfo.valid) {
			hs_jsonw_kint(w, "code", core->siginfo.code);
			if (hs_info_sent_by_process(core)) {
				hs_jsonw_kint(w, "sender_pid", (int32_t)(uint32_t)core->siginfo.addr);
				hs_jsonw_kuint(w, "sender_uid", core->siginfo.addr >> 32);
			} else {
				hs_jsonw_kaddr(w, "address", core->siginfo.addr);
			}
		}
		hs_jsonw_object_end(w);
	} else {
		hs_jsonw_null(w);
	}
	/* no signal, or a stop signal: a snapshot of a live process */
	hs_jsonw_kbool(w, "snapshot", !sig || hs_info_stop_signal(sig));
	if (sig && hs_info_stop_signal(sig))
		hs_jsonw_kstring(w, "stopped_by", hs_info_sig_name(sig));

	hs_jsonw_key(w, "threads");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct hs_core_thread *t = &core->threads[i];
		hs_jsonw_object_begin(w);
		hs_jsonw_kint(w, "tid", t->tid);
		hs_jsonw_kaddr(w, "pc", t->regs[HS_REG_RIP]);
		hs_jsonw_kaddr(w, "sp", t->regs[HS_REG_RSP]);
		hs_jsonw_kaddr(w, "fs_base", t->regs[HS_REG_FS_BASE]);
		const char *name;
		uint64_t off;
		if (dw && hs_dwarf_symbolize(dw, t->regs[HS_REG_RIP], &name, &off, NULL))
			hs_jsonw_kstring(w, "function", name);
		if (t->cursig)
			hs_jsonw_kint(w, "signal", t->cursig);
		if (dw) {
			struct hs_thread_state st = hs_thread_state_of(core, dw, i);
			hs_jsonw_key(w, "stopped");
			hs_jsonw_object_begin(w);
			hs_jsonw_kstring(w, "at", hs_thread_stop_names[st.stop]);
			if (st.syscall >= 0)
				hs_jsonw_kint(w, "syscall", st.syscall);
			hs_jsonw_kstring(w, "evidence", st.why);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);

	hs_jsonw_key(w, "modules");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; dw && i < hs_dwarf_num_modules(dw); i++) {
		struct hs_module *m = hs_dwarf_module(dw, i);
		hs_dwarf_check_debug(dw, m);
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "name", m->name);
		hs_jsonw_kaddr(w, "start", m->start);
		hs_jsonw_kaddr(w, "end", m->end);
		hs_jsonw_kaddr(w, "bias", m->bias);
		hs_jsonw_kstring(w, "build_id", m->build_id);
		hs_jsonw_kstring(w, "file", m->elf_path);
		hs_jsonw_kbool(w, "executable", m->is_exe);
		hs_jsonw_key(w, "debug");
		hs_jsonw_object_begin(w);
		hs_jsonw_kstring(w, "source", hs_debug_source_names[m->debug_source]);
		hs_jsonw_kstring(w, "path", m->debug_path);
		hs_jsonw_object_end(w);
		hs_jsonw_object_end(w);
	}
	hs_jsonw_array_end(w);
	if (derr)
		hs_jsonw_kstring(w, "modules_error", derr->message);

	hs_jsonw_key(w, "allocator");
	hs_jsonw_object_begin(w);
	if (herr) {
		hs_jsonw_key(w, "name");
		hs_jsonw_null(w);
		hs_jsonw_kstring(w, "error", herr->message);
	} else {
		struct hs_info_totals t;
		hs_info_totals(heap, &t);
		hs_jsonw_kstring(w, "name", heap->allocator);
		hs_jsonw_kstring(w, "version", heap->version);
		hs_jsonw_kbool(w, "partial", heap->partial);
		hs_jsonw_kuint(w, "unaccounted_bytes", heap->unaccounted_bytes);
		if (heap->nfound) {
			hs_jsonw_key(w, "found");
			hs_jsonw_array_begin(w);
			for (size_t i = 0; i < heap->nfound; i++) {
				const struct hs_found *f = &heap->found[i];
				hs_jsonw_object_begin(w);
				hs_jsonw_kstring(w, "item", f->item);
				hs_jsonw_kstring(w, "how", f->how);
				if (f->detail[0])
					hs_jsonw_kstring(w, "detail", f->detail);
				hs_jsonw_object_end(w);
			}
			hs_jsonw_array_end(w);
		}
		if (heap->backend->stats_json)
			heap->backend->stats_json(w, heap);
		hs_jsonw_key(w, "totals");
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "used_count", t.used_count);
		hs_jsonw_kuint(w, "used_bytes", t.used_bytes);
		hs_jsonw_kuint(w, "free_count", t.free_count);
		hs_jsonw_kuint(w, "free_bytes", t.free_bytes);
		hs_jsonw_key(w, "by_where");
		hs_jsonw_object_begin(w);
		for (int i = 0; i < HS_WHERE_MAX; i++) {
			if (!heap->places[i].name)
				continue;
			hs_jsonw_key(w, heap->places[i].name);
			hs_jsonw_object_begin(w);
			hs_jsonw_kuint(w, "count", t.by_where[i]);
			hs_jsonw_kuint(w, "bytes", t.bytes_where[i]);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_object_end(w);
		hs_jsonw_object_end(w);
		hs_jsonw_key(w, "mmapped");
		hs_jsonw_object_begin(w);
		hs_jsonw_kuint(w, "count", heap->mmap_count);
		hs_jsonw_kuint(w, "bytes", heap->mmap_bytes);
		hs_jsonw_kuint(w, "expected_count", heap->mmap_expected);
		hs_jsonw_kuint(w, "expected_bytes", heap->mmap_expected_bytes);
		hs_jsonw_object_end(w);
		hs_jsonw_kuint(w, "thread_caches", heap->ntcaches);
		hs_jsonw_key(w, "arenas");
		hs_jsonw_array_begin(w);
		for (size_t i = 0; i < heap->narenas; i++) {
			const struct hs_arena *a = &heap->arenas[i];
			hs_jsonw_object_begin(w);
			hs_jsonw_kuint(w, "index", i);
			hs_jsonw_kaddr(w, "address", a->addr);
			hs_jsonw_kbool(w, "main", a->main);
			hs_jsonw_kaddr(w, "top", a->top);
			hs_jsonw_kuint(w, "top_size", a->top_size);
			hs_jsonw_kuint(w, "system_mem", a->system_mem);
			hs_jsonw_kuint(w, "heaps", a->nheaps);
			hs_jsonw_kuint(w, "attached_threads", a->attached_threads);
			if (a->uninitialized)
				hs_jsonw_kbool(w, "uninitialized", true);
			hs_jsonw_kuint(w, "used_count", a->used_count);
			hs_jsonw_kuint(w, "used_bytes", a->used_bytes);
			hs_jsonw_kuint(w, "free_count", a->free_count);
			hs_jsonw_kuint(w, "free_bytes", a->free_bytes);
			hs_jsonw_kbool(w, "partial", a->partial);
			hs_jsonw_object_end(w);
		}
		hs_jsonw_array_end(w);
	}
	hs_jsonw_object_end(w);
	hs_jsonw_key(w, "pymalloc");
	if (!herr && heap->pymalloc)
		hs_pymalloc_json(w, heap->pymalloc);
	else
		hs_jsonw_null(w);
}

