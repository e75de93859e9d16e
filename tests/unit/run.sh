#!/bin/sh
# tests/unit/run.sh BIN...: runs each unit-test binary and prints the
# totals of their tests, "unit: N passed, N failed, N skipped": a test
# that could not run here (tests/unit/test.h's TEST_SKIP) is counted as
# skipped, never as passed, and its SKIP line is shown.  UNIT_LABEL
# replaces "unit" in that line.
pass=0 fail=0 skip=0 bad=0
# The JIT cache (spec/design.md "JIT cache"): a fresh one for the run,
# not the user's, unless the caller set TFG_JIT_CACHE.
if [ -z "${TFG_JIT_CACHE+set}" ]; then
	cache=$(mktemp -d /tmp/tfg-unit-jit.XXXXXX) || exit 1
	TFG_JIT_CACHE=$cache/jit
	export TFG_JIT_CACHE
fi
out=$(mktemp /tmp/tfg-unit.XXXXXX) || exit 1
for t in "$@"; do
	if "$t" >"$out" 2>&1; then rc=0; else rc=$?; fi
	last=$(tail -n 1 "$out")
	# "BIN: 3 passed, 0 failed, 1 skipped"
	echo "$last" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' >"$out.n"
	p= f= s=
	read -r p f s <"$out.n"
	if [ -z "$s" ]; then
		# it died before its totals: a failure of its own
		p=0 f=1 s=0
		last="$t: no totals (exit $rc)"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
		bad=$((bad + 1))
		cat "$out"
	else
		grep '^SKIP ' "$out" | sed "s|^|  ${t##*/}: |"
	fi
	echo "  $last"
done
rm -f "$out" "$out.n"
[ -n "${cache:-}" ] && rm -rf "$cache"
echo "${UNIT_LABEL:-unit}: $pass passed, $fail failed, $skip skipped"
[ "$bad" -eq 0 ]
