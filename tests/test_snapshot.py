#!/usr/bin/env python3
"""heapsift snapshot: a core of a live process (src/live.c).

The target is tests/fixtures/fx_snapshot.c: a heap of a given size whose
blocks it records, a thread that measures the largest gap in its own
clock readings (the pause as the target sees it), one asleep in nanosleep
and the main thread in read(2) on a pipe, answering commands.

  (a) snapshots in write-tracked (the default where the kernel tracks
      writes), fork and no-fork modes analyze as a gcore of the same
      quiescent process does (`list --format json`, `leaks` summary), and
      as the fixture recorded; gdb reads them (a backtrace);
  (b) the pause seen inside the target (the time a thread was stopped or
      blocked, not the time it waited for a CPU: a loaded machine's
      scheduling delays are left out, and the best of 8 snapshots taken),
      in tracked and in fork mode, stays under 50 ms at HS_SNAPSHOT_MIB
      MiB (default 256) and
      under a fifth of no-fork's, whose pause is reported; and the
      pause printed is the target's: in one of the 8 at least, it saw
      less than PAUSE_UNSEEN_MS more than heapsift printed (threads that
      fault while heapsift unregisters the write tracking wait for it,
      after the printed pause);
      HS_SNAPSHOT_BIG=1 adds a 2 GiB heap (tracked: under 50 ms there too;
      fork: under 250 ms, the clone copies the page tables, which grow
      with the resident heap; what the target saw beyond the printed pause
      shown, not checked, beside what it sees while dd writes as many
      bytes to the page cache: the machine's own stalls);
  (c) after a snapshot, and after heapsift is SIGKILLed in the middle of
      one (HEAPSIFT_TEST_SNAPSHOT_SLEEP_MS: in tracked mode while the
      target runs with its writes tracked), the target runs, answers, has
      no child and no descriptor more than before;
  (d) refusals: no such process, a process already traced, yama's
      ptrace_scope (HEAPSIFT_TEST_PTRACE_SCOPE_FILE), another user, a
      target that exits during the snapshot: one line, exit 1, nothing
      under the output's name;
  (e) --pid on an analysis command, and the descriptor table in `files`.
"""

import ctypes
import fcntl
import json
import os
import shutil
import struct
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402
from hstest import HEAPSIFT, Checker, HsError  # noqa: E402

WORK = os.path.join(hstest.WORKDIR, "snapshot")
FX = os.path.join(hstest.FIXTURES, "fx_snapshot")
PAUSE_LIMIT_MS = 50.0
PAUSE_UNSEEN_MS = 5.0


def kernel_tracks_writes():
    """Whether this kernel has asynchronous userfaultfd write protection
    and PAGEMAP_SCAN (Linux 6.7), asked of the kernel directly: then
    snapshot's default is the write-tracked mode."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(323, os.O_CLOEXEC | 1)  # userfaultfd(UFFD_USER_MODE_ONLY)
    if fd < 0:
        return False
    try:
        api = bytearray(struct.pack("QQQ", 0xAA, 0, 0))
        fcntl.ioctl(fd, 0xC018AA3F, api)  # UFFDIO_API
        if not struct.unpack("QQQ", bytes(api))[1] & (1 << 15):  # WP_ASYNC
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
    page = bytearray(8192)
    addr = (ctypes.addressof((ctypes.c_char * 8192).from_buffer(page)) + 4095) & ~4095
    region = ctypes.create_string_buffer(24)
    # struct pm_scan_arg: one page, present pages, one region out
    arg = bytearray(struct.pack("12Q", 96, 0, addr, addr + 4096, 0,
                                ctypes.addressof(region), 1, 0, 0, 0, 1 << 3, 1 << 3))
    with open("/proc/self/pagemap", "rb") as pm:
        try:
            fcntl.ioctl(pm.fileno(), 0xC0606610, arg)  # PAGEMAP_SCAN
        except OSError:
            return False
    return True


TRACKS = kernel_tracks_writes()
# what the default mode says it did
DEFAULT_SAYS = "its writes tracked" if TRACKS else "copied from a fork"


def maps_of(pid):
    """/proc/PID/maps, and whether some mapping is still registered for
    userfaultfd write protection (smaps' VmFlags "uw")."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
        with open("/proc/%d/smaps" % pid) as f:
            uw = any(ln.startswith("VmFlags:") and " uw" in ln for ln in f)
    except OSError:
        return None, None
    return maps, uw


def fds_of(pid):
    try:
        return sorted(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


class Target:
    """A running fx_snapshot."""

    def __init__(self, mib, name, *extra):
        self.record = os.path.join(WORK, name + ".rec")
        self.proc = subprocess.Popen([FX, str(mib), self.record] + list(extra),
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            self.stop()
            raise HsError("fx_snapshot %s did not start: %r" % (mib, line))
        self.pid = self.proc.pid

    def ask(self, what):
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def gap_us(self):
        """The largest gap the heartbeat saw since the last reset, in us,
        without its waits for a CPU (the fixture's comment says why)."""
        return self.gaps_us()[0]

    def gaps_us(self):
        """(gap, raw gap): without and with the waits for a CPU."""
        parts = self.ask("gap").split()
        if len(parts) != 3 or parts[0] != "gap":
            raise HsError("fx_snapshot answered %r to gap" % " ".join(parts))
        return int(parts[1]), int(parts[2])

    def beat(self):
        parts = self.ask("beat").split()
        if len(parts) != 4 or parts[0] != "beat":
            raise HsError("fx_snapshot answered %r to beat" % " ".join(parts))
        return [int(p) for p in parts[1:]]

    def blocks(self):
        out = {}
        with open(self.record) as f:
            for line in f:
                w = line.split()
                if w == ["end"]:
                    break
                out[int(w[0], 16)] = (int(w[1]), int(w[2]), w[3] == "1")
        return out

    def stop(self):
        hstest.kill_process(self.proc)


def children(pid):
    kids = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids += f.read().split()
    except OSError:
        pass
    return kids


def alive_and_well(t):
    """Problems with target t: not running, not answering, its threads
    not advancing, a child."""
    problems = []
    state = hstest.proc_state(t.pid)
    if not state or any(s not in "RS" for s in state):
        problems.append("task states %r (want R or S)" % state)
        return problems
    try:
        b1 = t.beat()
        time.sleep(0.05)
        b2 = t.beat()
    except (HsError, BrokenPipeError, ValueError) as e:
        return problems + ["does not answer: %s" % e]
    if b2[0] <= b1[0]:
        problems.append("heartbeat stands still: %s then %s" % (b1, b2))
    if b2[1] <= b1[1]:
        problems.append("the sleeping thread no longer wakes: %s then %s" % (b1, b2))
    if b2[2]:
        problems.append("read(2) failed with EINTR %d times (it must be restarted)" % b2[2])
    if children(t.pid):
        problems.append("children %s" % children(t.pid))
    return problems


def snapshot(pid, out, *extra, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return hstest.run([HEAPSIFT, "snapshot", str(pid), "-o", out] + list(extra),
                      env=e, timeout=600)


def snapshot_during(pid, out, sleep_ms, act, *extra, sleep_var="HEAPSIFT_TEST_SNAPSHOT_SLEEP_MS"):
    """`heapsift snapshot` started in the background with
    HEAPSIFT_TEST_SNAPSHOT_SLEEP_MS=sleep_ms (or sleep_var); act(proc)
    runs while it works (the sleep is its window); then its Run (rc
    negative for a signal)."""
    env = dict(os.environ, **{sleep_var: str(sleep_ms)})
    hs = subprocess.Popen([HEAPSIFT, "snapshot", str(pid), "-o", out] + list(extra),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    act(hs)
    try:
        o, e = hs.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        hs.kill()
        o, e = hs.communicate()
        return hstest.Run(hs.args, None, o, e, True, 120)
    return hstest.Run(hs.args, hs.returncode, o, e, False, 0)


def pause_of(r):
    """The pause heapsift printed on stderr, in ms, or None."""
    for line in r.err.splitlines():
        if line.startswith("paused ") and line.endswith(" ms"):
            return float(line.split()[1])
    return None


def hs_json(*args):
    r = hstest.run_heapsift(list(args) + ["--format", "json"])
    if r.rc != 0:
        raise HsError("heapsift %s: exit %s: %s" % (" ".join(args), r.rc, r.err.strip()))
    return json.loads(r.out)


def blocks_of(core):
    j = hs_json("list", core, "--exe", FX)
    return {(a["address"], a["size"], a["reach"], a["where"]) for a in j["allocations"]}


def leak_summary(core):
    s = hs_json("leaks", core, "--exe", FX)["summary"]
    return {k: s[k] for k in ("reachable", "possible", "leak_root", "indirect", "leaked")}


def kill_once_stopped(t):
    """An act for snapshot_during: SIGKILL target t once heapsift has
    stopped it (or after 20 s)."""
    def act(hs):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not hstest.is_stopped(t.pid):
            time.sleep(0.01)
        os.kill(t.pid, signal.SIGKILL)
    return act


def one_line_refusal(ck, name, r, out, words):
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    ck.check("%s: exit 1" % name, r.rc == 1, r.describe() + "\n" + r.err)
    ck.check("%s: one line on stderr, saying why" % name,
             len(lines) == 1 and lines[0].startswith("heapsift: ") and
             all(w in lines[0] for w in words), r.err)
    ck.check("%s: nothing under the output's name" % name, not os.path.exists(out))
    tmp = [f for f in os.listdir(os.path.dirname(out))
           if f.startswith(os.path.basename(out) + ".tmp-")]
    ck.check("%s: no temporary file left" % name, not tmp, tmp)


def test_same_as_gcore(ck):
    t = Target(64, "same")
    try:
        cores = {}
        # fork: the clone is run by the busy thread (stopped in user
        # code), or with HEAPSIFT_TEST_INJECT_IN_SYSCALL by the main
        # thread, stopped in read(2), whose call must then be restarted
        # (the userfaultfd, in tracked mode, is made the same ways)
        modes = (("default", [], {}, DEFAULT_SAYS),
                 ("default-in-syscall", [], {"HEAPSIFT_TEST_INJECT_IN_SYSCALL": "1"},
                  DEFAULT_SAYS),
                 ("fork", ["--fork"], {}, "copied from a fork"),
                 ("fork-in-syscall", ["--fork"], {"HEAPSIFT_TEST_INJECT_IN_SYSCALL": "1"},
                  "copied from a fork"),
                 ("no-fork", ["--no-fork"], {}, "copied with the threads stopped"))
        if not TRACKS:
            ck.skip("same: tracked mode", "this kernel cannot track writes (Linux 6.7+)")
        fds = fds_of(t.pid)
        maps = maps_of(t.pid)[0]
        for mode, extra, env, says in modes:
            out = os.path.join(WORK, "same-%s.core" % mode)
            r = snapshot(t.pid, out, *extra, env=env)
            ck.check("same: %s snapshot succeeds" % mode, r.rc == 0, r.describe() + "\n" + r.err)
            ck.check("same: %s pause printed" % mode, pause_of(r) is not None, r.err)
            ck.check("same: %s mode used" % mode, says in r.out, r.out + r.err)
            cores[mode] = out
            ck.case("same: target well after %s snapshot" % mode, alive_and_well(t))
            ck.check("same: the target's descriptors are as before (%s)" % mode,
                     fds_of(t.pid) == fds, "%s then %s" % (fds, fds_of(t.pid)))
            now, uw = maps_of(t.pid)
            ck.check("same: the target's mappings are as before, none write-protected (%s)"
                     % mode, now == maps and uw is False, "%s\nthen\n%s" % (maps, now))
        cores["gcore"] = hstest.gcore(t.pid, os.path.join(WORK, "same-gcore"))
        ck.case("same: target well after gcore", alive_and_well(t))
        lists = {m: blocks_of(c) for m, c in cores.items()}
        leaks = {m: leak_summary(c) for m, c in cores.items()}
        for m, _, _, _ in modes:
            ck.check("same: %s lists the blocks gcore's core does" % m,
                     lists[m] == lists["gcore"],
                     "only in %s: %s\nonly in gcore: %s" % (
                         m, sorted(lists[m] - lists["gcore"])[:5],
                         sorted(lists["gcore"] - lists[m])[:5]))
            ck.check("same: %s leak summary is gcore's" % m, leaks[m] == leaks["gcore"],
                     "%s\n%s" % (leaks[m], leaks["gcore"]))
        # the fixture's own record
        by_addr = {int(a, 16): (size, reach) for a, size, reach, _ in lists["default"]}
        rec = t.blocks()
        problems = []
        for addr, (size, usable, leaked) in rec.items():
            got = by_addr.get(addr)
            if not got:
                problems.append("%#x (%d bytes) not listed" % (addr, size))
            elif got[0] != usable:
                problems.append("%#x: size %d, malloc_usable_size %d" % (addr, got[0], usable))
            elif leaked == (got[1] == "reachable"):
                problems.append("%#x: %s, recorded leaked=%s" % (addr, got[1], leaked))
        ck.case("same: default snapshot has every recorded block, size and class", problems)
        for m in ("default", "fork", "no-fork"):
            r = hstest.run(["gdb", "-batch", "-ex", "thread apply all bt", FX, cores[m]],
                           timeout=300)
            ck.check("same: gdb shows %s snapshot's backtraces" % m,
                     r.rc == 0 and "in main (" in r.out and "heartbeat (" in r.out
                     and "sleeper (" in r.out, r.out[-1500:] + r.err[-500:])
        out = os.path.join(WORK, "same-json.core")
        r = snapshot(t.pid, out, "--format", "json")
        try:
            j = json.loads(r.out)
        except ValueError:
            j = {}
        ck.check("same: --format json says what was written",
                 j.get("output") == out and j.get("pid") == t.pid and
                 j.get("mode") == ("tracked" if TRACKS else "fork") and
                 (not TRACKS or j.get("first_pause_us", 0) > 0)
                 and j.get("threads") == 3 and j.get("pause_us", 0) > 0
                 and j.get("memory_bytes", 0) > 64 << 20, r.out + r.err)
        if os.path.exists(out):
            os.remove(out)
        info = hs_json("info", cores["default"], "--exe", FX)
        ck.check("same: info sees the process's pid and 3 threads",
                 info.get("process", {}).get("pid") == t.pid and
                 len(info.get("threads", [])) == 3, json.dumps(info)[:400])
        for c in cores.values():
            os.remove(c)
    finally:
        t.stop()


def best_pause(ck, t, mib, label, mode, extra, says, attempts):
    """The pauses seen by target t over `attempts` snapshots in a mode
    (the best is the figure: a loaded machine adds scheduling delays), and
    those heapsift printed; None when a snapshot failed."""
    out = os.path.join(WORK, "pause-%s.core" % label)
    inside, printed, raw = [], [], []
    for _ in range(attempts):
        t.ask("reset")
        r = snapshot(t.pid, out, *extra)
        if r.rc != 0 or says not in r.out:
            ck.check("pause %s: %s snapshot" % (label, mode), False,
                     r.describe() + r.out + r.err)
            return None
        gap, with_waits = t.gaps_us()
        inside.append(gap / 1000.0)
        raw.append(with_waits / 1000.0)
        printed.append(pause_of(r))
        os.remove(out)  # the pause is measured, the core not needed
    print("pause %s MiB: %s, seen by the target %s ms (%s with its waits for a CPU), "
          "printed %s ms" % (mib, mode, inside, raw, printed))
    return inside, printed


def machine_stall_ms(t, mib, rounds=2):
    """The largest gap the target sees, beyond its waits for a CPU, while
    another process (dd) writes what a tracked snapshot writes (the copy
    and the core: twice the heap) to the page cache, over `rounds` runs.
    On the 2-vCPU test machine, giving a process fresh memory (page cache
    or its own) stalls the target's threads 10-35 ms at a time, with no
    lock or stop of ours involved (docs/performance.md)."""
    ref = os.path.join(WORK, "pause-reference")
    worst = 0.0
    for _ in range(rounds):
        t.ask("reset")
        subprocess.run(["dd", "if=/dev/zero", "of=" + ref, "bs=1M",
                        "count=%d" % (2 * mib), "conv=fsync", "status=none"], check=True)
        worst = max(worst, t.gap_us() / 1000.0)
        os.remove(ref)
    return worst


def test_pause(ck, mib, label, fork_limit_ms=PAUSE_LIMIT_MS, attempts=8, machine_reference=False):
    """machine_reference: the excess over the printed pause is shown beside
    machine_stall_ms, not checked against PAUSE_UNSEEN_MS: a dd run
    samples the machine's stalls over less time than a snapshot takes (two
    runs at 2 GiB: dd 34.1 and 18.1 ms, tracked excess 26.1 and 29.2)."""
    t = Target(mib, "pause-%s" % label)
    figures = []
    try:
        if machine_reference:
            stall = machine_stall_ms(t, mib)
            print("pause %s MiB: the target saw %.1f ms at most while dd wrote %d MiB"
                  % (mib, stall, 2 * mib))
        modes = [("fork", ["--fork"], "copied from a fork", fork_limit_ms)]
        if TRACKS:
            modes.insert(0, ("tracked", [], "its writes tracked", PAUSE_LIMIT_MS))
        best = {}
        for mode, extra, says, limit in modes:
            got = best_pause(ck, t, mib, label, mode, extra, says, attempts)
            if got is None:
                return figures
            figures.append((mode,) + got)
            best[mode] = min(got[0])
            ck.check("pause %s MiB: %s pause seen by the target under %.0f ms"
                     % (mib, mode, limit), best[mode] < limit, "%s ms" % got[0])
            unseen = min((i - p for i, p in zip(*got) if p is not None),
                         default=float("inf"))
            print("pause %s MiB: %s pause seen by the target %.1f ms more than printed, "
                  "at least" % (mib, mode, unseen))
            if not machine_reference:
                ck.check("pause %s MiB: %s pause seen by the target under %.0f ms more than "
                         "the pause printed" % (mib, mode, PAUSE_UNSEEN_MS),
                         unseen < PAUSE_UNSEEN_MS, "seen %s ms, printed %s ms" % got)
            ck.case("pause %s: target well after %s snapshots" % (label, mode),
                    alive_and_well(t))
        out = os.path.join(WORK, "pause-%s.core" % label)
        t.ask("reset")
        r = snapshot(t.pid, out, "--no-fork")
        gap, with_waits = (g / 1000.0 for g in t.gaps_us())
        print("pause %s MiB: no-fork, seen by the target %.1f ms (%.1f with its waits "
              "for a CPU), printed %s ms" % (mib, gap, with_waits, pause_of(r)))
        figures.append(("no-fork", [gap], [pause_of(r)]))
        ck.check("pause %s: no-fork pause reported" % label,
                 r.rc == 0 and pause_of(r) is not None, r.err)
        for mode in best:
            ck.check("pause %s MiB: %s pause is under a fifth of no-fork's" % (mib, mode),
                     best[mode] < gap / 5, "%s %.1f ms, no-fork %.1f ms" % (mode, best[mode], gap))
        ck.case("pause %s: target well after no-fork snapshot" % label, alive_and_well(t))
        if os.path.exists(out):
            os.remove(out)
        if os.environ.get("HS_SNAPSHOT_GCORE_PAUSE"):
            t.ask("reset")
            g = hstest.gcore(t.pid, os.path.join(WORK, "pause-gcore"))
            gap = t.gap_us() / 1000.0
            print("pause %s MiB: gcore, seen by the target %.1f ms" % (mib, gap))
            os.remove(g)
    finally:
        t.stop()
    return figures


def wait_for_clone(parent_pid, timeout=20):
    """The pid of the clone (a child of parent_pid named fx_snapshot)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for kid in children(parent_pid):
            try:
                with open("/proc/%s/comm" % kid) as f:
                    if f.read().strip() == "fx_snapshot":
                        return int(kid)
            except OSError:
                pass
        time.sleep(0.02)
    return None


def test_killed(ck):
    t = Target(16, "killed")
    try:
        fds = fds_of(t.pid)
        for mode in ("tracked", "fork", "no-fork") if TRACKS else ("fork", "no-fork"):
            out = os.path.join(WORK, "killed-%s.core" % mode)
            e = dict(os.environ, HEAPSIFT_TEST_SNAPSHOT_SLEEP_MS="5000")
            argv = [HEAPSIFT, "snapshot", str(t.pid), "-o", out]
            if mode != "tracked":
                argv.append("--" + mode)
            hs = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
            clone = None
            if mode == "tracked":
                # heapsift sleeps with the target running, its writes
                # tracked (registered with heapsift's userfaultfd)
                time.sleep(0.5)
                ck.check("killed: tracked mode lets the target run while it copies",
                         not hstest.is_stopped(t.pid) and hs.poll() is None,
                         hstest.proc_state(t.pid))
            elif mode == "fork":
                # the clone is a child of the target's parent: this script
                clone = wait_for_clone(os.getpid())
                ck.check("killed: the clone exists while heapsift dumps", clone is not None)
            else:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not hstest.is_stopped(t.pid):
                    time.sleep(0.01)
                ck.check("killed: no-fork stops the target", hstest.is_stopped(t.pid),
                         hstest.proc_state(t.pid))
            time.sleep(0.3)
            hs.kill()
            hs.communicate()
            time.sleep(0.2)
            ck.case("killed: target well after heapsift is SIGKILLed (%s)" % mode,
                    alive_and_well(t))
            ck.check("killed: the target's descriptors are as before (%s)" % mode,
                     fds_of(t.pid) == fds, "%s then %s" % (fds, fds_of(t.pid)))
            if clone:
                try:
                    pid, status = os.waitpid(clone, 0)
                    dead = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
                except ChildProcessError:
                    dead, status = True, None
                ck.check("killed: the clone died with heapsift (SIGKILL)", dead, status)
            ck.check("killed: nothing under the output's name (%s)" % mode,
                     not os.path.exists(out))
            # the core is unnamed (O_TMPFILE) until complete
            left = [f for f in os.listdir(WORK) if f.startswith(os.path.basename(out))]
            ck.check("killed: no temporary file left (%s)" % mode, not left, left)
        # a signal that heapsift may handle: it cleans up itself
        out = os.path.join(WORK, "interrupted.core")
        clones = []

        def term_once_cloned(hs):
            clones.append(wait_for_clone(os.getpid()))
            hs.send_signal(signal.SIGTERM)

        r = snapshot_during(t.pid, out, 1000, term_once_cloned, "--fork")
        clone = clones[0]
        ck.check("interrupted: heapsift dies of the SIGTERM", r.rc == -signal.SIGTERM, r.rc)
        ck.case("interrupted: target well", alive_and_well(t))
        left = [f for f in os.listdir(WORK) if f.startswith("interrupted.core")]
        ck.check("interrupted: no file left, not even a temporary one", not left, left)
        if clone:
            try:
                os.waitpid(clone, 0)
            except ChildProcessError:
                pass
        if TRACKS:
            # the same while the target runs with its writes tracked
            r = snapshot_during(t.pid, out, 1000,
                                lambda hs: (time.sleep(0.5), hs.send_signal(signal.SIGTERM)))
            ck.check("interrupted (tracked): heapsift dies of the SIGTERM",
                     r.rc == -signal.SIGTERM, r.rc)
            ck.case("interrupted (tracked): target well", alive_and_well(t))
            ck.check("interrupted (tracked): the target's descriptors are as before",
                     fds_of(t.pid) == fds, "%s then %s" % (fds, fds_of(t.pid)))
            left = [f for f in os.listdir(WORK) if f.startswith("interrupted.core")]
            ck.check("interrupted (tracked): no file left", not left, left)
    finally:
        t.stop()


def core_words(core, addrs):
    """The 8-byte words of an ELF core at each address (None where the
    core has no bytes for it)."""
    out = {}
    with open(core, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        phdrs = [struct.unpack("<IIQQQQQQ", f.read(phentsize)[:56]) for _ in range(phnum)]
        for a in addrs:
            out[a] = None
            for ptype, _, off, vaddr, _, filesz, _, _ in phdrs:
                if ptype == 1 and vaddr <= a and a + 8 <= vaddr + filesz:
                    f.seek(off + a - vaddr)
                    out[a], = struct.unpack("<Q", f.read(8))
    return out


def test_late_changes(ck):
    """Pages written and pages zapped after the copy of them, while the
    target runs (tracked mode): the core has them as they are at the
    stop."""
    if not TRACKS:
        ck.skip("late changes", "this kernel cannot track writes (Linux 6.7+)")
        return
    t = Target(8, "late")
    try:
        base = int(t.ask("poke").split()[1], 16)
        out = os.path.join(WORK, "late.core")

        def change_after_copy(hs):
            time.sleep(0.7)  # the copy is made; heapsift sleeps, the target runs
            copied = hs.poll() is None and not hstest.is_stopped(t.pid)
            ck.check("late: the target was copied and runs", copied, hstest.proc_state(t.pid))
            t.ask("poke2")

        r = snapshot_during(t.pid, out, 1500, change_after_copy, "--format", "json")
        ck.check("late: snapshot succeeds", r.rc == 0, r.err)
        if r.rc == 0:
            w = core_words(out, [base, base + 4096, base + 8192])
            ck.check("late: a page zapped after its copy reads 0", w[base] == 0, w)
            ck.check("late: a page written after its copy has the new word",
                     w[base + 4096] == 0x4444, w)
            ck.check("late: a page left alone is as copied", w[base + 8192] == 0x3333, w)
            os.remove(out)
        ck.case("late: target well after", alive_and_well(t))
    finally:
        t.stop()


def test_churn(ck):
    """A thread rewrites 4096 pages without end (and zaps the first each
    time) while the memory is copied: the core holds one moment.  Each
    snapshot in tracked mode must find the pages written and the page
    zapped since they were copied."""
    t = Target(8, "churn")
    try:
        w = t.ask("churn").split()
        base, pages = int(w[1], 16), int(w[2])
        for mode, extra in (("tracked", []), ("fork", ["--fork"])) if TRACKS else \
                (("fork", ["--fork"]),):
            for attempt in range(3):
                out = os.path.join(WORK, "churn-%s.core" % mode)
                r = snapshot(t.pid, out, *extra, "--format", "json")
                try:
                    j = json.loads(r.out)
                except ValueError:
                    j = {}
                ck.check("churn: %s snapshot %d" % (mode, attempt), r.rc == 0 and
                         j.get("mode") == mode, r.describe() + r.out + r.err)
                if r.rc:
                    return
                words = core_words(out, [base + i * 4096 for i in range(pages)])
                v = [words[base + i * 4096] for i in range(pages)]
                os.remove(out)
                # one moment (fx_snapshot.c): with G the last page's word,
                # page 0 holds 0 and pages [1, K) G, [K, PAGES - 1) G - 1;
                # or every page holds G
                g = v[-1] or 0
                k = 1
                while k < pages - 1 and v[k] == g:
                    k += 1
                good = None not in v and g >= 1 and \
                    all(x == g - 1 for x in v[k:pages - 1]) and \
                    (v[0] == 0 or (v[0] == g and k == pages - 1))
                ck.check("churn: %s snapshot %d holds one moment of the sweep" % (mode, attempt),
                         good, "G=%d, first words %s, changes at %s" % (
                             g, v[:4], [i for i in range(1, pages) if v[i] != v[i - 1]][:8]))
                if mode == "tracked" and attempt == 0:
                    print("churn: tracked, %s bytes copied again, %s read at the stop, "
                          "pause %s us" % (j.get("recopied_bytes"), j.get("stopped_read_bytes"),
                                           j.get("pause_us")))
        ck.case("churn: target well after", alive_and_well(t))
    finally:
        t.stop()


class Tracer:
    """A helper process that PTRACE_SEIZEs pid and waits."""

    def __init__(self, pid):
        code = ("import ctypes,sys,time\n"
                "libc=ctypes.CDLL(None,use_errno=True)\n"
                "r=libc.ptrace(0x4206,%d,0,0)\n"
                "print('seized' if r==0 else 'failed %%d'%%ctypes.get_errno(),flush=True)\n"
                "time.sleep(60)\n" % pid)
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                     text=True)
        self.ok = self.proc.stdout.readline().strip() == "seized"

    def stop(self):
        hstest.kill_process(self.proc)


def test_refusals(ck):
    out = os.path.join(WORK, "refused.core")
    # a pid that does not exist
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    gone = next(p for p in range(pid_max - 1, 1, -1) if not os.path.exists("/proc/%d" % p))
    one_line_refusal(ck, "no process", snapshot(gone, out), out, ["no process %d" % gone])
    r = hstest.run_heapsift(["snapshot", "12x", "-o", out])
    ck.check("not a pid: usage error", r.rc == 2, r.err)

    t = Target(8, "refused")
    try:
        tr = Tracer(t.pid)
        if tr.ok:
            one_line_refusal(ck, "already traced", snapshot(t.pid, out), out,
                             ["already traced", str(tr.proc.pid)])
        else:
            ck.check("already traced: the helper could seize the target", False)
        tr.stop()
        ck.case("already traced: target well after", alive_and_well(t))

        scope = os.path.join(WORK, "ptrace_scope")
        with open(scope, "w") as f:
            f.write("3\n")
        one_line_refusal(ck, "ptrace_scope 3", snapshot(
            t.pid, out, env={"HEAPSIFT_TEST_PTRACE_SCOPE_FILE": scope}), out,
            ["ptrace_scope = 3"])
        with open(scope, "w") as f:
            f.write("2\n")
        r = snapshot(t.pid, out, env={"HEAPSIFT_TEST_PTRACE_SCOPE_FILE": scope})
        if os.geteuid() == 0:
            ck.check("ptrace_scope 2: root may", r.rc == 0, r.err)
        else:
            one_line_refusal(ck, "ptrace_scope 2", r, out, ["ptrace_scope = 2"])
        if os.path.exists(out):
            os.remove(out)

        # another user
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or not setpriv:
            ck.skip("another user", "needs root and setpriv to run heapsift as nobody")
        else:
            os.chmod(WORK, 0o777)
            r = hstest.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                            HEAPSIFT, "snapshot", str(t.pid), "-o", out], timeout=120)
            one_line_refusal(ck, "another user", r, out, ["belongs to uid 0"])
        ck.case("refusals: target well after", alive_and_well(t))

        # exits during the snapshot (killed while heapsift holds it)
        r = snapshot_during(t.pid, out, 1500, kill_once_stopped(t), "--no-fork")
        one_line_refusal(ck, "exits during the snapshot", r, out,
                         ["exited during the snapshot"])
    finally:
        t.stop()
    # killed once every thread is stopped, before heapsift reads their
    # registers (a stopped thread's registers then cannot be read: ESRCH)
    t = Target(8, "refused-regs")
    try:
        r = snapshot_during(t.pid, out, 1500, kill_once_stopped(t), "--no-fork",
                            sleep_var="HEAPSIFT_TEST_REGS_SLEEP_MS")
        one_line_refusal(ck, "exits before its registers are read", r, out,
                         ["exited during the snapshot"])
    finally:
        t.stop()
    # killed once its threads are asked to stop, before heapsift has
    # waited for their stops: the leader's exit is not reported while
    # the other (traced) threads are unreaped zombies, and a wait for it
    # alone hung
    for mode in ("--no-fork", "--fork", None):
        t = Target(8, "refused-stopping")
        try:
            r = snapshot_during(t.pid, out, 1000, kill_once_stopped(t),
                                *([mode] if mode else []),
                                sleep_var="HEAPSIFT_TEST_STOP_SLEEP_MS")
            one_line_refusal(ck, "exits while its threads are stopped (%s)"
                             % (mode or "default mode"), r, out,
                             ["exited during the snapshot"])
        finally:
            t.stop()
    if TRACKS:
        # runs another program (execve) while its memory is copied
        t = Target(8, "refused-exec")
        try:
            again = []

            def exec_after_copy(hs):
                time.sleep(0.5)
                t.proc.stdin.write("exec\n")
                t.proc.stdin.flush()
                again.extend(t.proc.stdout.readline().split())

            r = snapshot_during(t.pid, out, 1500, exec_after_copy)
            ck.check("execve during the tracked copy: the program ran again",
                     again == ["ready", str(t.pid)], again)
            one_line_refusal(ck, "execve during the tracked copy", r, out,
                             ["ran another program (execve) during the snapshot"])
            ck.case("execve during the tracked copy: target well after", alive_and_well(t))
        finally:
            t.stop()
        # exits while its memory is copied, its writes tracked
        t = Target(8, "refused-tracked")
        try:
            r = snapshot_during(t.pid, out, 1500,
                                lambda hs: (time.sleep(0.5), os.kill(t.pid, signal.SIGKILL)))
            one_line_refusal(ck, "exits during the tracked copy", r, out,
                             ["exited during the snapshot"])
        finally:
            t.stop()


def test_pid_namespace_init(ck):
    """A process that is the init of its PID namespace (a container's
    first process) cannot clone(CLONE_PARENT): tracked mode needs no
    clone; --fork falls back to no-fork and says why."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        ck.skip("pid namespace init", "needs root and unshare")
        return
    rec = os.path.join(WORK, "nsinit.rec")
    p = subprocess.Popen([unshare, "--pid", "--fork", "--kill-child", FX, "8", rec],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        line = p.stdout.readline().split()
        ck.check("pid namespace init: the fixture is pid 1 of its namespace",
                 line == ["ready", "1"], line)
        with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
            pid = int(f.read().split()[0])
        out = os.path.join(WORK, "nsinit.core")
        for mode, extra in (("default", []), ("--fork", ["--fork"])):
            r = snapshot(pid, out, *extra)
            ck.check("pid namespace init: %s snapshot succeeds" % mode, r.rc == 0,
                     r.describe() + r.err)
            if mode == "default" and TRACKS:
                ck.check("pid namespace init: tracked mode used", "its writes tracked" in r.out,
                         r.out + r.err)
            if mode == "--fork":
                warn = [ln for ln in r.err.splitlines() if "warning" in ln]
                ck.check("pid namespace init: --fork falls back to no-fork, saying why",
                         "copied with the threads stopped" in r.out and len(warn) == 1 and
                         "clone in the target failed" in warn[0], r.out + r.err)
            if r.rc == 0:
                s = leak_summary(out)
                ck.check("pid namespace init: %s core has the fixture's leaks" % mode,
                         s["leaked"]["count"] > 0, s)
                os.remove(out)
    finally:
        hstest.kill_process(p)


def test_seccomp(ck):
    """A target under a seccomp filter: heapsift (as root) runs the filter
    on the calls it would make the target run, and makes only those the
    filter allows; without root it copies with the threads stopped."""
    if os.geteuid() != 0:
        ck.skip("seccomp", "reading a seccomp filter needs root")
        return
    out = os.path.join(WORK, "seccomp.core")
    # the filter, the mode it leaves, and the field and words of the why
    for how, want, field, why in (
            ("deny-ptrace", "tracked" if TRACKS else "fork", None, None),
            ("deny-uffd", "fork", "untracked" if TRACKS else None,
             "does not let it call userfaultfd"),
            ("kill-clone", "no-fork", "fallback", "does not let it call clone")):
        t = Target(8, "seccomp-" + how, how)
        try:
            r = snapshot(t.pid, out, "--format", "json")
            try:
                j = json.loads(r.out)
            except ValueError:
                j = {}
            ck.check("seccomp %s: snapshot succeeds" % how, r.rc == 0, r.describe() + r.err)
            ck.check("seccomp %s: %s mode%s" % (how, want, ", saying why" if field else ""),
                     j.get("mode") == want and (not field or why in j.get(field, "")),
                     r.out + r.err)
            ck.case("seccomp %s: target well after (alive: heapsift made no call the filter "
                    "punishes)" % how, alive_and_well(t))
            if r.rc == 0:
                ck.check("seccomp %s: the core has the fixture's leaks" % how,
                         leak_summary(out)["leaked"]["count"] > 0)
                os.remove(out)
        finally:
            t.stop()


def test_pid_and_files(ck):
    t = Target(8, "pid")
    try:
        tmp = os.path.join(WORK, "tmpdir")
        os.makedirs(tmp, exist_ok=True)
        r = hstest.run([HEAPSIFT, "leaks", "--pid", str(t.pid), "--format", "json"],
                       env=dict(os.environ, TMPDIR=tmp), timeout=600)
        ok = r.rc == 0
        try:
            summary = json.loads(r.out)["summary"] if ok else None
        except ValueError:
            summary, ok = None, False
        ck.check("--pid: leaks of a live process", ok and summary["leaked"]["count"] > 0,
                 r.err)
        ck.check("--pid: the temporary core is removed", os.listdir(tmp) == [],
                 os.listdir(tmp))
        ck.case("--pid: target well after", alive_and_well(t))
        # a summary of the live process: what a trend over a day is taken of
        sj = os.path.join(WORK, "pid.summary.json")
        r = hstest.run([HEAPSIFT, "summary", "--pid", str(t.pid), "-o", sj],
                       env=dict(os.environ, TMPDIR=tmp), timeout=600)
        try:
            with open(sj) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = {}
        ck.check("--pid: summary of a live process (its pid, its leaks)",
                 r.rc == 0 and doc.get("format") == "heapsift-summary" and
                 (doc.get("process") or {}).get("pid") == t.pid and os.listdir(tmp) == [],
                 r.describe() + " " + str({k: doc.get(k) for k in ("format", "process")}))
        ck.check("--pid: summary says it summarized the process, not the removed core",
                 "a summary of process %d for heapdiff" % t.pid in r.out and tmp not in r.out,
                 r.out)
        r = hstest.run([HEAPSIFT, "info", "--pid", "12x"], timeout=60)
        ck.check("--pid: a bad pid is a usage error", r.rc == 2, r.err)

        out = os.path.join(WORK, "files.core")
        r = snapshot(t.pid, out)
        j = hs_json("files", out, "--exe", FX)
        fds = {d["fd"]: d["path"] for d in j.get("descriptors") or []}
        ck.check("files: the descriptor table is in the snapshot",
                 0 in fds and 1 in fds and fds[0].startswith("pipe:"), fds)
        r = hstest.run_heapsift(["files", out, "--exe", FX])
        ck.check("files: text lists the descriptors", "OPEN DESCRIPTORS: " in r.out and "pipe:[" in r.out,
                 r.out[-800:])
        os.remove(out)
    finally:
        t.stop()


def main():
    ck = Checker()
    if not os.access(FX, os.X_OK):
        print("fx_snapshot not built")
        return 1
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # ptrace must work here at all
    t = Target(1, "probe")
    tr = Tracer(t.pid)
    usable = tr.ok
    tr.stop()
    t.stop()
    if not usable:
        ck.skip("snapshot", "ptrace is not allowed in this environment")
        return ck.finish()
    test_same_as_gcore(ck)
    mib = int(os.environ.get("HS_SNAPSHOT_MIB", "256"))
    test_pause(ck, mib, "default")
    if os.environ.get("HS_SNAPSHOT_BIG") == "1":
        # the clone copies the page tables: about 45 ms per GiB resident
        # on the 2-core test machine (docs/performance.md)
        # at 2 GiB the target sees 20-100 ms more than printed in tracked
        # mode: the machine's stalls while 4 GiB of fresh page cache is
        # written, which dd writing as much shows too (machine_stall_ms);
        # shown, not checked
        test_pause(ck, 2048, "big", fork_limit_ms=250, attempts=3, machine_reference=True)
    test_late_changes(ck)
    test_churn(ck)
    test_killed(ck)
    test_refusals(ck)
    test_pid_namespace_init(ck)
    test_seccomp(ck)
    test_pid_and_files(ck)
    shutil.rmtree(WORK, ignore_errors=True)
    return ck.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HsError as e:
        print("ERROR: %s" % e)
        sys.exit(1)
