#!/bin/sh
# bench/kernels.sh: the CPU kernels of issue 3, each against the machine's
# own limit measured in the same run (bench/kernel.c says how: the part is
# compiled by `tfgc compile` and called on its arena with no-op
# recv/send, so no feed or fetch is timed).  Prints one table:
#   | workload | tfgc | reference (same run) | ratio | goal |
# Run from `make bench` (bench/run.sh); REPS=n changes the repetitions,
# CPU=c the LLVM CPU the parts are compiled for (default host; CPU=znver2
# with OPENBLAS_CORETYPE=Zen: the AVX2 code a Zen 2 runs, on this
# machine).
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
LIBTFG=${LIBTFG:-build/libtfg.a} # tfg_rt_parallel: runtime/pool.c
CC=${CC:-cc}
PY=${PY:-/usr/bin/python3} # Debian's, where python3-numpy/-torch install
REPS=${REPS:-15}
CPU=${CPU:-host}
T=$(mktemp -d /tmp/tfg-kern.XXXXXX)
trap 'rm -rf "$T"' EXIT

# npy NAME DIMS...: a zero-filled f32 .npy ($T/NAME.npy); tfgc compile
# needs a feed's value to know the signature
npy() {
	python3 - "$T/$1.npy" "$@" <<'PY' || exit 1
import struct, sys
dims = [int(d) for d in sys.argv[3:]]
n = 1
for d in dims:
    n *= d
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % \
    "".join("%d, " % d for d in dims)
h += " " * (63 - (10 + len(h)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.truncate(f.tell() + 4 * n)
PY
}

# part PREFIX FETCH "FEEDS" [tfgc flags]: $T/prog.tfg -> $T/PREFIX.o, .h,
# for the host CPU as the JIT of tfgc run/server compiles (tfgc compile's
# own default, x86-64-v3, is for objects meant for other machines: no
# AVX-512 on the Zen 4 here)
part() {
	p=$1 fetch=$2 feeds=$3
	shift 3
	args=""
	for f in $feeds; do args="$args --feed $f=$T/$f.npy"; done
	# shellcheck disable=SC2086
	$TFGC compile --cpu "$CPU" "$@" "$T/prog.tfg" --task local:0 \
		-o "$T/$p.o" --name "$p" --fetch "$fetch" $args || exit 1
}

# run NAME REF BYTES GOAL [REPS [RANGE [LABEL]]]: links bench/kernel.c with k.o
# (and r.o for REF part) and prints its row
run() {
	def=""
	[ "$2" = part ] && def="-DREF_PART $T/r.o"
	# shellcheck disable=SC2086
	$CC -std=c11 -O3 -march=native -D_GNU_SOURCE \
		-fno-tree-loop-distribute-patterns -I. -I"$T" -o "$T/kernel" \
		bench/kernel.c "$T/k.o" $def "$LIBTFG" -lopenblas -lpthread \
		-lm || exit 1
	"$T/kernel" "$1" "$2" "$3" "${5:-$REPS}" "$4" "${6:-4}" \
		${7:+"$7"}
}

prog() {
	{
		echo 'cluster { local = ["localhost:2222"] }'
		cat
	} >"$T/prog.tfg"
}

N=16777216 # 16M f32: 64 MiB
echo "== CPU kernels vs the machine's limit (bench/kernel.c) =="
echo "| workload | tfgc | reference (same run) | ratio | goal |"
echo "|---|---|---|---|---|"

npy x $N
prog <<EOF
input x: f32[$N]
y = sigmoid(1.5 * x + 0.25)
EOF
part k y x
run "sigmoid(a*x + b), 16M f32" copy $((N * 4)) ">= 0.80" | tee "$T/sig"
if $TFGC 2>&1 | grep -q -- -fno-fuse; then
	part k y x -fno-fuse
	run "same, -fno-fuse" copy $((N * 4)) "(unfused)"
fi

if [ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null; then
	tfg=$(awk -F'|' '{sub(/ ms.*/, "", $3); print $3 + 0}' "$T/sig")
	"$PY" bench/ref_sigmoid.py $N "$tfg"
else
	echo "| sigmoid(a*x + b) vs NumPy / PyTorch | — | not installed (make bench-deps) | — | >= 3x NumPy, > 1x torch |"
fi

# matmul: bench/matmul.sh (AOT part vs cblas_sgemm on OpenBLAS's own
# threads), its lines as rows; 100x784x100 is the MNIST step's product
sh bench/matmul.sh 1024 2048 4096 100x784x100 | sed -n \
	's/^matmul \(.*\): tfg \(.*\), cblas_sgemm \(.*\), ratio \(.*\)$/| matmul \1 | \2 | cblas_sgemm: \3 | \4 | >= 0.95 |/p'
# the same product with 81% of a's elements zero, as an MNIST batch's
# pixels (runtime/gemm_sparse.c); GFLOP/s of the dense product's flop
DENSITY=0.19 sh bench/matmul.sh 100x784x100 | sed -n \
	's/^matmul \(.*\): tfg \(.*\), cblas_sgemm \(.*\), ratio \(.*\)$/| matmul \1 (19% nonzero) | \2 | cblas_sgemm: \3 | \4 | — |/p'

M=67108864 # 64M f32: 256 MiB
npy x $M
prog <<EOF
input x: f32[$M]
m = reduce_mean(x)
EOF
part k m x
run "reduce_mean, 64M f32" sum $((M * 4)) ">= 0.80" 9

npy x 4096 1024
prog <<EOF
input x: f32[4096, 1024]
y = softmax(x)
EOF
part k y x
run "softmax, [4096, 1024] f32" copy $((4096 * 1024 * 4)) ">= 0.70"

npy x 4096 1024
npy w 1024 1024
npy b 1024
prog <<EOF
input x: f32[4096, 1024]
input w: f32[1024, 1024]
y = x @ w
EOF
part r y "x w"
prog <<EOF
input x: f32[4096, 1024]
input w: f32[1024, 1024]
input b: f32[1024]
y = sigmoid(x @ w + b)
EOF
part k y "x w b"
run "sigmoid(x @ w + b), [4096,1024]x[1024,1024]" part 0 "< 10% over bare" \
	"${EPI_REPS:-7}" 0.1

# conv2d: the second layer of Deep MNIST, batch 100, forward and the
# gradients, each against a product of the same FLOP count through
# tfg_rt_gemm ([78400, 800] @ [800, 64]: the patch matrix by the filter),
# the rate tfg's own GEMM reaches (runtime/conv.c)
npy a 78400 800
npy b 800 64
prog <<EOF
input a: f32[78400, 800]
input b: f32[800, 64]
y = a @ b
EOF
part r y "a b"
npy x 100 28 28 32
npy f 5 5 32 64
npy dy 100 28 28 64
prog <<EOF
input x: f32[100, 28, 28, 32]
input f: f32[5, 5, 32, 64]
y = conv2d(x, f, 1, "SAME")
EOF
part k y "x f"
run "conv2d [100,28,28,32] by 5x5x32x64 SAME" part 0 ">= 0.80" \
	"${CONV_REPS:-9}" 1 "gemm, same flop"
prog <<EOF
input x: f32[100, 28, 28, 32]
input dy: f32[100, 28, 28, 64]
df = conv2d_backprop_filter(x, [5, 5, 32, 64], dy, 1, "SAME")
EOF
part k df "x dy"
run "its filter gradient" part 0 ">= 0.80" "${CONV_REPS:-9}" 1 \
	"gemm, same flop"
prog <<EOF
input f: f32[5, 5, 32, 64]
input dy: f32[100, 28, 28, 64]
dx = conv2d_backprop_input([100, 28, 28, 32], f, dy, 1, "SAME")
EOF
part k dx "f dy"
run "its input gradient" part 0 "—" "${CONV_REPS:-9}" 1 "gemm, same flop"

# JIT time of a generated 200-op graph: a chain of elementwise ops and
# small matmuls on f32[64, 64]; compiled each time (no JIT cache)
{
	echo 'cluster { local = ["localhost:2222"] }'
	echo 'v0 = random_uniform([64, 64], seed=1)'
	i=1
	while [ $i -le 199 ]; do
		p=$((i - 1))
		case $((i % 5)) in
		0) echo "v$i = v$p @ v$p" ;;
		1) echo "v$i = tanh(v$p)" ;;
		2) echo "v$i = v$p + v$((p / 2))" ;;
		3) echo "v$i = maximum(v$p, 0.1)" ;;
		*) echo "v$i = sigmoid(v$p)" ;;
		esac
		i=$((i + 1))
	done
	echo 'session "/job:local/task:0" { print run(v199) }'
} >"$T/g200.tfg"
for i in 1 2 3 4 5; do
	TFG_JIT_CACHE=off TFG_JIT_TIME=1 $TFGC run --free-ports "$T/g200.tfg" \
		2>&1 >/dev/null |
		sed -n 's/.* \([0-9.]*\) ms.*/\1/p'
done | sort -g | awk '{a[NR] = $1} END {
	printf "| JIT of a 200-op task graph (median of %d) | %.1f ms | — | — | < 100 ms |\n", NR, a[int((NR + 1) / 2)] }'
