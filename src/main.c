/* heapsift: offline heap analysis of Linux core files. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzers/rules.h"
#include "formats/jsonw.h"
#include "src/alloc.h"
#include "src/cli.h"
#include "src/cli_retain.h"
#include "src/escape.h"
#include "src/live.h"


__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "heapsift: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see heapsift --help)\n");
	va_end(ap);
	return HS_EXIT_USAGE;
}

void hs_cli_partial_line(const struct hs_heap *heap)
{
	char b[32];
	if (heap->partial)
		printf("PARTIAL: the heap walk met damaged or missing metadata%s%s%s; the figures below cover what it could read (see warnings)\n",
		       heap->unaccounted_bytes ? " and could not account for " : "",
		       heap->unaccounted_bytes ? hs_fmt_size(b, heap->unaccounted_bytes) : "",
		       heap->unaccounted_bytes ? " the allocator says it holds" : "");
}

void hs_cli_json_warnings(struct hs_jsonw *w, const struct hs_log *log)
{
	hs_jsonw_key(w, "warnings");
	hs_jsonw_array_begin(w);
	for (size_t i = 0; i < log->nkept; i++)
		hs_jsonw_string(w, log->kept[i]);
	hs_jsonw_array_end(w);
	if (log->nwarnings > log->nkept)
		hs_jsonw_kuint(w, "warnings_omitted", log->nwarnings - log->nkept);
}

int hs_cli_usage(const struct hs_cli *cli, const char *message)
{
	(void)cli;
	fprintf(stderr, "heapsift: %s (see heapsift --help)\n", message);
	return HS_EXIT_USAGE;
}

int hs_cli_fail(const struct hs_cli *cli, const struct hs_error *err)
{
	(void)cli;
	fprintf(stderr, "heapsift: %s\n", err->message);
	return err->code == HS_ERR_USAGE ? HS_EXIT_USAGE : HS_EXIT_ANALYSIS;
}

static bool parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || s[0] == '-')
		return false;
	uint64_t mul = 1;
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024ull * 1024 * 1024, end++;
	if (*end)
		return false;
	*ret = v * mul;
	return true;
}

enum {
	OPT_EXE = 256, OPT_DEBUG_DIR, OPT_SYSROOT, OPT_FORMAT, OPT_QUIET,
	OPT_STATE, OPT_MIN_SIZE, OPT_HELP, OPT_LIST, OPT_SHOW_BYTES,
	OPT_NO_UNEXPLAINED, OPT_THREADS, OPT_STATS, OPT_ALL, OPT_KEEP_STRINGS,
	OPT_FORCE, OPT_PPROF, OPT_FOLDED, OPT_HTML, OPT_RAW,
	OPT_CONSERVATIVE_ROOTS, OPT_NO_RULE, OPT_NO_SYSTEM_DEBUG, OPT_NO_FORK, OPT_FORK,
	OPT_PID,
};

/* Which command takes which command-specific option. */
enum {
	TAKES_STATE = 1 << 0,
	TAKES_LIST = 1 << 1,
	TAKES_SHOW_BYTES = 1 << 2,
	TAKES_ADDR = 1 << 3,
	TAKES_N = 1 << 4,
	TAKES_ALL = 1 << 5,
	TAKES_OUT = 1 << 6,
	TAKES_CORES = 1 << 7,   /* several cores; the command opens them */
	TAKES_EXPORT = 1 << 8,
	TAKES_OUT_ONLY = 1 << 9,    /* -o without --keep-strings */
	TAKES_PID = 1 << 10,    /* a PID instead of CORE (snapshot) */
	TAKES_LIVE = 1 << 11,   /* --pid PID instead of CORE */
};

/* Every option: the parser's table (long_opts is built from it), and what
 * --help, help COMMAND, the man page and the bash completion say.  takes:
 * 0 for an option of every command, else the TAKES_ bits of the commands
 * that take it. */
struct opt_doc {
	const char *name;       /* long name, or NULL for a short-only option */
	char short_name;
	int has_arg;
	int val;
	const char *arg;        /* the value's name, NULL when it takes none */
	unsigned takes;
	const char *help;
};

static const struct opt_doc opt_docs[] = {
	{"exe", 0, required_argument, OPT_EXE, "BINARY", 0,
	 "the executable, when the core's path to it is gone"},
	{"debug-dir", 0, required_argument, OPT_DEBUG_DIR, "DIR", 0,
	 "look for debug files in DIR/.build-id first"},
	{"sysroot", 0, required_argument, OPT_SYSROOT, "DIR", 0,
	 "the core's files live under DIR (core from another machine)"},
	{"no-system-debug", 0, no_argument, OPT_NO_SYSTEM_DEBUG, NULL, 0,
	 "ignore /usr/lib/debug and debuginfod: debug info only from --debug-dir and the files themselves"},
	{"format", 0, required_argument, OPT_FORMAT, "text|json", 0,
	 "output format (default text)"},
	{"quiet", 0, no_argument, OPT_QUIET, NULL, 0, "no warnings or progress on stderr"},
	{"no-unexplained", 0, no_argument, OPT_NO_UNEXPLAINED, NULL, 0,
	 "writable memory nothing explains is not a root"},
	{"no-rule", 0, required_argument, OPT_NO_RULE, "NAMES", 0,
	 "header rules not to apply: all, stdstring, length64, newarray, multipleinheritance, sds, pyobject, learned, typed, luastate (comma-separated)"},
	{"conservative-roots", 0, no_argument, OPT_CONSERVATIVE_ROOTS, NULL, 0,
	 "every register and the red zone below each stack pointer are roots, however the thread stopped"},
	{"threads", 0, required_argument, OPT_THREADS, "N", 0,
	 "worker threads (default: one per CPU)"},
	{"stats", 0, no_argument, OPT_STATS, NULL, 0, "time and memory of each phase, on stderr"},
	{"help", 0, no_argument, OPT_HELP, NULL, 0,
	 "this text; COMMAND --help or help COMMAND: one command"},
	{"state", 0, required_argument, OPT_STATE, "used|free|all", TAKES_STATE,
	 "which blocks (default used)"},
	{"min-size", 0, required_argument, OPT_MIN_SIZE, "N", TAKES_STATE,
	 "blocks of at least N bytes (K, M, G suffixes)"},
	{"raw", 0, no_argument, OPT_RAW, NULL, TAKES_STATE,
	 "the allocator's view only, without the analysis: fast"},
	{"list", 0, no_argument, OPT_LIST, NULL, TAKES_LIST, "every leak root, not only the groups"},
	{"show-bytes", 0, no_argument, OPT_SHOW_BYTES, NULL, TAKES_SHOW_BYTES, "the block's bytes too"},
	{"all", 0, no_argument, OPT_ALL, NULL, TAKES_ALL,
	 "one chain per block or root pointing to it"},
	{NULL, 'n', required_argument, 'n', "N", TAKES_N, "rows (at most 1000000)"},
	{NULL, 'o', required_argument, 'o', "OUT", TAKES_OUT | TAKES_OUT_ONLY,
	 "the output file (- for standard output)"},
	{"keep-strings", 0, no_argument, OPT_KEEP_STRINGS, NULL, TAKES_OUT, "keep C strings too"},
	{"force", 0, no_argument, OPT_FORCE, NULL, TAKES_CORES, "cores of different builds"},
	{"html", 0, required_argument, OPT_HTML, "OUT", TAKES_CORES, "the comparison as one HTML page"},
	{"pprof", 0, required_argument, OPT_PPROF, "OUT.pb.gz", TAKES_EXPORT, "a pprof profile"},
	{"folded", 0, required_argument, OPT_FOLDED, "OUT", TAKES_EXPORT,
	 "folded stacks (flamegraph.pl, speedscope)"},
	{"no-fork", 0, no_argument, OPT_NO_FORK, NULL, TAKES_PID,
	 "copy the memory with every thread stopped (a pause that grows with the memory)"},
	{"fork", 0, no_argument, OPT_FORK, NULL, TAKES_PID,
	 "copy the memory from a fork even where the kernel tracks writes (a pause of the page tables' copy)"},
	{"pid", 0, required_argument, OPT_PID, "PID", TAKES_LIVE,
	 "instead of CORE: a snapshot of live process PID (as heapsift snapshot takes it), in $TMPDIR, removed afterwards"},
};
enum { NOPTS = sizeof(opt_docs) / sizeof(opt_docs[0]) };

struct command {
	const char *name;
	int (*run)(struct hs_cli *, struct hs_snapshot *);
	unsigned takes;
	/* `heapsift help NAME`, `heapsift NAME --help`, the man page: the
	 * synopsis, a one-line summary, what it answers, an example (its
	 * options come from opt_docs) */
	const char *synopsis, *summary, *about, *example;
};

static const struct command commands[] = {
	{"info", hs_cmd_info, TAKES_LIVE, "heapsift info CORE [options]",
	 "process, threads, modules and their debug info, allocator totals",
	 "Process, signal (or snapshot), threads, modules and where their debug\n"
	 "info came from, the allocator and its totals (glibc's mallinfo2,\n"
	 "jemalloc's stats), and how the allocator's state was found.",
	 "heapsift info demo.core"},
	{"list", hs_cmd_list, TAKES_STATE | TAKES_LIVE,
	 "heapsift list CORE [--state used|free|all] [--min-size N] [--raw] [options]",
	 "every heap allocation with its leak class, retained size and type",
	 "Every heap allocation: address, size, state, place, and (without --raw)\n"
	 "its leak class, retained size and type.",
	 "heapsift list demo.core --state all --format json"},
	{"leaks", hs_cmd_leaks, TAKES_LIST | TAKES_LIVE, "heapsift leaks CORE [--list] [options]",
	 "leaked vs reachable: counts, bytes, leak roots by type",
	 "Leaked vs reachable, memcheck's classes: counts and bytes per class, the\n"
	 "suspects, leak roots grouped by type, and what each header rule holds.",
	 "heapsift leaks demo.core"},
	{"show", hs_cmd_show, TAKES_ADDR | TAKES_SHOW_BYTES | TAKES_LIVE,
	 "heapsift show CORE ADDR [--show-bytes] [options]",
	 "one block, who points to it, what it points to",
	 "One block: its class, type, who points to it and what it points to.",
	 "heapsift show demo.core 0x55d0c6e0b2a0"},
	{"top", hs_cmd_top, TAKES_N | TAKES_LIVE, "heapsift top CORE [-n N] [options]",
	 "what holds the memory: suspects, roots and blocks by retained size",
	 "What holds the memory: suspects, roots and blocks by retained size.",
	 "heapsift top demo.core -n 10"},
	{"path", hs_cmd_path, TAKES_ADDR | TAKES_ALL | TAKES_N | TAKES_LIVE,
	 "heapsift path CORE ADDR [--all] [-n N] [options]",
	 "the shortest chain of pointers from a root to the block",
	 "The shortest chain of pointers from a root to the block.",
	 "heapsift path demo.core 0x55d0c6e0b2a0"},
	{"dom", hs_cmd_dom, TAKES_ADDR | TAKES_N | TAKES_LIVE, "heapsift dom CORE ADDR [-n N] [options]",
	 "the block's dominators and the largest blocks it dominates",
	 "The block's dominators and the largest blocks it dominates.",
	 "heapsift dom demo.core 0x55d0c6e0b2a0"},
	{"types", hs_cmd_types, TAKES_N | TAKES_LIVE, "heapsift types CORE [-n N] [options]",
	 "per type: count, bytes, retained, leaked",
	 "Per type (C++ vtables, DWARF types, leaked blocks typed from their\n"
	 "contents): count, bytes, retained and leaked.",
	 "heapsift types demo.core -n 8"},
	{"containers", hs_cmd_containers, TAKES_N | TAKES_LIVE, "heapsift containers CORE [-n N] [options]",
	 "C++ containers (libstdc++): sizes, bytes, what inline storage would hold",
	 "Every std::vector, std::string (heap buffer), std::unordered_map/set,\n"
	 "std::map/set and std::deque in a typed root or block, per container\n"
	 "type: count, histogram of element counts, bytes in elements, unused\n"
	 "capacity and bucket arrays, and what a small-buffer variant of 1 to 16\n"
	 "elements would hold inline.",
	 "heapsift containers service.core -n 10"},
	{"files", hs_cmd_files, TAKES_LIVE, "heapsift files CORE [options]",
	 "every stdio stream (FILE): descriptor, mode, buffer, leaked or held, by whom",
	 "Every stdio stream (glibc's FILE) of the program: found on libc's list\n"
	 "of streams (_IO_list_all) and by type.  For each: its descriptor, mode,\n"
	 "buffer, whether it is reachable or leaked (a leaked stream is a leaked\n"
	 "descriptor), and what holds it.",
	 "heapsift files service.core"},
	{"redact", hs_cmd_redact, TAKES_OUT | TAKES_LIVE,
	 "heapsift redact CORE -o OUT [--keep-strings] [options]",
	 "a copy of the core without the program's data, that analyzes the same",
	 "A copy of the core without the program's data that analyzes the same.",
	 "heapsift redact demo.core -o demo.redacted.core"},
	{"frag", hs_cmd_frag, TAKES_LIVE, "heapsift frag CORE [options]",
	 "fragmentation and footprint",
	 "Fragmentation and footprint: free memory by where it sits, what it can\n"
	 "serve, memory by mapping kind.",
	 "heapsift frag demo.core"},
	{"report", hs_cmd_report, TAKES_OUT_ONLY | TAKES_LIVE, "heapsift report CORE -o OUT.html [options]",
	 "one self-contained HTML page",
	 "One self-contained HTML page: top, leaks, types, frag.",
	 "heapsift report demo.core -o demo.html"},
	{"export", hs_cmd_export, TAKES_EXPORT | TAKES_LIVE,
	 "heapsift export CORE --pprof OUT.pb.gz | --folded OUT [options]",
	 "the heap as dominator stacks for pprof and flame graphs",
	 "The heap as dominator stacks, for pprof and flame graphs.",
	 "heapsift export demo.core --pprof demo.pb.gz"},
	{"summary", hs_cmd_summary, TAKES_OUT_ONLY | TAKES_LIVE, "heapsift summary CORE -o OUT.json [options]",
	 "a small summary of the heap without its data, for heapdiff",
	 "A small JSON document of the core's analysis, without the program's\n"
	 "data: totals, per type, per root, per size, the largest dominators,\n"
	 "fragmentation, the allocator's counters, the pid, the time and the\n"
	 "modules' build-ids.  heapdiff compares summaries as it compares cores.",
	 "heapsift summary service.core -o service.summary.json"},
	{"snapshot", hs_cmd_snapshot, TAKES_PID | TAKES_OUT_ONLY,
	 "heapsift snapshot PID -o OUT [--fork | --no-fork] [options]",
	 "a core of a live process, with a pause of milliseconds",
	 "A core of live process PID, for every other command, taken with a short\n"
	 "pause.  Where the kernel tracks writes (Linux 6.7+), the memory is copied\n"
	 "while the process runs, with its writes tracked (userfaultfd), then every\n"
	 "thread is stopped (ptrace), its registers read, and only what was written\n"
	 "meanwhile read again: the pause is that, not the copy.  Elsewhere, or with\n"
	 "--fork, the process is cloned at the stop and the memory copied from the\n"
	 "clone (a copy-on-write copy): the pause is the clone's copy of the page\n"
	 "tables.  With --no-fork the memory is copied while the threads are\n"
	 "stopped.  The pause is printed on stderr.",
	 "heapsift snapshot 4242 -o service.core"},
	{"diff", hs_cmd_diff, TAKES_CORES | TAKES_N,
	 "heapsift diff SNAP1 SNAP2 [SNAP3 ...] [--force] [--html OUT] [-n N] [options]",
	 "what grew between snapshots, cores or summaries (heapdiff is the same command)",
	 "What grew between snapshots, per type and per root, and the trend over\n"
	 "three or more (heapdiff is the same command).  A snapshot is a core or a\n"
	 "summary (heapsift summary), in any order; with a summary among them,\n"
	 "types are compared by their totals, not block by block.",
	 "heapdiff phase1.core phase2.summary.json phase3.core"},
};
enum { NCOMMANDS = sizeof(commands) / sizeof(commands[0]) };

/* "--name", "-n", and with its value's name "--name VALUE", "-n N" */
static void opt_name(const struct opt_doc *o, bool with_arg, char *buf, size_t len)
{
	bool arg = with_arg && o->arg;
	if (o->name)
		snprintf(buf, len, "--%s%s%s", o->name, arg ? " " : "", arg ? o->arg : "");
	else
		snprintf(buf, len, "-%c%s%s", o->short_name, arg ? " " : "", arg ? o->arg : "");
}

/* The options a command takes of its own (mine) or every command's. */
static void print_options(FILE *f, const struct command *cmd, bool mine)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_doc *o = &opt_docs[i];
		if (mine ? !(o->takes & cmd->takes) : o->takes != 0)
			continue;
		char label[64];
		opt_name(o, true, label, sizeof(label));
		fprintf(f, "  %-22s %s\n", label, o->help);
	}
}

/* `heapsift help`, `heapsift --help`: everything, on stdout. */
static int full_usage(void)
{
	printf("usage: heapsift COMMAND CORE [options]\n\ncommands:\n");
	int width = 0;  /* the longest name, and two spaces */
	for (size_t i = 0; i < NCOMMANDS; i++)
		if ((int)strlen(commands[i].name) + 1 > width)
			width = (int)strlen(commands[i].name) + 1;
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("  %-*s %s\n", width, commands[i].name, commands[i].summary);
	printf("\noptions of every command:\n");
	print_options(stdout, NULL, false);
	printf("  %-22s %s\n", "--version", "heapsift's version");
	printf("  %-22s %s\n", "--", "the end of the options: what follows is CORE (ADDR), even when it starts with '-'");
	printf("\n'heapsift help COMMAND' shows a command's own options and an example.\n"
	       "exit status: 0 success, 1 analysis error, 2 usage error\n");
	return HS_EXIT_OK;
}

/* `heapsift help NAME`, `heapsift NAME --help`: one command, on stdout. */
static int command_help(const struct command *cmd)
{
	printf("usage: %s\n\n%s\n", cmd->synopsis, cmd->about);
	bool any = false;
	for (size_t i = 0; i < NOPTS; i++)
		any |= (opt_docs[i].takes & cmd->takes) != 0;
	if (any) {
		printf("\noptions of %s:\n", cmd->name);
		print_options(stdout, cmd, true);
	}
	printf("\noptions of every command:\n");
	print_options(stdout, cmd, false);
	printf("\nexample:\n  %s\n", cmd->example);
	return HS_EXIT_OK;
}

/* The man page, roff (`heapsift help --man`): the same tables. */
static void roff(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '-')
			putchar('\\');
		putchar(*s == '\n' ? ' ' : *s);
	}
}

static int man_page(void)
{
	printf(".TH HEAPSIFT 1 \"\" \"heapsift %s\" \"User Commands\"\n.SH NAME\n"
	       "heapsift, heapdiff \\- offline heap analysis of Linux core files\n"
	       ".SH SYNOPSIS\n.B heapsift\n.I COMMAND CORE\n[\\fIoptions\\fR]\n"
	       ".SH DESCRIPTION\nheapsift reads an ELF core of an x86\\-64 Linux process and "
	       "rebuilds its glibc or jemalloc heap: leaks, what holds the memory, types, "
	       "fragmentation, and the difference between snapshots.\n.SH COMMANDS\n",
	       HS_VERSION);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct command *c = &commands[i];
		printf(".SS %s\n", c->name);
		roff(c->synopsis);
		printf("\n.PP\n");
		roff(c->about);
		printf("\n");
		for (size_t k = 0; k < NOPTS; k++) {
			const struct opt_doc *o = &opt_docs[k];
			if (!(o->takes & c->takes))
				continue;
			char label[64];
			opt_name(o, true, label, sizeof(label));
			printf(".TP\n.B ");
			roff(label);
			printf("\n");
			roff(o->help);
			printf("\n");
		}
		printf(".PP\nExample: ");
		roff(c->example);
		printf("\n");
	}
	printf(".SH OPTIONS\nThese options are taken by every command.\n");
	for (size_t k = 0; k < NOPTS; k++) {
		const struct opt_doc *o = &opt_docs[k];
		if (o->takes)
			continue;
		char label[64];
		opt_name(o, true, label, sizeof(label));
		printf(".TP\n.B ");
		roff(label);
		printf("\n");
		roff(o->help);
		printf("\n");
	}
	printf(".TP\n.B \\-\\-version\nheapsift's version\n"
	       ".SH EXIT STATUS\n0 success, 1 analysis error, 2 usage error.\n");
	return HS_EXIT_OK;
}

/* The bash completion (`heapsift help --completion`): the same tables. */
static int completion(void)
{
	printf("# bash completion for heapsift and heapdiff (heapsift help --completion)\n"
	       "_heapsift() {\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}\n"
	       "\t[ \"${COMP_WORDS[0]##*/}\" = heapdiff ] && cmd=diff\n"
	       "\tif [ \"$COMP_CWORD\" = 1 ] && [ \"${COMP_WORDS[0]##*/}\" != heapdiff ]; then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"");
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("%s%s", i ? " " : "", commands[i].name);
	printf(" help --help --version\" -- \"$cur\"))\n\t\treturn\n\tfi\n"
	       "\tlocal common=\"");
	bool first = true;
	char name[64];
	for (size_t k = 0; k < NOPTS; k++)
		if (!opt_docs[k].takes && opt_docs[k].name) {
			opt_name(&opt_docs[k], false, name, sizeof(name));
			printf("%s%s", first ? "" : " ", name);
			first = false;
		}
	printf("\" own=\n\tcase $cmd in\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		printf("\t%s) own=\"", commands[i].name);
		first = true;
		for (size_t k = 0; k < NOPTS; k++) {
			const struct opt_doc *o = &opt_docs[k];
			if (!(o->takes & commands[i].takes))
				continue;
			opt_name(o, false, name, sizeof(name));
			printf("%s%s", first ? "" : " ", name);
			first = false;
		}
		printf("\" ;;\n");
	}
	printf("\tesac\n"
	       "\tif [[ $cur == -* ]]; then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"$own $common\" -- \"$cur\"))\n"
	       "\telse\n"
	       "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	       "\tfi\n"
	       "}\n"
	       "complete -F _heapsift heapsift heapdiff\n");
	return HS_EXIT_OK;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* A bare `heapsift`: what to type next, on stderr. */
static int short_usage(void)
{
	fprintf(stderr, "usage: heapsift COMMAND CORE [options]\ncommands:");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\n'heapsift help' lists everything, 'heapsift help COMMAND' one command;\n"
		"'heapsift --version' the version.\n");
	return HS_EXIT_USAGE;
}

static int not_an_option_of(const struct command *cmd, const char *opt)
{
	return usage_error("%s is not an option of %s", opt, cmd->name);
}

/* A field of /proc/self/status in KiB, or 0. */
static unsigned long status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long v = 0;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtoul(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static void print_stats(const struct hs_snapshot *s, double total)
{
	fprintf(stderr,
		"heapsift: stats: open %.3fs, modules %.3fs, heap %.3fs, roots %.3fs, graph %.3fs, mark %.3fs, dominators %.3fs, types %.3fs, total %.3fs\n",
		s->t_open, s->t_dwarf, s->t_heap, s->t_roots, s->t_graph,
		s->t_mark, s->t_retain, s->t_types, total);
	if (s->heap)
		fprintf(stderr, "heapsift: stats: %zu allocations", s->heap->nallocs);
	if (s->graph)
		fprintf(stderr, ", %llu pointer edges, %llu words scanned",
			(unsigned long long)s->graph->nedges,
			(unsigned long long)s->graph->words_scanned);
	if (s->heap)
		fprintf(stderr, "\n");
	/* the work the graph's passes did, to be read per allocation */
	if (s->mark || s->retain || s->types) {
		fprintf(stderr, "heapsift: stats: work:");
		const char *sep = " ";
		if (s->mark) {
			fprintf(stderr, "%smark %llu edges read", sep,
				(unsigned long long)s->mark->edges_read);
			sep = "; ";
		}
		if (s->retain) {
			const struct hs_domwork *w = &s->retain->tree->work;
			fprintf(stderr, "%sdominators %llu edges searched, %llu predecessors filed, %llu semi-dominator steps, %llu NCA steps",
				sep, (unsigned long long)w->searched,
				(unsigned long long)w->filed,
				(unsigned long long)w->semi_steps,
				(unsigned long long)w->nca_steps);
			sep = "; ";
		}
		if (s->types)
			fprintf(stderr, "%stypes %llu pointers followed, %llu inference checks", sep,
				(unsigned long long)s->types->followed,
				(unsigned long long)s->types->infer_checks);
		fprintf(stderr, "\n");
	}
	fprintf(stderr,
		"heapsift: stats: peak RSS %lu KiB; now: anonymous %lu KiB, file-backed (the mapped core and libraries) %lu KiB\n",
		status_kib("VmHWM"), status_kib("RssAnon"), status_kib("RssFile"));
}

/* Text output goes through the text policy of src/escape.h whatever prints
 * it: in text mode stdout is an escaping stream, and so is stderr always
 * (errors and warnings name paths and symbols from the core, and the
 * command line's own arguments).  The stdio streams they replace stay for
 * what must pass raw: progress lines (terminal control sequences of our
 * own) and the library's warnings, which src/log.c escapes itself.  JSON is
 * escaped by formats/jsonw.c and goes to stdout as it is. */
static FILE *raw_stdout, *raw_stderr;

/* In text mode, stdout becomes an escaping stream. */
static bool escape_stdout(void)
{
	fflush(stdout);
	FILE *f = hs_escape_stream(STDOUT_FILENO,
				   isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
	if (!f)
		return false;
	stdout = f;
	return true;
}

/* A positional argument: the core (the cores of diff), then an address.
 * Returns -1, or the exit code of a usage error. */
static int positional(struct hs_cli *cli, const struct command *cmd, int argc,
		      const char *arg, const char **addr)
{
	if (cmd->takes & TAKES_CORES) {
		if (!cli->cores)
			cli->cores = hs_calloc((size_t)argc, sizeof(*cli->cores));
		if (!cli->cores)
			return usage_error("%s", "out of memory");
		cli->cores[cli->ncores++] = arg;
		if (!cli->core)
			cli->core = cli->cores[0];
	} else if (!cli->core && !cli->live_pid) {
		cli->core = arg;
	} else if ((cmd->takes & TAKES_ADDR) && !*addr) {
		*addr = arg;
	} else {
		return usage_error("unexpected argument '%s'", arg);
	}
	return -1;
}

/* An option getopt does not know, in the argument arg: a short one inside a
 * cluster ("-x.core": 'x'), a long one, or a long one given a value it does
 * not take. */
static int bad_option(const char *arg)
{
	static const char hint[] =
		"to name a file that starts with '-', put '--' before it or write ./";
	if (optopt != 0 && optopt < 256) {      /* a short one (char may be signed) */
		if (strlen(arg) > 2)
			return usage_error("unknown option '-%c' in '%s'; %s%s",
					   (char)optopt, arg, hint, arg);
		return usage_error("unknown option '-%c'; %s%s", (char)optopt, hint,
				   arg);
	}
	int n = (int)strcspn(arg, "=");
	if (optopt >= 256)
		return usage_error("option '%.*s' takes no value", n, arg);
	/* a prefix of several long options */
	char names[512] = "";
	size_t len = 0;
	int matches = 0;
	for (const struct opt_doc *o = opt_docs; o < opt_docs + NOPTS; o++) {
		if (o->name && n > 2 && !strncmp(o->name, arg + 2, (size_t)n - 2) &&
		    len < sizeof(names)) {
			len += (size_t)snprintf(names + len, sizeof(names) - len,
						"%s--%s", matches ? ", " : "", o->name);
			matches++;
		}
	}
	if (matches > 1)
		return usage_error("ambiguous option '%.*s' (%s)", n, arg, names);
	return usage_error("unknown option '%.*s'; %s%s", n, arg, hint, arg);
}

/* Options and positional arguments from argv[2] on.  Returns -1, or the
 * exit code of a usage error. */
static int parse_options(int argc, char **argv, const struct command *cmd,
			 struct hs_cli *cli, bool *stats)
{
	optind = 2;
	opterr = 0;
	const char *addr = NULL;
	bool end_of_options = false;
	struct option long_opts[NOPTS + 1];
	size_t nlong = 0;
	for (size_t i = 0; i < NOPTS; i++)
		if (opt_docs[i].name)
			long_opts[nlong++] = (struct option){opt_docs[i].name, opt_docs[i].has_arg,
							     NULL, opt_docs[i].val};
	long_opts[nlong] = (struct option){NULL, 0, NULL, 0};
	for (;;) {
		/* argv[before] is the argument getopt looks at: an option, a
		 * cluster of short ones, or what ends the options */
		int before = optind;
		int c = end_of_options || optind >= argc ? -1 :
			getopt_long(argc, argv, "+:n:o:", long_opts, NULL);
		if (c == -1) {
			/* getopt skips a "--" (not one that is an option's
			 * value) and returns -1; called again, it would read
			 * options after it, so it is not called again */
			if (!end_of_options && optind == before + 1 &&
			    !strcmp(argv[before], "--"))
				end_of_options = true;
			if (optind >= argc)
				break;
			int rc = positional(cli, cmd, argc, argv[optind++], &addr);
			if (rc >= 0)
				return rc;
			continue;
		}
		/* an option of other commands */
		for (size_t i = 0; i < NOPTS; i++) {
			const struct opt_doc *o = &opt_docs[i];
			if (o->val == c && o->takes && !(o->takes & cmd->takes)) {
				char label[64];
				opt_name(o, false, label, sizeof(label));
				return not_an_option_of(cmd, label);
			}
		}
		switch (c) {
		case OPT_EXE: cli->opts.exe = optarg; break;
		case OPT_DEBUG_DIR: cli->opts.debug_dir = optarg; break;
		case OPT_SYSROOT: cli->opts.sysroot = optarg; break;
		case OPT_NO_SYSTEM_DEBUG:
			/* libdwfl asks debuginfod when DEBUGINFOD_URLS is set:
			 * the CLI's own environment, for this process only */
			cli->opts.no_system_debug = true;
			unsetenv("DEBUGINFOD_URLS");
			break;
		case OPT_QUIET: cli->quiet = true; break;
		case OPT_HELP:
			return command_help(cmd);
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				cli->format = HS_FORMAT_TEXT;
			else if (!strcmp(optarg, "json"))
				cli->format = HS_FORMAT_JSON;
			else
				return usage_error("--format takes text or json, not '%s'",
						   optarg);
			break;
		case OPT_LIST:
			cli->list = true;
			break;
		case OPT_SHOW_BYTES:
			cli->show_bytes = true;
			break;
		case 'n': {
			uint64_t n;
			if (!parse_size(optarg, &n) || n < 1 || n > 1000000)
				return usage_error("-n takes a number from 1 to 1000000, not '%s'",
						   optarg);
			cli->top_n = (size_t)n;
			cli->top_n_set = true;
			break;
		}
		case 'o':
			cli->out = optarg;
			break;
		case OPT_KEEP_STRINGS:
			cli->keep_strings = true;
			break;
		case OPT_PPROF:
		case OPT_FOLDED:
			if (c == OPT_PPROF)
				cli->pprof = optarg;
			else
				cli->folded = optarg;
			break;
		case OPT_RAW:
			cli->raw = true;
			break;
		case OPT_HTML:
			cli->out = optarg;
			break;
		case OPT_FORCE:
			cli->force = true;
			break;
		case OPT_NO_FORK:
			cli->no_fork = true;
			break;
		case OPT_FORK:
			cli->fork = true;
			break;
		case OPT_PID: {
			int pid;
			if (!hs_cli_parse_pid(optarg, &pid))
				return usage_error("--pid takes a process id, not '%s'", optarg);
			cli->live_pid = optarg;
			break;
		}
		case OPT_ALL:
			cli->all = true;
			break;
		case OPT_STATS:
			*stats = true;
			break;
		case OPT_NO_UNEXPLAINED:
			cli->opts.no_unexplained = true;
			break;
		case OPT_CONSERVATIVE_ROOTS:
			cli->opts.conservative_roots = true;
			break;
		case OPT_NO_RULE: {
			unsigned on = HS_RULES_ALL;
			if (!hs_rules_parse_off(optarg, &on))
				return usage_error("--no-rule takes all, stdstring, length64, newarray, multipleinheritance, sds, pyobject, learned, typed or luastate (separated by commas), not '%s'",
						   optarg);
			cli->opts.rules_off = optarg;
			break;
		}
		case OPT_THREADS: {
			uint64_t n;
			if (!parse_size(optarg, &n) || n < 1 || n > 64)
				return usage_error("--threads takes a number from 1 to 64, not '%s'",
						   optarg);
			cli->opts.threads = (unsigned)n;
			break;
		}
		case OPT_STATE:
			if (!strcmp(optarg, "used"))
				cli->state = HS_STATE_USED;
			else if (!strcmp(optarg, "free"))
				cli->state = HS_STATE_FREE;
			else if (!strcmp(optarg, "all"))
				cli->state = -1;
			else
				return usage_error("--state takes used, free or all, not '%s'",
						   optarg);
			break;
		case OPT_MIN_SIZE:
			if (!parse_size(optarg, &cli->min_size))
				return usage_error("--min-size takes a size in bytes, not '%s'",
						   optarg);
			break;
		case ':':
			if (optopt > 0 && optopt < 256)
				return usage_error("option '-%c' needs an argument",
						   optopt);
			return usage_error("option '%s' needs an argument",
					   argv[before]);
		default:
			return bad_option(argv[before]);
		}
	}
	/* `show ADDR --pid PID`: ADDR came first and was taken for CORE */
	if (cli->live_pid && cli->core && (cmd->takes & TAKES_ADDR) && !addr) {
		addr = cli->core;
		cli->core = NULL;
	}
	if (cli->live_pid && cli->core)
		return usage_error("%s", "CORE and --pid: one or the other");
	if (!cli->core && !cli->live_pid)
		return usage_error("%s", (cmd->takes & TAKES_PID) ? "missing PID" : "missing CORE");
	if (cmd->takes & TAKES_ADDR) {
		char *end;
		if (!addr)
			return usage_error("%s", "missing ADDR");
		errno = 0;
		cli->addr = strtoull(addr, &end, 16);
		if (errno || end == addr || *end)
			return usage_error("ADDR must be a hexadecimal address, not '%s'",
					   addr);
	}
	return -1;
}

/* --pid: a snapshot of the process into a new file of $TMPDIR, named in
 * path.  Returns -1, or the exit code of a failure (nothing left). */
static int live_snapshot(struct hs_cli *cli, char *path, size_t len)
{
	int pid;
	hs_cli_parse_pid(cli->live_pid, &pid);
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(path, len, "%s/heapsift-%d-XXXXXX.core", dir, pid) >= len)
		return usage_error("%s", "TMPDIR is too long");
	int fd = mkstemps(path, 5);
	if (fd < 0) {
		fprintf(stderr, "heapsift: %s: %s\n", path, strerror(errno));
		path[0] = 0;
		return HS_EXIT_ANALYSIS;
	}
	close(fd);
	struct hs_live_options o;
	hs_cli_live_options(cli, &o);
	struct hs_live_result r;
	struct hs_error *err = hs_live_snapshot(pid, path, &o, &r);
	if (err) {
		unlink(path);
		path[0] = 0;
		int rc = hs_cli_fail(cli, err);
		hs_error_destroy(err);
		return rc;
	}
	if (!cli->quiet)
		fprintf(stderr, "heapsift: snapshot of process %d: paused %.1f ms%s%s%s\n",
			pid, r.pause_ms, r.fallback[0] ? " (no fork: " : "",
			r.fallback[0] ? r.fallback : "", r.fallback[0] ? ")" : "");
	return -1;
}

static int run(int argc, char **argv)
{
	struct hs_cli cli = {.prog = "heapsift", .state = HS_STATE_USED, .top_n = 20};
	/* heapdiff is heapsift diff */
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	char **args = argv;
	char *diff_argv[argc + 2];
	if (!strcmp(base, "heapdiff")) {
		diff_argv[0] = argv[0];
		diff_argv[1] = (char *)"diff";
		for (int i = 1; i < argc; i++)
			diff_argv[i + 1] = argv[i];
		diff_argv[argc + 1] = NULL;
		argc++;
		args = diff_argv;
	}
	argv = args;
	if (argc < 2)
		return short_usage();
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("heapsift %s\n", HS_VERSION);
		return HS_EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			if (!strcmp(argv[2], "--man"))
				return man_page();
			if (!strcmp(argv[2], "--completion"))
				return completion();
			const struct command *c = find_command(argv[2]);
			if (!c)
				return usage_error("unknown command '%s'", argv[2]);
			return command_help(c);
		}
		return full_usage();
	}
	const struct command *cmd = find_command(argv[1]);
	if (!cmd)
		return usage_error("unknown command '%s'", argv[1]);
	cli.command = cmd->name;

	bool stats = false;
	int rc = parse_options(argc, argv, cmd, &cli, &stats);
	if (rc < 0 && cli.format == HS_FORMAT_TEXT && !escape_stdout())
		rc = usage_error("%s", "out of memory");
	if (rc >= 0) {
		free(cli.cores);
		return rc;
	}
	/* warnings are escaped by the log; its progress lines must pass */
	cli.opts.warnings = cli.quiet ? NULL : raw_stderr;
	cli.opts.progress = !cli.quiet && isatty(STDERR_FILENO);
	/* HEAPSIFT_PROGRESS_DELAY=SECONDS: when a phase's progress shows
	 * (docs/commands.md; 0 at once, for the tests) */
	const char *delay = getenv("HEAPSIFT_PROGRESS_DELAY");
	if (delay && *delay) {
		char *end;
		double d = strtod(delay, &end);
		if (!*end && d >= 0 && d < 1e6)
			cli.opts.progress_delay = d > 0 ? d : -1;
	}
	/* HEAPSIFT_TEST_KEEP_DEBUG=1: the modules' debug info is kept to the
	 * end (the tests compare the output with it let go) */
	const char *keep = getenv("HEAPSIFT_TEST_KEEP_DEBUG");
	cli.opts.keep_debug = keep && *keep && strcmp(keep, "0");
	/* HEAPSIFT_TEST_TYPES_NARROW_MAX=N: the types' table widens to 32
	 * bits once a registry index reaches N (the tests compare the output
	 * with the default's) */
	const char *narrow = getenv("HEAPSIFT_TEST_TYPES_NARROW_MAX");
	if (narrow && *narrow) {
		char *end;
		unsigned long v = strtoul(narrow, &end, 10);
		if (!*end && v < UINT16_MAX)
			cli.opts.types_narrow_max = (uint32_t)v;
	}
	/* HEAPSIFT_TEST_SHARERS_SPLIT=sources|targets|pairs|none: how `top`
	 * splits the sharers' passes between two threads (the tests compare
	 * the output with one thread's) */
	const char *split = getenv("HEAPSIFT_TEST_SHARERS_SPLIT");
	if (split && *split)
		cli.opts.sharers_split = !strcmp(split, "none") ? HS_SHARERS_ONE :
					 !strcmp(split, "sources") ? HS_SHARERS_BY_SOURCE :
					 !strcmp(split, "targets") ? HS_SHARERS_BY_TARGET :
					 !strcmp(split, "pairs") ? HS_SHARERS_BY_PAIRS : 0;
	/* HEAPSIFT_TEST_TYPES_AFTER=1: the types come after the graph, not
	 * beside its scan (the tests compare the output with the default's) */
	const char *after = getenv("HEAPSIFT_TEST_TYPES_AFTER");
	cli.opts.types_after = after && *after && strcmp(after, "0");
	if (cmd->takes & TAKES_CORES) {
		rc = cmd->run(&cli, NULL);
		free(cli.cores);
		return rc;
	}
	if (cmd->takes & TAKES_PID)
		return cmd->run(&cli, NULL);
	/* --pid: a snapshot in $TMPDIR, analyzed, removed */
	char live_core[PATH_MAX] = "";
	if (cli.live_pid) {
		rc = live_snapshot(&cli, live_core, sizeof(live_core));
		if (rc >= 0)
			return rc;
		cli.core = live_core;
	}
	/* info lists every module with where its debug info came from, and
	 * reads only the heap's totals.  A command that marks the heap reads
	 * every module's debug info too, for the types that the mark's
	 * typed rule needs (analyzers/types.c): all but frag, redact and
	 * list --raw, which read no more than the heap and the roots.  With
	 * two threads or more it is then read while the heap is walked. */
	cli.opts.totals_only = cmd->run == hs_cmd_info;
	cli.opts.all_debug = cmd->run == hs_cmd_info ||
			     (cmd->run == hs_cmd_list ? !cli.raw :
			      cmd->run != hs_cmd_frag && cmd->run != hs_cmd_redact);
	struct hs_snapshot *snap;
	double t_start = hs_now();
	struct hs_error *err = hs_snapshot_open(cli.core, &cli.opts, &snap);
	if (err) {
		rc = hs_cli_fail(&cli, err);
		hs_error_destroy(err);
		if (live_core[0])
			unlink(live_core);
		return rc;
	}
	rc = cmd->run(&cli, snap);
	if (stats)
		print_stats(snap, hs_now() - t_start);
	hs_snapshot_destroy(snap);
	if (live_core[0])
		unlink(live_core);
	return rc;
}

/* Whether the kernel gives transparent huge pages to memory that asks
 * for them ("always" or "madvise", not "never"). */
static bool huge_pages_offered(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (!f)
		return false;
	char line[128];
	bool ok = fgets(line, sizeof(line), f) && !strstr(line, "[never]");
	fclose(f);
	return ok;
}

/* glibc's malloc puts its heap and its big blocks on transparent huge
 * pages when the tunable glibc.malloc.hugetlb is 1 (glibc 2.35 and later;
 * earlier ones ignore it).  heapsift's tables are tens of bytes per
 * allocation of the core, filled once and then read in random order:
 * with huge pages they take a page fault per 2 MiB instead of per 4 KiB
 * and fewer TLB misses (docs/performance.md: `leaks` on the bench core
 * 10% faster).  Tunables are read when a program starts, so heapsift
 * starts itself again, once, with it set.  A GLIBC_TUNABLES that names
 * glibc.malloc.hugetlb already (=0 turns this off) is left alone; where
 * the program cannot be started again (no /proc), it goes on as it is. */
static void restart_with_huge_pages(char **argv)
{
#ifdef HS_ASAN  /* (src/alloc.h) */
	/* the sanitizer's allocator is not glibc's: nothing to gain, and a
	 * sanitized program is slow to start */
	(void)argv;
	return;
#endif
	const char *old = getenv("GLIBC_TUNABLES");
	if ((old && strstr(old, "glibc.malloc.hugetlb")) || !huge_pages_offered())
		return;
	char *saved = old ? strdup(old) : NULL;
	char *v = NULL;
	if ((old && !saved) ||
	    asprintf(&v, "%s%sglibc.malloc.hugetlb=1", old ? old : "",
		     old && *old ? ":" : "") < 0) {
		free(saved);
		return;
	}
	if (!setenv("GLIBC_TUNABLES", v, 1))
		execv("/proc/self/exe", argv);
	if (saved)
		setenv("GLIBC_TUNABLES", saved, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	free(saved);
	free(v);
}

int main(int argc, char **argv)
{
	restart_with_huge_pages(argv);
	/* Blocks of 1 MiB and more each from a mapping of its own, given
	 * back when freed.  Set, the threshold stays where it is: glibc
	 * would otherwise raise it to the size of each mapped block freed
	 * (up to 32 MiB), and the per-allocation tables that phases free
	 * would stay in malloc's heap as holes the next phase's tables do
	 * not fit (docs/performance.md, 2026-12-03: 7 to 8 bytes per
	 * allocation of peak memory on the four benchmark cores, the time
	 * unchanged or better). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	raw_stdout = stdout;
	raw_stderr = stderr;
	FILE *err = hs_escape_stream(STDERR_FILENO, _IONBF);
	if (err)
		stderr = err;
	int rc = run(argc, argv);
	/* closing the escaping stream writes what it still holds */
	bool bad = stdout != raw_stdout && fclose(stdout) != 0;
	int errnum = errno;
	stdout = raw_stdout;
	if (!bad) {
		bad = fflush(stdout) != 0 || ferror(stdout);
		errnum = errno;
	}
	if (bad) {
		if (errnum != EPIPE)
			fprintf(stderr, "heapsift: writing output: %s\n",
				strerror(errnum));
		if (!rc)
			rc = HS_EXIT_ANALYSIS;
	}
	if (err) {
		stderr = raw_stderr;
		fclose(err);
	}
	return rc;
}
