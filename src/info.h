/* What info reports, for the CLI and any other caller: the core, the
 * process, its threads and modules, and the allocator's totals. */
#ifndef HS_INFO_H
#define HS_INFO_H

#include <stdbool.h>

#include "formats/jsonw.h"
#include "src/snapshot.h"

/* Blocks and bytes of the heap by state, and by place (hs_alloc.where). */
struct hs_info_totals {
	uint64_t used_count, used_bytes, free_count, free_bytes;
	uint64_t by_where[HS_WHERE_MAX];
	uint64_t bytes_where[HS_WHERE_MAX];
};

void hs_info_totals(const struct hs_heap *h, struct hs_info_totals *t);

/* The signal's name without "SIG" ("SEGV"), "?" when unknown. */
const char *hs_info_sig_name(int sig);
/* A stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) never dumps a core: a
 * core that names one is a snapshot of a stopped process. */
bool hs_info_stop_signal(int sig);
/* The signal was sent by a process (kill, tgkill, sigqueue): the siginfo
 * holds the sender's pid and uid. */
bool hs_info_sent_by_process(const struct hs_core *core);

/* info's members (core, process, signal, snapshot, threads, modules,
 * allocator), written into w's open object; the caller adds warnings. */
void hs_info_json(struct hs_jsonw *w, struct hs_snapshot *snap);

#endif
