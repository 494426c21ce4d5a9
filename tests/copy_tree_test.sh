#!/bin/sh
# tests/copy_tree_test.sh COPY_TREE: a tracked file deleted in the work tree
# (not yet committed) does not stop the copy the packaging tests build from;
# the other files, tracked and new, are copied, ignored ones are not.
copy=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
t=$tmp/tree
mkdir -p "$t/sub" && cd "$t" || fail "mkdir"
git init -q . && echo kept >sub/kept && echo gone >gone && echo '/ignored' >.gitignore &&
  git add -A && git -c user.name=t -c user.email=t@t commit -qm t || fail "git"
rm gone && echo new >new && echo ig >ignored
sh "$copy" "$t" "$tmp/out" || fail "copy_tree.sh exited $? with a tracked file deleted"
[ "$(cat "$tmp/out/sub/kept")" = kept ] && [ -f "$tmp/out/new" ] || fail "missing files: $(find "$tmp/out")"
[ ! -e "$tmp/out/gone" ] && [ ! -e "$tmp/out/ignored" ] || fail "deleted or ignored file copied: $(find "$tmp/out")"
echo "copied without the deleted file"
