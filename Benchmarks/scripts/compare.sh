#!/usr/bin/env bash
# Runs the performance scenarios against fanoutd, redis-server and the plain-C baseline, side by side in one
# run, and prints one table: the median of each figure over several runs and the ratio.
#   Benchmarks/scripts/compare.sh [runs]       default 5; needs redis-server, cc, libevent-dev, a release build
#   Benchmarks/scripts/compare.sh [runs] mqtt  the MQTT scenarios alone: fanoutd's MQTT listener against Debian's
#                                              mosquitto (apt-get install mosquitto), fanoutd's own protocol as
#                                              the baseline of CPU per delivery
# Setup as in the performance issue: loopback, servers pinned to core 0, the load generator to core 1,
# 100-byte payloads, a window of 100 unacknowledged publishes per publisher. Each run benches the servers
# one after the other with the same generator, in an order that swaps from run to run, so a ratio compares
# figures taken seconds apart.
#
# Beside each throughput figure the table gives what it cost: the server's CPU time (user + system, from
# /proc/PID/stat around each `fanout bench`) per delivery, or per acknowledged publish in C, and how busy
# the load generator's own core was. The generator polls rather than sleeps, so a throughput ratio taken
# with its core saturated is partly the generator's; CPU per delivery is the server's alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
only="${2:-all}"
bin=.build/release
[ -x "$bin/fanoutd" ] && [ -x "$bin/fanout" ] || swift build -c release >/dev/null
make -s -C Benchmarks/c-baseline >/dev/null
fanout_port=17411
redis_port=16379
c_port=17412
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; redis-cli -p $redis_port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ulimit -n 65536 2>/dev/null || true
clock_ticks=$(getconf CLK_TCK)

start_server() {  # start_server NAME PORT LOG: starts one server on core 0; its pid is left in server_pid
    case $1 in
        fanoutd) FANOUTD_MAX_CONNECTIONS=10100 taskset -c 0 "$bin/fanoutd" --listen "127.0.0.1:$2" \
            --log-level warning 2>"$3" & ;;
        redis) taskset -c 0 redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
            --maxclients 10100 >"$3" 2>&1 & ;;
        C) taskset -c 0 Benchmarks/c-baseline/fanout-c --listen "127.0.0.1:$2" 2>"$3" & ;;
    esac
    server_pid=$!
}
wait_listening() {  # wait_listening PORT: without connecting, so that nothing has touched the server yet
    for _ in $(seq 200); do
        ss -Hltn "sport = :$1" | grep -q . && return 0
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    exit 1
}
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() {  # user + system clock ticks of a process, all its threads (fields 14 and 15 of /proc/PID/stat)
    sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() {  # ratio NUMERATOR DENOMINATOR
    python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%.2fx' % (a / b) if a and b else '-')" "$1" "$2"
}
format='%-22s %-15s %12s %12s %-9s %8s %9s %9s %8s %7s\n'
printf "$format" scenario figure fanoutd other "(other)" ratio "ns/unit f" "ns/unit o" "cpu o/f" "gen %"

# The MQTT scenarios (`compare.sh RUNS mqtt`): fanoutd's MQTT listener against Mosquitto, with fanoutd's own
# protocol as the baseline of CPU per delivery; the same generator (`fanout bench --protocol mqtt`), pinned as
# above. M1 fan-out 1 publisher to 100 subscribers at QoS 0 (each publish fenced by a PINGREQ, which both
# servers answer in order); M2 and M3 four publishers at QoS 1 and 2, acknowledged publishes per second; M4
# 10,000 idle MQTT connections with one subscription each, server RSS per connection.
mqtt_idle() {  # mqtt_idle PORT PID -> bytes of server RSS per connection
    python3 - "$@" <<'PY'
import resource, socket, struct, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def rss(pid):
    return int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")).split()[1])
def field(text):
    return struct.pack("!H", len(text)) + text
def packet(first, body):
    return bytes([first, len(body)]) + body
before = rss(pid)
sockets = []
for i in range(10000):
    s = socket.create_connection(("127.0.0.1", port))
    topic = b"idle/%d" % i
    s.sendall(packet(0x10, field(b"MQTT") + bytes([4, 2, 0, 0]) + field(b"idle-%d" % i))
              + packet(0x82, struct.pack("!H", 1) + field(topic) + b"\0"))
    sockets.append(s)
for s in sockets:
    data = b""
    while len(data) < 9:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("a connection closed before its SUBACK")
        data += chunk
time.sleep(0.5)
print("%.0f" % ((rss(pid) - before) * 1024 / 10000))
for s in sockets: s.close()
PY
}
mqtt_scenarios() {
    command -v mosquitto >/dev/null || { echo "the MQTT scenarios need mosquitto (apt-get install mosquitto)" >&2; exit 1; }
    local mqtt_port=18830 mosquitto_port=18831 tcp_port=17441
    # No in-flight limit: Mosquitto's default (20 QoS 1 or 2 messages per client) closes a publisher that keeps a
    # window of 100 QoS 2 publishes, which fanoutd allows; neither server then bounds them.
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_connections -1\nmax_queued_messages 0\n%s\n' \
        $mosquitto_port "max_inflight_messages 0" >"$work/mosquitto.conf"
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_connections -1\n' $((mosquitto_port + 10)) \
        >"$work/mosquitto-idle.conf"
    for run in $(seq "$runs"); do  # M4 first, each server fresh
        FANOUTD_MAX_CONNECTIONS=10100 FANOUTD_MQTT_LISTEN=127.0.0.1:$((mqtt_port + 10)) taskset -c 0 \
            "$bin/fanoutd" --listen 127.0.0.1:$((tcp_port + 10)) --log-level warning 2>"$work/m4.log" &
        pid=$!
        wait_listening $((mqtt_port + 10)); sleep 0.5
        mqtt_idle $((mqtt_port + 10)) $pid >>"$work/m4-f"
        kill $pid; wait $pid 2>/dev/null || true
        taskset -c 0 mosquitto -c "$work/mosquitto-idle.conf" >"$work/m4m.log" 2>&1 &
        pid=$!
        wait_listening $((mosquitto_port + 10)); sleep 0.5
        mqtt_idle $((mosquitto_port + 10)) $pid >>"$work/m4-m"
        kill $pid; wait $pid 2>/dev/null || true
    done
    FANOUTD_MAX_CONNECTIONS=10100 FANOUTD_MQTT_LISTEN=127.0.0.1:$mqtt_port taskset -c 0 "$bin/fanoutd" \
        --listen 127.0.0.1:$tcp_port --log-level warning 2>"$work/fanoutd-mqtt.log" &
    local fanoutd=$!
    taskset -c 0 mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 &
    local mosquitto=$!
    wait_listening $mqtt_port; wait_listening $mosquitto_port
    local M1="--publishers 1 --subscribers 100 --subjects 1 --messages 50000"
    local Q="--publishers 4 --subscribers 0 --subjects 1 --messages 200000"
    for run in $(seq "$runs"); do
        # shellcheck disable=SC2086
        if [ $((run % 2)) = 1 ]; then
            measure $fanoutd delivered_per_s delivered "$work/m1-f" $mqtt_port --protocol mqtt $M1 >/dev/null
            measure $mosquitto delivered_per_s delivered "$work/m1-m" $mosquitto_port --protocol mqtt $M1 >/dev/null
            measure $fanoutd delivered_per_s delivered "$work/m1-t" $tcp_port $M1 >/dev/null
        else
            measure $fanoutd delivered_per_s delivered "$work/m1-t" $tcp_port $M1 >/dev/null
            measure $mosquitto delivered_per_s delivered "$work/m1-m" $mosquitto_port --protocol mqtt $M1 >/dev/null
            measure $fanoutd delivered_per_s delivered "$work/m1-f" $mqtt_port --protocol mqtt $M1 >/dev/null
        fi
        for qos in 1 2; do
            # shellcheck disable=SC2086
            if [ $((run % 2)) = 1 ]; then
                measure $fanoutd published_per_s published "$work/m$((qos + 1))-f" $mqtt_port --protocol mqtt --mqtt-qos $qos $Q >/dev/null
                measure $mosquitto published_per_s published "$work/m$((qos + 1))-m" $mosquitto_port --protocol mqtt --mqtt-qos $qos $Q >/dev/null
            else
                measure $mosquitto published_per_s published "$work/m$((qos + 1))-m" $mosquitto_port --protocol mqtt --mqtt-qos $qos $Q >/dev/null
                measure $fanoutd published_per_s published "$work/m$((qos + 1))-f" $mqtt_port --protocol mqtt --mqtt-qos $qos $Q >/dev/null
            fi
        done
    done
    row "M1 fan-out 1x100 QoS0" delivered_per_s "$work/m1-f" "$work/m1-m" mosquitto
    row "M1 mqtt vs own proto" delivered_per_s "$work/m1-f" "$work/m1-t" "fanoutd tcp"
    row "M2 QoS1 4 publishers" published_per_s "$work/m2-f" "$work/m2-m" mosquitto
    row "M3 QoS2 4 publishers" published_per_s "$work/m3-f" "$work/m3-m" mosquitto
    printf "$format" "M4 idle 10k mqtt" bytes/conn "$(median <"$work/m4-f")" "$(median <"$work/m4-m")" mosquitto \
        "$(ratio "$(median <"$work/m4-m")" "$(median <"$work/m4-f")")" - - - -
    echo "M1 mqtt vs own proto: cpu o/f is fanoutd's own protocol's CPU per delivery over its MQTT listener's (the"
    echo "target: MQTT within 1.3x, so at least 0.77x here); the other rows as below."
}

# Memory first, each server started fresh for each run (later scenarios leave freed heap that idle
# connections would reuse unseen): RSS at start, read once the port listens and before any client
# connects, then F, server RSS per idle subscribed connection, 10,000 connections subscribed to one subject
# each (idle.0 ... idle.9999).
idle() {  # idle PORT PID PROTOCOL -> bytes of server RSS per connection
    python3 - "$@" <<'PY'
import resource, socket, sys, time
port, pid, protocol = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if hard < 10100:
    sys.exit("F needs an open-files limit of at least 10100 (ulimit -n)")
def rss(pid):
    return int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")).split()[1])
subscribe, expect = ((b"SUBSCRIBE idle.%d\r\n", b"subscribe") if protocol == "redis" else (b"SUB idle.%d\n", b"+OK"))
before = rss(pid)
sockets = []
for i in range(10000):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(subscribe % i)
    sockets.append(s)
for s in sockets:
    data = b""
    while expect not in data:
        data += s.recv(4096)
time.sleep(0.5)
print("%.0f" % ((rss(pid) - before) * 1024 / 10000))
for s in sockets: s.close()
PY
}
servers=(fanoutd redis C)
[ "$only" = mqtt ] && runs_memory=0 || runs_memory=$runs
for run in $(seq "$runs_memory"); do
    # The order rotates from run to run, as the throughput pairs alternate.
    for index in 0 1 2; do
        name=${servers[$(((index + run) % 3))]}
        port=$((17430 + index))
        start_server "$name" $port "$work/memory.log"
        pid=$server_pid
        wait_listening $port
        sleep 0.5
        rss_kib "$pid" >>"$work/start-$name"
        idle $port "$pid" "$([ "$name" = redis ] && echo redis || echo fanout)" >>"$work/idle-$name"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
    done
done
[ "$only" = mqtt ] || for name in redis C; do
    printf "$format" "RSS at start" KiB "$(median <"$work/start-fanoutd")" "$(median <"$work/start-$name")" "$name" \
        "$(ratio "$(median <"$work/start-$name")" "$(median <"$work/start-fanoutd")")" - - - -
done
 [ "$only" = mqtt ] || for name in redis C; do
    printf "$format" "F idle 10k conns" bytes/conn "$(median <"$work/idle-fanoutd")" "$(median <"$work/idle-$name")" \
        "$name" "$(ratio "$(median <"$work/idle-$name")" "$(median <"$work/idle-fanoutd")")" - - - -
done

if [ "$only" != mqtt ]; then
start_server fanoutd $fanout_port "$work/fanoutd.log"
fanoutd_pid=$server_pid
start_server redis $redis_port "$work/redis.log"
redis_pid=$server_pid
start_server C $c_port "$work/c.log"
c_pid=$server_pid
for _ in $(seq 100); do
    "$bin/fanout" ping --server 127.0.0.1:$fanout_port -c 1 >/dev/null 2>&1 \
        && "$bin/fanout" ping --server 127.0.0.1:$c_port -c 1 >/dev/null 2>&1 \
        && redis-cli -p $redis_port ping >/dev/null 2>&1 && break
    sleep 0.1
done
fi

A="--publishers 1 --subscribers 100 --subjects 1 --messages 400000"
bench() {  # bench PORT ARGUMENTS... -> one JSON line
    # shellcheck disable=SC2086
    taskset -c 1 "$bin/fanout" bench --server "127.0.0.1:$1" --payload 100 --window 100 --json "${@:2}"
}
field() {  # field FIGURE INDEX <json: the figure from results[INDEX]
    python3 -c 'import json,sys
r = json.load(sys.stdin)["results"][int(sys.argv[2])]
print(r["latency_us"]["p99"] if sys.argv[1] == "p99_us" else r[sys.argv[1]])' "$1" "$2"
}
# measure SERVER_PID FIGURE UNIT FILE PORT ARGUMENTS...: one bench run, timed on both sides. Appends to
# FILE.figure the figure, to FILE.ns the server's CPU nanoseconds per UNIT (delivered, or published for runs
# without subscribers), to FILE.busy the generator's CPU time as a percentage of its wall time; prints the
# JSON line.
measure() {
    local pid=$1 figure=$2 unit=$3 file=$4 port=$5 before after
    shift 5
    before=$(cpu_ticks "$pid")
    /usr/bin/time -f '%e %U %S' -o "$file.time" taskset -c 1 "$bin/fanout" bench --server "127.0.0.1:$port" \
        --payload 100 --window 100 --json "$@" >"$file.json"
    after=$(cpu_ticks "$pid")
    python3 - "$figure" "$unit" "$((after - before))" "$clock_ticks" "$file" <<'PY'
import json, sys
figure, unit, ticks, clock_ticks, file = sys.argv[1:]
r = json.load(open(file + ".json"))["results"][0]
count = int(r[unit])
wall, user, system = map(float, open(file + ".time").read().split()[-3:])
with open(file + ".figure", "a") as out:
    out.write("%s\n" % (r["latency_us"]["p99"] if figure == "p99_us" else r[figure]))
with open(file + ".ns", "a") as out:
    out.write("%.1f\n" % (int(ticks) / int(clock_ticks) * 1e9 / count if count else 0))
with open(file + ".busy", "a") as out:
    out.write("%.0f\n" % ((user + system) / wall * 100 if wall else 0))
PY
    cat "$file.json"
}
: >"$work/notes"
row() {  # row NAME FIGURE FANOUTD_FILE OTHER_FILE OTHER_NAME: medians of two measure() series
    local f o nf no bf bo mark=""
    f=$(median <"$3.figure"); o=$(median <"$4.figure")
    nf=$(median <"$3.ns"); no=$(median <"$4.ns")
    bf=$(median <"$3.busy"); bo=$(median <"$4.busy")
    if python3 -c "import sys; sys.exit(0 if max(float(sys.argv[1]), float(sys.argv[2])) > 90 else 1)" "$bf" "$bo"
    then
        mark="*"
        echo "$1" >>"$work/notes"
    fi
    printf "$format" "$1" "$2" "$(printf %.0f "$f")" "$(printf %.0f "$o")" "$5" "$(ratio "$f" "$o")$mark" \
        "$(printf %.0f "$nf")" "$(printf %.0f "$no")" "$(ratio "$no" "$nf")" "$(printf '%.0f/%.0f' "$bf" "$bo")"
}

if [ "$only" = mqtt ]; then
    mqtt_scenarios
    echo "ns/unit: server CPU time (user + system) per delivery or acknowledged publish; medians of $runs runs"
    echo "cpu o/f: the other server's CPU per unit over fanoutd's (above 1: fanoutd does the same work for less)"
    if [ -s "$work/notes" ]; then
        echo "* generator-bound: in $(paste -sd, "$work/notes" | sed 's/,/, /g'), the load generator's core was" \
            "over 90% busy, so the throughput ratio is partly the generator's; read it from ns/unit (cpu o/f)."
    fi
    exit 0
fi

# A–D and G against redis.
scenarios=(
    "A fan-out 1x100|delivered_per_s|delivered|$A"
    "B 1000 subjects|delivered_per_s|delivered|--publishers 1 --subscribers 1000 --subjects 1000 --messages 200000"
    "C publish only|published_per_s|published|--publishers 4 --subscribers 0 --messages 1000000"
    "D fan-out 1x5000|delivered_per_s|delivered|--publishers 1 --subscribers 5000 --subjects 1 --messages 20000"
    "G A, 25 of 100 stalled|delivered_per_s|delivered|--publishers 1 --subscribers 75 --stalled 25 --subjects 1 --messages 400000"
)
G_BASE="--publishers 1 --subscribers 75 --subjects 1 --messages 400000"
# The machine's speed drifts over seconds, so each pair of measurements swaps its order from one run to the
# next: a drift then favours each side equally often instead of always the one measured first.
for scenario in "${scenarios[@]}"; do
    IFS='|' read -r name figure unit arguments <<<"$scenario"
    key=${name:0:1}
    rm -f "$work/$key-f".* "$work/$key-r".*
    for run in $(seq "$runs"); do
        if [ "$key" = G ] && [ $((run % 2)) = 1 ]; then
            # The same 75 healthy subscribers with nobody stalled: G's own baseline.
            # shellcheck disable=SC2086
            measure "$fanoutd_pid" delivered_per_s delivered "$work/g0" $fanout_port $G_BASE >/dev/null
        fi
        [ "$key" = G ] && echo 5 >"/proc/$fanoutd_pid/clear_refs"  # reset the peak-RSS mark
        # shellcheck disable=SC2086
        if [ $((run % 2)) = 1 ]; then
            fanoutd_result=$(measure "$fanoutd_pid" "$figure" "$unit" "$work/$key-f" $fanout_port $arguments)
            measure "$redis_pid" "$figure" "$unit" "$work/$key-r" $redis_port --protocol redis $arguments >/dev/null
        else
            measure "$redis_pid" "$figure" "$unit" "$work/$key-r" $redis_port --protocol redis $arguments >/dev/null
            fanoutd_result=$(measure "$fanoutd_pid" "$figure" "$unit" "$work/$key-f" $fanout_port $arguments)
        fi
        if [ "$key" = G ]; then
            field max_delivery_gap_ms 0 <<<"$fanoutd_result" >>"$work/gap"
            awk '/VmHWM/ { print $2 }' "/proc/$fanoutd_pid/status" >>"$work/hwm"
            if [ $((run % 2)) = 0 ]; then
                # shellcheck disable=SC2086
                measure "$fanoutd_pid" delivered_per_s delivered "$work/g0" $fanout_port $G_BASE >/dev/null
            fi
        fi
    done
    row "$name" "$figure" "$work/$key-f" "$work/$key-r" redis
done

# E: latency. Both servers are measured at the same time, by two generators on core 1: on a shared
# virtual machine, vCPU steal and wake-up latency make a p99 at this light load swing several-fold from one
# ten-second window to the next, and measuring the two side by side in time gives both the same weather.
# Each run's p99 is set by a handful of stalls, so E takes twice as many runs as the others, and the
# generator started first (whose paced publishes then tend to reach core 0 first) alternates. Paced, it is
# no throughput row: no CPU columns.
E="--publishers 1 --subscribers 50 --subjects 1 --messages 20000 --rate 2000"
: >"$work/ef"; : >"$work/er"
for run in $(seq $((2 * runs))); do
    # shellcheck disable=SC2086
    if [ $((run % 2)) = 1 ]; then
        bench $fanout_port $E >"$work/e1" & first=$!
        bench $redis_port --protocol redis $E >"$work/e2" & second=$!
    else
        bench $redis_port --protocol redis $E >"$work/e2" & first=$!
        bench $fanout_port $E >"$work/e1" & second=$!
    fi
    wait $first $second
    field p99_us 0 <"$work/e1" >>"$work/ef"
    field p99_us 0 <"$work/e2" >>"$work/er"
done
printf "$format" "E p99 at 2k/s" p99_us "$(median <"$work/ef")" "$(median <"$work/er")" redis \
    "$(ratio "$(median <"$work/er")" "$(median <"$work/ef")")" - - - -

# D against A: wide fan-out must not collapse (at least half of A's rate).
row "D/A no collapse" delivered_per_s "$work/D-f" "$work/A-f" "fanoutd A"

# G against the same 75 healthy subscribers with nobody stalled (measured alternately), fanoutd only.
row "G vs 75, none stalled" delivered_per_s "$work/G-f" "$work/g0" "fanoutd"
printf '%-22s %-15s %12.0f %12s   (max_pending_bytes 8 MiB per stalled peer)\n' "G peak server RSS" KiB \
    "$(median <"$work/hwm")" ""
printf '%-22s %-15s %12.1f %12s   (longest wait for any delivery)\n' "G delivery gap" ms "$(median <"$work/gap")" ""

# H: scenario A against the plain-C libevent server, alternating with fanoutd.
rm -f "$work/H-f".* "$work/H-c".*
for run in $(seq "$runs"); do
    # shellcheck disable=SC2086
    if [ $((run % 2)) = 1 ]; then
        measure "$fanoutd_pid" delivered_per_s delivered "$work/H-f" $fanout_port $A >/dev/null
        measure "$c_pid" delivered_per_s delivered "$work/H-c" $c_port $A >/dev/null
    else
        measure "$c_pid" delivered_per_s delivered "$work/H-c" $c_port $A >/dev/null
        measure "$fanoutd_pid" delivered_per_s delivered "$work/H-f" $fanout_port $A >/dev/null
    fi
done
row "H A vs plain C" delivered_per_s "$work/H-f" "$work/H-c" "C"

echo "ratio: fanoutd's advantage (higher is better for fanoutd; for latency and memory, other/fanoutd)"
echo "ns/unit: server CPU time (user + system) per delivery, per acknowledged publish in C; medians of $runs runs"
echo "cpu o/f: the other server's CPU per unit over fanoutd's (above 1: fanoutd does the same work for less)"
echo "gen %: the load generator's CPU time over its wall time, in fanoutd's runs / in the other's (medians)"
if [ -s "$work/notes" ]; then
    echo "* generator-bound: in $(paste -sd, "$work/notes" | sed 's/,/, /g'), the load generator's core was over 90%" \
        "busy, so the throughput ratio is partly the generator's; read the comparison from ns/unit (cpu o/f)."
fi
