#!/usr/bin/env bash
# Runs every shell example the docs mark runnable, against a fanoutd this script starts, so that a doc
# cannot drift from the code. CI runs it after the tests.
#   scripts/doc-examples.sh [BIN_DIR]      default .build/debug (./dev test builds it)
# First it checks that docs/protocol.md is the shared contract, ../shared/PROTOCOL.md, where that exists.
# A runnable example is a fenced block whose info string is `sh runnable`, in README.md or docs/*.md. Each
# runs from the repository's top folder under `bash -euo pipefail`, for at most 20 seconds, as a user who
# follows the README would run it: README.md's blocks with no fanout nor fanoutd on PATH (the README says
# how to put the built ones there: `export PATH="$PWD/.build/release:$PATH"`, whose folder is rewritten to
# BIN_DIR), the docs' blocks with the built ones first on PATH, as the README left them. The server listens
# on free loopback ports: the examples' 127.0.0.1:7411 (or `127.0.0.1 7411`, as nc takes it) and
# 127.0.0.1:7412 are rewritten to them, and FANOUT_SERVER is set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(cd "${1:-.build/debug}" && pwd)"
test -x "$bin/fanoutd" -a -x "$bin/fanout" || { echo "doc-examples: no fanoutd and fanout in $bin (swift build)" >&2; exit 1; }
if [ -f ../shared/PROTOCOL.md ]; then
    cmp -s ../shared/PROTOCOL.md docs/protocol.md \
        || { echo "doc-examples: docs/protocol.md differs from ../shared/PROTOCOL.md; copy it over" >&2; exit 1; }
    echo "ok: docs/protocol.md is ../shared/PROTOCOL.md"
fi
work=$(mktemp -d)
daemon=""
cleanup() {
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The blocks, one file each, named after where they are; a block inside a list item loses its indentation.
for doc in README.md docs/*.md; do
    awk -v doc="$doc" -v out="$work" '
        !inside && /^[ \t]*```sh runnable[ \t]*$/ {
            inside = 1; indent = match($0, /[^ ]/) - 1
            name = doc; gsub("/", "|", name); file = sprintf("%s/%s:%05d", out, name, NR)
            printf "" > file; next
        }
        inside && /^[ \t]*```[ \t]*$/ { inside = 0; close(file); next }
        inside { print substr($0, indent + 1) >> file }
    ' "$doc"
done
blocks=("$work"/*)
[ -e "${blocks[0]}" ] || { echo "doc-examples: no runnable example found" >&2; exit 1; }

"$bin/fanoutd" --config config/fanoutd.yaml --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2> "$work.log" &
daemon=$!
port="" http=""
for _ in $(seq 100); do
    port=$(sed -n 's/.*notice listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work.log" | head -1)
    http=$(sed -n 's|.*serving HTTP on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$work.log" | head -1)
    [ -n "$port" ] && [ -n "$http" ] && break
    sleep 0.1
done
[ -n "$port" ] && [ -n "$http" ] || { cat "$work.log" >&2; echo "doc-examples: fanoutd did not start" >&2; exit 1; }

# A new user's PATH: this one less any folder that holds a fanout or fanoutd (an installed package's, say).
user_path=""
IFS=: read -ra folders <<< "$PATH"
for folder in "${folders[@]}"; do
    [ -e "$folder/fanout" ] || [ -e "$folder/fanoutd" ] || user_path="${user_path:+$user_path:}$folder"
done

failed=0
for block in "${blocks[@]}"; do
    where=$(basename "$block" | tr '|' '/' | sed 's/:0*/:/')
    script=$(sed -e "s/127\.0\.0\.1:7411/127.0.0.1:$port/g" -e "s/127\.0\.0\.1 7411/127.0.0.1 $port/g" \
                 -e "s/127\.0\.0\.1:7412/127.0.0.1:$http/g" -e "s|\\\$PWD/\.build/release|$bin|g" "$block")
    case "$where" in
        README.md:*) path="$user_path" ;;
        *) path="$bin:$user_path" ;;
    esac
    if output=$(PATH="$path" FANOUT_SERVER="127.0.0.1:$port" timeout 20 bash -euo pipefail -c "$script" 2>&1); then
        echo "ok: $where"
    else
        echo "FAILED: $where (exit $?)"
        printf '%s\n' "$script" | sed 's/^/    $ /'
        printf '%s\n' "$output" | sed 's/^/    > /'
        failed=$((failed + 1))
    fi
done
rm -f "$work.log"
if [ "$failed" -gt 0 ]; then
    echo "doc-examples: $failed of ${#blocks[@]} examples failed"
    exit 1
fi
echo "doc-examples: all ${#blocks[@]} examples passed"
