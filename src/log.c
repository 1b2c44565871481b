#include "src/log.h"
#include "src/alloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/escape.h"
#include "src/fmt.h"

void hs_log_init(struct hs_log *log, FILE *stream, bool progress)
{
	memset(log, 0, sizeof(*log));
	log->stream = stream;
	log->progress = progress && stream;
	log->progress_delay = 1.0;
	pthread_mutex_init(&log->progress_lock, NULL);
}

void hs_log_fini(struct hs_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->nkept; i++)
		free(log->kept[i]);
	log->nkept = 0;
	pthread_mutex_destroy(&log->progress_lock);
}

/* Counts, echoes and keeps msg (NULL: memory ran out for it); takes it. */
static void emit(struct hs_log *log, char *msg)
{
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

/* msg to the latest hold, else through the log; takes it. */
static void warn_msg(struct hs_log *log, char *msg)
{
	struct hs_log_held *h = log->held;
	if (!h) {
		emit(log, msg);
		return;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		char **v = hs_realloc(h->msgs, cap * sizeof(*v));
		if (!v) {
			/* not held: given now, out of order rather than lost */
			emit(log, msg);
			return;
		}
		h->msgs = v;
		h->cap = cap;
	}
	h->msgs[h->n++] = msg;
}

void hs_log_warn(struct hs_log *log, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	warn_msg(log, msg);
}

void hs_log_hold(struct hs_log *log, struct hs_log_held *h)
{
	memset(h, 0, sizeof(*h));
	h->outer = log->held;
	log->held = h;
}

void hs_log_release(struct hs_log *log, bool replay)
{
	struct hs_log_held *h = log->held;
	if (!h)
		return;
	hs_log_set_aside(log);
	hs_log_replay(log, h, replay);
}

void hs_log_set_aside(struct hs_log *log)
{
	if (log->held)
		log->held = log->held->outer;
}

void hs_log_replay(struct hs_log *log, struct hs_log_held *h, bool replay)
{
	for (size_t i = 0; i < h->n; i++) {
		if (replay)
			warn_msg(log, h->msgs[i]);
		else
			free(h->msgs[i]);
	}
	free(h->msgs);
	memset(h, 0, sizeof(*h));
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1234567 -> "1.2M" */
static void si(char *buf, size_t len, double x)
{
	static const char suffix[] = " kMGT";
	int i = 0;
	while (x >= 999.5 && i < 4) {
		x /= 1000;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%.0f", x);
	else
		snprintf(buf, len, "%.*f%c", x < 9.95 ? 1 : 0, x, suffix[i]);
}

static void progress_end(struct hs_log *log);

static void progress(struct hs_log *log, const char *phase, const char *unit,
		     uint64_t done, uint64_t total)
{
	if (log->relay) {
		uint64_t d = __atomic_load_n(log->relay->done, __ATOMIC_RELAXED);
		if (d < log->relay->total) {
			phase = log->relay->phase;
			unit = log->relay->unit;
			done = d;
			total = log->relay->total;
		}
	}
	double t = now();
	if (phase != log->last_phase) {
		progress_end(log);
		log->last_phase = phase;
		log->phase_start = log->rate_t = t;
		log->rate_done = done;
		log->last_percent = -1;
		return;
	}
	if (t - log->phase_start < log->progress_delay)
		return;
	if (done < log->rate_done) {  /* a new part of the phase starts over */
		log->rate_done = done;
		log->rate_t = t;
	}
	int pct = total ? (int)(done >= total ? 99 : done * 100 / total) : -1;
	if (log->shown && t - log->last_draw < 0.25 && (pct < 0 || pct == log->last_percent))
		return;
	log->last_percent = pct;
	log->last_draw = t;
	log->shown = true;
	char count[32] = "", rate[48] = "";
	double dt = t - log->rate_t;
	bool bytes = unit && !strcmp(unit, "bytes");
	if (dt > 0 && done > log->rate_done) {
		double r = (double)(done - log->rate_done) / dt;
		if (bytes)
			snprintf(rate, sizeof(rate), " (%s/s)", hs_fmt_size(count, (uint64_t)r));
		else {
			si(count, sizeof(count), r);
			snprintf(rate, sizeof(rate), " (%s %s/s)", count, unit ? unit : "");
		}
	}
	if (pct >= 0)
		snprintf(count, sizeof(count), "%d%%", pct);
	else if (bytes)
		hs_fmt_size(count, done);
	else {
		char n[16];
		si(n, sizeof(n), (double)done);
		snprintf(count, sizeof(count), "%s %s", n, unit ? unit : "");
	}
	fprintf(log->stream, "\r\033[K%s: %s%s", phase, count, rate);
	fflush(log->stream);
}

void hs_log_progress(struct hs_log *log, const char *phase, const char *unit,
		     uint64_t done, uint64_t total)
{
	if (!log->progress)
		return;
	pthread_mutex_lock(&log->progress_lock);
	progress(log, phase, unit, done, total);
	pthread_mutex_unlock(&log->progress_lock);
}

void hs_log_relay(struct hs_log *log, const struct hs_log_relay *r)
{
	pthread_mutex_lock(&log->progress_lock);
	log->relay = r;
	pthread_mutex_unlock(&log->progress_lock);
}

static void progress_end(struct hs_log *log)
{
	if (log->progress && log->shown) {
		fprintf(log->stream, "\r\033[K");
		fflush(log->stream);
	}
	log->last_phase = NULL;
	log->shown = false;
}

void hs_log_progress_end(struct hs_log *log)
{
	pthread_mutex_lock(&log->progress_lock);
	progress_end(log);
	pthread_mutex_unlock(&log->progress_lock);
}
