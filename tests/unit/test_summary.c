/* Reading summaries back (src/summary.h): a small valid document, every
 * kind of bad one, and heapdiff's rows from summaries (compared by their
 * type totals). */
#include <stdio.h>
#include <string.h>

#include "src/summary.h"
#include "tests/unit/check.h"

/* A summary with two types and two roots; %s are replaced in order by
 * the version, the first type's bytes and the roots array. */
static const char DOC[] =
	"{\"format\": \"heapsift-summary\", \"version\": %s,\n"
	" \"modules\": [{\"name\": \"libc.so.6\", \"build_id\": \"aa\", \"executable\": false},\n"
	"             {\"name\": \"/bin/x\", \"build_id\": \"0123abcd\", \"executable\": true}],\n"
	" \"partial\": false,\n"
	" \"totals\": {\"used_count\": 30, \"used_bytes\": 3000,\n"
	"            \"leaked\": {\"count\": 2, \"bytes\": 200}},\n"
	" \"types\": [{\"label\": \"struct a\", \"count\": 10, \"bytes\": %s, \"retained\": 1000},\n"
	"           {\"label\": \"(untyped, 64 bytes)\", \"count\": 20, \"bytes\": 1280, \"retained\": 0}],\n"
	" \"types_total\": 9, \"types_truncated\": true,\n"
	" \"roots\": %s,\n"
	" \"roots_total\": 2, \"roots_truncated\": false}\n";

static const char ROOTS[] =
	"[{\"name\": \"global g in x\", \"kind\": \"global\", \"retained\": 1000},"
	" {\"name\": \"(leaked: no root holds these)\", \"kind\": \"leaked\", \"retained\": 200}]";

static struct hs_error *parse(const char *version, const char *bytes,
			      const char *roots, struct hs_summary **ret)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), DOC, version, bytes, roots);
	return hs_summary_parse("s.json", buf, strlen(buf), ret);
}

/* A bad document gives one error of code, whose message holds want. */
static void bad(const char *what, const char *text, enum hs_error_code code,
		const char *want)
{
	struct hs_summary *s = NULL;
	struct hs_error *err = hs_summary_parse("s.json", text, strlen(text), &s);
	CHECKF(err && err->code == code && strstr(err->message, want) &&
	       !strchr(err->message, '\n') && !strncmp(err->message, "s.json: ", 8),
	       "%s: %s", what, err ? err->message : "accepted");
	hs_error_destroy(err);
	if (!err)
		hs_summary_destroy(s);
}

static void bad_field(const char *what, const char *version, const char *bytes,
		      const char *roots, const char *want)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), DOC, version, bytes, roots);
	/* a version heapsift does not read is not a damaged summary */
	bad(what, buf, strncmp(want, "version ", 8) || want[8] < '0' || want[8] > '9' ?
	    HS_ERR_FORMAT : HS_ERR_UNSUPPORTED, want);
}

int main(void)
{
	struct hs_summary *s = NULL;
	struct hs_error *err = parse("1", "1000", ROOTS, &s);
	CHECKF(!err, "a valid summary: %s", err ? err->message : "");
	if (err)
		return check_finish();
	const struct hs_diff_rows *r = s->rows;
	CHECK(r->ntypes == 2 && r->nroots == 2);
	CHECK(!strcmp(r->types[0].label, "struct a") && r->types[0].count == 10 &&
	      r->types[0].bytes == 1000 && r->types[0].retained == 1000);
	CHECK(r->types[1].bytes == 1280 && r->types[1].retained == 0);
	CHECK(!strcmp(r->roots[1].kind, "leaked") && r->roots[1].retained == 200);
	CHECK(r->used_count == 30 && r->used_bytes == 3000 && r->leaked_count == 2 &&
	      r->leaked_bytes == 200 && !r->partial);
	CHECK(r->types_truncated && !r->roots_truncated && s->types_total == 9);
	CHECKF(s->exe_build_id && !strcmp(s->exe_build_id, "0123abcd"),
	       "the executable's build-id: %s", s->exe_build_id ? s->exe_build_id : "none");

	/* three summaries to heapdiff: deltas by type totals, trends */
	struct hs_summary *s2 = NULL, *s3 = NULL;
	err = parse("1", "2000", ROOTS, &s2);
	CHECK(!err);
	hs_error_destroy(err);
	err = parse("1", "3000", ROOTS, &s3);
	CHECK(!err);
	hs_error_destroy(err);
	if (s2 && s3) {
		struct hs_diff_input in[3] = {{s->rows, true, NULL}, {s2->rows, true, NULL},
					      {s3->rows, true, NULL}};
		struct hs_diff *d = NULL;
		err = hs_diff_compute(in, 3, &d);
		CHECK(!err && d);
		if (d) {
			CHECK(!d->by_blocks);
			const struct hs_diff_type *t = &d->types[0];   /* most growth first */
			CHECKF(!strcmp(t->label, "struct a") && t->delta_bytes == 2000 &&
			       t->delta_count == 0 && t->bytes[1] == 2000 &&
			       t->trend == HS_TREND_GROWING && t->slope > 999 && t->slope < 1001,
			       "struct a: %s delta %lld trend %s", t->label,
			       (long long)t->delta_bytes, hs_trend_names[t->trend]);
			CHECK(d->leaked_trend == HS_TREND_STABLE && d->leaked[2] == 200);
			hs_diff_destroy(d);
		}
		hs_error_destroy(err);
	}
	hs_summary_destroy(s2);
	hs_summary_destroy(s3);
	hs_summary_destroy(s);

	bad("empty", "", HS_ERR_FORMAT, "invalid JSON");
	bad("cut short", "{\"format\": \"heapsift-summary\", \"vers", HS_ERR_FORMAT,
	    "invalid JSON");
	bad("not JSON", "\x7f" "ELF\2\1\1", HS_ERR_FORMAT, "invalid JSON");
	bad("a NUL in a string", "{\"format\": \"heapsift-summary\\u0000\"}", HS_ERR_FORMAT,
	    "invalid JSON");
	bad("a key twice", "{\"format\": \"heapsift-summary\", \"format\": \"x\"}",
	    HS_ERR_FORMAT, "invalid JSON");
	bad("an array", "[]", HS_ERR_FORMAT, "not a heapsift summary");
	bad("a string", "\"heapsift-summary\"", HS_ERR_FORMAT, "not a heapsift summary");
	bad("another format", "{\"format\": \"heapsift-summary2\", \"version\": 1}",
	    HS_ERR_FORMAT, "not a heapsift summary");
	bad("format a number", "{\"format\": 1, \"version\": 1}", HS_ERR_FORMAT,
	    "not a heapsift summary");
	bad("no version", "{\"format\": \"heapsift-summary\"}", HS_ERR_FORMAT,
	    "version is missing");
	bad_field("version 2", "2", "1000", ROOTS, "version 2");
	bad_field("version 0", "0", "1000", ROOTS, "version 0");
	bad_field("version a string", "\"1\"", "1000", ROOTS, "version is not an integer");
	bad_field("version a float", "1.0", "1000", ROOTS, "version is not an integer");
	bad_field("bytes a string", "1", "\"1000\"", ROOTS, "types[0].bytes is not an integer");
	bad_field("bytes negative", "1", "-1", ROOTS, "types[0].bytes is not an integer");
	bad_field("bytes past 2^53", "1", "9007199254740993", ROOTS,
		  "types[0].bytes is not an integer");
	bad_field("bytes past 2^64", "1", "18446744073709551616", ROOTS, "invalid JSON");
	bad_field("bytes a float", "1", "1e3", ROOTS, "types[0].bytes is not an integer");
	bad_field("bytes null", "1", "null", ROOTS, "types[0].bytes is not an integer");
	bad_field("roots an object", "1", "1", "{}", "roots is not an array");
	bad_field("a root a number", "1", "1", "[1]", "roots[0] is not an object");
	bad_field("a root's name a number", "1", "1",
		  "[{\"name\": 1, \"kind\": \"global\", \"retained\": 1}]",
		  "roots[0].name is not a string");
	bad_field("a root without kind", "1", "1", "[{\"name\": \"g\", \"retained\": 1}]",
		  "roots[0].kind is missing");
	/* the version is checked before anything else */
	bad_field("version 2 and a bad field", "2", "\"x\"", "{}", "version 2");
	err = hs_summary_read("/nonexistent/s.json", &s);
	CHECKF(err && err->code == HS_ERR_IO, "a missing file: %s", err ? err->message : "read");
	hs_error_destroy(err);
	CHECK(!hs_summary_is("/nonexistent/s.json"));
	return check_finish();
}
