#!/bin/sh
# Tasks of one host exchange tensors through shared memory (issue 29;
# spec §10.1.3 "Link counts", spec/design.md "Shared memory"):
#   - a run whose links carry frames moves them through rings (--stats
#     says how many links do), with the results of --no-shm, which
#     keeps every link on TCP;
#   - the writer of a ring killed (-9) while it streams 16 MiB tensors:
#     every step that completed saw its tensor whole, and the run fails
#     naming the lost task, in bounded time.
. tests/integration/common.inc

# 1. 200 steps, each sending a 4 MiB tensor from task 1 to task 0 and a
# scalar back: every sum is exact (2^20 ones), keyed (the default) or
# not, with shared memory or without.
cat >"$T/p.tfg" <<'TFG'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:1" {
    var w = ones([1048576])
    z = w * 1.0
}
device "/job:local/task:0" { s = reduce_sum(z) }
session "/job:local/task:0" {
    initialize()
    for i in 0..200 { print run(s) }
}
TFG
for opts in "" "--no-cluster-key" "--no-shm"; do
	expect_rc 0 $TFGC run "$T/p.tfg" --free-ports --stats $opts
	[ "$(grep -c '^1048576.0$' "$T/out")" = 200 ] ||
		fail "$opts: not 200 sums of 2^20: $(sort "$T/out" | uniq -c | head -n 3)"
	if [ "$opts" = "--no-shm" ]; then
		grep -q "shared memory" "$T/err" &&
			fail "--no-shm: a link used shared memory: $(grep pairs "$T/err")"
	else
		grep -q "^tfgc: 1 of the 1 pairs of tasks exchanged messages, over [0-9]* connections ([1-9][0-9]* of them through shared memory)$" "$T/err" ||
			fail "$opts: no link through shared memory: $(grep pairs "$T/err")"
	fi
done

# 2. The writer killed mid-stream: task 1 sends 16 MiB a step, on and on;
# killed, task 0's step fails naming it, and no step before summed a
# torn tensor.
cat >"$T/k.tfg" <<'TFG'
cluster { local = ["localhost:1", "localhost:2"] }
device "/job:local/task:1" {
    var w = ones([4194304])
    z = w * 1.0
}
device "/job:local/task:0" { s = reduce_sum(z) }
session "/job:local/task:0" {
    initialize()
    for i in 0..100000 { print run(s) }
}
TFG
$TFGC run "$T/k.tfg" --free-ports >"$T/out" 2>"$T/err" &
run=$!
wait_for "$T/out" '^4194304.0$' || fail "no step finished: $(cat "$T/err")"
sleep 0.5
w=$(pgrep -P $run -f -- "--job local --task 1" | head -n 1)
[ -n "$w" ] || fail "no task 1 to kill"
kill -9 "$w"
t0=$(now)
wait $run
rc=$?
t1=$(now)
within 15 "$t0" "$t1" "the run's end after its writer was killed"
[ $rc != 0 ] || fail "the run went on without its task 1"
steps=$(grep -c . "$T/out")
[ "$steps" -ge 2 ] || fail "only $steps steps before the kill"
bad=$(grep -v '^4194304.0$' "$T/out" | head -n 3)
[ -z "$bad" ] || fail "a step summed a torn tensor: $bad"
grep -q "/job:local/task:1" "$T/err" || fail "the lost task is not named: $(cat "$T/err")"
grep -qi "segmentation\|AddressSanitizer\|assert" "$T/err" &&
	fail "a task crashed: $(cat "$T/err")"
echo "ok ($steps steps of 16 MiB before the writer was killed)"
