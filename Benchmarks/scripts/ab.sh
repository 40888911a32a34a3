#!/usr/bin/env bash
# Compares two servers that speak the Fanout protocol (two fanoutd builds, or fanoutd and the plain-C
# baseline), side by side in one run: each run benches A then B with the same load generator, and the
# medians and the B/A ratio are printed: throughput, and the server's CPU time (user + system, from
# /proc/PID/stat around each bench) per delivered message, or per published one without subscribers. The
# order of each pair swaps from run to run, so that a drift of the machine's speed favours neither side.
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

start() {  # start COMMAND PORT LOG: its pid is left in started_pid
    # shellcheck disable=SC2086
    FANOUTD_MAX_CONNECTIONS=10100 taskset -c 0 $1 --listen "127.0.0.1:$2" >"$3" 2>&1 &
    started_pid=$!
    for _ in $(seq 100); do
        "$fanout" ping --server "127.0.0.1:$2" -c 1 >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "server '$1' did not start; its output:" >&2; cat "$3" >&2; exit 1
}
start "$server_a" $port_a "$work/a.log"
pid_a=$started_pid
start "$server_b" $port_b "$work/b.log"
pid_b=$started_pid
clock_ticks=$(getconf CLK_TCK)
cpu_ticks() {  # user + system clock ticks of a process (fields 14 and 15 of /proc/PID/stat)
    sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

bench() {  # bench PORT PID FILE: appends the figure (delivered/s, or published/s with no subscribers) to FILE
    # and the server's CPU nanoseconds per delivered (or published) message to FILE.ns
    local before after
    before=$(cpu_ticks "$2")
    taskset -c 1 "$fanout" bench --server "127.0.0.1:$1" --payload 100 --window 100 --json "${arguments[@]}" >"$3.json"
    after=$(cpu_ticks "$2")
    python3 - "$3" "$((after - before))" "$clock_ticks" <<'PY'
import json, sys
file, ticks, clock_ticks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = json.load(open(file + ".json"))["results"][0]
count = r["delivered"] or r["published"]
with open(file, "a") as out: out.write("%s\n" % (r["delivered_per_s"] or r["published_per_s"]))
with open(file + ".ns", "a") as out: out.write("%.1f\n" % (ticks / clock_ticks * 1e9 / count))
PY
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for run in $(seq "$runs"); do
    if [ $((run % 2)) = 1 ]; then
        bench $port_a "$pid_a" "$work/a"
        bench $port_b "$pid_b" "$work/b"
    else
        bench $port_b "$pid_b" "$work/b"
        bench $port_a "$pid_a" "$work/a"
    fi
done
a=$(median <"$work/a"); b=$(median <"$work/b")
na=$(median <"$work/a.ns"); nb=$(median <"$work/b.ns")
printf 'A %-40s median %12.0f/s %8.1f ns/msg   runs: %s\n' "$server_a" "$a" "$na" "$(tr '\n' ' ' <"$work/a.ns")"
printf 'B %-40s median %12.0f/s %8.1f ns/msg   runs: %s\n' "$server_b" "$b" "$nb" "$(tr '\n' ' ' <"$work/b.ns")"
python3 -c "import sys; a, b, na, nb = map(float, sys.argv[1:]); print('B/A throughput %.3fx, CPU per message %.3fx' % (b / a, nb / na))" "$a" "$b" "$na" "$nb"
