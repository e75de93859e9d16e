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
# The JIT cache (spec/design.md "JIT cache"): the bench's own, empty at
# its start, so that each program's first run compiles and later runs
# load their code, whatever the user's cache holds; the JIT rows turn it
# off.
TFG_JIT_CACHE=${TFG_JIT_CACHE-$T/jit}
export TFG_JIT_CACHE

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

# Microseconds per step of bench/$1.tfg: the time of a run of $2 steps
# less that of a run of 1, over $2 - 1; the median of 3.  $3, if given,
# is a sed expression applied too (the transfer's size); $flags are
# options of tfgc run: unkeyed for the plain rows (runs are keyed by
# default), a key or TLS for theirs.  The rows up to the shared-memory
# section measure the TCP transport (--no-shm), what tasks on different
# hosts use: tasks of one host use shared memory by default.
tcp="--no-shm"
flags="--no-cluster-key $tcp"
per_step() {
	for steps in 1 $2; do
		sed -e "s/STEPS/$steps/" -e "${3:-s/^//}" "bench/$1.tfg" \
			>"$T/$1.$steps.tfg"
	done
	for i in 1 2 3; do
		s=$(now_ms); $TFGC run --free-ports $flags "$T/$1.1.tfg" >/dev/null || exit 1
		e=$(now_ms)
		s2=$(now_ms); $TFGC run --free-ports $flags "$T/$1.$2.tfg" >"$T/$1.out" || exit 1
		e2=$(now_ms)
		awk "BEGIN {print ($e2 - $s2 - ($e - $s)) * 1000 / ($2 - 1)}"
	done | median
}
# The median in microseconds of an nng_rtt line on stdin.
rtt_median() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p'; }

echo "== one step crossing tasks vs bare round trips (nng, raw TCP) =="
step=$(per_step step 10000)
echo "tfg step (bench/step.tfg, median of 3 x 10000 steps): $step us"
$B/nng_rtt 10000 | tee "$T/rtt"
$B/nng_rtt 10000 --tcp | tee "$T/tcp"
awk "BEGIN {printf \"ratio step / bare nng round trip: %.2f; / raw TCP round trip: %.2f\\n\", $step / $(rtt_median <"$T/rtt"), $step / $(rtt_median <"$T/tcp")}"

echo "== shared state (issue 8) =="
n=5000
counter=$(per_step counter $n)
final=$(cat "$T/counter.out")
rate=$(awk "BEGIN {printf \"%.0f\", 2e6 / $counter}")
echo "tfg counter (bench/counter.tfg, 2 workers x $n): $rate updates/s, final v = $final (want $((2 * n)))"
PY=build/venv/bin/python3
if [ -x $PY ] && $PY -c 'import tensorflow' 2>/dev/null; then
	$PY bench/tf1_counter.py 2000 2>/dev/null | tee "$T/tf1"
	awk -v a="$rate" -v b="$(awk '{print $3}' "$T/tf1")" \
	    'BEGIN {if (b > 0) printf "ratio tfg / TF1 counter updates: %.1fx\n", a / b}'
else
	echo "TF1 counter: skipped (make bench-deps installs TF into build/venv)"
fi
rw=$(per_step var_rw 5000)
echo "tfg step reading and updating a 784x100 f32 variable (bench/var_rw.tfg, 5000 steps): $rw us"
$B/nng_rtt 5000 --size 313600 | tee "$T/rtt"
$B/nng_rtt 5000 --size 313600 --tcp | tee "$T/tcp"
awk "BEGIN {printf \"ratio step / two bare transfers of 313,600 bytes: nng %.2f, raw TCP %.2f\\n\", $rw / $(rtt_median <"$T/rtt"), $rw / $(rtt_median <"$T/tcp")}"
sc=$(per_step var_scalar 10000)
echo "tfg scalar step A->B->A reading a variable (bench/var_scalar.tfg, 10000 steps): $sc us"
$B/nng_rtt 10000 | tee "$T/rtt"
awk "BEGIN {printf \"ratio scalar step / bare nng round trip: %.2f\\n\", $sc / $(rtt_median <"$T/rtt")}"

# transfers WHAT MIB...: a row for a tensor of each size from task to
# task under $flags, beside a raw TCP copy and, once the plain rows ran
# (WHAT empty: their times are kept), beside the plain transfer.
transfers() {
	what=$1; shift
	for mib; do
		steps=$((2048 / mib)); [ $steps -gt 1000 ] && steps=1000
		us=$(per_step transfer $steps "s/ELEMS/$((mib * 262144))/g")
		$B/nng_rtt $((4000 / mib)) --tcp --oneway --size $((mib << 20)) >"$T/tcp"
		ref=$(rtt_median <"$T/tcp")
		[ -z "$what" ] && eval "plain_$mib=$us"
		eval "plain=\$plain_$mib"
		awk "BEGIN {printf \"tfg %d MiB task to task%s: %.0f us (%.2f GB/s); raw TCP copy %.0f us; ratio %.2f; / plain %.2f\\n\", $mib, \"$what\", $us, $mib * 1048.576 / $us, $ref, $ref / $us, $us / $plain}"
	done
}

echo "== one tensor from task to task vs a raw TCP copy (issue 10) =="
transfers "" 1 16 64

echo "== the same keyed, as runs are by default: on one machine the connections are direct, no MACs after the first exchange (issues 10, 25) =="
flags="$tcp"
transfers ", keyed" 1 16 64
sc=$(per_step var_scalar 10000)
echo "tfg scalar step A->B->A reading a variable, keyed (bench/var_scalar.tfg, 10000 steps): $sc us"
$B/nng_rtt 10000 | tee "$T/rtt"
awk "BEGIN {printf \"ratio keyed scalar step / bare nng round trip: %.2f\\n\", $sc / $(rtt_median <"$T/rtt")}"

echo "== keyed with a MAC on every frame, as between hosts (TFG_NET_MAC=all; spec/design.md \"Cluster keys\") =="
export TFG_NET_MAC=all
transfers ", every frame MACed" 1 16
sc=$(per_step var_scalar 10000)
echo "tfg scalar step A->B->A reading a variable, every frame MACed (bench/var_scalar.tfg, 10000 steps): $sc us"
unset TFG_NET_MAC
flags="--no-cluster-key $tcp"

echo "== the same with TLS: every connection TLS 1.3 (spec/design.md \"TLS\") =="
# a CA and the tasks' certificate, made here as tests/integration/tls.sh
# makes them
(cd "$T" &&
 openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout ca.key -out ca.csr -subj "/CN=bench CA" &&
 openssl x509 -req -in ca.csr -signkey ca.key -out ca.pem -days 2 &&
 openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout task.key -out task.csr -subj "/CN=bench task" &&
 openssl x509 -req -in task.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	-out task.pem -days 2) >/dev/null 2>&1 || exit 1
flags="--tls-cert $T/task.pem --tls-key $T/task.key --tls-ca $T/ca.pem $tcp"
tstep=$(per_step step 10000)
echo "tfg step under TLS (bench/step.tfg, median of 3 x 10000 steps): $tstep us (without: $step us)"
sc=$(per_step var_scalar 10000)
echo "tfg scalar step A->B->A reading a variable, TLS (bench/var_scalar.tfg, 10000 steps): $sc us"
us=$(per_step transfer 32 "s/ELEMS/$((64 * 262144))/g")
awk "BEGIN {printf \"tfg 64 MiB task to task, TLS: %.0f us (%.2f GB/s)\\n\", $us, 64 * 1048.576 / $us}"
flags=""

echo "== tasks of one host through shared memory (issue 29; spec/design.md \"Shared memory\"), beside raw TCP and one thread's memcpy =="
flags="--no-cluster-key"
for mib in 1 16 64; do
	steps=$((2048 / mib)); [ $steps -gt 1000 ] && steps=1000
	us=$(per_step transfer $steps "s/ELEMS/$((mib * 262144))/g")
	flags="--no-cluster-key $tcp"
	tus=$(per_step transfer $steps "s/ELEMS/$((mib * 262144))/g")
	flags="--no-cluster-key"
	$B/nng_rtt $((4000 / mib)) --tcp --oneway --size $((mib << 20)) >"$T/tcp"
	$B/nng_rtt $((400 / mib + 3)) --memcpy --size $((mib << 20)) >"$T/mc"
	awk "BEGIN {printf \"tfg %d MiB task to task, shared memory: %.0f us (%.2f GB/s); over TCP (--no-shm) %.0f us; raw TCP copy %.0f us; one thread's memcpy %.0f us; %.2fx raw TCP, %.2f of memcpy, %.2fx tfg over TCP\\n\", $mib, $us, $mib * 1048.576 / $us, $tus, $(rtt_median <"$T/tcp"), $(sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$T/mc"), $(rtt_median <"$T/tcp") / $us, $(sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$T/mc") / $us, $tus / $us}"
done
sstep=$(per_step step 10000)
flags="--no-cluster-key $tcp"
tstep=$(per_step step 10000)
flags="--no-cluster-key"
$B/nng_rtt 10000 --tcp | tee "$T/tcp"
$B/nng_rtt 10000 --futex | tee "$T/futex"
awk "BEGIN {printf \"the floor of a reader that sleeps until woken, a bare futex round trip: %.2f of a raw TCP round trip\\n\", $(rtt_median <"$T/futex") / $(rtt_median <"$T/tcp")}"
awk "BEGIN {printf \"tfg step crossing tasks (bench/step.tfg), shared memory: %.1f us; over TCP (--no-shm): %.1f us; %.2f of a raw TCP round trip (over TCP: %.2f)\\n\", $sstep, $tstep, $sstep / $(rtt_median <"$T/tcp"), $tstep / $(rtt_median <"$T/tcp")}"
sc=$(per_step var_scalar 10000)
echo "tfg scalar step A->B->A reading a variable, shared memory (bench/var_scalar.tfg, 10000 steps): $sc us"
flags=""

echo "== start-up and failure detection (issue 10) =="
sh bench/failover.sh

echo "== checking time of large programs (issue 25: linear in the program) =="
for spec in "10000 graph" "100000 graph" "100000 session" "590000 graph"; do
	sh bench/bigprog.sh $spec >"$T/big.tfg"
	t0=$(now_ms)
	$TFGC check "$T/big.tfg" >/dev/null 2>&1 || echo "tfgc check failed"
	t1=$(now_ms)
	awk "BEGIN {printf \"tfgc check, %s statements (%s): %.2f s\\n\", ${spec% *}, \"${spec#* }\", ($t1 - $t0) / 1000}"
done

echo '== batches(): an epoch of MNIST gathered (spec §8.6 "for") =='
mnist=../shared/data/mnist
if [ -e "$mnist/train-images-idx3-ubyte.gz" ]; then
	# the median of epochs 1-4 (epoch 0 also faults the arrays in),
	# beside one memcpy of the same bytes (47,100,160 of them, into a
	# buffer already faulted in, as the batches' are), in the same run
	$TFGC run --free-ports --param "data=$mnist" bench/batches.tfg \
		>"$T/batches" 2>&1 || echo "bench/batches.tfg failed"
	g=$(awk '$1 == "epoch" && $2 > 0 {print $4 * 1000}' "$T/batches" |
		median)
	c=$(python3 -c 'import time
b = bytes(range(256)) * 183985
m = memoryview(bytearray(len(b)))
ts = []
for _ in range(6):  # the first faults the copy in, the median skips it
    t = time.perf_counter(); m[:] = b; ts.append(time.perf_counter() - t)
print(sorted(ts)[2] * 1000)')
	awk "BEGIN {printf \"batches(), an epoch of MNIST (600 batches of 100): %.2f ms; one memcpy of its 47.1 MB: %.2f ms; %.2f of the memcpy's time\\n\", $g, $c, $g / $c}"
else
	echo "batches(): no MNIST in $mnist, skipped"
fi

echo "== LLVM JIT time per task =="
for f in examples/hello.tfg examples/mean.tfg; do
	TFG_JIT_CACHE=off TFG_JIT_TIME=1 $TFGC run --free-ports "$f" \
		2>&1 >/dev/null |
		sed "s|^tfgc: |$f |"
done

echo "== wide-and-deep training vs TF1 (issue 28; bench/wide_deep.sh) =="
sh bench/wide_deep.sh

echo "== a sparse adagrad update on a ps (issue 28; bench/rows.c), 5 runs =="
for i in 1 2 3 4 5; do $B/rows || exit 1; done

echo "== a 10,000,000 x 64 table over 4 ps: each ps's peak memory (issue 28; bench/big_table.sh) =="
sh bench/big_table.sh

echo "== 1 to 32 workers on one ps, compute replaced by a wait (issue 29; bench/scale.sh) =="
sh bench/scale.sh

echo "== MNIST to 97%: synchronous replicas against async (issue 29; bench/sync.sh) =="
sh bench/sync.sh

echo "== across hosts with real network stacks: network namespaces, 0.25 ms links (issue 29; bench/hosts.sh, root) =="
sh bench/hosts.sh

# The kernels of issue 3 (matmul included, through bench/matmul.sh) as a
# table, each beside the machine's own limit measured in the same run.
sh bench/kernels.sh

# Training: the MLP step and MNIST against NumPy, PyTorch and TF1; the
# Deep MNIST convolutional network's step and distributed training
# against TF1 and PyTorch.
sh bench/mnist.sh
sh bench/cnn.sh
