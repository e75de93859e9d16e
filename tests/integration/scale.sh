#!/bin/sh
# Many tasks on this machine (issue 29): 1 ps + 32 workers and 4 ps + 32
# workers run to the right result, and each task dials only the tasks
# its plan exchanges messages with (spec/design.md "Transport"): `tfgc
# run --stats` counts the links, and no two workers have one.
. tests/integration/common.inc

# cluster FILE PS N: PS ps tasks and N workers on local ports that
# --free-ports moves to free ones
cluster() {
	python3 - "$2" "$3" >"$1" <<'PY'
import json, sys
ps, n = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"ps": ["localhost:%d" % (41000 + i) for i in range(ps)],
                  "worker": ["localhost:%d" % (41100 + i) for i in range(n)]}))
PY
}

# The shared counter of the tutorials, 32 workers each adding 1 five
# times: 160, with the 32 links of the ps alone.
cluster "$T/c1.json" 1 32
expect_rc 0 $TFGC run examples/ps_counter.tfg --cluster "$T/c1.json" \
	--free-ports --stats
[ "$(tail -n 1 "$T/out")" = "160.0" ] || fail "1 ps + 32 workers: the count is not 160: $(tail -n 3 "$T/out")"
[ "$(grep -c 'worker [0-9]* made it' "$T/out")" = 160 ] || fail "1 ps + 32 workers: not 160 increments printed"
grep -q "^tfgc: 32 of the 528 pairs of tasks exchanged messages, over 64 connections" "$T/err" ||
	fail "1 ps + 32 workers: not 32 links over 64 connections: $(grep pairs "$T/err")"
grep -q "^  /job:worker/task:[0-9]* *-> /job:worker" "$T/err" &&
	fail "two workers exchanged messages: $(grep '^  /job:worker.*-> /job:worker' "$T/err" | head -3)"
# each link as counted: the ps answered every one of a worker's steps
# (wait_initialized's, one or more as the ps is initialized or not yet,
# and 5 increments), and the worker's session sent those and, at its
# end, LEAVE
awk '$1 == "/job:ps/task:0" && $3 == "/job:worker/task:31" {
	found = 1; if ($4 < 6 || $9 != $4 + 1) bad = 1 }
     END {exit !found || bad}' "$T/err" ||
	fail "the link of the ps and worker 31 is not counted as 6 or more messages and one more back: $(grep 'task:31 ' "$T/err")"
grep -q "^  controller *-> /job:ps/task:0 " "$T/err" ||
	fail "--stats has no line for the controller's link to the ps"

# 4 ps + 32 workers training between-graph replicas whose five
# variables are spread over the ps tasks: every worker makes 5 steps,
# the global step counts all 160, and each worker talks to the 4 ps.
cluster "$T/c4.json" 4 32
cat >"$T/r.tfg" <<'TFG'
cluster { ps = ["localhost:1"]; worker = ["localhost:2"] }
device replicas(ps="/job:ps", worker="/job:worker") {
    var a = ones([16])
    var b = ones([16])
    var c = ones([16])
    var d = ones([16])
    var step: i64 = 0
    loss = reduce_sum(a * b) + reduce_sum(c) + reduce_sum(d)
    train = minimize(loss, sgd(0.001), global_step=step)
}
session each "/job:worker" as w {
    if w.index == 0 { initialize() } else { wait_initialized() }
    for i in 0..5 { run(train) }
}
session "/job:ps/task:0" { print "global step", run(step) }
TFG
expect_rc 0 $TFGC run "$T/r.tfg" --cluster "$T/c4.json" --free-ports --stats
[ "$(tail -n 1 "$T/out")" = "global step 160" ] || fail "4 ps + 32 workers: $(tail -n 3 "$T/out")"
grep -q "^tfgc: 128 of the 630 pairs of tasks exchanged messages, over 256 connections" "$T/err" ||
	fail "4 ps + 32 workers: not 128 links over 256 connections: $(grep pairs "$T/err")"
grep -q "^  /job:ps/task:[0-9]* *-> /job:ps" "$T/err" &&
	fail "two ps tasks exchanged messages"

# 200 tasks on this machine: 1 ps + 199 workers of the tutorial's counter
# start (in some 20 s on two cores, most of it each process faulting in
# the binary: the start-up deadline counts from the last task up; 40 s
# when the machine is slow) and count 995.  Heartbeats of 5 s: with 200
# processes runnable on two cores, the ps was once not scheduled for
# 1.5 s and named as stopped.
# (Not under AddressSanitizer, whose 200 processes would need some 16 GB.)
cluster "$T/c200.json" 1 199
case $TFGC in
*asan*) ;;
*)
	expect_rc 0 $TFGC run examples/ps_counter.tfg --cluster "$T/c200.json" \
		--free-ports --heartbeat-timeout 5
	[ "$(tail -n 1 "$T/out")" = "995.0" ] || fail "1 ps + 199 workers: $(tail -n 3 "$T/out")"
	;;
esac
# limits too low for 200 tasks are said before anything starts, naming
# the limit: descriptors (the ps talks to 199 workers), and processes
( ulimit -n 300 && exec $TFGC run examples/ps_counter.tfg \
	--cluster "$T/c200.json" --free-ports ) >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "200 tasks with 300 descriptors did not fail: $(cat "$T/err")"
expect_in "$T/err" "tfgc: error: the cluster's 200 tasks need up to 664 open descriptors in one process (/job:ps/task:0 talks to 199 tasks, and this run's controller to all), and this machine allows 300 (the hard limit of open files, ulimit -Hn)"
( ulimit -n 100 && exec $TFGC run examples/ps_counter.tfg \
	--cluster "$T/c200.json" --free-ports ) >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "200 tasks with 100 descriptors did not fail: $(cat "$T/err")"
expect_in "$T/err" "cannot find a free port for each of the cluster's 200 tasks: Too many open files (this machine allows 100 open files, ulimit -Hn"
prlimit --nproc=300 -- $TFGC run examples/ps_counter.tfg \
	--cluster "$T/c200.json" --free-ports >"$T/out" 2>"$T/err"
[ $? = 1 ] || fail "200 tasks with 300 processes did not fail: $(cat "$T/err")"
expect_in "$T/err" "need at least 1064 processes and threads of this user (five a task), and this machine allows 300 (the hard limit of user processes, ulimit -Hu)"
pgrep -f "c200.json" >/dev/null && fail "a task of the refused runs was started"
exit 0
