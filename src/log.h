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

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { HS_LOG_KEEP = 256 };

struct hs_log {
	FILE *stream;          /* where warnings go as they happen; may be NULL */
	bool progress;         /* show progress lines on stream */
	double progress_delay; /* seconds a phase runs before its line shows */
	/* the phase in progress: since when, the line shown last, and the
	 * point the rate is measured from */
	const char *last_phase;
	double phase_start, last_draw, rate_t;
	uint64_t rate_done;
	int last_percent;
	bool shown;
	size_t nwarnings;      /* all warnings, kept or not */
	size_t nkept;
	char *kept[HS_LOG_KEEP];
	struct hs_log_held *held;  /* hs_log_hold */
	const struct hs_log_relay *relay;  /* hs_log_relay */
	/* progress may be shown from several threads (the graph's scan
	 * beside the types): its calls take this lock; warnings are one
	 * thread's at a time */
	pthread_mutex_t progress_lock;
};
/* A phase run by other threads, beside which the caller's thread runs
 * other work: until its count `done` (read atomically) reaches total,
 * every progress call shows it instead of its own phase, so that the two
 * do not take the line in turn. */
struct hs_log_relay {
	const char *phase, *unit;
	const uint64_t *done;
	uint64_t total;
};

/* Warnings held back (hs_log_hold), all of them, in order. */
struct hs_log_held {
	char **msgs;            /* NULL: a warning memory ran out for */
	size_t n, cap;
	struct hs_log_held *outer;  /* the hold this one is within */
};

void hs_log_init(struct hs_log *log, FILE *stream, bool progress);
void hs_log_fini(struct hs_log *log);
void hs_log_warn(struct hs_log *log, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Progress of a long phase: "phase: 45% (1.2M blocks/s)" redrawn on one
 * line, once the phase (the same phase string) has run progress_delay
 * seconds (1 by default), at most four times a second or at each new
 * percent.  total 0: unknown, the count is shown instead.  unit: what done
 * counts ("blocks"; "bytes" shows sizes).  Call it every few thousand
 * units: each call reads the clock. */
void hs_log_progress(struct hs_log *log, const char *phase, const char *unit,
		     uint64_t done, uint64_t total);
void hs_log_progress_end(struct hs_log *log);
/* From now on (r NULL: no longer), progress shows r's phase while it
 * runs; r must outlive its use. */
void hs_log_relay(struct hs_log *log, const struct hs_log_relay *r);
/* From now on the log's warnings go to h instead of being counted, echoed
 * and kept, for work that may be thrown away; progress still shows.
 * hs_log_release ends the latest hold: with replay, its warnings then go
 * through the log in their order, as if they were given then (into the
 * hold it was within, if any); without, they are dropped. */
void hs_log_hold(struct hs_log *log, struct hs_log_held *h);
void hs_log_release(struct hs_log *log, bool replay);
/* hs_log_release in two steps, for work done beside other work whose
 * warnings are to come first: hs_log_set_aside ends the latest hold and
 * keeps its warnings where they are; hs_log_replay(log, h, replay) later
 * gives them through the log (or drops them) as hs_log_release would. */
void hs_log_set_aside(struct hs_log *log);
void hs_log_replay(struct hs_log *log, struct hs_log_held *h, bool replay);

#endif
