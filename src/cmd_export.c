/* heapsift export: dominator stacks for pprof and flame graphs. */
#include <stdlib.h>

#include "analyzers/stacks.h"
#include "formats/pprof.h"
#include "src/cli.h"
#include "src/cli_retain.h"

int hs_cmd_export(struct hs_cli *cli, struct hs_snapshot *snap)
{
	if (!cli->pprof && !cli->folded)
		return hs_cli_usage(cli, "export needs --pprof OUT.pb.gz or --folded OUT");
	int bad = (cli->pprof ? hs_cli_output_ok(cli, cli->pprof) : 0);
	if (!bad && cli->folded)
		bad = hs_cli_output_ok(cli, cli->folded);
	if (bad)
		return bad;
	struct hs_results res_;
	const struct hs_results *res = &res_;
	const struct hs_error *err = hs_snapshot_results(snap, HS_WANT_RETAIN | HS_WANT_TYPES,
							 &res_);
	if (err)
		return hs_cli_fail(cli, err);
	const struct hs_retain *r = res->retain;
	const struct hs_types *types = res->types;
	struct hs_stacks *s;
	struct hs_error *e = hs_stacks_build(res->heap, res->mark, res->roots, r,
					     types, &s);
	if (!e && cli->pprof)
		e = hs_pprof_write(s, cli->pprof);
	if (!e && cli->folded)
		e = hs_folded_write(s, cli->folded, false);
	hs_stacks_destroy(s);
	if (e) {
		int rc = hs_cli_fail(cli, e);
		hs_error_destroy(e);
		return rc;
	}
	return HS_EXIT_OK;
}
