#!/bin/sh
# bench/hosts.sh: tfg across hosts with real network stacks (issue 29;
# root): two network namespaces joined by links of 0.25 ms each way and
# 1 Gbit/s (tests/integration/hosts.inc), a task in each, keyed (every
# frame MACed, as between hosts), against raw TCP between the same
# namespaces in the same run (tests/integration/tcpref.py): a 64 MiB
# tensor from task to task against a raw TCP copy of its bytes, and a
# step crossing the two (START out, tensor back) against a raw TCP round
# trip of 64 bytes.  Loopback hides what these show: Nagle, delayed ACKs
# and a round trip that costs something.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=$(pwd)/${TFGC:-tfgc}
T=$(mktemp -d /tmp/tfg-hosts.XXXXXX) || exit 1
. tests/integration/hosts.inc
trap 'hosts_down; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
hosts_up 2 || exit 0
head -c 32 /dev/urandom >"$T/key"
echo '{"local": ["10.77.0.1:2222", "10.77.0.2:2222"]}' >"$T/c.json"
opts="--cluster $T/c.json --cluster-key $T/key"

# run PROG: the servers of PROG in hosts 0 and 1, its sessions from
# host 0; the output in $T/out
run() {
	on_host 0 $TFGC server "$1" $opts --job local --task 0 2>"$T/s0" &
	a=$!
	on_host 1 $TFGC server "$1" $opts --job local --task 1 2>"$T/s1" &
	b=$!
	on_host 0 $TFGC run --attach --stop "$1" $opts >"$T/out" 2>"$T/err" ||
		cat "$T/err" >&2
	wait $a $b
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; links of $HOSTS_DELAY s each way, $HOSTS_RATE"
on_host 1 python3 tests/integration/tcpref.py serve 10.77.0.2:5000 >"$T/ref" &
ref=$!
sleep 0.3
rtt=$(on_host 0 python3 tests/integration/tcpref.py rtt 10.77.0.2:5000 500)
copy=$(on_host 0 python3 tests/integration/tcpref.py copy 10.77.0.2:5000 67108864 5)
kill $ref

cat >"$T/step.tfg" <<'P'
cluster { local = ["localhost:1", "localhost:2"] }
x = 2
device "/job:local/task:1" { y2 = x - 66 }
device "/job:local/task:0" { y = x + 300 + y2 }
session "/job:local/task:0" {
    for i in 0..50 { run(y) }
    let t0 = now()
    for i in 0..1000 { run(y) }
    print "step", (now() - t0) / 1000
}
P
run "$T/step.tfg"
step=$(sed -n 's/^step //p' "$T/out")
awk -v s="$step" -v r="$rtt" 'BEGIN {printf "step crossing two hosts (1,000 steps): %.0f us; raw TCP round trip of 64 B: %.0f us; ratio %.2f (goal <= 1.3)\n", s * 1e6, r * 1e6, s / r}'

cat >"$T/transfer.tfg" <<'P'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:0" { z = fill([16777216], 1.0) }
device "/job:local/task:1" {
    input x: f32[16777216]
    y = x[0:1]
}
session "/job:local/task:0" {
    let big = run(z)
    run(y, feed { x: big })
    let t0 = now()
    for i in 0..10 { run(y, feed { x: big }) }
    print "transfer", (now() - t0) / 10
}
P
run "$T/transfer.tfg"
tr=$(sed -n 's/^transfer //p' "$T/out")
awk -v t="$tr" -v r="$copy" 'BEGIN {printf "64 MiB from task to task across two hosts (10 transfers): %.1f ms (%.2f GB/s); raw TCP copy of the bytes (median of 5): %.1f ms; ratio %.2f of raw TCP (goal >= 0.8)\n", t * 1e3, 67.108864e-3 / t, r * 1e3, r / t}'
