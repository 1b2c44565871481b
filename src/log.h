/* Warnings and progress.
 *
 * A struct hs_log belongs to one snapshot (no process-wide state).  Warnings
 * are counted, kept (the first HS_LOG_KEEP of them, for JSON reports) and
 * echoed to a stream when one is set, through the text policy of
 * src/escape.h (the stream may be a terminal).  Analysis goes on after a
 * warning: the result is partial and says so.
 */
#ifndef HS_LOG_H
#define HS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { HS_LOG_KEEP = 256 };

struct hs_log {
	FILE *stream;          /* where warnings go as they happen; may be NULL */
	bool progress;         /* show progress lines on stream */
	int last_percent;      /* of the progress line shown last */
	const char *last_phase;
	size_t nwarnings;      /* all warnings, kept or not */
	size_t nkept;
	char *kept[HS_LOG_KEEP];
};

void hs_log_init(struct hs_log *log, FILE *stream, bool progress);
void hs_log_fini(struct hs_log *log);
void hs_log_warn(struct hs_log *log, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Progress of a long phase: done/total, redrawn on one line. */
void hs_log_progress(struct hs_log *log, const char *phase, size_t done,
		     size_t total);
void hs_log_progress_end(struct hs_log *log);

#endif
