#!/bin/sh
# bench/failover.sh (from bench/run.sh): how long a cluster takes to come
# up, and to name a task that died (kill -9) or hung (SIGSTOP), each the
# median of 5, beside the deadline it is bound by (issue 10).  Servers
# are started by hand, as a cluster manager would; the run is `tfgc run
# --attach`, timed until the first line it writes to stderr.
set -u
TFGC=${TFGC:-./tfgc}
T=$(mktemp -d /tmp/tfg-failover.XXXXXX)
pids=""
trap 'kill -9 $pids 2>/dev/null; rm -rf "$T"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now_ms() { date +%s%N | awk '{printf "%.3f\n", $1/1e6}'; }
port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Start-up: tfgc run of a 3-task program whose one step needs all three,
# from the command until the step's result is printed.
cat >"$T/three.tfg" <<'TFG'
cluster { local = ["localhost:1", "localhost:2", "localhost:3"] }
device "/job:local/task:1" { a = 2.0 * 3.0 }
device "/job:local/task:2" { b = a + 1.0 }
session { print run(b) }
TFG
for i in 1 2 3 4 5; do
	s=$(now_ms)
	$TFGC run --free-ports "$T/three.tfg" | { read -r _; now_ms; } >"$T/t"
	awk "BEGIN {print $(cat "$T/t") - $s}"
done | median | awk '{printf "3-task cluster, command to first step done, median of 5: %.1f ms (goal < 300 ms)\n", $1}'

# Failure detection: 1 ps + 2 workers in a long run; worker 1 is killed
# (or stopped) and the time until tfgc run names it is taken.
detect() { # $1: the signal
	pp=$(port) w0=$(port) w1=$(port)
	addrs="--addr /job:ps/task:0=127.0.0.1:$pp --addr /job:worker/task:0=127.0.0.1:$w0 --addr /job:worker/task:1=127.0.0.1:$w1"
	opts="--startup-timeout 10 $addrs"
	$TFGC server "$T/p.tfg" --job ps --task 0 $opts 2>/dev/null & a=$!
	$TFGC server "$T/p.tfg" --job worker --task 0 $opts 2>/dev/null & b=$!
	$TFGC server "$T/p.tfg" --job worker --task 1 $opts 2>/dev/null & c=$!
	pids="$a $b $c"
	: >"$T/t"
	$TFGC run --attach $opts "$T/p.tfg" 2>&1 >/dev/null |
		{ read -r _; now_ms >"$T/t"; } &
	sleep 1
	s=$(now_ms)
	kill "-$1" $c
	for _ in $(seq 100); do [ -s "$T/t" ] && break; sleep 0.05; done
	[ -s "$T/t" ] || echo "1e9" >"$T/t" # not named in 5 s: shows as huge
	awk "BEGIN {print $(cat "$T/t") - $s}"
	kill -9 $a $b $c 2>/dev/null
	wait 2>/dev/null
}
cat >"$T/p.tfg" <<'TFG'
cluster { ps = ["localhost:1"]; worker = ["localhost:2", "localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var steps = 0
    count = assign_add(steps, 1)
}
session each "/job:worker" as w {
    if w.index == 0 { initialize() } else { wait_initialized() }
    for i in 0..1000 { run(count); sleep(10) }
}
TFG
for sig in 9 STOP; do
	for i in 1 2 3 4 5; do detect $sig; done | median |
		awk -v s="$sig" '{printf "a worker %s, until tfgc run names it, median of 5: %.0f ms (heartbeat deadline 1500 ms; goal < 2 s)\n", s == "9" ? "killed (-9)" : "stopped (SIGSTOP)", $1}'
done
