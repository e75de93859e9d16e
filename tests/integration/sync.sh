#!/bin/sh
# Synchronous replicas that survive stragglers and departures (issue 29;
# spec §6.26 "minimize and optimizers", spec/design.md "Synchronous
# replicas"):
#   - replicas that stop at different times: the last ones go on alone,
#     and the global step counts every round (TF1's SyncReplicasOptimizer
#     hangs there: tensorflow issue 5022);
#   - aggregate=2 of replicas=3 with one worker stopped (SIGSTOP) for 4 s
#     under a heartbeat deadline longer than that: the others go on
#     making rounds meanwhile, and the stopped one finishes when
#     continued;
#   - replicas=3 with one worker killed (-9) mid-training: its link goes,
#     the group shrinks to 2, and the others finish (tensorflow issue
#     13854).
. tests/integration/common.inc

# 1. Two replicas of 20 and 30 steps, sync(replicas=2): 20 rounds of two
# gradients, then 10 of worker 1's alone, each the mean of its gradients:
# w = 0.98^30.
cat >"$T/d.tfg" <<'TFG'
cluster { ps = ["localhost:1"]; worker = ["localhost:2", "localhost:3"] }
device replicas(ps="/job:ps", worker="/job:worker") {
    var w = ones([4])
    var step: i64 = 0
    loss = reduce_sum(w * w)
    train = minimize(loss, sync(sgd(0.01), replicas=2, timeout=20), global_step=step)
}
session each "/job:worker" as t {
    if t.index == 0 { initialize() } else { wait_initialized() }
    for i in 0..(20 + 10 * t.index) { run(train) }
    print "worker", t.index, "done"
}
session "/job:ps/task:0" { print "global step", run(step), "w", run(w) }
TFG
expect_rc 0 $TFGC run "$T/d.tfg" --free-ports
expect_in "$T/out" "worker 0 done"
expect_in "$T/out" "worker 1 done"
python3 - "$T/out" <<'PY' || fail "replicas of 20 and 30 steps: $(cat "$T/out")"
import sys
line = [l for l in open(sys.argv[1]) if l.startswith("global step")][0].split()
assert line[2] == "30", line
assert abs(float(line[4].strip("[")) - 0.98 ** 30) < 1e-5, line
PY

# 2. aggregate=2 of 3, worker 2 stopped for 4 s: worker 0 reports the
# global step every 50 of its steps with the time; the rounds made while
# worker 2 was stopped are counted from those reports.
cat >"$T/s.tfg" <<'TFG'
cluster { ps = ["localhost:1"]; worker = ["localhost:2", "localhost:3", "localhost:4"] }
device replicas(ps="/job:ps", worker="/job:worker") {
    var w = ones([4])
    var step: i64 = 0
    loss = reduce_sum(w * w)
    train = minimize(loss, sync(sgd(0.001), replicas=3, aggregate=2), global_step=step)
}
session each "/job:worker" as t {
    if t.index == 0 { initialize() } else { wait_initialized() }
    for i in 0..600 {
        run(train)
        sleep(10)
        if t.index == 0 { if i % 50 == 0 { print "at", now(), "global step", run(step) } }
    }
    print "worker", t.index, "done"
}
session "/job:ps/task:0" { print "global step", run(step) }
TFG
rm -f "$T/out"
$TFGC run "$T/s.tfg" --free-ports --heartbeat-timeout 10 >"$T/out" 2>"$T/err" &
run=$!
wait_for "$T/out" "global step [1-9]"
w2=$(pgrep -P $run -f -- "--job worker --task 2" | head -n 1)
[ -n "$w2" ] || { kill $run; fail "no server of worker 2 under tfgc run"; }
t_stop=$(python3 -c 'import time; print(time.time())')
kill -STOP "$w2"
sleep 4
t_cont=$(python3 -c 'import time; print(time.time())')
kill -CONT "$w2"
wait $run
rc=$?
[ "$rc" = 0 ] || fail "aggregate=2 of 3 with a worker stopped exited $rc: $(cat "$T/out" "$T/err")"
for k in 0 1 2; do expect_in "$T/out" "worker $k done"; done
python3 - "$T/out" "$t_stop" "$t_cont" <<'PY' || fail "no rounds while worker 2 was stopped: $(cat "$T/out")"
import sys
stop, cont = float(sys.argv[2]) + 0.5, float(sys.argv[3]) - 0.5
at = [(float(l.split()[2]), int(l.split()[5])) for l in open(sys.argv[1])
      if " at " in l and "global step" in l]
inside = [s for t, s in at if stop <= t <= cont]
# two workers of ~90 steps/s make ~90 rounds/s: at least 100 in 3 s
assert len(inside) >= 2 and inside[-1] - inside[0] >= 100, (at, stop, cont)
PY

# 3. replicas=3 (all needed), servers started by hand, worker 1 killed
# mid-training: the run fails naming it, workers 0 and 2 finish.
ps=$(free_port)
w0=$(free_port)
w1=$(free_port)
w2=$(free_port)
opts="--addr /job:ps/task:0=127.0.0.1:$ps --addr /job:worker/task:0=127.0.0.1:$w0 --addr /job:worker/task:1=127.0.0.1:$w1 --addr /job:worker/task:2=127.0.0.1:$w2 --heartbeat-timeout 1"
sed 's/sync(sgd(0.001), replicas=3, aggregate=2)/sync(sgd(0.001), replicas=3, timeout=20)/; s/0\.\.600/0..300/' \
	"$T/s.tfg" >"$T/k.tfg"
for x in "ps 0" "worker 0" "worker 1" "worker 2"; do
	set -- $x
	$TFGC server "$T/k.tfg" --job "$1" --task "$2" $opts 2>"$T/$1_$2" &
	eval "pid_$1_$2=\$!"
	_servers="$_servers $!"
done
for p in $ps $w0 $w1 $w2; do wait_listen "$p"; done
rm -f "$T/out"
$TFGC run --attach $opts "$T/k.tfg" >"$T/out" 2>"$T/err" &
run=$!
wait_for "$T/out" "global step [1-9]"
kill -9 $pid_worker_1
t0=$(now)
wait $run
rc=$?
t1=$(now)
[ "$rc" = 1 ] || fail "a killed replica: the run exited $rc: $(cat "$T/out" "$T/err")"
expect_in "$T/err" "lost connection to /job:worker/task:1"
expect_in "$T/out" "worker 0 done"
expect_in "$T/out" "worker 2 done"
# 300 steps of 10 ms: well within the replicas' 20 s timeout
within 15 "$t0" "$t1" "the replicas left after one was killed"
$TFGC stop $opts "$T/k.tfg" >/dev/null 2>&1
exit 0
