#!/usr/bin/env bash
# Installs the Debian package on this machine (as root, with dpkg), checks it, then removes and purges it
# and checks that nothing of it is left. `make test-deb` builds the package first; CI runs it.
#   scripts/test-deb.sh [fanout_<version>_<arch>.deb]
# Checks: lintian has no errors; the files are where they belong; the fanout account and its directories
# exist; fanoutd --check-config accepts /etc/fanout/fanoutd.yaml; systemd-analyze verify accepts the units;
# the service is enabled but not started; the packaged binaries serve a session; fanoutd, fanout, INFO,
# the package and the man pages say one version; removal stops and removes, purge leaves no file behind.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(scripts/version.sh)
deb="${1:-fanout_${version}_$(dpkg --print-architecture).deb}"
if [ "$(id -u)" != 0 ]; then
    echo "test-deb: skipped: installing a package needs root" >&2
    exit 0
fi
test -f "$deb" || { echo "test-deb: no $deb (make deb builds it)" >&2; exit 1; }
failures=0
fail() { echo "test-deb: FAIL: $*" >&2; failures=$((failures + 1)); }
check() { local what="$1"; shift; if "$@"; then echo "ok: $what"; else fail "$what"; fi; }

# Every path of the system the package could touch, without the package manager's own records.
snapshot() {
    { find /etc /lib/systemd /usr/bin /usr/lib/sysusers.d /usr/lib/tmpfiles.d /usr/share/man /usr/share/doc \
         /usr/share/bash-completion /usr/share/zsh /usr/share/fish /var/lib /run/fanout 2>/dev/null || true; } \
        | grep -vE '^/var/lib/(dpkg|apt|ucf|systemd/deb-systemd-helper-enabled/.*(dpkg|apt))|^/etc/(passwd|group|shadow|gshadow)-?$|^/etc/ld.so.cache' \
        | sort
}

dpkg -s fanout >/dev/null 2>&1 && dpkg --purge fanout >/dev/null
before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot > "$before"

echo "== lintian"
# spelling-error-in-binary (informational) quotes strings of the statically linked ICU and Foundation.
lintian_output=$(lintian --allow-root --display-info --display-experimental --pedantic "$deb" 2>&1 || true)
echo "${lintian_output:-(nothing)}" | grep -v spelling-error-in-binary || true
check "lintian reports no errors" test -z "$(echo "$lintian_output" | grep '^E:' || true)"

echo "== install"
dpkg -i "$deb"
expected=(
    /usr/bin/fanoutd /usr/bin/fanout
    /lib/systemd/system/fanoutd.service /lib/systemd/system/fanoutd.socket /lib/systemd/system/fanoutd-http.socket
    /usr/lib/sysusers.d/fanout.conf /usr/lib/tmpfiles.d/fanout.conf /etc/fanout/fanoutd.yaml
    /usr/share/man/man8/fanoutd.8.gz /usr/share/man/man1/fanout.1.gz
    /usr/share/bash-completion/completions/fanout /usr/share/zsh/vendor-completions/_fanout
    /usr/share/fish/vendor_completions.d/fanout.fish
    /usr/share/doc/fanout/copyright /usr/share/doc/fanout/changelog.gz /usr/share/doc/fanout/README.md.gz
    /usr/share/doc/fanout/docs/protocol.md.gz /usr/share/doc/fanout/docs/configuration.md.gz
)
listed=$(dpkg -L fanout)
for path in "${expected[@]}"; do
    check "$path is installed" bash -c "grep -qx '$path' <<< \"\$0\" && test -e '$path'" "$listed"
done
check "/etc/fanout/fanoutd.yaml is a conffile" grep -q '^ /etc/fanout/fanoutd.yaml ' <(dpkg-query -W -f='${Conffiles}\n' fanout)
check "the fanout account exists" id fanout
check "/var/lib/fanout belongs to fanout" test "$(stat -c %U /var/lib/fanout 2>/dev/null)" = fanout
check "/run/fanout belongs to fanout" test "$(stat -c %U /run/fanout 2>/dev/null)" = fanout
check "fanoutd --check-config accepts /etc/fanout/fanoutd.yaml" \
    bash -c 'fanoutd --check-config /etc/fanout/fanoutd.yaml >/dev/null'
check "the packaged config serves HTTP on loopback only" \
    grep -qx 'http_listen: 127.0.0.1:7412' <(fanoutd --config /etc/fanout/fanoutd.yaml --check-config)
verify=$(systemd-analyze verify --man=no /lib/systemd/system/fanoutd.service /lib/systemd/system/fanoutd.socket \
         /lib/systemd/system/fanoutd-http.socket 2>&1) && status=0 || status=$?
echo "${verify:-systemd-analyze verify: no remarks}"
check "systemd-analyze verify accepts the units" test "$status" = 0 -a -z "$verify"
check "fanoutd.service is enabled" test -L /etc/systemd/system/multi-user.target.wants/fanoutd.service
check "the sockets are not enabled" test ! -e /etc/systemd/system/sockets.target.wants/fanoutd.socket
if [ -d /run/systemd/system ]; then
    check "fanoutd.service was not started" bash -c '! systemctl is-active --quiet fanoutd.service'
fi

echo "== one version"
check "fanoutd --version is $version" test "$(fanoutd --version)" = "$version"
check "fanout --version is $version" test "$(fanout --version)" = "$version"
check "the package's version is $version" test "$(dpkg-query -W -f='${Version}' fanout)" = "$version"
for page in /usr/share/man/man8/fanoutd.8.gz /usr/share/man/man1/fanout.1.gz; do
    check "$page documents $version" grep -q "\"fanout $version\"" <(zcat "$page" | head -1)
done

echo "== the packaged binaries serve"
log=$(mktemp)
fanoutd --config /etc/fanout/fanoutd.yaml --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2> "$log" &
daemon=$!
port=""
for _ in $(seq 50); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
done
check "fanoutd listens" test -n "$port"
if [ -n "$port" ]; then
    info=$(fanout info --server "127.0.0.1:$port" || true)
    check "INFO's version is $version" grep -qE "version[=: ]+$version" <<< "$info"
    check "fanout pub reaches the server" test "$(fanout pub --server "127.0.0.1:$port" x hello)" = 0
fi
kill -TERM "$daemon"
wait "$daemon" || true
check "the packaged configuration keeps history in /var/lib/fanout/history" \
    grep -q '^clean 1$' /var/lib/fanout/history/state
rm -f "$log"

echo "== remove"
dpkg --remove fanout
check "remove takes the binaries" test ! -e /usr/bin/fanoutd -a ! -e /usr/bin/fanout
check "remove takes the units" test ! -e /lib/systemd/system/fanoutd.service
check "remove keeps the configuration" test -e /etc/fanout/fanoutd.yaml

echo "== purge"
dpkg --purge fanout
check "purge takes the configuration" test ! -e /etc/fanout
check "purge takes the state and runtime directories" test ! -e /var/lib/fanout -a ! -e /run/fanout
check "purge takes the unit's enablement" test ! -e /etc/systemd/system/multi-user.target.wants/fanoutd.service
check "dpkg no longer knows the package" bash -c '! dpkg -s fanout >/dev/null 2>&1'
snapshot > "$after"
left=$(comm -13 "$before" "$after" || true)
echo "${left:+left behind or new since the install: }${left:-nothing left behind}"
check "no path naming fanout is left behind" test -z "$(grep fanout <<< "$left" || true)"
# The account stays (Debian keeps system accounts so that no later user inherits their files).
id fanout >/dev/null 2>&1 && echo "note: the fanout account stays after purge, as Debian keeps system accounts"

if [ "$failures" -gt 0 ]; then
    echo "test-deb: $failures check(s) failed"
    exit 1
fi
echo "test-deb: every check passed"
