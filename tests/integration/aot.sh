#!/bin/sh
# Ahead-of-time compilation
# (spec/language.md §10.3 "Ahead-of-time compilation"): `tfgc compile` to an
# object and header that a C program links with libtfg.a alone (no nng, no
# LLVM); `tfgc compile --shared` parts served by `tfgc server --part`
# without the JIT; and the parts and commands that must be refused.
. tests/integration/common.inc
CC=${CC:-cc}
LIBTFG=${LIBTFG:-build/libtfg.a}

# (a) A one-task program: two run signatures, so two wrappers.
cat >"$T/model.tfg" <<'TFG'
cluster { local = ["localhost:2222"] }
input x: f32[2, 3]
input k: i32[3]
h = exp(x) * 0.5 - x
s = reduce_sum(h)
q = k * k + 1
session {
    print run(h, s, q, feed { x: [[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]], k: [1, 2, 3] })
    print run(q, feed { k: [4, 5, 6] })
}
TFG
expect_rc 0 $TFGC compile "$T/model.tfg" --task local:0 -o "$T/model.o"
[ -s "$T/model.o" ] && [ -s "$T/model.h" ] || fail "no model.o or model.h"
expect_in "$T/model.h" "static inline int"
# its link line: no product calls BLAS
expect_in "$T/model.h" "cc main.c $T/model.o -ltfg -lm"
expect_in "$T/model.h" "model_h_s_q(const float *x, const int32_t *k, float *h, float *s, int32_t *q)"
expect_in "$T/model.h" "model_q(const int32_t *k, int32_t *q)"
cat >"$T/main.c" <<'C'
#include <stdio.h>
#include "model.h"
int
main(void)
{
	float x[2][3], h[2][3], s;
	int32_t k[3], q[3], q2[3];
	int rc;

	for (int i = 0; i < 6; i++)
		x[i / 3][i % 3] = (float)(i - 2) * 0.75f;
	for (int i = 0; i < 3; i++)
		k[i] = 1000 * (i + 1);
	if ((rc = model_h_s_q(&x[0][0], k, &h[0][0], &s, q)) != 0)
		return rc;
	for (int i = 0; i < 6; i++)
		printf("h %.9g\n", h[i / 3][i % 3]);
	printf("s %.9g\n", s);
	for (int i = 0; i < 3; i++)
		k[i] = -7 * i;
	if ((rc = model_q(k, q2)) != 0)
		return rc;
	for (int i = 0; i < 3; i++)
		printf("q %d %d\n", q[i], q2[i]);
	printf("hash %d\n", model_hash != 0);
	return 0;
}
C
# A second unit includes runtime/tfg.h first: the shared block must agree.
cat >"$T/both.c" <<'C'
#include "runtime/tfg.h"
#include "model.h"
int
both(const float *x, const int32_t *k, float *h, float *s, int32_t *q)
{
	return model_h_s_q(x, k, h, s, q);
}
C
expect_rc 0 $CC -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$T" -I. -c \
	-o "$T/both.o" "$T/both.c"
expect_rc 0 $CC -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$T" \
	-o "$T/main" "$T/main.c" "$T/model.o" "$LIBTFG" -lm
expect_rc 0 "$T/main"
python3 - "$T/out" <<'PY' || fail "wrong values: $(cat "$T/out")"
import math, sys
got = open(sys.argv[1]).read().split("\n")
x = [(i - 2) * 0.75 for i in range(6)]
h = [math.exp(v) * 0.5 - v for v in x]
want = ["h %r" % v for v in h] + ["s %r" % sum(h)]
for i in range(3):
    k = 1000 * (i + 1)
    k2 = -7 * i
    want.append("q %d %d" % (k * k + 1, k2 * k2 + 1))
want.append("hash 1")
for g, w in zip(got, want):
    gk, gv = g.split(" ", 1)
    wk, wv = w.split(" ", 1)
    assert gk == wk, (g, w)
    if gk == "h" or gk == "s":
        assert abs(float(gv) - float(wv)) <= 1e-5 * max(1, abs(float(wv))), (g, w)
    else:
        assert gv == wv, (g, w)
assert len(got) == len(want) + 1 and got[-1] == "", got
PY
# --name sets the prefix; --cpu host works too.
expect_rc 0 $TFGC compile "$T/model.tfg" -o "$T/m2.o" --name net --cpu host -O 3
expect_in "$T/m2.h" "net_q(const int32_t *k, int32_t *q)"

# (b) hello.tfg: a shared part per task, served without the JIT.
expect_rc 0 $TFGC compile examples/hello.tfg --task local:0 --shared -o "$T/task0.so"
expect_rc 0 $TFGC compile examples/hello.tfg --task /job:local/task:1 --shared \
	-o "$T/task1.so"
p0=$(free_port)
p1=$(free_port)
addrs="--addr /job:local/task:0=127.0.0.1:$p0 --addr /job:local/task:1=127.0.0.1:$p1"
TFG_JIT_TIME=1 $TFGC server examples/hello.tfg --job local --task 0 $addrs \
	--part "$T/task0.so" 2>"$T/s0" &
s0=$!
TFG_JIT_TIME=1 $TFGC server examples/hello.tfg --job local --task 1 $addrs \
	--part "$T/task1.so" 2>"$T/s1" &
s1=$!
expect_rc 0 $TFGC run --attach --startup-timeout 10 $addrs examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "attached run printed '$(cat "$T/out")'"
expect_rc 0 $TFGC stop --startup-timeout 10 $addrs examples/hello.tfg
wait $s0 || fail "server 0 exited $?: $(cat "$T/s0")"
wait $s1 || fail "server 1 exited $?: $(cat "$T/s1")"
grep -q JIT "$T/s0" "$T/s1" && fail "a --part server JIT-compiled"
# The same program's JIT servers do print the line (the check means it).
TFG_JIT_TIME=1 $TFGC run --free-ports examples/hello.tfg >"$T/out" 2>"$T/err"
expect_in "$T/err" "JIT"

# (c) What is refused.
# A part of another program.
expect_rc 0 $TFGC compile "$T/model.tfg" --shared -o "$T/model.so"
expect_rc 1 $TFGC server examples/hello.tfg --job local --task 0 $addrs \
	--part "$T/model.so"
expect_in "$T/err" "compiled from a different program"
# The part of the other task.
expect_rc 1 $TFGC server examples/hello.tfg --job local --task 0 $addrs \
	--part "$T/task1.so"
expect_in "$T/err" "is the part of /job:local/task:1, not of /job:local/task:0"
# Not a shared object: refused before the server takes its port, so it
# says so even when another process holds the port.
ph=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(20)' "$ph" &
holder=$!
wait_listen "$ph"
expect_rc 1 $TFGC server "$T/model.tfg" --job local --task 0 --part "$T/model.o" \
	--addr /job:local/task:0=127.0.0.1:$ph
expect_in "$T/err" "cannot load part"
grep -q "address in use" "$T/err" && fail "the server took its port before its part: $(cat "$T/err")"
kill $holder 2>/dev/null
# Every signature needs the other task (unfolded): no stand-alone function,
# but an object all the same, for an AOT task server (aot_server.sh).
expect_rc 0 $TFGC compile examples/hello.tfg --task local:0 -o "$T/h0.o"
grep -q "static inline" "$T/h0.h" && fail "h0.h has a stand-alone function"
expect_in "$T/h0.h" "extern const struct TfgPartTable h0_parts;"
# Nothing to compile: no session (and no --fetch), or no part on the task.
printf 'x = 2\ny = x * 3\n' >"$T/nosess.tfg"
expect_rc 1 $TFGC compile "$T/nosess.tfg" -o "$T/ns.o"
expect_in "$T/err" "tfgc: error: $T/nosess.tfg has no session, so there is no run signature to compile: name what to compute with --fetch NAME (and --feed NAME=FILE.npy for its inputs), as tfcompile's config does"
[ -e "$T/ns.o" ] && fail "a refused compile wrote ns.o"
printf 'x = 2\ny = x * 3\nsession { print "hi" }\n' >"$T/noruns.tfg"
expect_rc 1 $TFGC compile "$T/noruns.tfg" -o "$T/ns.o"
expect_in "$T/err" "has sessions that run no step, so there is no run signature"
# With --fetch it compiles: a stand-alone function for y.
expect_rc 0 $TFGC compile "$T/nosess.tfg" --fetch y -o "$T/ns.o"
expect_in "$T/ns.h" "ns_y(int32_t *y)"
cat >"$T/three.tfg" <<'TFG'
cluster { local = ["localhost:2222", "localhost:2223", "localhost:2224"] }
x = 2
device "/job:local/task:1" { y = x * 3 }
session "/job:local/task:0" { print run(y) }
TFG
expect_rc 1 $TFGC compile "$T/three.tfg" --task local:2 -o "$T/t2.o"
expect_in "$T/err" "tfgc: error: /job:local/task:2 has no part in any of the 1 run signature of $T/three.tfg, and runs no session: there is nothing to compile for it"
# The session's task computes nothing, but serves its session: an object.
expect_rc 0 $TFGC compile "$T/three.tfg" --task local:0 -o "$T/t0.o"
# Usage: -o, --task with several tasks, a bad --name.
expect_rc 2 $TFGC compile examples/hello.tfg --task local:0
expect_rc 2 $TFGC compile examples/hello.tfg -o "$T/x.o"
expect_rc 2 $TFGC compile "$T/model.tfg" -o "$T/x.o" --name 9lives
# (d) A large matmul calls libtfg's tfg_rt_gemm, which calls OpenBLAS's
# cblas_sgemm (spec §6.18 "matmul and `@`"): the object links with
# -lopenblas; a --shared part takes both from the server that loads it.
# Feeds: a, b of zeros (the signature), a1, b1 of ones (a served run).
cat >"$T/mm.tfg" <<'TFG'
cluster { local = ["localhost:2222"] }
input a: f32[64, 48]
input b: f32[48, 40]
c = a @ b
TFG
python3 - "$T" <<'PY' || fail "cannot write the feeds"
import struct, sys
for name, r, c, v in (("a", 64, 48, 0.0), ("b", 48, 40, 0.0),
                      ("a1", 64, 48, 1.0), ("b1", 48, 40, 1.0)):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (r, c)
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    with open("%s/%s.npy" % (sys.argv[1], name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
        f.write(struct.pack("<f", v) * (r * c))
PY
mmflags="--fetch c --feed a=$T/a.npy --feed b=$T/b.npy"
# shellcheck disable=SC2086
expect_rc 0 $TFGC compile "$T/mm.tfg" -o "$T/mm.o" $mmflags
nm -u "$T/mm.o" | grep -q tfg_rt_gemm || fail "mm.o does not call tfg_rt_gemm"
expect_in "$T/mm.h" "cc main.c $T/mm.o -ltfg -lopenblas -lm"
cat >"$T/mm.c" <<'C'
#include <math.h>
#include <stdio.h>
#include "mm.h"
int
main(void)
{
	static float a[64][48], b[48][40], c[64][40];
	for (int i = 0; i < 64; i++)
		for (int k = 0; k < 48; k++)
			a[i][k] = (float)((i * 7 + k * 3) % 11) - 5.0f;
	for (int k = 0; k < 48; k++)
		for (int j = 0; j < 40; j++)
			b[k][j] = (float)((k * 5 + j) % 13) * 0.25f;
	if (mm_c(&a[0][0], &b[0][0], &c[0][0]) != 0)
		return 1;
	for (int i = 0; i < 64; i++)
		for (int j = 0; j < 40; j++) {
			double s = 0;
			for (int k = 0; k < 48; k++)
				s += (double)a[i][k] * b[k][j];
			if (fabs(c[i][j] - s) > 1e-4 * (1 + fabs(s)))
				return 2;
		}
	puts("mm ok");
	return 0;
}
C
expect_rc 0 $CC -std=c11 -Wall -Werror -I"$T" -o "$T/mm" "$T/mm.c" "$T/mm.o" \
	"$LIBTFG" -lopenblas -lm
expect_rc 0 "$T/mm"
expect_in "$T/out" "mm ok"
# shellcheck disable=SC2086
expect_rc 0 $TFGC compile "$T/mm.tfg" --shared -o "$T/mm.so" $mmflags
# The shared part takes tfg_rt_gemm (and with it OpenBLAS) from the
# server that loads it: served, it computes c = a @ b of ones, 48s.
nm -D --undefined-only "$T/mm.so" | grep -q tfg_rt_gemm ||
	fail "mm.so does not call tfg_rt_gemm"
pm=$(free_port)
# The server takes the run's flags and runs the session, writing c1.npy:
# §10.2 "Feeds and fetches from the command line"
ones="--fetch c --feed a=$T/a1.npy --feed b=$T/b1.npy --out $T/c1.npy"
# shellcheck disable=SC2086
$TFGC server "$T/mm.tfg" --job local --task 0 $ones \
	--addr /job:local/task:0=127.0.0.1:$pm --part "$T/mm.so" 2>"$T/sm" &
sm=$!
# shellcheck disable=SC2086
expect_rc 0 $TFGC run --attach --stop --startup-timeout 10 \
	--addr /job:local/task:0=127.0.0.1:$pm "$T/mm.tfg" $ones
wait $sm || fail "the server of mm.so exited $?: $(cat "$T/sm")"
python3 - "$T/c1.npy" <<'PY' || fail "mm.so computed a wrong c"
import struct, sys
d = open(sys.argv[1], "rb").read()
v = struct.unpack("<%df" % (64 * 40), d[len(d) - 4 * 64 * 40:])
sys.exit(0 if all(x == 48.0 for x in v) else 1)
PY
echo "aot: ok"
