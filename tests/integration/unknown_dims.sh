#!/bin/sh
# Unknown dims (spec/language.md §4.3 "Inputs",
# §10.3 "Ahead-of-time compilation"): `tfgc compile --shape` fixes an
# input's `?` dims ahead of time; without it the program is refused; a
# server serving the part must be started with the same --shape.  `tfgc run`
# needs no --shape: each task compiles one specialisation per signature and
# fed shape, and reuses it, keeping --max-specs of them.
. tests/integration/common.inc
CC=${CC:-cc}
LIBTFG=${LIBTFG:-build/libtfg.a}

cat >"$T/mlp.tfg" <<'TFG'
input x: f32[?, 3]
y = reduce_sum(x * x, axis=1) + 1.0
session {
    print run(y, feed { x: [[1, 2, 3]] })
}
TFG
# No --shape: refused, naming the flag.
expect_rc 1 $TFGC compile "$T/mlp.tfg" -o "$T/mlp.o"
expect_in "$T/err" "input 'x' has unknown dims (f32[?, 3]): give its shape with --shape x=N,3"
# A --shape whose known dim differs is refused.
expect_rc 1 $TFGC compile "$T/mlp.tfg" --shape x=1,4 -o "$T/mlp.o"
expect_in "$T/err" "--shape 'x=1,4' gives 4 for dim 1, but input 'x' is f32[?, 3]"
# The session feeds one row, so --shape x=1,3; the header says f32[1, 3].
expect_rc 0 $TFGC compile "$T/mlp.tfg" --shape x=1,3 -o "$T/mlp.o"
expect_in "$T/mlp.h" "mlp_y(const float *x, float *y)"
expect_in "$T/mlp.h" "f32[1, 3]"
cat >"$T/main.c" <<'C'
#include <stdio.h>
#include "mlp.h"
int
main(void)
{
	float x[3] = {1, 2, 3}, y = 0;

	if (mlp_y(x, &y) != 0)
		return 1;
	printf("y %g\n", y);
	return 0;
}
C
expect_rc 0 $CC -std=c11 -Wall -Werror -I"$T" -o "$T/main" "$T/main.c" \
	"$T/mlp.o" "$LIBTFG" -lm
expect_rc 0 "$T/main"
expect_in "$T/out" "y 15"
# A --shape that does not fit the session's literal feed is a compile error.
expect_rc 1 $TFGC compile "$T/mlp.tfg" --shape x=2,3 -o "$T/mlp.o"
expect_in "$T/err" "feed 'x' expects f32[2, 3], got a literal of shape [1, 3]"
# Run-time specialisation: tests/golden/run/spec_shapes.tfg feeds its
# first signature (tasks 0 and 1) three shapes, one of them twice, its
# second (task 0 only) and third (tasks 0 and 1) one each: 3*2 + 1 + 2 = 9
# compilations, not 11.
TFG_JIT_TIME=1 expect_rc 0 $TFGC run --free-ports \
	tests/golden/run/spec_shapes.tfg
n=$(grep -c 'JIT .* ms (specialisation' "$T/err") # cached or not
[ "$n" = 9 ] || fail "spec_shapes.tfg compiled $n specialisations, not 9"
grep -q 'JIT .* ms\( (cached)\)\{0,1\}$' "$T/err" &&
	fail "a generic plan compiled at start-up"
# ... and task 1 is asked to compile 4 times (3 shapes of the first
# signature, 1 of the third); a cached shape runs its step at once.
expect_rc 0 $TFGC run --free-ports --verbose tests/golden/run/spec_shapes.tfg
n=$(grep -c 'got SPECIALISE' "$T/err")
[ "$n" = 4 ] || fail "spec_shapes.tfg sent $n SPECIALISE messages, not 4"
expect_rc 0 $TFGC run --free-ports "$T/mlp.tfg"
[ "$(cat "$T/out")" = "[15.]" ] || fail "mlp.tfg printed '$(cat "$T/out")'"
# --max-specs 2: tests/golden/run/spec_evict.tfg feeds 4 shapes, 2 of
# them again after their eviction: each task compiles 6 and frees 4,
# the client on evicting, task 1 on the client's RELEASE, each time
# before the next one is compiled (1 kept).
TFG_JIT_TIME=1 expect_rc 0 $TFGC run --free-ports --max-specs 2 \
	tests/golden/run/spec_evict.tfg
for t in 0 1; do
	n=$(grep -c "task:$t: JIT .* ms (specialisation" "$T/err")
	[ "$n" = 6 ] || fail "task $t compiled $n specialisations, not 6"
	n=$(grep -c "task:$t: specialisation released (1 kept)" "$T/err")
	[ "$n" = 4 ] || fail "task $t freed $n specialisations, not 4"
done
[ "$(grep -c 'released' "$T/err")" = 8 ] || fail "more than 8 released"
expect_rc 2 $TFGC run --max-specs 0 "$T/mlp.tfg"
expect_in "$T/err" "--max-specs takes a count from 1 to 100000, not '0'"
# A server of a compiled part cannot specialise: without the part's
# --shape it is refused at once.
expect_rc 0 $TFGC compile "$T/mlp.tfg" --shape x=1,3 --shared \
	-o "$T/mlp.so"
expect_rc 1 $TFGC server "$T/mlp.tfg" --job local --task 0 \
	--addr /job:local/task:0=127.0.0.1:$(free_port) --part "$T/mlp.so"
expect_in "$T/err" "input 'x' has unknown dims (f32[?, 3]): a compiled part needs them, give the part's --shape x=N,3"
echo "unknown_dims: ok"
