#!/bin/sh
# Prints carma's version: the first line of VERSION, plus "+g<short hash>" and "-dirty"
# (tracked files changed) when the source folder is a git checkout of its own and git is
# there; VERSION alone otherwise (a source tarball, no git). Usage: version.sh [SRCDIR]
set -u
src=${1:-.}
v=$(head -n 1 "$src/VERSION" 2>/dev/null) || v=
case $v in
'' | *[!0-9A-Za-z.~-]*)
    echo "$src/VERSION: a version of digits, letters, '.', '-' and '~' expected on its first line" >&2
    exit 1
    ;;
esac
if command -v git >/dev/null 2>&1 &&
    top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) &&
    [ "$(cd "$top" && pwd -P)" = "$(cd "$src" && pwd -P)" ] &&
    h=$(git -C "$src" rev-parse --short=7 HEAD 2>/dev/null); then
    v="$v+g$h"
    # compares contents (a file touched but unchanged is not dirty), writing nothing to
    # .git (no optional locks): make install as root leaves the checkout as it was
    git --no-optional-locks -C "$src" diff --quiet HEAD -- 2>/dev/null || v="$v-dirty"
fi
printf '%s\n' "$v"
