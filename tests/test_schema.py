#!/usr/bin/env python3
"""Every command's JSON against docs/schema.json.

A small validator of the schema keywords docs/schema.json uses (type, enum,
required, properties, items, allOf, $ref, minimum, pattern): objects may hold
more fields than the schema lists (fields are added, never renamed).  The
outputs are real: info, list, leaks, show, top, path, dom, types, frag, files,
redact, summary (the document itself) and heapdiff (of cores, and of a core
and a summary) on fixture cores.  Prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "schema")
SCHEMA = json.load(open(os.path.join(hstest.SRCDIR, "docs", "schema.json")))
R = hstest.Checker()
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def resolve(ref):
    node = SCHEMA
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def validate(value, schema, path, errors):
    if len(errors) > 20:
        return
    if "$ref" in schema:
        return validate(value, resolve(schema["$ref"]), path, errors)
    for sub in schema.get("allOf", []):
        validate(value, sub, path, errors)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = False
        for k in kinds:
            if k == "integer":
                ok |= isinstance(value, int) and not isinstance(value, bool)
            elif k == "number":
                ok |= isinstance(value, (int, float)) and not isinstance(value, bool)
            else:
                ok |= isinstance(value, TYPES[k]) and not (k != "boolean" and isinstance(value, bool) and TYPES[k] is not bool)
        if not ok:
            errors.append("%s: %r is not %s" % (path, value if len(repr(value)) < 80 else type(value).__name__, kinds))
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r not in %s" % (path, value, schema["enum"]))
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        errors.append("%s: %r < %s" % (path, value, schema["minimum"]))
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append("%s: %r does not match %s" % (path, value, schema["pattern"]))
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errors.append("%s: no %r" % (path, k))
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                validate(value[k], sub, path + "." + k, errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[:2000]):
            validate(item, schema["items"], "%s[%d]" % (path, i), errors)


def check(what, command, argv):
    r = hstest.run(argv + ["--format", "json"], timeout=300)
    if r.rc != 0:
        R.case(what, ["exit %d: %s" % (r.rc, r.err.strip()[:300])])
        return None
    try:
        doc = json.loads(r.out)
    except ValueError as e:
        R.case(what, ["not JSON: %s" % e])
        return None
    errors = []
    validate(doc, SCHEMA["commands"][command], command, errors)
    R.case(what, errors)
    return doc


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    for name in ("demo", "rc_leaks", "ty_c", "je_simple"):
        binary = os.path.join(hstest.FIXTURES, name)
        if not os.path.exists(binary):
            R.skip(name, "fixture not built")
            continue
        core = hstest.take_core(binary, WORK, name, record=False).core
        for cmd in (["info"], ["list", "--state", "all"], ["leaks", "--list"], ["top"], ["types"], ["frag"],
                    ["files"]):
            doc = check("%s: %s" % (name, " ".join(cmd)), cmd[0], [HS] + cmd + [core])
            if cmd[0] == "top" and doc and doc["allocations"]:
                addr = doc["allocations"][0]["address"]
                for sub in ("show", "path", "dom"):
                    check("%s: %s %s" % (name, sub, addr), sub, [HS, sub, core, addr])
        raw = check("%s: list --raw" % name, "list", [HS, "list", "--raw", "--state", "all", core])
        full = check("%s: list (for --raw)" % name, "list", [HS, "list", "--state", "all", core])
        if raw and full:
            # what the analysis adds: class, retained size, type, the rule
            # that holds the block, a stale root word, an inferred type
            analysis = {"reach", "retained", "type", "type_inferred", "via", "stale_ref"}
            strip = [{k: v for k, v in a.items() if k not in analysis}
                     for a in full["allocations"]]
            extra = [a for a in raw["allocations"] if set(a) & analysis]
            R.case("%s: list --raw is list without the analysis" % name,
                   [] if raw["allocations"] == strip and not extra else
                   ["%d extra fields, lists differ: %s" % (len(extra), raw["allocations"] != strip)])
        check("%s: redact" % name, "redact", [HS, "redact", core, "-o", core + ".red"])
        check("%s: diff of the core and its redacted copy" % name, "diff",
              [os.path.join(os.path.dirname(HS), "heapdiff"), core, core + ".red"])
        doc = check("%s: summary" % name, "summary", [HS, "summary", core, "-o", "-"])
        if doc and doc.get("frag") is not None:
            errors = []
            validate(doc["frag"], SCHEMA["commands"]["frag"], "summary.frag", errors)
            R.case("%s: summary's frag is frag's" % name, errors)
        if doc:
            with open(core + ".summary.json", "w") as f:
                json.dump(doc, f)
            check("%s: diff of the core and its summary" % name, "diff",
                  [os.path.join(os.path.dirname(HS), "heapdiff"), core, core + ".summary.json"])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
