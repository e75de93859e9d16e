#!/bin/sh
# bench/sync.sh: time to 97% test accuracy on MNIST (examples/
# mnist_distributed.tfg, 1 ps on one task, workers on their own) with
# synchronous replicas against asynchronous training (issue 29): sync
# with replicas=2 (each round the mean of both workers' gradients, as one
# step of batch 200), replicas=3 with aggregate=2 (a backup worker: the
# slowest gradient of a round is dropped), and async with 2 and 3
# workers; the first epoch at 97%, and the global steps (rounds, for
# sync) it took.  Beside them TF1's SyncReplicasOptimizer on the same
# model, settings and clusters (bench/tf1_mnist.py --sync M; make
# bench-deps installs TF), given 300 s: it hangs where replicas stop
# at different times, so it runs the same epochs on every worker and
# never stops at the target.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=$(pwd)/${TFGC:-tfgc}
DATA=${TFG_MNIST:-../shared/data/mnist}
EPOCHS=${EPOCHS:-12}
D=$(mktemp -d /tmp/tfg-sync.XXXXXX) || exit 1
trap 'rm -rf "$D"' EXIT
trap 'exit 1' INT TERM
TFG_JIT_CACHE=$D/jit
export TFG_JIT_CACHE
[ -e "$DATA/train-images-idx3-ubyte.gz" ] || { echo "sync: no MNIST at $DATA"; exit 0; }

# one NAME WORKERS OPTIMIZER: a run, and its line
one() {
	python3 -c '
import json, sys
n = int(sys.argv[1])
print(json.dumps({"ps": ["localhost:1"], "worker": ["localhost:%d" % (2 + i) for i in range(n)]}))' "$2" >"$D/c.json"
	sed "s/minimize(loss, sgd(lr), global_step=step)/minimize(loss, $3, global_step=step)/" \
		examples/mnist_distributed.tfg >"$D/m.tfg"
	$TFGC run "$D/m.tfg" --cluster "$D/c.json" --free-ports --no-progress \
		--param data="$DATA" --param epochs="$EPOCHS" \
		--param curves="$D/curves.csv" >"$D/out" 2>"$D/err" ||
		{ tail -n 3 "$D/err"; return; }
	awk -v name="$1" '/test accuracy/ && $9 >= 0.97 && !done {
		printf "%s: 97%% after %s s, epoch %s, %s global steps (accuracy %s)\n", name, $11, $3, $6, $9; done = 1 }
		/test accuracy/ {best = $9 > best ? $9 : best}
		END {if (!done) printf "%s: not at 97%% in '"$EPOCHS"' epochs (best %s)\n", name, best}' "$D/out"
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
one "async, 2 workers" 2 "sgd(lr)"
one "sync, replicas=2" 2 "sync(sgd(lr), replicas=2)"
one "async, 3 workers" 3 "sgd(lr)"
one "sync, replicas=3, aggregate=2" 3 "sync(sgd(lr), replicas=3, aggregate=2)"

TF=build/venv/bin/python3
if [ -x $TF ] && $TF -c 'import tensorflow' 2>/dev/null; then
	for x in "2 2" "3 2"; do
		set -- $x
		timeout -k 5 300 $TF bench/tf1_mnist.py --act relu --init scaled \
			--opt sgd --lr 0.3 --epochs 8 --data "$DATA" \
			--workers "$1" --sync "$2" >"$D/tf1" 2>/dev/null
		rc=$?
		awk -v n="$1" -v m="$2" -v rc="$rc" '
			$1 == "tf1_mnist_target" && $3 == "time" {
				printf "TF1 SyncReplicasOptimizer, %s workers, replicas_to_aggregate=%s: 97%% after %s s, epoch %s, %s global steps (accuracy %s)\n", n, m, $4, $8, $6, $10; done = 1 }
			$1 == "tf1_mnist_target" && $3 == "not_reached" {
				printf "TF1 SyncReplicasOptimizer, %s workers, replicas_to_aggregate=%s: not at 97%% in 8 epochs (best %s)\n", n, m, $5; done = 1 }
			END { if (!done) printf "TF1 SyncReplicasOptimizer, %s workers, replicas_to_aggregate=%s: no result (exit %s%s)\n", n, m, rc, rc == 124 ? ": it hung, killed after 300 s" : "" }' "$D/tf1"
	done
else
	echo "TF1: skipped (make bench-deps installs TF into build/venv)"
fi
