"""gdb-side helper of test_reach.py: answers questions about a core, so the
reachability fixtures' claims (which word holds which pointer, which frame
a stack slot belongs to, what a register holds) are checked by a reader
that shares no code with heapsift.

Run as:  gdb -batch -nx -q -x reach_gdb_oracle.py BINARY CORE
with RC_GDB_QUERIES naming a JSON list of queries and RC_GDB_OUT the file
to write the answers to (a JSON list, one answer per query, same order):

  {"op": "mem", "addr": A}             -> {"value": the u64 at A}
  {"op": "mem_sp", "tid": T, "offset": N}
                                       -> {"addr": A, "value": the u64 at A},
                                          A = thread T's stack pointer + N
  {"op": "reg", "tid": T, "reg": R}    -> {"value": register R of thread T}
  {"op": "frames", "tid": T}           -> {"frames": [{"level", "function",
                                            "pc", "sp"}]} (newest first)
  {"op": "tls", "tid": T, "name": V}   -> {"address": &V in thread T,
                                            "size": sizeof(V)}
  {"op": "symbol", "addr": A}          -> {"text": `info symbol A`}
Any answer may instead be {"error": message}.
"""

import json
import os

import gdb  # noqa: F401  (provided by gdb)


def thread_by_tid(tid):
    for t in gdb.selected_inferior().threads():
        if t.ptid[1] == tid:
            return t
    raise ValueError("no thread with tid %d in the core" % tid)


def u64(value):
    return int(value) & 0xFFFFFFFFFFFFFFFF


def answer(q):
    op = q["op"]
    if op == "mem":
        raw = gdb.selected_inferior().read_memory(q["addr"], 8).tobytes()
        return {"value": int.from_bytes(raw, "little")}
    if op == "mem_sp":
        thread_by_tid(q["tid"]).switch()
        addr = u64(gdb.newest_frame().read_register("rsp")) + q["offset"]
        raw = gdb.selected_inferior().read_memory(addr, 8).tobytes()
        return {"addr": addr, "value": int.from_bytes(raw, "little")}
    if op == "reg":
        thread_by_tid(q["tid"]).switch()
        reg = gdb.newest_frame().read_register(q["reg"])
        if q["reg"].startswith(("xmm", "ymm", "zmm")):
            reg = reg["v2_int64"][0] if q["reg"].startswith("xmm") else reg["v4_int64"][0]
        return {"value": u64(reg)}
    if op == "frames":
        thread_by_tid(q["tid"]).switch()
        frames = []
        f = gdb.newest_frame()
        while f is not None and len(frames) < 200:
            frames.append({"level": f.level(), "function": f.name(),
                           "pc": u64(f.pc()),
                           "sp": u64(f.read_register("rsp"))})
            f = f.older()
        return {"frames": frames}
    if op == "tls":
        thread_by_tid(q["tid"]).switch()
        var = gdb.parse_and_eval(q["name"])
        return {"address": u64(var.address), "size": var.type.sizeof}
    if op == "symbol":
        text = gdb.execute("info symbol %#x" % q["addr"], to_string=True)
        return {"text": text.strip()}
    raise ValueError("unknown query %r" % op)


def main():
    with open(os.environ["RC_GDB_QUERIES"]) as f:
        queries = json.load(f)
    out = []
    for q in queries:
        try:
            out.append(answer(q))
        except Exception as e:  # noqa: BLE001  (every failure is an answer)
            out.append({"error": "%s: %s" % (type(e).__name__, e)})
    with open(os.environ["RC_GDB_OUT"], "w") as f:
        json.dump(out, f)


main()
