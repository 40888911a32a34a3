#!/usr/bin/env bash
# Compares two servers that speak the Fanout protocol (two fanoutd builds, or fanoutd and the plain-C
# baseline), side by side in one run: each run benches A then B with the same load generator, and the
# medians and the B/A ratio are printed.
#   Benchmarks/scripts/ab.sh [-n runs] SERVER_A SERVER_B [fanout bench arguments...]
# A server is a command line that takes `--listen 127.0.0.1:PORT` appended, for example
# `.build/release/fanoutd` or `Benchmarks/c-baseline/fanout-c`. Servers are pinned to core 0, the load
# generator to core 1, as in compare.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
server_a=$1; server_b=$2; shift 2
arguments=("$@")
[ ${#arguments[@]} -gt 0 ] || arguments=(--publishers 1 --subscribers 100 --subjects 1 --messages 200000)
fanout=${FANOUT:-.build/release/fanout}
port_a=17421; port_b=17422
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

start() {  # start COMMAND PORT LOG
    # shellcheck disable=SC2086
    FANOUTD_MAX_CONNECTIONS=10100 taskset -c 0 $1 --listen "127.0.0.1:$2" >"$3" 2>&1 &
    for _ in $(seq 100); do
        "$fanout" ping --server "127.0.0.1:$2" -c 1 >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "server '$1' did not start; its output:" >&2; cat "$3" >&2; exit 1
}
start "$server_a" $port_a "$work/a.log"
start "$server_b" $port_b "$work/b.log"

bench() {  # bench PORT -> delivered/s (or published/s with no subscribers)
    taskset -c 1 "$fanout" bench --server "127.0.0.1:$1" --payload 100 --window 100 --json "${arguments[@]}" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["delivered_per_s"] or r["published_per_s"])'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for _ in $(seq "$runs"); do
    bench $port_a >>"$work/a"
    bench $port_b >>"$work/b"
done
a=$(median <"$work/a"); b=$(median <"$work/b")
printf 'A %-40s median %12.0f/s   runs: %s\n' "$server_a" "$a" "$(tr '\n' ' ' <"$work/a")"
printf 'B %-40s median %12.0f/s   runs: %s\n' "$server_b" "$b" "$(tr '\n' ' ' <"$work/b")"
python3 -c "import sys; print('B/A = %.2fx' % (float(sys.argv[2]) / float(sys.argv[1])))" "$a" "$b"
