#include "src/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "src/escape.h"

void hs_log_init(struct hs_log *log, FILE *stream, bool progress)
{
	memset(log, 0, sizeof(*log));
	log->stream = stream;
	log->progress = progress && stream;
}

void hs_log_fini(struct hs_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->nkept; i++)
		free(log->kept[i]);
	log->nkept = 0;
}

void hs_log_warn(struct hs_log *log, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	log->nwarnings++;
	if (log->stream) {
		/* a warning names paths and symbols from the core: never
		 * echo its bytes raw to a terminal */
		char *shown = msg ? hs_escape_text_dup(msg) : NULL;
		fprintf(log->stream, "heapsift: warning: %s\n",
			shown ? shown : "(out of memory formatting a warning)");
		free(shown);
	}
	if (msg && log->nkept < HS_LOG_KEEP)
		log->kept[log->nkept++] = msg;
	else
		free(msg);
}

void hs_log_progress(struct hs_log *log, const char *phase, size_t done,
		     size_t total)
{
	if (!log->progress)
		return;
	int pct = total ? (int)(done * 100 / total) : -1;
	if (phase == log->last_phase && pct == log->last_percent && pct >= 0)
		return;
	log->last_phase = phase;
	log->last_percent = pct;
	if (total)
		fprintf(log->stream, "\r\033[K%s: %d%%", phase, pct);
	else
		fprintf(log->stream, "\r\033[K%s: %zu", phase, done);
	fflush(log->stream);
}

void hs_log_progress_end(struct hs_log *log)
{
	if (log->progress && log->last_phase) {
		log->last_phase = NULL;
		fprintf(log->stream, "\r\033[K");
		fflush(log->stream);
	}
}
