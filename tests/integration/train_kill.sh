#!/bin/sh
# A worker killed mid-training, then restarted (spec §8.2 "Execution",
# §10.1 "Failures"; spec/design.md "Failures", "Restarts"): 1 ps + 2
# workers train a linear regression with minimize(..., global_step=)
# (spec §6.26 "minimize and optimizers", §7.6 "Replicas").
#   0. Under `tfgc run`, worker 1's server is killed (-9) once it has
#      trained an epoch: the run names it once, at once, worker 0's
#      session goes on and finishes its steps (the model converges), and
#      the run exits 1.  The global step counts every step of worker 0
#      and those of worker 1 before it died.
#   1. The same with servers started by hand and the sessions attached,
#      as a cluster manager would run them.
#   2. Worker 1's server is started again on its address, the ps and
#      worker 0 living on: a session on it, which waits for the variables
#      instead of initializing them, sees the ps's: the global step goes
#      on from where run 1 left it, the loss is already small, and its
#      steps succeed at once, nobody else restarted.
#   3. Both workers train on together.
. tests/integration/common.inc

pp=$(free_port)
w0=$(free_port)
w1=$(free_port)
addrs="--addr /job:ps/task:0=127.0.0.1:$pp --addr /job:worker/task:0=127.0.0.1:$w0 --addr /job:worker/task:1=127.0.0.1:$w1"
opts="--startup-timeout 10 --heartbeat-timeout 1 $addrs"
E=80 # epochs of run 1: 4 batches of 8 rows of its shard each
M=30 # steps of the restarted worker in run 2, of each worker in run 3

# npy FILE DESCR SHAPE VALUES...: a .npy file without NumPy.
npy() {
	python3 - "$@" <<'PY'
import ast, struct, sys
path, descr, shape = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
vals = sys.argv[4:]
h = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, shape)
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
fmt = {"<f4": "f", "<i8": "q"}[descr]
conv = float if fmt == "f" else int
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.write(struct.pack("<%d%s" % (len(vals), fmt), *map(conv, vals)))
PY
}
# 64 rows x in [-1, 1)^3 and t = x . [1.5, -2, 0.5] + 0.3 exactly.
set -- $(python3 -c 'import random
r = random.Random(7)
xs = [round(r.uniform(-1, 1), 3) for _ in range(64 * 3)]
ts = [1.5 * xs[3*i] - 2 * xs[3*i+1] + 0.5 * xs[3*i+2] + 0.3 for i in range(64)]
print(" ".join(map(str, xs)), "|", " ".join(map(str, ts)))')
xs="" ts="" seen=0
for v; do
	if [ "$v" = "|" ]; then seen=1
	elif [ $seen = 0 ]; then xs="$xs $v"
	else ts="$ts $v"
	fi
done
npy "$T/x.npy" "<f4" "(64, 3)" $xs
npy "$T/t.npy" "<f4" "(64,)" $ts
npy "$T/phase.npy" "<i8" "()" 1

cat >"$T/p.tfg" <<TFG
cluster {
    ps     = ["localhost:1"]
    worker = ["localhost:2", "localhost:3"]
}
device replicas(ps = "/job:ps", worker = "/job:worker") {
    input x: f32[?, 3]
    input t: f32[?]
    var w = [0.0, 0.0, 0.0]
    var b = 0.0
    var step: i64 = 0
    y = reduce_sum(x * w, axis=1) + b
    loss = reduce_mean(pow(y - t, 2.0))
    train = minimize(loss, sgd(0.1), global_step=step)
}
session each "/job:worker" as me {
    let xs = load("$T/x.npy")
    let ts = load("$T/t.npy")
    let phase = load("$T/phase.npy")
    if phase == 1 {
        if me.index == 0 { initialize() } else { wait_initialized() }
        for e in 0..$E {
            for bt in batches(xs, ts, 8, seed=e, shard=me.index, of=me.count) {
                run(train, feed { x: bt.x, t: bt.y })
                sleep(5)
            }
            print "epoch", e
        }
        print "done", run(step), run(loss, feed { x: xs, t: ts }) < 0.0001
    } else if phase + me.index >= 3 {
        wait_initialized()
        print "start", run(step), run(loss, feed { x: xs, t: ts }) < 0.0001
        for i in 0..$M {
            run(train, feed { x: xs, t: ts })
        }
        print "end", run(step), run(loss, feed { x: xs, t: ts }) < 0.0001
    }
}
TFG

# wait_for FILE TEXT SECS: until FILE contains TEXT, for SECS at most.
wait_for() {
	python3 -c 'import sys, time
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    if sys.argv[2] in open(sys.argv[1]).read():
        sys.exit(0)
    time.sleep(0.02)
sys.exit(1)' "$@"
}

# killed_run: after run $run killed worker 1 (once worker 1 printed its
# first epoch, by $kill), checks what the run said in $T/out and $T/err,
# and sets s1 to the global step at the end of worker 0's steps.
killed_run() {
	wait_for "$T/out" "[/job:worker/task:1] epoch 0" 30 ||
		fail "worker 1 trained no epoch: $(cat "$T/out" "$T/err")"
	grep -q "^\[/job:worker/task:0\] done" "$T/out" &&
		fail "worker 0 ended before worker 1 was killed: raise E"
	$kill
	_t0=$(now)
	wait_for "$T/err" "/job:worker/task:1" 5 ||
		fail "the killed worker was not reported: $(cat "$T/err")"
	_t1=$(now)
	within 1 "$_t0" "$_t1" "reporting the killed worker"
	wait $run
	_rc=$?
	run=""
	[ "$_rc" = 1 ] || fail "run exited $_rc: $(cat "$T/out" "$T/err")"
	[ "$(grep -c "task:1" "$T/err")" = 1 ] ||
		fail "worker 1 reported more than once: $(cat "$T/err")"
	grep "task:0" "$T/err" && fail "worker 0 failed: $(cat "$T/err")"
	[ "$(grep -c "^\[/job:worker/task:0\] epoch" "$T/out")" = $E ] ||
		fail "worker 0 did not train its $E epochs: $(cat "$T/out")"
	# Worker 0 made 4E steps; worker 1 at least 4 (its first epoch),
	# and fewer than 4E (it was killed).
	_done=$(sed -n 's/^\[\/job:worker\/task:0\] done //p' "$T/out")
	s1=${_done% *}
	[ "${_done#* }" = True ] ||
		fail "training did not converge: $(cat "$T/out")"
	[ "$s1" -ge $((4 * E + 4)) ] && [ "$s1" -lt $((8 * E)) ] ||
		fail "the global step is $s1 after 4*$E steps of worker 0"
}

# start JOB TASK: a server in the background, its pid in pid_JOB_TASK,
# stderr in $T/JOB_TASK.
start() {
	$TFGC server "$T/p.tfg" --job "$1" --task "$2" $opts 2>"$T/$1_$2" &
	eval "pid_$1_$2=\$!"
}
run="" pid_ps_0="" pid_worker_0="" pid_worker_1=""
pids() {
	echo $pid_ps_0 $pid_worker_0 $pid_worker_1 $run
}
# No server outlives the test, whatever fails.
trap 'for p in $(pids); do kill -9 $p 2>/dev/null; done; release_ports; rm -rf "$T"' EXIT

# 0. Under tfgc run: its server for worker 1 killed.
$TFGC run --free-ports --heartbeat-timeout 1 "$T/p.tfg" >"$T/out" 2>"$T/err" &
run=$!
kill_child() {
	_k=$(ps -o pid=,args= --ppid $run |
		sed -n 's/^ *\([0-9]*\) .*--job worker --task 1$/\1/p')
	[ -n "$_k" ] || fail "tfgc run has no worker 1"
	kill -9 $_k
}
kill=kill_child
killed_run
expect_in "$T/err" "task /job:worker/task:1 was killed by signal 9"

start ps 0
start worker 0
start worker 1
for p in $pp $w0 $w1; do wait_listen $p; done

# 1. The same, attached to servers started by hand.
$TFGC run --attach $opts "$T/p.tfg" >"$T/out" 2>"$T/err" &
run=$!
kill="kill -9 $pid_worker_1"
killed_run
wait $pid_worker_1 2>/dev/null
expect_in "$T/err" "lost connection to /job:worker/task:1"

# 2. Worker 1 back on its address; run 2 trains on it alone.
npy "$T/phase.npy" "<i8" "()" 2
start worker 1
wait_listen $w1
t0=$(now)
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
t1=$(now)
[ -s "$T/err" ] && fail "run 2 said: $(cat "$T/err")"
[ "$(cat "$T/out")" = "[/job:worker/task:1] start $s1 True
[/job:worker/task:1] end $((s1 + M)) True" ] ||
	fail "run 2 after global step $s1 printed: $(cat "$T/out")"
within 5 "$t0" "$t1" "run 2"
for p in $pid_ps_0 $pid_worker_0; do
	kill -0 $p || fail "a server died: $(cat "$T/ps_0" "$T/worker_0")"
done

# 3. Both workers on.
npy "$T/phase.npy" "<i8" "()" 3
expect_rc 0 $TFGC run --attach $opts "$T/p.tfg"
[ -s "$T/err" ] && fail "run 3 said: $(cat "$T/err")"
[ "$(grep -c "start [0-9]* True" "$T/out")" = 2 ] ||
	fail "run 3 printed: $(cat "$T/out")"
last=$(sed -n 's/^.* end \([0-9]*\) True$/\1/p' "$T/out" | sort -n | tail -1)
[ "$last" = $((s1 + 3 * M)) ] ||
	fail "run 3 ended at global step $last: $(cat "$T/out")"

expect_rc 0 $TFGC stop $opts "$T/p.tfg"
for s in ps_0 worker_0 worker_1; do
	eval "wait \$pid_$s" || fail "server $s exited $?: $(cat "$T/$s")"
	eval "pid_$s="
done
echo "train_kill: ok"
