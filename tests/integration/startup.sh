#!/bin/sh
# Start-up deadline and a port in use (spec §9.3 "Run-time errors"): clear
# errors naming the task, a non-zero exit, and no hang.
. tests/integration/common.inc

p0=$(free_port)
p1=$(free_port)
addrs="--addr /job:local/task:0=127.0.0.1:$p0 --addr /job:local/task:1=127.0.0.1:$p1"

# Nobody is serving: --attach gives up after the deadline, naming a task.
start=$(date +%s)
expect_rc 1 $TFGC run --attach --startup-timeout 0.5 $addrs examples/hello.tfg
expect_in "$T/err" "/job:local/task:"
expect_in "$T/err" "did not come up"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "the deadline took too long"

# A port in use: something else listens on task 0's port.  SO_REUSEADDR:
# the attached run above may have left the port in TIME-WAIT (its own
# listener can get a port free_port released, and dial itself there).
# The holder says when it listens: a loaded machine starts python slowly.
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
open(sys.argv[2], "w").close()
time.sleep(30)' "$p0" "$T/held" &
holder=$!
i=0
while [ ! -e "$T/held" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$T/held" ] || fail "could not hold port $p0"
expect_rc 1 $TFGC run --startup-timeout 5 $addrs examples/hello.tfg
kill $holder 2>/dev/null
expect_in "$T/err" "/job:local/task:0"
expect_in "$T/err" "address in use"
# Tasks start in any order within the deadline: the run first, then
# task 1, then, a second later, task 0; it works.
cp examples/hello.tfg "$T/p.tfg"
$TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg" >"$T/out" 2>"$T/err" &
run=$!
sleep 0.5
$TFGC server "$T/p.tfg" --job local --task 1 $addrs 2>"$T/s1" &
s1=$!
sleep 1
$TFGC server "$T/p.tfg" --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
wait $run || fail "the run with late tasks failed: $(cat "$T/err")"
[ "$(cat "$T/out")" = "238" ] || fail "the run with late tasks printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop $addrs "$T/p.tfg"
wait $s0 $s1 || fail "a late server failed: $(cat "$T/s0" "$T/s1")"
echo "startup: ok"
