#!/bin/sh
# Servers started alone, a session attached to them, then stopped
# (spec §10 "Processes"): `tfgc server`, `tfgc run --attach`, `tfgc stop`.
. tests/integration/common.inc

p0=$(free_port)
p1=$(free_port)
addrs="--addr /job:local/task:0=127.0.0.1:$p0 --addr /job:local/task:1=127.0.0.1:$p1"
$TFGC server examples/hello.tfg --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
$TFGC server examples/hello.tfg --job local --task 1 $addrs 2>"$T/s1" &
s1=$!
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "attached run printed '$(cat "$T/out")'"
# A second session against the same servers.
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "second attached run printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs examples/hello.tfg
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
# Stopping what is not running is an error naming the tasks.
expect_rc 1 $TFGC stop --startup-timeout 0.5 $addrs examples/hello.tfg
expect_in "$T/err" "/job:local/task:0"
echo "attach: ok"
