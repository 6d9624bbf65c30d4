#!/usr/bin/env bash
# LAN discovery, end to end, across real network namespaces (run as root; scripts/test.sh runs it).
#
# Builds N hosts: each its own network namespace with an eth0 on a bridge that lives in a namespace of its own,
# its own D-Bus system bus, its own avahi-daemon, and a real `continuum-node run` with no --peer. Checks that a
# post with a photo made on host 1 reaches every other host with identical photo bytes, and that a comment made
# on host N reaches host 1. The machine's real interfaces and its root network namespace are never touched:
# nothing here multicasts outside the namespaces it creates.
#
# Usage: scripts/netns-e2e.sh [--hosts N] [--scenarios] [--only-scenarios] [--bench [RUNS]] [--bin PATH]
#   --hosts N          hosts in the main test (default 3)
#   --scenarios        also: (a) a node started with no daemon (then a late daemon, then a daemon restart);
#                      (b) two groups (one joined by invite, one a network key) and a stranger on one bridge,
#                      and a name collision; (c) link-local IPv6 only, then
#                      dual stack (IPv4 preferred);
#                      (d) a TXT record changed in place; (e) an open group announced, joined with
#                      --join-open and with join NAME
#   --only-scenarios   the scenarios without the main test
#   --bench [RUNS]     time from node start to first sync, and from post to photo on every host (RUNS, default 5)
#   --bin PATH         the continuum-node binary (default: the debug build, `swift build --show-bin-path`)
#   --show-status      print host 1's `status` and `status --json` at the end of the main test
#
# Teardown (on success, failure or Ctrl-C) kills only the processes this script started, by PID, and deletes
# only the namespaces it created. Namespace names carry this script's PID, so runs never collide.
set -euo pipefail
cd "$(dirname "$0")/.."

hosts=3
scenarios=0
main=1
bench=0
bench_runs=5
bin=""
show_status=0
while (($#)); do
    case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --scenarios) scenarios=1; shift ;;
    --only-scenarios) scenarios=1; main=0; shift ;;
    --bench)
        bench=1; main=0; shift
        if (($#)) && [[ "$1" =~ ^[0-9]+$ ]]; then bench_runs="$1"; shift; fi
        ;;
    --bin) bin="$2"; shift 2 ;;
    --show-status) show_status=1; shift ;;
    *) echo "netns-e2e: unknown argument '$1' (see the header of $0)" >&2; exit 64 ;;
    esac
done
if ! [[ "$hosts" =~ ^[0-9]+$ ]] || ((hosts < 2 || hosts > 50)); then
    echo "netns-e2e: --hosts must be 2 to 50" >&2
    exit 64
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "netns-e2e: needs root (network namespaces, bridges, per-namespace daemons); run it with sudo" >&2
    exit 1
fi
for tool in ip dbus-daemon avahi-daemon avahi-browse sha256sum setsid python3 /usr/bin/python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "netns-e2e: '$tool' is missing; run scripts/setup.sh" >&2
        exit 1
    fi
done
if [ -z "$bin" ]; then bin="$(swift build --show-bin-path)/continuum-node"; fi
if [ ! -x "$bin" ]; then
    echo "netns-e2e: no binary at $bin; build it first (swift build --product continuum-node)" >&2
    exit 1
fi
bin="$(realpath "$bin")"
# Posted with --keep-metadata: the photo (which has a GPS position) travels byte for byte, so each host's copy can be
# compared with this file.
fixture="$PWD/Tests/Fixtures/waterfall.jpg"
fixture_hash="$(sha256sum "$fixture" | cut -d' ' -f1)"

state="$(mktemp -d /tmp/continuum-netns.XXXXXX)"
prefix="cn$$"
namespaces=() # created by this run, deleted on exit
pidfiles=()   # each holds the PID of one process this run started
failed=0
ip_mode=v4 # v4: IPv4 only (IPv6 off); v6: link-local IPv6 only; dual: both

log() { printf '%s netns-e2e: %s\n' "$(date +%T.%3N)" "$*" >&2; }

teardown() {
    local status=$?
    set +e
    for pidfile in "${pidfiles[@]}"; do
        [ -s "$pidfile" ] && kill -TERM "$(cat "$pidfile")" 2>/dev/null
    done
    local deadline=$((SECONDS + 5))
    for pidfile in "${pidfiles[@]}"; do
        [ -s "$pidfile" ] || continue
        local pid
        pid="$(cat "$pidfile")"
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
    done
    for ns in "${namespaces[@]}"; do ip netns delete "$ns" 2>/dev/null; done
    if ((status != 0 || failed)); then
        log "FAILED; logs kept in $state"
    else
        rm -rf "$state"
    fi
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

fail() {
    failed=1
    log "FAIL: $*"
    exit 1
}

# Polls a command until it succeeds: wait_for SECONDS WHAT COMMAND...
wait_for() {
    local timeout="$1" what="$2"
    shift 2
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail "timed out after ${timeout}s waiting for: $what"
        sleep 0.1
    done
}

# Runs a command in a new process in namespace $1 with /run bound to $2, detached, and records its PID.
# spawn NS RUNDIR PIDFILE LOG COMMAND...
spawn() {
    local ns="$1" rundir="$2" pidfile="$3" logfile="$4"
    shift 4
    pidfiles+=("$pidfile")
    # `ip netns exec` gives the command a private mount namespace: the bind mount over /run stays in it.
    ip netns exec "$ns" setsid sh -c 'echo $$ > "$0"; mount --bind "$1" /run || exit 1; shift 2; exec "$@"' \
        "$pidfile" "$rundir" -- "$@" >"$logfile" 2>&1 </dev/null &
    wait_for 5 "pid of $*" test -s "$pidfile"
}

stop_pidfile() {
    local pidfile="$1" pid
    [ -s "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 5))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
    : >"$pidfile"
}

# A world: a bridge namespace, and hosts added to it. World names keep scenarios apart.
new_world() {
    world="$1"
    local br="${prefix}${world}br"
    ip netns add "$br"
    namespaces+=("$br")
    ip -n "$br" link add br0 type bridge mcast_snooping 0
    ip -n "$br" link set br0 up
    mkdir -p "$state/$world"
}

# Stops what the current world's hosts run (nodes first), and deletes its namespaces.
end_world() {
    local pidfile ns kept=()
    for pidfile in "$state/$world"/h*/node.pid "$state/$world"/h*/avahi.pid "$state/$world"/h*/dbus.pid; do
        [ -e "$pidfile" ] && stop_pidfile "$pidfile"
    done
    for ns in "${namespaces[@]}"; do
        if [[ "$ns" == "${prefix}${world}"h* || "$ns" == "${prefix}${world}br" ]]; then
            ip netns delete "$ns"
        else
            kept+=("$ns")
        fi
    done
    namespaces=("${kept[@]}")
}

ns_of() { echo "${prefix}${world}h$1"; }
dir_of() { echo "$state/$world/h$1"; }
bus_of() { echo "unix:path=$(dir_of "$1")/run/dbus/system_bus_socket"; }

add_host() {
    local i="$1" ns dir
    ns="$(ns_of "$i")"
    dir="$(dir_of "$i")"
    ip netns add "$ns"
    namespaces+=("$ns")
    if [ "$ip_mode" != v4 ]; then
        # Link-local IPv6 (no duplicate address detection delay): what discovery must handle with the
        # interface index.
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
    else
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    fi
    ip -n "${prefix}${world}br" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "${prefix}${world}br" link set "v$i" master br0 up
    [ "$ip_mode" = v6 ] || ip -n "$ns" addr add "10.77.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "$dir/run/dbus" "$dir/run/avahi-daemon" "$dir/etc"
    cat >"$dir/etc/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
    cat >"$dir/etc/avahi.conf" <<EOF
[server]
host-name=${world}h$i
use-ipv4=$([ "$ip_mode" = v6 ] && echo no || echo yes)
use-ipv6=$([ "$ip_mode" = v4 ] && echo no || echo yes)
allow-interfaces=eth0
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=no
[reflector]
enable-reflector=no
EOF
}

start_dbus() {
    local i="$1" dir
    dir="$(dir_of "$i")"
    rm -f "$dir/run/dbus/system_bus_socket"
    spawn "$(ns_of "$i")" "$dir/run" "$dir/dbus.pid" "$dir/dbus.log" \
        dbus-daemon --nofork --nopidfile --config-file="$dir/etc/dbus.conf"
    wait_for 10 "D-Bus on host $i" test -S "$dir/run/dbus/system_bus_socket"
}

start_avahi() {
    local i="$1" dir
    dir="$(dir_of "$i")"
    rm -f "$dir/run/avahi-daemon/pid" "$dir/run/avahi-daemon/socket"
    spawn "$(ns_of "$i")" "$dir/run" "$dir/avahi.pid" "$dir/avahi.log" \
        avahi-daemon -f "$dir/etc/avahi.conf" --no-chroot --no-drop-root --no-rlimits --no-proc-title
    wait_for 10 "avahi-daemon on host $i" grep -q "Server startup complete" "$dir/avahi.log"
}

# The CLI on host $1's data directory (no network needed: it talks to the node over a Unix socket).
cli() {
    local i="$1"
    shift
    "$bin" "$@" --data "$(dir_of "$i")/data"
}

# init_node I [NAME]: a node in the network group "e2e" (every node of the scenarios that share everything).
init_node() { cli "$1" init --name "${2:-host $1}" --network e2e >/dev/null; }
# init_alone I [NAME]: a node in no group (scenario b makes its groups itself).
init_alone() { cli "$1" init --name "${2:-host $1}" >/dev/null; }

# start_node I [ARGS...]: `continuum-node run` in host I's namespace, on its bus, stdout in node.out and stderr in
# node.log; waits until it listens.
start_node() {
    local i="$1" dir
    shift
    dir="$(dir_of "$i")"
    : >"$dir/node.out"
    spawn "$(ns_of "$i")" "$dir/run" "$dir/node.pid" "$dir/node.log" \
        env "DBUS_SYSTEM_BUS_ADDRESS=$(bus_of "$i")" "OUT=$dir/node.out" \
        sh -c 'exec "$0" "$@" > "$OUT"' "$bin" run --data "$dir/data" --port 7420 --no-remembered-peers \
        --log-level info "$@"
    wait_for 20 "node on host $i listening" grep -q "^listening on" "$dir/node.out"
}

has_post() { cli "$1" show "$2" --json >/dev/null 2>&1; }
has_photo() { test -f "$(dir_of "$1")/data/photos/${2:0:2}/$2"; }
has_comment() { cli "$1" show "$2" --json 2>/dev/null | grep -q "$3"; }
discovery_json() { cli "$1" status --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["discovery"]))'; }
discovery_field() { cli "$1" status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['discovery']['$2'])"; }
discovery_is() { [ "$(discovery_field "$1" state)" = "$2" ]; }
twin_names_differ() {
    local a b
    a="$(discovery_field 1 serviceName)"
    b="$(discovery_field 3 serviceName)"
    [[ "$a" == twin* && "$b" == twin* && "$a" != "$b" ]]
}
connected_at_least() {
    (($(cli "$1" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["peers"]["connected"])') >= $2))
}
node_id() { cli "$1" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["id"])'; }
connected_to() {
    cli "$1" peers --json | python3 -c 'import json,sys; sys.exit(0 if any(p["id"] == sys.argv[1] and p["state"] == "connected" for p in json.load(sys.stdin)["peers"]) else 1)' "$2"
}
other_networks_at_least() { (($(discovery_field "$1" otherNetworksSeen) >= $2)); }
peers_present_at_least() { (($(discovery_field "$1" peersPresent) >= $2)); }
# sessions_of I: how many peers host I has a session with now (the overlay keeps at most --max-peers, 8).
sessions_of() { cli "$1" peers --json | python3 -c 'import json,sys; print(sum(p["state"] == "connected" for p in json.load(sys.stdin)["peers"]))'; }
feed_count() { cli "$1" feed --json --limit 500 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["posts"]))'; }
photo_matches() {
    local file
    file="$(dir_of "$1")/data/photos/${fixture_hash:0:2}/$fixture_hash"
    [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$fixture_hash" ] && cmp -s "$file" "$fixture"
}

# Main: N hosts, discovery only.
main_test() {
    local n="$1" started posted
    log "main: $n hosts, each with its own D-Bus and avahi-daemon, nodes with no --peer"
    new_world "m"
    for i in $(seq 1 "$n"); do add_host "$i"; done
    for i in $(seq 1 "$n"); do start_dbus "$i"; done
    for i in $(seq 1 "$n"); do start_avahi "$i"; done
    for i in $(seq 1 "$n"); do init_node "$i"; done
    started=$(date +%s%N)
    for i in $(seq 1 "$n"); do start_node "$i"; done
    local post
    posted=$(date +%s%N)
    post="$(cli 1 post "$fixture" --keep-metadata --caption "Waterfall, from host 1")"
    for i in $(seq 2 "$n"); do
        wait_for 60 "the post on host $i" has_post "$i" "$post"
        wait_for 60 "the photo on host $i" has_photo "$i" "$fixture_hash"
        photo_matches "$i" || fail "host $i: the photo's bytes differ from the original"
    done
    local now
    now=$(date +%s%N)
    log "main: the post and its photo (identical bytes) reached hosts 2..$n $(((now - posted) / 1000000)) ms after the post, $(((now - started) / 1000000)) ms after the first node started"
    local comment
    comment="$(cli "$n" comment "$post" "Lovely, from host $n")"
    wait_for 60 "host $n's comment on host 1" has_comment 1 "$post" "$comment"
    local sessions=()
    for i in $(seq 1 "$n"); do
        discovery_is "$i" on || fail "host $i: discovery is not on: $(discovery_json "$i")"
        peers_present_at_least "$i" $((n - 1)) || fail "host $i: sees fewer than $((n - 1)) peers: $(discovery_json "$i")"
        # The overlay: every node finds every other, but keeps sessions with at most 8 (its neighbours).
        sessions+=("$(sessions_of "$i")")
        ((${sessions[-1]} >= 1 && ${sessions[-1]} <= 8)) || fail "host $i: ${sessions[-1]} sessions (1 ... 8 expected)"
    done
    log "main: sessions per host: ${sessions[*]}"
    grep -q "LAN discovery is off" "$(dir_of 1)/node.log" && fail "host 1 said discovery was off"
    if ((show_status)); then
        cli 1 status
        cli 1 status --json
        cli 1 peers
    fi
    end_world
    log "main: PASS ($n hosts; the comment from host $n reached host 1; every node sees $((n - 1)) peers)"
}

# (a) No daemon at start, then a late daemon, then a daemon restart.
late_daemon_test() {
    log "scenario a: a node with no D-Bus and no avahi-daemon, syncing over --peer; then a late daemon; then a restart"
    new_world "a"
    for i in 1 2 3; do add_host "$i"; done
    for i in 1 2; do start_dbus "$i"; start_avahi "$i"; done
    for i in 1 2 3; do init_node "$i"; done
    start_node 1
    start_node 2
    start_node 3 --peer 10.77.0.1:7420
    local line='LAN discovery is off: avahi-daemon not running (Daemon not running). Peers given with --peer HOST:PORT still work'
    wait_for 10 "host 3's line saying discovery is off" grep -qF "$line" "$(dir_of 3)/node.log"
    discovery_is 3 unavailable || fail "host 3: $(discovery_json 3)"
    [ "$(discovery_field 3 lastError)" = "avahi-daemon not running (Daemon not running)" ] ||
        fail "host 3: lastError: $(discovery_json 3)"
    local post
    post="$(cli 1 post "$fixture" --keep-metadata --caption "over --peer")"
    wait_for 30 "the post on host 3 over --peer" has_post 3 "$post"
    sleep 2.5 # retries happen meanwhile: still one line
    (($(grep -cF "LAN discovery is off" "$(dir_of 3)/node.log") == 1)) || fail "host 3 printed the line more than once"
    log "scenario a: no daemon: one line, and sync over --peer works"

    start_dbus 3
    start_avahi 3
    wait_for 20 "discovery on host 3 after the daemon started" discovery_is 3 on
    wait_for 20 "host 3 finds both peers" peers_present_at_least 3 2
    wait_for 20 "host 2 finds host 3" peers_present_at_least 2 2
    log "scenario a: a late daemon brought discovery up, without restarting the node"

    stop_pidfile "$(dir_of 3)/avahi.pid"
    wait_for 10 "host 3 noticing the daemon is gone" discovery_is 3 unavailable
    # Its peers are gone from discovery, but the working session with host 2 (found by discovery, not a --peer;
    # no remembered peers) is kept.
    local host2
    host2="$(node_id 2)"
    sleep 1
    connected_to 3 "$host2" || fail "host 3 dropped its session with host 2 when the daemon went away"
    start_avahi 3
    wait_for 20 "discovery on host 3 after the daemon restarted" discovery_is 3 on
    wait_for 20 "host 3 finds both peers again" peers_present_at_least 3 2
    local id
    id="$(node_id 3)"
    wait_for 20 "host 3's service re-published, seen from host 1 with avahi-browse" \
        sh -c "ip netns exec $(ns_of 1) env DBUS_SYSTEM_BUS_ADDRESS=$(bus_of 1) avahi-browse -ptr _continuum._tcp | grep -q '^=.*node=$id'"
    local comment
    comment="$(cli 3 comment "$post" "after the restart")"
    wait_for 30 "host 3's comment on host 2" has_comment 2 "$post" "$comment"
    [ -s "$(dir_of 3)/node.pid" ] && kill -0 "$(cat "$(dir_of 3)/node.pid")" || fail "host 3's node is not running"
    end_world
    log "scenario a: PASS (the restart was survived: re-published, peers found again, same node process)"
}

# The stranger's log has the members' refusal: "refused by the peer", with the reason they gave.
stranger_told() { grep "refused by the peer" "$(dir_of 5)/node.log" | grep -q "you are not a member of any group this node belongs to"; }

# (b) Two groups and a stranger on one bridge.
two_networks_test() {
    log "scenario b: group A (founded, joined by invite), group B (--network-key) and a stranger on one bridge"
    new_world "b"
    head -c 32 /dev/urandom >"$state/b/network-b.key"
    for i in 1 2 3 4; do add_host "$i"; done
    for i in 1 2 3 4; do start_dbus "$i"; start_avahi "$i"; done
    # Hosts 1 and 3 share a display name: the second to publish gets Avahi's alternative name.
    init_alone 1 twin
    init_alone 2
    init_alone 3 twin
    init_alone 4
    cli 1 group create "alpha team" >/dev/null
    start_node 1
    start_node 2
    start_node 3 --network-key "$state/b/network-b.key"
    start_node 4 --network-key "$state/b/network-b.key"
    local code
    code="$(cli 1 invite --host 10.77.0.1)"
    cli 2 join "$code" >/dev/null || fail "host 2 could not join group A with its invite"
    local a b
    a="$(cli 1 post "$fixture" --keep-metadata --caption "group A")"
    b="$(cli 3 post "$PWD/Tests/Fixtures/lake.png" --caption "group B")"
    wait_for 30 "A's post on host 2" has_post 2 "$a"
    wait_for 30 "A's photo on host 2" has_photo 2 "$fixture_hash"
    wait_for 30 "B's post on host 4" has_post 4 "$b"
    for i in 1 2 3 4; do wait_for 20 "host $i seeing the other network's 2 nodes" other_networks_at_least "$i" 2; done
    sleep 3 # time enough for a leak to show
    for i in 1 2; do
        has_post "$i" "$b" && fail "host $i (group A) holds group B's post"
        [ "$(feed_count "$i")" = 1 ] || fail "host $i (group A) feed: $(feed_count "$i") posts, expected 1"
    done
    for i in 3 4; do
        has_post "$i" "$a" && fail "host $i (group B) holds group A's post"
        [ "$(feed_count "$i")" = 1 ] || fail "host $i (group B) feed: $(feed_count "$i") posts, expected 1"
        (($(discovery_field "$i" peersPresent) == 1)) || fail "host $i: $(discovery_json "$i")"
    done
    # Usually "twin" and "twin #2"; after a simultaneous collision both may have moved on ("twin #2", "twin #3").
    wait_for 20 "hosts 1 and 3, both named twin, published under two different names" twin_names_differ
    local names
    names="$(discovery_field 1 serviceName)|$(discovery_field 3 serviceName)"
    # A stranger: in no group, it finds group A's nodes on the LAN and dials them, and dials a node of group B on
    # purpose. Every one refuses it before anything is sent; it is told why, and they log it.
    add_host 5
    start_dbus 5
    start_avahi 5
    init_alone 5 stranger
    start_node 5 --peer 10.77.0.3:7420
    wait_for 20 "the stranger finding group A's nodes" peers_present_at_least 5 2
    wait_for 30 "the stranger told it is not a member" stranger_told
    local stranger
    stranger="$(node_id 5)"
    for i in 1 3; do
        wait_for 30 "host $i logging the refused stranger" \
            grep -q "peer.id=${stranger:0:12}.*refused a node that shares no group" "$(dir_of "$i")/node.log"
    done
    sleep 3 # time enough for a leak to show
    [ "$(feed_count 5)" = 0 ] || fail "the stranger got records of a group: $(feed_count 5) posts"
    [ -z "$(find "$(dir_of 5)/data/photos" -type f 2>/dev/null)" ] ||
        fail "the stranger holds photo or thumbnail files: $(find "$(dir_of 5)/data/photos" -type f)"
    cli 5 post "$PWD/Tests/Fixtures/lake.png" --caption "the stranger's post" >/dev/null
    sleep 3 # and the other way
    for i in 1 2 3 4; do
        [ "$(feed_count "$i")" = 1 ] || fail "host $i got the stranger's post: $(feed_count "$i") posts"
    done
    cli 1 peers | grep -q "refused: not a member" || fail "host 1's peers do not show the refused stranger"
    end_world
    log "scenario b: PASS (each group synced within itself, never across; a stranger found the nodes, was refused by each with the reason, got nothing and gave nothing; the name collision gave '${names/|/' and '}')"
}

# (c) Link-local IPv6 only: the address is dialled with its interface (fe80::…%eth0).
ipv6_test() {
    log "scenario c: 2 hosts with link-local IPv6 only"
    ip_mode=v6
    new_world "c"
    for i in 1 2; do add_host "$i"; done
    for i in 1 2; do start_dbus "$i"; start_avahi "$i"; done
    for i in 1 2; do init_node "$i"; done
    for i in 1 2; do start_node "$i" --listen "::"; done
    local post
    post="$(cli 1 post "$fixture" --keep-metadata --caption "over IPv6")"
    wait_for 30 "the post on host 2 over link-local IPv6" has_post 2 "$post"
    wait_for 30 "the photo on host 2" has_photo 2 "$fixture_hash"
    grep -q 'peer.address=\[fe80:.*%eth0\]:7420' "$(dir_of 1)/node.log" "$(dir_of 2)/node.log" ||
        fail "no peer dialled at a link-local address with its interface"
    end_world
    log "scenario c: PASS (a link-local IPv6 peer, dialled as fe80::…%eth0)"
    log "scenario c: 2 hosts with IPv4 and link-local IPv6: each peer seen twice, dialled once, over IPv4"
    ip_mode=dual
    new_world "c2"
    for i in 1 2; do add_host "$i"; done
    for i in 1 2; do start_dbus "$i"; start_avahi "$i"; done
    for i in 1 2; do init_node "$i"; done
    for i in 1 2; do start_node "$i" --listen "::"; done
    post="$(cli 1 post "$fixture" --keep-metadata --caption "dual stack")"
    wait_for 30 "the post on host 2" has_post 2 "$post"
    for i in 1 2; do
        wait_for 10 "host $i seeing its peer" peers_present_at_least "$i" 1
        (($(discovery_field "$i" peersPresent) == 1)) || fail "host $i: $(discovery_json "$i")"
        grep -q 'peer.address=10\.77\.0\.[12]:7420' "$(dir_of "$i")/node.log" || fail "host $i did not prefer IPv4"
        grep -q 'peer.address=\[fe80' "$(dir_of "$i")/node.log" && fail "host $i announced an IPv6 address for a peer with IPv4"
    done
    ip_mode=v4
    end_world
    log "scenario c: PASS (dual stack: IPv4 preferred)"
}

# (d) A TXT change reaches a live resolver: a service published over D-Bus from host 2 (not a node,
# scripts/netns-fake-service.py) first claims another network, then changes its TXT in place to this network;
# host 1's node must see the change, with the service never removed.
txt_change_test() {
    log "scenario d: a TXT record changed in place is seen by the resolver kept alive"
    new_world "d"
    for i in 1 2; do add_host "$i"; done
    for i in 1 2; do start_dbus "$i"; start_avahi "$i"; done
    init_node 1
    start_node 1
    local dir fake
    dir="$(dir_of 2)"
    fake="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    spawn "$(ns_of 2)" "$dir/run" "$dir/publish.pid" "$dir/publish.log" \
        env "DBUS_SYSTEM_BUS_ADDRESS=$(bus_of 2)" /usr/bin/python3 "$PWD/scripts/netns-fake-service.py" "$fake" \
        00000000000000000000000000000000 feffc8d5566192b8349bcd457113eb7b "$dir/update-now"
    wait_for 10 "the fake service published" grep -q published "$dir/publish.log"
    wait_for 20 "host 1 seeing the fake service, of another network" other_networks_at_least 1 1
    (($(discovery_field 1 peersPresent) == 0)) || fail "host 1 counts a service of another network: $(discovery_json 1)"
    touch "$dir/update-now"
    wait_for 10 "the TXT changed" grep -q updated "$dir/publish.log"
    wait_for 20 "host 1 seeing the TXT change (now this network)" peers_present_at_least 1 1
    grep -q "peer.id=${fake:0:12} peer.name=fake .*discovered a peer" "$(dir_of 1)/node.log" ||
        fail "host 1 did not log the peer as discovered"
    grep -q "a discovered peer is gone" "$(dir_of 1)/node.log" && fail "the service was removed, not changed"
    end_world
    log "scenario d: PASS (a service's TXT, changed in place, was seen by the live resolver)"
}

# (e) An open group, by choice: announced on the LAN (a private group never is), joined by a node started with
# --join-open and by another with `join NAME`; both receive the group's posts.
open_group_test() {
    log "scenario e: an open group announced on the LAN, joined with --join-open and with join NAME"
    new_world "e"
    for i in 1 2 3; do add_host "$i"; done
    for i in 1 2 3; do start_dbus "$i"; start_avahi "$i"; done
    for i in 1 2 3; do init_alone "$i"; done
    cli 1 group create "private circle" >/dev/null
    start_node 1
    # Created while the node runs: its announcement changes in place.
    cli 1 group create Party --open >/dev/null
    local party
    party="$(cli 1 post "$PWD/Tests/Fixtures/lake.png" --caption "welcome to the party" --group Party)"
    start_node 2 --join-open
    start_node 3
    wait_for 30 "host 3 seeing the open group Party nearby" sh -c "'$bin' status --data '$(dir_of 3)/data' | grep -q 'open groups nearby: Party'"
    discovery_json 3 | grep -q "private circle" && fail "a private group's name is announced: $(discovery_json 3)"
    cli 3 join Party >/dev/null || fail "host 3 could not join Party by its name"
    wait_for 30 "the party's post on host 2 (--join-open)" has_post 2 "$party"
    wait_for 30 "the party's post on host 3 (join Party)" has_post 3 "$party"
    grep -q "joined an open group found on the LAN (--join-open)" "$(dir_of 2)/node.log" ||
        fail "host 2 did not log joining the open group"
    local back
    back="$(cli 3 post "$PWD/Tests/Fixtures/lake.png" --caption "hello from host 3" --group Party)"
    wait_for 30 "host 3's post on host 1" has_post 1 "$back"
    end_world
    log "scenario e: PASS (an open group announced, joined by --join-open and by name; its posts went both ways; the private group stayed unannounced)"
}

# --bench: start-to-first-sync and post-to-photo-everywhere, RUNS times, 3 hosts; each run once with discovery
# and once with static --peer addresses and --no-discovery (the baseline, same machine, same run).
bench_once() {
    local variant="$1" r="$2" n=3 i seed start t0 t1 t2 hash
    new_world "r$r$variant"
    for i in $(seq 1 $n); do add_host "$i"; done
    for i in $(seq 1 $n); do start_dbus "$i"; start_avahi "$i"; done
    for i in $(seq 1 $n); do init_node "$i"; done
    seed="$(cli 1 post "$fixture" --keep-metadata --caption seed)"
    start=$(date +%s%N)
    for i in $(seq 1 $n); do
        if [ "$variant" = d ]; then
            start_node "$i"
        elif ((i == 1)); then
            start_node "$i" --no-discovery
        else
            start_node "$i" --no-discovery --peer 10.77.0.1:7420
        fi
    done
    until has_post 2 "$seed"; do
        (($(date +%s%N) - start < 60000000000)) || fail "bench: no first sync within 60 s"
        sleep 0.02
    done
    t1=$(date +%s%N)
    # The second figure is for a settled network: every node connected to every other (or, for the baseline,
    # to host 1).
    for i in $(seq 1 $n); do
        local want=$((n - 1))
        [ "$variant" = s ] && ((i != 1)) && want=1
        wait_for 30 "host $i connected to $want peers" connected_at_least "$i" "$want"
    done
    hash="$(sha256sum "$PWD/Tests/Fixtures/lake.png" | cut -d' ' -f1)"
    t0=$(date +%s%N)
    cli 1 post "$PWD/Tests/Fixtures/lake.png" --caption "bench $r" >/dev/null
    for i in $(seq 2 $n); do
        until has_photo "$i" "$hash"; do
            (($(date +%s%N) - t0 < 60000000000)) || fail "bench: the photo did not reach host $i within 60 s"
            sleep 0.005
        done
    done
    t2=$(date +%s%N)
    end_world
    bench_first=$(((t1 - start) / 1000000))
    bench_photo=$(((t2 - t0) / 1000000))
}

bench_test() {
    local runs="$1" r v
    local first_d=() photo_d=() first_s=() photo_s=()
    median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
    for r in $(seq 1 "$runs"); do
        for v in d s; do
            bench_once "$v" "$r"
            if [ "$v" = d ]; then first_d+=("$bench_first"); photo_d+=("$bench_photo"); else
                first_s+=("$bench_first"); photo_s+=("$bench_photo"); fi
            log "bench run $r ($([ "$v" = d ] && echo discovery || echo 'static --peer')): start to first sync ${bench_first} ms; post to photo on every other host ${bench_photo} ms"
        done
    done
    echo "bench: $runs runs, 3 hosts, binary $bin"
    echo "bench: start to first sync, discovery:     ${first_d[*]} ms (median $(median "${first_d[@]}"))"
    echo "bench: start to first sync, static --peer: ${first_s[*]} ms (median $(median "${first_s[@]}"))"
    echo "bench: post to photo on hosts 2-3, discovery:     ${photo_d[*]} ms (median $(median "${photo_d[@]}"))"
    echo "bench: post to photo on hosts 2-3, static --peer: ${photo_s[*]} ms (median $(median "${photo_s[@]}"))"
}

begin=$SECONDS
((main)) && main_test "$hosts"
if ((scenarios)); then
    late_daemon_test
    two_networks_test
    ipv6_test
    txt_change_test
    open_group_test
fi
((bench)) && bench_test "$bench_runs"
log "all passed in $((SECONDS - begin))s"
