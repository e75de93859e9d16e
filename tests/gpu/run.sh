#!/bin/sh
# tests/gpu/run.sh: GPU results against the CPU's (spec/design.md "GPUs").
#
#   1. Every golden run program (tests/golden/run, those that succeed)
#      with --prefer-gpu, which puts every op that has a GPU kernel on
#      its task's gpu:0: with a GPU, its output must match the golden
#      one, numbers within a relative 1e-4 (a program may say
#      "# gpu-tol: REL"); without one, the same programs with
#      TFG_NO_GPU=1 --soft-placement (the copies, the soft placement)
#      must match it exactly.
#   2. tests/gpu/*.tfg (larger, random inputs, every op family) and the
#      GPU examples (with --soft-placement, for /gpu:1): with a
#      GPU, the output of the program as written must match its output
#      with TFG_NO_GPU=1 --soft-placement (all on the CPU); without
#      one, the CPU run must succeed, and the GPU part says SKIP with
#      the reason.
#   0. NVRTC compiles the kernels of all of these and of
#      tests/golden/cuda (tfgc emit --emit=ptx, no cache), where NVRTC
#      is found (the CUDA toolkit; SKIP otherwise).
# Runs from the repo root; TFGC names the compiler (./tfgc).  Prints
# "gpu: N passed, N failed, N skipped": what could not run here (the
# GPU side of 2, or 0 without NVRTC) is skipped, never passed, and with
# TFG_REQUIRE_GPU=1 each of those, and a machine without a GPU, fails.
cd "$(dirname "$0")/../.." || exit 1
TFGC=${TFGC:-./tfgc}
unset TF_CONFIG
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfg-gpu.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# The JIT cache (spec/design.md "JIT cache"): a fresh one for the run,
# not the user's, unless the caller set TFG_JIT_CACHE.
TFG_JIT_CACHE=${TFG_JIT_CACHE-$tmp/jit-cache}
export TFG_JIT_CACHE
pass=0 fail=0 skip=0
require=0
[ "${TFG_REQUIRE_GPU:-}" = 1 ] && require=1
# skipped WHY: a part that cannot run here; a failure under
# TFG_REQUIRE_GPU=1
skipped() {
	if [ "$require" = 1 ]; then
		echo "FAIL (TFG_REQUIRE_GPU=1): $1"
		fail=$((fail + 1))
	else
		skip=$((skip + 1))
	fi
}
gpus=$("$TFGC" devices 2>&1)
if printf '%s\n' "$gpus" | grep -q '^/gpu:0'; then
	have=1
	printf '%s\n' "$gpus" | sed 's/^/gpu: /'
else
	have=0
	echo "SKIP: GPU comparisons: $(printf '%s\n' "$gpus" | grep -i 'gpu' | head -1)"
	[ "$require" = 1 ] && skipped "no GPU"
fi

# emit_args ARGS...: of a run's ARGS, those tfgc emit takes too (the
# graph's: --param, --shape, --gpu-tf32, -fno-*); the rest are the run's,
# and emit refuses them.
emit_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--param|--shape) printf ' %s %s' "$1" "$2"; shift ;;
		--param=*|--shape=*|--gpu-tf32|-fno-*) printf ' %s' "$1" ;;
		esac
		shift
	done
}

if printf '%s\n' "$gpus" | grep -q '^nvrtc: [0-9]'; then
	for f in tests/golden/cuda/*.tfg tests/gpu/*.tfg examples/*gpu*.tfg \
	    tests/golden/run/*.tfg; do
		base=${f%.tfg}
		[ -e "$base.err" ] && continue
		grep -q '^input .*?' "$f" && continue # dims known at run time
		set -f
		# shellcheck disable=SC2046
		args=$(emit_args $(sed -n '1s/^# args://p' "$f"))
		# shellcheck disable=SC2086
		if TFG_CUDA_CACHE=off timeout -k 5 120 "$TFGC" emit --emit=ptx \
		    --prefer-gpu -fno-fold $args "$f" >/dev/null 2>"$tmp/err"; then
			pass=$((pass + 1))
		else
			echo "FAIL $f (NVRTC)"; sed 's/^/    /' "$tmp/err" | head -20
			fail=$((fail + 1))
		fi
		set +f
	done
else
	echo "SKIP: NVRTC: $(printf '%s\n' "$gpus" | grep '^nvrtc')"
	skipped "NVRTC: the kernels were not compiled"
fi

# run OUT ERR ARGS... : tfgc run --free-ports ARGS, bounded in time
run() {
	out=$1 err=$2; shift 2
	set -f
	# shellcheck disable=SC2068
	timeout -k 5 120 "$TFGC" run --free-ports $@ >"$out" 2>"$err" </dev/null
	r=$?
	set +f
	return $r
}

for f in tests/golden/run/*.tfg; do
	base=${f%.tfg}
	[ -e "$base.out" ] && [ ! -e "$base.err" ] || continue
	args=$(sed -n '1s/^# args://p' "$f")
	rel=$(sed -n 's/^# gpu-tol: *//p' "$f" | head -1)
	if [ "$have" = 1 ]; then
		run "$tmp/out" "$tmp/err" --prefer-gpu -fno-fold $args "$f"
		rc=$?
		if [ $rc -eq 0 ] && awk -v rel="${rel:-1e-4}" -f tests/gpu/numcmp.awk \
		    "$base.out" "$tmp/out" >"$tmp/why"; then
			pass=$((pass + 1)); continue
		fi
	else
		TFG_NO_GPU=1 run "$tmp/out" "$tmp/err" --prefer-gpu -fno-fold \
		    --soft-placement $args "$f"
		rc=$?
		grep -v '^tfgc: warning: .* has no GPU' "$tmp/err" >"$tmp/err2"
		if [ $rc -eq 0 ] && [ ! -s "$tmp/err2" ] &&
		    cmp -s "$base.out" "$tmp/out"; then
			pass=$((pass + 1)); continue
		fi
		diff "$base.out" "$tmp/out" | head -5 >"$tmp/why"
	fi
	echo "FAIL $f (--prefer-gpu, exit $rc)"
	sed 's/^/    /' "$tmp/why" "$tmp/err" | head -20
	fail=$((fail + 1))
done

for f in tests/gpu/*.tfg examples/*gpu*.tfg; do
	[ -e "$f" ] || continue
	rel=$(sed -n 's/^# gpu-tol: *//p' "$f" | head -1)
	args=$(sed -n '1s/^# args://p' "$f")
	case $f in examples/*) args=--soft-placement ;; esac # /gpu:1
	if ! TFG_NO_GPU=1 run "$tmp/cpu0" "$tmp/err" --soft-placement "$f"; then
		echo "FAIL $f (on the CPU)"; sed 's/^/    /' "$tmp/err" | head -20
		fail=$((fail + 1)); continue
	fi
	grep -v 'time taken' "$tmp/cpu0" >"$tmp/cpu" # wall clocks differ
	if [ "$have" = 0 ]; then
		skipped "$f: not run on a GPU"; continue
	fi
	if run "$tmp/out0" "$tmp/err" $args "$f" &&
	    grep -v 'time taken' "$tmp/out0" >"$tmp/out" &&
	    awk -v rel="${rel:-1e-4}" -f tests/gpu/numcmp.awk "$tmp/cpu" "$tmp/out" \
	    >"$tmp/why"; then
		pass=$((pass + 1)); continue
	fi
	echo "FAIL $f (GPU against CPU)"
	sed 's/^/    /' "$tmp/why" "$tmp/err" | head -20
	fail=$((fail + 1))
done
# 3. a GPU part compiled ahead of time (tests/gpu/aot/main.c): built here
#    where there are NVRTC, cc and build/libtfg.a, or GPU_AOT names one
#    built elsewhere; with a GPU it must compute the host's numbers,
#    without one fail with the runtime's error (exit 3)
aot=${GPU_AOT:-}
if [ -z "$aot" ] && printf '%s\n' "$gpus" | grep -q '^nvrtc: [0-9]' &&
    command -v cc >/dev/null && [ -e build/libtfg.a ]; then
	if "$TFGC" compile tests/gpu/aot/part.tfg -o "$tmp/gpu_aot.o" 2>"$tmp/err" &&
	    cc -I"$tmp" -o "$tmp/gpu_aot" tests/gpu/aot/main.c "$tmp/gpu_aot.o" \
	    build/libtfg.a -ldl -lpthread -lm 2>>"$tmp/err"; then
		aot=$tmp/gpu_aot
	else
		echo "FAIL tests/gpu/aot/part.tfg (tfgc compile, cc)"
		sed 's/^/    /' "$tmp/err" | head -20; fail=$((fail + 1))
	fi
fi
if [ -n "$aot" ]; then
	"$aot" >"$tmp/out" 2>&1; rc=$?
	if { [ "$have" = 1 ] && [ $rc -eq 0 ]; } ||
	    { [ "$have" = 0 ] && [ $rc -eq 3 ]; }; then
		pass=$((pass + 1))
	else
		echo "FAIL tests/gpu/aot/main.c (exit $rc)"
		sed 's/^/    /' "$tmp/out" | head -5; fail=$((fail + 1))
	fi
fi
echo "gpu: $pass passed, $fail failed, $skip skipped$( [ "$have" = 0 ] && [ "$skip" -gt 0 ] && echo " (no GPU: compared on the CPU only)")"
[ "$fail" -eq 0 ]
