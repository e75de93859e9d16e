#!/bin/sh
# A failed step is cancelled on every task of it (spec/design.md "Step
# failures"): here task 1, restarted under `tfgc run --attach`, has lost
# the specialisation and answers the START with ERROR, while task 2 waits
# for y from task 1.  The client sends ABORT to task 2, which stops
# waiting at once and says nothing; so the next run, whose SPECIALISE
# task 2 would otherwise serve only after its step deadline (8 s here),
# ends in a few seconds, and so does `tfgc stop`.
. tests/integration/common.inc

cat >"$T/p.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223", "localhost:2224"] }
input x: f32[?]
device "/job:local/task:1" {
    y = x * 2.0
}
device "/job:local/task:2" {
    z = y + 1.0
}
s = reduce_sum(z)
session {
    print run(s, feed { x: [1, 2] })
}
TFG
local_ports 3
opts="--startup-timeout 10 --step-timeout 8 $addrs"
for t in 0 1 2; do
	serve $t $opts
done
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ "$(cat "$T/out")" = "8.0" ] || fail "first run printed '$(cat "$T/out")'"
kill -9 $s1
wait $s1 2>/dev/null
serve 1 $opts
wait_listen "$p1"
sleep 0.5 # tasks 0 and 2 dial it again (every 0.2 s at most)
t0=$(now)
expect_rc 1 $TFGC run --attach $opts "$T/p.tfg"
t1=$(now)
expect_in "$T/err" "/job:local/task:1 does not have the specialisation for x: f32[2]"
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
t2=$(now)
[ "$(cat "$T/out")" = "8.0" ] || fail "the run after printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop $opts "$T/p.tfg"
t3=$(now)
# more than 4 s: task 2 was still waiting (step deadline 8 s)
within 4 "$t0" "$t1" "the failed run"
within 4 "$t1" "$t2" "the run after it"
within 4 "$t2" "$t3" "stop"
for t in 0 1 2; do
	eval "wait \$s$t" || fail "server $t exited $?: $(cat "$T/s$t")"
done
# Task 2 was cancelled: it reports nothing (no ERROR reply, no stale
# message at task 0, nothing on its stderr).
for t in 0 1 2; do
	[ -s "$T/s$t" ] && fail "task $t wrote to stderr: $(cat "$T/s$t")"
done
echo "abort: ok"
