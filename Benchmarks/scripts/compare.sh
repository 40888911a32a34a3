#!/usr/bin/env bash
# Runs the same pub/sub scenarios against fanoutd and redis-server, side by side in one run, and prints the
# median of each figure over several runs and the fanoutd/redis ratio.
#   Benchmarks/scripts/compare.sh [runs]       default 3; needs redis-server and a release build
# Setup as in the performance issue: loopback, servers pinned to core 0, load generator to core 1,
# 100-byte payloads, a window of 100 unacknowledged publishes per publisher.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-3}"
bin=.build/release
[ -x "$bin/fanoutd" ] && [ -x "$bin/fanout" ] || swift build -c release >/dev/null
fanout_port=17411
redis_port=16379
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; redis-cli -p $redis_port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

FANOUTD_MAX_CONNECTIONS=10100 taskset -c 0 "$bin/fanoutd" --listen 127.0.0.1:$fanout_port --log-level warning \
    2>"$work/fanoutd.log" &
taskset -c 0 redis-server --port $redis_port --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --maxclients 10100 >"$work/redis.log" 2>&1 &
for _ in $(seq 50); do
    "$bin/fanout" ping --server 127.0.0.1:$fanout_port -c 1 >/dev/null 2>&1 && redis-cli -p $redis_port ping >/dev/null 2>&1 && break
    sleep 0.1
done

# name | what to compare | fanout bench arguments
scenarios=(
    "A fan-out 1x100|delivered_per_s|--publishers 1 --subscribers 100 --subjects 1 --messages 200000"
    "B 1000 subjects|delivered_per_s|--publishers 1 --subscribers 1000 --subjects 1000 --messages 100000"
    "C publish only|published_per_s|--publishers 4 --subscribers 0 --messages 400000"
    "D fan-out 1x5000|delivered_per_s|--publishers 1 --subscribers 5000 --subjects 1 --messages 20000"
    "E p99 at 2k/s|p99_us|--publishers 1 --subscribers 50 --subjects 1 --messages 20000 --rate 2000"
    "G A, 25 stalled|delivered_per_s|--publishers 1 --subscribers 75 --stalled 25 --subjects 1 --messages 200000"
)

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

field() {  # field NAME from the first (fanout) or second (redis) result of a bench --json line
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][int(sys.argv[2])]; v=r["latency_us"]["p99"] if sys.argv[1]=="p99_us" else r[sys.argv[1]]; print(v)' "$1" "$2"
}

printf '%-18s %-16s %14s %14s %8s\n' scenario figure fanoutd redis ratio
for scenario in "${scenarios[@]}"; do
    IFS='|' read -r name figure arguments <<<"$scenario"
    : >"$work/f"; : >"$work/r"
    for _ in $(seq "$runs"); do
        # shellcheck disable=SC2086
        result=$(taskset -c 1 "$bin/fanout" bench --server 127.0.0.1:$fanout_port \
            --compare-redis 127.0.0.1:$redis_port --payload 100 --window 100 --json $arguments)
        field "$figure" 0 <<<"$result" >>"$work/f"
        field "$figure" 1 <<<"$result" >>"$work/r"
    done
    f=$(median <"$work/f"); r=$(median <"$work/r")
    ratio=$(python3 -c "import sys; f,r=float(sys.argv[1]),float(sys.argv[2]); print('%.2fx' % (f/r if r else 0))" "$f" "$r")
    printf '%-18s %-16s %14.0f %14.0f %8s\n' "$name" "$figure" "$f" "$r" "$ratio"
done

# F: server RSS per idle subscribed connection, 10,000 connections each.
rss() { awk '/VmRSS/ { print $2 }' "/proc/$1/status"; }
fanoutd_pid=$(pgrep -f "fanoutd --listen 127.0.0.1:$fanout_port" | head -1)
redis_pid=$(pgrep -f "redis-server 127.0.0.1:$redis_port" | head -1)
python3 - "$fanout_port" "$redis_port" "$fanoutd_pid" "$redis_pid" <<'PY'
import resource, socket, sys, time
fanout_port, redis_port, fpid, rpid = map(int, sys.argv[1:])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if hard < 10100:
    sys.exit("F needs an open-files limit of at least 10100 (ulimit -n)")
def rss(pid):
    return int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")).split()[1])
def idle(port, pid, subscribe, expect):
    before = rss(pid)
    sockets = []
    for i in range(10000):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(subscribe(i))
        sockets.append(s)
    for s in sockets:
        data = b""
        while expect not in data:
            data += s.recv(4096)
    time.sleep(0.5)
    after = rss(pid)
    for s in sockets: s.close()
    return (after - before) * 1024 / 10000
f = idle(fanout_port, fpid, lambda i: b"SUB idle.%d\n" % i, b"+OK")
r = idle(redis_port, rpid, lambda i: b"SUBSCRIBE idle.%d\r\n" % i, b"subscribe")
print("%-18s %-16s %14.0f %14.0f %8s" % ("F idle 10k conns", "bytes/conn", f, r, "%.2fx" % (f / r)))
PY
