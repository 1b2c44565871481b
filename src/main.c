/* heapsift: offline heap analysis of Linux core files. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzers/rules.h"
#include "formats/jsonw.h"
#include "src/cli.h"
#include "src/escape.h"

static const char usage_text[] =
	"usage: heapsift COMMAND CORE [options]\n"
	"\n"
	"commands:\n"
	"  info    process, threads, modules and their debug info, allocator totals\n"
	"  list    every heap allocation with its leak class, retained size and\n"
	"          type (--state used|free|all, --min-size N; --raw: the\n"
	"          allocator's view only, without the analysis: fast)\n"
	"  leaks   leaked vs reachable: counts, bytes, leak roots by size (--list)\n"
	"  show    heapsift show CORE ADDR: one block, who points to it, what it\n"
	"          points to (--show-bytes prints its bytes)\n"
	"  top     what holds the memory: suspects, roots and blocks by retained\n"
	"          size (-n N rows)\n"
	"  path    heapsift path CORE ADDR: the shortest chain of pointers from a\n"
	"          root to the block (--all: one per block or root pointing to it)\n"
	"  dom     heapsift dom CORE ADDR: the block's dominators and the largest\n"
	"          blocks it dominates (-n N)\n"
	"  types   per type (C++ vtables, DWARF types): count, bytes, retained,\n"
	"          leaked (-n N rows)\n"
	"  redact  heapsift redact CORE -o OUT [--keep-strings]: a copy of the core\n"
	"          without the program's data, that analyzes the same\n"
	"  frag    fragmentation and footprint: free memory by where it sits, what\n"
	"          it can serve, memory by mapping kind\n"
	"  report  heapsift report CORE -o OUT.html: one self-contained HTML page\n"
	"  export  heapsift export CORE --pprof OUT.pb.gz | --folded OUT: the heap\n"
	"          as dominator stacks for pprof and flame graphs\n"
	"  diff    heapsift diff CORE1 CORE2 [CORE3 ...] (or heapdiff ...): what\n"
	"          grew per type and per root, and the trend over 3 or more\n"
	"          (--force: cores of different builds; --html OUT: as a page)\n"
	"\n"
	"options:\n"
	"  --exe BINARY       the executable, when the core's path to it is gone\n"
	"  --debug-dir DIR    look for debug files in DIR/.build-id first\n"
	"  --sysroot DIR      the core's files live under DIR (core from another machine)\n"
	"  --no-system-debug  ignore /usr/lib/debug and debuginfod: debug info only\n"
	"                     from --debug-dir and the files themselves\n"
	"  --format text|json output format (default text)\n"
	"  --quiet            no warnings or progress on stderr\n"
	"  --no-unexplained   writable memory nothing explains is not a root\n"
	"  --no-rule NAMES    header rules not to apply: all, stdstring, length64,\n"
	"                     newarray, multipleinheritance, sds, learned, typed\n"
	"                     (comma-separated)\n"
	"  --conservative-roots  every register and the red zone below each stack\n"
	"                     pointer are roots, however the thread stopped\n"
	"  --threads N        worker threads (default: one per CPU)\n"
	"  --stats            time and memory of each phase, on stderr\n"
	"  --help             this text; COMMAND --help or help COMMAND: one command\n"
	"  --version          heapsift's version\n"
	"  --                 the end of the options: what follows is CORE (ADDR),\n"
	"                     even when it starts with '-'\n"
	"\n"
	"exit status: 0 success, 1 analysis error, 2 usage error\n";

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

const char *hs_fmt_size(char *buf, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, 32, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, 32, "%.1f %s", v, units[u]);
	return buf;
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
	OPT_CONSERVATIVE_ROOTS, OPT_NO_RULE, OPT_NO_SYSTEM_DEBUG,
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
};

static const struct option long_opts[] = {
	{"exe", required_argument, NULL, OPT_EXE},
	{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	{"sysroot", required_argument, NULL, OPT_SYSROOT},
	{"no-system-debug", no_argument, NULL, OPT_NO_SYSTEM_DEBUG},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"state", required_argument, NULL, OPT_STATE},
	{"min-size", required_argument, NULL, OPT_MIN_SIZE},
	{"help", no_argument, NULL, OPT_HELP},
	{"list", no_argument, NULL, OPT_LIST},
	{"show-bytes", no_argument, NULL, OPT_SHOW_BYTES},
	{"no-unexplained", no_argument, NULL, OPT_NO_UNEXPLAINED},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"stats", no_argument, NULL, OPT_STATS},
	{"all", no_argument, NULL, OPT_ALL},
	{"keep-strings", no_argument, NULL, OPT_KEEP_STRINGS},
	{"force", no_argument, NULL, OPT_FORCE},
	{"pprof", required_argument, NULL, OPT_PPROF},
	{"folded", required_argument, NULL, OPT_FOLDED},
	{"html", required_argument, NULL, OPT_HTML},
	{"raw", no_argument, NULL, OPT_RAW},
	{"conservative-roots", no_argument, NULL, OPT_CONSERVATIVE_ROOTS},
	{"no-rule", required_argument, NULL, OPT_NO_RULE},
	{NULL, 0, NULL, 0},
};

struct command {
	const char *name;
	int (*run)(struct hs_cli *, struct hs_snapshot *);
	unsigned takes;
	/* `heapsift help NAME`, `heapsift NAME --help`: the synopsis, what it
	 * answers, its own options, an example */
	const char *synopsis, *about, *options, *example;
};

static const struct command commands[] = {
	{"info", hs_cmd_info, 0, "heapsift info CORE [options]",
	 "Process, signal (or snapshot), threads, modules and where their debug\n"
	 "info came from, the allocator and its totals (glibc's mallinfo2,\n"
	 "jemalloc's stats), and how the allocator's state was found.",
	 NULL, "heapsift info demo.core"},
	{"list", hs_cmd_list, TAKES_STATE, "heapsift list CORE [--state used|free|all] [--min-size N] [--raw] [options]",
	 "Every heap allocation: address, size, state, place, and (without --raw)\n"
	 "its leak class, retained size and type.",
	 "  --state used|free|all  which blocks (default used)\n"
	 "  --min-size N           blocks of at least N bytes (K, M, G suffixes)\n"
	 "  --raw                  the allocator's view only, without the analysis: fast\n",
	 "heapsift list demo.core --state all --format json"},
	{"leaks", hs_cmd_leaks, TAKES_LIST, "heapsift leaks CORE [--list] [options]",
	 "Leaked vs reachable, memcheck's classes: counts and bytes per class, the\n"
	 "suspects, leak roots grouped by type, and what each header rule holds.",
	 "  --list                 every leak root, not only the groups\n",
	 "heapsift leaks demo.core"},
	{"show", hs_cmd_show, TAKES_ADDR | TAKES_SHOW_BYTES, "heapsift show CORE ADDR [--show-bytes] [options]",
	 "One block: its class, type, who points to it and what it points to.",
	 "  --show-bytes           its bytes too\n",
	 "heapsift show demo.core 0x55d0c6e0b2a0"},
	{"top", hs_cmd_top, TAKES_N, "heapsift top CORE [-n N] [options]",
	 "What holds the memory: suspects, roots and blocks by retained size.",
	 "  -n N                   rows (default 20)\n", "heapsift top demo.core -n 10"},
	{"path", hs_cmd_path, TAKES_ADDR | TAKES_ALL | TAKES_N, "heapsift path CORE ADDR [--all] [-n N] [options]",
	 "The shortest chain of pointers from a root to the block.",
	 "  --all                  one chain per block or root pointing to it\n"
	 "  -n N                   at most N chains\n",
	 "heapsift path demo.core 0x55d0c6e0b2a0"},
	{"dom", hs_cmd_dom, TAKES_ADDR | TAKES_N, "heapsift dom CORE ADDR [-n N] [options]",
	 "The block's dominators and the largest blocks it dominates.",
	 "  -n N                   rows\n", "heapsift dom demo.core 0x55d0c6e0b2a0"},
	{"types", hs_cmd_types, TAKES_N, "heapsift types CORE [-n N] [options]",
	 "Per type (C++ vtables, DWARF types, leaked blocks typed from their\n"
	 "contents): count, bytes, retained and leaked.",
	 "  -n N                   rows (default 20)\n", "heapsift types demo.core -n 8"},
	{"redact", hs_cmd_redact, TAKES_OUT, "heapsift redact CORE -o OUT [--keep-strings] [options]",
	 "A copy of the core without the program's data that analyzes the same.",
	 "  -o OUT                 the copy (- for standard output)\n"
	 "  --keep-strings         keep C strings too\n",
	 "heapsift redact demo.core -o demo.redacted.core"},
	{"diff", hs_cmd_diff, TAKES_CORES | TAKES_N, "heapsift diff CORE1 CORE2 [CORE3 ...] [--force] [--html OUT] [-n N] [options]",
	 "What grew between snapshots, per type and per root, and the trend over\n"
	 "three or more (heapdiff is the same command).",
	 "  --force                cores of different builds\n"
	 "  --html OUT             the comparison as one HTML page\n"
	 "  -n N                   rows\n",
	 "heapdiff phase1.core phase2.core phase3.core"},
	{"export", hs_cmd_export, TAKES_EXPORT, "heapsift export CORE --pprof OUT.pb.gz | --folded OUT [options]",
	 "The heap as dominator stacks, for pprof and flame graphs.",
	 "  --pprof OUT.pb.gz      a pprof profile\n"
	 "  --folded OUT           folded stacks (flamegraph.pl, speedscope)\n",
	 "heapsift export demo.core --pprof demo.pb.gz"},
	{"report", hs_cmd_report, TAKES_OUT_ONLY, "heapsift report CORE -o OUT.html [options]",
	 "One self-contained HTML page: top, leaks, types, frag.",
	 "  -o OUT.html            the page (- for standard output)\n",
	 "heapsift report demo.core -o demo.html"},
	{"frag", hs_cmd_frag, 0, "heapsift frag CORE [options]",
	 "Fragmentation and footprint: free memory by where it sits, what it can\n"
	 "serve, memory by mapping kind.",
	 NULL, "heapsift frag demo.core"},
};

/* `heapsift help NAME`: one command's usage, on stdout. */
static int command_help(const struct command *cmd)
{
	printf("usage: %s\n\n%s\n", cmd->synopsis, cmd->about);
	if (cmd->options)
		printf("\noptions of %s:\n%s", cmd->name, cmd->options);
	printf("\ncommon options: --format text|json, --quiet, --exe, --debug-dir,\n"
	       "--sysroot, --no-system-debug, --threads, --stats, and the analysis\n"
	       "options (heapsift help)\n\nexample:\n  %s\n", cmd->example);
	return HS_EXIT_OK;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* A bare `heapsift`: what to type next, on stderr. */
static int short_usage(void)
{
	fprintf(stderr, "usage: heapsift COMMAND CORE [options]\ncommands:");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
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
			cli->cores = calloc((size_t)argc, sizeof(*cli->cores));
		if (!cli->cores)
			return usage_error("%s", "out of memory");
		cli->cores[cli->ncores++] = arg;
		if (!cli->core)
			cli->core = cli->cores[0];
	} else if (!cli->core) {
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
	for (const struct option *o = long_opts; o->name; o++) {
		if (n > 2 && !strncmp(o->name, arg + 2, (size_t)n - 2) &&
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
			if (!(cmd->takes & TAKES_LIST))
				return not_an_option_of(cmd, "--list");
			cli->list = true;
			break;
		case OPT_SHOW_BYTES:
			if (!(cmd->takes & TAKES_SHOW_BYTES))
				return not_an_option_of(cmd, "--show-bytes");
			cli->show_bytes = true;
			break;
		case 'n': {
			uint64_t n;
			if (!(cmd->takes & TAKES_N))
				return not_an_option_of(cmd, "-n");
			if (!parse_size(optarg, &n) || n < 1 || n > 1000000)
				return usage_error("-n takes a number from 1 to 1000000, not '%s'",
						   optarg);
			cli->top_n = (size_t)n;
			cli->top_n_set = true;
			break;
		}
		case 'o':
			if (!(cmd->takes & (TAKES_OUT | TAKES_OUT_ONLY)))
				return not_an_option_of(cmd, "-o");
			cli->out = optarg;
			break;
		case OPT_KEEP_STRINGS:
			if (!(cmd->takes & TAKES_OUT))
				return not_an_option_of(cmd, "--keep-strings");
			cli->keep_strings = true;
			break;
		case OPT_PPROF:
		case OPT_FOLDED:
			if (!(cmd->takes & TAKES_EXPORT))
				return not_an_option_of(cmd, c == OPT_PPROF ? "--pprof" : "--folded");
			if (c == OPT_PPROF)
				cli->pprof = optarg;
			else
				cli->folded = optarg;
			break;
		case OPT_RAW:
			if (!(cmd->takes & TAKES_STATE))
				return not_an_option_of(cmd, "--raw");
			cli->raw = true;
			break;
		case OPT_HTML:
			if (!(cmd->takes & TAKES_CORES))
				return not_an_option_of(cmd, "--html");
			cli->out = optarg;
			break;
		case OPT_FORCE:
			if (!(cmd->takes & TAKES_CORES))
				return not_an_option_of(cmd, "--force");
			cli->force = true;
			break;
		case OPT_ALL:
			if (!(cmd->takes & TAKES_ALL))
				return not_an_option_of(cmd, "--all");
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
				return usage_error("--no-rule takes all, stdstring, length64, newarray, multipleinheritance, sds, learned or typed (separated by commas), not '%s'",
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
			if (!(cmd->takes & TAKES_STATE))
				return not_an_option_of(cmd, "--state");
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
			if (!(cmd->takes & TAKES_STATE))
				return not_an_option_of(cmd, "--min-size");
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
	if (!cli->core)
		return usage_error("%s", "missing CORE");
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
			const struct command *c = find_command(argv[2]);
			if (!c)
				return usage_error("unknown command '%s'", argv[2]);
			return command_help(c);
		}
		fputs(usage_text, stdout);
		return HS_EXIT_OK;
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
	if (cmd->takes & TAKES_CORES) {
		rc = cmd->run(&cli, NULL);
		free(cli.cores);
		return rc;
	}
	struct hs_snapshot *snap;
	double t_start = hs_now();
	struct hs_error *err = hs_snapshot_open(cli.core, &cli.opts, &snap);
	if (err) {
		rc = hs_cli_fail(&cli, err);
		hs_error_destroy(err);
		return rc;
	}
	rc = cmd->run(&cli, snap);
	if (stats)
		print_stats(snap, hs_now() - t_start);
	hs_snapshot_destroy(snap);
	return rc;
}

int main(int argc, char **argv)
{
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
