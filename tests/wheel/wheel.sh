#!/bin/sh
# tests/wheel/wheel.sh SOURCE_ROOT VERSION: the Python wheel as ML teams install
# it (issue 31). Builds it offline from a copy of the tree (meson-python writes
# into the tree it builds), installs it into a fresh venv with pip --no-index,
# and runs what docs/getting-started.md ("Install with pip") promises: python -m
# dspreload (--version, --lib, demo, -- cmd), the venv's dspreload command, and
# dspreload.stats() with and without LD_PRELOAD=$(python -m dspreload --lib).
set -u
src=$1 version=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3  # Debian's: the one with python3-torch (PATH's may be another)
fail() { echo "FAIL: $*"; exit 1; }

# What it needs, as Debian packages: scripts/deps installs the missing ones
# (as root); a package that cannot be installed skips the test, named.
missing() {
  m=
  [ -x "$py" ] || m="$m python3"
  for pair in mesonpy:python3-mesonpy build:python3-build ensurepip:python3-venv \
              pyproject_metadata:python3-pyproject-metadata torch:python3-torch; do
    [ -x "$py" ] && "$py" -c "import ${pair%%:*}" 2>/dev/null || m="$m ${pair#*:}"
  done
  # meson-python asks for patchelf when a wheel holds native code.
  command -v patchelf >/dev/null || m="$m patchelf"
  echo "$m"
}
if [ -n "$(missing)" ]; then
  bash "$src/scripts/deps" >&2 || true
  m=$(missing)
  [ -z "$m" ] || { echo "SKIP: Debian packages missing and not installable:$m (scripts/deps)"; exit 77; }
fi

tmp=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
# A signal (meson's timeout, ^C) exits through the EXIT trap: sh runs none
# when a signal without a trap ends it, and the venv and build stayed in /tmp.
trap 'exit 1' HUP INT TERM
unset LD_PRELOAD PYTHONPATH PYTHONHOME
for v in $(env | sed -n 's/^\(DSP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 OMP_NUM_THREADS=1

# The tree as git sees it (tracked and new files, not the build directories).
sh "$here/../copy_tree.sh" "$src" "$tmp/src" || fail "cannot copy the source tree"

# The documented build: offline, with Debian's meson-python.
(cd "$tmp/src" && "$py" -m build --no-isolation --wheel --outdir "$tmp/dist" .) \
  >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "the wheel did not build"; }
set -- "$tmp"/dist/*.whl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one wheel in dist/, got: $*"
whl=$1
# Only the package: no header, pkg-config file or man page (those are for
# system installs) and no library outside the package.
got=$("$py" -c 'import sys, zipfile
print(" ".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".dist-info/" not in n)))' "$whl")
want="dspreload/__init__.py dspreload/__main__.py dspreload/_version.py dspreload/dspreload dspreload/dspreload-demo dspreload/libdspreload.so"
[ "$got" = "$want" ] || fail "the wheel holds: $got; expected: $want"
echo "built $(basename "$whl")"

"$py" -m venv --system-site-packages "$tmp/venv" || fail "python3 -m venv"
"$tmp/venv/bin/pip" install -q --no-index "$whl" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log"; fail "pip install --no-index"; }
vpy=$tmp/venv/bin/python
cd "$tmp" || fail "cd"

out=$("$vpy" -m dspreload --version) || fail "python -m dspreload --version failed"
[ "$out" = "dspreload $version" ] || fail "python -m dspreload --version: '$out', meson.build says $version"
out=$("$vpy" -c 'import dspreload; print(dspreload.__version__)') || fail "import dspreload"
[ "$out" = "$version" ] || fail "dspreload.__version__ '$out', meson.build says $version"

lib=$("$vpy" -m dspreload --lib) || fail "python -m dspreload --lib failed"
case $lib in "$tmp/venv/"*) ;; *) fail "python -m dspreload --lib: '$lib' is not inside the venv" ;; esac
[ -f "$lib" ] || fail "python -m dspreload --lib: '$lib' is not a file"
out=$("$vpy" -c 'import dspreload; print(dspreload.library_path())')
[ "$out" = "$lib" ] || fail "dspreload.library_path() '$out' differs from --lib '$lib'"

# The launcher, through python -m and the venv's command: the bundled library
# preloaded, the command's exit status, 2 for a usage error, 127 for no command.
for cmd in "$vpy -m dspreload" "$tmp/venv/bin/dspreload"; do
  out=$($cmd -- sh -c 'echo "$LD_PRELOAD"; exit 3'); rc=$?
  [ $rc -eq 3 ] || fail "$cmd -- sh -c 'exit 3' exited $rc"
  [ "$out" = "$lib" ] || fail "$cmd -- cmd: LD_PRELOAD '$out', expected the bundled $lib"
  $cmd --no-such-option >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "$cmd --no-such-option exited $rc, expected 2"
  $cmd -- "$tmp/no-such-program" 2>/dev/null; rc=$?
  [ $rc -eq 127 ] || fail "$cmd -- a missing program exited $rc, expected 127"
  # doctor checks the library the launcher would preload: the bundled one.
  out=$($cmd doctor 2>&1)
  echo "$out" | grep -F "$lib (dspreload $version)" | grep -q '^OK  *library ' ||
    { echo "$out"; fail "$cmd doctor: no OK library line for the bundled $lib"; }
  out=$($cmd demo 2>&1); rc=$?
  [ $rc -eq 0 ] || { echo "$out"; fail "$cmd demo exited $rc"; }
  echo "$out" | grep -q '^What dspreload did' || { echo "$out"; fail "$cmd demo: no 'What dspreload did' summary"; }
done
echo "python -m dspreload and the venv's dspreload: launcher, exit statuses, doctor and demo as the C command"

# LD_PRELOAD=$(python -m dspreload --lib) python script.py, and the same
# script without it.
LD_PRELOAD=$lib DSP_MALLOC_MIN=1M "$vpy" "$here/pinned.py" preloaded || fail "under LD_PRELOAD: pinned.py"
"$vpy" "$here/pinned.py" absent || fail "without LD_PRELOAD: pinned.py"

# --stats --malloc-min 1M: the command runs under the shim (its 8 MiB buffer
# born pinned) and the summary comes at exit.
"$vpy" -m dspreload --stats --malloc-min 1M -- "$vpy" -c 'import dspreload, sys
b = bytearray(8 << 20)
s = dspreload.stats()
sys.exit(0 if s and s["malloc_hinted"] > 0 else 5)' 2>"$tmp/stats.err"; rc=$?
[ $rc -eq 0 ] || { cat "$tmp/stats.err"; fail "python -m dspreload --stats -- python -c: exited $rc (5: not under the shim)"; }
grep -q 'stats: malloc hints: [1-9][0-9]* allocations\? pinned' "$tmp/stats.err" ||
  { cat "$tmp/stats.err"; fail "--stats: no summary at exit"; }
echo "python -m dspreload --stats -- python: under the shim, summary at exit"
