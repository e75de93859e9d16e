#!/bin/sh
# A failed step is cancelled on every task of it (spec/design.md "Step
# failures"): here task 1's part fails (--check-numerics finds the NaN
# of sqrt(-1) in the feed the run loads) and it answers the START with
# ERROR, while task 2 waits for y from task 1.  The client sends ABORT to task 2, which stops
# waiting at once and says nothing; so the next run, whose SPECIALISE
# task 2 would otherwise serve only after its step deadline (8 s here),
# ends in a few seconds, and so does `tfgc stop`.
. tests/integration/common.inc

# npy X V1 V2: X.npy, an f32[2] of V1 and V2
npy() {
	python3 - "$@" <<'PY'
import struct, sys
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
with open(sys.argv[1] + ".npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.write(struct.pack("<2f", float(sys.argv[2]), float(sys.argv[3])))
PY
}
npy "$T/x" 1 4
cat >"$T/p.tfg" <<TFG
cluster { local = ["localhost:2222", "localhost:2223", "localhost:2224"] }
input x: f32[?]
device "/job:local/task:1" {
    y = sqrt(x) * 2.0
}
device "/job:local/task:2" {
    z = y + 1.0
}
s = reduce_sum(z)
session {
    print run(s, feed { x: load("$T/x.npy") })
}
TFG
local_ports 3
base="--startup-timeout 10 --step-timeout 8 $addrs"
opts="$base --check-numerics"
for t in 0 1 2; do
	serve $t $opts
done
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ "$(cat "$T/out")" = "8.0" ] || fail "first run printed '$(cat "$T/out")'"
npy "$T/x" -1 4
t0=$(now)
expect_rc 1 $TFGC run --attach $opts "$T/p.tfg"
t1=$(now)
expect_in "$T/err" "/job:local/task:1"
expect_in "$T/err" "NaN"
npy "$T/x" 1 4
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
t2=$(now)
[ "$(cat "$T/out")" = "8.0" ] || fail "the run after printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop $base "$T/p.tfg"
t3=$(now)
# more than 4 s: task 2 was still waiting (step deadline 8 s)
within 4 "$t0" "$t1" "the failed run"
within 4 "$t1" "$t2" "the run after it"
within 4 "$t2" "$t3" "stop"
for t in 0 1 2; do
	eval "wait \$s$t" || fail "server $t exited $?: $(cat "$T/s$t")"
done
# Task 2 was cancelled: it reports nothing (no ERROR reply, no stale
# message at task 0, nothing on its stderr but the warning that the
# cluster has no key).
for t in 0 2; do
	grep -v 'warning: .* the cluster is unauthenticated' "$T/s$t" >"$T/rest"
	[ -s "$T/rest" ] && fail "task $t wrote to stderr: $(cat "$T/s$t")"
done
echo "abort: ok"
