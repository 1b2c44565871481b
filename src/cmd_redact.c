/* heapsift redact: a core to share, without the program's data. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/redact.h"
#include "analyzers/python.h"
#include "formats/jsonw.h"
#include "src/alloc.h"
#include "src/cli.h"
#include "src/cli_retain.h"
#include "src/outfile.h"

int hs_cmd_redact(struct hs_cli *cli, struct hs_snapshot *snap)
{
	if (!cli->out)
		return hs_cli_usage(cli, "redact needs -o OUT");
	int bad = hs_cli_output_not_core(cli, cli->out);
	if (bad)
		return bad;
	struct hs_core *core = snap->core;
	uint64_t *trace = hs_calloc(core->size / 512 + 2, sizeof(uint64_t));
	if (!trace)
		return hs_cli_fail(cli, &hs_error_nomem);
	/* what the analysis reads, traced: modules, the heap walk, roots */
	core->trace = trace;
	struct hs_dwarf *dw;
	const struct hs_heap *heap;
	const struct hs_roots *roots;
	const struct hs_error *err;
	if ((err = hs_snapshot_dwarf(snap, &dw)) ||
	    (err = hs_snapshot_heap(snap, &heap)) ||
	    (err = hs_snapshot_roots(snap, &roots))) {
		core->trace = NULL;
		free(trace);
		return hs_cli_fail(cli, err);
	}
	hs_redact_touch_modules(core, dw);
	/* CPython's objects: found with the trace off (the words of the
	 * blocks that are not objects stay out), then their count and type
	 * words and their types read through it */
	core->trace = NULL;
	struct hs_pyobjects *py = NULL;
	struct hs_error *perr = hs_python_objects(core, dw, heap, snap->opts.types_narrow_max,
							  1, &snap->log, &py);
	if (perr) {
		free(trace);
		int rc = hs_cli_fail(cli, perr);
		hs_error_destroy(perr);
		return rc;
	}
	if (py) {
		core->trace = trace;
		hs_python_touch(py, core, dw, heap);
		core->trace = NULL;
		hs_python_destroy(py);
	}
	struct hs_redact_options o = {.keep_strings = cli->keep_strings};
	struct hs_redact_stats st = {0};
	struct hs_error *werr = hs_redact_write(core, trace, &o, cli->out, &st);
	free(trace);
	if (werr) {
		int rc = hs_cli_fail(cli, werr);
		hs_error_destroy(werr);
		return rc;
	}
	if (hs_outfile_is_stdout(cli->out)) {
		/* the core went to standard output: nothing else goes there */
	} else if (cli->format == HS_FORMAT_JSON) {
		struct hs_jsonw w;
		hs_jsonw_init(&w, stdout, true);
		hs_jsonw_object_begin(&w);
		hs_jsonw_kstring(&w, "output", cli->out);
		hs_jsonw_kuint(&w, "writable_words", st.writable_words);
		hs_jsonw_kuint(&w, "zeroed_words", st.zeroed_words);
		hs_jsonw_kbool(&w, "strings_kept", cli->keep_strings);
		hs_jsonw_object_end(&w);
		hs_jsonw_finish(&w);
	} else {
		printf("wrote %s: %" PRIu64 " of %" PRIu64 " words of writable memory zeroed (%.1f%%)%s\n",
		       cli->out, st.zeroed_words, st.writable_words,
		       st.writable_words ? 100.0 * (double)st.zeroed_words /
			       (double)st.writable_words : 0.0,
		       cli->keep_strings ? "; strings kept" : "");
	}
	return HS_EXIT_OK;
}
