/* The command-line interface: shared option parsing and output helpers.
 * Each subcommand lives in its own cmd_*.c and returns an exit code. */
#ifndef HS_CLI_H
#define HS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "src/error.h"
#include "src/fmt.h"
#include "src/snapshot.h"

enum hs_exit {
	HS_EXIT_OK = 0,
	HS_EXIT_ANALYSIS = 1,
	HS_EXIT_USAGE = 2,
};

enum hs_format { HS_FORMAT_TEXT, HS_FORMAT_JSON };

struct hs_cli {
	const char *prog;
	const char *command;
	const char *core;
	enum hs_format format;
	bool quiet;
	struct hs_options opts;
	/* list */
	int state;              /* -1 all, else enum hs_state */
	uint64_t min_size;
	bool raw;               /* the allocator's view only */
	/* leaks */
	bool list;
	/* show, path, dom */
	uint64_t addr;
	bool show_bytes;
	/* top, path --all, dom: how many rows */
	size_t top_n;
	bool top_n_set;
	bool all;
	/* redact */
	const char *out;
	bool keep_strings;
	/* export */
	const char *pprof, *folded;
	/* diff: every core (or summary) named, in order */
	const char **cores;
	size_t ncores;
	bool force;
	/* snapshot (its PID is in core) */
	bool no_fork;
	bool fork;              /* snapshot: fork mode, not write-tracked */
	/* --pid: analyze a snapshot of this live process */
	const char *live_pid;
};

int hs_cmd_info(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_list(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_leaks(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_show(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_top(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_path(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_dom(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_types(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_containers(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_redact(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_export(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_report(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_frag(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_files(struct hs_cli *cli, struct hs_snapshot *snap);
int hs_cmd_summary(struct hs_cli *cli, struct hs_snapshot *snap);
/* Takes no snapshot (snap is NULL): writes one of the live process. */
int hs_cmd_snapshot(struct hs_cli *cli, struct hs_snapshot *snap);
struct hs_live_options;
/* The live snapshot's options, from cli and the tests' environment. */
void hs_cli_live_options(const struct hs_cli *cli, struct hs_live_options *o);
/* A process id: a decimal number from 1 on. */
bool hs_cli_parse_pid(const char *s, int *ret);
struct hs_jsonw;
/* Opens its own snapshots (snap is NULL). */
int hs_cmd_diff(struct hs_cli *cli, struct hs_snapshot *snap);

/* "warnings": [...] (and "warnings_omitted" past the kept ones). */
void hs_cli_json_warnings(struct hs_jsonw *w, const struct hs_log *log);

/* The first line of a verdict (leaks, top) on a partial walk: that it is
 * partial, and the bytes it could not account for.  Nothing when whole. */
void hs_cli_partial_line(const struct hs_heap *heap);

/* Prints "heapsift: MESSAGE (see heapsift --help)", returns the usage code. */
int hs_cli_usage(const struct hs_cli *cli, const char *message);

/* Prints "heapsift: MESSAGE" and returns the exit code for err. */
int hs_cli_fail(const struct hs_cli *cli, const struct hs_error *err);

#endif
