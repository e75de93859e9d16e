#!/bin/sh
# Checkpoints while training (spec §8.11 "save and restore"): a run with
# save_every(N, "DIR") killed (-9, the whole process group) mid-training,
# then started again, finds the checkpoint with exists(), restores it and
# goes on from the global step it had saved, to the same end; a run that
# ends saves its last steps too.
. tests/integration/common.inc

cat >"$T/p.tfg" <<TFG
param steps = 400
input x: f32[4, 2]
input t: f32[4]
var w = [0.0, 0.0]
var b = 0.0
var step: i64 = 0
y = reduce_sum(x * w, axis=1) + b
loss = reduce_mean(pow(y - t, 2.0))
train = minimize(loss, momentum(0.01, 0.5), global_step=step)
session {
    if exists("$T/ck/MANIFEST") { restore("$T/ck") } else { initialize() }
    print "from step", run(step)
    save_every(20, "$T/ck")
    for i in run(step)..steps {
        run(train, feed { x: [[1, 2], [2, 1], [3, 0], [0, 1]], t: [5, 4, 3, 2] })
        sleep(5)
    }
    print "at step", run(step), "loss < 0.05:", run(loss, feed { x: [[1, 2], [2, 1], [3, 0], [0, 1]], t: [5, 4, 3, 2] }) < 0.05
}
TFG

# the first run, killed once a checkpoint is there and some more steps
setsid $TFGC run "$T/p.tfg" >"$T/out1" 2>"$T/err1" &
pid=$!
i=0
while [ ! -e "$T/ck/MANIFEST" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$T/ck/MANIFEST" ] || { /bin/kill -KILL -- -$pid 2>/dev/null; fail "no checkpoint after 10 s"; }
sleep 0.3
/bin/kill -KILL -- -$pid 2>/dev/null
wait $pid 2>/dev/null
grep -q "at step" "$T/out1" && fail "the first run ended before it was killed"

# the second run goes on from the checkpoint's step
expect_rc 0 $TFGC run "$T/p.tfg"
from=$(sed -n 's/^from step \([0-9]*\)$/\1/p' "$T/out")
[ -n "$from" ] && [ "$from" -gt 0 ] && [ "$from" -lt 400 ] ||
	fail "the second run began from step '$from': $(cat "$T/out")"
grep -qx "at step 400 loss < 0.05: True" "$T/out" ||
	fail "the second run ended: $(cat "$T/out")"

# a third starts from the end: its last save was at the end of the second
expect_rc 0 $TFGC run "$T/p.tfg"
grep -qx "from step 400" "$T/out" || fail "the third run: $(cat "$T/out")"
echo "ok: killed, restored from step $from, trained to 400"
