#!/bin/sh
# Only what the fetches need runs
# (spec §8.3 "run: fetches, feeds and steps"): `unused` needs input u, which
# is never fed; had it run, its feed would never come and the step would
# fail at the step deadline.  The run must succeed quickly instead, and the
# partition must not contain it.
. tests/integration/common.inc

expect_rc 0 $TFGC run --free-ports --step-timeout 3 \
	tests/integration/progs/pruned.tfg
[ "$(cat "$T/out")" = "12" ] || fail "pruned.tfg printed '$(cat "$T/out")'"

expect_rc 0 $TFGC emit --emit=partition tests/integration/progs/pruned.tfg
grep -q unused "$T/out" && fail "'unused' is in the partition"
grep -q "feed" "$T/out" && fail "an input is fed that no fetch needs"
echo "pruning: ok"
