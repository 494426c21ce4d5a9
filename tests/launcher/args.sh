#!/bin/sh
# Usage errors: exit 2, the bad argument named, the usage line shown.
cmd=$1
fail() { echo "FAIL: $*"; exit 1; }
expect_usage() { # expect_usage WORD ARGS...: exit 2, WORD in the message, usage line
  word=$1; shift
  out=$("$cmd" "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, not 2"
  echo "$out" | grep -qF -- "$word" || fail "'$*': message does not name '$word': $out"
  echo "$out" | grep -q '^usage: dspreload' || fail "'$*': no usage line: $out"
}
expect_usage "no command" 
expect_usage "--bogus" --bogus -- true
expect_usage "-x" -x true
expect_usage "lots" --max-pinned lots -- true
expect_usage "DSP_MAX_PINNED" --max-pinned=lots true
expect_usage "did you mean DSP_MAX_PINNED" DSP_MAX_PINED=1G -- true
expect_usage "accepted: auto|always|never" DSP_HUGEPAGES=sometimes true
expect_usage "--log needs a value" --log
expect_usage "no command" --stats --
expect_usage "stats" stats
expect_usage "env" env --bogus
expect_usage "DSP_MALLOC_MIN" --malloc-min lots -- true
"$cmd" --malloc-min 1M -- sh -c 'test "$DSP_MALLOC_MIN" = 1M' || fail "--malloc-min does not reach the command"
"$cmd" --help | grep -q '^usage: dspreload' || fail "--help"
"$cmd" --version | grep -q '^dspreload [0-9]' || fail "--version"
echo "PASS"
