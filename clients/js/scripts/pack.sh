#!/bin/sh
# Makes the package's tarball, clients/js/fanout-<version>.tgz, on a fresh Debian machine: installs what the
# build needs when it is missing (apt-get, with sudo when not root, as ./dev does): Node, npm and Debian's
# TypeScript compiler. Then `npm pack`, whose prepack builds dist/ from src/ (dist/ is build output, not kept in
# git). Arguments go to npm pack (e.g. --pack-destination DIR).
set -eu
cd "$(dirname "$0")/.."
missing=""
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
command -v tsc >/dev/null 2>&1 || missing="$missing node-typescript"
if [ -n "$missing" ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "installing:$missing" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
npm pack "$@"
