#!/bin/sh
# bench/matmul.sh [N | MxKxN ...]: `c = a @ b` on f32[M, K] @ f32[K, N]
# (N alone: square) compiled by tfgc ahead of time, against cblas_sgemm
# called directly (bench/matmul.c); sizes default to 1024 2048 4096.  Run from `make bench` (bench/run.sh).
# DENSITY=0.19 zeroes 81% of the operands' elements, as in an MNIST batch
# (runtime/gemm_sparse.c's path).
set -u
cd "$(dirname "$0")/.." || exit 1
TFGC=${TFGC:-./tfgc}
CC=${CC:-cc}
T=$(mktemp -d /tmp/tfg-mm.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ $# -eq 0 ] && set -- 1024 2048 4096

echo "== matmul: tfg (AOT part) vs cblas_sgemm, median of runs =="
for s in "$@"; do
	case $s in
	*x*x*) m=${s%%x*}; n=${s##*x}; k=${s#*x}; k=${k%x*} ;;
	*) m=$s k=$s n=$s ;;
	esac
	reps=$(awk "BEGIN {r = int(2e10 / ($m * $k * $n)); print (r < 3) ? 3 : (r > 50) ? 50 : r}")
	cat >"$T/mm.tfg" <<TFG
cluster { local = ["localhost:2222"] }
input a: f32[$m, $k]
input b: f32[$k, $n]
c = a @ b
TFG
	# compile wants a feed's value to know the signature: zeros will do
	for f in "a $m $k" "b $k $n"; do
		python3 - "$T" $f <<'PY' || exit 1
import struct, sys
r, c = int(sys.argv[3]), int(sys.argv[4])
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (r, c)
h += " " * (63 - (10 + len(h)) % 64) + "\n"
with open("%s/%s.npy" % (sys.argv[1], sys.argv[2]), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.truncate(f.tell() + 4 * r * c)
PY
	done
	$TFGC compile "$T/mm.tfg" --task local:0 -o "$T/mm.o" --name mm \
		--fetch c --feed a="$T/a.npy" --feed b="$T/b.npy" || exit 1
	$CC -std=c11 -O2 -D_GNU_SOURCE -I. -I"$T" -o "$T/mm" bench/matmul.c \
		"$T/mm.o" build/libtfg.a -lopenblas -lpthread -lm || exit 1
	"$T/mm" "$m" "$k" "$n" "$reps" ${DENSITY:+"$DENSITY"} || exit 1
done
