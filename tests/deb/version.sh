#!/bin/sh
# tests/deb/version.sh CHANGELOG VERSION: debian/changelog's newest entry
# packages the version meson.build declares (its upstream part, without an
# epoch or a Debian revision), so the .deb is never named after another one.
changelog=$1
version=$2
deb=$(sed -n '1s/^dspreload (\([^)]*\)).*/\1/p' "$changelog")
[ -n "$deb" ] || { echo "FAIL: $changelog does not start with a 'dspreload (VERSION)' entry: $(head -1 "$changelog")"; exit 1; }
upstream=${deb#*:}
upstream=${upstream%-*}
[ "$upstream" = "$version" ] || { echo "FAIL: debian/changelog packages $deb, meson.build declares $version"; exit 1; }
echo "debian/changelog packages $version"
