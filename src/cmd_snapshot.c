/* heapsift snapshot: a core of a live process, with a short pause. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats/jsonw.h"
#include "src/cli.h"
#include "src/cli_retain.h"
#include "src/live.h"
#include "src/outfile.h"

/* The options of src/live.h from the command line and, for the tests,
 * the environment (docs/commands.md). */
void hs_cli_live_options(const struct hs_cli *cli, struct hs_live_options *o)
{
	memset(o, 0, sizeof(*o));
	o->no_fork = cli->no_fork;
	o->fork = cli->fork;
	o->ptrace_scope_path = getenv("HEAPSIFT_TEST_PTRACE_SCOPE_FILE");
	const char *s = getenv("HEAPSIFT_TEST_SNAPSHOT_SLEEP_MS");
	if (s && *s)
		o->test_sleep_ms = (unsigned)strtoul(s, NULL, 10);
	s = getenv("HEAPSIFT_TEST_STOP_SLEEP_MS");
	if (s && *s)
		o->test_stop_sleep_ms = (unsigned)strtoul(s, NULL, 10);
	s = getenv("HEAPSIFT_TEST_REGS_SLEEP_MS");
	if (s && *s)
		o->test_regs_sleep_ms = (unsigned)strtoul(s, NULL, 10);
	s = getenv("HEAPSIFT_TEST_INJECT_IN_SYSCALL");
	o->test_inject_in_syscall = s && !strcmp(s, "1");
}

bool hs_cli_parse_pid(const char *s, int *ret)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT32_MAX)
		return false;
	*ret = (int)v;
	return true;
}

int hs_cmd_snapshot(struct hs_cli *cli, struct hs_snapshot *snap)
{
	(void)snap;
	int pid;
	if (!hs_cli_parse_pid(cli->core, &pid))
		return hs_cli_usage(cli, "PID must be a process id (a positive number)");
	if (!cli->out)
		return hs_cli_usage(cli, "snapshot needs -o OUT");
	int bad = hs_cli_output_ok(cli, cli->out);
	if (bad)
		return bad;
	struct hs_live_options o;
	hs_cli_live_options(cli, &o);
	struct hs_live_result r;
	struct hs_error *err = hs_live_snapshot(pid, cli->out, &o, &r);
	if (err) {
		int rc = hs_cli_fail(cli, err);
		hs_error_destroy(err);
		return rc;
	}
	const char *mode = r.tracked ? "tracked" : r.forked ? "fork" : "no-fork";
	if (!cli->quiet) {
		if (r.fallback[0])
			fprintf(stderr, "heapsift: warning: no fork: %s; the memory was copied with the threads stopped\n",
				r.fallback);
		fprintf(stderr, "paused %.1f ms\n", r.pause_ms);
		char b1[32], b2[32];
		if (r.tracked)
			fprintf(stderr, "two stops: %.1f ms to start tracking writes, %.1f ms at the snapshot; %s copied again while it ran, %s read at the stop\n",
				r.pause1_ms, r.pause2_ms, hs_fmt_size(b1, r.recopied),
				hs_fmt_size(b2, r.late_bytes));
	}
	char b[32];
	if (hs_outfile_is_stdout(cli->out)) {
		/* the core went to standard output: nothing else goes there */
	} else if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kstring(&w, "output", cli->out);
		hs_jsonw_kuint(&w, "pid", (uint64_t)pid);
		hs_jsonw_kstring(&w, "mode", mode);
		if (r.fallback[0])
			hs_jsonw_kstring(&w, "fallback", r.fallback);
		hs_jsonw_kuint(&w, "pause_us", (uint64_t)(r.pause_ms * 1000 + 0.5));
		if (r.tracked) {
			hs_jsonw_kuint(&w, "first_pause_us", (uint64_t)(r.pause1_ms * 1000 + 0.5));
			hs_jsonw_kuint(&w, "last_pause_us", (uint64_t)(r.pause2_ms * 1000 + 0.5));
			hs_jsonw_kuint(&w, "recopied_bytes", r.recopied);
			hs_jsonw_kuint(&w, "stopped_read_bytes", r.late_bytes);
		} else if (r.track_why[0]) {
			hs_jsonw_kstring(&w, "untracked", r.track_why);
		}
		hs_jsonw_kuint(&w, "threads", r.nthreads);
		hs_jsonw_kuint(&w, "mappings", r.nloads);
		hs_jsonw_kuint(&w, "memory_bytes", r.bytes);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		printf("wrote %s: process %d, %zu threads, %zu mappings, %s of memory (%s)\n",
		       cli->out, (int)pid, r.nthreads, r.nloads, hs_fmt_size(b, r.bytes),
		       r.tracked ? "copied while it ran, its writes tracked" :
		       r.forked ? "copied from a fork" : "copied with the threads stopped");
	}
	return HS_EXIT_OK;
}
