#!/bin/sh
# tests/golden/run.sh [AREA...] [T]: the golden tests (STYLE.md section 9).
#
# Each tests/golden/<area>/<name>.tfg runs through $TFGC (default ./tfgc):
#   tokens ast grad folded cse dce placed dot   tfgc emit --emit=<area> ARGS FILE
#                                           (dot: also rendered by dot -Tsvg)
#   partition fused llvm memory cuda
#   errors                                  tfgc check ARGS FILE
#   fmt                                     tfgc fmt ARGS FILE
#   run                                     tfgc run --free-ports ARGS FILE
# ARGS come from an optional first line "# args: ...".  The area cli has
# <name>.args instead of .tfg: its one line is all of tfgc's arguments
# (the help, usage errors: compiler/help.def).  stdout must equal
# <name>.out and stderr plus "exit: N" (added when stderr is non-empty or
# N != 0) must equal <name>.err; an absent file means "expect nothing".
# An expected file that is missing, or left over with nothing to match,
# fails too.  Arguments naming a directory under tests/golden are areas (all
# areas when none); any other argument picks one test: NAME, NAME.tfg or
# AREA/NAME.  UPDATE=1 writes or deletes the expected files instead.
# Runs from the repo root so FILE is always tests/golden/<area>/<name>.tfg:
# diagnostics print paths as given, which keeps the goldens stable; where
# one names the working directory (a missing file's "a relative path
# starts from DIR"), DIR is written <root> in the expected stderr.
cd "$(dirname "$0")/../.." || exit 1
TFGC=${TFGC:-./tfgc}
unset TF_CONFIG # a cluster of the environment's is not the goldens'
G=tests/golden
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfg-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# The JIT cache (spec/design.md "JIT cache"): a fresh one for the run,
# not the user's, unless the caller set TFG_JIT_CACHE.
TFG_JIT_CACHE=${TFG_JIT_CACHE-$tmp/jit-cache}
export TFG_JIT_CACHE
pass=0 fail=0 areas="" only=""
if ! command -v "$TFGC" >/dev/null 2>&1; then
	echo "golden: no compiler at '$TFGC' (make tfgc, or set TFGC)"; exit 2
fi

for a; do
	if [ -n "$a" ] && [ -d "$G/$a" ]; then areas="$areas $a"; continue; fi
	[ -z "$a" ] && continue
	[ -n "$only" ] && { echo "golden: more than one test named: $only $a"; exit 2; }
	only=${a%.tfg}; only=${only%.args}; only=${only#"$G/"}
done
if [ -z "$areas" ]; then
	for d in "$G"/*/; do [ -d "$d" ] && d=${d%/} && areas="$areas ${d##*/}"; done
fi

# check EXP: compares (or with UPDATE=1 writes) one expected file against
# $tmp/got; prints why and the diff, and fails, when they disagree.
check() {
	exp=$1 got=$tmp/got
	if [ "$UPDATE" = 1 ]; then
		if [ -s "$got" ]; then
			cmp -s "$got" "$exp" || { cp "$got" "$exp"; echo "UPDATE $exp"; }
		elif [ -e "$exp" ]; then
			rm -f "$exp"; echo "DELETE $exp"
		fi
		return 0
	fi
	if [ -e "$exp" ] && [ ! -s "$got" ]; then
		why="left over: $exp (nothing to match)"; ref=$exp
	elif [ ! -e "$exp" ] && [ -s "$got" ]; then
		why="missing: $exp"; ref=/dev/null
	elif [ -e "$exp" ]; then
		cmp -s "$exp" "$got" && return 0
		why="differs: $exp"; ref=$exp
	else
		return 0
	fi
	echo "    $why"
	diff -u "$ref" "$got" |
		sed "1s|^--- .*|--- $exp (expected)|; 2s|^+++ .*|+++ $exp (got)|"
	return 1
}

runtest() { # AREA FILE
	area=$1 f=$2 base=${2%.*} file=$2
	args=$(sed -n '1s/^# args://p' "$f")
	case $area in
	tokens|ast|grad|folded|cse|dce|placed|dot|partition|fused|llvm|memory|cuda)
		set -- emit "--emit=$area" ;;
	errors) set -- check ;;
	fmt) set -- fmt ;;
	run) set -- run --free-ports ;;
	cli) set --; args=$(cat "$f"); file= ;;
	*) echo "FAIL $f: no command for area '$area' in $0"; return 1 ;;
	esac
	set -f # ARGS are split on blanks, never globbed
	# shellcheck disable=SC2086
	timeout -k 5 60 "$TFGC" "$@" $args ${file:+"$file"} >"$tmp/out" \
		2>"$tmp/err" </dev/null
	rc=$?
	set +f
	if [ -s "$tmp/err" ] || [ "$rc" -ne 0 ]; then
		[ -n "$(tail -c 1 "$tmp/err")" ] && echo >>"$tmp/err"
		echo "exit: $rc" >>"$tmp/err"
		awk -v r="$PWD" '{
			while (r != "" && (i = index($0, r)) > 0)
				$0 = substr($0, 1, i - 1) "<root>" \
				     substr($0, i + length(r))
			print
		}' "$tmp/err" >"$tmp/err2" && mv "$tmp/err2" "$tmp/err"
	fi
	: >"$tmp/log"
	[ "$rc" -eq 124 ] && echo "    timed out after 60 s" >"$tmp/log"
	ok=0
	# what --emit=dot writes must be what Graphviz reads
	if [ "$area" = dot ] && [ -s "$tmp/out" ] &&
	    ! dot -Tsvg "$tmp/out" >/dev/null 2>"$tmp/dot"; then
		{ echo "    dot -Tsvg refused it:"; sed 's/^/    /' "$tmp/dot"
		} >>"$tmp/log"
		ok=1
	fi
	mv "$tmp/out" "$tmp/got"; check "$base.out" >>"$tmp/log" || ok=1
	mv "$tmp/err" "$tmp/got"; check "$base.err" >>"$tmp/log" || ok=1
	if [ "$ok" -ne 0 ]; then echo "FAIL $f"; fi
	cat "$tmp/log"
	return $ok
}

for area in $areas; do
	for f in "$G/$area"/*.tfg "$G/$area"/*.args; do
		[ -e "$f" ] || continue
		n=${f##*/}; n=${n%.*}
		case $only in ""|"$n"|"$area/$n") ;; *) continue ;; esac
		if runtest "$area" "$f"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	done
	[ -n "$only" ] && continue
	# expected files whose test is gone
	for e in "$G/$area"/*.out "$G/$area"/*.err; do
		if [ ! -e "$e" ] || [ -e "${e%.*}.tfg" ] || [ -e "${e%.*}.args" ]
		then continue; fi
		if [ "$UPDATE" = 1 ]; then rm -f "$e"; echo "DELETE $e"; continue; fi
		echo "FAIL $e: left over, no ${e%.*}.tfg"; fail=$((fail + 1))
	done
done
if [ -n "$only" ] && [ $((pass + fail)) -eq 0 ]; then
	echo "golden: no test '$only' in:$areas"; exit 2
fi
echo "golden: $pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]
