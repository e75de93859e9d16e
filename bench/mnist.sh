#!/bin/sh
# bench/mnist.sh: training (issue 11), each tfg figure beside its peers
# measured in the same run: one SGD step of the 784-100-10 MLP in one
# task against NumPy and eager PyTorch (bench/mlp_step.tfg and .py), on
# a batch of random pixels and on MNIST's first 100 training images, and
# the program of record, asynchronous MNIST with 1 ps + 2 workers
# (examples/mnist_distributed.tfg) against TF1 (bench/tf1_mnist.py), a
# torch.distributed.rpc parameter server (bench/torch_rpc_mnist.py) and
# single-process PyTorch (bench/torch_mnist.py): global steps per second
# and the wall time to 97% test accuracy, with the same model (relu,
# init scaled by 1/sqrt(fan-in)), sgd(0.3), batch 100, 5 epochs, the test
# accuracy taken once an epoch by worker 0.  The peers come from make
# bench-deps; the data from $TFG_MNIST or ../shared/data/mnist.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
T=$(mktemp -d /tmp/tfg-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
TF=build/venv/bin/python3
DATA=${TFG_MNIST:-../shared/data/mnist}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# step DIR: tfg's step and its peers' on the batch in DIR/x.npy, y.npy,
# each with the cores' threads and with one: its faster
step() {
	tfg=
	for n in "" 1; do
		TFG_THREADS=$n $TFGC run bench/mlp_step.tfg --param dir="$1" \
			>"$1/step" || exit 1
		us=$(sed -n 's/^tfg_step_us //p' "$1/step" | median)
		echo "tfg_step_us $us threads ${n:-$(nproc)} (bench/mlp_step.tfg," \
			"median of 9 x 200)"
		tfg=$(awk -v a="$tfg" -v b="$us" \
			'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
	done
	$PY bench/mlp_step.py --feed "$1" | tee "$1/peers"
	$PY bench/mlp_step.py --feed "$1" --threads 1 | tee -a "$1/peers"
	for p in numpy torch; do
		awk -v a="$tfg" -v p=$p '$1 == p "_step_us" && $2 > 0 &&
			(b == 0 || $2 < b) { b = $2 }
			END { if (b > 0) printf "ratio %s step (the faster " \
			      "of the two) / tfg step: %.2fx\n", p, b / a }' \
			"$1/peers"
	done
}

echo "== one SGD step of the 784-100-10 MLP, batch 100, one task =="
if $PY -c 'import numpy' 2>/dev/null; then
	mkdir "$T/random" "$T/mnist"
	echo "-- a batch of random pixels, uniform in [0, 1) (all nonzero)"
	$PY -c "
import numpy as np
r = np.random.default_rng(1)
np.save('$T/random/x.npy', r.random((100, 784), dtype=np.float32))
np.save('$T/random/y.npy', r.integers(0, 10, 100).astype(np.uint8))"
	step "$T/random"
	if [ -e "$DATA/train-images-idx3-ubyte.gz" ]; then
		echo "-- MNIST's first 100 training images, scaled to [0, 1]"
		$PY -c "
import sys
import numpy as np
sys.path.insert(0, 'bench')
import mnist_data
x, y, _, _ = mnist_data.load('$DATA')
np.save('$T/mnist/x.npy', x[:100])
np.save('$T/mnist/y.npy', y[:100].astype(np.uint8))
print('nonzero pixels: %.1f%%' % (100.0 * np.count_nonzero(x[:100]) / x[:100].size))"
		step "$T/mnist"
	else
		echo "-- MNIST's batch skipped: no MNIST at $DATA"
	fi
else
	echo "skipped: no NumPy for /usr/bin/python3 (make bench-deps)"
fi

echo "== MNIST, 1 ps + 2 asynchronous workers, sgd(0.3), 5 epochs =="
if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ]; then
	echo "skipped: no MNIST at $DATA"
	exit 0
fi
# tfg: global steps per second over the training (worker 0's last line:
# the global step then, over the time since it began), the time of the
# first epoch at 97%; median of 3 runs.  The JIT cache (spec/design.md
# "JIT cache") is the bench's own: a run 0 fills it, and its time to 97%
# is printed as the cold one; runs 1-3 load their code from it, as any
# run of a program after its first.
TFG_JIT_CACHE=$T/jit
export TFG_JIT_CACHE
for i in 0 1 2 3; do
	$TFGC run --free-ports examples/mnist_distributed.tfg \
		--param data="$DATA" --param epochs=5 \
		--param curves="$T/curves.csv" >"$T/tfg.$i" || exit 1
	$TFGC run examples/mnist.tfg --param data="$DATA" --param epochs=5 \
		--param curves="$T/curves.csv" >"$T/one.$i" || exit 1
	# the same over TCP (--no-shm), interleaved: what shared memory
	# between the tasks gives (issue 29)
	[ $i = 0 ] || $TFGC run --free-ports --no-shm \
		examples/mnist_distributed.tfg --param data="$DATA" \
		--param epochs=5 --param curves="$T/curves.csv" \
		>"$T/tcp.$i" || exit 1
done
cat "$T/tfg.1"
rate=$(for i in 1 2 3; do
	sed -n 's/.*global step \([0-9]*\) .* time \([0-9.]*\)\( s\)*$/\1 \2/p' \
		"$T/tfg.$i" | tail -1 | awk '{print $1 / $2}'; done | median)
t97=$(for i in 1 2 3; do
	awk '/test accuracy/ && $9 >= 0.97 {print $11; exit}' "$T/tfg.$i" |
		grep . || echo 1e9; done | median)
cold=$(awk '/test accuracy/ && $9 >= 0.97 {print $11; exit}' "$T/tfg.0")
echo "tfg: $rate global steps/s, 97% after $t97 s (medians of 3; the" \
	"first run, which filled the JIT cache: 97% after ${cold:-never} s)"
tcprate=$(for i in 1 2 3; do
	sed -n 's/.*global step \([0-9]*\) .* time \([0-9.]*\)\( s\)*$/\1 \2/p' \
		"$T/tcp.$i" | tail -1 | awk '{print $1 / $2}'; done | median)
awk -v r="$rate" -v t="$tcprate" 'BEGIN {printf "tfg over TCP (--no-shm): %.0f global steps/s; shared memory: %.2fx\n", t, r / t}'

one97=$(for i in 1 2 3; do
	awk '/test accuracy/ && $7 >= 0.97 {print $9; exit}' "$T/one.$i" |
		grep . || echo 1e9; done | median)
echo "tfg in one task (examples/mnist.tfg): 97% after $one97 s (median of 3)"
settings="--act relu --init scaled --opt sgd --lr 0.3 --epochs 5 --data $DATA"
if [ -x $TF ] && $TF -c 'import tensorflow' 2>/dev/null; then
	$TF bench/tf1_mnist.py $settings 2>/dev/null | tee "$T/tf1"
	awk -v r="$rate" -v t="$t97" '
		$1 == "tf1_mnist_steps_per_s" {
			printf "ratio tfg / TF1 global steps/s: %.1fx\n", r / $2 }
		$1 == "tf1_mnist_target" && $3 == "time" {
			printf "ratio tfg / TF1 time to 97%%: %.2f\n", t / $4 }' \
		"$T/tf1"
else
	echo "TF1: skipped (make bench-deps installs TF into build/venv)"
fi
if $PY -c 'import torch' 2>/dev/null; then
	$PY bench/torch_rpc_mnist.py $settings 2>/dev/null | tee "$T/rpc"
	awk -v r="$rate" '$1 == "torch_rpc_mnist_steps_per_s" {
		printf "ratio tfg / torch.distributed.rpc global steps/s: %.1fx\n",
		       r / $2 }' "$T/rpc"
	$PY bench/torch_mnist.py $settings --threads 1 2>/dev/null |
		tee "$T/torch"
	awk -v t="$t97" -v o="$one97" '$1 == "torch_mnist_target" &&
		$3 == "time" {
		printf "ratio tfg (1 ps + 2 workers) / single-process PyTorch " \
		       "time to 97%%: %.2f; tfg in one task / it: %.2f\n",
		       t / $4, o / $4 }' "$T/torch"
else
	echo "PyTorch: skipped (make bench-deps)"
fi
