#!/bin/sh
# docs/configuration.md is generated from the options table; it must match
# what `dspreload env --markdown` prints.
cmd=$1 doc=$2
if ! "$cmd" env --markdown | diff -u "$doc" - ; then
  echo "docs/configuration.md is stale: regenerate with build/dspreload env --markdown > docs/configuration.md"
  exit 1
fi
echo "configuration doc ok"
