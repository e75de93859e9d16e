#!/bin/sh
# tests/integration/run.sh [NAME...]: runs each tests/integration/*.sh
# (all but this file, or only the NAMEs given) with `sh`, from the repo
# root, under `timeout 120`, and prints the totals, "integration: N
# passed, N failed, N skipped".  A script passes when it exits 0 and
# skipped nothing; one that exits 0 but printed a line that starts with
# SKIP (a part it could not run here, such as plot's without cairo) is
# counted as skipped, never as passed, and those lines are shown.  Its
# output is shown whole only when it fails.  Scripts find the
# compiler in $TFGC (exported here, ./tfgc by default) and may use $TMPDIR,
# a fresh directory per script.
cd "$(dirname "$0")/../.." || exit 1
TFGC=${TFGC:-./tfgc}
export TFGC
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfg-integration.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# The JIT cache (spec/design.md "JIT cache"): a fresh one for the run,
# not the user's, unless the caller set TFG_JIT_CACHE.
TFG_JIT_CACHE=${TFG_JIT_CACHE-$tmp/jit-cache}
export TFG_JIT_CACHE
pass=0 fail=0 skip=0

for t in tests/integration/*.sh; do
	[ -e "$t" ] || continue
	n=${t##*/}; n=${n%.sh}
	[ "$n" = run ] && continue
	if [ $# -gt 0 ]; then
		want=0
		for a; do [ "${a%.sh}" = "$n" ] && want=1; done
		[ "$want" -eq 1 ] || continue
	fi
	mkdir "$tmp/$n"
	TMPDIR=$tmp/$n timeout -k 5 120 sh "$t" >"$tmp/$n.log" 2>&1 </dev/null
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^SKIP' "$tmp/$n.log"; then
		skip=$((skip + 1))
		grep '^SKIP' "$tmp/$n.log" | sed "s|^|$t: |"
	elif [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		why="exit $rc"; [ "$rc" -eq 124 ] && why="timed out after 120 s"
		echo "FAIL $t ($why)"
		sed 's/^/    /' "$tmp/$n.log"
	fi
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
