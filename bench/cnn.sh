#!/bin/sh
# bench/cnn.sh: TF's Deep MNIST network (issue 27), two measures.
# 1. One Adam step, batch 100, in one task: tfg (bench/cnn_step.tfg)
#    against TF 2's tf.compat.v1 and eager PyTorch (bench/cnn_step.py),
#    each on 1 thread and on every core, in the same run, on MNIST's
#    first 100 training images (random pixels without MNIST); the ratio
#    of the faster peer's best to tfg's best.
# 2. The wall time to 99% test accuracy: examples/cnn_mnist.tfg (1 ps +
#    2 asynchronous workers) against TF1's distributed runtime with the
#    same model, settings and cluster (bench/tf1_cnn_mnist.py) and
#    against single-process eager PyTorch on one thread, its faster
#    count here (bench/torch_cnn_mnist.py); CNN_EPOCHS (4) epochs at
#    most, CNN_DIST=0 skips it (about 15 minutes on 2 cores).
# The peers come from make bench-deps (TF in build/venv, PyTorch
# Debian's); the data from $TFG_MNIST or ../shared/data/mnist.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
T=$(mktemp -d /tmp/tfg-cnn.XXXXXX)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
TF=build/venv/bin/python3
DATA=${TFG_MNIST:-../shared/data/mnist}
CORES=$(nproc)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== one Adam step of Deep MNIST (conv-pool-conv-pool-dense-dense), batch 100, one task =="
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $CORES cores"
if ! $PY -c 'import numpy' 2>/dev/null; then
	echo "skipped: no NumPy for $PY (make bench-deps)"
	exit 0
fi
$PY - "$T" "$DATA" <<'PY'
import gzip, os, sys
import numpy as np
t, d = sys.argv[1], sys.argv[2]
p = os.path.join(d, "train-images-idx3-ubyte.gz")
if os.path.exists(p):
    with gzip.open(p) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)[:78400]
    with gzip.open(os.path.join(d, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:100]
    print("batch: MNIST's first 100 training images")
else:
    r = np.random.default_rng(1)
    x = r.integers(0, 256, 78400, dtype=np.uint8)
    y = r.integers(0, 10, 100).astype(np.uint8)
    print("batch: random pixels (no MNIST at %s)" % d)
np.save(t + "/x.npy", x.reshape(100, 28, 28))
np.save(t + "/y.npy", y)
PY
best=
for n in "$CORES" 1; do
	TFG_THREADS=$n $TFGC run bench/cnn_step.tfg --param dir="$T" \
		>"$T/tfg" || exit 1
	ms=$(sed -n 's/^tfg_step_ms //p' "$T/tfg" | median)
	echo "tfg_step_ms $ms threads $n (bench/cnn_step.tfg, median of 7 x 10)"
	best=$(awk -v a="$best" -v b="$ms" \
		'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
done
: >"$T/peers"
for n in 1 "$CORES"; do
	if [ -x "$TF" ]; then
		$TF bench/cnn_step.py --feed "$T" --threads "$n" --only tf1 \
			2>/dev/null | tee -a "$T/peers"
	else
		echo "tf1_step_ms none (not installed: make bench-deps)"
	fi
	$PY bench/cnn_step.py --feed "$T" --threads "$n" --only torch \
		2>/dev/null | tee -a "$T/peers"
done
awk -v a="$best" '$2 > 0 { p = $1; sub(/_step_ms/, "", p)
	if (!(p in b) || $2 < b[p]) b[p] = $2 }
	END { for (p in b) { printf "ratio %s step (its best) / tfg step " \
	      "(its best): %.2fx\n", p, b[p] / a
	      if (f == 0 || b[p] < f) f = b[p] }
	      if (f > 0) printf "ratio faster peer / tfg: %.2fx (goal >= 1.5x)\n", f / a }' \
	"$T/peers"

echo "== Deep MNIST, 1 ps + 2 asynchronous workers, Adam(1e-3), batch 100, to 99% test accuracy =="
if [ "${CNN_DIST:-1}" = 0 ]; then
	echo "skipped: CNN_DIST=0"
	exit 0
fi
if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ]; then
	echo "skipped: no MNIST at $DATA"
	exit 0
fi
$TFGC run --free-ports --no-progress examples/cnn_mnist.tfg \
	--param data="$DATA" --param epochs="${CNN_EPOCHS:-4}" | tee "$T/dist"
tfg=$(awk '/test accuracy/ { for (i = 1; i < NF; i++) {
		if ($i == "accuracy") a = $(i + 1); if ($i == "time") t = $(i + 1) }
	if (a >= 0.99) { print t; exit } }' "$T/dist")
echo "tfg_cnn_target 0.99 time ${tfg:-not_reached}"
if [ -x "$TF" ]; then
	$TF bench/tf1_cnn_mnist.py --data "$DATA" --epochs "${CNN_EPOCHS:-4}" \
		--stop-at-target 2>/dev/null | tee "$T/tf1"
	tf1=$(awk '$1 == "tf1_mnist_target" && $3 == "time" { print $4 }' \
		"$T/tf1")
	if [ -n "$tfg" ] && [ -n "$tf1" ]; then
		awk -v a="$tfg" -v b="$tf1" 'BEGIN { printf "ratio tfg time " \
			"to 99%% / TF1'"'"'s: %.2f (goal <= 0.50)\n", a / b }'
	fi
else
	echo "tf1: not installed (make bench-deps)"
fi
if $PY -c 'import torch' 2>/dev/null; then
	$PY bench/torch_cnn_mnist.py --data "$DATA" --threads 1 \
		--epochs "${CNN_EPOCHS:-4}" --stop-at-target 2>/dev/null |
		tee "$T/torch"
	tt=$(awk '$1 == "torch_mnist_target" && $3 == "time" { print $4 }' \
		"$T/torch")
	if [ -n "$tfg" ] && [ -n "$tt" ]; then
		awk -v a="$tfg" -v b="$tt" 'BEGIN { printf "ratio tfg time " \
			"to 99%% / single-process PyTorch'"'"'s: %.2f " \
			"(goal < 1)\n", a / b }'
	fi
else
	echo "torch: not installed (make bench-deps)"
fi
