#!/bin/sh
# Checkpoints (spec §8.11 "save and restore"): save writes every variable
# (random makers' draws included) as .npy files with a manifest, all or
# nothing; restore puts them back, and refuses a missing, truncated,
# bit-flipped or mismatched checkpoint with an error naming the file and the
# variable, changing nothing; save into a place it cannot write fails
# clearly.
. tests/integration/common.inc
cd "$T" || fail "no $T"
TFGC=$OLDPWD/$TFGC
[ -x "$TFGC" ] || TFGC=$(command -v "${TFGC##*/}")

cat >p.tfg <<'P'
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var w: f32[2, 3] = [[1, 2, 3], [4, 5, 6]]
    var b = 10
}
r = random_uniform([2], seed=9)
bump = assign_add(b, 5)
session "/job:worker/task:0" {
    initialize()
    print run(bump)
    save("ck")
    print run(r)
    print run(bump), run(r)
}
P
expect_rc 0 $TFGC run --free-ports p.tfg
[ "$(sed -n 1p out)" = "15" ] || fail "first run: $(cat out)"
for f in MANIFEST w.npy b.npy r.random.npy; do
	[ -f "ck/$f" ] || fail "ck/$f was not written"
done
[ "$(head -n 1 ck/MANIFEST)" = "tfg checkpoint 1" ] || fail "manifest: $(cat ck/MANIFEST)"
ls -d ck.tmp-* 2>/dev/null && fail "a temporary directory was left"
# NumPy reads the files: b.npy holds the i32 15
python3 - <<'PY' || fail "b.npy is not what NumPy would read"
import struct
raw = open("ck/b.npy", "rb").read()
assert raw[:6] == b"\x93NUMPY", raw[:6]
hl = struct.unpack("<H", raw[8:10])[0]
assert b"'<i4'" in raw[10:10 + hl] and b"()" in raw[10:10 + hl]
assert struct.unpack("<i", raw[10 + hl:])[0] == 15
PY

# restore: values and the random draws come back (r's second draw again)
cat >q.tfg <<'P'
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var w: f32[2, 3] = [[1, 2, 3], [4, 5, 6]]
    var b = 10
}
r = random_uniform([2], seed=9)
bump = assign_add(b, 5)
session "/job:worker/task:0" {
    initialize()
    print run(r)
    restore("ck")
    print run(b)
    print run(r)
    print run(w)
}
P
expect_rc 0 $TFGC run --free-ports q.tfg
[ "$(sed -n 2p out)" = "15" ] || fail "restored b: $(cat out)"
[ "$(sed -n 3p out)" = "$(sed -n 1p out)" ] || fail "the draw count was not restored: $(cat out)"

# a smaller program (an evaluation's: w alone, no random maker) restores
# what it has from the training's checkpoint (--restore, every task), and
# one line says what was left out, naming no internal state
cat >eval.tfg <<'P'
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var w: f32[2, 3] = [[0, 0, 0], [0, 0, 0]]
}
total = reduce_sum(w)
session "/job:worker/task:0" { print run(total) }
P
expect_rc 0 $TFGC run --free-ports --restore ck eval.tfg
[ "$(cat out)" = "21.0" ] || fail "the evaluation restored: $(cat out)"
[ "$(grep -c note err)" = 1 ] || fail "the note, once: $(cat err)"
expect_in err "tfgc: note: ck: left out 2 variables of the checkpoint that the program does not have: b and 1 of their internal state"
if grep -q "random" err; then fail "internal state named: $(cat err)"; fi
# one that lacks a variable the program has: an error, once
sed 's/var w: f32\[2, 3\]/var w2: f32[2, 3]/; s/reduce_sum(w)/reduce_sum(w2)/' eval.tfg >eval2.tfg
expect_rc 1 $TFGC run --free-ports --restore ck eval2.tfg
expect_in err "ck: variable 'w2' is not in the checkpoint"

# each bad checkpoint: a clear error naming the file and the variable
cat >bad.tfg <<'P'
cluster { ps = ["localhost:1", "localhost:2"]; worker = ["localhost:3"] }
device replicas(ps = "/job:ps", worker = "/job:worker") {
    var w: f32[2, 3] = [[1, 2, 3], [4, 5, 6]]
    var b = 10
}
r = random_uniform([2], seed=9)
bump = assign_add(b, 5)
session "/job:worker/task:0" {
    if len(uninitialized()) > 0 {
        initialize()
        print run(bump)
    } else {
        print run(b), run(w)
    }
}
session "/job:worker/task:0" {
    restore("bad")
}
P
bad() { # bad TEXT: restore of ./bad fails saying TEXT
	expect_rc 1 $TFGC run --free-ports bad.tfg
	expect_in err "$1"
	expect_in err "bad.tfg:17:5: error:"
}
n=$(sed -n 's/^variables //p' ck/MANIFEST)
rm -rf bad
bad "no checkpoint in bad: bad/MANIFEST: No such file or directory"
cp -r ck bad
head -c 100 ck/w.npy >bad/w.npy
bad "bad/w.npy: variable 'w': 100 bytes, the manifest says 152 (truncated?)"
cp ck/w.npy bad/w.npy
python3 - <<'PY'
b = bytearray(open("bad/w.npy", "rb").read()); b[-3] ^= 0x10
open("bad/w.npy", "wb").write(bytes(b))
PY
bad "bad/w.npy: variable 'w': CRC-32"
cp ck/w.npy bad/w.npy
sed 's/^w\t\(.*\)\tf32\t\[2,3\]/w\t\1\tf32\t[3,2]/' ck/MANIFEST >bad/MANIFEST
bad "bad: variable 'w' is f32[3,2] in the checkpoint, f32[2,3] in the program"
grep -v '^b	' ck/MANIFEST | sed "s/^variables $n/variables $((n - 1))/" \
	>bad/MANIFEST
bad "bad: variable 'b' is not in the checkpoint"
sed "s/^variables $n/variables $((n + 1))/" ck/MANIFEST >bad/MANIFEST
printf 'z\tz.npy\t/job:ps/task:0\ti32\t[]\tcrc32=00000000\tbytes=0\n' \
	>>bad/MANIFEST
# a variable the program does not have is left out, as TF1's
# Saver(var_list) does, and said once (the restore works: it prints no
# more, being the second session)
expect_rc 0 $TFGC run --free-ports bad.tfg
expect_in err "tfgc: note: bad.tfg:17:5: bad: left out 1 variable of the checkpoint that the program does not have: z"
head -n 3 ck/MANIFEST >bad/MANIFEST
bad "bad/MANIFEST: truncated: 1 of $n variables listed"
printf 'garbage\n' >bad/MANIFEST
bad "bad/MANIFEST: not a tfg checkpoint manifest"

# a failed restore changes nothing: against attached servers, the first
# run initializes (b = 15) and its restore fails; the second finds b and
# w as they were
p0=$(free_port)
p1=$(free_port)
p2=$(free_port)
addrs="--addr /job:ps/task:0=127.0.0.1:$p0 --addr /job:ps/task:1=127.0.0.1:$p1"
addrs="$addrs --addr /job:worker/task:0=127.0.0.1:$p2"
for t in "ps 0" "ps 1" "worker 0"; do
	set -- $t
	$TFGC server bad.tfg --job "$1" --task "$2" $addrs 2>>servers.err &
done
expect_rc 1 $TFGC run --attach --startup-timeout 10 $addrs bad.tfg
[ "$(cat out)" = "15" ] || fail "first attached run: $(cat out)"
expect_rc 1 $TFGC run --attach --startup-timeout 10 $addrs bad.tfg
printf '15 [[1. 2. 3.]\n [4. 5. 6.]]\n' >want
cmp -s out want || fail "a failed restore changed the variables: $(cat out)"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs bad.tfg
wait

# a save killed mid-way leaves its temporary, named after its writer
# (DIR.tmp-PID@HOST-XXXXXX): the next save removes those whose writer is
# gone, and keeps a live writer's and another host's
dead=$(sh -c 'echo $$')
host=$(hostname)
mkdir "ck.tmp-$dead@$host-AAAAAA" "ck.tmp-$$@$host-BBBBBB" \
	"ck.tmp-$dead@not-$host-CCCCCC"
head -c 1000 /dev/zero >"ck.tmp-$dead@$host-AAAAAA/w.npy"
expect_rc 0 $TFGC run --free-ports p.tfg
[ -d "ck.tmp-$dead@$host-AAAAAA" ] && fail "a dead writer's temporary was left"
[ -d "ck.tmp-$$@$host-BBBBBB" ] || fail "a live writer's temporary was removed"
[ -d "ck.tmp-$dead@not-$host-CCCCCC" ] ||
	fail "another host's temporary was removed"
rmdir "ck.tmp-$$@$host-BBBBBB" "ck.tmp-$dead@not-$host-CCCCCC"
[ "$(ls -d ck.tmp-* 2>/dev/null)" = "" ] || fail "left: $(ls -d ck.tmp-*)"

# save where it cannot write: a clear error naming the place
cat >nowrite.tfg <<'P'
var v = 1
session {
    initialize()
    save("no/such/dir/ck")
}
session {
    save("/proc/ck")
}
P
expect_rc 1 $TFGC run --free-ports nowrite.tfg
expect_in err "nowrite.tfg:4:5: error: cannot save a checkpoint to no/such/dir/ck: No such file or directory"
sed -i '4d' nowrite.tfg
expect_rc 1 $TFGC run --free-ports nowrite.tfg
expect_in err "error: cannot save a checkpoint to /proc/ck:"
echo "ckpt: ok"
