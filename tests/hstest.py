"""Shared helpers for heapsift's Python tests (standard library only).

Environment (set by ctest through hs_pytest; defaults suit a run by hand from
the source tree after `cmake -S . -B build && cmake --build build`):
  HEAPSIFT  the CLI under test           (default build/heapsift)
  FIXTURES  directory of fixture binaries (default build/tests/fixtures)
  WORKDIR   scratch directory for cores   (default build/tests/work)
  SRCDIR    the source tree               (default: parent of this file)
  HS_REUSE_CORES=1  reuse a core from an earlier run when it is newer than
                    the fixture binary (saves time while iterating)
  HS_KEEP_CORES=1   keep the cores of fixtures whose checks all passed
                    (test_glibc_truth.py deletes them otherwise)

Fixture protocol (tests/fixtures/truth.h): the fixture writes a JSON record
to $HS_RECORD and stops itself with SIGSTOP.  take_core() waits until every
task is in state T, takes a core with gdb's gcore, then (when core_pattern is
a plain file name) lets the kernel dump the same stopped process (SIGABRT,
then SIGCONT), kills whatever is left and loads the record.  Both cores show
the same heap; kernel cores differ in what they contain (no PROT_NONE
reservations, no never-touched pages), gcore writes every readable mapping.
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

STOP_TIMEOUT = float(os.environ.get("HS_STOP_TIMEOUT", "60"))
GCORE_TIMEOUT = float(os.environ.get("HS_GCORE_TIMEOUT", "300"))
HEAPSIFT_TIMEOUT = float(os.environ.get("HS_HEAPSIFT_TIMEOUT", "300"))


class HsError(Exception):
    """A test could not run (as opposed to a check that failed)."""


# ---------------------------------------------------------------- fixtures


class Snapshot:
    """A stopped fixture's core and its record.  kind is "gcore" (taken
    with gdb's gcore while the fixture is stopped) or "kernel" (the kernel's
    core dump of the same stopped process, made afterwards with SIGABRT)."""

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

    @property
    def label(self):
        return self.name if self.kind == "gcore" else "%s[%s]" % (self.name, self.kind)

    def __repr__(self):
        return "Snapshot(%s, %s, %s)" % (self.name, self.kind, self.core)


def fixture_path(name):
    path = os.path.join(FIXTURES, name)
    if not os.access(path, os.X_OK):
        raise HsError("fixture binary %s not found (build the project first: "
                      "cmake --build build)" % path)
    return path


def _proc_states(pid):
    """State letter of every task of pid, or None if the process is gone."""
    states = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) S ...": comm may hold spaces and parentheses.
        states.append(stat[stat.rindex(")") + 2])
    return states


def wait_stopped(proc, timeout=STOP_TIMEOUT):
    """Wait until every task of proc is in state T (stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise HsError("fixture pid %d exited with status %s before it "
                          "stopped" % (proc.pid, proc.returncode))
        states = _proc_states(proc.pid)
        if states and all(s in "Tt" for s in states):
            return
        if time.monotonic() > deadline:
            raise HsError("fixture pid %d did not stop within %.0f s (task "
                          "states %s)" % (proc.pid, timeout, states))
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


def gcore(pid, prefix, core, name):
    """Core the stopped process pid with gdb's gcore into `core` (the log
    of gcore in PREFIX.log)."""
    gcore_out = prefix + ".log"
    with open(gcore_out, "wb") as log:
        try:
            rc = subprocess.run(["gcore", "-o", prefix, str(pid)],
                                stdout=log, stderr=subprocess.STDOUT,
                                timeout=GCORE_TIMEOUT).returncode
        except FileNotFoundError:
            raise HsError("gcore (from gdb) is not installed")
        except subprocess.TimeoutExpired:
            raise HsError("gcore of %s (pid %d) timed out" % (name, pid))
    produced = "%s.%d" % (prefix, pid)
    if rc != 0 or not os.path.exists(produced):
        with open(gcore_out, errors="replace") as log:
            tail = log.read()[-2000:]
        raise HsError("gcore of %s (pid %d) failed (exit %d):\n%s"
                      % (name, pid, rc, tail))
    os.replace(produced, core)


def take_core(name, workdir=None, args=(), kernel=True):
    """Run fixture `name` until it stops, core it with gcore, then (when
    `kernel` and core_pattern allows) make the kernel dump it too.

    Returns {"gcore": Snapshot, "kernel": Snapshot or HsError}.  Files:
    WORKDIR/NAME.core (gcore), NAME.kcore (kernel), NAME.record.json,
    NAME.out (fixture output)."""
    workdir = workdir or WORKDIR
    os.makedirs(workdir, exist_ok=True)
    binary = fixture_path(name)
    record_path = os.path.join(workdir, name + ".record.json")
    core = os.path.join(workdir, name + ".core")
    kcore = os.path.join(workdir, name + ".kcore")
    out_path = os.path.join(workdir, name + ".out")
    kdir = os.path.join(workdir, name + ".kdir")

    if (os.environ.get("HS_REUSE_CORES") == "1" and os.path.exists(core)
            and os.path.exists(record_path)
            and os.path.getmtime(core) > os.path.getmtime(binary)):
        record = load_json(record_path, "record")
        snaps = {"gcore": Snapshot(name, binary, core, record, record_path)}
        if os.path.exists(kcore):
            snaps["kernel"] = Snapshot(name, binary, kcore, record,
                                       record_path, "kernel")
        else:
            snaps["kernel"] = HsError("no kernel core from an earlier run")
        return snaps

    for stale in (record_path, core, kcore):
        if os.path.exists(stale):
            os.unlink(stale)
    os.makedirs(kdir, exist_ok=True)
    for f in os.listdir(kdir):
        os.unlink(os.path.join(kdir, f))
    kernel_ok, why = kernel_cores_possible() if kernel else (False, "not asked")

    env = dict(os.environ)
    env["HS_RECORD"] = record_path
    # The fixture's heap must be glibc's, untouched by tunables or preloads.
    for var in ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CHECK_",
                "MALLOC_PERTURB_", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_",
                "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_"):
        env.pop(var, None)
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([binary] + list(args), env=env, stdout=out,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=kdir,
                                preexec_fn=_allow_core_dumps if kernel_ok else None)
    kernel_result = HsError("kernel core not taken: %s" % why)
    try:
        wait_stopped(proc)
        gcore(proc.pid, os.path.join(workdir, name + ".gcore"), core, name)
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

    record = load_json(record_path, "record of fixture %s" % name)
    if "mallinfo2" not in record:
        raise HsError("record %s is incomplete (no mallinfo2)" % record_path)
    snaps = {"gcore": Snapshot(name, binary, core, record, record_path)}
    snaps["kernel"] = kernel_result or Snapshot(name, binary, kcore, record,
                                                record_path, "kernel")
    return snaps


_core_cache = {}


def get_core(name, kind="gcore"):
    """The Snapshot of fixture `name` of the given kind ("gcore" or
    "kernel"), taken once per fixture per run (both kinds come from one run
    of the fixture).  Raises HsError when it cannot be had."""
    if name not in _core_cache:
        try:
            _core_cache[name] = take_core(name)
        except HsError as e:
            _core_cache[name] = e
    snaps = _core_cache[name]
    if isinstance(snaps, HsError):
        raise snaps
    snap = snaps.get(kind)
    if snap is None:
        raise HsError("unknown core kind %r" % kind)
    if isinstance(snap, HsError):
        raise snap
    return snap


# ---------------------------------------------------------------- heapsift


def remove_cores(name, workdir=None):
    """Delete the cores (and oracle output) of fixture `name`; the record
    and the fixture's output stay."""
    workdir = workdir or WORKDIR
    for suffix in (".core", ".kcore", ".core.oracle.json", ".kcore.oracle.json"):
        path = os.path.join(workdir, name + suffix)
        if os.path.exists(path):
            os.unlink(path)


def heapsift_available():
    return os.access(HEAPSIFT, os.X_OK)


def run_heapsift(args, timeout=HEAPSIFT_TIMEOUT):
    """Run the CLI; returns CompletedProcess (text)."""
    if not heapsift_available():
        raise HsError("heapsift binary %s not found or not executable"
                      % HEAPSIFT)
    cmd = [HEAPSIFT] + [str(a) for a in args]
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HsError("timed out after %.0f s: %s" % (timeout, " ".join(cmd)))


def heapsift_json(command, snap, *extra):
    """`heapsift COMMAND CORE --exe BIN --format json EXTRA...`, parsed."""
    args = [command, snap.core, "--exe", snap.binary, "--format", "json"]
    args += list(snap.extra) + list(extra)
    p = run_heapsift(args)
    shown = "heapsift " + " ".join(str(a) for a in args)
    if p.returncode != 0:
        raise HsError("%s exited %d\nstderr: %s" % (shown, p.returncode,
                                                   p.stderr.strip()[-2000:]))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise HsError("%s printed invalid JSON (%s); first 300 bytes: %r"
                      % (shown, e, p.stdout[:300]))


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
    try:
        init = [a for c in snap.gdb_init for a in ("-iex", c)]
        p = subprocess.run(["gdb", "-batch", "-nx", "-q"] + init
                           + ["-x", script, snap.binary, snap.core],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env, timeout=600)
    except FileNotFoundError:
        raise HsError("gdb is not installed")
    if not os.path.exists(out):
        raise HsError("gdb oracle produced nothing for %s:\n%s"
                      % (snap.core, p.stdout[-3000:]))
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
    """Counts named checks; prints one line per failure (and per pass with
    -v); summary() prints 'N passed, M failed' and returns the exit code."""

    def __init__(self, verbose=False, out=sys.stdout):
        self.passed = 0
        self.failed = 0
        self.failures = []
        self.verbose = verbose
        self.out = out

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            if self.verbose:
                print("PASS %s" % name, file=self.out)
        else:
            self.failed += 1
            self.failures.append((name, detail))
            text = "FAIL %s" % name
            if detail:
                text += "\n     " + "\n     ".join(str(detail).splitlines())
            print(text, file=self.out)
        self.out.flush()
        return ok

    def errors(self, name, problems, limit=12):
        """One check that passes when `problems` (a list of strings) is
        empty; shows the first `limit` of them."""
        shown = problems[:limit]
        if len(problems) > limit:
            shown.append("... and %d more" % (len(problems) - limit))
        return self.check(name, not problems, "\n".join(shown))

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed),
              file=self.out)
        self.out.flush()
        return 0 if self.failed == 0 and self.passed > 0 else 1
