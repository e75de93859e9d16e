#!/bin/sh
# Variables shared by concurrent clients (spec §4.4 "Variables",
# §8.2 "Execution", §8.9 "Variables in a session"): updates from two workers
# at once lose nothing; two sessions that each need the other's task go on;
# attached servers keep their variables between runs; wait_initialized has a
# deadline; a worker killed mid-session is named while the others carry on.
. tests/integration/common.inc

# 1. Two workers, 1000 assign_add each, at once: exactly 2000.
cat >"$T/count.tfg" <<'P'
cluster { ps = ["localhost:1"]; worker = ["localhost:2", "localhost:3"] }
device "/job:ps/task:0" { var v = 0.0 }
inc = assign_add(v, 1.0)
session "/job:ps/task:0" { initialize() }
session each "/job:worker" as w {
    for i in 0..1000 { run(inc) }
    print "worker", w.index, "done"
}
session "/job:ps/task:0" { print run(v) }
P
expect_rc 0 $TFGC run --free-ports "$T/count.tfg"
[ "$(tail -n 1 "$T/out")" = "2000.0" ] || fail "count: $(cat "$T/out")"
expect_in "$T/out" "[/job:worker/task:0] worker 0 done"
expect_in "$T/out" "[/job:worker/task:1] worker 1 done"

# 2. Sessions on task 0 and task 1 at once, each of whose steps needs the
# other task: a task serves steps while its own session waits.
cat >"$T/cross.tfg" <<'P'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:0" { a = 1 }
device "/job:local/task:1" { b = 2 }
device "/job:local/task:0" { ab = a + b }
device "/job:local/task:1" { ba = b - a }
parallel {
    session "/job:local/task:1" {
        for i in 0..300 { run(ab) }
        print run(ab)
    }
    session "/job:local/task:0" {
        for i in 0..300 { run(ba) }
        print run(ba)
    }
}
P
t0=$(now)
expect_rc 0 $TFGC run --free-ports --step-timeout 20 "$T/cross.tfg"
t1=$(now)
within 15 "$t0" "$t1" "two crossing sessions"
expect_in "$T/out" "[/job:local/task:1] 3"
expect_in "$T/out" "[/job:local/task:0] 1"

# 3. Attached servers keep their variables: a second run sees the first
# run's value.
local_ports 2
cat >"$T/p.tfg" <<'P'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:1" { var total = 0 }
add = assign_add(total, 5)
session {
    if len(uninitialized()) > 0 { initialize() }
    print run(add)
}
P
serve 0 $addrs
serve 1 $addrs
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "5" ] || fail "first attached run: $(cat "$T/out")"
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs "$T/p.tfg"
[ "$(cat "$T/out")" = "10" ] || fail "second attached run: $(cat "$T/out")"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs "$T/p.tfg"
wait $s0 || fail "server 0: $(cat "$T/s0")"
wait $s1 || fail "server 1: $(cat "$T/s1")"

# 4. wait_initialized for a variable nobody initializes: the deadline
# names it.
cat >"$T/wait.tfg" <<'P'
var v = 1
var w = 2
session {
    initialize(v)
    wait_initialized(timeout=0.5)
}
P
t0=$(now)
expect_rc 1 $TFGC run --free-ports "$T/wait.tfg"
t1=$(now)
within 10 "$t0" "$t1" "wait_initialized past its deadline"
expect_in "$T/err" "wait.tfg:5:5: error: variables still not initialized after 0.5 s: ['w']"

# 5. A worker killed mid-session: the run names it and fails, the other
# worker and the ps carry on to their ends.
cat >"$T/kill.tfg" <<'P'
cluster { ps = ["localhost:1"]; worker = ["localhost:2", "localhost:3"] }
device "/job:ps/task:0" { var v = 0 }
inc = assign_add(v, 1)
session "/job:ps/task:0" { initialize() }
session each "/job:worker" as w {
    for i in 0..40 { run(inc); sleep(50) }
    print "worker", w.index, "done"
}
P
$TFGC run --free-ports "$T/kill.tfg" >"$T/out" 2>"$T/err" &
ctl=$!
sleep 1
pkill -9 -f "server $T/kill.tfg.*--job worker --task 1" ||
	fail "no worker 1 to kill"
t0=$(now)
wait $ctl
rc=$?
t1=$(now)
[ "$rc" -ne 0 ] || fail "a run with a killed worker exited 0"
within 10 "$t0" "$t1" "the run after a worker died"
expect_in "$T/err" "task /job:worker/task:1 was killed by signal 9"
expect_in "$T/out" "[/job:worker/task:0] worker 0 done"
echo "vars: ok"
