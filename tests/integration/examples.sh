#!/bin/sh
# The programs of record across two real task processes (spec §8):
# hello prints 238; mean prints the mean of x100.npy, as NumPy computes it;
# batches scores batches of two sizes with one program.
. tests/integration/common.inc

expect_rc 0 $TFGC run --free-ports examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "hello printed '$(cat "$T/out")'"

expect_rc 0 $TFGC run --free-ports examples/mean.tfg
python3 - "$T/out" <<'PY' || fail "mean.tfg output is wrong"
import struct, sys
# x100.npy: 128-byte header, then 100 little-endian f32 (no numpy needed)
raw = open("examples/data/x100.npy", "rb").read()
hl = struct.unpack("<H", raw[8:10])[0]
x = struct.unpack("<100f", raw[10 + hl:10 + hl + 400])
m1 = sum(x[:50]) / 50
m2 = sum(x[50:]) / 50
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", lines
lines = lines[:-1]
assert len(lines) == 4, lines
assert abs(float(lines[0]) - (m1 + m2) / 2) < 1e-6, (lines[0], (m1 + m2) / 2)
for i in range(3):
    k, v = lines[1 + i].split(" ")
    assert int(k) == i, lines
    assert abs(float(v) - m1) < 1e-6, (v, m1)
PY

# batches: x is f32[?, 4], fed 5 rows then 2; the classes and counts are
# NumPy's (argmax of softmax(x @ w + b)), worked out by hand once.
expect_rc 0 $TFGC run --free-ports examples/batches.tfg
printf "['setosa' 'versicolor' 'virginica']\n[0 1 2 0 2] [2. 1. 2.]\n[2 0] [1. 0. 1.]\n" \
	>"$T/want"
cmp -s "$T/out" "$T/want" || fail "batches printed '$(cat "$T/out")'"

# The placement log names every node's device (unfolded: hello folds to 238).
expect_rc 0 $TFGC run --free-ports --log-device-placement examples/hello.tfg
expect_in "$T/err" "y2: (sub) /job:local/task:1/cpu:0"
expect_in "$T/err" "y: (add) /job:local/task:0/cpu:0"
[ "$(cat "$T/out")" = "238" ] || fail "hello with the log printed '$(cat "$T/out")'"
echo "examples: ok"
