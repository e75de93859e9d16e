#!/bin/sh
# The client task's server restarted under `tfgc run --attach` while
# task 1 runs on (spec/design.md "Restarts").  The new process numbers
# its steps from 1 again, below those task 1 saw end; task 1 tells it
# from the process before it by its incarnation in every message, and
# forgets that one's steps and the specialisation it held.  So the next
# run works at once (without that, task 1 dropped every message of the
# new process as a duplicate, and each run waited out its step deadline),
# and nobody reports anything.
. tests/integration/common.inc

cp tests/integration/progs/double_sum.tfg "$T/p.tfg"
local_ports 2
opts="--startup-timeout 10 --step-timeout 8 $addrs"
serve 0 $opts
serve 1 $opts
# Steps 1 (SPECIALISE) and 2, then 3.
for i in 1 2; do
	expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
	[ "$(cat "$T/out")" = "6.0" ] || fail "run $i printed '$(cat "$T/out")'"
done
kill -9 $s0
wait $s0 2>/dev/null
serve 0 $opts
wait_listen "$p0"
t0=$(now)
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
t1=$(now)
[ "$(cat "$T/out")" = "6.0" ] || fail "the run after the restart printed '$(cat "$T/out")'"
[ -s "$T/err" ] && fail "the run after the restart said: $(cat "$T/err")"
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ "$(cat "$T/out")" = "6.0" ] || fail "the second run after it printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop $opts "$T/p.tfg"
within 4 "$t0" "$t1" "the run after the restart"
for t in 0 1; do
	eval "wait \$s$t" || fail "server $t exited $?: $(cat "$T/s$t")"
	grep -v 'warning: .* the cluster is unauthenticated' "$T/s$t" \
		>"$T/rest"
	[ -s "$T/rest" ] && fail "task $t wrote to stderr: $(cat "$T/s$t")"
done
echo "restart: ok"
