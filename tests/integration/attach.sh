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
# Stopping what is not running says so, and is no error.
expect_rc 0 $TFGC stop --startup-timeout 0.5 $addrs examples/hello.tfg
expect_in "$T/err" "no server of this program is running"
# Feeds of another dtype, converted by the attached run's client before
# they go to the task that consumes them; one that does not convert
# fails the run and leaves the servers serving
# (spec §8.3 "run: fetches, feeds and steps").
cat >"$T/conv.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223"] }
input x: f32[4]
input n: i32[4]
device "/job:local/task:1" {
    y = x * 2.0
    k = n + 1
}
session {
    print run(y, feed { x: load("tests/golden/run/feed_random.npy") })
    print run(k, feed { n: load("tests/golden/run/feed_i64_big.npy") })
}
TFG
$TFGC server "$T/conv.tfg" --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
$TFGC server "$T/conv.tfg" --job local --task 1 $addrs 2>"$T/s1" &
s1=$!
_servers="$s0 $s1"
expect_rc 1 $TFGC run --attach --startup-timeout 10 $addrs "$T/conv.tfg"
[ "$(cat "$T/out")" = "[1.097627  1.4303787 1.2055267 1.0897664]" ] ||
	fail "the converted feed gave '$(cat "$T/out")'"
expect_in "$T/err" "feed 'n' expects i32[4]: the i64[4] fed has 2147483648 at [3], out of i32's range"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/conv.tfg"
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
# A run whose --fetch, --feed or --out the servers were not given runs
# other sessions (the servers run those of their own compile): refused
# at once, saying so, and nothing is written; so is a run of another
# file (or --param), not at its start-up deadline; with the same options
# the servers' client writes the --out file.
cat >"$T/one.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223"] }
input x: f32[4]
device "/job:local/task:1" { y = x * 2.0 }
session { print run(y, feed { x: load("tests/golden/run/feed_random.npy") }) }
TFG
opts="--fetch y --feed x=tests/golden/run/feed_random.npy --out $T/y.npy"
$TFGC server "$T/one.tfg" --job local --task 0 $addrs 2>"$T/s0" &
s0=$!
$TFGC server "$T/one.tfg" --job local --task 1 $addrs 2>"$T/s1" &
s1=$!
_servers="$s0 $s1"
# shellcheck disable=SC2086
expect_rc 1 timeout 5 $TFGC run --attach --startup-timeout 30 $addrs \
	"$T/one.tfg" $opts
expect_in "$T/err" "runs other sessions than this run: its --fetch, --feed or --out differ"
[ ! -e "$T/y.npy" ] || fail "a refused run wrote its --out file"
sed 's/x \* 2.0/x * 3.0/' "$T/one.tfg" >"$T/other.tfg"
expect_rc 1 timeout 5 $TFGC run --attach --startup-timeout 30 $addrs \
	"$T/other.tfg"
expect_in "$T/err" "serves another program"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/one.tfg"
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
# The run stops at the first refusal, so its PING may reach only one of
# the two servers before it exits: either may be the one that says so.
cat "$T/s0" "$T/s1" >"$T/s01"
expect_in "$T/s01" "refused: the run is told"
# shellcheck disable=SC2086
$TFGC server "$T/one.tfg" --job local --task 0 $addrs $opts 2>"$T/s0" &
s0=$!
# shellcheck disable=SC2086
$TFGC server "$T/one.tfg" --job local --task 1 $addrs $opts 2>"$T/s1" &
s1=$!
_servers="$s0 $s1"
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/one.tfg" \
	$opts
[ -s "$T/y.npy" ] || fail "the attached run's --out file is missing"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/one.tfg"
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
echo "attach: ok"
