#!/bin/sh
# Checkpoints of partitioned variables
# (spec §4.4.1 "Partitioned variables", §8.11 "save and restore"): one .npy per shard and slot
# shard, the manifest saying how they join; restore into a program that
# splits the variable otherwise (another number of shards, the other
# strategy, or not at all) cuts its shards anew, slots too, so that
# training goes on as if nothing had changed; a checkpoint whose shards
# do not add up is refused, naming the variable and changing nothing.
. tests/integration/common.inc
cd "$T" || fail "no $T"
TFGC=$OLDPWD/$TFGC
[ -x "$TFGC" ] || TFGC=$(command -v "${TFGC##*/}")

# prog SPLIT START: a program whose table e is SPLIT ("partitioned(X, 3)",
# "X"), starting with START (initialize() or restore("ck")), then one
# adagrad step, the table printed, saved to ck2
prog() {
	init=$(printf '%s' "$1" | sed 's/X/random_normal([7, 2], seed=5)/')
	cat <<P
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    input ids: i64[4]
    var e = $init
    l = reduce_sum(square(gather(e, ids) - 1.0))
    t = minimize(l, adagrad(0.5))
}
session "/job:worker/task:0" {
    $2
    print run(e)
    run(t, feed { ids: [0, 4, 6, 4] })
    print run(e)
    save("ck2")
}
P
}
# the reference: 3 shards, two steps in one run
prog 'partitioned(X, 3)' 'initialize()' >a.tfg
sed 's/    save("ck2")/    save("ck")\n    run(t, feed { ids: [0, 4, 6, 4] })\n    print run(e)/' a.tfg >ref.tfg
expect_rc 0 $TFGC run --free-ports ref.tfg
cp out ref.out
lines=$(wc -l <ref.out)
[ "$lines" = 21 ] || fail "ref printed $lines lines: $(cat ref.out)"
grep -q "^tfg checkpoint 2$" ck/MANIFEST || fail "manifest: $(cat ck/MANIFEST)"
expect_in ck/MANIFEST "e/part_1	e.part_1.npy	/job:ps/task:1	f32	[2,2]"
expect_in ck/MANIFEST "part=1/3:div:7:e/Adagrad"
second=$(sed -n 8,14p ref.out)
third=$(sed -n 15,21p ref.out)

# the same checkpoint into 2 shards (mod), 1 shard, 4 shards and the
# table unsplit: the restored table is the saved one, and the next step
# (adagrad's accumulator restored with it) is the reference's
for split in 'partitioned(X, 2, strategy="mod")' 'partitioned(X, 1)' \
	     'partitioned(X, 4)' 'X'; do
	prog "$split" 'restore("ck")' >b.tfg
	expect_rc 0 $TFGC run --free-ports b.tfg
	[ "$(sed -n 1,7p out)" = "$second" ] || fail "$split restored: $(cat out) ref: $second"
	[ "$(sed -n 8,14p out)" = "$third" ] || fail "$split stepped: $(cat out) ref: $third"
done
# the unsplit table's checkpoint (ck2 of the last) into 3 shards again
expect_in ck2/MANIFEST "e	e.npy	/job:ps/task:0	f32	[7,2]"
grep -q "^tfg checkpoint 1$" ck2/MANIFEST || fail "unsplit manifest: $(cat ck2/MANIFEST)"
prog 'partitioned(X, 3)' 'restore("ck2")' >c.tfg
expect_rc 0 $TFGC run --free-ports c.tfg
[ "$(sed -n 1,7p out)" = "$third" ] || fail "unsplit into 3: $(cat out)"

# shards that do not add up: each refused before anything changes
prog 'partitioned(X, 2, strategy="mod")' 'restore("bad")' >bad.tfg
bad() { # bad TEXT: restore of ./bad fails saying TEXT
	expect_rc 1 $TFGC run --free-ports bad.tfg
	expect_in err "$1"
	expect_in err "bad.tfg:9:5: error:"
}
rm -rf bad && cp -r ck bad
n=$(sed -n "s/^variables //p" ck/MANIFEST)
grep -v "^e/part_1	" ck/MANIFEST | sed "s/^variables .*/variables $((n - 1))/" >bad/MANIFEST
bad "bad: variable 'e' is split into 3 shards in the checkpoint, and shard 1 is missing: its shards do not add up to the variable's shape"
sed 's|part=\([0-9]\)/3:div:7:e$|part=\1/3:div:8:e|' ck/MANIFEST >bad/MANIFEST
bad "bad: variable 'e/part_1' is f32[2,2] in the checkpoint, which is no shard 1 of 3 of 'e' (8 rows): its shards do not add up to the variable's shape"
sed 's|part=2/3:div:7:e$|part=1/3:div:7:e|' ck/MANIFEST >bad/MANIFEST
bad "bad: shard 1 of variable 'e' is in the checkpoint twice (e/part_1, e/part_2)"
sed 's|part=2/3:div:7:e$|part=2/3:mod:7:e|' ck/MANIFEST >bad/MANIFEST
bad "bad: the shards of variable 'e' in the checkpoint do not agree on how it is split (e/part_2 is shard 2 of 3 of 7 rows, mod)"
sed 's|part=2/3:div:7:e$|part=3/3:div:7:e|' ck/MANIFEST >bad/MANIFEST
bad "bad/MANIFEST:6: malformed variable line"
cp ck/MANIFEST bad/MANIFEST
head -c 100 ck/e.part_2.npy >bad/e.part_2.npy
bad "bad/e.part_2.npy: variable 'e/part_2': 100 bytes, the manifest says 144 (truncated?)"
# a table of another size
sed 's/\[7, 2\]/[8, 2]/' bad.tfg | sed 's/restore("bad")/restore("ck")/' >big.tfg
expect_rc 1 $TFGC run --free-ports big.tfg
expect_in err "ck: variable 'e' is f32[7,2] (3 shards) in the checkpoint, f32[8,2] (2 shards, mod) in the program"
sed 's/partitioned(random_normal(\[7, 2\], seed=5), 2, strategy="mod")/random_normal([7, 3], seed=5)/' bad.tfg | sed 's/restore("bad")/restore("ck")/' >wide.tfg
expect_rc 1 $TFGC run --free-ports wide.tfg
expect_in err "ck: variable 'e' is f32[7,2] (3 shards) in the checkpoint, f32[7,3] (not partitioned) in the program"
echo "ok ckpt_shards"
