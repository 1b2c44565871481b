#ifndef HS_CLI_RETAIN_H
#define HS_CLI_RETAIN_H

#include "formats/jsonw.h"
#include "src/cli.h"

/* MAT's defaults: a suspect holds 10% of the heap; its accumulation point
 * is where the largest child keeps less than 70% of its parent. */
#define HS_SUSPECT_SHARE 0.10
#define HS_ACCUMULATION_KEEP 0.70

/* Helpers of the verdict commands (top, path, dom, leaks, show, report);
 * each reads the stages in res (hs_snapshot_results) that it needs: a
 * block's reach the mark (or "unknown"), names and kinds of nodes the
 * dominators, types when they are there. */
const char *hs_cli_reach(const struct hs_results *res, uint32_t id);
/* "struct session.next", "struct buffer[2].data": the field of block id
 * at offset, by its type; NULL when untyped.  Caller frees. */
char *hs_cli_field(const struct hs_results *res, uint32_t id, uint64_t offset);
void hs_cli_node_name(const struct hs_results *res, uint32_t node, char *buf,
		      size_t len);
const char *hs_cli_node_kind(const struct hs_results *res, uint32_t node);
uint32_t hs_cli_blocks(const struct hs_retain *r, uint32_t node);
/* kind, name or address/size/reach, retained, count */
void hs_cli_json_node(struct hs_jsonw *w, const struct hs_results *res,
		      uint32_t node);
void hs_cli_suspects_text(const struct hs_results *res);
void hs_cli_suspects_json(struct hs_jsonw *w, const struct hs_results *res);

/* 0 when the output path can be written (hs_outfile_check), else the exit
 * status after one error line: called before a long analysis. */
int hs_cli_output_ok(const struct hs_cli *cli, const char *path);
/* hs_cli_output_ok, and path is not the input core (a command that
 * writes a file made from the core: redact, summary). */
int hs_cli_output_not_core(const struct hs_cli *cli, const char *path);

/* Who shares the blocks that no single root holds (their immediate
 * dominator is the super-root): for each of the n allocation nodes in
 * nodes, the distinct roots that hold it, directly or through blocks a
 * root holds alone, in the order a walk backwards from the node finds
 * them (the nearest first).  out[i] gets up to HS_SHARERS_SHOWN root
 * indices (into res->roots) and total[i] how many there are. */
enum { HS_SHARERS_SHOWN = 3 };
struct hs_sharers {
	uint32_t root[HS_SHARERS_SHOWN];
	uint32_t shown, total;
};
struct hs_error *hs_cli_sharers(const struct hs_results *res, const uint32_t *nodes,
				size_t n, struct hs_sharers *out);
/* How hs_cli_sharers splits its passes over the graph between two
 * threads (res->threads > 1): 0 by the number of blocks it walks; the
 * others for the tests, whose output must be the same. */
enum hs_sharers_split {
	HS_SHARERS_AUTO,
	HS_SHARERS_ONE,         /* one thread */
	HS_SHARERS_BY_SOURCE,   /* half of the rows each */
	HS_SHARERS_BY_TARGET,   /* every row, half of the walked blocks each */
	HS_SHARERS_BY_PAIRS,    /* half of the rows each, the edges gathered */
};
/* "global g in m, thread 1 ... frame #2 f (+3 more)" */
void hs_cli_sharers_text(const struct hs_results *res, const struct hs_sharers *s,
			 char *buf, size_t len);

/* The offsets the graph learned (rules.h), with their evidence: a
 * "learned" array, or lines of text. */
void hs_cli_json_learned(struct hs_jsonw *w, const struct hs_results *res);
void hs_cli_learned_text(const struct hs_results *res);

#endif
