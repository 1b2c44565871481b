#!/usr/bin/env python3
"""heapsift on a real jemalloc program: Debian 12's redis-server under load.

Debian 12's redis-server (7.0) links the system libjemalloc2 5.3.0.  The
test starts it from a temporary directory on a free localhost port (no
config file, no persistence), then loads it for a few seconds from several
concurrent connections (a small RESP client, standard library only):
pipelined SETs of 8 B to 1.25 MiB (jemalloc's small classes, large ones in
and past the thread cache's 32 KiB), one 8-13 MiB value per client (over
the 8 MiB oversize threshold: jemalloc's huge arena; half deleted again),
APPENDs (reallocation), LPUSH/HSET into lists and hashes, and DELs of a
fraction of the keys (free space; big lists and hashes are freed by redis's
lazy-free thread, so that thread's cache holds regions too).

The measurement.  redis's INFO allocator_allocated / allocator_active are
jemalloc's stats.allocated / stats.active, but sampled by redis's cron
(every 100 ms), so they lag; and the cron itself allocates right after it
samples (it resizes clients' reply buffers).  So, once the load is over:
`DEBUG REPLYBUFFER RESIZING 0` and `CONFIG SET jemalloc-bg-thread no` (no
purge in flight at the stop; the thread ran during the load, as redis's
default has it), wait until the load clients are gone and the lazy frees
done, two cron periods of quiet, then one pipelined request: `DEBUG
PAUSE-CRON 1`, `INFO memory`, `DEBUG MALLCTL epoch 1` (jemalloc refreshes
its statistics), and SIGSTOP the moment its last reply is read (some 20-60
us later).  After the refresh redis only freed the epoch command's
arguments (into its thread cache, which jemalloc still counts as allocated)
and wrote the reply.  gcore takes the core.  Then SIGCONT: `DEBUG MALLCTL
stats.*` reads the snapshot of that epoch (nothing else refreshes it with
the cron paused), and a second epoch measures how far the statistics moved
since, the window before the stop included: that drift is the tolerance,
and it is 0 when nothing moved.  What can move them in an idle redis is
jemalloc's thread-cache GC, which flushes cached regions back to their
slabs every 64 KiB a thread allocates or frees: a few hundred bytes to tens
of KiB, seen in about 0.5% of idle epoch-to-epoch windows of two commands.

Checks:
- `heapsift info CORE --format json` says the allocator is jemalloc 5.3.0,
  not partial;
- its stats.allocated and stats.active equal jemalloc's at the epoch just
  before the stop, within the drift; and INFO's allocator_allocated /
  allocator_active within the drift plus how far INFO's cron sample was
  from that epoch (known exactly, printed; 0 to 30 KiB over 26 runs);
- its dirty, muzzy and retained equal jemalloc's, within their drift;
- redis's own accounting, used_memory (the usable size of every block redis
  has from zmalloc, read by that INFO), is <= stats.allocated and <= the
  used bytes heapsift found (+ 4 KiB: what INFO itself held when it read
  used_memory);
- `heapsift leaks CORE --format json` succeeds, and at least 99% of the used
  bytes are kept: reachable or possible.  redis keeps everything it
  allocated reachable from its globals, and points to its sds strings past
  their header, which the sds rule (analyzers/rules.h) accepts: "possible"
  is under 1% of the used bytes (the split is printed; 88-91% before the
  rule).

If redis-server is missing the test fails, saying to run scripts/setup.sh.
Environment: HEAPSIFT, WORKDIR (as for every test), HS_REDIS_SERVER (the
binary; default redis-server in PATH), HS_REDIS_LOAD_SECONDS (default 4),
HS_REDIS_CLIENTS (default 4), HS_REDIS_TOLERANCE (bytes added to every
drift tolerance; default 0), HS_KEEP_CORES=1 (keep the core when every
check passed; it is kept on failure).  Prints "N passed, M failed" last.
"""

import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "jemalloc_redis")
R = hstest.Checker()

LOAD_SECONDS = float(os.environ.get("HS_REDIS_LOAD_SECONDS", "4"))
CLIENTS = int(os.environ.get("HS_REDIS_CLIENTS", "4"))
# Added to the measured drift (see above); 0: stats.allocated is exact.
BASE_TOLERANCE = int(os.environ.get("HS_REDIS_TOLERANCE", "0"))
# used_memory counts what INFO itself had allocated when it read it (its
# arguments and the reply being built): freed before the core.
INFO_TRANSIENT = 4096
KEYS_PER_CLIENT = 1500
LISTS_PER_CLIENT = 40
HASHES_PER_CLIENT = 40
BATCH = 48
MIN_KEPT = 0.99

KiB = 1024
MiB = 1024 * 1024


# ---------------------------------------------------------------- RESP


class RespError(Exception):
    pass


class Resp:
    """A minimal RESP2 client: send a batch of commands, read the replies.
    Error replies come back as RespError instances (not raised)."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    @staticmethod
    def encode(*args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = b"%d" % a
            parts.append(b"$%d\r\n" % len(a))
            parts.append(a)
            parts.append(b"\r\n")
        return b"".join(parts)

    def send(self, payload):
        self.sock.sendall(payload)

    def _fill(self):
        if self.pos > 65536 and self.pos * 2 > len(self.buf):
            del self.buf[:self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise RespError("connection closed by redis")
        self.buf += chunk

    def _line(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                return line
            self._fill()

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            data = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n + 2
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RespError("unexpected reply line %r" % line[:80])

    def call(self, *args):
        self.send(self.encode(*args))
        return self.reply()


def parse_info(text):
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    out = {}
    for ln in text.splitlines():
        if ":" in ln and not ln.startswith("#"):
            k, v = ln.split(":", 1)
            out[k] = v.strip()
    return out


# ---------------------------------------------------------------- redis


def find_redis():
    path = os.environ.get("HS_REDIS_SERVER") or shutil.which("redis-server")
    if not path or not os.access(path, os.X_OK):
        return None
    return path


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(binary, tmp):
    """Start redis-server on a free port; returns (Popen, port, log path).
    Retries with another port if the one picked was taken meanwhile."""
    last = ""
    for attempt in range(5):
        port = free_port()
        log = os.path.join(tmp, "redis-%d.log" % attempt)
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", tmp, "--logfile", log,
                # DEBUG MALLCTL reads jemalloc's statistics at the moment
                # asked (INFO's allocator_* are sampled by a 100 ms cron).
                "--enable-debug-command", "local",
                # DEL of a big list or hash is freed by the bio_lazy_free
                # thread: its thread cache then holds regions too.
                "--lazyfree-lazy-user-del", "yes",
                # Redis's default, stated: jemalloc's purging thread runs
                # (during the load; it is stopped before the core).
                "--jemalloc-bg-thread", "yes",
                "--maxmemory", "0", "--protected-mode", "yes"]
        proc = subprocess.Popen(argv, cwd=tmp, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                c = Resp(port, timeout=2)
                try:
                    if c.call("PING") == "PONG":
                        return proc, port, log
                finally:
                    c.close()
            except (OSError, RespError):
                pass
            time.sleep(0.05)
        try:
            with open(log, errors="replace") as f:
                last = f.read()[-1500:]
        except OSError:
            last = "(no log)"
        hstest.kill_process(proc)
    raise RuntimeError("redis-server did not answer PING; its log ends:\n%s" % last)


# ---------------------------------------------------------------- load


def value_size(rng):
    """8 B .. 1.25 MiB, log-uniform within four bands: mostly small (jemalloc's
    small classes go to 14 KiB), some large ones in and past the thread
    cache's 32 KiB limit."""
    r = rng.random()
    if r < 0.70:
        lo, hi = 8, 1 * KiB
    elif r < 0.92:
        lo, hi = 1 * KiB, 16 * KiB
    elif r < 0.99:
        lo, hi = 16 * KiB, 256 * KiB
    else:
        lo, hi = 256 * KiB, 1280 * KiB
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


class Load:
    def __init__(self, port, blob):
        self.port = port
        self.blob = blob
        self.counts = {}
        self.sent = 0
        self.errors = []
        self.lock = threading.Lock()

    def value(self, rng, n):
        off = rng.randrange(0, len(self.blob) - n)
        return self.blob[off:off + n]

    def worker(self, idx, deadline):
        rng = random.Random(7919 * (idx + 1))
        counts = {}
        sent = 0
        errors = []
        enc = Resp.encode
        try:
            conn = Resp(self.port)
        except OSError as e:
            with self.lock:
                self.errors.append("client %d: cannot connect: %s" % (idx, e))
            return
        try:
            # One value over jemalloc's 8 MiB oversize threshold per client
            # (its own arena); half of them are deleted at the end.
            big = 8 * MiB + (idx % 4) * 1536 * KiB + 4096 + 17
            batches = [[("SET", enc("SET", "big:%d" % idx, self.value(rng, big)))]]
            while True:
                if batches:
                    batch = batches.pop()
                elif time.monotonic() >= deadline:
                    break
                else:
                    batch = self.make_batch(rng, idx)
                conn.send(b"".join(c for _, c in batch))
                for name, cmd in batch:
                    rep = conn.reply()
                    counts[name] = counts.get(name, 0) + 1
                    sent += len(cmd)
                    if isinstance(rep, RespError) and len(errors) < 5:
                        errors.append("client %d: %s: %s" % (idx, name, rep))
            if idx % 2 == 0:
                if conn.call("DEL", "big:%d" % idx) != 1:
                    errors.append("client %d: DEL big:%d did not delete it" % (idx, idx))
        except Exception as e:  # noqa: BLE001 - any failure fails the load check
            errors.append("client %d: %s: %s" % (idx, type(e).__name__, e))
        finally:
            conn.close()
            with self.lock:
                for k, v in counts.items():
                    self.counts[k] = self.counts.get(k, 0) + v
                self.sent += sent
                self.errors.extend(errors)

    def make_batch(self, rng, idx):
        enc = Resp.encode
        batch = []
        for _ in range(BATCH):
            r = rng.random()
            if r < 0.58:
                key = "k:%d:%d" % (idx, rng.randrange(KEYS_PER_CLIENT))
                batch.append(("SET", enc("SET", key, self.value(rng, value_size(rng)))))
            elif r < 0.63:
                key = "k:%d:%d" % (idx, rng.randrange(KEYS_PER_CLIENT))
                batch.append(("APPEND", enc("APPEND", key,
                                            self.value(rng, rng.randint(1, 3000)))))
            elif r < 0.73:
                key = "l:%d:%d" % (idx, rng.randrange(LISTS_PER_CLIENT))
                elems = [self.value(rng, rng.randint(4, 400))
                         for _ in range(rng.randint(1, 40))]
                batch.append(("LPUSH", enc("LPUSH", key, *elems)))
            elif r < 0.83:
                key = "h:%d:%d" % (idx, rng.randrange(HASHES_PER_CLIENT))
                args = []
                for _ in range(rng.randint(1, 16)):
                    args.append("f%d" % rng.randrange(600))
                    args.append(self.value(rng, rng.randint(1, 700)))
                batch.append(("HSET", enc("HSET", key, *args)))
            elif r < 0.985:
                key = "k:%d:%d" % (idx, rng.randrange(KEYS_PER_CLIENT))
                batch.append(("DEL", enc("DEL", key)))
            else:
                kind = "l" if rng.random() < 0.5 else "h"
                key = "%s:%d:%d" % (kind, idx, rng.randrange(LISTS_PER_CLIENT))
                batch.append(("DEL", enc("DEL", key)))
        return batch


# ---------------------------------------------------------------- checks


def fmt_diff(got, want):
    d = got - want
    return "%+d B (%+.4f%%)" % (d, 100.0 * d / want if want else 0.0)


def run_checks(redis_bin, tmp):
    # ------------------------------------------------ redis and its allocator
    ldd = hstest.run(["ldd", redis_bin], timeout=30)
    jem = [ln.strip() for ln in ldd.out.splitlines() if "libjemalloc" in ln]
    R.case("%s links the system libjemalloc" % redis_bin,
           [] if ldd.rc == 0 and jem and "/lib" in jem[0]
           else ["ldd: %s" % ldd.describe(), "jemalloc lines: %s" % jem])

    proc, port, _log = start_redis(redis_bin, tmp)
    try:
        return load_and_check(redis_bin, proc, port)
    finally:
        hstest.kill_process(proc)


def load_and_check(redis_bin, proc, port):
    ctl = Resp(port)
    info0 = parse_info(ctl.call("INFO", "server", "memory"))
    version = info0.get("redis_version", "?")
    allocator = info0.get("mem_allocator", "?")
    R.case("redis reports mem_allocator jemalloc-5.3.0 (redis %s)" % version,
           [] if allocator == "jemalloc-5.3.0" else ["mem_allocator: %r" % allocator])
    probe = ctl.call("DEBUG", "MALLCTL", "stats.allocated")
    if isinstance(probe, RespError) or not isinstance(probe, int):
        raise RuntimeError("DEBUG MALLCTL does not work: %r" % (probe,))

    # ------------------------------------------------ the load
    rnd = random.Random(4242)
    blob = bytes(rnd.getrandbits(8) for _ in range(4096)) * (14 * 256)  # 14 MiB
    load = Load(port, blob)
    t0 = time.monotonic()
    deadline = t0 + LOAD_SECONDS
    threads = [threading.Thread(target=load.worker, args=(i, deadline), daemon=True)
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=LOAD_SECONDS + 60)
    took = time.monotonic() - t0
    hung = [i for i, t in enumerate(threads) if t.is_alive()]
    total = sum(load.counts.values())
    print("load: %d clients for %.1f s, %d commands (%s), %.0f MiB sent"
          % (CLIENTS, took, total,
             ", ".join("%s %d" % kv for kv in sorted(load.counts.items())),
             load.sent / MiB))
    problems = list(load.errors)
    if hung:
        problems.append("clients %s still running" % hung)
    if load.counts.get("SET", 0) < 200 * CLIENTS:
        problems.append("only %d SETs" % load.counts.get("SET", 0))
    R.case("the load ran without error replies", problems)

    # ------------------------------------------------ quiet, then measure
    # Past this point redis runs only the control client's commands, and
    # two things that would move memory on their own are turned off for
    # this idle phase only: the cron's reply-buffer resizing (it runs right
    # after the cron sampled memory for INFO; a 24 KiB buffer was seen),
    # and jemalloc's background purging thread (while an extent is being
    # purged it is in none of jemalloc's counts, neither dirty nor muzzy nor
    # retained nor active: 7 MiB were seen in flight).
    expect_ok(ctl.call("DEBUG", "REPLYBUFFER", "RESIZING", "0"), "DEBUG REPLYBUFFER RESIZING 0")
    expect_ok(ctl.call("CONFIG", "SET", "jemalloc-bg-thread", "no"),
              "CONFIG SET jemalloc-bg-thread no")
    quiet = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        i = parse_info(ctl.call("INFO", "clients", "memory", "keyspace", "stats"))
        if i.get("connected_clients") == "1" and i.get("lazyfree_pending_objects") == "0":
            quiet = i
            break
        time.sleep(0.05)
    if quiet is None:
        raise RuntimeError("redis did not go idle after the load: %s" % i)
    print("redis %s idle: %s, %s objects freed by the lazy-free thread"
          % (version, quiet.get("db0", "no keys"), quiet.get("lazyfreed_objects")))
    # Two cron periods (hz 10): the cron is done with the closed clients and
    # has sampled jemalloc's statistics for INFO since.
    time.sleep(0.25)

    # One request: stop the cron (nothing runs on its own in the main
    # thread any more), INFO (used_memory now, allocator_* from the last
    # cron), and refresh jemalloc's statistics (mallctl epoch).  SIGSTOP
    # the moment the last reply is in: after the refresh, redis only freed
    # the epoch command's arguments (into the thread cache, which still
    # counts as allocated) and wrote the reply.
    ctl.send(Resp.encode("DEBUG", "PAUSE-CRON", "1") + Resp.encode("INFO", "memory")
             + Resp.encode("DEBUG", "MALLCTL", "epoch", "1"))
    paused, info_text, epoch = ctl.reply(), ctl.reply(), ctl.reply()
    t_reply = time.monotonic()
    os.kill(proc.pid, signal.SIGSTOP)
    t_stop = time.monotonic()
    expect_ok(paused, "DEBUG PAUSE-CRON 1")
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        raise RuntimeError("DEBUG MALLCTL epoch 1: %r" % (epoch,))
    info = parse_info(info_text)
    hstest.wait_stopped(proc, timeout=30)
    stopped_in = time.monotonic() - t_stop

    # ------------------------------------------------ the core
    os.makedirs(WORK, exist_ok=True)
    core = hstest.gcore(proc.pid, os.path.join(WORK, "redis"), what="redis-server")

    # ------------------------------------------------ what jemalloc said
    # mallctl's stats are a snapshot taken at the last epoch: with the cron
    # paused, that is ours, just before the stop.  Then a second epoch
    # measures how much they moved since (the window before the stop
    # included): that drift is the only tolerance.
    os.kill(proc.pid, signal.SIGCONT)
    je = mallctl_stats(ctl)
    expect_int(ctl.call("DEBUG", "MALLCTL", "epoch", "1"), "DEBUG MALLCTL epoch 1")
    je2 = mallctl_stats(ctl)
    hstest.kill_process(proc)

    m = {"je": je, "je2": je2, "used_memory": int(info["used_memory"]),
         "info_allocated": int(info["allocator_allocated"]),
         "info_active": int(info["allocator_active"])}
    print("  INFO memory: used_memory %d, allocator_allocated %d, allocator_active %d,"
          " allocator_resident %d" % (m["used_memory"], m["info_allocated"],
                                      m["info_active"], int(info["allocator_resident"])))
    print("  mallctl at the epoch before the stop: allocated %d, active %d, resident %d,"
          " mapped %d, metadata %d, dirty %d, muzzy %d, retained %d"
          % (je["allocated"], je["active"], je["resident"], je["mapped"], je["metadata"],
             je["dirty"], je["muzzy"], je["retained"]))
    print("  drift to a second epoch after the core: allocated %+d, active %+d,"
          " dirty %+d, muzzy %+d, retained %+d"
          % tuple(je2[k] - je[k] for k in ("allocated", "active", "dirty", "muzzy", "retained")))
    print("  INFO's cron sample - mallctl at the epoch: allocated %+d, active %+d"
          % (m["info_allocated"] - je["allocated"], m["info_active"] - je["active"]))
    print("  SIGSTOP %.0f us after the last reply; all tasks stopped %.1f ms later"
          % ((t_stop - t_reply) * 1e6, stopped_in * 1000))
    print("core: %s (%.0f MiB)" % (core, os.path.getsize(core) / MiB))

    exe = os.path.realpath(redis_bin)
    ok = check_core(core, exe, m)
    if ok and os.environ.get("HS_KEEP_CORES") != "1":
        os.unlink(core)
    return ok


def expect_ok(reply, what):
    if reply != "OK":
        raise RuntimeError("%s: %r" % (what, reply))


def expect_int(reply, what):
    if not isinstance(reply, int) or isinstance(reply, bool):
        raise RuntimeError("%s: %r" % (what, reply))
    return reply


MALLCTL_KEYS = {
    "allocated": "stats.allocated", "active": "stats.active",
    "resident": "stats.resident", "mapped": "stats.mapped",
    "metadata": "stats.metadata", "retained": "stats.retained",
    "dirty": "stats.arenas.4096.pdirty",      # pages, all arenas merged
    "muzzy": "stats.arenas.4096.pmuzzy", "page": "arenas.page",
}


def mallctl_stats(ctl):
    """jemalloc's statistics as of the last epoch (DEBUG MALLCTL reads
    without refreshing them); dirty and muzzy in bytes."""
    names = list(MALLCTL_KEYS)
    ctl.send(b"".join(Resp.encode("DEBUG", "MALLCTL", MALLCTL_KEYS[n]) for n in names))
    out = {n: expect_int(ctl.reply(), "DEBUG MALLCTL " + MALLCTL_KEYS[n]) for n in names}
    out["dirty"] *= out["page"]
    out["muzzy"] *= out["page"]
    return out


def stray_stderr(r):
    """stderr lines that are not heapsift's own (a sanitizer report, a crash)."""
    return ["stderr: %s" % ln for ln in r.err.splitlines()
            if ln.strip() and not ln.startswith("heapsift: ")][:10]


def check_core(core, exe, m):
    failed_before = R.failed
    r = hstest.run([HS, "info", core, "--exe", exe, "--format", "json"], timeout=300)
    print("heapsift info: %.1f s" % r.seconds)
    a = None
    if r.rc != 0 or stray_stderr(r):
        R.case("heapsift info succeeds", [r.describe()] + stray_stderr(r))
    else:
        try:
            d = json.loads(r.out)
            a = d.get("allocator") or {}
        except ValueError as e:
            R.case("heapsift info prints JSON", ["%s: %r" % (e, r.out[:300])])
    if a is not None:
        problems = []
        if a.get("name") != "jemalloc":
            problems.append("allocator name %r, error: %s" % (a.get("name"), a.get("error")))
        else:
            if not str(a.get("version", "")).startswith("5.3.0"):
                problems.append("version %r, expected 5.3.0-..." % a.get("version"))
            if a.get("partial") is not False:
                problems.append("partial: %r; warnings: %s" % (a.get("partial"),
                                                              d.get("warnings")))
        R.case("heapsift info: allocator jemalloc 5.3.0, complete", problems)
        if d.get("warnings"):
            print("  heapsift warnings: %s" % d["warnings"][:10])
        if a.get("name") == "jemalloc":
            check_stats(a, m)
        else:
            print("  (stats not compared: heapsift did not read the jemalloc heap)")
    check_leaks(core, exe, m)
    return R.failed == failed_before


def num(v):
    return isinstance(v, int) and not isinstance(v, bool)


def compare(what, got, want, tol, problems):
    if not num(got):
        problems.append("%s: heapsift gives %r, not a number" % (what, got))
    elif abs(got - want) > tol:
        problems.append("%s: heapsift %d, expected %d: off by %s, more than %d B"
                        % (what, got, want, fmt_diff(got, want), tol))


def check_stats(a, m):
    je, je2 = m["je"], m["je2"]
    st = a.get("stats") or {}
    tot = a.get("totals") or {}
    print("  heapsift stats: %s" % json.dumps(st))
    print("  heapsift totals: used %s blocks %s bytes, free %s blocks %s bytes"
          % (tot.get("used_count"), tot.get("used_bytes"), tot.get("free_count"),
             tot.get("free_bytes")))
    tol = {k: BASE_TOLERANCE + abs(je2[k] - je[k]) for k in ("allocated", "active")}
    for k, ik in (("allocated", "info_allocated"), ("active", "info_active")):
        if num(st.get(k)):
            print("  %s: heapsift - mallctl %s (tolerance %d); heapsift - INFO %s %s"
                  % (k, fmt_diff(st[k], je[k]), tol[k], ik.replace("info_", "allocator_"),
                     fmt_diff(st[k], m[ik])))

    problems = []
    compare("stats.allocated", st.get("allocated"), je["allocated"], tol["allocated"], problems)
    R.case("stats.allocated = jemalloc's stats.allocated just before the stop", problems)
    problems = []
    compare("stats.active", st.get("active"), je["active"], tol["active"], problems)
    if num(st.get("active")) and st["active"] % je["page"]:
        problems.append("stats.active %d is not a multiple of the page" % st["active"])
    R.case("stats.active = jemalloc's stats.active just before the stop", problems)

    # INFO's allocator_* were sampled by the last cron; how far that sample
    # is from the epoch just before the stop is known exactly.
    for k, ik in (("allocated", "info_allocated"), ("active", "info_active")):
        problems = []
        compare("stats." + k, st.get(k), m[ik], tol[k] + abs(m[ik] - je[k]), problems)
        R.case("stats.%s = INFO %s (its cron sample differs from the epoch by %+d)"
               % (k, ik.replace("info_", "allocator_"), m[ik] - je[k]), problems)

    problems = []
    print("  dirty/muzzy/retained: heapsift %s/%s/%s, mallctl %d/%d/%d"
          % (st.get("dirty"), st.get("muzzy"), st.get("retained"),
             je["dirty"], je["muzzy"], je["retained"]))
    for k in ("dirty", "muzzy", "retained"):
        compare("stats." + k, st.get(k), je[k], BASE_TOLERANCE + abs(je2[k] - je[k]),
                problems)
    R.case("stats.dirty, stats.muzzy, stats.retained = jemalloc's (bytes)", problems)

    problems = []
    hs_alloc = st.get("allocated")
    used = tot.get("used_bytes")
    if not num(hs_alloc) or m["used_memory"] > hs_alloc:
        problems.append("used_memory %d > stats.allocated %r" % (m["used_memory"], hs_alloc))
    if not num(used) or m["used_memory"] > used + INFO_TRANSIENT:
        problems.append("used_memory %d > totals.used_bytes %r + %d"
                        % (m["used_memory"], used, INFO_TRANSIENT))
    elif num(hs_alloc) and used > hs_alloc:
        problems.append("totals.used_bytes %d > stats.allocated %d" % (used, hs_alloc))
    R.case("redis's used_memory <= stats.allocated and <= totals.used_bytes", problems)


def check_leaks(core, exe, m):
    r = hstest.run([HS, "leaks", core, "--exe", exe, "--format", "json"], timeout=300)
    print("heapsift leaks: %.1f s" % r.seconds)
    problems = stray_stderr(r)
    if r.rc != 0:
        problems.append(r.describe())
    else:
        try:
            s = json.loads(r.out)["summary"]
            total = sum(s[k]["bytes"] for k in ("reachable", "possible", "leaked"))
            count = sum(s[k]["count"] for k in ("reachable", "possible", "leaked"))
            kept = s["reachable"]["bytes"] + s["possible"]["bytes"]
            share = kept / total if total else 0.0
            print("  %d used blocks, %d bytes: reachable %d blocks %d bytes (%.3f%%),"
                  " possible %d blocks %d bytes (%.3f%%), leaked %d blocks %d bytes"
                  " (%.3f%%)" % (
                      count, total, s["reachable"]["count"], s["reachable"]["bytes"],
                      100.0 * s["reachable"]["bytes"] / max(total, 1),
                      s["possible"]["count"], s["possible"]["bytes"],
                      100.0 * s["possible"]["bytes"] / max(total, 1),
                      s["leaked"]["count"], s["leaked"]["bytes"],
                      100.0 * s["leaked"]["bytes"] / max(total, 1)))
            if total + INFO_TRANSIENT < m["used_memory"]:
                problems.append("leaks saw %d used bytes, less than redis's used_memory %d"
                                % (total, m["used_memory"]))
            if s["possible"]["bytes"] >= 0.01 * total:
                problems.append("possible is %.2f%% of %d used bytes (want under 1%%)"
                                % (100.0 * s["possible"]["bytes"] / total, total))
            if share < MIN_KEPT:
                problems.append("only %.3f%% of %d used bytes reachable or possible"
                                " (leaked %d bytes in %d blocks)"
                                % (100 * share, total, s["leaked"]["bytes"],
                                   s["leaked"]["count"]))
        except (ValueError, KeyError, TypeError) as e:
            problems.append("bad JSON (%s): %r" % (e, r.out[:300]))
    R.case("heapsift leaks: succeeds, >= %.0f%% of the used bytes kept, possible under 1%%"
           % (100 * MIN_KEPT),
           problems)


def main():
    redis_bin = find_redis()
    if redis_bin is None:
        R.case("redis-server is installed", [
            "redis-server not found (HS_REDIS_SERVER or PATH): run scripts/setup.sh,"
            " which installs Debian's redis-server"])
        return R.finish()
    if not os.access(HS, os.X_OK):
        R.case("heapsift is built", ["%s not found or not executable" % HS])
        return R.finish()
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="hs-redis-")
    try:
        run_checks(redis_bin, tmp)
    except (RuntimeError, hstest.HsError, OSError, RespError, KeyError, ValueError) as e:
        R.case("the redis run", ["%s: %s" % (type(e).__name__, e)])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("total %.1f s" % (time.monotonic() - t0))
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
