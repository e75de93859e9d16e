#!/bin/sh
# The JIT cache (spec/design.md "JIT cache", spec §10 "Processes"): a
# task's code is kept under $TFG_JIT_CACHE and loaded by the next run of
# the same part, a specialisation's too; a damaged or foreign file is
# compiled again (and written over), never run; past its limit the
# objects used least recently go; a directory that others may write is
# not used; "off" turns it off.  TFG_JIT_TIME=1 makes each
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
expect_rc 0 $TFGC run --free-ports "$T/u.tfg"
[ "$(cat "$T/out")" = "12.0" ] || fail "u printed '$(cat "$T/out")'"
expect_rc 0 $TFGC run --free-ports "$T/u.tfg"
expect_in "$T/err" "(specialisation, cached)"

# The limit (TFG_JIT_CACHE_MAX): a write that takes the directory past
# it removes the objects used least recently, down to three quarters of
# it; a hit counts as a use.  Four stand-in objects of 100 KiB, used
# 4, 3, 2 and 1 hours ago; hello's two, then made older than all of
# them, then used again by a run; then u.tfg's written under a limit of
# 400 KiB: the two oldest stand-ins go, hello's stay.  A writer's
# temporary file two hours old goes too, a fresh one stays.
L=$T/lru
mkdir -m 700 "$L"
TFG_JIT_CACHE=$L
for h in 4 3 2 1; do
	f=$L/$(printf "%064x" "$h").o
	head -c 102400 /dev/zero >"$f"
	touch -d "$h hours ago" "$f"
done
touch -d "2 hours ago" "$L/.tmp-stale1"
touch "$L/.tmp-fresh1"
run_hello 0
for f in "$L"/*.o; do
	case $f in */000000*) ;; *) touch -d "5 hours ago" "$f";; esac
done
run_hello 1
TFG_JIT_CACHE_MAX=400K
export TFG_JIT_CACHE_MAX
expect_rc 0 $TFGC run --free-ports "$T/u.tfg"
gone() { [ ! -e "$L/$(printf "%064x" "$1").o" ]; }
gone 4 && gone 3 || fail "the least recently used did not go: $(ls -la "$L")"
gone 2 || gone 1 && fail "more went than needed: $(ls -la "$L")"
[ "$(ls "$L" | grep -vc '^0000')" = 3 ] ||
	fail "hello's (used by the last run) or u's went: $(ls -la "$L")"
[ "$(du -sb --exclude='.tmp-*' "$L" | cut -f1)" -le $((400 * 1024 + 4096)) ] ||
	fail "the cache is over its limit: $(ls -la "$L")"
[ ! -e "$L/.tmp-stale1" ] || fail "a dead writer's temporary file stayed"
[ -e "$L/.tmp-fresh1" ] || fail "a live writer's temporary file went"
run_hello 1
# 0 keeps nothing; a limit that is not a size warns and keeps the default
rm -rf "$L"/*
TFG_JIT_CACHE_MAX=0 expect_rc 0 $TFGC run --free-ports examples/hello.tfg
[ -z "$(ls "$L")" ] || fail "TFG_JIT_CACHE_MAX=0 kept $(ls "$L")"
TFG_JIT_CACHE_MAX=12X run_hello 0
expect_in "$T/err" "TFG_JIT_CACHE_MAX=12X is not a size"
unset TFG_JIT_CACHE_MAX
TFG_JIT_CACHE=$C

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
