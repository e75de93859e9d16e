#!/bin/sh
# bench/wide_deep.sh: the wide-and-deep click model of
# examples/wide_deep.tfg (2 ps + 2 workers, batch 512, its user tables
# and a million cross weights in two shards each) against TF1's
# distributed runtime training the same model with the same partitioner
# and cluster (bench/tf1_wide_deep.py, TF 2.21's tf.compat.v1): examples
# per second, RUNS (3) runs of each, interleaved, STEPS (300) steps per
# worker.  The data is examples/wide_deep.sh's set of 1,000,000
# examples of 100,000 users and 10,000 items, made once into $D, and
# the learning rates are TF1's peer's (0.05).  tfg's time is its
# epoch line's: worker 0's training steps, not the startup nor the test
# after the epoch, and its global step is read right after them, as
# TF1's peer counts its own (train_s: from both workers' start to the
# last one's last step).
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
PY=${PY:-build/venv/bin/python3}
D=${D:-/tmp/tfg-bench-wide-deep}
RUNS=${RUNS:-3}
STEPS=${STEPS:-300}
if ! [ -x "$PY" ] || ! "$PY" -c 'import tensorflow' 2>/dev/null; then
	echo "wide-and-deep vs TF1: skipped (make bench-deps installs TF)"
	exit 0
fi
[ -f "$D/test_p.npy" ] ||
	USERS=100000 ITEMS=10000 sh examples/wide_deep.sh "$D" \
		--param epochs=0 >/dev/null || exit 1
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /CPU: /'
for i in $(seq 1 "$RUNS"); do
	$TFGC run --free-ports --no-progress examples/wide_deep.tfg \
		--param data="$D" --param users=100000 --param items=10000 \
		--param lr_deep=0.05 --param lr_wide=0.05 \
		--param epochs=1 --param limit="$STEPS" |
		sed -n 's/.*global step \([0-9]*\) .* time \([0-9.]*\) s.*/\1 \2/p' |
		awk '{printf "tfg examples_per_s %.0f global_steps %d s %.2f\n", $1 * 512 / $2, $1, $2}'
	"$PY" bench/tf1_wide_deep.py --data "$D" --max-steps "$STEPS" 2>/dev/null |
		grep '^tf1_wide_deep'
done | tee "$D/runs"
awk '/^tfg / {t[++a] = $3} /^tf1_wide_deep / {f[++b] = $3}
     END {for (i = 1; i <= a && i <= b; i++)
		printf "run %d: tfg / TF1 examples per second: %.2f\n", i, t[i] / f[i]}' "$D/runs"
