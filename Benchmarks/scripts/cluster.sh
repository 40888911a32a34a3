#!/usr/bin/env bash
# Several nodes through Redis against one standalone fanoutd, side by side in one run.
#   Benchmarks/scripts/cluster.sh [runs]      default 3; needs redis-server and a release build
# Prints the median over the runs of:
#   - publish-only acknowledged PUBs/s through one node on one Redis shard, 64 subjects (target: >= 150k/s
#     per shard), with Redis's CPU per publish and the node's CPU per publish; and the same with one subject,
#     which shows Redis's cost per message without its cost per subject of a batch;
#   - fan-out delivered/s through one node (1 publisher, 100 subscribers, one subject), clustered and
#     standalone, with the node's CPU per delivery (target: clustered >= 0.5x standalone);
#   - p50 and p99 publish-to-receive latency at 2,000 msgs/s (50 subscribers), clustered and standalone, and
#     what the cluster adds (target: <= 0.5 ms added at p50);
#   - the model check: 2 nodes x 2 shards, one publish-only generator per node at once, against the sum the
#     per-shard and per-node costs predict.
# Pinning: Redis and the nodes share core 0, the generator has core 1 (two generators share it in the model
# check). This machine has two cores: the figures are costs, not scale-out.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-3}"
bin=${FANOUT_BIN:-.build/release}  # FANOUT_BIN: another build to measure (its fanoutd and fanout)
[ -x "$bin/fanoutd" ] && [ -x "$bin/fanout" ] || swift build -c release >/dev/null
work=$(mktemp -d)
redis_ports=(16481 16482)
node_ports=(17481 17482)
standalone_port=17480
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    for port in "${redis_ports[@]}"; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
clock_ticks=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() {  # field NAME <json
    python3 -c 'import json,sys
r = json.load(sys.stdin)["results"][0]
name = sys.argv[1]
print(r["latency_us"][name] if name in ("p50", "p99") else r[name])' "$1"
}

start_redis() {  # start_redis PORT
    taskset -c 0 redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        >"$work/redis-$1.log" 2>&1 &
    for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "redis-server on $1 did not start" >&2
    exit 1
}
start_node() {  # start_node PORT SHARDS... (no shard: standalone); leaves its pid in node_pid
    local port=$1 config="$work/node-$1.yaml"
    shift
    : >"$config"
    if [ $# -gt 0 ]; then
        printf 'cluster:\n  redis: [%s]\n' "$(printf '"redis://127.0.0.1:%s",' "$@" | sed 's/,$//')" >"$config"
    fi
    taskset -c 0 "$bin/fanoutd" --config "$config" --listen "127.0.0.1:$port" --log-level notice \
        2>"$work/node-$port.log" &
    node_pid=$!
    for _ in $(seq 200); do
        info=$("$bin/fanout" info --server "127.0.0.1:$port" 2>/dev/null || true)
        if [ $# -eq 0 ] && grep -q '^version' <<<"$info"; then return 0; fi
        if [ $# -ge 1 ] && [ "$(grep -cE '^shard[0-9]+_status +up' <<<"$info")" = $# ]; then return 0; fi
        sleep 0.05
    done
    echo "node on $port did not come up" >&2
    cat "$work/node-$port.log" >&2
    exit 1
}
bench() {  # bench PORT ARGUMENTS... -> one JSON line
    taskset -c 1 "$bin/fanout" bench --server "127.0.0.1:$1" --payload 100 --window 100 --json "${@:2}"
}
# timed FILEPREFIX PIDS -- PORT ARGUMENTS...: runs one bench; appends the JSON to FILEPREFIX.json and each
# pid's CPU nanoseconds to FILEPREFIX.cpu-<n> (n = position in PIDS).
timed() {
    local prefix=$1
    shift
    local pids=()
    while [ "$1" != -- ]; do pids+=("$1"); shift; done
    shift
    local before=() index
    for index in "${!pids[@]}"; do before[$index]=$(cpu_ticks "${pids[$index]}"); done
    bench "$@" >"$work/last.json"
    cat "$work/last.json" >>"$prefix.json"
    for index in "${!pids[@]}"; do
        echo $(( ($(cpu_ticks "${pids[$index]}") - before[index]) * 1000000000 / clock_ticks )) >>"$prefix.cpu-$index"
    done
}
per_unit() {  # per_unit CPUFILE JSONFILE FIELD -> CPU ns per FIELD (published or delivered), run by run
    paste -d' ' "$1" <(python3 -c 'import json,sys
for line in open(sys.argv[1]):
    print(json.loads(line)["results"][0][sys.argv[2]])' "$2" "$3") | awk '{ if ($2 > 0) printf "%.0f\n", $1 / $2 }'
}
figure() { python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)["results"][0]
    print(r["latency_us"][sys.argv[2]] if sys.argv[2] in ("p50", "p99") else r[sys.argv[2]])' "$1" "$2" | median; }

start_redis "${redis_ports[0]}"
start_redis "${redis_ports[1]}"
redis_pids=("$(pgrep -f "redis-server 127.0.0.1:${redis_ports[0]}")" "$(pgrep -f "redis-server 127.0.0.1:${redis_ports[1]}")")

P="--publishers 4 --subscribers 0 --subjects 64 --messages 200000"
P1="--publishers 4 --subscribers 0 --subjects 1 --messages 200000"
F="--publishers 1 --subscribers 100 --subjects 1 --messages 200000"
L="--publishers 1 --subscribers 50 --subjects 1 --rate 2000 --messages 20000"
for run in $(seq "$runs"); do
    # One shard, one node, against standalone: the three scenarios, alternating which goes first.
    for mode in $( [ $((run % 2)) = 1 ] && echo "cluster standalone" || echo "standalone cluster"); do
        if [ "$mode" = cluster ]; then
            redis-cli -p "${redis_ports[0]}" flushall >/dev/null
            start_node "${node_ports[0]}" "${redis_ports[0]}"
            port=${node_ports[0]}
            pids=("$node_pid" "${redis_pids[0]}")
        else
            start_node "$standalone_port"
            port=$standalone_port
            pids=("$node_pid")
        fi
        timed "$work/$mode-P" "${pids[@]}" -- "$port" $P
        timed "$work/$mode-P1" "${pids[@]}" -- "$port" $P1
        timed "$work/$mode-F" "${pids[@]}" -- "$port" $F
        timed "$work/$mode-L" "${pids[@]}" -- "$port" $L
        kill "$node_pid"
        wait "$node_pid" 2>/dev/null || true
    done
    # The model check: two nodes on two shards, one publish-only generator per node at once.
    for index in 0 1; do redis-cli -p "${redis_ports[$index]}" flushall >/dev/null; done
    start_node "${node_ports[0]}" "${redis_ports[@]}"
    first=$node_pid
    start_node "${node_ports[1]}" "${redis_ports[@]}"
    second=$node_pid
    before=$(date +%s.%N)
    bench "${node_ports[0]}" $P >"$work/model-a.json" &
    a=$!
    bench "${node_ports[1]}" $P >"$work/model-b.json" &
    b=$!
    wait $a $b
    python3 -c 'import json,sys
total = sum(json.load(open(f))["results"][0]["published"] for f in sys.argv[1:3])
print("%.0f" % (total / (float(sys.argv[4]) - float(sys.argv[3]))))' "$work/model-a.json" "$work/model-b.json" "$before" "$(date +%s.%N)" >>"$work/model-rate"
    kill "$first" "$second"
    wait "$first" "$second" 2>/dev/null || true
done

row() { printf '%-44s %14s %14s %8s\n' "$@"; }
ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%.2fx' % (a / b) if b else '-')" "$1" "$2"; }
row figure cluster standalone ratio
pc=$(figure "$work/cluster-P.json" published_per_s)
ps=$(figure "$work/standalone-P.json" published_per_s)
row "publish-only acked PUBs/s (1 shard)" "$pc" "$ps" "$(ratio "$pc" "$ps")"
redis_ns=$(per_unit "$work/cluster-P.cpu-1" "$work/cluster-P.json" published | median)
node_ns=$(per_unit "$work/cluster-P.cpu-0" "$work/cluster-P.json" published | median)
alone_ns=$(per_unit "$work/standalone-P.cpu-0" "$work/standalone-P.json" published | median)
row "  Redis CPU ns per publish" "$redis_ns" - -
row "  node CPU ns per publish" "$node_ns" "$alone_ns" "$(ratio "$node_ns" "$alone_ns")"
# A batch's Redis work is per subject, then per message: one subject shows the part per message.
pc1=$(figure "$work/cluster-P1.json" published_per_s)
ps1=$(figure "$work/standalone-P1.json" published_per_s)
row "publish-only, 1 subject: acked PUBs/s" "$pc1" "$ps1" "$(ratio "$pc1" "$ps1")"
redis1_ns=$(per_unit "$work/cluster-P1.cpu-1" "$work/cluster-P1.json" published | median)
node1_ns=$(per_unit "$work/cluster-P1.cpu-0" "$work/cluster-P1.json" published | median)
row "  Redis CPU ns per publish" "$redis1_ns" - -
row "  node CPU ns per publish" "$node1_ns" - -
fc=$(figure "$work/cluster-F.json" delivered_per_s)
fs=$(figure "$work/standalone-F.json" delivered_per_s)
row "fan-out delivered/s (1 x 100 subscribers)" "$fc" "$fs" "$(ratio "$fc" "$fs")"
dc=$(per_unit "$work/cluster-F.cpu-0" "$work/cluster-F.json" delivered | median)
ds=$(per_unit "$work/standalone-F.cpu-0" "$work/standalone-F.json" delivered | median)
row "  node CPU ns per delivery" "$dc" "$ds" "$(ratio "$dc" "$ds")"
for p in p50 p99; do
    lc=$(figure "$work/cluster-L.json" $p)
    ls_=$(figure "$work/standalone-L.json" $p)
    row "latency $p at 2,000 msgs/s (us)" "$lc" "$ls_" "+$(python3 -c "import sys; print('%.0f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$lc" "$ls_") us"
done
# The model: a shard takes 1e9 / redis_ns publishes/s of Redis CPU; a node spends node_ns per publish it
# takes and dc per delivery it makes. Here 2 nodes and 2 shards and the generators share 2 cores, so the
# prediction is for the CPU available: (2 cores - generator share) / (redis_ns + node_ns) publishes/s.
measured=$(median <"$work/model-rate")
predicted=$(python3 -c "import sys; r, n = map(float, sys.argv[1:]); print('%.0f' % (1e9 / (r + n)))" "$redis_ns" "$node_ns")
row "2 nodes x 2 shards: PUBs/s measured" "$measured" - -
row "  model, one core for Redis + nodes" "$predicted" - "$(ratio "$measured" "$predicted")"
