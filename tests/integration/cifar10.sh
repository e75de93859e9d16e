#!/bin/sh
# examples/cifar10.tfg (spec §8.4 "load"): the CIFAR-10 network trained by
# a ps and two workers on generated batches in CIFAR-10's binary format
# (random pixels and labels: 400 training records, 200 test records),
# since the real data is not part of the repository: one epoch of one
# file, the ps counting the 4 updates of its 4 batches, a test accuracy
# printed.
. tests/integration/common.inc

mkdir "$T/cifar"
python3 - "$T/cifar" <<'PY' || fail "could not write the batches"
import os, random, sys
r = random.Random(7)
def batch(name, n):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        for _ in range(n):
            f.write(bytes([r.randrange(10)]) +
                    bytes(r.randrange(256) for _ in range(3072)))
batch("data_batch_1.bin", 400)
batch("test_batch.bin", 200)
PY
expect_rc 0 $TFGC run --free-ports --no-progress examples/cifar10.tfg \
	--param data="$T/cifar" --param files=1 --param epochs=1 \
	--param test=200
cat "$T/out"
acc=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$T/out")
[ -n "$acc" ] || fail "cifar10.tfg printed no accuracy"
python3 -c "import sys; sys.exit(not 0 <= $acc <= 1)" ||
	fail "cifar10.tfg: test accuracy $acc"
grep -q "trained 4 global steps" "$T/out" ||
	fail "the ps did not count the 4 updates"
echo "ok"
