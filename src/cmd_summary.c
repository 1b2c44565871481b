/* heapsift summary CORE -o OUT: the core's analysis as a small JSON
 * document without the program's data (src/summary.h), for heapdiff. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "formats/jsonw.h"
#include "src/cli.h"
#include "src/cli_retain.h"
#include "src/outfile.h"
#include "src/summary.h"

int hs_cmd_summary(struct hs_cli *cli, struct hs_snapshot *snap)
{
	if (!cli->out)
		return hs_cli_usage(cli, "summary needs -o OUT");
	int bad = hs_cli_output_not_core(cli, cli->out);
	if (bad)
		return bad;
	/* the analysis first: a core that cannot be analyzed creates no
	 * file at all */
	struct hs_results res;
	const struct hs_error *cerr = hs_snapshot_results(snap, HS_WANT_ORDER | HS_WANT_TYPES,
							  &res);
	if (cerr)
		return hs_cli_fail(cli, cerr);
	struct hs_outfile o;
	FILE *f;
	struct hs_error *err = hs_outfile_fopen(&o, cli->out, &f);
	if (!err) {
		err = hs_summary_write(snap, f);
		if (ferror(f) && !err)
			err = hs_error_errno(errno ? errno : EIO, "%s", o.tmp);
		if (fclose(f) != 0 && !err)
			err = hs_error_errno(errno, "%s", o.tmp);
		err = hs_outfile_finish(&o, err);
	}
	if (err) {
		int rc = hs_cli_fail(cli, err);
		hs_error_destroy(err);
		return rc;
	}
	if (hs_outfile_is_stdout(cli->out))
		return HS_EXIT_OK;  /* the summary went to standard output */
	struct stat st;
	long long size = stat(cli->out, &st) == 0 ? (long long)st.st_size : -1;
	if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kstring(&w, "output", cli->out);
		hs_jsonw_kint(&w, "bytes", size);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		char sz[32], what[64];
		/* --pid: the core was a temporary file, removed; the process
		 * is what was summarized */
		if (cli->live_pid)
			snprintf(what, sizeof(what), "process %s", cli->live_pid);
		printf("wrote %s (%s): a summary of %s for heapdiff\n", cli->out,
		       hs_fmt_size(sz, size < 0 ? 0 : (uint64_t)size),
		       cli->live_pid ? what : cli->core);
	}
	return HS_EXIT_OK;
}
