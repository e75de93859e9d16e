#!/bin/sh
# tests/unit/run.sh BIN...: runs each unit-test binary; prints the totals.
pass=0 fail=0
# The JIT cache (spec/design.md "JIT cache"): a fresh one for the run,
# not the user's, unless the caller set TFG_JIT_CACHE.
if [ -z "${TFG_JIT_CACHE+set}" ]; then
	cache=$(mktemp -d /tmp/tfg-unit-jit.XXXXXX) || exit 1
	TFG_JIT_CACHE=$cache/jit
	export TFG_JIT_CACHE
fi
for t in "$@"; do
	if "$t" >/tmp/tfg-unit.$$ 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		cat /tmp/tfg-unit.$$
	fi
	tail -n 1 /tmp/tfg-unit.$$ | sed 's/^/  /'
done
rm -f /tmp/tfg-unit.$$
[ -n "${cache:-}" ] && rm -rf "$cache"
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
