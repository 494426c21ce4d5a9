#!/bin/sh
# tests/deb/builddeps.sh SRC: every package dpkg-buildpackage checks before it
# builds debian/ is one scripts/deps installs: debian/control's Build-Depends
# and build-essential, which dpkg adds to them on Debian (dpkg-checkbuilddeps'
# built-in build dependency). scripts/deps installs without Recommends, so
# build-essential, only recommended by dpkg-dev, was missing on a clean Debian
# 12 and the package's build stopped there (issue 31).
src=$1
fail() { echo "FAIL: $*"; exit 1; }
# The names of Build-Depends (continuation lines included), without versions,
# architectures or alternatives beyond the first; debhelper-compat is debhelper's.
need=$(sed -n '/^Build-Depends:/,/^[^ ]/{s/^Build-Depends://;/^[^ ]/d;p}' "$src/debian/control" |
  tr ',' '\n' | sed 's/|.*//;s/[[(].*//;s/:.*//;s/ //g;s/^debhelper-compat$/debhelper/' | grep .)
[ -n "$need" ] || fail "no Build-Depends in $src/debian/control"
# scripts/deps' list, as bash reads it (comments inside the array and all).
have=$(sed -n '/^pkgs=(/,/^missing=/p' "$src/scripts/deps" | sed '$d' |
  bash -c 'eval "$(cat)"; printf "%s\n" "${pkgs[@]}"') || fail "cannot read scripts/deps' pkgs"
[ -n "$have" ] || fail "scripts/deps lists no packages"
for p in $need build-essential; do
  echo "$have" | grep -qx "$p" || fail "dpkg-buildpackage needs $p, which scripts/deps does not install"
done
echo "scripts/deps installs the build dependencies:" $need build-essential
