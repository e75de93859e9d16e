#!/bin/sh
# bench/run.sh: the benchmarks of `make bench` (not tests: nothing here
# asserts a time).  Each figure is printed beside a reference measured in
# the same run on the same machine.
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
B=build/bench
T=$(mktemp -d /tmp/tfg-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now_ms() { date +%s%N | awk '{printf "%.3f\n", $1/1e6}'; }

echo "== whole run: tfgc run examples/hello.tfg (2 task processes) =="
for i in $(seq 1 15); do
	s=$(now_ms)
	$TFGC run --free-ports examples/hello.tfg >/dev/null || exit 1
	e=$(now_ms)
	awk "BEGIN {print $e - $s}"
done | median | awk '{printf "whole run, median of 15: %.1f ms\n", $1}'

echo "== one step crossing tasks vs a bare nng req/rep round trip =="
n=10000
for steps in 1 $n; do
	sed "s/STEPS/$steps/" bench/step.tfg >"$T/step$steps.tfg"
done
for i in 1 2 3; do
	s=$(now_ms); $TFGC run --free-ports "$T/step1.tfg" >/dev/null; e=$(now_ms)
	s2=$(now_ms); $TFGC run --free-ports "$T/step$n.tfg" >/dev/null; e2=$(now_ms)
	awk "BEGIN {print ($e2 - $s2 - ($e - $s)) * 1000 / ($n - 1)}"
done | median | awk '{printf "tfg step (median of 3 x 10000 steps): %.1f us\n", $1}' \
	| tee "$T/step"
$B/nng_rtt 10000 | tee "$T/rtt"
step=$(awk '{print $(NF-1)}' "$T/step")
med=$(sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$T/rtt")
mean=$(sed -n 's/.*mean \([0-9.]*\) us.*/\1/p' "$T/rtt")
awk "BEGIN {printf \"ratio step / bare nng round trip: %.2f of its median, %.2f of its mean\\n\", $step / $med, $step / $mean}"

echo "== LLVM JIT time per task =="
for f in examples/hello.tfg examples/mean.tfg; do
	TFG_JIT_TIME=1 $TFGC run --free-ports "$f" 2>&1 >/dev/null |
		sed "s|^tfgc: |$f |"
done

# The kernels of issue 3 (matmul included, through bench/matmul.sh) as a
# table, each beside the machine's own limit measured in the same run.
sh bench/kernels.sh
