#!/bin/sh
# A task restarted under `tfgc run --attach` has lost its specialisations
# (spec/language.md §4.3 "Inputs", design.md "Unknown dims").  Nothing of
# the new process reaches the client before the next run's step, which
# failed with "does not have the specialisation ... was it restarted?"
# (issue 25, item 11); the client now announces a specialisation again
# when its link to a task that had it came down or up since, so the next
# run compiles it there again and works at once, saying nothing.
. tests/integration/common.inc

cp tests/integration/progs/double_sum.tfg "$T/p.tfg"
local_ports 2
serve 0 $addrs
serve 1 $addrs
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "6.0" ] || fail "first run printed '$(cat "$T/out")'"
kill -9 $s1
wait $s1 2>/dev/null
serve 1 $addrs
# Wait until it listens and task 0 has dialed it again (it redials
# every 0.2 s at most).
wait_listen "$p1"
sleep 0.5
start=$(date +%s)
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ $(($(date +%s) - start)) -lt 10 ] || fail "the run took the step deadline"
[ "$(cat "$T/out")" = "6.0" ] || fail "the run after printed '$(cat "$T/out")'"
[ -s "$T/err" ] && fail "the run after the restart said: $(cat "$T/err")"
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "6.0" ] || fail "the second run printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/p.tfg"
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
grep -q "ignored" "$T/s1" && fail "task 1 ignored a message: $(cat "$T/s1")"
echo "spec_lost: ok"
