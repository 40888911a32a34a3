#!/usr/bin/env bash
# Counts the instructions a fanoutd build executes per message, under callgrind: a figure that other work on a
# shared machine does not move, where CPU time per message (ab.sh) spreads by a tenth between runs. Each build
# serves the same bench twice, with SMALL and LARGE messages; the difference of the two totals, over the
# difference of the deliveries (or of the publishes, without subscribers), leaves out start-up and shutdown.
#   Benchmarks/scripts/instructions.sh [-s SMALL -l LARGE] SERVER_A SERVER_B [fanout bench arguments...]
# The bench arguments are those of `fanout bench` without --messages (default: scenario A, 1 publisher to 100
# subscribers on one subject). Servers are copied and stripped of debug information first: valgrind reads the
# static binaries' symbols but not their DWARF.
set -euo pipefail
cd "$(dirname "$0")/../.."
small=2000; large=10000
while [ "${1:-}" = "-s" ] || [ "${1:-}" = "-l" ]; do
    if [ "$1" = "-s" ]; then small=$2; else large=$2; fi
    shift 2
done
server_a=$1; server_b=$2; shift 2
arguments=("$@")
[ ${#arguments[@]} -gt 0 ] || arguments=(--publishers 1 --subscribers 100 --subjects 1)
fanout=${FANOUT:-.build/release/fanout}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=17431

total() {  # total BINARY MESSAGES: the server's instructions (Ir) for one bench of MESSAGES
    local out="$work/callgrind.out"
    FANOUTD_MAX_CONNECTIONS=10100 valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$1" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 600); do
        "$fanout" ping --server "127.0.0.1:$port" -c 1 >/dev/null 2>&1 && break
        sleep 0.1
    done
    "$fanout" bench --server "127.0.0.1:$port" --payload 100 --window 100 --json "${arguments[@]}" \
        --messages "$2" >"$work/bench.json"
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

# Deliveries per message: subscribers on one subject (each gets every message), or 1 without subscribers.
per_message=$(python3 -c '
import sys
args = sys.argv[1:]
def value(name, default):
    return int(args[args.index(name) + 1]) if name in args else default
subscribers, subjects = value("--subscribers", 100), value("--subjects", 1)
print(max(1, subscribers // max(1, subjects)) if subscribers > 0 else 1)' "${arguments[@]}")

report() {  # report NAME BINARY
    cp "$2" "$work/server" && strip --strip-debug "$work/server"
    local a b
    a=$(total "$work/server" "$small")
    b=$(total "$work/server" "$large")
    python3 -c 'import sys; a, b, n = map(int, sys.argv[1:4]); print("%-40s %8.2f instructions per delivery" % (sys.argv[4], (b - a) / n))' \
        "$a" "$b" "$(( (large - small) * per_message ))" "$1"
}
report "A $server_a" "$server_a"
report "B $server_b" "$server_b"
