#!/bin/sh
# Values in a variable's memory:
# spec §10.4 "Buffer planning and `--emit=memory`".  A 64 MiB variable
# on a ps, initialized, fetched, saved, restored and assigned a value
# made from itself, each with no copy beside the variable, keeps its
# values: the fetch and the ps's own sum of squares agree bit for bit,
# the restore undoes an update, w * 2 gives 4 times the sum; the same
# with --check-numerics, and on a single task (the client's own
# variable, its sends local).
. tests/integration/common.inc
cd "$T" || fail "no $T"
TFGC=$OLDPWD/$TFGC
[ -x "$TFGC" ] || TFGC=$(command -v "${TFGC##*/}")

prog() { # CLUSTER PS WORKER
	cat <<P
cluster { $1 }
device "$2" {
    var w = random_normal([4096, 4096], stddev=1.0, seed=7)
    total = reduce_sum(w * w)
    twice = assign(w, w * 2.0)
    bump = assign_add(w, 1.0)
}
device "$3" {
    input x: f32[4096, 4096]
    sx = reduce_sum(x * x)
}
session "$3" {
    initialize()
    let t0 = run(total)
    print "fetched", run(sx, feed { x: run(w) }) == t0
    save("ck")
    run(bump)
    print "bumped", run(total) != t0
    restore("ck")
    print "restored", run(total) == t0
    print "twice", run(sx, feed { x: run(twice) }) == 4 * t0, run(total) == 4 * t0
}
P
}
expected="fetched True
bumped True
restored True
twice True True"

prog 'ps = ["localhost:1"]; worker = ["localhost:2"]' /job:ps/task:0 \
	/job:worker/task:0 >two.tfg
# the variable's values in its memory, no slots (the fetch, sig 1)
$TFGC emit --emit=memory --task /job:ps/task:0 two.tfg >mem 2>&1 ||
	fail "emit: $(cat mem)"
expect_in mem "67108864  variable  w = variable"
for opt in "" --check-numerics; do
	rm -rf ck
	# shellcheck disable=SC2086
	expect_rc 0 $TFGC run --free-ports $opt two.tfg
	[ "$(cat out)" = "$expected" ] || fail "two tasks $opt: $(cat out)"
done

prog 'local = ["localhost:1"]' /job:local/task:0 /job:local/task:0 >one.tfg
rm -rf ck
expect_rc 0 $TFGC run --free-ports one.tfg
[ "$(cat out)" = "$expected" ] || fail "one task: $(cat out)"
echo "ok"
