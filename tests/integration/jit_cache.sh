#!/bin/sh
# The JIT cache (spec/design.md "JIT cache", spec §10 "Processes"): a
# task's code is kept under $TFG_JIT_CACHE and loaded by the next run of
# the same part, a specialisation's too; a damaged or foreign file is
# compiled again (and written over), never run; a directory that others
# may write is not used; "off" turns it off.  TFG_JIT_TIME=1 makes each
# task say how it got its code.
. tests/integration/common.inc

C=$T/cache
TFG_JIT_CACHE=$C
export TFG_JIT_CACHE TFG_JIT_TIME=1
run_hello() { # WANT_CACHED: 0 or 1
	expect_rc 0 $TFGC run --free-ports examples/hello.tfg
	[ "$(cat "$T/out")" = "238" ] || fail "hello printed '$(cat "$T/out")'"
	n=$(grep -c "JIT .* ms (cached)" "$T/err")
	[ "$1" = 1 ] && [ "$n" != 2 ] && fail "expected both tasks cached: $(cat "$T/err")"
	[ "$1" = 0 ] && [ "$n" != 0 ] && fail "expected no task cached: $(cat "$T/err")"
	return 0
}

# first run: compiled, and kept (a 0700 directory, 0600 files)
run_hello 0
[ "$(ls "$C" | grep -c '\.o$')" = 2 ] || fail "cache holds: $(ls -la "$C")"
[ "$(stat -c %a "$C")" = 700 ] || fail "cache mode $(stat -c %a "$C")"
for f in "$C"/*.o; do
	[ "$(stat -c %a "$f")" = 600 ] || fail "$f mode $(stat -c %a "$f")"
done
# second: both tasks load it
run_hello 1

# A byte changed in each object, then each file cut short: compiled
# again, the same answer, and written over whole.
for f in "$C"/*.o; do
	printf '\377' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null
done
run_hello 0
run_hello 1
for f in "$C"/*.o; do
	head -c 60 "$f" >"$f.cut" && mv "$f.cut" "$f"
done
run_hello 0
run_hello 1
# a file that is not one: compiled again
for f in "$C"/*.o; do echo garbage >"$f"; done
run_hello 0

# A specialisation (a '?' dim) is cached too.
cat >"$T/u.tfg" <<'EOF'
cluster { local = ["localhost:2222"] }
input x: f32[?]
y = reduce_sum(x * 2.0)
session { print run(y, feed { x: [1.0, 2.0, 3.0] }) }
EOF
expect_rc 0 $TFGC run "$T/u.tfg"
[ "$(cat "$T/out")" = "12.0" ] || fail "u printed '$(cat "$T/out")'"
expect_rc 0 $TFGC run "$T/u.tfg"
expect_in "$T/err" "(specialisation, cached)"

# A directory others may write: not used, with a warning.
chmod 777 "$C"
expect_rc 0 $TFGC run --free-ports examples/hello.tfg
expect_in "$T/err" "tfgc: warning: JIT cache $C is writable by others: not used"
grep -q "(cached)" "$T/err" && fail "a cache others may write was read"
chmod 700 "$C"

# Not a directory: no cache, the run goes on.
echo x >"$T/file"
TFG_JIT_CACHE=$T/file
expect_rc 0 $TFGC run --free-ports examples/hello.tfg
[ "$(cat "$T/out")" = "238" ] || fail "hello printed '$(cat "$T/out")'"

# off: nothing written.
TFG_JIT_CACHE=off
expect_rc 0 $TFGC run --free-ports examples/hello.tfg
expect_rc 0 $TFGC run --free-ports examples/hello.tfg
grep -q "(cached)" "$T/err" && fail "TFG_JIT_CACHE=off read a cache"
[ ! -e off ] || fail "TFG_JIT_CACHE=off made a directory 'off'"
echo "jit_cache: ok"
