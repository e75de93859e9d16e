#!/bin/sh
# tests/unit/run.sh BIN...: runs each unit-test binary; prints the totals.
pass=0 fail=0
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
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
