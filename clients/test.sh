#!/usr/bin/env bash
# Tests of the client packages, clients/python and clients/js, against a real fanoutd (and a scripted server
# for the exact lines of the 1.2 verbs); for Python also mypy --strict (installed into its venv from PyPI).
# Installs what they need on Debian first (apt-get, with sudo when not
# root): Node and Debian's TypeScript compiler, Python's venv, and for the browser test Chromium, its driver
# and Selenium.
#   clients/test.sh            both packages
#   clients/test.sh python     or js: one of them
# FANOUTD names the daemon binary; by default the repository's debug build, built here when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
missing=""
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing="$missing $1"; }
command -v node >/dev/null || need nodejs
command -v npm >/dev/null || need npm
command -v tsc >/dev/null || need node-typescript
python3 -c "import ensurepip, venv" 2>/dev/null || need python3-venv
python3 -m pip --version >/dev/null 2>&1 || need python3-pip
command -v openssl >/dev/null || need openssl
if [ -n "$missing" ]; then
    echo "installing:$missing"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
# The browser test skips itself on a machine that cannot have these.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
        || echo "cannot install chromium: the browser test will skip" >&2
fi
python3 -c "import selenium" 2>/dev/null || python3 -m pip install --quiet selenium 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages selenium || echo "no selenium: the browser test will skip" >&2

if [ -z "${FANOUTD:-}" ]; then
    [ -x .build/debug/fanoutd ] || [ -x .build/release/fanoutd ] || swift build --product fanoutd
fi

if [ "$which" = all ] || [ "$which" = python ]; then
    # The tests import the package as pip installs it, into a virtual environment of their own.
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    python3 -m venv "$scratch/venv"
    "$scratch/venv/bin/pip" install --quiet ./clients/python mypy
    # The package ships py.typed: it and a program of the kind users write pass mypy --strict
    # (tests/test_types.py checks the same in the unittest run). The README's examples run in test_readme.py.
    (cd clients/python \
        && "$scratch/venv/bin/python" -m mypy --strict --no-incremental src/fanout tests/typing_sample.py)
    (cd clients/python && "$scratch/venv/bin/python" -m unittest discover -s tests -t . -v)
fi

if [ "$which" = all ] || [ "$which" = js ]; then
    # The tests run dist/, built here from src/ (it is build output, not kept in git).
    (cd clients/js && rm -rf dist && tsc -p tsconfig.json && node scripts/bundle-browser.mjs \
        && node scripts/run-tests.mjs)
fi
