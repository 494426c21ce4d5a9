#!/bin/sh
# tests/skip.sh REASON: stands in for a test whose dependency was not found
# when the build was configured, so that the test is listed as skipped (exit
# 77, Meson's skip code) with the reason, instead of missing from the list.
echo "SKIP: $1; install it and reconfigure the build (meson setup --reconfigure) to run this test"
exit 77
