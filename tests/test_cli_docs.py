#!/usr/bin/env python3
"""The man page, the bash completion and --help say what the parser does.

heapsift prints all three from the table its option parser is built from
(src/main.c, opt_docs and commands).  Checks:
  - the commands of `--help`, of the man page (.SS) and of the completion
    are the same list;
  - for each command, the options `help COMMAND` lists, those of the man
    page's section and the completion's are the same set;
  - the parser agrees: each of a command's options is accepted by it (no
    "unknown option", no "not an option of"), and each option of another
    command is refused with "not an option of";
  - the files the build generated (build/heapsift.1, build/heapsift.bash,
    installed by `cmake --install`) are what heapsift prints now.

Standard library only.  Prints "N passed, M failed" last.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402

HS = hstest.HEAPSIFT
R = hstest.Checker()


def hs(*args):
    return hstest.run([HS] + list(args), timeout=60)


def opts_in(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[no])\b", text))


def main():
    help_all = hs("--help").out
    man = hs("help", "--man").out
    comp = hs("help", "--completion").out
    cmds_help = re.findall(r"^  ([a-z]+)\s{2,}", help_all.split("options of every command")[0],
                           re.M)
    cmds_man = re.findall(r"^\.SS (\S+)$", man, re.M)
    m = re.search(r'compgen -W "([^"]*) help --help --version"', comp)
    cmds_comp = m.group(1).split() if m else []
    R.case("the same commands in --help, the man page and the completion (%d)" % len(cmds_help),
           [] if cmds_help and cmds_help == cmds_man == cmds_comp else
           ["--help %s, man %s, completion %s" % (cmds_help, cmds_man, cmds_comp)])

    common = set(re.search(r'local common="([^"]*)"', comp).group(1).split())
    own = {c: set(o.split()) for c, o in re.findall(r"^\t([a-z]+)\) own=\"([^\"]*)\"", comp, re.M)}
    man_sections = dict(re.findall(r"^\.SS (\S+)\n(.*?)(?=^\.SS |^\.SH )", man, re.M | re.S))
    man_common = man.split(".SH OPTIONS")[1] if ".SH OPTIONS" in man else ""
    all_own = set().union(*own.values()) if own else set()
    for c in cmds_help:
        probs = []
        h = hs("help", c).out
        parts = h.split("options of every command:")
        mine_help = opts_in(parts[0].split("options of %s:" % c)[1]) if "options of %s:" % c in parts[0] else set()
        mine_man = {o.replace("\\-", "-") for o in
                    re.findall(r"^\.B (\\-\\-[a-z\\-]+|\\-[no])", man_sections.get(c, ""), re.M)}
        if not (mine_help == own.get(c, set()) == mine_man):
            probs.append("help %s, completion %s, man %s" % (sorted(mine_help),
                                                             sorted(own.get(c, set())),
                                                             sorted(mine_man)))
        every_help = opts_in(parts[1].split("example:")[0]) if len(parts) > 1 else set()
        if every_help != common:
            probs.append("every-command options: help %s, completion %s"
                         % (sorted(every_help), sorted(common)))
        # the parser
        for o in sorted(own.get(c, set())):
            r = hs(c, o, "x", "/nonexistent.core")
            if "unknown option" in r.err or "not an option of" in r.err:
                probs.append("%s %s: refused: %s" % (c, o, r.err.strip()[:160]))
        for o in sorted(all_own - own.get(c, set())):
            r = hs(c, o, "x", "/nonexistent.core")
            if "not an option of %s" % c not in r.err:
                probs.append("%s %s: not refused as another command's option: %s"
                             % (c, o, r.err.strip()[:160]))
        R.case("%s: its options, the same in help, man page, completion and parser" % c, probs)
    man_common_opts = {o.replace("\\-", "-") for o in
                       re.findall(r"^\.B (\\-\\-[a-z\\-]+)", man_common, re.M)} - {"--version"}
    R.case("the man page's options of every command are the completion's",
           [] if man_common_opts == common else
           ["man %s, completion %s" % (sorted(man_common_opts), sorted(common))])

    build = os.path.dirname(HS)
    for name, text in (("heapsift.1", man), ("heapsift.bash", comp)):
        path = os.path.join(build, name)
        if not os.path.exists(path):
            R.case("the build's %s" % name, ["%s was not generated" % path])
            continue
        R.case("the build's %s is what heapsift prints" % name,
               [] if open(path).read() == text else ["%s differs" % path])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
