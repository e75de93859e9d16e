#!/bin/sh
# examples/cnn_mnist.tfg (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose",
# §6.33 "max_pool, avg_pool"): TF's Deep MNIST network trained by a ps and two
# asynchronous workers with Adam, and examples/cnn_mnist_local.tfg, the
# same in one task.  Here 50 batches per worker (the ps
# counts exactly 100 updates) and the first 1000 test images, above 80%;
# with FULL=1 (make mnist) the example's own 5 epochs, at 99% or more.
# The data is $TFG_MNIST or ../shared/data/mnist, never committed: SKIP
# without it.
. tests/integration/common.inc

need_mnist
if [ "${FULL:-0}" = 1 ]; then
	ARGS="" WANT=0.99 STEPS=""
else
	ARGS="--param epochs=1 --param limit=50 --param test=1000"
	WANT=0.80 STEPS=100
fi

# accurate NAME: the last test accuracy in $T/out is $WANT or more.
accurate() {
	cat "$T/out"
	acc=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$T/out" | tail -1)
	[ -n "$acc" ] || fail "$1 printed no accuracy"
	python3 -c "import sys; sys.exit(not $acc >= $WANT)" ||
		fail "$1: test accuracy $acc, below $WANT"
}

# shellcheck disable=SC2086
expect_rc 0 $TFGC run --free-ports --no-progress examples/cnn_mnist.tfg \
	--param data="$DATA" $ARGS
accurate cnn_mnist.tfg
steps=$(sed -n 's/.*trained \([0-9]*\) global steps/\1/p' "$T/out")
[ -z "$STEPS" ] || [ "$steps" = "$STEPS" ] ||
	fail "the ps counted $steps updates, not $STEPS"

# the one-task variant: the same network without a ps (50 steps here)
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --no-progress examples/cnn_mnist_local.tfg \
	--param data="$DATA" $ARGS
accurate cnn_mnist_local.tfg
[ -z "$STEPS" ] || grep -q "step $((STEPS / 2)) test accuracy" "$T/out" ||
	fail "cnn_mnist_local.tfg did not take $((STEPS / 2)) steps"
echo "ok"
