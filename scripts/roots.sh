#!/bin/sh
# Debian roots for the glibc tests on other releases (tests/test_roots.py):
# a minbase debootstrap of each suite with gcc, libc6-dev and the libc6-dbg
# of exactly the root's libc6, under $HS_ROOTS_DIR/SUITE.  A root that is
# already there (marked complete) is reused; nothing is downloaded then.
#
#   scripts/roots.sh [SUITE...]      default: bullseye trixie
#
# Environment:
#   HS_ROOTS_DIR     where the roots live (default /var/cache/heapsift-roots)
#   HS_ROOTS_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#
# Needs root and, on first use, the network (about 110 MB downloaded, two
# minutes and about 400 MB on disk per root).  Prints each root's path and
# its libc6 version.
set -eu

DIR=${HS_ROOTS_DIR:-/var/cache/heapsift-roots}
MIRROR=${HS_ROOTS_MIRROR:-http://deb.debian.org/debian}
PACKAGES=gcc,libc6-dev,libc6-dbg
[ $# -gt 0 ] || set -- bullseye trixie

say() { echo "roots.sh: $*"; }

if [ "$(id -u)" != 0 ]; then
    say "needs root (debootstrap and chroot)" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

mkdir -p "$DIR"
for suite in "$@"; do
    root=$DIR/$suite
    mark=$root/.heapsift-root
    if [ -f "$mark" ]; then
        say "$suite: reusing $root ($(cat "$mark"))"
        continue
    fi
    # A root left half made by an interrupted run is made again from scratch.
    tmp=$DIR/$suite.partial
    rm -rf "$tmp"
    say "$suite: debootstrap --variant=minbase --include=$PACKAGES into $tmp from $MIRROR"
    start=$(date +%s)
    debootstrap --variant=minbase --include=$PACKAGES "$suite" "$tmp" "$MIRROR" \
        >"$DIR/$suite.log" 2>&1 || {
        say "$suite: debootstrap failed; the last lines of $DIR/$suite.log:" >&2
        tail -n 20 "$DIR/$suite.log" >&2
        exit 1
    }
    # libc6-dbg must be the build of exactly this libc6 (its files are named
    # by build-id): both come from the same suite, check it all the same.
    v6=$(chroot "$tmp" dpkg-query -W -f '${Version}' libc6)
    vdbg=$(chroot "$tmp" dpkg-query -W -f '${Version}' libc6-dbg)
    if [ "$v6" != "$vdbg" ]; then
        say "$suite: libc6 $v6 but libc6-dbg $vdbg" >&2
        exit 1
    fi
    chroot "$tmp" apt-get clean
    rm -rf "$root"
    mv "$tmp" "$root"
    echo "libc6 $v6" >"$mark"
    say "$suite: made $root in $(( $(date +%s) - start )) s: libc6 $v6, $(du -sh "$root" | cut -f1)"
done
