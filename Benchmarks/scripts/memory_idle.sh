#!/bin/bash
# RSS at start and server RSS per idle subscribed connection (10,000 of them), as compare.sh measures memory,
# for one fanoutd binary: Benchmarks/scripts/memory_idle.sh BINARY PORT -> "start_KiB bytes_per_connection".
bin=$1; port=$2
$bin --listen 127.0.0.1:$port 2>/dev/null &
pid=$!
for i in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
sleep 0.5
start=$(awk '/^VmRSS/ { print $2 }' /proc/$pid/status)
per=$(python3 - $port $pid <<'PY'
import resource, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def rss(pid):
    return int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")).split()[1])
before = rss(pid)
sockets = []
for i in range(10000):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"SUB idle.%d\n" % i)
    sockets.append(s)
for s in sockets:
    data = b""
    while b"+OK" not in data:
        data += s.recv(4096)
time.sleep(0.5)
print("%.0f" % ((rss(pid) - before) * 1024 / 10000))
for s in sockets: s.close()
PY
)
kill $pid; wait $pid 2>/dev/null
echo "$start $per"
