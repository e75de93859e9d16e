#!/bin/sh
# bench/gpu.sh: tfg's GPU kernels against the same GPU's own limits, in
# one run (spec/design.md "GPUs"; the README's GPU table).  Needs a GPU;
# TFGC names the compiler (./tfgc), REF the reference (build/bench/
# gpu_ref: device-to-device copy, read bandwidth, cuBLAS SGEMM).
#
# Each workload is a program whose node of interest runs 5 times; its
# kernel time is the fastest of those runs in a --trace (traced launches
# wait for their kernel, so an event is the kernel's own run, launch
# included).
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
REF=${REF:-build/bench/gpu_ref}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfg-gpubench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$TFGC" devices | sed 's/^/# /'
"$REF" >"$tmp/ref" || { cat "$tmp/ref"; echo "bench/gpu.sh: no reference"; exit 1; }
cat "$tmp/ref"
ref() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/ref"; }

# kernel_ms PROG NODE [ARGS]: the fastest run of NODE's last launch, ms
kernel_ms() {
	prog=$1 node=$2; shift 2
	"$TFGC" emit --emit=cuda "$@" "$prog" >"$tmp/cuda" || return 1
	k=$(awk -v n="$node" '$0 ~ "^//   " n " = " { f = 1; next }
		f && /^\/\/     cuBLAS/ { next }
		f && /^\/\/     tfg_c/ { sub(/^\/\/     /, ""); sub(/<<<.*/, ""); k = $0; next }
		f { f = 0 } END { print k }' "$tmp/cuda")
	[ -n "$KNAME" ] && k=$KNAME
	"$TFGC" run --free-ports --trace "$tmp/t.json" "$@" "$prog" >/dev/null || return 1
	grep "\"gpu:0 $k\"" "$tmp/t.json" |
	    sed 's/.*"dur":\([0-9.]*\).*/\1/' | sort -n | head -1 |
	    awk '{ printf "%.4f\n", $1 / 1000 }'
}

N=268435456
cat >"$tmp/elem.tfg" <<P
cluster { local = ["localhost:2222"] }
device "/gpu:0" {
    x = random_uniform([$N], seed=1)
    y = sigmoid(2.0 * x + 1.0)
    s = reduce_sum(y)
    m = reduce_max(y)
    t = reduce_sum(x)
}
session { for i in 0..5 { run(s, m, t) } }
P
copy=$(ref copy_dtod_1GiB)
read=$(ref read_sum_1GiB)
ms=$(kernel_ms "$tmp/elem.tfg" y)
echo "$ms $copy" | awk -v n=$N '{ gb = 8 * n / ($1 / 1e3) / 1e9;
	printf "fused sigmoid(a*x+b) 256M f32: %.3f ms, %.0f GB/s, %.2f of the copy (%.0f GB/s)\n", $1, gb, gb / $2, $2 }'
# a reduction is two launches: time them together from the trace
kernel_ms "$tmp/elem.tfg" t >/dev/null
ks=$(awk '/^\/\/   t = / { f = 1; next } f && /^\/\/     tfg_c/ { sub(/^\/\/     /, ""); sub(/<<<.*/, ""); printf "%s ", $0; next } f { f = 0 }' "$tmp/cuda")
tot=0
for k in $ks; do
	t=$(grep "\"gpu:0 $k\"" "$tmp/t.json" | sed 's/.*"dur":\([0-9.]*\).*/\1/' | sort -n | head -1)
	tot=$(echo "$tot $t" | awk '{ print $1 + $2 }')
done
echo "$tot $read" | awk -v n=$N '{ ms = $1 / 1000; gb = 4 * n / (ms / 1e3) / 1e9;
	printf "reduce_sum 256M f32: %.3f ms, %.0f GB/s, %.2f of the read bandwidth (%.0f GB/s)\n", ms, gb, gb / $2, $2 }'

for n in 4096 8192; do
	cat >"$tmp/mm.tfg" <<P
cluster { local = ["localhost:2222"] }
device "/gpu:0" {
    a = random_uniform([$n, $n], seed=1)
    b = random_uniform([$n, $n], seed=2)
    p = a @ b
    s = reduce_sum(p)
}
session { for i in 0..5 { run(s) } }
P
	for mode in fp32 tf32; do
		flag=""; [ $mode = tf32 ] && flag=--gpu-tf32
		cb=$(ref sgemm_${mode}_$n)
		# tfg's own kernel (TFG_CUBLAS=0), then through cuBLAS
		for via in kernel cublas; do
			if [ $via = kernel ]; then
				ms=$(TFG_CUBLAS=0 KNAME= kernel_ms "$tmp/mm.tfg" p $flag)
			else
				ms=$(KNAME=cublas kernel_ms "$tmp/mm.tfg" p $flag)
			fi
			echo "$ms ${cb:-0}" | awk -v n=$n -v m=$mode -v via=$via '{ tf = 2 * n * n * n / ($1 / 1e3) / 1e12;
				r = ($2 > 0) ? tf / $2 : 0
				printf "matmul %s %d (%s): %.3f ms, %.1f TFLOP/s, %.2f of cuBLAS (%.1f TFLOP/s)\n", m, n, via, $1, tf, r, $2 }'
		done
	done
done

# the seed's example at n = 8192: each step (random matrix, product with
# its transpose, sum) on the CPU and on the GPU, the second of three runs
# (the first loads the module and allocates the arenas)
sed 's/^    print "cpu:", run(sc)/    for i in 0..3 { run(sc) }/; s/^    print "gpu:", run(sg)/    for i in 0..3 { run(sg) }/' \
    examples/matmul_gpu.tfg >"$tmp/seed.tfg"
"$TFGC" run --free-ports --param n=8192 --trace "$tmp/s.json" "$tmp/seed.tfg" >/dev/null &&
grep '"cat":"part"' "$tmp/s.json" | sed 's/.*"dur":\([0-9.]*\).*/\1/' |
    awk 'NR == 2 { c = $1 } NR == 5 { g = $1 } END {
	printf "seed matmul example n=8192: cpu %.1f ms, gpu %.1f ms, %.1fx\n", c / 1000, g / 1000, c / g }'

# copies: a 256 MiB value made on gpu:0 and fetched, 5 times: the copy
# to the host the first time (a pageable arena) and then (page-locked)
cat >"$tmp/fetch.tfg" <<P
cluster { local = ["localhost:2222"] }
device "/gpu:0" { x = random_uniform([67108864], seed=1) }
session { for i in 0..5 { run(x) } }
P
"$TFGC" run --free-ports --trace "$tmp/f.json" "$tmp/fetch.tfg" >/dev/null &&
grep '"copy gpu:0 to host"' "$tmp/f.json" | sed 's/.*"dur":\([0-9.]*\).*/\1/' |
    awk 'NR == 1 { f = $1 } NR > 1 && (b == 0 || $1 < b) { b = $1 } END {
	printf "copy gpu:0 to host, 256 MiB: first %.1f ms (%.1f GB/s, pageable), then %.1f ms (%.1f GB/s, page-locked)\n",
	    f / 1000, 268435456 / f / 1000, b / 1000, 268435456 / b / 1000 }'

# a 64 MiB value made on task 1's gpu:0, summed on task 0's CPU, against
# the same value made on task 1's CPU (the step time, median of 9)
for dev in gpu cpu; do
	cat >"$tmp/xfer.tfg" <<P
cluster { local = ["localhost:2222", "localhost:2223"] }
device "/job:local/task:1/$dev:0" { x = random_uniform([16777216], seed=1) }
device "/job:local/task:0/cpu:0" { s = reduce_sum(x) }
session { for i in 0..10 { run(s) } }
P
	"$TFGC" run --free-ports --trace "$tmp/x.json" "$tmp/xfer.tfg" >/dev/null &&
	grep '"cat":"step"' "$tmp/x.json" | sed 's/.*"dur":\([0-9.]*\).*/\1/' |
	    tail -n +2 | sort -n | awk -v d=$dev '{ v[NR] = $1 } END {
		printf "64 MiB from task 1 (%s:0) to task 0, summed there: step %.1f ms (median of %d)\n", d, v[int((NR + 1) / 2)] / 1000, NR }'
done

# NVRTC: a task's kernels cold and from the cache
rm -rf "$tmp/cache"
for i in cold cached; do
	TFG_CUDA_CACHE=$tmp/cache TFG_JIT_TIME=1 "$TFGC" run --free-ports "$tmp/elem.tfg" 2>&1 >/dev/null |
	    grep NVRTC | sed "s/^/nvrtc $i: /"
done
