#!/bin/sh
# Failures of a running cluster (spec/design.md "Failures"), with servers
# started by hand as a cluster manager would, 1 ps + 2 workers training a
# shared counter:
#   - a worker killed (-9) mid-run is named at once; the run exits 1,
#     the other worker's session, which needs only the ps, goes on;
#   - a worker stopped (SIGSTOP: a hung machine, whose kernel still
#     holds its connections) is named within the heartbeat deadline;
#   - both come back restarted and rejoin: the next run works, and the
#     ps kept its variables all along;
#   - the ps killed and started again with --restore goes on from its
#     last checkpoint;
#   - busy is not dead: a step computing far longer than the heartbeat
#     deadline on a live task succeeds (there is no default step deadline).
. tests/integration/common.inc

pp=$(free_port)
w0=$(free_port)
w1=$(free_port)
addrs="--addr /job:ps/task:0=127.0.0.1:$pp --addr /job:worker/task:0=127.0.0.1:$w0 --addr /job:worker/task:1=127.0.0.1:$w1"
opts="--startup-timeout 10 --heartbeat-timeout 1 $addrs"
N=150
cat >"$T/p.tfg" <<TFG
cluster {
    ps     = ["localhost:1"]
    worker = ["localhost:2", "localhost:3"]
}
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var steps = 0
    count = assign_add(steps, 1)
}
session each "/job:worker" as w {
    if w.index == 0 {
        if len(uninitialized()) > 0 { initialize() }
    } else {
        wait_initialized()
    }
    for i in 0..$N {
        run(count)
        sleep(10)
    }
}
session "/job:ps/task:0" {
    save("$T/ck")
    print "steps:", run(steps)
}
TFG

# start JOB TASK [OPTS]: a server in the background, its pid in
# pid_JOB_TASK, stderr in $T/JOB_TASK.
start() {
	_j=$1 _t=$2
	shift 2
	$TFGC server "$T/p.tfg" --job "$_j" --task "$_t" $opts "$@" \
		2>"$T/${_j}_$_t" &
	eval "pid_${_j}_$_t=\$!"
}
steps() {
	sed -n 's/^steps: //p' "$T/out"
}
start ps 0
start worker 0
start worker 1
wait_listen "$pp"
wait_listen "$w0"
wait_listen "$w1"

# 1. A run undisturbed: 2N steps.
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ "$(steps)" = "$((2 * N))" ] || fail "first run: $(cat "$T/out")"

# 2. Worker 1 killed mid-run.
$TFGC run --attach $opts "$T/p.tfg" >"$T/out" 2>"$T/err" &
run=$!
sleep 0.7
t0=$(now)
kill -9 $pid_worker_1
wait $run
rc=$?
t1=$(now)
[ "$rc" = 1 ] || fail "run with a killed worker exited $rc: $(cat "$T/err")"
expect_in "$T/err" "lost connection to /job:worker/task:1"
within 5 "$t0" "$t1" "the run after a worker was killed"
[ "$(grep -c "task:1" "$T/err")" = 1 ] || fail "task 1 reported more than once: $(cat "$T/err")"
wait $pid_worker_1 2>/dev/null

# 3. Worker 1 back: the run works, and the ps kept its steps (those of
# worker 0 at least, which finished its loop in run 2).
start worker 1
wait_listen "$w1"
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
s3=$(steps)
[ "$s3" -ge $((5 * N)) ] && [ "$s3" -lt $((6 * N)) ] || fail "run 3 counted $s3 steps"

# 4. Worker 0 stopped mid-run (it hangs, its connections stay open).
$TFGC run --attach $opts "$T/p.tfg" >"$T/out" 2>"$T/err" &
run=$!
sleep 0.7
t0=$(now)
kill -STOP $pid_worker_0
wait $run
rc=$?
t1=$(now)
[ "$rc" = 1 ] || fail "run with a stopped worker exited $rc: $(cat "$T/err")"
expect_in "$T/err" "/job:worker/task:0 stopped answering (no heartbeat for 1 s)"
within 5 "$t0" "$t1" "the run after a worker stopped"
kill -9 $pid_worker_0
wait $pid_worker_0 2>/dev/null
start worker 0
wait_listen "$w0"
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
s5=$(steps)
[ "$s5" -ge $((s3 + 2 * N)) ] && [ "$s5" -lt $((s3 + 4 * N)) ] || fail "run 5 counted $s5 steps after $s3"

# 5. The ps killed and restarted from the checkpoint run 5 saved.
kill -9 $pid_ps_0
wait $pid_ps_0 2>/dev/null
start ps 0 --restore "$T/ck"
wait_listen "$pp"
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ "$(steps)" = "$((s5 + 2 * N))" ] || fail "after the restore: $(cat "$T/out"), before: $s5"
# A damaged checkpoint: the server refuses to start, naming the file.
printf 'garbage' >"$T/ck/steps.npy"
expect_rc 1 $TFGC server "$T/p.tfg" --job ps --task 0 --restore "$T/ck" $opts
expect_in "$T/err" "/job:ps/task:0: cannot restore: "
expect_in "$T/err" "steps.npy"

expect_rc 0 $TFGC stop $opts "$T/p.tfg"
for s in ps_0 worker_0 worker_1; do
	eval "wait \$pid_$s" || fail "server $s exited $?: $(cat "$T/$s")"
done

# 6. Busy is not dead: task 1 computes for seconds (three 4096-matmuls,
# on every core) with a heartbeat deadline of 0.5 s.
p0=$(free_port)
p1=$(free_port)
cat >"$T/busy.tfg" <<TFG
cluster { local = ["127.0.0.1:$p0", "127.0.0.1:$p1"] }
device "/job:local/task:1" {
    r = random_uniform([4096, 4096], seed=1) * 0.001
    m = matmul(matmul(matmul(r, r), r), r)
}
s = reduce_sum(m)
session { print run(s) >= 0.0 }
TFG
t0=$(now)
expect_rc 0 $TFGC run --heartbeat-timeout 0.5 "$T/busy.tfg"
t1=$(now)
[ "$(cat "$T/out")" = "True" ] || fail "the busy run printed '$(cat "$T/out")'"
python3 -c 'import sys; s = float(sys.argv[2]) - float(sys.argv[1])
print("failures: the busy step took %.1f s" % s)' "$t0" "$t1"
echo "failures: ok"
