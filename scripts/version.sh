#!/bin/sh
# Prints Fanout's version. Its one definition is FanoutVersion.current, wherever under Sources/ it lives; the
# Makefile, the package and the man pages read it from there, fanoutd --version and INFO report it, and a
# test checks that fanout --version says the same.
set -eu
cd "$(dirname "$0")/.."
version=$(grep -rh -A3 "enum FanoutVersion" Sources | sed -n 's/^ *public static let current = "\([^"]*\)".*/\1/p' | head -1)
[ -n "$version" ] || { echo "version.sh: no FanoutVersion.current under Sources/" >&2; exit 1; }
echo "$version"
