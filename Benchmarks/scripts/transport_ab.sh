#!/usr/bin/env bash
# Two fanoutd builds, side by side, with browser-transport subscribers: each run benches A then B (the order
# swaps from run to run) with `fanout bench --transport websocket|sse`, which runs the scenario with TCP
# subscribers and then with subscribers on the transport, and prints, per build, the transport row's
# deliveries/s and the server's CPU time (user + system, from /proc/PID/stat) per delivery over both rows.
#   Benchmarks/scripts/transport_ab.sh [-n runs] SERVER_A SERVER_B websocket|sse [fanout bench arguments...]
# Servers are pinned to core 0, the load generator to core 1, as in ab.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=3
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
server_a=$1; server_b=$2; transport=$3; shift 3
arguments=("$@")
[ ${#arguments[@]} -gt 0 ] || arguments=(--publishers 1 --subscribers 100 --subjects 1 --messages 100000)
fanout=${FANOUT:-.build/release/fanout}
hz=$(getconf CLK_TCK)

bench() {  # bench SERVER: prints "rate ns_per_delivery"
    FANOUTD_MAX_CONNECTIONS=10100 taskset -c 0 $1 --listen 127.0.0.1:17881 --http-listen 127.0.0.1:17882 >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 100); do "$fanout" ping --server 127.0.0.1:17881 -c 1 >/dev/null 2>&1 && break; sleep 0.05; done
    local before after output
    before=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
    output=$(taskset -c 1 "$fanout" bench --server 127.0.0.1:17881 --http-server 127.0.0.1:17882 \
        --transport "$transport" --json "${arguments[@]}")
    after=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
    kill $pid; wait $pid 2>/dev/null || true
    python3 -c '
import json, sys
results = json.loads(sys.argv[1])["results"]
delivered = sum(int(row["delivered"]) for row in results)
print("%.0f %.1f" % (float(results[-1]["delivered_per_s"]), int(sys.argv[2]) / int(sys.argv[3]) * 1e9 / delivered))
' "$output" $((after - before)) "$hz"
}

a_rates=(); a_cpu=(); b_rates=(); b_cpu=()
for run in $(seq "$runs"); do
    if [ $((run % 2)) -eq 1 ]; then order=(a b); else order=(b a); fi
    for side in "${order[@]}"; do
        if [ "$side" = a ]; then read -r rate cpu <<<"$(bench "$server_a")"; a_rates+=("$rate"); a_cpu+=("$cpu")
        else read -r rate cpu <<<"$(bench "$server_b")"; b_rates+=("$rate"); b_cpu+=("$cpu"); fi
    done
done
python3 -c '
import statistics, sys
a_rates, a_cpu, b_rates, b_cpu = (list(map(float, part.split())) for part in sys.argv[1:5])
print("A %-40s median %12.0f/s %7.1f ns/delivery   cpu runs: %s" % (sys.argv[5], statistics.median(a_rates), statistics.median(a_cpu), " ".join(map(str, a_cpu))))
print("B %-40s median %12.0f/s %7.1f ns/delivery   cpu runs: %s" % (sys.argv[6], statistics.median(b_rates), statistics.median(b_cpu), " ".join(map(str, b_cpu))))
print("B/A %s: throughput %.3fx, CPU per delivery %.3fx" % (sys.argv[7], statistics.median(b_rates) / statistics.median(a_rates), statistics.median(b_cpu) / statistics.median(a_cpu)))
' "${a_rates[*]}" "${a_cpu[*]}" "${b_rates[*]}" "${b_cpu[*]}" "$server_a" "$server_b" "$transport"
