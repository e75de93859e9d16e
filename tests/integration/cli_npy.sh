#!/bin/sh
# tfgc run --feed/--fetch/--out
# (spec §10.2 "Feeds and fetches from the command line"): .npy in, .npy out,
# and the file written reads back as the same values, through NumPy's
# format.
. tests/integration/common.inc

cat >"$T/p.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223"] }
input x: f32[100]
device "/job:local/task:1" { y = x * 2.0 + 1.0 }
s = reduce_sum(y)
TFG
expect_rc 0 $TFGC run --free-ports "$T/p.tfg" --feed x=examples/data/x100.npy \
	--fetch y --fetch s --out "$T/y.npy" --out "$T/s.npy"
[ -s "$T/out" ] && fail "--out printed: $(cat "$T/out")"
python3 - "$T/y.npy" "$T/s.npy" <<'PY' || fail "the .npy files are wrong"
import struct, sys
def load(path):
    raw = open(path, "rb").read()
    assert raw[:6] == b"\x93NUMPY", raw[:6]
    hl = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + hl].decode()
    assert (10 + hl) % 64 == 0, "data not aligned"
    return header, raw[10 + hl:]
src = open("examples/data/x100.npy", "rb").read()
hl = struct.unpack("<H", src[8:10])[0]
x = struct.unpack("<100f", src[10 + hl:10 + hl + 400])
h, d = load(sys.argv[1])
assert "'descr': '<f4'" in h and "'shape': (100,)" in h, h
y = struct.unpack("<100f", d)
for a, b in zip(x, y):
    assert abs(b - (a * 2 + 1)) < 1e-5, (a, b)
h, d = load(sys.argv[2])
assert "'shape': ()" in h, h
assert abs(struct.unpack("<f", d)[0] - sum(y)) < 1e-3
PY
# What was written feeds a second run.
cat >"$T/q.tfg" <<'TFG'
input y: f32[100]

w = y[0:2] - y[0:2]
TFG
expect_rc 0 $TFGC run --free-ports "$T/q.tfg" --feed y="$T/y.npy" --fetch w
[ "$(cat "$T/out")" = "[0. 0.]" ] || fail "round trip printed '$(cat "$T/out")'"
# --out without --fetch, and a count that does not match, are usage errors.
expect_rc 2 $TFGC run "$T/p.tfg" --out "$T/a.npy"
expect_rc 2 $TFGC run "$T/p.tfg" --fetch y --fetch s --out "$T/a.npy"
echo "cli_npy: ok"
