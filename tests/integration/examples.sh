#!/bin/sh
# The programs of record across two real task processes (spec §10 "Processes"):
# hello prints 238; mean prints the mean of x100.npy, as NumPy computes it;
# batches scores batches of two sizes with one program; ps_counter shares
# a variable between two workers and a ps; replicas, ingraph and between
# replicate a graph over workers as TF1's tutorials do.
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

# ps_counter: the workers' increments are atomic, so the ten values they
# see are 1 to 10, each once, rising for each worker; the ps sees the
# counter only grow; the last session finds exactly 10.
expect_rc 0 $TFGC run --free-ports examples/ps_counter.tfg
python3 - "$T/out" <<'PY' || fail "ps_counter printed '$(cat "$T/out")'"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[-1] == "10.0", lines
seen, ps, last = [], [], {}
for l in lines[:-1]:
    m = re.fullmatch(r"\[/job:worker/task:(\d)\] worker (\d) made it (\d+)\.0", l)
    if m:
        assert m.group(1) == m.group(2), l
        v = int(m.group(3))
        assert v > last.get(m.group(1), 0), l
        last[m.group(1)] = v
        seen.append(v)
        continue
    m = re.fullmatch(r"\[/job:ps/task:0\] ps sees (\d+)\.0", l)
    assert m, l
    ps.append(int(m.group(1)))
assert sorted(seen) == list(range(1, 11)), seen
assert len(ps) == 5 and ps == sorted(ps) and 0 <= ps[0] and ps[-1] <= 10, ps
PY

# replicas: each worker prints its own copy's values; both agree.
expect_rc 0 $TFGC run --free-ports examples/replicas.tfg
sort "$T/out" >"$T/sorted"
printf '[/job:worker/task:0] 3.0 6.0 9.0 15.0\n[/job:worker/task:1] 3.0 6.0 9.0 15.0\n' \
	>"$T/want"
cmp -s "$T/sorted" "$T/want" || fail "replicas printed '$(cat "$T/out")'"

# ingraph: x @ w computed by halves on the two workers, put back together.
expect_rc 0 $TFGC run --free-ports examples/ingraph.tfg
printf '[[ 7.]\n [16.]\n [25.]\n [34.]]\n' >"$T/want"
cmp -s "$T/out" "$T/want" || fail "ingraph printed '$(cat "$T/out")'"

# between: 2 workers x 50 asynchronous steps of w -= 0.1 (w - 10) on the
# shared variables: exactly 100 steps counted, and w near 10 (the order
# of the workers' updates varies, so its last digits do too).
expect_rc 0 $TFGC run --free-ports examples/between.tfg
python3 - "$T/out" <<'PY' || fail "between printed '$(cat "$T/out")'"
import sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[0] == "steps: 100", lines
assert lines[1].startswith("w: ") and abs(float(lines[1][3:]) - 10) < 0.01, lines
PY

# The placement log names every node's device (unfolded: hello folds to 238).
expect_rc 0 $TFGC run --free-ports --log-device-placement examples/hello.tfg
expect_in "$T/err" "y2: (sub) /job:local/task:1/cpu:0"
expect_in "$T/err" "y: (add) /job:local/task:0/cpu:0"
[ "$(cat "$T/out")" = "238" ] || fail "hello with the log printed '$(cat "$T/out")'"
echo "examples: ok"
