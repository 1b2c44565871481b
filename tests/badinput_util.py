"""Small helpers for the bad-input tests (stdlib only).

- paths(): where the CLI, the fixture binaries and the scratch directory are
  (from the HEAPSIFT / FIXTURES / WORKDIR / SRCDIR variables that ctest sets,
  with fallbacks to the default build tree);
- take_core(): run a fixture that stops itself with SIGSTOP, wait for the
  stop, take its core with gcore, and kill it;
- run(): run a command with a timeout, never raising on a hang;
- Results: counts passed/failed checks and prints the closing line.
"""

import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def paths():
    build = os.path.join(REPO, "build")
    return {
        "heapsift": os.environ.get("HEAPSIFT", os.path.join(build, "heapsift")),
        "fixtures": os.environ.get("FIXTURES", os.path.join(build, "tests", "fixtures")),
        "workdir": os.environ.get("WORKDIR", os.path.join(build, "tests", "work")),
        "srcdir": os.environ.get("SRCDIR", REPO),
    }


class Run:
    """The outcome of one command."""

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
            err = err[:1500] + "..."
        return "%s: %s after %.1fs; stderr: %r" % (
            " ".join(self.argv), what, self.seconds, err)


def run(argv, timeout=120, env=None, stdin=subprocess.DEVNULL, cwd=None):
    """Run argv (in cwd), capturing text output.  A hang is killed (with its
    process group) and reported as timed_out, rc None."""
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
    return Run([str(a) for a in argv], None if timed_out else p.returncode,
               out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
               timed_out, time.monotonic() - t0)


def proc_state(pid):
    """The state letter from /proc/PID/stat, or None if the process is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces.
    return stat[stat.rindex(")") + 2:].split()[0]


def wait_stopped(proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("fixture exited with %s before stopping" % proc.returncode)
        if proc_state(proc.pid) == "T":
            return
        time.sleep(0.05)
    raise RuntimeError("fixture did not stop within %ds" % timeout)


def take_core(binary, workdir, name, args=(), record=True, timeout=120, preload=None):
    """Run a self-stopping fixture and gcore it.  preload: a library to
    LD_PRELOAD into the fixture alone (another malloc).

    Returns (core_path, record_path or None).  The fixture is always killed.
    """
    os.makedirs(workdir, exist_ok=True)
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = preload
    rec = None
    if record:
        rec = os.path.join(workdir, name + ".rec")
        if os.path.exists(rec):
            os.unlink(rec)
        env["HS_RECORD"] = rec
    proc = subprocess.Popen([binary] + list(args), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        wait_stopped(proc, timeout=timeout)
        prefix = os.path.join(workdir, name)
        r = run(["gcore", "-o", prefix, str(proc.pid)], timeout=timeout)
        core = "%s.%d" % (prefix, proc.pid)
        if r.rc != 0 or not os.path.exists(core):
            raise RuntimeError("gcore failed: " + r.describe())
        final = prefix + ".core"
        os.replace(core, final)
        return final, rec
    finally:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
        proc.wait()


def failed_writes(R, name, workdir, argv_for):
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
            problems.append("exit %d (expected 1): %s" % (r.rc, r.err))
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        if len(lines) != 1 or path not in lines[0]:
            problems.append("not one line naming %s: %r" % (path, r.err))
        added = set(os.listdir(workdir)) - before
        if added:
            problems.append("left behind: %s" % sorted(added))
        if os.listdir(a_dir):
            problems.append("left in %s: %s" % (a_dir, os.listdir(a_dir)))
        R.case("%s: a failed write %s reports one line and leaves nothing"
               % (name, what), problems)


class Results:
    """Counts checks; each case may record several failures."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []

    def case(self, name, problems):
        """problems: a list of strings, empty when the case passed."""
        if problems:
            self.failed += 1
            self.failures.append((name, problems))
            print("FAIL %s" % name)
            for p in problems:
                print("     %s" % p)
        else:
            self.passed += 1
            print("ok   %s" % name)
        sys.stdout.flush()

    def skip(self, name, why):
        self.skipped += 1
        print("skip %s: %s" % (name, why))
        sys.stdout.flush()

    def finish(self):
        if self.failures:
            print()
            print("failures:")
            for name, problems in self.failures:
                first = problems[0].splitlines()[0]
                if len(first) > 300:
                    first = first[:300] + "..."
                print("  %s: %s" % (name, first))
        line = "%d passed, %d failed" % (self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        print(line)
        return 1 if self.failed else 0
