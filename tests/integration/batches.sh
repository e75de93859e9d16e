#!/bin/sh
# for b in batches(...) (spec §8.6.1 "batches"): the order is the spec's
# permutation, as a Python version of its pseudo-code draws it, and the
# shards partition it; with MNIST (../shared/data/mnist, when present:
# never committed) two workers each batch their shard of the training
# set, together seeing every row once an epoch, a short last batch
# compiles once, and gathering an epoch is fast.
. tests/integration/common.inc

# 997 rows of i64 0..996, as a .npy file (no NumPy needed)
python3 - "$T/rows.npy" <<'PY'
import struct, sys
n = 997
h = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % n
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.write(struct.pack("<%dq" % n, *range(n)))
PY
cat >"$T/p.tfg" <<TFG
session {
    let r = load("$T/rows.npy")
    for k in 0..3 {
        for b in batches(r, 400, seed=-2024, shard=k, of=3) {
            print "batch", k, b.index, b.count, b.size
            print b.x
        }
    }
}
TFG
expect_rc 0 $TFGC run "$T/p.tfg"
python3 - "$T/out" <<'PY' || fail "batches() drew another order"
import re, sys
M = (1 << 64) - 1
def perm(n, seed):
    s, p = seed & M, list(range(n))
    for i in range(n - 1, 0, -1):
        s = (s + 0x9E3779B97F4A7C15) & M
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        z ^= z >> 31
        j = (z * (i + 1)) >> 64
        p[i], p[j] = p[j], p[i]
    return p
p = perm(997, -2024)
text = open(sys.argv[1]).read()
parts = re.split(r"^batch (\d+) (\d+) (\d+) (\d+)$", text, flags=re.M)[1:]
got = {}
for i in range(0, len(parts), 5):
    k, idx, count, size = map(int, parts[i:i + 4])
    rows = [int(v) for v in re.findall(r"-?\d+", parts[i + 4])]
    assert len(rows) == size, (k, idx, size, len(rows))
    assert count == -(-len(p[k::3]) // 400), (k, count)
    got.setdefault(k, []).extend(rows)
for k in range(3):
    assert got[k] == p[k::3], k
assert sorted(got[0] + got[1] + got[2]) == list(range(997))
PY

mnist=../shared/data/mnist
if [ ! -e "$mnist/train-images-idx3-ubyte.gz" ] ||
   [ ! -e "$mnist/train-labels-idx1-ubyte.gz" ]; then
	echo "SKIP: no MNIST in $mnist"
	exit 0
fi
cat >"$T/m.tfg" <<'TFG'
cluster { worker = ["localhost:2222", "localhost:2223"] }
param data = "no/such/dir"
input x: u8[?, 28, 28]
input y_: u8[?]
n = reduce_sum(cast(y_, i64)) + reduce_sum(cast(x, i64)) * 0
session each "/job:worker" as w {
    let images = load(data + "/train-images-idx3-ubyte.gz")
    let labels = load(data + "/train-labels-idx1-ubyte.gz")
    for epoch in 0..3 {
        let rows = 0
        let sum = 0
        for b in batches(images, labels, 128, seed=epoch, shard=w.index, of=w.count) {
            let rows = rows + b.size
            let sum = sum + run(n, feed { x: b.x, y_: b.y })
        }
        let t0 = now()
        for b in batches(images, labels, 100, seed=epoch, shard=w.index, of=w.count) {
            let rows = rows + 0
        }
        print "epoch", epoch, rows, sum, now() - t0
    }
}
TFG
expect_rc 0 $TFGC run --free-ports --verbose --param "data=$mnist" "$T/m.tfg"
python3 - "$T/out" "$T/err" <<'PY' || fail "MNIST batches are wrong"
import re, sys
out, err = open(sys.argv[1]).read(), open(sys.argv[2]).read()
ep = re.findall(r"^\[/job:worker/task:(\d)\] epoch (\d) (\d+) (\d+) (\S+)$",
                out, re.M)
assert len(ep) == 6, out
rows, sums = {}, {}
for task, e, r, s, secs in ep:
    rows[e] = rows.get(e, 0) + int(r)
    sums.setdefault(e, []).append(int(s))
    # (how long the gathering took is the program's to print, not a
    # test's to assert: make bench times what is fast)
    assert float(secs) >= 0, ("gathering took", secs)
assert set(rows.values()) == {60000}, rows
totals = {sum(v) for v in sums.values()}
assert len(totals) == 1, sums  # the same rows each epoch, sharded anew
# 30000 rows a worker: batches of 128 and a last one of 48, each shape
# compiled once by each task a run needs (n is on task 0), not per epoch
spec = re.findall(r"^tfg: (\S+): specialisation \d+ of signature (\d+) "
                  r"for (.*) \(plan", err, re.M)
assert len(spec) == len(set(spec)) == 6, spec
assert {s[2] for s in spec} == {"x: u8[128, 28, 28], y_: u8[128]",
                                "x: u8[48, 28, 28], y_: u8[48]"}, spec
PY
