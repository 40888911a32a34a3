#!/bin/sh
# Prints Fanout's version. Its one definition is FanoutVersion.current; the Makefile, the package and the
# man pages read it from there, fanoutd --version and INFO report it, and a test checks fanout --version.
sed -n 's/^ *public static let current = "\([^"]*\)".*/\1/p' "$(dirname "$0")/../Sources/FanoutServer/Admin/Server+Admin.swift"
