#!/bin/sh
# tests/integration/fmt.sh: tfgc fmt (spec §10.8 "Formatting"): -w,
# --check and standard input on files of a scratch directory; then, over
# every example and golden program that parses, that formatting keeps
# the program (the same --emit=ast, positions aside) and that formatting
# twice is formatting once.  (The layout itself: tests/golden/fmt.)
. tests/integration/common.inc

D=$T/fmt
mkdir "$D"
printf 'x=1\ny = x+2 # two\n' >"$D/a.tfg"
printf 'x = 1\ny = x + 2  # two\n' >"$D/want.tfg"
cp "$D/want.tfg" "$D/b.tfg"
printf 'x = (1 +\n' >"$D/bad.tfg"
cp "$D/bad.tfg" "$D/bad.orig"
chmod 640 "$D/a.tfg"

# stdout; the file is left alone
expect_rc 0 "$TFGC" fmt "$D/a.tfg"
cmp -s "$T/out" "$D/want.tfg" || fail "fmt printed $(cat "$T/out")"
[ -s "$T/err" ] && fail "fmt said: $(cat "$T/err")"
grep -q 'x=1' "$D/a.tfg" || fail "fmt without -w changed the file"

# several files, one after the other
expect_rc 0 "$TFGC" fmt "$D/a.tfg" "$D/b.tfg"
cat "$D/want.tfg" "$D/want.tfg" | cmp -s - "$T/out" ||
	fail "fmt of two files printed $(cat "$T/out")"

# standard input, with no FILE and with -
expect_rc 0 sh -c "\"$TFGC\" fmt <\"$D/a.tfg\""
cmp -s "$T/out" "$D/want.tfg" || fail "fmt of stdin printed $(cat "$T/out")"
expect_rc 0 sh -c "\"$TFGC\" fmt - <\"$D/a.tfg\""
cmp -s "$T/out" "$D/want.tfg" || fail "fmt - printed $(cat "$T/out")"

# --check: the names of the files not formatted, exit 1; 0 when all are
expect_rc 1 "$TFGC" fmt --check "$D/a.tfg" "$D/b.tfg"
[ "$(cat "$T/out")" = "$D/a.tfg" ] || fail "--check printed $(cat "$T/out")"
expect_rc 0 "$TFGC" fmt --check "$D/b.tfg" "$D/want.tfg"
[ -s "$T/out" ] && fail "--check of formatted files printed $(cat "$T/out")"
grep -q 'x=1' "$D/a.tfg" || fail "--check changed the file"

# -w: rewrites what changes, keeps the mode, leaves no temporary file
ls -i "$D/b.tfg" >"$T/inode.before"
expect_rc 0 "$TFGC" fmt -w "$D/a.tfg" "$D/b.tfg"
[ -s "$T/out" ] && fail "-w printed $(cat "$T/out")"
cmp -s "$D/a.tfg" "$D/want.tfg" || fail "-w wrote $(cat "$D/a.tfg")"
[ "$(stat -c %a "$D/a.tfg")" = 640 ] ||
	fail "-w changed the mode to $(stat -c %a "$D/a.tfg")"
ls -i "$D/b.tfg" | cmp -s - "$T/inode.before" ||
	fail "-w replaced a file that was formatted already"
ls -A "$D" | grep -q 'fmt-' && fail "-w left $(ls -A "$D")"

# -w through a symbolic link replaces its target, not the link
printf 'z=3\n' >"$D/target.tfg"
ln -s target.tfg "$D/link.tfg"
expect_rc 0 "$TFGC" fmt -w "$D/link.tfg"
[ -L "$D/link.tfg" ] || fail "-w replaced the symbolic link"
[ "$(cat "$D/target.tfg")" = "z = 3" ] || fail "-w wrote $(cat "$D/target.tfg")"

# a program that does not parse: its errors, exit 1, nothing written
# (the other files are still done)
printf 'y=2\n' >"$D/c.tfg"
expect_rc 1 "$TFGC" fmt -w "$D/bad.tfg" "$D/c.tfg"
expect_in "$T/err" "$D/bad.tfg:1:9: error: unexpected end of input"
cmp -s "$D/bad.tfg" "$D/bad.orig" || fail "-w changed a program with errors"
[ "$(cat "$D/c.tfg")" = "y = 2" ] || fail "-w skipped the file after an error"
expect_rc 1 "$TFGC" fmt "$D/bad.tfg"
[ -s "$T/out" ] && fail "fmt printed a program with errors"
expect_rc 1 "$TFGC" fmt "$D/missing.tfg"
expect_in "$T/err" "cannot read '$D/missing.tfg'"

# a bad command line
expect_rc 2 "$TFGC" fmt -w --check "$D/b.tfg"
expect_in "$T/err" "not both"
expect_rc 2 "$TFGC" fmt -w
expect_rc 2 "$TFGC" fmt --frobnicate "$D/b.tfg"
expect_in "$T/err" "unknown option '--frobnicate'"
expect_rc 0 "$TFGC" fmt --help
expect_in "$T/out" "tfgc fmt [-w | --check]"

# every program that parses: the same AST, and formatting is idempotent.
# Formatting and its check are one tfgc process each over all of them
# (fmt -w, then fmt --check); the ASTs, two processes a program, run in
# two halves at once (four processes a program, some 1,800 in all, took
# 80-120 s under ASan).
P=$D/progs
mkdir "$P"
i=0
for f in examples/*.tfg tests/golden/*/*.tfg; do
	i=$((i + 1))
	cp "$f" "$P/$i.tfg"
	echo "$i $f" >>"$D/names"
done
"$TFGC" fmt -w "$P"/*.tfg 2>"$D/w.err"
grep 'bug in tfgc fmt' "$D/w.err" && fail "$(cat "$D/w.err")"
# the ones that do not parse (errors goldens) are left as they were
for f in "$P"/*.tfg; do
	n=${f##*/}
	n=${n%.tfg}
	orig=$(sed -n "s/^$n //p" "$D/names")
	if grep -q "^$f:" "$D/w.err"; then
		rm "$f"
	else
		echo "$orig $f" >>"$D/pairs"
	fi
done
expect_rc 0 "$TFGC" fmt --check "$P"/*.tfg
check_half() { # HALF (0 or 1): a failure in $D/fail
	h=$1 i=0 W=$D/w$1
	while read -r orig f; do
		i=$((i + 1))
		[ $((i % 2)) = "$h" ] || continue
		"$TFGC" emit --emit=ast "$orig" 2>&1 |
			sed 's/ @[0-9]*:[0-9]*$//' >"$W.ast.before"
		"$TFGC" emit --emit=ast "$f" 2>&1 |
			sed 's/ @[0-9]*:[0-9]*$//' >"$W.ast.after"
		[ -s "$W.ast.before" ] || echo "no --emit=ast of $orig" >>"$D/fail"
		cmp -s "$W.ast.before" "$W.ast.after" || {
			diff -u "$W.ast.before" "$W.ast.after" >&2
			echo "formatting $orig changed its AST" >>"$D/fail"
		}
	done <"$D/pairs"
}
: >"$D/fail"
check_half 0 &
h0=$!
check_half 1
wait $h0
[ -s "$D/fail" ] && fail "$(cat "$D/fail")"
n=$(wc -l <"$D/pairs")
[ "$n" -gt 250 ] || fail "only $n programs formatted"
echo "fmt: $n programs keep their AST and format to themselves"
