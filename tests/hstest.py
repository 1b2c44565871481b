"""Shared helpers for heapsift's Python tests (standard library only).

Environment (set by ctest through hs_pytest; defaults suit a run by hand from
the source tree after `cmake -S . -B build && cmake --build build`):
  HEAPSIFT  the CLI under test           (default build/heapsift)
  FIXTURES  directory of fixture binaries (default build/tests/fixtures)
  WORKDIR   scratch directory for cores   (default build/tests/work)
  SRCDIR    the source tree               (default: parent of this file)
  HS_REUSE_CORES=1  reuse a core from an earlier run when it is newer than
                    the fixture binary (truth_core(): saves time while
                    iterating)
  HS_KEEP_CORES=1   keep the cores of fixtures whose checks all passed
                    (the truth tests delete them otherwise)
  HS_STOP_TIMEOUT, HS_GCORE_TIMEOUT, HS_HEAPSIFT_TIMEOUT  seconds allowed
                    for a fixture to stop itself, for gcore, for one run of
                    the CLI (defaults 120, 300, 300)

Fixture protocol (tests/fixtures/truth.h): the fixture writes a record to
$HS_RECORD and stops itself with SIGSTOP.  take_core() waits until every
task is in state T, takes a core with gdb's gcore, then (when asked, and when
core_pattern is a plain file name) lets the kernel dump the same stopped
process (SIGABRT, then SIGCONT), and kills whatever is left.  Both cores show
the same heap; kernel cores differ in what they contain (no PROT_NONE
reservations, no never-touched pages), gcore writes every readable mapping.
truth_core() also loads the JSON record of the fixtures that close theirs
with mallinfo2 (truth.c, reach_record.c).

Results: a Checker counts the checks and prints the closing line
"N passed, M failed" (", K skipped" when a case was skipped).
"""

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("SRCDIR") or os.path.dirname(HERE)
_BUILD = os.path.join(SRCDIR, "build")
HEAPSIFT = os.environ.get("HEAPSIFT") or os.path.join(_BUILD, "heapsift")
FIXTURES = os.environ.get("FIXTURES") or os.path.join(_BUILD, "tests", "fixtures")
WORKDIR = os.environ.get("WORKDIR") or os.path.join(_BUILD, "tests", "work")

STOP_TIMEOUT = float(os.environ.get("HS_STOP_TIMEOUT", "120"))
GCORE_TIMEOUT = float(os.environ.get("HS_GCORE_TIMEOUT", "300"))
HEAPSIFT_TIMEOUT = float(os.environ.get("HS_HEAPSIFT_TIMEOUT", "300"))


class HsError(Exception):
    """A test could not run (as opposed to a check that failed)."""


# ---------------------------------------------------------------- processes


def _shown(arg):
    return arg.decode("utf-8", "backslashreplace") if isinstance(arg, bytes) else arg


class Run:
    """The outcome of one command.  out and err are text, or bytes when
    run() was given text=False; rc is None when the command timed out."""

    def __init__(self, argv, rc, out, err, timed_out, seconds):
        self.argv = argv
        self.rc = rc
        self.out = out
        self.err = err
        self.timed_out = timed_out
        self.seconds = seconds

    def describe(self):
        what = "timed out" if self.timed_out else "exit %s" % self.rc
        if self.rc is not None and self.rc < 0:
            try:
                what = "killed by %s" % signal.Signals(-self.rc).name
            except ValueError:
                what = "killed by signal %d" % -self.rc
        err = self.err.strip()
        if len(err) > 1500:
            err = err[:1500] + (b"..." if isinstance(err, bytes) else "...")
        return "%s: %s after %.1fs; stderr: %r" % (
            " ".join(_shown(a) for a in self.argv), what, self.seconds, err)


def run(argv, timeout=120, env=None, stdin=subprocess.DEVNULL, cwd=None, text=True):
    """Run argv (in cwd), capturing its output: text (invalid UTF-8
    replaced), or bytes with text=False (argv may then hold bytes too).  A
    hang is killed (with its process group) and reported as timed_out, rc
    None.  A program that cannot be started raises OSError."""
    argv = [a if isinstance(a, bytes) else str(a) for a in argv]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=stdin, env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        timed_out = True
    if text:
        out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return Run(argv, None if timed_out else p.returncode, out, err, timed_out,
               time.monotonic() - t0)


def proc_state(pid):
    """The state letters (R, S, T, ...) of every task of process pid, its
    main thread's first ("S" for a single-threaded process asleep), or None
    when the process is gone."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    tids.sort(key=lambda t: (t != str(pid), int(t)))
    states = []
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) S ...": comm may hold spaces and parentheses.
        states.append(stat[stat.rindex(")") + 2])
    return "".join(states)


def is_stopped(pid):
    """Every task of pid is stopped (state T, or t under a tracer)."""
    states = proc_state(pid)
    return bool(states) and all(s in "Tt" for s in states)


def wait_stopped(proc, timeout=STOP_TIMEOUT):
    """Wait until every task of proc (a Popen) is stopped."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise HsError("pid %d (%s) exited with status %s before it stopped"
                          % (proc.pid, _shown(proc.args[0]), proc.returncode))
        if is_stopped(proc.pid):
            return
        if time.monotonic() > deadline:
            raise HsError("pid %d (%s) did not stop within %.0f s (task states %r)"
                          % (proc.pid, _shown(proc.args[0]), timeout,
                             proc_state(proc.pid)))
        time.sleep(0.02)


def kill_process(proc):
    """SIGKILL a child (if still running) and reap it."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def gcore(pid, prefix, core=None, what=None, timeout=GCORE_TIMEOUT):
    """Core process pid with gdb's gcore: it writes PREFIX.PID, moved to
    `core` (default PREFIX.core).  Returns the core's path; raises HsError.
    what: how to name the process in an error (default its pid)."""
    core = core or prefix + ".core"
    what = "%s (pid %d)" % (what, pid) if what else "pid %d" % pid
    try:
        r = run(["gcore", "-o", prefix, str(pid)], timeout=timeout)
    except FileNotFoundError:
        raise HsError("gcore (from gdb) is not installed")
    produced = "%s.%d" % (prefix, pid)
    if r.rc != 0 or not os.path.exists(produced):
        raise HsError("gcore of %s failed: %s\n%s" % (what, r.describe(), r.out[-2000:]))
    os.replace(produced, core)
    return core


# ---------------------------------------------------------------- fixtures


class Snapshot:
    """A stopped fixture's core and its record.  kind is "gcore" (taken
    with gdb's gcore while the fixture is stopped) or "kernel" (the kernel's
    core dump of the same stopped process, made afterwards with SIGABRT).
    record is the parsed record (truth_core()) or None; record_path is
    None when the fixture was run without one.  A gcore Snapshot from
    take_core() has in .kernel the kernel's Snapshot, or the HsError
    saying why there is none."""

    def __init__(self, name, binary, core, record, record_path, kind="gcore",
                 extra=()):
        self.name = name
        # options given to every heapsift run on this core (--sysroot ...)
        self.extra = tuple(extra)
        # gdb commands run before the oracle loads the core (set sysroot ...)
        self.gdb_init = ()
        self.binary = binary
        self.core = core
        self.record = record
        self.record_path = record_path
        self.kind = kind
        self.kernel = None

    @property
    def label(self):
        return self.name if self.kind == "gcore" else "%s[%s]" % (self.name, self.kind)

    def __repr__(self):
        return "Snapshot(%s, %s, %s)" % (self.name, self.kind, self.core)


# tests/fixtures/phases.c: its kinds of blocks, their usable sizes and
# the rows heapsift gives them (test_diff.py, test_summary.py)
PHASES_USABLE = {"cache_entry": 56, "lru_entry": 72, "churn": 104, "leak_rec": 136}
PHASES_LABEL = {"cache_entry": "struct cache_entry", "lru_entry": "struct lru_entry",
                "churn": "struct churn", "leak_rec": "(untyped, 136 bytes)"}


def phases_cores(work, phases):
    """Runs the phases fixture for that many phases and takes a core at
    each stop (work/pK.core): (cores, the fixture's record of each)."""
    env = dict(os.environ, HS_RECORD=os.path.join(work, "rec"))
    proc = subprocess.Popen([os.path.join(FIXTURES, "phases"), str(phases)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    cores, records = [], []
    try:
        for k in range(phases):
            wait_stopped(proc)
            cores.append(gcore(proc.pid, os.path.join(work, "p%d" % k),
                               what="phases, phase %d" % k))
            with open(os.path.join(work, "rec.%d" % k)) as f:
                records.append(json.load(f))
            os.kill(proc.pid, signal.SIGCONT)
            # wait until it runs again (it is no longer stopped)
            deadline = time.time() + 10
            while time.time() < deadline and is_stopped(proc.pid):
                time.sleep(0.01)
    finally:
        kill_process(proc)
    return cores, records


def fixture_path(name):
    path = os.path.join(FIXTURES, name)
    if not os.access(path, os.X_OK):
        raise HsError("fixture binary %s not found (build the project first: "
                      "cmake --build build)" % path)
    return path


def load_json(path, what):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise HsError("cannot read %s %s: %s" % (what, path, e))
    try:
        return json.loads(text)
    except ValueError as e:
        raise HsError("%s %s is not valid JSON (%s); first 300 bytes: %r"
                      % (what, path, e, text[:300]))


def load_record(path, what):
    """A JSON record that closes with mallinfo2 (truth.c, reach_record.c):
    without it, the record is incomplete."""
    record = load_json(path, what)
    if "mallinfo2" not in record:
        raise HsError("record %s is incomplete (no mallinfo2)" % path)
    return record


def kernel_cores_possible():
    """Kernel core dumps land in the dumping process's cwd only when
    core_pattern is a plain file name (no pipe, no directory)."""
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
    except OSError:
        return False, "cannot read core_pattern"
    if pattern.startswith("|") or "/" in pattern:
        return False, "core_pattern is %r" % pattern
    return True, pattern


def _allow_core_dumps():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    except (ValueError, OSError):
        pass


# What would change the heap the fixture makes (preload= sets LD_PRELOAD).
_HEAP_ENV = ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CHECK_", "MALLOC_PERTURB_",
             "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
             "MALLOC_TRIM_THRESHOLD_")


def take_core(binary, workdir=None, name=None, args=(), record=True, preload=None,
              kernel=False):
    """Run a fixture until it stops itself, core it with gcore, then (when
    `kernel` and core_pattern allows) make the kernel dump it too; the
    fixture is always killed.

    binary: a fixture's name (in FIXTURES) or a path.  Files, in workdir
    (default WORKDIR), named after `name` (default: the binary's):
    NAME.core (gcore), NAME.kcore (kernel), NAME.rec (the record, when
    `record`: its path is given in $HS_RECORD), NAME.out (the fixture's
    output).  The fixture runs without malloc tunables or preloads, but
    for `preload` (a library to LD_PRELOAD: another malloc).

    Returns the gcore Snapshot (record not parsed; see truth_core()), with
    the kernel's in .kernel.  Raises HsError (OSError when a binary given
    by its path cannot be run)."""
    workdir = workdir or WORKDIR
    path = binary if os.sep in binary else fixture_path(binary)
    name = name or os.path.basename(path)
    os.makedirs(workdir, exist_ok=True)
    record_path = os.path.join(workdir, name + ".rec") if record else None
    core = os.path.join(workdir, name + ".core")
    kcore = os.path.join(workdir, name + ".kcore")
    for stale in (record_path, core, kcore):
        if stale and os.path.exists(stale):
            os.unlink(stale)
    kernel_ok, why = kernel_cores_possible() if kernel else (False, "not asked")
    kdir = None
    if kernel_ok:
        kdir = os.path.join(workdir, name + ".kdir")
        os.makedirs(kdir, exist_ok=True)
        for f in os.listdir(kdir):
            os.unlink(os.path.join(kdir, f))

    env = dict(os.environ)
    for var in _HEAP_ENV:
        env.pop(var, None)
    if preload:
        env["LD_PRELOAD"] = preload
    if record_path:
        env["HS_RECORD"] = record_path
    with open(os.path.join(workdir, name + ".out"), "wb") as out:
        proc = subprocess.Popen([path] + [str(a) for a in args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=kdir, preexec_fn=_allow_core_dumps if kernel_ok else None)
    kernel_result = HsError("kernel core not taken: %s" % why)
    try:
        wait_stopped(proc)
        gcore(proc.pid, os.path.join(workdir, name), core, name)
        if kernel_ok:
            # Still stopped after gcore.  SIGABRT stays pending until SIGCONT;
            # it is delivered before any fixture code runs on, so the heap
            # is the same as in the gcore.
            os.kill(proc.pid, signal.SIGABRT)
            os.kill(proc.pid, signal.SIGCONT)
            try:
                proc.wait(timeout=GCORE_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
            dumped = [os.path.join(kdir, f) for f in os.listdir(kdir)]
            if proc.returncode == -signal.SIGABRT and dumped:
                os.replace(max(dumped, key=os.path.getmtime), kcore)
                kernel_result = None
            else:
                kernel_result = HsError(
                    "no kernel core from %s (exit %s, files %s)"
                    % (name, proc.returncode, [os.path.basename(d) for d in dumped]))
    finally:
        kill_process(proc)

    snap = Snapshot(name, path, core, None, record_path)
    snap.kernel = kernel_result or Snapshot(name, path, kcore, None, record_path, "kernel")
    return snap


def truth_core(name, workdir=None, kernel=False):
    """take_core() of fixture `name` whose record is JSON closed by
    mallinfo2 (truth.c, reach_record.c): the record is loaded into the
    Snapshot (and the kernel's).  With HS_REUSE_CORES=1, the cores of an
    earlier run are taken again when newer than the binary."""
    workdir = workdir or WORKDIR
    binary = fixture_path(name)
    record_path = os.path.join(workdir, name + ".rec")
    core = os.path.join(workdir, name + ".core")
    kcore = os.path.join(workdir, name + ".kcore")
    if (os.environ.get("HS_REUSE_CORES") == "1" and os.path.exists(core)
            and os.path.exists(record_path)
            and os.path.getmtime(core) > os.path.getmtime(binary)):
        snap = Snapshot(name, binary, core, None, record_path)
        if os.path.exists(kcore):
            snap.kernel = Snapshot(name, binary, kcore, None, record_path, "kernel")
        else:
            snap.kernel = HsError("no kernel core from an earlier run")
    else:
        snap = take_core(name, workdir, kernel=kernel)
    snap.record = load_record(snap.record_path, "record of fixture %s" % name)
    if isinstance(snap.kernel, Snapshot):
        snap.kernel.record = snap.record
    return snap


_core_cache = {}


def get_core(name, kind="gcore"):
    """The Snapshot of fixture `name` of the given kind ("gcore" or
    "kernel"), taken once per fixture per run (both kinds come from one run
    of the fixture).  Raises HsError when it cannot be had."""
    if name not in _core_cache:
        try:
            _core_cache[name] = truth_core(name, kernel=True)
        except HsError as e:
            _core_cache[name] = e
    snap = _core_cache[name]
    if isinstance(snap, HsError):
        raise snap
    if kind == "kernel":
        snap = snap.kernel
    elif kind != "gcore":
        raise HsError("unknown core kind %r" % kind)
    if isinstance(snap, HsError):
        raise snap
    return snap


def remove_cores(name, workdir=None):
    """Delete the cores (and oracle output) of fixture `name`; the record
    and the fixture's output stay."""
    workdir = workdir or WORKDIR
    for suffix in (".core", ".kcore", ".core.oracle.json", ".kcore.oracle.json"):
        path = os.path.join(workdir, name + suffix)
        if os.path.exists(path):
            os.unlink(path)


# ---------------------------------------------------------------- heapsift


def heapsift_available():
    return os.access(HEAPSIFT, os.X_OK)


def run_heapsift(args, timeout=HEAPSIFT_TIMEOUT):
    """Run the CLI; returns a Run (text).  Raises HsError when it is
    missing or hangs."""
    if not heapsift_available():
        raise HsError("heapsift binary %s not found or not executable"
                      % HEAPSIFT)
    r = run([HEAPSIFT] + list(args), timeout=timeout)
    if r.timed_out:
        raise HsError("timed out after %.0f s: %s" % (timeout, " ".join(r.argv)))
    return r


def heapsift_json(command, snap, *extra):
    """`heapsift COMMAND CORE --exe BIN --format json EXTRA...`, parsed."""
    args = [command, snap.core, "--exe", snap.binary, "--format", "json"]
    args += list(snap.extra) + list(extra)
    r = run_heapsift(args)
    shown = "heapsift " + " ".join(str(a) for a in args)
    if r.rc != 0:
        raise HsError("%s exited %d\nstderr: %s" % (shown, r.rc, r.err.strip()[-2000:]))
    try:
        return json.loads(r.out)
    except ValueError as e:
        raise HsError("%s printed invalid JSON (%s); first 300 bytes: %r"
                      % (shown, e, r.out[:300]))


_hs_cache = {}


def heapsift_cached(command, snap, *extra):
    key = (command, snap.core) + snap.extra + tuple(extra)
    if key not in _hs_cache:
        try:
            _hs_cache[key] = heapsift_json(command, snap, *extra)
        except HsError as e:
            _hs_cache[key] = e
    if isinstance(_hs_cache[key], HsError):
        raise _hs_cache[key]
    return _hs_cache[key]


def failed_writes(ck, name, workdir, argv_for):
    """Output paths that cannot be written, each a case: one in a missing
    directory (the file cannot be created) and one that is an existing
    directory (the final rename fails, after the whole file was written).
    argv_for(path) gives the command writing there.  Each must exit 1 with
    one line on stderr naming the path, and leave nothing behind: no
    directory created, no temporary file (PATH.tmp-XXXXXX)."""
    missing = os.path.join(workdir, "no-such-dir", "out")
    a_dir = os.path.join(workdir, "a-directory")
    os.makedirs(a_dir, exist_ok=True)
    for what, path in (("in a missing directory", missing),
                       ("onto a directory", a_dir)):
        before = set(os.listdir(workdir))
        r = run(argv_for(path), timeout=300)
        problems = []
        if r.rc != 1:
            problems.append("exit %s (expected 1): %s" % (r.rc, r.err))
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        if len(lines) != 1 or path not in lines[0]:
            problems.append("not one line naming %s: %r" % (path, r.err))
        added = set(os.listdir(workdir)) - before
        if added:
            problems.append("left behind: %s" % sorted(added))
        if os.listdir(a_dir):
            problems.append("left in %s: %s" % (a_dir, os.listdir(a_dir)))
        ck.case("%s: a failed write %s reports one line and leaves nothing"
                % (name, what), problems)


# ---------------------------------------------------------------- gdb oracle


_oracle_cache = {}


def gdb_oracle(snap):
    """Read the allocator state from the core with gdb + libc6-dbg
    (tests/gdb_oracle.py): arenas, bins, fastbins, every thread's tcache,
    mp_.  Independent of heapsift; used to check the fixtures' claims and
    to decide who is right when heapsift disagrees."""
    if snap.core in _oracle_cache:
        return _oracle_cache[snap.core]
    out = snap.core + ".oracle.json"
    script = os.path.join(HERE, "gdb_oracle.py")
    env = dict(os.environ)
    env["HS_ORACLE_OUT"] = out
    try:  # safe-linking came with glibc 2.32
        major, minor = map(int, str(snap.record.get("glibc")).split(".")[:2])
        if (major, minor) < (2, 32):
            env["HS_ORACLE_SAFE_LINKING"] = "0"
    except ValueError:
        pass
    segments = snap.record.get("notes", {}).get("oracle_segments")
    if segments:
        env["HS_ORACLE_SEGMENTS"] = segments
    if os.path.exists(out):
        os.unlink(out)
    init = [a for c in snap.gdb_init for a in ("-iex", c)]
    try:
        r = run(["gdb", "-batch", "-nx", "-q"] + init
                + ["-x", script, snap.binary, snap.core], env=env, timeout=600)
    except FileNotFoundError:
        raise HsError("gdb is not installed")
    if not os.path.exists(out):
        raise HsError("gdb oracle produced nothing for %s (%s):\n%s"
                      % (snap.core, "timed out" if r.timed_out else "exit %s" % r.rc,
                         (r.out + r.err)[-3000:]))
    result = load_json(out, "gdb oracle output")
    if result.get("error"):
        raise HsError("gdb oracle failed on %s: %s" % (snap.core,
                                                      result["error"]))
    _oracle_cache[snap.core] = result
    return result


# ---------------------------------------------------------------- checks


def hx(v):
    """'0x...' string or int -> int."""
    if isinstance(v, int):
        return v
    return int(v, 16) if isinstance(v, str) and v.startswith("0x") else int(v)


class Checker:
    """Counts named checks.  A failed check prints "FAIL NAME" and its
    details, a passed one "ok   NAME" unless quiet (the suites of thousands
    of checks print their failures only, and their passes too with -v).
    finish() lists the failures again, one line each, prints the closing
    line "N passed, M failed" (", K skipped" when a case was skipped) and
    returns the exit status: 1 when a check failed, or when nothing was
    checked or skipped at all."""

    def __init__(self, quiet=False):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []
        self.quiet = quiet

    def check(self, name, ok, detail=""):
        """One check; detail (text) says what went wrong when not ok."""
        if ok:
            self.passed += 1
            if not self.quiet:
                print("ok   %s" % name)
        else:
            self.failed += 1
            detail = str(detail)
            self.failures.append((name, detail))
            text = "FAIL %s" % name
            if detail:
                text += "\n     " + "\n     ".join(detail.splitlines())
            print(text)
        sys.stdout.flush()
        return ok

    def case(self, name, problems, limit=12):
        """One check that passes when `problems` (a list of strings) is
        empty; shows the first `limit` of them."""
        shown = [str(p) for p in problems[:limit]]
        if len(problems) > limit:
            shown.append("... and %d more" % (len(problems) - limit))
        return self.check(name, not problems, "\n".join(shown))

    def skip(self, name, why):
        self.skipped += 1
        print("skip %s: %s" % (name, why))
        sys.stdout.flush()

    def finish(self):
        if self.failures:
            print()
            print("failures:")
            for name, detail in self.failures:
                lines = detail.splitlines()
                first = lines[0] if lines else ""
                if len(first) > 300:
                    first = first[:300] + "..."
                print("  %s: %s" % (name, first))
        line = "%d passed, %d failed" % (self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        print(line)
        sys.stdout.flush()
        return 1 if self.failed or not (self.passed or self.skipped) else 0
