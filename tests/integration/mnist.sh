#!/bin/sh
# The MNIST programs of record (spec §6.26 "minimize and optimizers",
# §8.6.1 "batches"): examples/mnist.tfg in one task and
# examples/mnist_distributed.tfg with a ps and two asynchronous workers
# train the 784-100-10 classifier; one epoch each here (test accuracy
# above 92%, and the ps counts exactly 600 updates an epoch), or with
# FULL=1 (make mnist) the examples' own epochs, past 97%; each writes
# its learning curves (§8.14 "record") to a CSV file.  The data is
# $TFG_MNIST or ../shared/data/mnist, never committed: SKIP without it.
. tests/integration/common.inc

need_mnist
if [ "${FULL:-0}" = 1 ]; then
	EPOCHS="" WANT=0.97
else
	EPOCHS="--param epochs=1" WANT=0.92
fi

# best_accuracy FILE: the best test accuracy of the "epoch" lines
best_accuracy() {
	sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$1" | sort -g | tail -1
}

# check_curves FILE EPOCHS: the loss every 100 steps, then the test
# accuracy, each epoch
check_curves() {
	python3 - "$1" "$2" <<'PY' || fail "the learning curves in $1"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["step", "loss", "accuracy", "time"], rows[0]
acc = [r for r in rows[1:] if r[2]]
loss = [r for r in rows[1:] if r[1]]
assert len(acc) == int(sys.argv[2]), acc
assert len(loss) >= 3 * len(acc), loss
assert float(acc[-1][2]) > 0.9 and float(loss[-1][1]) < 1, rows
PY
}

expect_rc 0 $TFGC run examples/mnist.tfg --param data="$DATA" $EPOCHS \
	--param curves="$T/curves.csv"
cat "$T/out"
acc=$(best_accuracy "$T/out")
[ -n "$acc" ] || fail "mnist.tfg printed no accuracy"
python3 -c "import sys; sys.exit(not $acc >= $WANT)" ||
	fail "mnist.tfg: test accuracy $acc, below $WANT"

check_curves "$T/curves.csv" "$(grep -c "test accuracy" "$T/out")"

expect_rc 0 $TFGC run --free-ports examples/mnist_distributed.tfg \
	--param data="$DATA" $EPOCHS --param curves="$T/curves.csv"
cat "$T/out"
acc=$(best_accuracy "$T/out")
[ -n "$acc" ] || fail "mnist_distributed.tfg printed no accuracy"
python3 -c "import sys; sys.exit(not $acc >= $WANT)" ||
	fail "mnist_distributed.tfg: test accuracy $acc, below $WANT"
epochs=$(grep -c "test accuracy" "$T/out")
steps=$(sed -n 's/.*trained \([0-9]*\) global steps/\1/p' "$T/out")
[ "$steps" = $((600 * epochs)) ] ||
	fail "the ps counted $steps updates for $epochs epochs of 600"
check_curves "$T/curves.csv" "$epochs"
echo "ok"
