#!/bin/sh
# tests/copy_tree.sh SRC DEST: the tree the packaging tests build from
# (tests/wheel, tests/deb; both builds write into the tree they build): the
# tracked files and the new ones git does not ignore, never a build tree. A
# tracked file deleted in the work tree is left out, as a build of the work
# tree would: cp of every listed name stopped the wheel test there.
src=$1 dest=$2
mkdir -p "$dest" || exit 1
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
    tar -xf - -C "$dest"
else
  (cd "$src" && tar --exclude=./.git --exclude='./build*' --exclude='./obj-*' -cf - .) | tar -xf - -C "$dest"
fi
