#!/bin/sh
# tests/deb/deb.sh SRC VERSION: builds the Debian package from a copy of the
# source tree (dpkg-buildpackage writes into the parent of the tree it builds,
# so never in SRC itself), checks it with lintian (an error, or a warning that
# debian/dspreload.lintian-overrides does not justify, fails), installs it with
# apt-get, checks what it installed where and that it works by name
# (LD_PRELOAD=libdspreload.so, the dspreload command, pkg-config, man), then
# purges it and checks that nothing it installed is left. Needs root (or
# passwordless sudo) to install; CI runs as root.
src=$1
version=$2
skip() { echo "SKIP: $1"; exit 77; }
fail() { echo "FAIL: $1"; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
  sudo=
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo="sudo -n"
else
  skip "installing the package needs root or passwordless sudo"
fi
# What it needs, as Debian packages: scripts/deps installs the missing ones;
# a package that cannot be installed skips the test, named.
missing() {
  for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian meson:meson ninja:ninja-build \
      cc:gcc pkg-config:pkg-config apt-get:apt; do
    command -v "${tool%%:*}" >/dev/null || printf ' %s' "${tool#*:}"
  done
}
if [ -n "$(missing)" ]; then
  bash "$src/scripts/deps" >&2 || true
  m=$(missing)
  [ -z "$m" ] || skip "Debian packages missing and not installable:$m (scripts/deps)"
fi
# Someone's own install is theirs: this test would replace it, then purge it.
status=$(dpkg-query -W -f='${db:Status-Status}' dspreload 2>/dev/null)
case $status in
  ''|not-installed) ;;
  *) fail "the dspreload package is already on this machine ($status); this test installs and purges it, so remove it first (apt-get purge dspreload)" ;;
esac

tmp=$(mktemp -d) || fail "mktemp failed"
installed=
cleanup() {
  if [ -n "$installed" ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 dspreload >/dev/null 2>&1
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# The tracked files and the uncommitted ones, never a build tree.
sh "$(dirname "$0")/../copy_tree.sh" "$src" "$tmp/src" || fail "copying the tree failed"
# dpkg-buildpackage stops at an unmet build dependency: debian/control's and
# build-essential, which dpkg adds on Debian (scripts/deps installs both;
# tests/deb/builddeps.sh keeps its list in step).
if ! unmet=$(cd "$tmp/src" && dpkg-checkbuilddeps 2>&1); then
  bash "$src/scripts/deps" >&2 || true
  unmet=$(cd "$tmp/src" && dpkg-checkbuilddeps 2>&1) ||
    skip "build dependencies missing and not installable: $unmet (scripts/deps)"
fi
start=$(date +%s)
(cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1 ||
  { tail -40 "$tmp/build.log"; fail "dpkg-buildpackage failed (last lines above)"; }
echo "built in $(($(date +%s) - start)) s: $(cd "$tmp" && ls ./*.deb | tr '\n' ' ')"
deb=$(ls "$tmp"/dspreload_"$version"_*.deb 2>/dev/null)
[ -f "$deb" ] || fail "no dspreload_${version}_*.deb: $(ls "$tmp")"

# Errors and warnings fail; informational tags (hardening-no-bindnow...) do not.
lintian --fail-on error,warning --tag-display-limit 0 "$tmp"/dspreload_"$version"_*.changes >"$tmp/lintian.log" 2>&1
lint=$?
grep -v 'running with root privileges' "$tmp/lintian.log"
[ $lint -eq 0 ] || fail "lintian found errors or unjustified warnings (above); fix them or justify them in debian/dspreload.lintian-overrides"

installed=1
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 "$deb" >"$tmp/apt.log" 2>&1 ||
  { cat "$tmp/apt.log"; fail "apt-get install $deb failed"; }

triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || cc -print-multiarch)
libdir=/usr/lib/$triplet
dpkg -L dspreload >"$tmp/files" || fail "dpkg -L dspreload failed after the install"
for f in $libdir/libdspreload.so /usr/bin/dspreload /usr/bin/dspreload-demo /usr/include/dspreload.h \
    $libdir/pkgconfig/dspreload.pc /usr/share/man/man1/dspreload.1.gz; do
  grep -qx "$f" "$tmp/files" || fail "dpkg -L dspreload does not list $f: $(cat "$tmp/files")"
  [ -f "$f" ] || case $f in
    /usr/share/man/*) echo "note: $f is listed but not installed (dpkg excludes man pages here)" ;;
    *) fail "$f is listed but not installed" ;;
  esac
done
# The package's trigger refreshed ld.so's cache (debian/dspreload.triggers).
ldconfig -p | grep -q "libdspreload\.so .*=> .*/$triplet/libdspreload\.so" ||
  fail "ld.so's cache has no libdspreload.so after the install: $(ldconfig -p | grep dspreload)"

cd "$tmp" || fail "cd $tmp"
# By name, as the docs say: ld.so finds the packaged file, whose constructor runs.
maps=$(LD_PRELOAD=libdspreload.so grep libdspreload /proc/self/maps) || fail "LD_PRELOAD=libdspreload.so did not load it"
echo "$maps" | grep -q " $libdir/libdspreload.so$\| /lib/$triplet/libdspreload.so$" ||
  fail "LD_PRELOAD=libdspreload.so loaded another file: $maps"
out=$(DSP_LOG=info LD_PRELOAD=libdspreload.so /bin/true 2>&1) || fail "/bin/true failed under LD_PRELOAD=libdspreload.so: $out"
echo "$out" | grep -q "^dspreload\[[0-9]*\]: info: dspreload $version ready" ||
  fail "no ready line from LD_PRELOAD=libdspreload.so DSP_LOG=info /bin/true: $out"

out=$(/usr/bin/dspreload --version 2>&1) || fail "dspreload --version failed: $out"
echo "$out" | grep -q "^dspreload $version$" || fail "dspreload --version printed '$out', not $version"
# The launcher finds the library (../lib/<triplet> from /usr/bin) and the demo
# workload (beside itself) from wherever it is run; doctor checks that library.
out=$(/usr/bin/dspreload doctor 2>&1)
echo "$out" | grep -F "$libdir/libdspreload.so (dspreload $version)" | grep -q '^OK  *library ' ||
  { echo "$out"; fail "dspreload doctor: no OK library line for $libdir/libdspreload.so"; }
out=$(/usr/bin/dspreload demo 2>&1) || { echo "$out"; fail "dspreload demo exited $?"; }
echo "$out" | grep -q "^What dspreload did: " || { echo "$out"; fail "dspreload demo printed no 'What dspreload did' summary"; }

# The API through pkg-config: the package's .pc file (PKG_CONFIG_LIBDIR keeps a
# /usr/local install out), linked by name, found at run time by ld.so's cache.
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig
flags=$(pkg-config --cflags --libs dspreload) || fail "pkg-config --cflags --libs dspreload failed"
[ "$(pkg-config --modversion dspreload)" = "$version" ] || fail "pkg-config --modversion dspreload: $(pkg-config --modversion dspreload)"
cat >api.c <<'C'
#include <dspreload.h>
#include <stdio.h>
int main(void) {
    void *p = dsp_alloc(1 << 20);
    if (!p) { perror("dsp_alloc"); return 1; }
    if (dsp_is_pinned(p, 1 << 20) != 1) { fputs("dsp_alloc's block is not pinned\n", stderr); return 1; }
    if (dsp_free(p) != 0) { perror("dsp_free"); return 1; }
    puts("api ok");
    return 0;
}
C
# shellcheck disable=SC2086 # the flags are words
cc -Wall -Wextra -Werror -o api api.c $flags || fail "cc api.c $flags failed"
out=$(DSP_STATS=1 ./api 2>&1) || fail "the API program failed: $out"
echo "$out" | grep -q "^api ok$" || fail "the API program printed: $out"
echo "$out" | grep -q "^dspreload\[[0-9]*\]: stats: pinned 1 MiB now" || fail "no stats line from the API program with DSP_STATS=1: $out"

if command -v man >/dev/null; then
  man -aw dspreload 2>/dev/null | grep -qx /usr/share/man/man1/dspreload.1.gz ||
    [ ! -f /usr/share/man/man1/dspreload.1.gz ] || fail "man -aw dspreload does not find the page: $(man -aw dspreload 2>&1)"
fi

$sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 dspreload >"$tmp/apt.log" 2>&1 ||
  { cat "$tmp/apt.log"; fail "apt-get purge dspreload failed"; }
installed=
dpkg-query -W dspreload >/dev/null 2>&1 && fail "dpkg still knows dspreload after the purge: $(dpkg-query -W dspreload)"
while read -r f; do
  [ -d "$f" ] && continue
  [ -e "$f" ] || [ -L "$f" ] && fail "$f is left after the purge"
done <"$tmp/files"
ldconfig -p | grep -q "/$triplet/libdspreload\.so" && fail "ld.so's cache still lists libdspreload.so after the purge"
echo "deb ok"
