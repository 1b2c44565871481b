#!/usr/bin/env python3
"""Ground-truth tests of heapsift's dominator tree: retained sizes, immediate
dominators, root rows, leak suspects and retainer paths.

Each dominator fixture (tests/fixtures/dm_*.c) builds structures whose
dominator tree is written down below (TREES: every block's immediate
dominator, by the label the fixture gave it), records every block's address
and usable size and every pointer it stored (tests/fixtures/reach_record.h),
and stops.  From a gcore of it and the record:

  fixture checks ("FIXTURE: ..."; a failure there is a test bug)
    - the record is sound (no selfcheck failure, the heap did not change
      while it was written);
    - the tree below is the dominator tree of the recorded pointer graph
      (computed here from the record, with memcheck's leak roots);
    - the heap holds the fixture's blocks and nothing else, so that byte
      totals can be exact;
  heapsift checks
    - list: every block's retained size is the sum of the usable sizes of
      the blocks its subtree holds;
    - dom, for every block: retained, count, the immediate dominator (a
      block, a named root, "shared" or "leaked"), the whole dominator chain
      and the children, largest first;
    - top: the root rows (named roots, "shared", "leaked"), exactly; the
      rows of blocks (retained, held_by); the leak suspects (MAT: top-level
      dominators retaining 10% or more of the used bytes, and the leaked
      blocks as a group) with their accumulation points, depths and chains
      (the walk stops at the head of a chain of blocks of one kind, see
      analyzers/retain.h);
    - path, for every block (but dm_suspect's): a shortest retainer path made of recorded
      pointers, starting at a root that holds its first block (the root's
      name, kind and the address of its word), hop offsets equal to the
      fields the fixture stored into; --all: one path per direct retainer;
    - named paths: from a global through a typed chain (the field names),
      through interior pointers, from a stack frame of a named function and
      from a TLS variable.

Usage: test_dominators.py [FIXTURE ...]
Exit status 0 when every check passed; the last line is "N passed, M failed".
Environment: HEAPSIFT, FIXTURES, WORKDIR (see tests/hstest.py).
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402

# Immediate dominators, by label.  A parent is another label, or
# "global:NAME", "tls:NAME", "frame:FUNCTION" (a named root), "shared" (the
# super-root: several roots, none alone) or "leaked" (the pseudo-root the
# leak roots hang from).
TREES = {
    "dm_shapes": {
        "chain 0": "global:g_chain", "chain 1": "chain 0", "chain 2": "chain 1",
        "chain 3": "chain 2", "chain 4": "chain 3",
        "interior 0": "global:g_interior", "interior 1": "interior 0",
        "interior 2": "interior 1",
        "diamond A": "global:g_diamond", "diamond B": "diamond A",
        "diamond C": "diamond A", "diamond D": "diamond A",
        "diamond E": "diamond D",
        "tree R": "global:g_tree", "tree X1": "tree R", "tree X2": "tree R",
        "tree P1": "tree X1", "tree P2": "tree X2", "tree Q": "tree R",
        "tree Q1": "tree Q", "tree Q2": "tree Q1",
        "shared S": "shared", "shared S1": "shared S",
        "cycle C1": "global:g_cycle", "cycle C2": "cycle C1",
        "cycle C3": "cycle C2", "cycle C4": "cycle C2",
        "leak L0": "leaked", "leak L1": "leak L0", "leak L2": "leak L0",
        "leak L3": "leak L0", "leak M0": "leaked", "leak M1": "leaked",
        "leaked cycle K1": "leaked", "leaked cycle K2": "leaked cycle K1",
    },
    "dm_suspect": dict(
        [("cache", "global:g_cache"), ("index", "cache"), ("table", "index")]
        + [("entry %d" % i, "table") for i in range(20)]
        + [("queue", "global:g_queue"), ("item 0", "queue")]
        + [("item %d" % i, "item %d" % (i - 1)) for i in range(1, 24)]
        + [("M0", "global:g_medium"), ("M1", "M0"), ("M2", "M0"), ("M3", "M1"),
           ("S0", "global:g_small"), ("S1", "S0"),
           ("LA", "leaked"), ("LA1", "LA"), ("LB", "leaked"), ("LB1", "LB")]),
    "dm_frames": {
        "F0": "frame:dm_inner_holder", "F1": "F0", "F2": "F1",
        "T0": "tls:tls_list", "T1": "T0", "T2": "T1",
    },
}

# What the suspect fixture is built to show (its comment has the numbers);
# the generic suspect check computes the same from TREES, this pins it.
SUSPECT_FIXTURE = {
    "dm_suspect": [
        # (suspect, accumulation point, depth, chain)
        ("global:g_cache", "table", 3, 0),
        ("global:g_queue", "item 0", 2, 22),  # the last 2 keep < 70%
        ("leaked", "leaked", 0, 0),
        ("global:g_medium", "M1", 2, 0),
    ],
}

# Named paths: (fixture, target label, root spec, [(label, from_offset,
# target_offset, field suffix or None)], note naming the root word).
NAMED_PATHS = [
    ("dm_shapes", "chain 4", "global:g_chain",
     [("chain 0", None, 0, None)] +
     [("chain %d" % i, 32, 0, "struct dm_link.next") for i in range(1, 5)],
     "&g_chain"),
    ("dm_shapes", "interior 2", "global:g_interior",
     [("interior 0", None, 16, None), ("interior 1", 8, 32, None),
      ("interior 2", 24, 8, None)],
     "&g_interior"),
    ("dm_shapes", "cycle C4", "global:g_cycle",
     [("cycle C1", None, 0, None), ("cycle C2", 8, 0, None),
      ("cycle C4", 16, 0, None)], None),
    ("dm_suspect", "item 23", "global:g_queue",
     [("queue", None, 0, None), ("item 0", 0, 0, "struct dm_queue.head")] +
     [("item %d" % i, 0, 0, "struct dm_item.next") for i in range(1, 24)], None),
    ("dm_frames", "F2", "frame:dm_inner_holder",
     [("F0", None, 0, None), ("F1", 16, 0, None), ("F2", 24, 0, None)], None),
    ("dm_frames", "T2", "tls:tls_list",
     [("T0", None, 0, None), ("T1", 24, 0, ".second"), ("T2", 16, 0, ".first")],
     "&tls_list"),
]

# --all: the set of blocks or roots directly before the target.
ALL_PATHS = [
    ("dm_shapes", "diamond D", {"diamond B", "diamond C"}),
    ("dm_shapes", "shared S", {"global:g_share_a", "global:g_share_b"}),
    ("dm_shapes", "leak M1", {"leak L2", "leak M0"}),
    ("dm_shapes", "cycle C2", {"cycle C1", "cycle C3"}),
    ("dm_shapes", "tree Q", {"tree P1", "tree P2"}),
]

# Blocks no single root holds: the roots `top` must name as sharing them
# (held_by.shared_by, exactly, by the globals' names).
SHARED_BY = {
    ("dm_shapes", "shared S"): {"g_share_a", "g_share_b"},
}

# Fixtures whose every block gets a `path` check (dm_suspect's lists and
# tables would only repeat the same hop many times; it has a named path).
PATH_EVERY_BLOCK = {"dm_shapes", "dm_frames"}

SUSPECT_SHARE = 0.1
ACCUMULATION_KEEP = 0.7
JOBS = max(2, min(8, os.cpu_count() or 2))


def hx(s):
    return int(s, 16) if isinstance(s, str) else s


# ---------------------------------------------------------------- model


class Fixture:
    """A fixture's record and its expected dominator tree."""

    def __init__(self, name, core, record):
        self.name = name
        self.core = core
        self.rec = record
        self.blocks = record["allocations"]
        self.by_label = {}
        self.by_addr = {}
        for b in self.blocks:
            b["addr"] = hx(b["address"])
            self.by_label[b["label"]] = b
            self.by_addr[b["addr"]] = b
        self.tids = {t["index"]: t["tid"] for t in record["threads"]}
        self.notes = record.get("notes", {})
        self.idom = TREES[name]
        self.total_bytes = sum(b["usable"] for b in self.blocks)
        self._subtrees()

    def _subtrees(self):
        """Retained bytes and block counts of every node of the tree."""
        self.children = {}
        for lab, parent in self.idom.items():
            self.children.setdefault(parent, []).append(lab)
        self.retained = {}
        self.count = {}

        def walk(node):
            stack = [(node, False)]
            while stack:
                n, done = stack.pop()
                if done:
                    own = self.by_label[n]["usable"] if n in self.by_label else 0
                    self.retained[n] = own + sum(self.retained[c]
                                                 for c in self.children.get(n, []))
                    self.count[n] = (1 if n in self.by_label else 0) + sum(
                        self.count[c] for c in self.children.get(n, []))
                    continue
                stack.append((n, True))
                for c in self.children.get(n, []):
                    stack.append((c, False))

        tops = {p for p in self.children if p not in self.by_label}
        for t in tops:
            walk(t)
        # the super-root holds the named roots, the leaked pseudo-root and
        # the shared blocks
        self.retained.setdefault("leaked", 0)
        self.count.setdefault("leaked", 0)

    def addr(self, label):
        return self.by_label[label]["addr"]

    def label_of(self, addr):
        b = self.by_addr.get(hx(addr))
        return b["label"] if b else None

    def root_holder(self, spec):
        """The recorded holder (kind, name, thread, at) of a root spec."""
        kind, name = spec.split(":", 1)
        rkind = {"global": "global", "tls": "tls", "frame": "frame"}[kind]
        for b in self.blocks:
            for h in b["holders"]:
                if h["kind"] == rkind and h.get("name") == name:
                    return h
        return None

    def root_name_ok(self, spec, name):
        """Whether heapsift's root name `name` names root spec `spec`."""
        kind, var = spec.split(":", 1)
        if kind == "global":
            return name == "global %s in %s" % (var, self.name)
        h = self.root_holder(spec)
        thread = h.get("thread", 0) if h else 0
        tid = self.tids.get(thread, -1)
        if kind == "tls":
            return name == "thread %d (tid %d) TLS %s in %s" % (
                thread + 1, tid, var, self.name)
        if kind == "frame":
            return re.match(r"^thread %d \(tid %d\) frame #\d+ %s( \(.*\))?$" % (
                thread + 1, tid, re.escape(var)), name or "") is not None
        return False

    def root_kind(self, spec):
        return {"global": "global", "tls": "tls", "frame": "stack"}[spec.split(":")[0]]

    def node_problems(self, spec, node, what):
        """Does JSON node `node` (dom/top output) stand for `spec`?"""
        if spec in self.by_label:
            want = self.addr(spec)
            if node.get("kind") != "allocation" or hx(node.get("address", "0")) != want:
                return ["%s: expected block %s [%s], got %s" % (
                    what, hex(want), spec, short(node))]
            return []
        if spec in ("shared", "leaked"):
            if node.get("kind") != spec:
                return ["%s: expected %s, got %s" % (what, spec, short(node))]
            return []
        if node.get("kind") != self.root_kind(spec) or not self.root_name_ok(
                spec, node.get("name")):
            return ["%s: expected root %s (kind %s), got %s" % (
                what, spec, self.root_kind(spec), short(node))]
        return []

    def chain(self, label):
        """Dominators of label, nearest first, up to (excluding) the
        super-root."""
        out = []
        p = self.idom[label]
        while p != "shared":
            out.append(p)
            if p not in self.idom:
                break
            p = self.idom[p]
        return out


def short(node):
    if not isinstance(node, dict):
        return repr(node)
    keys = ("kind", "name", "address", "retained", "count")
    return "{%s}" % ", ".join("%s: %s" % (k, node[k]) for k in keys if k in node)


# ------------------------------------------------ the record, recomputed


def recorded_graph(fx):
    """Nodes and edges of the recorded pointer graph, with the super-root
    "shared", the pseudo-root "leaked" and "global:NAME"-style roots, and
    memcheck's leak roots hung from "leaked"."""
    succ = {"shared": set(), "leaked": set()}
    offsets = {}   # (parent label, child label) -> smallest offset
    roots = set()
    for b in fx.blocks:
        succ.setdefault(b["label"], set())
    for b in fx.blocks:
        for h in b["holders"]:
            if h["kind"] == "allocation":
                parent = fx.label_of(h["at"])
                succ[parent].add(b["label"])
                key = (parent, b["label"])
                offsets[key] = min(offsets.get(key, h["offset"]), h["offset"])
            elif h["kind"] in ("global", "tls", "frame"):
                r = "%s:%s" % (h["kind"], h["name"])
                roots.add(r)
                succ.setdefault(r, set()).add(b["label"])
    for r in roots:
        succ["shared"].add(r)
    succ["shared"].add("leaked")
    # leaked blocks: not reachable from a named root
    live = set()
    work = list(roots)
    while work:
        n = work.pop()
        for c in succ[n]:
            if c not in live:
                live.add(c)
                work.append(c)
    leaked = [b["label"] for b in fx.blocks if b["label"] not in live]
    preds = {}
    for p, cs in succ.items():
        for c in cs:
            preds.setdefault(c, set()).add(p)

    def reach_from(starts):
        seen = set(starts)
        work = list(starts)
        while work:
            n = work.pop()
            for c in succ[n]:
                if c not in seen:
                    seen.add(c)
                    work.append(c)
        return seen

    # leak roots: no pointer from another leaked block; then, of every
    # leaked cycle nothing else leaked enters, the lowest address
    leak_roots = [x for x in leaked
                  if not any(p in leaked and p != x for p in preds.get(x, ()))]
    covered = reach_from(leak_roots)
    while True:
        rest = sorted((x for x in leaked if x not in covered), key=fx.addr)
        if not rest:
            break
        for x in rest:
            rx = reach_from([x])
            scc = {y for y in rx if x in reach_from([y])}
            if all(p in scc for y in scc for p in preds.get(y, ()) if p in leaked):
                leader = min(scc, key=fx.addr)
                leak_roots.append(leader)
                covered |= reach_from([leader])
                break
        else:
            break
    for x in leak_roots:
        succ["leaked"].add(x)
        preds.setdefault(x, set()).add("leaked")
    return succ, preds, offsets, roots, set(leaked), set(leak_roots)


def recorded_idoms(fx, succ, preds):
    """Immediate dominators of the recorded graph (iterative data flow;
    the graphs are tiny)."""
    nodes = list(succ)
    dom = {n: set(nodes) for n in nodes}
    dom["shared"] = {"shared"}
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n == "shared":
                continue
            ps = [dom[p] for p in preds.get(n, ())]
            new = set.intersection(*ps) | {n} if ps else {n}
            if new != dom[n]:
                dom[n] = new
                changed = True
    idom = {}
    for n in nodes:
        if n == "shared":
            continue
        strict = dom[n] - {n}
        idom[n] = max(strict, key=lambda d: len(dom[d])) if strict else None
    return idom


def shortest(succ, target):
    """Length in blocks of the shortest path from a named root or a leak
    root to target (BFS from the super-root)."""
    dist = {"shared": 0}
    order = ["shared"]
    for n in order:
        for c in sorted(succ[n]):
            if c not in dist:
                dist[c] = dist[n] + 1
                order.append(c)
    return dist.get(target, 0) - 1   # minus the root (or "leaked") node


# ---------------------------------------------------------------- heapsift


class Heapsift:
    def __init__(self, binary, core):
        self.binary = binary
        self.core = core

    def json(self, *args):
        argv = [self.binary] + list(args[:1]) + [self.core] + list(args[1:]) + [
            "--format", "json"]
        r = hstest.run(argv, timeout=120)
        if r.rc != 0:
            raise RuntimeError(r.describe())
        try:
            return json.loads(r.out)
        except ValueError as e:
            raise RuntimeError("%s: bad JSON (%s): %r" % (" ".join(argv), e, r.out[:300]))


# ---------------------------------------------------------------- checks


def check_record(fx):
    p = []
    if fx.rec.get("selfcheck"):
        p.append("selfcheck failures: %s" % fx.rec["selfcheck"])
    if fx.rec.get("mallinfo2") != fx.rec.get("mallinfo2_before_record"):
        p.append("the heap changed while the record was written: %s vs %s" % (
            fx.rec.get("mallinfo2_before_record"), fx.rec.get("mallinfo2")))
    labels = {b["label"] for b in fx.blocks}
    if labels != set(fx.idom):
        p.append("labels recorded %s, in the tree %s" % (
            sorted(labels - set(fx.idom)), sorted(set(fx.idom) - labels)))
    if len(labels) != len(fx.blocks):
        p.append("two blocks share a label")
    for b in fx.blocks:
        if b["usable"] != b["request"]:
            p.append("%s: usable %d != request %d" % (b["label"], b["usable"], b["request"]))
    return p


def check_tree(fx, graph):
    """The hand-written tree is the dominator tree of the recorded graph."""
    succ, preds, _, _, _, _ = graph
    idom = recorded_idoms(fx, succ, preds)
    p = []
    for lab, want in sorted(fx.idom.items()):
        got = idom.get(lab)
        if got != want:
            p.append("%s: the recorded graph gives idom %s, the tree says %s" % (
                lab, got, want))
    # accumulation points must not depend on ties between children
    for parent, kids in fx.children.items():
        rs = sorted((fx.retained[k] for k in kids), reverse=True)
        if len(rs) > 1 and rs[0] == rs[1]:
            p.append("children of %s tie for the largest retained size" % parent)
    return p


def check_heap_is_ours(fx, listing, top):
    p = []
    used = [a for a in listing["allocations"]
            if a["state"] == "used" and a["where"] != "internal"]
    got = {hx(a["address"]): a for a in used}
    for b in fx.blocks:
        if b["addr"] not in got:
            p.append("%s [%s] is not a used block in list" % (hex(b["addr"]), b["label"]))
    extra = sorted(set(got) - set(fx.by_addr))
    if extra:
        p.append("used blocks the fixture did not make: %s" % ", ".join(
            "%s (%d bytes)" % (hex(a), got[a]["size"]) for a in extra))
    want = {"count": len(fx.blocks), "bytes": fx.total_bytes}
    if top["total"] != want:
        p.append("top total %s, the fixture made %s" % (top["total"], want))
    return p


def check_list_retained(fx, listing):
    got = {hx(a["address"]): a for a in listing["allocations"]}
    p = []
    for b in fx.blocks:
        a = got.get(b["addr"])
        want = fx.retained[b["label"]]
        if a is None:
            continue   # reported by check_heap_is_ours
        if a.get("retained") != want:
            p.append("%s [%s]: retained %s, expected %d (%s)" % (
                b["address"], b["label"], a.get("retained"), want,
                " + ".join(subtree_terms(fx, b["label"]))))
        if a.get("size") != b["usable"]:
            p.append("%s [%s]: size %s, recorded usable %d" % (
                b["address"], b["label"], a.get("size"), b["usable"]))
    return p


def subtree_terms(fx, label):
    out = []
    work = [label]
    while work:
        n = work.pop()
        out.append("%s %d" % (n, fx.by_label[n]["usable"]))
        work.extend(fx.children.get(n, []))
    return out


def expect_node_sizes(fx, spec, node, what):
    p = []
    if spec == "shared":
        return p
    want_r, want_c = fx.retained.get(spec, 0), fx.count.get(spec, 0)
    if node.get("retained") != want_r or node.get("count") != want_c:
        p.append("%s %s: retained %s in %s blocks, expected %d in %d" % (
            what, spec, node.get("retained"), node.get("count"), want_r, want_c))
    return p


def check_dom(fx, label, d):
    p = fx.node_problems(label, d, "target")
    p += expect_node_sizes(fx, label, d, "target")
    want_idom = fx.idom[label]
    p += fx.node_problems(want_idom, d.get("idom", {}), "idom")
    if not p:
        p += expect_node_sizes(fx, want_idom, d["idom"], "idom")
    chain = fx.chain(label)
    got = d.get("dominators", [])
    if len(got) != len(chain):
        p.append("dominators: expected %s, got %s" % (chain, [short(n) for n in got]))
    else:
        for i, (spec, node) in enumerate(zip(chain, got)):
            p += fx.node_problems(spec, node, "dominators[%d]" % i)
    kids = sorted(fx.children.get(label, []),
                  key=lambda k: (-fx.retained[k], fx.addr(k)))
    if d.get("children_count") != len(kids):
        p.append("children_count %s, expected %d (%s)" % (
            d.get("children_count"), len(kids), kids))
    got = d.get("children", [])
    if len(got) != len(kids):
        p.append("children: expected %s, got %s" % (kids, [short(n) for n in got]))
    else:
        for i, (k, node) in enumerate(zip(kids, got)):
            p += fx.node_problems(k, node, "children[%d]" % i)
            p += expect_node_sizes(fx, k, node, "children[%d]" % i)
    return p


def root_specs(fx):
    return sorted({v for v in fx.idom.values() if ":" in v})


def check_top_roots(fx, top):
    """Rows: one per named root that holds something alone, "shared" and
    "leaked" when they hold something; exactly these, sums exact."""
    rows = top.get("roots", [])
    p = []
    want = []
    for spec in root_specs(fx):
        want.append((spec, fx.root_kind(spec), fx.retained[spec], fx.count[spec]))
    shared = [k for k, v in fx.idom.items() if v == "shared"]
    if shared:
        want.append(("shared", "shared", sum(fx.retained[k] for k in shared),
                     sum(fx.count[k] for k in shared)))
    if fx.retained["leaked"]:
        want.append(("leaked", "leaked", fx.retained["leaked"], fx.count["leaked"]))
    used = set()
    for spec, kind, r, c in want:
        match = None
        for i, row in enumerate(rows):
            if i in used or row.get("kind") != kind:
                continue
            if kind in ("shared", "leaked") or fx.root_name_ok(spec, row.get("name")):
                match = i
                break
        if match is None:
            p.append("no row for %s (expected retained %d in %d blocks)" % (spec, r, c))
            continue
        used.add(match)
        row = rows[match]
        if row.get("retained") != r or row.get("count") != c:
            p.append("row %r: retained %s in %s blocks, expected %d in %d" % (
                row.get("name"), row.get("retained"), row.get("count"), r, c))
    for i, row in enumerate(rows):
        if i not in used:
            p.append("unexpected row %s" % short(row))
    rs = [row.get("retained", 0) for row in rows]
    if rs != sorted(rs, reverse=True):
        p.append("rows not in decreasing retained order: %s" % rs)
    total = sum(rs)
    if total != fx.total_bytes:
        p.append("rows add up to %d, the heap has %d" % (total, fx.total_bytes))
    # the named globals that hold nothing alone have no row
    for b in fx.blocks:
        for h in b["holders"]:
            spec = "%s:%s" % (h["kind"], h.get("name"))
            if h["kind"] == "global" and spec not in root_specs(fx):
                for row in rows:
                    if fx.root_name_ok(spec, row.get("name")):
                        p.append("%s holds nothing alone but has a row %s" % (
                            spec, short(row)))
    return p


def check_top_allocations(fx, top):
    rows = top.get("allocations", [])
    p = []
    if len(rows) != len(fx.blocks):
        p.append("%d allocation rows, expected %d (-n covers every block)" % (
            len(rows), len(fx.blocks)))
    rs = [row.get("retained", 0) for row in rows]
    if rs != sorted(rs, reverse=True):
        p.append("rows not in decreasing retained order: %s" % rs)
    for row in rows:
        lab = fx.label_of(row.get("address"))
        if lab is None:
            p.append("row for a block the fixture did not make: %s" % short(row))
            continue
        p += fx.node_problems(lab, row, "row")
        p += expect_node_sizes(fx, lab, row, "row")
        parent = fx.idom[lab]
        held = row.get("held_by", {})
        p += fx.node_problems(parent, held, "held_by of %s" % lab)
        want = SHARED_BY.get((fx.name, lab))
        if want is not None:
            got = {re.sub(r"^global (\S+) in .*$", r"\1", n)
                   for n in held.get("shared_by", [])}
            if got != want or held.get("shared_by_count") != len(want):
                p.append("%s: shared by %s (%s in all), expected %s" % (
                    lab, sorted(got), held.get("shared_by_count"), sorted(want)))
    return p


def block_kinds(fx, listing):
    """What heapsift's accumulation walk calls a block's kind: its type
    (the element type: "struct x[4]" is of kind "struct x"), or its size
    when it has none.  Types are heapsift's own (test_types.py checks
    them); here they only say which blocks are of one kind."""
    types = {hx(a["address"]): a.get("type") for a in listing["allocations"]}
    kinds = {}
    for b in fx.blocks:
        t = types.get(b["addr"])
        kinds[b["label"]] = ("type", re.sub(r"\[\d+\]$", "", t)) if t else (
            "size", b["usable"])
    return kinds


def largest_child(fx, node):
    kids = fx.children.get(node, [])
    if not kids:
        return None
    # ties: the lowest node, i.e. the lowest address
    return max(kids, key=lambda k: (fx.retained[k], -fx.addr(k)))


def accumulation(fx, kinds, top):
    """MAT's walk: down to the largest dominated child while it keeps at
    least 70% of its parent's retained size; except that a chain (a block
    whose largest child is of its kind and keeps 70% of it, and so on, 3
    blocks or more) is not walked down: the walk stops at its head
    (analyzers/retain.h).  (node, depth, chain)."""
    node, depth = top, 0
    while True:
        best = largest_child(fx, node)
        if best is None or fx.retained[best] < ACCUMULATION_KEEP * fx.retained[node]:
            return node, depth, 0
        n, x = 1, best
        while True:
            nxt = largest_child(fx, x)
            if nxt is None or kinds[nxt] != kinds[x] or \
                    fx.retained[nxt] < ACCUMULATION_KEEP * fx.retained[x]:
                break
            x, n = nxt, n + 1
        if n >= 3:
            return best, depth + 1, n
        node, depth = best, depth + 1


def expected_suspects(fx, kinds):
    """MAT's suspects from the tree: (spec, accumulation spec, depth,
    chain), biggest first."""
    threshold = int(SUSPECT_SHARE * fx.total_bytes) or 1
    tops = ["leaked"] + root_specs(fx) + [k for k, v in fx.idom.items()
                                         if v in ("shared", "leaked")]
    out = []
    for t in tops:
        if fx.retained[t] >= threshold:
            out.append((t,) + accumulation(fx, kinds, t))
    out.sort(key=lambda s: -fx.retained[s[0]])
    return out


def check_suspects(fx, top, listing):
    want = expected_suspects(fx, block_kinds(fx, listing))
    p = []
    pinned = SUSPECT_FIXTURE.get(fx.name)
    if pinned is not None and want != pinned:
        p.append("FIXTURE: the tree gives suspects %s, the fixture promises %s" % (
            want, pinned))
    got = top.get("suspects", [])
    if len(got) != len(want):
        p.append("%d suspects, expected %d: %s; got %s" % (
            len(got), len(want), [w[0] for w in want], [short(s) for s in got]))
        return p
    for i, ((spec, acc, depth, chain), s) in enumerate(zip(want, got)):
        what = "suspects[%d]" % i
        p += fx.node_problems(spec, s, what)
        p += expect_node_sizes(fx, spec, s, what)
        a = s.get("accumulation_point", {})
        p += fx.node_problems(acc, a, what + ".accumulation_point")
        p += expect_node_sizes(fx, acc, a, what + ".accumulation_point")
        if (a.get("depth"), a.get("chain")) != (depth, chain):
            p.append("%s.accumulation_point: depth %s, chain %s; expected depth %d, "
                     "chain %d" % (what, a.get("depth"), a.get("chain"), depth, chain))
    return p


def check_path(fx, graph, label, out):
    """Any block: one shortest path of recorded pointers from a root."""
    succ, preds, offsets, _, leaked, leak_roots = graph
    p = fx.node_problems(label, out.get("target", {}), "target")
    paths_ = out.get("paths", [])
    if len(paths_) != 1:
        return p + ["%d paths, expected 1" % len(paths_)]
    path = paths_[0]
    hops = path.get("hops", [])
    labs = [fx.label_of(h.get("address")) for h in hops]
    if not hops or labs[-1] != label:
        return p + ["the path does not end at the target: %s" % labs]
    if None in labs:
        return p + ["the path goes through blocks the fixture did not make: %s" % [
            h.get("address") for h in hops]]
    want_len = shortest(succ, label)
    if len(hops) != want_len:
        p.append("%d hops, the shortest path has %d: %s" % (len(hops), want_len, labs))
    first = labs[0]
    if path.get("root") is None:
        if path.get("kind") != "leaked" or first not in leak_roots:
            p.append("a path without a root must start at a leak root: %s, kind %s" % (
                first, path.get("kind")))
    else:
        specs = [r for r in preds.get(first, ()) if ":" in r]
        ok = [s for s in specs if fx.root_name_ok(s, path["root"])
              and path.get("kind") == fx.root_kind(s)]
        if not ok:
            p.append("root %r (kind %s) does not hold %s; its holders: %s" % (
                path["root"], path.get("kind"), first, specs))
        else:
            h = fx.root_holder(ok[0])
            if h and h.get("at") and hx(path.get("at", "0")) != hx(h["at"]):
                p.append("root word at %s, the fixture's is at %s" % (
                    path.get("at"), h["at"]))
    if "from_offset" in hops[0]:
        p.append("the first hop has a from_offset: %s" % hops[0])
    for a, b, h in zip(labs, labs[1:], hops[1:]):
        if b not in succ[a]:
            p.append("no recorded pointer %s -> %s" % (a, b))
        elif h.get("from_offset") != offsets[(a, b)]:
            p.append("%s -> %s: from_offset %s, the pointer is at %d" % (
                a, b, h.get("from_offset"), offsets[(a, b)]))
    for lab, h in zip(labs, hops):
        if h.get("size") != fx.by_label[lab]["usable"]:
            p.append("%s: size %s, usable %d" % (lab, h.get("size"),
                                                 fx.by_label[lab]["usable"]))
    return p


def check_named_path(fx, root_spec, want_hops, note, out):
    p = []
    paths_ = out.get("paths", [])
    if len(paths_) != 1:
        return ["%d paths, expected 1" % len(paths_)]
    path = paths_[0]
    if not fx.root_name_ok(root_spec, path.get("root")) or \
            path.get("kind") != fx.root_kind(root_spec):
        p.append("root %r kind %s, expected %s (kind %s)" % (
            path.get("root"), path.get("kind"), root_spec, fx.root_kind(root_spec)))
    kind, var = root_spec.split(":", 1)
    if var not in (path.get("root") or ""):
        p.append("the root's name %r does not contain %r" % (path.get("root"), var))
    if kind == "tls" and "TLS" not in (path.get("root") or ""):
        p.append("the root's name %r does not say TLS" % path.get("root"))
    where = fx.notes.get(note) if note else (fx.root_holder(root_spec) or {}).get("at")
    if where is not None and hx(path.get("at", "0")) != hx(where):
        p.append("root word at %s, expected %s" % (path.get("at"), where))
    hops = path.get("hops", [])
    if len(hops) != len(want_hops):
        return p + ["%d hops, expected %d: %s" % (
            len(hops), len(want_hops), [fx.label_of(h.get("address")) for h in hops])]
    for i, ((lab, off, into, field), h) in enumerate(zip(want_hops, hops)):
        got = (fx.label_of(h.get("address")), h.get("from_offset"),
               h.get("target_offset"))
        if got != (lab, off, into):
            p.append("hop %d: (block, from_offset, target_offset) = %s, expected %s" % (
                i, got, (lab, off, into)))
        if field is not None:
            f = h.get("field")
            if f is None or not f.endswith(field):
                p.append("hop %d: field %r, expected %r" % (i, f, field))
    return p


def check_all_paths(fx, label, want, out):
    p = []
    got = set()
    for path in out.get("paths", []):
        hops = path.get("hops", [])
        if not hops or fx.label_of(hops[-1].get("address")) != label:
            p.append("a path that does not end at %s" % label)
            continue
        if len(hops) >= 2:
            got.add(fx.label_of(hops[-2].get("address")))
        else:
            spec = [s for s in want if ":" in s and fx.root_name_ok(s, path.get("root"))]
            got.add(spec[0] if spec else "root %r" % path.get("root"))
    if got != want or len(out.get("paths", [])) != len(want):
        p.append("direct retainers %s in %d paths, expected %s" % (
            sorted(map(str, got)), len(out.get("paths", [])), sorted(want)))
    return p


# ---------------------------------------------------------------- driver


def take(name):
    snap = hstest.take_core(name)
    with open(snap.record_path) as f:
        return Fixture(name, snap.core, json.load(f))


def guarded(fn, *args):
    try:
        return fn(*args)
    except Exception as e:   # a run that failed is a failed check
        return ["%s: %s" % (type(e).__name__, e)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fixtures", nargs="*", default=sorted(TREES))
    args = ap.parse_args()
    res = hstest.Checker()

    fixtures = {}
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        futs = {ex.submit(take, n): n for n in args.fixtures}
        for f in concurrent.futures.as_completed(futs):
            n = futs[f]
            try:
                fixtures[n] = f.result()
            except Exception as e:
                res.case("%s: take the core" % n, ["%s: %s" % (type(e).__name__, e)])

    jobs = []   # (case name, function, args)
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for name in args.fixtures:
            fx = fixtures.get(name)
            if fx is None:
                continue
            hs = Heapsift(hstest.HEAPSIFT, fx.core)
            graph = recorded_graph(fx)
            res.case("%s: FIXTURE: record" % name, check_record(fx))
            res.case("%s: FIXTURE: tree = dominators of the recorded graph" % name,
                     check_tree(fx, graph))
            f_list = ex.submit(hs.json, "list", "--state", "all")
            f_top = ex.submit(hs.json, "top", "-n", str(len(fx.blocks) + 100))
            f_dom = {b["label"]: ex.submit(hs.json, "dom", b["address"], "-n", "1000")
                     for b in fx.blocks}
            f_path = {b["label"]: ex.submit(hs.json, "path", b["address"])
                      for b in fx.blocks if name in PATH_EVERY_BLOCK}
            f_named = [(t, ex.submit(hs.json, "path", fx.by_label[t[1]]["address"]))
                       for t in NAMED_PATHS if t[0] == name]
            f_all = [(t, ex.submit(hs.json, "path", fx.by_label[t[1]]["address"],
                                   "--all", "-n", "100"))
                     for t in ALL_PATHS if t[0] == name]
            jobs.append((fx, graph, f_list, f_top, f_dom, f_path, f_named, f_all))

        for fx, graph, f_list, f_top, f_dom, f_path, f_named, f_all in jobs:
            name = fx.name
            try:
                listing, top = f_list.result(), f_top.result()
            except Exception as e:
                res.case("%s: list and top" % name, [str(e)])
                continue
            res.case("%s: FIXTURE: the heap holds the fixture's blocks only" % name,
                     check_heap_is_ours(fx, listing, top))
            res.case("%s: list: retained of every block" % name,
                     check_list_retained(fx, listing))
            res.case("%s: top: root rows" % name, guarded(check_top_roots, fx, top))
            res.case("%s: top: allocation rows and held_by" % name,
                     guarded(check_top_allocations, fx, top))
            res.case("%s: top: suspects and accumulation points" % name,
                     guarded(check_suspects, fx, top, listing))
            for b in fx.blocks:
                lab = b["label"]
                res.case("%s: dom %s [%s]" % (name, b["address"], lab),
                         guarded(lambda: check_dom(fx, lab, f_dom[lab].result())))
            for b in fx.blocks:
                lab = b["label"]
                if lab not in f_path:
                    continue
                res.case("%s: path %s [%s]" % (name, b["address"], lab),
                         guarded(lambda: check_path(fx, graph, lab, f_path[lab].result())))
            for (_, target, root, hops, note), fut in f_named:
                res.case("%s: path from %s to %s" % (name, root, target),
                         guarded(lambda: check_named_path(fx, root, hops, note,
                                                          fut.result())))
            for (_, target, want), fut in f_all:
                res.case("%s: path --all to %s" % (name, target),
                         guarded(lambda: check_all_paths(fx, target, want, fut.result())))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
